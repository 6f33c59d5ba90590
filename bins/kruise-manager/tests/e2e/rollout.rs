//! Kruise Rollout on the playground, with kubectl: a CloneSet released in steps (20%, 60%,
//! 100%) through a Rollout, approved step by step, then a release rolled back mid-way.

use std::time::Duration;

use serde_json::Value;

use crate::common::{Kubectl, Playground, cloneset_yaml, wait_for};

const ROLLOUT: &str = r#"
apiVersion: rollouts.kruise.io/v1beta1
kind: Rollout
metadata:
  name: rollouts-demo
spec:
  workloadRef:
    apiVersion: apps.kruise.io/v1beta1
    kind: CloneSet
    name: demo
  strategy:
    canary:
      steps:
      - replicas: 20%
      - replicas: 60%
      - replicas: 100%
"#;

fn rollout(k: &Kubectl) -> Value {
    k.json(&["get", "rollouts.rollouts.kruise.io", "rollouts-demo"])
}

fn clone_set(k: &Kubectl) -> Value {
    k.json(&["get", "clonesets.apps.kruise.io", "demo"])
}

/// Sets the image of the container `main` of `resource` `name`; returns the object as
/// admitted (the webhooks' answer).
fn set_image_of(k: &Kubectl, resource: &str, name: &str, image: &str) -> Value {
    let patch = serde_json::json!({"spec": {"template": {"spec": {"containers": [
        {"name": "main", "image": image}
    ]}}}});
    let admitted =
        k.ok(&["patch", resource, name, "--type=merge", "-p", &patch.to_string(), "-o", "json"]);
    serde_json::from_str(&admitted).expect("kubectl printed JSON")
}

/// Sets the CloneSet `demo`'s image.
fn set_image(k: &Kubectl, image: &str) -> Value {
    set_image_of(k, "clonesets.apps.kruise.io", "demo", image)
}

/// Waits until the Rollout's status is at `step` in `state`, and returns it.
fn wait_for_step(k: &Kubectl, step: i64, state: &str) -> Value {
    wait_for(&format!("step {step} {state}"), Duration::from_secs(60), || {
        let status = rollout(k)["status"].clone();
        (status["currentStepIndex"] == step && status["currentStepState"] == state)
            .then_some(status)
    })
}

fn updated(k: &Kubectl) -> i64 {
    clone_set(k)["status"]["updatedReplicas"].as_i64().unwrap_or(-1)
}

fn wait_for_updated_ready(k: &Kubectl, n: i64) {
    wait_for(&format!("{n} pods updated and ready"), Duration::from_secs(60), || {
        let status = clone_set(k)["status"].clone();
        (status["updatedReplicas"] == n && status["updatedReadyReplicas"] == n).then_some(())
    });
}

/// `kubectl kruise rollout approve rollout/NAME`, as the plugin sends it.
fn approve_rollout(k: &Kubectl, name: &str) {
    k.ok(&[
        "patch",
        "rollouts.v1beta1.rollouts.kruise.io",
        name,
        "--subresource=status",
        "--type=merge",
        "-p",
        r#"{"status":{"canaryStatus":{"currentStepState":"StepReady"}}}"#,
    ]);
}

/// Approves `rollouts-demo`.
fn approve(k: &Kubectl) {
    approve_rollout(k, "rollouts-demo");
}

fn condition(status: &Value, type_: &str) -> (String, String) {
    let found = status["conditions"]
        .as_array()
        .and_then(|c| c.iter().find(|c| c["type"] == type_).cloned())
        .unwrap_or(Value::Null);
    (
        found["status"].as_str().unwrap_or_default().to_owned(),
        found["reason"].as_str().unwrap_or_default().to_owned(),
    )
}

