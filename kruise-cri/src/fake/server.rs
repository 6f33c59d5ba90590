//! A CRI v1 gRPC server over a unix socket, backed by a [`FakeRuntime`].
//!
//! Serves what a kubelet and kruise-daemon call: Version, Status, the sandbox and container
//! lifecycle, ListContainers, ContainerStatus, ExecSync, and the image calls. The other RPCs
//! (streaming exec/attach, stats, metrics, events, checkpoint) answer `UNIMPLEMENTED`.

use std::path::{Path, PathBuf};

use crate::proto as pb;
use crate::proto::image_service_server::{ImageService, ImageServiceServer};
use crate::proto::runtime_service_server::{RuntimeService, RuntimeServiceServer};
use tokio::net::UnixListener;
use tokio::sync::oneshot;
use tokio::task::JoinHandle;
use tokio_stream::wrappers::UnixListenerStream;
use tonic::{Request, Response, Status};

use super::FakeRuntime;
use crate::convert;
use crate::runtime::ContainerRuntime;

/// A running fake CRI server. Dropping it stops the server; [`shutdown`](Self::shutdown) waits
/// for it to finish.
#[derive(Debug)]
pub struct FakeServer {
    path: PathBuf,
    stop: Option<oneshot::Sender<()>>,
    task: Option<JoinHandle<Result<(), tonic::transport::Error>>>,
}

impl FakeServer {
    /// The socket it listens on.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Stops accepting, lets calls in flight finish, and removes the socket file.
    pub async fn shutdown(mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        if let Some(task) = self.task.take() {
            let _ = task.await;
        }
        let _ = std::fs::remove_file(&self.path);
    }
}

impl Drop for FakeServer {
    fn drop(&mut self) {
        if let Some(task) = self.task.take() {
            task.abort();
            let _ = std::fs::remove_file(&self.path);
        }
    }
}

/// Serves `runtime` as a CRI v1 socket at `path` (a stale socket file there is replaced).
/// Must be called within a tokio runtime.
pub async fn serve(runtime: FakeRuntime, path: impl AsRef<Path>) -> std::io::Result<FakeServer> {
    let path = path.as_ref().to_path_buf();
    match std::fs::remove_file(&path) {
        Err(e) if e.kind() != std::io::ErrorKind::NotFound => return Err(e),
        _ => {}
    }
    let listener = UnixListener::bind(&path)?;
    let (stop, stopped) = oneshot::channel::<()>();
    let service = Service { rt: runtime };
    let task = tokio::spawn(
        tonic::transport::Server::builder()
            .add_service(RuntimeServiceServer::new(service.clone()))
            .add_service(ImageServiceServer::new(service))
            .serve_with_incoming_shutdown(UnixListenerStream::new(listener), async {
                let _ = stopped.await;
            }),
    );
    Ok(FakeServer { path, stop: Some(stop), task: Some(task) })
}

#[derive(Clone)]
struct Service {
    rt: FakeRuntime,
}

type Rpc<T> = Result<Response<T>, Status>;

fn ok<T>(t: T) -> Rpc<T> {
    Ok(Response::new(t))
}

fn unimplemented<T>(method: &str) -> Rpc<T> {
    Err(Status::unimplemented(format!("{method} is not implemented by the fake runtime")))
}

fn required<T>(field: Option<T>, what: &str) -> Result<T, Status> {
    field.ok_or_else(|| Status::invalid_argument(format!("{what} is required")))
}

#[tonic::async_trait]
impl RuntimeService for Service {
    async fn version(&self, _: Request<pb::VersionRequest>) -> Rpc<pb::VersionResponse> {
        let v = self.rt.version().await.map_err(convert::status_from_error)?;
        ok(convert::version_to_pb(v))
    }

    async fn run_pod_sandbox(
        &self,
        request: Request<pb::RunPodSandboxRequest>,
    ) -> Rpc<pb::RunPodSandboxResponse> {
        let config = required(request.into_inner().config, "config")?;
        let id = self.rt.run_pod_sandbox(convert::sandbox_config_from_pb(config));
        ok(pb::RunPodSandboxResponse { pod_sandbox_id: id })
    }

