//! The ConfigMaps and Secrets a kubelet reads when it starts a container: those named by the
//! container's `env[].valueFrom` (`configMapKeyRef`, `secretKeyRef`) and `envFrom`.
//!
//! [`EnvObjects`] is what the kubelet asks. [`ApiObjects`], what the simulated nodes use, reads
//! them through the API server as a client of it, like a real kubelet's watch-based ConfigMap and
//! Secret managers, with one difference of scope: a real kubelet watches each object a pod names
//! (a field selector on its name), while the simulated nodes share one watch per namespace and
//! kind, started when a pod on a simulated node names a ConfigMap (or Secret) of that namespace
//! and stopped after a minute without look-ups (the real managers' shortest idle time). Each
//! change in a watched namespace wakes the simulator, so a container waiting for a key starts
//! as soon as the key is added.

use futures::StreamExt as _;
use k8s_openapi::api::core::v1::{ConfigMap, Secret};
use kube::Api;
use kube::runtime::reflector::{self, ObjectRef};
use kube::runtime::{WatchStreamExt as _, watcher};
use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::sync::Notify;
use tokio::time::Instant;

/// A kind of object a container's environment can name.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum EnvKind {
    /// A ConfigMap.
    ConfigMap,
    /// A Secret.
    Secret,
}

/// The answer to a look-up.
#[derive(Clone, Debug, PartialEq)]
pub enum Lookup<T> {
    /// The object as the cache has it.
    Found(T),
    /// The (synced) cache has no such object.
    NotFound,
    /// The cache has not listed the namespace yet (or cannot: the watch fails).
    NotSynced,
}

/// Where a kubelet reads the ConfigMaps and Secrets its containers' environments name.
pub trait EnvObjects: Send + Sync {
    /// A pod on the node names objects of `kind` in `namespace` (the kubelet's `RegisterPod`):
    /// a cache may start watching them now, before a container needs them.
    fn register(&self, _kind: EnvKind, _namespace: &str) {}

    /// The ConfigMap `namespace/name`.
    fn config_map(&self, namespace: &str, name: &str) -> Lookup<Arc<ConfigMap>>;

    /// The Secret `namespace/name`.
    fn secret(&self, namespace: &str, name: &str) -> Lookup<Arc<Secret>>;
}

/// How long a namespace watch nobody looked at keeps running.
const IDLE: Duration = Duration::from_secs(60);

/// The watch of one kind of object in one namespace.
struct NsWatch<K: kube::Resource<DynamicType = ()> + 'static> {
    store: reflector::Store<K>,
    synced: Arc<AtomicBool>,
    used: Instant,
    task: tokio::task::JoinHandle<()>,
}

impl<K: kube::Resource<DynamicType = ()> + 'static> Drop for NsWatch<K> {
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// The namespace watches of one kind.
struct Watches<K: kube::Resource<DynamicType = ()> + 'static> {
    by_ns: Mutex<HashMap<String, NsWatch<K>>>,
}

impl<K> Watches<K>
where
    K: kube::Resource<DynamicType = (), Scope = k8s_openapi::NamespaceResourceScope>
        + Clone
        + serde::de::DeserializeOwned
        + std::fmt::Debug
        + Send
        + Sync
        + 'static,
{
    fn new() -> Self {
        Watches { by_ns: Mutex::new(HashMap::new()) }
    }

    /// Runs `f` on the watch of `namespace`, starting it if there is none (`None` when it
    /// cannot start: no async runtime here).
    fn with<T>(
        &self,
        client: &kube::Client,
        notify: &Arc<Notify>,
        namespace: &str,
        f: impl FnOnce(&NsWatch<K>) -> T,
    ) -> Option<T> {
        let mut by_ns = self.by_ns.lock().unwrap_or_else(|p| p.into_inner());
        if !by_ns.contains_key(namespace) {
            let w = start::<K>(client, notify, namespace)?;
            by_ns.insert(namespace.to_owned(), w);
        }
        let w = by_ns.get_mut(namespace)?;
        w.used = Instant::now();
        Some(f(w))
    }

    fn get(
        &self,
        client: &kube::Client,
        notify: &Arc<Notify>,
        namespace: &str,
        name: &str,
    ) -> Lookup<Arc<K>> {
        self.with(client, notify, namespace, |w| {
            if !w.synced.load(Ordering::Acquire) {
                return Lookup::NotSynced;
            }
            match w.store.get(&ObjectRef::new(name).within(namespace)) {
                Some(o) => Lookup::Found(o),
                None => Lookup::NotFound,
            }
        })
        .unwrap_or(Lookup::NotSynced)
    }

    fn collect_idle(&self, now: Instant) {
        let mut by_ns = self.by_ns.lock().unwrap_or_else(|p| p.into_inner());
        by_ns.retain(|_, w| now.saturating_duration_since(w.used) < IDLE);
    }

    fn watched(&self) -> Vec<String> {
        let by_ns = self.by_ns.lock().unwrap_or_else(|p| p.into_inner());
        let mut v: Vec<String> = by_ns.keys().cloned().collect();
        v.sort();
        v
    }
}

