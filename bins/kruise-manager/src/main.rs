//! kruise-manager: the OpenKruise controllers.
//!
//! - `run`: the manager against any cluster (kubeconfig or in-cluster config).
//! - `playground`: an embedded cluster (kruise-sim) with simulated nodes and the Kruise CRDs,
//!   and the manager running against it.
//! - `crds`: prints or writes every Kruise CRD.

use std::collections::BTreeMap;
use std::io::Write;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

mod sim_daemons;

use anyhow::Context;
use clap::{Args, CommandFactory, FromArgMatches, Parser, Subcommand};
use kruise_kube::admission::WebhookPolicy;
use kruise_kube::client::{ClientOptions, build_client, client_from_config};
use kruise_kube::features::FeatureGates;
use kruise_kube::leader::LeaderElectionConfig;
use kruise_kube::manager::ManagerConfig;

#[derive(Parser)]
#[command(name = "kruise-manager", version, about = "OpenKruise manager (Rust)")]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Run the controllers against a cluster, until SIGTERM or Ctrl-C.
    ///
    /// The CRDs must be installed first: `kruise-manager crds | kubectl apply --server-side -f -`.
    Run {
        /// The kubeconfig to use; without it KUBECONFIG, ~/.kube/config or the in-cluster
        /// service account.
        #[arg(long, value_name = "FILE")]
        kubeconfig: Option<PathBuf>,
        #[command(flatten)]
        flags: ManagerFlags,
    },
    /// Start an embedded cluster (kruise-sim) with simulated nodes and the Kruise CRDs, and run
    /// the manager against it. Point kubectl at the written kubeconfig.
    Playground {
        /// How many simulated nodes (spread over zone-a, zone-b, zone-c).
        #[arg(long, default_value_t = 3)]
        nodes: usize,
        /// Where to write the kubeconfig for kubectl.
        #[arg(long, value_name = "FILE", default_value = "kruise.kubeconfig")]
        kubeconfig_out: PathBuf,
        /// The API server's HTTPS address (port 0 picks a free one).
        #[arg(long, default_value = "127.0.0.1:6443")]
        addr: SocketAddr,
        /// Run the cluster's built-in controllers (Deployment, ReplicaSet, StatefulSet,
        /// DaemonSet, Job, CronJob, disruption), as a real cluster's kube-controller-manager
        /// would.
        #[arg(long, default_value_t = true, action = clap::ArgAction::Set, value_name = "BOOL")]
        builtin_controllers: bool,
        /// Run kruise-daemon's workers (ContainerRecreateRequests, image pulls for NodeImages,
        /// container meta) on every simulated node, over that node's simulated container
        /// runtime. Only with the KruiseDaemon feature gate (on by default).
        #[arg(long, default_value_t = true, action = clap::ArgAction::Set, value_name = "BOOL")]
        daemon: bool,
        #[command(flatten)]
        flags: ManagerFlags,
    },
    /// The chart's pre-delete hook: exit 1, naming them, while CloneSets, Advanced
    /// StatefulSets or Advanced DaemonSets exist (uninstalling would delete their pods with
    /// the CRDs); exit 0 when none does.
    PreDeleteCheck {
        /// The kubeconfig to use; without it KUBECONFIG, ~/.kube/config or the in-cluster
        /// service account.
        #[arg(long, value_name = "FILE")]
        kubeconfig: Option<PathBuf>,
    },
    /// Print every Kruise CRD as multi-document YAML, or write one file per CRD.
    ///
    /// Install them with `kruise-manager crds | kubectl apply --server-side -f -`.
    ///
    /// CRDs with more than one version convert through the manager's webhook (its Service, or
    /// with --webhook-host its URL), as upstream's chart installs them. Until the manager runs
    /// and fills in the CA, a request that needs conversion (a v1alpha1 write) is refused by the
    /// API server rather than stored unconverted.
    Crds {
        /// Write one file per CRD into this directory, named like upstream's
        /// (apps.kruise.io_clonesets.yaml), instead of printing.
        #[arg(long, value_name = "DIR")]
        out: Option<PathBuf>,
        /// The Service in front of the manager's webhook server.
        #[arg(long, default_value = kruise_kube::webhook::DEFAULT_SERVICE_NAME)]
        webhook_service_name: String,
        /// The Service's namespace (the manager's namespace).
        #[arg(long, default_value = kruise_kube::webhook::DEFAULT_NAMESPACE)]
        webhook_service_namespace: String,
        /// The Service's port.
        #[arg(long, default_value_t = 443)]
        webhook_service_port: u16,
        /// Convert through `https://HOST:PORT/convert` instead of the Service: for a manager
        /// run outside the cluster with the same --webhook-host and --webhook-port.
        #[arg(long)]
        webhook_host: Option<String>,
        /// The manager's --webhook-port, with --webhook-host.
        #[arg(long, default_value_t = kruise_kube::webhook::DEFAULT_PORT)]
        webhook_port: u16,
    },
}

