//! The CloneSet manual's walk-through on `kruise-manager playground`, driven by the real
//! kubectl: scale out, in-place update, partition, podsToDelete, paused, kubectl scale.
//! A kube-rs watcher checks the update budget on every pod event throughout.

use crate::common;

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use common::{Budget, Playground, start_monitor, wait_for};
use serde_json::Value;

const DEMO: &str = r#"
apiVersion: apps.kruise.io/v1alpha1
kind: CloneSet
metadata:
  name: demo-clone
spec:
  replicas: 5
  selector:
    matchLabels:
      app: guestbook
  template:
    metadata:
      labels:
        app: guestbook
    spec:
      containers:
      - name: guestbook
        image: openkruise/guestbook:v1
        env:
        - name: test
          value: foo
  updateStrategy:
    type: InPlaceIfPossible
    maxUnavailable: 20%
"#;

/// name -> (uid, image, restartCount, ready) of the demo's live pods.
fn pods(pg: &Playground) -> BTreeMap<String, (String, String, i64, bool)> {
    common::pod_rows(&pg.kubectl, "app=guestbook")
}

fn status(pg: &Playground) -> Value {
    pg.kubectl.json(&["get", "clonesets.v1beta1.apps.kruise.io", "demo-clone"])["status"].clone()
}

fn set_image(pg: &Playground, image: &str) {
    let patch = format!(
        r#"{{"spec":{{"template":{{"spec":{{"containers":[{{"name":"guestbook","image":"{image}","env":[{{"name":"test","value":"foo"}}]}}]}}}}}}}}"#
    );
    pg.kubectl.ok(&["patch", "clone", "demo-clone", "--type", "merge", "-p", &patch]);
}

fn patch_v1beta1(pg: &Playground, patch: &str) {
    pg.kubectl.ok(&[
        "patch",
        "clonesets.v1beta1.apps.kruise.io",
        "demo-clone",
        "--type",
        "merge",
        "-p",
        patch,
    ]);
}

fn count_image(pods: &BTreeMap<String, (String, String, i64, bool)>, image: &str) -> usize {
    pods.values().filter(|p| p.1 == image).count()
}

const MINUTE: Duration = Duration::from_secs(60);

