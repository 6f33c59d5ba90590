//! Planner decisions for the failed-pod back-off and image pre-download.

use std::collections::BTreeMap;
use std::sync::Arc;

use jiff::{SignedDuration, Timestamp};
use k8s_openapi::api::apps::v1::ControllerRevision;
use k8s_openapi::api::core::v1::{Node, Pod, PodCondition, PodStatus};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, Time};
use kruise_api::apps::v1beta1::{DaemonSet, DaemonSetStatus, ImagePullJob};
use serde_json::{Value, json};

use super::{DaemonSetPlan, DaemonSetSnapshot, FeatureGates, SnapshotNode, eligibility, plan};
use crate::revision as rev;
use crate::workload::{Action, DeletePurpose, SnapshotPod};

fn at(secs: i64) -> Timestamp {
    Timestamp::from_second(1_700_000_000 + secs).expect("time")
}

fn daemonset(image: &str, rolling_update: Value, annotations: Value) -> DaemonSet {
    serde_json::from_value(json!({
        "apiVersion": "apps.kruise.io/v1beta1",
        "kind": "DaemonSet",
        "metadata": {
            "name": "ds", "namespace": "default", "uid": "ds-uid", "generation": 1,
            "annotations": annotations,
        },
        "spec": {
            "selector": {"matchLabels": {"app": "d"}},
            "template": {
                "metadata": {"labels": {"app": "d"}, "annotations": {"note": "x"}},
                "spec": {
                    "containers": [
                        {"name": "c", "image": image},
                        {"name": "side", "image": "side:v1"}
                    ],
                    "imagePullSecrets": [{"name": "regcred"}]
                }
            },
            "updateStrategy": {"type": "RollingUpdate", "rollingUpdate": rolling_update}
        }
    }))
    .expect("daemonset")
}

fn node(name: &str) -> SnapshotNode {
    let node = Node {
        metadata: ObjectMeta { name: Some(name.into()), ..ObjectMeta::default() },
        ..Node::default()
    };
    SnapshotNode::new(Arc::new(node))
}

/// The revision the planner creates for `ds`, numbered `number`.
fn revision_of(ds: &DaemonSet, number: i64) -> ControllerRevision {
    let plan = plan(&DaemonSetSnapshot::new(ds.clone()), at(0));
    let mut revision = plan
        .actions
        .iter()
        .find_map(|a| match a {
            Action::CreateRevision { revision } => Some(revision.as_ref().clone()),
            _ => None,
        })
        .expect("a revision is created");
    rev::set_revision_number(&mut revision, number);
    revision
}

fn hash_of(revision: &ControllerRevision) -> String {
    revision
        .metadata
        .labels
        .as_ref()
        .and_then(|l| l.get("controller-revision-hash"))
        .cloned()
        .expect("hash")
}

fn pod_on(ds: &DaemonSet, node: &str, hash: &str, phase: &str) -> Pod {
    let mut pod = eligibility::pod_for_node(&ds.spec.template, node);
    let name = format!("ds-{node}");
    let meta = &mut pod.metadata;
    meta.name = Some(name.clone());
    meta.namespace = Some("default".into());
    meta.uid = Some(format!("uid-{name}"));
    meta.resource_version = Some("1".into());
    meta.creation_timestamp = Some(Time(at(0)));
    meta.labels
        .get_or_insert_with(Default::default)
        .insert("controller-revision-hash".into(), hash.into());
    meta.owner_references = Some(vec![rev::controller_ref(ds)]);
    if let Some(spec) = pod.spec.as_mut() {
        spec.node_name = Some(node.into());
    }
    let ready = phase == "Running";
    pod.status = Some(PodStatus {
        phase: Some(phase.into()),
        conditions: Some(vec![PodCondition {
            type_: "Ready".into(),
            status: if ready { "True" } else { "False" }.into(),
            last_transition_time: Some(Time(at(0))),
            ..PodCondition::default()
        }]),
        ..PodStatus::default()
    });
    pod
}

fn deleted(plan: &DaemonSetPlan) -> Vec<(&str, DeletePurpose)> {
    plan.actions
        .iter()
        .filter_map(|a| match a {
            Action::DeletePod { name, purpose, .. } => Some((name.as_str(), *purpose)),
            _ => None,
        })
        .collect()
}

