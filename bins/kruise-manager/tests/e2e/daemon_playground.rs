//! kruise-daemon's workers on the playground: `kruise-manager playground` runs one daemon per
//! simulated node over that node's simulated container runtime (kruise-sim's `cri` feature),
//! so ContainerRecreateRequests and ImagePullJobs complete without anything written by hand
//! (compare `daemon_manager`, which plays the daemon's part with kubectl).

use std::time::Duration;

use serde_json::{Value, json};

use crate::common::{Kubectl, Playground, wait_for};

const MINUTE: Duration = Duration::from_secs(60);

fn restart_counts(pod: &Value) -> Vec<(String, i64)> {
    pod["status"]["containerStatuses"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|s| {
            (
                s["name"].as_str().unwrap_or_default().to_owned(),
                s["restartCount"].as_i64().unwrap_or(-1),
            )
        })
        .collect()
}

fn get_pod(k: &Kubectl, name: &str) -> Value {
    k.json(&["get", "pod", name, "-n", "default", "-o", "json"])
}

#[test]
fn playground_daemon_recreates_containers_and_pulls_images() {
    let started = std::time::Instant::now();
    let pg = Playground::start(
        3,
        &["--feature-gates", "ImagePullJobGate=true", "--nodeimage-creation-delay", "0s"],
    );
    let k = &pg.kubectl;
    assert!(pg.log().contains("kruise-daemon on every node"), "{}", pg.log());

    // (a) A ContainerRecreateRequest restarts one container of a running pod.
    let pod = json!({
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "victim", "namespace": "default"},
        "spec": {"containers": [
            {"name": "main", "image": "registry.example/main:v1"},
            {"name": "side", "image": "registry.example/side:v1"},
        ]},
    });
    k.ok_stdin(&["create", "-f", "-"], &pod.to_string());
    let before = wait_for("the pod ready", MINUTE, || {
        let pod = get_pod(k, "victim");
        let ready = pod["status"]["containerStatuses"]
            .as_array()
            .is_some_and(|s| s.len() == 2 && s.iter().all(|c| c["ready"] == true));
        ready.then_some(pod)
    });
    assert_eq!(restart_counts(&before), [("main".to_owned(), 0), ("side".to_owned(), 0)]);
    let crr = json!({
        "apiVersion": "apps.kruise.io/v1alpha1",
        "kind": "ContainerRecreateRequest",
        "metadata": {"name": "recreate-main", "namespace": "default"},
        "spec": {"podName": "victim", "containers": [{"name": "main"}]},
    });
    k.ok_stdin(&["create", "-f", "-"], &crr.to_string());
    let done = wait_for("the request Completed", MINUTE, || {
        let crr = k.json(&[
            "get",
            "containerrecreaterequests.v1alpha1.apps.kruise.io",
            "recreate-main",
            "-n",
            "default",
            "-o",
            "json",
        ]);
        (crr["status"]["phase"] == "Completed").then_some(crr)
    });
    let states = &done["status"]["containerRecreateStates"];
    assert_eq!(states[0]["name"], "main", "{done}");
    assert_eq!(states[0]["phase"], "Succeeded", "{done}");
    let after = wait_for("main restarted once", MINUTE, || {
        let pod = get_pod(k, "victim");
        (restart_counts(&pod) == [("main".to_owned(), 1), ("side".to_owned(), 0)]).then_some(pod)
    });
    let main = &after["status"]["containerStatuses"][0];
    assert_ne!(main["containerID"], before["status"]["containerStatuses"][0]["containerID"]);
    assert_eq!(
        main["lastState"]["terminated"]["containerID"],
        before["status"]["containerStatuses"][0]["containerID"]
    );
    assert_eq!(main["lastState"]["terminated"]["exitCode"], 143, "stopped with SIGTERM");
    assert_eq!(
        after["status"]["containerStatuses"][1]["containerID"],
        before["status"]["containerStatuses"][1]["containerID"],
        "the other container kept running"
    );

    // (b) An ImagePullJob pulls an image on every node.
    let job = json!({
        "apiVersion": "apps.kruise.io/v1alpha1",
        "kind": "ImagePullJob",
        "metadata": {"name": "warm", "namespace": "default"},
        "spec": {"image": "registry.example/warm:v1", "completionPolicy": {"type": "Always"}},
    });
    k.ok_stdin(&["create", "-f", "-"], &job.to_string());
    let status = wait_for("the ImagePullJob completed", 2 * MINUTE, || {
        let job = k.json(&[
            "get",
            "imagepulljobs.v1alpha1.apps.kruise.io",
            "warm",
            "-n",
            "default",
            "-o",
            "json",
        ]);
        job["status"]["completionTime"].is_string().then(|| job["status"].clone())
    });
    assert_eq!(status["desired"], 3, "{status}");
    assert_eq!(status["succeeded"], 3, "{status}");
    for node in ["sim-node-0", "sim-node-1", "sim-node-2"] {
        let ni = k.json(&["get", "nodeimage", node, "-o", "json"]);
        let tags = &ni["status"]["imageStatuses"]["registry.example/warm"]["tags"];
        assert_eq!(tags[0]["tag"], "v1", "{node}: {ni}");
        assert!(tags[0]["imageID"].as_str().is_some_and(|id| !id.is_empty()), "{node}: {ni}");
    }
    eprintln!(
        "playground_daemon_recreates_containers_and_pulls_images took {:?}",
        started.elapsed()
    );
}
