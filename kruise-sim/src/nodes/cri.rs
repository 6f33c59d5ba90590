//! kruise-cri's [`ContainerRuntime`](kruise_cri::ContainerRuntime) over a simulated node's
//! runtime (feature `cri`): what kruise-daemon's workers run against on a simulated node.
//!
//! [`SimCri`] works on the same runtime instance as the node's kubelet, so:
//!
//! - containers are listed with the labels and annotations the kubelet created them with
//!   (`io.kubernetes.pod.uid`, `io.kubernetes.container.name`, the container hash, …), their
//!   restart count as the attempt, and IDs without the `containerd://` prefix, as a CRI
//!   runtime reports them. The simulator has no pod sandboxes: a container's pod sandbox ID
//!   is its pod's UID.
//! - [`stop_container`](kruise_cri::ContainerRuntime::stop_container) stops the container
//!   at once (exit code 143 with a grace period, 137 without, as SIGTERM and SIGKILL) and
//!   wakes the kubelets, which see it exited and restart it as the pod's restart policy says.
//! - images are the node's image store: pulls add to it, listings read it. Credentials and
//!   the sandbox config are accepted and not checked.
//! - [`exec_sync`](kruise_cri::ContainerRuntime::exec_sync) runs the command in a running
//!   container through [`super::shell`], against the environment the container was created
//!   with ([`ContainerInfo::env`]: `PATH`, `HOSTNAME`, the kubelet's variables, `HOME`; what
//!   `env` prints, as kruise-daemon reads a container's environment from a real runtime) and
//!   its in-memory filesystem ([`super::fs`]): `touch /tmp/ready` through `kubectl exec` makes
//!   an exec probe's `cat /tmp/ready` succeed. As containerd answers:
//!   - a container that is not running: [`ErrorKind::Unknown`], `failed to exec in container:
//!     container is in CONTAINER_EXITED state`;
//!   - a program the container lacks (run directly, not from `sh -c`): [`ErrorKind::Unknown`],
//!     `failed to exec in container: failed to start exec "<id>": OCI runtime exec failed:
//!     exec failed: unable to start container process: exec: "nope": executable file not
//!     found in $PATH: unknown`;
//!   - a command still running when the timeout passes (zero: none): it is killed and the
//!     answer is [`ErrorKind::DeadlineExceeded`], `failed to exec in container: timeout 1s
//!     exceeded: context deadline exceeded`, which the kubelet reports as a timed-out probe.

use std::time::Duration;

use kruise_cri::types::StringMap;
use kruise_cri::{
    AuthConfig, BoxFuture, Container, ContainerFilter, ContainerStatus, CriError, CriResult,
    ErrorKind, ExecSyncResult, ImageInfo, PullSandboxConfig, VersionInfo,
};

use super::NodeRuntime;
use super::runtime::{ContainerInfo, ContainerState, RuntimeError, hostname_of};
use super::shell;

/// The prefix the simulated runtime's container IDs carry (the kubelet reports them so in pod
/// status); CRI IDs are without it.
const ID_PREFIX: &str = "containerd://";
/// Exit code of a container stopped with a grace period (it honoured SIGTERM).
pub const STOP_EXIT_CODE: i32 = kruise_cri::fake::STOP_EXIT_CODE;
/// Exit code of a container stopped with no grace period (SIGKILL).
pub const KILL_EXIT_CODE: i32 = kruise_cri::fake::KILL_EXIT_CODE;
/// Size reported for every image (the node status reports the same).
const IMAGE_SIZE: u64 = 10_000_000;

/// kruise-cri's runtime trait over one simulated node's runtime.
#[derive(Clone, Debug)]
pub struct SimCri {
    node: NodeRuntime,
}

impl SimCri {
    /// The CRI view of `node`'s runtime.
    pub fn new(node: NodeRuntime) -> Self {
        SimCri { node }
    }

    /// The node it serves.
    pub fn node(&self) -> &str {
        self.node.node()
    }

    /// The simulated runtime's ID of a CRI container ID (either form is accepted).
    fn sim_id(id: &str) -> String {
        if id.contains("://") { id.to_owned() } else { format!("{ID_PREFIX}{id}") }
    }

    fn find(&self, id: &str) -> CriResult<ContainerInfo> {
        self.node
            .runtime()
            .container_status(&Self::sim_id(id))
            .ok_or_else(|| CriError::NotFound { what: "container", id: id.to_owned() })
    }

