//! BroadcastJob: one pod of a job on every eligible node, run to completion.
//!
//! [`plan`] takes a [`Snapshot`] (the job, the pods it controls, the nodes) and `now`, and
//! answers with a [`Plan`]: the pods to create and delete, the job to delete once its TTL has
//! passed, the new status, the Events and when to look again. It follows upstream's
//! controller (`pkg/controller/broadcastjob`):
//!
//! - **Eligible nodes** ([`node_fits`]): the template's node selector and required node
//!   affinity, its tolerations of `NoSchedule` and `NoExecute` taints, a node that is not
//!   cordoned (unless the pod tolerates the `unschedulable` taint), and requests that fit the
//!   node's allocatable, which must allow at least one pod. Other pods' use is not counted.
//! - **Pods** ([`pod_for_node`]): the template with the labels `broadcastjob-name` and
//!   `broadcastjob-controller-uid`, controlled by the job, bound to its node by a required
//!   `metadata.name` node affinity term (the scheduler places it) or, without the scheduler,
//!   by `spec.nodeName`. Unlike upstream's random suffix, the name is the job's name and a
//!   hash of the node's, so a pod can never be created twice for one node, however stale the
//!   pod cache; parallelism then always holds, because nodes are taken in name order.
//! - **Counts:** a pod is succeeded or failed by its phase; with `restartPolicy: OnFailure` a
//!   pod whose containers restarted more than `failurePolicy.restartLimit` times (summed) is
//!   failed; the rest are active, except terminating pods, which count for nothing.
//! - **Parallelism** (number or percent of the desired pods, rounded up; unset: no limit)
//!   bounds the active pods; new pods go to the first nodes without one.
//! - **Completion** (`completionPolicy.type: Always`, the default): once every eligible node
//!   has a pod that is no longer active, the job is `Complete`; past
//!   `activeDeadlineSeconds` it fails and its active pods are deleted. `Never`: it runs on,
//!   and nodes that appear later get a pod. `ttlSecondsAfterFinished` deletes a finished job
//!   (its pods go with it, by garbage collection).
//! - **Failures** (`failurePolicy.type`): `FailFast` (the default) fails the job at the first
//!   failed pod, `Continue` carries on, `Pause` pauses it. `spec.paused` creates and deletes
//!   nothing.
//!
//! Upstream's `Pause` sets `spec.paused` in memory only, so its phase goes `paused` and its
//! Events repeat at every reconcile; here the phase stays `paused` while a failed pod remains
//! and the Event is recorded once, when it pauses.

pub mod admission;

use std::collections::HashMap;
use std::sync::Arc;

use jiff::{SignedDuration, Timestamp};
use k8s_openapi::api::core::v1::{Node, Pod, PodSpec};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, OwnerReference, Time};
use kruise_api::apps::v1beta1::{
    BroadcastJob, BroadcastJobPhase, BroadcastJobStatus, CompletionPolicyType, FailurePolicyType,
    JobCondition, JobConditionType,
};

use crate::intstr::{Rounding, lenient_value};
use crate::node_affinity::{
    fits_node_affinity, target_node_name, tolerates_parts, untolerated_taint,
};
use crate::plan::{Action, Event, EventType, Guard, NewPod, NodePin, ObjectKind, Plan, Target};
use crate::revision::quantity::Quantity;

/// The label every pod of a job carries: the job's name.
pub const JOB_NAME_LABEL: &str = "broadcastjob-name";
/// The label every pod of a job carries: the job's UID.
pub const CONTROLLER_UID_LABEL: &str = "broadcastjob-controller-uid";
/// The taint of a cordoned node.
const UNSCHEDULABLE_TAINT: &str = "node.kubernetes.io/unschedulable";

