//! SidecarSet injection at pod creation: the pod mutating webhook's SidecarSet step
//! ([`kruise_core::admission::pod_chain::SidecarSetInjection`]) fed from the caches.
//!
//! The SidecarSets live in a [`SidecarSetIndex`] kept up to date by the SidecarSet cache's
//! change feed, so a pod creation looks only at the SidecarSets filed under its namespace and
//! labels, never at all of them. Namespace labels (for `namespaceSelector`) come from a
//! metadata-only Namespace cache; pinned revisions (`injectionStrategy.revision`) from the
//! ControllerRevision cache.
//!
//! Not done here: the SidecarSet controller (status, in-place sidecar upgrades, hot upgrade).

use std::collections::BTreeMap;
use std::sync::{Arc, RwLock};

use k8s_openapi::api::apps::v1::ControllerRevision;
use k8s_openapi::api::core::v1::{Namespace, Pod};
use kruise_api::apps::v1beta1::SidecarSet;
use kruise_core::admission::pod_chain::SidecarSetInjection;
use kruise_core::sidecarset::{InjectionGates, SidecarSetCandidate, SidecarSetIndex};
use kube::core::PartialObjectMeta;
use kube::{Client, ResourceExt as _};

use crate::cache::{Cache, ObjectKey, SharedCaches, WatchEvents, Watched, cluster_watch};

/// The label upstream puts on a SidecarSet's ControllerRevisions.
const REVISION_LABEL: &str = "kruise.io/sidecarset-name";

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
    revisions: Cache<ControllerRevision>,
    gates: InjectionGates,
}

impl std::fmt::Debug for SidecarSetWebhook {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SidecarSetWebhook").field("gates", &self.gates).finish_non_exhaustive()
    }
}

impl SidecarSetWebhook {
    /// Asks `caches` for SidecarSets, Namespaces and ControllerRevisions, and keeps the index
    /// in step with the SidecarSet cache.
    pub fn new(caches: &SharedCaches, gates: InjectionGates) -> Self {
        let sets = caches.get::<SidecarSet>();
        let index = Arc::new(RwLock::new(SidecarSetIndex::new(
            sets.all().iter().map(|s| s.as_ref().clone()),
        )));
        let feed = index.clone();
        sets.subscribe(Arc::new(move |change| {
            let mut index = feed.write().unwrap_or_else(|p| p.into_inner());
            match (&change.old, &change.new) {
                (_, Some(new)) => index.insert(new.as_ref().clone()),
                (Some(old), None) => {
                    index.remove(&old.name_any());
                }
                (None, None) => {}
            }
        }));
        Self { index, sets, namespaces: caches.get(), revisions: caches.get(), gates }
    }

    /// Every SidecarSet (for validating one against the others).
    pub fn all(&self) -> Vec<SidecarSet> {
        self.sets.all().iter().map(|s| s.as_ref().clone()).collect()
    }

    /// The ControllerRevisions of the SidecarSet `name`.
    pub fn revisions_of(&self, name: &str) -> Vec<ControllerRevision> {
        self.revisions
            .all()
            .iter()
            .filter(|r| r.labels().get(REVISION_LABEL).map(String::as_str) == Some(name))
            .map(|r| r.as_ref().clone())
            .collect()
    }

    /// The pod chain's SidecarSet step for a pod being created in `namespace`.
    pub fn step(&self, pod: &Pod, namespace: &str) -> SidecarSetInjection {
        let namespace_labels: Option<BTreeMap<String, String>> =
            self.namespaces.get(&ObjectKey::new("", namespace)).map(|ns| ns.labels().clone());
        let labels = pod.labels().clone();
        let candidates: Vec<SidecarSetCandidate> = {
            let index = self.index.read().unwrap_or_else(|p| p.into_inner());
            index
                .candidates(namespace, &labels)
                .into_iter()
                .map(|set| {
                    let pinned = set.spec.injection_strategy.revision.is_some();
                    SidecarSetCandidate {
                        revisions: if pinned {
                            self.revisions_of(&set.name_any())
                        } else {
                            Vec::new()
                        },
                        sidecar_set: set.clone(),
                        draw: rand::random::<f64>(),
                    }
                })
                .collect()
        };
        SidecarSetInjection {
            namespace_labels,
            sidecar_sets: candidates,
            gates: self.gates,
            now: jiff::Timestamp::now(),
        }
    }
}
