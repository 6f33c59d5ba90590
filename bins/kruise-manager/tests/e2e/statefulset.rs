//! Advanced StatefulSet end to end, driven by the real kubectl:
//!
//! - the seed guide's `demo-asts` on `kruise-manager playground`: pods `demo-asts-0..2`,
//!   `kubectl get asts`, an in-place image update (same pods, one restart each, within
//!   maxUnavailable), `reserveOrdinals` moving a pod, bad input refused naming the field with
//!   nothing lost, and `kubectl scale`;
//! - a manager killed mid-rollout, under injected API faults, converging to exactly `replicas`
//!   pods on unique ordinals;
//! - a manager started before the CRDs exist, whose controllers start once they are installed.

use crate::common;

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use common::{
    Budget, Kubectl, Playground, PodRow, Proc, SimCluster, pod_rows as pods, start_monitor,
    upstream_template, wait_for,
};
use kruise_sim::faults::{Fault, FaultAction};
use serde_json::Value;

const DEMO: &str = r#"
apiVersion: apps.kruise.io/v1alpha1
kind: StatefulSet
metadata:
  name: demo-asts
spec:
  replicas: 3
  selector:
    matchLabels:
      app: guestbook-sts
  podManagementPolicy: Parallel
  template:
    metadata:
      labels:
        app: guestbook-sts
    spec:
      containers:
      - name: guestbook
        image: openkruise/guestbook:v1
        env:
        - name: test
          value: foo
      readinessGates:
      - conditionType: InPlaceUpdateReady
  updateStrategy:
    type: RollingUpdate
    rollingUpdate:
      podUpdatePolicy: InPlaceIfPossible
      maxUnavailable: 20%
      inPlaceUpdateStrategy:
        gracePeriodSeconds: 3
"#;

const MINUTE: Duration = Duration::from_secs(60);

fn names(pods: &BTreeMap<String, PodRow>) -> Vec<&str> {
    pods.keys().map(String::as_str).collect()
}

fn demo_image(kubectl: &Kubectl, image: &str) {
    let patch = format!(
        r#"{{"spec":{{"template":{{"spec":{{"containers":[{{"name":"guestbook","image":"{image}","env":[{{"name":"test","value":"foo"}}]}}]}}}}}}}}"#
    );
    kubectl.ok(&["patch", "asts", "demo-asts", "--type", "merge", "-p", &patch]);
}

