//! The embedded API server's own scale: listing 10,000 pods, fanning one change out to 20
//! watchers, and the memory of holding 100,000 pods.
//!
//! The server runs in this process without simulated nodes (pods stay Pending, nothing
//! writes but the bench). Clients are kube-rs clients built from the server's kubeconfig, over
//! its HTTPS endpoint, as a controller would talk to it.
//!
//! - `sim/list 10000 pods`: one `GET /api/v1/namespaces/default/pods` (the whole list, ~13 MB
//!   of JSON), read as text; and the same list in pages of 500 (`limit`/`continue`).
//! - `sim/fan-out to 20 watchers`: 20 watches on the namespace's pods; each sample patches one
//!   pod's label and times until all 20 have received that `MODIFIED` event.
//! - `sim/hold 100000 pods` (printed first): creates 100,000 pods (32 requests in flight) and
//!   reports the process's RSS before and after, per pod. `KRUISE_BENCH_HELD_PODS` changes the
//!   count (0 skips it). The bench fails when a pod costs more than the target's share: 800 MiB
//!   for 100,000 pods, 8.19 KiB each.
//!
//! `cargo bench -p benches --bench sim_api`

use criterion::{Criterion, SamplingMode};
use futures::{StreamExt as _, TryStreamExt as _};
use k8s_openapi::api::core::v1::Pod;
use kruise_sim::{Config, Server, ServerHandle};
use kube::api::{Api, ListParams, Patch, PatchParams, PostParams, WatchEvent, WatchParams};
use std::time::{Duration, Instant};
use tokio::sync::mpsc;

const LISTED: usize = 10_000;
const WATCHERS: usize = 20;

async fn start() -> (ServerHandle, kube::Client) {
    let server = Server::start(Config::default()).await.expect("server starts");
    let client =
        kruise_sim::nodes::client_from_kubeconfig(&server.kubeconfig).await.expect("client");
    (server, client)
}

fn pod(i: usize) -> Pod {
    serde_json::from_value(serde_json::json!({
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": format!("p-{i}"), "namespace": "default",
            "labels": {"app": "web", "tier": "bench"}},
        "spec": {"containers": [{"name": "c", "image": "nginx:1.25",
            "resources": {"requests": {"cpu": "10m", "memory": "16Mi"}}}]}
    }))
    .expect("pod")
}

/// Creates pods `from..to` with 32 requests in flight.
async fn create_pods(client: &kube::Client, from: usize, to: usize) {
    let api: Api<Pod> = Api::namespaced(client.clone(), "default");
    futures::stream::iter(from..to)
        .map(|i| {
            let api = api.clone();
            async move { api.create(&PostParams::default(), &pod(i)).await.map(|_| ()) }
        })
        .buffer_unordered(32)
        .try_collect::<Vec<()>>()
        .await
        .expect("pods created");
}

fn hold(rt: &tokio::runtime::Runtime, count: usize) {
    rt.block_on(async {
        let (server, client) = start().await;
        let (before, _) = benches::memory_mib("self");
        let started = Instant::now();
        create_pods(&client, 0, count).await;
        let created = started.elapsed();
        let (after, peak) = benches::memory_mib("self");
        let api: Api<Pod> = Api::namespaced(client.clone(), "default");
        let listed = api.list_metadata(&ListParams::default().limit(1)).await.expect("list");
        let total = listed.metadata.remaining_item_count.unwrap_or(0) + listed.items.len() as i64;
        assert_eq!(total, count as i64, "the server holds every pod");
        let per_pod_kib = (after - before) * 1024.0 / count as f64;
        println!(
            "sim/hold {count} pods: created in {:.1} s ({:.0} per s); RSS {before:.0} MiB before, {after:.0} MiB after (peak {peak:.0} MiB): {per_pod_kib:.1} KiB per pod",
            created.as_secs_f64(),
            count as f64 / created.as_secs_f64(),
        );
        server.shutdown();
        // The target (issue #47): 100,000 pods in under 800 MiB, that is under 8.19 KiB a pod
        // over the empty server. Missed, the bench fails rather than printing a number.
        let target_kib = 800.0 * 1024.0 / 100_000.0;
        assert!(
            per_pod_kib < target_kib,
            "sim/hold: TARGET MISSED: {per_pod_kib:.1} KiB per pod, over {target_kib:.2} KiB \
             (800 MiB for 100,000 pods)"
        );
    });
}

