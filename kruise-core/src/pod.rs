//! Pod readiness, availability and the facts about a pod that workload planners read.
//!
//! Everything here looks at one [`Pod`] (or a small [`PodRankView`] of it) and answers a
//! question; nothing mutates the pod. Changes are returned as data
//! ([`PodConditionsUpdate`], JSON patch bodies) for the caller to apply.
//!
//! - Readiness and availability, as Kubernetes defines them: [`is_pod_ready`],
//!   [`is_pod_available`], [`is_running_and_ready`], [`is_running_and_available`],
//!   [`is_pod_active`], [`is_terminating`], [`is_scheduled`].
//! - CloneSet's stricter notion of availability: [`is_pod_update_ready`],
//!   [`is_available_for_cloneset`].
//! - Kruise labels and annotations on pods: [`revision_hash`], [`has_unavailable_label`],
//!   [`is_specified_delete`], [`deletion_cost`].
//! - The `KruisePodReady` readiness gate, which Kruise components hold `False` with named
//!   holds: [`not_ready_holds`], [`add_not_ready_hold`], [`remove_not_ready_hold`].
//! - Label selectors: [`selector_matches`].
//! - Ranking pods for deletion or update: [`PodRankView`], [`compare_active`] (and its
//!   precomputed form [`ActiveRank`]), [`compare_for_deletion`], [`same_node_ranks`],
//!   [`spread_constraint_ranks`].

use std::cmp::Ordering;
use std::collections::BTreeMap;

use jiff::{SignedDuration, Timestamp};
use k8s_openapi::api::core::v1::{Pod, PodCondition};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{LabelSelector, Time};
use kruise_api::well_known::{kubernetes, labels, lifecycle, readiness_gates};
use serde::{Deserialize, Serialize};

/// Pod phase `Pending`.
pub const PHASE_PENDING: &str = "Pending";
/// Pod phase `Running`.
pub const PHASE_RUNNING: &str = "Running";
/// Pod phase `Succeeded`.
pub const PHASE_SUCCEEDED: &str = "Succeeded";
/// Pod phase `Failed`.
pub const PHASE_FAILED: &str = "Failed";
/// Pod phase `Unknown`.
pub const PHASE_UNKNOWN: &str = "Unknown";

/// Pod condition type `Ready`.
pub const CONDITION_READY: &str = "Ready";
/// Pod condition type `ContainersReady`.
pub const CONDITION_CONTAINERS_READY: &str = "ContainersReady";
/// Condition status `True`.
pub const STATUS_TRUE: &str = "True";
/// Condition status `False`.
pub const STATUS_FALSE: &str = "False";
/// Reason the `Ready` condition carries when a readiness gate holds the pod not ready.
pub const REASON_READINESS_GATES_NOT_READY: &str = "ReadinessGatesNotReady";

/// Errors reading Kruise or Kubernetes values kept on a pod.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum PodError {
    /// The pod-deletion-cost annotation is not a canonical 32-bit integer.
    #[error(
        "annotation {}: {value:?} is not a 32-bit integer without '+' or leading zeros",
        kubernetes::annotations::POD_DELETION_COST
    )]
    InvalidDeletionCost {
        /// The annotation's value.
        value: String,
    },
    /// A label selector uses an operator that does not exist.
    #[error("label selector on key {key:?}: {operator:?} is not a valid operator")]
    InvalidSelectorOperator {
        /// The requirement's key.
        key: String,
        /// The unknown operator.
        operator: String,
    },
}

static NO_STRINGS: BTreeMap<String, String> = BTreeMap::new();

/// The pod's labels (an empty map when it has none).
pub fn labels_of(pod: &Pod) -> &BTreeMap<String, String> {
    pod.metadata.labels.as_ref().unwrap_or(&NO_STRINGS)
}

/// The pod's annotations (an empty map when it has none).
pub fn annotations_of(pod: &Pod) -> &BTreeMap<String, String> {
    pod.metadata.annotations.as_ref().unwrap_or(&NO_STRINGS)
}

/// The pod's name (empty when unset).
pub fn name_of(pod: &Pod) -> &str {
    pod.metadata.name.as_deref().unwrap_or_default()
}

/// The pod's phase (empty when unset).
pub fn phase_of(pod: &Pod) -> &str {
    pod.status.as_ref().and_then(|s| s.phase.as_deref()).unwrap_or_default()
}

/// The node the pod is bound to (empty when unscheduled).
pub fn node_name_of(pod: &Pod) -> &str {
    pod.spec.as_ref().and_then(|s| s.node_name.as_deref()).unwrap_or_default()
}

/// The pod's status conditions (empty when it has none).
pub fn conditions_of(pod: &Pod) -> &[PodCondition] {
    pod.status.as_ref().and_then(|s| s.conditions.as_deref()).unwrap_or_default()
}

/// The first condition of the given type.
pub fn condition<'a>(pod: &'a Pod, condition_type: &str) -> Option<&'a PodCondition> {
    conditions_of(pod).iter().find(|c| c.type_ == condition_type)
}

/// Whether the pod lists `condition_type` among its `spec.readinessGates`.
pub fn has_readiness_gate(pod: &Pod, condition_type: &str) -> bool {
    pod.spec
        .as_ref()
        .and_then(|s| s.readiness_gates.as_ref())
        .is_some_and(|gates| gates.iter().any(|g| g.condition_type == condition_type))
}

/// Whether the pod's `Ready` condition is `True`.
pub fn is_pod_ready(pod: &Pod) -> bool {
    condition(pod, CONDITION_READY).is_some_and(|c| c.status == STATUS_TRUE)
}

/// When the pod last became ready: the transition time of its `True` `Ready` condition.
/// `None` when it is not ready or the time is unset.
pub fn ready_since(pod: &Pod) -> Option<Timestamp> {
    if !is_pod_ready(pod) {
        return None;
    }
    conditions_of(pod)
        .iter()
        .find(|c| c.type_ == CONDITION_READY && c.status == STATUS_TRUE)
        .and_then(|c| c.last_transition_time.as_ref())
        .map(|t| t.0)
}

/// Whether the pod has been ready for more than `min_ready_seconds` at `now`
/// (Kubernetes' `IsPodAvailable`). With `min_ready_seconds == 0` any ready pod is available;
/// otherwise its `Ready` transition time must be set and strictly more than that many seconds
/// before `now`.
pub fn is_pod_available(pod: &Pod, min_ready_seconds: i32, now: Timestamp) -> bool {
    if !is_pod_ready(pod) {
        return false;
    }
    if min_ready_seconds == 0 {
        return true;
    }
    // Upstream looks at the first Ready condition, whatever its status (it is True here).
    let Some(since) = condition(pod, CONDITION_READY).and_then(|c| c.last_transition_time.as_ref())
    else {
        return false;
    };
    let wait = SignedDuration::from_secs(i64::from(min_ready_seconds));
    match since.0.checked_add(wait) {
        Ok(ready_enough_at) => ready_enough_at < now,
        // Beyond the representable range: far future when waiting, far past otherwise.
        Err(_) => min_ready_seconds < 0,
    }
}

/// Phase `Running` and `Ready` true (CloneSet's `IsRunningAndReady`; a terminating pod can
/// still qualify, combine with [`is_terminating`] if that matters).
pub fn is_running_and_ready(pod: &Pod) -> bool {
    phase_of(pod) == PHASE_RUNNING && is_pod_ready(pod)
}

/// Phase `Running` and [`is_pod_available`].
pub fn is_running_and_available(pod: &Pod, min_ready_seconds: i32, now: Timestamp) -> bool {
    phase_of(pod) == PHASE_RUNNING && is_pod_available(pod, min_ready_seconds, now)
}

