//! TrafficRouting (rollouts.kruise.io/v1alpha1 only): traffic rules shared by several
//! Rollouts. A Rollout names one in its `rollouts.kruise.io/trafficrouting` annotation (or
//! v1beta1 `trafficRoutingRef`), and each of its releases moves this routing too.

use kube::CustomResource;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::{HttpRouteMatch, TrafficRoutingRef};
use crate::rollouts::gateway::HttpHeaderFilter;

/// The desired state of a TrafficRouting.
#[derive(CustomResource, Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[kube(
    group = "rollouts.kruise.io",
    version = "v1alpha1",
    kind = "TrafficRouting",
    plural = "trafficroutings",
    singular = "trafficrouting",
    namespaced,
    status = "TrafficRoutingStatus",
    printcolumn = r#"{"name":"STATUS","type":"string","jsonPath":".status.phase","description":"The TrafficRouting status phase."}"#,
    printcolumn = r#"{"name":"MESSAGE","type":"string","jsonPath":".status.message","description":"The TrafficRouting status message."}"#,
    printcolumn = r#"{"name":"AGE","type":"date","jsonPath":".metadata.creationTimestamp"}"#,
    storage = true,
    derive = "PartialEq",
    derive = "Default",
    doc = "TrafficRouting holds traffic rules that the releases of several Rollouts move together."
)]
#[serde(rename_all = "camelCase")]
pub struct TrafficRoutingSpec {
    /// The routings moved (at most one).
    #[serde(default)]
    pub object_ref: Vec<TrafficRoutingRef>,
    /// The traffic sent to the new versions while a release runs.
    #[serde(default)]
    pub strategy: TrafficRoutingStrategy,
}

/// How much traffic the new versions receive, and which requests.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct TrafficRoutingStrategy {
    /// The percentage of traffic sent to the new versions.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub weight: Option<i32>,
    /// Headers set on requests routed to the new versions.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub request_header_modifier: Option<HttpHeaderFilter>,
    /// Requests routed to the new versions whatever the weight (these win over it).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub matches: Vec<HttpRouteMatch>,
}

/// The observed state of a TrafficRouting.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct TrafficRoutingStatus {
    /// The generation this status describes.
    #[serde(default, skip_serializing_if = "crate::wire::is_default")]
    pub observed_generation: i64,
    /// Where the TrafficRouting stands.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub phase: Option<TrafficRoutingPhase>,
    /// A human-readable summary.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub message: String,
}

crate::wire_enum! {
    /// Where a TrafficRouting stands.
    pub enum TrafficRoutingPhase {
        /// Just created.
        Initial = "Initial",
        /// The Ingress (or route) and Service exist; no release is moving traffic.
        Healthy = "Healthy",
        /// A release is moving traffic.
        Progressing = "Progressing",
        /// The release is done; the routing is being restored.
        Finalizing = "Finalizing",
        /// Being deleted.
        Terminating = "Terminating",
    }
}
