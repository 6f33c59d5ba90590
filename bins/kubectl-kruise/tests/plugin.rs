//! `kubectl kruise ...` through the real kubectl (its plugin lookup finds this binary on
//! `PATH`) against kruise-sim with Kruise's CRDs and the built-in controllers. The CloneSet's
//! progress is written into its status by hand, as the manager would, so that each state the
//! plugin reads is set exactly.

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Duration;

use kruise_sim::{Config, Server, ServerHandle};
use serde_json::{Value, json};

struct Env {
    _server: ServerHandle,
    dir: tempfile::TempDir,
    kubeconfig: std::path::PathBuf,
}

struct Out {
    ok: bool,
    stdout: String,
    stderr: String,
}

impl Env {
    fn new() -> Env {
        let nodes = kruise_sim::nodes::NodesConfig::new(1);
        let config = Config::default().with_kruise_crds().with_nodes(nodes).with_controllers();
        let server = Server::start_in_thread(config).expect("server starts");
        let dir = tempfile::tempdir().expect("tempdir");
        let kubeconfig = dir.path().join("kubeconfig");
        server.write_kubeconfig(&kubeconfig).expect("kubeconfig written");
        Env { _server: server, dir, kubeconfig }
    }

    /// `kubectl ARGS` with this binary's directory first on `PATH`.
    fn kubectl(&self, args: &[&str], stdin: Option<&str>) -> Out {
        let plugin = Path::new(env!("CARGO_BIN_EXE_kubectl-kruise"));
        let dir = plugin.parent().expect("a directory");
        let path = format!("{}:{}", dir.display(), std::env::var("PATH").unwrap_or_default());
        let mut child = Command::new("kubectl")
            .args(args)
            .env("PATH", path)
            .env("KUBECONFIG", &self.kubeconfig)
            .env("HOME", self.dir.path())
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("kubectl runs");
        if let Some(input) = stdin {
            use std::io::Write as _;
            child.stdin.take().expect("stdin").write_all(input.as_bytes()).expect("written");
        }
        drop(child.stdin.take());
        let out = child.wait_with_output().expect("output");
        Out {
            ok: out.status.success(),
            stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
            stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
        }
    }

    fn ok(&self, args: &[&str]) -> String {
        let out = self.kubectl(args, None);
        assert!(out.ok, "kubectl {args:?}:\n{}\n{}", out.stdout, out.stderr);
        out.stdout
    }

    fn apply(&self, object: &Value) {
        let out = self.kubectl(&["apply", "-f", "-"], Some(&object.to_string()));
        assert!(out.ok, "apply:\n{}", out.stderr);
    }

    fn json(&self, args: &[&str]) -> Value {
        let mut args = args.to_vec();
        args.extend(["-o", "json"]);
        serde_json::from_str(&self.ok(&args)).expect("JSON")
    }

    /// The CloneSet's status, as its controller would write it.
    fn set_status(&self, status: Value) {
        let patch = json!({"status": status}).to_string();
        self.ok(&[
            "patch",
            "cloneset",
            "web",
            "--subresource=status",
            "--type=merge",
            "-p",
            &patch,
        ]);
    }
}

fn cloneset(image: &str, partition: i32) -> Value {
    json!({
        "apiVersion": "apps.kruise.io/v1beta1", "kind": "CloneSet",
        "metadata": {"name": "web", "namespace": "default"},
        "spec": {"replicas": 3, "selector": {"matchLabels": {"app": "web"}},
                 "template": {"metadata": {"labels": {"app": "web"}},
                              "spec": {"containers": [{"name": "main", "image": image}]}},
                 "updateStrategy": {"rollingUpdate": {"partition": partition}}},
    })
}

fn revision(n: i64, image: &str, uid: &str) -> Value {
    json!({
        "apiVersion": "apps/v1", "kind": "ControllerRevision",
        "metadata": {"name": format!("web-{n}"), "namespace": "default",
                     "ownerReferences": [{"apiVersion": "apps.kruise.io/v1beta1", "kind": "CloneSet",
                                          "name": "web", "uid": uid, "controller": true}]},
        "revision": n,
        "data": {"spec": {"template": {"$patch": "replace", "metadata": {"labels": {"app": "web"}},
                 "spec": {"containers": [{"name": "main", "image": image}]}}}},
    })
}

