//! Scenarios follow upstream's test tables (inplace_update_test.go,
//! inplace_update_defaults_test.go); the code and the data layout are ours.

use std::collections::BTreeMap;

use jiff::{SignedDuration, Timestamp};
use k8s_openapi::api::apps::v1::ControllerRevision;
use k8s_openapi::api::core::v1::{Pod, PodTemplateSpec, ResourceRequirements};
use k8s_openapi::apimachinery::pkg::api::resource::Quantity as K8sQuantity;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, Time};
use kruise_api::apps::common::{
    InPlaceUpdateContainerBatch, InPlaceUpdateContainerStatus, InPlaceUpdatePreCheckBeforeNext,
    InPlaceUpdateState,
};
use serde_json::{Value, json};

use super::patch::{PodPatch, patch_spec_to_pod};
use super::*;
use crate::revision::{self, VCT_HASH_ANNOTATION};

fn now() -> Timestamp {
    "2024-05-01T10:00:00Z".parse().expect("time")
}

fn at(offset_secs: i64) -> Timestamp {
    now() + SignedDuration::from_secs(offset_secs)
}

fn pod(value: Value) -> Pod {
    serde_json::from_value(value).expect("pod")
}

fn revision_from(
    name: &str,
    data: Value,
    annotations: Option<BTreeMap<String, String>>,
) -> ControllerRevision {
    let mut r = serde_json::from_value::<ControllerRevision>(json!({
        "metadata": {"name": name},
        "data": data,
        "revision": 1
    }))
    .expect("revision");
    r.metadata.annotations = annotations;
    r
}

fn data(template: Value) -> Value {
    json!({"spec": {"template": template}})
}

fn images(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
    pairs.iter().map(|(k, v)| ((*k).to_owned(), (*v).to_owned())).collect()
}

fn labels_meta(pairs: &[(&str, &str)]) -> ObjectMeta {
    ObjectMeta { labels: Some(images(pairs)), ..ObjectMeta::default() }
}

fn annotations_meta(pairs: &[(&str, &str)]) -> ObjectMeta {
    ObjectMeta { annotations: Some(images(pairs)), ..ObjectMeta::default() }
}

fn requests(pairs: &[(&str, &str)]) -> ResourceRequirements {
    ResourceRequirements {
        requests: Some(
            pairs.iter().map(|(k, v)| ((*k).to_owned(), K8sQuantity((*v).to_owned()))).collect(),
        ),
        ..ResourceRequirements::default()
    }
}

// ---- calculate ----

#[test]
fn calculate_from_revisions() {
    let opts = UpdateOptions::default();
    let calc = |old: Value, new: Value| {
        calculate_revision_update_spec(
            &revision_from("old-revision", old, None),
            &revision_from("new-revision", new, None),
            &opts,
        )
    };
    let base = |image: &str| UpdateSpec {
        revision: "new-revision".into(),
        container_images: images(&[("c1", image)]),
        ..UpdateSpec::default()
    };

    // Only the image changes.
    assert_eq!(
        calc(
            json!({"spec":{"template":{"$patch":"replace","spec":{"containers":[{"name":"c1","image":"foo1"}]}}}}),
            json!({"spec":{"template":{"$patch":"replace","spec":{"containers":[{"name":"c1","image":"foo2"}]}}}})
        ),
        Some(base("foo2"))
    );
    // Metadata outside the template is not looked at.
    assert_eq!(
        calc(
            json!({"metadata":{"labels":{"k":"v"}},"spec":{"template":{"$patch":"replace","spec":{"containers":[{"name":"c1","image":"foo1"}]}}}}),
            json!({"metadata":{"labels":{"k":"v"}},"spec":{"template":{"$patch":"replace","spec":{"containers":[{"name":"c1","image":"foo2"}]}}}})
        ),
        Some(base("foo2"))
    );
    // A new label becomes a metadata patch.
    assert_eq!(
        calc(
            json!({"spec":{"template":{"$patch":"replace","metadata":{"labels":{"k":"v"}},"spec":{"containers":[{"name":"c1","image":"foo1"}]}}}}),
            json!({"spec":{"template":{"$patch":"replace","metadata":{"labels":{"k":"v","k1":"v1"}},"spec":{"containers":[{"name":"c1","image":"foo2"}]}}}})
        ),
        Some(UpdateSpec {
            metadata_patch: Some(json!({"metadata": {"labels": {"k1": "v1"}}})),
            ..base("foo2")
        })
    );
    // A label read by an env var restarts the container instead.
    let env = json!([{"name":"TEST_ENV","valueFrom":{"fieldRef":{"apiVersion":"v1","fieldPath":"metadata.labels['k']"}}}]);
    assert_eq!(
        calc(
            data(
                json!({"$patch":"replace","metadata":{"labels":{"k":"v"}},"spec":{"containers":[{"name":"c1","image":"foo1","env":env}]}})
            ),
            data(
                json!({"$patch":"replace","metadata":{"labels":{"k":"v2","k1":"v1"}},"spec":{"containers":[{"name":"c1","image":"foo2","env":env}]}})
            )
        ),
        Some(UpdateSpec {
            container_ref_metadata: [("c1".to_owned(), labels_meta(&[("k", "v2")]))].into(),
            metadata_patch: Some(json!({"metadata": {"labels": {"k1": "v1"}}})),
            update_env_from_metadata: true,
            ..base("foo2")
        })
    );
    // Finalizers and removed labels.
    let spec = calc(
        json!({"spec":{"template":{"$patch":"replace","metadata":{"labels":{"k":"v","k2":"v2"},"finalizers":["fz1","fz2"]},"spec":{"containers":[{"name":"c1","image":"foo1"}]}}}}),
        json!({"spec":{"template":{"$patch":"replace","metadata":{"labels":{"k":"v","k1":"v1"},"finalizers":["fz2"]},"spec":{"containers":[{"name":"c1","image":"foo2"}]}}}}),
    )
    .expect("in place");
    assert_eq!(
        revision::gojson::encode_sorted(spec.metadata_patch.as_ref().expect("patch")),
        r#"{"metadata":{"$deleteFromPrimitiveList/finalizers":["fz1"],"$setElementOrder/finalizers":["fz2"],"labels":{"k1":"v1","k2":null}}}"#
    );
    // Anything else in the spec means recreate.
    assert_eq!(
        calc(
            json!({"spec":{"template":{"spec":{"containers":[{"name":"c1","image":"foo1"}]}}}}),
            json!({"spec":{"template":{"spec":{"containers":[{"name":"c1","image":"foo2","env":[{"name":"k","value":"v"}]}]}}}})
        ),
        None
    );
    assert_eq!(
        calc(
            json!({"spec":{"template":{"spec":{"containers":[{"name":"c1","image":"foo1"}]}}}}),
            json!({"spec":{"template":{"spec":{"containers":[{"name":"c1","image":"foo1"},{"name":"c2","image":"x"}]}}}})
        ),
        None
    );
    // Unreadable data: recreate.
    assert_eq!(calc(json!({"spec": {}}), json!({"spec": {}})), None);
}

#[test]
fn encodings_of_the_same_template_are_no_change() {
    // Upstream data (Go layout) against a typed template with empties and odd quantities.
    let old = revision_from(
        "old",
        data(json!({"$patch":"replace","metadata":{"creationTimestamp":null,"labels":{"app":"a"}},
            "spec":{"containers":[{"image":"img:1","name":"c","resources":{"limits":{"cpu":"1"}}}]}})),
        None,
    );
    let template: PodTemplateSpec = serde_json::from_value(json!({
        "metadata": {"labels": {"app": "a"}, "annotations": {}},
        "spec": {"containers": [{"name": "c", "image": "img:2", "env": [], "resources": {"limits": {"cpu": "1000m"}}}]}
    }))
    .expect("template");
    let old_template = revision::template_from_revision(&old).expect("template");
    let spec = calculate_update_spec(&old_template, &template, "new", &UpdateOptions::default())
        .expect("in place");
    assert_eq!(spec.container_images, images(&[("c", "img:2")]));
    assert_eq!(spec.metadata_patch, None);
}

