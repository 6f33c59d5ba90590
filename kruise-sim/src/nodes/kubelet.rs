//! The kubelet of one simulated node: a per-pod state machine over a [`ContainerRuntime`].
//!
//! [`Kubelet::sync`] looks at a pod as the API server has it, advances its containers
//! (pull → create → running → ready; init containers and native sidecars in order; a changed
//! image restarts only that container; deletion stops containers within the grace period)
//! and says which status to write, whether to delete the pod, and when to look again.
//!
//! In-place resize (InPlacePodVerticalScaling, as the 1.33+ kubelet reports it): when a
//! container's `resources` in the spec differ from what the kubelet allocated, the kubelet
//! checks that the pod fits the node (`PodResizePending`, reason `Infeasible` when it can
//! never fit the node's allocatable, `Deferred` when other pods' allocations are in the
//! way), allocates the new resources (`allocatedResources`), and applies them: in place,
//! taking [`Delays::start`] (`PodResizeInProgress` meanwhile), or by restarting the
//! container when its `resizePolicy` says `RestartContainer` for a changed resource.
//! `containerStatuses[].resources` shows what is applied.
//!
//! Containers are created with the labels and annotations a real kubelet gives them in the
//! CRI (`io.kubernetes.pod.uid`, `io.kubernetes.container.name`, the container hash, …), the
//! restart count as their attempt. On every sync the kubelet asks the runtime for the state
//! of each container it runs (its PLEG): one stopped from outside (kruise-daemon recreating
//! it) exits, and the restart policy brings it back.
//!
//! When it creates a container, the kubelet makes the container's environment from the pod as
//! it is at that moment ([`super::env`], as `makeEnvironmentVariables` does: `envFrom`, then
//! `env` values, field, resource, ConfigMap and Secret references), reading ConfigMaps and
//! Secrets from [`EnvObjects`], and hands it to the runtime with the container, which keeps
//! it: a label the environment reads that changes later shows only in the next container. A
//! missing object or key that is not `optional` (or a reference the kubelet cannot resolve)
//! leaves that container waiting in `CreateContainerConfigError` with the kubelet's message
//! (`configmap "x" not found`, `couldn't find key k in ConfigMap ns/x`) and does not hold back
//! the containers after it; every later sync tries again.
//! An image the runtime fails to pull leaves the container waiting in `ErrImagePull` with the
//! runtime's error, then in `ImagePullBackOff` until the pull is tried again (10 s, doubling to
//! 5 min), as the kubelet's image manager has it; it never counts as terminated or restarted.
//! A regular container that has never run and waits to start keeps the pod `Pending`, as the
//! kubelet's `getPhase` has it.

use super::env::{ContainerEnv, EnvContext, EnvError, ResourceLists, make_env};
use super::objects::{EnvKind, EnvObjects};
use super::runtime::{ContainerMeta, ContainerRuntime, ContainerState};
use super::scheduler::{Resources, parse_quantity, spec_requests};
use super::script::{self, Ending};
use crate::util::now_rfc3339;
use k8s_openapi::api::core::v1::{Container, Pod};
use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use serde_json::{Value, json};
use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;
use std::time::Duration;
use tokio::time::Instant;

/// Simulated durations of the container lifecycle.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Delays {
    /// Pulling an image not yet on the node (or with `imagePullPolicy: Always`).
    pub pull: Duration,
    /// Creating and starting a container.
    pub start: Duration,
    /// From start to ready, for containers with a readiness probe (the probe, simplified).
    pub ready: Duration,
    /// How long a regular init container runs before it completes.
    pub init_run: Duration,
    /// How long a container takes to stop (capped by the grace period).
    pub stop: Duration,
    /// How long a container of a Job's pod (`restartPolicy` OnFailure or Never) runs when its
    /// command is one the simulator cannot judge (see [`super::script`]).
    pub run: Duration,
    /// The first crash-loop back-off; it doubles per restart up to 30 times this (the
    /// kubelet's 10 s and 5 min).
    pub restart_backoff: Duration,
}

impl Default for Delays {
    fn default() -> Self {
        Delays {
            pull: Duration::from_millis(200),
            start: Duration::from_millis(100),
            ready: Duration::from_millis(500),
            init_run: Duration::from_millis(100),
            stop: Duration::from_millis(100),
            run: Duration::from_secs(1),
            restart_backoff: Duration::from_secs(10),
        }
    }
}

#[derive(Clone, Debug)]
enum Stage {
    NotStarted,
    Pulling(Instant),
    Creating(Instant),
    Running {
        since: String,
        started: Instant,
        ready_at: Instant,
        ends: Option<(Instant, i32)>,
    },
    /// Stopped by the kubelet; exits `code` at `until`.
    Stopping {
        since: String,
        until: Instant,
        code: i32,
    },
    Exited {
        code: i32,
        reason: &'static str,
        started: Option<String>,
        finished: String,
    },
    /// Exited, and waiting out the crash-loop back-off before the kubelet restarts it.
    BackOff {
        until: Instant,
        message: String,
    },
    /// Its image could not be pulled: `ErrImagePull` with the runtime's `error`, from
    /// `backoff_at` `ImagePullBackOff`, and at `until` the kubelet pulls again. Nothing ran,
    /// so nothing terminated: the restart count and `lastState` stay as they were.
    PullFailed {
        error: String,
        backoff_at: Instant,
        until: Instant,
    },
    /// Not created: its environment names a ConfigMap, Secret or key that is missing
    /// (`CreateContainerConfigError` with the kubelet's `message`). Every sync tries again;
    /// `retry` is when the kubelet looks again if nothing wakes it sooner.
    ConfigError {
        message: String,
        retry: Instant,
    },
}

/// The ephemeral storage every simulated node has (its capacity and allocatable).
pub const EPHEMERAL_STORAGE: &str = "100Gi";

/// How often a container in `CreateContainerConfigError` is tried again when no change to a
/// watched ConfigMap or Secret wakes the kubelet sooner (a real kubelet's pod worker retries
/// a failed sync after about 10 s, or on a change to the pod).
const CONFIG_RETRY: Duration = Duration::from_secs(1);

/// How long the kubelet waits for its ConfigMap or Secret cache to sync before the container
/// fails with `failed to sync configmap cache: ...` (a real kubelet's one second).
const CACHE_SYNC_TIMEOUT: Duration = Duration::from_secs(1);

/// How often the kubelet looks again at a cache that has not synced.
const CACHE_SYNC_POLL: Duration = Duration::from_millis(50);

/// When the kubelet restarts a container that exited.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Restart {
    Always,
    OnFailure,
    Never,
}

/// A container's requests and limits, as the spec writes them.
#[derive(Clone, Debug, Default, PartialEq)]
struct Res {
    requests: BTreeMap<String, Quantity>,
    limits: BTreeMap<String, Quantity>,
}

fn amount(m: &BTreeMap<String, Quantity>, k: &str) -> Option<i128> {
    m.get(k).and_then(|q| parse_quantity(&q.0))
}

impl Res {
    fn of(c: &Container) -> Res {
        let r = c.resources.as_ref();
        Res {
            requests: r.and_then(|r| r.requests.clone()).unwrap_or_default(),
            limits: r.and_then(|r| r.limits.clone()).unwrap_or_default(),
        }
    }

    /// Whether the amounts of `resource` differ (`1` and `1000m` are the same).
    fn differs_in(&self, other: &Res, resource: &str) -> bool {
        amount(&self.requests, resource) != amount(&other.requests, resource)
            || amount(&self.limits, resource) != amount(&other.limits, resource)
    }

    fn differs(&self, other: &Res) -> bool {
        let keys: std::collections::BTreeSet<&String> =
            [self, other].iter().flat_map(|r| r.requests.keys().chain(r.limits.keys())).collect();
        keys.into_iter().any(|k| self.differs_in(other, k))
    }

    /// Requests, a limit standing in for a missing request.
    fn effective_requests(&self) -> Resources {
        let mut out = Resources::new();
        for (k, q) in self.limits.iter().chain(self.requests.iter()) {
            if let Some(v) = parse_quantity(&q.0) {
                out.insert(k.clone(), v);
            }
        }
        out
    }

    fn is_empty(&self) -> bool {
        self.requests.is_empty() && self.limits.is_empty()
    }

    fn to_json(&self) -> Value {
        let mut v = json!({});
        if !self.requests.is_empty() {
            v["requests"] = json!(self.requests);
        }
        if !self.limits.is_empty() {
            v["limits"] = json!(self.limits);
        }
        v
    }
}

#[derive(Clone, Debug)]
struct Ctr {
    name: String,
    image: String,
    sidecar: bool,
    init: bool,
    probe: bool,
    pull_always: bool,
    image_id: String,
    container_id: Option<String>,
    restart_count: i64,
    stage: Stage,
    last: Option<Value>,
    /// The resources the kubelet allocated (what the spec asked for when it fit).
    allocated: Res,
    /// The resources applied to the running container.
    actual: Res,
    /// When applying `allocated` in place completes.
    resize_at: Option<Instant>,
    /// How its process ends, read from its command.
    ending: Ending,
    /// When the kubelet restarts it after it exits.
    restart: Restart,
    /// The back-off before the next restart; none before the first.
    backoff: Option<Duration>,
    /// The back-off after the last failed pull of its image; none before the first failure.
    pull_backoff: Option<Duration>,
    /// CRI labels and annotations of its containers.
    cri: Arc<CriMeta>,
    /// Its `env` and `envFrom`, resolved each time it is created.
    env: Arc<ContainerEnv>,
    /// Since when its creation waits for a ConfigMap or Secret cache to sync.
    cache_wait: Option<Instant>,
}

/// The CRI labels and annotations the kubelet gives a container's instances.
#[derive(Debug, Default)]
struct CriMeta {
    labels: BTreeMap<String, String>,
    annotations: BTreeMap<String, String>,
}

impl CriMeta {
    /// What a real kubelet labels a container of `pod` with (pod UID, name, namespace,
    /// container name) and its hash annotation: FNV-1a (32 bits) of the container spec's JSON,
    /// in hex, as the kubelet's `HashContainer` formats it.
    fn of(pod: &Pod, c: &Container) -> Arc<CriMeta> {
        use kruise_api::well_known::kubernetes::cri;
        let meta = &pod.metadata;
        let labels = [
            (cri::POD_UID, meta.uid.as_deref().unwrap_or_default()),
            (cri::POD_NAME, meta.name.as_deref().unwrap_or_default()),
            (cri::POD_NAMESPACE, meta.namespace.as_deref().unwrap_or_default()),
            (cri::CONTAINER_NAME, c.name.as_str()),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_owned(), v.to_owned()))
        .collect();
        let json = serde_json::to_vec(c).unwrap_or_default();
        let hash =
            json.iter().fold(0x811c_9dc5_u32, |h, b| (h ^ u32::from(*b)).wrapping_mul(0x0100_0193));
        let annotations = [(cri::CONTAINER_HASH.to_owned(), format!("{hash:x}"))].into();
        Arc::new(CriMeta { labels, annotations })
    }

    /// The metadata of instance `attempt`.
    fn for_attempt(&self, attempt: i64) -> ContainerMeta {
        use kruise_api::well_known::kubernetes::cri;
        let mut annotations = self.annotations.clone();
        annotations.insert(cri::CONTAINER_RESTART_COUNT.to_owned(), attempt.to_string());
        ContainerMeta {
            attempt: u32::try_from(attempt).unwrap_or(0),
            labels: self.labels.clone(),
            annotations,
            ..ContainerMeta::default()
        }
    }
}