/// Two nodes with a running pod each at the current revision, and a failed one on `n2`.
fn failed_pod_snapshot() -> DaemonSetSnapshot {
    let mut ds = daemonset("img:v1", json!({"maxUnavailable": 1}), json!({}));
    let revision = revision_of(&ds, 1);
    let hash = hash_of(&revision);
    ds.status =
        Some(DaemonSetStatus { update_revision: hash.clone(), ..DaemonSetStatus::default() });
    let mut snapshot = DaemonSetSnapshot::new(ds.clone());
    snapshot.nodes = vec![node("n1"), node("n2")];
    snapshot.revisions = vec![revision];
    snapshot.pods = vec![
        SnapshotPod::from(pod_on(&ds, "n1", &hash, "Running")),
        SnapshotPod::from(pod_on(&ds, "n2", &hash, "Failed")),
    ];
    snapshot
}

#[test]
fn a_failed_pod_outside_back_off_is_deleted_with_a_warning() {
    let mut snapshot = failed_pod_snapshot();
    // A back-off that is over, and one on another node, hold nothing up.
    snapshot.failed_pod_backoff = BTreeMap::from([("n2".into(), at(10)), ("n1".into(), at(99))]);
    let plan = plan(&snapshot, at(10));
    assert_eq!(deleted(&plan), [("ds-n2", DeletePurpose::Finished)]);
    let warning = plan.events.iter().find(|e| e.reason == "FailedDaemonPod").expect("event");
    assert_eq!(
        warning.message,
        "Found failed daemon pod default/ds-n2 on node n2, will try to kill it"
    );
}

#[test]
fn a_failed_pod_in_back_off_stays_and_the_round_looks_again_when_it_ends() {
    let mut snapshot = failed_pod_snapshot();
    snapshot.failed_pod_backoff =
        BTreeMap::from([("n2".into(), at(12) + SignedDuration::from_millis(500))]);
    let plan = plan(&snapshot, at(10));
    assert!(deleted(&plan).is_empty(), "{:?}", plan.actions);
    assert!(
        !plan.actions.iter().any(|a| matches!(a, Action::CreatePod { .. })),
        "no second pod on n2"
    );
    assert!(plan.events.iter().all(|e| e.reason != "FailedDaemonPod"));
    assert_eq!(plan.requeue_after, Some(SignedDuration::from_secs(3)), "2.5 s, rounded up");
}

/// A DaemonSet moved from `img:v1` to `img:v2` over three nodes still running v1 pods.
fn update_snapshot(
    rolling_update: Value,
    annotations: Value,
) -> (DaemonSetSnapshot, ControllerRevision) {
    let old_ds = daemonset("img:v1", rolling_update.clone(), annotations.clone());
    let old = revision_of(&old_ds, 1);
    let mut ds = daemonset("img:v2", rolling_update, annotations);
    let update = revision_of(&ds, 2);
    ds.status = Some(DaemonSetStatus {
        desired_number_scheduled: 3,
        current_number_scheduled: 3,
        updated_number_scheduled: 0,
        update_revision: hash_of(&old),
        ..DaemonSetStatus::default()
    });
    let mut snapshot = DaemonSetSnapshot::new(ds.clone());
    snapshot.feature_gates = FeatureGates::default().with_pre_download_image(true);
    snapshot.nodes = vec![node("n1"), node("n2"), node("n3")];
    snapshot.revisions = vec![old.clone(), update.clone()];
    let old_hash = hash_of(&old);
    snapshot.pods = ["n1", "n2", "n3"]
        .iter()
        .map(|n| SnapshotPod::from(pod_on(&old_ds, n, &old_hash, "Running")))
        .collect();
    (snapshot, update)
}

fn jobs(plan: &DaemonSetPlan) -> Vec<&ImagePullJob> {
    plan.actions
        .iter()
        .filter_map(|a| match a {
            Action::CreateImagePullJob { job } => Some(job.as_ref()),
            _ => None,
        })
        .collect()
}

fn revision_label_patches(plan: &DaemonSetPlan) -> Vec<(String, Value)> {
    plan.actions
        .iter()
        .filter_map(|a| match a {
            Action::PatchRevision { name, patch } => Some((name.clone(), patch.body().clone())),
            _ => None,
        })
        .collect()
}