/// The manager's flags, named as upstream's kruise-manager names them.
#[derive(Args, Clone, Debug)]
struct ManagerFlags {
    /// Watch and manage only this namespace (all namespaces when empty).
    #[arg(long, default_value = "")]
    namespace: String,
    /// Elect a leader on a Lease so that only one replica reconciles.
    #[arg(long, num_args = 0..=1, default_value_t = true, default_missing_value = "true",
          action = clap::ArgAction::Set)]
    enable_leader_election: bool,
    /// The namespace of the leader election Lease.
    #[arg(long, default_value = kruise_kube::leader::DEFAULT_NAMESPACE)]
    leader_election_namespace: String,
    /// The name of the leader election Lease.
    #[arg(long, default_value = kruise_kube::leader::DEFAULT_NAME)]
    leader_election_id: String,
    /// How long a lease holds without renewal (Go duration, e.g. 15s).
    #[arg(long, alias = "leader-elect-lease-duration", default_value = "15s",
          value_parser = parse_duration)]
    leader_election_lease_duration: Duration,
    /// How long the leader keeps trying to renew before giving up.
    #[arg(long, alias = "leader-elect-renew-deadline", default_value = "10s",
          value_parser = parse_duration)]
    leader_election_renew_deadline: Duration,
    /// How often electors retry.
    #[arg(long, alias = "leader-elect-retry-period", default_value = "2s",
          value_parser = parse_duration)]
    leader_election_retry_period: Duration,
    /// Where /metrics is served (`:8080` is every interface; `0` disables).
    #[arg(long, default_value = ":8080")]
    metrics_addr: String,
    /// Where /healthz and /readyz are served (`0` disables).
    #[arg(long, default_value = ":8000")]
    health_probe_addr: String,
    /// Sustained API requests per second.
    #[arg(long, default_value_t = 30.0)]
    rest_config_qps: f32,
    /// API requests allowed in a burst.
    #[arg(long, default_value_t = 50)]
    rest_config_burst: u32,
    /// Feature gates, `Name=true,Other=false`, with upstream's names and defaults.
    #[arg(long, default_value = "")]
    feature_gates: String,
    /// Leave pods in PreparingDelete out of every CloneSet's replica count.
    #[arg(long, num_args = 0..=1, default_value_t = false, default_missing_value = "true",
          action = clap::ArgAction::Set)]
    cloneset_scaling_exclude_preparing_delete: bool,
    /// Containers the enhanced liveness probe's restarter may restart per minute, cluster-wide
    /// (gate EnhancedLivenessProbe); a mass probe failure restarts no more than this.
    #[arg(long, default_value_t = 10, value_parser = clap::value_parser!(u32).range(1..))]
    enhanced_liveness_restarts_per_minute: u32,
    /// How often a controller whose CRD is not installed checks for it again.
    #[arg(long, default_value = "10s", value_parser = parse_duration)]
    crd_check_interval: Duration,
    /// How long an unobserved create, delete or update is waited for before it is dropped.
    #[arg(long, default_value = "5m", value_parser = parse_duration)]
    expectation_timeout: Duration,
    /// How long a node must have been Ready before its NodeImage is created.
    #[arg(long, default_value = "30s", value_parser = parse_duration)]
    nodeimage_creation_delay: Duration,
    /// Seconds added to the TTL of the NodeImage tags of ImagePullJobs with completion
    /// policy Always.
    #[arg(long = "default-ttlseconds-for-always-nodeimage", default_value_t = 300)]
    default_ttlseconds_for_always_nodeimage: i32,
    /// Serve webhooks (CRD conversion, admission). Needs the namespace of the certificate
    /// Secret (POD_NAMESPACE, default kruise-system) to exist.
    #[arg(long, num_args = 0..=1, default_value_t = true, default_missing_value = "true",
          action = clap::ArgAction::Set)]
    enable_webhook: bool,
    /// The webhook server's port (0 picks a free one).
    #[arg(long, env = "WEBHOOK_PORT", default_value_t = kruise_kube::webhook::DEFAULT_PORT)]
    webhook_port: u16,
    /// Register webhooks by URL at this host (`https://HOST:PORT/...`) instead of through the
    /// Service kruise-webhook-service: for a manager running outside the cluster.
    #[arg(long, env = "WEBHOOK_HOST")]
    webhook_host: Option<String>,
    /// Serve the certificate in this directory (tls.crt, tls.key, ca.crt) instead of the
    /// self-managed one in the Secret kruise-webhook-certs.
    #[arg(long, value_name = "DIR")]
    webhook_cert_dir: Option<PathBuf>,
    /// failurePolicy of the catch-all pod mutating webhook `mpod.kb.io` (with
    /// `--pod-webhook-scope=all`, or until the generated entries are first written) and of pod
    /// evictions: Ignore (a manager that is down never blocks pod creation or `kubectl drain`)
    /// or Fail. Generated entries, and deletions and updates of pods a PodUnavailableBudget
    /// covers, always fail closed.
    #[arg(long, default_value = "Ignore")]
    pod_webhook_failure_policy: String,
    /// Only pods this label selector (JSON, e.g. `{"matchLabels":{"sidecar":"on"}}`) selects
    /// go through the pod mutating webhook; the others are created without the manager: no
    /// sidecar, WorkloadSpread subset or budget annotation. Empty: every pod outside
    /// kube-system and the manager's namespace.
    #[arg(long, default_value = "", value_name = "JSON")]
    pod_webhook_object_selector: String,
    /// Only pods in namespaces this label selector (JSON) selects go through the pod mutating
    /// webhook (kube-system and the manager's namespace never do).
    #[arg(long, default_value = "", value_name = "JSON")]
    pod_webhook_namespace_selector: String,
    /// Which pods the pod mutating webhook sees. `selected`: only those a SidecarSet,
    /// PodUnavailableBudget or WorkloadSpread selects, through entries generated from those
    /// objects (`kruise-pod-webhooks-<n>`), each with failurePolicy Fail: other pods never
    /// wait for the manager, and selected ones are never created without it. `all`: every pod
    /// outside kube-system and the manager's namespace, through `mpod.kb.io` with
    /// `--pod-webhook-failure-policy`.
    #[arg(long, default_value = "selected", value_name = "selected|all")]
    pod_webhook_scope: String,
    /// failurePolicy of the webhooks for Kruise's kinds and deletion protection.
    #[arg(long, default_value = "Fail")]
    kruise_webhook_failure_policy: String,
    /// Seconds the API server waits for a webhook's answer.
    #[arg(long, default_value_t = 5)]
    webhook_timeout_seconds: i32,
    /// Bind Advanced DaemonSet pods to their nodes by a required node affinity term, so the
    /// scheduler places them (true), or by setting `spec.nodeName` (false).
    #[arg(long, num_args = 0..=1, default_value_t = true, default_missing_value = "true",
          action = clap::ArgAction::Set)]
    assign_pods_by_scheduler: bool,
    /// Bind BroadcastJob pods to their nodes by a required node affinity term, so the
    /// scheduler places them (true), or by setting `spec.nodeName` (false).
    #[arg(long, num_args = 0..=1, default_value_t = true, default_missing_value = "true",
          action = clap::ArgAction::Set)]
    assign_bcj_pods_by_scheduler: bool,
    /// Log filter, e.g. `info` or `info,kruise_kube=debug` (RUST_LOG also works); default
    /// `info`, or what `-v` maps to.
    #[arg(long)]
    log: Option<String>,
    /// klog's verbosity, as upstream's chart passes it (`--v=4`): 0-2 log at info, 3-4 at
    /// debug, 5 and more at trace. `--log` and RUST_LOG win.
    #[arg(short = 'v', long = "v", value_name = "LEVEL")]
    verbosity: Option<u8>,
    /// `text` (default) or `json` (one JSON object per line).
    #[arg(long, default_value = "text", value_name = "text|json")]
    logging_format: String,
    /// Reconcile every object again this often (Go duration); empty or 0: only on changes.
    #[arg(long, default_value = "")]
    sync_period: String,
    /// How long the caches may take to load before the manager exits with an error naming
    /// the kinds that did not.
    #[arg(long, default_value = "2m", value_parser = parse_duration)]
    controller_cache_sync_timeout: Duration,
    /// How long the webhook server may take to hold its certificates and write its
    /// configurations before the manager exits with an error.
    #[arg(long, default_value = "60s", value_parser = parse_duration)]
    webhook_initialize_timeout: Duration,
    /// Go's pprof profiler. Upstream serves it by default; kruise-rs has none, so only false
    /// is accepted (profile with perf, or read /metrics).
    #[arg(long, num_args = 0..=1, default_value_t = false, default_missing_value = "true",
          action = clap::ArgAction::Set)]
    enable_pprof: bool,
    /// Where pprof listens; used only with --enable-pprof, which is refused.
    #[arg(long, default_value = ":8090")]
    pprof_addr: String,
    /// Allow privileged containers in the pod templates the webhooks validate (upstream's
    /// default, true). false is not built and is refused.
    #[arg(long, num_args = 0..=1, default_value_t = true, default_missing_value = "true",
          action = clap::ArgAction::Set)]
    allow_privileged: bool,
    /// The leader election lock: only `leases`, as client-go has now.
    #[arg(long, default_value = "leases")]
    leader_election_resource_lock: String,
}

