//! Rollout (rollouts.kruise.io/v1beta1): a canary, partition or blue-green release of an
//! existing workload, in steps, with optional traffic routing.

use std::collections::BTreeMap;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;
use kube::CustomResource;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::rollouts::gateway::{
    HttpHeaderFilter, HttpHeaderMatch, HttpPathMatch, HttpQueryParamMatch,
};

/// The desired state of a Rollout.
#[derive(CustomResource, Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[kube(
    group = "rollouts.kruise.io",
    version = "v1beta1",
    kind = "Rollout",
    plural = "rollouts",
    singular = "rollout",
    namespaced,
    status = "RolloutStatus",
    printcolumn = r#"{"name":"STATUS","type":"string","jsonPath":".status.phase","description":"The rollout status phase."}"#,
    printcolumn = r#"{"name":"CANARY_STEP","type":"integer","jsonPath":".status.currentStepIndex","description":"The rollout canary status step."}"#,
    printcolumn = r#"{"name":"CANARY_STATE","type":"string","jsonPath":".status.currentStepState","description":"The rollout canary status step state."}"#,
    printcolumn = r#"{"name":"MESSAGE","type":"string","jsonPath":".status.message","description":"The rollout canary status message."}"#,
    printcolumn = r#"{"name":"AGE","type":"date","jsonPath":".metadata.creationTimestamp"}"#,
    storage = true,
    derive = "PartialEq",
    derive = "Default",
    doc = "Rollout releases a new version of a workload in steps."
)]
#[serde(rename_all = "camelCase")]
pub struct RolloutSpec {
    /// The workload released: a Deployment, CloneSet, StatefulSet, Advanced StatefulSet or
    /// Advanced DaemonSet in the Rollout's namespace.
    #[serde(default)]
    pub workload_ref: ObjectRef,
    /// How the release proceeds.
    #[serde(default)]
    pub strategy: RolloutStrategy,
    /// When true, the Rollout lets the workload update as if it did not exist.
    #[serde(default)]
    pub disabled: bool,
}

/// A reference to an object in the same namespace.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ObjectRef {
    /// The object's API version.
    #[serde(default)]
    pub api_version: String,
    /// The object's kind.
    #[serde(default)]
    pub kind: String,
    /// The object's name.
    #[serde(default)]
    pub name: String,
}

/// How a release proceeds: canary (or partition) steps, or blue-green.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct RolloutStrategy {
    /// Holds the release where it is until set back to false.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub paused: bool,
    /// Canary or partition steps.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub canary: Option<CanaryStrategy>,
    /// Blue-green steps.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub blue_green: Option<BlueGreenStrategy>,
}

/// A blue-green release: the new version is scaled up beside the old one.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct BlueGreenStrategy {
    /// The steps.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub steps: Vec<CanaryStep>,
    /// The traffic routing (at most one).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub traffic_routings: Vec<TrafficRoutingRef>,
    /// How many new pods may be unready when a step counts as done.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub failure_threshold: Option<IntOrString>,
    /// The name of a TrafficRouting object to use instead.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub traffic_routing_ref: String,
    /// Do not create the `<service>-canary` Service.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub disable_generate_canary_service: bool,
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
    /// Labels and annotations added to the canary pods (extra-workload canary only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub patch_pod_template_metadata: Option<PatchPodTemplateMetadata>,
    /// For a Deployment: run the canary as a second Deployment instead of a partition.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub enable_extra_workload_for_canary: bool,
    /// The name of a TrafficRouting object to use instead.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub traffic_routing_ref: String,
    /// Do not create the `<service>-canary` Service.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub disable_generate_canary_service: bool,
}

/// Labels and annotations for the canary pods.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct PatchPodTemplateMetadata {
    /// Annotations to add.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub annotations: BTreeMap<String, String>,
    /// Labels to add.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub labels: BTreeMap<String, String>,
}

/// One step of a release.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct CanaryStep {
    /// The share of traffic sent to the new version, such as "5%".
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub traffic: Option<String>,
    /// Headers set on requests routed to the new version.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub request_header_modifier: Option<HttpHeaderFilter>,
    /// Requests routed to the new version whatever the weight.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub matches: Vec<HttpRouteMatch>,
    /// How many pods run the new version at this step: a number or a percentage.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub replicas: Option<IntOrString>,
    /// Whether and how long to wait once the step is done.
    #[serde(default)]
    pub pause: RolloutPause,
}

/// A request match (Gateway API semantics).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct HttpRouteMatch {
    /// The request path.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub path: Option<HttpPathMatch>,
    /// Request headers, all of which must match.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub headers: Vec<HttpHeaderMatch>,
    /// Query parameters, all of which must match.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub query_params: Vec<HttpQueryParamMatch>,
}

/// The wait at the end of a step: without `duration`, until someone approves.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct RolloutPause {
    /// Seconds to wait before the next step.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub duration: Option<i32>,
}

/// How traffic reaches the two versions.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct TrafficRoutingRef {
    /// The workload's Service.
    #[serde(default)]
    pub service: String,
    /// Seconds to wait after each change of the routing (3 when unset).
    #[serde(default, skip_serializing_if = "crate::wire::is_default")]
    pub grace_period_seconds: i32,
    /// An Ingress whose canary copy carries the weight.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ingress: Option<IngressTrafficRouting>,
    /// A Gateway API HTTPRoute whose backends carry the weight.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gateway: Option<GatewayTrafficRouting>,
    /// Other network objects, handled by scripts.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub custom_network_refs: Vec<ObjectRef>,
}

