//! PersistentPodState (apps.kruise.io/v1alpha1). Topology terms name their keys
//! `nodeTopologyKeys`; everything else is shared with v1beta1.

use kube::CustomResource;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::apps::v1beta1::TargetReference;
pub use crate::apps::v1beta1::{
    PersistentPodAnnotation, PersistentPodStateRetentionPolicyType, PersistentPodStateStatus,
    PodState,
};

/// The desired state of a PersistentPodState.
#[derive(CustomResource, Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[kube(
    group = "apps.kruise.io",
    version = "v1alpha1",
    kind = "PersistentPodState",
    plural = "persistentpodstates",
    singular = "persistentpodstate",
    namespaced,
    status = "PersistentPodStateStatus",
    storage = false,
    derive = "PartialEq",
    derive = "Default",
    doc = "PersistentPodState records the placement of a workload's pods so that rebuilt pods return to it."
)]
#[serde(rename_all = "camelCase")]
pub struct PersistentPodStateSpec {
    /// The workload whose pods are recorded (currently a StatefulSet).
    #[serde(rename = "targetRef", default)]
    pub target_reference: TargetReference,
    /// Pod annotations to record and restore.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub persistent_pod_annotations: Vec<PersistentPodAnnotation>,
    /// Node label keys a rebuilt pod must match, as required node affinity.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub required_persistent_topology: Option<NodeTopologyTerm>,
    /// Weighted node label keys a rebuilt pod should match, as preferred node affinity.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub preferred_persistent_topology: Vec<PreferredTopologyTerm>,
    /// When records are deleted: WhenScaled (default) or WhenDeleted.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub persistent_pod_state_retention_policy: Option<PersistentPodStateRetentionPolicyType>,
}

/// A weighted topology preference.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct PreferredTopologyTerm {
    /// Weight of the preference.
    #[serde(default)]
    pub weight: i32,
    /// The node label keys preferred.
    #[serde(default)]
    pub preference: NodeTopologyTerm,
}

/// A set of node label keys whose values a rebuilt pod keeps.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct NodeTopologyTerm {
    /// Node label keys.
    #[serde(default)]
    pub node_topology_keys: Vec<String>,
}
