//! One planning round, top-down: expectations, revisions, slots, scale, scale-in, update,
//! status.

use std::collections::{BTreeMap, BTreeSet};

use jiff::{SignedDuration, Timestamp};
use k8s_openapi::api::apps::v1::StatefulSetCondition;
use k8s_openapi::api::core::v1::{PersistentVolumeClaim, Pod};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use kruise_api::apps::v1beta1::{StatefulSetStatus, VolumeClaimStatus};
use kruise_api::well_known::annotations;
use kruise_api::well_known::kubernetes::labels as k8s_labels;
use serde_json::json;

use super::identity::{
    claim_is_stale, claim_owners_patch, claims_by_name, identity_patch, new_claim, new_pod,
    storage_matches, wanted_claim_owners,
};
use super::ordinals::{claim_name, pod_name};
use super::snapshot::{FeatureGates, StatefulSetSnapshot};
use super::spec::{Spec, UpdatePolicy};
use super::{SpecError, StatefulSetPlan, claims};
use crate::inplace::{self, UpdateOptions};
use crate::lifecycle::{self, DeleteStep, InPlaceStep, LifecycleState};
use crate::pod;
use crate::revision::{self as rev, revision_label_matches, short_hash};
use crate::workload::inplace::{PlanSink, SharedPatches};
use crate::workload::revisions::{RevView, Revision};
use crate::workload::{
    Action, Blocked, DeletePurpose, Event, EventType, Patch, PodPatchPurpose, WorkloadPlan,
};
use crate::workload::{LabelLookup, PodFacts};

/// Condition type set when a pod could not be updated.
const FAILED_UPDATE_POD: &str = "FailedUpdatePod";

/// A pod of the snapshot, by its position there.
type Ix = usize;

/// A replica's place: its ordinal and its pod, or the revision a pod created there gets.
struct Slot {
    ordinal: i32,
    pod: Option<Ix>,
    /// For a missing pod: whether it is created at the current revision.
    at_current: bool,
    /// The pod does not mount every claim template's claim: it is replaced, never patched
    /// (pods' volumes cannot change).
    needs_storage: bool,
}

/// How the scale pass goes on after a replica.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Flow {
    Next,
    /// Stop the scale pass; scale-in and updates still run.
    Break,
    /// OrderedReady waits here: stop the round.
    Exit,
}

/// What deleting a pod did.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Deleted {
    /// Deleted.
    Yes,
    /// Moved to `PreparingDelete` by its preDelete hook (or still held there).
    Held { changed: bool },
}

/// What the passes read of a pod besides its [`PodFacts`], read once in the first pass.
#[derive(Clone, Copy, Debug, Default)]
struct Seen {
    terminating: bool,
    /// Phase Succeeded or Failed.
    finished: bool,
    /// The pod has a phase (it exists for the kubelet).
    created: bool,
    /// Its revision label names the update revision.
    at_update: bool,
    /// Its revision label names the current revision.
    at_current: bool,
    /// In no lifecycle state, or `Normal`.
    normal: bool,
    /// In the `PreparingUpdate` lifecycle state.
    preparing_update: bool,
    /// Phase Running and Ready.
    running_ready: bool,
    /// Available for `minReadySeconds` (upstream's `isRunningAndAvailable`), and otherwise
    /// how long until it may be.
    available: (bool, Option<SignedDuration>),
    /// Nothing for a refresh to do: no in-place bookkeeping due and a settled lifecycle state.
    idle: bool,
    /// No in-place update under way (no grace period, no update record).
    no_update_record: bool,
    /// Labelled `apps.kruise.io/specified-delete`.
    marked: bool,
    /// Its revision label names the update revision exactly (as the status counts).
    exactly_update: bool,
    /// Its revision label names the current revision exactly.
    exactly_current: bool,
    /// Its pod-name and pod-index labels are right.
    identity_ok: bool,
    /// Its priority under `unorderedUpdate.priorityStrategy`, when there is one.
    priority: Option<crate::ordering::PriorityKey>,
    /// Refreshed this round.
    refreshed: bool,
    /// Deleted this round.
    deleted: bool,
}

struct Round<'s, 'a> {
    spec: &'s Spec<'a>,
    gates: &'a FeatureGates,
    snapshot: &'a StatefulSetSnapshot,
    now: Timestamp,
    current: Revision,
    update: Revision,
    revisions: Vec<RevView<'a>>,
    claims: BTreeMap<&'a str, &'a PersistentVolumeClaim>,
    slots: Vec<Slot>,
    /// Pods to remove (outside the replica ordinals), highest ordinal first.
    condemned: Vec<(i32, Ix)>,
    actions: Vec<Action>,
    events: Vec<Event>,
    requeue: Option<SignedDuration>,
    shared: SharedPatches,
    in_place: UpdateOptions,
    /// By the pod's position in the snapshot.
    seen: Vec<Seen>,
    /// The in-place change from each old revision (by name) to the update revision, computed
    /// once; `None` when it needs recreation.
    in_place_specs: BTreeMap<&'a str, Option<inplace::UpdateSpec>>,
    /// Ordinals whose pod this round releases (it keeps the name).
    released: Vec<i32>,
    /// Some pod's lifecycle state changes this round: updates wait for the next one.
    lifecycle_changed: bool,
    conditions: Vec<StatefulSetCondition>,
    /// Pods at the current or update revision this round removes or moves.
    current_leaving: i32,
    updated_leaving: i32,
}

impl PlanSink for Round<'_, '_> {
    fn actions(&mut self) -> &mut Vec<Action> {
        &mut self.actions
    }
    fn shared_patches(&mut self) -> &mut SharedPatches {
        &mut self.shared
    }
    fn requeue_after(&mut self, after: SignedDuration) {
        if after > SignedDuration::ZERO {
            self.requeue = Some(self.requeue.map_or(after, |r| r.min(after)));
        }
    }
}

fn name_of(pod: &Pod) -> &str {
    pod.metadata.name.as_deref().unwrap_or_default()
}

fn uid_of(pod: &Pod) -> &str {
    pod.metadata.uid.as_deref().unwrap_or_default()
}

