//! JSON as Go's `encoding/json` writes it.
//!
//! Two steps reproduce the bytes Go hashes:
//!
//! 1. [`normalize`] turns a value (for example a k8s-openapi object serialised with serde)
//!    into what Go would write for the same typed object, following the field table in
//!    [`super::goschema`]: empty `omitempty` fields dropped, always-written fields filled in
//!    (`"resources":{}`, `"creationTimestamp":null`), quantities as Go writes them back.
//! 2. An encoder writes the bytes: [`encode_sorted`] for documents Go wrote from a generic
//!    `map[string]interface{}` (keys sorted, numbers as float64), [`encode_ordered`] for a
//!    typed struct (keys in struct order, integers exact).
//!
//! Both encoders escape strings as Go does (`<`, `>`, `&`, U+2028 and U+2029 as `\u....`;
//! `\b` and `\f` in their short forms, as Go 1.22 and later write them).
//!
//! Fields the table does not know (added to Kubernetes after it was written) are kept unless
//! they are `null`, an empty string or an empty list, which is how such optional fields are
//! almost always tagged; this is the one place where the bytes may differ from Go's.

use serde_json::{Map, Number, Value};

use super::goschema::{Field, Ty};
use super::quantity;

/// Normalises a value of the Go struct described by `fields`, as Go would write it.
pub fn normalize_struct(value: &Value, fields: &[Field]) -> Value {
    let empty = Map::new();
    let map = value.as_object().unwrap_or(&empty);
    let mut out = Map::new();
    for field in fields {
        if let Some(v) = normalize_field(map.get(field.name), field) {
            out.insert(field.name.to_owned(), v);
        }
    }
    for (key, v) in map {
        if fields.iter().any(|f| f.name == key) {
            continue;
        }
        let keep = match v {
            Value::Null => false,
            Value::String(s) => !s.is_empty(),
            Value::Array(a) => !a.is_empty(),
            _ => true,
        };
        if keep {
            out.insert(key.clone(), v.clone());
        }
    }
    Value::Object(out)
}

/// Normalises a value of type `ty` that is present (not `null`).
pub fn normalize(value: &Value, ty: &Ty) -> Value {
    match ty {
        Ty::Struct(fields) => normalize_struct(value, fields),
        Ty::Ptr(inner) => {
            if value.is_null() {
                Value::Null
            } else {
                normalize(value, inner)
            }
        }
        Ty::Quantity => normalize_quantity(value),
        Ty::Slice(inner) => match value {
            Value::Array(items) => {
                Value::Array(items.iter().map(|item| normalize_element(item, inner)).collect())
            }
            other => other.clone(),
        },
        Ty::Map(inner) => match value {
            Value::Object(entries) => Value::Object(
                entries.iter().map(|(k, v)| (k.clone(), normalize_element(v, inner))).collect(),
            ),
            other => other.clone(),
        },
        Ty::Str | Ty::Int | Ty::Bool | Ty::Time | Ty::IntOrString | Ty::Raw => value.clone(),
    }
}

/// An element of a slice or map: `null` becomes the element type's zero value.
fn normalize_element(value: &Value, ty: &Ty) -> Value {
    if value.is_null() { zero_value(ty).unwrap_or(Value::Null) } else { normalize(value, ty) }
}

/// What Go writes for a zero value of `ty`; `None` for types whose zero value is `null`.
fn zero_value(ty: &Ty) -> Option<Value> {
    match ty {
        Ty::Str => Some(Value::String(String::new())),
        Ty::Int | Ty::IntOrString => Some(Value::Number(Number::from(0))),
        Ty::Bool => Some(Value::Bool(false)),
        Ty::Quantity => Some(Value::String("0".to_owned())),
        Ty::Struct(fields) => Some(normalize_struct(&Value::Null, fields)),
        Ty::Time | Ty::Raw | Ty::Slice(_) | Ty::Map(_) | Ty::Ptr(_) => None,
    }
}

fn is_empty_for_omit(value: &Value, ty: &Ty) -> bool {
    match ty {
        Ty::Str => value.as_str() == Some(""),
        Ty::Int => value.as_f64() == Some(0.0),
        Ty::Bool => value.as_bool() == Some(false),
        Ty::Slice(_) => value.as_array().is_some_and(Vec::is_empty),
        Ty::Map(_) => value.as_object().is_some_and(Map::is_empty),
        // Structs (including Time, Quantity and IntOrString) are never omitted; pointers are
        // only omitted when nil, which the caller has already handled.
        Ty::Time | Ty::Quantity | Ty::IntOrString | Ty::Raw | Ty::Struct(_) | Ty::Ptr(_) => false,
    }
}

