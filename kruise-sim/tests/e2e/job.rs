//! Pods that finish, and the built-in Job controller, driven with the real kubectl: a
//! container's command says how it ends, `kubectl create job` completes, a failing Job retries
//! up to backoffLimit and fails with BackoffLimitExceeded, activeDeadlineSeconds, Indexed
//! Jobs, ttlSecondsAfterFinished, and kube-apiserver's validation of a Job's restartPolicy.

use crate::common;

use common::Env;
use serde_json::Value;
use std::time::Duration;

fn env() -> Env {
    Env::with_controllers(Duration::from_millis(100))
}

fn condition<'a>(object: &'a Value, kind: &str) -> Option<&'a Value> {
    object["status"]["conditions"].as_array()?.iter().find(|c| c["type"] == kind)
}

fn pods_of(env: &Env, job: &str) -> Vec<Value> {
    let list = env.json(&["get", "pods", "-l", &format!("job-name={job}"), "-o", "json"]);
    list["items"].as_array().cloned().unwrap_or_default()
}

/// The cells of the first data row of `kubectl get <what>`.
fn row(env: &Env, what: &[&str]) -> Vec<String> {
    let mut args = vec!["get"];
    args.extend_from_slice(what);
    let out = env.ok(&args);
    out.lines().nth(1).unwrap_or_default().split_whitespace().map(String::from).collect()
}

#[test]
fn containers_end_as_their_command_says() {
    let env = env();
    env.ok(&[
        "run",
        "once",
        "--image=busybox",
        "--restart=Never",
        "--",
        "sh",
        "-c",
        "sleep 1; exit 3",
    ]);
    env.ok(&["run", "fine", "--image=busybox", "--restart=OnFailure", "--", "echo", "hello"]);
    env.ok(&["run", "loop", "--image=busybox", "--", "false"]);
    let failed = env.eventually("pod once fails", "pods", || {
        let pod = env.json(&["get", "pod", "once", "-o", "json"]);
        (pod["status"]["phase"] == "Failed").then_some(pod)
    });
    let state = &failed["status"]["containerStatuses"][0]["state"]["terminated"];
    assert_eq!(state["exitCode"], 3, "{failed}");
    assert_eq!(state["reason"], "Error");
    assert_eq!(condition(&failed, "Ready").map(|c| c["reason"].clone()), Some("PodFailed".into()));
    assert_eq!(row(&env, &["pod", "once"])[2], "Error");
    env.eventually("pod fine succeeds", "pods", || {
        let pod = env.json(&["get", "pod", "fine", "-o", "json"]);
        (pod["status"]["phase"] == "Succeeded").then_some(())
    });
    assert_eq!(row(&env, &["pod", "fine"])[2], "Completed");
    // Restarted at once, then backing off: CrashLoopBackOff, phase Running.
    let looping = env.eventually("pod loop backs off", "pods", || {
        let pod = env.json(&["get", "pod", "loop", "-o", "json"]);
        let waiting = &pod["status"]["containerStatuses"][0]["state"]["waiting"];
        (waiting["reason"] == "CrashLoopBackOff").then_some(pod)
    });
    let status = &looping["status"]["containerStatuses"][0];
    assert_eq!(status["restartCount"], 1, "{looping}");
    assert_eq!(status["lastState"]["terminated"]["exitCode"], 1);
    assert_eq!(looping["status"]["phase"], "Running");
    let message = status["state"]["waiting"]["message"].as_str().unwrap_or_default();
    assert!(
        message.starts_with("back-off 10s restarting failed container=loop pod=loop_default("),
        "{message}"
    );
    assert_eq!(row(&env, &["pod", "loop"])[2], "CrashLoopBackOff");
}

