//! Native DaemonSets under a release (upstream's main branch).
//!
//! A native DaemonSet has no partition. While a Rollout releases it, it runs `OnDelete` (the
//! workload webhook saves its own strategy type in
//! `rollouts.kruise.io/daemonset-original-update-strategy`), so kube-controller-manager
//! replaces a pod only once it is deleted. Each batch writes
//! `rollouts.kruise.io/daemonset-advanced-control` (`partition`: how many pods keep the old
//! revision; `batch-revision`: the revision the batch moves pods to), and [`plan`] deletes old
//! pods until enough run that revision, within the DaemonSet's own `maxUnavailable`. At the
//! end the strategy type comes back.

use std::collections::BTreeMap;

use jiff::Timestamp;
use k8s_openapi::api::apps::v1::DaemonSet;
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;
use serde::{Deserialize, Serialize};

use crate::intstr::{Rounding, scaled_value};
use crate::plan::{Action, Event, EventType, Guard, ObjectKind, Plan, Target};

pub use kruise_api::well_known::rollouts::annotations::{
    DAEMONSET_ADVANCED_CONTROL as CONTROL_ANNOTATION,
    DAEMONSET_ORIGINAL_UPDATE_STRATEGY as ORIGINAL_STRATEGY_ANNOTATION,
};

/// `rollouts.kruise.io/daemonset-advanced-control`, as upstream writes it.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Control {
    /// How many pods (or what share, `"40%"`) keep the old revision.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub partition: String,
    /// The revision (`controller-revision-hash`) the batch moves pods to.
    #[serde(default, rename = "batch-revision", skip_serializing_if = "String::is_empty")]
    pub batch_revision: String,
}

/// The control annotation of a DaemonSet, when it has a readable one.
pub fn control_of(annotations: &BTreeMap<String, String>) -> Option<Control> {
    serde_json::from_str(annotations.get(CONTROL_ANNOTATION)?).ok()
}

/// A pod of the DaemonSet, as [`plan`] reads it.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct DaemonPod {
    /// Name.
    pub name: String,
    /// UID (the delete's precondition).
    pub uid: String,
    /// Its `controller-revision-hash`.
    pub revision: String,
    /// Ready.
    pub ready: bool,
    /// Being deleted.
    pub deleting: bool,
    /// `metadata.creationTimestamp`.
    pub created: Option<Timestamp>,
}

/// One round for a native DaemonSet under a release: while the pods on the batch revision are
/// fewer than the partition lets them be, old pods are deleted (kube-controller-manager
/// brings them back on the new template), not-ready ones first, then the newest, and no more
/// ready ones than `maxUnavailable` (1 when unset) leaves room for. Nothing while a pod is
/// going (its replacement is not counted yet), or without the control annotation.
pub fn plan(ds: &DaemonSet, pods: &[DaemonPod]) -> Plan<()> {
    let mut plan = Plan::empty(Default::default());
    let annotations = ds.metadata.annotations.clone().unwrap_or_default();
    let Some(control) = control_of(&annotations) else { return plan };
    if ds.metadata.deletion_timestamp.is_some() || control.batch_revision.is_empty() {
        return plan;
    }
    if pods.iter().any(|p| p.deleting) {
        return plan;
    }
    let total = pods.len() as i32;
    let partition = match control.partition.parse::<i32>() {
        Ok(n) => IntOrString::Int(n),
        Err(_) => IntOrString::String(control.partition.clone()),
    };
    let keep = scaled_value(&partition, total, Rounding::Up).unwrap_or(total).clamp(0, total);
    let desired = total - keep;
    let updated = pods.iter().filter(|p| p.revision == control.batch_revision).count() as i32;
    if updated >= desired {
        return plan;
    }
    let max_unavailable = ds
        .spec
        .update_strategy
        .as_ref()
        .and_then(|s| s.rolling_update.as_ref())
        .and_then(|r| r.max_unavailable.clone())
        .unwrap_or(IntOrString::Int(1));
    let max_unavailable = scaled_value(&max_unavailable, total, Rounding::Up).unwrap_or(1).max(1);
    let unavailable = pods.iter().filter(|p| !p.ready).count() as i32;
    let mut old: Vec<&DaemonPod> =
        pods.iter().filter(|p| p.revision != control.batch_revision).collect();
    // Not ready first, then the newest.
    old.sort_by(|a, b| a.ready.cmp(&b.ready).then_with(|| b.created.cmp(&a.created)));
    let mut room = (max_unavailable - unavailable).max(0);
    let mut need = desired - updated;
    let namespace = ds.metadata.namespace.clone().unwrap_or_default();
    for pod in old {
        if need <= 0 {
            break;
        }
        if pod.ready {
            if room <= 0 {
                break;
            }
            room -= 1;
        }
        need -= 1;
        plan.actions.push(Action::DeleteObject {
            target: Target::new(ObjectKind::POD, Some(&namespace), &pod.name)
                .guarded(Guard::Uid(pod.uid.clone())),
        });
        plan.events.push(Event {
            type_: EventType::Normal,
            reason: "DeletePodForRelease".into(),
            message: format!(
                "deleted pod {} so that it comes back on revision {}",
                pod.name, control.batch_revision
            ),
            after_action: Some(plan.actions.len() - 1),
        });
    }
    plan
}
