//! The ResourceDistribution controller (`resourcedistribution-controller`), over kruise-core's
//! planner ([`kruise_core::resourcedistribution`]): a Secret or ConfigMap copied into the
//! namespaces a distribution targets, and kept in sync. For each distribution, one [`plan`]
//! from the distribution, the namespaces and the objects of its resource's name, carried out
//! by the applier.
//!
//! A distribution wakes on its own changes, on any namespace created, deleted or relabelled,
//! and on a change of an object it controls or of its resource's kind and name.
//!
//! Two things the controller remembers between plans, both fed to the planner as data:
//! - **Its writes until the cache shows them.** A copy just created or patched is given to the
//!   planner as written until the watch delivers it (and a deleted one as gone), so that a plan
//!   made in between neither writes it again nor counts it out. A write not seen within the
//!   expectation timeout is forgotten.
//! - **The writes that failed** in the last round ([`Snapshot::failures`]), reported in the
//!   status under their condition until they succeed.
//!
//! Secrets and ConfigMaps are cached for the whole cluster, but only copies keep their data:
//! of any other, only the metadata is kept.

use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use futures::future::BoxFuture;
use k8s_openapi::api::core::v1::{ConfigMap, Namespace, Secret};
use kruise_api::apps::v1beta1::ResourceDistribution;
use kruise_api::well_known::annotations::RESOURCE_DISTRIBUTION_SOURCE;
use kruise_core::plan::Action;
use kruise_core::resourcedistribution::{
    Failure, NamespaceView, Operation, RESOURCE_DISTRIBUTION, Resource, ResourceKind, Snapshot,
    plan,
};
use kube::Client;
use kube::core::PartialObjectMeta;
use serde_json::Value;

use crate::applier::{ActionOutcome, PlanOwner};
use crate::cache::{
    Cache, Change, ObjectKey, WatchEvents, Watched, cluster_watch, namespaced_watch,
    strip_managed_fields,
};
use crate::controller::{
    ControllerContext, ControllerInfo, KeyMapping, ReconcileError, Reconciler, Registration,
    ServedResource, Watch,
};

/// Upstream's controller name.
pub const CONTROLLER_NAME: &str = "resourcedistribution-controller";

impl Watched for ResourceDistribution {
    fn watch(client: &Client, _namespace: Option<&str>) -> WatchEvents<Self> {
        cluster_watch(client)
    }
}

/// Whether `meta` is (or was) a distribution's copy: owned by one, or naming one.
fn is_copy(meta: &k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta) -> bool {
    let owned = meta.owner_references.iter().flatten().any(|r| {
        r.kind == RESOURCE_DISTRIBUTION.kind && r.api_version.starts_with("apps.kruise.io/")
    });
    owned || meta.annotations.as_ref().is_some_and(|a| a.contains_key(RESOURCE_DISTRIBUTION_SOURCE))
}

/// Secrets: copies whole, any other as metadata only.
impl Watched for Secret {
    fn watch(client: &Client, namespace: Option<&str>) -> WatchEvents<Self> {
        namespaced_watch(client, namespace)
    }

    fn strip(obj: &mut Self) {
        strip_managed_fields(obj);
        if !is_copy(&obj.metadata) {
            obj.data = None;
            obj.string_data = None;
        }
    }
}

/// ConfigMaps: copies whole, any other as metadata only.
impl Watched for ConfigMap {
    fn watch(client: &Client, namespace: Option<&str>) -> WatchEvents<Self> {
        namespaced_watch(client, namespace)
    }

    fn strip(obj: &mut Self) {
        strip_managed_fields(obj);
        if !is_copy(&obj.metadata) {
            obj.data = None;
            obj.binary_data = None;
        }
    }
}

/// A write of this controller the cache may not show yet.
#[derive(Clone, Debug)]
struct Written {
    /// The copy as written (`None`: deleted).
    object: Option<Arc<Value>>,
    /// The resourceVersion the server answered.
    resource_version: Option<String>,
    at: Instant,
}

