//! The controller's status computation.
//!
//! From the pods the budget selects (see [`super::Coverage::selects`]), the workload's
//! replica count and `now`:
//!
//! - `totalReplicas`: `spec.protectTotalReplicas` when set, else the workload's count;
//! - `desiredAvailable`: `totalReplicas - maxUnavailable` (not below 0), or `minAvailable`;
//!   percentages are of `totalReplicas`, rounded up, as upstream;
//! - `disruptedPods` / `unavailablePods`: the records still in flight. A record is dropped
//!   when its pod is gone or being deleted, or once it is older than [`DELETION_TIMEOUT`]
//!   (`disruptedPods`) or [`UPDATED_DELAY_CHECK_TIME`] (`unavailablePods`). A record is not
//!   dropped earlier because the pod looks available: right after admission the pod has not
//!   changed yet, and returning its unit then would let a second operation through;
//! - `currentAvailable`: active pods not recorded that are available for the budget;
//! - `unavailableAllowed`: `currentAvailable - desiredAvailable`, not below 0.
//!
//! Pods marked `apps.kruise.io/specified-delete` are on their way out: their workload
//! replaces them (often surging a new pod first) and deletes them. Counting both a marked pod
//! and its replacement inflated `unavailableAllowed` beyond what `maxUnavailable` means
//! (openkruise/kruise#2175). Marked pods therefore count only while they fill the replica
//! count: with `A` unmarked and `M` marked available pods, `currentAvailable` is
//! `min(A + M, max(A, totalReplicas))`. Without marked pods this is upstream's count.
//!
//! A budget is computed even when it selects no pod, so a budget created before its pods has
//! a status at once (openkruise/kruise#1857).

use std::collections::BTreeMap;

use jiff::{SignedDuration, Timestamp};
use k8s_openapi::api::core::v1::Pod;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use kruise_api::policy::v1beta1::{PodUnavailableBudget, PodUnavailableBudgetStatus};

use super::availability::is_available_for_budget;
use super::{DELETION_TIMEOUT, PubError, PubGates, UPDATED_DELAY_CHECK_TIME, budget_key};
use crate::intstr::{IntOrPercent, Rounding};
use crate::pod::{is_pod_active, is_specified_delete};

/// The computed status and when to compute it again.
#[derive(Clone, Debug, PartialEq)]
pub struct StatusOutcome {
    /// The status to write (with `observedGeneration` set to the budget's generation).
    pub status: PodUnavailableBudgetStatus,
    /// Whether it differs from the budget's current status (a write is needed).
    pub changed: bool,
    /// Recompute after this long: when the earliest remaining record expires. `None` when
    /// nothing is in flight.
    pub recheck_after: Option<SignedDuration>,
}

/// How many pods must stay available out of `total_replicas`.
pub fn desired_available(
    budget: &PodUnavailableBudget,
    total_replicas: i32,
) -> Result<i32, PubError> {
    let invalid = |e: crate::intstr::IntStrError| PubError::InvalidBudget {
        budget: budget_key(budget),
        reason: e.to_string(),
    };
    if let Some(max) = &budget.spec.max_unavailable {
        let max = IntOrPercent::parse(max).map_err(invalid)?.scale(total_replicas, Rounding::Up);
        Ok(total_replicas.saturating_sub(max).max(0))
    } else if let Some(min) = &budget.spec.min_available {
        Ok(IntOrPercent::parse(min).map_err(invalid)?.scale(total_replicas, Rounding::Up))
    } else {
        Ok(0)
    }
}

/// Computes the status of `budget` from the pods it selects. `expected_replicas` is the
/// workload's replica count (its scale); `spec.protectTotalReplicas` overrides it, and one of
/// the two must be known.
pub fn compute_status<'p>(
    budget: &PodUnavailableBudget,
    pods: impl IntoIterator<Item = &'p Pod>,
    expected_replicas: Option<i32>,
    gates: &PubGates,
    now: Timestamp,
) -> Result<StatusOutcome, PubError> {
    let total = budget
        .spec
        .protect_total_replicas
        .or(expected_replicas)
        .ok_or_else(|| PubError::ReplicasUnknown { budget: budget_key(budget) })?;
    let desired = desired_available(budget, total)?;

    let empty = PodUnavailableBudgetStatus::default();
    let old = budget.status.as_ref().unwrap_or(&empty);
    let mut disrupted = BTreeMap::new();
    let mut unavailable = BTreeMap::new();
    let mut recheck: Option<Timestamp> = None;
    let (mut unmarked, mut marked) = (0i32, 0i32);

    for pod in pods {
        if !is_pod_active(pod) {
            continue;
        }
        let name = pod.metadata.name.as_deref().unwrap_or("");
        let mut recorded = false;
        let mut keep = |records: &BTreeMap<String, Time>,
                        out: &mut BTreeMap<String, Time>,
                        timeout: SignedDuration| {
            if let Some(at) = records.get(name) {
                let expires = at.0.saturating_add(timeout).unwrap_or(at.0);
                if expires > now {
                    out.insert(name.to_owned(), at.clone());
                    recheck = Some(recheck.map_or(expires, |r| r.min(expires)));
                    recorded = true;
                }
            }
        };
        keep(&old.disrupted_pods, &mut disrupted, DELETION_TIMEOUT);
        keep(&old.unavailable_pods, &mut unavailable, UPDATED_DELAY_CHECK_TIME);
        if recorded || !is_available_for_budget(pod, gates) {
            continue;
        }
        if is_specified_delete(pod) {
            marked += 1;
        } else {
            unmarked += 1;
        }
    }

    let current = unmarked.saturating_add(marked).min(unmarked.max(total));
    let status = PodUnavailableBudgetStatus {
        observed_generation: budget.metadata.generation.unwrap_or(0),
        disrupted_pods: disrupted,
        unavailable_pods: unavailable,
        unavailable_allowed: current.saturating_sub(desired).max(0),
        current_available: current,
        desired_available: desired,
        total_replicas: total,
    };
    let changed = budget.status.as_ref() != Some(&status);
    Ok(StatusOutcome { status, changed, recheck_after: recheck.map(|r| r.duration_since(now)) })
}
