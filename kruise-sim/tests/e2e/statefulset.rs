//! The built-in StatefulSet controller, driven with the real kubectl: pods made in order one
//! at a time, claims from volumeClaimTemplates, a partitioned rolling update finished with
//! `kubectl rollout status` and undone, scale-down from the highest ordinal, OnDelete, Parallel,
//! failed pods made again, and the claim retention policy.

use crate::common;

use common::Env;
use serde_json::Value;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

fn env() -> Env {
    Env::with_controllers(Duration::from_millis(500))
}

/// A StatefulSet `web` of `nginx:1` with a claim template `data`.
fn manifest(replicas: u32, extra_spec: &str) -> String {
    format!(
        r#"apiVersion: apps/v1
kind: StatefulSet
metadata:
  name: web
spec:
  serviceName: web
  replicas: {replicas}
  selector:
    matchLabels: {{app: web}}
{extra_spec}
  template:
    metadata:
      labels: {{app: web}}
    spec:
      containers:
      - name: nginx
        image: nginx:1
  volumeClaimTemplates:
  - metadata:
      name: data
    spec:
      accessModes: [ReadWriteOnce]
      resources:
        requests:
          storage: 1Gi
"#
    )
}

/// The set's pods by name.
fn pods(env: &Env) -> Vec<Value> {
    let list = env.json(&["get", "pods", "-l", "app=web"]);
    list["items"].as_array().cloned().unwrap_or_default()
}

fn name(pod: &Value) -> &str {
    pod["metadata"]["name"].as_str().unwrap_or_default()
}

fn image(pod: &Value) -> &str {
    pod["spec"]["containers"][0]["image"].as_str().unwrap_or_default()
}

fn ready(pod: &Value) -> bool {
    pod["status"]["conditions"]
        .as_array()
        .is_some_and(|c| c.iter().any(|c| c["type"] == "Ready" && c["status"] == "True"))
}

fn terminating(pod: &Value) -> bool {
    !pod["metadata"]["deletionTimestamp"].is_null()
}

/// The live pods' (name, image), once all `count` are ready and none is terminating.
fn settled(env: &Env, count: usize) -> Vec<(String, String)> {
    env.eventually(&format!("{count} ready pods"), "pods", || {
        let pods = pods(env);
        let done = pods.len() == count && pods.iter().all(|p| ready(p) && !terminating(p));
        done.then(|| pods.iter().map(|p| (name(p).to_owned(), image(p).to_owned())).collect())
    })
}

fn pair(name: &str, image: &str) -> (String, String) {
    (name.to_owned(), image.to_owned())
}

/// Runs `check` on every snapshot of the pods until the returned flag is set.
fn watch(
    env: &Arc<Env>,
    check: impl Fn(&[Value]) -> Option<String> + Send + 'static,
) -> (Arc<AtomicBool>, std::thread::JoinHandle<Vec<String>>) {
    let stop = Arc::new(AtomicBool::new(false));
    let broken = Arc::new(Mutex::new(Vec::new()));
    let handle = {
        let (env, stop) = (env.clone(), stop.clone());
        std::thread::spawn(move || {
            while !stop.load(Ordering::Relaxed) {
                if let Some(problem) = check(&pods(&env)) {
                    broken.lock().expect("broken").push(problem);
                }
            }
            broken.lock().expect("broken").clone()
        })
    };
    (stop, handle)
}