#[test]
fn a_cloneset_is_released_in_approved_steps_and_rolled_back() {
    let pg = Playground::start(1, &[]);
    let k = &pg.kubectl;
    k.ok_stdin(&["apply", "-f", "-"], &cloneset_yaml("demo", 5, ""));
    wait_for_updated_ready(k, 5);

    // The webhook refuses what this version does not carry out, naming the field, and
    // upstream's step rules.
    let refused = k.run_with(
        &["apply", "-f", "-"],
        Some(&ROLLOUT.replace("      - replicas: 60%\n", "      - replicas: 10%\n")),
    );
    assert!(!refused.ok);
    assert!(
        refused.stderr.contains(
            "Spec.Strategy.Canary.Steps.CanaryReplicas: Invalid value: [{\"replicas\":\"20%\""
        ) && refused.stderr.contains("Steps.CanaryReplicas must be a non decreasing sequence"),
        "{}",
        refused.stderr
    );
    let custom = ROLLOUT.replace(
        "      steps:\n",
        "      trafficRoutings:\n      - service: demo\n        customNetworkRefs: [{apiVersion: networking.istio.io/v1, kind: VirtualService, name: demo}]\n      steps:\n",
    );
    let refused = k.run_with(&["apply", "-f", "-"], Some(&custom));
    assert!(
        refused.stderr.contains("Spec.Strategy.Canary.TrafficRouting.CustomNetworkRefs: Forbidden: a custom network provider is not supported by this version of kruise-rs yet"),
        "{}",
        refused.stderr
    );

    // A step over 100% and a kind no Rollout releases are refused, naming the field.
    let refused = k.run_with(
        &["apply", "-f", "-"],
        Some(&ROLLOUT.replace("      - replicas: 100%\n", "      - replicas: 120%\n")),
    );
    assert!(
        refused.stderr.contains(r#"Spec.Strategy.Canary.Steps[2].Replicas: Invalid value: "120%": replicas must be positive number, or a percentage with "0%" < canaryReplicas <= "100%""#),
        "{}",
        refused.stderr
    );
    let refused = k.run_with(
        &["apply", "-f", "-"],
        Some(&ROLLOUT.replace(
            "    apiVersion: apps.kruise.io/v1beta1\n    kind: CloneSet\n",
            "    apiVersion: apps/v1\n    kind: ReplicaSet\n",
        )),
    );
    assert!(
        refused.stderr.contains("Spec.ObjectRef.WorkloadRef: Invalid value: ")
            && refused.stderr.contains("WorkloadRef kind is not supported"),
        "{}",
        refused.stderr
    );
    k.ok_stdin(&["apply", "-f", "-"], ROLLOUT);
    // A second Rollout of the same workload is refused.
    let refused = k.run_with(
        &["apply", "-f", "-"],
        Some(&ROLLOUT.replace("  name: rollouts-demo\n", "  name: twin\n")),
    );
    assert!(
        refused.stderr.contains(r#"Conflict Checker: Invalid value: "twin": This rollout conflict with Rollout(default/rollouts-demo), one workload only have less than one Rollout"#),
        "{}",
        refused.stderr
    );
    // Healthy, with the first deployment recorded as a completed release.
    let status = wait_for("the Rollout healthy", Duration::from_secs(30), || {
        let r = rollout(k);
        (r["status"]["phase"] == "Healthy" && r["status"]["currentStepState"] == "Completed")
            .then_some(r)
    });
    assert_eq!(status["metadata"]["finalizers"], serde_json::json!(["rollouts.kruise.io/rollout"]));
    assert!(status["metadata"]["annotations"]["rollouts.kruise.io/hash"].is_string());
    assert_eq!(status["status"]["message"], "workload deployment is completed");
    wait_for("the CloneSet labelled for the webhook", Duration::from_secs(30), || {
        (clone_set(k)["metadata"]["labels"]["rollouts.kruise.io/workload-type"] == "cloneset")
            .then_some(())
    });

    // A new image is held by the webhook at once: partition 100%, in progress.
    let held = set_image(k, "registry.example/demo:v2");
    assert_eq!(held["spec"]["updateStrategy"]["rollingUpdate"]["partition"], "100%");
    assert_eq!(
        held["metadata"]["annotations"]["rollouts.kruise.io/in-progressing"],
        r#"{"rolloutName":"rollouts-demo"}"#
    );

    // Step 1: one pod of five, labelled with the release and batch ids; then the pause.
    let status = wait_for_step(k, 1, "StepPaused");
    assert_eq!(
        status["message"],
        "Rollout is in step(1/3), and you need manually confirm to enter the next step"
    );
    assert_eq!(status["phase"], "Progressing");
    assert_eq!(condition(&status, "Progressing"), ("True".into(), "InRolling".into()));
    wait_for_updated_ready(k, 1);
    let release = k.json(&["get", "batchreleases.rollouts.kruise.io", "rollouts-demo"]);
    assert_eq!(release["spec"]["releasePlan"]["batchPartition"], 0);
    assert_eq!(release["status"]["canaryStatus"]["batchState"], "Ready");
    let owner = &release["metadata"]["ownerReferences"][0];
    assert_eq!(
        (owner["kind"].as_str(), owner["controller"].as_bool()),
        (Some("Rollout"), Some(true))
    );
    assert_eq!(clone_set(k)["spec"]["updateStrategy"]["rollingUpdate"]["partition"], "80%");
    let labelled =
        k.ok(&["get", "pods", "-l", "rollouts.kruise.io/rollout-batch-id=1", "-o", "name"]);
    assert_eq!(labelled.lines().count(), 1, "{labelled}");
    // The printer columns.
    let table = k.ok(&["get", "rollouts.rollouts.kruise.io"]);
    assert!(table.contains("CANARY_STEP") && table.contains("StepPaused"), "{table}");
    let table = k.ok(&["get", "batchreleases.rollouts.kruise.io"]);
    assert!(table.contains("BATCH-STATE") && table.contains("Ready"), "{table}");
    std::thread::sleep(Duration::from_secs(2));
    assert_eq!(updated(k), 1, "nothing moves before approval");

    // Step 2: 60% of five is three.
    approve(k);
    wait_for_step(k, 2, "StepPaused");
    wait_for_updated_ready(k, 3);
    let labelled =
        k.ok(&["get", "pods", "-l", "rollouts.kruise.io/rollout-batch-id=2", "-o", "name"]);
    assert_eq!(labelled.lines().count(), 2, "{labelled}");

    // Step 3 is 100%: no pause; the release winds up and the workload is let go.
    approve(k);
    let done = wait_for("the release complete", Duration::from_secs(60), || {
        let r = rollout(k);
        (r["status"]["phase"] == "Healthy" && condition(&r["status"], "Succeeded").0 == "True")
            .then_some(r)
    });
    assert_eq!(done["status"]["message"], "Rollout progressing has been completed");
    assert_eq!(condition(&done["status"], "Progressing"), ("False".into(), "Completed".into()));
    wait_for_updated_ready(k, 5);
    wait_for("the BatchRelease deleted", Duration::from_secs(30), || {
        let out = k.run_with(&["get", "batchreleases.rollouts.kruise.io", "rollouts-demo"], None);
        (!out.ok).then_some(())
    });
    let free = clone_set(k);
    assert!(free["metadata"]["annotations"]["rollouts.kruise.io/in-progressing"].is_null());
    assert!(
        free["metadata"]["annotations"]["batchrelease.rollouts.kruise.io/control-info"].is_null()
    );
    let events = k.ok(&["get", "events", "--field-selector", "involvedObject.kind=Rollout"]);
    assert!(events.contains("Completed"), "{events}");

    // A release rolled back at its first step: cancelled, and every pod back on v2.
    set_image(k, "registry.example/demo:v3");
    wait_for_step(k, 1, "StepPaused");
    wait_for_updated_ready(k, 1);
    set_image(k, "registry.example/demo:v2");
    let cancelled = wait_for("the release cancelled", Duration::from_secs(60), || {
        let r = rollout(k);
        (r["status"]["phase"] == "Healthy" && condition(&r["status"], "Succeeded").0 == "False")
            .then_some(r)
    });
    assert_eq!(cancelled["status"]["message"], "Rollout progressing has been cancelled");
    wait_for_updated_ready(k, 5);
    let images = k.ok(&[
        "get",
        "pods",
        "-l",
        "app=demo",
        "-o",
        "jsonpath={.items[*].spec.containers[0].image}",
    ]);
    assert!(images.split_whitespace().all(|i| i == "registry.example/demo:v2"), "{images}");

    // Deleting the Rollout lets the finalizer go; the CloneSet stays.
    k.ok(&[
        "delete",
        "rollouts.rollouts.kruise.io",
        "rollouts-demo",
        "--wait=true",
        "--timeout=60s",
    ]);
    assert!(k.run_with(&["get", "clonesets.apps.kruise.io", "demo"], None).ok);
}

const STS_ROLLOUT_V1ALPHA1: &str = r#"
apiVersion: rollouts.kruise.io/v1alpha1
kind: Rollout
metadata:
  name: web-rollout
spec:
  objectRef:
    workloadRef:
      apiVersion: apps.kruise.io/v1beta1
      kind: StatefulSet
      name: web
  strategy:
    canary:
      steps:
      - replicas: 1
      - replicas: 100%
"#;

fn asts_yaml(image: &str) -> String {
    format!(
        r#"
apiVersion: apps.kruise.io/v1beta1
kind: StatefulSet
metadata:
  name: web
spec:
  replicas: 4
  podManagementPolicy: Parallel
  selector:
    matchLabels:
      app: web
  template:
    metadata:
      labels:
        app: web
    spec:
      containers:
      - name: main
        image: {image}
"#
    )
}

fn asts_status(k: &Kubectl) -> Value {
    k.json(&["get", "statefulsets.apps.kruise.io", "web"])["status"].clone()
}

/// An Advanced StatefulSet released through a v1alpha1 Rollout (converted by the manager's
/// conversion webhook), with the manager killed while the first step waits for approval and
/// API faults on the writes of both controllers after its restart.
#[test]
fn an_advanced_statefulset_release_survives_a_manager_restart_and_faults() {
    use kruise_sim::faults::{Fault, FaultAction};
    let cluster = crate::pub_budget::cluster_with_nodes(1);
    let k = &cluster.kubectl;
    let (mut manager, _) = crate::pub_budget::start_manager(&cluster, &[]);
    k.ok_stdin(&["apply", "-f", "-"], &asts_yaml("registry.example/web:v1"));
    wait_for("4 pods ready", Duration::from_secs(60), || {
        (asts_status(k)["readyReplicas"] == 4).then_some(())
    });
    k.ok_stdin(&["apply", "-f", "-"], STS_ROLLOUT_V1ALPHA1);
    wait_for("the Rollout healthy", Duration::from_secs(30), || {
        let r = k.json(&["get", "rollouts.v1beta1.rollouts.kruise.io", "web-rollout"]);
        (r["status"]["phase"] == "Healthy").then_some(())
    });
    // Stored as v1beta1, readable as v1alpha1.
    let alpha = k.json(&["get", "rollouts.v1alpha1.rollouts.kruise.io", "web-rollout"]);
    assert_eq!(alpha["spec"]["objectRef"]["workloadRef"]["name"], "web");

    let admitted = set_image_of(k, "statefulsets.apps.kruise.io", "web", "registry.example/web:v2");
    assert_eq!(admitted["spec"]["updateStrategy"]["rollingUpdate"]["partition"], 32767);
    let step = |k: &Kubectl| {
        let r = k.json(&["get", "rollouts.v1beta1.rollouts.kruise.io", "web-rollout"]);
        (
            r["status"]["currentStepIndex"].as_i64(),
            r["status"]["currentStepState"].as_str().map(str::to_owned),
        )
    };
    wait_for("step 1 paused", Duration::from_secs(60), || {
        (step(k) == (Some(1), Some("StepPaused".into()))).then_some(())
    });
    wait_for("one pod updated and ready", Duration::from_secs(60), || {
        let s = asts_status(k);
        (s["updatedReplicas"] == 1 && s["updatedReadyReplicas"] == 1).then_some(())
    });
    let sts = k.json(&["get", "statefulsets.apps.kruise.io", "web"]);
    assert_eq!(sts["spec"]["updateStrategy"]["rollingUpdate"]["partition"], 3);
    let image = k.ok(&["get", "pod", "web-3", "-o", "jsonpath={.spec.containers[0].image}"]);
    assert_eq!(image, "registry.example/web:v2", "the highest ordinal goes first");

    // The manager dies; the step is approved while it is down; faults wait for the next one.
    manager.kill();
    approve_rollout(k, "web-rollout");
    let faults = cluster.server.faults();
    let fired = [
        faults.inject(
            Fault::new(FaultAction::Conflict).verb("patch").resource("rollouts/status").times(2),
        ),
        faults.inject(
            Fault::new(FaultAction::InternalError)
                .verb("patch")
                .resource("batchreleases/status")
                .times(2),
        ),
        faults.inject(
            Fault::new(FaultAction::InternalError).verb("patch").resource("statefulsets").times(1),
        ),
    ];
    let (_manager, _) = crate::pub_budget::start_manager(&cluster, &[]);
    wait_for("the release complete", Duration::from_secs(90), || {
        let r = k.json(&["get", "rollouts.v1beta1.rollouts.kruise.io", "web-rollout"]);
        let succeeded = r["status"]["conditions"]
            .as_array()
            .into_iter()
            .flatten()
            .any(|c| c["type"] == "Succeeded" && c["status"] == "True");
        (r["status"]["phase"] == "Healthy" && succeeded).then_some(())
    });
    wait_for("every pod on v2", Duration::from_secs(60), || {
        let s = asts_status(k);
        (s["updatedReplicas"] == 4 && s["updatedReadyReplicas"] == 4).then_some(())
    });
    let counts: Vec<usize> = fired.iter().map(|f| f.count()).collect();
    assert!(counts.iter().all(|n| *n > 0), "every fault fired: {counts:?}");
    let sts = k.json(&["get", "statefulsets.apps.kruise.io", "web"]);
    // Cleared (the StatefulSet webhook defaults it to 0).
    let partition = &sts["spec"]["updateStrategy"]["rollingUpdate"]["partition"];
    assert!(partition.is_null() || *partition == 0, "{sts}");
    assert!(sts["metadata"]["annotations"]["rollouts.kruise.io/in-progressing"].is_null());
}

/// The Service `demo` and the HTTPRoute `demo` leading to it, for the Rollouts below.
macro_rules! service_and_route {
    () => {
        r#"
apiVersion: v1
kind: Service
metadata:
  name: demo
spec:
  selector:
    app: demo
  ports:
  - port: 80
    targetPort: 8080
---
apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata:
  name: demo
spec:
  parentRefs:
  - name: gateway
  rules:
  - backendRefs:
    - name: demo
      port: 80
---
"#
    };
}

const ROUTED: &str = concat!(
    service_and_route!(),
    r#"apiVersion: rollouts.kruise.io/v1beta1
kind: Rollout
metadata:
  name: rollouts-demo
spec:
  workloadRef:
    apiVersion: apps.kruise.io/v1beta1
    kind: CloneSet
    name: demo
  strategy:
    canary:
      trafficRoutings:
      - service: demo
        gracePeriodSeconds: 1
        gateway:
          httpRouteName: demo
      steps:
      - replicas: 20%
        traffic: 20%
      - replicas: 50%
        traffic: 50%
      - replicas: 100%
"#
);

/// Installs the Gateway API's HTTPRoute CRD (the standard channel, v1.1.0, as a fixture) and
/// waits until it is served.
fn install_gateway_api(k: &Kubectl) {
    let crd = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/e2e/fixtures/gateway-api-v1.1.0-httproutes.yaml"
    );
    k.ok(&["create", "-f", crd]);
    wait_for("the HTTPRoute CRD served", Duration::from_secs(30), || {
        k.run_with(&["get", "httproutes.gateway.networking.k8s.io"], None).ok.then_some(())
    });
}

fn backends(k: &Kubectl) -> Value {
    k.json(&["get", "httproutes.gateway.networking.k8s.io", "demo"])["spec"]["rules"][0]
        ["backendRefs"]
        .clone()
}

fn pod_uids(k: &Kubectl) -> Vec<String> {
    let pods = k.json(&["get", "pods", "-l", "app=demo"]);
    let mut uids: Vec<String> = pods["items"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|p| p["metadata"]["uid"].as_str().unwrap_or_default().to_owned())
        .collect();
    uids.sort();
    uids
}

/// The Gateway API route carries the step's weight to the canary Service, which selects the
/// new pods; the CloneSet updates in place, so the pods keep their UIDs.
#[test]
fn an_in_place_cloneset_release_shifts_gateway_api_traffic_by_step() {
    let pg = Playground::start(1, &[]);
    let k = &pg.kubectl;
    install_gateway_api(k);
    k.ok_stdin(
        &["apply", "-f", "-"],
        &cloneset_yaml("demo", 5, "rollingUpdate:\n  podUpdatePolicy: InPlaceIfPossible"),
    );
    wait_for_updated_ready(k, 5);
    k.ok_stdin(&["apply", "-f", "-"], ROUTED);
    wait_for("the Rollout healthy", Duration::from_secs(30), || {
        (rollout(k)["status"]["phase"] == "Healthy").then_some(())
    });
    let uids = pod_uids(k);
    assert_eq!(uids.len(), 5);

    set_image(k, "registry.example/demo:v2");
    wait_for_step(k, 1, "StepPaused");
    wait_for_updated_ready(k, 1);
    assert_eq!(
        backends(k),
        serde_json::json!([{"group": "", "kind": "Service", "name": "demo", "port": 80, "weight": 80},
                           {"group": "", "kind": "Service", "name": "demo-canary", "port": 80, "weight": 20}])
    );
    // The canary Service selects exactly the new pod; the stable one, the others.
    let canary = k.json(&["get", "service", "demo-canary"]);
    let hash =
        canary["spec"]["selector"]["pod-template-hash"].as_str().unwrap_or_default().to_owned();
    assert!(!hash.is_empty(), "{canary}");
    let selected =
        k.ok(&["get", "pods", "-l", &format!("app=demo,pod-template-hash={hash}"), "-o", "name"]);
    assert_eq!(selected.lines().count(), 1, "{selected}");
    let stable = k.json(&["get", "service", "demo"]);
    let stable_hash =
        stable["spec"]["selector"]["pod-template-hash"].as_str().unwrap_or_default().to_owned();
    let selected = k.ok(&[
        "get",
        "pods",
        "-l",
        &format!("app=demo,pod-template-hash={stable_hash}"),
        "-o",
        "name",
    ]);
    assert_eq!(selected.lines().count(), 4, "{selected}");

    approve(k);
    wait_for_step(k, 2, "StepPaused");
    wait_for_updated_ready(k, 3);
    let weights: Vec<Value> =
        backends(k).as_array().into_iter().flatten().map(|b| b["weight"].clone()).collect();
    assert_eq!(weights, [50, 50]);

    approve(k);
    wait_for("the release complete", Duration::from_secs(60), || {
        let r = rollout(k);
        (r["status"]["phase"] == "Healthy" && condition(&r["status"], "Succeeded").0 == "True")
            .then_some(())
    });
    wait_for_updated_ready(k, 5);
    wait_for("the canary Service gone", Duration::from_secs(30), || {
        (!k.run_with(&["get", "service", "demo-canary"], None).ok).then_some(())
    });
    let weights: Vec<Value> =
        backends(k).as_array().into_iter().flatten().map(|b| b["name"].clone()).collect();
    assert_eq!(weights, ["demo"], "the route leads to the stable Service alone");
    assert!(k.json(&["get", "service", "demo"])["spec"]["selector"]["pod-template-hash"].is_null());
    assert_eq!(pod_uids(k), uids, "updated in place: the same pods");
}

/// An apps/v1 Deployment of `replicas` pods of `registry.example/NAME:v1`, labelled
/// `app: NAME`.
fn deployment_yaml(name: &str, replicas: i32) -> String {
    crate::common::app_yaml("apps/v1", "Deployment", name, replicas)
}

fn deployment(k: &Kubectl, name: &str) -> Value {
    k.json(&["get", "deployments.apps", name])
}

/// The ReplicaSets `deployment` controls, as (pod-template-hash, spec.replicas), by hash.
fn replica_sets_of(k: &Kubectl, deployment: &Value) -> Vec<(String, i64)> {
    let uid = deployment["metadata"]["uid"].clone();
    let sets = k.json(&["get", "replicasets.apps"]);
    let mut found: Vec<(String, i64)> = sets["items"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|rs| rs["metadata"]["ownerReferences"][0]["uid"] == uid)
        .map(|rs| {
            (
                rs["metadata"]["labels"]["pod-template-hash"]
                    .as_str()
                    .unwrap_or_default()
                    .to_owned(),
                rs["spec"]["replicas"].as_i64().unwrap_or(-1),
            )
        })
        .collect();
    found.sort();
    found
}

/// Pods of `app=NAME` running `image`, and how many of them are ready.
fn pods_on(k: &Kubectl, app: &str, image: &str) -> (usize, usize) {
    let pods = k.json(&["get", "pods", "-l", &format!("app={app}")]);
    let on: Vec<&Value> = pods["items"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|p| p["metadata"]["deletionTimestamp"].is_null())
        .filter(|p| p["spec"]["containers"][0]["image"] == image)
        .collect();
    let ready = on
        .iter()
        .filter(|p| {
            p["status"]["conditions"]
                .as_array()
                .into_iter()
                .flatten()
                .any(|c| c["type"] == "Ready" && c["status"] == "True")
        })
        .count();
    (on.len(), ready)
}

/// Upstream's echoserver tutorial (`docs/tutorials/basic_usage.md`) as written: a Deployment,
/// and a v1alpha1 Rollout (`weight: 5`, converted to `traffic: 5%`), released through an
/// extra canary Deployment (a v1alpha1 Rollout's default for a Deployment) and an nginx
/// canary Ingress.
const ECHOSERVER: &str = r#"
apiVersion: v1
kind: Service
metadata:
  name: echoserver
spec:
  selector:
    app: echoserver
  ports:
  - port: 80
    targetPort: 8080
---
apiVersion: networking.k8s.io/v1
kind: Ingress
metadata:
  name: echoserver
spec:
  ingressClassName: nginx
  rules:
  - host: echoserver.example.com
    http:
      paths:
      - path: /apis/echo
        pathType: Exact
        backend:
          service:
            name: echoserver
            port:
              number: 80
---
apiVersion: rollouts.kruise.io/v1alpha1
kind: Rollout
metadata:
  name: rollouts-demo
spec:
  objectRef:
    workloadRef:
      apiVersion: apps/v1
      kind: Deployment
      name: echoserver
  strategy:
    canary:
      steps:
      - weight: 5
        replicas: 20%
        pause: {}
      trafficRoutings:
      - service: echoserver
        gracePeriodSeconds: 1
        ingress:
          name: echoserver
"#;

#[test]
fn the_echoserver_tutorial_releases_a_deployment_through_a_canary_deployment_and_ingress() {
    let pg = Playground::start(1, &[]);
    let k = &pg.kubectl;
    k.ok_stdin(&["apply", "-f", "-"], &deployment_yaml("echoserver", 5));
    wait_for("5 pods", Duration::from_secs(60), || {
        (deployment(k, "echoserver")["status"]["availableReplicas"] == 5).then_some(())
    });
    k.ok_stdin(&["apply", "-f", "-"], ECHOSERVER);
    let get =
        |k: &Kubectl| k.json(&["get", "rollouts.v1beta1.rollouts.kruise.io", "rollouts-demo"]);
    wait_for("the Rollout healthy", Duration::from_secs(30), || {
        (get(k)["status"]["phase"] == "Healthy").then_some(())
    });
    // Stored as v1beta1: the weight became the step's traffic, and the v1alpha1 default for
    // a Deployment an extra canary workload.
    let stored = get(k);
    assert_eq!(stored["spec"]["strategy"]["canary"]["steps"][0]["traffic"], "5%");
    assert_eq!(stored["spec"]["strategy"]["canary"]["enableExtraWorkloadForCanary"], true);
    assert_eq!(
        deployment(k, "echoserver")["metadata"]["labels"]["rollouts.kruise.io/workload-type"],
        "deployment"
    );
    let stable_sets = replica_sets_of(k, &deployment(k, "echoserver"));
    assert_eq!(stable_sets.len(), 1, "{stable_sets:?}");

    set_image_of(k, "deployments.apps", "echoserver", "registry.example/echoserver:v2");
    let status = wait_for("step 1 paused", Duration::from_secs(60), || {
        let s = get(k)["status"].clone();
        (s["currentStepIndex"] == 1 && s["currentStepState"] == "StepPaused").then_some(s)
    });
    assert_eq!(
        status["message"],
        "Rollout is in step(1/1), and you need manually confirm to enter the next step"
    );
    // The Deployment is held: paused, its stable revision recorded, its 5 pods untouched.
    let stable = deployment(k, "echoserver");
    assert_eq!(stable["spec"]["paused"], true);
    assert_eq!(
        stable["metadata"]["labels"]["rollouts.kruise.io/stable-revision"],
        stable_sets[0].0.as_str()
    );
    assert_eq!(pods_on(k, "echoserver", "registry.example/echoserver:v1"), (5, 5));
    // One canary pod, in the canary Deployment the BatchRelease owns.
    let release = k.json(&["get", "batchreleases.rollouts.kruise.io", "rollouts-demo"]);
    assert_eq!(release["spec"]["releasePlan"]["rollingStyle"], "Canary");
    let canaries = k.json(&[
        "get",
        "deployments.apps",
        "-l",
        "rollouts.kruise.io/canary-deployment=echoserver",
    ]);
    let canary = canaries["items"][0].clone();
    assert_eq!(canaries["items"].as_array().map(Vec::len), Some(1), "{canaries}");
    assert_eq!(canary["spec"]["replicas"], 1);
    assert_eq!(canary["metadata"]["ownerReferences"][0]["kind"], "BatchRelease");
    assert_eq!(
        canary["metadata"]["finalizers"],
        serde_json::json!(["finalizer.rollouts.kruise.io/batch-release"])
    );
    assert_eq!(pods_on(k, "echoserver", "registry.example/echoserver:v2"), (1, 1));
    let batch_ids =
        k.ok(&["get", "pods", "-l", "rollouts.kruise.io/rollout-batch-id=1", "-o", "name"]);
    assert_eq!(batch_ids.lines().count(), 1, "{batch_ids}");
    // Traffic: 5% through the canary Ingress to the canary Service, which selects the canary
    // Deployment's pod.
    let ingress = k.json(&["get", "ingress", "echoserver-canary"]);
    let annotations = &ingress["metadata"]["annotations"];
    assert_eq!(annotations["nginx.ingress.kubernetes.io/canary"], "true");
    assert_eq!(annotations["nginx.ingress.kubernetes.io/canary-weight"], "5");
    assert_eq!(
        ingress["spec"]["rules"][0]["http"]["paths"][0]["backend"]["service"]["name"],
        "echoserver-canary"
    );
    let service = k.json(&["get", "service", "echoserver-canary"]);
    let hash =
        service["spec"]["selector"]["pod-template-hash"].as_str().unwrap_or_default().to_owned();
    let selected =
        k.json(&["get", "pods", "-l", &format!("app=echoserver,pod-template-hash={hash}")]);
    let images: Vec<Value> = selected["items"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|p| p["spec"]["containers"][0]["image"].clone())
        .collect();
    assert_eq!(images, ["registry.example/echoserver:v2"]);
    let stable_service = k.json(&["get", "service", "echoserver"]);
    assert_eq!(stable_service["spec"]["selector"]["pod-template-hash"], stable_sets[0].0.as_str());

    approve(k);
    wait_for("the release complete and the canary objects gone", Duration::from_secs(90), || {
        let done = get(k)["status"]["phase"] == "Healthy"
            && condition(&get(k)["status"], "Succeeded").0 == "True"
            && !k.run_with(&["get", "ingress", "echoserver-canary"], None).ok
            && !k.run_with(&["get", "service", "echoserver-canary"], None).ok
            && !k.run_with(&["get", "batchreleases.rollouts.kruise.io", "rollouts-demo"], None).ok;
        done.then_some(())
    });
    wait_for("every pod on v2 and the canary Deployment gone", Duration::from_secs(60), || {
        let gone = k.json(&[
            "get",
            "deployments.apps",
            "-l",
            "rollouts.kruise.io/canary-deployment=echoserver",
        ])["items"]
            .as_array()
            .is_some_and(Vec::is_empty);
        (gone
            && pods_on(k, "echoserver", "registry.example/echoserver:v2") == (5, 5)
            && pods_on(k, "echoserver", "registry.example/echoserver:v1").0 == 0)
            .then_some(())
    });
    let stable = deployment(k, "echoserver");
    assert_ne!(stable["spec"]["paused"], true);
    let labels = &stable["metadata"]["labels"];
    assert!(labels["rollouts.kruise.io/stable-revision"].is_null(), "{labels}");
    let annotations = &stable["metadata"]["annotations"];
    assert!(annotations["rollouts.kruise.io/in-progressing"].is_null(), "{annotations}");
    assert!(annotations["batchrelease.rollouts.kruise.io/control-info"].is_null(), "{annotations}");
    let stable_service = k.json(&["get", "service", "echoserver"]);
    assert_eq!(stable_service["spec"]["selector"], serde_json::json!({"app": "echoserver"}));
}

/// A Deployment released by partition (a v1beta1 Rollout's default): the Deployment is
/// paused with a Recreate strategy and its ReplicaSets are moved by the manager, step by step
/// (20% and 50% with traffic through a Gateway API route, then 100%), and given back with its
/// rolling update at the end.
#[test]
fn a_deployment_is_released_by_partition_with_gateway_api_traffic() {
    let pg = Playground::start(1, &[]);
    let k = &pg.kubectl;
    install_gateway_api(k);
    k.ok_stdin(&["apply", "-f", "-"], &deployment_yaml("demo", 5));
    wait_for("5 pods", Duration::from_secs(60), || {
        (deployment(k, "demo")["status"]["availableReplicas"] == 5).then_some(())
    });
    let routed = ROUTED.replace(
        "    apiVersion: apps.kruise.io/v1beta1\n    kind: CloneSet\n",
        "    apiVersion: apps/v1\n    kind: Deployment\n",
    );
    assert_ne!(routed, ROUTED);
    // Partition style refuses more than 50% with traffic, as upstream does.
    let refused =
        k.run_with(
            &["apply", "-f", "-"],
            Some(&routed.replace(
                "traffic: 50%",
                "traffic: 50%\n      - replicas: 60%\n        traffic: 60%",
            )),
        );
    assert!(
        refused.stderr.contains("For partition style rollout: step[x].replicas must not greater than partition-percent-limit if traffic specified"),
        "{}",
        refused.stderr
    );
    k.ok_stdin(&["apply", "-f", "-"], &routed);
    wait_for("the Rollout healthy", Duration::from_secs(30), || {
        (rollout(k)["status"]["phase"] == "Healthy").then_some(())
    });
    let old_hash = replica_sets_of(k, &deployment(k, "demo"))[0].0.clone();

    set_image_of(k, "deployments.apps", "demo", "registry.example/demo:v2");
    wait_for_step(k, 1, "StepPaused");
    let held = deployment(k, "demo");
    assert_eq!(held["spec"]["paused"], true);
    assert_eq!(held["spec"]["strategy"]["type"], "Recreate");
    let strategy: Value = serde_json::from_str(
        held["metadata"]["annotations"]["rollouts.kruise.io/deployment-strategy"]
            .as_str()
            .unwrap_or("null"),
    )
    .expect("the strategy annotation is JSON");
    assert_eq!(strategy["rollingStyle"], "Partition");
    assert_eq!(strategy["partition"], "20%");
    assert_eq!(
        strategy["rollingUpdate"],
        serde_json::json!({"maxUnavailable": "25%", "maxSurge": "25%"})
    );
    let sets = replica_sets_of(k, &held);
    let new_hash = sets
        .iter()
        .find(|(h, _)| *h != old_hash)
        .map(|(h, _)| h.clone())
        .expect("a new ReplicaSet");
    wait_for("1 new pod, 4 old", Duration::from_secs(60), || {
        let sets = replica_sets_of(k, &deployment(k, "demo"));
        let on = |hash: &str| sets.iter().find(|(h, _)| h == hash).map_or(-1, |(_, n)| *n);
        (on(&new_hash) == 1
            && on(&old_hash) == 4
            && pods_on(k, "demo", "registry.example/demo:v2") == (1, 1)
            && pods_on(k, "demo", "registry.example/demo:v1") == (4, 4))
            .then_some(())
    });
    assert_eq!(
        backends(k),
        serde_json::json!([{"group": "", "kind": "Service", "name": "demo", "port": 80, "weight": 80},
                           {"group": "", "kind": "Service", "name": "demo-canary", "port": 80, "weight": 20}])
    );
    let canary = k.json(&["get", "service", "demo-canary"]);
    assert_eq!(canary["spec"]["selector"]["pod-template-hash"], new_hash.as_str());
    let extra: Value = serde_json::from_str(
        deployment(k, "demo")["metadata"]["annotations"]["rollouts.kruise.io/deployment-extra-status"].as_str().unwrap_or("null"),
    )
    .expect("the extra status is JSON");
    assert_eq!(extra["expectedUpdatedReplicas"], 1);

    approve(k);
    wait_for_step(k, 2, "StepPaused");
    wait_for("3 new pods, 2 old", Duration::from_secs(60), || {
        (pods_on(k, "demo", "registry.example/demo:v2") == (3, 3)
            && pods_on(k, "demo", "registry.example/demo:v1") == (2, 2))
            .then_some(())
    });
    let weights: Vec<Value> =
        backends(k).as_array().into_iter().flatten().map(|b| b["weight"].clone()).collect();
    assert_eq!(weights, [50, 50]);

    approve(k);
    wait_for("the release complete", Duration::from_secs(90), || {
        let r = rollout(k);
        (r["status"]["phase"] == "Healthy" && condition(&r["status"], "Succeeded").0 == "True")
            .then_some(())
    });
    wait_for("every pod on v2", Duration::from_secs(60), || {
        (pods_on(k, "demo", "registry.example/demo:v2") == (5, 5)
            && pods_on(k, "demo", "registry.example/demo:v1").0 == 0)
            .then_some(())
    });
    let given_back = deployment(k, "demo");
    assert_ne!(given_back["spec"]["paused"], true);
    assert_eq!(given_back["spec"]["strategy"]["type"], "RollingUpdate");
    assert_eq!(
        given_back["spec"]["strategy"]["rollingUpdate"],
        serde_json::json!({"maxUnavailable": "25%", "maxSurge": "25%"})
    );
    let labels = &given_back["metadata"]["labels"];
    assert!(
        labels["rollouts.kruise.io/controlled-by-advanced-deployment-controller"].is_null(),
        "{labels}"
    );
    let annotations = &given_back["metadata"]["annotations"];
    for key in [
        "rollouts.kruise.io/deployment-strategy",
        "rollouts.kruise.io/deployment-extra-status",
        "batchrelease.rollouts.kruise.io/control-info",
        "rollouts.kruise.io/in-progressing",
    ] {
        assert!(annotations[key].is_null(), "{key}: {annotations}");
    }
    let routes: Vec<Value> =
        backends(k).as_array().into_iter().flatten().map(|b| b["name"].clone()).collect();
    assert_eq!(routes, ["demo"]);
}

/// A native StatefulSet (kube-controller-manager's controller in kruise-sim) released by its
/// `rollingUpdate.partition`.
#[test]
fn a_native_statefulset_is_released_by_partition() {
    let pg = Playground::start(1, &[]);
    let k = &pg.kubectl;
    let sts = asts_yaml("registry.example/web:v1")
        .replace("apiVersion: apps.kruise.io/v1beta1", "apiVersion: apps/v1")
        .replace("replicas: 4", "replicas: 3");
    k.ok_stdin(&["apply", "-f", "-"], &sts);
    let status = |k: &Kubectl| k.json(&["get", "statefulsets.apps", "web"])["status"].clone();
    wait_for("3 pods ready", Duration::from_secs(60), || {
        (status(k)["readyReplicas"] == 3).then_some(())
    });
    let rollout = STS_ROLLOUT_V1ALPHA1.replace(
        "apiVersion: apps.kruise.io/v1beta1\n      kind: StatefulSet",
        "apiVersion: apps/v1\n      kind: StatefulSet",
    );
    k.ok_stdin(&["apply", "-f", "-"], &rollout);
    let get = |k: &Kubectl| k.json(&["get", "rollouts.v1beta1.rollouts.kruise.io", "web-rollout"]);
    wait_for("the Rollout healthy", Duration::from_secs(30), || {
        (get(k)["status"]["phase"] == "Healthy").then_some(())
    });
    wait_for("the StatefulSet labelled", Duration::from_secs(30), || {
        let labels = k.json(&["get", "statefulsets.apps", "web"])["metadata"]["labels"].clone();
        (labels["rollouts.kruise.io/workload-type"] == "statefulset").then_some(())
    });
    let admitted = set_image_of(k, "statefulsets.apps", "web", "registry.example/web:v2");
    assert_eq!(admitted["spec"]["updateStrategy"]["rollingUpdate"]["partition"], 32767);
    wait_for("step 1 paused with one pod updated", Duration::from_secs(60), || {
        let s = get(k)["status"].clone();
        let st = status(k);
        (s["currentStepIndex"] == 1
            && s["currentStepState"] == "StepPaused"
            && st["updatedReplicas"] == 1)
            .then_some(())
    });
    let image = k.ok(&["get", "pod", "web-2", "-o", "jsonpath={.spec.containers[0].image}"]);
    assert_eq!(image, "registry.example/web:v2");
    let release = k.json(&["get", "batchreleases.rollouts.kruise.io", "web-rollout"]);
    assert_eq!(
        release["status"]["canaryStatus"]["updatedReadyReplicas"], 1,
        "counted from the pods"
    );
    approve_rollout(k, "web-rollout");
    wait_for("every pod on v2", Duration::from_secs(90), || {
        let st = status(k);
        (get(k)["status"]["phase"] == "Healthy"
            && st["updatedReplicas"] == 3
            && st["readyReplicas"] == 3)
            .then_some(())
    });
}

/// A DaemonSet `agent` of `api_version` (`apps/v1` or `apps.kruise.io/v1beta1`) running
/// `registry.example/agent:v1`.
fn agent_yaml(api_version: &str) -> String {
    format!(
        r#"
apiVersion: {api_version}
kind: DaemonSet
metadata:
  name: agent
spec:
  selector:
    matchLabels:
      app: agent
  template:
    metadata:
      labels:
        app: agent
    spec:
      containers:
      - name: main
        image: registry.example/agent:v1
"#
    )
}

/// An Advanced DaemonSet over three nodes, released one node first.
#[test]
fn an_advanced_daemonset_is_released_node_by_node() {
    let pg = Playground::start(3, &[]);
    let k = &pg.kubectl;
    k.ok_stdin(&["apply", "-f", "-"], &agent_yaml("apps.kruise.io/v1beta1"));
    let status =
        |k: &Kubectl| k.json(&["get", "daemonsets.apps.kruise.io", "agent"])["status"].clone();
    wait_for("3 pods ready", Duration::from_secs(60), || {
        let s = status(k);
        (s["desiredNumberScheduled"] == 3 && s["numberReady"] == 3).then_some(())
    });
    let rollout = ROLLOUT
        .replace("kind: CloneSet\n    name: demo", "kind: DaemonSet\n    name: agent")
        .replace("      - replicas: 20%\n      - replicas: 60%\n", "      - replicas: 1\n");
    k.ok_stdin(&["apply", "-f", "-"], &rollout);
    wait_for("the Rollout healthy", Duration::from_secs(30), || {
        (self::rollout(k)["status"]["phase"] == "Healthy").then_some(())
    });
    wait_for("the DaemonSet labelled", Duration::from_secs(30), || {
        let labels =
            k.json(&["get", "daemonsets.apps.kruise.io", "agent"])["metadata"]["labels"].clone();
        (labels["rollouts.kruise.io/workload-type"] == "daemonset").then_some(())
    });
    let admitted =
        set_image_of(k, "daemonsets.apps.kruise.io", "agent", "registry.example/agent:v2");
    assert_eq!(admitted["spec"]["updateStrategy"]["rollingUpdate"]["partition"], 32767);
    wait_for_step(k, 1, "StepPaused");
    wait_for("one node updated", Duration::from_secs(60), || {
        (status(k)["updatedNumberScheduled"] == 1).then_some(())
    });
    std::thread::sleep(Duration::from_secs(2));
    assert_eq!(status(k)["updatedNumberScheduled"], 1, "nothing moves before approval");
    approve(k);
    wait_for("every node on v2", Duration::from_secs(90), || {
        let s = status(k);
        (self::rollout(k)["status"]["phase"] == "Healthy"
            && s["updatedNumberScheduled"] == 3
            && s["numberReady"] == 3)
            .then_some(())
    });
    let images = k.ok(&[
        "get",
        "pods",
        "-l",
        "app=agent",
        "-o",
        "jsonpath={.items[*].spec.containers[0].image}",
    ]);
    assert!(images.split_whitespace().all(|i| i == "registry.example/agent:v2"), "{images}");
}

/// A blue-green Rollout of a CloneSet behind a Gateway API route. Every step brings up all the
/// green pods, as upstream's manual advises for a CloneSet: a CloneSet counts its new pods
/// against its replicas, so a later, larger step would bring up no more of them.
const BLUE_GREEN: &str = concat!(
    service_and_route!(),
    r#"apiVersion: rollouts.kruise.io/v1beta1
kind: Rollout
metadata:
  name: rollouts-demo
spec:
  workloadRef:
    apiVersion: apps.kruise.io/v1beta1
    kind: CloneSet
    name: demo
  strategy:
    blueGreen:
      trafficRoutings:
      - service: demo
        gracePeriodSeconds: 1
        gateway:
          httpRouteName: demo
      steps:
      - replicas: 100%
        traffic: 0%
      - replicas: 100%
        traffic: 50%
      - replicas: 100%
        traffic: 100%
"#
);

fn blue_green_step(k: &Kubectl, step: i64, state: &str) -> Value {
    wait_for(&format!("blue-green step {step} {state}"), Duration::from_secs(60), || {
        let status = rollout(k)["status"].clone();
        let bg = &status["blueGreenStatus"];
        (bg["currentStepIndex"] == step && bg["currentStepState"] == state).then_some(status)
    })
}

fn approve_blue_green(k: &Kubectl) {
    k.ok(&[
        "patch",
        "rollouts.v1beta1.rollouts.kruise.io",
        "rollouts-demo",
        "--subresource=status",
        "--type=merge",
        "-p",
        r#"{"status":{"blueGreenStatus":{"currentStepState":"StepReady"}}}"#,
    ]);
}

fn route_weights(k: &Kubectl) -> Vec<(String, i64)> {
    backends(k)
        .as_array()
        .into_iter()
        .flatten()
        .map(|b| {
            (b["name"].as_str().unwrap_or_default().to_owned(), b["weight"].as_i64().unwrap_or(-1))
        })
        .collect()
}

/// Blue-green over a CloneSet: the new pods come up beside the old ones (none of the old
/// goes while the route moves), a rollback in the middle leaves exactly the old pods (the
/// same UIDs) and the route on the stable Service, and a second release runs to the end with
/// the CloneSet's own settings given back.
#[test]
fn a_blue_green_cloneset_release_is_rolled_back_mid_way_then_completed() {
    let pg = Playground::start(1, &[]);
    let k = &pg.kubectl;
    install_gateway_api(k);
    k.ok_stdin(&["apply", "-f", "-"], &cloneset_yaml("demo", 4, ""));
    wait_for_updated_ready(k, 4);
    // Blue-green is for CloneSets and Deployments only, as upstream.
    let refused = k.run_with(
        &["apply", "-f", "-"],
        Some(&BLUE_GREEN.replace(
            "    apiVersion: apps.kruise.io/v1beta1\n    kind: CloneSet\n",
            "    apiVersion: apps.kruise.io/v1beta1\n    kind: StatefulSet\n",
        )),
    );
    assert!(
        refused.stderr.contains("WorkloadRef kind is not supported for bluegreen style"),
        "{}",
        refused.stderr
    );
    k.ok_stdin(&["apply", "-f", "-"], BLUE_GREEN);
    wait_for("the Rollout healthy", Duration::from_secs(30), || {
        (rollout(k)["status"]["phase"] == "Healthy").then_some(())
    });
    let blue = pod_uids(k);
    assert_eq!(blue.len(), 4);

    set_image(k, "registry.example/demo:v2");
    blue_green_step(k, 1, "StepPaused");
    wait_for("4 green pods beside 4 blue", Duration::from_secs(60), || {
        (pods_on(k, "demo", "registry.example/demo:v2") == (4, 4)
            && pods_on(k, "demo", "registry.example/demo:v1") == (4, 4))
            .then_some(())
    });
    let held = clone_set(k);
    assert_eq!(held["spec"]["minReadySeconds"], 2147483646);
    assert_eq!(held["spec"]["updateStrategy"]["rollingUpdate"]["maxUnavailable"], 0);
    assert_eq!(
        k.json(&["get", "batchreleases.rollouts.kruise.io", "rollouts-demo"])["spec"]["releasePlan"]
            ["rollingStyle"],
        "BlueGreen"
    );
    assert_eq!(route_weights(k), [("demo".to_owned(), 100), ("demo-canary".to_owned(), 0)]);

    approve_blue_green(k);
    blue_green_step(k, 2, "StepPaused");
    wait_for("4 green pods beside 4 blue", Duration::from_secs(60), || {
        (pods_on(k, "demo", "registry.example/demo:v2") == (4, 4)
            && pods_on(k, "demo", "registry.example/demo:v1") == (4, 4))
            .then_some(())
    });
    assert_eq!(route_weights(k), [("demo".to_owned(), 50), ("demo-canary".to_owned(), 50)]);
    // A third revision in the middle is refused until rolled back, as upstream.
    set_image(k, "registry.example/demo:v9");
    wait_for("the third revision refused", Duration::from_secs(30), || {
        (rollout(k)["status"]["message"]
            == "new version releasing detected in the progress of blue-green release, please rollback first")
            .then_some(())
    });
    assert_eq!(pods_on(k, "demo", "registry.example/demo:v9").0, 0);
    // Roll back: the template goes back to v1.
    set_image(k, "registry.example/demo:v1");
    wait_for("the release cancelled", Duration::from_secs(90), || {
        let r = rollout(k);
        (r["status"]["phase"] == "Healthy"
            && condition(&r["status"], "Succeeded")
                == ("False".to_owned(), "Cancelling".to_owned()))
            .then_some(())
    });
    wait_for("only the blue pods left", Duration::from_secs(60), || {
        (pods_on(k, "demo", "registry.example/demo:v2").0 == 0 && pod_uids(k) == blue).then_some(())
    });
    let weights: Vec<String> = route_weights(k).into_iter().map(|(name, _)| name).collect();
    assert_eq!(weights, ["demo"], "the route leads to the stable Service alone");
    assert!(!k.run_with(&["get", "service", "demo-canary"], None).ok);

    // A second release, to the end.
    set_image(k, "registry.example/demo:v3");
    blue_green_step(k, 1, "StepPaused");
    approve_blue_green(k);
    blue_green_step(k, 2, "StepPaused");
    approve_blue_green(k);
    blue_green_step(k, 3, "StepPaused");
    assert_eq!(route_weights(k), [("demo".to_owned(), 0), ("demo-canary".to_owned(), 100)]);
    assert_eq!(pods_on(k, "demo", "registry.example/demo:v1"), (4, 4), "blue stays until the end");
    approve_blue_green(k);
    wait_for("the release complete", Duration::from_secs(90), || {
        let r = rollout(k);
        (r["status"]["phase"] == "Healthy" && condition(&r["status"], "Succeeded").0 == "True")
            .then_some(())
    });
    wait_for("only green pods", Duration::from_secs(60), || {
        (pods_on(k, "demo", "registry.example/demo:v3") == (4, 4)
            && pods_on(k, "demo", "registry.example/demo:v1").0 == 0)
            .then_some(())
    });
    let given_back = clone_set(k);
    assert_eq!(given_back["spec"]["minReadySeconds"].as_i64().unwrap_or(0), 0);
    let annotations = &given_back["metadata"]["annotations"];
    assert!(
        annotations["rollouts.kruise.io/original-deployment-strategy"].is_null(),
        "{annotations}"
    );
    assert!(annotations["batchrelease.rollouts.kruise.io/control-info"].is_null(), "{annotations}");
    let partition = &given_back["spec"]["updateStrategy"]["rollingUpdate"]["partition"];
    assert!(partition.is_null() || *partition == 0, "{partition}");
    let weights: Vec<String> = route_weights(k).into_iter().map(|(name, _)| name).collect();
    assert_eq!(weights, ["demo"]);
}

/// An autoscaler of the Deployment `demo`.
const DEMO_HPA: &str = r#"
apiVersion: autoscaling/v2
kind: HorizontalPodAutoscaler
metadata:
  name: demo
spec:
  scaleTargetRef:
    apiVersion: apps/v1
    kind: Deployment
    name: demo
  minReplicas: 4
  maxReplicas: 8
"#;

/// Blue-green over a Deployment: kube-controller-manager surges the green ReplicaSet step by
/// step (2, then 4 pods) while a `minReadySeconds` no pod reaches keeps every blue pod (and
/// the blue ReplicaSet's own); its HorizontalPodAutoscaler scales nothing meanwhile; at the
/// end the Deployment's own settings come back, the autoscaler targets it again and the blue
/// pods go.
#[test]
fn a_blue_green_deployment_release_keeps_the_blue_pods_to_the_end() {
    let pg = Playground::start(1, &[]);
    let k = &pg.kubectl;
    install_gateway_api(k);
    k.ok_stdin(&["apply", "-f", "-"], &deployment_yaml("demo", 4));
    wait_for("4 pods", Duration::from_secs(60), || {
        (deployment(k, "demo")["status"]["availableReplicas"] == 4).then_some(())
    });
    let rollout_yaml = BLUE_GREEN
        .replace(
            "    apiVersion: apps.kruise.io/v1beta1\n    kind: CloneSet\n",
            "    apiVersion: apps/v1\n    kind: Deployment\n",
        )
        .replacen(
            "      - replicas: 100%\n        traffic: 0%",
            "      - replicas: 50%\n        traffic: 0%",
            1,
        );
    assert!(rollout_yaml.contains("kind: Deployment") && rollout_yaml.contains("replicas: 50%"));
    k.ok_stdin(&["apply", "-f", "-"], &rollout_yaml);
    wait_for("the Rollout healthy", Duration::from_secs(30), || {
        (rollout(k)["status"]["phase"] == "Healthy").then_some(())
    });

    k.ok_stdin(&["apply", "-f", "-"], DEMO_HPA);
    let hpa_target = || k.json(&["get", "hpa", "demo"])["spec"]["scaleTargetRef"]["name"].clone();
    let blue_rs_min_ready = || {
        let sets = k.json(&["get", "replicasets.apps", "-l", "app=demo"]);
        sets["items"]
            .as_array()
            .into_iter()
            .flatten()
            .find(|rs| {
                rs["spec"]["template"]["spec"]["containers"][0]["image"]
                    == "registry.example/demo:v1"
            })
            .map(|rs| rs["spec"]["minReadySeconds"].clone())
    };
    assert_eq!(blue_rs_min_ready(), Some(Value::Null));
    set_image_of(k, "deployments.apps", "demo", "registry.example/demo:v2");
    blue_green_step(k, 1, "StepPaused");
    wait_for("2 green pods beside 4 blue", Duration::from_secs(60), || {
        (pods_on(k, "demo", "registry.example/demo:v2") == (2, 2)
            && pods_on(k, "demo", "registry.example/demo:v1") == (4, 4))
            .then_some(())
    });
    assert_eq!(hpa_target(), "demo-DisableByRollout");
    assert_eq!(blue_rs_min_ready(), Some(serde_json::json!(2147483646)));
    let held = deployment(k, "demo");
    assert_eq!(held["spec"]["minReadySeconds"], 2147483646);
    assert_eq!(held["spec"]["progressDeadlineSeconds"], 2147483647);
    let saved: Value = serde_json::from_str(
        held["metadata"]["annotations"]["rollouts.kruise.io/original-deployment-strategy"]
            .as_str()
            .unwrap_or("null"),
    )
    .expect("the saved strategy is JSON");
    assert_eq!(
        saved,
        serde_json::json!({"maxSurge": "25%", "maxUnavailable": "25%", "progressDeadlineSeconds": 600})
    );
    assert_eq!(route_weights(k), [("demo".to_owned(), 100), ("demo-canary".to_owned(), 0)]);

    approve_blue_green(k);
    blue_green_step(k, 2, "StepPaused");
    wait_for("4 green pods beside 4 blue", Duration::from_secs(60), || {
        (pods_on(k, "demo", "registry.example/demo:v2") == (4, 4)
            && pods_on(k, "demo", "registry.example/demo:v1") == (4, 4))
            .then_some(())
    });
    assert_eq!(route_weights(k), [("demo".to_owned(), 50), ("demo-canary".to_owned(), 50)]);
    approve_blue_green(k);
    blue_green_step(k, 3, "StepPaused");
    assert_eq!(route_weights(k), [("demo".to_owned(), 0), ("demo-canary".to_owned(), 100)]);
    approve_blue_green(k);
    wait_for("the release complete", Duration::from_secs(90), || {
        let r = rollout(k);
        (r["status"]["phase"] == "Healthy" && condition(&r["status"], "Succeeded").0 == "True")
            .then_some(())
    });
    wait_for("only green pods", Duration::from_secs(60), || {
        (pods_on(k, "demo", "registry.example/demo:v2") == (4, 4)
            && pods_on(k, "demo", "registry.example/demo:v1").0 == 0)
            .then_some(())
    });
    let given_back = deployment(k, "demo");
    assert_eq!(hpa_target(), "demo", "the autoscaler targets the Deployment again");
    assert_eq!(given_back["spec"]["minReadySeconds"].as_i64().unwrap_or(0), 0);
    assert_eq!(given_back["spec"]["progressDeadlineSeconds"], 600);
    assert_eq!(
        given_back["spec"]["strategy"]["rollingUpdate"],
        serde_json::json!({"maxSurge": "25%", "maxUnavailable": "25%"})
    );
    assert_ne!(given_back["spec"]["paused"], true);
    let annotations = &given_back["metadata"]["annotations"];
    assert!(
        annotations["rollouts.kruise.io/original-deployment-strategy"].is_null(),
        "{annotations}"
    );
    let weights: Vec<String> = route_weights(k).into_iter().map(|(name, _)| name).collect();
    assert_eq!(weights, ["demo"]);
}

/// Where a release is, as a number that only grows: 4 per step (upgrade, traffic, paused,
/// ready), then 100 once finalising.
fn release_position(status: &Value) -> i64 {
    if condition(status, "Progressing").1 == "Finalising" {
        return 100;
    }
    let step = status["currentStepIndex"].as_i64().unwrap_or(0).max(1);
    let rank = match status["currentStepState"].as_str().unwrap_or_default() {
        "StepTrafficRouting" | "StepMetricsAnalysis" => 1,
        "StepPaused" => 2,
        "StepReady" => 3,
        _ => 0,
    };
    (step - 1) * 4 + rank
}

/// The manager is killed at a random point of a partition-style Deployment release with
/// Gateway API traffic (the point is printed; `ROLLOUT_KILL_POINT` replays one), restarted,
/// and the release converges: every pod on the new template, the Deployment given back, the
/// route and Services as before.
#[test]
fn a_release_converges_after_the_manager_is_killed_at_a_random_point() {
    let points = [0, 1, 2, 4, 5, 6, 8, 100];
    let chosen = std::env::var("ROLLOUT_KILL_POINT")
        .ok()
        .and_then(|p| p.parse::<i64>().ok())
        .unwrap_or_else(|| {
            let nanos = std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0, |d| d.subsec_nanos());
            points[nanos as usize % points.len()]
        });
    eprintln!(
        "killing the manager at release position {chosen} (ROLLOUT_KILL_POINT={chosen} replays it)"
    );
    let cluster = crate::pub_budget::cluster_with_nodes(1);
    let k = &cluster.kubectl;
    let (mut manager, _) = crate::pub_budget::start_manager(&cluster, &[]);
    install_gateway_api(k);
    k.ok_stdin(&["apply", "-f", "-"], &deployment_yaml("demo", 5));
    wait_for("5 pods", Duration::from_secs(60), || {
        (deployment(k, "demo")["status"]["availableReplicas"] == 5).then_some(())
    });
    let routed = ROUTED.replace(
        "    apiVersion: apps.kruise.io/v1beta1\n    kind: CloneSet\n",
        "    apiVersion: apps/v1\n    kind: Deployment\n",
    );
    k.ok_stdin(&["apply", "-f", "-"], &routed);
    wait_for("the Rollout healthy", Duration::from_secs(30), || {
        (rollout(k)["status"]["phase"] == "Healthy").then_some(())
    });

    set_image_of(k, "deployments.apps", "demo", "registry.example/demo:v2");
    let mut killed_at = None;
    let mut restarted = None;
    let deadline = std::time::Instant::now() + Duration::from_secs(240);
    loop {
        assert!(std::time::Instant::now() < deadline, "no convergence: {}", rollout(k)["status"]);
        let status = rollout(k)["status"].clone();
        if status["phase"] == "Healthy" && condition(&status, "Succeeded").0 == "True" {
            break;
        }
        let position = release_position(&status);
        if killed_at.is_none() && status["phase"] == "Progressing" && position >= chosen {
            manager.kill();
            killed_at = Some(position);
            std::thread::sleep(Duration::from_secs(1));
            restarted = Some(crate::pub_budget::start_manager(&cluster, &[]).0);
            continue;
        }
        if status["currentStepState"] == "StepPaused" {
            approve(k);
        }
        std::thread::sleep(Duration::from_millis(200));
    }
    assert!(killed_at.is_some() && restarted.is_some(), "the manager was killed mid-release");
    eprintln!("killed at position {killed_at:?}");
    wait_for("every pod on v2", Duration::from_secs(60), || {
        (pods_on(k, "demo", "registry.example/demo:v2") == (5, 5)
            && pods_on(k, "demo", "registry.example/demo:v1").0 == 0)
            .then_some(())
    });
    let given_back = deployment(k, "demo");
    assert_ne!(given_back["spec"]["paused"], true);
    assert_eq!(given_back["spec"]["strategy"]["type"], "RollingUpdate");
    for key in [
        "rollouts.kruise.io/deployment-strategy",
        "batchrelease.rollouts.kruise.io/control-info",
        "rollouts.kruise.io/in-progressing",
    ] {
        assert!(given_back["metadata"]["annotations"][key].is_null(), "{key}");
    }
    let routes: Vec<Value> =
        backends(k).as_array().into_iter().flatten().map(|b| b["name"].clone()).collect();
    assert_eq!(routes, ["demo"]);
    assert!(!k.run_with(&["get", "service", "demo-canary"], None).ok);
    assert_eq!(
        k.json(&["get", "service", "demo"])["spec"]["selector"],
        serde_json::json!({"app": "demo"})
    );
    assert!(!k.run_with(&["get", "batchreleases.rollouts.kruise.io", "rollouts-demo"], None).ok);
}

