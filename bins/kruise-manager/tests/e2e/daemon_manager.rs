//! The manager's side of the daemon features, end to end on kruise-sim with the real kubectl:
//! NodeImages per node, ImagePullJobs spreading tags over them, ContainerRecreateRequests
//! and their webhooks. No kruise-daemon runs here: the tests write what it would report
//! (NodeImage and CRR status) with kubectl.

use std::time::Duration;

use serde_json::{Value, json};

use crate::common::{Kubectl, SimCluster, wait_for};

const MINUTE: Duration = Duration::from_secs(60);

fn cluster(nodes: usize) -> SimCluster {
    crate::pub_budget::cluster_with_nodes(nodes)
}

fn start(cluster: &SimCluster) -> crate::common::Proc {
    let (manager, _) = crate::pub_budget::start_manager(
        cluster,
        &["--feature-gates", "ImagePullJobGate=true", "--nodeimage-creation-delay", "0s"],
    );
    // The daemon features' webhooks are registered too.
    wait_for("the NodeImage webhook", MINUTE, || {
        let out = cluster.kubectl.run_with(
            &[
                "get",
                "mutatingwebhookconfiguration",
                "kruise-mutating-webhook-configuration",
                "-o",
                "json",
            ],
            None,
        );
        out.stdout.contains("\"mnodeimage.kb.io\"").then_some(())
    });
    manager
}

fn node_images(k: &Kubectl) -> Vec<Value> {
    k.json(&["get", "nodeimages", "-o", "json"])["items"].as_array().cloned().unwrap_or_default()
}

fn names(items: &[Value]) -> Vec<String> {
    let mut names: Vec<String> =
        items.iter().filter_map(|i| i["metadata"]["name"].as_str().map(str::to_owned)).collect();
    names.sort();
    names
}

#[test]
fn node_images_follow_nodes() {
    let started = std::time::Instant::now();
    let cluster = cluster(3);
    let k = &cluster.kubectl;
    let _manager = start(&cluster);
    let items = wait_for("a NodeImage per node", MINUTE, || {
        let items = node_images(k);
        (items.len() == 3).then_some(items)
    });
    assert_eq!(names(&items), ["sim-node-0", "sim-node-1", "sim-node-2"]);
    // A NodeImage is created without labels (as upstream's); the next reconcile copies the
    // node's.
    for name in names(&items) {
        let node = k.json(&["get", "node", &name, "-o", "json"]);
        let labels = wait_for("the node's labels on its NodeImage", MINUTE, || {
            let ni = k.json(&["get", "nodeimage", &name, "-o", "json"]);
            (!ni["metadata"]["labels"].is_null()).then(|| ni["metadata"]["labels"].clone())
        });
        assert_eq!(labels, node["metadata"]["labels"], "labels of {name}");
    }

    // A label added to a node reaches its NodeImage.
    k.ok(&["label", "node", "sim-node-1", "pool=images"]);
    wait_for("the label on the NodeImage", MINUTE, || {
        let ni = k.json(&["get", "nodeimage", "sim-node-1", "-o", "json"]);
        (ni["metadata"]["labels"]["pool"] == "images").then_some(())
    });

    k.ok(&["delete", "node", "sim-node-2"]);
    wait_for("the NodeImage of the deleted node to go", MINUTE, || {
        let items = node_images(k);
        (names(&items) == ["sim-node-0", "sim-node-1"]).then_some(())
    });
    eprintln!("node_images_follow_nodes took {:?}", started.elapsed());
}

/// The NodeImages carrying `image:tag`, with the version of the entry and whether the node
/// reported that version Succeeded.
fn carriers(k: &Kubectl, image: &str, tag: &str) -> Vec<(String, i64, bool)> {
    let mut out = Vec::new();
    for ni in node_images(k) {
        let name = ni["metadata"]["name"].as_str().unwrap_or_default().to_owned();
        let tags = ni["spec"]["images"][image]["tags"].as_array().cloned().unwrap_or_default();
        let Some(entry) = tags.iter().find(|t| t["tag"] == tag) else { continue };
        let version = entry["version"].as_i64().unwrap_or(0);
        let statuses =
            ni["status"]["imageStatuses"][image]["tags"].as_array().cloned().unwrap_or_default();
        let done = statuses.iter().any(|s| {
            s["tag"] == tag && s["version"].as_i64() == Some(version) && s["phase"] == "Succeeded"
        });
        out.push((name, version, done));
    }
    out
}

