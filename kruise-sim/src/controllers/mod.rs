//! The built-in controllers a Kubernetes API server normally has behind it
//! (kube-controller-manager's), talking to an API server through a kube-rs client as the
//! simulated nodes do: the embedded one, or any cluster.
//!
//! - [`replicaset`]: ReplicaSets keep `replicas` pods, adopt and release pods by selector, and
//!   scale in kube-controller-manager's order.
//! - [`cronjob`]: CronJobs start Jobs on their schedule (in `timeZone`), with
//!   `concurrencyPolicy`, `startingDeadlineSeconds`, `suspend` and the history limits.
//! - [`deployment`]: Deployments roll out through ReplicaSets named with the
//!   `pod-template-hash` (RollingUpdate within maxSurge and maxUnavailable, or Recreate), with
//!   revisions, rollback, history limits and the status `kubectl rollout status` reads.
//! - [`statefulset`]: StatefulSets keep pods named `<set>-<ordinal>` with their claims from
//!   volumeClaimTemplates, OrderedReady or Parallel, rolling out through ControllerRevisions
//!   with a partition and maxUnavailable (or OnDelete), with the status `kubectl rollout
//!   status` reads.
//! - [`disruption`]: PodDisruptionBudgets' status, which evictions read.
//! - [`job`]: Jobs run pods to completion (parallelism, completions, backoffLimit,
//!   activeDeadlineSeconds, suspend, Indexed mode, the Complete and Failed conditions), and
//!   finished Jobs go after `ttlSecondsAfterFinished`.
//! - [`daemonset`]: DaemonSets run one pod on every eligible node (nodeSelector, required node
//!   affinity, taints), roll out through ControllerRevisions (RollingUpdate within
//!   maxUnavailable or maxSurge, or OnDelete), with the status `kubectl rollout status` reads.
//!
//! - [`taint_eviction`]: pods on a node with a `NoExecute` taint they do not tolerate are
//!   deleted, at once or after their `tolerationSeconds`.
//! - [`endpointslice`]: every Service with a selector gets EndpointSlices listing the pods it
//!   selects (addresses, ready/serving/terminating, node, zone, ports resolved per pod), at
//!   most 100 endpoints each, updated in place as pods come, go and change readiness.
//!
//! [`Controllers::start`] runs them until the handle is dropped. `kruise-sim serve` and the
//! playground start them; [`crate::Config::with_controllers`] does in tests.

pub mod cronjob;
pub mod daemonset;
pub mod deployment;
pub mod disruption;
pub mod endpointslice;
pub mod job;
pub mod replicaset;
pub mod statefulset;
pub mod taint_eviction;

use std::collections::HashSet;
use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use std::collections::BTreeMap;

use futures::StreamExt as _;
use k8s_openapi::api::apps::v1::{DaemonSet, ReplicaSet, StatefulSet};
use k8s_openapi::api::batch::v1::{CronJob, Job};
use k8s_openapi::api::core::v1::{Node, Pod};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{LabelSelector, ObjectMeta, OwnerReference};
use kruise_core::selector::PodSelector;
use kube::runtime::reflector::{ObjectRef, Store};
use kube::runtime::{WatchStreamExt as _, reflector, watcher};
use kube::{Api, Client};
use serde::de::DeserializeOwned;
use serde_json::{Value, json};
use tokio::sync::mpsc::{UnboundedReceiver, UnboundedSender};

/// Why a controller's round failed; it is retried.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// An API request failed.
    #[error("{action}: {source}")]
    Api {
        /// What was attempted.
        action: String,
        /// The error.
        source: kube::Error,
    },
    /// An object could not be encoded or decoded as JSON.
    #[error("encode {what}: {source}")]
    Encode {
        /// What was encoded.
        what: String,
        /// The error.
        source: serde_json::Error,
    },
    /// A ControllerRevision could not be read.
    #[error(transparent)]
    Revision(kruise_core::revision::RevisionError),
    /// A claim a new pod needs is still being deleted.
    #[error("pvc {claim} is being deleted")]
    ClaimDeleting {
        /// The claim's name.
        claim: String,
    },
}

