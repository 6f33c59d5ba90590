//! Shared reflectors: one watch per resource kind, held in memory with the indexes the
//! controllers look things up by (namespace, controller owner UID).
//!
//! Objects are stripped before they are stored: `managedFields` (often the largest part of an
//! object and never read by a controller) and, through a per-kind [`Strip`] hook, anything
//! else the controllers never read. Every change is reported to subscribers as an
//! [`Change`] so controllers can map it to the keys they reconcile.
//!
//! [`SharedCaches`] holds one [`Cache`] per kind for the whole manager: a controller or webhook
//! asks for the kinds it reads, and each kind's reflector starts once, the first time any
//! reader needs it. Pods are cached in their compact form ([`crate::cached_pod::CachedPod`]),
//! stripped once for every reader.

use std::any::{Any, TypeId};
use std::collections::{BTreeMap, HashMap};
use std::fmt::Debug;
use std::sync::{Arc, Mutex, RwLock};

use futures::StreamExt;
use futures::future::BoxFuture;
use futures::stream::BoxStream;
use k8s_openapi::api::core::v1::{Node, PersistentVolumeClaim};
use kube::api::PartialObjectMeta;
use kube::runtime::WatchStreamExt;
use kube::runtime::watcher;
use kube::{Api, Client, Resource};
use serde::de::DeserializeOwned;
use tokio::sync::watch;

use crate::cached_pod::CachedPod;

/// The key of a cached object: namespace (empty for cluster-scoped objects) and name.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ObjectKey {
    /// The namespace, empty for cluster-scoped objects.
    pub namespace: String,
    /// The name.
    pub name: String,
}

impl ObjectKey {
    /// The key of `namespace/name`.
    pub fn new(namespace: impl Into<String>, name: impl Into<String>) -> Self {
        Self { namespace: namespace.into(), name: name.into() }
    }

    /// The key of an object.
    pub fn of<K: Resource>(obj: &K) -> Self {
        let meta = obj.meta();
        Self {
            namespace: meta.namespace.clone().unwrap_or_default(),
            name: meta.name.clone().unwrap_or_default(),
        }
    }
}

impl std::fmt::Display for ObjectKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if self.namespace.is_empty() {
            f.write_str(&self.name)
        } else {
            write!(f, "{}/{}", self.namespace, self.name)
        }
    }
}

/// A change seen by a reflector: the object before and after. `old` is `None` for an object
/// that appeared, `new` is `None` for one that went away.
#[derive(Debug)]
pub struct Change<K> {
    /// The object as it was cached before, if it was.
    pub old: Option<Arc<K>>,
    /// The object as it is cached now, if it still exists.
    pub new: Option<Arc<K>>,
}

/// Removes from an object what no controller reads, before it is cached.
pub type Strip<K> = fn(&mut K);

/// Drops `managedFields`, which every object may carry and no controller reads.
pub fn strip_managed_fields<K: Resource>(obj: &mut K) {
    obj.meta_mut().managed_fields = None;
}

/// Receives every change a reflector applies. Called with the cache already updated; must
/// not block.
pub type Subscriber<K> = Arc<dyn Fn(&Change<K>) + Send + Sync>;

/// The objects and their indexes. Objects are held by namespace and name only (no map by whole
/// key beside it: at 100,000 pods that map and its copies of the keys were 14 MB).
struct Inner<K> {
    /// Namespace -> its objects by name (the objects themselves, so listing a namespace
    /// hashes nothing per object).
    by_namespace: HashMap<String, BTreeMap<String, Arc<K>>>,
    /// Controller owner UID -> the objects it controls, by key (the objects themselves, so
    /// listing an owner's looks nothing up per object).
    by_owner: HashMap<String, BTreeMap<ObjectKey, Arc<K>>>,
}

impl<K> Default for Inner<K> {
    fn default() -> Self {
        Self { by_namespace: HashMap::new(), by_owner: HashMap::new() }
    }
}

