//! Simulated nodes, scheduler and kubelets, driven with the real kubectl.

use crate::common;

use common::Env;
use kruise_sim::Config;
use kruise_sim::nodes::kubelet::Delays;
use kruise_sim::nodes::{Failure, NodeOp, NodeSpec, NodesConfig};
use serde_json::{Value, json};
use std::time::{Duration, Instant};

fn fast() -> Delays {
    Delays {
        pull: Duration::from_millis(20),
        start: Duration::from_millis(10),
        ready: Duration::from_millis(50),
        init_run: Duration::from_millis(10),
        stop: Duration::from_millis(20),
        ..Delays::default()
    }
}

fn env(nodes: Vec<NodeSpec>) -> Env {
    env_with(nodes, fast())
}

fn env_with(nodes: Vec<NodeSpec>, delays: Delays) -> Env {
    let mut nc = NodesConfig::new(0).with_nodes(nodes).with_delays(delays);
    nc.lease_renew = Duration::from_millis(200);
    Env::new(Config::default().with_nodes(nc))
}

fn three_zones() -> Vec<NodeSpec> {
    vec![
        NodeSpec::new("n-a").zone("zone-a"),
        NodeSpec::new("n-b").zone("zone-b"),
        NodeSpec::new("n-c").zone("zone-c"),
    ]
}

