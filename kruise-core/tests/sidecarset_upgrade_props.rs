//! Invariants of the SidecarSet upgrade planner over generated SidecarSets and pods:
//! - the rollout never takes more than `maxUnavailable` ready pods down (a pod counts as down
//!   when it is updated and not ready, or its sidecar has not restarted on the new image);
//! - at least `partition` pods stay on the old sidecars;
//! - pods outside `updateStrategy.selector` are never upgraded;
//! - a plan never changes an app container;
//! - planning again on a plan's outcome does not upgrade the same pods again, and a rollout
//!   driven to its end (pods patched, then restarted and ready) ends with a plan that asks
//!   for nothing.

mod support;

use std::collections::{BTreeMap, BTreeSet};

use k8s_openapi::api::core::v1::Pod;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector;
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;
use kruise_api::apps::v1beta1::{SidecarSet, UpdateScatterTerm};
use kruise_core::intstr::partition_replicas;
use kruise_core::sidecarset::upgrade::plan_upgrade;
use proptest::prelude::*;
use serde_json::json;
use support::sidecarset_upgrade::*;

const V1: &str = "mesh:v1";
const V2: &str = "mesh:v2";

#[derive(Clone, Debug)]
enum Stage {
    /// On the old sidecars.
    Old,
    /// Patched to the new sidecars, not restarted yet.
    Patched,
    /// On the new sidecars, restarted.
    Done,
}

#[derive(Clone, Debug)]
struct PodSpec {
    stage: Stage,
    ready: bool,
    canary: bool,
    zone: u8,
    /// Injected at a version whose non-image fields differ.
    immutable_change: bool,
}

#[derive(Clone, Debug)]
struct Case {
    pods: Vec<PodSpec>,
    max_unavailable: Option<IntOrString>,
    partition: Option<IntOrString>,
    canary_selector: bool,
    scatter: bool,
}

fn budget(max: i32) -> impl Strategy<Value = Option<IntOrString>> {
    prop_oneof![
        Just(None),
        (0..=max).prop_map(|v| Some(IntOrString::Int(v))),
        (0..=100i32).prop_map(|p| Some(IntOrString::String(format!("{p}%")))),
    ]
}

fn pod_spec() -> impl Strategy<Value = PodSpec> {
    (
        prop_oneof![3 => Just(Stage::Old), 1 => Just(Stage::Patched), 1 => Just(Stage::Done)],
        prop::bool::weighted(0.8),
        any::<bool>(),
        0u8..3,
        prop::bool::weighted(0.15),
    )
        .prop_map(|(stage, ready, canary, zone, immutable_change)| PodSpec {
            stage,
            ready,
            canary,
            zone,
            immutable_change,
        })
}

fn case() -> impl Strategy<Value = Case> {
    (prop::collection::vec(pod_spec(), 1..25), budget(6), budget(25), any::<bool>(), any::<bool>())
        .prop_map(|(pods, max_unavailable, partition, canary_selector, scatter)| Case {
            pods,
            max_unavailable,
            partition,
            canary_selector,
            scatter,
        })
}

fn build(case: &Case) -> (SidecarSet, Vec<Pod>) {
    let mut set = sidecar_set(V2, "new", "shape");
    let strategy = &mut set.spec.update_strategy;
    strategy.max_unavailable = case.max_unavailable.clone();
    strategy.partition = case.partition.clone();
    if case.canary_selector {
        strategy.selector = Some(LabelSelector {
            match_labels: Some(BTreeMap::from([("canary".into(), "true".into())])),
            ..Default::default()
        });
    }
    if case.scatter {
        strategy.scatter_strategy =
            vec![UpdateScatterTerm { key: "zone".into(), value: "*".into() }];
    }
    let pods = case
        .pods
        .iter()
        .enumerate()
        .map(|(i, spec)| {
            let shape = if spec.immutable_change { "old-shape" } else { "shape" };
            let mut p = pod(i, V1, "old", shape);
            let labels = p.metadata.labels.as_mut().expect("fixture");
            labels.insert("canary".into(), spec.canary.to_string());
            labels.insert("zone".into(), spec.zone.to_string());
            if !matches!(spec.stage, Stage::Old) {
                p.spec.as_mut().expect("fixture").containers[1].image = Some(V2.into());
                let notes = p.metadata.annotations.as_mut().expect("fixture");
                notes.insert(
                    "kruise.io/sidecarset-hash".into(),
                    json!({ SET: { "hash": "new", "sidecarSetName": SET } }).to_string(),
                );
                notes.insert(
                    "kruise.io/sidecarset-hash-without-image".into(),
                    json!({ SET: { "hash": "shape", "sidecarSetName": SET } }).to_string(),
                );
                notes.insert(
                    "kruise.io/sidecarset-inplace-update-state".into(),
                    json!({ SET: { "revision": "new",
                        "lastContainerStatuses": { SIDECAR: { "imageID": image_id(V1) } } } })
                    .to_string(),
                );
                if matches!(spec.stage, Stage::Done) {
                    restart_all(&mut p);
                }
            }
            if !spec.ready {
                set_not_ready(&mut p);
            }
            p
        })
        .collect();
    (set, pods)
}

