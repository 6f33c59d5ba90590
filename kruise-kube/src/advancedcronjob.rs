//! The AdvancedCronJob controller (`advancedcronjob-controller`), over kruise-core's planner
//! ([`kruise_core::advancedcronjob`]): a Job, BroadcastJob or ImageListPullJob on a cron
//! schedule. For each AdvancedCronJob, one [`plan`] from the object, the jobs it controls and
//! the manager's zone, carried out by the applier; it wakes again at the next run.
//!
//! An AdvancedCronJob wakes on its own changes and on any change of a job it controls, of
//! each of the three kinds. (Upstream watches Jobs under the wrong owner kind, so a
//! Job-based AdvancedCronJob there notices a finished Job only at its next run.)

use std::sync::Arc;
use std::time::Duration;

use futures::future::BoxFuture;
use jiff::tz::TimeZone;
use k8s_openapi::api::batch::v1::Job;
use kruise_api::apps::v1beta1::{AdvancedCronJob, BroadcastJob, ImageListPullJob};
use kruise_core::advancedcronjob::{Child, Snapshot, plan};

use crate::applier::PlanOwner;
use crate::cache::{Cache, ObjectKey};
use crate::controller::{
    ControllerContext, ControllerInfo, ReconcileError, Reconciler, Registration, ServedResource,
    Watch,
};

crate::watched_namespaced!(AdvancedCronJob, Job);

/// Upstream's controller name.
pub const CONTROLLER_NAME: &str = "advancedcronjob-controller";

/// The AdvancedCronJob controller.
pub struct AdvancedCronJobController {
    context: ControllerContext,
    cron_jobs: Cache<AdvancedCronJob>,
    jobs: Cache<Job>,
    broadcast_jobs: Cache<BroadcastJob>,
    image_list_pull_jobs: Cache<ImageListPullJob>,
    /// The zone of a schedule that names none: the manager's (its `TZ`), as upstream's
    /// `time.Local`.
    zone: TimeZone,
}

impl AdvancedCronJobController {
    const INFO: ControllerInfo = ControllerInfo::new(
        CONTROLLER_NAME,
        "advancedcronjob-workers",
        Some(ServedResource {
            group: "apps.kruise.io",
            version: "v1beta1",
            plural: "advancedcronjobs",
        }),
    );

    fn build(context: ControllerContext) -> Arc<dyn Reconciler> {
        Arc::new(Self {
            cron_jobs: context.caches.get(),
            jobs: context.caches.get(),
            broadcast_jobs: context.caches.get(),
            image_list_pull_jobs: context.caches.get(),
            zone: TimeZone::system(),
            context,
        })
    }

    async fn reconcile_cron_job(
        &self,
        key: &ObjectKey,
    ) -> Result<Option<Duration>, ReconcileError> {
        let Some(cron_job) = self.cron_jobs.get(key) else {
            return Ok(None);
        };
        let uid = cron_job.metadata.uid.clone().unwrap_or_default();
        let mut children: Vec<Child> =
            self.jobs.controlled_by(&uid).iter().map(|j| Child::of_job(j)).collect();
        children.extend(
            self.broadcast_jobs.controlled_by(&uid).iter().map(|j| Child::of_broadcast_job(j)),
        );
        children.extend(
            self.image_list_pull_jobs
                .controlled_by(&uid)
                .iter()
                .map(|j| Child::of_image_list_pull_job(j)),
        );
        let snapshot =
            Snapshot { cron_job: (*cron_job).clone(), children, default_zone: self.zone.clone() };
        let now = jiff::Timestamp::now();
        let plan = plan(&snapshot, now);
        let status = serde_json::to_value(&cron_job.status).unwrap_or(serde_json::Value::Null);
        let owner = PlanOwner::of(cron_job.as_ref(), status);
        self.context.applier.apply(&owner, &plan, None, now).await?;
        // Wake a little after the run is due, so that `now` is past it.
        Ok(plan
            .requeue_after
            .and_then(|d| Duration::try_from(d).ok())
            .map(|d| d + Duration::from_millis(50)))
    }
}

impl Reconciler for AdvancedCronJobController {
    fn watches(&self) -> Vec<Watch> {
        vec![
            Watch::own(&self.cron_jobs),
            Watch::controller_owner(&self.jobs, &self.cron_jobs, "AdvancedCronJob"),
            Watch::controller_owner(&self.broadcast_jobs, &self.cron_jobs, "AdvancedCronJob"),
            Watch::controller_owner(&self.image_list_pull_jobs, &self.cron_jobs, "AdvancedCronJob"),
        ]
    }

    fn keys(&self) -> Vec<ObjectKey> {
        self.cron_jobs.all().iter().map(|j| ObjectKey::of(j.as_ref())).collect()
    }

    fn reconcile<'a>(
        &'a self,
        key: &'a ObjectKey,
    ) -> BoxFuture<'a, Result<Option<Duration>, ReconcileError>> {
        Box::pin(self.reconcile_cron_job(key))
    }
}

/// The controller's registration.
pub fn registration() -> Registration {
    Registration { info: AdvancedCronJobController::INFO, build: AdvancedCronJobController::build }
}
