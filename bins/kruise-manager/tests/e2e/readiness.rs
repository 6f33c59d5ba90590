//! The `KruisePodReady` readiness gate, on the playground with kubectl: pods of a Kruise
//! workload get the gate at creation, the pod-readiness controller opens it, and a preDelete
//! hook with `markPodNotReady` takes the pod out of its Service's ready endpoints before the
//! pod is deleted.

use std::time::Duration;

use serde_json::Value;

use crate::common::{Kubectl, Playground, wait_for};

const SERVICE_AND_CLONESET: &str = r#"
apiVersion: v1
kind: Service
metadata:
  name: web
spec:
  selector: {app: web}
  ports:
  - {name: http, port: 80, targetPort: 8080}
---
apiVersion: apps.kruise.io/v1beta1
kind: CloneSet
metadata:
  name: web
spec:
  replicas: 3
  selector:
    matchLabels: {app: web}
  lifecycle:
    preDelete:
      labelsHandler: {example.io/unregister: "true"}
      markPodNotReady: true
  template:
    metadata:
      labels: {app: web, example.io/unregister: "true"}
    spec:
      containers:
      - name: main
        image: registry.example/web:v1
"#;

/// The endpoints of the Service `web`, by pod name: whether each is ready.
fn endpoints(k: &Kubectl) -> Vec<(String, bool)> {
    let slices = k.json(&[
        "get",
        "endpointslices.discovery.k8s.io",
        "-l",
        "kubernetes.io/service-name=web",
        "-o",
        "json",
    ]);
    let mut out: Vec<(String, bool)> = slices["items"]
        .as_array()
        .into_iter()
        .flatten()
        .flat_map(|s| s["endpoints"].as_array().cloned().unwrap_or_default())
        .map(|e| {
            let name = e["targetRef"]["name"].as_str().unwrap_or_default().to_owned();
            (name, e["conditions"]["ready"] == true)
        })
        .collect();
    out.sort();
    out
}

fn condition<'a>(pod: &'a Value, type_: &str) -> Option<&'a Value> {
    pod["status"]["conditions"].as_array()?.iter().find(|c| c["type"] == type_)
}

fn pods(k: &Kubectl) -> Vec<Value> {
    k.json(&["get", "pods", "-l", "app=web", "-o", "json"])["items"]
        .as_array()
        .cloned()
        .unwrap_or_default()
}

#[test]
fn a_pre_delete_hook_drains_the_pod_from_its_service_before_deleting_it() {
    let pg = Playground::start(2, &[]);
    let k = &pg.kubectl;
    k.ok_stdin(&["apply", "-f", "-"], SERVICE_AND_CLONESET);

    // Every pod has the gate from the webhook's rule, opened by the pod-readiness controller,
    // and is a ready endpoint.
    wait_for("3 ready endpoints", Duration::from_secs(60), || {
        let ready = endpoints(k).iter().filter(|(_, ready)| *ready).count();
        (ready == 3).then_some(())
    });
    for pod in pods(k) {
        let gates: Vec<&str> = pod["spec"]["readinessGates"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|g| g["conditionType"].as_str())
            .collect();
        assert!(gates.contains(&"KruisePodReady"), "gates {gates:?}");
        let opened = condition(&pod, "KruisePodReady").expect("the condition");
        assert_eq!(opened["status"], "True", "{opened}");
    }

    // Scale in: the chosen pod waits in PreparingDelete (its hook label is still on), not
    // ready, and no longer a ready endpoint, while it still exists.
    k.ok(&["scale", "clonesets.v1beta1.apps.kruise.io", "web", "--replicas=2"]);
    let leaving = wait_for("a pod in PreparingDelete", Duration::from_secs(60), || {
        pods(k).into_iter().find(|p| {
            p["metadata"]["labels"]["lifecycle.apps.kruise.io/state"] == "PreparingDelete"
        })
    });
    let name = leaving["metadata"]["name"].as_str().expect("a name").to_owned();
    let held = wait_for("KruisePodReady False", Duration::from_secs(30), || {
        let pod = k.json(&["get", "pod", &name, "-o", "json"]);
        let c = condition(&pod, "KruisePodReady")?;
        (c["status"] == "False").then(|| c.clone())
    });
    assert!(
        held["message"].as_str().unwrap_or_default().contains("preDeleteHook"),
        "the hold names the hook: {held}"
    );
    wait_for("the leaving pod no longer a ready endpoint", Duration::from_secs(30), || {
        let eps = endpoints(k);
        let entry = eps.iter().find(|(n, _)| *n == name);
        (entry.is_none_or(|(_, ready)| !ready)
            && eps.iter().filter(|(_, ready)| *ready).count() == 2)
            .then_some(())
    });
    let pod = k.json(&["get", "pod", &name, "-o", "json"]);
    assert!(pod["metadata"]["deletionTimestamp"].is_null(), "not deleted yet: {pod}");
    assert_eq!(condition(&pod, "Ready").map(|c| c["status"].clone()), Some("False".into()));

    // The hook lets go: the pod goes, and two ready endpoints stay.
    k.ok(&["label", "pod", &name, "example.io/unregister-"]);
    wait_for("the pod deleted", Duration::from_secs(60), || {
        let gone = !pods(k).iter().any(|p| p["metadata"]["name"] == name.as_str());
        gone.then_some(())
    });
    wait_for("2 endpoints, both ready", Duration::from_secs(30), || {
        let eps = endpoints(k);
        (eps.len() == 2 && eps.iter().all(|(_, ready)| *ready)).then_some(())
    });
}

/// With `KruisePodReadinessGate` on, every pod gets the gate, a bare pod included, through the
/// generated webhook entry for every pod; the pod-readiness controller opens it and the pod
/// turns Ready. Without the gate a bare pod gets none.
#[test]
fn the_gate_on_gives_every_pod_the_readiness_gate() {
    let bare = |name: &str| {
        format!(
            "apiVersion: v1\nkind: Pod\nmetadata: {{name: {name}}}\nspec:\n  containers: [{{name: main, image: registry.example/app:v1}}]\n"
        )
    };
    let gates = |k: &Kubectl, name: &str| -> Vec<String> {
        k.json(&["get", "pod", name, "-o", "json"])["spec"]["readinessGates"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|g| g["conditionType"].as_str().map(str::to_owned))
            .collect()
    };

    let on = Playground::start(1, &["--feature-gates", "KruisePodReadinessGate=true"]);
    let k = &on.kubectl;
    crate::common::wait_for_catch_all_pod_webhook_removed(k);
    k.ok_stdin(&["apply", "-f", "-"], &bare("bare"));
    assert_eq!(gates(k, "bare"), ["KruisePodReady"]);
    wait_for("the bare pod Ready through its opened gate", Duration::from_secs(60), || {
        let pod = k.json(&["get", "pod", "bare", "-o", "json"]);
        let opened = condition(&pod, "KruisePodReady").is_some_and(|c| c["status"] == "True");
        let ready = condition(&pod, "Ready").is_some_and(|c| c["status"] == "True");
        (opened && ready).then_some(())
    });
    drop(on);

    let off = Playground::start(1, &[]);
    let k = &off.kubectl;
    crate::common::wait_for_catch_all_pod_webhook_removed(k);
    k.ok_stdin(&["apply", "-f", "-"], &bare("plain"));
    assert!(gates(k, "plain").is_empty(), "no gate for a bare pod by default");
}
