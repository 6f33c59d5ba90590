//! AdvancedCronJob: a Job, BroadcastJob or ImageListPullJob created on a cron schedule.
//!
//! [`plan`] takes a [`Snapshot`] (the AdvancedCronJob, the jobs it controls and the zone to
//! read a schedule in when the object names none) and `now`, and answers with a [`Plan`]: the
//! job to create, the finished jobs past the history limits and the jobs `Replace` stops, the
//! new status, the Events, and when to look again (the next run). It follows upstream's
//! controller (`pkg/controller/advancedcronjob`):
//!
//! - **Schedule** ([`effective_schedule`]): `spec.schedule` as robfig/cron v3 reads it
//!   ([`crate::cron`]: five fields, the `@` descriptors, `@every`, a `TZ=`/`CRON_TZ=`
//!   prefix), in `spec.timeZone` when set (written as a `TZ=` prefix, as upstream does, unless
//!   the schedule already has one), else in the manager's zone.
//! - **Runs** ([`due_run`]): from the last scheduled run (or the object's creation), and no
//!   further back than `startingDeadlineSeconds`, only the most recent missed time runs; more
//!   than 100 missed times is an error until the deadline or the clock says otherwise.
//! - **Children**: named `<name>-<unix seconds of the scheduled time>`, with the template's
//!   labels and annotations plus `apps.kruise.io/scheduled-at`, controlled by the
//!   AdvancedCronJob. A Job or BroadcastJob is finished by its `Complete` or `Failed`
//!   condition; an ImageListPullJob by its `completionTime`, succeeded when every image was.
//! - **Concurrency**: `Allow` starts the run anyway, `Forbid` skips it while a job is active,
//!   `Replace` deletes the active jobs (in the background) and starts it.
//! - **History**: finished jobs beyond `successfulJobsHistoryLimit` and
//!   `failedJobsHistoryLimit` go, oldest start first (also while paused).
//! - **Status**: `type`, `active` and `lastScheduleTime`.
//!
//! Where this differs from upstream:
//! - `lastScheduleTime` never goes back: upstream recomputes it from the jobs that still
//!   exist, so deleting the last job (its TTL, a history limit of 0, by hand) runs the same
//!   tick again (upstream issue #2213); here the recorded value is a floor.
//! - Events, in kube-controller-manager's CronJob wording (`SuccessfulCreate`,
//!   `SuccessfulDelete`, `JobAlreadyActive`, `MissSchedule`, `UnparseableSchedule`,
//!   `TooManyMissedTimes`); upstream records none.
//! - The status is written only when it changes, and `status.active` names each running job
//!   by kind, name and UID without its resourceVersion, which upstream records and which
//!   rewrote the status at every change of every running job.

pub mod admission;

use jiff::tz::TimeZone;
use jiff::{SignedDuration, Timestamp};
use k8s_openapi::api::batch::v1::Job;
use k8s_openapi::api::core::v1::ObjectReference;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, OwnerReference, Time};
use kruise_api::apps::v1beta1::{
    AdvancedCronJob, AdvancedCronJobStatus, BroadcastJob, ConcurrencyPolicy, ImageListPullJob,
    TemplateKind,
};
use kruise_api::well_known::annotations::SCHEDULED_AT;
use serde_json::json;

use crate::cron::{MISSED_COUNT_LIMIT, Schedule};
use crate::plan::{Action, Event, EventType, Guard, ObjectKind, Plan, Target};

/// Upstream's default `successfulJobsHistoryLimit`.
pub const DEFAULT_SUCCESSFUL_HISTORY: i32 = 3;
/// Upstream's default `failedJobsHistoryLimit`.
pub const DEFAULT_FAILED_HISTORY: i32 = 1;

/// Where a child job stands.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ChildState {
    /// Not finished.
    Active,
    /// Finished, successfully.
    Succeeded,
    /// Finished, failed.
    Failed,
}

