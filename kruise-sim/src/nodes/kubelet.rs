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

use super::runtime::ContainerRuntime;
use super::scheduler::{Resources, parse_quantity, spec_requests};
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
}

impl Default for Delays {
    fn default() -> Self {
        Delays {
            pull: Duration::from_millis(200),
            start: Duration::from_millis(100),
            ready: Duration::from_millis(500),
            init_run: Duration::from_millis(100),
            stop: Duration::from_millis(100),
        }
    }
}

#[derive(Clone, Debug)]
enum Stage {
    NotStarted,
    Pulling(Instant),
    Creating(Instant),
    Running { since: String, ready_at: Instant, done_at: Option<Instant> },
    Stopping { since: String, until: Instant },
    Exited { code: i32, reason: &'static str, started: Option<String>, finished: String },
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
}

impl Ctr {
    fn new(c: &Container, init: bool) -> Ctr {
        Ctr {
            name: c.name.clone(),
            image: c.image.clone().unwrap_or_default(),
            sidecar: init && c.restart_policy.as_deref() == Some("Always"),
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
        }
    }

    fn running(&self) -> bool {
        matches!(self.stage, Stage::Running { .. } | Stage::Stopping { .. })
    }

    fn ready(&self, now: Instant) -> bool {
        matches!(self.stage, Stage::Running { ready_at, done_at: None, .. } if now >= ready_at)
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
            Stage::Running { ready_at, done_at, .. } => {
                let r = (*ready_at > now).then_some(*ready_at);
                match (r, done_at) {
                    (Some(a), Some(b)) => Some(a.min(*b)),
                    (a, b) => a.or(*b),
                }
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
}

fn pod_uid(pod: &Pod) -> &str {
    pod.metadata.uid.as_deref().unwrap_or_default()
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
        }
    }

    /// Sets the node's allocatable CPU and memory (quantities such as `"32"` and `"256Gi"`),
    /// against which in-place resizes are admitted. Unparsable quantities are ignored.
    pub fn with_allocatable(mut self, cpu: &str, memory: &str) -> Kubelet {
        let mut r = Resources::new();
        for (k, q) in [("cpu", cpu), ("memory", memory)] {
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
    fn advance(&self, uid: &str, c: &mut Ctr, now: Instant) -> bool {
        if let Some(t) = c.resize_at
            && now >= t
        {
            c.actual = c.allocated.clone();
            c.resize_at = None;
            return true;
        }
        match c.stage.clone() {
            Stage::Pulling(t) if now >= t => {
                match self.runtime.pull_image(&c.image) {
                    Ok(id) => {
                        c.image_id = id;
                        c.stage = Stage::Creating(now + self.delays.start);
                    }
                    Err(e) => {
                        c.stage = Stage::Exited {
                            code: 1,
                            reason: "ErrImagePull",
                            started: None,
                            finished: format!("{e}"),
                        };
                    }
                }
                true
            }
            Stage::Creating(t) if now >= t => {
                let id = self
                    .runtime
                    .create_container(uid, &c.name, &c.image)
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
                        let done_at = (c.init && !c.sidecar).then(|| now + self.delays.init_run);
                        c.stage = Stage::Running { since: now_rfc3339(), ready_at, done_at };
                    }
                    Err(_) => c.stage = Stage::Pulling(now + self.delays.pull),
                }
                true
            }
            Stage::Running { since, done_at: Some(d), .. } if now >= d => {
                if let Some(id) = &c.container_id {
                    let _ = self.runtime.stop_container(id, 0);
                }
                c.stage = Stage::Exited {
                    code: 0,
                    reason: "Completed",
                    started: Some(since),
                    finished: now_rfc3339(),
                };
                true
            }
            Stage::Stopping { since, until } if now >= until => {
                if let Some(id) = &c.container_id {
                    let _ = self.runtime.stop_container(id, 0);
                }
                c.stage = Stage::Exited {
                    code: 0,
                    reason: "Completed",
                    started: Some(since),
                    finished: now_rfc3339(),
                };
                true
            }
            _ => false,
        }
    }

