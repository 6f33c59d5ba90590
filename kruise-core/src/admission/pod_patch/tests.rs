use k8s_openapi::api::core::v1::{Container, Pod, Toleration};
use proptest::prelude::*;
use serde_json::json;

use super::pod_patch;

fn pod() -> Pod {
    serde_json::from_value(json!({
        "metadata": {
            "name": "web-0", "namespace": "default",
            "labels": {"app": "web", "a/b": "1"},
            "annotations": {"x~y": "2"},
            "ownerReferences": [{"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "web",
                                 "uid": "u1", "controller": true}]
        },
        "spec": {
            "containers": [
                {"name": "main", "image": "nginx:1", "env": [{"name": "A", "value": "1"}]},
                {"name": "helper", "image": "busybox"}
            ],
            "volumes": [{"name": "data", "emptyDir": {}}],
            "tolerations": [{"key": "k", "operator": "Exists"}]
        }
    }))
    .expect("a pod")
}

/// Applies `patch` to `before`'s JSON and checks that it gives `after`'s.
fn check(before: &Pod, after: &Pod) -> Option<Vec<u8>> {
    let patch = pod_patch(before.clone(), after.clone()).expect("encodes");
    let mut doc = serde_json::to_value(before).expect("json");
    if let Some(text) = &patch {
        let ops: json_patch::Patch = serde_json::from_slice(text).expect("a JSON patch");
        json_patch::patch(&mut doc, &ops).expect("applies");
    }
    assert_eq!(doc, serde_json::to_value(after).expect("json"));
    patch
}

fn container(name: &str) -> Container {
    Container { name: name.into(), image: Some(format!("{name}:1")), ..Default::default() }
}

#[test]
fn equal_pods_have_no_patch() {
    assert_eq!(check(&pod(), &pod()), None);
}

#[test]
fn labels_change_key_by_key() {
    let mut after = pod();
    let labels = after.metadata.labels.as_mut().expect("labels");
    labels.insert("zone".into(), "a".into());
    labels.remove("a/b");
    let patch = String::from_utf8(check(&pod(), &after).expect("a patch")).expect("utf-8");
    assert_eq!(
        patch,
        r#"[{"op":"remove","path":"/metadata/labels/a~1b"},{"op":"add","path":"/metadata/labels/zone","value":"a"}]"#
    );
}

#[test]
fn annotation_keys_are_escaped_in_their_paths() {
    let mut after = pod();
    let notes = after.metadata.annotations.as_mut().expect("annotations");
    notes.remove("x~y");
    notes.insert("kruise.io/a~b".into(), "3".into());
    let patch = String::from_utf8(check(&pod(), &after).expect("a patch")).expect("utf-8");
    assert_eq!(
        patch,
        r#"[{"op":"remove","path":"/metadata/annotations/x~0y"},{"op":"add","path":"/metadata/annotations/kruise.io~1a~0b","value":"3"}]"#
    );
}

#[test]
fn a_sidecar_is_one_add_and_the_app_containers_are_not_rewritten() {
    let mut after = pod();
    after.spec.as_mut().expect("spec").containers.insert(0, container("sidecar"));
    let patch = String::from_utf8(check(&pod(), &after).expect("a patch")).expect("utf-8");
    assert_eq!(
        patch,
        r#"[{"op":"add","path":"/spec/containers/0","value":{"image":"sidecar:1","name":"sidecar"}}]"#
    );
}

#[test]
fn a_change_outside_the_parts_diffs_the_whole_pod() {
    let mut after = pod();
    after.spec.as_mut().expect("spec").hostname = Some("h".into());
    after.metadata.labels.as_mut().expect("labels").insert("b".into(), "c".into());
    let patch = String::from_utf8(check(&pod(), &after).expect("a patch")).expect("utf-8");
    assert!(patch.contains("/spec/hostname") && patch.contains("/metadata/labels/b"), "{patch}");
}

/// One change a pod step may make.
#[derive(Clone, Debug)]
enum Change {
    Label(String, Option<String>),
    Annotation(String, Option<String>),
    InsertContainer(usize, String),
    Image(usize, String),
    RemoveContainer(usize),
    InitContainer(String),
    Volume(String),
    Toleration(String),
    ClearTolerations,
    Affinity(String),
    Priority(Option<i32>),
    Hostname(String),
    Phase(String),
    GenerateName(String),
}

