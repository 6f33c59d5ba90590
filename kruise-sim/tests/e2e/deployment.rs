//! The built-in Deployment controller, driven with the real kubectl: `kubectl create
//! deployment`, `kubectl set image` rolling out within maxSurge and maxUnavailable, `kubectl
//! rollout status`, `kubectl rollout undo`, and Recreate.

use crate::common;

use common::Env;
use serde_json::Value;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

fn env() -> Env {
    Env::with_controllers(Duration::from_millis(200))
}

/// (live pods, ready live pods, images of live pods) of `app=web`.
fn census(env: &Env) -> (usize, usize, Vec<String>) {
    let list = env.json(&["get", "pods", "-l", "app=web", "-o", "json"]);
    let live: Vec<Value> = list["items"]
        .as_array()
        .cloned()
        .unwrap_or_default()
        .into_iter()
        .filter(|p| p["metadata"]["deletionTimestamp"].is_null())
        .collect();
    let ready = live
        .iter()
        .filter(|p| {
            p["status"]["conditions"]
                .as_array()
                .is_some_and(|c| c.iter().any(|c| c["type"] == "Ready" && c["status"] == "True"))
        })
        .count();
    let mut images: Vec<String> = live
        .iter()
        .map(|p| p["spec"]["containers"][0]["image"].as_str().unwrap_or_default().to_owned())
        .collect();
    images.sort();
    (live.len(), ready, images)
}

fn rollout_status(env: &Env) -> String {
    env.ok(&["rollout", "status", "deployment/web", "--timeout=60s"])
}

#[test]
fn a_deployment_rolls_out_within_its_budget_and_rolls_back() {
    let env = Arc::new(env());
    env.ok(&["create", "deployment", "web", "--image=nginx:1", "--replicas=3"]);
    let out = rollout_status(&env);
    assert!(out.contains("deployment \"web\" successfully rolled out"), "{out}");
    assert_eq!(census(&env), (3, 3, vec!["nginx:1".to_owned(); 3]));
    let sets = env.json(&["get", "rs", "-l", "app=web", "-o", "json"]);
    let sets = sets["items"].as_array().cloned().unwrap_or_default();
    assert_eq!(sets.len(), 1, "one ReplicaSet");
    let first = sets[0]["metadata"]["name"].as_str().unwrap_or_default().to_owned();
    let hash = sets[0]["spec"]["selector"]["matchLabels"]["pod-template-hash"]
        .as_str()
        .unwrap_or_default()
        .to_owned();
    assert_eq!(first, format!("web-{hash}"));
    assert_eq!(sets[0]["metadata"]["annotations"]["deployment.kubernetes.io/revision"], "1");
    let wide = env.ok(&["get", "deployment", "web"]);
    assert!(
        wide.lines()
            .nth(1)
            .is_some_and(|l| l.split_whitespace().collect::<Vec<_>>()[1..4] == ["3/3", "3", "3"]),
        "{wide}"
    );

    // The defaults (25% of 3): one pod over, none unavailable. A watcher checks the whole way.
    let stop = Arc::new(AtomicBool::new(false));
    let seen = Arc::new(Mutex::new(Vec::new()));
    let watcher = {
        let (env, stop, seen) = (env.clone(), stop.clone(), seen.clone());
        std::thread::spawn(move || {
            while !stop.load(Ordering::Relaxed) {
                let (live, ready, _) = census(&env);
                seen.lock().expect("seen").push((live, ready));
            }
        })
    };
    env.ok(&["set", "image", "deployment/web", "nginx=nginx:2"]);
    let out = rollout_status(&env);
    stop.store(true, Ordering::Relaxed);
    watcher.join().expect("watcher");
    assert!(out.contains("successfully rolled out"), "{out}");
    assert_eq!(census(&env), (3, 3, vec!["nginx:2".to_owned(); 3]));
    let seen = seen.lock().expect("seen").clone();
    assert!(seen.len() > 3, "the watcher looked: {seen:?}");
    assert!(
        seen.iter().all(|&(live, ready)| live <= 4 && ready >= 3),
        "maxSurge 1, maxUnavailable 0: {seen:?}"
    );
    let status = env.json(&["get", "deployment", "web", "-o", "json"]);
    assert_eq!(status["metadata"]["annotations"]["deployment.kubernetes.io/revision"], "2");
    let conditions = status["status"]["conditions"].to_string();
    assert!(
        conditions.contains("NewReplicaSetAvailable")
            && conditions.contains("MinimumReplicasAvailable"),
        "{conditions}"
    );

    // Back to the first template: its ReplicaSet returns as revision 3.
    env.ok(&["rollout", "undo", "deployment/web"]);
    let out = rollout_status(&env);
    assert!(out.contains("successfully rolled out"), "{out}");
    assert_eq!(census(&env), (3, 3, vec!["nginx:1".to_owned(); 3]));
    let back = env.json(&["get", "rs", &first, "-o", "json"]);
    assert_eq!(back["spec"]["replicas"], 3);
    assert_eq!(back["metadata"]["annotations"]["deployment.kubernetes.io/revision"], "3");
    assert_eq!(back["metadata"]["annotations"]["deployment.kubernetes.io/revision-history"], "1");
    let history = env.ok(&["rollout", "history", "deployment/web"]);
    assert!(history.contains('2') && history.contains('3'), "{history}");
}

