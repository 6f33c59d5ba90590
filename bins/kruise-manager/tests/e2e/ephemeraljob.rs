//! EphemeralJob on the playground with kubectl: a debug container added to two pods of a
//! CloneSet runs to completion, `kubectl get ejob` reports it, and the job goes after its TTL;
//! a container the webhook refuses is refused naming the field.

use std::time::Duration;

use serde_json::{Value, json};

use crate::common::{Playground, cloneset_yaml, wait_for};

fn ephemeral_job(name: &str, container: Value, spec: Value) -> String {
    let mut job = json!({
        "apiVersion": "apps.kruise.io/v1alpha1", "kind": "EphemeralJob",
        "metadata": {"name": name},
        "spec": {"selector": {"matchLabels": {"app": "web"}},
                 "template": {"ephemeralContainers": [container]}}
    });
    if let (Some(base), Some(extra)) = (job["spec"].as_object_mut(), spec.as_object()) {
        for (k, v) in extra {
            base.insert(k.clone(), v.clone());
        }
    }
    job.to_string()
}

#[test]
fn an_ephemeral_job_debugs_two_pods_of_a_cloneset() {
    let pg = Playground::start(2, &[]);
    let k = &pg.kubectl;
    k.ok_stdin(&["apply", "-f", "-"], &cloneset_yaml("web", 3, ""));
    wait_for("3 ready pods", Duration::from_secs(60), || {
        let cs = k.json(&["get", "cloneset", "web", "-o", "json"]);
        (cs["status"]["readyReplicas"] == 3).then_some(())
    });

    // Nothing is defaulted: a container without its pull policy is refused, naming the field.
    let incomplete = json!({"name": "debugger", "image": "registry.example/busybox:1",
        "terminationMessagePolicy": "File"});
    let out =
        k.run_with(&["create", "-f", "-"], Some(&ephemeral_job("bad", incomplete, json!({}))));
    assert!(!out.ok, "refused");
    assert!(
        out.stderr.contains("vephemeraljobs.kb.io")
            && out.stderr.contains("ephemeralContainers[0].imagePullPolicy: Required value"),
        "{}",
        out.stderr
    );

    let debugger = json!({"name": "debugger", "image": "registry.example/busybox:1",
        "imagePullPolicy": "IfNotPresent", "terminationMessagePolicy": "File",
        "command": ["sh", "-c", "sleep 2"]});
    k.ok_stdin(
        &["apply", "-f", "-"],
        &ephemeral_job(
            "debug",
            debugger,
            json!({"replicas": 2, "parallelism": 2, "ttlSecondsAfterFinished": 5}),
        ),
    );
    let done = wait_for("the job succeeded", Duration::from_secs(60), || {
        let job = k.json(&["get", "ejob", "debug", "-o", "json"]);
        (job["status"]["phase"] == "Succeeded").then_some(job)
    });
    assert_eq!(
        (done["status"]["match"].as_i64(), done["status"]["succeeded"].as_i64()),
        (Some(2), Some(2))
    );
    assert!(done["status"]["completionTime"].is_string(), "{done}");

    // Exactly two pods got the container, marked with the job's UID.
    let uid = done["metadata"]["uid"].as_str().unwrap_or_default().to_owned();
    let pods = k.json(&["get", "pods", "-l", "app=web", "-o", "json"]);
    let debugged: Vec<&Value> = pods["items"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|p| p["spec"]["ephemeralContainers"].is_array())
        .collect();
    assert_eq!(debugged.len(), 2, "{pods}");
    for pod in &debugged {
        let container = &pod["spec"]["ephemeralContainers"][0];
        assert_eq!(container["name"], "debugger");
        assert_eq!(container["env"][0], json!({"name": "KRUISE_EJOB_ID", "value": uid}));
        let state = &pod["status"]["ephemeralContainerStatuses"][0]["state"]["terminated"];
        assert_eq!(state["exitCode"], 0, "{pod}");
    }

    // `kubectl get ejob` reports it.
    let table = k.ok(&["get", "ejob", "debug"]);
    let header: Vec<&str> = table.lines().next().unwrap_or_default().split_whitespace().collect();
    assert_eq!(
        header,
        ["NAME", "STATUS", "MATCH", "SUCCEED", "FAILED", "RUNNING", "WAITING", "AGE"]
    );
    let row: Vec<&str> = table.lines().nth(1).unwrap_or_default().split_whitespace().collect();
    assert_eq!(&row[..7], ["debug", "Succeeded", "2", "2", "0", "0", "0"], "{table}");
    let events = k.ok(&["get", "events", "--field-selector", "involvedObject.name=debug"]);
    assert!(events.contains("SuccessfulCreate"), "{events}");

    // Gone after its TTL; the containers stay in the pods (they cannot be removed).
    wait_for("the job deleted after its TTL", Duration::from_secs(30), || {
        let out = k.run_with(&["get", "ejob", "debug"], None);
        (!out.ok && out.stderr.contains("NotFound")).then_some(())
    });
}
