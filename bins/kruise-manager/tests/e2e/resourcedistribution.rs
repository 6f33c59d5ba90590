//! ResourceDistribution on the playground, with kubectl: a Secret distributed to the
//! namespaces labelled `team=a` (the manual's v1alpha1 form, `namespaceLabelSelector`).

use std::time::{Duration, Instant};

use serde_json::Value;

use crate::common::{Kubectl, Playground, wait_for};

const DISTRIBUTION: &str = r#"
apiVersion: apps.kruise.io/v1alpha1
kind: ResourceDistribution
metadata:
  name: registry-creds
spec:
  resource:
    apiVersion: v1
    kind: Secret
    metadata:
      name: registry-creds
      labels:
        app: registry
    type: Opaque
    stringData:
      token: first
  targets:
    namespaceLabelSelector:
      matchLabels:
        team: a
"#;

/// The copy in `namespace`, if there is one.
fn copy(k: &Kubectl, namespace: &str) -> Option<Value> {
    let out = k.run_with(&["get", "secret", "registry-creds", "-n", namespace, "-o", "json"], None);
    out.ok.then(|| serde_json::from_str(&out.stdout).expect("kubectl printed JSON"))
}

/// The `token` key of a Secret's data, decoded.
pub(crate) fn token(secret: &Value) -> String {
    use base64::Engine as _;
    let encoded = secret["data"]["token"].as_str().unwrap_or_default();
    let bytes = base64::engine::general_purpose::STANDARD.decode(encoded).unwrap_or_default();
    String::from_utf8(bytes).unwrap_or_default()
}

/// Sets the distributed Secret's token in the source.
fn set_token(k: &Kubectl, value: &str) {
    let patch = serde_json::json!({"spec": {"resource": {"stringData": {"token": value}}}});
    k.ok(&[
        "patch",
        "resourcedistributions.apps.kruise.io",
        "registry-creds",
        "--type=merge",
        "-p",
        &patch.to_string(),
    ]);
}

/// Waits until the copy in each of `namespaces` carries `value`.
fn wait_for_token(k: &Kubectl, namespaces: &[&str], value: &str, timeout: Duration) {
    for ns in namespaces {
        wait_for(&format!("the new token in {ns}"), timeout, || {
            copy(k, ns).filter(|s| token(s) == value)
        });
    }
}

fn status(k: &Kubectl) -> Value {
    k.json(&["get", "resourcedistributions.apps.kruise.io", "registry-creds"])["status"].clone()
}

fn condition(status: &Value, type_: &str) -> Value {
    status["conditions"]
        .as_array()
        .and_then(|c| c.iter().find(|c| c["type"] == type_).cloned())
        .unwrap_or(Value::Null)
}

fn namespace(k: &Kubectl, name: &str, team: Option<&str>) {
    k.ok(&["create", "namespace", name]);
    if let Some(team) = team {
        k.ok(&["label", "namespace", name, &format!("team={team}")]);
    }
}

