//! Advanced StatefulSet (apps.kruise.io/v1beta1, kind `StatefulSet`): the Kubernetes
//! StatefulSet extended with in-place updates, unordered and parallel rolling updates,
//! reserved ordinals, lifecycle hooks and PVC resizing.

use k8s_openapi::api::apps::v1::StatefulSetCondition;
use k8s_openapi::api::core::v1::{PersistentVolumeClaim, PodTemplateSpec};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector;
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;
use kube::CustomResource;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::Embedded;
use crate::apps::common::{InPlaceUpdateStrategy, Lifecycle, UpdatePriorityStrategy};
use crate::wire::{is_default, preserve_unknown_fields};

/// The desired state of an Advanced StatefulSet.
#[derive(CustomResource, Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[kube(
    group = "apps.kruise.io",
    version = "v1beta1",
    kind = "StatefulSet",
    plural = "statefulsets",
    singular = "statefulset",
    namespaced,
    shortname = "sts",
    shortname = "asts",
    status = "StatefulSetStatus",
    scale = r#"{"labelSelectorPath":".status.labelSelector","specReplicasPath":".spec.replicas","statusReplicasPath":".status.replicas"}"#,
    printcolumn = r#"{"name":"DESIRED","type":"integer","jsonPath":".spec.replicas","description":"Desired pods."}"#,
    printcolumn = r#"{"name":"CURRENT","type":"integer","jsonPath":".status.replicas","description":"All pods."}"#,
    printcolumn = r#"{"name":"UPDATED","type":"integer","jsonPath":".status.updatedReplicas","description":"Pods at the update revision."}"#,
    printcolumn = r#"{"name":"READY","type":"integer","jsonPath":".status.readyReplicas","description":"Ready pods."}"#,
    printcolumn = r#"{"name":"AGE","type":"date","jsonPath":".metadata.creationTimestamp"}"#,
    printcolumn = r#"{"name":"CONTAINERS","type":"string","jsonPath":".spec.template.spec.containers[*].name","priority":1,"description":"Container names."}"#,
    printcolumn = r#"{"name":"IMAGES","type":"string","jsonPath":".spec.template.spec.containers[*].image","priority":1,"description":"Container images."}"#,
    storage = true,
    derive = "PartialEq",
    derive = "Default",
    doc = "Advanced StatefulSet manages pods with stable identities and storage."
)]
#[serde(rename_all = "camelCase")]
pub struct StatefulSetSpec {
    /// Desired number of pods (defaults to 1).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub replicas: Option<i32>,
    /// Label selector for the pods; must match the template's labels.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub selector: Option<LabelSelector>,
    /// The pods to create; each gets its own ordinal identity.
    #[serde(default, skip_serializing_if = "is_default")]
    #[schemars(schema_with = "preserve_unknown_fields")]
    pub template: PodTemplateSpec,
    /// PVCs created for each pod, named `<template>-<pod>`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(schema_with = "preserve_unknown_fields")]
    pub volume_claim_templates: Vec<Embedded<PersistentVolumeClaim>>,
    /// When changes to the volume claim templates reach existing PVCs.
    #[serde(default, skip_serializing_if = "is_default")]
    pub volume_claim_update_strategy: VolumeClaimUpdateStrategy,
    /// The headless service that gives the pods their network identity.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub service_name: String,
    /// OrderedReady (default) or Parallel creation and deletion of pods.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pod_management_policy: Option<PodManagementPolicyType>,
    /// How pods are moved to a new template revision.
    #[serde(default, skip_serializing_if = "is_default")]
    pub update_strategy: StatefulSetUpdateStrategy,
    /// ControllerRevisions kept for history (defaults to 10).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub revision_history_limit: Option<i32>,
    /// Ordinals left unused: numbers, or ranges such as `"3-5"`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub reserve_ordinals: Vec<IntOrString>,
    /// Lifecycle hooks.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lifecycle: Option<Lifecycle>,
    /// How pods are added and removed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scale_strategy: Option<StatefulSetScaleStrategy>,
    /// Whether PVCs are deleted with the set or on scale-down.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub persistent_volume_claim_retention_policy:
        Option<StatefulSetPersistentVolumeClaimRetentionPolicy>,
    /// Numbering of the pods' ordinals.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ordinals: Option<StatefulSetOrdinals>,
}

crate::wire_enum! {
    /// How the pods of a StatefulSet are created and deleted.
    pub enum PodManagementPolicyType {
        /// One at a time, in ordinal order, each waiting for the previous to be ready.
        OrderedReady = "OrderedReady",
        /// All at once, without waiting.
        Parallel = "Parallel",
    }
}

crate::wire_enum! {
    /// When existing PVCs pick up changes to the volume claim templates.
    pub enum VolumeClaimUpdateStrategyType {
        /// PVCs are updated while their pods are rolled.
        OnPodRollingUpdate = "OnPodRollingUpdate",
        /// PVCs are recreated from the new template only after someone deletes them.
        OnDelete = "OnDelete",
    }
}

/// How volume claim template changes are applied.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct VolumeClaimUpdateStrategy {
    /// OnPodRollingUpdate or OnDelete.
    #[serde(rename = "type", default, skip_serializing_if = "Option::is_none")]
    pub type_: Option<VolumeClaimUpdateStrategyType>,
}