impl Ctr {
    fn new(c: &Container, init: bool, pod_restart: Restart, delays: &Delays) -> Ctr {
        let sidecar = init && c.restart_policy.as_deref() == Some("Always");
        // What a command the script reader does not know does (see `super::script`).
        let unknown = if sidecar || (!init && pod_restart == Restart::Always) {
            Ending::Never
        } else if init {
            Ending::After { after: delays.init_run, code: 0 }
        } else {
            Ending::After { after: delays.run, code: 0 }
        };
        let restart = match (sidecar, init, pod_restart) {
            (true, _, _) => Restart::Always,
            // Init containers run to completion: a failed one is retried unless the pod
            // never restarts anything.
            (false, true, Restart::Never) => Restart::Never,
            (false, true, _) => Restart::OnFailure,
            (false, false, policy) => policy,
        };
        Ctr {
            ending: script::ending(
                c.command.as_deref().unwrap_or_default(),
                c.args.as_deref().unwrap_or_default(),
                unknown,
            ),
            restart,
            backoff: None,
            pull_backoff: None,
            name: c.name.clone(),
            image: c.image.clone().unwrap_or_default(),
            sidecar,
            init,
            probe: c.readiness_probe.is_some(),
            pull_always: c.image_pull_policy.as_deref() == Some("Always"),
            image_id: String::new(),
            container_id: None,
            restart_count: 0,
            stage: Stage::NotStarted,
            last: None,
            allocated: Res::of(c),
            actual: Res::of(c),
            resize_at: None,
            cri: Arc::default(),
            env: Arc::default(),
            cache_wait: None,
        }
    }

    /// Sets the CRI labels and annotations for the containers of `pod`, and what their
    /// environment reads.
    fn in_pod(mut self, pod: &Pod, c: &Container) -> Ctr {
        self.cri = CriMeta::of(pod, c);
        self.env = ContainerEnv::of(pod, c);
        self
    }

    fn running(&self) -> bool {
        matches!(self.stage, Stage::Running { .. } | Stage::Stopping { .. })
    }

    fn ready(&self, now: Instant) -> bool {
        (!self.init || self.sidecar)
            && matches!(self.stage, Stage::Running { ready_at, .. } if now >= ready_at)
    }

    fn exited(&self) -> Option<i32> {
        match self.stage {
            Stage::Exited { code, .. } => Some(code),
            _ => None,
        }
    }

    /// Satisfied for the init sequence: a sidecar that started, a regular init that exited 0.
    fn init_satisfied(&self) -> bool {
        if self.sidecar {
            self.running()
        } else {
            matches!(self.stage, Stage::Exited { code: 0, .. })
        }
    }

    fn wake(&self, now: Instant) -> Option<Instant> {
        let stage = self.stage_wake(now);
        match (stage, self.resize_at) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }

    fn stage_wake(&self, now: Instant) -> Option<Instant> {
        match &self.stage {
            Stage::Pulling(t) | Stage::Creating(t) | Stage::Stopping { until: t, .. } => Some(*t),
            Stage::Running { ready_at, ends, .. } => {
                let r = (*ready_at > now).then_some(*ready_at);
                match (r, ends.map(|(at, _)| at)) {
                    (Some(a), Some(b)) => Some(a.min(b)),
                    (a, b) => a.or(b),
                }
            }
            Stage::BackOff { until, .. } => Some(*until),
            Stage::PullFailed { backoff_at, until, .. } => {
                Some(if *backoff_at > now { *backoff_at } else { *until })
            }
            Stage::ConfigError { retry, .. } => {
                Some(if *retry > now { *retry } else { now + CONFIG_RETRY })
            }
            _ => None,
        }
    }
}

#[derive(Debug)]
struct PodState {
    ip: String,
    start_time: String,
    init: Vec<Ctr>,
    main: Vec<Ctr>,
    conds: BTreeMap<&'static str, (bool, String)>,
    delete_sent: bool,
    /// `PodResizePending`: reason, message, lastTransitionTime.
    resize_pending: Option<(&'static str, String, String)>,
    /// `PodResizeInProgress`'s lastTransitionTime.
    resize_progress: Option<String>,
    /// Whether resize conditions were ever written (so clearing them deletes them).
    resize_seen: bool,
    /// The pod's restart policy.
    restart: Restart,
    /// Ephemeral containers, in the order they were added.
    ephemeral: Vec<Ctr>,
    /// Its regular containers are done (or an init container failed for good): sidecars
    /// are stopping, and nothing starts again.
    finishing: bool,
    /// `Succeeded` or `Failed` once the pod has finished (it never runs again).
    finished: Option<&'static str>,
}

impl PodState {
    /// The pod's allocated requests, counted as the scheduler counts a pod's requests.
    fn allocated_requests(&self) -> Resources {
        let mut total = Resources::new();
        for c in self.main.iter().chain(self.init.iter().filter(|c| c.sidecar)) {
            for (k, v) in c.allocated.effective_requests() {
                *total.entry(k).or_default() += v;
            }
        }
        for c in self.init.iter().filter(|c| !c.sidecar) {
            for (k, v) in c.allocated.effective_requests() {
                let e = total.entry(k).or_default();
                *e = (*e).max(v);
            }
        }
        total
    }
}

/// What the node should do about a pod after a sync.
#[derive(Debug, Default)]
pub struct SyncResult {
    /// A strategic-merge patch of the pod's status (`{"status": {...}}`).
    pub status: Option<Value>,
    /// Delete the pod with grace 0: its containers have stopped.
    pub delete: bool,
    /// When to sync again.
    pub wake: Option<Instant>,
}

/// The kubelet of one node.
pub struct Kubelet {
    node: String,
    node_ip: String,
    pod_cidr_prefix: String,
    runtime: Arc<dyn ContainerRuntime>,
    delays: Delays,
    pods: HashMap<String, PodState>,
    next_ip: u32,
    /// The node's allocatable resources, for resize admission; `None` admits every resize.
    allocatable: Option<Resources>,
    /// Where containers' environments read ConfigMaps and Secrets; `None` is a kubelet without
    /// an API client, whose containers that name any fail to start.
    objects: Option<Arc<dyn EnvObjects>>,
}

fn pod_uid(pod: &Pod) -> &str {
    pod.metadata.uid.as_deref().unwrap_or_default()
}

/// The pod a sync works on, as creating its containers needs it.
struct PodCtx<'a> {
    /// The pod as the API server has it now.
    pod: &'a Pod,
    uid: &'a str,
    /// Its IP.
    ip: &'a str,
}

/// The hostname of a pod's sandbox, as the kubelet's `GeneratePodHostNameAndDomain` makes it:
/// `spec.hostname` or the pod's name, cut to 63 characters without a trailing `-` or `.`.
/// Empty for a pod on the host's network (the runtime then gives the node's).
fn sandbox_hostname(pod: &Pod) -> String {
    let spec = pod.spec.as_ref();
    if spec.and_then(|s| s.host_network) == Some(true) {
        return String::new();
    }
    let name = pod.metadata.name.as_deref().unwrap_or_default();
    let hostname = spec.and_then(|s| s.hostname.as_deref()).filter(|h| !h.is_empty());
    let hostname = hostname.unwrap_or(name);
    if hostname.len() <= 63 {
        return hostname.to_owned();
    }
    // Names are DNS labels or subdomains: ASCII, so byte 63 is a character boundary.
    hostname.get(..63).unwrap_or(hostname).trim_end_matches(['-', '.']).to_owned()
}

impl Kubelet {
    /// The kubelet of `node`, whose pods get IPs `<pod_cidr_prefix>.N`.
    pub fn new(
        node: &str,
        node_ip: &str,
        pod_cidr_prefix: &str,
        runtime: Arc<dyn ContainerRuntime>,
        delays: Delays,
    ) -> Kubelet {
        Kubelet {
            node: node.to_string(),
            node_ip: node_ip.to_string(),
            pod_cidr_prefix: pod_cidr_prefix.to_string(),
            runtime,
            delays,
            pods: HashMap::new(),
            next_ip: 0,
            allocatable: None,
            objects: None,
        }
    }

    /// Reads the ConfigMaps and Secrets that containers' environments name from `objects`.
    pub fn with_objects(mut self, objects: Arc<dyn EnvObjects>) -> Kubelet {
        self.objects = Some(objects);
        self
    }

