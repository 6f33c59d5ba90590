//! The Job controller (and the TTL-after-finished controller), as kube-controller-manager
//! runs them.
//!
//! One round of a Job:
//!
//! 1. orphan pods its selector matches are adopted, and pods it controls that no longer match
//!    are released;
//! 2. finished pods (and pods deleted before they finished, which count as failed) still
//!    holding the `batch.kubernetes.io/job-tracking` finalizer are listed in
//!    `status.uncountedTerminatedPods`, their finalizers removed, then moved to the
//!    `succeeded` and `failed` counts, so that a crash between the steps never counts a pod
//!    twice or loses one;
//! 3. a Job whose failures (failed pods, and for `restartPolicy: OnFailure` the restarts of
//!    its running pods) exceed `backoffLimit`, or that ran past `activeDeadlineSeconds`, gets
//!    the `FailureTarget` condition, its running pods are deleted, and once none is left it
//!    gets `Failed` (reasons `BackoffLimitExceeded` and `DeadlineExceeded`). One that reached
//!    its completions gets `SuccessCriteriaMet`, then `Complete` with `completionTime`;
//! 4. otherwise it keeps `min(parallelism, completions - succeeded)` pods running (named
//!    `<job>-<random>`, or `<job>-<index>-<random>` with the index annotation, label and
//!    hostname in `Indexed` mode), waiting out the pod-failure back-off (10 s doubling per
//!    failure since the last success, at most 10 min) before replacing failed pods;
//!    `suspend` deletes its running pods and sets the `Suspended` condition;
//! 5. its status (`active`, `ready`, `terminating`, `succeeded`, `failed`, `startTime`,
//!    `completionTime`, `completedIndexes`, conditions) is written.
//!
//! A finished Job with `ttlSecondsAfterFinished` is deleted (foreground propagation) that
//! long after its `Complete` or `Failed` condition, as the TTL-after-finished controller does.
//!
//! Not done: `podFailurePolicy`, `successPolicy`, `backoffLimitPerIndex`, `managedBy`,
//! `podReplacementPolicy: Failed` (pods are replaced once terminating, the default), and
//! Events.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;
use std::time::Duration;

use jiff::Timestamp;
use k8s_openapi::api::batch::v1::Job;
use k8s_openapi::api::core::v1::Pod;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, Time};
use kube::api::{Api, DeleteParams, Patch, PatchParams, PostParams, PropagationPolicy};
use kube::runtime::reflector::{ObjectRef, Store};
use kube::{Client, ResourceExt as _};
use serde_json::{Value, json};
use tokio::sync::mpsc::UnboundedReceiver;

use super::{Error, api_error};

/// The finalizer that keeps a Job's pod until the Job has counted it.
pub const TRACKING_FINALIZER: &str = "batch.kubernetes.io/job-tracking";
/// The annotation and label with a pod's completion index (Indexed Jobs).
pub const COMPLETION_INDEX: &str = "batch.kubernetes.io/job-completion-index";
/// The first pod-failure back-off; it doubles per failure.
const FAILURE_BACKOFF: Duration = Duration::from_secs(10);
/// The longest pod-failure back-off.
const MAX_FAILURE_BACKOFF: Duration = Duration::from_secs(600);

struct Context {
    client: Client,
    pods: Store<Pod>,
    jobs: Store<Job>,
}

type Key = ObjectRef<Job>;

/// Runs the controller until the task is aborted.
pub(crate) async fn run(
    client: Client,
    (pods, pod_events): (Store<Pod>, UnboundedReceiver<Pod>),
    (jobs, job_events): (Store<Job>, UnboundedReceiver<Job>),
) {
    let (queue, keys) = tokio::sync::mpsc::unbounded_channel::<Key>();
    let context = Arc::new(Context { client, pods: pods.clone(), jobs: jobs.clone() });
    let pod_context = context.clone();
    let owners = move |pod: &Pod| {
        let owner = controller_job(pod);
        release_if_orphaned(&pod_context, pod, owner.as_ref());
        super::owner_or_adopters(&pod_context.jobs, &pod.metadata, owner, |job, meta| {
            selects(job, meta)
        })
    };
    let feeds = futures::future::join(
        super::queue_own(job_events, queue.clone()),
        super::queue_owners(pod_events, queue.clone(), controller_job, owners),
    );
    futures::future::join(feeds, super::run_rounds(jobs, queue, keys, pods, context, reconcile))
        .await;
}

