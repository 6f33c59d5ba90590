//! One controller for every workload kind whose planner returns a
//! [`WorkloadPlan`](kruise_core::workload::WorkloadPlan): CloneSet, Advanced StatefulSet, and
//! the kinds that follow. A kind implements [`WorkloadKind`] (its name, its selector, and how to
//! plan from what it owns); everything else is here, once.
//!
//! One reconcile of `namespace/name`:
//!
//! 1. the workload from the cache (gone or being deleted: nothing to do; owned pods go with
//!    the API server's garbage collector);
//! 2. orphan pods the selector matches are adopted (controller ownerReference, guarded by
//!    the pod's resourceVersion), and orphan ControllerRevisions too for kinds that adopt them
//!    ([`WorkloadKind::ADOPTS_REVISIONS`]); the reconcile ends there until the cache shows
//!    them;
//! 3. what the workload owns (pods, PVCs, revisions), the nodes its pods run on, the
//!    expectations in flight and the settings go to the kind's planner;
//! 4. the actions run in order, independent ones of the same kind concurrently (creations in
//!    slow-start batches of 1, 2, 4, ... that stop at the first failure, as upstream);
//!    expectations are recorded around each write;
//! 5. the Events are recorded, each once the action it follows has succeeded;
//! 6. the status is written (a merge patch that also clears fields the new status dropped);
//! 7. the key is requeued when the plan asks, and with backoff when a write failed.

use std::collections::BTreeMap;
use std::marker::PhantomData;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures::StreamExt;
use futures::future::BoxFuture;
use k8s_openapi::api::apps::v1::ControllerRevision;
use k8s_openapi::api::core::v1::{Node, PersistentVolumeClaim, Pod};
use k8s_openapi::api::storage::v1::StorageClass;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{LabelSelector, ObjectMeta, OwnerReference};
use kruise_api::apps::v1beta1::ImagePullJob;
use kruise_core::daemonset::{BackoffKey, FailedPodBackoff};
use kruise_core::expectations::{ControllerExpectations, Expectation};
use kruise_core::workload::{
    Action, Blocked, DeletePurpose, EventType, PodPatchPurpose, WorkloadPlan,
};
use kube::api::{DeleteParams, PartialObjectMeta, Patch, PatchParams, PostParams, Preconditions};
use kube::{Api, Resource};
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::{Value, json};

use crate::applier::{Applier, ApplyError, FIELD_MANAGER};
use crate::cache::{Cache, Change, ObjectKey, Watched};
use crate::cached_pod::CachedPod;
use crate::controller::{
    ControllerContext, ControllerInfo, ControllerSettings, KeyMapping, ReconcileError, Reconciler,
    Watch,
};
use crate::expectations::ExpectationStore;

/// What one plan reads besides the workload itself.
#[derive(Debug)]
#[non_exhaustive]
pub struct WorkloadInputs {
    /// The pods the workload controls (controller ownerReference with its UID), including
    /// terminating and finished ones.
    pub pods: Vec<Pod>,
    /// The PVCs it controls.
    pub pvcs: Vec<PersistentVolumeClaim>,
    /// The PVCs in its namespace (for kinds that find claims by name rather than owner).
    pub namespace_pvcs: Vec<Arc<PersistentVolumeClaim>>,
    /// Its ControllerRevisions.
    pub revisions: Vec<ControllerRevision>,
    /// Labels of the nodes its pods run on, by node name.
    pub node_labels: BTreeMap<String, BTreeMap<String, String>>,
    /// Whether each StorageClass allows volume expansion, by name (filled for kinds that
    /// read them, see [`WorkloadKind::reads_storage_classes`]).
    pub storage_classes: BTreeMap<String, bool>,
    /// Expectations recorded by earlier plans and not yet observed.
    pub expectations: ControllerExpectations,
    /// Every node, whole (filled for kinds that place a pod per node, see
    /// [`WorkloadKind::READS_NODES`]).
    pub nodes: Vec<Arc<Node>>,
    /// Nodes in failed-pod back-off, each with the instant it ends (filled for kinds with
    /// [`WorkloadKind::FAILED_POD_BACKOFF`]).
    pub failed_pod_backoff: BTreeMap<String, jiff::Timestamp>,
    /// Names of the ImagePullJobs the workload controls (filled for kinds that read them, see
    /// [`WorkloadKind::reads_image_pull_jobs`]).
    pub image_pull_jobs: Vec<String>,
}

