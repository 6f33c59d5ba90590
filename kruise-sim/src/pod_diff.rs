//! The diff kube-apiserver appends to its refusal of a pod update that changes more than it
//! may: the old spec and the new one (with the allowed changes undone) are printed as JSON the
//! way Go prints its internal `core.PodSpec` type (Go field names, every field in declaration
//! order, `null` for unset pointers, lists and maps, one-space indentation), and the two texts
//! are compared line by line into a unified diff with three lines of context, matched with the
//! longest-matching-block algorithm (popular lines of long texts ignored as anchors), without
//! file headers.
//!
//! The internal types differ from `core/v1` in a few places, reproduced here: the host
//! namespace fields live in the pod security context (which is always set), the deprecated
//! `serviceAccount` is only an alias of `serviceAccountName`, and `quobyte` sits after `rbd`
//! among the volume sources. Label selectors are `metav1` types and print their JSON names.
//!
//! A spec holding a field or a value the table does not describe gives no diff (`None`); the
//! caller then words the refusal its own way.

use serde_json::Value;

mod table;

use table::POD_SPEC;

/// How a field holds its type.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Shape {
    /// Directly: unset prints the zero value.
    Value,
    /// Through a pointer: unset prints `null`.
    Ptr,
    /// As a list: unset prints `null`, empty `[]`.
    Slice,
    /// Embedded: the type's fields print as the holder's own.
    Inline,
}

