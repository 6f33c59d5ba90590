//! The podprobe worker (upstream `pkg/daemon/podprobe`): runs the probes of the node's
//! NodePodProbe (`metadata.name=<node>`) and writes their results into its status.
//!
//! One task per probe of a pod (keyed by pod, UID, IP, container and probe name, as upstream).
//! At each period it finds the container in the runtime (the kubelet's pod UID and container
//! name labels, the newest one) and asks kruise-core's [`ProbeWorker`] what to do; the probe
//! runs with its timeout:
//! - `exec`: the runtime's `ExecSync`; exit 0 is Succeeded with stdout as the message, any
//!   other exit Failed with stderr; a runtime error (a timeout included) records nothing;
//! - `tcpSocket`: a TCP connection to the probe's host, else the pod IP; Failed with the dial
//!   error;
//! - `httpGet`: an HTTP(S) GET (certificates are not verified, as the kubelet's probes do
//!   not, and redirects are not followed): 2xx and 3xx are Succeeded with the body (10 KiB at
//!   most) as the message, other codes Failed with `HTTP probe failed with statuscode: <code>`,
//!   a connection error or timeout Failed with the error.
//!
//! Results go into [`Results`]; a change (or a result ten minutes old) marks the status dirty,
//! and one writer merges the results into the status ([`merge_status`]) and patches it. An
//! Event (`KruiseProbeSucceeded` or `KruiseProbeFailed`, Normal, reporter
//! `kruise-daemon-podprobe`) goes to the pod when a probe's state changes; upstream sends one
//! for every result at every status write.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use http_body_util::{BodyExt, Empty, Limited};
use hyper::body::Bytes;
use jiff::Timestamp;
use k8s_openapi::api::core::v1::{ObjectReference, Probe};
use kruise_api::apps::v1alpha1::{NodePodProbe, NodePodProbeStatus, ProbeState};
use kruise_core::expectations::is_resource_version_newer;
use kruise_core::podprobe::prober::{
    ContainerView, Outcome, ProbeTiming, ProbeWorker, Results, event_reason, merge_status,
};
use kruise_cri::{ContainerFilter, ContainerRuntime, ContainerState};
use kube::Api;
use kube::api::{Patch, PatchParams};
use kube::runtime::watcher;
use serde_json::json;
use tokio::sync::{Notify, watch};

use super::{CONTAINER_NAME_LABEL, DaemonConfig, POD_UID_LABEL};
use crate::applier::EventSink;
use crate::cache::{Cache, ObjectKey};

/// Reporter of the podprobe worker's Events.
pub const PODPROBE_REPORTER: &str = "kruise-daemon-podprobe";
/// The `User-Agent` of HTTP probes that set none (the kubelet's, at the version upstream
/// vendors).
pub const PROBE_USER_AGENT: &str = "kube-probe/1.32";
/// How long the status writer waits for more results before it writes.
const STATUS_BATCH: Duration = Duration::from_millis(200);
/// The most of an HTTP probe's body that is read.
const BODY_LIMIT: usize = 10 * 1024;

/// One probe of one pod.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
struct WorkerKey {
    namespace: String,
    pod: String,
    uid: String,
    ip: String,
    container: String,
    probe: String,
}

struct WorkerHandle {
    spec: watch::Sender<Probe>,
    task: tokio::task::AbortHandle,
}

/// The node's containers, listed at most once per [`LISTING_MAX_AGE`] for every probe.
#[derive(Default)]
struct Listing {
    last: Mutex<Option<(std::time::Instant, Arc<Vec<kruise_cri::Container>>)>>,
    refresh: tokio::sync::Mutex<()>,
}

/// How old a container listing may be when a probe reads it.
const LISTING_MAX_AGE: Duration = Duration::from_millis(500);

impl Listing {
    fn fresh(&self) -> Option<Arc<Vec<kruise_cri::Container>>> {
        let last = self.last.lock().unwrap_or_else(|p| p.into_inner());
        last.as_ref().filter(|(at, _)| at.elapsed() < LISTING_MAX_AGE).map(|(_, l)| l.clone())
    }