/// Whether the pod is being deleted (`metadata.deletionTimestamp` is set).
pub fn is_terminating(pod: &Pod) -> bool {
    pod.metadata.deletion_timestamp.is_some()
}

/// Kubernetes' notion of an active pod: not `Succeeded`, not `Failed`, not being deleted.
pub fn is_pod_active(pod: &Pod) -> bool {
    let phase = phase_of(pod);
    phase != PHASE_SUCCEEDED && phase != PHASE_FAILED && !is_terminating(pod)
}

/// Byte-string equality without a call into the C library: label keys and values are short,
/// and the comparisons run for every pod on every plan.
#[inline]
pub(crate) fn short_eq(a: &[u8], b: &[u8]) -> bool {
    if a.len() != b.len() {
        return false;
    }
    let mut a8 = a.chunks_exact(8);
    let mut b8 = b.chunks_exact(8);
    for (x, y) in (&mut a8).zip(&mut b8) {
        if x.iter().zip(y).fold(0u8, |acc, (p, q)| acc | (p ^ q)) != 0 {
            return false;
        }
    }
    a8.remainder().iter().zip(b8.remainder()).fold(0u8, |acc, (p, q)| acc | (p ^ q)) == 0
}

/// Whether the pod is bound to a node.
pub fn is_scheduled(pod: &Pod) -> bool {
    !node_name_of(pod).is_empty()
}

/// CloneSet's `IsPodUpdateReady`: running and available, and, if the pod carries an
/// `InPlaceUpdateReady` condition, that condition is `True`.
pub fn is_pod_update_ready(pod: &Pod, min_ready_seconds: i32, now: Timestamp) -> bool {
    is_running_and_available(pod, min_ready_seconds, now)
        && condition(pod, readiness_gates::IN_PLACE_UPDATE_READY)
            .is_none_or(|c| c.status == STATUS_TRUE)
}

/// CloneSet's availability: the lifecycle state label is absent, empty or `Normal`, and the
/// pod [`is_pod_update_ready`]. Pass `min_ready_seconds = 0` for CloneSet's "ready".
pub fn is_available_for_cloneset(pod: &Pod, min_ready_seconds: i32, now: Timestamp) -> bool {
    let state = labels_of(pod).get(labels::LIFECYCLE_STATE).map(String::as_str).unwrap_or("");
    (state.is_empty() || state == lifecycle::NORMAL)
        && is_pod_update_ready(pod, min_ready_seconds, now)
}

/// The revision hash on the pod, from the `controller-revision-hash` label that Kubernetes and
/// CloneSet use.
pub fn revision_hash(pod: &Pod) -> Option<&str> {
    labels_of(pod).get(kubernetes::labels::CONTROLLER_REVISION_HASH).map(String::as_str)
}

/// Whether any label starts with `unavailable-pod.kruise.io/`, which makes workloads and
/// PodUnavailableBudgets treat the pod as unavailable whatever its readiness.
pub fn has_unavailable_label(labels: &BTreeMap<String, String>) -> bool {
    labels.keys().any(|k| k.starts_with(labels::UNAVAILABLE_POD_PREFIX))
}

/// Whether the pod carries `apps.kruise.io/specified-delete` (any value).
pub fn is_specified_delete(pod: &Pod) -> bool {
    labels_of(pod).contains_key(labels::SPECIFIED_DELETE)
}

/// Strategic-merge-patch body that marks the pod for deletion with `value`, or `None` when the
/// label is already present (whatever its value).
pub fn specified_delete_patch(pod: &Pod, value: &str) -> Option<serde_json::Value> {
    if is_specified_delete(pod) {
        return None;
    }
    Some(serde_json::json!({"metadata": {"labels": {labels::SPECIFIED_DELETE: value}}}))
}

/// The `controller.kubernetes.io/pod-deletion-cost` annotation: 0 when absent. Like
/// Kubernetes, values with a `+` sign or leading zeros, or outside `i32`, are errors.
pub fn deletion_cost(pod: &Pod) -> Result<i32, PodError> {
    let Some(value) = annotations_of(pod).get(kubernetes::annotations::POD_DELETION_COST) else {
        return Ok(0);
    };
    let bytes = value.as_bytes();
    let canonical_start = match bytes.first() {
        Some(b'-') => true,
        Some(b'0') => value == "0",
        Some(b'1'..=b'9') => true,
        _ => false,
    };
    match value.parse::<i32>() {
        Ok(cost) if canonical_start => Ok(cost),
        _ => Err(PodError::InvalidDeletionCost { value: value.clone() }),
    }
}

/// The highest restart count among the pod's (regular) container statuses.
pub fn max_container_restarts(pod: &Pod) -> i32 {
    pod.status
        .as_ref()
        .and_then(|s| s.container_statuses.as_ref())
        .into_iter()
        .flatten()
        .map(|c| c.restart_count)
        .fold(0, i32::max)
}

// ---------------------------------------------------------------------------------------------
// Label selectors
// ---------------------------------------------------------------------------------------------

/// Whether `labels` satisfy `selector`, as Kruise evaluates selectors in its sorters: an empty
/// selector matches everything; `In`/`NotIn`/`Exists`/`DoesNotExist` as in Kubernetes (a
/// missing key satisfies `NotIn`); keys and values are not validated. An unknown operator is
/// an error.
pub fn selector_matches(
    selector: &LabelSelector,
    labels: &BTreeMap<String, String>,
) -> Result<bool, PodError> {
    let match_labels = selector.match_labels.as_ref().unwrap_or(&NO_STRINGS);
    let expressions = selector.match_expressions.as_deref().unwrap_or_default();
    // Validate every operator first so a bad selector is an error even if an earlier
    // requirement already fails.
    for e in expressions {
        if !matches!(e.operator.as_str(), "In" | "NotIn" | "Exists" | "DoesNotExist") {
            return Err(PodError::InvalidSelectorOperator {
                key: e.key.clone(),
                operator: e.operator.clone(),
            });
        }
    }
    let labels_ok = match_labels.iter().all(|(k, v)| labels.get(k) == Some(v));
    let expressions_ok = expressions.iter().all(|e| {
        let values = e.values.as_deref().unwrap_or_default();
        let value = labels.get(&e.key);
        match e.operator.as_str() {
            "In" => value.is_some_and(|v| values.contains(v)),
            "NotIn" => value.is_none_or(|v| !values.contains(v)),
            "Exists" => value.is_some(),
            _ => value.is_none(),
        }
    });
    Ok(labels_ok && expressions_ok)
}

// ---------------------------------------------------------------------------------------------
// KruisePodReady
// ---------------------------------------------------------------------------------------------

/// One reason a Kruise component keeps the `KruisePodReady` condition `False`; the condition
/// message is the JSON list of these, sorted.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct NotReadyHold {
    /// Who holds the pod (for example `Lifecycle`).
    #[serde(rename = "userAgent")]
    pub user_agent: String,
    /// What for (for example `preDeleteHook`).
    pub key: String,
}

impl NotReadyHold {
    /// A hold from `user_agent` for `key`.
    pub fn new(user_agent: impl Into<String>, key: impl Into<String>) -> Self {
        NotReadyHold { user_agent: user_agent.into(), key: key.into() }
    }
}

/// Conditions to write into a pod's `status.conditions`, each replacing the existing
/// condition of the same type (or added when there is none).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct PodConditionsUpdate {
    /// The new conditions, at most one per type.
    pub conditions: Vec<PodCondition>,
}

impl PodConditionsUpdate {
    /// Applies the update to `pod` in memory, as a full status update would.
    pub fn apply_to(&self, pod: &mut Pod) {
        let status = pod.status.get_or_insert_with(Default::default);
        let conditions = status.conditions.get_or_insert_with(Vec::new);
        for new in &self.conditions {
            match conditions.iter_mut().find(|c| c.type_ == new.type_) {
                Some(existing) => *existing = new.clone(),
                None => conditions.push(new.clone()),
            }
        }
    }

