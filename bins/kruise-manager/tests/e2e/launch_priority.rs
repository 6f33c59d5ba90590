//! Container launch priority, on the playground with kubectl: a bare pod whose containers ask
//! for priorities 2, 1 and 0 starts them in that order, through the barrier the manager
//! writes; a bad priority is refused with the field named.

use std::time::Duration;

use serde_json::Value;

use crate::common::{Playground, wait_for, wait_for_catch_all_pod_webhook_removed};

const POD: &str = r#"
apiVersion: v1
kind: Pod
metadata:
  name: ordered
spec:
  containers:
  - name: last
    image: registry.example/app:v1
    env: [{name: KRUISE_CONTAINER_PRIORITY, value: "0"}]
  - name: first
    image: registry.example/app:v1
    env: [{name: KRUISE_CONTAINER_PRIORITY, value: "2"}]
    readinessProbe: {exec: {command: ["true"]}}
  - name: middle
    image: registry.example/app:v1
    env: [{name: KRUISE_CONTAINER_PRIORITY, value: "1"}]
    readinessProbe: {exec: {command: ["true"]}}
"#;

const BAD: &str = r#"
apiVersion: v1
kind: Pod
metadata:
  name: bad
spec:
  containers:
  - name: a
    image: registry.example/app:v1
  - name: b
    image: registry.example/app:v1
    env: [{name: KRUISE_CONTAINER_PRIORITY, value: "high"}]
"#;

fn started_at(pod: &Value, container: &str) -> Option<String> {
    pod["status"]["containerStatuses"].as_array()?.iter().find(|s| s["name"] == container)?["state"]
        ["running"]["startedAt"]
        .as_str()
        .map(str::to_owned)
}

#[test]
fn containers_start_in_priority_order_and_a_bad_priority_is_refused() {
    let pg = Playground::start(1, &[]);
    let k = &pg.kubectl;
    // Through the generated entry (its CEL match condition), not the catch-all of the start.
    wait_for_catch_all_pod_webhook_removed(k);
    let entries = k.json(&["get", "mutatingwebhookconfigurations", "-o", "json"]);
    let conditioned = entries["items"]
        .as_array()
        .into_iter()
        .flatten()
        .flat_map(|c| c["webhooks"].as_array().cloned().unwrap_or_default())
        .any(|w| w["matchConditions"][0]["name"] == "container-launch-priority");
    assert!(conditioned, "an entry with the launch-priority match condition: {entries}");
    k.ok_stdin(&["apply", "-f", "-"], POD);

    // The webhook holds the two lower priorities on the barrier; the first is not held.
    let pod = k.json(&["get", "pod", "ordered", "-o", "json"]);
    let barrier_key = |name: &str| -> Option<String> {
        let c = pod["spec"]["containers"].as_array()?.iter().find(|c| c["name"] == name)?;
        let env = c["env"].as_array()?.iter().find(|e| e["name"] == "KRUISE_CONTAINER_BARRIER")?;
        assert_eq!(env["valueFrom"]["configMapKeyRef"]["name"], "ordered-barrier");
        env["valueFrom"]["configMapKeyRef"]["key"].as_str().map(str::to_owned)
    };
    assert_eq!(barrier_key("first"), None);
    assert_eq!(barrier_key("middle").as_deref(), Some("p_1"));
    assert_eq!(barrier_key("last").as_deref(), Some("p_0"));

    let done = wait_for("every container running, the pod marked", Duration::from_secs(60), || {
        let pod = k.json(&["get", "pod", "ordered", "-o", "json"]);
        let marked = pod["metadata"]["annotations"]["apps.kruise.io/container-launch-priority-completed"]
            == "true";
        let all = ["first", "middle", "last"].iter().all(|c| started_at(&pod, c).is_some());
        (marked && all).then_some(pod)
    });
    let times: Vec<String> = ["first", "middle", "last"]
        .iter()
        .map(|c| started_at(&done, c).expect("started"))
        .collect();
    // RFC 3339 in UTC with whole seconds compares as text. Each starts no earlier than the one
    // above it; `first` and `middle` take a while to turn ready (their readiness probes), so
    // `last`, which waits for both, starts in a later second than `first`.
    assert!(times[0] <= times[1] && times[1] <= times[2], "start times {times:?}");
    assert!(times[0] < times[2], "start times {times:?}");
    let barrier = k.json(&["get", "configmap", "ordered-barrier", "-o", "json"]);
    assert_eq!(barrier["data"], serde_json::json!({"p_1": "true", "p_0": "true"}));
    assert_eq!(barrier["metadata"]["ownerReferences"][0]["kind"], "Pod");

    // A priority that is not a number: refused, naming the field, and no pod is created.
    let out = k.run_with(&["apply", "-f", "-"], Some(BAD));
    assert!(!out.ok, "refused: {}", out.stdout);
    assert!(out.stderr.contains("spec.containers[1].env[0].value"), "{}", out.stderr);
    assert!(out.stderr.contains("KRUISE_CONTAINER_PRIORITY must be an integer"), "{}", out.stderr);
    let gone = k.run_with(&["get", "pod", "bad"], None);
    assert!(!gone.ok, "no pod: {}", gone.stdout);
}
