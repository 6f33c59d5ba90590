//! The enhanced liveness probe (gate `EnhancedLivenessProbe`), over kruise-core's
//! [`kruise_core::enhanced_liveness`]:
//!
//! - the pod webhook step: a Kruise-owned pod asking for it has its liveness probes moved into
//!   `apps.kruise.io/container-probe-context`; under `--pod-webhook-scope=selected` it asks for
//!   the pods with the annotation, by a CEL match condition;
//! - the saved probes are listed in the node's NodePodProbe by the NodePodProbe controller
//!   (`kruise_core::podprobe`), and kruise-daemon runs them;
//! - the restarter (`enhancedlivenessprobe-controller`, keyed by pod): a container whose probe
//!   failed is restarted by a ContainerRecreateRequest once the pod's PodUnavailableBudget
//!   allows it (the pod is reserved in the budget as an in-place update is) and within
//!   `--enhanced-liveness-restarts-per-minute` cluster-wide.

use futures::future::BoxFuture;
use k8s_openapi::api::core::v1::Pod;
use kruise_api::apps::v1alpha1::NodePodProbe;
use kruise_api::apps::v1beta1::ContainerRecreateRequest;
use kruise_api::well_known::annotations::USING_ENHANCED_LIVENESS;
use kruise_core::admission::pod_scope::PodScopeTerm;
use kruise_core::enhanced_liveness::{RESTART_LABEL, RestartSnapshot, plan_restart};
use kruise_core::plan::{Event, EventType, Plan};
use kruise_core::pub_budget::PodRequest;

use crate::admission::pod_feature::{PodStepBox, PodVerdict, StatelessPodFeature};
use crate::cache::{Cache, ObjectKey};
use crate::cached_pod::CachedPod;
use crate::controller::{
    ControllerContext, ControllerInfo, KeyMapping, ReconcileError, Registration, Watch,
};
use crate::pod_controller::PodPlanner;

/// The CEL match condition of its webhook entry: the pods that ask for it.
pub const MATCH_CONDITION: &str = "has(object.metadata.annotations) && \
     'apps.kruise.io/using-enhanced-liveness' in object.metadata.annotations && \
     object.metadata.annotations['apps.kruise.io/using-enhanced-liveness'] == 'true'";

/// The feature.
pub fn enhanced_liveness_feature() -> StatelessPodFeature {
    StatelessPodFeature {
        name: "EnhancedLivenessProbe",
        step: Box::new(|pod| {
            kruise_core::enhanced_liveness::asks(pod).then(|| {
                Box::new(kruise_core::enhanced_liveness::EnhancedLivenessStep) as PodStepBox
            })
        }),
        scope: vec![
            PodScopeTerm::everything().with_condition("enhanced-liveness", MATCH_CONDITION),
        ],
    }
}

/// Upstream's proposed controller name.
pub const CONTROLLER_NAME: &str = "enhancedlivenessprobe-controller";

/// The restarter.
pub struct LivenessRestarter {
    probes: Cache<NodePodProbe>,
    requests: Cache<ContainerRecreateRequest>,
    budgets: crate::pub_budget::PubWebhook,
}

/// A running pod that asks for the enhanced liveness probe.
fn wanted(pod: &CachedPod) -> bool {
    let phase = pod.status.as_ref().and_then(|s| s.phase.as_deref());
    pod.metadata.deletion_timestamp.is_none()
        && phase == Some("Running")
        && pod
            .metadata
            .annotations
            .as_ref()
            .and_then(|a| a.get(USING_ENHANCED_LIVENESS))
            .is_some_and(|v| v == "true")
}

fn is_restart(request: &ContainerRecreateRequest) -> bool {
    request.metadata.labels.as_ref().is_some_and(|l| l.contains_key(RESTART_LABEL))
}

/// How soon a pod whose budget refused a restart is looked at again.
const BUDGET_RETRY: jiff::SignedDuration = jiff::SignedDuration::from_secs(5);

impl PodPlanner for LivenessRestarter {
    const INFO: ControllerInfo =
        ControllerInfo::new(CONTROLLER_NAME, "enhancedlivenessprobe-workers", None)
            .with_gates(&["EnhancedLivenessProbe"]);

    fn new(context: &ControllerContext) -> Self {
        let caches = &context.caches;
        Self {
            probes: caches.get(),
            requests: caches.get(),
            budgets: crate::pub_budget::PubWebhook {
                budgets: caches.get(),
                pods: caches.get(),
                client: context.applier.client().clone(),
                state: caches.shared(),
                gates: crate::pub_budget::gates_from(&context.settings.gates),
                metrics: None,
                events: None,
            },
        }
    }