    /// A strategic-merge-patch body for the pod's `status` subresource. Every field of each
    /// condition is written, unset ones as `null`, so the patch replaces whole conditions
    /// exactly like a status update would.
    pub fn to_status_patch(&self) -> serde_json::Value {
        let time = |t: &Option<Time>| match t {
            Some(t) => serde_json::Value::String(format_rfc3339(t.0)),
            None => serde_json::Value::Null,
        };
        let conditions: Vec<serde_json::Value> = self
            .conditions
            .iter()
            .map(|c| {
                serde_json::json!({
                    "type": c.type_,
                    "status": c.status,
                    "reason": c.reason,
                    "message": c.message,
                    "lastTransitionTime": time(&c.last_transition_time),
                    "lastProbeTime": time(&c.last_probe_time),
                    "observedGeneration": c.observed_generation,
                })
            })
            .collect();
        serde_json::json!({"status": {"conditions": conditions}})
    }
}

/// Formats a time as Kubernetes writes `metav1.Time` (RFC 3339, whole seconds, UTC).
pub fn format_rfc3339(t: Timestamp) -> String {
    t.strftime("%Y-%m-%dT%H:%M:%SZ").to_string()
}

/// The holds currently recorded in the pod's `KruisePodReady` message. A message that is not
/// a JSON list of holds counts as no holds, as upstream ignores it.
pub fn not_ready_holds(pod: &Pod) -> Vec<NotReadyHold> {
    condition(pod, readiness_gates::KRUISE_POD_READY)
        .map(|c| parse_holds(c.message.as_deref().unwrap_or("")))
        .unwrap_or_default()
}

/// Adds `hold` to the pod's `KruisePodReady` condition, making it `False`, if the pod has the
/// `KruisePodReady` readiness gate and the hold is not already recorded. Also turns `Ready`
/// to `False` (reason `ReadinessGatesNotReady`) when it would otherwise stay `True`, the way
/// upstream recomputes it. `None` when nothing needs to change.
///
/// Difference from upstream: when the condition does not exist yet upstream creates it with
/// an empty status; this creates it `False`, which every reader treats the same way.
pub fn add_not_ready_hold(
    pod: &Pod,
    hold: &NotReadyHold,
    now: Timestamp,
) -> Option<PodConditionsUpdate> {
    if !has_readiness_gate(pod, readiness_gates::KRUISE_POD_READY) {
        return None;
    }
    let new_condition = match condition(pod, readiness_gates::KRUISE_POD_READY) {
        None => PodCondition {
            type_: readiness_gates::KRUISE_POD_READY.to_owned(),
            status: STATUS_FALSE.to_owned(),
            message: Some(dump_holds(vec![hold.clone()])),
            last_transition_time: Some(Time(now)),
            ..Default::default()
        },
        Some(existing) => {
            let mut holds = parse_holds(existing.message.as_deref().unwrap_or(""));
            if holds.contains(hold) {
                return None;
            }
            holds.push(hold.clone());
            PodCondition {
                status: STATUS_FALSE.to_owned(),
                message: Some(dump_holds(holds)),
                last_transition_time: Some(Time(now)),
                ..existing.clone()
            }
        }
    };

    let mut after = pod.clone();
    let mut update = PodConditionsUpdate { conditions: vec![new_condition] };
    update.apply_to(&mut after);
    if let Some(ready) = recomputed_ready_condition(&after) {
        update.conditions.push(ready);
    }
    Some(update)
}

/// Removes `hold` from the pod's `KruisePodReady` condition, if the pod has the readiness
/// gate and the hold is recorded; the condition becomes `True` once no hold is left (the
/// `Ready` condition is left to the kubelet). `None` when nothing needs to change.
pub fn remove_not_ready_hold(
    pod: &Pod,
    hold: &NotReadyHold,
    now: Timestamp,
) -> Option<PodConditionsUpdate> {
    if !has_readiness_gate(pod, readiness_gates::KRUISE_POD_READY) {
        return None;
    }
    let existing = condition(pod, readiness_gates::KRUISE_POD_READY)?;
    let holds = parse_holds(existing.message.as_deref().unwrap_or(""));
    if !holds.contains(hold) {
        return None;
    }
    let remaining: Vec<NotReadyHold> = holds.into_iter().filter(|h| h != hold).collect();
    let status =
        if remaining.is_empty() { STATUS_TRUE.to_owned() } else { existing.status.clone() };
    Some(PodConditionsUpdate {
        conditions: vec![PodCondition {
            status,
            message: Some(dump_holds(remaining)),
            last_transition_time: Some(Time(now)),
            ..existing.clone()
        }],
    })
}

fn parse_holds(message: &str) -> Vec<NotReadyHold> {
    if message.is_empty() {
        return Vec::new();
    }
    serde_json::from_str(message).unwrap_or_default()
}

fn dump_holds(mut holds: Vec<NotReadyHold>) -> String {
    holds.sort();
    // Serializing plain strings cannot fail; fall back to an empty list all the same.
    serde_json::to_string(&holds).unwrap_or_else(|_| "[]".to_owned())
}

/// The `Ready` condition upstream's `SetPodReadyCondition` would write after a readiness gate
/// changed, when it differs in status from the current one.
fn recomputed_ready_condition(pod: &Pod) -> Option<PodCondition> {
    let current = condition(pod, CONDITION_READY)?;
    if condition(pod, CONDITION_CONTAINERS_READY).is_none_or(|c| c.status != STATUS_TRUE) {
        return None;
    }
    let gates = pod.spec.as_ref().and_then(|s| s.readiness_gates.as_deref()).unwrap_or_default();
    let unready: Vec<String> = gates
        .iter()
        .filter_map(|g| match condition(pod, &g.condition_type) {
            None => Some(format!(
                "corresponding condition of pod readiness gate {:?} does not exist.",
                g.condition_type
            )),
            Some(c) if c.status != STATUS_TRUE => Some(format!(
                "the status of pod readiness gate {:?} is not \"True\", but {}",
                g.condition_type, c.status
            )),
            Some(_) => None,
        })
        .collect();
    let new = if unready.is_empty() {
        // Upstream stamps the wall clock here; this path only replaces a non-True Ready, which
        // adding a hold never causes, so the time is left unset rather than invented.
        PodCondition {
            type_: CONDITION_READY.to_owned(),
            status: STATUS_TRUE.to_owned(),
            ..Default::default()
        }
    } else {
        PodCondition {
            type_: CONDITION_READY.to_owned(),
            status: STATUS_FALSE.to_owned(),
            reason: Some(REASON_READINESS_GATES_NOT_READY.to_owned()),
            message: Some(unready.join(", ")),
            ..Default::default()
        }
    };
    (new.status != current.status).then_some(new)
}

// ---------------------------------------------------------------------------------------------
// Ranking
// ---------------------------------------------------------------------------------------------

/// What the pod comparators look at, extracted once per pod so sorting is cheap and the
/// caller can adjust `available` and `rank`.
#[derive(Clone, Debug, PartialEq)]
pub struct PodRankView {
    /// Pod name; the final tie-break, which makes every ordering deterministic.
    pub name: String,
    /// Node the pod is bound to; empty when unscheduled.
    pub node_name: String,
    /// Pod phase; empty when unset.
    pub phase: String,
    /// [`is_pod_ready`].
    pub ready: bool,
    /// [`ready_since`].
    pub ready_since: Option<Timestamp>,
    /// Whether the workload counts the pod as available; defaults to `ready`. CloneSet sets
    /// it from [`is_available_for_cloneset`].
    pub available: bool,
    /// [`max_container_restarts`].
    pub max_restarts: i32,
    /// Creation time; `None` when unset.
    pub created: Option<Timestamp>,
    /// [`deletion_cost`], with invalid values read as 0.
    pub deletion_cost: i32,
    /// Extra rank from a ranker ([`same_node_ranks`], [`spread_constraint_ranks`]); higher
    /// ranks are deleted first. 0 by default.
    pub rank: f64,
}

