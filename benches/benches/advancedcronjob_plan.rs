//! The AdvancedCronJob planner (issue #41's target: the next-run computation under 1 µs):
//!
//! - `next_run/<schedule>`: `Schedule::next_after` once, for a cron schedule in UTC, the same
//!   in a zone with daylight saving, a leap day (the longest search) and `@every`;
//! - `plan`: one whole reconcile of an AdvancedCronJob with 10 finished jobs and one running,
//!   when a run is due (history clean-up, the schedule, the new job's body).
//!
//! `cargo bench -p benches --bench advancedcronjob_plan`

use criterion::{Criterion, black_box, criterion_group, criterion_main};
use jiff::Timestamp;
use jiff::tz::TimeZone;
use kruise_api::apps::v1beta1::{AdvancedCronJob, TemplateKind};
use kruise_core::advancedcronjob::{Child, ChildState, Snapshot, plan};
use kruise_core::cron::Schedule;
use serde_json::json;

fn cron_job() -> AdvancedCronJob {
    serde_json::from_value(json!({
        "apiVersion": "apps.kruise.io/v1beta1", "kind": "AdvancedCronJob",
        "metadata": {"name": "report", "namespace": "default", "uid": "acj-uid",
                     "creationTimestamp": "2026-01-01T00:00:00Z"},
        "spec": {"schedule": "*/15 9-17 * * 1-5", "concurrencyPolicy": "Allow",
                 "successfulJobsHistoryLimit": 3, "failedJobsHistoryLimit": 1,
                 "template": {"jobTemplate": {"spec": {"template": {"spec": {
                     "restartPolicy": "OnFailure",
                     "containers": [{"name": "main", "image": "registry.example/report:v1"}]}}}}}},
        "status": {"lastScheduleTime": "2026-01-05T09:15:00Z"}
    }))
    .expect("a cron job")
}

fn bench(c: &mut Criterion) {
    let start: Timestamp = "2026-01-05T09:17:31Z".parse().expect("now");
    let berlin = TimeZone::get("Europe/Berlin").expect("zone");
    let mut group = c.benchmark_group("next_run");
    for (name, spec, zone) in [
        ("weekday_quarter_hours_utc", "*/15 9-17 * * 1-5", TimeZone::UTC),
        ("weekday_quarter_hours_berlin", "*/15 9-17 * * 1-5", berlin.clone()),
        ("nightly_berlin", "30 2 * * *", berlin.clone()),
        // The slowest kind: a leap day, two years ahead, across four daylight-saving changes.
        ("leap_day_berlin", "0 0 29 2 *", berlin),
        ("every_10s", "@every 10s", TimeZone::UTC),
    ] {
        let schedule = Schedule::parse(spec).expect("a schedule");
        group.bench_function(name, |b| {
            b.iter(|| black_box(schedule.next_after(black_box(start), &zone)))
        });
    }
    group.finish();

    let children: Vec<Child> = (0..11)
        .map(|i| Child {
            kind: TemplateKind::Job,
            name: format!("report-{i}"),
            uid: format!("uid-{i}"),
            scheduled_at: Some(start - jiff::SignedDuration::from_mins(15 * (11 - i))),
            started: Some(start - jiff::SignedDuration::from_mins(15 * (11 - i))),
            state: if i == 10 { ChildState::Active } else { ChildState::Succeeded },
            deleting: false,
        })
        .collect();
    let snapshot = Snapshot { cron_job: cron_job(), children, default_zone: TimeZone::UTC };
    let due: Timestamp = "2026-01-05T09:30:05Z".parse().expect("due");
    c.bench_function("plan", |b| b.iter(|| black_box(plan(black_box(&snapshot), due))));
}

criterion_group!(benches, bench);
criterion_main!(benches);
