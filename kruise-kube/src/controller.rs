//! The controller framework: every controller is a [`Registration`], and the manager runs the
//! enabled ones the same way.
//!
//! A registration declares what upstream's controllers declare in code:
//! - its name (`statefulset-controller`), which labels its metrics, Events and logs;
//! - its workers flag (`--statefulset-workers`) and that flag's default;
//! - the feature gates it needs;
//! - the resource it reconciles, when that comes from a CRD: until the API server serves it, the
//!   controller waits (upstream skips a controller whose CRD is missing; this one checks again
//!   and starts once the CRD appears);
//! - how to build its [`Reconciler`] from the shared context.
//!
//! A reconciler names the kinds it reads and how a change of each maps to the keys it
//! reconciles ([`Watch`]), and reconciles one key at a time. Everything around that is here
//! and the same for every controller: the work queue with per-key backoff, the workers, the
//! metrics, waiting for the CRD and the caches, and running only while this manager leads.

use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use futures::future::BoxFuture;

use crate::applier::{Applier, ApplyError};
use crate::cache::{Cache, Change, ObjectKey, SharedCaches, Watched};
use crate::cached_pod::SpecDecodeError;
use crate::features::FeatureGates;
use crate::leader::LeaderHandle;
use crate::metrics::{Metrics, ReconcileResult};
use crate::queue::{Backoff, WorkQueue};

/// A resource served by the API server through a CRD.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ServedResource {
    /// The API group, e.g. `apps.kruise.io`.
    pub group: &'static str,
    /// The version the controller reads, e.g. `v1beta1`.
    pub version: &'static str,
    /// The plural resource name, e.g. `statefulsets`.
    pub plural: &'static str,
}

impl std::fmt::Display for ServedResource {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}.{}/{}", self.plural, self.group, self.version)
    }
}

/// What a controller declares about itself.
#[derive(Clone, Copy, Debug)]
#[non_exhaustive]
pub struct ControllerInfo {
    /// Upstream's name, e.g. `statefulset-controller`.
    pub name: &'static str,
    /// The flag that sets its concurrent reconciles, without dashes, e.g. `statefulset-workers`.
    pub workers_flag: &'static str,
    /// The flag's default (upstream's: 3 for the workload controllers).
    pub default_workers: usize,
    /// Feature gates that must all be on for the controller to run.
    pub gates: &'static [&'static str],
    /// The resource it reconciles, when a CRD serves it: the controller waits for it.
    pub resource: Option<ServedResource>,
}

impl ControllerInfo {
    /// A controller named `name`, reconciling the CRD-served `resource`, with
    /// `<workers_flag>` defaulting to 3 and no gates.
    pub const fn new(
        name: &'static str,
        workers_flag: &'static str,
        resource: Option<ServedResource>,
    ) -> Self {
        Self { name, workers_flag, default_workers: 3, gates: &[], resource }
    }

    /// The same, needing `gates`.
    pub const fn with_gates(mut self, gates: &'static [&'static str]) -> Self {
        self.gates = gates;
        self
    }
}

/// Settings every controller gets from the manager's flags.
#[derive(Clone, Debug)]
#[non_exhaustive]
pub struct ControllerSettings {
    /// Concurrent reconciles (`--<name>-workers`).
    pub workers: usize,
    /// Feature gates (`--feature-gates`).
    pub gates: FeatureGates,
    /// How long an unobserved write is waited for (`--expectation-timeout`).
    pub expectation_timeout: jiff::SignedDuration,
    /// Leave pods in `PreparingDelete` out of CloneSet replica counts
    /// (`--cloneset-scaling-exclude-preparing-delete`).
    pub scaling_exclude_preparing_delete: bool,
    /// Work-queue backoff.
    pub backoff: Backoff,
    /// The image controllers' settings (`--nodeimage-creation-delay`,
    /// `--default-ttlseconds-for-always-nodeimage`, the daemon's config namespace).
    pub image_pull: kruise_core::imagepull::ImagePullConfig,
    /// The manager's namespace (`POD_NAMESPACE`, default `kruise-system`), where SidecarSets'
    /// ControllerRevisions are kept.
    pub manager_namespace: String,
    /// Bind BroadcastJob pods to their nodes by node affinity, for the scheduler
    /// (`--assign-bcj-pods-by-scheduler`, default true), or by `spec.nodeName`.
    pub assign_bcj_pods_by_scheduler: bool,
    /// Bind Advanced DaemonSet pods to their nodes by node affinity, for the scheduler
    /// (`--assign-pods-by-scheduler`, default true), or by `spec.nodeName`.
    pub assign_pods_by_scheduler: bool,
    /// Reconcile every object again this often (`--sync-period`); `None`: only on changes.
    pub sync_period: Option<Duration>,
    /// Containers the enhanced liveness probe's restarter may restart per minute, cluster-wide
    /// (`--enhanced-liveness-restarts-per-minute`).
    pub enhanced_liveness_restarts_per_minute: usize,
}

