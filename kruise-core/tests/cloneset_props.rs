//! Invariants of the CloneSet planner over arbitrary clusters and specs.
//!
//! A small, pure simulator applies a plan to its snapshot (created pods start pending and not
//! ready, patches are applied with the strategic-merge-patch module, deletions remove the
//! object) so that the properties can speak about the planned outcome:
//!
//! - the outcome never has fewer available pods than `replicas - maxUnavailable` allows
//!   (unless there were already fewer; then it has no fewer than before);
//! - never more pods than `replicas + maxSurge` (unless there already were more);
//! - never fewer old-revision pods than the partition keeps (pods the user marked for
//!   deletion aside);
//! - no pod is both deleted and updated, created twice or deleted twice;
//! - planning again on the outcome repeats none of the plan's actions, and a few more rounds
//!   settle (no actions at all) as long as no pod becomes ready meanwhile; every round keeps
//!   the invariants above.

mod support;

use std::collections::{BTreeMap, BTreeSet};

use jiff::{SignedDuration, Timestamp};
use k8s_openapi::api::core::v1::{Pod, PodCondition, PodStatus};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, Time};
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;
use kruise_api::apps::common::{Lifecycle, LifecycleHook};
use kruise_api::apps::v1beta1::{
    CloneSet, CloneSetPodUpdatePolicy, CloneSetSpec, CloneSetStatus, CloneSetUpdateStrategy,
    RollingUpdateCloneSetStrategy,
};
use kruise_core::cloneset::{
    Action, CloneSetObject, CloneSetPlan, CloneSetSnapshot, PodPatchPurpose, SnapshotPod, plan,
};
use kruise_core::smp::PatchSchema;
use proptest::prelude::*;
use serde_json::{Value, json};
use support::{bump, patched};

const NAME: &str = "demo";
const UID: &str = "11111111-2222-3333-4444-555555555555";
const HOLD: &str = "example.io/hold";

fn now() -> Timestamp {
    Timestamp::from_second(1_714_557_600).expect("valid")
}

fn template(image: &str) -> Value {
    json!({
        "metadata": {"labels": {"app": "demo"}},
        "spec": {"containers": [{"name": "main", "image": image}]}
    })
}

/// The spec knobs a case varies.
#[derive(Clone, Debug)]
struct Knobs {
    replicas: i32,
    partition: Option<IntOrString>,
    max_unavailable: Option<IntOrString>,
    max_surge: Option<IntOrString>,
    scale_max_unavailable: Option<IntOrString>,
    in_place: bool,
    paused: bool,
    min_ready_seconds: i32,
    pre_delete_hook: bool,
    in_place_hook: bool,
    mark_not_ready: bool,
    pods_to_delete: Vec<usize>,
    consistent: bool,
}

/// One pod of a case.
#[derive(Clone, Debug)]
struct PodKnobs {
    new_revision: bool,
    running: bool,
    ready: bool,
    ready_long: bool,
    scheduled: bool,
    state: &'static str,
    specified_delete: bool,
    held: bool,
}

fn int_or_percent(max_int: i32) -> impl Strategy<Value = IntOrString> {
    prop_oneof![
        (0..=max_int).prop_map(IntOrString::Int),
        prop_oneof![Just("0%"), Just("20%"), Just("50%"), Just("100%")]
            .prop_map(|s| IntOrString::String(s.to_owned())),
    ]
}

fn knobs() -> impl Strategy<Value = Knobs> {
    (
        (
            0..=8i32,
            proptest::option::of(int_or_percent(9)),
            proptest::option::of(int_or_percent(3)),
            proptest::option::of(int_or_percent(3)),
            proptest::option::of(int_or_percent(3)),
        ),
        (
            any::<bool>(),
            proptest::bool::weighted(0.15),
            prop_oneof![Just(0), Just(30)],
            any::<bool>(),
            any::<bool>(),
            any::<bool>(),
            proptest::collection::vec(0..12usize, 0..3),
            proptest::bool::weighted(0.2),
        ),
    )
        .prop_map(
            |((replicas, partition, mu, ms, smu), (ip, paused, mrs, pdh, iph, mark, ptd, c))| {
                Knobs {
                    replicas,
                    partition,
                    max_unavailable: mu,
                    max_surge: ms,
                    scale_max_unavailable: smu,
                    in_place: ip,
                    paused,
                    min_ready_seconds: mrs,
                    pre_delete_hook: pdh,
                    in_place_hook: iph,
                    mark_not_ready: mark,
                    pods_to_delete: ptd,
                    consistent: c,
                }
            },
        )
}