fn key() -> impl Strategy<Value = String> {
    prop::sample::select(vec!["app", "a/b", "x~y", "zone", "k~/1", "new"]).prop_map(String::from)
}

fn change() -> impl Strategy<Value = Change> {
    prop_oneof![
        (key(), prop::option::of("[a-z]{1,3}")).prop_map(|(k, v)| Change::Label(k, v)),
        (key(), prop::option::of("[a-z]{1,3}")).prop_map(|(k, v)| Change::Annotation(k, v)),
        (0usize..4, "[a-z]{1,4}").prop_map(|(i, n)| Change::InsertContainer(i, n)),
        (0usize..4, "[a-z]{1,4}").prop_map(|(i, n)| Change::Image(i, n)),
        (0usize..4).prop_map(Change::RemoveContainer),
        "[a-z]{1,4}".prop_map(Change::InitContainer),
        "[a-z]{1,4}".prop_map(Change::Volume),
        "[a-z]{1,4}".prop_map(Change::Toleration),
        Just(Change::ClearTolerations),
        "[a-z]{1,4}".prop_map(Change::Affinity),
        prop::option::of(0i32..10).prop_map(Change::Priority),
        "[a-z]{1,4}".prop_map(Change::Hostname),
        "[A-Z][a-z]{1,4}".prop_map(Change::Phase),
        "[a-z]{1,4}".prop_map(Change::GenerateName),
    ]
}

fn apply(pod: &mut Pod, change: Change) {
    let spec = pod.spec.get_or_insert_with(Default::default);
    let set = |map: &mut Option<std::collections::BTreeMap<String, String>>, k, v| match v {
        Some(v) => {
            map.get_or_insert_with(Default::default).insert(k, v);
        }
        None => {
            if let Some(m) = map.as_mut() {
                m.remove(&k);
            }
        }
    };
    match change {
        Change::Label(k, v) => set(&mut pod.metadata.labels, k, v),
        Change::Annotation(k, v) => set(&mut pod.metadata.annotations, k, v),
        Change::InsertContainer(i, n) => {
            let at = i.min(spec.containers.len());
            spec.containers.insert(at, container(&n));
        }
        Change::Image(i, image) => {
            if let Some(c) = spec.containers.get_mut(i) {
                c.image = Some(image);
            }
        }
        Change::RemoveContainer(i) => {
            if i < spec.containers.len() {
                spec.containers.remove(i);
            }
        }
        Change::InitContainer(n) => {
            spec.init_containers.get_or_insert_with(Vec::new).push(container(&n));
        }
        Change::Volume(n) => spec.volumes.get_or_insert_with(Vec::new).insert(
            0,
            serde_json::from_value(json!({"name": n, "emptyDir": {}})).expect("a volume"),
        ),
        Change::Toleration(k) => spec
            .tolerations
            .get_or_insert_with(Vec::new)
            .push(Toleration { key: Some(k), ..Default::default() }),
        Change::ClearTolerations => spec.tolerations = None,
        Change::Affinity(zone) => {
            spec.affinity = Some(
                serde_json::from_value(json!({"nodeAffinity": {
                    "requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
                        {"matchExpressions": [{"key": "zone", "operator": "In", "values": [zone]}]}
                    ]}
                }}))
                .expect("an affinity"),
            )
        }
        Change::Priority(p) => spec.priority = p,
        Change::Hostname(h) => spec.hostname = Some(h),
        Change::Phase(p) => {
            pod.status.get_or_insert_with(Default::default).phase = Some(p);
        }
        Change::GenerateName(g) => pod.metadata.generate_name = Some(g),
    }
}

proptest! {
    /// Whatever the steps change, the patch applied to the pod's JSON gives the changed pod's.
    #[test]
    fn the_patch_turns_the_pod_into_the_changed_one(
        before in prop::collection::vec(change(), 0..4),
        changes in prop::collection::vec(change(), 0..6),
    ) {
        let mut original = pod();
        for c in before {
            apply(&mut original, c);
        }
        let mut changed = original.clone();
        for c in changes {
            apply(&mut changed, c);
        }
        let patch = check(&original, &changed);
        prop_assert_eq!(patch.is_none(), original == changed);
    }
}
