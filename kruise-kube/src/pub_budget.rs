//! PodUnavailableBudget in the manager: the controller that keeps each budget's status and
//! marks the pods it covers, and the pod webhook's check, both over kruise-core's pure
//! decisions ([`kruise_core::pub_budget`]).
//!
//! - **The controller** (`podunavailablebudget-controller`) resolves a budget's `targetRef`
//!   through the target's scale subresource (its `status.selector` and `spec.replicas`), so
//!   any workload with one works, computes the status, and stamps the pods it covers with
//!   `pub.kruise.io/related-pub` and the [`COVERED_LABEL`] label (and takes the label off pods
//!   it no longer covers).
//! - **The pod webhook** (`/validate-pod`: pod DELETE and UPDATE, `pods/eviction` CREATE)
//!   decides with the budget named in the pod's `pub.kruise.io/related-pub`, and reserves the
//!   pod in the budget's status with an optimistic write (the budget's resourceVersion) before
//!   it answers. Reservations for one budget are made one at a time in this process, and a
//!   conflict with another replica's write reads the budget again and decides again, so a
//!   budget is never overdrawn. A refused eviction answers 429, as a PodDisruptionBudget's
//!   does, so `kubectl drain` waits and retries; a refused delete or update answers 400 with
//!   upstream's message.
//! - **Blast radius:** the validating webhook's `objectSelector` selects only pods with
//!   [`COVERED_LABEL`], and it fails closed for them. Every other pod in the cluster is
//!   untouched when the manager is down.

use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures::future::BoxFuture;
use jiff::Timestamp;
use k8s_openapi::api::core::v1::Pod;
use kruise_api::policy::v1beta1::PodUnavailableBudget;
use kruise_api::well_known::annotations;
use kruise_core::pub_budget::{
    self as core, BudgetForPod, Decision, PodRequest, PubGates, TargetPods,
};
use kube::api::{Api, Patch, PatchParams};
use kube::{Client, ResourceExt as _};
use serde_json::{Value, json};

use crate::applier::PlanOwner;
use crate::cache::{Cache, ObjectKey};
use crate::cached_pod::CachedPod;
use crate::controller::{
    ControllerContext, ControllerInfo, KeyMapping, ReconcileError, Reconciler, Registration,
    ServedResource, Watch,
};

/// The label on pods a budget covers, which the pod validating webhook's `objectSelector`
/// selects. Its value is `"true"`.
pub use kruise_core::pub_budget::COVERED_LABEL;

/// What the controller resolved a budget's `targetRef` to.
#[derive(Clone, Debug)]
struct Resolved {
    target: Option<TargetPods>,
    replicas: Option<i32>,
}

/// What the controller and the webhook share: resolved targets, and per budget the last
/// status this process wrote (newer than the cache until the watch catches up) behind a lock
/// that makes one reservation at a time.
#[derive(Default)]
pub struct PubState {
    targets: Mutex<HashMap<String, Resolved>>,
    budgets: Mutex<HashMap<String, Arc<tokio::sync::Mutex<Option<PodUnavailableBudget>>>>>,
    /// Reads targets' scales.
    scales: crate::scale::ScaleReader,
}

impl std::fmt::Debug for PubState {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PubState").finish_non_exhaustive()
    }
}

impl PubState {
    fn lock_for(&self, uid: &str) -> Arc<tokio::sync::Mutex<Option<PodUnavailableBudget>>> {
        let mut budgets = self.budgets.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        budgets.entry(uid.to_owned()).or_default().clone()
    }

    fn target(&self, uid: &str) -> Option<Resolved> {
        self.targets.lock().unwrap_or_else(std::sync::PoisonError::into_inner).get(uid).cloned()
    }

    fn set_target(&self, uid: &str, resolved: Resolved) {
        self.targets
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .insert(uid.to_owned(), resolved);
    }

    /// Forgets what it keeps for budgets whose uid is not in `live`.
    fn retain(&self, live: &std::collections::BTreeSet<String>) {
        use std::sync::PoisonError;
        self.targets
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .retain(|uid, _| live.contains(uid));
        self.budgets
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .retain(|uid, _| live.contains(uid));
    }
}