/// `rollouts.kruise.io/rollback-in-batch`: a CloneSet rolled back in the middle of a release
/// goes back to the old template step by step, the pods already on it labelled
/// `no-need-update` and left alone.
#[test]
fn a_cloneset_is_rolled_back_in_batches() {
    let pg = Playground::start(1, &[]);
    let k = &pg.kubectl;
    k.ok_stdin(&["apply", "-f", "-"], &cloneset_yaml("demo", 5, ""));
    wait_for_updated_ready(k, 5);
    let annotated = ROLLOUT.replace(
        "  name: rollouts-demo\n",
        "  name: rollouts-demo\n  annotations:\n    rollouts.kruise.io/rollback-in-batch: \"true\"\n",
    );
    assert_ne!(annotated, ROLLOUT);
    k.ok_stdin(&["apply", "-f", "-"], &annotated);
    wait_for("the Rollout healthy", Duration::from_secs(30), || {
        (rollout(k)["status"]["phase"] == "Healthy").then_some(())
    });
    let on = |image: &str| pods_on(k, "demo", &format!("registry.example/demo:{image}"));
    set_image(k, "registry.example/demo:v2");
    wait_for_step(k, 1, "StepPaused");
    approve(k);
    wait_for_step(k, 2, "StepPaused");
    wait_for("3 pods on v2", Duration::from_secs(60), || {
        (on("v2") == (3, 3) && on("v1") == (2, 2)).then_some(())
    });

    // Back to v1: the steps run again for it, over the three pods that moved.
    set_image(k, "registry.example/demo:v1");
    let status = wait_for_step(k, 1, "StepPaused");
    assert!(
        status["canaryStatus"]["observedRolloutID"]
            .as_str()
            .is_some_and(|id| id.starts_with("rollback-")),
        "{status}"
    );
    wait_for("one pod back on v1", Duration::from_secs(60), || {
        (on("v1") == (3, 3) && on("v2") == (2, 2)).then_some(())
    });
    let release = k.json(&["get", "batchreleases.rollouts.kruise.io", "rollouts-demo"]);
    assert_eq!(release["metadata"]["annotations"]["rollouts.kruise.io/rollback-in-batch"], "true");
    assert_eq!(release["status"]["canaryStatus"]["noNeedUpdateReplicas"], 2);
    let untouched = k.ok(&["get", "pods", "-l", "rollouts.kruise.io/no-need-update", "-o", "name"]);
    assert_eq!(untouched.lines().count(), 2, "{untouched}");
    approve(k);
    wait_for_step(k, 2, "StepPaused");
    wait_for("two pods back on v1", Duration::from_secs(60), || {
        (on("v1") == (4, 4) && on("v2") == (1, 1)).then_some(())
    });
    approve(k);
    wait_for("the rollback complete", Duration::from_secs(90), || {
        let r = rollout(k);
        (r["status"]["phase"] == "Healthy" && condition(&r["status"], "Succeeded").0 == "True")
            .then_some(())
    });
    wait_for("every pod on v1", Duration::from_secs(60), || {
        (on("v1") == (5, 5) && on("v2").0 == 0).then_some(())
    });
}