/// Why a flag or environment variable is refused at start.
fn refused(what: &str, why: &str) -> anyhow::Error {
    anyhow::anyhow!("{what}: {why}")
}

/// Upstream's `CERTS_RENEW_BEFORE`: a count and a unit, `d` (days), `m` (30-day months) or
/// `y` (365-day years), e.g. `7d`.
fn parse_renew_before(text: &str) -> Result<Duration, String> {
    let bad = || format!("{text:?} is not a count of days, months or years like 7d, 6m or 1y");
    let unit = text.chars().last().ok_or_else(bad)?;
    let count: u64 = text[..text.len() - unit.len_utf8()].parse().map_err(|_| bad())?;
    let days = match unit {
        'd' => count,
        'm' => count * 30,
        'y' => count * 365,
        _ => return Err(bad()),
    };
    Ok(Duration::from_secs(days * 24 * 60 * 60))
}

/// Parses a Go-style duration (`15s`, `5m`, `1h30m`, `500ms`).
fn parse_duration(text: &str) -> Result<Duration, String> {
    let parsed: jiff::SignedDuration = text
        .parse()
        .map_err(|err| format!("{text:?} is not a duration like 15s, 5m or 1h30m: {err}"))?;
    Duration::try_from(parsed).map_err(|_| format!("{text:?} must not be negative"))
}