/// What the controller remembers of one distribution.
#[derive(Debug, Default)]
struct Memory {
    /// By namespace.
    written: HashMap<String, Written>,
    failures: Vec<Failure>,
}

/// The ResourceDistribution controller.
pub struct ResourceDistributionController {
    context: ControllerContext,
    distributions: Cache<ResourceDistribution>,
    namespaces: Cache<PartialObjectMeta<Namespace>>,
    secrets: Cache<Secret>,
    config_maps: Cache<ConfigMap>,
    memory: Mutex<HashMap<String, Memory>>,
}

fn to_value<K: serde::Serialize>(object: &K) -> Option<Arc<Value>> {
    serde_json::to_value(object).ok().map(Arc::new)
}

fn resource_version(object: &Value) -> Option<&str> {
    object.pointer("/metadata/resourceVersion").and_then(Value::as_str)
}

impl ResourceDistributionController {
    const INFO: ControllerInfo = ControllerInfo::new(
        CONTROLLER_NAME,
        "resourcedistribution-workers",
        Some(ServedResource {
            group: "apps.kruise.io",
            version: "v1beta1",
            plural: "resourcedistributions",
        }),
    )
    .with_gates(&["ResourceDistributionGate"]);

    fn build(context: ControllerContext) -> Arc<dyn Reconciler> {
        Arc::new(Self {
            distributions: context.caches.get(),
            namespaces: context.caches.get(),
            secrets: context.caches.get(),
            config_maps: context.caches.get(),
            memory: Mutex::new(HashMap::new()),
            context,
        })
    }

    fn memory(&self) -> std::sync::MutexGuard<'_, HashMap<String, Memory>> {
        self.memory.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The object of `kind` at `key`, as JSON.
    fn cached(&self, kind: ResourceKind, key: &ObjectKey) -> Option<Arc<Value>> {
        match kind {
            ResourceKind::Secret => self.secrets.get(key).and_then(|o| to_value(o.as_ref())),
            ResourceKind::ConfigMap => self.config_maps.get(key).and_then(|o| to_value(o.as_ref())),
        }
    }

    /// The objects of the resource's name in every namespace, and every object the
    /// distribution controls, with this controller's unseen writes laid over them.
    fn copies(
        &self,
        distribution: &ResourceDistribution,
        resource: Option<&Resource<'_>>,
        namespaces: &[NamespaceView],
    ) -> Vec<Arc<Value>> {
        let uid = distribution.metadata.uid.as_deref().unwrap_or_default();
        let mut found: BTreeMap<(String, String, String), Arc<Value>> = BTreeMap::new();
        let mut add = |object: Arc<Value>| {
            let text =
                |p: &str| object.pointer(p).and_then(Value::as_str).unwrap_or_default().to_owned();
            found.insert(
                (text("/metadata/namespace"), text("/kind"), text("/metadata/name")),
                object,
            );
        };
        if !uid.is_empty() {
            self.secrets
                .controlled_by(uid)
                .iter()
                .filter_map(|o| to_value(o.as_ref()))
                .for_each(&mut add);
            self.config_maps
                .controlled_by(uid)
                .iter()
                .filter_map(|o| to_value(o.as_ref()))
                .for_each(&mut add);
        }
        let Some(resource) = resource else {
            return found.into_values().collect();
        };
        for namespace in namespaces {
            if let Some(object) =
                self.cached(resource.kind, &ObjectKey::new(&namespace.name, resource.name))
            {
                add(object);
            }
        }
        // The writes the cache does not show yet.
        let name = distribution.metadata.name.clone().unwrap_or_default();
        let timeout = Duration::try_from(self.context.settings.expectation_timeout)
            .unwrap_or(Duration::from_secs(30));
        let mut memory = self.memory();
        let Some(memory) = memory.get_mut(&name) else {
            return found.into_values().collect();
        };
        let kind = resource.kind.name().to_owned();
        memory.written.retain(|namespace, written| {
            let key = (namespace.clone(), kind.clone(), resource.name.to_owned());
            let cached = found.get(&key);
            let seen = match (&written.object, cached) {
                (None, None) => true,
                (None, Some(_)) => false,
                (Some(_), None) => false,
                (Some(_), Some(cached)) => {
                    match (&written.resource_version, resource_version(cached)) {
                        (Some(wrote), Some(read)) => {
                            kruise_core::expectations::is_resource_version_newer(wrote, read)
                        }
                        _ => true,
                    }
                }
            };
            if seen || written.at.elapsed() > timeout {
                return false;
            }
            match &written.object {
                Some(object) => {
                    found.insert(key, object.clone());
                }
                None => {
                    found.remove(&key);
                }
            }
            true
        });
        found.into_values().collect()
    }

