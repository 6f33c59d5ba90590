//! kruise-daemon: the per-node workers that run kruise-core's node-side planners against the
//! container runtime of their node (upstream `pkg/daemon`).
//!
//! - [`containerrecreate`]: ContainerRecreateRequests of the node's pods (labels
//!   `crr.apps.kruise.io/node-name=<node>,crr.apps.kruise.io/active=true`): one request per
//!   pod at a time, [`kruise_core::containerrecreate::plan_recreate`], the per-container states
//!   written before any stop, stops with the grace period.
//! - [`imagepuller`]: the node's NodeImage (`metadata.name=<node>`):
//!   [`kruise_core::imagepull::plan_pulls`], pulls with a worker limit and a deadline each,
//!   credentials from the referenced pull secrets, the NodeImage status and Events.
//! - [`containermeta`] (gate `DaemonWatchingPod`): the pod annotation
//!   `apps.kruise.io/runtime-containers-meta` with each container's runtime ID, restart count
//!   and kubelet hash.
//! - [`podprobe`] (gate `PodProbeMarkerGate`): the probes of the node's NodePodProbe
//!   (`metadata.name=<node>`), run with kruise-core's [`kruise_core::podprobe::prober`], their
//!   results written into its status and reported as Events on the pods.
//! - [`credentials`]: `.dockerconfigjson` / `.dockercfg` secrets to CRI credentials.
//!
//! Every watch is restricted to the node, so the daemon's memory grows with its own pods and
//! requests, not with the cluster. [`Daemon::run`] wires them together; the binary
//! (`bins/kruise-daemon`) only parses flags, builds the client and the runtime, and serves
//! `/metrics` and `/healthz`.

pub mod containermeta;
pub mod containerrecreate;
pub mod credentials;
pub mod imagepuller;
pub mod keyring;
pub mod podprobe;

use std::future::Future;
use std::sync::Arc;

use kruise_core::imagepull::PullerLimits;
use kruise_cri::ContainerRuntime;
use kube::runtime::watcher;

use crate::cache::Cache;
use crate::cached_pod::CachedPod;
use crate::features::FeatureGates;
use crate::health::Health;

/// The kubelet's label with a container's pod UID (CRI container labels).
pub const POD_UID_LABEL: &str = kruise_api::well_known::kubernetes::cri::POD_UID;
/// The kubelet's label with a container's name in the pod spec.
pub const CONTAINER_NAME_LABEL: &str = kruise_api::well_known::kubernetes::cri::CONTAINER_NAME;
/// The kubelet's annotation with the hash of a container's spec (hexadecimal).
pub const CONTAINER_HASH_ANNOTATION: &str = kruise_api::well_known::kubernetes::cri::CONTAINER_HASH;

/// Reporter of the containerrecreate worker's Events.
pub const CRR_REPORTER: &str = "kruise-daemon-crr";
/// Reporter of the podprobe worker's Events.
pub const PODPROBE_REPORTER: &str = podprobe::PODPROBE_REPORTER;
/// Reporter of the imagepuller's Events.
pub const IMAGEPULLER_REPORTER: &str = "kruise-daemon-imagepuller";

/// What the daemon runs with.
#[derive(Clone, Debug)]
pub struct DaemonConfig {
    /// The node this daemon serves (`NODE_NAME`).
    pub node_name: String,
    /// `--max-workers-for-pull-image` (`None`: no limit, the flag's -1).
    pub pull_limits: PullerLimits,
    /// The runtime's name as container IDs carry it (`containerd` in `containerd://<id>`),
    /// used when neither the request nor the pod names one.
    pub runtime_type: String,
    /// `--feature-gates`.
    pub feature_gates: FeatureGates,
    /// Requests (pods) handled at once by the containerrecreate worker. A stop holds its
    /// worker for up to the grace period.
    pub crr_workers: usize,
    /// The node's own credentials: the docker keyring and credential provider plugins.
    pub keyring: std::sync::Arc<keyring::NodeKeyring>,
}

impl DaemonConfig {
    /// Defaults for `node_name`: no pull limit, `containerd`, default gates, 4 CRR workers.
    pub fn new(node_name: impl Into<String>) -> Self {
        Self {
            node_name: node_name.into(),
            pull_limits: PullerLimits::default(),
            runtime_type: "containerd".to_owned(),
            feature_gates: FeatureGates::default(),
            crr_workers: 4,
            keyring: std::sync::Arc::default(),
        }
    }
}

/// The daemon's workers on one node.
pub struct Daemon {
    client: kube::Client,
    runtime: Arc<dyn ContainerRuntime>,
    config: DaemonConfig,
}

impl std::fmt::Debug for Daemon {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Daemon").field("config", &self.config).finish_non_exhaustive()
    }
}