#[test]
fn image_pull_job_pulls_on_one_node_at_a_time() {
    let started = std::time::Instant::now();
    let cluster = cluster(3);
    let k = &cluster.kubectl;
    let _manager = start(&cluster);
    wait_for("a NodeImage per node", MINUTE, || (node_images(k).len() == 3).then_some(()));

    // An image that does not parse is refused, naming the field.
    let bad = json!({
        "apiVersion": "apps.kruise.io/v1beta1",
        "kind": "ImagePullJob",
        "metadata": {"name": "bad", "namespace": "default"},
        "spec": {"image": "registry.example/App:v1"},
    });
    let out = k.run_with(&["create", "-f", "-"], Some(&bad.to_string()));
    assert!(!out.ok, "a bad image is refused");
    assert!(out.stderr.contains("spec.image"), "names the field: {}", out.stderr);

    let job = json!({
        "apiVersion": "apps.kruise.io/v1beta1",
        "kind": "ImagePullJob",
        "metadata": {"name": "warm", "namespace": "default"},
        "spec": {
            "image": "registry.example/app:v1",
            "parallelism": 1,
            "completionPolicy": {"type": "Always"},
        },
    });
    k.ok_stdin(&["create", "-f", "-"], &job.to_string());
    let created = k.json(&["get", "imagepulljob", "warm", "-n", "default", "-o", "json"]);
    assert_eq!(created["spec"]["pullPolicy"]["timeoutSeconds"], 600, "defaulted by the webhook");
    assert_eq!(created["spec"]["imagePullPolicy"], "IfNotPresent");

    let image = "registry.example/app";
    let mut pulled = Vec::new();
    for round in 0..3 {
        let (node, version) = wait_for("the next node to get the tag", MINUTE, || {
            let carriers = carriers(k, image, "v1");
            let pulling: Vec<_> = carriers.iter().filter(|(_, _, done)| !done).cloned().collect();
            assert!(pulling.len() <= 1, "parallelism 1, round {round}: {carriers:?}");
            pulling.first().map(|(n, v, _)| (n.clone(), *v))
        });
        assert!(!pulled.contains(&node), "{node} pulled twice");
        // Stay a moment: no second node is handed the tag while this one pulls.
        std::thread::sleep(Duration::from_secs(2));
        let pulling = carriers(k, image, "v1").into_iter().filter(|(_, _, d)| !d).count();
        assert_eq!(pulling, 1, "one node pulls at a time");
        let now = jiff::Timestamp::now().round(jiff::Unit::Second).expect("round").to_string();
        let status = json!({"status": {
            "desired": 1, "succeeded": 1,
            "imageStatuses": {image: {"tags": [{
                "tag": "v1", "phase": "Succeeded", "version": version,
                "startTime": now, "completionTime": now, "progress": 100,
            }]}},
        }});
        k.ok(&[
            "patch",
            "nodeimage",
            &node,
            "--subresource=status",
            "--type=merge",
            "-p",
            &status.to_string(),
        ]);
        pulled.push(node);
    }
    let status = wait_for("the job to complete", MINUTE, || {
        let job = k.json(&["get", "imagepulljob", "warm", "-n", "default", "-o", "json"]);
        job["status"]["completionTime"].is_string().then(|| job["status"].clone())
    });
    assert_eq!(status["succeeded"], 3, "{status}");
    assert_eq!(status["desired"], 3, "{status}");
    assert_eq!(status["message"], "job has completed");
    pulled.sort();
    assert_eq!(pulled, ["sim-node-0", "sim-node-1", "sim-node-2"]);

    // Deleting the job releases its entries on every NodeImage.
    k.ok(&["delete", "imagepulljob", "warm", "-n", "default", "--wait=true", "--timeout=60s"]);
    wait_for("the job's entries released", MINUTE, || {
        carriers(k, image, "v1").is_empty().then_some(())
    });
    eprintln!("image_pull_job_pulls_on_one_node_at_a_time took {:?}", started.elapsed());
}