    /// Syncs one pod bound to this node.
    pub fn sync(&mut self, pod: &Pod, now: Instant) -> SyncResult {
        let uid = pod_uid(pod).to_string();
        let Some(spec) = pod.spec.as_ref() else { return SyncResult::default() };
        if !self.pods.contains_key(&uid) {
            self.next_ip = self.next_ip % 250 + 1;
            let st = PodState {
                ip: format!("{}.{}", self.pod_cidr_prefix, self.next_ip + 1),
                start_time: now_rfc3339(),
                init: spec.init_containers.iter().flatten().map(|c| Ctr::new(c, true)).collect(),
                main: spec.containers.iter().map(|c| Ctr::new(c, false)).collect(),
                conds: BTreeMap::new(),
                delete_sent: false,
                resize_pending: None,
                resize_progress: None,
                resize_seen: false,
            };
            self.pods.insert(uid.clone(), st);
        }
        let Some(mut st) = self.pods.remove(&uid) else { return SyncResult::default() };
        let terminating = pod.metadata.deletion_timestamp.is_some();
        if terminating {
            let grace = pod
                .metadata
                .deletion_grace_period_seconds
                .or(spec.termination_grace_period_seconds)
                .unwrap_or(30)
                .max(0);
            let stop = self.delays.stop.min(Duration::from_secs(grace as u64));
            for c in st.init.iter_mut().chain(st.main.iter_mut()) {
                match &c.stage {
                    Stage::Running { since, .. } => {
                        c.stage = Stage::Stopping { since: since.clone(), until: now + stop };
                    }
                    Stage::NotStarted | Stage::Pulling(_) | Stage::Creating(_) => {
                        c.stage = Stage::Exited {
                            code: 0,
                            reason: "Completed",
                            started: None,
                            finished: now_rfc3339(),
                        };
                    }
                    _ => {}
                }
            }
            for c in st.init.iter_mut().chain(st.main.iter_mut()) {
                self.advance(&uid, c, now);
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
                self.begin(c, now);
            }
            self.resize(pod, &uid, &mut st, &specs, now);
            for _ in 0..(2 * (st.init.len() + st.main.len()) + 4) {
                let mut changed = false;
                let mut init_done = true;
                for i in 0..st.init.len() {
                    if matches!(st.init[i].stage, Stage::NotStarted) {
                        let mut c = st.init[i].clone();
                        self.begin(&mut c, now);
                        st.init[i] = c;
                        changed = true;
                    }
                    let mut c = st.init[i].clone();
                    changed |= self.advance(&uid, &mut c, now);
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
                        changed |= self.advance(&uid, &mut c, now);
                        st.main[i] = c;
                    }
                }
                if !changed {
                    break;
                }
            }
        }
        let status = self.status(pod, &mut st, now, terminating);
        let all_stopped =
            st.init.iter().chain(st.main.iter()).all(|c| {
                !c.running() && !matches!(c.stage, Stage::Pulling(_) | Stage::Creating(_))
            });
        let delete = terminating && all_stopped && !st.delete_sent;
        if delete {
            st.delete_sent = true;
        }
        let wake = st.init.iter().chain(st.main.iter()).filter_map(|c| c.wake(now)).min();
        self.pods.insert(uid, st);
        SyncResult { status: Some(status), delete, wake }
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
        let mut conditions = vec![
            json!({"type": "PodReadyToStartContainers", "status": b(!terminating || !exited), "lastProbeTime": null, "lastTransitionTime": cond("PodReadyToStartContainers", !terminating || !exited)}),
        ];
        let mut c_init = json!({"type": "Initialized", "status": b(initialized), "lastProbeTime": null, "lastTransitionTime": cond("Initialized", initialized)});
        if !initialized {
            c_init["reason"] = json!("ContainersNotInitialized");
            c_init["message"] =
                json!(format!("containers with incomplete status: [{}]", init_pending.join(" ")));
        }
        conditions.push(c_init);
        let mut c_cr = json!({"type": "ContainersReady", "status": b(containers_ready), "lastProbeTime": null, "lastTransitionTime": cond("ContainersReady", containers_ready)});
        let mut c_ready = json!({"type": "Ready", "status": b(ready), "lastProbeTime": null, "lastTransitionTime": cond("Ready", ready)});
        if !containers_ready {
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
        for c in &mut conditions {
            if let Value::Object(c) = c {
                c.entry("reason").or_insert(Value::Null);
                c.entry("message").or_insert(Value::Null);
            }
        }
        let phase = if terminating && all_exited(st) {
            "Succeeded"
        } else if initialized
            && st
                .main
                .iter()
                .any(|c| c.running() || c.container_id.is_some() || c.restart_count > 0)
        {
            "Running"
        } else {
            "Pending"
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
}
