//! UnitedDeployment on the playground with kubectl, over three node pools (the simulated nodes
//! labelled `pool=a|b|c`): bad input is refused naming the field; the manual's sample gets one
//! CloneSet per subset with 1, 3 and 2 replicas on the right pools; a template change rolls
//! every subset while a Manual partition holds; `kubectl scale ud` re-allocates; deletion
//! protection refuses a labelled delete; and with one
//! pool cordoned, Adaptive moves the replicas whose pods wait for a node to the next subset,
//! and new replicas go back to the first pool once it returns.

use std::collections::BTreeMap;
use std::time::Duration;

use serde_json::{Value, json};

use crate::common::{Kubectl, Playground, wait_for};

fn ud(name: &str, topology: Value, extra: Value) -> String {
    let mut ud = json!({
        "apiVersion": "apps.kruise.io/v1beta1", "kind": "UnitedDeployment",
        "metadata": {"name": name},
        "spec": {"replicas": 6, "selector": {"matchLabels": {"app": name}},
            "template": {"cloneSetTemplate": {"metadata": {"labels": {"app": name}},
                "spec": {"selector": {"matchLabels": {"app": name}}, "template": {
                    "metadata": {"labels": {"app": name}},
                    "spec": {"containers": [{"name": "main", "image": "registry.example/nginx:v1"}]}}}}},
            "topology": topology}
    });
    if let (Some(base), Some(extra)) = (ud["spec"].as_object_mut(), extra.as_object()) {
        for (k, v) in extra {
            base.insert(k.clone(), v.clone());
        }
    }
    ud.to_string()
}

fn pool(subset: &str, name: &str, replicas: Value) -> Value {
    let mut s = json!({"name": subset, "nodeSelectorTerm": {"matchExpressions": [
        {"key": "pool", "operator": "In", "values": [name]}]}});
    if !replicas.is_null() {
        s["replicas"] = replicas;
    }
    s
}

/// Subset -> (CloneSet spec.replicas, ready).
fn subsets(k: &Kubectl, ud: &str) -> BTreeMap<String, (i64, i64)> {
    let list = k.json(&["get", "clonesets", "-l", &format!("app={ud}"), "-o", "json"]);
    list["items"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|c| {
            (
                c["metadata"]["labels"]["apps.kruise.io/subset-name"]
                    .as_str()
                    .unwrap_or_default()
                    .to_owned(),
                (
                    c["spec"]["replicas"].as_i64().unwrap_or(-1),
                    c["status"]["readyReplicas"].as_i64().unwrap_or(0),
                ),
            )
        })
        .collect()
}

/// Subset -> the pools its running pods are on.
fn pod_pools(
    k: &Kubectl,
    ud: &str,
    nodes: &BTreeMap<String, String>,
) -> BTreeMap<String, Vec<String>> {
    let pods = k.json(&["get", "pods", "-l", &format!("app={ud}"), "-o", "json"]);
    let mut out: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for p in pods["items"].as_array().into_iter().flatten() {
        let node = p["spec"]["nodeName"].as_str().unwrap_or_default();
        let subset =
            p["metadata"]["labels"]["apps.kruise.io/subset-name"].as_str().unwrap_or_default();
        if let Some(pool) = nodes.get(node) {
            out.entry(subset.to_owned()).or_default().push(pool.clone());
        }
    }
    out
}

fn refused(k: &Kubectl, manifest: &str, field: &str) {
    let out = k.run_with(&["create", "-f", "-"], Some(manifest));
    assert!(!out.ok, "refused: {manifest}");
    assert!(
        out.stderr.contains("vuniteddeployment.kb.io") && out.stderr.contains(field),
        "{field}: {}",
        out.stderr
    );
}

