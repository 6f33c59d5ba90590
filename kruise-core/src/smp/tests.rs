//! Unit tests: one or more per directive, with the behaviour Kubernetes documents (and its own
//! test tables show), on Pod-shaped documents and on a schema with every kind of field.

use super::schema::{Node, testing::MERGE_ITEM};
use super::*;
use serde_json::json;

fn pod_patch(original: Value, modified: Value) -> Value {
    create_patch(&original, &modified, PatchSchema::Pod).expect("create_patch")
}

fn pod_apply(original: Value, patch: Value) -> Value {
    apply_patch(&original, &patch, PatchSchema::Pod).expect("apply_patch")
}

fn pod_apply_err(original: Value, patch: Value) -> SmpError {
    apply_patch(&original, &patch, PatchSchema::Pod).expect_err("apply_patch should fail")
}

/// Creates the patch, checks it, and checks that applying it gives `modified` back.
fn round_trip(original: Value, modified: Value, expected_patch: Value) {
    let patch = pod_patch(original.clone(), modified.clone());
    assert_eq!(patch, expected_patch, "patch");
    assert_eq!(pod_apply(original, patch), modified, "patch applied to the original");
}

fn item_apply(original: Value, patch: Value) -> Result<Value, SmpError> {
    let (Value::Object(original), Value::Object(patch)) = (original, patch) else {
        panic!("objects expected");
    };
    apply::merge_map(original, &patch, Node::Known(&MERGE_ITEM), &Path::ROOT).map(Value::Object)
}

fn item_patch(original: Value, modified: Value) -> Value {
    let (Value::Object(original), Value::Object(modified)) = (original, modified) else {
        panic!("objects expected");
    };
    diff::diff_maps(&original, &modified, Node::Known(&MERGE_ITEM), false, &Path::ROOT)
        .map(Value::Object)
        .expect("diff")
}

// ---- create_patch --------------------------------------------------------------------------

#[test]
fn identical_documents_give_an_empty_patch() {
    let pod = json!({"metadata": {"name": "p", "labels": {"a": "1"}},
        "spec": {"containers": [{"name": "c", "image": "i", "env": [{"name": "E", "value": "1"}]}]}});
    assert_eq!(pod_patch(pod.clone(), pod), json!({}));
}

#[test]
fn changed_and_removed_fields_are_set_and_nulled() {
    round_trip(
        json!({"metadata": {"labels": {"a": "1", "b": "2"}}, "spec": {"restartPolicy": "Always"}}),
        json!({"metadata": {"labels": {"a": "3"}}, "spec": {"restartPolicy": "Always", "hostname": "h"}}),
        json!({"metadata": {"labels": {"a": "3", "b": null}}, "spec": {"hostname": "h"}}),
    );
}

#[test]
fn a_changed_container_is_patched_by_name_with_its_order() {
    round_trip(
        json!({"spec": {"containers": [{"name": "a", "image": "a:1"}, {"name": "b", "image": "b:1"}]}}),
        json!({"spec": {"containers": [{"name": "a", "image": "a:2"}, {"name": "b", "image": "b:1"}]}}),
        json!({"spec": {
            "$setElementOrder/containers": [{"name": "a"}, {"name": "b"}],
            "containers": [{"name": "a", "image": "a:2"}]
        }}),
    );
}

#[test]
fn a_removed_container_gets_a_delete_directive() {
    round_trip(
        json!({"spec": {"containers": [{"name": "a", "image": "a"}, {"name": "b", "image": "b"}]}}),
        json!({"spec": {"containers": [{"name": "b", "image": "b"}]}}),
        json!({"spec": {
            "$setElementOrder/containers": [{"name": "b"}],
            "containers": [{"name": "a", "$patch": "delete"}]
        }}),
    );
}

#[test]
fn an_added_item_is_sent_whole_and_placed_by_the_order_directive() {
    round_trip(
        json!({"spec": {"containers": [{"name": "a", "image": "a"}]}}),
        json!({"spec": {"containers": [{"name": "new", "image": "n"}, {"name": "a", "image": "a"}]}}),
        json!({"spec": {
            "$setElementOrder/containers": [{"name": "new"}, {"name": "a"}],
            "containers": [{"name": "new", "image": "n"}]
        }}),
    );
}