/// A workload kind the shared [`WorkloadController`] runs.
pub trait WorkloadKind:
    Watched
    + Resource<Scope = kube::core::NamespaceResourceScope>
    + Serialize
    + DeserializeOwned
    + Clone
{
    /// Its status.
    type Status: Serialize + Send + Sync + 'static;

    /// What its controller declares.
    const INFO: ControllerInfo;

    /// Whether [`WorkloadInputs::namespace_pvcs`] is filled.
    const READS_NAMESPACE_PVCS: bool = false;

    /// Whether [`WorkloadInputs::nodes`] is filled; a node's change then concerns every
    /// workload of the kind.
    const READS_NODES: bool = false;

    /// Whether deleting a failed pod is held back per node with exponential back-off, as
    /// upstream's DaemonSet controllers do: the controller remembers, per (workload UID,
    /// `status.observedGeneration`, node), when the failed pod there was last deleted, and
    /// hands the planner [`WorkloadInputs::failed_pod_backoff`].
    const FAILED_POD_BACKOFF: bool = false;

    /// Whether [`WorkloadInputs::image_pull_jobs`] is filled under these settings.
    fn reads_image_pull_jobs(_settings: &ControllerSettings) -> bool {
        false
    }

    /// Whether [`WorkloadInputs::storage_classes`] is filled under these settings.
    fn reads_storage_classes(_settings: &ControllerSettings) -> bool {
        false
    }

    /// The names of the workloads of this kind in the claim's namespace that a change of the
    /// claim concerns, besides its controller (Advanced StatefulSet claims are not
    /// controlled: they are found by name, and marked when resized).
    fn claim_owners(_claim: &PersistentVolumeClaim) -> Vec<String> {
        Vec::new()
    }

    /// The pod selector.
    fn selector(&self) -> Option<&LabelSelector>;

    /// The current status, as JSON (`null` when there is none).
    fn status_json(&self) -> Value;

    /// Whether an orphan pod the selector matches may be adopted (Advanced StatefulSet also
    /// wants the pod's name to be one of its own).
    fn may_adopt(&self, _pod: &ObjectMeta) -> bool {
        true
    }

    /// Whether orphan ControllerRevisions the selector matches are adopted, as upstream's
    /// Advanced StatefulSet does (a set deleted with `--cascade=orphan` and created again
    /// takes back its history, so its revision names stay free of collisions).
    const ADOPTS_REVISIONS: bool = false;

    /// Plans one reconcile.
    fn plan(
        &self,
        inputs: WorkloadInputs,
        settings: &ControllerSettings,
        now: jiff::Timestamp,
    ) -> WorkloadPlan<Self::Status>;
}

/// The caches a workload controller reads.
struct Caches<W: WorkloadKind> {
    workloads: Cache<W>,
    pods: Cache<CachedPod>,
    pvcs: Cache<PersistentVolumeClaim>,
    revisions: Cache<ControllerRevision>,
    nodes: Cache<PartialObjectMeta<Node>>,
    full_nodes: Option<Cache<Node>>,
    storage_classes: Option<Cache<StorageClass>>,
    image_pull_jobs: Option<Cache<ImagePullJob>>,
}

/// The failed-pod back-off of a kind with [`WorkloadKind::FAILED_POD_BACKOFF`], with when its
/// stale entries were last collected.
#[derive(Default)]
struct FailedPods {
    backoff: FailedPodBackoff,
    collected: Option<jiff::Timestamp>,
}

/// How often stale back-off entries are dropped (upstream's one minute).
const BACKOFF_GC_INTERVAL: jiff::SignedDuration = jiff::SignedDuration::from_mins(1);

/// The controller of a [`WorkloadKind`].
pub struct WorkloadController<W: WorkloadKind> {
    caches: Caches<W>,
    expectations: ExpectationStore,
    applier: Applier,
    settings: ControllerSettings,
    failed_pods: Mutex<FailedPods>,
    kind: PhantomData<fn() -> W>,
}

impl<W: WorkloadKind> WorkloadController<W> {
    /// Builds the controller, asking the shared caches for what it reads.
    pub fn new(context: ControllerContext) -> Self {
        let caches = Caches {
            workloads: context.caches.get::<W>(),
            pods: context.caches.get::<CachedPod>(),
            pvcs: context.caches.get::<PersistentVolumeClaim>(),
            revisions: context.caches.get::<ControllerRevision>(),
            nodes: context.caches.get::<PartialObjectMeta<Node>>(),
            full_nodes: W::READS_NODES.then(|| context.caches.get::<Node>()),
            storage_classes: W::reads_storage_classes(&context.settings)
                .then(|| context.caches.get::<StorageClass>()),
            image_pull_jobs: W::reads_image_pull_jobs(&context.settings)
                .then(|| context.caches.get::<ImagePullJob>()),
        };
        Self {
            caches,
            expectations: ExpectationStore::new(),
            applier: context.applier,
            settings: context.settings,
            failed_pods: Mutex::new(FailedPods::default()),
            kind: PhantomData,
        }
    }

    /// The registration's build function for `W`.
    pub fn build(context: ControllerContext) -> Arc<dyn Reconciler> {
        Arc::new(Self::new(context))
    }
}

fn owned_by<W: WorkloadKind>(owner: &OwnerReference) -> bool {
    owner.controller == Some(true)
        && owner.kind == W::kind(&())
        && owner.api_version.split('/').next() == Some(&*W::group(&()))
}

