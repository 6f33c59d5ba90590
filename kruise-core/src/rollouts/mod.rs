//! Kruise Rollout (rollouts.kruise.io): releases of an existing workload in steps.
//!
//! The pieces, as upstream (`openkruise/rollouts` v0.6.2) splits them:
//! - [`admission::hold_workload`]: the workload webhook. A template change of a workload a
//!   Rollout watches is held (CloneSet `partition: "100%"`, StatefulSet and Advanced
//!   StatefulSet `partition: 32767`) and marked `rollouts.kruise.io/in-progressing`, so that
//!   nothing rolls until the Rollout says so.
//! - [`rollout::plan`]: the Rollout's step machine (`status.canaryStatus`). Each step asks its
//!   BatchRelease for a batch, waits for it, pauses (for approval or `pause.duration`) and goes
//!   on; at the end it finalises: the workload is let go and the BatchRelease deleted.
//! - [`batchrelease::plan`]: the executor. It takes control of the workload
//!   (`batchrelease.rollouts.kruise.io/control-info`), lowers its partition batch by batch up to
//!   `releasePlan.batchPartition`, labels the updated pods with the release and batch ids, and
//!   reports each batch Ready once its pods are updated, ready and labelled.
//! - [`admission::validate_rollout`]: the Rollout validating webhook, with upstream's field
//!   paths and messages.
//! - [`traffic`]: the canary Service, the nginx canary Ingress and the Gateway API route's
//!   rules, which the Rollout writes at each step with traffic.
//!
//! - [`deployment`]: native Deployments, by partition (the AdvancedDeployment controller's
//!   [`deployment::plan`] moves the paused Deployment's ReplicaSets) or with an extra canary
//!   Deployment.
//!
//! - [`daemonset`]: native DaemonSets (upstream's main branch), run `OnDelete` while released,
//!   their old pods deleted batch by batch ([`daemonset::plan`]).
//!
//! - [`trafficrouting`]: a TrafficRouting, traffic rules shared by the Rollouts that name it
//!   (`trafficRoutingRef` or the `rollouts.kruise.io/trafficrouting` annotation).
//!
//! - [`history`]: a RolloutHistory for each release with a rollout id (Kruise Rollout's
//!   `RolloutHistory` gate).
//!
//! What this module does not do yet, and refuses at validation so that nothing is accepted and
//! then ignored: custom network providers. As upstream, DaemonSet releases route no traffic.

pub mod admission;
pub mod batchrelease;
pub mod daemonset;
pub mod deployment;
pub mod describe;
pub mod history;
pub mod rollout;
pub mod traffic;
pub mod trafficrouting;
mod workload;

#[cfg(test)]
mod tests;

pub use workload::{ReleaseStyle, ReleasedKind, ReleasedWorkload, StableReplicaSet, WorkloadError};

use kruise_api::rollouts::v1beta1::{ReleasePlan, RolloutCondition};
use sha2::Digest as _;

pub use kruise_api::well_known::rollouts::annotations::{
    BATCH_RELEASE_CONTROL_INFO as CONTROL_INFO_ANNOTATION, HASH as ROLLOUT_HASH_ANNOTATION,
    IN_PROGRESSING as IN_PROGRESSING_ANNOTATION, ROLLBACK_IN_BATCH as ROLLBACK_IN_BATCH_ANNOTATION,
    TRAFFIC_ROUTING as TRAFFIC_ROUTING_ANNOTATION,
};
pub use kruise_api::well_known::rollouts::finalizers::{
    BATCH_RELEASE as BATCH_RELEASE_FINALIZER, ROLLOUT as ROLLOUT_FINALIZER,
};
pub use kruise_api::well_known::rollouts::labels::{
    NO_NEED_UPDATE as NO_NEED_UPDATE_LABEL, ROLLOUT_BATCH_ID as ROLLOUT_BATCH_ID_LABEL,
    ROLLOUT_ID as ROLLOUT_ID_LABEL, WORKLOAD_TYPE as WORKLOAD_TYPE_LABEL,
};

/// The partition that holds every pod of an Advanced StatefulSet (Go's MaxInt16).
pub const HOLD_ALL_ORDINALS: i32 = 32767;