#[test]
fn a_secret_reaches_the_labelled_namespaces_and_follows_its_source() {
    let pg = Playground::start(1, &["--feature-gates", "ResourceDistributionGate=true"]);
    let k = &pg.kubectl;
    namespace(k, "a-1", Some("a"));
    namespace(k, "a-2", Some("a"));
    namespace(k, "b-1", Some("b"));

    // The webhook refuses what upstream's refuses, naming the field.
    let bad = DISTRIBUTION.replace("kind: Secret", "kind: Pod");
    let refused = k.run_with(&["apply", "-f", "-"], Some(&bad));
    assert!(!refused.ok);
    assert!(
        refused.stderr.contains(
            "spec.resource: Invalid value: null: unknown or unsupported resource GroupKind Pod"
        ),
        "{}",
        refused.stderr
    );
    let ambiguous = DISTRIBUTION.replace(
        "  targets:\n",
        "  targets:\n    includedNamespaces:\n      list: [{name: a-1}]\n    excludedNamespaces:\n      list: [{name: a-1}]\n",
    );
    let refused = k.run_with(&["apply", "-f", "-"], Some(&ambiguous));
    assert!(refused.stderr.contains("namespace [a-1] is in both"), "{}", refused.stderr);

    k.ok_stdin(&["apply", "-f", "-"], DISTRIBUTION);
    for ns in ["a-1", "a-2"] {
        let secret =
            wait_for(&format!("the copy in {ns}"), Duration::from_secs(30), || copy(k, ns));
        assert_eq!(token(&secret), "first");
        assert_eq!(secret["metadata"]["labels"]["app"], "registry");
        assert_eq!(
            secret["metadata"]["annotations"]["kruise.io/resourcedistribution.resource.from"],
            "registry-creds"
        );
        let owner = &secret["metadata"]["ownerReferences"][0];
        assert_eq!(
            (owner["kind"].as_str(), owner["controller"].as_bool()),
            (Some("ResourceDistribution"), Some(true))
        );
    }
    assert!(copy(k, "b-1").is_none(), "b-1 is not a target");
    // The webhook's dry run of the resource in the manager's namespace left nothing there.
    assert!(copy(k, "kruise-system").is_none(), "the dry run wrote the Secret");
    let settled = wait_for("the status", Duration::from_secs(30), || {
        let s = status(k);
        (s["desired"] == 2 && s["succeeded"] == 2).then_some(s)
    });
    assert_eq!(settled["failed"].as_i64().unwrap_or_default(), 0, "{settled}");
    assert_eq!(condition(&settled, "ConflictOccurred")["status"], "False");
    // The printer columns.
    let table = k.ok(&["get", "resourcedistributions.apps.kruise.io"]);
    assert!(
        table.contains("TOTAL") && table.contains("SUCCEED") && table.contains("FAILED"),
        "{table}"
    );

    // A namespace labelled later gets its copy.
    namespace(k, "a-3", None);
    let labelled = Instant::now();
    k.ok(&["label", "namespace", "a-3", "team=a"]);
    wait_for("the copy in the newly labelled a-3", Duration::from_secs(10), || copy(k, "a-3"));
    eprintln!("a-3 got its copy {:?} after it was labelled", labelled.elapsed());

    // Editing the source reaches every copy.
    set_token(k, "second");
    wait_for_token(k, &["a-1", "a-2", "a-3"], "second", Duration::from_secs(30));

    // A copy edited by hand is a conflict: reported, and left as edited.
    k.ok(&[
        "patch",
        "secret",
        "registry-creds",
        "-n",
        "a-2",
        "-p",
        r#"{"data":{"token":"bWluZQ=="}}"#,
    ]);
    let conflicted = wait_for("the conflict reported", Duration::from_secs(30), || {
        let s = status(k);
        (condition(&s, "ConflictOccurred")["status"] == "True").then_some(s)
    });
    assert_eq!(
        condition(&conflicted, "ConflictOccurred")["failedNamespaces"],
        serde_json::json!(["a-2"])
    );
    assert_eq!(
        (conflicted["succeeded"].as_i64(), conflicted["failed"].as_i64()),
        (Some(2), Some(1))
    );
    let events = k.ok(&["get", "events", "-A", "--field-selector", "reason=ConflictOccurred"]);
    assert!(events.contains("a-2"), "{events}");
    // Another reconcile (a namespace event) still leaves it alone.
    k.ok(&["label", "namespace", "b-1", "touched=yes"]);
    std::thread::sleep(Duration::from_secs(1));
    assert_eq!(copy(k, "a-2").map(|s| token(&s)).as_deref(), Some("mine"));

    // A namespace that stops matching loses its copy.
    k.ok(&["label", "namespace", "a-3", "team-"]);
    wait_for("the copy in a-3 gone", Duration::from_secs(30), || {
        copy(k, "a-3").is_none().then_some(())
    });

    // Deleting the distribution deletes its copies.
    k.ok(&["delete", "resourcedistributions.apps.kruise.io", "registry-creds"]);
    for ns in ["a-1", "a-2"] {
        wait_for(&format!("the copy in {ns} gone"), Duration::from_secs(30), || {
            copy(k, ns).is_none().then_some(())
        });
    }
}

#[test]
fn without_the_gate_distributions_are_refused() {
    let pg = Playground::start(1, &[]);
    let refused = pg.kubectl.run_with(&["apply", "-f", "-"], Some(DISTRIBUTION));
    assert!(!refused.ok);
    assert!(
        refused.stderr.contains("feature-gate ResourceDistributionGate is not enabled"),
        "{}",
        refused.stderr
    );
}