#[test]
fn demo_asts_walkthrough() {
    let pg = Playground::start(3, &[]);
    let kubectl = &pg.kubectl;
    let budget = Arc::new(Mutex::new(Budget::default()));
    start_monitor(kubectl.kubeconfig.clone(), "app=guestbook-sts", budget.clone());

    // 1. The guide's manifest, as v1alpha1: demo-asts-0..2 Running and Ready.
    kubectl.ok_stdin(&["create", "-f", "-"], DEMO);
    let initial = wait_for("demo-asts-0..2 ready", MINUTE, || {
        let p = pods(kubectl, "app=guestbook-sts");
        (names(&p) == ["demo-asts-0", "demo-asts-1", "demo-asts-2"] && p.values().all(|x| x.3))
            .then_some(p)
    });
    let phases = kubectl.ok(&[
        "get",
        "pods",
        "-l",
        "app=guestbook-sts",
        "-o",
        "jsonpath={.items[*].status.phase}",
    ]);
    assert_eq!(phases, "Running Running Running");
    let labels = kubectl.json(&["get", "pod", "demo-asts-1"])["metadata"]["labels"].clone();
    assert_eq!(labels["apps.kubernetes.io/pod-index"], "1", "{labels}");
    assert_eq!(labels["statefulset.kubernetes.io/pod-name"], "demo-asts-1", "{labels}");

    // 2. `kubectl get asts`: DESIRED CURRENT UPDATED READY, all 3.
    let table = wait_for("kubectl get asts to show 3 ready", MINUTE, || {
        let table = kubectl.ok(&["get", "asts", "demo-asts"]);
        table
            .lines()
            .nth(1)
            .is_some_and(|row| row.split_whitespace().nth(4) == Some("3"))
            .then_some(table)
    });
    let header: Vec<&str> = table.lines().next().expect("header").split_whitespace().collect();
    assert_eq!(&header[..6], ["NAME", "DESIRED", "CURRENT", "UPDATED", "READY", "AGE"], "{table}");
    let row: Vec<&str> = table.lines().nth(1).expect("row").split_whitespace().collect();
    assert_eq!(&row[..5], ["demo-asts", "3", "3", "3", "3"], "{table}");

    // 3. An image change updates every pod in place: same UIDs, one restart each, never more
    // than one pod unavailable (maxUnavailable 20% of 3 rounds down, to at least 1).
    budget.lock().expect("budget").armed = true;
    demo_image(kubectl, "openkruise/guestbook:v2");
    let updated = wait_for("all pods on v2 and ready", MINUTE, || {
        let p = pods(kubectl, "app=guestbook-sts");
        let status = kubectl.json(&["get", "asts", "demo-asts"])["status"].clone();
        (p.len() == 3
            && p.values().all(|x| x.1 == "openkruise/guestbook:v2" && x.3)
            && status["updatedReadyReplicas"] == 3
            && status["currentRevision"] == status["updateRevision"])
            .then_some(p)
    });
    let uids = |p: &BTreeMap<String, PodRow>| -> Vec<(String, String)> {
        p.iter().map(|(n, x)| (n.clone(), x.0.clone())).collect()
    };
    assert_eq!(uids(&updated), uids(&initial), "an in-place update keeps the pods");
    assert!(updated.values().all(|x| x.2 == 1), "restartCount 1 each: {updated:?}");
    {
        let b = budget.lock().expect("budget");
        let least = b.min_available.expect("pod events seen during the update");
        assert!(least >= 2, "only {least} of 3 pods available at one moment; maxUnavailable is 1");
        assert!(b.max_active <= 3, "{} pods at once", b.max_active);
    }

    // 4. reserveOrdinals [1]: demo-asts-1 goes, demo-asts-3 takes its place.
    kubectl.ok(&[
        "patch",
        "asts",
        "demo-asts",
        "--type",
        "merge",
        "-p",
        r#"{"spec":{"reserveOrdinals":[1]}}"#,
    ]);
    wait_for("pods 0, 2 and 3", MINUTE, || {
        let p = pods(kubectl, "app=guestbook-sts");
        (names(&p) == ["demo-asts-0", "demo-asts-2", "demo-asts-3"] && p.values().all(|x| x.3))
            .then_some(())
    });

    // 5. Bad input is refused, naming the field, and nothing is lost.
    let before = kubectl.json(&["get", "asts", "demo-asts"])["spec"].clone();
    let bad = kubectl.run_with(
        &[
            "patch",
            "asts",
            "demo-asts",
            "--type",
            "merge",
            "-p",
            r#"{"spec":{"reserveOrdinals":[1,"5-2"]}}"#,
        ],
        None,
    );
    assert!(!bad.ok, "an invalid range is refused");
    assert!(
        bad.stderr.contains(r#"admission webhook "vstatefulset.kb.io" denied the request: spec.reserveOrdinals[1]: Invalid value: "5-2": the range's start is greater than its end"#),
        "{}",
        bad.stderr
    );
    let in_place_only = r#"{"spec":{"updateStrategy":{"rollingUpdate":{"podUpdatePolicy":"InPlaceOnly"}},"template":{"spec":{"containers":[{"name":"guestbook","image":"openkruise/guestbook:v3","env":[{"name":"test","value":"bar"}]}]}}}}"#;
    let bad = kubectl
        .run_with(&["patch", "asts", "demo-asts", "--type", "merge", "-p", in_place_only], None);
    assert!(!bad.ok, "InPlaceOnly with an env change is refused");
    assert!(
        bad.stderr.contains("invalid template modified with InPlaceOnly strategy: replace /containers/0/env/0/value, currently only image update is allowed for InPlaceOnly"),
        "{}",
        bad.stderr
    );
    let no_gate = r#"{"spec":{"template":{"spec":{"readinessGates":null}}}}"#;
    let bad =
        kubectl.run_with(&["patch", "asts", "demo-asts", "--type", "merge", "-p", no_gate], None);
    assert!(
        bad.stderr.contains("spec.template.spec.readinessGates: Invalid value: []v1.PodReadinessGate(nil): must contains InPlaceUpdateReady when podUpdatePolicy is InPlaceIfPossible"),
        "{}",
        bad.stderr
    );
    assert_eq!(
        kubectl.json(&["get", "asts", "demo-asts"])["spec"],
        before,
        "refused changes leave the spec as it was"
    );

    // 6. kubectl scale: the highest ordinal goes.
    kubectl.ok(&["scale", "asts", "demo-asts", "--replicas=2"]);
    wait_for("pods 0 and 2", MINUTE, || {
        (names(&pods(kubectl, "app=guestbook-sts")) == ["demo-asts-0", "demo-asts-2"]).then_some(())
    });
    let described = kubectl.ok(&["describe", "asts", "demo-asts"]);
    for line in [
        "create Pod demo-asts-3 in StatefulSet demo-asts successful",
        "delete Pod demo-asts-1 in StatefulSet demo-asts successful",
        "successfully update pod demo-asts-0 in-place",
    ] {
        assert!(described.contains(line), "{line:?} missing from:\n{described}");
    }
    assert!(described.contains("statefulset-controller"), "{described}");
}

fn start_manager(cluster: &SimCluster, n: usize, extra: &[&str]) -> Proc {
    let mut args = vec![
        "--enable-leader-election=false",
        "--enable-webhook=false",
        "--metrics-addr",
        "0",
        "--health-probe-addr",
        "0",
        "--log",
        "info,kruise_kube=debug",
    ];
    args.extend_from_slice(extra);
    cluster.run_manager(&format!("manager-{n}.log"), &args)
}

fn sts_yaml(name: &str, replicas: i32, policy: &str, image: &str) -> String {
    format!(
        r#"
apiVersion: apps.kruise.io/v1beta1
kind: StatefulSet
metadata:
  name: {name}
spec:
  replicas: {replicas}
  podManagementPolicy: {policy}
  selector:
    matchLabels:
      app: {name}
  template:
    metadata:
      labels:
        app: {name}
    spec:
      containers:
      - name: main
        image: {image}
  updateStrategy:
    rollingUpdate:
      maxUnavailable: {unavailable}
"#,
        unavailable = if policy == "Parallel" { 2 } else { 1 }
    )
}

/// (live pods, pods on `image` that are ready, every live pod's ordinal unique and in
/// `0..replicas`).
fn converged(kubectl: &Kubectl, app: &str, image: &str, replicas: usize) -> bool {
    let p = pods(kubectl, &format!("app={app}"));
    let wanted: Vec<String> = (0..replicas).map(|i| format!("{app}-{i}")).collect();
    let got: Vec<String> = p.keys().cloned().collect();
    got == wanted && p.values().all(|x| x.1 == image && x.3)
}

/// A manager killed with SIGKILL several times during rollouts of a Parallel and an
/// OrderedReady set, with conflicts, 5xx answers and dropped watches injected: each rollout
/// ends with exactly `replicas` pods on ordinals 0..replicas, all updated and ready, and the
/// Parallel set never had more than maxUnavailable pods out.
#[test]
fn asts_manager_killed_mid_rollout_converges() {
    let cluster = SimCluster::start(kruise_sim::Config::default().with_kruise_crds().with_nodes(
        kruise_sim::nodes::NodesConfig::new(3).with_delays(kruise_sim::nodes::kubelet::Delays {
            pull: Duration::from_millis(300),
            start: Duration::from_millis(300),
            stop: Duration::from_millis(200),
            ..Default::default()
        }),
    ));
    let kubectl = &cluster.kubectl;
    let parallel = Arc::new(Mutex::new(Budget::default()));
    start_monitor(cluster.kubeconfig.clone(), "app=par", parallel.clone());
    let mut generation = 0;
    let mut manager = start_manager(&cluster, generation, &[]);
    kubectl.ok_stdin(
        &["apply", "-f", "-"],
        &sts_yaml("par", 6, "Parallel", "registry.example/par:v1"),
    );
    kubectl.ok_stdin(
        &["apply", "-f", "-"],
        &sts_yaml("ord", 3, "OrderedReady", "registry.example/ord:v1"),
    );
    let long = Duration::from_secs(120);
    wait_for("both sets ready", long, || {
        (converged(kubectl, "par", "registry.example/par:v1", 6)
            && converged(kubectl, "ord", "registry.example/ord:v1", 3))
        .then_some(())
    });
    parallel.lock().expect("budget").armed = true;

    for version in ["v2", "v3"] {
        for app in ["par", "ord"] {
            let patch = format!(
                r#"{{"spec":{{"template":{{"spec":{{"containers":[{{"name":"main","image":"registry.example/{app}:{version}"}}]}}}}}}}}"#
            );
            kubectl.ok(&["patch", "asts", app, "--type", "merge", "-p", &patch]);
        }
        // The controller writes its status through `statefulsets/status` (never the set
        // itself), so that is where its 5xx go. The rollout recreates pods and patches none;
        // the new pods' status is patched once each (their readiness gate opened), so that is
        // where the conflicts go.
        let faults = cluster.server.faults();
        let fired = [
            faults.inject(
                Fault::new(FaultAction::Conflict).verb("patch").resource("pods/status").times(3),
            ),
            faults.inject(
                Fault::new(FaultAction::InternalError).verb("create").resource("pods").times(3),
            ),
            faults.inject(
                Fault::new(FaultAction::InternalError).verb("delete").resource("pods").times(2),
            ),
            faults.inject(
                Fault::new(FaultAction::InternalError)
                    .verb("patch")
                    .resource("statefulsets/status")
                    .times(2),
            ),
        ];
        let mut mid_rollout = 0;
        for round in 0..3u64 {
            std::thread::sleep(Duration::from_millis(400 + 350 * round));
            manager.kill();
            if !converged(kubectl, "par", &format!("registry.example/par:{version}"), 6) {
                mid_rollout += 1;
            }
            if round == 1 {
                faults.drop_watches();
            }
            generation += 1;
            manager = start_manager(&cluster, generation, &[]);
        }
        assert!(mid_rollout > 0, "no crash landed mid-rollout");
        wait_for(&format!("rollout to {version}"), long, || {
            (converged(kubectl, "par", &format!("registry.example/par:{version}"), 6)
                && converged(kubectl, "ord", &format!("registry.example/ord:{version}"), 3))
            .then_some(())
        });
        let counts: Vec<usize> = fired.iter().map(|f| f.count()).collect();
        assert!(counts.iter().all(|n| *n > 0), "every fault fired: {counts:?}");
        faults.clear();
    }

    std::thread::sleep(Duration::from_secs(2));
    assert!(converged(kubectl, "par", "registry.example/par:v3", 6));
    assert!(converged(kubectl, "ord", "registry.example/ord:v3", 3));
    let status: Value = wait_for("the status to catch up", MINUTE, || {
        let status = kubectl.json(&["get", "asts", "par"])["status"].clone();
        (status["updatedReadyReplicas"] == 6
            && status["currentRevision"] == status["updateRevision"])
            .then_some(status)
    });
    assert_eq!(status["replicas"], 6, "{status}");
    let b = parallel.lock().expect("budget");
    let least = b.min_available.expect("pod events seen");
    assert!(least >= 4, "only {least} of 6 available at one moment; maxUnavailable is 2");
    assert!(b.max_active <= 6, "{} pods at once", b.max_active);
    drop(manager);
}

/// Started before the CRDs exist, the manager says once that each controller waits, and
/// starts them when the CRDs appear.
#[test]
fn controllers_wait_for_their_crds() {
    let cluster = SimCluster::start(
        kruise_sim::Config::default().with_nodes(kruise_sim::nodes::NodesConfig::new(1)),
    );
    // Every controller is enabled (ImagePullJobGate and ResourceDistributionGate are off by
    // default).
    let manager = start_manager(
        &cluster,
        0,
        &[
            "--crd-check-interval",
            "1s",
            "--feature-gates",
            "ImagePullJobGate=true,ResourceDistributionGate=true",
        ],
    );
    wait_for("the manager to note the missing CRDs", MINUTE, || {
        let log = manager.log_text();
        (log.contains("statefulsets.apps.kruise.io/v1beta1")
            && log.contains("clonesets.apps.kruise.io/v1beta1")
            && log.contains("daemonsets.apps.kruise.io/v1beta1")
            && log.contains("sidecarsets.apps.kruise.io/v1beta1")
            && log.contains("workloadspreads.apps.kruise.io/v1beta1")
            && log.contains("podunavailablebudgets.policy.kruise.io/v1beta1")
            && log.contains("nodeimages.apps.kruise.io/v1beta1")
            && log.contains("imagepulljobs.apps.kruise.io/v1beta1")
            && log.contains("imagelistpulljobs.apps.kruise.io/v1beta1")
            && log.contains("containerrecreaterequests.apps.kruise.io/v1beta1"))
        .then_some(())
    });
    std::thread::sleep(Duration::from_secs(3));
    let log = manager.log_text();
    let told = log.matches("does not serve this resource").count();
    // The controllers of CRD-served kinds (the pod-readiness controller reads only pods) that
    // the gates turn on (not `rollouthistory-controller`: its gate is off).
    let gates = kruise_kube::features::FeatureGates::parse(
        "ImagePullJobGate=true,ResourceDistributionGate=true",
    )
    .expect("known gates");
    let controllers = kruise_kube::controller::registry()
        .iter()
        .filter(|r| r.info.resource.is_some() && r.enabled(&gates))
        .count();
    assert_eq!(told, controllers, "each controller says it once:\n{log}");

    let crds = std::process::Command::new(env!("CARGO_BIN_EXE_kruise-manager"))
        .arg("crds")
        .output()
        .expect("kruise-manager crds");
    let yaml = String::from_utf8(crds.stdout).expect("utf-8");
    cluster.kubectl.ok_stdin(&["apply", "--server-side", "-f", "-"], &yaml);
    wait_for("the statefulset controller to start", MINUTE, || {
        manager
            .log_text()
            .contains("the resource is served now; starting the controller")
            .then_some(())
    });
    cluster.kubectl.ok_stdin(
        &["apply", "-f", "-"],
        &sts_yaml("late", 2, "Parallel", "registry.example/late:v1"),
    );
    wait_for("the set's pods", MINUTE, || {
        converged(&cluster.kubectl, "late", "registry.example/late:v1", 2).then_some(())
    });
}

/// What upstream's manager left (the set, its ControllerRevision under upstream's name, three
/// running pods) is taken over: the revision is recognised by name, nothing is created,
/// deleted, updated or restarted.
#[test]
fn upstream_statefulset_is_taken_over_without_restarting_anything() {
    use serde_json::json;
    let cluster = SimCluster::start(
        kruise_sim::Config::default()
            .with_kruise_crds()
            .with_nodes(kruise_sim::nodes::NodesConfig::new(2)),
    );
    let k = &cluster.kubectl;
    let set = json!({
        "apiVersion": "apps.kruise.io/v1beta1",
        "kind": "StatefulSet",
        "metadata": {"name": "legacy", "namespace": "default"},
        "spec": {
            "replicas": 3,
            "serviceName": "legacy",
            "podManagementPolicy": "Parallel",
            "selector": {"matchLabels": {"app": "nginx"}},
            "template": upstream_template(),
            "updateStrategy": {"type": "RollingUpdate", "rollingUpdate": {"podUpdatePolicy": "InPlaceIfPossible", "maxUnavailable": 1, "partition": 0}}
        }
    });
    k.ok_stdin(&["create", "-f", "-"], &set.to_string());
    let uid = k.ok(&["get", "asts", "legacy", "-o", "jsonpath={.metadata.uid}"]);
    let owner = json!([{
        "apiVersion": "apps.kruise.io/v1beta1", "kind": "StatefulSet", "name": "legacy",
        "uid": uid, "controller": true, "blockOwnerDeletion": true
    }]);
    // The same template data as a CloneSet's revision, so the same hash (FNV-1 over Go's
    // bytes, worked out from upstream's algorithm in kruise-core's revision tests).
    let revision_name = "legacy-656c6d8895";
    let revision = json!({
        "apiVersion": "apps/v1", "kind": "ControllerRevision",
        "metadata": {
            "name": revision_name, "namespace": "default",
            "labels": {"app": "nginx", "controller.kubernetes.io/hash": "656c6d8895"},
            "ownerReferences": owner
        },
        "data": {"spec": {"template": {
            "$patch": "replace",
            "metadata": {"creationTimestamp": null, "labels": {"app": "nginx"}},
            "spec": upstream_template()["spec"].clone()
        }}},
        "revision": 1
    });
    k.ok_stdin(&["create", "-f", "-"], &revision.to_string());
    for ordinal in 0..3 {
        let name = format!("legacy-{ordinal}");
        let mut pod_spec = upstream_template()["spec"].clone();
        pod_spec["hostname"] = json!(name);
        pod_spec["subdomain"] = json!("legacy");
        let pod = json!({
            "apiVersion": "v1", "kind": "Pod",
            "metadata": {
                "name": name, "namespace": "default",
                "labels": {
                    "app": "nginx",
                    "controller-revision-hash": revision_name,
                    "statefulset.kubernetes.io/pod-name": name,
                    "apps.kubernetes.io/pod-index": ordinal.to_string(),
                    "lifecycle.apps.kruise.io/state": "Normal"
                },
                "ownerReferences": owner
            },
            "spec": pod_spec
        });
        k.ok_stdin(&["create", "-f", "-"], &pod.to_string());
    }
    let before = wait_for("the legacy pods running", MINUTE, || {
        let p = pods(k, "app=nginx");
        (p.len() == 3 && p.values().all(|x| x.3)).then_some(p)
    });

    let manager = start_manager(&cluster, 0, &[]);
    wait_for("the set's status from the manager", MINUTE, || {
        let s = k.json(&["get", "asts", "legacy"])["status"].clone();
        (s["observedGeneration"] == 1 && s["readyReplicas"] == 3).then_some(())
    });
    std::thread::sleep(Duration::from_secs(3));
    let status = k.json(&["get", "asts", "legacy"])["status"].clone();
    assert_eq!(status["updateRevision"], revision_name, "the upstream revision is recognised");
    assert_eq!(status["currentRevision"], revision_name, "{status}");
    assert_eq!(status["updatedReplicas"], 3, "{status}");
    assert_eq!(pods(k, "app=nginx"), before, "no pod was replaced, updated or restarted");
    let revisions = k.ok(&["get", "controllerrevisions", "-o", "name"]);
    assert_eq!(revisions.trim(), format!("controllerrevision.apps/{revision_name}"));
    drop(manager);
}

/// A set deleted with `--cascade=orphan` and created again takes back what it left: the same
/// pods (nothing restarted or replaced) and its ControllerRevision, which it adopts rather than
/// writing a second one, as upstream's `adoptOrphanRevisions` does.
#[test]
fn a_set_created_again_adopts_its_orphaned_pods_and_revision() {
    let cluster = SimCluster::start(
        kruise_sim::Config::default()
            .with_kruise_crds()
            .with_nodes(kruise_sim::nodes::NodesConfig::new(2)),
    );
    let k = &cluster.kubectl;
    let manager = start_manager(&cluster, 0, &[]);
    let manifest = sts_yaml("again", 3, "Parallel", "registry.example/again:v1");
    k.ok_stdin(&["apply", "-f", "-"], &manifest);
    let before = wait_for("the set ready", MINUTE, || {
        converged(k, "again", "registry.example/again:v1", 3).then(|| pods(k, "app=again"))
    });
    let revision = k.ok(&["get", "asts", "again", "-o", "jsonpath={.status.updateRevision}"]);
    assert!(revision.starts_with("again-"), "{revision}");

    k.ok(&["delete", "asts", "again", "--cascade=orphan"]);
    let owners = |kind: &str, name: &str| {
        k.ok(&["get", kind, name, "-o", "jsonpath={.metadata.ownerReferences[*].uid}"])
    };
    wait_for("the pods and the revision orphaned", MINUTE, || {
        let orphaned = owners("controllerrevision", &revision).is_empty()
            && (0..3).all(|i| owners("pod", &format!("again-{i}")).is_empty());
        orphaned.then_some(())
    });

    k.ok_stdin(&["apply", "-f", "-"], &manifest);
    let uid = k.ok(&["get", "asts", "again", "-o", "jsonpath={.metadata.uid}"]);
    wait_for("the pods and the revision adopted", MINUTE, || {
        let adopted = owners("controllerrevision", &revision) == uid
            && (0..3).all(|i| owners("pod", &format!("again-{i}")) == uid);
        adopted.then_some(())
    });
    wait_for("the new set's status", MINUTE, || {
        let s = k.json(&["get", "asts", "again"])["status"].clone();
        (s["observedGeneration"] == 1 && s["readyReplicas"] == 3).then_some(())
    });
    std::thread::sleep(Duration::from_secs(2));
    let status = k.json(&["get", "asts", "again"])["status"].clone();
    assert_eq!(status["currentRevision"], revision.as_str(), "{status}");
    assert_eq!(status["updateRevision"], revision.as_str(), "{status}");
    assert_eq!(status["updatedReplicas"], 3, "{status}");
    assert_eq!(pods(k, "app=again"), before, "no pod was replaced, updated or restarted");
    let revisions = k.ok(&["get", "controllerrevisions", "-o", "name"]);
    assert_eq!(revisions.trim(), format!("controllerrevision.apps/{revision}"), "one revision");
    drop(manager);
}

/// With `PreDownloadImageForInPlaceUpdate` on, a partitioned in-place update of an Advanced
/// StatefulSet gets an ImagePullJob for its new image and the revision is marked; once every
/// pod is updated the job goes.
#[test]
fn a_partitioned_in_place_update_pre_downloads_its_image() {
    const SET: &str = r#"
apiVersion: apps.kruise.io/v1beta1
kind: StatefulSet
metadata:
  name: store
spec:
  replicas: 4
  serviceName: store
  podManagementPolicy: Parallel
  selector:
    matchLabels: {app: store}
  template:
    metadata:
      labels: {app: store}
    spec:
      readinessGates:
      - conditionType: InPlaceUpdateReady
      containers:
      - name: main
        image: registry.example/store:v1
  updateStrategy:
    type: RollingUpdate
    rollingUpdate:
      podUpdatePolicy: InPlaceIfPossible
      maxUnavailable: 1
      partition: 2
"#;
    let pg = Playground::start(2, &["--feature-gates", "PreDownloadImageForInPlaceUpdate=true"]);
    let k = &pg.kubectl;
    k.ok_stdin(&["apply", "-f", "-"], SET);
    let status = || {
        k.json(&["get", "statefulsets.v1beta1.apps.kruise.io", "store", "-o", "json"])["status"]
            .clone()
    };
    wait_for("4 ready pods", Duration::from_secs(60), || {
        let st = status();
        (st["readyReplicas"] == 4 && st["updatedReplicas"] == 4).then_some(())
    });
    let jobs = || k.json(&["get", "imagepulljobs.apps.kruise.io", "-o", "json"])["items"].clone();
    assert_eq!(jobs(), serde_json::json!([]), "no job for the first revision");

    let patch = r#"{"spec": {"template": {"spec": {"containers": [{"name": "main", "image": "registry.example/store:v2"}]}}}}"#;
    k.ok(&["patch", "statefulsets.v1beta1.apps.kruise.io", "store", "--type=merge", "-p", patch]);
    let job = wait_for("an ImagePullJob for v2", Duration::from_secs(60), || {
        jobs()
            .as_array()?
            .iter()
            .find(|j| j["spec"]["image"] == "registry.example/store:v2")
            .cloned()
    });
    let name = job["metadata"]["name"].as_str().unwrap_or_default().to_owned();
    let revision = name.strip_suffix("-main").expect("named <revision>-<container>").to_owned();
    let owner = &job["metadata"]["ownerReferences"][0];
    assert_eq!((&owner["kind"], &owner["name"]), (&"StatefulSet".into(), &"store".into()));
    wait_for("the revision marked", Duration::from_secs(30), || {
        let rev = k.json(&["get", "controllerrevision", &revision, "-o", "json"]);
        (rev["metadata"]["labels"]["apps.kruise.io/pre-predownload-created"] == "true")
            .then_some(())
    });

    let patch = r#"{"spec": {"updateStrategy": {"rollingUpdate": {"partition": 0}}}}"#;
    k.ok(&["patch", "statefulsets.v1beta1.apps.kruise.io", "store", "--type=merge", "-p", patch]);
    wait_for("the job deleted after the rollout", Duration::from_secs(120), || {
        let gone = !jobs().as_array()?.iter().any(|j| j["metadata"]["name"] == name.as_str());
        gone.then_some(())
    });
}
