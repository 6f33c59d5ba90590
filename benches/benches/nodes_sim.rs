//! The simulated nodes' hot paths, without the API server: scheduling 1,000 pods with zone
//! spread onto 100 nodes, and kubelets driving 10,000 pods on 100 nodes to Ready.

use criterion::{Criterion, criterion_group, criterion_main};
use k8s_openapi::api::core::v1::{Node, Pod};
use kruise_sim::nodes::kubelet::{Delays, Kubelet};
use kruise_sim::nodes::runtime::FakeRuntime;
use kruise_sim::nodes::scheduler::{Placed, View};
use serde_json::json;
use std::sync::Arc;
use std::time::Duration;

fn nodes(n: usize) -> Vec<Node> {
    (0..n)
        .map(|i| {
            serde_json::from_value(json!({
                "metadata": {"name": format!("n-{i}"), "labels": {"kubernetes.io/hostname": format!("n-{i}"), "topology.kubernetes.io/zone": format!("z-{}", i % 3)}},
                "spec": {},
                "status": {"allocatable": {"cpu": "32", "memory": "256Gi", "pods": "110"}}
            }))
            .expect("node")
        })
        .collect()
}

fn pod(i: usize) -> Pod {
    serde_json::from_value(json!({
        "metadata": {"name": format!("p-{i}"), "namespace": "default", "uid": format!("u-{i}"), "labels": {"app": "web"}},
        "spec": {
            "containers": [{"name": "c", "image": "nginx", "resources": {"requests": {"cpu": "100m", "memory": "128Mi"}}}],
            "topologySpreadConstraints": [{"maxSkew": 1, "topologyKey": "topology.kubernetes.io/zone", "whenUnsatisfiable": "DoNotSchedule", "labelSelector": {"matchLabels": {"app": "web"}}}]
        }
    }))
    .expect("pod")
}

fn bench(c: &mut Criterion) {
    let ns = nodes(100);
    let pods: Vec<Pod> = (0..1000).map(pod).collect();
    c.bench_function("schedule 1000 pods on 100 nodes", |b| {
        b.iter(|| {
            let mut v = View::new(&ns, Vec::new());
            for p in &pods {
                if let Ok(n) = v.schedule(p) {
                    v.assume(Placed::of(p, &n));
                }
            }
        })
    });
    let many: Vec<Pod> = (0..10_000).map(pod).collect();
    let delays = Delays {
        pull: Duration::ZERO,
        start: Duration::ZERO,
        ready: Duration::ZERO,
        init_run: Duration::ZERO,
        stop: Duration::ZERO,
        run: Duration::ZERO,
        restart_backoff: Duration::ZERO,
    };
    c.bench_function("kubelets drive 10000 pods on 100 nodes to Ready", |b| {
        b.iter(|| {
            let mut kubelets: Vec<Kubelet> = (0..100)
                .map(|i| {
                    Kubelet::new(
                        &format!("n-{i}"),
                        "172.18.0.2",
                        &format!("10.244.{i}"),
                        Arc::new(FakeRuntime::new("n")),
                        delays,
                    )
                })
                .collect();
            let now = tokio::time::Instant::now();
            for (i, p) in many.iter().enumerate() {
                let _ = kubelets[i % 100].sync(p, now);
            }
        })
    });
}

criterion_group! {
    name = benches;
    config = Criterion::default().sample_size(10).measurement_time(Duration::from_secs(3));
    targets = bench
}
criterion_main!(benches);