#[test]
fn rollout_commands_on_a_cloneset() {
    let env = Env::new();
    env.apply(&cloneset("registry.example/web:v2", 1));
    let uid = env.json(&["get", "cloneset", "web"])["metadata"]["uid"]
        .as_str()
        .unwrap_or_default()
        .to_owned();

    // Status: partitions counted, --watch=false returns at once, --timeout ends a watch.
    env.set_status(json!({"observedGeneration": 1, "replicas": 3, "updatedReplicas": 1,
        "readyReplicas": 3, "updatedReadyReplicas": 1, "updatedAvailableReplicas": 1, "availableReplicas": 3}));
    let waiting = env.ok(&["kruise", "rollout", "status", "cloneset/web", "--watch=false"]);
    assert_eq!(
        waiting,
        "Waiting for cloneset \"web\" rollout to finish: 1 out of 2 new replicas have been updated...\n"
    );
    let timed_out =
        env.kubectl(&["kruise", "rollout", "status", "cloneset", "web", "--timeout", "1s"], None);
    assert!(!timed_out.ok);
    assert_eq!(timed_out.stderr, "error: timed out waiting for the condition\n");
    env.set_status(json!({"observedGeneration": 1, "replicas": 3, "updatedReplicas": 2,
        "readyReplicas": 3, "updatedReadyReplicas": 2, "updatedAvailableReplicas": 2, "availableReplicas": 3}));
    let done = env.ok(&["kruise", "rollout", "status", "clonesets.apps.kruise.io/web"]);
    assert_eq!(done, "partitioned roll out complete: 2 new pods have been updated...\n");

    // Pause and resume, refused when already so; a client dry run and -o name write nothing
    // and print the name.
    assert_eq!(
        env.ok(&["kruise", "rollout", "pause", "cloneset/web", "--dry-run=client", "-o", "name"]),
        "cloneset.apps.kruise.io/web\n"
    );
    let paused = &env.json(&["get", "cloneset", "web"])["spec"]["updateStrategy"]["rollingUpdate"];
    assert!(paused["paused"].is_null(), "{paused}");
    assert_eq!(
        env.ok(&["kruise", "rollout", "pause", "cloneset/web"]),
        "cloneset.apps.kruise.io/web paused\n"
    );
    let set = env.json(&["get", "cloneset", "web"]);
    assert_eq!(set["spec"]["updateStrategy"]["rollingUpdate"]["paused"], true);
    let again = env.kubectl(&["kruise", "rollout", "pause", "cloneset/web"], None);
    assert!(!again.ok);
    assert_eq!(again.stderr, "error: clonesets.apps.kruise.io \"web\" is already paused\n");
    assert_eq!(
        env.ok(&["kruise", "rollout", "resume", "cloneset/web"]),
        "cloneset.apps.kruise.io/web resumed\n"
    );

    // Restart stamps the template (a server dry run keeps nothing).
    let yaml =
        env.ok(&["kruise", "rollout", "restart", "cloneset/web", "--dry-run=server", "-o", "yaml"]);
    assert!(yaml.contains("kubectl.kruise.io/restartedAt"), "{yaml}");
    assert!(
        env.json(&["get", "cloneset", "web"])["spec"]["template"]["metadata"]["annotations"]
            .is_null()
    );
    assert_eq!(
        env.ok(&["kruise", "rollout", "restart", "cloneset/web"]),
        "cloneset.apps.kruise.io/web restarted\n"
    );
    let set = env.json(&["get", "cloneset", "web"]);
    assert!(
        set["spec"]["template"]["metadata"]["annotations"]["kubectl.kruise.io/restartedAt"]
            .is_string()
    );

    // History and undo over the CloneSet's revisions.
    env.apply(&revision(1, "registry.example/web:v1", &uid));
    env.apply(&revision(2, "registry.example/web:v2", &uid));
    let history = env.ok(&["kruise", "rollout", "history", "cloneset/web"]);
    assert_eq!(
        history,
        "cloneset.apps.kruise.io/web\nREVISION  CHANGE-CAUSE\n1         <none>\n2         <none>\n\n"
    );
    let detail = env.ok(&["kruise", "rollout", "history", "cloneset/web", "--revision", "1"]);
    assert!(
        detail.starts_with("cloneset.apps.kruise.io/web with revision #1\nPod Template:\n"),
        "{detail}"
    );
    assert!(detail.contains("image: registry.example/web:v1"), "{detail}");
    let dry = env.ok(&["kruise", "rollout", "undo", "cloneset/web", "--dry-run=server"]);
    assert_eq!(dry, "cloneset.apps.kruise.io/web rolled back (server dry run)\n");
    let image = |env: &Env| {
        env.json(&["get", "cloneset", "web"])["spec"]["template"]["spec"]["containers"][0]["image"]
            .clone()
    };
    assert_eq!(image(&env), "registry.example/web:v2", "a dry run changes nothing");
    // -o prints the object as it would be.
    let shown: Value = serde_json::from_str(&env.ok(&[
        "kruise",
        "rollout",
        "undo",
        "cloneset/web",
        "--dry-run=client",
        "-o",
        "json",
    ]))
    .expect("JSON");
    assert_eq!(
        shown["spec"]["template"]["spec"]["containers"][0]["image"],
        "registry.example/web:v1"
    );
    assert_eq!(image(&env), "registry.example/web:v2", "a dry run changes nothing");
    assert_eq!(
        env.ok(&["kruise", "rollout", "undo", "cloneset/web"]),
        "cloneset.apps.kruise.io/web rolled back\n"
    );
    assert_eq!(image(&env), "registry.example/web:v1");
    let missing =
        env.kubectl(&["kruise", "rollout", "undo", "cloneset/web", "--to-revision", "7"], None);
    assert_eq!(missing.stderr, "error: unable to find specified revision 7 in history\n");

    // Bad input names what is wrong.
    let unknown = env.kubectl(&["kruise", "rollout", "status", "widget/web"], None);
    assert_eq!(unknown.stderr, "error: the server doesn't have a resource type \"widget\"\n");
    let absent = env.kubectl(&["kruise", "rollout", "status", "cloneset/nope"], None);
    assert_eq!(absent.stderr, "error: clonesets.apps.kruise.io \"nope\" not found\n");
}

#[test]
fn scaledown_deletes_exactly_the_named_pods() {
    let env = Env::new();
    env.apply(&cloneset("registry.example/web:v1", 0));
    let uid = env.json(&["get", "cloneset", "web"])["metadata"]["uid"]
        .as_str()
        .unwrap_or_default()
        .to_owned();
    for name in ["web-a", "web-b", "web-c"] {
        env.apply(&json!({"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": name, "namespace": "default", "labels": {"app": "web"},
                         "ownerReferences": [{"apiVersion": "apps.kruise.io/v1beta1", "kind": "CloneSet",
                                              "name": "web", "uid": uid, "controller": true}]},
            "spec": {"containers": [{"name": "main", "image": "registry.example/web:v1"}]}}));
    }
    let stranger = env.kubectl(&["kruise", "scaledown", "cloneset/web", "--pods", "other"], None);
    assert_eq!(stranger.stderr, "error: pod \"other\" does not belong to cloneset \"web\"\n");
    let dry = env.ok(&[
        "kruise",
        "scaledown",
        "cloneset/web",
        "--pods",
        "web-b",
        "--dry-run=server",
        "-o",
        "name",
    ]);
    assert_eq!(dry, "cloneset.apps.kruise.io/web\n");
    assert_eq!(env.json(&["get", "cloneset", "web"])["spec"]["replicas"], 3, "a dry run");
    let out = env.ok(&["kruise", "scaledown", "cloneset/web", "--pods", "web-b"]);
    assert_eq!(out, "cloneset.apps.kruise.io/web scaled down: web-b\n");
    let set = env.json(&["get", "cloneset", "web"]);
    assert_eq!(set["spec"]["replicas"], 2);
    assert_eq!(set["spec"]["scaleStrategy"]["podsToDelete"], json!(["web-b"]));
}

#[test]
fn a_deployment_rollout_is_followed_as_kubectl_does() {
    let env = Env::new();
    env.ok(&["create", "deployment", "web", "--image=registry.example/web:v1", "--replicas=2"]);
    let out =
        env.kubectl(&["kruise", "rollout", "status", "deployment/web", "--timeout", "60s"], None);
    assert!(
        out.ok,
        "{}\n{}\n{}",
        out.stderr,
        out.stdout,
        env.ok(&["get", "deploy,pods", "-o", "yaml"])
    );
    assert!(out.stdout.ends_with("deployment \"web\" successfully rolled out\n"), "{}", out.stdout);
    std::thread::sleep(Duration::from_millis(10));
}

