//! JSON merge patches (RFC 7386) computed between two documents.
//!
//! A status written as a merge patch of the whole new status leaves behind what the new one
//! no longer has: a counter that went to zero (omitted when zero), a list that emptied, a map
//! entry that went away. [`replacing`] writes those as `null`, so that applying the patch to
//! the old document gives the new one.

use serde_json::{Map, Value};

/// `{"status": ...}` as a merge patch writing the status `new` over `old` (the status as
/// read; `None` when there was none), with [`replacing`].
pub fn status_patch<S: serde::Serialize>(old: Option<&S>, new: &S) -> Value {
    // Serialising a typed status to a Value cannot fail (string keys, plain values).
    let old = old.and_then(|o| serde_json::to_value(o).ok()).unwrap_or(Value::Null);
    let new = serde_json::to_value(new).unwrap_or(Value::Null);
    serde_json::json!({ "status": replacing(&old, &new) })
}

/// A merge patch that writes all of `new` and turns `old` into it: every member of `new`
/// (objects member by member, anything else whole), and `null` for members only `old` has,
/// at any depth.
///
/// Writing every member, not only those that differ from `old`, keeps the patch right when
/// `old` is a cached copy a little behind the stored one. A member whose new value is `null`
/// cannot be expressed (a merge patch `null` removes it): it is removed instead, which reads
/// the same for the optional fields of a typed status.
pub fn replacing(old: &Value, new: &Value) -> Value {
    let (Value::Object(old), Value::Object(new)) = (old, new) else {
        return strip_nulls(new);
    };
    let mut patch = Map::new();
    for (key, value) in new {
        let member = match old.get(key) {
            Some(before) => replacing(before, value),
            None => strip_nulls(value),
        };
        patch.insert(key.clone(), member);
    }
    for key in old.keys().filter(|k| !new.contains_key(*k)) {
        patch.insert(key.clone(), Value::Null);
    }
    Value::Object(patch)
}

/// A new member's value as a merge patch writes it: its object members that are `null` are
/// left out (they would read as removals of nothing).
fn strip_nulls(value: &Value) -> Value {
    match value {
        Value::Object(map) => Value::Object(
            map.iter()
                .filter(|(_, v)| !v.is_null())
                .map(|(k, v)| (k.clone(), strip_nulls(v)))
                .collect(),
        ),
        other => other.clone(),
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use proptest::prelude::*;
    use serde_json::json;

    use super::*;

    #[test]
    fn zeroed_counters_emptied_lists_and_gone_entries_are_removed() {
        let old = json!({"matchedPods": 2, "updatedReadyPods": 2, "failedNodes": ["a"],
            "disruptedPods": {"p1": "t1", "p2": "t2"}, "observedGeneration": 3});
        let new = json!({"matchedPods": 2, "disruptedPods": {"p2": "t2", "p3": "t3"},
            "observedGeneration": 4});
        let patch = replacing(&old, &new);
        assert_eq!(
            patch,
            json!({"matchedPods": 2, "updatedReadyPods": null, "failedNodes": null,
                "disruptedPods": {"p1": null, "p2": "t2", "p3": "t3"}, "observedGeneration": 4})
        );
        let mut applied = old.clone();
        json_patch::merge(&mut applied, &patch);
        assert_eq!(applied, new);
        // Against an older copy than the stored one, every member of `new` is still written.
        let mut stored = json!({"matchedPods": 5, "disruptedPods": {"p2": "t9"}});
        json_patch::merge(&mut stored, &replacing(&new, &new));
        assert_eq!(
            stored,
            json!({"matchedPods": 2, "disruptedPods": {"p2": "t2", "p3": "t3"},
            "observedGeneration": 4})
        );
    }

    /// JSON documents without `null` members (what a typed status serializes to).
    fn document() -> impl Strategy<Value = Value> {
        let leaf = prop_oneof![
            any::<bool>().prop_map(Value::from),
            (-3i64..3).prop_map(Value::from),
            "[a-c]{0,2}".prop_map(Value::from),
        ];
        leaf.prop_recursive(3, 24, 4, |inner| {
            prop_oneof![
                prop::collection::vec(inner.clone(), 0..3).prop_map(Value::from),
                prop::collection::btree_map("[a-d]", inner, 0..4)
                    .prop_map(|m| Value::Object(m.into_iter().collect())),
            ]
        })
    }

    proptest! {
        /// Applying the patch to the old document always gives the new one.
        #[test]
        fn the_patch_turns_old_into_new(old in document(), new in document()) {
            let mut applied = old.clone();
            json_patch::merge(&mut applied, &replacing(&old, &new));
            prop_assert_eq!(applied, new);
        }
    }
}
