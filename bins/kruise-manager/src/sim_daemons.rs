//! kruise-daemon on kruise-sim's simulated nodes: one [`Daemon`] per node, over the node's
//! simulated runtime ([`SimCri`]), as `kruise-manager playground --daemon` runs them.
//!
//! The playground's wiring of the two lives here, in the binary: kruise-kube does not know
//! kruise-sim.

use std::collections::HashSet;
use std::sync::Arc;

use kruise_sim::nodes::cri::SimCri;
use kruise_sim::nodes::{NodeRuntime, NodeSim};
use tokio::sync::broadcast::error::RecvError;
use tokio::sync::watch;
use tokio::task::{JoinHandle, JoinSet};

use kruise_kube::daemon::{Daemon, DaemonConfig};
use kruise_kube::features::FeatureGates;
use kruise_kube::health::Health;

/// Runs kruise-daemon's workers for every simulated node of `sim`, and for nodes added later,
/// until `stop` turns true. Each daemon watches its own node's objects through `client`, with
/// `gates` (and the gates they depend on). The returned task ends when every daemon has
/// stopped.
pub fn run_on_sim_nodes(
    sim: &NodeSim,
    client: kube::Client,
    gates: &FeatureGates,
    stop: watch::Receiver<bool>,
) -> JoinHandle<()> {
    let mut gates = gates.clone();
    gates.apply_dependencies();
    // Subscribe before listing, so that a node added in between is not missed (a node both
    // listed and announced is started once).
    let mut added = sim.subscribe_added();
    let existing = sim.runtimes();
    tokio::spawn(async move {
        let mut daemons = JoinSet::new();
        let mut started = HashSet::new();
        let mut start = |node: NodeRuntime, daemons: &mut JoinSet<()>| {
            if !started.insert(node.node().to_owned()) {
                return;
            }
            let mut config = DaemonConfig::new(node.node());
            config.feature_gates = gates.clone();
            tracing::info!(node = node.node(), "starting kruise-daemon on simulated node");
            let daemon = Daemon::new(client.clone(), Arc::new(SimCri::new(node)), config);
            let mut stop = stop.clone();
            daemons.spawn(daemon.run(Health::new(), async move {
                let _ = stop.wait_for(|s| *s).await;
            }));
        };
        for node in existing {
            start(node, &mut daemons);
        }
        let mut stopping = stop.clone();
        loop {
            tokio::select! {
                // The watch's guard is not Send: drop it inside the branch's future.
                () = async { let _ = stopping.wait_for(|s| *s).await; } => break,
                node = added.recv() => match node {
                    Ok(node) => start(node, &mut daemons),
                    Err(RecvError::Lagged(missed)) => {
                        tracing::warn!(missed, "missed added simulated nodes; no daemon on them");
                    }
                    Err(RecvError::Closed) => {
                        // The simulator stopped; the running daemons go on until shutdown.
                        let _ = stop.clone().wait_for(|s| *s).await.map(|_| ());
                        break;
                    }
                },
            }
        }
        while daemons.join_next().await.is_some() {}
    })
}