#[test]
fn validate_runs_the_webhooks_offline() {
    let dir = tempfile::tempdir().expect("tempdir");
    let file = dir.path().join("objects.yaml");
    std::fs::write(
        &file,
        r#"apiVersion: apps.kruise.io/v1alpha1
kind: CloneSet
metadata: {name: web}
spec:
  replicas: 2
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec: {containers: [{name: main, image: nginx}]}
---
apiVersion: apps.kruise.io/v1beta1
kind: CloneSet
metadata: {name: bad}
spec:
  replicas: 2
  selector: {matchLabels: {app: bad}}
  template:
    metadata: {labels: {app: other}}
    spec: {containers: [{name: main, image: nginx}]}
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: native}
"#,
    )
    .expect("written");
    let path = file.to_str().expect("a path");
    // No cluster is needed: the plugin runs alone, the kubeconfig points nowhere.
    let plugin = env!("CARGO_BIN_EXE_kubectl-kruise");
    let run = |args: &[&str]| {
        let out = Command::new(plugin)
            .args(args)
            .env("KUBECONFIG", "/nonexistent")
            .output()
            .expect("runs");
        (
            out.status.code(),
            String::from_utf8_lossy(&out.stdout).into_owned(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        )
    };
    let (code, stdout, stderr) = run(&["validate", "-f", path]);
    assert_eq!(code, Some(1));
    assert_eq!(
        stdout,
        "cloneset.apps.kruise.io/web valid\ndeployment.apps/native skipped (not one of Kruise's kinds)\n"
    );
    assert_eq!(
        stderr,
        format!(
            "error: {path}: cloneset.apps.kruise.io/bad: admission webhook \"vcloneset.kb.io\" denied the request: spec.template.metadata.labels: Invalid value: map[string]string{{\"app\":\"other\"}}: `selector` does not match template `labels`\nerror: 1 object(s) refused\n"
        )
    );
    // The defaults the mutating webhook adds, at the version written.
    let (_, yaml, _) = run(&["validate", "-f", path, "-o", "yaml"]);
    let first: Value =
        serde_yaml::from_str(yaml.split("---\n").nth(1).expect("a document")).expect("YAML");
    assert_eq!(first["apiVersion"], "apps.kruise.io/v1alpha1");
    assert_eq!(first["metadata"]["namespace"], "default");
    assert_eq!(first["spec"]["revisionHistoryLimit"], 10);
    let (code, _, stderr) = run(&["validate", "-f", path, "-o", "wide"]);
    assert_eq!(code, Some(1));
    assert!(stderr.contains("allowed formats are: json,yaml"), "{stderr}");
}

#[test]
fn plan_runs_the_managers_planner_on_the_live_objects() {
    let env = Env::new();
    env.apply(&cloneset("registry.example/web:v1", 0));
    let out = env.ok(&["kruise", "plan", "cloneset/web"]);
    eprintln!("{out}");
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(lines[0], "cloneset.apps.kruise.io/web: what the manager does next", "{out}");
    assert!(lines[1].starts_with("  createRevision web-"), "{out}");
    let creates = lines.iter().filter(|l| l.starts_with("  createPod web-")).count();
    assert_eq!(creates, 3, "{out}");
    // The whole plan, as data.
    let json: Value =
        serde_json::from_str(&env.ok(&["kruise", "plan", "cloneset/web", "-o", "json"]))
            .expect("JSON");
    assert_eq!(json["next"]["actions"].as_array().map(Vec::len), Some(4), "{json}");
    // Ahead: the three pods created, in one wave.
    assert_eq!(json["ahead"]["waves"].as_array().map(Vec::len), Some(1), "{json}");
    assert_eq!(json["ahead"]["waves"][0]["pods"].as_array().map(Vec::len), Some(3), "{json}");
    // What applying a file would do: five replicas, the file's spec defaulted by the webhook.
    let dir = tempfile::tempdir().expect("tempdir");
    let file = dir.path().join("five.yaml");
    let mut five = cloneset("registry.example/web:v1", 0);
    five["spec"]["replicas"] = json!(5);
    std::fs::write(&file, five.to_string()).expect("written");
    let out = env.ok(&["kruise", "plan", "cloneset/web", "-f", file.to_str().expect("a path")]);
    assert!(
        out.starts_with(
            "cloneset.apps.kruise.io/web: what the manager does if the file were applied\n"
        ),
        "{out}"
    );
    assert_eq!(out.lines().filter(|l| l.starts_with("  createPod web-")).count(), 5, "{out}");
    assert_eq!(env.json(&["get", "cloneset", "web"])["spec"]["replicas"], 3, "nothing is written");
    let native = env.kubectl(&["kruise", "plan", "deployment/web"], None);
    assert!(
        native
            .stderr
            .contains("plan supports CloneSet, Advanced StatefulSet and Advanced DaemonSet"),
        "{}",
        native.stderr
    );
}

