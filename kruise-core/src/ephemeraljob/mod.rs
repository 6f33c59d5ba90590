//! EphemeralJob: ephemeral containers added to running pods, for debugging or one-off tasks.
//!
//! [`plan`] takes a [`Snapshot`] (the job and the pods of its namespace) and `now`, and
//! answers with a [`Plan`]: the pods to add the containers to (through their
//! `ephemeralcontainers` subresource), the job to delete once its TTL has passed, the new
//! status and when to look again. It follows upstream's controller
//! (`pkg/controller/ephemeraljob`):
//!
//! - **Targets** ([`targets`]): the pods the selector matches (none without a selector), not
//!   finished and not being deleted, oldest first; a pod that already has a container of one
//!   of the template's names that this job did not add is left out; at most `replicas`.
//! - **Containers**: the template's, each with `KRUISE_EJOB_ID=<job UID>` appended to its
//!   env, which is how a pod's container is known as the job's.
//! - **Counts** ([`pod_state`]): each target is succeeded (every container exited 0), failed
//!   (one exited non-zero or could not start), running, waiting, or not counted.
//! - **Phase**: `Waiting` with no target (`MatchedEmpty`); `Succeeded` once `replicas` (or
//!   every target) succeeded; `Running`; `Failed` once all failed; `Paused` whenever
//!   `paused`; `Failed` past `activeDeadlineSeconds` (the containers run on: a pod's ephemeral
//!   containers cannot be stopped); `Error` with no containers in the template.
//! - **TTL**: a finished job is deleted `ttlSecondsAfterFinished` (default 1800) after it
//!   finished.
//!
//! Where this differs from upstream:
//! - `parallelism` (default 1) bounds the targets whose containers have not finished, so a
//!   container that waits for its image counts; upstream subtracts only the running ones,
//!   and so could start more than `parallelism` at once.
//! - No finalizer is added (upstream's removes nothing: ephemeral containers cannot be
//!   removed from a pod); an upstream job's finalizer is taken off when it is deleted.
//! - Conditions keep their times until they change, so the status is written only when it
//!   changes; upstream rewrites them at every reconcile.
//! - A Normal `SuccessfulCreate` Event names each pod the containers were added to.

pub mod admission;

use std::collections::BTreeSet;
use std::sync::Arc;

use jiff::{SignedDuration, Timestamp};
use k8s_openapi::api::core::v1::{EnvVar, EphemeralContainer, Pod};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use kruise_api::apps::v1alpha1::{
    EphemeralJob, EphemeralJobCondition, EphemeralJobConditionType, EphemeralJobPhase,
    EphemeralJobStatus,
};
use kruise_api::well_known::env::container::KRUISE_EJOB_ID;
use kruise_api::well_known::finalizers::EPHEMERAL_CONTAINERS_CLEANUP;
use serde_json::json;

use crate::plan::{Action, Event, EventType, Guard, ObjectKind, Patch, Plan, Subresource, Target};
use crate::selector::Selector;

/// apps.kruise.io/v1alpha1 EphemeralJob.
pub const EPHEMERAL_JOB: ObjectKind = ObjectKind {
    group: "apps.kruise.io",
    version: "v1alpha1",
    kind: "EphemeralJob",
    plural: "ephemeraljobs",
    namespaced: true,
};

/// The TTL of a finished job when `ttlSecondsAfterFinished` is unset.
pub const DEFAULT_TTL_SECONDS: i64 = 1800;

/// What [`plan`] reads.
#[derive(Clone, Debug)]
pub struct Snapshot {
    /// The job.
    pub job: EphemeralJob,
    /// The pods of its namespace (or at least those its selector matches).
    pub pods: Vec<Pod>,
}

/// Where one target pod's containers stand.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PodState {
    /// Every template container exited 0.
    Succeeded,
    /// A template container exited non-zero, or could not start.
    Failed,
    /// A template container runs.
    Running,
    /// A template container waits to start.
    Waiting,
    /// Nothing reported yet (not added, or no status).
    Unknown,
}

fn template_names(job: &EphemeralJob) -> BTreeSet<&str> {
    job.spec.template.ephemeral_containers.iter().map(|c| c.name.as_str()).collect()
}

