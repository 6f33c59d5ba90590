//! The simulated kubelet resolves containers' ConfigMap and Secret environment references as
//! it starts them: a missing object or key holds that container in `CreateContainerConfigError`
//! (OpenKruise's container launch priority relies on it), driven with the real kubectl.

use crate::common;

use common::Env;
use kruise_sim::Config;
use kruise_sim::nodes::kubelet::Delays;
use kruise_sim::nodes::{NodeSpec, NodesConfig};
use serde_json::Value;
use std::time::{Duration, Instant};

fn env() -> Env {
    let delays = Delays {
        pull: Duration::from_millis(20),
        start: Duration::from_millis(10),
        ready: Duration::from_millis(50),
        init_run: Duration::from_millis(10),
        stop: Duration::from_millis(20),
        ..Delays::default()
    };
    let mut nc = NodesConfig::new(0).with_nodes(vec![NodeSpec::new("n-a")]).with_delays(delays);
    nc.lease_renew = Duration::from_millis(200);
    Env::new(Config::default().with_nodes(nc))
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

fn condition(pod: &Value, t: &str) -> Value {
    pod.pointer("/status/conditions")
        .and_then(Value::as_array)
        .and_then(|cs| cs.iter().find(|c| c["type"] == t).cloned())
        .unwrap_or(Value::Null)
}

/// The status of container `name`.
fn status<'a>(pod: &'a Value, name: &str) -> &'a Value {
    pod["status"]["containerStatuses"]
        .as_array()
        .and_then(|cs| cs.iter().find(|c| c["name"] == name))
        .unwrap_or(&Value::Null)
}

fn running(pod: &Value, name: &str) -> bool {
    status(pod, name)["state"]["running"].is_object()
}

/// `(reason, message)` of a waiting container.
fn waiting(pod: &Value, name: &str) -> (String, String) {
    let w = &status(pod, name)["state"]["waiting"];
    let s = |v: &Value| v.as_str().unwrap_or_default().to_owned();
    (s(&w["reason"]), s(&w["message"]))
}

fn config_error(message: &str) -> (String, String) {
    ("CreateContainerConfigError".to_owned(), message.to_owned())
}

/// The STATUS column of `kubectl get pod`.
fn status_column(e: &Env, pod: &str) -> String {
    let out = e.ok(&["get", "pod", pod, "--no-headers"]);
    out.split_whitespace().nth(2).unwrap_or_default().to_owned()
}

fn barrier_container(name: &str, key: &str) -> String {
    format!(
        "  - name: {name}\n    image: nginx:1.25\n    env:\n    - name: KRUISE_CONTAINER_BARRIER\n      valueFrom:\n        configMapKeyRef: {{name: web-barrier, key: {key}}}\n"
    )
}