/// A job an AdvancedCronJob controls, as [`plan`] reads it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Child {
    /// Its kind.
    pub kind: TemplateKind,
    /// Its name.
    pub name: String,
    /// Its UID.
    pub uid: String,
    /// The run it was created for (`apps.kruise.io/scheduled-at`), when readable.
    pub scheduled_at: Option<Timestamp>,
    /// When it started (`status.startTime`), which orders the history.
    pub started: Option<Timestamp>,
    /// Where it stands.
    pub state: ChildState,
    /// It is being deleted.
    pub deleting: bool,
}

fn child_meta(kind: TemplateKind, meta: &ObjectMeta, started: Option<&Time>) -> Child {
    let scheduled_at = meta
        .annotations
        .as_ref()
        .and_then(|a| a.get(SCHEDULED_AT))
        .and_then(|text| text.parse::<Timestamp>().ok());
    Child {
        kind,
        name: meta.name.clone().unwrap_or_default(),
        uid: meta.uid.clone().unwrap_or_default(),
        scheduled_at,
        started: started.map(|t| t.0),
        state: ChildState::Active,
        deleting: meta.deletion_timestamp.is_some(),
    }
}

fn state_by_conditions<'a>(conditions: impl Iterator<Item = (&'a str, &'a str)>) -> ChildState {
    let mut state = ChildState::Active;
    for (type_, status) in conditions {
        if status != "True" {
            continue;
        }
        match type_ {
            "Complete" => return ChildState::Succeeded,
            "Failed" => state = ChildState::Failed,
            _ => {}
        }
    }
    state
}

impl Child {
    /// A batch/v1 Job: finished by its `Complete` or `Failed` condition.
    pub fn of_job(job: &Job) -> Self {
        let status = job.status.as_ref();
        let mut child = child_meta(
            TemplateKind::Job,
            &job.metadata,
            status.and_then(|s| s.start_time.as_ref()),
        );
        child.state = state_by_conditions(
            status
                .and_then(|s| s.conditions.as_ref())
                .into_iter()
                .flatten()
                .map(|c| (c.type_.as_str(), c.status.as_str())),
        );
        child
    }

    /// A BroadcastJob: finished by its `Complete` or `Failed` condition.
    pub fn of_broadcast_job(job: &BroadcastJob) -> Self {
        let status = job.status.as_ref();
        let mut child = child_meta(
            TemplateKind::BroadcastJob,
            &job.metadata,
            status.and_then(|s| s.start_time.as_ref()),
        );
        child.state = state_by_conditions(
            status
                .into_iter()
                .flat_map(|s| s.conditions.iter())
                .map(|c| (c.type_.as_str(), c.status.as_str())),
        );
        child
    }

    /// An ImageListPullJob: finished once it has a `completionTime`, succeeded when every
    /// image it wanted succeeded.
    pub fn of_image_list_pull_job(job: &ImageListPullJob) -> Self {
        let status = job.status.as_ref();
        let mut child = child_meta(
            TemplateKind::ImageListPullJob,
            &job.metadata,
            status.and_then(|s| s.start_time.as_ref()),
        );
        if let Some(status) = status
            && status.completion_time.is_some()
        {
            child.state = if status.succeeded == status.desired {
                ChildState::Succeeded
            } else {
                ChildState::Failed
            };
        }
        child
    }
}

/// What [`plan`] reads.
#[derive(Clone, Debug)]
pub struct Snapshot {
    /// The AdvancedCronJob.
    pub cron_job: AdvancedCronJob,
    /// The jobs it controls, of any kind.
    pub children: Vec<Child>,
    /// The zone a schedule without `timeZone` or a `TZ=` prefix is read in (upstream: the
    /// manager's local zone).
    pub default_zone: TimeZone,
}

/// The kind of job the template creates (upstream's order: `jobTemplate`, then
/// `imageListPullJobTemplate`, else `broadcastJobTemplate`).
pub fn template_kind(cron_job: &AdvancedCronJob) -> TemplateKind {
    let template = &cron_job.spec.template;
    if template.job_template.is_some() {
        TemplateKind::Job
    } else if template.image_list_pull_job_template.is_some() {
        TemplateKind::ImageListPullJob
    } else {
        TemplateKind::BroadcastJob
    }
}

