//! Scale-out: the manager scaling a CloneSet from 0 to 1,000 pods, against a raw client that
//! creates the same 1,000 pods in kube-controller-manager's ReplicaSet pattern, with the API
//! server's writes slowed to what a server in front of etcd takes.
//!
//! The embedded API server (`kruise-sim` with the Kruise CRDs, no nodes, so pods stay
//! Pending) runs in this process, its writes (create, update, patch, delete) delayed by the
//! write latency (`Faults::slow_writes`), which runs concurrently as etcd's does. The manager
//! is the release `kruise-manager` binary, run as a subprocess (`run --kubeconfig ...
//! --enable-leader-election=false --enable-webhook=false`) so that its memory is its own.
//! Both the manager and the raw client build their client the same way (kube-rs over
//! HTTPS, `--rest-config-qps`/`--rest-config-burst`; default here: qps 0 = no client-side
//! limit; override with `KRUISE_BENCH_QPS` and `KRUISE_BENCH_BURST`).
//!
//! Per write latency (`KRUISE_BENCH_WRITE_LATENCY_MS`, a comma-separated list, default
//! `2,5`):
//!
//! - "manager": the CloneSet exists with `replicas: 0` and has been reconciled once; timed
//!   from the patch to `replicas: 1000` until a watch (a separate client) has seen 1,000 pods
//!   of it. The manager's peak RSS (`VmHWM`) is read right after.
//! - "client, ReplicaSet batches": the raw client creates the same 1,000 pods the manager does
//!   (the CloneSet planner's, for the same CloneSet created in its own server first, so with
//!   the same labels, annotations, ownerReference and readiness gate) in slow-start batches
//!   of 1, 2, 4, ... doubling up to 500, every create of a batch in flight at once and each
//!   batch finished before the next starts, as the ReplicaSet controller sends them. Its clock
//!   starts as the manager's does, with the same scale patch to its (unwatched) CloneSet, and
//!   its first create goes out the moment the patch is answered: a controller with no watch
//!   delay and no planning. Timed until the watch has seen every pod. This is the target: the
//!   manager within 1.05x of it.
//! - "client, batches capped at 32": the same with batches that stop doubling at 32 (the
//!   applier before it followed the ReplicaSet pattern), for comparison.
//!
//! Before those, one "detail" run of each: the manager until its status reports 1,000
//! replicas (the writes, Events, reconciles and connections it took), and the clients.
//!
//! A fresh server (and manager) per run; their start is not timed. Criterion reports each
//! scenario, run in a block of its own. Then come rounds (`KRUISE_BENCH_ROUNDS`, 11): the
//! manager, the ReplicaSet-batch client and the capped client in turn, so that the machine's
//! slow spells hit all three alike; the table printed at the end gives their medians, the
//! ratio and the manager's peak RSS.
//!
//! ```text
//! cargo build --release -p kruise-manager
//! cargo bench -p benches --bench manager_scale
//! ```

use criterion::{Criterion, SamplingMode};
use futures::{StreamExt as _, TryStreamExt as _};
use k8s_openapi::api::core::v1::{Event, Pod};
use kruise_api::apps::v1beta1::CloneSet;
use kruise_sim::{Config, Server, ServerHandle};
use kube::api::{Api, ListParams, Patch, PatchParams, PostParams};
use kube::runtime::watcher;
use std::cell::RefCell;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

mod support;
use support::Manager;

const PODS: usize = 1000;
/// kube-controller-manager's `burstReplicas`: the ReplicaSet controller's largest batch.
const REPLICASET_BURST: usize = 500;
/// The applier's old cap, for comparison.
const OLD_CAP: usize = 32;
const LABELS: &str = "app=web";
const TIMEOUT: Duration = Duration::from_secs(120);

fn env_or<T: std::str::FromStr>(name: &str, default: T) -> T {
    std::env::var(name).ok().and_then(|v| v.parse().ok()).unwrap_or(default)
}

/// The client-side rate limit: (qps, burst).
fn limits() -> (f32, u32) {
    (env_or("KRUISE_BENCH_QPS", 0.0), env_or("KRUISE_BENCH_BURST", 2000))
}

