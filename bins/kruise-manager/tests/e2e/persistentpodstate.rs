//! PersistentPodState on the playground, with kubectl: an Advanced StatefulSet whose
//! annotations generate its PersistentPodState; a deleted pod comes back on its node with its
//! recorded annotation; with preferred topology only and the node cordoned, elsewhere.

use std::time::Duration;

use serde_json::Value;

use crate::common::{Kubectl, Playground, wait_for};

const MINUTE: Duration = Duration::from_secs(60);

const ASTS: &str = r#"
apiVersion: apps.kruise.io/v1beta1
kind: StatefulSet
metadata:
  name: demo-asts
  annotations:
    kruise.io/auto-generate-persistent-pod-state: "true"
    kruise.io/required-persistent-topology: kubernetes.io/hostname
    kruise.io/persistent-pod-annotations: demo.io/ip
spec:
  replicas: 3
  podManagementPolicy: Parallel
  selector: {matchLabels: {app: demo-asts}}
  template:
    metadata: {labels: {app: demo-asts}}
    spec:
      containers: [{name: main, image: registry.example/demo:v1}]
"#;

fn pod(k: &Kubectl, name: &str) -> Option<Value> {
    let out = k.run_with(&["get", "pod", name, "-o", "json"], None);
    out.ok.then(|| serde_json::from_str(&out.stdout).expect("JSON"))
}

fn ready(pod: &Value) -> bool {
    pod["status"]["conditions"]
        .as_array()
        .is_some_and(|c| c.iter().any(|c| c["type"] == "Ready" && c["status"] == "True"))
}

fn state(k: &Kubectl) -> Option<Value> {
    let out = k.run_with(&["get", "persistentpodstate", "demo-asts", "-o", "json"], None);
    out.ok.then(|| serde_json::from_str(&out.stdout).expect("JSON"))
}

/// Deletes `name` and waits for its replacement to run; returns it.
fn recreate(k: &Kubectl, name: &str) -> Value {
    let uid = pod(k, name).expect("the pod")["metadata"]["uid"].clone();
    k.ok(&["delete", "pod", name, "--wait=false"]);
    wait_for(&format!("{name} recreated and ready"), MINUTE, || {
        pod(k, name).filter(|p| p["metadata"]["uid"] != uid && ready(p))
    })
}

fn refused(k: &Kubectl, yaml: &str) -> String {
    let out = k.run_with(&["apply", "-f", "-"], Some(yaml));
    assert!(!out.ok, "accepted:\n{yaml}");
    out.stderr
}

