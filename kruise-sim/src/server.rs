//! Starting the server: certificates, listeners, the kubeconfig, and the handle to stop it.

use crate::cluster::Cluster;
use crate::error::{ApiError, SimError};
use crate::http::{App, handle};
use base64::Engine as _;
use hyper::server::conn::{http1, http2};
use hyper::service::service_fn;
use hyper_util::rt::{TokioExecutor, TokioIo};
use rustls::pki_types::{CertificateDer, PrivateKeyDer, PrivatePkcs8KeyDer};
use std::net::SocketAddr;
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;
use tokio::net::TcpListener;
use tokio::sync::watch;

/// How to run the server.
#[derive(Clone, Debug)]
pub struct Config {
    /// The HTTPS address (port 0 picks a free port). Only loopback addresses make sense.
    pub addr: SocketAddr,
    /// A plain-HTTP address as well, if any.
    pub http_addr: Option<SocketAddr>,
    /// The bearer token clients must send; `None` generates one.
    pub token: Option<String>,
    /// Install the OpenKruise CRDs at start.
    pub install_kruise_crds: bool,
    /// Watch events kept per resource for resuming watches.
    pub watch_history: usize,
    /// How often watches with `allowWatchBookmarks` get a BOOKMARK.
    pub bookmark_interval: Duration,
    /// Webhook services: `(namespace, name)` of a Service reached at a local address.
    pub webhook_services: Vec<(String, String, SocketAddr)>,
    /// Simulated nodes (scheduler, kubelets) to run against this server through its own
    /// kubeconfig; attaching nodes makes pod deletion graceful.
    pub nodes: Option<crate::nodes::NodesConfig>,
    /// Delete pods gracefully (`deletionTimestamp` + `deletionGracePeriodSeconds`; a kubelet
    /// finishes the deletion). Implied by `nodes`; set it alone when the nodes run elsewhere.
    pub graceful_pod_deletion: bool,
    /// Run the built-in controllers (`crate::controllers`) against the server. They need the
    /// `controllers` cargo feature (on by default): without it, [`Server::start`] fails with
    /// [`SimError::FeatureDisabled`] rather than start a cluster whose workloads never
    /// progress.
    pub controllers: bool,
}

impl Default for Config {
    fn default() -> Self {
        Config {
            addr: SocketAddr::from(([127, 0, 0, 1], 0)),
            http_addr: None,
            token: None,
            install_kruise_crds: false,
            watch_history: 10_000,
            bookmark_interval: Duration::from_secs(10),
            webhook_services: Vec::new(),
            nodes: None,
            graceful_pod_deletion: false,
            controllers: false,
        }
    }
}

impl Config {
    /// Also serve plain HTTP on `addr`.
    pub fn with_http(mut self, addr: SocketAddr) -> Self {
        self.http_addr = Some(addr);
        self
    }

    /// Install the OpenKruise CRDs at start.
    pub fn with_kruise_crds(mut self) -> Self {
        self.install_kruise_crds = true;
        self
    }

    /// Reach the Service `namespace/name` of webhook configurations at `addr`.
    pub fn with_webhook_service(mut self, namespace: &str, name: &str, addr: SocketAddr) -> Self {
        self.webhook_services.push((namespace.to_string(), name.to_string(), addr));
        self
    }

    /// Run simulated nodes against the server (makes pod deletion graceful).
    pub fn with_nodes(mut self, nodes: crate::nodes::NodesConfig) -> Self {
        self.nodes = Some(nodes);
        self
    }

    /// Run the built-in controllers (Deployment, ReplicaSet, StatefulSet, DaemonSet, Job,
    /// CronJob, disruption) against the server. Needs the `controllers` cargo feature:
    /// without it, starting the server fails with [`SimError::FeatureDisabled`].
    pub fn with_controllers(mut self) -> Self {
        self.controllers = true;
        self
    }

