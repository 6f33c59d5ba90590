//! The ContainerRecreateRequest controller (`containerrecreaterequest-controller`, gate
//! `KruiseDaemon`), over kruise-core's planner ([`kruise_core::containerrecreate`]).
//!
//! For each request, one [`plan`], carried out by the applier: `plan_crr` (pod gone, daemon silent, `activeDeadlineSeconds`, the
//! container status snapshot while recreating, the pod's not-ready hold, the removal of the
//! `crr.apps.kruise.io/active` label once finished, `ttlSecondsAfterFinished`). Then, for the
//! pod's requests together, `pick_active`: one request per pod runs at a time; the others
//! are marked `Pending` with a message naming the one they wait for, and the message goes
//! once they are next. The daemon on the pod's node does the recreating itself.
//!
//! A request change wakes its siblings on the same pod (so the next one is picked as soon as
//! one finishes); a pod change wakes the pod's requests.

use std::sync::Arc;
use std::time::Duration;

use futures::future::BoxFuture;
use kruise_api::apps::v1beta1::ContainerRecreateRequest;
use kruise_core::containerrecreate::plan;
use kube::ResourceExt as _;

use crate::applier::PlanOwner;
use crate::cache::{Cache, ObjectKey};
use crate::cached_pod::CachedPod;
use crate::controller::{
    ControllerContext, ControllerInfo, KeyMapping, ReconcileError, Reconciler, Registration,
    ServedResource, Watch,
};

crate::watched_namespaced!(ContainerRecreateRequest);

/// Upstream's controller name.
pub const CONTROLLER_NAME: &str = "containerrecreaterequest-controller";

/// The ContainerRecreateRequest controller.
pub struct CrrController {
    context: ControllerContext,
    crrs: Cache<ContainerRecreateRequest>,
    pods: Cache<CachedPod>,
}

/// The requests in `namespace` for the pod `pod`.
fn requests_of(
    crrs: &Cache<ContainerRecreateRequest>,
    namespace: &str,
    pod: &str,
) -> Vec<Arc<ContainerRecreateRequest>> {
    crrs.in_namespace(namespace).into_iter().filter(|c| c.spec.pod_name == pod).collect()
}

impl CrrController {
    const INFO: ControllerInfo = ControllerInfo::new(
        CONTROLLER_NAME,
        "containerrecreaterequest-workers",
        Some(ServedResource {
            group: "apps.kruise.io",
            version: "v1beta1",
            plural: "containerrecreaterequests",
        }),
    )
    .with_gates(&["KruiseDaemon"]);

    fn build(context: ControllerContext) -> Arc<dyn Reconciler> {
        Arc::new(Self { crrs: context.caches.get(), pods: context.caches.get(), context })
    }

    async fn reconcile_request(&self, key: &ObjectKey) -> Result<Option<Duration>, ReconcileError> {
        let Some(crr) = self.crrs.get(key) else {
            return Ok(None);
        };
        let pod_key = ObjectKey::new(key.namespace.as_str(), crr.spec.pod_name.as_str());
        let pod = self.pods.get(&pod_key).map(|p| p.to_pod()).transpose()?;
        let siblings: Vec<ContainerRecreateRequest> =
            requests_of(&self.crrs, &key.namespace, &crr.spec.pod_name)
                .iter()
                .map(|c| (**c).clone())
                .collect();
        let now = jiff::Timestamp::now();
        let plan = plan(&crr, pod.as_ref(), &siblings, now);
        let owner = PlanOwner::of(crr.as_ref(), serde_json::Value::Null);
        self.context.applier.apply(&owner, &plan, None, now).await?;
        Ok(plan.requeue_after.and_then(|d| Duration::try_from(d).ok()))
    }
}

impl Reconciler for CrrController {
    fn watches(&self) -> Vec<Watch> {
        let crrs = self.crrs.clone();
        let for_pods = self.crrs.clone();
        vec![
            // A request wakes itself and its siblings on the same pod.
            Watch::new(&self.crrs, KeyMapping::Custom, move |change| {
                let mut keys = Vec::new();
                for crr in [change.old.as_deref(), change.new.as_deref()].into_iter().flatten() {
                    let namespace = crr.namespace().unwrap_or_default();
                    keys.push(ObjectKey::of(crr));
                    keys.extend(
                        requests_of(&crrs, &namespace, &crr.spec.pod_name)
                            .iter()
                            .map(|c| ObjectKey::of(c.as_ref())),
                    );
                }
                keys.sort();
                keys.dedup();
                keys
            }),
            Watch::new(&self.pods, KeyMapping::Custom, move |change| {
                let Some(pod) = change.new.as_deref().or(change.old.as_deref()) else {
                    return Vec::new();
                };
                let namespace = pod.metadata.namespace.clone().unwrap_or_default();
                let name = pod.metadata.name.clone().unwrap_or_default();
                requests_of(&for_pods, &namespace, &name)
                    .iter()
                    .map(|c| ObjectKey::of(c.as_ref()))
                    .collect()
            }),
        ]
    }

    fn keys(&self) -> Vec<ObjectKey> {
        self.crrs.all().iter().map(|c| ObjectKey::of(c.as_ref())).collect()
    }

    fn reconcile<'a>(
        &'a self,
        key: &'a ObjectKey,
    ) -> BoxFuture<'a, Result<Option<Duration>, ReconcileError>> {
        Box::pin(self.reconcile_request(key))
    }
}

/// The controller's registration.
pub fn registration() -> Registration {
    Registration { info: CrrController::INFO, build: CrrController::build }
}
