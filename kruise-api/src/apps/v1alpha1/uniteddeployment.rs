//! UnitedDeployment (apps.kruise.io/v1alpha1). The spec is the same as in v1beta1 (its
//! subset templates already embed the v1beta1 Advanced StatefulSet and CloneSet specs); the
//! status keeps per-subset replicas and partitions in maps instead of the subset statuses.

use std::collections::BTreeMap;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector;
use kube::CustomResource;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

pub use crate::apps::v1beta1::{
    AdaptiveUnitedDeploymentStrategy, AdvancedStatefulSetTemplateSpec, CloneSetTemplateSpec,
    DeploymentTemplateSpec, ManualUpdate, StatefulSetTemplateSpec, Subset, SubsetTemplate,
    Topology, UnitedDeploymentCondition, UnitedDeploymentConditionType,
    UnitedDeploymentScheduleStrategy, UnitedDeploymentScheduleStrategyType,
    UnitedDeploymentSubsetCondition, UnitedDeploymentSubsetConditionType,
    UnitedDeploymentSubsetStatus, UnitedDeploymentUpdateStrategy, UpdateStrategyType, Verbatim,
};
use crate::wire::is_default;

/// The desired state of a UnitedDeployment.
#[derive(CustomResource, Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[kube(
    group = "apps.kruise.io",
    version = "v1alpha1",
    kind = "UnitedDeployment",
    plural = "uniteddeployments",
    singular = "uniteddeployment",
    namespaced,
    shortname = "ud",
    status = "UnitedDeploymentStatus",
    scale = r#"{"labelSelectorPath":".status.labelSelector","specReplicasPath":".spec.replicas","statusReplicasPath":".status.replicas"}"#,
    printcolumn = r#"{"name":"DESIRED","type":"integer","jsonPath":".spec.replicas","description":"Desired pods."}"#,
    printcolumn = r#"{"name":"CURRENT","type":"integer","jsonPath":".status.replicas","description":"All pods."}"#,
    printcolumn = r#"{"name":"UPDATED","type":"integer","jsonPath":".status.updatedReplicas","description":"Pods at the update revision."}"#,
    printcolumn = r#"{"name":"READY","type":"integer","jsonPath":".status.readyReplicas","description":"Ready pods."}"#,
    printcolumn = r#"{"name":"AGE","type":"date","jsonPath":".metadata.creationTimestamp"}"#,
    storage = false,
    derive = "PartialEq",
    derive = "Default",
    doc = "UnitedDeployment runs one application as several workloads, one per node subset."
)]
#[serde(rename_all = "camelCase")]
pub struct UnitedDeploymentSpec {
    /// Desired number of pods over all subsets (defaults to 1).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub replicas: Option<i32>,
    /// Label selector for the pods; must match the template's labels.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub selector: Option<LabelSelector>,
    /// The workload each subset runs.
    #[serde(default, skip_serializing_if = "is_default")]
    pub template: SubsetTemplate,
    /// The subsets and how pods are spread over them.
    #[serde(default, skip_serializing_if = "is_default")]
    pub topology: Topology,
    /// How a template change reaches the subsets.
    #[serde(default, skip_serializing_if = "is_default")]
    pub update_strategy: UnitedDeploymentUpdateStrategy,
    /// Revisions kept for history (defaults to 10).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub revision_history_limit: Option<i32>,
}

/// The observed state of a UnitedDeployment (v1alpha1 form).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct UnitedDeploymentStatus {
    /// The generation this status describes.
    #[serde(default, skip_serializing_if = "is_default")]
    pub observed_generation: i64,
    /// Ready pods.
    #[serde(default, skip_serializing_if = "is_default")]
    pub ready_replicas: i32,
    /// Pods owned.
    #[serde(default)]
    pub replicas: i32,
    /// Pods at the update revision.
    #[serde(default)]
    pub updated_replicas: i32,
    /// Unschedulable pods kept in place by the Adaptive strategy.
    #[serde(default, skip_serializing_if = "is_default")]
    pub reserved_pods: i32,
    /// Updated pods that are ready.
    #[serde(default, skip_serializing_if = "is_default")]
    pub updated_ready_replicas: i32,
    /// Counter used to avoid revision-name collisions.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub collision_count: Option<i32>,
    /// Revision of the current template.
    #[serde(default)]
    pub current_revision: String,
    /// Pods in each subset, by subset name.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub subset_replicas: BTreeMap<String, i32>,
    /// State of each subset.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub subset_statuses: Vec<UnitedDeploymentSubsetStatus>,
    /// Observations of the UnitedDeployment's state.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub conditions: Vec<UnitedDeploymentCondition>,
    /// Progress of the current update.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub update_status: Option<UpdateStatus>,
    /// The selector as a string, for the scale subresource and HPA.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub label_selector: String,
}

/// Progress of a UnitedDeployment update.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct UpdateStatus {
    /// Revision the subsets are being updated to.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub updated_revision: String,
    /// Each subset's current partition, by subset name.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub current_partitions: BTreeMap<String, i32>,
}