fn pod_knobs() -> impl Strategy<Value = PodKnobs> {
    (
        any::<bool>(),
        proptest::bool::weighted(0.85),
        proptest::bool::weighted(0.8),
        proptest::bool::weighted(0.8),
        proptest::bool::weighted(0.9),
        prop_oneof![
            6 => Just("Normal"),
            1 => Just("PreparingNormal"),
            1 => Just("PreparingDelete"),
            1 => Just("PreparingUpdate"),
            1 => Just("Updated"),
        ],
        proptest::bool::weighted(0.1),
        proptest::bool::weighted(0.3),
    )
        .prop_map(|(new_revision, running, ready, ready_long, scheduled, state, sd, held)| {
            PodKnobs {
                new_revision,
                running,
                ready,
                ready_long,
                scheduled,
                state,
                specified_delete: sd,
                held,
            }
        })
}

fn cloneset(k: &Knobs, image: &str, status: Option<CloneSetStatus>) -> CloneSet {
    let hook = |on: bool| {
        on.then(|| LifecycleHook {
            labels_handler: [(HOLD.to_owned(), "true".to_owned())].into(),
            finalizers_handler: Vec::new(),
            mark_pod_not_ready: k.mark_not_ready,
        })
    };
    let lifecycle = (k.pre_delete_hook || k.in_place_hook).then(|| Lifecycle {
        pre_delete: hook(k.pre_delete_hook),
        in_place_update: hook(k.in_place_hook),
        pre_normal: None,
    });
    CloneSet {
        metadata: ObjectMeta {
            name: Some(NAME.into()),
            namespace: Some("default".into()),
            uid: Some(UID.into()),
            generation: Some(2),
            resource_version: Some("100".into()),
            ..Default::default()
        },
        spec: CloneSetSpec {
            replicas: Some(k.replicas),
            selector: Some(
                serde_json::from_value(json!({"matchLabels": {"app": "demo"}})).expect("selector"),
            ),
            template: serde_json::from_value(template(image)).expect("template"),
            scale_strategy: kruise_api::apps::v1beta1::CloneSetScaleStrategy {
                max_unavailable: k.scale_max_unavailable.clone(),
                pods_to_delete: k.pods_to_delete.iter().map(|i| format!("{NAME}-p{i}")).collect(),
                ..Default::default()
            },
            update_strategy: CloneSetUpdateStrategy {
                type_: None,
                rolling_update: Some(RollingUpdateCloneSetStrategy {
                    partition: k.partition.clone(),
                    max_unavailable: k.max_unavailable.clone(),
                    max_surge: k.max_surge.clone(),
                    pod_update_policy: Some(if k.in_place {
                        CloneSetPodUpdatePolicy::InPlaceIfPossible
                    } else {
                        CloneSetPodUpdatePolicy::ReCreate
                    }),
                    paused: k.paused,
                    ..Default::default()
                }),
            },
            min_ready_seconds: k.min_ready_seconds,
            lifecycle,
            ..Default::default()
        },
        status,
    }
}

/// The revision the planner creates for `cs` on an empty cluster with `existing` revisions.
fn revision_for(
    cs: CloneSet,
    existing: Vec<k8s_openapi::api::apps::v1::ControllerRevision>,
) -> k8s_openapi::api::apps::v1::ControllerRevision {
    let mut snapshot = CloneSetSnapshot::new(cs);
    snapshot.revisions = existing;
    let p = plan(&snapshot, now());
    p.actions
        .into_iter()
        .find_map(|a| match a {
            Action::CreateRevision { revision } => Some(*revision),
            _ => None,
        })
        .expect("a new template gets a revision")
}