/// What [`plan`] reads.
#[derive(Clone, Debug)]
pub struct Snapshot {
    /// The job.
    pub job: BroadcastJob,
    /// The pods it controls.
    pub pods: Vec<Pod>,
    /// Every node.
    pub nodes: Vec<Node>,
    /// Bind pods by node affinity for the scheduler (`--assign-bcj-pods-by-scheduler`, the
    /// default), or by `spec.nodeName`.
    pub assign_by_scheduler: bool,
    /// New pods carry the `KruisePodReady` readiness gate, as upstream's pod webhook gives
    /// them (`PodWebhook`; see [`crate::readiness`]).
    pub readiness_gate: bool,
}

/// The node a pod is bound to: `spec.nodeName`, or the one node its required node affinity
/// names by `metadata.name`.
pub fn assigned_node(pod: &Pod) -> Option<&str> {
    target_node_name(pod)
}

/// The sum of a resource's requests over containers, or the largest init container's, as the
/// scheduler computes a pod's request, plus the pod overhead.
fn pod_request(spec: &PodSpec, resource: &str) -> Option<Quantity> {
    let request = |c: &k8s_openapi::api::core::v1::Container| {
        c.resources
            .as_ref()
            .and_then(|r| r.requests.as_ref())
            .and_then(|r| r.get(resource))
            .and_then(|q| Quantity::parse(&q.0).ok())
    };
    let mut sum: Option<Quantity> = None;
    for container in &spec.containers {
        if let Some(q) = request(container) {
            sum = Some(match sum {
                Some(s) => s.checked_add(&q)?,
                None => q,
            });
        }
    }
    for init in spec.init_containers.iter().flatten() {
        if let Some(q) = request(init)
            && sum.as_ref().is_none_or(|s| q.cmp_value(s).is_gt())
        {
            sum = Some(q);
        }
    }
    if let Some(overhead) = spec.overhead.as_ref().and_then(|o| o.get(resource))
        && let Ok(q) = Quantity::parse(&overhead.0)
    {
        sum = Some(match sum {
            Some(s) => s.checked_add(&q)?,
            None => q,
        });
    }
    sum
}

type ResourceList =
    std::collections::BTreeMap<String, k8s_openapi::apimachinery::pkg::api::resource::Quantity>;

/// What a pod needs of a node, read once from its spec and then checked against many nodes
/// ([`PodFit::fits`]; see the module documentation).
#[derive(Debug)]
pub struct PodFit<'a> {
    spec: &'a PodSpec,
    /// Whether the spec has a node selector or required node affinity to check.
    placed: bool,
    /// The node its only required node affinity term names, when that is all it asks (a pod
    /// this controller pinned): checked by name alone.
    pinned: Option<&'a str>,
    /// Whether it tolerates the taint of a cordoned node.
    tolerates_cordon: bool,
    /// Its non-zero requests, by resource, in thousandths (`None`: too large to compare, so
    /// no node fits it).
    requests: std::borrow::Cow<'a, [(String, Option<i128>)]>,
}

impl<'a> PodFit<'a> {
    /// Reads what `spec` needs.
    pub fn new(spec: &'a PodSpec) -> Self {
        let mut fit = Self::new_without_requests(spec);
        fit.requests = Self::requests_of(spec).into();
        fit
    }

    fn new_without_requests(spec: &'a PodSpec) -> Self {
        let affinity = spec
            .affinity
            .as_ref()
            .and_then(|a| a.node_affinity.as_ref())
            .and_then(|a| a.required_during_scheduling_ignored_during_execution.as_ref());
        let selector = spec.node_selector.as_ref().is_some_and(|s| !s.is_empty());
        let pinned = match affinity.map(|a| a.node_selector_terms.as_slice()) {
            Some([term])
                if !selector && term.match_expressions.as_ref().is_none_or(Vec::is_empty) =>
            {
                match term.match_fields.as_deref() {
                    Some([field])
                        if field.key == crate::node_affinity::NODE_NAME_FIELD
                            && field.operator == "In" =>
                    {
                        match field.values.as_deref() {
                            Some([node]) => Some(node.as_str()),
                            _ => None,
                        }
                    }
                    _ => None,
                }
            }
            _ => None,
        };
        let placed = pinned.is_none() && (selector || affinity.is_some());
        let tolerations = spec.tolerations.as_deref().unwrap_or_default();
        let tolerates_cordon =
            tolerations.iter().any(|t| tolerates_parts(t, UNSCHEDULABLE_TAINT, "", "NoSchedule"));
        let requests = std::borrow::Cow::Borrowed(&[][..]);
        Self { spec, placed, pinned, tolerates_cordon, requests }
    }

