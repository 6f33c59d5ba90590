//! The `crds` subcommand, run as a user would.

use std::process::Command;

fn manager() -> Command {
    Command::new(env!("CARGO_BIN_EXE_kruise-manager"))
}

#[test]
fn crds_prints_every_crd_as_yaml_documents() {
    let output = manager().arg("crds").output().expect("run kruise-manager crds");
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    let text = String::from_utf8(output.stdout).expect("utf-8");
    let names: Vec<String> = serde_yaml::Deserializer::from_str(&text)
        .map(|doc| {
            let value = <serde_yaml::Value as serde::Deserialize>::deserialize(doc).expect("yaml");
            value["metadata"]["name"].as_str().expect("name").to_owned()
        })
        .collect();
    assert_eq!(names.len(), 22, "{names:?}");
    assert!(names.contains(&"rollouts.rollouts.kruise.io".to_owned()));
    assert!(names.contains(&"clonesets.apps.kruise.io".to_owned()));
    assert!(names.contains(&"podunavailablebudgets.policy.kruise.io".to_owned()));
}

#[test]
fn crds_out_writes_upstream_file_names() {
    let dir = std::env::temp_dir().join(format!("kruise-crds-{}", std::process::id()));
    let output = manager().args(["crds", "--out"]).arg(&dir).output().expect("run");
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    let mut files: Vec<String> = std::fs::read_dir(&dir)
        .expect("read out dir")
        .map(|e| e.expect("entry").file_name().to_string_lossy().into_owned())
        .collect();
    files.sort();
    let shared = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../../shared/upstream");
    // Kruise's CRDs, and Kruise Rollout's.
    let mut expected: Vec<String> = [shared.join("crds"), shared.join("rollouts/crds")]
        .iter()
        .flat_map(|dir| std::fs::read_dir(dir).expect("read upstream crds"))
        .map(|e| e.expect("entry").file_name().to_string_lossy().into_owned())
        .collect();
    expected.sort();
    assert_eq!(files, expected);
    std::fs::remove_dir_all(&dir).expect("clean up");
}

/// The guide's demo-clone, as v1alpha1 with an in-place update policy.
const DEMO_CLONE_V1ALPHA1: &str = r#"
apiVersion: apps.kruise.io/v1alpha1
kind: CloneSet
metadata:
  name: demo-clone
spec:
  replicas: 2
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
  updateStrategy:
    type: InPlaceIfPossible
    maxUnavailable: 20%
"#;

/// A fresh install as the README gives it: the CRDs from `kruise-manager crds`, a v1alpha1
/// CloneSet created before the manager runs, then the manager. The early CloneSet is refused
/// (the API server cannot convert it yet), never stored unconverted; once the manager serves
/// conversion the same request succeeds and its update policy reads back through v1beta1.
#[test]
fn a_v1alpha1_object_before_the_manager_is_refused_not_stored_unconverted() {
    use super::common::{SimCluster, wait_for};
    use std::time::Duration;
    let cluster = SimCluster::start(kruise_sim::Config::default());
    let kubectl = &cluster.kubectl;
    let crds = manager().arg("crds").output().expect("kruise-manager crds");
    assert!(crds.status.success(), "{}", String::from_utf8_lossy(&crds.stderr));
    kubectl.ok_stdin(
        &["apply", "--server-side", "-f", "-"],
        &String::from_utf8(crds.stdout).expect("utf-8"),
    );
    kubectl.ok(&["create", "namespace", "kruise-system"]);

    let early = kubectl.run_with(&["create", "-f", "-"], Some(DEMO_CLONE_V1ALPHA1));
    assert!(!early.ok, "created before conversion is served: {}", early.stdout);
    assert!(
        early.stderr.contains(
            r#"Internal error occurred: conversion webhook for apps.kruise.io/v1alpha1, Kind=CloneSet failed: Post "https://kruise-webhook-service.kruise-system.svc:443/convert?timeout=30s": service "kruise-webhook-service" not found"#
        ),
        "{}",
        early.stderr
    );
    let stored = kubectl.ok(&["get", "clonesets.v1beta1.apps.kruise.io", "-o", "name"]);
    assert_eq!(stored.trim(), "", "nothing is stored");

    let manager = cluster.run_manager(
        "manager.log",
        &[
            "--enable-leader-election=false",
            "--metrics-addr",
            "0",
            "--health-probe-addr",
            "0",
            "--webhook-host",
            "127.0.0.1",
            "--webhook-port",
            "0",
        ],
    );
    wait_for("the manager to serve conversion", Duration::from_secs(60), || {
        kubectl.run_with(&["create", "-f", "-"], Some(DEMO_CLONE_V1ALPHA1)).ok.then_some(())
    });
    let policy = kubectl.ok(&[
        "get",
        "clonesets.v1beta1.apps.kruise.io",
        "demo-clone",
        "-o",
        "jsonpath={.spec.updateStrategy.rollingUpdate.podUpdatePolicy}",
    ]);
    assert_eq!(policy, "InPlaceIfPossible", "{}", manager.log_text());
    let log = manager.log_text();
    assert!(!log.contains('\u{1b}'), "no colour codes in a log file:\n{log}");
}

#[test]
fn crds_into_a_reader_that_stops_early_exits_quietly() {
    use std::io::Read as _;
    let mut child = manager()
        .arg("crds")
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("run kruise-manager crds");
    let mut first = [0u8; 64];
    child.stdout.take().expect("stdout").read_exact(&mut first).expect("some output");
    // The pipe's read end is closed here, as `| head` closes it.
    let output = child.wait_with_output().expect("exit");
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    assert!(output.stderr.is_empty(), "{}", String::from_utf8_lossy(&output.stderr));
    assert!(first.starts_with(b"---\napiVersion: apiextensions.k8s.io/v1"));
}
