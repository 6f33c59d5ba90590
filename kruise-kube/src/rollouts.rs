//! Kruise Rollout's controllers (`rollout-controller`, `batchrelease-controller`), over
//! kruise-core's planners ([`kruise_core::rollouts`]): for each Rollout, one
//! [`rollout::plan`] from the Rollout, its workload and its BatchRelease; for each
//! BatchRelease, one [`batchrelease::plan`] from it, its workload and the workload's pods;
//! both carried out by the applier. The workload webhook and the Rollout validation are
//! registered with the other webhooks ([`crate::admission`]).
//!
//! Upstream runs these in a second manager (`kruise-rollout`); here they run in
//! kruise-manager beside the workload controllers, which they drive only through the
//! workloads' own fields (partition, annotations), exactly as the second manager would.
//!
//! A Rollout wakes on its own changes, its BatchRelease's, and its workload's; a BatchRelease
//! on its own, its workload's, and the workload's pods'.

use std::sync::Arc;
use std::time::Duration;

use futures::future::BoxFuture;
use k8s_openapi::api::apps::v1::{Deployment, ReplicaSet};
use k8s_openapi::api::autoscaling::v2::HorizontalPodAutoscaler;
use k8s_openapi::api::core::v1::Service;
use k8s_openapi::api::networking::v1::Ingress;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector;
use kruise_api::apps::v1beta1::{CloneSet, StatefulSet};
use kruise_api::rollouts::v1alpha1::{RolloutHistory, TrafficRouting};
use kruise_api::rollouts::v1beta1::{BatchRelease, Rollout, TrafficRoutingRef};
use kruise_core::rollouts::batchrelease::{self, CanaryDeployment, ReleasePod};
use kruise_core::rollouts::daemonset as native_daemon_sets;
use kruise_core::rollouts::deployment as deployments;
use kruise_core::rollouts::history;
use kruise_core::rollouts::trafficrouting;
use kruise_core::rollouts::{ReleaseStyle, ReleasedKind, ReleasedWorkload, rollout};

use crate::applier::PlanOwner;
use crate::cache::{Cache, Change, ObjectKey};
use crate::cached_pod::CachedPod;
use crate::controller::{
    ControllerContext, ControllerInfo, KeyMapping, ReconcileError, Reconciler, Registration,
    ServedResource, Watch,
};

crate::watched_namespaced!(
    TrafficRouting,
    RolloutHistory,
    Rollout,
    BatchRelease,
    Service,
    Ingress,
    ReplicaSet,
    KubeDaemonSet,
    HorizontalPodAutoscaler
);

/// apps/v1 DaemonSet (the native one).
type KubeDaemonSet = k8s_openapi::api::apps::v1::DaemonSet;

/// A Gateway API HTTPRoute: its metadata, and the rest kept as JSON (the planner edits its
/// rules as data). Cached only where the Gateway API is installed ([`optional_watch`]).
#[derive(Clone, Debug, Default, serde::Serialize, serde::Deserialize)]
pub struct HttpRoute {
    /// The route's metadata.
    pub metadata: k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta,
    /// `apiVersion`, `kind`, `spec` and `status`, as read.
    #[serde(flatten)]
    pub rest: serde_json::Map<String, serde_json::Value>,
}

impl kube::Resource for HttpRoute {
    type DynamicType = ();
    type Scope = kube::core::NamespaceResourceScope;

    fn kind(_: &()) -> std::borrow::Cow<'_, str> {
        "HTTPRoute".into()
    }

    fn group(_: &()) -> std::borrow::Cow<'_, str> {
        "gateway.networking.k8s.io".into()
    }

    fn version(_: &()) -> std::borrow::Cow<'_, str> {
        "v1".into()
    }

    fn plural(_: &()) -> std::borrow::Cow<'_, str> {
        "httproutes".into()
    }

    fn meta(&self) -> &k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta {
        &self.metadata
    }

    fn meta_mut(&mut self) -> &mut k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta {
        &mut self.metadata
    }
}

/// Where a watch of a kind that may not be installed stands.
enum Optional<K> {
    /// Ask discovery whether the kind is served (`reported`: the empty list was given).
    Check { reported: bool },
    /// The empty list's end.
    Empty,
    /// The kind is served: its watch.
    Watch(crate::cache::WatchEvents<K>),
}

/// The watch of a namespaced kind that a cluster may not serve (a CRD of another project):
/// while discovery does not list it, the cache holds nothing and counts as synced, and
/// discovery is asked again every 10 seconds; once it is served, its objects are watched.
fn optional_watch<K>(
    client: &kube::Client,
    namespace: Option<&str>,
    resource: ServedResource,
) -> crate::cache::WatchEvents<K>
where
    K: kube::Resource<DynamicType = (), Scope = kube::core::NamespaceResourceScope>
        + Clone
        + serde::de::DeserializeOwned
        + std::fmt::Debug
        + Send
        + 'static,
{
    use futures::StreamExt as _;
    use kube::runtime::watcher::Event;
    let (client, namespace) = (client.clone(), namespace.map(str::to_owned));
    futures::stream::unfold(Optional::Check { reported: false }, move |mut phase| {
        let (client, namespace) = (client.clone(), namespace.clone());
        async move {
            loop {
                match phase {
                    Optional::Watch(mut events) => {
                        return events.next().await.map(|e| (e, Optional::Watch(events)));
                    }
                    Optional::Empty => {
                        return Some((Ok(Event::InitDone), Optional::Check { reported: true }));
                    }
                    Optional::Check { reported } => {
                        if reported {
                            tokio::time::sleep(Duration::from_secs(10)).await;
                        }
                        let served = crate::controller::is_served(&client, &resource).await;
                        if matches!(served, Ok(true)) {
                            phase = Optional::Watch(crate::cache::namespaced_watch(
                                &client,
                                namespace.as_deref(),
                            ));
                            continue;
                        }
                        if !reported {
                            return Some((Ok(Event::Init), Optional::Empty));
                        }
                        phase = Optional::Check { reported: true };
                    }
                }
            }
        }
    })
    .boxed()
}

impl crate::cache::Watched for HttpRoute {
    fn watch(client: &kube::Client, namespace: Option<&str>) -> crate::cache::WatchEvents<Self> {
        optional_watch(
            client,
            namespace,
            ServedResource {
                group: "gateway.networking.k8s.io",
                version: "v1",
                plural: "httproutes",
            },
        )
    }
}