impl Default for ControllerSettings {
    fn default() -> Self {
        Self {
            workers: 3,
            gates: FeatureGates::default(),
            expectation_timeout: kruise_core::expectations::DEFAULT_TIMEOUT,
            scaling_exclude_preparing_delete: false,
            backoff: Backoff::default(),
            image_pull: kruise_core::imagepull::ImagePullConfig::default(),
            manager_namespace: crate::webhook::DEFAULT_NAMESPACE.to_owned(),
            assign_bcj_pods_by_scheduler: true,
            assign_pods_by_scheduler: true,
            sync_period: None,
            enhanced_liveness_restarts_per_minute: 10,
        }
    }
}

/// What the manager hands a controller to build its reconciler.
#[derive(Clone)]
#[non_exhaustive]
pub struct ControllerContext {
    /// The manager's shared caches: ask for the kinds the controller reads.
    pub caches: SharedCaches,
    /// Writes, gated on leadership, with Events reported as this controller.
    pub applier: Applier,
    /// The manager's metrics.
    pub metrics: Metrics,
    /// Settings from the flags.
    pub settings: ControllerSettings,
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
    /// A SidecarSet's ControllerRevision could not be built.
    #[error(transparent)]
    SidecarSetRevision(#[from] kruise_core::sidecarset::revision::SidecarSetRevisionError),
}

/// How changes of one kind map to the keys a controller reconciles.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum KeyMapping {
    /// The object is what the controller reconciles: its own key.
    Own,
    /// The key of the object's controller owner of the controller's kind; for an orphan pod,
    /// the key of every object of that kind whose selector matches it (for adoption).
    OwnerOrSelector,
    /// The key of the object's controller owner of the controller's kind.
    Owner,
    /// A mapping of the controller's own.
    Custom,
}

/// One kind a controller reads, and how its changes map to keys.
pub struct Watch {
    /// The kind, e.g. `Pod`.
    pub kind: String,
    /// How its changes map to keys.
    pub mapping: KeyMapping,
    subscribe: Box<dyn FnOnce(WorkQueue<ObjectKey>) + Send>,
}

impl std::fmt::Debug for Watch {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Watch").field("kind", &self.kind).field("mapping", &self.mapping).finish()
    }
}

impl Watch {
    /// Changes of `cache`'s objects are mapped to keys by `keys`.
    pub fn new<K: Watched>(
        cache: &Cache<K>,
        mapping: KeyMapping,
        keys: impl Fn(&Change<K>) -> Vec<ObjectKey> + Send + Sync + 'static,
    ) -> Self {
        let cache = cache.clone();
        Self {
            kind: K::kind(&()).into_owned(),
            mapping,
            subscribe: Box::new(move |queue: WorkQueue<ObjectKey>| {
                cache.subscribe(Arc::new(move |change: &Change<K>| {
                    for key in keys(change) {
                        queue.add(key);
                    }
                }));
            }),
        }
    }

    /// Keys from a source that is not a typed cache (a watch of kinds known only at run
    /// time): `subscribe` is given the controller's queue once, when it is built.
    pub fn external(
        kind: &str,
        subscribe: impl FnOnce(WorkQueue<ObjectKey>) + Send + 'static,
    ) -> Self {
        Self { kind: kind.to_owned(), mapping: KeyMapping::Custom, subscribe: Box::new(subscribe) }
    }