#[test]
fn a_reordered_list_only_sends_the_order() {
    round_trip(
        json!({"spec": {"containers": [{"name": "a"}, {"name": "b"}]}}),
        json!({"spec": {"containers": [{"name": "b"}, {"name": "a"}]}}),
        json!({"spec": {"$setElementOrder/containers": [{"name": "b"}, {"name": "a"}]}}),
    );
}

#[test]
fn a_list_that_was_empty_is_sent_whole() {
    round_trip(
        json!({"spec": {"containers": []}}),
        json!({"spec": {"containers": [{"name": "a"}]}}),
        json!({"spec": {"containers": [{"name": "a"}]}}),
    );
}

#[test]
fn nested_merge_lists_patch_env_ports_and_mounts_by_their_keys() {
    round_trip(
        json!({"spec": {"containers": [{"name": "c",
            "env": [{"name": "A", "value": "1"}, {"name": "B", "value": "2"}],
            "ports": [{"containerPort": 80, "protocol": "TCP"}],
            "volumeMounts": [{"name": "v", "mountPath": "/data"}]}]}}),
        json!({"spec": {"containers": [{"name": "c",
            "env": [{"name": "A", "value": "9"}, {"name": "B", "value": "2"}],
            "ports": [{"containerPort": 80, "protocol": "TCP"}, {"containerPort": 443}],
            "volumeMounts": [{"name": "v", "mountPath": "/data", "readOnly": true}]}]}}),
        json!({"spec": {
            "$setElementOrder/containers": [{"name": "c"}],
            "containers": [{
                "name": "c",
                "$setElementOrder/env": [{"name": "A"}, {"name": "B"}],
                "env": [{"name": "A", "value": "9"}],
                "$setElementOrder/ports": [{"containerPort": 80}, {"containerPort": 443}],
                "ports": [{"containerPort": 443}],
                "$setElementOrder/volumeMounts": [{"mountPath": "/data"}],
                "volumeMounts": [{"mountPath": "/data", "readOnly": true}]
            }]
        }}),
    );
}

#[test]
fn removed_finalizers_use_the_primitive_deletion_list() {
    round_trip(
        json!({"metadata": {"finalizers": ["a", "b", "c"]}}),
        json!({"metadata": {"finalizers": ["a", "c", "d"]}}),
        json!({"metadata": {
            "$deleteFromPrimitiveList/finalizers": ["b"],
            "$setElementOrder/finalizers": ["a", "c", "d"],
            "finalizers": ["d"]
        }}),
    );
}

#[test]
fn owner_references_merge_by_uid() {
    round_trip(
        json!({"metadata": {"ownerReferences": [{"uid": "1", "name": "x", "controller": true}]}}),
        json!({"metadata": {"ownerReferences": [{"uid": "1", "name": "x", "controller": false}]}}),
        json!({"metadata": {
            "$setElementOrder/ownerReferences": [{"uid": "1"}],
            "ownerReferences": [{"uid": "1", "controller": false}]
        }}),
    );
}

#[test]
fn a_changed_volume_source_lists_the_keys_to_retain() {
    round_trip(
        json!({"spec": {"volumes": [{"name": "v", "configMap": {"name": "cm"}}]}}),
        json!({"spec": {"volumes": [{"name": "v", "secret": {"secretName": "s"}}]}}),
        json!({"spec": {
            "$setElementOrder/volumes": [{"name": "v"}],
            "volumes": [{
                "name": "v",
                "$retainKeys": ["name", "secret"],
                "configMap": null,
                "secret": {"secretName": "s"}
            }]
        }}),
    );
}

#[test]
fn atomic_lists_are_replaced_whole() {
    // Tolerations, readiness gates and container statuses carry no merge strategy.
    round_trip(
        json!({"spec": {"tolerations": [{"key": "a"}, {"key": "b"}], "readinessGates": [{"conditionType": "x"}]},
            "status": {"containerStatuses": [{"name": "c", "ready": false}]}}),
        json!({"spec": {"tolerations": [{"key": "b"}], "readinessGates": [{"conditionType": "x"}]},
            "status": {"containerStatuses": [{"name": "c", "ready": true}]}}),
        json!({"spec": {"tolerations": [{"key": "b"}]},
            "status": {"containerStatuses": [{"name": "c", "ready": true}]}}),
    );
}

