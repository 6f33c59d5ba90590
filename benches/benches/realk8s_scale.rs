//! Scale-out on a real control plane: the manager against kube-controller-manager, both
//! writing to the same kube-apiserver 1.36 and etcd (`../shared/realk8s`).
//!
//! Skipped, with a message, unless `KRUISE_BENCH_KUBECONFIG` names the kubeconfig of such a
//! control plane (kube-controller-manager running, no scheduler needed: pods stay Pending).
//!
//! Setup (not timed): the Kruise CRDs (`kruise-manager crds`, applied with `kubectl apply
//! --server-side`), then the release manager as a subprocess (`run --kubeconfig ...
//! --enable-leader-election=false --enable-webhook=false`, `--rest-config-qps`/`-burst`
//! `KRUISE_BENCH_QPS`, default 1000: start kube-controller-manager with the same, `KCM_QPS=1000
//! KCM_BURST=1000 up.sh`).
//!
//! After one uncounted run of each side, each round (`KRUISE_BENCH_ROUNDS`, 9) runs every
//! pair (`KRUISE_BENCH_PAIRS`, default `cloneset,statefulset,daemonset`), the two sides in
//! alternating order: in a fresh namespace, a watch of its pods has listed; the workload of
//! `KRUISE_BENCH_PODS` (1000) replicas is created; the time is from the create until the watch
//! has seen every pod. The namespace is then deleted and gone before the next run.
//!
//! - `cloneset`: a CloneSet against a Deployment (the ReplicaSet controller's slow-start);
//! - `statefulset`: an Advanced StatefulSet against a StatefulSet, both `Parallel`;
//! - `daemonset`: an Advanced DaemonSet against a DaemonSet over `KRUISE_BENCH_NODES` (100)
//!   simulated nodes, one pod each. For this pair the bench runs `kruise-sim nodes` (its
//!   scheduler and kubelets; `KRUISE_SIM_BIN`, else `target/release/kruise-sim`, else
//!   `target/debug/kruise-sim`) and deletes the nodes afterwards; it runs last.
//!
//! With `KRUISE_BENCH_WEBHOOKS=1` the manager also serves its webhooks
//! (`--webhook-host 127.0.0.1`, port `KRUISE_BENCH_WEBHOOK_PORT`, 19443), registered by URL, so
//! every pod create of both sides passes the pod webhooks, as in a cluster with Kruise
//! installed; the CRDs then convert through it. The webhook configurations are deleted at the
//! end.
//!
//! `KRUISE_BENCH_MANAGER_ARGS` adds flags of one's own to the manager's (split on spaces).
//!
//! Printed per round: each side's time, its first pod's, and the CPU the manager,
//! kube-controller-manager and kube-apiserver used during the run (from /proc; the two found
//! by name with `pgrep`). Printed per pair: each side's median and spread, the first pods'
//! medians, and the ratio of medians with the spread of the per-round ratios. The target is a
//! median ratio at or below 1.0.
//!
//! ```text
//! cargo build --release -p kruise-manager
//! KCM_QPS=1000 KCM_BURST=1000 bash ../shared/realk8s/up.sh
//! KRUISE_BENCH_KUBECONFIG=/tmp/realk8s/kubeconfig cargo bench -p benches --bench realk8s_scale
//! ```

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use k8s_openapi::api::core::v1::{Namespace, Node, Pod};
use kube::api::{Api, DeleteParams, DynamicObject, PostParams};
use kube::discovery::ApiResource;
use kube::runtime::watcher;
use serde_json::json;

mod support;
use support::Manager;

fn env_or<T: std::str::FromStr>(name: &str, default: T) -> T {
    std::env::var(name).ok().and_then(|v| v.parse().ok()).unwrap_or(default)
}

/// One side of a pair: a workload kind and the object that makes `pods` pods.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Side {
    CloneSet,
    Deployment,
    AdvancedStatefulSet,
    StatefulSet,
    AdvancedDaemonSet,
    DaemonSet,
}