#[test]
fn a_recreate_deployment_removes_every_old_pod_before_starting_new_ones() {
    let env = Arc::new(env());
    env.ok(&["create", "deployment", "web", "--image=nginx:1", "--replicas=2"]);
    env.ok(&[
        "patch",
        "deployment",
        "web",
        "--type=merge",
        "-p",
        r#"{"spec":{"strategy":{"type":"Recreate","rollingUpdate":null}}}"#,
    ]);
    rollout_status(&env);
    let stop = Arc::new(AtomicBool::new(false));
    let mixed = Arc::new(AtomicBool::new(false));
    let watcher = {
        let (env, stop, mixed) = (env.clone(), stop.clone(), mixed.clone());
        std::thread::spawn(move || {
            while !stop.load(Ordering::Relaxed) {
                // Terminating pods count too: Recreate waits until they are gone.
                let list = env.json(&["get", "pods", "-l", "app=web", "-o", "json"]);
                let images: Vec<String> = list["items"]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .map(|p| {
                        p["spec"]["containers"][0]["image"].as_str().unwrap_or_default().to_owned()
                    })
                    .collect();
                if images.iter().any(|i| i == "nginx:1") && images.iter().any(|i| i == "nginx:2") {
                    mixed.store(true, Ordering::Relaxed);
                }
            }
        })
    };
    env.ok(&["set", "image", "deployment/web", "nginx=nginx:2"]);
    let out = rollout_status(&env);
    stop.store(true, Ordering::Relaxed);
    watcher.join().expect("watcher");
    assert!(out.contains("successfully rolled out"), "{out}");
    assert_eq!(census(&env), (2, 2, vec!["nginx:2".to_owned(); 2]));
    assert!(!mixed.load(Ordering::Relaxed), "old and new pods were never there at once");
}

#[test]
fn a_deployment_scales_and_a_paused_one_waits_for_resume() {
    let env = Arc::new(env());
    env.ok(&["create", "deployment", "web", "--image=nginx:1", "--replicas=2"]);
    rollout_status(&env);
    env.ok(&["scale", "deployment", "web", "--replicas=5"]);
    rollout_status(&env);
    assert_eq!(census(&env), (5, 5, vec!["nginx:1".to_owned(); 5]));
    env.ok(&["scale", "deployment", "web", "--replicas=1"]);
    rollout_status(&env);
    let gone = (0..100).find(|_| {
        std::thread::sleep(Duration::from_millis(100));
        census(&env).0 == 1
    });
    assert!(gone.is_some(), "scaled in to one pod: {:?}", census(&env));

    env.ok(&["rollout", "pause", "deployment/web"]);
    env.ok(&["set", "image", "deployment/web", "nginx=nginx:2"]);
    std::thread::sleep(Duration::from_secs(1));
    let sets = env.json(&["get", "rs", "-l", "app=web", "-o", "json"]);
    assert_eq!(sets["items"].as_array().map(Vec::len), Some(1), "paused: no new ReplicaSet");
    assert_eq!(census(&env).2, vec!["nginx:1".to_owned()]);
    let reason = env.ok(&[
        "get",
        "deployment",
        "web",
        "-o",
        "jsonpath={.status.conditions[?(@.type==\"Progressing\")].reason}",
    ]);
    assert_eq!(reason, "DeploymentPaused");
    env.ok(&["rollout", "resume", "deployment/web"]);
    let out = rollout_status(&env);
    assert!(out.contains("successfully rolled out"), "{out}");
    assert_eq!(census(&env), (1, 1, vec!["nginx:2".to_owned()]));
}
