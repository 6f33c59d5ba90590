//! The kruise daemon's image puller: which pulls to run for its node's NodeImage.

use std::collections::BTreeMap;

use jiff::{SignedDuration, Timestamp};
use kruise_api::apps::v1beta1::{
    ImagePullPhase, ImagePullPolicy, ImageStatus, ImageTagStatus, NodeImage, NodeImageStatus,
    ReferenceObject, SandboxConfig, SyncStatus, SyncStatusPhase,
};
use serde::Serialize;

use super::{DEFAULT_BACKOFF_LIMIT, DEFAULT_PULL_TIMEOUT_SECONDS, merge_requeue, time};

/// Longest wait between two attempts.
const MAX_BACKOFF: SignedDuration = SignedDuration::from_secs(30);

/// Node-wide limits of the puller.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct PullerLimits {
    /// `--max-workers-for-pull-image`: most pulls at once; `None` (the flag's -1) for no limit.
    pub max_workers: Option<usize>,
}

/// Where the daemon's work on one tag stands.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(tag = "phase", rename_all = "camelCase")]
#[non_exhaustive]
pub enum TagWorkPhase {
    /// Waiting for a free worker.
    Queued,
    /// An attempt runs since `since`.
    Running {
        /// Start of this attempt.
        since: Timestamp,
    },
    /// The last attempt failed; the next may start at `until`.
    BackingOff {
        /// Earliest start of the next attempt.
        until: Timestamp,
    },
    /// Finished.
    Done {
        /// Succeeded or Failed.
        succeeded: bool,
        /// When.
        at: Timestamp,
    },
}

/// The daemon's memory of one tag's pull (it lives in the daemon, not in the API).
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct TagWork {
    /// The spec `version` this work is for.
    pub version: i64,
    /// The phase.
    pub phase: TagWorkPhase,
    /// When the first attempt started (`None` while queued).
    pub started_at: Option<Timestamp>,
    /// Failed attempts so far.
    pub failures: i32,
    /// Percent done of the current attempt.
    pub progress: i32,
    /// The last error, or the image ID on success.
    pub detail: String,
}

/// The daemon's memory of all pulls, by `image:tag`.
pub type PullerState = BTreeMap<String, TagWork>;

/// A pull to start now.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct PullTask {
    /// Image name (NodeImage key).
    pub image: String,
    /// Tag or digest.
    pub tag: String,
    /// Spec version.
    pub version: i64,
    /// Secrets to authenticate with.
    pub secrets: Vec<ReferenceObject>,
    /// Sandbox metadata for the runtime.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sandbox_config: Option<SandboxConfig>,
    /// How long this attempt may take (the timeout, cut to what is left of the deadline).
    pub timeout: SignedDuration,
    /// Attempt number, from 0.
    pub attempt: i32,
}

/// What the puller does now.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct PullPlan {
    /// Pulls to start.
    pub start: Vec<PullTask>,
    /// Running pulls to cancel (`image:tag`): removed from the spec, new version, timed out or
    /// past the deadline.
    pub cancel: Vec<String>,
    /// The NodeImage status to report.
    pub status: NodeImageStatus,
    /// The daemon's new memory (keep it for the next plan and for [`record_outcome`]).
    pub state: PullerState,
    /// When to look again.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub requeue_after: Option<SignedDuration>,
}

/// How a pull attempt ended, or how far it is.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum PullOutcome {
    /// Still pulling, this percent done.
    Progress(i32),
    /// Pulled; the image's ID (digest reference).
    Succeeded(String),
    /// Failed with this error.
    Failed(String),
}

/// Records what a pull of `key` (`image:tag`) for `version` reported. Reports for another
/// version are ignored.
pub fn record_outcome(
    state: &mut PullerState,
    key: &str,
    version: i64,
    outcome: PullOutcome,
    now: Timestamp,
) {
    let Some(work) = state.get_mut(key).filter(|w| w.version == version) else {
        return;
    };
    if !matches!(work.phase, TagWorkPhase::Running { .. }) {
        return;
    }
    match outcome {
        PullOutcome::Progress(p) => work.progress = p,
        PullOutcome::Succeeded(image_id) => {
            work.progress = 100;
            work.detail = image_id;
            work.phase = TagWorkPhase::Done { succeeded: true, at: now };
        }
        PullOutcome::Failed(error) => fail_attempt(work, error, now),
    }
}

