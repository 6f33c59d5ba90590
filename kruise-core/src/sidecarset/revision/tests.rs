//! Unit tests of SidecarSet revisions, after upstream's `sidecarset_processor_test.go`
//! (`TestTruncateHistory`, `TestGetActiveRevisions`) and `history_control` behaviour.

use super::*;
use crate::revision::hash_revision_bytes;
use crate::sidecarset::{InjectionGates, InjectionInput, SidecarSetCandidate, inject};
use k8s_openapi::api::core::v1::{Container, PodSpec};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{LabelSelector, Time};
use kruise_api::apps::v1beta1::{
    SidecarContainer, SidecarSetInjectRevision, SidecarSetSpec, SidecarSetStatus,
};

const NS: &str = "kruise-system";

fn map(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
    pairs.iter().map(|(k, v)| ((*k).to_owned(), (*v).to_owned())).collect()
}

fn set(image: &str) -> SidecarSet {
    let mut s = SidecarSet::new(
        "mesh",
        SidecarSetSpec {
            selector: Some(LabelSelector {
                match_labels: Some(map(&[("app", "web")])),
                ..Default::default()
            }),
            containers: vec![SidecarContainer {
                container: Container {
                    name: "mesh".into(),
                    image: Some(image.into()),
                    ..Default::default()
                },
                ..Default::default()
            }],
            ..Default::default()
        },
    );
    s.metadata.uid = Some("uid-1".into());
    s.metadata.labels = Some(map(&[("team", "infra")]));
    s.metadata.annotations = Some(map(&[
        (annotations::SIDECARSET_HASH, &format!("hash-{image}")),
        (annotations::SIDECARSET_HASH_WITHOUT_IMAGE, "hash-no-image"),
    ]));
    s
}

/// The revision of `set(image)` numbered `number`, as if read back from the API server.
fn stored(image: &str, number: i64) -> ControllerRevision {
    let mut r = new_revision(&set(image), NS, number, 0).expect("revision");
    r.metadata.creation_timestamp = Some(Time("2024-05-01T10:00:00Z".parse().expect("time")));
    r
}

fn names(revisions: &[ControllerRevision]) -> Vec<String> {
    revisions.iter().map(revision_name).collect()
}

fn plan(set: &SidecarSet, revisions: &[ControllerRevision], pods: &[Pod]) -> RevisionPlan {
    plan_revisions(&RevisionInput { sidecar_set: set, namespace: NS, revisions, pods })
        .expect("plan")
}

fn pod_on(revision: &str) -> Pod {
    let entry =
        json!({"mesh": {"hash": "h", "sidecarSetName": "mesh", "controllerRevision": revision}});
    Pod {
        metadata: ObjectMeta {
            name: Some(format!("pod-{revision}")),
            annotations: Some(map(&[(annotations::SIDECARSET_HASH, &entry.to_string())])),
            ..Default::default()
        },
        ..Default::default()
    }
}

/// What Go writes for `set("mesh:1")`'s revision data: the recorded fields in a map (sorted
/// keys), a container's `resources`, `upgradeStrategy` and `shareVolumePolicy` written although
/// empty (non-pointer structs), empty lists as `null`.
const GO_DATA: &str = r#"{"spec":{"$patch":"replace","containers":[{"image":"mesh:1","name":"mesh","resources":{},"shareVolumePolicy":{},"upgradeStrategy":{}}],"imagePullSecrets":null,"initContainers":null,"patchPodMetadata":null,"volumes":null}}"#;

#[test]
fn data_records_the_injected_fields_as_go_writes_them() {
    let data = revision_data(&set("mesh:1")).expect("data");
    assert_eq!(gojson::encode_sorted(&data), GO_DATA);
    // Fields injection does not restore (selector, strategies) are not recorded.
    let mut other = set("mesh:1");
    other.spec.update_strategy.paused = true;
    other.spec.revision_history_limit = Some(3);
    assert_eq!(revision_data(&other).expect("data"), data);
}

