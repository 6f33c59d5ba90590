//! kruise-daemon: the OpenKruise node daemon (one per node, as a DaemonSet).
//!
//! It finds the node's container runtime under `--host-var-run` (`/hostvarrun`, the host's
//! `/var/run`), connects to the API server (kubeconfig or in-cluster config) and runs the
//! workers of [`kruise_kube::daemon`] for the node `NODE_NAME` until SIGTERM or Ctrl-C. It
//! serves `/metrics` and `/healthz` (and `/readyz`) on `--addr`.

use std::path::PathBuf;
use std::sync::Arc;

use anyhow::Context;
use clap::Parser;
use kruise_cri::{ContainerRuntime, CriClient, detect_runtime};
use kruise_kube::client::{ClientOptions, build_client};
use kruise_kube::daemon::keyring::NodeKeyring;
use kruise_kube::daemon::{Daemon, DaemonConfig};
use kruise_kube::features::FeatureGates;
use kruise_kube::health::Health;
use kruise_kube::metrics::Metrics;

/// client-go's defaults, which upstream's daemon keeps unless the flags are positive.
const DEFAULT_QPS: f32 = 5.0;
const DEFAULT_BURST: u32 = 10;

#[derive(Parser, Debug)]
#[command(name = "kruise-daemon", version, about = "OpenKruise node daemon (Rust)")]
struct Flags {
    /// Where /metrics and /healthz are served (`:10221` is every interface; `0` disables).
    #[arg(long, default_value = ":10221")]
    addr: String,
    /// The CRI socket, relative to --host-var-run; without it the known sockets are probed
    /// (containerd, CRI-O, cri-dockerd).
    #[arg(long, default_value = "")]
    socket_file: String,
    /// The host's /var/run as mounted in the daemon's container (env KRUISE_HOST_VAR_RUN).
    #[arg(long, env = "KRUISE_HOST_VAR_RUN", default_value = kruise_cri::HOST_VAR_RUN)]
    host_var_run: PathBuf,
    /// Most image pulls at once; -1 for no limit.
    #[arg(long, default_value_t = -1, allow_negative_numbers = true)]
    max_workers_for_pull_image: i64,
    /// API requests per second; 0 keeps client-go's default (5).
    #[arg(long, default_value_t = 0.0)]
    rest_config_qps: f32,
    /// API requests in a burst; 0 keeps client-go's default (10).
    #[arg(long, default_value_t = 0)]
    rest_config_burst: u32,
    /// Feature gates, `Name=true,Other=false`, with upstream's names and defaults.
    #[arg(long, default_value = "")]
    feature_gates: String,
    /// The kubeconfig to use; without it KUBECONFIG, ~/.kube/config or the in-cluster
    /// service account.
    #[arg(long, value_name = "FILE")]
    kubeconfig: Option<PathBuf>,
    /// Log filter, e.g. `info` or `info,kruise_kube=debug` (RUST_LOG also works).
    #[arg(long, default_value = "info")]
    log: String,
    /// The kubelet's CredentialProviderConfig (YAML or JSON): credential provider plugins for
    /// pulls the pull secrets do not authenticate. Needs --plugin-bin-dir.
    #[arg(long, value_name = "FILE")]
    plugin_config_file: Option<PathBuf>,
    /// Where the plugins named in --plugin-config-file are.
    #[arg(long, value_name = "DIR")]
    plugin_bin_dir: Option<PathBuf>,
}

fn init_logging(filter: &str) {
    let filter = std::env::var("RUST_LOG").unwrap_or_else(|_| filter.to_owned());
    let targets: tracing_subscriber::filter::Targets =
        filter.parse().unwrap_or_else(|_| tracing_subscriber::filter::Targets::new());
    use tracing_subscriber::prelude::*;
    tracing_subscriber::registry()
        .with(
            tracing_subscriber::fmt::layer()
                .with_writer(std::io::stderr)
                .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr())),
        )
        .with(targets)
        .init();
}

