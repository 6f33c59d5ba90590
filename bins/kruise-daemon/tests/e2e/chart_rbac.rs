//! The daemon binary under the helm chart's `kruise-daemon` ServiceAccount: the chart's RBAC
//! (rendered with `helm template`, applied with kubectl) is enough for every worker, and the
//! API server really enforces it (the same run without the `nodeimages/status` rule cannot
//! report a pull).

use std::io::Write as _;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Duration;

use k8s_openapi::api::core::v1::Pod;
use kruise_api::apps::v1beta1::{
    ContainerRecreateRequest, ContainerRecreateRequestPhase, NodeImage,
};
use kruise_cri::FakeRuntime;
use kube::Api;
use kube::api::PostParams;
use serde_json::json;

use crate::common::*;
use crate::containerd::spawn_daemon;
use crate::fake::run_pod;

/// `program ARGS` with `stdin`; panics with its output when it fails.
fn run(program: &str, args: &[&str], stdin: Option<&str>) -> String {
    let mut child = Command::new(program)
        .args(args)
        .env("HELM_CACHE_HOME", std::env::temp_dir().join("kruise-helm-cache"))
        .env("HELM_CONFIG_HOME", std::env::temp_dir().join("kruise-helm-config"))
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("{program} runs (.ci/run installs it): {e}"));
    if let Some(text) = stdin {
        child.stdin.take().unwrap().write_all(text.as_bytes()).unwrap();
    }
    let out = child.wait_with_output().unwrap();
    assert!(
        out.status.success(),
        "{program} {args:?} failed:\n{}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

fn kubectl(kubeconfig: &Path, args: &[&str], stdin: Option<&str>) -> String {
    let bin = std::env::var("KUBECTL").unwrap_or_else(|_| "kubectl".to_owned());
    let mut all = vec!["--kubeconfig", kubeconfig.to_str().unwrap()];
    all.extend(args);
    run(&bin, &all, stdin)
}

/// The chart's namespaces, ServiceAccounts and RBAC with the daemon on, applied as an admin;
/// returns a kubeconfig holding a token of `kruise-system/kruise-daemon`.
fn install_daemon_rbac(dir: &Path, admin: &str, token: &str, drop_rule: Option<&str>) -> String {
    let admin_path = dir.join("admin.kubeconfig");
    std::fs::write(&admin_path, admin).unwrap();
    let chart = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../charts/kruise");
    let rendered = run(
        "helm",
        &[
            "template",
            "kruise",
            chart.to_str().unwrap(),
            "--set",
            "featureGates=KruiseDaemon=true\\,ImagePullJobGate=true",
            "--show-only",
            "templates/namespace.yaml",
            "--show-only",
            "templates/serviceaccounts.yaml",
            "--show-only",
            "templates/rbac.yaml",
        ],
        None,
    );
    // Forced: the narrowed role of an earlier run was written by `kubectl replace`.
    kubectl(
        &admin_path,
        &["apply", "--server-side", "--force-conflicts", "-f", "-"],
        Some(&rendered),
    );
    if let Some(resource) = drop_rule {
        let role =
            kubectl(&admin_path, &["get", "clusterrole", "kruise-daemon-role", "-o", "json"], None);
        let mut role: serde_json::Value = serde_json::from_str(&role).unwrap();
        let rules = role["rules"].as_array_mut().unwrap();
        for rule in rules.iter_mut() {
            let kept: Vec<serde_json::Value> = rule["resources"]
                .as_array()
                .unwrap()
                .iter()
                .filter(|r| r.as_str() != Some(resource))
                .cloned()
                .collect();
            rule["resources"] = json!(kept);
        }
        rules.retain(|r| r["resources"].as_array().is_some_and(|r| !r.is_empty()));
        kubectl(&admin_path, &["replace", "-f", "-"], Some(&role.to_string()));
    }
    let scoped_token =
        kubectl(&admin_path, &["create", "token", "kruise-daemon", "-n", "kruise-system"], None);
    let scoped = admin.replace(token, scoped_token.trim());
    assert_ne!(scoped, admin, "the admin token is in the kubeconfig");
    scoped
}

/// A NodeImage for `NODE` asking for `busybox:2`.
async fn ask_for_image(client: &kube::Client) {
    let ni: NodeImage = serde_json::from_value(json!({
        "apiVersion": "apps.kruise.io/v1beta1",
        "kind": "NodeImage",
        "metadata": {"name": NODE},
        "spec": {"images": {"busybox": {"tags": [{"tag": "2", "version": 0}]}}},
    }))
    .unwrap();
    Api::<NodeImage>::all(client.clone()).create(&PostParams::default(), &ni).await.unwrap();
}

async fn pulled(client: &kube::Client) -> Option<()> {
    let ni = Api::<NodeImage>::all(client.clone()).get(NODE).await.ok()?;
    (ni.status?.succeeded == 1).then_some(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_daemon_works_under_the_charts_service_account() {
    let (server, client) = sim().await;
    let dir = tempfile::tempdir().unwrap();
    let fake = FakeRuntime::new(NODE);
    fake.add_image("busybox:1", 1000);
    fake.set_auto_restart(true);
    let sock = dir.path().join("run").join("containerd.sock");
    std::fs::create_dir_all(sock.parent().unwrap()).unwrap();
    let _served = kruise_cri::fake::serve(fake.clone(), &sock).await.unwrap();

    // Without the nodeimages/status rule, the pull happens but cannot be reported.
    let narrow = install_daemon_rbac(
        dir.path(),
        &server.kubeconfig,
        &server.token,
        Some("nodeimages/status"),
    );
    let daemon = spawn_daemon(dir.path(), &narrow, &sock, free_port());
    ask_for_image(&client).await;
    wait_for("a 403 in the daemon's log", Duration::from_secs(30), || {
        let log = dir.path().join("daemon.log");
        async move {
            let text = std::fs::read_to_string(log).unwrap_or_default();
            text.contains("forbidden").then_some(())
        }
    })
    .await;
    assert!(pulled(&client).await.is_none(), "reported without the rule");
    drop(daemon);

    // With the chart's rules: the pull is reported, and a ContainerRecreateRequest completes.
    let full = install_daemon_rbac(dir.path(), &server.kubeconfig, &server.token, None);
    let _daemon = spawn_daemon(dir.path(), &full, &sock, free_port());
    wait_for("the pull reported", Duration::from_secs(60), || pulled(&client)).await;

    let pod = create_pod(&client, "web-0", "busybox:1", &[("app", "x")]).await;
    let uid = pod.metadata.uid.clone().unwrap();
    let ids = run_pod(&fake, "web-0", &uid, "busybox:1", &["app"]);
    set_statuses(&client, "web-0", &[("app", &ids[0])]).await;
    let pod = Api::<Pod>::namespaced(client.clone(), "default").get("web-0").await.unwrap();
    create_crr(&client, "recreate", &pod, "app", &ids[0]).await;
    let crrs = Api::<ContainerRecreateRequest>::namespaced(client.clone(), "default");
    let new_id = wait_for("the app container restarted", Duration::from_secs(30), || {
        let fake = fake.clone();
        let old = ids[0].clone();
        async move {
            use kruise_cri::{ContainerRuntime as _, ContainerState};
            let listed = fake.list_containers(&Default::default()).await.ok()?;
            listed
                .into_iter()
                .find(|c| c.name == "app" && c.id != old && c.state == ContainerState::Running)
                .map(|c| c.id)
        }
    })
    .await;
    set_statuses(&client, "web-0", &[("app", &new_id)]).await;
    wait_for("the request completed", Duration::from_secs(30), || {
        let crrs = crrs.clone();
        async move {
            let c = crrs.get("recreate").await.ok()?;
            (c.status?.phase == ContainerRecreateRequestPhase::Completed).then_some(())
        }
    })
    .await;
    let log = std::fs::read_to_string(dir.path().join("daemon.log")).unwrap();
    assert!(!log.contains("forbidden"), "nothing forbidden with the chart's rules:\n{log}");
}