fn nginx_data(image: &str) -> Value {
    data(json!({
        "$patch": "replace",
        "metadata": {"creationTimestamp": null, "labels": {"app": "nginx"}},
        "spec": {
            "containers": [{
                "env": [{"name": "version", "value": "v1"}],
                "image": image, "imagePullPolicy": "Always", "name": "nginx", "resources": {},
                "terminationMessagePath": "/dev/termination-log", "terminationMessagePolicy": "File",
                "volumeMounts": [{"mountPath": "/usr/share/nginx/html", "name": "www-data"}]
            }],
            "dnsPolicy": "ClusterFirst", "restartPolicy": "Always", "schedulerName": "default-scheduler",
            "securityContext": {}, "terminationGracePeriodSeconds": 30
        }
    }))
}

#[test]
fn volume_claim_template_hash_gate() {
    let ann = |v: Option<&str>| v.map(|h| [(VCT_HASH_ANNOTATION.to_owned(), h.to_owned())].into());
    // (old annotation, new annotation, in place with the gate on)
    let cases: [(Option<&str>, Option<&str>, bool); 6] = [
        (None, None, true),
        (None, Some("balala"), true),
        (Some("balala"), None, true),
        (Some(""), Some("balala"), false),
        (Some("balala"), Some("balala"), true),
        (Some(""), Some(""), true),
    ];
    for (old_hash, new_hash, in_place_with_gate) in cases {
        let old = revision_from("old-revision", nginx_data("nginx:stable-alpine22"), ann(old_hash));
        let new = revision_from("new-revision", nginx_data("nginx:stable-alpine"), ann(new_hash));
        for (gate, ignore) in [(true, false), (false, false), (true, true)] {
            let opts = UpdateOptions {
                recreate_on_volume_claim_template_change: gate,
                ignore_volume_claim_template_change: ignore,
                ..UpdateOptions::default()
            };
            let got = calculate_revision_update_spec(&old, &new, &opts);
            let expect_in_place = in_place_with_gate || !gate || ignore;
            assert_eq!(
                got.is_some(),
                expect_in_place,
                "{old_hash:?} -> {new_hash:?}, gate {gate}, ignore {ignore}"
            );
            if let Some(spec) = got {
                assert_eq!(spec.container_images, images(&[("nginx", "nginx:stable-alpine")]));
            }
        }
    }
}

/// Upstream's two-container fixture with resources, edited as its tests edit it.
fn resource_data(
    image_changed: bool,
    cpu_changed: bool,
    memory_changed: bool,
    other_changed: bool,
    containers: usize,
) -> Value {
    let container = |name: &str, i: usize| {
        let touched = i < containers;
        json!({
            "env": [{"name": "version", "value": "v1"}],
            "image": if image_changed && touched { "nginx:stable-alpine23" } else { "nginx:stable-alpine22" },
            "imagePullPolicy": if other_changed && touched { "222" } else { "Always" },
            "name": name,
            "resources": {
                "limits": {"cpu": "2", "memory": "4Gi", "sigma/eni": "2"},
                "requests": {
                    "cpu": if cpu_changed && touched { "2" } else { "1" },
                    "memory": if memory_changed && touched { "4Gi" } else { "2Gi" },
                    "sigma/eni": "2"
                }
            },
            "terminationMessagePath": "/dev/termination-log",
            "terminationMessagePolicy": "File",
            "volumeMounts": [{"mountPath": "/usr/share/nginx/html", "name": "www-data"}]
        })
    };
    data(json!({
        "$patch": "replace",
        "metadata": {"creationTimestamp": null, "labels": {"app": "nginx"}},
        "spec": {
            "containers": [container("nginx", 0), container("nginx2", 1)],
            "dnsPolicy": "ClusterFirst", "restartPolicy": "Always", "schedulerName": "default-scheduler",
            "securityContext": {}, "terminationGracePeriodSeconds": 30
        }
    }))
}

#[test]
fn calculate_vertical_scaling() {
    let opts = UpdateOptions { vertical_scaling: true, ..UpdateOptions::default() };
    let old = revision_from("old-revision", resource_data(false, false, false, false, 0), None);
    let calc = |image, cpu, memory, other, n| {
        calculate_revision_update_spec(
            &old,
            &revision_from("new-revision", resource_data(image, cpu, memory, other, n), None),
            &opts,
        )
    };
    let cpu2 = requests(&[("cpu", "2")]);
    let both = requests(&[("cpu", "2"), ("memory", "4Gi")]);
    let spec = |imgs: &[(&str, &str)], res: Vec<(&str, ResourceRequirements)>| UpdateSpec {
        revision: "new-revision".into(),
        container_images: images(imgs),
        container_resources: res.into_iter().map(|(k, v)| (k.to_owned(), v)).collect(),
        ..UpdateSpec::default()
    };

    assert_eq!(calc(false, true, false, false, 1), Some(spec(&[], vec![("nginx", cpu2.clone())])));
    assert_eq!(
        calc(true, true, false, false, 1),
        Some(spec(&[("nginx", "nginx:stable-alpine23")], vec![("nginx", cpu2.clone())]))
    );
    assert_eq!(calc(false, true, false, true, 1), None);
    assert_eq!(calc(true, true, false, true, 1), None);
    assert_eq!(
        calc(false, true, false, false, 2),
        Some(spec(&[], vec![("nginx", cpu2.clone()), ("nginx2", cpu2.clone())]))
    );
    assert_eq!(
        calc(true, true, false, false, 2),
        Some(spec(
            &[("nginx", "nginx:stable-alpine23"), ("nginx2", "nginx:stable-alpine23")],
            vec![("nginx", cpu2.clone()), ("nginx2", cpu2.clone())]
        ))
    );
    assert_eq!(calc(false, true, false, true, 2), None);
    // Burstable to Guaranteed: recreate.
    assert_eq!(calc(false, true, true, false, 2), None);
    // Still Burstable.
    assert_eq!(calc(false, true, true, false, 1), Some(spec(&[], vec![("nginx", both.clone())])));
    assert_eq!(
        calc(true, true, true, false, 1),
        Some(spec(&[("nginx", "nginx:stable-alpine23")], vec![("nginx", both)]))
    );
    assert_eq!(calc(true, true, true, true, 1), None);

    // Without the gate any resource change recreates.
    assert_eq!(
        calculate_revision_update_spec(
            &old,
            &revision_from("new-revision", resource_data(false, true, false, false, 1), None),
            &UpdateOptions::default()
        ),
        None
    );
    // Other resources never resize in place.
    let mut eni = resource_data(false, false, false, false, 0);
    eni["spec"]["template"]["spec"]["containers"][0]["resources"]["requests"]["sigma/eni"] =
        json!("3");
    assert_eq!(
        calculate_revision_update_spec(&old, &revision_from("new-revision", eni, None), &opts),
        None
    );
}

// ---- patching ----

fn barrier(priority: i64) -> Value {
    json!({"name": "KRUISE_CONTAINER_BARRIER", "valueFrom": {"configMapKeyRef": {"key": format!("p_{priority}")}}})
}

fn reads(path: &str) -> Value {
    json!({"name": "config", "valueFrom": {"fieldRef": {"fieldPath": path}}})
}

