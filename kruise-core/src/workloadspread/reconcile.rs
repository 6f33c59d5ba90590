//! The controller: status from the pods, adoption of pods created before the WorkloadSpread,
//! deletion costs and Adaptive rescheduling.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;
use std::time::Duration;

use jiff::{SignedDuration, Timestamp};
use k8s_openapi::api::core::v1::{Node, NodeSelectorTerm, Pod, Taint};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{Condition, Time};
use kruise_api::apps::v1beta1::{
    WorkloadSpread, WorkloadSpreadScheduleStrategyType, WorkloadSpreadStatus, WorkloadSpreadSubset,
    WorkloadSpreadSubsetStatus,
};
use serde::Serialize;
use serde_json::{Map, Value, json};

use super::{
    CREATE_POD_TIMEOUT, DELETE_POD_TIMEOUT, FAKE_SUBSET_NAME,
    IGNORE_PATCH_EXISTING_PODS_ANNOTATION, InjectedSubset, MATCHED_WORKLOADSPREAD_ANNOTATION,
    MAX_SCHEDULED_FAILED_DURATION, POD_DELETION_COST_ANNOTATION, POD_DELETION_COST_NEGATIVE,
    POD_DELETION_COST_POSITIVE, SUBSET_SCHEDULABLE, VersionedKinds, annotation, pod_version,
    subset_max_replicas, subsets, whole_seconds,
};
use crate::node_affinity::{term_matches, tolerates};
use crate::pod::{PodRankView, compare_active, is_pod_active, name_of, node_name_of};
use crate::smp::{PatchSchema, apply_patch};
use crate::workload::EventType;

/// Everything the controller needs for one WorkloadSpread.
pub struct ReconcileInput<'a> {
    /// The WorkloadSpread (v1beta1).
    pub ws: &'a WorkloadSpread,
    /// The target workload's pods, already narrowed by `targetFilter.selector`.
    pub pods: &'a [Pod],
    /// The target's replicas (after `targetFilter.replicasPathList` or the whitelist's
    /// replicas path), against which percentages are scaled.
    pub workload_replicas: i32,
    /// Looks a node up by name (used to adopt pods that carry no subset yet); a reflector
    /// store's `get` fits.
    pub node: &'a dyn Fn(&str) -> Option<Arc<Node>>,
    /// The target's kind (`Deployment`, `CloneSet`, ...).
    pub target_kind: &'a str,
    /// The clock.
    pub now: Timestamp,
    /// The target's current version (`pod-template-hash` of the Deployment's newest
    /// ReplicaSet, the short update revision of a CloneSet, [`super::VERSION_IGNORED`] for kinds
    /// without versioned status). `None` when unknown: every version is then treated as the
    /// current one for deletion costs.
    pub latest_version: Option<&'a str>,
    /// The kinds with versioned status; `None` for the default.
    pub versioned_kinds: Option<&'a VersionedKinds>,
}

impl<'a> ReconcileInput<'a> {
    /// An input with the latest version unknown and the default versioned kinds.
    pub fn new(
        ws: &'a WorkloadSpread,
        pods: &'a [Pod],
        workload_replicas: i32,
        node: &'a dyn Fn(&str) -> Option<Arc<Node>>,
        target_kind: &'a str,
        now: Timestamp,
    ) -> Self {
        ReconcileInput {
            ws,
            pods,
            workload_replicas,
            node,
            target_kind,
            now,
            latest_version: None,
            versioned_kinds: None,
        }
    }
}

/// A patch to one pod's metadata.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct PodPatch {
    /// The pod's name.
    pub name: String,
    /// A JSON merge patch (`{"metadata":{"annotations":{...},"labels":{...}}}`); as it only
    /// touches maps, it may also be sent as a strategic merge patch.
    pub patch: Value,
}

/// An Event to record on the WorkloadSpread.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct PlannedEvent {
    /// Normal or Warning.
    #[serde(rename = "type")]
    pub type_: EventType,
    /// The reason (`CreatePodFailed`, `DeletePodFailed`, `RecoverSchedulable`).
    pub reason: String,
    /// The message.
    pub message: String,
}

