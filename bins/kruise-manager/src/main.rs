//! kruise-manager: the OpenKruise controllers and webhooks. Today it has one subcommand,
//! `crds`, which prints or writes every Kruise CRD.

use std::io::Write;
use std::path::PathBuf;

use anyhow::Context;
use clap::{Parser, Subcommand};

#[derive(Parser)]
#[command(name = "kruise-manager", version, about = "OpenKruise manager (Rust)")]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Print every Kruise CRD as multi-document YAML, or write one file per CRD.
    ///
    /// Install them with `kruise-manager crds | kubectl apply --server-side -f -`.
    Crds {
        /// Write one file per CRD into this directory, named like upstream's
        /// (apps.kruise.io_clonesets.yaml), instead of printing.
        #[arg(long, value_name = "DIR")]
        out: Option<PathBuf>,
    },
}

fn main() -> anyhow::Result<()> {
    match Cli::parse().command {
        Command::Crds { out } => crds(out),
    }
}

fn crds(out: Option<PathBuf>) -> anyhow::Result<()> {
    let crds = kruise_api::crds();
    match out {
        Some(dir) => {
            std::fs::create_dir_all(&dir).with_context(|| format!("creating {}", dir.display()))?;
            for crd in &crds {
                let path = dir.join(kruise_api::crd::file_name(crd));
                let yaml = serde_yaml::to_string(crd).context("encoding CRD")?;
                std::fs::write(&path, yaml)
                    .with_context(|| format!("writing {}", path.display()))?;
                println!("{}", path.display());
            }
        }
        None => {
            let mut stdout = std::io::stdout().lock();
            for crd in &crds {
                let yaml = serde_yaml::to_string(crd).context("encoding CRD")?;
                write!(stdout, "---\n{yaml}").context("writing to stdout")?;
            }
        }
    }
    Ok(())
}
