//! Table tests of the SidecarSet upgrade planner, mirroring the cases of upstream's
//! `sidecarset_strategy_test.go`, `sidecarset_processor_test.go` and
//! `sidecarset_hotupgrade_test.go` (the same pod counts, budgets and expected picks).

mod support;

use std::collections::BTreeMap;

use k8s_openapi::api::apps::v1::ControllerRevision;
use k8s_openapi::api::core::v1::{Pod, ResourceRequirements};
use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{LabelSelector, ObjectMeta};
use k8s_openapi::apimachinery::pkg::runtime::RawExtension;
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;
use kruise_api::apps::common::{
    UpdatePriorityOrderTerm, UpdatePriorityStrategy, UpdatePriorityWeightTerm,
};
use kruise_api::apps::v1beta1::{SidecarSet, SidecarSetUpdateStrategyType};
use kruise_core::sidecarset::upgrade::{SidecarSetPlan, UpgradeGates, plan_upgrade};
use kruise_core::workload::{Action, Blocked, PodStatusPurpose};
use serde_json::json;
use support::sidecarset_upgrade::*;

const V1: &str = "test-image:v1";
const V2: &str = "test-image:v2";

/// Upstream's `factoryPods(count, upgraded, upgradedAndReady)`: pods on v1 at hash `aaa`; the
/// first `upgraded` have been patched to v2 (hash `bbb`), of which the first
/// `upgraded_ready` have restarted on it.
fn factory_pods(count: usize, upgraded: usize, upgraded_ready: usize) -> Vec<Pod> {
    let mut pods: Vec<Pod> = (0..count).map(|i| pod(i, V1, "aaa", "without-aaa")).collect();
    for p in pods.iter_mut().take(upgraded) {
        p.spec.as_mut().expect("fixture").containers[1].image = Some(V2.into());
        let notes = p.metadata.annotations.as_mut().expect("fixture");
        notes.insert(
            "kruise.io/sidecarset-hash".into(),
            json!({ SET: { "hash": "bbb", "sidecarSetName": SET, "sidecarList": [SIDECAR] } })
                .to_string(),
        );
        notes.insert(
            "kruise.io/sidecarset-inplace-update-state".into(),
            json!({ SET: { "revision": "bbb", "updateTimestamp": "2023-11-14T22:13:20Z",
                "lastContainerStatuses": { SIDECAR: { "imageID": image_id(V1) } } } })
            .to_string(),
        );
    }
    for p in pods.iter_mut().take(upgraded_ready) {
        restart_all(p);
    }
    pods
}

fn factory_set() -> SidecarSet {
    sidecar_set(V2, "bbb", "without-aaa")
}

fn plan(set: SidecarSet, pods: Vec<Pod>) -> SidecarSetPlan {
    plan_upgrade(&snapshot(set, pods))
}

fn not_upgradable(plan: &SidecarSetPlan) -> usize {
    plan.actions
        .iter()
        .filter(|a| {
            matches!(a, Action::PatchPodStatus { purpose: PodStatusPurpose::SidecarSetUpgradable, patch, .. }
                if patch.body()["status"]["conditions"][0]["status"] == "False")
        })
        .count()
}

fn int(v: i32) -> Option<IntOrString> {
    Some(IntOrString::Int(v))
}

fn pct(v: &str) -> Option<IntOrString> {
    Some(IntOrString::String(v.into()))
}

