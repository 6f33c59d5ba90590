//! The containermeta worker (upstream `pkg/daemon/containermeta`, gate `DaemonWatchingPod`).
//!
//! For the pods on its node that Kruise manages (controller owner in `apps.kruise.io`, or a
//! SidecarSet injected into them), it reports in the annotation
//! `apps.kruise.io/runtime-containers-meta` (JSON [`RuntimeContainerMetaSet`]) each container's
//! runtime ID, restart count (the CRI attempt) and the kubelet's hash of its spec (the
//! `io.kubernetes.container.hash` annotation). Writes happen only when the set changes, at
//! most about once a second per pod (a change is queued with a one-second delay, which folds
//! bursts of pod updates), with backoff after a failure.
//!
//! Not done: the env-from-metadata hash and the restarter of `InPlaceUpdateEnvFromMetadata`.

use std::sync::Arc;
use std::time::Duration;

use k8s_openapi::api::core::v1::Pod;
use kruise_api::apps::common::{
    RuntimeContainerHashes, RuntimeContainerMeta, RuntimeContainerMetaSet,
};
use kruise_api::well_known::annotations::{RUNTIME_CONTAINERS_META, SIDECARSET_HASH};
use kruise_cri::{Container, ContainerFilter, ContainerRuntime};
use kube::Api;
use kube::api::{Patch, PatchParams};

use super::{
    CONTAINER_HASH_ANNOTATION, CONTAINER_NAME_LABEL, DaemonConfig, POD_UID_LABEL,
    split_container_id,
};
use crate::cache::{Cache, ObjectKey};
use crate::cached_pod::CachedPod;
use crate::queue::{Backoff, WorkQueue};

/// Delay between a pod change and its sync (folds bursts; upstream's one second).
const SYNC_DELAY: Duration = Duration::from_secs(1);

/// The containermeta worker of one node.
#[derive(Clone)]
pub struct ContainerMetaWorker {
    inner: Arc<Inner>,
}

impl std::fmt::Debug for ContainerMetaWorker {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ContainerMetaWorker").finish_non_exhaustive()
    }
}

struct Inner {
    client: kube::Client,
    runtime: Arc<dyn ContainerRuntime>,
    runtime_type: String,
    pods: Cache<CachedPod>,
    queue: WorkQueue<ObjectKey>,
}

impl ContainerMetaWorker {
    /// Subscribes to the node's pods and starts two workers on `tasks`.
    pub fn start(
        client: kube::Client,
        runtime: Arc<dyn ContainerRuntime>,
        config: &DaemonConfig,
        pods: Cache<CachedPod>,
        tasks: &mut tokio::task::JoinSet<()>,
    ) -> Self {
        let queue = WorkQueue::new(
            "runtime_container_meta",
            Backoff { base: Duration::from_millis(500), max: Duration::from_secs(50) },
        );
        {
            let queue = queue.clone();
            pods.subscribe(Arc::new(move |change| {
                let Some(new) = change.new.as_deref() else { return };
                if wants_sync(new) {
                    queue.add_after(ObjectKey::of(new), SYNC_DELAY);
                }
            }));
        }
        // The pod cache's reflector may have loaded pods before the subscription above (it
        // runs on its own task, started first): those are queued here, or they would wait for
        // their next change.
        for pod in pods.all() {
            if wants_sync(&pod) {
                queue.add_after(ObjectKey::of(pod.as_ref()), SYNC_DELAY);
            }
        }
        let inner = Arc::new(Inner {
            client,
            runtime,
            runtime_type: config.runtime_type.clone(),
            pods,
            queue,
        });
        for _ in 0..2 {
            let worker = ContainerMetaWorker { inner: inner.clone() };
            tasks.spawn(async move { worker.work().await });
        }
        ContainerMetaWorker { inner }
    }

    async fn work(&self) {
        let queue = &self.inner.queue;
        while let Some(key) = queue.get().await {
            let result = self.sync(&key).await;
            queue.done(&key);
            match result {
                Ok(()) => queue.forget(&key),
                Err(err) => {
                    tracing::warn!(pod = %key, error = %err, "container meta sync failed");
                    queue.add_rate_limited(key);
                }
            }
        }
    }

