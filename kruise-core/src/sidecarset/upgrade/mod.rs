//! The SidecarSet controller's planner: which pods get their sidecars upgraded in place next,
//! and the SidecarSet's status, computed from a snapshot with no IO.
//!
//! [`plan_upgrade`] takes an [`UpgradeSnapshot`] (the SidecarSet, the pods its selectors
//! select, its latest ControllerRevision name and recorded revisions, the expectations still in
//! flight, the cluster's capabilities and `now`) and returns a [`SidecarSetPlan`]: the
//! shared [`WorkloadPlan`] with the SidecarSet's status, pod patches and Events.
//!
//! What it does, in upstream's order:
//! 1. Pods count when they are active (not finished, not being deleted), list the SidecarSet in
//!    `kruise.io/sidecarset-injected-list`, and have every container it injects.
//! 2. Status: `matchedPods`; `updatedPods` (the pod's `kruise.io/sidecarset-hash` entry for
//!    this SidecarSet equals the SidecarSet's hash); `readyPods` (running and ready, idle
//!    hot-upgrade containers on the empty image, and the sidecars' last in-place update
//!    completed); `updatedReadyPods`; `latestRevision`; `observedGeneration`;
//!    `collisionCount`. It is returned only when it differs from the current one.
//! 3. Pods patched by an earlier plan must show the resourceVersion their patch returned before
//!    anything else is planned ([`settle_resource_versions`]).
//! 4. Nothing more with `updateStrategy.type: NotUpdate` or `paused: true`.
//! 5. Hot upgrade, second half: pods whose new hot-upgrade container has started (pod state
//!    consistent apart from the old container, the other containers ready) get the old
//!    container reset to `hotUpgradeEmptyImage`. While any pod needs this, nothing else is
//!    planned in the round.
//! 6. Otherwise pods not yet updated and matching `updateStrategy.selector` are sorted (the
//!    Kubernetes active-pods order: unscheduled, pending, not ready, ready for less time, more
//!    restarts, newer first; then `priorityStrategy`; then `scatterStrategy`, where a term whose
//!    value is `*` stands for every value the pods carry), the last `partition` of them are kept
//!    back, and the rest are upgraded while the budget lasts: a pod that is not ready costs
//!    nothing; a ready one is taken only while fewer than `maxUnavailable` (default 1, rounded
//!    up) updated pods are unavailable (not ready, or their sidecars' update not completed).
//! 7. An upgrade patches the sidecar images (for a hot-upgrade sidecar, the idle container gets
//!    the new image and becomes the working one), this SidecarSet's entries in the two hash
//!    annotations, its entry in `kruise.io/sidecarset-inplace-update-state` (the image IDs the
//!    changed containers ran, to tell when they restarted), the hot-upgrade version
//!    annotations and `patchPodMetadata`; then the pod condition `SidecarSetUpgradable` is set
//!    True for this SidecarSet when that changes it.
//! 8. A pod whose hash without images differs (something other than images changed) is not
//!    upgradable: it gets `SidecarSetUpgradable=False` (reason `UpdateImmutableField`) and the
//!    plan records a `NotUpgradablePods` Event. Beyond upstream (openkruise#1272, #928): when
//!    [`UpgradeGates::resize_supported`] is set and the pod's recorded revision shows that only
//!    sidecar `resources` (and perhaps images) changed, the pod is upgraded instead, with a
//!    [`Action::PatchPodResize`] first, within the same budget.
//!
//! [`injected_sidecar_sets`] and [`requeue_on_pod_update`] decide which pod events make a
//! SidecarSet be planned again.
//!
//! The applier carries the actions out in order and records their expectations
//! ([`Action::expectation`]). Pod patches carry the pod's `uid` and `resourceVersion`, so a
//! pod changed since the snapshot is not overwritten: the patch fails with a conflict and the
//! next plan reads the new pod.
//!
//! Differences from upstream, on purpose:
//! - A pod's in-place update state entry is restarted when it belongs to an older revision of
//!   the SidecarSet (upstream keeps the first revision and timestamp forever).
//! - The `kruise.io/sidecarset-hash-without-image` entry is rewritten with each upgrade (upstream
//!   leaves it, which is the same value unless resources were resized).
//! - Malformed `partition`, `maxUnavailable` or `selector` block the rollout with a Warning
//!   Event instead of being read as 0 or as selecting nothing.

pub mod facts;
#[cfg(test)]
mod tests;

use std::collections::{BTreeMap, BTreeSet};

use jiff::Timestamp;
use k8s_openapi::api::apps::v1::ControllerRevision;
use k8s_openapi::api::core::v1::{Pod, PodCondition, ResourceRequirements};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use kruise_api::apps::common::{InPlaceUpdateContainerStatus, InPlaceUpdateState};
use kruise_api::apps::v1beta1::{
    SidecarContainer, SidecarSet, SidecarSetStatus, SidecarSetUpdateStrategyType, UpdateScatterTerm,
};
use kruise_api::well_known::{annotations, conditions};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value, json};

