//! WorkloadSpread in the manager: the pod webhooks' reservations and the controller, over
//! kruise-core's pure planner ([`kruise_core::workloadspread`]).
//!
//! - **Pod creation** (`/mutate-pod`, its WorkloadSpread step): the pod's controller chain
//!   (a ReplicaSet's Deployment too) picks the WorkloadSpread targeting it; the planner
//!   chooses the first subset with room, and the choice is reserved in the WorkloadSpread's
//!   status (`creatingPods`, `missingReplicas`) with an optimistic write checked against its
//!   resourceVersion before the pod is admitted. A conflict reads the WorkloadSpread again
//!   and chooses again, so two pods created at once never overfill a subset. Reservations for
//!   one WorkloadSpread are made one at a time in this process.
//! - **Pod deletion and eviction** (`/validate-pod`) release the pod's place
//!   (`deletingPods`), the same way. They never refuse the pod.
//! - **The controller** (`workloadspread-controller`) recomputes the status from the pods,
//!   writes `controller.kubernetes.io/pod-deletion-cost`, adopts pods created before the
//!   WorkloadSpread by their node, and, with the Adaptive strategy, deletes pods that stay
//!   unschedulable in a subset past `rescheduleCriticalSeconds` so their workload recreates
//!   them in the next subset.
//! - **Blast radius:** pods the webhook placed carry [`MATCHED_LABEL`]; the pod DELETE
//!   webhook's `objectSelector` selects only them, with the pod webhooks' failure policy.
//!
//! Targets are read through their scale subresource ([`crate::scale`]): replicas for
//! percentage `maxReplicas`, and the selector that finds the target's pods.

use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex, RwLock};
use std::time::Duration;

use futures::future::BoxFuture;
use jiff::Timestamp;
use k8s_openapi::api::apps::v1::ReplicaSet;
use k8s_openapi::api::core::v1::{Node, Pod};
use kruise_api::apps::v1beta1::WorkloadSpread;
use kruise_core::admission::pod_chain::{PodMutationError, PodMutator, PodStep};
use kruise_core::admission::pod_edit::PodEdit;
use kruise_core::workloadspread::{
    self as core, CustomWorkloadWhitelist, InjectedSubset, PodOperation, WorkloadRef,
};
use kube::api::{Api, PostParams};
use kube::core::PartialObjectMeta;
use kube::{Client, ResourceExt as _};
use serde_json::Value;

use crate::applier::PlanOwner;
use crate::cache::{Cache, ObjectKey, SharedCaches, WatchEvents, Watched, namespaced_watch};
use crate::cached_pod::CachedPod;
use crate::controller::{
    ControllerContext, ControllerInfo, KeyMapping, ReconcileError, Reconciler, Registration,
    ServedResource, Watch,
};

/// The label on pods a WorkloadSpread placed, which the pod DELETE webhook's
/// `objectSelector` selects. Its value is `"true"`.
pub use kruise_core::workloadspread::MATCHED_LABEL;

/// The `kruise-configuration` key listing custom workloads (upstream's).
pub const WHITELIST_KEY: &str = "WorkloadSpread_Watch_Custom_Workload_WhiteList";

/// The ConfigMap holding the runtime configuration, in the manager's namespace.
pub const CONFIGURATION_NAME: &str = "kruise-configuration";

crate::watched_namespaced!(WorkloadSpread);

/// ReplicaSets are cached as metadata only: a Deployment's pods reach it through their
/// ReplicaSet's controller reference.
impl Watched for PartialObjectMeta<ReplicaSet> {
    fn watch(client: &Client, namespace: Option<&str>) -> WatchEvents<Self> {
        namespaced_watch(client, namespace)
    }
}

/// How many times a reservation is tried against other writers (client-go's
/// `retry.DefaultBackoff` has 4 steps; a busy WorkloadSpread gets a few more here).
const RESERVATION_ATTEMPTS: u32 = 8;

/// How long the custom-workload whitelist is trusted before it is read again.
const WHITELIST_TTL: Duration = Duration::from_secs(30);

