//! The built-in controllers a Kubernetes API server normally has behind it
//! (kube-controller-manager's), talking to an API server through a kube-rs client as the
//! simulated nodes do: the embedded one, or any cluster.
//!
//! - [`replicaset`]: ReplicaSets keep `replicas` pods, adopt and release pods by selector, and
//!   scale in kube-controller-manager's order.
//!
//! [`Controllers::start`] runs them until the handle is dropped. `kruise-sim serve` and the
//! playground start them; [`crate::Config::with_controllers`] does in tests.

pub mod replicaset;

use kube::Client;

/// The running controllers. Dropping the handle stops them.
pub struct Controllers {
    tasks: Vec<tokio::task::JoinHandle<()>>,
}

impl Controllers {
    /// Starts every controller against `client`'s API server, on the current tokio runtime.
    pub fn start(client: Client) -> Self {
        let tasks = vec![tokio::spawn(replicaset::run(client))];
        Self { tasks }
    }
}

impl Drop for Controllers {
    fn drop(&mut self) {
        for task in &self.tasks {
            task.abort();
        }
    }
}

impl std::fmt::Debug for Controllers {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Controllers").field("tasks", &self.tasks.len()).finish()
    }
}