#[test]
fn a_partitioned_update_pre_downloads_the_changed_image() {
    let annotations = json!({
        "apps.kruise.io/image-predownload-parallelism": "2",
        "apps.kruise.io/image-predownload-timeout-seconds": "60",
    });
    let (snapshot, update) =
        update_snapshot(json!({"partition": 1, "maxUnavailable": 1}), annotations);
    let name = update.metadata.name.clone().expect("name");
    let hash = hash_of(&update);
    let plan = plan(&snapshot, at(0));
    let jobs = jobs(&plan);
    assert_eq!(jobs.len(), 1, "only the container whose image changed: {jobs:?}");
    let job = serde_json::to_value(jobs[0]).expect("json");
    assert_eq!(job["metadata"]["name"], json!(format!("{name}-c")));
    assert_eq!(job["metadata"]["namespace"], "default");
    assert_eq!(
        job["metadata"]["labels"],
        json!({"app": "d", "controller.kubernetes.io/hash": hash})
    );
    let owner = &job["metadata"]["ownerReferences"][0];
    assert_eq!(
        (owner["kind"].clone(), owner["uid"].clone(), owner["controller"].clone()),
        (json!("DaemonSet"), json!("ds-uid"), json!(true))
    );
    let spec = &job["spec"];
    assert_eq!(spec["image"], "img:v2");
    assert_eq!(spec["pullSecrets"], json!(["regcred"]));
    assert_eq!(spec["parallelism"], 2);
    assert_eq!(spec["pullPolicy"], json!({"timeoutSeconds": 60, "backoffLimit": 1}));
    assert_eq!(spec["completionPolicy"], json!({"type": "Always", "ttlSecondsAfterFinished": 600}));
    assert_eq!(
        spec["podSelector"],
        json!({
            "matchLabels": {"app": "d"},
            "matchExpressions": [{"key": "controller-revision-hash", "operator": "NotIn", "values": [name, hash]}]
        })
    );
    assert_eq!(spec["sandboxConfig"]["annotations"], json!({"note": "x"}));
    let created = plan.events.iter().find(|e| e.reason == "CreatedImagePullJob").expect("event");
    assert_eq!(created.message, format!("created ImagePullJob {name}-c for image: img:v2"));
    assert!(created.after_action.is_some());
    assert_eq!(
        revision_label_patches(&plan),
        [(
            name,
            json!({"metadata": {"labels": {"apps.kruise.io/pre-predownload-created": "true"}}})
        )]
    );

    // Off by default.
    let mut off = snapshot.clone();
    off.feature_gates = FeatureGates::default();
    let plan = super::plan(&off, at(0));
    assert!(
        !plan
            .actions
            .iter()
            .any(|a| matches!(a, Action::CreateImagePullJob { .. } | Action::PatchRevision { .. }))
    );
}

#[test]
fn an_update_in_one_batch_is_marked_ignored() {
    let (snapshot, update) = update_snapshot(json!({"maxUnavailable": "100%"}), json!({}));
    let plan = plan(&snapshot, at(0));
    assert!(jobs(&plan).is_empty());
    assert_eq!(
        revision_label_patches(&plan),
        [(
            update.metadata.name.clone().expect("name"),
            json!({"metadata": {"labels": {"apps.kruise.io/image-predownload-ignored": "true"}}})
        )]
    );
}

#[test]
fn a_first_revision_gets_no_job() {
    let (mut snapshot, _) = update_snapshot(json!({"partition": 1}), json!({}));
    snapshot.revisions.remove(0);
    snapshot.pods.clear();
    let mut ds = snapshot.daemonset.to_v1beta1().expect("v1beta1");
    ds.status = None;
    snapshot.daemonset = ds.into();
    let plan = plan(&snapshot, at(0));
    assert!(jobs(&plan).is_empty());
    assert!(revision_label_patches(&plan).is_empty());
}

#[test]
fn a_revision_already_handled_gets_no_job() {
    for key in
        ["apps.kruise.io/pre-predownload-created", "apps.kruise.io/image-predownload-ignored"]
    {
        let (mut snapshot, _) = update_snapshot(json!({"partition": 1}), json!({}));
        let labels = snapshot.revisions[1].metadata.labels.get_or_insert_with(Default::default);
        labels.insert(key.into(), "true".into());
        let plan = plan(&snapshot, at(0));
        assert!(jobs(&plan).is_empty(), "{key}");
        assert!(revision_label_patches(&plan).is_empty(), "{key}");
    }
}

