//! ImagePullJob (apps.kruise.io/v1beta1): pre-pulls one image onto a set of nodes.
//!
//! The pull settings ([`ImagePullJobTemplate`]) are shared with ImageListPullJob, and
//! [`SandboxConfig`] with NodeImage.

use std::collections::BTreeMap;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::{LabelSelector, Time};
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;
use kube::CustomResource;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::CompletionPolicy;

/// The desired state of an ImagePullJob.
#[derive(CustomResource, Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[kube(
    group = "apps.kruise.io",
    version = "v1beta1",
    kind = "ImagePullJob",
    plural = "imagepulljobs",
    singular = "imagepulljob",
    namespaced,
    status = "ImagePullJobStatus",
    printcolumn = r#"{"name":"TOTAL","type":"integer","jsonPath":".status.desired","description":"Nodes selected."}"#,
    printcolumn = r#"{"name":"ACTIVE","type":"integer","jsonPath":".status.active","description":"Pulls in progress."}"#,
    printcolumn = r#"{"name":"SUCCEED","type":"integer","jsonPath":".status.succeeded","description":"Pulls that succeeded."}"#,
    printcolumn = r#"{"name":"FAILED","type":"integer","jsonPath":".status.failed","description":"Pulls that failed."}"#,
    printcolumn = r#"{"name":"AGE","type":"date","jsonPath":".metadata.creationTimestamp"}"#,
    storage = true,
    derive = "PartialEq",
    derive = "Default",
    doc = "ImagePullJob pulls one image onto the selected nodes ahead of use."
)]
#[serde(rename_all = "camelCase")]
pub struct ImagePullJobSpec {
    /// The image to pull, e.g. `nginx:1.25`.
    #[serde(default)]
    pub image: String,
    /// Where, how and how fast to pull.
    #[serde(flatten)]
    pub template: ImagePullJobTemplate,
}

/// Pull settings shared by ImagePullJob and ImageListPullJob (inlined into their specs).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ImagePullJobTemplate {
    /// Names of secrets in the job's namespace used to authenticate to the registry.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub pull_secrets: Vec<String>,
    /// Nodes to pull on, by name or by label; unset means all nodes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub selector: Option<ImagePullJobNodeSelector>,
    /// Pull on the nodes running pods that match this selector (exclusive with `selector`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pod_selector: Option<ImagePullJobPodSelector>,
    /// Most nodes (number or percent) pulling at the same time (defaults to 1).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub parallelism: Option<IntOrString>,
    /// Timeout and retries of each node's pull.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pull_policy: Option<PullPolicy>,
    /// When the job counts as finished.
    #[serde(default)]
    pub completion_policy: CompletionPolicy,
    /// Labels and annotations for the sandbox the runtime may create to pull.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sandbox_config: Option<SandboxConfig>,
    /// Always or IfNotPresent (default).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub image_pull_policy: Option<ImagePullPolicy>,
}

/// Nodes selected by name and/or label.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ImagePullJobNodeSelector {
    /// Node names.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub names: Vec<String>,
    /// Node labels (`matchLabels` / `matchExpressions`, inlined).
    #[serde(flatten)]
    pub label_selector: LabelSelector,
}

/// Pods whose nodes should pull the image.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ImagePullJobPodSelector {
    /// Pod labels (`matchLabels` / `matchExpressions`, inlined).
    #[serde(flatten)]
    pub label_selector: LabelSelector,
}

/// Timeout and retry limits of a single pull.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct PullPolicy {
    /// Seconds one attempt may take (defaults to 600).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timeout_seconds: Option<i32>,
    /// Retries on a node before the pull there counts as failed (defaults to 3).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub backoff_limit: Option<i32>,
}

/// Metadata for the pod sandbox a container runtime may create while pulling.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SandboxConfig {
    /// Sandbox labels.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub labels: BTreeMap<String, String>,
    /// Sandbox annotations.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub annotations: BTreeMap<String, String>,
}

crate::wire_enum! {
    /// Whether an image already on the node is pulled again.
    pub enum ImagePullPolicy {
        /// Pull every time.
        Always = "Always",
        /// Pull only when the node does not have the image.
        IfNotPresent = "IfNotPresent",
    }
}

/// The observed state of an ImagePullJob.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ImagePullJobStatus {
    /// When the controller started the job.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub start_time: Option<Time>,
    /// When the job finished.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub completion_time: Option<Time>,
    /// Nodes that should pull the image.
    #[serde(default)]
    pub desired: i32,
    /// Nodes pulling now.
    #[serde(default)]
    pub active: i32,
    /// Nodes where the pull succeeded.
    #[serde(default)]
    pub succeeded: i32,
    /// Nodes where the pull failed.
    #[serde(default)]
    pub failed: i32,
    /// Short summary, set when the job failed.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub message: String,
    /// Names of the nodes where the pull failed.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub failed_nodes: Vec<String>,
}