/// A podSelector job is woken by the pods it selects: one scheduled after the job was created
/// gets the tag on its node at once, not at the 60 s resync.
#[test]
fn pod_selector_job_follows_pods_as_they_are_scheduled() {
    let started = std::time::Instant::now();
    let cluster = cluster(2);
    let k = &cluster.kubectl;
    let _manager = start(&cluster);
    wait_for("a NodeImage per node", MINUTE, || (node_images(k).len() == 2).then_some(()));
    let job = json!({
        "apiVersion": "apps.kruise.io/v1beta1",
        "kind": "ImagePullJob",
        "metadata": {"name": "follow", "namespace": "default"},
        "spec": {
            "image": "registry.example/web:v2",
            "podSelector": {"matchLabels": {"app": "web"}},
            "parallelism": 2,
            "completionPolicy": {"type": "Never"},
        },
    });
    k.ok_stdin(&["create", "-f", "-"], &job.to_string());
    wait_for("the job's first status", MINUTE, || {
        let job = k.json(&["get", "imagepulljob", "follow", "-n", "default", "-o", "json"]);
        (job["status"]["desired"] == 0 && job["status"]["startTime"].is_string()).then_some(())
    });
    // Let the first reconciles pass, so that only the pod's events can wake the job now.
    std::thread::sleep(Duration::from_secs(2));

    let pod = |name: &str, app: &str, node: &str| {
        json!({
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": name, "namespace": "default", "labels": {"app": app}},
            "spec": {"nodeName": node, "containers": [{"name": "c", "image": "busybox:1"}]},
        })
        .to_string()
    };
    let image = "registry.example/web";
    let created = std::time::Instant::now();
    k.ok_stdin(&["create", "-f", "-"], &pod("web-1", "web", "sim-node-1"));
    k.ok_stdin(&["create", "-f", "-"], &pod("db-0", "db", "sim-node-0"));
    let nodes = wait_for("sim-node-1 to get the tag", MINUTE, || {
        let nodes: Vec<String> = carriers(k, image, "v2").into_iter().map(|c| c.0).collect();
        (!nodes.is_empty()).then_some(nodes)
    });
    let woken_after = created.elapsed();
    assert_eq!(nodes, ["sim-node-1"], "only the selected pod's node");
    assert!(
        woken_after < Duration::from_secs(30),
        "woken by the pod, not the resync: {woken_after:?}"
    );

    // Relabelling the other pod into the selector brings its node in too.
    k.ok(&["label", "pod", "db-0", "-n", "default", "app=web", "--overwrite"]);
    let relabelled = std::time::Instant::now();
    wait_for("sim-node-0 to get the tag", MINUTE, || {
        (carriers(k, image, "v2").len() == 2).then_some(())
    });
    let woken_after_label = relabelled.elapsed();
    assert!(woken_after_label < Duration::from_secs(30), "{woken_after_label:?}");
    let status = wait_for("desired 2", MINUTE, || {
        let job = k.json(&["get", "imagepulljob", "follow", "-n", "default", "-o", "json"]);
        (job["status"]["desired"] == 2).then(|| job["status"].clone())
    });
    assert_eq!(status["active"], 2, "{status}");
    eprintln!(
        "pod_selector_job_follows_pods_as_they_are_scheduled: tag on the node {woken_after:?} \
         after the pod's creation, {woken_after_label:?} after the relabel; took {:?}",
        started.elapsed()
    );
}

#[test]
fn image_list_pull_job_creates_a_job_per_image() {
    let started = std::time::Instant::now();
    let cluster = cluster(2);
    let k = &cluster.kubectl;
    let _manager = start(&cluster);
    let list = json!({
        "apiVersion": "apps.kruise.io/v1beta1",
        "kind": "ImageListPullJob",
        "metadata": {"name": "list", "namespace": "default"},
        "spec": {
            "images": ["registry.example/a:v1", "registry.example/b:v1"],
            "parallelism": 2,
            "completionPolicy": {"type": "Always"},
        },
    });
    k.ok_stdin(&["create", "-f", "-"], &list.to_string());
    let jobs = wait_for("a child ImagePullJob per image", MINUTE, || {
        let items = k.json(&["get", "imagepulljobs", "-n", "default", "-o", "json"])["items"]
            .as_array()
            .cloned()
            .unwrap_or_default();
        (items.len() == 2).then_some(items)
    });
    let mut images: Vec<&str> = jobs.iter().filter_map(|j| j["spec"]["image"].as_str()).collect();
    images.sort();
    assert_eq!(images, ["registry.example/a:v1", "registry.example/b:v1"]);
    for job in &jobs {
        assert_eq!(job["metadata"]["ownerReferences"][0]["kind"], "ImageListPullJob");
    }
    // Stays at one child per image.
    std::thread::sleep(Duration::from_secs(3));
    let count = k.json(&["get", "imagepulljobs", "-n", "default", "-o", "json"])["items"]
        .as_array()
        .map_or(0, Vec::len);
    assert_eq!(count, 2);
    let status = wait_for("the list job's status", MINUTE, || {
        let list = k.json(&["get", "imagelistpulljob", "list", "-n", "default", "-o", "json"]);
        (list["status"]["desired"] == 2).then(|| list["status"].clone())
    });
    assert!(status["startTime"].is_string(), "{status}");
    eprintln!("image_list_pull_job_creates_a_job_per_image took {:?}", started.elapsed());
}

fn crr(name: &str, container: &str, extra: Value) -> String {
    let mut spec = json!({"podName": "victim", "containers": [{"name": container}]});
    if let (Some(spec), Some(extra)) = (spec.as_object_mut(), extra.as_object()) {
        spec.extend(extra.clone());
    }
    json!({
        "apiVersion": "apps.kruise.io/v1beta1",
        "kind": "ContainerRecreateRequest",
        "metadata": {"name": name, "namespace": "default"},
        "spec": spec,
    })
    .to_string()
}

