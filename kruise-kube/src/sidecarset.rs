//! SidecarSet injection at pod creation: the pod mutating webhook's SidecarSet step
//! ([`kruise_core::sidecarset::SidecarSetInjection`]) fed from the caches.
//!
//! The SidecarSets live in a [`SidecarSetIndex`] kept up to date by the SidecarSet cache's
//! change feed, so a pod creation looks only at the SidecarSets filed under its namespace and
//! labels, never at all of them. Namespace labels (for `namespaceSelector`) come from a
//! metadata-only Namespace cache; pinned revisions (`injectionStrategy.revision`) from the
//! ControllerRevision cache.
//!
//! The [`SidecarSetController`] keeps each SidecarSet's ControllerRevisions in the manager's
//! namespace (planned by [`kruise_core::sidecarset::revision::plan_revisions`]), writes its
//! status and upgrades the sidecars of the pods it selects in place (hot upgrade included).

use std::collections::BTreeMap;
use std::sync::{Arc, RwLock};

use k8s_openapi::api::apps::v1::ControllerRevision;
use k8s_openapi::api::core::v1::{Namespace, Pod};
use kruise_api::apps::v1beta1::SidecarSet;
use kruise_core::sidecarset::SidecarSetInjection;
use kruise_core::sidecarset::{InjectionGates, SidecarSetCandidate, SidecarSetIndex};
use kube::core::PartialObjectMeta;
use kube::{Client, ResourceExt as _};

use crate::applier::{ExpectationsFor, PlanOwner};
use crate::cache::{Cache, ObjectKey, SharedCaches, WatchEvents, Watched, cluster_watch};

/// The label upstream puts on a SidecarSet's ControllerRevisions.
const REVISION_LABEL: &str = kruise_core::sidecarset::revision::NAME_LABEL;

/// How many names a revision creation tries before giving up for this round (upstream tries
/// until one is free).
const MAX_CREATE_ATTEMPTS: usize = 8;

impl Watched for SidecarSet {
    fn watch(client: &Client, _namespace: Option<&str>) -> WatchEvents<Self> {
        cluster_watch(client)
    }
}

/// Namespaces are cached as metadata only (their labels match `namespaceSelector`).
impl Watched for PartialObjectMeta<Namespace> {
    fn watch(client: &Client, _namespace: Option<&str>) -> WatchEvents<Self> {
        cluster_watch(client)
    }
}

/// What the SidecarSet pod step reads.
#[derive(Clone)]
pub struct SidecarSetWebhook {
    index: Arc<RwLock<SidecarSetIndex>>,
    sets: Cache<SidecarSet>,
    namespaces: Cache<PartialObjectMeta<Namespace>>,
    revisions: Cache<crate::cached_revision::CachedRevision>,
    revision_namespace: Option<String>,
    gates: InjectionGates,
}

impl std::fmt::Debug for SidecarSetWebhook {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SidecarSetWebhook").field("gates", &self.gates).finish_non_exhaustive()
    }
}

/// SidecarSet injection as a pod feature: its step at pod creation.
impl crate::admission::PodFeature for SidecarSetWebhook {
    fn name(&self) -> &'static str {
        "SidecarSet"
    }

    fn is_synced(&self) -> bool {
        SidecarSetWebhook::is_synced(self)
    }

    fn wait_synced(&self) -> futures::future::BoxFuture<'_, ()> {
        Box::pin(SidecarSetWebhook::wait_synced(self))
    }

    fn on_create<'a>(
        &'a self,
        pod: &'a Pod,
        namespace: &'a str,
        _dry_run: bool,
    ) -> futures::future::BoxFuture<
        'a,
        Result<Option<crate::admission::pod_feature::PodStepBox>, String>,
    > {
        let step: crate::admission::pod_feature::PodStepBox = Box::new(self.step(pod, namespace));
        Box::pin(std::future::ready(Ok(Some(step))))
    }

    /// One term per SidecarSet: its pod selector in the namespaces its namespace selector
    /// picks.
    fn scope(&self) -> Vec<kruise_core::admission::pod_scope::PodScopeTerm> {
        use kruise_core::admission::pod_scope::{NamespaceScope, PodScopeTerm};
        self.sets
            .all()
            .iter()
            .filter_map(|set| {
                let namespaces = match &set.spec.namespace_selector {
                    Some(selector) => PodScopeTerm::namespaces_selected(selector),
                    None => NamespaceScope::All,
                };
                PodScopeTerm::selecting(namespaces, set.spec.selector.as_ref())
            })
            .collect()
    }

    fn watch_scope(&self, wake: Arc<tokio::sync::Notify>) {
        crate::admission::pod_feature::wake_on_spec_change(&self.sets, wake);
    }
}

