//! ContainerRecreateRequest (CRR): recreate some containers of a running pod.
//!
//! Three parties share the work, as upstream:
//!
//! - the mutating webhook ([`default_crr`]) checks the request, fills in the strategy
//!   defaults, the `statusContext` of each container (its container ID and restart count when
//!   the request was made), its preStop hook and ports, and the labels the daemon selects on;
//! - the manager's controller ([`plan_crr`]) copies the pod's container statuses into the
//!   request, holds the pod not-ready for `unreadyGracePeriodSeconds`, fails the request when
//!   the pod is gone, the daemon does not answer or `activeDeadlineSeconds` pass, and deletes
//!   it `ttlSecondsAfterFinished` after completion;
//! - the kruise daemon on the pod's node ([`pick_active`], [`plan_recreate`]) runs one request
//!   per pod at a time and stops the containers, which the kubelet then starts again.
//!
//! Differences from upstream, on purpose:
//!
//! - a request that completes because of `activeDeadlineSeconds`, a vanished pod or a silent
//!   daemon also marks every container still Pending or Recreating as Failed (upstream left
//!   them in progress, #2353);
//! - requests waiting behind another on the same pod run as soon as it finishes: the choice is
//!   recomputed from all of the pod's requests on every plan (upstream could leave the second
//!   one Pending for ever, #1626), and waiting ones carry a message naming the active one;
//! - a container the daemon has stopped (`isKilled`) is never stopped again for the same
//!   request, even while the runtime still reports it running (a stop with a long grace period
//!   is in flight); upstream could stop it a second time;
//! - without `orderedRecreate`, every pending container is stopped in one plan (upstream stops
//!   one per sync and resyncs at once, to the same effect).

mod controller;
mod daemon;
mod plan;
mod prestop;
mod queue;
mod webhook;

#[cfg(test)]
mod tests;

use jiff::{SignedDuration, Timestamp};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use kruise_api::apps::v1beta1::{
    ContainerRecreateRequest, ContainerRecreateRequestContainerRecreateState,
    ContainerRecreateRequestFailurePolicyType, ContainerRecreateRequestPhase,
};

use crate::field::{FieldError, FieldPath};

pub use controller::{CrrAction, CrrPlan, plan_crr, sync_container_snapshot};
pub use daemon::{
    ContainerRuntimeState, ContainerSnapshot, RecreatePlan, RecreateWait, StopContainer,
    plan_recreate, stop_failed,
};
pub use plan::plan;
pub use prestop::{
    HttpGetRequest, MIN_STOP_GRACE_SECONDS, PreStopAction, format_pod, http_get_request,
    pre_stop_action, pre_stop_budget, resolve_port, stop_grace_after_hook,
};
pub use queue::{ActivePick, WaitingCrr, pick_active};
pub use webhook::{default_crr, validate_crr_update};

/// How long the daemon has to set a phase on a new request before the controller fails it.
pub const RESPONSE_TIMEOUT: SignedDuration = SignedDuration::from_secs(60);
/// The smallest `activeDeadlineSeconds` the webhook accepts.
pub const MIN_ACTIVE_DEADLINE_SECONDS: i64 = 3;
/// How often the controller looks at a request that is recreating.
pub const RECREATING_POLL: SignedDuration = SignedDuration::from_secs(3);
/// Grace period used to stop a container when neither the request nor the pod gives one.
pub const DEFAULT_TERMINATION_GRACE_SECONDS: i64 = 30;
/// The finalizer the controller holds while the pod is kept not-ready.
pub const UNREADY_ACQUIRED_FINALIZER: &str =
    kruise_api::well_known::annotations::CRR_UNREADY_ACQUIRED;
/// The condition the controller sets when the pod has been made not-ready.
pub const PRE_RECREATE_GRACE: &str = "PreRecreateGrace";
/// User agent of the `KruisePodReady` hold a request takes.
pub const READINESS_USER_AGENT: &str = "ContainerRecreateRequest";