#[test]
fn set_create_and_exec_on_kruise_objects() {
    let env = Env::new();
    env.apply(&cloneset("registry.example/web:v1", 0));
    assert_eq!(
        env.ok(&["kruise", "set", "image", "cloneset/web", "main=registry.example/web:v2"]),
        "cloneset.apps.kruise.io/web image updated\n"
    );
    let set = env.json(&["get", "cloneset", "web"]);
    assert_eq!(
        set["spec"]["template"]["spec"]["containers"][0]["image"],
        "registry.example/web:v2"
    );
    assert_eq!(
        env.ok(&["kruise", "set", "env", "cloneset/web", "MODE=fast", "-c", "main"]),
        "cloneset.apps.kruise.io/web env updated\n"
    );
    let set = env.json(&["get", "cloneset", "web"]);
    assert_eq!(
        set["spec"]["template"]["spec"]["containers"][0]["env"],
        json!([{"name": "MODE", "value": "fast"}])
    );
    assert_eq!(
        env.ok(&["kruise", "set", "env", "cloneset/web", "MODE-"]),
        "cloneset.apps.kruise.io/web env updated\n"
    );
    let all = env.ok(&["kruise", "get", "all"]);
    assert!(all.contains("cloneset.apps.kruise.io/web"), "{all}");
    let missing = env.kubectl(&["kruise", "set", "image", "cloneset/web", "other=x"], None);
    assert_eq!(missing.stderr, "error: unable to find container named \"other\"\n");

    // A Job from an AdvancedCronJob's template, owned by it.
    env.apply(&json!({"apiVersion": "apps.kruise.io/v1beta1", "kind": "AdvancedCronJob",
        "metadata": {"name": "nightly", "namespace": "default"},
        "spec": {"schedule": "0 0 * * *", "template": {"jobTemplate": {"spec": {"template": {"spec": {
            "restartPolicy": "Never", "containers": [{"name": "c", "image": "registry.example/job:v1"}]}}}}}}}));
    assert_eq!(
        env.ok(&["kruise", "create", "job", "now", "--from", "advancedcronjob/nightly"]),
        "job.batch/now created\n"
    );
    let job = env.json(&["get", "job", "now"]);
    assert_eq!(job["metadata"]["annotations"]["cronjob.kubernetes.io/instantiate"], "manual");
    assert_eq!(job["metadata"]["ownerReferences"][0]["kind"], "AdvancedCronJob");
    let none = env.kubectl(
        &["kruise", "create", "broadcastjob", "b", "--from", "advancedcronjob/nightly"],
        None,
    );
    assert_eq!(none.stderr, "error: advancedcronjob \"nightly\" has no broadcastJobTemplate\n");

    // A pod whose hot-upgrade sidecar `mesh` is served by mesh-2.
    env.apply(&json!({"apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": "p", "namespace": "default", "annotations": {
            "kruise.io/sidecarset-working-hotupgrade-container": "{\"mesh\":\"mesh-2\"}"}},
        "spec": {"containers": [
            {"name": "main", "image": "registry.example/app:v1"},
            {"name": "mesh-1", "image": "registry.example/mesh:v1", "env": [{"name": "WHO", "value": "mesh-1"}]},
            {"name": "mesh-2", "image": "registry.example/mesh:v2", "env": [{"name": "WHO", "value": "mesh-2"}]}]}}));
    assert_eq!(
        env.ok(&["kruise", "create", "crr", "again", "--pod", "p", "--containers", "main"]),
        "containerrecreaterequest.apps.kruise.io/again created\n"
    );
    let crr = env.json(&["get", "containerrecreaterequests", "again"]);
    assert_eq!(crr["spec"]["containers"], json!([{"name": "main"}]));
    let start = std::time::Instant::now();
    let who = loop {
        let out =
            env.kubectl(&["kruise", "exec", "p", "-S", "mesh", "--", "printenv", "WHO"], None);
        if out.ok || start.elapsed() > Duration::from_secs(30) {
            break out;
        }
        std::thread::sleep(Duration::from_millis(200));
    };
    assert!(who.ok, "{}", who.stderr);
    assert_eq!(who.stdout, "mesh-2\n");
}

