//! Custom workloads a PersistentPodState may target: the kinds of the
//! `PPS_Watch_Custom_Workload_WhiteList` entry of `kruise-configuration`, watched as dynamic
//! objects.
//!
//! One task follows the ConfigMap (a watch of that one object) and runs a watch per
//! whitelisted kind, found by discovery; a kind that leaves the whitelist is no longer
//! watched. Upstream reads the whitelist once at start, so that a kind added later needs a
//! restart; here it is followed within a watch event. Each kind's objects are kept (metadata
//! and spec) for the reconciles, and their changes wake the PersistentPodStates that target
//! them and the generation keys their annotations ask for.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::{Arc, RwLock};
use std::time::Duration;

use futures::StreamExt;
use futures::future::BoxFuture;
use k8s_openapi::api::core::v1::ConfigMap;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kruise_api::apps::v1beta1::PersistentPodState;
use kruise_api::well_known::config;
use kruise_core::persistentpodstate::{CustomWorkloadWhitelist, is_stateful_set};
use kube::api::{Api, ApiResource, DynamicObject, GroupVersionKind};
use kube::runtime::{WatchStreamExt, watcher};

use crate::cache::{Cache, ObjectKey};
use crate::queue::WorkQueue;

/// How often kinds the whitelist names but discovery did not find are looked for again.
const DISCOVERY_RETRY: Duration = Duration::from_secs(30);

/// A custom workload's group and kind (the version does not count, as upstream matches).
type GroupKind = (String, String);

/// What a reference to a custom workload finds.
#[derive(Debug)]
pub(super) enum Lookup {
    /// The whitelist does not name the kind (or it was never read).
    NotWhitelisted,
    /// The kind is whitelisted and its objects are not known yet.
    Loading,
    /// The kind's objects are known, and this one is not among them.
    Missing,
    /// The workload, and the resource it is served as.
    Found(Arc<DynamicObject>, ApiResource),
}

struct WatchedKind {
    resource: ApiResource,
    synced: bool,
    objects: HashMap<ObjectKey, Arc<DynamicObject>>,
}

#[derive(Default)]
struct Inner {
    /// The whitelist as last read; `None` until the ConfigMap's first list.
    whitelist: Option<CustomWorkloadWhitelist>,
    kinds: HashMap<GroupKind, WatchedKind>,
}

/// The custom workloads seen, shared by the controller's reconciles and its watch task.
#[derive(Default)]
pub(super) struct CustomWorkloads {
    inner: RwLock<Inner>,
}

impl std::fmt::Debug for CustomWorkloads {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CustomWorkloads").finish_non_exhaustive()
    }
}

fn group_kind_of(api_version: &str, kind: &str) -> GroupKind {
    let group = api_version.rsplit_once('/').map_or("", |(g, _)| g);
    (group.to_owned(), kind.to_owned())
}

impl CustomWorkloads {
    fn read(&self) -> std::sync::RwLockReadGuard<'_, Inner> {
        self.inner.read().unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    fn write(&self) -> std::sync::RwLockWriteGuard<'_, Inner> {
        self.inner.write().unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// The workload `api_version`/`kind` named `name` in `namespace`.
    pub(super) fn lookup(
        &self,
        namespace: &str,
        api_version: &str,
        kind: &str,
        name: &str,
    ) -> Lookup {
        let inner = self.read();
        let (group, kind) = group_kind_of(api_version, kind);
        let Some(list) = &inner.whitelist else { return Lookup::Loading };
        if !list.contains_workload(&group, &kind) {
            return Lookup::NotWhitelisted;
        }
        match inner.kinds.get(&(group, kind)) {
            Some(watched) if watched.synced => {
                match watched.objects.get(&ObjectKey::new(namespace, name)) {
                    Some(object) => Lookup::Found(object.clone(), watched.resource.clone()),
                    None => Lookup::Missing,
                }
            }
            _ => Lookup::Loading,
        }
    }

    /// Every custom workload, with its `apiVersion` and kind (for the generation keys).
    pub(super) fn all(&self) -> Vec<(String, String, Arc<DynamicObject>)> {
        let inner = self.read();
        inner
            .kinds
            .values()
            .flat_map(|w| {
                w.objects
                    .values()
                    .map(|o| (w.resource.api_version.clone(), w.resource.kind.clone(), o.clone()))
            })
            .collect()
    }
}

/// Maps a change of a workload's metadata to the keys it wakes (see the controller's
/// `workload_keys`).
pub(super) type KeysOf = Arc<
    dyn Fn(&str, &str, Option<&ObjectMeta>, Option<&ObjectMeta>) -> Vec<ObjectKey> + Send + Sync,
>;

