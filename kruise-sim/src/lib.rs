//! # kruise-sim
//!
//! An in-process, in-memory Kubernetes API server that real clients (`kubectl`, kube-rs)
//! talk to unchanged, over HTTPS (self-signed CA, bearer token) or plain HTTP on loopback.
//! The real kube-apiserver is the specification: status codes, `Status` error bodies,
//! resourceVersion and watch semantics follow it.
//!
//! Rooms:
//! - [`store`]: the versioned object store and watch cache (one global resourceVersion).
//! - [`cluster`]: API semantics over the store (metadata, generation, preconditions,
//!   finalizers, patches, subresources, CRD registration, namespaces).
//! - [`resources`]: what is served, as data (built-in kinds and CRD-defined ones).
//! - [`builtin_conversion`]: built-ins stored as another group's (`events.k8s.io` Events are
//!   core Events, one object through both APIs).
//! - [`schema`]: structural schemas of CRDs (pruning, defaults, validation).
//! - `http`: routing, content negotiation (`Table`, `PartialObjectMetadata`), watch streams.
//! - `discovery`: discovery and the OpenAPI v3 documents kubectl consults.
//! - `exec`: `pods/exec` over WebSocket (`kubectl exec`), run in a simulated container's shell.
//! - [`openapi`]: their component schemas (built-ins from k8s-openapi, CRDs' own), for
//!   `kubectl explain`.
//! - [`server`]: TLS, listeners, the kubeconfig and the [`ServerHandle`].
//! - [`nodes`]: simulated nodes, scheduler, kubelets and a fake container runtime, talking
//!   to any API server through kube-rs (kwok-style).
//!
//! ```no_run
//! # async fn demo() -> Result<(), kruise_sim::SimError> {
//! let server = kruise_sim::Server::start(kruise_sim::Config::default()).await?;
//! server.write_kubeconfig(std::path::Path::new("/tmp/kubeconfig"))?;
//! # Ok(()) }
//! ```

pub mod admission;
mod admitted;
mod batch_validation;
pub mod builtin_conversion;
pub mod cluster;
#[cfg(feature = "controllers")]
pub mod controllers;
pub mod conversion;
pub mod crd;
pub mod defaults;
mod discovery;
mod endpointslice_validation;
pub mod error;
mod event_validation;
mod exec;
pub mod faults;
pub mod gc;
mod go_json;
mod http;
mod ingress_validation;
pub mod jsonpath;
mod managed;
mod match_conditions;
mod meta_validation;
pub mod nodes;
pub mod openapi;
mod pod_diff;
mod pod_validation;
mod protobuf;
mod rbac;
mod resize;
pub mod resources;
pub mod schema;
pub mod selector;
pub mod server;
mod service_accounts;
mod service_ips;
pub mod store;
pub mod table;
mod tokens;
mod util;
mod webhook_validation;

pub use cluster::Cluster;
pub use error::{ApiError, SimError};
pub use server::{Config, Server, ServerHandle};
