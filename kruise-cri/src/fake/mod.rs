//! An in-memory container runtime: what kruise-sim's nodes run and what the daemon's tests use.
//!
//! [`FakeRuntime`] is a cheap handle (`Arc` inside; clones share state), so hundreds of
//! simulated nodes can each own one. Beside the [`ContainerRuntime`] calls it has the calls a
//! kubelet makes (run a sandbox, create and start containers, restart an exited one) and knobs
//! for tests (pull failures, pull delays, registry credentials, an exec handler). With the
//! `grpc` feature, [`serve`] puts it behind a real CRI socket.

#[cfg(feature = "grpc")]
mod server;

#[cfg(feature = "grpc")]
pub use server::{FakeServer, serve};

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, MutexGuard, OnceLock};
use std::time::{Duration, SystemTime};

use tokio::sync::broadcast;

use crate::error::{CriError, ErrorKind};
use crate::runtime::{BoxFuture, ContainerRuntime, CriResult};
use crate::types::{
    AuthConfig, Container, ContainerConfig, ContainerFilter, ContainerState, ContainerStatus,
    ExecSyncResult, ImageInfo, PodSandbox, PodSandboxConfig, PullSandboxConfig, SandboxState,
    VersionInfo,
};

/// Exit code of a container stopped with a grace period (it honoured SIGTERM).
pub const STOP_EXIT_CODE: i32 = 143;
/// Exit code of a container stopped with no grace period (SIGKILL).
pub const KILL_EXIT_CODE: i32 = 137;
/// Size the fake gives a pulled image unless [`FakeRuntime::add_image`] said otherwise.
pub const DEFAULT_IMAGE_SIZE: u64 = 1 << 20;

/// Events a subscriber may fall behind by before it loses the oldest.
pub const EVENT_BUFFER: usize = 256;

/// Runs an exec in the fake: gets the container and the command, returns the result.
pub type ExecHandler = Arc<dyn Fn(&ContainerStatus, &[String]) -> ExecSyncResult + Send + Sync>;

/// Something that happened in a [`FakeRuntime`]; see [`FakeRuntime::subscribe`].
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum FakeEvent {
    /// An image was pulled (or pulled again).
    ImagePulled {
        /// The normalised reference.
        image: String,
    },
    /// A container started.
    ContainerStarted {
        /// Its ID.
        id: String,
    },
    /// A container exited (stopped, or its sandbox stopped).
    ContainerExited {
        /// Its ID.
        id: String,
        /// The grace period the stop asked for, if a stop did it.
        timeout_secs: Option<i64>,
    },
    /// An exited container was replaced by a new attempt of the same name.
    ContainerRestarted {
        /// The exited container.
        old_id: String,
        /// The new one, running.
        new_id: String,
    },
}

/// One pull as the fake received it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PullRecord {
    /// The normalised reference.
    pub image: String,
    /// The user name of the credentials, if any.
    pub username: Option<String>,
    /// The sandbox config passed along.
    pub sandbox: Option<PullSandboxConfig>,
    /// Whether it succeeded.
    pub succeeded: bool,
}

/// The in-memory runtime. Clones share state.
#[derive(Clone)]
pub struct FakeRuntime {
    inner: Arc<Inner>,
}

struct Inner {
    name: String,
    state: Mutex<State>,
    /// Made by the first `subscribe`: a runtime nobody watches allocates no channel.
    events: OnceLock<broadcast::Sender<FakeEvent>>,
}

#[derive(Default)]
struct State {
    version: VersionInfo,
    next_id: u64,
    images: BTreeMap<String, ImageInfo>,
    failures: BTreeMap<String, Failure>,
    delays: BTreeMap<String, Duration>,
    default_delay: Duration,
    credentials: BTreeMap<String, AuthConfig>,
    pulls: Vec<PullRecord>,
    sandboxes: BTreeMap<String, PodSandbox>,
    containers: BTreeMap<String, FakeContainer>,
    auto_restart: bool,
    exec_handler: Option<ExecHandler>,
}

struct Failure {
    remaining: Option<u32>,
    message: String,
}

#[derive(Clone)]
struct FakeContainer {
    status: ContainerStatus,
    pod_sandbox_id: String,
    config: ContainerConfig,
    last_stop_timeout: Option<i64>,
}

impl Default for FakeRuntime {
    fn default() -> Self {
        FakeRuntime::new("fake")
    }
}

