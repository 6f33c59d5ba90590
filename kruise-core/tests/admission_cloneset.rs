//! CloneSet admission: upstream's validation test tables (with the exact messages the API server
//! would return), defaulting (including the pod template defaults revision hashes depend on),
//! deletion protection, and properties over generated CloneSets.

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::{Pod, PodTemplateSpec};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kruise_api::apps::{v1alpha1 as alpha, v1beta1 as beta};
use kruise_core::admission::field::denied_message;
use kruise_core::admission::protection::{
    DeletionForbidden, Dependents, ProtectedKind, ProtectionPolicy, check_deletion,
    protection_policy,
};
use kruise_core::admission::{FieldErrors, pod_defaults};
use kruise_core::cloneset::admission::{
    DefaultingOptions, PodsByName, VALIDATING_WEBHOOK_NAME, default_cloneset_v1alpha1,
    default_cloneset_v1alpha1_update, default_cloneset_v1beta1, default_cloneset_v1beta1_update,
    default_cloneset_v1beta1_with, pods_to_look_up, validate_cloneset_create,
    validate_cloneset_update, validate_cloneset_v1alpha1_create, validate_cloneset_v1alpha1_update,
};
use kruise_core::revision::RevisionData;
use proptest::prelude::*;
use serde_json::{Value, json};

const UID: &str = "5c8a0b2e-0d7f-4a43-9bf6-3d9d3e8b5f11";

// ---- Fixtures (upstream's validation_test.go) ----

fn valid_template(image: &str, pull: &str) -> Value {
    json!({
        "metadata": {"labels": {"a": "b"}},
        "spec": {
            "restartPolicy": "Always",
            "dnsPolicy": "ClusterFirst",
            "containers": [{"name": "abc", "image": image, "imagePullPolicy": pull,
                            "terminationMessagePolicy": "File"}]
        }
    })
}

fn template0() -> Value {
    valid_template("image", "IfNotPresent")
}

fn template1() -> Value {
    valid_template("image1", "IfNotPresent")
}

fn template2() -> Value {
    valid_template("image2", "Always")
}

fn invalid_template() -> Value {
    json!({
        "metadata": {"labels": {"NoUppercaseOrSpecialCharsLike=Equals": "b"}},
        "spec": {"restartPolicy": "Always", "dnsPolicy": "ClusterFirst"}
    })
}

fn volume_claim_template(size: &str) -> Value {
    json!({
        "metadata": {"name": "foo"},
        "spec": {"storageClassName": "foo/bar", "accessModes": ["ReadWriteOnce"],
                 "resources": {"requests": {"storage": size}}}
    })
}

fn strategy(type_: &str, partition: Value, max_unavailable: Value) -> Value {
    json!({"type": type_, "partition": partition, "maxUnavailable": max_unavailable})
}

fn alpha_spec(extra: Value) -> Value {
    let mut spec = json!({
        "replicas": 1,
        "selector": {"matchLabels": {"a": "b"}},
        "template": template0(),
        "updateStrategy": strategy("InPlaceIfPossible", json!(2), json!(1)),
    });
    merge(&mut spec, extra);
    spec
}

fn merge(into: &mut Value, from: Value) {
    match (into, from) {
        (Value::Object(a), Value::Object(b)) => {
            for (k, v) in b {
                if v.is_null() {
                    a.remove(&k);
                } else {
                    a.insert(k, v);
                }
            }
        }
        (into, from) => *into = from,
    }
}

fn alpha_cs(name: &str, resource_version: &str, spec: Value) -> alpha::CloneSet {
    serde_json::from_value(json!({
        "apiVersion": "apps.kruise.io/v1alpha1", "kind": "CloneSet",
        "metadata": {"name": name, "namespace": "default", "uid": UID,
                     "resourceVersion": resource_version},
        "spec": spec
    }))
    .expect("v1alpha1 CloneSet")
}

fn beta_cs(name: &str, spec: Value) -> beta::CloneSet {
    serde_json::from_value(json!({
        "apiVersion": "apps.kruise.io/v1beta1", "kind": "CloneSet",
        "metadata": {"name": name, "namespace": "default", "uid": UID, "resourceVersion": "2"},
        "spec": spec
    }))
    .expect("v1beta1 CloneSet")
}

/// The pod `p0`, controlled by the CloneSet.
fn pods() -> PodsByName {
    let pod: Pod = serde_json::from_value(json!({
        "metadata": {"name": "p0", "namespace": "default",
                     "ownerReferences": [{"apiVersion": "apps.kruise.io/v1alpha1",
                                          "kind": "CloneSet", "name": "cs", "uid": UID,
                                          "controller": true}]}
    }))
    .expect("pod");
    BTreeMap::from([("p0".to_owned(), pod)])
}

fn default_templates(cs: &mut alpha::CloneSet) {
    pod_defaults::default_pod_spec(cs.spec.template.spec.get_or_insert_with(Default::default));
}

fn messages(errs: &FieldErrors) -> Vec<String> {
    errs.messages()
}

// ---- v1alpha1: upstream's success cases ----

#[test]
fn upstream_success_cases_create() {
    let specs = [
        alpha_spec(json!({"scaleStrategy": {"podsToDelete": ["p0"]}})),
        alpha_spec(json!({"updateStrategy": {"type": "InPlaceIfPossible", "partition": 2,
                                             "maxUnavailable": 1, "maxSurge": 1}})),
        alpha_spec(json!({"updateStrategy": {"type": "InPlaceIfPossible", "partition": 2,
                                             "maxUnavailable": 0, "maxSurge": 1}})),
        alpha_spec(
            json!({"updateStrategy": strategy("InPlaceIfPossible", json!(2), json!("120%"))}),
        ),
        alpha_spec(json!({"updateStrategy": {
            "type": "InPlaceIfPossible", "partition": 2, "maxUnavailable": "120%",
            "priorityStrategy": {"weightPriority": [
                {"weight": 20, "matchSelector": {"matchLabels": {"key": "foo"}}}]}}})),
    ];
    for (i, spec) in specs.into_iter().enumerate() {
        let cs = alpha_cs(&format!("cs-{i}"), "2", spec);
        let errs = validate_cloneset_v1alpha1_create(&cs, &pods());
        assert!(errs.is_empty(), "case {i}: {errs}");
    }
}