fn make_pod(i: usize, k: &PodKnobs, revision: &str, image: &str) -> Pod {
    let mut labels: BTreeMap<String, String> = [
        ("app", "demo"),
        ("controller-revision-hash", revision),
        ("pod-template-hash", revision.rsplit('-').next().unwrap_or(revision)),
        ("apps.kruise.io/cloneset-instance-id", &format!("p{i}")),
        ("lifecycle.apps.kruise.io/state", k.state),
    ]
    .into_iter()
    .map(|(a, b)| (a.to_owned(), b.to_owned()))
    .collect();
    if k.specified_delete {
        labels.insert("apps.kruise.io/specified-delete".into(), "true".into());
    }
    if k.held {
        labels.insert(HOLD.into(), "true".into());
    }
    let since = if k.ready_long {
        now() - SignedDuration::from_secs(3600)
    } else {
        now() - SignedDuration::from_secs(5)
    };
    let pod = json!({
        "metadata": {
            "name": format!("{NAME}-p{i}"),
            "namespace": "default",
            "uid": format!("uid-p{i}"),
            "resourceVersion": "10",
            "labels": labels,
            "creationTimestamp": kruise_core::pod::format_rfc3339(now() - SignedDuration::from_secs(7200 - i as i64)),
            "ownerReferences": [{"apiVersion": "apps.kruise.io/v1beta1", "kind": "CloneSet", "name": NAME, "uid": UID, "controller": true}],
        },
        "spec": {
            "nodeName": if k.scheduled { format!("node-{}", i % 3) } else { String::new() },
            "containers": [{"name": "main", "image": image}],
            "readinessGates": [{"conditionType": "InPlaceUpdateReady"}],
        },
    });
    let mut pod: Pod = serde_json::from_value(pod).expect("pod");
    if !k.scheduled
        && let Some(spec) = pod.spec.as_mut()
    {
        spec.node_name = None;
    }
    pod.status = Some(PodStatus {
        phase: Some(if k.running { "Running" } else { "Pending" }.into()),
        conditions: Some(vec![
            PodCondition {
                type_: "Ready".into(),
                status: if k.ready { "True" } else { "False" }.into(),
                last_transition_time: Some(Time(since)),
                ..Default::default()
            },
            PodCondition {
                type_: "InPlaceUpdateReady".into(),
                status: "True".into(),
                ..Default::default()
            },
        ]),
        ..Default::default()
    });
    pod
}

fn snapshot_for(k: &Knobs, pods: &[PodKnobs]) -> CloneSetSnapshot {
    let old = revision_for(cloneset(k, "app:v1", None), Vec::new());
    let new = revision_for(cloneset(k, "app:v2", None), vec![old.clone()]);
    let old_name = old.metadata.name.clone().unwrap_or_default();
    let new_name = new.metadata.name.clone().unwrap_or_default();
    let current = if k.consistent { new_name.clone() } else { old_name.clone() };
    let status = CloneSetStatus {
        current_revision: current,
        update_revision: new_name.clone(),
        observed_generation: 1,
        ..Default::default()
    };
    let mut snapshot = CloneSetSnapshot::new(cloneset(k, "app:v2", Some(status)));
    snapshot.revisions = vec![old, new];
    snapshot.pods = pods
        .iter()
        .enumerate()
        .map(|(i, p)| {
            let new_rev = p.new_revision || k.consistent;
            let (rev, image) = if new_rev { (&new_name, "app:v2") } else { (&old_name, "app:v1") };
            SnapshotPod::from(make_pod(i, p, rev, image))
        })
        .collect();
    snapshot
}

// ---------------------------------------------------------------------------------------------
// The simulator.
// ---------------------------------------------------------------------------------------------

