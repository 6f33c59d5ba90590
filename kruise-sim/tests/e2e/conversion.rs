//! CRD conversion through a conversion webhook: the Kruise CloneSet CRD is switched to
//! `strategy: Webhook`, served by an HTTPS webhook in this test that converts with
//! `kruise_api::KruiseObject::convert_to`, and driven by the real kubectl.

use crate::common;

use base64::Engine as _;
use common::Env;
use kruise_sim::Config;
use serde_json::{Value, json};

type Webhook = common::webhook::HookServer;

fn start_webhook() -> Webhook {
    common::webhook::start(&["convert.kruise-system.svc"], |_path, review| convert(review))
}

fn convert(review: &Value) -> Value {
    let uid = review.pointer("/request/uid").cloned().unwrap_or(Value::Null);
    let desired = review.pointer("/request/desiredAPIVersion").and_then(Value::as_str);
    let objects = review.pointer("/request/objects").and_then(Value::as_array);
    let converted: Result<Vec<Value>, String> = objects
        .into_iter()
        .flatten()
        .map(|o| {
            let obj = kruise_api::KruiseObject::from_value(o.clone()).map_err(|e| e.to_string())?;
            let out = obj.convert_to(desired.unwrap_or_default()).map_err(|e| e.to_string())?;
            serde_json::to_value(&out).map_err(|e| e.to_string())
        })
        .collect();
    let response = match converted {
        Ok(objs) => json!({"uid": uid, "convertedObjects": objs, "result": {"status": "Success"}}),
        Err(m) => json!({"uid": uid, "result": {"status": "Failure", "message": m}}),
    };
    json!({"apiVersion": "apiextensions.k8s.io/v1", "kind": "ConversionReview", "response": response})
}

fn use_webhook(env: &Env, service: &str, ca_pem: &str) {
    let ca = base64::engine::general_purpose::STANDARD.encode(ca_pem);
    let patch = json!({"spec": {"conversion": {"strategy": "Webhook", "webhook": {
    "conversionReviewVersions": ["v1"],
    "clientConfig": {
        "service": {"namespace": "kruise-system", "name": service, "path": "/convert"},
        "caBundle": ca,
    }}}}});
    env.ok(&[
        "patch",
        "crd",
        "clonesets.apps.kruise.io",
        "--type",
        "merge",
        "-p",
        &patch.to_string(),
    ]);
}

const ALPHA: &str = r#"
apiVersion: apps.kruise.io/v1alpha1
kind: CloneSet
metadata: {name: alpha, labels: {made: alpha}}
spec:
  replicas: 2
  selector: {matchLabels: {app: alpha}}
  updateStrategy: {type: InPlaceIfPossible, partition: 1}
  template:
    metadata: {labels: {app: alpha}}
    spec:
      containers: [{name: c, image: nginx}]
"#;

const BETA: &str = r#"
apiVersion: apps.kruise.io/v1beta1
kind: CloneSet
metadata: {name: beta}
spec:
  replicas: 1
  selector: {matchLabels: {app: beta}}
  updateStrategy:
    type: RollingUpdate
    rollingUpdate: {podUpdatePolicy: InPlaceOnly, partition: 0}
  template:
    metadata: {labels: {app: beta}}
    spec:
      containers: [{name: c, image: nginx}]
"#;