/// What the controller and the webhooks share: per WorkloadSpread the last status this
/// process wrote (newer than the cache until the watch catches up) behind a lock that makes
/// one reservation at a time, the scale reader and the custom-workload whitelist.
#[derive(Default)]
pub struct WsState {
    spreads: Mutex<HashMap<String, Arc<tokio::sync::Mutex<Option<WorkloadSpread>>>>>,
    scales: crate::scale::ScaleReader,
    whitelist: RwLock<Option<(std::time::Instant, Arc<CustomWorkloadWhitelist>)>>,
    /// Selectors of resolved targets, by WorkloadSpread uid (maps a pod event to its
    /// WorkloadSpreads).
    selectors:
        Mutex<HashMap<String, k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector>>,
}

impl std::fmt::Debug for WsState {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WsState").finish_non_exhaustive()
    }
}

impl WsState {
    fn lock_for(&self, uid: &str) -> Arc<tokio::sync::Mutex<Option<WorkloadSpread>>> {
        let mut spreads = self.spreads.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        spreads.entry(uid.to_owned()).or_default().clone()
    }

    fn retain(&self, live: &std::collections::BTreeSet<String>) {
        use std::sync::PoisonError;
        self.spreads.lock().unwrap_or_else(PoisonError::into_inner).retain(|u, _| live.contains(u));
        self.selectors
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .retain(|u, _| live.contains(u));
    }

    /// The custom-workload whitelist from `kruise-configuration` in `namespace`, read again
    /// after [`WHITELIST_TTL`]. A missing or unreadable ConfigMap is an empty list.
    async fn whitelist(&self, client: &Client, namespace: &str) -> Arc<CustomWorkloadWhitelist> {
        if let Some((at, list)) =
            self.whitelist.read().unwrap_or_else(std::sync::PoisonError::into_inner).as_ref()
            && at.elapsed() < WHITELIST_TTL
        {
            return list.clone();
        }
        let data = crate::configuration::read(client, namespace).await.unwrap_or_default();
        let list = match data.get(WHITELIST_KEY) {
            Some(text) => CustomWorkloadWhitelist::parse(text).unwrap_or_else(|e| {
                tracing::warn!(error = %e, "{CONFIGURATION_NAME} {WHITELIST_KEY} is not valid");
                CustomWorkloadWhitelist::default()
            }),
            None => CustomWorkloadWhitelist::default(),
        };
        let list = Arc::new(list);
        *self.whitelist.write().unwrap_or_else(std::sync::PoisonError::into_inner) =
            Some((std::time::Instant::now(), list.clone()));
        list
    }

    /// How many replicas `ws`'s target asks for: the scale's `spec.replicas`, or the sum of
    /// `targetFilter.replicasPathList` read from the workload.
    async fn workload_replicas(&self, client: &Client, ws: &WorkloadSpread) -> i32 {
        let Some(target) = &ws.spec.target_reference else { return 0 };
        let namespace = ws.namespace().unwrap_or_default();
        let paths = ws.spec.target_filter.as_ref().map(|f| f.replicas_path_list.as_slice());
        match paths {
            Some(paths) if !paths.is_empty() => {
                let object = self
                    .scales
                    .object(client, &namespace, &target.api_version, &target.kind, &target.name)
                    .await;
                let Ok(object) = object else { return 0 };
                paths.iter().map(|p| replicas_at(&object, p)).sum()
            }
            _ => self
                .scales
                .scale(client, &namespace, &target.api_version, &target.kind, &target.name)
                .await
                .ok()
                .and_then(|s| s.replicas)
                .unwrap_or(0),
        }
    }
}

/// The integer at the dotted `path` of `object` (0 when absent).
fn replicas_at(object: &Value, path: &str) -> i32 {
    let pointer = format!("/{}", path.replace('.', "/"));
    object
        .pointer(&pointer)
        .and_then(Value::as_i64)
        .and_then(|n| i32::try_from(n).ok())
        .unwrap_or(0)
}

/// Whether any subset's `maxReplicas` is a percentage (the workload's replicas are needed).
fn has_percent_subset(ws: &WorkloadSpread) -> bool {
    use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;
    ws.spec.subsets.iter().flatten().any(|s| matches!(s.max_replicas, Some(IntOrString::String(_))))
}

/// The newer of the cached WorkloadSpread and the one this process last wrote.
fn newer(cached: &WorkloadSpread, written: Option<&WorkloadSpread>) -> WorkloadSpread {
    let version = |w: &WorkloadSpread| {
        w.metadata.resource_version.as_deref().and_then(|v| v.parse::<u64>().ok()).unwrap_or(0)
    };
    match written {
        Some(w) if w.uid() == cached.uid() && version(w) > version(cached) => w.clone(),
        _ => cached.clone(),
    }
}

