//! The ImagePullJob controller.

use std::collections::BTreeSet;

use jiff::{SignedDuration, Timestamp};
use k8s_openapi::api::core::v1::ObjectReference;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;
use kruise_api::apps::v1beta1::{
    CompletionPolicyType, ImagePullJob, ImagePullJobStatus, ImagePullPhase, ImagePullPolicy,
    ImageTagPullPolicy, ImageTagSpec, NodeImage, ReferenceObject, SandboxConfig,
};
use serde::Serialize;

use super::{
    DEFAULT_BACKOFF_LIMIT, DEFAULT_PULL_TIMEOUT_SECONDS, ImagePullConfig, ImagePullError,
    PROTECTION_FINALIZER, merge_requeue, spread, time,
};

/// TTL of tags of jobs that never complete (a day, spread by ±10 minutes).
const TTL_SECONDS_FOR_NEVER: i32 = 24 * 3600;
/// Smallest `activeDeadlineSeconds` of a tag of a job that never completes.
const ACTIVE_DEADLINE_SECONDS_FOR_NEVER: i64 = 1800;
/// Smallest requeue while waiting for a deadline.
const MIN_REQUEUE: SignedDuration = SignedDuration::from_secs(1);

/// Everything the controller needs for one job.
pub struct JobInput<'a> {
    /// The job.
    pub job: &'a ImagePullJob,
    /// The NodeImages it selects ([`super::select_nodes`]).
    pub nodes: &'a [String],
    /// Looks a NodeImage up by name (a reflector store's `get` fits).
    pub node_image: &'a dyn Fn(&str) -> Option<&'a NodeImage>,
    /// The NodeImages that carry an entry of this job ([`super::TagOwnerIndex::nodes_of`]);
    /// used when the job is deleted.
    pub owned_nodes: &'a [String],
    /// References to the job's pull secrets as the daemon reads them
    /// ([`super::SecretPlan::refs`]).
    pub secrets: &'a [ReferenceObject],
    /// Manager settings.
    pub config: &'a ImagePullConfig,
    /// The clock.
    pub now: Timestamp,
}

/// A change to one NodeImage's spec, as an operation: [`JobPlan::to_plan`] applies it to the
/// NodeImage as read and writes the difference, guarded by the version it read; after a
/// conflict the job is planned again on the newer NodeImage, so that concurrent jobs never
/// overwrite each other's entries.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct NodeImageChange {
    /// The NodeImage (node) name.
    pub node: String,
    /// The image name (the key of `spec.images`).
    pub image: String,
    /// What to do with the image's tags.
    pub op: TagOp,
}

/// What a job does to a tag entry.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(tag = "op", rename_all = "camelCase")]
#[non_exhaustive]
pub enum TagOp {
    /// Make the job an owner of the tag: join an existing entry, or add one; add the secrets.
    Claim {
        /// The tag.
        tag: String,
        /// The job.
        owner: Box<ObjectReference>,
        /// Limits of a new entry.
        pull_policy: ImageTagPullPolicy,
        /// Always or IfNotPresent.
        #[serde(skip_serializing_if = "Option::is_none")]
        image_pull_policy: Option<ImagePullPolicy>,
        /// Sandbox metadata for the pull.
        #[serde(skip_serializing_if = "Option::is_none")]
        sandbox_config: Option<SandboxConfig>,
        /// Pull secrets to list on the image.
        secrets: Vec<ReferenceObject>,
        /// `createdAt` of a new (or restarted) entry.
        created_at: Time,
    },
    /// Remove the job from the tag's owners (and the tag, when no owner is left).
    Release {
        /// The tag.
        tag: String,
        /// The job's UID.
        owner_uid: String,
    },
}

