//! The manager's ContainerRecreateRequest controller.

use jiff::{SignedDuration, Timestamp};
use k8s_openapi::api::core::v1::Pod;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition;
use kruise_api::apps::v1beta1::{
    ContainerRecreateRequest, ContainerRecreateRequestContainerRecreateState,
    ContainerRecreateRequestPhase, ContainerRecreateRequestSyncContainerStatus,
};
use kruise_api::well_known::labels;
use serde::Serialize;
use serde_json::json;

use super::{
    PRE_RECREATE_GRACE, READINESS_USER_AGENT, RECREATING_POLL, RESPONSE_TIMEOUT,
    UNREADY_ACQUIRED_FINALIZER, fail_unfinished, merge_requeue, phase_of, since, time,
};
use crate::pod::{
    NotReadyHold, PodConditionsUpdate, add_not_ready_hold, has_readiness_gate,
    remove_not_ready_hold,
};
use crate::workload::Patch;

/// One thing the controller asks for, in order.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(tag = "action", rename_all = "camelCase")]
#[non_exhaustive]
pub enum CrrAction {
    /// Patch the request's status subresource (a JSON merge patch).
    PatchStatus {
        /// The patch.
        patch: Patch,
    },
    /// Patch the request's metadata (a JSON merge patch).
    PatchMetadata {
        /// The patch.
        patch: Patch,
    },
    /// Add a finalizer to the request (read-modify-write on conflict).
    AddFinalizer {
        /// The finalizer.
        finalizer: String,
    },
    /// Remove a finalizer from the request.
    RemoveFinalizer {
        /// The finalizer.
        finalizer: String,
    },
    /// Update the pod's readiness conditions (hold or release `KruisePodReady`).
    UpdatePodConditions {
        /// The pod.
        pod: String,
        /// A strategic merge patch of the pod's status conditions.
        patch: Patch,
    },
    /// Delete the request (`ttlSecondsAfterFinished` passed).
    Delete,
}

/// What the controller does for one request.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct CrrPlan {
    /// Actions, to apply in order.
    pub actions: Vec<CrrAction>,
    /// Why the request completes in this plan, when it does.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub completed: Option<String>,
    /// When to look again.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub requeue_after: Option<SignedDuration>,
}

/// The controller's plan for one request (upstream's `Reconcile`); `pod` is the pod the
/// request names, `None` when it does not exist.
///
/// - A finished (or deleting) request gives back the pod's `KruisePodReady` hold and its
///   finalizer, drops the `crr.apps.kruise.io/active` label, then waits for
///   `ttlSecondsAfterFinished` and deletes it.
/// - The request completes (phase `Completed`, with a message) when the pod is gone, deleting
///   or has another UID ("pod has gone"), when the daemon has not set a phase within
///   [`RESPONSE_TIMEOUT`], or when `activeDeadlineSeconds` have passed since creation; its
///   unfinished containers are marked Failed with the same message.
/// - While Recreating: the pod's running container statuses (started after the request) are
///   copied into `status.containerStatusSnapshot`, and, with `unreadyGracePeriodSeconds`, the
///   pod is held not-ready (when it has the `KruisePodReady` gate) and the `PreRecreateGrace`
///   condition is set once; the request is polled every [`RECREATING_POLL`].
pub fn plan_crr(crr: &ContainerRecreateRequest, pod: Option<&Pod>, now: Timestamp) -> CrrPlan {
    let mut plan = CrrPlan::default();
    let status = crr.status.as_ref();
    let completion = status.and_then(|s| s.completion_time.as_ref());
    let finalizers = crr.metadata.finalizers.as_deref().unwrap_or(&[]);
    let hold = readiness_hold(crr);

    if crr.metadata.deletion_timestamp.is_some() || completion.is_some() {
        if finalizers.iter().any(|f| f == UNREADY_ACQUIRED_FINALIZER) {
            if let Some(pod) = pod.filter(|p| p.metadata.deletion_timestamp.is_none())
                && let Some(update) = remove_not_ready_hold(pod, &hold, now)
            {
                plan.actions.push(pod_conditions(crr, &update));
            }
            plan.actions.push(CrrAction::RemoveFinalizer {
                finalizer: UNREADY_ACQUIRED_FINALIZER.to_owned(),
            });
        }
        if crr.metadata.deletion_timestamp.is_some() {
            return plan;
        }
        if crr.metadata.labels.as_ref().is_some_and(|l| l.contains_key(labels::CRR_ACTIVE)) {
            plan.actions.push(CrrAction::PatchMetadata {
                patch: Patch::merge(json!({"metadata": {"labels": {labels::CRR_ACTIVE: null}}})),
            });
            return plan;
        }
        if let Some(ttl) = crr.spec.ttl_seconds_after_finished {
            let left = SignedDuration::from_secs(i64::from(ttl)) - since(now, completion);
            if left <= SignedDuration::ZERO {
                plan.actions.push(CrrAction::Delete);
            } else {
                plan.requeue_after = Some(left);
            }
        }
        return plan;
    }

    let pod_uid = crr.metadata.labels.as_ref().and_then(|l| l.get(labels::CRR_POD_UID));
    let live_pod = pod
        .filter(|p| p.metadata.deletion_timestamp.is_none() && p.metadata.uid.as_ref() == pod_uid);
    let Some(pod) = live_pod else {
        return complete(crr, plan, "pod has gone", now);
    };

    let created = crr.metadata.creation_timestamp.as_ref();
    let mut requeue = None;
    if phase_of(crr).as_str().is_empty() {
        let left = RESPONSE_TIMEOUT - since(now, created);
        if left <= SignedDuration::ZERO {
            return complete(crr, plan, "daemon has not responded for a long time", now);
        }
        merge_requeue(&mut requeue, left);
    }
    if let Some(deadline) = crr.spec.active_deadline_seconds {
        let left = SignedDuration::from_secs(deadline) - since(now, created);
        if left <= SignedDuration::ZERO {
            return complete(crr, plan, "recreating has exceeded the activeDeadlineSeconds", now);
        }
        merge_requeue(&mut requeue, left);
    }
    if phase_of(crr) != ContainerRecreateRequestPhase::Recreating {
        plan.requeue_after = requeue;
        return plan;
    }

    if let Some(snapshot) = sync_container_snapshot(crr, pod) {
        plan.actions.push(CrrAction::PatchStatus {
            patch: Patch::merge(json!({"status": {"containerStatusSnapshot": snapshot}})),
        });
    }
    merge_requeue(&mut requeue, RECREATING_POLL);

    let unready_grace =
        crr.spec.strategy.as_ref().and_then(|s| s.unready_grace_period_seconds).is_some();
    if unready_grace && pre_recreate_grace_since(crr).is_none() {
        if has_readiness_gate(pod, kruise_api::well_known::readiness_gates::KRUISE_POD_READY) {
            if !finalizers.iter().any(|f| f == UNREADY_ACQUIRED_FINALIZER) {
                plan.actions.push(CrrAction::AddFinalizer {
                    finalizer: UNREADY_ACQUIRED_FINALIZER.to_owned(),
                });
            }
            if let Some(update) = add_not_ready_hold(pod, &hold, now) {
                plan.actions.push(pod_conditions(crr, &update));
            }
        }
        let mut conditions = status.map(|s| s.conditions.clone()).unwrap_or_default();
        conditions.retain(|c| c.type_ != PRE_RECREATE_GRACE);
        conditions.push(Condition {
            type_: PRE_RECREATE_GRACE.to_owned(),
            status: "True".to_owned(),
            last_transition_time: time(now),
            reason: "PreRecreateGrace".to_owned(),
            message: "Pod has been forced to not-ready for unreadyGracePeriodSeconds drain"
                .to_owned(),
            observed_generation: None,
        });
        plan.actions.push(CrrAction::PatchStatus {
            patch: Patch::merge(json!({"status": {"conditions": conditions}})),
        });
    }
    plan.requeue_after = requeue;
    plan
}

