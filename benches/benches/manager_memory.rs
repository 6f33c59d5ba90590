//! The manager's memory with 10,000 pods and 500 CloneSets in its caches, or (with
//! `KRUISE_BENCH_SCALE=100k`) 100,000 pods and 5,000 workloads: 2,500 CloneSets and 2,500
//! Advanced StatefulSets (`Parallel`), 20 replicas each.
//!
//! The embedded API server (`kruise-sim` with the Kruise CRDs, no nodes, so pods stay
//! Pending) runs in this process; the manager runs as a subprocess, the release
//! `kruise-manager` binary (`run --kubeconfig ... --enable-leader-election=false
//! --metrics-addr 0 --health-probe-addr 0 --enable-webhook=false`), so its memory is its own.
//! The bench creates the workloads (apps.kruise.io/v1beta1, 20 replicas each, distinct
//! selectors); the manager creates the pods. Once every pod exists and every workload's
//! status reports 20 replicas for its current generation, and a few seconds more, the
//! manager's `VmRSS` (steady) and `VmHWM` (peak) are read from /proc. Then a second manager
//! is started against the same cluster (a restart: its caches fill from one list each) and
//! read the same way once `/readyz` answers and the server has seen no write for 2 s.
//!
//! Build the manager first; the binary is looked for next to the bench's directory
//! (`target/release/kruise-manager`) unless `KRUISE_MANAGER_BIN` names it:
//!
//! ```text
//! cargo build --release -p kruise-manager
//! cargo bench -p benches --bench manager_memory
//! ```
//!
//! `KRUISE_BENCH_CLONESETS` / `KRUISE_BENCH_STATEFULSETS` override the scale's mix of
//! workloads (for profiling one kind); the scale's target is kept.
//!
//! `KRUISE_BENCH_QPS` / `KRUISE_BENCH_BURST` set `--rest-config-qps` / `--rest-config-burst`
//! (default 0 = no limit, and 2000); `KRUISE_BENCH_SETTLE_SECS` the wait before the steady
//! reading (default 5).
//!
//! Targets: under 100 MiB steady for 10,000 pods; under 400 MiB for 100,000 pods and 5,000
//! workloads (issue #47). A missed target fails the bench (exit status 1).

use futures::{StreamExt as _, TryStreamExt as _};
use k8s_openapi::api::core::v1::Pod;
use kruise_api::apps::v1beta1::{CloneSet, StatefulSet};
use kruise_sim::{Config, Server};
use kube::api::{Api, ListParams, PostParams};
use kube::runtime::watcher;
use std::collections::HashSet;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

mod support;
use support::Manager;

const REPLICAS: i32 = 20;
const TIMEOUT: Duration = Duration::from_secs(1800);

/// What the bench caches: workloads of each kind, and the steady target.
#[derive(Clone, Copy)]
struct Scale {
    clonesets: usize,
    statefulsets: usize,
    target_mib: f64,
}

impl Scale {
    fn from_env() -> Scale {
        let scale = match std::env::var("KRUISE_BENCH_SCALE").as_deref() {
            Ok("100k") => Scale { clonesets: 2_500, statefulsets: 2_500, target_mib: 400.0 },
            Ok("10k") | Err(_) => Scale { clonesets: 500, statefulsets: 0, target_mib: 100.0 },
            Ok(other) => {
                eprintln!("manager_memory: KRUISE_BENCH_SCALE is 10k or 100k, not {other:?}");
                std::process::exit(2);
            }
        };
        // A mix of one's own, for profiling; the scale's target still applies.
        Scale {
            clonesets: env_or("KRUISE_BENCH_CLONESETS", scale.clonesets),
            statefulsets: env_or("KRUISE_BENCH_STATEFULSETS", scale.statefulsets),
            ..scale
        }
    }

    fn workloads(self) -> usize {
        self.clonesets + self.statefulsets
    }

    fn pods(self) -> usize {
        self.workloads() * REPLICAS as usize
    }
}

fn env_or<T: std::str::FromStr>(name: &str, default: T) -> T {
    std::env::var(name).ok().and_then(|v| v.parse().ok()).unwrap_or(default)
}