impl NodeImageChange {
    /// Applies the change to `node_image`; whether anything changed. Idempotent.
    pub fn apply(&self, node_image: &mut NodeImage) -> bool {
        match &self.op {
            TagOp::Claim {
                tag,
                owner,
                pull_policy,
                image_pull_policy,
                sandbox_config,
                secrets,
                created_at,
            } => {
                let last_failed = node_image
                    .status
                    .as_ref()
                    .and_then(|s| s.image_statuses.get(&self.image))
                    .map(|s| s.tags.as_slice())
                    .unwrap_or(&[]);
                let status_of = |t: &str| last_failed.iter().find(|s| s.tag == t).cloned();
                let spec = node_image.spec.images.entry(self.image.clone()).or_default();
                let mut changed = false;
                if sandbox_config.is_some() && spec.sandbox_config != *sandbox_config {
                    spec.sandbox_config = sandbox_config.clone();
                    changed = true;
                }
                for secret in secrets {
                    if !contains_secret(&spec.pull_secrets, secret) {
                        spec.pull_secrets.push(secret.clone());
                        changed = true;
                    }
                }
                match spec.tags.iter_mut().find(|t| t.tag == *tag) {
                    Some(entry) if entry.owner_references.iter().any(|o| o.uid == owner.uid) => {}
                    Some(entry) => {
                        let status = status_of(tag).filter(|s| s.version == entry.version);
                        let failed =
                            status.as_ref().is_some_and(|s| s.phase == ImagePullPhase::Failed);
                        let always = matches!(image_pull_policy, Some(ImagePullPolicy::Always));
                        if failed || always {
                            entry.version += 1;
                            entry.created_at = Some(created_at.clone());
                            entry.image_pull_policy = image_pull_policy.clone();
                        }
                        entry.owner_references.push(owner.as_ref().clone());
                        changed = true;
                    }
                    None => {
                        let version = status_of(tag).map_or(0, |s| s.version + 1);
                        spec.tags.push(ImageTagSpec {
                            tag: tag.clone(),
                            created_at: Some(created_at.clone()),
                            pull_policy: Some(pull_policy.clone()),
                            owner_references: vec![owner.as_ref().clone()],
                            version,
                            image_pull_policy: image_pull_policy.clone(),
                        });
                        spec.tags.sort_by(|a, b| a.tag.cmp(&b.tag));
                        changed = true;
                    }
                }
                changed
            }
            TagOp::Release { tag, owner_uid } => {
                let Some(spec) = node_image.spec.images.get_mut(&self.image) else {
                    return false;
                };
                let Some(entry) = spec.tags.iter_mut().find(|t| t.tag == *tag) else {
                    return false;
                };
                let before = entry.owner_references.len();
                entry.owner_references.retain(|o| o.uid.as_deref() != Some(owner_uid));
                if entry.owner_references.len() == before {
                    return false;
                }
                if entry.owner_references.is_empty() {
                    spec.tags.retain(|t| t.tag != *tag);
                }
                if spec.tags.is_empty() {
                    node_image.spec.images.remove(&self.image);
                }
                true
            }
        }
    }
}

/// What the controller asks for.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct JobPlan {
    /// Add [`PROTECTION_FINALIZER`] to the job first.
    pub add_finalizer: bool,
    /// Remove [`PROTECTION_FINALIZER`] (after the secrets are released).
    pub remove_finalizer: bool,
    /// NodeImage changes, by node.
    pub node_image_changes: Vec<NodeImageChange>,
    /// The new status, when it changes.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub status: Option<ImagePullJobStatus>,
    /// Delete the job (`ttlSecondsAfterFinished` passed).
    pub delete: bool,
    /// When to look again.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub requeue_after: Option<SignedDuration>,
}

/// The job as an owner reference on NodeImage tags.
pub fn job_owner_ref(job: &ImagePullJob) -> ObjectReference {
    ObjectReference {
        api_version: Some("apps.kruise.io/v1beta1".to_owned()),
        kind: Some("ImagePullJob".to_owned()),
        name: job.metadata.name.clone(),
        namespace: job.metadata.namespace.clone(),
        uid: job.metadata.uid.clone(),
        ..Default::default()
    }
}

/// The limits of the job's tag on `node` (upstream's `getImagePullPolicy`): the job's timeout
/// and retries; for completion policy Never, a TTL of a day (±10 minutes) and a deadline of at
/// least 1800 s; for Always, the job's deadline and a TTL of `ttlSecondsAfterFinished` (else
/// the deadline, else timeout × retries) plus `--default-ttlseconds-for-always-nodeimage` and
/// up to 300 s of spread.
pub fn tag_pull_policy(
    job: &ImagePullJob,
    node: &str,
    config: &ImagePullConfig,
) -> ImageTagPullPolicy {
    let template = &job.spec.template;
    let pull = template.pull_policy.as_ref();
    let timeout = pull.and_then(|p| p.timeout_seconds);
    let backoff = pull.and_then(|p| p.backoff_limit);
    let completion = &template.completion_policy;
    let seed = format!("{}/{node}", job.metadata.uid.as_deref().unwrap_or_default());
    let mut policy = ImageTagPullPolicy {
        timeout_seconds: timeout,
        backoff_limit: backoff,
        ..Default::default()
    };
    if never(job) {
        policy.ttl_seconds_after_finished = Some(TTL_SECONDS_FOR_NEVER + spread(&seed, 1200) - 600);
        policy.active_deadline_seconds = Some(
            timeout
                .map(i64::from)
                .filter(|t| *t > ACTIVE_DEADLINE_SECONDS_FOR_NEVER)
                .unwrap_or(ACTIVE_DEADLINE_SECONDS_FOR_NEVER),
        );
    } else {
        let base = completion
            .ttl_seconds_after_finished
            .or_else(|| {
                completion.active_deadline_seconds.map(|d| i32::try_from(d).unwrap_or(i32::MAX))
            })
            .unwrap_or_else(|| {
                timeout
                    .unwrap_or(DEFAULT_PULL_TIMEOUT_SECONDS)
                    .saturating_mul(backoff.unwrap_or(DEFAULT_BACKOFF_LIMIT))
            });
        policy.ttl_seconds_after_finished = Some(
            base.saturating_add(config.default_ttl_seconds_for_always_nodeimage)
                .saturating_add(spread(&seed, 300)),
        );
        policy.active_deadline_seconds = completion.active_deadline_seconds;
    }
    policy
}