    fn requests_of(spec: &PodSpec) -> Vec<(String, Option<i128>)> {
        let mut resources: Vec<&str> = Vec::new();
        for container in spec.containers.iter().chain(spec.init_containers.iter().flatten()) {
            for key in container.resources.iter().flat_map(|r| r.requests.iter().flatten()) {
                if !resources.contains(&key.0.as_str()) {
                    resources.push(key.0.as_str());
                }
            }
        }
        for key in spec.overhead.iter().flatten() {
            if !resources.contains(&key.0.as_str()) {
                resources.push(key.0.as_str());
            }
        }
        resources
            .into_iter()
            .filter_map(|r| {
                let q = pod_request(spec, r).filter(|q| !q.is_zero())?;
                Some((r.to_owned(), q.milli_value()))
            })
            .collect()
    }

    /// As [`PodFit::new`], reusing `like`'s requests when `spec` asks the same resources (a
    /// pod made from the template `like` was read from), so they are not parsed again.
    pub fn like(spec: &'a PodSpec, like: &'a PodFit<'_>) -> Self {
        if !same_requests(spec, like.spec) {
            return Self::new(spec);
        }
        let mut fit = Self::new_without_requests(spec);
        fit.requests = std::borrow::Cow::Borrowed(&like.requests);
        fit
    }

    /// Whether the pod may run on `node`.
    pub fn fits(&self, node: &Node) -> bool {
        let name = node.metadata.name.as_deref().unwrap_or_default();
        if self.spec.node_name.as_deref().is_some_and(|n| !n.is_empty() && n != name) {
            return false;
        }
        if self.pinned.is_some_and(|pinned| pinned != name)
            || (self.placed && !fits_node_affinity(self.spec, node))
        {
            return false;
        }
        let node_spec = node.spec.as_ref();
        let taints = node_spec.and_then(|s| s.taints.as_deref()).unwrap_or_default();
        let tolerations = self.spec.tolerations.as_deref().unwrap_or_default();
        if untolerated_taint(taints, tolerations, &["NoSchedule", "NoExecute"]).is_some() {
            return false;
        }
        if node_spec.and_then(|s| s.unschedulable).unwrap_or(false) && !self.tolerates_cordon {
            return false;
        }
        let allocatable = node.status.as_ref().and_then(|s| s.allocatable.as_ref());
        let allocatable_of = |resource: &str| {
            let text = &allocatable?.get(resource)?.0;
            crate::revision::quantity::milli_value_of(text)
        };
        if allocatable_of("pods").is_none_or(|m| m < 1000) {
            return false;
        }
        self.requests.iter().all(|(resource, request)| match (request, allocatable_of(resource)) {
            (Some(request), Some(allocatable)) => *request <= allocatable,
            _ => false,
        })
    }
}

/// Whether two specs ask the same requests and overhead (one is read once for both).
fn same_requests(a: &PodSpec, b: &PodSpec) -> bool {
    fn requests(c: &k8s_openapi::api::core::v1::Container) -> Option<&ResourceList> {
        c.resources.as_ref().and_then(|r| r.requests.as_ref())
    }
    fn same_list(a: Option<&ResourceList>, b: Option<&ResourceList>) -> bool {
        match (a, b) {
            (Some(a), Some(b)) => {
                a.len() == b.len()
                    && a.iter().zip(b).all(|((ka, va), (kb, vb))| ka == kb && va.0 == vb.0)
            }
            (a, b) => a.is_none_or(|a| a.is_empty()) && b.is_none_or(|b| b.is_empty()),
        }
    }
    fn same_containers(
        a: &[k8s_openapi::api::core::v1::Container],
        b: &[k8s_openapi::api::core::v1::Container],
    ) -> bool {
        a.len() == b.len() && a.iter().zip(b).all(|(x, y)| same_list(requests(x), requests(y)))
    }
    same_containers(&a.containers, &b.containers)
        && same_containers(
            a.init_containers.as_deref().unwrap_or_default(),
            b.init_containers.as_deref().unwrap_or_default(),
        )
        && same_list(a.overhead.as_ref(), b.overhead.as_ref())
}

