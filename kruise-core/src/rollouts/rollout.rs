//! The Rollout planner: the release's step machine.
//!
//! [`plan`] takes a [`Snapshot`] (the Rollout, its workload and its BatchRelease) and `now`,
//! and returns the writes (the Rollout's finalizer and hash, the workload's
//! `rollouts.kruise.io/workload-type` label and `in-progressing` annotation, the BatchRelease)
//! and the new status. It follows upstream's controller:
//! - **Phases:** Initial → Healthy; Healthy → Progressing once the workload webhook marked a
//!   release (`in-progressing`); back to Healthy when the release is done; Terminating while
//!   deleted; Disabling → Disabled with `spec.disabled`.
//! - **Progressing**, by the Progressing condition's reason: Initializing (a new
//!   `status.canaryStatus` at step 1), InRolling (the steps), Paused (`spec.strategy.paused`),
//!   Cancelling (the template went back to the stable revision: a rollback), Finalising (all
//!   steps done), Completed.
//! - **A step** (`canaryStatus.currentStepState`): BeforeStepUpgrade → StepUpgrade (the
//!   BatchRelease asked for the step's batch, until it reports it Ready) → StepTrafficRouting
//!   → StepMetricsAnalysis → StepPaused (approval, or `pause.duration` seconds; a last step of
//!   "100%" does not pause) → StepReady (approved) → the next step, or Completed.
//!   `kubectl kruise rollout approve` writes StepReady over StepPaused; writing
//!   `canaryStatus.nextStepIndex` jumps.
//! - **Finalising:** the workload loses `in-progressing`, the BatchRelease is told to release
//!   everything (`batchPartition: null`) and, once Completed, deleted.
//! - A new template in the middle of a release (neither the canary nor the stable revision)
//!   restarts it (Initializing, "Workload is continuous release"); a changed list of steps
//!   moves to the first step at or beyond the batch already released.

use jiff::{SignedDuration, Timestamp};
use k8s_openapi::api::core::v1::Service;
use k8s_openapi::api::networking::v1::Ingress;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;
use kruise_api::rollouts::v1beta1::{
    BatchRelease, BatchReleaseBatchStateType, BatchReleaseSpec, CanaryStatus, CanaryStepState,
    CommonStatus, FinalisingStepType, FinalizingPolicyType, ReleaseBatch, ReleasePlan,
    RollingStyleType, Rollout, RolloutPhase, RolloutStatus, TrafficRoutingRef,
};
use serde_json::{Value, json};
use sha2::Digest as _;

use super::traffic;
use super::{
    IN_PROGRESSING_ANNOTATION, ROLLBACK_IN_BATCH_ANNOTATION, ROLLOUT_FINALIZER,
    ROLLOUT_HASH_ANNOTATION, ReleasedWorkload, WORKLOAD_TYPE_LABEL, condition, release_plan_hash,
    set_condition,
};
use crate::intstr::{Rounding, scaled_value};
use crate::plan::{Action, Event, EventType, Guard, ObjectKind, Patch, Plan, Subresource, Target};

/// How long to wait before looking again while something else must happen first.
pub const RECHECK: SignedDuration = SignedDuration::from_secs(3);

/// The condition types.
pub mod conditions {
    /// A release is under way (or was).
    pub const PROGRESSING: &str = "Progressing";
    /// The last release succeeded (True) or was cancelled (False).
    pub const SUCCEEDED: &str = "Succeeded";
    /// The Rollout is being deleted.
    pub const TERMINATING: &str = "Terminating";
}

/// The Progressing condition's reasons.
pub mod reasons {
    /// A release was noticed.
    pub const INITIALIZING: &str = "Initializing";
    /// The steps are running.
    pub const IN_ROLLING: &str = "InRolling";
    /// Every step is done; winding up.
    pub const FINALISING: &str = "Finalising";
    /// Done.
    pub const COMPLETED: &str = "Completed";
    /// Rolled back; winding up.
    pub const CANCELLING: &str = "Cancelling";
    /// `spec.strategy.paused`.
    pub const PAUSED: &str = "Paused";
    /// Terminating, winding up.
    pub const IN_TERMINATING: &str = "InTerminating";
}

/// What the planner reads.
#[derive(Clone, Debug, Default)]
pub struct Snapshot {
    /// The Rollout.
    pub rollout: Rollout,
    /// Its workload, when it exists.
    pub workload: Option<ReleasedWorkload>,
    /// Its BatchRelease (named as the Rollout), when it exists.
    pub batch_release: Option<BatchRelease>,
    /// The objects its traffic routing names, as read.
    pub traffic: TrafficObjects,
    /// The TrafficRouting it names ([`super::trafficrouting::named_by`]), when it exists.
    pub traffic_routing: Option<kruise_api::rollouts::v1alpha1::TrafficRouting>,
    /// Kruise Rollout's `AppendPodSelector` gate: the canary Service also selects the
    /// `patchPodTemplateMetadata` labels the stable Service's selector lacks.
    pub append_pod_selector: bool,
}

/// The objects the Rollout's (first) `trafficRoutings` entry names, when they exist.
#[derive(Clone, Debug, Default)]
pub struct TrafficObjects {
    /// The workload's Service (`service`).
    pub stable_service: Option<Service>,
    /// `<service>-canary`.
    pub canary_service: Option<Service>,
    /// The Ingress (`ingress.name`).
    pub ingress: Option<Ingress>,
    /// `<ingress>-canary`.
    pub canary_ingress: Option<Ingress>,
    /// The Gateway API HTTPRoute (`gateway.httpRouteName`), as JSON.
    pub http_route: Option<Value>,
}

/// Why the release is being wound up.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Finalise {
    Success,
    Rollback,
    Disabled,
    Deleting,
}

/// The hash of the steps (without pauses and failureThreshold), which the Rollout keeps in
/// `rollouts.kruise.io/hash` to notice a changed plan: upstream's SHA-256, hex, then
/// safe-encoded.
pub fn rollout_hash(rollout: &Rollout) -> String {
    // Invariant: the strategy holds only strings, numbers and maps, which always encode.
    let json = if let Some(mut canary) = rollout.spec.strategy.canary.clone() {
        canary.failure_threshold = None;
        for step in &mut canary.steps {
            step.pause = Default::default();
        }
        serde_json::to_vec(&canary).unwrap_or_default()
    } else if let Some(mut blue_green) = rollout.spec.strategy.blue_green.clone() {
        blue_green.failure_threshold = None;
        for step in &mut blue_green.steps {
            step.pause = Default::default();
        }
        serde_json::to_vec(&blue_green).unwrap_or_default()
    } else {
        return String::new();
    };
    let hex = super::hex(&sha2::Sha256::digest(&json));
    crate::revision::hash::safe_encode(&hex)
}

