//! RolloutHistory (rollouts.kruise.io/v1alpha1 only): a record of one release, written when
//! a Rollout with a rollout id finishes: the Rollout, workload, Service and traffic objects
//! as they were, and the pods each step updated.

use kube::CustomResource;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::wire::preserve_unknown_fields;

/// What a RolloutHistory records.
#[derive(CustomResource, Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[kube(
    group = "rollouts.kruise.io",
    version = "v1alpha1",
    kind = "RolloutHistory",
    plural = "rollouthistories",
    singular = "rollouthistory",
    namespaced,
    status = "RolloutHistoryStatus",
    storage = true,
    derive = "PartialEq",
    derive = "Default",
    doc = "RolloutHistory records one finished release of a Rollout."
)]
#[serde(rename_all = "camelCase")]
pub struct RolloutHistorySpec {
    /// The Rollout.
    #[serde(default)]
    pub rollout: RolloutInfo,
    /// The workload released.
    #[serde(default)]
    pub workload: WorkloadInfo,
    /// The workload's Service.
    #[serde(default)]
    pub service: NameAndSpecData,
    /// The Ingress or HTTPRoute that carried the traffic.
    #[serde(default)]
    pub traffic_routing: TrafficRoutingInfo,
}

/// An object's name and its spec, verbatim.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct NameAndSpecData {
    /// The object's name.
    #[serde(default)]
    pub name: String,
    /// The object's spec.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "preserve_unknown_fields")]
    pub data: Option<serde_json::Value>,
}

/// The Rollout a history belongs to.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct RolloutInfo {
    /// The rollout id of the release.
    #[serde(default, rename = "rolloutID")]
    pub rollout_id: String,
    /// The Rollout's name and spec.
    #[serde(flatten)]
    pub object: NameAndSpecData,
}

/// The workload released.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct WorkloadInfo {
    /// The workload's API version.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub api_version: String,
    /// The workload's kind.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub kind: String,
    /// The workload's name and spec.
    #[serde(flatten)]
    pub object: NameAndSpecData,
}

/// The traffic objects of a release.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct TrafficRoutingInfo {
    /// The Ingress.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ingress: Option<NameAndSpecData>,
    /// The Gateway API HTTPRoute.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub http_route: Option<NameAndSpecData>,
}

/// The observed state of a RolloutHistory.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct RolloutHistoryStatus {
    /// `completed` once recorded; empty before.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub phase: String,
    /// The pods each step updated.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub canary_steps: Vec<CanaryStepInfo>,
}

/// The pods one step updated.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct CanaryStepInfo {
    /// The step, from 1.
    #[serde(default, skip_serializing_if = "crate::wire::is_default")]
    pub canary_step_index: i32,
    /// The pods.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub pods: Vec<PodInfo>,
}

/// A pod a step updated.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct PodInfo {
    /// The pod's name.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub name: String,
    /// The pod's IP.
    #[serde(default, rename = "ip", skip_serializing_if = "String::is_empty")]
    pub ip: String,
    /// The node the pod ran on.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub node_name: String,
}
