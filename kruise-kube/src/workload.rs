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

use futures::future::BoxFuture;
use k8s_openapi::api::apps::v1::ControllerRevision;
use k8s_openapi::api::core::v1::{Node, PersistentVolumeClaim};
use k8s_openapi::api::storage::v1::StorageClass;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{LabelSelector, ObjectMeta, OwnerReference};
use kruise_api::apps::v1beta1::ImagePullJob;
use kruise_core::daemonset::{BackoffKey, FailedPodBackoff};
use kruise_core::expectations::ControllerExpectations;
use kruise_core::workload::{
    Action, Blocked, DeletePurpose, PodPatchPurpose, SnapshotPod, WorkloadPlan,
};
use kube::Resource;
use kube::api::PartialObjectMeta;
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::Value;

use crate::applier::{Applier, ApplyError, ExpectationsFor, PlanOwner};
use crate::cache::{Cache, Change, ObjectKey, Watched};
use crate::cached_pod::CachedPod;
use crate::cached_revision::CachedRevision;
use crate::controller::{
    ControllerContext, ControllerInfo, ControllerSettings, KeyMapping, ReconcileError, Reconciler,
    Watch,
};
use crate::expectations::ExpectationStore;

/// What one plan reads besides the workload itself. `Default` (nothing read), then filled, is
/// how a caller outside the controller plans a workload (`kubectl kruise plan`).
#[derive(Debug, Default)]
#[non_exhaustive]
pub struct WorkloadInputs {
    /// The pods the workload controls (controller ownerReference with its UID), including
    /// terminating and finished ones, with their facts (whole pods decoded only as read).
    pub pods: Vec<SnapshotPod>,
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

    /// Whether, with `PodUnavailableBudgetUpdateGate` on, each pod the plan updates is first
    /// reserved in its PodUnavailableBudget (upstream's CloneSet does so before every pod it
    /// updates); a pod the budget refuses waits, and the workload is looked at again in a
    /// second. Without it, a workload allowed more unavailable pods than its budget marks
    /// them not ready for their in-place updates before the webhook refuses the image change.
    const ASKS_BUDGETS_BEFORE_UPDATES: bool = false;

    /// Whether [`WorkloadInputs::image_pull_jobs`] is filled under these settings.
    fn reads_image_pull_jobs(_settings: &ControllerSettings) -> bool {
        false
    }

    /// Whether [`WorkloadInputs::storage_classes`] is filled under these settings.
    fn reads_storage_classes(_settings: &ControllerSettings) -> bool {
        false
    }

    /// Whether [`WorkloadInputs::node_labels`] is filled for this workload.
    fn reads_node_labels(&self) -> bool {
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
    revisions: Cache<CachedRevision>,
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
    /// The budgets asked before updates ([`WorkloadKind::ASKS_BUDGETS_BEFORE_UPDATES`]).
    budgets: Option<crate::pub_budget::PubWebhook>,
    kind: PhantomData<fn() -> W>,
}

impl<W: WorkloadKind> WorkloadController<W> {
    /// Builds the controller, asking the shared caches for what it reads.
    pub fn new(context: ControllerContext) -> Self {
        let caches = Caches {
            workloads: context.caches.get::<W>(),
            pods: context.caches.get::<CachedPod>(),
            pvcs: context.caches.get::<PersistentVolumeClaim>(),
            revisions: context.caches.get::<CachedRevision>(),
            nodes: context.caches.get::<PartialObjectMeta<Node>>(),
            full_nodes: W::READS_NODES.then(|| context.caches.get::<Node>()),
            storage_classes: W::reads_storage_classes(&context.settings)
                .then(|| context.caches.get::<StorageClass>()),
            image_pull_jobs: W::reads_image_pull_jobs(&context.settings)
                .then(|| context.caches.get::<ImagePullJob>()),
        };
        let budgets = (W::ASKS_BUDGETS_BEFORE_UPDATES
            && context.settings.gates.enabled("PodUnavailableBudgetUpdateGate"))
        .then(|| crate::pub_budget::PubWebhook {
            budgets: context.caches.get(),
            pods: context.caches.get(),
            client: context.applier.client().clone(),
            state: context.caches.shared(),
            gates: crate::pub_budget::gates_from(&context.settings.gates),
            metrics: None,
            events: None,
        });
        Self {
            caches,
            expectations: ExpectationStore::new(),
            applier: context.applier,
            settings: context.settings,
            failed_pods: Mutex::new(FailedPods::default()),
            budgets,
            kind: PhantomData,
        }
    }

