//! Taking over what upstream OpenKruise left behind, and adopting and releasing pods by
//! selector: the real manager binary against kruise-sim, checked with the real kubectl.

use crate::common;

use std::collections::BTreeMap;
use std::time::Duration;

use common::{Kubectl, Proc, SimCluster, upstream_template, wait_for};
use serde_json::json;

fn cluster() -> SimCluster {
    SimCluster::start(
        kruise_sim::Config::default()
            .with_kruise_crds()
            .with_nodes(kruise_sim::nodes::NodesConfig::new(2)),
    )
}

fn start_manager(c: &SimCluster) -> Proc {
    c.run_manager(
        "manager.log",
        &[
            "--enable-leader-election=false",
            "--enable-webhook=false",
            "--metrics-addr",
            "0",
            "--health-probe-addr",
            "0",
        ],
    )
}

/// name -> (uid, restartCount, image) of live pods matching `selector`.
fn pods(kubectl: &Kubectl, selector: &str) -> BTreeMap<String, (String, i64, String)> {
    let list = kubectl.json(&["get", "pods", "-l", selector]);
    list["items"]
        .as_array()
        .expect("items")
        .iter()
        .filter(|p| !p["metadata"]["deletionTimestamp"].is_string())
        .map(|p| {
            (
                p["metadata"]["name"].as_str().unwrap_or_default().to_owned(),
                (
                    p["metadata"]["uid"].as_str().unwrap_or_default().to_owned(),
                    p["status"]["containerStatuses"][0]["restartCount"].as_i64().unwrap_or(-1),
                    p["spec"]["containers"][0]["image"].as_str().unwrap_or_default().to_owned(),
                ),
            )
        })
        .collect()
}

#[test]
fn upstream_cloneset_is_taken_over_without_restarting_anything() {
    let c = cluster();
    let k = &c.kubectl;
    // What upstream's manager left: the CloneSet, its revision, three running pods.
    let cs = json!({
        "apiVersion": "apps.kruise.io/v1beta1",
        "kind": "CloneSet",
        "metadata": {"name": "legacy", "namespace": "default"},
        "spec": {
            "replicas": 3,
            "selector": {"matchLabels": {"app": "nginx"}},
            "template": upstream_template(),
            "updateStrategy": {"rollingUpdate": {"podUpdatePolicy": "InPlaceIfPossible"}}
        }
    });
    k.ok_stdin(&["create", "-f", "-"], &cs.to_string());
    let uid = k.ok(&["get", "clone", "legacy", "-o", "jsonpath={.metadata.uid}"]);
    let owner = json!([{
        "apiVersion": "apps.kruise.io/v1beta1", "kind": "CloneSet", "name": "legacy",
        "uid": uid, "controller": true, "blockOwnerDeletion": true
    }]);
    let revision_name = "legacy-656c6d8895";
    let data = json!({"spec": {"template": {
        "$patch": "replace",
        "metadata": {"creationTimestamp": null, "labels": {"app": "nginx"}},
        "spec": upstream_template()["spec"].clone()
    }}});
    let revision = json!({
        "apiVersion": "apps/v1", "kind": "ControllerRevision",
        "metadata": {
            "name": revision_name, "namespace": "default",
            "labels": {"app": "nginx", "controller.kubernetes.io/hash": "656c6d8895"},
            "ownerReferences": owner
        },
        "data": data,
        "revision": 1
    });
    k.ok_stdin(&["create", "-f", "-"], &revision.to_string());
    for id in ["abcde", "fghij", "klmno"] {
        let mut pod_spec = upstream_template()["spec"].clone();
        pod_spec["readinessGates"] = json!([{"conditionType": "InPlaceUpdateReady"}]);
        let pod = json!({
            "apiVersion": "v1", "kind": "Pod",
            "metadata": {
                "name": format!("legacy-{id}"), "namespace": "default",
                "labels": {
                    "app": "nginx",
                    "apps.kruise.io/cloneset-instance-id": id,
                    "controller-revision-hash": revision_name,
                    "pod-template-hash": "656c6d8895",
                    "lifecycle.apps.kruise.io/state": "Normal"
                },
                "ownerReferences": owner
            },
            "spec": pod_spec
        });
        k.ok_stdin(&["create", "-f", "-"], &pod.to_string());
        let status = json!({"status": {"conditions": [
            {"type": "InPlaceUpdateReady", "status": "True"}
        ]}});
        k.ok(&[
            "patch",
            "pod",
            &format!("legacy-{id}"),
            "--subresource=status",
            "--type=merge",
            "-p",
            &status.to_string(),
        ]);
    }
    let before = wait_for("the legacy pods running", Duration::from_secs(60), || {
        let p = pods(k, "app=nginx");
        (p.len() == 3 && p.values().all(|x| x.1 == 0)).then_some(p)
    });

    let manager = start_manager(&c);
    wait_for("the CloneSet's status from the manager", Duration::from_secs(60), || {
        let s = k.json(&["get", "clone", "legacy"])["status"].clone();
        (s["observedGeneration"] == 1 && s["readyReplicas"] == 3).then_some(())
    });
    std::thread::sleep(Duration::from_secs(3));
    let status = k.json(&["get", "clone", "legacy"])["status"].clone();
    assert_eq!(status["updateRevision"], revision_name, "the upstream revision is recognised");
    assert_eq!(status["currentRevision"], revision_name, "{status}");
    assert_eq!(status["updatedReplicas"], 3, "{status}");
    assert_eq!(pods(k, "app=nginx"), before, "no pod was replaced, updated or restarted");
    let revisions = k.ok(&["get", "controllerrevisions", "-o", "name"]);
    assert_eq!(revisions.trim(), format!("controllerrevision.apps/{revision_name}"));
    drop(manager);
}