#[test]
fn status_conditions_merge_by_type() {
    round_trip(
        json!({"status": {"conditions": [{"type": "Ready", "status": "False"}, {"type": "PodScheduled", "status": "True"}]}}),
        json!({"status": {"conditions": [{"type": "Ready", "status": "True"}, {"type": "PodScheduled", "status": "True"}]}}),
        json!({"status": {
            "$setElementOrder/conditions": [{"type": "Ready"}, {"type": "PodScheduled"}],
            "conditions": [{"type": "Ready", "status": "True"}]
        }}),
    );
}

#[test]
fn a_changed_type_replaces_the_value() {
    round_trip(
        json!({"spec": {"containers": [{"name": "a"}]}, "metadata": {"labels": {"x": "1"}}}),
        json!({"spec": {"containers": "oops"}, "metadata": {"labels": ["x"]}}),
        json!({"spec": {"containers": "oops"}, "metadata": {"labels": ["x"]}}),
    );
}

#[test]
fn create_patch_rejects_items_without_their_merge_key() {
    let err = create_patch(
        &json!({"spec": {"containers": [{"name": "a"}]}}),
        &json!({"spec": {"containers": [{"image": "i"}]}}),
        PatchSchema::Pod,
    )
    .expect_err("should fail");
    assert_eq!(
        err,
        SmpError::MissingMergeKey { path: "spec.containers[0]".into(), key: "name".into() }
    );
    assert_eq!(err.to_string(), "at `spec.containers[0]`: list item has no merge key `name`");
}

#[test]
fn create_patch_rejects_non_objects() {
    assert_eq!(
        create_patch(&json!([1]), &json!({}), PatchSchema::Pod).expect_err("should fail"),
        SmpError::NotAnObject { path: "(root)".into(), found: "list" }
    );
    assert_eq!(
        create_patch(
            &json!({"spec": {"containers": ["a"]}}),
            &json!({"spec": {"containers": ["b"]}}),
            PatchSchema::Pod
        )
        .expect_err("should fail"),
        SmpError::NotAnObject { path: "spec.containers[0]".into(), found: "string" }
    );
}

#[test]
fn retain_keys_is_sent_when_fields_are_only_cleared() {
    // The item changed only by losing a field: the directive alone clears it.
    let patch = item_patch(
        json!({"retainKeysMap": {"name": "foo", "value": "bar"}}),
        json!({"retainKeysMap": {"name": "foo"}}),
    );
    assert_eq!(patch, json!({"retainKeysMap": {"$retainKeys": ["name"], "value": null}}));
    let unchanged = item_patch(
        json!({"retainKeysMap": {"name": "foo"}}),
        json!({"retainKeysMap": {"name": "foo"}}),
    );
    assert_eq!(unchanged, json!({}));
}

#[test]
fn modified_nulls_are_sent_as_deletions() {
    let patch = item_patch(json!({"name": 2}), json!({"name": 1, "value": 1, "other": null}));
    assert_eq!(patch, json!({"name": 1, "value": 1, "other": null}));
    assert_eq!(
        item_apply(json!({"name": 2}), patch).expect("should succeed"),
        json!({"name": 1, "value": 1})
    );
}

// ---- apply_patch ---------------------------------------------------------------------------

#[test]
fn empty_and_null_patches_change_nothing() {
    let pod = json!({"metadata": {"name": "p"}, "spec": {"containers": [{"name": "c"}]}});
    assert_eq!(pod_apply(pod.clone(), json!({})), pod);
    assert_eq!(pod_apply(pod.clone(), Value::Null), pod);
    assert_eq!(pod_apply(Value::Null, json!({"a": 1})), json!({"a": 1}));
}

#[test]
fn patch_replace_on_an_object_replaces_it() {
    let original = json!({"metadata": {"labels": {"a": "1", "b": "2"}}});
    let patch = json!({"metadata": {"labels": {"$patch": "replace", "c": "3"}}});
    assert_eq!(pod_apply(original, patch), json!({"metadata": {"labels": {"c": "3"}}}));
    // At the root too.
    assert_eq!(
        pod_apply(json!({"a": 1, "b": 2}), json!({"$patch": "replace", "c": 3})),
        json!({"c": 3})
    );
}

