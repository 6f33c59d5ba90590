//! The PersistentPodState controller (`persistentpodstate-controller`), over kruise-core's
//! [`kruise_core::persistentpodstate`], and its pod webhook step.
//!
//! Two kinds of keys, as upstream's:
//! - a PersistentPodState (`namespace/name`): its records from the workload's pods
//!   ([`plan_status`]); it wakes on its own changes, on a change of a pod its workload
//!   controls, and on a change of the workload;
//! - `namespace/generate#<apiVersion>#<Kind>#<name>`: the PersistentPodState a workload's
//!   annotations ask for ([`plan_generation`]); it wakes when a workload's
//!   `kruise.io/auto-generate-persistent-pod-state` or topology annotations change.
//!
//! Advanced StatefulSets are read from the shared cache; apps/v1 StatefulSets are cached as
//! metadata only (for their annotations), and read from the API server when a record needs
//! their replicas. Custom workloads, the kinds of the `PPS_Watch_Custom_Workload_WhiteList`
//! entry of `kruise-configuration`, are watched as dynamic objects ([`custom`]); their
//! replicas are `spec.replicas`. A PersistentPodState whose custom kind leaves the whitelist
//! keeps its records and is no longer followed.

mod custom;

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use futures::future::BoxFuture;
use k8s_openapi::api::apps::v1::StatefulSet as KubeStatefulSet;
use k8s_openapi::api::core::v1::{Node, Pod, PodSpec};
use kruise_api::apps::v1beta1::{PersistentPodState, StatefulSet as AdvancedStatefulSet};
use kruise_api::well_known::annotations::{
    AUTO_GENERATE_PERSISTENT_POD_STATE, PERSISTENT_POD_ANNOTATIONS, PREFERRED_PERSISTENT_TOPOLOGY,
    REQUIRED_PERSISTENT_TOPOLOGY,
};
use kruise_core::admission::pod_scope::PodScopeTerm;
use kruise_core::ordinal::Reserved;
use kruise_core::persistentpodstate::{
    GeneratingWorkload, StatusSnapshot, WorkloadView, group_of, is_stateful_set, plan_generation,
    plan_status, refers_to, step_for,
};
use kube::Client;
use kube::core::PartialObjectMeta;

use crate::admission::pod_feature::{PodFeature, PodStepBox};
use crate::applier::PlanOwner;
use crate::cache::{Cache, Change, ObjectKey, WatchEvents, Watched, namespaced_watch};
use crate::cached_pod::CachedPod;
use crate::controller::{
    ControllerContext, ControllerInfo, KeyMapping, ReconcileError, Reconciler, Registration,
    ServedResource, Watch,
};

/// Upstream's controller name.
pub const CONTROLLER_NAME: &str = "persistentpodstate-controller";

/// The prefix of generation keys.
const GENERATE: &str = "generate#";

crate::watched_namespaced!(PersistentPodState);

/// apps/v1 StatefulSets are cached as metadata only: their annotations ask for generation.
impl Watched for PartialObjectMeta<KubeStatefulSet> {
    fn watch(client: &Client, namespace: Option<&str>) -> WatchEvents<Self> {
        namespaced_watch(client, namespace)
    }
}

const APPS_V1: &str = "apps/v1";
const KRUISE_V1BETA1: &str = "apps.kruise.io/v1beta1";
const STATEFUL_SET: &str = "StatefulSet";

/// The generation annotations of a workload, to tell when they change.
fn generation_annotations(
    meta: &k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta,
) -> [Option<String>; 4] {
    let get = |key: &str| meta.annotations.as_ref().and_then(|a| a.get(key)).cloned();
    [
        get(AUTO_GENERATE_PERSISTENT_POD_STATE),
        get(REQUIRED_PERSISTENT_TOPOLOGY),
        get(PREFERRED_PERSISTENT_TOPOLOGY),
        get(PERSISTENT_POD_ANNOTATIONS),
    ]
}

fn generate_key(namespace: &str, api_version: &str, kind: &str, name: &str) -> ObjectKey {
    ObjectKey::new(namespace, format!("{GENERATE}{api_version}#{kind}#{name}"))
}

