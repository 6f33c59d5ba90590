//! NodeImage (apps.kruise.io/v1alpha1). The status and the tag types are the same as in
//! v1beta1; pull-secret references have no `mode` here.

use std::collections::BTreeMap;

use kube::CustomResource;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::SandboxConfig;
pub use crate::apps::v1beta1::{
    ImagePullPhase, ImageStatus, ImageTagPullPolicy, ImageTagSpec, ImageTagStatus, NodeImageStatus,
    SyncStatus, SyncStatusPhase,
};

/// The images a node should pull.
#[derive(CustomResource, Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[kube(
    group = "apps.kruise.io",
    version = "v1alpha1",
    kind = "NodeImage",
    plural = "nodeimages",
    singular = "nodeimage",
    status = "NodeImageStatus",
    printcolumn = r#"{"name":"DESIRED","type":"integer","jsonPath":".status.desired","description":"Image tags wanted on the node."}"#,
    printcolumn = r#"{"name":"PULLING","type":"integer","jsonPath":".status.pulling","description":"Pulls in progress."}"#,
    printcolumn = r#"{"name":"SUCCEED","type":"integer","jsonPath":".status.succeeded","description":"Pulls that succeeded."}"#,
    printcolumn = r#"{"name":"FAILED","type":"integer","jsonPath":".status.failed","description":"Pulls that failed."}"#,
    printcolumn = r#"{"name":"AGE","type":"date","jsonPath":".metadata.creationTimestamp"}"#,
    storage = false,
    derive = "PartialEq",
    derive = "Default",
    doc = "NodeImage lists the images one node should pull and reports how the pulls went."
)]
#[serde(rename_all = "camelCase")]
pub struct NodeImageSpec {
    /// Images by name (without tag), each with the tags wanted.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub images: BTreeMap<String, ImageSpec>,
}

/// The tags of one image to pull, and how to authenticate.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ImageSpec {
    /// Secrets used to authenticate to the registry.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub pull_secrets: Vec<ReferenceObject>,
    /// The tags wanted.
    #[serde(default)]
    pub tags: Vec<ImageTagSpec>,
    /// Labels and annotations for the sandbox the runtime may create to pull.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sandbox_config: Option<SandboxConfig>,
}

/// A reference to a namespaced object (here, a pull secret).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ReferenceObject {
    /// The object's namespace.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub namespace: String,
    /// The object's name.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub name: String,
}