/// The snapshot after `plan` is carried out, with the cache fully caught up.
fn apply(snapshot: &CloneSetSnapshot, plan: &CloneSetPlan) -> CloneSetSnapshot {
    let mut out = snapshot.clone();
    let mut cs = out.cloneset.to_v1beta1().expect("v1beta1");
    for action in &plan.actions {
        match action {
            Action::CreateRevision { revision } => out.revisions.push((**revision).clone()),
            Action::PatchRevision { name, patch } => {
                for r in &mut out.revisions {
                    if r.metadata.name.as_deref() == Some(name.as_str()) {
                        *r = patched(r, patch.body(), None);
                    }
                }
            }
            Action::DeleteRevision { name } => {
                out.revisions.retain(|r| r.metadata.name.as_deref() != Some(name.as_str()));
            }
            Action::CreatePvc { pvc } => {
                let mut pvc = (**pvc).clone();
                pvc.metadata.uid = pvc.metadata.name.clone();
                out.pvcs.push(pvc);
            }
            Action::PatchPvc { name, patch } => {
                for p in &mut out.pvcs {
                    if p.metadata.name.as_deref() == Some(name.as_str()) {
                        *p = patched(p, patch.body(), None);
                    }
                }
            }
            Action::DeletePvc { name, .. } => {
                out.pvcs.retain(|p| p.metadata.name.as_deref() != Some(name.as_str()));
            }
            Action::CreatePod { pod } => {
                let mut pod = (**pod).clone();
                pod.metadata.uid =
                    Some(format!("uid-{}", pod.metadata.name.clone().unwrap_or_default()));
                pod.metadata.resource_version = Some("1".into());
                pod.metadata.creation_timestamp = Some(Time(now()));
                pod.status =
                    Some(PodStatus { phase: Some("Pending".into()), ..Default::default() });
                out.pods.push(SnapshotPod::from(pod));
            }
            Action::PatchPod { name, patch, .. } | Action::PatchPodStatus { name, patch, .. } => {
                for p in &mut out.pods {
                    if p.metadata().name.as_deref() == Some(name.as_str()) {
                        let mut new: Pod =
                            patched(p.pod().as_ref(), patch.body(), Some(PatchSchema::Pod));
                        bump(&mut new.metadata);
                        *p = SnapshotPod::from(new);
                    }
                }
            }
            Action::DeletePod { name, .. } => {
                out.pods.retain(|p| p.metadata().name.as_deref() != Some(name.as_str()));
            }
            Action::PatchWorkload { patch } => {
                let body = patch.body().clone();
                cs = patched(&cs, &body, None);
            }
            other => panic!("the simulator does not know {other:?}"),
        }
    }
    if let Some(status) = &plan.status {
        cs.status = Some(status.clone());
    }
    out.cloneset = CloneSetObject::from(cs);
    out.expectations = plan.expectations.clone();
    out
}

// ---------------------------------------------------------------------------------------------
// Measures of a snapshot.
// ---------------------------------------------------------------------------------------------

fn budgets(snapshot: &CloneSetSnapshot) -> kruise_core::intstr::CloneSetBudget {
    let cs = snapshot.cloneset.to_v1beta1().expect("v1beta1");
    kruise_core::intstr::cloneset_budget(&cs.spec).0
}

fn active(snapshot: &CloneSetSnapshot) -> impl Iterator<Item = &Pod> {
    snapshot.pods.iter().map(|p| p.pod().as_ref()).filter(|p| kruise_core::pod::is_pod_active(p))
}

fn available(snapshot: &CloneSetSnapshot, at: Timestamp) -> usize {
    let cs = snapshot.cloneset.to_v1beta1().expect("v1beta1");
    active(snapshot)
        .filter(|p| kruise_core::pod::is_available_for_cloneset(p, cs.spec.min_ready_seconds, at))
        .count()
}

fn label<'a>(pod: &'a Pod, key: &str) -> &'a str {
    kruise_core::pod::labels_of(pod).get(key).map(String::as_str).unwrap_or("")
}

/// Old-revision pods the partition protects: not marked for deletion, not on their way out.
fn protected_old(snapshot: &CloneSetSnapshot, old: &str) -> usize {
    let cs = snapshot.cloneset.to_v1beta1().expect("v1beta1");
    let listed = cs.spec.scale_strategy.pods_to_delete;
    active(snapshot)
        .filter(|p| !listed.iter().any(|n| Some(n.as_str()) == p.metadata.name.as_deref()))
        .filter(|p| label(p, "controller-revision-hash") == old)
        .filter(|p| label(p, "apps.kruise.io/specified-delete").is_empty())
        .filter(|p| label(p, "lifecycle.apps.kruise.io/state") != "PreparingDelete")
        .count()
}