    /// The controller reconciles the objects of `cache` themselves.
    pub fn own<K: Watched>(cache: &Cache<K>) -> Self {
        Self::new(cache, KeyMapping::Own, |change| {
            change.new.as_deref().or(change.old.as_deref()).map(ObjectKey::of).into_iter().collect()
        })
    }

    /// The controller reconciles the objects of `cache` that `wanted` keeps (a change wakes
    /// the object only when, as changed, it is wanted).
    pub fn own_where<K: Watched>(cache: &Cache<K>, wanted: fn(&K) -> bool) -> Self {
        Self::new(cache, KeyMapping::Own, move |change| {
            change.new.as_deref().filter(|k| wanted(k)).map(ObjectKey::of).into_iter().collect()
        })
    }

    /// A change of one of `children` wakes the object of `owners` (of kind `owner_kind`)
    /// that controls it, when it is cached.
    pub fn controller_owner<K: Watched, O: Watched>(
        children: &Cache<K>,
        owners: &Cache<O>,
        owner_kind: &'static str,
    ) -> Self {
        Self::controller_owner_where(children, owners, owner_kind, |_| true)
    }

    /// [`Watch::controller_owner`], waking only an owner that `wanted` keeps (a controller
    /// that acts on few of the owners it caches skips the changes of the others' children).
    pub fn controller_owner_where<K: Watched, O: Watched>(
        children: &Cache<K>,
        owners: &Cache<O>,
        owner_kind: &'static str,
        wanted: fn(&O) -> bool,
    ) -> Self {
        let owners = owners.clone();
        Self::new(children, KeyMapping::Owner, move |change| {
            let Some(child) = change.new.as_deref().or(change.old.as_deref()) else {
                return Vec::new();
            };
            let meta = child.meta();
            let namespace = meta.namespace.clone().unwrap_or_default();
            meta.owner_references
                .iter()
                .flatten()
                .filter(|r| r.controller == Some(true) && r.kind == owner_kind)
                .map(|r| ObjectKey::new(namespace.as_str(), r.name.as_str()))
                .filter(|key| owners.get(key).is_some_and(|owner| wanted(&owner)))
                .collect()
        })
    }
}

/// The keys of the objects of `cache` that `wanted` keeps: [`Reconciler::keys`] for a
/// controller that watches with [`Watch::own_where`].
pub fn keys_where<K: Watched>(cache: &Cache<K>, wanted: fn(&K) -> bool) -> Vec<ObjectKey> {
    cache.all().iter().filter(|k| wanted(k)).map(|k| ObjectKey::of(k.as_ref())).collect()
}

/// A controller's reconcile logic; the framework runs everything around it.
pub trait Reconciler: Send + Sync + 'static {
    /// The kinds read and how their changes map to keys.
    fn watches(&self) -> Vec<Watch>;

    /// Every key to reconcile (after gaining leadership, and on a resync).
    fn keys(&self) -> Vec<ObjectKey>;

    /// Reconciles one key; `Ok(Some(d))` asks to look again after `d`.
    fn reconcile<'a>(
        &'a self,
        key: &'a ObjectKey,
    ) -> BoxFuture<'a, Result<Option<Duration>, ReconcileError>>;
}

/// A controller the manager can run.
#[derive(Clone, Copy)]
pub struct Registration {
    /// What it declares.
    pub info: ControllerInfo,
    /// Builds its reconciler, asking the shared caches for what it reads.
    pub build: fn(ControllerContext) -> Arc<dyn Reconciler>,
}

impl std::fmt::Debug for Registration {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Registration").field("info", &self.info).finish_non_exhaustive()
    }
}

impl Registration {
    /// True when every gate the controller needs is on.
    pub fn enabled(&self, gates: &FeatureGates) -> bool {
        self.info.gates.iter().all(|g| gates.enabled(g))
    }
}