    /// Tells the object source whose namespace's ConfigMaps and Secrets `ctrs` will read, once
    /// per kind (the kubelet's `RegisterPod`).
    fn register<'a>(&self, ctrs: impl IntoIterator<Item = &'a Ctr>) {
        let Some(objects) = &self.objects else { return };
        let mut done: Vec<(EnvKind, &str)> = Vec::new();
        for c in ctrs {
            for kind in c.env.kinds() {
                let k = (kind, c.env.namespace.as_str());
                if !done.contains(&k) {
                    objects.register(k.0, k.1);
                    done.push(k);
                }
            }
        }
    }

    /// Makes the environment of `c` as the kubelet's `makeEnvironmentVariables` does when it
    /// generates the container's config (see [`super::env`]).
    fn make_env(&self, pod: &PodCtx<'_>, c: &Ctr) -> Result<Vec<(String, String)>, EnvError> {
        let ctx = EnvContext {
            pod: pod.pod,
            pod_ip: pod.ip,
            host_ip: &self.node_ip,
            allocatable: self.allocatable.as_ref(),
            objects: self.objects.as_deref(),
        };
        let own = ResourceLists { requests: &c.allocated.requests, limits: &c.allocated.limits };
        make_env(&ctx, &c.env, own)
    }

    /// Puts `c` in `CreateContainerConfigError` with `message`; true when that changed its
    /// status.
    fn config_error(c: &mut Ctr, message: String, now: Instant) -> bool {
        match &mut c.stage {
            Stage::ConfigError { message: m, retry } if *m == message => {
                if *retry <= now {
                    *retry = now + CONFIG_RETRY;
                }
                false
            }
            _ => {
                c.stage = Stage::ConfigError { message, retry: now + CONFIG_RETRY };
                true
            }
        }
    }

    /// Sets the node's allocatable CPU and memory (quantities such as `"32"` and `"256Gi"`),
    /// against which in-place resizes are admitted, and its [`EPHEMERAL_STORAGE`]; they are
    /// also the limits the downward API reports for a container without one. Unparsable
    /// quantities are ignored.
    pub fn with_allocatable(mut self, cpu: &str, memory: &str) -> Kubelet {
        let mut r = Resources::new();
        for (k, q) in [("cpu", cpu), ("memory", memory), ("ephemeral-storage", EPHEMERAL_STORAGE)] {
            if let Some(v) = parse_quantity(q) {
                r.insert(k.to_string(), v);
            }
        }
        self.allocatable = Some(r);
        self
    }

    /// Whether a resize of the pod `uid` to `want` (its requests) can be admitted now:
    /// `Err((reason, message))` with the real kubelet's `Infeasible` or `Deferred`.
    fn admit_resize(&self, uid: &str, want: &Resources) -> Result<(), (&'static str, String)> {
        let Some(alloc) = &self.allocatable else { return Ok(()) };
        let get = |r: &Resources, k: &str| r.get(k).copied().unwrap_or(0);
        // The kubelet reports CPU in millicores and memory in bytes.
        let shown = |k: &str, v: i128| if k == "memory" { v / 1000 } else { v };
        for k in ["memory", "cpu"] {
            if alloc.contains_key(k) && get(want, k) > get(alloc, k) {
                return Err((
                    "Infeasible",
                    format!(
                        "Node didn't have enough capacity: {k}, requested: {}, capacity: {}",
                        shown(k, get(want, k)),
                        shown(k, get(alloc, k))
                    ),
                ));
            }
        }
        let mut used = Resources::new();
        for (u, st) in &self.pods {
            if u == uid || all_exited(st) {
                continue;
            }
            for (k, v) in st.allocated_requests() {
                *used.entry(k).or_default() += v;
            }
        }
        for k in ["cpu", "memory"] {
            if alloc.contains_key(k) && get(want, k) + get(&used, k) > get(alloc, k) {
                return Err((
                    "Deferred",
                    format!(
                        "Node didn't have enough resource: {k}, requested: {}, used: {}, capacity: {}",
                        shown(k, get(want, k)),
                        shown(k, get(&used, k)),
                        shown(k, get(alloc, k))
                    ),
                ));
            }
        }
        Ok(())
    }

    /// Allocates and starts applying changed container resources, or says why not.
    fn resize(
        &self,
        pod: &Pod,
        uid: &str,
        st: &mut PodState,
        specs: &HashMap<&str, &Container>,
        now: Instant,
    ) {
        let changed =
            st.main.iter().chain(st.init.iter().filter(|c| c.sidecar)).any(|c| {
                specs.get(c.name.as_str()).is_some_and(|s| Res::of(s).differs(&c.allocated))
            });
        if !changed {
            st.resize_pending = None;
            return;
        }
        if let Err((reason, message)) = self.admit_resize(uid, &spec_requests(pod)) {
            let same =
                st.resize_pending.as_ref().is_some_and(|(r, m, _)| *r == reason && *m == message);
            if !same {
                st.resize_pending = Some((reason, message, now_rfc3339()));
            }
            return;
        }
        st.resize_pending = None;
        for c in st.main.iter_mut().chain(st.init.iter_mut().filter(|c| c.sidecar)) {
            let Some(s) = specs.get(c.name.as_str()) else { continue };
            let want = Res::of(s);
            if !want.differs(&c.allocated) {
                continue;
            }
            let restart = s.resize_policy.iter().flatten().any(|p| {
                p.restart_policy == "RestartContainer"
                    && want.differs_in(&c.actual, &p.resource_name)
            });
            c.allocated = want;
            match &c.stage {
                Stage::Running { since, .. } if restart => {
                    let since = since.clone();
                    if let Some(id) = c.container_id.take() {
                        let _ = self.runtime.stop_container(&id, 0);
                        c.last = Some(json!({"terminated": {
                            "exitCode": 0, "reason": "Completed", "startedAt": since,
                            "finishedAt": now_rfc3339(), "containerID": id,
                        }}));
                        c.restart_count += 1;
                    }
                    c.resize_at = None;
                    self.begin(c, now);
                }
                Stage::Running { .. } => c.resize_at = Some(now + self.delays.start),
                // Not running: the new resources apply when it (re)starts.
                _ => {}
            }
        }
    }

    /// The node's runtime.
    pub fn runtime(&self) -> &Arc<dyn ContainerRuntime> {
        &self.runtime
    }

    /// Forgets pods whose UIDs are not in `live`, removing their containers.
    pub fn retain(&mut self, live: &std::collections::HashSet<String>) {
        let gone: Vec<String> = self.pods.keys().filter(|u| !live.contains(*u)).cloned().collect();
        for uid in gone {
            self.pods.remove(&uid);
            for c in self.runtime.list_containers(Some(&uid)) {
                let _ = self.runtime.remove_container(&c.id);
            }
        }
    }

    /// Whether the kubelet knows this pod.
    pub fn knows(&self, uid: &str) -> bool {
        self.pods.contains_key(uid)
    }

    fn begin(&self, c: &mut Ctr, now: Instant) {
        let present = self.runtime.image_status(&c.image).is_some();
        c.stage = if present && !c.pull_always {
            Stage::Creating(now + self.delays.start)
        } else {
            Stage::Pulling(now + self.delays.pull)
        };
    }

    /// Advances one container's timers; true when something changed.
    fn advance(&self, pod: &PodCtx<'_>, c: &mut Ctr, now: Instant) -> bool {
        if let Some(t) = c.resize_at
            && now >= t
        {
            c.actual = c.allocated.clone();
            c.resize_at = None;
            return true;
        }
        if self.exited_outside(c, now) {
            return true;
        }
        match c.stage.clone() {
            Stage::Pulling(t) if now >= t => {
                match self.runtime.pull_image(&c.image) {
                    Ok(id) => {
                        c.image_id = id;
                        c.pull_backoff = None;
                        c.stage = Stage::Creating(now + self.delays.start);
                    }
                    Err(e) => self.pull_failed(c, e.to_string(), now),
                }
                true
            }
            Stage::PullFailed { until, .. } if now >= until => {
                c.stage = Stage::Pulling(now + self.delays.pull);
                true
            }
            Stage::Creating(t) if now >= t => self.create(pod, c, now),
            Stage::ConfigError { .. } => self.create(pod, c, now),
            Stage::Running { since, started, ends: Some((at, code)), .. } if now >= at => {
                if let Some(id) = &c.container_id {
                    let _ = self.runtime.stop_container(id, code);
                }
                c.stage = Stage::Exited {
                    code,
                    reason: if code == 0 { "Completed" } else { "Error" },
                    started: Some(since),
                    finished: now_rfc3339(),
                };
                // A container that ran for twice the longest back-off starts afresh.
                if now.duration_since(started) >= self.delays.restart_backoff * 60 {
                    c.backoff = None;
                }
                true
            }
            Stage::BackOff { until, .. } if now >= until => {
                c.restart_count += 1;
                self.begin(c, now);
                true
            }
            Stage::Stopping { since, until, code } if now >= until => {
                if let Some(id) = &c.container_id {
                    let _ = self.runtime.stop_container(id, code);
                }
                c.stage = Stage::Exited {
                    code,
                    reason: if code == 0 { "Completed" } else { "Error" },
                    started: Some(since),
                    finished: now_rfc3339(),
                };
                true
            }
            _ => false,
        }
    }

    /// A failed pull of `c`'s image, as the kubelet's image manager has it: the container
    /// waits in `ErrImagePull` with the runtime's error; the pod worker's next sync (after
    /// [`CONFIG_RETRY`], the failed-sync retry) finds the image in back-off, `ImagePullBackOff`;
    /// once the back-off (the first crash back-off, 10 s, doubling to 30 times that: the
    /// kubelet's 10 s to 5 min) has passed since the failure, it pulls again.
    fn pull_failed(&self, c: &mut Ctr, error: String, now: Instant) {
        let backoff = match c.pull_backoff {
            None => self.delays.restart_backoff,
            Some(b) => (b * 2).min(self.delays.restart_backoff * 30),
        };
        c.pull_backoff = Some(backoff);
        c.stage = Stage::PullFailed { error, backoff_at: now + CONFIG_RETRY, until: now + backoff };
    }

    /// Generates the container's config, then creates and starts it: the kubelet's
    /// `startContainer` once the image is there. The environment is made now, from the pod as
    /// it is now, and goes with the container into the runtime (a later change to a label the
    /// environment reads shows only in the next container). A ConfigMap or Secret its
    /// environment needs and cannot have (or a reference the kubelet cannot resolve) leaves it
    /// in `CreateContainerConfigError`, to be tried again on a later sync. True when something
    /// changed.
    fn create(&self, pod: &PodCtx<'_>, c: &mut Ctr, now: Instant) -> bool {
        let env = match self.make_env(pod, c) {
            Ok(env) => {
                c.cache_wait = None;
                env
            }
            Err(EnvError::Failed(message)) => {
                c.cache_wait = None;
                return Self::config_error(c, message, now);
            }
            Err(EnvError::NotSynced(kind)) => {
                let since = *c.cache_wait.get_or_insert(now);
                if now.duration_since(since) < CACHE_SYNC_TIMEOUT {
                    // Look again shortly, in whatever state it shows now.
                    match &mut c.stage {
                        Stage::ConfigError { retry, .. } => *retry = now + CACHE_SYNC_POLL,
                        stage => *stage = Stage::Creating(now + CACHE_SYNC_POLL),
                    }
                    return false;
                }
                let message = format!(
                    "failed to sync {} cache: timed out waiting for the condition",
                    kind.resource()
                );
                return Self::config_error(c, message, now);
            }
        };
        let mut meta = c.cri.for_attempt(c.restart_count);
        meta.env = env;
        meta.hostname = sandbox_hostname(pod.pod);
        let id = self
            .runtime
            .create_container(pod.uid, &c.name, &c.image, meta)
            .and_then(|id| self.runtime.start_container(&id).map(|()| id));
        match id {
            Ok(id) => {
                if let Some(info) = self.runtime.container_status(&id) {
                    c.image_id = info.image_id;
                }
                c.container_id = Some(id);
                c.actual = c.allocated.clone();
                c.resize_at = None;
                let ready_at = if c.probe { now + self.delays.ready } else { now };
                let ends = match c.ending {
                    Ending::Never => None,
                    Ending::After { after, code } => Some((now + after, code)),
                };
                c.stage = Stage::Running { since: now_rfc3339(), started: now, ready_at, ends };
            }
            Err(_) => c.stage = Stage::Pulling(now + self.delays.pull),
        }
        true
    }

    /// The PLEG's part: a running container that the runtime shows exited (stopped by someone
    /// else, e.g. kruise-daemon recreating it) becomes exited with the runtime's exit code.
    fn exited_outside(&self, c: &mut Ctr, now: Instant) -> bool {
        let Stage::Running { since, started, .. } = &c.stage else { return false };
        let Some(id) = &c.container_id else { return false };
        let Some(ContainerState::Exited(code)) = self.runtime.container_state(id) else {
            return false;
        };
        if now.duration_since(*started) >= self.delays.restart_backoff * 60 {
            c.backoff = None;
        }
        c.stage = Stage::Exited {
            code,
            reason: if code == 0 { "Completed" } else { "Error" },
            started: Some(since.clone()),
            finished: now_rfc3339(),
        };
        true
    }

    /// Restarts an exited container that its restart policy brings back: at once the first
    /// time, then after a back-off that doubles up to 30 times the first (CrashLoopBackOff
    /// meanwhile). True when something changed.
    fn restart_if_due(&self, c: &mut Ctr, pod_ref: &str, now: Instant) -> bool {
        let Some(code) = c.exited() else { return false };
        let due = match c.restart {
            Restart::Always => true,
            Restart::OnFailure => code != 0,
            Restart::Never => false,
        };
        if !due {
            return false;
        }
        let finished = match &c.stage {
            Stage::Exited { finished, .. } => finished.clone(),
            _ => now_rfc3339(),
        };
        let started = match &c.stage {
            Stage::Exited { started, .. } => started.clone(),
            _ => None,
        };
        let mut last = json!({"exitCode": code, "reason": if code == 0 { "Completed" } else { "Error" },
            "startedAt": started, "finishedAt": finished});
        if let Some(id) = &c.container_id {
            last["containerID"] = json!(id);
        }
        c.last = Some(json!({ "terminated": last }));
        match c.backoff {
            None => {
                c.backoff = Some(self.delays.restart_backoff);
                c.restart_count += 1;
                self.begin(c, now);
            }
            Some(backoff) => {
                let cap = self.delays.restart_backoff * 30;
                c.backoff = Some((backoff * 2).min(cap));
                let message = format!(
                    "back-off {} restarting failed container={} pod={pod_ref}",
                    go_duration(backoff),
                    c.name
                );
                c.stage = Stage::BackOff { until: now + backoff, message };
            }
        }
        true
    }

    /// Syncs one pod bound to this node.
    pub fn sync(&mut self, pod: &Pod, now: Instant) -> SyncResult {
        let uid = pod_uid(pod).to_string();
        let Some(spec) = pod.spec.as_ref() else { return SyncResult::default() };
        let terminating = pod.metadata.deletion_timestamp.is_some();
        if !self.pods.contains_key(&uid) {
            // A pod that finished before this kubelet knew it (a restarted node) never runs
            // again; a deleted one goes.
            let phase = pod.status.as_ref().and_then(|s| s.phase.as_deref());
            if matches!(phase, Some("Succeeded" | "Failed")) {
                return SyncResult { delete: terminating, ..SyncResult::default() };
            }
            self.next_ip = self.next_ip % 250 + 1;
            let restart = match spec.restart_policy.as_deref() {
                Some("Never") => Restart::Never,
                Some("OnFailure") => Restart::OnFailure,
                _ => Restart::Always,
            };
            let d = &self.delays;
            let st = PodState {
                ip: format!("{}.{}", self.pod_cidr_prefix, self.next_ip + 1),
                start_time: now_rfc3339(),
                init: spec
                    .init_containers
                    .iter()
                    .flatten()
                    .map(|c| Ctr::new(c, true, restart, d).in_pod(pod, c))
                    .collect(),
                main: spec
                    .containers
                    .iter()
                    .map(|c| Ctr::new(c, false, restart, d).in_pod(pod, c))
                    .collect(),
                restart,
                ephemeral: Vec::new(),
                conds: BTreeMap::new(),
                delete_sent: false,
                resize_pending: None,
                resize_progress: None,
                resize_seen: false,
                finishing: false,
                finished: None,
            };
            self.register(st.init.iter().chain(st.main.iter()));
            self.pods.insert(uid.clone(), st);
        }
        let Some(mut st) = self.pods.remove(&uid) else { return SyncResult::default() };
        if terminating {
            let grace = pod
                .metadata
                .deletion_grace_period_seconds
                .or(spec.termination_grace_period_seconds)
                .unwrap_or(30)
                .max(0);
            let stop = self.delays.stop.min(Duration::from_secs(grace as u64));
            for c in st.init.iter_mut().chain(st.main.iter_mut()).chain(st.ephemeral.iter_mut()) {
                match &c.stage {
                    Stage::Running { since, .. } => {
                        // A server (a command that runs until stopped) exits cleanly; a
                        // program killed before it ends fails (SIGKILL's 137).
                        let code = if c.ending == Ending::Never { 0 } else { 137 };
                        c.stage = Stage::Stopping { since: since.clone(), until: now + stop, code };
                    }
                    Stage::NotStarted
                    | Stage::Pulling(_)
                    | Stage::PullFailed { .. }
                    | Stage::Creating(_)
                    | Stage::BackOff { .. }
                    | Stage::ConfigError { .. } => {
                        // Never ran (or not now): the kubelet reports what it could not
                        // find, as the real one does for a pod deleted before it ran.
                        c.stage = Stage::Exited {
                            code: 137,
                            reason: "ContainerStatusUnknown",
                            started: None,
                            finished: now_rfc3339(),
                        };
                    }
                    _ => {}
                }
            }
            let ip = st.ip.clone();
            let ctx = PodCtx { pod, uid: &uid, ip: &ip };
            for c in st.init.iter_mut().chain(st.main.iter_mut()).chain(st.ephemeral.iter_mut()) {
                self.advance(&ctx, c, now);
            }
        } else {
            // In-place update: a changed image restarts only that container.
            let specs: HashMap<&str, &Container> = spec
                .containers
                .iter()
                .chain(
                    spec.init_containers
                        .iter()
                        .flatten()
                        .filter(|c| c.restart_policy.as_deref() == Some("Always")),
                )
                .map(|c| (c.name.as_str(), c))
                .collect();
            for c in st.main.iter_mut().chain(st.init.iter_mut().filter(|c| c.sidecar)) {
                let Some(want) = specs.get(c.name.as_str()).and_then(|s| s.image.clone()) else {
                    continue;
                };
                if want == c.image || matches!(c.stage, Stage::NotStarted) {
                    c.image = want;
                    continue;
                }
                if let Some(id) = c.container_id.take() {
                    let _ = self.runtime.stop_container(&id, 0);
                    let started = match &c.stage {
                        Stage::Running { since, .. } | Stage::Stopping { since, .. } => {
                            Some(since.clone())
                        }
                        _ => None,
                    };
                    c.last = Some(json!({"terminated": {
                        "exitCode": 0, "reason": "Completed", "startedAt": started,
                        "finishedAt": now_rfc3339(), "containerID": id,
                    }}));
                    c.restart_count += 1;
                }
                c.image = want;
                c.resize_at = None;
                // The image manager's back-off is per pod and image.
                c.pull_backoff = None;
                if let Some(spec) = specs.get(c.name.as_str()) {
                    c.cri = CriMeta::of(pod, spec);
                }
                self.begin(c, now);
            }
            self.resize(pod, &uid, &mut st, &specs, now);
            let pod_ref = format!(
                "{}_{}({uid})",
                pod.metadata.name.as_deref().unwrap_or_default(),
                pod.metadata.namespace.as_deref().unwrap_or_default()
            );
            self.run_containers(pod, &pod_ref, &mut st, now);
            self.run_ephemeral(pod, spec, &mut st, now);
        }
        let status = self.status(pod, &mut st, now, terminating);
        let all_stopped =
            st.init.iter().chain(st.main.iter()).chain(st.ephemeral.iter()).all(|c| {
                !c.running() && !matches!(c.stage, Stage::Pulling(_) | Stage::Creating(_))
            });
        let delete = terminating && all_stopped && !st.delete_sent;
        if delete {
            st.delete_sent = true;
        }
        let wake = st
            .init
            .iter()
            .chain(st.main.iter())
            .chain(st.ephemeral.iter())
            .filter_map(|c| c.wake(now))
            .min();
        self.pods.insert(uid, st);
        SyncResult { status: Some(status), delete, wake }
    }

    /// Starts, advances and restarts the containers of a live pod, in order: init containers
    /// one after another (a native sidecar counts once started), then the regular ones. When
    /// the regular containers are done for good, stops the sidecars and finishes the pod.
    fn run_containers(&self, pod: &Pod, pod_ref: &str, st: &mut PodState, now: Instant) {
        if st.finished.is_some() {
            return;
        }
        let ip = st.ip.clone();
        let ctx = PodCtx { pod, uid: pod_uid(pod), ip: &ip };
        for _ in 0..(2 * (st.init.len() + st.main.len()) + 4) {
            let mut changed = false;
            if st.finishing {
                for c in st.init.iter_mut().chain(st.main.iter_mut()) {
                    changed |= self.advance(&ctx, c, now);
                }
            } else {
                let mut init_done = true;
                for i in 0..st.init.len() {
                    let mut c = st.init[i].clone();
                    if matches!(c.stage, Stage::NotStarted) {
                        self.begin(&mut c, now);
                        changed = true;
                    }
                    changed |= self.advance(&ctx, &mut c, now);
                    changed |= self.restart_if_due(&mut c, pod_ref, now);
                    let ok = c.init_satisfied();
                    st.init[i] = c;
                    if !ok {
                        init_done = false;
                        break;
                    }
                }
                if init_done {
                    for i in 0..st.main.len() {
                        let mut c = st.main[i].clone();
                        if matches!(c.stage, Stage::NotStarted) {
                            self.begin(&mut c, now);
                            changed = true;
                        }
                        changed |= self.advance(&ctx, &mut c, now);
                        changed |= self.restart_if_due(&mut c, pod_ref, now);
                        st.main[i] = c;
                    }
                }
                if done_for_good(st) {
                    st.finishing = true;
                    changed = true;
                    let stop = self.delays.stop;
                    for c in st.init.iter_mut().filter(|c| c.sidecar) {
                        c.stage = match std::mem::replace(&mut c.stage, Stage::NotStarted) {
                            Stage::Running { since, .. } => {
                                Stage::Stopping { since, until: now + stop, code: 0 }
                            }
                            stopping @ Stage::Stopping { .. } => stopping,
                            exited @ Stage::Exited { .. } => exited,
                            _ => Stage::Exited {
                                code: 0,
                                reason: "Completed",
                                started: None,
                                finished: now_rfc3339(),
                            },
                        };
                    }
                }
            }
            if !changed {
                break;
            }
        }
        let sidecars_stopped = st.init.iter().filter(|c| c.sidecar).all(|c| !c.running());
        if st.finishing && sidecars_stopped {
            let failed = st.init.iter().any(|c| !c.sidecar && c.exited().is_some_and(|x| x != 0))
                || st.main.iter().any(|c| c.exited().is_some_and(|x| x != 0));
            st.finished = Some(if failed { "Failed" } else { "Succeeded" });
        }
    }

    /// Starts the ephemeral containers added to a running pod (`kubectl debug`) and advances
    /// them; they are never restarted, and count for neither readiness nor the phase.
    fn run_ephemeral(
        &self,
        pod: &Pod,
        spec: &k8s_openapi::api::core::v1::PodSpec,
        st: &mut PodState,
        now: Instant,
    ) {
        for e in spec.ephemeral_containers.iter().flatten() {
            if st.ephemeral.iter().any(|c| c.name == e.name) {
                continue;
            }
            // The same fields as a container, plus a target the simulator does not need.
            let Ok(container) =
                serde_json::to_value(e).and_then(serde_json::from_value::<Container>)
            else {
                continue;
            };
            let mut c =
                Ctr::new(&container, false, Restart::Always, &self.delays).in_pod(pod, &container);
            c.restart = Restart::Never;
            self.register([&c]);
            st.ephemeral.push(c);
        }
        let running = st.finished.is_none() && !st.finishing;
        let ctx = PodCtx { pod, uid: pod_uid(pod), ip: &st.ip };
        for c in &mut st.ephemeral {
            if running && matches!(c.stage, Stage::NotStarted) {
                self.begin(c, now);
            }
            for _ in 0..4 {
                if !self.advance(&ctx, c, now) {
                    break;
                }
            }
        }
    }

    /// Marks that the delete request failed, so the next sync asks again.
    pub fn delete_failed(&mut self, uid: &str) {
        if let Some(st) = self.pods.get_mut(uid) {
            st.delete_sent = false;
        }
    }

    fn status(&self, pod: &Pod, st: &mut PodState, now: Instant, terminating: bool) -> Value {
        let spec = pod.spec.as_ref();
        let existing = pod.status.as_ref().and_then(|s| s.conditions.clone()).unwrap_or_default();
        let init_pending: Vec<&str> =
            st.init.iter().filter(|c| !c.init_satisfied()).map(|c| c.name.as_str()).collect();
        let initialized = init_pending.is_empty();
        let unready: Vec<&str> = st
            .main
            .iter()
            .chain(st.init.iter().filter(|c| c.sidecar))
            .filter(|c| !c.ready(now) || terminating)
            .map(|c| c.name.as_str())
            .collect();
        let containers_ready = unready.is_empty();
        let mut gate_msg = None;
        for g in spec.and_then(|s| s.readiness_gates.as_ref()).into_iter().flatten() {
            match existing.iter().find(|c| c.type_ == g.condition_type) {
                None => {
                    gate_msg = Some(format!(
                        "corresponding condition of pod readiness gate \"{}\" does not exist.",
                        g.condition_type
                    ));
                    break;
                }
                Some(c) if c.status != "True" => {
                    gate_msg = Some(format!(
                        "the status of pod readiness gate \"{}\" is not \"True\", but {}",
                        g.condition_type, c.status
                    ));
                    break;
                }
                _ => {}
            }
        }
        let ready = containers_ready && gate_msg.is_none();
        let exited_before = all_exited(st);
        let mut cond = |t: &'static str, ok: bool| -> String {
            let e = st.conds.entry(t).or_insert_with(|| (ok, now_rfc3339()));
            if e.0 != ok {
                *e = (ok, now_rfc3339());
            }
            e.1.clone()
        };
        let sched_time = existing
            .iter()
            .find(|c| c.type_ == "PodScheduled" && c.status == "True")
            .and_then(|c| c.last_transition_time.as_ref())
            .map(|t| t.0.to_string())
            .unwrap_or_else(now_rfc3339);
        let b = |ok: bool| if ok { "True" } else { "False" };
        let exited = exited_before;
        // A finished pod's sandbox is gone, as is a deleted one's once its containers stopped.
        let sandbox = (!terminating || !exited) && st.finished.is_none();
        let mut conditions = vec![
            json!({"type": "PodReadyToStartContainers", "status": b(sandbox), "lastProbeTime": null, "lastTransitionTime": cond("PodReadyToStartContainers", sandbox)}),
        ];
        let mut c_init = json!({"type": "Initialized", "status": b(initialized), "lastProbeTime": null, "lastTransitionTime": cond("Initialized", initialized)});
        if !initialized {
            c_init["reason"] = json!("ContainersNotInitialized");
            c_init["message"] =
                json!(format!("containers with incomplete status: [{}]", init_pending.join(" ")));
        }
        if initialized && st.finished == Some("Succeeded") {
            c_init["reason"] = json!("PodCompleted");
        }
        conditions.push(c_init);
        let mut c_cr = json!({"type": "ContainersReady", "status": b(containers_ready), "lastProbeTime": null, "lastTransitionTime": cond("ContainersReady", containers_ready)});
        let mut c_ready = json!({"type": "Ready", "status": b(ready), "lastProbeTime": null, "lastTransitionTime": cond("Ready", ready)});
        if let Some(finished) = st.finished {
            let reason = if finished == "Succeeded" { "PodCompleted" } else { "PodFailed" };
            c_cr["reason"] = json!(reason);
            c_ready["reason"] = json!(reason);
        } else if !containers_ready {
            let msg = format!("containers with unready status: [{}]", unready.join(" "));
            c_cr["reason"] = json!("ContainersNotReady");
            c_cr["message"] = json!(msg.clone());
            c_ready["reason"] = json!("ContainersNotReady");
            c_ready["message"] = json!(msg);
        } else if let Some(m) = &gate_msg {
            c_ready["reason"] = json!("ReadinessGatesNotReady");
            c_ready["message"] = json!(m);
        }
        conditions.push(c_cr);
        conditions.push(c_ready);
        conditions.push(json!({"type": "PodScheduled", "status": "True", "lastProbeTime": null, "lastTransitionTime": sched_time}));
        conditions.extend(resize_conditions(st, terminating));
        // The status goes out as a strategic merge patch: a condition that no longer has a
        // reason or message must say so, or the old ones stay (the real kubelet's patch
        // carries the same nulls).
        // The 1.34+ kubelet says which generation of the pod each condition it writes (and
        // the status as a whole) reflects.
        let generation = pod.metadata.generation.filter(|g| *g > 0);
        for c in &mut conditions {
            if let Value::Object(c) = c {
                c.entry("reason").or_insert(Value::Null);
                c.entry("message").or_insert(Value::Null);
                if let Some(g) = generation {
                    c.insert("observedGeneration".into(), json!(g));
                }
            }
        }
        let phase = if let Some(finished) = st.finished {
            finished
        } else if terminating && all_exited(st) {
            if st.main.iter().all(|c| c.exited() == Some(0)) { "Succeeded" } else { "Failed" }
        } else if initialized
            // As the kubelet's getPhase: a regular container that has never run and waits to
            // start (being created, its image failing to pull, or in CreateContainerConfigError)
            // keeps the pod Pending.
            && !st.main.iter().any(|c| {
                c.last.is_none()
                    && matches!(
                        c.stage,
                        Stage::NotStarted
                            | Stage::Pulling(_)
                            | Stage::PullFailed { .. }
                            | Stage::Creating(_)
                            | Stage::ConfigError { .. }
                    )
            })
            && st
                .main
                .iter()
                .any(|c| c.running() || c.container_id.is_some() || c.restart_count > 0)
        {
            "Running"
        } else {
            "Pending"
        };
        // Pods are not allowed to move out of a terminal phase: one the API server holds, set
        // by another writer (the sidecar terminator, say), stays, as the kubelet's
        // generateAPIPodStatus forces it back.
        let phase = match pod.status.as_ref().and_then(|s| s.phase.as_deref()) {
            Some(held @ ("Succeeded" | "Failed")) => held,
            _ => phase,
        };
        let mut status = json!({
            "phase": phase,
            "conditions": conditions,
            "hostIP": self.node_ip,
            "hostIPs": [{"ip": self.node_ip}],
            "podIP": st.ip,
            "podIPs": [{"ip": st.ip}],
            "startTime": st.start_time,
            "qosClass": qos_class(pod),
            "containerStatuses": st.main.iter().map(|c| ctr_status(c, now, initialized, terminating)).collect::<Vec<_>>(),
        });
        if let Some(g) = generation {
            status["observedGeneration"] = json!(g);
        }
        if !st.ephemeral.is_empty() {
            status["ephemeralContainerStatuses"] = json!(
                st.ephemeral
                    .iter()
                    .map(|c| ctr_status(c, now, true, terminating))
                    .collect::<Vec<_>>()
            );
        }
        if !st.init.is_empty() {
            status["initContainerStatuses"] = json!(
                st.init.iter().map(|c| ctr_status(c, now, false, terminating)).collect::<Vec<_>>()
            );
        }
        let _ = &self.node;
        json!({"status": status})
    }
}