#[test]
fn a_revision_is_named_by_the_hash_of_its_data_and_collision_count() {
    let r = new_revision(&set("mesh:1"), NS, 1, 0).expect("revision");
    let hash = hash_revision_bytes(GO_DATA.as_bytes(), Some(0));
    assert_eq!(r.metadata.name.as_deref(), Some(format!("mesh-{hash}").as_str()));
    let again = new_revision(&set("mesh:1"), NS, 7, 0).expect("revision");
    assert_eq!(again.metadata.name, r.metadata.name, "the number does not name it");
    let bumped = new_revision(&set("mesh:1"), NS, 1, 1).expect("revision");
    assert_ne!(bumped.metadata.name, r.metadata.name);
    let changed = new_revision(&set("mesh:2"), NS, 1, 0).expect("revision");
    assert_ne!(changed.metadata.name, r.metadata.name);
}

#[test]
fn a_revision_carries_labels_annotations_owner_and_namespace() {
    let mut s = set("mesh:1");
    s.spec.custom_version = "v1".into();
    let r = new_revision(&s, NS, 3, 0).expect("revision");
    assert_eq!(r.metadata.namespace.as_deref(), Some(NS));
    assert_eq!(
        r.metadata.labels,
        Some(map(&[("team", "infra"), (NAME_LABEL, "mesh"), (CUSTOM_VERSION_LABEL, "v1")]))
    );
    let notes = r.metadata.annotations.as_ref().expect("annotations");
    assert_eq!(notes.get(annotations::SIDECARSET_HASH).map(String::as_str), Some("hash-mesh:1"));
    let owner = &r.metadata.owner_references.as_ref().expect("owners")[0];
    assert_eq!(
        (owner.api_version.as_str(), owner.kind.as_str(), owner.name.as_str(), owner.uid.as_str()),
        ("apps.kruise.io/v1beta1", "SidecarSet", "mesh", "uid-1")
    );
    assert_eq!((owner.controller, owner.block_owner_deletion), (Some(true), Some(true)));
    assert_eq!(rev::revision_number(&r), 3);
    // Without a custom version there is no custom-version label.
    let plain = new_revision(&set("mesh:1"), NS, 1, 0).expect("revision");
    assert!(!plain.metadata.labels.expect("labels").contains_key(CUSTOM_VERSION_LABEL));
}

#[test]
fn equal_revisions_ignore_encoding_differences() {
    let ours = stored("mesh:1", 1);
    // The same content as serde writes it: no empty structs, no null fields.
    let mut terse = ours.clone();
    let body = json!({"spec": {"containers": [{"name": "mesh", "image": "mesh:1"}]}});
    terse = rev::build_revision(terse.metadata.clone(), body, 1);
    assert!(equal_revision(&ours, &terse));
    assert!(!equal_revision(&ours, &stored("mesh:2", 1)));
}

#[test]
fn the_first_plan_creates_revision_one() {
    let s = set("mesh:1");
    let p = plan(&s, &[], &[]);
    let expected = new_revision(&s, NS, 1, 0).expect("revision");
    assert_eq!(p.actions, vec![Action::CreateRevision { revision: Box::new(expected.clone()) }]);
    assert_eq!(p.latest_revision, revision_name(&expected));
    assert_eq!(p.collision_count, 0);
    assert_eq!(p.latest(), Some(&expected));
}

#[test]
fn an_unchanged_set_writes_nothing() {
    let old = [stored("mesh:0", 1), stored("mesh:1", 2)];
    let p = plan(&set("mesh:1"), &old, &[]);
    assert!(p.actions.is_empty(), "{:?}", p.actions);
    assert_eq!(p.latest_revision, revision_name(&old[1]));
    assert_eq!(names(&p.revisions), names(&old));
}

#[test]
fn a_change_creates_the_next_revision() {
    let old = [stored("mesh:1", 1)];
    let p = plan(&set("mesh:2"), &old, &[]);
    let [Action::CreateRevision { revision }] = p.actions.as_slice() else {
        panic!("one creation: {:?}", p.actions)
    };
    assert_eq!(rev::revision_number(revision), 2);
    assert_eq!(p.latest_revision, revision_name(revision));
    assert_ne!(p.latest_revision, revision_name(&old[0]));
}

#[test]
fn a_rollback_renumbers_the_old_revision() {
    let old = [stored("mesh:1", 1), stored("mesh:2", 2)];
    let p = plan(&set("mesh:1"), &old, &[]);
    assert_eq!(
        p.actions,
        vec![Action::PatchRevision {
            name: revision_name(&old[0]),
            patch: Patch::merge(json!({"revision": 3}))
        }]
    );
    assert_eq!(p.latest_revision, revision_name(&old[0]));
    // The renumbered revision is now the newest.
    assert_eq!(names(&p.revisions), [revision_name(&old[1]), revision_name(&old[0])]);
    assert_eq!(p.latest().map(rev::revision_number), Some(3));
}

