//! SidecarSet (apps.kruise.io/v1alpha1). Everything but the spec is shared with v1beta1; the
//! spec has `namespace` instead of `customVersion` (which v1alpha1 keeps in a label).

use k8s_openapi::api::core::v1::{LocalObjectReference, Volume};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector;
use kube::CustomResource;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

pub use crate::apps::v1beta1::{
    PodInjectPolicyType, ResourceExprLimits, ResourceExprRequests, ResourcesExpr, ResourcesPolicy,
    ShareVolumePolicy, ShareVolumePolicyType, SidecarContainer, SidecarContainerUpgradeStrategy,
    SidecarContainerUpgradeType, SidecarSetInjectRevision, SidecarSetInjectRevisionPolicy,
    SidecarSetInjectionStrategy, SidecarSetPatchPodMetadata, SidecarSetPatchPolicyType,
    SidecarSetStatus, SidecarSetUpdateStrategy, SidecarSetUpdateStrategyType,
    SourceContainerNameSource, TargetContainersModeType, TransferEnvVar,
};
use crate::wire::{is_default, preserve_unknown_fields};

/// The desired state of a SidecarSet.
#[derive(CustomResource, Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[kube(
    group = "apps.kruise.io",
    version = "v1alpha1",
    kind = "SidecarSet",
    plural = "sidecarsets",
    singular = "sidecarset",
    status = "SidecarSetStatus",
    printcolumn = r#"{"name":"MATCHED","type":"integer","jsonPath":".status.matchedPods","description":"Pods selected."}"#,
    printcolumn = r#"{"name":"UPDATED","type":"integer","jsonPath":".status.updatedPods","description":"Selected pods with the latest sidecars."}"#,
    printcolumn = r#"{"name":"READY","type":"integer","jsonPath":".status.readyPods","description":"Selected pods that are ready."}"#,
    printcolumn = r#"{"name":"AGE","type":"date","jsonPath":".metadata.creationTimestamp"}"#,
    storage = false,
    derive = "PartialEq",
    derive = "Default",
    doc = "SidecarSet injects sidecar containers into the pods it selects and keeps them up to date."
)]
#[serde(rename_all = "camelCase")]
pub struct SidecarSetSpec {
    /// Pods to inject into.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub selector: Option<LabelSelector>,
    /// The only namespace whose pods are eligible; takes precedence over `namespaceSelector`.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub namespace: String,
    /// Namespaces whose pods are eligible; all namespaces when unset.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub namespace_selector: Option<LabelSelector>,
    /// Init containers to inject.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub init_containers: Vec<SidecarContainer>,
    /// Sidecar containers to inject.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub containers: Vec<SidecarContainer>,
    /// Volumes the sidecars need, added to the pod unless it has one of the same name.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(schema_with = "preserve_unknown_fields")]
    pub volumes: Vec<Volume>,
    /// How injected sidecars are upgraded.
    #[serde(default, skip_serializing_if = "is_default")]
    pub update_strategy: SidecarSetUpdateStrategy,
    /// How sidecars are injected into new pods.
    #[serde(default, skip_serializing_if = "is_default")]
    pub injection_strategy: SidecarSetInjectionStrategy,
    /// Pull secrets added to pods for the sidecar images.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub image_pull_secrets: Vec<LocalObjectReference>,
    /// ControllerRevisions kept for history (defaults to 10).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub revision_history_limit: Option<i32>,
    /// Annotations patched onto the pods the sidecars are injected into.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub patch_pod_metadata: Vec<SidecarSetPatchPodMetadata>,
}
