//! `kruise-sim serve`: runs the embedded Kubernetes API server (optionally with simulated nodes)
//! until stopped. `kruise-sim nodes`: runs simulated nodes against any API server.

use anyhow::Context as _;
use clap::{Parser, Subcommand};
use kruise_sim::nodes::{self, NodeSpec, NodesConfig, kubelet::Delays};
use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

#[derive(Parser)]
#[command(
    name = "kruise-sim",
    about = "An in-memory Kubernetes API server for tests and playgrounds"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Serve the API until interrupted.
    Serve {
        /// HTTPS address (loopback).
        #[arg(long, default_value = "127.0.0.1:6443")]
        addr: SocketAddr,
        /// Also serve plain HTTP on this address.
        #[arg(long)]
        http_addr: Option<SocketAddr>,
        /// Write a kubeconfig for clients here.
        #[arg(long)]
        kubeconfig_out: Option<PathBuf>,
        /// Bearer token clients must present (generated when absent).
        #[arg(long)]
        token: Option<String>,
        /// Install the OpenKruise CRDs at start.
        #[arg(long)]
        kruise_crds: bool,
        /// Seconds between watch bookmarks.
        #[arg(long, default_value_t = 10)]
        bookmark_seconds: u64,
        /// Run this many simulated nodes (with scheduler and kubelets) in the server.
        #[arg(long, default_value_t = 0)]
        nodes: usize,
        /// Delete pods gracefully even without in-process nodes (nodes run elsewhere).
        #[arg(long)]
        graceful_pod_deletion: bool,
        /// Run the built-in controllers (Deployment, ReplicaSet, StatefulSet, DaemonSet, Job,
        /// CronJob, disruption) against the server; `false` for a test that brings its own.
        #[arg(long, default_value_t = true, action = clap::ArgAction::Set, value_name = "BOOL")]
        controllers: bool,
        #[command(flatten)]
        node_flags: NodeFlags,
    },
    /// Run simulated nodes (scheduler, kubelets, fake runtime) against any API server.
    Nodes {
        /// The kubeconfig of the cluster.
        #[arg(long)]
        kubeconfig: PathBuf,
        /// How many nodes.
        #[arg(long, default_value_t = 3)]
        count: usize,
        /// Do not schedule pods (the cluster has a scheduler).
        #[arg(long)]
        no_scheduler: bool,
        #[command(flatten)]
        node_flags: NodeFlags,
    },
}

/// How the simulated nodes look and behave.
#[derive(clap::Args)]
struct NodeFlags {
    /// Node names are this prefix and an index.
    #[arg(long, default_value = "sim-node-")]
    node_prefix: String,
    /// Zones, assigned round-robin (comma-separated).
    #[arg(long, default_value = "zone-a,zone-b,zone-c", value_delimiter = ',')]
    zones: Vec<String>,
    /// The region label.
    #[arg(long, default_value = "sim-region")]
    region: String,
    /// CPU capacity per node.
    #[arg(long, default_value = "32")]
    cpu: String,
    /// Memory capacity per node.
    #[arg(long, default_value = "256Gi")]
    memory: String,
    /// Pod capacity per node.
    #[arg(long, default_value_t = 110)]
    max_pods: u32,
    /// Extra node labels `key=value` (repeatable, or comma-separated; `--labels` too).
    #[arg(long = "node-label", visible_alias = "labels", value_delimiter = ',')]
    node_labels: Vec<String>,
    /// Node taint `key[=value]:Effect` (repeatable).
    #[arg(long = "node-taint")]
    node_taints: Vec<String>,
    /// Image pull delay (ms).
    #[arg(long, default_value_t = 200)]
    pull_ms: u64,
    /// Container start delay (ms).
    #[arg(long, default_value_t = 100)]
    start_ms: u64,
    /// Readiness delay for containers with a readiness probe (ms).
    #[arg(long, default_value_t = 500)]
    ready_ms: u64,
    /// Container stop delay, capped by the grace period (ms).
    #[arg(long, default_value_t = 100)]
    stop_ms: u64,
    /// Lease renewal interval (ms).
    #[arg(long, default_value_t = 10_000)]
    lease_renew_ms: u64,
}

impl NodeFlags {
    fn config(&self, count: usize) -> anyhow::Result<NodesConfig> {
        self.config_avoiding(count, &std::collections::BTreeSet::new())
    }