impl PodRankView {
    /// The view of `pod`, with `available = ready` and `rank = 0`.
    pub fn from_pod(pod: &Pod) -> Self {
        let ready = is_pod_ready(pod);
        PodRankView {
            name: name_of(pod).to_owned(),
            node_name: node_name_of(pod).to_owned(),
            phase: phase_of(pod).to_owned(),
            ready,
            ready_since: ready_since(pod),
            available: ready,
            max_restarts: max_container_restarts(pod),
            created: pod.metadata.creation_timestamp.as_ref().map(|t| t.0),
            deletion_cost: deletion_cost(pod).unwrap_or(0),
            rank: 0.0,
        }
    }

    /// The view's [`ActiveRank`].
    pub fn active_rank(&self) -> ActiveRank {
        ActiveRank::new(
            !self.node_name.is_empty(),
            &self.phase,
            self.ready,
            self.ready_since,
            self.max_restarts,
            self.created,
        )
    }

    /// The same view with `available` replaced.
    pub fn with_available(mut self, available: bool) -> Self {
        self.available = available;
        self
    }

    /// The same view with `rank` replaced.
    pub fn with_rank(mut self, rank: f64) -> Self {
        self.rank = rank;
        self
    }
}

/// Which criteria a comparison uses beyond Kubernetes' `ActivePods` ones.
#[derive(Clone, Copy)]
struct Criteria {
    available: bool,
    cost_and_rank: bool,
}

fn phase_ordinal(phase: &str) -> u8 {
    match phase {
        PHASE_UNKNOWN => 1,
        PHASE_RUNNING => 2,
        // Pending, and any other phase (upstream's map lookup yields 0 for them).
        _ => 0,
    }
}

/// "Zero time first, then newest first": `Less` in upstream's `afterOrZero` sense.
fn newest_or_unset_first(a: Option<Timestamp>, b: Option<Timestamp>) -> Ordering {
    match (a, b) {
        (None, None) => Ordering::Equal,
        (None, Some(_)) => Ordering::Less,
        (Some(_), None) => Ordering::Greater,
        (Some(a), Some(b)) => b.cmp(&a),
    }
}

/// Compares with `rank_a`/`rank_b` standing in for the views' own ranks (rankers compare
/// with provisional ranks without copying the views).
fn compare_with(
    a: &PodRankView,
    b: &PodRankView,
    criteria: Criteria,
    (rank_a, rank_b): (f64, f64),
) -> Ordering {
    // 1. Unscheduled before scheduled.
    let assigned = |v: &PodRankView| !v.node_name.is_empty();
    assigned(a)
        .cmp(&assigned(b))
        // 2. Pending < Unknown < Running.
        .then_with(|| phase_ordinal(&a.phase).cmp(&phase_ordinal(&b.phase)))
        // 3. Unavailable before available, then not ready before ready.
        .then_with(
            || {
                if criteria.available { a.available.cmp(&b.available) } else { Ordering::Equal }
            },
        )
        .then_with(|| a.ready.cmp(&b.ready))
        // 4. Lower deletion cost first; 5. higher rank first.
        .then_with(|| {
            if criteria.cost_and_rank {
                a.deletion_cost.cmp(&b.deletion_cost).then_with(|| rank_b.total_cmp(&rank_a))
            } else {
                Ordering::Equal
            }
        })
        // 6. Among ready pods, the one ready for less time first (unset first).
        .then_with(|| {
            if a.ready && b.ready {
                newest_or_unset_first(a.ready_since, b.ready_since)
            } else {
                Ordering::Equal
            }
        })
        // 7. More restarts first.
        .then_with(|| b.max_restarts.cmp(&a.max_restarts))
        // 8. Unset creation time first, then newest first.
        .then_with(|| newest_or_unset_first(a.created, b.created))
        // Deterministic tie-break.
        .then_with(|| a.name.cmp(&b.name))
}

/// Kubernetes' `ActivePods` order, which CloneSet uses as the default update order: pods that
/// are "worth less" come first (unscheduled, pending, not ready, ready for less time, more
/// restarts, newer), ties broken by name. `available`, `deletion_cost` and `rank` are ignored.
pub fn compare_active(a: &PodRankView, b: &PodRankView) -> Ordering {
    compare_with(a, b, Criteria { available: false, cost_and_rank: false }, (a.rank, b.rank))
}

/// [`compare_active`]'s order without the name tie-break, as one small value that sorts the
/// same way: `compare_active(a, b)` equals
/// `a.active_rank().cmp(&b.active_rank()).then(a.name.cmp(&b.name))`. Planners compute it once
/// per pod so that sorting compares integers only.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct ActiveRank {
    /// Scheduled, phase ordinal and readiness, most significant first.
    class: u8,
    /// For ready pods, unset first then newest first; 0 otherwise.
    ready_since: i128,
    /// Negated restart count: more restarts first.
    restarts: i64,
    /// Creation time, unset first then newest first.
    created: i128,
}

impl ActiveRank {
    /// The rank of a pod with these facts (see [`PodRankView`] for their meaning).
    pub fn new(
        scheduled: bool,
        phase: &str,
        ready: bool,
        ready_since: Option<Timestamp>,
        max_restarts: i32,
        created: Option<Timestamp>,
    ) -> Self {
        // Unset first, then the newest (largest) time first.
        let newest_first = |t: Option<Timestamp>| t.map_or(i128::MIN, |t| -t.as_nanosecond());
        ActiveRank {
            class: u8::from(scheduled) * 6 + phase_ordinal(phase) * 2 + u8::from(ready),
            ready_since: if ready { newest_first(ready_since) } else { 0 },
            restarts: -i64::from(max_restarts),
            created: newest_first(created),
        }
    }

    /// The widths in bits of the fields of [`ActiveRank::packed`], most significant first:
    /// class, ready time, restarts, creation time.
    pub(crate) const PACKED_FIELDS: [u32; 4] = [4, 41, 33, 41];
    const CREATED_SHIFT: u32 = 0;
    const RESTARTS_SHIFT: u32 = Self::CREATED_SHIFT + Self::PACKED_FIELDS[3];
    const READY_SHIFT: u32 = Self::RESTARTS_SHIFT + Self::PACKED_FIELDS[2];
    const CLASS_SHIFT: u32 = Self::READY_SHIFT + Self::PACKED_FIELDS[1];
    const PACKED_BITS: u32 = Self::CLASS_SHIFT + Self::PACKED_FIELDS[0];