/// A random id for a pod created by `generateName` (upstream's `uuid.NewUUID`).
fn new_uid() -> String {
    let bytes: [u8; 16] = rand::random();
    let hex: String = bytes.iter().map(|b| format!("{b:02x}")).collect();
    format!("{}-{}-{}-{}-{}", &hex[0..8], &hex[8..12], &hex[12..16], &hex[16..20], &hex[20..32])
}

/// Why a pod could not be placed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum WsWebhookError {
    /// Reading or writing the WorkloadSpread failed.
    #[error("workloadspread {name}: {message}")]
    Api {
        /// The WorkloadSpread.
        name: String,
        /// What failed.
        message: String,
    },
}

/// The pod chain's WorkloadSpread step: the subset reserved for the pod, injected by
/// [`kruise_core::workloadspread::inject`], plus [`MATCHED_LABEL`].
#[derive(Clone, Debug)]
pub struct WorkloadSpreadInjection {
    /// The WorkloadSpread.
    pub workload_spread: WorkloadSpread,
    /// The subset reserved.
    pub subset: String,
    /// The id recorded for a pod without a name yet.
    pub generated_uid: Option<String>,
}

impl PodMutator for WorkloadSpreadInjection {
    fn step(&self) -> PodStep {
        PodStep::WorkloadSpread
    }

    fn mutate(&self, pod: &mut PodEdit<'_>) -> Result<(), PodMutationError> {
        // The subset's patch may change any part of the pod: the whole pod is kept.
        let pod = pod.pod_mut();
        core::inject(&self.workload_spread, &self.subset, self.generated_uid.as_deref(), pod)
            .map_err(|e| PodMutationError::Step {
                step: PodStep::WorkloadSpread,
                message: e.to_string(),
            })?;
        let labels = pod.metadata.labels.get_or_insert_with(BTreeMap::new);
        labels.insert(MATCHED_LABEL.to_owned(), "true".to_owned());
        Ok(())
    }
}

/// WorkloadSpread names by the (namespace, kind, name) of their target.
#[derive(Default)]
struct TargetIndex {
    by_target: HashMap<(String, String, String), std::collections::BTreeSet<String>>,
}

impl TargetIndex {
    fn key(ws: &WorkloadSpread) -> Option<(String, String, String)> {
        let target = ws.spec.target_reference.as_ref()?;
        Some((ws.namespace().unwrap_or_default(), target.kind.clone(), target.name.clone()))
    }

    fn insert(&mut self, ws: &WorkloadSpread) {
        if let Some(key) = Self::key(ws) {
            self.by_target.entry(key).or_default().insert(ws.name_any());
        }
    }

    fn remove(&mut self, ws: &WorkloadSpread) {
        let Some(key) = Self::key(ws) else { return };
        if let Some(names) = self.by_target.get_mut(&key) {
            names.remove(&ws.name_any());
            if names.is_empty() {
                self.by_target.remove(&key);
            }
        }
    }

    /// The WorkloadSpreads in `namespace` targeting the workload `kind`/`name`.
    fn named(&self, namespace: &str, kind: &str, name: &str) -> impl Iterator<Item = &String> {
        // The key is owned; building it costs three short allocations per look-up.
        self.by_target
            .get(&(namespace.to_owned(), kind.to_owned(), name.to_owned()))
            .into_iter()
            .flatten()
    }
}

/// What the pod webhooks read.
#[derive(Clone)]
pub struct WorkloadSpreadWebhook {
    spreads: Cache<WorkloadSpread>,
    /// The WorkloadSpreads by their target, kept in step with `spreads`.
    targets: Arc<RwLock<TargetIndex>>,
    replica_sets: Cache<PartialObjectMeta<ReplicaSet>>,
    pods: Cache<CachedPod>,
    client: Client,
    state: Arc<WsState>,
    /// Where `kruise-configuration` lives.
    manager_namespace: String,
}

impl std::fmt::Debug for WorkloadSpreadWebhook {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WorkloadSpreadWebhook").finish_non_exhaustive()
    }
}

/// A controller reference, owned.
#[derive(Clone, Debug, PartialEq, Eq)]
struct Owner {
    api_version: String,
    kind: String,
    name: String,
}