#[test]
fn rollout_approve_moves_a_paused_step_on() {
    let env = Env::new();
    env.apply(&json!({
        "apiVersion": "rollouts.kruise.io/v1beta1", "kind": "Rollout",
        "metadata": {"name": "rollouts-demo", "namespace": "default"},
        "spec": {"workloadRef": {"apiVersion": "apps.kruise.io/v1beta1", "kind": "CloneSet", "name": "web"},
                 "strategy": {"canary": {"steps": [{"replicas": "20%"}, {"replicas": "100%"}]}}},
    }));
    let set_state = |state: &str| {
        let patch = json!({"status": {"phase": "Progressing",
            "currentStepIndex": 1, "currentStepState": state, "canaryStatus": {
            "currentStepIndex": 1, "currentStepState": state, "nextStepIndex": 2,
            "podTemplateHash": "", "finalisingStep": "", "canaryRevision": "r1",
            "canaryReplicas": 1, "canaryReadyReplicas": 1}}});
        env.ok(&[
            "patch",
            "rollouts.rollouts.kruise.io",
            "rollouts-demo",
            "--subresource=status",
            "--type=merge",
            "-p",
            &patch.to_string(),
        ]);
    };
    // Not paused: refused, naming the state.
    set_state("StepUpgrade");
    let refused = env.kubectl(&["kruise", "rollout", "approve", "rollout/rollouts-demo"], None);
    assert!(!refused.ok);
    assert!(
        refused.stderr.contains(
            r#"rollouts.rollouts.kruise.io "rollouts-demo" cannot be approved: step 1 is in state "StepUpgrade", not "StepPaused""#
        ),
        "{}",
        refused.stderr
    );
    // Paused: the step's state becomes StepReady, through the status subresource.
    set_state("StepPaused");
    let out = env.ok(&["kruise", "rollout", "approve", "rollout/rollouts-demo"]);
    assert_eq!(out.trim(), "rollout.rollouts.kruise.io/rollouts-demo approved");
    let status =
        env.json(&["get", "rollouts.rollouts.kruise.io", "rollouts-demo"])["status"].clone();
    assert_eq!(status["canaryStatus"]["currentStepState"], "StepReady");
    // A workload is not a Rollout.
    let refused = env.kubectl(&["kruise", "rollout", "approve", "cloneset/web"], None);
    assert!(refused.stderr.contains("is not supported for approve"), "{}", refused.stderr);

    // describe: the steps, the current one marked with its state.
    let text = env.ok(&["kruise", "describe", "rollout", "rollouts-demo"]);
    assert!(text.contains("Phase:        Progressing"), "{text}");
    assert!(text.contains("* 1   20%       -        approval  StepReady"), "{text}");
    assert!(text.contains("Canary:       1/1 ready, revision r1"), "{text}");
    let missing = env.kubectl(&["kruise", "describe", "rollout", "nope"], None);
    assert!(
        missing.stderr.contains(r#"rollouts.rollouts.kruise.io "nope" not found"#),
        "{}",
        missing.stderr
    );
}

#[test]
fn set_serviceaccount_and_resources_and_scale() {
    let env = Env::new();
    env.apply(&cloneset("registry.example/web:v1", 0));
    assert_eq!(
        env.ok(&["kruise", "set", "serviceaccount", "cloneset/web", "builder"]),
        "cloneset.apps.kruise.io/web serviceaccount updated\n"
    );
    let set = env.json(&["get", "cloneset", "web"]);
    assert_eq!(set["spec"]["template"]["spec"]["serviceAccountName"], "builder");
    assert_eq!(
        env.ok(&["kruise", "set", "sa", "cloneset/web", "builder"]),
        "cloneset.apps.kruise.io/web serviceaccount unchanged\n"
    );
    assert_eq!(
        env.ok(&[
            "kruise",
            "set",
            "resources",
            "cloneset/web",
            "-c",
            "main",
            "--limits=cpu=200m,memory=512Mi",
            "--requests=cpu=100m",
        ]),
        "cloneset.apps.kruise.io/web resource requirements updated\n"
    );
    let set = env.json(&["get", "cloneset", "web"]);
    assert_eq!(
        set["spec"]["template"]["spec"]["containers"][0]["resources"],
        json!({"limits": {"cpu": "200m", "memory": "512Mi"}, "requests": {"cpu": "100m"}})
    );
    let neither = env.kubectl(&["kruise", "set", "resources", "cloneset/web"], None);
    assert_eq!(
        neither.stderr,
        "error: you must specify an update to requests or limits (in the form of --requests/--limits)\n"
    );
    let bad = env.kubectl(&["kruise", "set", "resources", "cloneset/web", "--limits=cpu"], None);
    assert_eq!(bad.stderr, "error: invalid resource \"cpu\": expected NAME=QUANTITY\n");
    assert_eq!(
        env.ok(&["kruise", "scale", "cloneset/web", "--replicas=3"]),
        "cloneset.apps.kruise.io/web scaled\n"
    );
    assert_eq!(env.json(&["get", "cloneset", "web"])["spec"]["replicas"], 3);

    // expose: a Service selecting the CloneSet's pods.
    let no_port = env.kubectl(&["kruise", "expose", "cloneset/web"], None);
    assert_eq!(no_port.stderr, "error: couldn't find port via --port flag or introspection\n");
    assert_eq!(
        env.ok(&["kruise", "expose", "cloneset/web", "--port=80", "--target-port=8080"]),
        "service/web exposed\n"
    );
    let service = env.json(&["get", "service", "web"]);
    let set = env.json(&["get", "cloneset", "web"]);
    assert_eq!(service["spec"]["selector"], set["spec"]["selector"]["matchLabels"]);
    assert_eq!(
        service["spec"]["ports"][0],
        json!({"port": 80, "targetPort": 8080, "protocol": "TCP"})
    );
}

/// `set env --from`, `set selector`, `set subject`, `expose --selector`, and kubectl's
/// `--dry-run` and `-o` on the commands that write.
#[test]
fn set_from_selector_subject_and_write_flags() {
    let env = Env::new();
    env.apply(&cloneset("registry.example/web:v1", 0));
    let set = || env.json(&["get", "cloneset", "web"]);

    // --dry-run: client sends nothing, server sends and keeps nothing; -o prints the object.
    let rv = set()["metadata"]["resourceVersion"].clone();
    assert_eq!(
        env.ok(&["kruise", "set", "image", "cloneset/web", "main=web:v2", "--dry-run=client"]),
        "cloneset.apps.kruise.io/web image updated (dry run)\n"
    );
    let yaml = env.ok(&[
        "kruise",
        "set",
        "image",
        "cloneset/web",
        "main=web:v2",
        "--dry-run=server",
        "-o",
        "yaml",
    ]);
    let shown: Value = serde_yaml::from_str(&yaml).expect("YAML");
    assert_eq!(shown["spec"]["template"]["spec"]["containers"][0]["image"], "web:v2");
    assert_eq!(set()["metadata"]["resourceVersion"], rv, "a dry run writes nothing");
    assert_eq!(
        env.ok(&["kruise", "set", "image", "cloneset/web", "main=web:v2", "-o", "name"]),
        "cloneset.apps.kruise.io/web\n"
    );
    assert_eq!(set()["spec"]["template"]["spec"]["containers"][0]["image"], "web:v2");
    let bad = env.kubectl(&["kruise", "scale", "cloneset/web", "--replicas=4", "-o", "wide"], None);
    assert!(bad.stderr.contains("allowed formats are: json,name,yaml"), "{}", bad.stderr);
    assert_eq!(
        env.ok(&["kruise", "scale", "cloneset/web", "--replicas=4", "--dry-run=client"]),
        "cloneset.apps.kruise.io/web scaled (dry run)\n"
    );
    assert_eq!(set()["spec"]["replicas"], 3);

    // set env --from: each key by reference, with a prefix; a missing key is named.
    env.apply(&json!({"apiVersion": "v1", "kind": "Secret",
        "metadata": {"name": "db", "namespace": "default"},
        "data": {"db-host": "aG9zdA==", "password": "cHc="}}));
    assert_eq!(
        env.ok(&[
            "kruise",
            "set",
            "env",
            "cloneset/web",
            "--from=secret/db",
            "--prefix=APP_",
            "MODE=fast"
        ]),
        "cloneset.apps.kruise.io/web env updated\n"
    );
    assert_eq!(
        set()["spec"]["template"]["spec"]["containers"][0]["env"],
        json!([
            {"name": "APP_DB_HOST", "valueFrom": {"secretKeyRef": {"name": "db", "key": "db-host"}}},
            {"name": "APP_PASSWORD", "valueFrom": {"secretKeyRef": {"name": "db", "key": "password"}}},
            {"name": "MODE", "value": "fast"},
        ])
    );
    let missing = env.kubectl(
        &["kruise", "set", "env", "cloneset/web", "--from=secret/db", "--keys=user"],
        None,
    );
    assert_eq!(missing.stderr, "error: secret/db has no key \"user\"\n");
    let gone =
        env.kubectl(&["kruise", "set", "env", "cloneset/web", "--from=configmap/none"], None);
    assert_eq!(gone.stderr, "error: configmaps \"none\" not found\n");

    // expose --selector, then set selector replaces the Service's whole selector.
    assert_eq!(
        env.ok(&[
            "kruise",
            "expose",
            "cloneset/web",
            "--port=80",
            "--name=front",
            "-l",
            "app=web,tier=front"
        ]),
        "service/front exposed\n"
    );
    assert_eq!(
        env.json(&["get", "service", "front"])["spec"]["selector"],
        json!({"app": "web", "tier": "front"})
    );
    assert_eq!(
        env.ok(&["kruise", "set", "selector", "service/front", "app=web"]),
        "service/front selector updated\n"
    );
    assert_eq!(env.json(&["get", "service", "front"])["spec"]["selector"], json!({"app": "web"}));
    let not_svc = env.kubectl(&["kruise", "set", "selector", "cloneset/web", "app=web"], None);
    assert!(
        not_svc.stderr.contains("selectors can only be set on Service objects"),
        "{}",
        not_svc.stderr
    );

    // set subject on a RoleBinding and a ClusterRoleBinding.
    env.apply(&json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding",
        "metadata": {"name": "admins", "namespace": "default"},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "admin"},
        "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": "ann"}]}));
    assert_eq!(
        env.ok(&[
            "kruise",
            "set",
            "subject",
            "rolebinding/admins",
            "--user=bob",
            "--serviceaccount=default:robot"
        ]),
        "rolebinding.rbac.authorization.k8s.io/admins subjects updated\n"
    );
    let subjects = env.json(&["get", "rolebinding", "admins"])["subjects"].clone();
    assert_eq!(subjects.as_array().map(Vec::len), Some(3), "{subjects}");
    assert_eq!(
        subjects[2],
        json!({"kind": "ServiceAccount", "name": "robot", "namespace": "default"})
    );
    assert_eq!(
        env.ok(&["kruise", "set", "subject", "rolebinding/admins", "--user=bob"]),
        "rolebinding.rbac.authorization.k8s.io/admins subjects unchanged\n"
    );
    env.apply(&json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding",
        "metadata": {"name": "viewers"},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "view"}}));
    assert_eq!(
        env.ok(&["kruise", "set", "subject", "clusterrolebinding", "viewers", "--group=devs"]),
        "clusterrolebinding.rbac.authorization.k8s.io/viewers subjects updated\n"
    );
    assert_eq!(env.json(&["get", "clusterrolebinding", "viewers"])["subjects"][0]["name"], "devs");
}

