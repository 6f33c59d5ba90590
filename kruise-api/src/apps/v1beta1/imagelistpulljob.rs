//! ImageListPullJob (apps.kruise.io/v1beta1): pre-pulls several images onto a set of nodes,
//! through one ImagePullJob per image.

use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use kube::CustomResource;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::ImagePullJobTemplate;

/// The desired state of an ImageListPullJob.
#[derive(CustomResource, Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[kube(
    group = "apps.kruise.io",
    version = "v1beta1",
    kind = "ImageListPullJob",
    plural = "imagelistpulljobs",
    singular = "imagelistpulljob",
    namespaced,
    status = "ImageListPullJobStatus",
    printcolumn = r#"{"name":"TOTAL","type":"integer","jsonPath":".status.desired","description":"ImagePullJobs wanted."}"#,
    printcolumn = r#"{"name":"SUCCEEDED","type":"integer","jsonPath":".status.succeeded","description":"ImagePullJobs that succeeded."}"#,
    printcolumn = r#"{"name":"COMPLETED","type":"integer","jsonPath":".status.completed","description":"ImagePullJobs that finished."}"#,
    printcolumn = r#"{"name":"AGE","type":"date","jsonPath":".metadata.creationTimestamp"}"#,
    storage = true,
    derive = "PartialEq",
    derive = "Default",
    doc = "ImageListPullJob pulls a list of images onto the selected nodes ahead of use."
)]
#[serde(rename_all = "camelCase")]
pub struct ImageListPullJobSpec {
    /// The images to pull.
    #[serde(default)]
    pub images: Vec<String>,
    /// Where, how and how fast to pull; applied to every image.
    #[serde(flatten)]
    pub template: ImagePullJobTemplate,
}

/// The observed state of an ImageListPullJob.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ImageListPullJobStatus {
    /// When the controller started the job.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub start_time: Option<Time>,
    /// When every image job finished.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub completion_time: Option<Time>,
    /// ImagePullJobs wanted (one per image).
    #[serde(default)]
    pub desired: i32,
    /// ImagePullJobs running now.
    #[serde(default)]
    pub active: i32,
    /// ImagePullJobs that finished, whatever the outcome.
    #[serde(default)]
    pub completed: i32,
    /// ImagePullJobs that succeeded.
    #[serde(default)]
    pub succeeded: i32,
    /// The images whose pull failed, and why.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub failed_image_statuses: Vec<FailedImageStatus>,
}

/// One image of an ImageListPullJob that failed to pull.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct FailedImageStatus {
    /// Name of the ImagePullJob that pulled it.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub image_pull_job: String,
    /// The image.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub name: String,
    /// What went wrong.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub message: String,
}