fn kind_of(kind: &TemplateKind) -> ObjectKind {
    match kind {
        TemplateKind::Job => ObjectKind::JOB,
        TemplateKind::ImageListPullJob => ObjectKind::IMAGE_LIST_PULL_JOB,
        _ => ObjectKind::BROADCAST_JOB,
    }
}

/// The schedule as upstream parses it: `spec.timeZone` written in front as `TZ=<zone>`,
/// unless the schedule already mentions `TZ` or the zone does not load.
///
/// # Errors
/// The cron parser's error, in robfig's words.
pub fn effective_schedule(cron_job: &AdvancedCronJob) -> Result<Schedule, crate::cron::CronError> {
    let schedule = &cron_job.spec.schedule;
    match cron_job.spec.time_zone.as_deref() {
        Some(zone) if !schedule.contains("TZ") && TimeZone::get(zone).is_ok() => {
            Schedule::parse(&format!("TZ={zone} {schedule}"))
        }
        _ => Schedule::parse(schedule),
    }
}

/// The run that is due, and the next one.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DueRun {
    /// The most recent scheduled time in `(earliest, now]`, if any.
    pub missed: Option<Timestamp>,
    /// The first scheduled time after `now` (`None` if the schedule never fires again).
    pub next: Option<Timestamp>,
}

/// More than 100 runs were missed: upstream's error.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
#[error(
    "too many missed start times (> 100). Set or decrease .spec.startingDeadlineSeconds or check clock skew"
)]
pub struct TooManyMissed;

/// The run due at `now`: the latest scheduled time after `last` (the last run, or the
/// object's creation), no further back than `starting_deadline` seconds before `now`.
///
/// # Errors
/// [`TooManyMissed`] when more than 100 scheduled times fall in that window.
pub fn due_run(
    schedule: &Schedule,
    zone: &TimeZone,
    last: Timestamp,
    starting_deadline: Option<i64>,
    now: Timestamp,
) -> Result<DueRun, TooManyMissed> {
    let mut earliest = last;
    if let Some(deadline) = starting_deadline
        && let Some(limit) = now.checked_sub(SignedDuration::from_secs(deadline)).ok()
        && limit > earliest
    {
        earliest = limit;
    }
    if earliest > now {
        return Ok(DueRun { missed: None, next: schedule.next_after(now, zone) });
    }
    let window = schedule.most_recent_between(earliest, now, zone);
    if window.count >= MISSED_COUNT_LIMIT {
        return Err(TooManyMissed);
    }
    // The next run follows the one due (or the window's start), not `now`: the same instant
    // for a cron schedule, and the chain's next step for `@every`, which upstream's
    // `Next(now)` would run late.
    let next = schedule.next_after(window.most_recent.unwrap_or(earliest), zone);
    Ok(DueRun { missed: window.most_recent, next })
}

/// The child's name for the run at `scheduled`: `<name>-<unix seconds>`.
pub fn child_name(cron_job: &str, scheduled: Timestamp) -> String {
    format!("{cron_job}-{}", scheduled.as_second())
}

/// `scheduled` as the `apps.kruise.io/scheduled-at` annotation: RFC 3339 in UTC, seconds.
pub fn scheduled_at_text(scheduled: Timestamp) -> String {
    Timestamp::from_second(scheduled.as_second()).unwrap_or(scheduled).to_string()
}

