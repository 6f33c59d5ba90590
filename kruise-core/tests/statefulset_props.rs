//! Invariants of the Advanced StatefulSet planner over arbitrary sets and pods.
//!
//! A small pure cluster (`support::statefulset`) carries a plan out (created pods start
//! pending, deleted pods start terminating) and lets time pass (terminating pods go, pending
//! pods run and become ready), so the properties speak about outcomes:
//!
//! - no two pods ever hold the same ordinal, and no pod is created on a reserved ordinal or
//!   outside the replicas' ordinals;
//! - under OrderedReady a pod is created only when every pod before it is running, ready and
//!   available, one per round, and scale-in removes the highest ordinal first, one per round;
//! - the rolling update never makes more than `maxUnavailable` replicas unavailable, and never
//!   moves a pod the partition keeps;
//! - planning again on a plan's outcome repeats none of its writes;
//! - run to the end, a rollout leaves exactly the replicas' ordinals, `partition` of them at
//!   the old revision and the rest at the new one.

mod support;

use std::collections::BTreeSet;

use k8s_openapi::api::core::v1::Pod;
use kruise_api::apps::v1beta1::{StatefulSet, StatefulSetStatus};
use kruise_core::statefulset::{FeatureGates, StatefulSetPlan, StatefulSetSnapshot, plan};
use kruise_core::workload::{Action, DeletePurpose, PodPatchPurpose, SnapshotPod};
use proptest::prelude::*;
use serde_json::json;
use support::statefulset::{self as sts, PodState, RevisionRef};

/// The spec knobs a case varies.
#[derive(Clone, Debug)]
struct Knobs {
    replicas: i32,
    parallel: bool,
    partition: i32,
    max_unavailable: i32,
    in_place: bool,
    unordered: bool,
    reserved: Vec<i32>,
    start: i32,
    scale_budget: Option<i32>,
    min_ready_seconds: i32,
}

/// One pod of the starting cluster.
#[derive(Clone, Debug)]
struct Seed {
    ordinal: i32,
    new_revision: bool,
    phase: &'static str,
    ready: bool,
    terminating: bool,
    ready_for: i64,
}

fn knobs() -> impl Strategy<Value = Knobs> {
    (
        (0..7i32, any::<bool>(), 0..8i32, 1..4i32, any::<bool>(), any::<bool>()),
        (
            proptest::collection::vec(0..9i32, 0..3),
            0..3i32,
            proptest::option::of(1..4i32),
            prop_oneof![Just(0), Just(30)],
        ),
    )
        .prop_map(
            |(
                (replicas, parallel, partition, max_unavailable, in_place, unordered),
                (reserved, start, scale_budget, min_ready_seconds),
            )| Knobs {
                replicas,
                parallel,
                partition,
                max_unavailable,
                in_place,
                unordered: unordered && parallel,
                reserved,
                start,
                scale_budget: scale_budget.filter(|_| parallel),
                min_ready_seconds,
            },
        )
}

fn seeds() -> impl Strategy<Value = Vec<Seed>> {
    proptest::collection::btree_map(
        0..10i32,
        (
            any::<bool>(),
            prop_oneof![6 => Just("Running"), 2 => Just("Pending"), 1 => Just("Failed")],
            prop_oneof![4 => Just(true), 1 => Just(false)],
            prop_oneof![6 => Just(false), 1 => Just(true)],
            prop_oneof![Just(5i64), Just(3600i64)],
        ),
        0..7,
    )
    .prop_map(|pods| {
        pods.into_iter()
            .map(|(ordinal, (new_revision, phase, ready, terminating, ready_for))| Seed {
                ordinal,
                new_revision,
                phase,
                ready,
                terminating,
                ready_for,
            })
            .collect()
    })
}

fn gates() -> FeatureGates {
    serde_json::from_value(json!({"StatefulSetStartOrdinal": true})).expect("gates")
}

