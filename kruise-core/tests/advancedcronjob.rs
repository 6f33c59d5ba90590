//! AdvancedCronJob planner invariants, over random schedules, policies and histories stepped
//! through time: a tick never runs twice (not even after its job is deleted), every run is a
//! tick of the schedule, `Forbid` never starts a run beside an active one, the history limits
//! hold, and planning again on the plan's own outcome asks for nothing new.

use std::collections::BTreeSet;

use jiff::tz::TimeZone;
use jiff::{SignedDuration, Timestamp};
use kruise_api::apps::v1beta1::{AdvancedCronJob, TemplateKind};
use kruise_api::well_known::annotations::SCHEDULED_AT;
use kruise_core::advancedcronjob::{Child, ChildState, Snapshot, effective_schedule, plan};
use kruise_core::plan::Action;
use proptest::prelude::*;
use serde_json::json;

const SCHEDULES: &[&str] = &[
    "*/5 * * * *",
    "@every 7s",
    "@every 2m",
    "0 * * * *",
    "*/2 9-17 * * 1-5",
    "@hourly",
    "TZ=Europe/Berlin 30 2 * * *",
    "CRON_TZ=Asia/Tokyo 0,15 * * * *",
];

const POLICIES: &[&str] = &["Allow", "Forbid", "Replace"];

fn cron_job(
    schedule: &str,
    policy: &str,
    deadline: Option<i64>,
    limits: (i32, i32),
) -> AdvancedCronJob {
    let mut spec = json!({
        "schedule": schedule, "concurrencyPolicy": policy,
        "successfulJobsHistoryLimit": limits.0, "failedJobsHistoryLimit": limits.1,
        "template": {"jobTemplate": {"spec": {"template": {"spec": {"restartPolicy": "Never",
            "containers": [{"name": "main", "image": "busybox"}]}}}}}
    });
    if let Some(deadline) = deadline {
        spec["startingDeadlineSeconds"] = json!(deadline);
    }
    serde_json::from_value(json!({
        "apiVersion": "apps.kruise.io/v1beta1", "kind": "AdvancedCronJob",
        "metadata": {"name": "acj", "namespace": "default", "uid": "acj-uid",
                     "creationTimestamp": "2024-03-30T23:58:00Z"},
        "spec": spec,
    }))
    .expect("a cron job")
}

/// One step of the world: time passes, then some active jobs finish and some finished jobs
/// are deleted by someone else (a TTL, a person).
#[derive(Clone, Debug)]
struct Step {
    seconds: i64,
    finish: u8,
    remove: u8,
}

fn step() -> impl Strategy<Value = Step> {
    (prop_oneof![1i64..20, 20i64..400, 400i64..7_200], any::<u8>(), any::<u8>())
        .prop_map(|(seconds, finish, remove)| Step { seconds, finish, remove })
}

struct World {
    cron_job: AdvancedCronJob,
    children: Vec<Child>,
    /// Every name ever created.
    created: BTreeSet<String>,
}

impl World {
    fn snapshot(&self) -> Snapshot {
        Snapshot {
            cron_job: self.cron_job.clone(),
            children: self.children.clone(),
            default_zone: TimeZone::UTC,
        }
    }

    /// Carries out a plan; returns the names created.
    fn apply(
        &mut self,
        out: &kruise_core::plan::Plan<kruise_api::apps::v1beta1::AdvancedCronJobStatus>,
        now: Timestamp,
    ) -> Vec<(String, Timestamp)> {
        let mut created = Vec::new();
        for action in &out.actions {
            match action {
                Action::DeleteObject { target } => self.children.retain(|c| c.name != target.name),
                Action::CreateObject { target, body } => {
                    let scheduled: Timestamp = body["metadata"]["annotations"][SCHEDULED_AT]
                        .as_str()
                        .and_then(|t| t.parse().ok())
                        .expect("the scheduled-at annotation");
                    if self.children.iter().all(|c| c.name != target.name) {
                        self.children.push(Child {
                            kind: TemplateKind::Job,
                            name: target.name.clone(),
                            uid: format!("{}-uid", target.name),
                            scheduled_at: Some(scheduled),
                            started: Some(now),
                            state: ChildState::Active,
                            deleting: false,
                        });
                    }
                    created.push((target.name.clone(), scheduled));
                }
                other => panic!("unexpected action {other:?}"),
            }
        }
        if let Some(status) = &out.status {
            self.cron_job.status = Some(status.clone());
        }
        created
    }
}