fn fail_attempt(work: &mut TagWork, error: String, now: Timestamp) {
    work.failures += 1;
    work.detail = error;
    let step = SignedDuration::from_secs(1i64 << (work.failures - 1).clamp(0, 5));
    work.phase = TagWorkPhase::BackingOff { until: now + step.min(MAX_BACKOFF) };
}

/// The puller's plan for its node's NodeImage (upstream's worker pools and workers).
///
/// For each tag of the spec, by image and tag:
///
/// - a status for its version with a completion time is kept as it is;
/// - new work: with `IfNotPresent` (the default) and the image already in `runtime_images`
///   (references as the runtime lists them), Succeeded at once with progress 100; otherwise
///   a pull starts when a worker is free ([`PullerLimits::max_workers`]), else Waiting;
/// - a running attempt past its timeout (`pullPolicy.timeoutSeconds`, default 600) is
///   cancelled and counts as a failure;
/// - after a failure the next attempt waits 1 s, doubling up to 30 s; after `backoffLimit`
///   retries (default 3) the tag is Failed with the last error;
/// - past `activeDeadlineSeconds` from the first attempt, the tag is Failed ("pulling
///   exceeds the activeDeadlineSeconds").
///
/// Work for tags no longer in the spec, or for an older version, is cancelled and forgotten.
///
/// `firstSyncStatus` is set once, the first time every tag of a non-empty spec has finished:
/// when the node's images first arrived (upstream declares the field and never sets it).
/// Succeeded when all succeeded; else Failed, naming the failed tags.
pub fn plan_pulls(
    node_image: &NodeImage,
    runtime_images: &[String],
    state: &PullerState,
    limits: &PullerLimits,
    now: Timestamp,
) -> PullPlan {
    let mut plan = PullPlan::default();
    let old_status = node_image.status.clone().unwrap_or_default();
    let present: Vec<(String, String)> =
        runtime_images.iter().filter_map(|r| crate::image::name_tag(r).ok()).collect();
    let mut running =
        state.values().filter(|w| matches!(w.phase, TagWorkPhase::Running { .. })).count();
    let mut requeue = None;
    let mut wanted = BTreeMap::new();
    for (image, spec) in &node_image.spec.images {
        let old_tags =
            old_status.image_statuses.get(image).map(|s| s.tags.as_slice()).unwrap_or(&[]);
        let mut tags = Vec::new();
        for tag in &spec.tags {
            let key = format!("{image}:{}", tag.tag);
            wanted.insert(key.clone(), tag.version);
            if let Some(done) = old_tags.iter().find(|s| {
                s.tag == tag.tag && s.version == tag.version && s.completion_time.is_some()
            }) {
                tags.push(done.clone());
                continue;
            }
            let policy = tag.pull_policy.clone().unwrap_or_default();
            let timeout = SignedDuration::from_secs(i64::from(
                policy.timeout_seconds.unwrap_or(DEFAULT_PULL_TIMEOUT_SECONDS),
            ));
            let backoff_limit =
                policy.backoff_limit.filter(|b| *b >= 0).unwrap_or(DEFAULT_BACKOFF_LIMIT);
            let deadline = policy.active_deadline_seconds.map(SignedDuration::from_secs);
            let mut work = match state.get(&key).filter(|w| w.version == tag.version) {
                Some(work) => work.clone(),
                None => {
                    let always = matches!(tag.image_pull_policy, Some(ImagePullPolicy::Always));
                    let fresh = TagWork {
                        version: tag.version,
                        phase: TagWorkPhase::Queued,
                        started_at: None,
                        failures: 0,
                        progress: 0,
                        detail: String::new(),
                    };
                    if !always && present.iter().any(|(n, t)| n == image && *t == tag.tag) {
                        TagWork {
                            phase: TagWorkPhase::Done { succeeded: true, at: now },
                            started_at: Some(now),
                            progress: 100,
                            ..fresh
                        }
                    } else {
                        fresh
                    }
                }
            };
            if let TagWorkPhase::Running { since } = work.phase
                && now.duration_since(since) >= timeout
            {
                plan.cancel.push(key.clone());
                running = running.saturating_sub(1);
                let message = format!("pulling image {key} is canceled");
                fail_attempt(&mut work, message, now);
            }
            let past_deadline = |w: &TagWork| {
                deadline.zip(w.started_at).is_some_and(|(d, s)| now.duration_since(s) >= d)
            };
            if !matches!(work.phase, TagWorkPhase::Done { .. }) && past_deadline(&work) {
                if matches!(work.phase, TagWorkPhase::Running { .. }) {
                    plan.cancel.push(key.clone());
                    running = running.saturating_sub(1);
                }
                work.detail = "pulling exceeds the activeDeadlineSeconds".to_owned();
                work.phase = TagWorkPhase::Done { succeeded: false, at: now };
            }
            if let TagWorkPhase::BackingOff { until } = work.phase {
                if work.failures > backoff_limit {
                    work.phase = TagWorkPhase::Done { succeeded: false, at: now };
                } else if until > now {
                    merge_requeue(&mut requeue, until.duration_since(now));
                } else {
                    work.phase = TagWorkPhase::Queued;
                }
            }
            if work.phase == TagWorkPhase::Queued && limits.max_workers.is_none_or(|m| running < m)
            {
                running += 1;
                let started = *work.started_at.get_or_insert(now);
                let left =
                    deadline.map_or(timeout, |d| (d - now.duration_since(started)).min(timeout));
                work.phase = TagWorkPhase::Running { since: now };
                work.progress = 0;
                plan.start.push(PullTask {
                    image: image.clone(),
                    tag: tag.tag.clone(),
                    version: tag.version,
                    secrets: spec.pull_secrets.clone(),
                    sandbox_config: spec.sandbox_config.clone(),
                    timeout: left,
                    attempt: work.failures,
                });
            }
            if let TagWorkPhase::Running { since } = work.phase {
                merge_requeue(&mut requeue, timeout - now.duration_since(since));
                if let Some((d, s)) = deadline.zip(work.started_at) {
                    merge_requeue(&mut requeue, d - now.duration_since(s));
                }
            }
            tags.push(tag_status(&tag.tag, &work, old_tags));
            plan.state.insert(key, work);
        }
        if !tags.is_empty() {
            plan.status.image_statuses.insert(image.clone(), ImageStatus { tags });
        }
    }
    for (key, work) in state {
        if matches!(work.phase, TagWorkPhase::Running { .. })
            && wanted.get(key) != Some(&work.version)
        {
            plan.cancel.push(key.clone());
        }
    }
    plan.cancel.sort();
    plan.cancel.dedup();
    let all = plan.status.image_statuses.values().flat_map(|s| &s.tags);
    for t in all {
        plan.status.desired += 1;
        match t.phase {
            ImagePullPhase::Succeeded => plan.status.succeeded += 1,
            ImagePullPhase::Failed => plan.status.failed += 1,
            ImagePullPhase::Pulling => plan.status.pulling += 1,
            ImagePullPhase::Waiting => plan.status.waiting += 1,
            _ => {}
        }
    }
    plan.status.first_sync_status =
        old_status.first_sync_status.or_else(|| first_sync(&plan.status, now));
    plan.requeue_after = requeue;
    plan
}

