//! A node's container runtime, CRI-shaped: images, containers, start, stop, remove.
//!
//! The kubelet talks to it only through [`ContainerRuntime`], so `kruise-cri`'s fake runtime
//! can take the place of [`FakeRuntime`] later. The runtime is instantaneous; the kubelet
//! owns the simulated delays. Others may change it too (kruise-daemon stopping a container,
//! through [`super::cri`] with the `cri` feature): the kubelet polls each running container's
//! state on every sync, as a real kubelet's PLEG relists, and
//! [`NodeRuntime::notify_changed`](super::NodeRuntime::notify_changed) makes it sync at once.

use std::collections::{BTreeMap, HashMap};
use std::sync::Mutex;

use super::fs::Fs;

/// A runtime error.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum RuntimeError {
    /// No such container.
    #[error("container {0} not found")]
    ContainerNotFound(String),
    /// The image was never pulled.
    #[error("image {0} not present")]
    ImageNotPresent(String),
    /// The image reference is empty or malformed.
    #[error("invalid image reference {0:?}")]
    InvalidImage(String),
}

/// A container's state in the runtime.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum ContainerState {
    /// Created, not started.
    Created,
    /// Running.
    Running,
    /// Exited with this code.
    Exited(i32),
}

/// What the kubelet tells the runtime about a container beyond pod, name and image (CRI
/// `ContainerConfig`'s metadata attempt, labels, annotations and environment, and the pod
/// sandbox's hostname).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ContainerMeta {
    /// Creation attempt: the kubelet's restart count for this container name.
    pub attempt: u32,
    /// Labels (the kubelet's `io.kubernetes.pod.uid`, `io.kubernetes.container.name`, …).
    pub labels: BTreeMap<String, String>,
    /// Annotations (the kubelet's `io.kubernetes.container.hash`, …).
    pub annotations: BTreeMap<String, String>,
    /// The environment the kubelet made for it (CRI `ContainerConfig.envs`), in order.
    pub env: Vec<(String, String)>,
    /// The hostname of its pod's sandbox (CRI `PodSandboxConfig.hostname`); empty for a pod
    /// on the host's network, whose containers get the node's.
    pub hostname: String,
}

/// A container as the runtime reports it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ContainerInfo {
    /// `containerd://<64 hex>`.
    pub id: String,
    /// The pod UID it belongs to.
    pub pod_uid: String,
    /// The container name in the pod.
    pub name: String,
    /// The image reference.
    pub image: String,
    /// The image ID.
    pub image_id: String,
    /// Its state.
    pub state: ContainerState,
    /// Attempt, labels, annotations and environment given at creation.
    pub meta: ContainerMeta,
    /// The environment its processes see, fixed at creation ([`process_env`]): what `env`
    /// prints in it.
    pub env: Vec<(String, String)>,
    /// Creation time, nanoseconds since the epoch.
    pub created_at: i64,
    /// Start time, nanoseconds since the epoch (0 if never started).
    pub started_at: i64,
    /// Exit time, nanoseconds since the epoch (0 unless exited).
    pub finished_at: i64,
}

/// The operations the kubelet needs from a container runtime.
pub trait ContainerRuntime: Send + Sync {
    /// Pulls an image; returns its image ID.
    fn pull_image(&self, image: &str) -> Result<String, RuntimeError>;
    /// The image ID of a pulled image.
    fn image_status(&self, image: &str) -> Option<String>;
    /// Every pulled image with its ID.
    fn list_images(&self) -> Vec<(String, String)>;
    /// Creates a container from a pulled image; returns its ID.
    fn create_container(
        &self,
        pod_uid: &str,
        name: &str,
        image: &str,
        meta: ContainerMeta,
    ) -> Result<String, RuntimeError>;
    /// Starts a created container.
    fn start_container(&self, id: &str) -> Result<(), RuntimeError>;
    /// Stops a container with an exit code. Stopping an exited container succeeds and keeps
    /// the code it exited with.
    fn stop_container(&self, id: &str, exit_code: i32) -> Result<(), RuntimeError>;
    /// Removes a container.
    fn remove_container(&self, id: &str) -> Result<(), RuntimeError>;
    /// A container's status.
    fn container_status(&self, id: &str) -> Option<ContainerInfo>;
    /// A container's state alone: what the kubelet polls for every running container on each
    /// sync (its PLEG), so cheaper than [`container_status`](Self::container_status) where the
    /// runtime can make it so.
    fn container_state(&self, id: &str) -> Option<ContainerState> {
        self.container_status(id).map(|c| c.state)
    }
    /// The containers of a pod (all pods when `None`).
    fn list_containers(&self, pod_uid: Option<&str>) -> Vec<ContainerInfo>;
    /// Runs `op` on the writable filesystem of container `id` ([`super::fs`]), each call at
    /// once (one operation of a command, as a system call is). `false` when there is no such
    /// container, or the runtime keeps no filesystems (the default).
    fn with_fs(&self, id: &str, op: &mut dyn FnMut(&mut Fs)) -> bool {
        let _ = (id, op);
        false
    }
}