    /// The rank as one integer that sorts the same way, when every time in it is a whole
    /// second (as Kubernetes writes them); `None` otherwise. Comparing one integer is several
    /// times cheaper than comparing the fields in turn, which matters when sorting many pods.
    pub fn packed(&self) -> Option<u128> {
        // Layout: `PACKED_FIELDS`, most significant first. Times: 0 for "unset", else 1 + (2^40 - 1 - (seconds + 2^39)), so that
        // newer times get smaller keys; jiff's range (about ±3.8e11 seconds) fits in 40 bits.
        const NANOS: i128 = 1_000_000_000;
        const HALF: i128 = 1 << 39;
        const TOP: i128 = (1 << 40) - 1;
        // `key` holds -nanoseconds (newest first) or i128::MIN (unset).
        let time = |key: i128| -> Option<u128> {
            if key == i128::MIN {
                return Some(0);
            }
            if key % NANOS != 0 {
                return None;
            }
            let seconds = -(key / NANOS);
            let offset = seconds.checked_add(HALF).filter(|o| (0..=TOP).contains(o))?;
            u128::try_from(1 + (TOP - offset)).ok()
        };
        if u32::from(self.class) >= 1 << Self::PACKED_FIELDS[0] {
            return None;
        }
        let ready = time(self.ready_since)?;
        // -max_restarts for an i32 count lies in [-(2^31 - 1), 2^31].
        let restarts = u128::try_from(i128::from(self.restarts) + (1 << 31)).ok()?;
        if restarts >= 1 << Self::PACKED_FIELDS[2] {
            return None;
        }
        let created = time(self.created)?;
        Some(
            (u128::from(self.class) << Self::CLASS_SHIFT)
                | (ready << Self::READY_SHIFT)
                | (restarts << Self::RESTARTS_SHIFT)
                | (created << Self::CREATED_SHIFT),
        )
    }

    /// The rank [`ActiveRank::packed`] made `packed` into; `None` for a value it cannot have
    /// made.
    pub fn unpack(packed: u128) -> Option<Self> {
        const NANOS: i128 = 1_000_000_000;
        const HALF: i128 = 1 << 39;
        const TOP: i128 = (1 << 40) - 1;
        let field = |shift: u32, bits: u32| -> i128 {
            // At most 41 bits: the value fits an i128.
            ((packed >> shift) & ((1u128 << bits) - 1)) as i128
        };
        let time = |key: i128| -> Option<i128> {
            if key == 0 {
                return Some(i128::MIN);
            }
            let seconds = TOP - (key - 1) - HALF;
            seconds.checked_mul(NANOS).map(|nanos| -nanos)
        };
        if packed >> Self::PACKED_BITS != 0 {
            return None;
        }
        let rank = ActiveRank {
            class: u8::try_from(field(Self::CLASS_SHIFT, Self::PACKED_FIELDS[0])).ok()?,
            ready_since: time(field(Self::READY_SHIFT, Self::PACKED_FIELDS[1]))?,
            restarts: i64::try_from(
                field(Self::RESTARTS_SHIFT, Self::PACKED_FIELDS[2]) - (1 << 31),
            )
            .ok()?,
            created: time(field(Self::CREATED_SHIFT, Self::PACKED_FIELDS[3]))?,
        };
        (rank.packed() == Some(packed)).then_some(rank)
    }

    /// The rank of `pod`, reading the same facts as [`PodRankView::from_pod`].
    pub fn of_pod(pod: &Pod) -> Self {
        ActiveRank::new(
            is_scheduled(pod),
            phase_of(pod),
            is_pod_ready(pod),
            ready_since(pod),
            max_container_restarts(pod),
            pod.metadata.creation_timestamp.as_ref().map(|t| t.0),
        )
    }
}

/// CloneSet's `ActivePodsWithRanks` order for choosing pods to delete: the first pods are
/// deleted first. Like [`compare_active`], plus unavailable before available (after the
/// phase), lower `deletion_cost` first and higher `rank` first (after readiness).
pub fn compare_for_deletion(a: &PodRankView, b: &PodRankView) -> Ordering {
    compare_with(a, b, Criteria { available: true, cost_and_rank: true }, (a.rank, b.rank))
}

/// Indices of `views` in [`compare_for_deletion`] order (first = delete first).
pub fn deletion_order(views: &[PodRankView]) -> Vec<usize> {
    let mut order: Vec<usize> = (0..views.len()).collect();
    order.sort_by(|&i, &j| compare_for_deletion(&views[i], &views[j]));
    order
}

/// CloneSet's same-node ranker: on every node running more than one of these pods, the pods
/// are ordered with [`compare_for_deletion`] ignoring availability and ranks; the last one (the
/// one to keep) gets rank 0 and the others `n-1, n-2, ..., 1` from the first. Pods alone on
/// their node, or unscheduled, get 0. Returns one rank per view, in input order.
pub fn same_node_ranks(views: &[PodRankView]) -> Vec<f64> {
    let mut ranks = vec![0.0; views.len()];
    let mut by_node: BTreeMap<&str, Vec<usize>> = BTreeMap::new();
    for (i, v) in views.iter().enumerate() {
        if !v.node_name.is_empty() {
            by_node.entry(v.node_name.as_str()).or_default().push(i);
        }
    }
    let plain = Criteria { available: false, cost_and_rank: true };
    for mut members in by_node.into_values() {
        if members.len() <= 1 {
            continue;
        }
        members.sort_by(|&i, &j| compare_with(&views[i], &views[j], plain, (0.0, 0.0)));
        let ranked = members.len() - 1;
        for (pos, &i) in members[..ranked].iter().enumerate() {
            ranks[i] = (ranked - pos) as f64;
        }
    }
    ranks
}