#[test]
fn the_custom_version_label_follows_the_spec() {
    let old = [stored("mesh:1", 1)];
    let mut s = set("mesh:1");
    s.spec.custom_version = "v2".into();
    let p = plan(&s, &old, &[]);
    assert_eq!(
        p.actions,
        vec![Action::PatchRevision {
            name: revision_name(&old[0]),
            patch: Patch::merge(json!({"metadata": {"labels": {CUSTOM_VERSION_LABEL: "v2"}}}))
        }]
    );
    let latest = p.latest().expect("latest");
    assert_eq!(custom_version_of(latest), Some("v2"));
}

#[test]
fn a_taken_name_raises_the_collision_count() {
    let s = set("mesh:1");
    // Another object squats the name the revision would get.
    let mut squatter = new_revision(&set("other"), NS, 1, 0).expect("revision");
    squatter.metadata.name = new_revision(&s, NS, 1, 0).expect("revision").metadata.name;
    squatter.metadata.labels = Some(map(&[(NAME_LABEL, "someone-else")]));
    let p = plan(&s, &[squatter.clone()], &[]);
    assert_eq!(p.collision_count, 1);
    let expected = new_revision(&s, NS, 1, 1).expect("revision");
    assert_eq!(p.latest_revision, revision_name(&expected));
    assert_ne!(p.latest_revision, revision_name(&squatter));
}