crate::wire_enum! {
    /// When pods are moved to a new revision (Kubernetes' StatefulSet update types).
    pub enum StatefulSetUpdateStrategyType {
        /// The controller rolls pods to the new revision.
        RollingUpdate = "RollingUpdate",
        /// Pods are updated only when someone deletes them.
        OnDelete = "OnDelete",
    }
}

/// How an Advanced StatefulSet rolls out a new template.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct StatefulSetUpdateStrategy {
    /// RollingUpdate (default) or OnDelete.
    #[serde(rename = "type", default, skip_serializing_if = "Option::is_none")]
    pub type_: Option<StatefulSetUpdateStrategyType>,
    /// Rolling-update parameters.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rolling_update: Option<RollingUpdateStatefulSetStrategy>,
}

/// Rolling-update parameters of an Advanced StatefulSet.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct RollingUpdateStatefulSetStrategy {
    /// Pods kept at the old revision (by ordinal, or by count when unordered).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub partition: Option<i32>,
    /// Most pods unavailable during the update (number or percent; defaults to 1).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_unavailable: Option<IntOrString>,
    /// Recreate (default), or update in place where possible.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pod_update_policy: Option<PodUpdateStrategyType>,
    /// Stop updating pods.
    #[serde(default, skip_serializing_if = "is_default")]
    pub paused: bool,
    /// Update pods in priority order instead of by ordinal.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub unordered_update: Option<UnorderedUpdateStrategy>,
    /// In-place update tuning.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub in_place_update_strategy: Option<InPlaceUpdateStrategy>,
    /// Seconds an updated pod must be ready before it counts (at most 300).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub min_ready_seconds: Option<i32>,
}

/// Ordering rules for an unordered rolling update.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct UnorderedUpdateStrategy {
    /// Which pods to update first.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub priority_strategy: Option<UpdatePriorityStrategy>,
}

crate::wire_enum! {
    /// How an individual pod is moved to a new revision.
    pub enum PodUpdateStrategyType {
        /// Delete the pod and create a new one.
        ReCreate = "ReCreate",
        /// Update in place when only in-place-updatable fields changed, else recreate.
        InPlaceIfPossible = "InPlaceIfPossible",
        /// Only update in place.
        InPlaceOnly = "InPlaceOnly",
    }
}

crate::wire_enum! {
    /// What happens to a pod's PVCs.
    pub enum PersistentVolumeClaimRetentionPolicyType {
        /// Keep them.
        Retain = "Retain",
        /// Delete them.
        Delete = "Delete",
    }
}

/// When the PVCs created from the volume claim templates are deleted.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct StatefulSetPersistentVolumeClaimRetentionPolicy {
    /// Policy applied when the StatefulSet is deleted (defaults to Retain).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub when_deleted: Option<PersistentVolumeClaimRetentionPolicyType>,
    /// Policy applied to the pods removed by a scale-down (defaults to Retain).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub when_scaled: Option<PersistentVolumeClaimRetentionPolicyType>,
}

/// Numbering of a StatefulSet's pods.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct StatefulSetOrdinals {
    /// The first ordinal (defaults to 0).
    #[serde(default)]
    pub start: i32,
}

/// How an Advanced StatefulSet scales.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct StatefulSetScaleStrategy {
    /// Most pods unavailable while scaling (number or percent; Parallel policy only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_unavailable: Option<IntOrString>,
}

/// The observed state of an Advanced StatefulSet.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct StatefulSetStatus {
    /// The generation this status describes.
    #[serde(default, skip_serializing_if = "is_default")]
    pub observed_generation: i64,
    /// Pods owned.
    #[serde(default)]
    pub replicas: i32,
    /// Pods with Ready=True.
    #[serde(default)]
    pub ready_replicas: i32,
    /// Pods ready for at least minReadySeconds.
    #[serde(default)]
    pub available_replicas: i32,
    /// Pods at the current revision.
    #[serde(default)]
    pub current_replicas: i32,
    /// Pods at the update revision.
    #[serde(default)]
    pub updated_replicas: i32,
    /// Updated pods that are ready.
    #[serde(default, skip_serializing_if = "is_default")]
    pub updated_ready_replicas: i32,
    /// Updated pods that are available.
    #[serde(default, skip_serializing_if = "is_default")]
    pub updated_available_replicas: i32,
    /// Revision of the pods that have not been updated yet.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub current_revision: String,
    /// Revision of the current template.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub update_revision: String,
    /// Counter used to avoid revision-name collisions.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub collision_count: Option<i32>,
    /// Observations of the StatefulSet's state.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub conditions: Vec<StatefulSetCondition>,
    /// The selector as a string, for the scale subresource and HPA.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub label_selector: String,
    /// How far existing PVCs have caught up with each volume claim template.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub volume_claims: Vec<VolumeClaimStatus>,
}

/// Compatibility of existing PVCs with one volume claim template.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct VolumeClaimStatus {
    /// The volume claim template's name.
    #[serde(default)]
    pub volume_claim_name: String,
    /// Pods whose PVC requests at least what the template asks for.
    #[serde(default)]
    pub compatible_replicas: i32,
    /// Of those, pods whose PVC has also been given that capacity.
    #[serde(default)]
    pub compatible_ready_replicas: i32,
}
