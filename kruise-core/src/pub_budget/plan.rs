//! The PodUnavailableBudget controller's plan for one budget, in the shape every planner
//! returns ([`Plan`]): the status when it changed, guarded by the resourceVersion it was
//! computed from (a reservation the webhook wrote meanwhile makes it a conflict, and the
//! budget is computed again), then the marks on the pods it covers or no longer covers.

use k8s_openapi::api::core::v1::Pod;
use kruise_api::policy::v1beta1::PodUnavailableBudget;
use kruise_api::well_known::annotations;
use serde_json::{Value, json};

use super::StatusOutcome;
use crate::plan::{Action, Guard, ObjectKind, Patch, Plan, Subresource, Target};

/// The label on every pod a budget covers: it sends the pod's updates and deletions to the
/// pod validating webhook (its objectSelector), and no other pod's.
pub const COVERED_LABEL: &str = "pub.kruise.io/protected";

/// The plan for `budget`, whose status is `outcome`, over the pods of its namespace with
/// whether each is covered.
pub fn plan<'a>(
    budget: &PodUnavailableBudget,
    outcome: &StatusOutcome,
    pods: impl IntoIterator<Item = (&'a Pod, bool)>,
) -> Plan<()> {
    let namespace = budget.metadata.namespace.as_deref();
    let name = budget.metadata.name.as_deref().unwrap_or_default();
    let mut plan = Plan::empty(Default::default());
    plan.requeue_after = outcome.recheck_after;
    if outcome.changed {
        // Entries gone from the maps are removed (`null`), not left in place.
        let patch = crate::merge_patch::status_patch(budget.status.as_ref(), &outcome.status);
        let guard =
            budget.metadata.resource_version.clone().map_or(Guard::None, Guard::ResourceVersion);
        plan.actions.push(Action::PatchObject {
            target: Target::new(ObjectKind::POD_UNAVAILABLE_BUDGET, namespace, name).guarded(guard),
            subresource: Subresource::Status,
            patch: Patch::merge(patch),
        });
    }
    for (pod, covered) in pods {
        if let Some(patch) = mark_patch(pod, name, covered) {
            let pod_name = pod.metadata.name.as_deref().unwrap_or_default();
            plan.actions.push(Action::PatchObject {
                target: Target::new(ObjectKind::POD, namespace, pod_name),
                subresource: Subresource::Main,
                patch: Patch::merge(patch),
            });
        }
    }
    plan
}

/// The merge patch that marks a pod `budget` covers (the related-pub annotations and
/// [`COVERED_LABEL`]), or unmarks one it no longer covers; `None` when nothing changes.
pub fn mark_patch(pod: &Pod, budget: &str, covered: bool) -> Option<Value> {
    let empty = std::collections::BTreeMap::new();
    let labels = pod.metadata.labels.as_ref().unwrap_or(&empty);
    let notes = pod.metadata.annotations.as_ref().unwrap_or(&empty);
    let named = notes.get(annotations::PUB_RELATED_PUB).map(String::as_str);
    if covered {
        let done = labels.get(COVERED_LABEL).map(String::as_str) == Some("true")
            && named == Some(budget)
            && notes.get(annotations::PUB_RELATED_PUB_LEGACY).map(String::as_str) == Some(budget);
        return (!done).then(|| {
            json!({"metadata": {
                "labels": {COVERED_LABEL: "true"},
                "annotations": {
                    annotations::PUB_RELATED_PUB: budget,
                    annotations::PUB_RELATED_PUB_LEGACY: budget,
                },
            }})
        });
    }
    // Marked for this budget, no longer covered.
    (named == Some(budget)).then(|| {
        json!({"metadata": {
            "labels": {COVERED_LABEL: null},
            "annotations": {
                annotations::PUB_RELATED_PUB: null,
                annotations::PUB_RELATED_PUB_LEGACY: null,
            },
        }})
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pod(labels: Value, notes: Value) -> Pod {
        serde_json::from_value(json!({"metadata": {"name": "p", "namespace": "ns",
            "labels": labels, "annotations": notes}}))
        .expect("pod")
    }

    #[test]
    fn covered_pods_are_marked_once_and_released_pods_unmarked() {
        let bare = pod(json!({}), json!({}));
        let patch = mark_patch(&bare, "web", true).expect("marks");
        assert_eq!(patch["metadata"]["labels"][COVERED_LABEL], "true");
        assert_eq!(patch["metadata"]["annotations"][annotations::PUB_RELATED_PUB], "web");
        let marked = pod(
            json!({COVERED_LABEL: "true"}),
            json!({annotations::PUB_RELATED_PUB: "web", annotations::PUB_RELATED_PUB_LEGACY: "web"}),
        );
        assert!(mark_patch(&marked, "web", true).is_none());
        let unmark = mark_patch(&marked, "web", false).expect("unmarks");
        assert!(unmark["metadata"]["labels"][COVERED_LABEL].is_null());
        // Another budget's pod is left alone.
        assert!(mark_patch(&marked, "other", false).is_none());
    }
}