fn set(k: &Knobs) -> StatefulSet {
    let mut rolling = json!({
        "partition": k.partition,
        "maxUnavailable": k.max_unavailable,
        "podUpdatePolicy": if k.in_place { "InPlaceIfPossible" } else { "ReCreate" },
        "minReadySeconds": k.min_ready_seconds,
    });
    if k.unordered {
        rolling["unorderedUpdate"] = json!({});
    }
    let mut spec = json!({
        "replicas": k.replicas,
        "podManagementPolicy": if k.parallel { "Parallel" } else { "OrderedReady" },
        "selector": {"matchLabels": {"app": "web"}},
        "reserveOrdinals": k.reserved,
        "ordinals": {"start": k.start},
        "template": {
            "metadata": {"labels": {"app": "web"}},
            "spec": {
                "containers": [{"name": "main", "image": "nginx:2"}],
                "readinessGates": [{"conditionType": "InPlaceUpdateReady"}]
            }
        },
        "updateStrategy": {"type": "RollingUpdate", "rollingUpdate": rolling},
    });
    if let Some(budget) = k.scale_budget {
        spec["scaleStrategy"] = json!({"maxUnavailable": budget});
    }
    serde_json::from_value(json!({
        "apiVersion": "apps.kruise.io/v1beta1",
        "kind": "StatefulSet",
        "metadata": {"name": sts::NAME, "namespace": "default", "uid": sts::UID, "generation": 1},
        "spec": spec,
    }))
    .expect("set")
}

/// The replicas' ordinals for `k`.
fn replica_ordinals(k: &Knobs) -> Vec<i32> {
    let reserved: BTreeSet<i32> = k.reserved.iter().copied().collect();
    (k.start..).filter(|o| !reserved.contains(o)).take(k.replicas as usize).collect()
}

struct Case {
    snapshot: StatefulSetSnapshot,
    old: String,
    new: String,
}

fn case(k: &Knobs, seeds: &[Seed]) -> Case {
    let mut set = set(k);
    let old_set = sts::with_image(&set, "nginx:1");
    let old = sts::revision_of(&old_set, 1);
    let new = sts::revision_of(&set, 2);
    let (old_name, new_name) = (sts::revision_name(&old), sts::revision_name(&new));
    set.status = Some(StatefulSetStatus {
        observed_generation: 1,
        current_revision: old_name.clone(),
        update_revision: new_name.clone(),
        collision_count: Some(0),
        ..Default::default()
    });
    let pods: Vec<Pod> = seeds
        .iter()
        .map(|s| {
            let state = PodState {
                ordinal: s.ordinal,
                revision: if s.new_revision {
                    RevisionRef::Update
                } else {
                    RevisionRef::Earlier(0)
                },
                phase: s.phase.into(),
                ready: s.ready,
                ready_for: s.ready_for,
                terminating: s.terminating,
                ..PodState::default()
            };
            let (template, name) =
                if s.new_revision { (&set, &new_name) } else { (&old_set, &old_name) };
            sts::pod(&set, template, name, &state)
        })
        .collect();
    let mut snapshot = StatefulSetSnapshot::new(set);
    snapshot.pods = pods.into_iter().map(SnapshotPod::from).collect();
    snapshot.revisions = vec![old, new];
    snapshot.feature_gates = gates();
    Case { snapshot, old: old_name, new: new_name }
}

fn ordinal(pod: &Pod) -> i32 {
    let name = pod.metadata.name.as_deref().unwrap_or_default();
    name.rsplit('-').next().and_then(|o| o.parse().ok()).unwrap_or(-1)
}

fn revision(pod: &Pod) -> &str {
    kruise_core::pod::labels_of(pod)
        .get("controller-revision-hash")
        .map(String::as_str)
        .unwrap_or("")
}

fn healthy(pod: &Pod, min_ready_seconds: i32) -> bool {
    pod.metadata.deletion_timestamp.is_none()
        && kruise_core::pod::is_running_and_available(pod, min_ready_seconds, sts::now())
        && matches!(
            kruise_core::pod::labels_of(pod)
                .get("lifecycle.apps.kruise.io/state")
                .map(String::as_str),
            None | Some("Normal")
        )
}

fn pod_at(snapshot: &StatefulSetSnapshot, ordinal_: i32) -> Option<&Pod> {
    snapshot.pods.iter().map(|p| p.pod().as_ref()).find(|p| ordinal(p) == ordinal_)
}

