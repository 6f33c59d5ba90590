//! WorkloadSpread (apps.kruise.io/v1alpha1). The subset node selectors carry their older
//! names and subset conditions have their own type; everything else is shared with v1beta1.

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::{NodeSelectorTerm, PreferredSchedulingTerm, Toleration};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use k8s_openapi::apimachinery::pkg::runtime::RawExtension;
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;
use kube::CustomResource;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

pub use crate::apps::v1beta1::{
    AdaptiveWorkloadSpreadStrategy, TargetFilter, TargetReference, WorkloadSpreadScheduleStrategy,
    WorkloadSpreadScheduleStrategyType,
};
use crate::wire::{is_default, preserve_unknown_fields};

/// The desired state of a WorkloadSpread.
#[derive(CustomResource, Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[kube(
    group = "apps.kruise.io",
    version = "v1alpha1",
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
    storage = false,
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

/// One subset of nodes and what its pods get.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct WorkloadSpreadSubset {
    /// Subset name, unique within the WorkloadSpread.
    #[serde(default)]
    pub name: String,
    /// Node selector term the subset's pods require.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub required_node_selector_term: Option<NodeSelectorTerm>,
    /// Weighted node preferences of the subset's pods.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub preferred_node_selector_terms: Vec<PreferredSchedulingTerm>,
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

/// A subset condition.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct WorkloadSpreadSubsetCondition {
    /// Condition type, e.g. `Schedulable`.
    #[serde(rename = "type", default)]
    pub type_: String,
    /// True, False or Unknown.
    #[serde(default)]
    pub status: String,
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
    /// Observations of the subset.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub conditions: Vec<WorkloadSpreadSubsetCondition>,
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
