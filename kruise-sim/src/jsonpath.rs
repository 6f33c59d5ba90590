//! The subset of Kubernetes JSONPath used by printer columns and scale subresource paths:
//! `.a.b`, escaped dots (`.a.b\.c`), `['key']`, `[n]`, `[*]`, and simple filters
//! `[?(@.k=="v")]` / `[?(@ == "v")]`.

use serde_json::Value;

#[derive(Clone, Debug, PartialEq)]
enum Step {
    Field(String),
    Index(i64),
    All,
    Filter(Option<Vec<String>>, bool, Value),
}

fn parse(path: &str) -> Option<Vec<Step>> {
    let p = path.trim();
    let p = p.strip_prefix('{').and_then(|x| x.strip_suffix('}')).unwrap_or(p);
    let chars: Vec<char> = p.chars().collect();
    let mut i = 0;
    let mut steps = Vec::new();
    if chars.first() == Some(&'$') {
        i += 1;
    }
    while i < chars.len() {
        match chars[i] {
            '.' => {
                i += 1;
                let mut name = String::new();
                while i < chars.len() && chars[i] != '.' && chars[i] != '[' {
                    if chars[i] == '\\' && i + 1 < chars.len() {
                        name.push(chars[i + 1]);
                        i += 2;
                    } else {
                        name.push(chars[i]);
                        i += 1;
                    }
                }
                if !name.is_empty() {
                    steps.push(Step::Field(name));
                }
            }
            '[' => {
                let close = find_close(&chars, i)?;
                let inner: String = chars[i + 1..close].iter().collect();
                let inner = inner.trim();
                if inner == "*" {
                    steps.push(Step::All);
                } else if let Some(f) = inner.strip_prefix("?(").and_then(|f| f.strip_suffix(')')) {
                    steps.push(parse_filter(f)?);
                } else if let Some(q) = inner
                    .strip_prefix('\'')
                    .and_then(|q| q.strip_suffix('\''))
                    .or_else(|| inner.strip_prefix('"').and_then(|q| q.strip_suffix('"')))
                {
                    steps.push(Step::Field(q.to_string()));
                } else {
                    steps.push(Step::Index(inner.parse().ok()?));
                }
                i = close + 1;
            }
            _ => return None,
        }
    }
    Some(steps)
}

fn find_close(chars: &[char], open: usize) -> Option<usize> {
    let mut depth = 0;
    let mut quote: Option<char> = None;
    for (j, &c) in chars.iter().enumerate().skip(open) {
        match (quote, c) {
            (Some(q), c) if c == q => quote = None,
            (Some(_), _) => {}
            (None, '"' | '\'') => quote = Some(c),
            (None, '[') => depth += 1,
            (None, ']') => {
                depth -= 1;
                if depth == 0 {
                    return Some(j);
                }
            }
            _ => {}
        }
    }
    None
}

fn parse_filter(f: &str) -> Option<Step> {
    let (lhs, eq, rhs) = if let Some((l, r)) = f.split_once("!=") {
        (l, false, r)
    } else {
        let (l, r) = f.split_once("==")?;
        (l, true, r)
    };
    let lhs = lhs.trim();
    let path = if lhs == "@" {
        None
    } else {
        Some(lhs.strip_prefix("@.")?.split('.').map(str::to_string).collect())
    };
    let rhs = rhs.trim();
    let value = if let Some(s) = rhs
        .strip_prefix('"')
        .and_then(|x| x.strip_suffix('"'))
        .or_else(|| rhs.strip_prefix('\'').and_then(|x| x.strip_suffix('\'')))
    {
        Value::String(s.to_string())
    } else {
        serde_json::from_str(rhs).ok()?
    };
    Some(Step::Filter(path, eq, value))
}

/// All values a path selects, in document order. A malformed path selects nothing.
pub fn find<'a>(doc: &'a Value, path: &str) -> Vec<&'a Value> {
    let Some(steps) = parse(path) else { return Vec::new() };
    let mut cur = vec![doc];
    for step in &steps {
        let mut next = Vec::new();
        for v in cur {
            match step {
                Step::Field(name) => {
                    if let Some(x) = v.get(name.as_str()) {
                        next.push(x);
                    }
                }
                Step::Index(n) => {
                    if let Some(a) = v.as_array() {
                        let idx = if *n < 0 { a.len() as i64 + n } else { *n };
                        if let Some(x) = usize::try_from(idx).ok().and_then(|i| a.get(i)) {
                            next.push(x);
                        }
                    }
                }
                Step::All => match v {
                    Value::Array(a) => next.extend(a.iter()),
                    Value::Object(o) => next.extend(o.values()),
                    _ => {}
                },
                Step::Filter(path, eq, want) => {
                    let items: Vec<&Value> = match v {
                        Value::Array(a) => a.iter().collect(),
                        other => vec![other],
                    };
                    for item in items {
                        let mut target = Some(item);
                        for p in path.iter().flatten() {
                            target = target.and_then(|t| t.get(p.as_str()));
                        }
                        if (target == Some(want)) == *eq {
                            next.push(item);
                        }
                    }
                }
            }
        }
        cur = next;
    }
    cur
}

/// The first value a path selects.
pub fn first<'a>(doc: &'a Value, path: &str) -> Option<&'a Value> {
    find(doc, path).into_iter().next()
}

/// Sets the value at a simple dotted path (`.spec.replicas`), creating objects on the way.
/// Returns false when the path is not a plain field path or crosses a non-object.
pub fn set(doc: &mut Value, path: &str, value: Value) -> bool {
    let Some(steps) = parse(path) else { return false };
    let mut cur = doc;
    for (i, step) in steps.iter().enumerate() {
        let Step::Field(name) = step else { return false };
        if cur.is_null() {
            *cur = Value::Object(Default::default());
        }
        let Some(obj) = cur.as_object_mut() else { return false };
        if i + 1 == steps.len() {
            obj.insert(name.clone(), value);
            return true;
        }
        cur = obj.entry(name.clone()).or_insert(Value::Null);
    }
    false
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn paths() {
        let d = json!({
            "metadata": {"labels": {"crr.apps.kruise.io/node-name": "n1"}},
            "spec": {"replicas": 3, "s": {"type": "Adaptive"},
                     "containers": [{"name": "a", "image": "x"}, {"name": "b", "image": "y"}]},
            "status": {"conditions": [{"type": "Ready", "status": "True"}]}
        });
        assert_eq!(first(&d, ".spec.replicas"), Some(&json!(3)));
        assert_eq!(
            first(&d, r".metadata.labels.crr\.apps\.kruise\.io/node-name"),
            Some(&json!("n1"))
        );
        assert_eq!(find(&d, ".spec.containers[*].image"), vec![&json!("x"), &json!("y")]);
        assert_eq!(first(&d, ".spec.containers[1].name"), Some(&json!("b")));
        assert_eq!(
            first(&d, r#".status.conditions[?(@.type=="Ready")].status"#),
            Some(&json!("True"))
        );
        assert_eq!(first(&d, r#".spec.s.type[?(@ == "Adaptive")]"#), Some(&json!("Adaptive")));
        assert_eq!(first(&d, r#".spec.s.type[?(@ == "Other")]"#), None);
        let mut d2 = json!({});
        assert!(set(&mut d2, ".spec.replicas", json!(2)));
        assert_eq!(d2, json!({"spec": {"replicas": 2}}));
    }
}