    /// Reports the containers of pod `key` when they changed.
    pub async fn sync(
        &self,
        key: &ObjectKey,
    ) -> Result<(), Box<dyn std::error::Error + Send + Sync>> {
        let inner = &self.inner;
        let Some(pod) = inner.pods.get(key) else { return Ok(()) };
        if pod.metadata.deletion_timestamp.is_some() {
            return Ok(());
        }
        let statuses =
            pod.status.as_ref().and_then(|s| s.container_statuses.clone()).unwrap_or_default();
        if statuses.is_empty() {
            return Ok(());
        }
        let Some(uid) = pod.metadata.uid.clone() else { return Ok(()) };
        let containers = inner
            .runtime
            .list_containers(&ContainerFilter::default().label(POD_UID_LABEL, &uid))
            .await?;
        let runtime_type = statuses
            .iter()
            .filter_map(|s| s.container_id.as_deref())
            .map(|id| split_container_id(id).0)
            .find(|t| !t.is_empty())
            .unwrap_or(&inner.runtime_type)
            .to_owned();
        let old = meta_set_of(&pod.metadata);
        let new = build_meta_set(&pod.without_spec(), &containers, old.as_ref(), &runtime_type);
        if old.as_ref() == Some(&new) {
            return Ok(());
        }
        let text = serde_json::to_string(&new)?;
        tracing::info!(pod = %key, meta = %text, "reporting container meta");
        let body =
            serde_json::json!({"metadata": {"annotations": {RUNTIME_CONTAINERS_META: text}}});
        // Upstream writes it through the status subresource (the daemon may patch pods/status).
        Api::<Pod>::namespaced(inner.client.clone(), &key.namespace)
            .patch_status(&key.name, &PatchParams::default(), &Patch::Merge(&body))
            .await?;
        Ok(())
    }
}

/// The set a pod's annotation holds, if it parses.
pub fn meta_set_of(
    meta: &k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta,
) -> Option<RuntimeContainerMetaSet> {
    let text = meta.annotations.as_ref()?.get(RUNTIME_CONTAINERS_META)?;
    serde_json::from_str(text).ok()
}

/// Whether a pod's change may need a new report (upstream's `eventFilter`): Kruise manages
/// the pod, and a started container's ID differs from the reported one, or the number of
/// containers does.
pub fn wants_sync(pod: &CachedPod) -> bool {
    let meta = &pod.metadata;
    if meta.deletion_timestamp.is_some() {
        return false;
    }
    let owned_by_kruise = meta
        .owner_references
        .iter()
        .flatten()
        .filter(|r| r.controller == Some(true))
        .any(|r| r.api_version.split('/').next() == Some(kruise_api::well_known::groups::APPS));
    let injected = meta.annotations.as_ref().is_some_and(|a| a.contains_key(SIDECARSET_HASH));
    if !owned_by_kruise && !injected {
        return false;
    }
    let statuses = pod.status.as_ref().and_then(|s| s.container_statuses.as_ref());
    let Some(statuses) = statuses.filter(|s| !s.is_empty()) else { return false };
    let set = meta_set_of(meta);
    statuses.iter().enumerate().any(|(i, s)| {
        let Some(id) = s.container_id.as_deref().filter(|id| !id.is_empty()) else {
            return false;
        };
        match &set {
            None => true,
            Some(set) if set.containers.len() != statuses.len() => true,
            Some(set) => set.containers.get(i).is_none_or(|c| c.container_id != id),
        }
    })
}

