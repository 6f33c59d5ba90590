//! A ResourceDistribution of a Secret to 1,000 namespaces (issue #44's target: converged in
//! under 10 s, with no more writes than namespaces).
//!
//! Each run starts a fresh embedded API server (`kruise-sim` with the Kruise CRDs; writes
//! slowed by `KRUISE_BENCH_WRITE_LATENCY_MS`, default 2) holding 1,000
//! namespaces labelled `team=a`, and the release `kruise-manager` as a subprocess (`run`, no
//! leader election, no webhooks, `ResourceDistributionGate=true`). Timed from the create of
//! the distribution until a watch has seen the 1,000 copies, and until its status reports
//! them all (`succeeded: 1000`). The writes are the server's resourceVersion delta over the
//! same span, the distribution's own create included. Rounds: `KRUISE_BENCH_ROUNDS`, default 3.
//!
//! ```text
//! cargo build --release -p kruise-manager
//! cargo bench -p benches --bench resourcedistribution_scale
//! ```

use std::time::{Duration, Instant};

use k8s_openapi::api::core::v1::{Namespace, Secret};
use kruise_sim::{Config, Server};
use kube::api::{Api, DynamicObject, PostParams};
use kube::core::{ApiResource, GroupVersionKind};
use kube::runtime::watcher;
use serde_json::json;

mod support;
use support::Manager;

const NAMESPACES: usize = 1000;
const TIMEOUT: Duration = Duration::from_secs(120);

fn env_or<T: std::str::FromStr>(name: &str, default: T) -> T {
    std::env::var(name).ok().and_then(|v| v.parse().ok()).unwrap_or(default)
}

/// One run: seconds to the last copy seen, seconds to the status, and the writes.
async fn run(binary: &std::path::Path, latency: Duration) -> (f64, f64, u64) {
    let server = Server::start(Config::default().with_kruise_crds()).await.expect("server starts");
    let path = std::env::temp_dir().join(format!(
        "kruise-rd-scale-{}-{}.kubeconfig",
        std::process::id(),
        server.addr
    ));
    server.write_kubeconfig(&path).expect("kubeconfig written");
    let client =
        kruise_sim::nodes::client_from_kubeconfig(&server.kubeconfig).await.expect("client");
    let namespaces: Api<Namespace> = Api::all(client.clone());
    for i in 0..NAMESPACES {
        let ns: Namespace = serde_json::from_value(json!({
            "metadata": {"name": format!("team-a-{i:04}"), "labels": {"team": "a"}}
        }))
        .expect("namespace");
        namespaces.create(&PostParams::default(), &ns).await.expect("namespace created");
    }
    if !latency.is_zero() {
        server.faults().slow_writes(latency);
    }
    let log = std::env::temp_dir().join(format!("kruise-rd-scale-{}.log", std::process::id()));
    let mut manager = Manager::start(
        binary,
        &path,
        log,
        0.0,
        2000,
        &["--feature-gates", "ResourceDistributionGate=true"],
    );
    manager.wait_ready(Duration::from_secs(60)).await;

    let secrets: Api<Secret> = Api::all(client.clone());
    let config = watcher::Config::default().fields("metadata.name=registry-creds");
    let watch =
        support::watch_count(secrets, config, NAMESPACES, |s: Secret| s.metadata.namespace).await;

    let gvk = GroupVersionKind::gvk("apps.kruise.io", "v1beta1", "ResourceDistribution");
    let resource = ApiResource::from_gvk_with_plural(&gvk, "resourcedistributions");
    let api: Api<DynamicObject> = Api::all_with(client.clone(), &resource);
    let distribution: DynamicObject = serde_json::from_value(json!({
        "apiVersion": "apps.kruise.io/v1beta1", "kind": "ResourceDistribution",
        "metadata": {"name": "registry-creds"},
        "spec": {
            "resource": {"apiVersion": "v1", "kind": "Secret",
                         "metadata": {"name": "registry-creds"},
                         "stringData": {"token": "first"}},
            "targets": {"namespaceSelector": {"matchLabels": {"team": "a"}}},
        },
    }))
    .expect("distribution");
    let rv0 = server.cluster().store().current_rv();
    let start = Instant::now();
    api.create(&PostParams::default(), &distribution).await.expect("created");
    let (_, copies) = tokio::time::timeout(TIMEOUT, watch)
        .await
        .expect("1,000 copies in time")
        .expect("watch task");
    let status = loop {
        let rd = api.get("registry-creds").await.expect("distribution");
        if rd.data["status"]["succeeded"] == NAMESPACES {
            break Instant::now();
        }
        assert!(start.elapsed() < TIMEOUT, "the status did not report {NAMESPACES} copies");
        tokio::time::sleep(Duration::from_millis(20)).await;
    };
    // Let writes in flight land before counting.
    tokio::time::sleep(Duration::from_millis(500)).await;
    let writes = server.cluster().store().current_rv() - rv0;
    if std::env::var_os("KRUISE_BENCH_DETAIL").is_some() {
        let (_, peak) = manager.memory();
        println!("  manager peak {peak:.0} MiB; reconciles: {}", manager.reconciles().await);
    }
    manager.stop(None);
    server.shutdown();
    let _ = std::fs::remove_file(&path);
    (copies.duration_since(start).as_secs_f64(), status.duration_since(start).as_secs_f64(), writes)
}

fn median(values: &mut [f64]) -> f64 {
    values.sort_by(f64::total_cmp);
    values[values.len() / 2]
}

fn main() {
    let binary = support::manager_binary_or_exit("resourcedistribution_scale");
    let rounds: usize = env_or("KRUISE_BENCH_ROUNDS", 3);
    let latency = Duration::from_millis(env_or("KRUISE_BENCH_WRITE_LATENCY_MS", 2));
    let rt = tokio::runtime::Builder::new_multi_thread().enable_all().build().expect("runtime");
    let (mut copies, mut statuses, mut writes) = (Vec::new(), Vec::new(), Vec::new());
    for round in 0..rounds {
        let (c, s, w) = rt.block_on(run(&binary, latency));
        println!("round {round}: copies {c:.3} s, status {s:.3} s, {w} writes");
        copies.push(c);
        statuses.push(s);
        writes.push(w);
    }
    println!(
        "\n{NAMESPACES} namespaces, write latency {} ms, {rounds} rounds:",
        latency.as_millis()
    );
    println!("  every copy seen  median {:.3} s", median(&mut copies));
    println!("  status converged median {:.3} s (target < 10 s)", median(&mut statuses));
    println!(
        "  writes           max {} (copies {NAMESPACES}, plus the distribution's create and its status writes)",
        writes.iter().max().copied().unwrap_or_default()
    );
}
