//! The RolloutHistory planner (`rollouts.kruise.io/v1alpha1`): one record of each release of a
//! Rollout that has a rollout id, as upstream's `rollouthistory-controller` writes it behind
//! Kruise Rollout's `RolloutHistory` gate (alpha, off by default).
//!
//! - A release is known by the Rollout's `status.canaryStatus.observedRolloutID` (a Rollout
//!   without one keeps no history). Its record is the RolloutHistory labelled
//!   `rollouts.kruise.io/rollout-name=<rollout>` and `rollouts.kruise.io/rollout-id=<id>`.
//! - While the Rollout is `Progressing` and no record exists, an empty one is created, named
//!   `<rollout>-<6 characters>`. Upstream draws the characters at random; here they come from
//!   the Rollout's UID and the id, so that a create retried after a crash finds the record
//!   made before it instead of making a second one.
//! - Once the Rollout is `Healthy` again, the record gets the specs of the Rollout, its
//!   workload, the Service and Ingress or HTTPRoute of its first traffic routing, then
//!   `status.phase: completed` and, for each step, the pods it updated (those labelled with
//!   the id and the step as batch). A completed record is never touched again. Upstream
//!   records canary releases only; blue-green ones are recorded here too.
//! - Records have no owner and are never removed: they outlive the Rollout, as upstream's.
//!
//! Upstream waits, retrying, for a Service or Ingress the routing names that does not exist;
//! here what exists is recorded and what does not is left out.

use std::collections::BTreeMap;

use kruise_api::rollouts::v1alpha1::{
    CanaryStepInfo, NameAndSpecData, PodInfo, RolloutHistory, RolloutHistoryStatus,
};
use kruise_api::rollouts::v1beta1::{Rollout, RolloutPhase};
use serde_json::{Value, json};
use sha2::{Digest, Sha256};

use super::rollout::{TrafficObjects, traffic_routings};
use super::{ROLLOUT_BATCH_ID_LABEL, ROLLOUT_ID_LABEL};
use crate::expectations::ControllerExpectations;
use crate::plan::{Action, ObjectKind, Patch, Plan, Subresource, Target};

/// The label naming the Rollout a RolloutHistory records.
pub const ROLLOUT_NAME_LABEL: &str = "rollouts.kruise.io/rollout-name";

/// `status.phase` of a finished record.
pub const PHASE_COMPLETED: &str = "completed";

/// The workload a Rollout releases, as recorded.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct RecordedWorkload {
    /// `apiVersion`.
    pub api_version: String,
    /// `kind`.
    pub kind: String,
    /// `metadata.name`.
    pub name: String,
    /// `spec`, as read.
    pub spec: Value,
}

/// A pod of the workload, as a record lists it.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct HistoryPod {
    /// `metadata.name`.
    pub name: String,
    /// `status.podIP`.
    pub ip: String,
    /// `spec.nodeName`.
    pub node_name: String,
    /// `metadata.labels`.
    pub labels: BTreeMap<String, String>,
    /// `metadata.deletionTimestamp` is set.
    pub deleting: bool,
}

/// What the RolloutHistory planner reads.
#[derive(Clone, Debug, Default)]
pub struct Snapshot {
    /// The Rollout.
    pub rollout: Rollout,
    /// The RolloutHistories in its namespace.
    pub histories: Vec<RolloutHistory>,
    /// Its workload, when it exists.
    pub workload: Option<RecordedWorkload>,
    /// The objects its first traffic routing names.
    pub traffic: TrafficObjects,
    /// The workload's pods (those its selector matches).
    pub pods: Vec<HistoryPod>,
}

/// The name of the record of release `rollout_id` of the Rollout `rollout` (UID `uid`):
/// `<rollout>-` and six characters of `[a-z0-9]` from a hash of the UID and the id.
pub fn history_name(rollout: &str, uid: &str, rollout_id: &str) -> String {
    const ALPHABET: &[u8] = b"bcdfghjklmnpqrstvwxz2456789";
    let digest = Sha256::digest(format!("{uid}/{rollout_id}").as_bytes());
    let suffix: String = digest
        .iter()
        .take(6)
        .map(|b| char::from(ALPHABET[usize::from(*b) % ALPHABET.len()]))
        .collect();
    format!("{rollout}-{suffix}")
}

/// The record of the Rollout's current release among `histories`, when one exists (the first
/// by name, as upstream takes the first of its list).
pub fn record_of<'h>(
    rollout: &Rollout,
    rollout_id: &str,
    histories: &'h [RolloutHistory],
) -> Option<&'h RolloutHistory> {
    let name = rollout.metadata.name.as_deref().unwrap_or_default();
    histories
        .iter()
        .filter(|h| {
            let labels = h.metadata.labels.as_ref();
            let label = |key: &str| labels.and_then(|l| l.get(key)).map(String::as_str);
            label(ROLLOUT_NAME_LABEL) == Some(name) && label(ROLLOUT_ID_LABEL) == Some(rollout_id)
        })
        .min_by(|a, b| a.metadata.name.cmp(&b.metadata.name))
}

