//! Crash the manager at random points of a rollout, under injected API faults (conflicts,
//! 5xx, dropped watches), and restart it: the rollout still ends with exactly `replicas`
//! pods, all updated, and no moment along the way breaks maxUnavailable or maxSurge.
//!
//! The cluster is kruise-sim in this process (so faults can be injected); the manager is the
//! real binary (`kruise-manager run`), killed with SIGKILL.

use crate::common;

use std::sync::{Arc, Mutex};
use std::time::Duration;

use common::{Budget, Kubectl, Proc, Rng, SimCluster, cloneset_yaml, start_monitor, wait_for};
use kruise_sim::faults::{Fault, FaultAction};
use serde_json::Value;

fn cloneset(name: &str, replicas: i32, policy: &str, unavailable: i32, surge: i32) -> String {
    let strategy = format!(
        "rollingUpdate:\n  podUpdatePolicy: {policy}\n  maxUnavailable: {unavailable}\n  maxSurge: {surge}"
    );
    cloneset_yaml(name, replicas, &strategy)
}

fn start_manager(cluster: &SimCluster, n: usize) -> Proc {
    cluster.run_manager(
        &format!("manager-{n}.log"),
        &[
            "--enable-leader-election=false",
            "--enable-webhook=false",
            "--metrics-addr",
            "0",
            "--health-probe-addr",
            "0",
            "--log",
            "info,kruise_kube=debug",
        ],
    )
}

/// (live pods, pods on `image` that are ready) of one CloneSet.
fn progress(kubectl: &Kubectl, app: &str, image: &str) -> (usize, usize) {
    let list = kubectl.json(&["get", "pods", "-l", &format!("app={app}")]);
    let live: Vec<&Value> = list["items"]
        .as_array()
        .expect("items")
        .iter()
        .filter(|p| !p["metadata"]["deletionTimestamp"].is_string())
        .collect();
    let done = live
        .iter()
        .filter(|p| p["spec"]["containers"][0]["image"] == image)
        .filter(|p| {
            p["status"]["conditions"]
                .as_array()
                .into_iter()
                .flatten()
                .any(|c| c["type"] == "Ready" && c["status"] == "True")
        })
        .count();
    (live.len(), done)
}