fn tag_status(tag: &str, work: &TagWork, old: &[ImageTagStatus]) -> ImageTagStatus {
    let start_time = work.started_at.map(time);
    let mut status = ImageTagStatus {
        tag: tag.to_owned(),
        version: work.version,
        start_time,
        ..Default::default()
    };
    match &work.phase {
        TagWorkPhase::Queued => {
            status.phase = ImagePullPhase::Waiting;
            status.start_time = None;
        }
        TagWorkPhase::Running { .. } | TagWorkPhase::BackingOff { .. } => {
            status.phase = ImagePullPhase::Pulling;
            status.progress = work.progress;
        }
        TagWorkPhase::Done { succeeded: true, at } => {
            status.phase = ImagePullPhase::Succeeded;
            status.progress = 100;
            status.completion_time = Some(time(*at));
            status.image_id = work.detail.clone();
        }
        TagWorkPhase::Done { succeeded: false, at } => {
            status.phase = ImagePullPhase::Failed;
            status.progress = work.progress;
            status.completion_time = Some(time(*at));
            status.message = work.detail.clone();
        }
    }
    if status.phase == ImagePullPhase::Pulling
        && let Some(prev) = old.iter().find(|s| s.tag == tag && s.version == work.version)
    {
        status.start_time = status.start_time.or_else(|| prev.start_time.clone());
    }
    status
}

