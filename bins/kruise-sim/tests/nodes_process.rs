//! The node simulator in its own process drives pods to Ready against `kruise-sim serve` in
//! another process, through the kubeconfig only — as it would against a real cluster.

use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// The real kubectl, found on `PATH` (where `.ci/run` installs it when the machine lacks it).
const KUBECTL: &str = "kubectl";

/// Kills the child process it holds when dropped.
struct Killed(Child);

impl Drop for Killed {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn kubectl(
    dir: &Path,
    kubeconfig: &Path,
    args: &[&str],
    stdin: Option<&str>,
) -> (bool, String, String) {
    use std::io::Write as _;
    let mut child = Command::new(KUBECTL)
        .arg("--kubeconfig")
        .arg(kubeconfig)
        .arg("--cache-dir")
        .arg(dir.join("cache"))
        .args(args)
        .env("HOME", dir)
        .env_remove("KUBECONFIG")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("kubectl runs");
    if let Some(s) = stdin {
        child.stdin.take().expect("stdin").write_all(s.as_bytes()).expect("stdin written");
    }
    drop(child.stdin.take());
    let o = child.wait_with_output().expect("kubectl output");
    (
        o.status.success(),
        String::from_utf8_lossy(&o.stdout).into_owned(),
        String::from_utf8_lossy(&o.stderr).into_owned(),
    )
}

/// `kruise-sim serve` on a free port with `extra` flags, once it has written `kubeconfig`.
fn serve(kubeconfig: &Path, extra: &[&str]) -> Killed {
    let server = Killed(
        Command::new(env!("CARGO_BIN_EXE_kruise-sim"))
            .args(["serve", "--addr", "127.0.0.1:0"])
            .args(extra)
            .arg("--kubeconfig-out")
            .arg(kubeconfig)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("serve starts"),
    );
    let start = Instant::now();
    while !kubeconfig.exists() {
        assert!(start.elapsed() < Duration::from_secs(20), "no kubeconfig written");
        std::thread::sleep(Duration::from_millis(20));
    }
    server
}

#[test]
fn nodes_process_drives_pods_to_ready_against_serve_process() {
    let dir = tempfile::tempdir().expect("tempdir");
    let kc = dir.path().join("kubeconfig");
    let bin = env!("CARGO_BIN_EXE_kruise-sim");
    let _server = serve(&kc, &["--graceful-pod-deletion"]);
    let _nodes = Killed(
        Command::new(bin)
            .args([
                "nodes",
                "--count",
                "3",
                "--pull-ms",
                "20",
                "--start-ms",
                "10",
                "--ready-ms",
                "50",
                "--stop-ms",
                "20",
            ])
            .args(["--lease-renew-ms", "200", "--kubeconfig"])
            .arg(&kc)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("nodes start"),
    );
    let run = |args: &[&str], stdin: Option<&str>| {
        let (ok, out, err) = kubectl(dir.path(), &kc, args, stdin);
        assert!(ok, "kubectl {args:?} failed:\n{out}\n{err}");
        out
    };
    let start = Instant::now();
    loop {
        let (ok, out, _) = kubectl(dir.path(), &kc, &["get", "nodes", "--no-headers"], None);
        if ok && out.lines().filter(|l| l.contains(" Ready")).count() == 3 {
            break;
        }
        assert!(start.elapsed() < Duration::from_secs(20), "nodes never became Ready: {out}");
        std::thread::sleep(Duration::from_millis(50));
    }
    let pods: Vec<String> = (0..4)
        .map(|i| {
            format!(
                "apiVersion: v1\nkind: Pod\nmetadata:\n  name: web-{i}\n  labels: {{app: web}}\nspec:\n  containers:\n  - name: app\n    image: nginx:1.25\n    readinessProbe:\n      httpGet: {{path: /, port: 80}}\n"
            )
        })
        .collect();
    run(&["apply", "-f", "-"], Some(&pods.join("---\n")));
    run(&["wait", "--for=condition=Ready", "pod", "-l", "app=web", "--timeout=30s"], None);
    let list: serde_json::Value =
        serde_json::from_str(&run(&["get", "pods", "-l", "app=web", "-o", "json"], None))
            .expect("json");
    for p in list["items"].as_array().expect("items") {
        assert_eq!(p["status"]["phase"], "Running");
        assert!(p["spec"]["nodeName"].as_str().expect("bound").starts_with("sim-node-"));
    }
    // Graceful deletion finished by the out-of-process kubelet.
    run(&["delete", "pod", "web-0", "--timeout=30s"], None);
    let (ok, _, err) = kubectl(dir.path(), &kc, &["get", "pod", "web-0"], None);
    assert!(!ok && err.contains("not found"), "{err}");
}

/// `kruise-sim nodes` adds nodes to a cluster that already simulates its own (the playground's
/// `serve --nodes`): the new node takes the next free name, carries `--labels`, and runs the
/// pods the cluster's scheduler places on it.
#[test]
fn nodes_process_adds_labelled_nodes_beside_the_servers_own() {
    let dir = tempfile::tempdir().expect("tempdir");
    let kc = dir.path().join("kubeconfig");
    let bin = env!("CARGO_BIN_EXE_kruise-sim");
    let _server = serve(&kc, &["--nodes", "2"]);
    let get = |args: &[&str]| kubectl(dir.path(), &kc, args, None);
    let start = Instant::now();
    while get(&["get", "nodes", "--no-headers"]).1.lines().count() < 2 {
        assert!(start.elapsed() < Duration::from_secs(20), "the server's nodes never came");
        std::thread::sleep(Duration::from_millis(50));
    }
    let _extra = Killed(
        Command::new(bin)
            .args(["nodes", "--count", "1", "--labels", "pool=extra,tier=batch", "--no-scheduler"])
            .args(["--lease-renew-ms", "200", "--kubeconfig"])
            .arg(&kc)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("nodes start"),
    );
    let start = Instant::now();
    loop {
        let (ok, out, _) = get(&["get", "nodes", "-l", "pool=extra,tier=batch", "--no-headers"]);
        if ok && out.starts_with("sim-node-2 ") && out.contains(" Ready") {
            break;
        }
        assert!(start.elapsed() < Duration::from_secs(20), "no extra node: {out}");
        std::thread::sleep(Duration::from_millis(50));
    }
    assert_eq!(get(&["get", "nodes", "--no-headers"]).1.lines().count(), 3);
    let pod = "apiVersion: v1\nkind: Pod\nmetadata:\n  name: batch\nspec:\n  nodeSelector: {pool: extra}\n  containers:\n  - name: c\n    image: nginx\n";
    let (ok, _, err) = kubectl(dir.path(), &kc, &["apply", "-f", "-"], Some(pod));
    assert!(ok, "{err}");
    let (ok, out, err) = get(&["wait", "--for=condition=Ready", "pod/batch", "--timeout=30s"]);
    assert!(ok, "{out}{err}");
    let (_, node, _) = get(&["get", "pod", "batch", "-o", "jsonpath={.spec.nodeName}"]);
    assert_eq!(node, "sim-node-2");
}
