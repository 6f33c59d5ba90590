//! The manager's memory with 10,000 pods and 500 CloneSets in its caches.
//!
//! The embedded API server (`kruise-sim` with the Kruise CRDs, no nodes, so pods stay
//! Pending) runs in this process; the manager runs as a subprocess, the release
//! `kruise-manager` binary (`run --kubeconfig ... --enable-leader-election=false
//! --metrics-addr 0 --health-probe-addr 0 --enable-webhook=false`), so its memory is its own.
//! The bench creates 500 CloneSets (apps.kruise.io/v1beta1, 20 replicas each, distinct
//! selectors); the manager creates the 10,000 pods. Once every pod exists and every CloneSet's
//! status reports 20 replicas for its current generation, and a few seconds more, the
//! manager's `VmRSS` (steady) and `VmHWM` (peak) are read from /proc.
//!
//! Build the manager first; the binary is looked for next to the bench's directory
//! (`target/release/kruise-manager`) unless `KRUISE_MANAGER_BIN` names it:
//!
//! ```text
//! cargo build --release -p kruise-manager
//! cargo bench -p benches --bench manager_memory
//! ```
//!
//! `KRUISE_BENCH_QPS` / `KRUISE_BENCH_BURST` set `--rest-config-qps` / `--rest-config-burst`
//! (default 0 = no limit, and 2000); `KRUISE_BENCH_SETTLE_SECS` the wait before the steady
//! reading (default 5).

use futures::{StreamExt as _, TryStreamExt as _};
use k8s_openapi::api::core::v1::Pod;
use kruise_api::apps::v1beta1::CloneSet;
use kruise_sim::{Config, Server};
use kube::api::{Api, ListParams, PostParams};
use kube::runtime::watcher;
use std::collections::HashSet;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant, SystemTime};

const CLONESETS: usize = 500;
const REPLICAS: i32 = 20;
const PODS: usize = CLONESETS * REPLICAS as usize;
const TIMEOUT: Duration = Duration::from_secs(900);

fn env_or<T: std::str::FromStr>(name: &str, default: T) -> T {
    std::env::var(name).ok().and_then(|v| v.parse().ok()).unwrap_or(default)
}

/// `VmRSS` and `VmHWM` of process `pid`, in MiB.
fn memory_mib(pid: &str) -> (f64, f64) {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    let field = |name: &str| {
        status
            .lines()
            .find(|l| l.starts_with(name))
            .and_then(|l| l.split_whitespace().nth(1))
            .and_then(|kb| kb.parse::<f64>().ok())
            .map_or(0.0, |kb| kb / 1024.0)
    };
    (field("VmRSS:"), field("VmHWM:"))
}

/// The manager binary: `KRUISE_MANAGER_BIN`, or `kruise-manager` in the profile directory
/// above this bench's `deps/`.
fn manager_binary() -> Option<PathBuf> {
    if let Ok(path) = std::env::var("KRUISE_MANAGER_BIN") {
        return Some(PathBuf::from(path));
    }
    let exe = std::env::current_exe().ok()?;
    let candidate = exe.parent()?.parent()?.join("kruise-manager");
    candidate.exists().then_some(candidate)
}

/// The newest modification time of the files under `dir`.
fn newest(dir: &Path) -> Option<SystemTime> {
    let mut best = None;
    for entry in std::fs::read_dir(dir).ok()?.flatten() {
        let path = entry.path();
        let time =
            if path.is_dir() { newest(&path) } else { entry.metadata().ok()?.modified().ok() };
        best = best.max(time);
    }
    best
}

