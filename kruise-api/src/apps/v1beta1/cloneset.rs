//! CloneSet (apps.kruise.io/v1beta1): a stateless workload with in-place updates, partitions,
//! lifecycle hooks and selective scale-in.

use k8s_openapi::api::core::v1::{PersistentVolumeClaim, PodTemplateSpec};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{LabelSelector, Time};
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;
use kube::CustomResource;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::Embedded;
use crate::apps::common::UpdateScatterStrategy;
use crate::apps::common::{InPlaceUpdateStrategy, Lifecycle, UpdatePriorityStrategy};
use crate::wire::{is_default, preserve_unknown_fields};

/// The desired state of a CloneSet.
#[derive(CustomResource, Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[kube(
    group = "apps.kruise.io",
    version = "v1beta1",
    kind = "CloneSet",
    plural = "clonesets",
    singular = "cloneset",
    namespaced,
    shortname = "clone",
    status = "CloneSetStatus",
    scale = r#"{"labelSelectorPath":".status.labelSelector","specReplicasPath":".spec.replicas","statusReplicasPath":".status.replicas"}"#,
    printcolumn = r#"{"name":"DESIRED","type":"integer","jsonPath":".spec.replicas","description":"Desired pods."}"#,
    printcolumn = r#"{"name":"UPDATED","type":"integer","jsonPath":".status.updatedReplicas","description":"Pods at the update revision."}"#,
    printcolumn = r#"{"name":"UPDATED_READY","type":"integer","jsonPath":".status.updatedReadyReplicas","description":"Updated pods that are ready."}"#,
    printcolumn = r#"{"name":"UPDATED_AVAILABLE","type":"integer","jsonPath":".status.updatedAvailableReplicas","description":"Updated pods that are available."}"#,
    printcolumn = r#"{"name":"READY","type":"integer","jsonPath":".status.readyReplicas","description":"Ready pods."}"#,
    printcolumn = r#"{"name":"TOTAL","type":"integer","jsonPath":".status.replicas","description":"All pods."}"#,
    printcolumn = r#"{"name":"AGE","type":"date","jsonPath":".metadata.creationTimestamp"}"#,
    printcolumn = r#"{"name":"CONTAINERS","type":"string","jsonPath":".spec.template.spec.containers[*].name","priority":1,"description":"Container names."}"#,
    printcolumn = r#"{"name":"IMAGES","type":"string","jsonPath":".spec.template.spec.containers[*].image","priority":1,"description":"Container images."}"#,
    printcolumn = r#"{"name":"SELECTOR","type":"string","jsonPath":".status.labelSelector","priority":1,"description":"Pod label selector."}"#,
    storage = true,
    derive = "PartialEq",
    derive = "Default",
    doc = "CloneSet manages a set of identical, interchangeable pods."
)]
#[serde(rename_all = "camelCase")]
pub struct CloneSetSpec {
    /// Desired number of pods (defaults to 1).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub replicas: Option<i32>,
    /// Label selector for the pods; must match the template's labels.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub selector: Option<LabelSelector>,
    /// The pods to create.
    #[serde(default, skip_serializing_if = "is_default")]
    #[schemars(schema_with = "preserve_unknown_fields")]
    pub template: PodTemplateSpec,
    /// PVCs created for each pod, named `<template>-<pod>`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(schema_with = "preserve_unknown_fields")]
    pub volume_claim_templates: Vec<Embedded<PersistentVolumeClaim>>,
    /// How pods are added and removed.
    #[serde(default, skip_serializing_if = "is_default")]
    pub scale_strategy: CloneSetScaleStrategy,
    /// How pods are updated to a new revision.
    #[serde(default, skip_serializing_if = "is_default")]
    pub update_strategy: CloneSetUpdateStrategy,
    /// ControllerRevisions kept for history (defaults to 10).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub revision_history_limit: Option<i32>,
    /// Seconds a pod must be ready before it counts as available.
    #[serde(default, skip_serializing_if = "is_default")]
    pub min_ready_seconds: i32,
    /// Lifecycle hooks.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lifecycle: Option<Lifecycle>,
    /// Seconds a rollout may make no progress before it is reported as failed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub progress_deadline_seconds: Option<i32>,
}