use crate::admission::meta::label_selector_as_selector;
use crate::expectations::{ControllerExpectations, DEFAULT_TIMEOUT};
use crate::intstr::{IntStrError, Rounding, lenient_value, partition_replicas};
use crate::ordering::{priority_sort, scatter_sort};
use crate::pod::{ActiveRank, labels_of, name_of};
use crate::workload::{
    Action, Blocked, Event, EventType, Patch, PodPatchPurpose, PodStatusPurpose, WorkloadPlan,
    pods_by_uid, settle_resource_versions,
};

use super::{
    SidecarSetUpgradeSpec, apply_metadata_patches, current_hash, current_hash_without_image,
    is_active_pod, read_hash_annotation,
};
use facts::{
    container, hot_upgrade_pair, is_consistent_with_set, is_hot_upgrade, is_hot_upgrading,
    is_hot_upgrading_ready, is_injected_by, is_ready_for_set, is_state_consistent, pod_hash,
    pod_hash_entry, sidecar_container_names, statuses, working_hot_upgrade_containers,
};

/// `maxUnavailable` when the SidecarSet sets none.
pub const DEFAULT_MAX_UNAVAILABLE: i32 = 1;

/// What the cluster supports, as far as upgrades care.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct UpgradeGates {
    /// Pods can be resized in place (the `pods/resize` subresource, Kubernetes'
    /// InPlacePodVerticalScaling). Enables upgrading sidecars whose `resources` changed.
    #[serde(default)]
    pub resize_supported: bool,
}

/// Everything one planning round for one SidecarSet needs, already read.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct UpgradeSnapshot {
    /// The SidecarSet (v1beta1; convert a v1alpha1 one first). Its hashes are read from its
    /// `kruise.io/sidecarset-hash` and `-hash-without-image` annotations.
    pub sidecar_set: SidecarSet,
    /// The pods its `selector` and `namespaceSelector` select, in any order.
    #[serde(default)]
    pub pods: Vec<Pod>,
    /// Name of the latest ControllerRevision (written to `status.latestRevision` and to the
    /// pods' hash entries).
    #[serde(default)]
    pub latest_revision: String,
    /// The collision count revision registration settled on; the current status's when unset.
    #[serde(default)]
    pub collision_count: Option<i32>,
    /// The SidecarSet's ControllerRevisions; only read to tell a resources-only change.
    #[serde(default)]
    pub revisions: Vec<ControllerRevision>,
    /// Expectations still in flight from earlier plans.
    #[serde(default)]
    pub expectations: ControllerExpectations,
    /// What the cluster supports.
    #[serde(default)]
    pub gates: UpgradeGates,
    /// The time of planning (written into annotations and conditions).
    pub now: Timestamp,
}

/// What [`plan_upgrade`] returns.
pub type SidecarSetPlan = WorkloadPlan<SidecarSetStatus>;

/// A SidecarSet field the planner cannot read. The plan is then blocked
/// ([`Blocked::Invalid`]) with a Warning Event carrying the message.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum UpgradeError {
    /// `spec.updateStrategy.selector` is not a valid label selector.
    #[error("spec.updateStrategy.selector: {message}")]
    InvalidSelector {
        /// Why.
        message: String,
    },
    /// `spec.updateStrategy.partition` or `maxUnavailable` is malformed.
    #[error("{0}")]
    InvalidBudget(#[from] IntStrError),
}

/// Why a pod that is not updated is left alone this round.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Skip {
    /// A sidecar container is ready but its last update has not completed.
    Inconsistent,
    /// Fields other than images changed: cannot be upgraded in place.
    NotUpgradable,
}

/// How one pod not yet updated would be upgraded.
#[derive(Clone, Debug, PartialEq)]
enum Upgrade {
    /// Images only.
    Images,
    /// Resources (and perhaps images): `resources` per container name.
    Resize(Vec<(String, ResourceRequirements)>),
}

/// The facts the planner reads once per pod.
struct PodView<'p> {
    pod: &'p Pod,
    updated: bool,
    ready: bool,
    consistent: bool,
}

/// The SidecarSet's identity and hashes.
struct Ctx<'s> {
    set: &'s SidecarSet,
    name: String,
    hash: String,
    hash_without_image: String,
    latest_revision: &'s str,
    now: Timestamp,
}