#[test]
fn patch_replace_where_nothing_was_adds_the_contents() {
    let patch = json!({"metadata": {"labels": {"$patch": "replace", "c": "3"}}});
    assert_eq!(pod_apply(json!({}), patch), json!({"metadata": {"labels": {"c": "3"}}}));
}

#[test]
fn patch_delete_on_an_object_removes_it() {
    let original = json!({"metadata": {"labels": {"a": "1"}, "name": "p"}});
    assert_eq!(
        pod_apply(original, json!({"metadata": {"labels": {"$patch": "delete"}}})),
        json!({"metadata": {"name": "p"}})
    );
    // Where there was nothing, nothing is added.
    assert_eq!(pod_apply(json!({}), json!({"metadata": {"$patch": "delete"}})), json!({}));
    assert_eq!(pod_apply(json!({"a": 1}), json!({"$patch": "delete"})), json!({}));
}

#[test]
fn patch_replace_in_a_merge_list_replaces_the_list() {
    let original = json!({"spec": {"containers": [{"name": "a"}, {"name": "b"}]}});
    let patch =
        json!({"spec": {"containers": [{"name": "c", "image": "i"}, {"$patch": "replace"}]}});
    assert_eq!(
        pod_apply(original.clone(), patch),
        json!({"spec": {"containers": [{"name": "c", "image": "i"}]}})
    );
    let patch = json!({"spec": {"containers": [{"$patch": "replace"}]}});
    assert_eq!(pod_apply(original, patch), json!({"spec": {"containers": []}}));
}

#[test]
fn patch_delete_in_a_merge_list_removes_every_match() {
    let original = json!({"spec": {"containers": [{"name": "a"}, {"name": "b"}, {"name": "a", "image": "dup"}]}});
    let patch = json!({"spec": {"containers": [{"name": "a", "$patch": "delete"}, {"name": "zz", "$patch": "delete"}]}});
    assert_eq!(pod_apply(original, patch), json!({"spec": {"containers": [{"name": "b"}]}}));
}

#[test]
fn bad_patch_directives_are_errors() {
    let original = json!({"spec": {"containers": [{"name": "a"}]}});
    assert_eq!(
        pod_apply_err(
            original.clone(),
            json!({"spec": {"containers": [{"name": "a", "$patch": "merge"}]}})
        ),
        SmpError::InvalidPatchDirective {
            path: "spec.containers[0]".into(),
            value: "\"merge\"".into(),
            reason: "a list item accepts `delete` or `replace`",
        }
    );
    assert!(matches!(
        pod_apply_err(original.clone(), json!({"spec": {"$patch": "explode"}})),
        SmpError::InvalidPatchDirective { path, .. } if path == "spec"
    ));
    assert!(matches!(
        pod_apply_err(original.clone(), json!({"spec": {"$patch": 3}})),
        SmpError::InvalidPatchDirective { .. }
    ));
    assert!(matches!(
        pod_apply_err(original, json!({"metadata": {"$patch": "merge"}})),
        SmpError::InvalidPatchDirective { path, .. } if path == "metadata"
    ));
}

#[test]
fn an_item_without_order_directive_goes_before_the_items_it_cannot_be_placed_against() {
    // Kubernetes puts items a patch adds (without `$setElementOrder`) first.
    let original = json!({"spec": {"containers": [{"name": "a"}, {"name": "b"}]}});
    let patch = json!({"spec": {"containers": [{"name": "new"}]}});
    assert_eq!(
        pod_apply(original, patch),
        json!({"spec": {"containers": [{"name": "new"}, {"name": "a"}, {"name": "b"}]}})
    );
    // Finalizers likewise.
    let patch = json!({"metadata": {"finalizers": ["z"]}});
    assert_eq!(
        pod_apply(json!({"metadata": {"finalizers": ["a", "b"]}}), patch),
        json!({"metadata": {"finalizers": ["z", "a", "b"]}})
    );
}

#[test]
fn items_named_by_the_patch_follow_its_order_and_others_keep_theirs() {
    // 1, 2, 3 with a patch naming 3 then 1: 2 is server-only and is placed before 3, which
    // followed it in the original.
    let original = json!({"mergingList": [{"name": 1}, {"name": 2, "value": "b"}, {"name": 3}]});
    let patch = json!({"mergingList": [{"name": 3, "value": "c"}, {"name": 1, "value": "a"}]});
    assert_eq!(
        item_apply(original, patch).expect("should succeed"),
        json!({"mergingList": [{"name": 2, "value": "b"}, {"name": 3, "value": "c"}, {"name": 1, "value": "a"}]})
    );
}