/// `PodResizePending` and `PodResizeInProgress` as the 1.33+ kubelet sets them; once either
/// was written, an absent one is sent as a strategic-merge delete so that it is cleared.
fn resize_conditions(st: &mut PodState, terminating: bool) -> Vec<Value> {
    let mut out = Vec::new();
    let pending = if terminating { None } else { st.resize_pending.clone() };
    match pending {
        Some((reason, message, at)) => out.push(json!({
            "type": "PodResizePending", "status": "True", "reason": reason, "message": message,
            "lastProbeTime": null, "lastTransitionTime": at,
        })),
        None if st.resize_seen => out.push(json!({"type": "PodResizePending", "$patch": "delete"})),
        None => {}
    }
    let in_progress =
        !terminating && st.main.iter().chain(st.init.iter()).any(|c| c.resize_at.is_some());
    if in_progress {
        let at = st.resize_progress.get_or_insert_with(now_rfc3339).clone();
        out.push(json!({
            "type": "PodResizeInProgress", "status": "True",
            "lastProbeTime": null, "lastTransitionTime": at,
        }));
    } else {
        st.resize_progress = None;
        if st.resize_seen {
            out.push(json!({"type": "PodResizeInProgress", "$patch": "delete"}));
        }
    }
    if out.iter().any(|c| c["status"] == "True") {
        st.resize_seen = true;
    }
    out
}