/// Plans one pass over a Rollout's history.
pub fn plan(snapshot: &Snapshot) -> Plan<()> {
    let mut plan = Plan::empty(ControllerExpectations::default());
    let rollout = &snapshot.rollout;
    let status = rollout.status.as_ref();
    let common = status.and_then(|s| {
        s.canary_status
            .as_ref()
            .map(|c| &c.common)
            .or(s.blue_green_status.as_ref().map(|b| &b.common))
    });
    let Some(rollout_id) =
        common.map(|c| c.observed_rollout_id.as_str()).filter(|id| !id.is_empty())
    else {
        return plan;
    };
    let phase = status.and_then(|s| s.phase.clone());
    let name = rollout.metadata.name.clone().unwrap_or_default();
    let namespace = rollout.metadata.namespace.clone().unwrap_or_default();
    let Some(record) = record_of(rollout, rollout_id, &snapshot.histories) else {
        if phase == Some(RolloutPhase::Progressing) {
            let uid = rollout.metadata.uid.as_deref().unwrap_or_default();
            let record_name = history_name(&name, uid, rollout_id);
            plan.actions.push(Action::CreateObject {
                target: Target::new(ObjectKind::ROLLOUT_HISTORY, Some(&namespace), &record_name),
                body: std::sync::Arc::new(json!({
                    "apiVersion": ObjectKind::ROLLOUT_HISTORY.api_version(),
                    "kind": ObjectKind::ROLLOUT_HISTORY.kind,
                    "metadata": {
                        "name": record_name,
                        "namespace": namespace,
                        "labels": {ROLLOUT_ID_LABEL: rollout_id, ROLLOUT_NAME_LABEL: name},
                    },
                    "spec": {},
                })),
            });
        }
        return plan;
    };
    let done = record.status.as_ref().is_some_and(|s| s.phase == PHASE_COMPLETED);
    if done || phase != Some(RolloutPhase::Healthy) {
        return plan;
    }
    let record_name = record.metadata.name.clone().unwrap_or_default();
    let target = || Target::new(ObjectKind::ROLLOUT_HISTORY, Some(&namespace), &record_name);
    if record.spec.rollout.rollout_id != rollout_id {
        plan.actions.push(Action::PatchObject {
            target: target(),
            subresource: Subresource::Main,
            patch: Patch::merge(json!({"spec": recorded_spec(snapshot, rollout_id)})),
        });
    }
    let recorded = RolloutHistoryStatus {
        phase: PHASE_COMPLETED.to_owned(),
        canary_steps: canary_steps(snapshot, rollout_id),
    };
    plan.actions.push(Action::PatchObject {
        target: target(),
        subresource: Subresource::Status,
        patch: Patch::merge(json!({"status": recorded})),
    });
    plan
}

/// `data` of a recorded object: its spec.
fn spec_of<T: serde::Serialize>(object: &T) -> Option<Value> {
    serde_json::to_value(object).ok().and_then(|v| v.get("spec").cloned())
}

/// The record's spec: the Rollout, its workload, and the objects of its first routing.
fn recorded_spec(snapshot: &Snapshot, rollout_id: &str) -> Value {
    let rollout = &snapshot.rollout;
    let mut spec = json!({
        "rollout": {
            "rolloutID": rollout_id,
            "name": rollout.metadata.name,
            "data": spec_of(rollout),
        },
    });
    if let Some(workload) = &snapshot.workload {
        spec["workload"] = json!({
            "apiVersion": workload.api_version,
            "kind": workload.kind,
            "name": workload.name,
            "data": workload.spec,
        });
    }
    let Some(routing) = traffic_routings(rollout).first() else { return spec };
    let traffic = &snapshot.traffic;
    let named = |name: &str, data: Option<Value>| NameAndSpecData { name: name.to_owned(), data };
    spec["service"] =
        json!(named(&routing.service, traffic.stable_service.as_ref().and_then(spec_of)));
    let mut routed = serde_json::Map::new();
    if let Some(ingress) = &routing.ingress {
        let data = traffic.ingress.as_ref().and_then(spec_of);
        routed.insert("ingress".into(), json!(named(&ingress.name, data)));
    }
    if let Some(route) = routing.gateway.as_ref().and_then(|g| g.http_route_name.as_deref()) {
        let data = traffic.http_route.as_ref().and_then(|r| r.get("spec").cloned());
        routed.insert("httpRoute".into(), json!(named(route, data)));
    }
    if !routed.is_empty() {
        spec["trafficRouting"] = Value::Object(routed);
    }
    spec
}

/// For each step (from 1), the pods updated in it: labelled with the release id and the step
/// as batch, and not being deleted.
fn canary_steps(snapshot: &Snapshot, rollout_id: &str) -> Vec<CanaryStepInfo> {
    let steps = super::rollout::steps(&snapshot.rollout).len();
    (1..=steps)
        .map(|step| {
            let batch = step.to_string();
            let pods = snapshot
                .pods
                .iter()
                .filter(|p| !p.deleting)
                .filter(|p| {
                    p.labels.get(ROLLOUT_ID_LABEL).map(String::as_str) == Some(rollout_id)
                        && p.labels.get(ROLLOUT_BATCH_ID_LABEL) == Some(&batch)
                })
                .map(|p| PodInfo {
                    name: p.name.clone(),
                    ip: p.ip.clone(),
                    node_name: p.node_name.clone(),
                })
                .collect();
            CanaryStepInfo { canary_step_index: i32::try_from(step).unwrap_or(i32::MAX), pods }
        })
        .collect()
}
