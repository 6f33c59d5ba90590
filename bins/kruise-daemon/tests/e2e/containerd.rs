//! The kruise-daemon binary against a real containerd (CRI v1) and registry on loopback, and
//! kruise-sim's API server. Finding containerd as `kruise-cri/tests/containerd.rs` does:
//! `KRUISE_CRI_ENV=<BASE>/env` (a running instance), else `shared/cri/cri-up.sh` into a temp
//! BASE on a free registry port (`KRUISE_CRI_UP` overrides the script); `KRUISE_CRI_SKIP=1`
//! skips.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use k8s_openapi::api::core::v1::Pod;
use kruise_api::apps::v1beta1::{ContainerRecreateRequest, NodeImage};
use kruise_cri::proto as pb;
use kruise_cri::{ContainerRuntime, ContainerState, CriClient};
use kube::Api;
use kube::api::PostParams;
use serde_json::json;

use crate::common::*;

struct Cri {
    sock: PathBuf,
    base: PathBuf,
    test_image: String,
    started: Option<(PathBuf, tempfile::TempDir)>,
}

impl Drop for Cri {
    fn drop(&mut self) {
        if let Some((down, _dir)) = &self.started {
            let _ = Command::new("bash").arg(down).arg(&self.base).output();
        }
    }
}

fn read_env(path: &Path) -> BTreeMap<String, String> {
    std::fs::read_to_string(path)
        .unwrap()
        .lines()
        .filter_map(|l| l.split_once('='))
        .map(|(k, v)| (k.trim().to_string(), v.trim().to_string()))
        .collect()
}

