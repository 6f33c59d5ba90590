//! Simulated nodes, the way kwok does it: Node objects with leases, a scheduler, and one
//! kubelet with a fake container runtime per node, all talking to an API server through a
//! kube-rs client — the embedded one or any real cluster.
//!
//! - [`scheduler`]: the pure placement decision (filters, scores, the "0/3 nodes are
//!   available" message).
//! - [`kubelet`]: the per-pod state machine (phases, conditions, container statuses, in-place
//!   image updates, graceful termination).
//! - [`runtime`]: the CRI-shaped [`runtime::ContainerRuntime`] trait and its in-memory fake.
//! - [`env`]: a container's environment as the kubelet makes it when it creates the container
//!   (`envFrom`, `env` values with `$(VAR)` expansion, field, resource, ConfigMap and Secret
//!   references).
//! - [`objects`]: the ConfigMaps and Secrets the kubelets read for containers' environments,
//!   watched through the API server per namespace.
//! - [`fs`]: a container's writable filesystem, in memory.
//! - [`shell`]: the busybox-like shell and programs that `kubectl exec` and exec probes run in
//!   a container, against its environment and filesystem.
//! - `cri` (feature `cri`): kruise-cri's `ContainerRuntime` over a node's runtime, so that
//!   kruise-daemon's workers run on simulated nodes.
//!
//! [`NodeSim::start`] creates the nodes and runs one task that watches pods and nodes,
//! binds pending pods, drives the kubelets, renews leases and applies [`NodeOp`]s (add,
//! cordon, fail, recover, remove nodes) while running.

#[cfg(feature = "cri")]
pub mod cri;
pub mod env;
pub mod fs;
pub mod kubelet;
pub mod objects;
pub mod runtime;
pub mod scheduler;
pub mod script;
pub mod shell;

use futures::StreamExt as _;
use k8s_openapi::api::coordination::v1::Lease;
use k8s_openapi::api::core::v1::{Node, Pod, Taint};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::MicroTime;
use kube::api::{Api, DeleteParams, Patch, PatchParams, PostParams, Preconditions};
use kube::runtime::{WatchStreamExt as _, reflector, watcher};
use kubelet::{Delays, Kubelet};
use objects::ApiObjects;
use runtime::{ContainerRuntime, FakeRuntime};
use scheduler::{Placed, View};
use serde_json::{Value, json};
use std::collections::{BTreeMap, HashMap, HashSet};
use std::sync::{Arc, RwLock};
use std::time::Duration;
use tokio::sync::{Notify, mpsc, oneshot, watch as tokio_watch};
use tokio::time::Instant;

/// Errors of the node simulator.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum NodeError {
    /// An API request failed.
    #[error("API request failed: {0}")]
    Kube(#[from] kube::Error),
    /// The kubeconfig could not be read or used.
    #[error("kubeconfig: {0}")]
    Kubeconfig(String),
    /// No simulated node has this name.
    #[error("no simulated node named {0:?}")]
    UnknownNode(String),
    /// A simulated node with this name exists already.
    #[error("simulated node {0:?} exists already")]
    NodeExists(String),
    /// An object could not be built.
    #[error("building {what}: {source}")]
    Build {
        /// What was built.
        what: &'static str,
        /// Why it failed.
        source: serde_json::Error,
    },
    /// The simulator has stopped.
    #[error("the node simulator has stopped")]
    Stopped,
}

/// How a node fails.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Failure {
    /// The kubelet reports NotReady (the runtime is down); its lease is still renewed.
    NotReady,
    /// The kubelet stopped posting status: condition Unknown, lease no longer renewed.
    Unknown,
}

/// One simulated node.
#[derive(Clone, Debug, PartialEq)]
pub struct NodeSpec {
    /// The node name (also `kubernetes.io/hostname`).
    pub name: String,
    /// `topology.kubernetes.io/zone`.
    pub zone: String,
    /// `topology.kubernetes.io/region`.
    pub region: String,
    /// `kubernetes.io/arch`.
    pub arch: String,
    /// `kubernetes.io/os`.
    pub os: String,
    /// Further labels.
    pub labels: BTreeMap<String, String>,
    /// CPU capacity (a quantity, e.g. `"32"`).
    pub cpu: String,
    /// Memory capacity (e.g. `"256Gi"`).
    pub memory: String,
    /// Pod capacity.
    pub pods: u32,
    /// Taints.
    pub taints: Vec<Taint>,
}

impl NodeSpec {
    /// A node with defaults: zone `zone-a`, region `sim-region`, amd64 linux, 32 CPUs, 256Gi, 110 pods.
    pub fn new(name: &str) -> NodeSpec {
        NodeSpec {
            name: name.to_string(),
            zone: "zone-a".into(),
            region: "sim-region".into(),
            arch: "amd64".into(),
            os: "linux".into(),
            labels: BTreeMap::new(),
            cpu: "32".into(),
            memory: "256Gi".into(),
            pods: 110,
            taints: Vec::new(),
        }
    }

    /// Sets the zone.
    pub fn zone(mut self, zone: &str) -> Self {
        self.zone = zone.to_string();
        self
    }