    /// Records how the plan's writes went: the ones done, until the cache shows them; the
    /// ones failed, for the next status.
    fn remember(
        &self,
        name: &str,
        snapshot: &Snapshot,
        actions: &[Action],
        outcomes: &[ActionOutcome],
    ) {
        let mut memory = self.memory();
        let memory = memory.entry(name.to_owned()).or_default();
        memory.failures.clear();
        for (action, outcome) in actions.iter().zip(outcomes) {
            let (namespace, operation) = match action {
                Action::CreateObject { target, .. } => (&target.namespace, Operation::Create),
                Action::PatchObject { target, .. } => (&target.namespace, Operation::Update),
                Action::DeleteObject { target } => (&target.namespace, Operation::Delete),
                _ => continue,
            };
            let namespace = namespace.clone().unwrap_or_default();
            match outcome {
                ActionOutcome::Done(resource_version) => {
                    let object = match action {
                        Action::CreateObject { body, .. } => Some(body.clone()),
                        Action::PatchObject { target, patch, .. } => snapshot
                            .copies
                            .iter()
                            .find(|o| {
                                o.pointer("/metadata/namespace").and_then(Value::as_str)
                                    == target.namespace.as_deref()
                                    && o.pointer("/metadata/name").and_then(Value::as_str)
                                        == Some(target.name.as_str())
                            })
                            .map(|o| {
                                let mut patched = o.as_ref().clone();
                                json_patch::merge(&mut patched, patch.body());
                                Arc::new(patched)
                            }),
                        _ => None,
                    };
                    let object = object.map(|o| {
                        let mut o = o.as_ref().clone();
                        if let (Some(rv), Some(meta)) = (resource_version, o.get_mut("metadata")) {
                            meta["resourceVersion"] = Value::String(rv.clone());
                        }
                        Arc::new(o)
                    });
                    let deleted = matches!(action, Action::DeleteObject { .. });
                    if deleted || object.is_some() {
                        memory.written.insert(
                            namespace,
                            Written {
                                object: if deleted { None } else { object },
                                resource_version: resource_version.clone(),
                                at: Instant::now(),
                            },
                        );
                    }
                }
                ActionOutcome::Failed(message) => {
                    memory.failures.push(Failure {
                        namespace,
                        operation,
                        message: message.clone(),
                    });
                }
                _ => {}
            }
        }
    }

    async fn reconcile_distribution(
        &self,
        key: &ObjectKey,
    ) -> Result<Option<Duration>, ReconcileError> {
        let Some(distribution) = self.distributions.get(key) else {
            self.memory().remove(&key.name);
            return Ok(None);
        };
        let namespaces: Vec<NamespaceView> = self
            .namespaces
            .all()
            .iter()
            .map(|ns| NamespaceView {
                name: ns.metadata.name.clone().unwrap_or_default(),
                labels: ns.metadata.labels.clone().unwrap_or_default(),
                terminating: ns.metadata.deletion_timestamp.is_some(),
            })
            .collect();
        let resource = Resource::parse(&distribution.spec.resource.0).ok();
        let copies = self.copies(&distribution, resource.as_ref(), &namespaces);
        let failures = self.memory().get(&key.name).map(|m| m.failures.clone()).unwrap_or_default();
        let snapshot =
            Snapshot { distribution: (*distribution).clone(), namespaces, copies, failures };
        let now = jiff::Timestamp::now();
        let plan = plan(&snapshot, now);
        let status = serde_json::to_value(&distribution.status).unwrap_or(Value::Null);
        let owner = PlanOwner::of(distribution.as_ref(), status);
        let (outcomes, result) =
            self.context.applier.apply_reporting(&owner, &plan, None, now).await;
        self.remember(&key.name, &snapshot, &plan.actions, &outcomes);
        result.map(|()| None)
    }