fn is_ready(p: &Pod) -> bool {
    p.status
        .as_ref()
        .and_then(|s| s.conditions.as_ref())
        .is_some_and(|c| c.iter().any(|c| c.type_ == "Ready" && c.status == "True"))
}

fn is_updated(p: &Pod) -> bool {
    let notes = p.metadata.annotations.as_ref().expect("fixture");
    let hashes: serde_json::Value =
        serde_json::from_str(&notes["kruise.io/sidecarset-hash"]).expect("fixture");
    hashes[SET]["hash"] == "new"
}

/// Updated and down: not ready, or the sidecar does not yet run its spec image.
fn is_down(p: &Pod) -> bool {
    let spec = p
        .spec
        .as_ref()
        .expect("fixture")
        .containers
        .iter()
        .find(|c| c.name == SIDECAR)
        .expect("fixture");
    let status = p.status.as_ref().expect("fixture").container_statuses.as_ref().expect("fixture");
    let running = status.iter().find(|s| s.name == SIDECAR).expect("fixture");
    is_updated(p) && (!is_ready(p) || spec.image.as_deref() != Some(running.image.as_str()))
}

fn app(p: &Pod) -> serde_json::Value {
    serde_json::to_value(&p.spec.as_ref().expect("fixture").containers[0]).expect("fixture")
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    #[test]
    fn one_round_respects_budgets_selector_and_app_containers(case in case()) {
        let (set, pods) = build(&case);
        let plan = plan_upgrade(&snapshot(set.clone(), pods.clone()));
        let picked: BTreeSet<String> = upgraded(&plan).into_iter().collect();
        let mut after = pods.clone();
        apply(&plan, &mut after);

        // maxUnavailable.
        let total = i32::try_from(pods.len()).expect("fixture");
        let max = match &case.max_unavailable {
            None => 1,
            Some(v) => kruise_core::intstr::lenient_value(v, total, kruise_core::intstr::Rounding::Up).expect("fixture"),
        };
        let max = usize::try_from(max).unwrap_or_default();
        let down_before = pods.iter().filter(|p| is_down(p)).count();
        let down_after = after.iter().filter(|p| is_down(p)).count();
        let free = pods.iter().filter(|p| picked.contains(p.metadata.name.as_deref().expect("fixture")) && !is_ready(p)).count();
        prop_assert!(down_after <= down_before.max(max) + free,
            "down {down_before} -> {down_after}, max {max}, not-ready upgraded {free}");

        // partition.
        let partition = usize::try_from(partition_replicas(case.partition.as_ref(), Some(total)).expect("fixture")).expect("fixture");
        let old_before = pods.iter().filter(|p| !is_updated(p)).count();
        let old_after = after.iter().filter(|p| !is_updated(p)).count();
        prop_assert!(old_after >= old_before.min(partition), "old {old_before} -> {old_after}, partition {partition}");

        for (before, now) in pods.iter().zip(&after) {
            let name = before.metadata.name.as_deref().expect("fixture");
            // Canary selector and immutable changes.
            if picked.contains(name) {
                let labels = before.metadata.labels.as_ref().expect("fixture");
                prop_assert!(!case.canary_selector || labels["canary"] == "true", "{name} is not a canary");
                prop_assert!(!is_updated(before), "{name} was already updated");
                let spec = &case.pods[name.trim_start_matches("pod-").parse::<usize>().expect("fixture")];
                prop_assert!(!spec.immutable_change, "{name} cannot be upgraded in place");
            }
            // App containers.
            prop_assert_eq!(app(before), app(now));
            prop_assert_eq!(before.spec.as_ref().expect("fixture").containers.len(), now.spec.as_ref().expect("fixture").containers.len());
        }

        // Determinism.
        prop_assert_eq!(&plan, &plan_upgrade(&snapshot(set.clone(), pods.clone())));

        // Planning on the outcome never upgrades the same pods again.
        let again = plan_upgrade(&snapshot(set, after));
        for name in upgraded(&again) {
            prop_assert!(!picked.contains(&name), "{name} upgraded twice");
        }
    }

    #[test]
    fn rollout_converges_and_then_asks_for_nothing(case in case()) {
        let (set, mut pods) = build(&case);
        let waiting_at_start = case.pods.iter().filter(|p| {
            matches!(p.stage, Stage::Old) && !p.immutable_change && (!case.canary_selector || p.canary)
        }).count();
        let total = i32::try_from(pods.len()).expect("fixture");
        let max = match &case.max_unavailable {
            None => 1,
            Some(v) => kruise_core::intstr::lenient_value(v, total, kruise_core::intstr::Rounding::Up).expect("fixture"),
        };
        let partition = usize::try_from(partition_replicas(case.partition.as_ref(), Some(total)).expect("fixture")).expect("fixture");
        let mut seen = BTreeSet::new();
        let mut rounds = 0;
        loop {
            let plan = plan_upgrade(&snapshot(set.clone(), pods.clone()));
            let names = upgraded(&plan);
            for name in &names {
                prop_assert!(seen.insert(name.clone()), "{name} upgraded twice");
            }
            apply(&plan, &mut pods);
            // Updated pods finish their update and turn ready, in time.
            let mut progressed = false;
            for p in pods.iter_mut().filter(|p| is_updated(p)) {
                progressed |= is_down(p);
                restart_all(p);
            }
            if names.is_empty() && !progressed {
                break;
            }
            rounds += 1;
            prop_assert!(rounds <= case.pods.len() + 1, "no convergence");
        }
        // With any budget, exactly the partition is left behind.
        if max >= 1 {
            prop_assert_eq!(waiting_at_start - seen.len(), waiting_at_start.min(partition));
        }
        // Every pod restarted, then nothing left to do unless the budget is 0 for ready pods.
        for p in pods.iter_mut() {
            restart_all(p);
        }
        let last = plan_upgrade(&snapshot(set.clone(), pods.clone()));
        let mut settled = pods.clone();
        apply(&last, &mut settled);
        let last_names = upgraded(&last);
        let quiet = plan_upgrade(&snapshot(set.clone(), settled.clone()));
        if last_names.is_empty() {
            prop_assert!(quiet.actions.is_empty(), "{:?}", quiet.actions);
        }
        // Status of the final state is consistent with what it shows.
        let status = quiet.status.unwrap_or_else(|| set.status.clone().unwrap_or_default());
        let updated = settled.iter().filter(|p| is_updated(p)).count();
        prop_assert_eq!(usize::try_from(status.updated_pods).expect("fixture"), updated);
        prop_assert_eq!(usize::try_from(status.matched_pods).expect("fixture"), settled.len());
    }
}