#[test]
fn recreated_pods_go_back_where_they_were() {
    let pg = Playground::start(3, &[]);
    let k = &pg.kubectl;
    k.ok_stdin(&["apply", "-f", "-"], ASTS);
    wait_for("three records", MINUTE, || {
        state(k).filter(|s| s["status"]["podStates"].as_object().is_some_and(|m| m.len() == 3))
    });
    let generated = state(k).expect("generated");
    assert_eq!(
        generated["spec"]["requiredPersistentTopology"]["keys"],
        serde_json::json!(["kubernetes.io/hostname"])
    );
    assert_eq!(generated["metadata"]["ownerReferences"][0]["kind"], "StatefulSet");

    // Bad input, naming the field.
    let err = refused(
        k,
        "apiVersion: apps.kruise.io/v1beta1\nkind: PersistentPodState\nmetadata: {name: bad}\nspec:\n  targetRef: {apiVersion: apps/v1, kind: Deployment, name: web}\n  requiredPersistentTopology: {keys: [kubernetes.io/hostname]}\n",
    );
    assert!(
        err.contains("spec.targetRef: Invalid value")
            && err.contains("targetRef.Kind must be StatefulSet"),
        "{err}"
    );
    let err = refused(
        k,
        "apiVersion: apps.kruise.io/v1beta1\nkind: PersistentPodState\nmetadata: {name: twin}\nspec:\n  targetRef: {apiVersion: apps.kruise.io/v1beta1, kind: StatefulSet, name: demo-asts}\n  requiredPersistentTopology: {keys: [kubernetes.io/hostname]}\n",
    );
    assert!(
        err.contains("targetRef is in conflict with other PersistentPodState demo-asts"),
        "{err}"
    );

    // The pod's annotation is recorded.
    k.ok(&["annotate", "pod", "demo-asts-1", "demo.io/ip=10.1.1.1"]);
    wait_for("the annotation recorded", MINUTE, || {
        state(k).filter(|s| {
            s["status"]["podStates"]["demo-asts-1"]["annotations"]["demo.io/ip"] == "10.1.1.1"
        })
    });
    let node = pod(k, "demo-asts-1").expect("pod")["spec"]["nodeName"]
        .as_str()
        .unwrap_or_default()
        .to_owned();
    assert_eq!(
        state(k).expect("state")["status"]["podStates"]["demo-asts-1"]["nodeName"],
        node.as_str()
    );

    // Deleted, it comes back on the same node with its annotation.
    let back = recreate(k, "demo-asts-1");
    assert_eq!(back["spec"]["nodeName"], node.as_str());
    assert_eq!(back["spec"]["nodeSelector"]["kubernetes.io/hostname"], node.as_str());
    assert_eq!(back["metadata"]["annotations"]["demo.io/ip"], "10.1.1.1");
    assert_eq!(
        back["metadata"]["annotations"]["kruise.io/injected-persistent-pod-state"],
        "demo-asts"
    );

    // Preferred topology only: the generated spec follows the annotations.
    k.ok(&[
        "annotate",
        "statefulsets.apps.kruise.io",
        "demo-asts",
        "kruise.io/required-persistent-topology-",
        "kruise.io/preferred-persistent-topology=kubernetes.io/hostname",
    ]);
    wait_for("the preferred topology", MINUTE, || {
        state(k).filter(|s| {
            s["spec"]["requiredPersistentTopology"].is_null()
                && s["spec"]["preferredPersistentTopology"][0]["weight"] == 100
        })
    });
    // With its node cordoned, the pod lands elsewhere.
    let node2 = pod(k, "demo-asts-2").expect("pod")["spec"]["nodeName"]
        .as_str()
        .unwrap_or_default()
        .to_owned();
    k.ok(&["cordon", &node2]);
    let moved = recreate(k, "demo-asts-2");
    assert_ne!(moved["spec"]["nodeName"], node2.as_str());
    let preferred = &moved["spec"]["affinity"]["nodeAffinity"]["preferredDuringSchedulingIgnoredDuringExecution"];
    assert_eq!(
        preferred[0]["preference"]["matchExpressions"][0]["values"][0],
        node2.as_str(),
        "{moved}"
    );
    // And it is recorded where it is now.
    let now_on = moved["spec"]["nodeName"].as_str().unwrap_or_default().to_owned();
    wait_for("the new node recorded", MINUTE, || {
        state(k).filter(|s| s["status"]["podStates"]["demo-asts-2"]["nodeName"] == now_on.as_str())
    });
    k.ok(&["uncordon", &node2]);

    // Scaled down, the records of the pods scaled away go.
    k.ok(&["scale", "statefulsets.apps.kruise.io", "demo-asts", "--replicas=1"]);
    wait_for("one record", MINUTE, || {
        state(k).filter(|s| s["status"]["podStates"].as_object().is_some_and(|m| m.len() == 1))
    });
}

const STATEFUL_SET_LIKE_CRD: &str = r#"
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: statefulsetlikes.example.io}
spec:
  group: example.io
  scope: Namespaced
  names: {plural: statefulsetlikes, singular: statefulsetlike, kind: StatefulSetLike, listKind: StatefulSetLikeList}
  versions:
  - name: v1
    served: true
    storage: true
    schema:
      openAPIV3Schema:
        type: object
        properties:
          spec: {type: object, x-kubernetes-preserve-unknown-fields: true}
"#;

const STATEFUL_SET_LIKE: &str = r#"
apiVersion: example.io/v1
kind: StatefulSetLike
metadata:
  name: web
  annotations:
    kruise.io/auto-generate-persistent-pod-state: "true"
    kruise.io/required-persistent-topology: kubernetes.io/hostname
spec: {replicas: 2}
"#;

/// A pod the custom workload `uid` controls, as its own controller would create it.
fn custom_pod(name: &str, uid: &str) -> String {
    serde_json::json!({
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": name, "labels": {"app": "web"}, "ownerReferences": [{
            "apiVersion": "example.io/v1", "kind": "StatefulSetLike", "name": "web",
            "uid": uid, "controller": true}]},
        "spec": {"containers": [{"name": "main", "image": "registry.example/web:v1"}]}
    })
    .to_string()
}

