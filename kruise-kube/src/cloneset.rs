//! The CloneSet controller: reads a snapshot from the shared caches, asks
//! [`kruise_core::cloneset::plan`] what to do, and carries the plan out.
//!
//! One reconcile of `namespace/name`:
//!
//! 1. the CloneSet from the cache (gone or being deleted: nothing to do; owned pods go with
//!    the API server's garbage collector);
//! 2. orphan pods the selector matches are adopted (controller ownerReference, guarded by
//!    the pod's resourceVersion), and the reconcile ends there until the cache shows them;
//! 3. the snapshot (owned pods, PVCs and revisions, node labels, expectations, gates) is
//!    planned;
//! 4. the actions run in order, independent ones of the same kind concurrently (creations in
//!    slow-start batches of 1, 2, 4, ... that stop at the first failure, as upstream);
//!    expectations are recorded around each write;
//! 5. the status is written (a merge patch that also clears fields the new status dropped);
//! 6. the key is requeued when the plan asks, and with backoff when a write failed.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use futures::StreamExt;
use k8s_openapi::api::apps::v1::ControllerRevision;
use k8s_openapi::api::core::v1::{Node, PersistentVolumeClaim, Pod};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference;
use kruise_api::apps::v1beta1::CloneSet;
use kruise_core::cloneset::{
    Action, Blocked, CloneSetPlan, CloneSetSnapshot, EventType, FeatureGates, PlannerOptions,
    PodSelector, SnapshotPod,
};
use kruise_core::expectations::Expectation;
use kube::api::{DeleteParams, PartialObjectMeta, Patch, PatchParams, PostParams, Preconditions};
use kube::{Api, Resource};
use serde_json::{Value, json};

use crate::applier::{Applier, ApplyError, FIELD_MANAGER};
use crate::cache::{Cache, Change, ObjectKey};
use crate::cached_pod::{CachedPod, SpecDecodeError};
use crate::expectations::ExpectationStore;
use crate::metrics::{Metrics, ReconcileResult};
use crate::queue::{Backoff, WorkQueue};

/// The controller's name in metrics, Events and logs (upstream's).
pub const CONTROLLER_NAME: &str = "cloneset-controller";

/// The caches the CloneSet controller reads. Shared with other controllers.
#[derive(Clone, Default)]
pub struct CloneSetCaches {
    /// CloneSets (apps.kruise.io/v1beta1).
    pub clonesets: Cache<CloneSet>,
    /// Pods.
    /// Pods, in their compact cached form.
    pub pods: Cache<CachedPod>,
    /// PersistentVolumeClaims.
    pub pvcs: Cache<PersistentVolumeClaim>,
    /// ControllerRevisions.
    pub revisions: Cache<ControllerRevision>,
    /// Nodes, metadata only (labels for topology spread).
    pub nodes: Cache<PartialObjectMeta<Node>>,
}

/// Settings of the CloneSet controller (upstream's flags).
#[derive(Clone, Debug)]
#[non_exhaustive]
pub struct CloneSetConfig {
    /// Concurrent reconciles (`--cloneset-workers`, default 3).
    pub workers: usize,
    /// Feature gates that change planning.
    pub gates: FeatureGates,
    /// Planner settings (expectation timeout and others).
    pub options: PlannerOptions,
    /// Work-queue backoff.
    pub backoff: Backoff,
}

impl Default for CloneSetConfig {
    fn default() -> Self {
        Self {
            workers: 3,
            gates: FeatureGates::default(),
            options: PlannerOptions::default(),
            backoff: Backoff::default(),
        }
    }
}

/// Why a reconcile failed. The key is retried with backoff.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ReconcileError {
    /// A write failed.
    #[error("{action} {target}: {source}")]
    Write {
        /// What was being done (`create pod`, `patch status`, ...).
        action: &'static str,
        /// The object's name.
        target: String,
        /// The classified failure.
        #[source]
        source: ApplyError,
    },
    /// A cached pod could not be read back.
    #[error(transparent)]
    CachedPod(#[from] SpecDecodeError),
}

/// The CloneSet controller. Cheap to clone.
#[derive(Clone)]
pub struct CloneSetController {
    inner: Arc<Inner>,
}

