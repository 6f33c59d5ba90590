//! The ContainerRecreateRequest controller's plan for one request, in the shape every planner
//! returns ([`Plan`]): [`plan_crr`]'s actions on the request and its pod, then, for the pod's
//! requests together, [`pick_active`]'s status patches (the waiting ones marked `Pending`, the
//! active one's waiting message cleared).

use jiff::Timestamp;
use k8s_openapi::api::core::v1::Pod;
use kruise_api::apps::v1beta1::{ContainerRecreateRequest, ContainerRecreateRequestPhase};
use serde_json::json;

use super::{CrrAction, pick_active, plan_crr};
use crate::plan::{Action, Event, EventType, Guard, ObjectKind, Patch, Plan, Subresource, Target};

/// The start of the message [`pick_active`] gives a waiting request.
const WAITING_PREFIX: &str = "waiting for ContainerRecreateRequest ";

/// The plan for `crr`, whose pod is `pod` (`None`: gone), among `siblings` (every request of
/// the same pod, `crr` included).
///
/// - The request's own actions come first. Finalizer changes are patches of the whole list
///   computed here, guarded by the request's resourceVersion, so a stale list is refused.
/// - When the request is deleted (`ttlSecondsAfterFinished`), nothing follows.
/// - Otherwise the pod's requests are ordered: one runs, the others wait with phase
///   `Pending` and a message naming it; the one that runs loses that message.
/// - A `Completed` Event follows the request's last action.
pub fn plan(
    crr: &ContainerRecreateRequest,
    pod: Option<&Pod>,
    siblings: &[ContainerRecreateRequest],
    now: Timestamp,
) -> Plan<()> {
    let own = plan_crr(crr, pod, now);
    let namespace = crr.metadata.namespace.as_deref();
    let name = crr.metadata.name.as_deref().unwrap_or_default();
    let request = Target::new(ObjectKind::CONTAINER_RECREATE_REQUEST, namespace, name);
    let mut plan = Plan::empty(Default::default());
    plan.requeue_after = own.requeue_after;
    let finalizers = |list: Vec<String>| {
        let guard =
            crr.metadata.resource_version.clone().map_or(Guard::None, Guard::ResourceVersion);
        Action::PatchObject {
            target: request.clone().guarded(guard),
            subresource: Subresource::Main,
            patch: Patch::merge(json!({"metadata": {"finalizers": list}})),
        }
    };
    let current = crr.metadata.finalizers.clone().unwrap_or_default();
    let mut deleted = false;
    for action in own.actions {
        plan.actions.push(match action {
            CrrAction::PatchStatus { patch } => Action::PatchObject {
                target: request.clone(),
                subresource: Subresource::Status,
                patch,
            },
            CrrAction::PatchMetadata { patch } => Action::PatchObject {
                target: request.clone(),
                subresource: Subresource::Main,
                patch,
            },
            CrrAction::AddFinalizer { finalizer } => {
                let mut list = current.clone();
                if !list.contains(&finalizer) {
                    list.push(finalizer);
                }
                finalizers(list)
            }
            CrrAction::RemoveFinalizer { finalizer } => {
                finalizers(current.iter().filter(|f| **f != finalizer).cloned().collect())
            }
            CrrAction::UpdatePodConditions { pod, patch } => Action::PatchObject {
                target: Target::new(ObjectKind::POD, namespace, &pod),
                subresource: Subresource::Status,
                patch,
            },
            CrrAction::Delete => {
                deleted = true;
                Action::DeleteObject { target: request.clone() }
            }
        });
        if deleted {
            break;
        }
    }
    if let Some(message) = own.completed {
        plan.events.push(Event {
            type_: EventType::Normal,
            reason: "Completed".into(),
            message,
            after_action: plan.actions.len().checked_sub(1),
        });
    }
    if deleted {
        return plan;
    }

    // One request per pod at a time.
    let pick = pick_active(siblings);
    for waiting in pick.waiting {
        let Some(patch) = waiting.patch else { continue };
        plan.actions.push(Action::PatchObject {
            target: Target::new(ObjectKind::CONTAINER_RECREATE_REQUEST, namespace, &waiting.name),
            subresource: Subresource::Status,
            patch,
        });
    }
    // The one that runs no longer waits.
    if let Some(active) = pick.active.as_deref()
        && let Some(current) = siblings.iter().find(|c| c.metadata.name.as_deref() == Some(active))
        && let Some(status) = current.status.as_ref()
        && status.phase == ContainerRecreateRequestPhase::Pending
        && status.message.starts_with(WAITING_PREFIX)
    {
        plan.actions.push(Action::PatchObject {
            target: Target::new(ObjectKind::CONTAINER_RECREATE_REQUEST, namespace, active),
            subresource: Subresource::Status,
            patch: Patch::merge(json!({"status": {"message": null}})),
        });
    }
    plan
}
