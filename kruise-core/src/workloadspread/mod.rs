//! WorkloadSpread: spreading the pods of one workload over ordered subsets of nodes, each with
//! its own limit (`maxReplicas`), node affinity, tolerations and pod patch, as upstream
//! OpenKruise's pod webhook and WorkloadSpread controller do it, as pure functions.
//!
//! - [`select_workload_spread`] picks the WorkloadSpread (at most one) that governs a new pod,
//!   from its owner chain and labels; [`is_supported_owner`] and [`CustomWorkloadWhitelist`]
//!   say which owners count.
//! - [`reserve`] is the webhook's bookkeeping at pod create, delete and eviction: which subset
//!   a new pod goes to and the WorkloadSpread status to write (optimistically) for it.
//! - [`inject`] writes the chosen subset into the pod: tolerations, node affinity, the subset's
//!   strategic merge patch and the `apps.kruise.io/matched-workloadspread` annotation.
//! - [`reconcile`] is the controller: the status computed from the pods (versioned per pod
//!   revision), adoption of pods created before the WorkloadSpread, deletion costs, the
//!   `Schedulable` condition (upstream's `SubsetSchedulable` constant) and the pods to delete under the Adaptive strategy.
//!
//! Validation lives in [`crate::workloadspread::admission`].
//!
//! Differences from upstream, on purpose:
//! - **Idempotent injection.** Injecting a pod twice gives the pod injected once: tolerations,
//!   preferred terms and required-term requirements already present are not added again
//!   (upstream appends them again, which is how repeated webhook calls under frequent deletes
//!   produced broken affinities, issue #2129).
//! - **maxReplicas** is read everywhere with the lenient rules validation uses (`"50"` is 50%,
//!   as upstream's validation and deletion cost read it); a value that still does not parse
//!   counts as 0 (upstream's webhook does the same; its controller gives up on the whole
//!   status instead).
//! - **targetFilter without a selector** selects every pod, in the webhook as in the
//!   controller (upstream's webhook selects no pod then, its controller every pod).
//! - **Expiry** of `creatingPods`/`deletingPods` and of the unschedulable condition happens
//!   at the deadline itself (upstream: strictly after it), so the planner never asks to be
//!   requeued after zero seconds.
//! - **Events** that the overall and the versioned status computations would both record are
//!   planned once.
//! - **Times** written to the status are whole seconds, as the API server stores them.
//!
//! Scale-in rebalancing (issue #877) and subsets after a rolling update (#1194): the
//! deletion costs put the pods over a subset's limit first (later subsets' extra pods before
//! earlier ones'), then whole subsets from the last to the first, so scaling a workload in
//! empties the subsets in reverse order while keeping every limited subset at its limit; the
//! pods of older revisions are ordered the other way round, so that a rolling update drains the
//! first subsets' old pods first and the new revision fills subsets in order. Status is kept per
//! revision (`versionedSubsetStatuses`) for the kinds in [`VersionedKinds`], so a rolling update
//! does not see the old revision's pods as filling the subsets.

pub mod admission;
mod inject;
mod plan;
mod reconcile;
mod reserve;
mod target;

#[cfg(test)]
mod tests;

use std::collections::{BTreeMap, BTreeSet};

use k8s_openapi::api::core::v1::Pod;
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;
use kruise_api::apps::v1beta1::{WorkloadSpread, WorkloadSpreadSubset, WorkloadSpreadSubsetStatus};
use serde_json::Value;

use crate::intstr::{IntOrPercent, Rounding};
use crate::revision::gojson::write_string;

pub use inject::{InjectError, inject, inject_patch};
pub use plan::{MATCHED_LABEL, plan};
pub use reconcile::{
    PlannedEvent, PodPatch, ReconcileInput, ReconcilePlan, pod_unscheduled_deadline, reconcile,
};
pub use reserve::{PodOperation, Reservation, reserve, reserve_versioned};
pub use target::{
    CustomWorkload, CustomWorkloadWhitelist, GroupVersionKind, WHITELIST_CONFIG_KEY,
    WhitelistError, WorkloadRef, is_reference_equal, is_supported_owner, parse_group,
    select_workload_spread, target_group_kind_name,
};

/// The pod annotation naming the WorkloadSpread and subset a pod was put in (JSON, see
/// [`InjectedSubset`]).
pub const MATCHED_WORKLOADSPREAD_ANNOTATION: &str = "apps.kruise.io/matched-workloadspread";

