//! The containerrecreate worker (upstream `pkg/daemon/containerrecreate`).
//!
//! It watches the ContainerRecreateRequests labelled for its node and still active
//! (`crr.apps.kruise.io/node-name=<node>,crr.apps.kruise.io/active=true`) and works per pod
//! (key `namespace/podName`, so one request per pod at a time, as
//! [`pick_active`] chooses). For the active request it reads the pod's containers from the
//! runtime (by the kubelet's `io.kubernetes.pod.uid` label), asks [`plan_recreate`], writes the
//! per-container states (marked `isKilled`) BEFORE it stops anything, then stops each planned
//! container with its grace period; a failed stop is written with [`stop_failed`].
//!
//! The cache may lag the daemon's own writes; the object each write returned is used instead
//! until the watch has caught up (the resourceVersions it superseded are remembered), so a
//! container the daemon has marked stopped is never planned for a stop again.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use jiff::Timestamp;
use k8s_openapi::api::core::v1::{ContainerPort, HTTPGetAction, ObjectReference, Pod};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use kruise_api::apps::v1beta1::{ContainerRecreateRequest, ContainerRecreateRequestPhase};
use kruise_api::well_known::labels;
use kruise_core::containerrecreate::{
    ContainerRuntimeState, ContainerSnapshot, PreStopAction, format_pod, http_get_request,
    pick_active, plan_recreate, pre_stop_action, pre_stop_budget, stop_failed,
    stop_grace_after_hook,
};
use kruise_core::workload::Patch as CorePatch;
use kruise_cri::{ContainerFilter, ContainerRuntime, ContainerState};
use kube::api::{Patch, PatchParams};
use kube::runtime::watcher;
use kube::{Api, Resource};
use serde_json::json;

use super::{CONTAINER_NAME_LABEL, CRR_REPORTER, DaemonConfig, POD_UID_LABEL, split_container_id};
use crate::applier::EventSink;
use crate::cache::{Cache, ObjectKey};
use crate::cached_pod::CachedPod;
use crate::queue::{Backoff, WorkQueue};

type Crr = ContainerRecreateRequest;

/// The resourceVersions a request's cached copy may still show, and the object our last write
/// returned.
type Written = (Vec<String>, Arc<Crr>);

/// Why one sync failed (it is retried with backoff).
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum CrrSyncError {
    /// A status write failed.
    #[error("writing the status of {name}: {source}")]
    Write {
        /// The request.
        name: String,
        /// The API error.
        #[source]
        source: kube::Error,
    },
    /// The runtime could not list the pod's containers.
    #[error("listing the containers of pod {pod}: {source}")]
    Runtime {
        /// `namespace/name`.
        pod: String,
        /// The runtime error.
        #[source]
        source: kruise_cri::CriError,
    },
}

/// The containerrecreate worker of one node. Cheap to clone.
#[derive(Clone)]
pub struct CrrWorker {
    inner: Arc<Inner>,
}

impl std::fmt::Debug for CrrWorker {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CrrWorker").finish_non_exhaustive()
    }
}

struct Inner {
    client: kube::Client,
    runtime: Arc<dyn ContainerRuntime>,
    runtime_type: String,
    crrs: Cache<Crr>,
    pods: Option<Cache<CachedPod>>,
    queue: WorkQueue<ObjectKey>,
    /// Request UID -> (resourceVersions its cached copy may still show, the object our last
    /// write returned).
    written: Mutex<HashMap<String, Written>>,
    events: EventSink,
}

/// The label selector of the requests a daemon on `node` works on.
pub fn crr_selector(node: &str) -> String {
    format!("{}={node},{}=true", labels::CRR_NODE_NAME, labels::CRR_ACTIVE)
}

