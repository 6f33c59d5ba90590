//! Label and field selectors, in their query-string syntax.

use crate::error::ApiError;
use serde_json::Value;

#[derive(Clone, Debug, PartialEq, Eq)]
enum Op {
    Eq(String),
    Ne(String),
    In(Vec<String>),
    NotIn(Vec<String>),
    Exists,
    NotExists,
    Gt(i64),
    Lt(i64),
}

/// A parsed label selector (`a=b,c!=d,e in (f,g),!h`).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct LabelSelector {
    reqs: Vec<(String, Op)>,
}

fn split_top(s: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let mut depth = 0i32;
    let mut start = 0;
    for (i, c) in s.char_indices() {
        match c {
            '(' => depth += 1,
            ')' => depth -= 1,
            ',' if depth == 0 => {
                out.push(&s[start..i]);
                start = i + 1;
            }
            _ => {}
        }
    }
    out.push(&s[start..]);
    out
}

fn valid_key(k: &str) -> bool {
    !k.is_empty()
        && k.len() <= 317
        && k.chars().all(|c| c.is_ascii_alphanumeric() || "-_./".contains(c))
        && k.chars().next().is_some_and(|c| c.is_ascii_alphanumeric())
}

fn valid_value(v: &str) -> bool {
    v.len() <= 63 && v.chars().all(|c| c.is_ascii_alphanumeric() || "-_.".contains(c))
}

fn parse_err(msg: String) -> ApiError {
    ApiError::bad_request(format!("unable to parse requirement: {msg}"))
}

impl LabelSelector {
    /// Parses the query-string form. Errors are the real server's 400 messages.
    pub fn parse(s: &str) -> Result<Self, ApiError> {
        let mut reqs = Vec::new();
        if s.trim().is_empty() {
            return Ok(LabelSelector { reqs });
        }
        for part in split_top(s) {
            let part = part.trim();
            if part.is_empty() {
                return Err(parse_err("found '', expected: identifier".into()));
            }
            let req = if let Some(k) = part.strip_prefix('!') {
                (k.trim().to_string(), Op::NotExists)
            } else if let Some((k, rest)) = split_word(part, " notin ") {
                (k, Op::NotIn(parse_set(&rest)?))
            } else if let Some((k, rest)) = split_word(part, " in ") {
                (k, Op::In(parse_set(&rest)?))
            } else if let Some((k, v)) = part.split_once("!=") {
                (k.trim().to_string(), Op::Ne(v.trim().to_string()))
            } else if let Some((k, v)) = part.split_once("==") {
                (k.trim().to_string(), Op::Eq(v.trim().to_string()))
            } else if let Some((k, v)) = part.split_once('=') {
                (k.trim().to_string(), Op::Eq(v.trim().to_string()))
            } else if let Some((k, v)) = part.split_once('>') {
                let n = v.trim().parse().map_err(|_| {
                    parse_err("for 'Gt', 'Lt' operators, the value must be an integer".to_string())
                })?;
                (k.trim().to_string(), Op::Gt(n))
            } else if let Some((k, v)) = part.split_once('<') {
                let n = v.trim().parse().map_err(|_| {
                    parse_err("for 'Gt', 'Lt' operators, the value must be an integer".to_string())
                })?;
                (k.trim().to_string(), Op::Lt(n))
            } else {
                (part.to_string(), Op::Exists)
            };
            if !valid_key(&req.0) {
                return Err(parse_err(format!("invalid label key {:?}", req.0)));
            }
            let values: Vec<&String> = match &req.1 {
                Op::Eq(v) | Op::Ne(v) => vec![v],
                Op::In(vs) | Op::NotIn(vs) => vs.iter().collect(),
                _ => vec![],
            };
            if let Some(bad) = values.into_iter().find(|v| !valid_value(v)) {
                return Err(parse_err(format!("invalid label value: {bad:?}")));
            }
            reqs.push(req);
        }
        Ok(LabelSelector { reqs })
    }

    /// Whether a label map matches.
    pub fn matches(&self, labels: Option<&serde_json::Map<String, Value>>) -> bool {
        self.reqs.iter().all(|(k, op)| {
            let v = labels.and_then(|l| l.get(k)).and_then(Value::as_str);
            match op {
                Op::Eq(want) => v == Some(want.as_str()),
                Op::Ne(want) => v != Some(want.as_str()),
                Op::In(set) => v.is_some_and(|v| set.iter().any(|s| s == v)),
                Op::NotIn(set) => v.is_none_or(|v| !set.iter().any(|s| s == v)),
                Op::Exists => v.is_some(),
                Op::NotExists => v.is_none(),
                Op::Gt(n) => v.and_then(|v| v.parse::<i64>().ok()).is_some_and(|x| x > *n),
                Op::Lt(n) => v.and_then(|v| v.parse::<i64>().ok()).is_some_and(|x| x < *n),
            }
        })
    }

    /// Whether an object's `metadata.labels` match.
    pub fn matches_object(&self, obj: &Value) -> bool {
        self.matches(obj.pointer("/metadata/labels").and_then(Value::as_object))
    }

