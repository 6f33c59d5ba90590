//! Strategic merge patch on arbitrary JSON: never panics, and a created patch turns its
//! original into its modified document.
//!
//! Input: one byte choosing the schema, then two JSON documents separated by a NUL byte.

#![no_main]

use kruise_core::smp::{PatchSchema, apply_patch, create_patch};
use libfuzzer_sys::fuzz_target;
use serde_json::{Value, json};

/// Field names Kubernetes merges lists on; used to spot documents outside the round trip's
/// promise (repeated merge keys).
const MERGE_KEYS: &[&str] = &[
    "name",
    "containerPort",
    "mountPath",
    "devicePath",
    "ip",
    "topologyKey",
    "type",
    "uid",
    "resourceClaimName",
];

/// Members set to `null` are absent to the API server's decoder.
fn without_nulls(value: &Value) -> Value {
    match value {
        Value::Object(map) => Value::Object(
            map.iter()
                .filter(|(_, v)| !v.is_null())
                .map(|(k, v)| (k.clone(), without_nulls(v)))
                .collect(),
        ),
        Value::Array(items) => Value::Array(items.iter().map(without_nulls).collect()),
        other => other.clone(),
    }
}

fn printed(value: &Value) -> String {
    match value {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

/// Whether a document is one a two-way patch promises to reproduce: no directive-like keys,
/// no repeated values or merge keys in lists, no `null` or mixed items in lists.
fn round_trippable(value: &Value) -> bool {
    match value {
        Value::Object(map) => map.iter().all(|(k, v)| !k.starts_with('$') && round_trippable(v)),
        Value::Array(items) => {
            if items.iter().any(|item| item.is_null() || item.is_array()) {
                return false;
            }
            let kinds: std::collections::BTreeSet<u8> = items
                .iter()
                .map(|item| match item {
                    Value::Object(_) => 0,
                    Value::String(_) => 1,
                    Value::Number(_) => 2,
                    _ => 3,
                })
                .collect();
            if kinds.len() > 1 {
                return false;
            }
            let printed_items: Vec<String> = items.iter().map(printed).collect();
            let mut unique = printed_items.clone();
            unique.sort();
            unique.dedup();
            if unique.len() != printed_items.len() {
                return false;
            }
            for key in MERGE_KEYS {
                let mut seen: Vec<String> =
                    items.iter().filter_map(|item| item.get(key)).map(printed).collect();
                let before = seen.len();
                seen.sort();
                seen.dedup();
                if seen.len() != before {
                    return false;
                }
            }
            items.iter().all(round_trippable)
        }
        _ => true,
    }
}

fuzz_target!(|data: &[u8]| {
    let Some((&selector, rest)) = data.split_first() else { return };
    let schema = match selector % 3 {
        0 => PatchSchema::Pod,
        1 => PatchSchema::PodTemplateSpec,
        _ => PatchSchema::WORKLOAD_TEMPLATE,
    };
    let split = rest.iter().position(|&b| b == 0).unwrap_or(rest.len());
    let (first, second) = (&rest[..split], rest.get(split + 1..).unwrap_or(&[]));
    let (Ok(a), Ok(b)) =
        (serde_json::from_slice::<Value>(first), serde_json::from_slice::<Value>(second))
    else {
        return;
    };

    // Applying anything must not panic; an empty patch changes nothing.
    let _ = apply_patch(&a, &b, schema);
    if a.is_object() {
        assert_eq!(apply_patch(&a, &json!({}), schema).ok(), Some(a.clone()));
    }

    let Ok(patch) = create_patch(&a, &b, schema) else { return };
    if let Ok(same) = create_patch(&a, &a, schema) {
        assert_eq!(same, json!({}), "a document differs from itself");
    }
    if !round_trippable(&a) || !round_trippable(&b) {
        let _ = apply_patch(&a, &patch, schema);
        return;
    }
    let patched = match apply_patch(&a, &patch, schema) {
        Ok(patched) => patched,
        Err(err) => panic!("a created patch does not apply: {err}\npatch: {patch}"),
    };
    let expected = if b.is_null() { json!({}) } else { b.clone() };
    assert_eq!(without_nulls(&patched), without_nulls(&expected), "patch: {patch}");
});