/// Polls `f` until it returns `Some`, for up to 20 s.
fn eventually<T>(what: &str, mut f: impl FnMut() -> Option<T>) -> T {
    let start = Instant::now();
    loop {
        if let Some(v) = f() {
            return v;
        }
        assert!(start.elapsed() < Duration::from_secs(20), "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(30));
    }
}

fn condition(pod: &Value, t: &str) -> Option<Value> {
    pod.pointer("/status/conditions")?.as_array()?.iter().find(|c| c["type"] == t).cloned()
}

fn is_ready(pod: &Value) -> bool {
    condition(pod, "Ready").is_some_and(|c| c["status"] == "True")
}

fn pod_yaml(name: &str, extra_spec: &str) -> String {
    format!(
        "apiVersion: v1\nkind: Pod\nmetadata:\n  name: {name}\n  labels:\n    app: web\nspec:\n{extra_spec}  containers:\n  - name: app\n    image: nginx:1.25\n    readinessProbe:\n      httpGet: {{path: /, port: 80}}\n  - name: log\n    image: busybox:1.36\n"
    )
}

#[test]
fn nodes_have_labels_capacity_conditions_and_leases() {
    let e = env(vec![
        NodeSpec::new("n-a").zone("zone-a").label("pool", "blue").capacity("8", "16Gi", 50),
    ]);
    let n = e.json(&["get", "node", "n-a"]);
    let labels = &n["metadata"]["labels"];
    assert_eq!(labels["kubernetes.io/hostname"], "n-a");
    assert_eq!(labels["topology.kubernetes.io/zone"], "zone-a");
    assert_eq!(labels["topology.kubernetes.io/region"], "sim-region");
    assert_eq!(labels["kubernetes.io/arch"], "amd64");
    assert_eq!(labels["kubernetes.io/os"], "linux");
    assert_eq!(labels["pool"], "blue");
    assert_eq!(n["status"]["allocatable"]["cpu"], "8");
    assert_eq!(n["status"]["capacity"]["pods"], "50");
    assert_eq!(condition(&n, "Ready").expect("Ready")["status"], "True");
    let out = e.ok(&["get", "nodes"]);
    assert!(out.contains("n-a") && out.contains("Ready"), "{out}");
    let lease = e.json(&["get", "lease", "-n", "kube-node-lease", "n-a"]);
    let first = lease["spec"]["renewTime"].as_str().expect("renewTime").to_string();
    assert_eq!(lease["spec"]["holderIdentity"], "n-a");
    eventually("the lease to be renewed", || {
        let l = e.json(&["get", "lease", "-n", "kube-node-lease", "n-a"]);
        (l["spec"]["renewTime"].as_str() != Some(first.as_str())).then_some(())
    });
    // Add and remove a node at runtime.
    let sim = e.server.nodes().expect("nodes");
    sim.apply_blocking(NodeOp::Add(NodeSpec::new("n-new"))).expect("add");
    e.ok(&["get", "node", "n-new"]);
    sim.apply_blocking(NodeOp::Remove("n-new".into())).expect("remove");
    assert!(e.fails(&["get", "node", "n-new"]).contains("not found"));
    assert!(sim.apply_blocking(NodeOp::Cordon("nope".into())).is_err());
}

#[test]
fn pod_set_becomes_running_and_ready_spread_over_zones() {
    let e = env(three_zones());
    let spread = "  topologySpreadConstraints:\n  - maxSkew: 1\n    topologyKey: topology.kubernetes.io/zone\n    whenUnsatisfiable: DoNotSchedule\n    labelSelector:\n      matchLabels: {app: web}\n";
    let manifest: Vec<String> = (0..6).map(|i| pod_yaml(&format!("web-{i}"), spread)).collect();
    e.ok_stdin(&["apply", "-f", "-"], &manifest.join("---\n"));
    e.ok(&["wait", "--for=condition=Ready", "pod", "-l", "app=web", "--timeout=20s"]);
    let pods = e.json(&["get", "pods", "-l", "app=web"]);
    let items = pods["items"].as_array().expect("items");
    assert_eq!(items.len(), 6);
    let mut per_node = std::collections::BTreeMap::<String, usize>::new();
    for p in items {
        assert_eq!(p["status"]["phase"], "Running");
        for t in ["PodScheduled", "Initialized", "ContainersReady", "Ready"] {
            assert_eq!(
                condition(p, t).expect(t)["status"],
                "True",
                "{t} of {}",
                p["metadata"]["name"]
            );
        }
        let cs = p["status"]["containerStatuses"].as_array().expect("statuses");
        assert_eq!(cs.len(), 2);
        for c in cs {
            assert_eq!(c["ready"], true);
            assert_eq!(c["started"], true);
            assert_eq!(c["restartCount"], 0);
            assert!(c["containerID"].as_str().expect("id").starts_with("containerd://"));
            assert!(c["imageID"].as_str().expect("imageID").contains("@sha256:"));
            assert!(c["state"]["running"]["startedAt"].is_string());
        }
        assert!(p["status"]["podIP"].as_str().expect("podIP").starts_with("10.2"));
        *per_node.entry(p["spec"]["nodeName"].as_str().expect("node").to_string()).or_default() +=
            1;
    }
    assert_eq!(per_node.values().copied().collect::<Vec<_>>(), vec![2, 2, 2], "{per_node:?}");
    let wide = e.ok(&["get", "pods", "-o", "wide"]);
    assert!(wide.contains("2/2") && wide.contains("Running"), "{wide}");
}

#[test]
fn image_change_restarts_only_that_container_in_place() {
    let e = env(three_zones());
    e.ok_stdin(&["apply", "-f", "-"], &pod_yaml("p", ""));
    e.ok(&["wait", "--for=condition=Ready", "pod/p", "--timeout=20s"]);
    let before = e.json(&["get", "pod", "p"]);
    e.ok(&["set", "image", "pod/p", "app=nginx:1.27"]);
    let after = eventually("the in-place restart", || {
        let p = e.json(&["get", "pod", "p"]);
        let app = &p["status"]["containerStatuses"][0];
        (app["restartCount"] == 1 && app["image"] == "nginx:1.27" && is_ready(&p)).then_some(p)
    });
    assert_eq!(after["metadata"]["uid"], before["metadata"]["uid"]);
    let (a0, a1) =
        (&before["status"]["containerStatuses"][0], &after["status"]["containerStatuses"][0]);
    assert_ne!(a0["imageID"], a1["imageID"]);
    assert_ne!(a0["containerID"], a1["containerID"]);
    assert_eq!(a1["lastState"]["terminated"]["containerID"], a0["containerID"]);
    // The other container was left alone.
    assert_eq!(before["status"]["containerStatuses"][1], after["status"]["containerStatuses"][1]);
    assert_eq!(after["spec"]["nodeName"], before["spec"]["nodeName"]);
}

#[test]
fn an_image_that_fails_to_pull_waits_in_err_image_pull_and_image_pull_back_off() {
    // The pull back-off is the first crash back-off: 3 s here, so that `ImagePullBackOff`
    // (from 1 s after the failure) shows before the next pull.
    let e = env_with(
        vec![NodeSpec::new("n-a")],
        Delays { restart_backoff: Duration::from_secs(3), ..fast() },
    );
    let manifest = "apiVersion: v1\nkind: Pod\nmetadata:\n  name: p\nspec:\n  restartPolicy: Never\n  containers:\n  - name: app\n    image: bad image\n";
    e.ok_stdin(&["apply", "-f", "-"], manifest);
    let mut seen = Vec::new();
    for want in ["ErrImagePull", "ImagePullBackOff"] {
        let p = eventually(want, || {
            let p = e.json(&["get", "pod", "p"]);
            let state = &p["status"]["containerStatuses"][0]["state"];
            seen.push(state.clone());
            (state["waiting"]["reason"] == want).then_some(p)
        });
        let app = &p["status"]["containerStatuses"][0];
        assert_eq!(app["restartCount"], 0, "{p}");
        assert_eq!(app["lastState"], json!({}), "{p}");
        assert_eq!(p["status"]["phase"], "Pending", "{p}");
        let message = app["state"]["waiting"]["message"].as_str().expect("message");
        assert!(message.ends_with("invalid image reference \"bad image\""), "{message}");
        // kubectl shows the reason as the pod's status (either: it may have moved on).
        let shown = e.ok(&["get", "pod", "p", "--no-headers"]);
        assert!(shown.contains("ErrImagePull") || shown.contains("ImagePullBackOff"), "{shown}");
    }
    assert!(
        seen.iter().all(|s| s.get("terminated").is_none() && s.get("running").is_none()),
        "{seen:?}"
    );
    // A fixed image pulls and runs.
    e.ok(&["set", "image", "pod/p", "app=nginx:1.27"]);
    e.ok(&["wait", "--for=condition=Ready", "pod/p", "--timeout=20s"]);
    let p = e.json(&["get", "pod", "p"]);
    assert_eq!(p["status"]["phase"], "Running");
    assert_eq!(p["status"]["containerStatuses"][0]["restartCount"], 0);
}

#[test]
fn taints_affinity_cordon_and_unschedulable_message() {
    let e = env(vec![
        NodeSpec::new("n-gpu").zone("zone-a").label("gpu", "true").taint(
            "dedicated",
            "gpu",
            "NoSchedule",
        ),
        NodeSpec::new("n-a").zone("zone-a"),
        NodeSpec::new("n-b").zone("zone-b"),
    ]);
    let base = |name: &str, spec: &str| {
        format!(
            "apiVersion: v1\nkind: Pod\nmetadata:\n  name: {name}\nspec:\n{spec}  containers:\n  - name: c\n    image: nginx\n"
        )
    };
    let no_tol = base("no-tol", "  nodeSelector: {gpu: \"true\"}\n");
    let tol = base(
        "tol",
        "  tolerations:\n  - {key: dedicated, operator: Equal, value: gpu, effect: NoSchedule}\n  affinity:\n    nodeAffinity:\n      requiredDuringSchedulingIgnoredDuringExecution:\n        nodeSelectorTerms:\n        - matchExpressions:\n          - {key: gpu, operator: In, values: [\"true\"]}\n",
    );
    let pref = base(
        "pref",
        "  affinity:\n    nodeAffinity:\n      preferredDuringSchedulingIgnoredDuringExecution:\n      - weight: 50\n        preference:\n          matchExpressions:\n          - {key: topology.kubernetes.io/zone, operator: In, values: [zone-b]}\n",
    );
    let big = base("big", "")
        .replace("image: nginx\n", "image: nginx\n    resources:\n      requests: {cpu: \"64\"}\n");
    e.ok_stdin(&["apply", "-f", "-"], &[no_tol, tol, pref, big].join("---\n"));
    e.ok(&["wait", "--for=condition=Ready", "pod/tol", "pod/pref", "--timeout=20s"]);
    assert_eq!(e.ok(&["get", "pod", "tol", "-o", "jsonpath={.spec.nodeName}"]), "n-gpu");
    assert_eq!(e.ok(&["get", "pod", "pref", "-o", "jsonpath={.spec.nodeName}"]), "n-b");
    let unsched = |name: &str| {
        eventually("Unschedulable", || {
            let p = e.json(&["get", "pod", name]);
            condition(&p, "PodScheduled").filter(|c| c["reason"] == "Unschedulable")
        })
    };
    let c = unsched("no-tol");
    assert_eq!(c["status"], "False");
    assert_eq!(
        c["message"],
        "0/3 nodes are available: 1 node(s) had untolerated taint {dedicated: gpu}, 2 node(s) didn't match Pod's node affinity/selector. preemption: 0/3 nodes are available: 3 Preemption is not helpful for scheduling."
    );
    let c = unsched("big");
    assert!(c["message"].as_str().expect("msg").starts_with("0/3 nodes are available: 1 node(s) had untolerated taint {dedicated: gpu}, 2 Insufficient cpu."), "{c}");
    // Cordon: new pods pinned there stay pending; existing ones keep running.
    e.server.nodes().expect("nodes").apply_blocking(NodeOp::Cordon("n-a".into())).expect("cordon");
    let n = e.json(&["get", "node", "n-a"]);
    assert_eq!(n["spec"]["unschedulable"], true);
    e.ok_stdin(
        &["apply", "-f", "-"],
        &base("pinned", "  nodeSelector: {kubernetes.io/hostname: n-a}\n"),
    );
    let c = unsched("pinned");
    assert!(c["message"].as_str().expect("msg").contains("1 node(s) were unschedulable"), "{c}");
    e.server
        .nodes()
        .expect("nodes")
        .apply_blocking(NodeOp::Uncordon("n-a".into()))
        .expect("uncordon");
    e.ok(&["wait", "--for=condition=Ready", "pod/pinned", "--timeout=20s"]);
}

#[test]
fn failed_node_makes_its_pods_not_ready_and_recovers() {
    let e = env(vec![NodeSpec::new("n-a").zone("zone-a"), NodeSpec::new("n-b").zone("zone-b")]);
    let pin = |name: &str, node: &str| pod_yaml(name, &format!("  nodeName: {node}\n"));
    e.ok_stdin(&["apply", "-f", "-"], &[pin("on-a", "n-a"), pin("on-b", "n-b")].join("---\n"));
    e.ok(&["wait", "--for=condition=Ready", "pod/on-a", "pod/on-b", "--timeout=20s"]);
    let sim = e.server.nodes().expect("nodes");
    sim.apply_blocking(NodeOp::Fail("n-a".into(), Failure::Unknown)).expect("fail");
    e.ok(&["wait", "--for=condition=Ready=false", "pod/on-a", "--timeout=20s"]);
    let n = e.json(&["get", "node", "n-a"]);
    assert_eq!(condition(&n, "Ready").expect("Ready")["status"], "Unknown");
    let taints = n["spec"]["taints"].to_string();
    assert!(taints.contains("node.kubernetes.io/unreachable"), "{taints}");
    assert!(is_ready(&e.json(&["get", "pod", "on-b"])), "pods elsewhere stay Ready");
    assert!(e.ok(&["get", "nodes"]).contains("NotReady"));
    sim.apply_blocking(NodeOp::Recover("n-a".into())).expect("recover");
    e.ok(&["wait", "--for=condition=Ready", "pod/on-a", "--timeout=20s"]);
    sim.apply_blocking(NodeOp::Fail("n-b".into(), Failure::NotReady)).expect("fail");
    e.ok(&["wait", "--for=condition=Ready=false", "pod/on-b", "--timeout=20s"]);
    // Removing a node deletes its pods, as the pod garbage collector does.
    sim.apply_blocking(NodeOp::Remove("n-b".into())).expect("remove");
    eventually("pod on-b to go", || {
        e.run(&["get", "pod", "on-b"]).stderr.contains("not found").then_some(())
    });
}

#[test]
fn graceful_deletion_init_containers_sidecars_and_readiness_gates() {
    // Containers take 1 s to stop, so the pending deletion can be seen.
    let e = env_with(three_zones(), Delays { stop: Duration::from_secs(1), ..fast() });
    let manifest = "apiVersion: v1\nkind: Pod\nmetadata:\n  name: g\n  finalizers: [example.com/hold]\nspec:\n  terminationGracePeriodSeconds: 30\n  readinessGates:\n  - conditionType: example.com/gate\n  initContainers:\n  - {name: init, image: busybox}\n  - {name: side, image: envoy:1, restartPolicy: Always}\n  containers:\n  - {name: app, image: nginx}\n";
    e.ok_stdin(&["apply", "-f", "-"], manifest);
    e.ok(&["wait", "--for=condition=ContainersReady", "pod/g", "--timeout=20s"]);
    let p = e.json(&["get", "pod", "g"]);
    assert_eq!(
        p["status"]["initContainerStatuses"][0]["state"]["terminated"]["reason"],
        "Completed"
    );
    assert_eq!(p["status"]["initContainerStatuses"][1]["started"], true);
    let ready = condition(&p, "Ready").expect("Ready");
    assert_eq!(
        (ready["status"].as_str(), ready["reason"].as_str()),
        (Some("False"), Some("ReadinessGatesNotReady"))
    );
    // A controller sets the gate's condition; the pod becomes Ready.
    e.ok(&[
        "patch",
        "pod",
        "g",
        "--subresource=status",
        "--type=strategic",
        "-p",
        r#"{"status":{"conditions":[{"type":"example.com/gate","status":"True"}]}}"#,
    ]);
    e.ok(&["wait", "--for=condition=Ready", "pod/g", "--timeout=20s"]);
    // Delete: graceful, the kubelet stops containers, the finalizer holds the object.
    e.ok(&["delete", "pod", "g", "--wait=false"]);
    let p = e.json(&["get", "pod", "g"]);
    assert!(p["metadata"]["deletionTimestamp"].is_string());
    assert_eq!(p["metadata"]["deletionGracePeriodSeconds"], 30);
    let done = eventually("containers to stop", || {
        let p = e.json(&["get", "pod", "g"]);
        (p["status"]["phase"] == "Succeeded" && p["metadata"]["deletionGracePeriodSeconds"] == 0)
            .then_some(p)
    });
    assert!(done["status"]["containerStatuses"][0]["state"]["terminated"].is_object());
    e.ok(&["patch", "pod", "g", "--type=merge", "-p", r#"{"metadata":{"finalizers":null}}"#]);
    eventually("pod g to go", || {
        e.run(&["get", "pod", "g"]).stderr.contains("not found").then_some(())
    });
    // Without finalizers kubectl delete waits until the kubelet has finished.
    e.ok_stdin(&["apply", "-f", "-"], &pod_yaml("h", ""));
    e.ok(&["wait", "--for=condition=Ready", "pod/h", "--timeout=20s"]);
    e.ok(&["delete", "pod", "h", "--timeout=20s"]);
    assert!(e.fails(&["get", "pod", "h"]).contains("not found"));
    // Eviction is graceful too.
    e.ok_stdin(&["apply", "-f", "-"], &pod_yaml("ev", ""));
    e.ok(&["wait", "--for=condition=Ready", "pod/ev", "--timeout=20s"]);
    e.ok(&["drain", "n-a", "n-b", "n-c", "--pod-selector=app=web", "--timeout=20s", "--force"]);
    assert!(e.fails(&["get", "pod", "ev"]).contains("not found"));
}

#[test]
fn in_place_resize_through_the_resize_subresource() {
    let e = env(vec![NodeSpec::new("n-a").zone("zone-a").capacity("4", "8Gi", 110)]);
    let manifest = "apiVersion: v1\nkind: Pod\nmetadata:\n  name: r\nspec:\n  containers:\n  - name: app\n    image: nginx\n    resources:\n      requests: {cpu: 500m, memory: 256Mi}\n      limits: {cpu: \"1\", memory: 512Mi}\n    resizePolicy:\n    - {resourceName: memory, restartPolicy: RestartContainer}\n  - name: side\n    image: busybox\n";
    e.ok_stdin(&["apply", "-f", "-"], manifest);
    e.ok(&["wait", "--for=condition=Ready", "pod/r", "--timeout=20s"]);
    let before = e.json(&["get", "pod", "r"]);
    let app0 = before["status"]["containerStatuses"][0].clone();
    assert_eq!(app0["resources"]["limits"]["cpu"], "1");
    assert_eq!(app0["allocatedResources"]["cpu"], "500m");
    let resize = |patch: &str| {
        e.run(&["patch", "pod", "r", "--subresource", "resize", "--type=strategic", "-p", patch])
    };
    // CPU (resizePolicy NotRequired by default): applied in place, no restart.
    let o = resize(
        r#"{"spec":{"containers":[{"name":"app","image":"ignored:2","resources":{"requests":{"cpu":"1"},"limits":{"cpu":"2"}}}]}}"#,
    );
    assert!(o.ok, "{}", o.stderr);
    let settled = |what: &str, f: &dyn Fn(&Value) -> bool| {
        eventually(what, || {
            let p = e.json(&["get", "pod", "r"]);
            let conds = p["status"]["conditions"].to_string();
            (f(&p) && !conds.contains("PodResize") && is_ready(&p)).then_some(p)
        })
    };
    let p = settled("the cpu resize", &|p| {
        p["status"]["containerStatuses"][0]["resources"]["limits"]["cpu"] == "2"
    });
    let app = &p["status"]["containerStatuses"][0];
    assert_eq!(p["spec"]["containers"][0]["image"], "nginx", "resize changes resources only");
    assert_eq!(app["allocatedResources"]["cpu"], "1");
    assert_eq!(app["resources"]["requests"]["memory"], "256Mi");
    assert_eq!((&app["restartCount"], &app["containerID"]), (&json!(0), &app0["containerID"]));
    assert_eq!(p["metadata"]["uid"], before["metadata"]["uid"]);
    // Memory with resizePolicy RestartContainer: only that container restarts.
    let o = resize(
        r#"{"spec":{"containers":[{"name":"app","resources":{"requests":{"memory":"512Mi"},"limits":{"memory":"1Gi"}}}]}}"#,
    );
    assert!(o.ok, "{}", o.stderr);
    let p = settled("the memory resize", &|p| {
        p["status"]["containerStatuses"][0]["resources"]["limits"]["memory"] == "1Gi"
    });
    let app = &p["status"]["containerStatuses"][0];
    assert_eq!(app["restartCount"], 1);
    assert_eq!(app["lastState"]["terminated"]["containerID"], app0["containerID"]);
    assert_eq!(p["status"]["containerStatuses"][1]["restartCount"], 0);
    // More than the node's allocatable: Infeasible, the old allocation stays.
    let o = resize(
        r#"{"spec":{"containers":[{"name":"app","resources":{"requests":{"cpu":"6"},"limits":{"cpu":"6"}}}]}}"#,
    );
    assert!(o.ok, "{}", o.stderr);
    let c = eventually("PodResizePending", || {
        condition(&e.json(&["get", "pod", "r"]), "PodResizePending")
    });
    assert_eq!((c["status"].as_str(), c["reason"].as_str()), (Some("True"), Some("Infeasible")));
    assert_eq!(
        c["message"],
        "Node didn't have enough capacity: cpu, requested: 6000, capacity: 4000"
    );
    let p = e.json(&["get", "pod", "r"]);
    assert_eq!(p["status"]["containerStatuses"][0]["allocatedResources"]["cpu"], "1");
    // A plain pod update may not change resources (as kube-apiserver refuses it); a resize
    // back to something that fits clears the condition.
    let plain = r#"{"spec":{"containers":[{"name":"app","resources":{"requests":{"cpu":"2"},"limits":{"cpu":"3"}}}]}}"#;
    let o = e.run(&["patch", "pod", "r", "--type=strategic", "-p", plain]);
    assert!(!o.ok && o.stderr.contains("pod updates may not change fields"), "{}", o.stderr);
    let o = resize(plain);
    assert!(o.ok, "{}", o.stderr);
    settled("the resize to fit", &|p| {
        p["status"]["containerStatuses"][0]["resources"]["limits"]["cpu"] == "3"
    });
    // The server forbids what the real one forbids.
    let o = resize(
        r#"{"spec":{"containers":[{"name":"app","resources":{"requests":{"ephemeral-storage":"1Gi"}}}]}}"#,
    );
    assert!(!o.ok);
    assert!(
        o.stderr.contains("spec: Forbidden: only cpu and memory resources are mutable"),
        "{}",
        o.stderr
    );
    let o = resize(r#"{"spec":{"containers":[{"name":"app","resources":null}]}}"#);
    assert!(
        o.stderr.contains("Pod QOS Class may not change as a result of resizing"),
        "{}",
        o.stderr
    );
}