    async fn stop_pod_sandbox(
        &self,
        request: Request<pb::StopPodSandboxRequest>,
    ) -> Rpc<pb::StopPodSandboxResponse> {
        let id = request.into_inner().pod_sandbox_id;
        match self.rt.stop_pod_sandbox(&id) {
            // The CRI says stopping a missing sandbox succeeds.
            Err(e) if !e.is_not_found() => Err(convert::status_from_error(e)),
            _ => ok(pb::StopPodSandboxResponse {}),
        }
    }

    async fn remove_pod_sandbox(
        &self,
        request: Request<pb::RemovePodSandboxRequest>,
    ) -> Rpc<pb::RemovePodSandboxResponse> {
        self.rt.remove_pod_sandbox(&request.into_inner().pod_sandbox_id);
        ok(pb::RemovePodSandboxResponse {})
    }

    async fn pod_sandbox_status(
        &self,
        request: Request<pb::PodSandboxStatusRequest>,
    ) -> Rpc<pb::PodSandboxStatusResponse> {
        let id = request.into_inner().pod_sandbox_id;
        let sandbox = self
            .rt
            .pod_sandbox(&id)
            .ok_or_else(|| Status::not_found(format!("pod sandbox {id:?} not found")))?;
        ok(pb::PodSandboxStatusResponse {
            status: Some(convert::sandbox_status_to_pb(sandbox)),
            ..pb::PodSandboxStatusResponse::default()
        })
    }

    async fn list_pod_sandbox(
        &self,
        request: Request<pb::ListPodSandboxRequest>,
    ) -> Rpc<pb::ListPodSandboxResponse> {
        let filter = request.into_inner().filter.unwrap_or_default();
        let items = self
            .rt
            .list_pod_sandboxes()
            .into_iter()
            .filter(|s| filter.id.is_empty() || s.id == filter.id)
            .filter(|s| {
                filter.state.is_none_or(|st| st.state == convert::sandbox_state_to_pb(s.state))
            })
            .filter(|s| {
                filter.label_selector.iter().all(|(k, v)| s.config.labels.get(k) == Some(v))
            })
            .map(convert::sandbox_to_pb)
            .collect();
        ok(pb::ListPodSandboxResponse { items })
    }

    async fn create_container(
        &self,
        request: Request<pb::CreateContainerRequest>,
    ) -> Rpc<pb::CreateContainerResponse> {
        let req = request.into_inner();
        let config = required(req.config, "config")?;
        let id = self
            .rt
            .create_container(&req.pod_sandbox_id, convert::container_config_from_pb(config))
            .map_err(convert::status_from_error)?;
        ok(pb::CreateContainerResponse { container_id: id })
    }

    async fn start_container(
        &self,
        request: Request<pb::StartContainerRequest>,
    ) -> Rpc<pb::StartContainerResponse> {
        self.rt
            .start_container(&request.into_inner().container_id)
            .map_err(convert::status_from_error)?;
        ok(pb::StartContainerResponse {})
    }

    async fn stop_container(
        &self,
        request: Request<pb::StopContainerRequest>,
    ) -> Rpc<pb::StopContainerResponse> {
        let req = request.into_inner();
        ContainerRuntime::stop_container(&self.rt, &req.container_id, req.timeout)
            .await
            .map_err(convert::status_from_error)?;
        ok(pb::StopContainerResponse {})
    }

    async fn remove_container(
        &self,
        request: Request<pb::RemoveContainerRequest>,
    ) -> Rpc<pb::RemoveContainerResponse> {
        self.rt.remove_container(&request.into_inner().container_id);
        ok(pb::RemoveContainerResponse {})
    }