/// What the controller asks for.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ReconcilePlan {
    /// The status to write (with `observedGeneration`).
    pub status: WorkloadSpreadStatus,
    /// Whether `status` differs from the WorkloadSpread's.
    pub status_changed: bool,
    /// Metadata patches for pods: deletion costs and adoption into a subset. Sorted by pod
    /// name, one per pod.
    pub pod_patches: Vec<PodPatch>,
    /// Pods to delete (Adaptive: unschedulable for longer than `rescheduleCriticalSeconds`),
    /// after the status is written. Sorted.
    pub delete_pods: Vec<String>,
    /// Events to record. Sorted, without repeats.
    pub events: Vec<PlannedEvent>,
    /// When to look again (the earliest pending expiry), if any.
    pub requeue_after: Option<Duration>,
}

struct Ctx<'i, 'a> {
    input: &'i ReconcileInput<'a>,
    events: Vec<PlannedEvent>,
    requeue: Option<SignedDuration>,
}

impl Ctx<'_, '_> {
    fn push_requeue(&mut self, after: SignedDuration) {
        if after > SignedDuration::ZERO {
            self.requeue = Some(self.requeue.map_or(after, |r| r.min(after)));
        }
    }

    fn event(&mut self, type_: EventType, reason: &str, message: String) {
        let event = PlannedEvent { type_, reason: reason.to_owned(), message };
        if !self.events.contains(&event) {
            self.events.push(event);
        }
    }
}

/// Pods of one group, by subset name (with [`FAKE_SUBSET_NAME`] for pods in no subset).
type SubsetPods<'p> = BTreeMap<String, Vec<&'p Pod>>;

/// The controller's plan for one WorkloadSpread (upstream's `syncWorkloadSpread`):
///
/// 1. pods are grouped by version ([`pod_version`]) and, within each version, by subset: the
///    subset their matched-workloadspread annotation names, or, for pods without one (created
///    before the WorkloadSpread), the subset their node matches best (required term and taints
///    must match; then preferred terms' weight, whether the subset's patch is already on the
///    pod, and whether the subset has room); adopted pods get the annotation (and the patch's
///    labels and annotations, unless the WorkloadSpread says
///    `workloadspread.kruise.io/ignore-patch-existing-pods-metadata: "true"`);
/// 2. for Deployments, ReplicaSets and CloneSets, deletion costs: see the module docs;
/// 3. the status: per subset the active pods (`replicas`), `missingReplicas`, the
///    `creatingPods`/`deletingPods` the webhook recorded that have not expired (30 s and 15 s;
///    expired ones give `CreatePodFailed`/`DeletePodFailed` Events), overall and per version;
/// 4. with the Adaptive strategy, every subset but the last whose pods stay unschedulable
///    longer than `rescheduleCriticalSeconds` is marked `Schedulable=False` and those pods
///    are deleted; a subset recovers after 5 minutes.
pub fn reconcile(input: &ReconcileInput<'_>) -> ReconcilePlan {
    let ws = input.ws;
    let old_status = ws.status.clone().unwrap_or_default();
    if ws.spec.target_reference.is_none() {
        return ReconcilePlan { status: old_status, ..Default::default() };
    }
    let default_kinds = VersionedKinds::default();
    let versioned = input.versioned_kinds.unwrap_or(&default_kinds);
    let mut ctx = Ctx { input, events: Vec::new(), requeue: None };

    // 1. Group by version, then by subset.
    let mut by_version: BTreeMap<String, Vec<&Pod>> = BTreeMap::new();
    for pod in input.pods {
        by_version.entry(pod_version(pod, input.target_kind, versioned)).or_default().push(pod);
    }
    let mut patches: BTreeMap<String, Value> = BTreeMap::new();
    let mut versioned_groups: BTreeMap<String, SubsetPods<'_>> = BTreeMap::new();
    let mut all: SubsetPods<'_> = BTreeMap::new();
    for (version, pods) in &by_version {
        let groups = group_by_subset(input, pods, &mut patches);
        for (subset, ps) in &groups {
            all.entry(subset.clone()).or_default().extend(ps.iter().copied());
        }
        versioned_groups.insert(version.clone(), groups);
    }

    // 2. Deletion costs.
    if matches!(input.target_kind, "ReplicaSet" | "Deployment" | "CloneSet") {
        for (version, groups) in &versioned_groups {
            let reverse = input.latest_version.is_some_and(|latest| latest != version);
            deletion_costs(input, groups, reverse, &mut patches);
        }
    }

    // 3 and 4. Status and rescheduling.
    let mut status = WorkloadSpreadStatus {
        observed_generation: ws.metadata.generation.unwrap_or_default(),
        ..Default::default()
    };
    let (overall, failed) = subset_statuses(&mut ctx, &old_status.subset_statuses, &all);
    status.subset_statuses = overall;
    for (version, groups) in &versioned_groups {
        let old = old_status
            .versioned_subset_statuses
            .get(version)
            .map(Vec::as_slice)
            .unwrap_or_default();
        let (statuses, _) = subset_statuses(&mut ctx, old, groups);
        status.versioned_subset_statuses.insert(version.clone(), statuses);
    }
    let empty = SubsetPods::new();
    for (version, old) in &old_status.versioned_subset_statuses {
        if versioned_groups.contains_key(version) {
            continue;
        }
        let (statuses, _) = subset_statuses(&mut ctx, old, &empty);
        let nothing = statuses
            .iter()
            .all(|s| s.replicas == 0 && s.creating_pods.is_empty() && s.deleting_pods.is_empty());
        if !nothing {
            status.versioned_subset_statuses.insert(version.clone(), statuses);
        }
    }

    let mut delete_pods: Vec<String> = failed.into_iter().collect();
    delete_pods.sort();
    let pod_patches = patches.into_iter().map(|(name, patch)| PodPatch { name, patch }).collect();
    ReconcilePlan {
        status_changed: status != old_status,
        status,
        pod_patches,
        delete_pods,
        events: {
            let mut events = ctx.events;
            events.sort_by(|a, b| (&a.reason, &a.message).cmp(&(&b.reason, &b.message)));
            events
        },
        requeue_after: ctx.requeue.and_then(|d| Duration::try_from(d).ok()),
    }
}