/// The workload of kind `W` controlling `obj`, if any.
fn controlling<W: WorkloadKind, K: Resource>(obj: &K) -> Option<ObjectKey> {
    let meta = obj.meta();
    let owner = meta.owner_references.as_ref()?.iter().find(|r| owned_by::<W>(r))?;
    Some(ObjectKey::new(meta.namespace.clone().unwrap_or_default(), owner.name.clone()))
}

fn has_controller<K: Resource>(obj: &K) -> bool {
    obj.meta().owner_references.iter().flatten().any(|r| r.controller == Some(true))
}

fn selects<W: WorkloadKind>(workload: &W, meta: &ObjectMeta) -> bool {
    selector_matches(workload, meta) && workload.may_adopt(meta)
}

fn selector_matches<W: WorkloadKind>(workload: &W, meta: &ObjectMeta) -> bool {
    kruise_core::cloneset::PodSelector::parse(workload.selector())
        .is_ok_and(|s| s.matches(meta.labels.as_ref()))
}

/// An orphan the selector matches and the workload may take: live, and with no controller.
fn adoptable<K: Resource>(obj: &K) -> bool {
    obj.meta().deletion_timestamp.is_none() && !has_controller(obj)
}

/// The keys a change of an owned object concerns: its old and new controller of kind `W`, or,
/// for an orphan pod, every workload in its namespace whose selector matches it (for adoption).
fn owner_keys<W: WorkloadKind, K: Watched>(
    workloads: &Cache<W>,
    change: &Change<K>,
    adopt: bool,
) -> Vec<ObjectKey> {
    let mut keys = Vec::new();
    let mut orphan = None;
    for obj in [change.old.as_deref(), change.new.as_deref()].into_iter().flatten() {
        match controlling::<W, K>(obj) {
            Some(key) => keys.push(key),
            None if !has_controller(obj) => orphan = Some(obj),
            None => {}
        }
    }
    if let (true, Some(obj), true) = (adopt, orphan, change.new.is_some()) {
        let namespace = obj.meta().namespace.clone().unwrap_or_default();
        for workload in workloads.in_namespace(&namespace) {
            if selects(workload.as_ref(), obj.meta()) {
                keys.push(ObjectKey::of(workload.as_ref()));
            }
        }
    }
    keys
}

impl<W: WorkloadKind> Reconciler for WorkloadController<W> {
    fn watches(&self) -> Vec<Watch> {
        let caches = &self.caches;
        let workloads = caches.workloads.clone();
        let pods = Watch::new(&caches.pods, KeyMapping::OwnerOrSelector, move |change| {
            owner_keys(&workloads, change, true)
        });
        let workloads = caches.workloads.clone();
        let pvcs = Watch::new(&caches.pvcs, KeyMapping::Owner, move |change| {
            let mut keys = owner_keys(&workloads, change, false);
            for claim in [change.old.as_deref(), change.new.as_deref()].into_iter().flatten() {
                let namespace = claim.metadata.namespace.clone().unwrap_or_default();
                for name in W::claim_owners(claim) {
                    keys.push(ObjectKey::new(namespace.clone(), name));
                }
            }
            keys
        });
        let workloads = caches.workloads.clone();
        let revisions = Watch::new(&caches.revisions, KeyMapping::Owner, move |change| {
            owner_keys(&workloads, change, false)
        });
        let mut watches = vec![Watch::own(&caches.workloads), pods, pvcs, revisions];
        if let Some(nodes) = &caches.full_nodes {
            let workloads = caches.workloads.clone();
            watches.push(Watch::new(nodes, KeyMapping::Custom, move |_change| {
                workloads.all().iter().map(|w| ObjectKey::of(w.as_ref())).collect()
            }));
        }
        watches
    }

    fn keys(&self) -> Vec<ObjectKey> {
        self.caches.workloads.all().iter().map(|w| ObjectKey::of(w.as_ref())).collect()
    }

    fn reconcile<'a>(
        &'a self,
        key: &'a ObjectKey,
    ) -> BoxFuture<'a, Result<Option<Duration>, ReconcileError>> {
        Box::pin(self.reconcile_key(key))
    }
}

