//! The enhanced liveness probe on the playground, with kubectl: the webhook saves a CloneSet
//! pod's liveness probe, the NodePodProbe lists it, kruise-daemon runs it, and a failing probe
//! restarts the container through a ContainerRecreateRequest, within the pods'
//! PodUnavailableBudget.

use std::time::Duration;

use serde_json::Value;

use crate::common::{Kubectl, Playground, wait_for};

const MINUTE: Duration = Duration::from_secs(60);

/// `replicas` pods whose liveness probe fails while `/tmp/broken` exists (`broken`: from the
/// start, for good).
fn cloneset(replicas: i32, always_broken: bool) -> String {
    let test = if always_broken { "test -f /nothing" } else { "test ! -f /tmp/broken" };
    format!(
        r#"
apiVersion: apps.kruise.io/v1beta1
kind: CloneSet
metadata: {{name: web}}
spec:
  replicas: {replicas}
  selector: {{matchLabels: {{app: web}}}}
  template:
    metadata:
      labels: {{app: web}}
      annotations: {{apps.kruise.io/using-enhanced-liveness: "true"}}
    spec:
      containers:
      - name: main
        image: registry.example/web:v1
        livenessProbe:
          exec: {{command: [sh, -c, "{test}"]}}
          periodSeconds: 1
          failureThreshold: 2
"#
    )
}

fn pods(k: &Kubectl) -> Vec<Value> {
    k.json(&["get", "pods", "-l", "app=web", "-o", "json"])["items"]
        .as_array()
        .cloned()
        .unwrap_or_default()
}

fn restarts(k: &Kubectl) -> Vec<Value> {
    k.json(&[
        "get",
        "containerrecreaterequests",
        "-l",
        "apps.kruise.io/enhanced-liveness-restart=true",
        "-o",
        "json",
    ])["items"]
        .as_array()
        .cloned()
        .unwrap_or_default()
}

fn restart_count(pod: &Value) -> i64 {
    pod["status"]["containerStatuses"][0]["restartCount"].as_i64().unwrap_or(0)
}

#[test]
fn a_failing_probe_restarts_its_container_through_a_request() {
    let pg = Playground::start(2, &["--feature-gates", "EnhancedLivenessProbe=true"]);
    let k = &pg.kubectl;
    // A pod bringing a context the daemon cannot read is refused, naming the annotation.
    let bad = serde_json::json!({"apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": "bad", "annotations": {
            "apps.kruise.io/using-enhanced-liveness": "true",
            "apps.kruise.io/container-probe-context": "[{"}},
        "spec": {"containers": [{"name": "main", "image": "registry.example/web:v1"}]}});
    let refused = k.run_with(&["create", "-f", "-"], Some(&bad.to_string()));
    assert!(!refused.ok, "accepted");
    assert!(
        refused.stderr.contains(
            "metadata.annotations[apps.kruise.io/container-probe-context]: Invalid value"
        ),
        "{}",
        refused.stderr
    );
    k.ok_stdin(&["apply", "-f", "-"], &cloneset(1, false));
    let pod = wait_for("a running pod", MINUTE, || {
        pods(k).into_iter().find(|p| p["status"]["phase"] == "Running")
    });
    let name = pod["metadata"]["name"].as_str().unwrap_or_default().to_owned();
    let node = pod["spec"]["nodeName"].as_str().unwrap_or_default().to_owned();
    assert!(pod["spec"]["containers"][0]["livenessProbe"].is_null(), "the kubelet does not run it");
    let context = pod["metadata"]["annotations"]["apps.kruise.io/container-probe-context"]
        .as_str()
        .unwrap_or_default();
    assert!(context.contains("test ! -f /tmp/broken"), "{context}");

    // The NodePodProbe lists it and the daemon runs it.
    let probe_name = format!("{name}-main");
    wait_for("the probe succeeding on the node", MINUTE, || {
        let npp = k.json(&["get", "nodepodprobe", &node, "-o", "json"]);
        npp["status"]["podProbeStatuses"].as_array()?.iter().find_map(|p| {
            p["probeStates"]
                .as_array()?
                .iter()
                .find(|s| s["name"] == probe_name.as_str() && s["state"] == "Succeeded")?;
            Some(())
        })
    });
    assert_eq!(restart_count(&pod), 0);

    // Broken: restarted once through a request, and healthy again in the new container.
    k.ok(&["exec", &name, "--", "touch", "/tmp/broken"]);
    let restarted = wait_for("the container restarted", MINUTE, || {
        pods(k)
            .into_iter()
            .find(|p| p["metadata"]["name"] == name.as_str() && restart_count(p) >= 1)
    });
    assert_eq!(restart_count(&restarted), 1);
    let requests = restarts(k);
    assert_eq!(requests.len(), 1, "one request: {requests:?}");
    assert_eq!(requests[0]["spec"]["containers"][0]["name"], "main");
    assert_eq!(requests[0]["spec"]["podName"], name.as_str());
    let events = k.ok(&["get", "events", "--field-selector", "reason=EnhancedLivenessRestart"]);
    assert!(events.contains("restarting container main: its liveness probe failed"), "{events}");
    // The new container has no /tmp/broken: its probe passes, and nothing restarts again.
    std::thread::sleep(Duration::from_secs(5));
    let pod = pods(k).into_iter().find(|p| p["metadata"]["name"] == name.as_str()).expect("pod");
    assert_eq!(restart_count(&pod), 1);
    assert_eq!(restarts(k).len(), 1);
}

#[test]
fn a_mass_failure_restarts_within_the_budget() {
    let pg = Playground::start(2, &["--feature-gates", "EnhancedLivenessProbe=true"]);
    let k = &pg.kubectl;
    k.ok_stdin(
        &["apply", "-f", "-"],
        r#"
apiVersion: policy.kruise.io/v1beta1
kind: PodUnavailableBudget
metadata: {name: web}
spec:
  selector: {matchLabels: {app: web}}
  maxUnavailable: 2
"#,
    );
    k.ok_stdin(&["apply", "-f", "-"], &cloneset(10, true));
    // Every probe fails for good: restarts go on, never more than two pods at a time.
    let mut most = 0;
    let mut deferred = false;
    let started = std::time::Instant::now();
    while started.elapsed() < Duration::from_secs(40) {
        let in_flight = restarts(k)
            .iter()
            .filter(|r| {
                !matches!(r["status"]["phase"].as_str(), Some("Succeeded" | "Failed" | "Completed"))
            })
            .count();
        let pub_status =
            k.json(&["get", "podunavailablebudget", "web", "-o", "json"])["status"].clone();
        let reserved = pub_status["unavailablePods"].as_object().map_or(0, |m| m.len());
        most = most.max(in_flight);
        assert!(in_flight <= 2, "{in_flight} restarts in flight under a budget of 2");
        assert!(reserved <= 2, "{reserved} pods reserved in the budget: {pub_status}");
        if !deferred {
            let events = k.ok(&[
                "get",
                "events",
                "--field-selector",
                "reason=EnhancedLivenessRestartDeferred",
            ]);
            deferred = events.contains("its restart waits");
        }
        std::thread::sleep(Duration::from_millis(300));
    }
    let total = restarts(k).len();
    eprintln!("10 failing pods, budget 2: {total} restarts in 40 s, at most {most} in flight");
    assert!(total >= 2, "restarts happened: {total}");
    assert!(total <= 10, "--enhanced-liveness-restarts-per-minute (10) holds: {total}");
    assert!(most >= 1, "restarts were seen in flight");
    assert!(deferred, "the budget held some restarts back");
}