    /// Adds a label.
    pub fn label(mut self, k: &str, v: &str) -> Self {
        self.labels.insert(k.to_string(), v.to_string());
        self
    }

    /// Adds a taint.
    pub fn taint(mut self, key: &str, value: &str, effect: &str) -> Self {
        self.taints.push(Taint {
            key: key.to_string(),
            value: (!value.is_empty()).then(|| value.to_string()),
            effect: effect.to_string(),
            ..Default::default()
        });
        self
    }

    /// Sets CPU and memory capacity.
    pub fn capacity(mut self, cpu: &str, memory: &str, pods: u32) -> Self {
        self.cpu = cpu.to_string();
        self.memory = memory.to_string();
        self.pods = pods;
        self
    }
}

/// Parses a taint written as `key[=value]:Effect`.
pub fn parse_taint(s: &str) -> Option<Taint> {
    let (kv, effect) = s.rsplit_once(':')?;
    if !matches!(effect, "NoSchedule" | "PreferNoSchedule" | "NoExecute") || kv.is_empty() {
        return None;
    }
    let (k, v) = kv.split_once('=').unwrap_or((kv, ""));
    Some(Taint {
        key: k.to_string(),
        value: (!v.is_empty()).then(|| v.to_string()),
        effect: effect.to_string(),
        ..Default::default()
    })
}

/// How to run the simulated nodes.
#[derive(Clone, Debug)]
pub struct NodesConfig {
    /// The nodes to create at start.
    pub nodes: Vec<NodeSpec>,
    /// Container lifecycle delays.
    pub delays: Delays,
    /// Run the scheduler (turn off against a cluster that has one).
    pub scheduler: bool,
    /// `leaseDurationSeconds` of node leases.
    pub lease_duration_seconds: i32,
    /// How often leases are renewed.
    pub lease_renew: Duration,
}

impl NodesConfig {
    /// `count` nodes named `sim-node-0..`, spread over zones `zone-a`, `zone-b`, `zone-c`.
    pub fn new(count: usize) -> NodesConfig {
        let zones = ["zone-a", "zone-b", "zone-c"];
        NodesConfig {
            nodes: (0..count)
                .map(|i| NodeSpec::new(&format!("sim-node-{i}")).zone(zones[i % zones.len()]))
                .collect(),
            delays: Delays::default(),
            scheduler: true,
            lease_duration_seconds: 40,
            lease_renew: Duration::from_secs(10),
        }
    }

    /// Uses these nodes.
    pub fn with_nodes(mut self, nodes: Vec<NodeSpec>) -> Self {
        self.nodes = nodes;
        self
    }

    /// Uses these delays.
    pub fn with_delays(mut self, delays: Delays) -> Self {
        self.delays = delays;
        self
    }
}

/// A change to the simulated nodes while running.
#[derive(Clone, Debug)]
#[non_exhaustive]
pub enum NodeOp {
    /// Adds a node.
    Add(NodeSpec),
    /// Marks a node unschedulable.
    Cordon(String),
    /// Marks a node schedulable again.
    Uncordon(String),
    /// Fails a node: NotReady or Unknown; its pods become NotReady.
    Fail(String, Failure),
    /// Brings a failed node back.
    Recover(String),
    /// Deletes a node, its lease and (as the pod garbage collector does) its pods.
    Remove(String),
}

type Reply = oneshot::Sender<Result<(), NodeError>>;

/// A simulated node's container runtime, as its kubelet uses it, for callers outside the
/// simulator (kruise-daemon's workers through [`cri`] with the `cri` feature). Cheap to
/// clone.
#[derive(Clone)]
pub struct NodeRuntime {
    node: String,
    runtime: Arc<dyn ContainerRuntime>,
    changed: Arc<Notify>,
}

impl std::fmt::Debug for NodeRuntime {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("NodeRuntime").field("node", &self.node).finish_non_exhaustive()
    }
}

impl NodeRuntime {
    /// The node's name.
    pub fn node(&self) -> &str {
        &self.node
    }

    /// The runtime the node's kubelet runs its containers on.
    pub fn runtime(&self) -> &Arc<dyn ContainerRuntime> {
        &self.runtime
    }

    /// Tells the kubelets that containers changed outside them (say, one was stopped), so
    /// they sync now rather than at their next timer: a real kubelet's PLEG event.
    pub fn notify_changed(&self) {
        self.changed.notify_one();
    }
}

/// The runtimes of the simulated nodes by node name, shared by the simulator and its handle.
type Runtimes = Arc<RwLock<BTreeMap<String, NodeRuntime>>>;

/// A simulator's runtimes, while it runs.
type WeakRuntimes = std::sync::Weak<RwLock<BTreeMap<String, NodeRuntime>>>;

/// The simulated nodes an API server reaches, as kube-apiserver reaches kubelets (for
/// `pods/exec`): the runtimes of every attached [`NodeSim`] while it runs. Cheap to clone.
#[derive(Clone, Default)]
pub struct Kubelets {
    sims: Arc<RwLock<Vec<WeakRuntimes>>>,
}

impl std::fmt::Debug for Kubelets {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Kubelets").finish_non_exhaustive()
    }
}