impl<'s, 'a> Round<'s, 'a> {
    fn event(&mut self, type_: EventType, reason: &'static str, message: String, after_last: bool) {
        let after_action = if after_last { self.actions.len().checked_sub(1) } else { None };
        self.events.push(Event { type_, reason: reason.into(), message, after_action });
    }

    fn fail_condition(&mut self, type_: &str, message: String) {
        // Built from JSON: the condition's fields are optional in newer Kubernetes versions.
        let condition = json!({
            "type": type_,
            "status": "True",
            "message": message,
            "lastTransitionTime": Time(self.now),
        });
        if let Ok(condition) = serde_json::from_value::<StatefulSetCondition>(condition) {
            self.conditions.push(condition);
        }
    }

    fn pod(&self, i: Ix) -> &'a Pod {
        self.snapshot.pods[i].pod()
    }

    fn facts(&self, i: Ix) -> &'a PodFacts {
        self.snapshot.pods[i].facts()
    }

    fn name(&self, i: Ix) -> &'a str {
        self.facts(i).name()
    }

    /// In no lifecycle state, or `Normal`.
    fn normal(&self, i: Ix) -> bool {
        self.seen[i].normal
    }

    fn running_ready(&self, i: Ix) -> bool {
        self.seen[i].running_ready
    }

    /// Upstream's `isHealthy`: in a normal lifecycle state, running and ready, not
    /// terminating.
    fn healthy(&self, i: Ix) -> bool {
        self.normal(i) && self.running_ready(i) && !self.seen[i].terminating
    }

    /// Whether the pod has been available for `minReadySeconds`, and otherwise how long until
    /// it may be (upstream's `isRunningAndAvailable`).
    fn available(&self, i: Ix) -> (bool, Option<SignedDuration>) {
        self.seen[i].available
    }

    /// Whether the pod's in-place update (if any) has finished.
    fn update_completed(&self, i: Ix) -> bool {
        self.seen[i].no_update_record
            || inplace::check_in_place_update_completed(self.pod(i), &self.in_place).is_ok()
    }

    /// Upstream's `IsPodUpdate`: at the update revision, or (under `PreparingUpdateAsUpdate`)
    /// waiting in `PreparingUpdate`.
    fn counts_as_updated(&self, i: Ix) -> bool {
        self.seen[i].at_update
            || (self.gates.preparing_update_as_update && self.seen[i].preparing_update)
    }

    /// Plans a lifecycle transition of `pod`; true when its state label changes (updates then
    /// wait for the next round).
    fn transition(&mut self, pod: &Pod, transition: lifecycle::LifecycleTransition) -> bool {
        let changed = crate::workload::push_lifecycle(
            &mut self.actions,
            name_of(pod),
            uid_of(pod),
            transition,
        );
        self.lifecycle_changed |= changed;
        changed
    }

    /// Deletes pod `i`, unless its preDelete hook holds it: then it moves to
    /// `PreparingDelete`.
    fn delete_pod(&mut self, i: Ix, purpose: DeletePurpose) -> Deleted {
        // Without a preDelete hook the pod itself need not be read.
        let hooked = self.spec.lifecycle.is_some_and(|l| l.pre_delete.is_some());
        let step = match hooked {
            true => lifecycle::cloneset_delete_step(self.spec.lifecycle, self.pod(i), self.now),
            false => DeleteStep::Delete,
        };
        match step {
            DeleteStep::PrepareDelete(transition) => {
                Deleted::Held { changed: self.transition(self.pod(i), transition) }
            }
            _ => {
                self.seen[i].deleted = true;
                let facts = self.facts(i);
                self.actions.push(Action::DeletePod {
                    name: facts.name().to_owned(),
                    uid: facts.uid().to_owned(),
                    purpose,
                });
                let message = format!(
                    "delete Pod {} in StatefulSet {} successful",
                    facts.name(),
                    self.spec.name
                );
                self.event(EventType::Normal, "SuccessfulDelete", message, true);
                Deleted::Yes
            }
        }
    }

    /// Upstream's `refreshPodState`: in-place grace periods and batches, the
    /// `InPlaceUpdateReady` condition, and lifecycle states that may move on. Once per pod,
    /// and only for pods where any of that can be due.
    fn refresh(&mut self, i: Ix) -> Result<(), String> {
        if std::mem::replace(&mut self.seen[i].refreshed, true) {
            return Ok(());
        }
        if self.seen[i].idle {
            return Ok(());
        }
        let pod = self.pod(i);
        let opts = self.in_place.clone();
        let now = self.now;
        crate::workload::inplace::refresh(self, pod, &opts, now)?;
        let completed = self.update_completed(i);
        let at_update = self.seen[i].at_update;
        let rules = lifecycle::RefreshRules::StatefulSet;
        if let Some(to) =
            lifecycle::refresh_target(rules, self.spec.lifecycle, pod, at_update, completed)
        {
            let hook = self.spec.lifecycle.and_then(|l| l.in_place_update.as_ref());
            let mark = lifecycle::is_hook_mark_pod_not_ready(hook);
            self.transition(pod, lifecycle::update_pod_lifecycle(pod, to, mark, now));
        }
        Ok(())
    }

    /// The claims the pod at `ordinal` needs and does not have, as create actions. `Err` when
    /// one is being deleted (or still belongs to an earlier pod): no pod may use it yet.
    fn missing_claims(&mut self, ordinal: i32, for_new_pod: bool) -> Result<(), String> {
        if self.spec.claim_templates.is_empty() {
            return Ok(());
        }
        let name = pod_name(self.spec.name, ordinal);
        for template in self.spec.claim_templates.clone() {
            let template_name = template.metadata.name.as_deref().unwrap_or_default();
            let claim = claim_name(template_name, self.spec.name, ordinal);
            match self.claims.get(claim.as_str()) {
                Some(existing) if existing.metadata.deletion_timestamp.is_some() => {
                    return Err(format!("pvc {claim} is to be deleted"));
                }
                Some(existing) if for_new_pod && claim_is_stale(self.spec, existing, &name) => {
                    return Err(format!("pvc {claim} still belongs to an earlier pod {name}"));
                }
                Some(_) => {}
                None => {
                    let pvc = new_claim(self.spec, template, ordinal);
                    self.actions.push(Action::CreatePvc { pvc: Box::new(pvc) });
                    let message = format!(
                        "create Claim {claim} Pod {name} in StatefulSet {} success",
                        self.spec.name
                    );
                    self.event(EventType::Normal, "SuccessfulCreate", message, true);
                }
            }
        }
        Ok(())
    }

    /// Sets the owners of pod `i`'s claims as the retention policy wants them.
    fn claim_owners(&mut self, i: Ix, ordinal: i32, scaled_down: bool) {
        if self.spec.claim_templates.is_empty() {
            return;
        }
        let pod = self.pod(i);
        for template in self.spec.claim_template_names().map(str::to_owned).collect::<Vec<_>>() {
            let name = claim_name(&template, self.spec.name, ordinal);
            let Some(claim) = self.claims.get(name.as_str()).copied() else { continue };
            if claim.metadata.deletion_timestamp.is_some() {
                continue;
            }
            if let Some(owners) = wanted_claim_owners(self.spec, claim, Some(pod), scaled_down) {
                self.actions.push(Action::PatchPvc {
                    name,
                    patch: Patch::merge(claim_owners_patch(claim, &owners)),
                });
            }
        }
    }

    /// The existing, live claims of the pod at `ordinal`, with their templates.
    fn pod_claims(
        &self,
        ordinal: i32,
    ) -> Vec<(&'a PersistentVolumeClaim, &'a PersistentVolumeClaim)> {
        let mut found = Vec::new();
        for template in &self.spec.claim_templates {
            let template_name = template.metadata.name.as_deref().unwrap_or_default();
            let name = claim_name(template_name, self.spec.name, ordinal);
            if let Some(claim) = self.claims.get(name.as_str())
                && claim.metadata.deletion_timestamp.is_none()
            {
                found.push((*claim, *template));
            }
        }
        found
    }
}

