//! The built-in ReplicaSet controller, driven with the real kubectl: pods from the template,
//! `kubectl scale` both ways (the scale-in order honours `pod-deletion-cost`), a deleted pod
//! replaced, adoption of a matching orphan and release of a relabelled pod, and the status.

use crate::common;

use common::Env;
use serde_json::Value;
use std::time::Duration;

fn env() -> Env {
    Env::with_controllers(Duration::from_millis(50))
}

fn eventually<T>(env: &Env, what: &str, f: impl FnMut() -> Option<T>) -> T {
    env.eventually(what, "pods,rs", f)
}

const RS: &str = r#"
apiVersion: apps/v1
kind: ReplicaSet
metadata:
  name: web
spec:
  replicas: 3
  selector:
    matchLabels:
      app: web
  template:
    metadata:
      labels:
        app: web
        tier: front
    spec:
      containers:
      - name: main
        image: nginx:1.27
"#;

/// The live pods of the set, by name.
fn live_pods(env: &Env) -> Vec<Value> {
    let list = env.json(&["get", "pods", "-l", "app=web", "-o", "json"]);
    list["items"]
        .as_array()
        .cloned()
        .unwrap_or_default()
        .into_iter()
        .filter(|p| p["metadata"]["deletionTimestamp"].is_null())
        .collect()
}

fn name(pod: &Value) -> String {
    pod["metadata"]["name"].as_str().unwrap_or_default().to_owned()
}

fn ready(pod: &Value) -> bool {
    pod["status"]["conditions"]
        .as_array()
        .is_some_and(|c| c.iter().any(|c| c["type"] == "Ready" && c["status"] == "True"))
}

fn status(env: &Env) -> Value {
    env.json(&["get", "rs", "web", "-o", "json"])["status"].clone()
}

fn settled(env: &Env, replicas: i64) -> Option<Vec<Value>> {
    let pods = live_pods(env);
    let s = status(env);
    let done = pods.len() as i64 == replicas
        && pods.iter().all(ready)
        && s["replicas"] == replicas
        && s["readyReplicas"].as_i64().unwrap_or(0) == replicas
        && s["availableReplicas"].as_i64().unwrap_or(0) == replicas
        && s["observedGeneration"]
            == env.json(&["get", "rs", "web", "-o", "json"])["metadata"]["generation"];
    done.then_some(pods)
}

#[test]
fn a_replicaset_keeps_its_replicas_and_scales_in_by_deletion_cost() {
    let env = env();
    env.ok_stdin(&["apply", "-f", "-"], RS);
    let pods = eventually(&env, "3 ready pods", || settled(&env, 3));
    let uid = env.ok(&["get", "rs", "web", "-o", "jsonpath={.metadata.uid}"]);
    for pod in &pods {
        assert!(
            name(pod).starts_with("web-") && name(pod).len() == "web-".len() + 5,
            "{}",
            name(pod)
        );
        assert_eq!(pod["metadata"]["labels"]["tier"], "front");
        let owner = &pod["metadata"]["ownerReferences"][0];
        assert_eq!(
            (owner["kind"].as_str(), owner["uid"].as_str()),
            (Some("ReplicaSet"), Some(uid.as_str()))
        );
        assert_eq!(owner["controller"], true);
    }
    let s = status(&env);
    assert_eq!(s["fullyLabeledReplicas"], 3, "{s}");

    // A deleted pod is replaced.
    let first = name(&pods[0]);
    env.ok(&["delete", "pod", &first, "--wait=false"]);
    let replaced = eventually(&env, "the deleted pod replaced", || {
        settled(&env, 3).filter(|p| p.iter().all(|p| name(p) != first))
    });

    // Scale-in removes the pods with the lowest deletion cost first.
    let mut names: Vec<String> = replaced.iter().map(name).collect();
    names.sort();
    env.ok(&["annotate", "pod", &names[0], "controller.kubernetes.io/pod-deletion-cost=100"]);
    env.ok(&["annotate", "pod", &names[2], "controller.kubernetes.io/pod-deletion-cost=-5"]);
    env.ok(&["scale", "rs", "web", "--replicas=1"]);
    let kept = eventually(&env, "one pod left", || settled(&env, 1));
    assert_eq!(name(&kept[0]), names[0], "the costliest pod is kept");

    // Scale-out again.
    env.ok(&["scale", "rs", "web", "--replicas=4"]);
    eventually(&env, "4 ready pods", || settled(&env, 4));
}

#[test]
fn a_replicaset_adopts_matching_orphans_and_releases_relabelled_pods() {
    let env = env();
    // An orphan that matches the selector is there first: the set adopts it and creates only 2.
    env.ok(&["run", "stray", "--image=nginx:1.27", "--labels=app=web"]);
    env.ok_stdin(&["apply", "-f", "-"], RS);
    let pods = eventually(&env, "3 ready pods", || settled(&env, 3));
    let uid = env.ok(&["get", "rs", "web", "-o", "jsonpath={.metadata.uid}"]);
    assert!(pods.iter().any(|p| name(p) == "stray"), "the orphan is one of the three");
    let owner =
        env.ok(&["get", "pod", "stray", "-o", "jsonpath={.metadata.ownerReferences[0].uid}"]);
    assert_eq!(owner, uid);
    let s = status(&env);
    assert_eq!(s["fullyLabeledReplicas"], 2, "the orphan lacks the template's tier label: {s}");

    // A pod relabelled out of the selector is released and replaced.
    env.ok(&["label", "pod", "stray", "app=other", "--overwrite"]);
    eventually(&env, "a replacement", || {
        settled(&env, 3).filter(|p| p.iter().all(|p| name(p) != "stray"))
    });
    let owners = env.ok(&["get", "pod", "stray", "-o", "jsonpath={.metadata.ownerReferences}"]);
    assert_eq!(owners, "", "the released pod has no owner");
}