fn is_tick(schedule: &kruise_core::cron::Schedule, at: Timestamp) -> bool {
    if let Some(every) = schedule.every() {
        // `@every` chains from the previous run; a tick is a whole second.
        return at.subsec_nanosecond() == 0 && every.as_secs() > 0;
    }
    let zone = schedule.time_zone().cloned().unwrap_or(TimeZone::UTC);
    schedule.next_after(at - SignedDuration::from_nanos(1), &zone) == Some(at)
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 128, ..ProptestConfig::default() })]

    #[test]
    fn runs_are_unique_real_ticks_and_policies_hold(
        schedule in prop::sample::select(SCHEDULES.to_vec()),
        policy in prop::sample::select(POLICIES.to_vec()),
        deadline in prop::option::of(0i64..900),
        limits in (0i32..4, 0i32..3),
        steps in prop::collection::vec(step(), 1..40),
    ) {
        let mut world = World {
            cron_job: cron_job(schedule, policy, deadline, limits),
            children: Vec::new(),
            created: BTreeSet::new(),
        };
        let parsed = effective_schedule(&world.cron_job).expect("a schedule");
        let mut now: Timestamp = "2024-03-30T23:58:00Z".parse().expect("now");
        let mut last_run: Option<Timestamp> = None;
        for step in steps {
            now += SignedDuration::from_secs(step.seconds);
            let active_before =
                world.children.iter().filter(|c| c.state == ChildState::Active).count();
            let out = plan(&world.snapshot(), now);
            let created = world.apply(&out, now);
            prop_assert!(created.len() <= 1, "one run per reconcile: {created:?}");
            for (name, scheduled) in &created {
                prop_assert!(world.created.insert(name.clone()), "{name} ran twice");
                prop_assert!(*scheduled <= now, "{name} runs before its time");
                prop_assert!(is_tick(&parsed, *scheduled), "{scheduled} is not a tick of {schedule}");
                prop_assert!(last_run.is_none_or(|last| *scheduled > last), "runs go forward");
                if let Some(deadline) = deadline {
                    prop_assert!(now.duration_since(*scheduled) <= SignedDuration::from_secs(deadline));
                }
                if policy == "Forbid" {
                    prop_assert_eq!(active_before, 0, "Forbid started a run beside an active one");
                }
                last_run = Some(*scheduled);
            }
            if policy == "Replace" && !created.is_empty() {
                let active = world.children.iter().filter(|c| c.state == ChildState::Active).count();
                prop_assert_eq!(active, 1, "Replace leaves only the new run active");
            }
            // The history limits hold once the plan is carried out.
            let finished = |state| world.children.iter().filter(|c| c.state == state).count();
            prop_assert!(finished(ChildState::Succeeded) <= limits.0 as usize);
            prop_assert!(finished(ChildState::Failed) <= limits.1 as usize);
            // Planning again on the outcome creates and deletes nothing; its only change is
            // the status naming a job just created, and after that nothing at all.
            let again = plan(&world.snapshot(), now);
            prop_assert!(again.actions.is_empty(), "{:?}", again.actions);
            world.apply(&again, now);
            let third = plan(&world.snapshot(), now);
            prop_assert!(third.is_noop(), "{third:?}");

            // The world moves: some active jobs finish, some finished ones are deleted.
            let mut bits = step.finish;
            for child in world.children.iter_mut().filter(|c| c.state == ChildState::Active) {
                match bits & 3 {
                    1 => child.state = ChildState::Succeeded,
                    2 => child.state = ChildState::Failed,
                    _ => {}
                }
                bits >>= 2;
            }
            let mut bits = step.remove;
            world.children.retain(|c| {
                let keep = c.state == ChildState::Active || bits & 1 == 0;
                bits >>= 1;
                keep
            });
        }
    }
}