/// Why a request is refused by the webhook. [`CrrError::field`] names the offending field;
/// `Display` gives upstream's message.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum CrrError {
    /// `spec.podName` is empty.
    #[error("podName can not be empty")]
    PodNameEmpty,
    /// `spec.containers` is empty.
    #[error("containers list can not be null")]
    NoContainers,
    /// `spec.activeDeadlineSeconds` is below [`MIN_ACTIVE_DEADLINE_SECONDS`].
    #[error("activeDeadlineSeconds can not be less than {MIN_ACTIVE_DEADLINE_SECONDS}s")]
    DeadlineTooShort,
    /// `spec.strategy.terminationGracePeriodSeconds` is negative.
    #[error("terminationGracePeriodSeconds must be non-negative integer")]
    NegativeTerminationGrace,
    /// `spec.strategy.unreadyGracePeriodSeconds` is negative.
    #[error("unreadyGracePeriodSeconds must be non-negative integer")]
    NegativeUnreadyGrace,
    /// `spec.strategy.failurePolicy` is neither Fail nor Ignore.
    #[error("unknown failurePolicy {0}")]
    UnknownFailurePolicy(String),
    /// The pod does not exist.
    #[error("no found Pod named {0}")]
    PodNotFound(String),
    /// The pod has finished or is being deleted.
    #[error("not allowed to recreate containers in an inactive Pod")]
    PodInactive,
    /// The pod has no node yet.
    #[error("not allowed to recreate containers in a pending Pod")]
    PodPending,
    /// A container is listed twice.
    #[error("can not recreate {name} multi times")]
    DuplicateContainer {
        /// Index in `spec.containers`.
        index: usize,
        /// Container name.
        name: String,
    },
    /// The request sets fields the system fills in.
    #[error("preStop, ports, statusContext in container are ready-only fields")]
    ReadOnlyFields {
        /// Index in `spec.containers`.
        index: usize,
    },
    /// A listed container is not in the pod.
    #[error("container {name} not found in Pod")]
    ContainerNotFound {
        /// Index in `spec.containers`.
        index: usize,
        /// Container name.
        name: String,
    },
    /// A listed container has no status in the pod.
    #[error("not found {name} containerStatus in Pod Status")]
    NoContainerStatus {
        /// Index in `spec.containers`.
        index: usize,
        /// Container name.
        name: String,
    },
    /// A listed container has not started yet (no container ID).
    #[error(
        "no containerID in {name} containerStatus, maybe the container has not been initialized"
    )]
    NoContainerId {
        /// Index in `spec.containers`.
        index: usize,
        /// Container name.
        name: String,
    },
    /// An update changes the spec.
    #[error("spec of ContainerRecreateRequest is immutable")]
    SpecImmutable,
    /// An update changes a label the system set.
    #[error("not allowed to update immutable label {0}")]
    ImmutableLabel(String),
}

impl CrrError {
    /// The field the error is about.
    pub fn field(&self) -> FieldPath {
        let spec = FieldPath::new("spec");
        let container = |index: &usize| spec.child("containers").index(*index);
        match self {
            Self::PodNameEmpty | Self::PodNotFound(_) | Self::PodInactive | Self::PodPending => {
                spec.child("podName")
            }
            Self::NoContainers => spec.child("containers"),
            Self::DeadlineTooShort => spec.child("activeDeadlineSeconds"),
            Self::NegativeTerminationGrace => {
                spec.child("strategy").child("terminationGracePeriodSeconds")
            }
            Self::NegativeUnreadyGrace => spec.child("strategy").child("unreadyGracePeriodSeconds"),
            Self::UnknownFailurePolicy(_) => spec.child("strategy").child("failurePolicy"),
            Self::DuplicateContainer { index, .. }
            | Self::ContainerNotFound { index, .. }
            | Self::NoContainerStatus { index, .. }
            | Self::NoContainerId { index, .. } => container(index).child("name"),
            Self::ReadOnlyFields { index } => container(index),
            Self::SpecImmutable => spec,
            Self::ImmutableLabel(key) => FieldPath::new("metadata").child("labels").key(key),
        }
    }

