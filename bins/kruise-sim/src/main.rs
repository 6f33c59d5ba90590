//! `kruise-sim serve`: runs the embedded Kubernetes API server until stopped.

use anyhow::Context as _;
use clap::{Parser, Subcommand};
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
    },
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
        } => {
            let config = kruise_sim::Config {
                addr,
                http_addr,
                token,
                install_kruise_crds: kruise_crds,
                bookmark_interval: Duration::from_secs(bookmark_seconds.max(1)),
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
    }
}
