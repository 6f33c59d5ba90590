//! The CRI v1 client over a unix socket.

use std::future::Future;
use std::path::{Path, PathBuf};
use std::time::Duration;

use crate::proto as pb;
use crate::proto::image_service_client::ImageServiceClient;
use crate::proto::runtime_service_client::RuntimeServiceClient;
use hyper_util::rt::TokioIo;
use tokio::net::UnixStream;
use tonic::transport::{Channel, Endpoint, Uri};

use crate::convert;
use crate::detect::RuntimeEndpoint;
use crate::error::{CriError, ErrorKind};
use crate::runtime::{BoxFuture, ContainerRuntime, CriResult};
use crate::types::{
    AuthConfig, Container, ContainerFilter, ContainerStatus, ExecSyncResult, ImageInfo,
    PullSandboxConfig, VersionInfo,
};

/// Deadline of a call other than a pull, as the kubelet's `--runtime-request-timeout`.
/// Stop and exec add their own timeout to it.
pub const DEFAULT_REQUEST_TIMEOUT: Duration = Duration::from_secs(120);

/// Annotation every pull's sandbox config carries (upstream `pullingImageSandboxConfigAnno`):
/// some runtimes dereference the sandbox config and fail on a missing one.
pub const PULLING_IMAGE_BY_ANNOTATION: &str = "apps.kruise.io/pulling-image-by";

/// Largest message the client accepts, as upstream's `maxMsgSize` (ListImages on a big node).
const MAX_MESSAGE_SIZE: usize = 16 * 1024 * 1024;

/// Kubelet runtime API version sent with `Version` (upstream `kubeRuntimeAPIVersion`).
const KUBE_RUNTIME_API_VERSION: &str = "0.1.0";

/// A CRI v1 client: RuntimeService and ImageService over unix sockets. Cheap to clone (the
/// channels are shared); reconnects by itself when the runtime restarts.
#[derive(Clone, Debug)]
pub struct CriClient {
    runtime: RuntimeServiceClient<Channel>,
    image: ImageServiceClient<Channel>,
    socket: PathBuf,
    request_timeout: Duration,
}

async fn channel(path: &Path) -> CriResult<Channel> {
    let target = path.to_path_buf();
    // The URI is not used to connect: the connector dials the socket.
    Endpoint::from_static("http://localhost")
        .connect_timeout(Duration::from_secs(5))
        .connect_with_connector(tower::service_fn(move |_: Uri| {
            let target = target.clone();
            async move { UnixStream::connect(target).await.map(TokioIo::new) }
        }))
        .await
        .map_err(|e| CriError::Connect {
            endpoint: path.display().to_string(),
            message: crate::error_chain(&e),
        })
}

impl CriClient {
    /// Connects to a runtime that serves both services on one socket (containerd, CRI-O).
    pub async fn connect(socket: impl AsRef<Path>) -> CriResult<Self> {
        Self::connect_with(socket.as_ref(), None).await
    }

    /// Connects to a runtime, with the image service on its own socket if given.
    pub async fn connect_with(
        runtime_socket: &Path,
        image_socket: Option<&Path>,
    ) -> CriResult<Self> {
        let runtime_channel = channel(runtime_socket).await?;
        let image_channel = match image_socket {
            Some(p) if p != runtime_socket => channel(p).await?,
            _ => runtime_channel.clone(),
        };
        Ok(CriClient {
            runtime: RuntimeServiceClient::new(runtime_channel)
                .max_decoding_message_size(MAX_MESSAGE_SIZE),
            image: ImageServiceClient::new(image_channel)
                .max_decoding_message_size(MAX_MESSAGE_SIZE),
            socket: runtime_socket.to_path_buf(),
            request_timeout: DEFAULT_REQUEST_TIMEOUT,
        })
    }

    /// The first candidate (from [`detect_runtime`](crate::detect_runtime)) that connects and
    /// answers `ListImages` and `Version`, as upstream's factory picks one; with its version.
    /// Fails with the last candidate's error.
    pub async fn connect_first(
        candidates: &[RuntimeEndpoint],
    ) -> CriResult<(Self, RuntimeEndpoint, VersionInfo)> {
        let mut last =
            CriError::Connect { endpoint: String::new(), message: "no candidate runtime".into() };
        for candidate in candidates {
            let attempt = async {
                let client = Self::connect(&candidate.socket).await?;
                client.list_images(None).await?;
                let version = client.version().await?;
                Ok::<_, CriError>((client, version))
            };
            match attempt.await {
                Ok((client, version)) => return Ok((client, candidate.clone(), version)),
                Err(e) => last = e,
            }
        }
        Err(last)
    }

    /// Sets the deadline of calls other than pulls (default [`DEFAULT_REQUEST_TIMEOUT`]).
    pub fn with_request_timeout(mut self, timeout: Duration) -> Self {
        self.request_timeout = timeout;
        self
    }