/// Now, in nanoseconds since the epoch (0 before 1970, saturating far after).
pub fn now_nanos() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::SystemTime::UNIX_EPOCH)
        .map(|d| i64::try_from(d.as_nanos()).unwrap_or(i64::MAX))
        .unwrap_or(0)
}

/// The `PATH` containerd gives a container whose image sets none (`oci.WithDefaultPathEnv`).
pub const DEFAULT_PATH: &str = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin";

/// The environment of a container's processes, as containerd's CRI plugin and runc make it:
/// `PATH` (the default; simulated images set no environment of their own), `HOSTNAME` (the
/// sandbox's hostname, or the node's), then the kubelet's variables in order, each replacing a
/// variable of the same name in place (`oci.WithEnv`); and `HOME=/root` last unless set (runc
/// sets it from the user's home, and simulated containers run as root).
pub fn process_env(node: &str, meta: &ContainerMeta) -> Vec<(String, String)> {
    let hostname = hostname_of(node, meta);
    let mut env: Vec<(String, String)> = vec![
        ("PATH".to_owned(), DEFAULT_PATH.to_owned()),
        ("HOSTNAME".to_owned(), hostname.to_owned()),
    ];
    for (k, v) in &meta.env {
        match env.iter_mut().find(|(name, _)| name == k) {
            Some(e) => e.1 = v.clone(),
            None => env.push((k.clone(), v.clone())),
        }
    }
    if !env.iter().any(|(k, _)| k == "HOME") {
        env.push(("HOME".to_owned(), "/root".to_owned()));
    }
    env
}

/// The SHA-256 of `data` in hex.
pub fn sha256_hex(data: &[u8]) -> String {
    let d = ring::digest::digest(&ring::digest::SHA256, data);
    d.as_ref().iter().map(|b| format!("{b:02x}")).collect()
}

/// The image ID a pulled image gets: `docker-pullable://<image>@sha256:<sha256 of image>`,
/// so that another image always has another ID.
pub fn image_id_of(image: &str) -> String {
    let repo = image.split('@').next().unwrap_or(image);
    format!("docker-pullable://{repo}@sha256:{}", sha256_hex(image.as_bytes()))
}

#[derive(Default)]
struct State {
    images: BTreeMap<String, String>,
    containers: BTreeMap<String, ContainerInfo>,
    /// The filesystems of containers that changed theirs; the others have the initial tree.
    filesystems: HashMap<String, Fs>,
    serial: u64,
}

/// An in-memory runtime for one node.
pub struct FakeRuntime {
    node: String,
    state: Mutex<State>,
}

impl FakeRuntime {
    /// An empty runtime for `node`.
    pub fn new(node: &str) -> FakeRuntime {
        FakeRuntime { node: node.to_string(), state: Mutex::new(State::default()) }
    }

    fn state(&self) -> std::sync::MutexGuard<'_, State> {
        // A poisoned lock only means another thread panicked mid-update of plain maps;
        // the maps stay consistent, so keep going.
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }
}

impl ContainerRuntime for FakeRuntime {
    fn pull_image(&self, image: &str) -> Result<String, RuntimeError> {
        if image.trim().is_empty() || image.chars().any(char::is_whitespace) {
            return Err(RuntimeError::InvalidImage(image.to_string()));
        }
        let id = image_id_of(image);
        self.state().images.insert(image.to_string(), id.clone());
        Ok(id)
    }

    fn image_status(&self, image: &str) -> Option<String> {
        self.state().images.get(image).cloned()
    }

    fn list_images(&self) -> Vec<(String, String)> {
        self.state().images.iter().map(|(k, v)| (k.clone(), v.clone())).collect()
    }

