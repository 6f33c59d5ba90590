//! The whole rollout ahead: a workload planner stepped on a model of the cluster until nothing
//! more happens, and what it did, wave by wave.
//!
//! The model ([`Cluster`]) carries out each plan as kube-apiserver would (patches merged,
//! created pods admitted with the readiness gate, deleted pods gone once their finalizers are),
//! and stands in for the scheduler and the kubelet between plans ([`Cluster::settle`]): a pod
//! runs, a container whose image changed restarts on it, and a pod whose containers run and whose
//! readiness gates hold is ready from that moment on. Nobody else acts: a lifecycle hook that
//! holds a pod holds it for good, and the forecast says so. The clock moves one second after a
//! round that changed something, and to the planner's `requeue_after` after a quiet one, so
//! `minReadySeconds` and grace periods take the time they take.
//!
//! [`forecast`] takes the planner as a closure, so that any workload kind (and any embedding
//! operator's) can be forecast the same way:
//!
//! ```
//! use kruise_core::forecast::{Cluster, Limits, forecast};
//! use kruise_core::workload::{Plan};
//! use kruise_core::expectations::ControllerExpectations;
//!
//! let cluster = Cluster::new(serde_json::json!({"status": {}}), jiff::Timestamp::UNIX_EPOCH);
//! // A planner that never acts: the forecast is one quiet round.
//! let ahead = forecast(cluster, Limits::default(), |_| {
//!     Plan::<serde_json::Value>::empty(ControllerExpectations::default())
//! });
//! assert!(ahead.waves.is_empty());
//! assert!(ahead.outcome.settled);
//! ```

use std::collections::{BTreeMap, BTreeSet, VecDeque};

use jiff::{SignedDuration, Timestamp};
use k8s_openapi::api::apps::v1::ControllerRevision;
use k8s_openapi::api::core::v1::{
    ContainerState, ContainerStateRunning, ContainerStatus, PersistentVolumeClaim, Pod,
    PodCondition, PodStatus,
};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, Time};
use kruise_api::well_known::kubernetes::labels::CONTROLLER_REVISION_HASH;
use serde::Serialize;
use serde_json::Value;

use crate::admission::pod_chain::PodChain;
use crate::plan::{Action, Blocked, DeletePurpose, Plan, PodPatchPurpose};
use crate::readiness::ReadinessGateStep;
use crate::smp::{PatchSchema, apply_patch};

/// One second: how far the clock moves after a round that changed something.
const TICK: SignedDuration = SignedDuration::from_secs(1);

/// Quiet rounds in a row (nothing written, nothing settled) after which the forecast ends even
/// though the planner still asks to look again.
const QUIET_ROUNDS: usize = 3;

/// The objects a workload planner reads, as the model holds them.
#[derive(Clone, Debug)]
pub struct Cluster {
    /// The workload, as JSON; plans write its `status` and patch it.
    pub workload: Value,
    /// The pods it controls.
    pub pods: Vec<Pod>,
    /// The claims it controls.
    pub pvcs: Vec<PersistentVolumeClaim>,
    /// Its ControllerRevisions.
    pub revisions: Vec<ControllerRevision>,
    /// Names of the ImagePullJobs it controls.
    pub image_pull_jobs: Vec<String>,
    /// The nodes the scheduler binds pods to (the one with the fewest of the pods first; a
    /// node named `forecast-node` when empty). A pod pinned to a node goes there.
    pub nodes: Vec<String>,
    /// The model's clock.
    pub now: Timestamp,
    /// Containers (pod name, container name) whose image changed and that the kubelet restarts.
    restarts: BTreeSet<(String, String)>,
    /// A counter for the UIDs and resourceVersions the model hands out.
    serial: u64,
}

impl Cluster {
    /// A model holding `workload` and nothing else yet, at `now`.
    pub fn new(workload: Value, now: Timestamp) -> Self {
        Self {
            workload,
            pods: Vec::new(),
            pvcs: Vec::new(),
            revisions: Vec::new(),
            image_pull_jobs: Vec::new(),
            nodes: Vec::new(),
            now,
            restarts: BTreeSet::new(),
            serial: 0,
        }
    }

    fn next_version(&mut self, meta: &mut ObjectMeta) {
        self.serial += 1;
        meta.resource_version = Some(format!("forecast-{}", self.serial));
    }

    fn pod_mut(&mut self, name: &str) -> Option<&mut Pod> {
        self.pods.iter_mut().find(|p| p.metadata.name.as_deref() == Some(name))
    }

