//! Pod features: what acts on pods at admission (SidecarSet injection, WorkloadSpread subsets,
//! PodUnavailableBudget protection today; the readiness gate, launch priority,
//! PersistentPodState and enhanced liveness next). Each is one implementation of
//! [`PodFeature`], registered in [`super::AdmissionContext::pod_features`]: the pod webhooks
//! ask every registered feature, in turn, and name none of them.
//!
//! - At pod CREATE (`/mutate-pod`) each feature offers a step for the mutating chain
//!   ([`PodFeature::on_create`]); [`kruise_core::admission::pod_chain::PodChain`] runs the steps
//!   in upstream's order, whatever order the features are registered in.
//! - At pod UPDATE, DELETE and eviction (`/validate-pod`) every feature checks the request
//!   ([`PodFeature::validate`]); only when all allow it is each told it was admitted
//!   ([`PodFeature::admitted`]).
//! - Which pods reach `/mutate-pod` at all: each feature says which pods its objects select
//!   ([`PodFeature::scope`]), and wakes the writer of the generated webhook entries when that
//!   may have changed ([`PodFeature::watch_scope`]); see [`super::pod_scope`].

use std::sync::Arc;

use futures::future::BoxFuture;
use k8s_openapi::api::core::v1::Pod;
use kruise_core::admission::pod_chain::PodMutator;
use kruise_core::admission::pod_scope::PodScopeTerm;
use kube::Resource;
use tokio::sync::Notify;

use crate::cache::Cache;

/// A pod operation under review at `/validate-pod`.
#[derive(Clone, Copy, Debug)]
pub enum PodReview<'a> {
    /// DELETE of the pod.
    Delete {
        /// The pod as stored.
        pod: &'a Pod,
    },
    /// CREATE of the pod's `eviction` subresource.
    Evict {
        /// The pod as stored.
        pod: &'a Pod,
    },
    /// UPDATE of the pod.
    Update {
        /// The pod as stored.
        old: &'a Pod,
        /// The pod as asked.
        new: &'a Pod,
    },
}

/// What a feature answers about one pod operation.
#[derive(Debug)]
#[non_exhaustive]
pub enum PodVerdict {
    /// Let it through.
    Allow,
    /// Refuse it with this HTTP code and message.
    Deny(u16, String),
}

/// A mutating step a feature offers for one pod (owning what it needs: the pod it changes is
/// borrowed mutably once every feature has answered).
pub type PodStepBox = Box<dyn PodMutator + Send + Sync>;

/// One feature acting on pods at admission.
pub trait PodFeature: Send + Sync {
    /// Its name, for logs and for the answer when its cache has not loaded.
    fn name(&self) -> &'static str;

    /// True once every cache it reads has loaded: a pod admitted before could miss what the
    /// feature would have done.
    fn is_synced(&self) -> bool;

    /// Waits until [`Self::is_synced`].
    fn wait_synced(&self) -> BoxFuture<'_, ()>;

    /// Its step for a pod being created in `namespace`, or `None` when it has nothing to do.
    /// `dry_run`: the request changes nothing, so nothing may be reserved for it.
    ///
    /// # Errors
    /// A message the webhook answers with 500 (the pod is refused).
    fn on_create<'a>(
        &'a self,
        pod: &'a Pod,
        namespace: &'a str,
        dry_run: bool,
    ) -> BoxFuture<'a, Result<Option<PodStepBox>, String>>;

    /// Checks a pod UPDATE, DELETE or eviction asked by `username`.
    fn validate<'a>(
        &'a self,
        _review: PodReview<'a>,
        _dry_run: bool,
        _username: &'a str,
    ) -> BoxFuture<'a, PodVerdict> {
        Box::pin(std::future::ready(PodVerdict::Allow))
    }

    /// Told, after every feature allowed it, that a pod operation (not a dry run) is admitted.
    fn admitted<'a>(&'a self, _review: PodReview<'a>) -> BoxFuture<'a, ()> {
        Box::pin(std::future::ready(()))
    }

    /// The pods its objects act on at creation, one term per object (or per group of them);
    /// never fewer pods than it would change. The default, every pod, suits a feature that
    /// cannot say.
    fn scope(&self) -> Vec<PodScopeTerm> {
        vec![PodScopeTerm::everything()]
    }

    /// Arranges for `wake` to be notified whenever [`Self::scope`] may have changed.
    fn watch_scope(&self, _wake: Arc<Notify>) {}
}

/// Gives a [`StatelessPodFeature`]'s step for a pod being created, or `None`.
pub type StepFor = Box<dyn Fn(&Pod) -> Option<PodStepBox> + Send + Sync>;

/// A feature whose step needs nothing from the cluster (no cache, so always synced): its step
/// for a pod comes from the pod alone, and its scope is fixed.
pub struct StatelessPodFeature {
    /// Its name.
    pub name: &'static str,
    /// Its step for a pod being created, or `None` when it has nothing to do.
    pub step: StepFor,
    /// The pods it asks for.
    pub scope: Vec<PodScopeTerm>,
}

impl std::fmt::Debug for StatelessPodFeature {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("StatelessPodFeature")
            .field("name", &self.name)
            .field("scope", &self.scope)
            .finish_non_exhaustive()
    }
}

impl PodFeature for StatelessPodFeature {
    fn name(&self) -> &'static str {
        self.name
    }

    fn is_synced(&self) -> bool {
        true
    }

    fn wait_synced(&self) -> BoxFuture<'_, ()> {
        Box::pin(std::future::ready(()))
    }

    fn on_create<'a>(
        &'a self,
        pod: &'a Pod,
        _namespace: &'a str,
        _dry_run: bool,
    ) -> BoxFuture<'a, Result<Option<PodStepBox>, String>> {
        Box::pin(std::future::ready(Ok((self.step)(pod))))
    }

    fn scope(&self) -> Vec<PodScopeTerm> {
        self.scope.clone()
    }
}

/// Notifies `wake` when an object of `cache` appears, goes, or has its spec changed (its
/// generation moves): what a feature's [`PodFeature::scope`] reads. Status writes do not wake.
pub fn wake_on_spec_change<K>(cache: &Cache<K>, wake: Arc<Notify>)
where
    K: Resource<DynamicType = ()>
        + Clone
        + serde::de::DeserializeOwned
        + std::fmt::Debug
        + Send
        + Sync
        + 'static,
{
    cache.subscribe(Arc::new(move |change: &crate::cache::Change<K>| {
        let generation = |k: &Option<Arc<K>>| k.as_ref().map(|k| k.meta().generation);
        if change.old.is_none()
            || change.new.is_none()
            || generation(&change.old) != generation(&change.new)
        {
            wake.notify_one();
        }
    }));
}