impl CrrWorker {
    /// Starts the watch and `config.crr_workers` workers on `tasks`. With `pods` (the node's
    /// pods), a pod change wakes its requests and the pod's readiness and grace period feed
    /// the plan; without, the controller's snapshot in the request is used.
    pub fn start(
        client: kube::Client,
        runtime: Arc<dyn ContainerRuntime>,
        config: &DaemonConfig,
        pods: Option<Cache<CachedPod>>,
        tasks: &mut tokio::task::JoinSet<()>,
    ) -> Self {
        let crrs = Cache::<Crr>::new();
        let queue = WorkQueue::new(
            "crr",
            Backoff { base: Duration::from_millis(500), max: Duration::from_secs(50) },
        );
        let inner = Arc::new(Inner {
            client: client.clone(),
            runtime,
            runtime_type: config.runtime_type.clone(),
            crrs: crrs.clone(),
            pods: pods.clone(),
            queue: queue.clone(),
            written: Mutex::default(),
            events: EventSink::start(client.clone(), CRR_REPORTER, None),
        });
        {
            let queue = queue.clone();
            crrs.subscribe(Arc::new(move |change| {
                if let Some(crr) = change.new.as_ref().or(change.old.as_ref()) {
                    queue.add(pod_key(crr));
                }
            }));
        }
        if let Some(pods) = &pods {
            let queue = queue.clone();
            let crrs = crrs.clone();
            pods.subscribe(Arc::new(move |change| {
                let Some(pod) = change.new.as_ref().or(change.old.as_ref()) else { return };
                let key = ObjectKey::of(pod.as_ref());
                let wanted =
                    crrs.in_namespace(&key.namespace).iter().any(|c| c.spec.pod_name == key.name);
                if wanted {
                    queue.add(key);
                }
            }));
        }
        let api = Api::<Crr>::all(client);
        let watch = watcher::Config::default().labels(&crr_selector(&config.node_name));
        tasks.spawn(crrs.clone().run(
            api,
            watch.any_semantic(),
            crate::cache::strip_managed_fields,
        ));
        for _ in 0..config.crr_workers.max(1) {
            let worker = CrrWorker { inner: inner.clone() };
            tasks.spawn(async move { worker.work().await });
        }
        CrrWorker { inner }
    }

    /// The requests' cache.
    pub fn cache(&self) -> &Cache<Crr> {
        &self.inner.crrs
    }

    /// Stops handing out work.
    pub fn shut_down(&self) {
        self.inner.queue.shut_down();
    }

    async fn work(&self) {
        let queue = &self.inner.queue;
        while let Some(key) = queue.get().await {
            let result = self.sync(&key).await;
            queue.done(&key);
            match result {
                Ok(requeue) => {
                    queue.forget(&key);
                    if let Some(after) = requeue {
                        queue.add_after(key, after);
                    }
                }
                Err(err) => {
                    tracing::warn!(pod = %key, error = %err, "ContainerRecreateRequest sync failed");
                    queue.add_rate_limited(key);
                }
            }
        }
    }