    /// The registration's build function for `W`.
    pub fn build(context: ControllerContext) -> Arc<dyn Reconciler> {
        Arc::new(Self::new(context))
    }
}

/// Reserves each pod `plan` updates in its PodUnavailableBudget; the pods a budget refuses
/// are left out of the plan, which then asks to run again in a second (upstream's
/// `DurationStore.Push(key, time.Second)`).
async fn ask_budgets<W: WorkloadKind>(
    budgets: &crate::pub_budget::PubWebhook,
    plan: &mut WorkloadPlan<W::Status>,
    pods: &[Arc<CachedPod>],
) {
    use kruise_api::well_known::annotations::{PUB_RELATED_PUB, PUB_RELATED_PUB_LEGACY};
    let updated = plan.pods_being_updated();
    // One pass over the workload's pods (a plan may update hundreds of them).
    let updating: Vec<(String, &Arc<CachedPod>)> = pods
        .iter()
        .filter_map(|p| {
            let uid = p.metadata.uid.as_deref().filter(|uid| updated.contains(uid))?;
            Some((uid.to_owned(), p))
        })
        .collect();
    let mut refused = std::collections::BTreeSet::new();
    for (uid, cached) in updating {
        let covered = cached.metadata.annotations.as_ref().is_some_and(|a| {
            a.contains_key(PUB_RELATED_PUB) || a.contains_key(PUB_RELATED_PUB_LEGACY)
        });
        // Only a pod a budget covers is decoded and asked about.
        let Some(pod) = covered.then(|| cached.to_pod().ok()).flatten() else { continue };
        let request = kruise_core::pub_budget::PodRequest::WorkloadUpdate { pod: &pod };
        if let crate::admission::pod_feature::PodVerdict::Deny(_, reason) =
            budgets.check(request, false, W::INFO.name).await
        {
            tracing::debug!(pod = %ObjectKey::of(cached.as_ref()), %reason, "update waits for its budget");
            refused.insert(uid);
        }
    }
    if !refused.is_empty() {
        plan.without_pods(&refused);
        let retry = jiff::SignedDuration::from_secs(1);
        plan.requeue_after = Some(plan.requeue_after.map_or(retry, |d| d.min(retry)));
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

        let cached_pods = self.caches.pods.controlled_by(&uid);
        let mut inputs = self.inputs(key, &workload, &uid, &cached_pods)?;
        let generation = observed_generation(workload.as_ref());
        let failed = if W::FAILED_POD_BACKOFF {
            inputs.failed_pod_backoff = self.backoff_of(&uid, generation, now);
            failed_pod_nodes(&cached_pods)?
        } else {
            BTreeMap::new()
        };
        let planning = std::time::Instant::now();
        let mut plan = workload.plan(inputs, &self.settings, now);
        let planned_in = planning.elapsed();
        if let Some(budgets) = &self.budgets {
            ask_budgets::<W>(budgets, &mut plan, &cached_pods).await;
        }
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
        let owner = PlanOwner::of(workload.as_ref(), workload.status_json());
        let expectations = ExpectationsFor { store: &self.expectations, key };
        let executed = self.applier.apply(&owner, &plan, Some(expectations), now).await;
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
        cached_pods: &[Arc<CachedPod>],
    ) -> Result<WorkloadInputs, ReconcileError> {
        let caches = &self.caches;
        let labels_of = |node: &str| {
            caches.nodes.get(&ObjectKey::new("", node)).map(|n| n.metadata.labels.clone())
        };
        let (pods, node_labels) = if workload.reads_node_labels() {
            pod_inputs(cached_pods, Some(&labels_of))?
        } else {
            pod_inputs(cached_pods, None)?
        };
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
            revisions: caches
                .revisions
                .controlled_by(uid)
                .iter()
                .map(|r| r.to_revision())
                .collect(),
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
        let revisions: Vec<Arc<CachedRevision>> = match W::ADOPTS_REVISIONS {
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
        let name = workload.meta().name.clone().unwrap_or_default();
        let kind = W::kind(&()).to_lowercase();
        let current: W =
            applier.get(&namespace, &name).await.map_err(|source| ReconcileError::Write {
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
        let plan = kruise_core::workload::adoption_plan(
            &owner,
            pods.iter().map(|p| &p.metadata),
            revisions.iter().map(|r| &r.metadata),
        );
        let plan_owner = PlanOwner::of(workload, Value::Null);
        match applier.apply(&plan_owner, &plan, None, jiff::Timestamp::now()).await {
            // An orphan that changed since it was read is decided again next round.
            Ok(()) | Err(ReconcileError::Write { source: ApplyError::Conflict(_), .. }) => Ok(true),
            Err(err) => Err(err),
        }
    }

    async fn event(&self, workload: &W, warning: bool, reason: &str, action: &str, note: String) {
        let reference = workload.object_ref(&());
        self.applier.event(&reference, warning, reason, action, note).await;
    }
}

/// The pods of a plan ([`WorkloadInputs::pods`]) from the cache's compact pods, and, given
/// `node_labels`, the labels of the nodes they run on ([`WorkloadInputs::node_labels`]) from
/// it (`None`: the node is not known; `Some(None)`: it has no labels).
///
/// Each pod's facts are read once per pod version and kept in the cache; a pod is decoded
/// whole only if the planner reads it, so that a plan of ten thousand pods in a steady state
/// decodes none.
pub fn pod_inputs(
    cached_pods: &[Arc<CachedPod>],
    node_labels: Option<&NodeLabels<'_>>,
) -> Result<PodInputs, crate::cached_pod::SpecDecodeError> {
    let mut pods = Vec::with_capacity(cached_pods.len());
    let mut labels = BTreeMap::new();
    let mut seen = std::collections::HashSet::new();
    for pod in cached_pods {
        pods.push(pod.snapshot_pod()?);
        let Some(node_labels) = node_labels else {
            continue;
        };
        if let Some(node) = pod.scheduled_node()?
            && seen.insert(node)
            && let Some(node_labels) = node_labels(node)
        {
            labels.insert(node.to_owned(), node_labels.unwrap_or_default());
        }
    }
    Ok((pods, labels))
}

/// The labels of a node by name, for [`pod_inputs`]: `None` when the node is not known.
pub type NodeLabels<'f> = dyn Fn(&str) -> Option<Option<BTreeMap<String, String>>> + 'f;

/// What [`pod_inputs`] gives: the snapshot pods, and the labels of their nodes by name.
pub type PodInputs = (Vec<SnapshotPod>, BTreeMap<String, BTreeMap<String, String>>);

/// `status.observedGeneration` of a workload (0 when unset).
fn observed_generation<W: WorkloadKind>(workload: &W) -> i64 {
    workload.status_json().get("observedGeneration").and_then(Value::as_i64).unwrap_or(0)
}

/// The node of each pod in phase `Failed` that is not being deleted, by pod name.
fn failed_pod_nodes(
    pods: &[Arc<CachedPod>],
) -> Result<BTreeMap<String, String>, crate::cached_pod::SpecDecodeError> {
    let mut failed = BTreeMap::new();
    for pod in pods {
        if pod.metadata.deletion_timestamp.is_some() || pod.phase() != Some("Failed") {
            continue;
        }
        if let (Some(name), Some(node)) = (&pod.metadata.name, pod.scheduled_node()?) {
            failed.insert(name.clone(), node.to_owned());
        }
    }
    Ok(failed)
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::api::core::v1::Pod;
    use kruise_api::apps::v1beta1::{CloneSet, StatefulSet};

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

/// What a workload's planner reads besides the workload's own objects: the nodes (for
/// [`next_and_ahead`]).
#[derive(Clone, Debug, Default)]
pub struct Surroundings {
    /// Labels of every node, by name.
    pub node_labels: BTreeMap<String, BTreeMap<String, String>>,
    /// Every node, whole (read by the kinds that place a pod per node).
    pub nodes: Vec<Arc<Node>>,
}

impl Surroundings {
    /// The surroundings `nodes` make.
    pub fn of(nodes: &[Node]) -> Self {
        Self {
            node_labels: nodes
                .iter()
                .map(|n| {
                    let labels = n.metadata.labels.clone().unwrap_or_default();
                    (n.metadata.name.clone().unwrap_or_default(), labels)
                })
                .collect(),
            nodes: nodes.iter().cloned().map(Arc::new).collect(),
        }
    }
}

/// The planner's inputs from a model of the cluster ([`kruise_core::forecast::Cluster`]), as
/// the controller would gather them from its caches (no expectations in flight).
pub fn inputs_of<W: WorkloadKind>(
    cluster: &kruise_core::forecast::Cluster,
    around: &Surroundings,
) -> WorkloadInputs {
    let mut inputs = WorkloadInputs::default();
    for pod in &cluster.pods {
        let node = pod.spec.as_ref().and_then(|s| s.node_name.as_deref());
        if let Some((name, labels)) = node.and_then(|n| around.node_labels.get_key_value(n)) {
            inputs.node_labels.insert(name.clone(), labels.clone());
        }
    }
    inputs.pods = cluster.pods.iter().cloned().map(SnapshotPod::from).collect();
    inputs.pvcs = cluster.pvcs.clone();
    inputs.revisions = cluster.revisions.clone();
    inputs.image_pull_jobs = cluster.image_pull_jobs.clone();
    if W::READS_NODES {
        inputs.nodes = around.nodes.clone();
    }
    inputs
}

/// One plan of the workload a model of the cluster holds, made by the kind's own planner (a
/// workload that no longer decodes plans nothing, and says why).
pub fn planned<W: WorkloadKind>(
    cluster: &kruise_core::forecast::Cluster,
    around: &Surroundings,
    settings: &ControllerSettings,
) -> WorkloadPlan<W::Status> {
    match serde_json::from_value::<W>(cluster.workload.clone()) {
        Ok(set) => set.plan(inputs_of::<W>(cluster, around), settings, cluster.now),
        Err(error) => {
            let mut plan = WorkloadPlan::empty(Default::default());
            plan.blocked =
                Some(kruise_core::workload::Blocked::Invalid { message: error.to_string() });
            plan
        }
    }
}

/// What the manager would do next to the workload `cluster` holds (a freshly started
/// manager: no expectations), and the whole rollout ahead
/// ([`kruise_core::forecast::forecast`] stepping the same planner): what `kubectl kruise
/// plan` prints, for an embedding operator to ask too.
pub fn next_and_ahead<W: WorkloadKind>(
    cluster: kruise_core::forecast::Cluster,
    around: &Surroundings,
    settings: &ControllerSettings,
) -> (WorkloadPlan<W::Status>, kruise_core::forecast::Forecast) {
    let next = planned::<W>(&cluster, around, settings);
    let limits = kruise_core::forecast::Limits::default();
    let ahead =
        kruise_core::forecast::forecast(cluster, limits, |c| planned::<W>(c, around, settings));
    (next, ahead)
}
