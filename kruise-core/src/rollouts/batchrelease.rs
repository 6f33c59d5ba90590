//! The BatchRelease planner: one release of one workload, batch by batch.
//!
//! [`plan`] takes a [`Snapshot`] (the BatchRelease, its workload and the workload's pods) and
//! `now`, and returns the workload and pod patches and the new status. Phases, as upstream's
//! executor runs them (partition style):
//! - **Preparing:** take control of the workload: `control-info` names this BatchRelease, the
//!   update is unpaused and every pod held (CloneSet `partition: "100%"`, Advanced StatefulSet
//!   `partition: 32767`). Once the workload shows it, **Progressing** at batch 0.
//! - **Progressing**, per batch: *Upgrading* lowers the partition to what the batch leaves on
//!   the old revision (never raising it) and labels the updated pods with
//!   `rollouts.kruise.io/rollout-id` and `rollout-batch-id`; *Verifying* waits until the batch
//!   is done (see [`batch_is_ready`]); *Ready* holds there while `releasePlan.batchPartition`
//!   is this batch, or moves to the next.
//! - **Finalizing** (deleted, or `batchPartition` unset): control is given back and, when
//!   `batchPartition` is unset, the partition cleared so that every pod updates. Then
//!   **Completed**.
//!
//! A changed release plan (another `batchPartition`, other batches) restarts at
//! `min(batchPartition, last batch)`, or at batch 0 when the release id changed; a change of
//! the workload's replicas re-runs the current batch.

use std::collections::BTreeMap;
use std::sync::Arc;

use jiff::{SignedDuration, Timestamp};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;
use kruise_api::rollouts::v1beta1::{
    BatchRelease, BatchReleaseBatchStateType, BatchReleaseStatus, FinalizingPolicyType,
    RolloutPhase,
};
use serde_json::{Value, json};

use super::workload::{ReleaseStyle, desired_partition};
use super::{
    BATCH_RELEASE_FINALIZER, NO_NEED_UPDATE_LABEL, ROLLBACK_IN_BATCH_ANNOTATION,
    ROLLOUT_BATCH_ID_LABEL, ROLLOUT_ID_LABEL, ReleasedKind, ReleasedWorkload, release_plan_hash,
};
use crate::intstr::{IntOrPercent, Rounding, scaled_value};
use crate::plan::{Action, Event, EventType, Guard, ObjectKind, Patch, Plan, Subresource, Target};

/// How long to wait before looking again while a batch or a hand-over is under way.
pub const RECHECK: SignedDuration = SignedDuration::from_secs(2);

/// A pod of the released workload, as the planner reads it.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ReleasePod {
    /// Name.
    pub name: String,
    /// Labels.
    pub labels: BTreeMap<String, String>,
    /// The pod's Ready condition is True.
    pub ready: bool,
    /// Being deleted.
    pub deleting: bool,
}

/// The extra Deployment of a canary-style release, as the planner reads it.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct CanaryDeployment {
    /// Name.
    pub name: String,
    /// `spec.replicas`.
    pub replicas: i32,
    /// `status.replicas`.
    pub status_replicas: i32,
    /// `status.availableReplicas`.
    pub available_replicas: i32,
    /// Finalizers.
    pub finalizers: Vec<String>,
    /// Being deleted.
    pub deleting: bool,
}

/// What the planner reads.
#[derive(Clone, Debug, Default)]
pub struct Snapshot {
    /// The BatchRelease.
    pub release: BatchRelease,
    /// Its workload, when it exists.
    pub workload: Option<ReleasedWorkload>,
    /// The pods the release updates: the workload's, or in a canary-style release the
    /// canary Deployment's.
    pub pods: Vec<ReleasePod>,
    /// A canary-style release's extra Deployment (the newest this BatchRelease owns), when
    /// it exists.
    pub canary: Option<CanaryDeployment>,
    /// The HorizontalPodAutoscalers in the release's namespace (a blue-green release points
    /// the one scaling its workload elsewhere while it runs).
    pub autoscalers: Vec<Autoscaler>,
}

/// What a blue-green release appends to the `scaleTargetRef.name` of the
/// HorizontalPodAutoscaler that scales its workload, so that it scales nothing meanwhile
/// (upstream's `-DisableByRollout`).
pub const HPA_DISABLE_SUFFIX: &str = "-DisableByRollout";

