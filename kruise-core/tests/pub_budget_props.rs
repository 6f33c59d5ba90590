//! Property tests for PodUnavailableBudget: whatever the interleaving of pod operations and
//! status refreshes, admitted operations never take more protected pods down than the last
//! refresh allowed; dry runs change nothing; exempt pods are never denied; the status
//! computation is idempotent on its own outcome.

use std::collections::BTreeMap;

use jiff::{SignedDuration, Timestamp};
use k8s_openapi::api::core::v1::{
    Container, ContainerStatus, Pod, PodCondition, PodSpec, PodStatus,
};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector;
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;
use kruise_api::policy::v1beta1::{PodUnavailableBudget, PodUnavailableBudgetSpec, PubOperation};
use kruise_api::well_known::annotations::PUB_NO_PROTECT;
use kruise_core::pub_budget::{
    Coverage, Decision, PodRequest, PubGates, compute_status, coverage, decide,
};
use proptest::prelude::*;

fn t0() -> Timestamp {
    Timestamp::from_second(1_700_000_000).expect("in range")
}

#[derive(Clone, Debug)]
struct PodShape {
    ready: bool,
    no_protect: bool,
    selected: bool,
}

fn make_pod(i: usize, shape: &PodShape, image: &str) -> Pod {
    let mut pod = Pod::default();
    pod.metadata.name = Some(format!("p-{i}"));
    pod.metadata.namespace = Some("ns".into());
    let app = if shape.selected { "web" } else { "other" };
    pod.metadata.labels = Some(BTreeMap::from([("app".to_string(), app.to_string())]));
    if shape.no_protect {
        pod.metadata.annotations =
            Some(BTreeMap::from([(PUB_NO_PROTECT.to_string(), "true".to_string())]));
    }
    pod.spec = Some(PodSpec {
        containers: vec![Container {
            name: "c".into(),
            image: Some(image.into()),
            ..Default::default()
        }],
        ..Default::default()
    });
    pod.status = Some(PodStatus {
        phase: Some("Running".into()),
        conditions: Some(vec![PodCondition {
            type_: "Ready".into(),
            status: if shape.ready { "True" } else { "False" }.into(),
            ..Default::default()
        }]),
        container_statuses: Some(vec![ContainerStatus {
            name: "c".into(),
            image: image.into(),
            ..Default::default()
        }]),
        ..Default::default()
    });
    pod
}

fn budget(max_unavailable: IntOrString, ops: Vec<PubOperation>) -> PodUnavailableBudget {
    let mut b = PodUnavailableBudget::new(
        "pub",
        PodUnavailableBudgetSpec {
            selector: Some(LabelSelector {
                match_labels: Some(BTreeMap::from([("app".to_string(), "web".to_string())])),
                ..Default::default()
            }),
            max_unavailable: Some(max_unavailable),
            protect_operations: ops,
            ..Default::default()
        },
    );
    b.metadata.namespace = Some("ns".into());
    b.metadata.generation = Some(3);
    b
}

#[derive(Clone, Debug)]
enum Step {
    Delete(usize),
    Evict(usize),
    Update(usize),
    DryRunDelete(usize),
    Refresh,
    Wait(i64),
}

fn step() -> impl Strategy<Value = Step> {
    prop_oneof![
        (0usize..12).prop_map(Step::Delete),
        (0usize..12).prop_map(Step::Evict),
        (0usize..12).prop_map(Step::Update),
        (0usize..12).prop_map(Step::DryRunDelete),
        Just(Step::Refresh),
        (1i64..25).prop_map(Step::Wait),
    ]
}

fn shape() -> impl Strategy<Value = PodShape> {
    (prop::bool::weighted(0.8), prop::bool::weighted(0.15), prop::bool::weighted(0.85))
        .prop_map(|(ready, no_protect, selected)| PodShape { ready, no_protect, selected })
}

fn max_unavailable() -> impl Strategy<Value = IntOrString> {
    prop_oneof![
        (0i32..4).prop_map(IntOrString::Int),
        (0i32..80).prop_map(|p| IntOrString::String(format!("{p}%"))),
    ]
}

