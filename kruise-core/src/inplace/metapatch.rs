//! The strategic-merge patch between two pod metadata objects, as Kubernetes'
//! `CreateTwoWayMergePatch` writes it for a `Pod` holding only metadata: changed or added
//! fields with their new values, removed fields as `null`, maps diffed key by key, the
//! `finalizers` list with its `$deleteFromPrimitiveList` / `$setElementOrder` directives.

use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use serde_json::{Map, Value, json};

use crate::revision::{gojson, goschema};

/// Two-way merge patch from `old` to `new` metadata: `{"metadata": {...}}`, or `{}` when
/// there is no difference.
pub(crate) fn metadata_patch(old: &ObjectMeta, new: &ObjectMeta) -> Value {
    let encode = |m: &ObjectMeta| {
        let raw = serde_json::to_value(m).unwrap_or(Value::Null);
        gojson::normalize_struct(&raw, goschema::OBJECT_META)
    };
    let (old, new) = (encode(old), encode(new));
    let empty = Map::new();
    let diff =
        diff_maps(old.as_object().unwrap_or(&empty), new.as_object().unwrap_or(&empty), true);
    if diff.is_empty() { json!({}) } else { json!({ "metadata": Value::Object(diff) }) }
}

fn diff_maps(old: &Map<String, Value>, new: &Map<String, Value>, top: bool) -> Map<String, Value> {
    let mut patch = Map::new();
    for (key, new_value) in new {
        match old.get(key) {
            None => {
                patch.insert(key.clone(), new_value.clone());
            }
            Some(old_value) if old_value == new_value => {}
            Some(Value::Object(a)) if new_value.is_object() => {
                let nested = diff_maps(a, new_value.as_object().unwrap_or(&Map::new()), false);
                if !nested.is_empty() {
                    patch.insert(key.clone(), Value::Object(nested));
                }
            }
            Some(Value::Array(a)) if top && key == "finalizers" => {
                if let Value::Array(b) = new_value {
                    diff_primitive_list(key, a, b, &mut patch);
                }
            }
            Some(Value::Array(_)) if top && key == "ownerReferences" => {
                // Merged by uid upstream; replacing the list keeps the result right.
                let mut items = vec![json!({"$patch": "replace"})];
                items.extend(new_value.as_array().cloned().unwrap_or_default());
                patch.insert(key.clone(), Value::Array(items));
            }
            Some(_) => {
                patch.insert(key.clone(), new_value.clone());
            }
        }
    }
    for key in old.keys() {
        if !new.contains_key(key) {
            patch.insert(key.clone(), Value::Null);
        }
    }
    patch
}

fn diff_primitive_list(key: &str, old: &[Value], new: &[Value], patch: &mut Map<String, Value>) {
    let text = |v: &Value| v.as_str().map(str::to_owned).unwrap_or_else(|| v.to_string());
    let mut deleted: Vec<String> = Vec::new();
    for item in old {
        let t = text(item);
        if !new.iter().any(|n| text(n) == t) && !deleted.contains(&t) {
            deleted.push(t);
        }
    }
    deleted.sort();
    let mut added: Vec<Value> = Vec::new();
    for item in new {
        if !old.contains(item) && !added.contains(item) {
            added.push(item.clone());
        }
    }
    if !added.is_empty() {
        patch.insert(key.to_owned(), Value::Array(added));
    }
    if !deleted.is_empty() {
        patch.insert(
            format!("$deleteFromPrimitiveList/{key}"),
            Value::Array(deleted.into_iter().map(Value::String).collect()),
        );
    }
    if old != new {
        patch.insert(format!("$setElementOrder/{key}"), Value::Array(new.to_vec()));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn meta(value: Value) -> ObjectMeta {
        serde_json::from_value(value).expect("meta")
    }

    #[test]
    fn labels_and_finalizers() {
        let patch = metadata_patch(
            &meta(json!({"labels": {"k": "v", "k2": "v2"}, "finalizers": ["fz1", "fz2"]})),
            &meta(json!({"labels": {"k": "v", "k1": "v1"}, "finalizers": ["fz2"]})),
        );
        assert_eq!(
            gojson::encode_sorted(&patch),
            r#"{"metadata":{"$deleteFromPrimitiveList/finalizers":["fz1"],"$setElementOrder/finalizers":["fz2"],"labels":{"k1":"v1","k2":null}}}"#
        );
    }

    #[test]
    fn whole_maps_added_or_removed() {
        let patch = metadata_patch(&meta(json!({})), &meta(json!({"labels": {"k1": "v1"}})));
        assert_eq!(patch, json!({"metadata": {"labels": {"k1": "v1"}}}));
        let patch = metadata_patch(&meta(json!({"annotations": {"a": "b"}})), &meta(json!({})));
        assert_eq!(patch, json!({"metadata": {"annotations": null}}));
        assert_eq!(metadata_patch(&meta(json!({"labels": {}})), &meta(json!({}))), json!({}));
    }

    #[test]
    fn finalizer_additions_keep_order() {
        let patch = metadata_patch(
            &meta(json!({"finalizers": ["a"]})),
            &meta(json!({"finalizers": ["c", "a", "b"]})),
        );
        assert_eq!(
            patch,
            json!({"metadata": {"finalizers": ["c", "b"], "$setElementOrder/finalizers": ["c", "a", "b"]}})
        );
    }
}