/// The pods the rolling update moves: recreated, specified-deleted, or updated in place.
fn moved(plan: &StatefulSetPlan) -> BTreeSet<String> {
    plan.actions
        .iter()
        .filter_map(|a| match a {
            Action::DeletePod {
                name,
                purpose: DeletePurpose::Recreate | DeletePurpose::SpecifiedDelete,
                ..
            } => Some(name.clone()),
            Action::PatchPod { name, purpose: PodPatchPurpose::InPlaceUpdate, .. } => {
                Some(name.clone())
            }
            _ => None,
        })
        .collect()
}

fn created(plan: &StatefulSetPlan) -> Vec<i32> {
    plan.actions
        .iter()
        .filter_map(|a| match a {
            Action::CreatePod { pod } => Some(ordinal(pod)),
            _ => None,
        })
        .collect()
}

/// Checks one round's plan against the snapshot it was made from.
fn check_round(k: &Knobs, c: &Case, snapshot: &StatefulSetSnapshot, plan: &StatefulSetPlan) {
    let replicas = replica_ordinals(k);
    let in_range: BTreeSet<i32> = replicas.iter().copied().collect();

    // Creations: only free replica ordinals, never reserved ones.
    for o in created(plan) {
        assert!(in_range.contains(&o), "created web-{o} outside the replica ordinals {replicas:?}");
        assert!(!k.reserved.contains(&o), "created web-{o} on a reserved ordinal");
        assert!(pod_at(snapshot, o).is_none(), "created web-{o} while a pod holds it");
    }

    if !k.parallel {
        // OrderedReady: one creation per round, after every earlier replica is healthy.
        let made = created(plan);
        assert!(made.len() <= 1, "OrderedReady created {made:?} in one round");
        if let Some(&o) = made.first() {
            for &before in replicas.iter().take_while(|&&r| r < o) {
                let pod = pod_at(snapshot, before);
                assert!(
                    pod.is_some_and(|p| healthy(p, k.min_ready_seconds)),
                    "OrderedReady created web-{o} before web-{before} was running and ready"
                );
            }
        }
        // Scale-in: the highest condemned pod first, one per round (finished pods go at once).
        let finished = |p: &Pod| matches!(kruise_core::pod::phase_of(p), "Failed" | "Succeeded");
        let scaled_in: Vec<&str> = plan
            .actions
            .iter()
            .filter_map(|a| match a {
                Action::DeletePod { name, purpose: DeletePurpose::ScaleIn, .. } => {
                    Some(name.as_str())
                }
                _ => None,
            })
            .filter(|name| !pod_at(snapshot, ordinal_of(name)).is_some_and(finished))
            .collect();
        assert!(scaled_in.len() <= 1, "OrderedReady scaled in {scaled_in:?} at once");
        if let Some(name) = scaled_in.first() {
            let highest = snapshot
                .pods
                .iter()
                .map(|p| p.pod().as_ref())
                .filter(|p| !in_range.contains(&ordinal(p)) && !finished(p))
                .map(ordinal)
                .max();
            assert_eq!(Some(ordinal_of(name)), highest, "scaled in {name} first");
        }
    }

    // The rolling update's budget: pods it makes unavailable never take the replicas past
    // maxUnavailable (pods already unavailable may always move).
    let moved = moved(plan);
    if !moved.is_empty() {
        let budget = k.max_unavailable.max(1) as usize;
        let unavailable_before: BTreeSet<i32> = replicas
            .iter()
            .copied()
            .filter(|&o| !pod_at(snapshot, o).is_some_and(|p| healthy(p, k.min_ready_seconds)))
            .collect();
        let mut after = unavailable_before.clone();
        after.extend(moved.iter().map(|n| ordinal_of(n)));
        assert!(
            after.len() <= budget.max(unavailable_before.len()),
            "update moved {moved:?} with {unavailable_before:?} unavailable; maxUnavailable {budget}"
        );
    }

    // The partition. Ordered, it keeps the lowest `partition` places: no pod there moves.
    // Unordered, old pods moved to the new revision leave at least `partition` at the old one
    // (counting replicas still to be created there).
    let keep = usize::try_from(k.partition).unwrap_or(0);
    let for_update: Vec<&String> = moved
        .iter()
        .filter(|n| pod_at(snapshot, ordinal_of(n)).is_some_and(|p| revision(p) == c.old))
        .filter(|n| {
            !pod_at(snapshot, ordinal_of(n)).is_some_and(kruise_core::pod::is_specified_delete)
        })
        .collect();
    if !k.unordered {
        for name in &for_update {
            let position = replicas.iter().position(|&o| o == ordinal_of(name));
            assert!(
                position.is_some_and(|p| p >= keep),
                "moved {name} at position {position:?}; partition {keep}"
            );
        }
    } else if !for_update.is_empty() {
        let old_now = replicas
            .iter()
            .filter(|&&o| match pod_at(snapshot, o) {
                Some(p) => revision(p) == c.old && p.metadata.deletion_timestamp.is_none(),
                None => true,
            })
            .count();
        assert!(
            old_now.saturating_sub(for_update.len()) >= keep.min(old_now),
            "moved {} old pods of {old_now}; partition {keep}",
            for_update.len()
        );
    }
}

