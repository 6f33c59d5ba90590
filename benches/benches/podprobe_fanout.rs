//! The PodProbeMarker fan-out at issue #43's scale: 1,000 PodProbeMarkers (10 in each of 100
//! namespaces), 100,000 pods over 5,000 nodes (20 per node, each matched by one marker). One
//! pod event wakes the pod's node, whose reconcile is measured whole, as the NodePodProbe
//! controller does it: the node's 20 cached pods read back into Pods, the markers of their
//! namespaces indexed, and [`plan_node`]:
//!
//! - `steady`: the NodePodProbe is current (the common pod event: a status change);
//! - `new_pod`: a pod has just been bound to the node (its entry is appended);
//! - `marks`: every pod has a result to turn into its condition and markers.
//!
//! The target is under 50 µs per event.
//!
//! `cargo bench -p benches --bench podprobe_fanout`

use std::sync::Arc;

use criterion::{Criterion, criterion_group, criterion_main};
use k8s_openapi::api::core::v1::Pod;
use kruise_api::apps::v1alpha1::{NodePodProbe, NodePodProbeStatus, PodProbeMarker};
use kruise_core::podprobe::{NodeSnapshot, NodeState, desired_spec, plan_node};
use kruise_kube::cache::Cache;
use kruise_kube::cached_pod::CachedPod;
use kruise_kube::podprobe::{markers_of, pods_for_planning};
use serde_json::json;

const NAMESPACES: usize = 100;
const MARKERS_PER_NAMESPACE: usize = 10;
const NODES: usize = 5000;
const PODS: usize = 100_000;

fn marker(namespace: usize, app: usize) -> PodProbeMarker {
    serde_json::from_value(json!({
        "apiVersion": "apps.kruise.io/v1alpha1", "kind": "PodProbeMarker",
        "metadata": {"name": format!("marker-{app}"), "namespace": format!("ns-{namespace}"), "generation": 1},
        "spec": {
            "selector": {"matchLabels": {"app": format!("app-{app}")}},
            "probes": [{
                "name": "idle", "containerName": "main",
                "probe": {"exec": {"command": ["/home/game/idle.sh"]}, "periodSeconds": 10, "timeoutSeconds": 3},
                "podConditionType": "game.io/idle",
                "markerPolicy": [
                    {"state": "Succeeded", "labels": {"gameserver-idle": "true"}, "annotations": {"controller.kubernetes.io/pod-deletion-cost": "-10"}},
                    {"state": "Failed", "labels": {"gameserver-idle": "false"}}
                ]
            }]
        }
    }))
    .expect("a marker")
}

fn pod(i: usize) -> Pod {
    let node = i % NODES;
    serde_json::from_value(json!({
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {
            "name": format!("pod-{i}"), "namespace": format!("ns-{}", i % NAMESPACES),
            "uid": format!("uid-{i}"), "resourceVersion": "1",
            "labels": {"app": format!("app-{}", (i / NAMESPACES) % MARKERS_PER_NAMESPACE), "tier": "game"},
            "ownerReferences": [{"apiVersion": "apps.kruise.io/v1alpha1", "kind": "CloneSet", "name": "game", "uid": "cs", "controller": true}]
        },
        "spec": {
            "nodeName": format!("node-{node}"),
            "containers": [{"name": "main", "image": "registry.example/game:v1",
                "ports": [{"name": "http", "containerPort": 8080}],
                "resources": {"requests": {"cpu": "500m", "memory": "512Mi"}}}]
        },
        "status": {
            "phase": "Running", "podIP": format!("10.{}.{}.{}", i / 65536, (i / 256) % 256, i % 256),
            "conditions": [
                {"type": "Initialized", "status": "True"},
                {"type": "Ready", "status": "True"},
                {"type": "ContainersReady", "status": "True"},
                {"type": "PodScheduled", "status": "True"}
            ],
            "containerStatuses": [{"name": "main", "ready": true, "restartCount": 0, "image": "registry.example/game:v1", "imageID": "", "containerID": "containerd://abc", "state": {"running": {"startedAt": "2024-01-01T00:00:00Z"}}}]
        }
    }))
    .expect("a pod")
}

struct Node {
    cached: Vec<Arc<CachedPod>>,
    probe: NodePodProbe,
}

