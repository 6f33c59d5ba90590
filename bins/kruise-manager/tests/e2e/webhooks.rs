//! Admission and conversion webhooks through the API server, driven by the real kubectl:
//! CloneSet validation and defaulting, v1alpha1 <-> v1beta1 conversion, deletion protection,
//! and what happens to pod creation while the manager is down.

use crate::common;

use std::time::Duration;

use common::{Kubectl, Playground, Proc, SimCluster, manager_command, wait_for};
use serde_json::{Value, json};

fn cloneset(api_version: &str, name: &str, spec: Value) -> String {
    json!({
        "apiVersion": api_version,
        "kind": "CloneSet",
        "metadata": {"name": name},
        "spec": spec
    })
    .to_string()
}

fn simple_spec(app: &str, template_app: &str) -> Value {
    json!({
        "replicas": 2,
        "selector": {"matchLabels": {"app": app}},
        "template": {
            "metadata": {"labels": {"app": template_app}},
            "spec": {"containers": [{"name": "main", "image": "registry.example/app:v1"}]}
        }
    })
}

#[test]
fn cloneset_admission_conversion_and_deletion_protection_on_the_playground() {
    let pg = Playground::start(2, &["--feature-gates", "ResourcesDeletionProtection=true"]);
    let k = &pg.kubectl;

    // An invalid CloneSet is refused, naming the field.
    let bad = cloneset("apps.kruise.io/v1beta1", "bad", simple_spec("web", "other"));
    let out = k.run_with(&["create", "-f", "-"], Some(&bad));
    assert!(!out.ok, "a selector that does not match the template must be refused");
    assert!(
        out.stderr.contains(r#"admission webhook "vcloneset.kb.io" denied the request"#)
            && out.stderr.contains("spec.template.metadata.labels"),
        "{}",
        out.stderr
    );
    let mut partition = simple_spec("web", "web");
    partition["updateStrategy"] = json!({"rollingUpdate": {"partition": -1}});
    let out = k.run_with(
        &["create", "-f", "-"],
        Some(&cloneset("apps.kruise.io/v1beta1", "bad", partition)),
    );
    assert!(!out.ok);
    assert!(out.stderr.contains("spec.updateStrategy.rollingUpdate.partition"), "{}", out.stderr);

    // Defaulting fills in upstream's defaults, template included.
    k.ok_stdin(
        &["create", "-f", "-"],
        &cloneset("apps.kruise.io/v1beta1", "web", simple_spec("web", "web")),
    );
    let web = k.json(&["get", "clonesets.v1beta1.apps.kruise.io", "web"]);
    let container = &web["spec"]["template"]["spec"]["containers"][0];
    assert_eq!(container["terminationMessagePath"], "/dev/termination-log", "{web}");
    assert_eq!(web["spec"]["template"]["spec"]["restartPolicy"], "Always", "{web}");
    assert_eq!(web["spec"]["template"]["spec"]["terminationGracePeriodSeconds"], 30, "{web}");

    // Written as v1alpha1, read as v1beta1 (and back).
    let mut alpha_spec = simple_spec("legacy", "legacy");
    alpha_spec["updateStrategy"] =
        json!({"type": "InPlaceIfPossible", "maxUnavailable": "40%", "partition": 1});
    k.ok_stdin(&["create", "-f", "-"], &cloneset("apps.kruise.io/v1alpha1", "legacy", alpha_spec));
    let beta = k.json(&["get", "clonesets.v1beta1.apps.kruise.io", "legacy"]);
    let rolling = &beta["spec"]["updateStrategy"]["rollingUpdate"];
    assert_eq!(beta["apiVersion"], "apps.kruise.io/v1beta1");
    assert_eq!(rolling["maxUnavailable"], "40%", "{beta}");
    assert_eq!(rolling["podUpdatePolicy"], "InPlaceIfPossible", "{beta}");
    assert_eq!(rolling["partition"], 1, "{beta}");
    let alpha = k.json(&["get", "clonesets.v1alpha1.apps.kruise.io", "web"]);
    assert_eq!(alpha["apiVersion"], "apps.kruise.io/v1alpha1");
    assert_eq!(alpha["spec"]["updateStrategy"]["maxUnavailable"], "20%", "{alpha}");
    wait_for("both CloneSets ready", Duration::from_secs(60), || {
        let ready = |name: &str| {
            k.json(&["get", "clone", name])["status"]["readyReplicas"].as_i64() == Some(2)
        };
        (ready("web") && ready("legacy")).then_some(())
    });

    // A namespace protected with Cascading cannot go while it has running pods.
    k.ok_stdin(
        &["create", "-f", "-"],
        &json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {
            "name": "prod", "labels": {"policy.kruise.io/delete-protection": "Cascading"}}})
        .to_string(),
    );
    k.ok_stdin(
        &["create", "-n", "prod", "-f", "-"],
        &cloneset("apps.kruise.io/v1beta1", "api", simple_spec("api", "api")),
    );
    wait_for("pods in prod", Duration::from_secs(60), || {
        let pods = k.ok(&["get", "pods", "-n", "prod", "--no-headers"]);
        (pods.lines().filter(|l| l.contains("Running")).count() == 2).then_some(())
    });
    let out = k.run_with(&["delete", "namespace", "prod", "--wait=false"], None);
    assert!(!out.ok, "a protected namespace with pods must not be deleted");
    assert!(
        out.stderr.contains(r#"admission webhook "vnamespace.kb.io" denied the request"#)
            && out.stderr.contains("active pods"),
        "{}",
        out.stderr
    );
    // A protected CloneSet with replicas cannot be deleted either.
    k.ok(&["label", "clone", "web", "policy.kruise.io/delete-protection=Cascading"]);
    let out = k.run_with(&["delete", "clone", "web", "--wait=false"], None);
    assert!(!out.ok && out.stderr.contains("vcloneset.kb.io"), "{}", out.stderr);
    k.ok(&["scale", "clone", "web", "--replicas=0"]);
    k.ok(&["delete", "clone", "web", "--wait=false"]);
    // Always: an Advanced StatefulSet cannot be deleted even with no replicas.
    let asts = json!({
        "apiVersion": "apps.kruise.io/v1beta1", "kind": "StatefulSet",
        "metadata": {"name": "db", "labels": {"policy.kruise.io/delete-protection": "Always"}},
        "spec": {
            "replicas": 0,
            "selector": {"matchLabels": {"app": "db"}},
            "template": {"metadata": {"labels": {"app": "db"}},
                         "spec": {"containers": [{"name": "db", "image": "registry.example/db:v1"}]}}
        }
    });
    k.ok_stdin(&["create", "-f", "-"], &asts.to_string());
    let out = k.run_with(&["delete", "statefulsets.apps.kruise.io", "db", "--wait=false"], None);
    assert!(!out.ok && out.stderr.contains("vstatefulset.kb.io"), "{}", out.stderr);
    k.ok(&["label", "statefulsets.apps.kruise.io", "db", "policy.kruise.io/delete-protection-"]);
    k.ok(&["delete", "statefulsets.apps.kruise.io", "db", "--wait=false"]);
    // Services (and Ingresses) honour Always: refused while labelled, deleted once not.
    k.ok(&["create", "service", "clusterip", "front", "--tcp=80:80"]);
    k.ok(&["label", "service", "front", "policy.kruise.io/delete-protection=Always"]);
    let out = k.run_with(&["delete", "service", "front", "--wait=false"], None);
    assert!(!out.ok && out.stderr.contains(r#""vservice.kb.io" denied"#), "{}", out.stderr);
    k.ok(&["label", "service", "front", "policy.kruise.io/delete-protection-"]);
    k.ok(&["delete", "service", "front", "--wait=false"]);

    // Once its pods are gone, the namespace may go.
    k.ok(&["scale", "clone", "api", "-n", "prod", "--replicas=0"]);
    wait_for("prod's pods gone", Duration::from_secs(60), || {
        let pods = k.ok(&["get", "pods", "-n", "prod", "--no-headers", "--ignore-not-found"]);
        pods.trim().is_empty().then_some(())
    });
    k.ok(&["delete", "namespace", "prod", "--wait=false"]);
}

fn pod(name: &str) -> String {
    json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name},
           "spec": {"containers": [{"name": "main", "image": "registry.example/p:v1"}]}})
    .to_string()
}

