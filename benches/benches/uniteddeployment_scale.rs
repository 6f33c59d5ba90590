//! A UnitedDeployment of 10 CloneSet subsets against one CloneSet, both 0 → 1,000 pods
//! (issue #40's target: the UnitedDeployment no slower than the CloneSet plus 10%).
//!
//! Each run starts a fresh embedded API server (`kruise-sim` with the Kruise CRDs, no nodes,
//! so pods stay Pending; writes slowed by `KRUISE_BENCH_WRITE_LATENCY_MS`, default 2) and the
//! release `kruise-manager` as a subprocess (`run`, no leader election, no webhooks). Timed from the create of the object (a CloneSet with
//! `replicas: 1000`, or a UnitedDeployment with `replicas: 1000` over 10 subsets of its
//! `cloneSetTemplate`) until a watch has seen 1,000 of its pods. Rounds
//! (`KRUISE_BENCH_ROUNDS`, default 5) alternate the two; the table gives their medians, the
//! spread and the ratio. `KRUISE_BENCH_MANAGER_FLAGS` adds manager flags (for example
//! `--cloneset-workers=10`); `KRUISE_BENCH_DETAIL` prints each run's reconciles and peak
//! memory.
//!
//! ```text
//! cargo build --release -p kruise-manager
//! cargo bench -p benches --bench uniteddeployment_scale
//! ```

use std::time::{Duration, Instant};

use k8s_openapi::api::core::v1::Pod;
use kruise_sim::{Config, Server};
use kube::api::{Api, DynamicObject, PostParams};
use kube::core::{ApiResource, GroupVersionKind};
use kube::runtime::watcher;
use serde_json::json;

mod support;
use support::Manager;

const PODS: usize = 1000;
const TIMEOUT: Duration = Duration::from_secs(180);

fn env_or<T: std::str::FromStr>(name: &str, default: T) -> T {
    std::env::var(name).ok().and_then(|v| v.parse().ok()).unwrap_or(default)
}

fn pod_template(app: &str) -> serde_json::Value {
    json!({"metadata": {"labels": {"app": app}},
           "spec": {"containers": [{"name": "main", "image": "registry.example/web:v1"}]}})
}

fn object(united: bool) -> (ApiResource, serde_json::Value) {
    if united {
        let subsets: Vec<serde_json::Value> = (0..10)
            .map(|i| {
                json!({"name": format!("zone-{i}"), "nodeSelectorTerm": {"matchExpressions": [
                {"key": "zone", "operator": "In", "values": [format!("zone-{i}")]}]}})
            })
            .collect();
        let gvk = GroupVersionKind::gvk("apps.kruise.io", "v1beta1", "UnitedDeployment");
        (
            ApiResource::from_gvk_with_plural(&gvk, "uniteddeployments"),
            json!({
                "apiVersion": "apps.kruise.io/v1beta1", "kind": "UnitedDeployment",
                "metadata": {"name": "web", "namespace": "default"},
                "spec": {"replicas": PODS, "selector": {"matchLabels": {"app": "web"}},
                    "revisionHistoryLimit": 10, "updateStrategy": {"type": "Manual", "manualUpdate": {}},
                    "template": {"cloneSetTemplate": {"metadata": {"labels": {"app": "web"}},
                        "spec": {"selector": {"matchLabels": {"app": "web"}}, "template": pod_template("web")}}},
                    "topology": {"subsets": subsets}}
            }),
        )
    } else {
        let gvk = GroupVersionKind::gvk("apps.kruise.io", "v1beta1", "CloneSet");
        (
            ApiResource::from_gvk_with_plural(&gvk, "clonesets"),
            json!({
                "apiVersion": "apps.kruise.io/v1beta1", "kind": "CloneSet",
                "metadata": {"name": "web", "namespace": "default"},
                "spec": {"replicas": PODS, "selector": {"matchLabels": {"app": "web"}},
                         "template": pod_template("web")}
            }),
        )
    }
}

