//! UnitedDeployment (apps.kruise.io/v1beta1): one application spread over several subsets
//! of nodes, each subset run by its own workload (StatefulSet, Advanced StatefulSet, CloneSet
//! or Deployment) stamped from a shared template.

use std::collections::BTreeMap;

use k8s_openapi::api::apps::v1::{DeploymentSpec, StatefulSetSpec as KubeStatefulSetSpec};
use k8s_openapi::api::core::v1::{NodeSelectorTerm, Toleration};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{LabelSelector, ObjectMeta, Time};
use k8s_openapi::apimachinery::pkg::runtime::RawExtension;
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;
use kube::CustomResource;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::{CloneSetSpec, StatefulSetSpec};
pub use crate::embedded::Verbatim;
use crate::wire::{is_default, preserve_unknown_fields};

/// The desired state of a UnitedDeployment.
#[derive(CustomResource, Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[kube(
    group = "apps.kruise.io",
    version = "v1beta1",
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
    storage = true,
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

/// The workload template of the subsets; exactly one of the fields is set.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SubsetTemplate {
    /// Subsets are Kubernetes StatefulSets.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stateful_set_template: Option<Box<StatefulSetTemplateSpec>>,
    /// Subsets are Advanced StatefulSets.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub advanced_stateful_set_template: Option<Box<AdvancedStatefulSetTemplateSpec>>,
    /// Subsets are CloneSets.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub clone_set_template: Option<Box<CloneSetTemplateSpec>>,
    /// Subsets are Deployments.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub deployment_template: Option<Box<DeploymentTemplateSpec>>,
}

/// Template of a Kubernetes StatefulSet subset.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct StatefulSetTemplateSpec {
    /// Labels and annotations of each subset's StatefulSet.
    #[serde(default, skip_serializing_if = "is_default")]
    #[schemars(schema_with = "preserve_unknown_fields")]
    pub metadata: ObjectMeta,
    /// The StatefulSet spec.
    #[serde(default)]
    #[schemars(schema_with = "preserve_unknown_fields")]
    pub spec: Verbatim<KubeStatefulSetSpec>,
}

/// Template of an Advanced StatefulSet subset.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct AdvancedStatefulSetTemplateSpec {
    /// Labels and annotations of each subset's Advanced StatefulSet.
    #[serde(default, skip_serializing_if = "is_default")]
    #[schemars(schema_with = "preserve_unknown_fields")]
    pub metadata: ObjectMeta,
    /// The Advanced StatefulSet spec.
    #[serde(default)]
    pub spec: StatefulSetSpec,
}

/// Template of a CloneSet subset.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct CloneSetTemplateSpec {
    /// Labels and annotations of each subset's CloneSet.
    #[serde(default, skip_serializing_if = "is_default")]
    #[schemars(schema_with = "preserve_unknown_fields")]
    pub metadata: ObjectMeta,
    /// The CloneSet spec.
    #[serde(default)]
    pub spec: CloneSetSpec,
}

/// Template of a Deployment subset.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct DeploymentTemplateSpec {
    /// Labels and annotations of each subset's Deployment.
    #[serde(default, skip_serializing_if = "is_default")]
    #[schemars(schema_with = "preserve_unknown_fields")]
    pub metadata: ObjectMeta,
    /// The Deployment spec.
    #[serde(default)]
    #[schemars(schema_with = "preserve_unknown_fields")]
    pub spec: Verbatim<DeploymentSpec>,
}

crate::wire_enum! {
    /// How a UnitedDeployment updates its subsets.
    pub enum UpdateStrategyType {
        /// Each subset is updated up to the partition given for it.
        Manual = "Manual",
    }
}

/// How a template change reaches the subsets.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct UnitedDeploymentUpdateStrategy {
    /// Manual (the default).
    #[serde(rename = "type", default, skip_serializing_if = "Option::is_none")]
    pub type_: Option<UpdateStrategyType>,
    /// Parameters of the Manual strategy.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub manual_update: Option<ManualUpdate>,
}

/// Per-subset partitions of a manual update.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ManualUpdate {
    /// Pods kept at the old revision, by subset name.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub partitions: BTreeMap<String, i32>,
}

/// The subsets of a UnitedDeployment and how pods are scheduled among them.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Topology {
    /// The subsets, in priority order.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub subsets: Vec<Subset>,
    /// Whether pods that cannot be scheduled move to another subset.
    #[serde(default, skip_serializing_if = "is_default")]
    pub schedule_strategy: UnitedDeploymentScheduleStrategy,
}

/// One subset: a group of nodes with its own workload.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Subset {
    /// Subset name; also part of the workload's name.
    #[serde(default)]
    pub name: String,
    /// Nodes this subset's pods are confined to.
    #[serde(default, skip_serializing_if = "is_default")]
    pub node_selector_term: NodeSelectorTerm,
    /// Tolerations added to this subset's pods.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tolerations: Vec<Toleration>,
    /// Fixed pods for this subset (number or percent of the total).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub replicas: Option<IntOrString>,
    /// Least pods for this subset (number or percent).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub min_replicas: Option<IntOrString>,
    /// Most pods for this subset (number or percent); unset means no limit.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_replicas: Option<IntOrString>,
    /// A patch applied to this subset's workload template.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "preserve_unknown_fields")]
    pub patch: Option<RawExtension>,
}