/// How many decimal digits `n` (not negative) has.
fn decimal_len(n: i32) -> usize {
    n.checked_ilog10().map_or(1, |log| log as usize + 1)
}

/// Whether a pod in a normal lifecycle state that is running and ready (`running_ready`) has
/// been ready for `minReadySeconds`, and otherwise how long until it may be (upstream's
/// `isRunningAndAvailable`). `available_before` is `now` less `minReadySeconds` (`None` when
/// that is before the earliest time there is): a pod ready since then is available.
fn availability(
    running_ready: bool,
    ready_since: Option<Timestamp>,
    min_ready_seconds: i32,
    available_before: Option<Timestamp>,
) -> (bool, Option<SignedDuration>) {
    if !running_ready {
        return (false, None);
    }
    if min_ready_seconds == 0 {
        return (true, None);
    }
    let wait = SignedDuration::from_secs(i64::from(min_ready_seconds));
    let (Some(since), Some(before)) = (ready_since, available_before) else {
        return (false, Some(wait));
    };
    let remaining = since.duration_since(before);
    if remaining > SignedDuration::ZERO {
        (false, Some(crate::workload::round_up_seconds(remaining)))
    } else {
        (true, None)
    }
}

fn invalid(
    expectations: crate::expectations::ControllerExpectations,
    err: SpecError,
) -> StatefulSetPlan {
    let mut plan = WorkloadPlan::empty(expectations);
    plan.blocked = Some(Blocked::Invalid { message: err.to_string() });
    plan
}