#[test]
fn orphans_are_adopted_and_mismatched_pods_released() {
    let c = cluster();
    let k = &c.kubectl;
    // An orphan pod that the CloneSet's selector matches, created before the CloneSet.
    let orphan = json!({
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": "stray", "namespace": "default", "labels": {"app": "adopt"}},
        "spec": {"containers": [{"name": "main", "image": "registry.example/adopt:v1"}]}
    });
    k.ok_stdin(&["create", "-f", "-"], &orphan.to_string());
    let manager = start_manager(&c);
    let cs = json!({
        "apiVersion": "apps.kruise.io/v1beta1", "kind": "CloneSet",
        "metadata": {"name": "adopt", "namespace": "default"},
        "spec": {
            "replicas": 2,
            "selector": {"matchLabels": {"app": "adopt"}},
            "template": {
                "metadata": {"labels": {"app": "adopt"}},
                "spec": {"containers": [{"name": "main", "image": "registry.example/adopt:v1"}]}
            }
        }
    });
    k.ok_stdin(&["create", "-f", "-"], &cs.to_string());
    let uid = k.ok(&["get", "clone", "adopt", "-o", "jsonpath={.metadata.uid}"]);
    wait_for("the orphan adopted", Duration::from_secs(60), || {
        let owner = k.ok(&[
            "get",
            "pod",
            "stray",
            "-o",
            "jsonpath={.metadata.ownerReferences[?(@.controller==true)].uid}",
        ]);
        (owner == uid).then_some(())
    });
    // Two replicas, one of them the adopted pod.
    let p = wait_for("two pods", Duration::from_secs(60), || {
        let p = pods(k, "app=adopt");
        (p.len() == 2).then_some(p)
    });
    assert!(p.contains_key("stray"), "{p:?}");

    // A pod relabelled out of the selector is released and replaced.
    let other = p.keys().find(|n| *n != "stray").expect("another pod").clone();
    k.ok(&["label", "pod", &other, "app=elsewhere", "--overwrite"]);
    wait_for("the relabelled pod released", Duration::from_secs(60), || {
        let owners = k.ok(&["get", "pod", &other, "-o", "jsonpath={.metadata.ownerReferences}"]);
        (!owners.contains(&uid)).then_some(())
    });
    wait_for("a replacement pod", Duration::from_secs(60), || {
        let p = pods(k, "app=adopt");
        (p.len() == 2 && !p.contains_key(&other)).then_some(())
    });
    drop(manager);
}