/// The set to report: for each container status of the pod (in order), the newest runtime
/// container of that name, keeping what was reported for the same container ID.
pub fn build_meta_set(
    pod: &Pod,
    containers: &[Container],
    old: Option<&RuntimeContainerMetaSet>,
    runtime_type: &str,
) -> RuntimeContainerMetaSet {
    let statuses =
        pod.status.as_ref().and_then(|s| s.container_statuses.as_deref()).unwrap_or_default();
    let mut set = RuntimeContainerMetaSet { containers: Vec::with_capacity(statuses.len()) };
    for status in statuses {
        let newest = containers
            .iter()
            .filter(|c| c.labels.get(CONTAINER_NAME_LABEL).unwrap_or(&c.name) == &status.name)
            .max_by_key(|c| (c.attempt, c.created_at));
        let Some(c) = newest else { continue };
        let id = format!("{runtime_type}://{}", c.id);
        let previous = old.and_then(|o| o.containers.iter().find(|m| m.container_id == id));
        let meta = match previous {
            Some(m) => m.clone(),
            None => RuntimeContainerMeta {
                name: status.name.clone(),
                container_id: id,
                restart_count: i32::try_from(c.attempt).unwrap_or(i32::MAX),
                hashes: RuntimeContainerHashes {
                    plain_hash: c
                        .annotations
                        .get(CONTAINER_HASH_ANNOTATION)
                        .and_then(|h| u64::from_str_radix(h, 16).ok())
                        .unwrap_or(0),
                    ..Default::default()
                },
            },
        };
        set.containers.push(meta);
    }
    set
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use k8s_openapi::api::core::v1::{ContainerStatus, PodStatus};

    fn container(id: &str, name: &str, attempt: u32, hash: &str) -> Container {
        Container {
            id: id.into(),
            name: name.into(),
            attempt,
            labels: [(CONTAINER_NAME_LABEL.to_owned(), name.to_owned())].into(),
            annotations: [(CONTAINER_HASH_ANNOTATION.to_owned(), hash.to_owned())].into(),
            ..Default::default()
        }
    }

    /// A pod the cache loaded before the worker subscribed (its reflector runs on a task of
    /// its own, started first) is reported all the same, without waiting for a change.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn pods_cached_before_the_worker_starts_are_reported() {
        use kube::api::{Patch, PatchParams, PostParams};
        use kube::runtime::watcher::Event;

        let sim = kruise_sim::Server::start(kruise_sim::Config::default()).await.unwrap();
        let client = kruise_sim::nodes::client_from_kubeconfig(&sim.kubeconfig).await.unwrap();
        let pods_api = Api::<Pod>::namespaced(client.clone(), "default");
        let pod: Pod = serde_json::from_value(serde_json::json!({
            "metadata": {"name": "web-0", "namespace": "default",
                "annotations": {SIDECARSET_HASH: "{}"}},
            "spec": {"nodeName": "node-a", "containers": [{"name": "app", "image": "busybox:1"}]},
        }))
        .unwrap();
        let uid =
            pods_api.create(&PostParams::default(), &pod).await.unwrap().metadata.uid.unwrap();
        let fake = kruise_cri::FakeRuntime::new("node-a");
        fake.add_image("busybox:1", 1000);
        let labels = |c: Option<&str>| {
            let mut l: kruise_cri::types::StringMap =
                [(POD_UID_LABEL.to_owned(), uid.clone())].into();
            if let Some(c) = c {
                l.insert(CONTAINER_NAME_LABEL.to_owned(), c.to_owned());
            }
            l
        };
        let sandbox = fake.run_pod_sandbox(kruise_cri::types::PodSandboxConfig {
            name: "web-0".into(),
            uid: uid.clone(),
            namespace: "default".into(),
            labels: labels(None),
            ..Default::default()
        });
        let id = fake
            .create_container(
                &sandbox,
                kruise_cri::types::ContainerConfig {
                    name: "app".into(),
                    image: "busybox:1".into(),
                    labels: labels(Some("app")),
                    ..Default::default()
                },
            )
            .unwrap();
        let status = serde_json::json!({"status": {"containerStatuses": [{"name": "app",
            "image": "busybox:1", "imageID": "", "ready": true, "restartCount": 0,
            "containerID": format!("containerd://{id}")}]}});
        pods_api
            .patch_status("web-0", &PatchParams::default(), &Patch::Merge(status))
            .await
            .unwrap();

        // The cache holds the pod before the worker subscribes.
        let cached: CachedPod =
            Api::<CachedPod>::namespaced(client.clone(), "default").get("web-0").await.unwrap();
        let pods = Cache::<CachedPod>::new();
        let events = [Ok(Event::Init), Ok(Event::InitApply(cached)), Ok(Event::InitDone)];
        pods.clone().run_events(futures::stream::iter(events), |_| {}).await;
        assert!(pods.is_synced());

        let mut tasks = tokio::task::JoinSet::new();
        let runtime: Arc<dyn ContainerRuntime> = Arc::new(fake);
        ContainerMetaWorker::start(client, runtime, &DaemonConfig::new("node-a"), pods, &mut tasks);
        let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
        loop {
            let pod = pods_api.get("web-0").await.unwrap();
            if let Some(meta) = meta_set_of(&pod.metadata) {
                assert_eq!(meta.containers[0].container_id, format!("containerd://{id}"));
                break;
            }
            assert!(tokio::time::Instant::now() < deadline, "the pod was never reported");
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        tasks.abort_all();
    }

    #[test]
    fn builds_the_set_from_the_newest_instances() {
        let pod = Pod {
            status: Some(PodStatus {
                container_statuses: Some(vec![
                    ContainerStatus { name: "app".into(), ..Default::default() },
                    ContainerStatus { name: "sidecar".into(), ..Default::default() },
                    ContainerStatus { name: "absent".into(), ..Default::default() },
                ]),
                ..Default::default()
            }),
            ..Default::default()
        };
        let containers = [
            container("a0", "app", 0, "ff"),
            container("a1", "app", 1, "10"),
            container("s0", "sidecar", 0, "zz"),
        ];
        let set = build_meta_set(&pod, &containers, None, "containerd");
        assert_eq!(set.containers.len(), 2);
        assert_eq!(set.containers[0].container_id, "containerd://a1");
        assert_eq!(set.containers[0].restart_count, 1);
        assert_eq!(set.containers[0].hashes.plain_hash, 16);
        assert_eq!(set.containers[1].hashes.plain_hash, 0);
        // A reported entry for the same container is kept as it is.
        let mut old = set.clone();
        old.containers[0].hashes.extracted_env_from_metadata_hash = 7;
        let again = build_meta_set(&pod, &containers, Some(&old), "containerd");
        assert_eq!(again, old);
    }
}
