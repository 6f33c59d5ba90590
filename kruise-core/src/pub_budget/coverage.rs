//! Whether a budget covers a pod, and which budget covers a pod.
//!
//! A budget selects pods of its own namespace either by `spec.selector` or through
//! `spec.targetRef`. A target reference names any workload (a CloneSet, a Deployment, an
//! Argo Rollout, anything with a scale subresource); resolving it needs the cluster, so the
//! caller does it and passes the result as [`TargetPods`]. A target that could not be
//! resolved is [`Coverage::TargetUnresolved`], never "no pods": a budget must not lose its
//! pods because their workload kind is unknown (openkruise/kruise#2571).
//!
//! Among the selected pods, those matching `spec.ignoredPodSelector` and those annotated
//! `pub.kruise.io/no-protect: "true"` are exempt: they still count towards the status, but
//! no operation on them is checked.

use std::collections::BTreeSet;

use k8s_openapi::api::core::v1::Pod;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector;
use kruise_api::policy::v1beta1::PodUnavailableBudget;
use kruise_api::well_known::annotations::PUB_NO_PROTECT;

use super::{PubError, budget_key};
use crate::selector::PodSelector;

/// What the caller resolved a budget's `targetRef` to.
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub enum TargetPods {
    /// The pods whose controller owner reference carries one of these UIDs: the workload
    /// itself, or the ReplicaSets of a Deployment (or of any workload that manages pods
    /// through ReplicaSets).
    OwnedBy(BTreeSet<String>),
    /// The pods matching the workload's pod selector (for example the scale subresource's
    /// `status.selector`), in the budget's namespace.
    Selector(LabelSelector),
    /// The target could not be resolved: unknown kind, no scale subresource, not found.
    Unresolved,
}

/// Why a budget does not select a pod.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum NotSelected {
    /// The pod lives in another namespace.
    OtherNamespace,
    /// Neither `selector` nor `targetRef` is set, or the selector is empty (upstream never
    /// lets an empty selector match).
    NoSelector,
    /// The selector does not match the pod's labels.
    SelectorMismatch,
    /// The pod is not owned by the resolved target.
    NotOwnedByTarget,
}

/// Why a selected pod is exempt from the budget's checks.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Exemption {
    /// The pod carries `pub.kruise.io/no-protect: "true"`.
    NoProtectAnnotation,
    /// The pod matches `spec.ignoredPodSelector`.
    IgnoredPodSelector,
}

/// How a budget relates to one pod.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Coverage {
    /// The budget selects the pod and guards its operations.
    Covered,
    /// The budget selects the pod (it counts in the status) but does not guard it.
    Exempt(Exemption),
    /// The budget does not select the pod.
    NotSelected(NotSelected),
    /// The budget has a `targetRef` that was not resolved; the caller must decide what to do
    /// (retry, report) instead of assuming the pod is not covered.
    TargetUnresolved,
}

impl Coverage {
    /// Whether the pod belongs to the budget's pods (covered or exempt): the pods to pass to
    /// [`super::compute_status`].
    pub fn selects(self) -> bool {
        matches!(self, Coverage::Covered | Coverage::Exempt(_))
    }
}

