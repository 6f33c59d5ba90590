//! The pod-readiness controller (`pod-readiness-controller`), over kruise-core's
//! [`kruise_core::readiness`]: every pod with the `KruisePodReady` readiness gate and no
//! condition for it gets the condition `True`, so that the gate lets the pod become ready. From
//! then on only lifecycle hooks and ContainerRecreateRequests change it.
//!
//! Keys are pods. A pod change wakes the pod only when it needs the condition, which is
//! decided from the cached status and the spec text without decoding the spec: a cluster's
//! pod traffic costs a lookup per change.

use futures::future::BoxFuture;
use k8s_openapi::api::core::v1::Pod;
use kruise_api::well_known::readiness_gates::KRUISE_POD_READY;
use kruise_core::admission::pod_scope::PodScopeTerm;
use kruise_core::plan::Plan;

use crate::admission::pod_feature::{PodStepBox, StatelessPodFeature};
use crate::cache::ObjectKey;
use crate::cached_pod::CachedPod;
use crate::controller::{ControllerContext, ControllerInfo, ReconcileError, Registration};
use crate::pod_controller::PodPlanner;

/// Upstream's controller name.
pub const CONTROLLER_NAME: &str = "pod-readiness-controller";

/// The pod-readiness controller.
pub struct PodReadiness;

/// Whether the cached pod has the gate, no condition for it, is bound to a node and is not
/// being deleted (as [`kruise_core::readiness::needs_condition`] decides for a whole pod).
fn needs_condition(pod: &CachedPod) -> bool {
    let has_condition = || {
        pod.status()
            .and_then(|s| s.conditions)
            .is_some_and(|c| c.iter().any(|c| c.type_ == KRUISE_POD_READY))
    };
    pod.metadata.deletion_timestamp.is_none()
        && pod.has_readiness_gate(KRUISE_POD_READY)
        && !pod.node_name().is_empty()
        && !has_condition()
}

impl PodPlanner for PodReadiness {
    const INFO: ControllerInfo = ControllerInfo::new(CONTROLLER_NAME, "podreadiness-workers", None);

    fn new(_context: &ControllerContext) -> Self {
        PodReadiness
    }

    fn wanted(pod: &CachedPod) -> bool {
        needs_condition(pod)
    }

    fn plan<'a>(
        &'a self,
        _context: &'a ControllerContext,
        _key: &'a ObjectKey,
        pod: &'a Pod,
        now: jiff::Timestamp,
    ) -> BoxFuture<'a, Result<Plan<()>, ReconcileError>> {
        Box::pin(std::future::ready(Ok(kruise_core::readiness::plan(pod, now))))
    }
}

/// The controller's registration.
pub fn registration() -> Registration {
    crate::pod_controller::registration::<PodReadiness>()
}

/// The readiness gate as a pod feature: the first step of the pod mutating webhook
/// ([`kruise_core::readiness::ReadinessGateStep`]); `all_pods` is `KruisePodReadinessGate`.
///
/// Under `--pod-webhook-scope=selected`, with `all_pods` off, it asks for no pods of its own:
/// the pods it is for, those a Kruise workload controls, are created by this manager's
/// controllers with the gate already (see [`kruise_core::readiness`]); it acts on the others
/// that reach the webhook. With `all_pods` it asks for every pod.
pub fn readiness_gate_feature(all_pods: bool) -> StatelessPodFeature {
    StatelessPodFeature {
        name: "ReadinessGate",
        step: Box::new(move |pod| {
            kruise_core::readiness::wants_gate(pod, all_pods).then(|| {
                Box::new(kruise_core::readiness::ReadinessGateStep { all_pods }) as PodStepBox
            })
        }),
        scope: if all_pods { vec![PodScopeTerm::everything()] } else { Vec::new() },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cached(pod: serde_json::Value) -> CachedPod {
        CachedPod::from_pod(serde_json::from_value(pod).expect("a pod"))
    }

    #[test]
    fn only_a_gated_pod_without_the_condition_needs_it() {
        let mut gated = serde_json::json!({
            "metadata": {"name": "p", "namespace": "ns"},
            "spec": {"containers": [], "readinessGates": [{"conditionType": "KruisePodReady"}]},
        });
        assert!(!needs_condition(&cached(gated.clone())), "not bound yet");
        gated["spec"]["nodeName"] = "node-1".into();
        assert!(needs_condition(&cached(gated.clone())));

        let mut opened = gated.clone();
        opened["status"] =
            serde_json::json!({"conditions": [{"type": "KruisePodReady", "status": "False"}]});
        assert!(!needs_condition(&cached(opened)), "a hold's False is left alone");

        let mut leaving = gated.clone();
        leaving["metadata"]["deletionTimestamp"] = "2026-12-06T00:00:00Z".into();
        assert!(!needs_condition(&cached(leaving)));

        // The name elsewhere in the spec (an env value) is not a gate.
        let named = serde_json::json!({
            "metadata": {"name": "p", "namespace": "ns"},
            "spec": {"containers": [{"name": "c", "env": [{"name": "X", "value": "KruisePodReady"}]}],
                     "readinessGates": [{"conditionType": "InPlaceUpdateReady"}]},
        });
        assert!(!needs_condition(&cached(named)));
    }
}