/// `--<controller>-workers` for every registered controller, added to the `run` and
/// `playground` commands from the registry (so a new controller needs no line here).
fn with_worker_flags(mut command: clap::Command) -> clap::Command {
    for name in ["run", "playground"] {
        command = command.mut_subcommand(name, |mut sub| {
            for registration in kruise_kube::controller::registry() {
                let info = registration.info;
                sub = sub.arg(
                    clap::Arg::new(info.workers_flag)
                        .long(info.workers_flag)
                        .value_name("N")
                        .help(format!(
                            "Concurrent reconciles of the {} [default: {}]",
                            info.name, info.default_workers
                        ))
                        .value_parser(clap::value_parser!(usize)),
                );
            }
            sub
        });
    }
    command
}

/// The `--<controller>-workers` values of the chosen subcommand.
fn worker_flags(matches: &clap::ArgMatches) -> anyhow::Result<BTreeMap<String, usize>> {
    let Some((_, sub)) = matches.subcommand() else { return Ok(BTreeMap::new()) };
    let mut workers = BTreeMap::new();
    for registration in kruise_kube::controller::registry() {
        let flag = registration.info.workers_flag;
        if let Ok(Some(&n)) = sub.try_get_one::<usize>(flag) {
            if n == 0 {
                anyhow::bail!("--{flag}: must be at least 1");
            }
            workers.insert(flag.to_owned(), n);
        }
    }
    Ok(workers)
}

