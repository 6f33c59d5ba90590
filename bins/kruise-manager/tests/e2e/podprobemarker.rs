//! PodProbeMarker on the playground, with kubectl: an exec probe `cat /tmp/ready` on a
//! CloneSet's pods, run by kruise-daemon on each simulated node through the node's runtime,
//! and `kubectl exec` creating and removing the file.

use std::collections::BTreeSet;
use std::time::Duration;

use serde_json::Value;

use crate::common::{Kubectl, Playground, cloneset_yaml, wait_for};

const MINUTE: Duration = Duration::from_secs(60);

const MARKER: &str = r#"
apiVersion: apps.kruise.io/v1alpha1
kind: PodProbeMarker
metadata:
  name: ready-file
spec:
  selector:
    matchLabels: {app: web}
  probes:
  - name: ready
    containerName: main
    probe:
      exec:
        command: ["cat", "/tmp/ready"]
      periodSeconds: 1
    podConditionType: game.io/ready
    markerPolicy:
    - state: Succeeded
      labels: {ready: "true"}
      annotations: {controller.kubernetes.io/pod-deletion-cost: "10"}
    - state: Failed
      labels: {ready: "false"}
"#;

fn pods(k: &Kubectl) -> Vec<Value> {
    k.json(&["get", "pods", "-l", "app=web", "-o", "json"])["items"]
        .as_array()
        .cloned()
        .unwrap_or_default()
}

fn condition<'a>(pod: &'a Value, type_: &str) -> Option<&'a Value> {
    pod["status"]["conditions"].as_array()?.iter().find(|c| c["type"] == type_)
}

/// (condition status, `ready` label) of each pod, by name.
fn marks(k: &Kubectl) -> Vec<(String, String, String)> {
    pods(k)
        .iter()
        .map(|p| {
            let status = condition(p, "game.io/ready")
                .and_then(|c| c["status"].as_str())
                .unwrap_or("-")
                .to_owned();
            let label = p["metadata"]["labels"]["ready"].as_str().unwrap_or("-").to_owned();
            (p["metadata"]["name"].as_str().unwrap_or_default().to_owned(), status, label)
        })
        .collect()
}

fn wait_marked(k: &Kubectl, pod: &str, status: &str, label: &str) {
    wait_for(&format!("{pod}: condition {status}, label ready={label}"), MINUTE, || {
        marks(k)
            .into_iter()
            .find(|(name, s, l)| name == pod && s == status && l == label)
            .map(|_| ())
    });
}

fn refused(k: &Kubectl, yaml: &str) -> String {
    let out = k.run_with(&["apply", "-f", "-"], Some(yaml));
    assert!(!out.ok, "accepted:\n{yaml}");
    out.stderr
}

