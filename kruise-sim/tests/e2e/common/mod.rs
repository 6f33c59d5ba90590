//! Test helpers: a server in its own thread, and the real kubectl pointed at it.
#![allow(dead_code)]

pub mod webhook;

use kruise_sim::{Config, Server, ServerHandle};
use std::io::Write as _;
use std::path::PathBuf;
use std::process::{Command, Output, Stdio};
use std::time::Duration;

/// The real kubectl, found on `PATH` (where `.ci/run` installs it when the machine lacks it).
pub const KUBECTL: &str = "kubectl";

pub struct Env {
    pub server: ServerHandle,
    pub dir: tempfile::TempDir,
    pub kubeconfig: PathBuf,
}

pub struct Out {
    pub ok: bool,
    /// kubectl's exit code (`None` when killed).
    pub code: Option<i32>,
    pub stdout: String,
    pub stderr: String,
}

impl Env {
    pub fn new(config: Config) -> Env {
        let server = Server::start_in_thread(config).expect("server starts");
        let dir = tempfile::tempdir().expect("tempdir");
        let kubeconfig = dir.path().join("kubeconfig");
        server.write_kubeconfig(&kubeconfig).expect("kubeconfig written");
        Env { server, dir, kubeconfig }
    }

    pub fn kruise() -> Env {
        Env::new(Config::default().with_kruise_crds())
    }

    /// Two simulated nodes whose pods become ready `ready` after they start, and the built-in
    /// controllers.
    pub fn with_controllers(ready: Duration) -> Env {
        Env::with_controllers_on(2, ready)
    }

    /// The built-in controllers with `nodes` simulated nodes (`sim-node-0`, ...), whose pods
    /// become ready `ready` after starting.
    pub fn with_controllers_on(nodes: usize, ready: Duration) -> Env {
        let delays = kruise_sim::nodes::kubelet::Delays {
            pull: Duration::from_millis(50),
            start: Duration::from_millis(20),
            ready,
            init_run: Duration::from_millis(10),
            stop: Duration::from_millis(50),
            run: Duration::from_millis(300),
            ..Default::default()
        };
        let nodes = kruise_sim::nodes::NodesConfig::new(nodes).with_delays(delays);
        Env::new(Config::default().with_nodes(nodes).with_controllers())
    }