/// The manager (every controller, no webhooks) in a thread of its own against `env`'s server.
fn start_manager(env: &Env) -> std::sync::mpsc::Sender<()> {
    let (stop, stopped) = std::sync::mpsc::channel::<()>();
    let kubeconfig = env.kubeconfig.clone();
    std::thread::spawn(move || {
        let runtime =
            tokio::runtime::Builder::new_current_thread().enable_all().build().expect("a runtime");
        runtime.block_on(async move {
            let file = kube::config::Kubeconfig::read_from(&kubeconfig).expect("kubeconfig");
            let config = kube::Config::from_custom_kubeconfig(file, &Default::default())
                .await
                .expect("config");
            let client = kube::Client::try_from(config).expect("client");
            let shutdown = async move {
                let _ = tokio::task::spawn_blocking(move || stopped.recv()).await;
            };
            let config = kruise_kube::manager::ManagerConfig::default();
            kruise_kube::manager::run(client, config, shutdown, None).await.expect("manager runs");
        });
    });
    stop
}

fn wait_until(what: &str, mut done: impl FnMut() -> bool) {
    let deadline = std::time::Instant::now() + Duration::from_secs(90);
    while !done() {
        assert!(std::time::Instant::now() < deadline, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(200));
    }
}

/// `plan -f` on a CloneSet held mid-rollout by its partition prints the waves of in-place
/// updates that lowering the partition starts; the manager then updates the pods in exactly
/// that order (one a wave, maxUnavailable 1), as a watch of the pods shows.
#[test]
fn plan_forecasts_the_waves_the_manager_then_follows() {
    let env = Env::new();
    let _manager = start_manager(&env);
    // As the manager's webhooks default it (this test runs the controllers only), so that the
    // live template and the file's, defaulted by `plan -f`, are the same.
    let web = |image: &str, partition: i32| {
        let mut set = cloneset(image, partition);
        set["spec"]["replicas"] = json!(5);
        set["spec"]["updateStrategy"] = json!({"rollingUpdate": {
            "partition": partition, "maxUnavailable": 1, "podUpdatePolicy": "InPlaceIfPossible"}});
        defaulted(&env, &set)
    };
    let status = |key: &str| env.json(&["get", "cloneset", "web"])["status"][key].clone();
    env.apply(&web("registry.example/web:v1", 3));
    wait_until("five ready pods", || status("readyReplicas") == 5);
    // Mid-rollout: the partition keeps three of five at v1.
    env.apply(&web("registry.example/web:v2", 3));
    wait_until("two updated pods", || {
        status("updatedReadyReplicas") == 2 && status("readyReplicas") == 5
    });
    let out = env.ok(&["kruise", "plan", "cloneset/web"]);
    assert!(out.contains("  no pod changes\n"), "{out}");
    assert!(out.contains("  then 2 of 5 pods at web-"), "{out}");
    let left = out.lines().find(|l| l.starts_with("  left at another revision")).expect(&out);
    assert!(
        left.starts_with(
            "  left at another revision (partition 3, maxUnavailable 1, maxSurge 0): "
        ),
        "{out}"
    );
    assert_eq!(left.matches("web-").count(), 3, "{out}");

    // What lowering the partition to 0 would do.
    let dir = tempfile::tempdir().expect("tempdir");
    let file = dir.path().join("all.yaml");
    std::fs::write(&file, web("registry.example/web:v2", 0).to_string()).expect("written");
    let path = file.to_str().expect("a path");
    let text = env.ok(&["kruise", "plan", "cloneset/web", "-f", path]);
    eprintln!("{text}");
    assert_eq!(text.lines().filter(|l| l.starts_with("  wave ")).count(), 3, "{text}");
    assert!(text.contains("  then 5 of 5 pods at web-"), "{text}");
    let ahead: Value = serde_json::from_str(&env.ok(&[
        "kruise",
        "plan",
        "cloneset/web",
        "-f",
        path,
        "-o",
        "json",
    ]))
    .expect("JSON");
    let revision =
        ahead["ahead"]["outcome"]["updateRevision"].as_str().expect("a revision").to_owned();
    let mut forecast = Vec::new();
    for wave in ahead["ahead"]["waves"].as_array().expect("waves") {
        let pods = wave["pods"].as_array().expect("pods");
        assert_eq!(pods.len(), 1, "maxUnavailable 1: {ahead}");
        assert_eq!(pods[0]["change"], "inPlace", "{ahead}");
        forecast.push(pods[0]["pod"].as_str().expect("a name").to_owned());
    }
    assert_eq!(status("readyReplicas"), 5, "plan wrote nothing");

    // The pods as the API server changes them, in its order.
    let watch = PodWatch::start(&env, "app=web", 5);
    env.ok(&["apply", "-f", path]);
    wait_until("five updated pods", || {
        let set = env.json(&["get", "cloneset", "web"]);
        set["status"]["updatedReadyReplicas"] == 5
            && set["status"]["observedGeneration"] == set["metadata"]["generation"]
    });
    wait_until("the watch to see them", || {
        let text = watch.events();
        serde_json::Deserializer::from_str(&text)
            .into_iter::<Value>()
            .filter_map(Result::ok)
            .filter(|e| {
                e["object"]["metadata"]["labels"]["controller-revision-hash"] == revision.as_str()
            })
            .map(|e| e["object"]["metadata"]["name"].as_str().unwrap_or_default().to_owned())
            .collect::<std::collections::BTreeSet<_>>()
            .len()
            == 5
    });
    let text = watch.stop();
    let mut order: Vec<String> = Vec::new();
    let mut before = std::collections::BTreeSet::new();
    for event in serde_json::Deserializer::from_str(&text).into_iter::<Value>() {
        let event = event.expect("a watch event");
        let pod = &event["object"];
        let name = pod["metadata"]["name"].as_str().unwrap_or_default().to_owned();
        let updated = pod["metadata"]["labels"]["controller-revision-hash"] == revision.as_str();
        if event["type"] == "ADDED" && updated {
            before.insert(name);
        } else if updated && !before.contains(&name) && !order.contains(&name) {
            order.push(name);
        }
    }
    assert_eq!(before.len(), 2, "two pods were updated before the plan");
    assert_eq!(order, forecast, "the manager's order against the forecast");
}

