//! ImageListPullJob (apps.kruise.io/v1alpha1). Every nested type, and the status, is the same
//! as in v1beta1.

use kube::CustomResource;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::ImagePullJobTemplate;
pub use crate::apps::v1beta1::{FailedImageStatus, ImageListPullJobStatus};

/// The desired state of an ImageListPullJob.
#[derive(CustomResource, Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[kube(
    group = "apps.kruise.io",
    version = "v1alpha1",
    kind = "ImageListPullJob",
    plural = "imagelistpulljobs",
    singular = "imagelistpulljob",
    namespaced,
    status = "ImageListPullJobStatus",
    printcolumn = r#"{"name":"TOTAL","type":"integer","jsonPath":".status.desired","description":"ImagePullJobs wanted."}"#,
    printcolumn = r#"{"name":"SUCCEEDED","type":"integer","jsonPath":".status.succeeded","description":"ImagePullJobs that succeeded."}"#,
    printcolumn = r#"{"name":"COMPLETED","type":"integer","jsonPath":".status.completed","description":"ImagePullJobs that finished."}"#,
    printcolumn = r#"{"name":"AGE","type":"date","jsonPath":".metadata.creationTimestamp"}"#,
    storage = false,
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