/// The step after `current` (from 1), or -1 after the last.
fn next_step(rollout: &Rollout, current: i32) -> i32 {
    if current >= steps(rollout).len() as i32 { -1 } else { current + 1 }
}

/// The steps of the Rollout's strategy (canary, else blue-green).
pub fn steps(rollout: &Rollout) -> &[kruise_api::rollouts::v1beta1::CanaryStep] {
    let strategy = &rollout.spec.strategy;
    match (&strategy.canary, &strategy.blue_green) {
        (Some(c), _) => &c.steps,
        (None, Some(b)) => &b.steps,
        (None, None) => &[],
    }
}

/// Whether the Rollout releases blue-green (`strategy.blueGreen`, and no canary).
pub fn is_blue_green(rollout: &Rollout) -> bool {
    rollout.spec.strategy.canary.is_none() && rollout.spec.strategy.blue_green.is_some()
}

/// The strategy's traffic routings (canary or blue-green).
pub fn traffic_routings(rollout: &Rollout) -> &[TrafficRoutingRef] {
    let strategy = &rollout.spec.strategy;
    match (&strategy.canary, &strategy.blue_green) {
        (Some(c), _) => &c.traffic_routings,
        (None, Some(b)) => &b.traffic_routings,
        (None, None) => &[],
    }
}

/// Whether a rollback of `workload` runs in batches: the Rollout says so
/// (`rollouts.kruise.io/rollback-in-batch: "true"`), routes no traffic, and releases a
/// CloneSet or a StatefulSet (Advanced or not) by partition, as upstream.
pub fn rollback_in_batch(rollout: &Rollout, workload: &ReleasedWorkload) -> bool {
    let annotations = rollout.metadata.annotations.clone().unwrap_or_default();
    annotations.get(ROLLBACK_IN_BATCH_ANNOTATION).map(String::as_str) == Some("true")
        && traffic_routings(rollout).is_empty()
        && !is_blue_green(rollout)
        && matches!(
            workload.kind(),
            super::ReleasedKind::CloneSet
                | super::ReleasedKind::AdvancedStatefulSet
                | super::ReleasedKind::StatefulSet
        )
}

/// A blue-green status as the step machine's working status (the fields the two share).
fn from_blue_green(status: kruise_api::rollouts::v1beta1::BlueGreenStatus) -> CanaryStatus {
    CanaryStatus {
        common: status.common,
        canary_revision: status.updated_revision,
        canary_replicas: status.updated_replicas,
        canary_ready_replicas: status.updated_ready_replicas,
    }
}

/// The working status back as a blue-green status.
fn to_blue_green(status: CanaryStatus) -> kruise_api::rollouts::v1beta1::BlueGreenStatus {
    kruise_api::rollouts::v1beta1::BlueGreenStatus {
        common: status.common,
        updated_revision: status.canary_revision,
        updated_replicas: status.canary_replicas,
        updated_ready_replicas: status.canary_ready_replicas,
    }
}

/// How the Rollout's releases move its workload: a Deployment with
/// `enableExtraWorkloadForCanary` through a canary Deployment, everything else by partition.
pub fn release_style(rollout: &Rollout) -> super::ReleaseStyle {
    if is_blue_green(rollout) {
        return super::ReleaseStyle::BlueGreen;
    }
    let reference = &rollout.spec.workload_ref;
    let is_deployment = super::ReleasedKind::from_ref(&reference.api_version, &reference.kind)
        == Ok(super::ReleasedKind::Deployment);
    let extra =
        rollout.spec.strategy.canary.as_ref().is_some_and(|c| c.enable_extra_workload_for_canary);
    if is_deployment && extra {
        super::ReleaseStyle::Canary
    } else {
        super::ReleaseStyle::Partition
    }
}

/// The BatchRelease spec for a release at `step` (from 1).
pub fn desired_batch_release(rollout: &Rollout, rollout_id: &str, step: i32) -> BatchReleaseSpec {
    let style = release_style(rollout);
    let canary = match (&rollout.spec.strategy.canary, &rollout.spec.strategy.blue_green) {
        (None, Some(b)) => kruise_api::rollouts::v1beta1::CanaryStrategy {
            steps: b.steps.clone(),
            failure_threshold: b.failure_threshold.clone(),
            ..Default::default()
        },
        (canary, _) => canary.clone().unwrap_or_default(),
    };
    BatchReleaseSpec {
        workload_ref: rollout.spec.workload_ref.clone(),
        release_plan: ReleasePlan {
            batches: canary
                .steps
                .iter()
                .map(|s| ReleaseBatch {
                    canary_replicas: s.replicas.clone().unwrap_or(IntOrString::Int(0)),
                })
                .collect(),
            batch_partition: Some(step - 1),
            rollout_id: rollout_id.to_owned(),
            failure_threshold: canary.failure_threshold,
            finalizing_policy: None,
            patch_pod_template_metadata: canary
                .patch_pod_template_metadata
                .clone()
                .filter(|_| style == super::ReleaseStyle::Canary),
            rolling_style: Some(match style {
                super::ReleaseStyle::Canary => RollingStyleType::Canary,
                super::ReleaseStyle::Partition => RollingStyleType::Partition,
                super::ReleaseStyle::BlueGreen => RollingStyleType::BlueGreen,
            }),
            enable_extra_workload_for_canary: false,
        },
    }
}

struct Planner<'a> {
    snapshot: &'a Snapshot,
    namespace: String,
    name: String,
    hash: String,
    now: Timestamp,
    status: RolloutStatus,
    actions: Vec<Action>,
    events: Vec<Event>,
    requeue: Option<SignedDuration>,
}

