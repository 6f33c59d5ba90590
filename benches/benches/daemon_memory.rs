//! Steady memory of the kruise-daemon binary with 100 pods on its node (each with two
//! containers, reported by containermeta, and both probed every second by an exec probe of the
//! node's NodePodProbe: 200 probes), over the fake runtime served as a CRI socket and the
//! embedded API server. Target: under 20 MiB for the release binary.
//!
//! The daemon binary is `KRUISE_DAEMON_BIN`, or the shipped build (`target/dist/kruise-daemon`,
//! the profile the Dockerfile builds with) when it exists, else the release build next to this
//! bench's `deps/`:
//!
//! ```text
//! cargo build --profile dist -p kruise-daemon
//! cargo bench -p benches --bench daemon_memory
//! ```

use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use k8s_openapi::api::core::v1::Pod;
use kruise_cri::FakeRuntime;
use kruise_cri::types::{ContainerConfig, PodSandboxConfig};
use kube::Api;
use kube::api::{Patch, PatchParams, PostParams};
use serde_json::json;

const PODS: usize = 100;
const NODE: &str = "node-a";
const TARGET_MIB: f64 = 20.0;

fn daemon_binary() -> Option<PathBuf> {
    if let Ok(path) = std::env::var("KRUISE_DAEMON_BIN") {
        return Some(PathBuf::from(path));
    }
    let exe = std::env::current_exe().ok()?;
    let release = exe.parent()?.parent()?;
    let dist = release.parent()?.join("dist").join("kruise-daemon");
    if dist.exists() {
        return Some(dist);
    }
    let candidate = release.join("kruise-daemon");
    candidate.exists().then_some(candidate)
}

fn rss_kib(pid: u32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap_or(0)
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("a free port")
}

/// A pod bound to the node with containers `app` and `sidecar` running in the fake runtime,
/// its statuses naming their IDs, and the SidecarSet annotation that makes containermeta
/// report it.
async fn pod(client: &kube::Client, fake: &FakeRuntime, name: &str) {
    let api = Api::<Pod>::namespaced(client.clone(), "default");
    let pod: Pod = serde_json::from_value(json!({
        "metadata": {"name": name, "namespace": "default",
                     "annotations": {"kruise.io/sidecarset-hash": "{}"}},
        "spec": {"nodeName": NODE, "terminationGracePeriodSeconds": 1, "containers": [
            {"name": "app", "image": "busybox:1"}, {"name": "sidecar", "image": "busybox:1"}]},
    }))
    .expect("pod");
    let pod = api.create(&PostParams::default(), &pod).await.expect("pod created");
    let uid = pod.metadata.uid.clone().unwrap_or_default();
    let labels = |c: Option<&str>| {
        let mut l: kruise_cri::types::StringMap =
            [("io.kubernetes.pod.uid".to_owned(), uid.clone())].into();
        if let Some(c) = c {
            l.insert("io.kubernetes.container.name".to_owned(), c.to_owned());
        }
        l
    };
    let sandbox = fake.run_pod_sandbox(PodSandboxConfig {
        name: name.into(),
        uid: uid.clone(),
        namespace: "default".into(),
        labels: labels(None),
        ..Default::default()
    });
    let mut statuses = Vec::new();
    for c in ["app", "sidecar"] {
        let id = fake
            .create_container(
                &sandbox,
                ContainerConfig {
                    name: c.into(),
                    image: "busybox:1".into(),
                    labels: labels(Some(c)),
                    annotations: [("io.kubernetes.container.hash".to_owned(), "1f".to_owned())]
                        .into(),
                    ..Default::default()
                },
            )
            .expect("container");
        fake.start_container(&id).expect("started");
        statuses.push(json!({"name": c, "image": "img", "imageID": "", "ready": true,
            "restartCount": 0, "containerID": format!("containerd://{id}"),
            "state": {"running": {"startedAt": "2024-01-01T00:00:00Z"}}}));
    }
    api.patch_status(
        name,
        &PatchParams::default(),
        &Patch::Merge(json!({"status": {"phase": "Running", "containerStatuses": statuses}})),
    )
    .await
    .expect("status");
}