impl ManagerFlags {
    fn manager_config(&self, workers: BTreeMap<String, usize>) -> anyhow::Result<ManagerConfig> {
        // Upstream's legacy CUSTOM_RESOURCE_ENABLE: a list of kinds without SidecarSet turns
        // PodWebhook's default off (a PodWebhook named in --feature-gates still wins).
        let legacy = std::env::var("CUSTOM_RESOURCE_ENABLE").unwrap_or_default();
        let no_sidecarset =
            !legacy.trim().is_empty() && !legacy.split(',').any(|kind| kind.trim() == "SidecarSet");
        let flag = if no_sidecarset {
            format!("PodWebhook=false,{}", self.feature_gates)
        } else {
            self.feature_gates.clone()
        };
        let gates = FeatureGates::parse(&flag).context("--feature-gates")?;
        if self.enable_pprof {
            return Err(refused(
                "--enable-pprof=true",
                "pprof is Go's profiler and kruise-rs has none; set --enable-pprof=false (profile with perf, or read --metrics-addr)",
            ));
        }
        if !self.allow_privileged {
            return Err(refused(
                "--allow-privileged=false",
                "refusing privileged containers in pod templates is not built; kube-apiserver's own --allow-privileged=false still refuses the pods",
            ));
        }
        if self.leader_election_resource_lock != "leases" {
            return Err(refused(
                "--leader-election-resource-lock",
                &format!(
                    "{:?} is not supported; only \"leases\"",
                    self.leader_election_resource_lock
                ),
            ));
        }
        if !matches!(self.logging_format.as_str(), "text" | "json") {
            return Err(refused(
                "--logging-format",
                &format!("{:?} is not supported; text or json", self.logging_format),
            ));
        }
        let mut config = ManagerConfig::default();
        config.controller_settings.expectation_timeout =
            jiff::SignedDuration::try_from(self.expectation_timeout)
                .context("--expectation-timeout")?;
        config.workers = workers;
        config.crd_poll_interval = self.crd_check_interval;
        config.controller_settings.sync_period = match self.sync_period.trim() {
            "" | "0" => None,
            text => Some(parse_duration(text).map_err(|e| refused("--sync-period", &e))?),
        };
        config.cache_sync_timeout = self.controller_cache_sync_timeout;
        config.webhook_initialize_timeout = self.webhook_initialize_timeout;
        config.controller_settings.scaling_exclude_preparing_delete =
            self.cloneset_scaling_exclude_preparing_delete;
        config.controller_settings.enhanced_liveness_restarts_per_minute =
            self.enhanced_liveness_restarts_per_minute as usize;
        let image_pull = &mut config.controller_settings.image_pull;
        image_pull.node_image_creation_delay =
            jiff::SignedDuration::try_from(self.nodeimage_creation_delay)
                .context("--nodeimage-creation-delay")?;
        image_pull.default_ttl_seconds_for_always_nodeimage =
            self.default_ttlseconds_for_always_nodeimage;
        if let Ok(namespace) = std::env::var("KRUISE_DAEMON_CONFIG_NS")
            && !namespace.is_empty()
        {
            image_pull.daemon_config_namespace = namespace;
        }
        // The manager's namespace, read once for the controllers and the webhook.
        let pod_namespace = std::env::var("POD_NAMESPACE").ok();
        if let Some(namespace) = pod_namespace.as_ref().filter(|ns| !ns.is_empty()) {
            config.controller_settings.manager_namespace = namespace.clone();
        }
        config.feature_gates = gates.clone();
        config.webhook_policy.pod_failure_policy = self.pod_webhook_failure_policy.clone();
        config.webhook_policy.kruise_failure_policy = self.kruise_webhook_failure_policy.clone();
        config.webhook_policy.timeout_seconds = self.webhook_timeout_seconds;
        config.webhook_policy.pod_object_selector = WebhookPolicy::parse_selector(
            "--pod-webhook-object-selector",
            &self.pod_webhook_object_selector,
        )?;
        config.controller_settings.assign_bcj_pods_by_scheduler = self.assign_bcj_pods_by_scheduler;
        config.controller_settings.assign_pods_by_scheduler = self.assign_pods_by_scheduler;
        config.webhook_policy.pod_scope =
            self.pod_webhook_scope.parse().map_err(|e: String| anyhow::anyhow!(e))?;
        config.webhook_policy.pod_namespace_selector = WebhookPolicy::parse_selector(
            "--pod-webhook-namespace-selector",
            &self.pod_webhook_namespace_selector,
        )?;
        config.webhook_policy.validate()?;
        config.namespace = Some(self.namespace.clone()).filter(|ns| !ns.is_empty());
        config.metrics_addr =
            kruise_kube::health::parse_listen_addr(&self.metrics_addr).context("--metrics-addr")?;
        config.health_addr = kruise_kube::health::parse_listen_addr(&self.health_probe_addr)
            .context("--health-probe-addr")?;
        if self.enable_webhook {
            let mut webhook = kruise_kube::webhook::WebhookConfig::new();
            webhook.port = self.webhook_port;
            if let Some(host) = &self.webhook_host {
                webhook = webhook.with_host(host.clone());
            }
            webhook.cert_dir = self.webhook_cert_dir.clone();
            webhook.external_secret = gates.enabled("EnableExternalCerts");
            let env = |name: &str| std::env::var(name).ok().filter(|v| !v.is_empty());
            if let Some(name) = env("SECRET_NAME") {
                webhook.secret_name = name;
            }
            if let Some(name) = env("SERVICE_NAME") {
                webhook.service_name = name;
            }
            if let Some(text) = env("CERTS_RENEW_BEFORE") {
                webhook.rotate_before =
                    parse_renew_before(&text).map_err(|e| refused("CERTS_RENEW_BEFORE", &e))?;
            }
            match env("WEBHOOK_CERT_WRITER").as_deref() {
                None | Some("secret") => {}
                Some(other) => {
                    return Err(refused(
                        "WEBHOOK_CERT_WRITER",
                        &format!(
                            "{other:?} is not supported: the certificates are kept in the Secret (secret), or read from --webhook-cert-dir, or from the Secret another writes (EnableExternalCerts)"
                        ),
                    ));
                }
            }
            if env("WEBHOOK_CERT_DIR").is_some() {
                return Err(refused(
                    "WEBHOOK_CERT_DIR",
                    "kruise-rs keeps its own certificates in memory and writes none to disk; to serve certificates from a directory use --webhook-cert-dir",
                ));
            }
            if let Some(namespace) = pod_namespace {
                webhook.namespace = namespace;
            }
            config.webhook = Some(webhook);
        }
        if self.enable_leader_election {
            let mut le = LeaderElectionConfig::new(
                &self.leader_election_namespace,
                &self.leader_election_id,
                kruise_kube::leader::default_identity(),
            );
            le.lease_duration = self.leader_election_lease_duration;
            le.renew_deadline = self.leader_election_renew_deadline;
            le.retry_period = self.leader_election_retry_period;
            le.validate()?;
            config.leader_election = Some(le);
        }
        Ok(config)
    }