    /// Send bookmarks at this interval.
    pub fn with_bookmark_interval(mut self, every: Duration) -> Self {
        self.bookmark_interval = every;
        self
    }
}

/// The running server's handle. Dropping it stops the server.
pub struct ServerHandle {
    /// The HTTPS address.
    pub addr: SocketAddr,
    /// The plain-HTTP address, if any.
    pub http_addr: Option<SocketAddr>,
    /// The CA certificate (PEM) that signed the serving certificate.
    pub ca_pem: String,
    /// The bearer token.
    pub token: String,
    /// A kubeconfig (YAML) for clients.
    pub kubeconfig: String,
    cluster: Arc<Cluster>,
    connections: Arc<AtomicU64>,
    nodes: Option<crate::nodes::NodeSim>,
    kubelets: crate::nodes::Kubelets,
    #[cfg(feature = "controllers")]
    _controllers: Option<crate::controllers::Controllers>,
    shutdown: watch::Sender<bool>,
    _thread: Option<RuntimeThread>,
}

struct RuntimeThread {
    stop: Option<tokio::sync::oneshot::Sender<()>>,
    join: Option<std::thread::JoinHandle<()>>,
}

impl Drop for RuntimeThread {
    fn drop(&mut self) {
        if let Some(s) = self.stop.take() {
            let _ = s.send(());
        }
        if let Some(j) = self.join.take() {
            let _ = j.join();
        }
    }
}

impl ServerHandle {
    /// The cluster state, for tests that inspect or seed it directly.
    pub fn cluster(&self) -> &Arc<Cluster> {
        &self.cluster
    }

    /// The simulated nodes, when the config asked for them.
    pub fn nodes(&self) -> Option<&crate::nodes::NodeSim> {
        self.nodes.as_ref()
    }

    /// Makes the nodes of a simulator started apart from the server (say, against its
    /// kubeconfig) reachable for `pods/exec`; the server's own nodes are already.
    pub fn attach_nodes(&self, sim: &crate::nodes::NodeSim) {
        self.kubelets.attach(sim);
    }

    /// Makes the Service `namespace/name` of webhook configurations reachable at `addr`.
    pub fn register_webhook_service(&self, namespace: &str, name: &str, addr: SocketAddr) {
        self.cluster.admission().register_service(namespace, name, addr);
    }

    /// The injected faults: make requests fail or wait, or end watches.
    pub fn faults(&self) -> &crate::faults::Faults {
        self.cluster.faults()
    }

    /// How many connections the server has accepted (HTTPS and plain HTTP), for checking
    /// how a client reuses its connections.
    pub fn connections_accepted(&self) -> u64 {
        self.connections.load(Ordering::Relaxed)
    }

    /// Forgets the watch history, so that watches resuming from an older resourceVersion
    /// get 410 Gone.
    pub fn compact(&self) {
        self.cluster.store().compact();
    }

    /// Writes the kubeconfig to a file.
    pub fn write_kubeconfig(&self, path: &Path) -> std::io::Result<()> {
        std::fs::write(path, &self.kubeconfig)
    }

    /// `https://addr`.
    pub fn url(&self) -> String {
        format!("https://{}", self.addr)
    }

    /// Stops accepting and ends open connections and watches.
    pub fn shutdown(&self) {
        let _ = self.shutdown.send(true);
    }
}

impl Drop for ServerHandle {
    fn drop(&mut self) {
        let _ = self.shutdown.send(true);
    }
}

struct Certs {
    ca_pem: String,
    chain: Vec<CertificateDer<'static>>,
    key: PrivateKeyDer<'static>,
}

