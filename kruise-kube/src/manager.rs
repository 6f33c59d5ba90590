//! The manager: shared caches, leader election, metrics and health, and every controller,
//! run until shutdown.
//!
//! Caches start at once on every replica (a standby has them warm); controllers run only while
//! this replica holds the lease, and stop the moment it is lost. Writes are also gated on the
//! lease one by one (see [`crate::applier::Applier`]), so a reconcile still in flight when the
//! lease goes cannot write.

use std::future::Future;
use std::net::SocketAddr;
use std::time::Duration;

use k8s_openapi::api::apps::v1::ControllerRevision;
use k8s_openapi::api::core::v1::{Node, PersistentVolumeClaim};
use kruise_api::apps::v1beta1::CloneSet;
use kube::api::PartialObjectMeta;
use kube::runtime::{WatchStreamExt, watcher};
use kube::{Api, Client};
use tokio::sync::watch;

use crate::applier::Applier;
use crate::cache::{Cache, strip_managed_fields};
use crate::cached_pod::CachedPod;
use crate::cloneset::{CONTROLLER_NAME, CloneSetCaches, CloneSetConfig, CloneSetController};
use crate::health::Health;
use crate::leader::{LeaderElectionConfig, LeaderElector, LeaderHandle};
use crate::metrics::Metrics;