#[test]
fn a_job_runs_its_completions_in_parallel_and_completes() {
    let env = env();
    env.ok(&["create", "job", "hello", "--image=busybox", "--", "sh", "-c", "sleep 0.5; echo hi"]);
    let job = env.json(&["get", "job", "hello", "-o", "json"]);
    let uid = job["metadata"]["uid"].as_str().unwrap_or_default().to_owned();
    // kube-apiserver's defaults and generated selector.
    assert_eq!(
        job["spec"]["selector"]["matchLabels"]["batch.kubernetes.io/controller-uid"],
        uid.as_str()
    );
    let labels = &job["spec"]["template"]["metadata"]["labels"];
    assert_eq!(labels["job-name"], "hello");
    assert_eq!(labels["batch.kubernetes.io/job-name"], "hello");
    assert_eq!(labels["controller-uid"], uid.as_str());
    assert_eq!(job["spec"]["backoffLimit"], 6);
    assert_eq!(job["spec"]["completions"], 1);
    assert_eq!(job["spec"]["podReplacementPolicy"], "TerminatingOrFailed");
    env.ok(&["wait", "--for=condition=complete", "job/hello", "--timeout=30s"]);
    let job = env.json(&["get", "job", "hello", "-o", "json"]);
    assert_eq!(job["status"]["succeeded"], 1, "{job}");
    assert!(job["status"]["completionTime"].is_string());
    let met = condition(&job, "SuccessCriteriaMet").cloned().unwrap_or_default();
    assert_eq!(met["reason"], "CompletionsReached");
    assert_eq!(
        condition(&job, "Complete").map(|c| c["message"].clone()),
        Some("Reached expected number of succeeded pods".into())
    );
    let cells = row(&env, &["job", "hello"]);
    assert_eq!(cells[1..3], ["Complete".to_owned(), "1/1".to_owned()], "{cells:?}");
    let pods = pods_of(&env, "hello");
    assert_eq!(pods.len(), 1);
    assert_eq!(pods[0]["status"]["phase"], "Succeeded");
    assert!(
        pods[0]["metadata"]["finalizers"].is_null(),
        "the tracking finalizer is gone: {}",
        pods[0]
    );
    assert!(pods[0]["metadata"]["name"].as_str().is_some_and(|n| n.starts_with("hello-")));

    // Four completions, two at a time.
    env.ok_stdin(
        &["apply", "-f", "-"],
        r#"{"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "four"},
            "spec": {"completions": 4, "parallelism": 2, "template": {"spec": {"restartPolicy": "Never",
              "containers": [{"name": "w", "image": "busybox", "command": ["sleep", "1"]}]}}}}"#,
    );
    let mut most_active = 0;
    env.eventually("job four completes", "jobs", || {
        let job = env.json(&["get", "job", "four", "-o", "json"]);
        let running =
            pods_of(&env, "four").iter().filter(|p| p["status"]["phase"] != "Succeeded").count();
        most_active = most_active.max(running);
        condition(&job, "Complete").is_some().then_some(())
    });
    assert!(most_active <= 2, "{most_active} pods ran at once");
    assert_eq!(pods_of(&env, "four").len(), 4);
    assert_eq!(row(&env, &["job", "four"])[2], "4/4");
}

#[test]
fn a_failing_job_retries_up_to_its_backoff_limit_then_fails() {
    let env = env();
    env.ok_stdin(
        &["apply", "-f", "-"],
        r#"{"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "flaky"},
            "spec": {"backoffLimit": 1, "template": {"spec": {"restartPolicy": "Never",
              "containers": [{"name": "w", "image": "busybox", "command": ["sh", "-c", "exit 1"]}]}}}}"#,
    );
    // One failure, the 10 s pod-failure back-off, a second failure: over the limit.
    env.ok(&["wait", "--for=condition=failed", "job/flaky", "--timeout=40s"]);
    let job = env.json(&["get", "job", "flaky", "-o", "json"]);
    assert_eq!(job["status"]["failed"], 2, "{job}");
    assert_eq!(job["status"]["active"].as_i64().unwrap_or(0), 0);
    for kind in ["FailureTarget", "Failed"] {
        let c = condition(&job, kind).cloned().unwrap_or_default();
        assert_eq!(c["reason"], "BackoffLimitExceeded", "{kind}: {job}");
        assert_eq!(c["message"], "Job has reached the specified backoff limit");
    }
    assert!(job["status"]["completionTime"].is_null());
    let pods = pods_of(&env, "flaky");
    assert_eq!(pods.len(), 2);
    assert!(pods.iter().all(|p| p["status"]["phase"] == "Failed"));
    assert_eq!(row(&env, &["job", "flaky"])[1], "Failed");
}