/// A HorizontalPodAutoscaler as a release reads it.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Autoscaler {
    /// Its name.
    pub name: String,
    /// `spec.scaleTargetRef.apiVersion`.
    pub target_api_version: String,
    /// `spec.scaleTargetRef.kind`.
    pub target_kind: String,
    /// `spec.scaleTargetRef.name`.
    pub target_name: String,
}

impl Autoscaler {
    /// Whether it scales `workload`, pointed away or not (its group, kind and name, every
    /// disabling suffix taken off).
    pub fn targets(&self, workload: &ReleasedWorkload) -> bool {
        let kind = workload.kind().object_kind();
        let group = self.target_api_version.rsplit_once('/').map_or("", |(g, _)| g);
        let mut name = self.target_name.as_str();
        while let Some(base) = name.strip_suffix(HPA_DISABLE_SUFFIX) {
            name = base;
        }
        group == kind.group && self.target_kind == kind.kind && name == workload.name
    }

    /// Whether a release pointed it away.
    pub fn disabled(&self) -> bool {
        self.target_name.ends_with(HPA_DISABLE_SUFFIX)
    }
}

/// This BatchRelease as the controller owner reference of what it controls.
fn owner_reference(release: &BatchRelease) -> Value {
    json!({
        "apiVersion": ObjectKind::BATCH_RELEASE.api_version(),
        "kind": ObjectKind::BATCH_RELEASE.kind,
        "name": release.metadata.name.clone().unwrap_or_default(),
        "uid": release.metadata.uid.clone().unwrap_or_default(),
        "controller": true,
        "blockOwnerDeletion": true,
    })
}

/// The owner reference `control-info` holds: this BatchRelease as the workload's controller.
pub fn control_info(release: &BatchRelease) -> String {
    owner_reference(release).to_string()
}

/// The pods batch `batch` (from 0) has on the new revision once done, out of `replicas`:
/// its `canaryReplicas` scaled up, within `0..=replicas`.
pub fn planned_replicas(release: &BatchRelease, batch: usize, replicas: i32) -> i32 {
    release
        .spec
        .release_plan
        .batches
        .get(batch)
        .map(|b| scaled_value(&b.canary_replicas, replicas, Rounding::Up).unwrap_or(0))
        .unwrap_or(0)
        .clamp(0, replicas.max(0))
}

/// Whether the batch is done: enough pods on the new revision, enough of them ready (less
/// `failureThreshold`, scaled against the updated pods; at least one when any is planned),
/// and, with a release id, `to_label` of them labelled with it (fewer than `planned` in a
/// rollback in batches, where the pods already on the revision are not).
pub fn batch_is_ready(
    release: &BatchRelease,
    planned: i32,
    updated: i32,
    updated_ready: i32,
    labelled: i32,
    to_label: i32,
) -> bool {
    let tolerated = release
        .spec
        .release_plan
        .failure_threshold
        .as_ref()
        .map(|t| scaled_value(t, updated, Rounding::Up).unwrap_or(0))
        .unwrap_or(0);
    let labels_ok = release.spec.release_plan.rollout_id.is_empty() || labelled >= to_label;
    updated >= planned
        && updated_ready + tolerated >= planned
        && (planned == 0 || updated_ready >= 1)
        && labels_ok
}

struct Planner<'a> {
    snapshot: &'a Snapshot,
    namespace: String,
    status: BatchReleaseStatus,
    actions: Vec<Action>,
    events: Vec<Event>,
    requeue: Option<SignedDuration>,
}

/// Plans one round of the BatchRelease.
pub fn plan(snapshot: &Snapshot, now: Timestamp) -> Plan<BatchReleaseStatus> {
    let release = &snapshot.release;
    let mut planner = Planner {
        snapshot,
        namespace: release.metadata.namespace.clone().unwrap_or_default(),
        status: release.status.clone().unwrap_or_default(),
        actions: Vec::new(),
        events: Vec::new(),
        requeue: None,
    };
    planner.run(now);
    super::assemble(
        release.status.clone().unwrap_or_default(),
        planner.status,
        planner.actions,
        planner.events,
        planner.requeue,
    )
}