struct Inner {
    caches: CloneSetCaches,
    queue: WorkQueue<ObjectKey>,
    expectations: ExpectationStore,
    applier: Applier,
    metrics: Metrics,
    config: CloneSetConfig,
}

fn cloneset_owner(owner: &OwnerReference) -> bool {
    owner.controller == Some(true)
        && owner.kind == "CloneSet"
        && owner.api_version.starts_with("apps.kruise.io/")
}

/// The CloneSet controlling `obj`, if any.
fn controlling_cloneset<K: Resource>(obj: &K) -> Option<ObjectKey> {
    let meta = obj.meta();
    let owner = meta.owner_references.as_ref()?.iter().find(|r| cloneset_owner(r))?;
    Some(ObjectKey::new(meta.namespace.clone().unwrap_or_default(), owner.name.clone()))
}

fn has_controller<K: Resource>(obj: &K) -> bool {
    obj.meta().owner_references.iter().flatten().any(|r| r.controller == Some(true))
}

impl CloneSetController {
    /// A controller over `caches`, writing through `applier`. Subscribes to the caches so that
    /// changes queue the CloneSets they concern.
    pub fn new(
        caches: CloneSetCaches,
        applier: Applier,
        metrics: Metrics,
        config: CloneSetConfig,
    ) -> Self {
        let queue = WorkQueue::new(CONTROLLER_NAME, config.backoff).with_metrics(metrics.clone());
        let controller = Self {
            inner: Arc::new(Inner {
                caches,
                queue,
                expectations: ExpectationStore::new(),
                applier,
                metrics,
                config,
            }),
        };
        controller.subscribe();
        controller
    }

    /// The work queue (for tests and the manager's resync).
    pub fn queue(&self) -> &WorkQueue<ObjectKey> {
        &self.inner.queue
    }

    fn subscribe(&self) {
        let caches = &self.inner.caches;
        let queue = self.inner.queue.clone();
        caches.clonesets.subscribe(Arc::new(move |change: &Change<CloneSet>| {
            if let Some(obj) = change.new.as_deref().or(change.old.as_deref()) {
                queue.add(ObjectKey::of(obj));
            }
        }));

        let queue = self.inner.queue.clone();
        let clonesets = caches.clonesets.clone();
        caches.pods.subscribe(Arc::new(move |change: &Change<CachedPod>| {
            enqueue_owners(&queue, &clonesets, change);
        }));
        let queue = self.inner.queue.clone();
        let clonesets = caches.clonesets.clone();
        caches.pvcs.subscribe(Arc::new(move |change: &Change<PersistentVolumeClaim>| {
            enqueue_owners(&queue, &clonesets, change);
        }));
        let queue = self.inner.queue.clone();
        let clonesets = caches.clonesets.clone();
        caches.revisions.subscribe(Arc::new(move |change: &Change<ControllerRevision>| {
            enqueue_owners(&queue, &clonesets, change);
        }));
    }

    /// Queues every cached CloneSet (after gaining leadership, or a resync).
    pub fn enqueue_all(&self) {
        for cs in self.inner.caches.clonesets.all() {
            self.inner.queue.add(ObjectKey::of(cs.as_ref()));
        }
    }

    /// Runs the workers until `stop` resolves. Each key is reconciled by one worker at a
    /// time; a failing key is retried with backoff and never holds up the others.
    pub async fn run(&self, stop: impl std::future::Future<Output = ()>) {
        let workers = self.inner.config.workers.max(1);
        let (stop_tx, stop_rx) = tokio::sync::watch::channel(false);
        let mut tasks = tokio::task::JoinSet::new();
        for _ in 0..workers {
            let this = self.clone();
            let mut stop_rx = stop_rx.clone();
            tasks.spawn(async move {
                loop {
                    let key = tokio::select! {
                        _ = stop_rx.wait_for(|s| *s) => break,
                        key = this.inner.queue.get() => key,
                    };
                    let Some(key) = key else { break };
                    this.process(&key).await;
                    this.inner.queue.done(&key);
                }
            });
        }
        self.inner.metrics.set_active_workers(CONTROLLER_NAME, workers as i64);
        stop.await;
        stop_tx.send_replace(true);
        // Reconciles in flight stop at their next await; writes are gated on leadership too.
        tasks.abort_all();
        while tasks.join_next().await.is_some() {}
        self.inner.metrics.set_active_workers(CONTROLLER_NAME, 0);
    }

