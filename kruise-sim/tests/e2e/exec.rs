//! `kubectl exec` into simulated containers: the command runs in the container's busybox-like
//! shell against its in-memory filesystem, over the WebSocket kube-apiserver serves.

use crate::common;

use common::Env;
use kruise_sim::Config;
use kruise_sim::nodes::kubelet::Delays;
use kruise_sim::nodes::{NodeSpec, NodesConfig};
use std::time::Duration;

fn env() -> Env {
    let delays = Delays {
        pull: Duration::from_millis(20),
        start: Duration::from_millis(10),
        ready: Duration::from_millis(20),
        stop: Duration::from_millis(20),
        ..Delays::default()
    };
    let mut nc = NodesConfig::new(0).with_nodes(vec![NodeSpec::new("n-a")]).with_delays(delays);
    nc.lease_renew = Duration::from_millis(200);
    Env::new(Config::default().with_nodes(nc))
}

const POD: &str = "apiVersion: v1
kind: Pod
metadata:
  name: web
spec:
  containers:
  - name: app
    image: busybox:1.36
    env:
    - name: GREETING
      value: hello
  - name: side
    image: busybox:1.36
";

fn running(e: &Env) {
    e.ok_stdin(&["apply", "-f", "-"], POD);
    e.ok(&["wait", "--for=condition=Ready", "pod/web", "--timeout=30s"]);
}

#[test]
fn exec_touches_reads_and_removes_files() {
    let e = env();
    running(&e);
    // No container named: kubectl picks the first and says so.
    let o = e.run(&["exec", "web", "--", "touch", "/tmp/ready"]);
    assert!(o.ok, "{}", o.stderr);
    assert!(o.stderr.contains("Defaulted container \"app\" out of: app, side"), "{}", o.stderr);
    let o = e.run(&["exec", "web", "-c", "app", "--", "cat", "/tmp/ready"]);
    assert_eq!((o.code, o.stdout.as_str(), o.stderr.as_str()), (Some(0), "", ""));
    // Each container has its own filesystem.
    let o = e.run(&["exec", "web", "-c", "side", "--", "cat", "/tmp/ready"]);
    assert_eq!(o.code, Some(1), "{}", o.stderr);
    let out = e.ok(&[
        "exec",
        "web",
        "-c",
        "app",
        "--",
        "sh",
        "-c",
        "echo $GREETING > /tmp/g && cat /tmp/g /etc/hostname",
    ]);
    assert_eq!(out, "hello\nweb\n");
    e.ok(&["exec", "web", "-c", "app", "--", "rm", "/tmp/ready"]);
    let o = e.run(&["exec", "web", "-c", "app", "--", "cat", "/tmp/ready"]);
    assert_eq!(o.code, Some(1));
    assert!(
        o.stderr.contains("cat: can't open '/tmp/ready': No such file or directory"),
        "{}",
        o.stderr
    );
    assert!(o.stderr.contains("command terminated with exit code 1"), "{}", o.stderr);
    let o = e.run(&["exec", "web", "-c", "app", "--", "sh", "-c", "exit 7"]);
    assert_eq!(o.code, Some(7), "{}", o.stderr);
    // Standard input, piped.
    let o = e.run_with(
        &["exec", "-i", "web", "-c", "app", "--", "sh", "-c", "cat > /tmp/x"],
        Some("from stdin\n"),
        Duration::from_secs(30),
    );
    assert!(o.ok, "{}", o.stderr);
    assert_eq!(e.ok(&["exec", "web", "-c", "app", "--", "cat", "/tmp/x"]), "from stdin\n");
}

