//! A JSON diff that produces the same operations as the `jsonpatch` library upstream uses to
//! compare revisions (appscode/jsonpatch 1.0): objects key by key, equal-length arrays
//! element by element, arrays of different lengths by membership.

use serde_json::{Map, Value};

/// The kind of a patch operation.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum OpKind {
    Add,
    Remove,
    Replace,
}

/// One operation: its kind, its JSON-pointer path and (for add/replace) the new value.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Op {
    pub kind: OpKind,
    pub path: String,
    pub value: Option<Value>,
}

/// The operations turning `a` into `b` (both objects), in a deterministic order.
pub(crate) fn diff(a: &Value, b: &Value) -> Vec<Op> {
    let mut ops = Vec::new();
    match (a, b) {
        (Value::Object(x), Value::Object(y)) => diff_objects(x, y, "", &mut ops),
        _ => handle_values(a, b, "", &mut ops),
    }
    ops
}

/// Escapes a key for a JSON pointer (RFC 6901).
pub(crate) fn escape_key(key: &str) -> String {
    key.replace('~', "~0").replace('/', "~1")
}

/// Reverses [`escape_key`].
pub(crate) fn unescape_key(key: &str) -> String {
    key.replace("~1", "/").replace("~0", "~")
}

fn kind_of(v: &Value) -> u8 {
    match v {
        Value::Null => 0,
        Value::Bool(_) => 1,
        Value::Number(_) => 2,
        Value::String(_) => 3,
        Value::Array(_) => 4,
        Value::Object(_) => 5,
    }
}

fn push(ops: &mut Vec<Op>, kind: OpKind, path: String, value: Option<&Value>) {
    ops.push(Op { kind, path, value: value.cloned() });
}

fn diff_objects(a: &Map<String, Value>, b: &Map<String, Value>, path: &str, ops: &mut Vec<Op>) {
    let mut keys: Vec<&String> = b.keys().collect();
    keys.sort();
    for key in keys {
        let Some(bv) = b.get(key) else { continue };
        let p = format!("{path}/{}", escape_key(key));
        match a.get(key) {
            None => push(ops, OpKind::Add, p, Some(bv)),
            Some(av) if kind_of(av) != kind_of(bv) => push(ops, OpKind::Replace, p, Some(bv)),
            Some(av) => handle_values(av, bv, &p, ops),
        }
    }
    let mut removed: Vec<&String> = a.keys().filter(|k| !b.contains_key(*k)).collect();
    removed.sort();
    for key in removed {
        push(ops, OpKind::Remove, format!("{path}/{}", escape_key(key)), None);
    }
}

fn numbers_equal(a: &Value, b: &Value) -> bool {
    match (a.as_f64(), b.as_f64()) {
        (Some(x), Some(y)) => x == y,
        _ => a == b,
    }
}

fn handle_values(a: &Value, b: &Value, path: &str, ops: &mut Vec<Op>) {
    match (a, b) {
        (Value::Object(x), Value::Object(y)) => diff_objects(x, y, path, ops),
        (Value::Number(_), Value::Number(_)) => {
            if !numbers_equal(a, b) {
                push(ops, OpKind::Replace, path.to_owned(), Some(b));
            }
        }
        (Value::String(_), Value::String(_)) | (Value::Bool(_), Value::Bool(_)) => {
            if a != b {
                push(ops, OpKind::Replace, path.to_owned(), Some(b));
            }
        }
        (Value::Array(x), Value::Array(y)) => {
            if x.len() == y.len() {
                for (i, (xa, yb)) in x.iter().zip(y).enumerate() {
                    handle_values(xa, yb, &format!("{path}/{i}"), ops);
                }
            } else {
                compare_arrays(x, y, path, ops);
            }
        }
        (Value::Null, Value::Null) => {}
        (Value::Null, _) => push(ops, OpKind::Add, path.to_owned(), Some(b)),
        // Mismatched element types inside arrays: upstream would crash; replace instead.
        _ => push(ops, OpKind::Replace, path.to_owned(), Some(b)),
    }
}

fn compare_arrays(a: &[Value], b: &[Value], path: &str, ops: &mut Vec<Op>) {
    for (i, v) in a.iter().enumerate() {
        if !b.contains(v) {
            push(ops, OpKind::Remove, format!("{path}/{i}"), None);
        }
    }
    for (i, v) in b.iter().enumerate() {
        if !a.contains(v) {
            push(ops, OpKind::Add, format!("{path}/{i}"), Some(v));
        }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn ops(a: Value, b: Value) -> Vec<(OpKind, String)> {
        diff(&a, &b).into_iter().map(|op| (op.kind, op.path)).collect()
    }

    #[test]
    fn objects_and_arrays() {
        assert_eq!(
            ops(
                json!({"spec": {"containers": [{"name": "c", "image": "a"}]}, "x": 1}),
                json!({"spec": {"containers": [{"name": "c", "image": "b"}]}, "y": 1})
            ),
            [
                (OpKind::Replace, "/spec/containers/0/image".to_owned()),
                (OpKind::Add, "/y".to_owned()),
                (OpKind::Remove, "/x".to_owned()),
            ]
        );
        assert_eq!(
            ops(json!({"l": {"a/b": "1"}}), json!({"l": {"a/b": "2"}})),
            [(OpKind::Replace, "/l/a~1b".to_owned())]
        );
        // Different lengths compare by membership; duplicates vanish.
        assert_eq!(ops(json!({"a": ["x", "x"]}), json!({"a": ["x"]})), []);
        assert_eq!(
            ops(json!({"a": ["x"]}), json!({"a": ["x", "y"]})),
            [(OpKind::Add, "/a/1".to_owned())]
        );
        // A type change is a replacement.
        assert_eq!(
            ops(json!({"a": null}), json!({"a": "v"})),
            [(OpKind::Replace, "/a".to_owned())]
        );
        assert_eq!(ops(json!({"a": 1}), json!({"a": 1.0})), []);
        assert_eq!(unescape_key("a~1b~0c"), "a/b~c");
    }
}
