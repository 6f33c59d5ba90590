//! The soak (issue #47's "a soak that covers every kind"; not in the default run): kruise-sim
//! with simulated nodes and two manager replicas, as the chart deploys them (a leader elected on
//! a Lease, both serving the webhooks behind one Service), several kinds rolling at once for
//! `KRUISE_SOAK_SECONDS` (60 by default), under faults drawn from `KRUISE_SOAK_SEED` (1 by
//! default): conflicts, 429s, 5xx and slow writes, dropped watches, 410 Gone on the watches'
//! resumption, the leader killed with SIGKILL (the standby waits out the lease) or stopped with
//! SIGTERM (it hands the lease over), and the standby killed. Throughout, it checks that
//! - a CloneSet guarded by a PodUnavailableBudget of 1 never has two pods unavailable (the
//!   CloneSet itself would allow 2),
//! - a recreating CloneSet never passes `maxSurge` nor goes under `replicas - maxUnavailable`,
//! - an Advanced StatefulSet never updates a pod below its partition, nor has more than
//!   `maxUnavailable` pods unavailable,
//! - an Advanced DaemonSet never runs two live pods on a node, nor more than `maxUnavailable`
//!   unavailable (its image changes only between rollouts: upstream replaces an old pod that
//!   is not available outside the budget, so a change mid-rollout may take one more),
//! - a SidecarSet updating its sidecar in place never has more than `maxUnavailable` of its
//!   pods unavailable, and every pod it selects carries its sidecar exactly once,
//! - a UnitedDeployment over two node pools keeps each subset's pods on its own pool,
//! - a BroadcastJob (a new one in some rounds) never runs two pods on a node nor more than its
//!   `parallelism` at once, and completes on every node,
//! - a CloneSet recreating its pods under a WorkloadSpread over the two pools never has more
//!   than the first subset's `maxReplicas` pods in it, and each pod runs in its subset's pool,
//! - an AdvancedCronJob ticking every 10 s under `concurrencyPolicy: Forbid` never has two
//!   Jobs running,
//! - a ResourceDistribution (its Secret changed in some rounds) never writes to a namespace
//!   its targets do not select,
//! - an Advanced StatefulSet whose PersistentPodState requires each pod's node brings every
//!   recreated pod back to the node its ordinal ran on,
//! - a CloneSet released through a Rollout (a canary step of 50 %, then all) holds its
//!   budget,
//! - at most one replica leads at a time,
//!
//! and, once the faults stop, that every workload converges within two minutes: every pod on
//! its latest image and ready, every BroadcastJob complete, the AdvancedCronJob running a Job
//! scheduled after the faults stopped to completion, the distributed Secret's latest data in
//! every selected namespace, the Rollout healthy. It prints the seed, the faults that fired, the manager restarts,
//! and each violation with the events around it.
//!
//! Run: `KRUISE_SOAK_SECONDS=1800 cargo test -p kruise-manager --test e2e -- --ignored soak`.
//! Not covered yet: the kinds kruise-daemon serves (ContainerRecreateRequest, the image
//! pulls), PodProbeMarker and EphemeralJob.

use crate::common;

use std::collections::BTreeMap;
use std::io::Write as _;
use std::net::{Shutdown, SocketAddr, TcpListener, TcpStream};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use common::{Budget, Kubectl, Proc, Rng, SimCluster, cloneset_yaml, start_monitor, wait_for};
use kruise_sim::faults::{Fault, FaultAction, FaultHits};
use serde_json::{Value, json};

fn env_u64(name: &str, default: u64) -> u64 {
    std::env::var(name).ok().and_then(|v| v.parse().ok()).unwrap_or(default)
}

const NODES: usize = 4;

fn cluster() -> SimCluster {
    let cluster = SimCluster::start(
        kruise_sim::Config::default().with_kruise_crds().with_controllers().with_nodes(
            kruise_sim::nodes::NodesConfig::new(NODES).with_delays(
                kruise_sim::nodes::kubelet::Delays {
                    pull: Duration::from_millis(200),
                    start: Duration::from_millis(200),
                    stop: Duration::from_millis(100),
                    ..Default::default()
                },
            ),
        ),
    );
    cluster.kubectl.ok(&["create", "namespace", "kruise-system"]);
    cluster
}

/// Two `kruise-manager run` replicas electing a leader on a short Lease, each serving the
/// webhooks on a port of its own behind [`start_service`], the budget guarding in-place updates
/// too.
struct Replicas {
    procs: [Option<Proc>; 2],
    metrics: [u16; 2],
    webhook: [u16; 2],
    starts: usize,
}

const REPLICA_NAMES: [&str; 2] = ["a", "b"];

impl Replicas {
    fn new() -> Self {
        let port = crate::leader_failover::free_port;
        Replicas {
            procs: [None, None],
            metrics: [port(), port()],
            webhook: [port(), port()],
            starts: 0,
        }
    }

    fn start(&mut self, cluster: &SimCluster, i: usize) {
        self.starts += 1;
        let log = format!("manager-{}-{}.log", REPLICA_NAMES[i], self.starts);
        let (metrics, webhook) =
            (format!("127.0.0.1:{}", self.metrics[i]), self.webhook[i].to_string());
        self.procs[i] = Some(cluster.run_manager(
            &log,
            &[
                "--enable-leader-election=true",
                "--leader-election-lease-duration",
                "4s",
                "--leader-election-renew-deadline",
                "3s",
                "--leader-election-retry-period",
                "1s",
                "--metrics-addr",
                &metrics,
                "--health-probe-addr",
                "0",
                "--webhook-port",
                &webhook,
                "--feature-gates",
                "PodUnavailableBudgetUpdateGate=true,ResourceDistributionGate=true",
            ],
        ));
    }

    /// Whether replica `i` says it leads (`kruise_manager_is_leader`); `None` when it does not
    /// answer.
    fn leads(&self, i: usize) -> Option<bool> {
        let (status, text) = crate::leader_failover::http_get(self.metrics[i], "/metrics")?;
        (status == 200).then_some(())?;
        Some(crate::leader_failover::metric(&text, "kruise_manager_is_leader")? == 1.0)
    }

    /// The replicas that say they lead.
    fn leaders(&self) -> Vec<usize> {
        (0..2).filter(|&i| self.procs[i].is_some() && self.leads(i) == Some(true)).collect()
    }