/// How a CloneSet scales.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct CloneSetScaleStrategy {
    /// Pods to delete, by name; the CloneSet then creates replacements as needed.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub pods_to_delete: Vec<String>,
    /// Upper bound of unavailable pods while scaling out.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_unavailable: Option<IntOrString>,
    /// Reuse PVCs left behind by deleted pods.
    #[serde(rename = "enablePVCReuse", default, skip_serializing_if = "is_default")]
    pub enable_pvc_reuse: bool,
    /// Leave pods in `PreparingDelete` out of the replica count.
    #[serde(default, skip_serializing_if = "is_default")]
    pub exclude_preparing_delete: bool,
}

/// Rolling-update parameters.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct RollingUpdateCloneSetStrategy {
    /// Pods (number or percent) kept at the old revision.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub partition: Option<IntOrString>,
    /// Most pods unavailable during the update (defaults to 20%).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_unavailable: Option<IntOrString>,
    /// Most extra pods created during the update.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_surge: Option<IntOrString>,
    /// Recreate, or update in place where possible.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pod_update_policy: Option<CloneSetPodUpdatePolicy>,
    /// Stop updating pods.
    #[serde(default, skip_serializing_if = "is_default")]
    pub paused: bool,
    /// Which pods to update first.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub priority_strategy: Option<UpdatePriorityStrategy>,
    /// Labels whose pods are spread over the update.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub scatter_strategy: UpdateScatterStrategy,
    /// In-place update tuning.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub in_place_update_strategy: Option<InPlaceUpdateStrategy>,
}

crate::wire_enum! {
    /// How an individual pod is moved to a new revision.
    pub enum CloneSetPodUpdatePolicy {
        /// Delete the pod and create a new one.
        ReCreate = "ReCreate",
        /// Update in place when only in-place-updatable fields changed, else recreate.
        InPlaceIfPossible = "InPlaceIfPossible",
        /// Only update in place; other changes are not rolled out.
        InPlaceOnly = "InPlaceOnly",
    }
}

/// How a CloneSet rolls out a new template.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct CloneSetUpdateStrategy {
    /// RollingUpdate (default) or OnDelete.
    #[serde(rename = "type", default, skip_serializing_if = "Option::is_none")]
    pub type_: Option<CloneSetUpdateStrategyType>,
    /// Rolling-update parameters.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rolling_update: Option<RollingUpdateCloneSetStrategy>,
}

crate::wire_enum! {
    /// When pods are moved to a new revision.
    pub enum CloneSetUpdateStrategyType {
        /// The controller updates pods.
        RollingUpdate = "RollingUpdate",
        /// Pods are updated only when someone deletes them.
        OnDelete = "OnDelete",
    }
}

/// The observed state of a CloneSet.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct CloneSetStatus {
    /// The generation this status describes.
    #[serde(default, skip_serializing_if = "is_default")]
    pub observed_generation: i64,
    /// Pods owned.
    #[serde(default)]
    pub replicas: i32,
    /// Pods with Ready=True.
    #[serde(default)]
    pub ready_replicas: i32,
    /// Pods available for minReadySeconds.
    #[serde(default)]
    pub available_replicas: i32,
    /// Pods at the update revision.
    #[serde(default)]
    pub updated_replicas: i32,
    /// Updated pods that are ready.
    #[serde(default)]
    pub updated_ready_replicas: i32,
    /// Updated pods that are available.
    #[serde(default, skip_serializing_if = "is_default")]
    pub updated_available_replicas: i32,
    /// Pods expected at the update revision once the partition is honoured.
    #[serde(default, skip_serializing_if = "is_default")]
    pub expected_updated_replicas: i32,
    /// Revision of the current template.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub update_revision: String,
    /// Revision most pods were at before the update began.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub current_revision: String,
    /// Counter used to avoid revision-name collisions.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub collision_count: Option<i32>,
    /// Observations of the CloneSet's state.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub conditions: Vec<CloneSetCondition>,
    /// The selector as a string, for the scale subresource and HPA.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub label_selector: String,
}

/// A CloneSet condition.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct CloneSetCondition {
    /// Condition type, e.g. `Progressing`, `FailedScale`, `FailedUpdate`.
    #[serde(rename = "type", default)]
    pub type_: String,
    /// True, False or Unknown.
    #[serde(default)]
    pub status: String,
    /// Last time the condition was refreshed.
    pub last_update_time: Option<Time>,
    /// Last time the status changed.
    pub last_transition_time: Option<Time>,
    /// Machine-readable reason.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub reason: String,
    /// Human-readable message.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub message: String,
}