/// `kubectl get pods -l SELECTOR -w --output-watch-events -o json`, written to a file.
struct PodWatch {
    child: std::process::Child,
    file: std::path::PathBuf,
    _dir: tempfile::TempDir,
}

impl PodWatch {
    /// Starts the watch and waits for its listing of `listed` pods.
    fn start(env: &Env, selector: &str, listed: usize) -> Self {
        let dir = tempfile::tempdir().expect("tempdir");
        let file = dir.path().join("events.json");
        let child = Command::new("kubectl")
            .args(["get", "pods", "-l", selector, "-w", "--output-watch-events", "-o", "json"])
            .env("KUBECONFIG", &env.kubeconfig)
            .env("HOME", env.dir.path())
            .stdout(std::fs::File::create(&file).expect("events file"))
            .stderr(Stdio::null())
            .spawn()
            .expect("kubectl watches");
        let watch = PodWatch { child, file, _dir: dir };
        wait_until("the watch's first events", || {
            watch.events().matches("\"ADDED\"").count() >= listed
        });
        watch
    }

    /// The events so far, as kubectl wrote them (JSON objects one after another).
    fn events(&self) -> String {
        std::fs::read_to_string(&self.file).unwrap_or_default()
    }

    /// Stops the watch; every event it saw.
    fn stop(mut self) -> String {
        let _ = self.child.kill();
        let _ = self.child.wait();
        self.events()
    }
}

/// Ready pods over a pod watch's events (kubectl's `-w --output-watch-events -o json`): the
/// fewest at any moment after the first `listed` events (the initial listing).
fn fewest_ready(events: &str, listed: usize) -> usize {
    let mut ready = std::collections::BTreeMap::new();
    let mut fewest = usize::MAX;
    for (i, event) in serde_json::Deserializer::from_str(events).into_iter::<Value>().enumerate() {
        let event = event.expect("a watch event");
        let pod = &event["object"];
        let name = pod["metadata"]["name"].as_str().unwrap_or_default().to_owned();
        let is_ready = pod["metadata"]["deletionTimestamp"].is_null()
            && pod["status"]["conditions"]
                .as_array()
                .into_iter()
                .flatten()
                .any(|c| c["type"] == "Ready" && c["status"] == "True");
        if event["type"] == "DELETED" {
            ready.remove(&name);
        } else {
            ready.insert(name, is_ready);
        }
        if i + 1 >= listed {
            fewest = fewest.min(ready.values().filter(|r| **r).count());
        }
    }
    fewest
}

/// `migrate CloneSet --from Deployment`: the flags checked in upstream's words, `--create`
/// makes the CloneSet with no replicas, then a run moves the Deployment's five pods to it
/// with never fewer than four ready (a watch of the pods counts them throughout).
#[test]
fn migrate_moves_a_deployments_pods_to_a_cloneset() {
    let env = Env::new();
    let _manager = start_manager(&env);
    env.apply(&json!({
        "apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": "web", "namespace": "default", "labels": {"app": "web"}},
        "spec": {"replicas": 5, "selector": {"matchLabels": {"app": "web"}},
                 "template": {"metadata": {"labels": {"app": "web"}},
                              "spec": {"containers": [{"name": "main", "image": "registry.example/web:v1"}]}}},
    }));
    let get = |kind: &str, name: &str| env.json(&["get", kind, name]);
    wait_until("five available Deployment pods", || {
        get("deployment", "web")["status"]["availableReplicas"] == 5
    });
    let refused = |args: &[&str], message: &str| {
        let mut all = vec!["kruise", "migrate"];
        all.extend(args);
        let out = env.kubectl(&all, None);
        assert!(!out.ok, "{args:?} is refused");
        assert_eq!(out.stderr.trim_end(), format!("error: {message}"), "{args:?}");
    };
    refused(&["CloneSet", "--from", "Deployment"], "must specify --src-name");
    refused(&["CloneSet", "--src-name", "web"], "must specify --from");
    refused(
        &["StatefulSet", "--from", "Deployment", "--src-name", "web", "--dst-name", "x"],
        "currently only supported CloneSet as dst type",
    );
    refused(
        &["CloneSet", "--from", "ReplicaSet", "--src-name", "web", "--dst-name", "x"],
        "currently only supported Deployment as src type",
    );
    refused(
        &["CloneSet", "--from", "Deployment", "--src-name", "web", "--dst-name", "web-cs"],
        "clonesets.apps.kruise.io \"web-cs\" not found",
    );
    let create = [
        "kruise",
        "migrate",
        "CloneSet",
        "--from",
        "Deployment",
        "--src-name",
        "web",
        "--dst-name",
        "web-cs",
        "--create",
    ];
    assert_eq!(env.ok(&create), "Successfully created from Deployment/web to CloneSet/web-cs\n");
    let cs = get("cloneset", "web-cs");
    assert_eq!(cs["spec"]["replicas"], 0);
    assert_eq!(cs["spec"]["selector"], json!({"matchLabels": {"app": "web"}}));
    refused(&create[2..], "cloneset default/web-cs already exists");
    refused(
        &[
            "CloneSet",
            "--from",
            "Deployment",
            "--src-name",
            "web",
            "--dst-name",
            "web-cs",
            "--replicas",
            "6",
        ],
        "failed to migrate: --replicas 6 is more than deployment/web has: 5 (spec.replicas)",
    );

    let watch = PodWatch::start(&env, "app=web", 5);
    let out = env.ok(&[
        "kruise",
        "migrate",
        "CloneSet",
        "--from",
        "Deployment",
        "--src-name",
        "web",
        "--dst-name",
        "web-cs",
        "--max-surge",
        "1",
        "--timeout-seconds",
        "120",
    ]);
    eprintln!("{out}");
    assert!(
        out.ends_with("Successfully migrated 5 replicas from Deployment/web to CloneSet/web-cs\n"),
        "{out}"
    );
    assert!(
        out.contains(
            "Migration progress: Deployment/web scale in 5, CloneSet/web-cs scale out 5\n"
        ),
        "{out}"
    );
    assert_eq!(get("deployment", "web")["spec"]["replicas"], 0);
    wait_until("five available CloneSet pods and no Deployment pod", || {
        let pods = env.json(&["get", "pods", "-l", "app=web"]);
        let items = pods["items"].as_array().cloned().unwrap_or_default();
        get("cloneset", "web-cs")["status"]["availableReplicas"] == 5
            && items.len() == 5
            && items.iter().all(|p| p["metadata"]["ownerReferences"][0]["kind"] == "CloneSet")
    });
    let text = watch.stop();
    assert!(text.matches("\"DELETED\"").count() >= 5, "the Deployment's pods went away");
    let fewest = fewest_ready(&text, 5);
    eprintln!("fewest ready pods during the migration: {fewest}");
    assert!(fewest >= 4, "never fewer than four ready pods: {fewest}");
}

