//! The WorkloadSpread controller's plan for one WorkloadSpread, in the shape every planner
//! returns ([`Plan`]): [`reconcile`](super::reconcile)'s pod patches (deletion costs, adoption
//! into a subset), then the status, guarded by the resourceVersion it was computed from (a
//! reservation the webhook wrote meanwhile makes it a conflict, and the WorkloadSpread is
//! computed again), then the deletions of pods stuck unschedulable, which come only once the
//! status marks their subset unschedulable (their replacements must not be placed there
//! again), as upstream orders them.

use kruise_api::apps::v1beta1::WorkloadSpread;
use serde_json::json;

use super::{MATCHED_WORKLOADSPREAD_ANNOTATION, ReconcilePlan};
use crate::plan::{Action, Event, Guard, ObjectKind, Patch, Plan, Subresource, Target};

/// The label on pods a WorkloadSpread placed, which the pod DELETE webhook's `objectSelector`
/// selects. Its value is `"true"`.
pub const MATCHED_LABEL: &str = "workloadspread.kruise.io/matched";

/// The plan for `ws` from what [`reconcile`](super::reconcile) found.
pub fn plan(ws: &WorkloadSpread, found: &ReconcilePlan) -> Plan<()> {
    let namespace = ws.metadata.namespace.as_deref();
    let mut plan = Plan::empty(Default::default());
    plan.requeue_after = found.requeue_after.and_then(|d| jiff::SignedDuration::try_from(d).ok());
    plan.events = found
        .events
        .iter()
        .map(|e| Event {
            type_: e.type_,
            reason: e.reason.clone().into(),
            message: e.message.clone(),
            after_action: None,
        })
        .collect();
    for patch in &found.pod_patches {
        let mut body = patch.patch.clone();
        // A pod adopted into a subset is marked as one the webhook placed.
        if body
            .pointer("/metadata/annotations")
            .and_then(|a| a.get(MATCHED_WORKLOADSPREAD_ANNOTATION))
            .is_some()
        {
            body["metadata"]["labels"][MATCHED_LABEL] = json!("true");
        }
        plan.actions.push(Action::PatchObject {
            target: Target::new(ObjectKind::POD, namespace, &patch.name),
            subresource: Subresource::Main,
            patch: Patch::merge(body),
        });
    }
    if found.status_changed {
        let guard =
            ws.metadata.resource_version.clone().map_or(Guard::None, Guard::ResourceVersion);
        let name = ws.metadata.name.as_deref().unwrap_or_default();
        plan.actions.push(Action::PatchObject {
            target: Target::new(ObjectKind::WORKLOAD_SPREAD, namespace, name).guarded(guard),
            subresource: Subresource::Status,
            patch: Patch::merge(crate::merge_patch::status_patch(
                ws.status.as_ref(),
                &found.status,
            )),
        });
    }
    for pod in &found.delete_pods {
        plan.actions
            .push(Action::DeleteObject { target: Target::new(ObjectKind::POD, namespace, pod) });
    }
    plan
}
