//! The manager scaling a CloneSet from 0 to 1,000 pods, against the same client creating
//! the 1,000 pods itself.
//!
//! Everything runs in this process: the embedded API server (`kruise-sim` with the Kruise
//! CRDs, no nodes, so pods stay Pending) and, for the first scenario, the manager
//! (`kruise_kube::manager::run`, no leader election, no probes, no webhooks). The client the
//! manager (or the bench) writes with is built as `kruise-manager` builds its own: the
//! kubeconfig through `kruise_kube::client::client_from_config` with `--rest-config-qps` and
//! `--rest-config-burst` (default here: qps 0 = no client-side limit; override with
//! `KRUISE_BENCH_QPS` and `KRUISE_BENCH_BURST`).
//!
//! - "manager 0->1000": the CloneSet exists with `replicas: 0` and has been reconciled once;
//!   timed from the patch to `replicas: 1000` until a watch (a separate, unlimited client) has
//!   seen 1,000 pods of it.
//! - "client 1000 creates, 32 in flight": the same kind of client creates 1,000 pods (32
//!   requests in flight, the applier's concurrency), timed until the watch has seen them all.
//! - "client 1000 creates, sequential": the same, one request at a time.
//! - "client 1000 creates, slow-start batches": the same in batches of 1, 2, 4, ... 32, each
//!   finished before the next starts, as the manager's applier sends creates.
//!
//! Before those, one "detail" run of the manager (also until its status reports 1,000
//! replicas, with the writes, Events and reconciles it took) and one of the client.
//!
//! A fresh server (and manager) per iteration; their start is not timed. Criterion reports
//! each scenario; a table with the medians and the ratios is printed at the end.
//!
//! `cargo bench -p benches --bench manager_scale`

use criterion::{Criterion, SamplingMode};
use futures::{StreamExt as _, TryStreamExt as _};
use k8s_openapi::api::core::v1::{Event, Pod};
use kruise_api::apps::v1beta1::CloneSet;
use kruise_kube::manager::{ManagerConfig, ManagerHandle};
use kruise_sim::{Config, Server, ServerHandle};
use kube::api::{Api, ListParams, Patch, PatchParams, PostParams};
use kube::runtime::watcher;
use std::cell::RefCell;
use std::collections::HashSet;
use std::time::{Duration, Instant};

const PODS: usize = 1000;
const IN_FLIGHT: usize = 32;
const LABELS: &str = "app=web";

/// The client-side rate limit: (qps, burst).
fn limits() -> (f32, u32) {
    let qps = std::env::var("KRUISE_BENCH_QPS").ok().and_then(|v| v.parse().ok()).unwrap_or(0.0);
    let burst =
        std::env::var("KRUISE_BENCH_BURST").ok().and_then(|v| v.parse().ok()).unwrap_or(2000);
    (qps, burst)
}

/// A server with the Kruise CRDs; the client under test (built like the manager's) and an
/// unlimited client for watching.
async fn cluster() -> (ServerHandle, kube::Client, kube::Client) {
    let server = Server::start(Config::default().with_kruise_crds()).await.expect("server starts");
    let kubeconfig =
        kube::config::Kubeconfig::from_yaml(&server.kubeconfig).expect("kubeconfig parses");
    let config = kube::Config::from_custom_kubeconfig(kubeconfig, &Default::default())
        .await
        .expect("kube config");
    let (qps, burst) = limits();
    let client = kruise_kube::client::client_from_config(config, qps, burst).expect("client");
    let watch =
        kruise_sim::nodes::client_from_kubeconfig(&server.kubeconfig).await.expect("watch client");
    (server, client, watch)
}

fn container() -> serde_json::Value {
    serde_json::json!({"name": "c", "image": "nginx:1.25",
        "resources": {"requests": {"cpu": "10m", "memory": "16Mi"}}})
}

fn pod(i: usize) -> Pod {
    serde_json::from_value(serde_json::json!({
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": format!("web-{i}"), "namespace": "default", "labels": {"app": "web"}},
        "spec": {"containers": [container()]}
    }))
    .expect("pod")
}