    fn images(&self) -> Vec<ImageInfo> {
        self.node
            .runtime()
            .list_images()
            .into_iter()
            .map(|(reference, id)| image_info(reference, id))
            .collect()
    }
}

fn image_info(reference: String, id: String) -> ImageInfo {
    ImageInfo {
        id,
        repo_tags: vec![reference],
        repo_digests: vec![],
        size: IMAGE_SIZE,
        pinned: false,
    }
}

/// Whether `image` names `info`: by reference (`:latest` implied), or by ID.
fn image_matches(info: &ImageInfo, image: &str) -> bool {
    let wanted = kruise_cri::fake::normalize_image(image);
    info.id == image
        || info
            .repo_tags
            .iter()
            .any(|t| t == image || kruise_cri::fake::normalize_image(t) == wanted)
}

fn cri_state(state: ContainerState) -> kruise_cri::ContainerState {
    match state {
        ContainerState::Created => kruise_cri::ContainerState::Created,
        ContainerState::Running => kruise_cri::ContainerState::Running,
        ContainerState::Exited(_) => kruise_cri::ContainerState::Exited,
    }
}

fn cri_id(id: &str) -> String {
    id.strip_prefix(ID_PREFIX).unwrap_or(id).to_owned()
}

fn to_container(c: ContainerInfo) -> Container {
    Container {
        id: cri_id(&c.id),
        pod_sandbox_id: c.pod_uid,
        name: c.name,
        attempt: c.meta.attempt,
        image: c.image,
        image_ref: c.image_id,
        state: cri_state(c.state),
        created_at: c.created_at,
        labels: c.meta.labels,
        annotations: c.meta.annotations,
    }
}

fn to_status(c: ContainerInfo) -> ContainerStatus {
    let (exit_code, reason) = match c.state {
        ContainerState::Exited(0) => (0, "Completed"),
        ContainerState::Exited(code) => (code, "Error"),
        _ => (0, ""),
    };
    ContainerStatus {
        id: cri_id(&c.id),
        name: c.name,
        attempt: c.meta.attempt,
        state: cri_state(c.state),
        created_at: c.created_at,
        started_at: c.started_at,
        finished_at: c.finished_at,
        exit_code,
        image: c.image,
        image_ref: c.image_id,
        reason: reason.to_owned(),
        message: String::new(),
        labels: c.meta.labels,
        annotations: c.meta.annotations,
    }
}

/// A duration as Go prints it (`1s`, `1m30s`, `500ms`, `1.5s`).
pub fn go_duration(d: Duration) -> String {
    let ms = d.as_millis();
    if ms < 1000 {
        return format!("{ms}ms");
    }
    if d.subsec_millis() != 0 && d.as_secs() < 60 {
        return format!("{}s", d.as_secs_f64());
    }
    let s = d.as_secs();
    match (s / 3600, (s % 3600) / 60, s % 60) {
        (0, 0, s) => format!("{s}s"),
        (0, m, s) => format!("{m}m{s}s"),
        (h, m, s) => format!("{h}h{m}m{s}s"),
    }
}

fn has_labels(labels: &StringMap, selector: &StringMap) -> bool {
    selector.iter().all(|(k, v)| labels.get(k) == Some(v))
}

