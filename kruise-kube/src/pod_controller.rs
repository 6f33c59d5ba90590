//! Controllers whose keys are pods (the pod features' controllers: the readiness gate, launch
//! priority, the sidecar terminator), as one [`Reconciler`] over a [`PodPlanner`].
//!
//! A planner says which pods it wants from the cached pod alone ([`PodPlanner::wanted`],
//! cheap: metadata, status and a substring search of the spec text), and plans for a wanted
//! pod ([`PodPlanner::plan`]) with whatever else it reads. Everything around that is here:
//! the pod watch filtered by `wanted`, the keys, decoding the pod, and applying the plan with
//! the pod as its owner (Events go to the pod).

use std::sync::Arc;
use std::time::Duration;

use futures::future::BoxFuture;
use k8s_openapi::api::core::v1::Pod;
use kruise_core::plan::Plan;

use crate::applier::PlanOwner;
use crate::cache::{Cache, ObjectKey};
use crate::cached_pod::CachedPod;
use crate::controller::{
    ControllerContext, ControllerInfo, ReconcileError, Reconciler, Registration, Watch, keys_where,
};

/// One pod feature's controller logic.
pub trait PodPlanner: Send + Sync + Sized + 'static {
    /// Its name, workers flag and gates.
    const INFO: ControllerInfo;

    /// Built from the shared context (asking the caches for what it reads besides pods).
    fn new(context: &ControllerContext) -> Self;

    /// Whether a pod change may need a plan, from the cached pod alone.
    fn wanted(pod: &CachedPod) -> bool;

    /// Other kinds whose changes wake pods (none by default).
    fn watches(&self, _pods: &Cache<CachedPod>) -> Vec<Watch> {
        Vec::new()
    }

    /// The plan for a wanted pod, `key`.
    fn plan<'a>(
        &'a self,
        context: &'a ControllerContext,
        key: &'a ObjectKey,
        pod: &'a Pod,
        now: jiff::Timestamp,
    ) -> BoxFuture<'a, Result<Plan<()>, ReconcileError>>;
}

/// The reconciler of a [`PodPlanner`].
struct PodController<P> {
    context: ControllerContext,
    pods: Cache<CachedPod>,
    planner: P,
}

impl<P: PodPlanner> PodController<P> {
    fn build(context: ControllerContext) -> Arc<dyn Reconciler> {
        Arc::new(Self { pods: context.caches.get(), planner: P::new(&context), context })
    }

    async fn reconcile_pod(&self, key: &ObjectKey) -> Result<Option<Duration>, ReconcileError> {
        let Some(cached) = self.pods.get(key) else {
            return Ok(None);
        };
        if !P::wanted(&cached) {
            return Ok(None);
        }
        let pod = cached.to_pod()?;
        let now = jiff::Timestamp::now();
        let plan = self.planner.plan(&self.context, key, &pod, now).await?;
        if plan.actions.is_empty() && plan.events.is_empty() {
            return Ok(None);
        }
        let owner = PlanOwner::of(&pod, serde_json::Value::Null);
        self.context.applier.apply(&owner, &plan, None, now).await?;
        Ok(plan.requeue_after.and_then(|d| Duration::try_from(d).ok()))
    }
}

impl<P: PodPlanner> Reconciler for PodController<P> {
    fn watches(&self) -> Vec<Watch> {
        let mut watches = vec![Watch::own_where(&self.pods, P::wanted)];
        watches.extend(self.planner.watches(&self.pods));
        watches
    }

    fn keys(&self) -> Vec<ObjectKey> {
        keys_where(&self.pods, P::wanted)
    }

    fn reconcile<'a>(
        &'a self,
        key: &'a ObjectKey,
    ) -> BoxFuture<'a, Result<Option<Duration>, ReconcileError>> {
        Box::pin(self.reconcile_pod(key))
    }
}

/// The registration of `P`'s controller.
pub fn registration<P: PodPlanner>() -> Registration {
    Registration { info: P::INFO, build: PodController::<P>::build }
}