fn cloneset(replicas: i32) -> CloneSet {
    serde_json::from_value(serde_json::json!({
        "apiVersion": "apps.kruise.io/v1beta1", "kind": "CloneSet",
        "metadata": {"name": "web", "namespace": "default"},
        "spec": {
            "replicas": replicas,
            "selector": {"matchLabels": {"app": "web"}},
            "template": {"metadata": {"labels": {"app": "web"}},
                         "spec": {"containers": [container()]}}
        }
    }))
    .expect("cloneset")
}

/// Starts a watch on the pods labelled `app=web`; returns once the watch has listed, with a
/// task that ends when it has seen `count` distinct pods.
async fn watch_pods(client: &kube::Client, count: usize) -> tokio::task::JoinHandle<()> {
    let api: Api<Pod> = Api::namespaced(client.clone(), "default");
    let (listed_tx, listed_rx) = tokio::sync::oneshot::channel();
    let task = tokio::spawn(async move {
        let mut listed = Some(listed_tx);
        let mut seen = HashSet::new();
        let stream = watcher::watcher(api, watcher::Config::default().labels(LABELS));
        let mut stream = std::pin::pin!(stream);
        while let Some(event) = stream.next().await {
            match event.expect("watch") {
                watcher::Event::InitDone => {
                    if let Some(tx) = listed.take() {
                        let _ = tx.send(());
                    }
                }
                watcher::Event::Apply(p) | watcher::Event::InitApply(p) => {
                    if let Some(n) = p.metadata.name {
                        seen.insert(n);
                    }
                }
                _ => {}
            }
            if seen.len() >= count && listed.is_none() {
                return;
            }
        }
    });
    listed_rx.await.expect("watch listed");
    task
}

/// What one manager run measured; the details only when asked for.
#[derive(Default)]
struct ManagerRun {
    /// From the scale patch until the watch has seen every pod.
    pods: Duration,
    /// From the scale patch until the CloneSet's status reports every replica.
    status: Option<Duration>,
    /// Writes the server took (resourceVersion delta) from the patch until the status.
    writes: u64,
    /// Events in the namespace at the end.
    events: usize,
    /// Pods with an `InPlaceUpdateReady` condition (a status patch each) at the end.
    conditioned: usize,
    /// Reconciles the manager counted (`controller_runtime_reconcile_total`).
    reconciles: f64,
}

/// The sum of every sample of `metric` in the Prometheus text `text`.
fn metric_sum(text: &str, metric: &str) -> f64 {
    text.lines()
        .filter(|l| l.starts_with(metric) && l[metric.len()..].starts_with(['{', ' ']))
        .filter_map(|l| l.rsplit(' ').next()?.parse::<f64>().ok())
        .sum()
}