/// Upstream's controller names.
pub const ROLLOUT_CONTROLLER: &str = "rollout-controller";
/// Upstream's controller names.
pub const BATCH_RELEASE_CONTROLLER: &str = "batchrelease-controller";
/// Upstream's controller names.
pub const TRAFFIC_ROUTING_CONTROLLER: &str = "trafficrouting-controller";
/// Upstream's controller name (the RolloutHistory gate's).
pub const ROLLOUT_HISTORY_CONTROLLER: &str = "rollouthistory-controller";
/// Upstream's controller names (the AdvancedDeployment gate's).
pub const ADVANCED_DEPLOYMENT_CONTROLLER: &str = "advanced-deployment-controller";
/// The controller that deletes a native DaemonSet's old pods batch by batch (upstream's
/// main branch).
pub const NATIVE_DAEMONSET_CONTROLLER: &str = "nativedaemonset-controller";

/// The workloads a release can move, read from the shared caches.
#[derive(Clone)]
struct Workloads {
    clone_sets: Cache<CloneSet>,
    advanced_stateful_sets: Cache<StatefulSet>,
    stateful_sets: Cache<k8s_openapi::api::apps::v1::StatefulSet>,
    daemon_sets: Cache<kruise_api::apps::v1beta1::DaemonSet>,
    deployments: Cache<Deployment>,
    /// A Deployment's revisions are its ReplicaSets.
    replica_sets: Cache<ReplicaSet>,
    native_daemon_sets: Cache<KubeDaemonSet>,
    /// A native DaemonSet's revisions.
    revisions: Cache<crate::cached_revision::CachedRevision>,
    /// An Advanced DaemonSet's current revision is read from its pods.
    pods: Cache<CachedPod>,
}

impl Workloads {
    fn new(context: &ControllerContext) -> Self {
        Self {
            clone_sets: context.caches.get(),
            advanced_stateful_sets: context.caches.get(),
            stateful_sets: context.caches.get(),
            daemon_sets: context.caches.get(),
            deployments: context.caches.get(),
            replica_sets: context.caches.get(),
            native_daemon_sets: context.caches.get(),
            revisions: context.caches.get(),
            pods: context.caches.get(),
        }
    }

    /// The ReplicaSets a Deployment controls.
    fn replica_sets_of(&self, uid: Option<&str>) -> Vec<ReplicaSet> {
        uid.map(|uid| {
            self.replica_sets.controlled_by(uid).iter().map(|rs| (**rs).clone()).collect()
        })
        .unwrap_or_default()
    }

    /// The canary Deployment of a canary-style release of `stable` (the newest labelled with
    /// its name, and controlled by the BatchRelease `release_uid` when given).
    fn canary_of(
        &self,
        namespace: &str,
        stable: &str,
        release_uid: Option<&str>,
    ) -> Option<Arc<Deployment>> {
        self.deployments
            .in_namespace(namespace)
            .into_iter()
            .filter(|d| {
                let labels = d.metadata.labels.as_ref();
                labels.and_then(|l| l.get(deployments::CANARY_DEPLOYMENT_LABEL)).map(String::as_str)
                    == Some(stable)
            })
            .filter(|d| {
                release_uid.is_none_or(|uid| {
                    d.metadata
                        .owner_references
                        .iter()
                        .flatten()
                        .any(|o| o.controller == Some(true) && o.uid == uid)
                })
            })
            .max_by_key(|d| d.metadata.creation_timestamp.as_ref().map(|t| t.0))
    }

    /// The `pod-template-hash` of a canary Deployment's own ReplicaSet, once it has one.
    fn canary_pods_revision(&self, canary: &Deployment) -> Option<String> {
        let sets = self.replica_sets_of(canary.metadata.uid.as_deref());
        deployments::new_replica_set(canary, &sets)
            .and_then(deployments::replica_set_hash)
            .map(str::to_owned)
    }

    /// The workload `reference` names in `namespace`, when it exists and is of a kind
    /// released here.
    fn get(
        &self,
        namespace: &str,
        reference: &kruise_api::rollouts::v1beta1::ObjectRef,
    ) -> Option<ReleasedWorkload> {
        let key = ObjectKey::new(namespace, reference.name.as_str());
        match ReleasedKind::from_ref(&reference.api_version, &reference.kind).ok()? {
            ReleasedKind::CloneSet => {
                self.clone_sets.get(&key).map(|cs| ReleasedWorkload::from_clone_set(&cs))
            }
            ReleasedKind::AdvancedStatefulSet => self
                .advanced_stateful_sets
                .get(&key)
                .map(|sts| ReleasedWorkload::from_advanced_stateful_set(&sts)),
            ReleasedKind::StatefulSet => {
                self.stateful_sets.get(&key).map(|sts| ReleasedWorkload::from_stateful_set(&sts))
            }
            ReleasedKind::AdvancedDaemonSet => {
                let ds = self.daemon_sets.get(&key)?;
                let uid = ds.metadata.uid.clone().unwrap_or_default();
                let pods = self.pods.controlled_by(&uid);
                let revisions = pods.iter().filter_map(|p| {
                    p.metadata.labels.as_ref()?.get("controller-revision-hash").map(String::as_str)
                });
                Some(ReleasedWorkload::from_daemon_set(&ds, revisions))
            }
            ReleasedKind::Deployment => {
                let deployment = self.deployments.get(&key)?;
                let sets = self.replica_sets_of(deployment.metadata.uid.as_deref());
                let canary = self
                    .canary_of(namespace, &reference.name, None)
                    .filter(|c| c.metadata.deletion_timestamp.is_none())
                    .and_then(|c| self.canary_pods_revision(&c));
                Some(ReleasedWorkload::from_deployment(&deployment, &sets, canary.as_deref()))
            }
            ReleasedKind::DaemonSet => {
                let ds = self.native_daemon_sets.get(&key)?;
                let uid = ds.metadata.uid.clone().unwrap_or_default();
                let revisions: Vec<k8s_openapi::api::apps::v1::ControllerRevision> =
                    self.revisions.controlled_by(&uid).iter().map(|r| r.to_revision()).collect();
                Some(ReleasedWorkload::from_native_daemon_set(&ds, &revisions))
            }
        }
    }

