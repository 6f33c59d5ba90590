//! The BroadcastJob planner over 5,000 nodes (issue #41's target: under 2 ms):
//!
//! - `first_round`: no pods yet, parallelism 500: every node is judged and 500 pods are built;
//! - `steady`: every node has its pod, half running and half succeeded: nothing to create,
//!   the counts and the completion check.
//!
//! `cargo bench -p benches --bench broadcastjob_plan`

use criterion::{Criterion, criterion_group, criterion_main};
use k8s_openapi::api::core::v1::{Node, Pod};
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;
use kruise_api::apps::v1beta1::BroadcastJob;
use kruise_core::broadcastjob::{Snapshot, plan, pod_for_node};
use serde_json::json;

const NODES: usize = 5000;

fn node(i: usize) -> Node {
    serde_json::from_value(json!({
        "metadata": {"name": format!("node-{i:05}"),
                     "labels": {"topology.kubernetes.io/zone": format!("zone-{}", i % 3)}},
        "spec": {"taints": [{"key": "dedicated", "value": "batch", "effect": "NoSchedule"}]},
        "status": {"allocatable": {"cpu": "32", "memory": "128Gi", "pods": "110"}}
    }))
    .expect("a node")
}

fn job() -> BroadcastJob {
    serde_json::from_value(json!({
        "apiVersion": "apps.kruise.io/v1beta1", "kind": "BroadcastJob",
        "metadata": {"name": "warm-cache", "namespace": "default", "uid": "job-uid"},
        "spec": {
            "parallelism": IntOrString::Int(500),
            "template": {"spec": {
                "restartPolicy": "Never",
                "tolerations": [{"key": "dedicated", "operator": "Equal", "value": "batch",
                                 "effect": "NoSchedule"}],
                "containers": [{"name": "main", "image": "registry.example/warm:v1",
                    "resources": {"requests": {"cpu": "100m", "memory": "64Mi"}}}]}}
        }
    }))
    .expect("a job")
}

fn with_phase(mut pod: Pod, i: usize, phase: &str) -> Pod {
    pod.metadata.uid = Some(format!("pod-uid-{i}"));
    pod.status = Some(serde_json::from_value(json!({"phase": phase})).expect("status"));
    pod
}

fn bench(c: &mut Criterion) {
    let now = benches::now();
    let job = job();
    let nodes: Vec<Node> = (0..NODES).map(node).collect();
    let first = Snapshot {
        job: job.clone(),
        pods: vec![],
        nodes: nodes.clone(),
        assign_by_scheduler: true,
        readiness_gate: true,
    };
    assert_eq!(plan(&first, now).actions.len(), 500);
    c.bench_function("broadcastjob_plan/first_round_5000_nodes", |b| {
        b.iter(|| plan(std::hint::black_box(&first), now))
    });
    let pods: Vec<Pod> = (0..NODES)
        .map(|i| {
            let pod = pod_for_node(&job, &format!("node-{i:05}"), true);
            with_phase(pod, i, if i % 2 == 0 { "Running" } else { "Succeeded" })
        })
        .collect();
    let steady = Snapshot { job, pods, nodes, assign_by_scheduler: true, readiness_gate: true };
    assert!(plan(&steady, now).actions.is_empty());
    c.bench_function("broadcastjob_plan/steady_5000_nodes", |b| {
        b.iter(|| plan(std::hint::black_box(&steady), now))
    });
}

criterion_group!(benches, bench);
criterion_main!(benches);