impl Kubelets {
    /// Makes the nodes of `sim` reachable (again attaching the same simulator does nothing).
    pub fn attach(&self, sim: &NodeSim) {
        let mut sims = self.sims.write().unwrap_or_else(|p| p.into_inner());
        sims.retain(|w| w.strong_count() > 0);
        if !sims.iter().any(|w| std::ptr::eq(w.as_ptr(), Arc::as_ptr(&sim.runtimes))) {
            sims.push(Arc::downgrade(&sim.runtimes));
        }
    }

    /// The runtime of simulated node `name`, if an attached simulator runs it.
    pub fn runtime(&self, name: &str) -> Option<NodeRuntime> {
        let sims = self.sims.read().unwrap_or_else(|p| p.into_inner());
        sims.iter()
            .filter_map(std::sync::Weak::upgrade)
            .find_map(|r| r.read().unwrap_or_else(|p| p.into_inner()).get(name).cloned())
    }
}

/// The running node simulator. Dropping it stops the simulation (the Node objects stay).
pub struct NodeSim {
    ops: mpsc::Sender<(NodeOp, Reply)>,
    stop: tokio_watch::Sender<bool>,
    runtimes: Runtimes,
    added: tokio::sync::broadcast::Sender<NodeRuntime>,
}

impl Drop for NodeSim {
    fn drop(&mut self) {
        let _ = self.stop.send(true);
    }
}

/// A kube-rs client from a kubeconfig's YAML text.
pub async fn client_from_kubeconfig(yaml: &str) -> Result<kube::Client, NodeError> {
    let kc = kube::config::Kubeconfig::from_yaml(yaml)
        .map_err(|e| NodeError::Kubeconfig(e.to_string()))?;
    let cfg = kube::Config::from_custom_kubeconfig(kc, &Default::default())
        .await
        .map_err(|e| NodeError::Kubeconfig(e.to_string()))?;
    kube::Client::try_from(cfg).map_err(NodeError::Kube)
}

impl NodeSim {
    /// Creates the configured nodes and starts simulating them on the current runtime.
    pub async fn start(client: kube::Client, config: NodesConfig) -> Result<NodeSim, NodeError> {
        let (stop, stop_rx) = tokio_watch::channel(false);
        let (ops, ops_rx) = mpsc::channel(16);
        let notify = Arc::new(Notify::new());
        let (pods, pods_w) = reflector::store::<Pod>();
        let (nodes, nodes_w) = reflector::store::<Node>();
        let runtimes = Runtimes::default();
        let (added, _) = tokio::sync::broadcast::channel(64);
        let objects = Arc::new(ApiObjects::new(client.clone(), notify.clone()));
        spawn_reflector(Api::<Pod>::all(client.clone()), pods_w, notify.clone(), stop_rx.clone());
        spawn_reflector(Api::<Node>::all(client.clone()), nodes_w, notify.clone(), stop_rx.clone());
        let mut sim = Sim {
            client,
            delays: config.delays,
            scheduler: config.scheduler,
            lease_duration: config.lease_duration_seconds,
            nodes: BTreeMap::new(),
            next_index: 0,
            pods,
            node_store: nodes,
            assumed: HashMap::new(),
            unsched: HashMap::new(),
            written: HashMap::new(),
            marked: HashSet::new(),
            retry_at: None,
            notify: notify.clone(),
            runtimes: runtimes.clone(),
            added: added.clone(),
            objects,
        };
        for spec in config.nodes {
            sim.add(spec).await?;
        }
        tokio::spawn(sim.run(ops_rx, notify, stop_rx, config.lease_renew));
        Ok(NodeSim { ops, stop, runtimes, added })
    }

    /// The container runtime of simulated node `name`, while it is simulated.
    pub fn runtime(&self, name: &str) -> Option<NodeRuntime> {
        self.runtimes.read().unwrap_or_else(|p| p.into_inner()).get(name).cloned()
    }

    /// The container runtimes of every simulated node, by node name.
    pub fn runtimes(&self) -> Vec<NodeRuntime> {
        self.runtimes.read().unwrap_or_else(|p| p.into_inner()).values().cloned().collect()
    }

    /// The runtimes of nodes added from now on ([`NodeOp::Add`]). A receiver more than 64
    /// nodes behind loses the oldest.
    pub fn subscribe_added(&self) -> tokio::sync::broadcast::Receiver<NodeRuntime> {
        self.added.subscribe()
    }

    /// Applies a change, from async code.
    pub async fn apply(&self, op: NodeOp) -> Result<(), NodeError> {
        let (tx, rx) = oneshot::channel();
        self.ops.send((op, tx)).await.map_err(|_| NodeError::Stopped)?;
        rx.await.map_err(|_| NodeError::Stopped)?
    }

    /// Applies a change, from synchronous code (not from within an async runtime).
    pub fn apply_blocking(&self, op: NodeOp) -> Result<(), NodeError> {
        let (tx, rx) = oneshot::channel();
        self.ops.blocking_send((op, tx)).map_err(|_| NodeError::Stopped)?;
        rx.blocking_recv().map_err(|_| NodeError::Stopped)?
    }

