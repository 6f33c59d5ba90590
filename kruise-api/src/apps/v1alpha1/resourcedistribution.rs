//! ResourceDistribution (apps.kruise.io/v1alpha1, cluster-scoped). The namespace label
//! selector is `namespaceLabelSelector` and a condition lists `failedNamespace`; everything
//! else is shared with v1beta1.

use k8s_openapi::apimachinery::pkg::apis::meta::v1::{LabelSelector, Time};
use k8s_openapi::apimachinery::pkg::runtime::RawExtension;
use kube::CustomResource;
use schemars::{JsonSchema, Schema, SchemaGenerator, json_schema};
use serde::{Deserialize, Serialize};

pub use crate::apps::v1beta1::{
    ResourceDistributionConditionStatus, ResourceDistributionConditionType,
    ResourceDistributionNamespace, ResourceDistributionTargetNamespaces,
};
use crate::wire::is_default;

/// The desired state of a ResourceDistribution.
#[derive(CustomResource, Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[kube(
    group = "apps.kruise.io",
    version = "v1alpha1",
    kind = "ResourceDistribution",
    plural = "resourcedistributions",
    singular = "resourcedistribution",
    shortname = "distributor",
    status = "ResourceDistributionStatus",
    printcolumn = r#"{"name":"TOTAL","type":"integer","jsonPath":".status.desired","description":"Target namespaces."}"#,
    printcolumn = r#"{"name":"SUCCEED","type":"integer","jsonPath":".status.succeeded","description":"Namespaces in sync."}"#,
    printcolumn = r#"{"name":"FAILED","type":"integer","jsonPath":".status.failed","description":"Namespaces that failed."}"#,
    storage = false,
    derive = "PartialEq",
    derive = "Default",
    doc = "ResourceDistribution copies a resource into many namespaces and keeps the copies in sync."
)]
#[serde(rename_all = "camelCase")]
pub struct ResourceDistributionSpec {
    /// The complete resource to copy (apiVersion, kind, metadata and body), kept verbatim.
    #[serde(default)]
    #[schemars(schema_with = "embedded_resource")]
    pub resource: RawExtension,
    /// The namespaces to copy it to.
    #[serde(default)]
    pub targets: ResourceDistributionTargets,
}

/// Schema of the embedded resource: any object with its own apiVersion, kind and metadata.
fn embedded_resource(_: &mut SchemaGenerator) -> Schema {
    json_schema!({
        "type": "object",
        "x-kubernetes-embedded-resource": true,
        "x-kubernetes-preserve-unknown-fields": true,
    })
}

/// Which namespaces receive the resource: the union of all, listed and selected namespaces,
/// minus the excluded ones.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ResourceDistributionTargets {
    /// Every namespace (except protected system namespaces).
    #[serde(default, skip_serializing_if = "is_default")]
    pub all_namespaces: bool,
    /// Namespaces that never receive the resource; wins over everything else.
    #[serde(default, skip_serializing_if = "is_default")]
    pub excluded_namespaces: ResourceDistributionTargetNamespaces,
    /// Namespaces listed by name.
    #[serde(default, skip_serializing_if = "is_default")]
    pub included_namespaces: ResourceDistributionTargetNamespaces,
    /// Namespaces whose labels match.
    #[serde(default, skip_serializing_if = "is_default")]
    pub namespace_label_selector: LabelSelector,
}

/// The observed state of a ResourceDistribution.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ResourceDistributionStatus {
    /// Namespaces that should hold a copy.
    #[serde(default, skip_serializing_if = "is_default")]
    pub desired: i32,
    /// Namespaces whose copy is in sync.
    #[serde(default, skip_serializing_if = "is_default")]
    pub succeeded: i32,
    /// Namespaces whose copy could not be written.
    #[serde(default, skip_serializing_if = "is_default")]
    pub failed: i32,
    /// The generation this status describes.
    #[serde(default, skip_serializing_if = "is_default")]
    pub observed_generation: i64,
    /// Problems met while creating, updating or deleting copies.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub conditions: Vec<ResourceDistributionCondition>,
}

/// A ResourceDistribution condition.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ResourceDistributionCondition {
    /// Which operation the condition is about.
    #[serde(rename = "type", default)]
    pub type_: ResourceDistributionConditionType,
    /// True, False or Unknown.
    #[serde(default)]
    pub status: ResourceDistributionConditionStatus,
    /// Last time the status changed.
    #[serde(default)]
    pub last_transition_time: Option<Time>,
    /// Why the condition is in its state.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub reason: String,
    /// Namespaces the operation failed in.
    #[serde(rename = "failedNamespace", default, skip_serializing_if = "Vec::is_empty")]
    pub failed_namespaces: Vec<String>,
}