    /// One pass over the requests of the pod `key`; returns when to look again.
    pub async fn sync(&self, key: &ObjectKey) -> Result<Option<Duration>, CrrSyncError> {
        let inner = &self.inner;
        let crrs: Vec<Crr> = inner
            .crrs
            .in_namespace(&key.namespace)
            .into_iter()
            .filter(|c| c.spec.pod_name == key.name)
            .map(|c| inner.freshest(c).as_ref().clone())
            .collect();
        if crrs.is_empty() {
            return Ok(None);
        }
        let pick = pick_active(&crrs);
        for waiting in pick.waiting {
            if let (Some(patch), Some(crr)) = (
                waiting.patch,
                crrs.iter().find(|c| c.metadata.name.as_ref() == Some(&waiting.name)),
            ) {
                let body = match patch {
                    CorePatch::Merge(v) | CorePatch::Strategic(v) => v.as_ref().clone(),
                };
                inner.patch_status(crr, body).await?;
            }
        }
        let Some(active) = pick.active else { return Ok(None) };
        let Some(mut crr) = crrs.into_iter().find(|c| c.metadata.name.as_ref() == Some(&active))
        else {
            return Ok(None);
        };
        let pod = inner.pods.as_ref().and_then(|p| p.get(key)).and_then(|p| p.to_pod().ok());
        let pod_uid = crr
            .metadata
            .labels
            .as_ref()
            .and_then(|l| l.get(labels::CRR_POD_UID))
            .cloned()
            .or_else(|| pod.as_ref().and_then(|p| p.metadata.uid.clone()))
            .unwrap_or_default();
        let runtime_type = runtime_type_of(&crr, pod.as_ref(), &inner.runtime_type);
        let snapshots = if pod_uid.is_empty() {
            Vec::new()
        } else {
            inner
                .snapshots(&pod_uid, &runtime_type)
                .await
                .map_err(|source| CrrSyncError::Runtime { pod: key.to_string(), source })?
        };
        let plan = plan_recreate(&crr, pod.as_ref(), &snapshots, Timestamp::now());
        tracing::debug!(crr = %active, pod = %key, ?plan, "planned");
        if let Some(phase) = plan.set_phase {
            inner.patch_status(&crr, json!({"status": {"phase": phase, "message": ""}})).await?;
            return Ok(None);
        }
        if let Some(states) = &plan.states {
            // The planner's contract: the states (isKilled) are stored before any stop.
            crr = inner
                .patch_status(&crr, json!({"status": {"containerRecreateStates": states}}))
                .await?;
        }
        for stop in &plan.stop {
            let (_, id) = split_container_id(&stop.id);
            inner.events.emit(
                &crr.object_ref(&()),
                false,
                "Killing",
                "StopContainer",
                format!("Stopping container {} by ContainerRecreateRequest {}", stop.name, active),
            );
            let grace =
                inner.run_pre_stop(&crr, pod.as_ref(), &stop.name, id, stop.grace_seconds).await;
            tracing::info!(crr = %active, container = %stop.name, id, grace, "stopping container");
            if let Err(err) = inner.runtime.stop_container(id, grace).await {
                tracing::warn!(crr = %active, container = %stop.name, error = %err, "stop failed");
                let current = crr
                    .status
                    .as_ref()
                    .map(|s| s.container_recreate_states.clone())
                    .unwrap_or_default();
                let states = stop_failed(&current, &stop.name, &err.to_string());
                crr = inner
                    .patch_status(&crr, json!({"status": {"containerRecreateStates": states}}))
                    .await?;
            }
        }
        if let Some(message) = plan.complete {
            let now =
                Time(Timestamp::from_second(Timestamp::now().as_second()).unwrap_or_default());
            inner
                .patch_status(
                    &crr,
                    json!({"status": {
                        "phase": ContainerRecreateRequestPhase::Completed,
                        "completionTime": now,
                        "message": message,
                    }}),
                )
                .await?;
            return Ok(None);
        }
        Ok(plan.requeue_after.and_then(|d| Duration::try_from(d).ok()))
    }
}

