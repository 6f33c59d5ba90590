//! The Job sidecar terminator on the playground (kruise-daemon on every simulated node), with
//! kubectl: a Job whose main container finishes beside a `sleep infinity` sidecar completes.

use std::time::Duration;

use serde_json::Value;

use crate::common::{Kubectl, Playground, wait_for};

fn job(name: &str, sidecar_env: &str) -> String {
    format!(
        r#"
apiVersion: batch/v1
kind: Job
metadata:
  name: {name}
spec:
  backoffLimit: 0
  template:
    spec:
      restartPolicy: Never
      containers:
      - name: main
        image: registry.example/busybox:1
        command: ["sh", "-c", "sleep 2"]
      - name: proxy
        image: registry.example/busybox:1
        command: ["sleep", "infinity"]
        env: {sidecar_env}
"#
    )
}

fn job_pod(k: &Kubectl, job: &str) -> Option<Value> {
    k.json(&["get", "pods", "-l", &format!("job-name={job}"), "-o", "json"])["items"]
        .as_array()?
        .first()
        .cloned()
}

fn terminated_exit(pod: &Value, container: &str) -> Option<i64> {
    pod["status"]["containerStatuses"].as_array()?.iter().find(|s| s["name"] == container)?["state"]
        ["terminated"]["exitCode"]
        .as_i64()
}

#[test]
fn a_job_with_a_sidecar_completes() {
    let pg = Playground::start(1, &["--feature-gates", "SidecarTerminator=true"]);
    let k = &pg.kubectl;

    // The sidecar's exit code is ignored: the pod is marked Succeeded from its main container,
    // then the sidecar is stopped, and the Job completes.
    let ignore = r#"[{name: KRUISE_TERMINATE_SIDECAR_WHEN_JOB_EXIT, value: "true"},
                     {name: KRUISE_TERMINATE_SIDECAR_IGNORE_EXIT_CODE, value: "true"}]"#;
    k.ok_stdin(&["apply", "-f", "-"], &job("batch", ignore));
    wait_for("the Job Complete", Duration::from_secs(90), || {
        let job = k.json(&["get", "job", "batch", "-o", "json"]);
        let complete = job["status"]["conditions"]
            .as_array()?
            .iter()
            .any(|c| c["type"] == "Complete" && c["status"] == "True");
        complete.then_some(())
    });
    let pod = wait_for("the sidecar stopped", Duration::from_secs(60), || {
        let pod = job_pod(k, "batch")?;
        terminated_exit(&pod, "proxy").map(|_| pod)
    });
    assert_eq!(pod["status"]["phase"], "Succeeded", "{pod}");
    assert_eq!(terminated_exit(&pod, "main"), Some(0));
    let condition = pod["status"]["conditions"]
        .as_array()
        .and_then(|c| c.iter().find(|c| c["type"] == "SidecarTerminated").cloned())
        .expect("the SidecarTerminated condition");
    assert_eq!(condition["status"], "True");
    let uid = pod["metadata"]["uid"].as_str().expect("uid");
    let request = k.json(&[
        "get",
        "containerrecreaterequests.apps.kruise.io",
        &format!("sidecar-termination-{uid}"),
        "-o",
        "json",
    ]);
    let names: Vec<&str> = request["spec"]["containers"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|c| c["name"].as_str())
        .collect();
    assert_eq!(names, ["proxy"], "{request}");
    assert_eq!(request["metadata"]["ownerReferences"][0]["kind"], "Pod");

    // Without the ignore switch the sidecar is stopped too, and then its own exit code counts
    // (as upstream): the pod ends, no longer held open by the sidecar.
    let plain = r#"[{name: KRUISE_TERMINATE_SIDECAR_WHEN_JOB_EXIT, value: "true"}]"#;
    k.ok_stdin(&["apply", "-f", "-"], &job("plain", plain));
    let pod = wait_for("the plain job's pod finished", Duration::from_secs(90), || {
        let pod = job_pod(k, "plain")?;
        let phase = pod["status"]["phase"].as_str()?.to_owned();
        matches!(phase.as_str(), "Succeeded" | "Failed").then_some(pod)
    });
    assert_eq!(terminated_exit(&pod, "main"), Some(0));
    assert!(terminated_exit(&pod, "proxy").is_some(), "the sidecar stopped: {pod}");
}