/// Starts watching the objects of kind `K` in `namespace`; every change wakes `notify`.
fn start<K>(client: &kube::Client, notify: &Arc<Notify>, namespace: &str) -> Option<NsWatch<K>>
where
    K: kube::Resource<DynamicType = (), Scope = k8s_openapi::NamespaceResourceScope>
        + Clone
        + serde::de::DeserializeOwned
        + std::fmt::Debug
        + Send
        + Sync
        + 'static,
{
    let handle = tokio::runtime::Handle::try_current().ok()?;
    let (store, writer) = reflector::store::<K>();
    let api: Api<K> = Api::namespaced(client.clone(), namespace);
    let stream = reflector::reflector(writer, watcher::watcher(api, watcher::Config::default()))
        .default_backoff();
    let synced = Arc::new(AtomicBool::new(false));
    let flag = synced.clone();
    let notify = notify.clone();
    let task = handle.spawn(async move {
        let mut stream = std::pin::pin!(stream);
        while let Some(ev) = stream.next().await {
            match ev {
                Ok(watcher::Event::InitDone) => {
                    flag.store(true, Ordering::Release);
                    notify.notify_one();
                }
                Ok(watcher::Event::Apply(_) | watcher::Event::Delete(_)) => notify.notify_one(),
                // Listing (the store swaps at `InitDone`) or a failure the back-off retries.
                Ok(watcher::Event::Init | watcher::Event::InitApply(_)) | Err(_) => {}
            }
        }
    });
    Some(NsWatch { store, synced, used: Instant::now(), task })
}

/// ConfigMaps and Secrets read through an API server, one watch per namespace and kind (see
/// the module documentation).
pub struct ApiObjects {
    client: kube::Client,
    notify: Arc<Notify>,
    config_maps: Watches<ConfigMap>,
    secrets: Watches<Secret>,
}

impl std::fmt::Debug for ApiObjects {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ApiObjects")
            .field("config_maps", &self.config_maps.watched())
            .field("secrets", &self.secrets.watched())
            .finish_non_exhaustive()
    }
}

impl ApiObjects {
    /// Reads through `client`; every change to a watched object wakes `notify`. Watches start
    /// on the current tokio runtime when first needed.
    pub fn new(client: kube::Client, notify: Arc<Notify>) -> ApiObjects {
        ApiObjects { client, notify, config_maps: Watches::new(), secrets: Watches::new() }
    }

    /// Stops the watches nobody looked at for a minute.
    pub fn collect_idle(&self) {
        let now = Instant::now();
        self.config_maps.collect_idle(now);
        self.secrets.collect_idle(now);
    }

    /// The namespaces whose objects of `kind` are watched, sorted.
    pub fn watched(&self, kind: EnvKind) -> Vec<String> {
        match kind {
            EnvKind::ConfigMap => self.config_maps.watched(),
            EnvKind::Secret => self.secrets.watched(),
        }
    }
}

impl EnvObjects for ApiObjects {
    fn register(&self, kind: EnvKind, namespace: &str) {
        let (client, notify) = (&self.client, &self.notify);
        match kind {
            EnvKind::ConfigMap => self.config_maps.with(client, notify, namespace, |_| ()),
            EnvKind::Secret => self.secrets.with(client, notify, namespace, |_| ()),
        };
    }

    fn config_map(&self, namespace: &str, name: &str) -> Lookup<Arc<ConfigMap>> {
        self.config_maps.get(&self.client, &self.notify, namespace, name)
    }

    fn secret(&self, namespace: &str, name: &str) -> Lookup<Arc<Secret>> {
        self.secrets.get(&self.client, &self.notify, namespace, name)
    }
}

/// An in-memory object source for tests.
#[cfg(test)]
pub(crate) mod testing {
    use super::{EnvKind, EnvObjects, Lookup};
    use serde_json::{Value, json};
    use std::collections::BTreeMap;
    use std::sync::Arc;

    /// ConfigMaps and Secrets in memory, by `namespace/name`.
    #[derive(Default)]
    pub(crate) struct MapObjects {
        pub(crate) config_maps:
            std::sync::Mutex<BTreeMap<String, Arc<k8s_openapi::api::core::v1::ConfigMap>>>,
        pub(crate) secrets:
            std::sync::Mutex<BTreeMap<String, Arc<k8s_openapi::api::core::v1::Secret>>>,
        pub(crate) unsynced: std::sync::atomic::AtomicBool,
        pub(crate) registered: std::sync::Mutex<Vec<(EnvKind, String)>>,
    }

    impl MapObjects {
        pub(crate) fn put_config_map(&self, name: &str, data: Value) {
            let cm = serde_json::from_value(
                json!({"metadata": {"name": name, "namespace": "default"}, "data": data}),
            )
            .expect("configmap");
            self.config_maps.lock().expect("lock").insert(format!("default/{name}"), Arc::new(cm));
        }

        pub(crate) fn put_secret(&self, name: &str, data: Value) {
            let s = serde_json::from_value(
                json!({"metadata": {"name": name, "namespace": "default"}, "data": data}),
            )
            .expect("secret");
            self.secrets.lock().expect("lock").insert(format!("default/{name}"), Arc::new(s));
        }

        fn lookup<T: Clone>(&self, m: &BTreeMap<String, T>, ns: &str, name: &str) -> Lookup<T> {
            if self.unsynced.load(std::sync::atomic::Ordering::SeqCst) {
                return Lookup::NotSynced;
            }
            m.get(&format!("{ns}/{name}")).cloned().map_or(Lookup::NotFound, Lookup::Found)
        }
    }

    impl EnvObjects for MapObjects {
        fn register(&self, kind: EnvKind, namespace: &str) {
            self.registered.lock().expect("lock").push((kind, namespace.to_owned()));
        }

        fn config_map(
            &self,
            ns: &str,
            name: &str,
        ) -> Lookup<Arc<k8s_openapi::api::core::v1::ConfigMap>> {
            self.lookup(&self.config_maps.lock().expect("lock"), ns, name)
        }

        fn secret(&self, ns: &str, name: &str) -> Lookup<Arc<k8s_openapi::api::core::v1::Secret>> {
            self.lookup(&self.secrets.lock().expect("lock"), ns, name)
        }
    }
}
