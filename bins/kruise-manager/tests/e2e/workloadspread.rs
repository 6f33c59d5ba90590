//! WorkloadSpread end to end: the manager's pod webhooks and controller against kruise-sim
//! with nodes in three zones (`sim-node-<i>` is in zone-a, zone-b, zone-c by `i % 3`),
//! spreading a Deployment driven by kubectl.

use std::collections::BTreeMap;
use std::time::Duration;

use serde_json::{Value, json};

use crate::common::{Kubectl, SimCluster, wait_for};

fn cluster(nodes: usize) -> SimCluster {
    crate::pub_budget::cluster_with_nodes(nodes)
}

/// The manager, once its WorkloadSpread webhook is registered.
fn start_manager(cluster: &SimCluster) -> crate::common::Proc {
    let (manager, _) = crate::pub_budget::start_manager(cluster, &[]);
    crate::common::wait_for_validating_webhook(&cluster.kubectl, "vworkloadspread.kb.io");
    manager
}

fn zone_subset(name: &str, zone: &str, max: Option<i64>) -> Value {
    let mut subset = json!({
        "name": name,
        "requiredNodeSelector": {"matchExpressions": [
            {"key": "topology.kubernetes.io/zone", "operator": "In", "values": [zone]}
        ]},
        "patch": {"metadata": {"labels": {"subset": name}}},
    });
    if let Some(max) = max {
        subset["maxReplicas"] = json!(max);
    }
    subset
}

fn spread(name: &str, target: &str, subsets: Value, strategy: Value) -> String {
    spread_for(
        name,
        json!({"apiVersion": "apps/v1", "kind": "Deployment", "name": target}),
        subsets,
        strategy,
    )
}

fn spread_for(name: &str, target: Value, subsets: Value, strategy: Value) -> String {
    json!({
        "apiVersion": "apps.kruise.io/v1beta1",
        "kind": "WorkloadSpread",
        "metadata": {"name": name},
        "spec": {
            "targetRef": target,
            "subsets": subsets,
            "scheduleStrategy": strategy,
        }
    })
    .to_string()
}

fn deployment(name: &str, replicas: i32) -> String {
    json!({
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": name},
        "spec": {
            "replicas": replicas,
            "selector": {"matchLabels": {"app": name}},
            "template": {
                "metadata": {"labels": {"app": name}},
                "spec": {"containers": [{"name": "main", "image": "registry.example/web:v1"}]}
            }
        }
    })
    .to_string()
}

/// Zone → count of the live running pods of `app`, and whether every pod's subset (its
/// annotation and patched label) is its node's zone (subsets here are named after zones).
fn zones(k: &Kubectl, app: &str) -> (BTreeMap<String, usize>, bool) {
    let list = k.json(&["get", "pods", "-l", &format!("app={app}"), "-o", "json"]);
    let mut counts = BTreeMap::new();
    let mut consistent = true;
    for pod in list["items"].as_array().into_iter().flatten() {
        if !pod["metadata"]["deletionTimestamp"].is_null() || pod["status"]["phase"] != "Running" {
            continue;
        }
        let node = pod["spec"]["nodeName"].as_str().unwrap_or_default();
        let index: usize = node.rsplit('-').next().and_then(|i| i.parse().ok()).unwrap_or(99);
        let zone = ["zone-a", "zone-b", "zone-c"].get(index % 3).copied().unwrap_or("none");
        *counts.entry(zone.to_owned()).or_insert(0) += 1;
        let injected: Value =
            pod["metadata"]["annotations"]["apps.kruise.io/matched-workloadspread"]
                .as_str()
                .and_then(|s| serde_json::from_str(s).ok())
                .unwrap_or(Value::Null);
        let subset = injected["subset"].as_str().unwrap_or_default();
        consistent &= zone == subset && pod["metadata"]["labels"]["subset"] == subset;
    }
    (counts, consistent)
}

fn counts(a: usize, b: usize, c: usize) -> BTreeMap<String, usize> {
    [("zone-a", a), ("zone-b", b), ("zone-c", c)]
        .into_iter()
        .filter(|(_, n)| *n > 0)
        .map(|(z, n)| (z.to_owned(), n))
        .collect()
}

