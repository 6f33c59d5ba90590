//! Switches that cannot do what upstream's do yet are refused by name: at start for a gate
//! named on, and at admission for the objects of a feature that is off.

use std::process::Command;

use crate::common::Playground;

/// `kruise-manager run` with `args`: its exit status and stderr. It must fail before it
/// reaches the API server (the kubeconfig names none).
fn run_manager(args: &[&str]) -> (bool, String) {
    run_manager_with_env(args, &[])
}

#[test]
fn a_gate_whose_feature_is_not_built_is_refused_at_start_by_name() {
    let gate = "CloneSetEventHandlerOptimization";
    let (ok, stderr) = run_manager(&["--feature-gates", &format!("{gate}=true")]);
    assert!(!ok, "{gate}=true was accepted");
    assert!(
        stderr.contains(&format!("feature gate {gate} cannot be turned on"))
            && stderr.contains("filter of pod updates is not built"),
        "{stderr}"
    );
}

/// `EnableExternalCerts`: the manager serves the certificates another writer keeps in the
/// Secret, and never writes it; without the Secret it refuses to start, naming it.
#[test]
fn external_certificates_are_read_and_never_written() {
    let cluster = crate::pub_budget::cluster_with_nodes(0);
    let k = &cluster.kubectl;
    let get_secret = || {
        k.run_with(
            &["get", "secret", "kruise-webhook-certs", "-n", "kruise-system", "-o", "json"],
            None,
        )
    };

    // Without the Secret: refused at start, naming it.
    let mut manager = cluster.run_manager(
        "external-missing.log",
        &[
            "--enable-leader-election=false",
            "--metrics-addr",
            "0",
            "--health-probe-addr",
            "0",
            "--webhook-host",
            "127.0.0.1",
            "--webhook-port",
            "0",
            "--feature-gates",
            "EnableExternalCerts=true",
        ],
    );
    let status = manager.child.wait().expect("the manager exits");
    assert!(!status.success());
    let log = manager.log_text();
    assert!(
        log.contains(
            "EnableExternalCerts: Secret kruise-system/kruise-webhook-certs does not exist"
        ),
        "{log}"
    );
    assert!(!get_secret().ok, "the manager wrote the Secret");

    // cert-manager's layout: ca.crt, tls.crt, tls.key (issued here by a manager without the
    // gate, then copied under cert-manager's keys into a Secret of another writer).
    let (issuer, _) = crate::pub_budget::start_manager(&cluster, &[]);
    drop(issuer);
    let issued: serde_json::Value = serde_json::from_str(&get_secret().stdout).expect("secret");
    let data = &issued["data"];
    let external = serde_json::json!({
        "apiVersion": "v1", "kind": "Secret", "type": "kubernetes.io/tls",
        "metadata": {"name": "kruise-webhook-certs", "namespace": "kruise-system"},
        "data": {"ca.crt": data["ca-cert.pem"], "tls.crt": data["tls.crt"], "tls.key": data["tls.key"]},
    });
    k.ok(&["delete", "secret", "kruise-webhook-certs", "-n", "kruise-system"]);
    k.ok_stdin(&["create", "-f", "-"], &external.to_string());
    let before: serde_json::Value = serde_json::from_str(&get_secret().stdout).expect("secret");

    let (_manager, _) = crate::pub_budget::start_manager(
        &cluster,
        &["--feature-gates", "EnableExternalCerts=true"],
    );
    // The webhooks answer over the external certificate: a CloneSet is defaulted (once this
    // manager has registered its own port).
    let yaml = crate::common::cloneset_yaml("web", 0, "");
    crate::common::wait_for("the webhook to answer", std::time::Duration::from_secs(60), || {
        k.run_with(&["apply", "-f", "-"], Some(&yaml)).ok.then_some(())
    });
    let cs = k.json(&["get", "cloneset", "web"]);
    assert_eq!(cs["spec"]["revisionHistoryLimit"], 10, "defaulted by the webhook: {cs}");
    let after: serde_json::Value = serde_json::from_str(&get_secret().stdout).expect("secret");
    assert_eq!(
        before["metadata"]["resourceVersion"], after["metadata"]["resourceVersion"],
        "the Secret was written"
    );
    assert_eq!(after["data"].as_object().map(|d| d.len()), Some(3));
}