    fn wanted(pod: &CachedPod) -> bool {
        wanted(pod)
    }

    /// A pod wakes when its NodePodProbe entry's results change, and when one of its restart
    /// requests changes.
    fn watches(&self, pods: &Cache<CachedPod>) -> Vec<Watch> {
        let (for_probes, for_requests) = (pods.clone(), pods.clone());
        vec![
            Watch::new(&self.probes, KeyMapping::Custom, move |change| {
                let entries = |p: Option<&NodePodProbe>| {
                    p.and_then(|p| p.status.as_ref())
                        .map(|s| s.pod_probe_statuses.clone())
                        .unwrap_or_default()
                };
                let (old, new) = (entries(change.old.as_deref()), entries(change.new.as_deref()));
                new.iter()
                    .filter(|entry| !old.contains(entry))
                    .map(|entry| ObjectKey::new(entry.namespace.as_str(), entry.name.as_str()))
                    .filter(|key| for_probes.get(key).is_some_and(|p| wanted(&p)))
                    .collect()
            }),
            Watch::new(&self.requests, KeyMapping::Custom, move |change| {
                let Some(request) = change.new.as_deref().or(change.old.as_deref()) else {
                    return Vec::new();
                };
                if !is_restart(request) {
                    return Vec::new();
                }
                let namespace = request.metadata.namespace.clone().unwrap_or_default();
                let key = ObjectKey::new(namespace.as_str(), request.spec.pod_name.as_str());
                for_requests.get(&key).filter(|p| wanted(p)).map(|_| key).into_iter().collect()
            }),
        ]
    }

    fn plan<'a>(
        &'a self,
        context: &'a ControllerContext,
        key: &'a ObjectKey,
        pod: &'a Pod,
        now: jiff::Timestamp,
    ) -> BoxFuture<'a, Result<Plan<()>, ReconcileError>> {
        Box::pin(async move {
            let node = pod.spec.as_ref().and_then(|s| s.node_name.clone()).unwrap_or_default();
            let probe = self.probes.get(&ObjectKey::new("", node.as_str()));
            let uid = pod.metadata.uid.as_deref().unwrap_or_default();
            let states = probe
                .as_ref()
                .and_then(|p| p.status.as_ref())
                .and_then(|s| s.pod_probe_statuses.iter().find(|e| e.uid == uid))
                .map(|e| e.probe_states.as_slice())
                .unwrap_or_default();
            let mine = self.requests.select_in_namespace(&key.namespace, |r| {
                is_restart(r)
                    && r.spec.pod_name == key.name
                    && r.metadata.owner_references.iter().flatten().any(|o| o.uid == uid)
            });
            let minute_ago = now - jiff::SignedDuration::from_secs(60);
            let recent = self
                .requests
                .all()
                .iter()
                .filter(|r| is_restart(r))
                .filter(|r| {
                    r.metadata.creation_timestamp.as_ref().is_some_and(|t| t.0 > minute_ago)
                })
                .count();
            let decision = plan_restart(
                &RestartSnapshot {
                    pod,
                    states,
                    requests: mine.iter().map(AsRef::as_ref).collect(),
                    recent_restarts: recent,
                    restarts_per_minute: context.settings.enhanced_liveness_restarts_per_minute,
                },
                now,
            );
            let Some(container) = decision.container else { return Ok(decision.plan) };
            // The pod's budget is asked, and the pod reserved in it, before the request.
            match self.budgets.check(PodRequest::Restart { pod }, false, CONTROLLER_NAME).await {
                PodVerdict::Allow => Ok(decision.plan),
                PodVerdict::Deny(_, reason) => {
                    let mut deferred = Plan::empty(Default::default());
                    deferred.events.push(Event {
                        type_: EventType::Warning,
                        reason: "EnhancedLivenessRestartDeferred".into(),
                        message: format!(
                            "container {container}'s liveness probe failed; its restart waits: {reason}"
                        ),
                        after_action: None,
                    });
                    deferred.requeue_after = Some(BUDGET_RETRY);
                    Ok(deferred)
                }
            }
        })
    }
}

/// The restarter's registration.
pub fn registration() -> Registration {
    crate::pod_controller::registration::<LivenessRestarter>()
}
