//! Kruise Rollout's controllers (`rollout-controller`, `batchrelease-controller`), over
//! kruise-core's planners ([`kruise_core::rollouts`]): for each Rollout, one
//! [`rollout::plan`] from the Rollout, its workload and its BatchRelease; for each
//! BatchRelease, one [`batchrelease::plan`] from it, its workload and the workload's pods;
//! both carried out by the applier. The workload webhook and the Rollout validation are
//! registered with the other webhooks ([`crate::admission`]).
//!
//! Upstream runs these in a second manager (`kruise-rollout`); here they run in
//! kruise-manager beside the workload controllers, which they drive only through the
//! workloads' own fields (partition, annotations), exactly as the second manager would.
//!
//! A Rollout wakes on its own changes, its BatchRelease's, and its workload's; a BatchRelease
//! on its own, its workload's, and the workload's pods'.

use std::sync::Arc;
use std::time::Duration;

use futures::future::BoxFuture;
use kruise_api::apps::v1beta1::{CloneSet, StatefulSet};
use kruise_api::rollouts::v1beta1::{BatchRelease, Rollout};
use kruise_core::rollouts::batchrelease::{self, ReleasePod};
use kruise_core::rollouts::{ReleasedKind, ReleasedWorkload, rollout};

use crate::applier::PlanOwner;
use crate::cache::{Cache, Change, ObjectKey};
use crate::cached_pod::CachedPod;
use crate::controller::{
    ControllerContext, ControllerInfo, KeyMapping, ReconcileError, Reconciler, Registration,
    ServedResource, Watch,
};

crate::watched_namespaced!(Rollout, BatchRelease);

/// Upstream's controller names.
pub const ROLLOUT_CONTROLLER: &str = "rollout-controller";
/// Upstream's controller names.
pub const BATCH_RELEASE_CONTROLLER: &str = "batchrelease-controller";

/// The workloads a release can move, read from the shared caches.
#[derive(Clone)]
struct Workloads {
    clone_sets: Cache<CloneSet>,
    advanced_stateful_sets: Cache<StatefulSet>,
}

impl Workloads {
    fn new(context: &ControllerContext) -> Self {
        Self { clone_sets: context.caches.get(), advanced_stateful_sets: context.caches.get() }
    }

    /// The workload `reference` names in `namespace`, when it exists and is of a kind
    /// released here.
    fn get(
        &self,
        namespace: &str,
        reference: &kruise_api::rollouts::v1beta1::ObjectRef,
    ) -> Option<ReleasedWorkload> {
        let key = ObjectKey::new(namespace, reference.name.as_str());
        match ReleasedKind::from_ref(&reference.api_version, &reference.kind).ok()? {
            ReleasedKind::CloneSet => {
                self.clone_sets.get(&key).map(|cs| ReleasedWorkload::from_clone_set(&cs))
            }
            ReleasedKind::AdvancedStatefulSet => self
                .advanced_stateful_sets
                .get(&key)
                .map(|sts| ReleasedWorkload::from_advanced_stateful_set(&sts)),
        }
    }
}

/// The keys of the objects in `cache` whose workload reference (read by `reference`) names
/// the workload of `kind` that changed.
fn referring<K: crate::cache::Watched>(
    cache: &Cache<K>,
    kind: ReleasedKind,
    meta: &k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta,
    reference: fn(&K) -> &kruise_api::rollouts::v1beta1::ObjectRef,
) -> Vec<ObjectKey> {
    let namespace = meta.namespace.clone().unwrap_or_default();
    let name = meta.name.clone().unwrap_or_default();
    cache
        .in_namespace(&namespace)
        .iter()
        .filter(|o| {
            let r = reference(o);
            r.name == name && ReleasedKind::from_ref(&r.api_version, &r.kind).ok() == Some(kind)
        })
        .map(|o| ObjectKey::of(o.as_ref()))
        .collect()
}

