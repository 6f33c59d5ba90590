//! The Advanced DaemonSet planner: a DaemonSet, the nodes and the pods it owns in, a plan
//! out.
//!
//! [`plan`] reproduces one reconcile of upstream's Advanced DaemonSet controller without
//! touching the cluster. Given the same [`DaemonSetSnapshot`] and `now` it always returns the
//! same [`DaemonSetPlan`], in the shared workload vocabulary ([`crate::workload`]). One round,
//! in order:
//!
//! 1. **Revisions.** The template's ControllerRevision is found or created; its hash (the
//!    `controller-revision-hash` label) is what new and updated pods carry.
//! 2. **Expectations.** While pods created or deleted earlier are missing from the snapshot,
//!    or a pod patched earlier shows an older resourceVersion, nothing is planned; the status
//!    is still refreshed.
//! 3. **Nodes.** Each node is judged as kube-controller-manager judges it
//!    ([`eligibility`]): a node that should run a pod and has none gets one (at most
//!    `burstReplicas` per round; with `scaleStrategy.partitionedScaling` only as many as the
//!    partition leaves); pods on nodes that must not keep one, failed pods (unless their
//!    node is in back-off, see [`backoff`]), extra pods (the
//!    oldest is kept; with surge, the oldest old and oldest new ones) and pods whose preDelete
//!    hook has let go are deleted. A pod the preDelete hook holds goes to `PreparingDelete`
//!    first. If this step changed anything, the round ends here, as upstream's does.
//! 4. **In-place refresh** of every pod (grace periods, `InPlaceUpdateReady`).
//! 5. **Rolling update** (not with `OnDelete`, nor while paused): nodes are ordered updated
//!    first, then those being updated, then the candidates by name (descending); only nodes
//!    matching `rollingUpdate.selector` are candidates, and `partition` nodes are left out.
//!    Without surge, old pods are replaced within `maxUnavailable` (counted over every node),
//!    in place when `InPlaceIfPossible` allows it; with surge, a new pod is created next to
//!    the old one within `maxSurge`, and the old one deleted once the new one is available.
//! 6. **History**: old revisions beyond `revisionHistoryLimit` that no pod uses are deleted.
//! 7. **Status.**
//! 8. **Image pre-download** (gate `PreDownloadImageForDaemonSetUpdate`): ImagePullJobs for
//!    the update revision's changed images, or their deletion once the update is over,
//!    decided on the last written status as upstream does.
//!
//! The snapshot carries each pod with its [`PodFacts`](crate::workload::PodFacts) and each
//! node with its [`NodeFacts`] ([`SnapshotNode`]), computed when they enter a cache, so
//! that a plan over thousands of nodes reads compact data rather than every decoded object.
//!
//! Differences from upstream, on purpose:
//!
//! - a revision this planner creates is named by the FNV hash of its data (as CloneSet
//!   revisions are) rather than by Kubernetes' `ComputeHash` of the Go template; revisions
//!   upstream created are found by content and keep their names and hashes;
//! - pods are created with a name (`<daemonset>-<5 characters>`, derived from the node and
//!   revision) rather than `generateName`, so that expectations can name them;
//! - candidates of a rolling update are taken in node-name order where upstream walks a Go
//!   map in random order;
//! - an in-place update does not move the pod's lifecycle state (upstream's DaemonSet runs no
//!   in-place hook either);
//! - a failed ImagePullJob creation is retried on the next round (the revision is marked
//!   only once every job exists) where upstream records an Event and marks it anyway.

pub mod admission;
pub mod backoff;
pub mod eligibility;
mod nodes;
mod predownload;
mod round;
mod snapshot;

pub use backoff::{BackoffKey, FailedPodBackoff};
pub use nodes::{NodeFacts, SnapshotNode};
pub use snapshot::{DaemonSetObject, DaemonSetSnapshot, FeatureGates, PlannerOptions};

/// The outcome of planning one Advanced DaemonSet.
pub type DaemonSetPlan = crate::workload::WorkloadPlan<kruise_api::apps::v1beta1::DaemonSetStatus>;

/// `spec.burstReplicas` when unset.
pub const DEFAULT_BURST_REPLICAS: i32 = 250;

/// Plans one reconcile of the DaemonSet in `snapshot` at `now`. Pure: the same snapshot and
/// `now` always give the same plan.
pub fn plan(snapshot: &DaemonSetSnapshot, now: jiff::Timestamp) -> DaemonSetPlan {
    round::plan(snapshot, now)
}

/// Why a DaemonSet cannot be planned for. Each message names the field.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum SpecError {
    /// The v1alpha1 object could not be converted to v1beta1.
    #[error("converting the DaemonSet to apps.kruise.io/v1beta1: {0}")]
    Conversion(String),
    /// `spec.selector` or `spec.updateStrategy.rollingUpdate.selector` is malformed.
    #[error("{field}: {message}")]
    Selector {
        /// The field.
        field: &'static str,
        /// What is wrong.
        message: String,
    },
    /// An int-or-percent value does not parse.
    #[error("{field}: {message}")]
    IntOrPercent {
        /// The field.
        field: &'static str,
        /// What is wrong.
        message: String,
    },
    /// A revision could not be built or read.
    #[error("{0}")]
    Revision(String),
}

#[cfg(test)]
mod tests;