/// The controllers kruise-kube provides, in upstream's order.
pub fn registry() -> Vec<Registration> {
    vec![
        crate::cloneset::registration(),
        crate::statefulset::registration(),
        crate::daemonset::registration(),
        crate::pub_budget::registration(),
        crate::sidecarset::registration(),
        crate::workloadspread::registration(),
        crate::crr::registration(),
        crate::broadcastjob::registration(),
        crate::advancedcronjob::registration(),
        crate::ephemeraljob::registration(),
        crate::uniteddeployment::registration(),
        crate::image_pull::node_image_registration(),
        crate::image_pull::image_pull_job_registration(),
        crate::image_pull::image_list_pull_job_registration(),
        crate::podreadiness::registration(),
        crate::launch_priority::registration(),
        crate::sidecar_terminator::registration(),
        crate::enhanced_liveness::registration(),
        crate::resourcedistribution::registration(),
        crate::podprobe::pod_probe_marker_registration(),
        crate::podprobe::node_pod_probe_registration(),
        crate::persistentpodstate::registration(),
        crate::rollouts::rollout_registration(),
        crate::rollouts::batch_release_registration(),
        crate::rollouts::traffic_routing_registration(),
        crate::rollouts::rollout_history_registration(),
        crate::rollouts::advanced_deployment_registration(),
        crate::rollouts::native_daemon_set_registration(),
    ]
}

/// Whether the API server serves `resource` (its group-version lists the plural).
pub async fn is_served(
    client: &kube::Client,
    resource: &ServedResource,
) -> Result<bool, kube::Error> {
    let group_version = format!("{}/{}", resource.group, resource.version);
    match client.list_api_group_resources(&group_version).await {
        Ok(list) => Ok(list.resources.iter().any(|r| r.name == resource.plural)),
        Err(kube::Error::Api(status)) if status.code == 404 => Ok(false),
        Err(err) => Err(err),
    }
}

/// A running controller: its reconciler, queue and workers.
#[derive(Clone)]
pub struct Controller {
    info: ControllerInfo,
    reconciler: Arc<dyn Reconciler>,
    queue: WorkQueue<ObjectKey>,
    metrics: Metrics,
    workers: usize,
}

impl Controller {
    /// Builds the controller of `registration` and subscribes its queue to the caches it reads.
    pub fn new(registration: &Registration, context: ControllerContext) -> Self {
        let info = registration.info;
        let metrics = context.metrics.clone();
        let workers = context.settings.workers.max(1);
        let queue =
            WorkQueue::new(info.name, context.settings.backoff).with_metrics(metrics.clone());
        let reconciler = (registration.build)(context);
        for watch in reconciler.watches() {
            tracing::debug!(controller = info.name, kind = %watch.kind, mapping = ?watch.mapping, "watching");
            (watch.subscribe)(queue.clone());
        }
        metrics.init_controller(info.name);
        Self { info, reconciler, queue, metrics, workers }
    }

    /// What the controller declared.
    pub fn info(&self) -> &ControllerInfo {
        &self.info
    }

    /// The work queue.
    pub fn queue(&self) -> &WorkQueue<ObjectKey> {
        &self.queue
    }

    /// Queues every key.
    pub fn enqueue_all(&self) {
        for key in self.reconciler.keys() {
            self.queue.add(key);
        }
    }

    /// Reconciles one key now, outside the workers (for tests and embedders).
    pub async fn reconcile(&self, key: &ObjectKey) -> Result<Option<Duration>, ReconcileError> {
        self.reconciler.reconcile(key).await
    }

    /// Runs the workers until `stop` resolves. Each key is reconciled by one worker at a
    /// time; a failing key is retried with backoff and never holds up the others.
    ///
    /// A reconcile that hands its worker back ([`release_worker`]) goes on beside the
    /// worker's next ones, in the same task (so that stopping the controller stops it too),
    /// and keeps its key until it ends; each worker carries at most
    /// [`RELEASED_PER_WORKER`] of them.
    pub async fn run(&self, stop: impl Future<Output = ()>) {
        let (stop_tx, stop_rx) = tokio::sync::watch::channel(false);
        let mut tasks = tokio::task::JoinSet::new();
        for _ in 0..self.workers {
            let this = self.clone();
            tasks.spawn(work(self.queue.clone(), stop_rx.clone(), move |key| {
                let this = this.clone();
                async move { this.process(&key).await }
            }));
        }
        self.metrics.set_active_workers(self.info.name, self.workers as i64);
        stop.await;
        stop_tx.send_replace(true);
        // Reconciles in flight stop at their next await; writes are gated on leadership too.
        tasks.abort_all();
        while tasks.join_next().await.is_some() {}
        self.metrics.set_active_workers(self.info.name, 0);
    }