fn owned_by(container: &EphemeralContainer, uid: &str) -> bool {
    container
        .env
        .iter()
        .flatten()
        .any(|e| e.name == KRUISE_EJOB_ID && e.value.as_deref() == Some(uid))
}

/// Whether the pod has one of the job's containers (a template name, added by the job).
pub fn has_job_containers(pod: &Pod, job: &EphemeralJob) -> bool {
    let names = template_names(job);
    let uid = job.metadata.uid.as_deref().unwrap_or_default();
    ephemeral_of(pod).any(|c| names.contains(c.name.as_str()) && owned_by(c, uid))
}

fn ephemeral_of(pod: &Pod) -> impl Iterator<Item = &EphemeralContainer> {
    pod.spec.as_ref().and_then(|s| s.ephemeral_containers.as_ref()).into_iter().flatten()
}

fn is_active(pod: &Pod) -> bool {
    let phase = pod.status.as_ref().and_then(|s| s.phase.as_deref());
    !matches!(phase, Some("Succeeded" | "Failed")) && pod.metadata.deletion_timestamp.is_none()
}

/// The job's target pods: matched, active, without a conflicting container of the same name,
/// oldest first (then by name), at most `replicas`.
pub fn targets<'a>(job: &EphemeralJob, pods: &'a [Pod]) -> Vec<&'a Pod> {
    let namespace = job.metadata.namespace.as_deref().unwrap_or_default();
    let Ok(selector) = Selector::parse(job.spec.selector.as_ref()) else {
        return Vec::new();
    };
    let names = template_names(job);
    let uid = job.metadata.uid.as_deref().unwrap_or_default();
    let mut matched: Vec<&Pod> = pods
        .iter()
        .filter(|p| p.metadata.namespace.as_deref().unwrap_or_default() == namespace)
        .filter(|p| selector.matches(p.metadata.labels.as_ref().unwrap_or(&Default::default())))
        .filter(|p| is_active(p))
        .filter(|p| !ephemeral_of(p).any(|c| names.contains(c.name.as_str()) && !owned_by(c, uid)))
        .collect();
    matched.sort_by(|a, b| {
        let created = |p: &Pod| p.metadata.creation_timestamp.as_ref().map(|t| t.0);
        created(a).cmp(&created(b)).then_with(|| a.metadata.name.cmp(&b.metadata.name))
    });
    if let Some(replicas) = job.spec.replicas {
        matched.truncate(usize::try_from(replicas).unwrap_or(0));
    }
    matched
}

/// Where the job's containers in `pod` stand, from `status.ephemeralContainerStatuses`.
pub fn pod_state(job: &EphemeralJob, pod: &Pod) -> PodState {
    let names = template_names(job);
    let (mut succeeded, mut running, mut waiting) = (0usize, 0usize, 0usize);
    let statuses = pod.status.as_ref().and_then(|s| s.ephemeral_container_statuses.as_ref());
    for status in statuses.into_iter().flatten().filter(|s| names.contains(s.name.as_str())) {
        let state = status.state.as_ref();
        if let Some(done) = state.and_then(|s| s.terminated.as_ref()) {
            if done.exit_code != 0 {
                return PodState::Failed;
            }
            if done.finished_at.is_some() {
                succeeded += 1;
                continue;
            }
        }
        if state.is_some_and(|s| s.running.is_some()) {
            running += 1;
        } else if let Some(wait) = state.and_then(|s| s.waiting.as_ref()) {
            if wait.reason.as_deref() == Some("RunContainerError") {
                return PodState::Failed;
            }
            waiting += 1;
        }
    }
    if succeeded > 0 && succeeded == names.len() {
        PodState::Succeeded
    } else if running > 0 {
        PodState::Running
    } else if waiting > 0 {
        PodState::Waiting
    } else {
        PodState::Unknown
    }
}

/// The job's containers as they are added to a pod: the template's, each marked with the
/// job's UID.
pub fn containers_for(job: &EphemeralJob) -> Vec<EphemeralContainer> {
    let uid = job.metadata.uid.clone().unwrap_or_default();
    job.spec
        .template
        .ephemeral_containers
        .iter()
        .map(|c| {
            let mut c = c.clone();
            c.env.get_or_insert_with(Vec::new).push(EnvVar {
                name: KRUISE_EJOB_ID.into(),
                value: Some(uid.clone()),
                value_from: None,
            });
            c
        })
        .collect()
}

