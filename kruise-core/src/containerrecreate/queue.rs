//! One request at a time per pod.

use kruise_api::apps::v1beta1::{ContainerRecreateRequest, ContainerRecreateRequestPhase};
use serde::Serialize;
use serde_json::json;

use super::{is_completed, phase_of};
use crate::workload::Patch;

/// A request that has to wait, and the status patch that says so.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct WaitingCrr {
    /// The waiting request.
    pub name: String,
    /// Why it waits.
    pub reason: String,
    /// Status merge patch (`phase: Pending` and the reason as message), `None` when the
    /// request already says so.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub patch: Option<Patch>,
}

/// Which of a pod's requests may run.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ActivePick {
    /// The request the daemon works on now.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub active: Option<String>,
    /// The other unfinished requests, in the order they will run.
    pub waiting: Vec<WaitingCrr>,
}

/// Picks the request to run among all requests of one pod (upstream's
/// `pickRecreateRequest`): finished and deleting requests are skipped; one already
/// Recreating keeps running; otherwise Pending ones go before new ones (no phase yet), then
/// the oldest (`creationTimestamp`), then by name. The others wait with phase `Pending` and a
/// message naming the active request. Planned again after the active one finishes, the next
/// one is picked.
pub fn pick_active(crrs: &[ContainerRecreateRequest]) -> ActivePick {
    let mut open: Vec<&ContainerRecreateRequest> = crrs
        .iter()
        .filter(|c| c.metadata.deletion_timestamp.is_none() && !is_completed(c))
        .collect();
    open.sort_by(|a, b| {
        let key = |c: &ContainerRecreateRequest| {
            (
                phase_weight(&phase_of(c)),
                c.metadata.creation_timestamp.as_ref().map(|t| t.0),
                c.metadata.name.clone().unwrap_or_default(),
            )
        };
        key(a).cmp(&key(b))
    });
    let mut pick = ActivePick::default();
    let mut iter = open.into_iter();
    let Some(first) = iter.next() else {
        return pick;
    };
    let active = first.metadata.name.clone().unwrap_or_default();
    for crr in iter {
        let reason = format!("waiting for ContainerRecreateRequest {active} on the same Pod");
        let status = crr.status.as_ref();
        let up_to_date = phase_of(crr) == ContainerRecreateRequestPhase::Pending
            && status.is_some_and(|s| s.message == reason);
        let patch = (!up_to_date).then(|| {
            Patch::merge(json!({"status": {
                "phase": ContainerRecreateRequestPhase::Pending,
                "message": reason,
            }}))
        });
        pick.waiting.push(WaitingCrr {
            name: crr.metadata.name.clone().unwrap_or_default(),
            reason,
            patch,
        });
    }
    pick.active = Some(active);
    pick
}

fn phase_weight(phase: &ContainerRecreateRequestPhase) -> u8 {
    match phase {
        ContainerRecreateRequestPhase::Completed => 1,
        ContainerRecreateRequestPhase::Recreating => 2,
        ContainerRecreateRequestPhase::Pending => 3,
        _ => 4,
    }
}
