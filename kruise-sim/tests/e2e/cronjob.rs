//! The built-in CronJob controller, driven with the real kubectl: a CronJob's Job runs on
//! schedule and completes, history limits, `concurrencyPolicy: Forbid`, and kube-apiserver's
//! validation of schedules and time zones.

use crate::common;

use common::Env;
use serde_json::Value;
use std::time::{Duration, Instant};

fn jobs_of(env: &Env, cronjob: &str) -> Vec<Value> {
    let list = env.json(&["get", "jobs", "-o", "json"]);
    list["items"]
        .as_array()
        .cloned()
        .unwrap_or_default()
        .into_iter()
        .filter(|j| j["metadata"]["ownerReferences"][0]["name"] == cronjob)
        .collect()
}

fn complete(job: &Value) -> bool {
    job["status"]["conditions"]
        .as_array()
        .is_some_and(|cs| cs.iter().any(|c| c["type"] == "Complete" && c["status"] == "True"))
}

/// Polls `f` for up to `limit`.
fn within<T>(limit: Duration, what: &str, mut f: impl FnMut() -> Option<T>) -> T {
    let start = Instant::now();
    loop {
        if let Some(v) = f() {
            return v;
        }
        assert!(start.elapsed() < limit, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(200));
    }
}

#[test]
fn a_cronjobs_job_runs_on_the_minute_and_completes() {
    let env = Env::with_controllers(Duration::from_millis(100));
    env.ok(&[
        "create",
        "cronjob",
        "hello",
        "--image=busybox",
        "--schedule=* * * * *",
        "--",
        "echo",
        "hi",
    ]);
    let row = env.ok(&["get", "cronjob", "hello"]);
    let header: Vec<&str> = row.lines().next().unwrap_or_default().split_whitespace().collect();
    assert_eq!(
        header,
        ["NAME", "SCHEDULE", "TIMEZONE", "SUSPEND", "ACTIVE", "LAST", "SCHEDULE", "AGE"]
    );
    // kube-apiserver's printer writes the boolean as `False`, not JSON's `false`.
    let cells: Vec<&str> = row.lines().nth(1).unwrap_or_default().split_whitespace().collect();
    assert_eq!(cells.get(7), Some(&"False"), "{row}");
    // The next minute starts a Job, which completes.
    let job = within(Duration::from_secs(80), "the CronJob's Job completes", || {
        jobs_of(&env, "hello").into_iter().find(complete)
    });
    let name = job["metadata"]["name"].as_str().unwrap_or_default().to_owned();
    let scheduled =
        job["metadata"]["annotations"]["batch.kubernetes.io/cronjob-scheduled-timestamp"]
            .as_str()
            .unwrap_or_default()
            .to_owned();
    let at: jiff::Timestamp = scheduled.parse().expect("an RFC 3339 time");
    assert!(scheduled.ends_with(":00Z"), "on the minute, in UTC: {scheduled}");
    assert_eq!(name, format!("hello-{}", at.as_second() / 60));
    assert_eq!(job["metadata"]["ownerReferences"][0]["kind"], "CronJob");
    let cronjob = within(Duration::from_secs(20), "lastSuccessfulTime", || {
        let cj = env.json(&["get", "cronjob", "hello", "-o", "json"]);
        cj["status"]["lastSuccessfulTime"].is_string().then_some(cj)
    });
    assert_eq!(cronjob["status"]["lastScheduleTime"], scheduled.as_str());
    assert!(cronjob["status"]["active"].is_null(), "{cronjob}");
}

#[test]
fn history_limits_and_forbid() {
    let env = Env::with_controllers(Duration::from_millis(100));
    // `@every` (robfig/cron's, which kube-apiserver accepts) keeps the test short.
    env.ok_stdin(
        &["apply", "-f", "-"],
        r#"{"apiVersion": "batch/v1", "kind": "CronJob", "metadata": {"name": "often"},
            "spec": {"schedule": "@every 2s", "successfulJobsHistoryLimit": 1,
              "jobTemplate": {"spec": {"template": {"spec": {"restartPolicy": "Never",
                "containers": [{"name": "w", "image": "busybox", "command": ["true"]}]}}}}}}"#,
    );
    env.ok_stdin(
        &["apply", "-f", "-"],
        r#"{"apiVersion": "batch/v1", "kind": "CronJob", "metadata": {"name": "long"},
            "spec": {"schedule": "@every 1s", "concurrencyPolicy": "Forbid",
              "jobTemplate": {"spec": {"template": {"spec": {"restartPolicy": "Never",
                "containers": [{"name": "w", "image": "busybox", "command": ["sleep", "600"]}]}}}}}}"#,
    );
    // Several runs of `often`, yet one finished Job kept.
    let cj = within(Duration::from_secs(30), "three runs of often", || {
        let cj = env.json(&["get", "cronjob", "often", "-o", "json"]);
        let runs = jobs_of(&env, "often");
        let first_gone = runs.len() == 1 && cj["status"]["lastSuccessfulTime"].is_string();
        (first_gone && complete(&runs[0])).then_some(cj)
    });
    assert!(cj["status"]["lastScheduleTime"].is_string());
    // Forbid: the first Job of `long` never finishes, so no second one starts.
    std::thread::sleep(Duration::from_secs(4));
    let long = jobs_of(&env, "long");
    assert_eq!(long.len(), 1, "{long:?}");
    let cj = env.json(&["get", "cronjob", "long", "-o", "json"]);
    assert_eq!(cj["status"]["active"][0]["name"], long[0]["metadata"]["name"]);
}

#[test]
fn schedules_and_time_zones_are_validated() {
    let env = Env::new(kruise_sim::Config::default());
    let out = env.fails(&["create", "cronjob", "a", "--image=busybox", "--schedule=61 * * * *"]);
    assert!(
        out.contains(r#"spec.schedule: Invalid value: "61 * * * *": end of range (61) above maximum (59): 61"#),
        "{out}"
    );
    let out = env.fails(&[
        "create",
        "cronjob",
        "b",
        "--image=busybox",
        "--schedule=TZ=Europe/Berlin 0 1 * * *",
    ]);
    assert!(
        out.contains("cannot use TZ or CRON_TZ in schedule, use timeZone field instead"),
        "{out}"
    );
    let out = env.fails_stdin(
        &["apply", "-f", "-"],
        r#"{"apiVersion": "batch/v1", "kind": "CronJob", "metadata": {"name": "c"},
            "spec": {"schedule": "0 1 * * *", "timeZone": "Mars/Olympus",
              "jobTemplate": {"spec": {"template": {"spec": {"restartPolicy": "Never",
                "containers": [{"name": "w", "image": "busybox"}]}}}}}}"#,
    );
    assert!(
        out.contains(
            r#"spec.timeZone: Invalid value: "Mars/Olympus": unknown time zone Mars/Olympus"#
        ),
        "{out}"
    );
    env.ok_stdin(
        &["apply", "-f", "-"],
        r#"{"apiVersion": "batch/v1", "kind": "CronJob", "metadata": {"name": "d"},
            "spec": {"schedule": "30 2 * * MON-FRI", "timeZone": "Europe/Berlin",
              "jobTemplate": {"spec": {"template": {"spec": {"restartPolicy": "Never",
                "containers": [{"name": "w", "image": "busybox"}]}}}}}}"#,
    );
    let row = env.ok(&["get", "cronjob", "d"]);
    assert!(row.contains("Europe/Berlin"), "{row}");
}