#[test]
fn manager_crashes_mid_rollout_under_faults() {
    let seed =
        std::env::var("KRUISE_TEST_SEED").ok().and_then(|s| s.parse().ok()).unwrap_or_else(|| {
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map(|d| d.as_nanos() as u64 | 1)
                .unwrap_or(0x9e37_79b9)
        });
    eprintln!("KRUISE_TEST_SEED={seed}");
    let mut rng = Rng(seed);

    let cluster = SimCluster::start(
        kruise_sim::Config::default()
            .with_kruise_crds()
            // Slow enough containers that the rollouts take several seconds.
            .with_nodes(kruise_sim::nodes::NodesConfig::new(3).with_delays(
                kruise_sim::nodes::kubelet::Delays {
                    pull: Duration::from_millis(400),
                    start: Duration::from_millis(300),
                    stop: Duration::from_millis(200),
                    ..Default::default()
                },
            )),
    );
    let (kubectl, kubeconfig) = (&cluster.kubectl, cluster.kubeconfig.clone());

    // In place, 10 pods, 2 unavailable at most; recreate, 6 pods, 1 surge, none unavailable.
    let inplace = Arc::new(Mutex::new(Budget::default()));
    let recreate = Arc::new(Mutex::new(Budget::default()));
    start_monitor(kubeconfig.clone(), "app=inplace", inplace.clone());
    start_monitor(kubeconfig.clone(), "app=recreate", recreate.clone());

    let mut generation = 0;
    let mut manager = start_manager(&cluster, generation);
    kubectl.ok_stdin(&["apply", "-f", "-"], &cloneset("inplace", 10, "InPlaceIfPossible", 2, 0));
    kubectl.ok_stdin(&["apply", "-f", "-"], &cloneset("recreate", 6, "ReCreate", 0, 1));
    let minute = Duration::from_secs(90);
    wait_for("both CloneSets fully ready", minute, || {
        (progress(kubectl, "inplace", "registry.example/inplace:v1") == (10, 10)
            && progress(kubectl, "recreate", "registry.example/recreate:v1") == (6, 6))
            .then_some(())
    });
    inplace.lock().expect("budget").armed = true;
    recreate.lock().expect("budget").armed = true;

    for version in ["v2", "v3"] {
        for app in ["inplace", "recreate"] {
            let patch = format!(
                r#"{{"spec":{{"template":{{"spec":{{"containers":[{{"name":"main","image":"registry.example/{app}:{version}"}}]}}}}}}}}"#
            );
            kubectl.ok(&["patch", "clone", app, "--type", "merge", "-p", &patch]);
        }
        // Faults for a while: conflicts and 5xx on pod writes, dropped watches.
        // The controller writes its status through `clonesets/status` (never the CloneSet
        // itself), so that is where its 5xx go.
        let faults = cluster.server.faults();
        let fired = [
            faults
                .inject(Fault::new(FaultAction::Conflict).verb("patch").resource("pods").times(4)),
            faults.inject(
                Fault::new(FaultAction::InternalError).verb("create").resource("pods").times(3),
            ),
            faults.inject(
                Fault::new(FaultAction::InternalError).verb("delete").resource("pods").times(2),
            ),
            faults.inject(
                Fault::new(FaultAction::InternalError)
                    .verb("patch")
                    .resource("clonesets/status")
                    .times(2),
            ),
        ];
        // Crash and restart the manager a few times while the rollout runs.
        let inplace_image = format!("registry.example/inplace:{version}");
        let recreate_image = format!("registry.example/recreate:{version}");
        let mut mid_rollout = 0;
        for _ in 0..3 {
            std::thread::sleep(rng.millis(1500));
            manager.kill();
            if progress(kubectl, "recreate", &recreate_image) != (6, 6) {
                mid_rollout += 1;
            }
            if rng.next().is_multiple_of(2) {
                faults.drop_watches();
            }
            std::thread::sleep(rng.millis(500));
            generation += 1;
            manager = start_manager(&cluster, generation);
        }
        assert!(mid_rollout > 0, "no crash landed mid-rollout (seed {seed})");
        wait_for(&format!("rollout to {version} (seed {seed})"), minute, || {
            (progress(kubectl, "inplace", &inplace_image) == (10, 10)
                && progress(kubectl, "recreate", &recreate_image) == (6, 6))
                .then_some(())
        });
        let counts: Vec<usize> = fired.iter().map(|f| f.count()).collect();
        assert!(counts.iter().all(|n| *n > 0), "every fault fired (seed {seed}): {counts:?}");
        faults.clear();
    }

    // Settled: exactly `replicas` pods, and nothing more happens.
    std::thread::sleep(Duration::from_secs(2));
    assert_eq!(progress(kubectl, "inplace", "registry.example/inplace:v3"), (10, 10));
    assert_eq!(progress(kubectl, "recreate", "registry.example/recreate:v3"), (6, 6));
    let status = kubectl.json(&["get", "clone", "inplace"])["status"].clone();
    assert_eq!(status["replicas"], 10, "{status}");
    assert_eq!(status["updatedReadyReplicas"], 10, "{status}");

    let b = inplace.lock().expect("budget");
    let least = b.min_available.expect("pod events seen");
    assert!(least >= 8, "in place: only {least} of 10 available at one moment (seed {seed})");
    assert!(b.max_active <= 10, "in place: {} pods at once (seed {seed})", b.max_active);
    let b = recreate.lock().expect("budget");
    let least = b.min_available.expect("pod events seen");
    assert!(least >= 6, "recreate: only {least} of 6 available at one moment (seed {seed})");
    assert!(b.max_active <= 7, "recreate: {} pods at once, maxSurge 1 (seed {seed})", b.max_active);
    drop(manager);
}