/// Watches of both workload kinds that wake the objects of `cache` referring to them.
fn workload_watches<K: crate::cache::Watched>(
    workloads: &Workloads,
    cache: &Cache<K>,
    reference: fn(&K) -> &kruise_api::rollouts::v1beta1::ObjectRef,
) -> Vec<Watch> {
    let (for_cs, for_sts) = (cache.clone(), cache.clone());
    vec![
        Watch::new(&workloads.clone_sets, KeyMapping::Custom, move |change: &Change<CloneSet>| {
            change
                .new
                .as_deref()
                .or(change.old.as_deref())
                .map(|cs| referring(&for_cs, ReleasedKind::CloneSet, &cs.metadata, reference))
                .unwrap_or_default()
        }),
        Watch::new(
            &workloads.advanced_stateful_sets,
            KeyMapping::Custom,
            move |change: &Change<StatefulSet>| {
                change
                    .new
                    .as_deref()
                    .or(change.old.as_deref())
                    .map(|sts| {
                        referring(
                            &for_sts,
                            ReleasedKind::AdvancedStatefulSet,
                            &sts.metadata,
                            reference,
                        )
                    })
                    .unwrap_or_default()
            },
        ),
    ]
}

fn rollout_reference(r: &Rollout) -> &kruise_api::rollouts::v1beta1::ObjectRef {
    &r.spec.workload_ref
}

fn release_reference(b: &BatchRelease) -> &kruise_api::rollouts::v1beta1::ObjectRef {
    &b.spec.workload_ref
}

fn requeue(plan_requeue: Option<jiff::SignedDuration>) -> Option<Duration> {
    plan_requeue.and_then(|d| Duration::try_from(d).ok())
}

/// The Rollout controller.
pub struct RolloutController {
    context: ControllerContext,
    rollouts: Cache<Rollout>,
    batch_releases: Cache<BatchRelease>,
    workloads: Workloads,
}

impl RolloutController {
    const INFO: ControllerInfo = ControllerInfo::new(
        ROLLOUT_CONTROLLER,
        "rollout-workers",
        Some(ServedResource {
            group: "rollouts.kruise.io",
            version: "v1beta1",
            plural: "rollouts",
        }),
    );

    fn build(context: ControllerContext) -> Arc<dyn Reconciler> {
        Arc::new(Self {
            rollouts: context.caches.get(),
            batch_releases: context.caches.get(),
            workloads: Workloads::new(&context),
            context,
        })
    }

    async fn reconcile_rollout(&self, key: &ObjectKey) -> Result<Option<Duration>, ReconcileError> {
        let Some(rollout) = self.rollouts.get(key) else { return Ok(None) };
        let snapshot = rollout::Snapshot {
            rollout: (*rollout).clone(),
            workload: self.workloads.get(&key.namespace, &rollout.spec.workload_ref),
            batch_release: self.batch_releases.get(key).map(|b| (*b).clone()),
        };
        let now = jiff::Timestamp::now();
        let plan = rollout::plan(&snapshot, now);
        let status = serde_json::to_value(&rollout.status).unwrap_or(serde_json::Value::Null);
        let owner = PlanOwner::of(rollout.as_ref(), status);
        self.context.applier.apply(&owner, &plan, None, now).await?;
        Ok(requeue(plan.requeue_after))
    }
}

impl Reconciler for RolloutController {
    fn watches(&self) -> Vec<Watch> {
        let mut watches = vec![
            Watch::own(&self.rollouts),
            Watch::controller_owner(&self.batch_releases, &self.rollouts, "Rollout"),
        ];
        watches.extend(workload_watches(&self.workloads, &self.rollouts, rollout_reference));
        watches
    }

    fn keys(&self) -> Vec<ObjectKey> {
        self.rollouts.all().iter().map(|r| ObjectKey::of(r.as_ref())).collect()
    }

    fn reconcile<'a>(
        &'a self,
        key: &'a ObjectKey,
    ) -> BoxFuture<'a, Result<Option<Duration>, ReconcileError>> {
        Box::pin(self.reconcile_rollout(key))
    }
}

/// The BatchRelease controller.
pub struct BatchReleaseController {
    context: ControllerContext,
    batch_releases: Cache<BatchRelease>,
    workloads: Workloads,
    pods: Cache<CachedPod>,
}

impl BatchReleaseController {
    const INFO: ControllerInfo = ControllerInfo::new(
        BATCH_RELEASE_CONTROLLER,
        "batchrelease-workers",
        Some(ServedResource {
            group: "rollouts.kruise.io",
            version: "v1beta1",
            plural: "batchreleases",
        }),
    );