/// Whether a live pod's regular containers are done for good: all exited and not to be
/// restarted (`Never`: whatever their codes; `OnFailure`: all with 0), or a regular init
/// container failed in a pod that never restarts.
fn done_for_good(st: &PodState) -> bool {
    let init_failed = st.restart == Restart::Never
        && st.init.iter().any(|c| !c.sidecar && c.exited().is_some_and(|x| x != 0));
    let mains_done = match st.restart {
        Restart::Always => false,
        Restart::Never => st.main.iter().all(|c| c.exited().is_some()),
        Restart::OnFailure => st.main.iter().all(|c| c.exited() == Some(0)),
    };
    init_failed || mains_done
}

/// A duration as Go prints it in kubelet messages (`10s`, `1m20s`, `5m0s`, `500ms`).
fn go_duration(d: Duration) -> String {
    let ms = d.as_millis();
    if ms < 1000 {
        return format!("{ms}ms");
    }
    let secs = d.as_secs_f64();
    let (h, m) = (d.as_secs() / 3600, d.as_secs() / 60 % 60);
    let s = secs - (d.as_secs() / 60 * 60) as f64;
    let s = if s.fract() == 0.0 { format!("{}s", s as u64) } else { format!("{s}s") };
    match (h, m) {
        (0, 0) => s,
        (0, m) => format!("{m}m{s}"),
        (h, m) => format!("{h}h{m}m{s}"),
    }
}

fn all_exited(st: &PodState) -> bool {
    st.init.iter().chain(st.main.iter()).all(|c| matches!(c.stage, Stage::Exited { .. }))
}

fn ctr_status(c: &Ctr, now: Instant, initialized: bool, terminating: bool) -> Value {
    let state = match &c.stage {
        Stage::NotStarted => {
            json!({"waiting": {"reason": if initialized { "ContainerCreating" } else { "PodInitializing" }}})
        }
        Stage::Pulling(_) | Stage::Creating(_) => {
            json!({"waiting": {"reason": "ContainerCreating"}})
        }
        Stage::BackOff { message, .. } => {
            json!({"waiting": {"reason": "CrashLoopBackOff", "message": message}})
        }
        Stage::PullFailed { error, backoff_at, .. } if now < *backoff_at => {
            json!({"waiting": {"reason": "ErrImagePull", "message": error}})
        }
        // The image manager's message: the back-off, then the error of the pull that failed.
        Stage::PullFailed { error, .. } => json!({"waiting": {
            "reason": "ImagePullBackOff",
            "message": format!("Back-off pulling image {:?}: ErrImagePull: {error}", c.image),
        }}),
        Stage::ConfigError { message, .. } => {
            json!({"waiting": {"reason": "CreateContainerConfigError", "message": message}})
        }
        Stage::Running { since, .. } | Stage::Stopping { since, .. } => {
            json!({"running": {"startedAt": since}})
        }
        Stage::Exited { code, reason, started, finished } => {
            let mut t = json!({"exitCode": code, "reason": reason, "finishedAt": finished});
            if let Some(s) = started {
                t["startedAt"] = json!(s);
            }
            if let Some(id) = &c.container_id {
                t["containerID"] = json!(id);
            }
            json!({"terminated": t})
        }
    };
    let mut v = json!({
        "name": c.name,
        "image": c.image,
        "imageID": c.image_id,
        "ready": c.ready(now) && !terminating,
        "started": c.running(),
        "restartCount": c.restart_count,
        "state": state,
        "lastState": c.last.clone().unwrap_or_else(|| json!({})),
    });
    if let Some(id) = &c.container_id {
        v["containerID"] = json!(id);
    }
    if !c.allocated.requests.is_empty() {
        v["allocatedResources"] = json!(c.allocated.requests);
    }
    if !c.actual.is_empty() {
        v["resources"] = c.actual.to_json();
    }
    v
}

pub(crate) fn qos_class(pod: &Pod) -> &'static str {
    let Some(spec) = pod.spec.as_ref() else { return "BestEffort" };
    let all: Vec<&Container> =
        spec.containers.iter().chain(spec.init_containers.iter().flatten()).collect();
    let mut any = false;
    let mut guaranteed = true;
    for c in &all {
        let r = c.resources.as_ref();
        let req = r.and_then(|r| r.requests.clone()).unwrap_or_default();
        let lim = r.and_then(|r| r.limits.clone()).unwrap_or_default();
        if !req.is_empty() || !lim.is_empty() {
            any = true;
        }
        for k in ["cpu", "memory"] {
            match (req.get(k).or(lim.get(k)), lim.get(k)) {
                (Some(a), Some(b)) if a == b => {}
                _ => guaranteed = false,
            }
        }
    }
    if !any {
        "BestEffort"
    } else if guaranteed {
        "Guaranteed"
    } else {
        "Burstable"
    }
}

#[cfg(test)]
mod tests {
    use super::super::objects::testing::MapObjects;
    use super::super::runtime::FakeRuntime;
    use super::*;

    fn pod(spec: Value) -> Pod {
        serde_json::from_value(
            json!({"metadata": {"name": "p", "namespace": "default", "uid": "u1"}, "spec": spec}),
        )
        .expect("pod")
    }

    fn kubelet() -> Kubelet {
        Kubelet::new(
            "n1",
            "10.0.0.1",
            "10.244.0",
            Arc::new(FakeRuntime::new("n1")),
            Delays::default(),
        )
    }

    fn run_until_settled(k: &mut Kubelet, p: &Pod, mut now: Instant) -> (Value, Instant) {
        loop {
            let r = k.sync(p, now);
            match r.wake {
                Some(w) => now = w,
                None => return (r.status.expect("status"), now),
            }
        }
    }

