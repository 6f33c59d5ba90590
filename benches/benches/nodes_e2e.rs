//! End to end through the embedded API server: real HTTPS requests from a kube-rs client, the
//! simulated scheduler and kubelets (zero delays) talking to the server through its
//! kubeconfig, and a watch seeing the result.
//!
//! - "1,000 pods scheduled and Ready" (criterion, `iter_custom`): wall time from creating
//!   1,000 pods (32 requests in flight) until a watch has seen every one Ready, on 20 nodes.
//!   A fresh server per iteration; its start is not measured.
//! - "1,000-pod Deployment Ready" (criterion): the same, but the pods come from one
//!   Deployment of 1,000 replicas through kruise-sim's built-in Deployment and ReplicaSet
//!   controllers: wall time from creating the Deployment until a watch has seen 1,000 Ready
//!   pods. Compare with the line above (the same pods from a raw client).
//! - "10,000 pods held by 100 nodes" (one run, printed): time until a watch has seen all
//!   10,000 Ready, then until the server has been quiet (no writes) for 1 s, and the
//!   process's resident memory before and after.
//!
//! `cargo bench -p benches --bench nodes_e2e`

use criterion::{Criterion, SamplingMode};
use futures::{StreamExt as _, TryStreamExt as _};
use k8s_openapi::api::core::v1::Pod;
use kruise_sim::nodes::kubelet::Delays;
use kruise_sim::nodes::{NodeSpec, NodesConfig};
use kruise_sim::{Config, Server, ServerHandle};
use kube::api::{Api, PostParams};
use kube::runtime::{WatchStreamExt as _, watcher};
use std::collections::HashSet;
use std::time::{Duration, Instant};

const ZERO: Delays = Delays {
    pull: Duration::ZERO,
    start: Duration::ZERO,
    ready: Duration::ZERO,
    init_run: Duration::ZERO,
    stop: Duration::ZERO,
    run: Duration::ZERO,
    restart_backoff: Duration::ZERO,
};

/// A server with `nodes` simulated nodes and a client for it.
async fn cluster(nodes: usize) -> (ServerHandle, kube::Client) {
    cluster_with(nodes, false).await
}

/// A server with `nodes` simulated nodes, and the built-in controllers if `controllers`.
async fn cluster_with(nodes: usize, controllers: bool) -> (ServerHandle, kube::Client) {
    let specs = (0..nodes)
        .map(|i| NodeSpec::new(&format!("n-{i}")).zone(["z-a", "z-b", "z-c"][i % 3]))
        .collect();
    let nc = NodesConfig::new(0).with_nodes(specs).with_delays(ZERO);
    let config = Config { controllers, ..Config::default() }.with_nodes(nc);
    let server = Server::start(config).await.expect("server starts");
    let client =
        kruise_sim::nodes::client_from_kubeconfig(&server.kubeconfig).await.expect("client");
    (server, client)
}

fn pod(i: usize) -> Pod {
    serde_json::from_value(serde_json::json!({
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": format!("p-{i}"), "namespace": "default", "labels": {"app": "web"}},
        "spec": {"containers": [{"name": "c", "image": "nginx:1.25",
            "resources": {"requests": {"cpu": "10m", "memory": "16Mi"}}}]}
    }))
    .expect("pod")
}

fn ready(p: &Pod) -> bool {
    p.status
        .as_ref()
        .and_then(|s| s.conditions.as_ref())
        .is_some_and(|c| c.iter().any(|c| c.type_ == "Ready" && c.status == "True"))
}

/// Creates `count` pods and returns when a watch has seen all of them Ready.
async fn create_until_ready(client: &kube::Client, count: usize) -> Duration {
    let api: Api<Pod> = Api::namespaced(client.clone(), "default");
    let watch = watch_ready(&api, count);
    let start = Instant::now();
    futures::stream::iter(0..count)
        .map(|i| {
            let api = api.clone();
            async move { api.create(&PostParams::default(), &pod(i)).await.map(|_| ()) }
        })
        .buffer_unordered(32)
        .try_collect::<()>()
        .await
        .expect("pods created");
    watch.await.expect("watch task");
    start.elapsed()
}