/// Warns when the manager's sources are newer than the binary.
fn warn_if_stale(binary: &Path) {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let built = std::fs::metadata(binary).and_then(|m| m.modified()).ok();
    let sources = ["kruise-kube/src", "kruise-core/src", "bins/kruise-manager/src"]
        .iter()
        .filter_map(|d| newest(&root.join(d)))
        .max();
    if let (Some(built), Some(sources)) = (built, sources)
        && sources > built
    {
        println!(
            "manager_memory: WARNING: {} is older than the sources; rebuild with \
             `cargo build --release -p kruise-manager`",
            binary.display()
        );
    }
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

/// The CloneSets whose status reports `REPLICAS` for their current generation.
async fn clonesets_done(api: &Api<CloneSet>) -> usize {
    let Ok(list) = api.list(&ListParams::default()).await else {
        return 0;
    };
    list.items
        .iter()
        .filter(|cs| {
            let generation = cs.metadata.generation.unwrap_or(0);
            cs.status
                .as_ref()
                .is_some_and(|s| s.replicas == REPLICAS && s.observed_generation >= generation)
        })
        .count()
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

/// Stops the manager with SIGTERM (graceful), then SIGKILL if it lingers.
fn stop(child: &mut Child) {
    let _ = Command::new("kill").arg("-TERM").arg(child.id().to_string()).status();
    let deadline = Instant::now() + Duration::from_secs(10);
    while Instant::now() < deadline {
        if let Ok(Some(_)) = child.try_wait() {
            return;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    let _ = child.kill();
    let _ = child.wait();
}

/// Prints how many WARN and ERROR lines the manager logged, and the first few.
fn log_summary(log: &Path) {
    let text = std::fs::read_to_string(log).unwrap_or_default();
    let interesting: Vec<&str> =
        text.lines().filter(|l| l.contains(" WARN ") || l.contains(" ERROR ")).collect();
    let errors = interesting.iter().filter(|l| l.contains(" ERROR ")).count();
    println!(
        "manager_memory: manager log {}: {} lines, {} WARN, {errors} ERROR",
        log.display(),
        text.lines().count(),
        interesting.len() - errors
    );
    for line in interesting.iter().take(10) {
        println!("  {line}");
    }
}

fn main() {
    let Some(binary) = manager_binary() else {
        eprintln!(
            "manager_memory: no kruise-manager binary next to this bench; run \
             `cargo build --release -p kruise-manager` first (or set KRUISE_MANAGER_BIN)"
        );
        std::process::exit(2);
    };
    warn_if_stale(&binary);
    let qps: f32 = env_or("KRUISE_BENCH_QPS", 0.0);
    let burst: u32 = env_or("KRUISE_BENCH_BURST", 2000);
    let settle = Duration::from_secs(env_or("KRUISE_BENCH_SETTLE_SECS", 5));
    let rt = tokio::runtime::Builder::new_multi_thread().enable_all().build().expect("runtime");
    rt.block_on(async {
        let server =
            Server::start(Config::default().with_kruise_crds()).await.expect("server starts");
        let dir = std::env::temp_dir();
        let kubeconfig =
            dir.join(format!("kruise-manager-memory-{}.kubeconfig", std::process::id()));
        let log = dir.join(format!("kruise-manager-memory-{}.log", std::process::id()));
        server.write_kubeconfig(&kubeconfig).expect("kubeconfig written");
        let client =
            kruise_sim::nodes::client_from_kubeconfig(&server.kubeconfig).await.expect("client");

        let mut child = Command::new(&binary)
            .args(["run", "--kubeconfig"])
            .arg(&kubeconfig)
            .args([
                "--enable-leader-election=false",
                "--enable-webhook=false",
                "--metrics-addr",
                "0",
                "--health-probe-addr",
                "0",
                "--rest-config-qps",
                &qps.to_string(),
                "--rest-config-burst",
                &burst.to_string(),
            ])
            .env("NO_COLOR", "1")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(std::fs::File::create(&log).expect("log file"))
            .spawn()
            .expect("manager starts");
        let pid = child.id().to_string();
        let limit = if qps > 0.0 { format!("qps {qps}, burst {burst}") } else { "no limit".into() };
        println!("manager_memory: {} (pid {pid}), client rate limit: {limit}", binary.display());

        // The empty manager: caches listed (nothing to list), controllers idle.
        tokio::time::sleep(Duration::from_secs(2)).await;
        let (rss_empty, _) = memory_mib(&pid);

        let seen = Arc::new(AtomicUsize::new(0));
        let counter = count_pods(client.clone(), seen.clone());
        let clonesets: Api<CloneSet> = Api::namespaced(client.clone(), "default");
        let start = Instant::now();
        futures::stream::iter(0..CLONESETS)
            .map(|i| {
                let api = clonesets.clone();
                async move { api.create(&PostParams::default(), &cloneset(i)).await.map(|_| ()) }
            })
            .buffer_unordered(32)
            .try_collect::<()>()
            .await
            .expect("clonesets created");
        let created = start.elapsed();

        let mut pods_at = None;
        let mut done_at = None;
        let mut sampled_peak: f64 = 0.0;
        let mut last_print = Instant::now();
        while start.elapsed() < TIMEOUT {
            tokio::time::sleep(Duration::from_millis(250)).await;
            if let Ok(Some(status)) = child.try_wait() {
                println!("manager_memory: the manager exited early: {status}");
                break;
            }
            sampled_peak = sampled_peak.max(memory_mib(&pid).0);
            let pods = seen.load(Ordering::Relaxed);
            if pods >= PODS && pods_at.is_none() {
                pods_at = Some(start.elapsed());
            }
            if pods_at.is_some() {
                let done = clonesets_done(&clonesets).await;
                if done == CLONESETS {
                    done_at = Some(start.elapsed());
                    break;
                }
            }
            if last_print.elapsed() >= Duration::from_secs(10) {
                last_print = Instant::now();
                println!(
                    "manager_memory: {:.0} s: {pods} pods, manager RSS {:.0} MiB",
                    start.elapsed().as_secs_f64(),
                    memory_mib(&pid).0
                );
            }
        }
        let Some(done_at) = done_at else {
            let done = clonesets_done(&clonesets).await;
            println!(
                "manager_memory: NOT DONE after {:.0} s: {} pods, {done} CloneSets at {REPLICAS} \
                 replicas; manager RSS {:.0} MiB",
                start.elapsed().as_secs_f64(),
                seen.load(Ordering::Relaxed),
                memory_mib(&pid).0
            );
            stop(&mut child);
            log_summary(&log);
            std::process::exit(1);
        };
        let rv_done = server.cluster().store().current_rv();

        // Settle, sampling, then read the steady figures.
        let settle_start = Instant::now();
        while settle_start.elapsed() < settle {
            tokio::time::sleep(Duration::from_millis(250)).await;
            sampled_peak = sampled_peak.max(memory_mib(&pid).0);
        }
        let (rss, hwm) = memory_mib(&pid);
        let rv_steady = server.cluster().store().current_rv();
        let (bench_rss, bench_hwm) = memory_mib("self");

        println!(
            "manager_memory: {CLONESETS} CloneSets created in {:.2} s; {PODS} pods seen after \
             {:.2} s; every status at {REPLICAS} replicas after {:.2} s",
            created.as_secs_f64(),
            pods_at.unwrap_or(done_at).as_secs_f64(),
            done_at.as_secs_f64()
        );
        println!(
            "manager_memory: resourceVersion {rv_done} when done, {rv_steady} after {} s more \
             ({} writes while settling)",
            settle.as_secs(),
            rv_steady.saturating_sub(rv_done)
        );
        println!("manager_memory: manager RSS with nothing cached: {rss_empty:.1} MiB");
        println!(
            "manager_memory: manager steady RSS (VmRSS, {} s after done): {rss:.1} MiB",
            settle.as_secs()
        );
        println!(
            "manager_memory: manager peak RSS (VmHWM): {hwm:.1} MiB (sampled every 250 ms: \
             {sampled_peak:.1} MiB)"
        );
        println!(
            "manager_memory: steady target < 100 MiB: {}",
            if rss < 100.0 { "met" } else { "NOT met" }
        );
        println!(
            "manager_memory: this process (API server, watch): RSS {bench_rss:.0} MiB, peak \
             {bench_hwm:.0} MiB"
        );
        stop(&mut child);
        counter.abort();
        log_summary(&log);
        server.shutdown();
        let _ = std::fs::remove_file(&kubeconfig);
    });
}