    /// `count` nodes named with the prefix and the lowest indices whose names are not `taken`
    /// (nodes the cluster has already, for example the playground's own).
    fn config_avoiding(
        &self,
        count: usize,
        taken: &std::collections::BTreeSet<String>,
    ) -> anyhow::Result<NodesConfig> {
        let mut labels = std::collections::BTreeMap::new();
        for l in &self.node_labels {
            let (k, v) =
                l.split_once('=').with_context(|| format!("--node-label {l:?}: want key=value"))?;
            labels.insert(k.to_string(), v.to_string());
        }
        let mut taints = Vec::new();
        for t in &self.node_taints {
            taints.push(
                nodes::parse_taint(t)
                    .with_context(|| format!("--node-taint {t:?}: want key[=value]:Effect"))?,
            );
        }
        let zones: Vec<&String> = self.zones.iter().filter(|z| !z.is_empty()).collect();
        let indices: Vec<usize> = (0..)
            .filter(|i| !taken.contains(&format!("{}{i}", self.node_prefix)))
            .take(count)
            .collect();
        let specs = indices
            .into_iter()
            .map(|i| {
                let mut s = NodeSpec::new(&format!("{}{i}", self.node_prefix)).capacity(
                    &self.cpu,
                    &self.memory,
                    self.max_pods,
                );
                if !zones.is_empty() {
                    s.zone = zones[i % zones.len()].clone();
                }
                s.region = self.region.clone();
                s.labels = labels.clone();
                s.taints = taints.clone();
                s
            })
            .collect();
        let mut c = NodesConfig::new(0).with_nodes(specs).with_delays(Delays {
            pull: Duration::from_millis(self.pull_ms),
            start: Duration::from_millis(self.start_ms),
            ready: Duration::from_millis(self.ready_ms),
            init_run: Duration::from_millis(self.start_ms),
            stop: Duration::from_millis(self.stop_ms),
            ..Delays::default()
        });
        c.lease_renew = Duration::from_millis(self.lease_renew_ms.max(10));
        Ok(c)
    }
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let cli = Cli::parse();
    match cli.command {
        Command::Serve {
            addr,
            http_addr,
            kubeconfig_out,
            token,
            kruise_crds,
            bookmark_seconds,
            nodes,
            graceful_pod_deletion,
            controllers,
            node_flags,
        } => {
            let config = kruise_sim::Config {
                addr,
                http_addr,
                token,
                install_kruise_crds: kruise_crds,
                bookmark_interval: Duration::from_secs(bookmark_seconds.max(1)),
                nodes: if nodes > 0 { Some(node_flags.config(nodes)?) } else { None },
                graceful_pod_deletion,
                controllers,
                ..Default::default()
            };
            let server = kruise_sim::Server::start(config).await.context("starting kruise-sim")?;
            if let Some(path) = &kubeconfig_out {
                server
                    .write_kubeconfig(path)
                    .with_context(|| format!("writing {}", path.display()))?;
            }
            eprintln!("kruise-sim serving on {}", server.url());
            if let Some(h) = server.http_addr {
                eprintln!("kruise-sim serving plain HTTP on http://{h}");
            }
            tokio::signal::ctrl_c().await.context("waiting for interrupt")?;
            server.shutdown();
            Ok(())
        }
        Command::Nodes { kubeconfig, count, no_scheduler, node_flags } => {
            let yaml = std::fs::read_to_string(&kubeconfig)
                .with_context(|| format!("reading {}", kubeconfig.display()))?;
            let client = nodes::client_from_kubeconfig(&yaml).await.context("building a client")?;
            // Names the cluster has already (another simulator's nodes, such as the
            // playground's) are skipped rather than taken over.
            let existing = kube::Api::<k8s_openapi::api::core::v1::Node>::all(client.clone())
                .list_metadata(&Default::default())
                .await
                .context("listing the cluster's nodes")?;
            let taken = existing.items.into_iter().filter_map(|n| n.metadata.name).collect();
            let mut config = node_flags.config_avoiding(count, &taken)?;
            config.scheduler = !no_scheduler;
            let names: Vec<String> = config.nodes.iter().map(|n| n.name.clone()).collect();
            let sim = nodes::NodeSim::start(client, config).await.context("starting nodes")?;
            eprintln!("kruise-sim: {count} simulated nodes running: {}", names.join(", "));
            tokio::signal::ctrl_c().await.context("waiting for interrupt")?;
            sim.stop();
            Ok(())
        }
    }
}