/// A pod whose Job is gone keeps no tracking finalizer (kube-controller-manager's orphan pod
/// clean-up): removes it in the background.
fn release_if_orphaned(context: &Context, pod: &Pod, owner: Option<&Key>) {
    let job_gone = owner.is_none_or(|key| {
        context
            .jobs
            .get(key)
            .is_none_or(|job| !super::controlled_by(&pod.metadata, &job.uid().unwrap_or_default()))
    });
    if job_gone && has_tracking_finalizer(pod) {
        let api: Api<Pod> =
            Api::namespaced(context.client.clone(), &pod.namespace().unwrap_or_default());
        let pod = pod.clone();
        tokio::spawn(async move {
            let _ = remove_finalizer(&api, &pod).await;
        });
    }
}

fn controller_job(pod: &Pod) -> Option<Key> {
    super::controller_of(&pod.metadata, "batch/v1", "Job")
}

fn selects(job: &Job, meta: &ObjectMeta) -> bool {
    super::selector_matches(job.spec.as_ref().and_then(|s| s.selector.as_ref()), meta)
}

fn has_tracking_finalizer(pod: &Pod) -> bool {
    pod.finalizers().iter().any(|f| f == TRACKING_FINALIZER)
}

/// Removes the tracking finalizer, guarded by the pod's resourceVersion.
async fn remove_finalizer(pods: &Api<Pod>, pod: &Pod) -> Result<(), kube::Error> {
    let rest: Vec<&String> = pod.finalizers().iter().filter(|f| *f != TRACKING_FINALIZER).collect();
    let patch = json!({"metadata": {
        "finalizers": if rest.is_empty() { Value::Null } else { json!(rest) },
        "resourceVersion": pod.resource_version(),
    }});
    match pods.patch(&pod.name_any(), &PatchParams::default(), &Patch::Merge(&patch)).await {
        Ok(_) => Ok(()),
        Err(kube::Error::Api(e)) if e.code == 404 => Ok(()),
        Err(e) => Err(e),
    }
}

fn phase(pod: &Pod) -> &str {
    pod.status.as_ref().and_then(|s| s.phase.as_deref()).unwrap_or_default()
}

/// How a pod of the Job counts.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum PodOutcome {
    /// Running or about to.
    Active,
    /// Deleted before it finished: it will count as failed.
    Terminating,
    Succeeded,
    Failed,
}

fn outcome(pod: &Pod) -> PodOutcome {
    match phase(pod) {
        "Succeeded" => PodOutcome::Succeeded,
        "Failed" => PodOutcome::Failed,
        _ if pod.metadata.deletion_timestamp.is_some() => PodOutcome::Terminating,
        _ => PodOutcome::Active,
    }
}

/// When the pod finished: its containers' last finish, else its deletion, else `now`.
fn finished_at(pod: &Pod, now: Timestamp) -> Timestamp {
    let status = pod.status.as_ref();
    status
        .into_iter()
        .flat_map(|s| s.container_statuses.iter().flatten())
        .filter_map(|c| c.state.as_ref()?.terminated.as_ref()?.finished_at.as_ref())
        .map(|t| t.0)
        .max()
        .or(pod.metadata.deletion_timestamp.as_ref().map(|t| t.0))
        .unwrap_or(now)
}

fn completion_index(pod: &Pod) -> Option<i32> {
    pod.annotations().get(COMPLETION_INDEX)?.parse().ok().filter(|i: &i32| *i >= 0)
}

/// Parses `completedIndexes` (`"1,3-5"`); malformed parts are skipped.
pub fn parse_indexes(s: &str) -> BTreeSet<i32> {
    let mut out = BTreeSet::new();
    for part in s.split(',').map(str::trim).filter(|p| !p.is_empty()) {
        match part.split_once('-') {
            Some((a, b)) => {
                if let (Ok(a), Ok(b)) = (a.parse::<i32>(), b.parse::<i32>())
                    && a <= b
                {
                    out.extend(a..=b);
                }
            }
            None => {
                if let Ok(i) = part.parse() {
                    out.insert(i);
                }
            }
        }
    }
    out
}