#[test]
fn a_united_deployment_spreads_over_node_pools() {
    let pg = Playground::start(3, &["--feature-gates", "ResourcesDeletionProtection=true"]);
    let k = &pg.kubectl;
    let mut nodes = BTreeMap::new();
    for (i, p) in ["a", "b", "c"].iter().enumerate() {
        let node = format!("sim-node-{i}");
        k.ok(&["label", "node", &node, &format!("pool={p}")]);
        nodes.insert(node, (*p).to_owned());
    }

    // Bad input is refused, naming the field.
    let over = json!({"subsets": [pool("subset-a", "a", json!("120%")), pool("subset-b", "b", Value::Null)]});
    refused(k, &ud("bad", over, json!({})), "spec.topology.subsets[0].replicas");
    let both = json!({"subsets": [
        {"name": "subset-a", "replicas": 1, "minReplicas": 1}, {"name": "subset-b"}]});
    refused(k, &ud("bad", both, json!({})), "mutually exclusive");
    let upper = json!({"subsets": [{"name": "Subset_A"}]});
    refused(k, &ud("bad", upper, json!({})), "spec.topology.subsets[0].name");

    // The manual's sample: 1, half and the rest.
    let topology = json!({"subsets": [
        pool("subset-a", "a", json!(1)), pool("subset-b", "b", json!("50%")), pool("subset-c", "c", Value::Null)]});
    k.ok_stdin(&["apply", "-f", "-"], &ud("sample", topology, json!({})));
    wait_for("the subsets at 1/3/2, ready", Duration::from_secs(90), || {
        let s = subsets(k, "sample");
        let want: BTreeMap<String, (i64, i64)> =
            [("subset-a".into(), (1, 1)), ("subset-b".into(), (3, 3)), ("subset-c".into(), (2, 2))]
                .into();
        (s == want).then_some(())
    });
    for (subset, pools) in pod_pools(k, "sample", &nodes) {
        let want = subset.trim_start_matches("subset-");
        assert!(pools.iter().all(|p| p == want), "{subset}'s pods on {pools:?}");
    }
    let ud_json = k.json(&["get", "ud", "sample", "-o", "json"]);
    assert_eq!(ud_json["status"]["readyReplicas"], 6, "{ud_json}");
    assert_eq!(ud_json["status"]["labelSelector"], "app=sample");
    assert_eq!(ud_json["status"]["currentRevision"], ud_json["status"]["updatedRevision"]);
    let names: Vec<String> =
        k.json(&["get", "clonesets", "-l", "app=sample", "-o", "json"])["items"]
            .as_array()
            .into_iter()
            .flatten()
            .map(|c| c["metadata"]["name"].as_str().unwrap_or_default().to_owned())
            .collect();
    assert!(
        names
            .iter()
            .all(|n| n.starts_with("sample-subset-") && n.len() == "sample-subset-a-".len() + 5),
        "{names:?}"
    );
    let table = k.ok(&["get", "ud", "sample"]);
    assert!(table.contains("DESIRED") && table.contains("READY"), "{table}");

    // A new image rolls every subset; subset-b's partition keeps one pod on the old one.
    let patch = json!({"spec": {
        "updateStrategy": {"manualUpdate": {"partitions": {"subset-b": 1}}},
        "template": {"cloneSetTemplate": {"spec": {"template": {"spec": {"containers": [
            {"name": "main", "image": "registry.example/nginx:v2"}]}}}}}}});
    k.ok(&["patch", "ud", "sample", "--type=merge", "-p", &patch.to_string()]);
    let rolled =
        wait_for("5 pods updated, 1 held by the partition", Duration::from_secs(120), || {
            let u = k.json(&["get", "ud", "sample", "-o", "json"]);
            (u["status"]["updatedReplicas"] == 5 && u["status"]["readyReplicas"] == 6).then_some(u)
        });
    assert_ne!(
        rolled["status"]["currentRevision"], rolled["status"]["updatedRevision"],
        "not every pod is updated"
    );
    let images: Vec<String> = k.json(&[
        "get",
        "pods",
        "-l",
        "app=sample,apps.kruise.io/subset-name=subset-b",
        "-o",
        "json",
    ])["items"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|p| p["spec"]["containers"][0]["image"].as_str().unwrap_or_default().to_owned())
        .collect();
    assert_eq!(images.iter().filter(|i| i.ends_with(":v1")).count(), 1, "{images:?}");

    // `kubectl scale` re-allocates: 8 = 1 + 4 + 3.
    k.ok(&["scale", "ud", "sample", "--replicas=8"]);
    wait_for("the subsets at 1/4/3", Duration::from_secs(90), || {
        let s = subsets(k, "sample");
        (s.get("subset-a").map(|x| x.0) == Some(1)
            && s.get("subset-b").map(|x| x.0) == Some(4)
            && s.get("subset-c").map(|x| x.0) == Some(3))
        .then_some(())
    });

    // Deletion protection still covers it.
    k.ok(&["label", "ud", "sample", "policy.kruise.io/delete-protection=Always"]);
    let out = k.run_with(&["delete", "ud", "sample"], None);
    assert!(!out.ok && out.stderr.contains("vuniteddeployment.kb.io"), "{}", out.stderr);
    k.ok(&["label", "ud", "sample", "policy.kruise.io/delete-protection-"]);

    // Adaptive, with pool a cordoned: its pods wait for a node, and after 2 s their replicas
    // move to pool b.
    k.ok(&["cordon", "sim-node-0"]);
    let adaptive = json!({"scheduleStrategy": {"type": "Adaptive", "adaptive": {
            "rescheduleCriticalSeconds": 2, "unschedulableDuration": 10}},
        "subsets": [pool("first", "a", Value::Null), pool("second", "b", Value::Null)]});
    k.ok_stdin(&["apply", "-f", "-"], &ud("adapt", adaptive, json!({"replicas": 2})));
    wait_for(
        "the replicas moved to the second pool and run there",
        Duration::from_secs(90),
        || {
            let s = subsets(k, "adapt");
            (s.get("first").map(|x| x.0) == Some(0) && s.get("second") == Some(&(2, 2)))
                .then_some(())
        },
    );
    let status = k.json(&["get", "ud", "adapt", "-o", "json"])["status"].clone();
    let first = &status["subsetStatuses"][0];
    assert_eq!(
        (first["name"].as_str(), first["conditions"][0]["status"].as_str()),
        (Some("first"), Some("False")),
        "{status}"
    );
    // Pool a returns; once the subset recovers, new replicas go there first.
    k.ok(&["uncordon", "sim-node-0"]);
    wait_for("the first subset recovered", Duration::from_secs(60), || {
        let s = k.json(&["get", "ud", "adapt", "-o", "json"]);
        (s["status"]["subsetStatuses"][0]["conditions"][0]["status"] == "True").then_some(())
    });
    k.ok(&["scale", "ud", "adapt", "--replicas=4"]);
    wait_for("the new replicas on pool a", Duration::from_secs(90), || {
        let s = subsets(k, "adapt");
        (s.get("first") == Some(&(2, 2)) && s.get("second") == Some(&(2, 2))).then_some(())
    });
}