impl SidecarSetWebhook {
    /// Asks `caches` for SidecarSets, Namespaces and ControllerRevisions, and keeps the index
    /// in step with the SidecarSet cache.
    pub fn new(caches: &SharedCaches, gates: InjectionGates) -> Self {
        let sets = caches.get::<SidecarSet>();
        let index = Arc::new(RwLock::new(SidecarSetIndex::new(sets.all())));
        let feed = index.clone();
        sets.subscribe(Arc::new(move |change| {
            let mut index = feed.write().unwrap_or_else(|p| p.into_inner());
            match (&change.old, &change.new) {
                (_, Some(new)) => index.insert(new.clone()),
                (Some(old), None) => {
                    index.remove(&old.name_any());
                }
                (None, None) => {}
            }
        }));
        Self {
            index,
            sets,
            namespaces: caches.get(),
            revisions: caches.get(),
            revision_namespace: None,
            gates,
        }
    }

    /// Reads pinned revisions only from `namespace` (the manager's, where the controller keeps
    /// them), so that nobody who can write ControllerRevisions elsewhere can pin one; without
    /// it, revisions in any namespace count.
    #[must_use]
    pub fn with_revision_namespace(mut self, namespace: &str) -> Self {
        self.revision_namespace = Some(namespace.to_owned());
        self
    }

    /// True once the SidecarSet, Namespace and ControllerRevision caches have loaded: until
    /// then a pod could miss a sidecar it should get.
    pub fn is_synced(&self) -> bool {
        self.sets.is_synced() && self.namespaces.is_synced() && self.revisions.is_synced()
    }

    /// Waits until [`Self::is_synced`].
    pub async fn wait_synced(&self) {
        self.sets.wait_synced().await;
        self.namespaces.wait_synced().await;
        self.revisions.wait_synced().await;
    }

    /// Every SidecarSet (for validating one against the others).
    pub fn all(&self) -> Vec<SidecarSet> {
        self.sets.all().iter().map(|s| s.as_ref().clone()).collect()
    }

    /// The ControllerRevisions of the SidecarSet `name` (in the revision namespace, when set).
    pub fn revisions_of(&self, name: &str) -> Vec<ControllerRevision> {
        let namespace = self.revision_namespace.as_deref();
        self.revisions
            .all()
            .iter()
            .filter(|r| namespace.is_none_or(|ns| r.metadata.namespace.as_deref() == Some(ns)))
            .filter(|r| r.labels().get(REVISION_LABEL).map(String::as_str) == Some(name))
            .map(|r| r.to_revision())
            .collect()
    }

    /// The pod chain's SidecarSet step for a pod being created in `namespace`.
    pub fn step(&self, pod: &Pod, namespace: &str) -> SidecarSetInjection {
        let candidates: Vec<SidecarSetCandidate> = {
            let index = self.index.read().unwrap_or_else(|p| p.into_inner());
            index
                .candidates_with_selectors(namespace, pod.labels())
                .into_iter()
                .map(|(set, selectors)| {
                    let pinned = set.spec.injection_strategy.revision.is_some();
                    SidecarSetCandidate {
                        revisions: if pinned {
                            self.revisions_of(&set.name_any())
                        } else {
                            Vec::new()
                        },
                        sidecar_set: set.clone(),
                        // Read only by a pinned revision's `policy: Partial`.
                        draw: if pinned { rand::random::<f64>() } else { 0.0 },
                        selectors: Some(selectors.clone()),
                    }
                })
                .collect()
        };
        // Read only by a `namespaceSelector`.
        let namespace_labels: Option<BTreeMap<String, String>> =
            if candidates.iter().any(|c| c.sidecar_set.spec.namespace_selector.is_some()) {
                self.namespaces.get(&ObjectKey::new("", namespace)).map(|ns| ns.labels().clone())
            } else {
                None
            };
        SidecarSetInjection {
            namespace_labels,
            sidecar_sets: candidates,
            gates: self.gates,
            now: jiff::Timestamp::now(),
        }
    }
}