/// Plans one round for the SidecarSet of `snapshot` (see the module docs).
pub fn plan_upgrade(snapshot: &UpgradeSnapshot) -> SidecarSetPlan {
    let set = &snapshot.sidecar_set;
    let ctx = Ctx {
        set,
        name: set.metadata.name.clone().unwrap_or_default(),
        hash: current_hash(set),
        hash_without_image: current_hash_without_image(set),
        latest_revision: &snapshot.latest_revision,
        now: snapshot.now,
    };
    let mut pods: Vec<&Pod> = snapshot
        .pods
        .iter()
        .filter(|p| {
            is_active_pod(p) && is_injected_by(p, &ctx.name) && is_consistent_with_set(p, set)
        })
        .collect();
    pods.sort_by(|a, b| {
        (a.metadata.namespace.as_deref(), name_of(a))
            .cmp(&(b.metadata.namespace.as_deref(), name_of(b)))
    });
    let no_names = BTreeSet::new();
    let views: Vec<PodView<'_>> = pods
        .iter()
        .map(|pod| PodView {
            pod,
            updated: pod_hash(pod, annotations::SIDECARSET_HASH, &ctx.name) == ctx.hash,
            ready: is_ready_for_set(pod, set),
            consistent: is_state_consistent(pod, set, &no_names),
        })
        .collect();

    let status = compute_status(snapshot, &views);
    let current = set.status.clone().unwrap_or_default();
    let status = (status != current).then_some(status);

    let mut expectations = snapshot.expectations.clone();
    let by_uid = pods_by_uid(pods.iter().map(|p| &p.metadata));
    if let Err(mut waiting) = settle_resource_versions::<SidecarSetStatus>(
        &mut expectations,
        |uid| by_uid.get(uid).copied(),
        snapshot.now,
        DEFAULT_TIMEOUT,
    ) {
        waiting.status = status;
        return *waiting;
    }
    let mut plan = WorkloadPlan::empty(expectations);
    plan.status = status;

    let strategy = &set.spec.update_strategy;
    if strategy.type_ == Some(SidecarSetUpdateStrategyType::NotUpdate) || strategy.paused {
        return plan;
    }

    if plan_hot_upgrade_resets(&ctx, &views, &mut plan) {
        return plan;
    }
    if views.iter().all(|v| v.updated) {
        return plan;
    }
    if let Err(err) = plan_upgrades(&ctx, snapshot, &views, &mut plan) {
        plan.events.push(Event {
            type_: EventType::Warning,
            reason: "InvalidUpdateStrategy".into(),
            message: err.to_string(),
            after_action: None,
        });
        plan.blocked = Some(Blocked::Invalid { message: err.to_string() });
    }
    plan
}

