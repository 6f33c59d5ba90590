//! Cases from the user manual and one regression test per upstream hole.

#![allow(clippy::unwrap_used)]

use std::collections::{BTreeMap, BTreeSet};

use jiff::{SignedDuration, Timestamp};
use k8s_openapi::api::core::v1::{
    Container, ContainerStatus, Pod, PodCondition, PodSpec, PodStatus, ResourceRequirements,
};
use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{LabelSelector, OwnerReference, Time};
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;
use kruise_api::policy::v1beta1::{
    PodUnavailableBudget, PodUnavailableBudgetSpec, PodUnavailableBudgetStatus, PubOperation,
    TargetReference,
};

use super::*;

fn now() -> Timestamp {
    Timestamp::from_second(1_700_000_000).unwrap()
}

fn labels(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
    pairs.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect()
}

pub(super) fn ready_pod(name: &str, image: &str) -> Pod {
    let mut pod = Pod::default();
    pod.metadata.name = Some(name.into());
    pod.metadata.namespace = Some("default".into());
    pod.metadata.labels = Some(labels(&[("app", "web")]));
    pod.spec = Some(PodSpec {
        containers: vec![Container {
            name: "main".into(),
            image: Some(image.into()),
            ..Default::default()
        }],
        ..Default::default()
    });
    pod.status = Some(PodStatus {
        phase: Some("Running".into()),
        conditions: Some(vec![PodCondition {
            type_: "Ready".into(),
            status: "True".into(),
            ..Default::default()
        }]),
        container_statuses: Some(vec![ContainerStatus {
            name: "main".into(),
            image: image.into(),
            image_id: String::new(),
            ready: true,
            ..Default::default()
        }]),
        ..Default::default()
    });
    pod
}

fn selector_budget(max_unavailable: IntOrString) -> PodUnavailableBudget {
    let mut b = PodUnavailableBudget::new(
        "web-pub",
        PodUnavailableBudgetSpec {
            selector: Some(LabelSelector {
                match_labels: Some(labels(&[("app", "web")])),
                ..Default::default()
            }),
            max_unavailable: Some(max_unavailable),
            ..Default::default()
        },
    );
    b.metadata.namespace = Some("default".into());
    b.metadata.generation = Some(1);
    b
}

fn with_status(mut b: PodUnavailableBudget, pods: &[Pod], replicas: i32) -> PodUnavailableBudget {
    let out = compute_status(&b, pods, Some(replicas), &PubGates::default(), now()).unwrap();
    b.status = Some(out.status);
    b
}

fn pods(n: usize) -> Vec<Pod> {
    (0..n).map(|i| ready_pod(&format!("web-{i}"), "nginx:1.25")).collect()
}

fn delete(b: &PodUnavailableBudget, pod: &Pod) -> Decision {
    decide(b, None, PodRequest::Delete { pod }, false, &PubGates::default(), now()).unwrap()
}

// ---- the manual: maxUnavailable / minAvailable, int and percent ----

#[test]
fn manual_max_unavailable_25_percent_of_10_rounds_up() {
    let p = pods(10);
    let b = with_status(selector_budget(IntOrString::String("25%".into())), &p, 10);
    let s = b.status.as_ref().unwrap();
    // ceil(2.5) = 3 may be unavailable, so 7 must stay.
    assert_eq!((s.total_replicas, s.desired_available, s.current_available), (10, 7, 10));
    assert_eq!(s.unavailable_allowed, 3);
}

#[test]
fn manual_min_available_percent_rounds_up() {
    let mut b = selector_budget(IntOrString::Int(0));
    b.spec.max_unavailable = None;
    b.spec.min_available = Some(IntOrString::String("50%".into()));
    assert_eq!(desired_available(&b, 5).unwrap(), 3);
    b.spec.min_available = Some(IntOrString::Int(4));
    assert_eq!(desired_available(&b, 5).unwrap(), 4);
    b.spec.min_available = None;
    assert_eq!(desired_available(&b, 5).unwrap(), 0);
}