/// What the watch task needs.
pub(super) struct Follow {
    pub store: Arc<CustomWorkloads>,
    pub states: Cache<PersistentPodState>,
    pub queue: WorkQueue<ObjectKey>,
    pub manager_namespace: String,
    pub keys_of: KeysOf,
}

impl Follow {
    /// Follows the whitelist and the kinds it names until the task is stopped.
    pub(super) fn run(
        self,
        client: kube::Client,
        namespace: Option<String>,
    ) -> BoxFuture<'static, ()> {
        Box::pin(async move {
            let this = Arc::new(self);
            let api: Api<ConfigMap> = Api::namespaced(client.clone(), &this.manager_namespace);
            let selector = format!("metadata.name={}", config::KRUISE_CONFIGURATION);
            let mut configs = watcher(api, watcher::Config::default().fields(&selector))
                .default_backoff()
                .boxed();
            // The kinds' watches end when this task ends: dropping the set aborts them.
            let mut tasks: HashMap<GroupKind, tokio::task::AbortHandle> = HashMap::new();
            let mut running = tokio::task::JoinSet::new();
            let mut listing: Option<BTreeMap<String, String>> = None;
            let mut retry = tokio::time::interval(DISCOVERY_RETRY);
            loop {
                let data = tokio::select! {
                    event = configs.next() => match event {
                        None => return,
                        Some(Ok(watcher::Event::Init)) => { listing = Some(BTreeMap::new()); None }
                        Some(Ok(watcher::Event::InitApply(cm))) => {
                            listing = Some(cm.data.unwrap_or_default());
                            None
                        }
                        Some(Ok(watcher::Event::InitDone)) => listing.take(),
                        Some(Ok(watcher::Event::Apply(cm))) => Some(cm.data.unwrap_or_default()),
                        Some(Ok(watcher::Event::Delete(_))) => Some(BTreeMap::new()),
                        Some(Err(error)) => {
                            tracing::debug!(%error, "watching kruise-configuration");
                            None
                        }
                    },
                    _ = retry.tick() => None,
                    Some(_) = running.join_next(), if !running.is_empty() => None,
                };
                if this.queue.is_shut_down() {
                    return;
                }
                if let Some(data) = data {
                    match crate::configuration::pps_whitelist(&data) {
                        Ok(list) => this.set_whitelist(list, &mut tasks),
                        // A broken entry keeps the kinds followed so far.
                        Err(message) => tracing::warn!("{message}; the previous one is kept"),
                    }
                }
                this.start_missing(&client, namespace.as_deref(), &mut tasks, &mut running).await;
            }
        })
    }

    /// Takes a new whitelist: the kinds it no longer names are dropped, and the
    /// PersistentPodStates targeting custom workloads are looked at again.
    fn set_whitelist(
        &self,
        list: CustomWorkloadWhitelist,
        tasks: &mut HashMap<GroupKind, tokio::task::AbortHandle>,
    ) {
        {
            let mut inner = self.store.write();
            inner.kinds.retain(|(group, kind), _| list.contains_workload(group, kind));
            tasks.retain(|(group, kind), task| {
                let keep = list.contains_workload(group, kind);
                if !keep {
                    task.abort();
                }
                keep
            });
            inner.whitelist = Some(list);
        }
        for state in self.states.all() {
            let target = &state.spec.target_reference;
            if !is_stateful_set(&target.api_version, &target.kind) {
                self.queue.add(ObjectKey::of(state.as_ref()));
            }
        }
    }

    /// Starts a watch of each whitelisted kind not watched yet, when discovery finds it.
    async fn start_missing(
        self: &Arc<Self>,
        client: &kube::Client,
        namespace: Option<&str>,
        tasks: &mut HashMap<GroupKind, tokio::task::AbortHandle>,
        running: &mut tokio::task::JoinSet<()>,
    ) {
        let wanted: Vec<(GroupKind, String)> = {
            let inner = self.store.read();
            let Some(list) = &inner.whitelist else { return };
            list.workloads
                .iter()
                .map(|w| ((w.gvk.group.clone(), w.gvk.kind.clone()), w.gvk.version.clone()))
                .filter(|(gk, _)| !is_stateful_set(&format!("{}/v", gk.0), &gk.1))
                .filter(|(gk, _)| !tasks.contains_key(gk))
                .collect()
        };
        for ((group, kind), version) in wanted {
            let gvk = GroupVersionKind::gvk(&group, &version, &kind);
            let resource = match kube::discovery::pinned_kind(client, &gvk).await {
                Ok((resource, caps)) if caps.scope == kube::discovery::Scope::Namespaced => {
                    resource
                }
                Ok(_) => {
                    tracing::warn!(%group, %version, %kind, "a whitelisted PersistentPodState workload is cluster-scoped; not followed");
                    continue;
                }
                Err(error) => {
                    tracing::warn!(%group, %version, %kind, %error, "a whitelisted PersistentPodState workload is not served; looked for again in {}s", DISCOVERY_RETRY.as_secs());
                    continue;
                }
            };
            self.store.write().kinds.insert(
                (group.clone(), kind.clone()),
                WatchedKind { resource: resource.clone(), synced: false, objects: HashMap::new() },
            );
            let api: Api<DynamicObject> = match namespace {
                Some(ns) => Api::namespaced_with(client.clone(), ns, &resource),
                None => Api::all_with(client.clone(), &resource),
            };
            let this = self.clone();
            let kind_of = Kind { group_kind: (group, kind), api_version: resource.api_version };
            let task = running.spawn(async move { this.watch_kind(api, kind_of).await });
            tasks.insert(gvk_key(&gvk), task);
        }
    }

    /// Keeps one kind's objects, and wakes the keys their changes ask for.
    async fn watch_kind(&self, api: Api<DynamicObject>, kind: Kind) {
        let group_kind = &kind.group_kind;
        let mut events =
            watcher(api, watcher::Config::default().any_semantic()).default_backoff().boxed();
        let mut listed: Option<BTreeSet<ObjectKey>> = None;
        while let Some(event) = events.next().await {
            match event {
                Ok(watcher::Event::Init) => listed = Some(BTreeSet::new()),
                Ok(watcher::Event::InitApply(object)) => {
                    if let Some(seen) = listed.as_mut() {
                        seen.insert(ObjectKey::of(&object));
                    }
                    self.changed(&kind, object);
                }
                Ok(watcher::Event::InitDone) => {
                    let seen = listed.take().unwrap_or_default();
                    let gone: Vec<Arc<DynamicObject>> = {
                        let mut inner = self.store.write();
                        let Some(watched) = inner.kinds.get_mut(group_kind) else { return };
                        watched.synced = true;
                        let gone: Vec<ObjectKey> =
                            watched.objects.keys().filter(|k| !seen.contains(k)).cloned().collect();
                        gone.iter().filter_map(|k| watched.objects.remove(k)).collect()
                    };
                    for object in gone {
                        self.wake(&kind, Some(&object), None);
                    }
                    // Reconciles that waited for the first list.
                    for state in self.states.all() {
                        let target = &state.spec.target_reference;
                        if group_kind_of(&target.api_version, &target.kind) == *group_kind {
                            self.queue.add(ObjectKey::of(state.as_ref()));
                        }
                    }
                }
                Ok(watcher::Event::Apply(object)) => self.changed(&kind, object),
                Ok(watcher::Event::Delete(object)) => {
                    let key = ObjectKey::of(&object);
                    let old = {
                        let mut inner = self.store.write();
                        inner.kinds.get_mut(group_kind).and_then(|w| w.objects.remove(&key))
                    };
                    self.wake(&kind, old.as_deref().or(Some(&object)), None);
                }
                Err(error) => {
                    tracing::debug!(group = %group_kind.0, kind = %group_kind.1, %error, "watching a custom workload kind");
                }
            }
        }
    }

    fn changed(&self, kind: &Kind, mut object: DynamicObject) {
        object.metadata.managed_fields = None;
        let key = ObjectKey::of(&object);
        let object = Arc::new(object);
        let old = {
            let mut inner = self.store.write();
            let Some(watched) = inner.kinds.get_mut(&kind.group_kind) else { return };
            watched.objects.insert(key, object.clone())
        };
        self.wake(kind, old.as_deref(), Some(&object));
    }

    fn wake(&self, kind: &Kind, old: Option<&DynamicObject>, new: Option<&DynamicObject>) {
        for key in (self.keys_of)(
            &kind.api_version,
            &kind.group_kind.1,
            old.map(|o| &o.metadata),
            new.map(|o| &o.metadata),
        ) {
            self.queue.add(key);
        }
    }
}

/// One watched kind: its group and kind, and the `apiVersion` it is served at.
struct Kind {
    group_kind: GroupKind,
    api_version: String,
}

fn gvk_key(gvk: &GroupVersionKind) -> GroupKind {
    (gvk.group.clone(), gvk.kind.clone())
}

/// A workload's replicas and ordinals from its `spec`, as upstream reads a custom workload:
/// `spec.replicas`, 0 when absent.
pub(super) fn replicas_of(object: &DynamicObject) -> i32 {
    object.data["spec"]["replicas"].as_i64().and_then(|r| i32::try_from(r).ok()).unwrap_or(0)
}