/// The controller's name in metrics, Events and logs (upstream's).
pub const CONTROLLER_NAME: &str = "sidecarset-controller";

/// The SidecarSet controller: the SidecarSet's ControllerRevisions (planned by
/// [`kruise_core::sidecarset::revision::plan_revisions`], kept in the manager's namespace,
/// `status.latestRevision` naming the latest), its status, and in-place sidecar upgrades of
/// the pods it selects, planned by [`kruise_core::sidecarset::upgrade::plan_upgrade`].
///
/// The `patchPodMetadata` whitelist (ConfigMap `kruise-configuration`) is checked when a
/// SidecarSet is admitted (the validating webhook), as upstream does; upgrades apply the
/// admitted patches without reading it again.
pub struct SidecarSetController {
    context: crate::controller::ControllerContext,
    sets: Cache<SidecarSet>,
    pods: Cache<crate::cached_pod::CachedPod>,
    namespaces: Cache<PartialObjectMeta<Namespace>>,
    revisions: Cache<crate::cached_revision::CachedRevision>,
    expectations: crate::expectations::ExpectationStore,
}

/// The SidecarSet's revisions once registered.
struct Registered {
    /// The latest revision's name.
    latest_revision: String,
    /// The collision count to record.
    collision_count: i32,
    /// The SidecarSet's revisions, oldest first.
    revisions: Vec<ControllerRevision>,
}

impl SidecarSetController {
    const INFO: crate::controller::ControllerInfo = crate::controller::ControllerInfo::new(
        CONTROLLER_NAME,
        "sidecarset-workers",
        Some(crate::controller::ServedResource {
            group: "apps.kruise.io",
            version: "v1beta1",
            plural: "sidecarsets",
        }),
    );

    fn build(
        context: crate::controller::ControllerContext,
    ) -> Arc<dyn crate::controller::Reconciler> {
        Arc::new(Self {
            sets: context.caches.get(),
            pods: context.caches.get(),
            namespaces: context.caches.get(),
            revisions: context.caches.get(),
            expectations: crate::expectations::ExpectationStore::new(),
            context,
        })
    }

    /// The pods `set` selects (its selector and namespace scope), whole.
    fn selected_pods(
        &self,
        set: &SidecarSet,
    ) -> Result<Vec<Pod>, crate::controller::ReconcileError> {
        use kruise_core::sidecarset::matching::ParsedSelectors;
        // Parsed once for all the pods, not once per pod.
        let selectors = ParsedSelectors::of(set);
        let no_labels = BTreeMap::new();
        let mut pods = Vec::new();
        for cached in self.pods.all() {
            let namespace = cached.metadata.namespace.clone().unwrap_or_default();
            let labels = cached.metadata.labels.as_ref().unwrap_or(&no_labels);
            let namespace_labels = self
                .namespaces
                .get(&ObjectKey::new("", namespace.as_str()))
                .map(|ns| ns.labels().clone());
            // The selectors also check the namespaceSelector (where a v1alpha1 `namespace`
            // lands once converted).
            if set.spec.selector.is_some()
                && selectors.matches(labels, namespace_labels.as_ref()).unwrap_or(false)
            {
                pods.push(cached.to_pod()?);
            }
        }
        Ok(pods)
    }