    /// Carries out `action` as the API server would; returns what it did to a pod, if anything
    /// worth telling.
    fn apply(&mut self, action: &Action) -> Option<Touch> {
        match action {
            Action::CreateRevision { revision } => {
                let mut revision = (**revision).clone();
                if !self.revisions.iter().any(|r| r.metadata.name == revision.metadata.name) {
                    self.next_version(&mut revision.metadata);
                    self.revisions.push(revision);
                }
            }
            Action::PatchRevision { name, patch } => {
                if let Some(r) =
                    self.revisions.iter_mut().find(|r| r.metadata.name.as_deref() == Some(name))
                {
                    *r = merged(&*r, patch.body());
                }
            }
            Action::DeleteRevision { name } => {
                self.revisions.retain(|r| r.metadata.name.as_deref() != Some(name.as_str()));
            }
            Action::CreatePvc { pvc } => {
                if !self.pvcs.iter().any(|p| p.metadata.name == pvc.metadata.name) {
                    let mut pvc = (**pvc).clone();
                    self.serial += 1;
                    pvc.metadata.uid = Some(format!("forecast-uid-{}", self.serial));
                    self.pvcs.push(pvc);
                }
            }
            Action::PatchPvc { name, patch } => {
                if let Some(p) =
                    self.pvcs.iter_mut().find(|p| p.metadata.name.as_deref() == Some(name))
                {
                    *p = merged(&*p, patch.body());
                }
            }
            Action::DeletePvc { name, .. } => {
                self.pvcs.retain(|p| p.metadata.name.as_deref() != Some(name.as_str()));
            }
            Action::CreatePod { pod } => return self.create_pod(pod.build().into_owned()),
            Action::PatchPod { name, patch, purpose, .. } => {
                let before = self.pod_mut(name)?.clone();
                let body = patch.body().clone();
                let pod = self.pod_mut(name)?;
                if let Some(new) = strategic(pod, &body) {
                    *pod = new;
                }
                let after = pod.clone();
                for (container, _) in changed_images(&before, &after) {
                    self.restarts.insert((name.clone(), container));
                }
                let mut meta = after.metadata.clone();
                self.next_version(&mut meta);
                if let Some(pod) = self.pod_mut(name) {
                    pod.metadata.resource_version = meta.resource_version;
                }
                return match purpose {
                    PodPatchPurpose::InPlaceUpdate => {
                        Some(Touch::InPlace { pod: name.clone(), revision: revision_of(&after) })
                    }
                    PodPatchPurpose::SpecifiedDelete => Some(Touch::Leaving {
                        pod: name.clone(),
                        purpose: DeletePurpose::SpecifiedDelete,
                    }),
                    PodPatchPurpose::Lifecycle => hook_state(&after)
                        .map(|state| Touch::Hooked { pod: name.clone(), state: state.to_owned() }),
                    _ => None,
                };
            }
            Action::PatchPodStatus { name, patch, .. }
            | Action::PatchPodResize { name, patch, .. } => {
                let body = patch.body().clone();
                let pod = self.pod_mut(name)?;
                if let Some(new) = strategic(pod, &body) {
                    *pod = new;
                }
            }
            Action::DeletePod { name, purpose, .. } => {
                let now = self.now;
                let pod = self.pod_mut(name)?;
                if pod.metadata.deletion_timestamp.is_none() {
                    pod.metadata.deletion_timestamp = Some(Time(now));
                }
                return Some(Touch::Leaving { pod: name.clone(), purpose: *purpose });
            }
            Action::EvictPod { target } => {
                let now = self.now;
                let pod = self.pod_mut(&target.name)?;
                pod.metadata.deletion_timestamp.get_or_insert(Time(now));
                return Some(Touch::Leaving {
                    pod: target.name.clone(),
                    purpose: DeletePurpose::SpecifiedDelete,
                });
            }
            Action::CreateImagePullJob { job } => {
                let name = job.metadata.name.clone().unwrap_or_default();
                if !self.image_pull_jobs.contains(&name) {
                    self.image_pull_jobs.push(name);
                }
            }
            Action::DeleteImagePullJob { name } => self.image_pull_jobs.retain(|j| j != name),
            Action::PatchWorkload { patch } => {
                let mut body = patch.body().clone();
                // The guard is the API server's business, not the model's.
                if let Some(meta) = body.get_mut("metadata").and_then(Value::as_object_mut) {
                    meta.remove("resourceVersion");
                }
                let spec = self.workload.get("spec").cloned();
                json_patch::merge(&mut self.workload, &body);
                if self.workload.get("spec").cloned() != spec {
                    let generation = self.workload["metadata"]["generation"].as_i64().unwrap_or(1);
                    self.workload["metadata"]["generation"] = Value::from(generation + 1);
                }
            }
            // Other objects are not the workload's pods: the model does not hold them.
            Action::CreateObject { .. }
            | Action::PatchObject { .. }
            | Action::DeleteObject { .. } => {}
        }
        None
    }