/// A custom workload kind is followed once `PPS_Watch_Custom_Workload_WhiteList` names it,
/// without a restart: its annotations generate the PersistentPodState, its pods' nodes are
/// recorded, a recreated pod is sent back, and scaling it down drops the records.
#[test]
fn whitelisted_custom_workloads_are_followed() {
    let pg = Playground::start(3, &[]);
    let k = &pg.kubectl;
    k.ok_stdin(&["apply", "-f", "-"], STATEFUL_SET_LIKE_CRD);
    wait_for("the custom kind served", MINUTE, || {
        k.run_with(&["get", "statefulsetlikes"], None).ok.then_some(())
    });
    let custom_state = "apiVersion: apps.kruise.io/v1beta1\nkind: PersistentPodState\nmetadata: {name: by-hand}\nspec:\n  targetRef: {apiVersion: example.io/v1, kind: StatefulSetLike, name: other}\n  requiredPersistentTopology: {keys: [kubernetes.io/hostname]}\n";
    let err = refused(k, custom_state);
    assert!(
        err.contains(
            "targetRef.Kind must be StatefulSet or in PPS_Watch_Custom_Workload_WhiteList"
        ),
        "{err}"
    );

    // A broken entry refuses such writes, naming it.
    k.ok(&[
        "create",
        "configmap",
        "kruise-configuration",
        "-n",
        "kruise-system",
        "--from-literal=PPS_Watch_Custom_Workload_WhiteList={",
    ]);
    let err = refused(k, custom_state);
    assert!(
        err.contains("invalid PPS_Watch_Custom_Workload_WhiteList in kruise-configuration"),
        "{err}"
    );
    k.ok(&["delete", "configmap", "kruise-configuration", "-n", "kruise-system"]);
    k.ok(&["create", "configmap", "kruise-configuration", "-n", "kruise-system",
        r#"--from-literal=PPS_Watch_Custom_Workload_WhiteList={"workloads":[{"Group":"example.io","Version":"v1","Kind":"StatefulSetLike"}]}"#]);
    k.ok_stdin(&["apply", "-f", "-"], custom_state);
    k.ok(&["delete", "persistentpodstate", "by-hand"]);

    k.ok_stdin(&["apply", "-f", "-"], STATEFUL_SET_LIKE);
    let uid = k.ok(&["get", "statefulsetlike", "web", "-o", "jsonpath={.metadata.uid}"]);
    for name in ["web-0", "web-1"] {
        k.ok_stdin(&["create", "-f", "-"], &custom_pod(name, &uid));
    }
    let custom_state = |k: &Kubectl| {
        let out = k.run_with(&["get", "persistentpodstate", "web", "-o", "json"], None);
        out.ok.then(|| serde_json::from_str::<Value>(&out.stdout).expect("JSON"))
    };
    let recorded = wait_for("two records of the custom workload's pods", MINUTE, || {
        custom_state(k)
            .filter(|s| s["status"]["podStates"].as_object().is_some_and(|m| m.len() == 2))
    });
    assert_eq!(recorded["metadata"]["ownerReferences"][0]["kind"], "StatefulSetLike");
    assert_eq!(recorded["metadata"]["ownerReferences"][0]["uid"], uid.as_str());

    // Deleted and created again by its controller, the pod goes back to its node.
    let node = recorded["status"]["podStates"]["web-1"]["nodeName"]
        .as_str()
        .unwrap_or_default()
        .to_owned();
    k.ok(&["delete", "pod", "web-1", "--wait=true"]);
    k.ok_stdin(&["create", "-f", "-"], &custom_pod("web-1", &uid));
    let back = wait_for("web-1 back and ready", MINUTE, || pod(k, "web-1").filter(ready));
    assert_eq!(back["spec"]["nodeSelector"]["kubernetes.io/hostname"], node.as_str());
    assert_eq!(back["spec"]["nodeName"], node.as_str());
    assert_eq!(back["metadata"]["annotations"]["kruise.io/injected-persistent-pod-state"], "web");

    // Scaled down, the record of the pod scaled away goes once its controller deletes it.
    k.ok(&["patch", "statefulsetlike", "web", "--type=merge", "-p", r#"{"spec":{"replicas":1}}"#]);
    k.ok(&["delete", "pod", "web-1", "--wait=false"]);
    let one = wait_for("one record", MINUTE, || {
        custom_state(k)
            .filter(|s| s["status"]["podStates"].as_object().is_some_and(|m| m.len() == 1))
    });
    assert!(one["status"]["podStates"]["web-0"].is_object(), "{one}");
}
