//! Test helpers: the kruise-manager binary as a child process (playground or `run`), the real
//! kubectl pointed at a kubeconfig, and polling with a deadline.
#![allow(dead_code)]

use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// The kubectl to drive: `$KUBECTL`, else the one on PATH.
pub fn kubectl_bin() -> String {
    std::env::var("KUBECTL").unwrap_or_else(|_| "kubectl".to_owned())
}

/// kubectl against one kubeconfig.
#[derive(Clone)]
pub struct Kubectl {
    pub kubeconfig: PathBuf,
    pub home: PathBuf,
}

pub struct Out {
    pub ok: bool,
    pub stdout: String,
    pub stderr: String,
}

impl Kubectl {
    pub fn new(kubeconfig: &Path, home: &Path) -> Self {
        Self { kubeconfig: kubeconfig.to_owned(), home: home.to_owned() }
    }

    pub fn run_with(&self, args: &[&str], stdin: Option<&str>) -> Out {
        let mut child = Command::new(kubectl_bin())
            .arg("--kubeconfig")
            .arg(&self.kubeconfig)
            .arg("--cache-dir")
            .arg(self.home.join("cache"))
            .args(args)
            .env("HOME", &self.home)
            .env_remove("KUBECONFIG")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("kubectl runs");
        let mut input = child.stdin.take().expect("stdin");
        if let Some(text) = stdin {
            input.write_all(text.as_bytes()).expect("stdin written");
        }
        drop(input);
        let start = Instant::now();
        while child.try_wait().expect("wait").is_none() {
            if start.elapsed() > Duration::from_secs(60) {
                let _ = child.kill();
                break;
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        let o = child.wait_with_output().expect("output");
        Out {
            ok: o.status.success(),
            stdout: String::from_utf8_lossy(&o.stdout).into_owned(),
            stderr: String::from_utf8_lossy(&o.stderr).into_owned(),
        }
    }

    /// Runs kubectl and asserts success; returns stdout.
    pub fn ok(&self, args: &[&str]) -> String {
        let o = self.run_with(args, None);
        assert!(o.ok, "kubectl {args:?} failed:\nstdout: {}\nstderr: {}", o.stdout, o.stderr);
        o.stdout
    }

    /// Runs kubectl with stdin and asserts success.
    pub fn ok_stdin(&self, args: &[&str], stdin: &str) -> String {
        let o = self.run_with(args, Some(stdin));
        assert!(o.ok, "kubectl {args:?} failed:\nstdout: {}\nstderr: {}", o.stdout, o.stderr);
        o.stdout
    }

    pub fn json(&self, args: &[&str]) -> serde_json::Value {
        let mut a = args.to_vec();
        a.extend(["-o", "json"]);
        serde_json::from_str(&self.ok(&a)).expect("kubectl printed JSON")
    }
}

/// Polls `check` every 100 ms until it returns `Some`, or panics naming `what` after
/// `timeout`.
pub fn wait_for<T>(what: &str, timeout: Duration, mut check: impl FnMut() -> Option<T>) -> T {
    let start = Instant::now();
    loop {
        if let Some(v) = check() {
            return v;
        }
        assert!(start.elapsed() < timeout, "timed out after {timeout:?} waiting for {what}");
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// A child process killed when dropped.
pub struct Proc {
    pub child: Child,
    pub log: PathBuf,
}

impl Proc {
    /// SIGKILL, as a crash.
    pub fn kill(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }

    /// SIGTERM, then wait for the exit status.
    pub fn terminate(&mut self) -> std::process::ExitStatus {
        let _ = Command::new("kill").arg("-TERM").arg(self.child.id().to_string()).status();
        let start = Instant::now();
        loop {
            if let Some(status) = self.child.try_wait().expect("wait") {
                return status;
            }
            assert!(start.elapsed() < Duration::from_secs(30), "manager ignored SIGTERM");
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    pub fn log_text(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }
}

impl Drop for Proc {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

pub fn manager_command(dir: &Path, log_name: &str) -> (Command, PathBuf) {
    let log = dir.join(log_name);
    let file = std::fs::File::create(&log).expect("log file");
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_kruise-manager"));
    cmd.stdout(file.try_clone().expect("log clone")).stderr(file).stdin(Stdio::null());
    (cmd, log)
}

/// `kruise-manager playground` on free ports, with kubectl pointed at it.
pub struct Playground {
    pub dir: tempfile::TempDir,
    pub kubectl: Kubectl,
    pub proc: Proc,
}

impl Playground {
    pub fn start(nodes: usize, extra: &[&str]) -> Self {
        let dir = tempfile::tempdir().expect("tempdir");
        let kubeconfig = dir.path().join("kubeconfig");
        let (mut cmd, log) = manager_command(dir.path(), "playground.log");
        cmd.arg("playground")
            .args(["--nodes", &nodes.to_string(), "--kubeconfig-out"])
            .arg(&kubeconfig)
            .args(["--addr", "127.0.0.1:0", "--metrics-addr", "127.0.0.1:0"])
            .args(["--health-probe-addr", "127.0.0.1:0"])
            .args(extra);
        let child = cmd.spawn().expect("kruise-manager playground starts");
        let proc = Proc { child, log };
        let kubectl = Kubectl::new(&kubeconfig, dir.path());
        let mut pg = Playground { dir, kubectl, proc };
        wait_for("the playground's kubeconfig", Duration::from_secs(60), || {
            if let Ok(Some(status)) = pg.proc.child.try_wait() {
                panic!("playground exited with {status}:\n{}", pg.proc.log_text());
            }
            kubeconfig.exists().then_some(())
        });
        wait_for("all nodes Ready", Duration::from_secs(60), || {
            let o = pg.kubectl.run_with(&["get", "nodes", "--no-headers"], None);
            (o.ok && o.stdout.lines().filter(|l| l.contains(" Ready ")).count() == nodes)
                .then_some(())
        });
        wait_for("the manager to be ready", Duration::from_secs(60), || {
            pg.proc.log_text().contains("leading: starting controllers").then_some(())
        });
        pg
    }

    pub fn log(&self) -> String {
        self.proc.log_text()
    }
}
