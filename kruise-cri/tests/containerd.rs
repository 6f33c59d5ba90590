//! `CriClient` against a real containerd (CRI v1) and real registries on loopback.
//!
//! Finding containerd:
//! - `KRUISE_CRI_ENV=<BASE>/env` (the file `shared/cri/cri-up.sh` writes): use that instance;
//! - otherwise the test runs `cri-up.sh` (from `KRUISE_CRI_UP`, or `shared/cri/cri-up.sh` beside
//!   the repository) into a temporary BASE on free ports, and `cri-down.sh` afterwards;
//! - `KRUISE_CRI_SKIP=1` skips the test (for a machine that cannot run containerd).
//!
//! For pulls with credentials the test starts a second `docker-registry` with htpasswd auth on
//! another free port, copies the test image into it with skopeo, and tells containerd the new
//! registry is plain HTTP through a `hosts.toml` under `BASE/certs.d` (read at each pull).
#![allow(clippy::unwrap_used)]

use std::collections::BTreeMap;
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use kruise_cri::proto as pb;
use kruise_cri::{
    AuthConfig, ContainerFilter, ContainerRuntime, ContainerState, CriClient, CriError,
};

/// The containerd instance under test; stops what it started.
struct Cri {
    sock: PathBuf,
    base: PathBuf,
    test_image: String,
    started: Option<(PathBuf, tempfile::TempDir)>,
}

impl Drop for Cri {
    fn drop(&mut self) {
        if let Some((down, _dir)) = &self.started {
            let t = Instant::now();
            let out = Command::new("bash").arg(down).arg(&self.base).output();
            eprintln!("cri-down.sh: {:?}", t.elapsed());
            if let Ok(out) = out
                && !out.status.success()
            {
                eprintln!("cri-down.sh: {}", String::from_utf8_lossy(&out.stderr));
            }
        }
    }
}

fn read_env(path: &Path) -> BTreeMap<String, String> {
    std::fs::read_to_string(path)
        .unwrap_or_else(|e| panic!("reading {}: {e}", path.display()))
        .lines()
        .filter_map(|l| l.split_once('='))
        .map(|(k, v)| (k.trim().to_string(), v.trim().to_string()))
        .collect()
}

fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port()
}