fn cri() -> Option<Cri> {
    if std::env::var_os("KRUISE_CRI_SKIP").is_some() {
        eprintln!("KRUISE_CRI_SKIP is set: skipping the containerd test");
        return None;
    }
    if let Some(env) = std::env::var_os("KRUISE_CRI_ENV") {
        let env = PathBuf::from(env);
        let vars = read_env(&env);
        return Some(Cri {
            base: env.parent().unwrap().to_path_buf(),
            sock: PathBuf::from(&vars["CRI_SOCK"]),
            test_image: vars["TEST_IMAGE"].clone(),
            started: None,
        });
    }
    let up = std::env::var_os("KRUISE_CRI_UP").map(PathBuf::from).unwrap_or_else(|| {
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../../../shared/cri/cri-up.sh")
    });
    assert!(
        up.exists(),
        "{} is missing: set KRUISE_CRI_ENV, KRUISE_CRI_UP or KRUISE_CRI_SKIP=1",
        up.display()
    );
    let down = up.with_file_name("cri-down.sh");
    let dir = tempfile::Builder::new().prefix("kruise-daemon-cri-").tempdir().unwrap();
    let base = dir.path().join("base");
    let t = Instant::now();
    let out = Command::new("bash")
        .arg(&up)
        .arg(&base)
        .env("REGISTRY_PORT", free_port().to_string())
        .stdin(Stdio::null())
        .output()
        .unwrap();
    let mut cri = Cri {
        sock: base.join("containerd.sock"),
        base: base.clone(),
        test_image: String::new(),
        started: Some((down, dir)),
    };
    assert!(
        out.status.success(),
        "cri-up.sh failed:\n{}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    eprintln!("cri-up.sh: {:?}", t.elapsed());
    let vars = read_env(&base.join("env"));
    cri.sock = PathBuf::from(&vars["CRI_SOCK"]);
    cri.test_image = vars["TEST_IMAGE"].clone();
    Some(cri)
}

/// The daemon binary for `NODE` against the sim (its kubeconfig in `dir`) and the runtime
/// socket `sock`, serving probes and metrics on `port`.
pub fn spawn_daemon(dir: &Path, kubeconfig: &str, sock: &Path, port: u16) -> Child {
    spawn_daemon_with(dir, kubeconfig, sock, port, &[])
}

/// [`spawn_daemon`] with `extra` flags.
pub fn spawn_daemon_with(
    dir: &Path,
    kubeconfig: &str,
    sock: &Path,
    port: u16,
    extra: &[&str],
) -> Child {
    let kc = dir.join("kubeconfig");
    std::fs::write(&kc, kubeconfig).unwrap();
    let log = std::fs::File::create(dir.join("daemon.log")).unwrap();
    // KRUISE_DAEMON_BIN runs another build (the memory test measures a release build).
    let bin = std::env::var("KRUISE_DAEMON_BIN")
        .unwrap_or_else(|_| env!("CARGO_BIN_EXE_kruise-daemon").to_owned());
    let child = Command::new(bin)
        .arg("--kubeconfig")
        .arg(&kc)
        .arg("--host-var-run")
        .arg(sock.parent().unwrap())
        .arg("--socket-file")
        .arg(sock.file_name().unwrap())
        .arg("--addr")
        .arg(format!("127.0.0.1:{port}"))
        .arg("--max-workers-for-pull-image")
        .arg("2")
        .args(extra)
        .env("NODE_NAME", NODE)
        .env("RUST_LOG", "info,kruise_kube=debug")
        .stdout(log.try_clone().unwrap())
        .stderr(log)
        .spawn()
        .unwrap();
    Child(child)
}

fn sandbox_config(base: &Path, name: &str, uid: &str) -> pb::PodSandboxConfig {
    pb::PodSandboxConfig {
        metadata: Some(pb::PodSandboxMetadata {
            name: name.into(),
            uid: uid.into(),
            namespace: "default".into(),
            attempt: 0,
        }),
        log_directory: base.join("podlogs").join(uid).display().to_string(),
        labels: [("io.kubernetes.pod.uid".to_string(), uid.to_string())].into(),
        linux: Some(pb::LinuxPodSandboxConfig {
            security_context: Some(pb::LinuxSandboxSecurityContext {
                namespace_options: Some(pb::NamespaceOption {
                    network: pb::NamespaceMode::Node as i32,
                    ..Default::default()
                }),
                ..Default::default()
            }),
            ..Default::default()
        }),
        ..Default::default()
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn daemon_binary_on_real_containerd() {
    let started = Instant::now();
    let Some(cri) = cri() else { return };
    let (server, client) = sim().await;
    let cri_client = CriClient::connect(&cri.sock).await.unwrap();
    cri_client.pull_image(&cri.test_image, None, None).await.unwrap();

    // The Pod object (for its UID), then a host-network sandbox with two busybox containers
    // carrying the kubelet's labels.
    let placeholder =
        create_pod(&client, "web-0", &cri.test_image, &[("app", "x"), ("sidecar", "y")]).await;
    let uid = placeholder.metadata.uid.clone().unwrap();
    let mut rs = cri_client.runtime_client();
    let config = sandbox_config(&cri.base, "web-0", &uid);
    let sandbox = rs
        .run_pod_sandbox(pb::RunPodSandboxRequest {
            config: Some(config.clone()),
            runtime_handler: String::new(),
        })
        .await
        .unwrap()
        .into_inner()
        .pod_sandbox_id;
    let mut ids = Vec::new();
    for name in ["app", "sidecar"] {
        let id = rs
            .create_container(pb::CreateContainerRequest {
                pod_sandbox_id: sandbox.clone(),
                config: Some(pb::ContainerConfig {
                    metadata: Some(pb::ContainerMetadata { name: name.into(), attempt: 0 }),
                    image: Some(pb::ImageSpec {
                        image: cri.test_image.clone(),
                        ..Default::default()
                    }),
                    command: vec!["sh".into(), "-c".into(), "sleep 3600".into()],
                    log_path: format!("{name}.log"),
                    labels: [
                        ("io.kubernetes.container.name".to_string(), name.to_string()),
                        ("io.kubernetes.pod.uid".to_string(), uid.clone()),
                    ]
                    .into(),
                    annotations: [("io.kubernetes.container.hash".to_string(), "abc".to_string())]
                        .into(),
                    ..Default::default()
                }),
                sandbox_config: Some(config.clone()),
            })
            .await
            .unwrap()
            .into_inner()
            .container_id;
        rs.start_container(pb::StartContainerRequest { container_id: id.clone() }).await.unwrap();
        ids.push(id);
    }
    set_statuses(&client, "web-0", &[("app", &ids[0]), ("sidecar", &ids[1])]).await;
    let pod = Api::<Pod>::namespaced(client.clone(), "default").get("web-0").await.unwrap();

    let dir = tempfile::tempdir().unwrap();
    let port = free_port();
    let daemon = spawn_daemon(dir.path(), &server.kubeconfig, &cri.sock, port);
    let log = dir.path().join("daemon.log");
    let ready = wait_for("/readyz", Duration::from_secs(20), || {
        let log = log.clone();
        async move {
            match http_get(port, "/readyz") {
                Some((200, body)) => Some(body),
                _ => {
                    let text = std::fs::read_to_string(&log).unwrap_or_default();
                    assert!(!text.contains("Error:"), "the daemon failed:\n{text}");
                    None
                }
            }
        }
    })
    .await;
    eprintln!("daemon ready after {:?}: {ready}", started.elapsed());
    assert_eq!(http_get(port, "/healthz").unwrap().0, 200);
    let (code, metrics) = http_get(port, "/metrics").unwrap();
    assert_eq!(code, 200);
    assert!(metrics.contains("# EOF"), "{metrics}");

    // A request for app: app is stopped with the 2 s minimum grace (the request asks 1 s;
    // sleep as PID 1 ignores SIGTERM, so it is killed), sidecar stays, the states are written.
    let t = Instant::now();
    create_crr(&client, "recreate-app", &pod, "app", &ids[0]).await;
    let st = wait_for("app exited", Duration::from_secs(30), || {
        let c = cri_client.clone();
        let id = ids[0].clone();
        async move {
            let st = c.container_status(&id).await.ok()?;
            (st.state == ContainerState::Exited).then_some(st)
        }
    })
    .await;
    eprintln!("app stopped {:?} after the request (exit code {})", t.elapsed(), st.exit_code);
    assert!(st.exit_code == 137 || st.exit_code == 143, "{st:?}");
    assert_eq!(cri_client.container_status(&ids[1]).await.unwrap().state, ContainerState::Running);
    let crrs = Api::<ContainerRecreateRequest>::namespaced(client.clone(), "default");
    let crr = crrs.get("recreate-app").await.unwrap();
    let status = crr.status.unwrap();
    assert_eq!(status.container_recreate_states.len(), 1, "{status:?}");
    assert!(status.container_recreate_states[0].is_killed, "{status:?}");
    assert_eq!(format!("{:?}", status.phase), "Recreating");

    // The containermeta annotation.
    let pods = Api::<Pod>::namespaced(client.clone(), "default");
    let meta = wait_for("runtime-containers-meta", Duration::from_secs(20), || {
        let pods = pods.clone();
        async move {
            pods.get("web-0")
                .await
                .ok()?
                .metadata
                .annotations?
                .get("apps.kruise.io/runtime-containers-meta")
                .cloned()
        }
    })
    .await;
    assert!(meta.contains(&ids[1]) && meta.contains("\"plainHash\":2748"), "{meta}");

    // The imagepuller: a NodeImage asking for the test image (Always, so it is really pulled).
    let (name, tag) = cri.test_image.rsplit_once(':').unwrap();
    let ni: NodeImage = serde_json::from_value(json!({
        "apiVersion": "apps.kruise.io/v1beta1", "kind": "NodeImage",
        "metadata": {"name": NODE},
        "spec": {"images": {name: {"tags": [{"tag": tag, "version": 1, "imagePullPolicy": "Always"}]}}},
    }))
    .unwrap();
    let nis = Api::<NodeImage>::all(client.clone());
    let t = Instant::now();
    nis.create(&PostParams::default(), &ni).await.unwrap();
    let status = wait_for("the test image pulled", Duration::from_secs(60), || {
        let nis = nis.clone();
        async move {
            let s = nis.get(NODE).await.ok()?.status?;
            (s.succeeded == 1).then_some(s)
        }
    })
    .await;
    eprintln!("NodeImage pull Succeeded after {:?}", t.elapsed());
    let tag_status = &status.image_statuses[name].tags[0];
    assert_eq!(format!("{:?}", tag_status.phase), "Succeeded");
    assert!(tag_status.image_id.starts_with("sha256:"), "{tag_status:?}");

    // Graceful shutdown on SIGTERM.
    let pid = daemon.0.id();
    let t = Instant::now();
    Command::new("kill").arg(pid.to_string()).status().unwrap();
    let mut daemon = daemon;
    let code = loop {
        if let Some(code) = daemon.0.try_wait().unwrap() {
            break code;
        }
        assert!(t.elapsed() < Duration::from_secs(10), "the daemon did not stop on SIGTERM");
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    assert!(code.success(), "{code:?}: {}", std::fs::read_to_string(&log).unwrap());
    eprintln!("daemon stopped {:?} after SIGTERM", t.elapsed());

    // Clean up.
    for id in &ids {
        let _ = rs
            .stop_container(pb::StopContainerRequest { container_id: id.clone(), timeout: 0 })
            .await;
        let _ = rs.remove_container(pb::RemoveContainerRequest { container_id: id.clone() }).await;
    }
    let _ =
        rs.stop_pod_sandbox(pb::StopPodSandboxRequest { pod_sandbox_id: sandbox.clone() }).await;
    let _ = rs.remove_pod_sandbox(pb::RemovePodSandboxRequest { pod_sandbox_id: sandbox }).await;
    drop(cri);
    eprintln!("containerd daemon test, wall time: {:?}", started.elapsed());
}

/// A password-protected registry (docker-registry with htpasswd) beside cri-up's: the
/// daemon binary pulls from it with the credentials a credential provider plugin (a shell
/// script speaking the kubelet's protocol) gives, where an anonymous pull is refused.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_credential_provider_plugin_pulls_from_a_password_protected_registry() {
    let Some(cri) = cri() else { return };
    let port = free_port();
    let registry = format!("127.0.0.1:{port}");
    let base = &cri.base;
    // htpasswd (apache2-utils) writes the bcrypt entry docker-registry wants.
    let htpasswd = Command::new("htpasswd").args(["-Bbn", "kruise", "s3cret"]).output().unwrap();
    assert!(htpasswd.status.success(), "htpasswd: {}", String::from_utf8_lossy(&htpasswd.stderr));
    std::fs::write(base.join("htpasswd"), &htpasswd.stdout).unwrap();
    std::fs::create_dir_all(base.join("registry-auth")).unwrap();
    std::fs::write(
        base.join("registry-auth.yml"),
        format!(
            "version: 0.1\nlog: {{level: warn}}\nstorage: {{filesystem: {{rootdirectory: {root}}}}}\n\
             http: {{addr: {registry}}}\nauth: {{htpasswd: {{realm: kruise, path: {pw}}}}}\n",
            root = base.join("registry-auth").display(),
            pw = base.join("htpasswd").display()
        ),
    )
    .unwrap();
    let hosts = base.join("certs.d").join(&registry);
    std::fs::create_dir_all(&hosts).unwrap();
    std::fs::write(
        hosts.join("hosts.toml"),
        format!("server = \"http://{registry}\"\n[host.\"http://{registry}\"]\n  capabilities = [\"pull\", \"resolve\"]\n"),
    )
    .unwrap();
    let mut registry_proc = Child(
        Command::new("docker-registry")
            .arg("serve")
            .arg(base.join("registry-auth.yml"))
            .stdout(Stdio::null())
            .stderr(std::fs::File::create(base.join("logs/registry-auth.log")).unwrap())
            .spawn()
            .unwrap(),
    );
    let image = format!("{registry}/test/busybox");
    wait_for("the protected registry takes the image", Duration::from_secs(20), || {
        let src = format!("docker://{}", cri.test_image);
        let dst = format!("docker://{image}:auth");
        async move {
            let out = Command::new("skopeo")
                .args(["copy", "-q", "--src-tls-verify=false", "--dest-tls-verify=false"])
                .args(["--dest-creds", "kruise:s3cret", &src, &dst])
                .output()
                .ok()?;
            out.status.success().then_some(())
        }
    })
    .await;
    let cri_client = CriClient::connect(&cri.sock).await.unwrap();
    let anonymous = cri_client.pull_image(&format!("{image}:auth"), None, None).await;
    assert!(anonymous.is_err(), "the registry let an anonymous pull through");

    let dir = tempfile::tempdir().unwrap();
    let plugins = dir.path().join("plugins");
    std::fs::create_dir(&plugins).unwrap();
    let calls = dir.path().join("calls");
    let response = json!({"apiVersion": "credentialprovider.kubelet.k8s.io/v1",
        "kind": "CredentialProviderResponse", "cacheKeyType": "Registry",
        "auth": {registry.clone(): {"username": "kruise", "password": "s3cret"}}});
    let script = plugins.join("loopback-credentials");
    std::fs::write(
        &script,
        format!("#!/bin/sh\ncat >> {}\nprintf '%s' '{response}'\n", calls.display()),
    )
    .unwrap();
    {
        use std::os::unix::fs::PermissionsExt as _;
        std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).unwrap();
    }
    let config = dir.path().join("CredentialProviderPlugin.yaml");
    std::fs::write(
        &config,
        format!(
            "apiVersion: kubelet.config.k8s.io/v1\nkind: CredentialProviderConfig\nproviders:\n\
             - name: loopback-credentials\n  matchImages: [\"{registry}\"]\n  defaultCacheDuration: 1m\n  \
             apiVersion: credentialprovider.kubelet.k8s.io/v1\n"
        ),
    )
    .unwrap();

    let (server, client) = sim().await;
    let port = free_port();
    let config_arg = config.display().to_string();
    let plugins_arg = plugins.display().to_string();
    let mut daemon = spawn_daemon_with(
        dir.path(),
        &server.kubeconfig,
        &cri.sock,
        port,
        &["--plugin-config-file", &config_arg, "--plugin-bin-dir", &plugins_arg],
    );
    let ni: NodeImage = serde_json::from_value(json!({
        "apiVersion": "apps.kruise.io/v1beta1", "kind": "NodeImage",
        "metadata": {"name": NODE},
        "spec": {"images": {image.clone(): {"tags": [{"tag": "auth", "version": 1,
            "imagePullPolicy": "Always", "pullPolicy": {"backoffLimit": 0}}]}}},
    }))
    .unwrap();
    let nis = Api::<NodeImage>::all(client.clone());
    nis.create(&PostParams::default(), &ni).await.unwrap();
    let status = wait_for("the protected pull", Duration::from_secs(60), || {
        let nis = nis.clone();
        async move {
            let s = nis.get(NODE).await.ok()?.status?;
            (s.succeeded + s.failed == 1).then_some(s)
        }
    })
    .await;
    let log = std::fs::read_to_string(dir.path().join("daemon.log")).unwrap_or_default();
    assert_eq!(status.succeeded, 1, "{status:?}\n{log}");
    let calls = std::fs::read_to_string(&calls).unwrap_or_default();
    assert!(
        calls.contains(&format!("\"image\":\"{image}:auth\"")),
        "the plugin was asked: {calls}"
    );
    daemon.0.kill().ok();
    registry_proc.0.kill().ok();
}