    fn build(context: ControllerContext) -> Arc<dyn Reconciler> {
        Arc::new(Self {
            batch_releases: context.caches.get(),
            workloads: Workloads::new(&context),
            pods: context.caches.get(),
            context,
        })
    }

    /// The workload's pods: those it controls.
    fn pods(&self, workload: &ReleasedWorkload) -> Vec<ReleasePod> {
        if workload.uid.is_empty() {
            return Vec::new();
        }
        self.pods
            .controlled_by(&workload.uid)
            .iter()
            .map(|pod| ReleasePod {
                name: pod.metadata.name.clone().unwrap_or_default(),
                labels: pod.metadata.labels.clone().unwrap_or_default(),
                ready: pod
                    .status
                    .iter()
                    .flat_map(|s| s.conditions.iter().flatten())
                    .any(|c| c.type_ == "Ready" && c.status == "True"),
                deleting: pod.metadata.deletion_timestamp.is_some(),
            })
            .collect()
    }

    async fn reconcile_release(&self, key: &ObjectKey) -> Result<Option<Duration>, ReconcileError> {
        let Some(release) = self.batch_releases.get(key) else { return Ok(None) };
        let workload = self.workloads.get(&key.namespace, &release.spec.workload_ref);
        let pods = workload.as_ref().map(|w| self.pods(w)).unwrap_or_default();
        let snapshot = batchrelease::Snapshot { release: (*release).clone(), workload, pods };
        let now = jiff::Timestamp::now();
        let plan = batchrelease::plan(&snapshot, now);
        let status = serde_json::to_value(&release.status).unwrap_or(serde_json::Value::Null);
        let owner = PlanOwner::of(release.as_ref(), status);
        self.context.applier.apply(&owner, &plan, None, now).await?;
        Ok(requeue(plan.requeue_after))
    }
}

impl Reconciler for BatchReleaseController {
    fn watches(&self) -> Vec<Watch> {
        let mut watches = vec![Watch::own(&self.batch_releases)];
        watches.extend(workload_watches(&self.workloads, &self.batch_releases, release_reference));
        // A pod of a released workload: the BatchReleases referring to its controller.
        let releases = self.batch_releases.clone();
        let (clone_sets, sets) =
            (self.workloads.clone_sets.clone(), self.workloads.advanced_stateful_sets.clone());
        watches.push(Watch::new(
            &self.pods,
            KeyMapping::Custom,
            move |change: &Change<CachedPod>| {
                let Some(pod) = change.new.as_deref().or(change.old.as_deref()) else {
                    return Vec::new();
                };
                let meta = &pod.metadata;
                let namespace = meta.namespace.clone().unwrap_or_default();
                let mut keys = Vec::new();
                for owner in
                    meta.owner_references.iter().flatten().filter(|r| r.controller == Some(true))
                {
                    let key = ObjectKey::new(namespace.as_str(), owner.name.as_str());
                    let kind = match owner.kind.as_str() {
                        "CloneSet" if clone_sets.get(&key).is_some() => ReleasedKind::CloneSet,
                        "StatefulSet" if sets.get(&key).is_some() => {
                            ReleasedKind::AdvancedStatefulSet
                        }
                        _ => continue,
                    };
                    let workload_meta =
                        k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta {
                            namespace: Some(namespace.clone()),
                            name: Some(owner.name.clone()),
                            ..Default::default()
                        };
                    keys.extend(referring(&releases, kind, &workload_meta, release_reference));
                }
                keys
            },
        ));
        watches
    }

    fn keys(&self) -> Vec<ObjectKey> {
        self.batch_releases.all().iter().map(|b| ObjectKey::of(b.as_ref())).collect()
    }

    fn reconcile<'a>(
        &'a self,
        key: &'a ObjectKey,
    ) -> BoxFuture<'a, Result<Option<Duration>, ReconcileError>> {
        Box::pin(self.reconcile_release(key))
    }
}

/// The Rollout controller's registration.
pub fn rollout_registration() -> Registration {
    Registration { info: RolloutController::INFO, build: RolloutController::build }
}

/// The BatchRelease controller's registration.
pub fn batch_release_registration() -> Registration {
    Registration { info: BatchReleaseController::INFO, build: BatchReleaseController::build }
}