/// Plans one reconcile of `snapshot` at `now`.
pub(crate) fn plan(snapshot: &StatefulSetSnapshot, now: Timestamp) -> StatefulSetPlan {
    let mut expectations = snapshot.expectations.clone();
    let set = match snapshot.statefulset.to_v1beta1() {
        Ok(set) => set,
        Err(err) => return invalid(expectations, SpecError::Conversion(err.to_string())),
    };
    let spec = match Spec::parse(&set, &snapshot.feature_gates) {
        Ok(spec) => spec,
        Err(err) => return invalid(expectations, err),
    };
    let timeout = snapshot.options.expectation_timeout;

    // 1. Expectations: earlier writes the snapshot does not show yet.
    let owned =
        snapshot.pods.iter().map(|p| p.metadata()).chain(snapshot.pvcs.iter().map(|p| &p.metadata));
    let events =
        match crate::workload::settle_scale_expectations(&mut expectations, owned, now, timeout) {
            Ok(events) => events,
            Err(plan) => return *plan,
        };
    if !expectations.resource_versions.is_empty() {
        let by_uid = crate::workload::pods_by_uid(snapshot.pods.iter().map(|p| p.metadata()));
        let observed = |uid: &str| by_uid.get(uid).copied();
        if let Err(plan) =
            crate::workload::settle_resource_versions(&mut expectations, observed, now, timeout)
        {
            return *plan;
        }
    }

    // 2. Revisions.
    let resolved = match crate::workload::revisions::resolve(&set, &snapshot.revisions) {
        Ok(resolved) => resolved,
        Err(err) => return invalid(expectations, SpecError::Revision(err.to_string())),
    };
    let in_place = UpdateOptions {
        grace_period_seconds: spec.grace_period_seconds,
        vertical_scaling: snapshot.feature_gates.in_place_workload_vertical_scaling,
        env_from_metadata: snapshot.feature_gates.in_place_update_env_from_metadata,
        resize_subresource: snapshot.options.resize_subresource,
        pod_template_hash_label: false,
        ..UpdateOptions::default()
    };
    let mut round = Round {
        spec: &spec,
        gates: &snapshot.feature_gates,
        snapshot,
        now,
        current: resolved.current,
        update: resolved.update,
        revisions: resolved.sorted,
        claims: claims_by_name(&snapshot.pvcs),
        slots: Vec::new(),
        condemned: Vec::new(),
        actions: resolved.actions,
        events,
        requeue: None,
        shared: SharedPatches::default(),
        in_place,
        seen: Vec::with_capacity(snapshot.pods.len()),
        in_place_specs: BTreeMap::new(),
        released: Vec::new(),
        lifecycle_changed: false,
        conditions: Vec::new(),
        current_leaving: 0,
        updated_leaving: 0,
    };

    // 3. Pods: the replicas' slots, the pods to remove, and pods that are no longer ours.
    let deleting = set.metadata.deletion_timestamp.is_some();
    // The pod on each replica ordinal, by the ordinal's position.
    let mut by_position: Vec<Option<Ix>> = vec![None; spec.ordinals.len()];
    // The priority order (unordered updates), compiled once.
    let order = spec
        .priority
        .map(|strategy| crate::ordering::UpdateOrder::new(Some(strategy), &[]))
        .filter(|order| order.has_priority());
    // The label keys read: the selector's, then the update order's.
    let mut lookup = LabelLookup::default();
    let selector_slots: Vec<usize> = spec.selector.keys().iter().map(|&k| lookup.slot(k)).collect();
    let order_slots: Vec<usize> =
        order.as_ref().map_or(&[][..], |o| o.keys()).iter().map(|&k| lookup.slot(k)).collect();
    let mut values: Vec<Option<&str>> = vec![None; lookup.len()];
    let mut row: Vec<Option<&str>> = vec![None; order_slots.len()];
    // Revision labels match by name or by hash alone (upstream's `EqualToRevisionHash`).
    let (update_name, current_name) = (round.update.name.clone(), round.current.name.clone());
    let (update_hash, current_hash) = (short_hash(&update_name), short_hash(&current_name));
    let same_hash = update_hash == current_hash;
    let min_ready = SignedDuration::from_secs(i64::from(spec.min_ready_seconds));
    let available_before = now.checked_sub(min_ready).ok();
    for (i, snapshot_pod) in snapshot.pods.iter().enumerate() {
        let facts = snapshot_pod.facts();
        let name = facts.name();
        let revision = facts.revision_hash();
        // The facts answer for most pods; only a pod that is not active (finished or being
        // deleted) or not running (perhaps not even pending yet) is read itself.
        let (terminating, finished, created) = if facts.active() && facts.running_and_ready() {
            (false, false, true)
        } else {
            let pod = snapshot_pod.pod();
            let phase = pod::phase_of(pod);
            (
                pod.metadata.deletion_timestamp.is_some(),
                matches!(phase, pod::PHASE_FAILED | pod::PHASE_SUCCEEDED),
                !phase.is_empty(),
            )
        };
        // One pass over the labels for the selector's and the priority keys' values.
        lookup.fill(facts, &mut values);
        for (cell, &slot) in row.iter_mut().zip(&order_slots) {
            *cell = values.get(slot).copied().flatten();
        }
        let state = facts.lifecycle_state();
        let settled =
            matches!(state, None | Some(LifecycleState::Normal | LifecycleState::PreparingDelete));
        let member = facts.parent_and_ordinal().filter(|(parent, _)| *parent == spec.name);
        // The hash is read only from a label that names neither revision exactly.
        let exactly_update = revision == update_name.as_str();
        let exactly_current = revision == current_name.as_str();
        let (at_update, at_current) = if revision.is_empty() {
            (false, false)
        } else if exactly_update || exactly_current {
            (exactly_update || same_hash, exactly_current || same_hash)
        } else {
            let hash = short_hash(revision);
            (hash == update_hash, hash == current_hash)
        };
        round.seen.push(Seen {
            terminating,
            finished,
            created,
            at_update,
            at_current,
            normal: matches!(state, None | Some(LifecycleState::Normal)),
            preparing_update: state == Some(&LifecycleState::PreparingUpdate),
            running_ready: facts.running_and_ready(),
            available: availability(
                matches!(state, None | Some(LifecycleState::Normal)) && facts.running_and_ready(),
                facts.ready_since(),
                spec.min_ready_seconds,
                available_before,
            ),
            idle: facts.in_place_idle() && settled,
            no_update_record: !facts.in_grace() && !facts.in_place_state(),
            marked: facts.marked_for_deletion(),
            exactly_update,
            exactly_current,
            identity_ok: member.is_some() && facts.identity_labels_right(spec.pod_index_label),
            priority: order.as_ref().map(|o| o.priority_key(&row)),
            refreshed: false,
            deleted: false,
        });
        let selected = spec.selector.matches_values(|r| {
            selector_slots.get(r).and_then(|&s| values.get(s).copied().flatten())
        });
        // `web-01` parses to ordinal 1 but is not `web-1`.
        let canonical = |ordinal: i32| name.len() - spec.name.len() - 1 == decimal_len(ordinal);
        match member {
            Some((_, ordinal)) if selected && canonical(ordinal) => {
                if let Some(position) = spec.replica_position(ordinal) {
                    by_position[position] = Some(i);
                } else {
                    round.condemned.push((ordinal, i));
                }
            }
            // `web-01` holds no ordinal of its own: it is removed, and `web-1` takes its place.
            Some(_) if selected => round.condemned.push((-1, i)),
            _ if !deleting && !spec.uid.is_empty() => {
                round.actions.push(crate::workload::release_pod(snapshot_pod.pod(), spec.uid));
                // The released pod keeps its name: its ordinal cannot get a new pod yet.
                if let Some((_, ordinal)) = member {
                    round.released.push(ordinal);
                }
            }
            _ => {}
        }
    }
    let pods = &snapshot.pods;
    round.condemned.sort_by(|a, b| {
        b.0.cmp(&a.0).then_with(|| pods[a.1].facts().name().cmp(pods[b.1].facts().name()))
    });
    fill_slots(&mut round, &by_position);

    let mut status = StatefulSetStatus {
        observed_generation: set.metadata.generation.unwrap_or(0),
        current_revision: round.current.name.clone(),
        update_revision: round.update.name.clone(),
        collision_count: Some(resolved.collision_count),
        label_selector: spec.selector.render(),
        ..StatefulSetStatus::default()
    };

    if !deleting {
        let flow = scale(&mut round);
        if flow != Flow::Exit
            && scale_in(&mut round) != Flow::Exit
            && !spec.on_delete
            && let Err(message) = rolling_update(&mut round)
        {
            round.fail_condition(FAILED_UPDATE_POD, message.clone());
            round.event(EventType::Warning, "FailedUpdate", message, false);
        }
    }

    // 4. Status and history.
    count(&round, &mut status);
    status.conditions = round.conditions.clone();
    status.volume_claims = volume_claims(&round);
    let history = truncate_history(&round, snapshot);
    round.actions.extend(history);
    // Last, so that a job the API server refuses holds up nothing else.
    if snapshot.feature_gates.pre_download_image_for_in_place_update {
        let inputs = super::predownload::Inputs {
            set: &set,
            replicas: spec.replicas,
            current_name: &round.current.name,
            update_name: &round.update.name,
            current: round.current.object.as_ref(),
            update: round.update.object.as_ref(),
            in_place: &round.in_place,
            jobs: &snapshot.image_pull_jobs,
        };
        super::predownload::plan(&inputs, &mut round.actions, &mut round.events);
    }

    let old = set.status.clone().unwrap_or_default();
    let status = (old != status).then_some(status);
    WorkloadPlan {
        actions: round.actions,
        status,
        events: round.events,
        requeue_after: round.requeue,
        expectations,
        blocked: None,
    }
}