fn hot_image(p: &Pod, name: &str) -> String {
    let spec = p.spec.as_ref().expect("fixture");
    let c = spec.containers.iter().find(|c| c.name == name).expect("fixture");
    c.image.clone().unwrap_or_default()
}

/// Mid-swap (both hot-upgrade containers off the empty image), or updated and not ready.
fn hot_down(p: &Pod) -> bool {
    let busy =
        [format!("{SIDECAR}-1"), format!("{SIDECAR}-2")].iter().all(|n| hot_image(p, n) != EMPTY);
    busy || (is_updated(p) && !is_ready(p))
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 128, ..ProptestConfig::default() })]

    #[test]
    fn hot_upgrade_converges_with_one_working_container(
        ready in prop::collection::vec(prop::bool::weighted(0.8), 1..12),
        max in 1i32..4,
    ) {
        let mut set = hot_sidecar_set(V2, "new", "shape");
        set.spec.update_strategy.max_unavailable = Some(IntOrString::Int(max));
        let mut pods: Vec<Pod> = ready
            .iter()
            .enumerate()
            .map(|(i, r)| {
                let mut p = hot_pod(i, V1, "old", "shape");
                if !r {
                    set_not_ready(&mut p);
                }
                p
            })
            .collect();
        let not_ready_at_start = ready.iter().filter(|r| !**r).count();
        let max = usize::try_from(max).expect("fixture");
        let mut rounds = 0;
        loop {
            let plan = plan_upgrade(&snapshot(set.clone(), pods.clone()));
            let touched = apply(&plan, &mut pods);
            // At most max pods are down, beyond those that were down to begin with.
            let down = pods.iter().filter(|p| hot_down(p)).count();
            prop_assert!(down <= max + not_ready_at_start, "down {down}, max {max}");
            for p in pods.iter_mut() {
                if touched.iter().any(|n| Some(n.as_str()) == p.metadata.name.as_deref()) {
                    restart_all(p);
                }
            }
            if plan.actions.is_empty() {
                break;
            }
            rounds += 1;
            prop_assert!(rounds <= 3 * ready.len() + 2, "no convergence");
        }
        // Every pod runs exactly one v2 container and one idle container.
        for p in &pods {
            let images = [hot_image(p, &format!("{SIDECAR}-1")), hot_image(p, &format!("{SIDECAR}-2"))];
            prop_assert!(images.contains(&V2.to_owned()) && images.contains(&EMPTY.to_owned()), "{images:?}");
            prop_assert!(is_updated(p));
        }
    }
}
