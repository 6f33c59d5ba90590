//! The EphemeralJob controller (`ephemeraljob-controller`), over kruise-core's planner
//! ([`kruise_core::ephemeraljob`]): ephemeral containers added to the pods a selector
//! matches, through each pod's `ephemeralcontainers` subresource. For each job, one [`plan`]
//! from the job and the pods of its namespace, carried out by the applier.
//!
//! A job wakes on its own changes, and on any change of a pod its selector matches.

use std::sync::Arc;
use std::time::Duration;

use futures::future::BoxFuture;
use kruise_api::apps::v1alpha1::EphemeralJob;
use kruise_core::ephemeraljob::{Snapshot, plan};
use kruise_core::selector::Selector;

use crate::applier::PlanOwner;
use crate::cache::{Cache, ObjectKey};
use crate::cached_pod::CachedPod;
use crate::controller::{
    ControllerContext, ControllerInfo, KeyMapping, ReconcileError, Reconciler, Registration,
    ServedResource, Watch,
};

crate::watched_namespaced!(EphemeralJob);

/// Upstream's controller name.
pub const CONTROLLER_NAME: &str = "ephemeraljob-controller";

/// The EphemeralJob controller.
pub struct EphemeralJobController {
    context: ControllerContext,
    jobs: Cache<EphemeralJob>,
    pods: Cache<CachedPod>,
}

fn selects(job: &EphemeralJob, pod: &CachedPod) -> bool {
    Selector::parse(job.spec.selector.as_ref())
        .is_ok_and(|s| s.matches(pod.metadata.labels.as_ref().unwrap_or(&Default::default())))
}

impl EphemeralJobController {
    const INFO: ControllerInfo = ControllerInfo::new(
        CONTROLLER_NAME,
        "ephemeraljob-workers",
        Some(ServedResource {
            group: "apps.kruise.io",
            version: "v1alpha1",
            plural: "ephemeraljobs",
        }),
    );

    fn build(context: ControllerContext) -> Arc<dyn Reconciler> {
        Arc::new(Self { jobs: context.caches.get(), pods: context.caches.get(), context })
    }

    async fn reconcile_job(&self, key: &ObjectKey) -> Result<Option<Duration>, ReconcileError> {
        let Some(job) = self.jobs.get(key) else {
            return Ok(None);
        };
        let namespace = job.metadata.namespace.clone().unwrap_or_default();
        let pods = self
            .pods
            .select_in_namespace(&namespace, |p| selects(&job, p))
            .iter()
            .map(|p| p.to_pod())
            .collect::<Result<Vec<_>, _>>()?;
        let snapshot = Snapshot { job: (*job).clone(), pods };
        let now = jiff::Timestamp::now();
        let plan = plan(&snapshot, now);
        let status = serde_json::to_value(&job.status).unwrap_or(serde_json::Value::Null);
        let owner = PlanOwner::of(job.as_ref(), status);
        self.context.applier.apply(&owner, &plan, None, now).await?;
        Ok(plan.requeue_after.and_then(|d| Duration::try_from(d).ok()))
    }
}

impl Reconciler for EphemeralJobController {
    fn watches(&self) -> Vec<Watch> {
        let jobs = self.jobs.clone();
        vec![
            Watch::own(&self.jobs),
            // A pod wakes the jobs whose selector matches it.
            Watch::new(&self.pods, KeyMapping::Custom, move |change| {
                let Some(pod) = change.new.as_deref().or(change.old.as_deref()) else {
                    return Vec::new();
                };
                let namespace = pod.metadata.namespace.clone().unwrap_or_default();
                jobs.select_in_namespace(&namespace, |job| selects(job, pod))
                    .iter()
                    .map(|job| ObjectKey::of(job.as_ref()))
                    .collect()
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
    Registration { info: EphemeralJobController::INFO, build: EphemeralJobController::build }
}
