//! The BroadcastJob controller (`broadcastjob-controller`), over kruise-core's planner
//! ([`kruise_core::broadcastjob`]): one pod of the job on every eligible node, run to
//! completion. For each job, one [`plan`] from the job, the pods it controls and the nodes,
//! carried out by the applier.
//!
//! A job wakes on its own changes and its pods'; a node that appears, goes, or changes its
//! labels, taints, schedulability or allocatable wakes every job.

use std::sync::Arc;
use std::time::Duration;

use futures::future::BoxFuture;
use k8s_openapi::api::core::v1::Node;
use kruise_api::apps::v1beta1::BroadcastJob;
use kruise_core::broadcastjob::{Snapshot, plan};

use crate::applier::PlanOwner;
use crate::cache::{Cache, ObjectKey};
use crate::cached_pod::CachedPod;
use crate::controller::{
    ControllerContext, ControllerInfo, KeyMapping, ReconcileError, Reconciler, Registration,
    ServedResource, Watch,
};

crate::watched_namespaced!(BroadcastJob);

/// Upstream's controller name.
pub const CONTROLLER_NAME: &str = "broadcastjob-controller";

/// The BroadcastJob controller.
pub struct BroadcastJobController {
    context: ControllerContext,
    jobs: Cache<BroadcastJob>,
    pods: Cache<CachedPod>,
    nodes: Cache<Node>,
}

impl BroadcastJobController {
    const INFO: ControllerInfo = ControllerInfo::new(
        CONTROLLER_NAME,
        "broadcastjob-workers",
        Some(ServedResource {
            group: "apps.kruise.io",
            version: "v1beta1",
            plural: "broadcastjobs",
        }),
    );

    fn build(context: ControllerContext) -> Arc<dyn Reconciler> {
        Arc::new(Self {
            jobs: context.caches.get(),
            pods: context.caches.get(),
            nodes: context.caches.get(),
            context,
        })
    }

    async fn reconcile_job(&self, key: &ObjectKey) -> Result<Option<Duration>, ReconcileError> {
        let Some(job) = self.jobs.get(key) else {
            return Ok(None);
        };
        let uid = job.metadata.uid.clone().unwrap_or_default();
        let pods = self
            .pods
            .controlled_by(&uid)
            .iter()
            .map(|p| p.to_pod())
            .collect::<Result<Vec<_>, _>>()?;
        let snapshot = Snapshot {
            job: (*job).clone(),
            pods,
            nodes: self.nodes.all().iter().map(|n| (**n).clone()).collect(),
            assign_by_scheduler: self.context.settings.assign_bcj_pods_by_scheduler,
            readiness_gate: self.context.settings.gates.enabled("PodWebhook"),
        };
        let now = jiff::Timestamp::now();
        let plan = plan(&snapshot, now);
        let status = serde_json::to_value(&job.status).unwrap_or(serde_json::Value::Null);
        let owner = PlanOwner::of(job.as_ref(), status);
        self.context.applier.apply(&owner, &plan, None, now).await?;
        Ok(plan.requeue_after.and_then(|d| Duration::try_from(d).ok()))
    }
}

/// Whether a node change can change which nodes fit a job's pod.
fn node_matters(old: &Node, new: &Node) -> bool {
    old.metadata.labels != new.metadata.labels
        || old.spec != new.spec
        || old.status.as_ref().map(|s| &s.allocatable)
            != new.status.as_ref().map(|s| &s.allocatable)
}

impl Reconciler for BroadcastJobController {
    fn watches(&self) -> Vec<Watch> {
        let jobs = self.jobs.clone();
        vec![
            Watch::own(&self.jobs),
            // A pod wakes the job that controls it.
            Watch::controller_owner(&self.pods, &self.jobs, "BroadcastJob"),
            // A node that may fit (or stop fitting) wakes every job.
            Watch::new(&self.nodes, KeyMapping::Custom, move |change| {
                let wake = match (change.old.as_deref(), change.new.as_deref()) {
                    (Some(old), Some(new)) => node_matters(old, new),
                    _ => true,
                };
                if !wake {
                    return Vec::new();
                }
                jobs.all().iter().map(|j| ObjectKey::of(j.as_ref())).collect()
            }),
        ]
    }

    fn keys(&self) -> Vec<ObjectKey> {
        self.jobs.all().iter().map(|j| ObjectKey::of(j.as_ref())).collect()
    }

    fn reconcile<'a>(
        &'a self,
        key: &'a ObjectKey,
    ) -> BoxFuture<'a, Result<Option<Duration>, ReconcileError>> {
        Box::pin(self.reconcile_job(key))
    }
}

/// The controller's registration.
pub fn registration() -> Registration {
    Registration { info: BroadcastJobController::INFO, build: BroadcastJobController::build }
}
