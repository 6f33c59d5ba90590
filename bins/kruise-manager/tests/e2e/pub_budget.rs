//! PodUnavailableBudget end to end: the manager's controller, the pod mutating step and the
//! pod validating webhook against kruise-sim with simulated nodes, driven by kubectl.

use crate::common;

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use common::{Kubectl, Proc, SimCluster, cloneset_yaml, wait_for};
use serde_json::{Value, json};

pub(crate) fn cluster() -> SimCluster {
    cluster_with_nodes(3)
}

/// kruise-sim with the Kruise CRDs, `nodes` simulated nodes (`sim-node-<i>`, zones a/b/c by
/// `i % 3`), the built-in controllers, and the `kruise-system` namespace.
pub(crate) fn cluster_with_nodes(nodes: usize) -> SimCluster {
    let cluster = SimCluster::start(
        kruise_sim::Config::default()
            .with_kruise_crds()
            .with_nodes(kruise_sim::nodes::NodesConfig::new(nodes))
            .with_controllers(),
    );
    let namespace =
        json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "kruise-system"}});
    let out = cluster.kubectl.run_with(&["create", "-f", "-"], Some(&namespace.to_string()));
    assert!(out.ok || out.stderr.contains("AlreadyExists"), "{}", out.stderr);
    cluster
}

/// The manager, and the port of its metrics.
pub(crate) fn start_manager(cluster: &SimCluster, extra: &[&str]) -> (Proc, u16) {
    let metrics_port = crate::leader_failover::free_port();
    let metrics_addr = format!("127.0.0.1:{metrics_port}");
    let mut args = vec![
        "--enable-leader-election=false",
        "--metrics-addr",
        &metrics_addr,
        "--health-probe-addr",
        "0",
        "--webhook-host",
        "127.0.0.1",
        "--webhook-port",
        "0",
    ];
    args.extend(extra);
    let manager = cluster.run_manager("manager.log", &args);
    crate::common::wait_for_validating_webhook(&cluster.kubectl, "vpod.kb.io");
    (manager, metrics_port)
}

fn budget(name: &str, spec: Value) -> String {
    json!({"apiVersion": "policy.kruise.io/v1beta1", "kind": "PodUnavailableBudget",
        "metadata": {"name": name}, "spec": spec})
    .to_string()
}

fn status(k: &Kubectl, name: &str) -> Value {
    k.json(&["get", "podunavailablebudget", name, "-o", "json"])["status"].clone()
}

fn ready_pods(k: &Kubectl, selector: &str) -> Vec<Value> {
    let list = k.json(&["get", "pods", "-l", selector, "-o", "json"]);
    list["items"]
        .as_array()
        .cloned()
        .unwrap_or_default()
        .into_iter()
        .filter(|p| p["metadata"]["deletionTimestamp"].is_null())
        .filter(|p| {
            p["status"]["conditions"]
                .as_array()
                .is_some_and(|c| c.iter().any(|c| c["type"] == "Ready" && c["status"] == "True"))
        })
        .collect()
}