    /// Stops the simulation.
    pub fn stop(&self) {
        let _ = self.stop.send(true);
    }
}

fn spawn_reflector<K>(
    api: Api<K>,
    writer: reflector::store::Writer<K>,
    notify: Arc<Notify>,
    mut stop: tokio_watch::Receiver<bool>,
) where
    K: kube::Resource
        + Clone
        + serde::de::DeserializeOwned
        + std::fmt::Debug
        + Send
        + Sync
        + 'static,
    K::DynamicType: Default + Eq + std::hash::Hash + Clone + Send + Sync,
{
    let stream = reflector::reflector(writer, watcher::watcher(api, watcher::Config::default()))
        .default_backoff();
    tokio::spawn(async move {
        let mut stream = std::pin::pin!(stream);
        loop {
            tokio::select! {
                ev = stream.next() => match ev {
                    Some(_) => notify.notify_one(),
                    None => return,
                },
                _ = stop.changed() => return,
            }
        }
    });
}

struct SimNode {
    spec: NodeSpec,
    kubelet_prefix: String,
    uid: String,
    ip: String,
    cordoned: bool,
    failure: Option<Failure>,
    kubelet: Kubelet,
    /// The node cache has shown this node's object (with this uid) at least once, so its
    /// absence there means it was deleted.
    registered: bool,
}

struct Sim {
    client: kube::Client,
    delays: Delays,
    scheduler: bool,
    lease_duration: i32,
    nodes: BTreeMap<String, SimNode>,
    next_index: usize,
    pods: reflector::Store<Pod>,
    node_store: reflector::Store<Node>,
    /// Pods bound by us that the watch has not shown bound yet: uid → placement.
    assumed: HashMap<String, Placed>,
    /// The last Unschedulable message written per pod uid.
    unsched: HashMap<String, String>,
    /// The last status patch written per pod uid.
    written: HashMap<String, Value>,
    /// Pods marked NotReady because their node failed.
    marked: HashSet<String>,
    retry_at: Option<Instant>,
    /// Wakes the loop (watch events, and runtime changes from outside).
    notify: Arc<Notify>,
    runtimes: Runtimes,
    added: tokio::sync::broadcast::Sender<NodeRuntime>,
    /// The ConfigMaps and Secrets the kubelets read for containers' environments.
    objects: Arc<ApiObjects>,
}

enum Write {
    Bind { ns: String, name: String, uid: String, node: String },
    Status { ns: String, name: String, uid: String, patch: Value },
    Delete { ns: String, name: String, uid: String, node: String, grace: u32 },
}

fn micro_now() -> Value {
    serde_json::to_value(MicroTime(jiff::Timestamp::now())).unwrap_or(Value::Null)
}

fn node_taints(n: &SimNode) -> Vec<Taint> {
    let mut t = n.spec.taints.clone();
    let mut add = |key: &str, effect: &str| {
        t.push(Taint { key: key.into(), effect: effect.into(), ..Default::default() });
    };
    if n.cordoned {
        add("node.kubernetes.io/unschedulable", "NoSchedule");
    }
    match n.failure {
        Some(Failure::NotReady) => {
            add("node.kubernetes.io/not-ready", "NoSchedule");
            add("node.kubernetes.io/not-ready", "NoExecute");
        }
        Some(Failure::Unknown) => {
            add("node.kubernetes.io/unreachable", "NoSchedule");
            add("node.kubernetes.io/unreachable", "NoExecute");
        }
        None => {}
    }
    t
}

fn node_body(n: &SimNode) -> Value {
    let s = &n.spec;
    let mut labels: BTreeMap<String, String> = BTreeMap::new();
    labels.insert("kubernetes.io/hostname".into(), s.name.clone());
    labels.insert("kubernetes.io/arch".into(), s.arch.clone());
    labels.insert("kubernetes.io/os".into(), s.os.clone());
    labels.insert("topology.kubernetes.io/zone".into(), s.zone.clone());
    labels.insert("topology.kubernetes.io/region".into(), s.region.clone());
    labels.insert("type".into(), "kruise-sim".into());
    labels.extend(s.labels.clone());
    let cidr = &n.kubelet_prefix;
    json!({
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {
            "name": s.name,
            "labels": labels,
            "annotations": {"node.alpha.kubernetes.io/ttl": "0", "kruise-sim.io/simulated": "true"},
        },
        "spec": {
            "podCIDR": format!("{cidr}.0/24"),
            "podCIDRs": [format!("{cidr}.0/24")],
            "unschedulable": if n.cordoned { json!(true) } else { Value::Null },
            "taints": node_taints(n),
        },
    })
}