#[test]
fn containers_start_in_the_order_their_barrier_keys_appear() {
    let e = env();
    e.ok(&["create", "configmap", "web-barrier"]);
    let manifest = format!(
        "apiVersion: v1\nkind: Pod\nmetadata:\n  name: web\nspec:\n  containers:\n{}{}{}  - name: plain\n    image: busybox:1.36\n",
        barrier_container("c2", "p_2"),
        barrier_container("c1", "p_1"),
        barrier_container("c0", "p_0"),
    );
    e.ok_stdin(&["apply", "-f", "-"], &manifest);
    let missing = |key: &str| {
        config_error(&format!("couldn't find key {key} in ConfigMap default/web-barrier"))
    };

    // Only the container without a missing key starts; the others wait with kubelet's message.
    let p = eventually("the blocked containers", || {
        let p = e.json(&["get", "pod", "web"]);
        (running(&p, "plain")
            && ["c0", "c1", "c2"].iter().all(|c| waiting(&p, c).0 == "CreateContainerConfigError"))
        .then_some(p)
    });
    assert_eq!(waiting(&p, "c2"), missing("p_2"));
    assert_eq!(waiting(&p, "c1"), missing("p_1"));
    assert_eq!(waiting(&p, "c0"), missing("p_0"));
    for c in ["c0", "c1", "c2"] {
        assert_eq!(status(&p, c)["started"], false, "{c}");
        assert_eq!(status(&p, c)["ready"], false, "{c}");
    }
    // A container that never ran and waits keeps the pod Pending, as kubelet's getPhase does.
    assert_eq!(p["status"]["phase"], "Pending");
    let ready = condition(&p, "Ready");
    assert_eq!(ready["status"], "False");
    assert_eq!(ready["reason"], "ContainersNotReady");
    assert_eq!(ready["message"], "containers with unready status: [c2 c1 c0]");
    assert_eq!(condition(&p, "ContainersReady")["status"], "False");
    assert_eq!(status_column(&e, "web"), "CreateContainerConfigError");

    // The keys appear one at a time (as OpenKruise's launch priority adds them): each starts
    // its container, and only that one.
    for (key, starts, still_waiting) in
        [("p_0", "c0", vec!["c1", "c2"]), ("p_1", "c1", vec!["c2"]), ("p_2", "c2", vec![])]
    {
        let patch = format!("{{\"data\":{{\"{key}\":\"\"}}}}");
        e.ok(&["patch", "configmap", "web-barrier", "--type=merge", "-p", &patch]);
        let p = eventually(&format!("{starts} to start"), || {
            let p = e.json(&["get", "pod", "web"]);
            running(&p, starts).then_some(p)
        });
        for c in still_waiting {
            let k = format!("p_{}", &c[1..]);
            assert_eq!(waiting(&p, c), missing(&k), "{c} after {key}");
        }
    }
    e.ok(&["wait", "--for=condition=Ready", "pod/web", "--timeout=20s"]);
    let p = e.json(&["get", "pod", "web"]);
    assert_eq!(p["status"]["phase"], "Running");
    assert_eq!(status_column(&e, "web"), "Running");
    let started =
        |c: &str| status(&p, c)["state"]["running"]["startedAt"].as_str().map(str::to_owned);
    let (s0, s1, s2) = (started("c0"), started("c1"), started("c2"));
    assert!(s0.is_some() && s0 <= s1 && s1 <= s2, "startedAt: {s0:?} {s1:?} {s2:?}");
    // The runtime's start times are finer than startedAt's seconds: strictly in key order.
    let sim = e.server.nodes().expect("nodes");
    let rt = sim.runtime("n-a").expect("runtime");
    let uid = p["metadata"]["uid"].as_str().expect("uid");
    let at = |name: &str| {
        rt.runtime()
            .list_containers(Some(uid))
            .into_iter()
            .find(|c| c.name == name)
            .map(|c| c.started_at)
            .expect("container")
    };
    assert!(at("c0") < at("c1") && at("c1") < at("c2"));
    for c in ["c0", "c1", "c2"] {
        assert_eq!(status(&p, c)["restartCount"], 0, "{c}");
    }
}