fn container() -> serde_json::Value {
    serde_json::json!({"name": "c", "image": "nginx:1.25",
        "resources": {"requests": {"cpu": "10m", "memory": "16Mi"}}})
}

fn cloneset(i: usize) -> CloneSet {
    let app = format!("app-{i}");
    serde_json::from_value(serde_json::json!({
        "apiVersion": "apps.kruise.io/v1beta1", "kind": "CloneSet",
        "metadata": {"name": format!("cs-{i}"), "namespace": "default"},
        "spec": {
            "replicas": REPLICAS,
            "selector": {"matchLabels": {"app": app}},
            "template": {"metadata": {"labels": {"app": app, "tier": "bench"}},
                         "spec": {"containers": [container()]}}
        }
    }))
    .expect("cloneset")
}

fn statefulset(i: usize) -> StatefulSet {
    let app = format!("sts-app-{i}");
    serde_json::from_value(serde_json::json!({
        "apiVersion": "apps.kruise.io/v1beta1", "kind": "StatefulSet",
        "metadata": {"name": format!("sts-{i}"), "namespace": "default"},
        "spec": {
            "replicas": REPLICAS,
            "podManagementPolicy": "Parallel",
            "serviceName": format!("sts-{i}"),
            "selector": {"matchLabels": {"app": app}},
            "template": {"metadata": {"labels": {"app": app, "tier": "bench"}},
                         "spec": {"containers": [container()]}}
        }
    }))
    .expect("statefulset")
}

/// Creates `make(0..count)` through `api`, 32 requests in flight.
async fn create_all<K>(api: &Api<K>, count: usize, make: fn(usize) -> K)
where
    K: kube::Resource
        + Clone
        + k8s_openapi::serde::Serialize
        + k8s_openapi::serde::de::DeserializeOwned
        + std::fmt::Debug,
{
    futures::stream::iter(0..count)
        .map(|i| async move { api.create(&PostParams::default(), &make(i)).await.map(|_| ()) })
        .buffer_unordered(32)
        .try_collect::<()>()
        .await
        .expect("workloads created");
}

/// How many of `api`'s objects report `REPLICAS` (`status` reads replicas and
/// observedGeneration) for their current generation.
async fn count_done<K>(api: &Api<K>, status: fn(&K) -> Option<(i32, i64)>) -> usize
where
    K: kube::Resource + Clone + k8s_openapi::serde::de::DeserializeOwned + std::fmt::Debug,
{
    api.list(&ListParams::default()).await.map_or(0, |l| {
        l.items
            .iter()
            .filter(|w| {
                let generation = w.meta().generation.unwrap_or(0);
                status(w).is_some_and(|(replicas, observed)| {
                    replicas == REPLICAS && observed >= generation
                })
            })
            .count()
    })
}

/// The workloads whose status reports `REPLICAS` for their current generation.
async fn workloads_done(clonesets: &Api<CloneSet>, statefulsets: &Api<StatefulSet>) -> usize {
    let cs =
        count_done(clonesets, |w| w.status.as_ref().map(|s| (s.replicas, s.observed_generation)));
    let sts = count_done(statefulsets, |w| {
        w.status.as_ref().map(|s| (s.replicas, s.observed_generation))
    });
    cs.await + sts.await
}

/// Counts distinct pods (all namespaces) into `seen` as a watch sees them.
fn count_pods(client: kube::Client, seen: Arc<AtomicUsize>) -> tokio::task::JoinHandle<()> {
    tokio::spawn(async move {
        let api: Api<Pod> = Api::all(client);
        let mut names = HashSet::new();
        let stream = watcher::watcher(api, watcher::Config::default());
        let mut stream = std::pin::pin!(stream);
        while let Some(event) = stream.next().await {
            if let Ok(watcher::Event::Apply(p) | watcher::Event::InitApply(p)) = event
                && let Some(n) = p.metadata.name
            {
                names.insert(n);
                seen.store(names.len(), Ordering::Relaxed);
            }
        }
    })
}