fn controller_of(
    refs: &[k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference],
) -> Option<Owner> {
    refs.iter().find(|o| o.controller == Some(true)).map(|o| Owner {
        api_version: o.api_version.clone(),
        kind: o.kind.clone(),
        name: o.name.clone(),
    })
}

impl WorkloadSpreadWebhook {
    /// Asks `caches` for WorkloadSpreads, ReplicaSets (metadata) and pods.
    pub fn new(caches: &SharedCaches, client: Client, manager_namespace: &str) -> Self {
        let spreads: Cache<WorkloadSpread> = caches.get();
        let targets = Arc::new(RwLock::new(TargetIndex::default()));
        let feed = targets.clone();
        spreads.subscribe(Arc::new(move |change| {
            let mut index = feed.write().unwrap_or_else(std::sync::PoisonError::into_inner);
            if let Some(old) = &change.old {
                index.remove(old);
            }
            if let Some(new) = &change.new {
                index.insert(new);
            }
        }));
        // After subscribing, so nothing cached meanwhile is missed (inserting is idempotent).
        {
            let mut index = targets.write().unwrap_or_else(std::sync::PoisonError::into_inner);
            for ws in spreads.all() {
                index.insert(&ws);
            }
        }
        Self {
            spreads,
            targets,
            replica_sets: caches.get(),
            pods: caches.get(),
            client,
            state: caches.shared(),
            manager_namespace: manager_namespace.to_owned(),
        }
    }

    /// True once the WorkloadSpread and ReplicaSet caches have loaded: until then a pod could
    /// be created outside the subsets its WorkloadSpread sets.
    pub fn is_synced(&self) -> bool {
        self.spreads.is_synced() && self.replica_sets.is_synced()
    }

    /// Waits until [`Self::is_synced`].
    pub async fn wait_synced(&self) {
        self.spreads.wait_synced().await;
        self.replica_sets.wait_synced().await;
    }

    /// The WorkloadSpreads in `namespace` (for validating one against the others).
    pub fn in_namespace(&self, namespace: &str) -> Vec<WorkloadSpread> {
        self.spreads.in_namespace(namespace).iter().map(|w| w.as_ref().clone()).collect()
    }

    /// The custom-workload whitelist.
    pub async fn whitelist(&self) -> Arc<CustomWorkloadWhitelist> {
        self.state.whitelist(&self.client, &self.manager_namespace).await
    }

    /// The controller of `owner` (one level up), from the ReplicaSet cache for ReplicaSets
    /// and from the API server otherwise.
    async fn controller_of_owner(&self, namespace: &str, owner: &Owner) -> Option<Owner> {
        if owner.kind == "ReplicaSet"
            && owner.api_version.starts_with("apps/")
            && let Some(rs) = self.replica_sets.get(&ObjectKey::new(namespace, owner.name.as_str()))
        {
            return controller_of(rs.owner_references());
        }
        let object = self
            .state
            .scales
            .object(&self.client, namespace, &owner.api_version, &owner.kind, &owner.name)
            .await
            .ok()?;
        let refs: Vec<k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference> =
            serde_json::from_value(object["metadata"]["ownerReferences"].clone()).ok()?;
        controller_of(&refs)
    }