fn get_crr(k: &Kubectl, name: &str) -> Value {
    k.json(&["get", "containerrecreaterequest", name, "-n", "default", "-o", "json"])
}

#[test]
fn container_recreate_requests_one_at_a_time() {
    let started = std::time::Instant::now();
    let cluster = cluster(1);
    let k = &cluster.kubectl;
    let _manager = start(&cluster);
    let pod = json!({
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "victim", "namespace": "default"},
        "spec": {"containers": [{"name": "main", "image": "registry.example/main:v1"}]},
    });
    k.ok_stdin(&["create", "-f", "-"], &pod.to_string());
    let pod = wait_for("the pod running", MINUTE, || {
        let pod = k.json(&["get", "pod", "victim", "-n", "default", "-o", "json"]);
        let id = pod["status"]["containerStatuses"][0]["containerID"].as_str().unwrap_or_default();
        (!id.is_empty()).then_some(pod)
    });

    // A container the pod does not have is refused, naming the field.
    let out = k.run_with(&["create", "-f", "-"], Some(&crr("missing", "nope", json!({}))));
    assert!(!out.ok, "refused");
    assert!(out.stderr.contains("spec.containers[0].name"), "names the field: {}", out.stderr);

    k.ok_stdin(
        &["create", "-f", "-"],
        &crr("first", "main", json!({"ttlSecondsAfterFinished": 3})),
    );
    let first = get_crr(k, "first");
    let labels = &first["metadata"]["labels"];
    assert_eq!(labels["crr.apps.kruise.io/node-name"], pod["spec"]["nodeName"]);
    assert_eq!(labels["crr.apps.kruise.io/pod-uid"], pod["metadata"]["uid"]);
    assert_eq!(labels["crr.apps.kruise.io/active"], "true");
    let context = &first["spec"]["containers"][0]["statusContext"];
    assert_eq!(context["containerID"], pod["status"]["containerStatuses"][0]["containerID"]);
    assert_eq!(first["spec"]["strategy"]["failurePolicy"], "Fail");

    // The spec is immutable.
    let out = k.run_with(
        &[
            "patch",
            "containerrecreaterequest",
            "first",
            "-n",
            "default",
            "--type=merge",
            "-p",
            r#"{"spec":{"activeDeadlineSeconds":100}}"#,
        ],
        None,
    );
    assert!(!out.ok && out.stderr.contains("immutable"), "{}", out.stderr);

    k.ok_stdin(&["create", "-f", "-"], &crr("second", "main", json!({})));
    wait_for("the second request to wait", MINUTE, || {
        let second = get_crr(k, "second");
        let message = second["status"]["message"].as_str().unwrap_or_default();
        (second["status"]["phase"] == "Pending"
            && message.contains("waiting for ContainerRecreateRequest first"))
        .then_some(())
    });
    std::thread::sleep(Duration::from_secs(2));
    let second = get_crr(k, "second");
    assert_eq!(second["status"]["phase"], "Pending", "still waiting: {second}");

    // What the daemon would write once the first one has recreated its container.
    let now = jiff::Timestamp::now().round(jiff::Unit::Second).expect("round").to_string();
    let done = json!({"status": {
        "phase": "Completed", "completionTime": now,
        "containerRecreateStates": [{"name": "main", "phase": "Succeeded"}],
    }});
    k.ok(&[
        "patch",
        "containerrecreaterequest",
        "first",
        "-n",
        "default",
        "--subresource=status",
        "--type=merge",
        "-p",
        &done.to_string(),
    ]);
    wait_for("the second request to be next", MINUTE, || {
        let second = get_crr(k, "second");
        let message = second["status"]["message"].as_str().unwrap_or_default();
        (!message.contains("waiting for")).then_some(())
    });
    wait_for("ttlSecondsAfterFinished to delete the first", MINUTE, || {
        let out = k.run_with(&["get", "containerrecreaterequest", "first", "-n", "default"], None);
        (!out.ok && out.stderr.contains("NotFound")).then_some(())
    });

    // A pod that goes completes its requests.
    k.ok(&["delete", "pod", "victim", "-n", "default", "--grace-period=0", "--force"]);
    let second = wait_for("the second request to complete", MINUTE, || {
        let second = get_crr(k, "second");
        let labels = &second["metadata"]["labels"];
        (second["status"]["phase"] == "Completed"
            && labels.get("crr.apps.kruise.io/active").is_none())
        .then_some(second)
    });
    assert_eq!(second["status"]["message"], "pod has gone");
    eprintln!("container_recreate_requests_one_at_a_time took {:?}", started.elapsed());
}