impl Inner {
    /// Runs the preStop hook the request carries for `container` (the webhook copied the pod's)
    /// within `grace_seconds`; a failure is logged and reported as a `FailedPreStopHook`
    /// warning on the pod, and never blocks the stop. Returns the stop's grace period.
    async fn run_pre_stop(
        &self,
        crr: &Crr,
        pod: Option<&Pod>,
        container: &str,
        id: &str,
        grace_seconds: i64,
    ) -> i64 {
        let spec = crr.spec.containers.iter().find(|c| c.name == container);
        let action = pre_stop_action(spec.and_then(|c| c.pre_stop.as_ref()));
        let (Some(action), Some(budget)) = (action, pre_stop_budget(grace_seconds)) else {
            return stop_grace_after_hook(grace_seconds, None);
        };
        let ns = crr.metadata.namespace.clone().unwrap_or_default();
        let pod_uid = crr
            .metadata
            .labels
            .as_ref()
            .and_then(|l| l.get(labels::CRR_POD_UID))
            .cloned()
            .or_else(|| pod.and_then(|p| p.metadata.uid.clone()))
            .unwrap_or_default();
        let pod_name = format_pod(&crr.spec.pod_name, &ns, &pod_uid);
        let ports = spec.map(|c| c.ports.as_slice()).unwrap_or(&[]);
        let pod_ip = pod.and_then(|p| p.status.as_ref()?.pod_ip.as_deref());
        tracing::debug!(container, id, "running preStop hook");
        let start = std::time::Instant::now();
        let hook = async {
            match action {
                PreStopAction::Exec(cmd) => self.exec_hook(id, cmd, budget).await.map_err(|(err, out)| {
                    format!(
                        "Exec lifecycle hook ({:?}) for Container {container:?} in Pod {pod_name:?} failed - error: {err}, message: {out:?}",
                        spec.and_then(|c| c.pre_stop.as_ref()?.exec.as_ref()?.command.clone()).unwrap_or_default(),
                    )
                }),
                PreStopAction::HttpGet(get) => {
                    let path = get.path.clone().unwrap_or_default();
                    http_hook(&get, ports, pod_ip).await.map_err(|err| {
                        format!(
                            "HTTP lifecycle hook ({path}) for Container {container:?} in Pod {pod_name:?} failed - error: {err}"
                        )
                    })
                }
                PreStopAction::Invalid(message) => Err(message),
                _ => Err("Cannot run handler: invalid handler".to_owned()),
            }
        };
        match tokio::time::timeout(budget, hook).await {
            Ok(Ok(())) => tracing::debug!(container, id, "preStop hook completed"),
            Ok(Err(message)) => {
                tracing::warn!(container, id, %message, "preStop hook failed");
                let regarding = ObjectReference {
                    api_version: Some("v1".to_owned()),
                    kind: Some("Pod".to_owned()),
                    namespace: Some(ns.clone()),
                    name: Some(crr.spec.pod_name.clone()),
                    uid: Some(pod_uid.clone()).filter(|u| !u.is_empty()),
                    field_path: Some(format!("spec.containers{{{container}}}")),
                    ..ObjectReference::default()
                };
                self.events.emit(&regarding, true, "FailedPreStopHook", "PreStopHook", message);
            }
            Err(_) => {
                tracing::info!(
                    container,
                    id,
                    grace_seconds,
                    "preStop hook did not complete in time"
                );
            }
        }
        stop_grace_after_hook(grace_seconds, Some(start.elapsed()))
    }

    /// An exec hook: a non-zero exit code is a failure, as the kubelet's runtime client makes
    /// it. The error comes with the command's output.
    async fn exec_hook(
        &self,
        id: &str,
        cmd: Vec<String>,
        timeout: Duration,
    ) -> Result<(), (String, String)> {
        let joined = cmd.join(" ");
        let result = self
            .runtime
            .exec_sync(id, cmd, timeout)
            .await
            .map_err(|e| (e.to_string(), String::new()))?;
        let mut output = String::from_utf8_lossy(&result.stdout).into_owned();
        output.push_str(&String::from_utf8_lossy(&result.stderr));
        if result.exit_code != 0 {
            let stderr = String::from_utf8_lossy(&result.stderr);
            return Err((
                format!("command '{joined}' exited with {}: {stderr}", result.exit_code),
                output,
            ));
        }
        Ok(())
    }

    /// The cached request, or what our last write returned while the cache lags it.
    fn freshest(&self, cached: Arc<Crr>) -> Arc<Crr> {
        let uid = cached.metadata.uid.clone().unwrap_or_default();
        let mut written = self.written.lock().unwrap_or_else(|p| p.into_inner());
        match written.get(&uid) {
            Some((stale, obj))
                if stale
                    .contains(&cached.metadata.resource_version.clone().unwrap_or_default()) =>
            {
                obj.clone()
            }
            Some(_) => {
                written.remove(&uid);
                cached
            }
            None => cached,
        }
    }