    async fn get(
        &self,
        runtime: &dyn ContainerRuntime,
    ) -> Result<Arc<Vec<kruise_cri::Container>>, kruise_cri::CriError> {
        if let Some(list) = self.fresh() {
            return Ok(list);
        }
        let _one = self.refresh.lock().await;
        if let Some(list) = self.fresh() {
            return Ok(list);
        }
        let list = Arc::new(runtime.list_containers(&ContainerFilter::default()).await?);
        *self.last.lock().unwrap_or_else(|p| p.into_inner()) =
            Some((std::time::Instant::now(), list.clone()));
        Ok(list)
    }
}

struct Inner {
    client: kube::Client,
    runtime: Arc<dyn ContainerRuntime>,
    listing: Listing,
    node: String,
    probes: Cache<NodePodProbe>,
    workers: Mutex<HashMap<WorkerKey, WorkerHandle>>,
    results: Mutex<Results>,
    /// The status as last written (the cache may not show it yet).
    written: Mutex<Option<NodePodProbe>>,
    resync: Notify,
    dirty: Notify,
    events: EventSink,
}

/// The podprobe worker of one node. Cheap to clone.
#[derive(Clone)]
pub struct PodProber {
    inner: Arc<Inner>,
}

impl std::fmt::Debug for PodProber {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PodProber").field("node", &self.inner.node).finish_non_exhaustive()
    }
}