impl std::fmt::Debug for FakeRuntime {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FakeRuntime").field("name", &self.inner.name).finish_non_exhaustive()
    }
}

/// Adds `:latest` to a reference with neither tag nor digest, as the runtimes do.
pub fn normalize_image(image: &str) -> String {
    let last = image.rsplit('/').next().unwrap_or(image);
    if image.contains('@') || last.contains(':') {
        image.to_string()
    } else {
        format!("{image}:latest")
    }
}

fn now_nanos() -> i64 {
    SystemTime::now()
        .duration_since(SystemTime::UNIX_EPOCH)
        .map(|d| i64::try_from(d.as_nanos()).unwrap_or(i64::MAX))
        .unwrap_or(0)
}

/// FNV-1a: stable across Rust versions, so fake IDs are too.
fn fnv(bytes: &[u8]) -> u64 {
    bytes
        .iter()
        .fold(0xcbf2_9ce4_8422_2325, |h, b| (h ^ u64::from(*b)).wrapping_mul(0x0100_0000_01b3))
}

fn splitmix(mut x: u64) -> u64 {
    x = x.wrapping_add(0x9e37_79b9_7f4a_7c15);
    x = (x ^ (x >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    x = (x ^ (x >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    x ^ (x >> 31)
}

/// 64 hex digits derived from a seed, like a runtime's IDs.
fn hex_id(seed: u64) -> String {
    let mut s = String::with_capacity(64);
    let mut x = seed;
    for _ in 0..4 {
        x = splitmix(x);
        s.push_str(&format!("{x:016x}"));
    }
    s
}

fn image_id(image: &str) -> String {
    format!("sha256:{}", hex_id(fnv(image.as_bytes())))
}

/// The registry host of a reference, the part before the first `/` if it looks like a host.
fn registry_of(image: &str) -> &str {
    match image.split_once('/') {
        Some((host, _)) if host.contains(['.', ':']) || host == "localhost" => host,
        _ => "docker.io",
    }
}

fn default_exec(_: &ContainerStatus, cmd: &[String]) -> ExecSyncResult {
    let name = cmd.first().map(|c| c.rsplit('/').next().unwrap_or(c)).unwrap_or("");
    let args = cmd.get(1..).unwrap_or(&[]);
    match name {
        "echo" => ExecSyncResult {
            stdout: format!("{}\n", args.join(" ")).into_bytes(),
            ..ExecSyncResult::default()
        },
        "true" => ExecSyncResult::default(),
        "false" => ExecSyncResult { exit_code: 1, ..ExecSyncResult::default() },
        "sh" if args.first().map(String::as_str) == Some("-c") => {
            let script = args.get(1).map(String::as_str).unwrap_or("").trim();
            let code =
                script.strip_prefix("exit ").and_then(|n| n.trim().parse().ok()).unwrap_or(0);
            ExecSyncResult { exit_code: code, ..ExecSyncResult::default() }
        }
        _ => ExecSyncResult {
            stderr: format!("exec: {name:?}: executable file not found\n").into_bytes(),
            exit_code: 127,
            ..ExecSyncResult::default()
        },
    }
}

impl FakeRuntime {
    /// A fresh runtime. `name` (e.g. the node name) seeds its IDs, so two runtimes with
    /// different names give different IDs and one name gives the same IDs every run.
    pub fn new(name: impl Into<String>) -> Self {
        let name = name.into();
        let state = State {
            version: VersionInfo {
                version: "0.1.0".into(),
                runtime_name: "fake".into(),
                runtime_version: "0.1.0".into(),
                runtime_api_version: "v1".into(),
            },
            ..State::default()
        };
        FakeRuntime {
            inner: Arc::new(Inner { name, state: Mutex::new(state), events: OnceLock::new() }),
        }
    }

    /// The name given to [`new`](Self::new).
    pub fn name(&self) -> &str {
        &self.inner.name
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        // A panic while holding the lock leaves the maps consistent (each change is one insert
        // or field write), so a poisoned lock is still usable.
        self.inner.state.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    fn emit(&self, event: FakeEvent) {
        if let Some(events) = self.inner.events.get() {
            // No live receiver is fine.
            let _ = events.send(event);
        }
    }

    fn new_id(&self, state: &mut State) -> String {
        state.next_id += 1;
        hex_id(fnv(self.inner.name.as_bytes()) ^ splitmix(state.next_id))
    }

    /// Events from now on. A receiver more than [`EVENT_BUFFER`] events behind loses the oldest.
    pub fn subscribe(&self) -> broadcast::Receiver<FakeEvent> {
        self.inner.events.get_or_init(|| broadcast::channel(EVENT_BUFFER).0).subscribe()
    }

    /// Replaces what `version` answers.
    pub fn set_version(&self, version: VersionInfo) {
        self.lock().version = version;
    }

    // ---- images ------------------------------------------------------------------------------

    /// Puts an image on the node as if pulled, without counting a pull.
    pub fn add_image(&self, image: &str, size: u64) -> ImageInfo {
        let image = normalize_image(image);
        let info = ImageInfo {
            id: image_id(&image),
            repo_tags: vec![image.clone()],
            repo_digests: vec![],
            size,
            pinned: false,
        };
        self.lock().images.insert(image, info.clone());
        info
    }

    /// Removes an image (by reference); whether it was there.
    pub fn remove_image(&self, image: &str) -> bool {
        self.lock().images.remove(&normalize_image(image)).is_some()
    }

    /// The next `times` pulls of `image` fail with `message` (`None`: every pull fails until
    /// [`clear_pull_failure`](Self::clear_pull_failure)).
    pub fn fail_pulls(&self, image: &str, times: Option<u32>, message: impl Into<String>) {
        self.lock()
            .failures
            .insert(normalize_image(image), Failure { remaining: times, message: message.into() });
    }

    /// Pulls of `image` succeed again.
    pub fn clear_pull_failure(&self, image: &str) {
        self.lock().failures.remove(&normalize_image(image));
    }

    /// A pull of `image` takes `delay` (`None`: every image without its own delay).
    pub fn set_pull_delay(&self, image: Option<&str>, delay: Duration) {
        let mut state = self.lock();
        match image {
            Some(image) => {
                state.delays.insert(normalize_image(image), delay);
            }
            None => state.default_delay = delay,
        }
    }

    /// Pulls from `registry` (a host such as `127.0.0.1:5000`, or `docker.io` for short names)
    /// need these user name and password; others fail as unauthenticated.
    pub fn require_auth(&self, registry: &str, auth: AuthConfig) {
        self.lock().credentials.insert(registry.to_string(), auth);
    }

    /// Every pull received so far, in order.
    pub fn pulls(&self) -> Vec<PullRecord> {
        self.lock().pulls.clone()
    }

    /// How many pulls of `image` were received (failed ones too).
    pub fn pull_count(&self, image: &str) -> usize {
        let image = normalize_image(image);
        self.lock().pulls.iter().filter(|p| p.image == image).count()
    }

    async fn do_pull(
        &self,
        requested: &str,
        auth: Option<AuthConfig>,
        sandbox: Option<PullSandboxConfig>,
    ) -> CriResult<String> {
        let image = normalize_image(requested);
        let delay = {
            let state = self.lock();
            state.delays.get(&image).copied().unwrap_or(state.default_delay)
        };
        if !delay.is_zero() {
            tokio::time::sleep(delay).await;
        }
        let mut state = self.lock();
        let outcome = (|| {
            if let Some(failure) = state.failures.get_mut(&image) {
                let fail = match &mut failure.remaining {
                    None => true,
                    Some(0) => false,
                    Some(n) => {
                        *n -= 1;
                        true
                    }
                };
                if fail {
                    return Err((ErrorKind::Unknown, failure.message.clone()));
                }
            }
            if let Some(need) = state.credentials.get(registry_of(&image)) {
                let ok = auth
                    .as_ref()
                    .is_some_and(|a| a.username == need.username && a.password == need.password);
                if !ok {
                    return Err((
                        ErrorKind::Unauthenticated,
                        format!("pull access denied for {image}: unauthorized"),
                    ));
                }
            }
            Ok(())
        })();
        state.pulls.push(PullRecord {
            image: image.clone(),
            username: auth.map(|a| a.username),
            sandbox,
            succeeded: outcome.is_ok(),
        });
        match outcome {
            Err((kind, message)) => {
                Err(CriError::PullImage { image: requested.to_string(), kind, message })
            }
            Ok(()) => {
                let id = image_id(&image);
                state.images.entry(image.clone()).or_insert_with(|| ImageInfo {
                    id: id.clone(),
                    repo_tags: vec![image.clone()],
                    repo_digests: vec![],
                    size: DEFAULT_IMAGE_SIZE,
                    pinned: false,
                });
                drop(state);
                self.emit(FakeEvent::ImagePulled { image });
                Ok(id)
            }
        }
    }

    fn find_image(state: &State, image: &str) -> Option<ImageInfo> {
        state.images.get(&normalize_image(image)).cloned().or_else(|| {
            state
                .images
                .values()
                .find(|i| i.id == image || i.repo_digests.iter().any(|d| d == image))
                .cloned()
        })
    }

    // ---- sandboxes and containers (the kubelet's calls) ---------------------------------------

    /// Runs a pod sandbox; returns its ID.
    pub fn run_pod_sandbox(&self, config: PodSandboxConfig) -> String {
        let mut state = self.lock();
        let id = self.new_id(&mut state);
        state.sandboxes.insert(
            id.clone(),
            PodSandbox {
                id: id.clone(),
                config,
                state: SandboxState::Ready,
                created_at: now_nanos(),
            },
        );
        id
    }

    /// Stops a sandbox and every container in it.
    pub fn stop_pod_sandbox(&self, id: &str) -> CriResult<()> {
        let exited = {
            let mut state = self.lock();
            let sandbox = state
                .sandboxes
                .get_mut(id)
                .ok_or_else(|| CriError::NotFound { what: "pod sandbox", id: id.to_string() })?;
            sandbox.state = SandboxState::NotReady;
            let now = now_nanos();
            let mut exited = vec![];
            for c in state.containers.values_mut() {
                if c.pod_sandbox_id == id && c.status.state != ContainerState::Exited {
                    exit(c, KILL_EXIT_CODE, now);
                    exited.push(c.status.id.clone());
                }
            }
            exited
        };
        for id in exited {
            self.emit(FakeEvent::ContainerExited { id, timeout_secs: None });
        }
        Ok(())
    }

    /// Removes a sandbox and its containers. Removing one that is gone succeeds, as in CRI.
    pub fn remove_pod_sandbox(&self, id: &str) {
        let mut state = self.lock();
        state.sandboxes.remove(id);
        state.containers.retain(|_, c| c.pod_sandbox_id != id);
    }

    /// One sandbox.
    pub fn pod_sandbox(&self, id: &str) -> Option<PodSandbox> {
        self.lock().sandboxes.get(id).cloned()
    }

    /// Every sandbox, sorted by ID.
    pub fn list_pod_sandboxes(&self) -> Vec<PodSandbox> {
        self.lock().sandboxes.values().cloned().collect()
    }

    /// Creates a container in a ready sandbox. Its image must be on the node (pull first), as
    /// with a real runtime.
    pub fn create_container(
        &self,
        pod_sandbox_id: &str,
        config: ContainerConfig,
    ) -> CriResult<String> {
        let mut state = self.lock();
        match state.sandboxes.get(pod_sandbox_id) {
            None => {
                return Err(CriError::NotFound {
                    what: "pod sandbox",
                    id: pod_sandbox_id.to_string(),
                });
            }
            Some(s) if s.state != SandboxState::Ready => {
                return Err(CriError::Rpc {
                    method: "CreateContainer",
                    kind: ErrorKind::FailedPrecondition,
                    message: format!("pod sandbox {pod_sandbox_id} is not ready"),
                });
            }
            Some(_) => {}
        }
        let image = Self::find_image(&state, &config.image)
            .ok_or_else(|| CriError::NotFound { what: "image", id: config.image.clone() })?;
        let id = self.new_id(&mut state);
        let status = ContainerStatus {
            id: id.clone(),
            name: config.name.clone(),
            attempt: config.attempt,
            state: ContainerState::Created,
            created_at: now_nanos(),
            image: config.image.clone(),
            image_ref: image.id,
            labels: config.labels.clone(),
            annotations: config.annotations.clone(),
            ..ContainerStatus::default()
        };
        state.containers.insert(
            id.clone(),
            FakeContainer {
                status,
                pod_sandbox_id: pod_sandbox_id.to_string(),
                config,
                last_stop_timeout: None,
            },
        );
        Ok(id)
    }

    /// Starts a created container.
    pub fn start_container(&self, id: &str) -> CriResult<()> {
        {
            let mut state = self.lock();
            let c = container_mut(&mut state, id)?;
            if c.status.state != ContainerState::Created {
                return Err(CriError::Rpc {
                    method: "StartContainer",
                    kind: ErrorKind::FailedPrecondition,
                    message: format!("container {id} is {:?}, not created", c.status.state),
                });
            }
            c.status.state = ContainerState::Running;
            c.status.started_at = now_nanos();
        }
        self.emit(FakeEvent::ContainerStarted { id: id.to_string() });
        Ok(())
    }

    /// Removes a container. Removing one that is gone succeeds, as in CRI.
    pub fn remove_container(&self, id: &str) {
        self.lock().containers.remove(id);
    }

    /// What a kubelet does when a container exited: creates the next attempt of the same
    /// container in the same sandbox and starts it; returns the new ID. The exited one stays
    /// (a kubelet garbage-collects it later).
    pub fn restart_container(&self, id: &str) -> CriResult<String> {
        let new_id = {
            let mut state = self.lock();
            let old = container_mut(&mut state, id)?.clone();
            if old.status.state != ContainerState::Exited {
                return Err(CriError::Rpc {
                    method: "RestartContainer",
                    kind: ErrorKind::FailedPrecondition,
                    message: format!("container {id} has not exited"),
                });
            }
            self.restart_locked(&mut state, &old)
        };
        self.emit(FakeEvent::ContainerStarted { id: new_id.clone() });
        self.emit(FakeEvent::ContainerRestarted { old_id: id.to_string(), new_id: new_id.clone() });
        Ok(new_id)
    }

    fn restart_locked(&self, state: &mut State, old: &FakeContainer) -> String {
        let id = self.new_id(state);
        let now = now_nanos();
        let mut config = old.config.clone();
        config.attempt = old.status.attempt + 1;
        let status = ContainerStatus {
            id: id.clone(),
            attempt: config.attempt,
            state: ContainerState::Running,
            created_at: now,
            started_at: now,
            finished_at: 0,
            exit_code: 0,
            reason: String::new(),
            message: String::new(),
            ..old.status.clone()
        };
        state.containers.insert(
            id.clone(),
            FakeContainer {
                status,
                pod_sandbox_id: old.pod_sandbox_id.clone(),
                config,
                last_stop_timeout: None,
            },
        );
        id
    }

    /// When on, a stopped container is restarted at once (restartPolicy `Always` with a kubelet
    /// that never backs off): [`stop_container`](ContainerRuntime::stop_container) leaves the
    /// old container exited and a new attempt running.
    pub fn set_auto_restart(&self, on: bool) {
        self.lock().auto_restart = on;
    }

    /// The grace period of the last stop of a container.
    pub fn last_stop_timeout(&self, id: &str) -> Option<i64> {
        self.lock().containers.get(id).and_then(|c| c.last_stop_timeout)
    }

    /// Replaces how exec runs commands. The default knows `echo`, `true`, `false` and
    /// `sh -c 'exit N'`; anything else exits 127.
    pub fn set_exec_handler(
        &self,
        handler: impl Fn(&ContainerStatus, &[String]) -> ExecSyncResult + Send + Sync + 'static,
    ) {
        self.lock().exec_handler = Some(Arc::new(handler));
    }

    fn stop(&self, id: &str, timeout_secs: i64) -> CriResult<()> {
        let (exited, restarted) = {
            let mut state = self.lock();
            let auto = state.auto_restart;
            let c = container_mut(&mut state, id)?;
            c.last_stop_timeout = Some(timeout_secs);
            if c.status.state == ContainerState::Exited {
                return Ok(());
            }
            let code = if timeout_secs <= 0 { KILL_EXIT_CODE } else { STOP_EXIT_CODE };
            exit(c, code, now_nanos());
            let old = c.clone();
            let restarted = auto.then(|| self.restart_locked(&mut state, &old));
            (id.to_string(), restarted)
        };
        self.emit(FakeEvent::ContainerExited {
            id: exited.clone(),
            timeout_secs: Some(timeout_secs),
        });
        if let Some(new_id) = restarted {
            self.emit(FakeEvent::ContainerStarted { id: new_id.clone() });
            self.emit(FakeEvent::ContainerRestarted { old_id: exited, new_id });
        }
        Ok(())
    }

    fn list(&self, filter: &ContainerFilter) -> Vec<Container> {
        let state = self.lock();
        state
            .containers
            .values()
            .filter(|c| filter.id.as_ref().is_none_or(|id| *id == c.status.id))
            .filter(|c| filter.state.is_none_or(|s| s == c.status.state))
            .filter(|c| filter.pod_sandbox_id.as_ref().is_none_or(|p| *p == c.pod_sandbox_id))
            .filter(|c| {
                filter.label_selector.iter().all(|(k, v)| c.status.labels.get(k) == Some(v))
            })
            .map(|c| Container {
                id: c.status.id.clone(),
                pod_sandbox_id: c.pod_sandbox_id.clone(),
                name: c.status.name.clone(),
                attempt: c.status.attempt,
                image: c.status.image.clone(),
                image_ref: c.status.image_ref.clone(),
                state: c.status.state,
                created_at: c.status.created_at,
                labels: c.status.labels.clone(),
                annotations: c.status.annotations.clone(),
            })
            .collect()
    }

    fn exec(&self, id: &str, cmd: &[String]) -> CriResult<ExecSyncResult> {
        let (status, handler) = {
            let mut state = self.lock();
            let handler = state.exec_handler.clone();
            let c = container_mut(&mut state, id)?;
            if c.status.state != ContainerState::Running {
                return Err(CriError::Rpc {
                    method: "ExecSync",
                    kind: ErrorKind::FailedPrecondition,
                    message: format!("container {id} is not running"),
                });
            }
            (c.status.clone(), handler)
        };
        // The handler runs without the lock: it may call back into the runtime.
        Ok(match handler {
            Some(h) => h(&status, cmd),
            None => default_exec(&status, cmd),
        })
    }
}

fn container_mut<'a>(state: &'a mut State, id: &str) -> CriResult<&'a mut FakeContainer> {
    state
        .containers
        .get_mut(id)
        .ok_or_else(|| CriError::NotFound { what: "container", id: id.to_string() })
}

fn exit(c: &mut FakeContainer, code: i32, now: i64) {
    c.status.state = ContainerState::Exited;
    c.status.finished_at = now;
    c.status.exit_code = code;
    c.status.reason = if code == 0 { "Completed" } else { "Error" }.to_string();
}

impl ContainerRuntime for FakeRuntime {
    fn version(&self) -> BoxFuture<'_, CriResult<VersionInfo>> {
        let v = self.lock().version.clone();
        Box::pin(async move { Ok(v) })
    }

    fn pull_image<'a>(
        &'a self,
        image: &'a str,
        auth: Option<AuthConfig>,
        sandbox: Option<PullSandboxConfig>,
    ) -> BoxFuture<'a, CriResult<String>> {
        Box::pin(self.do_pull(image, auth, sandbox))
    }

    fn list_images<'a>(
        &'a self,
        filter: Option<&'a str>,
    ) -> BoxFuture<'a, CriResult<Vec<ImageInfo>>> {
        let state = self.lock();
        let images = match filter.filter(|f| !f.is_empty()) {
            Some(f) => Self::find_image(&state, f).into_iter().collect(),
            None => state.images.values().cloned().collect(),
        };
        Box::pin(async move { Ok(images) })
    }

    fn image_status<'a>(&'a self, image: &'a str) -> BoxFuture<'a, CriResult<Option<ImageInfo>>> {
        let found = Self::find_image(&self.lock(), image);
        Box::pin(async move { Ok(found) })
    }

    fn list_containers<'a>(
        &'a self,
        filter: &'a ContainerFilter,
    ) -> BoxFuture<'a, CriResult<Vec<Container>>> {
        let list = self.list(filter);
        Box::pin(async move { Ok(list) })
    }

    fn container_status<'a>(&'a self, id: &'a str) -> BoxFuture<'a, CriResult<ContainerStatus>> {
        let status = container_mut(&mut self.lock(), id).map(|c| c.status.clone());
        Box::pin(async move { status })
    }

    fn stop_container<'a>(
        &'a self,
        id: &'a str,
        timeout_secs: i64,
    ) -> BoxFuture<'a, CriResult<()>> {
        let result = self.stop(id, timeout_secs);
        Box::pin(async move { result })
    }

    fn exec_sync<'a>(
        &'a self,
        id: &'a str,
        cmd: Vec<String>,
        _timeout: Duration,
    ) -> BoxFuture<'a, CriResult<ExecSyncResult>> {
        let result = self.exec(id, &cmd);
        Box::pin(async move { result })
    }
}

#[cfg(test)]
mod tests;