/// Adds `{"metadata":{section:{key:value}}}` to the pod's patch.
fn add_to_patch(
    patches: &mut BTreeMap<String, Value>,
    pod: &str,
    section: &str,
    key: &str,
    value: Value,
) {
    let patch = patches.entry(pod.to_owned()).or_insert_with(|| json!({"metadata": {}}));
    if let Some(meta) = patch.get_mut("metadata").and_then(Value::as_object_mut) {
        let section = meta.entry(section.to_owned()).or_insert_with(|| Value::Object(Map::new()));
        if let Some(section) = section.as_object_mut() {
            section.insert(key.to_owned(), value);
        }
    }
}

/// Upstream's `groupPodBySubset` for the pods of one version.
fn group_by_subset<'p>(
    input: &ReconcileInput<'_>,
    pods: &[&'p Pod],
    patches: &mut BTreeMap<String, Value>,
) -> SubsetPods<'p> {
    let ws = input.ws;
    let ws_name = ws.metadata.name.as_deref().unwrap_or_default();
    let specs = subsets(ws);
    let mut groups: SubsetPods<'p> = BTreeMap::new();
    groups.insert(FAKE_SUBSET_NAME.to_owned(), Vec::new());
    let mut missing: BTreeMap<&str, i64> = BTreeMap::new();
    for s in specs {
        groups.insert(s.name.clone(), Vec::new());
        let max = subset_max_replicas(s, input.workload_replicas).unwrap_or(i32::MAX);
        missing.insert(&s.name, i64::from(max));
    }
    let matched = |pod: &Pod| {
        InjectedSubset::from_pod(pod).filter(|i| i.name == ws_name && !i.subset.is_empty())
    };
    for pod in pods {
        if let Some(injected) = matched(pod)
            && let Some(m) = missing.get_mut(injected.subset.as_str())
        {
            *m -= 1;
        }
    }
    for pod in pods {
        let subset = match matched(pod) {
            Some(injected) => injected.subset,
            None => match adopt(input, pod, &missing) {
                Some(subset) => {
                    patch_adopted(ws, subset, pod, patches);
                    if let Some(m) = missing.get_mut(subset.name.as_str()) {
                        *m -= 1;
                    }
                    subset.name.clone()
                }
                None => FAKE_SUBSET_NAME.to_owned(),
            },
        };
        match groups.get_mut(&subset) {
            Some(list) => list.push(pod),
            None => groups.entry(FAKE_SUBSET_NAME.to_owned()).or_default().push(pod),
        }
    }
    groups
}