#[test]
fn upstream_success_cases_update() {
    let cases = [
        // Every field that may change, changed.
        (
            alpha_spec(json!({
                "revisionHistoryLimit": 1, "scaleStrategy": {"podsToDelete": ["p0"]},
                "volumeClaimTemplates": [volume_claim_template("30Gi")],
                "updateStrategy": strategy("InPlaceOnly", json!(2), json!(1))})),
            alpha_spec(json!({
                "replicas": 2, "template": template1(), "revisionHistoryLimit": 2,
                "scaleStrategy": {"podsToDelete": ["p1"]},
                "volumeClaimTemplates": [volume_claim_template("60Gi")],
                "updateStrategy": strategy("ReCreate", json!(2), json!(1))})),
        ),
        // podsToDelete was empty.
        (
            alpha_spec(json!({
                "revisionHistoryLimit": 1, "scaleStrategy": {"podsToDelete": ["p0"]},
                "volumeClaimTemplates": [volume_claim_template("30Gi")],
                "updateStrategy": strategy("InPlaceOnly", json!(2), json!(1))})),
            alpha_spec(json!({
                "replicas": 2, "template": template1(), "revisionHistoryLimit": 2,
                "scaleStrategy": {"podsToDelete": []},
                "updateStrategy": strategy("ReCreate", json!(2), json!(1))})),
        ),
        // progressDeadlineSeconds and minReadySeconds both MaxInt32.
        (
            alpha_spec(json!({"updateStrategy": strategy("InPlaceOnly", json!(2), json!(1)),
                              "progressDeadlineSeconds": i32::MAX, "minReadySeconds": i32::MAX})),
            alpha_spec(json!({"updateStrategy": strategy("ReCreate", json!(2), json!(1)),
                              "progressDeadlineSeconds": 10, "minReadySeconds": 5})),
        ),
    ];
    for (i, (new, old)) in cases.into_iter().enumerate() {
        let mut new = alpha_cs(&format!("cs-{i}"), "2", new);
        let mut old = alpha_cs(&format!("cs-{i}"), "1", old);
        default_templates(&mut new);
        default_templates(&mut old);
        let errs = validate_cloneset_v1alpha1_update(&new, &old, &pods());
        assert!(errs.is_empty(), "case {i}: {errs}");
    }
}

// ---- v1alpha1: upstream's error cases, with the exact messages ----

fn alpha_create_errors(spec: Value) -> Vec<String> {
    messages(&validate_cloneset_v1alpha1_create(&alpha_cs("cs", "2", spec), &pods()))
}

fn alpha_update_errors(new: Value, old: Value) -> Vec<String> {
    let new = alpha_cs("cs", "2", new);
    let old = alpha_cs("cs", "1", old);
    messages(&validate_cloneset_v1alpha1_update(&new, &old, &pods()))
}

#[test]
fn invalid_replicas() {
    assert_eq!(
        alpha_create_errors(alpha_spec(json!({"replicas": -1}))),
        ["spec.replicas: Invalid value: -1: must be greater than or equal to 0"]
    );
}

#[test]
fn invalid_template_is_reported_field_by_field() {
    assert_eq!(
        alpha_create_errors(alpha_spec(json!({"template": invalid_template()}))),
        [
            "spec.template.metadata.labels: Invalid value: map[string]string{\"NoUppercaseOrSpecialCharsLike=Equals\":\"b\"}: `selector` does not match template `labels`",
            "spec.template.labels: Invalid value: \"NoUppercaseOrSpecialCharsLike=Equals\": name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')",
            "spec.template.spec.containers: Required value",
        ]
    );
}

#[test]
fn invalid_selector() {
    assert_eq!(
        alpha_create_errors(alpha_spec(json!({"selector": {"matchLabels": {"a": "b", "c": "d"}}}))),
        [
            "spec.template.metadata.labels: Invalid value: map[string]string{\"a\":\"b\"}: `selector` does not match template `labels`"
        ]
    );
}

#[test]
fn invalid_update_type() {
    assert_eq!(
        alpha_create_errors(alpha_spec(
            json!({"updateStrategy": strategy("", json!(2), json!(1))})
        )),
        [
            "spec.updateStrategy.type: Invalid value: \"\": must be 'ReCreate', InPlaceIfPossible or 'InPlaceOnly'"
        ]
    );
    // Upstream's v1alpha1 webhook refuses OnDelete as well.
    assert_eq!(
        alpha_create_errors(alpha_spec(
            json!({"updateStrategy": strategy("OnDelete", json!(2), json!(1))})
        )),
        [
            "spec.updateStrategy.type: Invalid value: \"OnDelete\": must be 'ReCreate', InPlaceIfPossible or 'InPlaceOnly'"
        ]
    );
}

#[test]
fn invalid_partition() {
    assert_eq!(
        alpha_create_errors(alpha_spec(
            json!({"updateStrategy": strategy("InPlaceIfPossible", json!(-1), json!(1))})
        )),
        ["spec.updateStrategy.partition: Invalid value: -1: must be greater than or equal to 0"]
    );
    assert_eq!(
        alpha_create_errors(alpha_spec(
            json!({"updateStrategy": strategy("InPlaceIfPossible", json!("abc%"), json!(1))})
        )),
        [
            "spec.updateStrategy.partition: Invalid value: \"abc%\": failed GetScaledValueFromIntOrPercent for partition: strconv.ParseFloat: parsing \"abc\": invalid syntax"
        ]
    );
}

#[test]
fn invalid_max_unavailable_and_max_surge() {
    let both = "spec.updateStrategy.maxUnavailable: Invalid value: intstr.IntOrString{Type:0, IntVal:0, StrVal:\"\"}: maxUnavailable and maxSurge should not both be less than 1";
    assert_eq!(
        alpha_create_errors(alpha_spec(
            json!({"updateStrategy": strategy("InPlaceIfPossible", json!(2), json!(0))})
        )),
        [both]
    );
    assert_eq!(
        alpha_create_errors(alpha_spec(json!({"updateStrategy": {
            "type": "InPlaceIfPossible", "partition": 2, "maxUnavailable": 0, "maxSurge": 0}}))),
        [both]
    );
    // A malformed maxSurge is named (upstream's expectField spec.updateStrategy.maxSurge).
    let surge = "spec.updateStrategy.maxSurge: Invalid value: \"5\": failed GetScaledValueFromIntOrPercent for maxSurge: invalid type: string is not a percentage";
    let surge_spec = alpha_spec(json!({"updateStrategy": {
        "type": "ReCreate", "partition": 2, "maxSurge": "5", "maxUnavailable": 2}}));
    assert_eq!(alpha_create_errors(surge_spec.clone()), [surge]);
    let old = alpha_spec(json!({"updateStrategy": {
        "type": "ReCreate", "partition": 2, "maxSurge": 5, "maxUnavailable": 2}}));
    assert_eq!(alpha_update_errors(surge_spec, old), [surge]);
    // And a malformed maxUnavailable.
    let unavailable = "spec.updateStrategy.maxUnavailable: Invalid value: \"5\": failed GetScaledValueFromIntOrPercent for maxUnavailable: invalid type: string is not a percentage";
    let unavailable_spec = alpha_spec(json!({"updateStrategy": {
        "type": "ReCreate", "partition": 2, "maxSurge": 2, "maxUnavailable": "5"}}));
    assert_eq!(alpha_create_errors(unavailable_spec.clone()), [unavailable]);
    let old =
        alpha_spec(json!({"updateStrategy": {"type": "ReCreate", "partition": 2, "maxSurge": 5}}));
    assert_eq!(alpha_update_errors(unavailable_spec, old), [unavailable]);
}

#[test]
fn max_surge_with_in_place_only() {
    assert_eq!(
        alpha_create_errors(alpha_spec(json!({"updateStrategy": {
            "type": "InPlaceOnly", "partition": 0, "maxSurge": "50%", "maxUnavailable": 1}}))),
        [
            "spec.updateStrategy.maxSurge: Invalid value: \"50%\": can not use maxSurge with strategy type InPlaceOnly"
        ]
    );
}

