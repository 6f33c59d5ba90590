//! Advanced DaemonSet on the playground with kubectl: one ready pod per node, an in-place
//! update limited to the nodes `rollingUpdate.selector` picks (pods keep their UIDs), a
//! `NoExecute` taint taking a node's pod away, and bad input refused naming the field.

use std::collections::BTreeMap;
use std::time::Duration;

use serde_json::Value;

use crate::common::{Playground, wait_for};

fn daemonset(strategy: &str) -> String {
    format!(
        "apiVersion: apps.kruise.io/v1beta1\nkind: DaemonSet\nmetadata:\n  name: agent\nspec:\n  selector:\n    matchLabels: {{app: agent}}\n  template:\n    metadata:\n      labels: {{app: agent}}\n    spec:\n      containers:\n      - name: main\n        image: registry.example/agent:v1\n{strategy}"
    )
}

/// Node → (uid, image, ready) of the live daemon pods.
fn placed(k: &crate::common::Kubectl) -> BTreeMap<String, (String, String, bool)> {
    let list = k.json(&["get", "pods", "-l", "app=agent", "-o", "json"]);
    list["items"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|p| p["metadata"]["deletionTimestamp"].is_null())
        .map(|p: &Value| {
            let ready = p["status"]["conditions"]
                .as_array()
                .is_some_and(|c| c.iter().any(|c| c["type"] == "Ready" && c["status"] == "True"));
            (
                p["spec"]["nodeName"].as_str().unwrap_or_default().to_owned(),
                (
                    p["metadata"]["uid"].as_str().unwrap_or_default().to_owned(),
                    p["spec"]["containers"][0]["image"].as_str().unwrap_or_default().to_owned(),
                    ready,
                ),
            )
        })
        .collect()
}