/// Whether a pod with `spec` may run on `node` (see the module documentation).
pub fn node_fits(spec: &PodSpec, node: &Node) -> bool {
    PodFit::new(spec).fits(node)
}

/// The name of the job's pod on `node`: the job's name and a hash of the node's, the same at
/// every reconcile.
pub fn pod_name(job: &str, node: &str) -> String {
    let hash = crate::revision::hash::fnv1a_32(node.as_bytes());
    format!("{job}-{}", crate::revision::hash::safe_encode(&hash.to_string()))
}

/// The pod every node's pod of `job` is made from: the template with the job's labels and
/// owner (and the `KruisePodReady` gate with `readiness_gate`), not yet named or bound.
pub fn shared_pod(job: &BroadcastJob, readiness_gate: bool) -> Pod {
    let name = job.metadata.name.clone().unwrap_or_default();
    let uid = job.metadata.uid.clone().unwrap_or_default();
    let template = &job.spec.template;
    let template_meta = template.metadata.clone().unwrap_or_default();
    let mut labels = template_meta.labels.unwrap_or_default();
    labels.insert(JOB_NAME_LABEL.into(), name.clone());
    labels.insert(CONTROLLER_UID_LABEL.into(), uid.clone());
    let mut pod = Pod {
        metadata: ObjectMeta {
            namespace: job.metadata.namespace.clone(),
            labels: Some(labels),
            annotations: template_meta.annotations,
            finalizers: template_meta.finalizers,
            owner_references: Some(vec![OwnerReference {
                api_version: "apps.kruise.io/v1beta1".into(),
                kind: "BroadcastJob".into(),
                name,
                uid,
                controller: Some(true),
                block_owner_deletion: Some(true),
            }]),
            ..ObjectMeta::default()
        },
        spec: template.spec.clone(),
        status: None,
    };
    if readiness_gate && crate::readiness::wants_gate(&pod, false) {
        crate::readiness::inject_gate(pod.spec.get_or_insert_with(Default::default));
    }
    pod
}

/// The job's pod for `node`, from `shared` ([`shared_pod`]), built when it is sent.
fn new_pod(job: &str, shared: &Arc<Pod>, node: &str, assign_by_scheduler: bool) -> NewPod {
    let pin = if assign_by_scheduler {
        NodePin::Affinity(node.to_owned())
    } else {
        NodePin::NodeName(node.to_owned())
    };
    let label = (JOB_NAME_LABEL.to_owned(), job.to_owned());
    NewPod::pinned(shared.clone(), pod_name(job, node), label, pin)
}

/// The job's pod for `node`, as the planner creates it with `PodWebhook` on.
pub fn pod_for_node(job: &BroadcastJob, node: &str, assign_by_scheduler: bool) -> Pod {
    let name = job.metadata.name.clone().unwrap_or_default();
    let shared = Arc::new(shared_pod(job, true));
    new_pod(&name, &shared, node, assign_by_scheduler).build().into_owned()
}

/// A pod's standing in the counts.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Standing {
    Succeeded,
    Failed,
    Active,
    /// Terminating and not ended: counted nowhere.
    Leaving,
}

fn standing(pod: &Pod, restart_limit: i32) -> Standing {
    let phase = pod.status.as_ref().and_then(|s| s.phase.as_deref()).unwrap_or_default();
    match phase {
        "Succeeded" => return Standing::Succeeded,
        "Failed" => return Standing::Failed,
        _ => {}
    }
    if pod.metadata.deletion_timestamp.is_some() {
        return Standing::Leaving;
    }
    let on_failure =
        pod.spec.as_ref().and_then(|s| s.restart_policy.as_deref()) == Some("OnFailure");
    if on_failure {
        let status = pod.status.as_ref();
        let restarts: i64 = status
            .into_iter()
            .flat_map(|s| {
                s.init_container_statuses
                    .iter()
                    .flatten()
                    .chain(s.container_statuses.iter().flatten())
            })
            .map(|c| i64::from(c.restart_count))
            .sum();
        if restarts > i64::from(restart_limit) {
            return Standing::Failed;
        }
    }
    Standing::Active
}