#[test]
fn create_conflicts_reuse_an_equal_revision_or_retry_under_a_new_name() {
    let s = set("mesh:1");
    let attempted = new_revision(&s, NS, 1, 0).expect("revision");
    assert_eq!(
        resolve_create_conflict(&s, &attempted.clone(), &attempted, 0),
        CreateConflict::UseExisting { name: revision_name(&attempted) }
    );
    match resolve_create_conflict(&s, &stored("mesh:9", 1), &attempted, 0) {
        CreateConflict::Retry { collision_count, revision } => {
            assert_eq!(collision_count, 1);
            assert_eq!(
                revision.metadata.name,
                new_revision(&s, NS, 1, 1).expect("r").metadata.name
            );
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn only_the_sets_own_revisions_in_the_namespace_count() {
    let s = set("mesh:1");
    let mut elsewhere = stored("mesh:1", 5);
    elsewhere.metadata.namespace = Some("default".into());
    let mut foreign = stored("mesh:1", 6);
    foreign.metadata.owner_references.as_mut().expect("owners")[0].uid = "uid-old".into();
    let mut unlabelled = stored("mesh:1", 7);
    unlabelled.metadata.labels = None;
    let mut orphan = stored("mesh:0", 2);
    orphan.metadata.owner_references = None;
    let all = [elsewhere, foreign, unlabelled, orphan.clone()];
    assert_eq!(
        names(&owned_revisions(&s, NS, &all).into_iter().cloned().collect::<Vec<_>>()),
        [revision_name(&orphan)]
    );
    // None of the others is equal to the set: a new revision after the orphan.
    let p = plan(&s, &all, &[]);
    let [Action::CreateRevision { revision }] = p.actions.as_slice() else {
        panic!("{:?}", p.actions)
    };
    assert_eq!(rev::revision_number(revision), 3);
    // The foreign revisions in the namespace hold its name: the collision count goes up.
    assert_eq!(p.collision_count, 1);
}

fn history(count: i64) -> Vec<ControllerRevision> {
    (1..=count).map(|i| stored(&format!("mesh:{i}"), i)).collect()
}

#[test]
fn history_beyond_the_limit_goes_oldest_first() {
    let old = history(4);
    let mut s = set("mesh:4");
    s.spec.revision_history_limit = Some(2);
    let p = plan(&s, &old, &[]);
    let deleted: Vec<&str> = p
        .actions
        .iter()
        .map(|a| match a {
            Action::DeleteRevision { name } => name.as_str(),
            other => panic!("{other:?}"),
        })
        .collect();
    assert_eq!(deleted, [revision_name(&old[0]), revision_name(&old[1])]);
    assert_eq!(names(&p.revisions), [revision_name(&old[2]), revision_name(&old[3])]);
    assert_eq!(p.over_limit, 0);
}

#[test]
fn the_default_limit_is_ten_and_at_least_one_is_kept() {
    let old = history(11);
    let p = plan(&set("mesh:11"), &old, &[]);
    assert_eq!(p.actions, vec![Action::DeleteRevision { name: revision_name(&old[0]) }]);
    let mut s = set("mesh:11");
    s.spec.revision_history_limit = Some(0);
    let p = plan(&s, &old, &[]);
    assert_eq!(p.actions.len(), 10, "all but the latest");
    assert_eq!(names(&p.revisions), [revision_name(&old[10])]);
}

#[test]
fn revisions_in_use_are_kept() {
    let old = history(5);
    let mut s = set("mesh:6");
    s.spec.revision_history_limit = Some(2);
    // Pods on revisions 1 and 3; revision 2 pinned by name; revision 4 by custom version.
    let mut labelled = old.clone();
    labelled[3]
        .metadata
        .labels
        .as_mut()
        .expect("labels")
        .insert(CUSTOM_VERSION_LABEL.into(), "canary".into());
    labelled[1]
        .metadata
        .labels
        .as_mut()
        .expect("labels")
        .insert(CUSTOM_VERSION_LABEL.into(), "canary".into());
    s.spec.injection_strategy.revision = Some(SidecarSetInjectRevision {
        revision_name: Some(revision_name(&old[1])),
        custom_version: Some("canary".into()),
        policy: None,
    });
    let pods = [pod_on(&revision_name(&old[0])), pod_on(&revision_name(&old[2]))];
    let p = plan(&s, &labelled, &pods);
    // Six revisions with the new one; only revision 5 is free to go.
    let deleted: Vec<&Action> =
        p.actions.iter().filter(|a| matches!(a, Action::DeleteRevision { .. })).collect();
    assert_eq!(deleted, [&Action::DeleteRevision { name: revision_name(&old[4]) }]);
    assert_eq!(p.over_limit, 3);
    // Without the pins and the pods, the four oldest go.
    let mut free = set("mesh:6");
    free.spec.revision_history_limit = Some(2);
    let p = plan(&free, &old, &[]);
    assert_eq!(p.actions.len(), 5, "one creation, four deletions: {:?}", p.actions);
    assert_eq!(p.over_limit, 0);
}

#[test]
fn the_status_collision_count_is_the_starting_point() {
    let mut s = set("mesh:1");
    s.status = Some(SidecarSetStatus { collision_count: Some(4), ..Default::default() });
    let p = plan(&s, &[], &[]);
    assert_eq!(p.collision_count, 4);
    assert_eq!(p.latest_revision, revision_name(&new_revision(&s, NS, 1, 4).expect("r")));
}

#[test]
fn a_pinned_revision_injects_what_it_recorded() {
    let first = stored("mesh:1", 1);
    let mut s = set("mesh:2");
    s.spec.injection_strategy.revision = Some(SidecarSetInjectRevision {
        revision_name: Some(revision_name(&first)),
        custom_version: None,
        policy: None,
    });
    let pod = Pod {
        metadata: ObjectMeta {
            name: Some("web-0".into()),
            namespace: Some("default".into()),
            labels: Some(map(&[("app", "web")])),
            ..Default::default()
        },
        spec: Some(PodSpec {
            containers: vec![Container { name: "app".into(), ..Default::default() }],
            ..Default::default()
        }),
        ..Default::default()
    };
    let out = inject(&InjectionInput {
        pod,
        namespace_labels: Some(BTreeMap::new()),
        sidecar_sets: vec![SidecarSetCandidate {
            sidecar_set: s.into(),
            revisions: vec![first.clone()],
            draw: 0.5,
            selectors: None,
        }],
        gates: InjectionGates::default(),
        now: "2024-05-01T10:00:00Z".parse().expect("time"),
    })
    .expect("injects");
    let spec = out.pod.spec.as_ref().expect("spec");
    assert_eq!(spec.containers[0].name, "mesh");
    assert_eq!(spec.containers[0].image.as_deref(), Some("mesh:1"));
    assert_eq!(pod_revision(&out.pod, "mesh"), Some(revision_name(&first)));
    let hashes = read_hash_annotation(&out.pod, annotations::SIDECARSET_HASH).expect("hashes");
    assert_eq!(hashes["mesh"].hash, "hash-mesh:1", "the revision's hash annotation");
}
