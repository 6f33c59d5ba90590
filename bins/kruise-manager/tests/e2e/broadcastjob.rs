//! BroadcastJob on the playground with kubectl: a job of `exit 0` runs once on each of the 3
//! nodes, completes and is deleted after its TTL; one whose pods fail under FailFast fails;
//! one with `completionPolicy: Never` runs on a node added later; bad input is refused,
//! naming the field.

use std::time::Duration;

use serde_json::{Value, json};

use crate::common::{Kubectl, Playground, wait_for};

fn job(name: &str, command: &str, spec: Value) -> String {
    let mut job = json!({
        "apiVersion": "apps.kruise.io/v1beta1", "kind": "BroadcastJob",
        "metadata": {"name": name},
        "spec": {
            "template": {"spec": {"restartPolicy": "Never", "containers": [{
                "name": "main", "image": "registry.example/busybox:1",
                "command": ["sh", "-c", command]}]}}
        }
    });
    if let (Some(base), Some(extra)) = (job["spec"].as_object_mut(), spec.as_object()) {
        for (k, v) in extra {
            base.insert(k.clone(), v.clone());
        }
    }
    job.to_string()
}

fn status(k: &Kubectl, name: &str) -> Value {
    let out = k.run_with(&["get", "bcj", name, "-o", "json"], None);
    if !out.ok {
        return Value::Null;
    }
    serde_json::from_str::<Value>(&out.stdout).map(|j| j["status"].clone()).unwrap_or_default()
}

fn pod_nodes(k: &Kubectl, name: &str) -> Vec<String> {
    let list = k.json(&["get", "pods", "-l", &format!("broadcastjob-name={name}"), "-o", "json"]);
    let mut nodes: Vec<String> = list["items"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|p| p["spec"]["nodeName"].as_str().unwrap_or_default().to_owned())
        .collect();
    nodes.sort();
    nodes
}

#[test]
fn a_broadcastjob_runs_once_per_node_completes_and_goes_after_its_ttl() {
    let pg = Playground::start(3, &[]);
    let k = &pg.kubectl;

    // Bad input is refused, naming the field.
    let always = job("bad", "exit 0", json!({}))
        .replace(r#""restartPolicy":"Never""#, r#""restartPolicy":"Always""#);
    let out = k.run_with(&["create", "-f", "-"], Some(&always));
    assert!(!out.ok, "restartPolicy Always is refused");
    assert!(
        out.stderr.contains("vbroadcastjob.kb.io")
            && out.stderr.contains("spec.template.spec.restartPolicy"),
        "{}",
        out.stderr
    );
    let never_ttl = job(
        "bad",
        "exit 0",
        json!({"completionPolicy": {"type": "Never", "ttlSecondsAfterFinished": 5}}),
    );
    let out = k.run_with(&["create", "-f", "-"], Some(&never_ttl));
    assert!(!out.ok && out.stderr.contains("ttlSecondsAfterFinished"), "{}", out.stderr);

    // Runs on every node, one pod each, and completes.
    k.ok_stdin(
        &["apply", "-f", "-"],
        &job("hello", "exit 0", json!({"completionPolicy": {"ttlSecondsAfterFinished": 5}})),
    );
    let done = wait_for("the job completed", Duration::from_secs(90), || {
        let s = status(k, "hello");
        (s["phase"] == "completed").then_some(s)
    });
    assert_eq!((done["desired"].as_i64(), done["succeeded"].as_i64()), (Some(3), Some(3)));
    assert_eq!(done["conditions"][0]["type"], "Complete");
    assert_eq!(pod_nodes(k, "hello"), ["sim-node-0", "sim-node-1", "sim-node-2"]);
    // The defaults were written, and `kubectl get bcj` prints the counts.
    let spec = k.json(&["get", "bcj", "hello", "-o", "json"])["spec"].clone();
    assert_eq!(spec["failurePolicy"]["type"], "FailFast");
    assert_eq!(spec["completionPolicy"]["type"], "Always");
    let table = k.ok(&["get", "bcj", "hello"]);
    assert!(table.contains("DESIRED") && table.contains("SUCCEEDED"), "{table}");
    let events = k.ok(&["get", "events", "--field-selector", "involvedObject.name=hello"]);
    assert!(events.contains("JobComplete"), "{events}");
    // Gone after its TTL, and its pods with it.
    wait_for("the job deleted after its TTL", Duration::from_secs(60), || {
        let out = k.run_with(&["get", "bcj", "hello"], None);
        (!out.ok && out.stderr.contains("NotFound")).then_some(())
    });
    wait_for("its pods collected", Duration::from_secs(60), || {
        pod_nodes(k, "hello").is_empty().then_some(())
    });

    // A failing pod under FailFast fails the job.
    k.ok_stdin(&["apply", "-f", "-"], &job("broken", "exit 3", json!({"parallelism": 1})));
    let failed = wait_for("the job failed", Duration::from_secs(90), || {
        let s = status(k, "broken");
        (s["phase"] == "failed").then_some(s)
    });
    assert_eq!(failed["conditions"][0]["type"], "Failed");
    assert!(failed["failed"].as_i64().is_some_and(|f| f >= 1), "{failed}");
    assert_eq!(pod_nodes(k, "broken").len(), 1, "parallelism 1: one pod was started");

    // `Never` keeps running: a node that joins later gets its pod.
    k.ok_stdin(
        &["apply", "-f", "-"],
        &job("everywhere", "exit 0", json!({"completionPolicy": {"type": "Never"}})),
    );
    wait_for("a pod on each of the 3 nodes", Duration::from_secs(90), || {
        (pod_nodes(k, "everywhere").len() == 3).then_some(())
    });
    let node = json!({"apiVersion": "v1", "kind": "Node", "metadata": {"name": "late-node",
        "labels": {"kubernetes.io/hostname": "late-node"}}});
    k.ok_stdin(&["create", "-f", "-"], &node.to_string());
    let allocatable = json!({"status": {"allocatable": {"cpu": "4", "memory": "8Gi", "pods": "110"},
        "capacity": {"cpu": "4", "memory": "8Gi", "pods": "110"}}});
    k.ok(&[
        "patch",
        "node",
        "late-node",
        "--subresource=status",
        "--type=merge",
        "-p",
        &allocatable.to_string(),
    ]);
    // The new node runs no kubelet: its pod is created, bound to it for the scheduler.
    wait_for("a pod for the new node", Duration::from_secs(60), || {
        let pods = k.ok(&["get", "pods", "-l", "broadcastjob-name=everywhere", "-o", "json"]);
        pods.contains("\"late-node\"").then_some(())
    });
    assert_eq!(status(k, "everywhere")["phase"], "running");
}
