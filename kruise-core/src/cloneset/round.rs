//! One planning round, top-down: expectations, housekeeping, revisions, scale, update, status.

use std::collections::{BTreeMap, BTreeSet};

use jiff::{SignedDuration, Timestamp};
use k8s_openapi::api::core::v1::{PersistentVolumeClaim, Pod};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kruise_api::apps::v1beta1::CloneSetStatus;
use kruise_api::well_known::{conditions, labels};
use serde_json::json;

use super::CloneSetPlan;
use super::podinfo::{InPlay, PodInfo, RevisionName};
use super::revisions::{self, Revision};
use super::snapshot::{CloneSetSnapshot, FeatureGates};
use super::spec::Spec;
use super::{SpecError, scale, status, update};
use crate::ordering::OrderLabels;
use crate::workload::{Action, Blocked, Event, EventType, LabelLookup, Patch};

/// How many of the pods it moves the update pass brings into cache at a time: enough for
/// many reads in flight, few enough to stay in a core's cache until used.
pub(crate) const TOUCH_AHEAD: usize = 128;

/// The state shared by the scale and update passes.
pub(crate) struct Round<'r, 'a> {
    pub spec: &'r Spec<'a>,
    pub gates: &'r FeatureGates,
    pub snapshot: &'a CloneSetSnapshot,
    pub now: Timestamp,
    /// Active pods the CloneSet keeps.
    pub pods: Vec<PodInfo<'a>>,
    /// Each pod's values for the label keys the update strategy reads (`spec.order`).
    pub order_labels: OrderLabels<'a>,
    /// Each pod's [`crate::pod::ActiveRank::packed`], `u128::MAX` where it does not pack
    /// (no packed rank reaches it).
    pub ranks: Vec<u128>,
    /// Live PVCs the CloneSet keeps.
    pub pvcs: Vec<&'a PersistentVolumeClaim>,
    pub current: Revision,
    pub update: Revision,
    /// Existing revisions, oldest first.
    pub revisions: Vec<revisions::RevView<'a>>,
    pub actions: Vec<Action>,
    pub events: Vec<Event>,
    pub requeue: Option<SignedDuration>,
    /// In-place update options for this CloneSet.
    pub in_place_options: crate::inplace::UpdateOptions,
    /// In-place changes by (old revision index, target revision name), computed once.
    pub in_place_specs: BTreeMap<(usize, String), Option<crate::inplace::UpdateSpec>>,
    /// Patch bodies shared by many pods' actions.
    pub shared_patches: SharedPatches,
}

pub(crate) use crate::workload::inplace::SharedPatches;

impl crate::workload::inplace::PlanSink for Round<'_, '_> {
    fn actions(&mut self) -> &mut Vec<Action> {
        &mut self.actions
    }
    fn shared_patches(&mut self) -> &mut SharedPatches {
        &mut self.shared_patches
    }
    fn requeue_after(&mut self, after: SignedDuration) {
        Round::requeue_after(self, after);
    }
}

impl Round<'_, '_> {
    /// Records an Event; `after_last_action` ties it to the action just planned.
    pub(crate) fn event(
        &mut self,
        type_: EventType,
        reason: &'static str,
        message: String,
        after_last_action: bool,
    ) {
        let after_action = if after_last_action { self.actions.len().checked_sub(1) } else { None };
        self.events.push(Event { type_, reason: reason.into(), message, after_action });
    }

    /// Asks to plan again after `after` (keeps the soonest).
    pub(crate) fn requeue_after(&mut self, after: SignedDuration) {
        if after <= SignedDuration::ZERO {
            return;
        }
        self.requeue = Some(self.requeue.map_or(after, |r| r.min(after)));
    }
}

