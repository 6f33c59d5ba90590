//! The built-in controllers a Kubernetes API server normally has behind it
//! (kube-controller-manager's), talking to an API server through a kube-rs client as the
//! simulated nodes do: the embedded one, or any cluster.
//!
//! - [`replicaset`]: ReplicaSets keep `replicas` pods, adopt and release pods by selector, and
//!   scale in kube-controller-manager's order.
//! - [`deployment`]: Deployments roll out through ReplicaSets named with the
//!   `pod-template-hash` (RollingUpdate within maxSurge and maxUnavailable, or Recreate), with
//!   revisions, rollback, history limits and the status `kubectl rollout status` reads.
//!
//! [`Controllers::start`] runs them until the handle is dropped. `kruise-sim serve` and the
//! playground start them; [`crate::Config::with_controllers`] does in tests.

pub mod deployment;
pub mod replicaset;

use std::collections::HashSet;
use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use kube::Client;
use kube::runtime::reflector::{ObjectRef, Store};
use tokio::sync::mpsc::{UnboundedReceiver, UnboundedSender};

/// Runs rounds for the keys `keys` delivers, one at a time, each key once however often it
/// was queued meanwhile. A round that asks to run again (or fails) is queued again after its
/// delay. Waits for `store` to be ready first; keys no longer in it are skipped.
pub(crate) async fn work<K, F, Fut>(
    store: Store<K>,
    queue: UnboundedSender<ObjectRef<K>>,
    mut keys: UnboundedReceiver<ObjectRef<K>>,
    mut round: F,
) where
    K: kube::Resource<DynamicType = ()> + Clone + 'static,
    F: FnMut(Arc<K>) -> Fut,
    Fut: Future<Output = Option<Duration>>,
{
    store.wait_until_ready().await.ok();
    while let Some(first) = keys.recv().await {
        let mut batch = HashSet::from([first]);
        while let Ok(key) = keys.try_recv() {
            batch.insert(key);
        }
        for key in batch {
            let Some(object) = store.get(&key) else { continue };
            if let Some(after) = round(object).await {
                let queue = queue.clone();
                tokio::spawn(async move {
                    tokio::time::sleep(after).await;
                    let _ = queue.send(key);
                });
            }
        }
    }
}

/// The running controllers. Dropping the handle stops them.
pub struct Controllers {
    tasks: Vec<tokio::task::JoinHandle<()>>,
}

impl Controllers {
    /// Starts every controller against `client`'s API server, on the current tokio runtime.
    pub fn start(client: Client) -> Self {
        let tasks = vec![
            tokio::spawn(replicaset::run(client.clone())),
            tokio::spawn(deployment::run(client)),
        ];
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