fn certificates() -> Result<Certs, SimError> {
    use rcgen::{
        BasicConstraints, CertificateParams, DistinguishedName, DnType, ExtendedKeyUsagePurpose,
        IsCa, Issuer, KeyPair, KeyUsagePurpose,
    };
    let ca_key = KeyPair::generate()?;
    let mut ca_params = CertificateParams::new(Vec::<String>::new())?;
    let mut dn = DistinguishedName::new();
    dn.push(DnType::CommonName, "kruise-sim-ca");
    ca_params.distinguished_name = dn;
    ca_params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    ca_params.key_usages = vec![
        KeyUsagePurpose::KeyCertSign,
        KeyUsagePurpose::DigitalSignature,
        KeyUsagePurpose::CrlSign,
    ];
    let ca_cert = ca_params.self_signed(&ca_key)?;
    let issuer = Issuer::new(ca_params, ca_key);

    let key = KeyPair::generate()?;
    let mut params = CertificateParams::new(vec![
        "127.0.0.1".to_string(),
        "::1".to_string(),
        "localhost".to_string(),
        "kubernetes".to_string(),
        "kubernetes.default.svc".to_string(),
    ])?;
    let mut dn = DistinguishedName::new();
    dn.push(DnType::CommonName, "kruise-sim");
    params.distinguished_name = dn;
    params.key_usages = vec![KeyUsagePurpose::DigitalSignature, KeyUsagePurpose::KeyEncipherment];
    params.extended_key_usages = vec![ExtendedKeyUsagePurpose::ServerAuth];
    let cert = params.signed_by(&key, &issuer)?;
    Ok(Certs {
        ca_pem: ca_cert.pem(),
        chain: vec![cert.der().clone(), ca_cert.der().clone()],
        key: PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(key.serialize_der())),
    })
}

fn kubeconfig(server: &str, ca_pem: &str, token: &str) -> Result<String, SimError> {
    let ca = base64::engine::general_purpose::STANDARD.encode(ca_pem);
    let v = serde_json::json!({
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": "kruise-sim", "cluster": {"server": server, "certificate-authority-data": ca}}],
        "users": [{"name": "kruise-sim", "user": {"token": token}}],
        "contexts": [{"name": "kruise-sim", "context": {"cluster": "kruise-sim", "user": "kruise-sim", "namespace": "default"}}],
        "current-context": "kruise-sim",
        "preferences": {},
    });
    Ok(serde_yaml::to_string(&v)?)
}

fn seed(cluster: &Cluster, config: &Config) -> Result<(), SimError> {
    let install = |what: &str, r: Result<(), ApiError>| {
        r.map_err(|error| SimError::Install { what: what.to_string(), error })
    };
    let Some(nsdef) = cluster.resolve("", "v1", "namespaces") else {
        return Err(SimError::Install { what: "namespaces".into(), error: ApiError::no_route() });
    };
    for ns in ["default", "kube-system", "kube-public", "kube-node-lease"] {
        let body =
            serde_json::json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}});
        install(ns, cluster.create(&nsdef, "", body, &Default::default()).map(|_| ()))?;
    }
    if config.install_kruise_crds {
        for crd in kruise_api::crds() {
            let v = serde_json::to_value(&crd).map_err(|e| SimError::Install {
                what: "kruise CRD".into(),
                error: ApiError::internal(e.to_string()),
            })?;
            let name =
                v.pointer("/metadata/name").and_then(|n| n.as_str()).unwrap_or("").to_string();
            install(&name, cluster.install_crd(v))?;
        }
    }
    Ok(())
}

/// The server.
pub struct Server;