    async fn process(&self, key: &ObjectKey) {
        let started = std::time::Instant::now();
        let queue = &self.inner.queue;
        let result = match self.reconcile(key).await {
            Ok(None) => {
                queue.forget(key);
                ReconcileResult::Success
            }
            Ok(Some(after)) => {
                queue.forget(key);
                queue.add_after(key.clone(), after);
                ReconcileResult::RequeueAfter
            }
            Err(err) => {
                match &err {
                    ReconcileError::Write { source: ApplyError::NotLeader, .. } => {
                        tracing::debug!(%key, "not the leader; reconcile stopped");
                    }
                    _ => tracing::warn!(%key, error = %err, "reconcile failed; retrying"),
                }
                queue.add_rate_limited(key.clone());
                ReconcileResult::Error
            }
        };
        self.inner.metrics.reconcile(CONTROLLER_NAME, result, started.elapsed());
    }

    /// Reconciles one CloneSet; `Ok(Some(d))` asks to look again after `d`.
    pub async fn reconcile(&self, key: &ObjectKey) -> Result<Option<Duration>, ReconcileError> {
        let inner = &self.inner;
        let Some(cs) = inner.caches.clonesets.get(key) else {
            inner.expectations.remove(key);
            return Ok(None);
        };
        if cs.metadata.deletion_timestamp.is_some() {
            return Ok(None);
        }
        let Some(uid) = cs.metadata.uid.clone() else {
            return Ok(None);
        };
        let now = jiff::Timestamp::now();

        if self.adopt_orphans(&cs, &uid).await? {
            // The adopted pods count once the cache shows them; their events queue us again.
            return Ok(Some(Duration::from_secs(1)));
        }

        let snapshot = self.snapshot(&cs, &uid)?;
        let plan = kruise_core::cloneset::plan(&snapshot, now);
        inner.expectations.set(key, plan.expectations.clone());
        if let Some(Blocked::Invalid { message }) = &plan.blocked {
            self.event(&cs, true, "InvalidSpec", "Reconcile", message.clone()).await;
            return Ok(None);
        }
        if let Some(blocked) = &plan.blocked {
            tracing::debug!(%key, ?blocked, "waiting");
        }
        for event in plan.events.iter().filter(|e| e.reason == "ExpectationTimeout") {
            tracing::warn!(%key, message = %event.message, "expectations timed out and were dropped");
        }
        self.execute(key, &cs, &plan, now).await?;
        Ok(plan.requeue_after.and_then(|d| Duration::try_from(d).ok()))
    }

    fn snapshot(&self, cs: &CloneSet, uid: &str) -> Result<CloneSetSnapshot, ReconcileError> {
        let caches = &self.inner.caches;
        let key = ObjectKey::of(cs);
        // The cache keeps pods compact; the planner gets them whole, with their facts.
        let pods = caches
            .pods
            .controlled_by(uid)
            .iter()
            .map(|pod| pod.to_pod().map(SnapshotPod::from))
            .collect::<Result<Vec<SnapshotPod>, _>>()?;
        let mut node_labels = BTreeMap::new();
        for pod in &pods {
            let Some(node) = pod.spec.as_ref().and_then(|s| s.node_name.as_deref()) else {
                continue;
            };
            if node_labels.contains_key(node) {
                continue;
            }
            if let Some(meta) = caches.nodes.get(&ObjectKey::new("", node)) {
                node_labels
                    .insert(node.to_owned(), meta.metadata.labels.clone().unwrap_or_default());
            }
        }
        let mut snapshot = CloneSetSnapshot::new(cs.clone());
        snapshot.pods = pods;
        snapshot.pvcs = caches.pvcs.controlled_by(uid).iter().map(|p| (**p).clone()).collect();
        snapshot.revisions =
            caches.revisions.controlled_by(uid).iter().map(|r| (**r).clone()).collect();
        snapshot.node_labels = node_labels;
        snapshot.expectations = self.inner.expectations.get(&key);
        snapshot.feature_gates = self.inner.config.gates.clone();
        snapshot.options = self.inner.config.options.clone();
        Ok(snapshot)
    }