#[test]
fn invalid_pods_to_delete() {
    assert_eq!(
        alpha_create_errors(alpha_spec(json!({"scaleStrategy": {"podsToDelete": ["p0", "p0"]}}))),
        [
            "spec.scaleStrategy.podsToDelete: Invalid value: []string{\"p0\", \"p0\"}: duplicated items [p0]"
        ]
    );
    let missing = "spec.scaleStrategy.podsToDelete: Invalid value: \"p1\": find pod p1 failed: pods \"p1\" not found";
    assert_eq!(
        alpha_create_errors(alpha_spec(json!({"scaleStrategy": {"podsToDelete": ["p0", "p1"]}}))),
        [missing]
    );
    assert_eq!(
        alpha_create_errors(alpha_spec(json!({"scaleStrategy": {"podsToDelete": ["p1"]}}))),
        [missing]
    );
}

#[test]
fn pods_to_delete_must_be_live_pods_of_this_cloneset() {
    let mut found = pods();
    let mut other: Pod = found["p0"].clone();
    if let Some(refs) = &mut other.metadata.owner_references {
        refs[0].uid = "someone-else".into();
    }
    found.insert("p2".into(), other);
    let mut terminating: Pod = found["p0"].clone();
    terminating.metadata.deletion_timestamp =
        Some(k8s_openapi::apimachinery::pkg::apis::meta::v1::Time(
            "2024-01-01T00:00:00Z".parse().expect("time"),
        ));
    found.insert("p3".into(), terminating);
    let cs = alpha_cs(
        "cs",
        "2",
        alpha_spec(json!({"scaleStrategy": {"podsToDelete": ["p3", "p2", "p0"]}})),
    );
    assert_eq!(pods_to_look_up(&cs, None), ["p0", "p2", "p3"]);
    assert_eq!(
        messages(&validate_cloneset_v1alpha1_create(&cs, &found)),
        [
            "spec.scaleStrategy.podsToDelete: Invalid value: \"p2\": find pod p2 owner is not this CloneSet",
            "spec.scaleStrategy.podsToDelete: Invalid value: \"p3\": find pod p3 already terminating",
        ]
    );
    // On update, only names the old object did not list are looked up.
    let old =
        alpha_cs("cs", "1", alpha_spec(json!({"scaleStrategy": {"podsToDelete": ["p2", "p3"]}})));
    assert_eq!(pods_to_look_up(&cs, Some(&old)), ["p0"]);
    assert!(validate_cloneset_v1alpha1_update(&cs, &old, &found).is_empty());
}

#[test]
fn in_place_only_updates_may_change_images_only() {
    let new = alpha_spec(json!({"updateStrategy": strategy("InPlaceOnly", json!(2), json!(1))}));
    let old = alpha_spec(json!({"template": template2(),
                                "updateStrategy": strategy("InPlaceOnly", json!(2), json!(1))}));
    assert_eq!(
        alpha_update_errors(new.clone(), old),
        [
            "spec: Forbidden: only allowed to update images in spec for InPlaceOnly, but found replace /containers/0/imagePullPolicy"
        ]
    );
    let only_image = alpha_spec(json!({"template": template1(),
                                       "updateStrategy": strategy("InPlaceOnly", json!(2), json!(1))}));
    assert_eq!(alpha_update_errors(new, only_image), Vec::<String>::new());
}

#[test]
fn progress_deadline_seconds() {
    assert_eq!(
        alpha_create_errors(alpha_spec(json!({
            "updateStrategy": strategy("InPlaceOnly", json!(2), json!(1)),
            "progressDeadlineSeconds": -1}))),
        [
            "spec.progressDeadlineSeconds: Invalid value: -1: must be greater than or equal to 0",
            "spec.progressDeadlineSeconds: Invalid value: -1: must be greater than minReadySeconds",
        ]
    );
    let old = alpha_spec(json!({"updateStrategy": strategy("ReCreate", json!(2), json!(1)),
                                "progressDeadlineSeconds": 10, "minReadySeconds": 5}));
    for min_ready in [10, 15] {
        assert_eq!(
            alpha_update_errors(
                alpha_spec(json!({"updateStrategy": strategy("InPlaceOnly", json!(2), json!(1)),
                                  "progressDeadlineSeconds": 10, "minReadySeconds": min_ready})),
                old.clone()
            ),
            [
                "spec.progressDeadlineSeconds: Invalid value: 10: must be greater than minReadySeconds"
            ]
        );
    }
}

#[test]
fn disallowed_field_modification() {
    let new =
        alpha_spec(json!({"revisionHistoryLimit": 1, "scaleStrategy": {"podsToDelete": ["p0"]},
                                "updateStrategy": strategy("InPlaceOnly", json!(2), json!(1))}));
    let old = alpha_spec(json!({"replicas": 2, "selector": {"matchLabels": {"app": "webserver"}},
                                "template": template1(), "revisionHistoryLimit": 2,
                                "scaleStrategy": {"podsToDelete": []},
                                "updateStrategy": strategy("ReCreate", json!(2), json!(1))}));
    let errs = alpha_update_errors(new, old);
    assert_eq!(
        errs,
        [
            "spec: Forbidden: updates to cloneset spec for fields other than 'replicas', 'template', 'lifecycle', 'scaleStrategy', 'updateStrategy', 'minReadySeconds', 'progressDeadlineSeconds', 'volumeClaimTemplates' and 'revisionHistoryLimit' are forbidden"
        ]
    );
}

#[test]
fn metadata_is_validated_on_create_and_update() {
    let cs = alpha_cs("Bad_Name", "2", alpha_spec(json!({})));
    assert_eq!(
        messages(&validate_cloneset_v1alpha1_create(&cs, &pods())),
        [
            "metadata.name: Invalid value: \"Bad_Name\": a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')"
        ]
    );
    let old = alpha_cs("cs", "1", alpha_spec(json!({})));
    let mut new = alpha_cs("cs2", "", alpha_spec(json!({})));
    new.metadata.resource_version = None;
    assert_eq!(
        messages(&validate_cloneset_v1alpha1_update(&new, &old, &pods())),
        [
            "metadata.resourceVersion: Invalid value: \"\": must be specified for an update",
            "metadata.name: Invalid value: \"cs2\": field is immutable",
        ]
    );
}

#[test]
fn the_api_server_wraps_the_aggregate() {
    let errs = validate_cloneset_v1alpha1_create(
        &alpha_cs("cs", "2", alpha_spec(json!({"replicas": -1, "template": invalid_template()}))),
        &pods(),
    );
    let text = denied_message(VALIDATING_WEBHOOK_NAME, &errs.to_string());
    assert!(
        text.starts_with("admission webhook \"vcloneset.kb.io\" denied the request: [spec.replicas: Invalid value: -1: must be greater than or equal to 0, spec.template.metadata.labels: "),
        "{text}"
    );
    assert!(text.ends_with(", spec.template.spec.containers: Required value]"), "{text}");
}

// ---- v1beta1 ----

fn beta_spec(rolling: Value) -> Value {
    json!({
        "replicas": 3,
        "selector": {"matchLabels": {"a": "b"}},
        "template": template0(),
        "updateStrategy": {"type": "RollingUpdate", "rollingUpdate": rolling},
    })
}

fn beta_errors(spec: Value) -> Vec<String> {
    messages(&validate_cloneset_create(&beta_cs("cs", spec)))
}