/// (kind, target) of every action, to compare plans.
fn keys(plan: &CloneSetPlan) -> Vec<(String, String)> {
    plan.actions
        .iter()
        .map(|a| {
            let value = serde_json::to_value(a).expect("encode");
            let kind = value["action"].as_str().unwrap_or("").to_owned();
            // Patches repeat only with the same body.
            let kind = match value.get("patch") {
                Some(patch) => format!("{kind}/{patch}"),
                None => kind,
            };
            (kind, a.target().to_owned())
        })
        .collect()
}

/// The invariants of one plan against the snapshot it was made for; returns the outcome.
fn check_round(
    snapshot: &CloneSetSnapshot,
    first: &CloneSetPlan,
    at: Timestamp,
) -> Result<CloneSetSnapshot, TestCaseError> {
    prop_assert!(first.blocked.is_none(), "blocked: {:?}", first.blocked);
    let b = budgets(snapshot);
    let outcome = apply(snapshot, first);

    // No pod is both deleted and updated; nothing is created or deleted twice.
    let mut deleted = BTreeSet::new();
    let mut created = BTreeSet::new();
    let mut updated = BTreeSet::new();
    for a in &first.actions {
        match a {
            Action::DeletePod { name, .. } => {
                prop_assert!(deleted.insert(name.clone()), "{name} deleted twice")
            }
            Action::CreatePod { .. } => {
                prop_assert!(created.insert(a.target().to_owned()), "created twice")
            }
            Action::PatchPod {
                name,
                purpose: PodPatchPurpose::InPlaceUpdate | PodPatchPurpose::SpecifiedDelete,
                ..
            } => {
                updated.insert(name.clone());
            }
            _ => {}
        }
    }
    prop_assert!(
        deleted.is_disjoint(&updated),
        "deleted and updated: {:?}",
        deleted.intersection(&updated).collect::<Vec<_>>()
    );

    // Availability: never below replicas - maxUnavailable because of the plan.
    let before = available(snapshot, at);
    let after = available(&outcome, at);
    let floor = usize::try_from((b.replicas - b.max_unavailable).max(0)).unwrap_or(0);
    prop_assert!(
        after >= before.min(floor),
        "available {before} -> {after}, floor {floor}\n{:#?}",
        keys(first)
    );

    // Size: never above replicas + maxSurge because of the plan.
    let count = |s: &CloneSetSnapshot| active(s).count();
    let ceiling = usize::try_from(b.replicas.saturating_add(b.max_surge).max(0)).unwrap_or(0);
    prop_assert!(
        count(&outcome) <= count(snapshot).max(ceiling),
        "pods {} -> {}, ceiling {ceiling}",
        count(snapshot),
        count(&outcome)
    );

    // Partition: old-revision pods never fall below what the partition keeps.
    let cs = snapshot.cloneset.to_v1beta1().expect("v1beta1");
    let status = cs.status.clone().unwrap_or_default();
    if status.current_revision != status.update_revision {
        let old = status.current_revision.as_str();
        // Measured against the original spec, so podsToDelete truncation does not count.
        let mut after = outcome.clone();
        after.cloneset = snapshot.cloneset.clone();
        let (b0, b1) = (protected_old(snapshot, old), protected_old(&after, old));
        let keep = usize::try_from(b.partition.max(0)).unwrap_or(0);
        prop_assert!(b1 >= b0.min(keep), "old pods {b0} -> {b1}, partition {keep}");
    }
    Ok(outcome)
}

/// Plans, applies and plans again until nothing is left to do (no pod becomes ready in
/// between), checking every round and that no round repeats an action of the round before.
///
/// Progress can be one pod at a time (an in-place update with a lifecycle takes three rounds
/// per pod: update, `Updated`, `Normal`), so the bound grows with the number of pods.
fn check(snapshot: &CloneSetSnapshot) -> Result<(), TestCaseError> {
    let mut state = snapshot.clone();
    let mut previous: BTreeSet<(String, String)> = BTreeSet::new();
    let rounds = 15 + 4 * (snapshot.pods.len() + 16);
    for _ in 0..rounds {
        let p = plan(&state, now());
        if p.actions.is_empty() {
            return Ok(());
        }
        for key in keys(&p) {
            prop_assert!(!previous.contains(&key), "repeated {key:?}");
        }
        previous = keys(&p).into_iter().collect();
        state = check_round(&state, &p, now())?;
    }
    let last = plan(&state, now());
    prop_assert!(last.actions.is_empty(), "still acting after {rounds} rounds: {:#?}", keys(&last));
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 300, ..ProptestConfig::default() })]

    #[test]
    fn planner_invariants(k in knobs(), pods in proptest::collection::vec(pod_knobs(), 0..12)) {
        let snapshot = snapshot_for(&k, &pods);
        check(&snapshot)?;
    }
}