#[test]
fn deletes_consume_the_budget_then_are_denied_with_upstreams_message() {
    let p = pods(3);
    let mut b = with_status(selector_budget(IntOrString::Int(1)), &p, 3);
    let first = delete(&b, &p[0]);
    let Decision::AllowWithReservation { operation: Operation::Delete, status } = &first else {
        panic!("{first:?}")
    };
    assert_eq!(status.unavailable_allowed, 0);
    assert_eq!(status.disrupted_pods.get("web-0"), Some(&Time(now())));
    b.status = Some(status.clone());
    // The same pod again costs nothing.
    assert_eq!(delete(&b, &p[0]), Decision::Allow(AllowReason::AlreadyCounted));
    let Decision::Deny(reason) = delete(&b, &p[1]) else { panic!() };
    assert_eq!(
        reason.to_string(),
        "podunavailablebudgets.policy.kruise.io \"web-pub\" is forbidden: pub unavailable allowed is negative"
    );
}

#[test]
fn dry_run_decides_but_reserves_nothing() {
    let p = pods(3);
    let b = with_status(selector_budget(IntOrString::Int(1)), &p, 3);
    let d = decide(&b, None, PodRequest::Evict { pod: &p[0] }, true, &PubGates::default(), now());
    assert_eq!(d.unwrap(), Decision::Allow(AllowReason::DryRunWithinBudget));
}

#[test]
fn exempt_pods_and_other_namespaces_are_let_through() {
    let p = pods(2);
    let mut b = with_status(selector_budget(IntOrString::Int(0)), &p, 2);
    let mut opted_out = p[0].clone();
    opted_out.metadata.annotations =
        Some(labels(&[(kruise_api::well_known::annotations::PUB_NO_PROTECT, "true")]));
    assert_eq!(
        delete(&b, &opted_out),
        Decision::Allow(AllowReason::Exempt(Exemption::NoProtectAnnotation))
    );
    let mut elsewhere = p[0].clone();
    elsewhere.metadata.namespace = Some("other".into());
    assert_eq!(
        delete(&b, &elsewhere),
        Decision::Allow(AllowReason::NotCovered(NotSelected::OtherNamespace))
    );
    b.spec.ignored_pod_selector =
        Some(LabelSelector { match_labels: Some(labels(&[("app", "web")])), ..Default::default() });
    assert_eq!(
        delete(&b, &p[1]),
        Decision::Allow(AllowReason::Exempt(Exemption::IgnoredPodSelector))
    );
}

#[test]
fn protect_operations_default_spec_and_annotation() {
    let mut b = selector_budget(IntOrString::Int(1));
    let ops =
        |b: &PodUnavailableBudget, vps| protected_operations(b, vps).iter().collect::<Vec<_>>();
    assert_eq!(ops(&b, true), [Operation::Delete, Operation::Evict, Operation::Update]);
    // Without InPlacePodVerticalScaling a resize is an update.
    assert!(protected_operations(&b, false).contains(Operation::Resize));
    b.metadata.annotations = Some(labels(&[(
        kruise_api::well_known::annotations::PUB_PROTECT_OPERATIONS,
        "EVICT,RESIZE",
    )]));
    assert_eq!(ops(&b, true), [Operation::Evict, Operation::Resize]);
    b.spec.protect_operations = vec![PubOperation::Delete];
    assert_eq!(ops(&b, true), [Operation::Delete]);
    let p = pods(2);
    let b = with_status(b, &p, 2);
    let d = decide(&b, None, PodRequest::Evict { pod: &p[0] }, false, &PubGates::default(), now());
    assert_eq!(d.unwrap(), Decision::Allow(AllowReason::OperationNotProtected));
}

#[test]
fn updates_are_classified_as_upstream() {
    let old = ready_pod("web-0", "nginx:1.25");
    let mut relabelled = old.clone();
    relabelled.metadata.labels = Some(labels(&[("app", "web"), ("x", "y")]));
    assert_eq!(classify_update(&old, &relabelled, true), None);
    let mut marked = old.clone();
    marked.metadata.labels = Some(labels(&[("app", "web"), ("unavailable-pod.kruise.io/x", "1")]));
    assert_eq!(classify_update(&old, &marked, true), Some(Operation::Update));
    let mut image = old.clone();
    image.spec.as_mut().unwrap().containers[0].image = Some("nginx:1.26".into());
    assert_eq!(classify_update(&old, &image, true), Some(Operation::Update));

    let with_cpu = |cpu: &str| {
        let mut p = old.clone();
        p.spec.as_mut().unwrap().containers[0].resources = Some(ResourceRequirements {
            requests: Some(BTreeMap::from([("cpu".to_string(), Quantity(cpu.into()))])),
            ..Default::default()
        });
        p
    };
    let (small, big) = (with_cpu("100m"), with_cpu("0.2"));
    assert_eq!(classify_update(&small, &big, true), Some(Operation::Resize));
    assert_eq!(classify_update(&small, &big, false), Some(Operation::Update));
    // Same value, other spelling: the spec differs but no resource changed.
    assert_eq!(classify_update(&with_cpu("0.1"), &small, true), Some(Operation::Resize));
}