    async fn list_containers(
        &self,
        request: Request<pb::ListContainersRequest>,
    ) -> Rpc<pb::ListContainersResponse> {
        let filter = convert::filter_from_pb(request.into_inner().filter);
        let list = ContainerRuntime::list_containers(&self.rt, &filter)
            .await
            .map_err(convert::status_from_error)?;
        ok(pb::ListContainersResponse {
            containers: list.into_iter().map(convert::container_to_pb).collect(),
        })
    }

    async fn container_status(
        &self,
        request: Request<pb::ContainerStatusRequest>,
    ) -> Rpc<pb::ContainerStatusResponse> {
        let id = request.into_inner().container_id;
        let status = ContainerRuntime::container_status(&self.rt, &id)
            .await
            .map_err(convert::status_from_error)?;
        ok(pb::ContainerStatusResponse {
            status: Some(convert::status_to_pb(status)),
            ..pb::ContainerStatusResponse::default()
        })
    }

    async fn update_container_resources(
        &self,
        _: Request<pb::UpdateContainerResourcesRequest>,
    ) -> Rpc<pb::UpdateContainerResourcesResponse> {
        unimplemented("UpdateContainerResources")
    }

    async fn reopen_container_log(
        &self,
        _: Request<pb::ReopenContainerLogRequest>,
    ) -> Rpc<pb::ReopenContainerLogResponse> {
        unimplemented("ReopenContainerLog")
    }

    async fn exec_sync(&self, request: Request<pb::ExecSyncRequest>) -> Rpc<pb::ExecSyncResponse> {
        let req = request.into_inner();
        // The command runs on a blocking thread, as a real runtime runs it outside its gRPC
        // server: a handler that takes long (a test's, sleeping) then never holds up the
        // runtime the server shares, nor the timers of a client on it. The fake has no
        // deadline of its own (`req.timeout` is not enforced).
        let rt = self.rt.clone();
        let r = tokio::task::spawn_blocking(move || rt.exec(&req.container_id, &req.cmd))
            .await
            .map_err(|e| Status::internal(format!("the exec handler failed: {e}")))?
            .map_err(convert::status_from_error)?;
        ok(pb::ExecSyncResponse { stdout: r.stdout, stderr: r.stderr, exit_code: r.exit_code })
    }

    async fn exec(&self, _: Request<pb::ExecRequest>) -> Rpc<pb::ExecResponse> {
        unimplemented("Exec")
    }

    async fn attach(&self, _: Request<pb::AttachRequest>) -> Rpc<pb::AttachResponse> {
        unimplemented("Attach")
    }

    async fn port_forward(
        &self,
        _: Request<pb::PortForwardRequest>,
    ) -> Rpc<pb::PortForwardResponse> {
        unimplemented("PortForward")
    }

    async fn container_stats(
        &self,
        _: Request<pb::ContainerStatsRequest>,
    ) -> Rpc<pb::ContainerStatsResponse> {
        unimplemented("ContainerStats")
    }

    async fn list_container_stats(
        &self,
        _: Request<pb::ListContainerStatsRequest>,
    ) -> Rpc<pb::ListContainerStatsResponse> {
        unimplemented("ListContainerStats")
    }

    async fn pod_sandbox_stats(
        &self,
        _: Request<pb::PodSandboxStatsRequest>,
    ) -> Rpc<pb::PodSandboxStatsResponse> {
        unimplemented("PodSandboxStats")
    }

    async fn list_pod_sandbox_stats(
        &self,
        _: Request<pb::ListPodSandboxStatsRequest>,
    ) -> Rpc<pb::ListPodSandboxStatsResponse> {
        unimplemented("ListPodSandboxStats")
    }

    async fn update_runtime_config(
        &self,
        _: Request<pb::UpdateRuntimeConfigRequest>,
    ) -> Rpc<pb::UpdateRuntimeConfigResponse> {
        ok(pb::UpdateRuntimeConfigResponse {})
    }