#[test]
fn ordered_pods_come_up_one_by_one_and_a_partitioned_update_then_a_scale_down() {
    let env = Arc::new(env());
    // OrderedReady: a pod exists only when the one before it is ready.
    let (stop, order) = watch(&env, |pods| {
        for ordinal in 1..3 {
            let this = format!("web-{ordinal}");
            let before = format!("web-{}", ordinal - 1);
            if pods.iter().any(|p| name(p) == this)
                && !pods.iter().any(|p| name(p) == before && ready(p))
            {
                return Some(format!("{this} exists while {before} is not ready"));
            }
        }
        None
    });
    env.ok_stdin(
        &["apply", "-f", "-"],
        &manifest(
            3,
            "  updateStrategy:\n    type: RollingUpdate\n    rollingUpdate: {partition: 2}",
        ),
    );
    let out = env.ok(&["rollout", "status", "sts/web", "--timeout=60s"]);
    assert!(out.contains("complete"), "{out}");
    stop.store(true, Ordering::Relaxed);
    let problems = order.join().expect("watcher");
    assert!(problems.is_empty(), "{problems:?}");
    assert_eq!(
        settled(&env, 3),
        vec![pair("web-0", "nginx:1"), pair("web-1", "nginx:1"), pair("web-2", "nginx:1")]
    );

    // Identity, storage and the revision.
    let web0 = env.json(&["get", "pod", "web-0"]);
    let labels = &web0["metadata"]["labels"];
    assert_eq!(labels["statefulset.kubernetes.io/pod-name"], "web-0");
    assert_eq!(labels["apps.kubernetes.io/pod-index"], "0");
    assert_eq!(web0["spec"]["hostname"], "web-0");
    assert_eq!(web0["spec"]["subdomain"], "web");
    assert_eq!(web0["metadata"]["ownerReferences"][0]["kind"], "StatefulSet");
    let volumes = web0["spec"]["volumes"].to_string();
    assert!(volumes.contains(r#""claimName":"data-web-0""#), "{volumes}");
    let claim = env.json(&["get", "pvc", "data-web-0"]);
    assert_eq!(claim["metadata"]["labels"]["app"], "web");
    let set = env.json(&["get", "sts", "web"]);
    let first = set["status"]["currentRevision"].as_str().unwrap_or_default().to_owned();
    assert!(first.starts_with("web-"), "{set}");
    assert_eq!(labels["controller-revision-hash"], first.as_str());
    assert_eq!(set["status"]["updateRevision"], first.as_str());
    for field in ["replicas", "readyReplicas", "currentReplicas", "updatedReplicas"] {
        assert_eq!(set["status"][field], 3, "{field}: {set}");
    }
    let rolling = &set["spec"]["updateStrategy"]["rollingUpdate"];
    // Not defaulted: MaxUnavailableStatefulSet is off by default in kube-apiserver 1.36.
    assert!(rolling["maxUnavailable"].is_null(), "{rolling}");
    assert_eq!(rolling["partition"], 2, "{rolling}");
    let revision = env.json(&["get", "controllerrevision", &first]);
    assert_eq!(revision["revision"], 1);
    assert_eq!(revision["data"]["spec"]["template"]["$patch"], "replace");

    // Partition 2: only web-2 moves to the new revision.
    env.ok(&["set", "image", "sts/web", "nginx=nginx:2"]);
    let out = env.ok(&["rollout", "status", "sts/web", "--timeout=60s"]);
    assert!(out.contains("partitioned roll out complete"), "{out}");
    let expected =
        vec![pair("web-0", "nginx:1"), pair("web-1", "nginx:1"), pair("web-2", "nginx:2")];
    env.eventually("web-2 updated", "pods", || (settled(&env, 3) == expected).then_some(()));
    std::thread::sleep(Duration::from_secs(1));
    assert_eq!(settled(&env, 3), expected, "the partition holds");
    let set = env.json(&["get", "sts", "web"]);
    let second = set["status"]["updateRevision"].as_str().unwrap_or_default().to_owned();
    assert_ne!(second, first);
    assert_eq!(set["status"]["currentRevision"], first.as_str());
    assert_eq!(set["status"]["updatedReplicas"], 1);
    assert_eq!(set["status"]["currentReplicas"], 2);
    for pod in pods(&env) {
        let wanted = if name(&pod) == "web-2" { &second } else { &first };
        assert_eq!(pod["metadata"]["labels"]["controller-revision-hash"], wanted.as_str());
    }

    // Partition 0: the rest follow, and the current revision moves on.
    env.ok(&[
        "patch",
        "sts",
        "web",
        "--type=merge",
        "-p",
        r#"{"spec":{"updateStrategy":{"rollingUpdate":{"partition":0}}}}"#,
    ]);
    let out = env.ok(&["rollout", "status", "sts/web", "--timeout=60s"]);
    assert!(out.contains("complete"), "{out}");
    assert_eq!(
        settled(&env, 3),
        vec![pair("web-0", "nginx:2"), pair("web-1", "nginx:2"), pair("web-2", "nginx:2")]
    );
    let set = env.eventually("the current revision to move", "sts", || {
        let set = env.json(&["get", "sts", "web"]);
        (set["status"]["currentRevision"] == second.as_str()).then_some(set)
    });
    assert_eq!(set["status"]["currentReplicas"], 3);

    // Scale down: the highest ordinal goes first.
    let (stop, order) = watch(&env, |pods| {
        let web2 = pods.iter().any(|p| name(p) == "web-2");
        let web1_going = pods.iter().any(|p| name(p) == "web-1" && terminating(p));
        (web2 && web1_going).then(|| "web-1 terminating while web-2 exists".to_owned())
    });
    env.ok(&["scale", "sts/web", "--replicas=1"]);
    assert_eq!(settled(&env, 1), vec![pair("web-0", "nginx:2")]);
    stop.store(true, Ordering::Relaxed);
    let problems = order.join().expect("watcher");
    assert!(problems.is_empty(), "{problems:?}");
    // The default retention policy keeps the claims.
    env.ok(&["get", "pvc", "data-web-2"]);

    // `kubectl rollout undo` writes the first revision's template back: that revision is
    // reused with the next revision number.
    env.ok(&["rollout", "undo", "sts/web"]);
    let out = env.ok(&["rollout", "status", "sts/web", "--timeout=60s"]);
    assert!(out.contains("complete"), "{out}");
    env.eventually("web-0 back at nginx:1", "pods", || {
        (settled(&env, 1) == vec![pair("web-0", "nginx:1")]).then_some(())
    });
    let revision = env.json(&["get", "controllerrevision", &first]);
    assert_eq!(revision["revision"], 3);
    let set = env.json(&["get", "sts", "web"]);
    assert_eq!(set["status"]["updateRevision"], first.as_str());
}

#[test]
fn on_delete_replaces_a_pod_only_once_it_is_deleted() {
    let env = env();
    env.ok_stdin(&["apply", "-f", "-"], &manifest(2, "  updateStrategy:\n    type: OnDelete"));
    assert_eq!(settled(&env, 2), vec![pair("web-0", "nginx:1"), pair("web-1", "nginx:1")]);
    env.ok(&["set", "image", "sts/web", "nginx=nginx:2"]);
    env.eventually("the update revision", "sts", || {
        let set = env.json(&["get", "sts", "web"]);
        let status = &set["status"];
        (status["updateRevision"] != status["currentRevision"]
            && status["observedGeneration"] == set["metadata"]["generation"])
            .then_some(())
    });
    std::thread::sleep(Duration::from_secs(1));
    assert_eq!(settled(&env, 2), vec![pair("web-0", "nginx:1"), pair("web-1", "nginx:1")]);

    env.ok(&["delete", "pod", "web-1"]);
    env.eventually("web-1 recreated at nginx:2", "pods", || {
        (settled(&env, 2) == vec![pair("web-0", "nginx:1"), pair("web-1", "nginx:2")]).then_some(())
    });
    let set = env.json(&["get", "sts", "web"]);
    assert_eq!(set["status"]["updatedReplicas"], 1);
}

#[test]
fn parallel_pods_a_failed_pod_remade_and_scaled_away_claims_deleted() {
    let env = env();
    let extra = "  podManagementPolicy: Parallel\n  persistentVolumeClaimRetentionPolicy:\n    \
                 whenDeleted: Retain\n    whenScaled: Delete";
    env.ok_stdin(&["apply", "-f", "-"], &manifest(3, extra));
    // All three are made without waiting for each other.
    env.eventually("three pods", "pods", || (pods(&env).len() == 3).then_some(()));
    assert_eq!(settled(&env, 3).len(), 3);
    for ordinal in 0..3 {
        env.ok(&["get", "pvc", &format!("data-web-{ordinal}")]);
    }

    // A failed pod is deleted and made again under the same name.
    let uid = env.json(&["get", "pod", "web-0"])["metadata"]["uid"].clone();
    env.ok(&[
        "patch",
        "pod",
        "web-0",
        "--subresource=status",
        "--type=merge",
        "-p",
        r#"{"status":{"phase":"Failed"}}"#,
    ]);
    env.eventually("web-0 recreated", "pods", || {
        // Absent for a moment between the deletion and the new pod.
        let out = env.run(&["get", "pod", "web-0", "-o", "json"]);
        let pod: Value = serde_json::from_str(&out.stdout).ok()?;
        (out.ok && pod["metadata"]["uid"] != uid && ready(&pod)).then_some(())
    });

    env.ok(&["scale", "sts/web", "--replicas=1"]);
    assert_eq!(settled(&env, 1), vec![pair("web-0", "nginx:1")]);
    env.eventually("the scaled-away claims deleted", "pvc", || {
        let claims = env.json(&["get", "pvc"]);
        let names: Vec<String> = claims["items"]
            .as_array()
            .into_iter()
            .flatten()
            .map(|c| c["metadata"]["name"].as_str().unwrap_or_default().to_owned())
            .collect();
        (names == ["data-web-0"]).then_some(())
    });
}
