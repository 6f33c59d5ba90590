//! The webhook server of kruise-manager: HTTPS on `--webhook-port` (9876), certificates it
//! manages itself, and the CRD conversion webhook.
//!
//! - Certificates ([`certs`]): a self-signed CA and a serving certificate kept in the Secret
//!   `kruise-webhook-certs`, shared by every replica (a concurrent writer's certificates win),
//!   or external files from [`WebhookConfig::cert_dir`]. A background task re-reads them every
//!   [`WebhookConfig::check_interval`], reissues the serving certificate before it expires, and
//!   hot-swaps it: new handshakes get the new certificate, open connections keep theirs.
//! - Serving ([`server`]): rustls (ring) and hyper, one task per connection, an axum
//!   [`Router`](axum::Router) with `GET /healthz`, `POST /convert` and the routes added with
//!   [`WebhookServer::routes`]; each request is bounded by
//!   [`WebhookConfig::request_timeout`] and a panicking handler answers `500`.
//! - Conversion ([`conversion`], [`crds`]): every multi-version Kruise CRD is switched to
//!   `strategy: Webhook` with this server's `caBundle`; every check re-patches a CRD whose
//!   settings differ (a reinstalled CRD, a changed CA).
//! - Readiness: the check [`READY_CHECK`] is false until the certificate is loaded and the
//!   server answered a `GET /healthz` of its own over TLS trusting the CA.
//!
//! In-cluster, the API server reaches the webhook through the Service
//! [`WebhookConfig::service_name`]; with [`WebhookConfig::host`] set (the manager runs outside
//! the cluster) it is registered by URL, `https://{host}:{port}/convert`.

pub mod certs;
pub mod conversion;
pub mod crds;
pub mod server;

use std::future::Future;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use serde_json::{Value, json};
use tokio::sync::watch;
use tokio::task::JoinHandle;

pub use certs::{CertBundle, CertInfo};
pub use conversion::CONVERT_PATH;
pub use crds::{configure_crd_conversion, crds_with_conversion};
pub use server::router;

use crate::health::Health;
use server::stopped;

/// The readiness check the webhook server registers.
pub const READY_CHECK: &str = "webhook";
/// Upstream's default `--webhook-port`.
pub const DEFAULT_PORT: u16 = 9876;
/// Upstream's webhook Service name.
pub const DEFAULT_SERVICE_NAME: &str = "kruise-webhook-service";
/// Upstream's certificate Secret name.
pub const DEFAULT_SECRET_NAME: &str = "kruise-webhook-certs";
/// Upstream's namespace.
pub const DEFAULT_NAMESPACE: &str = "kruise-system";

/// Longest pause between two readiness probes of the server itself.
const MAX_PROBE_BACKOFF: Duration = Duration::from_secs(5);

/// Where and how the webhook server runs.
#[derive(Clone, Debug)]
pub struct WebhookConfig {
    /// Port to listen on (`--webhook-port`, 9876); 0 picks a free one.
    pub port: u16,
    /// Address to listen on: every interface in-cluster, loopback when registered by a
    /// loopback URL.
    pub bind: IpAddr,
    /// `--webhook-host`: register `url: https://{host}:{port}/...` instead of the Service, and
    /// add `host` to the certificate (as an IP address when it is one).
    pub host: Option<String>,
    /// Namespace of the Secret and the Service (`POD_NAMESPACE`, `kruise-system`).
    pub namespace: String,
    /// The webhook Service, reached by the API server in Service mode.
    pub service_name: String,
    /// The Service's port (443; it targets [`WebhookConfig::port`]).
    pub service_port: u16,
    /// The Secret holding the certificates.
    pub secret_name: String,
    /// `--webhook-cert-dir`: use `tls.crt`, `tls.key` and `ca.crt` from this directory
    /// instead of the Secret; re-read every check. For readiness the certificate must cover
    /// `host` when set, else `{service_name}.{namespace}.svc`.
    pub cert_dir: Option<PathBuf>,
    /// Bound on each request (and on each TLS handshake).
    pub request_timeout: Duration,
    /// Validity of an issued serving certificate.
    pub cert_validity: Duration,
    /// Validity of an issued CA.
    pub ca_validity: Duration,
    /// Reissue the serving certificate when it expires within this (when this is at least
    /// [`WebhookConfig::cert_validity`], every check reissues).
    pub rotate_before: Duration,
    /// How often the certificates are re-read (and renewed when due).
    pub check_interval: Duration,
    /// Point the Kruise CRDs' conversion at this webhook on start and keep them so.
    pub configure_crds: bool,
    /// `EnableExternalCerts`: the certificates come from the Secret as another writes it
    /// (cert-manager: `ca.crt`, `tls.crt`, `tls.key`), re-read every check and never written.
    pub external_secret: bool,
}