fn node_status(n: &SimNode) -> Value {
    let s = &n.spec;
    let now = crate::util::now_rfc3339();
    let (ready, reason, message) = match n.failure {
        None => ("True", "KubeletReady", "kubelet is posting ready status"),
        Some(Failure::NotReady) => ("False", "KubeletNotReady", "container runtime is down"),
        Some(Failure::Unknown) => {
            ("Unknown", "NodeStatusUnknown", "Kubelet stopped posting node status.")
        }
    };
    let pressure = |t: &str, r: &str, m: &str| {
        if n.failure == Some(Failure::Unknown) {
            json!({"type": t, "status": "Unknown", "reason": "NodeStatusUnknown", "message": "Kubelet stopped posting node status.", "lastHeartbeatTime": now, "lastTransitionTime": now})
        } else {
            json!({"type": t, "status": "False", "reason": r, "message": m, "lastHeartbeatTime": now, "lastTransitionTime": now})
        }
    };
    let capacity = json!({"cpu": s.cpu, "memory": s.memory, "pods": s.pods.to_string(), "ephemeral-storage": kubelet::EPHEMERAL_STORAGE});
    let images: Vec<Value> = n
        .kubelet
        .runtime()
        .list_images()
        .into_iter()
        .map(|(name, id)| json!({"names": [id, name], "sizeBytes": 10_000_000}))
        .collect();
    json!({"status": {
        "capacity": capacity,
        "allocatable": capacity,
        "phase": "Running",
        "conditions": [
            pressure("MemoryPressure", "KubeletHasSufficientMemory", "kubelet has sufficient memory available"),
            pressure("DiskPressure", "KubeletHasNoDiskPressure", "kubelet has no disk pressure"),
            pressure("PIDPressure", "KubeletHasSufficientPID", "kubelet has sufficient PID available"),
            {"type": "Ready", "status": ready, "reason": reason, "message": message, "lastHeartbeatTime": now, "lastTransitionTime": now},
        ],
        "addresses": [{"type": "InternalIP", "address": n.ip}, {"type": "Hostname", "address": s.name}],
        "daemonEndpoints": {"kubeletEndpoint": {"Port": 10250}},
        "nodeInfo": {
            "machineID": crate::nodes::runtime::sha256_hex(s.name.as_bytes())[..32].to_string(),
            "systemUUID": n.uid,
            "bootID": n.uid,
            "kernelVersion": "6.1.0-kruise-sim",
            "osImage": "kruise-sim",
            "containerRuntimeVersion": "kruise-sim://0.1.0",
            "kubeletVersion": "v1.34.0-kruise-sim",
            "kubeProxyVersion": "",
            "operatingSystem": s.os,
            "architecture": s.arch,
        },
        "images": images,
    }})
}

fn is_not_found(e: &kube::Error) -> bool {
    matches!(e, kube::Error::Api(s) if s.code == 404)
}

fn is_conflict(e: &kube::Error) -> bool {
    matches!(e, kube::Error::Api(s) if s.code == 409)
}

impl Sim {
    async fn add(&mut self, spec: NodeSpec) -> Result<(), NodeError> {
        if self.nodes.contains_key(&spec.name) {
            return Err(NodeError::NodeExists(spec.name));
        }
        let i = self.next_index;
        self.next_index += 1;
        let prefix = format!("10.{}.{}", 244 + (i / 256) % 12, i % 256);
        let runtime: Arc<dyn ContainerRuntime> = Arc::new(FakeRuntime::new(&spec.name));
        let handle = NodeRuntime {
            node: spec.name.clone(),
            runtime: runtime.clone(),
            changed: self.notify.clone(),
        };
        let ip = format!("172.18.{}.{}", i / 250, i % 250 + 2);
        let mut node = SimNode {
            kubelet: Kubelet::new(&spec.name, &ip, &prefix, runtime, self.delays)
                .with_allocatable(&spec.cpu, &spec.memory)
                .with_objects(self.objects.clone()),
            kubelet_prefix: prefix,
            spec,
            uid: String::new(),
            ip,
            cordoned: false,
            failure: None,
            registered: false,
        };
        let api: Api<Node> = Api::all(self.client.clone());
        let body: Node = serde_json::from_value(node_body(&node))
            .map_err(|source| NodeError::Build { what: "node", source })?;
        let created = match api.create(&PostParams::default(), &body).await {
            Ok(n) => n,
            Err(e) if is_conflict(&e) => {
                api.patch(&node.spec.name, &PatchParams::default(), &Patch::Merge(node_body(&node)))
                    .await?
            }
            Err(e) => return Err(e.into()),
        };
        node.uid = created.metadata.uid.unwrap_or_default();
        api.patch_status(
            &node.spec.name,
            &PatchParams::default(),
            &Patch::Merge(node_status(&node)),
        )
        .await?;
        self.renew_lease(&node, true).await?;
        self.nodes.insert(node.spec.name.clone(), node);
        self.runtimes
            .write()
            .unwrap_or_else(|p| p.into_inner())
            .insert(handle.node.clone(), handle.clone());
        // Nobody listening is fine.
        let _ = self.added.send(handle);
        Ok(())
    }