    /// The workload `reference` names in `namespace` as a RolloutHistory records it (its
    /// spec), with its selector.
    fn recorded(
        &self,
        namespace: &str,
        reference: &kruise_api::rollouts::v1beta1::ObjectRef,
    ) -> Option<(history::RecordedWorkload, Option<LabelSelector>)> {
        let key = ObjectKey::new(namespace, reference.name.as_str());
        let spec = match ReleasedKind::from_ref(&reference.api_version, &reference.kind).ok()? {
            ReleasedKind::CloneSet => serde_json::to_value(&self.clone_sets.get(&key)?.spec),
            ReleasedKind::AdvancedStatefulSet => {
                serde_json::to_value(&self.advanced_stateful_sets.get(&key)?.spec)
            }
            ReleasedKind::StatefulSet => serde_json::to_value(&self.stateful_sets.get(&key)?.spec),
            ReleasedKind::AdvancedDaemonSet => {
                serde_json::to_value(&self.daemon_sets.get(&key)?.spec)
            }
            ReleasedKind::Deployment => serde_json::to_value(&self.deployments.get(&key)?.spec),
            ReleasedKind::DaemonSet => {
                serde_json::to_value(&self.native_daemon_sets.get(&key)?.spec)
            }
        }
        .ok()?;
        let selector = spec.get("selector").cloned().and_then(|s| serde_json::from_value(s).ok());
        let workload = history::RecordedWorkload {
            api_version: reference.api_version.clone(),
            kind: reference.kind.clone(),
            name: reference.name.clone(),
            spec,
        };
        Some((workload, selector))
    }

    /// The stable Deployment a Deployment or ReplicaSet change concerns: the Deployment
    /// itself, or the one a canary Deployment is labelled with.
    fn stable_deployment_meta(
        deployment: &Deployment,
    ) -> k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta {
        let labels = deployment.metadata.labels.as_ref();
        let name = labels
            .and_then(|l| l.get(deployments::CANARY_DEPLOYMENT_LABEL))
            .cloned()
            .or_else(|| deployment.metadata.name.clone());
        k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta {
            namespace: deployment.metadata.namespace.clone(),
            name,
            ..Default::default()
        }
    }

    /// The Deployment controlling the ReplicaSet `name` in `namespace`.
    fn deployment_of_replica_set(&self, namespace: &str, name: &str) -> Option<Arc<Deployment>> {
        let rs = self.replica_sets.get(&ObjectKey::new(namespace, name))?;
        let owner = rs
            .metadata
            .owner_references
            .iter()
            .flatten()
            .find(|o| o.controller == Some(true) && o.kind == "Deployment")?;
        self.deployments.get(&ObjectKey::new(namespace, owner.name.as_str()))
    }
}

/// The keys of the objects in `cache` whose workload reference (read by `reference`) names
/// the workload of `kind` that changed.
fn referring<K: crate::cache::Watched>(
    cache: &Cache<K>,
    kind: ReleasedKind,
    meta: &k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta,
    reference: fn(&K) -> &kruise_api::rollouts::v1beta1::ObjectRef,
) -> Vec<ObjectKey> {
    let namespace = meta.namespace.clone().unwrap_or_default();
    let name = meta.name.clone().unwrap_or_default();
    cache
        .in_namespace(&namespace)
        .iter()
        .filter(|o| {
            let r = reference(o);
            r.name == name && ReleasedKind::from_ref(&r.api_version, &r.kind).ok() == Some(kind)
        })
        .map(|o| ObjectKey::of(o.as_ref()))
        .collect()
}

/// Watches of both workload kinds that wake the objects of `cache` referring to them.
fn workload_watches<K: crate::cache::Watched>(
    workloads: &Workloads,
    cache: &Cache<K>,
    reference: fn(&K) -> &kruise_api::rollouts::v1beta1::ObjectRef,
) -> Vec<Watch> {
    let (for_cs, for_sts, for_native, for_ds) =
        (cache.clone(), cache.clone(), cache.clone(), cache.clone());
    let (for_deployments, for_sets, sets_view) = (cache.clone(), cache.clone(), workloads.clone());
    let for_native_ds = cache.clone();
    vec![
        Watch::new(
            &workloads.native_daemon_sets,
            KeyMapping::Custom,
            move |change: &Change<KubeDaemonSet>| {
                change
                    .new
                    .as_deref()
                    .or(change.old.as_deref())
                    .map(|ds| {
                        referring(&for_native_ds, ReleasedKind::DaemonSet, &ds.metadata, reference)
                    })
                    .unwrap_or_default()
            },
        ),
        Watch::new(
            &workloads.deployments,
            KeyMapping::Custom,
            move |change: &Change<Deployment>| {
                change
                    .new
                    .as_deref()
                    .or(change.old.as_deref())
                    .map(|d| {
                        let meta = Workloads::stable_deployment_meta(d);
                        referring(&for_deployments, ReleasedKind::Deployment, &meta, reference)
                    })
                    .unwrap_or_default()
            },
        ),
        Watch::new(
            &workloads.replica_sets,
            KeyMapping::Custom,
            move |change: &Change<ReplicaSet>| {
                let Some(rs) = change.new.as_deref().or(change.old.as_deref()) else {
                    return Vec::new();
                };
                let namespace = rs.metadata.namespace.clone().unwrap_or_default();
                rs.metadata
                    .owner_references
                    .iter()
                    .flatten()
                    .filter(|o| o.controller == Some(true) && o.kind == "Deployment")
                    .filter_map(|o| {
                        sets_view
                            .deployments
                            .get(&ObjectKey::new(namespace.as_str(), o.name.as_str()))
                    })
                    .flat_map(|d| {
                        let meta = Workloads::stable_deployment_meta(&d);
                        referring(&for_sets, ReleasedKind::Deployment, &meta, reference)
                    })
                    .collect()
            },
        ),
        Watch::new(&workloads.clone_sets, KeyMapping::Custom, move |change: &Change<CloneSet>| {
            change
                .new
                .as_deref()
                .or(change.old.as_deref())
                .map(|cs| referring(&for_cs, ReleasedKind::CloneSet, &cs.metadata, reference))
                .unwrap_or_default()
        }),
        Watch::new(
            &workloads.advanced_stateful_sets,
            KeyMapping::Custom,
            move |change: &Change<StatefulSet>| {
                change
                    .new
                    .as_deref()
                    .or(change.old.as_deref())
                    .map(|sts| {
                        referring(
                            &for_sts,
                            ReleasedKind::AdvancedStatefulSet,
                            &sts.metadata,
                            reference,
                        )
                    })
                    .unwrap_or_default()
            },
        ),
        Watch::new(
            &workloads.stateful_sets,
            KeyMapping::Custom,
            move |change: &Change<k8s_openapi::api::apps::v1::StatefulSet>| {
                change
                    .new
                    .as_deref()
                    .or(change.old.as_deref())
                    .map(|sts| {
                        referring(&for_native, ReleasedKind::StatefulSet, &sts.metadata, reference)
                    })
                    .unwrap_or_default()
            },
        ),
        Watch::new(
            &workloads.daemon_sets,
            KeyMapping::Custom,
            move |change: &Change<kruise_api::apps::v1beta1::DaemonSet>| {
                change
                    .new
                    .as_deref()
                    .or(change.old.as_deref())
                    .map(|ds| {
                        referring(&for_ds, ReleasedKind::AdvancedDaemonSet, &ds.metadata, reference)
                    })
                    .unwrap_or_default()
            },
        ),
    ]
}