/// `kruise-manager run` with `args` and `envs`: its exit status and stderr (it must fail
/// before it reaches the API server: the kubeconfig names none).
fn run_manager_with_env(args: &[&str], envs: &[(&str, &str)]) -> (bool, String) {
    let dir = tempfile::tempdir().expect("tempdir");
    let kubeconfig = dir.path().join("kubeconfig");
    std::fs::write(&kubeconfig, "apiVersion: v1\nkind: Config\n").expect("kubeconfig");
    let out = Command::new(env!("CARGO_BIN_EXE_kruise-manager"))
        .arg("run")
        .arg("--kubeconfig")
        .arg(&kubeconfig)
        .args(args)
        .envs(envs.iter().copied())
        .output()
        .expect("kruise-manager runs");
    (out.status.success(), String::from_utf8_lossy(&out.stderr).into_owned())
}

#[test]
fn upstream_flags_and_environment_that_cannot_be_honoured_are_refused_by_name() {
    for (args, envs, named) in [
        (&["--enable-pprof=true"][..], &[][..], "--enable-pprof=true: pprof is Go's profiler"),
        (
            &["--allow-privileged=false"][..],
            &[][..],
            "--allow-privileged=false: refusing privileged",
        ),
        (
            &["--leader-election-resource-lock=configmaps"][..],
            &[][..],
            "--leader-election-resource-lock: \"configmaps\"",
        ),
        (&["--logging-format=xml"][..], &[][..], "--logging-format: \"xml\""),
        (&["--sync-period=often"][..], &[][..], "--sync-period: \"often\""),
        (&[][..], &[("WEBHOOK_CERT_WRITER", "fs")][..], "WEBHOOK_CERT_WRITER: \"fs\""),
        (&[][..], &[("WEBHOOK_CERT_DIR", "/tmp/certs")][..], "WEBHOOK_CERT_DIR: kruise-rs keeps"),
        (&[][..], &[("CERTS_RENEW_BEFORE", "7x")][..], "CERTS_RENEW_BEFORE: \"7x\""),
    ] {
        let (ok, stderr) = run_manager_with_env(args, envs);
        assert!(!ok, "{args:?} {envs:?} was accepted");
        assert!(stderr.contains(named), "{args:?} {envs:?}: {stderr}");
    }
}

fn reconciles(metrics_port: u16) -> u64 {
    let (_, body) =
        crate::leader_failover::http_get(metrics_port, "/metrics").expect("metrics answer");
    body.lines()
        .filter(|l| {
            l.starts_with("controller_runtime_reconcile_total{controller=\"cloneset-controller\"")
        })
        .filter_map(|l| l.rsplit(' ').next()?.parse::<f64>().ok())
        .sum::<f64>() as u64
}

#[test]
fn sync_period_reconciles_again_and_logs_follow_v_and_the_format() {
    let cluster = crate::pub_budget::cluster_with_nodes(0);
    let k = &cluster.kubectl;
    k.ok_stdin(&["apply", "-f", "-"], &crate::common::cloneset_yaml("idle", 0, ""));
    let (_manager, metrics) = crate::pub_budget::start_manager(
        &cluster,
        &["--sync-period=1s", "-v=4", "--logging-format=json"],
    );
    crate::common::wait_for("a first reconcile", std::time::Duration::from_secs(30), || {
        (reconciles(metrics) >= 1).then_some(())
    });
    let first = reconciles(metrics);
    // Nothing changes, and the CloneSet is reconciled again every second.
    crate::common::wait_for(
        "reconciles from the sync period",
        std::time::Duration::from_secs(30),
        || (reconciles(metrics) >= first + 2).then_some(()),
    );
    let log = _manager.log_text();
    let line = log.lines().find(|l| l.contains("DEBUG")).expect("-v=4 logs at debug");
    assert!(serde_json::from_str::<serde_json::Value>(line).is_ok(), "not JSON: {line}");
}

#[test]
fn custom_resource_enable_without_sidecarset_registers_no_pod_webhook() {
    let (ok, stderr) = run_manager_with_env(
        &["--feature-gates", "CloneSetEventHandlerOptimization=true"],
        &[("CUSTOM_RESOURCE_ENABLE", "CloneSet,StatefulSet")],
    );
    // Parsing still refuses the unbuilt gate: the legacy variable is read with the flag.
    assert!(!ok && stderr.contains("CloneSetEventHandlerOptimization"), "{stderr}");
    let cluster = crate::pub_budget::cluster_with_nodes(0);
    let k = &cluster.kubectl;
    let port = crate::leader_failover::free_port();
    let metrics = format!("127.0.0.1:{port}");
    let (mut cmd, _log) = crate::common::manager_command(cluster.dir.path(), "legacy.log");
    cmd.arg("run").arg("--kubeconfig").arg(&cluster.kubeconfig).args([
        "--enable-leader-election=false",
        "--metrics-addr",
        &metrics,
        "--health-probe-addr",
        "0",
        "--webhook-host",
        "127.0.0.1",
        "--webhook-port",
        "0",
    ]);
    cmd.env("CUSTOM_RESOURCE_ENABLE", "CloneSet,StatefulSet");
    let _manager = crate::common::Proc { child: cmd.spawn().expect("starts"), log: _log };
    let names = crate::common::wait_for(
        "the webhooks registered",
        std::time::Duration::from_secs(60),
        || {
            let out = k.run_with(
                &[
                    "get",
                    "validatingwebhookconfiguration",
                    "kruise-validating-webhook-configuration",
                    "-o",
                    "jsonpath={.webhooks[*].name}",
                ],
                None,
            );
            (out.ok && out.stdout.contains("vcloneset.kb.io")).then_some(out.stdout)
        },
    );
    assert!(!names.contains("vpod.kb.io"), "PodWebhook is off: {names}");
}