/// Wraps a failed request's error with what was attempted.
pub(crate) fn api_error(action: impl Into<String>) -> impl FnOnce(kube::Error) -> Error {
    let action = action.into();
    move |source| Error::Api { action, source }
}

/// A cache of every object of kind `K`, which several controllers may share: one watch, one store,
/// and for each subscriber the objects the cache has just taken in (each sent after the store
/// holds it, so a round it queues never reads an older cache).
pub(crate) struct SharedCache<K: kube::Resource<DynamicType = ()> + Clone + 'static> {
    store: Store<K>,
    writer: reflector::store::Writer<K>,
    subscribers: Vec<UnboundedSender<K>>,
}

impl<K> SharedCache<K>
where
    K: kube::Resource<DynamicType = ()>
        + Clone
        + DeserializeOwned
        + std::fmt::Debug
        + Send
        + Sync
        + 'static,
{
    pub(crate) fn new() -> Self {
        let (store, writer) = reflector::store();
        Self { store, writer, subscribers: Vec::new() }
    }

    /// The store, and a new subscriber's feed of changed objects.
    pub(crate) fn subscribe(&mut self) -> (Store<K>, UnboundedReceiver<K>) {
        let (sender, receiver) = tokio::sync::mpsc::unbounded_channel();
        self.subscribers.push(sender);
        (self.store.clone(), receiver)
    }

    /// Watches `K` through `client`, filling the store and feeding the subscribers, until the
    /// task is aborted.
    pub(crate) async fn run(self, client: Client) {
        let subscribers = self.subscribers;
        reflector(self.writer, watcher(Api::<K>::all(client), watcher::Config::default()))
            .default_backoff()
            .touched_objects()
            .for_each(|event| {
                if let Ok(object) = event {
                    for subscriber in &subscribers {
                        let _ = subscriber.send(object.clone());
                    }
                }
                futures::future::ready(())
            })
            .await;
    }
}

/// Whether a non-empty `selector` matches the object's labels (an empty or malformed one
/// matches nothing here; the API server refuses both for these kinds).
pub(crate) fn selector_matches(selector: Option<&LabelSelector>, meta: &ObjectMeta) -> bool {
    let empty = selector.is_none_or(|s| s.match_labels.is_none() && s.match_expressions.is_none());
    !empty && PodSelector::parse(selector).is_ok_and(|s| s.matches(meta.labels.as_ref()))
}