    async fn status(&self, _: Request<pb::StatusRequest>) -> Rpc<pb::StatusResponse> {
        let condition = |kind: &str| pb::RuntimeCondition {
            r#type: kind.to_string(),
            status: true,
            ..pb::RuntimeCondition::default()
        };
        ok(pb::StatusResponse {
            status: Some(pb::RuntimeStatus {
                conditions: vec![condition("RuntimeReady"), condition("NetworkReady")],
            }),
            ..pb::StatusResponse::default()
        })
    }

    async fn checkpoint_container(
        &self,
        _: Request<pb::CheckpointContainerRequest>,
    ) -> Rpc<pb::CheckpointContainerResponse> {
        unimplemented("CheckpointContainer")
    }

    type GetContainerEventsStream = tokio_stream::Empty<Result<pb::ContainerEventResponse, Status>>;

    async fn get_container_events(
        &self,
        _: Request<pb::GetEventsRequest>,
    ) -> Rpc<Self::GetContainerEventsStream> {
        unimplemented("GetContainerEvents")
    }

    async fn list_metric_descriptors(
        &self,
        _: Request<pb::ListMetricDescriptorsRequest>,
    ) -> Rpc<pb::ListMetricDescriptorsResponse> {
        unimplemented("ListMetricDescriptors")
    }

    async fn list_pod_sandbox_metrics(
        &self,
        _: Request<pb::ListPodSandboxMetricsRequest>,
    ) -> Rpc<pb::ListPodSandboxMetricsResponse> {
        unimplemented("ListPodSandboxMetrics")
    }

    async fn runtime_config(
        &self,
        _: Request<pb::RuntimeConfigRequest>,
    ) -> Rpc<pb::RuntimeConfigResponse> {
        unimplemented("RuntimeConfig")
    }
}

#[tonic::async_trait]
impl ImageService for Service {
    async fn list_images(
        &self,
        request: Request<pb::ListImagesRequest>,
    ) -> Rpc<pb::ListImagesResponse> {
        let filter = request.into_inner().filter.and_then(|f| f.image).map(|s| s.image);
        let images = ContainerRuntime::list_images(&self.rt, filter.as_deref())
            .await
            .map_err(convert::status_from_error)?;
        ok(pb::ListImagesResponse {
            images: images.into_iter().map(convert::image_to_pb).collect(),
        })
    }

    async fn image_status(
        &self,
        request: Request<pb::ImageStatusRequest>,
    ) -> Rpc<pb::ImageStatusResponse> {
        let image = required(request.into_inner().image, "image")?.image;
        let found = ContainerRuntime::image_status(&self.rt, &image)
            .await
            .map_err(convert::status_from_error)?;
        ok(pb::ImageStatusResponse {
            image: found.map(convert::image_to_pb),
            ..pb::ImageStatusResponse::default()
        })
    }

    async fn pull_image(
        &self,
        request: Request<pb::PullImageRequest>,
    ) -> Rpc<pb::PullImageResponse> {
        let req = request.into_inner();
        let image = required(req.image, "image")?.image;
        let auth = req.auth.map(|a| crate::types::AuthConfig {
            username: a.username,
            password: a.password,
            auth: a.auth,
            server_address: a.server_address,
            identity_token: a.identity_token,
            registry_token: a.registry_token,
        });
        let sandbox = req.sandbox_config.map(|s| crate::types::PullSandboxConfig {
            labels: convert::to_btree(s.labels),
            annotations: convert::to_btree(s.annotations),
        });
        let image_ref = ContainerRuntime::pull_image(&self.rt, &image, auth, sandbox)
            .await
            .map_err(convert::status_from_error)?;
        ok(pb::PullImageResponse { image_ref })
    }

    async fn remove_image(
        &self,
        request: Request<pb::RemoveImageRequest>,
    ) -> Rpc<pb::RemoveImageResponse> {
        let image = required(request.into_inner().image, "image")?.image;
        self.rt.remove_image(&image);
        ok(pb::RemoveImageResponse {})
    }

    async fn image_fs_info(
        &self,
        _: Request<pb::ImageFsInfoRequest>,
    ) -> Rpc<pb::ImageFsInfoResponse> {
        unimplemented("ImageFsInfo")
    }
}
