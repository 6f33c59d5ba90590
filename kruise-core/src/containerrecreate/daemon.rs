//! The kruise daemon's side: which containers to stop, and the per-container progress.

use jiff::{SignedDuration, Timestamp};
use k8s_openapi::api::core::v1::Pod;
use kruise_api::apps::v1beta1::{
    ContainerRecreateRequest, ContainerRecreateRequestContainerRecreateState,
    ContainerRecreateRequestPhase,
};
use serde::Serialize;

use super::controller::pre_recreate_grace_since;
use super::{
    DEFAULT_TERMINATION_GRACE_SECONDS, RECREATING_POLL, fails_fast, is_final, merge_requeue,
    phase_of,
};

/// Whether a runtime container runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[non_exhaustive]
pub enum ContainerRuntimeState {
    /// Created, not started.
    Created,
    /// Running.
    Running,
    /// Exited.
    Exited,
    /// The runtime does not know.
    Unknown,
}

/// A container of the pod as the runtime reports it (several may share a name: the old,
/// exited instance and the new one).
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ContainerSnapshot {
    /// Container name in the pod.
    pub name: String,
    /// Container ID with the runtime prefix, e.g. `containerd://<id>`.
    pub id: String,
    /// The restart count the kubelet gave this instance.
    pub restart_count: i32,
    /// Its state.
    pub state: ContainerRuntimeState,
    /// When it started (running instances).
    pub started_at: Option<Timestamp>,
}

/// A container to stop.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct StopContainer {
    /// Runtime container ID.
    pub id: String,
    /// Container name.
    pub name: String,
    /// Grace period for the stop (after the preStop hook the request carries).
    pub grace_seconds: i64,
}

/// Why the daemon does nothing yet.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(tag = "reason", rename_all = "camelCase")]
#[non_exhaustive]
pub enum RecreateWait {
    /// The request is done or going away.
    Finished,
    /// `unreadyGracePeriodSeconds`: the controller has not made the pod not-ready yet.
    UnreadyAcquire,
    /// `unreadyGracePeriodSeconds`: the pod is not-ready; the grace period is running.
    UnreadyGrace,
}

/// What the daemon does for the active request of a pod.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct RecreatePlan {
    /// Set the request's phase (to Recreating, clearing the message) before anything else.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub set_phase: Option<ContainerRecreateRequestPhase>,
    /// Containers to stop. Write [`RecreatePlan::states`] first (they are marked
    /// `isKilled`), then stop; report a failed stop with [`stop_failed`].
    pub stop: Vec<StopContainer>,
    /// The new `status.containerRecreateStates`, when they change.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub states: Option<Vec<ContainerRecreateRequestContainerRecreateState>>,
    /// Complete the request (phase Completed, completion time now) with this message.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub complete: Option<String>,
    /// Why nothing happens yet.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub wait: Option<RecreateWait>,
    /// When to look again.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub requeue_after: Option<SignedDuration>,
}

