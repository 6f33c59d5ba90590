use super::*;
use serde_json::json;

fn ts(text: &str) -> Timestamp {
    text.parse().expect("a timestamp")
}

fn cron_job(spec: serde_json::Value, status: serde_json::Value) -> AdvancedCronJob {
    let mut value = json!({
        "apiVersion": "apps.kruise.io/v1beta1", "kind": "AdvancedCronJob",
        "metadata": {"name": "nightly", "namespace": "default", "uid": "acj-uid",
                     "creationTimestamp": "2025-10-10T09:00:00Z"},
        "spec": {"schedule": "*/5 * * * *", "concurrencyPolicy": "Allow",
                 "successfulJobsHistoryLimit": 3, "failedJobsHistoryLimit": 1,
                 "template": {"jobTemplate": {
                     "metadata": {"labels": {"app": "report"}},
                     "spec": {"template": {"spec": {"restartPolicy": "OnFailure",
                         "containers": [{"name": "main", "image": "busybox"}]}}}}}},
        "status": status,
    });
    if let (Some(base), Some(extra)) = (value["spec"].as_object_mut(), spec.as_object()) {
        for (k, v) in extra {
            base.insert(k.clone(), v.clone());
        }
    }
    serde_json::from_value(value).expect("a cron job")
}

fn child(name: &str, scheduled: &str, state: ChildState) -> Child {
    Child {
        kind: TemplateKind::Job,
        name: name.into(),
        uid: format!("{name}-uid"),
        scheduled_at: Some(ts(scheduled)),
        started: Some(ts(scheduled)),
        state,
        deleting: false,
    }
}

fn snapshot(cron_job: AdvancedCronJob, children: Vec<Child>) -> Snapshot {
    Snapshot { cron_job, children, default_zone: TimeZone::UTC }
}

fn created(plan: &Plan<AdvancedCronJobStatus>) -> Vec<(String, serde_json::Value)> {
    plan.actions
        .iter()
        .filter_map(|a| match a {
            Action::CreateObject { target, body } => {
                Some((target.name.clone(), body.as_ref().clone()))
            }
            _ => None,
        })
        .collect()
}

fn deleted(plan: &Plan<AdvancedCronJobStatus>) -> Vec<String> {
    plan.deletions().map(|t| t.name.clone()).collect()
}

fn reasons(plan: &Plan<AdvancedCronJobStatus>) -> Vec<&str> {
    plan.events.iter().map(|e| e.reason.as_ref()).collect()
}

#[test]
fn the_due_run_is_created_with_upstreams_name_annotation_and_owner() {
    let plan = plan(&snapshot(cron_job(json!({}), json!({})), vec![]), ts("2025-10-10T09:07:30Z"));
    let jobs = created(&plan);
    assert_eq!(jobs.len(), 1);
    let (name, body) = &jobs[0];
    assert_eq!(name, "nightly-1760087100");
    assert_eq!(body["metadata"]["annotations"][SCHEDULED_AT], "2025-10-10T09:05:00Z");
    assert_eq!(body["metadata"]["labels"]["app"], "report");
    assert_eq!(body["metadata"]["ownerReferences"][0]["kind"], "AdvancedCronJob");
    assert_eq!(body["metadata"]["ownerReferences"][0]["controller"], true);
    assert_eq!(body["spec"]["template"]["spec"]["restartPolicy"], "OnFailure");
    let status = plan.status.clone().expect("a status");
    assert_eq!(status.type_, Some(TemplateKind::Job));
    assert_eq!(status.last_schedule_time, Some(Time(ts("2025-10-10T09:05:00Z"))));
    assert_eq!(plan.requeue_after, Some(SignedDuration::from_secs(150)));
    assert_eq!(reasons(&plan), ["SuccessfulCreate"]);
}