#[test]
fn deadlines_indexes_ttl_and_validation() {
    let env = env();
    env.ok_stdin(
        &["apply", "-f", "-"],
        r#"{"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "slow"},
            "spec": {"activeDeadlineSeconds": 1, "template": {"spec": {"restartPolicy": "Never",
              "containers": [{"name": "w", "image": "busybox", "command": ["sleep", "600"]}]}}}}"#,
    );
    env.ok_stdin(
        &["apply", "-f", "-"],
        r#"{"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "indexed"},
            "spec": {"completionMode": "Indexed", "completions": 3, "parallelism": 3,
              "ttlSecondsAfterFinished": 3,
              "template": {"spec": {"restartPolicy": "Never",
              "containers": [{"name": "w", "image": "busybox", "command": ["true"]}]}}}}"#,
    );
    env.ok(&["wait", "--for=condition=complete", "job/indexed", "--timeout=30s"]);
    let indexed = env.json(&["get", "job", "indexed", "-o", "json"]);
    assert_eq!(indexed["status"]["completedIndexes"], "0-2", "{indexed}");
    let mut hosts: Vec<String> = pods_of(&env, "indexed")
        .iter()
        .map(|p| {
            assert_eq!(
                p["metadata"]["labels"]["batch.kubernetes.io/job-completion-index"],
                p["metadata"]["annotations"]["batch.kubernetes.io/job-completion-index"]
            );
            p["spec"]["hostname"].as_str().unwrap_or_default().to_owned()
        })
        .collect();
    hosts.sort();
    assert_eq!(hosts, ["indexed-0", "indexed-1", "indexed-2"]);
    env.ok(&["wait", "--for=condition=failed", "job/slow", "--timeout=30s"]);
    let slow = env.json(&["get", "job", "slow", "-o", "json"]);
    assert_eq!(
        condition(&slow, "Failed").map(|c| c["reason"].clone()),
        Some("DeadlineExceeded".into())
    );
    assert_eq!(slow["status"]["failed"], 1, "the running pod was deleted and counted: {slow}");

    // ttlSecondsAfterFinished: the Job and its pods go.
    env.eventually("job indexed is deleted", "jobs", || {
        let out = env.run(&["get", "job", "indexed"]);
        (!out.ok).then_some(())
    });

    let refused = env.fails_stdin(
        &["apply", "-f", "-"],
        r#"{"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "server"},
            "spec": {"template": {"spec": {"containers": [{"name": "w", "image": "nginx"}]}}}}"#,
    );
    assert!(
        refused.contains(r#"spec.template.spec.restartPolicy: Required value: valid values: "OnFailure", "Never""#),
        "{refused}"
    );
}

#[test]
fn kubectl_debug_adds_an_ephemeral_container_that_cannot_be_removed() {
    let env = env();
    env.ok(&["run", "app", "--image=nginx"]);
    env.ok(&["wait", "--for=condition=ready", "pod/app", "--timeout=30s"]);
    let out =
        env.ok(&["debug", "pod/app", "--image=busybox", "--container=dbg", "--", "sleep", "3600"]);
    assert!(out.is_empty() || !out.contains("error"), "{out}");
    let pod = env.eventually("the ephemeral container runs", "pods", || {
        let pod = env.json(&["get", "pod", "app", "-o", "json"]);
        let status = &pod["status"]["ephemeralContainerStatuses"][0];
        status["state"]["running"].is_object().then_some(pod)
    });
    assert_eq!(pod["spec"]["ephemeralContainers"][0]["name"], "dbg");
    assert_eq!(pod["spec"]["ephemeralContainers"][0]["image"], "busybox");
    assert_eq!(pod["status"]["ephemeralContainerStatuses"][0]["name"], "dbg");
    // Only through the subresource, and only additions.
    let refused = env.fails(&[
        "patch",
        "pod",
        "app",
        "--subresource=ephemeralcontainers",
        "--type=json",
        "-p",
        r#"[{"op": "remove", "path": "/spec/ephemeralContainers/0"}]"#,
    ]);
    assert!(
        refused.contains(r#"spec.ephemeralContainers: Forbidden: existing ephemeral containers "dbg" may not be removed"#),
        "{refused}"
    );
    let refused = env.fails(&[
        "patch", "pod", "app", "--type=json",
        "-p", r#"[{"op": "add", "path": "/spec/ephemeralContainers/-", "value": {"name": "x", "image": "busybox"}}]"#,
    ]);
    assert!(refused.contains("pod updates may not change fields"), "{refused}");
}