#[test]
fn an_advanced_daemonset_runs_per_node_and_updates_only_selected_nodes_in_place() {
    let pg = Playground::start(3, &[]);
    let k = &pg.kubectl;

    // Bad input is refused, naming the field.
    let bad = daemonset("  updateStrategy:\n    rollingUpdate:\n      partition: -1\n");
    let out = k.run_with(&["create", "-f", "-"], Some(&bad));
    assert!(!out.ok, "a negative partition is refused");
    assert!(
        out.stderr.contains(r#"admission webhook "vdaemonset.kb.io" denied the request"#)
            && out.stderr.contains("partition"),
        "{}",
        out.stderr
    );

    let strategy = "  updateStrategy:\n    type: RollingUpdate\n    rollingUpdate:\n      rollingUpdateType: InPlaceIfPossible\n      maxUnavailable: 1\n";
    k.ok_stdin(&["apply", "-f", "-"], &daemonset(strategy));
    let first = wait_for("a ready pod on each of the 3 nodes", Duration::from_secs(60), || {
        let p = placed(k);
        (p.len() == 3 && p.values().all(|v| v.2)).then_some(p)
    });
    wait_for("the status", Duration::from_secs(30), || {
        let st =
            k.json(&["get", "daemonset.apps.kruise.io", "agent", "-o", "json"])["status"].clone();
        (st["desiredNumberScheduled"] == 3
            && st["numberReady"] == 3
            && st["updatedNumberScheduled"] == 3)
            .then_some(())
    });

    // Update only the nodes labelled canary=true, in place.
    k.ok(&["label", "node", "sim-node-0", "canary=true"]);
    let patch = r#"{"spec": {"updateStrategy": {"rollingUpdate": {"selector": {"matchLabels": {"canary": "true"}}}}, "template": {"spec": {"containers": [{"name": "main", "image": "registry.example/agent:v2"}]}}}}"#;
    k.ok(&["patch", "daemonset.apps.kruise.io", "agent", "--type=merge", "-p", patch]);
    let after = wait_for("the canary node's pod on v2 and ready", Duration::from_secs(60), || {
        let p = placed(k);
        let canary = p.get("sim-node-0")?;
        (canary.1 == "registry.example/agent:v2" && canary.2).then_some(p)
    });
    std::thread::sleep(Duration::from_secs(1));
    let settled = placed(k);
    assert_eq!(settled["sim-node-0"].0, first["sim-node-0"].0, "updated in place: same pod");
    for node in ["sim-node-1", "sim-node-2"] {
        assert_eq!(settled[node].1, "registry.example/agent:v1", "{node} is outside the selector");
        assert_eq!(settled[node].0, first[node].0);
    }
    assert_eq!(after.len(), 3);

    // A NoExecute taint the pods do not tolerate takes that node's pod away.
    k.ok(&["taint", "node", "sim-node-2", "drain=now:NoExecute"]);
    wait_for("no daemon pod on the tainted node", Duration::from_secs(60), || {
        let p = placed(k);
        (!p.contains_key("sim-node-2") && p.len() == 2).then_some(())
    });
    wait_for("desiredNumberScheduled 2", Duration::from_secs(30), || {
        let st =
            k.json(&["get", "daemonset.apps.kruise.io", "agent", "-o", "json"])["status"].clone();
        (st["desiredNumberScheduled"] == 2).then_some(())
    });

    // A node that joins (a simulated kubelet registering against the playground, as
    // `kruise-sim nodes --kubeconfig` runs it) gets its pod.
    let runtime = tokio::runtime::Runtime::new().expect("a runtime");
    let kubeconfig = std::fs::read_to_string(&k.kubeconfig).expect("the kubeconfig");
    let _joined = runtime.block_on(async {
        let client =
            kruise_sim::nodes::client_from_kubeconfig(&kubeconfig).await.expect("a client");
        let mut config = kruise_sim::nodes::NodesConfig::new(0)
            .with_nodes(vec![kruise_sim::nodes::NodeSpec::new("joined-node")]);
        config.scheduler = false;
        kruise_sim::nodes::NodeSim::start(client, config).await.expect("the node joins")
    });
    wait_for("a ready pod on the joined node", Duration::from_secs(60), || {
        let p = placed(k);
        p.get("joined-node").is_some_and(|v| v.2).then_some(())
    });
    wait_for("desiredNumberScheduled 3", Duration::from_secs(30), || {
        let st =
            k.json(&["get", "daemonset.apps.kruise.io", "agent", "-o", "json"])["status"].clone();
        (st["desiredNumberScheduled"] == 3).then_some(())
    });
}

/// A recreate rollout with `partition: 1` over three nodes, the manager killed (SIGKILL) in
/// the middle: the next manager finishes it, leaving exactly one pod on the old revision and
/// never more than maxUnavailable pods down.
#[test]
fn a_partitioned_rollout_survives_a_killed_manager() {
    let cluster = crate::pub_budget::cluster();
    let k = &cluster.kubectl;
    let (mut manager, _) = crate::pub_budget::start_manager(&cluster, &[]);
    let strategy = "  updateStrategy:\n    type: RollingUpdate\n    rollingUpdate:\n      rollingUpdateType: Standard\n      maxUnavailable: 1\n      partition: 1\n";
    k.ok_stdin(&["apply", "-f", "-"], &daemonset(strategy));
    wait_for("a ready pod on each of the 3 nodes", Duration::from_secs(60), || {
        let p = placed(k);
        (p.len() == 3 && p.values().all(|v| v.2)).then_some(())
    });
    let patch = r#"{"spec": {"template": {"spec": {"containers": [{"name": "main", "image": "registry.example/agent:v2"}]}}}}"#;
    k.ok(&["patch", "daemonset.apps.kruise.io", "agent", "--type=merge", "-p", patch]);
    wait_for("the rollout under way", Duration::from_secs(60), || {
        let p = placed(k);
        (p.values().any(|v| v.1 == "registry.example/agent:v2") || p.len() < 3).then_some(())
    });
    manager.kill();
    let (_manager, _) = crate::pub_budget::start_manager(&cluster, &[]);
    let mut most_down = 0;
    let done = wait_for("two nodes on v2, one kept on v1", Duration::from_secs(90), || {
        let p = placed(k);
        most_down = most_down.max(3 - p.values().filter(|v| v.2).count());
        let v2 = p.values().filter(|v| v.1 == "registry.example/agent:v2" && v.2).count();
        let v1 = p.values().filter(|v| v.1 == "registry.example/agent:v1" && v.2).count();
        (p.len() == 3 && v2 == 2 && v1 == 1).then_some(p)
    });
    assert_eq!(done.len(), 3);
    assert!(most_down <= 1, "never more than maxUnavailable down: {most_down}");

    // A node that joins the cluster gets a pod, of the update revision.
    let nodes = cluster.server.nodes().expect("simulated nodes");
    nodes
        .apply_blocking(kruise_sim::nodes::NodeOp::Add(kruise_sim::nodes::NodeSpec::new(
            "late-node",
        )))
        .expect("a node added");
    wait_for("a ready pod on the new node", Duration::from_secs(60), || {
        let p = placed(k);
        let late = p.get("late-node")?;
        (late.1 == "registry.example/agent:v2" && late.2).then_some(())
    });
}

/// With `PreDownloadImageForDaemonSetUpdate` on, a partitioned update gets an ImagePullJob
/// for its new image (owned by the DaemonSet, named after the revision and container, aimed
/// at the pods of other revisions) and the revision is marked; once every pod is updated the
/// job goes.
#[test]
fn a_partitioned_update_pre_downloads_its_image() {
    let pg = Playground::start(3, &["--feature-gates", "PreDownloadImageForDaemonSetUpdate=true"]);
    let k = &pg.kubectl;
    let strategy = "  updateStrategy:\n    type: RollingUpdate\n    rollingUpdate:\n      rollingUpdateType: Standard\n      maxUnavailable: 1\n      partition: 2\n";
    k.ok_stdin(&["apply", "-f", "-"], &daemonset(strategy));
    wait_for("3 ready pods, all updated", Duration::from_secs(60), || {
        let st =
            k.json(&["get", "daemonset.apps.kruise.io", "agent", "-o", "json"])["status"].clone();
        (st["numberReady"] == 3 && st["updatedNumberScheduled"] == 3).then_some(())
    });
    let jobs = || k.json(&["get", "imagepulljobs.apps.kruise.io", "-o", "json"])["items"].clone();
    assert_eq!(jobs(), serde_json::json!([]), "no job for the first revision");

    let patch = r#"{"spec": {"template": {"spec": {"containers": [{"name": "main", "image": "registry.example/agent:v2"}]}}}}"#;
    k.ok(&["patch", "daemonset.apps.kruise.io", "agent", "--type=merge", "-p", patch]);
    let job = wait_for("an ImagePullJob for v2", Duration::from_secs(60), || {
        jobs()
            .as_array()?
            .iter()
            .find(|j| j["spec"]["image"] == "registry.example/agent:v2")
            .cloned()
    });
    let name = job["metadata"]["name"].as_str().unwrap_or_default().to_owned();
    let revision = name.strip_suffix("-main").expect("named <revision>-<container>").to_owned();
    let owner = &job["metadata"]["ownerReferences"][0];
    assert_eq!((&owner["kind"], &owner["name"]), (&"DaemonSet".into(), &"agent".into()));
    let expression = &job["spec"]["podSelector"]["matchExpressions"][0];
    assert_eq!(expression["key"], "controller-revision-hash");
    assert_eq!(expression["operator"], "NotIn");
    wait_for("the revision marked", Duration::from_secs(30), || {
        let rev = k.json(&["get", "controllerrevision", &revision, "-o", "json"]);
        (rev["metadata"]["labels"]["apps.kruise.io/pre-predownload-created"] == "true")
            .then_some(())
    });

    // The rest of the rollout: every pod updated, the job goes.
    let patch = r#"{"spec": {"updateStrategy": {"rollingUpdate": {"partition": 0}}}}"#;
    k.ok(&["patch", "daemonset.apps.kruise.io", "agent", "--type=merge", "-p", patch]);
    wait_for("the job deleted after the rollout", Duration::from_secs(120), || {
        let gone = !jobs().as_array()?.iter().any(|j| j["metadata"]["name"] == name.as_str());
        gone.then_some(())
    });
    let p = placed(k);
    assert!(p.values().all(|v| v.1 == "registry.example/agent:v2"), "{p:?}");
}