/// The hash a BatchRelease records as `status.observedReleasePlanHash`: SHA-256 of the release
/// plan's JSON, in hex, as upstream computes it. The Rollout compares it with its own plan's to
/// know that the BatchRelease has seen the batch it asked for.
pub fn release_plan_hash(plan: &ReleasePlan) -> String {
    // Invariant: a ReleasePlan holds only strings, numbers and maps, which always encode.
    let json = serde_json::to_vec(plan).unwrap_or_default();
    hex(&sha2::Sha256::digest(&json))
}

fn hex(bytes: &[u8]) -> String {
    use std::fmt::Write as _;
    bytes.iter().fold(String::with_capacity(bytes.len() * 2), |mut out, b| {
        let _ = write!(out, "{b:02x}");
        out
    })
}

/// The plan of one round: `actions`, `events` and `requeue`, and `status` when it differs from
/// `read` (the status as read).
fn assemble<S: PartialEq>(
    read: S,
    status: S,
    actions: Vec<crate::plan::Action>,
    events: Vec<crate::plan::Event>,
    requeue: Option<jiff::SignedDuration>,
) -> crate::plan::Plan<S> {
    crate::plan::Plan {
        actions,
        status: (status != read).then_some(status),
        events,
        requeue_after: requeue,
        expectations: crate::expectations::ControllerExpectations::default(),
        blocked: None,
    }
}

/// Sets `condition` in `conditions` by type: `lastTransitionTime` moves only when the status
/// changes; a condition equal in status, reason and message is left as it is.
fn set_condition(conditions: &mut Vec<RolloutCondition>, condition: RolloutCondition) {
    match conditions.iter_mut().find(|c| c.type_ == condition.type_) {
        Some(existing) => {
            if existing.status == condition.status
                && existing.reason == condition.reason
                && existing.message == condition.message
            {
                return;
            }
            let transition = if existing.status == condition.status {
                existing.last_transition_time.clone()
            } else {
                condition.last_transition_time.clone()
            };
            *existing = RolloutCondition { last_transition_time: transition, ..condition };
        }
        None => conditions.push(condition),
    }
}

/// A condition stamped `now`.
fn condition(
    type_: &str,
    status: bool,
    reason: &str,
    message: &str,
    now: jiff::Timestamp,
) -> RolloutCondition {
    let time = k8s_openapi::apimachinery::pkg::apis::meta::v1::Time(now);
    RolloutCondition {
        type_: type_.to_owned(),
        status: if status { "True" } else { "False" }.to_owned(),
        last_update_time: Some(time.clone()),
        last_transition_time: Some(time),
        reason: reason.to_owned(),
        message: message.to_owned(),
    }
}

/// Why a Rollout cannot be approved.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ApproveError {
    /// No step is waiting for approval.
    #[error("step {step} is in state {state:?}, not \"StepPaused\"")]
    NotPaused {
        /// The current step.
        step: i32,
        /// Its state.
        state: String,
    },
    /// No release has started.
    #[error("no release is in progress")]
    NoRelease,
}

/// The merge patch of the status subresource that approves the paused step (what
/// `kubectl kruise rollout approve` sends): the step's state becomes StepReady.
pub fn approve_patch(
    rollout: &kruise_api::rollouts::v1beta1::Rollout,
) -> Result<serde_json::Value, ApproveError> {
    use kruise_api::rollouts::v1beta1::CanaryStepState;
    let status = rollout.status.as_ref().ok_or(ApproveError::NoRelease)?;
    let (field, common) = match (&status.canary_status, &status.blue_green_status) {
        (Some(canary), _) => ("canaryStatus", &canary.common),
        (None, Some(blue_green)) => ("blueGreenStatus", &blue_green.common),
        (None, None) => return Err(ApproveError::NoRelease),
    };
    if common.current_step_state != CanaryStepState::StepPaused {
        return Err(ApproveError::NotPaused {
            step: common.current_step_index,
            state: common.current_step_state.to_string(),
        });
    }
    Ok(serde_json::json!({"status": {field: {"currentStepState": CanaryStepState::StepReady}}}))
}
