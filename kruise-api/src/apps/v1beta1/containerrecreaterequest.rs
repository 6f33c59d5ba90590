//! ContainerRecreateRequest (apps.kruise.io/v1beta1): asks the kruise daemon to recreate
//! some containers of a running pod.

use k8s_openapi::api::core::v1::{ContainerPort, ExecAction, HTTPGetAction, TCPSocketAction};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{Condition, Time};
use kube::CustomResource;
use schemars::{JsonSchema, Schema, SchemaGenerator};
use serde::{Deserialize, Serialize};

use crate::wire::is_default;

/// The desired state of a ContainerRecreateRequest.
#[derive(CustomResource, Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[kube(
    group = "apps.kruise.io",
    version = "v1beta1",
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
    storage = true,
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

/// One container to recreate.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ContainerRecreateRequestContainer {
    /// Container name.
    #[serde(default)]
    pub name: String,
    /// Copy of the container's preStop hook, filled in by the system.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pre_stop: Option<CRRProbeHandler>,
    /// Copy of the container's ports, filled in by the system.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub ports: Vec<ContainerPort>,
    /// The container's status when the request was created, filled in by the system.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status_context: Option<ContainerRecreateRequestContainerContext>,
}

/// An action run before a container is stopped.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct CRRProbeHandler {
    /// Run a command in the container.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub exec: Option<ExecAction>,
    /// Send an HTTP GET request.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "http_get_schema")]
    pub http_get: Option<HTTPGetAction>,
    /// Open a TCP connection.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tcp_socket: Option<TCPSocketAction>,
}

/// Schema of an optional HTTP GET action as upstream publishes it: without the `protocol`
/// property that newer Kubernetes releases added.
fn http_get_schema(generator: &mut SchemaGenerator) -> Schema {
    let mut schema = generator.subschema_for::<Option<HTTPGetAction>>();
    if let Some(properties) = schema.get_mut("properties").and_then(|p| p.as_object_mut()) {
        properties.remove("protocol");
    }
    schema
}

/// The container's identity when the request was created.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ContainerRecreateRequestContainerContext {
    /// Runtime container ID, e.g. `containerd://<id>`.
    #[serde(rename = "containerID", default)]
    pub container_id: String,
    /// Restart count of the container.
    #[serde(default)]
    pub restart_count: i32,
}

/// How the containers of a request are recreated.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ContainerRecreateRequestStrategy {
    /// Whether a failed container stops the rest (Fail) or not (Ignore).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub failure_policy: Option<ContainerRecreateRequestFailurePolicyType>,
    /// Recreate one container at a time, each after the previous one is done.
    #[serde(default, skip_serializing_if = "is_default")]
    pub ordered_recreate: bool,
    /// Kill the container even while the previous one is still starting.
    #[serde(default, skip_serializing_if = "is_default")]
    pub force_recreate: bool,
    /// Seconds the container gets to stop gracefully.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub termination_grace_period_seconds: Option<i64>,
    /// Seconds the pod is held not-ready before the preStop hook and stop.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub unready_grace_period_seconds: Option<i64>,
    /// Seconds a new container must run and be ready to count as succeeded.
    #[serde(default, skip_serializing_if = "is_default")]
    pub min_started_seconds: i32,
}

crate::wire_enum! {
    /// Reaction to a container that cannot be recreated.
    pub enum ContainerRecreateRequestFailurePolicyType {
        /// Stop and fail the request.
        Fail = "Fail",
        /// Go on with the remaining containers.
        Ignore = "Ignore",
    }
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
    /// The pod's current container statuses, copied by the controller while recreating.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub container_status_snapshot: Vec<ContainerRecreateRequestSyncContainerStatus>,
    /// Conditions of the request, e.g. `PreRecreateGrace`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub conditions: Vec<Condition>,
}

crate::wire_enum! {
    /// Phase of a request or of one of its containers.
    pub enum ContainerRecreateRequestPhase {
        /// Not started yet.
        Pending = "Pending",
        /// In progress.
        Recreating = "Recreating",
        /// Finished successfully.
        Succeeded = "Succeeded",
        /// Finished with a failure.
        Failed = "Failed",
        /// Finished.
        Completed = "Completed",
    }
}

impl Default for ContainerRecreateRequestPhase {
    /// The empty string, Go's zero value, which upstream writes as `""`.
    fn default() -> Self {
        Self::Other(String::new())
    }
}

/// Recreation progress of one container.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ContainerRecreateRequestContainerRecreateState {
    /// Container name.
    #[serde(default)]
    pub name: String,
    /// Phase of this container.
    #[serde(default)]
    pub phase: ContainerRecreateRequestPhase,
    /// Human-readable detail.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub message: String,
    /// The kruise daemon has killed the container.
    #[serde(default, skip_serializing_if = "is_default")]
    pub is_killed: bool,
}

/// A container status as seen by the controller, used to confirm a recreation.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ContainerRecreateRequestSyncContainerStatus {
    /// Container name.
    #[serde(default)]
    pub name: String,
    /// Whether the container passes its readiness probe.
    #[serde(default)]
    pub ready: bool,
    /// Restart count of the container.
    #[serde(default)]
    pub restart_count: i32,
    /// Runtime container ID.
    #[serde(rename = "containerID", default, skip_serializing_if = "String::is_empty")]
    pub container_id: String,
}