/// Plans one reconcile of `snapshot` at `now`.
pub(crate) fn plan(snapshot: &CloneSetSnapshot, now: Timestamp) -> CloneSetPlan {
    let mut expectations = snapshot.expectations.clone();
    let cs = match snapshot.cloneset.to_v1beta1() {
        Ok(cs) => cs,
        Err(err) => return invalid(expectations, SpecError::Conversion(err.to_string())),
    };
    let mut warnings = Vec::new();
    let spec =
        match Spec::parse(&cs, snapshot.options.scaling_exclude_preparing_delete, &mut warnings) {
            Ok(spec) => spec,
            Err(err) => return invalid(expectations, err),
        };
    let timeout = snapshot.options.expectation_timeout;

    // 1. Scale expectations: observe what the snapshot shows, then wait or expire.
    let owned =
        snapshot.pods.iter().map(|p| p.metadata()).chain(snapshot.pvcs.iter().map(|p| &p.metadata));
    let events =
        match crate::workload::settle_scale_expectations(&mut expectations, owned, now, timeout) {
            Ok(events) => events,
            Err(plan) => return *plan,
        };

    // 2. Pods the CloneSet keeps, and resourceVersion expectations on them.
    // One pass over the pods, so each pod is read while it is in cache: sort out the inactive
    // pods and those the selector no longer matches, and compute the facts of the rest. The
    // revisions depend on the CloneSet only; an error there is reported after the
    // resourceVersion expectations, as before.
    let resolved = revisions::resolve(&cs, &snapshot.revisions);
    let in_play = resolved.as_ref().ok().map(|r| InPlay {
        update: RevisionName::new(&r.update.name),
        current: RevisionName::new(&r.current.name),
    });
    let mut inactive = Vec::new();
    let mut released = Vec::new();
    let mut kept = Vec::with_capacity(snapshot.pods.len());
    let mut pods: Vec<PodInfo<'_>> = Vec::with_capacity(snapshot.pods.len());
    let mut order_labels = OrderLabels::with_capacity(&spec.order, snapshot.pods.len());
    let mut ranks: Vec<u128> = Vec::with_capacity(snapshot.pods.len());
    let mut soonest_available = None;
    // The label keys read besides the planner's own: the selector's, then the update order's.
    let mut lookup = LabelLookup::default();
    let selector_slots: Vec<usize> = spec.selector.keys().iter().map(|&k| lookup.slot(k)).collect();
    let order_slots: Vec<usize> = spec.order.keys().iter().map(|&k| lookup.slot(k)).collect();
    let mut values: Vec<Option<&str>> = vec![None; lookup.len()];
    let available_before = super::podinfo::available_before(&spec, now);
    for pod in &snapshot.pods {
        let facts = pod.facts();
        if !facts.active() {
            inactive.push(pod.metadata());
            continue;
        }
        lookup.fill(facts, &mut values);
        if !spec.selector.matches_values(|r| selector_slots.get(r).and_then(|&s| values[s])) {
            released.push(pod.pod());
            continue;
        }
        kept.push(pod);
        // Without revisions the plan stops there; only the pods' fate is needed until then.
        if let Some(in_play) = &in_play {
            let (info, available_at) =
                PodInfo::with_threshold(pod, &spec, in_play, now, available_before);
            pods.push(info);
            ranks.push(pod.facts().packed_rank().unwrap_or(u128::MAX));
            if let Some(at) = available_at {
                soonest_available = Some(soonest_available.map_or(at, |s: Timestamp| s.min(at)));
            }
            order_labels.push_row_for(&spec.order, order_slots.iter().map(|&s| values[s]));
        }
    }
    if !expectations.resource_versions.is_empty() {
        let by_uid = crate::workload::pods_by_uid(kept.iter().map(|p| p.metadata()));
        let observed = |uid: &str| by_uid.get(uid).copied();
        let settled =
            crate::workload::settle_resource_versions(&mut expectations, observed, now, timeout);
        if let Err(plan) = settled {
            return *plan;
        }
    }

    // 3. Revisions.
    let resolved = match resolved {
        Ok(resolved) => resolved,
        Err(err) => return invalid(expectations, err),
    };

    let mut round = Round {
        spec: &spec,
        gates: &snapshot.feature_gates,
        snapshot,
        now,
        pods,
        order_labels,
        ranks,
        pvcs: Vec::new(),
        current: resolved.current,
        update: resolved.update,
        revisions: resolved.sorted,
        actions: Vec::new(),
        events,
        requeue: None,
        in_place_options: crate::inplace::UpdateOptions::default(),
        in_place_specs: BTreeMap::new(),
        shared_patches: SharedPatches::default(),
    };
    round.in_place_options = super::inplace_glue::options(&round);
    for warning in warnings {
        round.event(EventType::Warning, "InvalidSpec", warning, false);
    }

    // 4. Housekeeping: PVCs of pods that are gone, and pods the selector no longer matches.
    round.pvcs = cleanup_pvcs(&mut round, &inactive);
    for pod in released {
        release(&mut round, pod);
    }
    let revision_actions = resolved.actions;
    round.actions.extend(revision_actions);

    // 5. Scale, then update.
    let mut new_status = CloneSetStatus {
        observed_generation: cs.metadata.generation.unwrap_or(0),
        current_revision: round.current.name.clone(),
        update_revision: round.update.name.clone(),
        collision_count: Some(resolved.collision_count),
        label_selector: spec.selector.render(),
        conditions: cs.status.as_ref().map(|s| s.conditions.clone()).unwrap_or_default(),
        ..Default::default()
    };
    if cs.metadata.deletion_timestamp.is_none() {
        let scaling = match scale::scale(&mut round) {
            Ok(scaling) => scaling,
            Err(message) => {
                status::set_failure(
                    &mut new_status,
                    conditions::cloneset::FAILED_SCALE,
                    message,
                    now,
                );
                true
            }
        };
        if !scaling && let Err(message) = update::update(&mut round) {
            status::set_failure(&mut new_status, conditions::cloneset::FAILED_UPDATE, message, now);
        }
    }

    // 6. Status and cleanup.
    status::count(&mut new_status, &spec, &round.pods);
    if let Some(after) = status::progressing(&mut new_status, &spec, now) {
        round.requeue_after(after);
    }
    if spec.min_ready_seconds > 0
        && let Some(at) = soonest_available
    {
        let wait = at.duration_since(now);
        round.requeue_after(crate::workload::round_up_seconds(wait));
    }
    truncate_pods_to_delete(&mut round, &cs);
    let current_name = round.current.name.clone();
    let update_name = round.update.name.clone();
    let history = revisions::truncate_history(
        &spec,
        &round.revisions,
        &round.pods,
        &current_name,
        &update_name,
    );
    round.actions.extend(history);
    // Last, so that a job the API server refuses holds up nothing else.
    super::predownload::plan(&mut round);

    let old_status = cs.status.clone().unwrap_or_default();
    let status = status::differs(&old_status, &new_status).then_some(new_status);
    CloneSetPlan {
        actions: round.actions,
        status,
        events: round.events,
        requeue_after: round.requeue,
        expectations,
        blocked: None,
    }
}