#[test]
fn missing_config_maps_secrets_and_keys_and_optional_references() {
    let e = env();
    e.ok(&["create", "secret", "generic", "creds", "--from-literal=user=admin"]);
    let pod = |name: &str, container: &str| {
        format!(
            "apiVersion: v1\nkind: Pod\nmetadata:\n  name: {name}\nspec:\n  containers:\n  - name: app\n    image: nginx:1.25\n{container}"
        )
    };
    let manifest = [
        pod(
            "missing-cm",
            "    env:\n    - name: A\n      valueFrom:\n        configMapKeyRef: {name: settings, key: mode}\n",
        ),
        pod(
            "optional",
            "    env:\n    - name: A\n      valueFrom:\n        configMapKeyRef: {name: nope, key: k, optional: true}\n    - name: B\n      valueFrom:\n        secretKeyRef: {name: creds, key: token, optional: true}\n    envFrom:\n    - configMapRef: {name: nope, optional: true}\n",
        ),
        pod(
            "secret-key",
            "    env:\n    - name: USER\n      valueFrom:\n        secretKeyRef: {name: creds, key: user}\n    - name: PASSWORD\n      valueFrom:\n        secretKeyRef: {name: creds, key: password}\n",
        ),
        pod(
            "missing-secret",
            "    env:\n    - name: A\n      valueFrom:\n        secretKeyRef: {name: vault, key: k}\n",
        ),
        pod("env-from", "    envFrom:\n    - configMapRef: {name: app-config}\n"),
    ]
    .join("---\n");
    e.ok_stdin(&["apply", "-f", "-"], &manifest);
    let get = |name: &str| e.json(&["get", "pod", name]);
    let blocked = |name: &str| {
        eventually(&format!("{name} to be blocked"), || {
            let p = get(name);
            let w = waiting(&p, "app");
            (w.0 == "CreateContainerConfigError").then_some(w.1)
        })
    };
    assert_eq!(blocked("missing-cm"), "configmap \"settings\" not found");
    assert_eq!(blocked("secret-key"), "couldn't find key password in Secret default/creds");
    assert_eq!(blocked("missing-secret"), "secret \"vault\" not found");
    assert_eq!(blocked("env-from"), "configmap \"app-config\" not found");
    for name in ["missing-cm", "secret-key", "missing-secret", "env-from"] {
        assert_eq!(status_column(&e, name), "CreateContainerConfigError", "{name}");
        assert_eq!(get(name)["status"]["phase"], "Pending", "{name}");
    }
    // Optional references to what does not exist are skipped.
    e.ok(&["wait", "--for=condition=Ready", "pod/optional", "--timeout=20s"]);
    assert!(running(&get("optional"), "app"));

    // What was missing appears: the kubelet tries again and the containers start.
    e.ok(&["create", "configmap", "settings", "--from-literal=mode=fast"]);
    e.ok(&[
        "patch",
        "secret",
        "creds",
        "--type=merge",
        "-p",
        "{\"stringData\":{\"password\":\"pw\"}}",
    ]);
    e.ok(&["create", "configmap", "app-config"]);
    e.ok(&[
        "wait",
        "--for=condition=Ready",
        "pod/missing-cm",
        "pod/secret-key",
        "pod/env-from",
        "--timeout=20s",
    ]);
    for name in ["missing-cm", "secret-key", "env-from"] {
        let p = get(name);
        assert!(running(&p, "app"), "{name}");
        assert_eq!(p["status"]["phase"], "Running", "{name}");
    }
    // A ConfigMap of the Secret's name does not count. Once a pod that reads it has started,
    // the kubelet has seen it, and the Secret's container still waits.
    e.ok(&["create", "configmap", "vault", "--from-literal=k=v"]);
    e.ok_stdin(
        &["apply", "-f", "-"],
        &pod(
            "vault-cm",
            "    env:\n    - name: A\n      valueFrom:\n        configMapKeyRef: {name: vault, key: k}\n",
        ),
    );
    e.ok(&["wait", "--for=condition=Ready", "pod/vault-cm", "--timeout=20s"]);
    assert_eq!(waiting(&get("missing-secret"), "app"), config_error("secret \"vault\" not found"));
}

/// Runs `cmd` through the CRI in the running container `name` of pod `pod`; its stdout.
#[cfg(feature = "cri")]
fn exec_in(e: &Env, pod: &Value, name: &str, cmd: &[&str]) -> String {
    use kruise_cri::ContainerRuntime as _;
    let id = status(pod, name)["containerID"].as_str().expect("container ID");
    let id = id.strip_prefix("containerd://").expect("containerd ID").to_owned();
    let node = pod["spec"]["nodeName"].as_str().expect("node");
    let rt = e.server.nodes().expect("nodes").runtime(node).expect("runtime");
    let cri = kruise_sim::nodes::cri::SimCri::new(rt);
    let cmd = cmd.iter().map(|s| (*s).to_owned()).collect();
    let tokio = tokio::runtime::Builder::new_current_thread().enable_all().build().expect("rt");
    let r = tokio.block_on(cri.exec_sync(&id, cmd, Duration::from_secs(5))).expect("exec");
    assert_eq!(r.exit_code, 0);
    String::from_utf8(r.stdout).expect("utf-8")
}