/// `kubectl kruise --help` lists every command (an insta snapshot of what kubectl prints).
#[test]
fn help_lists_the_commands() {
    let env = Env::new();
    let help = env.ok(&["kruise", "--help"]);
    for command in ["rollout", "scaledown", "migrate", "plan", "validate", "set", "expose", "scale"]
    {
        assert!(help.contains(&format!("\n  {command} ")), "{command} in\n{help}");
    }
    insta::assert_snapshot!("help", help);
    insta::assert_snapshot!("set_help", env.ok(&["kruise", "set", "--help"]));
}

/// `object` as the manager's webhooks default it (`kruise validate -o json`), for tests whose
/// manager runs its controllers only.
fn defaulted(env: &Env, object: &Value) -> Value {
    let out =
        env.kubectl(&["kruise", "validate", "-f", "-", "-o", "json"], Some(&object.to_string()));
    assert!(out.ok, "{}", out.stderr);
    let list: Value = serde_json::from_str(&out.stdout).expect("JSON");
    list["items"][0].clone()
}

/// `rollout undo` against the manager: a CloneSet updated in place to v2 is rolled back to
/// v1, and the manager brings the same pods back in place (their UIDs never change).
#[test]
fn rollout_undo_brings_a_cloneset_back_in_place() {
    let env = Env::new();
    let _manager = start_manager(&env);
    let web = |image: &str| {
        let mut set = cloneset(image, 0);
        set["spec"]["updateStrategy"] = json!({"rollingUpdate": {
            "maxUnavailable": 3, "podUpdatePolicy": "InPlaceIfPossible"}});
        defaulted(&env, &set)
    };
    let settled_on = |image: &str| {
        let set = env.json(&["get", "cloneset", "web"]);
        let pods = env.json(&["get", "pods", "-l", "app=web"]);
        let items = pods["items"].as_array().cloned().unwrap_or_default();
        set["status"]["observedGeneration"] == set["metadata"]["generation"]
            && set["status"]["updatedReadyReplicas"] == 3
            && items.len() == 3
            && items.iter().all(|p| p["spec"]["containers"][0]["image"] == image)
    };
    let uids = || -> std::collections::BTreeSet<String> {
        env.json(&["get", "pods", "-l", "app=web"])["items"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|p| p["metadata"]["uid"].as_str().map(str::to_owned))
            .collect()
    };
    env.apply(&web("registry.example/web:v1"));
    wait_until("three pods on v1", || settled_on("registry.example/web:v1"));
    let first = uids();
    env.apply(&web("registry.example/web:v2"));
    wait_until("three pods updated in place to v2", || settled_on("registry.example/web:v2"));
    assert_eq!(uids(), first, "updated in place");
    let history = env.ok(&["kruise", "rollout", "history", "cloneset/web"]);
    assert_eq!(history.lines().filter(|l| l.starts_with(['1', '2'])).count(), 2, "{history}");
    assert_eq!(
        env.ok(&["kruise", "rollout", "undo", "cloneset/web"]),
        "cloneset.apps.kruise.io/web rolled back\n"
    );
    wait_until("three pods back on v1", || settled_on("registry.example/web:v1"));
    assert_eq!(uids(), first, "rolled back in place: the same pods");
}

/// `validate` on every manifest of upstream's manuals (`../shared/upstream/examples`), each
/// given a name where the manual's snippet has none, with the gates that the kinds need: the
/// complete manifests are valid, and the snippets (placeholders such as `...` or
/// `Adaptive | Fixed`, a SidecarSet without a selector or containers, a probe without a
/// condition or a marker) are refused with the webhook's message. An insta snapshot holds
/// every verdict.
#[test]
fn validate_accepts_the_manuals_manifests_and_refuses_their_snippets() {
    let dir =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../../shared/upstream/examples");
    let mut files: Vec<_> = std::fs::read_dir(&dir)
        .expect("the upstream examples")
        .filter_map(Result::ok)
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|e| e == "yaml"))
        .collect();
    files.sort();
    assert!(files.len() > 50, "{} examples", files.len());
    let plugin = env!("CARGO_BIN_EXE_kubectl-kruise");
    let mut verdicts = String::new();
    let mut valid = 0;
    for file in &files {
        let text = std::fs::read_to_string(file).expect("readable");
        let mut docs = Vec::new();
        for doc in serde_yaml::Deserializer::from_str(&text) {
            let Ok(mut value) = <Value as serde::Deserialize>::deserialize(doc) else { continue };
            if value.is_object() && value["metadata"]["name"].is_null() {
                if !value["metadata"].is_object() {
                    value["metadata"] = json!({});
                }
                value["metadata"]["name"] = json!("example");
            }
            docs.push(serde_yaml::to_string(&value).expect("YAML"));
        }
        let mut child = Command::new(plugin)
            .args(["validate", "-f", "-", "--feature-gates", "ResourceDistributionGate=true"])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("the plugin runs");
        {
            use std::io::Write as _;
            child
                .stdin
                .take()
                .expect("stdin")
                .write_all(docs.join("---\n").as_bytes())
                .expect("written");
        }
        let out = child.wait_with_output().expect("output");
        let name = file.file_name().and_then(|n| n.to_str()).unwrap_or_default();
        let first_error =
            String::from_utf8_lossy(&out.stderr).lines().next().unwrap_or_default().to_owned();
        if out.status.success() {
            valid += 1;
            verdicts.push_str(&format!("{name}: valid\n"));
        } else {
            assert!(
                first_error.contains("admission webhook") || first_error.contains("Required value"),
                "{name}: {first_error}"
            );
            verdicts.push_str(&format!("{name}: {first_error}\n"));
        }
    }
    assert!(valid >= 20, "{valid} valid:\n{verdicts}");
    insta::assert_snapshot!("upstream_examples", verdicts);
}