impl<K> Inner<K> {
    fn get(&self, key: &ObjectKey) -> Option<&Arc<K>> {
        self.by_namespace.get(&key.namespace)?.get(&key.name)
    }

    fn objects(&self) -> impl Iterator<Item = &Arc<K>> {
        self.by_namespace.values().flat_map(BTreeMap::values)
    }
}

/// An in-memory, indexed copy of one kind of object, kept current by [`Cache::run`].
pub struct Cache<K> {
    inner: Arc<RwLock<Inner<K>>>,
    synced: watch::Sender<bool>,
    subscribers: Arc<RwLock<Vec<Subscriber<K>>>>,
}

impl<K> Clone for Cache<K> {
    fn clone(&self) -> Self {
        Self {
            inner: self.inner.clone(),
            synced: self.synced.clone(),
            subscribers: self.subscribers.clone(),
        }
    }
}

impl<K> Default for Cache<K> {
    fn default() -> Self {
        Self { inner: Arc::default(), synced: watch::channel(false).0, subscribers: Arc::default() }
    }
}

fn controller_uid<K: Resource>(obj: &K) -> Option<String> {
    obj.meta()
        .owner_references
        .as_ref()?
        .iter()
        .find(|r| r.controller == Some(true))
        .map(|r| r.uid.clone())
}