/// A native DaemonSet (kube-controller-manager's controller in kruise-sim) over three nodes:
/// run `OnDelete` while released, one node's pod replaced at step 1, the rest after approval,
/// and its own rolling update given back.
#[test]
fn a_native_daemonset_is_released_node_by_node() {
    let pg = Playground::start(3, &[]);
    let k = &pg.kubectl;
    k.ok_stdin(&["apply", "-f", "-"], &agent_yaml("apps/v1"));
    let status = |k: &Kubectl| k.json(&["get", "daemonsets.apps", "agent"])["status"].clone();
    wait_for("3 pods ready", Duration::from_secs(60), || {
        let s = status(k);
        (s["desiredNumberScheduled"] == 3 && s["numberReady"] == 3).then_some(())
    });
    let rollout = ROLLOUT
        .replace(
            "    apiVersion: apps.kruise.io/v1beta1\n    kind: CloneSet\n    name: demo",
            "    apiVersion: apps/v1\n    kind: DaemonSet\n    name: agent",
        )
        .replace("      - replicas: 20%\n      - replicas: 60%\n", "      - replicas: 1\n");
    assert!(rollout.contains("kind: DaemonSet"));
    k.ok_stdin(&["apply", "-f", "-"], &rollout);
    wait_for("the Rollout healthy and the DaemonSet labelled", Duration::from_secs(30), || {
        let labels = k.json(&["get", "daemonsets.apps", "agent"])["metadata"]["labels"].clone();
        (self::rollout(k)["status"]["phase"] == "Healthy"
            && labels["rollouts.kruise.io/workload-type"] == "daemonset")
            .then_some(())
    });
    let admitted = set_image_of(k, "daemonsets.apps", "agent", "registry.example/agent:v2");
    assert_eq!(admitted["spec"]["updateStrategy"]["type"], "OnDelete");
    assert_eq!(
        admitted["metadata"]["annotations"]["rollouts.kruise.io/daemonset-original-update-strategy"],
        "RollingUpdate"
    );
    wait_for_step(k, 1, "StepPaused");
    let on = |image: &str| pods_on(k, "agent", &format!("registry.example/agent:{image}"));
    wait_for("one node on v2", Duration::from_secs(60), || {
        (on("v2") == (1, 1) && on("v1") == (2, 2)).then_some(())
    });
    std::thread::sleep(Duration::from_secs(2));
    assert_eq!(on("v2"), (1, 1), "nothing moves before approval");
    let control: Value = serde_json::from_str(
        k.json(&["get", "daemonsets.apps", "agent"])["metadata"]["annotations"]
            ["rollouts.kruise.io/daemonset-advanced-control"]
            .as_str()
            .unwrap_or("null"),
    )
    .expect("the control annotation is JSON");
    assert_eq!(control["partition"], "2");
    approve(k);
    wait_for("every node on v2", Duration::from_secs(90), || {
        (self::rollout(k)["status"]["phase"] == "Healthy" && on("v2") == (3, 3) && on("v1").0 == 0)
            .then_some(())
    });
    wait_for("the DaemonSet given back", Duration::from_secs(30), || {
        let ds = k.json(&["get", "daemonsets.apps", "agent"]);
        let annotations = &ds["metadata"]["annotations"];
        (ds["spec"]["updateStrategy"]["type"] == "RollingUpdate"
            && annotations["rollouts.kruise.io/daemonset-advanced-control"].is_null()
            && annotations["rollouts.kruise.io/daemonset-original-update-strategy"].is_null()
            && annotations["batchrelease.rollouts.kruise.io/control-info"].is_null())
        .then_some(())
    });
}