/// The whole child object for the run at `scheduled`.
pub fn child_object(cron_job: &AdvancedCronJob, scheduled: Timestamp) -> serde_json::Value {
    let name = cron_job.metadata.name.clone().unwrap_or_default();
    let template = &cron_job.spec.template;
    let (meta, spec) = match template_kind(cron_job) {
        TemplateKind::Job => {
            let t = template.job_template.clone().unwrap_or_default();
            (t.metadata, serde_json::to_value(t.spec).unwrap_or_default())
        }
        TemplateKind::ImageListPullJob => {
            let t = template.image_list_pull_job_template.clone().unwrap_or_default();
            (Some(t.metadata), serde_json::to_value(t.spec).unwrap_or_default())
        }
        _ => {
            let t = template.broadcast_job_template.clone().unwrap_or_default();
            (Some(t.metadata), serde_json::to_value(t.spec).unwrap_or_default())
        }
    };
    let meta = meta.unwrap_or_default();
    let mut annotations = meta.annotations.unwrap_or_default();
    annotations.insert(SCHEDULED_AT.to_owned(), scheduled_at_text(scheduled));
    let owner = OwnerReference {
        api_version: "apps.kruise.io/v1beta1".into(),
        kind: "AdvancedCronJob".into(),
        name: name.clone(),
        uid: cron_job.metadata.uid.clone().unwrap_or_default(),
        controller: Some(true),
        block_owner_deletion: Some(true),
    };
    let mut metadata = json!({
        "name": child_name(&name, scheduled),
        "namespace": cron_job.metadata.namespace.clone().unwrap_or_default(),
        "annotations": annotations,
        "ownerReferences": [owner],
    });
    if let Some(labels) = meta.labels.filter(|l| !l.is_empty()) {
        metadata["labels"] = json!(labels);
    }
    json!({"metadata": metadata, "spec": spec})
}

fn reference(namespace: &str, child: &Child) -> ObjectReference {
    let kind = kind_of(&child.kind);
    ObjectReference {
        api_version: Some(kind.api_version()),
        kind: Some(kind.kind.to_owned()),
        name: Some(child.name.clone()),
        namespace: Some(namespace.to_owned()),
        uid: Some(child.uid.clone()),
        ..ObjectReference::default()
    }
}

fn event(type_: EventType, reason: &'static str, message: String) -> Event {
    Event { type_, reason: reason.into(), message, after_action: None }
}

/// Deletes `child` (guarded by its UID; its pods go in the background), with an Event once done.
fn delete_child(out: &mut Plan<AdvancedCronJobStatus>, namespace: &str, child: &Child, why: &str) {
    let target = Target::new(kind_of(&child.kind), Some(namespace), &child.name)
        .guarded(Guard::Uid(child.uid.clone()));
    out.actions.push(Action::DeleteObject { target });
    out.events.push(Event {
        after_action: Some(out.actions.len() - 1),
        ..event(EventType::Normal, "SuccessfulDelete", format!("Deleted {why} job {}", child.name))
    });
}

/// The finished children of `state` beyond `limit`, oldest start first (no start is oldest).
fn beyond_limit(children: &[Child], state: ChildState, limit: Option<i32>) -> Vec<&Child> {
    let Some(limit) = limit else { return Vec::new() };
    let mut finished: Vec<&Child> =
        children.iter().filter(|c| c.state == state && !c.deleting).collect();
    let keep = usize::try_from(limit).unwrap_or(0);
    if finished.len() <= keep {
        return Vec::new();
    }
    finished.sort_by(|a, b| a.started.cmp(&b.started).then_with(|| a.name.cmp(&b.name)));
    let excess = finished.len() - keep;
    finished.truncate(excess);
    finished
}

