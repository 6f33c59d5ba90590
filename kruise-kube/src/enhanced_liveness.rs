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
//!   `--enhanced-liveness-restarts-per-minute` cluster-wide. Workers planning at once count each
//!   other's requests before the cache shows them ([`RestartLedger`]), so the limit holds
//!   exactly.

use std::collections::HashMap;
use std::sync::Mutex;

use futures::future::BoxFuture;
use k8s_openapi::api::core::v1::Pod;
use kruise_api::apps::v1alpha1::NodePodProbe;
use kruise_api::apps::v1beta1::ContainerRecreateRequest;
use kruise_api::well_known::annotations::USING_ENHANCED_LIVENESS;
use kruise_core::admission::pod_scope::PodScopeTerm;
use kruise_core::enhanced_liveness::{RESTART_LABEL, RestartPlan, RestartSnapshot, plan_restart};
use kruise_core::plan::{Action, Event, EventType, Plan};
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
    ledger: RestartLedger,
}

/// How long a restart request counts against the per-minute limit.
const WINDOW: jiff::SignedDuration = jiff::SignedDuration::from_secs(60);

/// The restart requests this controller planned within the last minute, by key.
///
/// The cache shows a request only once its create has come back through the watch, so two
/// workers planning at once would both read the same count and both create: the limit would be
/// passed by as many workers as run. Planning under this ledger's lock, with the requests it
/// recorded counted alongside the cache's, makes the count and the reservation one step.
#[derive(Debug, Default)]
pub struct RestartLedger {
    planned: Mutex<HashMap<ObjectKey, jiff::Timestamp>>,
}

impl RestartLedger {
    /// Plans with the number of recent restarts (the keys of `seen`, the requests the cache
    /// holds that were created within the last minute, together with the ones this ledger
    /// recorded within it, each counted once), and records the request the plan creates.
    pub fn plan_within(
        &self,
        seen: &[ObjectKey],
        now: jiff::Timestamp,
        plan: impl FnOnce(usize) -> RestartPlan,
    ) -> RestartPlan {
        // The map is left consistent by every step under the lock; a poisoned lock only means
        // another worker panicked, and its entries are still right.
        let mut planned = self.planned.lock().unwrap_or_else(|p| p.into_inner());
        planned.retain(|_, at| *at > now - WINDOW);
        let unseen = planned.keys().filter(|k| !seen.contains(k)).count();
        let decision = plan(seen.len() + unseen);
        if let Some(key) = created(&decision.plan) {
            planned.entry(key).or_insert(now);
        }
        decision
    }

    /// Forgets a request that was planned but is not going to be made (its budget refused it).
    pub fn forget(&self, key: &ObjectKey) {
        self.planned.lock().unwrap_or_else(|p| p.into_inner()).remove(key);
    }
}

/// The key of the restart request a plan creates.
fn created(plan: &Plan<()>) -> Option<ObjectKey> {
    plan.actions.iter().find_map(|action| match action {
        Action::CreateObject { target, .. } => {
            Some(ObjectKey::new(target.namespace.clone().unwrap_or_default(), target.name.as_str()))
        }
        _ => None,
    })
}

