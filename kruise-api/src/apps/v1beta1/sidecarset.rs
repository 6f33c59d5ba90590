//! SidecarSet (apps.kruise.io/v1beta1): sidecar containers injected into every matching pod
//! at creation, and upgraded in place afterwards.

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::{Container, LocalObjectReference, ObjectFieldSelector, Volume};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector;
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;
use kube::CustomResource;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::apps::common::{UpdatePriorityStrategy, UpdateScatterStrategy};
use crate::wire::{is_default, preserve_unknown_fields};

/// The desired state of a SidecarSet.
#[derive(CustomResource, Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[kube(
    group = "apps.kruise.io",
    version = "v1beta1",
    kind = "SidecarSet",
    plural = "sidecarsets",
    singular = "sidecarset",
    status = "SidecarSetStatus",
    printcolumn = r#"{"name":"MATCHED","type":"integer","jsonPath":".status.matchedPods","description":"Pods selected."}"#,
    printcolumn = r#"{"name":"UPDATED","type":"integer","jsonPath":".status.updatedPods","description":"Selected pods with the latest sidecars."}"#,
    printcolumn = r#"{"name":"READY","type":"integer","jsonPath":".status.readyPods","description":"Selected pods that are ready."}"#,
    printcolumn = r#"{"name":"AGE","type":"date","jsonPath":".metadata.creationTimestamp"}"#,
    storage = true,
    derive = "PartialEq",
    derive = "Default",
    doc = "SidecarSet injects sidecar containers into the pods it selects and keeps them up to date."
)]
#[serde(rename_all = "camelCase")]
pub struct SidecarSetSpec {
    /// Pods to inject into.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub selector: Option<LabelSelector>,
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
    /// User-chosen version tag, recorded on the SidecarSet's revisions.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub custom_version: String,
}

/// Annotations to patch onto a pod, with the policy for existing values.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SidecarSetPatchPodMetadata {
    /// The annotations to write.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub annotations: BTreeMap<String, String>,
    /// What to do when the pod already has the annotation (defaults to Retain).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub patch_policy: Option<SidecarSetPatchPolicyType>,
}

crate::wire_enum! {
    /// How a patched annotation combines with one already on the pod.
    pub enum SidecarSetPatchPolicyType {
        /// Keep the pod's value.
        Retain = "Retain",
        /// Replace the pod's value.
        Overwrite = "Overwrite",
        /// Merge both values as JSON objects.
        MergePatchJson = "MergePatchJson",
    }
}

/// A container to inject: a full core/v1 container plus SidecarSet-specific settings.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
#[schemars(extend("x-kubernetes-preserve-unknown-fields" = true))]
pub struct SidecarContainer {
    /// The container itself; its fields sit inline next to the settings below.
    #[serde(flatten)]
    #[schemars(skip)]
    pub container: Container,
    /// Where the container goes relative to the pod's own containers.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pod_inject_policy: Option<PodInjectPolicyType>,
    /// Cold or hot upgrade.
    #[serde(default, skip_serializing_if = "is_default")]
    pub upgrade_strategy: SidecarContainerUpgradeStrategy,
    /// Whether the sidecar also mounts the volumes of the pod's containers.
    #[serde(default, skip_serializing_if = "is_default")]
    pub share_volume_policy: ShareVolumePolicy,
    /// Whether the sidecar also gets the volume devices of the pod's containers.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub share_volume_device_policy: Option<ShareVolumePolicy>,
    /// Env vars copied from other containers of the pod.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub transfer_env: Vec<TransferEnvVar>,
    /// Resources derived from those of the pod's containers.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resources_policy: Option<ResourcesPolicy>,
}

/// Whether a sharing feature is on.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ShareVolumePolicy {
    /// `enabled` or `disabled`.
    #[serde(rename = "type", default, skip_serializing_if = "Option::is_none")]
    pub type_: Option<ShareVolumePolicyType>,
}

crate::wire_enum! {
    /// Where an injected container is placed among the pod's containers.
    pub enum PodInjectPolicyType {
        /// Before the pod's own containers.
        BeforeAppContainer = "BeforeAppContainer",
        /// After the pod's own containers.
        AfterAppContainer = "AfterAppContainer",
    }
}

crate::wire_enum! {
    /// Sharing switch.
    pub enum ShareVolumePolicyType {
        /// Share.
        Enabled = "enabled",
        /// Do not share.
        Disabled = "disabled",
    }
}

/// An env var copied into the sidecar from another container of the pod.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct TransferEnvVar {
    /// Container to copy from.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub source_container_name: String,
    /// Where to read the source container's name from, instead of a fixed name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub source_container_name_from: Option<SourceContainerNameSource>,
    /// One env var to copy.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub env_name: String,
    /// Several env vars to copy.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub env_names: Vec<String>,
}

/// A pod field holding the name of the container to copy env vars from.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SourceContainerNameSource {
    /// The pod field to read.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub field_ref: Option<ObjectFieldSelector>,
}