fn is_active(pod: &Pod) -> bool {
    let phase = pod.status.as_ref().and_then(|s| s.phase.as_deref()).unwrap_or_default();
    phase != "Succeeded" && phase != "Failed" && pod.metadata.deletion_timestamp.is_none()
}

fn pod_target(pod: &Pod) -> Target {
    let uid = pod.metadata.uid.clone().unwrap_or_default();
    Target::new(
        ObjectKind::POD,
        pod.metadata.namespace.as_deref(),
        pod.metadata.name.as_deref().unwrap_or_default(),
    )
    .guarded(if uid.is_empty() { Guard::None } else { Guard::Uid(uid) })
}

/// The BroadcastJob's kind, for the actions that name the job itself.
pub const BROADCAST_JOB: ObjectKind = ObjectKind::BROADCAST_JOB;

fn has_finished(status: &BroadcastJobStatus) -> bool {
    status.conditions.iter().any(|c| {
        c.status == "True"
            && matches!(c.type_, JobConditionType::Complete | JobConditionType::Failed)
    })
}

fn seconds(n: i64) -> SignedDuration {
    SignedDuration::from_secs(n)
}

fn since(then: &Time, now: Timestamp) -> SignedDuration {
    now.duration_since(then.0)
}

fn event(type_: EventType, reason: &'static str, message: String) -> Event {
    Event { type_, reason: reason.into(), message, after_action: None }
}

/// Deletes `pod` (guarded by its UID), with the `SuccessfulDelete` Event once done.
fn delete_pod(out: &mut Plan<BroadcastJobStatus>, pod: &Pod) {
    out.actions.push(Action::DeleteObject { target: pod_target(pod) });
    let name = pod.metadata.name.as_deref().unwrap_or_default();
    out.events.push(Event {
        after_action: Some(out.actions.len() - 1),
        ..event(EventType::Normal, "SuccessfulDelete", format!("Delete pod: {name}"))
    });
}