/// The manager's PUB gates from its feature gates.
pub fn gates_from(gates: &crate::features::FeatureGates) -> PubGates {
    PubGates {
        delete_gate: gates.enabled("PodUnavailableBudgetDeleteGate"),
        update_gate: gates.enabled("PodUnavailableBudgetUpdateGate"),
        in_place_pod_vertical_scaling: gates.enabled("InPlacePodVerticalScaling"),
        in_place_workload_vertical_scaling: gates.enabled("InPlaceWorkloadVerticalScaling"),
    }
}

/// Resolves a budget's `targetRef` through the target's scale subresource.
async fn resolve(client: &Client, state: &PubState, budget: &PodUnavailableBudget) -> Resolved {
    let Some(target) = &budget.spec.target_reference else {
        return Resolved { target: None, replicas: None };
    };
    let unresolved = Resolved { target: Some(TargetPods::Unresolved), replicas: None };
    let namespace = budget.namespace().unwrap_or_default();
    let reader = &state.scales;
    let Ok(scale) =
        reader.scale(client, &namespace, &target.api_version, &target.kind, &target.name).await
    else {
        return unresolved;
    };
    let (selector, replicas) = (scale.selector.as_str(), scale.replicas);
    match kruise_core::admission::meta::label_selector_from_str(selector) {
        Ok(selector) if !selector.eq(&Default::default()) => {
            Resolved { target: Some(TargetPods::Selector(selector)), replicas }
        }
        _ => unresolved,
    }
}

/// The PodUnavailableBudget controller.
pub struct PubController {
    context: ControllerContext,
    budgets: Cache<PodUnavailableBudget>,
    pods: Cache<CachedPod>,
    state: Arc<PubState>,
    gates: PubGates,
}

impl PubController {
    const INFO: ControllerInfo = ControllerInfo::new(
        "podunavailablebudget-controller",
        "podunavailablebudget-workers",
        Some(ServedResource {
            group: "policy.kruise.io",
            version: "v1beta1",
            plural: "podunavailablebudgets",
        }),
    );

    fn build(context: ControllerContext) -> Arc<dyn Reconciler> {
        let gates = gates_from(&context.settings.gates);
        let state = context.caches.shared::<PubState>();
        Arc::new(Self {
            budgets: context.caches.get::<PodUnavailableBudget>(),
            pods: context.caches.get::<CachedPod>(),
            state,
            gates,
            context,
        })
    }

    async fn reconcile_budget(&self, key: &ObjectKey) -> Result<Option<Duration>, ReconcileError> {
        let Some(budget) = self.budgets.get(key) else {
            // Gone: forget what was kept for it.
            let live = self.budgets.all().iter().filter_map(|b| b.uid()).collect();
            self.state.retain(&live);
            return Ok(None);
        };
        let enabled = self.gates.delete_gate || self.gates.update_gate;
        if !enabled || budget.metadata.deletion_timestamp.is_some() {
            return Ok(None);
        }
        let uid = budget.uid().unwrap_or_default();
        let client = self.context.applier.client().clone();
        let resolved = resolve(&client, &self.state, &budget).await;
        self.state.set_target(&uid, resolved.clone());
        let namespace = key.namespace.clone();
        let pods: Vec<Pod> = self
            .pods
            .in_namespace(&namespace)
            .iter()
            .map(|p| p.to_pod())
            .collect::<Result<_, _>>()?;
        let selected: Vec<(&Pod, bool)> = pods
            .iter()
            .map(|pod| {
                let coverage = core::coverage(&budget, resolved.target.as_ref(), pod);
                (pod, matches!(coverage, Ok(core::Coverage::Covered)))
            })
            .collect();
        let covered: Vec<&Pod> = selected.iter().filter(|(_, c)| *c).map(|(p, _)| *p).collect();
        // A budget that selects by label counts the pods it selects; a target's scale says
        // how many there should be.
        let expected = resolved
            .replicas
            .or_else(|| budget.spec.target_reference.is_none().then_some(covered.len() as i32));
        let now = Timestamp::now();
        let outcome = match core::compute_status(
            &budget,
            covered.iter().copied(),
            expected,
            &self.gates,
            now,
        ) {
            Ok(outcome) => outcome,
            // An unresolved target or a budget without a count: looked at again later.
            Err(_) => return Ok(Some(Duration::from_secs(5))),
        };
        let plan = core::plan(&budget, &outcome, selected);
        let owner = PlanOwner::of(budget.as_ref(), Value::Null);
        // The webhook may have reserved a pod meanwhile: then computed again from what it wrote.
        self.context.applier.apply_or_replan(&owner, &plan, now).await
    }
}

