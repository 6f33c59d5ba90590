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