/// Plans one reconcile of the job in `snapshot` at `now`.
pub fn plan(snapshot: &Snapshot, now: Timestamp) -> Plan<BroadcastJobStatus> {
    let job = &snapshot.job;
    let mut out: Plan<BroadcastJobStatus> = Plan::empty(Default::default());
    let old = job.status.clone().unwrap_or_default();
    let mut status = old.clone();
    let never = job.spec.completion_policy.type_ == Some(CompletionPolicyType::Never);
    let namespace = job.metadata.namespace.clone().unwrap_or_default();
    let name = job.metadata.name.clone().unwrap_or_default();
    let ttl = job.spec.completion_policy.ttl_seconds_after_finished.map(i64::from);
    let deadline = job.spec.completion_policy.active_deadline_seconds;

    // A finished job waits for its TTL, then goes (its pods by garbage collection).
    if !never && has_finished(&old) {
        if let (Some(ttl), Some(done)) = (ttl, old.completion_time.as_ref()) {
            let left = seconds(ttl) - since(done, now);
            if left <= SignedDuration::ZERO {
                let uid = job.metadata.uid.clone().unwrap_or_default();
                let target =
                    Target::new(BROADCAST_JOB, Some(&namespace), &name).guarded(Guard::Uid(uid));
                out.actions.push(Action::DeleteObject { target });
            } else {
                out.requeue_after = Some(left);
            }
        }
        return out;
    }

    if status.start_time.is_none() {
        status.start_time = Some(Time(now));
    }
    if !never && let (Some(deadline), Some(start)) = (deadline, status.start_time.as_ref()) {
        let left = seconds(deadline) - since(start, now);
        if left > SignedDuration::ZERO {
            out.requeue_after = Some(left);
        }
    }
    if status.phase == BroadcastJobPhase::default() {
        status.phase = BroadcastJobPhase::Running;
    }

    // Pods by node; a second pod on one node is reported (the later one wins, as upstream).
    let mut by_node: HashMap<&str, &Pod, foldhash::fast::RandomState> =
        HashMap::with_capacity_and_hasher(snapshot.pods.len(), Default::default());
    for pod in &snapshot.pods {
        let node = assigned_node(pod).unwrap_or_default();
        if let Some(earlier) = by_node.insert(node, pod) {
            let _ = earlier;
            out.events.push(event(
                EventType::Warning,
                "DuplicatePodCreatedOnSameNode",
                format!(
                    "Duplicated pod {} found on same node {node}",
                    pod.metadata.name.as_deref().unwrap_or_default()
                ),
            ));
        }
    }

    let restart_limit = job.spec.failure_policy.restart_limit;
    let (mut active, mut failed, mut succeeded) = (0i32, 0i32, 0i32);
    let mut active_pods = Vec::new();
    for pod in &snapshot.pods {
        match standing(pod, restart_limit) {
            Standing::Succeeded => succeeded += 1,
            Standing::Failed => failed += 1,
            Standing::Active => {
                active += 1;
                active_pods.push(pod);
            }
            Standing::Leaving => {}
        }
    }

    // The desired nodes: those whose pod may stay, and those that fit a new one.
    let template_spec = job.spec.template.spec.clone().unwrap_or_default();
    let template_fit = PodFit::new(&template_spec);
    let nodes = snapshot.nodes.iter();
    let mut desired: Vec<(&str, Option<&Pod>)> = Vec::new();
    let mut misplaced: Vec<&Pod> = Vec::new();
    let mut waiting: Vec<&str> = Vec::new();
    for node in nodes {
        let node_name = node.metadata.name.as_deref().unwrap_or_default();
        match by_node.get(node_name) {
            Some(pod) => {
                let fits = pod
                    .spec
                    .as_ref()
                    .is_none_or(|spec| PodFit::like(spec, &template_fit).fits(node));
                if !fits && pod.metadata.deletion_timestamp.is_none() {
                    misplaced.push(pod);
                } else {
                    desired.push((node_name, Some(pod)));
                }
            }
            None => {
                // The template as the node's pod: its own `nodeName` aside.
                let fits = if template_spec.node_name.as_deref().is_some_and(|n| !n.is_empty()) {
                    let mut mock = template_spec.clone();
                    mock.node_name = Some(node_name.to_owned());
                    node_fits(&mock, node)
                } else {
                    template_fit.fits(node)
                };
                if fits {
                    waiting.push(node_name);
                    desired.push((node_name, None));
                }
            }
        }
    }
    // New pods go to the nodes in name order, whatever order the nodes were listed in.
    waiting.sort_unstable();
    misplaced.sort_unstable_by(|a, b| a.metadata.name.cmp(&b.metadata.name));
    status.desired = i32::try_from(desired.len()).unwrap_or(i32::MAX);
    status.active = active;
    status.failed = failed;
    status.succeeded = succeeded;

    let finish = |status: &mut BroadcastJobStatus, type_: JobConditionType, message: String| {
        let reason = match &type_ {
            JobConditionType::Complete => "Complete",
            _ => "Failed",
        };
        status.conditions.push(JobCondition {
            type_,
            status: "True".into(),
            last_probe_time: Some(Time(now)),
            last_transition_time: Some(Time(now)),
            reason: reason.into(),
            message,
        });
        status.completion_time = Some(Time(now));
    };
    let ttl_requeue = ttl.map(|t| seconds(t + 1));

    if status.phase == BroadcastJobPhase::Failed {
        out.status = (status != old).then_some(status);
        return out;
    }
    if job.spec.paused {
        status.phase = BroadcastJobPhase::Paused;
        out.status = (status != old).then_some(status);
        return out;
    }
    let failure_policy =
        job.spec.failure_policy.type_.clone().unwrap_or(FailurePolicyType::FailFast);
    if status.phase == BroadcastJobPhase::Paused {
        if failed > 0 && failure_policy == FailurePolicyType::Pause {
            out.status = (status != old).then_some(status);
            return out;
        }
        status.phase = BroadcastJobPhase::Running;
        out.events.push(event(EventType::Normal, "Continue", "continue to process job".into()));
    }

    let mut failure: Option<(&'static str, String)> = None;
    if failed > 0 {
        match failure_policy {
            FailurePolicyType::Pause => {
                out.events.push(event(
                    EventType::Warning,
                    "Paused",
                    "job is paused, due to failed pod".into(),
                ));
                status.phase = BroadcastJobPhase::Paused;
                out.status = (status != old).then_some(status);
                return out;
            }
            FailurePolicyType::FailFast => {
                failure = Some((
                    "failed pod is found",
                    "failure policy is FailurePolicyTypeFailFast and failed pod is found".into(),
                ));
            }
            _ => {}
        }
    }
    if failure.is_none()
        && !never
        && let (Some(deadline), Some(start)) = (deadline, status.start_time.as_ref())
        && since(start, now) >= seconds(deadline)
    {
        failure = Some((
            "DeadlineExceeded",
            format!("Job {namespace}/{name} was active longer than specified deadline"),
        ));
    }

    if let Some((reason, message)) = failure {
        for pod in active_pods {
            delete_pod(&mut out, pod);
            status.failed += 1;
            status.active -= 1;
        }
        status.phase = BroadcastJobPhase::Failed;
        finish(&mut status, JobConditionType::Failed, message.clone());
        out.events.push(event(
            EventType::Warning,
            reason,
            format!(
                "{message}: {} pods succeeded, {} pods failed",
                status.succeeded, status.failed
            ),
        ));
        out.requeue_after = ttl_requeue;
        out.status = Some(status);
        return out;
    }

    // Still running: pods on nodes they no longer fit go; new pods up to the parallelism.
    for pod in misplaced {
        delete_pod(&mut out, pod);
    }
    if job.metadata.deletion_timestamp.is_none() && !waiting.is_empty() {
        let parallelism = match &job.spec.parallelism {
            None => Ok(i32::MAX),
            Some(value) => lenient_value(value, status.desired, Rounding::Up),
        };
        match parallelism {
            Err(err) => out.events.push(event(
                EventType::Warning,
                "FailedCreate",
                format!("spec.parallelism: {err}"),
            )),
            Ok(parallelism) if active > parallelism => out.events.push(event(
                EventType::Warning,
                "TooManyActivePods",
                "Number of active pods exceed parallelism limit".into(),
            )),
            Ok(parallelism) => {
                let room = usize::try_from(parallelism - active).unwrap_or(0);
                let shared = Arc::new(shared_pod(job, snapshot.readiness_gate));
                for node in waiting.iter().take(room) {
                    let pod = new_pod(&name, &shared, node, snapshot.assign_by_scheduler);
                    let pod_name = pod.name().to_owned();
                    out.actions.push(Action::CreatePod { pod });
                    out.events.push(Event {
                        after_action: Some(out.actions.len() - 1),
                        ..event(
                            EventType::Normal,
                            "SuccessfulCreate",
                            format!("Created pod: {pod_name}"),
                        )
                    });
                }
            }
        }
    }
    let complete = !never
        && !desired.is_empty()
        && desired.iter().all(|(_, pod)| pod.is_some_and(|p| !is_active(p)));
    if complete {
        status.phase = BroadcastJobPhase::Completed;
        let message = format!(
            "Job {namespace}/{name} is completed, {} pods succeeded, {} pods failed",
            status.succeeded, status.failed
        );
        finish(&mut status, JobConditionType::Complete, message.clone());
        out.events.push(event(EventType::Normal, "JobComplete", message));
        out.requeue_after = ttl_requeue;
    }
    out.status = (status != old).then_some(status);
    out
}

#[cfg(test)]
mod tests;