    fn logs(&self) -> String {
        let mut out = String::new();
        for (i, p) in self.procs.iter().enumerate() {
            if let Some(p) = p {
                let text = p.log_text();
                let tail: Vec<&str> = text.lines().rev().take(40).collect();
                let tail: Vec<&str> = tail.into_iter().rev().collect();
                out.push_str(&format!(
                    "--- replica {} ---\n{}\n",
                    REPLICA_NAMES[i],
                    tail.join("\n")
                ));
            }
        }
        out
    }
}

/// The webhook Service: each connection goes to the next replica that accepts it, as
/// kube-proxy spreads connections over a Service's endpoints (a killed replica refuses, so
/// the other gets it).
fn start_service(backends: [u16; 2]) -> SocketAddr {
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind the service");
    let addr = listener.local_addr().expect("service address");
    std::thread::spawn(move || {
        let mut next = 0usize;
        for client in listener.incoming() {
            let Ok(client) = client else { continue };
            next += 1;
            let Some(upstream) = (0..2).find_map(|k| {
                let port = backends[(next + k) % 2];
                TcpStream::connect(SocketAddr::from(([127, 0, 0, 1], port))).ok()
            }) else {
                continue;
            };
            let pipe = |mut from: TcpStream, mut to: TcpStream| {
                std::thread::spawn(move || {
                    let _ = std::io::copy(&mut from, &mut to);
                    let _ = to.flush();
                    let _ = to.shutdown(Shutdown::Write);
                });
            };
            let (Ok(client2), Ok(upstream2)) = (client.try_clone(), upstream.try_clone()) else {
                continue;
            };
            pipe(client, upstream2);
            pipe(upstream, client2);
        }
    });
    addr
}

/// The election Lease's `leaseTransitions`.
fn lease_transitions(k: &Kubectl) -> i64 {
    let out =
        k.run_with(&["get", "lease", "-n", "kruise-system", "kruise-manager", "-o", "json"], None);
    serde_json::from_str::<Value>(&out.stdout)
        .ok()
        .and_then(|l| l["spec"]["leaseTransitions"].as_i64())
        .unwrap_or(0)
}

/// A write through kubectl, retried while the manager (whose webhooks see it) restarts; a
/// write still refused after a minute fails the soak with kubectl's last answer.
fn write(k: &Kubectl, args: &[&str], stdin: Option<&str>) {
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let out = k.run_with(args, stdin);
        if out.ok {
            return;
        }
        assert!(
            Instant::now() < deadline,
            "kubectl {} still refused after 60 s: {}{}",
            args.join(" "),
            out.stderr,
            stdin.map(|s| format!("\nof:\n{s}")).unwrap_or_default()
        );
        std::thread::sleep(Duration::from_millis(200));
    }
}

fn asts(partition: i64) -> String {
    format!(
        r#"apiVersion: apps.kruise.io/v1beta1
kind: StatefulSet
metadata:
  name: sts
spec:
  replicas: 4
  podManagementPolicy: Parallel
  selector:
    matchLabels: {{app: sts}}
  updateStrategy:
    type: RollingUpdate
    rollingUpdate: {{partition: {partition}, maxUnavailable: 1, podUpdatePolicy: ReCreate}}
  template:
    metadata:
      labels: {{app: sts}}
    spec:
      containers:
      - name: main
        image: registry.example/sts:v0
"#
    )
}

const SIDECARSET: &str = r#"apiVersion: apps.kruise.io/v1beta1
kind: SidecarSet
metadata:
  name: sidecar
spec:
  selector:
    matchLabels: {app: sc}
  updateStrategy:
    type: RollingUpdate
    maxUnavailable: 1
  containers:
  - name: sidecar
    image: registry.example/sidecar:v0
"#;

/// What is wrong when `pod`, of `subset` (`subset-a` or `subset-b`), runs on a node of
/// another pool; `None` while it is unscheduled or on its own pool.
fn off_pool(pod: &Value, subset: Option<&str>) -> Option<String> {
    let node = pod["spec"]["nodeName"].as_str().unwrap_or_default();
    let pool = pool_of(node)?;
    (subset != Some(format!("subset-{pool}").as_str())).then(|| {
        let name = pod["metadata"]["name"].as_str().unwrap_or_default();
        format!("{name} of {subset:?} runs on {node}, pool {pool}")
    })
}

/// The node pool of each simulated node: two pools of two.
fn pool_of(node: &str) -> Option<&'static str> {
    match node {
        "sim-node-0" | "sim-node-1" => Some("a"),
        "sim-node-2" | "sim-node-3" => Some("b"),
        _ => None,
    }
}

/// A UnitedDeployment of 4 over pools a (2 replicas) and b (the rest).
fn united(version: u32) -> String {
    let subset = |pool: &str, replicas: Value| {
        let mut s = json!({"name": format!("subset-{pool}"), "nodeSelectorTerm": {"matchExpressions": [
            {"key": "pool", "operator": "In", "values": [pool]}]}});
        if !replicas.is_null() {
            s["replicas"] = replicas;
        }
        s
    };
    json!({"apiVersion": "apps.kruise.io/v1beta1", "kind": "UnitedDeployment",
        "metadata": {"name": "ud"},
        "spec": {"replicas": 4, "selector": {"matchLabels": {"app": "ud"}},
            "template": {"cloneSetTemplate": {"metadata": {"labels": {"app": "ud"}},
                "spec": {"selector": {"matchLabels": {"app": "ud"}}, "template": {
                    "metadata": {"labels": {"app": "ud"}},
                    "spec": {"containers": [{"name": "main", "image": image("ud", version)}]}}}}},
            "topology": {"subsets": [subset("a", json!(2)), subset("b", Value::Null)]}}})
    .to_string()
}

/// The BroadcastJob `name`: `exit 0` on every node, two pods at a time.
fn broadcast_job(name: &str) -> String {
    json!({"apiVersion": "apps.kruise.io/v1beta1", "kind": "BroadcastJob",
        "metadata": {"name": name},
        "spec": {"parallelism": BROADCAST_PARALLELISM, "template": {"spec": {"restartPolicy": "Never",
            "containers": [{"name": "main", "image": "registry.example/busybox:1",
                "command": ["sh", "-c", "exit 0"]}]}}}})
    .to_string()
}

const BROADCAST_PARALLELISM: usize = 2;

const ADS: &str = r#"apiVersion: apps.kruise.io/v1beta1
kind: DaemonSet
metadata:
  name: ds