/// Plans one round of the Rollout.
pub fn plan(snapshot: &Snapshot, now: Timestamp) -> Plan<RolloutStatus> {
    let rollout = &snapshot.rollout;
    let blue_green = is_blue_green(rollout);
    // A blue-green release runs the same step machine over `blueGreenStatus`.
    let mut status = rollout.status.clone().unwrap_or_default();
    if blue_green {
        status.canary_status = status.blue_green_status.take().map(from_blue_green);
    }
    let mut planner = Planner {
        snapshot,
        namespace: rollout.metadata.namespace.clone().unwrap_or_default(),
        name: rollout.metadata.name.clone().unwrap_or_default(),
        hash: rollout_hash(rollout),
        now,
        status,
        actions: Vec::new(),
        events: Vec::new(),
        requeue: None,
    };
    planner.run();
    if let Some(canary) = &planner.status.canary_status {
        planner.status.current_step_index = canary.common.current_step_index;
        planner.status.current_step_state = canary.common.current_step_state.clone();
    }
    if blue_green {
        planner.status.blue_green_status = planner.status.canary_status.take().map(to_blue_green);
    }
    super::assemble(
        rollout.status.clone().unwrap_or_default(),
        planner.status,
        planner.actions,
        planner.events,
        planner.requeue,
    )
}