#[test]
fn v1beta1_valid_and_defaulted_is_clean() {
    // The template mounts `www-data`, which only the volume claim template provides.
    let mut cs = beta_cs(
        "cs",
        json!({"selector": {"matchLabels": {"app": "nginx"}},
                                      "template": raw_nginx_template("nginx:1.25")}),
    );
    default_cloneset_v1beta1(&mut cs);
    assert_eq!(
        messages(&validate_cloneset_create(&cs)),
        ["spec.template.spec.containers[0].volumeMounts[0].name: Not found: \"www-data\""]
    );
    cs.spec.volume_claim_templates =
        serde_json::from_value(json!([volume_claim_template("1Gi")])).expect("claims");
    cs.spec.volume_claim_templates[0].metadata.name = Some("www-data".into());
    default_cloneset_v1beta1(&mut cs);
    assert!(validate_cloneset_create(&cs).is_empty(), "{}", validate_cloneset_create(&cs));
    let old = cs.clone();
    cs.spec.replicas = Some(5);
    assert!(validate_cloneset_update(&cs, &old).is_empty());
}

#[test]
fn v1beta1_image_pre_download_parallelism() {
    let path =
        "spec.updateStrategy.rollingUpdate.inPlaceUpdateStrategy.imagePreDownloadParallelism";
    let cases: [(Value, Option<String>); 9] = [
        (json!(2), None),
        (json!(0), None),
        (
            json!(-1),
            Some(format!(
                "{path}: Invalid value: -1: imagePreDownloadParallelism must be non-negative"
            )),
        ),
        (
            json!("50%"),
            Some(format!(
                "{path}: Invalid value: \"50%\": imagePreDownloadParallelism does not support percentage value"
            )),
        ),
        (json!("50"), None),
        (json!("0"), None),
        (
            json!("-1"),
            Some(format!(
                "{path}: Invalid value: \"-1\": imagePreDownloadParallelism must be non-negative"
            )),
        ),
        (
            json!("abc"),
            Some(format!(
                "{path}: Invalid value: \"abc\": imagePreDownloadParallelism must be a valid integer: strconv.ParseInt: parsing \"abc\": invalid syntax"
            )),
        ),
        (Value::Null, None),
    ];
    for (parallelism, expected) in cases {
        let mut in_place = json!({});
        if !parallelism.is_null() {
            in_place = json!({"imagePreDownloadParallelism": parallelism});
        }
        let spec = beta_spec(json!({"podUpdatePolicy": "InPlaceIfPossible", "maxUnavailable": 1,
                                    "partition": 0, "inPlaceUpdateStrategy": in_place}));
        let errs = beta_errors(spec);
        assert_eq!(errs, expected.into_iter().collect::<Vec<_>>(), "parallelism {parallelism}");
    }
    let spec = beta_spec(json!({"maxUnavailable": 1, "partition": 0,
                                "inPlaceUpdateStrategy": {"imagePreDownloadTimeoutSeconds": -5,
                                                          "imagePreDownloadMinUpdatedReadyPods": -1}}));
    assert_eq!(
        beta_errors(spec),
        [
            "spec.updateStrategy.rollingUpdate.inPlaceUpdateStrategy.imagePreDownloadTimeoutSeconds: Invalid value: -5: must be greater than or equal to 0",
            "spec.updateStrategy.rollingUpdate.inPlaceUpdateStrategy.imagePreDownloadMinUpdatedReadyPods: Invalid value: -1: must be greater than or equal to 0",
        ]
    );
}

#[test]
fn v1beta1_strategy_rules() {
    let mut spec = beta_spec(json!({"maxUnavailable": 1, "partition": 0}));
    spec["updateStrategy"]["type"] = json!("Sometimes");
    assert_eq!(
        beta_errors(spec),
        [
            "spec.updateStrategy.type: Invalid value: \"Sometimes\": must be 'RollingUpdate' or 'OnDelete'"
        ]
    );
    assert_eq!(
        beta_errors(beta_spec(
            json!({"maxUnavailable": 1, "partition": 0, "podUpdatePolicy": "Whatever"})
        )),
        [
            "spec.updateStrategy.rollingUpdate.podUpdatePolicy: Invalid value: \"Whatever\": must be 'ReCreate', 'InPlaceIfPossible' or 'InPlaceOnly'"
        ]
    );
    assert_eq!(
        beta_errors(beta_spec(json!({"maxUnavailable": 1, "partition": "120%", "maxSurge": 1,
                                     "podUpdatePolicy": "InPlaceOnly"}))),
        [
            "spec.updateStrategy.rollingUpdate.maxSurge: Invalid value: \"1\": can not use maxSurge with podUpdatePolicy InPlaceOnly"
        ]
    );
    // Upstream's v1beta1 check ignores maxSurge (a shadowed variable) and refuses surge-only
    // rollouts; we accept them, and still refuse both below one.
    assert!(
        beta_errors(beta_spec(json!({"maxUnavailable": 0, "maxSurge": 1, "partition": 0})))
            .is_empty()
    );
    assert_eq!(
        beta_errors(beta_spec(json!({"maxUnavailable": 0, "maxSurge": 0, "partition": 0}))),
        [
            "spec.updateStrategy.rollingUpdate.maxUnavailable: Invalid value: intstr.IntOrString{Type:0, IntVal:0, StrVal:\"\"}: maxUnavailable and maxSurge should not both be less than 1"
        ]
    );
    assert_eq!(
        beta_errors(beta_spec(json!({"maxUnavailable": 1, "partition": 0,
                                     "priorityStrategy": {"weightPriority": [{"weight": 101, "matchSelector": {"matchLabels": {"a": "b"}}}]},
                                     "scatterStrategy": [{"key": "", "value": "x"}]}))),
        [
            "spec.updateStrategy.rollingUpdate.priorityStrategy: Required value: weight must be valid number in the range 1-100",
            "spec.updateStrategy.rollingUpdate.scatterStrategy: Required value: key should not be empty",
        ]
    );
    // OnDelete without rollingUpdate needs nothing else.
    let mut on_delete = beta_spec(Value::Null);
    on_delete["updateStrategy"] = json!({"type": "OnDelete"});
    assert_eq!(beta_errors(on_delete), Vec::<String>::new());
}

#[test]
fn v1beta1_selector_and_template_rules() {
    let rolling = json!({"maxUnavailable": 1, "partition": 0});
    let mut spec = beta_spec(rolling.clone());
    spec["selector"] = json!({});
    assert_eq!(
        beta_errors(spec),
        [
            "spec.selector: Invalid value: v1.LabelSelector{MatchLabels:map[string]string(nil), MatchExpressions:[]v1.LabelSelectorRequirement(nil)}: empty selector is invalid for cloneset"
        ]
    );
    let mut spec = beta_spec(rolling.clone());
    spec.as_object_mut().expect("object").remove("selector");
    assert_eq!(
        beta_errors(spec),
        [
            "spec.selector: Required value",
            "spec.template.metadata.labels: Invalid value: map[string]string{\"a\":\"b\"}: `selector` does not match template `labels`",
        ]
    );
    let mut spec = beta_spec(rolling.clone());
    spec["selector"] = json!({"matchExpressions": [{"key": "a", "operator": "Like"}]});
    assert_eq!(
        beta_errors(spec),
        [
            "spec.selector.matchExpressions[0].operator: Invalid value: \"Like\": not a valid selector operator",
            "spec.selector: Invalid value: v1.LabelSelector{MatchLabels:map[string]string(nil), MatchExpressions:[]v1.LabelSelectorRequirement{v1.LabelSelectorRequirement{Key:\"a\", Operator:\"Like\", Values:[]string(nil)}}}",
        ]
    );
    let mut spec = beta_spec(rolling.clone());
    spec["template"]["spec"]["restartPolicy"] = json!("OnFailure");
    spec["template"]["spec"]["activeDeadlineSeconds"] = json!(10);
    assert_eq!(
        beta_errors(spec),
        [
            "spec.template.spec.restartPolicy: Unsupported value: \"OnFailure\": supported values: \"Always\"",
            "spec.template.spec.activeDeadlineSeconds: Forbidden: activeDeadlineSeconds in cloneset is not Supported",
        ]
    );
    let mut spec = beta_spec(rolling.clone());
    spec["volumeClaimTemplates"] = json!([{"metadata": {"name": "abc"}}]);
    spec["template"]["spec"]["volumes"] = json!([{"name": "abc", "emptyDir": {}}]);
    assert_eq!(beta_errors(spec), ["spec.template.spec.volumes[1].name: Duplicate value: \"abc\""]);
    let mut spec = beta_spec(rolling);
    spec["scaleStrategy"] = json!({"podsToDelete": ["x", "y", "x", "x"]});
    assert_eq!(
        beta_errors(spec),
        [
            "spec.scaleStrategy.podsToDelete: Invalid value: []string{\"x\", \"y\", \"x\", \"x\"}: duplicated items [x x]"
        ]
    );
}