/// Upstream's four-container pod with launch priorities 20, 10, 0, 0.
fn priority_pod() -> Pod {
    pod(json!({
        "metadata": {"labels": {"label-k1": "foo", "label-k2": "foo"}, "annotations": {"annotation-k1": "foo"}},
        "spec": {"containers": [
            {"name": "c1", "image": "c1-img", "env": [barrier(20), reads("metadata.labels['label-k1']")]},
            {"name": "c2", "image": "c2-img", "env": [barrier(10), reads("metadata.labels['label-k2']")]},
            {"name": "c3", "image": "c3-img", "env": [barrier(0), reads("metadata.labels['label-k2']")]},
            {"name": "c4", "image": "c4-img", "env": [barrier(0), reads("metadata.annotations['annotation-k1']")]}
        ]},
        "status": {"containerStatuses": [
            {"name": "c1", "imageID": "containerd://c1-img", "image": "c1-img", "ready": true, "restartCount": 0},
            {"name": "c2", "imageID": "containerd://c2-img", "image": "c2-img", "ready": true, "restartCount": 0},
            {"name": "c3", "imageID": "containerd://c3-img", "image": "c3-img", "ready": true, "restartCount": 0},
            {"name": "c4", "imageID": "containerd://c4-img", "image": "c4-img", "ready": true, "restartCount": 0}
        ]}
    }))
}

fn last(pairs: &[(&str, &str)]) -> BTreeMap<String, InPlaceUpdateContainerStatus> {
    pairs
        .iter()
        .map(|(k, v)| ((*k).to_owned(), InPlaceUpdateContainerStatus { image_id: (*v).to_owned() }))
        .collect()
}

fn batch(names: &[&str]) -> InPlaceUpdateContainerBatch {
    InPlaceUpdateContainerBatch {
        timestamp: Some(Time(now())),
        containers: names.iter().map(|s| (*s).to_owned()).collect(),
    }
}

fn pre_check(names: &[&str]) -> Option<InPlaceUpdatePreCheckBeforeNext> {
    Some(InPlaceUpdatePreCheckBeforeNext {
        containers_required_ready: names.iter().map(|s| (*s).to_owned()).collect(),
    })
}

/// Runs the batch logic and returns the patch without the state annotation.
fn apply(
    pod: &Pod,
    spec: &UpdateSpec,
    state: &mut InPlaceUpdateState,
    opts: &UpdateOptions,
) -> Value {
    let mut patch = PodPatch::default();
    patch_spec_to_pod(pod, spec, state, opts, now(), &mut patch);
    let mut value = patch.into_value();
    let recorded = value["metadata"]["annotations"][STATE_ANNOTATION].take();
    let recorded: InPlaceUpdateState =
        serde_json::from_str(recorded.as_str().expect("state annotation")).expect("state");
    assert_eq!(&recorded, state, "annotation holds the state");
    let annotations = value["metadata"]["annotations"].as_object_mut().expect("annotations");
    annotations.remove(STATE_ANNOTATION);
    if annotations.is_empty() {
        value["metadata"].as_object_mut().expect("metadata").remove("annotations");
    }
    if value["metadata"].as_object().is_some_and(|m| m.is_empty()) {
        value.as_object_mut().expect("root").remove("metadata");
    }
    value
}

fn containers_patch(entries: Value) -> Value {
    json!({"spec": {"containers": entries}})
}