fn list(c: &mut Criterion, rt: &tokio::runtime::Runtime, client: &kube::Client) {
    let mut g = c.benchmark_group("sim");
    g.sample_size(10).sampling_mode(SamplingMode::Flat).measurement_time(Duration::from_secs(8));
    let url = "/api/v1/namespaces/default/pods";
    let body_len = rt.block_on(async {
        let req = http::Request::get(url).body(Vec::new()).expect("request");
        client.request_text(req).await.expect("list").len()
    });
    println!("sim/list {LISTED} pods: {:.1} MB of JSON", body_len as f64 / 1e6);
    g.bench_function(format!("list {LISTED} pods"), |b| {
        b.iter(|| {
            rt.block_on(async {
                let req = http::Request::get(url).body(Vec::new()).expect("request");
                let text = client.request_text(req).await.expect("list");
                assert_eq!(text.len(), body_len);
            })
        })
    });
    g.bench_function(format!("list {LISTED} pods in pages of 500"), |b| {
        b.iter(|| {
            rt.block_on(async {
                let api: Api<Pod> = Api::namespaced(client.clone(), "default");
                let mut seen = 0;
                let mut params = ListParams::default().limit(500);
                loop {
                    let page = api.list(&params).await.expect("page");
                    seen += page.items.len();
                    match page.metadata.continue_.filter(|c| !c.is_empty()) {
                        Some(token) => params = params.continue_token(&token),
                        None => break,
                    }
                }
                assert_eq!(seen, LISTED);
            })
        })
    });
    g.finish();
}

fn fan_out(c: &mut Criterion, rt: &tokio::runtime::Runtime, client: &kube::Client) {
    let api: Api<Pod> = Api::namespaced(client.clone(), "default");
    // Every watcher reports the resourceVersion of each MODIFIED event it receives.
    let (tx, mut rx) = mpsc::unbounded_channel::<(usize, String)>();
    rt.block_on(async {
        let rv = api.list_metadata(&ListParams::default().limit(1)).await.expect("list");
        let rv = rv.metadata.resource_version.unwrap_or_default();
        for w in 0..WATCHERS {
            let api = api.clone();
            let tx = tx.clone();
            let rv = rv.clone();
            tokio::spawn(async move {
                let params = WatchParams::default().timeout(290);
                let mut stream = api.watch(&params, &rv).await.expect("watch").boxed();
                while let Some(Ok(event)) = stream.next().await {
                    if let WatchEvent::Modified(pod) = event
                        && tx.send((w, pod.metadata.resource_version.unwrap_or_default())).is_err()
                    {
                        return;
                    }
                }
            });
        }
    });
    let mut g = c.benchmark_group("sim");
    g.sample_size(50).measurement_time(Duration::from_secs(8));
    let mut round = 0u64;
    g.bench_function(format!("fan-out to {WATCHERS} watchers"), |b| {
        b.iter_custom(|iters| {
            let mut total = Duration::ZERO;
            for _ in 0..iters {
                round += 1;
                total += rt.block_on(async {
                    let patch =
                        serde_json::json!({"metadata": {"labels": {"round": round.to_string()}}});
                    let started = Instant::now();
                    let patched = api
                        .patch("p-0", &PatchParams::default(), &Patch::Merge(&patch))
                        .await
                        .expect("patch");
                    let rv = patched.metadata.resource_version.unwrap_or_default();
                    let mut seen = [false; WATCHERS];
                    while seen.iter().any(|s| !s) {
                        let (w, got) = rx.recv().await.expect("watchers run");
                        if got == rv {
                            seen[w] = true;
                        }
                    }
                    started.elapsed()
                });
            }
            total
        })
    });
    g.finish();
}

fn main() {
    let rt = tokio::runtime::Builder::new_multi_thread().enable_all().build().expect("runtime");
    let mut c = Criterion::default().configure_from_args();
    let held: usize = std::env::var("KRUISE_BENCH_HELD_PODS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(100_000);
    if held > 0 {
        hold(&rt, held);
    }
    let (server, client) = rt.block_on(start());
    rt.block_on(create_pods(&client, 0, LISTED));
    list(&mut c, &rt, &client);
    fan_out(&mut c, &rt, &client);
    server.shutdown();
    c.final_summary();
}