impl<K> Cache<K>
where
    K: Resource<DynamicType = ()> + Clone + DeserializeOwned + Debug + Send + Sync + 'static,
{
    /// An empty cache that has not synced yet.
    pub fn new() -> Self {
        Self::default()
    }

    /// Calls `subscriber` for every change from now on.
    pub fn subscribe(&self, subscriber: Subscriber<K>) {
        self.subscribers.write().unwrap_or_else(|p| p.into_inner()).push(subscriber);
    }

    /// True once the first complete list has been loaded.
    pub fn is_synced(&self) -> bool {
        *self.synced.borrow()
    }

    /// Waits until the first complete list has been loaded.
    pub async fn wait_synced(&self) {
        let mut rx = self.synced.subscribe();
        // The sender lives in `self`, so the channel cannot close while we wait.
        let _ = rx.wait_for(|synced| *synced).await;
    }

    /// The object `key`, if cached.
    pub fn get(&self, key: &ObjectKey) -> Option<Arc<K>> {
        self.read().get(key).cloned()
    }

    /// Every object controlled by the owner with this UID, sorted by key.
    pub fn controlled_by(&self, owner_uid: &str) -> Vec<Arc<K>> {
        self.read()
            .by_owner
            .get(owner_uid)
            .into_iter()
            .flat_map(BTreeMap::values)
            .cloned()
            .collect()
    }

    /// Every object in `namespace`, sorted by key.
    pub fn in_namespace(&self, namespace: &str) -> Vec<Arc<K>> {
        self.select_in_namespace(namespace, |_| true)
    }

    /// The objects in `namespace` for which `keep` is true, sorted by key. Only those are
    /// copied out, so a look-up in a namespace of thousands costs one pass of `keep`.
    pub fn select_in_namespace(&self, namespace: &str, keep: impl Fn(&K) -> bool) -> Vec<Arc<K>> {
        let inner = self.read();
        inner
            .by_namespace
            .get(namespace)
            .into_iter()
            .flat_map(BTreeMap::values)
            .filter(|obj| keep(obj))
            .cloned()
            .collect()
    }

    /// True when nothing is cached in `namespace`.
    pub fn none_in_namespace(&self, namespace: &str) -> bool {
        !self.read().by_namespace.contains_key(namespace)
    }

    /// Every cached object, in no particular order.
    pub fn all(&self) -> Vec<Arc<K>> {
        self.read().objects().cloned().collect()
    }

    /// How many objects are cached.
    pub fn len(&self) -> usize {
        self.read().by_namespace.values().map(BTreeMap::len).sum()
    }

    /// True when nothing is cached.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    fn read(&self) -> std::sync::RwLockReadGuard<'_, Inner<K>> {
        // A panic while holding the lock cannot leave the maps half-updated in a way that
        // matters more than losing the cache, so a poisoned lock is used as is.
        self.inner.read().unwrap_or_else(|p| p.into_inner())
    }

    fn write(&self) -> std::sync::RwLockWriteGuard<'_, Inner<K>> {
        self.inner.write().unwrap_or_else(|p| p.into_inner())
    }

    fn notify(&self, change: &Change<K>) {
        let subscribers = self.subscribers.read().unwrap_or_else(|p| p.into_inner()).clone();
        for subscriber in subscribers {
            subscriber(change);
        }
    }

    /// Stores `obj`, returning what it replaces.
    fn upsert(&self, obj: Arc<K>) -> Option<Arc<K>> {
        let key = ObjectKey::of(obj.as_ref());
        let new_owner = controller_uid(obj.as_ref());
        let mut inner = self.write();
        let old = inner
            .by_namespace
            .entry(key.namespace.clone())
            .or_default()
            .insert(key.name.clone(), obj.clone());
        let old_owner = old.as_deref().and_then(controller_uid);
        if let Some(uid) = old_owner.filter(|uid| Some(uid) != new_owner.as_ref()) {
            remove_index(&mut inner.by_owner, &uid, &key);
        }
        if let Some(uid) = new_owner {
            inner.by_owner.entry(uid).or_default().insert(key, obj);
        }
        old
    }

    fn remove(&self, key: &ObjectKey) -> Option<Arc<K>> {
        let mut inner = self.write();
        let named = inner.by_namespace.get_mut(&key.namespace)?;
        let old = named.remove(&key.name)?;
        if named.is_empty() {
            inner.by_namespace.remove(&key.namespace);
        }
        if let Some(uid) = controller_uid(old.as_ref()) {
            remove_index(&mut inner.by_owner, &uid, key);
        }
        Some(old)
    }

    /// Replaces the whole content with `objects`, as a list does, and marks the cache synced:
    /// for a cache filled without a watch (tests, benches, an embedder's own source).
    pub fn load(&self, objects: Vec<Arc<K>>) {
        self.replace_all(objects);
        self.synced.send_replace(true);
    }

    /// Replaces the whole content after a (re)list, reporting the differences.
    fn replace_all(&self, objects: Vec<Arc<K>>) {
        let fresh: HashMap<ObjectKey, Arc<K>> =
            objects.into_iter().map(|o| (ObjectKey::of(o.as_ref()), o)).collect();
        let stale: Vec<ObjectKey> = self
            .read()
            .objects()
            .map(|o| ObjectKey::of(o.as_ref()))
            .filter(|k| !fresh.contains_key(k))
            .collect();
        for key in stale {
            if let Some(old) = self.remove(&key) {
                self.notify(&Change { old: Some(old), new: None });
            }
        }
        for obj in fresh.into_values() {
            let old = self.upsert(obj.clone());
            let unchanged = old.as_ref().is_some_and(|old| {
                old.meta().resource_version == obj.meta().resource_version
                    && old.meta().uid == obj.meta().uid
            });
            if !unchanged {
                self.notify(&Change { old, new: Some(obj) });
            }
        }
    }

    /// Keeps the cache current from `api` until the stream ends (it does not: the watcher
    /// retries with backoff), stripping every object with `strip` first.
    pub async fn run(self, api: Api<K>, config: watcher::Config, strip: Strip<K>) {
        self.run_events(watcher(api, config).default_backoff(), strip).await;
    }

    /// Keeps the cache current from a watcher event stream (for example a
    /// [`kube::runtime::metadata_watcher`]).
    pub async fn run_events(
        self,
        stream: impl futures::Stream<Item = Result<watcher::Event<K>, watcher::Error>>,
        strip: Strip<K>,
    ) {
        futures::pin_mut!(stream);
        let mut buffer: Vec<Arc<K>> = Vec::new();
        while let Some(event) = stream.next().await {
            match event {
                Ok(watcher::Event::Init) => buffer.clear(),
                Ok(watcher::Event::InitApply(mut obj)) => {
                    strip(&mut obj);
                    buffer.push(Arc::new(obj));
                }
                Ok(watcher::Event::InitDone) => {
                    self.replace_all(std::mem::take(&mut buffer));
                    self.synced.send_replace(true);
                }
                Ok(watcher::Event::Apply(mut obj)) => {
                    strip(&mut obj);
                    let obj = Arc::new(obj);
                    let old = self.upsert(obj.clone());
                    self.notify(&Change { old, new: Some(obj) });
                }
                Ok(watcher::Event::Delete(obj)) => {
                    let key = ObjectKey::of(&obj);
                    if let Some(old) = self.remove(&key) {
                        self.notify(&Change { old: Some(old), new: None });
                    }
                }
                Err(err) => {
                    tracing::warn!(kind = %K::kind(&()), error = %err, "watch failed; retrying");
                }
            }
        }
    }
}