#[test]
fn batches_follow_launch_priority() {
    let pod = priority_pod();
    let opts = UpdateOptions::default();
    struct Case {
        name: &'static str,
        spec: UpdateSpec,
        state: InPlaceUpdateState,
        expected_state: InPlaceUpdateState,
        expected_patch: Value,
    }
    let new_key_patch = Some(json!({"metadata": {"annotations": {"new-key": "bar"}}}));
    let cases = vec![
        Case {
            name: "single container",
            spec: UpdateSpec {
                container_images: images(&[("c1", "c1-img-new")]),
                ..UpdateSpec::default()
            },
            state: InPlaceUpdateState::default(),
            expected_state: InPlaceUpdateState {
                last_container_statuses: last(&[("c1", "containerd://c1-img")]),
                container_batches_record: vec![batch(&["c1"])],
                ..InPlaceUpdateState::default()
            },
            expected_patch: containers_patch(json!([{"name": "c1", "image": "c1-img-new"}])),
        },
        Case {
            name: "two containers of the same priority",
            spec: UpdateSpec {
                metadata_patch: new_key_patch.clone(),
                container_images: images(&[("c3", "c3-img-new"), ("c4", "c4-img-new")]),
                ..UpdateSpec::default()
            },
            state: InPlaceUpdateState::default(),
            expected_state: InPlaceUpdateState {
                last_container_statuses: last(&[
                    ("c3", "containerd://c3-img"),
                    ("c4", "containerd://c4-img"),
                ]),
                container_batches_record: vec![batch(&["c3", "c4"])],
                ..InPlaceUpdateState::default()
            },
            expected_patch: json!({
                "metadata": {"annotations": {"new-key": "bar"}},
                "spec": {"containers": [{"name": "c3", "image": "c3-img-new"}, {"name": "c4", "image": "c4-img-new"}]}
            }),
        },
        Case {
            name: "image and env from metadata, same priority",
            spec: UpdateSpec {
                metadata_patch: new_key_patch.clone(),
                container_images: images(&[("c3", "c3-img-new")]),
                container_ref_metadata: [(
                    "c4".to_owned(),
                    annotations_meta(&[("annotation-k1", "bar")]),
                )]
                .into(),
                ..UpdateSpec::default()
            },
            state: InPlaceUpdateState::default(),
            expected_state: InPlaceUpdateState {
                last_container_statuses: last(&[("c3", "containerd://c3-img")]),
                container_batches_record: vec![batch(&["c3", "c4"])],
                ..InPlaceUpdateState::default()
            },
            expected_patch: json!({
                "metadata": {"annotations": {"new-key": "bar", "annotation-k1": "bar"}},
                "spec": {"containers": [{"name": "c3", "image": "c3-img-new"}]}
            }),
        },
        Case {
            name: "two priorities, first batch",
            spec: UpdateSpec {
                metadata_patch: new_key_patch.clone(),
                container_images: images(&[("c1", "c1-img-new"), ("c2", "c2-img-new")]),
                ..UpdateSpec::default()
            },
            state: InPlaceUpdateState::default(),
            expected_state: InPlaceUpdateState {
                last_container_statuses: last(&[("c1", "containerd://c1-img")]),
                next_container_images: images(&[("c2", "c2-img-new")]),
                pre_check_before_next: pre_check(&["c1"]),
                container_batches_record: vec![batch(&["c1"])],
                ..InPlaceUpdateState::default()
            },
            expected_patch: json!({
                "metadata": {"annotations": {"new-key": "bar"}},
                "spec": {"containers": [{"name": "c1", "image": "c1-img-new"}]}
            }),
        },
        Case {
            name: "two priorities, second batch",
            spec: UpdateSpec {
                container_images: images(&[("c2", "c2-img-new")]),
                ..UpdateSpec::default()
            },
            state: InPlaceUpdateState {
                last_container_statuses: last(&[("c1", "containerd://c1-img-old")]),
                next_container_images: images(&[("c2", "c2-img-new")]),
                pre_check_before_next: pre_check(&["c1"]),
                container_batches_record: vec![batch(&["c1"])],
                ..InPlaceUpdateState::default()
            },
            expected_state: InPlaceUpdateState {
                last_container_statuses: last(&[
                    ("c1", "containerd://c1-img-old"),
                    ("c2", "containerd://c2-img"),
                ]),
                container_batches_record: vec![batch(&["c1"]), batch(&["c2"])],
                ..InPlaceUpdateState::default()
            },
            expected_patch: containers_patch(json!([{"name": "c2", "image": "c2-img-new"}])),
        },
        Case {
            name: "three priorities, first batch",
            spec: UpdateSpec {
                container_images: images(&[
                    ("c1", "c1-img-new"),
                    ("c2", "c2-img-new"),
                    ("c4", "c4-img-new"),
                ]),
                ..UpdateSpec::default()
            },
            state: InPlaceUpdateState::default(),
            expected_state: InPlaceUpdateState {
                last_container_statuses: last(&[("c1", "containerd://c1-img")]),
                next_container_images: images(&[("c2", "c2-img-new"), ("c4", "c4-img-new")]),
                pre_check_before_next: pre_check(&["c1"]),
                container_batches_record: vec![batch(&["c1"])],
                ..InPlaceUpdateState::default()
            },
            expected_patch: containers_patch(json!([{"name": "c1", "image": "c1-img-new"}])),
        },
        Case {
            name: "three priorities, second batch",
            spec: UpdateSpec {
                container_images: images(&[("c2", "c2-img-new"), ("c4", "c4-img-new")]),
                ..UpdateSpec::default()
            },
            state: InPlaceUpdateState {
                last_container_statuses: last(&[("c1", "containerd://c1-img")]),
                next_container_images: images(&[("c2", "c2-img-new"), ("c4", "c4-img-new")]),
                pre_check_before_next: pre_check(&["c1"]),
                container_batches_record: vec![batch(&["c1"])],
                ..InPlaceUpdateState::default()
            },
            expected_state: InPlaceUpdateState {
                last_container_statuses: last(&[
                    ("c1", "containerd://c1-img"),
                    ("c2", "containerd://c2-img"),
                ]),
                next_container_images: images(&[("c4", "c4-img-new")]),
                pre_check_before_next: pre_check(&["c2"]),
                container_batches_record: vec![batch(&["c1"]), batch(&["c2"])],
                ..InPlaceUpdateState::default()
            },
            expected_patch: containers_patch(json!([{"name": "c2", "image": "c2-img-new"}])),
        },
        Case {
            name: "four containers with env from metadata, first batch",
            spec: UpdateSpec {
                container_images: images(&[
                    ("c1", "c1-img-new"),
                    ("c2", "c2-img-new"),
                    ("c4", "c4-img-new"),
                ]),
                container_ref_metadata: [
                    ("c2".to_owned(), labels_meta(&[("label-k2", "bar")])),
                    ("c3".to_owned(), labels_meta(&[("label-k2", "bar")])),
                ]
                .into(),
                ..UpdateSpec::default()
            },
            state: InPlaceUpdateState::default(),
            expected_state: InPlaceUpdateState {
                last_container_statuses: last(&[("c1", "containerd://c1-img")]),
                next_container_images: images(&[("c2", "c2-img-new"), ("c4", "c4-img-new")]),
                next_container_ref_metadata: [
                    ("c2".to_owned(), labels_meta(&[("label-k2", "bar")])),
                    ("c3".to_owned(), labels_meta(&[("label-k2", "bar")])),
                ]
                .into(),
                pre_check_before_next: pre_check(&["c1"]),
                container_batches_record: vec![batch(&["c1"])],
                ..InPlaceUpdateState::default()
            },
            expected_patch: containers_patch(json!([{"name": "c1", "image": "c1-img-new"}])),
        },
        Case {
            name: "four containers with env from metadata, second batch pulls in the sharer",
            spec: UpdateSpec {
                container_images: images(&[("c2", "c2-img-new"), ("c4", "c4-img-new")]),
                container_ref_metadata: [
                    ("c2".to_owned(), labels_meta(&[("label-k2", "bar")])),
                    ("c3".to_owned(), labels_meta(&[("label-k2", "bar")])),
                ]
                .into(),
                ..UpdateSpec::default()
            },
            state: InPlaceUpdateState {
                last_container_statuses: last(&[("c1", "containerd://c1-img")]),
                pre_check_before_next: pre_check(&["c1"]),
                container_batches_record: vec![batch(&["c1"])],
                ..InPlaceUpdateState::default()
            },
            expected_state: InPlaceUpdateState {
                last_container_statuses: last(&[
                    ("c1", "containerd://c1-img"),
                    ("c2", "containerd://c2-img"),
                ]),
                next_container_images: images(&[("c4", "c4-img-new")]),
                pre_check_before_next: pre_check(&["c2", "c3"]),
                container_batches_record: vec![batch(&["c1"]), batch(&["c2", "c3"])],
                ..InPlaceUpdateState::default()
            },
            expected_patch: json!({
                "metadata": {"labels": {"label-k2": "bar"}},
                "spec": {"containers": [{"name": "c2", "image": "c2-img-new"}]}
            }),
        },
        Case {
            name: "four containers with env from metadata, third batch",
            spec: UpdateSpec {
                container_images: images(&[("c4", "c4-img-new")]),
                ..UpdateSpec::default()
            },
            state: InPlaceUpdateState {
                last_container_statuses: last(&[
                    ("c1", "containerd://c1-img"),
                    ("c2", "containerd://c2-img"),
                ]),
                next_container_images: images(&[("c4", "c4-img-new")]),
                pre_check_before_next: pre_check(&["c2", "c3"]),
                container_batches_record: vec![batch(&["c1"]), batch(&["c2", "c3"])],
                ..InPlaceUpdateState::default()
            },
            expected_state: InPlaceUpdateState {
                last_container_statuses: last(&[
                    ("c1", "containerd://c1-img"),
                    ("c2", "containerd://c2-img"),
                    ("c4", "containerd://c4-img"),
                ]),
                container_batches_record: vec![
                    batch(&["c1"]),
                    batch(&["c2", "c3"]),
                    batch(&["c4"]),
                ],
                ..InPlaceUpdateState::default()
            },
            expected_patch: containers_patch(json!([{"name": "c4", "image": "c4-img-new"}])),
        },
    ];
    for case in cases {
        let mut state = case.state;
        let patch = apply(&pod, &case.spec, &mut state, &opts);
        assert_eq!(state, case.expected_state, "{}: state", case.name);
        assert_eq!(patch, case.expected_patch, "{}: patch", case.name);
    }
}

fn resource_pod() -> Pod {
    let resources =
        json!({"requests": {"memory": "1Gi", "cpu": "1"}, "limits": {"memory": "2Gi", "cpu": "2"}});
    pod(json!({
        "metadata": {"labels": {"label-k1": "foo", "label-k2": "foo"}, "annotations": {"annotation-k1": "foo"}},
        "spec": {"containers": [
            {"name": "c1", "image": "c1-img", "env": [barrier(20), reads("metadata.labels['label-k1']")],
             "resources": resources, "resizePolicy": [{"resourceName": "cpu", "restartPolicy": "NotRequired"}]},
            {"name": "c2", "image": "c2-img", "env": [barrier(10), reads("metadata.labels['label-k2']")],
             "resources": resources, "resizePolicy": [{"resourceName": "memory", "restartPolicy": "RestartContainer"}]}
        ]},
        "status": {"containerStatuses": [
            {"name": "c1", "imageID": "containerd://c1-img", "image": "c1-img", "ready": true, "restartCount": 0, "resources": resources},
            {"name": "c2", "imageID": "containerd://c2-img", "image": "c2-img", "ready": true, "restartCount": 0, "resources": resources}
        ]}
    }))
}