/// The keys a workload change wakes: its generation key when its annotations change (or it
/// appears with them), and the PersistentPodStates targeting it.
fn workload_keys(
    states: &Cache<PersistentPodState>,
    api_version: &str,
    kind: &str,
    old: Option<&k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta>,
    new: Option<&k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta>,
) -> Vec<ObjectKey> {
    let Some(meta) = new.or(old) else { return Vec::new() };
    let namespace = meta.namespace.clone().unwrap_or_default();
    let name = meta.name.clone().unwrap_or_default();
    let mut keys = Vec::new();
    let annotations = |m: Option<&k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta>| {
        m.map(generation_annotations)
    };
    let (before, after) = (annotations(old), annotations(new));
    let asks = |a: &Option<[Option<String>; 4]>| a.as_ref().is_some_and(|a| a[0].is_some());
    if new.is_some() && before != after && (asks(&before) || asks(&after)) {
        keys.push(generate_key(&namespace, api_version, kind, &name));
    }
    keys.extend(
        states
            .in_namespace(&namespace)
            .iter()
            .filter(|s| refers_to(&s.spec.target_reference, api_version, kind, &name))
            .map(|s| ObjectKey::of(s.as_ref())),
    );
    keys
}

/// The PersistentPodState controller.
pub struct PersistentPodStateController {
    context: ControllerContext,
    states: Cache<PersistentPodState>,
    pods: Cache<CachedPod>,
    nodes: Cache<Node>,
    advanced: Cache<AdvancedStatefulSet>,
    stateful_sets: Cache<PartialObjectMeta<KubeStatefulSet>>,
    custom: Arc<custom::CustomWorkloads>,
}

/// The workload a PersistentPodState's reference finds.
enum Target {
    /// The workload, and its UID.
    Found(WorkloadView, String),
    /// There is none: the records go.
    Gone,
    /// A custom kind the whitelist does not name: left as it is.
    NotFollowed,
    /// A custom kind whose objects are not listed yet: looked at again soon.
    Loading,
}

/// How soon a reconcile waiting for a custom kind's first list runs again.
const LOADING_RETRY: Duration = Duration::from_secs(1);

/// A cached pod as the planner reads it: metadata, status and `spec.nodeName`.
fn bound_pod(pod: &CachedPod) -> Pod {
    let mut light = pod.without_spec();
    light.spec = Some(PodSpec {
        node_name: Some(pod.node_name()).filter(|n| !n.is_empty()),
        ..PodSpec::default()
    });
    light
}

impl PersistentPodStateController {
    const INFO: ControllerInfo = ControllerInfo::new(
        CONTROLLER_NAME,
        "persistentpodstate-workers",
        Some(ServedResource {
            group: "apps.kruise.io",
            version: "v1beta1",
            plural: "persistentpodstates",
        }),
    );

    fn build(context: ControllerContext) -> Arc<dyn Reconciler> {
        Arc::new(Self {
            states: context.caches.get(),
            pods: context.caches.get(),
            nodes: context.caches.get(),
            advanced: context.caches.get(),
            stateful_sets: context.caches.get(),
            custom: Arc::default(),
            context,
        })
    }

    /// The workload a reference names.
    async fn workload(
        &self,
        namespace: &str,
        api_version: &str,
        kind: &str,
        name: &str,
    ) -> Result<Target, ReconcileError> {
        let key = ObjectKey::new(namespace, name);
        if !is_stateful_set(api_version, kind) {
            return Ok(match self.custom.lookup(namespace, api_version, kind, name) {
                custom::Lookup::NotWhitelisted => Target::NotFollowed,
                custom::Lookup::Loading => Target::Loading,
                custom::Lookup::Missing => Target::Gone,
                custom::Lookup::Found(object, _) => {
                    let view = WorkloadView {
                        replicas: custom::replicas_of(&object),
                        start: 0,
                        reserved: Reserved::default(),
                        deleting: object.metadata.deletion_timestamp.is_some(),
                    };
                    Target::Found(view, object.metadata.uid.clone().unwrap_or_default())
                }
            });
        }
        let found = match group_of(api_version) {
            "apps.kruise.io" => self.advanced.get(&key).map(|set| {
                let view = WorkloadView {
                    replicas: set.spec.replicas.unwrap_or(1),
                    start: set.spec.ordinals.as_ref().map_or(0, |o| o.start),
                    reserved: Reserved::parse(&set.spec.reserve_ordinals).unwrap_or_default(),
                    deleting: set.metadata.deletion_timestamp.is_some(),
                };
                (view, set.metadata.uid.clone().unwrap_or_default())
            }),
            _ => {
                if self.stateful_sets.get(&key).is_none() {
                    return Ok(Target::Gone);
                }
                let set = self
                    .context
                    .applier
                    .get_opt::<KubeStatefulSet>(namespace, name)
                    .await
                    .map_err(|source| ReconcileError::Write {
                        action: "get statefulset",
                        target: name.to_owned(),
                        source,
                    })?;
                set.map(|set| {
                    let spec = set.spec;
                    let view = WorkloadView {
                        replicas: spec.replicas.unwrap_or(1),
                        start: spec.ordinals.and_then(|o| o.start).unwrap_or(0),
                        reserved: Reserved::default(),
                        deleting: set.metadata.deletion_timestamp.is_some(),
                    };
                    (view, set.metadata.uid.unwrap_or_default())
                })
            }
        };
        Ok(found.map_or(Target::Gone, |(view, uid)| Target::Found(view, uid)))
    }

