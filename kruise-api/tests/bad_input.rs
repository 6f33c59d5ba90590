//! Bad input is refused with an error that names the kind or the field; never a panic.

use kruise_api::{DecodeError, KruiseObject};
use serde_json::json;

fn refuse(value: serde_json::Value) -> DecodeError {
    KruiseObject::from_value(value).expect_err("must be refused")
}

#[test]
fn unknown_kinds_are_refused_not_guessed() {
    let err = refuse(json!({
        "apiVersion": "apps.kruise.io/v1alpha1", "kind": "ResourceDistributionGenerator",
        "metadata": {"name": "rdname"}
    }));
    assert!(matches!(err, DecodeError::UnknownKind { .. }), "{err:?}");
    assert!(err.to_string().contains("ResourceDistributionGenerator"), "{err}");

    let err =
        refuse(json!({"apiVersion": "apps.kruise.io/v1beta1", "kind": "ClonSet", "spec": {}}));
    assert!(matches!(err, DecodeError::UnknownKind { .. }), "{err:?}");
    assert!(err.to_string().contains("did you mean CloneSet?"), "{err}");

    let err = refuse(json!({"apiVersion": "apps.kruise.io/v1beta1", "kind": "cloneset"}));
    assert!(err.to_string().contains("did you mean CloneSet?"), "{err}");
}

#[test]
fn a_kind_at_a_version_it_is_not_served_at_names_the_versions() {
    let err =
        refuse(json!({"apiVersion": "apps.kruise.io/v1beta1", "kind": "EphemeralJob", "spec": {}}));
    assert!(err.to_string().contains("EphemeralJob is served at apps.kruise.io/v1alpha1"), "{err}");
}

#[test]
fn kruise_rollout_kinds_are_kruise_kinds() {
    let err = refuse(json!({"apiVersion": "rollouts.kruise.io/v1beta1", "kind": "Rolout"}));
    assert!(err.to_string().contains("did you mean Rollout?"), "{err}");
    let err = refuse(
        json!({"apiVersion": "rollouts.kruise.io/v1beta1", "kind": "TrafficRouting", "spec": {}}),
    );
    assert!(
        err.to_string().contains("TrafficRouting is served at rollouts.kruise.io/v1alpha1"),
        "{err}"
    );
    let err = refuse(json!({
        "apiVersion": "rollouts.kruise.io/v1alpha1", "kind": "Rollout",
        "spec": {"strategy": {"canary": {"steps": [{"weight": "five"}]}}}
    }));
    assert_eq!(err.path(), Some("spec.strategy.canary.steps[0].weight"), "{err}");
}

#[test]
fn other_groups_are_not_kruise() {
    let err = refuse(json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"}}));
    assert!(matches!(err, DecodeError::NotKruise { .. }), "{err:?}");
    assert!(err.to_string().contains("v1, Kind=Pod"), "{err}");
}

#[test]
fn wrong_field_types_name_the_field_path() {
    let err = refuse(json!({
        "apiVersion": "apps.kruise.io/v1beta1", "kind": "CloneSet",
        "metadata": {"name": "demo"},
        "spec": {"replicas": "three"}
    }));
    assert_eq!(err.path(), Some("spec.replicas"), "{err}");
    assert!(err.to_string().contains("CloneSet"), "{err}");

    let err = refuse(json!({
        "apiVersion": "apps.kruise.io/v1alpha1", "kind": "BroadcastJob",
        "spec": {"template": {"spec": {"containers": [{"name": "c", "ports": [{"containerPort": "eighty"}]}]}}}
    }));
    assert_eq!(
        err.path(),
        Some("spec.template.spec.containers[0].ports[0].containerPort"),
        "{err}"
    );
}

#[test]
fn malformed_int_or_string_names_the_field() {
    for bad in [json!(true), json!(1.5), json!({"percent": 10}), json!([1])] {
        let err = refuse(json!({
            "apiVersion": "apps.kruise.io/v1beta1", "kind": "CloneSet",
            "spec": {"updateStrategy": {"rollingUpdate": {"partition": bad}}}
        }));
        assert_eq!(err.path(), Some("spec.updateStrategy.rollingUpdate.partition"), "{bad}: {err}");
    }
}

#[test]
fn non_objects_and_missing_type_fields_are_refused() {
    assert!(matches!(refuse(json!([1, 2])), DecodeError::NotAnObject { found: "array" }));
    assert!(matches!(refuse(json!("CloneSet")), DecodeError::NotAnObject { found: "string" }));
    let err = refuse(json!({"kind": "CloneSet"}));
    assert!(err.to_string().contains("apiVersion"), "{err}");
    let err = refuse(json!({"apiVersion": "apps.kruise.io/v1beta1", "kind": 7}));
    assert!(err.to_string().contains("kind"), "{err}");
}

#[test]
fn metadata_of_the_wrong_type_names_metadata() {
    let err = refuse(json!({
        "apiVersion": "apps.kruise.io/v1alpha1", "kind": "ResourceDistribution",
        "metadata": "... ...", "spec": {}
    }));
    assert_eq!(err.path(), Some("metadata"), "{err}");
}

#[test]
fn unknown_enum_values_round_trip_verbatim() {
    let doc = json!({
        "apiVersion": "apps.kruise.io/v1beta1", "kind": "CloneSet",
        "metadata": {"name": "demo"},
        "spec": {"updateStrategy": {"type": "SomeFutureType", "rollingUpdate": {"podUpdatePolicy": "Teleport"}}}
    });
    let object = KruiseObject::from_value(doc.clone()).expect("decode");
    assert_eq!(serde_json::to_value(&object).expect("encode"), doc);
}