impl Side {
    fn name(self) -> &'static str {
        match self {
            Side::CloneSet => "CloneSet",
            Side::Deployment => "Deployment",
            Side::AdvancedStatefulSet => "Advanced StatefulSet",
            Side::StatefulSet => "StatefulSet",
            Side::AdvancedDaemonSet => "Advanced DaemonSet",
            Side::DaemonSet => "DaemonSet",
        }
    }

    fn is_daemon(self) -> bool {
        matches!(self, Side::AdvancedDaemonSet | Side::DaemonSet)
    }

    fn resource(self) -> ApiResource {
        let (group, version, kind, plural) = match self {
            Side::CloneSet => ("apps.kruise.io", "v1beta1", "CloneSet", "clonesets"),
            Side::Deployment => ("apps", "v1", "Deployment", "deployments"),
            Side::AdvancedStatefulSet => {
                ("apps.kruise.io", "v1beta1", "StatefulSet", "statefulsets")
            }
            Side::StatefulSet => ("apps", "v1", "StatefulSet", "statefulsets"),
            Side::AdvancedDaemonSet => ("apps.kruise.io", "v1beta1", "DaemonSet", "daemonsets"),
            Side::DaemonSet => ("apps", "v1", "DaemonSet", "daemonsets"),
        };
        let api_version =
            if group.is_empty() { version.to_owned() } else { format!("{group}/{version}") };
        ApiResource {
            group: group.into(),
            version: version.into(),
            api_version,
            kind: kind.into(),
            plural: plural.into(),
        }
    }

    fn object(self, pods: usize) -> DynamicObject {
        let resource = self.resource();
        let template = json!({
            "metadata": {"labels": {"app": "bench"}},
            "spec": {"containers": [{"name": "main", "image": "registry.k8s.io/pause:3.10"}]}
        });
        let mut spec = json!({
            "replicas": pods,
            "selector": {"matchLabels": {"app": "bench"}},
            "template": template,
        });
        if matches!(self, Side::AdvancedStatefulSet | Side::StatefulSet) {
            spec["serviceName"] = json!("bench");
            spec["podManagementPolicy"] = json!("Parallel");
        }
        if self.is_daemon() {
            // One pod on each node: the count is the nodes'.
            if let Some(spec) = spec.as_object_mut() {
                spec.remove("replicas");
            }
        }
        let value = json!({
            "apiVersion": resource.api_version,
            "kind": resource.kind,
            "metadata": {"name": "bench"},
            "spec": spec,
        });
        serde_json::from_value(value).expect("a workload object")
    }
}

/// The pairs to run: (Kruise side, built-in side).
fn pairs() -> Vec<(Side, Side)> {
    let wanted = std::env::var("KRUISE_BENCH_PAIRS")
        .unwrap_or_else(|_| "cloneset,statefulset,daemonset".into());
    let mut pairs = Vec::new();
    for name in wanted.split(',').map(str::trim) {
        match name {
            "cloneset" => pairs.push((Side::CloneSet, Side::Deployment)),
            "statefulset" => pairs.push((Side::AdvancedStatefulSet, Side::StatefulSet)),
            "daemonset" => pairs.push((Side::AdvancedDaemonSet, Side::DaemonSet)),
            "" => {}
            other => {
                eprintln!(
                    "realk8s_scale: unknown pair {other:?} in KRUISE_BENCH_PAIRS (cloneset, \
                     statefulset, daemonset)"
                );
                std::process::exit(2);
            }
        }
    }
    // The DaemonSet pair needs nodes, whose kubelets would also run the others' pods: last.
    pairs.sort_by_key(|(kruise, _)| kruise.is_daemon());
    pairs
}

/// The kruise-sim binary for simulated nodes.
fn sim_binary() -> PathBuf {
    if let Some(p) = std::env::var_os("KRUISE_SIM_BIN") {
        return PathBuf::from(p);
    }
    let target = Path::new(env!("CARGO_MANIFEST_DIR")).join("../target");
    for profile in ["release", "debug"] {
        let p = target.join(profile).join("kruise-sim");
        if p.exists() {
            return p;
        }
    }
    eprintln!(
        "realk8s_scale: the daemonset pair needs kruise-sim (cargo build --release -p \
         kruise-sim, or KRUISE_SIM_BIN)"
    );
    std::process::exit(2);
}

