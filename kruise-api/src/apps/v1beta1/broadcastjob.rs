//! BroadcastJob (apps.kruise.io/v1beta1): runs one pod of a job on every eligible node.

use k8s_openapi::api::core::v1::PodTemplateSpec;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;
use kube::CustomResource;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::wire::{is_default, preserve_unknown_fields};

/// The desired state of a BroadcastJob.
#[derive(CustomResource, Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[kube(
    group = "apps.kruise.io",
    version = "v1beta1",
    kind = "BroadcastJob",
    plural = "broadcastjobs",
    singular = "broadcastjob",
    namespaced,
    shortname = "bcj",
    status = "BroadcastJobStatus",
    printcolumn = r#"{"name":"Desired","type":"integer","jsonPath":".status.desired","description":"Pods wanted, usually one per matching node."}"#,
    printcolumn = r#"{"name":"Active","type":"integer","jsonPath":".status.active","description":"Pods running now."}"#,
    printcolumn = r#"{"name":"Succeeded","type":"integer","jsonPath":".status.succeeded","description":"Pods that succeeded."}"#,
    printcolumn = r#"{"name":"Failed","type":"integer","jsonPath":".status.failed","description":"Pods that failed."}"#,
    printcolumn = r#"{"name":"AGE","type":"date","jsonPath":".metadata.creationTimestamp"}"#,
    storage = true,
    derive = "PartialEq",
    derive = "Default",
    doc = "BroadcastJob runs a pod to completion on each eligible node."
)]
#[serde(rename_all = "camelCase")]
pub struct BroadcastJobSpec {
    /// Most pods (number or percent) running at once; unset means no limit.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub parallelism: Option<IntOrString>,
    /// The pod run on each node.
    #[serde(default)]
    #[schemars(schema_with = "preserve_unknown_fields")]
    pub template: PodTemplateSpec,
    /// When the job counts as finished.
    #[serde(default)]
    pub completion_policy: CompletionPolicy,
    /// Stop creating pods.
    #[serde(default, skip_serializing_if = "is_default")]
    pub paused: bool,
    /// What to do when a pod fails.
    #[serde(default, skip_serializing_if = "is_default")]
    pub failure_policy: FailurePolicy,
}

/// When a job counts as finished, and how long it lives afterwards.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct CompletionPolicy {
    /// Always (default) or Never.
    #[serde(rename = "type", default, skip_serializing_if = "Option::is_none")]
    pub type_: Option<CompletionPolicyType>,
    /// Seconds after the start at which a still-running job is stopped (Always only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub active_deadline_seconds: Option<i64>,
    /// Seconds after finishing at which the job is deleted (Always only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ttl_seconds_after_finished: Option<i32>,
}

crate::wire_enum! {
    /// Whether a job ever finishes.
    pub enum CompletionPolicyType {
        /// The job finishes once every desired pod has ended, or on deadline or restart limit.
        Always = "Always",
        /// The job keeps running, so that nodes added later also get a pod.
        Never = "Never",
    }
}

/// What a job does when one of its pods fails.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct FailurePolicy {
    /// FailFast (default), Continue or Pause.
    #[serde(rename = "type", default, skip_serializing_if = "Option::is_none")]
    pub type_: Option<FailurePolicyType>,
    /// Restarts allowed before a pod is treated as failed.
    #[serde(default, skip_serializing_if = "is_default")]
    pub restart_limit: i32,
}

crate::wire_enum! {
    /// Reaction of a job to a failed pod.
    pub enum FailurePolicyType {
        /// Keep running.
        Continue = "Continue",
        /// Mark the job failed.
        FailFast = "FailFast",
        /// Pause the job.
        Pause = "Pause",
    }
}

/// The observed state of a BroadcastJob.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct BroadcastJobStatus {
    /// Observations of the job's state.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub conditions: Vec<JobCondition>,
    /// When the controller first saw the job.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub start_time: Option<Time>,
    /// When the job finished.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub completion_time: Option<Time>,
    /// Pods running now.
    #[serde(default)]
    pub active: i32,
    /// Pods that succeeded.
    #[serde(default)]
    pub succeeded: i32,
    /// Pods that failed.
    #[serde(default)]
    pub failed: i32,
    /// Pods wanted, usually one per matching node.
    #[serde(default)]
    pub desired: i32,
    /// Current phase; empty until the controller sets one.
    #[serde(default)]
    pub phase: BroadcastJobPhase,
}

crate::wire_enum! {
    /// Lifecycle phase of a BroadcastJob (lower-case on the wire).
    pub enum BroadcastJobPhase {
        /// Every pod has ended.
        Completed = "completed",
        /// Pods are running.
        Running = "running",
        /// The job is paused.
        Paused = "paused",
        /// The job failed.
        Failed = "failed",
    }
}

impl Default for BroadcastJobPhase {
    /// The empty string, Go's zero value, which upstream writes as `""`.
    fn default() -> Self {
        Self::Other(String::new())
    }
}

/// A condition of a job.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct JobCondition {
    /// Complete or Failed.
    #[serde(rename = "type", default)]
    pub type_: JobConditionType,
    /// True, False or Unknown.
    #[serde(default)]
    pub status: String,
    /// Last time the condition was checked.
    #[serde(default)]
    pub last_probe_time: Option<Time>,
    /// Last time the status changed.
    #[serde(default)]
    pub last_transition_time: Option<Time>,
    /// Machine-readable reason.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub reason: String,
    /// Human-readable message.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub message: String,
}

crate::wire_enum! {
    /// Kinds of job condition.
    pub enum JobConditionType {
        /// Every eligible node ran its pod to an end.
        Complete = "Complete",
        /// The job hit its deadline or restart limit.
        Failed = "Failed",
    }
}

impl Default for JobConditionType {
    /// The empty string, Go's zero value.
    fn default() -> Self {
        Self::Other(String::new())
    }
}