/// Why a probe could not run (nothing is recorded).
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ProbeError {
    /// The probe has no handler the daemon runs (gRPC included, as upstream).
    #[error("missing probe handler for {0}")]
    NoHandler(String),
    /// The runtime failed (an exec timeout included).
    #[error(transparent)]
    Runtime(#[from] kruise_cri::CriError),
    /// The HTTP request could not be built.
    #[error("{0}")]
    Request(String),
}

impl PodProber {
    /// Starts the NodePodProbe watch, the worker manager and the status writer on `tasks`.
    pub fn start(
        client: kube::Client,
        runtime: Arc<dyn ContainerRuntime>,
        config: &DaemonConfig,
        tasks: &mut tokio::task::JoinSet<()>,
    ) -> Self {
        let probes = Cache::<NodePodProbe>::new();
        let inner = Arc::new(Inner {
            client: client.clone(),
            runtime,
            listing: Listing::default(),
            node: config.node_name.clone(),
            probes: probes.clone(),
            workers: Mutex::default(),
            results: Mutex::default(),
            written: Mutex::default(),
            resync: Notify::new(),
            dirty: Notify::new(),
            events: EventSink::start(client.clone(), PODPROBE_REPORTER, None),
        });
        {
            let inner = inner.clone();
            probes.subscribe(Arc::new(move |_| inner.resync.notify_one()));
        }
        let api = Api::<NodePodProbe>::all(client);
        let watch =
            watcher::Config::default().fields(&format!("metadata.name={}", config.node_name));
        tasks.spawn(probes.run(api, watch.any_semantic(), crate::cache::strip_managed_fields));
        let manager = inner.clone();
        tasks.spawn(async move {
            loop {
                manager.resync.notified().await;
                manager.sync_workers();
                manager.dirty.notify_one();
            }
        });
        let writer = inner.clone();
        tasks.spawn(async move {
            loop {
                writer.dirty.notified().await;
                // Results that arrive together are written together.
                tokio::time::sleep(STATUS_BATCH).await;
                if let Err(err) = writer.write_status().await {
                    tracing::warn!(node = %writer.node, error = %err, "writing the NodePodProbe status failed");
                    tokio::time::sleep(Duration::from_secs(1)).await;
                    writer.dirty.notify_one();
                }
            }
        });
        PodProber { inner }
    }

    /// The NodePodProbe's cache.
    pub fn cache(&self) -> &Cache<NodePodProbe> {
        &self.inner.probes
    }

    /// Stops every probe.
    pub fn shut_down(&self) {
        let mut workers = self.inner.workers.lock().unwrap_or_else(|p| p.into_inner());
        for (_, handle) in workers.drain() {
            handle.task.abort();
        }
    }

    /// How many probes run.
    pub fn running(&self) -> usize {
        self.inner.workers.lock().unwrap_or_else(|p| p.into_inner()).len()
    }
}

impl Inner {
    fn node_probe(&self) -> Option<Arc<NodePodProbe>> {
        self.probes.get(&ObjectKey::new("", self.node.as_str()))
    }

    /// Starts, updates and stops workers to match the spec.
    fn sync_workers(self: &Arc<Self>) {
        let wanted: HashMap<WorkerKey, Probe> = self
            .node_probe()
            .filter(|p| p.metadata.deletion_timestamp.is_none())
            .map(|p| {
                p.spec
                    .pod_probes
                    .iter()
                    .flat_map(|pod| {
                        pod.probes.iter().map(move |probe| {
                            let key = WorkerKey {
                                namespace: pod.namespace.clone(),
                                pod: pod.name.clone(),
                                uid: pod.uid.clone(),
                                ip: pod.ip.clone(),
                                container: probe.container_name.clone(),
                                probe: probe.name.clone(),
                            };
                            (key, probe.probe.probe.clone())
                        })
                    })
                    .collect()
            })
            .unwrap_or_default();
        let mut workers = self.workers.lock().unwrap_or_else(|p| p.into_inner());
        workers.retain(|key, handle| {
            if wanted.contains_key(key) {
                return true;
            }
            handle.task.abort();
            self.results.lock().unwrap_or_else(|p| p.into_inner()).forget(&key.uid, &key.probe);
            false
        });
        for (key, probe) in wanted {
            match workers.get(&key) {
                Some(handle) => {
                    handle.spec.send_if_modified(|current| {
                        let changed = *current != probe;
                        if changed {
                            *current = probe.clone();
                        }
                        changed
                    });
                }
                None => {
                    let (spec, spec_rx) = watch::channel(probe);
                    let task = tokio::spawn(self.clone().run_worker(key.clone(), spec_rx));
                    workers.insert(key, WorkerHandle { spec, task: task.abort_handle() });
                }
            }
        }
    }

    /// One probe, until aborted.
    async fn run_worker(self: Arc<Self>, key: WorkerKey, mut spec: watch::Receiver<Probe>) {
        let mut worker = ProbeWorker::new();
        let mut handler = handler_of(&spec.borrow());
        // Probes of a node start spread over their period rather than all at once.
        let first = ProbeTiming::of(&spec.borrow()).period;
        let spread = {
            use std::hash::{Hash, Hasher};
            let mut hasher = std::collections::hash_map::DefaultHasher::new();
            key.hash(&mut hasher);
            hasher.finish() % 1000
        };
        let offset = Duration::try_from(first)
            .unwrap_or(Duration::from_secs(1))
            .mul_f64(spread as f64 / 1000.0);
        tokio::time::sleep(offset).await;
        let mut started: Option<(String, Option<Timestamp>)> = None;
        loop {
            let probe = spec.borrow_and_update().clone();
            let timing = ProbeTiming::of(&probe);
            let current = handler_of(&probe);
            if current != handler {
                handler = current;
                if let Some(outcome) = worker.reset() {
                    self.record(&key, outcome);
                }
            }
            // The runtime calls are boxed, so that a sleeping probe holds a small future.
            let container = Box::pin(self.find_container(&key, &mut started)).await;
            let tick = worker.tick(&key.container, container.as_ref(), &timing, Timestamp::now());
            if let Some(outcome) = tick.record {
                self.record(&key, outcome);
            }
            if let Some(id) = tick.probe {
                match Box::pin(run_probe(self.runtime.as_ref(), &id, &key, &probe, &timing)).await {
                    Ok(outcome) => {
                        if let Some(outcome) = worker.observe(outcome, &timing) {
                            self.record(&key, outcome);
                        }
                    }
                    Err(err) => {
                        tracing::debug!(pod = %key.pod, probe = %key.probe, error = %err, "probe did not run");
                    }
                }
            }
            let period = Duration::try_from(timing.period).unwrap_or(Duration::from_secs(1));
            tokio::select! {
                () = tokio::time::sleep(period) => {}
                changed = spec.changed() => if changed.is_err() { return },
            }
        }
    }

    /// The newest container of the probe's pod and name; its start time is asked of the
    /// runtime once per container (`started` remembers it).
    async fn find_container(
        &self,
        key: &WorkerKey,
        started: &mut Option<(String, Option<Timestamp>)>,
    ) -> Option<ContainerView> {
        let containers = match self.listing.get(self.runtime.as_ref()).await {
            Ok(c) => c,
            Err(err) => {
                tracing::debug!(pod = %key.pod, error = %err, "listing containers failed");
                return None;
            }
        };
        let newest = containers
            .iter()
            .filter(|c| c.labels.get(POD_UID_LABEL) == Some(&key.uid))
            .filter(|c| {
                c.labels
                    .get(CONTAINER_NAME_LABEL)
                    .map_or(c.name == key.container, |n| *n == key.container)
            })
            .max_by_key(|c| c.created_at)?;
        let running = newest.state == ContainerState::Running;
        let known = started.as_ref().filter(|(id, at)| *id == newest.id && at.is_some());
        let started_at = match known {
            Some((_, at)) => *at,
            None if running => {
                let status = self.runtime.container_status(&newest.id).await.ok()?;
                let at = (status.started_at > 0)
                    .then(|| Timestamp::from_nanosecond(i128::from(status.started_at)).ok())
                    .flatten();
                *started = Some((newest.id.clone(), at));
                at
            }
            None => None,
        };
        Some(ContainerView { id: newest.id.clone(), running, started_at })
    }

    fn record(&self, key: &WorkerKey, outcome: Outcome) {
        let now = Timestamp::now();
        let (write, state_changed) = {
            let mut results = self.results.lock().unwrap_or_else(|p| p.into_inner());
            let changed =
                results.get(&key.uid, &key.probe).is_none_or(|r| r.outcome.state != outcome.state);
            (results.record(&key.uid, &key.probe, outcome.clone(), now), changed)
        };
        // A container first seen is Unknown; that is no result worth an Event.
        if state_changed && outcome.state != ProbeState::Unknown {
            let pod = ObjectReference {
                api_version: Some("v1".into()),
                kind: Some("Pod".into()),
                namespace: Some(key.namespace.clone()),
                name: Some(key.pod.clone()),
                uid: Some(key.uid.clone()),
                ..ObjectReference::default()
            };
            let note = if outcome.message.is_empty() {
                format!("{}: {}", key.probe, outcome.state.as_str())
            } else {
                format!("{}: {}", key.probe, outcome.message)
            };
            self.events.emit(&pod, false, event_reason(&outcome.state), "Probe", note);
        }
        if write {
            self.dirty.notify_one();
        }
    }

    /// Writes the merged status, when it differs.
    async fn write_status(&self) -> Result<(), kube::Error> {
        let Some(cached) = self.node_probe() else { return Ok(()) };
        let base = {
            let written = self.written.lock().unwrap_or_else(|p| p.into_inner());
            match written.as_ref() {
                Some(w)
                    if w.metadata.uid == cached.metadata.uid
                        && is_newer(
                            w.metadata.resource_version.as_deref(),
                            cached.metadata.resource_version.as_deref(),
                        ) =>
                {
                    w.status.clone()
                }
                _ => cached.status.clone(),
            }
        };
        let status = {
            let results = self.results.lock().unwrap_or_else(|p| p.into_inner());
            merge_status(&cached.spec, base.as_ref(), &results, Timestamp::now())
        };
        if Some(&status) == base.as_ref()
            || (status == NodePodProbeStatus::default() && base.is_none())
        {
            return Ok(());
        }
        let api = Api::<NodePodProbe>::all(self.client.clone());
        let patch = json!({"status": status});
        let mut written =
            api.patch_status(&self.node, &PatchParams::default(), &Patch::Merge(&patch)).await?;
        // Only the status and the version are read back from it.
        written.metadata.managed_fields = None;
        written.spec = Default::default();
        *self.written.lock().unwrap_or_else(|p| p.into_inner()) = Some(written);
        Ok(())
    }
}

/// Whether `written` is newer than `cached` (both resourceVersions).
fn is_newer(written: Option<&str>, cached: Option<&str>) -> bool {
    match (written, cached) {
        (Some(w), Some(c)) => is_resource_version_newer(w, c),
        (Some(_), None) => true,
        _ => false,
    }
}

/// The handler part of a probe (a change of it starts the results over).
fn handler_of(probe: &Probe) -> Probe {
    Probe {
        exec: probe.exec.clone(),
        http_get: probe.http_get.clone(),
        tcp_socket: probe.tcp_socket.clone(),
        grpc: probe.grpc.clone(),
        ..Probe::default()
    }
}

/// Runs `probe` once against the container `id` of the pod `key`.
async fn run_probe(
    runtime: &dyn ContainerRuntime,
    id: &str,
    key: &WorkerKey,
    probe: &Probe,
    timing: &ProbeTiming,
) -> Result<Outcome, ProbeError> {
    let timeout = Duration::try_from(timing.timeout).unwrap_or(Duration::from_secs(1));
    if let Some(exec) = &probe.exec {
        let command = exec.command.clone().unwrap_or_default();
        let result = runtime.exec_sync(id, command, timeout).await?;
        return Ok(if result.exit_code == 0 {
            Outcome::new(ProbeState::Succeeded, String::from_utf8_lossy(&result.stdout))
        } else {
            Outcome::new(ProbeState::Failed, String::from_utf8_lossy(&result.stderr))
        });
    }
    if let Some(http) = &probe.http_get {
        return http_probe(http, &key.ip, timeout).await;
    }
    if let Some(tcp) = &probe.tcp_socket {
        let host = tcp.host.clone().filter(|h| !h.is_empty()).unwrap_or_else(|| key.ip.clone());
        return Ok(tcp_probe(&host, &tcp.port, timeout).await);
    }
    Err(ProbeError::NoHandler(key.container.clone()))
}

/// `host:port`, with an IPv6 address bracketed.
fn host_port(host: &str, port: u16) -> String {
    if host.contains(':') && !host.starts_with('[') {
        format!("[{host}]:{port}")
    } else {
        format!("{host}:{port}")
    }
}

/// A TCP probe: Succeeded (empty message) once connected within `timeout`; Failed with the
/// dial error otherwise.
pub async fn tcp_probe(
    host: &str,
    port: &k8s_openapi::apimachinery::pkg::util::intstr::IntOrString,
    timeout: Duration,
) -> Outcome {
    let port = match kruise_core::http_get::resolve_port(port, &[]) {
        Ok(port) => port,
        Err(err) => return Outcome::new(ProbeState::Failed, err),
    };
    let address = host_port(host, port);
    match tokio::time::timeout(timeout, tokio::net::TcpStream::connect(address.as_str())).await {
        Ok(Ok(_stream)) => Outcome::new(ProbeState::Succeeded, ""),
        Ok(Err(err)) => Outcome::new(ProbeState::Failed, format!("dial tcp {address}: {err}")),
        Err(_) => Outcome::new(ProbeState::Failed, format!("dial tcp {address}: i/o timeout")),
    }
}

type ProbeClient = super::ActionClient;

/// Accepts any server certificate, as the kubelet's HTTPS probes do (`InsecureSkipVerify`);
/// signatures are still checked with the crypto provider's algorithms.
#[derive(Debug)]
struct AnyCertificate(Arc<rustls::crypto::CryptoProvider>);

impl rustls::client::danger::ServerCertVerifier for AnyCertificate {
    fn verify_server_cert(
        &self,
        _end_entity: &rustls::pki_types::CertificateDer<'_>,
        _intermediates: &[rustls::pki_types::CertificateDer<'_>],
        _server_name: &rustls::pki_types::ServerName<'_>,
        _ocsp: &[u8],
        _now: rustls::pki_types::UnixTime,
    ) -> Result<rustls::client::danger::ServerCertVerified, rustls::Error> {
        Ok(rustls::client::danger::ServerCertVerified::assertion())
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &rustls::pki_types::CertificateDer<'_>,
        dss: &rustls::DigitallySignedStruct,
    ) -> Result<rustls::client::danger::HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls12_signature(
            message,
            cert,
            dss,
            &self.0.signature_verification_algorithms,
        )
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &rustls::pki_types::CertificateDer<'_>,
        dss: &rustls::DigitallySignedStruct,
    ) -> Result<rustls::client::danger::HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls13_signature(
            message,
            cert,
            dss,
            &self.0.signature_verification_algorithms,
        )
    }

    fn supported_verify_schemes(&self) -> Vec<rustls::SignatureScheme> {
        self.0.signature_verification_algorithms.supported_schemes()
    }
}