    /// The WorkloadSpread governing `pod` (in `namespace`), if any: its controller, then the
    /// controller's controller while they are workloads WorkloadSpread knows.
    async fn governing(&self, pod: &Pod, namespace: &str) -> Option<Arc<WorkloadSpread>> {
        let owner = controller_of(pod.owner_references())?;
        if self.spreads.none_in_namespace(namespace) {
            return None;
        }
        let whitelist = self.whitelist().await;
        if !core::is_supported_owner(&owner.api_version, &owner.kind, &whitelist) {
            return None;
        }
        let labels = pod.labels().clone();
        let mut chain = vec![owner];
        for _ in 0..3 {
            // Only the WorkloadSpreads naming a workload of the chain are looked at closely
            // (a namespace may hold many).
            let named: Vec<Arc<WorkloadSpread>> = {
                let index = self.targets.read().unwrap_or_else(std::sync::PoisonError::into_inner);
                let mut names: Vec<&String> =
                    chain.iter().flat_map(|o| index.named(namespace, &o.kind, &o.name)).collect();
                names.sort();
                names.dedup();
                names
                    .into_iter()
                    .filter_map(|n| self.spreads.get(&ObjectKey::new(namespace, n.as_str())))
                    .collect()
            };
            let owned: Vec<WorkloadSpread> = named.iter().map(|w| w.as_ref().clone()).collect();
            let refs: Vec<WorkloadRef<'_>> = chain
                .iter()
                .map(|o| WorkloadRef { api_version: &o.api_version, kind: &o.kind, name: &o.name })
                .collect();
            if let Some(ws) = core::select_workload_spread(&owned, &refs, &labels) {
                let name = ws.name_any();
                return named.iter().find(|c| c.name_any() == name).cloned();
            }
            // Up one level only where a target can sit above the owner: a ReplicaSet's
            // Deployment, or a whitelisted workload above one of its sub-resources.
            let last = chain.last()?;
            let group = core::parse_group(&last.api_version).unwrap_or_default();
            let climbs = (last.kind == "ReplicaSet" && group == "apps")
                || (whitelist.contains(group, &last.kind)
                    && !whitelist.contains_workload(group, &last.kind));
            if !climbs {
                return None;
            }
            let up = self.controller_of_owner(namespace, last).await?;
            chain.push(up);
        }
        None
    }

    /// The WorkloadSpread step for a pod being created in `namespace`: `None` when no
    /// WorkloadSpread governs it or no subset has room.
    ///
    /// # Errors
    /// When the reservation cannot be written.
    pub async fn on_create(
        &self,
        pod: &Pod,
        namespace: &str,
    ) -> Result<Option<WorkloadSpreadInjection>, WsWebhookError> {
        if !kruise_core::pod::is_pod_active(pod) {
            return Ok(None);
        }
        let Some(ws) = self.governing(pod, namespace).await else { return Ok(None) };
        let reservation = self.reserve(&ws, pod, PodOperation::Create).await?;
        let Some((subset, generated_uid, written)) = reservation else { return Ok(None) };
        Ok(Some(WorkloadSpreadInjection { workload_spread: written, subset, generated_uid }))
    }

    /// Releases the place of a pod being deleted or evicted. A failure is logged, never
    /// answered: the controller corrects the status from the pods.
    pub async fn on_delete(&self, pod: &Pod, eviction: bool) {
        let Some(injected) = InjectedSubset::from_pod(pod) else { return };
        if !kruise_core::pod::is_pod_active(pod) || controller_of(pod.owner_references()).is_none()
        {
            return;
        }
        let namespace = pod.namespace().unwrap_or_default();
        let Some(ws) =
            self.spreads.get(&ObjectKey::new(namespace.as_str(), injected.name.as_str()))
        else {
            return;
        };
        let op = if eviction { PodOperation::Eviction } else { PodOperation::Delete };
        if let Err(e) = self.reserve(&ws, pod, op).await {
            tracing::warn!(pod = %pod.name_any(), %namespace, error = %e, "releasing a WorkloadSpread subset");
        }
    }

    /// The pod named by an eviction, from the cache.
    pub fn cached_pod(&self, namespace: &str, name: &str) -> Option<Pod> {
        self.pods.get(&ObjectKey::new(namespace, name)).and_then(|p| p.to_pod().ok())
    }

