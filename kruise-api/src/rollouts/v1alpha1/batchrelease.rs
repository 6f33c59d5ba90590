//! BatchRelease (rollouts.kruise.io/v1alpha1): the workload sits under
//! `targetReference.workloadRef` and the status has no message; the release plan is the
//! same as in v1beta1, with the rolling style also readable from the
//! `rollouts.kruise.io/rolling-style` annotation.

use kube::CustomResource;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::{ObjectRef, RolloutCondition, RolloutPhase};
pub use crate::rollouts::v1beta1::{
    BatchReleaseBatchStateType, BatchReleaseCanaryStatus, FinalizingPolicyType, ReleaseBatch,
    ReleasePlan, RollingStyleType,
};

/// The desired state of a BatchRelease.
#[derive(CustomResource, Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[kube(
    group = "rollouts.kruise.io",
    version = "v1alpha1",
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
    storage = false,
    derive = "PartialEq",
    derive = "Default",
    doc = "BatchRelease moves one workload through the batches of a release (v1alpha1 form)."
)]
#[serde(rename_all = "camelCase")]
pub struct BatchReleaseSpec {
    /// The workload released.
    #[serde(default, rename = "targetReference")]
    pub target_ref: ObjectRef,
    /// The batches and how far to go.
    #[serde(default)]
    pub release_plan: ReleasePlan,
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
}