fn ordinal_of(name: &str) -> i32 {
    name.rsplit('-').next().and_then(|o| o.parse().ok()).unwrap_or(-1)
}

/// (kind, target) of every write that must not repeat.
fn writes(plan: &StatefulSetPlan) -> BTreeSet<(String, String)> {
    plan.actions
        .iter()
        .filter_map(|a| match a {
            Action::CreatePod { .. } => Some(("createPod".into(), a.target().to_owned())),
            Action::DeletePod { .. } => Some(("deletePod".into(), a.target().to_owned())),
            Action::CreatePvc { .. } => Some(("createPvc".into(), a.target().to_owned())),
            Action::CreateRevision { .. } => Some(("createRevision".into(), a.target().to_owned())),
            Action::PatchPod { purpose: PodPatchPurpose::InPlaceUpdate, .. } => {
                Some(("inPlaceUpdate".into(), a.target().to_owned()))
            }
            _ => None,
        })
        .collect()
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    /// Every round of a run keeps the invariants; replanning an outcome repeats nothing; and
    /// the run ends with the replicas' ordinals, `partition` of them at the old revision.
    #[test]
    fn planner_invariants(k in knobs(), seeds in seeds()) {
        let c = case(&k, &seeds);
        let mut snapshot = c.snapshot.clone();
        let mut settled = false;
        for _ in 0..80 {
            let first = plan(&snapshot, sts::now());
            prop_assert!(first.blocked.is_none(), "blocked: {:?}", first.blocked);
            check_round(&k, &c, &snapshot, &first);
            let outcome = sts::apply(&snapshot, &first);
            let again = plan(&outcome, sts::now());
            check_round(&k, &c, &outcome, &again);
            let repeated: Vec<_> = writes(&first).intersection(&writes(&again)).cloned().collect();
            prop_assert!(repeated.is_empty(), "replanning repeated {repeated:?}");
            if first.actions.is_empty() && first.status.is_none() && outcome.pods == snapshot.pods {
                let mut next = outcome.clone();
                sts::settle_pods(&mut next, None);
                if next.pods == snapshot.pods {
                    settled = true;
                    break;
                }
            }
            snapshot = outcome;
            sts::settle_pods(&mut snapshot, None);
        }
        prop_assert!(settled, "the run did not settle");

        // The end: exactly the replicas' ordinals, healthy, partition kept at the old revision.
        let replicas = replica_ordinals(&k);
        let mut held: Vec<i32> = snapshot.pods.iter().map(|p| ordinal(p.pod())).collect();
        held.sort_unstable();
        prop_assert_eq!(&held, &replicas);
        let old = snapshot.pods.iter().filter(|p| revision(p.pod()) == c.old).count();
        let new = snapshot.pods.iter().filter(|p| revision(p.pod()) == c.new).count();
        let keep = usize::try_from(k.partition).unwrap_or(0).min(replicas.len());
        prop_assert!(old <= keep, "{} pods left at the old revision, partition {}", old, keep);
        if !k.unordered {
            // Ordered: the lowest `partition` places keep (or get) the old revision, unless a
            // healthy pod there had the new one already (nothing is rolled back).
            let kept_new = replicas
                .iter()
                .take(keep)
                .filter(|&&o| {
                    seeds.iter().any(|s| {
                        s.ordinal == o && s.new_revision && !s.terminating && s.phase != "Failed"
                    })
                })
                .count();
            prop_assert_eq!(old, keep - kept_new);
        }
        prop_assert_eq!(old + new, replicas.len());
    }
}