/// The daemon's plan for the request [`super::pick_active`] chose (upstream's `sync` and
/// `manage`). `pod` (when the daemon has it) supplies the grace period when the request has
/// none and readiness when the controller's snapshot lags.
///
/// Each container's state:
///
/// - Succeeded and Failed stay;
/// - no runtime container of that name: Pending, "not found container on Node";
/// - its newest instance is not running: Recreating (the kubelet will start it);
/// - `forceRecreate` and not stopped yet: Pending (to be stopped now);
/// - its ID or restart count differ from `statusContext` (it was recreated, by us or
///   otherwise): Recreating, and Succeeded once the new instance is ready (as the pod's status
///   or the controller's snapshot of it says) and has run `minStartedSeconds`;
/// - otherwise Pending.
///
/// Then, in spec order: a Failed container completes the request unless `failurePolicy` is
/// Ignore; a Recreating one, or a Pending one already stopped, is waited for when
/// `orderedRecreate`; a Pending one is stopped (and becomes Recreating, `isKilled`) and, when
/// ordered, the walk ends there; a Pending one with no runtime container ends the walk. The
/// request completes when every container is Succeeded or Failed.
pub fn plan_recreate(
    crr: &ContainerRecreateRequest,
    pod: Option<&Pod>,
    runtime_containers: &[ContainerSnapshot],
    now: Timestamp,
) -> RecreatePlan {
    let mut plan = RecreatePlan::default();
    if crr.metadata.deletion_timestamp.is_some() || super::is_completed(crr) {
        plan.wait = Some(RecreateWait::Finished);
        return plan;
    }
    if phase_of(crr) != ContainerRecreateRequestPhase::Recreating {
        plan.set_phase = Some(ContainerRecreateRequestPhase::Recreating);
        return plan;
    }
    let strategy = crr.spec.strategy.clone().unwrap_or_default();
    if let Some(grace) = strategy.unready_grace_period_seconds {
        let Some(since) = pre_recreate_grace_since(crr) else {
            plan.wait = Some(RecreateWait::UnreadyAcquire);
            return plan;
        };
        let left = SignedDuration::from_secs(grace) - now.duration_since(since);
        if left > SignedDuration::ZERO {
            plan.wait = Some(RecreateWait::UnreadyGrace);
            plan.requeue_after = Some(left);
            return plan;
        }
    }

    let min_started = SignedDuration::from_secs(i64::from(strategy.min_started_seconds));
    let grace_seconds = strategy
        .termination_grace_period_seconds
        .or_else(|| pod.and_then(|p| p.spec.as_ref()?.termination_grace_period_seconds))
        .unwrap_or(DEFAULT_TERMINATION_GRACE_SECONDS);
    let previous =
        crr.status.as_ref().map(|s| s.container_recreate_states.as_slice()).unwrap_or(&[]);
    let mut requeue = None;
    let mut states = Vec::with_capacity(crr.spec.containers.len());
    for c in &crr.spec.containers {
        let prev = previous.iter().find(|s| s.name == c.name);
        if let Some(prev) = prev.filter(|p| is_final(&p.phase)) {
            states.push(prev.clone());
            continue;
        }
        let killed = prev.is_some_and(|p| p.is_killed);
        let state =
            |phase, message: &str, is_killed| ContainerRecreateRequestContainerRecreateState {
                name: c.name.clone(),
                phase,
                message: message.to_owned(),
                is_killed,
            };
        let Some(current) = newest(runtime_containers, &c.name) else {
            states.push(state(
                ContainerRecreateRequestPhase::Pending,
                "not found container on Node",
                killed,
            ));
            continue;
        };
        if current.state != ContainerRuntimeState::Running {
            states.push(state(ContainerRecreateRequestPhase::Recreating, "", killed));
            continue;
        }
        if strategy.force_recreate && !killed {
            states.push(state(ContainerRecreateRequestPhase::Pending, "", false));
            continue;
        }
        let changed = c.status_context.as_ref().is_some_and(|ctx| {
            current.id != ctx.container_id || current.restart_count > ctx.restart_count
        });
        if !changed {
            states.push(state(ContainerRecreateRequestPhase::Pending, "", killed));
            continue;
        }
        let ran = current.started_at.map_or(SignedDuration::ZERO, |s| now.duration_since(s));
        if is_ready(crr, pod, &c.name, &current.id) && ran > min_started {
            states.push(state(ContainerRecreateRequestPhase::Succeeded, "", killed));
        } else {
            if current.started_at.is_some() && ran <= min_started {
                merge_requeue(&mut requeue, min_started - ran + SignedDuration::from_secs(1));
            }
            states.push(state(ContainerRecreateRequestPhase::Recreating, "", killed));
        }
    }

    if fails_fast(crr) && states.iter().any(|s| s.phase == ContainerRecreateRequestPhase::Failed) {
        plan.states = changed_states(crr, states);
        plan.complete = Some(String::new());
        return plan;
    }
    let ordered = strategy.ordered_recreate;
    let mut completed = 0;
    for st in states.iter_mut() {
        match st.phase {
            ContainerRecreateRequestPhase::Succeeded => {
                completed += 1;
                continue;
            }
            ContainerRecreateRequestPhase::Failed => {
                completed += 1;
                continue;
            }
            ContainerRecreateRequestPhase::Recreating => {
                st.is_killed = true;
                if ordered {
                    break;
                }
                continue;
            }
            _ => {}
        }
        if st.is_killed {
            // Stopped already: wait for the runtime to show the new instance.
            if ordered {
                break;
            }
            continue;
        }
        let Some(current) = newest(runtime_containers, &st.name) else {
            break;
        };
        plan.stop.push(StopContainer {
            id: current.id.clone(),
            name: st.name.clone(),
            grace_seconds,
        });
        st.phase = ContainerRecreateRequestPhase::Recreating;
        st.is_killed = true;
        st.message.clear();
        if ordered {
            break;
        }
    }
    plan.states = changed_states(crr, states);
    if plan.states.is_none() && plan.stop.is_empty() && completed == crr.spec.containers.len() {
        plan.complete = Some(String::new());
        return plan;
    }
    merge_requeue(&mut requeue, RECREATING_POLL);
    plan.requeue_after = requeue;
    plan
}

/// The states after stopping `name` failed with `error` (`failurePolicy` decides, on the
/// next plan, whether the request ends).
pub fn stop_failed(
    states: &[ContainerRecreateRequestContainerRecreateState],
    name: &str,
    error: &str,
) -> Vec<ContainerRecreateRequestContainerRecreateState> {
    states
        .iter()
        .cloned()
        .map(|mut s| {
            if s.name == name {
                s.phase = ContainerRecreateRequestPhase::Failed;
                s.message = format!("kill container error: {error}");
            }
            s
        })
        .collect()
}

fn changed_states(
    crr: &ContainerRecreateRequest,
    states: Vec<ContainerRecreateRequestContainerRecreateState>,
) -> Option<Vec<ContainerRecreateRequestContainerRecreateState>> {
    let current =
        crr.status.as_ref().map(|s| s.container_recreate_states.as_slice()).unwrap_or(&[]);
    (states != current).then_some(states)
}

/// The newest instance of a container: highest restart count, then latest start, running
/// before not running.
fn newest<'a>(containers: &'a [ContainerSnapshot], name: &str) -> Option<&'a ContainerSnapshot> {
    containers.iter().filter(|c| c.name == name).max_by(|a, b| {
        (a.restart_count, a.started_at, a.state == ContainerRuntimeState::Running).cmp(&(
            b.restart_count,
            b.started_at,
            b.state == ContainerRuntimeState::Running,
        ))
    })
}

/// Whether the instance `id` of container `name` is ready: by the pod's status when the
/// daemon has the pod, else by the controller's snapshot.
fn is_ready(crr: &ContainerRecreateRequest, pod: Option<&Pod>, name: &str, id: &str) -> bool {
    let from_pod = pod
        .and_then(|p| p.status.as_ref()?.container_statuses.as_ref())
        .and_then(|cs| cs.iter().find(|s| s.name == name))
        .filter(|s| s.container_id.as_deref() == Some(id))
        .map(|s| s.ready);
    from_pod.unwrap_or_else(|| {
        crr.status.as_ref().is_some_and(|s| {
            s.container_status_snapshot
                .iter()
                .any(|snap| snap.name == name && snap.container_id == id && snap.ready)
        })
    })
}