impl Daemon {
    /// A daemon for `config.node_name` over `runtime`.
    pub fn new(
        client: kube::Client,
        runtime: Arc<dyn ContainerRuntime>,
        config: DaemonConfig,
    ) -> Self {
        Self { client, runtime, config }
    }

    /// Runs every worker until `shutdown` completes. Readiness checks (`crr-synced`,
    /// `nodeimage-synced`, `pods-synced`) are registered on `health` and turn true once each
    /// watch has loaded its first list.
    pub async fn run(self, health: Health, shutdown: impl Future<Output = ()> + Send) {
        let Daemon { client, runtime, config } = self;
        let watch_pods = config.feature_gates.enabled("DaemonWatchingPod");
        let mut tasks = tokio::task::JoinSet::new();

        let pods = watch_pods.then(|| {
            let pods = node_pods(&client, &config.node_name, &mut tasks);
            track_sync(&health, "pods-synced", &pods, &mut tasks);
            pods
        });

        let crr = containerrecreate::CrrWorker::start(
            client.clone(),
            runtime.clone(),
            &config,
            pods.clone(),
            &mut tasks,
        );
        track_sync(&health, "crr-synced", crr.cache(), &mut tasks);

        let puller =
            imagepuller::ImagePuller::start(client.clone(), runtime.clone(), &config, &mut tasks);
        track_sync(&health, "nodeimage-synced", puller.cache(), &mut tasks);

        let prober = config.feature_gates.enabled("PodProbeMarkerGate").then(|| {
            let prober =
                podprobe::PodProber::start(client.clone(), runtime.clone(), &config, &mut tasks);
            track_sync(&health, "nodepodprobe-synced", prober.cache(), &mut tasks);
            prober
        });

        if let Some(pods) = pods {
            containermeta::ContainerMetaWorker::start(
                client.clone(),
                runtime.clone(),
                &config,
                pods,
                &mut tasks,
            );
        }

        shutdown.await;
        tracing::info!("kruise-daemon shutting down");
        crr.shut_down();
        if let Some(prober) = &prober {
            prober.shut_down();
        }
        tasks.abort_all();
        while tasks.join_next().await.is_some() {}
    }
}

/// The pods bound to `node`, kept current by a field-selected watch.
pub fn node_pods(
    client: &kube::Client,
    node: &str,
    tasks: &mut tokio::task::JoinSet<()>,
) -> Cache<CachedPod> {
    let cache = Cache::<CachedPod>::new();
    let api = kube::Api::<CachedPod>::all(client.clone());
    let config = watcher::Config::default().fields(&format!("spec.nodeName={node}")).any_semantic();
    tasks.spawn(cache.clone().run(api, config, |_| {}));
    cache
}

fn track_sync<K>(
    health: &Health,
    check: &str,
    cache: &Cache<K>,
    tasks: &mut tokio::task::JoinSet<()>,
) where
    K: kube::Resource<DynamicType = ()>
        + Clone
        + serde::de::DeserializeOwned
        + std::fmt::Debug
        + Send
        + Sync
        + 'static,
{
    health.set_ready(check, false);
    let health = health.clone();
    let cache = cache.clone();
    let check = check.to_owned();
    tasks.spawn(async move {
        cache.wait_synced().await;
        health.set_ready(&check, true);
    });
}

/// The HTTP(S) client of the daemon's httpGet actions (lifecycle hooks, probes): `http` and
/// `https` over HTTP/1.1, with the TLS `config`. No redirect is followed.
pub(crate) type ActionClient = hyper_util::client::legacy::Client<
    hyper_rustls::HttpsConnector<hyper_util::client::legacy::connect::HttpConnector>,
    http_body_util::Empty<hyper::body::Bytes>,
>;

/// An [`ActionClient`] with `config`; `keep_alive: false` keeps no idle connection.
pub(crate) fn action_client(config: rustls::ClientConfig, keep_alive: bool) -> ActionClient {
    let connector = hyper_rustls::HttpsConnectorBuilder::new()
        .with_tls_config(config)
        .https_or_http()
        .enable_http1()
        .build();
    let mut builder =
        hyper_util::client::legacy::Client::builder(hyper_util::rt::TokioExecutor::new());
    if !keep_alive {
        builder.pool_max_idle_per_host(0);
    }
    builder.build(connector)
}

/// `containerd://abc` -> (`containerd`, `abc`); an ID without a prefix has an empty type.
pub fn split_container_id(id: &str) -> (&str, &str) {
    id.split_once("://").unwrap_or(("", id))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn splits_container_ids() {
        assert_eq!(split_container_id("containerd://abc"), ("containerd", "abc"));
        assert_eq!(split_container_id("abc"), ("", "abc"));
    }
}
