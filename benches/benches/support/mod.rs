//! What the manager benches share: the release `kruise-manager` binary run as a subprocess
//! against an embedded API server, so that its memory is its own.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant, SystemTime};

/// The manager binary: `KRUISE_MANAGER_BIN`, or `kruise-manager` in the profile directory
/// above this bench's `deps/`.
pub fn manager_binary() -> Option<PathBuf> {
    if let Ok(path) = std::env::var("KRUISE_MANAGER_BIN") {
        return Some(PathBuf::from(path));
    }
    let exe = std::env::current_exe().ok()?;
    let candidate = exe.parent()?.parent()?.join("kruise-manager");
    candidate.exists().then_some(candidate)
}

/// The manager binary, or the process ends with a message saying how to build it.
pub fn manager_binary_or_exit(bench: &str) -> PathBuf {
    let Some(binary) = manager_binary() else {
        eprintln!(
            "{bench}: no kruise-manager binary next to this bench; run \
             `cargo build --release -p kruise-manager` first (or set KRUISE_MANAGER_BIN)"
        );
        std::process::exit(2);
    };
    warn_if_stale(bench, &binary);
    binary
}

/// The newest modification time of the files under `dir`.
fn newest(dir: &Path) -> Option<SystemTime> {
    let mut best = None;
    for entry in std::fs::read_dir(dir).ok()?.flatten() {
        let path = entry.path();
        let time =
            if path.is_dir() { newest(&path) } else { entry.metadata().ok()?.modified().ok() };
        best = best.max(time);
    }
    best
}

/// Warns when the manager's sources are newer than the binary.
fn warn_if_stale(bench: &str, binary: &Path) {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let built = std::fs::metadata(binary).and_then(|m| m.modified()).ok();
    let sources = ["kruise-kube/src", "kruise-core/src", "bins/kruise-manager/src"]
        .iter()
        .filter_map(|d| newest(&root.join(d)))
        .max();
    if let (Some(built), Some(sources)) = (built, sources)
        && sources > built
    {
        println!(
            "{bench}: WARNING: {} is older than the sources; rebuild with \
             `cargo build --release -p kruise-manager`",
            binary.display()
        );
    }
}