    /// Polls `f` until it returns `Some`, for up to 30 s; a timeout shows
    /// `kubectl get <show> -o wide`.
    pub fn eventually<T>(&self, what: &str, show: &str, mut f: impl FnMut() -> Option<T>) -> T {
        let start = std::time::Instant::now();
        loop {
            if let Some(v) = f() {
                return v;
            }
            if start.elapsed() > Duration::from_secs(30) {
                let state = self.run(&["get", show, "-o", "wide"]);
                panic!("timed out waiting for {what}\n{}", state.stdout);
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    pub fn command(&self, args: &[&str]) -> Command {
        let mut c = Command::new(KUBECTL);
        c.arg("--kubeconfig")
            .arg(&self.kubeconfig)
            .arg("--cache-dir")
            .arg(self.dir.path().join("cache"))
            .args(args)
            .env("HOME", self.dir.path())
            .env_remove("KUBECONFIG")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        c
    }

    /// Runs kubectl with optional stdin, killing it after `timeout`.
    pub fn run_with(&self, args: &[&str], stdin: Option<&str>, timeout: Duration) -> Out {
        let mut child = self.command(args).spawn().expect("kubectl runs");
        if let Some(input) = stdin {
            child.stdin.take().expect("stdin").write_all(input.as_bytes()).expect("stdin written");
        } else {
            drop(child.stdin.take());
        }
        // The pipes are drained while kubectl runs (a full pipe would stall it); a watchdog
        // kills it after `timeout`.
        let pid = child.id();
        let (done, finished) = std::sync::mpsc::channel::<()>();
        let watchdog = std::thread::spawn(move || {
            if finished.recv_timeout(timeout).is_err() {
                let _ = Command::new("kill").arg("-9").arg(pid.to_string()).status();
            }
        });
        let o: Output = child.wait_with_output().expect("output");
        let _ = done.send(());
        let _ = watchdog.join();
        let out = Out {
            ok: o.status.success(),
            code: o.status.code(),
            stdout: String::from_utf8_lossy(&o.stdout).into_owned(),
            stderr: String::from_utf8_lossy(&o.stderr).into_owned(),
        };
        record_probe(args, stdin, &out);
        out
    }

    pub fn run(&self, args: &[&str]) -> Out {
        self.run_with(args, None, Duration::from_secs(30))
    }

    /// Runs kubectl and asserts success; returns stdout.
    pub fn ok(&self, args: &[&str]) -> String {
        let o = self.run(args);
        assert!(o.ok, "kubectl {args:?} failed:\nstdout: {}\nstderr: {}", o.stdout, o.stderr);
        o.stdout
    }

    /// Runs kubectl with a manifest on stdin and asserts success.
    pub fn ok_stdin(&self, args: &[&str], stdin: &str) -> String {
        let o = self.run_with(args, Some(stdin), Duration::from_secs(30));
        assert!(o.ok, "kubectl {args:?} failed:\nstdout: {}\nstderr: {}", o.stdout, o.stderr);
        o.stdout
    }

    /// Runs kubectl and asserts failure; returns stderr.
    pub fn fails(&self, args: &[&str]) -> String {
        let o = self.run(args);
        assert!(!o.ok, "kubectl {args:?} should fail:\nstdout: {}", o.stdout);
        o.stderr
    }

    pub fn fails_stdin(&self, args: &[&str], stdin: &str) -> String {
        let o = self.run_with(args, Some(stdin), Duration::from_secs(60));
        assert!(!o.ok, "kubectl {args:?} should fail:\nstdout: {}", o.stdout);
        o.stderr
    }

    pub fn json(&self, args: &[&str]) -> serde_json::Value {
        let mut a = args.to_vec();
        a.extend(["-o", "json"]);
        serde_json::from_str(&self.ok(&a)).expect("kubectl printed JSON")
    }
}

/// A kube-rs client for the in-process server `h`.
pub async fn client(h: &ServerHandle) -> kube::Client {
    kruise_sim::nodes::client_from_kubeconfig(&h.kubeconfig).await.expect("client")
}

/// A JSON request; the Status of a failure as `Err`.
pub async fn raw(
    c: &kube::Client,
    method: &str,
    path: &str,
    content_type: &str,
    body: Option<serde_json::Value>,
) -> Result<serde_json::Value, kube::core::Status> {
    let req = http::Request::builder()
        .method(method)
        .uri(path)
        .header("content-type", content_type)
        .body(body.map(|b| serde_json::to_vec(&b).expect("body")).unwrap_or_default())
        .expect("request");
    match c.request::<serde_json::Value>(req).await {
        Ok(v) => Ok(v),
        Err(kube::Error::Api(s)) => Err(*s),
        Err(e) => panic!("{method} {path}: {e}"),
    }
}

/// With `KRUISE_SIM_PROBE_LOG` set to a file, each kubectl run is appended to it as a JSON
/// line (the test, the arguments, stdin, the exit code and output), for
/// `benches/realk8s/probe_diff.py` to replay against a real kube-apiserver and compare.
fn record_probe(args: &[&str], stdin: Option<&str>, out: &Out) {
    let Some(path) = std::env::var_os("KRUISE_SIM_PROBE_LOG") else { return };
    let line = serde_json::json!({
        "test": std::thread::current().name().unwrap_or("?"),
        "args": args,
        "stdin": stdin,
        "code": out.code,
        "stdout": out.stdout,
        "stderr": out.stderr,
    });
    let Ok(mut file) = std::fs::OpenOptions::new().create(true).append(true).open(&path) else {
        return;
    };
    // One write per line, so lines from tests running in parallel do not interleave.
    let _ = file.write_all(format!("{line}\n").as_bytes());
}
