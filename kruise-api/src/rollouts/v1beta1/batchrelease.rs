//! BatchRelease (rollouts.kruise.io/v1beta1): the executor a Rollout creates for one release.
//! It takes control of the workload and moves it batch by batch (partition, canary workload or
//! blue-green), up to the batch the Rollout allows.

use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;
use kube::CustomResource;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::{ObjectRef, PatchPodTemplateMetadata, RolloutCondition, RolloutPhase};

/// The desired state of a BatchRelease.
#[derive(CustomResource, Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[kube(
    group = "rollouts.kruise.io",
    version = "v1beta1",
    kind = "BatchRelease",
    plural = "batchreleases",
    singular = "batchrelease",
    namespaced,
    status = "BatchReleaseStatus",
    printcolumn = r#"{"name":"KIND","type":"string","jsonPath":".spec.targetReference.workloadRef.kind"}"#,
    printcolumn = r#"{"name":"PHASE","type":"string","jsonPath":".status.phase"}"#,
    printcolumn = r#"{"name":"BATCH","type":"integer","jsonPath":".status.canaryStatus.currentBatch"}"#,
    printcolumn = r#"{"name":"BATCH-STATE","type":"string","jsonPath":".status.canaryStatus.batchState"}"#,
    printcolumn = r#"{"name":"AGE","type":"date","jsonPath":".metadata.creationTimestamp"}"#,
    storage = true,
    derive = "PartialEq",
    derive = "Default",
    doc = "BatchRelease moves one workload through the batches of a release."
)]
#[serde(rename_all = "camelCase")]
pub struct BatchReleaseSpec {
    /// The workload released (always written, as Go writes a struct field).
    #[serde(default)]
    pub workload_ref: ObjectRef,
    /// The batches and how far to go.
    #[serde(default)]
    pub release_plan: ReleasePlan,
}

/// The batches of a release and how far to go.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ReleasePlan {
    /// One batch per step: how many pods run the new version at its end.
    #[serde(default)]
    pub batches: Vec<ReleaseBatch>,
    /// The last batch to release (from 0); unset: release everything and give control back.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub batch_partition: Option<i32>,
    /// The release id pods are labelled with.
    #[serde(default, rename = "rolloutID", skip_serializing_if = "String::is_empty")]
    pub rollout_id: String,
    /// How many new pods may be unready when a batch counts as done.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub failure_threshold: Option<IntOrString>,
    /// Whether finalizing waits for the workload (WaitResume) or not (Immediate).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub finalizing_policy: Option<FinalizingPolicyType>,
    /// Labels and annotations for the canary workload's pods.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub patch_pod_template_metadata: Option<PatchPodTemplateMetadata>,
    /// Partition, Canary or BlueGreen.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rolling_style: Option<RollingStyleType>,
    /// Deprecated: read only when rollingStyle is unset.
    #[serde(default)]
    pub enable_extra_workload_for_canary: bool,
}

crate::wire_enum! {
    /// Whether finalizing waits for the workload.
    pub enum FinalizingPolicyType {
        /// Wait until the workload has rolled every pod.
        WaitResume = "WaitResume",
        /// Give control back at once.
        Immediate = "Immediate",
    }
}

crate::wire_enum! {
    /// How the workload is moved.
    pub enum RollingStyleType {
        /// Lower the workload's partition.
        Partition = "Partition",
        /// Scale a second, canary workload.
        Canary = "Canary",
        /// Scale the new version up beside the old one.
        BlueGreen = "BlueGreen",
    }
}

/// One batch.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ReleaseBatch {
    /// Pods on the new version at the end of the batch: a number or a percentage.
    pub canary_replicas: IntOrString,
}

impl Default for ReleaseBatch {
    fn default() -> Self {
        Self { canary_replicas: IntOrString::Int(0) }
    }
}

/// The observed state of a BatchRelease.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct BatchReleaseStatus {
    /// Conditions.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub conditions: Vec<RolloutCondition>,
    /// The current batch.
    #[serde(default)]
    pub canary_status: BatchReleaseCanaryStatus,
    /// The revision being replaced.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub stable_revision: String,
    /// The new revision.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub update_revision: String,
    /// The generation this status describes.
    #[serde(default, skip_serializing_if = "crate::wire::is_default")]
    pub observed_generation: i64,
    /// The release id observed.
    #[serde(default, rename = "observedRolloutID", skip_serializing_if = "String::is_empty")]
    pub observed_rollout_id: String,
    /// The workload replicas the batches were computed for (-1 after a reset).
    #[serde(default, skip_serializing_if = "crate::wire::is_default")]
    pub observed_workload_replicas: i32,
    /// Collisions of canary workload names.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub collision_count: Option<i32>,
    /// The hash of the release plan observed.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub observed_release_plan_hash: String,
    /// Preparing, Progressing, Finalizing or Completed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub phase: Option<RolloutPhase>,
    /// A human-readable summary.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub message: String,
}

/// The current batch of a BatchRelease.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct BatchReleaseCanaryStatus {
    /// Upgrading, Verifying or Ready.
    #[serde(default, rename = "batchState", skip_serializing_if = "Option::is_none")]
    pub current_batch_state: Option<BatchReleaseBatchStateType>,
    /// The current batch, from 0.
    #[serde(default)]
    pub current_batch: i32,
    /// When the batch became ready.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub batch_ready_time: Option<Time>,
    /// Pods on the new revision.
    #[serde(default, skip_serializing_if = "crate::wire::is_default")]
    pub updated_replicas: i32,
    /// Of those, the ready ones.
    #[serde(default, skip_serializing_if = "crate::wire::is_default")]
    pub updated_ready_replicas: i32,
    /// Pods a batch rollback leaves alone.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub no_need_update_replicas: Option<i32>,
}

crate::wire_enum! {
    /// The state of the current batch.
    pub enum BatchReleaseBatchStateType {
        /// The workload is being moved to the batch.
        Upgrading = "Upgrading",
        /// Waiting for the batch's pods to be ready and labelled.
        Verifying = "Verifying",
        /// The batch is done.
        Ready = "Ready",
    }
}