/// Routing through an Ingress.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct IngressTrafficRouting {
    /// The Ingress controller ("nginx" when unset).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub class_type: String,
    /// The Ingress name.
    #[serde(default)]
    pub name: String,
}

/// Routing through a Gateway API route.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct GatewayTrafficRouting {
    /// The HTTPRoute name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub http_route_name: Option<String>,
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
    /// The blue-green release in progress, or the last one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub blue_green_status: Option<BlueGreenStatus>,
    /// Progressing, Succeeded and Terminating.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub conditions: Vec<RolloutCondition>,
    /// Where the Rollout stands.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub phase: Option<RolloutPhase>,
    /// A human-readable summary.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub message: String,
    /// The current step, copied from the release's status.
    #[serde(default)]
    pub current_step_index: i32,
    /// The current step's state, copied from the release's status.
    #[serde(default)]
    pub current_step_state: CanaryStepState,
}

/// A condition of a Rollout or BatchRelease.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct RolloutCondition {
    /// Progressing, Succeeded or Terminating.
    #[serde(default, rename = "type")]
    pub type_: String,
    /// True, False or Unknown.
    #[serde(default)]
    pub status: String,
    /// When the condition was last written.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_update_time: Option<Time>,
    /// When the status last changed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_transition_time: Option<Time>,
    /// A machine-readable reason.
    #[serde(default)]
    pub reason: String,
    /// A human-readable message.
    #[serde(default)]
    pub message: String,
}

/// What canary and blue-green status share.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct CommonStatus {
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
    /// The new version's pod-template-hash, which the canary Service selects.
    #[serde(default)]
    pub pod_template_hash: String,
    /// The current step, from 1.
    #[serde(default)]
    pub current_step_index: i32,
    /// The step to go to next (-1: none). Writable, to jump.
    #[serde(default)]
    pub next_step_index: i32,
    /// The finalising task under way.
    #[serde(default)]
    pub finalising_step: FinalisingStepType,
    /// The current step's state.
    #[serde(default)]
    pub current_step_state: CanaryStepState,
    /// A human-readable summary.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub message: String,
    /// When the step state last changed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_update_time: Option<Time>,
}

/// A canary release's state.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct CanaryStatus {
    /// What canary and blue-green share.
    #[serde(flatten)]
    pub common: CommonStatus,
    /// The new revision.
    #[serde(default)]
    pub canary_revision: String,
    /// Pods on the new revision.
    #[serde(default)]
    pub canary_replicas: i32,
    /// Of those, the ready ones.
    #[serde(default)]
    pub canary_ready_replicas: i32,
}

/// A blue-green release's state.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct BlueGreenStatus {
    /// What canary and blue-green share.
    #[serde(flatten)]
    pub common: CommonStatus,
    /// The new revision.
    #[serde(default)]
    pub updated_revision: String,
    /// Pods on the new revision.
    #[serde(default)]
    pub updated_replicas: i32,
    /// Of those, the ready ones.
    #[serde(default)]
    pub updated_ready_replicas: i32,
}

crate::wire_enum! {
    /// The state of the current step.
    pub enum CanaryStepState {
        /// Before the workload is touched (upstream's "init").
        BeforeStepUpgrade = "BeforeStepUpgrade",
        /// The workload is being brought to the step's replicas.
        StepUpgrade = "StepUpgrade",
        /// Traffic is being shifted.
        StepTrafficRouting = "StepTrafficRouting",
        /// Metrics analysis (a no-op upstream).
        StepMetricsAnalysis = "StepMetricsAnalysis",
        /// Waiting for approval or for the pause to pass.
        StepPaused = "StepPaused",
        /// Approved: the next step may start.
        StepReady = "StepReady",
        /// Every step is done.
        Completed = "Completed",
    }
}

impl Default for CanaryStepState {
    fn default() -> Self {
        Self::Other(String::new())
    }
}

crate::wire_enum! {
    /// Where a Rollout or BatchRelease stands.
    pub enum RolloutPhase {
        /// Just created.
        Initial = "Initial",
        /// No release in progress.
        Healthy = "Healthy",
        /// A release is in progress.
        Progressing = "Progressing",
        /// Being deleted: the release is being wound up.
        Terminating = "Terminating",
        /// Disabled.
        Disabled = "Disabled",
        /// Being disabled: the release is being wound up.
        Disabling = "Disabling",
        /// BatchRelease: taking control of the workload.
        Preparing = "Preparing",
        /// BatchRelease: giving control back.
        Finalizing = "Finalizing",
        /// BatchRelease: done.
        Completed = "Completed",
    }
}

crate::wire_enum! {
    /// The finalising task a Rollout is running.
    pub enum FinalisingStepType {
        /// Send all traffic to the new version.
        RouteTrafficToNew = "FinalisingStepRouteTrafficToNew",
        /// Send all traffic back to the stable Service.
        RouteTrafficToStable = "FinalisingStepRouteTrafficToStable",
        /// Remove the revision from the stable Service's selector.
        RestoreStableService = "RestoreStableService",
        /// Delete the canary Service.
        RemoveCanaryService = "RemoveCanaryService",
        /// Let the workload finish (or undo) the release.
        ResumeWorkload = "ResumeWorkload",
        /// Delete the BatchRelease.
        ReleaseWorkloadControl = "ReleaseWorkloadControl",
        /// Done.
        End = "END",
        /// Debugging: wait forever.
        WaitEndless = "WaitEndless",
    }
}

impl Default for FinalisingStepType {
    fn default() -> Self {
        Self::Other(String::new())
    }
}