impl kruise_cri::ContainerRuntime for SimCri {
    fn version(&self) -> BoxFuture<'_, CriResult<VersionInfo>> {
        Box::pin(async {
            Ok(VersionInfo {
                version: "0.1.0".into(),
                runtime_name: "kruise-sim".into(),
                runtime_version: "0.1.0".into(),
                runtime_api_version: "v1".into(),
            })
        })
    }

    fn pull_image<'a>(
        &'a self,
        image: &'a str,
        _auth: Option<AuthConfig>,
        _sandbox: Option<PullSandboxConfig>,
    ) -> BoxFuture<'a, CriResult<String>> {
        Box::pin(async move {
            self.node.runtime().pull_image(image).map_err(|e| CriError::PullImage {
                image: image.to_owned(),
                kind: match e {
                    RuntimeError::InvalidImage(_) => ErrorKind::InvalidArgument,
                    _ => ErrorKind::Unknown,
                },
                message: e.to_string(),
            })
        })
    }

    fn list_images<'a>(
        &'a self,
        filter: Option<&'a str>,
    ) -> BoxFuture<'a, CriResult<Vec<ImageInfo>>> {
        Box::pin(async move {
            let mut images = self.images();
            if let Some(filter) = filter {
                images.retain(|i| image_matches(i, filter));
            }
            Ok(images)
        })
    }

    fn image_status<'a>(&'a self, image: &'a str) -> BoxFuture<'a, CriResult<Option<ImageInfo>>> {
        Box::pin(async move {
            let runtime = self.node.runtime();
            if let Some(id) = runtime.image_status(image) {
                return Ok(Some(image_info(image.to_owned(), id)));
            }
            Ok(self.images().into_iter().find(|i| image_matches(i, image)))
        })
    }

    fn list_containers<'a>(
        &'a self,
        filter: &'a ContainerFilter,
    ) -> BoxFuture<'a, CriResult<Vec<Container>>> {
        Box::pin(async move {
            let pod_uid = filter.pod_sandbox_id.as_deref().or_else(|| {
                filter
                    .label_selector
                    .get(kruise_api::well_known::kubernetes::cri::POD_UID)
                    .map(String::as_str)
            });
            let mut out: Vec<Container> = self
                .node
                .runtime()
                .list_containers(pod_uid)
                .into_iter()
                .map(to_container)
                .filter(|c| {
                    filter.id.as_ref().is_none_or(|id| cri_id(id) == c.id)
                        && filter.state.is_none_or(|s| s == c.state)
                        && filter.pod_sandbox_id.as_ref().is_none_or(|p| *p == c.pod_sandbox_id)
                        && has_labels(&c.labels, &filter.label_selector)
                })
                .collect();
            out.sort_by(|a, b| a.id.cmp(&b.id));
            Ok(out)
        })
    }

    fn container_status<'a>(&'a self, id: &'a str) -> BoxFuture<'a, CriResult<ContainerStatus>> {
        Box::pin(async move { self.find(id).map(to_status) })
    }

    fn stop_container<'a>(
        &'a self,
        id: &'a str,
        timeout_secs: i64,
    ) -> BoxFuture<'a, CriResult<()>> {
        Box::pin(async move {
            let current = self.find(id)?;
            if matches!(current.state, ContainerState::Exited(_)) {
                return Ok(());
            }
            let code = if timeout_secs > 0 { STOP_EXIT_CODE } else { KILL_EXIT_CODE };
            self.node.runtime().stop_container(&current.id, code).map_err(|e| match e {
                RuntimeError::ContainerNotFound(_) => {
                    CriError::NotFound { what: "container", id: id.to_owned() }
                }
                other => CriError::Rpc {
                    method: "StopContainer",
                    kind: ErrorKind::Unknown,
                    message: other.to_string(),
                },
            })?;
            self.node.notify_changed();
            Ok(())
        })
    }

    fn exec_sync<'a>(
        &'a self,
        id: &'a str,
        cmd: Vec<String>,
        timeout: Duration,
    ) -> BoxFuture<'a, CriResult<ExecSyncResult>> {
        Box::pin(async move {
            let c = self.find(id)?;
            let not_running = match c.state {
                ContainerState::Running => None,
                ContainerState::Created => Some("CONTAINER_CREATED"),
                ContainerState::Exited(_) => Some("CONTAINER_EXITED"),
            };
            if let Some(state) = not_running {
                // containerd's `execInContainer`, wrapped by `ExecSync`; a plain error, so
                // gRPC's Unknown.
                return Err(CriError::Rpc {
                    method: "ExecSync",
                    kind: ErrorKind::Unknown,
                    message: format!("failed to exec in container: container is in {state} state"),
                });
            }
            let container = shell::Container {
                env: c.env.clone(),
                hostname: hostname_of(self.node(), &c.meta).to_owned(),
                fs: std::sync::Arc::new(shell::RuntimeFs {
                    runtime: self.node.runtime().clone(),
                    id: c.id.clone(),
                }),
            };
            let run = shell::exec(&container, &cmd, shell::Stdin::Closed, None);
            let ran = if timeout.is_zero() {
                run.await
            } else {
                tokio::time::timeout(timeout, run).await.map_err(|_| CriError::Rpc {
                    method: "ExecSync",
                    kind: ErrorKind::DeadlineExceeded,
                    message: format!(
                        "failed to exec in container: timeout {} exceeded: context deadline exceeded",
                        go_duration(timeout)
                    ),
                })?
            };
            match ran {
                Ok(out) => Ok(ExecSyncResult {
                    stdout: out.stdout,
                    stderr: out.stderr,
                    exit_code: out.exit_code,
                }),
                Err(e) => Err(CriError::Rpc {
                    method: "ExecSync",
                    kind: match e {
                        shell::ExecError::Empty => ErrorKind::InvalidArgument,
                        shell::ExecError::NotFound(_) => ErrorKind::Unknown,
                    },
                    message: shell::exec_failure(&e),
                }),
            }
        })
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use std::sync::Arc;

    use kruise_api::well_known::kubernetes::cri as labels;
    use kruise_cri::ContainerRuntime as _;

    use k8s_openapi::api::core::v1::Pod;
    use tokio::time::Instant;

    use super::*;
    use crate::nodes::kubelet::{Delays, Kubelet};
    use crate::nodes::runtime::{ContainerMeta, ContainerRuntime as _, FakeRuntime};

    fn node() -> (NodeRuntime, Arc<FakeRuntime>, Arc<tokio::sync::Notify>) {
        let fake = Arc::new(FakeRuntime::new("n1"));
        let changed = Arc::new(tokio::sync::Notify::new());
        let node =
            NodeRuntime { node: "n1".into(), runtime: fake.clone(), changed: changed.clone() };
        (node, fake, changed)
    }

    #[tokio::test]
    async fn lists_stops_and_pulls() {
        let (node, fake, changed) = node();
        let cri = SimCri::new(node);
        fake.pull_image("nginx:1").unwrap();
        let meta = ContainerMeta {
            attempt: 2,
            labels: [(labels::POD_UID.to_owned(), "u1".to_owned())].into(),
            annotations: [(labels::CONTAINER_HASH.to_owned(), "abc".to_owned())].into(),
            ..ContainerMeta::default()
        };
        let id = fake.create_container("u1", "app", "nginx:1", meta).unwrap();
        fake.start_container(&id).unwrap();
        let other =
            fake.create_container("u2", "app", "nginx:1", ContainerMeta::default()).unwrap();

        let filter = ContainerFilter::default().label(labels::POD_UID, "u1");
        let listed = cri.list_containers(&filter).await.unwrap();
        assert_eq!(listed.len(), 1);
        let c = &listed[0];
        assert_eq!(format!("{ID_PREFIX}{}", c.id), id);
        assert_eq!((c.attempt, c.state), (2, kruise_cri::ContainerState::Running));
        assert_eq!(c.annotations[labels::CONTAINER_HASH], "abc");
        assert_eq!(cri.list_containers(&ContainerFilter::default()).await.unwrap().len(), 2);
        let status = cri.container_status(&c.id).await.unwrap();
        assert!(status.started_at > 0);

        cri.stop_container(&c.id, 30).await.unwrap();
        assert_eq!(fake.container_state(&id), Some(ContainerState::Exited(STOP_EXIT_CODE)));
        // The kubelets were woken.
        tokio::time::timeout(Duration::from_secs(1), changed.notified()).await.unwrap();
        // Stopping again succeeds and keeps the code.
        cri.stop_container(&c.id, 0).await.unwrap();
        let status = cri.container_status(&c.id).await.unwrap();
        assert_eq!((status.exit_code, status.reason.as_str()), (STOP_EXIT_CODE, "Error"));
        assert!(cri.stop_container("nope", 0).await.unwrap_err().is_not_found());
        assert!(cri.container_status(&cri_id(&other)).await.is_ok());

        let id = cri.pull_image("busybox:1.36", None, None).await.unwrap();
        assert!(cri.image_status("busybox:1.36").await.unwrap().is_some_and(|i| i.id == id));
        assert!(cri.image_status("busybox:9").await.unwrap().is_none());
        assert_eq!(cri.list_images(Some("busybox:1.36")).await.unwrap().len(), 1);
        assert_eq!(cri.list_images(None).await.unwrap().len(), 2);
        assert!(cri.pull_image("", None, None).await.is_err());
        // Commands run in the container's shell; `env` prints the environment.
        let other = cri_id(&other);
        fake.start_container(&format!("{ID_PREFIX}{other}")).unwrap();
        let exec = cri.exec_sync(&other, vec!["true".into()], Duration::ZERO).await.unwrap();
        assert_eq!(exec.exit_code, 0);
        let exec = cri.exec_sync(&other, vec!["nope".into()], Duration::ZERO).await.unwrap_err();
        assert_eq!(exec.kind(), ErrorKind::Unknown);
        assert!(
            exec.to_string()
                .contains(r#"exec: "nope": executable file not found in $PATH: unknown"#),
            "{exec}"
        );
        let exec = cri.exec_sync(&other, vec!["env".into()], Duration::ZERO).await.unwrap();
        assert_eq!(exec.exit_code, 0);
        assert_eq!(
            String::from_utf8(exec.stdout).unwrap(),
            format!("PATH={}\nHOSTNAME=n1\nHOME=/root\n", super::super::runtime::DEFAULT_PATH)
        );
        // The stopped one gives containerd's error.
        let exec = cri.exec_sync(&c.id, vec!["env".into()], Duration::ZERO).await.unwrap_err();
        assert_eq!(exec.kind(), ErrorKind::Unknown);
        assert!(
            exec.to_string()
                .contains("failed to exec in container: container is in CONTAINER_EXITED state"),
            "{exec}"
        );
        let exec = cri.exec_sync("nope", vec!["env".into()], Duration::ZERO).await.unwrap_err();
        assert!(exec.is_not_found());
    }

    /// Syncs `pod` until the kubelet has nothing more to do; the time it got to.
    fn settle(k: &mut Kubelet, pod: &Pod, mut now: Instant) -> Instant {
        loop {
            match k.sync(pod, now).wake {
                Some(w) => now = w,
                None => return now,
            }
        }
    }

    /// The running container of `pod_uid` through the CRI.
    async fn running(cri: &SimCri, pod_uid: &str) -> Container {
        let filter = ContainerFilter {
            state: Some(kruise_cri::ContainerState::Running),
            ..ContainerFilter::default().label(labels::POD_UID, pod_uid)
        };
        let mut listed = cri.list_containers(&filter).await.unwrap();
        assert_eq!(listed.len(), 1, "{listed:?}");
        listed.remove(0)
    }

    /// What `cmd` prints in container `id`, and its exit code.
    async fn run(cri: &SimCri, id: &str, cmd: &[&str]) -> (String, i32) {
        let cmd = cmd.iter().map(|s| (*s).to_owned()).collect();
        let r = cri.exec_sync(id, cmd, Duration::from_secs(5)).await.unwrap();
        (String::from_utf8(r.stdout).unwrap(), r.exit_code)
    }

    #[tokio::test]
    async fn env_shows_the_values_of_the_containers_creation() {
        let (node, fake, _) = node();
        let cri = SimCri::new(node);
        let mut k = Kubelet::new("n1", "172.18.0.2", "10.244.0", fake.clone(), Delays::default());
        let mut pod: Pod = serde_json::from_value(serde_json::json!({
            "metadata": {"name": "web-0", "namespace": "default", "uid": "u1",
                "labels": {"version": "v1"}},
            "spec": {"nodeName": "n1", "containers": [{"name": "app", "image": "nginx:1.25",
                "env": [
                    {"name": "APP_VERSION", "valueFrom": {"fieldRef": {"fieldPath": "metadata.labels['version']"}}},
                    {"name": "GREETING", "value": "hello-$(APP_VERSION)"}
                ]}]}
        }))
        .unwrap();
        let t = settle(&mut k, &pod, Instant::now());
        let first = running(&cri, "u1").await;
        let (out, code) = run(&cri, &first.id, &["env"]).await;
        assert_eq!(code, 0);
        let lines: Vec<&str> = out.lines().collect();
        assert_eq!(
            lines,
            [
                format!("PATH={}", super::super::runtime::DEFAULT_PATH).as_str(),
                "HOSTNAME=web-0",
                "APP_VERSION=v1",
                "GREETING=hello-v1",
                "HOME=/root"
            ]
        );
        for argv in [&["/usr/bin/env"][..], &["printenv"], &["/bin/env"]] {
            assert_eq!(run(&cri, &first.id, argv).await, (out.clone(), 0), "{argv:?}");
        }
        assert_eq!(run(&cri, &first.id, &["printenv", "APP_VERSION"]).await, ("v1\n".into(), 0));
        assert_eq!(
            run(&cri, &first.id, &["printenv", "NOPE", "HOSTNAME"]).await,
            ("web-0\n".into(), 1)
        );

        // The label changes: the running container keeps the value it was created with.
        pod.metadata.labels = Some([("version".to_owned(), "v2".to_owned())].into());
        let t = settle(&mut k, &pod, t);
        let same = running(&cri, "u1").await;
        assert_eq!(same.id, first.id);
        assert!(run(&cri, &first.id, &["env"]).await.0.contains("APP_VERSION=v1\n"));

        // Stopped through the CRI (kruise-daemon's restart), it is created again with the
        // label's value of now.
        cri.stop_container(&first.id, 30).await.unwrap();
        let stopped = cri.exec_sync(&first.id, vec!["env".into()], Duration::ZERO).await;
        assert_eq!(stopped.unwrap_err().kind(), ErrorKind::Unknown);
        settle(&mut k, &pod, t);
        let second = running(&cri, "u1").await;
        assert_ne!(second.id, first.id);
        assert_eq!(second.attempt, 1);
        let (out, _) = run(&cri, &second.id, &["env"]).await;
        assert!(out.contains("APP_VERSION=v2\nGREETING=hello-v2\n"), "{out}");
        assert!(!out.contains("v1"), "{out}");
    }

    /// `(stdout, stderr, exit code)` of `cmd` in container `id`.
    async fn sh(cri: &SimCri, id: &str, cmd: &[&str]) -> (String, String, i32) {
        let cmd = cmd.iter().map(|s| (*s).to_owned()).collect();
        let r = cri.exec_sync(id, cmd, Duration::from_secs(5)).await.unwrap();
        (String::from_utf8(r.stdout).unwrap(), String::from_utf8(r.stderr).unwrap(), r.exit_code)
    }

    #[tokio::test]
    async fn exec_reads_and_writes_the_containers_filesystem() {
        let (node, fake, _) = node();
        let cri = SimCri::new(node);
        let mut k = Kubelet::new("n1", "172.18.0.2", "10.244.0", fake.clone(), Delays::default());
        let pod: Pod = serde_json::from_value(serde_json::json!({
            "metadata": {"name": "web-0", "namespace": "default", "uid": "u1"},
            "spec": {"nodeName": "n1", "containers": [{"name": "app", "image": "nginx:1.25"}]}
        }))
        .unwrap();
        let t = settle(&mut k, &pod, Instant::now());
        let first = running(&cri, "u1").await;
        let missing = "cat: can't open '/tmp/ready': No such file or directory\n";
        assert_eq!(
            sh(&cri, &first.id, &["cat", "/tmp/ready"]).await,
            (String::new(), missing.into(), 1)
        );
        assert_eq!(sh(&cri, &first.id, &["touch", "/tmp/ready"]).await.2, 0);
        assert_eq!(
            sh(&cri, &first.id, &["cat", "/tmp/ready"]).await,
            (String::new(), String::new(), 0)
        );
        assert_eq!(
            sh(
                &cri,
                &first.id,
                &["sh", "-c", "echo ok > /tmp/ready && cat /etc/hostname /tmp/ready"]
            )
            .await,
            ("web-0\nok\n".into(), String::new(), 0)
        );
        assert_eq!(sh(&cri, &first.id, &["rm", "/tmp/ready"]).await.2, 0);
        assert_eq!(sh(&cri, &first.id, &["cat", "/tmp/ready"]).await.2, 1);
        assert_eq!(sh(&cri, &first.id, &["touch", "/tmp/ready"]).await.2, 0);

        // A timeout kills the command: containerd's DeadlineExceeded.
        let slow = vec!["sh".to_owned(), "-c".to_owned(), "sleep 10; touch /tmp/late".to_owned()];
        let err = cri.exec_sync(&first.id, slow, Duration::from_millis(50)).await.unwrap_err();
        assert_eq!(err.kind(), ErrorKind::DeadlineExceeded);
        assert!(
            err.to_string().contains(
                "failed to exec in container: timeout 50ms exceeded: context deadline exceeded"
            ),
            "{err}"
        );
        assert_eq!(sh(&cri, &first.id, &["test", "-e", "/tmp/late"]).await.2, 1);

        // Restarted (a new container), it starts from a fresh filesystem.
        cri.stop_container(&first.id, 30).await.unwrap();
        settle(&mut k, &pod, t);
        let second = running(&cri, "u1").await;
        assert_ne!(second.id, first.id);
        assert_eq!(
            sh(&cri, &second.id, &["cat", "/tmp/ready"]).await,
            (String::new(), missing.into(), 1)
        );
        assert_eq!(sh(&cri, &second.id, &["ls", "/tmp"]).await, (String::new(), String::new(), 0));
    }

    #[test]
    fn durations_print_as_go_does() {
        assert_eq!(go_duration(Duration::from_secs(1)), "1s");
        assert_eq!(go_duration(Duration::from_secs(90)), "1m30s");
        assert_eq!(go_duration(Duration::from_secs(3600)), "1h0m0s");
        assert_eq!(go_duration(Duration::from_millis(500)), "500ms");
        assert_eq!(go_duration(Duration::from_millis(1500)), "1.5s");
    }
}
