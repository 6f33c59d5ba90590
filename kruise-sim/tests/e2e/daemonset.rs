//! The built-in DaemonSet controller, driven with the real kubectl on three simulated nodes:
//! one ready pod per node, `kubectl set image` rolling out within maxUnavailable with
//! `kubectl rollout status`, and node labels, taints and cordons deciding where pods run.

use crate::common;

use common::Env;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

fn env() -> Env {
    Env::with_controllers_on(3, Duration::from_millis(200))
}

fn daemonset(node_selector: &str) -> String {
    format!(
        "apiVersion: apps/v1\nkind: DaemonSet\nmetadata:\n  name: agent\nspec:\n  selector:\n    matchLabels: {{app: agent}}\n  template:\n    metadata:\n      labels: {{app: agent}}\n    spec:\n{node_selector}      containers:\n      - name: app\n        image: nginx:1\n"
    )
}

/// A live (not terminating) pod of the DaemonSet.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
struct Placed {
    node: String,
    image: String,
    ready: bool,
}

fn live_pods(env: &Env) -> Vec<Placed> {
    let list = env.json(&["get", "pods", "-l", "app=agent", "-o", "json"]);
    let mut pods: Vec<Placed> = list["items"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|p| p["metadata"]["deletionTimestamp"].is_null())
        .map(|p| Placed {
            node: p["spec"]["nodeName"].as_str().unwrap_or_default().to_owned(),
            image: p["spec"]["containers"][0]["image"].as_str().unwrap_or_default().to_owned(),
            ready: p["status"]["conditions"]
                .as_array()
                .is_some_and(|c| c.iter().any(|c| c["type"] == "Ready" && c["status"] == "True")),
        })
        .collect();
    pods.sort();
    pods
}

/// The nodes that have a ready pod with `image`, when every live pod is one of those.
fn settled_on(env: &Env, image: &str) -> Option<Vec<String>> {
    let pods = live_pods(env);
    pods.iter()
        .all(|p| p.ready && p.image == image && !p.node.is_empty())
        .then(|| pods.into_iter().map(|p| p.node).collect())
}

fn rollout_status(env: &Env) -> String {
    env.ok(&["rollout", "status", "daemonset/agent", "--timeout=60s"])
}

