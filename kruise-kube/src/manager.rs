//! The manager: shared caches, leader election, metrics and health, the webhooks, and every
//! registered controller ([`crate::controller::registry`]), run until shutdown.
//!
//! Caches start at once on every replica (a standby has them warm); controllers run only while
//! this replica holds the lease, and stop the moment it is lost. Writes are also gated on the
//! lease one by one (see [`crate::applier::Applier`]), so a reconcile still in flight when the
//! lease goes cannot write. A controller whose CRD is not installed waits for it without
//! holding up the others.

use std::collections::BTreeMap;
use std::future::Future;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use futures::future::BoxFuture;
use kube::Client;
use tokio::sync::watch;

use crate::cache::SharedCaches;
use crate::cached_pod::CachedPod;
use crate::controller::{ControllerSettings, Registration};
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
    /// The webhook server's certificates and configurations were not in place in time.
    #[error("the webhook did not initialize within --webhook-initialize-timeout ({0:?})")]
    WebhookInitializeTimeout(Duration),
    /// The caches did not load in time.
    #[error(
        "the caches did not sync within --controller-cache-sync-timeout ({timeout:?}); not synced: {kinds}"
    )]
    CacheSyncTimeout {
        /// The timeout.
        timeout: Duration,
        /// The kinds whose caches had not loaded.
        kinds: String,
    },
}

/// What the manager runs, and how.
#[derive(Clone, Debug)]
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
    /// The controllers to run (every registered one by default); each runs when its feature
    /// gates are on.
    pub controllers: Vec<Registration>,
    /// Settings shared by every controller (expectation timeout, backoff, gates, ...).
    pub controller_settings: ControllerSettings,
    /// Workers per controller, by workers flag (`cloneset-workers`); a controller not named
    /// here gets its registration's default.
    pub workers: BTreeMap<String, usize>,
    /// How often a controller whose CRD is not served checks again.
    pub crd_poll_interval: Duration,
    /// The webhook server (conversion and admission); `None` runs none.
    pub webhook: Option<crate::webhook::WebhookConfig>,
    /// How the admission webhook configurations are written.
    pub webhook_policy: crate::admission::WebhookPolicy,
    /// Feature gates (`--feature-gates`).
    pub feature_gates: crate::features::FeatureGates,
    /// How long the caches may take to load before the manager gives up
    /// (`--controller-cache-sync-timeout`, 2m).
    pub cache_sync_timeout: Duration,
    /// How long the webhook server may take to hold its certificates and write its
    /// configurations before the manager gives up (`--webhook-initialize-timeout`, 60s).
    pub webhook_initialize_timeout: Duration,
}

impl Default for ManagerConfig {
    fn default() -> Self {
        Self {
            namespace: None,
            leader_election: None,
            metrics_addr: None,
            health_addr: None,
            controllers: crate::controller::registry(),
            controller_settings: ControllerSettings::default(),
            workers: BTreeMap::new(),
            crd_poll_interval: Duration::from_secs(10),
            webhook: None,
            webhook_policy: crate::admission::WebhookPolicy::default(),
            feature_gates: crate::features::FeatureGates::default(),
            cache_sync_timeout: Duration::from_secs(120),
            webhook_initialize_timeout: Duration::from_secs(60),
        }
    }
}

impl ManagerConfig {
    /// The settings of `registration`'s controller: the shared ones, its workers and the
    /// manager's feature gates.
    pub fn settings_for(&self, registration: &Registration) -> ControllerSettings {
        let mut settings = self.controller_settings.clone();
        settings.gates = self.feature_gates.clone();
        settings.workers = self
            .workers
            .get(registration.info.workers_flag)
            .copied()
            .unwrap_or(registration.info.default_workers)
            .max(1);
        settings
    }
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
    /// The caches, one per kind, shared by the controllers and webhooks.
    pub caches: SharedCaches,
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
    let stop_tx = std::sync::Arc::new(stop_tx);
    {
        let stop_tx = stop_tx.clone();
        tokio::spawn(async move {
            shutdown.await;
            stop_tx.send_replace(true);
        });
    }

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