/// The mutating webhook configuration the manager registers.
const MUTATING_CONFIGURATION: &str = "kruise-mutating-webhook-configuration";

fn start_manager(cluster: &SimCluster, extra: &[&str]) -> Proc {
    let mut args = vec!["--enable-leader-election=false", "--metrics-addr", "0"];
    args.extend(["--health-probe-addr", "0", "--webhook-host", "127.0.0.1", "--webhook-port", "0"]);
    args.extend(extra);
    cluster.run_manager("manager.log", &args)
}

#[test]
fn pods_are_created_while_the_manager_is_down_as_the_failure_policy_says() {
    let cluster = SimCluster::start(kruise_sim::Config::default().with_kruise_crds());
    let (dir, kubeconfig, k) = (cluster.dir.path(), &cluster.kubeconfig, &cluster.kubectl);
    for ns in ["kruise-system", "kube-system"] {
        let namespace = json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}});
        let out = k.run_with(&["create", "-f", "-"], Some(&namespace.to_string()));
        assert!(out.ok || out.stderr.contains("AlreadyExists"), "{}", out.stderr);
    }
    // A field of the pod mutating webhook (`mpod.kb.io`, the first) as registered.
    let mpod_field = |k: &Kubectl, field: &str| {
        let jsonpath = format!("jsonpath={{.webhooks[0].{field}}}");
        let args = ["get", "mutatingwebhookconfiguration", MUTATING_CONFIGURATION, "-o", &jsonpath];
        let out = k.run_with(&args, None);
        if out.ok { out.stdout } else { String::new() }
    };
    let registered = |k: &Kubectl| {
        wait_for("the webhook configurations", Duration::from_secs(60), || {
            let policy = mpod_field(k, "failurePolicy");
            (!policy.is_empty()).then_some(policy)
        })
    };

    // The catch-all scope: every pod goes to `mpod.kb.io`, which fails open by default.
    let mut manager = start_manager(&cluster, &["--pod-webhook-scope=all"]);
    assert_eq!(registered(k), "Ignore");
    k.ok_stdin(&["create", "-f", "-"], &pod("with-manager"));
    manager.kill();
    k.ok_stdin(&["create", "-f", "-"], &pod("manager-down"));
    k.ok_stdin(&["create", "-n", "kube-system", "-f", "-"], &pod("system-1"));

    // Fail: pods outside the system namespaces wait for the manager; kube-system never does.
    let mut manager = start_manager(
        &cluster,
        &["--pod-webhook-scope=all", "--pod-webhook-failure-policy", "Fail"],
    );
    wait_for("the Fail policy registered", Duration::from_secs(60), || {
        (registered(k) == "Fail").then_some(())
    });
    k.ok_stdin(&["create", "-f", "-"], &pod("with-manager-2"));
    manager.kill();
    let out = k.run_with(&["create", "-f", "-"], Some(&pod("refused")));
    assert!(!out.ok, "with failurePolicy Fail and no manager, the pod must be refused");
    assert!(out.stderr.contains("mpod.kb.io"), "{}", out.stderr);
    k.ok_stdin(&["create", "-n", "kube-system", "-f", "-"], &pod("system-2"));

    // Fail, narrowed to labelled pods: with the manager down, only those wait for it.
    let mut manager = start_manager(
        &cluster,
        &[
            "--pod-webhook-scope=all",
            "--pod-webhook-failure-policy",
            "Fail",
            "--pod-webhook-object-selector",
            r#"{"matchLabels": {"sidecar-injection": "enabled"}}"#,
        ],
    );
    wait_for("the object selector registered", Duration::from_secs(60), || {
        mpod_field(k, "objectSelector.matchLabels").contains("sidecar-injection").then_some(())
    });
    manager.kill();
    k.ok_stdin(&["create", "-f", "-"], &pod("unlabelled"));
    let labelled = pod("labelled").replace(
        r#""name":"labelled""#,
        r#""name":"labelled","labels":{"sidecar-injection":"enabled"}"#,
    );
    assert!(labelled.contains("sidecar-injection"), "{labelled}");
    let out = k.run_with(&["create", "-f", "-"], Some(&labelled));
    assert!(!out.ok, "a selected pod waits for the manager under Fail");
    assert!(out.stderr.contains("mpod.kb.io"), "{}", out.stderr);

    // Bad flag values are refused before anything is registered, naming the flag (and the
    // selector's field).
    for (i, (flag, value, expected)) in [
        ("--pod-webhook-object-selector", r#"{"matchLabels": 3}"#, "matchLabels"),
        ("--pod-webhook-failure-policy", "Sometimes", "Sometimes"),
        ("--pod-webhook-scope", "some", "some"),
    ]
    .into_iter()
    .enumerate()
    {
        let log_name = format!("bad-{i}.log");
        let (mut cmd, _) = manager_command(dir, &log_name);
        let status =
            cmd.args(["run", flag, value, "--kubeconfig"]).arg(kubeconfig).status().expect("runs");
        assert!(!status.success(), "{flag} {value}");
        let log = std::fs::read_to_string(dir.join(&log_name)).unwrap_or_default();
        assert!(log.contains(&format!("{flag}: ")) && log.contains(expected), "{log}");
    }
}