/// The type of a field (of a list's items).
#[derive(Clone, Copy, Debug)]
pub(crate) enum Base {
    Str,
    Int,
    Bool,
    /// `resource.Quantity`: its string form.
    Quantity,
    /// `intstr.IntOrString`: a number or a string.
    IntOrString,
    /// `map[string]string`.
    StrMap,
    /// `ResourceList`: quantities by name.
    QuantityMap,
    /// `metav1.LabelSelector`, which has JSON tags.
    Tagged,
    /// A struct of the table.
    Struct(&'static [Field]),
}

/// One field of an internal type.
#[derive(Debug)]
pub(crate) struct Field {
    go: &'static str,
    /// The `core/v1` JSON name; `@name` reads `name` from the enclosing pod spec.
    json: &'static str,
    shape: Shape,
    base: Base,
}

pub(crate) const fn f(go: &'static str, json: &'static str, shape: Shape, base: Base) -> Field {
    Field { go, json, shape, base }
}

/// A value as Go writes it, members in order.
#[derive(Debug)]
enum Out {
    Null,
    Raw(String),
    Str(String),
    List(Vec<Out>),
    Obj(Vec<(String, Out)>),
}

/// The diff of two `core/v1` pod specs (JSON) as kube-apiserver shows it; `None` when either
/// spec holds what the table does not describe.
pub(crate) fn spec_diff(old: &Value, new: &Value) -> Option<String> {
    let a = dump_spec(old)?;
    let b = dump_spec(new)?;
    Some(unified_diff(&split_lines(&a), &split_lines(&b)))
}

/// A pod spec printed as Go prints the internal type.
fn dump_spec(spec: &Value) -> Option<String> {
    let spec = match spec {
        Value::Null => &Value::Object(Default::default()),
        other => other,
    };
    let mut members = Vec::new();
    dump_fields(&POD_SPEC, spec.as_object()?, spec, &mut members, 0, false)?;
    let mut text = String::new();
    write(&Out::Obj(members), 0, &mut text);
    Some(text)
}

fn dump_fields(
    fields: &'static [Field],
    obj: &serde_json::Map<String, Value>,
    spec: &Value,
    out: &mut Vec<(String, Out)>,
    depth: usize,
    inline: bool,
) -> Option<()> {
    if depth > 32 {
        return None;
    }
    // Every member must be described (an inline type's fields count as this type's).
    if !inline && obj.keys().any(|k| !describes(fields, k)) {
        return None;
    }
    for field in fields {
        if let (Shape::Inline, Base::Struct(inner)) = (field.shape, field.base) {
            dump_fields(inner, obj, spec, out, depth + 1, true)?;
            continue;
        }
        let value = match field.json.strip_prefix('@') {
            Some(name) => spec.get(name),
            None if field.go == "ServiceAccountName" => obj
                .get("serviceAccountName")
                .filter(|v| v.as_str().is_some_and(|s| !s.is_empty()))
                .or_else(|| obj.get("serviceAccount")),
            None => obj.get(field.json),
        };
        let value = value.filter(|v| !v.is_null());
        let printed = match (field.shape, value) {
            // The internal pod security context is always set.
            (_, None) if field.go == "SecurityContext" && std::ptr::eq(fields, &POD_SPEC[..]) => {
                dump(field.base, Some(&Value::Object(Default::default())), spec, depth)?
            }
            (Shape::Ptr | Shape::Slice, None) => Out::Null,
            (Shape::Slice, Some(Value::Array(items))) => Out::List(
                items
                    .iter()
                    .map(|i| dump(field.base, Some(i), spec, depth))
                    .collect::<Option<_>>()?,
            ),
            (Shape::Slice, Some(_)) => return None,
            (_, v) => dump(field.base, v, spec, depth)?,
        };
        out.push((field.go.to_string(), printed));
    }
    Some(())
}

fn describes(fields: &'static [Field], key: &str) -> bool {
    fields.iter().any(|f| match (f.shape, f.base) {
        (Shape::Inline, Base::Struct(inner)) => describes(inner, key),
        _ => f.json == key || (f.go == "ServiceAccountName" && key == "serviceAccount"),
    }) || (std::ptr::eq(fields, &POD_SPEC[..])
        && ["hostNetwork", "hostPID", "hostIPC", "shareProcessNamespace", "hostUsers"]
            .contains(&key))
}

/// One value of type `base`; `None` (absent) prints the zero value.
fn dump(base: Base, v: Option<&Value>, spec: &Value, depth: usize) -> Option<Out> {
    Some(match (base, v) {
        (Base::Str, None) => Out::Str(String::new()),
        (Base::Str, Some(Value::String(s))) => Out::Str(s.clone()),
        (Base::Int, None) => Out::Raw("0".into()),
        (Base::Int, Some(Value::Number(n))) if n.is_i64() || n.is_u64() => Out::Raw(n.to_string()),
        (Base::Bool, None) => Out::Raw("false".into()),
        (Base::Bool, Some(Value::Bool(b))) => Out::Raw(b.to_string()),
        (Base::Quantity, None) => Out::Str("0".into()),
        (Base::Quantity, Some(Value::String(s))) => Out::Str(s.clone()),
        (Base::Quantity, Some(Value::Number(n))) => Out::Str(n.to_string()),
        (Base::IntOrString, None) => Out::Raw("0".into()),
        (Base::IntOrString, Some(Value::Number(n))) if n.is_i64() => Out::Raw(n.to_string()),
        (Base::IntOrString, Some(Value::String(s))) => Out::Str(s.clone()),
        (Base::StrMap | Base::QuantityMap, None) => Out::Null,
        (Base::StrMap, Some(Value::Object(m))) => Out::Obj(sorted_strings(m, false)?),
        (Base::QuantityMap, Some(Value::Object(m))) => Out::Obj(sorted_strings(m, true)?),
        (Base::Tagged, None) => Out::Null,
        (Base::Tagged, Some(Value::Object(m))) => label_selector(m)?,
        (Base::Struct(fields), None) => {
            let mut members = Vec::new();
            dump_fields(fields, &Default::default(), spec, &mut members, depth + 1, false)?;
            Out::Obj(members)
        }
        (Base::Struct(fields), Some(Value::Object(m))) => {
            let mut members = Vec::new();
            dump_fields(fields, m, spec, &mut members, depth + 1, false)?;
            Out::Obj(members)
        }
        _ => return None,
    })
}

fn sorted_strings(m: &serde_json::Map<String, Value>, numbers: bool) -> Option<Vec<(String, Out)>> {
    let mut members: Vec<(String, Out)> = m
        .iter()
        .map(|(k, v)| match v {
            Value::String(s) => Some((k.clone(), Out::Str(s.clone()))),
            Value::Number(n) if numbers => Some((k.clone(), Out::Str(n.to_string()))),
            _ => None,
        })
        .collect::<Option<_>>()?;
    members.sort_by(|a, b| a.0.cmp(&b.0));
    Some(members)
}

/// A `metav1.LabelSelector`: its JSON names, empty members left out.
fn label_selector(m: &serde_json::Map<String, Value>) -> Option<Out> {
    if m.keys().any(|k| k != "matchLabels" && k != "matchExpressions") {
        return None;
    }
    let mut members = Vec::new();
    match m.get("matchLabels") {
        Some(Value::Object(labels)) if !labels.is_empty() => {
            members.push(("matchLabels".into(), Out::Obj(sorted_strings(labels, false)?)))
        }
        None | Some(Value::Null | Value::Object(_)) => {}
        Some(_) => return None,
    }
    match m.get("matchExpressions") {
        Some(Value::Array(exprs)) if !exprs.is_empty() => {
            let mut items = Vec::new();
            for e in exprs {
                let e = e.as_object()?;
                if e.keys().any(|k| !["key", "operator", "values"].contains(&k.as_str())) {
                    return None;
                }
                let text = |k: &str| match e.get(k) {
                    Some(Value::String(s)) => Some(s.clone()),
                    None | Some(Value::Null) => Some(String::new()),
                    Some(_) => None,
                };
                let mut item = vec![
                    ("key".into(), Out::Str(text("key")?)),
                    ("operator".into(), Out::Str(text("operator")?)),
                ];
                if let Some(Value::Array(values)) = e.get("values")
                    && !values.is_empty()
                {
                    let values = values
                        .iter()
                        .map(|v| v.as_str().map(|s| Out::Str(s.to_string())))
                        .collect::<Option<_>>()?;
                    item.push(("values".into(), Out::List(values)));
                }
                items.push(Out::Obj(item));
            }
            members.push(("matchExpressions".into(), Out::List(items)));
        }
        None | Some(Value::Null | Value::Array(_)) => {}
        Some(_) => return None,
    }
    Some(Out::Obj(members))
}

/// Writes `v` as Go's `json.MarshalIndent(v, "", " ")` does.
fn write(v: &Out, depth: usize, s: &mut String) {
    let pad = |s: &mut String, d: usize| {
        s.push('\n');
        s.extend(std::iter::repeat_n(' ', d));
    };
    match v {
        Out::Null => s.push_str("null"),
        Out::Raw(r) => s.push_str(r),
        Out::Str(text) => go_string(text, s),
        Out::List(items) if items.is_empty() => s.push_str("[]"),
        Out::List(items) => {
            s.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    s.push(',');
                }
                pad(s, depth + 1);
                write(item, depth + 1, s);
            }
            pad(s, depth);
            s.push(']');
        }
        Out::Obj(members) if members.is_empty() => s.push_str("{}"),
        Out::Obj(members) => {
            s.push('{');
            for (i, (k, item)) in members.iter().enumerate() {
                if i > 0 {
                    s.push(',');
                }
                pad(s, depth + 1);
                go_string(k, s);
                s.push_str(": ");
                write(item, depth + 1, s);
            }
            pad(s, depth);
            s.push('}');
        }
    }
}