    let caches = SharedCaches::new();
    // What the writer of the generated pod webhook entries needs, once there is a leader.
    let mut scope_writer = None;
    // Every replica serves webhooks (the API server may call any of them).
    let webhook = match &config.webhook {
        Some(webhook) => {
            config.webhook_policy.validate()?;
            let gates = &config.feature_gates;
            let pub_budgets = crate::pub_budget::PubWebhook {
                budgets: caches.get(),
                pods: caches.get::<CachedPod>(),
                client: client.clone(),
                state: caches.shared(),
                gates: crate::pub_budget::gates_from(gates),
                metrics: Some(metrics.clone()),
                events: Some(crate::applier::EventSink::start(
                    client.clone(),
                    "kruise-manager-webhook",
                    None,
                )),
            };
            let workload_spreads = gates.enabled("WorkloadSpread").then(|| {
                crate::workloadspread::WorkloadSpreadWebhook::new(
                    &caches,
                    client.clone(),
                    &webhook.namespace,
                )
            });
            let sidecar_sets = gates.enabled("PodWebhook").then(|| {
                crate::sidecarset::SidecarSetWebhook::new(
                    &caches,
                    kruise_core::sidecarset::InjectionGates {
                        sort_sidecar_container_by_name: gates
                            .enabled("EnableSortSidecarContainerByName"),
                    },
                )
                .with_revision_namespace(&config.controller_settings.manager_namespace)
            });
            // The features the pod webhooks ask, each behind its gates (the chain orders
            // their steps as upstream does).
            let mut pod_features: Vec<Arc<dyn crate::admission::PodFeature>> = Vec::new();
            if gates.enabled("PodWebhook") {
                pod_features.push(Arc::new(crate::podreadiness::readiness_gate_feature(
                    gates.enabled("KruisePodReadinessGate"),
                )));
                pod_features.push(Arc::new(crate::launch_priority::launch_priority_feature()));
                if gates.enabled("EnhancedLivenessProbe") {
                    pod_features
                        .push(Arc::new(crate::enhanced_liveness::enhanced_liveness_feature()));
                }
            }
            if let Some(spreads) = &workload_spreads {
                pod_features.push(Arc::new(spreads.clone()));
            }
            if let Some(sets) = &sidecar_sets {
                pod_features.push(Arc::new(sets.clone()));
            }
            pod_features.push(Arc::new(pub_budgets));
            let persistent_pod_states = crate::persistentpodstate::PersistentPodStateFeature::new(
                &caches,
                client.clone(),
                &config.controller_settings.manager_namespace,
            );
            if gates.enabled("PodWebhook") {
                pod_features.push(Arc::new(persistent_pod_states));
                if gates.enabled("EnablePodProbeMarkerOnServerless") {
                    pod_features
                        .push(Arc::new(crate::podprobe::ServerlessProbeFeature::new(&caches)));
                }
            }
            let scope_features = pod_features.clone();
            let mut context = crate::admission::AdmissionContext::new(
                client.clone(),
                &caches,
                gates,
                &webhook.namespace,
            );
            context.pod_features = pod_features;
            context.sidecar_sets = sidecar_sets;
            context.workload_spreads = workload_spreads;
            context.nodes = Some(caches.get::<k8s_openapi::api::core::v1::Node>());
            context.persistent_pod_states = Some(caches.get());
            context.rollouts = Some(caches.get());
            context.replica_sets = Some(caches.get());
            let mut policy = config.webhook_policy.clone();
            policy.manager_namespace = webhook.namespace.clone();
            policy.gates = gates.clone();
            let initialize = async {
                let handle = crate::webhook::WebhookServer::new(webhook.clone())
                    .routes(crate::admission::routes(context, gates))
                    .start(client.clone(), health.clone(), stopped())
                    .await?;
                register_admission(&client, &handle, &policy).await?;
                Ok::<_, ManagerError>(handle)
            };
            let limit = config.webhook_initialize_timeout;
            let handle = tokio::time::timeout(limit, initialize)
                .await
                .map_err(|_| ManagerError::WebhookInitializeTimeout(limit))??;
            // The generated pod webhook entries follow the trust bundle; once they are first
            // written, the static configuration is written again without the catch-all.
            let path = crate::admission::pod_scope::PATH;
            let (mutate_pod_tx, mutate_pod_rx) =
                watch::channel(handle.config().client_config(path, &handle.trust_bundle()));
            let mut generated_rx = None;
            if policy.pod_scope == crate::admission::PodWebhookScope::Selected
                && gates.enabled("PodWebhook")
            {
                let (generated_tx, rx) = watch::channel(false);
                generated_rx = Some(rx);
                scope_writer = Some((scope_features, policy.clone(), mutate_pod_rx, generated_tx));
            }
            let mut updates = handle.trust_updates();
            let (client, webhook_config) = (client.clone(), handle.config().clone());
            let stop = stopped();
            tokio::spawn(async move {
                tokio::pin!(stop);
                loop {
                    tokio::select! {
                        changed = updates.changed() => if changed.is_err() { break },
                        generated = async {
                            match generated_rx.as_mut() {
                                Some(rx) => match rx.changed().await {
                                    Ok(()) => Some(*rx.borrow_and_update()),
                                    Err(_) => None,
                                },
                                None => std::future::pending().await,
                            }
                        } => match generated {
                            Some(true) => {}
                            Some(false) => continue,
                            None => {
                                generated_rx = None;
                                continue;
                            }
                        },
                        _ = &mut stop => break,
                    }
                    let bundle = updates.borrow_and_update().clone();
                    mutate_pod_tx.send_replace(webhook_config.client_config(path, &bundle));
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

    caches.start(client.clone(), config.namespace.clone());

    // The lease is released only once every controller has stopped (as controller-runtime
    // does): until then a write already past the leadership gate may still land, and another
    // replica must not lead beside it. Dropping `release` (any return) lets the elector go too.
    let (release, released) = tokio::sync::oneshot::channel::<()>();
    let leader = match &config.leader_election {
        Some(le) => {
            le.validate()?;
            LeaderElector::new(client.clone(), le.clone()).spawn(async move {
                let _ = released.await;
            })
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
                let leading = *rx.borrow_and_update();
                metrics.set_leader(leading);
                tokio::select! {
                    changed = rx.changed() => if changed.is_err() { break },
                    _ = &mut stop => break,
                }
            }
        });
    }

    if let Some((features, policy, client_config, generated)) = scope_writer {
        let writer = crate::admission::pod_scope::PodScopeWriter {
            features,
            policy,
            applier: crate::applier::Applier::new(
                client.clone(),
                leader.clone(),
                "pod-webhook-scope",
            ),
            client_config,
            generated,
        };
        tokio::spawn(writer.run(leader.clone(), stopped()));
    }

    // Every enabled controller runs on its own: it waits for its CRD, then its caches, then
    // leadership. Each reports once it has either started or found its CRD missing.
    let mut controllers = tokio::task::JoinSet::new();
    let mut settled = Vec::new();
    for registration in &config.controllers {
        if !registration.enabled(&config.feature_gates) {
            tracing::info!(
                controller = registration.info.name,
                gates = ?registration.info.gates,
                "controller disabled by its feature gates"
            );
            continue;
        }
        let context = crate::controller::context_for(
            registration,
            &client,
            &leader,
            &caches,
            &metrics,
            config.settings_for(registration),
        );
        let (settled_tx, settled_rx) = tokio::sync::oneshot::channel();
        settled.push(settled_rx);
        let stop = {
            let stop_rx = stop_rx.clone();
            move || -> BoxFuture<'static, ()> {
                let mut rx = stop_rx.clone();
                Box::pin(async move {
                    let _ = rx.wait_for(|s| *s).await;
                })
            }
        };
        controllers.spawn(crate::controller::run_registered(
            *registration,
            client.clone(),
            context,
            leader.clone(),
            config.crd_poll_interval,
            settled_tx,
            stop,
        ));
    }

    if let Some(started) = started {
        let _ = started.send(ManagerHandle {
            leader: leader.clone(),
            metrics: metrics.clone(),
            health: health.clone(),
            caches: caches.clone(),
            webhook_addr: webhook.as_ref().map(|w| w.addr),
        });
    }

    // Ready once every controller has started or is waiting for its CRD, and every cache has
    // loaded (or shutdown came first).
    let ready = async {
        for rx in settled {
            let _ = rx.await;
        }
        caches.wait_synced().await;
    };
    let limit = config.cache_sync_timeout;
    tokio::select! {
        loaded = tokio::time::timeout(limit, ready) => match loaded {
            Ok(()) => health.set_ready("informers-synced", true),
            Err(_) => {
                let kinds = caches.unsynced_kinds().join(", ");
                stop_tx.send_replace(true);
                while controllers.join_next().await.is_some() {}
                caches.stop();
                return Err(ManagerError::CacheSyncTimeout { timeout: limit, kinds });
            }
        },
        _ = stopped() => {}
    }

    let mut stop = Box::pin(stopped());
    let mut leading_rx = leader.subscribe();
    loop {
        let leading = *leading_rx.borrow_and_update();
        if leading {
            tracing::info!("leading: starting controllers");
        }
        tokio::select! {
            changed = leading_rx.changed() => if changed.is_err() { break },
            _ = &mut stop => break,
        }
        if leading && !*leading_rx.borrow() {
            tracing::warn!("leadership lost: controllers stopped");
        }
    }
    while controllers.join_next().await.is_some() {}
    caches.stop();
    let _ = release.send(());
    // The elector releases the lease now; give it a moment to do so.
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