#[test]
fn set_element_order_orders_the_merged_list_around_server_only_items() {
    let original = json!({"spec": {"containers": [
        {"name": "a"}, {"name": "server1"}, {"name": "b"}, {"name": "server2"}, {"name": "c"}]}});
    let patch = json!({"spec": {
        "$setElementOrder/containers": [{"name": "c"}, {"name": "b"}, {"name": "a"}],
        "containers": [{"name": "b", "image": "new"}]
    }});
    // The ordered items follow the directive; a server-only item goes before the first
    // ordered item that came after it in the original (`c`, last there).
    assert_eq!(
        pod_apply(original, patch),
        json!({"spec": {"containers": [
            {"name": "server1"}, {"name": "server2"}, {"name": "c"}, {"name": "b", "image": "new"}, {"name": "a"}]}})
    );
    let original =
        json!({"spec": {"containers": [{"name": "a"}, {"name": "server"}, {"name": "b"}]}});
    let patch = json!({"spec": {"$setElementOrder/containers": [{"name": "b"}, {"name": "a"}]}});
    assert_eq!(
        pod_apply(original, patch),
        json!({"spec": {"containers": [{"name": "server"}, {"name": "b"}, {"name": "a"}]}})
    );
}

#[test]
fn set_element_order_may_name_items_that_do_not_exist() {
    let original = json!({"mergingIntList": [1, 3]});
    let patch = json!({"$setElementOrder/mergingIntList": [3, 2, 1]});
    assert_eq!(
        item_apply(original, patch).expect("should succeed"),
        json!({"mergingIntList": [3, 1]})
    );
}

#[test]
fn set_element_order_sees_the_storage_kubernetes_merged_in_place() {
    // Deleting `1` and adding `3` reuses `1`'s slot in Kubernetes' merge; the server-only
    // item `4` keeps its place before `3` as a result.
    let original =
        json!({"mergingList": [{"name": 1}, {"name": 2, "other": "b"}, {"name": 4, "other": "c"}]});
    let patch = json!({
        "$setElementOrder/mergingList": [{"name": 2}, {"name": 3}],
        "mergingList": [{"name": 3}, {"name": 1, "$patch": "delete"}]
    });
    assert_eq!(
        item_apply(original, patch).expect("should succeed"),
        json!({"mergingList": [{"name": 2, "other": "b"}, {"name": 4, "other": "c"}, {"name": 3}]})
    );
}

#[test]
fn set_element_order_must_agree_with_the_patch_list() {
    let original = json!({"spec": {"containers": [{"name": "a"}, {"name": "b"}]}});
    let patch = json!({"spec": {
        "$setElementOrder/containers": [{"name": "a"}, {"name": "b"}],
        "containers": [{"name": "b", "image": "x"}, {"name": "a", "image": "y"}]
    }});
    assert_eq!(
        pod_apply_err(original, patch),
        SmpError::SetElementOrderMismatch { path: "spec".into(), list: "containers".into() }
    );
}

#[test]
fn malformed_list_directives_are_errors() {
    let original = json!({"metadata": {"finalizers": ["a"]}});
    assert!(matches!(
        pod_apply_err(original.clone(), json!({"metadata": {"$setElementOrder": ["a"]}})),
        SmpError::MalformedDirective { path, directive, .. }
            if path == "metadata" && directive == "$setElementOrder"
    ));
    assert!(matches!(
        pod_apply_err(
            original.clone(),
            json!({"metadata": {"$deleteFromPrimitiveListX/finalizers": ["a"]}})
        ),
        SmpError::MalformedDirective { .. }
    ));
    assert!(matches!(
        pod_apply_err(original.clone(), json!({"metadata": {"$setElementOrder/finalizers": "a"}})),
        SmpError::MalformedDirective { .. }
    ));
    assert!(matches!(
        pod_apply_err(
            original.clone(),
            json!({"metadata": {"$deleteFromPrimitiveList/finalizers": {"a": 1}}})
        ),
        SmpError::MalformedDirective { .. }
    ));
    assert!(matches!(
        pod_apply_err(original, json!({"metadata": {"$retainKeys": "finalizers"}})),
        SmpError::MalformedDirective { directive, .. } if directive == "$retainKeys"
    ));
}