fn remove_index<V>(index: &mut HashMap<String, BTreeMap<ObjectKey, V>>, at: &str, key: &ObjectKey) {
    if let Some(keys) = index.get_mut(at) {
        keys.remove(key);
        if keys.is_empty() {
            index.remove(at);
        }
    }
}

/// The watch events of one kind, as a reflector consumes them.
pub type WatchEvents<K> = BoxStream<'static, Result<watcher::Event<K>, watcher::Error>>;

/// A kind [`SharedCaches`] can hold: how it is watched, and what is dropped before caching.
pub trait Watched:
    Resource<DynamicType = ()> + Clone + DeserializeOwned + Debug + Send + Sync + 'static
{
    /// The kind's watch events, in `namespace` (every namespace when `None`; cluster-scoped
    /// kinds ignore it).
    fn watch(client: &Client, namespace: Option<&str>) -> WatchEvents<Self>;

    /// Removes from an object what no reader needs, before it is cached.
    fn strip(obj: &mut Self) {
        strip_managed_fields(obj);
    }
}

/// The watch events of a namespaced kind, in one namespace or all.
pub fn namespaced_watch<K>(client: &Client, namespace: Option<&str>) -> WatchEvents<K>
where
    K: Resource<DynamicType = (), Scope = kube::core::NamespaceResourceScope>
        + Clone
        + DeserializeOwned
        + Debug
        + Send
        + 'static,
{
    namespaced_watch_with(client, namespace, watcher::Config::default().any_semantic())
}

fn namespaced_watch_with<K>(
    client: &Client,
    namespace: Option<&str>,
    config: watcher::Config,
) -> WatchEvents<K>
where
    K: Resource<DynamicType = (), Scope = kube::core::NamespaceResourceScope>
        + Clone
        + DeserializeOwned
        + Debug
        + Send
        + 'static,
{
    let api = match namespace {
        Some(ns) => Api::namespaced(client.clone(), ns),
        None => Api::all(client.clone()),
    };
    watcher(api, config).default_backoff().boxed()
}

/// The watch events of a namespaced kind's objects that match the label selector `labels`,
/// in one namespace or all.
pub fn namespaced_watch_labelled<K>(
    client: &Client,
    namespace: Option<&str>,
    labels: &str,
) -> WatchEvents<K>
where
    K: Resource<DynamicType = (), Scope = kube::core::NamespaceResourceScope>
        + Clone
        + DeserializeOwned
        + Debug
        + Send
        + 'static,
{
    namespaced_watch_with(
        client,
        namespace,
        watcher::Config::default().any_semantic().labels(labels),
    )
}

/// The watch events of a cluster-scoped kind.
pub fn cluster_watch<K>(client: &Client) -> WatchEvents<K>
where
    K: Resource<DynamicType = (), Scope = kube::core::ClusterResourceScope>
        + Clone
        + DeserializeOwned
        + Debug
        + Send
        + 'static,
{
    watcher(Api::all(client.clone()), watcher::Config::default().any_semantic())
        .default_backoff()
        .boxed()
}