    async fn renew_lease(&self, n: &SimNode, create: bool) -> Result<(), NodeError> {
        let api: Api<Lease> = Api::namespaced(self.client.clone(), "kube-node-lease");
        let patch = json!({"spec": {"holderIdentity": n.spec.name, "renewTime": micro_now(), "leaseDurationSeconds": self.lease_duration}});
        match api.patch(&n.spec.name, &PatchParams::default(), &Patch::Merge(&patch)).await {
            Ok(_) => Ok(()),
            Err(e) if is_not_found(&e) && (create || n.failure.is_none()) => {
                let lease: Lease = serde_json::from_value(json!({
                    "metadata": {"name": n.spec.name, "namespace": "kube-node-lease", "ownerReferences": [
                        {"apiVersion": "v1", "kind": "Node", "name": n.spec.name, "uid": n.uid}
                    ]},
                    "spec": {"holderIdentity": n.spec.name, "leaseDurationSeconds": self.lease_duration, "renewTime": micro_now()},
                }))
                .map_err(|source| NodeError::Build { what: "lease", source })?;
                match api.create(&PostParams::default(), &lease).await {
                    Ok(_) => Ok(()),
                    Err(e) if is_conflict(&e) => Ok(()),
                    Err(e) => Err(e.into()),
                }
            }
            Err(e) => Err(e.into()),
        }
    }

    async fn push_node(&self, name: &str) -> Result<(), NodeError> {
        let n = self.nodes.get(name).ok_or_else(|| NodeError::UnknownNode(name.to_string()))?;
        let api: Api<Node> = Api::all(self.client.clone());
        let body = node_body(n);
        let patch = json!({"spec": body["spec"]});
        api.patch(name, &PatchParams::default(), &Patch::Merge(&patch)).await?;
        api.patch_status(name, &PatchParams::default(), &Patch::Merge(node_status(n))).await?;
        Ok(())
    }