fn rollout_reference(r: &Rollout) -> &kruise_api::rollouts::v1beta1::ObjectRef {
    &r.spec.workload_ref
}

fn release_reference(b: &BatchRelease) -> &kruise_api::rollouts::v1beta1::ObjectRef {
    &b.spec.workload_ref
}

fn requeue(plan_requeue: Option<jiff::SignedDuration>) -> Option<Duration> {
    plan_requeue.and_then(|d| Duration::try_from(d).ok())
}

/// The Rollout controller.
pub struct RolloutController {
    context: ControllerContext,
    rollouts: Cache<Rollout>,
    batch_releases: Cache<BatchRelease>,
    workloads: Workloads,
    network: Network,
    traffic_routings: Cache<TrafficRouting>,
}

/// The network objects traffic routings name, read from the shared caches.
#[derive(Clone)]
struct Network {
    services: Cache<Service>,
    ingresses: Cache<Ingress>,
    routes: Cache<HttpRoute>,
}

impl Network {
    fn new(context: &ControllerContext) -> Self {
        Self {
            services: context.caches.get(),
            ingresses: context.caches.get(),
            routes: context.caches.get(),
        }
    }

    /// The Service, Ingress and HTTPRoute `routing` names in `namespace`, and their canaries.
    fn objects(
        &self,
        namespace: &str,
        routing: Option<&TrafficRoutingRef>,
    ) -> rollout::TrafficObjects {
        let Some(routing) = routing else {
            return rollout::TrafficObjects::default();
        };
        let canary = kruise_core::rollouts::traffic::canary_name;
        let service =
            |name: &str| self.services.get(&ObjectKey::new(namespace, name)).map(|s| (*s).clone());
        let ingress =
            |name: &str| self.ingresses.get(&ObjectKey::new(namespace, name)).map(|i| (*i).clone());
        let ingress_name = routing.ingress.as_ref().map(|i| i.name.clone());
        let route =
            routing.gateway.as_ref().and_then(|g| g.http_route_name.as_deref()).and_then(|name| {
                let route = self.routes.get(&ObjectKey::new(namespace, name))?;
                serde_json::to_value(route.as_ref()).ok()
            });
        rollout::TrafficObjects {
            stable_service: service(&routing.service),
            canary_service: service(&canary(&routing.service)),
            ingress: ingress_name.as_deref().and_then(ingress),
            canary_ingress: ingress_name.as_deref().and_then(|n| ingress(&canary(n))),
            http_route: route,
        }
    }

    /// Watches of the Service, Ingress and HTTPRoute caches, each change mapped by `keys`
    /// (the object's namespace, name and what it is) to the keys to reconcile.
    fn watches(
        &self,
        keys: impl Fn(&str, &str, Routed) -> Vec<ObjectKey> + Clone + Send + Sync + 'static,
    ) -> Vec<Watch> {
        fn meta_of<K: kube::Resource>(change: &Change<K>) -> Option<(String, String)> {
            let object = change.new.as_deref().or(change.old.as_deref())?;
            let meta = object.meta();
            Some((
                meta.namespace.clone().unwrap_or_default(),
                meta.name.clone().unwrap_or_default(),
            ))
        }
        let (k1, k2, k3) = (keys.clone(), keys.clone(), keys);
        vec![
            Watch::new(&self.services, KeyMapping::Custom, move |change: &Change<Service>| {
                meta_of(change).map_or_else(Vec::new, |(ns, name)| k1(&ns, &name, Routed::Service))
            }),
            Watch::new(&self.ingresses, KeyMapping::Custom, move |change: &Change<Ingress>| {
                meta_of(change).map_or_else(Vec::new, |(ns, name)| k2(&ns, &name, Routed::Ingress))
            }),
            Watch::new(&self.routes, KeyMapping::Custom, move |change: &Change<HttpRoute>| {
                meta_of(change).map_or_else(Vec::new, |(ns, name)| k3(&ns, &name, Routed::Route))
            }),
        ]
    }
}

/// What a traffic routing names.
#[derive(Clone, Copy, Debug)]
enum Routed {
    Service,
    Ingress,
    Route,
}

/// Whether `routing` names `name` (as the Service, the Ingress, their canaries, or the
/// HTTPRoute).
fn names(routing: &TrafficRoutingRef, name: &str, what: Routed) -> bool {
    let stem = name.strip_suffix(kruise_core::rollouts::traffic::CANARY_SUFFIX).unwrap_or(name);
    match what {
        Routed::Ingress => routing.ingress.as_ref().is_some_and(|i| i.name == stem),
        Routed::Service => routing.service == stem,
        Routed::Route => {
            routing.gateway.as_ref().and_then(|g| g.http_route_name.as_deref()) == Some(name)
        }
    }
}

/// The Rollouts in `namespace` whose traffic routing names `name`.
fn routing_to(
    rollouts: &Cache<Rollout>,
    namespace: &str,
    name: &str,
    what: Routed,
) -> Vec<ObjectKey> {
    rollouts
        .in_namespace(namespace)
        .iter()
        .filter(|r| rollout::traffic_routings(r).iter().any(|t| names(t, name, what)))
        .map(|r| ObjectKey::of(r.as_ref()))
        .collect()
}

impl RolloutController {
    const INFO: ControllerInfo = ControllerInfo::new(
        ROLLOUT_CONTROLLER,
        "rollout-workers",
        Some(ServedResource {
            group: "rollouts.kruise.io",
            version: "v1beta1",
            plural: "rollouts",
        }),
    );

    fn build(context: ControllerContext) -> Arc<dyn Reconciler> {
        Arc::new(Self {
            rollouts: context.caches.get(),
            batch_releases: context.caches.get(),
            workloads: Workloads::new(&context),
            network: Network::new(&context),
            traffic_routings: context.caches.get(),
            context,
        })
    }