/// Waits until the server has taken no write for `quiet`; returns the resourceVersion.
async fn wait_quiet(server: &kruise_sim::ServerHandle, quiet: Duration) -> u64 {
    let store = server.cluster().store();
    let mut last = store.current_rv();
    let mut since = Instant::now();
    while since.elapsed() < quiet {
        tokio::time::sleep(Duration::from_millis(100)).await;
        let rv = store.current_rv();
        if rv != last {
            last = rv;
            since = Instant::now();
        }
    }
    last
}

/// Samples the manager's RSS for `settle`, then returns (steady RSS, peak RSS, sampled peak).
async fn settle_and_read(manager: &Manager, settle: Duration, mut sampled: f64) -> (f64, f64, f64) {
    let start = Instant::now();
    while start.elapsed() < settle {
        tokio::time::sleep(Duration::from_millis(250)).await;
        sampled = sampled.max(manager.memory().0);
    }
    let (rss, hwm) = manager.memory();
    (rss, hwm, sampled.max(rss))
}

fn main() {
    let scale = Scale::from_env();
    let (pods_total, workloads) = (scale.pods(), scale.workloads());
    let binary = support::manager_binary_or_exit("manager_memory");
    let qps: f32 = env_or("KRUISE_BENCH_QPS", 0.0);
    let burst: u32 = env_or("KRUISE_BENCH_BURST", 2000);
    let settle = Duration::from_secs(env_or("KRUISE_BENCH_SETTLE_SECS", 5));
    let rt = tokio::runtime::Builder::new_multi_thread().enable_all().build().expect("runtime");
    rt.block_on(async {
        let server =
            Server::start(Config::default().with_kruise_crds()).await.expect("server starts");
        let dir = std::env::temp_dir();
        let id = std::process::id();
        let kubeconfig = dir.join(format!("kruise-manager-memory-{id}.kubeconfig"));
        server.write_kubeconfig(&kubeconfig).expect("kubeconfig written");
        let client =
            kruise_sim::nodes::client_from_kubeconfig(&server.kubeconfig).await.expect("client");
        let limit = if qps > 0.0 { format!("qps {qps}, burst {burst}") } else { "no limit".into() };

        // Phase 1: an empty cluster; the manager creates every pod.
        let log = dir.join(format!("kruise-manager-memory-{id}-1.log"));
        let mut manager = Manager::start(&binary, &kubeconfig, log, qps, burst, &[]);
        println!(
            "manager_memory: {} (pid {}), client rate limit: {limit}",
            binary.display(),
            manager.pid
        );
        manager.wait_ready(TIMEOUT).await;
        tokio::time::sleep(Duration::from_secs(1)).await;
        let (rss_empty, _) = manager.memory();

        let seen = Arc::new(AtomicUsize::new(0));
        let counter = count_pods(client.clone(), seen.clone());
        let clonesets: Api<CloneSet> = Api::namespaced(client.clone(), "default");
        let statefulsets: Api<StatefulSet> = Api::namespaced(client.clone(), "default");
        let start = Instant::now();
        create_all(&clonesets, scale.clonesets, cloneset).await;
        create_all(&statefulsets, scale.statefulsets, statefulset).await;
        let created = start.elapsed();

        let mut pods_at = None;
        let mut done_at = None;
        let mut sampled_peak: f64 = 0.0;
        let mut last_print = Instant::now();
        let mut polls = 0u32;
        while start.elapsed() < TIMEOUT && !manager.exited() {
            tokio::time::sleep(Duration::from_millis(250)).await;
            sampled_peak = sampled_peak.max(manager.memory().0);
            let pods = seen.load(Ordering::Relaxed);
            if pods >= pods_total && pods_at.is_none() {
                pods_at = Some(start.elapsed());
            }
            // Each check lists every workload: at 5,000 that is the in-process server's
            // biggest load, so larger scales check less often (every 250 ms per 500).
            let check_every = workloads.div_ceil(500).max(1) as u32;
            polls += 1;
            if pods_at.is_some()
                && polls.is_multiple_of(check_every)
                && workloads_done(&clonesets, &statefulsets).await == workloads
            {
                done_at = Some(start.elapsed());
                break;
            }
            if last_print.elapsed() >= Duration::from_secs(10) {
                last_print = Instant::now();
                println!(
                    "manager_memory: {:.0} s: {pods} pods, manager RSS {:.0} MiB",
                    start.elapsed().as_secs_f64(),
                    manager.memory().0
                );
            }
        }
        counter.abort();
        let Some(done_at) = done_at else {
            println!(
                "manager_memory: NOT DONE after {:.0} s: {} pods, {} workloads at {REPLICAS} \
                 replicas; manager RSS {:.0} MiB",
                start.elapsed().as_secs_f64(),
                seen.load(Ordering::Relaxed),
                workloads_done(&clonesets, &statefulsets).await,
                manager.memory().0
            );
            manager.stop(Some("manager_memory"));
            std::process::exit(1);
        };
        let rv_done = server.cluster().store().current_rv();
        let (rss, hwm, sampled_peak) = settle_and_read(&manager, settle, sampled_peak).await;
        let rv_steady = server.cluster().store().current_rv();
        let reconciles = manager.reconciles().await;

        println!(
            "manager_memory: {} CloneSets and {} Advanced StatefulSets created in {:.2} s; \
             {pods_total} pods seen after {:.2} s; every status at {REPLICAS} replicas after \
             {:.2} s",
            scale.clonesets,
            scale.statefulsets,
            created.as_secs_f64(),
            pods_at.unwrap_or(done_at).as_secs_f64(),
            done_at.as_secs_f64()
        );
        println!(
            "manager_memory: {rv_done} writes when done (resourceVersion), {} more in the next \
             {} s; reconciles: {reconciles}",
            rv_steady.saturating_sub(rv_done),
            settle.as_secs()
        );
        println!("manager_memory: manager RSS, ready with nothing cached: {rss_empty:.1} MiB");
        println!(
            "manager_memory: manager steady RSS (VmRSS, {} s after done): {rss:.1} MiB",
            settle.as_secs()
        );
        println!(
            "manager_memory: manager peak RSS (VmHWM): {hwm:.1} MiB (sampled every 250 ms: \
             {sampled_peak:.1} MiB)"
        );
        manager.stop(Some("manager_memory"));

        // Phase 2: a manager restarted against the pods: the caches fill from lists.
        let rv_before = server.cluster().store().current_rv();
        let log = dir.join(format!("kruise-manager-memory-{id}-2.log"));
        let mut manager = Manager::start(&binary, &kubeconfig, log, qps, burst, &[]);
        let ready = manager.wait_ready(TIMEOUT).await;
        let start_quiet = Instant::now();
        let rv_quiet = wait_quiet(&server, Duration::from_secs(2)).await;
        let quiet = ready + start_quiet.elapsed();
        let (rss2, hwm2, sampled2) = settle_and_read(&manager, settle, 0.0).await;
        let reconciles2 = manager.reconciles().await;
        println!(
            "manager_memory: restarted manager (pid {}): ready (caches listed) after {:.2} s, \
             quiet (no write for 2 s) after {:.2} s; {} writes; reconciles: {reconciles2}",
            manager.pid,
            ready.as_secs_f64(),
            quiet.as_secs_f64(),
            rv_quiet.saturating_sub(rv_before)
        );
        println!(
            "manager_memory: restarted manager steady RSS: {rss2:.1} MiB, peak (VmHWM): \
             {hwm2:.1} MiB (sampled: {sampled2:.1} MiB)"
        );
        manager.stop(Some("manager_memory"));

        let worst = rss.max(rss2);
        let target = scale.target_mib;
        println!(
            "manager_memory: steady target < {target:.0} MiB: {} (steady {rss:.1} MiB after \
             creating, {rss2:.1} MiB after a restart); {:.2} KiB a pod over the idle manager",
            if worst < target { "met" } else { "NOT met" },
            (worst - rss_empty) * 1024.0 / pods_total as f64
        );
        let (bench_rss, bench_hwm) = benches::memory_mib("self");
        println!(
            "manager_memory: this process (API server, watch): RSS {bench_rss:.0} MiB, peak \
             {bench_hwm:.0} MiB"
        );
        server.shutdown();
        let _ = std::fs::remove_file(&kubeconfig);
        if worst >= target {
            eprintln!("manager_memory: TARGET MISSED: {worst:.1} MiB steady, target {target:.0}");
            std::process::exit(1);
        }
    });
}