#[test]
fn v1beta1_selector_is_immutable() {
    let old = beta_cs("cs", beta_spec(json!({"maxUnavailable": 1, "partition": 0})));
    let mut new = old.clone();
    new.spec.replicas = Some(10);
    assert!(validate_cloneset_update(&new, &old).is_empty());
    // nil and empty maps compare equal, as Kubernetes' semantic equality has it.
    let mut same = old.clone();
    if let Some(sel) = &mut same.spec.selector {
        sel.match_expressions = Some(vec![]);
    }
    assert!(validate_cloneset_update(&same, &old).is_empty());
    let mut changed = old.clone();
    changed.spec.selector =
        serde_json::from_value(json!({"matchLabels": {"a": "b", "z": "y"}})).ok();
    let errs = messages(&validate_cloneset_update(&changed, &old));
    assert_eq!(errs.len(), 2, "{errs:?}");
    assert!(errs[0].starts_with("spec: Forbidden: updates to cloneset spec for fields other than"));
}

// ---- Defaulting ----

fn raw_nginx_template(image: &str) -> Value {
    json!({
        "metadata": {"labels": {"app": "nginx"}},
        "spec": {"containers": [{
            "image": image,
            "name": "nginx",
            "env": [{"name": "version", "value": "v1"}],
            "volumeMounts": [{"name": "www-data", "mountPath": "/usr/share/nginx/html"}]
        }]}
    })
}

/// The template as kruise's defaulting webhook leaves it (kruise-core's revision fixture).
fn defaulted_nginx_template(image: &str) -> Value {
    json!({
        "metadata": {"labels": {"app": "nginx"}},
        "spec": {
            "containers": [{
                "name": "nginx",
                "image": image,
                "env": [{"name": "version", "value": "v1"}],
                "imagePullPolicy": "Always",
                "terminationMessagePath": "/dev/termination-log",
                "terminationMessagePolicy": "File",
                "volumeMounts": [{"name": "www-data", "mountPath": "/usr/share/nginx/html"}]
            }],
            "dnsPolicy": "ClusterFirst",
            "restartPolicy": "Always",
            "schedulerName": "default-scheduler",
            "securityContext": {},
            "terminationGracePeriodSeconds": 30
        }
    })
}

#[test]
fn template_defaults_match_the_revision_fixture() {
    for image in ["nginx:stable-alpine", "nginx:mainline"] {
        let mut cs = beta_cs("cs", json!({"template": raw_nginx_template(image)}));
        default_cloneset_v1beta1(&mut cs);
        let got = serde_json::to_value(&cs.spec.template).expect("encode");
        assert_eq!(got, defaulted_nginx_template(image));
        let want: PodTemplateSpec =
            serde_json::from_value(defaulted_nginx_template(image)).expect("fixture");
        let hash = |t: &PodTemplateSpec| RevisionData::from_template(t).expect("data").hash(None);
        assert_eq!(hash(&cs.spec.template), hash(&want));
    }
    let mut cs =
        alpha_cs("cs", "1", json!({"template": raw_nginx_template("nginx:stable-alpine")}));
    default_cloneset_v1alpha1(&mut cs);
    assert_eq!(
        serde_json::to_value(&cs.spec.template).expect("encode"),
        defaulted_nginx_template("nginx:stable-alpine")
    );
}

