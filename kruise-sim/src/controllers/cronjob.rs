//! The CronJob controller, as kube-controller-manager runs it.
//!
//! One round of a CronJob:
//!
//! 1. its Jobs (those it controls) are read from the Job cache: unfinished ones make
//!    `status.active`, and the newest `completionTime` of a complete one is
//!    `lastSuccessfulTime`;
//! 2. finished Jobs beyond `successfulJobsHistoryLimit` (3) and `failedJobsHistoryLimit` (1)
//!    are deleted, oldest `startTime` first (background propagation);
//! 3. unless `suspend`, the most recent activation of `schedule` (in `timeZone`, or UTC) since
//!    `lastScheduleTime` (or its creation), and within `startingDeadlineSeconds`, starts a Job
//!    named `<cronjob>-<minutes since the epoch>` from `jobTemplate`, annotated with
//!    `batch.kubernetes.io/cronjob-scheduled-timestamp`. `concurrencyPolicy` `Forbid` skips
//!    the run while a Job is active; `Replace` deletes the active Jobs first;
//! 4. the status is written, and the round asks to run again at the next activation.
//!
//! Missed activations: only the most recent one runs, as kube-controller-manager does.
//! Not done: Events (`SuccessfulCreate`, `MissSchedule`, `SawCompletedJob`, ...), and adopting
//! Jobs the CronJob did not create.

use std::sync::Arc;
use std::time::Duration;

use jiff::Timestamp;
use jiff::tz::TimeZone;
use k8s_openapi::api::batch::v1::{CronJob, Job};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, Time};
use kruise_core::cron::Schedule;
use kube::api::{Api, DeleteParams, Patch, PatchParams, PostParams, PropagationPolicy};
use kube::runtime::reflector::{ObjectRef, Store};
use kube::{Client, ResourceExt as _};
use serde_json::{Value, json};
use tokio::sync::mpsc::UnboundedReceiver;

use super::{Error, api_error};

/// The annotation with a Job's scheduled time (RFC 3339, in the CronJob's time zone).
pub const SCHEDULED_TIMESTAMP: &str = "batch.kubernetes.io/cronjob-scheduled-timestamp";

struct Context {
    client: Client,
    jobs: Store<Job>,
}

type Key = ObjectRef<CronJob>;

/// Runs the controller until the task is aborted.
pub(crate) async fn run(
    client: Client,
    (jobs, job_events): (Store<Job>, UnboundedReceiver<Job>),
    (cronjobs, cronjob_events): (Store<CronJob>, UnboundedReceiver<CronJob>),
) {
    let (queue, keys) = tokio::sync::mpsc::unbounded_channel::<Key>();
    let context = Arc::new(Context { client, jobs: jobs.clone() });
    let controller = |job: &Job| super::controller_of(&job.metadata, "batch/v1", "CronJob");
    let feeds = futures::future::join(
        super::queue_own(cronjob_events, queue.clone()),
        super::queue_owners(job_events, queue.clone(), controller, move |job: &Job| {
            controller(job).into_iter().collect()
        }),
    );
    futures::future::join(
        feeds,
        super::run_rounds(cronjobs, queue, keys, jobs, context, reconcile),
    )
    .await;
}

/// `Complete` or `Failed`, when the Job has finished.
fn finished(job: &Job) -> Option<&'static str> {
    let conditions = job.status.as_ref()?.conditions.as_ref()?;
    ["Complete", "Failed"]
        .into_iter()
        .find(|kind| conditions.iter().any(|c| c.type_ == *kind && c.status == "True"))
}

/// A Job's reference in `status.active`.
fn reference(job: &Job) -> Value {
    json!({"apiVersion": "batch/v1", "kind": "Job", "name": job.name_any(),
        "namespace": job.namespace(), "uid": job.uid(), "resourceVersion": job.resource_version()})
}

/// A time as Go's RFC 3339 layout writes it in `zone`: `Z` for a zero offset, else `±hh:mm`.
pub fn rfc3339_in(at: Timestamp, zone: &TimeZone) -> String {
    let zoned = at.to_zoned(zone.clone());
    let local = zoned.strftime("%Y-%m-%dT%H:%M:%S").to_string();
    let offset = zoned.offset().seconds();
    if offset == 0 {
        format!("{local}Z")
    } else {
        let sign = if offset < 0 { '-' } else { '+' };
        let minutes = offset.unsigned_abs() / 60;
        format!("{local}{sign}{:02}:{:02}", minutes / 60, minutes % 60)
    }
}