    async fn op(&mut self, op: NodeOp) -> Result<(), NodeError> {
        fn known<'a>(
            nodes: &'a mut BTreeMap<String, SimNode>,
            name: &str,
        ) -> Result<&'a mut SimNode, NodeError> {
            nodes.get_mut(name).ok_or_else(|| NodeError::UnknownNode(name.to_string()))
        }
        match op {
            NodeOp::Add(spec) => return self.add(spec).await,
            NodeOp::Cordon(n) => {
                known(&mut self.nodes, &n)?.cordoned = true;
                self.push_node(&n).await?;
            }
            NodeOp::Uncordon(n) => {
                known(&mut self.nodes, &n)?.cordoned = false;
                self.push_node(&n).await?;
            }
            NodeOp::Fail(n, f) => {
                known(&mut self.nodes, &n)?.failure = Some(f);
                self.push_node(&n).await?;
            }
            NodeOp::Recover(n) => {
                known(&mut self.nodes, &n)?.failure = None;
                self.push_node(&n).await?;
                let uids: Vec<String> = self
                    .pods
                    .state()
                    .iter()
                    .filter(|p| {
                        p.spec.as_ref().and_then(|s| s.node_name.as_deref()) == Some(n.as_str())
                    })
                    .filter_map(|p| p.metadata.uid.clone())
                    .collect();
                for u in uids {
                    self.marked.remove(&u);
                    self.written.remove(&u);
                }
                if let Some(node) = self.nodes.get(&n) {
                    self.renew_lease(node, true).await?;
                }
            }
            NodeOp::Remove(n) => {
                known(&mut self.nodes, &n)?;
                self.forget(&n, true).await?;
            }
        }
        Ok(())
    }

    /// Stops simulating node `n`: deletes its Node object (when `delete_node`), its lease and,
    /// as the pod garbage collector does for pods bound to a node that no longer exists, its
    /// pods.
    async fn forget(&mut self, n: &str, delete_node: bool) -> Result<(), NodeError> {
        self.nodes.remove(n);
        self.runtimes.write().unwrap_or_else(|p| p.into_inner()).remove(n);
        if delete_node {
            let api: Api<Node> = Api::all(self.client.clone());
            match api.delete(n, &DeleteParams::default()).await {
                Ok(_) => {}
                Err(e) if is_not_found(&e) => {}
                Err(e) => return Err(e.into()),
            }
        }
        let leases: Api<Lease> = Api::namespaced(self.client.clone(), "kube-node-lease");
        match leases.delete(n, &DeleteParams::default()).await {
            Ok(_) => {}
            Err(e) if is_not_found(&e) => {}
            Err(e) => return Err(e.into()),
        }
        let orphans: Vec<Write> = self
            .pods
            .state()
            .iter()
            .filter(|p| p.spec.as_ref().and_then(|s| s.node_name.as_deref()) == Some(n))
            .map(|p| Write::Delete {
                ns: p.metadata.namespace.clone().unwrap_or_default(),
                name: p.metadata.name.clone().unwrap_or_default(),
                uid: p.metadata.uid.clone().unwrap_or_default(),
                node: n.to_owned(),
                grace: 0,
            })
            .collect();
        self.execute(orphans).await;
        Ok(())
    }

    /// Simulated nodes whose Node object was deleted (`kubectl delete node`) stop, and their
    /// pods go, as on a cluster whose machine was removed.
    async fn forget_deleted_nodes(&mut self) {
        let mut deleted = Vec::new();
        for (name, node) in &mut self.nodes {
            let live = self.node_store.get(&kube::runtime::reflector::ObjectRef::new(name));
            match live {
                Some(obj) if obj.metadata.uid.as_deref() == Some(node.uid.as_str()) => {
                    node.registered = true;
                }
                _ if node.registered => deleted.push(name.clone()),
                _ => {}
            }
        }
        for name in deleted {
            // A failed cleanup (the lease or a pod) is not retried: the pods' owners see them
            // on a node that does not exist, as they would after a failed pod GC round.
            let _ = self.forget(&name, false).await;
        }
    }

    async fn run(
        mut self,
        mut ops: mpsc::Receiver<(NodeOp, Reply)>,
        notify: Arc<Notify>,
        mut stop: tokio_watch::Receiver<bool>,
        lease_renew: Duration,
    ) {
        let _ = self.pods.wait_until_ready().await;
        let _ = self.node_store.wait_until_ready().await;
        let mut leases = tokio::time::interval(lease_renew.max(Duration::from_millis(10)));
        leases.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        let mut wake: Option<Instant> = None;
        loop {
            let sleep_until = wake.unwrap_or_else(|| Instant::now() + Duration::from_secs(3600));
            tokio::select! {
                _ = stop.changed() => return,
                _ = notify.notified() => {}
                _ = tokio::time::sleep_until(sleep_until) => {}
                op = ops.recv() => match op {
                    Some((op, reply)) => {
                        let r = self.op(op).await;
                        let _ = reply.send(r);
                    }
                    None => return,
                },
                _ = leases.tick() => {
                    for n in self.nodes.values() {
                        if n.failure != Some(Failure::Unknown) {
                            let _ = self.renew_lease(n, false).await;
                        }
                    }
                    continue;
                }
            }
            wake = self.reconcile().await;
        }
    }

    /// One round: schedule pending pods, sync every pod on our nodes, write the results.
    async fn reconcile(&mut self) -> Option<Instant> {
        self.forget_deleted_nodes().await;
        let now = Instant::now();
        self.retry_at = None;
        let pods = self.pods.state();
        let mut writes = Vec::new();
        let live: HashSet<String> = pods.iter().filter_map(|p| p.metadata.uid.clone()).collect();
        self.written.retain(|u, _| live.contains(u));
        self.unsched.retain(|u, _| live.contains(u));
        self.marked.retain(|u| live.contains(u));
        if self.scheduler {
            writes.extend(self.schedule(&pods));
        }
        let mut wake: Option<Instant> = None;
        let mut per_node: HashMap<String, HashSet<String>> = HashMap::new();
        for pod in &pods {
            let Some(node_name) = pod.spec.as_ref().and_then(|s| s.node_name.clone()) else {
                continue;
            };
            let Some(node) = self.nodes.get_mut(&node_name) else { continue };
            let uid = pod.metadata.uid.clone().unwrap_or_default();
            let ns = pod.metadata.namespace.clone().unwrap_or_default();
            let name = pod.metadata.name.clone().unwrap_or_default();
            if node.failure.is_some() {
                // The node lifecycle controller's part: mark the pods NotReady.
                per_node.entry(node_name).or_default().insert(uid.clone());
                let ready = pod
                    .status
                    .as_ref()
                    .and_then(|s| s.conditions.as_ref())
                    .and_then(|c| c.iter().find(|c| c.type_ == "Ready"))
                    .map(|c| c.status.clone());
                if ready.as_deref() == Some("True") && !self.marked.contains(&uid) {
                    self.marked.insert(uid.clone());
                    self.written.remove(&uid);
                    let patch = json!({"status": {"conditions": [{"type": "Ready", "status": "False", "lastProbeTime": null, "lastTransitionTime": crate::util::now_rfc3339()}]}});
                    writes.push(Write::Status { ns, name, uid, patch });
                }
                continue;
            }
            per_node.entry(node_name.clone()).or_default().insert(uid.clone());
            let r = node.kubelet.sync(pod, now);
            if let Some(s) = r.status
                && self.written.get(&uid) != Some(&s)
            {
                self.written.insert(uid.clone(), s.clone());
                writes.push(Write::Status {
                    ns: ns.clone(),
                    name: name.clone(),
                    uid: uid.clone(),
                    patch: s,
                });
            }
            if r.delete {
                writes.push(Write::Delete { ns, name, uid, node: node_name, grace: 0 });
            }
            wake = min_opt(wake, r.wake);
        }
        for (name, node) in &mut self.nodes {
            let empty = HashSet::new();
            node.kubelet.retain(per_node.get(name).unwrap_or(&empty));
        }
        self.execute(writes).await;
        self.objects.collect_idle();
        min_opt(wake, self.retry_at)
    }

    fn schedule(&mut self, pods: &[Arc<Pod>]) -> Vec<Write> {
        let nodes = self.node_store.state();
        let mut placed = Vec::new();
        let mut pending = Vec::new();
        for p in pods {
            let uid = p.metadata.uid.clone().unwrap_or_default();
            let phase = p.status.as_ref().and_then(|s| s.phase.as_deref()).unwrap_or_default();
            match p.spec.as_ref().and_then(|s| s.node_name.as_deref()).filter(|n| !n.is_empty()) {
                Some(n) => {
                    self.assumed.remove(&uid);
                    if phase != "Succeeded" && phase != "Failed" {
                        placed.push(Placed::of(p, n));
                    }
                }
                None => {
                    let ours = p
                        .spec
                        .as_ref()
                        .and_then(|s| s.scheduler_name.as_deref())
                        .is_none_or(|s| s == "default-scheduler");
                    if ours
                        && p.metadata.deletion_timestamp.is_none()
                        && !self.assumed.contains_key(&uid)
                    {
                        pending.push(p.clone());
                    }
                }
            }
        }
        self.assumed
            .retain(|u, _| pods.iter().any(|p| p.metadata.uid.as_deref() == Some(u.as_str())));
        placed.extend(self.assumed.values().cloned());
        let mut view = View::new(nodes.iter().map(|n| n.as_ref()), placed);
        pending.sort_by(|a, b| {
            (
                a.metadata.creation_timestamp.as_ref().map(|t| t.0),
                &a.metadata.namespace,
                &a.metadata.name,
            )
                .cmp(&(
                    b.metadata.creation_timestamp.as_ref().map(|t| t.0),
                    &b.metadata.namespace,
                    &b.metadata.name,
                ))
        });
        let mut writes = Vec::new();
        for p in pending {
            let uid = p.metadata.uid.clone().unwrap_or_default();
            let ns = p.metadata.namespace.clone().unwrap_or_default();
            let name = p.metadata.name.clone().unwrap_or_default();
            match view.schedule(&p) {
                Ok(node) => {
                    let placement = Placed::of(&p, &node);
                    view.assume(placement.clone());
                    self.assumed.insert(uid.clone(), placement);
                    self.unsched.remove(&uid);
                    writes.push(Write::Bind { ns, name, uid, node });
                }
                Err(u) => {
                    if self.unsched.get(&uid) != Some(&u.message) {
                        self.unsched.insert(uid.clone(), u.message.clone());
                        let patch = json!({"status": {"conditions": [{
                            "type": "PodScheduled", "status": "False", "reason": "Unschedulable",
                            "message": u.message, "lastProbeTime": null,
                            "lastTransitionTime": crate::util::now_rfc3339(),
                        }]}});
                        writes.push(Write::Status { ns, name, uid, patch });
                    }
                }
            }
        }
        writes
    }

    async fn execute(&mut self, writes: Vec<Write>) {
        if writes.is_empty() {
            return;
        }
        let client = self.client.clone();
        let results: Vec<(Write, Result<(), kube::Error>)> = futures::stream::iter(writes)
            .map(|w| {
                let client = client.clone();
                async move {
                    let r = exec(&client, &w).await;
                    (w, r)
                }
            })
            .buffer_unordered(64)
            .collect()
            .await;
        for (w, r) in results {
            let Err(e) = r else { continue };
            if is_not_found(&e) {
                continue;
            }
            match w {
                Write::Bind { uid, .. } => {
                    self.assumed.remove(&uid);
                }
                Write::Status { uid, .. } => {
                    self.written.remove(&uid);
                    self.unsched.remove(&uid);
                    self.marked.remove(&uid);
                }
                Write::Delete { uid, node, .. } => {
                    if let Some(n) = self.nodes.get_mut(&node) {
                        n.kubelet.delete_failed(&uid);
                    }
                }
            }
            let at = Instant::now() + Duration::from_millis(200);
            self.retry_at = min_opt(self.retry_at, Some(at));
        }
    }
}