#[test]
fn demo_clone_walkthrough() {
    let pg = Playground::start(3, &[]);
    let budget = Arc::new(Mutex::new(Budget::default()));
    start_monitor(pg.kubectl.kubeconfig.clone(), "app=guestbook", budget.clone());

    // 1. Five Running and Ready pods.
    pg.kubectl.ok_stdin(&["apply", "-f", "-"], DEMO);
    let initial = wait_for("5 ready pods", MINUTE, || {
        let p = pods(&pg);
        (p.len() == 5 && p.values().all(|x| x.3) && status(&pg)["readyReplicas"] == 5).then_some(p)
    });
    let phases = pg.kubectl.ok(&[
        "get",
        "pods",
        "-l",
        "app=guestbook",
        "-o",
        "jsonpath={.items[*].status.phase}",
    ]);
    assert_eq!(phases.split_whitespace().filter(|p| *p == "Running").count(), 5, "{phases}");
    // The simulated scheduler spreads pods that request nothing, as kube-scheduler does.
    let placed = pg.kubectl.ok(&[
        "get",
        "pods",
        "-l",
        "app=guestbook",
        "-o",
        "jsonpath={.items[*].spec.nodeName}",
    ]);
    let mut per_node: BTreeMap<&str, usize> = BTreeMap::new();
    for node in placed.split_whitespace() {
        *per_node.entry(node).or_default() += 1;
    }
    assert_eq!(per_node.len(), 3, "5 pods over the 3 nodes: {per_node:?}");
    assert!(per_node.values().all(|n| *n <= 2), "5 pods over the 3 nodes: {per_node:?}");

    // 2. Printer columns.
    let table = pg.kubectl.ok(&["get", "clone", "demo-clone"]);
    let header: Vec<&str> = table.lines().next().expect("header").split_whitespace().collect();
    for column in ["DESIRED", "UPDATED", "UPDATED_READY", "READY", "TOTAL"] {
        assert!(header.contains(&column), "{column} missing from {header:?}");
    }
    let row: Vec<&str> = table.lines().nth(1).expect("row").split_whitespace().collect();
    let at = |c: &str| row[header.iter().position(|h| *h == c).expect("column")];
    assert_eq!((at("DESIRED"), at("READY"), at("TOTAL")), ("5", "5", "5"), "{table}");

    // 3. In-place image update: same names and UIDs, one restart each, at most one
    // unavailable pod at a time (maxUnavailable 20% of 5).
    budget.lock().expect("budget").armed = true;
    set_image(&pg, "openkruise/guestbook:v2");
    let updated = wait_for("all pods on v2 and ready", MINUTE, || {
        let p = pods(&pg);
        let s = status(&pg);
        (p.len() == 5
            && count_image(&p, "openkruise/guestbook:v2") == 5
            && p.values().all(|x| x.3)
            && s["updatedReadyReplicas"] == 5)
            .then_some(p)
    });
    let uids = |p: &BTreeMap<String, (String, String, i64, bool)>| {
        p.iter().map(|(n, x)| (n.clone(), x.0.clone())).collect::<Vec<_>>()
    };
    assert_eq!(uids(&updated), uids(&initial), "in-place update must keep pods");
    assert!(updated.values().all(|x| x.2 == 1), "restartCount 1 each: {updated:?}");
    {
        let b = budget.lock().expect("budget");
        let least = b.min_available.expect("pod events seen during the update");
        assert!(least >= 4, "only {least} pods available at one moment; maxUnavailable is 1");
        assert!(b.max_active <= 5, "{} pods at once with maxSurge 0", b.max_active);
    }

    // 4. partition 3 of 5: the update stops after 2 pods.
    patch_v1beta1(&pg, r#"{"spec":{"updateStrategy":{"rollingUpdate":{"partition":3}}}}"#);
    set_image(&pg, "openkruise/guestbook:v3");
    wait_for("2 pods on v3", MINUTE, || {
        let s = status(&pg);
        (s["updatedReplicas"] == 2 && s["updatedReadyReplicas"] == 2).then_some(())
    });
    std::thread::sleep(Duration::from_secs(3));
    let p = pods(&pg);
    assert_eq!(count_image(&p, "openkruise/guestbook:v3"), 2, "partition 3 holds: {p:?}");
    assert_eq!(count_image(&p, "openkruise/guestbook:v2"), 3, "{p:?}");

    // 5. podsToDelete removes exactly the named pod; a new one replaces it.
    let victim = p.keys().next().expect("a pod").clone();
    let before: Vec<String> = p.keys().cloned().collect();
    patch_v1beta1(
        &pg,
        &format!(r#"{{"spec":{{"scaleStrategy":{{"podsToDelete":["{victim}"]}}}}}}"#),
    );
    let after = wait_for("the named pod replaced", MINUTE, || {
        let p = pods(&pg);
        (p.len() == 5 && !p.contains_key(&victim) && p.values().all(|x| x.3)).then_some(p)
    });
    let kept: Vec<&String> = before.iter().filter(|n| **n != victim).collect();
    for name in &kept {
        assert!(after.contains_key(*name), "{name} should not have been deleted");
    }

    // 6. paused: nothing more is updated.
    patch_v1beta1(
        &pg,
        r#"{"spec":{"updateStrategy":{"rollingUpdate":{"partition":0,"paused":true}}}}"#,
    );
    set_image(&pg, "openkruise/guestbook:v4");
    std::thread::sleep(Duration::from_secs(4));
    let p = pods(&pg);
    assert_eq!(count_image(&p, "openkruise/guestbook:v4"), 0, "paused: {p:?}");
    patch_v1beta1(&pg, r#"{"spec":{"updateStrategy":{"rollingUpdate":{"paused":false}}}}"#);
    wait_for("all pods on v4 after unpausing", MINUTE, || {
        let p = pods(&pg);
        (count_image(&p, "openkruise/guestbook:v4") == 5 && p.values().all(|x| x.3)).then_some(())
    });

    // 7. kubectl scale through the scale subresource.
    pg.kubectl.ok(&["scale", "clone", "demo-clone", "--replicas=3"]);
    wait_for("3 pods after scaling in", MINUTE, || {
        let p = pods(&pg);
        (p.len() == 3 && status(&pg)["replicas"] == 3).then_some(())
    });
    let selector = status(&pg)["labelSelector"].clone();
    assert_eq!(selector, "app=guestbook", "HPA reads status.labelSelector");
    pg.kubectl.ok(&["scale", "clone", "demo-clone", "--replicas=6"]);
    wait_for("6 ready pods after scaling out", MINUTE, || {
        let p = pods(&pg);
        (p.len() == 6 && p.values().all(|x| x.3)).then_some(())
    });

    // Events were recorded for the CloneSet.
    let events = pg.kubectl.json(&["get", "events"]);
    let reasons: Vec<&str> = events["items"]
        .as_array()
        .expect("items")
        .iter()
        .filter_map(|e| e["reason"].as_str())
        .collect();
    for reason in ["SuccessfulCreate", "SuccessfulUpdatePodInPlace", "SuccessfulDelete"] {
        assert!(reasons.contains(&reason), "no {reason} Event in {reasons:?}");
    }
    // They are events.k8s.io/v1 Events (one store with core/v1), reported by the controller
    // about the CloneSet.
    let events = pg.kubectl.json(&["get", "events.v1.events.k8s.io"]);
    let ours: Vec<&Value> = events["items"]
        .as_array()
        .expect("items")
        .iter()
        .filter(|e| e["reportingController"] == "cloneset-controller")
        .collect();
    assert!(!ours.is_empty(), "no Event from cloneset-controller in {events}");
    for e in &ours {
        assert_eq!(e["regarding"]["kind"], "CloneSet", "{e}");
        assert_eq!(e["regarding"]["name"], "demo-clone", "{e}");
        assert!(e["eventTime"].is_string() && e["note"].is_string(), "{e}");
    }
    let described = pg.kubectl.ok(&["describe", "clone", "demo-clone"]);
    let events_section = described.split("Events:").nth(1).unwrap_or_default();
    for reason in ["SuccessfulCreate", "SuccessfulUpdatePodInPlace", "SuccessfulDelete"] {
        assert!(events_section.contains(reason), "describe lacks {reason}:\n{described}");
    }
}

/// The playground runs the cluster's built-in controllers too: a Deployment gets its pods, as
/// on a real cluster.
#[test]
fn a_deployment_on_the_playground_gets_ready_pods() {
    let pg = Playground::start(2, &[]);
    pg.kubectl.ok(&["create", "deployment", "web", "--image=nginx:1.27", "--replicas=2"]);
    let out = pg.kubectl.ok(&["rollout", "status", "deployment/web", "--timeout=60s"]);
    assert!(out.contains("deployment \"web\" successfully rolled out"), "{out}");
    let ready =
        pg.kubectl.ok(&["get", "deployment", "web", "-o", "jsonpath={.status.readyReplicas}"]);
    assert_eq!(ready, "2");
}