#[test]
fn next_upgrade_pods_counts() {
    struct Case {
        name: &'static str,
        pods: (usize, usize, usize),
        max_unavailable: Option<IntOrString>,
        partition: Option<IntOrString>,
        want: usize,
    }
    let cases = [
        Case {
            name: "maxUnavailable 10, 100 pods, 30 upgraded, 26 ready",
            pods: (100, 30, 26),
            max_unavailable: int(10),
            partition: None,
            want: 6,
        },
        Case {
            name: "maxUnavailable 10%, 1000 pods, 300 upgraded, 260 ready",
            pods: (1000, 300, 260),
            max_unavailable: pct("10%"),
            partition: None,
            want: 60,
        },
        Case {
            name: "maxUnavailable 5%, 1000 pods, 300 upgraded, 250 ready",
            pods: (1000, 300, 250),
            max_unavailable: pct("5%"),
            partition: None,
            want: 0,
        },
        Case {
            name: "maxUnavailable 100, 100 pods, 30 upgraded, 27 ready",
            pods: (100, 30, 27),
            max_unavailable: int(100),
            partition: None,
            want: 70,
        },
        Case {
            name: "partition 180, maxUnavailable 100, 1000/800/760",
            pods: (1000, 800, 760),
            max_unavailable: int(100),
            partition: int(180),
            want: 20,
        },
        Case {
            name: "partition 100, maxUnavailable 100, 1000/800/760",
            pods: (1000, 800, 760),
            max_unavailable: int(100),
            partition: int(100),
            want: 60,
        },
        Case {
            name: "partition 18%, maxUnavailable 100, 1000/800/760",
            pods: (1000, 800, 760),
            max_unavailable: int(100),
            partition: pct("18%"),
            want: 20,
        },
        Case {
            name: "partition 10%, maxUnavailable 100, 1000/800/760",
            pods: (1000, 800, 760),
            max_unavailable: int(100),
            partition: pct("10%"),
            want: 60,
        },
        Case {
            name: "maxUnavailable 5% of 5 pods rounds up",
            pods: (5, 0, 0),
            max_unavailable: pct("5%"),
            partition: None,
            want: 1,
        },
        Case {
            name: "maxUnavailable 5, partition 99% of 5 pods",
            pods: (5, 0, 0),
            max_unavailable: int(5),
            partition: pct("99%"),
            want: 1,
        },
        Case {
            name: "maxUnavailable 5, partition 1% of 5 pods",
            pods: (5, 0, 0),
            max_unavailable: int(5),
            partition: pct("1%"),
            want: 4,
        },
    ];
    for case in cases {
        let mut set = factory_set();
        set.spec.update_strategy.max_unavailable = case.max_unavailable;
        set.spec.update_strategy.partition = case.partition;
        let (n, u, r) = case.pods;
        let out = plan(set, factory_pods(n, u, r));
        assert_eq!(upgraded(&out).len(), case.want, "{}", case.name);
        assert_eq!(not_upgradable(&out), 0, "{}", case.name);
    }
}

#[test]
fn canary_selector_upgrades_only_matching_pods() {
    let mut pods = factory_pods(1000, 0, 0);
    for p in pods.iter_mut().take(30) {
        p.metadata.labels.as_mut().expect("fixture").insert("canary".into(), "test".into());
    }
    let mut set = factory_set();
    set.spec.update_strategy.max_unavailable = int(100);
    set.spec.update_strategy.selector = Some(LabelSelector {
        match_labels: Some(BTreeMap::from([("canary".into(), "test".into())])),
        ..Default::default()
    });
    let out = plan(set, pods);
    let names = upgraded(&out);
    assert_eq!(names.len(), 30);
    assert!(
        names.iter().all(|n| n.trim_start_matches("pod-").parse::<usize>().expect("fixture") < 30)
    );
}

#[test]
fn not_upgradable_pods_get_condition_and_event() {
    let mut set = sidecar_set(V2, "bbb", "without-bbb");
    set.spec.update_strategy.max_unavailable = int(100);
    let out = plan(set.clone(), factory_pods(100, 0, 0));
    assert!(upgraded(&out).is_empty());
    assert_eq!(not_upgradable(&out), 100);
    assert!(out.events.iter().any(|e| e.reason == "NotUpgradablePods"));
    let Action::PatchPodStatus { patch, .. } = &out.actions[0] else { panic!() };
    let condition = &patch.body()["status"]["conditions"][0];
    assert_eq!(condition["type"], "SidecarSetUpgradable");
    assert_eq!(condition["reason"], "UpdateImmutableField");
    assert_eq!(condition["message"], json!({ SET: false }).to_string());

    // Once recorded, the condition is not written again; the Event is.
    let mut pods = factory_pods(100, 0, 0);
    apply(&out, &mut pods);
    let again = plan(set, pods);
    assert_eq!(not_upgradable(&again), 0);
    assert!(again.actions.is_empty());
    assert!(again.events.iter().any(|e| e.reason == "NotUpgradablePods"));
}