/// A lane's traffic rules, shared by the Rollouts of two CloneSets (`a` names it by
/// `trafficRoutingRef`, `b` by the v1alpha1 annotation), as in upstream's end-to-end canary
/// manual: a request with `User-Agent: foo` goes through the canary Ingress while either
/// release runs, and every route is restored after the last one ends.
const LANE: &str = r#"
apiVersion: v1
kind: Service
metadata:
  name: front
spec:
  selector:
    app: a
  ports:
  - port: 80
---
apiVersion: networking.k8s.io/v1
kind: Ingress
metadata:
  name: front
spec:
  ingressClassName: nginx
  rules:
  - host: front.example.com
    http:
      paths:
      - path: /
        pathType: Prefix
        backend:
          service:
            name: front
            port:
              number: 80
---
apiVersion: rollouts.kruise.io/v1alpha1
kind: TrafficRouting
metadata:
  name: lane
spec:
  objectRef:
  - service: front
    gracePeriodSeconds: 1
    ingress:
      name: front
  strategy:
    matches:
    - headers:
      - type: Exact
        name: User-Agent
        value: foo
---
apiVersion: rollouts.kruise.io/v1beta1
kind: Rollout
metadata:
  name: rollout-a
spec:
  workloadRef:
    apiVersion: apps.kruise.io/v1beta1
    kind: CloneSet
    name: a
  strategy:
    canary:
      trafficRoutingRef: lane
      steps:
      - replicas: 1