/// Writes indexes as `completedIndexes` does: ascending, runs of 3 or more as ranges
/// (`"0,1"`, `"0-2,5"`).
pub fn format_indexes(indexes: &BTreeSet<i32>) -> String {
    let mut parts = Vec::new();
    let mut iter = indexes.iter().copied().peekable();
    while let Some(first) = iter.next() {
        let mut last = first;
        while iter.peek() == Some(&(last + 1)) {
            last += 1;
            iter.next();
        }
        match last - first {
            0 => parts.push(first.to_string()),
            1 => parts.push(format!("{first},{last}")),
            _ => parts.push(format!("{first}-{last}")),
        }
    }
    parts.join(",")
}

/// The pod-failure back-off after `failures` failures since the last success.
pub fn failure_backoff(failures: u32) -> Duration {
    if failures == 0 {
        return Duration::ZERO;
    }
    let factor = 2u32.saturating_pow(failures.saturating_sub(1).min(16));
    FAILURE_BACKOFF.saturating_mul(factor).min(MAX_FAILURE_BACKOFF)
}

fn condition<'a>(status: &'a Value, kind: &str) -> Option<&'a Value> {
    status["conditions"].as_array()?.iter().find(|c| c["type"] == kind && c["status"] == "True")
}

/// Sets a condition in the status's list; keeps the transition time of one already in that
/// state.
fn set_condition(
    status: &mut Value,
    kind: &str,
    state: &str,
    reason: &str,
    message: &str,
    now: &Value,
) {
    let mut conditions = status["conditions"].as_array().cloned().unwrap_or_default();
    let previous = conditions.iter().position(|c| c["type"] == kind);
    let since = previous
        .map(|i| &conditions[i])
        .filter(|c| c["status"] == state)
        .map(|c| c["lastTransitionTime"].clone())
        .unwrap_or_else(|| now.clone());
    let condition = json!({"type": kind, "status": state, "reason": reason, "message": message,
        "lastProbeTime": now, "lastTransitionTime": since});
    match previous {
        Some(i) => conditions[i] = condition,
        None => conditions.push(condition),
    }
    status["conditions"] = json!(conditions);
}

