//! The kubelet of one simulated node: a per-pod state machine over a [`ContainerRuntime`].
//!
//! [`Kubelet::sync`] looks at a pod as the API server has it, advances its containers
//! (pull → create → running → ready; init containers and native sidecars in order; a changed
//! image restarts only that container; deletion stops containers within the grace period)
//! and says which status to write, whether to delete the pod, and when to look again.

use super::runtime::ContainerRuntime;
use crate::util::now_rfc3339;
use k8s_openapi::api::core::v1::{Container, Pod};
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
                self.begin(c, now);
            }
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
    v
}

fn qos_class(pod: &Pod) -> &'static str {
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
