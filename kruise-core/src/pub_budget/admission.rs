//! The pod webhook's decision: may this DELETE, eviction or UPDATE of a pod go ahead under a
//! budget, and what must be written to the budget's status first.
//!
//! The checks, in upstream's order: the feature gate of the operation; what an update amounts
//! to; whether the budget covers the pod; whether the pod is available at all (an unavailable
//! pod costs nothing); whether the budget protects anything (`desiredAvailable` 0, which is
//! also the state of a budget whose status was never computed, and of a workload scaled to 0,
//! openkruise/kruise#771); whether the operation is guarded; whether the pod is already
//! counted in `disruptedPods` or `unavailablePods`. Only then is the budget charged: with
//! `unavailableAllowed` at 0 the operation is denied, else one unit is reserved for the pod.
//!
//! Like upstream, `status.observedGeneration` is not consulted: the status the controller
//! last wrote is the budget, even while a newer spec is being observed.

use std::fmt;

use jiff::Timestamp;
use k8s_openapi::api::core::v1::Pod;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use kruise_api::policy::v1beta1::{PodUnavailableBudget, PodUnavailableBudgetStatus};

use super::availability::is_available_for_budget;
use super::coverage::{Coverage, Exemption, NotSelected, TargetPods, coverage};
use super::operations::{Operation, classify_update, protected_operations};
use super::{MAX_UNAVAILABLE_POD_SIZE, PubError, PubGates, budget_key};

/// The pod operation under review.
#[derive(Clone, Copy, Debug)]
#[non_exhaustive]
pub enum PodRequest<'a> {
    /// DELETE of the pod (not of a subresource).
    Delete {
        /// The pod as stored.
        pod: &'a Pod,
    },
    /// CREATE of the pod's `eviction` subresource.
    Evict {
        /// The pod as stored.
        pod: &'a Pod,
    },
    /// UPDATE of the pod.
    Update {
        /// The pod as stored.
        old: &'a Pod,
        /// The pod as requested.
        new: &'a Pod,
    },
    /// A restart of some of the pod's containers asked by a Kruise controller (the enhanced
    /// liveness probe's restarter): decided as an in-place update (`UPDATE`), since the pod
    /// stays and its containers go down for a while, whenever either PUB gate is on (budgets
    /// are enforced at all).
    Restart {
        /// The pod as stored.
        pod: &'a Pod,
    },
    /// An update of the pod to another revision that a Kruise workload controller is about
    /// to start (upstream's CloneSet asks before each pod it updates): decided as an
    /// `UPDATE` under `PodUnavailableBudgetUpdateGate`.
    WorkloadUpdate {
        /// The pod as stored.
        pod: &'a Pod,
    },
}

impl<'a> PodRequest<'a> {
    /// The pod whose availability is at stake (the stored one).
    pub fn pod(&self) -> &'a Pod {
        match *self {
            PodRequest::Delete { pod }
            | PodRequest::Evict { pod }
            | PodRequest::Restart { pod }
            | PodRequest::WorkloadUpdate { pod } => pod,
            PodRequest::Update { old, .. } => old,
        }
    }
}

/// Why an operation was let through.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum AllowReason {
    /// The gate guarding this kind of operation is off.
    GateDisabled,
    /// The update cannot make the pod unavailable (labels or annotations only).
    HarmlessUpdate,
    /// The budget does not select the pod.
    NotCovered(NotSelected),
    /// The pod is exempt from the budget.
    Exempt(Exemption),
    /// The pod is not available now (not ready, being deleted, mid in-place update), so the
    /// operation costs the budget nothing.
    PodUnavailable,
    /// `desiredAvailable` is 0: the budget protects nothing (or has no status yet).
    NothingToProtect,
    /// The budget does not guard this operation.
    OperationNotProtected,
    /// The pod is already counted in `disruptedPods` or `unavailablePods`.
    AlreadyCounted,
    /// A dry run that the budget has room for; nothing is reserved.
    DryRunWithinBudget,
}

/// Why an operation was refused.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum DenyReason {
    /// `unavailableAllowed` is 0 (or below).
    NoUnavailableAllowed {
        /// The budget's name.
        budget: String,
    },
    /// `disruptedPods` and `unavailablePods` together hold more than
    /// [`MAX_UNAVAILABLE_POD_SIZE`] pods the controller has not confirmed.
    TooManyUnconfirmed {
        /// The budget's name.
        budget: String,
    },
}

impl DenyReason {
    /// Upstream's cause, without the Forbidden prefix.
    pub fn cause(&self) -> &'static str {
        match self {
            DenyReason::NoUnavailableAllowed { .. } => "pub unavailable allowed is negative",
            DenyReason::TooManyUnconfirmed { .. } => {
                "DisruptedPods and UnavailablePods map too big - too many unavailable not confirmed by PUB controller"
            }
        }
    }
}

impl fmt::Display for DenyReason {
    /// The message upstream's webhook returns: a Forbidden error on the budget.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let (DenyReason::NoUnavailableAllowed { budget }
        | DenyReason::TooManyUnconfirmed { budget }) = self;
        write!(
            f,
            "podunavailablebudgets.policy.kruise.io {budget:?} is forbidden: {}",
            self.cause()
        )
    }
}

