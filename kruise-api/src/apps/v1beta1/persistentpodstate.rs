//! PersistentPodState (apps.kruise.io/v1beta1): remembers where the pods of a stateful
//! workload ran (node, topology labels, chosen annotations) so that a recreated pod can be
//! placed back in the same topology.

use std::collections::BTreeMap;

use kube::CustomResource;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::apps::v1beta1::TargetReference;

/// The desired state of a PersistentPodState.
#[derive(CustomResource, Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[kube(
    group = "apps.kruise.io",
    version = "v1beta1",
    kind = "PersistentPodState",
    plural = "persistentpodstates",
    singular = "persistentpodstate",
    namespaced,
    status = "PersistentPodStateStatus",
    storage = true,
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
    pub keys: Vec<String>,
}

/// A pod annotation to record.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct PersistentPodAnnotation {
    /// Annotation key.
    #[serde(default)]
    pub key: String,
}

crate::wire_enum! {
    /// When a pod's record is removed.
    pub enum PersistentPodStateRetentionPolicyType {
        /// When the workload scales the pod away.
        WhenScaled = "WhenScaled",
        /// Only when the workload is deleted.
        WhenDeleted = "WhenDeleted",
    }
}

/// The observed state of a PersistentPodState.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct PersistentPodStateStatus {
    /// The generation this status describes.
    #[serde(default)]
    pub observed_generation: i64,
    /// Recorded state, by pod name.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub pod_states: BTreeMap<String, PodState>,
}

/// What is recorded about one pod.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct PodState {
    /// Node the pod ran on.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub node_name: String,
    /// Topology labels of that node, key to value.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub node_topology_labels: BTreeMap<String, String>,
    /// Recorded pod annotations.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub annotations: BTreeMap<String, String>,
}
