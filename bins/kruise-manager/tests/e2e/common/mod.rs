//! Test helpers: the kruise-manager binary as a child process (playground or `run`), the real
//! kubectl pointed at a kubeconfig, and polling with a deadline.
#![allow(dead_code)]

use std::collections::BTreeMap;
use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
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
        // Read the output while waiting (a full pipe would block kubectl), killing it after a
        // minute.
        let pid = child.id();
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let _ = tx.send(child.wait_with_output());
        });
        let o = match rx.recv_timeout(Duration::from_secs(60)) {
            Ok(o) => o.expect("kubectl output"),
            Err(_) => {
                let _ = Command::new("kill").arg("-9").arg(pid.to_string()).status();
                rx.recv().expect("kubectl exits").expect("kubectl output")
            }
        };
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

/// The names of the webhooks in the manager's static `kruise-mutating-webhook-configuration`,
/// space-separated.
pub fn static_mutating_webhook_names(k: &Kubectl) -> String {
    let jsonpath = "jsonpath={.webhooks[*].name}";
    let args = [
        "get",
        "mutatingwebhookconfiguration",
        "kruise-mutating-webhook-configuration",
        "-o",
        jsonpath,
    ];
    k.run_with(&args, None).stdout
}

/// Waits until the manager has written its static mutating configuration without the
/// catch-all `mpod.kb.io` (`--pod-webhook-scope=selected` once the generated entries exist).
pub fn wait_for_catch_all_pod_webhook_removed(k: &Kubectl) {
    wait_for("the catch-all removed", Duration::from_secs(60), || {
        let names = static_mutating_webhook_names(k);
        (names.contains("mcloneset.kb.io") && !names.contains("mpod.kb.io")).then_some(())
    });
}

/// Waits until kruise-validating-webhook-configuration names the webhook `name`
/// (`vpod.kb.io`, `vworkloadspread.kb.io`, ...).
pub fn wait_for_validating_webhook(k: &Kubectl, name: &str) {
    let quoted = format!("\"{name}\"");
    wait_for(&format!("the {name} webhook registered"), Duration::from_secs(60), || {
        let out = k.run_with(
            &[
                "get",
                "validatingwebhookconfiguration",
                "kruise-validating-webhook-configuration",
                "-o",
                "json",
            ],
            None,
        );
        out.stdout.contains(&quoted).then_some(())
    });
}

/// Waits until the generated pod webhook configurations hold at least `n` entries: an object
/// that acts on pods at creation (a WorkloadSpread, a SidecarSet, a budget) reaches the pods
/// created once its entry exists.
pub fn wait_for_pod_webhook_entries(k: &Kubectl, n: usize) {
    wait_for("the generated pod webhook entries", Duration::from_secs(60), || {
        let args = [
            "get",
            "mutatingwebhookconfiguration",
            "-l",
            "webhooks.kruise.io/pod-scope=generated",
            "-o",
            "jsonpath={.items[*].webhooks[*].name}",
        ];
        let out = k.run_with(&args, None);
        (out.ok && out.stdout.split_whitespace().count() >= n).then_some(())
    });
}

/// A small deterministic generator (xorshift), so a failing run is repeated by its seed.
pub struct Rng(pub u64);