/// How `budget` relates to `pod`. `target` is what the caller resolved `spec.targetRef` to;
/// it is read only when the budget has a `targetRef` (then `None` means unresolved).
pub fn coverage(
    budget: &PodUnavailableBudget,
    target: Option<&TargetPods>,
    pod: &Pod,
) -> Result<Coverage, PubError> {
    if budget.metadata.namespace.as_deref().unwrap_or("")
        != pod.metadata.namespace.as_deref().unwrap_or("")
    {
        return Ok(Coverage::NotSelected(NotSelected::OtherNamespace));
    }
    let labels = pod.metadata.labels.as_ref();
    if budget.spec.target_reference.is_some() {
        match target {
            None | Some(TargetPods::Unresolved) => return Ok(Coverage::TargetUnresolved),
            Some(TargetPods::OwnedBy(uids)) => {
                let owned = pod
                    .metadata
                    .owner_references
                    .iter()
                    .flatten()
                    .any(|r| r.controller == Some(true) && uids.contains(&r.uid));
                if !owned {
                    return Ok(Coverage::NotSelected(NotSelected::NotOwnedByTarget));
                }
            }
            Some(TargetPods::Selector(selector)) => {
                if is_empty(selector) {
                    return Ok(Coverage::NotSelected(NotSelected::NoSelector));
                }
                if !parse(budget, "targetRef selector", selector)?.matches(labels) {
                    return Ok(Coverage::NotSelected(NotSelected::SelectorMismatch));
                }
            }
        }
    } else {
        let Some(selector) = budget.spec.selector.as_ref().filter(|s| !is_empty(s)) else {
            return Ok(Coverage::NotSelected(NotSelected::NoSelector));
        };
        if !parse(budget, "spec.selector", selector)?.matches(labels) {
            return Ok(Coverage::NotSelected(NotSelected::SelectorMismatch));
        }
    }
    if has_no_protect(pod) {
        return Ok(Coverage::Exempt(Exemption::NoProtectAnnotation));
    }
    if let Some(ignored) = budget.spec.ignored_pod_selector.as_ref().filter(|s| !is_empty(s))
        && parse(budget, "spec.ignoredPodSelector", ignored)?.matches(labels)
    {
        return Ok(Coverage::Exempt(Exemption::IgnoredPodSelector));
    }
    Ok(Coverage::Covered)
}

/// The answer to the pod webhook's "which budget covers this pod".
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub enum BudgetForPod<'a> {
    /// The first budget (in the order given) that selects the pod, and how.
    Found {
        /// The budget.
        budget: &'a PodUnavailableBudget,
        /// [`Coverage::Covered`] or [`Coverage::Exempt`].
        coverage: Coverage,
    },
    /// No budget selects the pod, but these budgets' targets were not resolved, so one of
    /// them might.
    Unresolved(Vec<&'a PodUnavailableBudget>),
    /// No budget selects the pod.
    None,
}

/// The budget covering `pod`, given every budget of the pod's namespace with its resolved
/// target (`None` for budgets without `targetRef`, or not resolved). As upstream, the first
/// budget that selects the pod wins.
pub fn budget_for_pod<'a, I>(budgets: I, pod: &Pod) -> Result<BudgetForPod<'a>, PubError>
where
    I: IntoIterator<Item = (&'a PodUnavailableBudget, Option<&'a TargetPods>)>,
{
    let mut unresolved = Vec::new();
    for (budget, target) in budgets {
        match coverage(budget, target, pod)? {
            c @ (Coverage::Covered | Coverage::Exempt(_)) => {
                return Ok(BudgetForPod::Found { budget, coverage: c });
            }
            Coverage::TargetUnresolved => unresolved.push(budget),
            Coverage::NotSelected(_) => {}
        }
    }
    Ok(if unresolved.is_empty() {
        BudgetForPod::None
    } else {
        BudgetForPod::Unresolved(unresolved)
    })
}

/// Whether the pod opted out of every budget (`pub.kruise.io/no-protect` parses as true, as
/// Go's `strconv.ParseBool` reads it).
pub(crate) fn has_no_protect(pod: &Pod) -> bool {
    pod.metadata
        .annotations
        .as_ref()
        .and_then(|a| a.get(PUB_NO_PROTECT))
        .is_some_and(|v| matches!(v.as_str(), "1" | "t" | "T" | "true" | "TRUE" | "True"))
}

fn is_empty(selector: &LabelSelector) -> bool {
    selector.match_labels.as_ref().is_none_or(|m| m.is_empty())
        && selector.match_expressions.as_ref().is_none_or(|e| e.is_empty())
}

fn parse(
    budget: &PodUnavailableBudget,
    field: &'static str,
    selector: &LabelSelector,
) -> Result<PodSelector, PubError> {
    PodSelector::parse(Some(selector)).map_err(|e| PubError::InvalidSelector {
        budget: budget_key(budget),
        field,
        reason: e.to_string(),
    })
}