    async fn patch_status(&self, crr: &Crr, body: serde_json::Value) -> Result<Crr, CrrSyncError> {
        let name = crr.metadata.name.clone().unwrap_or_default();
        let ns = crr.metadata.namespace.clone().unwrap_or_default();
        let api = Api::<Crr>::namespaced(self.client.clone(), &ns);
        let updated = api
            .patch_status(&name, &PatchParams::default(), &Patch::Merge(&body))
            .await
            .map_err(|source| CrrSyncError::Write { name: format!("{ns}/{name}"), source })?;
        let uid = crr.metadata.uid.clone().unwrap_or_default();
        let before = crr.metadata.resource_version.clone().unwrap_or_default();
        let mut written = self.written.lock().unwrap_or_else(|p| p.into_inner());
        let entry = written.entry(uid).or_insert_with(|| (Vec::new(), Arc::new(updated.clone())));
        if !entry.0.contains(&before) {
            entry.0.push(before);
        }
        entry.1 = Arc::new(updated.clone());
        Ok(updated)
    }

    /// The pod's containers as the runtime reports them.
    async fn snapshots(
        &self,
        pod_uid: &str,
        runtime_type: &str,
    ) -> Result<Vec<ContainerSnapshot>, kruise_cri::CriError> {
        let filter = ContainerFilter::default().label(POD_UID_LABEL, pod_uid);
        let containers = self.runtime.list_containers(&filter).await?;
        let mut out = Vec::with_capacity(containers.len());
        for c in containers {
            let started_at = if c.state == ContainerState::Running {
                match self.runtime.container_status(&c.id).await {
                    Ok(s) if s.started_at > 0 => {
                        Timestamp::from_nanosecond(i128::from(s.started_at)).ok()
                    }
                    Ok(_) => None,
                    Err(err) if err.is_not_found() => continue,
                    Err(err) => return Err(err),
                }
            } else {
                None
            };
            let name = c.labels.get(CONTAINER_NAME_LABEL).cloned().unwrap_or(c.name);
            out.push(ContainerSnapshot {
                name,
                id: format!("{runtime_type}://{}", c.id),
                restart_count: i32::try_from(c.attempt).unwrap_or(i32::MAX),
                state: match c.state {
                    ContainerState::Created => ContainerRuntimeState::Created,
                    ContainerState::Running => ContainerRuntimeState::Running,
                    ContainerState::Exited => ContainerRuntimeState::Exited,
                    _ => ContainerRuntimeState::Unknown,
                },
                started_at,
            });
        }
        Ok(out)
    }
}

/// The client httpGet hooks are sent with: `http` and `https`, HTTP/1.1, and for `https` the
/// certificate verified against the node's trust store (as upstream's daemon, whose Go
/// `http.Client{}` uses the system roots). Redirects are not followed: any response counts.
type HookClient = super::ActionClient;

/// Builds a [`HookClient`] trusting `roots`.
fn hook_client(roots: rustls::RootCertStore) -> Result<HookClient, String> {
    let config = rustls::ClientConfig::builder_with_provider(crate::webhook::certs::provider())
        .with_safe_default_protocol_versions()
        .map_err(|e| e.to_string())?
        .with_root_certificates(roots)
        .with_no_client_auth();
    Ok(super::action_client(config, true))
}

/// The daemon's [`HookClient`], built at the first hook: the node's trust store is read once
/// (`SSL_CERT_FILE`/`SSL_CERT_DIR` override it, as for Go). Certificates that fail to parse
/// are skipped; with none at all, `https` hooks fail verification and plain `http` works.
fn node_hook_client() -> Result<&'static HookClient, String> {
    static CLIENT: std::sync::OnceLock<Result<HookClient, String>> = std::sync::OnceLock::new();
    CLIENT
        .get_or_init(|| {
            let found = rustls_native_certs::load_native_certs();
            for err in &found.errors {
                tracing::debug!(error = %err, "preStop hooks: a trust store entry was not read");
            }
            let mut roots = rustls::RootCertStore::empty();
            let (added, ignored) = roots.add_parsable_certificates(found.certs);
            tracing::debug!(added, ignored, "preStop hooks: trust store loaded");
            hook_client(roots)
        })
        .as_ref()
        .map_err(Clone::clone)
}