impl Server {
    /// Starts the server on the current tokio runtime.
    ///
    /// Fails with [`SimError::FeatureDisabled`] when `config` asks for the built-in
    /// controllers and kruise-sim was built without its `controllers` feature.
    pub async fn start(config: Config) -> Result<ServerHandle, SimError> {
        #[cfg(not(feature = "controllers"))]
        if config.controllers {
            return Err(SimError::FeatureDisabled {
                what: "Config::with_controllers (the built-in controllers)",
                feature: "controllers",
            });
        }
        let cluster = Arc::new(Cluster::new(config.watch_history.max(1)));
        let certs = certificates()?;
        cluster.set_root_ca(&certs.ca_pem);
        seed(&cluster, &config)?;
        cluster.set_graceful_pod_deletion(config.graceful_pod_deletion || config.nodes.is_some());
        for (ns, name, a) in &config.webhook_services {
            cluster.admission().register_service(ns, name, *a);
        }
        let token = config.token.clone().unwrap_or_else(|| {
            format!("{:016x}{:016x}", crate::util::rand_u64(), crate::util::rand_u64())
        });
        let tls_listener = TcpListener::bind(config.addr).await?;
        let addr = tls_listener.local_addr()?;
        let (shutdown, shutdown_rx) = watch::channel(false);
        let kubelets = crate::nodes::Kubelets::default();
        let app = Arc::new(App {
            cluster: cluster.clone(),
            token: Some(token.clone()),
            server_addr: addr.to_string(),
            bookmark_interval: config.bookmark_interval,
            shutdown: shutdown_rx.clone(),
            kubelets: kubelets.clone(),
        });
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let mut tls = rustls::ServerConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()?
            .with_no_client_auth()
            .with_single_cert(certs.chain, certs.key)?;
        // HTTP/2 when the client offers it, as kube-apiserver serves.
        tls.alpn_protocols = vec![b"h2".to_vec(), b"http/1.1".to_vec()];
        let acceptor = tokio_rustls::TlsAcceptor::from(Arc::new(tls));
        let connections = Arc::new(AtomicU64::new(0));
        tokio::spawn(accept_loop(tls_listener, Some(acceptor), app.clone(), connections.clone()));
        tokio::spawn(deferred_loop(cluster.clone(), shutdown_rx.clone()));
        let http_addr = match config.http_addr {
            Some(a) => {
                let l = TcpListener::bind(a).await?;
                let bound = l.local_addr()?;
                tokio::spawn(accept_loop(l, None, app.clone(), connections.clone()));
                Some(bound)
            }
            None => None,
        };
        let kubeconfig = kubeconfig(&format!("https://{addr}"), &certs.ca_pem, &token)?;
        let nodes = match config.nodes.clone() {
            Some(nc) => {
                let client = crate::nodes::client_from_kubeconfig(&kubeconfig).await?;
                let sim = crate::nodes::NodeSim::start(client, nc).await?;
                kubelets.attach(&sim);
                Some(sim)
            }
            None => None,
        };
        #[cfg(feature = "controllers")]
        let controllers = match config.controllers {
            true => {
                let client = crate::nodes::client_from_kubeconfig(&kubeconfig).await?;
                Some(crate::controllers::Controllers::start(client))
            }
            false => None,
        };
        Ok(ServerHandle {
            addr,
            http_addr,
            ca_pem: certs.ca_pem,
            token,
            kubeconfig,
            cluster,
            connections,
            nodes,
            kubelets,
            #[cfg(feature = "controllers")]
            _controllers: controllers,
            shutdown,
            _thread: None,
        })
    }

    /// Starts the server on a runtime of its own, in a background thread; for synchronous
    /// tests. Dropping the handle stops the server and the thread.
    pub fn start_in_thread(config: Config) -> Result<ServerHandle, SimError> {
        let (ready_tx, ready_rx) = std::sync::mpsc::channel();
        let (stop_tx, stop_rx) = tokio::sync::oneshot::channel::<()>();
        let join = std::thread::Builder::new().name("kruise-sim".into()).spawn(move || {
            let rt = match tokio::runtime::Builder::new_multi_thread()
                .worker_threads(2)
                .enable_all()
                .build()
            {
                Ok(rt) => rt,
                Err(e) => {
                    let _ = ready_tx.send(Err(SimError::Io(e)));
                    return;
                }
            };
            rt.block_on(async move {
                match Server::start(config).await {
                    Ok(h) => {
                        let _ = ready_tx.send(Ok(h));
                        let _ = stop_rx.await;
                    }
                    Err(e) => {
                        let _ = ready_tx.send(Err(e));
                    }
                }
            });
            rt.shutdown_timeout(Duration::from_secs(1));
        })?;
        let mut handle = ready_rx.recv().map_err(|_| {
            SimError::Io(std::io::Error::other("server thread ended before starting"))
        })??;
        handle._thread = Some(RuntimeThread { stop: Some(stop_tx), join: Some(join) });
        Ok(handle)
    }
}