#[test]
fn update_order_follows_upstream() {
    let with = |max: i32, f: &dyn Fn(&mut Vec<Pod>, &mut SidecarSet)| {
        let mut pods = factory_pods(20, 10, 5);
        let mut set = factory_set();
        set.spec.update_strategy.max_unavailable = int(max);
        f(&mut pods, &mut set);
        upgraded(&plan(set, pods))
    };
    // Newer pods first.
    assert_eq!(with(10, &|_, _| {}), ["pod-19", "pod-18", "pod-17", "pod-16", "pod-15"]);
    // Not-ready pods first, and they cost nothing.
    assert_eq!(
        with(10, &|pods, _| {
            set_not_ready(&mut pods[10]);
            set_not_ready(&mut pods[13]);
        }),
        ["pod-13", "pod-10", "pod-19", "pod-18", "pod-17", "pod-16", "pod-15"]
    );
    // Weight priority.
    let mut pods = factory_pods(20, 10, 2);
    pods[15].metadata.labels.as_mut().expect("fixture").insert("test-key".into(), "bar".into());
    pods[16].metadata.labels.as_mut().expect("fixture").insert("test-key".into(), "foo".into());
    let mut set = factory_set();
    set.spec.update_strategy.max_unavailable = int(10);
    let term = |w: i32, v: &str| UpdatePriorityWeightTerm {
        weight: w,
        match_selector: LabelSelector {
            match_labels: Some(BTreeMap::from([("test-key".into(), v.into())])),
            ..Default::default()
        },
    };
    set.spec.update_strategy.priority_strategy = Some(UpdatePriorityStrategy {
        weight_priority: vec![term(50, "foo"), term(30, "bar")],
        ..Default::default()
    });
    assert_eq!(upgraded(&plan(set, pods)), ["pod-16", "pod-15"]);
    // Order priority.
    let mut pods = factory_pods(20, 10, 2);
    for p in &mut pods {
        p.metadata.labels.as_mut().expect("fixture").insert("key1".into(), "5".into());
    }
    pods[17].metadata.labels.as_mut().expect("fixture").insert("key1".into(), "10".into());
    pods[18].metadata.labels.as_mut().expect("fixture").insert("key1".into(), "20".into());
    let mut set = factory_set();
    set.spec.update_strategy.max_unavailable = int(10);
    set.spec.update_strategy.priority_strategy = Some(UpdatePriorityStrategy {
        order_priority: vec![UpdatePriorityOrderTerm { ordered_key: "key1".into() }],
        ..Default::default()
    });
    assert_eq!(upgraded(&plan(set, pods)), ["pod-18", "pod-17"]);
}

#[test]
fn cold_upgrade_rolls_one_pod_at_a_time() {
    // Upstream's TestUpdateColdUpgradeSidecar: two pods, maxUnavailable 1.
    let set = factory_set();
    let mut pods = factory_pods(2, 0, 0);
    let step = plan(set.clone(), pods.clone());
    assert_eq!(upgraded(&step), ["pod-1"]);
    apply(&step, &mut pods);
    // pod-1 is upgrading (its sidecar has not restarted): nothing more.
    let step = plan(set.clone(), pods.clone());
    assert!(upgraded(&step).is_empty());
    let status = step.status.clone().expect("fixture");
    assert_eq!((status.matched_pods, status.updated_pods, status.ready_pods), (2, 1, 1));
    assert_eq!(status.updated_ready_pods, 0);
    // pod-1 completes: pod-0 is next.
    restart_all(&mut pods[1]);
    let step = plan(set.clone(), pods.clone());
    assert_eq!(upgraded(&step), ["pod-0"]);
    apply(&step, &mut pods);
    restart_all(&mut pods[0]);
    let done = plan(set, pods.clone());
    assert!(done.actions.is_empty());
    let status = done.status.expect("fixture");
    assert_eq!((status.updated_pods, status.ready_pods, status.updated_ready_pods), (2, 2, 2));
    // The patch changed the sidecar only, and kept the hash entries well formed.
    let sidecar =
        pods[0].spec.as_ref().expect("fixture").containers.iter().find(|c| c.name == SIDECAR);
    assert_eq!(sidecar.expect("fixture").image.as_deref(), Some(V2));
    let notes = pods[0].metadata.annotations.as_ref().expect("fixture");
    let hashes: serde_json::Value =
        serde_json::from_str(&notes["kruise.io/sidecarset-hash"]).expect("fixture");
    assert_eq!(hashes[SET]["hash"], "bbb");
    assert_eq!(hashes[SET]["controllerRevision"], format!("{SET}-rev"));
}

#[test]
fn other_sidecarsets_hash_entries_are_kept() {
    let mut pods = factory_pods(1, 0, 0);
    let notes = pods[0].metadata.annotations.as_mut().expect("fixture");
    notes.insert(
        "kruise.io/sidecarset-hash".into(),
        json!({ SET: { "hash": "aaa", "sidecarSetName": SET },
                "other": { "hash": "zzz", "sidecarSetName": "other" } })
        .to_string(),
    );
    let step = plan(factory_set(), pods.clone());
    apply(&step, &mut pods);
    let notes = pods[0].metadata.annotations.as_ref().expect("fixture");
    let hashes: serde_json::Value =
        serde_json::from_str(&notes["kruise.io/sidecarset-hash"]).expect("fixture");
    assert_eq!(hashes["other"]["hash"], "zzz");
    assert_eq!(hashes[SET]["hash"], "bbb");
}