/// CloneSet's spread-constraint ranker, used when the pod template has topology spread
/// constraints (one entry per constraint's `topologyKey`). For each key, pods are grouped by
/// the value of that label on their node (pods whose node is unknown or lacks the label are
/// left out); within a group they are ordered with [`compare_for_deletion`] (ignoring
/// availability, and using [`same_node_ranks`] unless the key is `kubernetes.io/hostname`),
/// and the pod at position `i` of `n` gains `(n - i) * ln(groups + 2)`.
///
/// `node_labels` maps node names to their labels. Returns one rank per view, in input order.
pub fn spread_constraint_ranks(
    views: &[PodRankView],
    topology_keys: &[String],
    node_labels: &BTreeMap<String, BTreeMap<String, String>>,
) -> Vec<f64> {
    let mut ranks = vec![0.0; views.len()];
    let node_ranks = same_node_ranks(views);
    let criteria = Criteria { available: false, cost_and_rank: true };
    for key in topology_keys {
        let use_node_ranks = key != kubernetes::labels::HOSTNAME;
        let mut groups: BTreeMap<&str, Vec<usize>> = BTreeMap::new();
        for (i, v) in views.iter().enumerate() {
            if let Some(value) = node_labels.get(&v.node_name).and_then(|l| l.get(key)) {
                groups.entry(value.as_str()).or_default().push(i);
            }
        }
        let weight = ((groups.len() + 2) as f64).ln();
        for mut members in groups.into_values() {
            let rank_of = |i: usize| if use_node_ranks { node_ranks[i] } else { 0.0 };
            members.sort_by(|&i, &j| {
                compare_with(&views[i], &views[j], criteria, (rank_of(i), rank_of(j)))
            });
            let n = members.len();
            for (pos, &i) in members.iter().enumerate() {
                ranks[i] += (n - pos) as f64 * weight;
            }
        }
    }
    ranks
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::api::core::v1::{ContainerStatus, PodReadinessGate, PodSpec, PodStatus};
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::{LabelSelectorRequirement, ObjectMeta};

    fn ts(s: i64) -> Timestamp {
        Timestamp::from_second(s).expect("in range")
    }

    fn cond(type_: &str, status: &str, since: Option<i64>) -> PodCondition {
        PodCondition {
            type_: type_.into(),
            status: status.into(),
            last_transition_time: since.map(|s| Time(ts(s))),
            ..Default::default()
        }
    }

    fn pod_with(phase: &str, conditions: Vec<PodCondition>) -> Pod {
        Pod {
            metadata: ObjectMeta { name: Some("p".into()), ..Default::default() },
            spec: Some(PodSpec::default()),
            status: Some(PodStatus {
                phase: Some(phase.into()),
                conditions: Some(conditions),
                ..Default::default()
            }),
        }
    }

    #[test]
    fn readiness_and_availability() {
        let ready = pod_with(PHASE_RUNNING, vec![cond(CONDITION_READY, "True", Some(100))]);
        assert!(is_pod_ready(&ready));
        assert!(is_running_and_ready(&ready));
        assert_eq!(ready_since(&ready), Some(ts(100)));
        assert!(is_pod_available(&ready, 0, ts(0)));
        assert!(!is_pod_available(&ready, 10, ts(110)), "exactly minReadySeconds is not enough");
        assert!(is_pod_available(&ready, 10, ts(111)));
        assert!(is_running_and_available(&ready, 10, ts(111)));

        let no_time = pod_with(PHASE_RUNNING, vec![cond(CONDITION_READY, "True", None)]);
        assert!(is_pod_available(&no_time, 0, ts(0)));
        assert!(!is_pod_available(&no_time, 1, ts(1_000_000)));

        let pending = pod_with(PHASE_PENDING, vec![cond(CONDITION_READY, "True", Some(0))]);
        assert!(is_pod_ready(&pending));
        assert!(!is_running_and_ready(&pending));
        assert!(!is_running_and_available(&pending, 0, ts(10)));

        let not_ready = pod_with(PHASE_RUNNING, vec![cond(CONDITION_READY, "False", Some(0))]);
        assert!(!is_pod_ready(&not_ready));
        assert!(!is_pod_available(&not_ready, 0, ts(10)));
        assert!(!is_pod_ready(&Pod::default()));
    }

    #[test]
    fn activity_and_termination() {
        let mut pod = pod_with(PHASE_RUNNING, vec![]);
        assert!(is_pod_active(&pod));
        assert!(!is_terminating(&pod));
        pod.metadata.deletion_timestamp = Some(Time(ts(5)));
        assert!(is_terminating(&pod));
        assert!(!is_pod_active(&pod));
        for phase in [PHASE_SUCCEEDED, PHASE_FAILED] {
            assert!(!is_pod_active(&pod_with(phase, vec![])));
        }
        assert!(is_pod_active(&pod_with(PHASE_UNKNOWN, vec![])));
        assert!(!is_scheduled(&pod));
        pod.spec = Some(PodSpec { node_name: Some("n1".into()), ..Default::default() });
        assert!(is_scheduled(&pod));
    }

    #[test]
    fn cloneset_availability_respects_lifecycle_and_inplace_condition() {
        let mut pod = pod_with(PHASE_RUNNING, vec![cond(CONDITION_READY, "True", Some(0))]);
        assert!(is_available_for_cloneset(&pod, 0, ts(1)));
        pod.metadata.labels =
            Some([(labels::LIFECYCLE_STATE.to_owned(), "Normal".to_owned())].into());
        assert!(is_available_for_cloneset(&pod, 0, ts(1)));
        pod.metadata.labels =
            Some([(labels::LIFECYCLE_STATE.to_owned(), "PreparingDelete".to_owned())].into());
        assert!(!is_available_for_cloneset(&pod, 0, ts(1)));
        assert!(is_pod_update_ready(&pod, 0, ts(1)));
        pod.metadata.labels = None;
        pod.status.as_mut().and_then(|s| s.conditions.as_mut()).expect("conditions").push(cond(
            readiness_gates::IN_PLACE_UPDATE_READY,
            "False",
            Some(0),
        ));
        assert!(!is_pod_update_ready(&pod, 0, ts(1)));
        assert!(!is_available_for_cloneset(&pod, 0, ts(1)));
    }

    #[test]
    fn kruise_labels() {
        let mut pod = Pod::default();
        assert_eq!(revision_hash(&pod), None);
        assert!(!is_specified_delete(&pod));
        assert!(specified_delete_patch(&pod, "true").is_some());
        pod.metadata.labels = Some(
            [
                ("controller-revision-hash".to_owned(), "cs-abc".to_owned()),
                (labels::SPECIFIED_DELETE.to_owned(), String::new()),
            ]
            .into(),
        );
        assert_eq!(revision_hash(&pod), Some("cs-abc"));
        assert!(is_specified_delete(&pod));
        assert_eq!(specified_delete_patch(&pod, "true"), None);
        let patch = specified_delete_patch(&Pod::default(), "true").expect("patch");
        assert_eq!(
            patch.to_string(),
            r#"{"metadata":{"labels":{"apps.kruise.io/specified-delete":"true"}}}"#
        );

        assert!(!has_unavailable_label(&BTreeMap::new()));
        assert!(has_unavailable_label(&[("unavailable-pod.kruise.io/x".into(), "".into())].into()));
        assert!(!has_unavailable_label(&[("unavailable-pod.kruise.io".into(), "".into())].into()));
    }

    #[test]
    fn deletion_cost_table() {
        let with = |v: &str| Pod {
            metadata: ObjectMeta {
                annotations: Some([(POD_DELETION_COST_KEY.to_owned(), v.to_owned())].into()),
                ..Default::default()
            },
            ..Default::default()
        };
        const POD_DELETION_COST_KEY: &str = kubernetes::annotations::POD_DELETION_COST;
        assert_eq!(deletion_cost(&Pod::default()), Ok(0));
        for (v, expected) in [("0", 0), ("10", 10), ("-5", -5), ("-0", 0), ("-007", -7)] {
            assert_eq!(deletion_cost(&with(v)), Ok(expected), "{v}");
        }
        assert_eq!(deletion_cost(&with("2147483647")), Ok(i32::MAX));
        for v in ["", "+10", "008", "00", "abc", "2147483648", "1.5", " 1"] {
            let err = deletion_cost(&with(v)).expect_err(v);
            assert!(err.to_string().contains(&format!("{v:?}")), "{err}");
        }
    }

    #[test]
    fn selectors() {
        let labels: BTreeMap<String, String> =
            [("app".into(), "web".into()), ("tier".into(), "a".into())].into();
        let req = |key: &str, op: &str, values: &[&str]| LabelSelectorRequirement {
            key: key.into(),
            operator: op.into(),
            values: Some(values.iter().map(|v| v.to_string()).collect()),
        };
        let sel = |ml: &[(&str, &str)], exprs: Vec<LabelSelectorRequirement>| LabelSelector {
            match_labels: Some(ml.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect()),
            match_expressions: Some(exprs),
        };
        let cases = [
            (LabelSelector::default(), true),
            (sel(&[("app", "web")], vec![]), true),
            (sel(&[("app", "db")], vec![]), false),
            (sel(&[], vec![req("tier", "In", &["a", "b"])]), true),
            (sel(&[], vec![req("tier", "In", &[])]), false),
            (sel(&[], vec![req("tier", "NotIn", &["a"])]), false),
            (sel(&[], vec![req("zone", "NotIn", &["a"])]), true),
            (sel(&[], vec![req("zone", "Exists", &[])]), false),
            (sel(&[], vec![req("zone", "DoesNotExist", &[])]), true),
            (sel(&[("app", "web")], vec![req("app", "Exists", &[])]), true),
        ];
        for (selector, expected) in cases {
            assert_eq!(selector_matches(&selector, &labels), Ok(expected), "{selector:?}");
        }
        let bad = sel(&[("app", "db")], vec![req("app", "Equals", &["web"])]);
        let err = selector_matches(&bad, &labels).expect_err("bad operator");
        assert!(err.to_string().contains("\"Equals\""), "{err}");
    }

    fn gated_pod(conditions: Vec<PodCondition>) -> Pod {
        let mut pod = pod_with(PHASE_RUNNING, conditions);
        pod.spec = Some(PodSpec {
            readiness_gates: Some(vec![PodReadinessGate {
                condition_type: readiness_gates::KRUISE_POD_READY.into(),
            }]),
            ..Default::default()
        });
        pod
    }

    #[test]
    fn add_hold_to_fresh_pod_creates_condition_and_drops_ready() {
        let pod = gated_pod(vec![
            cond(CONDITION_READY, "True", Some(1)),
            cond(CONDITION_CONTAINERS_READY, "True", Some(1)),
        ]);
        let hold = NotReadyHold::new("Lifecycle", "preDeleteHook");
        let update = add_not_ready_hold(&pod, &hold, ts(50)).expect("change");
        assert_eq!(update.conditions.len(), 2);
        let kpr = &update.conditions[0];
        assert_eq!(kpr.type_, "KruisePodReady");
        assert_eq!(kpr.status, "False");
        assert_eq!(
            kpr.message.as_deref(),
            Some(r#"[{"userAgent":"Lifecycle","key":"preDeleteHook"}]"#)
        );
        assert_eq!(kpr.last_transition_time, Some(Time(ts(50))));
        let ready = &update.conditions[1];
        assert_eq!((ready.type_.as_str(), ready.status.as_str()), ("Ready", "False"));
        assert_eq!(ready.reason.as_deref(), Some("ReadinessGatesNotReady"));
        assert_eq!(
            ready.message.as_deref(),
            Some(r#"the status of pod readiness gate "KruisePodReady" is not "True", but False"#)
        );

        // Applying it and asking again changes nothing.
        let mut after = pod.clone();
        update.apply_to(&mut after);
        assert_eq!(not_ready_holds(&after), vec![hold.clone()]);
        assert_eq!(add_not_ready_hold(&after, &hold, ts(60)), None);
        assert!(!is_pod_ready(&after));

        let patch = update.to_status_patch();
        assert_eq!(patch["status"]["conditions"][0]["lastTransitionTime"], "1970-01-01T00:00:50Z");
        assert_eq!(patch["status"]["conditions"][1]["lastTransitionTime"], serde_json::Value::Null);
    }

    #[test]
    fn holds_are_sorted_and_removed_one_by_one() {
        let pod = gated_pod(vec![cond("KruisePodReady", "True", Some(1))]);
        let a = NotReadyHold::new("Lifecycle", "preUpdateHook");
        let b = NotReadyHold::new("ContainerRecreateRequest", "ns/crr");
        let mut p = pod.clone();
        add_not_ready_hold(&p, &a, ts(2)).expect("add a").apply_to(&mut p);
        let update = add_not_ready_hold(&p, &b, ts(3)).expect("add b");
        assert_eq!(update.conditions.len(), 1, "no Ready condition to recompute");
        update.apply_to(&mut p);
        let message = condition(&p, "KruisePodReady").and_then(|c| c.message.clone());
        assert_eq!(
            message.as_deref(),
            Some(
                r#"[{"userAgent":"ContainerRecreateRequest","key":"ns/crr"},{"userAgent":"Lifecycle","key":"preUpdateHook"}]"#
            )
        );

        remove_not_ready_hold(&p, &a, ts(4)).expect("remove a").apply_to(&mut p);
        let c = condition(&p, "KruisePodReady").expect("condition");
        assert_eq!(c.status, "False");
        assert_eq!(remove_not_ready_hold(&p, &a, ts(5)), None, "already gone");
        remove_not_ready_hold(&p, &b, ts(6)).expect("remove b").apply_to(&mut p);
        let c = condition(&p, "KruisePodReady").expect("condition");
        assert_eq!((c.status.as_str(), c.message.as_deref()), ("True", Some("[]")));
        assert_eq!(c.last_transition_time, Some(Time(ts(6))));
    }

    #[test]
    fn holds_need_the_readiness_gate() {
        let pod = pod_with(PHASE_RUNNING, vec![]);
        let hold = NotReadyHold::new("Lifecycle", "preDeleteHook");
        assert_eq!(add_not_ready_hold(&pod, &hold, ts(1)), None);
        assert_eq!(remove_not_ready_hold(&pod, &hold, ts(1)), None);
        let garbage = gated_pod(vec![PodCondition {
            message: Some("not json".into()),
            ..cond("KruisePodReady", "False", None)
        }]);
        assert!(not_ready_holds(&garbage).is_empty());
        assert!(add_not_ready_hold(&garbage, &hold, ts(1)).is_some());
    }

    fn view(name: &str, node: &str, phase: &str, ready: bool) -> PodRankView {
        PodRankView {
            name: name.into(),
            node_name: node.into(),
            phase: phase.into(),
            ready,
            ready_since: None,
            available: ready,
            max_restarts: 0,
            created: None,
            deletion_cost: 0,
            rank: 0.0,
        }
    }

    #[test]
    fn active_pod_ordering_matches_upstream_table() {
        let now = 1_000_000;
        let then = now - 2_592_000;
        let ready =
            |name: &str, since: Option<i64>, created: Option<i64>, restarts: i32| PodRankView {
                ready_since: since.map(ts),
                created: created.map(ts),
                max_restarts: restarts,
                ..view(name, "node", PHASE_RUNNING, true)
            };
        let unscheduled = view("unscheduled", "", PHASE_PENDING, false);
        let pending = view("pending", "node", PHASE_PENDING, false);
        let unknown = view("unknown-phase", "node", PHASE_UNKNOWN, false);
        let not_ready = view("not-ready", "node", PHASE_RUNNING, false);
        let ready_no_time = ready("ready-no-ltt", None, None, 0);
        let ready_now = ready("ready-now", Some(now), Some(now), 0);
        let ready_then = ready("ready-then", Some(then), Some(then), 0);
        let high_restarts = ready("ready-high-restarts", Some(now), Some(now), 9001);
        let created_then = ready("ready-now-created-then", Some(now), Some(then), 0);
        let low_cost = PodRankView { deletion_cost: 10, ..created_then.clone() };
        let high_cost =
            PodRankView { deletion_cost: 100, name: "b".into(), ..created_then.clone() };

        let pairs = [
            (&unscheduled, &pending),
            (&pending, &unknown),
            (&unknown, &not_ready),
            (&not_ready, &ready_no_time),
            (&ready_no_time, &ready_now),
            (&ready_now, &ready_then),
            (&high_restarts, &ready_now),
            (&ready_now, &created_then),
        ];
        for (lesser, greater) in pairs {
            for cmp in [compare_active, compare_for_deletion] {
                assert_eq!(
                    cmp(lesser, greater),
                    Ordering::Less,
                    "{} < {}",
                    lesser.name,
                    greater.name
                );
                assert_eq!(cmp(greater, lesser), Ordering::Greater);
                assert_eq!(cmp(lesser, lesser), Ordering::Equal);
            }
        }
        assert_eq!(compare_for_deletion(&low_cost, &high_cost), Ordering::Less);
        assert_eq!(compare_for_deletion(&high_cost, &low_cost), Ordering::Greater);

        // Deletion cost beats ready time; ActivePods ignores cost.
        let costly_new = PodRankView { deletion_cost: 5, ..ready_now.clone() };
        assert_eq!(compare_for_deletion(&ready_then, &costly_new), Ordering::Less);
        assert_eq!(compare_active(&ready_then, &costly_new), Ordering::Greater);

        // Availability goes before readiness, only for deletion.
        let ready_unavailable = PodRankView { available: false, ..ready_then.clone() };
        assert_eq!(compare_for_deletion(&ready_unavailable, &ready_now), Ordering::Less);

        // Rank: higher first, after cost.
        let ranked = PodRankView { rank: 2.0, ..ready_then.clone() };
        assert_eq!(compare_for_deletion(&ranked, &ready_now), Ordering::Less);
    }

    #[test]
    fn ties_break_by_name() {
        let a = view("a", "n", PHASE_RUNNING, true);
        let b = view("b", "n", PHASE_RUNNING, true);
        assert_eq!(compare_for_deletion(&a, &b), Ordering::Less);
        assert_eq!(deletion_order(&[b, a]), vec![1, 0]);
    }

    #[test]
    fn same_node_ranker_table() {
        // node a: 0, 4, 10; node b: 3, 6; node c: 5; node d: 7, 8, 9; 1 and 2 unscheduled.
        let nodes = ["a", "", "", "b", "a", "c", "b", "d", "d", "d", "a"];
        let views: Vec<PodRankView> = nodes
            .iter()
            .enumerate()
            .map(|(i, n)| view(&format!("p{i:02}"), n, "", false))
            .collect();
        let ranks = same_node_ranks(&views);
        let expected = [2.0, 0.0, 0.0, 1.0, 1.0, 0.0, 0.0, 2.0, 1.0, 0.0, 0.0];
        assert_eq!(ranks, expected);
    }

    #[test]
    fn spread_ranker_spreads_by_zone() {
        // zone-1 has three pods on two nodes, zone-2 one pod.
        let views = vec![
            view("a", "n1", PHASE_RUNNING, true),
            view("b", "n1", PHASE_RUNNING, true),
            view("c", "n2", PHASE_RUNNING, true),
            view("d", "n3", PHASE_RUNNING, true),
            view("e", "gone", PHASE_RUNNING, true),
        ];
        let zone = |z: &str| [("zone".to_owned(), z.to_owned())].into();
        let nodes: BTreeMap<String, BTreeMap<String, String>> =
            [("n1".into(), zone("1")), ("n2".into(), zone("1")), ("n3".into(), zone("2"))].into();
        let ranks = spread_constraint_ranks(&views, &["zone".into()], &nodes);
        let w = 4f64.ln();
        // In zone 1, "a" carries a same-node rank of 1 and goes first.
        assert_eq!(ranks, vec![3.0 * w, 2.0 * w, 1.0 * w, 1.0 * w, 0.0]);

        // By hostname, same-node ranks are not used: order by name within a node.
        let hosts: BTreeMap<String, BTreeMap<String, String>> = ["n1", "n2", "n3"]
            .iter()
            .map(|n| {
                (n.to_string(), [(kubernetes::labels::HOSTNAME.to_owned(), n.to_string())].into())
            })
            .collect();
        let ranks =
            spread_constraint_ranks(&views, &[kubernetes::labels::HOSTNAME.to_owned()], &hosts);
        let w = 5f64.ln();
        assert_eq!(ranks, vec![2.0 * w, 1.0 * w, 1.0 * w, 1.0 * w, 0.0]);
    }

    #[test]
    fn view_from_pod() {
        let mut pod = pod_with(PHASE_RUNNING, vec![cond(CONDITION_READY, "True", Some(7))]);
        pod.metadata.creation_timestamp = Some(Time(ts(3)));
        pod.metadata.annotations =
            Some([(kubernetes::annotations::POD_DELETION_COST.to_owned(), "+1".to_owned())].into());
        if let Some(status) = pod.status.as_mut() {
            status.container_statuses = Some(vec![
                ContainerStatus { restart_count: 2, ..Default::default() },
                ContainerStatus { restart_count: 5, ..Default::default() },
            ]);
        }
        let v = PodRankView::from_pod(&pod);
        assert_eq!(v.name, "p");
        assert!(v.ready && v.available);
        assert_eq!(v.ready_since, Some(ts(7)));
        assert_eq!(v.created, Some(ts(3)));
        assert_eq!(v.max_restarts, 5);
        assert_eq!(v.deletion_cost, 0, "invalid cost reads as 0");
        assert!(!v.clone().with_available(false).available);
    }

    #[test]
    fn active_rank_sorts_like_compare_active() {
        let mut views = Vec::new();
        for node in ["", "n"] {
            for phase in [PHASE_PENDING, PHASE_UNKNOWN, PHASE_RUNNING, PHASE_FAILED, ""] {
                for ready in [false, true] {
                    for since in [None, Some(ts(-5)), Some(ts(3)), Some(ts(4))] {
                        for restarts in [0, 2, i32::MIN, i32::MAX] {
                            for created in [None, Some(ts(1)), Some(ts(2))] {
                                for name in ["a", "b"] {
                                    views.push(PodRankView {
                                        ready_since: since,
                                        max_restarts: restarts,
                                        created,
                                        ..view(name, node, phase, ready)
                                    });
                                }
                            }
                        }
                    }
                }
            }
        }
        let ranks: Vec<ActiveRank> = views.iter().map(PodRankView::active_rank).collect();
        for (a, ra) in views.iter().zip(&ranks) {
            for (b, rb) in views.iter().zip(&ranks) {
                let by_rank = ra.cmp(rb).then_with(|| a.name.cmp(&b.name));
                assert_eq!(compare_active(a, b), by_rank, "{a:?} vs {b:?}");
            }
        }
        let mut pod = pod_with(PHASE_RUNNING, vec![cond(CONDITION_READY, "True", Some(7))]);
        pod.metadata.creation_timestamp = Some(Time(ts(3)));
        assert_eq!(ActiveRank::of_pod(&pod), PodRankView::from_pod(&pod).active_rank());
    }
}

#[cfg(test)]
mod packed_rank_tests {
    use jiff::Timestamp;
    use proptest::prelude::*;

    use super::ActiveRank;

    fn time() -> impl Strategy<Value = Option<Timestamp>> {
        prop_oneof![
            Just(None),
            // Whole seconds over jiff's whole range, with the extremes.
            (Timestamp::MIN.as_second()..=Timestamp::MAX.as_second())
                .prop_map(|s| Timestamp::from_second(s).ok()),
            Just(Timestamp::from_second(0).ok()),
            Just(Timestamp::from_second(Timestamp::MIN.as_second()).ok()),
            Just(Timestamp::from_second(Timestamp::MAX.as_second()).ok()),
            // A few seconds apart, so that ties and neighbours are common.
            (1_700_000_000i64..1_700_000_004).prop_map(|s| Timestamp::from_second(s).ok()),
        ]
    }

    fn rank() -> impl Strategy<Value = ActiveRank> {
        (
            any::<bool>(),
            prop::sample::select(vec!["Pending", "Unknown", "Running", "Succeeded", ""]),
            any::<bool>(),
            time(),
            prop_oneof![Just(i32::MIN), Just(i32::MAX), Just(0), 0..4i32, any::<i32>()],
            time(),
        )
            .prop_map(|(scheduled, phase, ready, since, restarts, created)| {
                ActiveRank::new(scheduled, phase, ready, since, restarts, created)
            })
    }

    proptest! {
        #[test]
        fn packed_ranks_sort_as_ranks(a in rank(), b in rank()) {
            let (pa, pb) = (a.packed(), b.packed());
            prop_assert!(pa.is_some() && pb.is_some(), "whole seconds always pack");
            prop_assert_eq!(pa.cmp(&pb), a.cmp(&b));
        }

        #[test]
        fn packed_ranks_unpack_to_themselves(a in rank()) {
            let packed = a.packed().expect("whole seconds pack");
            prop_assert_eq!(ActiveRank::unpack(packed), Some(a));
        }
    }

    #[test]
    fn sub_second_times_do_not_pack() {
        let t = Timestamp::new(1_700_000_000, 5).expect("valid");
        assert_eq!(ActiveRank::new(true, "Running", true, Some(t), 0, None).packed(), None);
        assert_eq!(ActiveRank::new(true, "Running", false, None, 0, Some(t)).packed(), None);
        assert!(ActiveRank::new(true, "Running", false, Some(t), 0, None).packed().is_some());
    }
}