    /// Reserves (or releases) `pod`'s place in `ws`: the subset, the id recorded for an
    /// unnamed pod, and the WorkloadSpread as written.
    async fn reserve(
        &self,
        cached: &WorkloadSpread,
        pod: &Pod,
        op: PodOperation,
    ) -> Result<Option<(String, Option<String>, WorkloadSpread)>, WsWebhookError> {
        let name = cached.name_any();
        let namespace = cached.namespace().unwrap_or_default();
        let target_kind =
            cached.spec.target_reference.as_ref().map(|t| t.kind.clone()).unwrap_or_default();
        let error = |message: String| WsWebhookError::Api { name: name.clone(), message };
        let uid = cached.uid().unwrap_or_default();
        let lock = self.state.lock_for(&uid);
        let mut last_written = lock.lock().await;
        let api: Api<WorkloadSpread> = Api::namespaced(self.client.clone(), &namespace);
        let mut ws = newer(cached, last_written.as_ref());
        let mut backoff = Duration::from_millis(10);
        for _ in 0..RESERVATION_ATTEMPTS {
            let replicas = if has_percent_subset(&ws) {
                self.state.workload_replicas(&self.client, &ws).await
            } else {
                0
            };
            let mut fresh_uid = new_uid;
            let reservation = core::reserve(
                &ws,
                pod,
                op,
                replicas,
                &target_kind,
                Timestamp::now(),
                &mut fresh_uid,
            );
            let Some(status) = reservation.new_status else {
                return Ok(reservation.subset.map(|s| (s, reservation.generated_uid, ws)));
            };
            let mut next = ws.clone();
            next.status = Some(status);
            match api.replace_status(&name, &PostParams::default(), &next).await {
                Ok(written) => {
                    *last_written = Some(written.clone());
                    return Ok(reservation.subset.map(|s| (s, reservation.generated_uid, written)));
                }
                Err(kube::Error::Api(e)) if e.code == 409 => {
                    tokio::time::sleep(backoff).await;
                    backoff = (backoff * 5).min(Duration::from_millis(500));
                    match api.get_opt(&name).await {
                        Ok(Some(fresh)) => ws = fresh,
                        Ok(None) => return Ok(None),
                        Err(e) => return Err(error(e.to_string())),
                    }
                }
                Err(kube::Error::Api(e)) if e.code == 404 => return Ok(None),
                Err(e) => return Err(error(e.to_string())),
            }
        }
        Err(error("too many concurrent updates, try again".to_owned()))
    }
}

/// The controller's name in metrics, Events and logs (upstream's).
pub const CONTROLLER_NAME: &str = "workloadspread-controller";

/// The WorkloadSpread controller.
pub struct WorkloadSpreadController {
    context: ControllerContext,
    spreads: Cache<WorkloadSpread>,
    pods: Cache<CachedPod>,
    nodes: Cache<Node>,
    replica_sets: Cache<PartialObjectMeta<ReplicaSet>>,
    state: Arc<WsState>,
}

impl WorkloadSpreadController {
    const INFO: ControllerInfo = ControllerInfo::new(
        CONTROLLER_NAME,
        "workloadspread-workers",
        Some(ServedResource {
            group: "apps.kruise.io",
            version: "v1beta1",
            plural: "workloadspreads",
        }),
    )
    .with_gates(&["WorkloadSpread"]);

    fn build(context: ControllerContext) -> Arc<dyn Reconciler> {
        Arc::new(Self {
            spreads: context.caches.get(),
            pods: context.caches.get(),
            nodes: context.caches.get(),
            replica_sets: context.caches.get(),
            state: context.caches.shared(),
            context,
        })
    }

    /// The target's pods (its scale's selector, with a controller, and `targetFilter`), and
    /// the replicas it asks for. `None` when the target cannot be read.
    async fn target_pods(&self, ws: &WorkloadSpread) -> Option<(Vec<Pod>, i32)> {
        let target = ws.spec.target_reference.as_ref()?;
        let namespace = ws.namespace().unwrap_or_default();
        let client = self.context.applier.client();
        let scale = self
            .state
            .scales
            .scale(client, &namespace, &target.api_version, &target.kind, &target.name)
            .await
            .ok()?;
        let selector =
            kruise_core::admission::meta::label_selector_from_str(&scale.selector).ok()?;
        if selector == Default::default() {
            return None;
        }
        self.state
            .selectors
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .insert(ws.uid().unwrap_or_default(), selector.clone());
        let filter = ws.spec.target_filter.as_ref().and_then(|f| f.selector.as_ref());
        let mut pods = Vec::new();
        for cached in self.pods.in_namespace(&namespace) {
            let labels = cached.metadata.labels.clone().unwrap_or_default();
            let selected = kruise_core::pod::selector_matches(&selector, &labels).unwrap_or(false)
                && filter.is_none_or(|f| {
                    kruise_core::pod::selector_matches(f, &labels).unwrap_or(false)
                });
            let controlled = cached
                .metadata
                .owner_references
                .as_ref()
                .is_some_and(|refs| refs.iter().any(|o| o.controller == Some(true)));
            if selected && controlled {
                pods.push(cached.to_pod().ok()?);
            }
        }
        let replicas = match ws.spec.target_filter.as_ref().map(|f| f.replicas_path_list.len()) {
            Some(n) if n > 0 => self.state.workload_replicas(client, ws).await,
            _ => scale.replicas.unwrap_or(0),
        };
        Some((pods, replicas))
    }