/// A running pod that asks for the enhanced liveness probe.
fn wanted(pod: &CachedPod) -> bool {
    let phase = pod.phase();
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
            ledger: RestartLedger::default(),
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
            let minute_ago = now - WINDOW;
            let seen: Vec<ObjectKey> = self
                .requests
                .all()
                .iter()
                .filter(|r| is_restart(r))
                .filter(|r| {
                    r.metadata.creation_timestamp.as_ref().is_some_and(|t| t.0 > minute_ago)
                })
                .map(|r| ObjectKey::of(r.as_ref()))
                .collect();
            let decision = self.ledger.plan_within(&seen, now, |recent_restarts| {
                plan_restart(
                    &RestartSnapshot {
                        pod,
                        states,
                        requests: mine.iter().map(AsRef::as_ref).collect(),
                        recent_restarts,
                        restarts_per_minute: context.settings.enhanced_liveness_restarts_per_minute,
                    },
                    now,
                )
            });
            let Some(container) = decision.container else { return Ok(decision.plan) };
            // The pod's budget is asked, and the pod reserved in it, before the request.
            match self.budgets.check(PodRequest::Restart { pod }, false, CONTROLLER_NAME).await {
                PodVerdict::Allow => Ok(decision.plan),
                PodVerdict::Deny(_, reason) => {
                    if let Some(request) = created(&decision.plan) {
                        self.ledger.forget(&request);
                    }
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

#[cfg(test)]
mod tests {
    use super::*;
    use kruise_core::plan::{ObjectKind, Target};
    use std::sync::Arc;

    const LIMIT: usize = 10;

    fn at(seconds: i64) -> jiff::Timestamp {
        jiff::Timestamp::from_second(1_800_000_000 + seconds).expect("in range")
    }

    /// What `plan_restart` answers past and within the limit, for a request `name`.
    fn planner(name: &str) -> impl FnOnce(usize) -> RestartPlan + '_ {
        move |recent| {
            let mut plan = Plan::empty(Default::default());
            if recent < LIMIT {
                plan.actions.push(Action::CreateObject {
                    target: Target::new(ObjectKind::CONTAINER_RECREATE_REQUEST, Some("ns"), name),
                    body: Arc::new(serde_json::Value::Null),
                });
                RestartPlan { container: Some("app".into()), plan }
            } else {
                RestartPlan { container: None, plan }
            }
        }
    }

    fn seen(n: usize) -> Vec<ObjectKey> {
        (0..n).map(|i| ObjectKey::new("ns", format!("old-{i}"))).collect()
    }

    #[test]
    fn a_request_planned_but_not_yet_cached_counts() {
        let ledger = RestartLedger::default();
        let nine = seen(9);
        assert!(ledger.plan_within(&nine, at(0), planner("a")).container.is_some());
        // The cache still shows nine: the second worker must see ten.
        assert!(ledger.plan_within(&nine, at(1), planner("b")).container.is_none());
    }

    #[test]
    fn a_request_both_cached_and_recorded_counts_once() {
        let ledger = RestartLedger::default();
        assert!(ledger.plan_within(&seen(8), at(0), planner("a")).container.is_some());
        let mut cached = seen(8);
        cached.push(ObjectKey::new("ns", "a"));
        assert!(ledger.plan_within(&cached, at(1), planner("b")).container.is_some());
        cached.push(ObjectKey::new("ns", "b"));
        assert!(ledger.plan_within(&cached, at(2), planner("c")).container.is_none());
    }

    #[test]
    fn a_refused_request_frees_its_place_and_an_old_one_expires() {
        let ledger = RestartLedger::default();
        assert!(ledger.plan_within(&seen(9), at(0), planner("a")).container.is_some());
        ledger.forget(&ObjectKey::new("ns", "a"));
        assert!(ledger.plan_within(&seen(9), at(1), planner("b")).container.is_some());
        assert!(ledger.plan_within(&seen(9), at(2), planner("c")).container.is_none());
        // A minute after "b" was planned, it no longer counts.
        assert!(ledger.plan_within(&seen(9), at(61), planner("c")).container.is_some());
    }

    #[test]
    fn workers_planning_at_once_never_pass_the_limit() {
        let ledger = Arc::new(RestartLedger::default());
        let names: Vec<String> = (0..64).map(|i| format!("r-{i}")).collect();
        let made: usize = std::thread::scope(|scope| {
            let workers: Vec<_> = names
                .chunks(8)
                .map(|chunk| {
                    let ledger = ledger.clone();
                    scope.spawn(move || {
                        chunk
                            .iter()
                            .filter(|name| {
                                ledger.plan_within(&[], at(0), planner(name)).container.is_some()
                            })
                            .count()
                    })
                })
                .collect();
            workers.into_iter().map(|w| w.join().expect("no panic")).sum()
        });
        assert_eq!(made, LIMIT);
    }
}