---
apiVersion: rollouts.kruise.io/v1alpha1
kind: Rollout
metadata:
  name: rollout-b
  annotations:
    rollouts.kruise.io/trafficrouting: lane
spec:
  objectRef:
    workloadRef:
      apiVersion: apps.kruise.io/v1beta1
      kind: CloneSet
      name: b
  strategy:
    canary:
      steps:
      - replicas: 1
"#;

#[test]
fn a_traffic_routing_shared_by_two_rollouts_is_restored_after_the_last() {
    let pg = Playground::start(1, &[]);
    let k = &pg.kubectl;
    for name in ["a", "b"] {
        k.ok_stdin(&["apply", "-f", "-"], &cloneset_yaml(name, 2, ""));
    }
    k.ok_stdin(&["apply", "-f", "-"], LANE);
    let tr = || k.json(&["get", "trafficroutings.rollouts.kruise.io", "lane"]);
    let finalizers = |tr: &Value| -> Vec<String> {
        tr["metadata"]["finalizers"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|f| f.as_str().map(str::to_owned))
            .collect()
    };
    let phase = |want: &'static str| {
        wait_for(&format!("the TrafficRouting {want}"), Duration::from_secs(60), || {
            let tr = tr();
            (tr["status"]["phase"] == want).then_some(tr)
        })
    };
    let healthy = phase("Healthy");
    assert_eq!(healthy["status"]["message"], "TrafficRouting is Healthy");
    assert_eq!(finalizers(&healthy), ["rollouts.kruise.io/trafficrouting"]);
    let get_rollout = |name: &str| k.json(&["get", "rollouts.v1beta1.rollouts.kruise.io", name]);
    let step_paused = |name: &'static str| {
        wait_for(&format!("{name} paused at step 1"), Duration::from_secs(60), || {
            let status = get_rollout(name)["status"].clone();
            (status["canaryStatus"]["currentStepIndex"] == 1
                && status["canaryStatus"]["currentStepState"] == "StepPaused")
                .then_some(())
        })
    };
    let canary_ingress = || k.run_with(&["get", "ingress", "front-canary", "-o", "json"], None);
    // The Rollouts are in place (and the workload webhook knows them) before any release.
    for name in ["rollout-a", "rollout-b"] {
        wait_for(&format!("{name} healthy"), Duration::from_secs(60), || {
            (get_rollout(name)["status"]["phase"] == "Healthy").then_some(())
        });
    }

    // Release a: the TrafficRouting is held, and the lane's header goes to the canary Ingress.
    set_image_of(k, "clonesets.apps.kruise.io", "a", "registry.example/a:v2");
    step_paused("rollout-a");
    let progressing = phase("Progressing");
    assert!(
        finalizers(&progressing).contains(&"progressing.rollouts.kruise.io/rollout-a".to_owned()),
        "{progressing}"
    );
    let ingress =
        wait_for("the canary Ingress with the lane's header", Duration::from_secs(60), || {
            let out = canary_ingress();
            let ingress: Value = serde_json::from_str(&out.stdout).unwrap_or(Value::Null);
            let annotations = &ingress["metadata"]["annotations"];
            (annotations["nginx.ingress.kubernetes.io/canary-by-header"] == "User-Agent")
                .then_some(ingress)
        });
    let annotations = &ingress["metadata"]["annotations"];
    assert_eq!(annotations["nginx.ingress.kubernetes.io/canary"], "true");
    assert_eq!(annotations["nginx.ingress.kubernetes.io/canary-by-header-value"], "foo");
    assert_eq!(
        ingress["spec"]["rules"][0]["http"]["paths"][0]["backend"]["service"]["name"], "front",
        "the lane's traffic goes to the stable Service, told apart downstream"
    );
    assert_eq!(ingress["metadata"]["ownerReferences"][0]["kind"], "TrafficRouting");

    // Release b holds it too; a's end leaves it to b.
    set_image_of(k, "clonesets.apps.kruise.io", "b", "registry.example/b:v2");
    step_paused("rollout-b");
    wait_for("both Rollouts holding the TrafficRouting", Duration::from_secs(30), || {
        (finalizers(&tr()).len() == 3).then_some(())
    });
    approve_rollout(k, "rollout-a");
    wait_for("rollout-a done", Duration::from_secs(90), || {
        let r = get_rollout("rollout-a");
        (r["status"]["phase"] == "Healthy" && condition(&r["status"], "Succeeded").0 == "True")
            .then_some(())
    });
    let held = tr();
    assert_eq!(held["status"]["phase"], "Progressing", "b still holds it: {held}");
    assert_eq!(
        finalizers(&held),
        ["rollouts.kruise.io/trafficrouting", "progressing.rollouts.kruise.io/rollout-b"]
    );
    assert!(canary_ingress().ok, "the lane's route stays while b runs");

    // b's end: the routes restored, the TrafficRouting Healthy again.
    approve_rollout(k, "rollout-b");
    wait_for("the canary Ingress gone", Duration::from_secs(90), || {
        (!canary_ingress().ok).then_some(())
    });
    let restored = phase("Healthy");
    assert_eq!(finalizers(&restored), ["rollouts.kruise.io/trafficrouting"]);
    // Deleted, it lets go of its own finalizer once its routes are restored.
    k.ok(&["delete", "trafficroutings.rollouts.kruise.io", "lane", "--wait=false"]);
    wait_for("the TrafficRouting gone", Duration::from_secs(30), || {
        (!k.run_with(&["get", "trafficroutings.rollouts.kruise.io", "lane"], None).ok).then_some(())
    });
}