fn bench(c: &mut Criterion) {
    let now = benches::now();
    let markers: Vec<PodProbeMarker> = (0..NAMESPACES)
        .flat_map(|ns| (0..MARKERS_PER_NAMESPACE).map(move |app| marker(ns, app)))
        .collect();
    let marker_cache = Cache::<PodProbeMarker>::new();
    marker_cache.load(markers.iter().cloned().map(Arc::new).collect());
    // The cluster's pods, cached as the manager caches them; one node examined.
    let all: Vec<Arc<CachedPod>> =
        (0..PODS).map(|i| Arc::new(CachedPod::from_pod(pod(i)))).collect();
    let node_of = |i: usize| i % NODES;
    let node = 1234;
    let cached: Vec<Arc<CachedPod>> =
        (0..PODS).filter(|i| node_of(*i) == node).map(|i| all[i].clone()).collect();
    assert_eq!(cached.len(), PODS / NODES);
    let pods: Vec<Pod> = cached.iter().map(|p| p.to_pod().expect("decodes")).collect();
    let marker_refs: Vec<&PodProbeMarker> = markers.iter().collect();
    let spec = desired_spec(None, &pods.iter().collect::<Vec<_>>(), &marker_refs, false);
    assert_eq!(spec.pod_probes.len(), PODS / NODES);
    let mut probe = NodePodProbe::new(&format!("node-{node}"), spec);
    probe.metadata.resource_version = Some("5".into());
    let current = Node { cached, probe };

    // One reconcile of the node, as the controller runs it.
    let reconcile = |node: &Node, probe: &NodePodProbe| {
        let markers = markers_of(&node.cached, &marker_cache);
        let pods = pods_for_planning("node-1234", &node.cached, &markers);
        let snapshot = NodeSnapshot {
            node_name: "node-1234",
            node: NodeState::Ready,
            serverless: false,
            enhanced_liveness: false,
            probe: Some(probe),
            pods: pods.iter().collect(),
            markers: markers.iter().map(AsRef::as_ref).collect(),
        };
        plan_node(&snapshot, now)
    };

    let steady = reconcile(&current, &current.probe);
    assert!(steady.actions.is_empty(), "{:?}", steady.actions);
    let mut group = c.benchmark_group("podprobe_fanout");
    group.bench_function("steady", |b| b.iter(|| reconcile(&current, &current.probe)));

    // Its parts: reading the pods and markers, and the plan alone.
    group.bench_function("steady_read", |b| {
        b.iter(|| {
            let markers = markers_of(&current.cached, &marker_cache);
            pods_for_planning("node-1234", &current.cached, &markers)
        })
    });
    let markers_now = markers_of(&current.cached, &marker_cache);
    let pods_now = pods_for_planning("node-1234", &current.cached, &markers_now);
    group.bench_function("steady_plan", |b| {
        b.iter(|| {
            let snapshot = NodeSnapshot {
                node_name: "node-1234",
                node: NodeState::Ready,
                serverless: false,
                enhanced_liveness: false,
                probe: Some(&current.probe),
                pods: pods_now.iter().collect(),
                markers: markers_now.iter().map(AsRef::as_ref).collect(),
            };
            plan_node(&snapshot, now)
        })
    });

    let mut fewer = current.probe.clone();
    fewer.spec.pod_probes.pop();
    assert_eq!(reconcile(&current, &fewer).actions.len(), 1);
    group.bench_function("new_pod", |b| b.iter(|| reconcile(&current, &fewer)));

    let status: NodePodProbeStatus = serde_json::from_value(json!({
        "podProbeStatuses": current.probe.spec.pod_probes.iter().map(|p| json!({
            "name": p.name, "namespace": p.namespace, "uid": p.uid,
            "probeStates": [{"name": p.probes[0].name, "state": "Succeeded", "message": "idle",
                             "lastProbeTime": "2024-05-01T10:00:00Z", "lastTransitionTime": "2024-05-01T10:00:00Z"}]
        })).collect::<Vec<_>>()
    }))
    .expect("a status");
    let mut with_results = current.probe.clone();
    with_results.status = Some(status);
    assert_eq!(reconcile(&current, &with_results).actions.len(), PODS / NODES);
    group.bench_function("marks", |b| b.iter(|| reconcile(&current, &with_results)));
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
