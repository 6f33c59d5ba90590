//! NodeImage (apps.kruise.io/v1beta1): one per node, the images that node should hold and the
//! state of their pulls. Cluster-scoped, named after the node.

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::ObjectReference;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use kube::CustomResource;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::{ImagePullPolicy, SandboxConfig};
use crate::wire::is_default;

/// The images a node should pull.
#[derive(CustomResource, Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[kube(
    group = "apps.kruise.io",
    version = "v1beta1",
    kind = "NodeImage",
    plural = "nodeimages",
    singular = "nodeimage",
    status = "NodeImageStatus",
    printcolumn = r#"{"name":"DESIRED","type":"integer","jsonPath":".status.desired","description":"Image tags wanted on the node."}"#,
    printcolumn = r#"{"name":"PULLING","type":"integer","jsonPath":".status.pulling","description":"Pulls in progress."}"#,
    printcolumn = r#"{"name":"SUCCEED","type":"integer","jsonPath":".status.succeeded","description":"Pulls that succeeded."}"#,
    printcolumn = r#"{"name":"FAILED","type":"integer","jsonPath":".status.failed","description":"Pulls that failed."}"#,
    printcolumn = r#"{"name":"AGE","type":"date","jsonPath":".metadata.creationTimestamp"}"#,
    storage = true,
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
    /// How the reference is used; `batch` marks a secret shared by a batch of jobs.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub mode: String,
}

/// One tag of an image, and who asked for it.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ImageTagSpec {
    /// The tag, e.g. `1.25`.
    #[serde(default)]
    pub tag: String,
    /// When the tag was added to the spec.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub created_at: Option<Time>,
    /// Timeout, retry and lifetime limits of the pull.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pull_policy: Option<ImageTagPullPolicy>,
    /// The objects (usually ImagePullJobs) that requested this tag.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub owner_references: Vec<ObjectReference>,
    /// Bumped to ask for the tag to be pulled again.
    #[serde(default, skip_serializing_if = "is_default")]
    pub version: i64,
    /// Always or IfNotPresent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub image_pull_policy: Option<ImagePullPolicy>,
}

/// Limits of one tag's pull on the node.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ImageTagPullPolicy {
    /// Seconds one attempt may take.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timeout_seconds: Option<i32>,
    /// Retries before the pull counts as failed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub backoff_limit: Option<i32>,
    /// Seconds after the pull finished at which the tag is dropped from the spec.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ttl_seconds_after_finished: Option<i32>,
    /// Seconds after the pull started at which it is abandoned.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub active_deadline_seconds: Option<i64>,
}

/// What the node reports about its pulls.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct NodeImageStatus {
    /// Image tags in the spec.
    #[serde(default)]
    pub desired: i32,
    /// Tags pulled successfully.
    #[serde(default)]
    pub succeeded: i32,
    /// Tags whose pull failed.
    #[serde(default)]
    pub failed: i32,
    /// Tags being pulled.
    #[serde(default)]
    pub pulling: i32,
    /// Tags waiting to be pulled.
    #[serde(default)]
    pub waiting: i32,
    /// Pull state by image name.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub image_statuses: BTreeMap<String, ImageStatus>,
    /// Outcome of the daemon's first sync of the node's existing images.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub first_sync_status: Option<SyncStatus>,
}

/// Pull state of the tags of one image.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ImageStatus {
    /// One entry per tag.
    #[serde(default)]
    pub tags: Vec<ImageTagStatus>,
}

/// Pull state of one tag.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ImageTagStatus {
    /// The tag.
    #[serde(default)]
    pub tag: String,
    /// Waiting, Pulling, Succeeded or Failed.
    #[serde(default)]
    pub phase: ImagePullPhase,
    /// Percent done.
    #[serde(default, skip_serializing_if = "is_default")]
    pub progress: i32,
    /// When the pull started.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub start_time: Option<Time>,
    /// When the pull finished.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub completion_time: Option<Time>,
    /// The spec `version` this state belongs to.
    #[serde(default, skip_serializing_if = "is_default")]
    pub version: i64,
    /// The pulled image's digest reference.
    #[serde(rename = "imageID", default, skip_serializing_if = "String::is_empty")]
    pub image_id: String,
    /// Details, e.g. the error of a failed pull.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub message: String,
}

crate::wire_enum! {
    /// Where a tag's pull stands.
    pub enum ImagePullPhase {
        /// Not started yet.
        Waiting = "Waiting",
        /// In progress.
        Pulling = "Pulling",
        /// Done.
        Succeeded = "Succeeded",
        /// Gave up.
        Failed = "Failed",
    }
}

/// The empty phase (Go's zero value), written as `""`.
impl Default for ImagePullPhase {
    fn default() -> Self {
        Self::Other(String::new())
    }
}

/// Result of a sync.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SyncStatus {
    /// When the sync ran (written as `null` when unset).
    #[serde(default)]
    pub sync_at: Option<Time>,
    /// Succeeded or Failed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status: Option<SyncStatusPhase>,
    /// Details.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub message: String,
}

crate::wire_enum! {
    /// Outcome of a sync.
    pub enum SyncStatusPhase {
        /// The sync worked.
        Succeeded = "Succeeded",
        /// The sync failed.
        Failed = "Failed",
    }
}