fn cri() -> Option<Cri> {
    if std::env::var_os("KRUISE_CRI_SKIP").is_some() {
        eprintln!("KRUISE_CRI_SKIP is set: skipping the containerd test");
        return None;
    }
    if let Some(env) = std::env::var_os("KRUISE_CRI_ENV") {
        let env = PathBuf::from(env);
        let vars = read_env(&env);
        let sock = PathBuf::from(&vars["CRI_SOCK"]);
        return Some(Cri {
            base: env.parent().unwrap().to_path_buf(),
            sock,
            test_image: vars["TEST_IMAGE"].clone(),
            started: None,
        });
    }
    let up = std::env::var_os("KRUISE_CRI_UP").map(PathBuf::from).unwrap_or_else(|| {
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../../shared/cri/cri-up.sh")
    });
    assert!(
        up.exists(),
        "{} is missing: set KRUISE_CRI_ENV to a running instance's env file, KRUISE_CRI_UP to \
         cri-up.sh, or KRUISE_CRI_SKIP=1",
        up.display()
    );
    let down = up.with_file_name("cri-down.sh");
    let dir = tempfile::Builder::new().prefix("kruise-cri-").tempdir().unwrap();
    let base = dir.path().join("base");
    let started = Instant::now();
    let out = Command::new("bash")
        .arg(&up)
        .arg(&base)
        .env("REGISTRY_PORT", free_port().to_string())
        .stdin(Stdio::null())
        .output()
        .unwrap();
    let cri = Cri {
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
    eprintln!("cri-up.sh: {:?}", started.elapsed());
    let vars = read_env(&base.join("env"));
    let mut cri = cri;
    cri.sock = PathBuf::from(&vars["CRI_SOCK"]);
    cri.test_image = vars["TEST_IMAGE"].clone();
    Some(cri)
}

/// A `docker-registry` that wants basic auth, holding a copy of the test image.
struct AuthRegistry {
    child: Child,
    image: String,
    _dir: tempfile::TempDir,
}

impl Drop for AuthRegistry {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

const USER: &str = "kruise";
const PASSWORD: &str = "s3cret-pull";

fn run(cmd: &mut Command) -> String {
    let out = cmd.stdin(Stdio::null()).output().unwrap();
    assert!(
        out.status.success(),
        "{cmd:?} failed:\n{}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// HTTP status of `GET /v2/` (a registry without credentials answers 401).
fn v2_status(port: u16) -> Option<u16> {
    use std::io::{Read, Write};
    let mut s = std::net::TcpStream::connect(("127.0.0.1", port)).ok()?;
    s.set_read_timeout(Some(Duration::from_secs(2))).ok()?;
    s.write_all(b"GET /v2/ HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n").ok()?;
    let mut buf = [0u8; 64];
    let n = s.read(&mut buf).ok()?;
    std::str::from_utf8(&buf[..n]).ok()?.split(' ').nth(1)?.parse().ok()
}

fn auth_registry(cri: &Cri) -> AuthRegistry {
    let dir = tempfile::tempdir().unwrap();
    let port = free_port();
    let htpasswd = run(Command::new("htpasswd").args(["-Bbn", USER, PASSWORD]));
    std::fs::write(dir.path().join("htpasswd"), htpasswd).unwrap();
    let config = format!(
        "version: 0.1\nlog: {{level: warn}}\n\
         storage: {{filesystem: {{rootdirectory: {root}}}}}\n\
         http: {{addr: 127.0.0.1:{port}}}\n\
         auth: {{htpasswd: {{realm: kruise-test, path: {htpasswd}}}}}\n",
        root = dir.path().join("data").display(),
        htpasswd = dir.path().join("htpasswd").display(),
    );
    let config_path = dir.path().join("registry.yml");
    std::fs::write(&config_path, config).unwrap();
    let log = std::fs::File::create(dir.path().join("registry.log")).unwrap();
    let child = Command::new("docker-registry")
        .arg("serve")
        .arg(&config_path)
        .stdout(log.try_clone().unwrap())
        .stderr(log)
        .spawn()
        .unwrap();
    let mut registry =
        AuthRegistry { child, image: format!("127.0.0.1:{port}/auth/busybox:1"), _dir: dir };
    let deadline = Instant::now() + Duration::from_secs(10);
    while v2_status(port) != Some(401) {
        assert!(
            Instant::now() < deadline,
            "the auth registry did not come up: {:?}",
            registry.child.try_wait()
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    run(Command::new("skopeo").args([
        "copy",
        "-q",
        "--src-tls-verify=false",
        "--dest-tls-verify=false",
        "--dest-creds",
        &format!("{USER}:{PASSWORD}"),
        &format!("docker://{}", cri.test_image),
        &format!("docker://{}", registry.image),
    ]));
    // containerd reads BASE/certs.d/<host>/hosts.toml at each pull: plain HTTP for this one.
    let host = format!("127.0.0.1:{port}");
    let hosts_dir = cri.base.join("certs.d").join(&host);
    std::fs::create_dir_all(&hosts_dir).unwrap();
    std::fs::write(
        hosts_dir.join("hosts.toml"),
        format!(
            "server = \"http://{host}\"\n[host.\"http://{host}\"]\n  capabilities = [\"pull\", \"resolve\"]\n"
        ),
    )
    .unwrap();
    registry
}

fn sandbox_config(base: &Path, name: &str) -> pb::PodSandboxConfig {
    let uid = format!("{name}-{}", std::process::id());
    pb::PodSandboxConfig {
        metadata: Some(pb::PodSandboxMetadata {
            name: name.into(),
            uid: uid.clone(),
            namespace: "kruise-cri-test".into(),
            attempt: 0,
        }),
        log_directory: base.join("podlogs").join(&uid).display().to_string(),
        labels: [("io.kubernetes.pod.name".to_string(), name.to_string())].into(),
        linux: Some(pb::LinuxPodSandboxConfig {
            security_context: Some(pb::LinuxSandboxSecurityContext {
                // There is no pod network here: host networking only.
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
async fn containerd_end_to_end() {
    let started = Instant::now();
    let Some(cri) = cri() else { return };
    let client = CriClient::connect(&cri.sock).await.unwrap();

    // Version.
    let v = client.version().await.unwrap();
    assert_eq!(v.runtime_name, "containerd", "{v:?}");
    assert_eq!(v.runtime_api_version, "v1", "{v:?}");

    // Pull the test image anonymously from the open registry.
    let image_ref = client.pull_image(&cri.test_image, None, None).await.unwrap();
    assert!(image_ref.starts_with("sha256:"), "{image_ref}");
    let status = client.image_status(&cri.test_image).await.unwrap().unwrap();
    assert_eq!(status.id, image_ref);
    assert!(status.repo_tags.contains(&cri.test_image), "{status:?}");
    let listed = client.list_images(Some(&cri.test_image)).await.unwrap();
    assert!(listed.iter().any(|i| i.id == image_ref), "{listed:?}");
    assert!(client.image_status("127.0.0.1:1/none:0").await.unwrap().is_none());

    // Pulls from a registry that wants credentials.
    let registry = auth_registry(&cri);
    let t = Instant::now();
    let err = client.pull_image(&registry.image, None, None).await.unwrap_err();
    match &err {
        CriError::PullImage { image, .. } => assert_eq!(image, &registry.image),
        other => panic!("{other:?}"),
    }
    assert!(err.to_string().contains(&registry.image), "{err}");
    let err = client
        .pull_image(&registry.image, Some(AuthConfig::basic(USER, "wrong")), None)
        .await
        .unwrap_err();
    assert!(matches!(err, CriError::PullImage { .. }), "{err:?}");
    let authed_ref = client
        .pull_image(&registry.image, Some(AuthConfig::basic(USER, PASSWORD)), None)
        .await
        .unwrap();
    eprintln!("pulls with auth (two refused, one accepted): {:?}", t.elapsed());
    // The same layers, so the same image ID; the new tag is there.
    assert_eq!(authed_ref, image_ref);
    let status = client.image_status(&registry.image).await.unwrap().unwrap();
    assert!(status.repo_tags.contains(&registry.image), "{status:?}");

    // A host-network pod with a busybox container that sleeps.
    let mut rs = client.runtime_client();
    let config = sandbox_config(&cri.base, "cri-test");
    let sandbox = rs
        .run_pod_sandbox(pb::RunPodSandboxRequest {
            config: Some(config.clone()),
            runtime_handler: String::new(),
        })
        .await
        .unwrap()
        .into_inner()
        .pod_sandbox_id;
    let id = rs
        .create_container(pb::CreateContainerRequest {
            pod_sandbox_id: sandbox.clone(),
            config: Some(pb::ContainerConfig {
                metadata: Some(pb::ContainerMetadata { name: "main".into(), attempt: 0 }),
                image: Some(pb::ImageSpec { image: cri.test_image.clone(), ..Default::default() }),
                // The shell ignores SIGTERM, so a stop must wait out the grace period.
                command: vec!["sh".into(), "-c".into(), "trap '' TERM; sleep 3600".into()],
                log_path: "main.log".into(),
                labels: [("io.kubernetes.container.name".to_string(), "main".to_string())].into(),
                ..Default::default()
            }),
            sandbox_config: Some(config),
        })
        .await
        .unwrap()
        .into_inner()
        .container_id;
    rs.start_container(pb::StartContainerRequest { container_id: id.clone() }).await.unwrap();

    let listed = client.list_containers(&ContainerFilter::pod_sandbox(&sandbox)).await.unwrap();
    assert_eq!(listed.len(), 1, "{listed:?}");
    assert_eq!((listed[0].id.as_str(), listed[0].name.as_str()), (id.as_str(), "main"));
    assert_eq!(listed[0].state, ContainerState::Running);
    let by_label = client
        .list_containers(
            &ContainerFilter::pod_sandbox(&sandbox).label("io.kubernetes.container.name", "main"),
        )
        .await
        .unwrap();
    assert_eq!(by_label.len(), 1);
    let st = client.container_status(&id).await.unwrap();
    assert_eq!(st.state, ContainerState::Running);
    assert_eq!(st.attempt, 0);

    // ExecSync.
    let r = client
        .exec_sync(&id, vec!["echo".into(), "hello".into()], Duration::from_secs(10))
        .await
        .unwrap();
    assert_eq!((String::from_utf8_lossy(&r.stdout).as_ref(), r.exit_code), ("hello\n", 0));
    let r = client
        .exec_sync(&id, vec!["sh".into(), "-c".into(), "exit 3".into()], Duration::from_secs(10))
        .await
        .unwrap();
    assert_eq!(r.exit_code, 3);

    // StopContainer with a grace period: the container ignores SIGTERM, so the runtime waits
    // the grace period out and kills it.
    let t = Instant::now();
    client.stop_container(&id, 1).await.unwrap();
    let stop_took = t.elapsed();
    let st = client.container_status(&id).await.unwrap();
    assert_eq!(st.state, ContainerState::Exited, "{st:?}");
    assert_eq!(st.exit_code, 137, "{st:?}");
    assert!(st.finished_at >= st.started_at);
    assert!(stop_took >= Duration::from_millis(900), "{stop_took:?}");
    eprintln!("StopContainer with a 1 s grace period: {stop_took:?}");
    let err = client.exec_sync(&id, vec!["true".into()], Duration::from_secs(5)).await.unwrap_err();
    eprintln!("exec in an exited container: {err}");
    assert!(client.container_status("0000").await.unwrap_err().is_not_found());

    // Clean up what this test made.
    rs.remove_container(pb::RemoveContainerRequest { container_id: id.clone() }).await.unwrap();
    rs.stop_pod_sandbox(pb::StopPodSandboxRequest { pod_sandbox_id: sandbox.clone() })
        .await
        .unwrap();
    rs.remove_pod_sandbox(pb::RemovePodSandboxRequest { pod_sandbox_id: sandbox.clone() })
        .await
        .unwrap();
    assert!(client.container_status(&id).await.unwrap_err().is_not_found());
    let mut is = client.image_client();
    is.remove_image(pb::RemoveImageRequest {
        image: Some(pb::ImageSpec { image: registry.image.clone(), ..Default::default() }),
    })
    .await
    .unwrap();
    drop(registry);
    drop(cri);
    eprintln!("containerd test, wall time: {:?}", started.elapsed());
}