    #[test]
    fn a_container_stopped_outside_is_seen_exited_and_restarted() {
        use kruise_api::well_known::kubernetes::cri;
        let mut k = kubelet();
        let p = pod(
            json!({"containers": [{"name": "app", "image": "nginx:1"}, {"name": "side", "image": "redis"}]}),
        );
        let (s, t1) = run_until_settled(&mut k, &p, Instant::now());
        assert_eq!(s["status"]["phase"], "Running");
        let rt = k.runtime().clone();
        let app = rt
            .list_containers(Some("u1"))
            .into_iter()
            .find(|c| c.name == "app")
            .expect("app container");
        assert_eq!(app.meta.attempt, 0);
        assert_eq!(app.meta.labels[cri::POD_NAME], "p");
        assert_eq!(app.meta.labels[cri::POD_NAMESPACE], "default");
        assert_eq!(app.meta.labels[cri::CONTAINER_NAME], "app");
        assert!(!app.meta.annotations[cri::CONTAINER_HASH].is_empty());

        rt.stop_container(&app.id, 143).expect("stop");
        let (s, _) = run_until_settled(&mut k, &p, t1);
        let statuses = &s["status"]["containerStatuses"];
        assert_eq!(statuses[0]["restartCount"], 1, "{s}");
        assert_eq!(statuses[0]["lastState"]["terminated"]["exitCode"], 143);
        assert!(statuses[0]["state"]["running"].is_object());
        assert_eq!(statuses[1]["restartCount"], 0);
        let newest = rt
            .list_containers(Some("u1"))
            .into_iter()
            .filter(|c| c.name == "app")
            .max_by_key(|c| c.meta.attempt)
            .expect("app container");
        assert_eq!(newest.meta.attempt, 1);
        assert_ne!(newest.id, app.id);
        assert_eq!(statuses[0]["containerID"], newest.id.as_str());
    }

    /// The newest container of `name` in pod `u1`.
    fn newest(k: &Kubelet, name: &str) -> super::super::runtime::ContainerInfo {
        k.runtime()
            .list_containers(Some("u1"))
            .into_iter()
            .filter(|c| c.name == name)
            .max_by_key(|c| c.meta.attempt)
            .expect("container")
    }

    fn pairs(v: &[(&str, &str)]) -> Vec<(String, String)> {
        v.iter().map(|(k, v)| ((*k).to_owned(), (*v).to_owned())).collect()
    }

    #[test]
    fn the_environment_is_made_at_creation_and_kept_by_the_container() {
        let mut k = kubelet();
        let mut p = pod(json!({"containers": [{"name": "app", "image": "nginx", "env": [
            {"name": "APP_VERSION", "valueFrom": {"fieldRef": {"fieldPath": "metadata.labels['version']"}}},
            {"name": "POD_IP", "valueFrom": {"fieldRef": {"fieldPath": "status.podIP"}}},
            {"name": "HOST_IP", "valueFrom": {"fieldRef": {"fieldPath": "status.hostIP"}}},
            {"name": "PATH", "value": "/app/bin:$(PATH)"}
        ]}]}));
        p.metadata.labels = Some([("version".to_owned(), "v1".to_owned())].into());
        let (s, t) = run_until_settled(&mut k, &p, Instant::now());
        let ip = s["status"]["podIP"].as_str().expect("pod IP").to_owned();
        let first = newest(&k, "app");
        // What the kubelet handed over; PATH is not one of its variables, so its reference
        // stays (the runtime's PATH is not the kubelet's to expand).
        let made = [
            ("APP_VERSION", "v1"),
            ("POD_IP", ip.as_str()),
            ("HOST_IP", "10.0.0.1"),
            ("PATH", "/app/bin:$(PATH)"),
        ];
        assert_eq!(first.meta.env, pairs(&made));
        assert_eq!(first.meta.hostname, "p");
        // What its processes see: the runtime's PATH replaced in place, HOSTNAME, HOME.
        assert_eq!(
            first.env,
            pairs(&[
                ("PATH", "/app/bin:$(PATH)"),
                ("HOSTNAME", "p"),
                ("APP_VERSION", "v1"),
                ("POD_IP", ip.as_str()),
                ("HOST_IP", "10.0.0.1"),
                ("HOME", "/root"),
            ])
        );

        // A new label value does not reach the running container.
        p.metadata.labels = Some([("version".to_owned(), "v2".to_owned())].into());
        let (_, t) = run_until_settled(&mut k, &p, t);
        let same = newest(&k, "app");
        assert_eq!(
            (same.id.as_str(), same.env.as_slice()),
            (first.id.as_str(), first.env.as_slice())
        );
        // Its next container gets it.
        k.runtime().stop_container(&first.id, 143).expect("stop");
        run_until_settled(&mut k, &p, t);
        let second = newest(&k, "app");
        assert_eq!(second.meta.attempt, 1);
        assert_ne!(second.id, first.id);
        assert_eq!(second.meta.env[0], ("APP_VERSION".to_owned(), "v2".to_owned()));
        // The old one keeps its own.
        let old = k.runtime().container_status(&first.id).expect("old container");
        assert_eq!(old.meta.env[0], ("APP_VERSION".to_owned(), "v1".to_owned()));
    }

    #[test]
    fn missing_limits_in_the_environment_are_the_nodes_allocatable() {
        let mut k = kubelet().with_allocatable("4", "8Gi");
        let limit = |name: &str, resource: &str, divisor: &str| json!({"name": name, "valueFrom": {"resourceFieldRef": {"resource": resource, "divisor": divisor}}});
        let p = pod(json!({"containers": [{"name": "app", "image": "nginx",
            "resources": {"requests": {"cpu": "100m"}},
            "env": [limit("CPU", "limits.cpu", "1"), limit("MEM", "limits.memory", "1Mi"),
                limit("DISK", "limits.ephemeral-storage", "1Gi"),
                limit("CPU_REQ", "requests.cpu", "1m")]}]}));
        run_until_settled(&mut k, &p, Instant::now());
        assert_eq!(
            newest(&k, "app").meta.env,
            pairs(&[("CPU", "4"), ("MEM", "8192"), ("DISK", "100"), ("CPU_REQ", "100")])
        );
    }

    #[test]
    fn the_hostname_is_the_pods_or_the_nodes() {
        let long = format!("{}-x", "a".repeat(62));
        for (spec, name, want) in [
            (json!({}), "p", "p"),
            (json!({"hostname": "h1", "subdomain": "s"}), "p", "h1"),
            (json!({"hostNetwork": true}), "p", "n1"),
            // Cut to 63 characters, without the trailing `-`.
            (json!({}), long.as_str(), &long[..62]),
        ] {
            let mut k = kubelet();
            let mut spec = spec;
            spec["containers"] = json!([{"name": "app", "image": "nginx"}]);
            let mut p = pod(spec.clone());
            p.metadata.name = Some(name.to_owned());
            run_until_settled(&mut k, &p, Instant::now());
            let c = newest(&k, "app");
            let hostname = c.env.iter().find(|(k, _)| k == "HOSTNAME").map(|(_, v)| v.as_str());
            assert_eq!(hostname, Some(want), "{spec}");
        }
    }

    #[test]
    fn an_unresolvable_field_reference_is_a_config_error() {
        let mut k = kubelet();
        let p = pod(json!({"containers": [{"name": "app", "image": "nginx", "env": [
            {"name": "PHASE", "valueFrom": {"fieldRef": {"fieldPath": "status.phase"}}}]}]}));
        let t0 = Instant::now();
        let s = run_for(&mut k, &p, t0, t0 + Duration::from_secs(2));
        assert_eq!(
            state_of(&s, 0),
            json!({"waiting": {"reason": "CreateContainerConfigError",
                "message": "unsupported fieldPath: status.phase"}})
        );
    }

    #[test]
    fn init_sidecar_main_then_in_place_update() {
        let mut k = kubelet();
        let mut p = pod(json!({
            "initContainers": [
                {"name": "init", "image": "busybox"},
                {"name": "side", "image": "envoy:1", "restartPolicy": "Always"}
            ],
            "containers": [{"name": "app", "image": "nginx:1", "readinessProbe": {"exec": {"command": ["true"]}}}, {"name": "other", "image": "redis"}]
        }));
        let t0 = Instant::now();
        let first = k.sync(&p, t0).status.expect("status");
        assert_eq!(first["status"]["phase"], "Pending");
        assert_eq!(
            first["status"]["initContainerStatuses"][1]["state"]["waiting"]["reason"],
            "PodInitializing"
        );
        let (s, t1) = run_until_settled(&mut k, &p, t0);
        assert_eq!(s["status"]["phase"], "Running");
        let ready = s["status"]["conditions"]
            .as_array()
            .expect("conds")
            .iter()
            .find(|c| c["type"] == "Ready")
            .cloned();
        assert_eq!(ready.expect("ready")["status"], "True");
        assert_eq!(
            s["status"]["initContainerStatuses"][0]["state"]["terminated"]["reason"],
            "Completed"
        );
        let app = s["status"]["containerStatuses"][0].clone();
        let other = s["status"]["containerStatuses"][1].clone();
        // Change app's image: only app restarts.
        if let Some(spec) = p.spec.as_mut() {
            spec.containers[0].image = Some("nginx:2".into());
        }
        let mid = k.sync(&p, t1).status.expect("status");
        assert_eq!(mid["status"]["containerStatuses"][0]["ready"], false);
        let (s2, _) = run_until_settled(&mut k, &p, t1);
        let app2 = &s2["status"]["containerStatuses"][0];
        assert_eq!(app2["restartCount"], 1);
        assert_eq!(app2["image"], "nginx:2");
        assert_ne!(app2["imageID"], app["imageID"]);
        assert_ne!(app2["containerID"], app["containerID"]);
        assert_eq!(app2["lastState"]["terminated"]["containerID"], app["containerID"]);
        assert_eq!(s2["status"]["containerStatuses"][1], other);
    }

    /// Syncs at each wake until `until`, returning the last status.
    fn run_for(k: &mut Kubelet, p: &Pod, mut now: Instant, until: Instant) -> Value {
        let mut last = Value::Null;
        while now <= until {
            let r = k.sync(p, now);
            last = r.status.unwrap_or(last);
            match r.wake {
                Some(w) => now = w,
                None => break,
            }
        }
        last
    }

    fn condition(s: &Value, t: &str) -> Value {
        cond(s, t).unwrap_or(Value::Null)
    }

    #[test]
    fn a_job_pod_that_fails_is_failed_and_one_that_exits_zero_succeeds() {
        let mut k = kubelet();
        let failing = pod(json!({"restartPolicy": "Never", "containers": [
            {"name": "work", "image": "busybox", "command": ["sh", "-c", "sleep 2; exit 3"]}]}));
        let t0 = Instant::now();
        let (s, t) = run_until_settled(&mut k, &failing, t0);
        assert_eq!(s["status"]["phase"], "Failed");
        assert!(t >= t0 + Duration::from_secs(2), "it ran for its sleep");
        let work = &s["status"]["containerStatuses"][0];
        assert_eq!(work["state"]["terminated"]["exitCode"], 3);
        assert_eq!(work["state"]["terminated"]["reason"], "Error");
        assert_eq!(work["restartCount"], 0);
        assert_eq!(condition(&s, "Ready")["status"], "False");
        assert_eq!(condition(&s, "PodReadyToStartContainers")["status"], "False");
        // Nothing runs again.
        assert!(k.sync(&failing, t + Duration::from_secs(60)).wake.is_none());

        let mut k = kubelet();
        let ok = pod(json!({"restartPolicy": "OnFailure", "containers": [
            {"name": "work", "image": "busybox", "command": ["echo", "done"]}]}));
        let (s, _) = run_until_settled(&mut k, &ok, t0);
        assert_eq!(s["status"]["phase"], "Succeeded");
        assert_eq!(condition(&s, "Ready")["reason"], "PodCompleted");
        assert_eq!(
            s["status"]["containerStatuses"][0]["state"]["terminated"]["reason"],
            "Completed"
        );
    }