/// The entries of the generated pod webhook configuration `kruise-pod-webhooks-0`: name,
/// objectSelector and namespaceSelector of each (`None` while it does not exist).
/// The generated entries of objects that select pods by labels: the one entry with a match
/// condition (container launch priority's, always there) is left out.
fn generated_entries(k: &Kubectl) -> Option<Vec<(String, Value, Value)>> {
    let args = ["get", "mutatingwebhookconfiguration", "kruise-pod-webhooks-0", "-o", "json"];
    let out = k.run_with(&args, None);
    if !out.ok {
        return None;
    }
    let config: Value = serde_json::from_str(&out.stdout).ok()?;
    let webhooks = config["webhooks"].as_array().cloned().unwrap_or_default();
    Some(
        webhooks
            .iter()
            .filter(|w| w.get("matchConditions").is_none())
            .map(|w| {
                let name = w["name"].as_str().unwrap_or("").to_owned();
                (name, w["objectSelector"].clone(), w["namespaceSelector"].clone())
            })
            .collect(),
    )
}

fn labelled_pod(name: &str, app: &str) -> String {
    json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "labels": {"app": app}},
           "spec": {"containers": [{"name": "main", "image": "registry.example/p:v1"}]}})
    .to_string()
}

#[test]
fn only_pods_an_object_selects_reach_the_pod_webhook_and_those_never_without_it() {
    let cluster = SimCluster::start(kruise_sim::Config::default().with_kruise_crds());
    let k = &cluster.kubectl;
    for ns in ["kruise-system", "kube-system", "shop"] {
        let namespace = json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}});
        let out = k.run_with(&["create", "-f", "-"], Some(&namespace.to_string()));
        assert!(out.ok || out.stderr.contains("AlreadyExists"), "{}", out.stderr);
    }
    // The default scope: with nothing selecting pods, the generated configuration holds only
    // launch priority's entry (every pod, narrowed by its CEL match condition), and the
    // catch-all is gone from the static one.
    let mut manager = start_manager(&cluster, &[]);
    wait_for("the empty generated configuration", Duration::from_secs(60), || {
        generated_entries(k).filter(Vec::is_empty)
    });
    common::wait_for_catch_all_pod_webhook_removed(k);

    // A SidecarSet selecting app=web and a budget selecting app=db in `shop` give two
    // entries, with their selectors, both failing closed.
    let sidecarset = json!({
        "apiVersion": "apps.kruise.io/v1beta1", "kind": "SidecarSet",
        "metadata": {"name": "log-agent"},
        "spec": {"selector": {"matchLabels": {"app": "web"}},
                 "containers": [{"name": "log-agent", "image": "registry.example/log:v1"}]}
    });
    k.ok_stdin(&["apply", "-f", "-"], &sidecarset.to_string());
    let budget = json!({
        "apiVersion": "policy.kruise.io/v1alpha1", "kind": "PodUnavailableBudget",
        "metadata": {"name": "db", "namespace": "shop"},
        "spec": {"selector": {"matchLabels": {"app": "db"}}, "maxUnavailable": 1}
    });
    k.ok_stdin(&["apply", "-f", "-"], &budget.to_string());
    let entries = wait_for("two generated entries", Duration::from_secs(60), || {
        generated_entries(k).filter(|e| e.len() == 2)
    });
    let web = entries
        .iter()
        .find(|(_, object, _)| object == &json!({"matchLabels": {"app": "web"}}))
        .unwrap_or_else(|| panic!("no entry for app=web: {entries:?}"));
    assert!(web.0.ends_with(".mpod.kb.io"), "{entries:?}");
    let excluded = &web.2["matchExpressions"][0];
    assert_eq!(excluded["operator"], "NotIn", "{entries:?}");
    assert_eq!(excluded["values"], json!(["kruise-system", "kube-system"]), "{entries:?}");
    let db = entries
        .iter()
        .find(|(_, object, _)| object == &json!({"matchLabels": {"app": "db"}}))
        .unwrap_or_else(|| panic!("no entry for app=db: {entries:?}"));
    assert!(db.2.to_string().contains("\"shop\""), "{entries:?}");
    let policies = k.ok(&[
        "get",
        "mutatingwebhookconfiguration",
        "kruise-pod-webhooks-0",
        "-o",
        "jsonpath={.webhooks[*].failurePolicy}",
    ]);
    assert_eq!(policies.trim(), "Fail Fail Fail", "launch priority's entry and these two");

    // With the manager: the selected pod gets its sidecar, the other is left alone.
    k.ok_stdin(&["create", "-f", "-"], &labelled_pod("web-1", "web"));
    k.ok_stdin(&["create", "-f", "-"], &labelled_pod("other-1", "other"));
    let containers = |name: &str| {
        k.ok(&["get", "pod", name, "-o", "jsonpath={.spec.containers[*].name}"]).trim().to_owned()
    };
    assert_eq!(containers("web-1"), "log-agent main");
    assert_eq!(containers("other-1"), "main");

    // Without it: pods no object selects are created at once; selected ones are refused,
    // naming their entry, rather than created without their sidecar or budget label.
    manager.kill();
    k.ok_stdin(&["create", "-f", "-"], &labelled_pod("other-2", "other"));
    k.ok_stdin(&["create", "-n", "shop", "-f", "-"], &labelled_pod("other-in-shop", "other"));
    let out = k.run_with(&["create", "-f", "-"], Some(&labelled_pod("web-2", "web")));
    assert!(!out.ok, "a selected pod must wait for the manager");
    assert!(out.stderr.contains(&web.0), "{}", out.stderr);
    let out = k.run_with(&["create", "-n", "shop", "-f", "-"], Some(&labelled_pod("db-1", "db")));
    assert!(!out.ok, "a budget's pod must wait for the manager");
    assert!(out.stderr.contains(&db.0), "{}", out.stderr);

    // Back up, and the SidecarSet deleted: its entry goes, so app=web pods no longer wait.
    let mut manager = start_manager(&cluster, &[]);
    k.ok(&["delete", "sidecarset", "log-agent"]);
    wait_for("the SidecarSet's entry removed", Duration::from_secs(60), || {
        generated_entries(k).filter(|e| e.len() == 1 && e[0].0 == db.0)
    });
    assert!(
        !common::static_mutating_webhook_names(k).contains("mpod.kb.io"),
        "the catch-all stays out after a restart"
    );
    manager.kill();
    k.ok_stdin(&["create", "-f", "-"], &labelled_pod("web-3", "web"));
    assert_eq!(containers("web-3"), "main");
}