    async fn reconcile_rollout(&self, key: &ObjectKey) -> Result<Option<Duration>, ReconcileError> {
        let Some(rollout) = self.rollouts.get(key) else { return Ok(None) };
        let snapshot = rollout::Snapshot {
            rollout: (*rollout).clone(),
            workload: self.workloads.get(&key.namespace, &rollout.spec.workload_ref),
            batch_release: self.batch_releases.get(key).map(|b| (*b).clone()),
            traffic: self
                .network
                .objects(&key.namespace, rollout::traffic_routings(&rollout).first()),
            traffic_routing: trafficrouting::named_by(&rollout).and_then(|name| {
                self.traffic_routings
                    .get(&ObjectKey::new(&key.namespace, &name))
                    .map(|t| (*t).clone())
            }),
            append_pod_selector: self.context.settings.gates.enabled("AppendPodSelector"),
        };
        let now = jiff::Timestamp::now();
        let plan = rollout::plan(&snapshot, now);
        let status = serde_json::to_value(&rollout.status).unwrap_or(serde_json::Value::Null);
        let owner = PlanOwner::of(rollout.as_ref(), status);
        self.context.applier.apply(&owner, &plan, None, now).await?;
        Ok(requeue(plan.requeue_after))
    }
}

impl Reconciler for RolloutController {
    fn watches(&self) -> Vec<Watch> {
        let mut watches = vec![
            Watch::own(&self.rollouts),
            Watch::controller_owner(&self.batch_releases, &self.rollouts, "Rollout"),
        ];
        watches.extend(workload_watches(&self.workloads, &self.rollouts, rollout_reference));
        let rollouts = self.rollouts.clone();
        watches
            .extend(self.network.watches(move |namespace, name, what| {
                routing_to(&rollouts, namespace, name, what)
            }));
        // A TrafficRouting's phase: the Rollouts naming it.
        let rollouts = self.rollouts.clone();
        watches.push(Watch::new(
            &self.traffic_routings,
            KeyMapping::Custom,
            move |change: &Change<TrafficRouting>| {
                let Some(tr) = change.new.as_deref().or(change.old.as_deref()) else {
                    return Vec::new();
                };
                let (namespace, name) = (
                    tr.metadata.namespace.clone().unwrap_or_default(),
                    tr.metadata.name.clone().unwrap_or_default(),
                );
                rollouts
                    .in_namespace(&namespace)
                    .iter()
                    .filter(|r| trafficrouting::named_by(r).as_deref() == Some(name.as_str()))
                    .map(|r| ObjectKey::of(r.as_ref()))
                    .collect()
            },
        ));
        watches
    }

    fn keys(&self) -> Vec<ObjectKey> {
        self.rollouts.all().iter().map(|r| ObjectKey::of(r.as_ref())).collect()
    }

    fn reconcile<'a>(
        &'a self,
        key: &'a ObjectKey,
    ) -> BoxFuture<'a, Result<Option<Duration>, ReconcileError>> {
        Box::pin(self.reconcile_rollout(key))
    }
}

/// The BatchRelease controller.
pub struct BatchReleaseController {
    context: ControllerContext,
    batch_releases: Cache<BatchRelease>,
    workloads: Workloads,
    pods: Cache<CachedPod>,
    /// A blue-green release points the one scaling its workload elsewhere while it runs.
    autoscalers: Cache<HorizontalPodAutoscaler>,
}

impl BatchReleaseController {
    const INFO: ControllerInfo = ControllerInfo::new(
        BATCH_RELEASE_CONTROLLER,
        "batchrelease-workers",
        Some(ServedResource {
            group: "rollouts.kruise.io",
            version: "v1beta1",
            plural: "batchreleases",
        }),
    );

    fn build(context: ControllerContext) -> Arc<dyn Reconciler> {
        Arc::new(Self {
            batch_releases: context.caches.get(),
            workloads: Workloads::new(&context),
            pods: context.caches.get(),
            autoscalers: context.caches.get(),
            context,
        })
    }

    /// The pods controlled by `owner` (a ReplicaSet's UID for a Deployment).
    fn pods_of(&self, owners: &[String]) -> Vec<ReleasePod> {
        owners
            .iter()
            .filter(|uid| !uid.is_empty())
            .flat_map(|uid| self.pods.controlled_by(uid))
            .map(|pod| ReleasePod {
                name: pod.metadata.name.clone().unwrap_or_default(),
                labels: pod.metadata.labels.clone().unwrap_or_default(),
                ready: pod.is_ready(),
                deleting: pod.metadata.deletion_timestamp.is_some(),
            })
            .collect()
    }

    /// The pods the release moves: the workload's (through its ReplicaSets for a
    /// Deployment), or the canary Deployment's.
    fn pods(&self, workload: &ReleasedWorkload, canary: Option<&Deployment>) -> Vec<ReleasePod> {
        match (workload.kind(), canary) {
            (ReleasedKind::Deployment, Some(canary)) => {
                let sets = self.workloads.replica_sets_of(canary.metadata.uid.as_deref());
                self.pods_of(
                    &sets.iter().filter_map(|rs| rs.metadata.uid.clone()).collect::<Vec<_>>(),
                )
            }
            (ReleasedKind::Deployment, None) => {
                let sets = self.workloads.replica_sets_of(Some(workload.uid.as_str()));
                self.pods_of(
                    &sets.iter().filter_map(|rs| rs.metadata.uid.clone()).collect::<Vec<_>>(),
                )
            }
            _ => self.pods_of(std::slice::from_ref(&workload.uid)),
        }
    }