    async fn reconcile_state(&self, key: &ObjectKey) -> Result<Option<Duration>, ReconcileError> {
        let Some(state) = self.states.get(key) else { return Ok(None) };
        let target = &state.spec.target_reference;
        let workload = match self
            .workload(&key.namespace, &target.api_version, &target.kind, &target.name)
            .await?
        {
            Target::Found(view, uid) => Some((view, uid)),
            Target::Gone => None,
            Target::NotFollowed => return Ok(None),
            Target::Loading => return Ok(Some(LOADING_RETRY)),
        };
        let pods: Vec<Pod> = workload
            .as_ref()
            .map(|(_, uid)| self.pods.controlled_by(uid).iter().map(|p| bound_pod(p)).collect())
            .unwrap_or_default();
        let nodes = self.nodes.clone();
        let node_labels = move |name: &str| -> Option<BTreeMap<String, String>> {
            nodes
                .get(&ObjectKey::new("", name))
                .map(|n| n.metadata.labels.clone().unwrap_or_default())
        };
        let now = jiff::Timestamp::now();
        let plan = plan_status(
            &StatusSnapshot {
                state: &state,
                workload: workload.map(|(view, _)| view),
                pods: pods.iter().collect(),
                node_labels: &node_labels,
            },
            now,
        );
        if plan.status.is_none() {
            return Ok(None);
        }
        let status = serde_json::to_value(&state.status).unwrap_or(serde_json::Value::Null);
        let owner = PlanOwner::of(state.as_ref(), status);
        self.context.applier.apply_or_replan(&owner, &plan, now).await
    }

    async fn reconcile_generation(
        &self,
        key: &ObjectKey,
    ) -> Result<Option<Duration>, ReconcileError> {
        let parts: Vec<&str> = key.name.split('#').collect();
        let [_, api_version, kind, name] = parts.as_slice() else { return Ok(None) };
        let existing = self.states.get(&ObjectKey::new(key.namespace.as_str(), *name));
        let workload_key = ObjectKey::new(key.namespace.as_str(), *name);
        let now = jiff::Timestamp::now();
        let empty = BTreeMap::new();
        let (meta, owner) = match group_of(api_version) {
            _ if !is_stateful_set(api_version, kind) => {
                match self.custom.lookup(&key.namespace, api_version, kind, name) {
                    custom::Lookup::Found(object, resource) => {
                        let owner = PlanOwner {
                            resource,
                            namespace: Some(key.namespace.clone()),
                            name: (*name).to_owned(),
                            reference: k8s_openapi::api::core::v1::ObjectReference {
                                api_version: Some((*api_version).to_owned()),
                                kind: Some((*kind).to_owned()),
                                name: Some((*name).to_owned()),
                                namespace: Some(key.namespace.clone()),
                                uid: object.metadata.uid.clone(),
                                resource_version: object.metadata.resource_version.clone(),
                                ..Default::default()
                            },
                            status: serde_json::Value::Null,
                            status_guard: None,
                        };
                        (object.metadata.clone(), owner)
                    }
                    custom::Lookup::Loading => return Ok(Some(LOADING_RETRY)),
                    custom::Lookup::Missing | custom::Lookup::NotWhitelisted => return Ok(None),
                }
            }
            "apps.kruise.io" => match self.advanced.get(&workload_key) {
                Some(set) => {
                    (set.metadata.clone(), PlanOwner::of(set.as_ref(), serde_json::Value::Null))
                }
                None => return Ok(None),
            },
            "apps" => match self.stateful_sets.get(&workload_key) {
                Some(set) => {
                    (set.metadata.clone(), PlanOwner::of(set.as_ref(), serde_json::Value::Null))
                }
                None => return Ok(None),
            },
            _ => return Ok(None),
        };
        let workload = GeneratingWorkload {
            api_version,
            kind,
            namespace: &key.namespace,
            name,
            uid: meta.uid.as_deref().unwrap_or_default(),
            annotations: meta.annotations.as_ref().unwrap_or(&empty),
        };
        let plan = plan_generation(&workload, existing.as_deref(), now);
        if plan.actions.is_empty() {
            return Ok(None);
        }
        self.context.applier.apply_or_replan(&owner, &plan, now).await
    }
}