/// `--controller-cache-sync-timeout` and `--webhook-initialize-timeout`: a cache that cannot
/// load, and a webhook whose certificates cannot be written, stop the manager with an error
/// naming the flag (and the kinds not loaded).
#[test]
fn start_timeouts_stop_the_manager_by_name() {
    use kruise_sim::faults::{Fault, FaultAction};
    let cluster = crate::pub_budget::cluster_with_nodes(0);
    let lists = cluster
        .server
        .faults()
        .inject(Fault::new(FaultAction::InternalError).verb("list").resource("pods"));
    let mut manager = cluster.run_manager(
        "cache-timeout.log",
        &[
            "--enable-leader-election=false",
            "--metrics-addr",
            "0",
            "--health-probe-addr",
            "0",
            "--enable-webhook=false",
            "--controller-cache-sync-timeout=2s",
        ],
    );
    let status = manager.child.wait().expect("the manager exits");
    assert!(!status.success());
    let log = manager.log_text();
    assert!(
        log.contains("the caches did not sync within --controller-cache-sync-timeout (2s)"),
        "{log}"
    );
    assert!(log.contains("Pod"), "{log}");
    assert!(lists.count() >= 1);
    cluster.server.faults().clear();

    let slow = cluster.server.faults().inject(
        Fault::new(FaultAction::Latency(std::time::Duration::from_secs(10)))
            .verb("create")
            .resource("secrets"),
    );
    let mut manager = cluster.run_manager(
        "webhook-timeout.log",
        &[
            "--enable-leader-election=false",
            "--metrics-addr",
            "0",
            "--health-probe-addr",
            "0",
            "--webhook-host",
            "127.0.0.1",
            "--webhook-port",
            "0",
            "--webhook-initialize-timeout=1s",
        ],
    );
    let status = manager.child.wait().expect("the manager exits");
    assert!(!status.success());
    let log = manager.log_text();
    assert!(
        log.contains("the webhook did not initialize within --webhook-initialize-timeout (1s)"),
        "{log}"
    );
    assert!(slow.count() >= 1);
}

/// `EnhancedLivenessProbe`: with the gate, a Kruise workload's pod that asks for it is created
/// with its liveness probe moved into `apps.kruise.io/container-probe-context`; without the
/// gate, the same pod keeps its probe.
#[test]
fn the_enhanced_liveness_gate_moves_the_probe_only_when_on() {
    let yaml = crate::common::cloneset_yaml("live", 1, "")
        .replace(
            "      labels:\n        app: live\n",
            "      labels:\n        app: live\n      annotations:\n        apps.kruise.io/using-enhanced-liveness: \"true\"\n",
        )
        .replace(
            "        image: registry.example/live:v1\n",
            "        image: registry.example/live:v1\n        livenessProbe:\n          tcpSocket: {port: 8080}\n",
        );
    for (gates, moved) in
        [(&["--feature-gates", "EnhancedLivenessProbe=true"][..], true), (&[][..], false)]
    {
        let pg = Playground::start(1, gates);
        let k = &pg.kubectl;
        k.ok_stdin(&["apply", "-f", "-"], &yaml);
        let pod = crate::common::wait_for("the pod", std::time::Duration::from_secs(60), || {
            let list = k.json(&["get", "pods", "-l", "app=live"]);
            list["items"].as_array()?.first().cloned()
        });
        let probe = &pod["spec"]["containers"][0]["livenessProbe"];
        let context = &pod["metadata"]["annotations"]["apps.kruise.io/container-probe-context"];
        if moved {
            assert!(probe.is_null(), "the gate on moves the probe: {pod}");
            assert!(context.as_str().is_some_and(|c| c.contains("tcpSocket")), "{pod}");
        } else {
            assert!(probe.is_object(), "the gate off keeps the probe: {pod}");
            assert!(context.is_null(), "{pod}");
        }
    }
}