    async fn reconcile_set(
        &self,
        key: &ObjectKey,
    ) -> Result<Option<std::time::Duration>, crate::controller::ReconcileError> {
        use kruise_core::sidecarset::upgrade::{UpgradeGates, UpgradeSnapshot, plan_upgrade};
        let Some(set) = self.sets.get(key) else {
            self.expectations.remove(key);
            return Ok(None);
        };
        if set.metadata.deletion_timestamp.is_some() {
            return Ok(None);
        }
        let pods = self.selected_pods(&set)?;
        let registered = self.register_revisions(&set, &pods).await?;
        let now = jiff::Timestamp::now();
        let snapshot = UpgradeSnapshot {
            sidecar_set: set.as_ref().clone(),
            pods,
            latest_revision: registered.latest_revision,
            collision_count: Some(registered.collision_count),
            revisions: registered.revisions,
            expectations: self.expectations.get(key),
            gates: UpgradeGates {
                resize_supported: self.context.settings.gates.enabled("InPlacePodVerticalScaling"),
            },
            now,
        };
        let plan = plan_upgrade(&snapshot);
        self.expectations.set(key, plan.expectations.clone());
        let applier = &self.context.applier;
        let owner =
            PlanOwner::of(set.as_ref(), serde_json::to_value(&set.status).unwrap_or_default());
        if let Some(kruise_core::workload::Blocked::Invalid { message }) = &plan.blocked {
            applier
                .event(
                    &owner.reference,
                    true,
                    "InvalidUpdateStrategy",
                    "Reconcile",
                    message.clone(),
                )
                .await;
        }
        let expectations = ExpectationsFor { store: &self.expectations, key };
        applier.apply(&owner, &plan, Some(expectations), now).await?;
        Ok(plan.requeue_after.and_then(|d| std::time::Duration::try_from(d).ok()))
    }

    /// Finds or creates the SidecarSet's latest ControllerRevision and deletes old ones beyond
    /// its history limit (upstream's `registerLatestRevision`). A failure to create or update
    /// the latest revision fails the reconcile, as upstream; failed deletions are logged.
    async fn register_revisions(
        &self,
        set: &SidecarSet,
        pods: &[Pod],
    ) -> Result<Registered, crate::controller::ReconcileError> {
        use crate::controller::ReconcileError;
        use kruise_core::sidecarset::revision::{RevisionInput, plan_revisions};
        use kruise_core::workload::Action;
        let namespace = self.context.settings.manager_namespace.as_str();
        let name = set.name_any();
        let cached: Vec<ControllerRevision> = self
            .revisions
            .all()
            .iter()
            .filter(|r| r.metadata.namespace.as_deref() == Some(namespace))
            .filter(|r| r.labels().get(REVISION_LABEL) == Some(&name))
            .map(|r| r.to_revision())
            .collect();
        let plan = plan_revisions(&RevisionInput {
            sidecar_set: set,
            namespace,
            revisions: &cached,
            pods,
        })?;
        let mut registered = Registered {
            latest_revision: plan.latest_revision.clone(),
            collision_count: plan.collision_count,
            revisions: plan.revisions.clone(),
        };
        let applier = &self.context.applier;
        let owner = revisions_owner(set, namespace);
        for action in &plan.actions {
            let target = format!("{namespace}/{}", action.target());
            match action {
                Action::CreateRevision { revision } => {
                    let (latest, collision_count) =
                        self.create_revision(set, &owner, revision, plan.collision_count).await?;
                    registered.latest_revision = latest;
                    registered.collision_count = collision_count;
                }
                Action::DeleteRevision { .. } => match applier.send(&owner, action).await {
                    Ok(_) | Err(crate::applier::ApplyError::NotFound(_)) => {}
                    Err(err) => {
                        tracing::warn!(sidecarset = %name, revision = %target, error = %err, "deleting an old ControllerRevision");
                    }
                },
                _ => {
                    if let Err(source) = applier.send(&owner, action).await {
                        return Err(ReconcileError::Write {
                            action: "write revision",
                            target,
                            source,
                        });
                    }
                }
            }
        }
        if plan.over_limit > 0 {
            tracing::warn!(sidecarset = %name, kept = plan.over_limit, "ControllerRevisions beyond revisionHistoryLimit are kept because pods or injectionStrategy.revision use them");
        }
        Ok(registered)
    }