#[test]
fn nothing_runs_before_the_first_tick_and_the_plan_is_idempotent() {
    let first = plan(&snapshot(cron_job(json!({}), json!({})), vec![]), ts("2025-10-10T09:04:59Z"));
    assert!(created(&first).is_empty());
    assert_eq!(first.requeue_after, Some(SignedDuration::from_secs(1)));
    // After the run: the job exists and the status records it. Nothing new is asked for.
    let after = cron_job(
        json!({}),
        json!({"type": "Job", "lastScheduleTime": "2025-10-10T09:05:00Z", "active": [{
            "apiVersion": "batch/v1", "kind": "Job", "name": "nightly-1760087100",
            "namespace": "default", "uid": "nightly-1760087100-uid"}]}),
    );
    let again = plan(
        &snapshot(
            after,
            vec![child("nightly-1760087100", "2025-10-10T09:05:00Z", ChildState::Active)],
        ),
        ts("2025-10-10T09:06:00Z"),
    );
    assert!(again.is_noop(), "{again:?}");
}

#[test]
fn forbid_skips_while_a_job_runs_and_replace_stops_it() {
    let running = vec![child("nightly-1760087100", "2025-10-10T09:05:00Z", ChildState::Active)];
    let now = ts("2025-10-10T09:10:01Z");
    let forbid = plan(
        &snapshot(cron_job(json!({"concurrencyPolicy": "Forbid"}), json!({})), running.clone()),
        now,
    );
    assert!(created(&forbid).is_empty());
    assert_eq!(reasons(&forbid), ["JobAlreadyActive"]);
    let replace = plan(
        &snapshot(cron_job(json!({"concurrencyPolicy": "Replace"}), json!({})), running.clone()),
        now,
    );
    assert_eq!(deleted(&replace), ["nightly-1760087100"]);
    assert_eq!(created(&replace)[0].0, "nightly-1760087400");
    let allow = plan(&snapshot(cron_job(json!({}), json!({})), running), now);
    assert!(deleted(&allow).is_empty());
    assert_eq!(created(&allow)[0].0, "nightly-1760087400");
}

#[test]
fn history_limits_delete_the_oldest_finished_jobs_even_while_paused() {
    let children = vec![
        child("nightly-1", "2025-10-10T08:40:00Z", ChildState::Succeeded),
        child("nightly-2", "2025-10-10T08:45:00Z", ChildState::Failed),
        child("nightly-3", "2025-10-10T08:50:00Z", ChildState::Failed),
        child("nightly-4", "2025-10-10T08:55:00Z", ChildState::Succeeded),
        child("nightly-5", "2025-10-10T09:00:00Z", ChildState::Succeeded),
        child("nightly-6", "2025-10-10T09:05:00Z", ChildState::Active),
    ];
    let paused = cron_job(json!({"paused": true, "successfulJobsHistoryLimit": 2}), json!({}));
    let out = plan(&snapshot(paused, children), ts("2025-10-10T09:06:00Z"));
    assert_eq!(deleted(&out), ["nightly-2", "nightly-1"]);
    assert!(created(&out).is_empty());
    assert_eq!(out.requeue_after, None);
}

#[test]
fn a_deleted_job_does_not_run_its_tick_again() {
    // Upstream #2213: with the job gone, upstream counts from the creation time again and
    // reruns 09:05. The recorded lastScheduleTime is the floor here.
    let ran = cron_job(json!({}), json!({"lastScheduleTime": "2025-10-10T09:05:00Z"}));
    let out = plan(&snapshot(ran, vec![]), ts("2025-10-10T09:09:00Z"));
    assert!(created(&out).is_empty(), "{out:?}");
}

#[test]
fn only_the_latest_missed_run_starts_and_the_deadline_bounds_the_look_back() {
    let now = ts("2025-10-10T10:02:00Z");
    let out = plan(&snapshot(cron_job(json!({}), json!({})), vec![]), now);
    assert_eq!(
        created(&out).iter().map(|c| c.0.as_str()).collect::<Vec<_>>(),
        ["nightly-1760090400"]
    );
    let late = cron_job(json!({"startingDeadlineSeconds": 60}), json!({}));
    let out = plan(&snapshot(late, vec![]), now);
    assert!(created(&out).is_empty(), "10:00 is more than 60 s ago");
    let too_many = cron_job(json!({"schedule": "* * * * *"}), json!({}));
    let out = plan(&snapshot(too_many, vec![]), ts("2025-10-10T11:00:30Z"));
    assert!(created(&out).is_empty());
    assert_eq!(reasons(&out), ["TooManyMissedTimes"]);
    let bounded =
        cron_job(json!({"schedule": "* * * * *", "startingDeadlineSeconds": 200}), json!({}));
    let out = plan(&snapshot(bounded, vec![]), ts("2025-10-10T11:00:30Z"));
    assert_eq!(created(&out)[0].0, "nightly-1760094000");
}