/// The subset a pod without one fits best on its node, if any (upstream's
/// `getAndUpdateSuitableSubsetName` and `matchesSubset`).
fn adopt<'w>(
    input: &ReconcileInput<'w>,
    pod: &Pod,
    missing: &BTreeMap<&str, i64>,
) -> Option<&'w WorkloadSpreadSubset> {
    let node_name = node_name_of(pod);
    if node_name.is_empty() {
        return None;
    }
    let node = (input.node)(node_name)?;
    let mut best: Option<(&WorkloadSpreadSubset, i64)> = None;
    for subset in subsets(input.ws) {
        let room = missing.get(subset.name.as_str()).copied().unwrap_or(0);
        let Some(score) = subset_score(pod, &node, subset, room) else {
            continue;
        };
        if best.is_none_or(|(_, b)| score > b) {
            best = Some((subset, score));
        }
    }
    best.map(|(s, _)| s)
}

/// `matchesSubset`: `None` when the node does not fit the subset; else
/// `preferred weight * 100 + patch already applied * 10 + room left`.
pub(crate) fn subset_score(
    pod: &Pod,
    node: &Node,
    subset: &WorkloadSpreadSubset,
    missing: i64,
) -> Option<i64> {
    let spec = pod.spec.as_ref();
    let taints: &[Taint] = node.spec.as_ref().and_then(|s| s.taints.as_deref()).unwrap_or_default();
    let pod_tolerations = spec.and_then(|s| s.tolerations.as_deref()).unwrap_or_default();
    let subset_tolerations = subset.tolerations.as_deref().unwrap_or_default();
    let untolerated = taints.iter().any(|taint| {
        !pod_tolerations.iter().chain(subset_tolerations).any(|t| tolerates(t, taint))
    });
    if untolerated {
        return None;
    }
    if let Some(required) = &subset.required_node_selector {
        let pod_terms: Vec<NodeSelectorTerm> = spec
            .and_then(|s| s.affinity.as_ref())
            .and_then(|a| a.node_affinity.as_ref())
            .and_then(|a| a.required_during_scheduling_ignored_during_execution.as_ref())
            .map(|r| r.node_selector_terms.clone())
            .unwrap_or_default();
        let terms = if pod_terms.is_empty() {
            vec![required.clone()]
        } else {
            pod_terms
                .into_iter()
                .map(|mut t| {
                    t.match_expressions
                        .get_or_insert_with(Vec::new)
                        .extend(required.match_expressions.iter().flatten().cloned());
                    t.match_fields
                        .get_or_insert_with(Vec::new)
                        .extend(required.match_fields.iter().flatten().cloned());
                    t
                })
                .collect()
        };
        if !terms.iter().any(|t| term_matches(t, node)) {
            return None;
        }
    }
    let preferred: i64 = subset
        .preferred_node_selector
        .iter()
        .filter(|t| t.weight != 0 && term_matches(&t.preference, node))
        .map(|t| i64::from(t.weight))
        .sum();
    let patched =
        i64::from(subset.patch.as_ref().is_some_and(|p| patch_already_applied(pod, &p.0)));
    let room = i64::from(missing > 0);
    Some(preferred * 100 + patched * 10 + room)
}

/// Whether applying the patch changes nothing but annotations.
fn patch_already_applied(pod: &Pod, patch: &Value) -> bool {
    let Ok(original) = serde_json::to_value(pod) else {
        return false;
    };
    let Ok(patched) = apply_patch(&original, patch, PatchSchema::Pod) else {
        return false;
    };
    let Ok(mut patched) = serde_json::from_value::<Pod>(patched) else {
        return false;
    };
    patched.metadata.annotations = pod.metadata.annotations.clone();
    patched == *pod
}

