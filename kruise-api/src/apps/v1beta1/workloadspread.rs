//! WorkloadSpread (apps.kruise.io/v1beta1): spreads the pods of a workload over subsets of
//! nodes (zones, node pools, elastic capacity), each with its own limit and pod patch.

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::{NodeSelectorTerm, PreferredSchedulingTerm, Toleration};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{Condition, LabelSelector, Time};
use k8s_openapi::apimachinery::pkg::runtime::RawExtension;
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;
use kube::CustomResource;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::wire::{is_default, preserve_unknown_fields};

/// The desired state of a WorkloadSpread.
#[derive(CustomResource, Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[kube(
    group = "apps.kruise.io",
    version = "v1beta1",
    kind = "WorkloadSpread",
    plural = "workloadspreads",
    singular = "workloadspread",
    namespaced,
    shortname = "ws",
    status = "WorkloadSpreadStatus",
    printcolumn = r#"{"name":"WorkloadName","type":"string","jsonPath":".spec.targetRef.name","description":"Target workload name."}"#,
    printcolumn = r#"{"name":"WorkloadKind","type":"string","jsonPath":".spec.targetRef.kind","description":"Target workload kind."}"#,
    printcolumn = r#"{"name":"Adaptive","type":"boolean","jsonPath":".spec.scheduleStrategy.type[?(@ == \"Adaptive\")]","description":"Adaptive scheduling in use."}"#,
    printcolumn = r#"{"name":"Age","type":"date","jsonPath":".metadata.creationTimestamp"}"#,
    storage = true,
    derive = "PartialEq",
    derive = "Default",
    doc = "WorkloadSpread distributes the pods of one workload over several node subsets."
)]
#[serde(rename_all = "camelCase")]
pub struct WorkloadSpreadSpec {
    /// The workload whose pods are spread.
    #[serde(rename = "targetRef", default)]
    pub target_reference: Option<TargetReference>,
    /// Restricts the spread to part of the workload's pods.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub target_filter: Option<TargetFilter>,
    /// The subsets, in order of preference. Absent is written as `null`, as Go writes a nil
    /// list; an empty list stays empty.
    #[serde(default)]
    pub subsets: Option<Vec<WorkloadSpreadSubset>>,
    /// How pods are placed over the subsets.
    #[serde(default, skip_serializing_if = "is_default")]
    pub schedule_strategy: WorkloadSpreadScheduleStrategy,
}

/// Identifies a workload by API version, kind and name.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct TargetReference {
    /// API version of the workload.
    #[serde(default)]
    pub api_version: String,
    /// Kind of the workload.
    #[serde(default)]
    pub kind: String,
    /// Name of the workload.
    #[serde(default)]
    pub name: String,
}

/// Selects which of the target's pods are managed and how their total is counted.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct TargetFilter {
    /// Labels the managed pods carry.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub selector: Option<LabelSelector>,
    /// Dot-separated paths in the target whose integer values add up to the managed replicas.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub replicas_path_list: Vec<String>,
}

crate::wire_enum! {
    /// How a WorkloadSpread places pods over subsets.
    pub enum WorkloadSpreadScheduleStrategyType {
        /// Pods may be moved to another subset when they cannot be scheduled.
        Adaptive = "Adaptive",
        /// Pods stay in the subset they were assigned (the default).
        Fixed = "Fixed",
    }
}

/// Scheduling behaviour across subsets.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct WorkloadSpreadScheduleStrategy {
    /// Fixed (default) or Adaptive.
    #[serde(rename = "type", default, skip_serializing_if = "Option::is_none")]
    pub type_: Option<WorkloadSpreadScheduleStrategyType>,
    /// Parameters for the Adaptive strategy.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub adaptive: Option<AdaptiveWorkloadSpreadStrategy>,
}

/// Parameters of the Adaptive strategy.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct AdaptiveWorkloadSpreadStrategy {
    /// Skip the webhook's rough check that a pod fits a subset's nodes.
    #[serde(default, skip_serializing_if = "is_default")]
    pub disable_simulation_schedule: bool,
    /// Seconds a pod may stay unschedulable before it is moved to another subset.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reschedule_critical_seconds: Option<i32>,
}

/// One subset of nodes and what its pods get.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct WorkloadSpreadSubset {
    /// Subset name, unique within the WorkloadSpread.
    #[serde(default)]
    pub name: String,
    /// Node selector term the subset's pods require.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub required_node_selector: Option<NodeSelectorTerm>,
    /// Weighted node preferences of the subset's pods.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub preferred_node_selector: Vec<PreferredSchedulingTerm>,
    /// Tolerations added to the subset's pods (an explicit empty list is kept).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tolerations: Option<Vec<Toleration>>,
    /// Most pods (number or percent) in this subset; unlimited when absent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_replicas: Option<IntOrString>,
    /// Patch applied to the subset's pods.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "preserve_unknown_fields")]
    pub patch: Option<RawExtension>,
}

/// The observed state of a WorkloadSpread.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct WorkloadSpreadStatus {
    /// The generation this status describes.
    #[serde(default, skip_serializing_if = "is_default")]
    pub observed_generation: i64,
    /// Per-subset state.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub subset_statuses: Vec<WorkloadSpreadSubsetStatus>,
    /// Per-subset state for each workload revision, used during rolling updates.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub versioned_subset_statuses: BTreeMap<String, Vec<WorkloadSpreadSubsetStatus>>,
}

/// The observed state of one subset.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct WorkloadSpreadSubsetStatus {
    /// Subset name.
    #[serde(default)]
    pub name: String,
    /// Active pods in the subset.
    #[serde(default)]
    pub replicas: i32,
    /// Observations of the subset, such as `Schedulable`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub conditions: Vec<Condition>,
    /// Pods still missing from the subset; -1 when it has no limit.
    #[serde(default)]
    pub missing_replicas: i32,
    /// Pods admitted to the subset by the webhook but not yet seen by the controller, with
    /// the admission time.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub creating_pods: BTreeMap<String, Time>,
    /// Pods whose deletion was admitted but not yet seen by the controller.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub deleting_pods: BTreeMap<String, Time>,
}