/// Normalises one struct field; `None` means Go leaves it out.
fn normalize_field(value: Option<&Value>, field: &Field) -> Option<Value> {
    let present = value.filter(|v| !v.is_null());
    match present {
        None => {
            if field.omitempty
                && !matches!(field.ty, Ty::Struct(_) | Ty::Time | Ty::Quantity | Ty::IntOrString)
            {
                None
            } else {
                Some(zero_value(&field.ty).unwrap_or(Value::Null))
            }
        }
        Some(v) => {
            if field.omitempty && is_empty_for_omit(v, &field.ty) {
                None
            } else {
                Some(normalize(v, &field.ty))
            }
        }
    }
}

fn normalize_quantity(value: &Value) -> Value {
    let text = match value {
        Value::String(s) => s.clone(),
        Value::Number(n) => n.to_string(),
        other => return other.clone(),
    };
    Value::String(quantity::go_written(&text).unwrap_or(text))
}

/// Rebuilds `value` with every object's keys inserted in sorted order, so that serde_json
/// writes them sorted whether or not its `preserve_order` feature is enabled.
pub fn with_sorted_keys(value: &Value) -> Value {
    match value {
        Value::Object(map) => {
            let mut keys: Vec<&String> = map.keys().collect();
            keys.sort();
            let mut out = Map::new();
            for key in keys {
                if let Some(v) = map.get(key) {
                    out.insert(key.clone(), with_sorted_keys(v));
                }
            }
            Value::Object(out)
        }
        Value::Array(items) => Value::Array(items.iter().map(with_sorted_keys).collect()),
        other => other.clone(),
    }
}

/// Writes `value` as Go writes a document held in `map[string]interface{}`: object keys
/// sorted byte-wise, every number as a float64.
pub fn encode_sorted(value: &Value) -> String {
    let mut out = String::new();
    write_sorted(&mut out, value);
    out
}

fn write_sorted(out: &mut String, value: &Value) {
    match value {
        Value::Object(map) => {
            let mut keys: Vec<&String> = map.keys().collect();
            keys.sort();
            out.push('{');
            for (i, key) in keys.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write_string(out, key);
                out.push(':');
                if let Some(v) = map.get(*key) {
                    write_sorted(out, v);
                }
            }
            out.push('}');
        }
        Value::Array(items) => {
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write_sorted(out, item);
            }
            out.push(']');
        }
        Value::Number(n) => write_float_number(out, n),
        scalar => write_scalar(out, scalar),
    }
}

/// Writes `value` as Go writes the typed struct described by `fields`: known fields in struct
/// order, then unknown ones sorted; map keys sorted; integers exact. `value` should already be
/// [`normalize`]d.
pub fn encode_ordered(value: &Value, fields: &'static [Field]) -> String {
    let mut out = String::new();
    write_ordered(&mut out, value, &Ty::Struct(fields));
    out
}

/// Writes a slice of structs in struct order (see [`encode_ordered`]).
pub fn encode_ordered_slice(value: &Value, fields: &'static [Field]) -> String {
    let mut out = String::new();
    match value {
        Value::Array(items) => {
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write_ordered(&mut out, item, &Ty::Struct(fields));
            }
            out.push(']');
        }
        other => write_ordered(&mut out, other, &Ty::Raw),
    }
    out
}