#[test]
fn a_deployment_spreads_over_zones_and_scales_in_from_the_last_subset() {
    let cluster = cluster(6);
    let k = &cluster.kubectl;
    let _manager = start_manager(&cluster);

    // Bad input is refused, naming the field.
    let duplicate = spread(
        "bad",
        "web",
        json!([zone_subset("zone-a", "zone-a", Some(2)), zone_subset("zone-a", "zone-b", None)]),
        json!({"type": "Fixed"}),
    );
    let out = k.run_with(&["create", "-f", "-"], Some(&duplicate));
    assert!(!out.ok, "duplicate subset names are refused");
    assert!(
        out.stderr.contains(r#"admission webhook "vworkloadspread.kb.io" denied the request"#)
            && out.stderr.contains("spec.subsets[1].name"),
        "{}",
        out.stderr
    );
    let negative =
        spread("bad", "web", json!([zone_subset("zone-a", "zone-a", Some(-1))]), json!({}));
    let out = k.run_with(&["create", "-f", "-"], Some(&negative));
    assert!(!out.ok && out.stderr.contains("maxReplicas"), "{}", out.stderr);

    let subsets = json!([
        zone_subset("zone-a", "zone-a", Some(2)),
        zone_subset("zone-b", "zone-b", Some(2)),
        zone_subset("zone-c", "zone-c", None),
    ]);
    k.ok_stdin(
        &["apply", "-f", "-"],
        &spread("web-spread", "web", subsets.clone(), json!({"type": "Fixed"})),
    );
    // A second WorkloadSpread for the same workload is refused.
    let out = k.run_with(&["create", "-f", "-"], Some(&spread("again", "web", subsets, json!({}))));
    assert!(!out.ok && out.stderr.contains("spec.targetRef"), "{}", out.stderr);
    crate::common::wait_for_pod_webhook_entries(k, 1);

    k.ok_stdin(&["apply", "-f", "-"], &deployment("web", 6));
    wait_for("6 pods spread 2/2/2", Duration::from_secs(90), || {
        let (by_zone, consistent) = zones(k, "web");
        (by_zone == counts(2, 2, 2) && consistent).then_some(())
    });

    k.ok(&["scale", "deployment", "web", "--replicas", "10"]);
    wait_for("10 pods spread 2/2/6", Duration::from_secs(90), || {
        let (by_zone, consistent) = zones(k, "web");
        (by_zone == counts(2, 2, 6) && consistent).then_some(())
    });
    // The controller has counted them and ranked them for scale-in.
    wait_for("the status and the deletion costs settled", Duration::from_secs(60), || {
        let ws = k.json(&["get", "workloadspread", "web-spread", "-o", "json"]);
        let replicas: Vec<i64> = ws["status"]["subsetStatuses"]
            .as_array()?
            .iter()
            .map(|s| s["replicas"].as_i64().unwrap_or(0))
            .collect();
        let pods = k.json(&["get", "pods", "-l", "app=web", "-o", "json"]);
        let costed = pods["items"].as_array()?.iter().all(|p| {
            !p["metadata"]["annotations"]["controller.kubernetes.io/pod-deletion-cost"].is_null()
        });
        (replicas == [2, 2, 6] && costed).then_some(())
    });

    k.ok(&["scale", "deployment", "web", "--replicas", "4"]);
    wait_for("4 pods left in zone-a and zone-b", Duration::from_secs(90), || {
        let (by_zone, consistent) = zones(k, "web");
        let list = k.json(&["get", "pods", "-l", "app=web", "-o", "json"]);
        let all = list["items"].as_array().map_or(0, Vec::len);
        (by_zone == counts(2, 2, 0) && consistent && all == 4).then_some(())
    });
    let ws = k.json(&["get", "workloadspread", "web-spread", "-o", "json"]);
    assert_eq!(ws["status"]["observedGeneration"], ws["metadata"]["generation"]);

    // A rolling update keeps the spread (upstream's #1194): the new version's pods are counted
    // apart from the old ones' (versioned subset statuses).
    k.ok(&["set", "image", "deployment/web", "main=registry.example/web:v2"]);
    wait_for("4 updated pods still spread 2/2", Duration::from_secs(120), || {
        let (by_zone, consistent) = zones(k, "web");
        let list = k.json(&["get", "pods", "-l", "app=web", "-o", "json"]);
        let items = list["items"].as_array()?;
        let updated =
            items.iter().all(|p| p["spec"]["containers"][0]["image"] == "registry.example/web:v2");
        (by_zone == counts(2, 2, 0) && consistent && items.len() == 4 && updated).then_some(())
    });
}

#[test]
fn an_adaptive_subset_whose_nodes_are_full_spills_to_the_next() {
    let cluster = cluster(6);
    let k = &cluster.kubectl;
    // zone-a takes no pods.
    k.ok(&["cordon", "sim-node-0", "sim-node-3"]);
    let manager = start_manager(&cluster);
    let subsets =
        json!([zone_subset("zone-a", "zone-a", Some(2)), zone_subset("zone-b", "zone-b", None)]);
    let strategy = json!({"type": "Adaptive", "adaptive": {"rescheduleCriticalSeconds": 3}});
    k.ok_stdin(&["apply", "-f", "-"], &spread("api-spread", "api", subsets, strategy));
    crate::common::wait_for_pod_webhook_entries(k, 1);
    k.ok_stdin(&["apply", "-f", "-"], &deployment("api", 2));
    // First placed in zone-a, where they cannot run; then moved to zone-b.
    let deadline = std::time::Instant::now() + Duration::from_secs(90);
    loop {
        let (by_zone, consistent) = zones(k, "api");
        if by_zone == counts(0, 2, 0) && consistent {
            break;
        }
        if std::time::Instant::now() > deadline {
            let pods = k.run_with(&["get", "pods", "-o", "yaml"], None).stdout;
            let ws = k.run_with(&["get", "workloadspread", "-o", "yaml"], None).stdout;
            panic!("both pods not running in zone-b:\n{pods}\n{ws}\n{}", manager.log_text());
        }
        std::thread::sleep(Duration::from_millis(250));
    }
    let ws = k.json(&["get", "workloadspread", "api-spread", "-o", "json"]);
    let first = &ws["status"]["subsetStatuses"][0];
    assert_eq!(first["name"], "zone-a");
    let schedulable = first["conditions"]
        .as_array()
        .and_then(|c| c.iter().find(|c| c["type"] == "Schedulable"))
        .cloned()
        .unwrap_or(Value::Null);
    assert_eq!(schedulable["status"], "False", "{ws:#}");
}

/// A CloneSet target, written in v1alpha1 (`requiredNodeSelectorTerm`): spread on creation,
/// and CloneSet's own scale-in follows the deletion costs the controller writes.
#[test]
fn a_cloneset_spreads_and_its_scale_in_follows_deletion_costs() {
    let cluster = cluster(6);
    let k = &cluster.kubectl;
    let _manager = start_manager(&cluster);
    let term = |zone: &str| {
        json!({"matchExpressions": [
            {"key": "topology.kubernetes.io/zone", "operator": "In", "values": [zone]}
        ]})
    };
    let alpha = json!({
        "apiVersion": "apps.kruise.io/v1alpha1",
        "kind": "WorkloadSpread",
        "metadata": {"name": "cs-spread"},
        "spec": {
            "targetRef": {"apiVersion": "apps.kruise.io/v1alpha1", "kind": "CloneSet", "name": "cs"},
            "subsets": [
                {"name": "zone-a", "maxReplicas": 1, "requiredNodeSelectorTerm": term("zone-a"),
                 "patch": {"metadata": {"labels": {"subset": "zone-a"}}}},
                {"name": "zone-b", "requiredNodeSelectorTerm": term("zone-b"),
                 "patch": {"metadata": {"labels": {"subset": "zone-b"}}}},
            ]
        }
    });
    k.ok_stdin(&["apply", "-f", "-"], &alpha.to_string());
    // Served back at v1beta1 with the renamed field.
    let beta =
        k.json(&["get", "workloadspreads.v1beta1.apps.kruise.io", "cs-spread", "-o", "json"]);
    assert_eq!(beta["spec"]["subsets"][0]["requiredNodeSelector"], term("zone-a"), "{beta:#}");
    k.ok_stdin(&["apply", "-f", "-"], &crate::common::cloneset_yaml("cs", 4, ""));
    wait_for("4 pods spread 1/3", Duration::from_secs(90), || {
        let (by_zone, consistent) = zones(k, "cs");
        (by_zone == counts(1, 3, 0) && consistent).then_some(())
    });
    wait_for("deletion costs on every pod", Duration::from_secs(60), || {
        let pods = k.json(&["get", "pods", "-l", "app=cs", "-o", "json"]);
        pods["items"]
            .as_array()?
            .iter()
            .all(|p| {
                !p["metadata"]["annotations"]["controller.kubernetes.io/pod-deletion-cost"]
                    .is_null()
            })
            .then_some(())
    });
    k.ok(&["scale", "clonesets.apps.kruise.io", "cs", "--replicas", "2"]);
    wait_for("2 pods left, one per zone", Duration::from_secs(90), || {
        let (by_zone, consistent) = zones(k, "cs");
        let list = k.json(&["get", "pods", "-l", "app=cs", "-o", "json"]);
        let all = list["items"].as_array().map_or(0, Vec::len);
        (by_zone == counts(1, 1, 0) && consistent && all == 2).then_some(())
    });
}
