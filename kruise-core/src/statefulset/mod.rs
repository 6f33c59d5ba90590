//! The Advanced StatefulSet planner: a snapshot of a set and everything it owns in, a plan
//! out.
//!
//! [`plan`] reproduces one reconcile of upstream's Advanced StatefulSet controller without
//! touching the cluster. Given the same [`StatefulSetSnapshot`] and `now` it always returns the
//! same [`StatefulSetPlan`], in the shared workload vocabulary ([`crate::workload`]). One
//! round, in order:
//!
//! 1. **Expectations.** While pods or claims created or deleted earlier are missing from the
//!    snapshot, or a pod patched earlier shows an older resourceVersion, plan nothing.
//! 2. **Revisions.** The template's ControllerRevision is found or created (named and hashed
//!    as upstream names and hashes it); the current revision comes from
//!    `status.currentRevision`.
//! 3. **Slots.** Replicas hold the first `replicas` ordinals from `ordinals.start` that
//!    `reserveOrdinals` leaves free; pods on other ordinals are removed. A missing replica is
//!    created at the current revision when `partition` keeps its place there.
//! 4. **Scale**, lowest ordinal first: missing claims and pods are created, finished pods are
//!    replaced, in-place updates and lifecycle states are refreshed, identity labels and claim
//!    owners are put right. OrderedReady stops at the first pod that is not yet available;
//!    Parallel goes on, within `scaleStrategy.maxUnavailable`.
//! 5. **Scale-in**, highest ordinal first, through the preDelete hook.
//! 6. **Rolling update** (not with `OnDelete`, nor while paused): pods labelled
//!    `apps.kruise.io/specified-delete` are replaced, then the targets (the highest ordinals,
//!    or by priority when unordered, leaving `partition` pods at the current revision) move to
//!    the update revision in place or by recreation, within `maxUnavailable`.
//! 7. **Status** and revision history.
//! 8. **Image pre-download** (gate `PreDownloadImageForInPlaceUpdate`): ImagePullJobs for a
//!    partitioned or progressive in-place update's changed images (`predownload`).
//!
//! Differences from upstream, on purpose:
//!
//! - a malformed `reserveOrdinals` entry stops planning with an error naming it; upstream
//!   ignores every reservation then, and would put pods on ordinals meant to stay free;
//! - while a rollout is under way, pods the update removed are recreated within the update's
//!   own `maxUnavailable`, not slowed by `scaleStrategy.maxUnavailable` (upstream #2285);
//! - a failed pod is deleted whatever the scale budget, and in Parallel one stuck pod never
//!   holds up the others (upstream PR #2109); a finished pod being scaled away goes at once,
//!   where OrderedReady upstream would wait for it to become ready;
//! - a rollout completes only once every replica exists, so that a set whose pods are all
//!   gone mid-rollout still creates the partition's pods at the current revision;
//! - a pod whose volumes miss a claim template (one was added) is replaced by the rolling
//!   update, within `maxUnavailable`, rather than patched in a loop the API server refuses
//!   (upstream #2343);
//! - a labelled pod already terminating is not deleted again, and the status is written
//!   whenever any field of it changes;
//! - a pod whose name has a zero-padded ordinal (`web-01`) is removed rather than kept;
//! - a failed ImagePullJob creation is retried on the next round (the revision is marked
//!   only once every job exists) where upstream records an Event and marks it anyway;
//! - a pod released because its labels no longer match the selector keeps its name, so its
//!   ordinal cannot get a new pod until someone deletes it (as upstream); the round that
//!   releases it says so in a Warning Event instead of trying to create the pod.

pub mod admission;
mod claims;
mod identity;
mod predownload;
mod round;
mod snapshot;
mod spec;

/// Ordinals live in the base layer ([`crate::ordinal`]); this path is kept for callers.
pub use crate::ordinal as ordinals;

pub use snapshot::{FeatureGates, PlannerOptions, StatefulSetObject, StatefulSetSnapshot};

/// The outcome of planning one Advanced StatefulSet.
pub type StatefulSetPlan =
    crate::workload::WorkloadPlan<kruise_api::apps::v1beta1::StatefulSetStatus>;

/// Plans one reconcile of the set in `snapshot` at `now`. Pure: the same snapshot and `now`
/// always give the same plan.
pub fn plan(snapshot: &StatefulSetSnapshot, now: jiff::Timestamp) -> StatefulSetPlan {
    round::plan(snapshot, now)
}

/// Why a set cannot be planned for. Each message names the field.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum SpecError {
    /// The v1alpha1 object could not be converted to v1beta1.
    #[error("converting the StatefulSet to apps.kruise.io/v1beta1: {0}")]
    Conversion(String),
    /// `spec.replicas` is negative.
    #[error("spec.replicas: {replicas} must not be negative")]
    NegativeReplicas {
        /// The value.
        replicas: i32,
    },
    /// `spec.selector` is missing or malformed.
    #[error("{0}")]
    Selector(String),
    /// The template's labels do not match the selector: every pod created would be released
    /// again.
    #[error("spec.template.metadata.labels: must match spec.selector ({selector})")]
    TemplateLabels {
        /// The selector, rendered.
        selector: String,
    },
    /// `spec.ordinals.start` is negative.
    #[error("spec.ordinals.start: {start} must not be negative")]
    NegativeStart {
        /// The value.
        start: i32,
    },
    /// A `spec.reserveOrdinals` entry is malformed.
    #[error(transparent)]
    ReserveOrdinals(#[from] ordinals::ReserveError),
    /// An int-or-percent budget does not parse.
    #[error("{field}: {message}")]
    Budget {
        /// The field.
        field: &'static str,
        /// What is wrong.
        message: String,
    },
    /// A revision could not be built or read.
    #[error("{0}")]
    Revision(String),
}