#[test]
fn a_budget_lets_one_of_two_deletions_through_and_keeps_the_rollout_to_one_at_a_time() {
    let cluster = cluster();
    let k = &cluster.kubectl;
    let (_manager, metrics_port) = start_manager(&cluster, &[]);
    k.ok_stdin(&["apply", "-f", "-"], &cloneset_yaml("web", 5, ""));
    k.ok_stdin(
        &["apply", "-f", "-"],
        &budget(
            "web-pub",
            json!({"selector": {"matchLabels": {"app": "web"}}, "maxUnavailable": 1}),
        ),
    );
    wait_for("the budget's status", Duration::from_secs(60), || {
        let s = status(k, "web-pub");
        let pods = ready_pods(k, "app=web");
        let marked = pods.iter().all(|p| {
            p["metadata"]["labels"]["pub.kruise.io/protected"] == "true"
                && p["metadata"]["annotations"]["pub.kruise.io/related-pub"] == "web-pub"
        });
        (s["unavailableAllowed"] == 1 && s["desiredAvailable"] == 4 && pods.len() == 5 && marked)
            .then_some(())
    });
    let s = status(k, "web-pub");
    assert_eq!((s["totalReplicas"].clone(), s["currentAvailable"].clone()), (json!(5), json!(5)));

    // Two pods in one command: the first goes, the second is refused with the budget's word.
    let pods = ready_pods(k, "app=web");
    let names: Vec<&str> =
        pods.iter().filter_map(|p| p["metadata"]["name"].as_str()).take(2).collect();
    let out = k.run_with(&["delete", "pod", names[0], names[1], "--wait=false"], None);
    assert!(!out.ok, "the second deletion is refused: {}", out.stdout);
    assert!(out.stdout.contains(&format!("pod \"{}\" deleted", names[0])), "{}", out.stdout);
    assert!(
        out.stderr.contains(r#"admission webhook "vpod.kb.io" denied the request"#)
            && out.stderr.contains("web-pub"),
        "{}",
        out.stderr
    );
    // The admitted deletion was reserved in `disruptedPods`; once the controller sees the pod
    // terminating it releases the entry (as upstream drops entries of inactive pods).
    wait_for("the reservation released", Duration::from_secs(30), || {
        status(k, "web-pub")["disruptedPods"].get(names[0]).is_none().then_some(())
    });
    // The refusal is a Warning Event on the pod and a count in upstream's metric.
    wait_for("the PubPreventPodDeletion event", Duration::from_secs(20), || {
        let events = k.json(&["get", "events", "-o", "json"]);
        events["items"].as_array()?.iter().find(|e| {
            e["reason"] == "PubPreventPodDeletion"
                && e["type"] == "Warning"
                && e["involvedObject"]["name"] == names[1]
        })?;
        Some(())
    });
    let (code, text) =
        crate::leader_failover::http_get(metrics_port, "/metrics").expect("metrics answer");
    assert_eq!(code, 200);
    assert!(
        text.lines().any(|l| l.starts_with("pod_unavailable_budget_total{")
            && l.contains("kind_namespace_name=\"CloneSet_default_web\"")
            && l.ends_with(" 1")),
        "{text}"
    );

    // An image update still completes, one pod at a time.
    wait_for("five ready pods again", Duration::from_secs(60), || {
        (ready_pods(k, "app=web").len() == 5 && status(k, "web-pub")["unavailableAllowed"] == 1)
            .then_some(())
    });
    k.ok(&["patch", "cloneset", "web", "--type=merge", "-p",
        r#"{"spec": {"template": {"spec": {"containers": [{"name": "main", "image": "registry.example/web:v2"}]}}}}"#]);
    let mut fewest = 5;
    wait_for("the rollout completes", Duration::from_secs(120), || {
        let pods = ready_pods(k, "app=web");
        fewest = fewest.min(pods.len());
        let updated = pods
            .iter()
            .filter(|p| p["spec"]["containers"][0]["image"] == "registry.example/web:v2")
            .count();
        (updated == 5).then_some(())
    });
    assert!(fewest >= 4, "at most one pod was unavailable at a time ({fewest} ready at least)");
}

#[test]
fn a_hundred_concurrent_deletions_against_a_budget_of_ten_admit_exactly_ten() {
    let cluster = cluster();
    let k = &cluster.kubectl;
    let (_manager, _) = start_manager(&cluster, &[]);
    let stress = budget(
        "stress",
        json!({"selector": {"matchLabels": {"app": "stress"}}, "maxUnavailable": 10,
            "protectTotalReplicas": 100}),
    );
    // The manager may be updating the CRDs it serves (their conversion settings) just now.
    wait_for("the budget applied", Duration::from_secs(30), || {
        k.run_with(&["apply", "-f", "-"], Some(&stress)).ok.then_some(())
    });
    let pods: Vec<Value> = (0..100)
        .map(|i| {
            json!({"apiVersion": "v1", "kind": "Pod",
                "metadata": {"name": format!("s-{i}"), "labels": {"app": "stress"}},
                "spec": {"containers": [{"name": "main", "image": "registry.example/s:v1"}]}})
        })
        .collect();
    let documents: Vec<String> = pods.iter().map(Value::to_string).collect();
    k.ok_stdin(&["apply", "-f", "-"], &documents.join("\n"));
    wait_for("100 ready, covered pods and the budget's status", Duration::from_secs(90), || {
        let ready = ready_pods(k, "app=stress");
        let covered =
            ready.iter().all(|p| p["metadata"]["labels"]["pub.kruise.io/protected"] == "true");
        (ready.len() == 100 && covered && status(k, "stress")["unavailableAllowed"] == 10)
            .then_some(())
    });
    // A hundred DELETEs at once, from one client (a hundred kubectl processes would measure
    // process start-up on a small machine rather than the webhook).
    let runtime = tokio::runtime::Runtime::new().expect("runtime");
    let (admitted, refused) = runtime.block_on(async {
        let kubeconfig =
            kube::config::Kubeconfig::read_from(&cluster.kubeconfig).expect("kubeconfig");
        let config = kube::Config::from_custom_kubeconfig(kubeconfig, &Default::default())
            .await
            .expect("config");
        let client = kube::Client::try_from(config).expect("client");
        let pods: kube::Api<k8s_openapi::api::core::v1::Pod> =
            kube::Api::default_namespaced(client);
        let results = futures::future::join_all((0..100).map(|i| {
            let pods = pods.clone();
            async move { pods.delete(&format!("s-{i}"), &Default::default()).await }
        }))
        .await;
        let mut refused = 0;
        let mut admitted = 0;
        for result in results {
            match result {
                Ok(_) => admitted += 1,
                Err(kube::Error::Api(e)) => {
                    assert!(e.message.contains("stress"), "{e:?}");
                    refused += 1;
                }
                Err(e) => panic!("{e}"),
            }
        }
        (AtomicUsize::new(admitted), AtomicUsize::new(refused))
    });
    assert_eq!(admitted.load(Ordering::Relaxed), 10);
    assert_eq!(refused.load(Ordering::Relaxed), 90);
    // The ten reservations are released once the deletions are seen, and ninety pods remain.
    wait_for("the reservations released", Duration::from_secs(60), || {
        let s = status(k, "stress");
        let released = s["disruptedPods"].as_object().is_none_or(|m| m.is_empty());
        (released
            && k.json(&["get", "pods", "-l", "app=stress", "-o", "json"])["items"]
                .as_array()
                .is_some_and(|items| items.len() == 90))
        .then_some(())
    });
}

#[test]
fn kubectl_drain_keeps_to_a_budget_on_a_deployment() {
    let cluster = cluster();
    let k = &cluster.kubectl;
    let (_manager, _) = start_manager(&cluster, &[]);
    k.ok(&["create", "deployment", "web", "--image=nginx:1", "--replicas=4"]);
    k.ok(&["rollout", "status", "deployment/web", "--timeout=60s"]);
    // A budget on the Deployment through its scale subresource (not a selector).
    let on_target = budget(
        "web-pub",
        json!({"targetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web"},
            "maxUnavailable": 1}),
    );
    wait_for("the budget applied", Duration::from_secs(30), || {
        k.run_with(&["apply", "-f", "-"], Some(&on_target)).ok.then_some(())
    });
    wait_for("the budget covers the Deployment's pods", Duration::from_secs(60), || {
        let s = status(k, "web-pub");
        let pods = ready_pods(k, "app=web");
        let covered =
            pods.iter().all(|p| p["metadata"]["labels"]["pub.kruise.io/protected"] == "true");
        (s["totalReplicas"] == 4 && s["unavailableAllowed"] == 1 && covered).then_some(())
    });
    let mut by_node: std::collections::BTreeMap<String, usize> = Default::default();
    for pod in ready_pods(k, "app=web") {
        *by_node
            .entry(pod["spec"]["nodeName"].as_str().unwrap_or_default().to_owned())
            .or_default() += 1;
    }
    let (node, count) = by_node.into_iter().max_by_key(|(_, c)| *c).unwrap_or_default();
    assert!(count >= 2, "a node with two pods to drain");

    let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let lowest = Arc::new(AtomicUsize::new(usize::MAX));
    std::thread::scope(|scope| {
        let (stop_watch, lowest_seen) = (stop.clone(), lowest.clone());
        scope.spawn(move || {
            while !stop_watch.load(Ordering::Relaxed) {
                lowest_seen.fetch_min(ready_pods(k, "app=web").len(), Ordering::Relaxed);
            }
        });
        // Evictions the budget refuses answer 429, which drain waits on and retries.
        let out = k.run_with(&["drain", &node, "--ignore-daemonsets", "--timeout=120s"], None);
        stop.store(true, Ordering::Relaxed);
        assert!(out.ok && out.stdout.contains("drained"), "{}\n{}", out.stdout, out.stderr);
        // At least one eviction was refused by the budget and retried.
        assert!(
            out.stderr.contains("will retry") && out.stderr.contains("web-pub"),
            "{}\n{}",
            out.stdout,
            out.stderr
        );
    });
    let lowest = lowest.load(Ordering::Relaxed);
    assert!(lowest >= 3, "never more than one pod unavailable ({lowest} ready at least)");
}

#[test]
fn with_the_update_gate_an_image_change_is_refused_and_a_label_change_is_not() {
    let cluster = cluster();
    let k = &cluster.kubectl;
    let (_manager, _) =
        start_manager(&cluster, &["--feature-gates", "PodUnavailableBudgetUpdateGate=true"]);
    k.ok_stdin(&["apply", "-f", "-"], &cloneset_yaml("web", 2, ""));
    k.ok_stdin(
        &["apply", "-f", "-"],
        &budget(
            "web-pub",
            json!({"selector": {"matchLabels": {"app": "web"}}, "maxUnavailable": 0}),
        ),
    );
    wait_for("a budget with no room over two ready pods", Duration::from_secs(60), || {
        let s = status(k, "web-pub");
        let pods = ready_pods(k, "app=web");
        let marked = pods
            .iter()
            .all(|p| p["metadata"]["annotations"]["pub.kruise.io/related-pub"] == "web-pub");
        (s["desiredAvailable"] == 2 && s["unavailableAllowed"] == 0 && pods.len() == 2 && marked)
            .then_some(())
    });
    let pod = ready_pods(k, "app=web")[0]["metadata"]["name"].as_str().expect("a name").to_owned();
    // A label change leaves the pod available: no budget is spent on it.
    k.ok(&["label", "pod", &pod, "touched=yes"]);
    // An in-place image change would take it down: refused with the budget's word.
    let image =
        r#"{"spec": {"containers": [{"name": "main", "image": "registry.example/web:v2"}]}}"#;
    let out = k.run_with(&["patch", "pod", &pod, "-p", image], None);
    assert!(!out.ok, "the image change is refused: {}", out.stdout);
    assert!(
        out.stderr.contains(r#"admission webhook "vpod.kb.io" denied the request"#)
            && out.stderr.contains("web-pub"),
        "{}",
        out.stderr
    );
    let now = k.json(&["get", "pod", &pod, "-o", "json"]);
    assert_eq!(now["spec"]["containers"][0]["image"], json!("registry.example/web:v1"), "{now}");
    assert_eq!(now["metadata"]["labels"]["touched"], "yes");
}

/// An Advanced StatefulSet updating in place, allowed three pods unavailable at once, under a
/// budget allowing one: with the update gate, it asks the pod's budget before it marks the pod
/// not ready for its update (beyond upstream, where only the CloneSet asks and the others rely
/// on the webhook, which sees the image change after the pod is already down), so a watch of
/// the pods never sees more than one down.
#[test]
fn with_the_update_gate_an_advanced_statefulset_updates_in_place_within_its_budget() {
    use common::{Budget, start_monitor};
    let cluster = cluster();
    let k = &cluster.kubectl;
    let (_manager, _) =
        start_manager(&cluster, &["--feature-gates", "PodUnavailableBudgetUpdateGate=true"]);
    let sts = |image: &str| {
        format!(
            r#"apiVersion: apps.kruise.io/v1beta1
kind: StatefulSet
metadata: {{name: sts}}
spec:
  replicas: 4
  podManagementPolicy: Parallel
  selector: {{matchLabels: {{app: sts}}}}
  updateStrategy:
    type: RollingUpdate
    rollingUpdate: {{maxUnavailable: 3, podUpdatePolicy: InPlaceIfPossible}}
  template:
    metadata: {{labels: {{app: sts}}}}
    spec:
      readinessGates: [{{conditionType: InPlaceUpdateReady}}]
      containers: [{{name: main, image: "{image}"}}]
"#
        )
    };
    k.ok_stdin(&["apply", "-f", "-"], &sts("registry.example/sts:v1"));
    let spec = json!({"selector": {"matchLabels": {"app": "sts"}}, "maxUnavailable": 1});
    k.ok_stdin(&["apply", "-f", "-"], &budget("sts-pub", spec));
    // The pods were created before the budget: each is covered once the budget's controller
    // has named it in the pod (until then neither the controller's question nor the webhook
    // concerns it, as upstream's).
    wait_for("four ready pods, named by their budget", Duration::from_secs(90), || {
        let pods = ready_pods(k, "app=sts");
        let named = pods
            .iter()
            .all(|p| p["metadata"]["annotations"]["pub.kruise.io/related-pub"] == "sts-pub");
        (pods.len() == 4 && named && status(k, "sts-pub")["desiredAvailable"] == 3).then_some(())
    });
    let watched = Arc::new(std::sync::Mutex::new(Budget::default()));
    start_monitor(cluster.kubeconfig.clone(), "app=sts", watched.clone());
    std::thread::sleep(Duration::from_secs(2));
    watched.lock().expect("budget").armed = true;
    k.ok_stdin(&["apply", "-f", "-"], &sts("registry.example/sts:v2"));
    wait_for("every pod updated and ready", Duration::from_secs(120), || {
        let pods = ready_pods(k, "app=sts");
        let updated =
            pods.iter().all(|p| p["spec"]["containers"][0]["image"] == "registry.example/sts:v2");
        (pods.len() == 4 && updated).then_some(())
    });
    let fewest = watched.lock().expect("budget").min_available;
    assert_eq!(fewest, Some(3), "fewest available pods during the update");
}
