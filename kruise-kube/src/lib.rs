//! # kruise-kube
//!
//! The runtime that connects kruise-core's pure planners to a Kubernetes cluster through
//! kube-rs. Planners decide; this crate reads the cluster into snapshots, executes the planned
//! actions, and keeps the bookkeeping a controller needs between reconciles.
//!
//! Rooms:
//! - [`queue`]: a work queue with per-key exponential backoff (client-go semantics).
//! - [`metrics`]: Prometheus metrics with controller-runtime's names.
//! - [`health`]: the `/healthz`, `/readyz` and `/metrics` HTTP server.
//! - [`leader`]: leader election on a `coordination.k8s.io` Lease.
//! - [`features`]: `--feature-gates` with upstream's gate names and defaults.
//! - [`cache`]: shared reflectors with indexes, stripped of what controllers never read; one
//!   per kind for the whole manager ([`cache::SharedCaches`]).
//! - [`cached_pod`]: the compact form pods are cached in.
//! - [`expectations`]: per-object expectations shared between reconciles.
//! - [`applier`]: writes gated on leadership, classified failures, Events.
//! - [`controller`]: the controller framework: registrations, the registry, work queues and
//!   workers, waiting for CRDs.
//! - [`workload`]: the one controller every workload kind runs on (adoption, snapshot, plan,
//!   actions, status).
//! - [`cloneset`]: the CloneSet controller.
//! - [`statefulset`]: the Advanced StatefulSet controller.
//! - [`pub_budget`]: PodUnavailableBudget: its controller, and the pod webhooks' checks and
//!   reservations.
//! - [`scale`]: a workload's replicas and selector through its scale subresource.
//! - [`workloadspread`]: WorkloadSpread: its controller, and the pod webhooks' subset
//!   reservations.
//! - [`image_pull`]: the NodeImage, ImagePullJob and ImageListPullJob controllers.
//! - [`crr`]: the ContainerRecreateRequest controller.
//! - [`manager`]: runs every registered controller with leadership, metrics and shutdown.
//! - [`runtime`]: the tokio runtime kruise-manager runs on, its threads' heaps warmed at start.
//! - [`daemon`]: kruise-daemon's per-node workers (containerrecreate, imagepuller,
//!   containermeta) over a [`kruise_cri::ContainerRuntime`].

pub mod admission;
pub mod advancedcronjob;
pub mod applier;
pub mod broadcastjob;
pub mod cache;
pub mod cached_pod;
pub mod cached_revision;
pub mod client;
pub mod cloneset;
pub mod configuration;
pub mod controller;
pub mod crr;
pub mod daemon;
pub mod daemonset;
pub mod enhanced_liveness;
pub mod ephemeraljob;
pub mod expectations;
pub mod features;
pub mod health;
pub mod image_pull;
pub mod launch_priority;
pub mod leader;
pub mod manager;
pub mod metrics;
pub mod persistentpodstate;
pub mod pod_controller;
pub mod podprobe;
pub mod podreadiness;
pub mod pub_budget;
pub mod queue;
pub mod resourcedistribution;
pub mod rollouts;
pub mod runtime;
pub mod scale;
pub mod sidecar_terminator;
pub mod sidecarset;
pub mod statefulset;
pub mod uninstall;
pub mod uniteddeployment;
pub mod webhook;
pub mod workload;
pub mod workloadspread;