    async fn process(&self, key: &ObjectKey) {
        let started = std::time::Instant::now();
        let queue = &self.queue;
        let result = match self.reconciler.reconcile(key).await {
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
                        tracing::debug!(controller = self.info.name, %key, "not the leader; reconcile stopped");
                    }
                    _ => {
                        tracing::warn!(controller = self.info.name, %key, error = %err, "reconcile failed; retrying")
                    }
                }
                queue.add_rate_limited(key.clone());
                ReconcileResult::Error
            }
        };
        self.metrics.reconcile(self.info.name, result, started.elapsed());
    }
}

/// One worker of `queue`: runs `reconcile` on each key it takes, then marks the key done,
/// until the queue shuts down or `stop` turns true. A reconcile that hands the worker back
/// ([`release_worker`]) goes on beside the worker's next ones, in the same task (so that
/// stopping the worker stops it too), and keeps its key until it ends.
async fn work<F, Fut>(
    queue: WorkQueue<ObjectKey>,
    mut stop: tokio::sync::watch::Receiver<bool>,
    reconcile: F,
) where
    F: Fn(ObjectKey) -> Fut,
    Fut: Future<Output = ()>,
{
    use futures::StreamExt;
    let mut released = futures::stream::FuturesUnordered::new();
    loop {
        let key = tokio::select! {
            _ = stop.wait_for(|s| *s) => break,
            Some(()) = released.next(), if !released.is_empty() => continue,
            key = queue.get(), if released.len() < RELEASED_PER_WORKER => key,
        };
        let Some(key) = key else { break };
        let (hand_back, mut handed_back) = tokio::sync::oneshot::channel();
        let running = reconcile(key.clone());
        let queue = queue.clone();
        let mut running =
            Box::pin(WORKER.scope(std::cell::RefCell::new(Some(hand_back)), async move {
                running.await;
                queue.done(&key);
            }));
        let mut told = false;
        loop {
            tokio::select! {
                () = &mut running => break,
                answer = &mut handed_back, if !told => {
                    told = true;
                    if answer.is_ok() {
                        released.push(running);
                        break;
                    }
                }
                Some(()) = released.next(), if !released.is_empty() => {}
            }
        }
    }
}

/// The reconciles a worker carries on beside its current one, after they handed it back
/// ([`release_worker`]); at this many it takes no new key until one ends.
///
/// Unbounded, 5,000 workloads created at once had 5,000 plans under way together: every
/// planned pod held in memory (the manager's heap peaked at 1.3 GiB) and their first
/// slow-start batches sent at once, more than the API server answered within the client's
/// timeout. Sixteen keeps what handing back is for (a few workloads scaling side by side with
/// three workers) and bounds a controller's plans under way at `workers × 16`.
pub const RELEASED_PER_WORKER: usize = 16;

tokio::task_local! {
    /// While a worker runs a reconcile: the way to hand the worker back.
    static WORKER: std::cell::RefCell<Option<tokio::sync::oneshot::Sender<()>>>;
}

/// Hands the worker running this reconcile back to its controller, which takes its next key
/// while this reconcile goes on. The reconcile keeps its key: no other reconcile of the same
/// object starts before it ends. The applier calls it as it starts to carry out a plan, so
/// that `--<controller>-workers` bounds the reconciles that read and plan, not those waiting
/// for their writes: ten CloneSets scaling out at once then create their pods side by side
/// with three workers. Outside a worker (a direct [`Controller::reconcile`]) it does nothing.
pub fn release_worker() {
    let _ = WORKER.try_with(|cell| {
        if let Some(hand_back) = cell.borrow_mut().take() {
            let _ = hand_back.send(());
        }
    });
}