    /// Adopts live orphan pods in the namespace that the selector matches. True when any
    /// was adopted.
    async fn adopt_orphans(&self, cs: &CloneSet, uid: &str) -> Result<bool, ReconcileError> {
        let Ok(selector) = PodSelector::parse(cs.spec.selector.as_ref()) else {
            return Ok(false);
        };
        let namespace = cs.metadata.namespace.clone().unwrap_or_default();
        let orphans: Vec<Arc<CachedPod>> = self
            .inner
            .caches
            .pods
            .in_namespace(&namespace)
            .into_iter()
            .filter(|pod| {
                pod.metadata.deletion_timestamp.is_none()
                    && !has_controller(pod.as_ref())
                    && selector.matches(pod.metadata.labels.as_ref())
            })
            .collect();
        if orphans.is_empty() {
            return Ok(false);
        }
        let applier = &self.inner.applier;
        let pods: Api<Pod> = Api::namespaced(applier.client().clone(), &namespace);
        // Like upstream, read the CloneSet again before adopting: a CloneSet being deleted
        // (or replaced by another of the same name) must not take pods.
        let fresh: Api<CloneSet> = Api::namespaced(applier.client().clone(), &namespace);
        let name = cs.metadata.name.clone().unwrap_or_default();
        let current = applier.write(fresh.get(&name)).await.map_err(|source| {
            ReconcileError::Write { action: "get cloneset", target: name.clone(), source }
        })?;
        if current.metadata.uid.as_deref() != Some(uid)
            || current.metadata.deletion_timestamp.is_some()
        {
            return Ok(false);
        }
        let owner = OwnerReference {
            api_version: "apps.kruise.io/v1beta1".into(),
            kind: "CloneSet".into(),
            name: name.clone(),
            uid: uid.to_owned(),
            controller: Some(true),
            block_owner_deletion: Some(true),
        };
        for pod in orphans {
            let pod_name = pod.metadata.name.clone().unwrap_or_default();
            let mut owners = pod.metadata.owner_references.clone().unwrap_or_default();
            owners.push(owner.clone());
            let patch = json!({
                "metadata": {
                    "ownerReferences": owners,
                    "resourceVersion": pod.metadata.resource_version,
                }
            });
            let result = applier
                .write(pods.patch(&pod_name, &PatchParams::default(), &Patch::Merge(&patch)))
                .await;
            match result {
                Ok(_) => {
                    let note = format!("adopted pod {pod_name}");
                    self.event(cs, false, "SuccessfulAdopt", "Adopt", note).await;
                }
                // Gone, or changed since we read it: the next round decides again.
                Err(ApplyError::NotFound(_) | ApplyError::Conflict(_)) => {}
                Err(source) => {
                    return Err(ReconcileError::Write {
                        action: "adopt pod",
                        target: pod_name,
                        source,
                    });
                }
            }
        }
        Ok(true)
    }

    async fn event(&self, cs: &CloneSet, warning: bool, reason: &str, action: &str, note: String) {
        let reference = cs.object_ref(&());
        self.inner.applier.event(&reference, warning, reason, action, note).await;
    }

    /// Carries out `plan`'s actions, Events and status.
    async fn execute(
        &self,
        key: &ObjectKey,
        cs: &CloneSet,
        plan: &CloneSetPlan,
        now: jiff::Timestamp,
    ) -> Result<(), ReconcileError> {
        let mut succeeded = vec![false; plan.actions.len()];
        let mut failure: Option<ReconcileError> = None;
        let mut start = 0;
        while start < plan.actions.len() {
            let kind = group_kind(&plan.actions[start]);
            let mut end = start + 1;
            while end < plan.actions.len()
                && kind.is_some()
                && group_kind(&plan.actions[end]) == kind
            {
                end += 1;
            }
            let results = self.run_group(key, cs, &plan.actions[start..end], now).await;
            let mut group_failed = false;
            for (offset, result) in results.into_iter().enumerate() {
                match result {
                    Some(Ok(())) => succeeded[start + offset] = true,
                    Some(Err(err)) => {
                        group_failed = true;
                        self.failure_event(cs, &err).await;
                        failure.get_or_insert(err);
                    }
                    None => {}
                }
            }
            if group_failed {
                break;
            }
            start = end;
        }

        for event in &plan.events {
            let due = event.after_action.is_none_or(|i| succeeded.get(i).copied().unwrap_or(false));
            if due {
                let warning = matches!(event.type_, EventType::Warning);
                self.event(cs, warning, &event.reason, &event.reason, event.message.clone()).await;
            }
        }

        if let Some(status) = &plan.status {
            let old = serde_json::to_value(&cs.status).unwrap_or(Value::Null);
            let new = serde_json::to_value(status).unwrap_or(Value::Null);
            let patch = json!({ "status": merge_patch_replacing(&old, &new) });
            let name = cs.metadata.name.clone().unwrap_or_default();
            let api: Api<CloneSet> =
                Api::namespaced(self.inner.applier.client().clone(), &key.namespace);
            let result = self
                .inner
                .applier
                .write(api.patch_status(&name, &PatchParams::default(), &Patch::Merge(&patch)))
                .await;
            match result {
                Ok(_) | Err(ApplyError::NotFound(_)) => {}
                Err(source) => {
                    failure.get_or_insert(ReconcileError::Write {
                        action: "update status",
                        target: name,
                        source,
                    });
                }
            }
        }
        failure.map_or(Ok(()), Err)
    }

