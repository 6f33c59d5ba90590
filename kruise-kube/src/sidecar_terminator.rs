//! The Job sidecar terminator (`sidecarterminator-controller`, gate `SidecarTerminator`), over
//! kruise-core's [`kruise_core::sidecar_terminator`].
//!
//! Keys are pods. A pod change wakes the pod when its cached spec text names a terminator env,
//! it is not being deleted and its phase is neither `Pending` nor unset; the reconcile decodes
//! it and lets the planner decide. The pod's node (from the node cache) says whether it is a
//! virtual kubelet, and the request cache whether the pod's request exists already.

use std::sync::Arc;
use std::time::Duration;

use futures::future::BoxFuture;
use k8s_openapi::api::core::v1::Node;
use kruise_api::apps::v1beta1::ContainerRecreateRequest;
use kruise_core::sidecar_terminator::{Context, VIRTUAL_KUBELET_LABEL, plan, request_name};

use crate::applier::PlanOwner;
use crate::cache::{Cache, ObjectKey};
use crate::cached_pod::CachedPod;
use crate::controller::{
    ControllerContext, ControllerInfo, KeyMapping, ReconcileError, Reconciler, Registration, Watch,
};

/// Upstream's controller name.
pub const CONTROLLER_NAME: &str = "sidecarterminator-controller";

/// The sidecar terminator.
pub struct SidecarTerminatorController {
    context: ControllerContext,
    pods: Cache<CachedPod>,
    nodes: Cache<Node>,
    requests: Cache<ContainerRecreateRequest>,
}

/// A cheap first look: the pod names a terminator env and may be acted on.
fn wanted(pod: &CachedPod) -> bool {
    let phase = pod.status.as_ref().and_then(|s| s.phase.as_deref()).unwrap_or("Pending");
    pod.metadata.deletion_timestamp.is_none()
        && phase != "Pending"
        && pod.spec_mentions("KRUISE_TERMINATE_SIDECAR_WHEN_JOB_EXIT")
}

impl SidecarTerminatorController {
    const INFO: ControllerInfo =
        ControllerInfo::new(CONTROLLER_NAME, "sidecarterminator-workers", None)
            .with_gates(&["SidecarTerminator"]);

    fn build(context: ControllerContext) -> Arc<dyn Reconciler> {
        Arc::new(Self {
            pods: context.caches.get(),
            nodes: context.caches.get(),
            requests: context.caches.get(),
            context,
        })
    }

    async fn reconcile_pod(&self, key: &ObjectKey) -> Result<Option<Duration>, ReconcileError> {
        let Some(cached) = self.pods.get(key) else {
            return Ok(None);
        };
        if !wanted(&cached) {
            return Ok(None);
        }
        let pod = cached.to_pod()?;
        let node = self.nodes.get(&ObjectKey::new("", cached.node_name().as_str()));
        let (label, value) = VIRTUAL_KUBELET_LABEL;
        let virtual_kubelet = node
            .as_ref()
            .and_then(|n| n.metadata.labels.as_ref())
            .is_some_and(|l| l.get(label).map(String::as_str) == Some(value));
        let uid = pod.metadata.uid.clone().unwrap_or_default();
        let request_exists = self
            .requests
            .get(&ObjectKey::new(key.namespace.as_str(), request_name(&uid).as_str()))
            .is_some();
        let now = jiff::Timestamp::now();
        let plan = plan(&pod, Context { virtual_kubelet, request_exists }, now);
        let owner = PlanOwner::of(&pod, serde_json::Value::Null);
        self.context.applier.apply(&owner, &plan, None, now).await?;
        Ok(None)
    }
}

impl Reconciler for SidecarTerminatorController {
    fn watches(&self) -> Vec<Watch> {
        let pods = self.pods.clone();
        vec![
            Watch::own_where(&self.pods, wanted),
            // A request that goes (or comes) wakes its pod, so a request deleted by hand is
            // made again while a sidecar still runs.
            Watch::new(&self.requests, KeyMapping::Custom, move |change| {
                let Some(request) = change.new.as_deref().or(change.old.as_deref()) else {
                    return Vec::new();
                };
                let namespace = request.metadata.namespace.clone().unwrap_or_default();
                let key = ObjectKey::new(namespace.as_str(), request.spec.pod_name.as_str());
                pods.get(&key).filter(|p| wanted(p)).map(|_| key).into_iter().collect()
            }),
        ]
    }

    fn keys(&self) -> Vec<ObjectKey> {
        crate::controller::keys_where(&self.pods, wanted)
    }

    fn reconcile<'a>(
        &'a self,
        key: &'a ObjectKey,
    ) -> BoxFuture<'a, Result<Option<Duration>, ReconcileError>> {
        Box::pin(self.reconcile_pod(key))
    }
}

/// The controller's registration.
pub fn registration() -> Registration {
    Registration {
        info: SidecarTerminatorController::INFO,
        build: SidecarTerminatorController::build,
    }
}