/// An httpGet hook: any response counts (the kubelet does not look at the status code); a
/// request that cannot be built or sent (an unverified certificate included) is a failure.
async fn http_hook(
    action: &HTTPGetAction,
    ports: &[ContainerPort],
    pod_ip: Option<&str>,
) -> Result<(), String> {
    send_hook(node_hook_client()?, action, ports, pod_ip).await
}

async fn send_hook(
    client: &HookClient,
    action: &HTTPGetAction,
    ports: &[ContainerPort],
    pod_ip: Option<&str>,
) -> Result<(), String> {
    use http_body_util::Empty;
    use hyper::body::Bytes;

    let req = http_get_request(action, ports, pod_ip)?;
    if req.scheme != "http" && req.scheme != "https" {
        return Err(format!("unsupported scheme {:?} for lifecycle hook", req.scheme));
    }
    let uri: http::Uri = req.url.parse().map_err(|e| format!("invalid URL {:?}: {e}", req.url))?;
    let mut builder = http::Request::get(uri);
    for (name, value) in &req.headers {
        builder = builder.header(name.as_str(), value.as_str());
    }
    let request = builder.body(Empty::<Bytes>::new()).map_err(|e| e.to_string())?;
    let response = client.request(request).await.map_err(|e| kruise_cri::error_chain(&e))?;
    // Read (and discard) the body so that the server sees the request through.
    let _ = http_body_util::BodyExt::collect(response.into_body()).await;
    Ok(())
}

/// `namespace/podName` of a request.
fn pod_key(crr: &Crr) -> ObjectKey {
    ObjectKey::new(crr.metadata.namespace.clone().unwrap_or_default(), crr.spec.pod_name.clone())
}