/// Plans one reconcile of the AdvancedCronJob in `snapshot` at `now`.
pub fn plan(snapshot: &Snapshot, now: Timestamp) -> Plan<AdvancedCronJobStatus> {
    let cron_job = &snapshot.cron_job;
    let spec = &cron_job.spec;
    let namespace = cron_job.metadata.namespace.clone().unwrap_or_default();
    let name = cron_job.metadata.name.clone().unwrap_or_default();
    let mut out: Plan<AdvancedCronJobStatus> = Plan::empty(Default::default());
    let old = cron_job.status.clone().unwrap_or_default();
    let mut status = old.clone();
    let kind = template_kind(cron_job);
    status.type_ = Some(kind.clone());

    // The children, and the last run: the recorded one, or a later one a child names.
    let mut children: Vec<&Child> = snapshot.children.iter().collect();
    children.sort_by(|a, b| a.name.cmp(&b.name));
    let mut last_run = old.last_schedule_time.as_ref().map(|t| t.0);
    for child in &children {
        if child.scheduled_at > last_run {
            last_run = child.scheduled_at;
        }
    }
    status.last_schedule_time = last_run.map(Time);
    let active: Vec<&Child> =
        children.iter().copied().filter(|c| c.state == ChildState::Active).collect();
    status.active = active.iter().map(|c| reference(&namespace, c)).collect();

    // History: failed jobs first, then succeeded ones.
    for (state, limit, why) in [
        (ChildState::Failed, spec.failed_jobs_history_limit, "failed"),
        (ChildState::Succeeded, spec.successful_jobs_history_limit, "successful"),
    ] {
        for child in beyond_limit(&snapshot.children, state, limit) {
            delete_child(&mut out, &namespace, child, why);
        }
    }

    let finish = |mut out: Plan<AdvancedCronJobStatus>, status: AdvancedCronJobStatus| {
        out.status = (status != old).then_some(status);
        out
    };
    if spec.paused == Some(true) || cron_job.metadata.deletion_timestamp.is_some() {
        return finish(out, status);
    }

    let schedule = match effective_schedule(cron_job) {
        Ok(schedule) => schedule,
        Err(e) => {
            out.events.push(event(
                EventType::Warning,
                "UnparseableSchedule",
                format!("unparsable schedule {:?}: {e}", spec.schedule),
            ));
            return finish(out, status);
        }
    };
    let zone = schedule.time_zone().cloned().unwrap_or_else(|| snapshot.default_zone.clone());
    let since = last_run
        .or_else(|| cron_job.metadata.creation_timestamp.as_ref().map(|t| t.0))
        .unwrap_or(now);
    let due = match due_run(&schedule, &zone, since, spec.starting_deadline_seconds, now) {
        Ok(due) => due,
        Err(e) => {
            out.events.push(event(EventType::Warning, "TooManyMissedTimes", e.to_string()));
            return finish(out, status);
        }
    };
    out.requeue_after = due.next.map(|next| next.duration_since(now));
    let Some(scheduled) = due.missed else {
        return finish(out, status);
    };
    if let Some(deadline) = spec.starting_deadline_seconds
        && scheduled.checked_add(SignedDuration::from_secs(deadline)).is_ok_and(|end| end < now)
    {
        out.events.push(event(
            EventType::Warning,
            "MissSchedule",
            format!("Missed scheduled time to start a job: {}", scheduled_at_text(scheduled)),
        ));
        return finish(out, status);
    }
    match spec.concurrency_policy.clone().unwrap_or(ConcurrencyPolicy::Allow) {
        ConcurrencyPolicy::Forbid if !active.is_empty() => {
            out.events.push(event(
                EventType::Normal,
                "JobAlreadyActive",
                "Not starting job because prior execution is running and concurrency policy is Forbid"
                    .into(),
            ));
            return finish(out, status);
        }
        ConcurrencyPolicy::Replace => {
            for child in active.iter().filter(|c| !c.deleting) {
                delete_child(&mut out, &namespace, child, "active");
            }
        }
        _ => {}
    }
    let child = child_name(&name, scheduled);
    let target = Target::new(kind_of(&kind), Some(&namespace), &child);
    let body = std::sync::Arc::new(child_object(cron_job, scheduled));
    out.actions.push(Action::CreateObject { target, body });
    out.events.push(Event {
        after_action: Some(out.actions.len() - 1),
        ..event(EventType::Normal, "SuccessfulCreate", format!("Created job {child}"))
    });
    status.last_schedule_time = Some(Time(scheduled));
    finish(out, status)
}

#[cfg(test)]
mod tests;