/// A string as Go's encoder quotes it (HTML characters and line separators escaped).
fn go_string(text: &str, s: &mut String) {
    s.push('"');
    for c in text.chars() {
        match c {
            '"' => s.push_str("\\\""),
            '\\' => s.push_str("\\\\"),
            '\n' => s.push_str("\\n"),
            '\r' => s.push_str("\\r"),
            '\t' => s.push_str("\\t"),
            '<' | '>' | '&' | '\u{2028}' | '\u{2029}' => {
                s.push_str(&format!("\\u{:04x}", u32::from(c)));
            }
            c if u32::from(c) < 0x20 => s.push_str(&format!("\\u{:04x}", u32::from(c))),
            c => s.push(c),
        }
    }
    s.push('"');
}

/// The lines of `text`, each with its newline (the last one given one).
fn split_lines(text: &str) -> Vec<String> {
    let mut lines: Vec<String> = text.split_inclusive('\n').map(str::to_string).collect();
    match lines.last_mut() {
        Some(last) if !last.ends_with('\n') => last.push('\n'),
        Some(_) => lines.push("\n".into()),
        None => lines.push("\n".into()),
    }
    lines
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Tag {
    Equal,
    Replace,
    Delete,
    Insert,
}

type Opcode = (Tag, usize, usize, usize, usize);

/// Line matching by longest matching blocks: `b`'s lines by position, without the lines so
/// frequent in a long `b` that they make poor anchors.
struct Matcher<'a> {
    a: &'a [String],
    b: &'a [String],
    b2j: std::collections::HashMap<&'a str, Vec<usize>>,
}