    fn create_container(
        &self,
        pod_uid: &str,
        name: &str,
        image: &str,
        meta: ContainerMeta,
    ) -> Result<String, RuntimeError> {
        let mut st = self.state();
        let Some(image_id) = st.images.get(image).cloned() else {
            return Err(RuntimeError::ImageNotPresent(image.to_string()));
        };
        st.serial += 1;
        let seed = format!("{}/{pod_uid}/{name}/{}", self.node, st.serial);
        let id = format!("containerd://{}", sha256_hex(seed.as_bytes()));
        let env = process_env(&self.node, &meta);
        st.containers.insert(
            id.clone(),
            ContainerInfo {
                id: id.clone(),
                pod_uid: pod_uid.to_string(),
                name: name.to_string(),
                image: image.to_string(),
                image_id,
                state: ContainerState::Created,
                meta,
                env,
                created_at: now_nanos(),
                started_at: 0,
                finished_at: 0,
            },
        );
        Ok(id)
    }

    fn start_container(&self, id: &str) -> Result<(), RuntimeError> {
        let mut st = self.state();
        let c = st
            .containers
            .get_mut(id)
            .ok_or_else(|| RuntimeError::ContainerNotFound(id.to_string()))?;
        c.state = ContainerState::Running;
        c.started_at = now_nanos();
        Ok(())
    }

    fn stop_container(&self, id: &str, exit_code: i32) -> Result<(), RuntimeError> {
        let mut st = self.state();
        let c = st
            .containers
            .get_mut(id)
            .ok_or_else(|| RuntimeError::ContainerNotFound(id.to_string()))?;
        if !matches!(c.state, ContainerState::Exited(_)) {
            c.state = ContainerState::Exited(exit_code);
            c.finished_at = now_nanos();
        }
        // Nothing runs in an exited container to read its tree again: free it.
        st.filesystems.remove(id);
        Ok(())
    }

    fn remove_container(&self, id: &str) -> Result<(), RuntimeError> {
        let mut st = self.state();
        st.filesystems.remove(id);
        st.containers
            .remove(id)
            .map(|_| ())
            .ok_or_else(|| RuntimeError::ContainerNotFound(id.to_string()))
    }

    fn container_status(&self, id: &str) -> Option<ContainerInfo> {
        self.state().containers.get(id).cloned()
    }

    fn container_state(&self, id: &str) -> Option<ContainerState> {
        self.state().containers.get(id).map(|c| c.state)
    }

    fn list_containers(&self, pod_uid: Option<&str>) -> Vec<ContainerInfo> {
        self.state()
            .containers
            .values()
            .filter(|c| pod_uid.is_none_or(|u| c.pod_uid == u))
            .cloned()
            .collect()
    }

    fn with_fs(&self, id: &str, op: &mut dyn FnMut(&mut Fs)) -> bool {
        let mut guard = self.state();
        let st = &mut *guard;
        let Some(c) = st.containers.get(id) else { return false };
        if let Some(fs) = st.filesystems.get_mut(id) {
            op(fs);
            return true;
        }
        // An untouched container's tree is made for the call and kept only if it changed.
        let mut fs = Fs::new(hostname_of(&self.node, &c.meta));
        op(&mut fs);
        if fs.is_modified() {
            st.filesystems.insert(id.to_owned(), fs);
        }
        true
    }
}

/// The hostname of a container's processes: its pod sandbox's, or the node's for a pod on the
/// host's network.
pub fn hostname_of<'a>(node: &'a str, meta: &'a ContainerMeta) -> &'a str {
    if meta.hostname.is_empty() { node } else { meta.hostname.as_str() }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lifecycle() {
        let rt = FakeRuntime::new("n1");
        assert!(matches!(
            rt.create_container("u", "c", "nginx:1", ContainerMeta::default()),
            Err(RuntimeError::ImageNotPresent(_))
        ));
        let id1 = rt.pull_image("nginx:1").expect("pull");
        let id2 = rt.pull_image("nginx:2").expect("pull");
        assert_ne!(id1, id2);
        assert!(id1.starts_with("docker-pullable://nginx:1@sha256:"));
        let c = rt.create_container("u", "c", "nginx:1", ContainerMeta::default()).expect("create");
        rt.start_container(&c).expect("start");
        assert_eq!(rt.container_status(&c).map(|c| c.state), Some(ContainerState::Running));
        rt.stop_container(&c, 0).expect("stop");
        assert_eq!(rt.list_containers(Some("u")).len(), 1);
        rt.remove_container(&c).expect("remove");
        assert!(rt.list_containers(None).is_empty());
        assert!(rt.pull_image("").is_err());
    }
}