/// The pod's container statuses the request should record, or `None` when the recorded
/// snapshot is current: for each requested container, its status if it is running and
/// started no earlier than the request. An empty result keeps a non-empty snapshot (the
/// container is between its old and new instance).
pub fn sync_container_snapshot(
    crr: &ContainerRecreateRequest,
    pod: &Pod,
) -> Option<Vec<ContainerRecreateRequestSyncContainerStatus>> {
    let created = crr.metadata.creation_timestamp.as_ref().map(|t| t.0);
    let statuses = pod.status.as_ref().and_then(|s| s.container_statuses.as_deref()).unwrap_or(&[]);
    let snapshot: Vec<_> = crr
        .spec
        .containers
        .iter()
        .filter_map(|c| statuses.iter().find(|s| s.name == c.name))
        .filter(|s| {
            let started = s
                .state
                .as_ref()
                .and_then(|st| st.running.as_ref())
                .map(|r| r.started_at.as_ref().map(|t| t.0));
            match started {
                None => false,
                Some(started) => !matches!((started, created), (Some(st), Some(cr)) if st < cr),
            }
        })
        .map(|s| ContainerRecreateRequestSyncContainerStatus {
            name: s.name.clone(),
            ready: s.ready,
            restart_count: s.restart_count,
            container_id: s.container_id.clone().unwrap_or_default(),
        })
        .collect();
    let current =
        crr.status.as_ref().map(|s| s.container_status_snapshot.as_slice()).unwrap_or(&[]);
    if (snapshot.is_empty() && !current.is_empty()) || snapshot == current {
        return None;
    }
    Some(snapshot)
}

/// When the controller set `PreRecreateGrace` (its last transition).
pub(super) fn pre_recreate_grace_since(crr: &ContainerRecreateRequest) -> Option<Timestamp> {
    crr.status.as_ref()?.conditions.iter().find_map(|c| {
        (c.type_ == PRE_RECREATE_GRACE && c.status == "True").then_some(c.last_transition_time.0)
    })
}

fn pod_conditions(crr: &ContainerRecreateRequest, update: &PodConditionsUpdate) -> CrrAction {
    CrrAction::UpdatePodConditions {
        pod: crr.spec.pod_name.clone(),
        patch: Patch::strategic(update.to_status_patch()),
    }
}

fn readiness_hold(crr: &ContainerRecreateRequest) -> NotReadyHold {
    let namespace = crr.metadata.namespace.as_deref().unwrap_or_default();
    let name = crr.metadata.name.as_deref().unwrap_or_default();
    NotReadyHold::new(READINESS_USER_AGENT, format!("{namespace}/{name}"))
}

fn complete(
    crr: &ContainerRecreateRequest,
    mut plan: CrrPlan,
    message: &str,
    now: Timestamp,
) -> CrrPlan {
    let states: Vec<ContainerRecreateRequestContainerRecreateState> = fail_unfinished(crr, message);
    plan.actions.push(CrrAction::PatchStatus {
        patch: Patch::merge(json!({"status": {
            "phase": ContainerRecreateRequestPhase::Completed,
            "completionTime": time(now),
            "message": message,
            "containerRecreateStates": states,
        }})),
    });
    plan.completed = Some(message.to_owned());
    plan
}