/// One run: the seconds from the create to the 1,000th pod seen.
async fn run(binary: &std::path::Path, united: bool, latency: Duration) -> f64 {
    let server = Server::start(Config::default().with_kruise_crds()).await.expect("server starts");
    if !latency.is_zero() {
        server.faults().slow_writes(latency);
    }
    let path = std::env::temp_dir().join(format!(
        "kruise-ud-scale-{}-{}.kubeconfig",
        std::process::id(),
        server.addr
    ));
    server.write_kubeconfig(&path).expect("kubeconfig written");
    let client =
        kruise_sim::nodes::client_from_kubeconfig(&server.kubeconfig).await.expect("client");
    let log = std::env::temp_dir().join(format!("kruise-ud-scale-{}.log", std::process::id()));
    let extra = std::env::var("KRUISE_BENCH_MANAGER_FLAGS").unwrap_or_default();
    let extra: Vec<&str> = extra.split_whitespace().collect();
    let mut manager = Manager::start(binary, &path, log, 0.0, 2000, &extra);
    manager.wait_ready(Duration::from_secs(60)).await;

    let pods: Api<Pod> = Api::namespaced(client.clone(), "default");
    let config = watcher::Config::default().labels("app=web");
    let watch = support::watch_count(pods, config, PODS, |pod: Pod| pod.metadata.name).await;
    let (resource, body) = object(united);
    let api: Api<DynamicObject> = Api::namespaced_with(client.clone(), "default", &resource);
    let obj: DynamicObject = serde_json::from_value(body).expect("object");
    let start = Instant::now();
    api.create(&PostParams::default(), &obj).await.expect("created");
    let (first, done) = tokio::time::timeout(TIMEOUT, watch)
        .await
        .expect("1,000 pods in time")
        .expect("watch task");
    let seconds = done.duration_since(start).as_secs_f64();
    if std::env::var_os("KRUISE_BENCH_DETAIL").is_some() {
        let (_, peak) = manager.memory();
        println!(
            "  first pod after {:.3} s; manager {} peak {peak:.0} MiB; reconciles: {}",
            first.duration_since(start).as_secs_f64(),
            manager.pid,
            manager.reconciles().await
        );
    }
    manager.stop(None);
    server.shutdown();
    let _ = std::fs::remove_file(&path);
    seconds
}

fn median(values: &mut [f64]) -> f64 {
    values.sort_by(f64::total_cmp);
    values[values.len() / 2]
}

fn main() {
    let binary = support::manager_binary_or_exit("uniteddeployment_scale");
    let rounds: usize = env_or("KRUISE_BENCH_ROUNDS", 5);
    let latency = Duration::from_millis(env_or("KRUISE_BENCH_WRITE_LATENCY_MS", 2));
    let rt = tokio::runtime::Builder::new_multi_thread().enable_all().build().expect("runtime");
    let (mut cloneset, mut united) = (Vec::new(), Vec::new());
    for round in 0..rounds {
        // Alternate which goes first, so the machine's slow spells hit both alike.
        for first_united in [round % 2 == 1, round % 2 == 0] {
            let seconds = rt.block_on(run(&binary, first_united, latency));
            if first_united {
                united.push(seconds)
            } else {
                cloneset.push(seconds)
            }
            println!(
                "round {round}: {} {seconds:.3} s",
                if first_united { "UnitedDeployment" } else { "CloneSet" }
            );
        }
    }
    let spread = |v: &[f64]| {
        let (lo, hi) = v.iter().fold((f64::MAX, 0f64), |(lo, hi), x| (lo.min(*x), hi.max(*x)));
        format!("{lo:.3}–{hi:.3}")
    };
    let (c, u) = (median(&mut cloneset.clone()), median(&mut united.clone()));
    println!("\n0 → {PODS} pods, write latency {} ms, {rounds} rounds:", latency.as_millis());
    println!("  CloneSet               median {c:.3} s (spread {})", spread(&cloneset));
    println!("  UnitedDeployment (10)  median {u:.3} s (spread {})", spread(&united));
    println!("  ratio {:.3} (target ≤ 1.10)", u / c);
}