    fn create_pod(&mut self, mut pod: Pod) -> Option<Touch> {
        let name = pod.metadata.name.clone().unwrap_or_default();
        if self.pods.iter().any(|p| p.metadata.name.as_deref() == Some(name.as_str())) {
            // AlreadyExists: the API server refuses, and nothing changes.
            return None;
        }
        // The pod webhook's readiness-gate step; its only error is for pods it cannot read,
        // and the model then keeps the pod as the planner made it.
        let step = ReadinessGateStep::default();
        let _ = PodChain::new(vec![&step]).run(&mut pod);
        self.serial += 1;
        pod.metadata.uid = Some(format!("forecast-uid-{}", self.serial));
        pod.metadata.creation_timestamp = Some(Time(self.now));
        self.next_version(&mut pod.metadata);
        pod.status = Some(PodStatus { phase: Some("Pending".into()), ..Default::default() });
        let revision = revision_of(&pod);
        self.pods.push(pod);
        Some(Touch::Created { pod: name, revision })
    }

    /// The scheduler, the kubelet and the garbage collector, at the model's time: a deleted
    /// pod with no finalizer left goes away; a pod pinned to a node is bound there; every
    /// pod still running its course runs its spec's containers (those whose image changed
    /// restart) and is ready when they all are and its readiness gates hold. Returns whether
    /// anything changed.
    pub fn settle(&mut self) -> bool {
        let before = self.pods.len();
        self.pods.retain(|p| {
            p.metadata.deletion_timestamp.is_none()
                || p.metadata.finalizers.as_ref().is_some_and(|f| !f.is_empty())
        });
        let mut changed = self.pods.len() != before;
        let live: BTreeSet<String> =
            self.pods.iter().filter_map(|p| p.metadata.name.clone()).collect();
        self.restarts.retain(|(pod, _)| live.contains(pod));
        let now = self.now;
        let restarts = std::mem::take(&mut self.restarts);
        let mut versions = Vec::new();
        for index in 0..self.pods.len() {
            if self.pods[index].spec.as_ref().is_some_and(|s| s.node_name.is_none())
                && crate::node_affinity::target_node_name(&self.pods[index]).is_none()
            {
                let node = self.least_busy_node();
                if let Some(spec) = self.pods[index].spec.as_mut() {
                    spec.node_name = Some(node);
                }
            }
            let pod = &mut self.pods[index];
            let name = pod.metadata.name.clone().unwrap_or_default();
            if kubelet(pod, &name, &restarts, now) {
                versions.push(index);
                changed = true;
            }
        }
        for index in versions {
            let mut meta = std::mem::take(&mut self.pods[index].metadata);
            self.next_version(&mut meta);
            self.pods[index].metadata = meta;
        }
        changed
    }

    /// The scheduler's choice: the node with the fewest of the model's pods.
    fn least_busy_node(&self) -> String {
        let on = |node: &str| {
            self.pods
                .iter()
                .filter(|p| p.spec.as_ref().and_then(|s| s.node_name.as_deref()) == Some(node))
                .count()
        };
        self.nodes
            .iter()
            .min_by_key(|node| on(node))
            .cloned()
            .unwrap_or_else(|| "forecast-node".to_owned())
    }
}