impl Reconciler for PubController {
    fn watches(&self) -> Vec<Watch> {
        let budgets = self.budgets.clone();
        vec![
            Watch::own(&self.budgets),
            // A pod's change concerns every budget in its namespace (a namespace holds few).
            Watch::new(&self.pods, KeyMapping::Custom, move |change| {
                let Some(pod) = change.new.as_deref().or(change.old.as_deref()) else {
                    return Vec::new();
                };
                let namespace = pod.namespace().unwrap_or_default();
                budgets.in_namespace(&namespace).iter().map(|b| ObjectKey::of(b.as_ref())).collect()
            }),
        ]
    }

    fn keys(&self) -> Vec<ObjectKey> {
        self.budgets.all().iter().map(|b| ObjectKey::of(b.as_ref())).collect()
    }

    fn reconcile<'a>(
        &'a self,
        key: &'a ObjectKey,
    ) -> BoxFuture<'a, Result<Option<Duration>, ReconcileError>> {
        Box::pin(self.reconcile_budget(key))
    }
}

/// The controller's registration: it runs when either PUB gate is on.
pub fn registration() -> Registration {
    Registration { info: PubController::INFO, build: PubController::build }
}

pub use crate::admission::PodVerdict;

/// PodUnavailableBudget as a pod feature: the covering budget's annotation at pod creation
/// (and the label that sends the pod's deletions to `vpod.kb.io`), and the budget's check of
/// pod DELETE, UPDATE and eviction.
impl crate::admission::PodFeature for PubWebhook {
    fn name(&self) -> &'static str {
        "PodUnavailableBudget"
    }

    fn is_synced(&self) -> bool {
        PubWebhook::is_synced(self)
    }

    fn wait_synced(&self) -> futures::future::BoxFuture<'_, ()> {
        Box::pin(PubWebhook::wait_synced(self))
    }

    fn on_create<'a>(
        &'a self,
        pod: &'a Pod,
        _namespace: &'a str,
        _dry_run: bool,
    ) -> futures::future::BoxFuture<
        'a,
        Result<Option<crate::admission::pod_feature::PodStepBox>, String>,
    > {
        Box::pin(async move {
            let covering = self.covering(pod).await;
            let step = kruise_core::pub_budget::PubAnnotation {
                covering,
                label: Some((COVERED_LABEL.to_owned(), "true".to_owned())),
            };
            Ok(Some(Box::new(step) as crate::admission::pod_feature::PodStepBox))
        })
    }

    /// One term per budget: its selector in its namespace, or the whole namespace for a
    /// budget that names its workload (`targetRef`), whose pods only the workload knows.
    fn scope(&self) -> Vec<kruise_core::admission::pod_scope::PodScopeTerm> {
        use kruise_core::admission::pod_scope::{NamespaceScope, PodScopeTerm};
        self.budgets
            .all()
            .iter()
            .filter_map(|budget| {
                let namespace = budget.metadata.namespace.clone().unwrap_or_default();
                if budget.spec.target_reference.is_some() {
                    return Some(PodScopeTerm::namespace(&namespace));
                }
                PodScopeTerm::selecting(
                    NamespaceScope::Named(namespace),
                    budget.spec.selector.as_ref(),
                )
            })
            .collect()
    }

    fn watch_scope(&self, wake: Arc<tokio::sync::Notify>) {
        crate::admission::pod_feature::wake_on_spec_change(&self.budgets, wake);
    }

    fn validate<'a>(
        &'a self,
        review: crate::admission::PodReview<'a>,
        dry_run: bool,
        username: &'a str,
    ) -> futures::future::BoxFuture<'a, PodVerdict> {
        use crate::admission::PodReview;
        let request = match review {
            PodReview::Delete { pod } => PodRequest::Delete { pod },
            PodReview::Evict { pod } => PodRequest::Evict { pod },
            PodReview::Update { old, new } => PodRequest::Update { old, new },
        };
        Box::pin(self.check(request, dry_run, username))
    }
}