/// One round; `Some(d)` asks for another after `d`.
async fn reconcile(job: Arc<Job>, context: Arc<Context>) -> Result<Option<Duration>, Error> {
    if job.metadata.deletion_timestamp.is_some() {
        return Ok(None);
    }
    let namespace = job.namespace().unwrap_or_default();
    let name = job.name_any();
    let uid = job.uid().unwrap_or_default();
    let pods_api: Api<Pod> = Api::namespaced(context.client.clone(), &namespace);
    let jobs_api: Api<Job> = Api::namespaced(context.client.clone(), &namespace);
    let spec = job.spec.clone().unwrap_or_default();
    let now = Timestamp::now();
    let now_json = json!(Time(now));
    let mut status = serde_json::to_value(&job.status).unwrap_or(Value::Null);
    if !status.is_object() {
        status = json!({});
    }
    let stored_status = status.clone();
    let finished =
        condition(&status, "Complete").is_some() || condition(&status, "Failed").is_some();

    // 1. Adoption and release (a finished Job adopts nothing).
    let in_namespace: Vec<Arc<Pod>> = context
        .pods
        .state()
        .into_iter()
        .filter(|p| p.namespace().as_deref() == Some(namespace.as_str()))
        .collect();
    if !finished {
        let owner = super::controller_reference(job.as_ref());
        if super::claim(&pods_api, in_namespace.clone(), &owner, |pod| selects(&job, &pod.metadata))
            .await?
        {
            return Ok(Some(Duration::from_millis(200)));
        }
    }
    let owned: Vec<Arc<Pod>> =
        in_namespace.into_iter().filter(|p| super::controlled_by(&p.metadata, &uid)).collect();

    // 2. Count finished pods through uncountedTerminatedPods.
    let mut uncounted_succeeded: BTreeSet<String> =
        strings(&status["uncountedTerminatedPods"]["succeeded"]);
    let mut uncounted_failed: BTreeSet<String> =
        strings(&status["uncountedTerminatedPods"]["failed"]);
    let mut newly_uncounted = false;
    let indexed = spec.completion_mode.as_deref() == Some("Indexed");
    let mut completed_indexes = parse_indexes(status["completedIndexes"].as_str().unwrap_or(""));
    for pod in owned.iter().filter(|p| has_tracking_finalizer(p)) {
        let pod_uid = pod.uid().unwrap_or_default();
        let list = match outcome(pod) {
            PodOutcome::Succeeded => &mut uncounted_succeeded,
            PodOutcome::Failed | PodOutcome::Terminating => &mut uncounted_failed,
            PodOutcome::Active => continue,
        };
        newly_uncounted |= list.insert(pod_uid);
    }
    if newly_uncounted {
        let patch = json!({"status": {"uncountedTerminatedPods": {
            "succeeded": uncounted_succeeded, "failed": uncounted_failed}}});
        jobs_api
            .patch_status(&name, &PatchParams::default(), &Patch::Merge(&patch))
            .await
            .map_err(api_error(format!("update status of job {name}")))?;
    }
    let listed: BTreeSet<&String> = uncounted_succeeded.iter().chain(&uncounted_failed).collect();
    let mut cleared = Vec::new();
    for pod in owned.iter().filter(|p| has_tracking_finalizer(p)) {
        let pod_uid = pod.uid().unwrap_or_default();
        if listed.contains(&pod_uid) {
            remove_finalizer(&pods_api, pod)
                .await
                .map_err(api_error(format!("remove the finalizer of pod {}", pod.name_any())))?;
            cleared.push(pod_uid);
        }
    }
    if !cleared.is_empty() {
        // The next round must not see these pods with the finalizer again, or it would list
        // them as uncounted once more after they were counted.
        super::wait_until(|| {
            context.pods.state().iter().all(|p| {
                !cleared.contains(&p.uid().unwrap_or_default()) || !has_tracking_finalizer(p)
            })
        })
        .await;
    }
    let still_tracked: BTreeSet<String> = owned
        .iter()
        .filter(|p| has_tracking_finalizer(p) && !cleared.contains(&p.uid().unwrap_or_default()))
        .filter_map(|p| p.uid())
        .collect();
    let mut succeeded = status["succeeded"].as_i64().unwrap_or(0);
    let mut failed = status["failed"].as_i64().unwrap_or(0);
    for pod_uid in std::mem::take(&mut uncounted_succeeded) {
        if still_tracked.contains(&pod_uid) {
            uncounted_succeeded.insert(pod_uid);
            continue;
        }
        succeeded += 1;
        if indexed
            && let Some(i) = owned
                .iter()
                .find(|p| p.uid().as_ref() == Some(&pod_uid))
                .and_then(|p| completion_index(p))
        {
            completed_indexes.insert(i);
        }
    }
    for pod_uid in std::mem::take(&mut uncounted_failed) {
        if still_tracked.contains(&pod_uid) {
            uncounted_failed.insert(pod_uid);
        } else {
            failed += 1;
        }
    }
    status["succeeded"] = json!(succeeded);
    status["failed"] = json!(failed);
    status["uncountedTerminatedPods"] =
        json!({"succeeded": uncounted_succeeded, "failed": uncounted_failed});
    if indexed {
        let completions = spec.completions.unwrap_or(1);
        completed_indexes.retain(|i| *i < completions);
        status["completedIndexes"] = json!(format_indexes(&completed_indexes));
    }

    let active: Vec<&Arc<Pod>> =
        owned.iter().filter(|p| outcome(p) == PodOutcome::Active).collect();
    let terminating = owned.iter().filter(|p| outcome(p) == PodOutcome::Terminating).count();
    let mut again: Option<Duration> = None;
    let mut soonest = |d: Duration| again = Some(again.map_or(d, |a: Duration| a.min(d)));

    if finished {
        write_status(
            &context,
            &jobs_api,
            &name,
            &stored_status,
            status,
            PodCounts { active: active.len(), terminating, ready: 0 },
        )
        .await?;
        return ttl(&jobs_api, &job, &stored_status, now).await;
    }

    // 3. Terminal decisions.
    let suspended = spec.suspend == Some(true);
    if !suspended && status["startTime"].is_null() {
        status["startTime"] = now_json.clone();
    }
    let restarts: i64 = if spec.template.spec.as_ref().and_then(|s| s.restart_policy.as_deref())
        == Some("OnFailure")
    {
        active
            .iter()
            .flat_map(|p| p.status.iter().flat_map(|s| s.container_statuses.iter().flatten()))
            .map(|c| i64::from(c.restart_count))
            .sum()
    } else {
        0
    };
    let backoff_limit = i64::from(spec.backoff_limit.unwrap_or(6));
    let deadline = spec.active_deadline_seconds.zip(status["startTime"].as_str()).and_then(
        |(seconds, start)| {
            let start: Timestamp = start.parse().ok()?;
            start.checked_add(jiff::SignedDuration::from_secs(seconds)).ok()
        },
    );
    let completions = spec.completions;
    let parallelism = i64::from(spec.parallelism.unwrap_or(1).max(0));
    let success = match (indexed, completions) {
        (true, Some(c)) => completed_indexes.len() as i64 >= i64::from(c),
        (_, Some(c)) => succeeded >= i64::from(c),
        // A work queue: done once one pod succeeded and none is still running.
        (_, None) => succeeded > 0 && active.is_empty(),
    };
    let failure_target = condition(&status, "FailureTarget").map(|c| {
        (
            c["reason"].as_str().unwrap_or("").to_string(),
            c["message"].as_str().unwrap_or("").to_string(),
        )
    });
    let failure = failure_target.or_else(|| {
        // Restarts in place (OnFailure) count against the limit once they reach it.
        let restarts_exceed = restarts > 0 && restarts >= backoff_limit;
        if failed > backoff_limit || restarts_exceed {
            Some((
                "BackoffLimitExceeded".into(),
                "Job has reached the specified backoff limit".into(),
            ))
        } else if deadline.is_some_and(|d| now >= d) && !suspended {
            Some((
                "DeadlineExceeded".into(),
                "Job was active longer than specified deadline".into(),
            ))
        } else {
            None
        }
    });
    let mut to_delete: Vec<&Arc<Pod>> = Vec::new();
    let mut create: Vec<Option<i32>> = Vec::new();
    if let Some((reason, message)) = failure {
        set_condition(&mut status, "FailureTarget", "True", &reason, &message, &now_json);
        to_delete.extend(active.iter().copied());
        if active.is_empty() && terminating == 0 {
            set_condition(&mut status, "Failed", "True", &reason, &message, &now_json);
        }
    } else if success || condition(&status, "SuccessCriteriaMet").is_some() {
        let (reason, message) = ("CompletionsReached", "Reached expected number of succeeded pods");
        set_condition(&mut status, "SuccessCriteriaMet", "True", reason, message, &now_json);
        to_delete.extend(active.iter().copied());
        if active.is_empty() && terminating == 0 {
            set_condition(&mut status, "Complete", "True", reason, message, &now_json);
            status["completionTime"] = now_json.clone();
        }
    } else if suspended {
        to_delete.extend(active.iter().copied());
        set_condition(&mut status, "Suspended", "True", "JobSuspended", "Job suspended", &now_json);
        // The deadline starts again on resume.
        status["startTime"] = Value::Null;
    } else {
        if condition(&status, "Suspended").is_some() {
            set_condition(
                &mut status,
                "Suspended",
                "False",
                "JobResumed",
                "Job resumed",
                &now_json,
            );
        }
        if let Some(d) = deadline {
            soonest(Duration::try_from(d.duration_since(now)).unwrap_or_default());
        }
        // 4. Scale.
        let wanted = match completions {
            Some(c) if !indexed => (i64::from(c) - succeeded).clamp(0, parallelism),
            Some(c) => (i64::from(c) - completed_indexes.len() as i64).clamp(0, parallelism),
            None if succeeded > 0 => 0,
            None => parallelism,
        };
        let running = active.len() as i64;
        if running > wanted {
            let mut extra: Vec<&Arc<Pod>> = active.clone();
            // Not ready and newest go first.
            extra.sort_by_key(|p| {
                (
                    kruise_core::pod::is_pod_ready(p),
                    std::cmp::Reverse(p.metadata.creation_timestamp.clone().map(|t| t.0)),
                )
            });
            to_delete.extend(extra.into_iter().take((running - wanted) as usize));
        } else if running < wanted {
            let wait = backoff_remaining(&owned, now);
            if wait > Duration::ZERO {
                soonest(wait);
            } else if indexed {
                let busy: BTreeSet<i32> =
                    active.iter().filter_map(|p| completion_index(p)).collect();
                let count = (wanted - running) as usize;
                create = (0..completions.unwrap_or(1))
                    .filter(|i| !completed_indexes.contains(i) && !busy.contains(i))
                    .take(count)
                    .map(Some)
                    .collect();
            } else {
                create = vec![None; (wanted - running) as usize];
            }
        }
    }

    let mut deleted = 0;
    for pod in &to_delete {
        match pods_api.delete(&pod.name_any(), &DeleteParams::default()).await {
            Ok(_) => deleted += 1,
            Err(kube::Error::Api(e)) if e.code == 404 => {}
            Err(source) => {
                return Err(api_error(format!("delete pod {}", pod.name_any()))(source));
            }
        }
    }
    let mut created = 0;
    let mut create_failure = None;
    if !create.is_empty() {
        let template = new_pod(&job);
        let (count, failure) = super::create_in_batches(create.len(), |i| {
            let pod = with_index(&template, &name, create[i]);
            let api = pods_api.clone();
            async move { api.create(&PostParams::default(), &pod).await.map(|_| ()) }
        })
        .await;
        created = count.len();
        create_failure = failure;
    }
    if created > 0 || deleted > 0 {
        let target = active.len() + created - deleted;
        super::wait_until(|| {
            context
                .pods
                .state()
                .iter()
                .filter(|p| {
                    super::controlled_by(&p.metadata, &uid) && outcome(p) == PodOutcome::Active
                })
                .count()
                == target
        })
        .await;
    }
    let active_now = active.len() + created - deleted;
    let ready = active.iter().filter(|p| kruise_core::pod::is_pod_ready(p)).count().min(active_now);
    let terminating_now = terminating + deleted;
    write_status(
        &context,
        &jobs_api,
        &name,
        &stored_status,
        status,
        PodCounts { active: active_now, terminating: terminating_now, ready },
    )
    .await?;
    if create_failure.is_some() {
        // Retried; the API server's answer is not kept (no Events here).
        return Ok(Some(Duration::from_secs(1)));
    }
    Ok(again)
}