    /// Creates `revision`; on a name conflict, takes the existing revision when it records
    /// the same fields, or tries again under a new name with the collision count raised. The
    /// latest revision's name and the collision count.
    async fn create_revision(
        &self,
        set: &SidecarSet,
        owner: &PlanOwner,
        revision: &ControllerRevision,
        collision_count: i32,
    ) -> Result<(String, i32), crate::controller::ReconcileError> {
        use crate::applier::ApplyError;
        use crate::controller::ReconcileError;
        use kruise_core::revision::CreateConflict;
        use kruise_core::sidecarset::revision::resolve_create_conflict;
        use kruise_core::workload::Action;
        let applier = &self.context.applier;
        let namespace = owner.namespace.as_deref().unwrap_or_default();
        let mut attempt = revision.clone();
        let mut collision_count = collision_count;
        for _ in 0..MAX_CREATE_ATTEMPTS {
            let name = attempt.name_any();
            let target = format!("{namespace}/{name}");
            let action = Action::CreateRevision { revision: Box::new(attempt.clone()) };
            match applier.send(owner, &action).await {
                Ok(_) => return Ok((name, collision_count)),
                Err(ApplyError::AlreadyExists(_)) => {}
                Err(source) => {
                    return Err(ReconcileError::Write {
                        action: "create revision",
                        target,
                        source,
                    });
                }
            }
            let existing: ControllerRevision =
                applier.get(namespace, &name).await.map_err(|source| ReconcileError::Write {
                    action: "read revision",
                    target: target.clone(),
                    source,
                })?;
            match resolve_create_conflict(set, &existing, &attempt, collision_count) {
                CreateConflict::UseExisting { name } => return Ok((name, collision_count)),
                CreateConflict::Retry { collision_count: raised, revision } => {
                    collision_count = raised;
                    attempt = *revision;
                }
                other => {
                    tracing::error!(conflict = ?other, "a revision name conflict this controller does not know");
                    break;
                }
            }
        }
        Err(ReconcileError::Write {
            action: "create revision",
            target: format!("{namespace}/{}", attempt.name_any()),
            source: ApplyError::Conflict(format!(
                "no free revision name after {MAX_CREATE_ATTEMPTS} attempts"
            )),
        })
    }
}

/// The owner the SidecarSet's ControllerRevisions are written for: the SidecarSet, with the
/// namespace its revisions live in (the manager's).
fn revisions_owner(set: &SidecarSet, namespace: &str) -> PlanOwner {
    let mut owner = PlanOwner::of(set, serde_json::Value::Null);
    owner.namespace = Some(namespace.to_owned());
    owner
}

impl crate::controller::Reconciler for SidecarSetController {
    fn watches(&self) -> Vec<crate::controller::Watch> {
        use crate::controller::{KeyMapping, Watch};
        vec![
            Watch::own(&self.sets),
            // A pod concerns the SidecarSets that injected it (upstream's pod event handler).
            Watch::new(&self.pods, KeyMapping::Custom, move |change| {
                let mut keys = Vec::new();
                for pod in [change.old.as_deref(), change.new.as_deref()].into_iter().flatten() {
                    let injected = pod.metadata.annotations.as_ref().and_then(|a| {
                        a.get(kruise_api::well_known::annotations::SIDECARSET_INJECTED_LIST)
                    });
                    for name in injected.into_iter().flat_map(|l| l.split(',')) {
                        if !name.is_empty() {
                            keys.push(ObjectKey::new("", name));
                        }
                    }
                }
                keys.sort();
                keys.dedup();
                keys
            }),
            // A revision concerns the SidecarSet it is labelled with (one deleted by hand is
            // written again).
            Watch::new(&self.revisions, KeyMapping::Custom, move |change| {
                let mut keys: Vec<ObjectKey> = [change.old.as_deref(), change.new.as_deref()]
                    .into_iter()
                    .flatten()
                    .filter_map(|r| r.labels().get(REVISION_LABEL))
                    .map(|name| ObjectKey::new("", name.as_str()))
                    .collect();
                keys.dedup();
                keys
            }),
        ]
    }

    fn keys(&self) -> Vec<ObjectKey> {
        self.sets.all().iter().map(|s| ObjectKey::of(s.as_ref())).collect()
    }

    fn reconcile<'a>(
        &'a self,
        key: &'a ObjectKey,
    ) -> futures::future::BoxFuture<
        'a,
        Result<Option<std::time::Duration>, crate::controller::ReconcileError>,
    > {
        Box::pin(self.reconcile_set(key))
    }
}

/// The controller's registration.
pub fn registration() -> crate::controller::Registration {
    crate::controller::Registration {
        info: SidecarSetController::INFO,
        build: SidecarSetController::build,
    }
}