    /// Runs a run of same-kind actions; `None` for actions not attempted (slow start stopped).
    async fn run_group(
        &self,
        key: &ObjectKey,
        cs: &CloneSet,
        actions: &[Action],
        now: jiff::Timestamp,
    ) -> Vec<Option<Result<(), ReconcileError>>> {
        let concurrency = self.inner.applier.concurrency.max(1);
        let mut results: Vec<Option<Result<(), ReconcileError>>> =
            (0..actions.len()).map(|_| None).collect();
        if actions.len() == 1 {
            results[0] = Some(self.run_action(key, cs, &actions[0], now).await);
            return results;
        }
        let slow_start = matches!(actions[0], Action::CreatePod { .. } | Action::CreatePvc { .. });
        let mut batch = if slow_start { 1 } else { concurrency };
        let mut start = 0;
        while start < actions.len() {
            let end = (start + batch).min(actions.len());
            let outcomes: Vec<(usize, Result<(), ReconcileError>)> =
                futures::stream::iter(start..end)
                    .map(|i| async move { (i, self.run_action(key, cs, &actions[i], now).await) })
                    .buffer_unordered(concurrency)
                    .collect()
                    .await;
            let mut failed = false;
            for (i, outcome) in outcomes {
                failed |= outcome.is_err();
                results[i] = Some(outcome);
            }
            if failed && slow_start {
                break;
            }
            start = end;
            batch = (batch * 2).min(concurrency);
        }
        results
    }

    /// One action, with its expectation recorded around the write.
    async fn run_action(
        &self,
        key: &ObjectKey,
        cs: &CloneSet,
        action: &Action,
        now: jiff::Timestamp,
    ) -> Result<(), ReconcileError> {
        let expectations = &self.inner.expectations;
        let expectation = action.expectation();
        if let Some(exp) = &expectation {
            expectations.before_write(key, exp, now);
        }
        let result = self.write_action(key, cs, action).await;
        match (&result, &expectation) {
            (Ok(Some(rv)), Some(Expectation::ResourceVersion { uid })) => {
                expectations.expect_resource_version(key, uid, rv, now);
            }
            (Err(_), Some(Expectation::Scale { action, name })) => {
                expectations.cancel_scale(key, *action, name);
            }
            _ => {}
        }
        result.map(|_| ())
    }