fn strings(v: &Value) -> BTreeSet<String> {
    v.as_array().into_iter().flatten().filter_map(|s| s.as_str().map(String::from)).collect()
}

/// How long the pod-failure back-off still holds: failures since the last success, counted
/// from the latest failure.
fn backoff_remaining(owned: &[Arc<Pod>], now: Timestamp) -> Duration {
    let mut ends: Vec<(Timestamp, bool)> = owned
        .iter()
        .filter_map(|p| match outcome(p) {
            PodOutcome::Succeeded => Some((finished_at(p, now), true)),
            PodOutcome::Failed | PodOutcome::Terminating => Some((finished_at(p, now), false)),
            PodOutcome::Active => None,
        })
        .collect();
    ends.sort();
    let last_success = ends.iter().rposition(|(_, ok)| *ok);
    let failures: Vec<Timestamp> =
        ends[last_success.map_or(0, |i| i + 1)..].iter().map(|(t, _)| *t).collect();
    let Some(last) = failures.last() else { return Duration::ZERO };
    let backoff = failure_backoff(failures.len() as u32);
    let elapsed = Duration::try_from(now.duration_since(*last)).unwrap_or_default();
    backoff.saturating_sub(elapsed)
}

/// The Job's pods that `status` counts as they are now.
struct PodCounts {
    active: usize,
    terminating: usize,
    ready: usize,
}