    fn init_logging(&self) {
        let by_verbosity = match self.verbosity {
            Some(v) if v >= 5 => "trace",
            Some(v) if v >= 3 => "debug",
            _ => "info",
        };
        let flag = self.log.clone().unwrap_or_else(|| by_verbosity.to_owned());
        let filter = std::env::var("RUST_LOG").unwrap_or(flag);
        let targets: tracing_subscriber::filter::Targets =
            filter.parse().unwrap_or_else(|_| tracing_subscriber::filter::Targets::new());
        use tracing_subscriber::prelude::*;
        if self.logging_format == "json" {
            tracing_subscriber::registry()
                .with(tracing_subscriber::fmt::layer().json().with_writer(std::io::stderr))
                .with(targets)
                .init();
            return;
        }
        tracing_subscriber::registry()
            .with(
                tracing_subscriber::fmt::layer()
                    .with_writer(std::io::stderr)
                    // Colour codes only for a terminal, never into a file or a pipe.
                    .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr())),
            )
            .with(targets)
            .init();
    }
}

fn main() -> anyhow::Result<()> {
    let matches = with_worker_flags(Cli::command()).get_matches();
    let cli = Cli::from_arg_matches(&matches).unwrap_or_else(|err| err.exit());
    let workers = worker_flags(&matches)?;
    match cli.command {
        Command::Crds {
            out,
            webhook_service_name,
            webhook_service_namespace,
            webhook_service_port,
            webhook_host,
            webhook_port,
        } => {
            let mut webhook = kruise_kube::webhook::WebhookConfig::new();
            webhook.service_name = webhook_service_name;
            webhook.namespace = webhook_service_namespace;
            webhook.service_port = webhook_service_port;
            webhook.port = webhook_port;
            if let Some(host) = webhook_host {
                webhook = webhook.with_host(host);
            }
            crds(out, &webhook)
        }
        Command::Run { kubeconfig, flags } => runtime()?.block_on(run(kubeconfig, flags, workers)),
        Command::PreDeleteCheck { kubeconfig } => runtime()?.block_on(pre_delete_check(kubeconfig)),
        Command::Playground { nodes, kubeconfig_out, addr, builtin_controllers, daemon, flags } => {
            let cluster = PlaygroundCluster { nodes, addr, builtin_controllers, daemon };
            runtime()?.block_on(playground(cluster, kubeconfig_out, flags, workers))
        }
    }
}