async fn exec(client: &kube::Client, w: &Write) -> Result<(), kube::Error> {
    match w {
        Write::Bind { ns, name, node, .. } => {
            let api: Api<Pod> = Api::namespaced(client.clone(), ns);
            let body = json!({"apiVersion": "v1", "kind": "Binding", "metadata": {"name": name, "namespace": ns}, "target": {"apiVersion": "v1", "kind": "Node", "name": node}});
            api.create_subresource::<_, Value>("binding", name, &PostParams::default(), &body)
                .await
                .map(|_| ())
        }
        Write::Status { ns, name, patch, .. } => {
            let api: Api<Pod> = Api::namespaced(client.clone(), ns);
            api.patch_status(name, &PatchParams::default(), &Patch::Strategic(patch))
                .await
                .map(|_| ())
        }
        Write::Delete { ns, name, uid, grace, .. } => {
            let api: Api<Pod> = Api::namespaced(client.clone(), ns);
            let dp = DeleteParams {
                grace_period_seconds: Some(*grace),
                preconditions: Some(Preconditions {
                    uid: Some(uid.clone()),
                    resource_version: None,
                }),
                ..Default::default()
            };
            api.delete(name, &dp).await.map(|_| ())
        }
    }
}

fn min_opt(a: Option<Instant>, b: Option<Instant>) -> Option<Instant> {
    match (a, b) {
        (Some(x), Some(y)) => Some(x.min(y)),
        (x, y) => x.or(y),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn taints_parse() {
        let t = parse_taint("dedicated=gpu:NoSchedule").expect("taint");
        assert_eq!(
            (t.key.as_str(), t.value.as_deref(), t.effect.as_str()),
            ("dedicated", Some("gpu"), "NoSchedule")
        );
        assert!(parse_taint("x:Bogus").is_none());
        assert!(parse_taint("novalue").is_none());
        assert_eq!(parse_taint("k:NoExecute").expect("taint").value, None);
    }
}