impl Reconciler for PersistentPodStateController {
    fn watches(&self) -> Vec<Watch> {
        let (for_pods, for_advanced, for_sets) =
            (self.states.clone(), self.states.clone(), self.states.clone());
        let follow = {
            let (store, states, caches) =
                (self.custom.clone(), self.states.clone(), self.context.caches.clone());
            let manager_namespace = self.context.settings.manager_namespace.clone();
            let for_custom = self.states.clone();
            let keys_of: custom::KeysOf = Arc::new(move |api_version, kind, old, new| {
                workload_keys(&for_custom, api_version, kind, old, new)
            });
            Watch::external("custom workloads", move |queue| {
                let follow = custom::Follow { store, states, queue, manager_namespace, keys_of };
                caches.spawn_watch("PersistentPodState custom workloads", move |client, ns| {
                    follow.run(client, ns)
                });
            })
        };
        vec![
            follow,
            Watch::own(&self.states),
            Watch::new(&self.pods, KeyMapping::Custom, move |change: &Change<CachedPod>| {
                let Some(pod) = change.new.as_deref().or(change.old.as_deref()) else {
                    return Vec::new();
                };
                let namespace = pod.metadata.namespace.as_deref().unwrap_or_default();
                let Some(owner) = pod
                    .metadata
                    .owner_references
                    .iter()
                    .flatten()
                    .find(|r| r.controller == Some(true))
                else {
                    return Vec::new();
                };
                for_pods
                    .in_namespace(namespace)
                    .iter()
                    .filter(|s| {
                        refers_to(
                            &s.spec.target_reference,
                            &owner.api_version,
                            &owner.kind,
                            &owner.name,
                        )
                    })
                    .map(|s| ObjectKey::of(s.as_ref()))
                    .collect()
            }),
            Watch::new(
                &self.advanced,
                KeyMapping::Custom,
                move |change: &Change<AdvancedStatefulSet>| {
                    workload_keys(
                        &for_advanced,
                        KRUISE_V1BETA1,
                        STATEFUL_SET,
                        change.old.as_deref().map(|s| &s.metadata),
                        change.new.as_deref().map(|s| &s.metadata),
                    )
                },
            ),
            Watch::new(
                &self.stateful_sets,
                KeyMapping::Custom,
                move |change: &Change<PartialObjectMeta<KubeStatefulSet>>| {
                    workload_keys(
                        &for_sets,
                        APPS_V1,
                        STATEFUL_SET,
                        change.old.as_deref().map(|s| &s.metadata),
                        change.new.as_deref().map(|s| &s.metadata),
                    )
                },
            ),
        ]
    }

    fn keys(&self) -> Vec<ObjectKey> {
        let mut keys: Vec<ObjectKey> =
            self.states.all().iter().map(|s| ObjectKey::of(s.as_ref())).collect();
        for set in self.advanced.all() {
            if generation_annotations(&set.metadata)[0].is_some() {
                let ns = set.metadata.namespace.clone().unwrap_or_default();
                keys.push(generate_key(
                    &ns,
                    KRUISE_V1BETA1,
                    STATEFUL_SET,
                    set.metadata.name.as_deref().unwrap_or_default(),
                ));
            }
        }
        for set in self.stateful_sets.all() {
            if generation_annotations(&set.metadata)[0].is_some() {
                let ns = set.metadata.namespace.clone().unwrap_or_default();
                keys.push(generate_key(
                    &ns,
                    APPS_V1,
                    STATEFUL_SET,
                    set.metadata.name.as_deref().unwrap_or_default(),
                ));
            }
        }
        for (api_version, kind, object) in self.custom.all() {
            if generation_annotations(&object.metadata)[0].is_some() {
                let ns = object.metadata.namespace.clone().unwrap_or_default();
                let name = object.metadata.name.as_deref().unwrap_or_default();
                keys.push(generate_key(&ns, &api_version, &kind, name));
            }
        }
        keys
    }