fn runtime() -> anyhow::Result<tokio::runtime::Runtime> {
    kruise_kube::runtime::runtime().context("starting tokio")
}

/// Resolves on SIGTERM or Ctrl-C.
async fn shutdown_signal() {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{SignalKind, signal};
        match signal(SignalKind::terminate()) {
            Ok(mut term) => {
                tokio::select! {
                    _ = term.recv() => {}
                    _ = tokio::signal::ctrl_c() => {}
                }
            }
            Err(_) => {
                let _ = tokio::signal::ctrl_c().await;
            }
        }
    }
    #[cfg(not(unix))]
    {
        let _ = tokio::signal::ctrl_c().await;
    }
    tracing::info!("shutting down");
}

async fn pre_delete_check(kubeconfig: Option<PathBuf>) -> anyhow::Result<()> {
    let options = ClientOptions { kubeconfig, qps: 30.0, burst: 50 };
    let client = build_client(&options).await?;
    let blocking = kruise_kube::uninstall::blocking_workloads(&client).await?;
    if blocking.is_empty() {
        println!(
            "no CloneSet, Advanced StatefulSet or Advanced DaemonSet exists: uninstall may go on"
        );
        return Ok(());
    }
    anyhow::bail!(kruise_kube::uninstall::refusal(&blocking))
}

async fn run(
    kubeconfig: Option<PathBuf>,
    flags: ManagerFlags,
    workers: BTreeMap<String, usize>,
) -> anyhow::Result<()> {
    flags.init_logging();
    let config = flags.manager_config(workers)?;
    let options =
        ClientOptions { kubeconfig, qps: flags.rest_config_qps, burst: flags.rest_config_burst };
    let client = build_client(&options).await?;
    kruise_kube::manager::run(client, config, shutdown_signal(), None).await?;
    Ok(())
}

/// The playground's embedded cluster.
struct PlaygroundCluster {
    nodes: usize,
    addr: SocketAddr,
    builtin_controllers: bool,
    /// Run kruise-daemon's workers on the simulated nodes (with the KruiseDaemon gate).
    daemon: bool,
}