#[test]
fn hot_upgrade_takes_three_steps() {
    // Upstream's TestUpdateHotUpgradeSidecar.
    let set = hot_sidecar_set(V2, "bbb", "without-aaa");
    let mut pods = vec![hot_pod(0, V1, "aaa", "without-aaa")];
    let working = |p: &Pod| {
        p.metadata.annotations.as_ref().expect("fixture")["kruise.io/sidecarset-working-hotupgrade-container"]
            .clone()
    };
    let image = |p: &Pod, n: &str| {
        p.spec
            .as_ref()
            .expect("fixture")
            .containers
            .iter()
            .find(|c| c.name == n)
            .expect("fixture")
            .image
            .clone()
    };
    // 1. The idle -2 gets v2 and becomes the working container.
    let step = plan(set.clone(), pods.clone());
    assert_eq!(upgraded(&step), ["pod-0"]);
    apply(&step, &mut pods);
    assert_eq!(image(&pods[0], "test-sidecar-2").as_deref(), Some(V2));
    assert_eq!(working(&pods[0]), json!({ SIDECAR: "test-sidecar-2" }).to_string());
    let notes = pods[0].metadata.annotations.clone().expect("fixture");
    assert_eq!(notes["version.sidecarset.kruise.io/test-sidecar-2"], "100");
    assert_eq!(notes["versionalt.sidecarset.kruise.io/test-sidecar-1"], "100");
    // 2. While -2 has not started, nothing happens.
    let step = plan(set.clone(), pods.clone());
    assert!(step.actions.is_empty(), "{:?}", step.actions);
    // 3. Once it runs, the old -1 is reset to the empty image.
    restart_all(&mut pods[0]);
    let step = plan(set.clone(), pods.clone());
    assert_eq!(step.actions.len(), 1);
    assert!(step.events.iter().any(|e| e.reason == "ResetContainerSucceed"));
    apply(&step, &mut pods);
    assert_eq!(image(&pods[0], "test-sidecar-1").as_deref(), Some(EMPTY));
    let notes = pods[0].metadata.annotations.clone().expect("fixture");
    assert_eq!(notes["version.sidecarset.kruise.io/test-sidecar-1"], "0");
    assert_eq!(notes["versionalt.sidecarset.kruise.io/test-sidecar-2"], "0");
    restart_all(&mut pods[0]);
    let done = plan(set, pods);
    assert!(done.actions.is_empty());
    let status = done.status.expect("fixture");
    assert_eq!((status.updated_pods, status.ready_pods, status.updated_ready_pods), (1, 1, 1));
}

#[test]
fn not_update_and_paused_only_report_status() {
    for pause in [false, true] {
        let mut set = factory_set();
        if pause {
            set.spec.update_strategy.paused = true;
        } else {
            set.spec.update_strategy.type_ = Some(SidecarSetUpdateStrategyType::NotUpdate);
        }
        let out = plan(set, factory_pods(10, 2, 1));
        assert!(out.actions.is_empty());
        let status = out.status.expect("fixture");
        assert_eq!((status.matched_pods, status.updated_pods, status.ready_pods), (10, 2, 9));
        assert_eq!(status.updated_ready_pods, 1);
    }
}

#[test]
fn inactive_and_foreign_pods_do_not_count() {
    let mut pods = factory_pods(4, 0, 0);
    pods[0].metadata.deletion_timestamp = pods[0].metadata.creation_timestamp.clone();
    pods[1].status.as_mut().expect("fixture").phase = Some("Succeeded".into());
    pods[2]
        .metadata
        .annotations
        .as_mut()
        .expect("fixture")
        .remove("kruise.io/sidecarset-injected-list");
    let out = plan(factory_set(), pods);
    assert_eq!(upgraded(&out), ["pod-3"]);
    assert_eq!(out.status.expect("fixture").matched_pods, 1);
}

#[test]
fn invalid_budget_blocks_with_a_warning() {
    let mut set = factory_set();
    set.spec.update_strategy.max_unavailable = pct("ten%");
    let out = plan(set, factory_pods(3, 0, 0));
    assert!(out.actions.is_empty());
    assert!(matches!(out.blocked, Some(Blocked::Invalid { .. })));
    assert!(out.status.is_some());
}

#[test]
fn waits_for_patched_pods_to_be_observed() {
    let pods = factory_pods(3, 0, 0);
    let mut snap = snapshot(factory_set(), pods);
    snap.expectations.resource_versions.expect("uid-2", "5", at(999));
    let out = plan_upgrade(&snap);
    assert!(out.actions.is_empty());
    assert!(matches!(out.blocked, Some(Blocked::ResourceVersion { .. })));
    assert!(out.requeue_after.is_some());
}