    async fn reconcile_release(&self, key: &ObjectKey) -> Result<Option<Duration>, ReconcileError> {
        let Some(release) = self.batch_releases.get(key) else { return Ok(None) };
        let workload = self.workloads.get(&key.namespace, &release.spec.workload_ref);
        let canary_style = workload.as_ref().is_some_and(|w| {
            ReleaseStyle::of(&release.spec.release_plan, w.kind()) == ReleaseStyle::Canary
        });
        let canary = canary_style
            .then(|| {
                self.workloads.canary_of(
                    &key.namespace,
                    &release.spec.workload_ref.name,
                    release.metadata.uid.as_deref(),
                )
            })
            .flatten();
        let pods = workload.as_ref().map(|w| self.pods(w, canary.as_deref())).unwrap_or_default();
        let canary = canary.map(|c| CanaryDeployment {
            name: c.metadata.name.clone().unwrap_or_default(),
            replicas: c.spec.replicas.unwrap_or(1),
            status_replicas: c.status.as_ref().and_then(|s| s.replicas).unwrap_or(0),
            available_replicas: c.status.as_ref().and_then(|s| s.available_replicas).unwrap_or(0),
            finalizers: c.metadata.finalizers.clone().unwrap_or_default(),
            deleting: c.metadata.deletion_timestamp.is_some(),
        });
        let autoscalers = self
            .autoscalers
            .in_namespace(&key.namespace)
            .iter()
            .map(|hpa| {
                let target = &hpa.spec.scale_target_ref;
                batchrelease::Autoscaler {
                    name: hpa.metadata.name.clone().unwrap_or_default(),
                    target_api_version: target.api_version.clone().unwrap_or_default(),
                    target_kind: target.kind.clone(),
                    target_name: target.name.clone(),
                }
            })
            .collect();
        let snapshot = batchrelease::Snapshot {
            release: (*release).clone(),
            workload,
            pods,
            canary,
            autoscalers,
        };
        let now = jiff::Timestamp::now();
        let plan = batchrelease::plan(&snapshot, now);
        let status = serde_json::to_value(&release.status).unwrap_or(serde_json::Value::Null);
        let owner = PlanOwner::of(release.as_ref(), status);
        self.context.applier.apply(&owner, &plan, None, now).await?;
        Ok(requeue(plan.requeue_after))
    }
}

impl Reconciler for BatchReleaseController {
    fn watches(&self) -> Vec<Watch> {
        let mut watches = vec![Watch::own(&self.batch_releases)];
        watches.extend(workload_watches(&self.workloads, &self.batch_releases, release_reference));
        // A pod of a released workload: the BatchReleases referring to its controller.
        let releases = self.batch_releases.clone();
        let (clone_sets, sets) =
            (self.workloads.clone_sets.clone(), self.workloads.advanced_stateful_sets.clone());
        let view = self.workloads.clone();
        watches.push(Watch::new(
            &self.pods,
            KeyMapping::Custom,
            move |change: &Change<CachedPod>| {
                let Some(pod) = change.new.as_deref().or(change.old.as_deref()) else {
                    return Vec::new();
                };
                let meta = &pod.metadata;
                let namespace = meta.namespace.clone().unwrap_or_default();
                let mut keys = Vec::new();
                for owner in
                    meta.owner_references.iter().flatten().filter(|r| r.controller == Some(true))
                {
                    let key = ObjectKey::new(namespace.as_str(), owner.name.as_str());
                    let kruise = owner.api_version.starts_with("apps.kruise.io/");
                    let kind = match owner.kind.as_str() {
                        "CloneSet" if clone_sets.get(&key).is_some() => ReleasedKind::CloneSet,
                        "StatefulSet" if kruise && sets.get(&key).is_some() => {
                            ReleasedKind::AdvancedStatefulSet
                        }
                        "StatefulSet" if !kruise => ReleasedKind::StatefulSet,
                        "DaemonSet" if kruise => ReleasedKind::AdvancedDaemonSet,
                        "DaemonSet" => ReleasedKind::DaemonSet,
                        "ReplicaSet" => {
                            if let Some(d) = view.deployment_of_replica_set(&namespace, &owner.name)
                            {
                                let meta = Workloads::stable_deployment_meta(&d);
                                keys.extend(referring(
                                    &releases,
                                    ReleasedKind::Deployment,
                                    &meta,
                                    release_reference,
                                ));
                            }
                            continue;
                        }
                        _ => continue,
                    };
                    let workload_meta =
                        k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta {
                            namespace: Some(namespace.clone()),
                            name: Some(owner.name.clone()),
                            ..Default::default()
                        };
                    keys.extend(referring(&releases, kind, &workload_meta, release_reference));
                }
                keys
            },
        ));
        watches
    }

    fn keys(&self) -> Vec<ObjectKey> {
        self.batch_releases.all().iter().map(|b| ObjectKey::of(b.as_ref())).collect()
    }

    fn reconcile<'a>(
        &'a self,
        key: &'a ObjectKey,
    ) -> BoxFuture<'a, Result<Option<Duration>, ReconcileError>> {
        Box::pin(self.reconcile_release(key))
    }
}

/// The AdvancedDeployment controller: moves the ReplicaSets of a Deployment under a
/// partition-style release ([`deployments::plan`]).
pub struct AdvancedDeploymentController {
    context: ControllerContext,
    deployments: Cache<Deployment>,
    replica_sets: Cache<ReplicaSet>,
}

impl AdvancedDeploymentController {
    const INFO: ControllerInfo = ControllerInfo::new(
        ADVANCED_DEPLOYMENT_CONTROLLER,
        "advanceddeployment-workers",
        Some(ServedResource {
            group: "rollouts.kruise.io",
            version: "v1beta1",
            plural: "batchreleases",
        }),
    )
    .with_gates(&["AdvancedDeployment"]);

    fn build(context: ControllerContext) -> Arc<dyn Reconciler> {
        Arc::new(Self {
            deployments: context.caches.get(),
            replica_sets: context.caches.get(),
            context,
        })
    }

    async fn reconcile_deployment(
        &self,
        key: &ObjectKey,
    ) -> Result<Option<Duration>, ReconcileError> {
        let Some(deployment) = self.deployments.get(key) else { return Ok(None) };
        if !deployments::is_controlled(&deployment) {
            return Ok(None);
        }
        let uid = deployment.metadata.uid.clone().unwrap_or_default();
        let sets: Vec<ReplicaSet> =
            self.replica_sets.controlled_by(&uid).iter().map(|rs| (**rs).clone()).collect();
        let plan = deployments::plan(&deployment, &sets);
        let now = jiff::Timestamp::now();
        let owner = PlanOwner::of(deployment.as_ref(), serde_json::Value::Null);
        self.context.applier.apply(&owner, &plan, None, now).await?;
        Ok(requeue(plan.requeue_after))
    }
}

impl Reconciler for AdvancedDeploymentController {
    fn watches(&self) -> Vec<Watch> {
        // Only Deployments under a release: the others' changes, and their ReplicaSets',
        // would each cost a reconcile that finds nothing to do.
        vec![
            Watch::own_where(&self.deployments, deployments::is_controlled),
            Watch::controller_owner_where(
                &self.replica_sets,
                &self.deployments,
                "Deployment",
                deployments::is_controlled,
            ),
        ]
    }