spec:
  selector:
    matchLabels: {app: ds}
  updateStrategy:
    type: RollingUpdate
    rollingUpdate: {maxUnavailable: 1}
  template:
    metadata:
      labels: {app: ds}
    spec:
      containers:
      - name: main
        image: registry.example/ds:v0
"#;

/// The WorkloadSpread over the CloneSet `ws`: at most [`SPREAD_MAX_A`] pods in pool a, the
/// rest in pool b.
fn workload_spread() -> String {
    let subset = |pool: &str| {
        json!({"name": format!("subset-{pool}"), "requiredNodeSelector": {"matchExpressions": [
            {"key": "pool", "operator": "In", "values": [pool]}]}})
    };
    let mut a = subset("a");
    a["maxReplicas"] = json!(SPREAD_MAX_A);
    json!({"apiVersion": "apps.kruise.io/v1beta1", "kind": "WorkloadSpread",
        "metadata": {"name": "ws"},
        "spec": {"targetRef": {"apiVersion": "apps.kruise.io/v1beta1", "kind": "CloneSet", "name": "ws"},
            "subsets": [a, subset("b")]}})
    .to_string()
}

const SPREAD_MAX_A: usize = 2;

/// The subset a pod of `ws` was given by the WorkloadSpread's webhook.
fn spread_subset(pod: &Value) -> Option<String> {
    let injected =
        pod["metadata"]["annotations"]["apps.kruise.io/matched-workloadspread"].as_str()?;
    let injected: Value = serde_json::from_str(injected).ok()?;
    injected["subset"].as_str().map(str::to_owned)
}

/// An AdvancedCronJob: a 2 s Job every 10 s, never two at once.
const CRON_JOB: &str = r#"{"apiVersion": "apps.kruise.io/v1beta1", "kind": "AdvancedCronJob",
  "metadata": {"name": "acj"},
  "spec": {"schedule": "@every 10s", "concurrencyPolicy": "Forbid",
    "template": {"jobTemplate": {"spec": {"template": {"spec": {"restartPolicy": "Never",
      "containers": [{"name": "main", "image": "registry.example/busybox:1",
        "command": ["sh", "-c", "sleep 2"]}]}}}}}}}"#;

/// The AdvancedCronJob's Jobs: (scheduled at, in Unix seconds; finished).
fn cron_jobs(k: &Kubectl) -> Vec<(i64, bool)> {
    let out = k.run_with(&["get", "jobs", "-o", "json"], None);
    let list: Value = serde_json::from_str(&out.stdout).unwrap_or_default();
    list["items"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|j| j["metadata"]["ownerReferences"][0]["name"] == "acj")
        .map(crate::advancedcronjob::run_of)
        .collect()
}

/// The namespaces the ResourceDistribution selects (`team: a`), and one it does not.
const DISTRIBUTED_TO: [&str; 2] = ["rd-a1", "rd-a2"];
const NOT_DISTRIBUTED_TO: &str = "rd-b";

/// A ResourceDistribution of the Secret `soak-creds` (its token `v<version>`) to the
/// namespaces labelled `team: a`.
fn distribution(version: u32) -> String {
    json!({"apiVersion": "apps.kruise.io/v1beta1", "kind": "ResourceDistribution",
        "metadata": {"name": "soak-creds"},
        "spec": {"resource": {"apiVersion": "v1", "kind": "Secret",
                "metadata": {"name": "soak-creds"}, "type": "Opaque",
                "stringData": {"token": format!("v{version}")}},
            "targets": {"namespaceSelector": {"matchLabels": {"team": "a"}}}}})
    .to_string()
}

/// The distributed Secret in `namespace`, if there is one.
fn distributed_copy(k: &Kubectl, namespace: &str) -> Option<Value> {
    let out = k.run_with(&["get", "secret", "soak-creds", "-n", namespace, "-o", "json"], None);
    out.ok.then(|| serde_json::from_str(&out.stdout).ok()).flatten()
}

/// An Advanced StatefulSet of 3 recreating its pods, whose generated PersistentPodState
/// requires each pod back on its node.
const PPS_ASTS: &str = r#"apiVersion: apps.kruise.io/v1beta1
kind: StatefulSet
metadata:
  name: pps
  annotations:
    kruise.io/auto-generate-persistent-pod-state: "true"
    kruise.io/required-persistent-topology: kubernetes.io/hostname
spec:
  replicas: 3
  podManagementPolicy: Parallel
  selector:
    matchLabels: {app: pps}
  updateStrategy:
    type: RollingUpdate
    rollingUpdate: {maxUnavailable: 1, podUpdatePolicy: ReCreate}
  template:
    metadata:
      labels: {app: pps}
    spec:
      containers:
      - name: main
        image: registry.example/pps:v0
"#;

/// A Rollout of the CloneSet `ro`: half the pods, a 2 s pause, then the rest.
const ROLLOUT: &str = r#"apiVersion: rollouts.kruise.io/v1beta1
kind: Rollout
metadata:
  name: ro
spec:
  workloadRef:
    apiVersion: apps.kruise.io/v1beta1
    kind: CloneSet
    name: ro
  strategy:
    canary:
      steps:
      - replicas: 50%
        pause: {duration: 2}
      - replicas: 100%
"#;

/// What the workloads should end at.
struct Wanted {
    /// app -> image version.
    version: BTreeMap<&'static str, u32>,
    partition: i64,
    /// The BroadcastJobs created, each to complete on every node.
    jobs: Vec<String>,
    /// The AdvancedCronJob is to run a Job scheduled at or after this (Unix seconds).
    cron_since: i64,
}

fn image(app: &str, version: u32) -> String {
    format!("registry.example/{app}:v{version}")
}

fn ready(pod: &Value) -> bool {
    pod["status"]["conditions"]
        .as_array()
        .is_some_and(|c| c.iter().any(|c| c["type"] == "Ready" && c["status"] == "True"))
}

fn pods(k: &Kubectl, app: &str) -> Vec<Value> {
    let out = k.run_with(&["get", "pods", "-l", &format!("app={app}"), "-o", "json"], None);
    if !out.ok {
        return Vec::new();
    }
    serde_json::from_str::<Value>(&out.stdout)
        .ok()
        .and_then(|l| l["items"].as_array().cloned())
        .unwrap_or_default()
}

fn live(pods: &[Value]) -> Vec<&Value> {
    pods.iter().filter(|p| p["metadata"]["deletionTimestamp"].is_null()).collect()
}