/// One pod's step in the kubelet's hands; returns whether the pod changed.
fn kubelet(
    pod: &mut Pod,
    name: &str,
    restarts: &BTreeSet<(String, String)>,
    now: Timestamp,
) -> bool {
    let phase = crate::pod::phase_of(pod);
    if phase == crate::pod::PHASE_FAILED || phase == "Succeeded" {
        return false;
    }
    let Some(spec) = pod.spec.clone() else { return false };
    let original = pod.clone();
    if let Some(node) = crate::node_affinity::target_node_name(pod).map(str::to_owned)
        && let Some(spec) = pod.spec.as_mut()
    {
        spec.node_name.get_or_insert(node);
    }
    let opens_gate = crate::pod::has_readiness_gate(pod, "KruisePodReady")
        && crate::pod::condition(pod, "KruisePodReady").is_none()
        && pod.metadata.deletion_timestamp.is_none();
    let status = pod.status.get_or_insert_with(Default::default);
    status.phase = Some("Running".into());
    let old = status.container_statuses.take().unwrap_or_default();
    let statuses: Vec<ContainerStatus> = spec
        .containers
        .iter()
        .map(|c| {
            let image = c.image.clone().unwrap_or_default();
            let restart = restarts.contains(&(name.to_owned(), c.name.clone()));
            match old.iter().find(|s| s.name == c.name) {
                Some(kept) if !restart => ContainerStatus { ready: true, ..kept.clone() },
                previous => ContainerStatus {
                    name: c.name.clone(),
                    image: image.clone(),
                    // A new digest: the container runs something else than before.
                    image_id: format!("forecast://{image}"),
                    ready: true,
                    restart_count: previous.map_or(0, |p| p.restart_count + i32::from(restart)),
                    started: Some(true),
                    state: Some(ContainerState {
                        running: Some(ContainerStateRunning { started_at: Some(Time(now)) }),
                        ..Default::default()
                    }),
                    ..Default::default()
                },
            }
        })
        .collect();
    status.container_statuses = Some(statuses);
    let mut conditions = status.conditions.take().unwrap_or_default();
    if opens_gate {
        conditions.push(condition("KruisePodReady", "True", now));
    }
    let gates_hold = spec.readiness_gates.iter().flatten().all(|gate| {
        conditions.iter().any(|c| c.type_ == gate.condition_type && c.status == "True")
    });
    let ready = if gates_hold { "True" } else { "False" };
    for kind in ["ContainersReady", "Ready"] {
        let wanted = if kind == "Ready" { ready } else { "True" };
        match conditions.iter_mut().find(|c| c.type_ == kind) {
            Some(c) if c.status == wanted => {}
            Some(c) => *c = condition(kind, wanted, now),
            None => conditions.push(condition(kind, wanted, now)),
        }
    }
    status.conditions = Some(conditions);
    *pod != original
}

fn condition(type_: &str, status: &str, at: Timestamp) -> PodCondition {
    PodCondition {
        type_: type_.into(),
        status: status.into(),
        last_transition_time: Some(Time(at)),
        ..Default::default()
    }
}

/// `object` with the JSON merge patch `patch` applied (unchanged if it no longer decodes).
fn merged<T: Serialize + serde::de::DeserializeOwned + Clone>(object: &T, patch: &Value) -> T {
    let Ok(mut doc) = serde_json::to_value(object) else { return object.clone() };
    json_patch::merge(&mut doc, patch);
    serde_json::from_value(doc).unwrap_or_else(|_| object.clone())
}

/// `pod` with the strategic merge patch `patch` applied; `None` if the patch does not apply.
fn strategic(pod: &Pod, patch: &Value) -> Option<Pod> {
    let doc = serde_json::to_value(pod).ok()?;
    let out = apply_patch(&doc, patch, PatchSchema::Pod).ok()?;
    serde_json::from_value(out).ok()
}

/// The containers whose image differs between two versions of a pod, with the new image.
fn changed_images(before: &Pod, after: &Pod) -> Vec<(String, String)> {
    let images = |pod: &Pod| -> BTreeMap<String, String> {
        pod.spec
            .iter()
            .flat_map(|s| s.containers.iter())
            .map(|c| (c.name.clone(), c.image.clone().unwrap_or_default()))
            .collect()
    };
    let old = images(before);
    images(after).into_iter().filter(|(name, image)| old.get(name) != Some(image)).collect()
}

fn revision_of(pod: &Pod) -> Option<String> {
    pod.metadata.labels.as_ref()?.get(CONTROLLER_REVISION_HASH).cloned()
}

/// The pod's lifecycle state when it is one a hook holds.
fn hook_state(pod: &Pod) -> Option<&str> {
    let state =
        pod.metadata.labels.as_ref()?.get(kruise_api::well_known::labels::LIFECYCLE_STATE)?;
    matches!(state.as_str(), "PreparingNormal" | "PreparingUpdate" | "Updated" | "PreparingDelete")
        .then_some(state.as_str())
}

/// What a round did to one pod, as the forecast tells it.
#[derive(Clone, Debug, PartialEq, Eq)]
enum Touch {
    InPlace { pod: String, revision: Option<String> },
    Created { pod: String, revision: Option<String> },
    Leaving { pod: String, purpose: DeletePurpose },
    Hooked { pod: String, state: String },
}

