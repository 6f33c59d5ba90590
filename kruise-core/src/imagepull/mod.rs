//! Image pre-pulling: ImagePullJob, ImageListPullJob and NodeImage.
//!
//! - [`select_nodes`]: the NodeImages (one per node, same name) a job pulls on.
//! - [`plan_job`]: the ImagePullJob controller: which NodeImages get the job's tag entry
//!   (at most `parallelism` pulling at once), the job's status, completion and TTL.
//! - [`plan_pull_secrets`]: copies of the job's pull secrets in the daemon's namespace.
//! - [`plan_list_job`]: the ImageListPullJob controller: one ImagePullJob per image.
//! - [`plan_node_image`]: the NodeImage controller: creation per node, label sync, pruning of
//!   finished tags and of tags whose jobs are gone, and timeouts in the status.
//! - [`plan_pulls`]: the kruise daemon's image puller for its node's NodeImage.
//! - [`TagOwnerIndex`]: which NodeImages carry a job's entries, kept up to date from
//!   NodeImage events, so that a job's reconcile touches only its own nodes.
//!
//! # Cost
//!
//! Upstream listed every NodeImage for every job and re-queued every job on every NodeImage
//! change; 198 jobs over 989 nodes kept a manager at 94% CPU (PR #2483). Here:
//!
//! - [`plan_job`] reads only the NodeImages of the nodes the job selects (through a lookup),
//!   so one reconcile is O(selected nodes × tags of the image on a node), independent of the
//!   number of jobs;
//! - [`jobs_to_wake`] maps a NodeImage change to the jobs that own an entry on it or whose
//!   entry there changed (O(owners on that NodeImage)), so a status update of one node wakes
//!   only the jobs pulling there; jobs that select the node but have no entry yet are woken
//!   by their own requeue or by the node's label change.
//!
//! Differences from upstream, on purpose:
//!
//! - another job's entry for the same tag is never replaced: a job joins it by adding
//!   itself as an owner, and the tag's `version` (which restarts the pull for every owner) is
//!   bumped only when the entry's last pull failed or the joining job asks for `Always`
//!   (upstream bumped it on every join, so jobs restarted each other's pulls, and concurrent
//!   list jobs overwrote each other's entries, #1517); the change is expressed as an operation
//!   ([`NodeImageChange::apply`]) that the applier replays on a fresh read after a conflict;
//! - when a job is deleted, its owner reference is removed from its entries at once (upstream
//!   waited for the NodeImage controller to notice);
//! - the random spreads upstream adds to tag TTLs and the random suffix of copied secrets are
//!   derived from a hash of the job's UID and the node or secret name, so plans are
//!   deterministic.

pub mod admission;
mod index;
mod job;
mod list;
mod node_image;
mod plan;
mod puller;
mod secrets;
mod select;

#[cfg(test)]
mod tests;

use jiff::{SignedDuration, Timestamp};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;

pub use index::{TagOwnerIndex, jobs_to_wake, owners_on};
pub use job::{
    JobInput, JobPlan, NodeImageChange, TagOp, job_owner_ref, plan_job, tag_pull_policy,
};
pub use list::{ListJobPlan, plan_list_job, template_hash};
pub use node_image::{NodeImagePlan, NodeImageUpdate, node_image_for, plan_node_image};
pub use plan::{IMAGE_LIST_PULL_JOB, IMAGE_PULL_JOB, NODE_IMAGE};
pub use puller::{
    PullOutcome, PullPlan, PullTask, PullerLimits, PullerState, TagWork, TagWorkPhase, plan_pulls,
    record_outcome,
};
pub use secrets::{SecretPlan, plan_pull_secrets};
pub use select::{PodPlacement, pod_selector_jobs_to_wake, select_nodes};

/// Settings shared by the image controllers (manager flags).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ImagePullConfig {
    /// `--default-ttlseconds-for-always-nodeimage`: added to the TTL of tags of jobs with
    /// completion policy Always (default 300).
    pub default_ttl_seconds_for_always_nodeimage: i32,
    /// `--nodeimage-creation-delay`: how long a node must have been ready before its
    /// NodeImage is created (default 30 s).
    pub node_image_creation_delay: SignedDuration,
    /// The namespace pull secrets are copied into (`KRUISE_DAEMON_CONFIG_NS`, default
    /// `kruise-daemon-config`).
    pub daemon_config_namespace: String,
}

impl Default for ImagePullConfig {
    fn default() -> Self {
        ImagePullConfig {
            default_ttl_seconds_for_always_nodeimage: 300,
            node_image_creation_delay: SignedDuration::from_secs(30),
            daemon_config_namespace:
                kruise_api::well_known::config::DEFAULT_DAEMON_CONFIG_NAMESPACE.to_owned(),
        }
    }
}

/// The finalizer the ImagePullJob controller holds while the job's secrets are copied.
pub const PROTECTION_FINALIZER: &str = "apps.kruise.io/deletion-protection";
/// Default seconds one pull attempt may take.
pub const DEFAULT_PULL_TIMEOUT_SECONDS: i32 = 600;
/// Default retries of a pull.
pub const DEFAULT_BACKOFF_LIMIT: i32 = 3;
/// `ReferenceObject.mode` of a secret copied for a batch of jobs.
pub const REFERENCE_MODE_BATCH: &str = "batch";

/// Why a job cannot be planned.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ImagePullError {
    /// `spec.image` does not parse.
    #[error("invalid image {image}: {source}")]
    InvalidImage {
        /// The image.
        image: String,
        /// Why.
        source: crate::image::ImageRefError,
    },
    /// A selector does not parse.
    #[error("parse {field} error: {message}")]
    InvalidSelector {
        /// `selector` or `podSelector`.
        field: &'static str,
        /// Why.
        message: String,
    },
}

/// `now`, truncated to whole seconds as `metav1.Time` stores it.
fn time(now: Timestamp) -> Time {
    Time(Timestamp::from_second(now.as_second()).unwrap_or(now))
}

/// A deterministic spread in `[0, range)` seconds from `seed` (FNV-1a).
fn spread(seed: &str, range: i32) -> i32 {
    if range <= 0 {
        return 0;
    }
    let hash = crate::revision::hash::fnv1a_32(seed.as_bytes());
    i32::try_from(hash % range.unsigned_abs()).unwrap_or(0)
}

/// Keeps the earliest positive requeue.
fn merge_requeue(slot: &mut Option<SignedDuration>, after: SignedDuration) {
    if after > SignedDuration::ZERO {
        *slot = Some(slot.map_or(after, |r| r.min(after)));
    }
}
