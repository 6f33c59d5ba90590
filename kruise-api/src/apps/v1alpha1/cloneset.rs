//! CloneSet (apps.kruise.io/v1alpha1). The status is the same as in v1beta1; the spec keeps
//! the older flat update strategy and `disablePVCReuse`.

use k8s_openapi::api::core::v1::{PersistentVolumeClaim, PodTemplateSpec};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector;
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;
use kube::CustomResource;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::Embedded;
use crate::apps::common::{
    InPlaceUpdateStrategy, Lifecycle, UpdatePriorityStrategy, UpdateScatterStrategy,
};
pub use crate::apps::v1beta1::{CloneSetCondition, CloneSetStatus};
use crate::wire::{is_default, preserve_unknown_fields};

/// The desired state of a CloneSet.
#[derive(CustomResource, Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[kube(
    group = "apps.kruise.io",
    version = "v1alpha1",
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
    storage = false,
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
    /// PVCs created for each pod.
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
    /// Pods to delete, by name.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub pods_to_delete: Vec<String>,
    /// Upper bound of unavailable pods while scaling out.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_unavailable: Option<IntOrString>,
    /// Do not reuse PVCs left behind by deleted pods.
    #[serde(rename = "disablePVCReuse", default, skip_serializing_if = "is_default")]
    pub disable_pvc_reuse: bool,
}

/// How a CloneSet rolls out a new template (the flat v1alpha1 form).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct CloneSetUpdateStrategy {
    /// ReCreate (default), InPlaceIfPossible, InPlaceOnly or OnDelete.
    #[serde(rename = "type", default, skip_serializing_if = "Option::is_none")]
    pub type_: Option<CloneSetUpdateStrategyType>,
    /// Pods (number or percent) kept at the old revision.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub partition: Option<IntOrString>,
    /// Most pods unavailable during the update (defaults to 20%).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_unavailable: Option<IntOrString>,
    /// Most extra pods created during the update.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_surge: Option<IntOrString>,
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
    /// How pods are moved to a new revision (v1alpha1 folds the pod policy into the type).
    pub enum CloneSetUpdateStrategyType {
        /// Delete and recreate pods.
        ReCreate = "ReCreate",
        /// Update in place when possible, else recreate.
        InPlaceIfPossible = "InPlaceIfPossible",
        /// Only update in place.
        InPlaceOnly = "InPlaceOnly",
        /// Pods are updated only when someone deletes them.
        OnDelete = "OnDelete",
    }
}