impl Default for WebhookConfig {
    fn default() -> Self {
        Self::new()
    }
}

impl WebhookConfig {
    /// Upstream's defaults: port 9876 on every interface, Service mode in `kruise-system`,
    /// a 1-year serving certificate renewed 30 days before expiry under a 10-year CA,
    /// checked every minute, 30 s per request (the API server's own conversion bound).
    pub fn new() -> Self {
        const DAY: u64 = 24 * 60 * 60;
        Self {
            port: DEFAULT_PORT,
            bind: IpAddr::V4(Ipv4Addr::UNSPECIFIED),
            host: None,
            namespace: DEFAULT_NAMESPACE.to_owned(),
            service_name: DEFAULT_SERVICE_NAME.to_owned(),
            service_port: 443,
            secret_name: DEFAULT_SECRET_NAME.to_owned(),
            cert_dir: None,
            request_timeout: Duration::from_secs(30),
            cert_validity: Duration::from_secs(365 * DAY),
            ca_validity: Duration::from_secs(10 * 365 * DAY),
            rotate_before: Duration::from_secs(30 * DAY),
            check_interval: Duration::from_secs(60),
            configure_crds: true,
            external_secret: false,
        }
    }

    /// External-URL mode: registers `https://{host}:{port}`; a loopback `host` (an address or
    /// `localhost`) also binds to loopback only.
    pub fn with_host(mut self, host: impl Into<String>) -> Self {
        let host = host.into();
        let loopback =
            host == "localhost" || host.parse::<IpAddr>().is_ok_and(|ip| ip.is_loopback());
        if loopback {
            self.bind = match host.parse::<IpAddr>() {
                Ok(IpAddr::V6(_)) => IpAddr::V6(Ipv6Addr::LOCALHOST),
                _ => IpAddr::V4(Ipv4Addr::LOCALHOST),
            };
        }
        self.host = Some(host);
        self
    }

    /// The names the serving certificate covers: `host` when set, then the Service's
    /// `{svc}.{ns}.svc`, `{svc}`, `{svc}.{ns}` and `{svc}.{ns}.svc.cluster.local`.
    pub fn server_names(&self) -> Vec<String> {
        let (svc, ns) = (&self.service_name, &self.namespace);
        let mut names: Vec<String> = self.host.iter().cloned().collect();
        for name in [
            format!("{svc}.{ns}.svc"),
            svc.clone(),
            format!("{svc}.{ns}"),
            format!("{svc}.{ns}.svc.cluster.local"),
        ] {
            if !names.contains(&name) {
                names.push(name);
            }
        }
        names
    }

    /// A webhook `clientConfig` for `path` trusting `ca_pem`: the URL in external-URL mode,
    /// else the Service (the other key is `null`, so a merge patch switches modes). Shaped for
    /// CRD conversion and admission webhook configurations alike.
    pub fn client_config(&self, path: &str, ca_pem: &str) -> Value {
        let ca_bundle = crds::ca_bundle(ca_pem);
        match self.url(path) {
            Some(url) => json!({
                "url": url,
                "service": null,
                "caBundle": ca_bundle,
            }),
            None => json!({
                "url": null,
                "service": {
                    "namespace": self.namespace,
                    "name": self.service_name,
                    "path": path,
                    "port": self.service_port,
                },
                "caBundle": ca_bundle,
            }),
        }
    }