fn never(job: &ImagePullJob) -> bool {
    matches!(job.spec.template.completion_policy.type_, Some(CompletionPolicyType::Never))
}

fn parallelism(job: &ImagePullJob) -> usize {
    match &job.spec.template.parallelism {
        None => 1,
        Some(IntOrString::Int(n)) => usize::try_from(*n).unwrap_or(0),
        Some(IntOrString::String(s)) => s.parse::<usize>().unwrap_or(1),
    }
}

fn contains_secret(list: &[ReferenceObject], secret: &ReferenceObject) -> bool {
    list.iter().any(|s| s.namespace == secret.namespace && s.name == secret.name)
}

/// Where the job stands on one node.
enum NodeState {
    NotSynced,
    Pulling,
    Succeeded,
    Failed,
}

/// The controller's plan for one job (upstream's `Reconcile`).
///
/// - A deleted job releases its entries on the NodeImages that carry them and drops its
///   finalizer; a completed one drops its finalizer and is deleted
///   `ttlSecondsAfterFinished` after completion.
/// - Each selected node is Succeeded or Failed (the node reports that phase for the entry's
///   current version), pulling (the job owns the entry and the node has not finished), or not
///   synced (no entry owned by the job, or a pull secret missing from the image).
/// - Completion policy Always: once `activeDeadlineSeconds` have passed since the start,
///   the job completes with every unfinished node failed ("job exceeds
///   activeDeadlineSeconds"); it completes when every node finished. Never: it never
///   completes.
/// - Up to `parallelism − pulling` not-synced nodes (by name) get a [`TagOp::Claim`], so
///   at most `parallelism` nodes pull for the job at once.
///
/// Cost: O(selected nodes × tags of the image per node).
pub fn plan_job(input: &JobInput<'_>) -> Result<JobPlan, ImagePullError> {
    let job = input.job;
    let now = input.now;
    let mut plan = JobPlan::default();
    let finalizers = job.metadata.finalizers.as_deref().unwrap_or(&[]);
    let has_finalizer = finalizers.iter().any(|f| f == PROTECTION_FINALIZER);
    let (image, tag) = crate::image::name_tag(&job.spec.image)
        .map_err(|source| ImagePullError::InvalidImage { image: job.spec.image.clone(), source })?;
    let uid = job.metadata.uid.clone().unwrap_or_default();
    let status = job.status.clone().unwrap_or_default();

    if job.metadata.deletion_timestamp.is_some() {
        for node in input.owned_nodes {
            plan.node_image_changes.push(NodeImageChange {
                node: node.clone(),
                image: image.clone(),
                op: TagOp::Release { tag: tag.clone(), owner_uid: uid.clone() },
            });
        }
        plan.remove_finalizer = has_finalizer;
        return Ok(plan);
    }
    if let Some(completed) = &status.completion_time {
        plan.remove_finalizer = has_finalizer;
        if let Some(ttl) = job.spec.template.completion_policy.ttl_seconds_after_finished {
            let left = SignedDuration::from_secs(i64::from(ttl)) - now.duration_since(completed.0);
            if left <= SignedDuration::ZERO {
                plan.delete = true;
            } else {
                plan.requeue_after = Some(left);
            }
        }
        return Ok(plan);
    }
    plan.add_finalizer = !has_finalizer;

    let start = status.start_time.clone().unwrap_or_else(|| time(now));
    let mut new_status =
        ImagePullJobStatus { start_time: Some(start.clone()), ..Default::default() };
    let mut pulling = Vec::new();
    let mut succeeded = Vec::new();
    let mut failed = Vec::new();
    let mut not_synced = BTreeSet::new();
    let mut desired = 0;
    for node in input.nodes {
        let Some(ni) = (input.node_image)(node) else {
            continue;
        };
        desired += 1;
        match node_state(ni, &image, &tag, &uid, input.secrets) {
            (NodeState::NotSynced, _) => {
                not_synced.insert(node.clone());
            }
            (state, secrets_missing) => {
                if secrets_missing {
                    not_synced.insert(node.clone());
                }
                match state {
                    NodeState::Succeeded => succeeded.push(node.clone()),
                    NodeState::Failed => failed.push(node.clone()),
                    _ => pulling.push(node.clone()),
                }
            }
        }
    }
    new_status.desired = desired;
    let finished = succeeded.len() + failed.len();
    let completion = &job.spec.template.completion_policy;
    let deadline = completion.active_deadline_seconds.filter(|_| !never(job));
    if let Some(deadline) = deadline
        && usize::try_from(desired).unwrap_or(0) != finished
    {
        let left = SignedDuration::from_secs(deadline) - now.duration_since(start.0);
        if left <= SignedDuration::ZERO {
            new_status.completion_time = Some(time(now));
            new_status.succeeded = count(&succeeded);
            failed.extend(pulling);
            failed.extend(not_synced);
            failed.sort();
            failed.dedup();
            new_status.failed = count(&failed);
            new_status.failed_nodes = failed;
            new_status.message = "job exceeds activeDeadlineSeconds".to_owned();
            plan.status = (job.status.as_ref() != Some(&new_status)).then_some(new_status);
            return Ok(plan);
        }
        merge_requeue(&mut plan.requeue_after, left.max(MIN_REQUEUE));
    }
    new_status.active = count(&pulling);
    new_status.succeeded = count(&succeeded);
    new_status.failed = count(&failed);
    failed.sort();
    new_status.failed_nodes = failed;
    if !never(job) && new_status.desired - new_status.succeeded - new_status.failed == 0 {
        new_status.completion_time = Some(time(now));
    }
    new_status.message = status_message(&new_status);

    let budget = parallelism(job).saturating_sub(pulling.len());
    if new_status.completion_time.is_none() {
        let owner = job_owner_ref(job);
        for node in not_synced.into_iter().take(budget) {
            plan.node_image_changes.push(NodeImageChange {
                node: node.clone(),
                image: image.clone(),
                op: TagOp::Claim {
                    tag: tag.clone(),
                    owner: Box::new(owner.clone()),
                    pull_policy: tag_pull_policy(job, &node, input.config),
                    image_pull_policy: job.spec.template.image_pull_policy.clone(),
                    sandbox_config: job.spec.template.sandbox_config.clone(),
                    secrets: input.secrets.to_vec(),
                    created_at: time(now),
                },
            });
        }
    }
    plan.status = (job.status.as_ref() != Some(&new_status)).then_some(new_status);
    Ok(plan)
}