impl<'a> Matcher<'a> {
    fn new(a: &'a [String], b: &'a [String]) -> Self {
        let mut b2j: std::collections::HashMap<&'a str, Vec<usize>> = Default::default();
        for (j, line) in b.iter().enumerate() {
            b2j.entry(line.as_str()).or_default().push(j);
        }
        if b.len() >= 200 {
            let limit = b.len() / 100 + 1;
            b2j.retain(|_, places| places.len() <= limit);
        }
        Matcher { a, b, b2j }
    }

    /// The longest block of equal lines within `a[alo..ahi]` and `b[blo..bhi]` (the earliest
    /// in `a`, then in `b`, among the longest), extended over equal unanchored lines.
    fn longest_match(
        &self,
        alo: usize,
        ahi: usize,
        blo: usize,
        bhi: usize,
    ) -> (usize, usize, usize) {
        let (mut besti, mut bestj, mut best) = (alo, blo, 0);
        let mut lengths: std::collections::HashMap<usize, usize> = Default::default();
        for i in alo..ahi {
            let mut next: std::collections::HashMap<usize, usize> = Default::default();
            for &j in self.b2j.get(self.a[i].as_str()).map(Vec::as_slice).unwrap_or_default() {
                if j < blo {
                    continue;
                }
                if j >= bhi {
                    break;
                }
                let k = j.checked_sub(1).and_then(|p| lengths.get(&p)).copied().unwrap_or(0) + 1;
                next.insert(j, k);
                if k > best {
                    (besti, bestj, best) = (i + 1 - k, j + 1 - k, k);
                }
            }
            lengths = next;
        }
        while besti > alo && bestj > blo && self.a[besti - 1] == self.b[bestj - 1] {
            besti -= 1;
            bestj -= 1;
            best += 1;
        }
        while besti + best < ahi
            && bestj + best < bhi
            && self.a[besti + best] == self.b[bestj + best]
        {
            best += 1;
        }
        (besti, bestj, best)
    }

    fn matching_blocks(&self) -> Vec<(usize, usize, usize)> {
        let mut queue = vec![(0, self.a.len(), 0, self.b.len())];
        let mut blocks = Vec::new();
        while let Some((alo, ahi, blo, bhi)) = queue.pop() {
            let (i, j, k) = self.longest_match(alo, ahi, blo, bhi);
            if k == 0 {
                continue;
            }
            blocks.push((i, j, k));
            if alo < i && blo < j {
                queue.push((alo, i, blo, j));
            }
            if i + k < ahi && j + k < bhi {
                queue.push((i + k, ahi, j + k, bhi));
            }
        }
        blocks.sort_unstable();
        // Adjacent blocks joined.
        let mut joined: Vec<(usize, usize, usize)> = Vec::new();
        for (i, j, k) in blocks {
            match joined.last_mut() {
                Some(last) if last.0 + last.2 == i && last.1 + last.2 == j => last.2 += k,
                _ => joined.push((i, j, k)),
            }
        }
        joined.push((self.a.len(), self.b.len(), 0));
        joined
    }

    fn opcodes(&self) -> Vec<Opcode> {
        let (mut i, mut j) = (0, 0);
        let mut codes = Vec::new();
        for (ai, bj, size) in self.matching_blocks() {
            let tag = match (i < ai, j < bj) {
                (true, true) => Some(Tag::Replace),
                (true, false) => Some(Tag::Delete),
                (false, true) => Some(Tag::Insert),
                (false, false) => None,
            };
            if let Some(tag) = tag {
                codes.push((tag, i, ai, j, bj));
            }
            (i, j) = (ai + size, bj + size);
            if size > 0 {
                codes.push((Tag::Equal, ai, i, bj, j));
            }
        }
        codes
    }