#[test]
fn cloneset_versions_convert_through_the_webhook() {
    let hook = start_webhook();
    let env = Env::new(Config::default().with_kruise_crds().with_webhook_service(
        "kruise-system",
        "convert",
        hook.addr,
    ));
    use_webhook(&env, "convert", &hook.ca_pem);

    // v1alpha1 -> stored v1beta1 -> read back at both versions.
    env.ok_stdin(&["create", "-f", "-"], ALPHA);
    assert!(!hook.seen.lock().expect("seen").is_empty(), "the webhook converted the create");
    let beta = env.json(&["get", "clonesets.v1beta1.apps.kruise.io", "alpha"]);
    assert_eq!(beta["apiVersion"], "apps.kruise.io/v1beta1");
    assert_eq!(beta["spec"]["updateStrategy"]["type"], "RollingUpdate");
    assert_eq!(
        beta["spec"]["updateStrategy"]["rollingUpdate"]["podUpdatePolicy"],
        "InPlaceIfPossible"
    );
    assert_eq!(beta["spec"]["updateStrategy"]["rollingUpdate"]["partition"], 1);
    assert_eq!(beta["metadata"]["labels"]["made"], "alpha");
    let alpha = env.json(&["get", "clonesets.v1alpha1.apps.kruise.io", "alpha"]);
    assert_eq!(alpha["apiVersion"], "apps.kruise.io/v1alpha1");
    assert_eq!(alpha["spec"]["updateStrategy"]["type"], "InPlaceIfPossible");
    assert_eq!(alpha["metadata"]["uid"], beta["metadata"]["uid"]);
    assert_eq!(alpha["metadata"]["resourceVersion"], beta["metadata"]["resourceVersion"]);

    // v1beta1 -> read at v1alpha1 (get, list, table).
    env.ok_stdin(&["create", "-f", "-"], BETA);
    let alpha = env.json(&["get", "clonesets.v1alpha1.apps.kruise.io", "beta"]);
    assert_eq!(alpha["spec"]["updateStrategy"]["type"], "InPlaceOnly");
    let list = env.json(&["get", "clonesets.v1alpha1.apps.kruise.io"]);
    let types: Vec<&Value> = list["items"]
        .as_array()
        .expect("items")
        .iter()
        .map(|i| &i["spec"]["updateStrategy"]["type"])
        .collect();
    assert_eq!(types, [&json!("InPlaceIfPossible"), &json!("InPlaceOnly")]);
    let table = env.ok(&["get", "clonesets.v1alpha1.apps.kruise.io"]);
    assert!(table.lines().any(|l| l.starts_with("beta ")), "{table}");

    // A patch at v1alpha1 is applied to the converted object and stored converted back.
    env.ok(&[
        "patch",
        "clonesets.v1alpha1.apps.kruise.io",
        "beta",
        "--type",
        "merge",
        "-p",
        r#"{"spec":{"updateStrategy":{"type":"ReCreate"}}}"#,
    ]);
    let beta = env.json(&["get", "clonesets.v1beta1.apps.kruise.io", "beta"]);
    assert_eq!(beta["spec"]["updateStrategy"]["rollingUpdate"]["podUpdatePolicy"], "ReCreate");
    assert_eq!(beta["metadata"]["generation"], 2);

    // Watch events at v1alpha1 are converted.
    let raw = env.ok(&[
        "get",
        "--raw",
        "/apis/apps.kruise.io/v1alpha1/namespaces/default/clonesets?watch=true&timeoutSeconds=1",
    ]);
    let events: Vec<Value> =
        raw.lines().map(|l| serde_json::from_str(l).expect("watch event")).collect();
    assert_eq!(events.len(), 2, "{raw}");
    for e in &events {
        assert_eq!(e["object"]["apiVersion"], "apps.kruise.io/v1alpha1");
        assert!(e["object"]["spec"]["updateStrategy"]["rollingUpdate"].is_null(), "{e}");
    }

    // Failures answer the real server's error.
    use_webhook(&env, "missing", &hook.ca_pem);
    let err = env.fails(&["get", "clonesets.v1alpha1.apps.kruise.io", "alpha"]);
    let want = r#"conversion webhook for apps.kruise.io/v1beta1, Kind=CloneSet failed: Post "https://missing.kruise-system.svc:443/convert?timeout=30s": service "missing" not found"#;
    assert!(err.contains(&format!("Error from server: {want}")), "{err}");
    let err = env.fails(&[
        "patch",
        "clonesets.v1alpha1.apps.kruise.io",
        "alpha",
        "--type",
        "merge",
        "-p",
        r#"{"spec":{"replicas":3}}"#,
    ]);
    assert!(
        err.contains("conversion webhook for apps.kruise.io/v1beta1, Kind=CloneSet failed"),
        "{err}"
    );
    // The storage version needs no conversion.
    env.ok(&["get", "clonesets.v1beta1.apps.kruise.io", "alpha"]);
}

/// With `strategy: None` (the CRDs as installed without the manager's conversion), a
/// v1alpha1 body is stored under v1beta1 as kube-apiserver stores it: pruned to the storage
/// version's schema, so a field only v1alpha1 knows is dropped at once rather than kept to
/// surface in later writes; and a field the stored version's schema no longer knows (the CRD
/// changed after the write) is not served, as kube-apiserver prunes on every read.
#[test]
fn none_conversion_and_reads_prune_to_each_versions_schema() {
    let env = Env::kruise();
    env.ok_stdin(
        &["create", "-f", "-"],
        r#"
apiVersion: apps.kruise.io/v1alpha1
kind: CloneSet
metadata: {name: early}
spec:
  replicas: 2
  minReadySeconds: 5
  selector: {matchLabels: {app: early}}
  updateStrategy: {type: InPlaceIfPossible, maxUnavailable: 20%}
  template:
    metadata: {labels: {app: early}}
    spec:
      containers: [{name: c, image: nginx}]
"#,
    );
    let beta = env.json(&["get", "clonesets.v1beta1.apps.kruise.io", "early"]);
    assert_eq!(beta["spec"]["updateStrategy"], json!({"type": "InPlaceIfPossible"}), "{beta}");
    assert_eq!(beta["spec"]["minReadySeconds"], 5);

    // Nothing stored that the schema does not know: no warning on a later write.
    let scaled = env.run(&["scale", "clonesets.apps.kruise.io", "early", "--replicas", "3"]);
    assert!(scaled.ok, "{}", scaled.stderr);
    assert!(!scaled.stderr.contains("unknown field"), "{}", scaled.stderr);

    // The storage version's schema loses minReadySeconds: reads stop serving it.
    let versions = env.ok(&[
        "get",
        "crd",
        "clonesets.apps.kruise.io",
        "-o",
        "jsonpath={.spec.versions[*].name}",
    ]);
    let index = versions.split_whitespace().position(|v| v == "v1beta1").expect("v1beta1");
    let path = format!(
        "/spec/versions/{index}/schema/openAPIV3Schema/properties/spec/properties/minReadySeconds"
    );
    env.ok(&[
        "patch",
        "crd",
        "clonesets.apps.kruise.io",
        "--type",
        "json",
        "-p",
        &json!([{"op": "remove", "path": path}]).to_string(),
    ]);
    let beta = env.json(&["get", "clonesets.v1beta1.apps.kruise.io", "early"]);
    assert!(beta["spec"].get("minReadySeconds").is_none(), "{beta}");
    assert_eq!(beta["spec"]["replicas"], 3);
    let listed = env.json(&["get", "clonesets.v1beta1.apps.kruise.io"]);
    assert!(listed["items"][0]["spec"].get("minReadySeconds").is_none(), "{listed}");
    // v1alpha1 still knows the field, but the stored object no longer carries it.
    let alpha = env.json(&["get", "clonesets.v1alpha1.apps.kruise.io", "early"]);
    assert!(alpha["spec"].get("minReadySeconds").is_none(), "{alpha}");
}
