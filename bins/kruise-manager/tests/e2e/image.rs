//! The container image without docker: `scripts/oci-image.sh` builds an OCI layout with umoci
//! from this build's kruise-manager, skopeo pushes it to a registry on loopback, and a real
//! containerd (`../shared/cri/cri-up.sh`) pulls it through kruise-cri and runs
//! `kruise-manager --version` in it the way the chart runs the manager: as user 65532 with a
//! read-only root filesystem.
//!
//! `KRUISE_CRI_SKIP=1` skips the test on a machine that cannot run containerd (CI runs it:
//! `.ci/run` installs the packages).

use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use kruise_cri::proto as pb;
use kruise_cri::{ContainerRuntime, ContainerState, CriClient};

/// containerd and a registry started for the test, stopped when dropped.
struct Runtime {
    base: PathBuf,
    sock: PathBuf,
    registry_port: u16,
    down: PathBuf,
    _dir: tempfile::TempDir,
}

impl Drop for Runtime {
    fn drop(&mut self) {
        let _ = Command::new("bash").arg(&self.down).arg(&self.base).output();
    }
}

fn run(what: &str, cmd: &mut Command) -> String {
    let out = cmd.stdin(Stdio::null()).output().unwrap_or_else(|e| panic!("{what}: {e}"));
    assert!(
        out.status.success(),
        "{what} failed:\n{}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

fn start_runtime() -> Option<Runtime> {
    if std::env::var_os("KRUISE_CRI_SKIP").is_some() {
        eprintln!("KRUISE_CRI_SKIP is set: skipping the image test");
        return None;
    }
    let up = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../../shared/cri/cri-up.sh");
    assert!(up.exists(), "{} is missing (or set KRUISE_CRI_SKIP=1)", up.display());
    let dir = tempfile::Builder::new().prefix("kruise-image-").tempdir().expect("temp dir");
    let base = dir.path().join("base");
    let registry_port = TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("a free port");
    let runtime = Runtime {
        sock: base.join("containerd.sock"),
        base: base.clone(),
        registry_port,
        down: up.with_file_name("cri-down.sh"),
        _dir: dir,
    };
    run(
        "cri-up.sh",
        Command::new("bash").arg(&up).arg(&base).env("REGISTRY_PORT", registry_port.to_string()),
    );
    Some(runtime)
}

#[test]
fn the_image_runs_on_containerd_as_nonroot_with_a_read_only_root() {
    let started = Instant::now();
    let Some(runtime) = start_runtime() else { return };
    let layout = runtime.base.join("kruise-oci");
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../scripts/oci-image.sh");
    let t = Instant::now();
    run(
        "oci-image.sh",
        Command::new("bash")
            .arg(&script)
            .arg(env!("CARGO_BIN_EXE_kruise-manager"))
            .arg(&layout)
            .arg("0.1.0"),
    );
    let image = format!("127.0.0.1:{}/kruise-rs/kruise-manager:0.1.0", runtime.registry_port);
    run(
        "skopeo copy",
        Command::new("skopeo")
            .args(["copy", "-q", "--dest-tls-verify=false"])
            .arg(format!("oci:{}:0.1.0", layout.display()))
            .arg(format!("docker://{image}")),
    );
    eprintln!("image built and pushed: {:?}", t.elapsed());

    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("runtime");
    let log = rt.block_on(async {
        let client = CriClient::connect(&runtime.sock).await.expect("containerd answers");
        client.pull_image(&image, None, None).await.expect("the image pulls");
        let uid = format!("kruise-image-{}", std::process::id());
        let log_dir = runtime.base.join("podlogs").join(&uid);
        let sandbox_config = pb::PodSandboxConfig {
            metadata: Some(pb::PodSandboxMetadata {
                name: "kruise-manager".into(),
                uid: uid.clone(),
                namespace: "kruise-system".into(),
                attempt: 0,
            }),
            log_directory: log_dir.display().to_string(),
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
        };
        let mut rs = client.runtime_client();
        let sandbox = rs
            .run_pod_sandbox(pb::RunPodSandboxRequest {
                config: Some(sandbox_config.clone()),
                runtime_handler: String::new(),
            })
            .await
            .expect("a sandbox")
            .into_inner()
            .pod_sandbox_id;
        let id = rs
            .create_container(pb::CreateContainerRequest {
                pod_sandbox_id: sandbox.clone(),
                config: Some(pb::ContainerConfig {
                    metadata: Some(pb::ContainerMetadata { name: "manager".into(), attempt: 0 }),
                    image: Some(pb::ImageSpec { image: image.clone(), ..Default::default() }),
                    // The image's entrypoint, with `--version` for its `run`.
                    args: vec!["--version".into()],
                    log_path: "manager.log".into(),
                    linux: Some(pb::LinuxContainerConfig {
                        security_context: Some(pb::LinuxContainerSecurityContext {
                            run_as_user: Some(pb::Int64Value { value: 65532 }),
                            readonly_rootfs: true,
                            ..Default::default()
                        }),
                        ..Default::default()
                    }),
                    ..Default::default()
                }),
                sandbox_config: Some(sandbox_config),
            })
            .await
            .expect("a container")
            .into_inner()
            .container_id;
        rs.start_container(pb::StartContainerRequest { container_id: id.clone() })
            .await
            .expect("the container starts");
        let deadline = Instant::now() + Duration::from_secs(30);
        let status = loop {
            let status = client.container_status(&id).await.expect("status");
            if status.state == ContainerState::Exited || Instant::now() > deadline {
                break status;
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        };
        let log = std::fs::read_to_string(log_dir.join("manager.log")).unwrap_or_default();
        assert_eq!(status.state, ContainerState::Exited, "{status:?}\n{log}");
        assert_eq!(status.exit_code, 0, "{status:?}\n{log}");
        rs.remove_container(pb::RemoveContainerRequest { container_id: id }).await.ok();
        rs.stop_pod_sandbox(pb::StopPodSandboxRequest { pod_sandbox_id: sandbox.clone() })
            .await
            .ok();
        rs.remove_pod_sandbox(pb::RemovePodSandboxRequest { pod_sandbox_id: sandbox }).await.ok();
        log
    });
    // CRI log lines: `<time> stdout F <text>`.
    assert!(
        log.lines().any(|l| l.ends_with(&format!("stdout F kruise-manager {}", env!("CARGO_PKG_VERSION")))),
        "{log}"
    );
    drop(runtime);
    eprintln!("image test, wall time: {:?}", started.elapsed());
}