/// The job's state on one NodeImage, and whether a secret is missing from the image.
fn node_state(
    ni: &NodeImage,
    image: &str,
    tag: &str,
    uid: &str,
    secrets: &[ReferenceObject],
) -> (NodeState, bool) {
    let Some(spec) = ni.spec.images.get(image) else {
        return (NodeState::NotSynced, false);
    };
    let secrets_missing = secrets.iter().any(|s| !contains_secret(&spec.pull_secrets, s));
    let entry = spec
        .tags
        .iter()
        .find(|t| t.tag == tag)
        .filter(|t| t.owner_references.iter().any(|o| o.uid.as_deref() == Some(uid)));
    let Some(entry) = entry else {
        return (NodeState::NotSynced, secrets_missing);
    };
    let tag_status = ni
        .status
        .as_ref()
        .and_then(|s| s.image_statuses.get(image))
        .and_then(|s| s.tags.iter().find(|t| t.tag == tag))
        .filter(|t| t.version == entry.version);
    let state = match tag_status.map(|t| &t.phase) {
        Some(ImagePullPhase::Succeeded) => NodeState::Succeeded,
        Some(ImagePullPhase::Failed) => NodeState::Failed,
        _ => NodeState::Pulling,
    };
    (state, secrets_missing)
}

fn count(nodes: &[String]) -> i32 {
    i32::try_from(nodes.len()).unwrap_or(i32::MAX)
}

/// Upstream's `formatStatusMessage`.
fn status_message(status: &ImagePullJobStatus) -> String {
    if status.completion_time.is_some() {
        return "job has completed".to_owned();
    }
    if status.desired == 0 {
        return "job is running, no progress".to_owned();
    }
    let done = f64::from(status.succeeded + status.failed);
    format!("job is running, progress {:.1}%", 100.0 * done / f64::from(status.desired))
}