/// Runs one registered controller for the manager's lifetime: waits for its CRD (checking
/// every `crd_poll`), builds it, waits for its caches, then runs its workers while `leader`
/// says this manager leads, until `stop` resolves. `settled` is told once the controller has
/// either found its CRD missing or started with its caches loaded.
pub(crate) async fn run_registered(
    registration: Registration,
    client: kube::Client,
    context: ControllerContext,
    leader: LeaderHandle,
    crd_poll: Duration,
    settled: tokio::sync::oneshot::Sender<()>,
    stop: impl Fn() -> BoxFuture<'static, ()>,
) {
    let info = registration.info;
    let mut settled = Some(settled);
    if let Some(resource) = info.resource {
        let mut told = false;
        loop {
            match is_served(&client, &resource).await {
                Ok(true) => break,
                Ok(false) if !told => {
                    if let Some(settled) = settled.take() {
                        let _ = settled.send(());
                    }
                    tracing::warn!(
                        controller = info.name,
                        resource = %resource,
                        "the API server does not serve this resource (is its CRD installed?); the controller starts once it does"
                    );
                    told = true;
                }
                Ok(false) => {}
                Err(err) => {
                    tracing::debug!(controller = info.name, error = %err, "checking for the CRD")
                }
            }
            tokio::select! {
                _ = tokio::time::sleep(crd_poll) => {}
                _ = stop() => return,
            }
        }
        if told {
            tracing::info!(controller = info.name, resource = %resource, "the resource is served now; starting the controller");
        }
    }
    let caches = context.caches.clone();
    let sync_period = context.settings.sync_period;
    let controller = Controller::new(&registration, context);
    tokio::select! {
        _ = caches.wait_synced() => {}
        _ = stop() => return,
    }
    if let Some(settled) = settled.take() {
        let _ = settled.send(());
    }
    let mut stopped = stop();
    loop {
        tokio::select! {
            leading = leader.wait_for_leadership() => if !leading { break },
            _ = &mut stopped => break,
        }
        tracing::info!(controller = info.name, workers = controller.workers, "controller started");
        controller.enqueue_all();
        let mut lost = leader.subscribe();
        let lost = async move {
            let _ = lost.wait_for(|leading| !*leading).await;
        };
        let mut done = false;
        // `--sync-period`: every object is reconciled again this often.
        let resync = async {
            match sync_period.filter(|p| !p.is_zero()) {
                Some(period) => loop {
                    tokio::time::sleep(period).await;
                    controller.enqueue_all();
                },
                None => std::future::pending::<()>().await,
            }
        };
        controller
            .run(async {
                tokio::select! {
                    _ = lost => tracing::warn!(controller = info.name, "leadership lost: controller stopped"),
                    _ = &mut stopped => done = true,
                    () = resync => {}
                }
            })
            .await;
        if done {
            break;
        }
    }
    controller.queue().shut_down();
}