/// The images of a pod's containers named `sidecar`.
fn sidecar_images(pod: &Value) -> Vec<&str> {
    pod["spec"]["containers"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|c| c["name"] == "sidecar")
        .map(|c| c["image"].as_str().unwrap_or_default())
        .collect()
}

/// What the soak saw go wrong.
#[derive(Default)]
struct Findings {
    violations: Vec<String>,
}

impl Findings {
    fn violation(&mut self, k: &Kubectl, what: String) {
        let events = k
            .run_with(&["get", "events", "--sort-by=.lastTimestamp", "-o", "custom-columns=TIME:.lastTimestamp,OBJECT:.involvedObject.name,REASON:.reason,MESSAGE:.message"], None)
            .stdout;
        let recent: Vec<&str> = events.lines().rev().take(12).collect();
        eprintln!(
            "soak: VIOLATION: {what}\n  recent events (newest first):\n    {}",
            recent.join("\n    ")
        );
        self.violations.push(what);
    }
}

/// The polled checks: the StatefulSet's partition, the DaemonSet's one pod per node, one
/// sidecar per selected pod, and one leader.
struct Poller {
    /// sts ordinal -> image, at the last poll.
    ordinals: BTreeMap<u32, String>,
    /// When each Job of the AdvancedCronJob seen was scheduled (Unix seconds).
    cron_seen: std::collections::BTreeSet<i64>,
    /// pps pod name -> the node it first ran on, once the PersistentPodState recorded them.
    pps_nodes: BTreeMap<String, String>,
    /// How many times a pps pod was seen on its node again under a new uid.
    pps_returns: usize,
    /// pps pod name -> the uid last seen.
    pps_uids: BTreeMap<String, String>,
}

impl Poller {
    fn poll(
        &mut self,
        k: &Kubectl,
        replicas: &Replicas,
        partition_before: i64,
        partition_now: i64,
        findings: &mut Findings,
    ) {
        let sts = pods(k, "sts");
        let mut now = BTreeMap::new();
        for pod in live(&sts) {
            let name = pod["metadata"]["name"].as_str().unwrap_or_default();
            let Some(ordinal) = name.strip_prefix("sts-").and_then(|o| o.parse::<u32>().ok())
            else {
                continue;
            };
            let img = pod["spec"]["containers"][0]["image"].as_str().unwrap_or_default().to_owned();
            if let Some(before) = self.ordinals.get(&ordinal)
                && *before != img
                && i64::from(ordinal) < partition_before.min(partition_now)
            {
                findings.violation(
                    k,
                    format!("sts-{ordinal}, below partition {partition_now}, went from {before} to {img}"),
                );
            }
            now.insert(ordinal, img);
        }
        self.ordinals = now;
        let ds = pods(k, "ds");
        let mut per_node: BTreeMap<String, usize> = BTreeMap::new();
        for pod in live(&ds) {
            let node = pod["spec"]["nodeName"].as_str().unwrap_or_default().to_owned();
            *per_node.entry(node).or_default() += 1;
        }
        for (node, n) in per_node.iter().filter(|(node, n)| !node.is_empty() && **n > 1) {
            findings.violation(k, format!("{n} live DaemonSet pods on {node}"));
        }
        for pod in live(&pods(k, "sc")) {
            let sidecars = sidecar_images(pod);
            if sidecars.len() != 1 {
                let name = pod["metadata"]["name"].as_str().unwrap_or_default();
                findings
                    .violation(k, format!("{name} carries the sidecar {} times", sidecars.len()));
            }
        }
        for pod in live(&pods(k, "ud")) {
            let subset = pod["metadata"]["labels"]["apps.kruise.io/subset-name"].as_str();
            if let Some(what) = off_pool(pod, subset) {
                findings.violation(k, what);
            }
        }
        let jobs = k.run_with(&["get", "pods", "-l", "broadcastjob-name", "-o", "json"], None);
        let jobs: Vec<Value> = serde_json::from_str::<Value>(&jobs.stdout)
            .ok()
            .and_then(|l| l["items"].as_array().cloned())
            .unwrap_or_default();
        let mut by_job: BTreeMap<&str, (Vec<&str>, usize)> = BTreeMap::new();
        for pod in live(&jobs) {
            let job = pod["metadata"]["labels"]["broadcastjob-name"].as_str().unwrap_or_default();
            let entry = by_job.entry(job).or_default();
            if let Some(node) = pod["spec"]["nodeName"].as_str().filter(|n| !n.is_empty()) {
                entry.0.push(node);
            }
            if matches!(pod["status"]["phase"].as_str(), None | Some("Pending" | "Running")) {
                entry.1 += 1;
            }
        }
        for (job, (mut nodes, active)) in by_job {
            let all = nodes.len();
            nodes.sort_unstable();
            nodes.dedup();
            if nodes.len() != all {
                findings.violation(k, format!("BroadcastJob {job} runs two pods on a node"));
            }
            if active > BROADCAST_PARALLELISM {
                findings.violation(
                    k,
                    format!("BroadcastJob {job} runs {active} pods, over its parallelism"),
                );
            }
        }
        let mut in_a = 0;
        for pod in live(&pods(k, "ws")) {
            let subset = spread_subset(pod);
            in_a += usize::from(subset.as_deref() == Some("subset-a"));
            if let Some(what) = off_pool(pod, subset.as_deref()) {
                findings.violation(k, what);
            }
        }
        if in_a > SPREAD_MAX_A {
            findings.violation(
                k,
                format!("{in_a} live pods of ws in subset-a, over its maxReplicas {SPREAD_MAX_A}"),
            );
        }
        for pod in live(&pods(k, "pps")) {
            let name = pod["metadata"]["name"].as_str().unwrap_or_default().to_owned();
            let uid = pod["metadata"]["uid"].as_str().unwrap_or_default().to_owned();
            let node = pod["spec"]["nodeName"].as_str().unwrap_or_default();
            if node.is_empty() {
                continue;
            }
            match self.pps_nodes.get(&name) {
                Some(first) if first != node => findings.violation(
                    k,
                    format!("{name} came back on {node}, not on {first} as its state requires"),
                ),
                Some(_) if self.pps_uids.get(&name).is_some_and(|u| *u != uid) => {
                    self.pps_returns += 1;
                }
                _ => {}
            }
            self.pps_uids.insert(name, uid);
        }
        let cron = cron_jobs(k);
        self.cron_seen.extend(cron.iter().map(|&(at, _)| at));
        let running = cron.iter().filter(|(_, finished)| !finished).count();
        if running > 1 {
            findings.violation(k, format!("the AdvancedCronJob runs {running} Jobs under Forbid"));
        }
        if distributed_copy(k, NOT_DISTRIBUTED_TO).is_some() {
            findings.violation(k, format!("soak-creds was written to {NOT_DISTRIBUTED_TO}"));
        }
        let leaders = replicas.leaders();
        if leaders.len() > 1 {
            findings.violation(k, format!("replicas {leaders:?} lead at once"));
        }
    }
}