    /// Whether the selector selects everything.
    pub fn is_empty(&self) -> bool {
        self.reqs.is_empty()
    }
}

fn split_word(part: &str, word: &str) -> Option<(String, String)> {
    let idx = part.find(word)?;
    Some((part[..idx].trim().to_string(), part[idx + word.len()..].trim().to_string()))
}

fn parse_set(rest: &str) -> Result<Vec<String>, ApiError> {
    let inner = rest
        .strip_prefix('(')
        .and_then(|r| r.strip_suffix(')'))
        .ok_or_else(|| parse_err(format!("found '{rest}' expected: '('")))?;
    Ok(inner.split(',').map(|v| v.trim().to_string()).filter(|v| !v.is_empty()).collect())
}

/// A parsed field selector (`metadata.name=x,status.phase!=Running`).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct FieldSelector {
    reqs: Vec<(String, bool, String)>,
}

impl FieldSelector {
    /// Parses and checks the fields against those the resource supports.
    pub fn parse(s: &str, supported: &[String]) -> Result<Self, ApiError> {
        let mut reqs = Vec::new();
        if s.trim().is_empty() {
            return Ok(FieldSelector { reqs });
        }
        for part in s.split(',') {
            let (field, eq, value) = if let Some((k, v)) = part.split_once("!=") {
                (k, false, v)
            } else if let Some((k, v)) = part.split_once("==") {
                (k, true, v)
            } else if let Some((k, v)) = part.split_once('=') {
                (k, true, v)
            } else {
                return Err(ApiError::bad_request(format!(
                    "invalid selector: '{s}'; can't understand '{part}'"
                )));
            };
            let field = field.trim();
            if field != "metadata.name"
                && field != "metadata.namespace"
                && !supported.iter().any(|f| f == field)
            {
                return Err(ApiError::bad_request(format!("field label not supported: {field}")));
            }
            reqs.push((field.to_string(), eq, value.trim().to_string()));
        }
        Ok(FieldSelector { reqs })
    }

    /// Whether the selector selects everything.
    pub fn is_empty(&self) -> bool {
        self.reqs.is_empty()
    }

    /// Whether an object matches.
    pub fn matches(&self, obj: &Value) -> bool {
        self.reqs.iter().all(|(field, eq, want)| {
            let got = field_value(obj, field);
            (got == *want) == *eq
        })
    }

    /// The selector with its fields renamed (a served field label to the stored field it
    /// reads, see [`crate::builtin_conversion`]).
    pub fn renamed(mut self, rename: impl Fn(&str) -> String) -> Self {
        for (field, _, _) in &mut self.reqs {
            *field = rename(field);
        }
        self
    }

    /// The value required for `metadata.name`, if the selector pins it.
    pub fn pinned_name(&self) -> Option<&str> {
        self.reqs.iter().find(|(f, eq, _)| f == "metadata.name" && *eq).map(|(_, _, v)| v.as_str())
    }
}

/// The string form of a selectable field, as the real server's field-set functions give it.
fn field_value(obj: &Value, field: &str) -> String {
    let mut cur = obj;
    for part in field.split('.') {
        match cur.get(part) {
            Some(v) => cur = v,
            None => {
                return match field {
                    "spec.unschedulable" | "spec.hostNetwork" => "false".into(),
                    _ => String::new(),
                };
            }
        }
    }
    match cur {
        Value::String(s) => s.clone(),
        Value::Bool(b) => b.to_string(),
        Value::Number(n) => n.to_string(),
        Value::Object(o) if field == "source" => {
            o.get("component").and_then(Value::as_str).unwrap_or_default().to_string()
        }
        _ => String::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn label_selectors() {
        let labels = json!({"app": "web", "tier": "front", "n": "5"});
        let m = labels.as_object();
        for (sel, want) in [
            ("app=web", true),
            ("app==web,tier=front", true),
            ("app!=web", false),
            ("app in (web, db)", true),
            ("app notin (web)", false),
            ("tier", true),
            ("!tier", false),
            ("!missing", true),
            ("n>3", true),
            ("n<3", false),
        ] {
            assert_eq!(LabelSelector::parse(sel).expect(sel).matches(m), want, "{sel}");
        }
        assert!(LabelSelector::parse("a in b").is_err());
        assert!(LabelSelector::parse("a=b c").is_err());
    }

    #[test]
    fn field_selectors() {
        let pod = json!({"metadata": {"name": "p"}, "spec": {"nodeName": "n1"}, "status": {"phase": "Running"}});
        let sup = vec!["spec.nodeName".to_string(), "status.phase".to_string()];
        assert!(FieldSelector::parse("spec.nodeName=n1", &sup).expect("ok").matches(&pod));
        assert!(!FieldSelector::parse("status.phase!=Running", &sup).expect("ok").matches(&pod));
        assert!(!FieldSelector::parse("spec.nodeName=", &sup).expect("ok").matches(&pod));
        let e = FieldSelector::parse("spec.foo=x", &sup).expect_err("unsupported");
        assert_eq!(e.message, "field label not supported: spec.foo");
    }
}