/// RolloutHistory (Kruise Rollout's `RolloutHistory` gate, off by default): a release with a
/// rollout id gets a record when it starts, completed when the Rollout is Healthy again with
/// the specs it ran with and the pods each step updated. Without the gate nothing is written.
#[test]
fn a_release_is_recorded_in_a_rollout_history_behind_its_gate() {
    for gate in [false, true] {
        let flag = format!("--feature-gates=RolloutHistory={gate}");
        let pg = Playground::start(1, &[flag.as_str()]);
        let k = &pg.kubectl;
        k.ok_stdin(&["apply", "-f", "-"], &cloneset_yaml("demo", 3, ""));
        wait_for_updated_ready(k, 3);
        k.ok_stdin(&["apply", "-f", "-"], ROLLOUT);
        wait_for("the Rollout healthy", Duration::from_secs(30), || {
            (rollout(k)["status"]["phase"] == "Healthy").then_some(())
        });
        let release = serde_json::json!({
            "metadata": {"labels": {"rollouts.kruise.io/rollout-id": "release-2"}},
            "spec": {"template": {"spec": {"containers": [
                {"name": "main", "image": "registry.example/demo:v2"}]}}},
        });
        k.ok(&[
            "patch",
            "clonesets.apps.kruise.io",
            "demo",
            "--type=merge",
            "-p",
            &release.to_string(),
        ]);
        let records = || {
            k.json(&[
                "get",
                "rollouthistories.rollouts.kruise.io",
                "-l",
                "rollouts.kruise.io/rollout-name=rollouts-demo,rollouts.kruise.io/rollout-id=release-2",
            ])["items"]
                .as_array()
                .cloned()
                .unwrap_or_default()
        };
        wait_for_step(k, 1, "StepPaused");
        if gate {
            let started = wait_for("a record of the release", Duration::from_secs(30), || {
                let items = records();
                (items.len() == 1).then(|| items[0].clone())
            });
            assert!(started["status"]["phase"].is_null(), "{started}");
        }
        approve(k);
        wait_for_step(k, 2, "StepPaused");
        approve(k);
        wait_for("the release complete", Duration::from_secs(90), || {
            let r = rollout(k);
            (r["status"]["phase"] == "Healthy" && condition(&r["status"], "Succeeded").0 == "True")
                .then_some(())
        });
        wait_for_updated_ready(k, 3);
        if !gate {
            let all = k.json(&["get", "rollouthistories.rollouts.kruise.io"]);
            assert_eq!(all["items"], serde_json::json!([]), "nothing without the gate");
            continue;
        }
        let record = wait_for("the record completed", Duration::from_secs(30), || {
            let items = records();
            (items.len() == 1 && items[0]["status"]["phase"] == "completed")
                .then(|| items[0].clone())
        });
        assert_eq!(record["spec"]["rollout"]["rolloutID"], "release-2");
        assert_eq!(record["spec"]["rollout"]["data"]["workloadRef"]["name"], "demo");
        assert_eq!(record["spec"]["workload"]["kind"], "CloneSet");
        assert_eq!(
            record["spec"]["workload"]["data"]["template"]["spec"]["containers"][0]["image"],
            "registry.example/demo:v2"
        );
        assert!(record["metadata"]["ownerReferences"].is_null(), "{record}");
        // 20%, 60%, 100% of 3: one pod in each step.
        let steps = record["status"]["canarySteps"].as_array().cloned().unwrap_or_default();
        let per_step: Vec<usize> =
            steps.iter().map(|s| s["pods"].as_array().map_or(0, Vec::len)).collect();
        assert_eq!(per_step, [1, 1, 1], "{steps:?}");
        let mut recorded: Vec<String> = steps
            .iter()
            .flat_map(|s| s["pods"].as_array().cloned().unwrap_or_default())
            .map(|p| p["name"].as_str().unwrap_or_default().to_owned())
            .collect();
        recorded.sort();
        let pods = k.ok(&["get", "pods", "-l", "app=demo", "-o", "name"]);
        let mut names: Vec<String> =
            pods.lines().map(|l| l.trim_start_matches("pod/").to_owned()).collect();
        names.sort();
        assert_eq!(recorded, names);
        assert!(steps.iter().all(|s| s["pods"][0]["nodeName"].is_string()), "{steps:?}");
    }
}