/// The replicas' slots in ordinal order; a missing pod gets the revision upstream's
/// `isCurrentRevisionNeeded` picks: the current one for the lowest `partition` positions
/// (ordered), or while fewer than `partition` other pods are not updated (unordered).
fn fill_slots(round: &mut Round<'_, '_>, by_position: &[Option<Ix>]) {
    let spec = round.spec;
    let rolling = round.current.name != round.update.name && !spec.on_delete;
    let mut not_updated: i32 = by_position
        .iter()
        .flatten()
        .filter(|&&i| !round.counts_as_updated(i))
        .count()
        .try_into()
        .unwrap_or(i32::MAX);
    let claims = !spec.claim_templates.is_empty();
    for (position, &ordinal) in spec.ordinals.iter().enumerate() {
        let pod = by_position.get(position).copied().flatten();
        let needs_storage =
            claims && pod.is_some_and(|i| !storage_matches(spec, round.pod(i), ordinal));
        let at_current = pod.is_none()
            && rolling
            && if spec.unordered {
                not_updated < spec.partition
            } else {
                i32::try_from(position).unwrap_or(i32::MAX) < spec.partition
            };
        if pod.is_none() && at_current {
            not_updated = not_updated.saturating_add(1);
        }
        round.slots.push(Slot { ordinal, pod, at_current, needs_storage });
    }
}

/// The scale pass over the replicas, lowest ordinal first (upstream's `processReplica`).
///
/// Differences from upstream, on purpose:
/// - a failed or succeeded pod is deleted whatever the scale budget (deleting it costs no
///   availability); its replacement counts against the budget as any creation;
/// - while a rollout is under way, pods the update removed are recreated within the update's
///   own `maxUnavailable`: the scale budget is at least that large (upstream #2285, where the
///   scale budget held availability at the update's floor for the whole rollout);
/// - a pod whose volumes miss a claim template is never patched (the API server forbids it;
///   upstream #2343): the rolling update replaces it.
fn scale(round: &mut Round<'_, '_>) -> Flow {
    let spec = round.spec;
    let rollout = round.current.name != round.update.name;
    let mut budget = spec
        .scale_budget
        .map(|b| if rollout && !spec.on_delete { b.max(spec.max_unavailable) } else { b });
    let mut consume = move || match budget.as_mut() {
        Some(left) => {
            *left -= 1;
            *left <= 0
        }
        None => false,
    };
    for index in 0..round.slots.len() {
        let flow = scale_one(round, index, &mut consume);
        match flow {
            Flow::Next => {}
            Flow::Break => return Flow::Break,
            Flow::Exit if spec.monotonic => return Flow::Exit,
            // Parallel: one blocked pod never holds up the others (upstream PR #2109).
            Flow::Exit => {}
        }
    }
    Flow::Next
}

fn scale_one(round: &mut Round<'_, '_>, index: usize, consume: &mut impl FnMut() -> bool) -> Flow {
    let spec = round.spec;
    let (ordinal, pod, at_current) = {
        let slot = &round.slots[index];
        (slot.ordinal, slot.pod, slot.at_current)
    };
    let Some(i) = pod else {
        if round.released.contains(&ordinal) {
            let message = format!(
                "create Pod {} in StatefulSet {} failed error: the pod of that name no longer matches the selector and was released; delete it to let the set recreate it",
                pod_name(spec.name, ordinal),
                spec.name
            );
            round.event(EventType::Warning, "FailedCreate", message, false);
            return Flow::Exit;
        }
        if let Err(reason) = round.missing_claims(ordinal, true) {
            wait_for_claims(round, ordinal, reason);
            return Flow::Exit;
        }
        let revision = if at_current { &round.current } else { &round.update };
        let new = new_pod(spec, &revision.template, &revision.name, ordinal, round.now);
        let name = name_of(&new).to_owned();
        round.actions.push(Action::CreatePod { pod: new.into() });
        let message = format!("create Pod {name} in StatefulSet {} successful", spec.name);
        round.event(EventType::Normal, "SuccessfulCreate", message, true);
        if spec.monotonic {
            return Flow::Exit;
        }
        return if consume() { Flow::Break } else { Flow::Next };
    };

    let seen = round.seen[i];
    if seen.finished {
        if !seen.terminating {
            round.delete_pod(i, DeletePurpose::Finished);
        }
        if spec.monotonic {
            return Flow::Exit;
        }
        return if consume() { Flow::Break } else { Flow::Next };
    }
    if !seen.terminating
        && !spec.claim_templates.is_empty()
        && pod::phase_of(round.pod(i)) == pod::PHASE_PENDING
    {
        // A pod created before its claims (or whose claims were deleted) gets them back.
        if let Err(reason) = round.missing_claims(ordinal, false) {
            wait_for_claims(round, ordinal, reason);
        }
    }
    if seen.terminating {
        if spec.monotonic {
            return Flow::Exit;
        }
        if consume() {
            return Flow::Break;
        }
        return Flow::Next;
    }
    if let Err(message) = round.refresh(i) {
        round.event(EventType::Warning, "FailedUpdate", message, false);
    }
    if spec.monotonic || spec.scale_budget.is_some() {
        let (available, wait) = round.available(i);
        if !available {
            if spec.monotonic {
                if let Some(wait) = wait {
                    round.requeue_after(wait);
                }
                return Flow::Exit;
            }
            if consume() {
                if let Some(wait) = wait {
                    round.requeue_after(wait);
                }
                return Flow::Break;
            }
        }
    }
    if !round.seen[i].identity_ok {
        let facts = round.facts(i);
        let (name_label, index_label) =
            (facts.label(k8s_labels::STATEFULSET_POD_NAME), facts.label(k8s_labels::POD_INDEX));
        if let Some(patch) = identity_patch(spec, facts.name(), ordinal, name_label, index_label) {
            round.actions.push(Action::PatchPod {
                namespace: None,
                name: facts.name().to_owned(),
                uid: facts.uid().to_owned(),
                purpose: PodPatchPurpose::Identity,
                patch: Patch::strategic(patch),
            });
            let message =
                format!("update Pod {} in StatefulSet {} successful", facts.name(), spec.name);
            round.event(EventType::Normal, "SuccessfulUpdate", message, true);
        }
    }
    round.claim_owners(i, ordinal, false);
    Flow::Next
}