/// The Job a CronJob starts for the activation at `scheduled`.
pub fn job_for(cronjob: &CronJob, scheduled: Timestamp, zone: &TimeZone) -> Job {
    let template = cronjob.spec.job_template.clone();
    let meta = template.metadata.unwrap_or_default();
    let mut annotations = meta.annotations.unwrap_or_default();
    annotations.insert(SCHEDULED_TIMESTAMP.into(), rfc3339_in(scheduled, zone));
    Job {
        metadata: ObjectMeta {
            name: Some(format!("{}-{}", cronjob.name_any(), scheduled.as_second().div_euclid(60))),
            namespace: cronjob.namespace(),
            labels: meta.labels,
            annotations: Some(annotations),
            owner_references: Some(vec![super::controller_reference(cronjob)]),
            ..ObjectMeta::default()
        },
        spec: template.spec,
        status: None,
    }
}

/// The zone the schedule runs in: `timeZone`, or UTC (kube-controller-manager's local zone
/// in a container). An unknown zone is an error the API server refuses on create.
fn zone_of(cronjob: &CronJob) -> Option<TimeZone> {
    match cronjob.spec.time_zone.as_deref() {
        None => Some(TimeZone::UTC),
        Some(name) => TimeZone::get(name).ok(),
    }
}

fn parse_time(value: Option<&Time>) -> Option<Timestamp> {
    value.map(|t| t.0)
}

/// One round; `Some(d)` asks for another after `d`.
async fn reconcile(
    cronjob: Arc<CronJob>,
    context: Arc<Context>,
) -> Result<Option<Duration>, Error> {
    if cronjob.metadata.deletion_timestamp.is_some() {
        return Ok(None);
    }
    let namespace = cronjob.namespace().unwrap_or_default();
    let name = cronjob.name_any();
    let uid = cronjob.uid().unwrap_or_default();
    let spec = cronjob.spec.clone();
    let jobs_api: Api<Job> = Api::namespaced(context.client.clone(), &namespace);
    let now = Timestamp::now();

    // 1. Its Jobs.
    let mut owned: Vec<Arc<Job>> = context
        .jobs
        .state()
        .into_iter()
        .filter(|j| j.namespace().as_deref() == Some(namespace.as_str()))
        .filter(|j| super::controlled_by(&j.metadata, &uid))
        .filter(|j| j.metadata.deletion_timestamp.is_none())
        .collect();
    owned.sort_by_key(|j| j.name_any());
    let mut active: Vec<Arc<Job>> =
        owned.iter().filter(|j| finished(j).is_none()).cloned().collect();
    let stored = cronjob.status.clone().unwrap_or_default();
    let last_success = owned
        .iter()
        .filter(|j| finished(j) == Some("Complete"))
        .filter_map(|j| parse_time(j.status.as_ref()?.completion_time.as_ref()))
        .chain(parse_time(stored.last_successful_time.as_ref()))
        .max();

    // 2. History limits.
    let background = DeleteParams {
        propagation_policy: Some(PropagationPolicy::Background),
        ..DeleteParams::default()
    };
    for (kind, limit) in [
        ("Complete", spec.successful_jobs_history_limit.unwrap_or(3)),
        ("Failed", spec.failed_jobs_history_limit.unwrap_or(1)),
    ] {
        let mut done: Vec<&Arc<Job>> = owned.iter().filter(|j| finished(j) == Some(kind)).collect();
        // Oldest start first; Jobs that never started last.
        done.sort_by_key(|j| {
            let start = parse_time(j.status.as_ref().and_then(|s| s.start_time.as_ref()));
            (start.is_none(), start, j.name_any())
        });
        let extra = done.len().saturating_sub(usize::try_from(limit.max(0)).unwrap_or(0));
        for job in done.into_iter().take(extra) {
            delete_job(&jobs_api, job, &background).await?;
        }
    }

    // 3. The schedule.
    let mut last_schedule = parse_time(stored.last_schedule_time.as_ref());
    let mut again = None;
    let zone = zone_of(&cronjob);
    let schedule = Schedule::parse(&spec.schedule).ok();
    if let (Some(schedule), Some(zone)) = (schedule, zone) {
        let created = parse_time(cronjob.metadata.creation_timestamp.as_ref()).unwrap_or(now);
        let mut earliest = last_schedule.unwrap_or(created);
        if let Some(deadline) = spec.starting_deadline_seconds {
            let window_start = now - jiff::SignedDuration::from_secs(deadline);
            earliest = earliest.max(window_start);
        }
        let due = schedule.most_recent_between(earliest, now, &zone).most_recent;
        let policy = spec.concurrency_policy.as_deref().unwrap_or("Allow");
        if let Some(scheduled) = due
            && spec.suspend != Some(true)
            && (policy != "Forbid" || active.is_empty())
        {
            if policy == "Replace" {
                for job in std::mem::take(&mut active) {
                    delete_job(&jobs_api, &job, &background).await?;
                }
            }
            let job = job_for(&cronjob, scheduled, &zone);
            let job_name = job.name_any();
            let made = match jobs_api.create(&PostParams::default(), &job).await {
                Ok(made) => Some(made),
                // Created before (a round that failed later, or a restart): it is ours.
                Err(kube::Error::Api(e)) if e.code == 409 => {
                    jobs_api.get_opt(&job_name).await.ok().flatten()
                }
                Err(source) => return Err(api_error(format!("create job {job_name}"))(source)),
            };
            if let Some(made) = made.filter(|j| super::controlled_by(&j.metadata, &uid))
                && !active.iter().any(|a| a.uid() == made.uid())
                && finished(&made).is_none()
            {
                active.push(Arc::new(made));
            }
            last_schedule = Some(scheduled);
        }
        if let Some(next) = schedule.next_after(now, &zone) {
            let wait = Duration::try_from(next.duration_since(now)).unwrap_or_default();
            again = Some(wait + Duration::from_millis(50));
        }
    }

    // 4. Status.
    let mut status = json!({
        "active": active.iter().map(|j| reference(j)).collect::<Vec<_>>(),
        "lastScheduleTime": last_schedule.map(Time),
        "lastSuccessfulTime": last_success.map(Time),
    });
    if active.is_empty() {
        status["active"] = Value::Null;
    }
    let have = serde_json::to_value(&stored).unwrap_or(Value::Null);
    let unchanged = ["active", "lastScheduleTime", "lastSuccessfulTime"]
        .iter()
        .all(|k| have.get(*k).unwrap_or(&Value::Null) == &status[*k]);
    if !unchanged {
        let cronjobs: Api<CronJob> = Api::namespaced(context.client.clone(), &namespace);
        cronjobs
            .patch_status(
                &name,
                &PatchParams::default(),
                &Patch::Merge(&json!({ "status": status })),
            )
            .await
            .map_err(api_error(format!("update status of cronjob {name}")))?;
    }
    Ok(again)
}