fn probe_client() -> Result<&'static ProbeClient, String> {
    static CLIENT: std::sync::OnceLock<Result<ProbeClient, String>> = std::sync::OnceLock::new();
    CLIENT
        .get_or_init(|| {
            let provider = crate::webhook::certs::provider();
            let config = rustls::ClientConfig::builder_with_provider(provider.clone())
                .with_safe_default_protocol_versions()
                .map_err(|e| e.to_string())?
                .dangerous()
                .with_custom_certificate_verifier(Arc::new(AnyCertificate(provider)))
                .with_no_client_auth();
            // Probes keep no connections open, as the kubelet's.
            Ok(super::action_client(config, false))
        })
        .as_ref()
        .map_err(Clone::clone)
}

/// An HTTP probe of `action` against `pod_ip` (the action's port must be a number by now).
///
/// # Errors
/// A request that cannot be built (no host, a bad port or URL).
pub async fn http_probe(
    action: &k8s_openapi::api::core::v1::HTTPGetAction,
    pod_ip: &str,
    timeout: Duration,
) -> Result<Outcome, ProbeError> {
    let req = kruise_core::http_get::http_get_request(action, &[], Some(pod_ip), PROBE_USER_AGENT)
        .map_err(ProbeError::Request)?;
    if req.scheme != "http" && req.scheme != "https" {
        return Err(ProbeError::Request(format!("unsupported scheme {:?}", req.scheme)));
    }
    let uri: http::Uri = req
        .url
        .parse()
        .map_err(|e| ProbeError::Request(format!("invalid URL {:?}: {e}", req.url)))?;
    let mut builder = http::Request::get(uri);
    for (name, value) in &req.headers {
        builder = builder.header(name.as_str(), value.as_str());
    }
    let request =
        builder.body(Empty::<Bytes>::new()).map_err(|e| ProbeError::Request(e.to_string()))?;
    let client = probe_client().map_err(ProbeError::Request)?;
    let exchange = async {
        let response = client.request(request).await.map_err(|e| kruise_cri::error_chain(&e))?;
        let status = response.status().as_u16();
        let body = Limited::new(response.into_body(), BODY_LIMIT);
        let body = match body.collect().await {
            Ok(collected) => collected.to_bytes(),
            Err(_) => Bytes::new(),
        };
        Ok::<_, String>((status, body))
    };
    Ok(match tokio::time::timeout(timeout, exchange).await {
        Ok(Ok((status, body))) if (200..400).contains(&status) => {
            Outcome::new(ProbeState::Succeeded, String::from_utf8_lossy(&body))
        }
        Ok(Ok((status, _))) => {
            Outcome::new(ProbeState::Failed, format!("HTTP probe failed with statuscode: {status}"))
        }
        Ok(Err(err)) => Outcome::new(ProbeState::Failed, format!("Get {:?}: {err}", req.url)),
        Err(_) => Outcome::new(
            ProbeState::Failed,
            format!(
                "Get {:?}: context deadline exceeded (Client.Timeout exceeded while awaiting headers)",
                req.url
            ),
        ),
    })
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use hyper::body::Incoming;
    use hyper_util::rt::TokioIo;
    use k8s_openapi::api::core::v1::HTTPGetAction;
    use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;
    use tokio::net::TcpListener;

    /// A loopback HTTP server answering every request with `status` and `body` after `delay`.
    async fn serve(status: u16, body: &'static str, delay: Duration) -> u16 {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let port = listener.local_addr().unwrap().port();
        tokio::spawn(async move {
            loop {
                let Ok((stream, _)) = listener.accept().await else { return };
                tokio::spawn(async move {
                    let service = hyper::service::service_fn(
                        move |_req: hyper::Request<Incoming>| async move {
                            tokio::time::sleep(delay).await;
                            Ok::<_, std::convert::Infallible>(
                                hyper::Response::builder()
                                    .status(status)
                                    .body(http_body_util::Full::new(Bytes::from_static(
                                        body.as_bytes(),
                                    )))
                                    .unwrap(),
                            )
                        },
                    );
                    let _ = hyper::server::conn::http1::Builder::new()
                        .serve_connection(TokioIo::new(stream), service)
                        .await;
                });
            }
        });
        port
    }

    fn get(port: u16, path: &str) -> HTTPGetAction {
        HTTPGetAction {
            path: Some(path.into()),
            port: IntOrString::Int(i32::from(port)),
            ..Default::default()
        }
    }

    #[tokio::test]
    async fn http_probes_judge_the_status_code() {
        let ok = serve(200, "fine", Duration::ZERO).await;
        let out =
            http_probe(&get(ok, "/healthz"), "127.0.0.1", Duration::from_secs(5)).await.unwrap();
        assert_eq!(out, Outcome::new(ProbeState::Succeeded, "fine"));
        let moved = serve(302, "", Duration::ZERO).await;
        let out = http_probe(&get(moved, "/"), "127.0.0.1", Duration::from_secs(5)).await.unwrap();
        assert_eq!(out.state, ProbeState::Succeeded);
        let failing = serve(503, "down", Duration::ZERO).await;
        let out =
            http_probe(&get(failing, "/"), "127.0.0.1", Duration::from_secs(5)).await.unwrap();
        assert_eq!(out, Outcome::new(ProbeState::Failed, "HTTP probe failed with statuscode: 503"));
        let slow = serve(200, "late", Duration::from_secs(30)).await;
        let out =
            http_probe(&get(slow, "/"), "127.0.0.1", Duration::from_millis(200)).await.unwrap();
        assert_eq!(out.state, ProbeState::Failed);
        assert!(out.message.contains("context deadline exceeded"), "{}", out.message);
        // Nothing listens: a connection error.
        let closed = TcpListener::bind("127.0.0.1:0").await.unwrap().local_addr().unwrap().port();
        let out = http_probe(&get(closed, "/"), "127.0.0.1", Duration::from_secs(5)).await.unwrap();
        assert_eq!(out.state, ProbeState::Failed);
        assert!(
            out.message.starts_with(&format!("Get \"http://127.0.0.1:{closed}/\"")),
            "{}",
            out.message
        );
        // No pod IP: not run at all.
        assert!(http_probe(&get(ok, "/"), "", Duration::from_secs(1)).await.is_err());
    }

    #[tokio::test]
    async fn tcp_probes_connect() {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let port = i32::from(listener.local_addr().unwrap().port());
        let out = tcp_probe("127.0.0.1", &IntOrString::Int(port), Duration::from_secs(5)).await;
        assert_eq!(out, Outcome::new(ProbeState::Succeeded, ""));
        drop(listener);
        let out = tcp_probe("127.0.0.1", &IntOrString::Int(port), Duration::from_secs(5)).await;
        assert_eq!(out.state, ProbeState::Failed);
        assert!(
            out.message.starts_with(&format!("dial tcp 127.0.0.1:{port}: ")),
            "{}",
            out.message
        );
        let out = tcp_probe("127.0.0.1", &IntOrString::Int(-1), Duration::from_secs(1)).await;
        assert_eq!(out, Outcome::new(ProbeState::Failed, "invalid port number: -1"));
    }
}