    /// The runtime socket this client talks to.
    pub fn socket(&self) -> &Path {
        &self.socket
    }

    /// The raw CRI RuntimeService client, for calls outside [`ContainerRuntime`].
    pub fn runtime_client(&self) -> RuntimeServiceClient<Channel> {
        self.runtime.clone()
    }

    /// The raw CRI ImageService client, for calls outside [`ContainerRuntime`].
    pub fn image_client(&self) -> ImageServiceClient<Channel> {
        self.image.clone()
    }

    /// Runs one call with a deadline (`None`: none), sent along as `grpc-timeout` too.
    async fn call<T, F, Fut>(
        method: &'static str,
        subject: Option<(&'static str, &str)>,
        deadline: Option<Duration>,
        request: T,
        f: F,
    ) -> CriResult<Fut::Output>
    where
        F: FnOnce(tonic::Request<T>) -> Fut,
        Fut: Future,
        Fut::Output: Sized,
    {
        let mut req = tonic::Request::new(request);
        if let Some(d) = deadline {
            req.set_timeout(d);
        }
        let fut = f(req);
        match deadline {
            Some(d) => tokio::time::timeout(d, fut).await.map_err(|_| CriError::Rpc {
                method,
                kind: ErrorKind::DeadlineExceeded,
                message: format!(
                    "no answer within {d:?}{}",
                    subject.map(|(w, id)| format!(" for {w} {id}")).unwrap_or_default()
                ),
            }),
            None => Ok(fut.await),
        }
    }

    async fn do_version(&self) -> CriResult<VersionInfo> {
        let mut c = self.runtime.clone();
        let req = pb::VersionRequest { version: KUBE_RUNTIME_API_VERSION.into() };
        let resp = Self::call("Version", None, Some(self.request_timeout), req, |r| async move {
            c.version(r).await
        })
        .await?
        .map_err(|s| convert::error_from_status("Version", None, s))?;
        Ok(convert::version_from_pb(resp.into_inner()))
    }

    async fn do_pull(
        &self,
        image: &str,
        auth: Option<AuthConfig>,
        sandbox: Option<PullSandboxConfig>,
    ) -> CriResult<String> {
        let mut c = self.image.clone();
        let sandbox = sandbox.unwrap_or_default();
        let mut annotations = convert::to_hash(&sandbox.annotations);
        annotations.insert(PULLING_IMAGE_BY_ANNOTATION.into(), "kruise-daemon".into());
        let req = pb::PullImageRequest {
            image: Some(convert::image_spec(image)),
            auth: auth.map(|a| pb::AuthConfig {
                username: a.username,
                password: a.password,
                auth: a.auth,
                server_address: a.server_address,
                identity_token: a.identity_token,
                registry_token: a.registry_token,
            }),
            sandbox_config: Some(pb::PodSandboxConfig {
                labels: convert::to_hash(&sandbox.labels),
                annotations,
                ..pb::PodSandboxConfig::default()
            }),
        };
        // Pulls take as long as they take: the caller (imagepuller) owns their deadline.
        let resp =
            Self::call("PullImage", None, None, req, |r| async move { c.pull_image(r).await })
                .await?
                .map_err(|s| CriError::PullImage {
                    image: image.to_string(),
                    kind: convert::kind_from_code(s.code()),
                    message: s.message().to_string(),
                })?;
        Ok(resp.into_inner().image_ref)
    }

    async fn do_list_images(&self, filter: Option<&str>) -> CriResult<Vec<ImageInfo>> {
        let mut c = self.image.clone();
        let req = pb::ListImagesRequest {
            filter: filter
                .filter(|f| !f.is_empty())
                .map(|f| pb::ImageFilter { image: Some(convert::image_spec(f)) }),
        };
        let resp =
            Self::call("ListImages", None, Some(self.request_timeout), req, |r| async move {
                c.list_images(r).await
            })
            .await?
            .map_err(|s| convert::error_from_status("ListImages", None, s))?;
        Ok(resp.into_inner().images.into_iter().map(convert::image_from_pb).collect())
    }

    async fn do_image_status(&self, image: &str) -> CriResult<Option<ImageInfo>> {
        let mut c = self.image.clone();
        let req =
            pb::ImageStatusRequest { image: Some(convert::image_spec(image)), verbose: false };
        let resp =
            Self::call("ImageStatus", None, Some(self.request_timeout), req, |r| async move {
                c.image_status(r).await
            })
            .await?;
        match resp {
            Ok(r) => Ok(r.into_inner().image.map(convert::image_from_pb)),
            // The CRI answers an empty image for a missing one; some runtimes say NotFound.
            Err(s) if s.code() == tonic::Code::NotFound => Ok(None),
            Err(s) => Err(convert::error_from_status("ImageStatus", None, s)),
        }
    }

    async fn do_list_containers(&self, filter: &ContainerFilter) -> CriResult<Vec<Container>> {
        let mut c = self.runtime.clone();
        let req = pb::ListContainersRequest { filter: Some(convert::filter_to_pb(filter)) };
        let resp =
            Self::call("ListContainers", None, Some(self.request_timeout), req, |r| async move {
                c.list_containers(r).await
            })
            .await?
            .map_err(|s| convert::error_from_status("ListContainers", None, s))?;
        let mut list: Vec<Container> =
            resp.into_inner().containers.into_iter().map(convert::container_from_pb).collect();
        list.sort_by(|a, b| a.id.cmp(&b.id));
        Ok(list)
    }

    async fn do_container_status(&self, id: &str) -> CriResult<ContainerStatus> {
        let mut c = self.runtime.clone();
        let req = pb::ContainerStatusRequest { container_id: id.to_string(), verbose: false };
        let subject = Some(("container", id));
        let resp = Self::call(
            "ContainerStatus",
            subject,
            Some(self.request_timeout),
            req,
            |r| async move { c.container_status(r).await },
        )
        .await?
        .map_err(|s| convert::error_from_status("ContainerStatus", subject, s))?;
        resp.into_inner().status.map(convert::status_from_pb).ok_or(CriError::InvalidResponse {
            method: "ContainerStatus",
            message: format!("no status for container {id}"),
        })
    }

    async fn do_stop(&self, id: &str, timeout_secs: i64) -> CriResult<()> {
        let mut c = self.runtime.clone();
        let req = pb::StopContainerRequest { container_id: id.to_string(), timeout: timeout_secs };
        let grace = Duration::from_secs(u64::try_from(timeout_secs).unwrap_or(0));
        let subject = Some(("container", id));
        Self::call(
            "StopContainer",
            subject,
            Some(self.request_timeout + grace),
            req,
            |r| async move { c.stop_container(r).await },
        )
        .await?
        .map_err(|s| convert::error_from_status("StopContainer", subject, s))?;
        Ok(())
    }

    async fn do_exec(
        &self,
        id: &str,
        cmd: Vec<String>,
        timeout: Duration,
    ) -> CriResult<ExecSyncResult> {
        let mut c = self.runtime.clone();
        // The CRI counts whole seconds; round up so a sub-second timeout is not "none".
        let secs = timeout.as_secs() + u64::from(timeout.subsec_nanos() > 0);
        let req = pb::ExecSyncRequest {
            container_id: id.to_string(),
            cmd,
            timeout: i64::try_from(secs).unwrap_or(i64::MAX),
        };
        let subject = Some(("container", id));
        let resp = Self::call(
            "ExecSync",
            subject,
            Some(self.request_timeout + timeout),
            req,
            |r| async move { c.exec_sync(r).await },
        )
        .await?
        .map_err(|s| convert::error_from_status("ExecSync", subject, s))?
        .into_inner();
        Ok(ExecSyncResult { stdout: resp.stdout, stderr: resp.stderr, exit_code: resp.exit_code })
    }
}

impl ContainerRuntime for CriClient {
    fn version(&self) -> BoxFuture<'_, CriResult<VersionInfo>> {
        Box::pin(self.do_version())
    }