/// Builds a [`ControllerContext`] for `registration`: its applier reports as the controller.
pub fn context_for(
    registration: &Registration,
    client: &kube::Client,
    leader: &LeaderHandle,
    caches: &SharedCaches,
    metrics: &Metrics,
    settings: ControllerSettings,
) -> ControllerContext {
    ControllerContext {
        caches: caches.clone(),
        applier: Applier::new(client.clone(), leader.clone(), registration.info.name),
        metrics: metrics.clone(),
        settings,
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::time::Duration;

    use super::{ObjectKey, RELEASED_PER_WORKER, release_worker, work};
    use crate::queue::{Backoff, WorkQueue};

    /// One worker: the reconcile of `a` hands it back and then waits for `b`'s, which can run
    /// only on that same worker. `a` is queued again meanwhile and is not reconciled twice at
    /// once. (The timeout only turns a hang into a failure.)
    #[tokio::test]
    async fn a_reconcile_that_hands_its_worker_back_lets_the_next_key_run() {
        let queue: WorkQueue<ObjectKey> = WorkQueue::new("test", Backoff::default());
        let (stop_tx, stop_rx) = tokio::sync::watch::channel(false);
        let b_ran = Arc::new(tokio::sync::Notify::new());
        let (a_running, a_runs, a_most) = (
            Arc::new(AtomicUsize::new(0)),
            Arc::new(AtomicUsize::new(0)),
            Arc::new(AtomicUsize::new(0)),
        );
        let (done_tx, mut done_rx) = tokio::sync::mpsc::unbounded_channel::<String>();
        let reconcile = {
            let (b_ran, queue, a_most) = (b_ran.clone(), queue.clone(), a_most.clone());
            move |key: ObjectKey| {
                let (b_ran, queue, done_tx) = (b_ran.clone(), queue.clone(), done_tx.clone());
                let (a_running, a_runs, a_most) =
                    (a_running.clone(), a_runs.clone(), a_most.clone());
                async move {
                    if key.name == "a" {
                        let now = a_running.fetch_add(1, Ordering::SeqCst) + 1;
                        a_most.fetch_max(now, Ordering::SeqCst);
                        if a_runs.fetch_add(1, Ordering::SeqCst) == 0 {
                            release_worker();
                            // Queued again while running: it waits for this run to end.
                            queue.add(ObjectKey::new("ns", "a"));
                            b_ran.notified().await;
                        }
                        a_running.fetch_sub(1, Ordering::SeqCst);
                        let _ = done_tx.send(format!("a{}", a_runs.load(Ordering::SeqCst)));
                    } else {
                        b_ran.notify_one();
                        let _ = done_tx.send("b".to_owned());
                    }
                }
            }
        };
        queue.add(ObjectKey::new("ns", "a"));
        queue.add(ObjectKey::new("ns", "b"));
        let worker = tokio::spawn(work(queue.clone(), stop_rx, reconcile));
        let mut order = Vec::new();
        while order.len() < 3 {
            let next = tokio::time::timeout(Duration::from_secs(60), done_rx.recv()).await;
            order.push(next.ok().flatten().unwrap_or_else(|| panic!("stuck after {order:?}")));
        }
        assert_eq!(order, ["b", "a1", "a2"], "b ran while a waited, then a again");
        assert_eq!(a_most.load(Ordering::SeqCst), 1, "a was never reconciled twice at once");
        let _ = stop_tx.send(true);
        let _ = worker.await;
    }

    /// One worker whose reconciles all hand it back and then wait: it carries at most
    /// [`RELEASED_PER_WORKER`] of them, takes the rest once those end, and every key is
    /// reconciled.
    #[tokio::test]
    async fn a_worker_carries_a_bounded_number_of_handed_back_reconciles() {
        let queue: WorkQueue<ObjectKey> = WorkQueue::new("test", Backoff::default());
        let (stop_tx, stop_rx) = tokio::sync::watch::channel(false);
        let (running, done) = (Arc::new(AtomicUsize::new(0)), Arc::new(AtomicUsize::new(0)));
        let gate = Arc::new(tokio::sync::Semaphore::new(0));
        let reconcile = {
            let (running, done, gate) = (running.clone(), done.clone(), gate.clone());
            move |_key: ObjectKey| {
                let (running, done, gate) = (running.clone(), done.clone(), gate.clone());
                async move {
                    running.fetch_add(1, Ordering::SeqCst);
                    release_worker();
                    let _permit = gate.acquire().await;
                    running.fetch_sub(1, Ordering::SeqCst);
                    done.fetch_add(1, Ordering::SeqCst);
                }
            }
        };
        let keys = 3 * RELEASED_PER_WORKER;
        for i in 0..keys {
            queue.add(ObjectKey::new("ns", format!("k{i}")));
        }
        let worker = tokio::spawn(work(queue.clone(), stop_rx, reconcile));
        let full = async {
            while running.load(Ordering::SeqCst) < RELEASED_PER_WORKER {
                tokio::task::yield_now().await;
            }
        };
        tokio::time::timeout(Duration::from_secs(60), full).await.expect("never filled up");
        // Given every chance to take more keys, the worker takes none.
        for _ in 0..1000 {
            tokio::task::yield_now().await;
        }
        assert_eq!(running.load(Ordering::SeqCst), RELEASED_PER_WORKER);
        gate.add_permits(keys);
        let all = async {
            while done.load(Ordering::SeqCst) < keys {
                tokio::task::yield_now().await;
            }
        };
        tokio::time::timeout(Duration::from_secs(60), all).await.expect("not all reconciled");
        let _ = stop_tx.send(true);
        let _ = worker.await;
    }
}
