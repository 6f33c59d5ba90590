//! Rollout (rollouts.kruise.io/v1alpha1): canary steps given as a traffic `weight`, the
//! workload under `objectRef.workloadRef`, and the rolling style and TrafficRouting name in
//! annotations (`rollouts.kruise.io/rolling-style`, `rollouts.kruise.io/trafficrouting`).
//! Conditions, pauses, traffic routings and the step and phase names are shared with v1beta1.

use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;
use kube::CustomResource;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::rollouts::gateway::{HttpHeaderFilter, HttpHeaderMatch};
pub use crate::rollouts::v1beta1::{
    CanaryStepState, FinalisingStepType, GatewayTrafficRouting, IngressTrafficRouting,
    PatchPodTemplateMetadata, RolloutCondition, RolloutPause, RolloutPhase, TrafficRoutingRef,
};

/// A reference to a workload (or, in a traffic routing, any object) in the same namespace:
/// `apiVersion`, `kind` and `name`, as in v1beta1.
pub use crate::rollouts::v1beta1::ObjectRef as WorkloadRef;

/// The desired state of a Rollout.
#[derive(CustomResource, Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[kube(
    group = "rollouts.kruise.io",
    version = "v1alpha1",
    kind = "Rollout",
    plural = "rollouts",
    singular = "rollout",
    namespaced,
    status = "RolloutStatus",
    printcolumn = r#"{"name":"STATUS","type":"string","jsonPath":".status.phase","description":"The rollout status phase."}"#,
    printcolumn = r#"{"name":"CANARY_STEP","type":"integer","jsonPath":".status.canaryStatus.currentStepIndex","description":"The current canary step."}"#,
    printcolumn = r#"{"name":"CANARY_STATE","type":"string","jsonPath":".status.canaryStatus.currentStepState","description":"The state of the current canary step."}"#,
    printcolumn = r#"{"name":"MESSAGE","type":"string","jsonPath":".status.message","description":"The rollout status message."}"#,
    printcolumn = r#"{"name":"AGE","type":"date","jsonPath":".metadata.creationTimestamp"}"#,
    storage = false,
    derive = "PartialEq",
    derive = "Default",
    doc = "Rollout releases a new version of a workload in canary steps (v1alpha1 form)."
)]
#[serde(rename_all = "camelCase")]
pub struct RolloutSpec {
    /// The workload released.
    #[serde(default)]
    pub object_ref: ObjectRef,
    /// How the release proceeds.
    #[serde(default)]
    pub strategy: RolloutStrategy,
    /// Deprecated: set the workload's `rollouts.kruise.io/rollout-id` label instead.
    #[serde(default, rename = "rolloutID", skip_serializing_if = "String::is_empty")]
    pub deprecated_rollout_id: String,
    /// When true, the Rollout lets the workload update as if it did not exist.
    #[serde(default)]
    pub disabled: bool,
}

/// What a Rollout releases.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ObjectRef {
    /// The workload: a Deployment, CloneSet, StatefulSet, Advanced StatefulSet or Advanced
    /// DaemonSet in the Rollout's namespace.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub workload_ref: Option<WorkloadRef>,
}

/// How a release proceeds (v1alpha1 has canary steps only).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct RolloutStrategy {
    /// Holds the release where it is until set back to false.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub paused: bool,
    /// The canary steps.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub canary: Option<CanaryStrategy>,
}

/// A canary release: the new version replaces the old one step by step.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct CanaryStrategy {
    /// The steps.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub steps: Vec<CanaryStep>,
    /// The traffic routing (at most one).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub traffic_routings: Vec<TrafficRoutingRef>,
    /// How many new pods may be unready when a step counts as done.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub failure_threshold: Option<IntOrString>,
    /// Labels and annotations added to the canary pods (canary Deployment only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub patch_pod_template_metadata: Option<PatchPodTemplateMetadata>,
    /// Do not create the `<service>-canary` Service.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub disable_generate_canary_service: bool,
}

/// One canary step.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct CanaryStep {
    /// The percentage of traffic sent to the new version.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub weight: Option<i32>,
    /// Headers set on requests routed to the new version.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub request_header_modifier: Option<HttpHeaderFilter>,
    /// Requests routed to the new version whatever the weight.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub matches: Vec<HttpRouteMatch>,
    /// How many pods run the new version at this step: a number or a percentage (the
    /// weight, as a percentage, when unset).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub replicas: Option<IntOrString>,
    /// Whether and how long to wait once the step is done.
    #[serde(default)]
    pub pause: RolloutPause,
}

/// A request match: v1alpha1 matches on headers only.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct HttpRouteMatch {
    /// Request headers, all of which must match.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub headers: Vec<HttpHeaderMatch>,
}

/// The observed state of a Rollout.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct RolloutStatus {
    /// The generation this status describes.
    #[serde(default, skip_serializing_if = "crate::wire::is_default")]
    pub observed_generation: i64,
    /// The canary release in progress, or the last one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub canary_status: Option<CanaryStatus>,
    /// Progressing, Succeeded and Terminating.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub conditions: Vec<RolloutCondition>,
    /// Where the Rollout stands.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub phase: Option<RolloutPhase>,
    /// A human-readable summary.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub message: String,
}

/// A canary release's state.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct CanaryStatus {
    /// The workload generation the release observed.
    #[serde(default, skip_serializing_if = "crate::wire::is_default")]
    pub observed_workload_generation: i64,
    /// The release id observed.
    #[serde(default, rename = "observedRolloutID", skip_serializing_if = "String::is_empty")]
    pub observed_rollout_id: String,
    /// The hash of the strategy the release runs.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub rollout_hash: String,
    /// The revision being replaced.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub stable_revision: String,
    /// The new revision.
    #[serde(default)]
    pub canary_revision: String,
    /// The new version's pod-template-hash, which the canary Service selects.
    #[serde(default)]
    pub pod_template_hash: String,
    /// Pods on the new revision.
    #[serde(default)]
    pub canary_replicas: i32,
    /// Of those, the ready ones.
    #[serde(default)]
    pub canary_ready_replicas: i32,
    /// The step to go to next (-1: none). Writable, to jump.
    #[serde(default)]
    pub next_step_index: i32,
    /// The current step, from 1.
    #[serde(default)]
    pub current_step_index: i32,
    /// The current step's state.
    #[serde(default)]
    pub current_step_state: CanaryStepState,
    /// A human-readable summary.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub message: String,
    /// When the step state last changed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_update_time: Option<Time>,
    /// The finalising task under way.
    #[serde(default)]
    pub finalising_step: FinalisingStepType,
}