/// Stops a child with SIGTERM (graceful), then SIGKILL if it lingers.
fn stop(child: &mut Child) {
    let _ = Command::new("kill").arg("-TERM").arg(child.id().to_string()).status();
    let deadline = Instant::now() + Duration::from_secs(10);
    while Instant::now() < deadline {
        if let Ok(Some(_)) = child.try_wait() {
            return;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    let _ = child.kill();
    let _ = child.wait();
}

/// `GET path` on loopback `port`: the status code and the body.
fn http_get(port: u16, path: &str) -> Option<(u16, String)> {
    use std::io::{Read as _, Write as _};
    let addr = std::net::SocketAddr::from(([127, 0, 0, 1], port));
    let mut stream = std::net::TcpStream::connect_timeout(&addr, Duration::from_secs(1)).ok()?;
    stream.set_read_timeout(Some(Duration::from_secs(5))).ok()?;
    write!(stream, "GET {path} HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n").ok()?;
    let mut response = String::new();
    stream.read_to_string(&mut response).ok()?;
    let code = response.split_whitespace().nth(1)?.parse().ok()?;
    let body = response.split_once("\r\n\r\n").map_or("", |(_, b)| b).to_owned();
    Some((code, body))
}

/// A free loopback port (bound and released; good enough for a bench).
fn free_port() -> u16 {
    std::net::TcpListener::bind(("127.0.0.1", 0))
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("a free port")
}

/// One manager subprocess: `run --kubeconfig ... --enable-leader-election=false
/// --enable-webhook=false` (unless `extra` sets `--enable-webhook`), probes and metrics on one
/// loopback port, stderr to `log`.
pub struct Manager {
    child: Child,
    /// Its process id, as /proc names it.
    pub pid: String,
    /// Probes and metrics, on loopback.
    port: u16,
    log: PathBuf,
}

/// A bench that panics or exits early does not leave its manager running (one left behind
/// kept reconciling on the real control plane after `realk8s_scale` panicked).
impl Drop for Manager {
    fn drop(&mut self) {
        if let Ok(None) = self.child.try_wait() {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}

impl Manager {
    /// Starts the manager with the client rate limit `qps`/`burst` and `extra` flags.
    pub fn start(
        binary: &Path,
        kubeconfig: &Path,
        log: PathBuf,
        qps: f32,
        burst: u32,
        extra: &[&str],
    ) -> Manager {
        let port = free_port();
        let addr = format!("127.0.0.1:{port}");
        let child = Command::new(binary)
            .args(["run", "--kubeconfig"])
            .arg(kubeconfig)
            .arg("--enable-leader-election=false")
            .args(
                (!extra.iter().any(|a| a.starts_with("--enable-webhook")))
                    .then_some("--enable-webhook=false"),
            )
            .args(["--metrics-addr", &addr, "--health-probe-addr", &addr])
            .args(["--rest-config-qps", &qps.to_string()])
            .args(["--rest-config-burst", &burst.to_string()])
            .args(extra)
            .env("NO_COLOR", "1")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(std::fs::File::create(&log).expect("log file"))
            .spawn()
            .expect("manager starts");
        let pid = child.id().to_string();
        Manager { child, pid, port, log }
    }

    /// `VmRSS` and `VmHWM` in MiB.
    pub fn memory(&self) -> (f64, f64) {
        benches::memory_mib(&self.pid)
    }

    /// True once the process has ended.
    pub fn exited(&mut self) -> bool {
        matches!(self.child.try_wait(), Ok(Some(_)))
    }

    /// Waits until `/readyz` answers 200 (the caches have listed); panics after `timeout`.
    pub async fn wait_ready(&mut self, timeout: Duration) -> Duration {
        let start = Instant::now();
        while start.elapsed() < timeout && !self.exited() {
            let port = self.port;
            let answer =
                tokio::task::spawn_blocking(move || http_get(port, "/readyz")).await.ok().flatten();
            if answer.is_some_and(|(code, _)| code == 200) {
                return start.elapsed();
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        panic!("the manager did not become ready; see {}", self.log.display());
    }

    /// The `/metrics` text.
    pub async fn metrics(&self) -> String {
        let port = self.port;
        tokio::task::spawn_blocking(move || http_get(port, "/metrics"))
            .await
            .ok()
            .flatten()
            .map(|(_, body)| body)
            .unwrap_or_default()
    }

    /// The reconcile counters from `/metrics` that are not zero, as
    /// `controller/result=count`.
    pub async fn reconciles(&self) -> String {
        let body = self.metrics().await;
        let label = |line: &str, name: &str| {
            let value = line.split(&format!("{name}=\"")).nth(1)?.split('"').next()?;
            Some(value.to_owned())
        };
        let mut out = Vec::new();
        for line in body.lines() {
            if line.starts_with("controller_runtime_reconcile_total{") {
                let count = line.rsplit(' ').next().unwrap_or("?");
                if count == "0" {
                    continue;
                }
                let controller = label(line, "controller").unwrap_or_else(|| "?".into());
                let result = label(line, "result").unwrap_or_else(|| "?".into());
                out.push(format!("{controller}/{result}={count}"));
            }
        }
        out.sort();
        if out.is_empty() { "none".into() } else { out.join(", ") }
    }

    /// Stops the manager; with `bench`, prints how many WARN and ERROR lines it logged.
    pub fn stop(mut self, bench: Option<&str>) {
        stop(&mut self.child);
        if let Some(bench) = bench {
            log_summary(bench, &self.log);
        }
        if bench.is_none() {
            let _ = std::fs::remove_file(&self.log);
        }
    }
}

/// Prints how many WARN and ERROR lines the manager logged, and the first few.
fn log_summary(bench: &str, log: &Path) {
    let text = std::fs::read_to_string(log).unwrap_or_default();
    let interesting: Vec<&str> =
        text.lines().filter(|l| l.contains(" WARN ") || l.contains(" ERROR ")).collect();
    let errors = interesting.iter().filter(|l| l.contains(" ERROR ")).count();
    println!(
        "{bench}: manager log {}: {} lines, {} WARN, {errors} ERROR",
        log.display(),
        text.lines().count(),
        interesting.len() - errors
    );
    for line in interesting.iter().take(10) {
        println!("  {line}");
    }
}

/// A watch that has listed when this returns. Its task ends once `key` has given `count`
/// distinct values for the objects it saw, with the instants of the first object and of the
/// last needed.
#[allow(dead_code)] // not every bench watches
pub async fn watch_count<K>(
    api: kube::Api<K>,
    config: kube::runtime::watcher::Config,
    count: usize,
    key: fn(K) -> Option<String>,
) -> tokio::task::JoinHandle<(Instant, Instant)>
where
    K: kube::Resource
        + Clone
        + k8s_openapi::serde::de::DeserializeOwned
        + std::fmt::Debug
        + Send
        + 'static,
{
    use futures::StreamExt as _;
    use kube::runtime::watcher;
    let (listed_tx, listed_rx) = tokio::sync::oneshot::channel();
    let task = tokio::spawn(async move {
        let mut listed = Some(listed_tx);
        let mut seen = std::collections::HashSet::new();
        let mut first = None;
        let mut stream = std::pin::pin!(watcher::watcher(api, config));
        while let Some(event) = stream.next().await {
            match event.expect("watch") {
                watcher::Event::InitDone => {
                    if let Some(tx) = listed.take() {
                        let _ = tx.send(());
                    }
                }
                watcher::Event::Apply(object) | watcher::Event::InitApply(object) => {
                    if let Some(k) = key(object) {
                        first.get_or_insert_with(Instant::now);
                        seen.insert(k);
                    }
                }
                _ => {}
            }
            if seen.len() >= count && listed.is_none() {
                return (first.unwrap_or_else(Instant::now), Instant::now());
            }
        }
        panic!("the watch ended after {} of {count}", seen.len());
    });
    listed_rx.await.expect("watch listed");
    task
}