/// What the pod webhooks read.
#[derive(Clone)]
pub struct PubWebhook {
    /// Budgets, by namespace.
    pub budgets: Cache<PodUnavailableBudget>,
    /// Pods (for evictions, which name the pod only).
    pub pods: Cache<CachedPod>,
    /// For the status writes (any replica serves the webhook, so not leader-gated).
    pub client: Client,
    /// Shared with the controller.
    pub state: Arc<PubState>,
    /// The PUB gates.
    pub gates: PubGates,
    /// Where refusals are counted (`pod_unavailable_budget_total`).
    pub metrics: Option<crate::metrics::Metrics>,
    /// Records the `PubPreventPodDeletion` Warning on a refused pod.
    pub events: Option<crate::applier::EventSink>,
}

impl std::fmt::Debug for PubWebhook {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PubWebhook").field("gates", &self.gates).finish_non_exhaustive()
    }
}

/// How many times a reservation is tried against other writers.
const RESERVATION_ATTEMPTS: usize = 10;

impl PubWebhook {
    /// True once the budget cache has loaded (pod creation reads only budgets).
    pub fn is_synced(&self) -> bool {
        self.budgets.is_synced()
    }

    /// Waits until [`Self::is_synced`].
    pub async fn wait_synced(&self) {
        self.budgets.wait_synced().await;
    }

    /// The budget covering a new pod, for the mutating chain's PUB step.
    pub async fn covering(&self, pod: &Pod) -> Option<String> {
        if !self.gates.delete_gate && !self.gates.update_gate {
            return None;
        }
        let namespace = pod.namespace().unwrap_or_default();
        let budgets = self.budgets.in_namespace(&namespace);
        let mut resolved = BTreeMap::new();
        for budget in &budgets {
            let uid = budget.uid().unwrap_or_default();
            let target = match self.state.target(&uid) {
                Some(r) => r.target,
                None if budget.spec.target_reference.is_some() => {
                    let r = resolve(&self.client, &self.state, budget).await;
                    self.state.set_target(&uid, r.clone());
                    r.target
                }
                None => None,
            };
            resolved.insert(uid, target);
        }
        let candidates = budgets.iter().map(|b| {
            let uid = b.uid().unwrap_or_default();
            (b.as_ref(), resolved.get(&uid).and_then(Option::as_ref))
        });
        match core::budget_for_pod(candidates, pod) {
            Ok(BudgetForPod::Found { budget, .. }) => budget.metadata.name.clone(),
            _ => None,
        }
    }

    /// Counts a refusal and records the `PubPreventPodDeletion` Warning on the pod (in the
    /// background, through the spam filter: the answer does not wait for the Event).
    fn refused(&self, pod: &Pod, budget: &str, reason: &str, username: &str) {
        let namespace = pod.namespace().unwrap_or_else(|| "default".to_owned());
        let (kind, name) = match pod.owner_references().iter().find(|o| o.controller == Some(true))
        {
            Some(owner) => (owner.kind.clone(), owner.name.clone()),
            None => ("unknown".to_owned(), pod.name_any()),
        };
        if let Some(metrics) = &self.metrics {
            metrics.pub_refusal(&format!("{kind}_{namespace}_{name}"), username);
        }
        tracing::info!(pod = %pod.name_any(), %namespace, budget, username, "{reason}");
        if let Some(events) = &self.events {
            let regarding = k8s_openapi::api::core::v1::ObjectReference {
                api_version: Some("v1".to_owned()),
                kind: Some("Pod".to_owned()),
                name: pod.metadata.name.clone(),
                namespace: Some(namespace),
                uid: pod.metadata.uid.clone(),
                ..Default::default()
            };
            let note =
                format!("podunavailablebudget {budget} prevents this pod's disruption: {reason}");
            events.emit(&regarding, true, "PubPreventPodDeletion", "Protect", note);
        }
    }