/// The write latencies to run at, in milliseconds.
fn latencies() -> Vec<u64> {
    let list = std::env::var("KRUISE_BENCH_WRITE_LATENCY_MS").unwrap_or_else(|_| "2,5".into());
    list.split(',').filter_map(|v| v.trim().parse().ok()).collect()
}

/// A server with the Kruise CRDs whose writes take `latency`, its kubeconfig written to a
/// file, and an unlimited client for setting up and watching.
async fn cluster(latency: Duration) -> (ServerHandle, PathBuf, kube::Client) {
    let server = Server::start(Config::default().with_kruise_crds()).await.expect("server starts");
    if !latency.is_zero() {
        server.faults().slow_writes(latency);
    }
    let path = std::env::temp_dir().join(format!(
        "kruise-manager-scale-{}-{}.kubeconfig",
        std::process::id(),
        server.addr
    ));
    server.write_kubeconfig(&path).expect("kubeconfig written");
    let watch =
        kruise_sim::nodes::client_from_kubeconfig(&server.kubeconfig).await.expect("watch client");
    (server, path, watch)
}

/// A client built as `kruise-manager` builds its own.
async fn manager_like_client(server: &ServerHandle) -> kube::Client {
    let kubeconfig =
        kube::config::Kubeconfig::from_yaml(&server.kubeconfig).expect("kubeconfig parses");
    let config = kube::Config::from_custom_kubeconfig(kubeconfig, &Default::default())
        .await
        .expect("kube config");
    let (qps, burst) = limits();
    kruise_kube::client::client_from_config(config, qps, burst).expect("client")
}

fn container() -> serde_json::Value {
    serde_json::json!({"name": "c", "image": "nginx:1.25",
        "resources": {"requests": {"cpu": "10m", "memory": "16Mi"}}})
}