async fn delete_job(jobs: &Api<Job>, job: &Job, params: &DeleteParams) -> Result<(), Error> {
    let name = job.name_any();
    match jobs.delete(&name, params).await {
        Ok(_) => Ok(()),
        Err(kube::Error::Api(e)) if e.code == 404 => Ok(()),
        Err(source) => Err(api_error(format!("delete job {name}"))(source)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scheduled_timestamps_are_written_as_go_writes_rfc3339() {
        let at: Timestamp = "2026-04-26T18:37:00Z".parse().expect("time");
        assert_eq!(rfc3339_in(at, &TimeZone::UTC), "2026-04-26T18:37:00Z");
        let berlin = TimeZone::get("Europe/Berlin").expect("zone");
        assert_eq!(rfc3339_in(at, &berlin), "2026-04-26T20:37:00+02:00");
        let new_york = TimeZone::get("America/New_York").expect("zone");
        assert_eq!(rfc3339_in(at, &new_york), "2026-04-26T14:37:00-04:00");
    }

    #[test]
    fn jobs_are_named_after_the_minute_they_were_scheduled_for() {
        let cronjob: CronJob = serde_json::from_value(json!({
            "metadata": {"name": "hello", "namespace": "default", "uid": "u1"},
            "spec": {"schedule": "* * * * *", "jobTemplate": {
                "metadata": {"labels": {"team": "a"}, "annotations": {"note": "x"}},
                "spec": {"template": {"spec": {"containers": []}}}}}
        }))
        .expect("cronjob");
        let at: Timestamp = "2026-04-26T18:37:00Z".parse().expect("time");
        let job = job_for(&cronjob, at, &TimeZone::UTC);
        assert_eq!(
            job.metadata.name.as_deref(),
            Some(format!("hello-{}", at.as_second() / 60).as_str())
        );
        let annotations = job.metadata.annotations.clone().unwrap_or_default();
        assert_eq!(
            annotations.get(SCHEDULED_TIMESTAMP).map(String::as_str),
            Some("2026-04-26T18:37:00Z")
        );
        assert_eq!(annotations.get("note").map(String::as_str), Some("x"));
        assert_eq!(
            job.metadata.labels.unwrap_or_default().get("team").map(String::as_str),
            Some("a")
        );
        let owner = &job.metadata.owner_references.unwrap_or_default()[0];
        assert_eq!(
            (owner.kind.as_str(), owner.uid.as_str(), owner.controller),
            ("CronJob", "u1", Some(true))
        );
    }
}
