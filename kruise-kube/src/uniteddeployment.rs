//! The UnitedDeployment controller (`uniteddeployment-controller`), over kruise-core's planner
//! ([`kruise_core::uniteddeployment`]): one workload per subset of nodes. For each
//! UnitedDeployment, one [`plan`] from the object, the workloads and ControllerRevisions it
//! controls and its pods, carried out by the applier.
//!
//! It wakes on its own changes, on any change of a workload or revision it controls, and, with
//! `scheduleStrategy: Adaptive`, on a change of a pod its selector matches (upstream watches
//! no pods, and notices a pod waiting for a node only at its next timed look).
//!
//! apps/v1 StatefulSets and Deployments are cached whole (Kruise Rollout releases them too);
//! this controller reads only those it controls.

use std::sync::Arc;
use std::time::Duration;

use futures::future::BoxFuture;
use k8s_openapi::api::apps::v1::{Deployment, StatefulSet as KubeStatefulSet};
use kruise_api::apps::v1beta1::{
    CloneSet, StatefulSet, UnitedDeployment, UnitedDeploymentScheduleStrategyType,
};
use kruise_api::well_known::labels::SUBSET_NAME;
use kruise_core::selector::Selector;
use kruise_core::uniteddeployment::subset::SubsetKind;
use kruise_core::uniteddeployment::{Snapshot, plan};

use crate::applier::PlanOwner;
use crate::cache::{Cache, ObjectKey, WatchEvents, Watched};
use crate::cached_pod::CachedPod;
use crate::controller::{
    ControllerContext, ControllerInfo, KeyMapping, ReconcileError, Reconciler, Registration,
    ServedResource, Watch,
};

crate::watched_namespaced!(UnitedDeployment);

/// Every StatefulSet: a UnitedDeployment's subsets, and the StatefulSets Rollouts release.
impl Watched for KubeStatefulSet {
    fn watch(client: &kube::Client, namespace: Option<&str>) -> WatchEvents<Self> {
        crate::cache::namespaced_watch(client, namespace)
    }
}

/// Every Deployment: a UnitedDeployment's subsets, and the Deployments Rollouts release.
impl Watched for Deployment {
    fn watch(client: &kube::Client, namespace: Option<&str>) -> WatchEvents<Self> {
        crate::cache::namespaced_watch(client, namespace)
    }
}

/// Upstream's controller name.
pub const CONTROLLER_NAME: &str = "uniteddeployment-controller";

/// The UnitedDeployment controller.
pub struct UnitedDeploymentController {
    context: ControllerContext,
    uds: Cache<UnitedDeployment>,
    clone_sets: Cache<CloneSet>,
    advanced_stateful_sets: Cache<StatefulSet>,
    stateful_sets: Cache<KubeStatefulSet>,
    deployments: Cache<Deployment>,
    revisions: Cache<crate::cached_revision::CachedRevision>,
    pods: Cache<CachedPod>,
    /// For each UnitedDeployment whose status this controller wrote, the resourceVersion it
    /// had been read at: while the cache still holds that version, it has not seen the write
    /// (upstream's resourceVersion expectation).
    written_over: std::sync::Mutex<std::collections::HashMap<ObjectKey, String>>,
}

/// How long to wait for the cache to catch up with a status this controller wrote.
const STALE_RETRY: Duration = Duration::from_millis(100);

fn json_of<T: serde::Serialize>(object: &T) -> serde_json::Value {
    serde_json::to_value(object).unwrap_or_default()
}

impl UnitedDeploymentController {
    const INFO: ControllerInfo = ControllerInfo::new(
        CONTROLLER_NAME,
        "uniteddeployment-workers",
        Some(ServedResource {
            group: "apps.kruise.io",
            version: "v1beta1",
            plural: "uniteddeployments",
        }),
    );

    fn build(context: ControllerContext) -> Arc<dyn Reconciler> {
        Arc::new(Self {
            uds: context.caches.get(),
            clone_sets: context.caches.get(),
            advanced_stateful_sets: context.caches.get(),
            stateful_sets: context.caches.get(),
            deployments: context.caches.get(),
            revisions: context.caches.get(),
            pods: context.caches.get(),
            written_over: Default::default(),
            context,
        })
    }