/// `disableGenerateCanaryService` over a Gateway API route: no canary Service, the stable
/// Service's selector left alone, and the step's header match sent to the stable Service
/// itself by a rule of its own, which alone is taken out at the end: the route's own rule
/// leads to the same Service and stays (upstream's restore removes both).
#[test]
fn without_a_canary_service_a_gateway_route_gains_and_loses_only_the_match_rule() {
    let pg = Playground::start(1, &[]);
    let k = &pg.kubectl;
    install_gateway_api(k);
    k.ok_stdin(&["apply", "-f", "-"], &cloneset_yaml("demo", 3, ""));
    wait_for_updated_ready(k, 3);
    let rollout_yaml = ROUTED
        .replace(
            "    canary:\n      trafficRoutings:",
            "    canary:\n      disableGenerateCanaryService: true\n      trafficRoutings:",
        )
        .replace(
            "      - replicas: 20%\n        traffic: 20%\n      - replicas: 50%\n        traffic: 50%\n",
            "      - replicas: 1\n        matches:\n        - headers:\n          - name: x-lane\n            value: gray\n",
        );
    assert!(
        rollout_yaml.contains("disableGenerateCanaryService") && rollout_yaml.contains("x-lane")
    );
    k.ok_stdin(&["apply", "-f", "-"], &rollout_yaml);
    wait_for("the Rollout healthy", Duration::from_secs(30), || {
        (rollout(k)["status"]["phase"] == "Healthy").then_some(())
    });
    let route = || k.json(&["get", "httproutes.gateway.networking.k8s.io", "demo"]);
    let original = route()["spec"]["rules"].clone();
    assert_eq!(original.as_array().map(Vec::len), Some(1), "{original}");

    set_image(k, "registry.example/demo:v2");
    wait_for_step(k, 1, "StepPaused");
    let routed = route();
    let rules = &routed["spec"]["rules"];
    assert_eq!(rules.as_array().map(Vec::len), Some(2), "{routed}");
    assert_eq!(rules[0], original[0], "the route's own rule untouched");
    assert_eq!(rules[1]["matches"][0]["headers"][0]["name"], "x-lane");
    assert_eq!(rules[1]["backendRefs"][0]["name"], "demo", "the stable Service itself");
    assert!(
        routed["metadata"]["annotations"]["rollouts.kruise.io/added-route-rules"].is_string(),
        "{routed}"
    );
    assert!(!k.run_with(&["get", "service", "demo-canary"], None).ok, "no canary Service");
    assert_eq!(
        k.json(&["get", "service", "demo"])["spec"]["selector"],
        serde_json::json!({"app": "demo"})
    );

    approve(k);
    wait_for("the release complete", Duration::from_secs(90), || {
        let r = rollout(k);
        (r["status"]["phase"] == "Healthy" && condition(&r["status"], "Succeeded").0 == "True")
            .then_some(())
    });
    let restored = route();
    assert_eq!(restored["spec"]["rules"], original, "{restored}");
    assert!(
        restored["metadata"]["annotations"]["rollouts.kruise.io/added-route-rules"].is_null(),
        "{restored}"
    );
    wait_for_updated_ready(k, 3);
}
