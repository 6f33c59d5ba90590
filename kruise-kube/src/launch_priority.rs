//! Container launch priority (`container-launch-priority-controller` and the pod webhook's
//! step), over kruise-core's [`kruise_core::launch_priority`].
//!
//! - The controller: keys are pods with a barrier env, not yet marked completed and not being
//!   deleted, decided from the cached metadata and a substring search of the cached spec text.
//!   For each, it reads the pod's barrier ConfigMap from the server (no ConfigMap cache: the
//!   manager would otherwise hold every ConfigMap of the cluster) and applies the plan.
//! - The webhook step: [`LaunchPriorityWebhook`]. Under `--pod-webhook-scope=selected` it
//!   asks for the pods that ask for a priority, by a CEL match condition on the annotation and
//!   the env (labels cannot say it), so that other pods never reach the webhook for it.

use futures::future::BoxFuture;
use k8s_openapi::api::core::v1::{ConfigMap, Pod};
use kruise_api::well_known::annotations::CONTAINER_LAUNCH_PRIORITY_COMPLETED;
use kruise_core::admission::pod_scope::PodScopeTerm;
use kruise_core::launch_priority::{BARRIER_ENV, barrier_name, plan};
use kruise_core::plan::Plan;

use crate::admission::pod_feature::{PodStepBox, StatelessPodFeature};
use crate::cache::ObjectKey;
use crate::cached_pod::CachedPod;
use crate::controller::{ControllerContext, ControllerInfo, ReconcileError, Registration};
use crate::pod_controller::PodPlanner;

/// Upstream's controller name.
pub const CONTROLLER_NAME: &str = "container-launch-priority-controller";

/// The CEL match condition of the webhook entry for launch priority: the pods that ask for it.
pub const MATCH_CONDITION: &str = "(has(object.metadata.annotations) && \
     'apps.kruise.io/container-launch-priority' in object.metadata.annotations && \
     object.metadata.annotations['apps.kruise.io/container-launch-priority'] == 'Ordered') || \
     object.spec.containers.exists(c, has(c.env) && \
     c.env.exists(e, e.name == 'KRUISE_CONTAINER_PRIORITY'))";

/// The container-launch-priority controller.
pub struct LaunchPriority;

/// Whether the cached pod may need a barrier key or the completed mark.
fn wanted(pod: &CachedPod) -> bool {
    let completed = pod
        .metadata
        .annotations
        .as_ref()
        .and_then(|a| a.get(CONTAINER_LAUNCH_PRIORITY_COMPLETED))
        .is_some_and(|v| v == "true");
    pod.metadata.deletion_timestamp.is_none() && !completed && pod.spec_mentions(BARRIER_ENV)
}

impl PodPlanner for LaunchPriority {
    const INFO: ControllerInfo =
        ControllerInfo::new(CONTROLLER_NAME, "containerlaunchpriority-workers", None);

    fn new(_context: &ControllerContext) -> Self {
        LaunchPriority
    }

    fn wanted(pod: &CachedPod) -> bool {
        wanted(pod)
    }

    fn plan<'a>(
        &'a self,
        context: &'a ControllerContext,
        key: &'a ObjectKey,
        pod: &'a Pod,
        _now: jiff::Timestamp,
    ) -> BoxFuture<'a, Result<Plan<()>, ReconcileError>> {
        Box::pin(async move {
            if !kruise_core::launch_priority::has_barrier(pod) {
                return Ok(Plan::empty(Default::default()));
            }
            let name = barrier_name(&key.name);
            let barrier =
                context.applier.get_opt::<ConfigMap>(&key.namespace, &name).await.map_err(
                    |source| ReconcileError::Write {
                        action: "get configmap",
                        target: name,
                        source,
                    },
                )?;
            Ok(plan(pod, barrier.as_ref()))
        })
    }
}

/// The controller's registration.
pub fn registration() -> Registration {
    crate::pod_controller::registration::<LaunchPriority>()
}

/// Launch priority as a pod feature: the step of the pod mutating webhook
/// ([`kruise_core::launch_priority::LaunchPriorityStep`]), for the pods [`MATCH_CONDITION`]
/// holds for.
pub fn launch_priority_feature() -> StatelessPodFeature {
    StatelessPodFeature {
        name: "ContainerLaunchPriority",
        step: Box::new(|_| {
            let step =
                kruise_core::launch_priority::LaunchPriorityStep { name_suffix: name_suffix() };
            Some(Box::new(step) as PodStepBox)
        }),
        scope: vec![
            PodScopeTerm::everything().with_condition("container-launch-priority", MATCH_CONDITION),
        ],
    }
}

/// Five characters of the API server's name generator (its alphabet has no vowels, so no
/// words; no `0`, `1` or `3`, which read as letters).
fn name_suffix() -> String {
    use rand::Rng as _;
    const ALPHABET: &[u8] = b"bcdfghjklmnpqrstvwxz2456789";
    let mut rng = rand::rng();
    (0..5).map(|_| char::from(ALPHABET[rng.random_range(0..ALPHABET.len())])).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn suffixes_use_the_api_servers_alphabet() {
        let a = name_suffix();
        assert_eq!(a.len(), 5);
        assert!(a.bytes().all(|b| b"bcdfghjklmnpqrstvwxz2456789".contains(&b)), "{a}");
    }

    #[test]
    fn only_unfinished_pods_with_a_barrier_are_wanted() {
        let cached = |pod: serde_json::Value| {
            CachedPod::from_pod(serde_json::from_value(pod).expect("a pod"))
        };
        let held = serde_json::json!({
            "metadata": {"name": "p", "namespace": "ns"},
            "spec": {"containers": [{"name": "a", "env": [{"name": "KRUISE_CONTAINER_BARRIER",
                "valueFrom": {"configMapKeyRef": {"name": "p-barrier", "key": "p_0"}}}]}]},
        });
        assert!(wanted(&cached(held.clone())));
        let mut done = held.clone();
        done["metadata"]["annotations"] =
            serde_json::json!({"apps.kruise.io/container-launch-priority-completed": "true"});
        assert!(!wanted(&cached(done)));
        let plain =
            serde_json::json!({"metadata": {"name": "p"}, "spec": {"containers": [{"name": "a"}]}});
        assert!(!wanted(&cached(plain)));
    }
}