/// What has not converged yet, every workload named; `None` once all have.
fn converged(k: &Kubectl, wanted: &Wanted) -> Option<String> {
    let lagging: Vec<String> = [
        lagging_apps(k, wanted),
        lagging_sidecars(k, wanted),
        lagging_sts(k, wanted),
        lagging_jobs(k, wanted),
        lagging_spread(k),
        lagging_cron(k, wanted),
        lagging_distribution(k, wanted),
        lagging_rollout(k),
    ]
    .into_iter()
    .flatten()
    .collect();
    (!lagging.is_empty()).then(|| lagging.join("; "))
}

/// What `app` lacks to have exactly `count` pods, each on its wanted image and ready.
fn lagging_app(k: &Kubectl, wanted: &Wanted, app: &str, count: usize) -> Option<String> {
    let all = pods(k, app);
    let want = image(app, wanted.version[app]);
    let done = live(&all)
        .iter()
        .filter(|p| p["spec"]["containers"][0]["image"] == want.as_str() && ready(p))
        .count();
    (all.len() != count || done != count)
        .then(|| format!("{app}: {done}/{count} on {want}, {} pods", all.len()))
}

fn lagging_apps(k: &Kubectl, wanted: &Wanted) -> Option<String> {
    let check = |app: &str, count: usize| lagging_app(k, wanted, app, count);
    let lagging: Vec<String> = [
        check("cs", 6),
        check("rc", 5),
        check("ds", NODES),
        check("ud", 4),
        check("ws", 4),
        check("pps", 3),
        check("ro", 4),
    ]
    .into_iter()
    .flatten()
    .collect();
    (!lagging.is_empty()).then(|| lagging.join("; "))
}

fn lagging_jobs(k: &Kubectl, wanted: &Wanted) -> Option<String> {
    let lagging: Vec<String> = wanted
        .jobs
        .iter()
        .filter_map(|job| {
            let out = k.run_with(&["get", "bcj", job, "-o", "json"], None);
            let status = serde_json::from_str::<Value>(&out.stdout)
                .map(|j| j["status"].clone())
                .unwrap_or_default();
            let done = status["phase"] == "completed"
                && status["succeeded"].as_u64() == Some(NODES as u64);
            (!done).then(|| format!("{job}: {} {}/{NODES}", status["phase"], status["succeeded"]))
        })
        .collect();
    (!lagging.is_empty()).then(|| lagging.join("; "))
}

/// Whether the Advanced DaemonSet's last rollout is under way: a pod per node, each on the
/// wanted image and ready, once it is done.
fn ds_rolling(k: &Kubectl, wanted: &Wanted) -> bool {
    lagging_app(k, wanted, "ds", NODES).is_some()
}

/// Every pod of `ws` placed by the WorkloadSpread.
fn lagging_spread(k: &Kubectl) -> Option<String> {
    let all = pods(k, "ws");
    let unplaced: Vec<&str> = live(&all)
        .into_iter()
        .filter(|p| spread_subset(p).is_none())
        .filter_map(|p| p["metadata"]["name"].as_str())
        .collect();
    (!unplaced.is_empty()).then(|| format!("ws: pods without a subset {unplaced:?}"))
}

/// A Job of the AdvancedCronJob scheduled at or after `cron_since` has finished.
fn lagging_cron(k: &Kubectl, wanted: &Wanted) -> Option<String> {
    let jobs = cron_jobs(k);
    let done = jobs.iter().any(|&(at, finished)| finished && at >= wanted.cron_since);
    (!done).then(|| format!("acj: no Job since {} finished, Jobs {jobs:?}", wanted.cron_since))
}

/// The distributed Secret carries its latest token in every selected namespace.
fn lagging_distribution(k: &Kubectl, wanted: &Wanted) -> Option<String> {
    let want = format!("v{}", wanted.version["rd"]);
    let stale: Vec<String> = DISTRIBUTED_TO
        .iter()
        .filter_map(|ns| {
            let token = distributed_copy(k, ns).map(|s| crate::resourcedistribution::token(&s));
            (token.as_deref() != Some(want.as_str())).then(|| format!("{ns}: {token:?}"))
        })
        .collect();
    (!stale.is_empty()).then(|| format!("soak-creds not {want} in {}", stale.join(", ")))
}

/// The Rollout healthy, its last release done.
fn lagging_rollout(k: &Kubectl) -> Option<String> {
    let out = k.run_with(&["get", "rollouts.rollouts.kruise.io", "ro", "-o", "json"], None);
    let status = serde_json::from_str::<Value>(&out.stdout).unwrap_or_default()["status"].clone();
    (status["phase"] != "Healthy").then(|| {
        format!(
            "ro: Rollout {} at step {} {}",
            status["phase"], status["currentStepIndex"], status["currentStepState"]
        )
    })
}

/// The nodes the PersistentPodState of `pps` recorded, by pod name.
fn persistent_nodes(k: &Kubectl) -> BTreeMap<String, String> {
    let out = k.run_with(&["get", "persistentpodstates", "pps", "-o", "json"], None);
    let state = serde_json::from_str::<Value>(&out.stdout).unwrap_or_default();
    state["status"]["podStates"]
        .as_object()
        .into_iter()
        .flatten()
        .filter_map(|(pod, s)| Some((pod.clone(), s["nodeName"].as_str()?.to_owned())))
        .collect()
}

fn lagging_sidecars(k: &Kubectl, wanted: &Wanted) -> Option<String> {
    let sc = pods(k, "sc");
    let want = image("sidecar", wanted.version["sidecar"]);
    let done =
        live(&sc).iter().filter(|p| sidecar_images(p) == [want.as_str()] && ready(p)).count();
    (sc.len() != 4 || done != 4)
        .then(|| format!("sc: {done}/4 with the sidecar on {want}, {} pods", sc.len()))
}