    /// The target's current version, for Deployments: the `pod-template-hash` of its newest
    /// ReplicaSet (highest `deployment.kubernetes.io/revision`). `None` otherwise.
    fn latest_version(&self, ws: &WorkloadSpread) -> Option<String> {
        let target = ws.spec.target_reference.as_ref()?;
        if target.kind != "Deployment" || !target.api_version.starts_with("apps/") {
            return None;
        }
        let namespace = ws.namespace().unwrap_or_default();
        self.replica_sets
            .in_namespace(&namespace)
            .iter()
            .filter(|rs| {
                controller_of(rs.owner_references())
                    .is_some_and(|o| o.kind == "Deployment" && o.name == target.name)
            })
            .max_by_key(|rs| {
                rs.annotations()
                    .get("deployment.kubernetes.io/revision")
                    .and_then(|r| r.parse::<i64>().ok())
                    .unwrap_or(0)
            })
            .and_then(|rs| rs.labels().get("pod-template-hash").cloned())
    }

    async fn reconcile_spread(&self, key: &ObjectKey) -> Result<Option<Duration>, ReconcileError> {
        let Some(ws) = self.spreads.get(key) else {
            let live = self.spreads.all().iter().filter_map(|w| w.uid()).collect();
            self.state.retain(&live);
            return Ok(None);
        };
        if ws.metadata.deletion_timestamp.is_some() || ws.spec.target_reference.is_none() {
            return Ok(None);
        }
        // The webhook's own writes are newer than the cache until the watch catches up.
        let uid = ws.uid().unwrap_or_default();
        let ws = {
            let lock = self.state.lock_for(&uid);
            let written = lock.lock().await;
            newer(&ws, written.as_ref())
        };
        let Some((pods, replicas)) = self.target_pods(&ws).await else {
            return Ok(Some(Duration::from_secs(5)));
        };
        let target_kind =
            ws.spec.target_reference.as_ref().map(|t| t.kind.clone()).unwrap_or_default();
        let latest = self.latest_version(&ws);
        let plan = {
            let nodes = self.nodes.clone();
            let node_of = move |name: &str| nodes.get(&ObjectKey::new("", name));
            let mut input = core::ReconcileInput::new(
                &ws,
                &pods,
                replicas,
                &node_of,
                &target_kind,
                Timestamp::now(),
            );
            input.latest_version = latest.as_deref();
            core::reconcile(&input)
        };
        let plan = core::plan(&ws, &plan);
        let owner = PlanOwner::of(&ws, Value::Null);
        // The webhook may have reserved a pod meanwhile: then computed again from what it wrote.
        self.context.applier.apply_or_replan(&owner, &plan, Timestamp::now()).await
    }
}

impl Reconciler for WorkloadSpreadController {
    fn watches(&self) -> Vec<Watch> {
        let spreads = self.spreads.clone();
        let state = self.state.clone();
        vec![
            Watch::own(&self.spreads),
            // A pod concerns the WorkloadSpread named in its annotation, and those whose
            // target selects it.
            Watch::new(&self.pods, KeyMapping::Custom, move |change| {
                let mut keys = Vec::new();
                for pod in [change.old.as_deref(), change.new.as_deref()].into_iter().flatten() {
                    let namespace = pod.metadata.namespace.clone().unwrap_or_default();
                    let named = pod
                        .metadata
                        .annotations
                        .as_ref()
                        .and_then(|a| a.get(core::MATCHED_WORKLOADSPREAD_ANNOTATION))
                        .and_then(|v| serde_json::from_str::<Value>(v).ok())
                        .and_then(|v| v["name"].as_str().map(str::to_owned));
                    if let Some(name) = named {
                        keys.push(ObjectKey::new(namespace.as_str(), name));
                    }
                    let labels = pod.metadata.labels.clone().unwrap_or_default();
                    let selectors =
                        state.selectors.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
                    for ws in spreads.in_namespace(&namespace) {
                        let selects = match selectors.get(&ws.uid().unwrap_or_default()) {
                            Some(s) => {
                                kruise_core::pod::selector_matches(s, &labels).unwrap_or(true)
                            }
                            None => true,
                        };
                        if selects {
                            keys.push(ObjectKey::of(ws.as_ref()));
                        }
                    }
                }
                keys.sort();
                keys.dedup();
                keys
            }),
        ]
    }

