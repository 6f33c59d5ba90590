//! A node's container runtime, CRI-shaped: images, containers, start, stop, remove.
//!
//! The kubelet talks to it only through [`ContainerRuntime`], so `kruise-cri`'s fake runtime
//! can take the place of [`FakeRuntime`] later. The runtime is instantaneous; the kubelet
//! owns the simulated delays.

use std::collections::BTreeMap;
use std::sync::Mutex;

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
    ) -> Result<String, RuntimeError>;
    /// Starts a created container.
    fn start_container(&self, id: &str) -> Result<(), RuntimeError>;
    /// Stops a container with an exit code.
    fn stop_container(&self, id: &str, exit_code: i32) -> Result<(), RuntimeError>;
    /// Removes a container.
    fn remove_container(&self, id: &str) -> Result<(), RuntimeError>;
    /// A container's status.
    fn container_status(&self, id: &str) -> Option<ContainerInfo>;
    /// The containers of a pod (all pods when `None`).
    fn list_containers(&self, pod_uid: Option<&str>) -> Vec<ContainerInfo>;
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
    ) -> Result<String, RuntimeError> {
        let mut st = self.state();
        let Some(image_id) = st.images.get(image).cloned() else {
            return Err(RuntimeError::ImageNotPresent(image.to_string()));
        };
        st.serial += 1;
        let seed = format!("{}/{pod_uid}/{name}/{}", self.node, st.serial);
        let id = format!("containerd://{}", sha256_hex(seed.as_bytes()));
        st.containers.insert(
            id.clone(),
            ContainerInfo {
                id: id.clone(),
                pod_uid: pod_uid.to_string(),
                name: name.to_string(),
                image: image.to_string(),
                image_id,
                state: ContainerState::Created,
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
        Ok(())
    }

    fn stop_container(&self, id: &str, exit_code: i32) -> Result<(), RuntimeError> {
        let mut st = self.state();
        let c = st
            .containers
            .get_mut(id)
            .ok_or_else(|| RuntimeError::ContainerNotFound(id.to_string()))?;
        c.state = ContainerState::Exited(exit_code);
        Ok(())
    }

    fn remove_container(&self, id: &str) -> Result<(), RuntimeError> {
        self.state()
            .containers
            .remove(id)
            .map(|_| ())
            .ok_or_else(|| RuntimeError::ContainerNotFound(id.to_string()))
    }

    fn container_status(&self, id: &str) -> Option<ContainerInfo> {
        self.state().containers.get(id).cloned()
    }

    fn list_containers(&self, pod_uid: Option<&str>) -> Vec<ContainerInfo> {
        self.state()
            .containers
            .values()
            .filter(|c| pod_uid.is_none_or(|u| c.pod_uid == u))
            .cloned()
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lifecycle() {
        let rt = FakeRuntime::new("n1");
        assert!(matches!(
            rt.create_container("u", "c", "nginx:1"),
            Err(RuntimeError::ImageNotPresent(_))
        ));
        let id1 = rt.pull_image("nginx:1").expect("pull");
        let id2 = rt.pull_image("nginx:2").expect("pull");
        assert_ne!(id1, id2);
        assert!(id1.starts_with("docker-pullable://nginx:1@sha256:"));
        let c = rt.create_container("u", "c", "nginx:1").expect("create");
        rt.start_container(&c).expect("start");
        assert_eq!(rt.container_status(&c).map(|c| c.state), Some(ContainerState::Running));
        rt.stop_container(&c, 0).expect("stop");
        assert_eq!(rt.list_containers(Some("u")).len(), 1);
        rt.remove_container(&c).expect("remove");
        assert!(rt.list_containers(None).is_empty());
        assert!(rt.pull_image("").is_err());
    }
}
