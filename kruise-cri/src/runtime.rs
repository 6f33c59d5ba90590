//! The container runtime trait the daemon's features call.

use std::future::Future;
use std::pin::Pin;
use std::time::Duration;

use crate::error::CriError;
use crate::types::{
    AuthConfig, Container, ContainerFilter, ContainerStatus, ExecSyncResult, ImageInfo,
    PullSandboxConfig, VersionInfo,
};

/// A boxed, sendable future: what the trait's methods return, so that the trait stays
/// object-safe (`Arc<dyn ContainerRuntime>`).
pub type BoxFuture<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;

/// Result of a runtime call.
pub type CriResult<T> = Result<T, CriError>;

/// The CRI calls the daemon makes, over a real runtime ([`CriClient`](crate::CriClient)) or
/// the in-memory [`FakeRuntime`](crate::FakeRuntime). Object-safe: the daemon holds one
/// `Arc<dyn ContainerRuntime>` per node.
pub trait ContainerRuntime: Send + Sync {
    /// Runtime name and versions (CRI `Version`).
    fn version(&self) -> BoxFuture<'_, CriResult<VersionInfo>>;

    /// Pulls `image` (a full reference, e.g. `registry/repo:tag`) with optional credentials and
    /// sandbox config; returns the image reference the runtime resolved. Failures are
    /// [`CriError::PullImage`] naming the image.
    fn pull_image<'a>(
        &'a self,
        image: &'a str,
        auth: Option<AuthConfig>,
        sandbox: Option<PullSandboxConfig>,
    ) -> BoxFuture<'a, CriResult<String>>;

    /// Images the runtime holds; with `filter`, only those matching that reference.
    fn list_images<'a>(
        &'a self,
        filter: Option<&'a str>,
    ) -> BoxFuture<'a, CriResult<Vec<ImageInfo>>>;

    /// One image by reference or ID; `None` when the runtime does not have it.
    fn image_status<'a>(&'a self, image: &'a str) -> BoxFuture<'a, CriResult<Option<ImageInfo>>>;

    /// Containers matching `filter`, sorted by ID.
    fn list_containers<'a>(
        &'a self,
        filter: &'a ContainerFilter,
    ) -> BoxFuture<'a, CriResult<Vec<Container>>>;

    /// Status of one container; [`CriError::NotFound`] if it does not exist.
    fn container_status<'a>(&'a self, id: &'a str) -> BoxFuture<'a, CriResult<ContainerStatus>>;

    /// Stops a container: SIGTERM, then SIGKILL after `timeout_secs` (the grace period).
    /// Stopping an exited container succeeds.
    fn stop_container<'a>(&'a self, id: &'a str, timeout_secs: i64)
    -> BoxFuture<'a, CriResult<()>>;

    /// Runs `cmd` in a running container and waits at most `timeout` (zero: no limit).
    fn exec_sync<'a>(
        &'a self,
        id: &'a str,
        cmd: Vec<String>,
        timeout: Duration,
    ) -> BoxFuture<'a, CriResult<ExecSyncResult>>;
}