#[test]
fn update_gate_off_lets_updates_through() {
    let p = pods(1);
    let b = with_status(selector_budget(IntOrString::Int(0)), &p, 1);
    let mut new = p[0].clone();
    new.spec.as_mut().unwrap().containers[0].image = Some("nginx:1.26".into());
    let req = PodRequest::Update { old: &p[0], new: &new };
    let off = decide(&b, None, req, false, &PubGates::default(), now()).unwrap();
    assert_eq!(off, Decision::Allow(AllowReason::GateDisabled));
    let gates = PubGates { update_gate: true, ..PubGates::default() };
    assert!(matches!(decide(&b, None, req, false, &gates, now()).unwrap(), Decision::Deny(_)));
}

#[test]
fn a_controllers_container_restart_is_counted_as_an_update() {
    let p = pods(3);
    let b = with_status(selector_budget(IntOrString::Int(1)), &p, 3);
    let gates = PubGates { update_gate: true, ..PubGates::default() };
    let restart = |b: &PodUnavailableBudget, pod| {
        decide(b, None, PodRequest::Restart { pod }, false, &gates, now()).unwrap()
    };
    let Decision::AllowWithReservation { operation, status } = restart(&b, &p[0]) else {
        panic!("reserved")
    };
    assert_eq!(operation, Operation::Update);
    assert!(status.unavailable_pods.contains_key("web-0") && status.disrupted_pods.is_empty());
    let mut after = b.clone();
    after.status = Some(status);
    assert!(matches!(restart(&after, &p[1]), Decision::Deny(_)), "the budget is spent");
    let both_off = PubGates { delete_gate: false, update_gate: false, ..PubGates::default() };
    let off = decide(&b, None, PodRequest::Restart { pod: &p[0] }, false, &both_off, now());
    assert_eq!(off.unwrap(), Decision::Allow(AllowReason::GateDisabled));
}

#[test]
fn a_workload_update_asks_the_budget_only_under_the_update_gate() {
    let p = pods(3);
    let b = with_status(selector_budget(IntOrString::Int(1)), &p, 3);
    let ask = |b: &PodUnavailableBudget, pod, gates: &PubGates| {
        decide(b, None, PodRequest::WorkloadUpdate { pod }, false, gates, now()).unwrap()
    };
    let delete_only = PubGates { delete_gate: true, update_gate: false, ..PubGates::default() };
    assert_eq!(ask(&b, &p[0], &delete_only), Decision::Allow(AllowReason::GateDisabled));
    let gates = PubGates { update_gate: true, ..PubGates::default() };
    let Decision::AllowWithReservation { operation, status } = ask(&b, &p[0], &gates) else {
        panic!("reserved")
    };
    assert_eq!(operation, Operation::Update);
    let mut after = b.clone();
    after.status = Some(status);
    assert_eq!(ask(&after, &p[0], &gates), Decision::Allow(AllowReason::AlreadyCounted));
    assert!(matches!(ask(&after, &p[1], &gates), Decision::Deny(_)), "the budget is spent");
}