/// How a pod changes in a wave.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub enum Change {
    /// Updated in place to `revision`.
    InPlace,
    /// Deleted to be recreated at `revision` (its replacement, when one was created, is
    /// named).
    Recreate,
    /// Created at `revision` (scale-out, or a pod that was missing).
    Create,
    /// Deleted and not replaced (scale-in, or a finished preDelete hook).
    Delete,
    /// Moved into a lifecycle state a hook holds (`state`); nobody in the model releases it.
    Hook,
}

/// One pod's change in a wave.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct PodChange {
    /// The pod's name.
    pub pod: String,
    /// What happens to it.
    pub change: Change,
    /// The revision it moves to, when it moves to one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub revision: Option<String>,
    /// The pod created in its place (recreate).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub replacement: Option<String>,
    /// Why it is deleted (delete, recreate).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reason: Option<DeletePurpose>,
    /// The lifecycle state a hook holds it in (hook).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub state: Option<String>,
}

/// The pods one plan starts changing.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Wave {
    /// Seconds of model time since the forecast began.
    pub at_seconds: i64,
    /// The pods, in the plan's order.
    pub pods: Vec<PodChange>,
}

/// Where the forecast ended.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct Outcome {
    /// The planner stopped acting (false: the forecast stopped at its [`Limits`]).
    pub settled: bool,
    /// The workload's update revision at the end (`status.updateRevision`, or
    /// `status.daemonSetHash`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub update_revision: Option<String>,
    /// Pods left at another revision (the partition, a pause, or what holds them).
    pub not_updated: Vec<String>,
    /// Pods a lifecycle hook holds, with their state.
    pub hooked: BTreeMap<String, String>,
    /// Pods not ready at the end.
    pub not_ready: Vec<String>,
    /// Why the last plan planned nothing, when it said.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub blocked: Option<Blocked>,
}

/// The rollout ahead.
#[derive(Clone, Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Forecast {
    /// The plans that changed pods, in order.
    pub waves: Vec<Wave>,
    /// Where it ended.
    pub outcome: Outcome,
    /// How many plans were made.
    pub rounds: usize,
    /// Seconds of model time the rollout took.
    pub elapsed_seconds: i64,
    /// The workload's status at the end.
    pub status: Value,
    /// The model at the end, to look at or to forecast from again.
    #[serde(skip)]
    pub end: Cluster,
}

/// How far a forecast goes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Limits {
    /// At most this many plans.
    pub rounds: usize,
    /// At most this much model time.
    pub horizon: SignedDuration,
}

impl Default for Limits {
    fn default() -> Self {
        Self { rounds: 5_000, horizon: SignedDuration::from_hours(24) }
    }
}

/// Steps `planner` on `cluster` until it stops acting (or [`Limits`] end it), and tells the
/// waves: each plan that changes pods is one, with the pods it changes and how.
pub fn forecast<S: Serialize>(
    mut cluster: Cluster,
    limits: Limits,
    mut planner: impl FnMut(&Cluster) -> Plan<S>,
) -> Forecast {
    let start = cluster.now;
    let mut waves: Vec<Wave> = Vec::new();
    // Recreated pods awaiting their replacement: (wave, index in the wave).
    let mut awaiting: VecDeque<(usize, usize)> = VecDeque::new();
    let mut blocked = None;
    let mut quiet = 0;
    let mut rounds = 0;
    let mut settled = false;
    while rounds < limits.rounds {
        rounds += 1;
        let plan = planner(&cluster);
        let at_seconds = cluster.now.duration_since(start).as_secs();
        let mut touches = Vec::new();
        for action in &plan.actions {
            touches.extend(cluster.apply(action));
        }
        let mut changed = !plan.actions.is_empty();
        if let Some(status) = &plan.status
            && let Ok(status) = serde_json::to_value(status)
            && cluster.workload.get("status") != Some(&status)
        {
            cluster.workload["status"] = status;
            changed = true;
        }
        blocked = plan.blocked.clone();
        record(&mut waves, &mut awaiting, at_seconds, touches);
        changed |= cluster.settle();
        if changed {
            quiet = 0;
            cluster.now += TICK;
            continue;
        }
        quiet += 1;
        match plan.requeue_after {
            Some(after)
                if quiet < QUIET_ROUNDS
                    && (cluster.now + after).duration_since(start) <= limits.horizon =>
            {
                cluster.now += after.max(TICK);
            }
            _ => {
                settled = true;
                break;
            }
        }
    }
    let outcome = outcome_of(&cluster, settled, blocked);
    Forecast {
        waves,
        outcome,
        rounds,
        elapsed_seconds: cluster.now.duration_since(start).as_secs(),
        status: cluster.workload.get("status").cloned().unwrap_or(Value::Null),
        end: cluster,
    }
}