/// The first sync's outcome, once every tag of `status` has finished (none pulling or
/// waiting), for a spec with at least one tag.
fn first_sync(status: &NodeImageStatus, now: Timestamp) -> Option<SyncStatus> {
    if status.desired == 0 || status.pulling > 0 || status.waiting > 0 {
        return None;
    }
    let failed: Vec<String> = status
        .image_statuses
        .iter()
        .flat_map(|(image, s)| {
            s.tags
                .iter()
                .filter(|t| t.phase == ImagePullPhase::Failed)
                .map(move |t| format!("{image}:{}", t.tag))
        })
        .collect();
    let (phase, message) = if failed.is_empty() {
        (SyncStatusPhase::Succeeded, String::new())
    } else {
        (
            SyncStatusPhase::Failed,
            format!("{} of {} images failed: {}", failed.len(), status.desired, failed.join(", ")),
        )
    };
    Some(SyncStatus { sync_at: Some(time(now)), status: Some(phase), message })
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn node_image(tags: &[(&str, &str)]) -> NodeImage {
        let mut images = serde_json::Map::new();
        for (image, tag) in tags {
            let entry =
                images.entry(image.to_string()).or_insert_with(|| serde_json::json!({"tags": []}));
            entry["tags"]
                .as_array_mut()
                .unwrap()
                .push(serde_json::json!({"tag": tag, "version": 1}));
        }
        serde_json::from_value(serde_json::json!({
            "metadata": {"name": "node-1"}, "spec": {"images": images}}))
        .unwrap()
    }

    /// Steps the puller: plan, then each started pull ends as `ends` says, until nothing runs.
    fn settle(mut ni: NodeImage, ends: impl Fn(&str) -> PullOutcome) -> Vec<Option<SyncStatus>> {
        let mut state = PullerState::new();
        let mut seen = Vec::new();
        let mut now: Timestamp = "2026-01-01T00:00:00Z".parse().unwrap();
        let limits = PullerLimits { max_workers: Some(1) };
        for _ in 0..50 {
            let plan = plan_pulls(&ni, &[], &state, &limits, now);
            seen.push(plan.status.first_sync_status.clone());
            state = plan.state;
            ni.status = Some(plan.status);
            if plan.start.is_empty() && plan.requeue_after.is_none() {
                break;
            }
            for task in plan.start {
                let key = format!("{}:{}", task.image, task.tag);
                record_outcome(&mut state, &key, task.version, ends(&key), now);
            }
            now += SignedDuration::from_secs(40);
        }
        seen
    }

    #[test]
    fn first_sync_is_set_once_every_tag_has_finished_and_kept() {
        let seen = settle(node_image(&[("nginx", "1"), ("redis", "7")]), |_| {
            PullOutcome::Succeeded("sha256:x".into())
        });
        let first = seen.iter().position(Option::is_some).expect("a first sync");
        assert!(first >= 1, "not before the pulls finished: {seen:?}");
        let sync = seen[first].clone().unwrap();
        assert_eq!(sync.status, Some(SyncStatusPhase::Succeeded));
        assert!(seen[first..].iter().all(|s| s.as_ref() == Some(&sync)), "kept as it was");
    }

    #[test]
    fn a_failed_tag_makes_the_first_sync_failed_and_named() {
        let seen = settle(node_image(&[("nginx", "1"), ("broken", "x")]), |key| {
            if key.starts_with("broken") {
                PullOutcome::Failed("manifest unknown".into())
            } else {
                PullOutcome::Succeeded("sha256:x".into())
            }
        });
        let sync = seen.into_iter().flatten().next().expect("a first sync");
        assert_eq!(sync.status, Some(SyncStatusPhase::Failed));
        assert_eq!(sync.message, "1 of 2 images failed: broken:x");
    }
}