#[test]
fn records_expire_after_upstreams_timeouts_and_give_the_next_recheck() {
    let p = pods(4);
    let mut b = with_status(selector_budget(IntOrString::Int(2)), &p, 4);
    let mut s = b.status.clone().unwrap();
    s.disrupted_pods.insert("web-0".into(), Time(now()));
    s.unavailable_pods.insert("web-1".into(), Time(now()));
    b.status = Some(s);
    let at = |secs| now() + SignedDuration::from_secs(secs);
    let out = compute_status(&b, &p, Some(4), &PubGates::default(), at(5)).unwrap();
    assert_eq!(out.status.current_available, 2);
    assert_eq!(out.status.unavailable_allowed, 0);
    assert_eq!(out.recheck_after, Some(SignedDuration::from_secs(5)));
    let out = compute_status(&b, &p, Some(4), &PubGates::default(), at(12)).unwrap();
    assert!(out.status.unavailable_pods.is_empty());
    assert_eq!(out.recheck_after, Some(SignedDuration::from_secs(8)));
    let out = compute_status(&b, &p, Some(4), &PubGates::default(), at(21)).unwrap();
    assert!(out.status.disrupted_pods.is_empty() && out.recheck_after.is_none());
    // A deleted pod's record goes with it.
    let out = compute_status(&b, &p[1..], Some(4), &PubGates::default(), at(1)).unwrap();
    assert!(out.status.disrupted_pods.is_empty());
}

#[test]
fn protect_total_replicas_overrides_the_scale() {
    let mut b = selector_budget(IntOrString::Int(1));
    b.spec.protect_total_replicas = Some(5);
    let out = compute_status(&b, &pods(3), None, &PubGates::default(), now()).unwrap();
    assert_eq!((out.status.total_replicas, out.status.desired_available), (5, 4));
    b.spec.protect_total_replicas = None;
    let err = compute_status(&b, &pods(3), None, &PubGates::default(), now()).unwrap_err();
    assert!(matches!(err, PubError::ReplicasUnknown { .. }));
}

#[test]
fn budget_for_pod_takes_the_first_selecting_budget() {
    let pod = ready_pod("web-0", "nginx");
    let mut other = selector_budget(IntOrString::Int(1));
    other.spec.selector =
        Some(LabelSelector { match_labels: Some(labels(&[("app", "db")])), ..Default::default() });
    let web = selector_budget(IntOrString::Int(1));
    let found = budget_for_pod([(&other, None), (&web, None)], &pod).unwrap();
    assert_eq!(found, BudgetForPod::Found { budget: &web, coverage: Coverage::Covered });
    assert_eq!(budget_for_pod([(&other, None)], &pod).unwrap(), BudgetForPod::None);
}

// ---- regressions ----

#[test]
fn regression_771_workload_at_zero_replicas_does_not_block_deletes() {
    let p = pods(2);
    let b = with_status(selector_budget(IntOrString::Int(1)), &p, 0);
    assert_eq!(b.status.as_ref().unwrap().desired_available, 0);
    assert_eq!(delete(&b, &p[0]), Decision::Allow(AllowReason::NothingToProtect));
    let mut b = selector_budget(IntOrString::Int(0));
    b.spec.max_unavailable = None;
    b.spec.min_available = Some(IntOrString::String("100%".into()));
    let b = with_status(b, &p, 0);
    assert_eq!(delete(&b, &p[1]), Decision::Allow(AllowReason::NothingToProtect));
}

#[test]
fn regression_1857_budget_created_before_its_pods_gets_a_status() {
    let mut b = selector_budget(IntOrString::Int(0));
    b.spec.max_unavailable = None;
    b.spec.min_available = Some(IntOrString::Int(1));
    let out = compute_status(&b, &[], Some(2), &PubGates::default(), now()).unwrap();
    assert!(out.changed);
    assert_eq!(out.status.observed_generation, 1);
    assert_eq!((out.status.desired_available, out.status.unavailable_allowed), (1, 0));
    // A pod created later is mapped to the budget by its labels, not by an annotation the
    // controller would only stamp on pods it already knows.
    let pod = ready_pod("web-0", "nginx");
    assert!(matches!(budget_for_pod([(&b, None)], &pod).unwrap(), BudgetForPod::Found { .. }));
}

#[test]
fn regression_2175_specified_delete_pods_do_not_inflate_the_allowance() {
    // CloneSet replicas 6, maxSurge 1: all six marked, the seventh is the surge replacement.
    let mut p = pods(7);
    for pod in &mut p[..6] {
        pod.metadata
            .labels
            .as_mut()
            .unwrap()
            .insert(kruise_api::well_known::labels::SPECIFIED_DELETE.into(), "true".into());
    }
    let b = with_status(selector_budget(IntOrString::Int(1)), &p, 6);
    let s = b.status.as_ref().unwrap();
    assert_eq!((s.desired_available, s.current_available, s.unavailable_allowed), (5, 6, 1));
    // Without marks a surge pod still counts, as upstream.
    let b = with_status(selector_budget(IntOrString::Int(1)), &pods(7), 6);
    assert_eq!(b.status.unwrap().unavailable_allowed, 2);
}