/// The webhook's answer.
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub enum Decision {
    /// Let the operation through; the budget is not touched.
    Allow(AllowReason),
    /// Let the operation through once the budget's status has been replaced by `status`
    /// (one unit of `unavailableAllowed` reserved for the pod). If that write fails, the
    /// operation must not be admitted.
    AllowWithReservation {
        /// The operation charged.
        operation: Operation,
        /// The status to write.
        status: PodUnavailableBudgetStatus,
    },
    /// Refuse the operation.
    Deny(DenyReason),
}

impl Decision {
    /// Whether the operation may go ahead (after writing the reservation, if any).
    pub fn is_allowed(&self) -> bool {
        !matches!(self, Decision::Deny(_))
    }

    /// The status to write before admitting, if any.
    pub fn reservation(&self) -> Option<&PodUnavailableBudgetStatus> {
        match self {
            Decision::AllowWithReservation { status, .. } => Some(status),
            _ => None,
        }
    }
}

/// Decides `request` under `budget` (with its current status). `target` is what the caller
/// resolved the budget's `targetRef` to (unused without one). A dry run is decided the same
/// way but never reserves anything. The pod is recorded at `now`, truncated to whole seconds
/// as the API stores it.
///
/// Fails with [`PubError::TargetUnresolved`] when the budget has an unresolved `targetRef`:
/// the caller must handle that (upstream fails the request) rather than let the pod through
/// unchecked.
pub fn decide(
    budget: &PodUnavailableBudget,
    target: Option<&TargetPods>,
    request: PodRequest<'_>,
    dry_run: bool,
    gates: &PubGates,
    now: Timestamp,
) -> Result<Decision, PubError> {
    let operation = match request {
        PodRequest::Delete { .. } => Operation::Delete,
        PodRequest::Evict { .. } => Operation::Evict,
        PodRequest::Restart { .. } if !gates.delete_gate && !gates.update_gate => {
            return Ok(Decision::Allow(AllowReason::GateDisabled));
        }
        PodRequest::Restart { .. } => Operation::Update,
        PodRequest::WorkloadUpdate { .. } if !gates.update_gate => {
            return Ok(Decision::Allow(AllowReason::GateDisabled));
        }
        PodRequest::WorkloadUpdate { .. } => Operation::Update,
        PodRequest::Update { old, new } => {
            if !gates.update_gate {
                return Ok(Decision::Allow(AllowReason::GateDisabled));
            }
            match classify_update(old, new, gates.in_place_pod_vertical_scaling) {
                Some(op) => op,
                None => return Ok(Decision::Allow(AllowReason::HarmlessUpdate)),
            }
        }
    };
    if operation.removes_pod() && !gates.delete_gate {
        return Ok(Decision::Allow(AllowReason::GateDisabled));
    }
    let pod = request.pod();
    match coverage(budget, target, pod)? {
        Coverage::Covered => {}
        Coverage::Exempt(e) => return Ok(Decision::Allow(AllowReason::Exempt(e))),
        Coverage::NotSelected(n) => return Ok(Decision::Allow(AllowReason::NotCovered(n))),
        Coverage::TargetUnresolved => {
            let target = budget.spec.target_reference.as_ref();
            return Err(PubError::TargetUnresolved {
                budget: budget_key(budget),
                kind: target.map(|t| t.kind.clone()).unwrap_or_default(),
                name: target.map(|t| t.name.clone()).unwrap_or_default(),
            });
        }
    }
    if !is_available_for_budget(pod, gates) {
        return Ok(Decision::Allow(AllowReason::PodUnavailable));
    }
    let empty = PodUnavailableBudgetStatus::default();
    let status = budget.status.as_ref().unwrap_or(&empty);
    if status.desired_available == 0 {
        return Ok(Decision::Allow(AllowReason::NothingToProtect));
    }
    if !protected_operations(budget, gates.in_place_pod_vertical_scaling).contains(operation) {
        return Ok(Decision::Allow(AllowReason::OperationNotProtected));
    }
    let name = pod.metadata.name.as_deref().unwrap_or("");
    if status.disrupted_pods.contains_key(name) || status.unavailable_pods.contains_key(name) {
        return Ok(Decision::Allow(AllowReason::AlreadyCounted));
    }
    let budget_name = || budget.metadata.name.clone().unwrap_or_default();
    if status.unavailable_allowed <= 0 {
        return Ok(Decision::Deny(DenyReason::NoUnavailableAllowed { budget: budget_name() }));
    }
    if status.disrupted_pods.len() + status.unavailable_pods.len() > MAX_UNAVAILABLE_POD_SIZE {
        return Ok(Decision::Deny(DenyReason::TooManyUnconfirmed { budget: budget_name() }));
    }
    if dry_run {
        return Ok(Decision::Allow(AllowReason::DryRunWithinBudget));
    }
    let mut next = status.clone();
    next.unavailable_allowed -= 1;
    let at = Time(whole_seconds(now));
    if operation.removes_pod() {
        next.disrupted_pods.insert(name.to_owned(), at);
    } else {
        next.unavailable_pods.insert(name.to_owned(), at);
    }
    Ok(Decision::AllowWithReservation { operation, status: next })
}

/// `t` without its fraction of a second (how `metav1.Time` is stored).
pub(crate) fn whole_seconds(t: Timestamp) -> Timestamp {
    Timestamp::from_second(t.as_second()).unwrap_or(t)
}