async fn run(binary: &std::path::Path) -> (f64, Duration) {
    let server = kruise_sim::Server::start(kruise_sim::Config::default().with_kruise_crds())
        .await
        .expect("server");
    let client =
        kruise_sim::nodes::client_from_kubeconfig(&server.kubeconfig).await.expect("client");
    let fake = FakeRuntime::new(NODE);
    fake.add_image("busybox:1", 1000);
    let dir = std::env::temp_dir().join(format!("kruise-daemon-memory-{}", std::process::id()));
    let sock = dir.join("run").join("containerd.sock");
    std::fs::create_dir_all(sock.parent().expect("parent")).expect("dir");
    let _served = kruise_cri::fake::serve(fake.clone(), &sock).await.expect("fake CRI socket");
    for i in 0..PODS {
        pod(&client, &fake, &format!("pod-{i}")).await;
    }
    // Every container probed, as a PodProbeMarker over these pods would have it.
    let uids: Vec<(String, String)> = Api::<Pod>::namespaced(client.clone(), "default")
        .list(&Default::default())
        .await
        .expect("list")
        .items
        .iter()
        .map(|p| {
            (
                p.metadata.name.clone().unwrap_or_default(),
                p.metadata.uid.clone().unwrap_or_default(),
            )
        })
        .collect();
    let probes: Vec<serde_json::Value> = uids
        .iter()
        .map(|(name, uid)| {
            let container_probes: Vec<serde_json::Value> = ["app", "sidecar"]
                .iter()
                .map(|c| {
                    json!({
                        "name": format!("marker#{c}"), "containerName": c,
                        "probe": {"exec": {"command": ["true"]}, "periodSeconds": 1}
                    })
                })
                .collect();
            json!({"name": name, "namespace": "default", "uid": uid, "IP": "10.0.0.1",
                "probes": container_probes})
        })
        .collect();
    let npp: kruise_api::apps::v1alpha1::NodePodProbe = serde_json::from_value(json!({
        "apiVersion": "apps.kruise.io/v1alpha1", "kind": "NodePodProbe",
        "metadata": {"name": NODE}, "spec": {"podProbes": probes}
    }))
    .expect("a NodePodProbe");
    let npps = Api::<kruise_api::apps::v1alpha1::NodePodProbe>::all(client.clone());
    // `DAEMON_MEMORY_NO_PROBES=1` measures without them, for comparison.
    let probing = std::env::var_os("DAEMON_MEMORY_NO_PROBES").is_none();
    if probing {
        npps.create(&PostParams::default(), &npp).await.expect("NodePodProbe created");
    }
    let kubeconfig = dir.join("kubeconfig");
    std::fs::write(&kubeconfig, &server.kubeconfig).expect("kubeconfig");
    let mut child = Command::new(binary)
        .arg("--kubeconfig")
        .arg(&kubeconfig)
        .arg("--host-var-run")
        .arg(sock.parent().expect("parent"))
        .arg("--socket-file")
        .arg("containerd.sock")
        .arg("--addr")
        .arg(format!("127.0.0.1:{}", free_port()))
        .env("NODE_NAME", NODE)
        .envs(std::env::var("DAEMON_MALLOC_ARENA_MAX").ok().map(|v| ("MALLOC_ARENA_MAX", v)))
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("daemon starts");
    let started = Instant::now();
    let pods = Api::<Pod>::namespaced(client.clone(), "default");
    loop {
        let list = pods.list(&Default::default()).await.expect("list");
        let reported = list
            .items
            .iter()
            .filter(|p| {
                p.metadata
                    .annotations
                    .as_ref()
                    .is_some_and(|a| a.contains_key("apps.kruise.io/runtime-containers-meta"))
            })
            .count();
        let probed = npps.get(NODE).await.ok().and_then(|n| n.status).map_or(0, |s| {
            s.pod_probe_statuses
                .iter()
                .flat_map(|p| &p.probe_states)
                .filter(|s| s.state.as_str() == "Succeeded")
                .count()
        });
        if reported == PODS && (probed == 2 * PODS || !probing) {
            break;
        }
        assert!(
            started.elapsed() < Duration::from_secs(120),
            "only {reported} pods reported, {probed} probes succeeded"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    let reported_after = started.elapsed();
    if std::env::var_os("DAEMON_MEMORY_TRACE").is_some() {
        for _ in 0..12 {
            tokio::time::sleep(Duration::from_secs(5)).await;
            eprintln!(
                "t={:.0}s rss={:.1} MiB",
                started.elapsed().as_secs_f64(),
                rss_kib(child.id()) as f64 / 1024.0
            );
        }
    }
    tokio::time::sleep(Duration::from_secs(3)).await;
    let mut peak = 0;
    for _ in 0..5 {
        tokio::time::sleep(Duration::from_millis(400)).await;
        peak = peak.max(rss_kib(child.id()));
    }
    let _ = child.kill();
    let _ = child.wait();
    server.shutdown();
    let _ = std::fs::remove_dir_all(&dir);
    (peak as f64 / 1024.0, reported_after)
}

fn main() {
    let Some(binary) = daemon_binary() else {
        eprintln!(
            "daemon_memory: no kruise-daemon binary next to this bench; run \
             `cargo build --release -p kruise-daemon` first (or set KRUISE_DAEMON_BIN)"
        );
        std::process::exit(2);
    };
    let rt = tokio::runtime::Builder::new_multi_thread().enable_all().build().expect("runtime");
    let (mib, reported) = rt.block_on(run(&binary));
    println!(
        "kruise-daemon ({}) with {PODS} pods reported and {} probes succeeded after {:.1} s: steady RSS {mib:.1} MiB (target < {TARGET_MIB} MiB){}",
        binary.display(),
        2 * PODS,
        reported.as_secs_f64(),
        if mib < TARGET_MIB { "" } else { " — OVER TARGET" }
    );
}
