//! BroadcastJob planner invariants: never two pods on one node, never more active pods than
//! the parallelism allows, only eligible nodes, and the same pods planned again from a stale
//! snapshot (so a repeated creation is refused as a duplicate name, never a second pod).

use std::collections::{BTreeMap, BTreeSet};

use k8s_openapi::api::core::v1::{Node, Pod};
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;
use kruise_api::apps::v1beta1::BroadcastJob;
use kruise_core::broadcastjob::{Snapshot, assigned_node, node_fits, plan, pod_for_node};
use kruise_core::plan::Action;
use proptest::prelude::*;
use serde_json::json;

fn node(i: usize, cordoned: bool) -> Node {
    serde_json::from_value(json!({
        "metadata": {"name": format!("n{i:02}")},
        "spec": {"unschedulable": cordoned},
        "status": {"allocatable": {"cpu": "4", "memory": "8Gi", "pods": "10"}}
    }))
    .expect("a node")
}

fn job(parallelism: Option<IntOrString>) -> BroadcastJob {
    let mut value = json!({
        "apiVersion": "apps.kruise.io/v1beta1", "kind": "BroadcastJob",
        "metadata": {"name": "job", "namespace": "default", "uid": "job-uid"},
        "spec": {"template": {"spec": {"restartPolicy": "Never",
            "containers": [{"name": "main", "image": "busybox"}]}},
            "failurePolicy": {"type": "Continue"}}
    });
    if let Some(p) = parallelism {
        value["spec"]["parallelism"] = serde_json::to_value(p).expect("json");
    }
    serde_json::from_value(value).expect("a job")
}

fn pod(job: &BroadcastJob, node: &str, phase: &str) -> Pod {
    let mut pod = pod_for_node(job, node, true);
    pod.metadata.uid = Some(format!("uid-{node}"));
    pod.status = Some(serde_json::from_value(json!({"phase": phase})).expect("status"));
    pod
}

fn created(actions: &[Action]) -> Vec<Pod> {
    actions
        .iter()
        .filter_map(|a| match a {
            Action::CreatePod { pod } => Some(pod.build().into_owned()),
            _ => None,
        })
        .collect()
}

fn is_active(pod: &Pod) -> bool {
    let phase = pod.status.as_ref().and_then(|s| s.phase.as_deref()).unwrap_or("Pending");
    phase != "Succeeded" && phase != "Failed"
}

fn parallelism_strategy() -> impl Strategy<Value = Option<IntOrString>> {
    prop_oneof![
        Just(None),
        (1i32..8).prop_map(|n| Some(IntOrString::Int(n))),
        (1i32..101).prop_map(|p| Some(IntOrString::String(format!("{p}%")))),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 200, ..ProptestConfig::default() })]

    #[test]
    fn one_pod_per_node_within_the_parallelism(
        cordoned in proptest::collection::vec(any::<bool>(), 1..16),
        existing in proptest::collection::btree_map(0usize..16, 0usize..3, 0..10),
        parallelism in parallelism_strategy(),
        rounds in 1usize..6,
    ) {
        let job = job(parallelism.clone());
        let nodes: Vec<Node> =
            cordoned.iter().enumerate().map(|(i, c)| node(i, *c)).collect();
        let phases = ["Running", "Succeeded", "Failed"];
        let mut pods: BTreeMap<String, Pod> = existing
            .iter()
            .filter(|(i, _)| **i < nodes.len())
            .map(|(i, p)| {
                let name = format!("n{i:02}");
                (name.clone(), pod(&job, &name, phases[*p]))
            })
            .collect();
        let eligible: BTreeSet<String> = nodes
            .iter()
            .filter(|n| !n.spec.as_ref().and_then(|s| s.unschedulable).unwrap_or(false))
            .filter_map(|n| n.metadata.name.clone())
            .collect();
        let desired = nodes
            .iter()
            .filter(|n| {
                let name = n.metadata.name.clone().unwrap_or_default();
                pods.contains_key(&name) || eligible.contains(&name)
            })
            .count();
        let limit = match &parallelism {
            None => usize::MAX,
            Some(IntOrString::Int(n)) => usize::try_from(*n).unwrap_or(0),
            Some(IntOrString::String(p)) => {
                let p: f64 = p.trim_end_matches('%').parse().unwrap_or(0.0);
                (p * desired as f64 / 100.0).ceil() as usize
            }
        };
        let now: jiff::Timestamp = "2026-12-04T12:00:00Z".parse().expect("time");
        let initially_active = pods.values().filter(|p| is_active(p)).count();
        for _ in 0..rounds {
            let snapshot = Snapshot {
                job: job.clone(),
                pods: pods.values().cloned().collect(),
                nodes: nodes.clone(),
                assign_by_scheduler: true,
                readiness_gate: true,
            };
            let planned = plan(&snapshot, now);
            let new = created(&planned.actions);
            // A stale snapshot plans the very same pods.
            let again = created(&plan(&snapshot, now).actions);
            prop_assert_eq!(&new, &again);
            let mut seen = BTreeSet::new();
            for p in &new {
                let on = assigned_node(p).expect("pinned").to_owned();
                prop_assert!(seen.insert(on.clone()), "two new pods for {}", on);
                prop_assert!(!pods.contains_key(&on), "a second pod on {}", on);
                prop_assert!(eligible.contains(&on), "{} is not eligible", on);
                let target = nodes.iter().find(|n| n.metadata.name.as_deref() == Some(&on));
                prop_assert!(node_fits(p.spec.as_ref().expect("spec"), target.expect("node")));
                pods.insert(on, p.clone());
            }
            let active = pods.values().filter(|p| is_active(p)).count();
            prop_assert!(
                active <= limit.max(initially_active),
                "{} active, parallelism {:?} ({})", active, parallelism, limit
            );
            // Some pods finish before the next round.
            if let Some(p) = pods.values_mut().find(|p| is_active(p)) {
                p.status = Some(serde_json::from_value(json!({"phase": "Succeeded"})).expect("s"));
            }
        }
    }
}