    #[test]
    fn a_crashing_container_restarts_at_once_then_backs_off() {
        let mut k = kubelet();
        let p = pod(json!({"containers": [
            {"name": "app", "image": "busybox", "command": ["sh", "-c", "sleep 1; exit 1"]}]}));
        let t0 = Instant::now();
        let s = run_for(&mut k, &p, t0, t0 + Duration::from_secs(3));
        let app = &s["status"]["containerStatuses"][0];
        assert_eq!(app["restartCount"], 1);
        assert_eq!(app["state"]["waiting"]["reason"], "CrashLoopBackOff");
        assert_eq!(
            app["state"]["waiting"]["message"],
            "back-off 10s restarting failed container=app pod=p_default(u1)"
        );
        assert_eq!(app["lastState"]["terminated"]["exitCode"], 1);
        assert_eq!(s["status"]["phase"], "Running");
        // 10 s later it runs again; the next back-off is 20 s.
        let s = run_for(&mut k, &p, t0 + Duration::from_secs(3), t0 + Duration::from_secs(16));
        let app = &s["status"]["containerStatuses"][0];
        assert_eq!(app["restartCount"], 2);
        assert_eq!(
            app["state"]["waiting"]["message"],
            "back-off 20s restarting failed container=app pod=p_default(u1)"
        );
    }

    #[test]
    fn a_failed_pull_waits_in_err_image_pull_then_image_pull_back_off() {
        // A reference the runtime cannot pull. Pod validation lets it through (no leading or
        // trailing whitespace), as kube-apiserver's does.
        let mut k = kubelet();
        let p = pod(json!({"restartPolicy": "Never", "containers": [
            {"name": "app", "image": "bad image", "command": ["sleep", "infinity"]}]}));
        let t0 = Instant::now();
        let pulled = t0 + Delays::default().pull;
        let s = run_for(&mut k, &p, t0, pulled);
        let app = &s["status"]["containerStatuses"][0];
        assert_eq!(
            app["state"],
            json!({"waiting": {"reason": "ErrImagePull",
                "message": "invalid image reference \"bad image\""}}),
            "{s}"
        );
        assert_eq!(app["lastState"], json!({}));
        assert_eq!(app["restartCount"], 0);
        assert_eq!(app["ready"], false);
        assert_eq!(app["started"], false);
        assert!(app.get("containerID").is_none(), "{app}");
        // It never ran: the pod stays Pending (not Failed, whatever its restart policy).
        assert_eq!(s["status"]["phase"], "Pending");
        assert_eq!(condition(&s, "Ready")["message"], "containers with unready status: [app]");
        // Then it backs off, 10 s doubling, and pulls again; nothing ever terminates.
        let s = run_for(&mut k, &p, pulled, pulled + Duration::from_secs(5));
        let app = &s["status"]["containerStatuses"][0];
        assert_eq!(
            app["state"],
            json!({"waiting": {"reason": "ImagePullBackOff", "message":
                "Back-off pulling image \"bad image\": ErrImagePull: invalid image reference \"bad image\""}}),
            "{s}"
        );
        assert_eq!(s["status"]["phase"], "Pending");
        let mut now = pulled;
        let mut seen = Vec::new();
        while now <= t0 + Duration::from_secs(120) {
            let r = k.sync(&p, now);
            let s = r.status.expect("status");
            let app = &s["status"]["containerStatuses"][0];
            assert!(app["state"].get("terminated").is_none(), "{s}");
            assert_eq!(app["restartCount"], 0);
            assert_eq!(s["status"]["phase"], "Pending");
            let reason = app["state"]["waiting"]["reason"].as_str().unwrap_or_default().to_owned();
            if seen.last().map(|(r, _): &(String, Instant)| r != &reason).unwrap_or(true) {
                seen.push((reason, now));
            }
            now = r.wake.expect("it keeps trying");
        }
        let pulls: Vec<Instant> =
            seen.iter().filter(|(r, _)| r == "ErrImagePull").map(|(_, t)| *t).collect();
        // Failed pulls 10 s, 20 s, 40 s apart (each plus the pull itself).
        assert_eq!(pulls.len(), 4, "{seen:?}");
        let pull = Delays::default().pull;
        for (i, gap) in [10, 20, 40].into_iter().enumerate() {
            assert_eq!(pulls[i + 1] - pulls[i], Duration::from_secs(gap) + pull, "{seen:?}");
        }
        // A fixed image pulls and starts, with no restart counted.
        let mut fixed = p.clone();
        fixed.spec.as_mut().expect("spec").containers[0].image = Some("nginx:1".into());
        let (s, _) = run_until_settled(&mut k, &fixed, now);
        let app = &s["status"]["containerStatuses"][0];
        assert!(app["state"]["running"].is_object(), "{s}");
        assert_eq!(app["restartCount"], 0);
        assert_eq!(s["status"]["phase"], "Running");
    }

    #[test]
    fn on_failure_restarts_until_it_succeeds_never_restarts_nothing() {
        // OnFailure: a failure restarts in place, so the pod never fails.
        let mut k = kubelet();
        let p = pod(json!({"restartPolicy": "OnFailure", "containers": [
            {"name": "w", "image": "busybox", "command": ["false"]}]}));
        let t0 = Instant::now();
        let s = run_for(&mut k, &p, t0, t0 + Duration::from_secs(40));
        assert_eq!(s["status"]["phase"], "Running");
        assert!(s["status"]["containerStatuses"][0]["restartCount"].as_i64() >= Some(3));
        // A regular init container that fails in a Never pod fails the pod; the app never starts.
        let mut k = kubelet();
        let p = pod(json!({"restartPolicy": "Never",
            "initContainers": [{"name": "setup", "image": "busybox", "command": ["exit", "2"]}],
            "containers": [{"name": "app", "image": "busybox", "command": ["true"]}]}));
        let (s, _) = run_until_settled(&mut k, &p, t0);
        assert_eq!(s["status"]["phase"], "Failed");
        assert_eq!(s["status"]["initContainerStatuses"][0]["state"]["terminated"]["exitCode"], 2);
        assert_eq!(
            s["status"]["containerStatuses"][0]["state"]["waiting"]["reason"],
            "PodInitializing"
        );
    }

    #[test]
    fn native_sidecars_stop_after_the_regular_containers_finish() {
        let mut k = kubelet();
        let p = pod(json!({"restartPolicy": "Never",
            "initContainers": [{"name": "proxy", "image": "envoy", "restartPolicy": "Always"}],
            "containers": [{"name": "job", "image": "busybox", "command": ["sleep", "1"]}]}));
        let t0 = Instant::now();
        let mid = run_for(&mut k, &p, t0, t0 + Duration::from_millis(900));
        assert_eq!(mid["status"]["phase"], "Running");
        assert!(mid["status"]["initContainerStatuses"][0]["state"]["running"].is_object());
        let (s, _) = run_until_settled(&mut k, &p, t0 + Duration::from_millis(900));
        assert_eq!(s["status"]["phase"], "Succeeded");
        let proxy = &s["status"]["initContainerStatuses"][0];
        assert!(proxy["state"]["terminated"].is_object(), "{proxy}");
        assert_eq!(proxy["restartCount"], 0);
    }

    #[test]
    fn go_durations() {
        assert_eq!(go_duration(Duration::from_secs(10)), "10s");
        assert_eq!(go_duration(Duration::from_secs(80)), "1m20s");
        assert_eq!(go_duration(Duration::from_secs(300)), "5m0s");
        assert_eq!(go_duration(Duration::from_millis(500)), "500ms");
        assert_eq!(go_duration(Duration::from_secs(3601)), "1h0m1s");
    }

    #[test]
    fn termination_deletes_after_stop() {
        let mut k = kubelet();
        let mut p = pod(
            json!({"containers": [{"name": "app", "image": "nginx"}], "terminationGracePeriodSeconds": 30}),
        );
        let (_, t) = run_until_settled(&mut k, &p, Instant::now());
        p.metadata.deletion_timestamp =
            Some(k8s_openapi::apimachinery::pkg::apis::meta::v1::Time(jiff::Timestamp::now()));
        let r = k.sync(&p, t);
        assert!(!r.delete);
        let r = k.sync(&p, r.wake.expect("wake"));
        assert!(r.delete);
        assert_eq!(r.status.expect("status")["status"]["phase"], "Succeeded");
        assert!(!k.sync(&p, t + Duration::from_secs(1)).delete, "asks once");
    }

    fn cond(s: &Value, t: &str) -> Option<Value> {
        s["status"]["conditions"].as_array()?.iter().find(|c| c["type"] == t).cloned()
    }

    fn set_resources(p: &mut Pod, i: usize, r: Value) {
        if let Some(spec) = p.spec.as_mut() {
            spec.containers[i].resources = Some(serde_json::from_value(r).expect("resources"));
        }
    }

    #[test]
    fn resize_in_place_restart_policy_and_infeasible() {
        let mut k = kubelet().with_allocatable("4", "8Gi");
        let mut p = pod(json!({"containers": [
            {"name": "a", "image": "nginx", "resources": {"requests": {"cpu": "1", "memory": "1Gi"}, "limits": {"cpu": "1", "memory": "1Gi"}}},
            {"name": "b", "image": "redis", "resources": {"requests": {"cpu": "500m"}},
             "resizePolicy": [{"resourceName": "cpu", "restartPolicy": "RestartContainer"}]}
        ]}));
        let (s0, t) = run_until_settled(&mut k, &p, Instant::now());
        let a0 = s0["status"]["containerStatuses"][0].clone();
        assert_eq!(a0["resources"]["limits"]["cpu"], "1");
        assert_eq!(a0["allocatedResources"]["memory"], "1Gi");
        assert!(cond(&s0, "PodResizeInProgress").is_none());
        // In place: same container, in progress until applied.
        set_resources(
            &mut p,
            0,
            json!({"requests": {"cpu": "2", "memory": "1Gi"}, "limits": {"cpu": "2", "memory": "1Gi"}}),
        );
        let mid = k.sync(&p, t).status.expect("status");
        assert_eq!(cond(&mid, "PodResizeInProgress").expect("in progress")["status"], "True");
        assert_eq!(mid["status"]["containerStatuses"][0]["allocatedResources"]["cpu"], "2");
        assert_eq!(mid["status"]["containerStatuses"][0]["resources"]["limits"]["cpu"], "1");
        let (s1, t) = run_until_settled(&mut k, &p, t);
        let a1 = &s1["status"]["containerStatuses"][0];
        assert_eq!(a1["resources"]["limits"]["cpu"], "2");
        assert_eq!(a1["containerID"], a0["containerID"]);
        assert_eq!(a1["restartCount"], 0);
        assert_eq!(cond(&s1, "PodResizeInProgress").expect("cleared")["$patch"], "delete", "{s1}");
        // RestartContainer for cpu: b restarts.
        set_resources(&mut p, 1, json!({"requests": {"cpu": "1"}}));
        let (s2, t) = run_until_settled(&mut k, &p, t);
        let b2 = &s2["status"]["containerStatuses"][1];
        assert_eq!(b2["restartCount"], 1);
        assert_eq!(b2["resources"]["requests"]["cpu"], "1");
        // More than the node has: Infeasible; nothing changes.
        set_resources(&mut p, 1, json!({"requests": {"cpu": "8"}}));
        let (s3, t) = run_until_settled(&mut k, &p, t);
        let pending = cond(&s3, "PodResizePending").expect("pending");
        assert_eq!(pending["reason"], "Infeasible");
        assert_eq!(
            pending["message"],
            "Node didn't have enough capacity: cpu, requested: 10000, capacity: 4000"
        );
        assert_eq!(s3["status"]["containerStatuses"][1]["allocatedResources"]["cpu"], "1");
        // Fits the node but not next to another pod: Deferred.
        let mut other = pod(
            json!({"containers": [{"name": "c", "image": "nginx", "resources": {"requests": {"cpu": "2"}}}]}),
        );
        other.metadata.uid = Some("u2".into());
        run_until_settled(&mut k, &other, t);
        set_resources(&mut p, 1, json!({"requests": {"cpu": "2"}}));
        let (s4, t) = run_until_settled(&mut k, &p, t);
        let pending = cond(&s4, "PodResizePending").expect("pending");
        assert_eq!(pending["reason"], "Deferred");
        assert_eq!(
            pending["message"],
            "Node didn't have enough resource: cpu, requested: 4000, used: 2000, capacity: 4000"
        );
        // The other pod goes: the deferred resize goes ahead.
        k.retain(&["u1".to_string()].into_iter().collect());
        let (s5, _) = run_until_settled(&mut k, &p, t);
        assert_eq!(cond(&s5, "PodResizePending").expect("cleared")["$patch"], "delete");
        assert_eq!(s5["status"]["containerStatuses"][1]["resources"]["requests"]["cpu"], "2");
        assert_eq!(s5["status"]["containerStatuses"][1]["restartCount"], 2);
    }