/// How the sidecar's resources follow those of the pod's containers.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ResourcesPolicy {
    /// Combine the matched containers' resources by sum or by max.
    #[serde(default)]
    pub target_containers_mode: TargetContainersModeType,
    /// Regular expression choosing the containers to look at (defaults to all).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub target_containers_name_regex: String,
    /// Expressions computing the sidecar's resources.
    #[serde(default)]
    pub resources_expr: ResourcesExpr,
}

crate::wire_enum! {
    /// How the matched containers' resources are combined.
    pub enum TargetContainersModeType {
        /// Add them up.
        Sum = "sum",
        /// Take the largest.
        Max = "max",
    }
}

impl Default for TargetContainersModeType {
    /// The empty string, as Go writes an unset value.
    fn default() -> Self {
        Self::Other(String::new())
    }
}

/// Expressions for the sidecar's limits and requests.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ResourcesExpr {
    /// Limit expressions.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub limits: Option<ResourceExprLimits>,
    /// Request expressions.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub requests: Option<ResourceExprRequests>,
}

/// Limit expressions, per resource.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ResourceExprLimits {
    /// CPU expression.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub cpu: String,
    /// Memory expression.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub memory: String,
}

/// Request expressions, per resource.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ResourceExprRequests {
    /// CPU expression.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub cpu: String,
    /// Memory expression.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub memory: String,
}

crate::wire_enum! {
    /// How a sidecar container is upgraded.
    pub enum SidecarContainerUpgradeType {
        /// Restart the container with the new spec.
        ColdUpgrade = "ColdUpgrade",
        /// Start the new version next to the old one and swap, without downtime.
        HotUpgrade = "HotUpgrade",
    }
}

/// Upgrade settings of one sidecar container.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SidecarContainerUpgradeStrategy {
    /// ColdUpgrade (default) or HotUpgrade.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub upgrade_type: Option<SidecarContainerUpgradeType>,
    /// Placeholder image the idle hot-upgrade container runs.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub hot_upgrade_empty_image: String,
}

/// How sidecars are injected into new pods.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SidecarSetInjectionStrategy {
    /// Stop injecting into new pods.
    #[serde(default, skip_serializing_if = "is_default")]
    pub paused: bool,
    /// Inject a recorded revision instead of the latest one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub revision: Option<SidecarSetInjectRevision>,
}

/// The revision of a SidecarSet to inject.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SidecarSetInjectRevision {
    /// Revision chosen by its custom version tag.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub custom_version: Option<String>,
    /// Revision chosen by ControllerRevision name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub revision_name: Option<String>,
    /// Which new pods get this revision (defaults to Always).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub policy: Option<SidecarSetInjectRevisionPolicy>,
}

crate::wire_enum! {
    /// Which new pods receive the chosen revision.
    pub enum SidecarSetInjectRevisionPolicy {
        /// All of them.
        Always = "Always",
        /// Those outside the update partition; the rest get the latest revision.
        Partial = "Partial",
    }
}

/// How injected sidecars are upgraded.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SidecarSetUpdateStrategy {
    /// RollingUpdate (default) or NotUpdate.
    #[serde(rename = "type", default, skip_serializing_if = "Option::is_none")]
    pub type_: Option<SidecarSetUpdateStrategyType>,
    /// Stop upgrading pods.
    #[serde(default, skip_serializing_if = "is_default")]
    pub paused: bool,
    /// Only pods matching this selector are upgraded.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub selector: Option<LabelSelector>,
    /// Pods (number or percent) kept at the old sidecars.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub partition: Option<IntOrString>,
    /// Most pods unavailable while upgrading (defaults to 1).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_unavailable: Option<IntOrString>,
    /// Which pods to upgrade first.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub priority_strategy: Option<UpdatePriorityStrategy>,
    /// Labels whose pods are spread over the upgrade.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub scatter_strategy: UpdateScatterStrategy,
}

crate::wire_enum! {
    /// Whether injected sidecars are upgraded.
    pub enum SidecarSetUpdateStrategyType {
        /// Only new pods get new sidecars.
        NotUpdate = "NotUpdate",
        /// Existing pods are upgraded in place.
        RollingUpdate = "RollingUpdate",
    }
}

/// The observed state of a SidecarSet.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SidecarSetStatus {
    /// The generation this status describes.
    #[serde(default, skip_serializing_if = "is_default")]
    pub observed_generation: i64,
    /// Pods selected.
    #[serde(default)]
    pub matched_pods: i32,
    /// Selected pods with the latest sidecars.
    #[serde(default)]
    pub updated_pods: i32,
    /// Selected pods that are ready.
    #[serde(default)]
    pub ready_pods: i32,
    /// Selected pods with the latest sidecars that are ready.
    #[serde(default, skip_serializing_if = "is_default")]
    pub updated_ready_pods: i32,
    /// Name of the latest revision.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub latest_revision: String,
    /// Counter used to avoid revision-name collisions.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub collision_count: Option<i32>,
}