impl<W: WorkloadKind> WorkloadController<W> {
    /// Reconciles one workload; `Ok(Some(d))` asks to look again after `d`.
    pub async fn reconcile_key(&self, key: &ObjectKey) -> Result<Option<Duration>, ReconcileError> {
        tracing::trace!(%key, "reconciling");
        let Some(workload) = self.caches.workloads.get(key) else {
            self.expectations.remove(key);
            return Ok(None);
        };
        let meta = workload.meta();
        if meta.deletion_timestamp.is_some() {
            return Ok(None);
        }
        let Some(uid) = meta.uid.clone() else {
            return Ok(None);
        };
        let now = jiff::Timestamp::now();

        if self.adopt_orphans(&workload, &uid).await? {
            // The adopted pods count once the cache shows them; their events queue us again.
            return Ok(Some(Duration::from_secs(1)));
        }

        let mut inputs = self.inputs(key, &workload, &uid)?;
        let generation = observed_generation(workload.as_ref());
        let failed = if W::FAILED_POD_BACKOFF {
            inputs.failed_pod_backoff = self.backoff_of(&uid, generation, now);
            failed_pod_nodes(&inputs.pods)
        } else {
            BTreeMap::new()
        };
        let planning = std::time::Instant::now();
        let plan = workload.plan(inputs, &self.settings, now);
        let planned_in = planning.elapsed();
        if W::FAILED_POD_BACKOFF {
            self.record_failed_pod_deletions(&uid, generation, &failed, &plan, now);
        }
        self.expectations.set(key, plan.expectations.clone());
        if let Some(Blocked::Invalid { message }) = &plan.blocked {
            self.event(&workload, true, "InvalidSpec", "Reconcile", message.clone()).await;
            return Ok(None);
        }
        if let Some(blocked) = &plan.blocked {
            tracing::debug!(%key, ?blocked, "waiting");
        }
        for event in plan.events.iter().filter(|e| e.reason == "ExpectationTimeout") {
            tracing::warn!(%key, message = %event.message, "expectations timed out and were dropped");
        }
        let executing = std::time::Instant::now();
        let executed = self.execute(key, &workload, &plan, now).await;
        tracing::debug!(
            %key,
            actions = plan.actions.len(),
            ?planned_in,
            executed_in = ?executing.elapsed(),
            ok = executed.is_ok(),
            "reconciled"
        );
        executed?;
        Ok(plan.requeue_after.and_then(|d| Duration::try_from(d).ok()))
    }

    fn inputs(
        &self,
        key: &ObjectKey,
        workload: &W,
        uid: &str,
    ) -> Result<WorkloadInputs, ReconcileError> {
        let caches = &self.caches;
        // The cache keeps pods compact; the planner gets them whole.
        let pods = caches
            .pods
            .controlled_by(uid)
            .iter()
            .map(|pod| pod.to_pod())
            .collect::<Result<Vec<Pod>, _>>()?;
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
        let namespace_pvcs = if W::READS_NAMESPACE_PVCS {
            caches.pvcs.in_namespace(workload.meta().namespace.as_deref().unwrap_or_default())
        } else {
            Vec::new()
        };
        let storage_classes = caches
            .storage_classes
            .iter()
            .flat_map(|cache| cache.all())
            .map(|class| {
                let name = class.metadata.name.clone().unwrap_or_default();
                (name, class.allow_volume_expansion == Some(true))
            })
            .collect();
        Ok(WorkloadInputs {
            pods,
            storage_classes,
            pvcs: caches.pvcs.controlled_by(uid).iter().map(|p| (**p).clone()).collect(),
            namespace_pvcs,
            revisions: caches.revisions.controlled_by(uid).iter().map(|r| (**r).clone()).collect(),
            node_labels,
            expectations: self.expectations.get(key),
            nodes: caches.full_nodes.as_ref().map(Cache::all).unwrap_or_default(),
            failed_pod_backoff: BTreeMap::new(),
            image_pull_jobs: caches
                .image_pull_jobs
                .iter()
                .flat_map(|jobs| jobs.controlled_by(uid))
                .filter_map(|job| job.metadata.name.clone())
                .collect(),
        })
    }

    fn failed_pods(&self) -> std::sync::MutexGuard<'_, FailedPods> {
        self.failed_pods.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// The nodes of the workload `uid` at `generation` in back-off at `now`; stale entries
    /// of every workload are dropped at most once a minute.
    fn backoff_of(
        &self,
        uid: &str,
        generation: i64,
        now: jiff::Timestamp,
    ) -> BTreeMap<String, jiff::Timestamp> {
        let mut failed = self.failed_pods();
        let due = failed.collected.is_none_or(|at| now.duration_since(at) >= BACKOFF_GC_INTERVAL);
        if due {
            failed.backoff.gc(now);
            failed.collected = Some(now);
        }
        failed.backoff.not_before_by_node(uid, generation, now)
    }

    /// Starts or lengthens the back-off of every node whose failed pod `plan` deletes (or
    /// moves to `PreparingDelete` first), as upstream does when it decides to delete one.
    fn record_failed_pod_deletions(
        &self,
        uid: &str,
        generation: i64,
        failed: &BTreeMap<String, String>,
        plan: &WorkloadPlan<W::Status>,
        now: jiff::Timestamp,
    ) {
        if failed.is_empty() {
            return;
        }
        let mut state = self.failed_pods();
        for action in &plan.actions {
            let name = match action {
                Action::DeletePod { name, purpose: DeletePurpose::Finished, .. }
                | Action::PatchPod { name, purpose: PodPatchPurpose::Lifecycle, .. } => name,
                _ => continue,
            };
            if let Some(node) = failed.get(name) {
                state.backoff.next(BackoffKey::new(uid, generation, node.clone()), now);
            }
        }
    }