/// kruise-daemon reads a container's environment with `env` through the CRI: a label the
/// environment takes is fixed when the container is created, so a new label value shows only
/// once the container is recreated (stopped through the CRI and started again by the kubelet).
#[cfg(feature = "cri")]
#[test]
fn a_label_in_the_environment_changes_only_with_a_new_container() {
    use kruise_cri::ContainerRuntime as _;
    let e = env();
    e.ok(&["create", "configmap", "app-config", "--from-literal=mode=fast"]);
    e.ok_stdin(
        &["apply", "-f", "-"],
        "apiVersion: v1\nkind: Pod\nmetadata:\n  name: web\n  labels: {version: v1}\nspec:\n  containers:\n  - name: app\n    image: nginx:1.25\n    envFrom:\n    - configMapRef: {name: app-config}\n      prefix: CFG_\n    env:\n    - name: APP_VERSION\n      valueFrom:\n        fieldRef: {fieldPath: \"metadata.labels['version']\"}\n    - name: POD_NAME\n      valueFrom:\n        fieldRef: {fieldPath: metadata.name}\n    - name: TAG\n      value: $(POD_NAME)-$(APP_VERSION)\n",
    );
    e.ok(&["wait", "--for=condition=Ready", "pod/web", "--timeout=20s"]);
    let p = e.json(&["get", "pod", "web"]);
    let out = exec_in(&e, &p, "app", &["env"]);
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(
        lines.first().copied(),
        Some("PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin")
    );
    for want in [
        "HOSTNAME=web",
        "CFG_mode=fast",
        "APP_VERSION=v1",
        "POD_NAME=web",
        "TAG=web-v1",
        "HOME=/root",
    ] {
        assert!(lines.contains(&want), "{want} in {out}");
    }

    e.ok(&["label", "pod", "web", "--overwrite", "version=v2"]);
    // A pod created after the label change has started: the node has seen the change.
    e.ok_stdin(
        &["apply", "-f", "-"],
        "apiVersion: v1\nkind: Pod\nmetadata:\n  name: marker\nspec:\n  containers:\n  - name: app\n    image: nginx:1.25\n",
    );
    e.ok(&["wait", "--for=condition=Ready", "pod/marker", "--timeout=20s"]);
    let same = e.json(&["get", "pod", "web"]);
    assert_eq!(status(&same, "app")["containerID"], status(&p, "app")["containerID"]);
    assert_eq!(status(&same, "app")["restartCount"], 0);
    let out = exec_in(&e, &same, "app", &["env"]);
    assert!(out.contains("\nAPP_VERSION=v1\n") && out.contains("\nTAG=web-v1\n"), "{out}");

    // Stopped through the CRI as kruise-daemon does, then started again by the kubelet.
    let id = status(&p, "app")["containerID"].as_str().expect("ID").to_owned();
    let rt = e.server.nodes().expect("nodes").runtime("n-a").expect("runtime");
    let cri = kruise_sim::nodes::cri::SimCri::new(rt);
    let tokio = tokio::runtime::Builder::new_current_thread().enable_all().build().expect("rt");
    let cri_id = id.strip_prefix("containerd://").expect("containerd ID");
    tokio.block_on(cri.stop_container(cri_id, 30)).expect("stop");
    let again = eventually("the container to run again", || {
        let p = e.json(&["get", "pod", "web"]);
        (running(&p, "app") && status(&p, "app")["restartCount"] == 1).then_some(p)
    });
    assert_ne!(status(&again, "app")["containerID"], id.as_str());
    let out = exec_in(&e, &again, "app", &["printenv"]);
    assert!(out.contains("\nAPP_VERSION=v2\n") && out.contains("\nTAG=web-v2\n"), "{out}");
    // The stopped container is no place to run anything: containerd's error.
    let err = tokio
        .block_on(cri.exec_sync(cri_id, vec!["env".to_owned()], Duration::from_secs(5)))
        .expect_err("exited");
    assert!(err.to_string().contains("container is in CONTAINER_EXITED state"), "{err}");
}
