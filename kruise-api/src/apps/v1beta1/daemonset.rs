//! Advanced DaemonSet (apps.kruise.io/v1beta1, kind `DaemonSet`): one pod per node, with
//! in-place updates, partitions, surge, node selectors for the rollout and lifecycle hooks.

use k8s_openapi::api::apps::v1::DaemonSetCondition;
use k8s_openapi::api::core::v1::PodTemplateSpec;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector;
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;
use kube::CustomResource;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::apps::common::Lifecycle;
use crate::wire::{is_default, preserve_unknown_fields};

/// The desired state of an Advanced DaemonSet.
#[derive(CustomResource, Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[kube(
    group = "apps.kruise.io",
    version = "v1beta1",
    kind = "DaemonSet",
    plural = "daemonsets",
    singular = "daemonset",
    namespaced,
    shortname = "daemon",
    shortname = "ads",
    status = "DaemonSetStatus",
    printcolumn = r#"{"name":"DESIRED","type":"integer","jsonPath":".status.desiredNumberScheduled","description":"Nodes that should run a pod."}"#,
    printcolumn = r#"{"name":"CURRENT","type":"integer","jsonPath":".status.currentNumberScheduled","description":"Nodes running a pod that should."}"#,
    printcolumn = r#"{"name":"READY","type":"integer","jsonPath":".status.numberReady","description":"Nodes with a ready pod."}"#,
    printcolumn = r#"{"name":"UP-TO-DATE","type":"integer","jsonPath":".status.updatedNumberScheduled","description":"Nodes running the current revision."}"#,
    printcolumn = r#"{"name":"AVAILABLE","type":"integer","jsonPath":".status.numberAvailable","description":"Nodes with an available pod."}"#,
    printcolumn = r#"{"name":"AGE","type":"date","jsonPath":".metadata.creationTimestamp"}"#,
    printcolumn = r#"{"name":"CONTAINERS","type":"string","jsonPath":".spec.template.spec.containers[*].name","priority":1,"description":"Container names."}"#,
    printcolumn = r#"{"name":"IMAGES","type":"string","jsonPath":".spec.template.spec.containers[*].image","priority":1,"description":"Container images."}"#,
    storage = true,
    derive = "PartialEq",
    derive = "Default",
    doc = "Advanced DaemonSet runs one pod on each selected node, with richer update strategies than the built-in DaemonSet."
)]
#[serde(rename_all = "camelCase")]
pub struct DaemonSetSpec {
    /// Label selector for the pods; must match the template's labels.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub selector: Option<LabelSelector>,
    /// The pod to run on each node.
    #[serde(default, skip_serializing_if = "is_default")]
    #[schemars(schema_with = "preserve_unknown_fields")]
    pub template: PodTemplateSpec,
    /// How pods are replaced by a new template.
    #[serde(default, skip_serializing_if = "is_default")]
    pub update_strategy: DaemonSetUpdateStrategy,
    /// Seconds a pod must be ready before it counts as available.
    #[serde(default, skip_serializing_if = "is_default")]
    pub min_ready_seconds: i32,
    /// Most pods created at once (number or percent of nodes; defaults to 250).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub burst_replicas: Option<IntOrString>,
    /// ControllerRevisions kept for history (defaults to 10).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub revision_history_limit: Option<i32>,
    /// Lifecycle hooks.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lifecycle: Option<Lifecycle>,
    /// How pods are created on new nodes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scale_strategy: Option<DaemonSetScaleStrategy>,
}

/// How an Advanced DaemonSet creates pods on nodes that lack one.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct DaemonSetScaleStrategy {
    /// Let the rolling-update partition also hold back pods for newly matching nodes.
    #[serde(default, skip_serializing_if = "is_default")]
    pub partitioned_scaling: bool,
}

/// How an Advanced DaemonSet rolls out a new template.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct DaemonSetUpdateStrategy {
    /// RollingUpdate (default) or OnDelete.
    #[serde(rename = "type", default, skip_serializing_if = "Option::is_none")]
    pub type_: Option<DaemonSetUpdateStrategyType>,
    /// Rolling-update parameters.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rolling_update: Option<RollingUpdateDaemonSet>,
}

crate::wire_enum! {
    /// When pods are moved to a new revision.
    pub enum DaemonSetUpdateStrategyType {
        /// The controller replaces pods.
        RollingUpdate = "RollingUpdate",
        /// Pods are replaced only when someone deletes them.
        OnDelete = "OnDelete",
    }
}

crate::wire_enum! {
    /// How each pod is moved to a new revision.
    pub enum RollingUpdateType {
        /// Delete the old pod and create a new one.
        Standard = "Standard",
        /// Update in place when only in-place-updatable fields changed, else recreate.
        InPlaceIfPossible = "InPlaceIfPossible",
    }
}

/// Rolling-update parameters.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct RollingUpdateDaemonSet {
    /// Standard (default) or InPlaceIfPossible.
    #[serde(rename = "rollingUpdateType", default, skip_serializing_if = "Option::is_none")]
    pub type_: Option<RollingUpdateType>,
    /// Most nodes whose pod is unavailable during the update.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_unavailable: Option<IntOrString>,
    /// Most nodes running an extra new pod next to the old one during the update.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_surge: Option<IntOrString>,
    /// Only nodes matching this selector are updated.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub selector: Option<LabelSelector>,
    /// Pods (number or percent) kept at the old revision.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub partition: Option<IntOrString>,
    /// Stop updating pods.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub paused: Option<bool>,
}

/// The observed state of an Advanced DaemonSet.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct DaemonSetStatus {
    /// Nodes running at least one daemon pod that should.
    #[serde(default)]
    pub current_number_scheduled: i32,
    /// Nodes running a daemon pod that should not.
    #[serde(default)]
    pub number_misscheduled: i32,
    /// Nodes that should run a daemon pod.
    #[serde(default)]
    pub desired_number_scheduled: i32,
    /// Nodes whose daemon pod is ready.
    #[serde(default)]
    pub number_ready: i32,
    /// The generation this status describes.
    #[serde(default, skip_serializing_if = "is_default")]
    pub observed_generation: i64,
    /// Nodes running the current revision.
    #[serde(default)]
    pub updated_number_scheduled: i32,
    /// Nodes whose daemon pod has been available for minReadySeconds.
    #[serde(default, skip_serializing_if = "is_default")]
    pub number_available: i32,
    /// Nodes that should run an available daemon pod and do not.
    #[serde(default, skip_serializing_if = "is_default")]
    pub number_unavailable: i32,
    /// Counter used to avoid revision-name collisions.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub collision_count: Option<i32>,
    /// Observations of the DaemonSet's state.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub conditions: Vec<DaemonSetCondition>,
    /// Revision of the current template.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub update_revision: String,
}