fn protect_ops() -> impl Strategy<Value = Vec<PubOperation>> {
    prop_oneof![
        Just(vec![]),
        Just(vec![PubOperation::Delete]),
        Just(vec![PubOperation::Evict, PubOperation::Update]),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn admitted_operations_stay_within_the_budget(
        shapes in prop::collection::vec(shape(), 1..12),
        max in max_unavailable(),
        ops in protect_ops(),
        replicas_extra in 0i32..3,
        steps in prop::collection::vec(step(), 1..40),
    ) {
        let gates = PubGates { update_gate: true, ..PubGates::default() };
        let mut now = t0();
        // The cluster: None once deleted.
        let mut pods: Vec<Option<Pod>> =
            shapes.iter().enumerate().map(|(i, s)| Some(make_pod(i, s, "app:v1"))).collect();
        let replicas = shapes.len() as i32 + replicas_extra;
        let mut b = budget(max, ops);
        let refresh = |b: &mut PodUnavailableBudget, pods: &[Option<Pod>], now| {
            let selected: Vec<&Pod> = pods.iter().flatten()
                .filter(|p| coverage(b, None, p).expect("valid").selects())
                .collect();
            let out = compute_status(b, selected, Some(replicas), &gates, now).expect("valid");
            b.status = Some(out.status);
        };
        refresh(&mut b, &pods, now);
        let mut allowed_at_refresh = b.status.as_ref().map_or(0, |s| s.unavailable_allowed);
        let mut protected_losses = 0;

        for step in steps {
            let (i, kind, dry_run) = match step {
                Step::Refresh => {
                    refresh(&mut b, &pods, now);
                    allowed_at_refresh = b.status.as_ref().map_or(0, |s| s.unavailable_allowed);
                    protected_losses = 0;
                    continue;
                }
                Step::Wait(s) => { now += SignedDuration::from_secs(s); continue; }
                Step::Delete(i) => (i, 0, false),
                Step::Evict(i) => (i, 1, false),
                Step::Update(i) => (i, 2, false),
                Step::DryRunDelete(i) => (i, 0, true),
            };
            let Some(Some(pod)) = pods.get(i).cloned() else { continue };
            let mut updated = pod.clone();
            updated.spec.as_mut().expect("spec").containers[0].image = Some("app:v2".into());
            let request = match kind {
                0 => PodRequest::Delete { pod: &pod },
                1 => PodRequest::Evict { pod: &pod },
                _ => PodRequest::Update { old: &pod, new: &updated },
            };
            let cov = coverage(&b, None, &pod).expect("valid");
            let was_available = kruise_core::pub_budget::is_available_for_budget(&pod, &gates);
            let before = b.clone();
            let decision = decide(&b, None, request, dry_run, &gates, now).expect("valid");

            if dry_run {
                prop_assert!(decision.reservation().is_none(), "dry run reserved: {decision:?}");
                prop_assert_eq!(&b, &before);
                continue;
            }
            if !matches!(cov, Coverage::Covered) {
                prop_assert!(decision.is_allowed(), "exempt pod denied: {decision:?}");
            }
            match decision {
                Decision::Deny(_) => continue,
                Decision::AllowWithReservation { status, .. } => {
                    b.status = Some(status);
                    if was_available && matches!(cov, Coverage::Covered) {
                        protected_losses += 1;
                    }
                }
                _ => {}
            }
            // The operation happens.
            if kind == 2 {
                let mut down = updated;
                let st = down.status.as_mut().expect("status");
                st.conditions.as_mut().expect("conditions")[0].status = "False".into();
                pods[i] = Some(down);
            } else {
                pods[i] = None;
            }
            prop_assert!(
                protected_losses <= allowed_at_refresh.max(0),
                "{} protected pods down, refresh allowed {}", protected_losses, allowed_at_refresh
            );
        }
    }

    #[test]
    fn status_is_idempotent_on_its_own_outcome(
        shapes in prop::collection::vec(shape(), 0..12),
        max in max_unavailable(),
        replicas in 0i32..15,
        recorded in prop::collection::vec((0usize..12, 0i64..30, any::<bool>()), 0..6),
    ) {
        let gates = PubGates::default();
        let pods: Vec<Pod> =
            shapes.iter().enumerate().map(|(i, s)| make_pod(i, s, "app:v1")).collect();
        let mut b = budget(max, vec![]);
        let mut status = kruise_api::policy::v1beta1::PodUnavailableBudgetStatus::default();
        for (i, ago, disrupted) in recorded {
            let at = k8s_openapi::apimachinery::pkg::apis::meta::v1::Time(
                t0() - SignedDuration::from_secs(ago));
            let map = if disrupted { &mut status.disrupted_pods } else { &mut status.unavailable_pods };
            map.insert(format!("p-{i}"), at);
        }
        b.status = Some(status);
        let first = compute_status(&b, &pods, Some(replicas), &gates, t0()).expect("valid");
        prop_assert!(first.status.unavailable_allowed >= 0);
        prop_assert!(first.status.unavailable_allowed <= first.status.current_available);
        b.status = Some(first.status.clone());
        let second = compute_status(&b, &pods, Some(replicas), &gates, t0()).expect("valid");
        prop_assert_eq!(&second.status, &first.status);
        prop_assert!(!second.changed);
        prop_assert_eq!(second.recheck_after, first.recheck_after);
    }
}