/// One run of the manager scaling 0 -> `PODS`; with `detail`, also waits for the status.
async fn manager_run(detail: bool) -> ManagerRun {
    let (server, client, watch_client) = cluster().await;
    let mut config = ManagerConfig::default();
    config.leader_election = None;
    config.metrics_addr = None;
    config.health_addr = None;
    let (stop_tx, stop_rx) = tokio::sync::oneshot::channel::<()>();
    let (started_tx, started_rx) = tokio::sync::oneshot::channel::<ManagerHandle>();
    let manager = tokio::spawn(kruise_kube::manager::run(
        client,
        config,
        async move {
            let _ = stop_rx.await;
        },
        Some(started_tx),
    ));
    let handle = started_rx.await.expect("manager started");
    while !handle.health.is_ready() {
        tokio::time::sleep(Duration::from_millis(10)).await;
    }

    // The CloneSet at 0, reconciled once (its status observed generation 1).
    let api: Api<CloneSet> = Api::namespaced(watch_client.clone(), "default");
    api.create(&PostParams::default(), &cloneset(0)).await.expect("cloneset created");
    loop {
        let cs = api.get("web").await.expect("cloneset read");
        if cs.status.is_some_and(|s| s.observed_generation >= 1) {
            break;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    let watch = watch_pods(&watch_client, PODS).await;
    let rv0 = server.cluster().store().current_rv();

    let start = Instant::now();
    let patch = serde_json::json!({"spec": {"replicas": PODS}});
    api.patch("web", &PatchParams::default(), &Patch::Merge(&patch)).await.expect("scaled");
    watch.await.expect("watch task");
    let mut run = ManagerRun { pods: start.elapsed(), ..ManagerRun::default() };

    if detail {
        loop {
            let cs = api.get("web").await.expect("cloneset read");
            if cs.status.is_some_and(|s| s.replicas == PODS as i32 && s.observed_generation >= 2) {
                break;
            }
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
        run.status = Some(start.elapsed());
        run.writes = server.cluster().store().current_rv() - rv0;
        let events: Api<Event> = Api::namespaced(watch_client.clone(), "default");
        let pods: Api<Pod> = Api::namespaced(watch_client.clone(), "default");
        let listed = pods.list(&ListParams::default().labels(LABELS)).await.expect("pods listed");
        run.conditioned = listed
            .items
            .iter()
            .filter(|p| {
                let conditions = p.status.as_ref().and_then(|s| s.conditions.as_ref());
                conditions.is_some_and(|c| c.iter().any(|c| c.type_ == "InPlaceUpdateReady"))
            })
            .count();
        run.events = events.list(&ListParams::default()).await.map_or(0, |l| l.items.len());
        run.reconciles = metric_sum(&handle.metrics.encode(), "controller_runtime_reconcile_total");
    }

    let _ = stop_tx.send(());
    manager.await.expect("manager task").expect("manager ran");
    server.shutdown();
    run
}

/// How the client sends its creates.
#[derive(Clone, Copy)]
enum Creates {
    /// Up to this many requests in flight at any time.
    InFlight(usize),
    /// Batches of 1, 2, 4, ... up to `IN_FLIGHT`, each finished before the next starts (the
    /// applier's slow start).
    SlowStart,
}

/// One run of the client creating `PODS` pods; the time and the writes the server took.
async fn client_run(creates: Creates) -> (Duration, u64) {
    let (server, client, watch_client) = cluster().await;
    let watch = watch_pods(&watch_client, PODS).await;
    let api: Api<Pod> = Api::namespaced(client, "default");
    let rv0 = server.cluster().store().current_rv();
    let start = Instant::now();
    let create = |range: std::ops::Range<usize>, in_flight: usize| {
        futures::stream::iter(range)
            .map(|i| {
                let api = api.clone();
                async move { api.create(&PostParams::default(), &pod(i)).await.map(|_| ()) }
            })
            .buffer_unordered(in_flight)
            .try_collect::<()>()
    };
    match creates {
        Creates::InFlight(n) => create(0..PODS, n).await.expect("pods created"),
        Creates::SlowStart => {
            let (mut start, mut batch) = (0, 1);
            while start < PODS {
                let end = (start + batch).min(PODS);
                create(start..end, IN_FLIGHT).await.expect("pods created");
                start = end;
                batch = (batch * 2).min(IN_FLIGHT);
            }
        }
    }
    watch.await.expect("watch task");
    let elapsed = start.elapsed();
    let writes = server.cluster().store().current_rv() - rv0;
    server.shutdown();
    (elapsed, writes)
}

/// Every run's time, per scenario, for the table at the end.
#[derive(Default)]
struct Runs {
    manager: Vec<Duration>,
    concurrent: Vec<Duration>,
    sequential: Vec<Duration>,
    slow_start: Vec<Duration>,
}

fn median(runs: &[Duration]) -> Duration {
    let mut sorted = runs.to_vec();
    sorted.sort();
    match sorted.len() {
        0 => Duration::ZERO,
        n if n % 2 == 1 => sorted[n / 2],
        n => (sorted[n / 2 - 1] + sorted[n / 2]) / 2,
    }
}

fn main() {
    let rt = tokio::runtime::Builder::new_multi_thread().enable_all().build().expect("runtime");
    let mut c = Criterion::default().configure_from_args();
    let runs = RefCell::new(Runs::default());
    let (qps, burst) = limits();
    let limit = if qps > 0.0 { format!("qps {qps}, burst {burst}") } else { "no limit".into() };
    println!("manager_scale: client rate limit: {limit} (KRUISE_BENCH_QPS, KRUISE_BENCH_BURST)");

    let filter = std::env::args().skip(1).find(|a| !a.starts_with('-'));
    if filter.as_deref().is_none_or(|f| "manager_scale/detail".contains(f)) {
        let run = rt.block_on(manager_run(true));
        println!(
            "manager_scale/detail: one run: {PODS} pods after {:.3} s, status.replicas {PODS} \
             after {:.3} s; {} writes (resourceVersion), {} Events, {} pods with an \
             InPlaceUpdateReady condition, {} reconciles",
            run.pods.as_secs_f64(),
            run.status.unwrap_or_default().as_secs_f64(),
            run.writes,
            run.events,
            run.conditioned,
            run.reconciles
        );
        let (took, writes) = rt.block_on(client_run(Creates::InFlight(IN_FLIGHT)));
        println!(
            "manager_scale/detail: one run of the client, 32 in flight: {PODS} pods after \
             {:.3} s; {writes} writes (resourceVersion)",
            took.as_secs_f64()
        );
    }

    let mut g = c.benchmark_group("manager_scale");
    g.sample_size(10)
        .sampling_mode(SamplingMode::Flat)
        .warm_up_time(Duration::from_millis(1))
        .measurement_time(Duration::from_secs(8));
    let mut bench =
        |name: &str, pick: fn(&mut Runs) -> &mut Vec<Duration>, run: &dyn Fn() -> Duration| {
            g.bench_function(name, |b| {
                b.iter_custom(|iters| {
                    let mut total = Duration::ZERO;
                    for _ in 0..iters {
                        let t = run();
                        pick(&mut runs.borrow_mut()).push(t);
                        total += t;
                    }
                    total
                })
            });
        };
    bench("manager 0->1000", |r| &mut r.manager, &|| rt.block_on(manager_run(false)).pods);
    bench("client 1000 creates, 32 in flight", |r| &mut r.concurrent, &|| {
        rt.block_on(client_run(Creates::InFlight(IN_FLIGHT))).0
    });
    bench("client 1000 creates, sequential", |r| &mut r.sequential, &|| {
        rt.block_on(client_run(Creates::InFlight(1))).0
    });
    bench("client 1000 creates, slow-start batches", |r| &mut r.slow_start, &|| {
        rt.block_on(client_run(Creates::SlowStart)).0
    });
    g.finish();
    c.final_summary();

    let runs = runs.into_inner();
    if runs.manager.is_empty() || runs.concurrent.is_empty() {
        // A filter picked a subset; no ratio to print.
        return;
    }
    let (m, cc, s) = (median(&runs.manager), median(&runs.concurrent), median(&runs.sequential));
    let ss = median(&runs.slow_start);
    println!();
    println!("manager_scale: medians over every run (warm-up included), {PODS} pods, {limit}");
    println!("| scenario | runs | median | per pod | vs 32 in flight |");
    println!("|---|---:|---:|---:|---:|");
    let row = |name: &str, n: usize, d: Duration| {
        if n == 0 {
            return;
        }
        println!(
            "| {name} | {n} | {:.3} s | {:.0} µs | {:.2}x |",
            d.as_secs_f64(),
            d.as_secs_f64() * 1e6 / PODS as f64,
            d.as_secs_f64() / cc.as_secs_f64()
        );
    };
    row("manager 0->1000", runs.manager.len(), m);
    row("client, 32 in flight", runs.concurrent.len(), cc);
    row("client, sequential", runs.sequential.len(), s);
    row("client, slow-start batches (1, 2, 4, ... 32)", runs.slow_start.len(), ss);
    println!(
        "manager_scale: ratio manager / client (32 in flight) = {:.2}",
        m.as_secs_f64() / cc.as_secs_f64()
    );
    if !runs.sequential.is_empty() {
        println!(
            "manager_scale: ratio manager / client (sequential) = {:.2}",
            m.as_secs_f64() / s.as_secs_f64()
        );
    }
}