fn write_ordered(out: &mut String, value: &Value, ty: &Ty) {
    match (ty, value) {
        (Ty::Ptr(inner), v) => write_ordered(out, v, inner),
        (Ty::Struct(fields), Value::Object(map)) => {
            out.push('{');
            let mut first = true;
            let mut emit = |out: &mut String, key: &str, v: &Value, t: &Ty| {
                if !first {
                    out.push(',');
                }
                first = false;
                write_string(out, key);
                out.push(':');
                write_ordered(out, v, t);
            };
            for field in fields.iter() {
                if let Some(v) = map.get(field.name) {
                    emit(out, field.name, v, &field.ty);
                }
            }
            let mut rest: Vec<&String> =
                map.keys().filter(|k| !fields.iter().any(|f| f.name == k.as_str())).collect();
            rest.sort();
            for key in rest {
                if let Some(v) = map.get(key) {
                    emit(out, key, v, &Ty::Raw);
                }
            }
            out.push('}');
        }
        (Ty::Slice(inner), Value::Array(items)) => {
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write_ordered(out, item, inner);
            }
            out.push(']');
        }
        (Ty::Map(inner), Value::Object(map)) => {
            let mut keys: Vec<&String> = map.keys().collect();
            keys.sort();
            out.push('{');
            for (i, key) in keys.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write_string(out, key);
                out.push(':');
                if let Some(v) = map.get(*key) {
                    write_ordered(out, v, inner);
                }
            }
            out.push('}');
        }
        (_, Value::Object(map)) => {
            // Raw or unknown objects: Go would have decoded them into a map, so sort.
            let mut keys: Vec<&String> = map.keys().collect();
            keys.sort();
            out.push('{');
            for (i, key) in keys.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write_string(out, key);
                out.push(':');
                if let Some(v) = map.get(*key) {
                    write_ordered(out, v, &Ty::Raw);
                }
            }
            out.push('}');
        }
        (_, Value::Array(items)) => {
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write_ordered(out, item, &Ty::Raw);
            }
            out.push(']');
        }
        (_, Value::Number(n)) => out.push_str(&n.to_string()),
        (_, scalar) => write_scalar(out, scalar),
    }
}

fn write_scalar(out: &mut String, value: &Value) {
    match value {
        Value::Null => out.push_str("null"),
        Value::Bool(true) => out.push_str("true"),
        Value::Bool(false) => out.push_str("false"),
        Value::String(s) => write_string(out, s),
        Value::Number(n) => out.push_str(&n.to_string()),
        Value::Array(_) | Value::Object(_) => write_sorted(out, value),
    }
}

/// Writes a number as Go writes a float64 it decoded it into: integers below 2^53 exactly,
/// others through float64 with Go's choice between plain and exponent notation.
fn write_float_number(out: &mut String, n: &Number) {
    const EXACT: u64 = 1 << 53;
    if let Some(u) = n.as_u64()
        && u <= EXACT
    {
        out.push_str(&u.to_string());
        return;
    }
    if let Some(i) = n.as_i64()
        && i.unsigned_abs() <= EXACT
    {
        out.push_str(&i.to_string());
        return;
    }
    let f = n.as_f64().unwrap_or(0.0);
    out.push_str(&format_go_float(f));
}

/// Formats a float64 as Go's `encoding/json` does (ES6 number-to-string rules).
pub fn format_go_float(f: f64) -> String {
    if !f.is_finite() {
        // Go refuses to encode these; write something stable.
        return "null".to_owned();
    }
    let abs = f.abs();
    if abs != 0.0 && !(1e-6..1e21).contains(&abs) {
        let text = format!("{f:e}");
        // Rust writes `1e21` and `1.5e-7`; Go writes `1e+21` and `1.5e-7`.
        match text.split_once('e') {
            Some((mantissa, exp)) if !exp.starts_with('-') => format!("{mantissa}e+{exp}"),
            _ => text,
        }
    } else {
        let text = format!("{f}");
        if text == "-0" { "-0".to_owned() } else { text }
    }
}