/// 200 labelled namespaces on kruise-sim in this process: the distribution writes one copy
/// per namespace and a few statuses, no more; a create the server fails is reported under
/// `CreateResourceFailed` until it succeeds; a patch refused with a conflict is planned again.
#[test]
fn one_write_per_namespace_and_failures_reported_until_they_pass() {
    use kruise_sim::faults::{Fault, FaultAction};

    const NAMESPACES: usize = 200;
    let cluster = crate::pub_budget::cluster_with_nodes(0);
    let k = &cluster.kubectl;
    let items: Vec<Value> = (0..NAMESPACES)
        .map(|i| {
            serde_json::json!({"apiVersion": "v1", "kind": "Namespace",
                "metadata": {"name": format!("team-a-{i:03}"), "labels": {"team": "a"}}})
        })
        .collect();
    let list = serde_json::json!({"apiVersion": "v1", "kind": "List", "items": items});
    k.ok_stdin(&["create", "-f", "-"], &list.to_string());
    let (_manager, _) = crate::pub_budget::start_manager(
        &cluster,
        &["--feature-gates", "ResourceDistributionGate=true"],
    );

    // Counted per request by zero-latency faults on the writes of the distribution's own
    // objects, so that leases, Events and other controllers' writes do not count.
    let counters: Vec<_> = ["create", "update", "patch"]
        .into_iter()
        .flat_map(|verb| {
            ["secrets", "resourcedistributions", "resourcedistributions/status"].map(|resource| {
                cluster.server.faults().inject(
                    Fault::new(FaultAction::Latency(Duration::ZERO)).verb(verb).resource(resource),
                )
            })
        })
        .collect();
    k.ok_stdin(&["apply", "-f", "-"], DISTRIBUTION);
    wait_for("every copy, and the status", Duration::from_secs(60), || {
        let s = status(k);
        (s["succeeded"] == NAMESPACES).then_some(())
    });
    std::thread::sleep(Duration::from_millis(500));
    let writes: usize = counters.iter().map(|c| c.count()).sum();
    cluster.server.faults().clear();
    eprintln!("{NAMESPACES} namespaces: {writes} writes in all (the distribution, copies, status)");
    assert!(
        (NAMESPACES..=NAMESPACES + 4).contains(&writes),
        "{writes} writes for {NAMESPACES} namespaces: more than one per copy, the create and a few statuses"
    );

    // A create the server fails: reported, then retried until it passes.
    let failing = cluster.server.faults().inject(
        Fault::new(FaultAction::InternalError).verb("create").resource("secrets").namespace("late"),
    );
    namespace(k, "late", Some("a"));
    let failed = wait_for("the failed create reported", Duration::from_secs(30), || {
        let s = status(k);
        (condition(&s, "CreateResourceFailed")["status"] == "True").then_some(s)
    });
    assert!(failing.count() >= 1);
    assert_eq!(
        condition(&failed, "CreateResourceFailed")["failedNamespaces"],
        serde_json::json!(["late"])
    );
    assert_eq!(failed["failed"], 1, "{failed}");
    cluster.server.faults().clear();
    wait_for("the copy in late", Duration::from_secs(60), || copy(k, "late"));
    wait_for("the failure cleared", Duration::from_secs(30), || {
        let s = status(k);
        (condition(&s, "CreateResourceFailed")["status"] == "False"
            && s["succeeded"] == NAMESPACES + 1)
            .then_some(())
    });

    // A patch refused with a conflict is planned again from a fresh read.
    let conflicts = cluster.server.faults().inject(
        Fault::new(FaultAction::Conflict)
            .verb("patch")
            .resource("secrets")
            .namespace("team-a-007")
            .times(1),
    );
    set_token(k, "second");
    wait_for_token(k, &["team-a-000", "team-a-007", "late"], "second", Duration::from_secs(60));
    assert_eq!(conflicts.count(), 1, "the conflict fired");
    let settled = wait_for("every copy updated", Duration::from_secs(60), || {
        let s = status(k);
        (s["succeeded"] == NAMESPACES + 1 && s["failed"].as_i64().unwrap_or(0) == 0).then_some(s)
    });
    assert_eq!(condition(&settled, "UpdateResourceFailed")["status"], "False", "{settled}");
}
