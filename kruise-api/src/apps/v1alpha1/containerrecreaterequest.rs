//! ContainerRecreateRequest (apps.kruise.io/v1alpha1). The spec is the same as in v1beta1;
//! the status lacks the container snapshot and conditions, which v1alpha1 keeps in the
//! annotations `crr.apps.kruise.io/sync-container-statuses` and
//! `crr.apps.kruise.io/unready-acquired` (see [`crate::well_known::annotations`]).

use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use kube::CustomResource;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

pub use crate::apps::v1beta1::{
    CRRProbeHandler, ContainerRecreateRequestContainer, ContainerRecreateRequestContainerContext,
    ContainerRecreateRequestContainerRecreateState, ContainerRecreateRequestFailurePolicyType,
    ContainerRecreateRequestPhase, ContainerRecreateRequestStrategy,
    ContainerRecreateRequestSyncContainerStatus,
};

/// The desired state of a ContainerRecreateRequest.
#[derive(CustomResource, Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[kube(
    group = "apps.kruise.io",
    version = "v1alpha1",
    kind = "ContainerRecreateRequest",
    plural = "containerrecreaterequests",
    singular = "containerrecreaterequest",
    namespaced,
    shortname = "crr",
    status = "ContainerRecreateRequestStatus",
    printcolumn = r#"{"name":"PHASE","type":"string","jsonPath":".status.phase","description":"Request phase."}"#,
    printcolumn = r#"{"name":"POD","type":"string","jsonPath":".spec.podName","description":"Target pod."}"#,
    printcolumn = r#"{"name":"NODE","type":"string","jsonPath":".metadata.labels.crr\\.apps\\.kruise\\.io/node-name","description":"Node of the target pod."}"#,
    printcolumn = r#"{"name":"AGE","type":"date","jsonPath":".metadata.creationTimestamp"}"#,
    storage = false,
    derive = "PartialEq",
    derive = "Default",
    doc = "ContainerRecreateRequest restarts chosen containers of a pod by recreating them."
)]
#[serde(rename_all = "camelCase")]
pub struct ContainerRecreateRequestSpec {
    /// Name of the pod whose containers are recreated.
    #[serde(default)]
    pub pod_name: String,
    /// The containers to recreate.
    #[serde(default)]
    pub containers: Vec<ContainerRecreateRequestContainer>,
    /// How the containers are recreated.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub strategy: Option<ContainerRecreateRequestStrategy>,
    /// Seconds the request may run before it is given up.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub active_deadline_seconds: Option<i64>,
    /// Seconds after completion at which the request is deleted.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ttl_seconds_after_finished: Option<i32>,
}

/// The observed state of a ContainerRecreateRequest.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ContainerRecreateRequestStatus {
    /// Phase of the whole request.
    #[serde(default)]
    pub phase: ContainerRecreateRequestPhase,
    /// When the request completed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub completion_time: Option<Time>,
    /// Human-readable detail.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub message: String,
    /// Progress of each container.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub container_recreate_states: Vec<ContainerRecreateRequestContainerRecreateState>,
}