fn compute_status(snapshot: &UpgradeSnapshot, views: &[PodView<'_>]) -> SidecarSetStatus {
    let set = &snapshot.sidecar_set;
    let count = |f: &dyn Fn(&PodView<'_>) -> bool| {
        i32::try_from(views.iter().filter(|v| f(v)).count()).unwrap_or(i32::MAX)
    };
    let current = set.status.as_ref();
    SidecarSetStatus {
        observed_generation: set.metadata.generation.unwrap_or_default(),
        matched_pods: count(&|_| true),
        updated_pods: count(&|v| v.updated),
        ready_pods: count(&|v| v.ready && v.consistent),
        updated_ready_pods: count(&|v| v.updated && v.ready && v.consistent),
        latest_revision: snapshot.latest_revision.clone(),
        collision_count: Some(
            snapshot
                .collision_count
                .or(current.and_then(|s| s.collision_count))
                .unwrap_or_default(),
        ),
    }
}

/// Step 5: resets the old container of pods mid hot-upgrade whose new container runs. Returns
/// whether any pod needed it (then nothing else is planned this round).
fn plan_hot_upgrade_resets(
    ctx: &Ctx<'_>,
    views: &[PodView<'_>],
    plan: &mut SidecarSetPlan,
) -> bool {
    let hot: Vec<&SidecarContainer> =
        ctx.set.spec.containers.iter().filter(|s| is_hot_upgrade(s)).collect();
    if hot.is_empty() {
        return false;
    }
    let mut any = false;
    for view in views {
        let pod = view.pod;
        let mut names = sidecar_container_names(ctx.set);
        for sidecar in &hot {
            names.remove(&hot_upgrade_pair(pod, &sidecar.container.name).1);
        }
        if !(is_hot_upgrading(pod, ctx.set)
            && is_state_consistent(pod, ctx.set, &names)
            && is_hot_upgrading_ready(pod, ctx.set))
        {
            continue;
        }
        any = true;
        let mut notes = BTreeMap::new();
        let mut changed = Vec::new();
        for sidecar in &hot {
            let empty = &sidecar.upgrade_strategy.hot_upgrade_empty_image;
            let (work, other) = hot_upgrade_pair(pod, &sidecar.container.name);
            if container(pod, &other).and_then(|c| c.image.as_deref()) == Some(empty.as_str()) {
                continue;
            }
            changed.push((other.clone(), empty.clone()));
            notes.insert(
                format!("{}{other}", annotations::SIDECARSET_VERSION_PREFIX),
                Value::from("0"),
            );
            notes.insert(
                format!("{}{work}", annotations::SIDECARSET_VERSION_ALT_PREFIX),
                Value::from("0"),
            );
        }
        let names: Vec<&str> = changed.iter().map(|(n, _)| n.as_str()).collect();
        notes.insert(
            annotations::SIDECARSET_INPLACE_UPDATE_STATE.to_owned(),
            Value::from(in_place_state_annotation(ctx, pod, &names, false)),
        );
        plan.actions.push(pod_patch(
            pod,
            PodPatchPurpose::SidecarSetHotUpgradeReset,
            notes,
            &changed,
        ));
        plan.events.push(Event {
            type_: EventType::Normal,
            reason: "ResetContainerSucceed".into(),
            message: format!(
                "reset the old hot-upgrade container(s) {} of pod {} to the empty image",
                names.join(", "),
                pod_key(pod)
            ),
            after_action: Some(plan.actions.len() - 1),
        });
    }
    any
}

/// Step 6: picks the pods to upgrade and patches them.
fn plan_upgrades(
    ctx: &Ctx<'_>,
    snapshot: &UpgradeSnapshot,
    views: &[PodView<'_>],
    plan: &mut SidecarSetPlan,
) -> Result<(), UpgradeError> {
    let strategy = &ctx.set.spec.update_strategy;
    let selector = match &strategy.selector {
        None => None,
        Some(s) => Some(
            label_selector_as_selector(Some(s))
                .map_err(|message| UpgradeError::InvalidSelector { message })?,
        ),
    };
    let total = i32::try_from(views.len()).unwrap_or(i32::MAX);
    let partition = partition_replicas(strategy.partition.as_ref(), Some(total))
        .map_err(|e| e.with_field("spec.updateStrategy.partition"))?;
    let max_unavailable = match &strategy.max_unavailable {
        None => DEFAULT_MAX_UNAVAILABLE,
        Some(v) => lenient_value(v, total, Rounding::Up)
            .map_err(|e| e.with_field("spec.updateStrategy.maxUnavailable"))?,
    };

    let mut waiting: Vec<(usize, Upgrade)> = Vec::new();
    let mut not_upgradable: Vec<usize> = Vec::new();
    for (i, view) in views.iter().enumerate() {
        if view.updated {
            continue;
        }
        if selector.as_ref().is_some_and(|s| !s.matches(labels_of(view.pod))) {
            continue;
        }
        match classify(ctx, snapshot, view.pod) {
            Ok(upgrade) => waiting.push((i, upgrade)),
            Err(Skip::NotUpgradable) => not_upgradable.push(i),
            Err(_) => {}
        }
    }

    for &i in &not_upgradable {
        if let Some(action) = upgradable_condition(ctx, views[i].pod, false) {
            plan.actions.push(action);
        }
    }
    if !not_upgradable.is_empty() {
        plan.events.push(Event {
            type_: EventType::Normal,
            reason: "NotUpgradablePods".into(),
            message: format!(
                "{} pod(s) cannot have their sidecars upgraded in place (fields other than \
                 images changed); they are skipped this round",
                not_upgradable.len()
            ),
            after_action: None,
        });
    }

    let order = sort_update_indexes(ctx, views, waiting.iter().map(|(i, _)| *i).collect());
    let keep = usize::try_from(partition).unwrap_or_default();
    let candidates = order.len().saturating_sub(keep);
    let mut unavailable = views.iter().filter(|v| v.updated && (!v.consistent || !v.ready)).count();
    let max_unavailable = usize::try_from(max_unavailable).unwrap_or_default();
    let upgrades: BTreeMap<usize, &Upgrade> = waiting.iter().map(|(i, u)| (*i, u)).collect();
    let mut upgraded = Vec::new();
    for &i in order.iter().take(candidates) {
        if views[i].ready {
            if unavailable >= max_unavailable {
                break;
            }
            unavailable += 1;
        }
        let Some(upgrade) = upgrades.get(&i) else { continue };
        upgrade_pod(ctx, views[i].pod, upgrade, plan);
        upgraded.push(name_of(views[i].pod).to_owned());
    }
    if !upgraded.is_empty() {
        plan.events.push(Event {
            type_: EventType::Normal,
            reason: "UpgradeSidecars".into(),
            message: format!("upgrading the sidecars of pod(s) {}", upgraded.join(", ")),
            after_action: None,
        });
    }
    Ok(())
}

/// Whether and how a pod not yet updated can be upgraded (upstream's
/// `IsSidecarSetUpgradable`, plus the resources-only case).
fn classify(ctx: &Ctx<'_>, snapshot: &UpgradeSnapshot, pod: &Pod) -> Result<Upgrade, Skip> {
    let upgrade = if pod_hash(pod, annotations::SIDECARSET_HASH_WITHOUT_IMAGE, &ctx.name)
        == ctx.hash_without_image
    {
        Upgrade::Images
    } else if snapshot.gates.resize_supported
        && let Some(changes) = resources_only_change(ctx, &snapshot.revisions, pod)
    {
        Upgrade::Resize(changes)
    } else {
        return Err(Skip::NotUpgradable);
    };
    let ready: BTreeSet<&str> =
        statuses(pod).iter().filter(|s| s.ready).map(|s| s.name.as_str()).collect();
    for name in sidecar_container_names(ctx.set) {
        if ready.contains(name.as_str())
            && !is_state_consistent(pod, ctx.set, &BTreeSet::from([name]))
        {
            return Err(Skip::Inconsistent);
        }
    }
    Ok(upgrade)
}

/// The sidecars whose `resources` changed between the revision the pod records and the
/// SidecarSet, when nothing else but images changed; `None` otherwise (no recorded revision,
/// another field changed, or a changed sidecar is hot-upgraded or sized by `resourcesPolicy`).
fn resources_only_change(
    ctx: &Ctx<'_>,
    revisions: &[ControllerRevision],
    pod: &Pod,
) -> Option<Vec<(String, ResourceRequirements)>> {
    let entry = pod_hash_entry(pod, annotations::SIDECARSET_HASH, &ctx.name)?;
    let revision = revisions
        .iter()
        .find(|r| r.metadata.name.as_deref() == Some(entry.controller_revision.as_str()))?;
    let spec = revision.data.0.get("spec")?;
    let list = |key: &str| -> Option<Vec<SidecarContainer>> {
        match spec.get(key) {
            None | Some(Value::Null) => Some(Vec::new()),
            Some(v) => serde_json::from_value(v.clone()).ok(),
        }
    };
    let (old, old_init) = (list("containers")?, list("initContainers")?);
    let new = &ctx.set.spec.containers;
    if old_init != ctx.set.spec.init_containers || old.len() != new.len() {
        return None;
    }
    let strip = |c: &SidecarContainer| {
        let mut c = c.clone();
        c.container.image = None;
        c.container.resources = None;
        c
    };
    let mut changes = Vec::new();
    for (before, after) in old.iter().zip(new) {
        if strip(before) != strip(after) {
            return None;
        }
        if before.container.resources != after.container.resources {
            if is_hot_upgrade(after) || after.resources_policy.is_some() {
                return None;
            }
            changes.push((
                after.container.name.clone(),
                after.container.resources.clone().unwrap_or_default(),
            ));
        }
    }
    (!changes.is_empty()).then_some(changes)
}

/// The update order of the pods at `indexes` (upstream's `SortUpdateIndexes`).
fn sort_update_indexes(
    ctx: &Ctx<'_>,
    views: &[PodView<'_>],
    mut indexes: Vec<usize>,
) -> Vec<usize> {
    indexes.sort_by_cached_key(|&i| (ActiveRank::of_pod(views[i].pod), name_of(views[i].pod)));
    let labels: Vec<_> = views.iter().map(|v| labels_of(v.pod)).collect();
    let strategy = &ctx.set.spec.update_strategy;
    if let Some(priority) = &strategy.priority_strategy {
        indexes = priority_sort(priority, &labels, indexes);
    }
    if !strategy.scatter_strategy.is_empty() {
        let terms = expand_scatter_terms(&strategy.scatter_strategy, &labels);
        indexes = scatter_sort(&terms, &labels, indexes);
    }
    indexes
}

/// Scatter terms with each `value: "*"` replaced by one term per value the pods carry for its
/// key (in pod order), duplicates dropped.
pub fn expand_scatter_terms(
    terms: &[UpdateScatterTerm],
    pod_labels: &[&BTreeMap<String, String>],
) -> Vec<UpdateScatterTerm> {
    let mut out: Vec<UpdateScatterTerm> = Vec::new();
    let mut push = |term: UpdateScatterTerm| {
        if !out.iter().any(|t| t.key == term.key && t.value == term.value) {
            out.push(term);
        }
    };
    for term in terms {
        if term.value != "*" {
            push(term.clone());
            continue;
        }
        for labels in pod_labels {
            if let Some(value) = labels.get(&term.key) {
                push(UpdateScatterTerm { key: term.key.clone(), value: value.clone() });
            }
        }
    }
    out
}

/// Appends the actions that upgrade `pod`: the resize (when any), the pod patch, and the
/// `SidecarSetUpgradable` condition when it changes.
fn upgrade_pod(ctx: &Ctx<'_>, pod: &Pod, upgrade: &Upgrade, plan: &mut SidecarSetPlan) {
    let notes_before = pod.metadata.annotations.clone().unwrap_or_default();
    let mut notes: BTreeMap<String, Value> = BTreeMap::new();
    let mut changed: Vec<(String, String)> = Vec::new();
    let set_version = ctx.set.metadata.resource_version.clone().unwrap_or_default();
    let mut working = working_hot_upgrade_containers(pod);
    let mut hot_changed = false;
    for sidecar in &ctx.set.spec.containers {
        let Some(image) = sidecar.container.image.as_deref() else { continue };
        if is_hot_upgrade(sidecar) {
            let (target, other) = hot_upgrade_target(ctx, pod, sidecar);
            if container(pod, &other).and_then(|c| c.image.as_deref()) == Some(image) {
                continue;
            }
            changed.push((target.clone(), image.to_owned()));
            working.insert(sidecar.container.name.clone(), target.clone());
            hot_changed = true;
            let older_version = notes_before
                .get(&format!("{}{other}", annotations::SIDECARSET_VERSION_PREFIX))
                .cloned()
                .unwrap_or_default();
            notes.insert(
                format!("{}{target}", annotations::SIDECARSET_VERSION_PREFIX),
                Value::from(set_version.clone()),
            );
            notes.insert(
                format!("{}{target}", annotations::SIDECARSET_VERSION_ALT_PREFIX),
                Value::from(older_version),
            );
            notes.insert(
                format!("{}{other}", annotations::SIDECARSET_VERSION_ALT_PREFIX),
                Value::from(set_version.clone()),
            );
        } else {
            let name = &sidecar.container.name;
            if container(pod, name).and_then(|c| c.image.as_deref()) == Some(image) {
                continue;
            }
            changed.push((name.clone(), image.to_owned()));
        }
    }
    if hot_changed {
        notes.insert(
            annotations::SIDECARSET_WORKING_HOTUPGRADE_CONTAINER.to_owned(),
            Value::from(serde_json::to_string(&working).unwrap_or_default()),
        );
    }
    for (key, hash) in [
        (annotations::SIDECARSET_HASH, &ctx.hash),
        (annotations::SIDECARSET_HASH_WITHOUT_IMAGE, &ctx.hash_without_image),
    ] {
        notes.insert(key.to_owned(), Value::from(hash_annotation(ctx, pod, key, hash)));
    }
    let names: Vec<&str> = changed.iter().map(|(n, _)| n.as_str()).collect();
    let resized = matches!(upgrade, Upgrade::Resize(_));
    notes.insert(
        annotations::SIDECARSET_INPLACE_UPDATE_STATE.to_owned(),
        Value::from(in_place_state_annotation(ctx, pod, &names, resized)),
    );
    // patchPodMetadata: Overwrite and MergePatchJson take effect again with an upgrade.
    let mut patched = pod.clone();
    if apply_metadata_patches(&mut patched, &ctx.name, &ctx.set.spec.patch_pod_metadata).is_ok() {
        for (key, value) in patched.metadata.annotations.unwrap_or_default() {
            if notes_before.get(&key) != Some(&value) && !notes.contains_key(&key) {
                notes.insert(key, Value::from(value));
            }
        }
    }

    if let Upgrade::Resize(changes) = upgrade {
        let containers: Vec<Value> = changes
            .iter()
            .map(|(name, resources)| json!({ "name": name, "resources": resources }))
            .collect();
        plan.actions.push(Action::PatchPodResize {
            namespace: pod.metadata.namespace.clone(),
            name: name_of(pod).to_owned(),
            uid: pod.metadata.uid.clone().unwrap_or_default(),
            patch: Patch::strategic(json!({ "spec": { "containers": containers } })),
        });
    }
    plan.actions.push(pod_patch(pod, PodPatchPurpose::SidecarSetUpgrade, notes, &changed));
    if let Some(action) = upgradable_condition(ctx, pod, true) {
        plan.actions.push(action);
    }
}

/// Which container of a hot-upgrade sidecar takes the new image, and the other one (upstream's
/// `findContainerToHotUpgrade`): the one on the empty image; else the one not running (when
/// exactly one is); else the older one.
fn hot_upgrade_target(ctx: &Ctx<'_>, pod: &Pod, sidecar: &SidecarContainer) -> (String, String) {
    let (first, second) = super::hot_upgrade_names(&sidecar.container.name);
    let empty = sidecar.upgrade_strategy.hot_upgrade_empty_image.as_str();
    let image = |n: &str| container(pod, n).and_then(|c| c.image.as_deref()).unwrap_or_default();
    if image(&first) == empty {
        return (first, second);
    }
    if image(&second) == empty {
        return (second, first);
    }
    let running = |n: &String| {
        statuses(pod).iter().any(|s| &s.name == n && s.ready)
            && is_state_consistent(pod, ctx.set, &BTreeSet::from([n.clone()]))
    };
    match (running(&first), running(&second)) {
        (true, false) => (second, first),
        (false, true) => (first, second),
        _ => {
            let (work, older) = hot_upgrade_pair(pod, &sidecar.container.name);
            (older, work)
        }
    }
}

/// The pod's hash annotation `key` with this SidecarSet's entry set to `hash` (other
/// SidecarSets' entries kept; an unreadable annotation starts afresh).
fn hash_annotation(ctx: &Ctx<'_>, pod: &Pod, key: &str, hash: &str) -> String {
    let mut entries = read_hash_annotation(pod, key).unwrap_or_default();
    let mut list: BTreeSet<String> = sidecar_container_names_of_spec(ctx.set);
    list.extend(
        ctx.set
            .spec
            .init_containers
            .iter()
            .filter(|c| super::hash::is_native_sidecar(&c.container))
            .map(|c| c.container.name.clone()),
    );
    entries.insert(
        ctx.name.clone(),
        SidecarSetUpgradeSpec {
            update_timestamp: Some(ctx.now.strftime("%Y-%m-%dT%H:%M:%SZ").to_string()),
            hash: hash.to_owned(),
            sidecar_set_name: ctx.name.clone(),
            sidecar_list: Some(list.into_iter().collect()),
            controller_revision: if key == annotations::SIDECARSET_HASH {
                ctx.latest_revision.to_owned()
            } else {
                String::new()
            },
        },
    );
    serde_json::to_string(&entries).unwrap_or_default()
}

fn sidecar_container_names_of_spec(set: &SidecarSet) -> BTreeSet<String> {
    set.spec.containers.iter().map(|c| c.container.name.clone()).collect()
}

/// The pod's `kruise.io/sidecarset-inplace-update-state` with this SidecarSet's entry
/// recording the image IDs the `changed` containers run now.
fn in_place_state_annotation(ctx: &Ctx<'_>, pod: &Pod, changed: &[&str], resized: bool) -> String {
    let mut states: BTreeMap<String, InPlaceUpdateState> =
        facts::in_place_states(pod).ok().flatten().unwrap_or_default();
    let fresh = || InPlaceUpdateState {
        revision: ctx.hash.clone(),
        update_timestamp: Some(Time(ctx.now)),
        ..Default::default()
    };
    let state = states.entry(ctx.name.clone()).or_insert_with(fresh);
    if state.revision != ctx.hash {
        *state = fresh();
    }
    state.update_resources |= resized;
    for name in changed {
        let image_id = statuses(pod)
            .iter()
            .find(|s| s.name == *name)
            .map(|s| s.image_id.clone())
            .unwrap_or_default();
        state
            .last_container_statuses
            .insert((*name).to_owned(), InPlaceUpdateContainerStatus { image_id });
    }
    serde_json::to_string(&states).unwrap_or_default()
}

/// A pod patch: annotations, and new images for `containers` (name, image). It names the pod's
/// `uid` and `resourceVersion`, so that it applies only to the pod the plan read.
fn pod_patch(
    pod: &Pod,
    purpose: PodPatchPurpose,
    notes: BTreeMap<String, Value>,
    containers: &[(String, String)],
) -> Action {
    let mut metadata = Map::new();
    metadata.insert("uid".into(), json!(pod.metadata.uid));
    if let Some(rv) = &pod.metadata.resource_version {
        metadata.insert("resourceVersion".into(), json!(rv));
    }
    metadata.insert("annotations".into(), Value::Object(notes.into_iter().collect()));
    let mut body = json!({ "metadata": metadata });
    if !containers.is_empty() {
        let list: Vec<Value> = containers
            .iter()
            .map(|(name, image)| json!({ "name": name, "image": image }))
            .collect();
        body["spec"] = json!({ "containers": list });
    }
    Action::PatchPod {
        namespace: pod.metadata.namespace.clone(),
        name: name_of(pod).to_owned(),
        uid: pod.metadata.uid.clone().unwrap_or_default(),
        purpose,
        patch: Patch::strategic(body),
    }
}

/// The status patch that records whether this SidecarSet can upgrade the pod in the pod's
/// `SidecarSetUpgradable` condition, when that changes the condition. The condition's message
/// is a JSON map from SidecarSet name to `true`/`false`; it is True (reason
/// `AllSidecarsetUpgradable`) when no SidecarSet says `false`, else False (reason
/// `UpdateImmutableField`).
fn upgradable_condition(ctx: &Ctx<'_>, pod: &Pod, upgradable: bool) -> Option<Action> {
    let condition = next_upgradable_condition(pod, &ctx.name, upgradable, ctx.now)?;
    Some(Action::PatchPodStatus {
        namespace: pod.metadata.namespace.clone(),
        name: name_of(pod).to_owned(),
        uid: pod.metadata.uid.clone().unwrap_or_default(),
        purpose: PodStatusPurpose::SidecarSetUpgradable,
        patch: Patch::strategic(json!({ "status": { "conditions": [condition] } })),
    })
}

/// The pod's `SidecarSetUpgradable` condition with `set_name` marked `upgradable`; `None` when
/// the condition would not change.
pub fn next_upgradable_condition(
    pod: &Pod,
    set_name: &str,
    upgradable: bool,
    now: Timestamp,
) -> Option<PodCondition> {
    let kind = conditions::pod::SIDECARSET_UPGRADABLE;
    let old = crate::pod::condition(pod, kind);
    let mut marks: BTreeMap<String, Value> = old
        .and_then(|c| c.message.as_deref())
        .filter(|m| !m.is_empty())
        .and_then(|m| serde_json::from_str(m).ok())
        .unwrap_or_default();
    marks.insert(set_name.to_owned(), Value::Bool(upgradable));
    let all = marks.values().all(|v| v != &Value::Bool(false));
    let (status, reason) =
        if all { ("True", "AllSidecarsetUpgradable") } else { ("False", "UpdateImmutableField") };
    let message = serde_json::to_string(&marks).unwrap_or_default();
    if let Some(old) = old
        && old.status == status
        && old.reason.as_deref() == Some(reason)
        && old.message.as_deref() == Some(message.as_str())
    {
        return None;
    }
    let transition = match old {
        Some(old) if old.status == status => old.last_transition_time.clone(),
        _ => Some(Time(now)),
    };
    Some(PodCondition {
        type_: kind.to_owned(),
        status: status.to_owned(),
        reason: Some(reason.to_owned()),
        message: Some(message),
        last_transition_time: transition,
        last_probe_time: old.and_then(|c| c.last_probe_time.clone()),
        ..Default::default()
    })
}

fn pod_key(pod: &Pod) -> String {
    format!("{}/{}", pod.metadata.namespace.as_deref().unwrap_or("default"), name_of(pod))
}

/// The SidecarSets a pod names in `kruise.io/sidecarset-injected-list`: those to plan again
/// when the pod is created, changes or goes away.
pub fn injected_sidecar_sets(pod: &Pod) -> Vec<&str> {
    pod.metadata
        .annotations
        .as_ref()
        .and_then(|a| a.get(annotations::SIDECARSET_INJECTED_LIST))
        .map(|list| list.split(',').filter(|n| !n.is_empty()).collect())
        .unwrap_or_default()
}

/// How long the pod's move to consistent (or away from it) waits before the SidecarSet is
/// planned again, as upstream delays it.
pub const CONSISTENCY_REQUEUE_DELAY: jiff::SignedDuration = jiff::SignedDuration::from_secs(5);

/// Whether an update of a pod from `old` to `new` should make the SidecarSet `set` (one the
/// pod names in its injected list) be planned again, and after how long (upstream's pod event
/// handler): never for the same resourceVersion, for a pod that lacks the SidecarSet's
/// containers, or under `NotUpdate`; at once when the pod starts being deleted or its
/// readiness flips; after [`CONSISTENCY_REQUEUE_DELAY`] when its sidecars' consistency flips;
/// at once when its labels change and `updateStrategy.selector` is set. Creations and
/// deletions always requeue.
pub fn requeue_on_pod_update(
    old: &Pod,
    new: &Pod,
    set: &SidecarSet,
) -> Option<jiff::SignedDuration> {
    if old.metadata.resource_version == new.metadata.resource_version
        || !is_consistent_with_set(new, set)
        || set.spec.update_strategy.type_ == Some(SidecarSetUpdateStrategyType::NotUpdate)
    {
        return None;
    }
    let (old_deleting, new_deleting) =
        (old.metadata.deletion_timestamp.is_some(), new.metadata.deletion_timestamp.is_some());
    if !old_deleting
        && (new_deleting || crate::pod::is_pod_ready(old) != crate::pod::is_pod_ready(new))
    {
        return Some(jiff::SignedDuration::ZERO);
    }
    let none = BTreeSet::new();
    if is_state_consistent(old, set, &none) != is_state_consistent(new, set, &none) {
        return Some(CONSISTENCY_REQUEUE_DELAY);
    }
    (old.metadata.labels != new.metadata.labels && set.spec.update_strategy.selector.is_some())
        .then_some(jiff::SignedDuration::ZERO)
}
