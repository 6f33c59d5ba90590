//! Crate-owned request and result types.
//!
//! They carry the fields the daemon's features read (imagepuller, containerrecreate,
//! containermeta), not every CRI field. Owning them keeps [`FakeRuntime`](crate::FakeRuntime)
//! free of protobuf types and lets a build without the `grpc` feature use the fake alone.
//! [`CriClient`](crate::CriClient) converts to and from the CRI v1 messages.

use std::collections::BTreeMap;

/// Labels or annotations: sorted, so that output built from them is deterministic.
pub type StringMap = BTreeMap<String, String>;

/// What the runtime says about itself (CRI `VersionResponse`).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct VersionInfo {
    /// Version of the kubelet runtime API (`0.1.0`).
    pub version: String,
    /// Name of the runtime, e.g. `containerd`.
    pub runtime_name: String,
    /// Version of the runtime.
    pub runtime_version: String,
    /// CRI API version the runtime speaks, e.g. `v1`.
    pub runtime_api_version: String,
}

/// Registry credentials for one pull (CRI `AuthConfig`).
#[derive(Clone, Default, PartialEq, Eq)]
pub struct AuthConfig {
    /// User name.
    pub username: String,
    /// Password.
    pub password: String,
    /// `base64(username:password)`, as a docker config's `auth` field holds it.
    pub auth: String,
    /// Registry host the credentials are for.
    pub server_address: String,
    /// Identity token for the registry.
    pub identity_token: String,
    /// Bearer token sent to the registry.
    pub registry_token: String,
}

impl AuthConfig {
    /// Basic credentials: a user name and a password.
    pub fn basic(username: impl Into<String>, password: impl Into<String>) -> Self {
        AuthConfig { username: username.into(), password: password.into(), ..AuthConfig::default() }
    }
}

impl std::fmt::Debug for AuthConfig {
    // Secrets never reach logs.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AuthConfig")
            .field("username", &self.username)
            .field("server_address", &self.server_address)
            .finish_non_exhaustive()
    }
}

/// The sandbox config a pull passes along (upstream `SandboxConfig` of an ImagePullJob):
/// some runtimes pick a snapshotter or a mirror from it.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct PullSandboxConfig {
    /// Labels of the sandbox.
    pub labels: StringMap,
    /// Annotations of the sandbox.
    pub annotations: StringMap,
}

/// An image the runtime holds (CRI `Image`).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ImageInfo {
    /// Image ID, e.g. `sha256:…`.
    pub id: String,
    /// References with a tag, e.g. `docker.io/library/busybox:1.36`.
    pub repo_tags: Vec<String>,
    /// References with a digest.
    pub repo_digests: Vec<String>,
    /// Size on disk in bytes.
    pub size: u64,
    /// Whether the runtime will not garbage-collect the image.
    pub pinned: bool,
}

/// State of a container (CRI `ContainerState`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[non_exhaustive]
pub enum ContainerState {
    /// Created, not started.
    Created,
    /// Running.
    Running,
    /// Exited.
    Exited,
    /// The runtime does not know.
    #[default]
    Unknown,
}

/// State of a pod sandbox (CRI `PodSandboxState`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[non_exhaustive]
pub enum SandboxState {
    /// Ready.
    #[default]
    Ready,
    /// Stopped or failed.
    NotReady,
}

/// Which containers [`list_containers`](crate::ContainerRuntime::list_containers) returns
/// (CRI `ContainerFilter`); empty fields match everything.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ContainerFilter {
    /// Only this container.
    pub id: Option<String>,
    /// Only containers in this state.
    pub state: Option<ContainerState>,
    /// Only containers of this pod sandbox.
    pub pod_sandbox_id: Option<String>,
    /// Only containers that have all these labels.
    pub label_selector: StringMap,
}

impl ContainerFilter {
    /// Containers of one pod sandbox.
    pub fn pod_sandbox(id: impl Into<String>) -> Self {
        ContainerFilter { pod_sandbox_id: Some(id.into()), ..ContainerFilter::default() }
    }

    /// Adds a label the containers must have.
    pub fn label(mut self, key: impl Into<String>, value: impl Into<String>) -> Self {
        self.label_selector.insert(key.into(), value.into());
        self
    }
}

/// A container in a listing (CRI `Container`).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Container {
    /// Container ID.
    pub id: String,
    /// ID of its pod sandbox.
    pub pod_sandbox_id: String,
    /// Container name (the name in the pod spec).
    pub name: String,
    /// Creation attempt: the kubelet's restart count for this container name.
    pub attempt: u32,
    /// Image as the container spec names it.
    pub image: String,
    /// Image reference the runtime resolved.
    pub image_ref: String,
    /// State.
    pub state: ContainerState,
    /// Creation time, nanoseconds since the epoch.
    pub created_at: i64,
    /// Labels.
    pub labels: StringMap,
    /// Annotations.
    pub annotations: StringMap,
}

/// Status of one container (CRI `ContainerStatus`).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ContainerStatus {
    /// Container ID.
    pub id: String,
    /// Container name.
    pub name: String,
    /// Creation attempt: the kubelet's restart count for this container name.
    pub attempt: u32,
    /// State.
    pub state: ContainerState,
    /// Creation time, nanoseconds since the epoch.
    pub created_at: i64,
    /// Start time, nanoseconds since the epoch (0 if never started).
    pub started_at: i64,
    /// Exit time, nanoseconds since the epoch (0 unless exited).
    pub finished_at: i64,
    /// Exit code (only meaningful when exited).
    pub exit_code: i32,
    /// Image as the container spec names it.
    pub image: String,
    /// Image reference the runtime resolved.
    pub image_ref: String,
    /// Brief reason for the state, e.g. `Completed`, `Error`, `OOMKilled`.
    pub reason: String,
    /// Human-readable detail of the state.
    pub message: String,
    /// Labels.
    pub labels: StringMap,
    /// Annotations.
    pub annotations: StringMap,
}

/// What an [`exec_sync`](crate::ContainerRuntime::exec_sync) produced.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ExecSyncResult {
    /// Captured standard output.
    pub stdout: Vec<u8>,
    /// Captured standard error.
    pub stderr: Vec<u8>,
    /// Exit code of the command.
    pub exit_code: i32,
}

/// Metadata and config of a pod sandbox to run (a subset of CRI `PodSandboxConfig`).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct PodSandboxConfig {
    /// Pod name.
    pub name: String,
    /// Pod UID.
    pub uid: String,
    /// Pod namespace.
    pub namespace: String,
    /// Sandbox creation attempt.
    pub attempt: u32,
    /// Labels.
    pub labels: StringMap,
    /// Annotations.
    pub annotations: StringMap,
}

/// A pod sandbox (CRI `PodSandbox`).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct PodSandbox {
    /// Sandbox ID.
    pub id: String,
    /// Pod name, UID, namespace and attempt.
    pub config: PodSandboxConfig,
    /// State.
    pub state: SandboxState,
    /// Creation time, nanoseconds since the epoch.
    pub created_at: i64,
}

/// A container to create (a subset of CRI `ContainerConfig`).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ContainerConfig {
    /// Container name.
    pub name: String,
    /// Creation attempt.
    pub attempt: u32,
    /// Image.
    pub image: String,
    /// Entrypoint.
    pub command: Vec<String>,
    /// Arguments.
    pub args: Vec<String>,
    /// Labels.
    pub labels: StringMap,
    /// Annotations.
    pub annotations: StringMap,
}