/// Adds a round's touches to the waves: a pod counts once per wave, and a created pod is the
/// replacement of the oldest recreated pod still awaiting one.
fn record(
    waves: &mut Vec<Wave>,
    awaiting: &mut VecDeque<(usize, usize)>,
    at_seconds: i64,
    touches: Vec<Touch>,
) {
    let index = waves.len();
    let mut wave = Wave { at_seconds, pods: Vec::new() };
    let entry = |pod: String, change: Change| PodChange {
        pod,
        change,
        revision: None,
        replacement: None,
        reason: None,
        state: None,
    };
    for touch in touches {
        match touch {
            Touch::InPlace { pod, revision } => match wave.pods.iter_mut().find(|c| c.pod == pod) {
                Some(c) => {
                    c.change = Change::InPlace;
                    c.revision = revision;
                    c.state = None;
                }
                None => wave.pods.push(PodChange { revision, ..entry(pod, Change::InPlace) }),
            },
            Touch::Hooked { pod, state } => {
                if !wave.pods.iter().any(|c| c.pod == pod) {
                    wave.pods.push(PodChange { state: Some(state), ..entry(pod, Change::Hook) });
                }
            }
            Touch::Leaving { pod, purpose } => {
                let gone_before = waves
                    .iter()
                    .flat_map(|w| &w.pods)
                    .any(|c| c.pod == pod && matches!(c.change, Change::Recreate | Change::Delete));
                if gone_before {
                    continue;
                }
                let recreate = matches!(
                    purpose,
                    DeletePurpose::Recreate
                        | DeletePurpose::SpecifiedDelete
                        | DeletePurpose::Finished
                );
                let change = if recreate { Change::Recreate } else { Change::Delete };
                let at = match wave.pods.iter().position(|c| c.pod == pod) {
                    Some(i) if wave.pods[i].change == Change::Hook => {
                        let c = &mut wave.pods[i];
                        c.change = change.clone();
                        c.reason = Some(purpose);
                        c.state = None;
                        i
                    }
                    Some(_) => continue,
                    None => {
                        wave.pods.push(PodChange {
                            reason: Some(purpose),
                            ..entry(pod, change.clone())
                        });
                        wave.pods.len() - 1
                    }
                };
                if change == Change::Recreate {
                    awaiting.push_back((index, at));
                }
            }
            Touch::Created { pod, revision } => {
                let replaced = awaiting.pop_front().and_then(|(w, i)| {
                    if w == index {
                        wave.pods.get_mut(i)
                    } else {
                        waves.get_mut(w)?.pods.get_mut(i)
                    }
                });
                match replaced {
                    Some(target) => {
                        target.replacement = Some(pod);
                        target.revision = revision;
                    }
                    None => wave.pods.push(PodChange { revision, ..entry(pod, Change::Create) }),
                }
            }
        }
    }
    if !wave.pods.is_empty() {
        waves.push(wave);
    }
}

fn outcome_of(cluster: &Cluster, settled: bool, blocked: Option<Blocked>) -> Outcome {
    let status = &cluster.workload["status"];
    let update_revision = status["updateRevision"]
        .as_str()
        .or_else(|| status["daemonSetHash"].as_str())
        .map(str::to_owned);
    let live = cluster.pods.iter().filter(|p| p.metadata.deletion_timestamp.is_none());
    let mut outcome = Outcome { settled, update_revision, blocked, ..Default::default() };
    for pod in live {
        let name = pod.metadata.name.clone().unwrap_or_default();
        if outcome.update_revision.is_some() && revision_of(pod) != outcome.update_revision {
            outcome.not_updated.push(name.clone());
        }
        if let Some(state) = hook_state(pod) {
            outcome.hooked.insert(name.clone(), state.to_owned());
        }
        if crate::pod::condition(pod, "Ready").is_none_or(|c| c.status != "True") {
            outcome.not_ready.push(name);
        }
    }
    outcome.not_updated.sort();
    outcome.not_ready.sort();
    outcome
}