async fn playground(
    cluster: PlaygroundCluster,
    kubeconfig_out: PathBuf,
    mut flags: ManagerFlags,
    workers: BTreeMap<String, usize>,
) -> anyhow::Result<()> {
    let PlaygroundCluster { nodes, addr, builtin_controllers, daemon } = cluster;
    flags.init_logging();
    // One manager, so no election; webhooks are reached by URL on loopback.
    flags.enable_leader_election = false;
    if flags.webhook_host.is_none() {
        flags.webhook_host = Some("127.0.0.1".to_owned());
    }
    // Probes and metrics on loopback too (`:8080` would listen on every interface), and on a
    // free port when the usual one is taken (by another manager on this machine, say).
    for addr in [&mut flags.metrics_addr, &mut flags.health_probe_addr] {
        if let Some(port) = addr.strip_prefix(':').and_then(|p| p.parse::<u16>().ok()) {
            *addr = format!("127.0.0.1:{}", loopback_port_or_free(port));
        }
    }
    if flags.webhook_port == kruise_kube::webhook::DEFAULT_PORT {
        flags.webhook_port = loopback_port_or_free(flags.webhook_port);
    }
    let addr = if addr.ip().is_loopback() && addr.port() != 0 {
        SocketAddr::new(addr.ip(), loopback_port_or_free(addr.port()))
    } else {
        addr
    };
    let config = flags.manager_config(workers)?;
    let sim_config = kruise_sim::Config {
        addr,
        controllers: builtin_controllers,
        ..kruise_sim::Config::default()
    }
    .with_kruise_crds()
    .with_nodes(kruise_sim::nodes::NodesConfig::new(nodes));
    let server = kruise_sim::Server::start(sim_config)
        .await
        .with_context(|| format!("starting the embedded cluster on {addr}"))?;
    server
        .write_kubeconfig(&kubeconfig_out)
        .with_context(|| format!("writing {}", kubeconfig_out.display()))?;
    let kube_config = kube::Config::from_custom_kubeconfig(
        kube::config::Kubeconfig::from_yaml(&server.kubeconfig)?,
        &kube::config::KubeConfigOptions::default(),
    )
    .await?;
    let client =
        client_from_config(kube_config.clone(), flags.rest_config_qps, flags.rest_config_burst)?;
    // What a Helm install would create: the manager's namespace (for the webhook Secret).
    if let Some(webhook) = &config.webhook {
        create_namespace(&client, &webhook.namespace).await?;
    }

    // kruise-daemon on every simulated node, with its own client (its own rate limit), as
    // the DaemonSet's pods would have.
    let (daemon_stop, daemon_stop_rx) = tokio::sync::watch::channel(false);
    let daemons = match server.nodes() {
        Some(sim) if daemon && config.feature_gates.enabled("KruiseDaemon") => {
            let daemon_client =
                client_from_config(kube_config, flags.rest_config_qps, flags.rest_config_burst)?;
            Some(sim_daemons::run_on_sim_nodes(
                sim,
                daemon_client,
                &config.feature_gates,
                daemon_stop_rx,
            ))
        }
        _ => None,
    };

    let path = std::fs::canonicalize(&kubeconfig_out).unwrap_or(kubeconfig_out);
    println!("kruise playground: API server at {}, {nodes} nodes", server.url());
    println!("  kruise-daemon {}", if daemons.is_some() { "on every node" } else { "off" });
    let shown = |addr: Option<SocketAddr>, path: &str| {
        addr.map_or_else(|| "off".to_owned(), |a| format!("http://{a}{path}"))
    };
    println!(
        "  metrics {}, health {}, webhooks {}",
        shown(config.metrics_addr, "/metrics"),
        shown(config.health_addr, "/healthz"),
        config.webhook.as_ref().map_or_else(|| "off".to_owned(), |w| format!("port {}", w.port)),
    );
    println!("  export KUBECONFIG={}", path.display());
    println!("  kubectl get nodes");
    println!("  kubectl get clonesets,asts   # after creating some");
    println!("Stop with Ctrl-C.");
    let _ = std::io::stdout().flush();

    let result = kruise_kube::manager::run(client, config, shutdown_signal(), None).await;
    let _ = daemon_stop.send(true);
    if let Some(daemons) = daemons {
        let _ = tokio::time::timeout(Duration::from_secs(5), daemons).await;
    }
    server.shutdown();
    result?;
    Ok(())
}

/// `port` on 127.0.0.1 when it is free now, else a free one the system picks. (Another
/// program may take it before the manager binds it; then the manager says which port failed.)
fn loopback_port_or_free(port: u16) -> u16 {
    if std::net::TcpListener::bind((std::net::Ipv4Addr::LOCALHOST, port)).is_ok() {
        return port;
    }
    std::net::TcpListener::bind((std::net::Ipv4Addr::LOCALHOST, 0))
        .and_then(|listener| listener.local_addr())
        .map_or(port, |addr| addr.port())
}

async fn create_namespace(client: &kube::Client, name: &str) -> anyhow::Result<()> {
    use k8s_openapi::api::core::v1::Namespace;
    let api: kube::Api<Namespace> = kube::Api::all(client.clone());
    let namespace = Namespace {
        metadata: kube::api::ObjectMeta { name: Some(name.to_owned()), ..Default::default() },
        ..Default::default()
    };
    match api.create(&kube::api::PostParams::default(), &namespace).await {
        Ok(_) => Ok(()),
        Err(kube::Error::Api(status)) if status.code == 409 => Ok(()),
        Err(err) => Err(err).with_context(|| format!("creating namespace {name}")),
    }
}

fn crds(out: Option<PathBuf>, webhook: &kruise_kube::webhook::WebhookConfig) -> anyhow::Result<()> {
    let crds = kruise_kube::webhook::crds_with_conversion(webhook);
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
                match write!(stdout, "---\n{yaml}") {
                    Ok(()) => {}
                    // The reader has gone (`kruise-manager crds | head`): nothing more to do.
                    Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => return Ok(()),
                    Err(e) => return Err(e).context("writing to stdout"),
                }
            }
        }
    }
    Ok(())
}