#[test]
fn a_daemonset_runs_one_ready_pod_per_node_and_rolls_out_within_max_unavailable() {
    let env = Arc::new(env());
    env.ok_stdin(&["apply", "-f", "-"], &daemonset(""));
    let out = rollout_status(&env);
    assert!(out.contains("daemon set \"agent\" successfully rolled out"), "{out}");
    let nodes = env.eventually("a ready pod per node", "pods", || {
        settled_on(&env, "nginx:1").filter(|nodes| nodes.len() == 3)
    });
    assert_eq!(nodes, ["sim-node-0", "sim-node-1", "sim-node-2"]);
    let table = env.ok(&["get", "daemonset", "agent"]);
    let header: Vec<&str> = table.lines().next().unwrap_or_default().split_whitespace().collect();
    assert_eq!(
        header,
        [
            "NAME",
            "DESIRED",
            "CURRENT",
            "READY",
            "UP-TO-DATE",
            "AVAILABLE",
            "NODE",
            "SELECTOR",
            "AGE"
        ]
    );
    let row: Vec<&str> = table.lines().nth(1).unwrap_or_default().split_whitespace().collect();
    assert_eq!(row[..7], ["agent", "3", "3", "3", "3", "3", "<none>"], "{table}");

    let revisions = env.json(&["get", "controllerrevisions", "-l", "app=agent", "-o", "json"]);
    let revisions = revisions["items"].as_array().cloned().unwrap_or_default();
    assert_eq!(revisions.len(), 1, "one revision");
    let hash = revisions[0]["metadata"]["labels"]["controller-revision-hash"]
        .as_str()
        .unwrap_or_default()
        .to_owned();
    assert_eq!(revisions[0]["metadata"]["name"], format!("agent-{hash}").as_str());
    let pod = env.json(&["get", "pods", "-l", "app=agent", "-o", "json"])["items"][0].clone();
    assert_eq!(pod["metadata"]["labels"]["controller-revision-hash"], hash.as_str());
    assert_eq!(pod["metadata"]["labels"]["pod-template-generation"], "1");
    assert_eq!(pod["metadata"]["generateName"], "agent-");
    let term = &pod["spec"]["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]
        ["nodeSelectorTerms"][0];
    assert_eq!(term["matchFields"][0]["key"], "metadata.name");
    assert_eq!(term["matchFields"][0]["values"][0], pod["spec"]["nodeName"]);

    // The default budget: one node at a time without an available pod. A watcher checks.
    let stop = Arc::new(AtomicBool::new(false));
    let seen = Arc::new(Mutex::new(Vec::new()));
    let watcher = {
        let (env, stop, seen) = (env.clone(), stop.clone(), seen.clone());
        std::thread::spawn(move || {
            while !stop.load(Ordering::Relaxed) {
                let mut ready_nodes: Vec<String> =
                    live_pods(&env).into_iter().filter(|p| p.ready).map(|p| p.node).collect();
                ready_nodes.dedup();
                seen.lock().expect("seen").push(ready_nodes.len());
            }
        })
    };
    env.ok(&["set", "image", "daemonset/agent", "app=nginx:2"]);
    let out = rollout_status(&env);
    stop.store(true, Ordering::Relaxed);
    watcher.join().expect("watcher");
    assert!(out.contains("successfully rolled out"), "{out}");
    let nodes = env.eventually("the new image on every node", "pods", || {
        settled_on(&env, "nginx:2").filter(|nodes| nodes.len() == 3)
    });
    assert_eq!(nodes.len(), 3);
    let seen = seen.lock().expect("seen").clone();
    // At least two looks during the rollout: each is a kubectl call, and on a loaded machine
    // a 3-node rollout leaves room for only a few.
    assert!(seen.len() >= 2, "the watcher looked: {seen:?}");
    assert!(seen.iter().all(|&ready| ready >= 2), "maxUnavailable 1 of 3: {seen:?}");

    let set = env.json(&["get", "daemonset", "agent", "-o", "json"]);
    assert_eq!(set["metadata"]["annotations"]["deprecated.daemonset.template.generation"], "2");
    assert_eq!(set["status"]["observedGeneration"], set["metadata"]["generation"]);
    assert_eq!(set["status"]["updatedNumberScheduled"], 3);
    assert_eq!(set["status"]["numberAvailable"], 3);
    let revisions = env.json(&["get", "controllerrevisions", "-l", "app=agent", "-o", "json"]);
    let mut numbers: Vec<i64> = revisions["items"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|r| r["revision"].as_i64())
        .collect();
    numbers.sort_unstable();
    assert_eq!(numbers, [1, 2]);
    let history = env.ok(&["rollout", "history", "daemonset/agent"]);
    assert!(history.contains('1') && history.contains('2'), "{history}");
}

#[test]
fn node_selectors_taints_and_cordons_decide_where_daemon_pods_run() {
    let env = env();
    env.ok(&["label", "node", "sim-node-0", "sim-node-2", "role=edge"]);
    env.ok(&["taint", "node", "sim-node-2", "dedicated=infra:NoSchedule"]);
    env.ok_stdin(&["apply", "-f", "-"], &daemonset("      nodeSelector: {role: edge}\n"));
    let nodes = env.eventually("a pod on the labelled, untainted node", "pods", || {
        settled_on(&env, "nginx:1").filter(|nodes| nodes == &["sim-node-0"])
    });
    assert_eq!(nodes, ["sim-node-0"]);
    rollout_status(&env);
    let set = env.json(&["get", "daemonset", "agent", "-o", "json"]);
    assert_eq!(set["status"]["desiredNumberScheduled"], 1);
    assert_eq!(set["status"]["numberMisscheduled"], 0);
    let table = env.ok(&["get", "daemonset", "agent", "--no-headers"]);
    assert!(table.split_whitespace().any(|cell| cell == "role=edge"), "{table}");

    // A cordoned node still runs daemon pods once it matches.
    env.ok(&["cordon", "sim-node-1"]);
    env.ok(&["label", "node", "sim-node-1", "role=edge"]);
    env.eventually("a pod on the cordoned node too", "pods", || {
        settled_on(&env, "nginx:1").filter(|nodes| nodes == &["sim-node-0", "sim-node-1"])
    });

    // A node that no longer matches loses its pod; a NoSchedule taint alone keeps one.
    env.ok(&["taint", "node", "sim-node-1", "other=x:NoSchedule"]);
    env.ok(&["label", "node", "sim-node-0", "role-"]);
    env.eventually("the pod gone from the unlabelled node", "pods", || {
        settled_on(&env, "nginx:1").filter(|nodes| nodes == &["sim-node-1"])
    });
    let set = env.eventually("the status counts the misscheduled pod", "daemonsets", || {
        let set = env.json(&["get", "daemonset", "agent", "-o", "json"]);
        (set["status"]["numberMisscheduled"] == 1).then_some(set)
    });
    assert_eq!(set["status"]["desiredNumberScheduled"], 0);

    // A NoExecute taint the template does not tolerate evicts it.
    env.ok(&["taint", "node", "sim-node-1", "evict=now:NoExecute"]);
    env.eventually("no pod left", "pods", || live_pods(&env).is_empty().then_some(()));
}

#[test]
fn a_surging_rollout_keeps_every_node_available_and_on_delete_waits_for_deletions() {
    let env = Arc::new(env());
    env.ok_stdin(&["apply", "-f", "-"], &daemonset(""));
    rollout_status(&env);
    env.ok(&[
        "patch",
        "daemonset",
        "agent",
        "--type=merge",
        "-p",
        r#"{"spec":{"updateStrategy":{"rollingUpdate":{"maxSurge":1,"maxUnavailable":0}}}}"#,
    ]);
    let stop = Arc::new(AtomicBool::new(false));
    let seen = Arc::new(Mutex::new(Vec::new()));
    let watcher = {
        let (env, stop, seen) = (env.clone(), stop.clone(), seen.clone());
        std::thread::spawn(move || {
            while !stop.load(Ordering::Relaxed) {
                let pods = live_pods(&env);
                let mut ready_nodes: Vec<String> =
                    pods.iter().filter(|p| p.ready).map(|p| p.node.clone()).collect();
                ready_nodes.dedup();
                seen.lock().expect("seen").push((pods.len(), ready_nodes.len()));
            }
        })
    };
    env.ok(&["set", "image", "daemonset/agent", "app=nginx:2"]);
    let out = rollout_status(&env);
    stop.store(true, Ordering::Relaxed);
    watcher.join().expect("watcher");
    assert!(out.contains("successfully rolled out"), "{out}");
    env.eventually("the new image on every node", "pods", || {
        settled_on(&env, "nginx:2").filter(|nodes| nodes.len() == 3)
    });
    let seen = seen.lock().expect("seen").clone();
    // At least two looks during the rollout: each is a kubectl call, and on a loaded machine
    // a 3-node rollout leaves room for only a few.
    assert!(seen.len() >= 2, "the watcher looked: {seen:?}");
    assert!(
        seen.iter().all(|&(live, ready)| live <= 4 && ready == 3),
        "maxSurge 1, maxUnavailable 0: {seen:?}"
    );

    // OnDelete: a new template reaches only the pods deleted by hand.
    env.ok(&[
        "patch",
        "daemonset",
        "agent",
        "--type=merge",
        "-p",
        r#"{"spec":{"updateStrategy":{"type":"OnDelete","rollingUpdate":null}}}"#,
    ]);
    env.ok(&["set", "image", "daemonset/agent", "app=nginx:3"]);
    std::thread::sleep(Duration::from_secs(1));
    assert!(live_pods(&env).iter().all(|p| p.image == "nginx:2"), "{:?}", live_pods(&env));
    let on_first = env.ok(&[
        "get",
        "pods",
        "-l",
        "app=agent",
        "--field-selector",
        "spec.nodeName=sim-node-0",
        "-o",
        "name",
    ]);
    env.ok(&["delete", on_first.trim()]);
    env.eventually("the replaced pod at the new template", "pods", || {
        let pods = live_pods(&env);
        let images: Vec<&str> = pods.iter().map(|p| p.image.as_str()).collect();
        (pods.iter().all(|p| p.ready) && images == ["nginx:3", "nginx:2", "nginx:2"]).then_some(())
    });
}

/// Nodes changed with kubectl as on a real cluster: a `NoExecute` taint the pods do not
/// tolerate evicts them (the taint eviction controller), and a deleted Node takes its pods
/// with it (its kubelet stops; the pod garbage collector's part).
#[test]
fn a_no_execute_taint_evicts_and_a_deleted_node_takes_its_pods() {
    let env = env();
    env.ok_stdin(&["apply", "-f", "-"], &daemonset(""));
    env.ok(&["create", "deployment", "web", "--image=nginx:1", "--replicas=3"]);
    let all = ["sim-node-0", "sim-node-1", "sim-node-2"];
    env.eventually("a daemon pod on each node", "pods", || {
        (settled_on(&env, "nginx:1")? == all).then_some(())
    });
    env.ok(&["rollout", "status", "deployment/web", "--timeout=60s"]);

    // A NoSchedule taint keeps running pods; NoExecute evicts the ones that do not tolerate it.
    env.ok(&["taint", "node", "sim-node-0", "maintenance=soon:NoSchedule"]);
    std::thread::sleep(Duration::from_millis(500));
    assert_eq!(settled_on(&env, "nginx:1").expect("settled"), all);
    env.ok(&["taint", "node", "sim-node-0", "maintenance=now:NoExecute"]);
    env.eventually("no pod left on the tainted node", "pods", || {
        let pods = env.json(&["get", "pods", "-o", "json"]);
        let on_node = pods["items"]
            .as_array()?
            .iter()
            .filter(|p| p["spec"]["nodeName"] == "sim-node-0")
            .count();
        let web = env.json(&["get", "deployment", "web", "-o", "json"]);
        (on_node == 0 && web["status"]["readyReplicas"] == 3).then_some(())
    });
    env.eventually("the daemon pods on the other two nodes only", "pods", || {
        (settled_on(&env, "nginx:1")? == all[1..]).then_some(())
    });

    // A deleted Node takes its pods; the DaemonSet and the Deployment carry on without it.
    env.ok(&["delete", "node", "sim-node-1"]);
    env.eventually("pods only on sim-node-2", "pods", || {
        let pods = env.json(&["get", "pods", "-o", "json"]);
        let items = pods["items"].as_array()?;
        let elsewhere = items.iter().any(|p| p["spec"]["nodeName"] != "sim-node-2");
        let web = env.json(&["get", "deployment", "web", "-o", "json"]);
        (!elsewhere && web["status"]["readyReplicas"] == 3).then_some(())
    });
    env.eventually("one daemon pod, on sim-node-2", "pods", || {
        (settled_on(&env, "nginx:1")? == ["sim-node-2"]).then_some(())
    });
    let lease = env.run(&["get", "lease", "-n", "kube-node-lease", "sim-node-1"]);
    assert!(!lease.ok && lease.stderr.contains("NotFound"), "the lease is gone: {}", lease.stderr);
    let ds = env.json(&["get", "daemonset", "agent", "-o", "json"]);
    assert_eq!(ds["status"]["desiredNumberScheduled"], 1, "{}", ds["status"]);

    // Taken off again, the taint lets the daemon pod back.
    env.ok(&["taint", "node", "sim-node-0", "maintenance-"]);
    env.eventually("daemon pods on the two remaining nodes", "pods", || {
        (settled_on(&env, "nginx:1")? == ["sim-node-0", "sim-node-2"]).then_some(())
    });
}