fn resources(cpu: &str) -> ResourceRequirements {
    ResourceRequirements {
        limits: Some(BTreeMap::from([("cpu".into(), Quantity(cpu.into()))])),
        ..Default::default()
    }
}

#[test]
fn resources_only_change_is_a_resize_when_supported() {
    // The pods were injected at revision `rev-1` (cpu 100m); the SidecarSet now asks 200m.
    let mut old = factory_set();
    old.spec.containers[0].container.image = Some(V1.into());
    old.spec.containers[0].container.resources = Some(resources("100m"));
    let mut set = factory_set();
    set.metadata
        .annotations
        .as_mut()
        .expect("fixture")
        .insert("kruise.io/sidecarset-hash-without-image".into(), "without-bbb".into());
    set.spec.containers[0].container.resources = Some(resources("200m"));
    let revision = ControllerRevision {
        metadata: ObjectMeta { name: Some("rev-1".into()), ..Default::default() },
        data: RawExtension(json!({ "spec": { "containers": old.spec.containers } })),
        revision: Some(1),
    };
    let mut pods = factory_pods(2, 0, 0);
    for p in &mut pods {
        p.metadata.annotations.as_mut().expect("fixture").insert(
            "kruise.io/sidecarset-hash".into(),
            json!({ SET: { "hash": "aaa", "sidecarSetName": SET, "controllerRevision": "rev-1" } })
                .to_string(),
        );
    }
    let mut snap = snapshot(set, pods.clone());
    snap.revisions = vec![revision];
    // Without resize support: not upgradable.
    let out = plan_upgrade(&snap);
    assert!(upgraded(&out).is_empty());
    assert_eq!(not_upgradable(&out), 2);
    // With it: one pod (maxUnavailable 1) is resized, then patched.
    snap.gates = UpgradeGates { resize_supported: true };
    let out = plan_upgrade(&snap);
    assert_eq!(upgraded(&out), ["pod-1"]);
    let Action::PatchPodResize { name, patch, .. } = &out.actions[0] else {
        panic!("resize first: {:?}", out.actions)
    };
    assert_eq!(name, "pod-1");
    assert_eq!(patch.body()["spec"]["containers"][0]["resources"]["limits"]["cpu"], "200m");
    apply(&out, &mut pods);
    let notes = pods[1].metadata.annotations.as_ref().expect("fixture");
    let state: serde_json::Value =
        serde_json::from_str(&notes["kruise.io/sidecarset-inplace-update-state"]).expect("fixture");
    assert_eq!(state[SET]["updateResources"], true);
    let without: serde_json::Value =
        serde_json::from_str(&notes["kruise.io/sidecarset-hash-without-image"]).expect("fixture");
    assert_eq!(without[SET]["hash"], "without-bbb");
}

/// A resize recorded in the in-place state has finished once the sidecar's status reports the
/// spec's resources; the app container (which asks for none and whose status reports none) is
/// not part of it.
#[test]
fn a_resize_completes_when_the_sidecar_reports_its_resources() {
    use kruise_core::sidecarset::upgrade::facts::sidecar_update_completed;
    use std::collections::BTreeSet;

    let mut pod = pod(0, V1, "bbb", "without-bbb");
    pod.metadata.annotations.as_mut().expect("fixture").insert(
        "kruise.io/sidecarset-inplace-update-state".into(),
        json!({ SET: { "revision": "bbb", "updateTimestamp": "2023-11-14T22:13:20Z",
            "lastContainerStatuses": {}, "updateResources": true } })
        .to_string(),
    );
    pod.spec.as_mut().expect("fixture").containers[1].resources = Some(resources("200m"));
    let sets = BTreeSet::from([SET]);
    let names = BTreeSet::from([SIDECAR.to_owned()]);
    let report = |pod: &mut Pod, cpu: &str| {
        let statuses = pod.status.as_mut().and_then(|s| s.container_statuses.as_mut());
        let sidecar = statuses.expect("fixture").iter_mut().find(|s| s.name == SIDECAR);
        sidecar.expect("fixture").resources = Some(resources(cpu));
    };
    report(&mut pod, "100m");
    assert!(!sidecar_update_completed(&pod, &sets, &names), "still the old resources");
    report(&mut pod, "200m");
    assert!(sidecar_update_completed(&pod, &sets, &names), "the sidecar reports 200m");
    // The app container's status reports no resources, and its spec asks for none: equal.
    assert!(kruise_core::inplace::resources_applied(&pod).is_ok());
}