    /// Adopts live orphan pods in the namespace that the workload's selector matches, and
    /// orphan ControllerRevisions for kinds that adopt them. True when any was adopted.
    async fn adopt_orphans(&self, workload: &W, uid: &str) -> Result<bool, ReconcileError> {
        let namespace = workload.meta().namespace.clone().unwrap_or_default();
        let pods: Vec<Arc<CachedPod>> = self
            .caches
            .pods
            .in_namespace(&namespace)
            .into_iter()
            .filter(|pod| adoptable(pod.as_ref()) && selects(workload, &pod.metadata))
            .collect();
        let revisions: Vec<Arc<ControllerRevision>> = match W::ADOPTS_REVISIONS {
            true => self
                .caches
                .revisions
                .in_namespace(&namespace)
                .into_iter()
                .filter(|r| adoptable(r.as_ref()) && selector_matches(workload, &r.metadata))
                .collect(),
            false => Vec::new(),
        };
        if pods.is_empty() && revisions.is_empty() {
            return Ok(false);
        }
        let applier = &self.applier;
        // Like upstream, read the workload again before adopting: one being deleted (or
        // replaced by another of the same name) must not take anything.
        let fresh: Api<W> = Api::namespaced(applier.client().clone(), &namespace);
        let name = workload.meta().name.clone().unwrap_or_default();
        let kind = W::kind(&()).to_lowercase();
        let current =
            applier.write(fresh.get(&name)).await.map_err(|source| ReconcileError::Write {
                action: "get workload",
                target: format!("{kind} {name}"),
                source,
            })?;
        if current.meta().uid.as_deref() != Some(uid) || current.meta().deletion_timestamp.is_some()
        {
            return Ok(false);
        }
        let owner = OwnerReference {
            api_version: W::api_version(&()).into_owned(),
            kind: W::kind(&()).into_owned(),
            name: name.clone(),
            uid: uid.to_owned(),
            controller: Some(true),
            block_owner_deletion: Some(true),
        };
        let pod_api: Api<Pod> = Api::namespaced(applier.client().clone(), &namespace);
        for pod in pods {
            if self.adopt(&pod_api, &pod.metadata, &owner, "adopt pod").await? {
                let pod_name = pod.metadata.name.clone().unwrap_or_default();
                let note = format!("adopted pod {pod_name}");
                self.event(workload, false, "SuccessfulAdopt", "Adopt", note).await;
            }
        }
        let revision_api: Api<ControllerRevision> =
            Api::namespaced(applier.client().clone(), &namespace);
        for revision in revisions {
            if self.adopt(&revision_api, &revision.metadata, &owner, "adopt revision").await? {
                let revision_name = revision.metadata.name.as_deref().unwrap_or_default();
                tracing::info!(%namespace, workload = %name, revision = %revision_name, "adopted an orphan ControllerRevision");
            }
        }
        Ok(true)
    }

    /// Makes `owner` the controller of the object `meta` describes, guarded by its
    /// resourceVersion. False when it is gone or changed since it was read (the next round
    /// decides again).
    async fn adopt<K>(
        &self,
        api: &Api<K>,
        meta: &ObjectMeta,
        owner: &OwnerReference,
        action: &'static str,
    ) -> Result<bool, ReconcileError>
    where
        K: Resource + Clone + DeserializeOwned + std::fmt::Debug,
    {
        let name = meta.name.clone().unwrap_or_default();
        let mut owners = meta.owner_references.clone().unwrap_or_default();
        owners.push(owner.clone());
        let patch = json!({
            "metadata": {
                "ownerReferences": owners,
                "resourceVersion": meta.resource_version,
            }
        });
        let result = self
            .applier
            .write(api.patch(&name, &PatchParams::default(), &Patch::Merge(&patch)))
            .await;
        match result {
            Ok(_) => Ok(true),
            Err(ApplyError::NotFound(_) | ApplyError::Conflict(_)) => Ok(false),
            Err(source) => Err(ReconcileError::Write { action, target: name, source }),
        }
    }

    async fn event(&self, workload: &W, warning: bool, reason: &str, action: &str, note: String) {
        let reference = workload.object_ref(&());
        self.applier.event(&reference, warning, reason, action, note).await;
    }

