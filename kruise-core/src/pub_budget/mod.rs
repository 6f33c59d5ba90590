//! PodUnavailableBudget (PUB): which pods a budget covers, which operations it guards, the
//! admission decision for one pod operation and the status the controller writes, as pure
//! functions.
//!
//! A PUB bounds how many of a set of pods may be unavailable at once. Two parties keep it:
//!
//! - the pod webhook asks, for a DELETE, an eviction or an UPDATE of one pod, whether the
//!   budget still has room ([`decide`]). When it has, the answer carries the status to write
//!   before admitting: the pod is recorded in `disruptedPods` (DELETE, EVICT) or
//!   `unavailablePods` (UPDATE, RESIZE) and `unavailableAllowed` goes down by one;
//! - the controller recomputes the status from the pods it sees ([`compute_status`]): how
//!   many pods should exist, how many must stay available, how many are, and which recorded
//!   pods are still in flight. It also says when to recompute (the next record to expire).
//!
//! Between two refreshes every admitted operation consumes one unit of `unavailableAllowed`,
//! so no more pods go down than the last refresh allowed.
//!
//! The modules, top-down:
//!
//! - [`coverage`]: whether a budget covers a pod (selector or resolved `targetRef`, ignored
//!   pods, the `pub.kruise.io/no-protect` opt-out) and which budget covers a pod.
//! - [`operations`]: [`Operation`], the operations a budget guards, and what an update of a
//!   pod amounts to.
//! - [`availability`]: whether a pod counts as available for a budget (ready, not being
//!   deleted, not in the middle of an in-place update), digest-pinned images included.
//! - [`admission`]: the webhook's decision.
//! - [`status`]: the controller's status computation.
//!
//! Nothing here reads the clock or the cluster: `now`, the pods, the workload's replica count
//! and what a `targetRef` resolves to are arguments.

pub mod admission;
pub mod availability;
pub mod coverage;
pub mod operations;
mod plan;
mod pod_step;
pub mod status;
pub mod validation;

#[cfg(test)]
mod tests;

use jiff::SignedDuration;

pub use admission::{AllowReason, Decision, DenyReason, PodRequest, decide};
pub use availability::{is_available_for_budget, is_pod_ready_for_budget, is_pod_state_consistent};
pub use coverage::{
    BudgetForPod, Coverage, Exemption, NotSelected, TargetPods, budget_for_pod, coverage,
};
pub use operations::{Operation, OperationSet, classify_update, protected_operations};
pub use plan::{COVERED_LABEL, mark_patch, plan};
pub use pod_step::PubAnnotation;
pub use status::{StatusOutcome, compute_status, desired_available};

/// How long a pod admitted for deletion or eviction stays in `disruptedPods` without being
/// seen deleted (upstream's `DeletionTimeout`, 20 s).
pub const DELETION_TIMEOUT: SignedDuration = SignedDuration::from_secs(20);

/// How long a pod admitted for an update stays in `unavailablePods` (upstream's
/// `UpdatedDelayCheckTime`, 10 s); after that its availability is read from the pod again.
pub const UPDATED_DELAY_CHECK_TIME: SignedDuration = SignedDuration::from_secs(10);

/// Most pods `disruptedPods` and `unavailablePods` may hold together before the webhook
/// refuses further operations (upstream's `MaxUnavailablePodSize`).
pub const MAX_UNAVAILABLE_POD_SIZE: usize = 2000;

/// The feature gates that shape PUB checks. [`Default`] gives upstream's defaults.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PubGates {
    /// `PodUnavailableBudgetDeleteGate` (default on): guard deletions and evictions.
    pub delete_gate: bool,
    /// `PodUnavailableBudgetUpdateGate` (default off): guard updates and resizes.
    pub update_gate: bool,
    /// `InPlacePodVerticalScaling` (default off): a resources-only change that the kubelet
    /// can apply without restarting containers is a [`Operation::Resize`], not an
    /// [`Operation::Update`].
    pub in_place_pod_vertical_scaling: bool,
    /// `InPlaceWorkloadVerticalScaling` (default off): an in-place update in progress also
    /// waits for new resources to be applied before the pod is consistent again.
    pub in_place_workload_vertical_scaling: bool,
}

impl Default for PubGates {
    fn default() -> Self {
        Self {
            delete_gate: true,
            update_gate: false,
            in_place_pod_vertical_scaling: false,
            in_place_workload_vertical_scaling: false,
        }
    }
}

/// Why a PUB check could not be made.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum PubError {
    /// The budget has a `targetRef`, and the caller could not resolve it to pods (unknown
    /// kind, no scale subresource, workload not found). Nothing is decided: treating it as
    /// "covers no pod" would silently drop the protection.
    #[error("podunavailablebudget {budget}: targetRef {kind}/{name} could not be resolved")]
    TargetUnresolved {
        /// `namespace/name` of the budget.
        budget: String,
        /// `targetRef.kind`.
        kind: String,
        /// `targetRef.name`.
        name: String,
    },
    /// `selector` or `ignoredPodSelector` is not a valid label selector.
    #[error("podunavailablebudget {budget}: invalid {field}: {reason}")]
    InvalidSelector {
        /// `namespace/name` of the budget.
        budget: String,
        /// `spec.selector`, `spec.ignoredPodSelector` or the resolved target selector.
        field: &'static str,
        /// What is wrong.
        reason: String,
    },
    /// `maxUnavailable` or `minAvailable` is not a number or a percentage.
    #[error("podunavailablebudget {budget}: {reason}")]
    InvalidBudget {
        /// `namespace/name` of the budget.
        budget: String,
        /// What is wrong.
        reason: String,
    },
    /// The workload's replica count is unknown and `protectTotalReplicas` is not set.
    #[error("podunavailablebudget {budget}: expected replica count is unknown")]
    ReplicasUnknown {
        /// `namespace/name` of the budget.
        budget: String,
    },
}

/// `namespace/name` of a budget, for messages.
pub(crate) fn budget_key(budget: &kruise_api::policy::v1beta1::PodUnavailableBudget) -> String {
    format!(
        "{}/{}",
        budget.metadata.namespace.as_deref().unwrap_or(""),
        budget.metadata.name.as_deref().unwrap_or("")
    )
}