#[test]
fn probe_results_become_conditions_and_labels() {
    let pg = Playground::start(2, &[]);
    let k = &pg.kubectl;
    k.ok_stdin(&["apply", "-f", "-"], &cloneset_yaml("web", 3, ""));
    let running = wait_for("three running pods", MINUTE, || {
        let pods = pods(k);
        (pods.len() == 3 && pods.iter().all(|p| p["status"]["phase"] == "Running")).then_some(pods)
    });
    let nodes: BTreeSet<String> = running
        .iter()
        .map(|p| p["spec"]["nodeName"].as_str().unwrap_or_default().to_owned())
        .collect();

    // Bad input is refused, naming the field.
    let duplicate = MARKER.replace(
        "    podConditionType: game.io/ready",
        "    podConditionType: game.io/ready\n  - name: ready\n    containerName: main\n    probe: {exec: {command: [\"true\"]}}\n    podConditionType: game.io/other",
    );
    let err = refused(k, &duplicate);
    assert!(
        err.contains("spec.probes: Invalid value: \"ready\": probe name must be unique"),
        "{err}"
    );
    let no_handler = MARKER.replace(
        "      exec:\n        command: [\"cat\", \"/tmp/ready\"]\n",
        "      timeoutSeconds: 1\n",
    );
    let err = refused(k, &no_handler);
    assert!(err.contains("spec.probe: Required value: must specify a handler type"), "{err}");

    k.ok_stdin(&["apply", "-f", "-"], MARKER);

    // One NodePodProbe per node with the pods' probes.
    wait_for("the NodePodProbes list every pod", MINUTE, || {
        let list = k.json(&["get", "nodepodprobes", "-o", "json"]);
        let listed: BTreeSet<(String, String)> = list["items"]
            .as_array()
            .into_iter()
            .flatten()
            .flat_map(|npp| {
                let node = npp["metadata"]["name"].as_str().unwrap_or_default().to_owned();
                npp["spec"]["podProbes"]
                    .as_array()
                    .cloned()
                    .unwrap_or_default()
                    .into_iter()
                    .filter(|p| p["probes"][0]["name"] == "ready-file#ready")
                    .map(move |p| (node.clone(), p["name"].as_str().unwrap_or_default().to_owned()))
            })
            .collect();
        let expected: BTreeSet<(String, String)> = running
            .iter()
            .map(|p| {
                (
                    p["spec"]["nodeName"].as_str().unwrap_or_default().to_owned(),
                    p["metadata"]["name"].as_str().unwrap_or_default().to_owned(),
                )
            })
            .collect();
        (listed == expected).then_some(())
    });
    let npp_names: BTreeSet<String> = k
        .ok(&["get", "nodepodprobes", "-o", "name"])
        .lines()
        .map(|l| l.trim_start_matches("nodepodprobe.apps.kruise.io/").to_owned())
        .collect();
    assert!(nodes.is_subset(&npp_names), "{nodes:?} {npp_names:?}");
    wait_for("the marker's status", MINUTE, || {
        let status =
            k.json(&["get", "podprobemarker", "ready-file", "-o", "json"])["status"].clone();
        (status["matchedPods"] == 3 && status["observedGeneration"] == 1).then_some(())
    });

    // No file: every pod is marked not ready.
    let first = running[0]["metadata"]["name"].as_str().unwrap_or_default().to_owned();
    for pod in &running {
        wait_marked(k, pod["metadata"]["name"].as_str().unwrap_or_default(), "False", "false");
    }
    let pod = k.json(&["get", "pod", &first, "-o", "json"]);
    let message = condition(&pod, "game.io/ready")
        .and_then(|c| c["message"].as_str())
        .unwrap_or_default()
        .to_owned();
    assert!(message.contains("/tmp/ready"), "the probe's stderr: {message:?}");

    // The file created in one pod: that pod turns ready, and only that one.
    k.ok(&["exec", &first, "-c", "main", "--", "touch", "/tmp/ready"]);
    wait_marked(k, &first, "True", "true");
    let pod = k.json(&["get", "pod", &first, "-o", "json"]);
    assert_eq!(pod["metadata"]["annotations"]["controller.kubernetes.io/pod-deletion-cost"], "10");
    assert_eq!(marks(k).iter().filter(|(_, s, _)| s == "True").count(), 1, "{:?}", marks(k));
    let events =
        k.ok(&["get", "events", "--field-selector", &format!("involvedObject.name={first}")]);
    assert!(events.contains("KruiseProbeSucceeded"), "{events}");

    // Removed again: the label goes back (the Failed policy's), the annotation is removed.
    k.ok(&["exec", &first, "-c", "main", "--", "rm", "/tmp/ready"]);
    wait_marked(k, &first, "False", "false");
    let pod = k.json(&["get", "pod", &first, "-o", "json"]);
    assert!(
        pod["metadata"]["annotations"]["controller.kubernetes.io/pod-deletion-cost"].is_null(),
        "{pod}"
    );

    // The selector is immutable.
    let moved = MARKER.replace("matchLabels: {app: web}", "matchLabels: {app: other}");
    let err = refused(k, &moved);
    assert!(err.contains("selector must be immutable"), "{err}");

    // Deleted, its probes leave every NodePodProbe; the pods keep their last marks.
    k.ok(&["delete", "podprobemarker", "ready-file", "--wait=true"]);
    wait_for("no probes left", MINUTE, || {
        let list = k.json(&["get", "nodepodprobes", "-o", "json"]);
        let left = list["items"]
            .as_array()
            .into_iter()
            .flatten()
            .filter(|npp| npp["spec"]["podProbes"].as_array().is_some_and(|p| !p.is_empty()))
            .count();
        (left == 0).then_some(())
    });
    assert_eq!(marks(k).iter().filter(|(_, s, _)| s == "False").count(), 3, "{:?}", marks(k));
}

