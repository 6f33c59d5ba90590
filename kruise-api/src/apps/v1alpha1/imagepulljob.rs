//! ImagePullJob (apps.kruise.io/v1alpha1). Every nested type, and the status, is the same as
//! in v1beta1; only the printer columns differ (v1alpha1 also shows the message).

use kube::CustomResource;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

pub use crate::apps::v1beta1::{
    ImagePullJobNodeSelector, ImagePullJobPodSelector, ImagePullJobStatus, ImagePullJobTemplate,
    ImagePullPolicy, PullPolicy, SandboxConfig,
};

/// The desired state of an ImagePullJob.
#[derive(CustomResource, Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[kube(
    group = "apps.kruise.io",
    version = "v1alpha1",
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
    printcolumn = r#"{"name":"MESSAGE","type":"string","jsonPath":".status.message","description":"Why the job failed."}"#,
    storage = false,
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