    fn reconcile<'a>(
        &'a self,
        key: &'a ObjectKey,
    ) -> BoxFuture<'a, Result<Option<Duration>, ReconcileError>> {
        if key.name.starts_with(GENERATE) {
            Box::pin(self.reconcile_generation(key))
        } else {
            Box::pin(self.reconcile_state(key))
        }
    }
}

/// The controller's registration.
pub fn registration() -> Registration {
    Registration {
        info: PersistentPodStateController::INFO,
        build: PersistentPodStateController::build,
    }
}

/// The pod webhook's PersistentPodState step: a pod created under a name its workload's
/// PersistentPodState has a record of goes back to the recorded topology. A pod whose
/// controller is a custom workload gets it while the whitelist names the kind (read at such a
/// pod's creation, as upstream reads it at every pod's).
#[derive(Clone)]
pub struct PersistentPodStateFeature {
    states: Cache<PersistentPodState>,
    client: Client,
    manager_namespace: String,
}

impl PersistentPodStateFeature {
    /// Over the shared PersistentPodState cache; `kruise-configuration` is read in
    /// `manager_namespace`.
    pub fn new(
        caches: &crate::cache::SharedCaches,
        client: Client,
        manager_namespace: &str,
    ) -> Self {
        Self { states: caches.get(), client, manager_namespace: manager_namespace.to_owned() }
    }
}

impl PodFeature for PersistentPodStateFeature {
    fn name(&self) -> &'static str {
        "PersistentPodState"
    }

    fn is_synced(&self) -> bool {
        self.states.is_synced()
    }

    fn wait_synced(&self) -> BoxFuture<'_, ()> {
        Box::pin(self.states.wait_synced())
    }

    fn on_create<'a>(
        &'a self,
        pod: &'a Pod,
        namespace: &'a str,
        _dry_run: bool,
    ) -> BoxFuture<'a, Result<Option<PodStepBox>, String>> {
        Box::pin(async move {
            let Some(owner) =
                pod.metadata.owner_references.iter().flatten().find(|r| r.controller == Some(true))
            else {
                return Ok(None);
            };
            let Some(state) = self
                .states
                .in_namespace(namespace)
                .into_iter()
                .filter(|s| s.metadata.deletion_timestamp.is_none())
                .find(|s| {
                    refers_to(
                        &s.spec.target_reference,
                        &owner.api_version,
                        &owner.kind,
                        &owner.name,
                    )
                })
            else {
                return Ok(None);
            };
            if !is_stateful_set(&owner.api_version, &owner.kind) {
                let whitelist =
                    crate::configuration::read_pps_whitelist(&self.client, &self.manager_namespace)
                        .await?;
                if !kruise_core::persistentpodstate::is_supported_target(
                    &owner.api_version,
                    &owner.kind,
                    &whitelist,
                ) {
                    return Ok(None);
                }
            }
            Ok(step_for(pod, &state).map(|step| Box::new(step) as PodStepBox))
        })
    }

    fn scope(&self) -> Vec<PodScopeTerm> {
        let mut namespaces: Vec<String> = self
            .states
            .all()
            .iter()
            .filter(|s| s.status.as_ref().is_some_and(|st| !st.pod_states.is_empty()))
            .filter_map(|s| s.metadata.namespace.clone())
            .collect();
        namespaces.sort();
        namespaces.dedup();
        namespaces.iter().map(|ns| PodScopeTerm::namespace(ns)).collect()
    }

    fn watch_scope(&self, wake: Arc<tokio::sync::Notify>) {
        // Records come and go in the status: any change may widen or narrow the scope.
        self.states.subscribe(Arc::new(move |_| wake.notify_one()));
    }
}