    /// Carries out `plan`'s actions, Events and status.
    async fn execute(
        &self,
        key: &ObjectKey,
        workload: &W,
        plan: &WorkloadPlan<W::Status>,
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
            let results = self.run_group(key, workload, &plan.actions[start..end], now).await;
            let mut group_failed = false;
            for (offset, result) in results.into_iter().enumerate() {
                match result {
                    Some(Ok(())) => succeeded[start + offset] = true,
                    Some(Err(err)) => {
                        group_failed = true;
                        self.failure_event(workload, &err).await;
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
                self.event(workload, warning, &event.reason, &event.reason, event.message.clone())
                    .await;
            }
        }

        if let Some(status) = &plan.status {
            let new = serde_json::to_value(status).unwrap_or(Value::Null);
            let patch = json!({ "status": kruise_core::merge_patch::replacing(&workload.status_json(), &new) });
            let name = workload.meta().name.clone().unwrap_or_default();
            let params = PatchParams::default();
            let result = self
                .applier
                .patch::<W, _>(
                    &key.namespace,
                    &name,
                    Some("status"),
                    &params,
                    &Patch::Merge(&patch),
                )
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
    /// Creations go in slow-start batches ([`slow_start`]); other writes run
    /// [`Applier::concurrency`] at a time, every one attempted.
    async fn run_group(
        &self,
        key: &ObjectKey,
        workload: &W,
        actions: &[Action],
        now: jiff::Timestamp,
    ) -> Vec<Option<Result<(), ReconcileError>>> {
        let run = |i: usize| self.run_action(key, workload, &actions[i], now);
        if matches!(actions[0], Action::CreatePod { .. } | Action::CreatePvc { .. }) {
            return slow_start(actions.len(), self.applier.create_burst, run).await;
        }
        let mut results: Vec<Option<Result<(), ReconcileError>>> =
            (0..actions.len()).map(|_| None).collect();
        let outcomes: Vec<(usize, Result<(), ReconcileError>)> =
            futures::stream::iter(0..actions.len())
                .map(|i| async move { (i, run(i).await) })
                .buffer_unordered(self.applier.concurrency.max(1))
                .collect()
                .await;
        for (i, outcome) in outcomes {
            results[i] = Some(outcome);
        }
        results
    }

    /// One action, with its expectation recorded around the write.
    async fn run_action(
        &self,
        key: &ObjectKey,
        workload: &W,
        action: &Action,
        now: jiff::Timestamp,
    ) -> Result<(), ReconcileError> {
        let expectations = &self.expectations;
        let expectation = action.expectation();
        if let Some(exp) = &expectation {
            expectations.before_write(key, exp, now);
        }
        let result = self.write_action(key, workload, action).await;
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
        workload: &W,
        action: &Action,
    ) -> Result<Option<String>, ReconcileError> {
        let applier = &self.applier;
        let ns = key.namespace.as_str();
        let post = PostParams { field_manager: Some(FIELD_MANAGER.into()), ..Default::default() };
        let pp = PatchParams { field_manager: Some(FIELD_MANAGER.into()), ..Default::default() };
        let target = action.target().to_owned();
        let fail = |action: &'static str| {
            let target = target.clone();
            move |source| ReconcileError::Write { action, target, source }
        };
        let created = |result: Result<Option<String>, ApplyError>| match result {
            Ok(_) | Err(ApplyError::AlreadyExists(_)) => Ok(None),
            Err(err) => Err(err),
        };
        match action {
            Action::CreateRevision { .. }
            | Action::PatchRevision { .. }
            | Action::DeleteRevision { .. } => {
                let Some((what, result)) = write_revision(applier, ns, action).await else {
                    return Ok(None);
                };
                let result = match action {
                    Action::CreateRevision { .. } => created(result),
                    Action::DeleteRevision { .. } => ignore_not_found(result),
                    _ => result,
                };
                result.map_err(fail(what))
            }
            Action::CreatePvc { pvc } => {
                created(applier.create(ns, pvc.as_ref(), &post).await).map_err(fail("create pvc"))
            }
            Action::PatchPvc { name, patch } => applier
                .patch::<PersistentVolumeClaim, _>(ns, name, None, &pp, &kube_patch(patch))
                .await
                .map_err(fail("patch pvc")),
            Action::DeletePvc { name, uid } => {
                let dp = delete_with_uid(uid);
                let deleted = applier.delete::<PersistentVolumeClaim>(ns, name, &dp);
                ignore_not_found(deleted.await).map_err(fail("delete pvc"))
            }
            Action::CreatePod { pod } => {
                // Built now, and freed once encoded: the first pod of a big scale-out goes
                // out at once, and a batch in flight holds request bodies, not pods.
                let create = applier.create(ns, pod.build().as_ref(), &post);
                created(create.await).map_err(fail("create pod"))
            }
            Action::PatchPod { .. }
            | Action::PatchPodStatus { .. }
            | Action::PatchPodResize { .. } => match patch_pod(applier, ns, action).await {
                Some((what, result)) => result.map_err(fail(what)),
                None => Ok(None),
            },
            Action::DeletePod { name, uid, .. } => {
                let dp = delete_with_uid(uid);
                ignore_not_found(applier.delete::<Pod>(ns, name, &dp).await)
                    .map_err(fail("delete pod"))
            }
            Action::CreateImagePullJob { job } => {
                created(applier.create(ns, job.as_ref(), &post).await)
                    .map_err(fail("create imagepulljob"))
            }
            Action::DeleteImagePullJob { name } => {
                let dp = DeleteParams::default();
                ignore_not_found(applier.delete::<ImagePullJob>(ns, name, &dp).await)
                    .map_err(fail("delete imagepulljob"))
            }
            Action::PatchWorkload { patch } => {
                let name = workload.meta().name.clone().unwrap_or_default();
                applier
                    .patch::<W, _>(ns, &name, None, &pp, &kube_patch(patch))
                    .await
                    .map_err(fail("patch workload"))
            }
            other => {
                tracing::error!(action = ?other, "the planner returned an action this controller does not know");
                Ok(None)
            }
        }
    }

    async fn failure_event(&self, workload: &W, err: &ReconcileError) {
        let action = match err {
            ReconcileError::Write { source: ApplyError::NotLeader, .. } => return,
            ReconcileError::Write { action, .. } => *action,
            ReconcileError::CachedPod(_) => "read pods",
            ReconcileError::SidecarSetRevision(_) => "build revision",
        };
        let reason = match action {
            "create imagepulljob" => "FailedCreateImagePullJob",
            "create pod" | "create pvc" | "create revision" => "FailedCreate",
            "delete pod" | "delete pvc" | "delete revision" | "delete imagepulljob" => {
                "FailedDelete"
            }
            _ => "FailedUpdate",
        };
        self.event(workload, true, reason, action, err.to_string()).await;
    }
}

/// Sends a plan's ControllerRevision write (`CreateRevision`, `PatchRevision` or
/// `DeleteRevision`) to `ns`: what it was (`create revision`, `patch revision`, `delete
/// revision`, for errors) and the server's answer as is (an `AlreadyExists` or `NotFound` is
/// the caller's to judge). `None` for any other action.
pub(crate) async fn write_revision(
    applier: &Applier,
    ns: &str,
    action: &Action,
) -> Option<(&'static str, Result<Option<String>, ApplyError>)> {
    match action {
        Action::CreateRevision { revision } => {
            let post =
                PostParams { field_manager: Some(FIELD_MANAGER.into()), ..Default::default() };
            Some(("create revision", applier.create(ns, revision.as_ref(), &post).await))
        }
        Action::PatchRevision { name, patch } => {
            let pp =
                PatchParams { field_manager: Some(FIELD_MANAGER.into()), ..Default::default() };
            let result = applier
                .patch::<ControllerRevision, _>(ns, name, None, &pp, &kube_patch(patch))
                .await;
            Some(("patch revision", result))
        }
        Action::DeleteRevision { name } => {
            let dp = DeleteParams::default();
            let result = applier.delete::<ControllerRevision>(ns, name, &dp).await.map(|()| None);
            Some(("delete revision", result))
        }
        _ => None,
    }
}

/// Sends a plan's pod patch (`PatchPod`, `PatchPodStatus` or `PatchPodResize`) to the pod in
/// `ns`: what it was (for errors) and the resourceVersion the server answered with. `None`
/// for any other action.
pub(crate) async fn patch_pod(
    applier: &Applier,
    ns: &str,
    action: &Action,
) -> Option<(&'static str, Result<Option<String>, ApplyError>)> {
    let (name, subresource, patch, what) = match action {
        Action::PatchPod { name, patch, .. } => (name, None, patch, "patch pod"),
        Action::PatchPodStatus { name, patch, .. } => {
            (name, Some("status"), patch, "patch pod status")
        }
        Action::PatchPodResize { name, patch, .. } => (name, Some("resize"), patch, "resize pod"),
        _ => return None,
    };
    let pp = PatchParams { field_manager: Some(FIELD_MANAGER.into()), ..Default::default() };
    let result = applier.patch::<Pod, _>(ns, name, subresource, &pp, &kube_patch(patch)).await;
    Some((what, result))
}

/// Runs `run(i)` for every `i` in `0..count` in slow-start batches, as kube-controller-manager
/// and upstream OpenKruise create pods: batches of 1, 2, 4, ... doubling up to `burst`, every
/// call of a batch in flight at once and each batch finished before the next starts. A batch
/// with a failure is the last, so a refusing server (a quota, an admission webhook) sees a few
/// requests, not hundreds. `None` for the calls never started.
pub(crate) async fn slow_start<T, E, F, Fut>(
    count: usize,
    burst: usize,
    run: F,
) -> Vec<Option<Result<T, E>>>
where
    F: Fn(usize) -> Fut,
    Fut: std::future::Future<Output = Result<T, E>>,
{
    let mut results: Vec<Option<Result<T, E>>> = (0..count).map(|_| None).collect();
    let mut next = 0;
    for batch in batch_sizes(count, burst) {
        let end = next + batch;
        let outcomes = futures::future::join_all((next..end).map(&run)).await;
        let mut failed = false;
        for (i, outcome) in (next..end).zip(outcomes) {
            failed |= outcome.is_err();
            results[i] = Some(outcome);
        }
        if failed {
            break;
        }
        next = end;
    }
    results
}

/// The sizes of the slow-start batches for `count` calls: 1, 2, 4, ... doubling up to
/// `burst` (at least 1), the last one what remains.
fn batch_sizes(count: usize, burst: usize) -> impl Iterator<Item = usize> {
    let burst = burst.max(1);
    let (mut done, mut batch) = (0, 1);
    std::iter::from_fn(move || {
        if done >= count {
            return None;
        }
        let size = batch.min(burst).min(count - done);
        done += size;
        batch = batch.saturating_mul(2);
        Some(size)
    })
}

/// `status.observedGeneration` of a workload (0 when unset).
fn observed_generation<W: WorkloadKind>(workload: &W) -> i64 {
    workload.status_json().get("observedGeneration").and_then(Value::as_i64).unwrap_or(0)
}

/// The node of each pod in phase `Failed` that is not being deleted, by pod name.
fn failed_pod_nodes(pods: &[Pod]) -> BTreeMap<String, String> {
    pods.iter()
        .filter(|pod| pod.metadata.deletion_timestamp.is_none())
        .filter(|pod| pod.status.as_ref().and_then(|s| s.phase.as_deref()) == Some("Failed"))
        .filter_map(|pod| {
            let node = pod.spec.as_ref()?.node_name.clone()?;
            Some((pod.metadata.name.clone()?, node))
        })
        .collect()
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

pub(crate) fn kube_patch(patch: &kruise_core::workload::Patch) -> Patch<&Value> {
    match patch {
        kruise_core::workload::Patch::Strategic(body) => Patch::Strategic(body.as_ref()),
        kruise_core::workload::Patch::Merge(body) => Patch::Merge(body.as_ref()),
        other => Patch::Merge(other.body()),
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

#[cfg(test)]
mod tests {
    use super::*;
    use kruise_api::apps::v1beta1::{CloneSet, StatefulSet};

    #[test]
    fn slow_start_batches_double_up_to_the_burst() {
        let sizes = |count, burst| batch_sizes(count, burst).collect::<Vec<_>>();
        assert_eq!(sizes(0, 500), Vec::<usize>::new());
        assert_eq!(sizes(1, 500), [1]);
        assert_eq!(sizes(10, 500), [1, 2, 4, 3]);
        assert_eq!(sizes(1000, 500), [1, 2, 4, 8, 16, 32, 64, 128, 256, 489]);
        assert_eq!(sizes(2000, 500), [1, 2, 4, 8, 16, 32, 64, 128, 256, 500, 500, 489]);
        assert_eq!(sizes(100, 32), [1, 2, 4, 8, 16, 32, 32, 5]);
        // A burst of 0 is taken as 1: one at a time, never stuck.
        assert_eq!(sizes(3, 0), [1, 1, 1]);
        for (count, burst) in [(1, 1), (7, 3), (1000, 500), (12345, 500)] {
            let sizes = sizes(count, burst);
            assert_eq!(sizes.iter().sum::<usize>(), count);
            assert!(sizes.iter().all(|&s| s >= 1 && s <= burst.max(1)));
        }
    }

    /// Every call of a batch is in flight at once; a batch with a failure is the last.
    #[tokio::test]
    async fn slow_start_runs_each_batch_at_once_and_stops_after_a_failing_one() {
        use std::sync::atomic::{AtomicUsize, Ordering};
        let in_flight = AtomicUsize::new(0);
        let peaks = std::sync::Mutex::new(Vec::new());
        let call = |i: usize, fail: Option<usize>| {
            let (in_flight, peaks) = (&in_flight, &peaks);
            async move {
                let now = in_flight.fetch_add(1, Ordering::SeqCst) + 1;
                tokio::task::yield_now().await;
                peaks.lock().expect("not poisoned").push(now);
                in_flight.fetch_sub(1, Ordering::SeqCst);
                if Some(i) == fail { Err(i) } else { Ok(i) }
            }
        };
        let results = slow_start(1000, 500, |i| call(i, None)).await;
        assert!(results.iter().enumerate().all(|(i, r)| *r == Some(Ok(i))));
        assert_eq!(peaks.lock().expect("not poisoned").iter().max(), Some(&489));

        // Index 5 is in the third batch (3..7): 0..7 are attempted, 7.. are not.
        let results = slow_start(20, 500, |i| call(i, Some(5))).await;
        assert_eq!(results[5], Some(Err(5)));
        assert!(results[..7].iter().enumerate().all(|(i, r)| i == 5 || *r == Some(Ok(i))));
        assert!(results[7..].iter().all(Option::is_none));
    }

    #[test]
    fn owner_mapping_needs_a_controller_reference_of_the_kind() {
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
        assert_eq!(controlling::<CloneSet, _>(&pod), Some(ObjectKey::new("ns", "demo")));
        assert_eq!(controlling::<StatefulSet, _>(&pod), None, "another kind's pod");
        if let Some(owners) = pod.metadata.owner_references.as_mut() {
            owners[0].api_version = "apps/v1".into();
            owners[0].kind = "StatefulSet".into();
        }
        assert_eq!(controlling::<StatefulSet, _>(&pod), None, "a native StatefulSet's pod");
        if let Some(owners) = pod.metadata.owner_references.as_mut() {
            owners[0].controller = Some(false);
        }
        assert!(!has_controller(&pod));
    }
}