impl Planner<'_> {
    fn release(&self) -> &BatchRelease {
        &self.snapshot.release
    }

    fn target(&self) -> Target {
        let meta = &self.release().metadata;
        Target::new(
            ObjectKind::BATCH_RELEASE,
            Some(&self.namespace),
            meta.name.as_deref().unwrap_or_default(),
        )
        .guarded(Guard::ResourceVersion(meta.resource_version.clone().unwrap_or_default()))
    }

    fn phase(&self) -> RolloutPhase {
        self.status.phase.clone().unwrap_or(RolloutPhase::Preparing)
    }

    fn set_finalizers(&mut self, finalizers: Vec<String>) {
        self.actions.push(Action::PatchObject {
            target: self.target(),
            subresource: Subresource::Main,
            patch: Patch::merge(json!({"metadata": {"finalizers": finalizers}})),
        });
    }

    fn patch_workload(&mut self, workload: &ReleasedWorkload, body: Value) {
        self.actions.push(workload.patch(&self.namespace, body));
    }

    fn run(&mut self, now: Timestamp) {
        let release = self.release().clone();
        let deleting = release.metadata.deletion_timestamp.is_some();
        let finalizers = release.metadata.finalizers.clone().unwrap_or_default();
        let has_finalizer = finalizers.iter().any(|f| f == BATCH_RELEASE_FINALIZER);
        self.status.observed_generation = release.metadata.generation.unwrap_or_default();
        if self.phase() == RolloutPhase::Completed {
            if deleting && has_finalizer {
                let rest =
                    finalizers.into_iter().filter(|f| f != BATCH_RELEASE_FINALIZER).collect();
                self.set_finalizers(rest);
            }
            return;
        }
        if !deleting && !has_finalizer {
            let mut with = finalizers;
            with.push(BATCH_RELEASE_FINALIZER.to_owned());
            self.set_finalizers(with);
        }
        let plan = &release.spec.release_plan;
        let workload = self.snapshot.workload.clone();
        let finalizing = deleting
            || self.phase() == RolloutPhase::Finalizing
            || plan.batch_partition.is_none()
            || workload.as_ref().is_none_or(|w| w.deleting);
        if finalizing {
            self.finalize(workload.as_ref());
            return;
        }
        let Some(workload) = workload else { return };
        if plan.batches.is_empty() {
            self.status.message = "releasePlan.batches is empty".to_owned();
            return;
        }
        // A new or changed plan.
        let hash = release_plan_hash(plan);
        if self.status.observed_release_plan_hash != hash {
            let last = plan.batches.len() as i32 - 1;
            let restart = if self.status.observed_release_plan_hash.is_empty()
                || self.status.observed_rollout_id != plan.rollout_id
            {
                0
            } else {
                plan.batch_partition.unwrap_or(0).clamp(0, last)
            };
            self.status.canary_status.current_batch = restart;
            self.status.canary_status.current_batch_state =
                Some(BatchReleaseBatchStateType::Upgrading);
            self.status.canary_status.batch_ready_time = None;
            self.status.observed_release_plan_hash = hash;
            if self.status.observed_rollout_id != plan.rollout_id {
                // Another release: its revision is recorded afresh, and the pods it need not
                // move counted afresh.
                self.status.update_revision.clear();
                self.status.canary_status.no_need_update_replicas = None;
            }
            self.status.observed_rollout_id = plan.rollout_id.clone();
        }
        if self.status.canary_status.current_batch >= plan.batches.len() as i32 {
            self.status.canary_status.current_batch = plan.batches.len() as i32 - 1;
            self.status.canary_status.current_batch_state =
                Some(BatchReleaseBatchStateType::Upgrading);
        }
        // The workload moved to a revision this release is not about (a third template, or
        // one rolled back), while the plan stays the same: nothing moves until the Rollout
        // restarts or winds up the release.
        let recorded = self.status.update_revision.clone();
        if !recorded.is_empty() && recorded != workload.canary_revision() {
            self.status.message = format!(
                "the workload's revision changed from {recorded} to {}; waiting for the Rollout",
                workload.canary_revision()
            );
            self.requeue = Some(RECHECK);
            return;
        }
        self.status.stable_revision = workload.stable_revision().to_owned();
        self.status.update_revision = workload.canary_revision().to_owned();
        if !workload.status_consistent() {
            self.status.message =
                "waiting for the workload's controller to observe its spec".to_owned();
            self.requeue = Some(RECHECK);
            return;
        }
        let own_uid = release.metadata.uid.clone().unwrap_or_default();
        match workload.controller_uid() {
            Some(uid) if uid == own_uid && !workload.is_held(self.style(&workload)) => {
                // Ours, but no longer held (written over): held again.
                let body =
                    workload.take_control_patch(&control_info(&release), self.style(&workload));
                self.patch_workload(&workload, body);
                self.requeue = Some(RECHECK);
                return;
            }
            Some(uid) if uid == own_uid => {
                if self.style(&workload) == ReleaseStyle::BlueGreen
                    && self.point_autoscaler(&workload, true)
                {
                    self.requeue = Some(RECHECK);
                    return;
                }
            }
            Some(uid) => {
                self.status.message = format!(
                    "the workload is controlled by another BatchRelease (uid {uid}); waiting"
                );
                self.requeue = Some(RECHECK);
                return;
            }
            None => {
                self.status.phase = Some(RolloutPhase::Preparing);
                self.status.message = "taking control of the workload".to_owned();
                let style = self.style(&workload);
                if style == ReleaseStyle::BlueGreen {
                    self.hold_stable_replica_set(&workload);
                }
                let body = workload.take_control_patch(&control_info(&release), style);
                self.patch_workload(&workload, body);
                self.events.push(Event {
                    type_: EventType::Normal,
                    reason: "TakeControl".into(),
                    message: format!(
                        "took control of {} {}",
                        workload.kind().object_kind().kind,
                        workload.name
                    ),
                    after_action: Some(self.actions.len() - 1),
                });
                self.requeue = Some(RECHECK);
                return;
            }
        }
        if self.phase() != RolloutPhase::Progressing {
            self.status.phase = Some(RolloutPhase::Progressing);
            self.status.observed_workload_replicas = workload.replicas;
        }
        if self.status.observed_workload_replicas != workload.replicas {
            self.status.observed_workload_replicas = workload.replicas;
            self.status.canary_status.current_batch_state =
                Some(BatchReleaseBatchStateType::Upgrading);
        }
        self.progress(&workload, now);
    }

    fn style(&self, workload: &ReleasedWorkload) -> ReleaseStyle {
        ReleaseStyle::of(&self.release().spec.release_plan, workload.kind())
    }

    /// The pods on the new revision, and how many of them are ready.
    fn updated_counts(&self, workload: &ReleasedWorkload) -> (i32, i32) {
        let ready = workload.updated_ready_replicas.unwrap_or_else(|| {
            self.snapshot
                .pods
                .iter()
                .filter(|p| !p.deleting && p.ready && workload.pod_is_updated(&p.labels))
                .count() as i32
        });
        (workload.updated_replicas, ready)
    }

    fn progress(&mut self, workload: &ReleasedWorkload, now: Timestamp) {
        let release = self.release().clone();
        let plan = &release.spec.release_plan;
        let style = self.style(workload);
        let batch = self.status.canary_status.current_batch.max(0) as usize;
        let replicas = workload.replicas;
        let mut planned = planned_replicas(&release, batch, replicas);
        // How many pods the release labels by this batch.
        let mut to_label = planned;
        let batch_value = plan.batches.get(batch).map(|b| b.canary_replicas.clone());
        let batch_is_percent = batch_value
            .as_ref()
            .is_some_and(|b| IntOrPercent::parse(b).is_ok_and(IntOrPercent::is_percent));
        // The write that moves the workload to this batch, when it has not moved yet.
        let (write, updated, updated_ready) = match (style, workload.kind()) {
            (ReleaseStyle::Canary, _) => {
                let Some(canary) = self.snapshot.canary.clone() else {
                    self.create_canary(workload);
                    return;
                };
                if canary.deleting {
                    self.status.message =
                        format!("waiting for the old canary Deployment {} to go", canary.name);
                    self.requeue = Some(RECHECK);
                    return;
                }
                let write = (canary.replicas < planned).then(|| {
                    self.patch_canary(&canary.name, json!({"spec": {"replicas": planned}}))
                });
                (write, canary.status_replicas, canary.available_replicas)
            }
            (ReleaseStyle::BlueGreen, _) => {
                let batch_value = batch_value.clone().unwrap_or(IntOrString::Int(0));
                let write = workload.blue_green_batch_needed(planned).then(|| {
                    workload.patch(&self.namespace, workload.blue_green_batch_patch(&batch_value))
                });
                let (updated, ready) = self.updated_counts(workload);
                (write, updated, ready)
            }
            (ReleaseStyle::Partition, ReleasedKind::Deployment) => {
                let batch_value = batch_value.clone().unwrap_or(IntOrString::Int(0));
                planned = super::deployment::new_replica_set_limit(&batch_value, replicas);
                let current = workload
                    .partition
                    .as_ref()
                    .map_or(0, |p| super::deployment::new_replica_set_limit(p, replicas));
                let write = (current < planned).then(|| {
                    workload.patch(&self.namespace, workload.partition_patch(&batch_value))
                });
                let (updated, ready) = self.updated_counts(workload);
                (write, updated, ready)
            }
            (ReleaseStyle::Partition, kind) => {
                if self.rollback_in_batch() {
                    if self.status.canary_status.no_need_update_replicas.is_none() {
                        self.mark_no_need_update(workload);
                        return;
                    }
                    // The pods already on the revision rolled back to stay; the batches are
                    // taken from the others.
                    let no_need = self.status.canary_status.no_need_update_replicas.unwrap_or(0);
                    if no_need > 0 {
                        let new = planned_replicas(&release, batch, replicas - no_need);
                        planned = replicas - (replicas - no_need - new);
                        to_label = new;
                    }
                }
                let desired = desired_partition(
                    kind,
                    replicas - planned,
                    replicas,
                    batch_is_percent,
                    planned >= replicas,
                );
                // The partition only goes down.
                let desired_stable = scaled_value(&desired, replicas, Rounding::Up).unwrap_or(0);
                let lower = workload.partition.is_none() && desired_stable > 0
                    || workload.partition_replicas() > desired_stable;
                let write = lower
                    .then(|| workload.patch(&self.namespace, workload.partition_patch(&desired)));
                let (updated, ready) = self.updated_counts(workload);
                (write, updated, ready)
            }
        };
        self.status.canary_status.updated_replicas = updated;
        self.status.canary_status.updated_ready_replicas = updated_ready;
        let to_label = to_label.min(planned);
        let all_updated = style == ReleaseStyle::Canary;
        let no_need = self.status.canary_status.no_need_update_replicas.unwrap_or(0);
        let labelled = self.label_pods(workload, batch, replicas - no_need, all_updated);
        let ready = batch_is_ready(&release, planned, updated, updated_ready, labelled, to_label);
        let state = self
            .status
            .canary_status
            .current_batch_state
            .clone()
            .unwrap_or(BatchReleaseBatchStateType::Upgrading);
        let total = plan.batches.len();
        let message = |state: &str| {
            format!(
                "batch {} of {total} is {state}: {updated_ready}/{planned} pods ready on the new revision",
                batch + 1
            )
        };
        match state {
            BatchReleaseBatchStateType::Ready if ready => {
                let partition = plan.batch_partition.unwrap_or(i32::MAX);
                if partition > batch as i32 && batch + 1 < total {
                    self.status.canary_status.current_batch = batch as i32 + 1;
                    self.status.canary_status.current_batch_state =
                        Some(BatchReleaseBatchStateType::Upgrading);
                    self.status.canary_status.batch_ready_time = None;
                    self.requeue = Some(SignedDuration::ZERO);
                } else {
                    self.status.message = message("ready");
                }
            }
            BatchReleaseBatchStateType::Verifying => {
                if let Some(write) = write {
                    self.actions.push(write);
                }
                if ready {
                    self.status.canary_status.current_batch_state =
                        Some(BatchReleaseBatchStateType::Ready);
                    self.status.canary_status.batch_ready_time = Some(Time(now));
                    self.status.message = message("ready");
                    self.events.push(Event {
                        type_: EventType::Normal,
                        reason: "BatchReady".into(),
                        message: format!(
                            "batch {} of {total} is ready: {updated_ready}/{planned} pods",
                            batch + 1
                        ),
                        after_action: None,
                    });
                } else {
                    self.status.message = message("verifying");
                    self.requeue = Some(RECHECK);
                }
            }
            // Upgrading, a Ready batch no longer ready, or a state not known.
            _ => {
                if let Some(write) = write {
                    self.actions.push(write);
                }
                self.status.canary_status.current_batch_state =
                    Some(BatchReleaseBatchStateType::Verifying);
                self.status.message = message("upgrading");
                self.requeue = Some(RECHECK);
            }
        }
    }

    /// Labels the updated pods that lack the release id, filling the current batch first,
    /// then the earlier ones; returns how many pods carry the release id afterwards.
    fn label_pods(
        &mut self,
        workload: &ReleasedWorkload,
        batch: usize,
        replicas: i32,
        all_updated: bool,
    ) -> i32 {
        let rollout_id = self.release().spec.release_plan.rollout_id.clone();
        if rollout_id.is_empty() {
            return 0;
        }
        let mut pods: Vec<&ReleasePod> = self
            .snapshot
            .pods
            .iter()
            .filter(|p| !p.deleting && (all_updated || workload.pod_is_updated(&p.labels)))
            .collect();
        // In a rollback in batches the pods already on the revision are not labelled.
        pods.retain(|p| {
            p.labels.get(ROLLOUT_ID_LABEL) == Some(&rollout_id)
                || p.labels.get(NO_NEED_UPDATE_LABEL) != Some(&rollout_id)
        });
        pods.sort_by(|a, b| a.name.cmp(&b.name));
        let mut per_batch: BTreeMap<String, i32> = BTreeMap::new();
        let mut unlabelled = Vec::new();
        for pod in pods {
            if pod.labels.get(ROLLOUT_ID_LABEL) == Some(&rollout_id) {
                let id = pod.labels.get(ROLLOUT_BATCH_ID_LABEL).cloned().unwrap_or_default();
                *per_batch.entry(id).or_default() += 1;
            } else {
                unlabelled.push(pod.name.clone());
            }
        }
        let mut labelled: i32 = per_batch.values().sum();
        let mut queue = unlabelled.into_iter();
        let release = self.release().clone();
        for b in (0..=batch).rev() {
            let before = if b == 0 { 0 } else { planned_replicas(&release, b - 1, replicas) };
            let expected = (planned_replicas(&release, b, replicas) - before).max(0);
            let id = (b + 1).to_string();
            let have = per_batch.get(&id).copied().unwrap_or(0);
            for _ in have..expected {
                let Some(name) = queue.next() else { return labelled };
                self.actions.push(Action::PatchObject {
                    target: Target::new(ObjectKind::POD, Some(&self.namespace), &name),
                    subresource: Subresource::Main,
                    patch: Patch::Merge(Arc::new(json!({"metadata": {"labels": {
                        ROLLOUT_ID_LABEL: rollout_id,
                        ROLLOUT_BATCH_ID_LABEL: id,
                    }}}))),
                });
                labelled += 1;
            }
        }
        labelled
    }

    /// The merge patch of the canary Deployment `name` with `body`.
    fn patch_canary(&self, name: &str, body: Value) -> Action {
        Action::PatchObject {
            target: Target::new(ObjectKind::DEPLOYMENT, Some(&self.namespace), name),
            subresource: Subresource::Main,
            patch: Patch::merge(body),
        }
    }

    /// Points the HorizontalPodAutoscaler that scales `workload` away from it (`away`), or
    /// back; returns whether that takes a write.
    fn point_autoscaler(&mut self, workload: &ReleasedWorkload, away: bool) -> bool {
        let Some(hpa) = self
            .snapshot
            .autoscalers
            .iter()
            .find(|a| a.targets(workload) && a.disabled() != away)
            .cloned()
        else {
            return false;
        };
        let name = if away {
            format!("{}{HPA_DISABLE_SUFFIX}", workload.name)
        } else {
            workload.name.clone()
        };
        self.actions.push(Action::PatchObject {
            target: Target::new(
                ObjectKind::HORIZONTAL_POD_AUTOSCALER,
                Some(&self.namespace),
                &hpa.name,
            ),
            subresource: Subresource::Main,
            patch: Patch::merge(json!({"spec": {"scaleTargetRef": {
                "apiVersion": hpa.target_api_version,
                "kind": hpa.target_kind,
                "name": name,
            }}})),
        });
        let (reason, message) = if away {
            (
                "DisableHPA",
                format!(
                    "HorizontalPodAutoscaler {} scales nothing while the blue-green release runs",
                    hpa.name
                ),
            )
        } else {
            (
                "RestoreHPA",
                format!("HorizontalPodAutoscaler {} scales {} again", hpa.name, workload.name),
            )
        };
        self.events.push(Event {
            type_: EventType::Normal,
            reason: reason.into(),
            message,
            after_action: Some(self.actions.len() - 1),
        });
        true
    }

    /// A blue-green release of a Deployment gives its stable ReplicaSet the
    /// `minReadySeconds` no pod reaches, as upstream does when it takes control: rolled back
    /// to, that ReplicaSet's pods then push none of the new ones out before the Rollout
    /// moves the traffic back.
    fn hold_stable_replica_set(&mut self, workload: &ReleasedWorkload) {
        let Some(rs) = workload
            .stable_replica_set
            .as_ref()
            .filter(|rs| rs.min_ready_seconds != super::workload::BLUE_GREEN_MIN_READY_SECONDS)
        else {
            return;
        };
        self.actions.push(Action::PatchObject {
            target: Target::new(ObjectKind::REPLICA_SET, Some(&self.namespace), &rs.name),
            subresource: Subresource::Main,
            patch: Patch::merge(json!({"spec": {
                "minReadySeconds": super::workload::BLUE_GREEN_MIN_READY_SECONDS
            }})),
        });
    }

    /// Whether this release is a rollback in batches (the Rollout set
    /// `rollouts.kruise.io/rollback-in-batch`).
    fn rollback_in_batch(&self) -> bool {
        let annotations = self.release().metadata.annotations.clone().unwrap_or_default();
        annotations.get(ROLLBACK_IN_BATCH_ANNOTATION).is_some_and(|v| !v.is_empty())
    }

    /// The first round of a rollback in batches: the pods already on the revision rolled back
    /// to (never moved by the release) are labelled `rollouts.kruise.io/no-need-update` with
    /// the release id and counted, so that the batches are taken from the others.
    fn mark_no_need_update(&mut self, workload: &ReleasedWorkload) {
        let rollout_id = self.release().spec.release_plan.rollout_id.clone();
        let mut count = 0;
        for pod in self.snapshot.pods.iter().filter(|p| !p.deleting) {
            if !workload.pod_is_updated(&pod.labels) {
                continue;
            }
            count += 1;
            if pod.labels.get(NO_NEED_UPDATE_LABEL) != Some(&rollout_id) {
                self.actions.push(Action::PatchObject {
                    target: Target::new(ObjectKind::POD, Some(&self.namespace), &pod.name),
                    subresource: Subresource::Main,
                    patch: Patch::merge(
                        json!({"metadata": {"labels": {NO_NEED_UPDATE_LABEL: rollout_id}}}),
                    ),
                });
            }
        }
        self.status.canary_status.no_need_update_replicas = Some(count);
        self.status.message = format!(
            "rolling back in batches: {count} pods already run the revision rolled back to"
        );
        self.requeue = Some(RECHECK);
    }

    /// Creates the canary Deployment of a canary-style release.
    fn create_canary(&mut self, workload: &ReleasedWorkload) {
        let release = self.release().clone();
        let owner = owner_reference(&release);
        let Some(spec) = workload.spec.clone() else { return };
        let revision = workload.canary_revision().to_owned();
        let body = super::deployment::canary_deployment(
            &workload.name,
            &self.namespace,
            &revision,
            &spec,
            &owner,
            &control_info(&release),
            release.spec.release_plan.patch_pod_template_metadata.as_ref(),
        );
        let name = super::deployment::canary_deployment_name(&workload.name, &revision);
        self.actions.push(Action::CreateObject {
            target: Target::new(ObjectKind::DEPLOYMENT, Some(&self.namespace), &name),
            body: Arc::new(body),
        });
        self.events.push(Event {
            type_: EventType::Normal,
            reason: "CreateCanary".into(),
            message: format!("created the canary Deployment {name}"),
            after_action: Some(self.actions.len() - 1),
        });
        self.status.message = format!("creating the canary Deployment {name}");
        self.requeue = Some(RECHECK);
    }

    fn finalize(&mut self, workload: Option<&ReleasedWorkload>) {
        let release = self.release().clone();
        self.status.phase = Some(RolloutPhase::Finalizing);
        let own_uid = release.metadata.uid.clone().unwrap_or_default();
        let release_all = release.spec.release_plan.batch_partition.is_none();
        let style = workload.map_or(ReleaseStyle::Partition, |w| self.style(w));
        match workload {
            Some(w) if !w.deleting && w.controller_uid().as_deref() == Some(own_uid.as_str()) => {
                self.status.message = "giving control of the workload back".to_owned();
                self.patch_workload(w, w.release_control_patch(release_all, style));
                self.requeue = Some(RECHECK);
            }
            Some(w) if style == ReleaseStyle::BlueGreen && !w.deleting && !all_on_update(w) => {
                self.status.message =
                    "waiting for the old pods to go and every pod to be updated and ready"
                        .to_owned();
                self.requeue = Some(RECHECK);
            }
            Some(w)
                if style == ReleaseStyle::Canary
                    && release_all
                    && !w.deleting
                    && release.spec.release_plan.finalizing_policy
                        == Some(FinalizingPolicyType::WaitResume)
                    && !deployment_resumed(w) =>
            {
                self.status.message =
                    "waiting for the Deployment to roll all its pods to the new revision"
                        .to_owned();
                self.requeue = Some(RECHECK);
            }
            _ if self.snapshot.canary.as_ref().is_some_and(|c| {
                c.finalizers.iter().any(|f| f == super::deployment::CANARY_FINALIZER)
            }) =>
            {
                // Invariant: the guard just matched a canary.
                let canary = self.snapshot.canary.clone().unwrap_or_default();
                let rest: Vec<String> = canary
                    .finalizers
                    .into_iter()
                    .filter(|f| f != super::deployment::CANARY_FINALIZER)
                    .collect();
                let action =
                    self.patch_canary(&canary.name, json!({"metadata": {"finalizers": rest}}));
                self.actions.push(action);
                self.status.message = "letting the canary Deployment go".to_owned();
                self.requeue = Some(RECHECK);
            }
            Some(w)
                if style == ReleaseStyle::BlueGreen
                    && release_all
                    && !w.deleting
                    && self.snapshot.autoscalers.iter().any(|a| a.targets(w) && a.disabled()) =>
            {
                self.point_autoscaler(w, false);
                self.status.message =
                    "giving the HorizontalPodAutoscaler its workload back".to_owned();
                self.requeue = Some(RECHECK);
            }
            _ => {
                self.status.phase = Some(RolloutPhase::Completed);
                self.status.message = "the release is finalized".to_owned();
                self.status.canary_status.batch_ready_time = None;
            }
        }
    }
}

/// A Deployment given back has rolled: its controller saw its spec, every pod is on its
/// template, and enough are available (`maxUnavailable` short at most).
fn deployment_resumed(w: &ReleasedWorkload) -> bool {
    let (_, unavailable) =
        w.rolling_update.clone().unwrap_or_default().defaulted().fenceposts(w.replicas);
    !w.paused
        && w.status_consistent()
        && w.status_replicas == w.updated_replicas
        && w.updated_replicas == w.replicas
        && w.available_replicas + unavailable >= w.replicas
}

/// Every pod of a workload given back runs its update revision and is ready, and no other
/// is left (the end of a blue-green release, or of its rollback).
fn all_on_update(w: &ReleasedWorkload) -> bool {
    let ready = match w.kind() {
        ReleasedKind::Deployment => w.available_replicas,
        _ => w.updated_ready_replicas.unwrap_or(w.updated_replicas),
    };
    w.status_consistent()
        && w.status_replicas == w.replicas
        && w.updated_replicas == w.replicas
        && ready >= w.replicas
}