impl Rng {
    pub fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }

    /// A number below `n` (0 when `n` is 0).
    pub fn below(&mut self, n: u64) -> u64 {
        self.next() % n.max(1)
    }

    /// Up to `below` milliseconds.
    pub fn millis(&mut self, below: u64) -> Duration {
        Duration::from_millis(self.below(below))
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

/// kruise-sim in this process (so tests can inject faults), with a kubeconfig and kubectl.
pub struct SimCluster {
    pub server: kruise_sim::ServerHandle,
    pub dir: tempfile::TempDir,
    pub kubeconfig: PathBuf,
    pub kubectl: Kubectl,
}

impl SimCluster {
    pub fn start(config: kruise_sim::Config) -> Self {
        let server = kruise_sim::Server::start_in_thread(config).expect("cluster starts");
        let dir = tempfile::tempdir().expect("tempdir");
        let kubeconfig = dir.path().join("kubeconfig");
        server.write_kubeconfig(&kubeconfig).expect("kubeconfig");
        let kubectl = Kubectl::new(&kubeconfig, dir.path());
        SimCluster { server, dir, kubeconfig, kubectl }
    }

    /// `kruise-manager run --kubeconfig <this cluster> ARGS`, logging to `log_name`.
    pub fn run_manager(&self, log_name: &str, args: &[&str]) -> Proc {
        let (mut cmd, log) = manager_command(self.dir.path(), log_name);
        cmd.arg("run").arg("--kubeconfig").arg(&self.kubeconfig).args(args);
        Proc { child: cmd.spawn().expect("kruise-manager run starts"), log }
    }
}

/// A v1beta1 CloneSet `name` of `replicas` pods (`app: name`, image
/// `registry.example/<name>:v1`), with `update_strategy` (YAML under `updateStrategy:`, two
/// spaces deep) when not empty.
pub fn cloneset_yaml(name: &str, replicas: i32, update_strategy: &str) -> String {
    let mut yaml = app_yaml("apps.kruise.io/v1beta1", "CloneSet", name, replicas);
    if !update_strategy.is_empty() {
        yaml.push_str("  updateStrategy:\n");
        for line in update_strategy.lines() {
            yaml.push_str(&format!("    {line}\n"));
        }
    }
    yaml
}

/// A workload of `kind` with `replicas` pods of `registry.example/NAME:v1` (container
/// `main`), labelled and selected by `app: NAME`.
pub fn app_yaml(api_version: &str, kind: &str, name: &str, replicas: i32) -> String {
    format!(
        r#"
apiVersion: {api_version}
kind: {kind}
metadata:
  name: {name}
spec:
  replicas: {replicas}
  selector:
    matchLabels:
      app: {name}
  template:
    metadata:
      labels:
        app: {name}
    spec:
      containers:
      - name: main
        image: registry.example/{name}:v1
"#
    )
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
            .args(["--health-probe-addr", "127.0.0.1:0", "--webhook-port", "0"])
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

/// Pods as the budget monitor sees them: name -> (uid, ready, terminating), and the extremes
/// seen since it was armed.
#[derive(Default)]
pub struct Budget {
    pub pods: BTreeMap<String, (String, bool, bool)>,
    pub armed: bool,
    /// Fewest available pods (ready and not terminating) at any moment.
    pub min_available: Option<usize>,
    /// Most active pods (not terminating) at any moment.
    pub max_active: usize,
    /// Fewest available and most active pods allowed: when set, the first moment outside
    /// them is kept in `breach`.
    pub bounds: Option<(usize, usize)>,
    /// When the pods were first outside `bounds`, and each pod then.
    pub breach: Option<(std::time::Instant, Vec<PodState>)>,
}

/// A pod as the budget monitor last saw it: name, ready, terminating.
pub type PodState = (String, bool, bool);

impl Budget {
    fn observe(&mut self) {
        if !self.armed {
            return;
        }
        let available = self.pods.values().filter(|(_, ready, gone)| *ready && !gone).count();
        let active = self.pods.values().filter(|(_, _, gone)| !gone).count();
        self.min_available = Some(self.min_available.map_or(available, |m| m.min(available)));
        self.max_active = self.max_active.max(active);
        if let Some((floor, ceiling)) = self.bounds
            && (available < floor || active > ceiling)
            && self.breach.is_none()
        {
            let pods =
                self.pods.iter().map(|(name, (_, ready, gone))| (name.clone(), *ready, *gone));
            self.breach = Some((std::time::Instant::now(), pods.collect()));
        }
    }
}

fn pod_ready(pod: &k8s_openapi::api::core::v1::Pod) -> bool {
    pod.status
        .as_ref()
        .and_then(|s| s.conditions.as_ref())
        .into_iter()
        .flatten()
        .any(|c| c.type_ == "Ready" && c.status == "True")
}

/// Watches the pods `selector` picks in a thread of its own, updating `budget` on every event.
pub fn start_monitor(
    kubeconfig: std::path::PathBuf,
    selector: &'static str,
    budget: Arc<Mutex<Budget>>,
) {
    std::thread::spawn(move || {
        let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().expect("rt");
        rt.block_on(async move {
            use futures::StreamExt;
            use kube::runtime::watcher;
            let yaml = std::fs::read_to_string(&kubeconfig).expect("kubeconfig");
            let kc = kube::config::Kubeconfig::from_yaml(&yaml).expect("kubeconfig parses");
            let config = kube::Config::from_custom_kubeconfig(kc, &Default::default())
                .await
                .expect("config");
            let client = kube::Client::try_from(config).expect("client");
            let api: kube::Api<k8s_openapi::api::core::v1::Pod> =
                kube::Api::namespaced(client, "default");
            let stream = watcher(api, watcher::Config::default().labels(selector));
            futures::pin_mut!(stream);
            // A relist (after a dropped watch or 410 Gone) is gathered whole and replaces the
            // pods at once: applied pod by pod, it would mix pods listed now with pods last
            // seen before the gap, a state the cluster never had.
            let mut relist: Option<BTreeMap<String, (String, bool, bool)>> = None;
            while let Some(event) = stream.next().await {
                let Ok(event) = event else { continue };
                let row = |p: &k8s_openapi::api::core::v1::Pod| {
                    let name = p.metadata.name.clone().unwrap_or_default();
                    let uid = p.metadata.uid.clone().unwrap_or_default();
                    (name, (uid, pod_ready(p), p.metadata.deletion_timestamp.is_some()))
                };
                match event {
                    watcher::Event::Init => relist = Some(BTreeMap::new()),
                    watcher::Event::InitApply(p) => {
                        let (name, state) = row(&p);
                        relist.get_or_insert_default().insert(name, state);
                    }
                    watcher::Event::InitDone => {
                        let mut b = budget.lock().expect("budget");
                        b.pods = relist.take().unwrap_or_default();
                        b.observe();
                    }
                    watcher::Event::Apply(p) => {
                        let (name, state) = row(&p);
                        let mut b = budget.lock().expect("budget");
                        b.pods.insert(name, state);
                        b.observe();
                    }
                    watcher::Event::Delete(p) => {
                        let mut b = budget.lock().expect("budget");
                        b.pods.remove(&p.metadata.name.clone().unwrap_or_default());
                        b.observe();
                    }
                }
            }
        });
    });
}

/// A live pod: uid, image, restartCount, ready.
pub type PodRow = (String, String, i64, bool);

/// The live (not terminating) pods `selector` picks, by name.
pub fn pod_rows(kubectl: &Kubectl, selector: &str) -> BTreeMap<String, PodRow> {
    let list = kubectl.json(&["get", "pods", "-l", selector]);
    let mut out = BTreeMap::new();
    for pod in list["items"].as_array().expect("items") {
        if pod["metadata"]["deletionTimestamp"].is_string() {
            continue;
        }
        let name = pod["metadata"]["name"].as_str().unwrap_or_default().to_owned();
        let uid = pod["metadata"]["uid"].as_str().unwrap_or_default().to_owned();
        let image = pod["spec"]["containers"][0]["image"].as_str().unwrap_or_default().to_owned();
        let restarts =
            pod["status"]["containerStatuses"][0]["restartCount"].as_i64().unwrap_or_default();
        let ready = pod["status"]["conditions"]
            .as_array()
            .into_iter()
            .flatten()
            .any(|c| c["type"] == "Ready" && c["status"] == "True");
        out.insert(name, (uid, image, restarts, ready));
    }
    out
}

/// A pod template as upstream's defaulting webhook leaves it (that of upstream's in-place
/// update tests, with its volume). The revision upstream wrote for it is found by content, so
/// its name is whatever upstream chose.
pub fn upstream_template() -> serde_json::Value {
    serde_json::json!({
        "metadata": {"labels": {"app": "nginx"}},
        "spec": {
            "containers": [{
                "name": "nginx",
                "image": "nginx:stable-alpine",
                "env": [{"name": "version", "value": "v1"}],
                "imagePullPolicy": "Always",
                "terminationMessagePath": "/dev/termination-log",
                "terminationMessagePolicy": "File",
                "volumeMounts": [{"name": "www-data", "mountPath": "/usr/share/nginx/html"}]
            }],
            "volumes": [{"name": "www-data", "emptyDir": {}}],
            "dnsPolicy": "ClusterFirst",
            "restartPolicy": "Always",
            "schedulerName": "default-scheduler",
            "securityContext": {},
            "terminationGracePeriodSeconds": 30
        }
    })
}