/// A recreate rollout of `replicas` old, ready pods with `partition` and `maxUnavailable: 2`:
/// the knobs, and the knobs of each pod.
fn recreate_rollout(replicas: i32, partition: i32) -> (Knobs, PodKnobs) {
    let k = Knobs {
        replicas,
        partition: Some(IntOrString::Int(partition)),
        max_unavailable: Some(IntOrString::Int(2)),
        max_surge: None,
        scale_max_unavailable: None,
        in_place: false,
        paused: false,
        min_ready_seconds: 0,
        pre_delete_hook: false,
        in_place_hook: false,
        mark_not_ready: false,
        pods_to_delete: Vec::new(),
        consistent: false,
    };
    let pod = PodKnobs {
        new_revision: false,
        running: true,
        ready: true,
        ready_long: true,
        scheduled: true,
        state: "Normal",
        specified_delete: false,
        held: false,
    };
    (k, pod)
}

#[test]
fn same_snapshot_same_plan() {
    let (k, pod) = recreate_rollout(5, 2);
    let snapshot = snapshot_for(&k, &vec![pod; 5]);
    let a = plan(&snapshot, now());
    assert_eq!(a, plan(&snapshot, now()));
    // Two old pods are kept by the partition; the budget lets two be recreated.
    let marked = a
        .actions
        .iter()
        .filter(|a| matches!(a, Action::PatchPod { purpose: PodPatchPurpose::SpecifiedDelete, .. }))
        .count();
    assert_eq!(marked, 2, "{a:#?}");
}

/// `snapshot` with every pod created half a second later: the pods keep their order, but
/// their ranks no longer pack into integers (see `ActiveRank::packed`).
fn half_second_later(snapshot: &CloneSetSnapshot) -> CloneSetSnapshot {
    let mut out = snapshot.clone();
    for p in &mut out.pods {
        let mut pod = p.pod().as_ref().clone();
        if let Some(Time(t)) = pod.metadata.creation_timestamp.as_mut() {
            *t += SignedDuration::from_millis(500);
        }
        *p = SnapshotPod::from(pod);
    }
    out
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 200, ..ProptestConfig::default() })]

    /// The update order compares packed integers when every time is a whole second, and the
    /// ranks field by field otherwise: both give the same plan.
    #[test]
    fn packed_and_unpacked_ranks_plan_alike(
        k in knobs(),
        pods in proptest::collection::vec(pod_knobs(), 0..12),
    ) {
        let snapshot = snapshot_for(&k, &pods);
        let later = half_second_later(&snapshot);
        prop_assert!(later.pods.iter().all(|p| p.facts().active_rank().packed().is_none()));
        let (a, b) = (plan(&snapshot, now()), plan(&later, now()));
        prop_assert_eq!(a.actions, b.actions);
        prop_assert_eq!(a.events, b.events);
        prop_assert_eq!(a.status, b.status);
    }
}

#[test]
fn unpacked_ranks_choose_the_same_pods() {
    let (k, pod) = recreate_rollout(6, 0);
    let snapshot = snapshot_for(&k, &vec![pod; 6]);
    let later = half_second_later(&snapshot);
    let marked = |p: &CloneSetPlan| -> Vec<String> {
        p.actions
            .iter()
            .filter_map(|a| match a {
                Action::PatchPod { name, purpose: PodPatchPurpose::SpecifiedDelete, .. } => {
                    Some(name.clone())
                }
                _ => None,
            })
            .collect()
    };
    // The newest pods go first (Kubernetes' active-pods order), with packed ranks or without.
    let want = vec![format!("{NAME}-p5"), format!("{NAME}-p4")];
    assert_eq!(marked(&plan(&snapshot, now())), want);
    assert_eq!(marked(&plan(&later, now())), want);
}