/// The pod annotation the ReplicaSet and CloneSet controllers read to choose which pods to
/// delete first (lower first).
pub const POD_DELETION_COST_ANNOTATION: &str = "controller.kubernetes.io/pod-deletion-cost";

/// The unit of positive deletion costs: pods kept within a subset's limit get
/// `100 * (subsets - index)`.
pub const POD_DELETION_COST_POSITIVE: i32 = 100;

/// The unit of negative deletion costs: pods over a subset's limit get `-100 * (index + 1)`.
pub const POD_DELETION_COST_NEGATIVE: i32 = -100;

/// The version every pod has when versioned status is not used for its workload.
pub const VERSION_IGNORED: &str = "versionIgnored";

/// The subset name under which pods that match no subset are grouped.
pub const FAKE_SUBSET_NAME: &str = "kruise.io/workloadspread-fake-subset-name";

/// WorkloadSpread annotation: `"true"` keeps the controller from copying a subset's patched
/// labels and annotations onto pods it adopts.
pub const IGNORE_PATCH_EXISTING_PODS_ANNOTATION: &str =
    "workloadspread.kruise.io/ignore-patch-existing-pods-metadata";

/// The `Schedulable` condition (upstream's `SubsetSchedulable` constant) type of a subset status.
pub const SUBSET_SCHEDULABLE: &str = "Schedulable";

/// How long a pod the webhook recorded in `creatingPods` may take to appear (upstream's
/// `CreatPodTimeout`).
pub const CREATE_POD_TIMEOUT: jiff::SignedDuration = jiff::SignedDuration::from_secs(30);

/// How long a pod the webhook recorded in `deletingPods` may take to go (`DeletePodTimeout`).
pub const DELETE_POD_TIMEOUT: jiff::SignedDuration = jiff::SignedDuration::from_secs(15);

/// How long a subset stays unschedulable before pods may be put in it again
/// (`MaxScheduledFailedDuration`).
pub const MAX_SCHEDULED_FAILED_DURATION: jiff::SignedDuration =
    jiff::SignedDuration::from_secs(300);

const POD_TEMPLATE_HASH_LABEL: &str = "pod-template-hash";
const CONTROLLER_REVISION_HASH_LABEL: &str = "controller-revision-hash";

/// What the matched-workloadspread annotation says: the WorkloadSpread, the subset, and the
/// identifier the webhook generated for a pod that had no name yet.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash)]
pub struct InjectedSubset {
    /// The WorkloadSpread's name.
    pub name: String,
    /// The subset's name.
    pub subset: String,
    /// The identifier recorded in `creatingPods` instead of the pod's name; `None` when the
    /// pod had a name.
    pub uid: Option<String>,
}

impl InjectedSubset {
    /// The annotation of `pod`, or `None` when it is absent or is not a JSON object of the
    /// expected shape (keys are matched as Go's decoder matches them: exactly, else ignoring
    /// case).
    pub fn from_pod(pod: &Pod) -> Option<Self> {
        let text = pod.metadata.annotations.as_ref()?.get(MATCHED_WORKLOADSPREAD_ANNOTATION)?;
        Self::parse(text)
    }

    /// Parses the annotation's value (see [`InjectedSubset::from_pod`]).
    pub fn parse(text: &str) -> Option<Self> {
        let Value::Object(map) = serde_json::from_str::<Value>(text).ok()? else {
            return None;
        };
        let field = |key: &str| -> Result<String, ()> {
            let value = map
                .get(key)
                .or_else(|| map.iter().find(|(k, _)| k.eq_ignore_ascii_case(key)).map(|(_, v)| v));
            match value {
                None | Some(Value::Null) => Ok(String::new()),
                Some(Value::String(s)) => Ok(s.clone()),
                Some(_) => Err(()),
            }
        };
        let name = field("name").ok()?;
        let subset = field("subset").ok()?;
        let uid = field("uid").ok()?;
        Some(InjectedSubset { name, subset, uid: (!uid.is_empty()).then_some(uid) })
    }

    /// The annotation's value, as upstream's JSON encoder writes it: `name`, `subset`, and
    /// `uid` only when set.
    pub fn to_annotation(&self) -> String {
        let mut out = String::from("{\"name\":");
        write_string(&mut out, &self.name);
        out.push_str(",\"subset\":");
        write_string(&mut out, &self.subset);
        if let Some(uid) = self.uid.as_deref().filter(|u| !u.is_empty()) {
            out.push_str(",\"uid\":");
            write_string(&mut out, uid);
        }
        out.push('}');
        out
    }
}