/// `count` simulated nodes (`bench-node-<i>`) with their scheduler and kubelets, Ready when
/// this returns. Stopped, and the Node objects deleted, by [`stop_nodes`].
async fn start_nodes(client: &kube::Client, kubeconfig: &Path, count: usize) -> SimNodes {
    let child = SimNodes(
        Command::new(sim_binary())
            .args(["nodes", "--kubeconfig"])
            .arg(kubeconfig)
            .args(["--count", &count.to_string(), "--node-prefix", NODE_PREFIX])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(
                std::fs::File::create(std::env::temp_dir().join("realk8s_scale-nodes.log"))
                    .expect("log file"),
            )
            .spawn()
            .expect("kruise-sim nodes starts"),
    );
    let nodes: Api<Node> = Api::all(client.clone());
    let start = Instant::now();
    loop {
        let ready = nodes.list(&Default::default()).await.map_or(0, |l| {
            l.items
                .iter()
                .filter(|n| n.metadata.name.as_deref().is_some_and(|n| n.starts_with(NODE_PREFIX)))
                .filter(|n| {
                    n.status
                        .as_ref()
                        .and_then(|s| s.conditions.as_ref())
                        .is_some_and(|c| c.iter().any(|c| c.type_ == "Ready" && c.status == "True"))
                })
                .count()
        });
        if ready >= count {
            return child;
        }
        assert!(start.elapsed() < Duration::from_secs(120), "{ready} of {count} nodes Ready");
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
}

/// Stops the simulated nodes and deletes their Node objects.
async fn stop_nodes(client: &kube::Client, mut child: SimNodes) {
    let _ = child.0.kill();
    let _ = child.0.wait();
    let nodes: Api<Node> = Api::all(client.clone());
    if let Ok(list) = nodes.list(&Default::default()).await {
        for n in list.items {
            if let Some(name) = n.metadata.name.filter(|n| n.starts_with(NODE_PREFIX)) {
                let _ = nodes.delete(&name, &DeleteParams::default()).await;
            }
        }
    }
}

const NODE_PREFIX: &str = "bench-node-";

/// The `kruise-sim nodes` process, killed when dropped (a failed run does not leave it behind).
struct SimNodes(Child);

impl Drop for SimNodes {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Applies the Kruise CRDs with kubectl, server-side (`webhook_flags`: where their conversion
/// webhook is, for a manager outside the cluster).
fn apply_crds(manager: &Path, kubeconfig: &Path, webhook_flags: &[String]) {
    let crds = Command::new(manager)
        .arg("crds")
        .args(webhook_flags)
        .output()
        .expect("kruise-manager crds runs");
    assert!(
        crds.status.success(),
        "kruise-manager crds: {}",
        String::from_utf8_lossy(&crds.stderr)
    );
    let mut kubectl = Command::new("kubectl")
        .arg("--kubeconfig")
        .arg(kubeconfig)
        .args(["apply", "--server-side", "--force-conflicts", "-f", "-"])
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .spawn()
        .expect("kubectl runs");
    use std::io::Write as _;
    kubectl.stdin.take().expect("stdin").write_all(&crds.stdout).expect("CRDs written");
    assert!(kubectl.wait().expect("kubectl ends").success(), "kubectl apply of the CRDs failed");
}

/// Creates namespace `name` and waits for its `default` ServiceAccount (the ServiceAccount
/// admission plugin refuses pods until it exists).
async fn fresh_namespace(client: &kube::Client, name: &str) {
    let namespaces: Api<Namespace> = Api::all(client.clone());
    let ns: Namespace = serde_json::from_value(json!({"metadata": {"name": name}})).expect("ns");
    namespaces.create(&PostParams::default(), &ns).await.expect("namespace created");
    let accounts: Api<k8s_openapi::api::core::v1::ServiceAccount> =
        Api::namespaced(client.clone(), name);
    let start = Instant::now();
    while accounts.get_opt("default").await.ok().flatten().is_none() {
        assert!(start.elapsed() < Duration::from_secs(60), "no default ServiceAccount in {name}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// Deletes namespace `name` and waits until it is gone.
async fn delete_namespace(client: &kube::Client, name: &str) {
    let namespaces: Api<Namespace> = Api::all(client.clone());
    let _ = namespaces.delete(name, &DeleteParams::default()).await;
    let start = Instant::now();
    while namespaces.get_opt(name).await.ok().flatten().is_some() {
        assert!(start.elapsed() < Duration::from_secs(600), "namespace {name} not gone");
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

/// A watch of the namespace's pods, listed before this returns; the task ends when it has
/// seen `count` pods, with the instants of the first and the last.
async fn watch_pods(
    client: &kube::Client,
    namespace: &str,
    count: usize,
) -> tokio::task::JoinHandle<(Instant, Instant)> {
    let api: Api<Pod> = Api::namespaced(client.clone(), namespace);
    let config = watcher::Config::default().labels("app=bench");
    support::watch_count(api, config, count, |pod: Pod| pod.metadata.name).await
}

/// One run's times, both from the workload's create.
#[derive(Clone, Copy)]
struct Took {
    /// Until the watch saw the first pod: how long the controller took to react.
    first: Duration,
    /// Until the watch had seen every pod: the figure compared.
    all: Duration,
    /// CPU seconds the manager, kube-controller-manager and kube-apiserver used meanwhile.
    cpu: [f64; 3],
}

/// The processes whose CPU time a run reports: the manager, and kube-controller-manager and
/// kube-apiserver found by name (0 where not found).
struct Processes {
    pids: [String; 3],
}

impl Processes {
    fn find(manager: &str) -> Processes {
        let named = |name: &str| {
            let out = Command::new("pgrep").args(["-x", name]).output().ok();
            out.and_then(|o| String::from_utf8(o.stdout).ok())
                .and_then(|s| s.lines().next().map(str::to_owned))
                .unwrap_or_default()
        };
        Processes { pids: [manager.to_owned(), named("kube-controller"), named("kube-apiserver")] }
    }

    fn cpu(&self) -> [f64; 3] {
        self.pids.each_ref().map(|pid| if pid.is_empty() { 0.0 } else { benches::cpu_seconds(pid) })
    }
}

/// One run: `side` making `pods` pods in namespace `namespace`.
async fn run(
    client: &kube::Client,
    side: Side,
    pods: usize,
    namespace: &str,
    processes: &Processes,
) -> Took {
    // A namespace an interrupted run left behind goes first.
    delete_namespace(client, namespace).await;
    fresh_namespace(client, namespace).await;
    let watch = watch_pods(client, namespace, pods).await;
    let api: Api<DynamicObject> = Api::namespaced_with(client.clone(), namespace, &side.resource());
    let cpu_before = processes.cpu();
    let start = Instant::now();
    api.create(&PostParams::default(), &side.object(pods)).await.expect("workload created");
    let (first, done) = tokio::time::timeout(Duration::from_secs(600), watch)
        .await
        .unwrap_or_else(|_| panic!("{}: not every pod after 600 s", side.name()))
        .expect("watch task");
    let cpu_after = processes.cpu();
    let took = Took {
        first: first.duration_since(start),
        all: done.duration_since(start),
        cpu: std::array::from_fn(|i| cpu_after[i] - cpu_before[i]),
    };
    delete_namespace(client, namespace).await;
    took
}

fn median(values: &mut [f64]) -> f64 {
    values.sort_by(f64::total_cmp);
    let n = values.len();
    if n == 0 {
        return f64::NAN;
    }
    if n % 2 == 1 { values[n / 2] } else { (values[n / 2 - 1] + values[n / 2]) / 2.0 }
}

/// Min, quartiles and max, as `min / q1 / q3 / max`.
fn spread(values: &mut [f64]) -> String {
    values.sort_by(f64::total_cmp);
    let at = |q: f64| values[((values.len() - 1) as f64 * q).round() as usize];
    format!("{:.2} / {:.2} / {:.2} / {:.2}", at(0.0), at(0.25), at(0.75), at(1.0))
}

fn main() {
    let Some(kubeconfig) = std::env::var_os("KRUISE_BENCH_KUBECONFIG").map(PathBuf::from) else {
        println!(
            "realk8s_scale: skipped: set KRUISE_BENCH_KUBECONFIG to the kubeconfig of a real \
             control plane (../shared/realk8s/up.sh prints it)"
        );
        return;
    };
    let binary = support::manager_binary_or_exit("realk8s_scale");
    let rounds: usize = env_or("KRUISE_BENCH_ROUNDS", 9);
    let pods: usize = env_or("KRUISE_BENCH_PODS", 1000);
    let qps: f32 = env_or("KRUISE_BENCH_QPS", 1000.0);
    let burst: u32 = env_or("KRUISE_BENCH_BURST", 1000);
    let rt = tokio::runtime::Builder::new_multi_thread().enable_all().build().expect("runtime");
    println!(
        "realk8s_scale: {} against {}; {pods} pods, {rounds} rounds, manager qps {qps} burst \
         {burst}",
        binary.display(),
        kubeconfig.display()
    );
    let webhooks = std::env::var("KRUISE_BENCH_WEBHOOKS").is_ok_and(|v| v == "1");
    let webhook_flags: Vec<String> = if webhooks {
        let port: u16 = env_or("KRUISE_BENCH_WEBHOOK_PORT", 19443);
        vec!["--webhook-host".into(), "127.0.0.1".into(), "--webhook-port".into(), port.to_string()]
    } else {
        Vec::new()
    };
    println!("realk8s_scale: webhooks {}", if webhooks { "on" } else { "off" });
    let client = rt.block_on(async {
        let config = kube::Config::from_custom_kubeconfig(
            kube::config::Kubeconfig::read_from(&kubeconfig).expect("kubeconfig reads"),
            &kube::config::KubeConfigOptions::default(),
        )
        .await
        .expect("kubeconfig");
        kube::Client::try_from(config).expect("client")
    });
    if webhooks {
        // The manager keeps its serving certificate in a Secret of its namespace.
        let namespaces: Api<Namespace> = Api::all(client.clone());
        let ns: Namespace =
            serde_json::from_value(json!({"metadata": {"name": "kruise-system"}})).expect("ns");
        let _ = rt.block_on(namespaces.create(&PostParams::default(), &ns));
    }
    apply_crds(&binary, &kubeconfig, &webhook_flags);
    let log = std::env::temp_dir().join("realk8s_scale-manager.log");
    let mut extra: Vec<&str> = webhook_flags.iter().map(String::as_str).collect();
    if webhooks {
        extra.push("--enable-webhook=true");
    }
    // Flags of one's own for the manager, split on spaces (for example `--feature-gates
    // PodWebhook=false`, which leaves out the KruisePodReady readiness gate).
    let own_flags = std::env::var("KRUISE_BENCH_MANAGER_ARGS").unwrap_or_default();
    extra.extend(own_flags.split_whitespace());
    if !own_flags.trim().is_empty() {
        println!("realk8s_scale: manager flags of one's own: {own_flags}");
    }
    let mut manager = Manager::start(&binary, &kubeconfig, log, qps, burst, &extra);
    let nodes: usize = env_or("KRUISE_BENCH_NODES", 100);
    let processes = Processes::find(&manager.pid);
    rt.block_on(async {
        manager.wait_ready(Duration::from_secs(120)).await;
        let mut sim_nodes = None;
        for (kruise, builtin) in pairs() {
            let pods = if kruise.is_daemon() {
                if sim_nodes.is_none() {
                    sim_nodes = Some(start_nodes(&client, &kubeconfig, nodes).await);
                }
                nodes
            } else {
                pods
            };
            // One run of each side first, not counted: right after the CRDs are applied, the
            // API server's storage for them may still be starting.
            for side in [kruise, builtin] {
                let t = run(&client, side, pods, "bench-warm-up", &processes).await;
                let t = t.all.as_secs_f64();
                println!("realk8s_scale/{}: warm-up: {} {t:.3} s", kruise.name(), side.name());
            }
            let (mut ours, mut theirs, mut ratios) = (Vec::new(), Vec::new(), Vec::new());
            let (mut ours_first, mut theirs_first) = (Vec::new(), Vec::new());
            for round in 0..rounds {
                // Alternate which side goes first, so that a slow spell hits both alike.
                let order = if round % 2 == 0 { [kruise, builtin] } else { [builtin, kruise] };
                let zero = Took { first: Duration::ZERO, all: Duration::ZERO, cpu: [0.0; 3] };
                let mut took = [zero; 2];
                for (i, side) in order.into_iter().enumerate() {
                    let namespace = format!("bench-{round}-{i}");
                    took[usize::from(side != kruise)] =
                        run(&client, side, pods, &namespace, &processes).await;
                }
                let cpu = |t: &Took| {
                    format!(
                        "cpu ms: manager {:.0}, kcm {:.0}, apiserver {:.0}",
                        t.cpu[0] * 1e3,
                        t.cpu[1] * 1e3,
                        t.cpu[2] * 1e3
                    )
                };
                let (kc, bc) = (cpu(&took[0]), cpu(&took[1]));
                let [k, b] = took.map(|t| (t.first.as_secs_f64(), t.all.as_secs_f64()));
                println!(
                    "realk8s_scale/{}: round {round}: {} {:.3} s (first pod {:.3} s; {kc}), {} \
                     {:.3} s (first pod {:.3} s; {bc}), ratio {:.2}",
                    kruise.name(),
                    kruise.name(),
                    k.1,
                    k.0,
                    builtin.name(),
                    b.1,
                    b.0,
                    k.1 / b.1
                );
                ours.push(k.1);
                theirs.push(b.1);
                ratios.push(k.1 / b.1);
                ours_first.push(k.0);
                theirs_first.push(b.0);
            }
            println!(
                "realk8s_scale/{}: first pod: {} median {:.3} s, {} median {:.3} s",
                kruise.name(),
                kruise.name(),
                median(&mut ours_first),
                builtin.name(),
                median(&mut theirs_first),
            );
            let (m_ours, m_theirs) = (median(&mut ours.clone()), median(&mut theirs.clone()));
            println!(
                "realk8s_scale/{}: {} median {m_ours:.3} s (min/q1/q3/max {}), {} median \
                 {m_theirs:.3} s ({}); ratio of medians {:.2}, per-round ratios median {:.2} \
                 (min/q1/q3/max {})",
                kruise.name(),
                kruise.name(),
                spread(&mut ours),
                builtin.name(),
                spread(&mut theirs),
                m_ours / m_theirs,
                median(&mut ratios.clone()),
                spread(&mut ratios),
            );
        }
        if let Some(child) = sim_nodes {
            stop_nodes(&client, child).await;
        }
        let (rss, peak) = manager.memory();
        println!(
            "realk8s_scale: manager RSS {rss:.1} MiB, peak {peak:.1} MiB; reconciles: {}",
            manager.reconciles().await
        );
    });
    manager.stop(Some("realk8s_scale"));
    if webhooks {
        // Registered by URL to a manager that is gone: without them, the cluster's pod
        // creates would fail.
        for (kind, name) in [
            ("mutatingwebhookconfiguration", "kruise-mutating-webhook-configuration"),
            ("validatingwebhookconfiguration", "kruise-validating-webhook-configuration"),
        ] {
            let _ = Command::new("kubectl")
                .arg("--kubeconfig")
                .arg(&kubeconfig)
                .args(["delete", kind, name, "--ignore-not-found"])
                .status();
        }
    }
}