/// The pod at `ordinal` cannot be created or given its claims yet (a claim is going away):
/// say so, and look again shortly.
fn wait_for_claims(round: &mut Round<'_, '_>, ordinal: i32, reason: String) {
    let message = format!(
        "create Pod {} in StatefulSet {} failed error: {reason}",
        pod_name(round.spec.name, ordinal),
        round.spec.name
    );
    round.event(EventType::Warning, "FailedCreate", message, false);
    round.requeue_after(SignedDuration::from_secs(5));
}

/// Removes the pods outside the replica ordinals, highest ordinal first (upstream's
/// `processCondemned`). OrderedReady removes one at a time, each once every pod is healthy;
/// Parallel removes them all.
fn scale_in(round: &mut Round<'_, '_>) -> Flow {
    let spec = round.spec;
    let condemned = std::mem::take(&mut round.condemned);
    for &(ordinal, i) in &condemned {
        if ordinal >= 0 && !round.seen[i].terminating {
            round.claim_owners(i, ordinal, true);
        }
    }
    let first_unhealthy = condemned
        .iter()
        .filter(|(_, i)| !round.healthy(*i))
        .min_by_key(|(ordinal, _)| *ordinal)
        .map(|(_, i)| *i);
    let mut flow = Flow::Next;
    for &(_, i) in &condemned {
        let seen = round.seen[i];
        if seen.terminating {
            if spec.monotonic {
                flow = Flow::Exit;
                break;
            }
            continue;
        }
        // A finished pod holds nothing up: it goes at once (upstream waits for it to become
        // ready first, which it never will).
        if spec.monotonic && !seen.finished {
            let first = first_unhealthy == Some(i);
            if !round.running_ready(i) && !first {
                flow = Flow::Exit;
                break;
            }
            let (available, wait) = round.available(i);
            if !available && !first {
                if let Some(wait) = wait {
                    round.requeue_after(wait);
                }
                flow = Flow::Exit;
                break;
            }
        }
        let deleted = round.delete_pod(i, DeletePurpose::ScaleIn);
        if spec.monotonic && !seen.finished && deleted != (Deleted::Held { changed: false }) {
            flow = Flow::Exit;
            break;
        }
    }
    round.condemned = condemned;
    flow
}

/// The replicas unavailable during the rolling update, by slot.
struct Unavailable {
    slots: Vec<bool>,
    count: usize,
}

impl Unavailable {
    fn contains(&self, index: usize) -> bool {
        self.slots.get(index).copied().unwrap_or(false)
    }

    fn insert(&mut self, index: usize) {
        if let Some(slot) = self.slots.get_mut(index)
            && !std::mem::replace(slot, true)
        {
            self.count += 1;
        }
    }

    /// Whether moving the pod of slot `index` would take the replicas past `max`: pods
    /// already unavailable may always move.
    fn blocks(&self, index: usize, max: usize) -> bool {
        self.count >= max && !self.contains(index)
    }
}

