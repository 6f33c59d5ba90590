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
//! With `InPlaceUpdateEnvFromMetadata` (on by default) it also reports, for each running
//! container, the hash of the env vars it takes from pod labels and annotations, as the
//! container holds them: read once per container with `env` through CRI `ExecSync`, the way
//! upstream's daemon does, and kept while the container ID stays. While the pod is being
//! updated in place (`InPlaceUpdateReady` `False`), a running container whose hash differs
//! from the one the pod's current labels and annotations give is stopped (two seconds of
//! grace, upstream's minimum), so that the kubelet starts it again with the new values: an
//! in-place update that changes only such an env var then completes.

use std::sync::Arc;
use std::time::Duration;

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::Pod;
use kruise_api::apps::common::{
    RuntimeContainerHashes, RuntimeContainerMeta, RuntimeContainerMetaSet,
};
use kruise_api::well_known::annotations::{RUNTIME_CONTAINERS_META, SIDECARSET_HASH};
use kruise_cri::{Container, ContainerFilter, ContainerRuntime, ContainerState};
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
/// How long reading a container's env may take, and how long until it is tried again after
/// it failed (upstream's three seconds).
const ENV_READ: Duration = Duration::from_secs(3);
/// The grace period of a restart for new env values (upstream's minimum grace period).
const RESTART_GRACE_SECS: i64 = 2;

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
    /// `InPlaceUpdateEnvFromMetadata`: report env hashes and restart for new values.
    env_from_metadata: bool,
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
        let env_from_metadata = config.feature_gates.enabled("InPlaceUpdateEnvFromMetadata");
        {
            let queue = queue.clone();
            pods.subscribe(Arc::new(move |change| {
                let Some(new) = change.new.as_deref() else { return };
                if wants_sync(new) || (env_from_metadata && may_need_env_restart(new)) {
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
            env_from_metadata,
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
        // Metadata and status, the status decoded once for both uses below.
        let light = pod.without_spec();
        let statuses =
            light.status.as_ref().and_then(|s| s.container_statuses.as_deref()).unwrap_or_default();
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
        let mut new = build_meta_set(&light, &containers, old.as_ref(), &runtime_type);
        if inner.env_from_metadata {
            let whole = pod.to_pod()?;
            self.read_env_hashes(key, &whole, &containers, &runtime_type, &mut new).await;
            self.restart_for_env(key, &whole, &containers, &runtime_type, &new).await?;
        }
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

impl ContainerMetaWorker {
    /// Fills in the env-from-metadata hash of each running container that has none yet, from
    /// the values the container holds. A container whose env cannot be read keeps 0 and the
    /// pod is looked at again later.
    async fn read_env_hashes(
        &self,
        key: &ObjectKey,
        pod: &Pod,
        containers: &[Container],
        runtime_type: &str,
        set: &mut RuntimeContainerMetaSet,
    ) {
        for meta in
            set.containers.iter_mut().filter(|m| m.hashes.extracted_env_from_metadata_hash == 0)
        {
            let Some(spec) = container_spec(pod, &meta.name) else { continue };
            let Some(running) = runtime_container(containers, runtime_type, &meta.container_id)
                .filter(|c| c.state == ContainerState::Running)
            else {
                continue;
            };
            let cmd = vec!["env".to_owned()];
            match self.inner.runtime.exec_sync(&running.id, cmd, ENV_READ).await {
                Ok(out) if out.exit_code == 0 => {
                    let env = parse_env(&String::from_utf8_lossy(&out.stdout));
                    meta.hashes.extracted_env_from_metadata_hash =
                        kruise_core::inplace::running_env_from_metadata_hash(spec, &env);
                }
                Ok(out) => {
                    tracing::warn!(pod = %key, container = %meta.name, code = out.exit_code,
                        "reading the container's env failed");
                    self.inner.queue.add_after(key.clone(), ENV_READ);
                }
                Err(err) => {
                    tracing::warn!(pod = %key, container = %meta.name, error = %err,
                        "reading the container's env failed");
                    self.inner.queue.add_after(key.clone(), ENV_READ);
                }
            }
        }
    }

    /// While the pod is updated in place, stops each running container whose env-from-metadata
    /// hash is not the one the pod's labels and annotations give now.
    async fn restart_for_env(
        &self,
        key: &ObjectKey,
        pod: &Pod,
        containers: &[Container],
        runtime_type: &str,
        set: &RuntimeContainerMetaSet,
    ) -> Result<(), kruise_cri::CriError> {
        if !in_place_updating(pod.status.as_ref()) {
            return Ok(());
        }
        for meta in &set.containers {
            let reported = meta.hashes.extracted_env_from_metadata_hash;
            let Some(spec) = container_spec(pod, &meta.name) else { continue };
            if reported == 0
                || reported == kruise_core::inplace::container_env_from_metadata_hash(spec, pod)
            {
                continue;
            }
            let Some(running) = runtime_container(containers, runtime_type, &meta.container_id)
                .filter(|c| c.state == ContainerState::Running)
            else {
                continue;
            };
            tracing::info!(pod = %key, container = %meta.name, id = %meta.container_id,
                "stopping the container: its env from pod metadata changed");
            self.inner.runtime.stop_container(&running.id, RESTART_GRACE_SECS).await?;
        }
        Ok(())
    }
}

/// The container of the pod spec named `name`.
fn container_spec<'p>(
    pod: &'p Pod,
    name: &str,
) -> Option<&'p k8s_openapi::api::core::v1::Container> {
    pod.spec.as_ref()?.containers.iter().find(|c| c.name == name)
}

/// The runtime container a reported ID (`<type>://<id>`) names.
fn runtime_container<'c>(
    containers: &'c [Container],
    runtime_type: &str,
    reported: &str,
) -> Option<&'c Container> {
    let id = reported.strip_prefix(runtime_type)?.strip_prefix("://")?;
    containers.iter().find(|c| c.id == id)
}

/// `NAME=value` lines, as `env` prints them (a line without `=` is skipped).
fn parse_env(text: &str) -> BTreeMap<String, String> {
    text.lines()
        .filter_map(|line| line.trim().split_once('='))
        .map(|(k, v)| (k.to_owned(), v.to_owned()))
        .collect()
}

/// Whether the pod is being updated in place: its `InPlaceUpdateReady` condition is `False`.
fn in_place_updating(status: Option<&k8s_openapi::api::core::v1::PodStatus>) -> bool {
    status.and_then(|s| s.conditions.as_ref()).is_some_and(|c| {
        c.iter().any(|c| {
            c.type_ == kruise_api::well_known::readiness_gates::IN_PLACE_UPDATE_READY
                && c.status == "False"
        })
    })
}

/// A cheap first look at a pod change: it is being updated in place and some container takes
/// env vars from its labels or annotations, so a container may have to be restarted.
fn may_need_env_restart(pod: &CachedPod) -> bool {
    pod.metadata.deletion_timestamp.is_none()
        && (pod.spec_mentions("metadata.labels") || pod.spec_mentions("metadata.annotations"))
        && in_place_updating(pod.status().as_ref())
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
    let status = pod.status();
    let statuses = status.as_ref().and_then(|s| s.container_statuses.as_ref());
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

    #[test]
    fn env_output_and_reported_ids_are_read_as_the_runtime_gives_them() {
        let env = parse_env("PATH=/usr/bin\nAPP_VERSION=v1\nEMPTY=\nA=b=c\nnoise\n");
        assert_eq!(env.get("APP_VERSION").map(String::as_str), Some("v1"));
        assert_eq!(env.get("EMPTY").map(String::as_str), Some(""));
        assert_eq!(env.get("A").map(String::as_str), Some("b=c"));
        assert!(!env.contains_key("noise"));

        let containers = [container("abc", "main", 0, "1")];
        assert!(runtime_container(&containers, "containerd", "containerd://abc").is_some());
        assert!(runtime_container(&containers, "containerd", "docker://abc").is_none());
        assert!(runtime_container(&containers, "containerd", "containerd://other").is_none());
    }

    #[test]
    fn only_an_in_place_update_in_progress_restarts() {
        let pod = |status: &str| -> Pod {
            serde_json::from_value(serde_json::json!({
                "metadata": {"name": "p"},
                "status": {"conditions": [{"type": "InPlaceUpdateReady", "status": status}]},
            }))
            .unwrap()
        };
        assert!(in_place_updating(pod("False").status.as_ref()));
        assert!(!in_place_updating(pod("True").status.as_ref()));
        assert!(!in_place_updating(None));
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
