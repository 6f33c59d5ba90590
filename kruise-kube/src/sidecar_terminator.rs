//! The Job sidecar terminator (`sidecarterminator-controller`, gate `SidecarTerminator`), over
//! kruise-core's [`kruise_core::sidecar_terminator`].
//!
//! Keys are pods. A pod change wakes the pod when its cached spec text names a terminator env,
//! it is not being deleted and its phase is neither `Pending` nor unset; the reconcile decodes
//! it and lets the planner decide. The pod's node (from the node cache) says whether it is a
//! virtual kubelet, and the request cache whether the pod's request exists already.

use futures::future::BoxFuture;
use k8s_openapi::api::core::v1::{Node, Pod};
use kruise_api::apps::v1beta1::ContainerRecreateRequest;
use kruise_core::plan::Plan;
use kruise_core::sidecar_terminator::{Context, VIRTUAL_KUBELET_LABEL, plan, request_name};

use crate::cache::{Cache, ObjectKey};
use crate::cached_pod::CachedPod;
use crate::controller::{
    ControllerContext, ControllerInfo, KeyMapping, ReconcileError, Registration, Watch,
};
use crate::pod_controller::PodPlanner;

/// Upstream's controller name.
pub const CONTROLLER_NAME: &str = "sidecarterminator-controller";

/// The sidecar terminator.
pub struct SidecarTerminator {
    nodes: Cache<Node>,
    requests: Cache<ContainerRecreateRequest>,
}

/// A cheap first look: the pod names a terminator env and may be acted on.
fn wanted(pod: &CachedPod) -> bool {
    let phase = pod.phase().unwrap_or("Pending");
    pod.metadata.deletion_timestamp.is_none()
        && phase != "Pending"
        && pod.spec_mentions(
            kruise_api::well_known::env::container::KRUISE_TERMINATE_SIDECAR_WHEN_JOB_EXIT,
        )
}

impl PodPlanner for SidecarTerminator {
    const INFO: ControllerInfo =
        ControllerInfo::new(CONTROLLER_NAME, "sidecarterminator-workers", None)
            .with_gates(&["SidecarTerminator"]);

    fn new(context: &ControllerContext) -> Self {
        Self { nodes: context.caches.get(), requests: context.caches.get() }
    }

    fn wanted(pod: &CachedPod) -> bool {
        wanted(pod)
    }

    /// A request that goes (or comes) wakes its pod, so a request deleted by hand is made
    /// again while a sidecar still runs.
    fn watches(&self, pods: &Cache<CachedPod>) -> Vec<Watch> {
        let pods = pods.clone();
        vec![Watch::new(&self.requests, KeyMapping::Custom, move |change| {
            let Some(request) = change.new.as_deref().or(change.old.as_deref()) else {
                return Vec::new();
            };
            let namespace = request.metadata.namespace.clone().unwrap_or_default();
            let key = ObjectKey::new(namespace.as_str(), request.spec.pod_name.as_str());
            pods.get(&key).filter(|p| wanted(p)).map(|_| key).into_iter().collect()
        })]
    }

    fn plan<'a>(
        &'a self,
        _context: &'a ControllerContext,
        key: &'a ObjectKey,
        pod: &'a Pod,
        now: jiff::Timestamp,
    ) -> BoxFuture<'a, Result<Plan<()>, ReconcileError>> {
        let node_name = pod.spec.as_ref().and_then(|s| s.node_name.clone()).unwrap_or_default();
        let node = self.nodes.get(&ObjectKey::new("", node_name.as_str()));
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
        let planned = plan(pod, Context { virtual_kubelet, request_exists }, now);
        Box::pin(std::future::ready(Ok(planned)))
    }
}

/// The controller's registration.
pub fn registration() -> Registration {
    crate::pod_controller::registration::<SidecarTerminator>()
}