fn pod_target(pod: &Pod) -> Target {
    Target::new(
        ObjectKind::POD,
        pod.metadata.namespace.as_deref(),
        pod.metadata.name.as_deref().unwrap_or_default(),
    )
}

/// Sets `type_` True with `reason` and `message`; the times move only when it changes.
fn set_condition(
    status: &mut EphemeralJobStatus,
    type_: EphemeralJobConditionType,
    reason: &str,
    message: String,
    now: Timestamp,
) {
    let fresh = EphemeralJobCondition {
        type_,
        status: "True".into(),
        last_probe_time: Some(Time(now)),
        last_transition_time: Some(Time(now)),
        reason: reason.into(),
        message,
    };
    match status.conditions.iter_mut().find(|c| c.type_ == fresh.type_) {
        Some(c)
            if c.status == fresh.status
                && c.reason == fresh.reason
                && c.message == fresh.message => {}
        Some(c) => *c = fresh,
        None => status.conditions.push(fresh),
    }
}

fn since(then: &Time, now: Timestamp) -> SignedDuration {
    now.duration_since(then.0)
}

/// Plans one reconcile of the job in `snapshot` at `now`.
pub fn plan(snapshot: &Snapshot, now: Timestamp) -> Plan<EphemeralJobStatus> {
    let job = &snapshot.job;
    let mut out: Plan<EphemeralJobStatus> = Plan::empty(Default::default());
    let namespace = job.metadata.namespace.clone().unwrap_or_default();
    let name = job.metadata.name.clone().unwrap_or_default();
    let uid = job.metadata.uid.clone().unwrap_or_default();
    let job_target = || Target::new(EPHEMERAL_JOB, Some(&namespace), &name);

    // Deleted: nothing to undo; upstream's finalizer, if any, comes off.
    if job.metadata.deletion_timestamp.is_some() {
        let finalizers = job.metadata.finalizers.clone().unwrap_or_default();
        if finalizers.iter().any(|f| f == EPHEMERAL_CONTAINERS_CLEANUP) {
            let kept: Vec<&String> =
                finalizers.iter().filter(|f| *f != EPHEMERAL_CONTAINERS_CLEANUP).collect();
            let rv = job.metadata.resource_version.clone().unwrap_or_default();
            out.actions.push(Action::PatchObject {
                target: job_target().guarded(Guard::ResourceVersion(rv)),
                subresource: Subresource::Main,
                patch: Patch::merge(json!({"metadata": {"finalizers": kept}})),
            });
        }
        return out;
    }
    let old = job.status.clone().unwrap_or_default();

    // Finished: the job waits for its TTL, then goes.
    if let Some(done) = old.completion_time.as_ref() {
        let ttl = job.spec.ttl_seconds_after_finished.map_or(DEFAULT_TTL_SECONDS, i64::from);
        let left = SignedDuration::from_secs(ttl) - since(done, now);
        if left <= SignedDuration::ZERO {
            out.actions
                .push(Action::DeleteObject { target: job_target().guarded(Guard::Uid(uid)) });
        } else {
            out.requeue_after = Some(left);
        }
        return out;
    }

    let mut status = old.clone();
    if status.start_time.is_none() {
        status.start_time = Some(Time(now));
    }
    let deadline = job.spec.active_deadline_seconds;
    let past_deadline = match (deadline, status.start_time.as_ref()) {
        (Some(deadline), Some(start)) => {
            let left = SignedDuration::from_secs(deadline) - since(start, now);
            if left > SignedDuration::ZERO {
                out.requeue_after = Some(left);
            }
            left <= SignedDuration::ZERO
        }
        _ => false,
    };
    if status.conditions.is_empty() {
        set_condition(
            &mut status,
            EphemeralJobConditionType::Initialized,
            "Initialized",
            String::new(),
            now,
        );
    }

    let targets = targets(job, &snapshot.pods);
    let states: Vec<(&Pod, PodState, bool)> =
        targets.iter().map(|p| (*p, pod_state(job, p), has_job_containers(p, job))).collect();
    let count = |state: PodState| {
        i32::try_from(states.iter().filter(|(_, s, _)| *s == state).count()).unwrap_or(i32::MAX)
    };
    status.matches = i32::try_from(targets.len()).unwrap_or(i32::MAX);
    status.succeeded = count(PodState::Succeeded);
    status.failed = count(PodState::Failed);
    status.running = count(PodState::Running);
    status.waiting = count(PodState::Waiting);
    let replicas = job.spec.replicas.unwrap_or(status.matches);

    if status.matches == 0 {
        status.phase = EphemeralJobPhase::Waiting;
        set_condition(
            &mut status,
            EphemeralJobConditionType::MatchedEmpty,
            "MatchEmpty",
            "job match no pods".into(),
            now,
        );
    } else if status.succeeded == replicas && status.succeeded > 0 {
        status.completion_time = Some(Time(now));
        status.phase = EphemeralJobPhase::Succeeded;
        set_condition(
            &mut status,
            EphemeralJobConditionType::JobSucceeded,
            "JobSucceeded",
            "job success to run all tasks".into(),
            now,
        );
    } else if status.running > 0 {
        status.phase = EphemeralJobPhase::Running;
    } else if status.failed == replicas {
        status.completion_time = Some(Time(now));
        status.phase = EphemeralJobPhase::Failed;
        set_condition(
            &mut status,
            EphemeralJobConditionType::JobFailed,
            "JobFailed",
            "job failed to run all tasks".into(),
            now,
        );
    } else if status.waiting == replicas {
        status.phase = EphemeralJobPhase::Waiting;
    } else {
        status.phase = EphemeralJobPhase::Unknown;
    }
    if job.spec.paused {
        status.phase = EphemeralJobPhase::Paused;
    }
    if status.failed > 0 {
        set_condition(
            &mut status,
            EphemeralJobConditionType::JobFailed,
            "CreateFailed",
            format!("EphemeralJob {namespace}/{name} failed to create ephemeral container"),
            now,
        );
    }
    if past_deadline
        && matches!(
            status.phase,
            EphemeralJobPhase::Waiting | EphemeralJobPhase::Unknown | EphemeralJobPhase::Running
        )
    {
        status.completion_time = Some(Time(now));
        status.phase = EphemeralJobPhase::Failed;
        set_condition(
            &mut status,
            EphemeralJobConditionType::JobFailed,
            "DeadlineExceeded",
            format!("EphemeralJob {namespace}/{name} was active longer than specified deadline"),
            now,
        );
    }
    let containers = containers_for(job);
    if containers.is_empty() {
        status.phase = EphemeralJobPhase::Error;
        set_condition(
            &mut status,
            EphemeralJobConditionType::JobError,
            "Error",
            "job spec invalid fields.".into(),
            now,
        );
    }

    // New containers: none once finished, paused or broken; else up to the parallelism.
    let finished = status.completion_time.is_some();
    if !finished && !job.spec.paused && !containers.is_empty() {
        let unfinished = states
            .iter()
            .filter(|(_, s, injected)| {
                *injected && !matches!(s, PodState::Succeeded | PodState::Failed)
            })
            .count();
        let parallelism = usize::try_from(job.spec.parallelism.unwrap_or(1)).unwrap_or(0);
        let room = parallelism.saturating_sub(unfinished);
        let body = Arc::new(json!({"spec": {"ephemeralContainers": containers}}));
        let names: Vec<&str> = containers.iter().map(|c| c.name.as_str()).collect();
        let names = names.join(", ");
        for (pod, _, _) in states.iter().filter(|(_, _, injected)| !injected).take(room) {
            out.actions.push(Action::PatchObject {
                target: pod_target(pod),
                subresource: Subresource::EphemeralContainers,
                patch: Patch::Strategic(body.clone()),
            });
            out.events.push(Event {
                type_: EventType::Normal,
                reason: "SuccessfulCreate".into(),
                message: format!(
                    "Added ephemeral containers {names} to pod {}",
                    pod.metadata.name.as_deref().unwrap_or_default()
                ),
                after_action: Some(out.actions.len() - 1),
            });
        }
    }
    if finished {
        let ttl = job.spec.ttl_seconds_after_finished.map_or(DEFAULT_TTL_SECONDS, i64::from);
        out.requeue_after = Some(SignedDuration::from_secs(ttl.max(0)));
    }
    out.status = (status != old).then_some(status);
    out
}

#[cfg(test)]
mod tests;