/// Reserved pods per subset, from the pods' `apps.kruise.io/united-deployment-reserved-pod`.
fn reserved(k: &Kubectl, ud: &str) -> BTreeMap<String, usize> {
    let pods = k.json(&["get", "pods", "-l", &format!("app={ud}"), "-o", "json"]);
    let mut out = BTreeMap::new();
    for p in pods["items"].as_array().into_iter().flatten() {
        let labels = &p["metadata"]["labels"];
        if labels["apps.kruise.io/united-deployment-reserved-pod"] == "true" {
            let subset = labels["apps.kruise.io/subset-name"].as_str().unwrap_or_default();
            *out.entry(subset.to_owned()).or_default() += 1;
        }
    }
    out
}

/// `reserveUnschedulablePods`: the pods of a pool with no node are kept and labelled reserved,
/// the next subset runs temporary pods for them, and once the pool has a node and the kept
/// pods run, the temporary pods go.
#[test]
fn reserved_pods_keep_their_replicas_until_their_pool_returns() {
    let pg = Playground::start(2, &[]);
    let k = &pg.kubectl;
    k.ok(&["label", "node", "sim-node-1", "pool=b"]);
    let topology = json!({"scheduleStrategy": {"type": "Adaptive", "adaptive": {
            "rescheduleCriticalSeconds": 2, "unschedulableDuration": 2,
            "reserveUnschedulablePods": true}},
        "subsets": [pool("first", "a", Value::Null), pool("second", "b", Value::Null)]});
    k.ok_stdin(&["apply", "-f", "-"], &ud("keep", topology, json!({"replicas": 2})));
    wait_for(
        "the first pool's pods reserved, two temporary pods running",
        Duration::from_secs(90),
        || {
            let s = subsets(k, "keep");
            (s.get("first").map(|x| x.0) == Some(2)
                && s.get("second") == Some(&(2, 2))
                && reserved(k, "keep").get("first") == Some(&2))
            .then_some(())
        },
    );
    let status = k.json(&["get", "ud", "keep", "-o", "json"])["status"].clone();
    assert_eq!(status["reservedPods"], 2, "{status}");
    assert_eq!(status["replicas"], 2, "reserved pods are not counted: {status}");
    let first = &status["subsetStatuses"][0];
    assert_eq!(
        (first["reservedPods"].as_i64(), first["conditions"][0]["status"].as_str()),
        (Some(2), Some("False"))
    );
    assert!(
        status["labelSelector"]
            .as_str()
            .is_some_and(|s| s.ends_with(",apps.kruise.io/united-deployment-reserved-pod=false")),
        "{status}"
    );

    // The pool gets a node: the kept pods run, leave reservation, and the temporary pods go.
    k.ok(&["label", "node", "sim-node-0", "pool=a"]);
    wait_for(
        "the first pool's pods running, the temporary pods gone",
        Duration::from_secs(90),
        || {
            let s = subsets(k, "keep");
            (s.get("first") == Some(&(2, 2)) && s.get("second").map(|x| x.0) == Some(0))
                .then_some(())
        },
    );
    assert_eq!(reserved(k, "keep").get("first"), None);
    let status = k.json(&["get", "ud", "keep", "-o", "json"])["status"].clone();
    assert_eq!(status["reservedPods"].as_i64().unwrap_or(0), 0, "{status}");
}