/// The adoption patch: the patch's labels and annotations, and the matched annotation.
fn patch_adopted(
    ws: &WorkloadSpread,
    subset: &WorkloadSpreadSubset,
    pod: &Pod,
    patches: &mut BTreeMap<String, Value>,
) {
    let name = name_of(pod);
    let ignore = ws
        .metadata
        .annotations
        .as_ref()
        .and_then(|a| a.get(IGNORE_PATCH_EXISTING_PODS_ANNOTATION))
        .is_some_and(|v| v.eq_ignore_ascii_case("true"));
    if !ignore
        && let Some(meta) =
            subset.patch.as_ref().and_then(|p| p.0.get("metadata")).and_then(Value::as_object)
    {
        for section in ["labels", "annotations"] {
            for (k, v) in meta.get(section).and_then(Value::as_object).into_iter().flatten() {
                add_to_patch(patches, name, section, k, v.clone());
            }
        }
    }
    let injected = InjectedSubset {
        name: ws.metadata.name.clone().unwrap_or_default(),
        subset: subset.name.clone(),
        uid: None,
    };
    add_to_patch(
        patches,
        name,
        "annotations",
        MATCHED_WORKLOADSPREAD_ANNOTATION,
        Value::String(injected.to_annotation()),
    );
}

/// Upstream's `updateDeletionCostBySubset` for one version.
fn deletion_costs(
    input: &ReconcileInput<'_>,
    groups: &SubsetPods<'_>,
    reverse: bool,
    patches: &mut BTreeMap<String, Value>,
) {
    let specs = subsets(input.ws);
    let n = specs.len() as i64;
    for (idx, subset) in specs.iter().enumerate() {
        let index = if reverse { n - idx as i64 - 1 } else { idx as i64 };
        let pods = groups.get(&subset.name).map(Vec::as_slice).unwrap_or_default();
        let active: Vec<&Pod> = pods.iter().copied().filter(|p| is_pod_active(p)).collect();
        let (negative, positive) = match subset_max_replicas(subset, input.workload_replicas) {
            Some(max) if active.len() > max as usize => {
                let mut views: Vec<(PodRankView, &Pod)> =
                    active.iter().map(|p| (PodRankView::from_pod(p), *p)).collect();
                views.sort_by(|a, b| compare_active(&a.0, &b.0));
                let extra = active.len() - max as usize;
                let (neg, pos) = views.split_at(extra);
                (neg.iter().map(|v| v.1).collect(), pos.iter().map(|v| v.1).collect())
            }
            _ => (Vec::new(), active),
        };
        set_costs(&positive, i64::from(POD_DELETION_COST_POSITIVE) * (n - index), patches);
        set_costs(&negative, i64::from(POD_DELETION_COST_NEGATIVE) * (index + 1), patches);
    }
    let fake = groups.get(FAKE_SUBSET_NAME).map(Vec::as_slice).unwrap_or_default();
    let fake: Vec<&Pod> = fake.iter().copied().filter(|p| is_pod_active(p)).collect();
    set_costs(&fake, i64::from(POD_DELETION_COST_NEGATIVE) * (n + 1), patches);
}

fn set_costs(pods: &[&Pod], cost: i64, patches: &mut BTreeMap<String, Value>) {
    let value = cost.to_string();
    for pod in pods {
        match annotation(pod, POD_DELETION_COST_ANNOTATION) {
            Some(old) if old == value => continue,
            None if value == "0" => continue,
            _ => {}
        }
        add_to_patch(
            patches,
            name_of(pod),
            "annotations",
            POD_DELETION_COST_ANNOTATION,
            Value::String(value.clone()),
        );
    }
}

/// The seconds after which an unschedulable pod is rescheduled, when the Adaptive strategy
/// asks for it.
fn reschedule_critical(ws: &WorkloadSpread) -> Option<i64> {
    let strategy = &ws.spec.schedule_strategy;
    if strategy.type_ != Some(WorkloadSpreadScheduleStrategyType::Adaptive) {
        return None;
    }
    strategy.adaptive.as_ref()?.reschedule_critical_seconds.filter(|s| *s > 0).map(i64::from)
}