/// Serverless mode: a pod gets its probes in `kruise.io/podprobe` at creation; on a
/// virtual-kubelet node, the condition its provider sets becomes its markers.
#[test]
fn serverless_pods_are_marked_from_their_provider_conditions() {
    let pg = Playground::start(1, &["--feature-gates", "EnablePodProbeMarkerOnServerless=true"]);
    let k = &pg.kubectl;
    let node = k.ok(&["get", "nodes", "-o", "name"]).trim().trim_start_matches("node/").to_owned();
    k.ok(&["label", "node", &node, "type=virtual-kubelet", "--overwrite"]);
    // The node's NodePodProbe may have been made before it was labelled: it goes, and must
    // not come back.
    k.ok(&["delete", "nodepodprobes", "--all"]);
    k.ok_stdin(&["apply", "-f", "-"], MARKER);
    let pod = r#"{"apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": "vk-pod", "labels": {"app": "web"}},
        "spec": {"containers": [{"name": "main", "image": "registry.example/web:v1"}]}}"#;
    // Until the generated webhook entry selects the marker's pods, a pod is created without
    // its probes: created again until it has them.
    let created = wait_for("a pod created with its probes", MINUTE, || {
        k.run_with(
            &["delete", "pod", "vk-pod", "--ignore-not-found", "--grace-period=0", "--force"],
            None,
        );
        k.ok_stdin(&["create", "-f", "-"], pod);
        let created = k.json(&["get", "pod", "vk-pod", "-o", "json"]);
        created["metadata"]["annotations"]["kruise.io/podprobe"].is_string().then_some(created)
    });
    let probes: Value = serde_json::from_str(
        created["metadata"]["annotations"]["kruise.io/podprobe"].as_str().unwrap_or("null"),
    )
    .expect("the probes annotation is JSON");
    assert_eq!(probes[0]["name"], "ready", "{created}");
    assert_eq!(probes[0]["podConditionType"], "game.io/ready");
    assert!(probes[0]["markerPolicy"].is_null());
    assert_eq!(created["metadata"]["annotations"]["kruise.io/podprobemarker-list"], "ready-file");
    wait_for("the pod running", MINUTE, || {
        (k.json(&["get", "pod", "vk-pod", "-o", "json"])["status"]["phase"] == "Running")
            .then_some(())
    });
    // No NodePodProbe for a virtual-kubelet node: one whose create was already on its way
    // when the node was labelled is deleted by the controller.
    let probes = || k.ok(&["get", "nodepodprobes", "-o", "name"]).trim().to_owned();
    wait_for("no NodePodProbe", MINUTE, || probes().is_empty().then_some(()));
    // The provider reports the probe in the pod's condition.
    let condition = r#"{"status": {"conditions": [{"type": "game.io/ready", "status": "True"}]}}"#;
    k.ok(&["patch", "pod", "vk-pod", "--subresource=status", "--type=strategic", "-p", condition]);
    wait_marked(k, "vk-pod", "True", "true");
    let condition = r#"{"status": {"conditions": [{"type": "game.io/ready", "status": "False"}]}}"#;
    k.ok(&["patch", "pod", "vk-pod", "--subresource=status", "--type=strategic", "-p", condition]);
    wait_marked(k, "vk-pod", "False", "false");
    assert_eq!(probes(), "", "no NodePodProbe came back");
}

/// With `PodProbeMarkerGate` off, markers are refused with upstream's words.
#[test]
fn markers_are_refused_with_the_gate_off() {
    let pg = Playground::start(1, &["--feature-gates", "PodProbeMarkerGate=false"]);
    let err = refused(&pg.kubectl, MARKER);
    assert!(err.contains("feature-gate PodProbeMarkerGate is not enabled"), "{err}");
}
