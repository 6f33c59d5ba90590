//! CloneSet features beyond the manual's walk-through (`playground.rs`), on the playground
//! with kubectl.

use std::time::Duration;

use crate::common::{Playground, wait_for};

const CLONESET: &str = r#"
apiVersion: apps.kruise.io/v1beta1
kind: CloneSet
metadata:
  name: web
spec:
  replicas: 4
  selector:
    matchLabels: {app: web}
  template:
    metadata:
      labels: {app: web}
    spec:
      containers:
      - name: main
        image: registry.example/web:v1
  updateStrategy:
    type: RollingUpdate
    rollingUpdate:
      podUpdatePolicy: InPlaceIfPossible
      maxUnavailable: 1
      partition: 2
"#;

/// With `PreDownloadImageForInPlaceUpdate` on, a partitioned in-place update gets an
/// ImagePullJob for its new image (owned by the CloneSet, named after the revision and
/// container, aimed at the pods of other revisions) and the revision is marked; once every
/// pod is updated the job goes.
#[test]
fn a_partitioned_in_place_update_pre_downloads_its_image() {
    let pg = Playground::start(2, &["--feature-gates", "PreDownloadImageForInPlaceUpdate=true"]);
    let k = &pg.kubectl;
    k.ok_stdin(&["apply", "-f", "-"], CLONESET);
    let status = || {
        k.json(&["get", "clonesets.v1beta1.apps.kruise.io", "web", "-o", "json"])["status"].clone()
    };
    wait_for("4 ready pods", Duration::from_secs(60), || {
        let st = status();
        (st["readyReplicas"] == 4 && st["updatedReplicas"] == 4).then_some(())
    });
    let jobs = || k.json(&["get", "imagepulljobs.apps.kruise.io", "-o", "json"])["items"].clone();
    assert_eq!(jobs(), serde_json::json!([]), "no job for the first revision");

    let patch = r#"{"spec": {"template": {"spec": {"containers": [{"name": "main", "image": "registry.example/web:v2"}]}}}}"#;
    k.ok(&["patch", "clonesets.v1beta1.apps.kruise.io", "web", "--type=merge", "-p", patch]);
    let job = wait_for("an ImagePullJob for v2", Duration::from_secs(60), || {
        jobs().as_array()?.iter().find(|j| j["spec"]["image"] == "registry.example/web:v2").cloned()
    });
    let name = job["metadata"]["name"].as_str().unwrap_or_default().to_owned();
    let revision = name.strip_suffix("-main").expect("named <revision>-<container>").to_owned();
    let owner = &job["metadata"]["ownerReferences"][0];
    assert_eq!((&owner["kind"], &owner["name"]), (&"CloneSet".into(), &"web".into()));
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
    k.ok(&["patch", "clonesets.v1beta1.apps.kruise.io", "web", "--type=merge", "-p", patch]);
    wait_for("the job deleted after the rollout", Duration::from_secs(120), || {
        let gone = !jobs().as_array()?.iter().any(|j| j["metadata"]["name"] == name.as_str());
        gone.then_some(())
    });
    wait_for("every pod updated and ready", Duration::from_secs(60), || {
        let st = status();
        (st["updatedReplicas"] == 4 && st["readyReplicas"] == 4).then_some(())
    });
}

/// An in-place update that changes only a label an env var is taken from completes:
/// kruise-daemon reports each container's env-from-metadata hash, sees the running container
/// hold the old value, and restarts it, so the kubelet starts it with the new one.
#[test]
fn an_update_of_only_an_env_from_a_label_completes_in_place() {
    let pg = Playground::start(1, &[]);
    let k = &pg.kubectl;
    let cloneset = r#"
apiVersion: apps.kruise.io/v1beta1
kind: CloneSet
metadata:
  name: envy
spec:
  replicas: 2
  selector:
    matchLabels: {app: envy}
  template:
    metadata:
      labels: {app: envy, version: v1}
    spec:
      containers:
      - name: main
        image: registry.example/web:v1
        env:
        - name: APP_VERSION
          valueFrom: {fieldRef: {fieldPath: "metadata.labels['version']"}}
  updateStrategy:
    type: RollingUpdate
    rollingUpdate: {podUpdatePolicy: InPlaceIfPossible, maxUnavailable: 2}
"#;
    k.ok_stdin(&["apply", "-f", "-"], cloneset);
    let status = || {
        k.json(&["get", "clonesets.v1beta1.apps.kruise.io", "envy", "-o", "json"])["status"].clone()
    };
    wait_for("2 ready pods", Duration::from_secs(60), || {
        let st = status();
        (st["readyReplicas"] == 2 && st["updatedReadyReplicas"] == 2).then_some(())
    });
    let pods = || {
        k.json(&["get", "pods", "-l", "app=envy", "-o", "json"])["items"]
            .as_array()
            .cloned()
            .unwrap_or_default()
    };
    let uids: Vec<serde_json::Value> =
        pods().iter().map(|p| p["metadata"]["uid"].clone()).collect();

    let patch = r#"{"spec": {"template": {"metadata": {"labels": {"version": "v2"}}}}}"#;
    k.ok(&["patch", "clonesets.v1beta1.apps.kruise.io", "envy", "--type=merge", "-p", patch]);
    let updated = wait_for("both pods updated in place and ready", Duration::from_secs(90), || {
        let st = status();
        let done = st["updatedReplicas"] == 2
            && st["updatedReadyReplicas"] == 2
            && st["observedGeneration"] == 2;
        done.then(pods)
    });
    for pod in &updated {
        assert!(uids.contains(&pod["metadata"]["uid"]), "updated in place, not recreated: {pod}");
        assert_eq!(pod["metadata"]["labels"]["version"], "v2");
        let status = &pod["status"]["containerStatuses"][0];
        assert_eq!(status["restartCount"], 1, "restarted once for the new value: {status}");
        let meta: serde_json::Value = serde_json::from_str(
            pod["metadata"]["annotations"]["apps.kruise.io/runtime-containers-meta"]
                .as_str()
                .expect("the daemon's report"),
        )
        .expect("json");
        let hash = &meta["containers"][0]["hashes"]["extractedEnvFromMetadataHash"];
        assert!(hash.as_u64().is_some_and(|h| h > 0), "an env hash: {meta}");
        let ready = pod["status"]["conditions"]
            .as_array()
            .and_then(|c| c.iter().find(|c| c["type"] == "InPlaceUpdateReady").cloned())
            .expect("InPlaceUpdateReady");
        assert_eq!(ready["status"], "True");
    }
}