/// The rolling update (upstream's `rollingUpdateStatefulsetPods`): refreshes, specified
/// deletions, then the update targets in order, within `maxUnavailable` and `partition`.
fn rolling_update(round: &mut Round<'_, '_>) -> Result<(), String> {
    let spec = round.spec;
    let pods: Vec<Ix> = round
        .slots
        .iter()
        .filter_map(|s| s.pod)
        .chain(round.condemned.iter().map(|(_, i)| *i))
        .collect();
    for i in pods {
        if !round.seen[i].terminating {
            round.refresh(i)?;
        }
    }
    if round.lifecycle_changed || spec.paused {
        return Ok(());
    }

    // Replicas that are unavailable now.
    let mut unavailable = Unavailable { slots: vec![false; round.slots.len()], count: 0 };
    let mut soonest = None;
    for (index, slot) in round.slots.iter().enumerate() {
        let down = match slot.pod.filter(|&i| !round.seen[i].deleted) {
            None => true,
            Some(i) if !round.healthy(i) || !round.update_completed(i) => true,
            Some(i) => {
                let (available, wait) = round.available(i);
                if let Some(wait) = wait {
                    soonest = Some(soonest.map_or(wait, |s: SignedDuration| s.min(wait)));
                }
                !available
                    || (spec.resize_claims
                        && round.pod_claims(slot.ordinal).iter().any(|(c, t)| !claims::ready(c, t)))
            }
        };
        if down {
            unavailable.insert(index);
        }
    }
    if let Some(wait) = soonest {
        round.requeue_after(wait);
    }
    let max_unavailable = usize::try_from(spec.max_unavailable).unwrap_or(1);

    // Pods labelled for deletion, and pods whose volumes miss a claim template: replaced,
    // highest ordinal first, within maxUnavailable but regardless of partition.
    let mut replaced = vec![false; round.slots.len()];
    for index in (0..round.slots.len()).rev() {
        let slot = &round.slots[index];
        let Some(i) = slot.pod else { continue };
        let specified = round.seen[i].marked;
        let seen = round.seen[i];
        if (!specified && !slot.needs_storage) || seen.terminating || seen.deleted {
            continue;
        }
        if unavailable.blocks(index, max_unavailable) {
            continue;
        }
        let purpose =
            if specified { DeletePurpose::SpecifiedDelete } else { DeletePurpose::Recreate };
        if round.delete_pod(i, purpose) == Deleted::Yes {
            if seen.at_current {
                round.current_leaving += 1;
            } else if seen.at_update {
                round.updated_leaving += 1;
            }
        }
        replaced[index] = true;
        unavailable.insert(index);
    }

    for index in targets(round) {
        let slot = &round.slots[index];
        let (ordinal, Some(i)) = (slot.ordinal, slot.pod) else { continue };
        let claims_match = !spec.resize_claims
            || round.pod_claims(ordinal).iter().all(|(c, t)| {
                claims::compatible_without_size(c, t) && !claims::needs_expansion(c, t)
            });
        let seen = round.seen[i];
        if seen.at_update && claims_match {
            continue;
        }
        if unavailable.blocks(index, max_unavailable) {
            break;
        }
        if !claims_match {
            resize_claims(round, i, ordinal)?;
            let completed =
                round.pod_claims(ordinal).iter().all(|(c, t)| claims::resize_completed(c, t));
            if !completed {
                unavailable.insert(index);
                continue;
            }
        }
        let seen = round.seen[i];
        if replaced[index] || seen.terminating || seen.deleted || seen.at_update {
            continue;
        }
        let moved = match update_in_place(round, i)? {
            true => true,
            false => round.delete_pod(i, DeletePurpose::Recreate) == Deleted::Yes,
        };
        unavailable.insert(index);
        if moved && seen.at_current {
            round.current_leaving += 1;
        }
    }
    Ok(())
}

/// The replicas to move to the update revision, in the order to move them (upstream's
/// `sortPodsToUpdate`): `partition` pods stay at the current revision. Ordered, the highest
/// ordinals go; unordered, pods already updated (or terminating) use up the quota first, then
/// the rest in priority order.
fn targets(round: &Round<'_, '_>) -> Vec<usize> {
    let spec = round.spec;
    let max_update = usize::try_from(spec.replicas.saturating_sub(spec.partition)).unwrap_or(0);
    if max_update == 0 {
        return Vec::new();
    }
    let descending = (0..round.slots.len()).rev();
    if !spec.unordered {
        return descending.take(max_update).collect();
    }
    let updated_slot = |index: usize| match round.slots[index].pod {
        Some(i) => round.seen[i].terminating || round.counts_as_updated(i),
        None => !round.slots[index].at_current,
    };
    let (mut updated, mut waiting): (Vec<usize>, Vec<usize>) =
        descending.partition(|&index| updated_slot(index));
    if updated.len() < max_update
        && let Some(strategy) = spec.priority
    {
        let order = crate::ordering::UpdateOrder::new(Some(strategy), &[]);
        if order.has_priority() {
            // Pods yet to be created sort by the labels of the template they get.
            let template = round.current.template.metadata.as_ref().and_then(|m| m.labels.as_ref());
            let row: Vec<Option<&str>> = order
                .keys()
                .iter()
                .map(|key| template.and_then(|l| l.get(*key)).map(String::as_str))
                .collect();
            let template_key = order.priority_key(&row);
            let mut keyed: Vec<(crate::ordering::PriorityKey, usize)> = waiting
                .iter()
                .map(|&index| {
                    let key = round.slots[index].pod.and_then(|i| round.seen[i].priority);
                    (key.unwrap_or(template_key), index)
                })
                .collect();
            // Stable: equal priorities keep the highest ordinal first.
            keyed.sort_by_key(|&(key, _)| key);
            waiting = keyed.into_iter().map(|(_, index)| index).collect();
        }
    }
    updated.extend(waiting);
    updated.truncate(max_update);
    updated
}

/// Moves pod `i` to the update revision in place, as far as its lifecycle allows this round.
/// `Ok(false)` when the change needs a new pod (or the policy is ReCreate); `Err` when the
/// policy is InPlaceOnly and it cannot be done in place, or the pod's state forbids it.
fn update_in_place(round: &mut Round<'_, '_>, i: Ix) -> Result<bool, String> {
    let spec = round.spec;
    if spec.policy == UpdatePolicy::ReCreate {
        return Ok(false);
    }
    let pod = round.pod(i);
    let label = round.facts(i).revision_hash();
    let old = round.revisions.iter().find(|r| revision_label_matches(label, r.name));
    let update_spec = match (old, round.update.object.as_ref()) {
        (Some(old), Some(new)) => match round.in_place_specs.get(old.name) {
            Some(cached) => cached.clone(),
            None => {
                let computed =
                    inplace::calculate_revision_update_spec(old.rev, new, &round.in_place);
                round.in_place_specs.insert(old.name, computed.clone());
                computed
            }
        },
        _ => None,
    };
    let Some(update_spec) = update_spec else {
        if spec.policy == UpdatePolicy::InPlaceOnly {
            return Err(format!(
                "spec.updateStrategy.rollingUpdate.podUpdatePolicy: InPlaceOnly, but pod {} cannot move from revision {label} to {} in place (only images, labels and annotations, and with InPlaceWorkloadVerticalScaling cpu and memory, change in place)",
                name_of(pod),
                round.update.name
            ));
        }
        return Ok(false);
    };
    match lifecycle::cloneset_in_place_step(spec.lifecycle, pod, round.now) {
        InPlaceStep::PrepareUpdate(transition) => {
            round.transition(pod, transition);
            Ok(true)
        }
        InPlaceStep::Wait => Ok(true),
        InPlaceStep::UpdateNow => {
            let opts = round.in_place.clone();
            let now = round.now;
            crate::workload::inplace::update_in_place(round, pod, &update_spec, &opts, now);
            let message = format!(
                "successfully update pod {} in-place(revision {})",
                name_of(pod),
                round.update.name
            );
            round.event(EventType::Normal, "SuccessfulUpdatePodInPlace", message, true);
            Ok(true)
        }
        InPlaceStep::NotAllowed(state) => Err(format!(
            "not allowed to in-place update pod {} in state {}",
            name_of(pod),
            state.map(|s| s.to_string()).unwrap_or_default()
        )),
    }
}