// ---------------------------------------------------------------------------------------------
// A pure cluster: a kubelet that starts created pods and a clock that moves.
// ---------------------------------------------------------------------------------------------

/// The scheduler's and the kubelet's step at `at`: a pending pod is bound to a node, runs,
/// and is ready from `at` on.
fn kubelet(snapshot: &mut CloneSetSnapshot, at: Timestamp) {
    for pod in &mut snapshot.pods {
        if pod.status().and_then(|s| s.phase.clone()).as_deref() != Some("Pending") {
            continue;
        }
        let mut started: Pod = pod.pod().as_ref().clone();
        if let Some(spec) = started.spec.as_mut() {
            spec.node_name.get_or_insert_with(|| "node-0".to_owned());
        }
        started.status = Some(PodStatus {
            phase: Some("Running".into()),
            conditions: Some(vec![
                PodCondition {
                    type_: "Ready".into(),
                    status: "True".into(),
                    last_transition_time: Some(Time(at)),
                    ..Default::default()
                },
                PodCondition {
                    type_: "InPlaceUpdateReady".into(),
                    status: "True".into(),
                    ..Default::default()
                },
            ]),
            ..Default::default()
        });
        bump(&mut started.metadata);
        *pod = SnapshotPod::from(started);
    }
}

/// A recreate rollout with the knobs' budgets, partition and `minReadySeconds`, run to the
/// end on the pure cluster: every round keeps the invariants of [`check_round`] at the
/// round's time, pods become ready a round after they are created and the clock moves 10 s a
/// round, so rollouts of several waves and `minReadySeconds` are explored. At the end the
/// plan is empty, every pod is ready, there are `replicas` of them, and the update revision
/// holds all but what the partition keeps.
fn rollout_on_a_pure_cluster(k: &Knobs) -> Result<(), TestCaseError> {
    let ready = PodKnobs {
        new_revision: false,
        running: true,
        ready: true,
        ready_long: true,
        scheduled: true,
        state: "Normal",
        specified_delete: false,
        held: false,
    };
    let count = usize::try_from(k.replicas).unwrap_or(0);
    let mut state = snapshot_for(k, &vec![ready; count]);
    let b = budgets(&state);
    // Budgets that allow no progress at all hold the rollout by design.
    prop_assume!(b.max_unavailable > 0 || b.max_surge > 0);
    let no_scale = |v: &IntOrString| {
        matches!(v, IntOrString::Int(0)) || matches!(v, IntOrString::String(s) if s == "0%")
    };
    prop_assume!(!k.scale_max_unavailable.as_ref().is_some_and(no_scale));
    let cs = state.cloneset.to_v1beta1().expect("v1beta1");
    let update = cs.status.clone().unwrap_or_default().update_revision;
    let mut at = now();
    let mut quiet = false;
    for _ in 0..(40 + 6 * count) {
        let p = plan(&state, at);
        quiet = p.actions.is_empty() && p.requeue_after.is_none();
        state = check_round(&state, &p, at)?;
        kubelet(&mut state, at);
        at += SignedDuration::from_secs(10);
        if quiet {
            break;
        }
    }
    let last = plan(&state, at);
    prop_assert!(quiet && last.actions.is_empty(), "still acting: {:#?}", keys(&last));
    prop_assert_eq!(active(&state).count(), count);
    prop_assert_eq!(available(&state, at), count, "every pod ready and available");
    let updated = active(&state).filter(|p| label(p, "controller-revision-hash") == update).count();
    let keep = usize::try_from(b.partition.clamp(0, k.replicas)).unwrap_or(0);
    prop_assert_eq!(updated, count - keep, "all but the partition updated");
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 200, ..ProptestConfig::default() })]

    #[test]
    fn recreate_rollouts_finish_on_a_pure_cluster(k in knobs()) {
        let k = Knobs {
            in_place: false,
            paused: false,
            pre_delete_hook: false,
            in_place_hook: false,
            pods_to_delete: Vec::new(),
            consistent: false,
            ..k
        };
        rollout_on_a_pure_cluster(&k)?;
    }
}