    /// Sends one action; returns the resourceVersion the server answered with, if any.
    async fn write_action(
        &self,
        key: &ObjectKey,
        cs: &CloneSet,
        action: &Action,
    ) -> Result<Option<String>, ReconcileError> {
        let applier = &self.inner.applier;
        let client = applier.client().clone();
        let ns = key.namespace.as_str();
        let post = PostParams { field_manager: Some(FIELD_MANAGER.into()), ..Default::default() };
        let pp = PatchParams { field_manager: Some(FIELD_MANAGER.into()), ..Default::default() };
        let target = action.target().to_owned();
        let fail = |action: &'static str| {
            let target = target.clone();
            move |source| ReconcileError::Write { action, target, source }
        };
        let rv = |meta: &k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta| {
            meta.resource_version.clone()
        };
        match action {
            Action::CreateRevision { revision } => {
                let api: Api<ControllerRevision> = Api::namespaced(client, ns);
                match applier.write(api.create(&post, revision)).await {
                    Ok(_) | Err(ApplyError::AlreadyExists(_)) => Ok(None),
                    Err(err) => Err(fail("create revision")(err)),
                }
            }
            Action::PatchRevision { name, patch } => {
                let api: Api<ControllerRevision> = Api::namespaced(client, ns);
                let written = applier.write(api.patch(name, &pp, &kube_patch(patch))).await;
                written.map(|r| rv(&r.metadata)).map_err(fail("patch revision"))
            }
            Action::DeleteRevision { name } => {
                let api: Api<ControllerRevision> = Api::namespaced(client, ns);
                ignore_not_found(applier.write(api.delete(name, &DeleteParams::default())).await)
                    .map_err(fail("delete revision"))
            }
            Action::CreatePvc { pvc } => {
                let api: Api<PersistentVolumeClaim> = Api::namespaced(client, ns);
                match applier.write(api.create(&post, pvc)).await {
                    Ok(_) | Err(ApplyError::AlreadyExists(_)) => Ok(None),
                    Err(err) => Err(fail("create pvc")(err)),
                }
            }
            Action::PatchPvc { name, patch } => {
                let api: Api<PersistentVolumeClaim> = Api::namespaced(client, ns);
                let written = applier.write(api.patch(name, &pp, &kube_patch(patch))).await;
                written.map(|p| rv(&p.metadata)).map_err(fail("patch pvc"))
            }
            Action::DeletePvc { name, uid } => {
                let api: Api<PersistentVolumeClaim> = Api::namespaced(client, ns);
                let dp = delete_with_uid(uid);
                ignore_not_found(applier.write(api.delete(name, &dp)).await)
                    .map_err(fail("delete pvc"))
            }
            Action::CreatePod { pod } => {
                let api: Api<Pod> = Api::namespaced(client, ns);
                match applier.write(api.create(&post, pod)).await {
                    Ok(_) | Err(ApplyError::AlreadyExists(_)) => Ok(None),
                    Err(err) => Err(fail("create pod")(err)),
                }
            }
            Action::PatchPod { name, patch, .. } => {
                let api: Api<Pod> = Api::namespaced(client, ns);
                let written = applier.write(api.patch(name, &pp, &kube_patch(patch))).await;
                written.map(|p| rv(&p.metadata)).map_err(fail("patch pod"))
            }
            Action::PatchPodStatus { name, patch, .. } => {
                let api: Api<Pod> = Api::namespaced(client, ns);
                let written = applier.write(api.patch_status(name, &pp, &kube_patch(patch))).await;
                written.map(|p| rv(&p.metadata)).map_err(fail("patch pod status"))
            }
            Action::PatchPodResize { name, patch, .. } => {
                let api: Api<Pod> = Api::namespaced(client, ns);
                let written = applier
                    .write(api.patch_subresource("resize", name, &pp, &kube_patch(patch)))
                    .await;
                written.map(|p| rv(&p.metadata)).map_err(fail("resize pod"))
            }
            Action::DeletePod { name, uid, .. } => {
                let api: Api<Pod> = Api::namespaced(client, ns);
                let dp = delete_with_uid(uid);
                ignore_not_found(applier.write(api.delete(name, &dp)).await)
                    .map_err(fail("delete pod"))
            }
            Action::PatchCloneSet { patch } => {
                let api: Api<CloneSet> = Api::namespaced(client, ns);
                let name = cs.metadata.name.clone().unwrap_or_default();
                let written = applier.write(api.patch(&name, &pp, &kube_patch(patch))).await;
                written.map(|c| rv(&c.metadata)).map_err(fail("patch cloneset"))
            }
            other => {
                tracing::error!(action = ?other, "the planner returned an action this controller does not know");
                Ok(None)
            }
        }
    }

    async fn failure_event(&self, cs: &CloneSet, err: &ReconcileError) {
        let action = match err {
            ReconcileError::Write { source: ApplyError::NotLeader, .. } => return,
            ReconcileError::Write { action, .. } => *action,
            ReconcileError::CachedPod(_) => "read pods",
        };
        let reason = match action {
            "create pod" | "create pvc" | "create revision" => "FailedCreate",
            "delete pod" | "delete pvc" | "delete revision" => "FailedDelete",
            "patch pod" | "patch pod status" | "resize pod" => "FailedUpdate",
            _ => "FailedUpdate",
        };
        self.event(cs, true, reason, action, err.to_string()).await;
    }
}

