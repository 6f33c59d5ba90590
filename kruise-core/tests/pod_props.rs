//! Property tests for the pod comparators: they are total orders, so sorting with them is
//! deterministic whatever the input order.

use std::cmp::Ordering;

use jiff::Timestamp;
use k8s_openapi::api::core::v1::{Pod, PodCondition, PodSpec, PodStatus};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, Time};
use kruise_core::pod::{
    PodRankView, compare_active, compare_for_deletion, deletion_order, same_node_ranks,
};
use proptest::prelude::*;

fn ts(s: i64) -> Timestamp {
    Timestamp::from_second(s).expect("in range")
}

prop_compose! {
    fn pod_view()(
        name in "[a-e]{1,2}",
        node in prop_oneof![Just(""), Just("n1"), Just("n2")],
        phase in prop_oneof![Just("Pending"), Just("Running"), Just("Unknown"), Just("Failed"), Just("")],
        ready: bool,
        ready_at in proptest::option::of(0i64..4),
        created in proptest::option::of(0i64..4),
        restarts in 0i32..3,
        cost in -2i32..3,
        available: bool,
    ) -> PodRankView {
        let mut pod = Pod {
            metadata: ObjectMeta {
                name: Some(name),
                creation_timestamp: created.map(|s| Time(ts(s))),
                annotations: Some(
                    [("controller.kubernetes.io/pod-deletion-cost".to_owned(), cost.to_string())].into(),
                ),
                ..Default::default()
            },
            spec: Some(PodSpec { node_name: Some(node.to_owned()), ..Default::default() }),
            status: Some(PodStatus {
                phase: Some(phase.to_owned()),
                conditions: Some(vec![PodCondition {
                    type_: "Ready".into(),
                    status: if ready { "True" } else { "False" }.into(),
                    last_transition_time: ready_at.map(|s| Time(ts(s))),
                    ..Default::default()
                }]),
                ..Default::default()
            }),
        };
        if let Some(status) = pod.status.as_mut() {
            status.container_statuses = Some(vec![k8s_openapi::api::core::v1::ContainerStatus {
                restart_count: restarts,
                ..Default::default()
            }]);
        }
        PodRankView::from_pod(&pod).with_available(available && ready)
    }
}

fn check_total_order(
    views: &[PodRankView],
    cmp: fn(&PodRankView, &PodRankView) -> Ordering,
) -> Result<(), TestCaseError> {
    for a in views {
        prop_assert_eq!(cmp(a, a), Ordering::Equal);
        for b in views {
            prop_assert_eq!(cmp(a, b), cmp(b, a).reverse());
            for c in views {
                if cmp(a, b) != Ordering::Greater && cmp(b, c) != Ordering::Greater {
                    prop_assert_ne!(cmp(a, c), Ordering::Greater);
                }
            }
        }
    }
    Ok(())
}

proptest! {
    #[test]
    fn comparators_are_total_orders(views in proptest::collection::vec(pod_view(), 0..8)) {
        check_total_order(&views, compare_active)?;
        check_total_order(&views, compare_for_deletion)?;
    }

    /// The deletion order does not depend on the order pods are listed in.
    #[test]
    fn deletion_order_ignores_input_order(
        views in proptest::collection::vec(pod_view(), 0..12).prop_shuffle(),
    ) {
        // Names are the tie-break, so make them unique.
        let views: Vec<PodRankView> = views
            .into_iter()
            .enumerate()
            .map(|(i, mut v)| { v.name = format!("{}-{i:02}", v.name); v })
            .collect();
        let mut reversed = views.clone();
        reversed.reverse();
        let names = |vs: &[PodRankView], order: Vec<usize>| -> Vec<String> {
            order.into_iter().map(|i| vs[i].name.clone()).collect()
        };
        prop_assert_eq!(
            names(&views, deletion_order(&views)),
            names(&reversed, deletion_order(&reversed))
        );
        // Same-node ranks follow the pods, not their positions.
        let ranks = same_node_ranks(&views);
        let reversed_ranks = same_node_ranks(&reversed);
        for (i, r) in ranks.iter().enumerate() {
            prop_assert_eq!(*r, reversed_ranks[views.len() - 1 - i]);
        }
    }
}
