//! The built-in disruption controller and the eviction subresource, driven with the real
//! kubectl: a PodDisruptionBudget's status, an eviction it refuses with kube-apiserver's 429,
//! and `kubectl drain` of a node that evicts a Deployment's pods within the budget.

use crate::common;

use common::Env;
use serde_json::Value;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

fn env() -> Env {
    Env::with_controllers(Duration::from_millis(300))
}

fn eventually<T>(env: &Env, what: &str, f: impl FnMut() -> Option<T>) -> T {
    env.eventually(what, "pods,pdb", f)
}

/// The live pods of `app=web`: (name, node, ready).
fn web_pods(env: &Env) -> Vec<(String, String, bool)> {
    let list = env.json(&["get", "pods", "-l", "app=web", "-o", "json"]);
    list["items"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|p| p["metadata"]["deletionTimestamp"].is_null())
        .map(|p| {
            let ready = p["status"]["conditions"]
                .as_array()
                .is_some_and(|c| c.iter().any(|c| c["type"] == "Ready" && c["status"] == "True"));
            let field = |v: &Value| v.as_str().unwrap_or_default().to_owned();
            (field(&p["metadata"]["name"]), field(&p["spec"]["nodeName"]), ready)
        })
        .collect()
}

fn budget(env: &Env) -> Value {
    env.json(&["get", "pdb", "web", "-o", "json"])["status"].clone()
}

#[test]
fn drain_evicts_within_the_disruption_budget() {
    let env = Arc::new(env());
    env.ok(&["create", "deployment", "web", "--image=nginx:1", "--replicas=3"]);
    env.ok(&["rollout", "status", "deployment/web", "--timeout=60s"]);

    // A budget that allows no disruption refuses an eviction as kube-apiserver does.
    env.ok(&["create", "pdb", "web", "--selector=app=web", "--min-available=3"]);
    let status = eventually(&env, "the budget's status", || {
        let s = budget(&env);
        (s["currentHealthy"] == 3 && s["observedGeneration"] == 1).then_some(s)
    });
    assert_eq!(
        (&status["desiredHealthy"], &status["expectedPods"], &status["disruptionsAllowed"]),
        (&3.into(), &3.into(), &0.into()),
        "{status}"
    );
    assert!(status["conditions"].to_string().contains("InsufficientPods"), "{status}");
    let victim = web_pods(&env)[0].0.clone();
    let eviction = format!(
        r#"{{"apiVersion":"policy/v1","kind":"Eviction","metadata":{{"name":"{victim}","namespace":"default"}}}}"#
    );
    let path = format!("/api/v1/namespaces/default/pods/{victim}/eviction");
    let refused = env.fails_stdin(&["create", "--raw", &path, "-f", "-"], &eviction);
    assert!(
        refused.contains("Cannot evict pod as it would violate the pod's disruption budget"),
        "{refused}"
    );
    assert!(refused.contains("TooManyRequests") || refused.contains("429"), "{refused}");

    // With room for one disruption, draining a node moves its pods one at a time.
    env.ok(&["patch", "pdb", "web", "--type=merge", "-p", r#"{"spec":{"minAvailable":2}}"#]);
    eventually(&env, "one disruption allowed", || {
        (budget(&env)["disruptionsAllowed"] == 1).then_some(())
    });
    // A dry-run eviction is judged but takes nothing from the budget and deletes nothing.
    env.ok_stdin(&["create", "--raw", &format!("{path}?dryRun=All"), "-f", "-"], &eviction);
    assert_eq!(budget(&env)["disruptionsAllowed"], 1, "a dry run leaves the budget alone");
    assert!(web_pods(&env).iter().any(|p| p.0 == victim), "a dry run deletes no pod");
    let pods = web_pods(&env);
    let mut by_node: std::collections::BTreeMap<String, usize> = Default::default();
    for (_, node, _) in &pods {
        *by_node.entry(node.clone()).or_default() += 1;
    }
    let (node, count) =
        by_node.iter().max_by_key(|(_, c)| **c).map(|(n, c)| (n.clone(), *c)).unwrap_or_default();
    assert!(count >= 2, "a node with two pods to drain: {pods:?}");

    let stop = Arc::new(AtomicBool::new(false));
    let lowest = Arc::new(Mutex::new(usize::MAX));
    let watcher = {
        let (env, stop, lowest) = (env.clone(), stop.clone(), lowest.clone());
        std::thread::spawn(move || {
            while !stop.load(Ordering::Relaxed) {
                let ready = web_pods(&env).iter().filter(|p| p.2).count();
                let mut low = lowest.lock().expect("lowest");
                *low = (*low).min(ready);
            }
        })
    };
    let out = env.ok(&["drain", &node, "--ignore-daemonsets", "--timeout=120s"]);
    stop.store(true, Ordering::Relaxed);
    watcher.join().expect("watcher");
    assert!(out.contains("drained"), "{out}");
    let lowest = *lowest.lock().expect("lowest");
    assert!(lowest >= 2, "never fewer ready pods than minAvailable: {lowest}");
    let after = eventually(&env, "three ready pods off the drained node", || {
        let pods = web_pods(&env);
        (pods.len() == 3 && pods.iter().all(|p| p.2 && p.1 != node)).then_some(pods)
    });
    assert_eq!(after.len(), 3);
    let unschedulable = env.ok(&["get", "node", &node, "-o", "jsonpath={.spec.unschedulable}"]);
    assert_eq!(unschedulable, "true");
}