#[test]
fn delete_from_primitive_list_removes_values() {
    let original = json!({"metadata": {"finalizers": ["a", "b", "c", "b"]}});
    assert_eq!(
        pod_apply(
            original.clone(),
            json!({"metadata": {"$deleteFromPrimitiveList/finalizers": ["b", "zz"]}})
        ),
        json!({"metadata": {"finalizers": ["a", "c"]}})
    );
    // Also on lists without a merge strategy, and never adding the list.
    assert_eq!(
        item_apply(
            json!({"nonMergingIntList": [1, 2, 3]}),
            json!({"$deleteFromPrimitiveList/nonMergingIntList": [2]})
        )
        .expect("should succeed"),
        json!({"nonMergingIntList": [1, 3]})
    );
    assert_eq!(
        item_apply(
            json!({"foo": ["bar"]}),
            json!({"$deleteFromPrimitiveList/mergingIntList": [3]})
        )
        .expect("should succeed"),
        json!({"foo": ["bar"]})
    );
    // It is an error on a list of objects.
    assert!(matches!(
        pod_apply_err(
            json!({"metadata": {"finalizers": [{"a": 1}]}}),
            json!({"metadata": {"$deleteFromPrimitiveList/finalizers": [{"a": 1}]}})
        ),
        SmpError::MalformedDirective { .. }
    ));
}

#[test]
fn retain_keys_drops_unlisted_fields_and_guards_the_patch() {
    let original =
        json!({"spec": {"volumes": [{"name": "v", "emptyDir": {}, "hostPath": {"path": "/x"}}]}});
    let patch = json!({"spec": {"volumes": [{"name": "v", "$retainKeys": ["name", "emptyDir"]}]}});
    assert_eq!(
        pod_apply(original.clone(), patch),
        json!({"spec": {"volumes": [{"name": "v", "emptyDir": {}}]}})
    );

    let patch = json!({"spec": {"volumes": [{"name": "v", "$retainKeys": ["name"], "secret": {"secretName": "s"}}]}});
    assert_eq!(
        pod_apply_err(original.clone(), patch),
        SmpError::RetainKeysViolation { path: "spec.volumes[0]".into(), field: "secret".into() }
    );
    // Without the directive, a retainKeys list merges normally.
    let patch = json!({"spec": {"volumes": [{"name": "v", "emptyDir": {"medium": "Memory"}}]}});
    assert_eq!(
        pod_apply(original, patch),
        json!({"spec": {"volumes": [{"name": "v", "emptyDir": {"medium": "Memory"}, "hostPath": {"path": "/x"}}]}})
    );
}

#[test]
fn merge_list_items_need_their_merge_key() {
    let original = json!({"spec": {"containers": [{"name": "a"}]}});
    assert_eq!(
        pod_apply_err(original.clone(), json!({"spec": {"containers": [{"image": "x"}]}})),
        SmpError::MissingMergeKey { path: "spec.containers[0]".into(), key: "name".into() }
    );
    assert_eq!(
        pod_apply_err(original, json!({"spec": {"containers": [{"$patch": "delete"}]}})),
        SmpError::MissingMergeKey { path: "spec.containers[0]".into(), key: "name".into() }
    );
    // A key in the original list is needed too.
    assert_eq!(
        pod_apply_err(
            json!({"spec": {"containers": [{"image": "x"}]}}),
            json!({"spec": {"containers": [{"name": "b"}]}})
        ),
        SmpError::MissingMergeKey { path: "spec.containers[0]".into(), key: "name".into() }
    );
}