/// The workload kinds (lower case) whose pods are counted per revision in
/// `versionedSubsetStatuses` (upstream's `--ws-enabled-versioned-status`, default
/// `deployment,replicaset`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct VersionedKinds(BTreeSet<String>);

impl Default for VersionedKinds {
    fn default() -> Self {
        VersionedKinds::parse("deployment,replicaset")
    }
}

impl VersionedKinds {
    /// Parses the flag's value: comma-separated kinds, case-insensitive; `deployment` brings
    /// `replicaset` with it.
    pub fn parse(flag: &str) -> Self {
        let mut set: BTreeSet<String> = flag.to_lowercase().split(',').map(str::to_owned).collect();
        if set.contains("deployment") {
            set.insert("replicaset".to_owned());
        }
        VersionedKinds(set)
    }

    /// Whether pods of `kind` (any case) are versioned.
    pub fn contains(&self, kind: &str) -> bool {
        self.0.contains(&kind.to_lowercase())
    }
}

/// The last `-`-separated part of a revision name (upstream's `GetShortHash`).
pub fn short_hash(revision: &str) -> &str {
    revision.rsplit('-').next().unwrap_or(revision)
}

/// The pod's version for versioned subset statuses (upstream's `GetPodVersion`): when the pod's
/// controller kind or `target_kind` is in `versioned`, its `pod-template-hash` label, else the
/// short form of its `controller-revision-hash` label; [`VERSION_IGNORED`] otherwise.
pub fn pod_version(pod: &Pod, target_kind: &str, versioned: &VersionedKinds) -> String {
    let owner_kind = pod
        .metadata
        .owner_references
        .iter()
        .flatten()
        .find(|r| r.controller == Some(true))
        .map(|r| r.kind.as_str());
    let enabled =
        versioned.contains(target_kind) || owner_kind.is_some_and(|k| versioned.contains(k));
    if !enabled {
        return VERSION_IGNORED.to_owned();
    }
    let labels = crate::pod::labels_of(pod);
    if let Some(v) = labels.get(POD_TEMPLATE_HASH_LABEL) {
        return v.clone();
    }
    if let Some(v) = labels.get(CONTROLLER_REVISION_HASH_LABEL) {
        return short_hash(v).to_owned();
    }
    VERSION_IGNORED.to_owned()
}

/// A subset's limit for a workload of `replicas`: `None` when unlimited, else the value
/// (percentages rounded up; see the module docs for the parsing rules).
pub fn subset_max_replicas(subset: &WorkloadSpreadSubset, replicas: i32) -> Option<i32> {
    subset.max_replicas.as_ref().map(|m| max_value(m, replicas))
}

fn max_value(value: &IntOrString, replicas: i32) -> i32 {
    IntOrPercent::parse_lenient(value).map(|v| v.scale(replicas, Rounding::Up)).unwrap_or(0).max(0)
}

/// The subset statuses a WorkloadSpread starts from when it has none for a version: each
/// subset missing its whole limit (`-1` for unlimited subsets).
pub fn initial_subset_statuses(
    ws: &WorkloadSpread,
    replicas: i32,
) -> Vec<WorkloadSpreadSubsetStatus> {
    subsets(ws)
        .iter()
        .map(|s| WorkloadSpreadSubsetStatus {
            name: s.name.clone(),
            missing_replicas: subset_max_replicas(s, replicas).unwrap_or(-1),
            ..Default::default()
        })
        .collect()
}

/// The WorkloadSpread's subsets (none when unset).
pub fn subsets(ws: &WorkloadSpread) -> &[WorkloadSpreadSubset] {
    ws.spec.subsets.as_deref().unwrap_or_default()
}

/// The subset `name` of the WorkloadSpread, if any.
pub fn subset<'a>(ws: &'a WorkloadSpread, name: &str) -> Option<&'a WorkloadSpreadSubset> {
    subsets(ws).iter().find(|s| s.name == name)
}

/// `now` truncated to whole seconds, as the API server stores times.
pub(crate) fn whole_seconds(now: jiff::Timestamp) -> jiff::Timestamp {
    jiff::Timestamp::from_second(now.as_second()).unwrap_or(now)
}

/// Annotation map helper for pods.
pub(crate) fn annotation<'a>(pod: &'a Pod, key: &str) -> Option<&'a str> {
    pod.metadata
        .annotations
        .as_ref()
        .and_then(|a: &BTreeMap<String, String>| a.get(key))
        .map(String::as_str)
}