/// The runtime type container IDs carry: from the request's status context, else the pod's
/// container statuses, else the daemon's runtime.
fn runtime_type_of(crr: &Crr, pod: Option<&Pod>, fallback: &str) -> String {
    let from_crr = crr
        .spec
        .containers
        .iter()
        .filter_map(|c| c.status_context.as_ref())
        .map(|ctx| split_container_id(&ctx.container_id).0)
        .find(|t| !t.is_empty());
    let from_pod = || {
        pod.and_then(|p| p.status.as_ref()?.container_statuses.as_ref())
            .into_iter()
            .flatten()
            .filter_map(|s| s.container_id.as_deref())
            .map(|id| split_container_id(id).0)
            .find(|t| !t.is_empty())
    };
    from_crr.or_else(from_pod).unwrap_or(fallback).to_owned()
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use std::time::SystemTime;

    use hyper::body::Incoming;
    use hyper_util::rt::TokioIo;
    use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;
    use tokio::net::TcpListener;
    use tokio::sync::mpsc;

    use super::*;
    use crate::webhook::certs::{CertBundle, Lifetimes};
    use crate::webhook::server::{SwapResolver, tls_config};

    const DAY: Duration = Duration::from_secs(24 * 60 * 60);

    /// A loopback HTTP/1.1 server (over TLS when `tls` is given) answering 500 to everything,
    /// sending each request's path and `User-Agent` on the channel.
    async fn server(
        tls: Option<tokio_rustls::TlsAcceptor>,
    ) -> (u16, mpsc::UnboundedReceiver<(String, String)>) {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let port = listener.local_addr().unwrap().port();
        let (seen, rx) = mpsc::unbounded_channel();
        tokio::spawn(async move {
            loop {
                let Ok((tcp, _)) = listener.accept().await else { return };
                let (tls, seen) = (tls.clone(), seen.clone());
                tokio::spawn(async move {
                    let service =
                        hyper::service::service_fn(move |req: http::Request<Incoming>| {
                            let agent = req
                                .headers()
                                .get("user-agent")
                                .and_then(|v| v.to_str().ok())
                                .unwrap_or_default()
                                .to_owned();
                            let _ = seen.send((req.uri().to_string(), agent));
                            async {
                                http::Response::builder()
                                    .status(500)
                                    .body(http_body_util::Full::new(hyper::body::Bytes::from("no")))
                            }
                        });
                    let http = hyper::server::conn::http1::Builder::new();
                    match tls {
                        Some(acceptor) => {
                            // A refused handshake ends this connection only.
                            if let Ok(stream) = acceptor.accept(tcp).await {
                                let _ = http.serve_connection(TokioIo::new(stream), service).await;
                            }
                        }
                        None => {
                            let _ = http.serve_connection(TokioIo::new(tcp), service).await;
                        }
                    }
                });
            }
        });
        (port, rx)
    }

    fn bundle() -> CertBundle {
        let lifetimes = Lifetimes { cert_validity: DAY, ca_validity: DAY, rotate_before: DAY / 2 };
        CertBundle::issue(&["127.0.0.1".to_owned()], None, lifetimes, SystemTime::now()).unwrap()
    }

    fn acceptor(bundle: &CertBundle) -> tokio_rustls::TlsAcceptor {
        let resolver = Arc::new(SwapResolver::new(bundle.certified_key().unwrap()));
        tokio_rustls::TlsAcceptor::from(Arc::new(tls_config(resolver).unwrap()))
    }

    fn action(scheme: &str, port: u16) -> HTTPGetAction {
        HTTPGetAction {
            host: Some("127.0.0.1".into()),
            path: Some("/quit?now=1".into()),
            port: IntOrString::Int(i32::from(port)),
            scheme: Some(scheme.into()),
            ..Default::default()
        }
    }

    #[tokio::test]
    async fn an_http_hook_is_sent_once_and_any_status_counts() {
        let (port, mut seen) = server(None).await;
        http_hook(&action("HTTP", port), &[], None).await.unwrap();
        let (path, agent) = seen.recv().await.unwrap();
        assert_eq!(path, "/quit?now=1");
        assert_eq!(agent, "kube-lifecycle/kruise-daemon");
        assert!(seen.try_recv().is_err(), "one request");
    }

    #[tokio::test]
    async fn an_https_hook_verifies_the_certificate() {
        let bundle = bundle();
        let (port, mut seen) = server(Some(acceptor(&bundle))).await;

        // Trusted: the request goes through (the 500 still counts as delivered).
        let mut roots = rustls::RootCertStore::empty();
        for ca in crate::webhook::certs::certs(&bundle.ca_cert_pem).unwrap() {
            roots.add(ca).unwrap();
        }
        let trusting = hook_client(roots).unwrap();
        send_hook(&trusting, &action("HTTPS", port), &[], None).await.unwrap();
        assert_eq!(seen.recv().await.unwrap().0, "/quit?now=1");

        // The node's trust store does not know this CA: a failure that says why, and the
        // server never sees the request.
        let err = http_hook(&action("HTTPS", port), &[], None).await.unwrap_err();
        eprintln!("unverified https hook: {err}");
        assert!(err.to_lowercase().contains("certificate"), "{err}");
        // A plain request to the TLS port is not a success either.
        assert!(http_hook(&action("HTTP", port), &[], None).await.is_err());
        assert!(seen.try_recv().is_err(), "nothing unverified was delivered");
    }

    #[tokio::test]
    async fn a_hook_with_another_scheme_fails_without_a_request() {
        let (port, mut seen) = server(None).await;
        let err = http_hook(&action("ftp", port), &[], None).await.unwrap_err();
        assert!(err.contains("\"ftp\""), "{err}");
        assert!(seen.try_recv().is_err());
    }
}