/// Waits until `done` holds (a cache shows a round's writes), or for 10 s at most.
pub(crate) async fn wait_until(mut done: impl FnMut() -> bool) {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
    while !done() && tokio::time::Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// Whether the stored status (as JSON) already holds every field of `wanted`; counts the API
/// server omits when zero read as zero.
pub(crate) fn status_matches(stored: &Value, wanted: &Value) -> bool {
    wanted.as_object().is_some_and(|fields| {
        fields.iter().all(|(key, value)| {
            let have = stored.get(key).unwrap_or(&Value::Null);
            have == value || (have.is_null() && value == &json!(0))
        })
    })
}

/// Runs `make(i)` for `i` in `0..count` in slow-start batches (1, 2, 4, ...), each batch at
/// once, as kube-controller-manager creates pods; no batch follows one with a failure. The
/// results that succeeded, and the first failure.
pub(crate) async fn create_in_batches<T, F, Fut>(
    count: usize,
    mut make: F,
) -> (Vec<T>, Option<kube::Error>)
where
    F: FnMut(usize) -> Fut,
    Fut: Future<Output = Result<T, kube::Error>>,
{
    let mut done = Vec::new();
    let mut started = 0;
    let mut batch = 1;
    while started < count {
        let size = batch.min(count - started);
        let results = futures::future::join_all((started..started + size).map(&mut make)).await;
        started += size;
        let mut failure = None;
        for result in results {
            match result {
                Ok(made) => done.push(made),
                Err(e) => {
                    failure.get_or_insert(e);
                }
            }
        }
        if failure.is_some() {
            return (done, failure);
        }
        batch *= 2;
    }
    (done, None)
}

/// Whether some owner controls the object.
pub(crate) fn has_controller(meta: &ObjectMeta) -> bool {
    meta.owner_references.iter().flatten().any(|o| o.controller == Some(true))
}

/// Whether the owner with this uid controls the object.
pub(crate) fn controlled_by(meta: &ObjectMeta, uid: &str) -> bool {
    meta.owner_references.iter().flatten().any(|o| o.controller == Some(true) && o.uid == uid)
}

/// The object of kind `kind` (in `api_version`) that controls the object, if one does.
pub(crate) fn controller_of<K>(
    meta: &ObjectMeta,
    api_version: &str,
    kind: &str,
) -> Option<ObjectRef<K>>
where
    K: kube::Resource<DynamicType = ()>,
{
    let owner = meta.owner_references.iter().flatten().find(|o| o.controller == Some(true))?;
    (owner.kind == kind && owner.api_version == api_version)
        .then(|| ObjectRef::new(&owner.name).within(meta.namespace.as_deref().unwrap_or_default()))
}

/// The pod `owner` makes from `template` (kube-controller-manager's `GetPodFromTemplate`):
/// named `<owner>-<random>`, with the template's labels, annotations, finalizers and spec, and
/// `owner` as its controller.
pub(crate) fn pod_from_template<K>(
    owner: &K,
    template: Option<&k8s_openapi::api::core::v1::PodTemplateSpec>,
) -> Pod
where
    K: kube::Resource<DynamicType = ()>,
{
    let template = template.cloned().unwrap_or_default();
    let meta = template.metadata.unwrap_or_default();
    let name = owner.meta().name.clone().unwrap_or_default();
    Pod {
        metadata: ObjectMeta {
            generate_name: Some(format!("{name}-")),
            namespace: owner.meta().namespace.clone(),
            labels: meta.labels,
            annotations: meta.annotations,
            finalizers: meta.finalizers,
            owner_references: Some(vec![controller_reference(owner)]),
            ..ObjectMeta::default()
        },
        spec: template.spec,
        status: None,
    }
}

/// A controller ownerReference to `owner`.
pub(crate) fn controller_reference<K>(owner: &K) -> OwnerReference
where
    K: kube::Resource<DynamicType = ()>,
{
    OwnerReference {
        api_version: K::api_version(&()).into_owned(),
        kind: K::kind(&()).into_owned(),
        name: owner.meta().name.clone().unwrap_or_default(),
        uid: owner.meta().uid.clone().unwrap_or_default(),
        controller: Some(true),
        block_owner_deletion: Some(true),
    }
}

/// The merge patch that adopts an orphan the owner's selector `matches` (live ones only), or
/// releases one it controls that no longer matches; `None` when neither is due. The patch
/// names the object's uid and resourceVersion, so that it fails on a changed object.
pub(crate) fn ownership_patch(
    meta: &ObjectMeta,
    owner: &OwnerReference,
    matches: bool,
) -> Option<Value> {
    let owners = meta.owner_references.clone().unwrap_or_default();
    let owners = if matches && !has_controller(meta) && meta.deletion_timestamp.is_none() {
        let mut owners = owners;
        owners.push(owner.clone());
        json!(owners)
    } else if !matches && controlled_by(meta, &owner.uid) {
        let rest: Vec<&OwnerReference> = owners.iter().filter(|o| o.uid != owner.uid).collect();
        // No owner left: the field goes, as kube-apiserver stores an empty list.
        if rest.is_empty() { Value::Null } else { json!(rest) }
    } else {
        return None;
    };
    Some(json!({"metadata": {"ownerReferences": owners, "uid": meta.uid,
        "resourceVersion": meta.resource_version}}))
}

/// Adopts the orphans among `dependents` that `matches` accepts and releases the ones `owner`
/// controls that it no longer accepts (see [`ownership_patch`]); true when any changed owner.
/// A dependent gone or changed since it was read is left for the next round.
pub(crate) async fn claim<D>(
    api: &Api<D>,
    dependents: Vec<Arc<D>>,
    owner: &OwnerReference,
    matches: impl Fn(&D) -> bool,
) -> Result<bool, Error>
where
    D: kube::Resource<DynamicType = ()> + Clone + DeserializeOwned + std::fmt::Debug,
{
    let mut changed = false;
    for dependent in dependents {
        let Some(patch) = ownership_patch(dependent.meta(), owner, matches(&dependent)) else {
            continue;
        };
        let name = dependent.meta().name.clone().unwrap_or_default();
        match api
            .patch(&name, &kube::api::PatchParams::default(), &kube::api::Patch::Merge(&patch))
            .await
        {
            Ok(_) => changed = true,
            Err(kube::Error::Api(e)) if e.code == 404 || e.code == 409 => {}
            Err(source) => {
                let kind = D::kind(&()).to_lowercase();
                return Err(api_error(format!("set the owner of {kind} {name}"))(source));
            }
        }
    }
    Ok(changed)
}

/// The controller of each dependent when last seen, so that a dependent that loses its
/// controller still queues it.
pub(crate) struct LastController<K: kube::Resource<DynamicType = ()>>(
    BTreeMap<String, ObjectRef<K>>,
);

impl<K: kube::Resource<DynamicType = ()>> LastController<K> {
    pub(crate) fn new() -> Self {
        Self(BTreeMap::new())
    }

    /// Records the dependent's controller now, and returns the one it had before.
    pub(crate) fn swap(
        &mut self,
        meta: &ObjectMeta,
        now: Option<ObjectRef<K>>,
    ) -> Option<ObjectRef<K>> {
        let uid = meta.uid.clone().unwrap_or_default();
        match now {
            Some(owner) => self.0.insert(uid, owner),
            None => self.0.remove(&uid),
        }
    }
}

/// Queues every object `events` delivers under its own key.
pub(crate) async fn queue_own<K>(
    mut events: UnboundedReceiver<K>,
    queue: UnboundedSender<ObjectRef<K>>,
) where
    K: kube::Resource<DynamicType = ()>,
{
    while let Some(object) = events.recv().await {
        let _ = queue.send(ObjectRef::from_obj(&object));
    }
}

/// Queues, for every dependent `events` delivers, the owners `owners` names and the controller
/// it had when last seen (so that a release or a deletion reaches the former owner). `controller`
/// names its controller now.
pub(crate) async fn queue_owners<K, D>(
    mut events: UnboundedReceiver<D>,
    queue: UnboundedSender<ObjectRef<K>>,
    controller: impl Fn(&D) -> Option<ObjectRef<K>>,
    mut owners: impl FnMut(&D) -> Vec<ObjectRef<K>>,
) where
    K: kube::Resource<DynamicType = ()>,
    D: kube::Resource,
{
    let mut last_controller = LastController::new();
    while let Some(dependent) = events.recv().await {
        let mut keys = owners(&dependent);
        keys.extend(last_controller.swap(dependent.meta(), controller(&dependent)));
        for key in keys {
            let _ = queue.send(key);
        }
    }
}

/// The owners a dependent's change concerns: its controller `controller`, or for an orphan
/// every object in its namespace that `adopts` it.
pub(crate) fn owner_or_adopters<K>(
    owners: &Store<K>,
    dependent: &ObjectMeta,
    controller: Option<ObjectRef<K>>,
    adopts: impl Fn(&K, &ObjectMeta) -> bool,
) -> Vec<ObjectRef<K>>
where
    K: kube::Resource<DynamicType = ()> + Clone,
{
    if has_controller(dependent) {
        return controller.into_iter().collect();
    }
    owners
        .state()
        .iter()
        .filter(|owner| owner.meta().namespace == dependent.namespace)
        .filter(|owner| adopts(owner, dependent))
        .map(|owner| ObjectRef::from_obj(owner.as_ref()))
        .collect()
}

/// Runs `reconcile` for the queued keys once `ready` has its first list, as [`work`] does;
/// a failed round is tried again after a second.
pub(crate) async fn run_rounds<K, R, C, Fut>(
    store: Store<K>,
    queue: UnboundedSender<ObjectRef<K>>,
    keys: UnboundedReceiver<ObjectRef<K>>,
    ready: Store<R>,
    context: Arc<C>,
    reconcile: fn(Arc<K>, Arc<C>) -> Fut,
) where
    K: kube::Resource<DynamicType = ()> + Clone + 'static,
    R: kube::Resource<DynamicType = ()> + Clone + 'static,
    Fut: Future<Output = Result<Option<Duration>, Error>>,
{
    ready.wait_until_ready().await.ok();
    work(store, queue, keys, move |object| {
        let context = context.clone();
        async move { reconcile(object, context).await.unwrap_or(Some(Duration::from_secs(1))) }
    })
    .await;
}

/// Runs rounds for the keys `keys` delivers, one at a time, each key once however often it
/// was queued meanwhile. A round that asks to run again (or fails) is queued again after its
/// delay. Waits for `store` to be ready first; keys no longer in it are skipped.
pub(crate) async fn work<K, F, Fut>(
    store: Store<K>,
    queue: UnboundedSender<ObjectRef<K>>,
    mut keys: UnboundedReceiver<ObjectRef<K>>,
    mut round: F,
) where
    K: kube::Resource<DynamicType = ()> + Clone + 'static,
    F: FnMut(Arc<K>) -> Fut,
    Fut: Future<Output = Option<Duration>>,
{
    store.wait_until_ready().await.ok();
    while let Some(first) = keys.recv().await {
        let mut batch = HashSet::from([first]);
        while let Ok(key) = keys.try_recv() {
            batch.insert(key);
        }
        for key in batch {
            let Some(object) = store.get(&key) else { continue };
            if let Some(after) = round(object).await {
                let queue = queue.clone();
                tokio::spawn(async move {
                    tokio::time::sleep(after).await;
                    let _ = queue.send(key);
                });
            }
        }
    }
}

/// The running controllers. Dropping the handle stops them.
pub struct Controllers {
    tasks: Vec<tokio::task::JoinHandle<()>>,
}

impl Controllers {
    /// Starts every controller against `client`'s API server, on the current tokio runtime.
    /// Each kind is watched once, for every controller that reads it.
    pub fn start(client: Client) -> Self {
        let mut pods = SharedCache::<Pod>::new();
        let mut sets = SharedCache::<ReplicaSet>::new();
        let mut nodes = SharedCache::<Node>::new();
        let mut daemon_sets = SharedCache::<DaemonSet>::new();
        let daemonset = daemonset::run(
            client.clone(),
            daemon_sets.subscribe(),
            pods.subscribe(),
            nodes.subscribe(),
        );
        let replicaset = replicaset::run(client.clone(), pods.subscribe(), sets.subscribe());
        let deployment = deployment::run(client.clone(), pods.subscribe(), sets.subscribe());
        let disruption = disruption::run(client.clone(), pods.subscribe());
        let taints = taint_eviction::run(client.clone(), pods.subscribe(), nodes.subscribe());
        let endpointslice = endpointslice::run(client.clone(), pods.subscribe(), nodes.subscribe());
        let mut stateful_sets = SharedCache::<StatefulSet>::new();
        let statefulset =
            statefulset::run(client.clone(), pods.subscribe(), stateful_sets.subscribe());
        let mut jobs = SharedCache::<Job>::new();
        let job = job::run(client.clone(), pods.subscribe(), jobs.subscribe());
        let mut cronjobs = SharedCache::<CronJob>::new();
        let cronjob = cronjob::run(client.clone(), jobs.subscribe(), cronjobs.subscribe());
        let tasks = vec![
            tokio::spawn(pods.run(client.clone())),
            tokio::spawn(sets.run(client.clone())),
            tokio::spawn(jobs.run(client.clone())),
            tokio::spawn(cronjobs.run(client.clone())),
            tokio::spawn(job),
            tokio::spawn(cronjob),
            tokio::spawn(nodes.run(client.clone())),
            tokio::spawn(daemon_sets.run(client.clone())),
            tokio::spawn(daemonset),
            tokio::spawn(stateful_sets.run(client)),
            tokio::spawn(statefulset),
            tokio::spawn(replicaset),
            tokio::spawn(deployment),
            tokio::spawn(disruption),
            tokio::spawn(taints),
            tokio::spawn(endpointslice),
        ];
        Self { tasks }
    }
}

impl Drop for Controllers {
    fn drop(&mut self) {
        for task in &self.tasks {
            task.abort();
        }
    }
}

impl std::fmt::Debug for Controllers {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Controllers").field("tasks", &self.tasks.len()).finish()
    }
}