/// Which actions may run together: independent writes of the same kind.
fn group_kind(action: &Action) -> Option<u8> {
    match action {
        Action::CreatePvc { .. } => Some(1),
        Action::CreatePod { .. } => Some(2),
        Action::DeletePod { .. } => Some(3),
        Action::DeletePvc { .. } => Some(4),
        Action::PatchPodStatus { .. } => Some(5),
        Action::DeleteRevision { .. } => Some(6),
        _ => None,
    }
}

fn kube_patch(patch: &kruise_core::cloneset::Patch) -> Patch<Value> {
    match patch {
        kruise_core::cloneset::Patch::Strategic(body) => Patch::Strategic(body.as_ref().clone()),
        kruise_core::cloneset::Patch::Merge(body) => Patch::Merge(body.as_ref().clone()),
        other => Patch::Merge(other.body().clone()),
    }
}

fn delete_with_uid(uid: &str) -> DeleteParams {
    DeleteParams {
        preconditions: Some(Preconditions { uid: Some(uid.to_owned()), resource_version: None }),
        ..Default::default()
    }
}

fn ignore_not_found<T>(result: Result<T, ApplyError>) -> Result<Option<String>, ApplyError> {
    match result {
        Ok(_) | Err(ApplyError::NotFound(_)) => Ok(None),
        Err(err) => Err(err),
    }
}

/// A JSON merge patch turning `old` into `new` at the top level: `new`'s fields, and `null`
/// for fields only `old` has.
fn merge_patch_replacing(old: &Value, new: &Value) -> Value {
    let mut patch = new.clone();
    if let (Value::Object(old), Value::Object(patch)) = (old, &mut patch) {
        for key in old.keys() {
            patch.entry(key.clone()).or_insert(Value::Null);
        }
    }
    patch
}

/// Queues the CloneSets a change concerns: the old and new controller, or, for an orphan,
/// every CloneSet in its namespace whose selector matches it (for adoption).
fn enqueue_owners<K: Resource<DynamicType = ()>>(
    queue: &WorkQueue<ObjectKey>,
    clonesets: &Cache<CloneSet>,
    change: &Change<K>,
) {
    let mut orphan = None;
    for obj in [change.old.as_deref(), change.new.as_deref()].into_iter().flatten() {
        match controlling_cloneset(obj) {
            Some(key) => queue.add(key),
            None if !has_controller(obj) => orphan = Some(obj),
            None => {}
        }
    }
    let Some(obj) = orphan else { return };
    if K::kind(&()) != "Pod" || change.new.is_none() {
        return;
    }
    let namespace = obj.meta().namespace.clone().unwrap_or_default();
    for cs in clonesets.in_namespace(&namespace) {
        let matches = PodSelector::parse(cs.spec.selector.as_ref())
            .is_ok_and(|s| s.matches(obj.meta().labels.as_ref()));
        if matches {
            queue.add(ObjectKey::of(cs.as_ref()));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn merge_patch_clears_dropped_fields() {
        let old = json!({"replicas": 3, "conditions": [{"type": "A"}], "readyReplicas": 2});
        let new = json!({"replicas": 4, "readyReplicas": 2});
        assert_eq!(
            merge_patch_replacing(&old, &new),
            json!({"replicas": 4, "readyReplicas": 2, "conditions": null})
        );
    }

    #[test]
    fn owner_mapping_needs_a_controller_cloneset_reference() {
        let mut pod = Pod::default();
        pod.metadata.namespace = Some("ns".into());
        pod.metadata.owner_references = Some(vec![OwnerReference {
            api_version: "apps.kruise.io/v1alpha1".into(),
            kind: "CloneSet".into(),
            name: "demo".into(),
            uid: "u".into(),
            controller: Some(true),
            block_owner_deletion: None,
        }]);
        assert_eq!(controlling_cloneset(&pod), Some(ObjectKey::new("ns", "demo")));
        if let Some(owners) = pod.metadata.owner_references.as_mut() {
            owners[0].controller = Some(false);
        }
        assert_eq!(controlling_cloneset(&pod), None);
        assert!(!has_controller(&pod));
    }
}