    #[test]
    fn qos() {
        assert_eq!(qos_class(&pod(json!({"containers": [{"name": "a"}]}))), "BestEffort");
        assert_eq!(
            qos_class(&pod(
                json!({"containers": [{"name": "a", "resources": {"limits": {"cpu": "1", "memory": "1Gi"}}}]})
            )),
            "Guaranteed"
        );
        assert_eq!(
            qos_class(&pod(
                json!({"containers": [{"name": "a", "resources": {"requests": {"cpu": "1"}}}]})
            )),
            "Burstable"
        );
    }

    fn kubelet_with(objects: &Arc<MapObjects>) -> Kubelet {
        kubelet().with_objects(objects.clone())
    }

    fn barrier_env(key: &str) -> Value {
        json!([{"name": "KRUISE_CONTAINER_BARRIER", "valueFrom": {"configMapKeyRef": {"name": "p-barrier", "key": key}}}])
    }

    fn state_of(s: &Value, i: usize) -> Value {
        s["status"]["containerStatuses"][i]["state"].clone()
    }

    #[test]
    fn containers_start_one_by_one_as_their_config_map_keys_appear() {
        let objects = Arc::new(MapObjects::default());
        objects.put_config_map("p-barrier", json!({}));
        let mut k = kubelet_with(&objects);
        let p = pod(json!({"containers": [
            {"name": "a", "image": "nginx", "env": barrier_env("p_2")},
            {"name": "b", "image": "nginx", "env": barrier_env("p_1")},
            {"name": "c", "image": "nginx", "env": barrier_env("p_0")},
            {"name": "d", "image": "nginx"}
        ]}));
        assert_eq!(
            *objects.registered.lock().expect("lock"),
            Vec::<(EnvKind, String)>::new(),
            "nothing before the pod is seen"
        );
        let t0 = Instant::now();
        let s = run_for(&mut k, &p, t0, t0 + Duration::from_secs(3));
        assert_eq!(
            *objects.registered.lock().expect("lock"),
            vec![(EnvKind::ConfigMap, "default".to_owned())]
        );
        for (i, key) in [(0, "p_2"), (1, "p_1"), (2, "p_0")] {
            assert_eq!(
                state_of(&s, i),
                json!({"waiting": {"reason": "CreateContainerConfigError",
                    "message": format!("couldn't find key {key} in ConfigMap default/p-barrier")}}),
                "{s}"
            );
            assert_eq!(s["status"]["containerStatuses"][i]["started"], false);
        }
        // The container without a reference is not held back by the ones before it.
        assert!(state_of(&s, 3)["running"].is_object(), "{s}");
        // A container that never ran and waits keeps the pod Pending (kubelet's getPhase).
        assert_eq!(s["status"]["phase"], "Pending");
        let ready = condition(&s, "Ready");
        assert_eq!(ready["status"], "False");
        assert_eq!(ready["message"], "containers with unready status: [a b c]");
        assert_eq!(condition(&s, "ContainersReady")["reason"], "ContainersNotReady");

        // Adding the keys one at a time starts the containers one at a time.
        let mut t = t0 + Duration::from_secs(3);
        let mut data = serde_json::Map::new();
        for (key, starts, still_waiting) in
            [("p_0", 2, vec![0, 1]), ("p_1", 1, vec![0]), ("p_2", 0, vec![])]
        {
            data.insert(key.to_owned(), json!(""));
            objects.put_config_map("p-barrier", Value::Object(data.clone()));
            // One sync notices it (as a change to a watched ConfigMap would wake the node).
            let s = k.sync(&p, t).status.expect("status");
            assert!(state_of(&s, starts)["running"].is_object(), "{key}: {s}");
            for i in still_waiting {
                assert_eq!(state_of(&s, i)["waiting"]["reason"], "CreateContainerConfigError");
            }
            t += Duration::from_secs(2);
        }
        let s = run_for(&mut k, &p, t, t + Duration::from_secs(1));
        assert_eq!(s["status"]["phase"], "Running");
        assert_eq!(condition(&s, "Ready")["status"], "True");
        let started = |i: usize| state_of(&s, i)["running"]["startedAt"].as_str().map(String::from);
        assert!(started(2) <= started(1) && started(1) <= started(0), "{s}");
        assert!(started(0).is_some());
    }

    #[test]
    fn missing_objects_and_keys_fail_with_the_kubelets_messages() {
        let objects = Arc::new(MapObjects::default());
        objects.put_config_map("cm", json!({"k": "v"}));
        objects.put_secret("s", json!({"password": "c2VjcmV0"}));
        let bin =
            serde_json::from_value(json!({"metadata": {"name": "bin", "namespace": "default"},
            "binaryData": {"k": "AAE="}}))
            .expect("configmap");
        objects.config_maps.lock().expect("lock").insert("default/bin".into(), Arc::new(bin));
        let cases = [
            // Only `data` counts, not `binaryData`.
            (
                json!({"env": [{"name": "A", "valueFrom": {"configMapKeyRef": {"name": "bin", "key": "k"}}}]}),
                Some("couldn't find key k in ConfigMap default/bin"),
            ),
            // A missing ConfigMap; the first failing reference gives the message.
            (
                json!({"env": [
                    {"name": "A", "valueFrom": {"configMapKeyRef": {"name": "nope", "key": "k"}}},
                    {"name": "B", "valueFrom": {"configMapKeyRef": {"name": "cm", "key": "x"}}}]}),
                Some("configmap \"nope\" not found"),
            ),
            (
                json!({"env": [{"name": "A", "valueFrom": {"secretKeyRef": {"name": "s", "key": "user"}}}]}),
                Some("couldn't find key user in Secret default/s"),
            ),
            (
                json!({"env": [{"name": "A", "valueFrom": {"secretKeyRef": {"name": "gone", "key": "k"}}}]}),
                Some("secret \"gone\" not found"),
            ),
            // envFrom is read before env.
            (
                json!({"env": [{"name": "A", "valueFrom": {"configMapKeyRef": {"name": "cm", "key": "x"}}}],
                       "envFrom": [{"configMapRef": {"name": "absent"}}]}),
                Some("configmap \"absent\" not found"),
            ),
            (
                json!({"envFrom": [{"secretRef": {"name": "absent"}}]}),
                Some("secret \"absent\" not found"),
            ),
            // Optional: skipped.
            (
                json!({"env": [
                    {"name": "A", "valueFrom": {"configMapKeyRef": {"name": "nope", "key": "k", "optional": true}}},
                    {"name": "B", "valueFrom": {"configMapKeyRef": {"name": "cm", "key": "x", "optional": true}}},
                    {"name": "C", "valueFrom": {"secretKeyRef": {"name": "s", "key": "x", "optional": true}}}],
                       "envFrom": [{"configMapRef": {"name": "absent", "optional": true}},
                                   {"secretRef": {"name": "absent", "optional": true}}]}),
                None,
            ),
            // Present keys, a literal value, a field reference: nothing to wait for.
            (
                json!({"env": [
                    {"name": "A", "valueFrom": {"configMapKeyRef": {"name": "cm", "key": "k"}}},
                    {"name": "B", "valueFrom": {"secretKeyRef": {"name": "s", "key": "password"}}},
                    {"name": "C", "value": "x"},
                    {"name": "D", "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}}],
                       "envFrom": [{"configMapRef": {"name": "cm"}}, {"secretRef": {"name": "s"}}]}),
                None,
            ),
        ];
        for (env, message) in cases {
            let mut c = json!({"name": "app", "image": "nginx"});
            for (k, v) in env.as_object().expect("object") {
                c[k] = v.clone();
            }
            let p = pod(json!({"containers": [c]}));
            let mut k = kubelet_with(&objects);
            let t0 = Instant::now();
            let s = run_for(&mut k, &p, t0, t0 + Duration::from_secs(2));
            let state = state_of(&s, 0);
            match message {
                Some(m) => {
                    assert_eq!(state["waiting"]["reason"], "CreateContainerConfigError", "{env}");
                    assert_eq!(state["waiting"]["message"], m, "{env}");
                    assert_eq!(s["status"]["phase"], "Pending");
                }
                None => assert!(state["running"].is_object(), "{env}: {s}"),
            }
        }
    }

    #[test]
    fn without_an_api_client_a_reference_cannot_be_read() {
        let mut k = kubelet();
        let p = pod(
            json!({"containers": [{"name": "app", "image": "nginx", "env": barrier_env("p_0")}]}),
        );
        let t0 = Instant::now();
        let s = run_for(&mut k, &p, t0, t0 + Duration::from_secs(2));
        assert_eq!(
            state_of(&s, 0)["waiting"]["message"],
            "couldn't get configMap default/p-barrier, no kubeClient defined"
        );
    }

    #[test]
    fn an_unsynced_cache_holds_the_container_then_fails_after_a_second() {
        let objects = Arc::new(MapObjects::default());
        objects.put_config_map("p-barrier", json!({"p_0": ""}));
        objects.unsynced.store(true, std::sync::atomic::Ordering::SeqCst);
        let mut k = kubelet_with(&objects);
        let p = pod(
            json!({"containers": [{"name": "app", "image": "nginx", "env": barrier_env("p_0")}]}),
        );
        let t0 = Instant::now();
        let s = run_for(&mut k, &p, t0, t0 + Duration::from_millis(700));
        assert_eq!(state_of(&s, 0), json!({"waiting": {"reason": "ContainerCreating"}}));
        let s = run_for(&mut k, &p, t0 + Duration::from_millis(700), t0 + Duration::from_secs(3));
        assert_eq!(
            state_of(&s, 0)["waiting"]["message"],
            "failed to sync configmap cache: timed out waiting for the condition"
        );
        objects.unsynced.store(false, std::sync::atomic::Ordering::SeqCst);
        let s = k.sync(&p, t0 + Duration::from_secs(3)).status.expect("status");
        assert!(state_of(&s, 0)["running"].is_object(), "{s}");
    }

    #[test]
    fn a_restart_resolves_the_environment_again() {
        let objects = Arc::new(MapObjects::default());
        objects.put_config_map("p-barrier", json!({"p_0": ""}));
        let mut k = kubelet_with(&objects);
        let p = pod(json!({"containers": [{"name": "app", "image": "busybox",
            "command": ["sh", "-c", "sleep 1; exit 1"], "env": barrier_env("p_0")}]}));
        let t0 = Instant::now();
        let s = run_for(&mut k, &p, t0, t0 + Duration::from_millis(500));
        assert!(state_of(&s, 0)["running"].is_object(), "{s}");
        // The key goes; the container exits and its restart cannot get its config.
        objects.put_config_map("p-barrier", json!({}));
        let s = run_for(&mut k, &p, t0 + Duration::from_millis(500), t0 + Duration::from_secs(3));
        let app = &s["status"]["containerStatuses"][0];
        assert_eq!(app["state"]["waiting"]["reason"], "CreateContainerConfigError", "{s}");
        assert_eq!(app["lastState"]["terminated"]["exitCode"], 1);
        // It ran before: the pod stays Running (the kubelet counts it as stopped, not waiting).
        assert_eq!(s["status"]["phase"], "Running");
        // Deleting the pod: a container that is not running ends at once.
        let mut gone = p.clone();
        gone.metadata.deletion_timestamp =
            Some(k8s_openapi::apimachinery::pkg::apis::meta::v1::Time(jiff::Timestamp::now()));
        let r = k.sync(&gone, t0 + Duration::from_secs(3));
        assert!(r.delete);
        let app = &r.status.expect("status")["status"]["containerStatuses"][0];
        assert_eq!(app["state"]["terminated"]["reason"], "ContainerStatusUnknown");
    }
}