    fn keys(&self) -> Vec<ObjectKey> {
        self.deployments
            .all()
            .iter()
            .filter(|d| deployments::is_controlled(d))
            .map(|d| ObjectKey::of(d.as_ref()))
            .collect()
    }

    fn reconcile<'a>(
        &'a self,
        key: &'a ObjectKey,
    ) -> BoxFuture<'a, Result<Option<Duration>, ReconcileError>> {
        Box::pin(self.reconcile_deployment(key))
    }
}

/// The native DaemonSet controller: deletes the old pods of a native DaemonSet under a
/// release, batch by batch ([`native_daemon_sets::plan`]).
pub struct NativeDaemonSetController {
    context: ControllerContext,
    daemon_sets: Cache<KubeDaemonSet>,
    pods: Cache<CachedPod>,
}

impl NativeDaemonSetController {
    const INFO: ControllerInfo = ControllerInfo::new(
        NATIVE_DAEMONSET_CONTROLLER,
        "nativedaemonset-workers",
        Some(ServedResource {
            group: "rollouts.kruise.io",
            version: "v1beta1",
            plural: "batchreleases",
        }),
    );

    fn build(context: ControllerContext) -> Arc<dyn Reconciler> {
        Arc::new(Self { daemon_sets: context.caches.get(), pods: context.caches.get(), context })
    }

    fn controlled(ds: &KubeDaemonSet) -> bool {
        ds.metadata
            .annotations
            .as_ref()
            .is_some_and(|a| a.contains_key(native_daemon_sets::CONTROL_ANNOTATION))
    }

    async fn reconcile_daemon_set(
        &self,
        key: &ObjectKey,
    ) -> Result<Option<Duration>, ReconcileError> {
        let Some(ds) = self.daemon_sets.get(key) else { return Ok(None) };
        if !Self::controlled(&ds) {
            return Ok(None);
        }
        let uid = ds.metadata.uid.clone().unwrap_or_default();
        let pods: Vec<native_daemon_sets::DaemonPod> = self
            .pods
            .controlled_by(&uid)
            .iter()
            .map(|pod| native_daemon_sets::DaemonPod {
                name: pod.metadata.name.clone().unwrap_or_default(),
                uid: pod.metadata.uid.clone().unwrap_or_default(),
                revision: pod
                    .metadata
                    .labels
                    .as_ref()
                    .and_then(|l| l.get("controller-revision-hash"))
                    .cloned()
                    .unwrap_or_default(),
                ready: pod.is_ready(),
                deleting: pod.metadata.deletion_timestamp.is_some(),
                created: pod.metadata.creation_timestamp.as_ref().map(|t| t.0),
            })
            .collect();
        let plan = native_daemon_sets::plan(&ds, &pods);
        let now = jiff::Timestamp::now();
        let owner = PlanOwner::of(ds.as_ref(), serde_json::Value::Null);
        self.context.applier.apply(&owner, &plan, None, now).await?;
        Ok(requeue(plan.requeue_after))
    }
}

impl Reconciler for NativeDaemonSetController {
    fn watches(&self) -> Vec<Watch> {
        // Only DaemonSets under a release: every pod of every other DaemonSet would wake
        // its owner for a reconcile that finds nothing to do.
        vec![
            Watch::own_where(&self.daemon_sets, Self::controlled),
            Watch::controller_owner_where(
                &self.pods,
                &self.daemon_sets,
                "DaemonSet",
                Self::controlled,
            ),
        ]
    }

    fn keys(&self) -> Vec<ObjectKey> {
        self.daemon_sets
            .all()
            .iter()
            .filter(|d| Self::controlled(d))
            .map(|d| ObjectKey::of(d.as_ref()))
            .collect()
    }

    fn reconcile<'a>(
        &'a self,
        key: &'a ObjectKey,
    ) -> BoxFuture<'a, Result<Option<Duration>, ReconcileError>> {
        Box::pin(self.reconcile_daemon_set(key))
    }
}

/// The native DaemonSet controller's registration.
pub fn native_daemon_set_registration() -> Registration {
    Registration { info: NativeDaemonSetController::INFO, build: NativeDaemonSetController::build }
}

/// The AdvancedDeployment controller's registration.
pub fn advanced_deployment_registration() -> Registration {
    Registration {
        info: AdvancedDeploymentController::INFO,
        build: AdvancedDeploymentController::build,
    }
}

/// The TrafficRouting controller: upstream's `trafficrouting-controller`
/// ([`trafficrouting::plan`]).
pub struct TrafficRoutingController {
    context: ControllerContext,
    traffic_routings: Cache<TrafficRouting>,
    network: Network,
}

impl TrafficRoutingController {
    const INFO: ControllerInfo = ControllerInfo::new(
        TRAFFIC_ROUTING_CONTROLLER,
        "trafficrouting-workers",
        Some(ServedResource {
            group: "rollouts.kruise.io",
            version: "v1alpha1",
            plural: "trafficroutings",
        }),
    );

    fn build(context: ControllerContext) -> Arc<dyn Reconciler> {
        Arc::new(Self {
            traffic_routings: context.caches.get(),
            network: Network::new(&context),
            context,
        })
    }

    async fn reconcile_traffic_routing(
        &self,
        key: &ObjectKey,
    ) -> Result<Option<Duration>, ReconcileError> {
        let Some(tr) = self.traffic_routings.get(key) else { return Ok(None) };
        let snapshot = trafficrouting::Snapshot {
            traffic_routing: (*tr).clone(),
            traffic: self.network.objects(&key.namespace, tr.spec.object_ref.first()),
        };
        let now = jiff::Timestamp::now();
        let plan = trafficrouting::plan(&snapshot, now);
        let status = serde_json::to_value(&tr.status).unwrap_or(serde_json::Value::Null);
        let owner = PlanOwner::of(tr.as_ref(), status);
        self.context.applier.apply(&owner, &plan, None, now).await?;
        Ok(requeue(plan.requeue_after))
    }
}

impl Reconciler for TrafficRoutingController {
    fn watches(&self) -> Vec<Watch> {
        let mut watches = vec![Watch::own(&self.traffic_routings)];
        let traffic_routings = self.traffic_routings.clone();
        watches.extend(self.network.watches(move |namespace, name, what| {
            traffic_routings
                .in_namespace(namespace)
                .iter()
                .filter(|t| t.spec.object_ref.first().is_some_and(|r| names(r, name, what)))
                .map(|t| ObjectKey::of(t.as_ref()))
                .collect()
        }));
        watches
    }