    /// The distributions a change of an object of `kind` concerns: the one controlling it, and
    /// those whose resource has its kind and name.
    fn concerned(
        distributions: &Cache<ResourceDistribution>,
        kind: ResourceKind,
        metas: [Option<&k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta>; 2],
    ) -> Vec<ObjectKey> {
        let mut keys = Vec::new();
        let mut names = Vec::new();
        for meta in metas.into_iter().flatten() {
            for owner in meta.owner_references.iter().flatten() {
                if owner.kind == RESOURCE_DISTRIBUTION.kind && owner.controller == Some(true) {
                    keys.push(ObjectKey::new("", owner.name.clone()));
                }
            }
            names.extend(meta.name.clone());
        }
        if !names.is_empty() {
            for distribution in distributions.all() {
                let wants = Resource::parse(&distribution.spec.resource.0)
                    .is_ok_and(|r| r.kind == kind && names.iter().any(|n| n == r.name));
                if wants {
                    keys.push(ObjectKey::of(distribution.as_ref()));
                }
            }
        }
        keys.sort();
        keys.dedup();
        keys
    }
}

impl Reconciler for ResourceDistributionController {
    fn watches(&self) -> Vec<Watch> {
        let all = self.distributions.clone();
        let (for_secrets, for_config_maps) =
            (self.distributions.clone(), self.distributions.clone());
        vec![
            Watch::own(&self.distributions),
            // A namespace created, deleted or relabelled may start or stop being a target.
            Watch::new(
                &self.namespaces,
                KeyMapping::Custom,
                move |change: &Change<PartialObjectMeta<Namespace>>| {
                    let moved = match (&change.old, &change.new) {
                        (Some(old), Some(new)) => {
                            old.metadata.labels != new.metadata.labels
                                || old.metadata.deletion_timestamp
                                    != new.metadata.deletion_timestamp
                        }
                        _ => true,
                    };
                    if !moved {
                        return Vec::new();
                    }
                    all.all().iter().map(|d| ObjectKey::of(d.as_ref())).collect()
                },
            ),
            Watch::new(&self.secrets, KeyMapping::Custom, move |change: &Change<Secret>| {
                Self::concerned(
                    &for_secrets,
                    ResourceKind::Secret,
                    [
                        change.old.as_deref().map(|o| &o.metadata),
                        change.new.as_deref().map(|o| &o.metadata),
                    ],
                )
            }),
            Watch::new(&self.config_maps, KeyMapping::Custom, move |change: &Change<ConfigMap>| {
                Self::concerned(
                    &for_config_maps,
                    ResourceKind::ConfigMap,
                    [
                        change.old.as_deref().map(|o| &o.metadata),
                        change.new.as_deref().map(|o| &o.metadata),
                    ],
                )
            }),
        ]
    }

    fn keys(&self) -> Vec<ObjectKey> {
        self.distributions.all().iter().map(|d| ObjectKey::of(d.as_ref())).collect()
    }

    fn reconcile<'a>(
        &'a self,
        key: &'a ObjectKey,
    ) -> BoxFuture<'a, Result<Option<Duration>, ReconcileError>> {
        Box::pin(self.reconcile_distribution(key))
    }
}

/// The controller's registration.
pub fn registration() -> Registration {
    Registration {
        info: ResourceDistributionController::INFO,
        build: ResourceDistributionController::build,
    }
}