/// The pods the manager creates for `cloneset` (as the server stored it, with its UID) at
/// `PODS` replicas: what the CloneSet planner plans from an empty snapshot, so the raw client
/// sends the very same pods (labels, annotations, ownerReference, readiness gate).
fn planned_pods(cloneset: &CloneSet) -> Vec<Pod> {
    use kruise_core::cloneset::{Action, CloneSetSnapshot, plan};
    let now = jiff::Timestamp::now();
    let mut scaled = cloneset.clone();
    scaled.spec.replicas = Some(PODS as i32);
    // The first plan creates the revision; the second, with it, the pods.
    let revision =
        benches::planned_revision(scaled.clone(), Vec::new()).expect("a revision is planned");
    let name = revision.metadata.name.clone().unwrap_or_default();
    let status = scaled.status.get_or_insert_with(Default::default);
    status.current_revision = name.clone();
    status.update_revision = name;
    let mut snapshot = CloneSetSnapshot::new(scaled);
    snapshot.revisions = vec![revision];
    let pods: Vec<Pod> = plan(&snapshot, now)
        .actions
        .into_iter()
        .filter_map(|a| match a {
            Action::CreatePod { pod } => Some(pod.build().into_owned()),
            _ => None,
        })
        .collect();
    assert_eq!(pods.len(), PODS, "the planner plans every pod");
    pods
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
/// task that ends when it has seen `count` distinct pods, giving when it saw the first.
async fn watch_pods(
    client: &kube::Client,
    count: usize,
) -> tokio::task::JoinHandle<(Instant, Instant)> {
    let api: Api<Pod> = Api::namespaced(client.clone(), "default");
    let config = watcher::Config::default().labels(LABELS);
    support::watch_count(api, config, count, |pod: Pod| pod.metadata.name).await
}

/// What one manager run measured; the details only when asked for.
#[derive(Default)]
struct ManagerRun {
    /// From the scale patch until the watch has seen every pod, and the first.
    pods: Duration,
    first_pod: Duration,
    /// The manager's peak RSS (`VmHWM`, MiB) right after, and its RSS before the patch.
    peak_rss: f64,
    rss_before: f64,
    /// Connections the server accepted from the patch until every pod was seen.
    connections: u64,
    /// CPU seconds the manager, and this process (the API server and the watch), used from
    /// the patch until every pod was seen.
    manager_cpu: f64,
    server_cpu: f64,
    /// From the scale patch until the CloneSet's status reports every replica.
    status: Option<Duration>,
    /// Writes the server took (resourceVersion delta) from the patch until the status.
    writes: u64,
    /// Events in the namespace at the end.
    events: usize,
    /// Reconciles the manager counted.
    reconciles: String,
}

/// One run of the manager scaling 0 -> `PODS`; with `detail`, also waits for the status.
async fn manager_run(binary: &Path, latency: Duration, detail: bool) -> ManagerRun {
    let (server, kubeconfig, watch_client) = cluster(latency).await;
    let log = kubeconfig.with_extension("log");
    let (qps, burst) = limits();
    let mut manager = Manager::start(binary, &kubeconfig, log, qps, burst, &[]);
    manager.wait_ready(TIMEOUT).await;

    // The CloneSet at 0, reconciled once (its status observed generation 1).
    let api: Api<CloneSet> = Api::namespaced(watch_client.clone(), "default");
    api.create(&PostParams::default(), &cloneset(0)).await.expect("cloneset created");
    let deadline = Instant::now() + TIMEOUT;
    loop {
        let cs = api.get("web").await.expect("cloneset read");
        if cs.status.is_some_and(|s| s.observed_generation >= 1) {
            break;
        }
        assert!(Instant::now() < deadline, "the manager never reconciled the CloneSet");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    let watch = watch_pods(&watch_client, PODS).await;
    let rv0 = server.cluster().store().current_rv();
    let connections0 = server.connections_accepted();
    let rss_before = manager.memory().0;
    let (manager_cpu0, server_cpu0) =
        (benches::cpu_seconds(&manager.pid), benches::cpu_seconds("self"));

    if detail {
        // To line up with the manager's log (RUST_LOG=kruise_kube::workload=debug).
        eprintln!("manager_scale: the scale patch goes out at {}", jiff::Timestamp::now());
    }
    let start = Instant::now();
    let patch = serde_json::json!({"spec": {"replicas": PODS}});
    api.patch("web", &PatchParams::default(), &Patch::Merge(&patch)).await.expect("scaled");
    let (first, _) = tokio::time::timeout(TIMEOUT, watch)
        .await
        .expect("every pod within the timeout")
        .expect("watch");
    let mut run = ManagerRun {
        pods: start.elapsed(),
        first_pod: first.saturating_duration_since(start),
        peak_rss: manager.memory().1,
        rss_before,
        manager_cpu: benches::cpu_seconds(&manager.pid) - manager_cpu0,
        server_cpu: benches::cpu_seconds("self") - server_cpu0,
        // Less the bench's own patch, which opened none (its client's connection is pooled).
        connections: server.connections_accepted() - connections0,
        ..ManagerRun::default()
    };

    if detail {
        loop {
            let cs = api.get("web").await.expect("cloneset read");
            if cs.status.is_some_and(|s| s.replicas == PODS as i32 && s.observed_generation >= 2) {
                break;
            }
            assert!(start.elapsed() < TIMEOUT, "the status never reported every replica");
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
        run.status = Some(start.elapsed());
        run.writes = server.cluster().store().current_rv() - rv0;
        let events: Api<Event> = Api::namespaced(watch_client.clone(), "default");
        run.events = events.list(&ListParams::default()).await.map_or(0, |l| l.items.len());
        run.reconciles = manager.reconciles().await;
    }

    manager.stop(detail.then_some("manager_scale"));
    server.shutdown();
    let _ = std::fs::remove_file(&kubeconfig);
    run
}

/// One run of the raw client creating `PODS` pods in slow-start batches of 1, 2, 4, ...
/// that stop doubling at `cap`, every create of a batch in flight at once; the time, the
/// writes the server took and the connections it accepted.
async fn client_run(latency: Duration, cap: usize) -> (Duration, Duration, u64, u64, f64) {
    let (server, kubeconfig, watch_client) = cluster(latency).await;
    let client = manager_like_client(&server).await;
    let watch = watch_pods(&watch_client, PODS).await;
    // The same CloneSet as in the manager's runs (no manager acts on it here), and the pods
    // the manager would create for it.
    let clonesets: Api<CloneSet> = Api::namespaced(watch_client.clone(), "default");
    let cloneset =
        clonesets.create(&PostParams::default(), &cloneset(0)).await.expect("cloneset created");
    let pods = planned_pods(&cloneset);
    let api: Api<Pod> = Api::namespaced(client, "default");
    let rv0 = server.cluster().store().current_rv();
    let connections0 = server.connections_accepted();
    let cpu0 = benches::cpu_seconds("self");
    let start = Instant::now();
    // The same scale patch as the manager's runs, through the same server (so with the same
    // write latency), before the first create: an ideal controller that learns of the new
    // replica count the moment it is stored, with no watch to wait for and nothing to plan.
    let patch = serde_json::json!({"spec": {"replicas": PODS}});
    clonesets.patch("web", &PatchParams::default(), &Patch::Merge(&patch)).await.expect("scaled");
    let (mut next, mut batch) = (0, 1);
    while next < PODS {
        let end = (next + batch).min(PODS);
        futures::stream::iter(next..end)
            .map(|i| {
                let api = api.clone();
                // Built per create, as the ReplicaSet controller builds each from its template.
                let pod = pods[i].clone();
                async move { api.create(&PostParams::default(), &pod).await.map(|_| ()) }
            })
            .buffer_unordered(batch)
            .try_collect::<()>()
            .await
            .expect("pods created");
        next = end;
        batch = (batch * 2).min(cap);
    }
    let (first, _) = tokio::time::timeout(TIMEOUT, watch)
        .await
        .expect("every pod within the timeout")
        .expect("watch");
    let elapsed = start.elapsed();
    let writes = server.cluster().store().current_rv() - rv0;
    let connections = server.connections_accepted() - connections0;
    let cpu = benches::cpu_seconds("self") - cpu0;
    server.shutdown();
    let _ = std::fs::remove_file(&kubeconfig);
    (elapsed, first.saturating_duration_since(start), writes, connections, cpu)
}

/// Every run's time per scenario, and the manager's peak RSS, for the table at the end.
#[derive(Default)]
struct Runs {
    manager: Vec<Duration>,
    replicaset: Vec<Duration>,
    capped: Vec<Duration>,
    peak_rss: Vec<f64>,
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
    let binary = support::manager_binary_or_exit("manager_scale");
    let rt = tokio::runtime::Builder::new_multi_thread().enable_all().build().expect("runtime");
    let mut c = Criterion::default().configure_from_args();
    let (qps, burst) = limits();
    let limit = if qps > 0.0 { format!("qps {qps}, burst {burst}") } else { "no limit".into() };
    println!(
        "manager_scale: {} (as a subprocess); client rate limit: {limit} (KRUISE_BENCH_QPS, \
         KRUISE_BENCH_BURST)",
        binary.display()
    );
    let filter = std::env::args().skip(1).find(|a| !a.starts_with('-'));
    let wanted = |name: &str| filter.as_deref().is_none_or(|f| name.contains(f));
    let runs: RefCell<BTreeMap<u64, Runs>> = RefCell::default();

    for ms in latencies() {
        let latency = Duration::from_millis(ms);
        let tag = format!("{ms} ms writes");
        if wanted(&format!("manager_scale/detail, {tag}")) {
            let run = rt.block_on(manager_run(&binary, latency, true));
            println!(
                "manager_scale/detail, {tag}: manager: first pod after {:.3} s, {PODS} pods after \
                 {:.3} s, status.replicas {PODS} after {:.3} s; {} writes (resourceVersion), {} Events, {} connections \
                 opened; reconciles: {}; RSS {:.1} MiB before, peak {:.1} MiB; CPU until \
                 every pod: manager {:.3} s, server and watch {:.3} s",
                run.first_pod.as_secs_f64(),
                run.pods.as_secs_f64(),
                run.status.unwrap_or_default().as_secs_f64(),
                run.writes,
                run.events,
                run.connections,
                run.reconciles,
                run.rss_before,
                run.peak_rss,
                run.manager_cpu,
                run.server_cpu,
            );
            for (name, cap) in [("ReplicaSet batches", REPLICASET_BURST), ("capped at 32", OLD_CAP)]
            {
                let (took, first, writes, connections, cpu) = rt.block_on(client_run(latency, cap));
                println!(
                    "manager_scale/detail, {tag}: client, {name}: first pod after {:.3} s, {PODS} \
                     pods after {:.3} s; \
                     {writes} writes, {connections} connections opened; CPU (server, client and \
                     watch) {cpu:.3} s",
                    first.as_secs_f64(),
                    took.as_secs_f64()
                );
            }
        }

        let mut g = c.benchmark_group("manager_scale");
        g.sample_size(10)
            .sampling_mode(SamplingMode::Flat)
            .warm_up_time(Duration::from_millis(1))
            .measurement_time(Duration::from_secs(3));
        let mut bench = |name: &str, run: &dyn Fn(&mut Runs) -> Duration| {
            g.bench_function(format!("{name}, {tag}"), |b| {
                b.iter_custom(|iters| {
                    let mut total = Duration::ZERO;
                    for _ in 0..iters {
                        total += run(runs.borrow_mut().entry(ms).or_default());
                    }
                    total
                })
            });
        };
        bench("manager 0->1000", &|r| {
            let run = rt.block_on(manager_run(&binary, latency, false));
            r.peak_rss.push(run.peak_rss);
            run.pods
        });
        bench("client, ReplicaSet batches", &|_| {
            rt.block_on(client_run(latency, REPLICASET_BURST)).0
        });
        bench("client, batches capped at 32", &|_| rt.block_on(client_run(latency, OLD_CAP)).0);
        g.finish();

        // The table's numbers: runs of the three in turn, so that a slow spell of the machine
        // hits each alike (criterion runs each scenario in a block of its own).
        let rounds: usize = env_or("KRUISE_BENCH_ROUNDS", 11);
        if wanted(&format!("manager_scale/rounds, {tag}")) {
            let mut borrowed = runs.borrow_mut();
            let r = borrowed.entry(ms).or_default();
            for _ in 0..rounds {
                let run = rt.block_on(manager_run(&binary, latency, false));
                r.manager.push(run.pods);
                r.peak_rss.push(run.peak_rss);
                r.replicaset.push(rt.block_on(client_run(latency, REPLICASET_BURST)).0);
                r.capped.push(rt.block_on(client_run(latency, OLD_CAP)).0);
            }
        }
    }
    c.final_summary();

    let runs = runs.into_inner();
    println!();
    println!(
        "manager_scale: medians of the rounds (manager, then each client, in turn; \
         KRUISE_BENCH_ROUNDS), {PODS} pods, {limit}"
    );
    println!(
        "| write latency | manager (runs) | client, ReplicaSet batches | client, capped at 32 | \
         manager / ReplicaSet client | manager peak RSS (max) |"
    );
    println!("|---:|---:|---:|---:|---:|---:|");
    for (ms, r) in &runs {
        if r.manager.is_empty() || r.replicaset.is_empty() {
            continue;
        }
        let (m, rs, cap) = (median(&r.manager), median(&r.replicaset), median(&r.capped));
        let ratio = m.as_secs_f64() / rs.as_secs_f64();
        let rss = r.peak_rss.iter().copied().fold(0.0, f64::max);
        println!(
            "| {ms} ms | {:.3} s ({}) | {:.3} s | {:.3} s | {ratio:.2}x ({}) | {rss:.1} MiB |",
            m.as_secs_f64(),
            r.manager.len(),
            rs.as_secs_f64(),
            cap.as_secs_f64(),
            if ratio <= 1.05 { "target <= 1.05x met" } else { "target <= 1.05x NOT met" },
        );
    }
}