#[test]
fn batches_with_resources() {
    let pod = resource_pod();
    let opts = UpdateOptions { vertical_scaling: true, ..UpdateOptions::default() };
    let two = requests(&[("memory", "2Gi"), ("cpu", "2")]);
    let res_patch = json!({"requests": {"memory": "2Gi", "cpu": "2"}});

    // Resources only.
    let mut state = InPlaceUpdateState::default();
    let spec = UpdateSpec {
        container_resources: [("c1".to_owned(), two.clone())].into(),
        ..UpdateSpec::default()
    };
    let patch = apply(&pod, &spec, &mut state, &opts);
    assert_eq!(state.container_batches_record, vec![batch(&["c1"])]);
    assert!(state.last_container_statuses.is_empty());
    assert_eq!(patch, containers_patch(json!([{"name": "c1", "resources": res_patch}])));

    // Image and resources of two containers: first batch, then the second.
    let spec = UpdateSpec {
        container_images: images(&[("c1", "c1-img-new"), ("c2", "c1-img-new")]),
        container_resources: [("c1".to_owned(), two.clone()), ("c2".to_owned(), two.clone())]
            .into(),
        ..UpdateSpec::default()
    };
    let mut state = InPlaceUpdateState::default();
    let patch = apply(&pod, &spec, &mut state, &opts);
    assert_eq!(
        state,
        InPlaceUpdateState {
            last_container_statuses: last(&[("c1", "containerd://c1-img")]),
            next_container_images: images(&[("c2", "c1-img-new")]),
            next_container_resources: [("c2".to_owned(), two.clone())].into(),
            pre_check_before_next: pre_check(&["c1"]),
            container_batches_record: vec![batch(&["c1"])],
            ..InPlaceUpdateState::default()
        }
    );
    assert_eq!(
        patch,
        containers_patch(json!([{"name": "c1", "image": "c1-img-new", "resources": res_patch}]))
    );

    let spec = UpdateSpec {
        container_images: state.next_container_images.clone(),
        container_resources: state.next_container_resources.clone(),
        ..UpdateSpec::default()
    };
    let patch = apply(&pod, &spec, &mut state, &opts);
    assert_eq!(state.next_container_resources, BTreeMap::new());
    assert_eq!(state.pre_check_before_next, None);
    assert_eq!(state.container_batches_record, vec![batch(&["c1"]), batch(&["c2"])]);
    assert_eq!(
        patch,
        containers_patch(json!([{"name": "c2", "image": "c1-img-new", "resources": res_patch}]))
    );

    // Through the resize subresource the pod patch leaves resources alone.
    let resize_opts = UpdateOptions { resize_subresource: true, ..opts };
    let spec = UpdateSpec {
        container_resources: [("c1".to_owned(), two)].into(),
        ..UpdateSpec::default()
    };
    let plan = plan_in_place_update(
        &pod,
        &UpdateSpec { revision: "web-abc".into(), ..spec },
        &resize_opts,
        now(),
    );
    assert!(plan.update.patch.get("spec").is_none());
    // Only values that differ from the pod's are resized (cpu 1 -> 2, memory 1Gi -> 2Gi).
    assert_eq!(
        plan.update.resize,
        Some(
            json!({"spec": {"containers": [{"name": "c1", "resources": {"requests": {"cpu": "2", "memory": "2Gi"}}}]}})
        )
    );
}

// ---- planning a whole update ----

fn gated_pod() -> Pod {
    pod(json!({
        "metadata": {
            "name": "web-0",
            "labels": {"controller-revision-hash": "web-old1", "pod-template-hash": "old1", "app": "web"},
            "annotations": {"inplace-update-state": "{}"}
        },
        "spec": {
            "containers": [{"name": "main", "image": "img:1"}],
            "readinessGates": [{"conditionType": "InPlaceUpdateReady"}]
        },
        "status": {
            "conditions": [
                {"type": "Ready", "status": "True"},
                {"type": "ContainersReady", "status": "True"},
                {"type": "InPlaceUpdateReady", "status": "True"}
            ],
            "containerStatuses": [{"name": "main", "image": "img:1", "imageID": "id-1", "ready": true, "restartCount": 0}]
        }
    }))
}

#[test]
fn plan_without_grace_period() {
    let pod = gated_pod();
    let spec = UpdateSpec {
        revision: "web-new2".into(),
        container_images: images(&[("main", "img:2")]),
        metadata_patch: Some(json!({"metadata": {"labels": {"tier": "gold"}}})),
        ..UpdateSpec::default()
    };
    let plan = plan_in_place_update(
        &pod,
        &spec,
        &UpdateOptions::default(),
        now() + SignedDuration::from_millis(700),
    );

    let conditions = plan.conditions.expect("leave service first");
    let find = |t: &str| conditions.iter().find(|c| c.type_ == t).expect("condition").clone();
    let gate = find(IN_PLACE_UPDATE_READY);
    assert_eq!(
        (gate.status.as_str(), gate.reason.as_deref()),
        ("False", Some("StartInPlaceUpdate"))
    );
    assert_eq!(gate.last_transition_time, Some(Time(now())));
    let ready = find("Ready");
    assert_eq!(ready.status, "False");
    assert_eq!(ready.reason.as_deref(), Some("ReadinessGatesNotReady"));
    assert_eq!(
        ready.message.as_deref(),
        Some("the status of pod readiness gate \"InPlaceUpdateReady\" is not \"True\", but False")
    );

    let state = plan.update.state.clone().expect("state");
    assert_eq!(state.revision, "web-new2");
    assert_eq!(state.update_timestamp, Some(Time(now())));
    assert!(state.update_images);
    assert_eq!(state.last_container_statuses, last(&[("main", "id-1")]));
    assert_eq!(
        plan.update.patch,
        json!({
            "metadata": {
                "labels": {"controller-revision-hash": "web-new2", "pod-template-hash": "new2", "tier": "gold"},
                "annotations": {"inplace-update-state": null, STATE_ANNOTATION: patch::state_json(&state)}
            },
            "spec": {"containers": [{"name": "main", "image": "img:2"}]}
        })
    );
    assert_eq!(plan.requeue_after, None);
    assert!(!plan.in_grace_period);

    // Short-hash labels.
    let opts = UpdateOptions { short_hash: true, ..UpdateOptions::default() };
    let plan = plan_in_place_update(&pod, &spec, &opts, now());
    assert_eq!(plan.update.patch["metadata"]["labels"]["controller-revision-hash"], json!("new2"));
}

#[test]
fn grace_period_two_phases() {
    let pod = gated_pod();
    let spec = UpdateSpec {
        revision: "web-new2".into(),
        container_images: images(&[("main", "img:2")]),
        grace_seconds: 30,
        ..UpdateSpec::default()
    };
    let opts = UpdateOptions { grace_period_seconds: 30, ..UpdateOptions::default() };
    let plan = plan_in_place_update(&pod, &spec, &opts, now());
    assert!(plan.in_grace_period);
    assert_eq!(plan.requeue_after, Some(SignedDuration::from_secs(30)));
    assert!(plan.update.patch.get("spec").is_none(), "containers wait for the grace period");
    let annotations = &plan.update.patch["metadata"]["annotations"];
    let parked = annotations[GRACE_ANNOTATION].as_str().expect("grace");
    assert_eq!(
        parked,
        r#"{"revision":"web-new2","containerImages":{"main":"img:2"},"graceSeconds":30}"#
    );
    assert_eq!(UpdateSpec::from_annotation(parked).expect("parse"), spec);

    // The pod as it is after phase one.
    let mut during = pod.clone();
    let labels = during.metadata.labels.get_or_insert_default();
    labels.insert("controller-revision-hash".into(), "web-new2".into());
    let ann = during.metadata.annotations.get_or_insert_default();
    ann.remove("inplace-update-state");
    ann.insert(
        STATE_ANNOTATION.into(),
        annotations[STATE_ANNOTATION].as_str().expect("state").into(),
    );
    ann.insert(GRACE_ANNOTATION.into(), parked.into());

    assert_eq!(check_in_place_update_completed(&during, &opts), Err(NotCompleted::InGracePeriod));
    assert_eq!(
        refresh(&during, &opts, at(10) + SignedDuration::from_millis(300)).expect("refresh"),
        RefreshAction::WaitGracePeriod { requeue_after: SignedDuration::from_secs(20) }
    );
    let RefreshAction::FinishGracePeriod(update) =
        refresh(&during, &opts, at(30)).expect("refresh")
    else {
        panic!("expected the grace period to end");
    };
    assert_eq!(update.patch["spec"], json!({"containers": [{"name": "main", "image": "img:2"}]}));
    assert_eq!(update.patch["metadata"]["annotations"][GRACE_ANNOTATION], Value::Null);
    let state = update.state.expect("state");
    assert_eq!(
        state.update_timestamp,
        Some(Time(now())),
        "the update started with the grace period"
    );
    assert_eq!(
        state.container_batches_record,
        vec![InPlaceUpdateContainerBatch {
            timestamp: Some(Time(at(30))),
            containers: vec!["main".into()],
        }]
    );
    assert_eq!(state.last_container_statuses, last(&[("main", "id-1")]));

    // Moved to another revision meanwhile: drop the parked spec.
    let mut moved = during.clone();
    moved
        .metadata
        .labels
        .get_or_insert_default()
        .insert("controller-revision-hash".into(), "web-other3".into());
    let RefreshAction::DropGracePeriod(update) = refresh(&moved, &opts, at(40)).expect("refresh")
    else {
        panic!("expected the grace period to be dropped");
    };
    assert_eq!(update.patch, json!({"metadata": {"annotations": {GRACE_ANNOTATION: null}}}));
}

