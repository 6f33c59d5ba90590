//! Advanced StatefulSet (apps.kruise.io/v1alpha1, kind `StatefulSet`). The update strategy is
//! the same as in v1beta1; the spec lacks the newer fields (reserved ordinals, lifecycle,
//! scale strategy, PVC retention and resizing, ordinals) and the status their counters.

use k8s_openapi::api::apps::v1::StatefulSetCondition;
use k8s_openapi::api::core::v1::{PersistentVolumeClaim, PodTemplateSpec};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector;
use kube::CustomResource;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::Embedded;
pub use crate::apps::v1beta1::{
    PodManagementPolicyType, PodUpdateStrategyType, RollingUpdateStatefulSetStrategy,
    StatefulSetUpdateStrategy, StatefulSetUpdateStrategyType, UnorderedUpdateStrategy,
};
use crate::wire::{is_default, preserve_unknown_fields};

/// The desired state of an Advanced StatefulSet.
#[derive(CustomResource, Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[kube(
    group = "apps.kruise.io",
    version = "v1alpha1",
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
    storage = false,
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
    /// PVCs created for each pod.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(schema_with = "preserve_unknown_fields")]
    pub volume_claim_templates: Vec<Embedded<PersistentVolumeClaim>>,
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
}

/// The observed state of an Advanced StatefulSet (v1alpha1 form).
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
}
