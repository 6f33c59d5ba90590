//! The container runtime side of kruise-rs: what kruise-daemon calls on a node, and what
//! kruise-sim's simulated nodes run.
//!
//! - [`ContainerRuntime`]: the CRI calls the daemon's features make (imagepuller,
//!   containerrecreate, containermeta), object-safe so a daemon holds an
//!   `Arc<dyn ContainerRuntime>`. Results are the crate's own small types ([`types`]), not the
//!   protobuf messages.
//! - [`CriClient`] (feature `grpc`, on by default): CRI v1 over a unix socket with tonic, both
//!   RuntimeService and ImageService, on one socket or two. [`CriClient::runtime_client`] and
//!   [`CriClient::image_client`] give the raw CRI clients for calls outside the trait.
//! - [`detect_runtime`]: which socket to use, as upstream's `criruntime/factory_unix.go`.
//! - [`FakeRuntime`]: an in-memory runtime with fault injection and a kubelet's calls; and
//!   [`fake::serve`] (feature `grpc`), which serves it as a CRI socket, so the client is tested
//!   over real gRPC without a runtime.
//!
//! Without the `grpc` feature the crate has no tonic, prost or protoc in its build: enough for
//! kruise-sim, which only needs the fake.

#[cfg(feature = "grpc")]
mod client;
#[cfg(feature = "grpc")]
mod convert;
pub mod detect;
mod error;
pub mod fake;
mod runtime;
pub mod types;

#[cfg(feature = "grpc")]
pub use client::{CriClient, DEFAULT_REQUEST_TIMEOUT, PULLING_IMAGE_BY_ANNOTATION};
pub use detect::{DetectError, HOST_VAR_RUN, RuntimeEndpoint, RuntimeKind, detect_runtime};
pub use error::{CriError, ErrorKind, error_chain};
pub use fake::FakeRuntime;
/// The CRI v1 protobuf messages, clients and server traits, generated from `proto/api.proto`
/// (package `runtime.v1`) and checked in, so that a build needs no `protoc`.
#[cfg(feature = "grpc")]
#[allow(missing_docs, clippy::all, clippy::pedantic, rustdoc::all)]
pub mod proto {
    include!("proto/runtime.v1.rs");
}
pub use runtime::{BoxFuture, ContainerRuntime, CriResult};
pub use types::{
    AuthConfig, Container, ContainerFilter, ContainerState, ContainerStatus, ExecSyncResult,
    ImageInfo, PullSandboxConfig, VersionInfo,
};