    /// Decides a pod DELETE, eviction or UPDATE asked by `username`, reserving the pod in its
    /// budget when allowed.
    pub async fn check(
        &self,
        request: PodRequest<'_>,
        dry_run: bool,
        username: &str,
    ) -> PodVerdict {
        let pod = request.pod();
        let Some(name) = pod
            .annotations()
            .get(annotations::PUB_RELATED_PUB)
            .cloned()
            .or_else(|| pod.annotations().get(annotations::PUB_RELATED_PUB_LEGACY).cloned())
        else {
            return PodVerdict::Allow;
        };
        let namespace = pod.namespace().unwrap_or_default();
        let Some(cached) = self.budgets.get(&ObjectKey::new(namespace.clone(), name.clone()))
        else {
            return PodVerdict::Allow;
        };
        let uid = cached.uid().unwrap_or_default();
        let lock = self.state.lock_for(&uid);
        let mut last_written = lock.lock().await;
        let api: Api<PodUnavailableBudget> = Api::namespaced(self.client.clone(), &namespace);
        let mut budget = newer(cached.as_ref().clone(), last_written.as_ref());
        let evict = matches!(request, PodRequest::Evict { .. });
        for _ in 0..RESERVATION_ATTEMPTS {
            let target = match self.state.target(&uid) {
                Some(r) => r.target,
                None => {
                    let r = resolve(&self.client, &self.state, &budget).await;
                    self.state.set_target(&uid, r.clone());
                    r.target
                }
            };
            let decision = core::decide(
                &budget,
                target.as_ref(),
                request,
                dry_run,
                &self.gates,
                Timestamp::now(),
            );
            let status = match decision {
                Err(e) => return PodVerdict::Deny(500, e.to_string()),
                Ok(Decision::Deny(reason)) => {
                    let reason = reason.to_string();
                    self.refused(pod, &name, &reason, username);
                    return PodVerdict::Deny(if evict { 429 } else { 400 }, reason);
                }
                Ok(Decision::AllowWithReservation { status, .. }) => status,
                Ok(_) => return PodVerdict::Allow,
            };
            let mut patch = crate::applier::status_patch(budget.status.as_ref(), &status);
            patch["metadata"] = json!({"resourceVersion": budget.resource_version()});
            match api.patch_status(&name, &PatchParams::default(), &Patch::Merge(&patch)).await {
                Ok(written) => {
                    *last_written = Some(written);
                    return PodVerdict::Allow;
                }
                Err(kube::Error::Api(e)) if e.code == 409 => match api.get(&name).await {
                    Ok(fresh) => budget = fresh,
                    Err(e) => return PodVerdict::Deny(500, e.to_string()),
                },
                Err(kube::Error::Api(e)) if e.code == 404 => return PodVerdict::Allow,
                Err(e) => return PodVerdict::Deny(500, e.to_string()),
            }
        }
        PodVerdict::Deny(
            if evict { 429 } else { 500 },
            format!("podunavailablebudget {name}: too many concurrent updates, try again"),
        )
    }
}

/// The newer of the cached budget and the one this process last wrote (by resourceVersion).
fn newer(
    cached: PodUnavailableBudget,
    written: Option<&PodUnavailableBudget>,
) -> PodUnavailableBudget {
    let version = |b: &PodUnavailableBudget| {
        b.metadata.resource_version.as_deref().and_then(|v| v.parse::<u64>().ok()).unwrap_or(0)
    };
    match written {
        Some(w) if w.uid() == cached.uid() && version(w) > version(&cached) => w.clone(),
        _ => cached,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_newer_budget_wins() {
        let mut cached = PodUnavailableBudget::default();
        cached.metadata.uid = Some("u".into());
        cached.metadata.resource_version = Some("5".into());
        let mut written = cached.clone();
        written.metadata.resource_version = Some("7".into());
        assert_eq!(
            newer(cached.clone(), Some(&written)).metadata.resource_version.as_deref(),
            Some("7")
        );
        assert_eq!(
            newer(written.clone(), Some(&cached)).metadata.resource_version.as_deref(),
            Some("7")
        );
        assert_eq!(newer(cached.clone(), None).metadata.resource_version.as_deref(), Some("5"));
    }
}