    fn keys(&self) -> Vec<ObjectKey> {
        self.traffic_routings.all().iter().map(|t| ObjectKey::of(t.as_ref())).collect()
    }

    fn reconcile<'a>(
        &'a self,
        key: &'a ObjectKey,
    ) -> BoxFuture<'a, Result<Option<Duration>, ReconcileError>> {
        Box::pin(self.reconcile_traffic_routing(key))
    }
}

/// The RolloutHistory controller: upstream's `rollouthistory-controller`
/// ([`history::plan`]), behind Kruise Rollout's `RolloutHistory` gate. Its key is the
/// Rollout's, as upstream's.
pub struct RolloutHistoryController {
    context: ControllerContext,
    rollouts: Cache<Rollout>,
    histories: Cache<RolloutHistory>,
    workloads: Workloads,
    network: Network,
}

impl RolloutHistoryController {
    const INFO: ControllerInfo = ControllerInfo::new(
        ROLLOUT_HISTORY_CONTROLLER,
        "rollouthistory-workers",
        Some(ServedResource {
            group: "rollouts.kruise.io",
            version: "v1alpha1",
            plural: "rollouthistories",
        }),
    )
    .with_gates(&["RolloutHistory"]);

    fn build(context: ControllerContext) -> Arc<dyn Reconciler> {
        Arc::new(Self {
            rollouts: context.caches.get(),
            histories: context.caches.get(),
            workloads: Workloads::new(&context),
            network: Network::new(&context),
            context,
        })
    }

    async fn reconcile_history(&self, key: &ObjectKey) -> Result<Option<Duration>, ReconcileError> {
        let Some(rollout) = self.rollouts.get(key) else { return Ok(None) };
        let recorded = self.workloads.recorded(&key.namespace, &rollout.spec.workload_ref);
        let (workload, selector) = match recorded {
            Some((workload, selector)) => (Some(workload), selector),
            None => (None, None),
        };
        // The pods are read only when a record may be completed (the Rollout Healthy); a
        // workload without a selector (or with one that cannot match) has none to list.
        let healthy = rollout.status.as_ref().and_then(|s| s.phase.clone())
            == Some(kruise_api::rollouts::v1beta1::RolloutPhase::Healthy);
        let pods = match kruise_core::selector::PodSelector::parse(selector.as_ref()) {
            Ok(selector) if workload.is_some() && healthy => self
                .workloads
                .pods
                .in_namespace(&key.namespace)
                .iter()
                .filter(|p| selector.matches(p.metadata.labels.as_ref()))
                .map(|p| history::HistoryPod {
                    name: p.metadata.name.clone().unwrap_or_default(),
                    ip: p.status().and_then(|s| s.pod_ip).unwrap_or_default(),
                    node_name: p.node_name(),
                    labels: p.metadata.labels.clone().unwrap_or_default(),
                    deleting: p.metadata.deletion_timestamp.is_some(),
                })
                .collect(),
            _ => Vec::new(),
        };
        let snapshot = history::Snapshot {
            histories: self
                .histories
                .in_namespace(&key.namespace)
                .iter()
                .map(|h| (**h).clone())
                .collect(),
            workload,
            traffic: self
                .network
                .objects(&key.namespace, rollout::traffic_routings(&rollout).first()),
            pods,
            rollout: (*rollout).clone(),
        };
        let plan = history::plan(&snapshot);
        let owner = PlanOwner::of(rollout.as_ref(), serde_json::Value::Null);
        self.context.applier.apply(&owner, &plan, None, jiff::Timestamp::now()).await?;
        Ok(None)
    }
}

impl Reconciler for RolloutHistoryController {
    fn watches(&self) -> Vec<Watch> {
        // A record wakes the Rollout it names.
        let record_of =
            Watch::new(&self.histories, KeyMapping::Custom, |change: &Change<RolloutHistory>| {
                let Some(h) = change.new.as_deref().or(change.old.as_deref()) else {
                    return Vec::new();
                };
                let rollout =
                    h.metadata.labels.as_ref().and_then(|l| l.get(history::ROLLOUT_NAME_LABEL));
                let namespace = h.metadata.namespace.as_deref().unwrap_or_default();
                rollout.map(|name| ObjectKey::new(namespace, name.as_str())).into_iter().collect()
            });
        vec![Watch::own(&self.rollouts), record_of]
    }

    fn keys(&self) -> Vec<ObjectKey> {
        self.rollouts.all().iter().map(|r| ObjectKey::of(r.as_ref())).collect()
    }

    fn reconcile<'a>(
        &'a self,
        key: &'a ObjectKey,
    ) -> BoxFuture<'a, Result<Option<Duration>, ReconcileError>> {
        Box::pin(self.reconcile_history(key))
    }
}

/// The RolloutHistory controller's registration.
pub fn rollout_history_registration() -> Registration {
    Registration { info: RolloutHistoryController::INFO, build: RolloutHistoryController::build }
}

/// The TrafficRouting controller's registration.
pub fn traffic_routing_registration() -> Registration {
    Registration { info: TrafficRoutingController::INFO, build: TrafficRoutingController::build }
}

/// The Rollout controller's registration.
pub fn rollout_registration() -> Registration {
    Registration { info: RolloutController::INFO, build: RolloutController::build }
}

/// The BatchRelease controller's registration.
pub fn batch_release_registration() -> Registration {
    Registration { info: BatchReleaseController::INFO, build: BatchReleaseController::build }
}

#[cfg(test)]
mod tests {
    use crate::features::FeatureGates;

    /// Kruise Rollout's controller gates: `RolloutHistory` off and `AdvancedDeployment` on by
    /// default, each controller running exactly when its gate is on.
    #[test]
    fn the_gated_controllers_follow_their_gates() {
        let gated = [
            (super::rollout_history_registration(), "RolloutHistory", false),
            (super::advanced_deployment_registration(), "AdvancedDeployment", true),
        ];
        for (registration, gate, default) in gated {
            assert_eq!(registration.enabled(&FeatureGates::default()), default, "{gate}");
            for on in [true, false] {
                let gates = FeatureGates::parse(&format!("{gate}={on}")).expect("a known gate");
                assert_eq!(registration.enabled(&gates), on, "{gate}={on}");
            }
        }
        assert!(super::rollout_registration().enabled(&FeatureGates::default()));
    }
}