fn lagging_sts(k: &Kubectl, wanted: &Wanted) -> Option<String> {
    let sts = pods(k, "sts");
    let live = live(&sts);
    let want = image("sts", wanted.version["sts"]);
    let mut names: Vec<&str> = live.iter().filter_map(|p| p["metadata"]["name"].as_str()).collect();
    names.sort_unstable();
    if names != ["sts-0", "sts-1", "sts-2", "sts-3"] || sts.len() != 4 {
        return Some(format!("sts pods {names:?}"));
    }
    let above = live.iter().filter(|p| {
        let ordinal: i64 =
            p["metadata"]["name"].as_str().and_then(|n| n[4..].parse().ok()).unwrap_or(-1);
        ordinal >= wanted.partition
    });
    let stale =
        above.filter(|p| p["spec"]["containers"][0]["image"] != want.as_str() || !ready(p)).count();
    (stale > 0 || !live.iter().all(|p| ready(p))).then(|| {
        format!("sts: {stale} pods at or above partition {} not on {want}", wanted.partition)
    })
}

/// Copies every manager log of the run out of the cluster's directory (removed when the test
/// ends) and prints where.
fn keep_logs(cluster: &SimCluster, seed: u64) {
    let kept = std::env::temp_dir().join(format!("kruise-soak-{seed}-{}", std::process::id()));
    let copied = std::fs::create_dir_all(&kept).and_then(|()| {
        let mut n = 0;
        for entry in std::fs::read_dir(cluster.dir.path())? {
            let path = entry?.path();
            let name = path.file_name().and_then(|n| n.to_str()).unwrap_or_default();
            if name.starts_with("manager-") && name.ends_with(".log") {
                std::fs::copy(&path, kept.join(name))?;
                n += 1;
            }
        }
        Ok(n)
    });
    match copied {
        Ok(n) => eprintln!("soak: {n} manager logs kept in {}", kept.display()),
        Err(e) => eprintln!("soak: the manager logs could not be kept in {}: {e}", kept.display()),
    }
}