#[test]
fn jobs_go_once_every_pod_is_updated() {
    let (mut snapshot, update) = update_snapshot(json!({"partition": 1}), json!({}));
    snapshot.image_pull_jobs = vec![format!("{}-c", update.metadata.name.clone().expect("name"))];
    // While the update runs, an existing job is not created again.
    let plan = plan(&snapshot, at(0));
    assert!(jobs(&plan).is_empty());
    assert_eq!(revision_label_patches(&plan).len(), 1);

    let mut ds = snapshot.daemonset.to_v1beta1().expect("v1beta1");
    ds.status = Some(DaemonSetStatus {
        desired_number_scheduled: 3,
        updated_number_scheduled: 3,
        update_revision: hash_of(&update),
        ..DaemonSetStatus::default()
    });
    snapshot.daemonset = ds.into();
    let plan = super::plan(&snapshot, at(0));
    let removed: Vec<&Action> =
        plan.actions.iter().filter(|a| matches!(a, Action::DeleteImagePullJob { .. })).collect();
    assert_eq!(
        removed,
        [&Action::DeleteImagePullJob { name: snapshot.image_pull_jobs[0].clone() }]
    );
}

/// `--assign-pods-by-scheduler=false`: new pods carry `spec.nodeName` and no pin.
#[test]
fn without_the_scheduler_new_pods_are_bound_by_node_name() {
    let ds = daemonset("app:v1", json!({}), json!({}));
    let created = |assign_by_scheduler: bool| -> Vec<Pod> {
        let mut snapshot = DaemonSetSnapshot::new(ds.clone());
        snapshot.nodes = vec![node("n1"), node("n2")];
        snapshot.revisions = vec![revision_of(&ds, 1)];
        snapshot.options.assign_by_scheduler = assign_by_scheduler;
        plan(&snapshot, at(0))
            .actions
            .iter()
            .filter_map(|a| match a {
                Action::CreatePod { pod } => Some(pod.build().into_owned()),
                _ => None,
            })
            .collect()
    };
    let bound = created(false);
    assert_eq!(bound.len(), 2);
    for pod in &bound {
        let spec = pod.spec.as_ref().expect("spec");
        assert!(spec.node_name.is_some());
        assert!(spec.affinity.as_ref().and_then(|a| a.node_affinity.as_ref()).is_none());
    }
    let scheduled = created(true);
    assert!(scheduled.iter().all(|p| p.spec.as_ref().is_some_and(|s| s.node_name.is_none())));
    let targets: Vec<_> = scheduled.iter().filter_map(eligibility::target_node_name).collect();
    assert_eq!(targets, ["n1", "n2"]);
}

/// `DaemonSetPruneIneligibleNodes`: a pod left on a node that should no longer run one (a
/// NoSchedule taint it does not tolerate) is rolled with the others while the gate is off
/// (upstream's default); with the gate on it is not a candidate of the rollout.
#[test]
fn pruning_ineligible_nodes_frees_their_share_of_the_budget() {
    let (mut snapshot, _) = update_snapshot(json!({"maxUnavailable": 1}), json!({}));
    // n3 gains a NoSchedule taint the pods do not tolerate: no new pod goes there, and the
    // old one may stay.
    let mut tainted = snapshot.nodes[2].node().as_ref().clone();
    tainted.spec = Some(
        serde_json::from_value(json!({"taints": [
        {"key": "maintenance", "value": "true", "effect": "NoSchedule"}]}))
        .expect("spec"),
    );
    snapshot.nodes[2] = SnapshotNode::new(Arc::new(tainted));
    // n3's old pod is not ready: without the gate it is the one unavailable pod the budget
    // allows.
    let mut unready: Pod = (**snapshot.pods[2].pod()).clone();
    if let Some(status) = unready.status.as_mut() {
        status.conditions = Some(vec![PodCondition {
            type_: "Ready".into(),
            status: "False".into(),
            ..PodCondition::default()
        }]);
    }
    snapshot.pods[2] = SnapshotPod::from(unready);
    let updates = |plan: &DaemonSetPlan| -> Vec<String> {
        deleted(plan)
            .into_iter()
            .filter(|(_, p)| *p == DeletePurpose::Recreate)
            .map(|(n, _)| n.to_owned())
            .collect()
    };
    let off = plan(&snapshot, at(10));
    snapshot.feature_gates = snapshot.feature_gates.clone().with_prune_ineligible_nodes(true);
    let on = plan(&snapshot, at(10));
    assert_eq!(updates(&off), ["ds-n3", "ds-n2"], "off: n3's pod is rolled too");
    assert_eq!(updates(&on), ["ds-n2"], "on: n3's pod is left out of the rollout");
}