#[test]
fn non_objects_where_objects_are_required_are_errors() {
    assert_eq!(
        apply_patch(&json!("pod"), &json!({}), PatchSchema::Pod).expect_err("should fail"),
        SmpError::NotAnObject { path: "(root)".into(), found: "string" }
    );
    assert_eq!(
        apply_patch(&json!({}), &json!(7), PatchSchema::Pod).expect_err("should fail"),
        SmpError::NotAnObject { path: "(root)".into(), found: "number" }
    );
    assert_eq!(
        pod_apply_err(json!({"spec": {"containers": []}}), json!({"spec": {"containers": ["a"]}})),
        SmpError::NotAnObject { path: "spec.containers[0]".into(), found: "string" }
    );
    assert_eq!(
        pod_apply_err(
            json!({"spec": {"containers": [{"name": "a"}]}}),
            json!({"spec": {"containers": ["a"]}})
        ),
        SmpError::MixedListItems {
            path: "spec.containers".into(),
            first: "object",
            second: "string"
        }
    );
    assert_eq!(
        pod_apply_err(
            json!({"metadata": {"finalizers": ["a"]}}),
            json!({"metadata": {"finalizers": [["b"]]}})
        ),
        SmpError::UnmergeableItem { path: "metadata.finalizers".into(), found: "list" }
    );
    assert_eq!(
        pod_apply_err(
            json!({"metadata": {"finalizers": [{"a": 1}]}}),
            json!({"metadata": {"finalizers": [{"b": 1}]}})
        ),
        SmpError::NoMergeKey { path: "metadata.finalizers".into() }
    );
}

#[test]
fn values_added_whole_lose_nulls_and_directives() {
    let patch = json!({"spec": {
        "containers": [{"name": "a", "image": null, "env": [{"name": "E", "value": null}],
            "$setElementOrder/env": [{"name": "E"}]}],
        "tolerations": [{"key": "k", "value": null}],
        "nodeSelector": {"a": "1", "b": null}
    }});
    assert_eq!(
        pod_apply(json!({"spec": {"tolerations": [{"key": "old"}]}}), patch),
        json!({"spec": {
            "containers": [{"name": "a", "env": [{"name": "E"}]}],
            "tolerations": [{"key": "k"}],
            "nodeSelector": {"a": "1"}
        }})
    );
}

#[test]
fn ports_merge_on_the_container_port_alone() {
    // Kubernetes' strategic merge keys ports on containerPort only: a UDP port with the same
    // number merges into the TCP one.
    let original = json!({"spec": {"containers": [{"name": "dns", "ports": [{"containerPort": 53, "protocol": "TCP"}]}]}});
    let patch = json!({"spec": {"containers": [{"name": "dns", "ports": [{"containerPort": 53, "protocol": "UDP"}]}]}});
    assert_eq!(
        pod_apply(original, patch),
        json!({"spec": {"containers": [{"name": "dns", "ports": [{"containerPort": 53, "protocol": "UDP"}]}]}})
    );
}

#[test]
fn unknown_fields_merge_as_plain_objects_and_their_lists_are_replaced() {
    let original = json!({"spec": {"x-extension": {"a": 1, "list": [{"name": "a"}]}}});
    let patch = json!({"spec": {"x-extension": {"b": 2, "list": [{"name": "b"}]}}});
    assert_eq!(
        pod_apply(original, patch),
        json!({"spec": {"x-extension": {"a": 1, "b": 2, "list": [{"name": "b"}]}}})
    );
}

#[test]
fn pod_template_schemas_find_the_template() {
    let original = json!({
        "metadata": {"finalizers": ["f"]},
        "spec": {
            "selector": {"matchExpressions": [{"key": "a"}]},
            "template": {"metadata": {"labels": {"app": "x"}},
                "spec": {"containers": [{"name": "main", "image": "v1"}, {"name": "side", "image": "s"}]}}
        }
    });
    let modified = json!({
        "metadata": {"finalizers": ["f", "g"]},
        "spec": {
            "selector": {"matchExpressions": [{"key": "b"}]},
            "template": {"metadata": {"labels": {"app": "x"}},
                "spec": {"containers": [{"name": "main", "image": "v2"}, {"name": "side", "image": "s"}]}}
        }
    });
    let patch =
        create_patch(&original, &modified, PatchSchema::WORKLOAD_TEMPLATE).expect("should succeed");
    assert_eq!(
        patch,
        json!({
            "metadata": {"$setElementOrder/finalizers": ["f", "g"], "finalizers": ["g"]},
            "spec": {
                "selector": {"matchExpressions": [{"key": "b"}]},
                "template": {"spec": {
                    "$setElementOrder/containers": [{"name": "main"}, {"name": "side"}],
                    "containers": [{"name": "main", "image": "v2"}]
                }}
            }
        })
    );
    assert_eq!(
        apply_patch(&original, &patch, PatchSchema::WORKLOAD_TEMPLATE).expect("should succeed"),
        modified
    );

    // A bare template.
    let template = &original["spec"]["template"];
    let patch = json!({"spec": {"containers": [{"name": "main", "image": "v3"}]}});
    let patched =
        apply_patch(template, &patch, PatchSchema::PodTemplateSpec).expect("should succeed");
    assert_eq!(patched["spec"]["containers"][0], json!({"name": "main", "image": "v3"}));
    assert_eq!(patched["spec"]["containers"].as_array().map(Vec::len), Some(2));

    // Outside the template, a list under the same field name does not merge.
    let patched = apply_patch(
        &json!({"spec": {"containers": [{"name": "a"}]}}),
        &json!({"spec": {"containers": [{"name": "b"}]}}),
        PatchSchema::WORKLOAD_TEMPLATE,
    )
    .expect("should succeed");
    assert_eq!(patched, json!({"spec": {"containers": [{"name": "b"}]}}));
}