crate::wire_enum! {
    /// How pods are scheduled among subsets.
    pub enum UnitedDeploymentScheduleStrategyType {
        /// Pods that cannot be scheduled in their subset move to another one.
        Adaptive = "Adaptive",
        /// Pods stay in their subset even when unschedulable.
        Fixed = "Fixed",
    }
}

/// Tuning of the Adaptive schedule strategy.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct AdaptiveUnitedDeploymentStrategy {
    /// Seconds a pod may stay unschedulable before it is moved (defaults to 30).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reschedule_critical_seconds: Option<i32>,
    /// Seconds a subset stays marked unschedulable (defaults to 300).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub unschedulable_duration: Option<i32>,
    /// Keep unschedulable pods and add temporary substitutes elsewhere.
    #[serde(default, skip_serializing_if = "is_default")]
    pub reserve_unschedulable_pods: bool,
}

/// How pods are scheduled among subsets.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct UnitedDeploymentScheduleStrategy {
    /// Fixed (default) or Adaptive.
    #[serde(rename = "type", default, skip_serializing_if = "Option::is_none")]
    pub type_: Option<UnitedDeploymentScheduleStrategyType>,
    /// Parameters of the Adaptive strategy.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub adaptive: Option<AdaptiveUnitedDeploymentStrategy>,
}

/// The observed state of a UnitedDeployment.
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
    /// Revision the subsets are being updated to.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub updated_revision: String,
    /// State of each subset.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub subset_statuses: Vec<UnitedDeploymentSubsetStatus>,
    /// Observations of the UnitedDeployment's state.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub conditions: Vec<UnitedDeploymentCondition>,
    /// The selector as a string, for the scale subresource and HPA.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub label_selector: String,
}

crate::wire_enum! {
    /// Kinds of UnitedDeployment condition.
    pub enum UnitedDeploymentConditionType {
        /// Subset workloads were created or deleted as needed.
        SubsetProvisioned = "SubsetProvisioned",
        /// Subset workloads were updated.
        SubsetUpdated = "SubsetUpdated",
        /// A subset workload could not be managed.
        SubsetFailure = "SubsetFailure",
        /// The whole UnitedDeployment reached its update revision.
        UnitedDeploymentUpdated = "UnitedDeploymentUpdated",
    }
}

/// A UnitedDeployment condition.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct UnitedDeploymentCondition {
    /// Condition type.
    #[serde(rename = "type", default, skip_serializing_if = "Option::is_none")]
    pub type_: Option<UnitedDeploymentConditionType>,
    /// True, False or Unknown.
    #[serde(default, skip_serializing_if = "String::is_empty")]
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

/// The state of one subset.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct UnitedDeploymentSubsetStatus {
    /// Subset name.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub name: String,
    /// Pods in the subset.
    #[serde(default, skip_serializing_if = "is_default")]
    pub replicas: i32,
    /// Ready pods in the subset.
    #[serde(default, skip_serializing_if = "is_default")]
    pub ready_replicas: i32,
    /// The subset's current partition.
    #[serde(default, skip_serializing_if = "is_default")]
    pub partition: i32,
    /// Unschedulable pods kept in place in the subset.
    #[serde(default, skip_serializing_if = "is_default")]
    pub reserved_pods: i32,
    /// Observations of the subset's state.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub conditions: Vec<UnitedDeploymentSubsetCondition>,
}

crate::wire_enum! {
    /// Kinds of subset condition.
    pub enum UnitedDeploymentSubsetConditionType {
        /// Whether the subset's pods can currently be scheduled.
        Schedulable = "Schedulable",
    }
}

/// The empty string, which Go writes for an unset condition type.
impl Default for UnitedDeploymentSubsetConditionType {
    fn default() -> Self {
        Self::Other(String::new())
    }
}

/// A condition of one subset.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct UnitedDeploymentSubsetCondition {
    /// Condition type.
    #[serde(rename = "type", default)]
    pub type_: UnitedDeploymentSubsetConditionType,
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

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn subset_templates_encode_back_as_written() {
        let template = json!({
            "statefulSetTemplate": {
                "metadata": {"labels": {"app": "demo"}},
                "spec": {
                    "template": {"spec": {"containers": [{"name": "main", "image": "nginx"}]}},
                    "volumeClaimTemplates": [{"metadata": {"name": "data"},
                                              "spec": {"accessModes": ["ReadWriteOnce"]}}]
                }
            }
        });
        let decoded: SubsetTemplate = serde_json::from_value(template.clone()).expect("decode");
        assert_eq!(serde_json::to_value(&decoded).expect("encode"), template);

        let deployment = json!({"deploymentTemplate": {"spec": {"selector": null, "replicas": 2}}});
        let decoded: SubsetTemplate = serde_json::from_value(deployment).expect("decode");
        assert_eq!(
            serde_json::to_value(&decoded).expect("encode"),
            json!({"deploymentTemplate": {"spec": {"replicas": 2}}})
        );
    }

    #[test]
    fn an_edit_to_a_filled_field_is_written() {
        let mut spec: Verbatim<DeploymentSpec> =
            serde_json::from_value(json!({"replicas": 2})).expect("decode");
        spec.selector.match_labels = Some(BTreeMap::from([("app".into(), "demo".into())]));
        let value = serde_json::to_value(&spec).expect("encode");
        assert_eq!(value["selector"], json!({"matchLabels": {"app": "demo"}}));
        assert!(value.get("template").is_none(), "untouched filled-in fields stay out");

        let built = Verbatim::new(DeploymentSpec::default());
        assert!(serde_json::to_value(&built).expect("encode").get("selector").is_some());
    }
}