#[test]
#[ignore = "the soak runs on its own: cargo test -p kruise-manager --test e2e -- --ignored soak"]
fn soak() {
    let seconds = env_u64("KRUISE_SOAK_SECONDS", 60);
    let seed = env_u64("KRUISE_SOAK_SEED", 1).max(1);
    eprintln!("soak: seed {seed}, {seconds} s");
    let mut rng = Rng(seed);
    let cluster = cluster();
    let k = &cluster.kubectl;
    let mut replicas = Replicas::new();
    let service = start_service(replicas.webhook);
    cluster.server.register_webhook_service("kruise-system", "kruise-webhook-service", service);
    replicas.start(&cluster, 0);
    replicas.start(&cluster, 1);
    crate::common::wait_for_validating_webhook(k, "vpod.kb.io");

    // cs: 6 pods in place, the CloneSet allows 2 unavailable, its budget 1.
    write(
        k,
        &["apply", "-f", "-"],
        Some(&cloneset_yaml(
            "cs",
            6,
            "rollingUpdate:\n  podUpdatePolicy: InPlaceIfPossible\n  maxUnavailable: 2",
        )),
    );
    let budget = json!({"apiVersion": "policy.kruise.io/v1beta1", "kind": "PodUnavailableBudget",
        "metadata": {"name": "cs-pub"},
        "spec": {"selector": {"matchLabels": {"app": "cs"}}, "maxUnavailable": 1}});
    write(k, &["apply", "-f", "-"], Some(&budget.to_string()));
    // rc: 5 pods recreated, 1 surge, none unavailable.
    write(
        k,
        &["apply", "-f", "-"],
        Some(&cloneset_yaml(
            "rc",
            5,
            "rollingUpdate:\n  podUpdatePolicy: ReCreate\n  maxUnavailable: 0\n  maxSurge: 1",
        )),
    );
    let mut wanted = Wanted {
        version: BTreeMap::from([
            ("cs", 1),
            ("rc", 1),
            ("sts", 0),
            ("ds", 0),
            ("sidecar", 0),
            ("ud", 0),
            ("ws", 1),
            ("rd", 0),
            ("pps", 0),
            ("ro", 1),
        ]),
        partition: 2,
        jobs: Vec::new(),
        cron_since: 0,
    };
    write(k, &["apply", "-f", "-"], Some(&asts(wanted.partition)));
    write(k, &["apply", "-f", "-"], Some(ADS));
    // sc: 4 pods, each given the SidecarSet's sidecar at creation; the rounds update the
    // sidecar in place, one pod at a time.
    write(k, &["apply", "-f", "-"], Some(SIDECARSET));
    crate::sidecarset::wait_until_injected(k, "sc", "sidecar");
    write(k, &["apply", "-f", "-"], Some(&cloneset_yaml("sc", 4, "")));
    // ud: 4 pods over two node pools, rolled by the CloneSet of each subset.
    for node in 0..NODES {
        let node = format!("sim-node-{node}");
        let pool = pool_of(&node).expect("every node is in a pool");
        write(k, &["label", "node", &node, &format!("pool={pool}")], None);
    }
    write(k, &["apply", "-f", "-"], Some(&united(0)));
    // ws: 4 pods recreated one at a time, spread by a WorkloadSpread over the pools.
    write(k, &["apply", "-f", "-"], Some(&workload_spread()));
    write(
        k,
        &["apply", "-f", "-"],
        Some(&cloneset_yaml(
            "ws",
            4,
            "rollingUpdate:\n  podUpdatePolicy: ReCreate\n  maxUnavailable: 1\n  maxSurge: 0",
        )),
    );
    write(k, &["apply", "-f", "-"], Some(CRON_JOB));
    for (ns, team) in DISTRIBUTED_TO.iter().map(|ns| (ns, "a")).chain([(&NOT_DISTRIBUTED_TO, "b")])
    {
        let namespace = json!({"apiVersion": "v1", "kind": "Namespace",
            "metadata": {"name": ns, "labels": {"team": team}}});
        write(k, &["apply", "-f", "-"], Some(&namespace.to_string()));
    }
    write(k, &["apply", "-f", "-"], Some(&distribution(0)));
    // pps: 3 pods recreated one at a time, each back on its node.
    write(k, &["apply", "-f", "-"], Some(PPS_ASTS));
    // ro: 4 pods, each release through the Rollout.
    write(
        k,
        &["apply", "-f", "-"],
        Some(&cloneset_yaml(
            "ro",
            4,
            "rollingUpdate:\n  podUpdatePolicy: ReCreate\n  maxUnavailable: 1",
        )),
    );
    write(k, &["apply", "-f", "-"], Some(ROLLOUT));
    wait_for("every workload ready", Duration::from_secs(120), || {
        converged(k, &wanted).is_none().then_some(())
    });
    wait_for("the PersistentPodState records 3 nodes", Duration::from_secs(60), || {
        (persistent_nodes(k).len() == 3).then_some(())
    });

    let monitors: Vec<(&str, usize, usize, Arc<Mutex<Budget>>)> = [
        ("cs", 6, 5, 6),
        ("rc", 5, 5, 6),
        ("sts", 4, 3, 4),
        ("ds", NODES, NODES - 1, NODES),
        ("sc", 4, 3, 4),
        // Each subset's CloneSet may have one pod unavailable.
        ("ud", 4, 2, 4),
        ("ws", 4, 3, 4),
        ("pps", 3, 2, 3),
        ("ro", 4, 3, 4),
    ]
    .into_iter()
    .map(|(app, _, min_available, max_active)| {
        let budget = Arc::new(Mutex::new(Budget {
            bounds: Some((min_available, max_active)),
            ..Budget::default()
        }));
        let selector: &'static str = match app {
            "cs" => "app=cs",
            "rc" => "app=rc",
            "sts" => "app=sts",
            "sc" => "app=sc",
            "ud" => "app=ud",
            "ws" => "app=ws",
            "pps" => "app=pps",
            "ro" => "app=ro",
            _ => "app=ds",
        };
        start_monitor(cluster.kubeconfig.clone(), selector, budget.clone());
        (app, min_available, max_active, budget)
    })
    .collect();
    std::thread::sleep(Duration::from_secs(2));
    for (_, _, _, b) in &monitors {
        b.lock().expect("budget").armed = true;
    }

    let mut findings = Findings::default();
    let mut poller = Poller {
        ordinals: BTreeMap::new(),
        cron_seen: std::collections::BTreeSet::new(),
        pps_nodes: persistent_nodes(k),
        pps_returns: 0,
        pps_uids: BTreeMap::new(),
    };
    poller.poll(k, &replicas, wanted.partition, wanted.partition, &mut findings);
    let faults = cluster.server.faults();
    let mut fired: Vec<(String, FaultHits)> = Vec::new();
    let (mut dropped, mut compactions, mut rounds) = (0, 0, 0);
    // What happened to the replicas: "leader killed", "leader stopped", "standby killed".
    let mut disruptions: BTreeMap<&str, usize> = BTreeMap::new();
    let transitions_before = lease_transitions(k);
    let start = Instant::now();
    // The managers' logs carry wall-clock times; the rounds below, seconds from here.
    eprintln!("soak: rounds start at {}", jiff::Timestamp::now());
    while start.elapsed() < Duration::from_secs(seconds) {
        rounds += 1;
        // One change per round: a new image for one workload, or a new partition.
        let partition_before = wanted.partition;
        let what = if rng.below(6) == 0 {
            let job = format!("bcj-{rounds}");
            write(k, &["apply", "-f", "-"], Some(&broadcast_job(&job)));
            wanted.jobs.push(job.clone());
            format!("BroadcastJob {job}")
        } else if rng.below(5) == 0 {
            wanted.partition = rng.below(5) as i64;
            let patch = json!({"spec": {"updateStrategy": {"rollingUpdate": {"partition": wanted.partition}}}});
            let patch = patch.to_string();
            write(
                k,
                &["patch", "statefulsets.apps.kruise.io/sts", "--type", "merge", "-p", &patch],
                None,
            );
            format!("sts partition {}", wanted.partition)
        } else {
            let (app, resource) = [
                ("cs", "clonesets/cs"),
                ("rc", "clonesets/rc"),
                ("sts", "statefulsets.apps.kruise.io/sts"),
                ("ds", "daemonsets.apps.kruise.io/ds"),
                ("sidecar", "sidecarsets/sidecar"),
                ("ud", "uniteddeployments/ud"),
                ("ws", "clonesets/ws"),
                ("rd", "resourcedistributions.apps.kruise.io/soak-creds"),
                ("pps", "statefulsets.apps.kruise.io/pps"),
                ("ro", "clonesets/ro"),
            ][rng.below(10) as usize];
            // An Advanced DaemonSet replaces an old pod that is not available outside its
            // maxUnavailable, as upstream and Kubernetes' DaemonSet controller do: a new image
            // while a new pod still starts may take one pod more than the floor checked here.
            // Its image changes only once its last rollout is done.
            let (app, resource) = if app == "ds" && ds_rolling(k, &wanted) {
                ("cs", "clonesets/cs")
            } else {
                (app, resource)
            };
            let version = wanted.version[app] + 1;
            wanted.version.insert(app, version);
            let patch = if app == "rd" {
                json!({"spec": {"resource": {"stringData": {"token": format!("v{version}")}}}})
            } else if app == "sidecar" {
                json!({"spec": {"containers": [{"name": "sidecar", "image": image(app, version)}]}})
            } else if app == "ud" {
                json!({"spec": {"template": {"cloneSetTemplate": {"spec": {"template": {"spec": {"containers": [{"name": "main", "image": image(app, version)}]}}}}}}})
            } else {
                json!({"spec": {"template": {"spec": {"containers": [{"name": "main", "image": image(app, version)}]}}}})
            };
            write(k, &["patch", resource, "--type", "merge", "-p", &patch.to_string()], None);
            format!("{app} to v{version}")
        };
        eprintln!("soak: round {rounds} at {:.0} s: {what}", start.elapsed().as_secs_f64());
        // Faults for this round.
        let pick: [(&str, &str, FaultAction); 12] = [
            ("patch", "pods", FaultAction::Conflict),
            ("patch", "pods", FaultAction::TooManyRequests { retry_after_seconds: 1 }),
            ("create", "pods", FaultAction::TooManyRequests { retry_after_seconds: 1 }),
            ("create", "pods", FaultAction::InternalError),
            ("delete", "pods", FaultAction::InternalError),
            ("patch", "clonesets/status", FaultAction::InternalError),
            ("patch", "statefulsets/status", FaultAction::Conflict),
            ("patch", "pods/status", FaultAction::Conflict),
            ("create", "pods", FaultAction::Latency(Duration::from_millis(300))),
            ("update", "workloadspreads/status", FaultAction::Conflict),
            ("create", "jobs", FaultAction::InternalError),
            ("patch", "secrets", FaultAction::InternalError),
        ];
        for _ in 0..rng.below(3) + 1 {
            let (verb, resource, action) = pick[rng.below(pick.len() as u64) as usize].clone();
            let times = rng.below(3) as usize + 1;
            let label = format!("{action:?} on {verb} {resource}");
            fired.push((
                label,
                faults.inject(Fault::new(action).verb(verb).resource(resource).times(times)),
            ));
        }
        // One round in four, every watch resumes past the history the server keeps: 410
        // Gone, and every client relists.
        if rng.below(4) == 0 {
            cluster.server.compact();
            faults.drop_watches();
            compactions += 1;
        }
        let round_end = Instant::now() + Duration::from_millis(4000 + rng.below(4000));
        let disrupt_at =
            (rng.below(3) == 0).then(|| (Instant::now() + rng.millis(3000), rng.below(3)));
        let mut disrupted = false;
        while Instant::now() < round_end {
            if let Some((at, how)) = disrupt_at
                && !disrupted
                && Instant::now() >= at
            {
                disrupted = true;
                let leader = replicas.leaders().first().copied();
                let (target, what) = match (how, leader) {
                    (0, Some(l)) => (l, "leader killed"),
                    (1, Some(l)) => (l, "leader stopped"),
                    (_, Some(l)) => (1 - l, "standby killed"),
                    (_, None) => (rng.below(2) as usize, "replica killed, no leader known"),
                };
                let mut proc = replicas.procs[target].take().expect("both replicas run");
                if what == "leader stopped" {
                    proc.terminate();
                } else {
                    proc.kill();
                }
                *disruptions.entry(what).or_default() += 1;
                eprintln!(
                    "soak: {what} (replica {}) at {:.1} s",
                    REPLICA_NAMES[target],
                    start.elapsed().as_secs_f64()
                );
                if rng.below(2) == 0 {
                    faults.drop_watches();
                    dropped += 1;
                }
                std::thread::sleep(rng.millis(800));
                replicas.start(&cluster, target);
            }
            poller.poll(k, &replicas, partition_before, wanted.partition, &mut findings);
            std::thread::sleep(Duration::from_millis(300));
        }
    }
    faults.clear();
    wanted.cron_since = jiff::Timestamp::now().as_second();
    eprintln!(
        "soak: faults stopped after {:.0} s, {rounds} rounds; waiting for convergence",
        start.elapsed().as_secs_f64()
    );
    let settle = Instant::now();
    let mut last = None;
    let mut reported = Instant::now();
    while settle.elapsed() < Duration::from_secs(120) {
        last = converged(k, &wanted);
        if last.is_none() {
            break;
        }
        if reported.elapsed() >= Duration::from_secs(5) {
            reported = Instant::now();
            let why = last.as_deref().unwrap_or_default();
            eprintln!("soak: at {:.0} s, waiting for {why}", settle.elapsed().as_secs_f64());
        }
        poller.poll(k, &replicas, wanted.partition, wanted.partition, &mut findings);
        std::thread::sleep(Duration::from_millis(500));
    }
    if let Some(why) = last {
        findings.violation(k, format!("not converged 120 s after the faults stopped: {why}"));
    } else {
        eprintln!(
            "soak: converged {:.1} s after the faults stopped",
            settle.elapsed().as_secs_f64()
        );
    }
    for (app, min_available, max_active, budget) in &monitors {
        let b = budget.lock().expect("budget");
        let Some(seen_min) = b.min_available else {
            eprintln!("soak: {app}: no pod changed while armed");
            continue;
        };
        eprintln!(
            "soak: {app}: fewest available {seen_min} (floor {min_available}), most live {} (ceiling {max_active})",
            b.max_active
        );
        // When it happened, and the pods then (ready, terminating), to set beside the rounds
        // and disruptions printed with their times.
        let when = b.breach.as_ref().map_or(String::new(), |(at, pods)| {
            let at = at.saturating_duration_since(start).as_secs_f64();
            format!(" (first at {at:.1} s; pods then (ready, terminating): {pods:?})")
        });
        if seen_min < *min_available {
            findings
                .violation(k, format!("{app}: {seen_min} available, under {min_available}{when}"));
        }
        if b.max_active > *max_active {
            findings.violation(
                k,
                format!("{app}: {} live pods, over {max_active}{when}", b.max_active),
            );
        }
    }
    let mut by_kind: BTreeMap<String, (usize, usize)> = BTreeMap::new();
    for (label, hits) in &fired {
        let entry = by_kind.entry(label.clone()).or_default();
        entry.0 += 1;
        entry.1 += hits.count();
    }
    eprintln!(
        "soak: acj: {} Jobs seen; ws: {} rollouts; soak-creds: {} changes; pps: {} rollouts, {} pods back on their nodes; ro: {} releases",
        poller.cron_seen.len(),
        wanted.version["ws"] - 1,
        wanted.version["rd"],
        wanted.version["pps"],
        poller.pps_returns,
        wanted.version["ro"] - 1
    );
    let transitions = lease_transitions(k) - transitions_before;
    let expired = faults.watches_expired();
    eprintln!(
        "soak: seed {seed}: {rounds} rounds; replicas: {disruptions:?}, {transitions} leader changes; {dropped} watch drops; {compactions} compactions, {expired} watches answered 410 Gone; faults (injected rules, requests hit):"
    );
    for (label, (rules, hits)) in &by_kind {
        eprintln!("  {label}: {rules} rules, {hits} hits");
    }
    let hits: usize = by_kind.values().map(|(_, h)| h).sum();
    assert!(hits > 0 || seconds < 10, "no fault fired (seed {seed})");
    assert!(compactions == 0 || expired > 0, "{compactions} compactions, but no watch saw 410");
    let leader_stops: usize =
        disruptions.iter().filter(|(what, _)| what.starts_with("leader")).map(|(_, n)| n).sum();
    assert!(
        leader_stops == 0 || transitions > 0,
        "{leader_stops} leaders stopped, but the Lease never changed hands"
    );
    if !findings.violations.is_empty() {
        keep_logs(&cluster, seed);
    }
    assert!(
        findings.violations.is_empty(),
        "seed {seed}: {:#?}\nthe replicas' last log lines:\n{}",
        findings.violations,
        replicas.logs()
    );
    drop(replicas);
}
