//! AdvancedCronJob on the playground with kubectl: bad input is refused naming the field; an
//! `@every 10s` schedule under Forbid creates Jobs on its ticks, never two at once (a tick
//! that finds one running waits for it), and keeps its history limit; pausing stops the runs;
//! a `broadcastJobTemplate` creates BroadcastJobs.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::common::{Kubectl, Playground, wait_for};

fn cron_job(name: &str, spec: Value) -> String {
    let mut acj = json!({
        "apiVersion": "apps.kruise.io/v1beta1", "kind": "AdvancedCronJob",
        "metadata": {"name": name},
        "spec": {"schedule": "@every 10s", "template": {"jobTemplate": {"spec": {"template": {
            "spec": {"restartPolicy": "Never", "containers": [{"name": "main",
                "image": "registry.example/busybox:1", "command": ["sh", "-c", "sleep 12"]}]}}}}}}
    });
    if let (Some(base), Some(extra)) = (acj["spec"].as_object_mut(), spec.as_object()) {
        for (k, v) in extra {
            base.insert(k.clone(), v.clone());
        }
    }
    acj.to_string()
}

fn refused(k: &Kubectl, manifest: &str, field: &str) {
    let out = k.run_with(&["create", "-f", "-"], Some(manifest));
    assert!(!out.ok, "refused: {manifest}");
    assert!(
        out.stderr.contains("vadvancedcronjob.kb.io") && out.stderr.contains(field),
        "{field}: {}",
        out.stderr
    );
}

/// The AdvancedCronJob's jobs: name -> (scheduled-at, finished).
fn jobs(k: &Kubectl, kind: &str, owner: &str) -> BTreeMap<String, (i64, bool)> {
    let list = k.json(&["get", kind, "-o", "json"]);
    list["items"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|j| j["metadata"]["ownerReferences"][0]["name"] == owner)
        .map(|j| (j["metadata"]["name"].as_str().unwrap_or_default().to_owned(), run_of(j)))
        .collect()
}

/// A job of an AdvancedCronJob: when it was scheduled (Unix seconds, from its
/// `apps.kruise.io/scheduled-at` annotation; 0 without one), and whether it has finished
/// (`Complete` or `Failed`).
pub(crate) fn run_of(job: &Value) -> (i64, bool) {
    let scheduled = job["metadata"]["annotations"]["apps.kruise.io/scheduled-at"]
        .as_str()
        .and_then(|t| t.parse::<jiff::Timestamp>().ok())
        .map_or(0, |t| t.as_second());
    let finished = job["status"]["conditions"]
        .as_array()
        .into_iter()
        .flatten()
        .any(|c| (c["type"] == "Complete" || c["type"] == "Failed") && c["status"] == "True");
    (scheduled, finished)
}

#[test]
fn an_advanced_cron_job_runs_on_its_ticks_under_forbid_and_keeps_its_history() {
    let pg = Playground::start(2, &[]);
    let k = &pg.kubectl;

    // Bad input is refused, naming the field.
    refused(k, &cron_job("bad", json!({"schedule": "61 * * * *"})), "spec.schedule");
    refused(k, &cron_job("bad", json!({"timeZone": "Mars/Olympus"})), "spec.timeZone");
    let always = cron_job("bad", json!({})).replace("\"Never\"", "\"Always\"");
    refused(k, &always, "spec.template.jobTemplate.spec.template.spec.restartPolicy");

    // Every 10 s, each Job running 12 s: Forbid skips the tick that finds one running.
    k.ok_stdin(
        &["apply", "-f", "-"],
        &cron_job("tick", json!({"concurrencyPolicy": "Forbid", "successfulJobsHistoryLimit": 1})),
    );
    let mut seen: BTreeMap<String, i64> = BTreeMap::new();
    let started = Instant::now();
    while started.elapsed() < Duration::from_secs(50) {
        let now = jobs(k, "jobs", "tick");
        let active = now.values().filter(|(_, finished)| !finished).count();
        assert!(active <= 1, "Forbid: never two Jobs at once: {now:?}");
        for (name, (scheduled, _)) in &now {
            seen.insert(name.clone(), *scheduled);
        }
        std::thread::sleep(Duration::from_millis(500));
    }
    assert!(seen.len() >= 3, "Jobs were created on the schedule: {seen:?}");
    let ticks: Vec<i64> = seen.values().copied().collect();
    for (name, scheduled) in &seen {
        assert_eq!(name, &format!("tick-{scheduled}"), "upstream's name: <acj>-<unix seconds>");
        assert_eq!((scheduled - ticks[0]) % 10, 0, "every run is a 10 s tick: {ticks:?}");
    }
    // A tick that finds a Job running waits (JobAlreadyActive below), and runs once that Job
    // is done if the next tick has not come yet, as a missed run: each tick at most once.
    for pair in ticks.windows(2) {
        assert!(pair[1] - pair[0] >= 10, "one run per tick: {ticks:?}");
    }
    // The history limit: one succeeded Job kept (and at most one running).
    wait_for("one succeeded Job kept", Duration::from_secs(15), || {
        let left = jobs(k, "jobs", "tick");
        (left.values().filter(|(_, finished)| *finished).count() <= 1).then_some(())
    });
    let acj = k.json(&["get", "acj", "tick", "-o", "json"]);
    assert_eq!(acj["status"]["type"], "Job");
    assert!(acj["status"]["lastScheduleTime"].is_string(), "{acj}");
    assert_eq!(acj["spec"]["paused"], false, "defaults written");
    let table = k.ok(&["get", "acj", "tick"]);
    assert!(table.contains("SCHEDULE") && table.contains("@every 10s"), "{table}");
    let events = k.ok(&["get", "events", "--field-selector", "involvedObject.name=tick"]);
    assert!(events.contains("SuccessfulCreate") && events.contains("JobAlreadyActive"), "{events}");

    // Paused: no new runs.
    k.ok(&["patch", "acj", "tick", "--type=merge", "-p", r#"{"spec":{"paused":true}}"#]);
    std::thread::sleep(Duration::from_secs(1));
    let before = jobs(k, "jobs", "tick").len();
    let paused_names: Vec<String> = jobs(k, "jobs", "tick").keys().cloned().collect();
    std::thread::sleep(Duration::from_secs(12));
    let after: Vec<String> = jobs(k, "jobs", "tick").keys().cloned().collect();
    assert!(
        after.iter().all(|n| paused_names.contains(n)) && after.len() <= before,
        "paused: {paused_names:?} then {after:?}"
    );

    // A BroadcastJob template creates BroadcastJobs, one pod per node.
    let bcj = json!({"schedule": "@every 10s", "template": {"broadcastJobTemplate": {"spec": {
        "template": {"spec": {"restartPolicy": "Never", "containers": [{"name": "main",
            "image": "registry.example/busybox:1", "command": ["sh", "-c", "exit 0"]}]}}}}}});
    k.ok_stdin(&["apply", "-f", "-"], &cron_job("broadcast", bcj));
    let done = wait_for("a BroadcastJob completed", Duration::from_secs(60), || {
        let list = k.json(&["get", "bcj", "-o", "json"]);
        list["items"]
            .as_array()
            .into_iter()
            .flatten()
            .find(|j| {
                j["metadata"]["ownerReferences"][0]["name"] == "broadcast"
                    && j["status"]["phase"] == "completed"
            })
            .cloned()
    });
    assert_eq!(done["status"]["succeeded"], 2, "{done}");
    assert_eq!(
        k.json(&["get", "acj", "broadcast", "-o", "json"])["status"]["type"],
        "BroadcastJob"
    );
}