/// Implements [`Watched`] for namespaced kinds watched whole.
#[macro_export]
macro_rules! watched_namespaced {
    ($($kind:ty),* $(,)?) => {$(
        impl $crate::cache::Watched for $kind {
            fn watch(
                client: &::kube::Client,
                namespace: Option<&str>,
            ) -> $crate::cache::WatchEvents<Self> {
                $crate::cache::namespaced_watch(client, namespace)
            }
        }
    )*};
}

watched_namespaced!(
    CachedPod,
    crate::cached_revision::CachedRevision,
    PersistentVolumeClaim,
    kruise_api::apps::v1beta1::CloneSet,
    kruise_api::apps::v1beta1::StatefulSet,
    kruise_api::apps::v1beta1::DaemonSet,
    kruise_api::policy::v1beta1::PodUnavailableBudget,
);

/// StorageClasses: whether a claim's class allows volume expansion.
impl Watched for k8s_openapi::api::storage::v1::StorageClass {
    fn watch(client: &Client, _namespace: Option<&str>) -> WatchEvents<Self> {
        cluster_watch(client)
    }
}

/// Nodes are cached as metadata only (their labels place pods in a topology).
impl Watched for PartialObjectMeta<Node> {
    fn watch(client: &Client, _namespace: Option<&str>) -> WatchEvents<Self> {
        cluster_watch(client)
    }
}

/// Whole nodes, for the controllers that decide which nodes run a pod (Advanced DaemonSet):
/// labels, taints, `unschedulable` and conditions. Their images list is dropped.
impl Watched for Node {
    fn watch(client: &Client, _namespace: Option<&str>) -> WatchEvents<Self> {
        cluster_watch(client)
    }

    fn strip(obj: &mut Self) {
        strip_managed_fields(obj);
        if let Some(status) = obj.status.as_mut() {
            status.images = None;
        }
    }
}

/// A reflector not yet spawned: given the client and namespace, it runs for good.
type PendingReflector = Box<dyn FnOnce(Client, Option<String>) -> BoxFuture<'static, ()> + Send>;

/// One cache of one kind, type-erased.
struct SharedEntry {
    kind: String,
    cache: Box<dyn Any + Send + Sync>,
    synced: Box<dyn Fn() -> BoxFuture<'static, ()> + Send + Sync>,
    is_synced: Box<dyn Fn() -> bool + Send + Sync>,
    /// The reflector, until it is spawned.
    reflector: Option<PendingReflector>,
}

#[derive(Default)]
struct SharedInner {
    entries: HashMap<TypeId, SharedEntry>,
    /// Kinds in the order they were first asked for.
    order: Vec<TypeId>,
    /// Set once [`SharedCaches::start`] ran: new kinds start at once.
    running: Option<(Client, Option<String>)>,
    tasks: tokio::task::JoinSet<()>,
    /// State shared by controllers and webhooks beside the caches, one value per type.
    shared: HashMap<TypeId, Arc<dyn std::any::Any + Send + Sync>>,
    /// Watches of kinds known only at run time ([`SharedCaches::spawn_watch`]), until the
    /// caches start.
    pending_watches: Vec<(String, PendingReflector)>,
}

/// Every cache of the manager, one per kind, shared by all controllers and webhooks. Cheap to
/// clone; clones share the caches.
#[derive(Clone, Default)]
pub struct SharedCaches {
    inner: Arc<Mutex<SharedInner>>,
}

impl std::fmt::Debug for SharedCaches {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SharedCaches").field("kinds", &self.kinds()).finish()
    }
}