const MANIFEST: &str = "sha256:aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa";
const CONFIG: &str = "sha256:bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb";

#[test]
fn regression_2570_digest_pinned_pods_count_and_are_checked() {
    let image = format!("registry.k8s.io/ingress-nginx/controller:v1.9.4@{MANIFEST}");
    let mut p = vec![ready_pod("web-0", &image), ready_pod("web-1", &image)];
    // containerd reports the config digest, bare.
    p[0].status.as_mut().unwrap().container_statuses.as_mut().unwrap()[0].image_id = CONFIG.into();
    // docker reports repo@manifest with a scheme.
    p[1].status.as_mut().unwrap().container_statuses.as_mut().unwrap()[0].image_id =
        format!("docker-pullable://registry.k8s.io/ingress-nginx/controller@{MANIFEST}");
    let gates = PubGates::default();
    assert!(p.iter().all(|pod| is_available_for_budget(pod, &gates)));
    let b = with_status(selector_budget(IntOrString::Int(1)), &p, 2);
    let s = b.status.clone().unwrap();
    assert_eq!((s.current_available, s.unavailable_allowed), (2, 1));
    let Decision::AllowWithReservation { status, .. } = delete(&b, &p[0]) else { panic!() };
    let mut b = b;
    b.status = Some(status);
    assert!(matches!(delete(&b, &p[1]), Decision::Deny(_)), "the second pod must be checked");

    // Another digest of the same repository running is a real mismatch.
    let mut stale = ready_pod("web-2", &image);
    stale.status.as_mut().unwrap().container_statuses.as_mut().unwrap()[0].image_id =
        format!("registry.k8s.io/ingress-nginx/controller@{CONFIG}");
    assert!(!is_pod_state_consistent(&stale, &gates));
}

#[test]
fn regression_2571_unresolved_target_is_an_explicit_result() {
    let mut b = selector_budget(IntOrString::Int(1));
    b.spec.selector = None;
    b.spec.target_reference = Some(TargetReference {
        api_version: "argoproj.io/v1alpha1".into(),
        kind: "Rollout".into(),
        name: "drill".into(),
    });
    b.status = Some(PodUnavailableBudgetStatus {
        desired_available: 1,
        unavailable_allowed: 0,
        ..Default::default()
    });
    let mut pod = ready_pod("drill-0", "nginx");
    assert_eq!(coverage(&b, None, &pod).unwrap(), Coverage::TargetUnresolved);
    let err = decide(
        &b,
        Some(&TargetPods::Unresolved),
        PodRequest::Delete { pod: &pod },
        false,
        &PubGates::default(),
        now(),
    );
    assert!(matches!(err, Err(PubError::TargetUnresolved { .. })));
    assert_eq!(budget_for_pod([(&b, None)], &pod).unwrap(), BudgetForPod::Unresolved(vec![&b]));

    // Resolved through the ReplicaSet the Rollout owns: covered and checked.
    pod.metadata.owner_references = Some(vec![OwnerReference {
        kind: "ReplicaSet".into(),
        name: "drill-abc".into(),
        uid: "rs-uid".into(),
        controller: Some(true),
        ..Default::default()
    }]);
    let owners = TargetPods::OwnedBy(BTreeSet::from(["rs-uid".to_string()]));
    assert_eq!(coverage(&b, Some(&owners), &pod).unwrap(), Coverage::Covered);
    let d = decide(
        &b,
        Some(&owners),
        PodRequest::Delete { pod: &pod },
        false,
        &PubGates::default(),
        now(),
    );
    assert!(matches!(d.unwrap(), Decision::Deny(DenyReason::NoUnavailableAllowed { .. })));
    // Resolved to the scale selector works the same way.
    let by_selector = TargetPods::Selector(LabelSelector {
        match_labels: Some(labels(&[("app", "web")])),
        ..Default::default()
    });
    assert_eq!(coverage(&b, Some(&by_selector), &pod).unwrap(), Coverage::Covered);
}