    fn keys(&self) -> Vec<ObjectKey> {
        self.spreads.all().iter().map(|w| ObjectKey::of(w.as_ref())).collect()
    }

    fn reconcile<'a>(
        &'a self,
        key: &'a ObjectKey,
    ) -> BoxFuture<'a, Result<Option<Duration>, ReconcileError>> {
        Box::pin(self.reconcile_spread(key))
    }
}

/// The controller's registration: it runs with the `WorkloadSpread` gate.
pub fn registration() -> Registration {
    Registration { info: WorkloadSpreadController::INFO, build: WorkloadSpreadController::build }
}

/// WorkloadSpread as a pod feature: a subset (reserved in the WorkloadSpread's status) at pod
/// creation, and the subset's place released when a pod's deletion or eviction is admitted.
impl crate::admission::PodFeature for WorkloadSpreadWebhook {
    fn name(&self) -> &'static str {
        "WorkloadSpread"
    }

    fn is_synced(&self) -> bool {
        WorkloadSpreadWebhook::is_synced(self)
    }

    fn wait_synced(&self) -> futures::future::BoxFuture<'_, ()> {
        Box::pin(WorkloadSpreadWebhook::wait_synced(self))
    }

    fn on_create<'a>(
        &'a self,
        pod: &'a Pod,
        namespace: &'a str,
        dry_run: bool,
    ) -> futures::future::BoxFuture<
        'a,
        Result<Option<crate::admission::pod_feature::PodStepBox>, String>,
    > {
        Box::pin(async move {
            // A dry run reserves nothing, so it is not placed in a subset either (as upstream).
            if dry_run {
                return Ok(None);
            }
            match WorkloadSpreadWebhook::on_create(self, pod, namespace).await {
                Ok(step) => {
                    Ok(step.map(|s| Box::new(s) as crate::admission::pod_feature::PodStepBox))
                }
                Err(e) => Err(e.to_string()),
            }
        })
    }

    fn admitted<'a>(
        &'a self,
        review: crate::admission::PodReview<'a>,
    ) -> futures::future::BoxFuture<'a, ()> {
        use crate::admission::PodReview;
        Box::pin(async move {
            match review {
                PodReview::Delete { pod } => self.on_delete(pod, false).await,
                PodReview::Evict { pod } => self.on_delete(pod, true).await,
                PodReview::Update { .. } => {}
            }
        })
    }

    /// The namespaces that hold a WorkloadSpread, whole: a spread selects its pods through
    /// its target workload, whose selector this feature does not read.
    fn scope(&self) -> Vec<kruise_core::admission::pod_scope::PodScopeTerm> {
        use kruise_core::admission::pod_scope::PodScopeTerm;
        self.spreads
            .all()
            .iter()
            .filter_map(|spread| spread.metadata.namespace.as_deref().map(PodScopeTerm::namespace))
            .collect()
    }

    fn watch_scope(&self, wake: Arc<tokio::sync::Notify>) {
        crate::admission::pod_feature::wake_on_spec_change(&self.spreads, wake);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn replicas_are_read_at_dotted_paths() {
        let object = json!({"spec": {"tfReplicaSpecs": {"Worker": {"replicas": 3}}}});
        assert_eq!(replicas_at(&object, "spec.tfReplicaSpecs.Worker.replicas"), 3);
        assert_eq!(replicas_at(&object, "spec.missing"), 0);
    }

    #[test]
    fn generated_uids_look_like_uuids() {
        let a = new_uid();
        assert_eq!(a.len(), 36);
        assert_eq!(a.matches('-').count(), 4);
        assert_ne!(a, new_uid());
    }

    #[test]
    fn the_newer_workloadspread_wins() {
        let mut cached = WorkloadSpread::default();
        cached.metadata.uid = Some("u".into());
        cached.metadata.resource_version = Some("5".into());
        let mut written = cached.clone();
        written.metadata.resource_version = Some("7".into());
        assert_eq!(newer(&cached, Some(&written)).metadata.resource_version.as_deref(), Some("7"));
        assert_eq!(newer(&written, Some(&cached)).metadata.resource_version.as_deref(), Some("7"));
    }
}