    /// The changes in hunks with `n` lines of context.
    fn grouped(&self, n: usize) -> Vec<Vec<Opcode>> {
        let mut codes = self.opcodes();
        if codes.is_empty() {
            codes.push((Tag::Equal, 0, 1, 0, 1));
        }
        if let Some(first) = codes.first_mut()
            && first.0 == Tag::Equal
        {
            let (t, i1, i2, j1, j2) = *first;
            *first = (t, i1.max(i2.saturating_sub(n)), i2, j1.max(j2.saturating_sub(n)), j2);
        }
        if let Some(last) = codes.last_mut()
            && last.0 == Tag::Equal
        {
            let (t, i1, i2, j1, j2) = *last;
            *last = (t, i1, i2.min(i1 + n), j1, j2.min(j1 + n));
        }
        let mut groups = Vec::new();
        let mut group = Vec::new();
        for (tag, mut i1, i2, mut j1, j2) in codes {
            if tag == Tag::Equal && i2 - i1 > 2 * n {
                group.push((tag, i1, i2.min(i1 + n), j1, j2.min(j1 + n)));
                groups.push(std::mem::take(&mut group));
                (i1, j1) = (i1.max(i2.saturating_sub(n)), j1.max(j2.saturating_sub(n)));
            }
            group.push((tag, i1, i2, j1, j2));
        }
        let only_context = matches!(group.as_slice(), [] | [(Tag::Equal, ..)]);
        if !only_context {
            groups.push(group);
        }
        groups
    }
}

fn unified_range(start: usize, stop: usize) -> String {
    let length = stop - start;
    match length {
        1 => format!("{}", start + 1),
        0 => format!("{start},0"),
        _ => format!("{},{length}", start + 1),
    }
}

/// `a` against `b` as a unified diff with three lines of context and no file headers.
fn unified_diff(a: &[String], b: &[String]) -> String {
    let matcher = Matcher::new(a, b);
    let mut out = String::new();
    for group in matcher.grouped(3) {
        let (Some(first), Some(last)) = (group.first(), group.last()) else { continue };
        out.push_str(&format!(
            "@@ -{} +{} @@\n",
            unified_range(first.1, last.2),
            unified_range(first.3, last.4)
        ));
        for &(tag, i1, i2, j1, j2) in &group {
            if tag == Tag::Equal {
                a[i1..i2].iter().for_each(|l| {
                    out.push(' ');
                    out.push_str(l);
                });
                continue;
            }
            if matches!(tag, Tag::Replace | Tag::Delete) {
                a[i1..i2].iter().for_each(|l| {
                    out.push('-');
                    out.push_str(l);
                });
            }
            if matches!(tag, Tag::Replace | Tag::Insert) {
                b[j1..j2].iter().for_each(|l| {
                    out.push('+');
                    out.push_str(l);
                });
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lines(text: &str) -> Vec<String> {
        split_lines(text)
    }

    #[test]
    fn unified_diffs_keep_three_lines_of_context_and_split_far_changes() {
        let a = (1..=20).map(|i| i.to_string()).collect::<Vec<_>>().join("\n");
        let b = a.replacen("2\n", "two\n", 1).replace("\n18", "\neighteen");
        assert_eq!(
            unified_diff(&lines(&a), &lines(&b)),
            "@@ -1,5 +1,5 @@\n 1\n-2\n+two\n 3\n 4\n 5\n@@ -15,6 +15,6 @@\n 15\n 16\n 17\n-18\n+eighteen\n 19\n 20\n"
        );
        assert_eq!(unified_diff(&lines("x"), &lines("x")), "");
        assert_eq!(unified_diff(&lines("a\nb"), &lines("a")), "@@ -1,2 +1 @@\n a\n-b\n");
    }

    #[test]
    fn specs_print_as_the_internal_go_type() {
        let spec = serde_json::json!({"containers": [{"name": "c", "image": "i", "env": [{"name": "A", "value": "<1>"}]}], "hostNetwork": true});
        let text = dump_spec(&spec).expect("described");
        assert!(text.starts_with("{\n \"Volumes\": null,\n \"InitContainers\": null,\n \"Containers\": [\n  {\n   \"Name\": \"c\",\n   \"Image\": \"i\",\n   \"Command\": null,"), "{text}");
        assert!(
            text.contains("\"Value\": \"\\u003c1\\u003e\",\n     \"ValueFrom\": null"),
            "{text}"
        );
        assert!(text.contains("\"SecurityContext\": {\n  \"HostNetwork\": true,"), "{text}");
        // What the table does not describe gives no diff.
        assert_eq!(dump_spec(&serde_json::json!({"bogus": 1})), None);
    }
}