/// Retries the collector's and namespace controller's deletes that admission denied (see
/// [`crate::gc`]).
async fn deferred_loop(cluster: Arc<Cluster>, mut shutdown: watch::Receiver<bool>) {
    loop {
        tokio::select! {
            _ = tokio::time::sleep(Duration::from_millis(200)) => {}
            _ = shutdown.changed() => return,
        }
        if !cluster.deferred.is_empty() {
            cluster.run_deferred().await;
        }
    }
}

/// Streams one HTTP/2 connection may have open at once: kube-apiserver's default
/// (`--http2-max-streams-per-connection` 0 means 100).
const HTTP2_MAX_STREAMS: u32 = 100;

async fn accept_loop(
    listener: TcpListener,
    tls: Option<tokio_rustls::TlsAcceptor>,
    app: Arc<App>,
    connections: Arc<AtomicU64>,
) {
    let mut shutdown = app.shutdown.clone();
    loop {
        let accepted = tokio::select! {
            a = listener.accept() => a,
            _ = shutdown.changed() => return,
        };
        let Ok((stream, _peer)) = accepted else { continue };
        connections.fetch_add(1, Ordering::Relaxed);
        let _ = stream.set_nodelay(true);
        let app = app.clone();
        let tls = tls.clone();
        tokio::spawn(async move {
            let mut shutdown = app.shutdown.clone();
            let svc = service_fn(move |req| handle(app.clone(), req));
            match tls {
                Some(acceptor) => {
                    let Ok(stream) = acceptor.accept(stream).await else { return };
                    if stream.get_ref().1.alpn_protocol() == Some(b"h2") {
                        let conn = http2::Builder::new(TokioExecutor::new())
                            .max_concurrent_streams(HTTP2_MAX_STREAMS)
                            .serve_connection(TokioIo::new(stream), svc);
                        tokio::select! {
                            _ = conn => {}
                            _ = shutdown.changed() => {}
                        }
                        return;
                    }
                    // Upgrades: `pods/exec` WebSockets.
                    let conn = http1::Builder::new()
                        .serve_connection(TokioIo::new(stream), svc)
                        .with_upgrades();
                    tokio::select! {
                        _ = conn => {}
                        _ = shutdown.changed() => {}
                    }
                }
                None => {
                    // Upgrades: `pods/exec` WebSockets.
                    let conn = http1::Builder::new()
                        .serve_connection(TokioIo::new(stream), svc)
                        .with_upgrades();
                    tokio::select! {
                        _ = conn => {}
                        _ = shutdown.changed() => {}
                    }
                }
            }
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Asking for the built-in controllers starts them with the `controllers` feature, and
    /// fails loudly without it (`cargo test -p kruise-sim --lib --no-default-features`).
    #[test]
    fn with_controllers_needs_the_controllers_feature() {
        let started = Server::start_in_thread(Config::default().with_controllers());
        if cfg!(feature = "controllers") {
            assert!(started.is_ok(), "{:?}", started.err());
        } else {
            let Err(e) = started else { panic!("started without the controllers feature") };
            assert!(matches!(e, SimError::FeatureDisabled { feature: "controllers", .. }), "{e}");
            let shown = e.to_string();
            assert!(shown.contains("`controllers` cargo feature"), "{shown}");
            assert!(shown.contains("Config::with_controllers"), "{shown}");
        }
        // Without controllers asked for, the feature does not matter.
        assert!(Server::start_in_thread(Config::default()).is_ok());
    }
}