impl Planner<'_> {
    fn rollout(&self) -> &Rollout {
        &self.snapshot.rollout
    }

    fn self_target(&self) -> Target {
        Target::new(ObjectKind::ROLLOUT, Some(&self.namespace), &self.name).guarded(
            Guard::ResourceVersion(
                self.rollout().metadata.resource_version.clone().unwrap_or_default(),
            ),
        )
    }

    fn patch_self(&mut self, body: Value) {
        self.actions.push(Action::PatchObject {
            target: self.self_target(),
            subresource: Subresource::Main,
            patch: Patch::merge(body),
        });
    }

    fn patch_workload(&mut self, workload: &ReleasedWorkload, body: Value) {
        self.actions.push(workload.patch(&self.namespace, body));
    }

    fn batch_release_target(&self) -> Target {
        Target::new(ObjectKind::BATCH_RELEASE, Some(&self.namespace), &self.name)
    }

    fn event(&mut self, reason: &'static str, message: String) {
        self.events.push(Event {
            type_: EventType::Normal,
            reason: reason.into(),
            message,
            after_action: None,
        });
    }

    fn phase(&self) -> Option<RolloutPhase> {
        self.status.phase.clone()
    }

    fn progressing_reason(&self) -> Option<String> {
        self.status
            .conditions
            .iter()
            .find(|c| c.type_ == conditions::PROGRESSING)
            .map(|c| c.reason.clone())
    }

    fn set_progressing(&mut self, status: bool, reason: &str, message: &str) {
        set_condition(
            &mut self.status.conditions,
            condition(conditions::PROGRESSING, status, reason, message, self.now),
        );
        self.status.message = message.to_owned();
    }

    fn run(&mut self) {
        let rollout = self.rollout().clone();
        let deleting = rollout.metadata.deletion_timestamp.is_some();
        let old_phase = self.phase();
        let finalizers = rollout.metadata.finalizers.clone().unwrap_or_default();
        if deleting && !finalizers.iter().any(|f| f == ROLLOUT_FINALIZER) {
            // Wound up already: the API server removes it.
            return;
        }
        // The Rollout's own metadata: finalizer and hash.
        let mut meta = serde_json::Map::new();
        if !deleting && !finalizers.iter().any(|f| f == ROLLOUT_FINALIZER) {
            let mut with = finalizers.clone();
            with.push(ROLLOUT_FINALIZER.to_owned());
            meta.insert("finalizers".into(), json!(with));
        }
        let annotations = rollout.metadata.annotations.clone().unwrap_or_default();
        if annotations.get(ROLLOUT_HASH_ANNOTATION) != Some(&self.hash) && !self.hash.is_empty() {
            meta.insert("annotations".into(), json!({ROLLOUT_HASH_ANNOTATION: self.hash}));
        }
        if !meta.is_empty() {
            self.patch_self(json!({"metadata": meta}));
        }
        let workload = self.snapshot.workload.clone();
        if let Some(w) = &workload {
            let kind = w.kind().workload_type();
            if w.labels.get(WORKLOAD_TYPE_LABEL).map(String::as_str) != Some(kind) && !deleting {
                self.patch_workload(
                    w,
                    json!({"metadata": {"labels": {WORKLOAD_TYPE_LABEL: kind}}}),
                );
            }
        }
        self.status.observed_generation = rollout.metadata.generation.unwrap_or_default();
        // The phase.
        if deleting {
            if self.phase() != Some(RolloutPhase::Terminating) {
                self.status.phase = Some(RolloutPhase::Terminating);
                set_condition(
                    &mut self.status.conditions,
                    condition(
                        conditions::TERMINATING,
                        true,
                        reasons::IN_TERMINATING,
                        "Rollout is in terminating",
                        self.now,
                    ),
                );
            }
        } else if rollout.spec.disabled
            && !matches!(self.phase(), Some(RolloutPhase::Disabled | RolloutPhase::Disabling))
        {
            if self.phase() == Some(RolloutPhase::Progressing) {
                self.status.phase = Some(RolloutPhase::Disabling);
                self.status.message = "Disabling rollout, release resources".to_owned();
            } else {
                self.status.phase = Some(RolloutPhase::Disabled);
                self.status.message = "Rollout is disabled".to_owned();
            }
        }
        if self.phase().is_none() || self.phase() == Some(RolloutPhase::Other(String::new())) {
            self.status.phase = Some(RolloutPhase::Initial);
        }
        match &workload {
            None => {
                if deleting || old_phase == Some(RolloutPhase::Disabling) {
                    // Nothing left to release but the BatchRelease.
                } else if !rollout.spec.disabled {
                    self.status = RolloutStatus {
                        observed_generation: self.status.observed_generation,
                        phase: Some(RolloutPhase::Initial),
                        message: "Workload Not Found".to_owned(),
                        ..Default::default()
                    };
                    return;
                }
            }
            Some(w) if !w.status_consistent() => {
                self.requeue = Some(RECHECK);
                return;
            }
            Some(w) => {
                if let Some(canary) = &mut self.status.canary_status
                    && !canary.canary_revision.is_empty()
                    && canary.canary_revision == w.canary_revision()
                {
                    canary.common.observed_rollout_id = w.rollout_id();
                    canary.common.observed_workload_generation = w.generation;
                }
                self.calculate_phase(w);
            }
        }
        match old_phase {
            Some(RolloutPhase::Progressing) => self.progressing(workload.as_ref()),
            Some(RolloutPhase::Terminating) => {
                let done = self.finalise(Finalise::Deleting, workload.as_ref());
                if done {
                    set_condition(
                        &mut self.status.conditions,
                        condition(
                            conditions::TERMINATING,
                            false,
                            reasons::COMPLETED,
                            "Rollout is in terminating",
                            self.now,
                        ),
                    );
                    let rest: Vec<String> =
                        finalizers.into_iter().filter(|f| f != ROLLOUT_FINALIZER).collect();
                    self.patch_self(json!({"metadata": {"finalizers": rest}}));
                }
            }
            Some(RolloutPhase::Disabling) => {
                let done = self.finalise(Finalise::Disabled, workload.as_ref());
                if done {
                    self.status.phase = Some(RolloutPhase::Disabled);
                    self.status.message = "Rollout is disabled".to_owned();
                }
            }
            _ => {}
        }
    }

    /// Upstream's `calculateRolloutStatus`, after deletion and disabling.
    fn calculate_phase(&mut self, workload: &ReleasedWorkload) {
        let rollout = self.rollout().clone();
        match self.phase() {
            Some(RolloutPhase::Initial) => {
                self.status.phase = Some(RolloutPhase::Healthy);
                self.status.message = "rollout is healthy".to_owned();
            }
            Some(RolloutPhase::Healthy) => {
                if workload.in_progressing() {
                    self.status.phase = Some(RolloutPhase::Progressing);
                    self.set_progressing(true, reasons::INITIALIZING, "Rollout is in Progressing");
                    self.status.conditions.retain(|c| c.type_ != conditions::SUCCEEDED);
                    self.event("Progressing", format!("a release of {} started", workload.name));
                } else if self.status.canary_status.is_none() {
                    let total = steps(&rollout).len() as i32;
                    self.status.canary_status = Some(CanaryStatus {
                        common: CommonStatus {
                            observed_workload_generation: workload.generation,
                            observed_rollout_id: workload.rollout_id(),
                            rollout_hash: self.hash.clone(),
                            stable_revision: workload.stable_revision().to_owned(),
                            pod_template_hash: workload.canary_revision().to_owned(),
                            current_step_index: total,
                            next_step_index: next_step(&rollout, total),
                            current_step_state: CanaryStepState::Completed,
                            ..Default::default()
                        },
                        canary_revision: workload.canary_revision().to_owned(),
                        ..Default::default()
                    });
                    self.status.message = "workload deployment is completed".to_owned();
                }
            }
            Some(RolloutPhase::Disabled) if !rollout.spec.disabled => {
                self.status.phase = Some(RolloutPhase::Healthy);
                self.status.message = "rollout is healthy".to_owned();
            }
            _ => {}
        }
    }

    fn progressing(&mut self, workload: Option<&ReleasedWorkload>) {
        let Some(workload) = workload else { return };
        let rollout = self.rollout().clone();
        match self.progressing_reason().as_deref() {
            Some(reasons::INITIALIZING) => {
                if !self.hold_traffic_routing(true) {
                    return;
                }
                self.status.canary_status = Some(CanaryStatus {
                    common: CommonStatus {
                        observed_workload_generation: workload.generation,
                        observed_rollout_id: workload.rollout_id(),
                        rollout_hash: self.hash.clone(),
                        stable_revision: workload.stable_revision().to_owned(),
                        current_step_index: 1,
                        next_step_index: next_step(&rollout, 1),
                        current_step_state: CanaryStepState::BeforeStepUpgrade,
                        last_update_time: Some(Time(self.now)),
                        ..Default::default()
                    },
                    canary_revision: workload.canary_revision().to_owned(),
                    ..Default::default()
                });
                self.set_progressing(true, reasons::IN_ROLLING, "Rollout is in Progressing");
            }
            Some(reasons::IN_ROLLING) => self.in_rolling(workload),
            Some(reasons::FINALISING) => {
                let done = self.finalise(Finalise::Success, Some(workload));
                if done {
                    self.set_progressing(
                        false,
                        reasons::COMPLETED,
                        "Rollout progressing has been completed",
                    );
                    set_condition(
                        &mut self.status.conditions,
                        condition(
                            conditions::SUCCEEDED,
                            true,
                            reasons::COMPLETED,
                            "Rollout progressing has been completed",
                            self.now,
                        ),
                    );
                    self.event(
                        "Completed",
                        format!("the release of {} is complete", workload.name),
                    );
                }
            }
            Some(reasons::CANCELLING) => {
                let done = self.finalise(Finalise::Rollback, Some(workload));
                if done {
                    self.set_progressing(
                        false,
                        reasons::COMPLETED,
                        "Rollout progressing has been cancelled",
                    );
                    set_condition(
                        &mut self.status.conditions,
                        condition(
                            conditions::SUCCEEDED,
                            false,
                            reasons::CANCELLING,
                            "Rollout progressing has been cancelled",
                            self.now,
                        ),
                    );
                    self.event(
                        "Cancelled",
                        format!("the release of {} was rolled back", workload.name),
                    );
                }
            }
            Some(reasons::PAUSED) if !rollout.spec.strategy.paused => {
                self.set_progressing(true, reasons::IN_ROLLING, "Rollout is in Progressing");
            }
            Some(reasons::COMPLETED) => {
                self.status.phase = Some(RolloutPhase::Healthy);
            }
            _ => {}
        }
    }

    fn in_rolling(&mut self, workload: &ReleasedWorkload) {
        let rollout = self.rollout().clone();
        let Some(canary) = self.status.canary_status.clone() else {
            self.set_progressing(true, reasons::INITIALIZING, "Rollout is in Progressing");
            return;
        };
        if workload.in_rollback() && workload.canary_revision() != canary.canary_revision {
            if rollback_in_batch(&rollout, workload) {
                self.restart_for_rollback(workload, canary);
                return;
            }
            self.set_progressing(
                true,
                reasons::CANCELLING,
                "The workload has been rolled back and the rollout process will be cancelled",
            );
            return;
        }
        if rollout.spec.strategy.paused {
            self.set_progressing(
                true,
                reasons::PAUSED,
                "Rollout has been paused, you can resume it by kube-cli",
            );
            return;
        }
        if workload.canary_revision() != canary.canary_revision && is_blue_green(&rollout) {
            // Upstream refuses a third revision in a blue-green release.
            self.status.message = "new version releasing detected in the progress of blue-green release, please rollback first".to_owned();
            if let Some(c) = self.status.canary_status.as_mut() {
                c.common.message = self.status.message.clone();
            }
            return;
        }
        if workload.canary_revision() != canary.canary_revision {
            // A new template mid-release: start over once the old BatchRelease is gone.
            if let Some(br) = &self.snapshot.batch_release {
                if br.metadata.deletion_timestamp.is_none() {
                    self.actions.push(Action::DeleteObject { target: self.batch_release_target() });
                }
                self.requeue = Some(RECHECK);
                return;
            }
            self.status.canary_status = None;
            self.set_progressing(true, reasons::INITIALIZING, "Workload is continuous release");
            return;
        }
        if canary.common.rollout_hash != self.hash && !self.hash.is_empty() {
            self.replan(workload);
            return;
        }
        if canary.common.current_step_state == CanaryStepState::Completed {
            self.set_progressing(
                true,
                reasons::FINALISING,
                "Rollout has been completed and some closing work is being done",
            );
            return;
        }
        self.run_canary(workload);
    }

    /// A rollback in batches: the steps run again from the first, for the revision rolled
    /// back to (the release id `rollback-<revision>`), and the BatchRelease is told
    /// (`rollouts.kruise.io/rollback-in-batch`) to leave the pods already on it alone.
    fn restart_for_rollback(&mut self, workload: &ReleasedWorkload, canary: CanaryStatus) {
        let rollout = self.rollout().clone();
        let mut canary = canary;
        canary.canary_revision = workload.canary_revision().to_owned();
        canary.common.observed_rollout_id = workload.rollout_id();
        canary.common.observed_workload_generation = workload.generation;
        canary.common.pod_template_hash = String::new();
        canary.common.current_step_index = 1;
        canary.common.next_step_index = next_step(&rollout, 1);
        canary.common.current_step_state = CanaryStepState::BeforeStepUpgrade;
        canary.common.last_update_time = Some(Time(self.now));
        canary.common.message =
            "The workload has been rolled back and is rolled back in batches".to_owned();
        self.status.message = canary.common.message.clone();
        self.status.canary_status = Some(canary);
        if let Some(br) = &self.snapshot.batch_release {
            let annotations = br.metadata.annotations.clone().unwrap_or_default();
            if annotations.get(ROLLBACK_IN_BATCH_ANNOTATION).map(String::as_str) != Some("true") {
                self.actions.push(Action::PatchObject {
                    target: self.batch_release_target(),
                    subresource: Subresource::Main,
                    patch: Patch::merge(
                        json!({"metadata": {"annotations": {ROLLBACK_IN_BATCH_ANNOTATION: "true"}}}),
                    ),
                });
            }
        }
        self.event(
            "RollbackInBatch",
            format!("{} was rolled back; the steps run again for it", workload.name),
        );
    }

    /// The steps changed: go on from the first step whose replicas reach what the
    /// BatchRelease already released.
    fn replan(&mut self, workload: &ReleasedWorkload) {
        let rollout = self.rollout().clone();
        let released = self
            .snapshot
            .batch_release
            .as_ref()
            .map(|br| {
                let batch =
                    br.status.as_ref().map_or(0, |s| s.canary_status.current_batch) as usize;
                super::batchrelease::planned_replicas(br, batch, workload.replicas)
            })
            .unwrap_or(0);
        let scaled = |i: usize| {
            steps(&rollout)
                .get(i)
                .and_then(|s| s.replicas.as_ref())
                .map(|r| scaled_value(r, workload.replicas, Rounding::Up).unwrap_or(0))
                .unwrap_or(0)
        };
        let total = steps(&rollout).len();
        let Some(canary) = self.status.canary_status.as_mut() else { return };
        let current =
            (canary.common.current_step_index.max(1) as usize - 1).min(total.saturating_sub(1));
        let found = if scaled(current) >= released {
            current
        } else {
            (0..total).find(|&i| scaled(i) >= released).unwrap_or(total.saturating_sub(1))
        };
        let step = found as i32 + 1;
        canary.common.rollout_hash = self.hash.clone();
        canary.common.current_step_index = step;
        canary.common.next_step_index = next_step(&rollout, step);
        canary.common.current_step_state = CanaryStepState::BeforeStepUpgrade;
        canary.common.last_update_time = Some(Time(self.now));
    }

    fn run_canary(&mut self, workload: &ReleasedWorkload) {
        let rollout = self.rollout().clone();
        let total = steps(&rollout).len() as i32;
        let br = self.snapshot.batch_release.clone();
        let now = self.now;
        let Some(mut canary) = self.status.canary_status.clone() else { return };
        if let Some(br) = &br {
            let s = br.status.clone().unwrap_or_default();
            canary.canary_replicas = s.canary_status.updated_replicas;
            canary.canary_ready_replicas = s.canary_status.updated_ready_replicas;
        }
        if canary.common.pod_template_hash.is_empty() {
            canary.common.pod_template_hash = workload.new_pods_revision().to_owned();
        }
        // A jump asked for through nextStepIndex.
        let current = canary.common.current_step_index;
        let next = canary.common.next_step_index;
        if next != current + 1 && next >= 1 && next <= total && next != current {
            canary.common.current_step_index = next;
            canary.common.next_step_index = next_step(&rollout, next);
            canary.common.current_step_state = CanaryStepState::BeforeStepUpgrade;
            canary.common.last_update_time = Some(Time(now));
        }
        let step_index = canary.common.current_step_index.clamp(1, total.max(1));
        let step = steps(&rollout).get(step_index as usize - 1).cloned().unwrap_or_default();
        let upgrade_message = format!(
            "Rollout is in step({step_index}/{total}), and upgrade workload to new version"
        );
        match canary.common.current_step_state.clone() {
            CanaryStepState::BeforeStepUpgrade => {
                canary.common.message = upgrade_message;
                // Before the new pods exist, the stable Service stops selecting them (a step
                // with traffic), or the routing is wound up (a step without).
                let ready = match self.routing() {
                    None => true,
                    Some(_) if traffic::routes_traffic(&step) => {
                        let key = workload.revision_label_key();
                        let stable = canary.common.stable_revision.clone();
                        self.network_settled(&mut canary, |p| {
                            p.ensure_stable_selector(key, Some(&stable))
                        })
                    }
                    Some(_) => {
                        let key = workload.revision_label_key();
                        self.network_settled(&mut canary, |p| {
                            p.restore_routes()
                                && p.ensure_stable_selector(key, None)
                                && p.remove_canary_service()
                        })
                    }
                };
                if ready {
                    canary.common.current_step_state = CanaryStepState::StepUpgrade;
                    canary.common.last_update_time = Some(Time(now));
                }
            }
            CanaryStepState::StepUpgrade => {
                canary.common.message = upgrade_message;
                let desired =
                    desired_batch_release(&rollout, &canary.common.observed_rollout_id, step_index);
                match &br {
                    None => {
                        self.actions.push(Action::CreateObject {
                            target: self.batch_release_target(),
                            body: std::sync::Arc::new(self.new_batch_release(desired)),
                        });
                        self.requeue = Some(RECHECK);
                    }
                    Some(br) if br.metadata.deletion_timestamp.is_some() => {
                        self.requeue = Some(RECHECK);
                    }
                    Some(br) if br.spec != desired => {
                        self.actions.push(Action::PatchObject {
                            target: self.batch_release_target(),
                            subresource: Subresource::Main,
                            patch: Patch::merge(json!({"spec": desired})),
                        });
                        self.requeue = Some(RECHECK);
                    }
                    Some(br) => {
                        let s = br.status.clone().unwrap_or_default();
                        let done = s.observed_release_plan_hash
                            == release_plan_hash(&desired.release_plan)
                            && br.metadata.generation.unwrap_or_default() == s.observed_generation
                            && s.canary_status.current_batch_state
                                == Some(BatchReleaseBatchStateType::Ready)
                            && s.canary_status.current_batch + 1 >= step_index;
                        if done {
                            canary.common.pod_template_hash =
                                workload.new_pods_revision().to_owned();
                            canary.common.current_step_state = CanaryStepState::StepTrafficRouting;
                            canary.common.last_update_time = Some(Time(now));
                        } else {
                            canary.common.message = format!(
                                "BatchRelease is at state {}, rollout-id {}, step {}",
                                s.canary_status
                                    .current_batch_state
                                    .map(|b| b.to_string())
                                    .unwrap_or_default(),
                                s.observed_rollout_id,
                                s.canary_status.current_batch + 1,
                            );
                            self.requeue = Some(RECHECK);
                        }
                    }
                }
            }
            CanaryStepState::StepTrafficRouting => {
                let done = match self.routing() {
                    Some(_) if traffic::routes_traffic(&step) => {
                        self.route_traffic(&mut canary, workload, &step)
                    }
                    _ => true,
                };
                if done {
                    canary.common.current_step_state = CanaryStepState::StepMetricsAnalysis;
                    canary.common.last_update_time = Some(Time(now));
                }
            }
            CanaryStepState::StepMetricsAnalysis => {
                canary.common.current_step_state = CanaryStepState::StepPaused;
                // The pause's message comes with the state, not a round later.
                canary.common.message = match step.pause.duration {
                    None => format!(
                        "Rollout is in step({step_index}/{total}), and you need manually confirm to enter the next step"
                    ),
                    Some(seconds) => format!(
                        "Rollout is in step({step_index}/{total}), and wait duration({seconds} seconds) to enter the next step"
                    ),
                };
            }
            CanaryStepState::StepPaused => {
                // A blue-green step always pauses.
                let last_is_all = step_index == total
                    && !is_blue_green(&rollout)
                    && matches!(&step.replicas, Some(IntOrString::String(s)) if s == "100%");
                match step.pause.duration {
                    _ if last_is_all => {
                        canary.common.current_step_state = CanaryStepState::StepReady;
                        canary.common.last_update_time = Some(Time(now));
                    }
                    None => {
                        canary.common.message = format!(
                            "Rollout is in step({step_index}/{total}), and you need manually confirm to enter the next step"
                        );
                    }
                    Some(seconds) => {
                        canary.common.message = format!(
                            "Rollout is in step({step_index}/{total}), and wait duration({seconds} seconds) to enter the next step"
                        );
                        let since = canary.common.last_update_time.as_ref().map_or(now, |t| t.0);
                        let until = since + SignedDuration::from_secs(i64::from(seconds));
                        if now >= until {
                            canary.common.current_step_state = CanaryStepState::StepReady;
                            canary.common.last_update_time = Some(Time(now));
                        } else {
                            self.requeue = Some(until.duration_since(now));
                        }
                    }
                }
            }
            CanaryStepState::StepReady => {
                if step_index < total {
                    let next = step_index + 1;
                    canary.common.current_step_index = next;
                    canary.common.next_step_index = next_step(&rollout, next);
                    canary.common.current_step_state = CanaryStepState::BeforeStepUpgrade;
                } else {
                    canary.common.current_step_state = CanaryStepState::Completed;
                    canary.common.message = "Rollout progressing has been completed".to_owned();
                }
                canary.common.last_update_time = Some(Time(now));
            }
            _ => {}
        }
        self.status.message = canary.common.message.clone();
        self.status.canary_status = Some(canary);
    }

    fn new_batch_release(&self, spec: BatchReleaseSpec) -> Value {
        let rollout = self.rollout();
        let rollback_in_batch = self
            .snapshot
            .workload
            .as_ref()
            .is_some_and(|w| w.in_rollback() && rollback_in_batch(rollout, w));
        let annotations = if rollback_in_batch {
            json!({ROLLBACK_IN_BATCH_ANNOTATION: "true"})
        } else {
            json!({})
        };
        json!({
            "apiVersion": ObjectKind::BATCH_RELEASE.api_version(),
            "kind": ObjectKind::BATCH_RELEASE.kind,
            "metadata": {
                "name": self.name,
                "namespace": self.namespace,
                "annotations": annotations,
                "ownerReferences": [{
                    "apiVersion": ObjectKind::ROLLOUT.api_version(),
                    "kind": ObjectKind::ROLLOUT.kind,
                    "name": self.name,
                    "uid": rollout.metadata.uid.clone().unwrap_or_default(),
                    "controller": true,
                    "blockOwnerDeletion": true,
                }],
            },
            "spec": spec,
        })
    }

    /// Runs the wind-up tasks in order, one that needs the cluster per round; true once all
    /// are done.
    fn finalise(&mut self, reason: Finalise, workload: Option<&ReleasedWorkload>) -> bool {
        use FinalisingStepType as F;
        if !self.hold_traffic_routing(false) {
            return false;
        }
        if let Some(w) = workload
            && w.annotations.contains_key(IN_PROGRESSING_ANNOTATION)
        {
            self.patch_workload(
                w,
                json!({"metadata": {"annotations": {IN_PROGRESSING_ANNOTATION: null}}}),
            );
        }
        let blue_green = is_blue_green(self.rollout());
        let order: &[F] = match reason {
            Finalise::Success if blue_green => &[
                F::RouteTrafficToNew,
                F::RestoreStableService,
                F::ResumeWorkload,
                F::RouteTrafficToStable,
                F::RemoveCanaryService,
                F::ReleaseWorkloadControl,
                F::End,
            ],
            Finalise::Rollback if blue_green => &[
                F::RouteTrafficToStable,
                F::ResumeWorkload,
                F::RestoreStableService,
                F::RemoveCanaryService,
                F::ReleaseWorkloadControl,
                F::End,
            ],
            Finalise::Rollback => &[
                F::RouteTrafficToStable,
                F::ResumeWorkload,
                F::ReleaseWorkloadControl,
                F::RestoreStableService,
                F::RemoveCanaryService,
                F::End,
            ],
            Finalise::Success | Finalise::Disabled | Finalise::Deleting => &[
                F::RestoreStableService,
                F::RouteTrafficToStable,
                F::RemoveCanaryService,
                F::ResumeWorkload,
                F::ReleaseWorkloadControl,
                F::End,
            ],
        };
        let mut canary = self.status.canary_status.clone().unwrap_or_default();
        let mut index = order.iter().position(|s| *s == canary.common.finalising_step).unwrap_or(0);
        let done = loop {
            let step = &order[index];
            canary.common.finalising_step = step.clone();
            let key = workload.map_or("pod-template-hash", ReleasedWorkload::revision_label_key);
            let finished = match step {
                F::ResumeWorkload => self.resume_workload(reason),
                F::ReleaseWorkloadControl => self.release_workload_control(),
                F::End => break true,
                F::RestoreStableService => {
                    self.network_settled(&mut canary, |p| p.ensure_stable_selector(key, None))
                }
                F::RouteTrafficToStable => self.network_settled(&mut canary, Self::restore_routes),
                F::RouteTrafficToNew => {
                    let all = kruise_api::rollouts::v1beta1::CanaryStep {
                        traffic: Some("100%".to_owned()),
                        ..Default::default()
                    };
                    self.network_settled(&mut canary, |p| p.ensure_routes(&all))
                }
                F::RemoveCanaryService => {
                    self.network_settled(&mut canary, Self::remove_canary_service)
                }
                _ => true,
            };
            if !finished {
                break false;
            }
            index += 1;
        };
        if self.status.canary_status.is_some() {
            self.status.canary_status = Some(canary);
        }
        if !done {
            self.requeue = Some(RECHECK);
        }
        done
    }

    /// The (first) traffic routing, when the strategy has one.
    fn routing(&self) -> Option<TrafficRoutingRef> {
        traffic_routings(self.rollout()).first().cloned()
    }

    /// The wait after a change of the network objects (`gracePeriodSeconds`; 3 when unset).
    fn grace(&self) -> SignedDuration {
        let seconds = self.routing().map_or(0, |r| r.grace_period_seconds);
        SignedDuration::from_secs(i64::from(if seconds <= 0 { 3 } else { seconds }))
    }

    /// The Rollout as the controller owner of the objects it creates.
    fn owner_reference(&self) -> Value {
        json!({
            "apiVersion": ObjectKind::ROLLOUT.api_version(),
            "kind": ObjectKind::ROLLOUT.kind,
            "name": self.name,
            "uid": self.rollout().metadata.uid.clone().unwrap_or_default(),
            "controller": true,
            "blockOwnerDeletion": true,
        })
    }

    /// Runs `ensure` (which writes what it must and says whether all was in place already).
    /// A write restarts the grace period (`canaryStatus.lastUpdateTime`); true once nothing
    /// needed writing and the grace period since the last write has passed.
    fn network_settled(
        &mut self,
        canary: &mut CanaryStatus,
        ensure: impl FnOnce(&mut Self) -> bool,
    ) -> bool {
        if self.routing().is_none() {
            return true;
        }
        let before = self.actions.len();
        let in_place = ensure(self);
        if self.actions.len() > before {
            canary.common.last_update_time = Some(Time(self.now));
            self.requeue = Some(self.grace());
            return false;
        }
        if !in_place {
            self.requeue = Some(RECHECK);
            return false;
        }
        let since = canary.common.last_update_time.as_ref().map_or(self.now, |t| t.0);
        let until = since + self.grace();
        if self.now < until {
            self.requeue = Some(until.duration_since(self.now));
            return false;
        }
        true
    }

    /// Sends the step's traffic to the new pods: the canary Service, the stable Service's
    /// selector, then (after the grace period) the canary Ingress.
    fn route_traffic(
        &mut self,
        canary: &mut CanaryStatus,
        workload: &ReleasedWorkload,
        step: &kruise_api::rollouts::v1beta1::CanaryStep,
    ) -> bool {
        let key = workload.revision_label_key();
        let (stable, new) =
            (canary.common.stable_revision.clone(), canary.common.pod_template_hash.clone());
        let services = self.network_settled(canary, |p| {
            p.ensure_canary_service(key, &new) && p.ensure_stable_selector(key, Some(&stable))
        });
        services && self.network_settled(canary, |p| p.ensure_routes(step))
    }

    fn service_target(&self, name: &str) -> Target {
        Target::new(ObjectKind::SERVICE, Some(&self.namespace), name)
    }

    /// `disableGenerateCanaryService`: no canary Service, the stable Service's selector left
    /// alone, and the routes' canary side sent to the stable Service itself (upstream's mode
    /// for providers that tell versions apart by themselves, as a TrafficRouting does).
    fn no_canary_service(&self) -> bool {
        let strategy = &self.rollout().spec.strategy;
        strategy.canary.as_ref().is_some_and(|c| c.disable_generate_canary_service)
            || strategy.blue_green.as_ref().is_some_and(|b| b.disable_generate_canary_service)
    }

    /// The canary Service exists and selects `revision`.
    fn ensure_canary_service(&mut self, key: &str, revision: &str) -> bool {
        let Some(routing) = self.routing() else { return true };
        if self.no_canary_service() {
            return true;
        }
        let objects = &self.snapshot.traffic;
        let Some(stable) = objects.stable_service.clone() else {
            self.status.message = format!("Service {} is not found", routing.service);
            return false;
        };
        let name = traffic::canary_name(&routing.service);
        match objects.canary_service.clone() {
            None => {
                let no_labels = std::collections::BTreeMap::new();
                let labels = self
                    .rollout()
                    .spec
                    .strategy
                    .canary
                    .as_ref()
                    .and_then(|c| c.patch_pod_template_metadata.as_ref())
                    .map_or(&no_labels, |p| &p.labels);
                let patch =
                    traffic::SelectorPatch { labels, append: self.snapshot.append_pod_selector };
                let owner = self.owner_reference();
                let body = traffic::canary_service(&stable, key, revision, patch, &owner);
                self.actions.push(Action::CreateObject {
                    target: self.service_target(&name),
                    body: std::sync::Arc::new(body),
                });
                true
            }
            Some(existing) if existing.metadata.deletion_timestamp.is_some() => false,
            Some(existing) if !traffic::selects(&existing, key, Some(revision)) => {
                self.actions.push(Action::PatchObject {
                    target: self.service_target(&name),
                    subresource: Subresource::Main,
                    patch: Patch::merge(traffic::selector_patch(key, Some(revision))),
                });
                true
            }
            Some(_) => true,
        }
    }

    /// The stable Service selects `key=value` (`None`: not on `key`); a missing Service has
    /// nothing to restore.
    fn ensure_stable_selector(&mut self, key: &str, value: Option<&str>) -> bool {
        let Some(routing) = self.routing() else { return true };
        if self.no_canary_service() {
            return true;
        }
        let Some(stable) = self.snapshot.traffic.stable_service.clone() else {
            return value.is_none();
        };
        if value.is_some_and(str::is_empty) || traffic::selects(&stable, key, value) {
            return true;
        }
        self.actions.push(Action::PatchObject {
            target: self.service_target(&routing.service),
            subresource: Subresource::Main,
            patch: Patch::merge(traffic::selector_patch(key, value)),
        });
        true
    }

    /// The canary Service is gone.
    fn remove_canary_service(&mut self) -> bool {
        let Some(routing) = self.routing() else { return true };
        if self.no_canary_service() {
            return true;
        }
        match &self.snapshot.traffic.canary_service {
            None => true,
            Some(s) if s.metadata.deletion_timestamp.is_some() => false,
            Some(_) => {
                let target = self.service_target(&traffic::canary_name(&routing.service));
                self.actions.push(Action::DeleteObject { target });
                true
            }
        }
    }

    /// Holds (`hold`) or lets go of the TrafficRouting the Rollout names, through its
    /// finalizer `progressing.rollouts.kruise.io/<rollout>`, as upstream: a release starts
    /// once it holds it (a missing one, or one still finalizing an earlier release, is
    /// waited for), and its wind-up starts by letting go. True once so.
    fn hold_traffic_routing(&mut self, hold: bool) -> bool {
        use kruise_api::rollouts::v1alpha1::TrafficRoutingPhase;
        let Some(name) = super::trafficrouting::named_by(self.rollout()) else { return true };
        let Some(tr) = self.snapshot.traffic_routing.clone() else {
            if hold {
                self.status.message = format!("TrafficRouting {name} is not found");
                self.requeue = Some(RECHECK);
            }
            return !hold;
        };
        let phase = tr.status.as_ref().and_then(|s| s.phase.clone());
        let finishing = matches!(
            phase,
            Some(TrafficRoutingPhase::Finalizing | TrafficRoutingPhase::Terminating)
        );
        let Some(patch) = super::trafficrouting::hold_patch(&tr, &self.name, hold) else {
            return true;
        };
        if hold && finishing {
            self.status.message =
                format!("waiting for TrafficRouting {name} to restore its routes");
            self.requeue = Some(RECHECK);
            return false;
        }
        let version = tr.metadata.resource_version.clone().unwrap_or_default();
        self.actions.push(Action::PatchObject {
            target: Target::new(ObjectKind::TRAFFIC_ROUTING, Some(&self.namespace), &name)
                .guarded(Guard::ResourceVersion(version)),
            subresource: Subresource::Main,
            patch: Patch::merge(patch),
        });
        self.requeue = Some(RECHECK);
        false
    }

    /// Runs `write` with the Router of the Rollout's traffic routing (its canary Service
    /// `<service>-canary`, or the stable Service under `disableGenerateCanaryService`); a
    /// missing object becomes the status message.
    fn with_router(
        &mut self,
        write: impl FnOnce(&traffic::Router<'_>, &mut Vec<Action>) -> Result<bool, String>,
    ) -> bool {
        let Some(routing) = self.routing() else { return true };
        let owner = self.owner_reference();
        let router = traffic::Router {
            routing: &routing,
            objects: &self.snapshot.traffic,
            namespace: &self.namespace,
            owner: &owner,
            canary_service: if self.no_canary_service() {
                routing.service.clone()
            } else {
                traffic::canary_name(&routing.service)
            },
        };
        match write(&router, &mut self.actions) {
            Ok(in_place) => in_place,
            Err(message) => {
                self.status.message = message;
                false
            }
        }
    }

    /// The canary Ingress exists with the step's weight and header match, or the HTTPRoute
    /// carries them.
    fn ensure_routes(&mut self, step: &kruise_api::rollouts::v1beta1::CanaryStep) -> bool {
        self.with_router(|router, actions| router.ensure_routes(step, actions))
    }

    /// All traffic back to the stable Service.
    fn restore_routes(&mut self) -> bool {
        self.with_router(|router, actions| router.restore_routes(actions))
    }

    fn resume_workload(&mut self, reason: Finalise) -> bool {
        let Some(br) = self.snapshot.batch_release.clone() else { return true };
        if br.metadata.deletion_timestamp.is_some() {
            return true;
        }
        let policy = match reason {
            Finalise::Success => FinalizingPolicyType::WaitResume,
            _ => FinalizingPolicyType::Immediate,
        };
        let plan = &br.spec.release_plan;
        if plan.batch_partition.is_some() || plan.finalizing_policy.as_ref() != Some(&policy) {
            self.actions.push(Action::PatchObject {
                target: self.batch_release_target(),
                subresource: Subresource::Main,
                patch: Patch::merge(json!({"spec": {"releasePlan": {
                    "batchPartition": null,
                    "finalizingPolicy": policy,
                }}})),
            });
            return false;
        }
        br.status.as_ref().and_then(|s| s.phase.clone()) == Some(RolloutPhase::Completed)
    }

    fn release_workload_control(&mut self) -> bool {
        match &self.snapshot.batch_release {
            None => true,
            Some(br) => {
                if br.metadata.deletion_timestamp.is_none() {
                    self.actions.push(Action::DeleteObject { target: self.batch_release_target() });
                }
                false
            }
        }
    }
}