/// Writes the status when it differs from what is stored, then waits until the Job cache
/// shows it: a round that read the Job before its counts moved would count its pods again.
async fn write_status(
    context: &Context,
    jobs: &Api<Job>,
    name: &str,
    stored: &Value,
    mut status: Value,
    pods: PodCounts,
) -> Result<(), Error> {
    status["active"] = json!(pods.active);
    status["terminating"] = json!(pods.terminating);
    status["ready"] = json!(pods.ready);
    if super::status_matches(stored, &status) {
        return Ok(());
    }
    let written = jobs
        .patch_status(name, &PatchParams::default(), &Patch::Merge(&json!({ "status": status })))
        .await
        .map_err(api_error(format!("update status of job {name}")))?;
    let key = ObjectRef::from_obj(&written);
    super::wait_until(|| {
        context.jobs.get(&key).is_some_and(|cached| {
            cached.resource_version() == written.resource_version()
                || super::status_matches(
                    &serde_json::to_value(&cached.status).unwrap_or(Value::Null),
                    &status,
                )
        })
    })
    .await;
    Ok(())
}

/// Deletes a finished Job whose `ttlSecondsAfterFinished` has passed; otherwise asks to be
/// looked at again when it will have.
async fn ttl(
    jobs: &Api<Job>,
    job: &Job,
    status: &Value,
    now: Timestamp,
) -> Result<Option<Duration>, Error> {
    let Some(ttl) = job.spec.as_ref().and_then(|s| s.ttl_seconds_after_finished) else {
        return Ok(None);
    };
    let finished = ["Complete", "Failed"]
        .iter()
        .filter_map(|kind| condition(status, kind))
        .filter_map(|c| c["lastTransitionTime"].as_str()?.parse::<Timestamp>().ok())
        .next();
    let Some(finished) = finished else { return Ok(None) };
    let expires = finished + jiff::SignedDuration::from_secs(i64::from(ttl));
    if now < expires {
        let wait = Duration::try_from(expires.duration_since(now)).unwrap_or_default();
        return Ok(Some(wait + Duration::from_millis(10)));
    }
    let params = DeleteParams {
        propagation_policy: Some(PropagationPolicy::Foreground),
        preconditions: Some(kube::api::Preconditions { uid: job.uid(), resource_version: None }),
        ..DeleteParams::default()
    };
    let name = job.name_any();
    match jobs.delete(&name, &params).await {
        Ok(_) => Ok(None),
        Err(kube::Error::Api(e)) if e.code == 404 || e.code == 409 => Ok(None),
        Err(source) => Err(api_error(format!("delete job {name}"))(source)),
    }
}

