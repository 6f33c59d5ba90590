use k8s_openapi::api::core::v1::{Container, LocalObjectReference, Pod, Toleration, Volume};
use proptest::prelude::*;
use serde_json::json;

use super::PodEdit;

fn pod() -> Pod {
    serde_json::from_value(json!({
        "metadata": {
            "name": "web-0", "namespace": "default",
            "labels": {"app": "web", "a/b": "1"},
            "annotations": {"x~y": "2"}
        },
        "spec": {
            "containers": [
                {"name": "main", "image": "nginx:1", "env": [{"name": "A", "value": "1"}]},
                {"name": "helper", "image": "busybox"}
            ],
            "volumes": [{"name": "data", "emptyDir": {}}]
        }
    }))
    .expect("a pod")
}

fn container(name: &str) -> Container {
    Container { name: name.into(), image: Some(format!("{name}:1")), ..Default::default() }
}

/// Applies `change` to a copy of `before` through an edit; checks that the edit's patch turns
/// `before`'s JSON into the changed pod's, and returns the patch as text.
fn check(before: &Pod, change: impl FnOnce(&mut PodEdit<'_>)) -> Option<String> {
    let mut after = before.clone();
    let mut edit = PodEdit::new(&mut after);
    change(&mut edit);
    let patch = edit.patch().expect("encodes");
    let mut doc = serde_json::to_value(before).expect("json");
    if let Some(text) = &patch {
        let ops: json_patch::Patch = serde_json::from_slice(text).expect("a JSON patch");
        json_patch::patch(&mut doc, &ops).expect("applies");
    }
    assert_eq!(doc, serde_json::to_value(&after).expect("json"));
    patch.map(|p| String::from_utf8(p).expect("utf-8"))
}

#[test]
fn nothing_changed_has_no_patch() {
    assert_eq!(check(&pod(), |_| {}), None);
    // Parts asked for but left as they were.
    assert_eq!(
        check(&pod(), |e| {
            e.labels_mut();
            e.volumes_mut();
            e.containers_mut();
        }),
        None
    );
}

#[test]
fn inserted_containers_are_one_add_each_at_their_final_index() {
    let patch = check(&pod(), |e| {
        e.insert_container(usize::MAX, container("after"));
        e.insert_container(0, container("first"));
        e.insert_container(1, container("second"));
    })
    .expect("a patch");
    assert_eq!(
        patch,
        r#"[{"op":"add","path":"/spec/containers/0","value":{"image":"first:1","name":"first"}},{"op":"add","path":"/spec/containers/1","value":{"image":"second:1","name":"second"}},{"op":"add","path":"/spec/containers/4","value":{"image":"after:1","name":"after"}}]"#
    );
}

#[test]
fn init_containers_a_pod_lacks_are_added_as_a_list() {
    let patch = check(&pod(), |e| {
        e.insert_init_container(0, container("init-b"));
        e.insert_init_container(0, container("init-a"));
    })
    .expect("a patch");
    assert_eq!(
        patch,
        r#"[{"op":"add","path":"/spec/initContainers","value":[{"image":"init-a:1","name":"init-a"},{"image":"init-b:1","name":"init-b"}]}]"#
    );
}

#[test]
fn maps_change_key_by_key_with_escaped_paths() {
    let patch = check(&pod(), |e| {
        let labels = e.labels_mut().get_or_insert_with(Default::default);
        labels.remove("a/b");
        labels.insert("zone".into(), "a".into());
        e.annotations_mut().get_or_insert_with(Default::default).insert("k~1".into(), "v".into());
    })
    .expect("a patch");
    assert_eq!(
        patch,
        r#"[{"op":"remove","path":"/metadata/labels/a~1b"},{"op":"add","path":"/metadata/labels/zone","value":"a"},{"op":"add","path":"/metadata/annotations/k~01","value":"v"}]"#
    );
}

#[test]
fn the_whole_pod_taken_after_parts_changed_still_diffs_from_the_original() {
    check(&pod(), |e| {
        e.insert_container(0, container("sidecar"));
        e.insert_init_container(0, container("init"));
        e.labels_mut().get_or_insert_with(Default::default).insert("l".into(), "1".into());
        e.volumes_mut()
            .get_or_insert_with(Vec::new)
            .push(Volume { name: "logs".into(), ..Default::default() });
        let pod = e.pod_mut();
        pod.spec.as_mut().expect("spec").hostname = Some("h".into());
        pod.spec.as_mut().expect("spec").containers[1].image = Some("nginx:2".into());
        // Parts changed after the whole pod was taken.
        e.insert_container(usize::MAX, container("last"));
        e.annotations_mut().get_or_insert_with(Default::default).clear();
    })
    .expect("a patch");
}

#[test]
fn a_list_taken_after_insertions_keeps_its_original() {
    check(&pod(), |e| {
        e.insert_container(1, container("sidecar"));
        let list = e.containers_mut();
        list[0].image = Some("nginx:2".into());
        list.remove(2);
        e.insert_container(0, container("front"));
    })
    .expect("a patch");
}

#[test]
fn a_pod_without_a_spec_gets_one_whole() {
    let bare = Pod::default();
    let patch = check(&bare, |e| e.insert_container(0, container("sidecar"))).expect("a patch");
    assert!(patch.contains(r#""path":"/spec""#), "{patch}");
}

/// One change an edit can make.
#[derive(Clone, Debug)]
enum Change {
    InsertContainer(usize, u8),
    InsertInitContainer(usize, u8),
    ContainerImage(usize, u8),
    RemoveInitContainers,
    Label(u8, Option<u8>),
    Annotation(u8, Option<u8>),
    Volume(u8),
    AppendVolumes(u8, u8),
    Secret(u8),
    Toleration(u8),
    Affinity(bool),
    NodeSelector(Option<u8>),
    Hostname(u8),
}

fn change() -> impl Strategy<Value = Change> {
    prop_oneof![
        (0..5usize, any::<u8>()).prop_map(|(i, n)| Change::InsertContainer(i, n)),
        (0..5usize, any::<u8>()).prop_map(|(i, n)| Change::InsertInitContainer(i, n)),
        (0..5usize, any::<u8>()).prop_map(|(i, n)| Change::ContainerImage(i, n)),
        Just(Change::RemoveInitContainers),
        (0..4u8, proptest::option::of(any::<u8>())).prop_map(|(k, v)| Change::Label(k, v)),
        (0..4u8, proptest::option::of(any::<u8>())).prop_map(|(k, v)| Change::Annotation(k, v)),
        (0..3u8).prop_map(Change::Volume),
        (0..3u8, 0..3u8).prop_map(|(n, k)| Change::AppendVolumes(n, k)),
        (0..3u8).prop_map(Change::Secret),
        (0..3u8).prop_map(Change::Toleration),
        any::<bool>().prop_map(Change::Affinity),
        proptest::option::of(0..3u8).prop_map(Change::NodeSelector),
        any::<u8>().prop_map(Change::Hostname),
    ]
}

/// Keys with characters JSON pointers escape.
const KEYS: [&str; 4] = ["app", "a/b", "x~y", "zone"];

fn apply(edit: &mut PodEdit<'_>, change: &Change) {
    let set =
        |map: &mut Option<std::collections::BTreeMap<String, String>>, k: u8, v: Option<u8>| {
            let map = map.get_or_insert_with(Default::default);
            let key = KEYS[usize::from(k) % KEYS.len()].to_owned();
            match v {
                Some(v) => map.insert(key, v.to_string()),
                None => map.remove(&key),
            };
        };
    match change {
        Change::InsertContainer(i, n) => edit.insert_container(*i, container(&format!("c{n}"))),
        Change::InsertInitContainer(i, n) => {
            edit.insert_init_container(*i, container(&format!("i{n}")));
        }
        Change::ContainerImage(i, n) => {
            let list = edit.containers_mut();
            let len = list.len();
            if len > 0 {
                list[*i % len].image = Some(format!("img:{n}"));
            }
        }
        Change::RemoveInitContainers => *edit.init_containers_mut() = None,
        Change::Label(k, v) => set(edit.labels_mut(), *k, *v),
        Change::Annotation(k, v) => set(edit.annotations_mut(), *k, *v),
        Change::Volume(n) => edit
            .volumes_mut()
            .get_or_insert_with(Vec::new)
            .push(Volume { name: format!("v{n}"), ..Default::default() }),
        Change::AppendVolumes(n, k) => edit.append_volumes(
            (0..*k).map(|i| Volume { name: format!("a{n}-{i}"), ..Default::default() }).collect(),
        ),
        Change::Secret(n) => edit
            .image_pull_secrets_mut()
            .get_or_insert_with(Vec::new)
            .push(LocalObjectReference { name: format!("s{n}") }),
        Change::Toleration(n) => edit
            .tolerations_mut()
            .get_or_insert_with(Vec::new)
            .insert(0, Toleration { key: Some(format!("t{n}")), ..Default::default() }),
        Change::Affinity(on) => *edit.affinity_mut() = on.then(Default::default),
        Change::NodeSelector(n) => {
            *edit.node_selector_mut() = n.map(|n| [(format!("k{n}"), "v".to_owned())].into());
        }
        Change::Hostname(n) => {
            edit.pod_mut().spec.get_or_insert_with(Default::default).hostname =
                Some(format!("h{n}"));
        }
    }
}

fn base() -> impl Strategy<Value = Pod> {
    prop_oneof![
        Just(pod()),
        Just(Pod::default()),
        Just({
            let mut p = pod();
            let spec = p.spec.as_mut().expect("spec");
            spec.init_containers = Some(vec![container("init-0")]);
            spec.tolerations = Some(Vec::new());
            p.metadata.labels = None;
            p
        }),
    ]
}

proptest! {
    /// Whatever the steps change, in whatever order, the patch turns the pod as sent into the
    /// pod as changed, and it is empty exactly when the two are equal.
    #[test]
    fn the_patch_turns_the_pod_into_the_changed_pod(
        before in base(),
        changes in proptest::collection::vec(change(), 0..12),
    ) {
        let mut after = before.clone();
        let patch = {
            let mut edit = PodEdit::new(&mut after);
            for c in &changes {
                apply(&mut edit, c);
            }
            edit.patch().expect("encodes")
        };
        let before_json = serde_json::to_value(&before).expect("json");
        let after_json = serde_json::to_value(&after).expect("json");
        let mut doc = before_json.clone();
        if let Some(text) = &patch {
            let ops: json_patch::Patch = serde_json::from_slice(text).expect("a JSON patch");
            json_patch::patch(&mut doc, &ops).expect("applies");
        }
        prop_assert_eq!(&doc, &after_json);
        prop_assert_eq!(patch.is_none(), before_json == after_json);
    }
}