    /// The webhook's URL for `path` in external-URL mode (`https://{host}:{port}{path}`);
    /// `None` in Service mode.
    pub fn url(&self, path: &str) -> Option<String> {
        let host = self.host.as_ref()?;
        let host = match host.parse::<IpAddr>() {
            Ok(IpAddr::V6(ip)) => format!("[{ip}]"),
            _ => host.clone(),
        };
        Some(format!("https://{host}:{}{path}", self.port))
    }

    /// Where the server probes itself: loopback when bound to every interface.
    fn probe_addr(&self) -> SocketAddr {
        let ip = match self.bind {
            IpAddr::V4(ip) if ip.is_unspecified() => IpAddr::V4(Ipv4Addr::LOCALHOST),
            IpAddr::V6(ip) if ip.is_unspecified() => IpAddr::V6(Ipv6Addr::LOCALHOST),
            ip => ip,
        };
        SocketAddr::new(ip, self.port)
    }
}

/// Errors of the webhook server.
#[non_exhaustive]
#[derive(Debug, thiserror::Error)]
pub enum WebhookError {
    /// The namespace that should hold the certificate Secret does not exist.
    #[error(
        "namespace {namespace:?} does not exist: create it before starting the webhook server (it holds the Secret {secret:?})"
    )]
    NamespaceMissing {
        /// The namespace.
        namespace: String,
        /// The Secret that could not be created there.
        secret: String,
    },
    /// `EnableExternalCerts` is on and the Secret it reads does not exist (yet).
    #[error(
        "EnableExternalCerts: Secret {namespace}/{name} does not exist: the certificates are read from it (ca.crt, tls.crt, tls.key), never written; create it, for example with cert-manager"
    )]
    ExternalSecretMissing {
        /// The Secret's namespace.
        namespace: String,
        /// The Secret's name.
        name: String,
    },
    /// Reading or writing the certificate Secret failed.
    #[error("webhook certificates in Secret {namespace}/{name}: {source}")]
    Secret {
        /// The Secret's namespace.
        namespace: String,
        /// The Secret's name.
        name: String,
        /// The API error.
        #[source]
        source: kube::Error,
    },
    /// Other writers kept changing the Secret while it was being updated.
    #[error("Secret {namespace}/{name} kept changing while the webhook certificates were written")]
    SecretConflict {
        /// The Secret's namespace.
        namespace: String,
        /// The Secret's name.
        name: String,
    },
    /// Certificates could not be generated.
    #[error("cannot generate webhook certificates: {0}")]
    Generate(#[source] rcgen::Error),
    /// An external certificate file could not be read.
    #[error("cannot read webhook certificate file {path}: {source}")]
    CertFile {
        /// The file.
        path: PathBuf,
        /// The I/O error.
        #[source]
        source: std::io::Error,
    },
    /// Certificates are unusable.
    #[error("invalid webhook certificates from {origin}: {reason}")]
    InvalidCerts {
        /// Where they came from (a directory or a Secret).
        origin: String,
        /// What is wrong.
        reason: String,
    },
    /// The TLS configuration could not be built.
    #[error("webhook TLS configuration: {0}")]
    Tls(#[source] rustls::Error),
    /// The listening socket could not be bound.
    #[error("webhook server cannot listen on {addr}: {source}")]
    Bind {
        /// The address requested.
        addr: SocketAddr,
        /// The operating system's error.
        #[source]
        source: std::io::Error,
    },
    /// A CRD's conversion settings could not be patched.
    #[error("cannot configure conversion of CRD {name}: {source}")]
    PatchCrd {
        /// The CRD.
        name: String,
        /// The API error.
        #[source]
        source: kube::Error,
    },
}

/// A webhook server to start: configuration and extra routes.
#[derive(Debug)]
pub struct WebhookServer {
    config: WebhookConfig,
    routes: axum::Router,
}

/// Starts the webhook server with only the built-in routes; see [`WebhookServer::start`].
pub async fn start(
    client: kube::Client,
    config: WebhookConfig,
    health: Health,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> Result<WebhookHandle, WebhookError> {
    WebhookServer::new(config).start(client, health, shutdown).await
}

impl WebhookServer {
    /// A server with the built-in routes (`/healthz`, `/convert`).
    pub fn new(config: WebhookConfig) -> Self {
        Self { config, routes: axum::Router::new() }
    }

    /// Adds routes (admission handlers); they get the same timeout and panic isolation.
    pub fn routes(mut self, extra: axum::Router) -> Self {
        self.routes = self.routes.merge(extra);
        self
    }

    /// Loads or issues the certificates, binds the port, configures CRD conversion (when
    /// [`WebhookConfig::configure_crds`]) and serves until `shutdown` completes or
    /// [`WebhookHandle::shutdown`] is called. Registers [`READY_CHECK`] in `health`: false
    /// until the server answers itself over TLS, false again on shutdown.
    pub async fn start(
        self,
        client: kube::Client,
        health: Health,
        shutdown: impl Future<Output = ()> + Send + 'static,
    ) -> Result<WebhookHandle, WebhookError> {
        let mut config = self.config;
        health.set_ready(READY_CHECK, false);
        let names = config.server_names();
        let bundle = load(&client, &config, &names).await?;
        let origin = origin(&config);
        let invalid = |reason| WebhookError::InvalidCerts { origin: origin.clone(), reason };
        let key = bundle.certified_key().map_err(invalid)?;
        let serving = bundle.serving_info().map_err(invalid)?;
        let resolver = Arc::new(server::SwapResolver::new(key));
        let tls = server::tls_config(resolver.clone()).map_err(WebhookError::Tls)?;
        let requested = SocketAddr::new(config.bind, config.port);
        let bind_error = |source| WebhookError::Bind { addr: requested, source };
        let listener = tokio::net::TcpListener::bind(requested).await.map_err(bind_error)?;
        let addr = listener.local_addr().map_err(bind_error)?;
        config.port = addr.port();
        let trust = bundle.ca_cert_pem.clone();
        if config.configure_crds {
            crds::configure_crd_conversion(&client, &config, &trust).await?;
        }
        tracing::info!(%addr, serial = %serving.serial, not_after = %serving.not_after,
            "webhook server listening");

        let (stop_tx, stop_rx) = watch::channel(false);
        let stop_tx = Arc::new(stop_tx);
        let (trust_tx, trust_rx) = watch::channel(trust.clone());
        let (serving_tx, serving_rx) = watch::channel(serving);
        let app = server::router(self.routes, config.request_timeout);
        let acceptor = tokio_rustls::TlsAcceptor::from(Arc::new(tls));
        let mut tasks = Vec::new();
        tasks.push(tokio::spawn(server::serve(
            listener,
            acceptor,
            app,
            config.request_timeout,
            stop_rx.clone(),
        )));
        tasks.push(tokio::spawn(stop_on(shutdown, stop_tx.clone(), health.clone())));
        // The first name: `host` when set, else the Service's `{svc}.{ns}.svc`.
        let probe_name = names.first().cloned().unwrap_or_default();
        tasks.push(tokio::spawn(become_ready(
            config.clone(),
            probe_name,
            trust_rx.clone(),
            health,
            stop_rx.clone(),
        )));
        let maintainer = Maintainer {
            client,
            config: config.clone(),
            names,
            resolver,
            current: bundle,
            trust: trust.clone(),
            trust_tx,
            serving_tx,
        };
        tasks.push(tokio::spawn(maintainer.run(stop_rx)));
        Ok(WebhookHandle {
            addr,
            ca_pem: trust,
            config,
            trust: trust_rx,
            serving: serving_rx,
            stop: stop_tx,
            tasks,
        })
    }
}

/// A running webhook server. Dropping it leaves the server running until its shutdown future
/// completes; [`WebhookHandle::shutdown`] stops it early.
#[derive(Debug)]
pub struct WebhookHandle {
    /// The bound address (the actual port when 0 was requested).
    pub addr: SocketAddr,
    /// The CA bundle clients trusted at start (PEM); see [`WebhookHandle::trust_bundle`].
    pub ca_pem: String,
    config: WebhookConfig,
    trust: watch::Receiver<String>,
    serving: watch::Receiver<CertInfo>,
    stop: Arc<watch::Sender<bool>>,
    tasks: Vec<JoinHandle<()>>,
}

impl WebhookHandle {
    /// The configuration in effect, with [`WebhookConfig::port`] set to the bound port; pass it
    /// to [`configure_crd_conversion`] or [`WebhookConfig::client_config`].
    pub fn config(&self) -> &WebhookConfig {
        &self.config
    }

    /// The CA bundle (PEM) clients must trust now: the CA; after a CA change, the new CA and
    /// the previous one (until the next change or restart). A new CA is published one check
    /// before certificates it signed are served.
    pub fn trust_bundle(&self) -> String {
        self.trust.borrow().clone()
    }

    /// Changes of [`WebhookHandle::trust_bundle`], e.g. to patch admission configurations.
    pub fn trust_updates(&self) -> watch::Receiver<String> {
        self.trust.clone()
    }

    /// The serving certificate in use.
    pub fn serving_cert(&self) -> CertInfo {
        self.serving.borrow().clone()
    }

    /// Changes of [`WebhookHandle::serving_cert`].
    pub fn serving_updates(&self) -> watch::Receiver<CertInfo> {
        self.serving.clone()
    }

    /// Stops accepting, finishes open connections gracefully and stops renewing.
    pub fn shutdown(&self) {
        self.stop.send_replace(true);
    }

    /// Waits until the server has stopped (after the shutdown future or
    /// [`WebhookHandle::shutdown`]).
    pub async fn join(self) {
        for task in self.tasks {
            if let Err(e) = task.await {
                tracing::error!(error = %e, "a webhook server task failed");
            }
        }
    }
}

fn origin(config: &WebhookConfig) -> String {
    match &config.cert_dir {
        Some(dir) => dir.display().to_string(),
        None => format!("Secret {}/{}", config.namespace, config.secret_name),
    }
}

/// The certificates from the cert dir, or from the Secret (issued when due).
async fn load(
    client: &kube::Client,
    config: &WebhookConfig,
    names: &[String],
) -> Result<CertBundle, WebhookError> {
    match &config.cert_dir {
        Some(dir) => {
            let bundle = certs::read_dir(dir)?;
            if let Err(reason) = bundle.check(names, SystemTime::now(), config.rotate_before) {
                tracing::warn!(dir = %dir.display(), %reason,
                    "external webhook certificates do not fit (they are used anyway)");
            }
            Ok(bundle)
        }
        None if config.external_secret => {
            let bundle = certs::read_secret(client, config).await?;
            if let Err(reason) = bundle.check(names, SystemTime::now(), config.rotate_before) {
                tracing::warn!(secret = %config.secret_name, namespace = %config.namespace, %reason,
                    "external webhook certificates do not fit (they are used anyway)");
            }
            Ok(bundle)
        }
        None => certs::ensure_secret(client, config, names, SystemTime::now()).await,
    }
}

async fn stop_on(
    shutdown: impl Future<Output = ()> + Send + 'static,
    stop: Arc<watch::Sender<bool>>,
    health: Health,
) {
    let mut early = stop.subscribe();
    tokio::select! {
        () = shutdown => {}
        () = stopped(&mut early) => {}
    }
    stop.send_replace(true);
    health.set_ready(READY_CHECK, false);
}

/// Probes the server until it answers over TLS, then marks it ready.
async fn become_ready(
    config: WebhookConfig,
    server_name: String,
    trust: watch::Receiver<String>,
    health: Health,
    mut stop: watch::Receiver<bool>,
) {
    let mut backoff = Duration::from_millis(50);
    loop {
        let ca = trust.borrow().clone();
        match server::probe(config.probe_addr(), &server_name, &ca, config.request_timeout).await {
            Ok(()) => {
                if !*stop.borrow() {
                    health.set_ready(READY_CHECK, true);
                    tracing::info!("webhook server is ready");
                }
                return;
            }
            Err(reason) => tracing::info!(%reason, "webhook server not answering yet"),
        }
        tokio::select! {
            () = tokio::time::sleep(backoff) => {}
            () = stopped(&mut stop) => return,
        }
        backoff = (backoff * 2).min(MAX_PROBE_BACKOFF);
    }
}

/// Re-reads the certificates, swaps them in, and keeps CRD conversion trusting the CA.
struct Maintainer {
    client: kube::Client,
    config: WebhookConfig,
    names: Vec<String>,
    resolver: Arc<server::SwapResolver>,
    current: CertBundle,
    /// The CA bundle clients trust (current CA, plus the previous one after a CA change).
    trust: String,
    trust_tx: watch::Sender<String>,
    serving_tx: watch::Sender<CertInfo>,
}

impl Maintainer {
    async fn run(mut self, mut stop: watch::Receiver<bool>) {
        let mut ticks = tokio::time::interval(self.config.check_interval);
        ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        ticks.tick().await;
        loop {
            tokio::select! {
                _ = ticks.tick() => {}
                () = stopped(&mut stop) => return,
            }
            self.tick().await;
        }
    }

    async fn tick(&mut self) {
        let next = match load(&self.client, &self.config, &self.names).await {
            Ok(next) => next,
            Err(e) => {
                tracing::warn!(error = %e, "cannot refresh the webhook certificates");
                return;
            }
        };
        let mut trust_changed = false;
        if next.ca_cert_pem != self.current.ca_cert_pem {
            let previous_valid = CertInfo::from_pem(&self.current.ca_cert_pem)
                .is_ok_and(|ca| ca.not_after > certs::timestamp(SystemTime::now()));
            let trust = if previous_valid {
                format!("{}{}", ensure_newline(&next.ca_cert_pem), self.current.ca_cert_pem)
            } else {
                next.ca_cert_pem.clone()
            };
            if trust != self.trust {
                tracing::info!("the webhook CA changed; trusting the old and the new CA");
                self.trust = trust;
                self.trust_tx.send_replace(self.trust.clone());
                trust_changed = true;
            }
        }
        let patched = self.patch_crds().await;
        if next == self.current {
            return;
        }
        let expired = self
            .current
            .serving_info()
            .map_or(true, |info| info.not_after <= certs::timestamp(SystemTime::now()));
        if (trust_changed || !patched) && !expired {
            // Clients may not trust the new CA yet: the new bundle is published (and patched
            // into the CRDs) one check before the new certificate is served.
            return;
        }
        let (key, info) = match next.certified_key().and_then(|k| Ok((k, next.serving_info()?))) {
            Ok(loaded) => loaded,
            Err(reason) => {
                tracing::warn!(%reason, "new webhook certificates are unusable; keeping the old");
                return;
            }
        };
        self.resolver.swap(key);
        tracing::info!(serial = %info.serial, not_after = %info.not_after,
            "webhook serving certificate replaced");
        self.serving_tx.send_replace(info);
        self.current = next;
    }

    /// Brings the CRDs' conversion settings to the current trust bundle (re-patching CRDs
    /// that were reinstalled or changed); true when they trust it (or patching is disabled).
    async fn patch_crds(&mut self) -> bool {
        if !self.config.configure_crds {
            return true;
        }
        match crds::ensure_crd_conversion(&self.client, &self.config, &self.trust).await {
            Ok(_) => true,
            Err(e) => {
                tracing::warn!(error = %e, "cannot configure CRD conversion");
                false
            }
        }
    }
}

fn ensure_newline(pem: &str) -> String {
    if pem.ends_with('\n') { pem.to_owned() } else { format!("{pem}\n") }
}