#[test]
fn pod_template_defaults_in_detail() {
    let mut cs = beta_cs(
        "cs",
        json!({
            "template": {"spec": {
                "initContainers": [{"name": "init", "image": "busybox"},
                                   {"name": "init2", "image": "busybox:1.36"}],
                "containers": [{
                    "name": "c", "image": "app:v1",
                    "ports": [{"containerPort": 80}],
                    "env": [{"name": "POD", "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}}],
                    "resources": {"limits": {"cpu": "0.0001", "memory": "0.5Gi"}},
                    "livenessProbe": {"httpGet": {"port": 80}},
                    "readinessProbe": {"tcpSocket": {"port": 80}, "periodSeconds": 3},
                    "lifecycle": {"preStop": {"httpGet": {"port": 8080}}}
                }],
                "volumes": [{"name": "empty"}, {"name": "s", "secret": {"secretName": "x"}},
                            {"name": "h", "hostPath": {"path": "/x"}},
                            {"name": "p", "projected": {"sources": [{"serviceAccountToken": {"path": "t"}}]}}]
            }},
            "volumeClaimTemplates": [{"metadata": {"name": "data"},
                                      "spec": {"resources": {"requests": {"storage": "1.5Gi"}}}}]
        }),
    );
    default_cloneset_v1beta1(&mut cs);
    let spec = serde_json::to_value(&cs.spec).expect("encode");
    let t = &spec["template"]["spec"];
    assert_eq!(t["initContainers"][0]["imagePullPolicy"], "Always");
    assert_eq!(t["initContainers"][1]["imagePullPolicy"], "IfNotPresent");
    let c = &t["containers"][0];
    assert_eq!(c["imagePullPolicy"], "Always");
    assert_eq!(c["ports"][0]["protocol"], "TCP");
    assert_eq!(c["env"][0]["valueFrom"]["fieldRef"]["apiVersion"], "v1");
    assert_eq!(c["resources"]["limits"], json!({"cpu": "1m", "memory": "512Mi"}));
    assert_eq!(
        c["livenessProbe"],
        json!({"httpGet": {"port": 80, "path": "/", "scheme": "HTTP"}, "timeoutSeconds": 1,
               "periodSeconds": 10, "successThreshold": 1, "failureThreshold": 3})
    );
    assert_eq!(c["readinessProbe"]["periodSeconds"], 3);
    assert_eq!(c["lifecycle"]["preStop"]["httpGet"]["path"], "/");
    assert_eq!(t["volumes"][0], json!({"name": "empty", "emptyDir": {}}));
    assert_eq!(t["volumes"][1]["secret"]["defaultMode"], 420);
    assert_eq!(t["volumes"][2]["hostPath"]["type"], "");
    assert_eq!(t["volumes"][3]["projected"]["defaultMode"], 420);
    assert_eq!(
        t["volumes"][3]["projected"]["sources"][0]["serviceAccountToken"]["expirationSeconds"],
        3600
    );
    let claim = &spec["volumeClaimTemplates"][0];
    assert_eq!(claim["status"], json!({"phase": "Pending"}));
    assert_eq!(claim["spec"]["resources"]["requests"]["storage"], "1536Mi");
}

#[test]
fn strategy_defaults_per_version() {
    let mut a = alpha_cs("cs", "1", json!({}));
    default_cloneset_v1alpha1(&mut a);
    let spec = serde_json::to_value(&a.spec).expect("encode");
    assert_eq!(spec["replicas"], 1);
    assert_eq!(spec["revisionHistoryLimit"], 10);
    assert_eq!(
        spec["updateStrategy"],
        json!({"type": "ReCreate", "partition": 0, "maxUnavailable": "20%", "maxSurge": 0})
    );
    let mut a = alpha_cs("cs", "1", json!({"updateStrategy": {"type": "InPlaceIfPossible"}}));
    default_cloneset_v1alpha1(&mut a);
    assert!(a.spec.update_strategy.in_place_update_strategy.is_some());

    let mut b = beta_cs("cs", json!({}));
    default_cloneset_v1beta1(&mut b);
    let spec = serde_json::to_value(&b.spec).expect("encode");
    assert_eq!(
        spec["updateStrategy"],
        json!({"type": "RollingUpdate", "rollingUpdate": {"partition": 0, "maxUnavailable": "20%",
               "maxSurge": 0, "podUpdatePolicy": "ReCreate"}})
    );
    let mut b = beta_cs(
        "cs",
        json!({"updateStrategy": {"rollingUpdate": {"podUpdatePolicy": "InPlaceOnly"}}}),
    );
    default_cloneset_v1beta1(&mut b);
    let rolling = b.spec.update_strategy.rolling_update.clone().expect("rolling");
    assert!(rolling.in_place_update_strategy.is_some());
    let mut b = beta_cs("cs", json!({"updateStrategy": {"type": "OnDelete"}}));
    default_cloneset_v1beta1(&mut b);
    assert!(b.spec.update_strategy.rolling_update.is_none());
}

#[test]
fn template_defaults_on_update_only_when_the_template_changed() {
    let old = beta_cs("cs", json!({"template": raw_nginx_template("nginx:1")}));
    let mut same = old.clone();
    default_cloneset_v1beta1_update(&mut same, &old);
    assert_eq!(same.spec.template, old.spec.template, "unchanged template is left alone");
    assert_eq!(same.spec.replicas, Some(1), "the rest is still defaulted");
    let mut changed = beta_cs("cs", json!({"template": raw_nginx_template("nginx:2")}));
    default_cloneset_v1beta1_update(&mut changed, &old);
    assert_eq!(
        serde_json::to_value(&changed.spec.template).expect("encode"),
        defaulted_nginx_template("nginx:2")
    );
    let mut no_defaults = beta_cs("cs", json!({"template": raw_nginx_template("nginx:2")}));
    default_cloneset_v1beta1_with(
        &mut no_defaults,
        DefaultingOptions::default().with_template_defaults(false),
    );
    assert_eq!(no_defaults.spec.template, old_template("nginx:2"));
    let old_a = alpha_cs("cs", "1", json!({"template": raw_nginx_template("nginx:1")}));
    let mut same_a = old_a.clone();
    default_cloneset_v1alpha1_update(&mut same_a, &old_a);
    assert_eq!(same_a.spec.template, old_a.spec.template);
}

fn old_template(image: &str) -> PodTemplateSpec {
    serde_json::from_value(raw_nginx_template(image)).expect("template")
}

// ---- Deletion protection ----

fn meta(label: Option<&str>) -> ObjectMeta {
    let mut m = ObjectMeta { name: Some("x".into()), ..Default::default() };
    if let Some(value) = label {
        m.labels = Some(BTreeMap::from([(
            "policy.kruise.io/delete-protection".to_owned(),
            value.to_owned(),
        )]));
    }
    m
}

const WORKLOADS: [ProtectedKind; 6] = [
    ProtectedKind::Deployment,
    ProtectedKind::ReplicaSet,
    ProtectedKind::StatefulSet,
    ProtectedKind::CloneSet,
    ProtectedKind::AdvancedStatefulSet,
    ProtectedKind::UnitedDeployment,
];

#[test]
fn always_forbids_every_protected_kind() {
    let kinds = WORKLOADS.iter().copied().chain([
        ProtectedKind::Namespace,
        ProtectedKind::CustomResourceDefinition,
        ProtectedKind::Service,
        ProtectedKind::Ingress,
    ]);
    for kind in kinds {
        let err = check_deletion(kind, &meta(Some("Always")), &Dependents::default())
            .expect_err("Always forbids");
        assert_eq!(
            err.to_string(),
            "forbidden by ResourcesProtectionDeletion for policy.kruise.io/delete-protection=Always",
            "{kind}"
        );
    }
}

#[test]
fn cascading_workloads_depend_on_replicas() {
    for kind in WORKLOADS {
        let with = |replicas| Dependents { replicas, ..Default::default() };
        assert_eq!(
            check_deletion(kind, &meta(Some("Cascading")), &with(Some(3))).map_err(|e| e.to_string()),
            Err("forbidden by ResourcesProtectionDeletion for policy.kruise.io/delete-protection=Cascading and replicas 3>0".to_owned())
        );
        assert_eq!(check_deletion(kind, &meta(Some("Cascading")), &with(Some(0))), Ok(()));
        assert_eq!(check_deletion(kind, &meta(Some("Cascading")), &with(None)), Ok(()));
    }
}

#[test]
fn cascading_namespaces_and_crds() {
    let ns = |pods, pvcs| Dependents { active_pods: pods, bound_pvcs: pvcs, ..Default::default() };
    let cascading = meta(Some("Cascading"));
    assert_eq!(
        check_deletion(ProtectedKind::Namespace, &cascading, &ns(2, 1)),
        Err(DeletionForbidden::ActivePods { count: 2 })
    );
    assert_eq!(
        check_deletion(ProtectedKind::Namespace, &cascading, &ns(0, 1)).map_err(|e| e.to_string()),
        Err("forbidden by ResourcesProtectionDeletion for policy.kruise.io/delete-protection=Cascading and \"Bound\" status pvc 1>0".to_owned())
    );
    assert_eq!(check_deletion(ProtectedKind::Namespace, &cascading, &ns(0, 0)), Ok(()));
    let crd = |count, gate| Dependents {
        active_custom_resources: count,
        crd_cascading_enabled: gate,
        ..Default::default()
    };
    assert_eq!(
        check_deletion(ProtectedKind::CustomResourceDefinition, &cascading, &crd(0, false))
            .map_err(|e| e.to_string()),
        Err("feature-gate DeletionProtectionForCRDCascadingGate is not enabled".to_owned())
    );
    assert_eq!(
        check_deletion(ProtectedKind::CustomResourceDefinition, &cascading, &crd(4, true))
            .map_err(|e| e.to_string()),
        Err("forbidden by ResourcesProtectionDeletion for policy.kruise.io/delete-protection=Cascading and active CRs 4>0".to_owned())
    );
    assert_eq!(
        check_deletion(ProtectedKind::CustomResourceDefinition, &cascading, &crd(0, true)),
        Ok(())
    );
    // Services and Ingresses ignore Cascading.
    let busy = Dependents { replicas: Some(5), active_pods: 5, ..Default::default() };
    assert_eq!(check_deletion(ProtectedKind::Service, &cascading, &busy), Ok(()));
    assert_eq!(check_deletion(ProtectedKind::Ingress, &cascading, &busy), Ok(()));
}

#[test]
fn unprotected_or_already_deleting_objects_may_go() {
    let busy = Dependents { replicas: Some(5), ..Default::default() };
    assert_eq!(check_deletion(ProtectedKind::CloneSet, &meta(None), &busy), Ok(()));
    assert_eq!(check_deletion(ProtectedKind::CloneSet, &meta(Some("always")), &busy), Ok(()));
    assert_eq!(check_deletion(ProtectedKind::CloneSet, &meta(Some("")), &busy), Ok(()));
    let mut deleting = meta(Some("Always"));
    deleting.deletion_timestamp = Some(k8s_openapi::apimachinery::pkg::apis::meta::v1::Time(
        "2024-01-01T00:00:00Z".parse().expect("time"),
    ));
    assert_eq!(check_deletion(ProtectedKind::CloneSet, &deleting, &busy), Ok(()));
    assert_eq!(
        protection_policy(meta(Some("Cascading")).labels.as_ref()),
        Some(ProtectionPolicy::Cascading)
    );
    assert_eq!(protection_policy(None), None);
}

#[test]
fn protected_kinds_by_group_and_kind() {
    assert_eq!(
        ProtectedKind::from_group_kind("apps.kruise.io", "CloneSet"),
        Some(ProtectedKind::CloneSet)
    );
    assert_eq!(
        ProtectedKind::from_group_kind("apps.kruise.io", "StatefulSet"),
        Some(ProtectedKind::AdvancedStatefulSet)
    );
    assert_eq!(
        ProtectedKind::from_group_kind("apps", "StatefulSet"),
        Some(ProtectedKind::StatefulSet)
    );
    assert_eq!(ProtectedKind::from_group_kind("", "Namespace"), Some(ProtectedKind::Namespace));
    assert_eq!(
        ProtectedKind::from_group_kind("apiextensions.k8s.io", "CustomResourceDefinition"),
        Some(ProtectedKind::CustomResourceDefinition)
    );
    assert_eq!(ProtectedKind::from_group_kind("apps", "DaemonSet"), None);
    assert!(ProtectedKind::CloneSet.is_workload() && ProtectedKind::CloneSet.supports_cascading());
    assert!(!ProtectedKind::Service.supports_cascading());
}

// ---- Properties ----

fn int_or_string() -> impl Strategy<Value = Value> {
    prop_oneof![
        (-5i32..200).prop_map(|n| json!(n)),
        prop::sample::select(vec![
            "0%", "20%", "50%", "100%", "120%", "12.5%", "-5%", "abc%", "5", "", "%", "NaN%",
            "inf%", "1e400%", "0x10%"
        ])
        .prop_map(|s| json!(s)),
    ]
}

fn name() -> impl Strategy<Value = String> {
    prop_oneof![
        4 => "[a-z][a-z0-9-]{0,8}[a-z0-9]",
        1 => "\\PC{0,10}",
    ]
}

fn labels() -> impl Strategy<Value = BTreeMap<String, String>> {
    prop::collection::btree_map("[a-z]{1,3}", "[a-z0-9]{0,3}", 0..3)
}

fn quantity() -> impl Strategy<Value = String> {
    prop::sample::select(vec!["1", "500m", "0.5Gi", "-1", "1.5", "100u", "2Ki", "1e3", "bogus"])
        .prop_map(str::to_owned)
}

fn container() -> impl Strategy<Value = Value> {
    (
        name(),
        prop::option::of("[a-z]{1,6}(:[a-z0-9.]{1,5})?"),
        prop::collection::vec((-2i32..70000, prop::option::of(prop::sample::select(vec!["TCP", "UDP", "FOO"]))), 0..3),
        prop::option::of(prop::sample::select(vec!["Always", "Never", "IfNotPresent", "Sometimes"])),
        prop::collection::vec((name(), prop::option::of("[a-z]{0,4}")), 0..3),
        prop::option::of((quantity(), quantity())),
        prop::option::of((-3i32..3, prop::option::of(-1i32..70000))),
        prop::collection::vec(("[a-z]{1,4}", "/[a-z]{0,4}"), 0..2),
    )
        .prop_map(|(name, image, ports, pull, env, resources, probe, mounts)| {
            let mut c = json!({"name": name});
            if let Some(image) = image {
                c["image"] = json!(image);
            }
            c["ports"] = Value::Array(
                ports
                    .into_iter()
                    .map(|(p, proto)| match proto {
                        Some(proto) => json!({"containerPort": p, "protocol": proto}),
                        None => json!({"containerPort": p}),
                    })
                    .collect(),
            );
            if let Some(pull) = pull {
                c["imagePullPolicy"] = json!(pull);
            }
            c["env"] = Value::Array(
                env.into_iter()
                    .map(|(n, v)| match v {
                        Some(v) => json!({"name": n, "value": v}),
                        None => json!({"name": n, "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}}),
                    })
                    .collect(),
            );
            if let Some((limit, request)) = resources {
                c["resources"] = json!({"limits": {"cpu": limit}, "requests": {"cpu": request}});
            }
            if let Some((threshold, port)) = probe {
                let handler = match port {
                    Some(port) => json!({"httpGet": {"port": port}}),
                    None => json!({}),
                };
                let mut p = handler;
                p["successThreshold"] = json!(threshold);
                c["livenessProbe"] = p;
            }
            c["volumeMounts"] = Value::Array(
                mounts.into_iter().map(|(n, p)| json!({"name": n, "mountPath": p})).collect(),
            );
            c
        })
}

fn selector() -> impl Strategy<Value = Value> {
    prop_oneof![
        Just(Value::Null),
        labels().prop_map(|l| json!({"matchLabels": l})),
        (
            "[a-z]{0,3}",
            prop::sample::select(vec!["In", "NotIn", "Exists", "DoesNotExist", "Like"]),
            prop::option::of(prop::collection::vec("[a-z]{0,3}", 0..3))
        )
            .prop_map(|(k, op, values)| json!({"matchExpressions": [{"key": k, "operator": op, "values": values}]})),
    ]
}

/// A CloneSet document with something random in most fields.
fn cloneset_doc() -> impl Strategy<Value = Value> {
    (
        (name(), prop::option::of(-3i32..10), selector(), labels()),
        (
            prop::collection::vec(container(), 0..3),
            prop::collection::vec(container(), 0..2),
            prop::option::of(prop::sample::select(vec!["Always", "OnFailure", "Bogus"])),
            prop::collection::vec(("[a-z]{0,4}", any::<bool>()), 0..3),
        ),
        (
            prop::option::of(prop::sample::select(vec![
                "RollingUpdate", "OnDelete", "ReCreate", "InPlaceIfPossible", "InPlaceOnly", "", "X"
            ])),
            prop::option::of(prop::sample::select(vec!["ReCreate", "InPlaceIfPossible", "InPlaceOnly", "", "X"])),
            prop::option::of(int_or_string()),
            prop::option::of(int_or_string()),
            prop::option::of(int_or_string()),
            prop::option::of(int_or_string()),
        ),
        (
            prop::collection::vec("p[0-3]", 0..4),
            prop::option::of(-2i32..20),
            -2i32..20,
            prop::collection::vec("[a-z]{0,3}", 0..2),
        ),
    )
        .prop_map(|(head, pod, strategy, tail)| {
            let (name, replicas, selector, template_labels) = head;
            let (containers, init, restart, volumes) = pod;
            let (type_, policy, partition, unavailable, surge, parallelism) = strategy;
            let (pods_to_delete, deadline, min_ready, claims) = tail;
            let volumes: Vec<Value> = volumes
                .into_iter()
                .map(|(n, empty)| if empty { json!({"name": n, "emptyDir": {}}) } else { json!({"name": n}) })
                .collect();
            let mut template = json!({
                "metadata": {"labels": template_labels},
                "spec": {"containers": containers, "initContainers": init, "volumes": volumes}
            });
            if let Some(restart) = restart {
                template["spec"]["restartPolicy"] = json!(restart);
            }
            let mut rolling = json!({});
            for (key, value) in [("partition", partition), ("maxUnavailable", unavailable), ("maxSurge", surge)] {
                if let Some(value) = value {
                    rolling[key] = value;
                }
            }
            if let Some(policy) = policy {
                rolling["podUpdatePolicy"] = json!(policy);
            }
            if let Some(parallelism) = parallelism {
                rolling["inPlaceUpdateStrategy"] = json!({"imagePreDownloadParallelism": parallelism});
            }
            let mut update = rolling.clone();
            update["rollingUpdate"] = rolling;
            if let Some(type_) = type_ {
                update["type"] = json!(type_);
            }
            let mut spec = json!({
                "template": template,
                "updateStrategy": update,
                "scaleStrategy": {"podsToDelete": pods_to_delete},
                "minReadySeconds": min_ready,
                "volumeClaimTemplates": claims.into_iter().map(|n| json!({"metadata": {"name": n}})).collect::<Vec<_>>(),
            });
            if let Some(replicas) = replicas {
                spec["replicas"] = json!(replicas);
            }
            if !selector.is_null() {
                spec["selector"] = selector;
            }
            if let Some(deadline) = deadline {
                spec["progressDeadlineSeconds"] = json!(deadline);
            }
            json!({"metadata": {"name": name, "namespace": "default", "resourceVersion": "1"}, "spec": spec})
        })
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    #[test]
    fn validation_never_panics(doc in cloneset_doc(), old_doc in cloneset_doc()) {
        let with_api = |mut doc: Value, version: &str| {
            doc["apiVersion"] = json!(format!("apps.kruise.io/{version}"));
            doc["kind"] = json!("CloneSet");
            doc
        };
        if let (Ok(new), Ok(old)) = (
            serde_json::from_value::<beta::CloneSet>(with_api(doc.clone(), "v1beta1")),
            serde_json::from_value::<beta::CloneSet>(with_api(old_doc.clone(), "v1beta1")),
        ) {
            let _ = validate_cloneset_create(&new).to_string();
            let _ = validate_cloneset_update(&new, &old).to_string();
            let mut defaulted = new.clone();
            default_cloneset_v1beta1(&mut defaulted);
            let _ = validate_cloneset_create(&defaulted).to_string();
        }
        if let (Ok(new), Ok(old)) = (
            serde_json::from_value::<alpha::CloneSet>(with_api(doc, "v1alpha1")),
            serde_json::from_value::<alpha::CloneSet>(with_api(old_doc, "v1alpha1")),
        ) {
            let _ = validate_cloneset_v1alpha1_create(&new, &pods()).to_string();
            let _ = validate_cloneset_v1alpha1_update(&new, &old, &pods()).to_string();
        }
    }

    #[test]
    fn defaulting_is_idempotent(doc in cloneset_doc()) {
        let mut beta_doc = doc.clone();
        beta_doc["apiVersion"] = json!("apps.kruise.io/v1beta1");
        beta_doc["kind"] = json!("CloneSet");
        if let Ok(mut cs) = serde_json::from_value::<beta::CloneSet>(beta_doc) {
            default_cloneset_v1beta1(&mut cs);
            let once = cs.clone();
            default_cloneset_v1beta1(&mut cs);
            prop_assert_eq!(&once, &cs);
            // Also through the wire, as the webhook's patch is applied and read back.
            let mut reread: beta::CloneSet =
                serde_json::from_value(serde_json::to_value(&once).expect("encode")).expect("decode");
            default_cloneset_v1beta1(&mut reread);
            prop_assert_eq!(serde_json::to_value(&reread).expect("encode"), serde_json::to_value(&once).expect("encode"));
        }
        let mut alpha_doc = doc;
        alpha_doc["apiVersion"] = json!("apps.kruise.io/v1alpha1");
        alpha_doc["kind"] = json!("CloneSet");
        if let Ok(mut cs) = serde_json::from_value::<alpha::CloneSet>(alpha_doc) {
            default_cloneset_v1alpha1(&mut cs);
            let once = cs.clone();
            default_cloneset_v1alpha1(&mut cs);
            prop_assert_eq!(once, cs);
        }
    }

    #[test]
    fn well_formed_cloneset_defaulted_is_valid(
        replicas in 0i32..50,
        app in "[a-z][a-z0-9]{0,6}",
        images in prop::collection::vec("[a-z]{1,6}(:[a-z0-9.]{1,5})?", 1..4),
        ports in prop::collection::vec(1i32..65536, 0..3),
        policy in prop::sample::select(vec!["ReCreate", "InPlaceIfPossible"]),
        partition in prop_oneof![(0i32..50).prop_map(|n| json!(n)), (0u32..=100).prop_map(|p| json!(format!("{p}%")))],
        unavailable in prop_oneof![(1i32..50).prop_map(|n| json!(n)), (1u32..=100).prop_map(|p| json!(format!("{p}%")))],
    ) {
        let containers: Vec<Value> = images.iter().enumerate().map(|(i, image)| {
            let ports: Vec<Value> = if i == 0 {
                ports.iter().map(|p| json!({"containerPort": p})).collect()
            } else {
                Vec::new()
            };
            json!({"name": format!("c{i}"), "image": image, "ports": ports,
                   "resources": {"limits": {"cpu": "1"}, "requests": {"cpu": "100m"}},
                   "readinessProbe": {"httpGet": {"port": 8080}}})
        }).collect();
        let mut cs = beta_cs(&format!("{app}-cs"), json!({
            "replicas": replicas,
            "selector": {"matchLabels": {"app": app}},
            "template": {"metadata": {"labels": {"app": app}}, "spec": {"containers": containers}},
            "updateStrategy": {"rollingUpdate": {"podUpdatePolicy": policy, "partition": partition,
                                                 "maxUnavailable": unavailable}},
        }));
        default_cloneset_v1beta1(&mut cs);
        let errs = validate_cloneset_create(&cs);
        prop_assert!(errs.is_empty(), "{}", errs);
        let mut alpha_cs: alpha::CloneSet =
            kruise_api::conversion::from_hub(cs).expect("convert to v1alpha1");
        default_cloneset_v1alpha1(&mut alpha_cs);
        let errs = validate_cloneset_v1alpha1_create(&alpha_cs, &PodsByName::new());
        prop_assert!(errs.is_empty(), "{}", errs);
    }
}