#[test]
fn exec_errors_read_as_kube_apiservers() {
    let e = env();
    let o = e.run(&["exec", "nope", "--", "true"]);
    assert_eq!(o.code, Some(1));
    assert!(
        o.stderr.contains("Error from server (NotFound): pods \"nope\" not found"),
        "{}",
        o.stderr
    );
    running(&e);
    let o = e.run(&["exec", "web", "-c", "nope", "--", "true"]);
    assert_eq!(o.code, Some(1));
    assert!(o.stderr.contains("container nope is not valid for pod web"), "{}", o.stderr);
    let o = e.run(&["exec", "web", "-c", "app", "--", "nope"]);
    assert_eq!(o.code, Some(1));
    assert!(
        o.stderr.contains("exec: \"nope\": executable file not found in $PATH"),
        "{}",
        o.stderr
    );
    // A pod no node took.
    e.ok_stdin(
        &["apply", "-f", "-"],
        "apiVersion: v1\nkind: Pod\nmetadata:\n  name: lost\nspec:\n  nodeSelector:\n    none: none\n  containers:\n  - name: app\n    image: busybox:1.36\n",
    );
    let o = e.run(&["exec", "lost", "--", "true"]);
    assert_eq!(o.code, Some(1));
    assert!(o.stderr.contains("pod lost does not have a host assigned"), "{}", o.stderr);
    // A container that exited in a running pod: the kubelet finds none to exec in.
    e.ok_stdin(
        &["apply", "-f", "-"],
        "apiVersion: v1\nkind: Pod\nmetadata:\n  name: half\nspec:\n  restartPolicy: Never\n  containers:\n  - name: done\n    image: busybox:1.36\n    command: [\"true\"]\n  - name: app\n    image: busybox:1.36\n    command: [sleep, infinity]\n",
    );
    e.eventually("the first container to exit", "pods", || {
        let p = e.json(&["get", "pod", "half"]);
        let done = &p["status"]["containerStatuses"];
        let done = done.as_array()?.iter().find(|c| c["name"] == "done")?;
        done["state"]["terminated"].is_object().then_some(())
    });
    let o = e.run(&["exec", "half", "-c", "done", "--", "true"]);
    assert_eq!(o.code, Some(1));
    assert!(
        o.stderr.contains(
            "error: Internal error occurred: unable to upgrade connection: container not found (\"done\")"
        ),
        "{}",
        o.stderr
    );
}

#[test]
fn exec_needs_create_on_pods_exec() {
    let e = env();
    running(&e);
    e.ok_stdin(
        &["apply", "-f", "-"],
        "apiVersion: rbac.authorization.k8s.io/v1
kind: Role
metadata: {name: reader}
rules:
- apiGroups: [\"\"]
  resources: [pods, pods/exec]
  verbs: [get]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata: {name: alice}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: Role, name: reader}
subjects:
- {apiGroup: rbac.authorization.k8s.io, kind: User, name: alice}
",
    );
    // `get` alone no longer opens the WebSocket (kube-apiserver 1.35+), nor the SPDY retry.
    let o = e.run(&["--as", "alice", "exec", "web", "-c", "app", "--", "true"]);
    assert_eq!(o.code, Some(1));
    assert!(
        o.stderr.contains(
            "pods \"web\" is forbidden: User \"alice\" cannot create resource \"pods/exec\" in API group \"\" in the namespace \"default\""
        ),
        "{}",
        o.stderr
    );
    e.ok(&[
        "patch",
        "role",
        "reader",
        "--type=json",
        "-p",
        r#"[{"op": "add", "path": "/rules/0/verbs/-", "value": "create"}]"#,
    ]);
    let out = e.ok(&["--as", "alice", "exec", "web", "-c", "app", "--", "printenv", "GREETING"]);
    assert_eq!(out, "hello\n");
}

/// What `kubectl exec` writes, kruise-daemon's exec probes read through the CRI: one runtime.
#[cfg(feature = "cri")]
#[test]
fn kubectl_exec_and_cri_exec_sync_share_the_filesystem() {
    use kruise_api::well_known::kubernetes::cri::POD_UID;
    use kruise_cri::{ContainerFilter, ContainerRuntime as _};

    let e = env();
    running(&e);
    let uid =
        e.json(&["get", "pod", "web"])["metadata"]["uid"].as_str().unwrap_or_default().to_owned();
    let node = e.server.nodes().and_then(|n| n.runtime("n-a")).expect("the node runs");
    let cri = kruise_sim::nodes::cri::SimCri::new(node);
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().expect("runtime");
    let probe = |cmd: &[&str]| {
        rt.block_on(async {
            let filter = ContainerFilter::default().label(POD_UID, &uid);
            let listed = cri.list_containers(&filter).await.expect("listed");
            let app = listed.iter().find(|c| c.name == "app").expect("the app container");
            let cmd = cmd.iter().map(|s| (*s).to_owned()).collect();
            cri.exec_sync(&app.id, cmd, Duration::from_secs(5)).await.expect("exec").exit_code
        })
    };
    assert_eq!(probe(&["cat", "/tmp/ready"]), 1);
    e.ok(&["exec", "web", "-c", "app", "--", "touch", "/tmp/ready"]);
    assert_eq!(probe(&["cat", "/tmp/ready"]), 0);
    e.ok(&["exec", "web", "-c", "app", "--", "rm", "/tmp/ready"]);
    assert_eq!(probe(&["cat", "/tmp/ready"]), 1);
}