    async fn reconcile_ud(&self, key: &ObjectKey) -> Result<Option<Duration>, ReconcileError> {
        let Some(ud) = self.uds.get(key) else {
            self.written_over.lock().unwrap_or_else(|e| e.into_inner()).remove(key);
            return Ok(None);
        };
        let read_at = ud.metadata.resource_version.clone().unwrap_or_default();
        {
            let mut written = self.written_over.lock().unwrap_or_else(|e| e.into_inner());
            match written.get(key) {
                Some(rv) if *rv == read_at => return Ok(Some(STALE_RETRY)),
                Some(_) => {
                    written.remove(key);
                }
                None => {}
            }
        }
        let uid = ud.metadata.uid.clone().unwrap_or_default();
        let namespace = ud.metadata.namespace.clone().unwrap_or_default();
        let mut workloads = Vec::new();
        workloads.extend(
            self.clone_sets
                .controlled_by(&uid)
                .iter()
                .map(|w| (SubsetKind::CloneSet, json_of(w.as_ref()))),
        );
        workloads.extend(
            self.advanced_stateful_sets
                .controlled_by(&uid)
                .iter()
                .map(|w| (SubsetKind::AdvancedStatefulSet, json_of(w.as_ref()))),
        );
        workloads.extend(
            self.stateful_sets
                .controlled_by(&uid)
                .iter()
                .map(|w| (SubsetKind::StatefulSet, json_of(w.as_ref()))),
        );
        workloads.extend(
            self.deployments
                .controlled_by(&uid)
                .iter()
                .map(|w| (SubsetKind::Deployment, json_of(w.as_ref()))),
        );
        let revisions =
            self.revisions.controlled_by(&uid).iter().map(|r| r.to_revision()).collect();
        let selector = Selector::parse(ud.spec.selector.as_ref()).ok();
        let pods = self
            .pods
            .select_in_namespace(&namespace, |p| {
                selector.as_ref().is_some_and(|s| {
                    s.matches(p.metadata.labels.as_ref().unwrap_or(&Default::default()))
                })
            })
            .iter()
            // Metadata and status are all the planner reads: no spec is decoded.
            .map(|p| p.without_spec())
            .collect();
        let snapshot = Snapshot { ud: (*ud).clone(), workloads, revisions, pods };
        let now = jiff::Timestamp::now();
        let plan = plan(&snapshot, now);
        let status = serde_json::to_value(&ud.status).unwrap_or(serde_json::Value::Null);
        // The subsets' `Schedulable` conditions live in the status and are read back: a
        // status planned from a stale read must not overwrite a newer one.
        let owner = PlanOwner::of(ud.as_ref(), status)
            .guarding_status(ud.metadata.resource_version.clone());
        self.context.applier.apply(&owner, &plan, None, now).await?;
        if plan.status.is_some() {
            self.written_over
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .insert(key.clone(), read_at);
        }
        Ok(plan.requeue_after.and_then(|d| Duration::try_from(d).ok()))
    }
}

impl Reconciler for UnitedDeploymentController {
    fn watches(&self) -> Vec<Watch> {
        let uds = self.uds.clone();
        vec![
            Watch::own(&self.uds),
            Watch::controller_owner(&self.clone_sets, &self.uds, "UnitedDeployment"),
            Watch::controller_owner(&self.advanced_stateful_sets, &self.uds, "UnitedDeployment"),
            Watch::controller_owner(&self.stateful_sets, &self.uds, "UnitedDeployment"),
            Watch::controller_owner(&self.deployments, &self.uds, "UnitedDeployment"),
            Watch::controller_owner(&self.revisions, &self.uds, "UnitedDeployment"),
            // A subset's pod wakes the UnitedDeployments whose selector matches it.
            Watch::new(&self.pods, KeyMapping::Custom, move |change| {
                let Some(pod) = change.new.as_deref().or(change.old.as_deref()) else {
                    return Vec::new();
                };
                let Some(labels) =
                    pod.metadata.labels.as_ref().filter(|l| l.contains_key(SUBSET_NAME))
                else {
                    return Vec::new();
                };
                let namespace = pod.metadata.namespace.clone().unwrap_or_default();
                // Only Adaptive needs its pods: the rest reads the workloads' counts.
                uds.select_in_namespace(&namespace, |ud| {
                    ud.spec.topology.schedule_strategy.type_
                        == Some(UnitedDeploymentScheduleStrategyType::Adaptive)
                        && Selector::parse(ud.spec.selector.as_ref())
                            .is_ok_and(|s| s.matches(labels))
                })
                .iter()
                .map(|ud| ObjectKey::of(ud.as_ref()))
                .collect()
            }),
        ]
    }

    fn keys(&self) -> Vec<ObjectKey> {
        self.uds.all().iter().map(|u| ObjectKey::of(u.as_ref())).collect()
    }

    fn reconcile<'a>(
        &'a self,
        key: &'a ObjectKey,
    ) -> BoxFuture<'a, Result<Option<Duration>, ReconcileError>> {
        Box::pin(self.reconcile_ud(key))
    }
}

/// The controller's registration.
pub fn registration() -> Registration {
    Registration {
        info: UnitedDeploymentController::INFO,
        build: UnitedDeploymentController::build,
    }
}