#[test]
fn upstream_grace_annotation_reads() {
    let spec = UpdateSpec::from_annotation(
        r#"{"revision":"new-revision","containerImages":{"main":"img-name02"},"graceSeconds":30}"#,
    )
    .expect("parse");
    assert_eq!(spec.container_images, images(&[("main", "img-name02")]));
    assert_eq!(spec.grace_seconds, 30);
    // metaDataPatch is a Go []byte: base64.
    let with_patch = UpdateSpec {
        revision: "r".into(),
        metadata_patch: Some(json!({"metadata": {"labels": {"a": "b"}}})),
        container_ref_metadata: [("c".to_owned(), labels_meta(&[("k", "v")]))].into(),
        update_env_from_metadata: true,
        ..UpdateSpec::default()
    };
    let text = with_patch.to_annotation();
    assert!(
        text.contains(r#""metaDataPatch":"eyJtZXRhZGF0YSI6eyJsYWJlbHMiOnsiYSI6ImIifX19""#),
        "{text}"
    );
    assert_eq!(UpdateSpec::from_annotation(&text).expect("parse"), with_patch);
    assert!(matches!(
        UpdateSpec::from_annotation("{"),
        Err(InPlaceError::InvalidAnnotation { .. })
    ));
}

// ---- completion ----

fn pod_with_state(state: Value, statuses: Value, containers: Value) -> Pod {
    pod(json!({
        "metadata": {"labels": {"controller-revision-hash": "new-revision"}, "annotations": {STATE_ANNOTATION: state.to_string()}},
        "spec": {"containers": containers},
        "status": {"containerStatuses": statuses}
    }))
}

#[test]
fn completion_by_image_id() {
    let opts = UpdateOptions::default();
    let no_state = pod(json!({"metadata": {"name": "s1"}}));
    assert_eq!(check_in_place_update_completed(&no_state, &opts), Ok(()));

    let state =
        json!({"revision": "new-revision", "lastContainerStatuses": {"c1": {"imageID": "img01"}}});
    let changed = pod_with_state(
        state.clone(),
        json!([{"name": "c1", "imageID": "img02", "image": "", "ready": true, "restartCount": 0}]),
        json!([{"name": "c1"}]),
    );
    assert_eq!(check_in_place_update_completed(&changed, &opts), Ok(()));

    let unchanged = pod_with_state(
        state.clone(),
        json!([{"name": "c1", "imageID": "img01", "image": "image01", "ready": true, "restartCount": 0}]),
        json!([{"name": "c1", "image": "image02"}]),
    );
    assert_eq!(
        check_in_place_update_completed(&unchanged, &opts),
        Err(NotCompleted::ImageNotChanged { container: "c1".into() })
    );
    // Same image ID but the status already shows the new image (retagged digest): done.
    let retagged = pod_with_state(
        state.clone(),
        json!([{"name": "c1", "imageID": "img01", "image": "image02:latest", "ready": true, "restartCount": 0}]),
        json!([{"name": "c1", "image": "image02"}]),
    );
    assert_eq!(check_in_place_update_completed(&retagged, &opts), Ok(()));

    let no_status = pod_with_state(state, json!([]), json!([{"name": "c1"}]));
    assert_eq!(
        check_in_place_update_completed(&no_status, &opts),
        Err(NotCompleted::StatusMissing { containers: vec!["c1".into()] })
    );

    let pending = pod_with_state(
        json!({"revision": "r", "lastContainerStatuses": {}, "nextContainerImages": {"c2": "x"}}),
        json!([]),
        json!([]),
    );
    assert_eq!(check_in_place_update_completed(&pending, &opts), Err(NotCompleted::PendingBatches));
    let mut broken = no_state.clone();
    broken.metadata.annotations = Some([(STATE_ANNOTATION.to_owned(), "{".to_owned())].into());
    assert!(matches!(
        check_in_place_update_completed(&broken, &opts),
        Err(NotCompleted::InvalidState(_))
    ));
}

/// Upstream's `createFakePod`: `n` containers, the first `images_ok` with a changed image
/// ID, the first `resources_ok` with applied resources.
fn fake_pod(
    with_images: bool,
    with_resources: bool,
    with_state: bool,
    n: usize,
    images_ok: usize,
    resources_ok: usize,
) -> Pod {
    let mut containers = Vec::new();
    let mut statuses = Vec::new();
    let mut lasts = serde_json::Map::new();
    for i in 0..n {
        let name = format!("c{i}");
        let mut container = json!({"name": name});
        let mut status =
            json!({"name": name, "image": "", "imageID": "", "ready": true, "restartCount": 0});
        let mut last_status = json!({});
        if with_images {
            container["image"] = json!(format!("busybox:test{i}"));
            status["imageID"] = json!(if i < images_ok {
                format!("img0{i}")
            } else {
                "different-img01".to_owned()
            });
            last_status = json!({"imageID": "different-img01"});
        }
        if with_resources {
            container["resources"] = json!({"requests": {"cpu": "200m", "memory": "200Mi"}});
            status["resources"] = if i < resources_ok {
                json!({"requests": {"cpu": "200m", "memory": "200Mi"}})
            } else {
                json!({"requests": {"cpu": "100m", "memory": "100Mi"}})
            };
        }
        lasts.insert(name, last_status);
        containers.push(container);
        statuses.push(status);
    }
    let mut annotations = serde_json::Map::new();
    if with_state {
        let state = json!({"revision": "new-revision", "lastContainerStatuses": lasts, "updateResources": with_resources});
        annotations.insert(STATE_ANNOTATION.into(), json!(state.to_string()));
    }
    pod(json!({
        "metadata": {"name": "test-pod", "labels": {"controller-revision-hash": "new-revision"}, "annotations": annotations},
        "spec": {"containers": containers},
        "status": {"containerStatuses": statuses}
    }))
}

#[test]
fn completion_with_resources() {
    // (pod, completed without vertical scaling, completed with it)
    let cases = [
        (fake_pod(false, false, false, 1, 0, 0), true, true),
        (fake_pod(true, false, true, 1, 1, 0), true, true),
        (fake_pod(true, false, true, 1, 0, 0), false, false),
        (fake_pod(true, false, true, 2, 2, 0), true, true),
        (fake_pod(true, false, true, 2, 1, 0), false, false),
        (fake_pod(true, true, true, 2, 2, 2), true, true),
        (fake_pod(true, true, true, 2, 2, 1), true, false),
        (fake_pod(true, true, true, 2, 1, 1), false, false),
        (fake_pod(true, true, true, 3, 3, 1), true, false),
    ];
    for (i, (pod, without, with)) in cases.iter().enumerate() {
        let plain = check_in_place_update_completed(pod, &UpdateOptions::default());
        assert_eq!(plain.is_ok(), *without, "case {i} without vertical scaling: {plain:?}");
        let vertical = UpdateOptions { vertical_scaling: true, ..UpdateOptions::default() };
        let scaled = check_in_place_update_completed(pod, &vertical);
        assert_eq!(scaled.is_ok(), *with, "case {i} with vertical scaling: {scaled:?}");
    }
}

#[test]
fn completion_by_runtime_hashes() {
    let containers = json!([{"name": "main", "image": "img:2", "env": [
        {"name": "TIER", "valueFrom": {"fieldRef": {"fieldPath": "metadata.labels['tier']"}}},
        {"name": "PLAIN", "value": "x"}
    ]}]);
    let statuses = json!([{"name": "main", "containerID": "containerd://abc", "image": "img:1", "imageID": "id-1", "ready": true, "restartCount": 1}]);
    let state = json!({"revision": "r", "lastContainerStatuses": {"main": {"imageID": "id-1"}}, "updateEnvFromMetadata": true});
    let mut pod = pod_with_state(state, statuses, containers);
    pod.metadata.labels.get_or_insert_default().insert("tier".into(), "gold".into());
    let container = pod.spec.as_ref().expect("spec").containers[0].clone();
    let opts = UpdateOptions::default();

    // No runtime meta yet, but env from metadata changed: not done.
    assert_eq!(check_in_place_update_completed(&pod, &opts), Err(NotCompleted::RuntimeMetaMissing));

    let (current, legacy) = container_plain_hashes(&container);
    assert_ne!(current, legacy);
    let env_hash = container_env_from_metadata_hash(&container, &pod);
    let meta = |plain: u64, env: u64, id: &str| {
        json!({"containers": [{"name": "main", "containerID": id, "restartCount": 1,
            "hashes": {"plainHash": plain, "extractedEnvFromMetadataHash": env}}]})
        .to_string()
    };
    let with_meta = |text: String| {
        let mut p = pod.clone();
        p.metadata
            .annotations
            .get_or_insert_default()
            .insert(RUNTIME_CONTAINERS_META_ANNOTATION.into(), text);
        p
    };
    // Hashes agree (either kubelet flavour) although the image ID did not change: done.
    assert_eq!(
        check_in_place_update_completed(
            &with_meta(meta(current, env_hash, "containerd://abc")),
            &opts
        ),
        Ok(())
    );
    assert_eq!(
        check_in_place_update_completed(
            &with_meta(meta(legacy, env_hash, "containerd://abc")),
            &opts
        ),
        Ok(())
    );
    // The env still has old values.
    assert_eq!(
        check_in_place_update_completed(
            &with_meta(meta(current, env_hash ^ 1, "containerd://abc")),
            &opts
        ),
        Err(NotCompleted::EnvNotApplied)
    );
    // The runtime reports another container: fall back to image IDs, which did not change.
    assert_eq!(
        check_in_place_update_completed(
            &with_meta(meta(current, env_hash, "containerd://old")),
            &opts
        ),
        Err(NotCompleted::EnvNotApplied)
    );
}

#[test]
fn env_hash_matches_go() {
    // Worked out by hand: FNV-1a over the dump of `[{"name":"TIER","value":"gold"}]`.
    let container: k8s_openapi::api::core::v1::Container = serde_json::from_value(json!({
        "name": "main",
        "env": [{"name": "TIER", "valueFrom": {"fieldRef": {"fieldPath": "metadata.labels['tier']"}}}]
    }))
    .expect("container");
    let pod = pod(json!({"metadata": {"labels": {"tier": "gold"}}}));
    let expected = revision::hash::deep_hash_json(br#"[{"name":"TIER","value":"gold"}]"#);
    assert_eq!(container_env_from_metadata_hash(&container, &pod), u64::from(expected));
    let bare: k8s_openapi::api::core::v1::Container =
        serde_json::from_value(json!({"name": "main"})).expect("container");
    assert_eq!(
        container_env_from_metadata_hash(&bare, &pod),
        u64::from(revision::hash::deep_hash_json(b"null"))
    );
    // What a running container holds hashes the same when it holds the pod's value, and
    // differently once the label moved on (kruise-daemon's restart cue).
    let held: std::collections::BTreeMap<String, String> =
        [("TIER".to_owned(), "gold".to_owned()), ("PATH".to_owned(), "/bin".to_owned())].into();
    assert_eq!(running_env_from_metadata_hash(&container, &held), u64::from(expected));
    let mut moved = pod.clone();
    moved.metadata.labels = Some([("tier".to_owned(), "silver".to_owned())].into());
    assert_ne!(
        running_env_from_metadata_hash(&container, &held),
        container_env_from_metadata_hash(&container, &moved)
    );
    assert_eq!(
        running_env_from_metadata_hash(&bare, &held),
        u64::from(revision::hash::deep_hash_json(b"null"))
    );
    // The kubelet's own expectation for its 1.31+ container hash.
    let kubelet: k8s_openapi::api::core::v1::Container = serde_json::from_value(json!({
        "name": "test_container", "image": "foo/image:v1", "args": ["/bin/sh", "-c", "echo abc"],
        "ports": [{"containerPort": 8001}]
    }))
    .expect("container");
    assert_eq!(container_plain_hashes(&kubelet), (0x8e45_cbd0, 0x3c42_280f));
}

// ---- readiness ----

#[test]
fn needs_be_unready() {
    let gated = json!([{"conditionType": "InPlaceUpdateReady"}]);
    let p = |containers: Value, gates: Option<Value>| {
        let mut spec = json!({"containers": containers});
        if let Some(g) = gates {
            spec["readinessGates"] = g;
        }
        pod(json!({"spec": spec}))
    };
    let vertical = UpdateOptions { vertical_scaling: true, ..UpdateOptions::default() };
    let plain = UpdateOptions::default();
    let empty = UpdateSpec::default();
    let resize = |name: &str, r: ResourceRequirements| UpdateSpec {
        container_resources: [(name.to_owned(), r)].into(),
        ..UpdateSpec::default()
    };
    let cpu_restart = json!([{"name": "11", "resizePolicy": [{"resourceName": "cpu", "restartPolicy": "RestartContainer"}]}]);

    assert!(check_pod_needs_be_unready(&p(json!([]), Some(gated.clone())), &empty, &plain));
    assert!(!check_pod_needs_be_unready(&p(json!([]), None), &empty, &plain));
    assert!(!check_pod_needs_be_unready(
        &p(json!([]), Some(gated.clone())),
        &resize("c2", requests(&[("cpu", "2")])),
        &vertical
    ));
    assert!(check_pod_needs_be_unready(&p(json!([]), Some(gated.clone())), &empty, &vertical));
    assert!(!check_pod_needs_be_unready(&p(json!([]), None), &empty, &vertical));
    assert!(!check_pod_needs_be_unready(
        &p(
            json!([{"name": "11", "resizePolicy": [{"resourceName": "cpu", "restartPolicy": "RestartContainer"}]}, {"name": "c2"}]),
            Some(gated.clone())
        ),
        &resize("c2", requests(&[("cpu", "2")])),
        &vertical
    ));
    assert!(check_pod_needs_be_unready(
        &p(cpu_restart.clone(), Some(gated.clone())),
        &resize("11", requests(&[("cpu", "100m")])),
        &vertical
    ));
    assert!(!check_pod_needs_be_unready(
        &p(cpu_restart.clone(), Some(gated.clone())),
        &resize("11", requests(&[("memory", "100Mi")])),
        &vertical
    ));
    assert!(check_pod_needs_be_unready(
        &p(cpu_restart, Some(gated)),
        &resize("11", requests(&[("memory", "100Mi")])),
        &plain
    ));
}

#[test]
fn readiness_gate_injection() {
    let mut spec = k8s_openapi::api::core::v1::PodSpec::default();
    inject_readiness_gate(&mut spec);
    inject_readiness_gate(&mut spec);
    assert_eq!(spec.readiness_gates.as_ref().map(Vec::len), Some(1));
}

// ---- refresh ----

#[test]
fn refresh_conditions() {
    let opts = UpdateOptions::default();
    let gate = json!([{"conditionType": "InPlaceUpdateReady"}]);

    // No readiness gate: nothing.
    assert_eq!(refresh(&pod(json!({})), &opts, now()).expect("refresh"), RefreshAction::Nothing);

    // Not in-place updated yet (no status for the container): nothing.
    let waiting = pod(json!({
        "metadata": {"labels": {"controller-revision-hash": "new-revision"},
            "annotations": {STATE_ANNOTATION: r#"{"revision":"new-revision","lastContainerStatuses":{"c1":{"imageID":"img01"}}}"#}},
        "spec": {"containers": [], "readinessGates": gate}
    }));
    assert_eq!(refresh(&waiting, &opts, now()).expect("refresh"), RefreshAction::Nothing);

    // No condition yet: add it.
    let fresh = pod(json!({"spec": {"containers": [], "readinessGates": gate}}));
    let RefreshAction::MarkReady { conditions } = refresh(&fresh, &opts, now()).expect("refresh")
    else {
        panic!("expected the condition")
    };
    assert_eq!(conditions.len(), 1);
    assert_eq!(
        (conditions[0].type_.as_str(), conditions[0].status.as_str()),
        (IN_PLACE_UPDATE_READY, "True")
    );
    assert_eq!(conditions[0].last_transition_time, Some(Time(now())));

    // False: flip it, leaving the others alone.
    let unready = pod(json!({
        "spec": {"containers": [], "readinessGates": gate},
        "status": {"conditions": [{"type": "ContainersReady", "status": "True"}, {"type": "InPlaceUpdateReady", "status": "False", "reason": "StartInPlaceUpdate"}]}
    }));
    let RefreshAction::MarkReady { conditions } = refresh(&unready, &opts, now()).expect("refresh")
    else {
        panic!("expected the condition")
    };
    assert_eq!(conditions[0].status, "True");
    assert_eq!(conditions[1].status, "True");
    assert_eq!(conditions[1].reason, None);

    // Already True: nothing.
    let ready = pod(json!({
        "spec": {"containers": [], "readinessGates": gate},
        "status": {"conditions": [{"type": "ContainersReady", "status": "False"}, {"type": "InPlaceUpdateReady", "status": "True"}]}
    }));
    assert_eq!(refresh(&ready, &opts, now()).expect("refresh"), RefreshAction::Nothing);
}

fn two_batch_pod(c1_image_id: &str) -> Pod {
    let state = InPlaceUpdateState {
        revision: "new-revision".into(),
        update_timestamp: Some(Time(now())),
        last_container_statuses: last(&[("c1", "c1-img1-ID")]),
        container_batches_record: vec![batch(&["c1"])],
        next_container_images: images(&[("c2", "c2-img2")]),
        pre_check_before_next: pre_check(&["c1"]),
        ..InPlaceUpdateState::default()
    };
    pod(json!({
        "metadata": {"labels": {"controller-revision-hash": "new-revision"},
            "annotations": {STATE_ANNOTATION: serde_json::to_string(&state).expect("state")}},
        "spec": {"containers": [{"name": "c1", "image": "c1-img2"}, {"name": "c2", "image": "c2-img1"}],
            "readinessGates": [{"conditionType": "InPlaceUpdateReady"}]},
        "status": {
            "containerStatuses": [
                {"name": "c1", "image": "c1-img2", "imageID": c1_image_id, "ready": true, "restartCount": 0},
                {"name": "c2", "image": "c2-img1", "imageID": "c2-img1-ID", "ready": true, "restartCount": 0}
            ],
            "conditions": [{"type": "ContainersReady", "status": "True"}, {"type": "InPlaceUpdateReady", "status": "False"}]
        }
    }))
}

#[test]
fn refresh_next_batch() {
    let opts = UpdateOptions::default();
    // First batch not restarted yet (same image ID): wait.
    assert_eq!(
        refresh(&two_batch_pod("c1-img1-ID"), &opts, at(60)).expect("refresh"),
        RefreshAction::Nothing
    );

    // First batch runs: update c2.
    let RefreshAction::NextBatch(update) =
        refresh(&two_batch_pod("c1-img2-ID"), &opts, at(60)).expect("refresh")
    else {
        panic!("expected the next batch")
    };
    assert_eq!(update.patch["spec"], json!({"containers": [{"name": "c2", "image": "c2-img2"}]}));
    let state = update.state.expect("state");
    assert_eq!(state.last_container_statuses, last(&[("c1", "c1-img1-ID"), ("c2", "c2-img1-ID")]));
    assert_eq!(
        state.container_batches_record,
        vec![
            batch(&["c1"]),
            InPlaceUpdateContainerBatch {
                timestamp: Some(Time(at(60))),
                containers: vec!["c2".into()]
            }
        ]
    );
    assert!(state.next_container_images.is_empty());
    assert_eq!(state.pre_check_before_next, None);

    // The first batch's container is not ready yet: wait.
    let mut not_ready = two_batch_pod("c1-img2-ID");
    not_ready.status.as_mut().and_then(|s| s.container_statuses.as_mut()).expect("statuses")[0]
        .ready = false;
    assert_eq!(refresh(&not_ready, &opts, at(60)).expect("refresh"), RefreshAction::Nothing);
}

#[test]
fn refresh_errors_name_the_annotation() {
    let mut broken =
        pod(json!({"metadata": {"annotations": {GRACE_ANNOTATION: "{\"revision\":\"r\"}"}}}));
    assert_eq!(refresh(&broken, &UpdateOptions::default(), now()), Err(InPlaceError::MissingState));
    broken.metadata.annotations = Some([(STATE_ANNOTATION.to_owned(), "nope".to_owned())].into());
    let err = refresh(&broken, &UpdateOptions::default(), now()).expect_err("invalid");
    assert!(err.to_string().contains(STATE_ANNOTATION), "{err}");
}

#[test]
fn container_priorities() {
    let c = |env: Value| -> k8s_openapi::api::core::v1::Container {
        serde_json::from_value(json!({"name": "c", "env": env})).expect("container")
    };
    assert_eq!(container_priority(&c(json!([barrier(20)]))), Some(20));
    assert_eq!(container_priority(&c(json!([barrier(-3)]))), Some(-3));
    assert_eq!(container_priority(&c(json!([{"name": "KRUISE_CONTAINER_BARRIER"}]))), Some(0));
    assert_eq!(container_priority(&c(json!([{"name": "OTHER", "value": "1"}]))), None);
}

#[test]
fn upstream_state_with_nulls_reads() {
    let p = pod(json!({"metadata": {"annotations": {
        STATE_ANNOTATION: r#"{"revision":"r","updateTimestamp":"2024-05-01T10:00:00Z","lastContainerStatuses":null}"#
    }}}));
    let state = in_place_update_state(&p).expect("parse").expect("state");
    assert_eq!(state.revision, "r");
    assert_eq!(state.update_timestamp, Some(Time(now())));
}