/// Why the manager could not run.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ManagerError {
    /// A probe or metrics address could not be bound.
    #[error("{flag} {addr}: {source}")]
    Bind {
        /// The flag that named the address.
        flag: &'static str,
        /// The address.
        addr: SocketAddr,
        /// Why.
        #[source]
        source: crate::health::HealthError,
    },
    /// The leader election settings are inconsistent.
    #[error(transparent)]
    LeaderElection(#[from] crate::leader::LeaderError),
    /// The webhook server could not start.
    #[error("webhook server: {0}")]
    Webhook(#[from] crate::webhook::WebhookError),
    /// The admission webhook configurations could not be written.
    #[error("webhook configurations: {0}")]
    WebhookConfigurations(#[from] crate::admission::ConfigurationError),
}

/// What the manager runs, and how.
#[derive(Clone, Debug, Default)]
#[non_exhaustive]
pub struct ManagerConfig {
    /// Watch and manage only this namespace (`--namespace`); all namespaces when `None`.
    pub namespace: Option<String>,
    /// Leader election (`--enable-leader-election` and friends); `None` runs as the only
    /// manager.
    pub leader_election: Option<LeaderElectionConfig>,
    /// Where `/metrics` is served (`--metrics-addr`); `None` serves no metrics endpoint.
    pub metrics_addr: Option<SocketAddr>,
    /// Where `/healthz` and `/readyz` are served (`--health-probe-addr`).
    pub health_addr: Option<SocketAddr>,
    /// The CloneSet controller.
    pub cloneset: CloneSetConfig,
    /// The webhook server (conversion and admission); `None` runs none.
    pub webhook: Option<crate::webhook::WebhookConfig>,
    /// How the admission webhook configurations are written.
    pub webhook_policy: crate::admission::WebhookPolicy,
    /// Feature gates (`--feature-gates`).
    pub feature_gates: crate::features::FeatureGates,
}

/// A running manager's handles, for embedding and tests.
#[derive(Clone)]
pub struct ManagerHandle {
    /// Leadership, as the manager sees it.
    pub leader: LeaderHandle,
    /// The metrics registry.
    pub metrics: Metrics,
    /// Readiness checks.
    pub health: Health,
    /// The caches (shared by the controllers).
    pub caches: CloneSetCaches,
    /// Where the webhook server listens, if it runs.
    pub webhook_addr: Option<SocketAddr>,
}

/// Runs the manager with `client` until `shutdown` resolves, then stops the controllers,
/// releases the lease and returns. `started` receives the handles once everything is wired.
pub async fn run(
    client: Client,
    config: ManagerConfig,
    shutdown: impl Future<Output = ()> + Send + 'static,
    started: Option<tokio::sync::oneshot::Sender<ManagerHandle>>,
) -> Result<(), ManagerError> {
    let (stop_tx, stop_rx) = watch::channel(false);
    let stopped = {
        let stop_rx = stop_rx.clone();
        move || {
            let mut rx = stop_rx.clone();
            async move {
                // The sender lives until `run` returns.
                let _ = rx.wait_for(|s| *s).await;
            }
        }
    };
    tokio::spawn(async move {
        shutdown.await;
        stop_tx.send_replace(true);
    });

    let metrics = Metrics::new();
    let health = Health::new();
    health.set_ready("informers-synced", false);
    let mut servers = tokio::task::JoinSet::new();
    if let Some(addr) = config.health_addr {
        let listener = crate::health::bind(addr).await.map_err(|source| ManagerError::Bind {
            flag: "--health-probe-addr",
            addr,
            source,
        })?;
        let same = config.metrics_addr == Some(addr);
        let (h, m) = (health.clone(), same.then(|| metrics.clone()));
        servers.spawn(crate::health::serve(listener, h, m, stopped()));
    }
    if let Some(addr) = config.metrics_addr.filter(|a| Some(*a) != config.health_addr) {
        let listener = crate::health::bind(addr).await.map_err(|source| ManagerError::Bind {
            flag: "--metrics-addr",
            addr,
            source,
        })?;
        let app = crate::health::metrics_router(metrics.clone());
        servers.spawn(crate::health::serve_router(listener, app, stopped()));
    }

    let caches = CloneSetCaches::default();
    // Every replica serves webhooks (the API server may call any of them).
    let webhook = match &config.webhook {
        Some(webhook) => {
            config.webhook_policy.validate()?;
            let gates = &config.feature_gates;
            let context = crate::admission::AdmissionContext {
                pods: caches.pods.clone(),
                pvcs: caches.pvcs.clone(),
                client: client.clone(),
                deletion_protection: gates.enabled("ResourcesDeletionProtection"),
                crd_cascading: gates.enabled("DeletionProtectionForCRDCascadingGate"),
            };
            let handle = crate::webhook::WebhookServer::new(webhook.clone())
                .routes(crate::admission::routes(context))
                .start(client.clone(), health.clone(), stopped())
                .await?;
            let mut policy = config.webhook_policy.clone();
            policy.manager_namespace = webhook.namespace.clone();
            policy.deletion_protection = gates.enabled("ResourcesDeletionProtection");
            register_admission(&client, &handle, &policy).await?;
            let mut updates = handle.trust_updates();
            let (client, webhook_config) = (client.clone(), handle.config().clone());
            let stop = stopped();
            tokio::spawn(async move {
                tokio::pin!(stop);
                loop {
                    tokio::select! {
                        changed = updates.changed() => if changed.is_err() { break },
                        _ = &mut stop => break,
                    }
                    let bundle = updates.borrow_and_update().clone();
                    let config = |path: &str| webhook_config.client_config(path, &bundle);
                    let applied =
                        crate::admission::apply_configurations(&client, &policy, config).await;
                    if let Err(err) = applied {
                        tracing::warn!(error = %err, "re-registering admission webhooks");
                    }
                }
            });
            Some(handle)
        }
        None => None,
    };

    let mut reflectors = tokio::task::JoinSet::new();
    spawn_caches(&mut reflectors, &client, config.namespace.as_deref(), &caches);

    let leader = match &config.leader_election {
        Some(le) => {
            le.validate()?;
            LeaderElector::new(client.clone(), le.clone()).spawn(stopped())
        }
        None => LeaderHandle::always_leader(),
    };
    {
        let metrics = metrics.clone();
        let mut rx = leader.subscribe();
        let stop = stopped();
        tokio::spawn(async move {
            tokio::pin!(stop);
            loop {
                metrics.set_leader(*rx.borrow_and_update());
                tokio::select! {
                    changed = rx.changed() => if changed.is_err() { break },
                    _ = &mut stop => break,
                }
            }
        });
    }

    let applier = Applier::new(client.clone(), leader.clone(), CONTROLLER_NAME);
    let controller =
        CloneSetController::new(caches.clone(), applier, metrics.clone(), config.cloneset.clone());
    if let Some(started) = started {
        let _ = started.send(ManagerHandle {
            leader: leader.clone(),
            metrics: metrics.clone(),
            health: health.clone(),
            caches: caches.clone(),
            webhook_addr: webhook.as_ref().map(|w| w.addr),
        });
    }

    // Ready once every cache has loaded (or shutdown came first).
    tokio::select! {
        _ = wait_synced(&caches) => health.set_ready("informers-synced", true),
        _ = stopped() => {}
    }

    let mut stop = Box::pin(stopped());
    loop {
        tokio::select! {
            leading = leader.wait_for_leadership() => if !leading { break },
            _ = &mut stop => break,
        }
        tracing::info!("leading: starting controllers");
        controller.enqueue_all();
        let mut lost = leader.subscribe();
        let lost = async move {
            let _ = lost.wait_for(|leading| !*leading).await;
        };
        let mut done = false;
        controller
            .run(async {
                tokio::select! {
                    _ = lost => tracing::warn!("leadership lost: controllers stopped"),
                    _ = &mut stop => done = true,
                }
            })
            .await;
        if done {
            break;
        }
    }
    controller.queue().shut_down();
    reflectors.abort_all();
    // The elector releases the lease on shutdown; give it a moment to do so.
    let _ = tokio::time::timeout(Duration::from_secs(5), leader.clone().stopped()).await;
    if let Some(webhook) = webhook {
        webhook.shutdown();
        let _ = tokio::time::timeout(Duration::from_secs(5), webhook.join()).await;
    }
    while let Some(result) = servers.join_next().await {
        if let Ok(Err(err)) = result {
            tracing::warn!(error = %err, "probe server ended with an error");
        }
    }
    Ok(())
}

/// Writes the admission webhook configurations, pointing at `handle`.
async fn register_admission(
    client: &Client,
    handle: &crate::webhook::WebhookHandle,
    policy: &crate::admission::WebhookPolicy,
) -> Result<(), crate::admission::ConfigurationError> {
    let bundle = handle.trust_bundle();
    let config = |path: &str| handle.config().client_config(path, &bundle);
    crate::admission::apply_configurations(client, policy, config).await
}

async fn wait_synced(caches: &CloneSetCaches) {
    caches.clonesets.wait_synced().await;
    caches.pods.wait_synced().await;
    caches.pvcs.wait_synced().await;
    caches.revisions.wait_synced().await;
    caches.nodes.wait_synced().await;
}

fn api<K>(client: &Client, namespace: Option<&str>) -> Api<K>
where
    K: kube::Resource<DynamicType = (), Scope = kube::core::NamespaceResourceScope>,
{
    match namespace {
        Some(ns) => Api::namespaced(client.clone(), ns),
        None => Api::all(client.clone()),
    }
}

/// Starts the reflectors behind `caches`.
pub fn spawn_caches(
    tasks: &mut tokio::task::JoinSet<()>,
    client: &Client,
    namespace: Option<&str>,
    caches: &CloneSetCaches,
) {
    let config = watcher::Config::default().any_semantic();
    tasks.spawn(caches.clonesets.clone().run(
        api::<CloneSet>(client, namespace),
        config.clone(),
        strip_managed_fields,
    ));
    tasks.spawn(caches.pods.clone().run(
        api::<CachedPod>(client, namespace),
        config.clone(),
        strip_managed_fields,
    ));
    tasks.spawn(caches.pvcs.clone().run(
        api::<PersistentVolumeClaim>(client, namespace),
        config.clone(),
        strip_managed_fields,
    ));
    tasks.spawn(caches.revisions.clone().run(
        api::<ControllerRevision>(client, namespace),
        config.clone(),
        strip_managed_fields,
    ));
    let nodes: Cache<PartialObjectMeta<Node>> = caches.nodes.clone();
    let stream =
        watcher(Api::<PartialObjectMeta<Node>>::all(client.clone()), config).default_backoff();
    tasks.spawn(nodes.run_events(stream, strip_managed_fields));
}
