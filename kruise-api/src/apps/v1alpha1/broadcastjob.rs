//! BroadcastJob (apps.kruise.io/v1alpha1). Every nested type is the same as in v1beta1.

use k8s_openapi::api::core::v1::PodTemplateSpec;
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;
use kube::CustomResource;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

pub use crate::apps::v1beta1::{
    BroadcastJobPhase, BroadcastJobStatus, CompletionPolicy, CompletionPolicyType, FailurePolicy,
    FailurePolicyType, JobCondition, JobConditionType,
};
use crate::wire::{is_default, preserve_unknown_fields};

/// The desired state of a BroadcastJob.
#[derive(CustomResource, Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[kube(
    group = "apps.kruise.io",
    version = "v1alpha1",
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
    storage = false,
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
