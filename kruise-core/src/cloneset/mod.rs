//! The CloneSet planner: a snapshot of a CloneSet and everything it owns in, a plan out.
//!
//! [`plan`] reproduces one reconcile of upstream's CloneSet controller without touching the
//! cluster. Given the same [`CloneSetSnapshot`] and `now` it always returns the same
//! [`CloneSetPlan`]. One round, in order:
//!
//! 1. **Expectations.** While pods or PVCs created or deleted earlier are missing from the
//!    snapshot (or a pod patched earlier shows an older resourceVersion), plan nothing and look
//!    again when the wait would time out. Expectations older than
//!    [`PlannerOptions::expectation_timeout`] are dropped and planning goes on.
//! 2. **Housekeeping.** Without `enablePVCReuse`, PVCs of pods that are gone are deleted (or
//!    handed to their finished pod); pods the selector no longer matches are released.
//! 3. **Revisions.** The template's ControllerRevision is found or created (an equal older
//!    one is rolled forward); the current revision comes from `status.currentRevision`.
//! 4. **Scale.** Pods in `PreparingDelete` that are wanted again are restored; missing pods
//!    are created (bounded by `scaleStrategy.maxUnavailable`), with instance ids and PVCs;
//!    pods whose preDelete hook has let go, pods named for deletion and surplus pods are
//!    deleted (bounded by `maxUnavailable`); preDelete hooks hold pods in `PreparingDelete`.
//! 5. **Update** (only when step 4 changed nothing). Lifecycle states are advanced and
//!    finished in-place updates acknowledged; then, unless `OnDelete` or paused, pods are
//!    moved towards the update revision (or back, with partition rollback), in priority and
//!    scatter order, within `partition`, `maxUnavailable` and `maxSurge`: in place where the
//!    policy and the change allow, else by marking them for deletion.
//! 6. **Status.** Counters, revisions and the Progressing condition; surplus history and stale
//!    `podsToDelete` names are cleaned up.
//!
//! Differences from upstream, on purpose:
//!
//! - instance ids are derived deterministically from the CloneSet's UID instead of drawn at
//!   random, so the same snapshot always names the same pods;
//! - expectations that time out are dropped and planning goes on (upstream stays blocked
//!   unless its `ForceDeleteTimeoutExpectation` gate is on);
//! - ready pods are deleted only while `replicas - maxUnavailable` pods stay available
//!   (upstream's limit counts unavailable pods already marked for deletion as available);
//! - when updating, pods marked for deletion count as leaving: they are neither updated nor
//!   counted as kept at the old revision, so the partition holds for the pods that stay;
//! - the minReadySeconds requeue is the time until the next pod becomes available, not the
//!   full minReadySeconds;
//! - PodUnavailableBudgets are out of scope (kruise-kube's);
//! - a failed ImagePullJob creation is retried on the next round (the revision is marked
//!   only once every job exists) where upstream records an Event and marks it anyway.
//!
//! With `PreDownloadImageForInPlaceUpdate` on, a partitioned or progressive in-place update
//! also gets ImagePullJobs for its changed images, planned last in the round
//! (`predownload`).

pub mod admission;
mod diffs;
mod inplace_glue;
mod newpods;
mod podinfo;
mod predownload;
mod revisions;
mod round;
mod scale;
mod snapshot;
mod spec;
mod status;
mod update;

pub use crate::workload::{
    Action, Blocked, DeletePurpose, Event, EventType, Patch, PodPatchPurpose, PodStatusPurpose,
};
pub use crate::workload::{PodFacts, SnapshotPod};

/// The outcome of planning one CloneSet: the shared workload plan with a CloneSet status.
pub type CloneSetPlan = crate::workload::WorkloadPlan<kruise_api::apps::v1beta1::CloneSetStatus>;
pub use snapshot::{CloneSetObject, CloneSetSnapshot, FeatureGates, PlannerOptions};

/// Plans one reconcile of the CloneSet in `snapshot` at `now`. Pure: the same snapshot and
/// `now` always give the same plan, and nothing outside the arguments is read.
pub fn plan(snapshot: &CloneSetSnapshot, now: jiff::Timestamp) -> CloneSetPlan {
    round::plan(snapshot, now)
}

/// Why a CloneSet cannot be planned for.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum SpecError {
    /// The v1alpha1 object could not be converted to v1beta1.
    #[error("converting the CloneSet to apps.kruise.io/v1beta1: {0}")]
    Conversion(String),
    /// `spec.replicas` is negative.
    #[error("spec.replicas: {replicas} must not be negative")]
    NegativeReplicas {
        /// The value.
        replicas: i32,
    },
    /// A `spec.selector.matchExpressions` entry is invalid.
    #[error("spec.selector.matchExpressions: key {key:?} with operator {operator:?}: {reason}")]
    Selector {
        /// The requirement's key.
        key: String,
        /// The requirement's operator.
        operator: String,
        /// What is wrong.
        reason: String,
    },
    /// `spec.selector` is missing: it would match no pod, so every pod created would be
    /// released again.
    #[error("spec.selector: Required value")]
    MissingSelector,
    /// The template's labels do not match the selector: every pod created would be released
    /// again.
    #[error("spec.template.metadata.labels: must match spec.selector ({selector})")]
    TemplateLabels {
        /// The selector, rendered.
        selector: String,
    },
    /// The update revision's ControllerRevision data holds no usable pod template.
    #[error("controllerrevision {name:?}: data.spec.template: {reason}")]
    RevisionData {
        /// The revision's name.
        name: String,
        /// What is wrong.
        reason: String,
    },
}

/// The selector lives in the base layer ([`crate::selector`]); this path is kept for callers.
pub use crate::selector::PodSelector;

impl From<crate::selector::SelectorError> for SpecError {
    fn from(e: crate::selector::SelectorError) -> Self {
        let crate::selector::SelectorError { key, operator, reason } = e;
        SpecError::Selector { key, operator, reason }
    }
}