#[test]
fn ephemeral_volume_claim_templates_carry_object_meta() {
    round_trip(
        json!({"spec": {"volumes": [{"name": "v", "ephemeral": {"volumeClaimTemplate": {"metadata": {"finalizers": ["a"]}}}}]}}),
        json!({"spec": {"volumes": [{"name": "v", "ephemeral": {"volumeClaimTemplate": {"metadata": {"finalizers": ["a", "b"]}}}}]}}),
        json!({"spec": {
            "$setElementOrder/volumes": [{"name": "v"}],
            "volumes": [{
                "name": "v",
                "$retainKeys": ["ephemeral", "name"],
                "ephemeral": {"volumeClaimTemplate": {"metadata": {
                    "$setElementOrder/finalizers": ["a", "b"],
                    "finalizers": ["b"]
                }}}
            }]
        }}),
    );
}

#[test]
fn deep_documents_are_rejected_not_overflowed() {
    let mut deep = json!(1);
    for _ in 0..(MAX_DEPTH + 10) {
        deep = json!({ "a": deep });
    }
    let err = apply_patch(&deep, &deep, PatchSchema::Pod).expect_err("should fail");
    assert!(matches!(err, SmpError::TooDeep { limit: MAX_DEPTH, .. }), "{err}");
    let err = create_patch(&deep, &json!({"a": {"a": 2}}), PatchSchema::Pod);
    assert!(err.is_ok(), "a shallow difference does not walk the depth");
    let mut other = json!(2);
    for _ in 0..(MAX_DEPTH + 10) {
        other = json!({ "a": other });
    }
    assert!(matches!(
        create_patch(&deep, &other, PatchSchema::Pod).expect_err("should fail"),
        SmpError::TooDeep { .. }
    ));
}

#[test]
fn paths_render_keys_and_indexes() {
    let root = Path::ROOT;
    let spec = root.key("spec");
    let list = spec.key("containers");
    let item = list.index(2);
    let env = item.key("env");
    assert_eq!(env.render(), "spec.containers[2].env");
    assert_eq!(root.render(), "(root)");
    assert_eq!(root.index(0).render(), "[0]");
}

#[test]
fn service_ports_merge_on_the_port_number() {
    let original = json!({"metadata": {"finalizers": ["a"]}, "spec": {"ports": [
        {"name": "http", "port": 80, "targetPort": 8080},
        {"name": "https", "port": 443, "targetPort": 8443}
    ]}});
    let patch = json!({"spec": {"ports": [{"port": 80, "targetPort": 9090}, {"port": 443, "$patch": "delete"}]}});
    assert_eq!(
        apply_patch(&original, &patch, PatchSchema::Service).expect("applies"),
        json!({"metadata": {"finalizers": ["a"]}, "spec": {"ports": [
            {"name": "http", "port": 80, "targetPort": 9090}
        ]}})
    );
    // Any other object: only its metadata knows merge lists.
    let patch = json!({"metadata": {"finalizers": ["b"]}, "spec": {"ports": [{"port": 1}]}});
    assert_eq!(
        apply_patch(&original, &patch, PatchSchema::Object).expect("applies"),
        json!({"metadata": {"finalizers": ["b", "a"]}, "spec": {"ports": [{"port": 1}]}})
    );
}