/// Grows pod `i`'s claims to their templates' size (`volumeClaimUpdateStrategy:
/// OnPodRollingUpdate`); a claim that differs in more than size, or whose class cannot
/// expand, stops the update.
fn resize_claims(round: &mut Round<'_, '_>, i: Ix, ordinal: i32) -> Result<(), String> {
    let pod_name = round.name(i);
    for (claim, template) in round.pod_claims(ordinal) {
        let name = claim.metadata.name.clone().unwrap_or_default();
        if !claims::compatible_without_size(claim, template) {
            return Err(format!(
                "can not patch pvc {name}: contains diff other than spec resource, wait pvc to be deleted"
            ));
        }
        if !claims::needs_expansion(claim, template) {
            continue;
        }
        if let Some(class) = claim.spec.as_ref().and_then(|s| s.storage_class_name.as_deref())
            && round.snapshot.storage_classes.get(class) != Some(&true)
        {
            return Err(format!(
                "storage class {class} for {pod_name} does not support volume expansion"
            ));
        }
        let resources = template.spec.as_ref().and_then(|s| s.resources.clone());
        round.actions.push(Action::PatchPvc {
            name: name.clone(),
            patch: Patch::merge(json!({
                "metadata": {
                    "annotations": { annotations::PVC_OWNED_BY_ASTS: round.spec.name },
                    "resourceVersion": claim.metadata.resource_version,
                },
                "spec": { "resources": resources },
            })),
        });
        let message = format!(
            "resize Claim {name} Pod {pod_name} in StatefulSet {} success",
            round.spec.name
        );
        round.event(EventType::Normal, "SuccessfulResize", message, true);
    }
    Ok(())
}

/// The counters of `status` (upstream's `computeReplicaStatus` over the replicas and the pods
/// being removed), less the pods this round moves or removes; and the rollout completes when
/// every pod is updated and ready, and (unlike upstream) every replica exists: a set whose
/// pods are all gone mid-rollout still creates the partition's pods at the current revision.
fn count(round: &Round<'_, '_>, status: &mut StatefulSetStatus) {
    let pods =
        round.slots.iter().filter_map(|s| s.pod).chain(round.condemned.iter().map(|(_, i)| *i));
    for i in pods {
        let seen = round.seen[i];
        if !seen.created {
            continue;
        }
        status.replicas += 1;
        let ready = round.running_ready(i);
        let available = ready && round.available(i).0;
        // Exact names, as upstream counts (a short-hash match is not counted).
        let updated = seen.exactly_update;
        if ready {
            status.ready_replicas += 1;
            if updated {
                status.updated_ready_replicas += 1;
            }
        }
        if available {
            status.available_replicas += 1;
            if updated {
                status.updated_available_replicas += 1;
            }
        }
        if !seen.terminating {
            if seen.exactly_current {
                status.current_replicas += 1;
            }
            if updated {
                status.updated_replicas += 1;
            }
        }
    }
    status.current_replicas = (status.current_replicas - round.current_leaving).max(0);
    status.updated_replicas = (status.updated_replicas - round.updated_leaving).max(0);
    if !round.spec.on_delete
        && status.updated_replicas == status.replicas
        && status.ready_replicas == status.replicas
        && round.slots.iter().all(|s| s.pod.is_some())
    {
        status.current_revision = status.update_revision.clone();
        status.current_replicas = status.updated_replicas;
    }
}

/// `status.volumeClaims`: per claim template, how many replicas' claims ask for at least its
/// size, and how many of those have been given it.
fn volume_claims(round: &Round<'_, '_>) -> Vec<VolumeClaimStatus> {
    round
        .spec
        .claim_templates
        .iter()
        .map(|template| {
            let name = template.metadata.name.clone().unwrap_or_default();
            let mut entry =
                VolumeClaimStatus { volume_claim_name: name.clone(), ..Default::default() };
            for slot in &round.slots {
                let claim = claim_name(&name, round.spec.name, slot.ordinal);
                let Some(claim) = round.claims.get(claim.as_str()) else { continue };
                if claim.metadata.deletion_timestamp.is_some()
                    || !claims::compatible(claim, template)
                {
                    continue;
                }
                entry.compatible_replicas += 1;
                if claims::ready(claim, template) {
                    entry.compatible_ready_replicas += 1;
                }
            }
            entry
        })
        .collect()
}

/// Revisions beyond `revisionHistoryLimit` that no pod uses any more.
fn truncate_history(round: &Round<'_, '_>, snapshot: &StatefulSetSnapshot) -> Vec<Action> {
    let names: Vec<&str> = round.revisions.iter().map(|r| r.name).collect();
    let limit = usize::try_from(round.spec.revision_history_limit).unwrap_or(0);
    let (current, update) = (round.current.name.as_str(), round.update.name.as_str());
    if names.iter().filter(|&&n| n != current && n != update).count() <= limit {
        return Vec::new();
    }
    let in_use: BTreeSet<&str> = snapshot
        .pods
        .iter()
        .filter_map(|p| p.metadata().labels.as_ref()?.get(rev::POD_REVISION_LABEL))
        .map(String::as_str)
        .collect();
    rev::history_to_prune(&names, &in_use, current, update, limit)
        .into_iter()
        .map(|name| Action::DeleteRevision { name: name.to_owned() })
        .collect()
}