/// The pod the Job's template makes.
fn new_pod(job: &Job) -> Pod {
    let mut pod = super::pod_from_template(job, job.spec.as_ref().map(|s| &s.template));
    pod.metadata.finalizers.get_or_insert_with(Vec::new).push(TRACKING_FINALIZER.to_string());
    pod
}

/// The pod for completion index `index` (Indexed Jobs): named `<job>-<index>-<random>`, with
/// the index annotation and label, and the hostname `<job>-<index>`.
fn with_index(template: &Pod, job: &str, index: Option<i32>) -> Pod {
    let Some(index) = index else { return template.clone() };
    let mut pod = template.clone();
    pod.metadata.generate_name = Some(format!("{job}-{index}-"));
    pod.metadata
        .annotations
        .get_or_insert_with(BTreeMap::new)
        .insert(COMPLETION_INDEX.into(), index.to_string());
    pod.metadata
        .labels
        .get_or_insert_with(BTreeMap::new)
        .insert(COMPLETION_INDEX.into(), index.to_string());
    if let Some(spec) = pod.spec.as_mut()
        && spec.hostname.is_none()
    {
        spec.hostname = Some(format!("{job}-{index}"));
    }
    pod
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn completed_indexes_round_trip() {
        let set: BTreeSet<i32> = [0, 1, 3, 4, 5, 7].into();
        assert_eq!(format_indexes(&set), "0,1,3-5,7");
        assert_eq!(parse_indexes("0,1,3-5,7"), set);
        assert_eq!(parse_indexes(" 2 , x, 5-3, 9"), [2, 9].into());
        assert_eq!(format_indexes(&BTreeSet::new()), "");
    }

    #[test]
    fn backoff_doubles_to_ten_minutes() {
        assert_eq!(failure_backoff(0), Duration::ZERO);
        assert_eq!(failure_backoff(1), Duration::from_secs(10));
        assert_eq!(failure_backoff(2), Duration::from_secs(20));
        assert_eq!(failure_backoff(6), Duration::from_secs(320));
        assert_eq!(failure_backoff(7), Duration::from_secs(600));
        assert_eq!(failure_backoff(u32::MAX), Duration::from_secs(600));
    }
}