/// When the pod counts as unschedulable for good (upstream's `GetTimeBeforePendingTimeout`):
/// `None` unless it is pending, unbound, not being deleted and `PodScheduled=False` with reason
/// `Unschedulable`; else its creation time plus `critical`.
pub fn pod_unscheduled_deadline(pod: &Pod, critical: SignedDuration) -> Option<Timestamp> {
    if pod.metadata.deletion_timestamp.is_some()
        || crate::pod::phase_of(pod) != "Pending"
        || !node_name_of(pod).is_empty()
    {
        return None;
    }
    let failed = crate::pod::conditions_of(pod).iter().any(|c| {
        c.type_ == "PodScheduled"
            && c.status == "False"
            && c.reason.as_deref() == Some("Unschedulable")
    });
    if !failed {
        return None;
    }
    let created = pod.metadata.creation_timestamp.as_ref().map_or(Timestamp::UNIX_EPOCH, |t| t.0);
    Some(created.checked_add(critical).unwrap_or(Timestamp::MAX))
}

fn condition(type_: &str, status: &str, reason: &str, now: Timestamp) -> Condition {
    Condition {
        type_: type_.to_owned(),
        status: status.to_owned(),
        reason: reason.to_owned(),
        message: String::new(),
        last_transition_time: Time(whole_seconds(now)),
        observed_generation: None,
    }
}

/// `setWorkloadSpreadSubsetCondition`: same status and reason is no change; same status keeps
/// the transition time.
fn set_condition(status: &mut WorkloadSpreadSubsetStatus, mut cond: Condition) {
    if let Some(current) = status.conditions.iter().find(|c| c.type_ == cond.type_) {
        if current.status == cond.status && current.reason == cond.reason {
            return;
        }
        if current.status == cond.status {
            cond.last_transition_time = current.last_transition_time.clone();
        }
    }
    status.conditions.retain(|c| c.type_ != cond.type_);
    status.conditions.push(cond);
}

/// `calculateWorkloadSpreadSubsetStatuses`: the statuses of every subset for these pods, and
/// the pods to delete for rescheduling.
fn subset_statuses(
    ctx: &mut Ctx<'_, '_>,
    old: &[WorkloadSpreadSubsetStatus],
    groups: &SubsetPods<'_>,
) -> (Vec<WorkloadSpreadSubsetStatus>, BTreeSet<String>) {
    let ws = ctx.input.ws;
    let now = ctx.input.now;
    let specs = subsets(ws);
    let old: BTreeMap<&str, &WorkloadSpreadSubsetStatus> =
        old.iter().map(|s| (s.name.as_str(), s)).collect();
    let critical = reschedule_critical(ws);
    let mut failed = BTreeSet::new();
    let mut out = Vec::with_capacity(specs.len());
    for (i, subset) in specs.iter().enumerate() {
        let pods = groups.get(&subset.name).map(Vec::as_slice).unwrap_or_default();
        let previous = old.get(subset.name.as_str()).copied();
        let mut status = subset_status(ctx, pods, subset, previous);
        let old_cond =
            previous.and_then(|p| p.conditions.iter().find(|c| c.type_ == SUBSET_SCHEDULABLE));
        match critical {
            Some(seconds) if i + 1 != specs.len() => {
                let critical = SignedDuration::from_secs(seconds);
                let mut stuck = Vec::new();
                for pod in pods {
                    if let Some(deadline) = pod_unscheduled_deadline(pod, critical) {
                        if deadline <= now {
                            stuck.push(name_of(pod).to_owned());
                        } else {
                            ctx.push_requeue(deadline.duration_since(now));
                        }
                    }
                }
                let unschedulable = !stuck.is_empty();
                match old_cond {
                    None => {
                        let cond = if unschedulable {
                            condition(SUBSET_SCHEDULABLE, "False", "PodUnschedulable", now)
                        } else {
                            condition(SUBSET_SCHEDULABLE, "True", "Sufficient", now)
                        };
                        set_condition(&mut status, cond);
                    }
                    Some(old_cond) => {
                        set_condition(&mut status, old_cond.clone());
                        if unschedulable {
                            set_condition(
                                &mut status,
                                condition(SUBSET_SCHEDULABLE, "False", "PodUnschedulable", now),
                            );
                        } else if old_cond.status == "False" {
                            let recover_at = old_cond
                                .last_transition_time
                                .0
                                .checked_add(MAX_SCHEDULED_FAILED_DURATION)
                                .unwrap_or(Timestamp::MAX);
                            if recover_at <= now {
                                ctx.event(
                                    EventType::Normal,
                                    "RecoverSchedulable",
                                    format!(
                                        "Subset {} of WorkloadSpread {}/{} is recovered from unschedulable to schedulable",
                                        subset.name,
                                        ws.metadata.namespace.as_deref().unwrap_or_default(),
                                        ws.metadata.name.as_deref().unwrap_or_default()
                                    ),
                                );
                                set_condition(
                                    &mut status,
                                    condition(SUBSET_SCHEDULABLE, "True", "Sufficient", now),
                                );
                            } else {
                                ctx.push_requeue(recover_at.duration_since(now));
                            }
                        }
                    }
                }
                failed.extend(stuck);
            }
            Some(_) => {
                if let Some(old_cond) = old_cond {
                    set_condition(&mut status, old_cond.clone());
                }
                set_condition(
                    &mut status,
                    condition(SUBSET_SCHEDULABLE, "True", "Sufficient", now),
                );
            }
            None => status.conditions.retain(|c| c.type_ != SUBSET_SCHEDULABLE),
        }
        out.push(status);
    }
    (out, failed)
}