impl SharedCaches {
    /// No caches yet.
    pub fn new() -> Self {
        Self::default()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, SharedInner> {
        self.inner.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The shared value of type `T` (state a controller and a webhook both use, such as
    /// the PodUnavailableBudget reservations), created on first use.
    pub fn shared<T: Default + Send + Sync + 'static>(&self) -> Arc<T> {
        let mut inner = self.lock();
        let entry = inner
            .shared
            .entry(TypeId::of::<T>())
            .or_insert_with(|| Arc::new(T::default()) as Arc<dyn std::any::Any + Send + Sync>)
            .clone();
        drop(inner);
        // Invariant: the entry for `TypeId::of::<T>()` holds an `Arc<T>`.
        entry.downcast::<T>().unwrap_or_else(|_| Arc::new(T::default()))
    }

    /// The cache of kind `K`, created on first use. Its reflector starts with
    /// [`SharedCaches::start`], or at once when the caches already run.
    pub fn get<K: Watched>(&self) -> Cache<K> {
        let mut inner = self.lock();
        let id = TypeId::of::<K>();
        if let Some(entry) = inner.entries.get(&id)
            && let Some(cache) = entry.cache.downcast_ref::<Cache<K>>()
        {
            return cache.clone();
        }
        let cache = Cache::<K>::new();
        let for_sync = cache.clone();
        let for_state = cache.clone();
        let for_run = cache.clone();
        let mut entry = SharedEntry {
            kind: K::kind(&()).into_owned(),
            cache: Box::new(cache.clone()),
            synced: Box::new(move || {
                let cache = for_sync.clone();
                Box::pin(async move { cache.wait_synced().await })
            }),
            is_synced: Box::new(move || for_state.is_synced()),
            reflector: Some(Box::new(move |client, namespace| {
                Box::pin(async move {
                    let events = K::watch(&client, namespace.as_deref());
                    for_run.run_events(events, K::strip).await;
                })
            })),
        };
        if let Some((client, namespace)) = inner.running.clone()
            && let Some(reflector) = entry.reflector.take()
        {
            tracing::debug!(kind = %entry.kind, "starting a reflector");
            inner.tasks.spawn(reflector(client, namespace));
        }
        inner.entries.insert(id, entry);
        inner.order.push(id);
        cache
    }

    /// Starts the reflector of every kind asked for so far, watching `namespace` (all when
    /// `None`); kinds asked for later start at once.
    pub fn start(&self, client: Client, namespace: Option<String>) {
        let mut inner = self.lock();
        let inner = &mut *inner;
        inner.running = Some((client.clone(), namespace.clone()));
        for id in &inner.order {
            if let Some(entry) = inner.entries.get_mut(id)
                && let Some(reflector) = entry.reflector.take()
            {
                tracing::debug!(kind = %entry.kind, "starting a reflector");
                inner.tasks.spawn(reflector(client.clone(), namespace.clone()));
            }
        }
        for (what, watch) in inner.pending_watches.drain(..) {
            tracing::debug!(%what, "starting a watch");
            inner.tasks.spawn(watch(client.clone(), namespace.clone()));
        }
    }

    /// Runs `watch` beside the reflectors, with their client and namespace: at once when
    /// they run, else when they start; [`SharedCaches::stop`] ends it with them. For kinds
    /// known only at run time, which have no typed [`Cache`].
    pub fn spawn_watch(
        &self,
        what: &str,
        watch: impl FnOnce(Client, Option<String>) -> BoxFuture<'static, ()> + Send + 'static,
    ) {
        let mut inner = self.lock();
        match inner.running.clone() {
            Some((client, namespace)) => {
                tracing::debug!(%what, "starting a watch");
                inner.tasks.spawn(watch(client, namespace));
            }
            None => inner.pending_watches.push((what.to_owned(), Box::new(watch))),
        }
    }

    /// Waits until every cache asked for so far has loaded its first list.
    pub async fn wait_synced(&self) {
        let waits: Vec<BoxFuture<'static, ()>> = {
            let inner = self.lock();
            inner
                .order
                .iter()
                .filter_map(|id| inner.entries.get(id))
                .map(|e| (e.synced)())
                .collect()
        };
        futures::future::join_all(waits).await;
    }

    /// The kinds whose cache has not loaded its first list yet.
    pub fn unsynced_kinds(&self) -> Vec<String> {
        let inner = self.lock();
        inner
            .order
            .iter()
            .filter_map(|id| inner.entries.get(id))
            .filter(|e| !(e.is_synced)())
            .map(|e| e.kind.clone())
            .collect()
    }

    /// The kinds cached, in the order first asked for.
    pub fn kinds(&self) -> Vec<String> {
        let inner = self.lock();
        inner.order.iter().filter_map(|id| inner.entries.get(id)).map(|e| e.kind.clone()).collect()
    }

    /// How many reflectors run.
    pub fn running_reflectors(&self) -> usize {
        self.lock().tasks.len()
    }

    /// Stops every reflector.
    pub fn stop(&self) {
        let mut inner = self.lock();
        inner.tasks.abort_all();
        inner.running = None;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::api::core::v1::ConfigMap;
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, OwnerReference};

    fn object(namespace: &str, name: &str, owner: Option<&str>, version: &str) -> Arc<ConfigMap> {
        let owner_references = owner.map(|uid| {
            vec![OwnerReference {
                uid: uid.into(),
                controller: Some(true),
                ..OwnerReference::default()
            }]
        });
        Arc::new(ConfigMap {
            metadata: ObjectMeta {
                namespace: Some(namespace.into()),
                name: Some(name.into()),
                resource_version: Some(version.into()),
                owner_references,
                ..ObjectMeta::default()
            },
            ..ConfigMap::default()
        })
    }

    fn names(objects: &[Arc<ConfigMap>]) -> Vec<String> {
        let mut names: Vec<String> =
            objects.iter().map(|o| ObjectKey::of(o.as_ref()).to_string()).collect();
        names.sort();
        names
    }

    /// A relist replaces the content: every index agrees with it, and each difference is
    /// reported once.
    #[test]
    fn a_relist_keeps_every_index_and_the_count_in_step() {
        let cache = Cache::<ConfigMap>::new();
        let changes = Arc::new(Mutex::new(Vec::new()));
        let seen = changes.clone();
        cache.subscribe(Arc::new(move |change: &Change<ConfigMap>| {
            let name = |o: &Option<Arc<ConfigMap>>| {
                o.as_ref().map(|o| ObjectKey::of(o.as_ref()).to_string())
            };
            seen.lock().expect("lock").push((name(&change.old), name(&change.new)));
        }));
        cache.load(vec![
            object("a", "x", Some("u1"), "1"),
            object("a", "y", Some("u1"), "1"),
            object("b", "x", Some("u2"), "1"),
        ]);
        assert_eq!(cache.len(), 3);
        assert_eq!(names(&cache.controlled_by("u1")), ["a/x", "a/y"]);
        assert_eq!(names(&cache.in_namespace("b")), ["b/x"]);
        changes.lock().expect("lock").clear();

        // `a/y` goes, `a/x` changes owner, `b/x` is unchanged, `c/z` arrives.
        cache.load(vec![
            object("a", "x", Some("u2"), "2"),
            object("b", "x", Some("u2"), "1"),
            object("c", "z", None, "1"),
        ]);
        assert_eq!(cache.len(), 3);
        assert_eq!(names(&cache.all()), ["a/x", "b/x", "c/z"]);
        assert!(cache.get(&ObjectKey::new("a", "y")).is_none());
        assert_eq!(
            cache.get(&ObjectKey::new("a", "x")).and_then(|o| o.metadata.resource_version.clone()),
            Some("2".to_owned())
        );
        assert!(cache.controlled_by("u1").is_empty());
        assert_eq!(names(&cache.controlled_by("u2")), ["a/x", "b/x"]);
        assert!(cache.none_in_namespace("d"));
        assert!(!cache.none_in_namespace("c"));
        let mut reported = changes.lock().expect("lock").clone();
        reported.sort();
        assert_eq!(
            reported,
            [
                (None, Some("c/z".to_owned())),
                (Some("a/x".to_owned()), Some("a/x".to_owned())),
                (Some("a/y".to_owned()), None),
            ]
        );

        cache.load(Vec::new());
        assert_eq!((cache.len(), cache.is_empty()), (0, true));
        assert!(cache.all().is_empty() && cache.none_in_namespace("a"));
        assert!(cache.controlled_by("u2").is_empty());
    }
}