    fn pull_image<'a>(
        &'a self,
        image: &'a str,
        auth: Option<AuthConfig>,
        sandbox: Option<PullSandboxConfig>,
    ) -> BoxFuture<'a, CriResult<String>> {
        Box::pin(self.do_pull(image, auth, sandbox))
    }

    fn list_images<'a>(
        &'a self,
        filter: Option<&'a str>,
    ) -> BoxFuture<'a, CriResult<Vec<ImageInfo>>> {
        Box::pin(self.do_list_images(filter))
    }

    fn image_status<'a>(&'a self, image: &'a str) -> BoxFuture<'a, CriResult<Option<ImageInfo>>> {
        Box::pin(self.do_image_status(image))
    }

    fn list_containers<'a>(
        &'a self,
        filter: &'a ContainerFilter,
    ) -> BoxFuture<'a, CriResult<Vec<Container>>> {
        Box::pin(self.do_list_containers(filter))
    }

    fn container_status<'a>(&'a self, id: &'a str) -> BoxFuture<'a, CriResult<ContainerStatus>> {
        Box::pin(self.do_container_status(id))
    }

    fn stop_container<'a>(
        &'a self,
        id: &'a str,
        timeout_secs: i64,
    ) -> BoxFuture<'a, CriResult<()>> {
        Box::pin(self.do_stop(id, timeout_secs))
    }

    fn exec_sync<'a>(
        &'a self,
        id: &'a str,
        cmd: Vec<String>,
        timeout: Duration,
    ) -> BoxFuture<'a, CriResult<ExecSyncResult>> {
        Box::pin(self.do_exec(id, cmd, timeout))
    }
}