#[test]
fn the_time_zone_and_every_are_honoured() {
    // Upstream's table: `0 10 * * ?` in Asia/Shanghai after 2022-09-05T09:01Z is 02:00Z next day.
    let shanghai = cron_job(
        json!({"schedule": "0 10 * * ?", "timeZone": "Asia/Shanghai"}),
        json!({"lastScheduleTime": "2022-09-05T09:01:00Z"}),
    );
    let out = plan(&snapshot(shanghai, vec![]), ts("2022-09-06T02:00:05Z"));
    assert_eq!(created(&out)[0].1["metadata"]["annotations"][SCHEDULED_AT], "2022-09-06T02:00:00Z");
    let every = cron_job(json!({"schedule": "@every 10s"}), json!({}));
    let out = plan(&snapshot(every, vec![]), ts("2025-10-10T09:00:25Z"));
    assert_eq!(created(&out)[0].0, "nightly-1760086820");
    assert_eq!(out.requeue_after, Some(SignedDuration::from_secs(5)));
}

#[test]
fn an_unparsable_schedule_is_reported_and_not_retried() {
    let bad = cron_job(json!({"schedule": "61 * * * *"}), json!({}));
    let out = plan(&snapshot(bad, vec![]), ts("2025-10-10T09:10:00Z"));
    assert!(created(&out).is_empty());
    assert_eq!(reasons(&out), ["UnparseableSchedule"]);
    assert_eq!(out.requeue_after, None);
}

#[test]
fn children_of_each_kind_are_classified_as_upstream() {
    let job: Job = serde_json::from_value(json!({"metadata": {"name": "j",
        "annotations": {SCHEDULED_AT: "2025-10-10T09:05:00Z"}},
        "status": {"conditions": [{"type": "Complete", "status": "True"}]}}))
    .expect("job");
    let c = Child::of_job(&job);
    assert_eq!(
        (c.state, c.scheduled_at),
        (ChildState::Succeeded, Some(ts("2025-10-10T09:05:00Z")))
    );
    let bcj: BroadcastJob = serde_json::from_value(json!({"metadata": {"name": "b"},
        "spec": {"template": {}},
        "status": {"conditions": [{"type": "Failed", "status": "True"}], "phase": "failed"}}))
    .expect("bcj");
    assert_eq!(Child::of_broadcast_job(&bcj).state, ChildState::Failed);
    let ilpj = |succeeded: i32| -> ImageListPullJob {
        serde_json::from_value(json!({"metadata": {"name": "i"}, "spec": {"images": ["a"],
            "completionPolicy": {}},
            "status": {"completionTime": "2025-10-10T09:06:00Z", "desired": 2,
                       "succeeded": succeeded, "completed": 2}}))
        .expect("ilpj")
    };
    assert_eq!(Child::of_image_list_pull_job(&ilpj(2)).state, ChildState::Succeeded);
    assert_eq!(Child::of_image_list_pull_job(&ilpj(1)).state, ChildState::Failed);
}

#[test]
fn a_broadcast_job_template_creates_broadcast_jobs() {
    let bcj = cron_job(
        json!({"template": {"broadcastJobTemplate": {"spec": {
            "completionPolicy": {"type": "Always", "ttlSecondsAfterFinished": 30},
            "template": {"spec": {"restartPolicy": "Never",
                "containers": [{"name": "main", "image": "busybox"}]}}}}}}),
        json!({}),
    );
    let out = plan(&snapshot(bcj, vec![]), ts("2025-10-10T09:05:00Z"));
    let Some(Action::CreateObject { target, body }) = out.actions.first() else {
        panic!("{out:?}")
    };
    assert_eq!(target.kind.kind, "BroadcastJob");
    assert_eq!(body["spec"]["completionPolicy"]["ttlSecondsAfterFinished"], 30);
    assert_eq!(out.status.and_then(|s| s.type_), Some(TemplateKind::BroadcastJob));
}