fn invalid(
    expectations: crate::expectations::ControllerExpectations,
    err: SpecError,
) -> CloneSetPlan {
    let mut plan = CloneSetPlan::empty(expectations);
    plan.blocked = Some(Blocked::Invalid { message: err.to_string() });
    plan
}

/// Upstream's `cleanupPVCs` (only without `enablePVCReuse`): PVCs whose pod is active are
/// kept; PVCs whose pod has finished are handed to that pod, so they go with it; the rest are
/// deleted. Returns the PVCs kept. With `enablePVCReuse`, every live PVC is kept.
fn cleanup_pvcs<'a>(
    round: &mut Round<'_, 'a>,
    inactive: &[&'a ObjectMeta],
) -> Vec<&'a PersistentVolumeClaim> {
    let live: Vec<&'a PersistentVolumeClaim> =
        round.snapshot.pvcs.iter().filter(|p| p.metadata.deletion_timestamp.is_none()).collect();
    if round.spec.enable_pvc_reuse || live.is_empty() {
        return live;
    }
    let active_ids: BTreeSet<&str> =
        round.pods.iter().map(|p| p.instance_id()).filter(|id| !id.is_empty()).collect();
    let mut inactive_ids: BTreeMap<&str, &ObjectMeta> = BTreeMap::new();
    for pod in inactive {
        if let Some(id) = pod.labels.as_ref().and_then(|l| l.get(labels::CLONESET_INSTANCE_ID)) {
            inactive_ids.insert(id.as_str(), pod);
        }
    }
    let mut kept = Vec::new();
    for pvc in live {
        let id = pvc
            .metadata
            .labels
            .as_ref()
            .and_then(|l| l.get(labels::CLONESET_INSTANCE_ID))
            .map(String::as_str)
            .unwrap_or_default();
        let name = pvc.metadata.name.clone().unwrap_or_default();
        if active_ids.contains(id) {
            kept.push(pvc);
        } else if let Some(pod) = inactive_ids.get(id) {
            let mut refs: Vec<serde_json::Value> = pvc
                .metadata
                .owner_references
                .iter()
                .flatten()
                .filter(|r| r.uid != round.spec.uid)
                .map(|r| serde_json::to_value(r).unwrap_or_default())
                .collect();
            let pod_uid = pod.uid.clone().unwrap_or_default();
            if !pvc.metadata.owner_references.iter().flatten().any(|r| r.uid == pod_uid) {
                refs.push(json!({
                    "apiVersion": "v1",
                    "kind": "Pod",
                    "name": pod.name.clone().unwrap_or_default(),
                    "uid": pod_uid,
                }));
            }
            round.actions.push(Action::PatchPvc {
                name,
                patch: Patch::merge(json!({
                    "metadata": {
                        "ownerReferences": refs,
                        "resourceVersion": pvc.metadata.resource_version,
                    }
                })),
            });
        } else {
            round.actions.push(Action::DeletePvc {
                name,
                uid: pvc.metadata.uid.clone().unwrap_or_default(),
            });
        }
    }
    kept
}

/// Drops the CloneSet's ownerReference from a pod its selector no longer matches.
fn release(round: &mut Round<'_, '_>, pod: &Pod) {
    if round.spec.uid.is_empty() {
        return;
    }
    round.actions.push(crate::workload::release_pod(pod, round.spec.uid));
}

/// Drops names from `scaleStrategy.podsToDelete` that match no pod any more.
fn truncate_pods_to_delete(round: &mut Round<'_, '_>, cs: &kruise_api::apps::v1beta1::CloneSet) {
    let listed = &cs.spec.scale_strategy.pods_to_delete;
    if listed.is_empty() {
        return;
    }
    let names: BTreeSet<&str> = round.pods.iter().map(|p| p.name()).collect();
    let keep: Vec<&String> = listed.iter().filter(|n| names.contains(n.as_str())).collect();
    if keep.len() == listed.len() {
        return;
    }
    round.actions.push(Action::PatchWorkload {
        patch: Patch::merge(json!({
            "metadata": { "resourceVersion": cs.metadata.resource_version },
            "spec": { "scaleStrategy": { "podsToDelete": keep } },
        })),
    });
}