    /// As a field error (`Invalid` or `Forbidden`, with upstream's message as the detail).
    pub fn to_field_error(&self) -> FieldError {
        let path = self.field();
        match self {
            Self::SpecImmutable | Self::ImmutableLabel(_) | Self::ReadOnlyFields { .. } => {
                FieldError::forbidden(&path, self.to_string())
            }
            Self::PodNameEmpty | Self::NoContainers => {
                FieldError::required(&path, self.to_string())
            }
            _ => FieldError::invalid(&path, self.bad_value(), self.to_string()),
        }
    }

    fn bad_value(&self) -> String {
        match self {
            Self::UnknownFailurePolicy(v) | Self::PodNotFound(v) => v.clone(),
            Self::DuplicateContainer { name, .. }
            | Self::ContainerNotFound { name, .. }
            | Self::NoContainerStatus { name, .. }
            | Self::NoContainerId { name, .. } => name.clone(),
            _ => String::new(),
        }
    }
}

/// Whether the request has finished (it has a completion time).
pub fn is_completed(crr: &ContainerRecreateRequest) -> bool {
    crr.status.as_ref().is_some_and(|s| s.completion_time.is_some())
}

/// The request's overall phase (`""` without status).
pub fn phase_of(crr: &ContainerRecreateRequest) -> ContainerRecreateRequestPhase {
    crr.status.as_ref().map(|s| s.phase.clone()).unwrap_or_default()
}

/// Whether a failed container ends the request (failure policy Fail, the default).
fn fails_fast(crr: &ContainerRecreateRequest) -> bool {
    !matches!(
        crr.spec.strategy.as_ref().and_then(|s| s.failure_policy.as_ref()),
        Some(ContainerRecreateRequestFailurePolicyType::Ignore)
    )
}

/// Whether a container phase is final.
fn is_final(phase: &ContainerRecreateRequestPhase) -> bool {
    matches!(
        phase,
        ContainerRecreateRequestPhase::Succeeded | ContainerRecreateRequestPhase::Failed
    )
}

/// The container states with every unfinished one failed with `message` (a state for each
/// spec container, in spec order).
fn fail_unfinished(
    crr: &ContainerRecreateRequest,
    message: &str,
) -> Vec<ContainerRecreateRequestContainerRecreateState> {
    let previous =
        crr.status.as_ref().map(|s| s.container_recreate_states.as_slice()).unwrap_or(&[]);
    crr.spec
        .containers
        .iter()
        .map(|c| {
            let prev = previous.iter().find(|s| s.name == c.name);
            match prev {
                Some(s) if is_final(&s.phase) => s.clone(),
                _ => ContainerRecreateRequestContainerRecreateState {
                    name: c.name.clone(),
                    phase: ContainerRecreateRequestPhase::Failed,
                    message: message.to_owned(),
                    is_killed: prev.is_some_and(|s| s.is_killed),
                },
            }
        })
        .collect()
}

/// `now`, truncated to whole seconds as `metav1.Time` stores it.
fn time(now: Timestamp) -> Time {
    Time(Timestamp::from_second(now.as_second()).unwrap_or(now))
}

/// `a - b`, or zero for a missing `b`.
fn since(now: Timestamp, then: Option<&Time>) -> SignedDuration {
    then.map_or(SignedDuration::ZERO, |t| now.duration_since(t.0))
}

/// Keeps the earliest positive requeue.
fn merge_requeue(slot: &mut Option<SignedDuration>, after: SignedDuration) {
    if after > SignedDuration::ZERO {
        *slot = Some(slot.map_or(after, |r| r.min(after)));
    }
}