async fn shutdown_signal() {
    let ctrl_c = tokio::signal::ctrl_c();
    #[cfg(unix)]
    {
        let mut term =
            match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
                Ok(s) => s,
                Err(_) => {
                    let _ = ctrl_c.await;
                    return;
                }
            };
        tokio::select! {
            _ = ctrl_c => {}
            _ = term.recv() => {}
        }
    }
    #[cfg(not(unix))]
    let _ = ctrl_c.await;
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let flags = Flags::parse();
    init_logging(&flags.log);
    let node_name = std::env::var("NODE_NAME")
        .ok()
        .filter(|n| !n.is_empty())
        .context("the NODE_NAME environment variable must name this node")?;
    let mut gates = FeatureGates::parse(&flags.feature_gates).context("--feature-gates")?;
    gates.apply_dependencies();
    let addr = kruise_kube::health::parse_listen_addr(&flags.addr).context("--addr")?;

    let socket_file = Some(PathBuf::from(&flags.socket_file)).filter(|p| !p.as_os_str().is_empty());
    let candidates = detect_runtime(socket_file.as_deref(), &flags.host_var_run)
        .context("finding the container runtime")?;
    let (client, endpoint, version) = CriClient::connect_first(&candidates)
        .await
        .context("connecting to the container runtime")?;
    tracing::info!(
        socket = %endpoint.socket.display(),
        runtime = %version.runtime_name,
        version = %version.runtime_version,
        "container runtime found"
    );
    let runtime: Arc<dyn ContainerRuntime> = Arc::new(client);

    let options = ClientOptions {
        kubeconfig: flags.kubeconfig.clone(),
        qps: if flags.rest_config_qps > 0.0 { flags.rest_config_qps } else { DEFAULT_QPS },
        burst: if flags.rest_config_burst > 0 { flags.rest_config_burst } else { DEFAULT_BURST },
    };
    let kube = build_client(&options).await.context("building the API client")?;

    let mut config = DaemonConfig::new(node_name.clone());
    config.pull_limits.max_workers = usize::try_from(flags.max_workers_for_pull_image).ok();
    config.runtime_type = match version.runtime_name.as_str() {
        "" => "containerd".to_owned(),
        name => name.to_owned(),
    };
    config.feature_gates = gates;
    let keyring = NodeKeyring::with_docker_configs(&NodeKeyring::default_docker_dirs());
    let keyring = match (&flags.plugin_config_file, &flags.plugin_bin_dir) {
        (Some(file), Some(dir)) => keyring.with_plugins(file, dir)?,
        (Some(_), None) => anyhow::bail!("--plugin-bin-dir: required with --plugin-config-file"),
        (None, Some(_)) => anyhow::bail!("--plugin-config-file: required with --plugin-bin-dir"),
        (None, None) => keyring,
    };
    tracing::info!(?keyring, "node credentials");
    config.keyring = Arc::new(keyring);

    let health = Health::new();
    let metrics = Metrics::new();
    let (stop_tx, stop_rx) = tokio::sync::watch::channel(false);
    let server = match addr {
        Some(addr) => {
            let listener = kruise_kube::health::bind(addr).await.context("--addr")?;
            tracing::info!(addr = %listener.local_addr()?, "serving /metrics and /healthz");
            let mut rx = stop_rx.clone();
            Some(tokio::spawn(kruise_kube::health::serve(
                listener,
                health.clone(),
                Some(metrics),
                async move {
                    let _ = rx.wait_for(|s| *s).await;
                },
            )))
        }
        None => None,
    };

    tracing::info!(node = %node_name, "kruise-daemon starting");
    let daemon = Daemon::new(kube, runtime, config);
    let mut rx = stop_rx;
    let run = daemon.run(health, async move {
        let _ = rx.wait_for(|s| *s).await;
    });
    let signal = async {
        shutdown_signal().await;
        let _ = stop_tx.send(true);
    };
    tokio::join!(run, signal);
    if let Some(server) = server {
        let _ = server.await;
    }
    tracing::info!("kruise-daemon stopped");
    Ok(())
}