/// Writes a JSON string with Go's escaping (HTML-safe).
pub fn write_string(out: &mut String, s: &str) {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '\u{8}' => out.push_str("\\b"),
            '\u{c}' => out.push_str("\\f"),
            '<' | '>' | '&' | '\u{0}'..='\u{1f}' => {
                let b = c as u32;
                out.push_str("\\u00");
                out.push(char::from(HEX[((b >> 4) & 0xf) as usize]));
                out.push(char::from(HEX[(b & 0xf) as usize]));
            }
            '\u{2028}' => out.push_str("\\u2028"),
            '\u{2029}' => out.push_str("\\u2029"),
            other => out.push(other),
        }
    }
    out.push('"');
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::super::goschema::{CONTAINER, POD_TEMPLATE_SPEC, PVC};
    use super::*;

    #[test]
    fn strings_are_escaped_like_go() {
        let mut out = String::new();
        write_string(&mut out, "a<b>&\"\\\n\u{1}\u{8}\u{2028}é");
        assert_eq!(out, r#""a\u003cb\u003e\u0026\"\\\n\u0001\b\u2028é""#);
    }

    #[test]
    fn floats_follow_go() {
        assert_eq!(format_go_float(1e21), "1e+21");
        assert_eq!(format_go_float(1.5e-7), "1.5e-7");
        assert_eq!(format_go_float(0.5), "0.5");
        // Shortest round-trip digits, padded with zeros, as Go's 'f' format with precision -1.
        assert_eq!(format_go_float(9_223_372_036_854_775_807.0), "9223372036854776000");
        let mut out = String::new();
        write_float_number(&mut out, &Number::from(i64::MAX));
        assert_eq!(out, "9223372036854776000");
    }

    #[test]
    fn template_fills_in_what_go_always_writes() {
        let value = json!({
            "metadata": {"labels": {"app": "nginx"}, "annotations": {}},
            "spec": {
                "containers": [{
                    "name": "nginx",
                    "image": "nginx:1",
                    "env": [],
                    "ports": [{"containerPort": 80, "hostPort": 0}],
                    "resources": {"limits": {"cpu": "1000m", "memory": "0.5Gi"}},
                    "readinessProbe": {"httpGet": {"path": "/", "port": 80}, "periodSeconds": 0},
                    "stdin": false
                }],
                "volumes": [{"name": "v", "downwardAPI": {"items": [{"path": "p", "resourceFieldRef": {"resource": "limits.cpu"}}]}}],
                "securityContext": {},
                "terminationGracePeriodSeconds": 0,
                "hostNetwork": false
            }
        });
        let normalized = normalize_struct(&value, POD_TEMPLATE_SPEC);
        assert_eq!(
            normalized,
            json!({
                "metadata": {"creationTimestamp": null, "labels": {"app": "nginx"}},
                "spec": {
                    "containers": [{
                        "name": "nginx",
                        "image": "nginx:1",
                        "ports": [{"containerPort": 80}],
                        "resources": {"limits": {"cpu": "1", "memory": "512Mi"}},
                        "readinessProbe": {"httpGet": {"path": "/", "port": 80}}
                    }],
                    "volumes": [{"name": "v", "downwardAPI": {"items": [{"path": "p", "resourceFieldRef": {"resource": "limits.cpu", "divisor": "0"}}]}}],
                    "securityContext": {},
                    "terminationGracePeriodSeconds": 0
                }
            })
        );
        // Normalising twice changes nothing.
        assert_eq!(normalize_struct(&normalized, POD_TEMPLATE_SPEC), normalized);
    }

    #[test]
    fn empty_template_gets_required_fields() {
        let normalized = normalize_struct(&json!({}), POD_TEMPLATE_SPEC);
        assert_eq!(
            encode_sorted(&normalized),
            r#"{"metadata":{"creationTimestamp":null},"spec":{"containers":null}}"#
        );
    }

    #[test]
    fn ordered_encoding_follows_struct_order() {
        let container = json!({
            "args": ["/bin/sh", "-c", "echo abc"],
            "image": "foo/image:v1",
            "name": "test_container",
            "ports": [{"containerPort": 8001}]
        });
        let normalized = normalize_struct(&container, CONTAINER);
        assert_eq!(
            encode_ordered(&normalized, CONTAINER),
            r#"{"name":"test_container","image":"foo/image:v1","args":["/bin/sh","-c","echo abc"],"ports":[{"containerPort":8001}],"resources":{}}"#
        );
    }

    #[test]
    fn pvc_encoding() {
        let pvc = json!({
            "metadata": {"name": "www-data"},
            "spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}}
        });
        let normalized = normalize_struct(&pvc, PVC);
        assert_eq!(
            encode_ordered(&normalized, PVC),
            r#"{"metadata":{"name":"www-data","creationTimestamp":null},"spec":{"accessModes":["ReadWriteOnce"],"resources":{"requests":{"storage":"1Gi"}}},"status":{}}"#
        );
    }

    #[test]
    fn unknown_fields_are_kept_unless_empty() {
        let normalized = normalize_struct(
            &json!({"name": "c", "futureField": {"a": 1}, "futureList": [], "futureText": ""}),
            CONTAINER,
        );
        assert_eq!(normalized, json!({"name": "c", "resources": {}, "futureField": {"a": 1}}));
    }
}