/// Creates a Deployment of `count` replicas (the pods of [`pod`]) and returns when a watch has
/// seen `count` of its pods Ready.
async fn deployment_until_ready(client: &kube::Client, count: usize) -> Duration {
    let pods: Api<Pod> = Api::namespaced(client.clone(), "default");
    let watch = watch_ready(&pods, count);
    let template = serde_json::to_value(pod(0)).expect("pod");
    let deployment: k8s_openapi::api::apps::v1::Deployment =
        serde_json::from_value(serde_json::json!({
            "apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {"name": "web", "namespace": "default"},
            "spec": {"replicas": count, "selector": {"matchLabels": {"app": "web"}},
                "template": {"metadata": {"labels": {"app": "web"}}, "spec": template["spec"]}}
        }))
        .expect("deployment");
    let start = Instant::now();
    Api::namespaced(client.clone(), "default")
        .create(&PostParams::default(), &deployment)
        .await
        .expect("deployment created");
    watch.await.expect("watch task");
    start.elapsed()
}

/// A task that ends once a watch has seen `count` pods Ready.
fn watch_ready(api: &Api<Pod>, count: usize) -> tokio::task::JoinHandle<()> {
    tokio::spawn({
        let api = api.clone();
        async move {
            let mut seen = HashSet::new();
            let stream = watcher::watcher(api, watcher::Config::default()).applied_objects();
            let mut stream = std::pin::pin!(stream);
            while let Ok(Some(p)) = stream.try_next().await {
                if ready(&p)
                    && let Some(n) = p.metadata.name
                {
                    seen.insert(n);
                    if seen.len() == count {
                        return;
                    }
                }
            }
        }
    })
}

fn thousand(c: &mut Criterion, rt: &tokio::runtime::Runtime) {
    let mut g = c.benchmark_group("e2e");
    g.sample_size(10)
        .sampling_mode(SamplingMode::Flat)
        .warm_up_time(Duration::from_millis(500))
        .measurement_time(Duration::from_secs(10));
    g.bench_function("1000 pods scheduled and Ready (20 nodes)", |b| {
        b.iter_custom(|iters| {
            let mut total = Duration::ZERO;
            for _ in 0..iters {
                total += rt.block_on(async {
                    let (server, client) = cluster(20).await;
                    let t = create_until_ready(&client, 1000).await;
                    server.shutdown();
                    t
                });
            }
            total
        })
    });
    g.bench_function("1000-pod Deployment Ready (20 nodes)", |b| {
        b.iter_custom(|iters| {
            let mut total = Duration::ZERO;
            for _ in 0..iters {
                total += rt.block_on(async {
                    let (server, client) = cluster_with(20, true).await;
                    let t = deployment_until_ready(&client, 1000).await;
                    server.shutdown();
                    t
                });
            }
            total
        })
    });
    g.finish();
}

fn ten_thousand(rt: &tokio::runtime::Runtime) {
    rt.block_on(async {
        let (rss0, _) = benches::memory_mib("self");
        let (server, client) = cluster(100).await;
        let (rss_nodes, _) = benches::memory_mib("self");
        let ready = create_until_ready(&client, 10_000).await;
        let start_quiet = Instant::now();
        let store = server.cluster().store();
        let mut last = store.current_rv();
        let mut quiet_since = Instant::now();
        while quiet_since.elapsed() < Duration::from_secs(1) {
            tokio::time::sleep(Duration::from_millis(50)).await;
            let rv = store.current_rv();
            if rv != last {
                last = rv;
                quiet_since = Instant::now();
            }
        }
        let steady = ready + (quiet_since - start_quiet);
        let (rss1, hwm) = benches::memory_mib("self");
        println!(
            "e2e/10000 pods held by 100 nodes: all Ready after {:.2} s; steady (no writes for 1 s) after {:.2} s; resourceVersion {last}",
            ready.as_secs_f64(),
            steady.as_secs_f64()
        );
        println!(
            "e2e/10000 pods held by 100 nodes: RSS {rss0:.0} MiB at start, {rss_nodes:.0} MiB with 100 nodes, {rss1:.0} MiB holding 10,000 pods (peak {hwm:.0} MiB)"
        );
        server.shutdown();
    });
}

fn main() {
    let rt = tokio::runtime::Builder::new_multi_thread().enable_all().build().expect("runtime");
    let mut c = Criterion::default().configure_from_args();
    let filter = std::env::args().skip(1).find(|a| !a.starts_with('-'));
    if filter.as_deref().is_none_or(|f| "e2e/10000 pods held by 100 nodes".contains(f)) {
        ten_thousand(&rt);
    }
    thousand(&mut c, &rt);
    c.final_summary();
}