/// `calculateWorkloadSpreadSubsetStatus` for one subset.
fn subset_status(
    ctx: &mut Ctx<'_, '_>,
    pods: &[&Pod],
    subset: &WorkloadSpreadSubset,
    old: Option<&WorkloadSpreadSubsetStatus>,
) -> WorkloadSpreadSubsetStatus {
    let now = ctx.input.now;
    let namespace = ctx.input.ws.metadata.namespace.clone().unwrap_or_default();
    let max = subset_max_replicas(subset, ctx.input.workload_replicas).unwrap_or(-1);
    let mut status = WorkloadSpreadSubsetStatus {
        name: subset.name.clone(),
        missing_replicas: max,
        ..Default::default()
    };
    let mut creating = old.map(|o| o.creating_pods.clone()).unwrap_or_default();
    let empty = BTreeMap::new();
    let deleting = old.map_or(&empty, |o| &o.deleting_pods);
    let mut active = 0;
    for pod in pods {
        match InjectedSubset::from_pod(pod).and_then(|i| i.uid) {
            Some(uid) => creating.remove(&uid),
            None => creating.remove(name_of(pod)),
        };
        if !is_pod_active(pod) {
            continue;
        }
        active += 1;
        if status.missing_replicas > 0 {
            status.missing_replicas -= 1;
        }
        if let Some(at) = deleting.get(name_of(pod)) {
            let expected = at.0.checked_add(DELETE_POD_TIMEOUT).unwrap_or(Timestamp::MAX);
            if expected <= now {
                ctx.event(
                    EventType::Warning,
                    "DeletePodFailed",
                    format!(
                        "Pod {namespace}/{} was expected to be deleted but it wasn't",
                        name_of(pod)
                    ),
                );
            } else {
                status.deleting_pods.insert(name_of(pod).to_owned(), at.clone());
                if status.missing_replicas < max {
                    status.missing_replicas += 1;
                }
                ctx.push_requeue(expected.duration_since(now));
            }
        }
    }
    status.replicas = active;
    for (id, at) in creating {
        let expected = at.0.checked_add(CREATE_POD_TIMEOUT).unwrap_or(Timestamp::MAX);
        if expected <= now {
            ctx.event(
                EventType::Warning,
                "CreatePodFailed",
                format!("Pod {namespace}/{id} was expected to be created but it wasn't"),
            );
        } else {
            status.creating_pods.insert(id, at);
            if status.missing_replicas > 0 {
                status.missing_replicas -= 1;
            }
            ctx.push_requeue(expected.duration_since(now));
        }
    }
    status
}