fn budget(api_version: &str, name: &str, annotations: Value, spec: Value) -> String {
    json!({
        "apiVersion": api_version,
        "kind": "PodUnavailableBudget",
        "metadata": {"name": name, "annotations": annotations},
        "spec": spec
    })
    .to_string()
}

#[test]
fn pod_unavailable_budgets_are_validated_by_the_webhook() {
    let cluster = SimCluster::start(kruise_sim::Config::default().with_kruise_crds());
    let k = &cluster.kubectl;
    let namespace =
        json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "kruise-system"}});
    let out = k.run_with(&["create", "-f", "-"], Some(&namespace.to_string()));
    assert!(out.ok || out.stderr.contains("AlreadyExists"), "{}", out.stderr);
    let _manager = start_manager(&cluster, &[]);
    wait_for("the PodUnavailableBudget webhook registered", Duration::from_secs(60), || {
        let names = k.run_with(
            &[
                "get",
                "validatingwebhookconfiguration",
                "kruise-validating-webhook-configuration",
                "-o",
                "jsonpath={.webhooks[*].name}",
            ],
            None,
        );
        names.stdout.contains("vpodunavailablebudget.kb.io").then_some(())
    });
    let beta = "policy.kruise.io/v1beta1";
    let denied = |out: &common::Out, needle: &str| {
        assert!(!out.ok, "must be refused");
        assert!(
            out.stderr
                .contains(r#"admission webhook "vpodunavailablebudget.kb.io" denied the request"#)
                && out.stderr.contains(needle),
            "{}",
            out.stderr
        );
    };

    // Both a selector and a target reference: refused, naming the fields.
    let both = json!({
        "selector": {"matchLabels": {"app": "web"}},
        "targetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web"},
        "maxUnavailable": "20%"
    });
    let out = k.run_with(&["apply", "-f", "-"], Some(&budget(beta, "bad", json!({}), both)));
    denied(
        &out,
        "spec.selector, targetRef: Required value: selector and targetRef are mutually exclusive",
    );
    let over = json!({"selector": {"matchLabels": {"app": "web"}}, "minAvailable": "120%"});
    let out = k.run_with(&["apply", "-f", "-"], Some(&budget(beta, "bad", json!({}), over)));
    denied(&out, "spec.minAvailable: Invalid value");

    // A valid budget is accepted; a second one over the same pods is not.
    let web = json!({"selector": {"matchLabels": {"app": "web"}}, "maxUnavailable": "20%"});
    k.ok_stdin(&["apply", "-f", "-"], &budget(beta, "web", json!({}), web.clone()));
    let out = k.run_with(&["apply", "-f", "-"], Some(&budget(beta, "web-2", json!({}), web)));
    denied(&out, "pub.spec.selector is in conflict with other PodUnavailableBudget web");

    // Its selector cannot change.
    let moved = json!({"selector": {"matchLabels": {"app": "api"}}, "maxUnavailable": "20%"});
    let out = k.run_with(&["apply", "-f", "-"], Some(&budget(beta, "web", json!({}), moved)));
    denied(&out, "selector and targetRef cannot be modified");

    // v1alpha1: the annotations are checked.
    let alpha = "policy.kruise.io/v1alpha1";
    let target = json!({
        "targetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "db"},
        "minAvailable": 1
    });
    let bogus = json!({"kruise.io/pub-protect-operations": "DELETE,BOGUS"});
    let out = k.run_with(&["apply", "-f", "-"], Some(&budget(alpha, "db", bogus, target.clone())));
    denied(&out, "metadata.annotations[kruise.io/pub-protect-operations]");
    let fine = json!({"kruise.io/pub-protect-operations": "DELETE,EVICT"});
    k.ok_stdin(&["apply", "-f", "-"], &budget(alpha, "db", fine, target));
    let db = k.json(&["get", "podunavailablebudgets.v1beta1.policy.kruise.io", "db"]);
    assert_eq!(db["spec"]["protectOperations"], json!(["DELETE", "EVICT"]), "{db}");
}
