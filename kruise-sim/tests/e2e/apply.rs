//! Server-side apply with field ownership, driven by the real kubectl: managedFields,
//! conflicts with the real message, --force-conflicts, and removal of fields a manager
//! stopped applying.

use crate::common;

use common::Env;
use kruise_sim::Config;
use serde_json::Value;

fn managers(obj: &Value) -> Vec<(String, String, Value)> {
    obj["metadata"]["managedFields"]
        .as_array()
        .expect("managedFields")
        .iter()
        .map(|e| {
            (
                e["manager"].as_str().unwrap_or("").to_string(),
                e["operation"].as_str().unwrap_or("").to_string(),
                e["fieldsV1"].clone(),
            )
        })
        .collect()
}

const CM: &str = r#"
apiVersion: v1
kind: ConfigMap
metadata: {name: cm, labels: {x: "1", z: "2"}}
data: {a: "2", b: "3"}
"#;

#[test]
fn server_side_apply_owns_fields_and_conflicts() {
    let env = Env::new(Config::default());
    env.ok_stdin(
        &["create", "-f", "-"],
        "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: cm}\ndata: {a: \"1\"}\n",
    );
    let cm = env.json(&["get", "configmap", "cm", "--show-managed-fields"]);
    let m = managers(&cm);
    assert_eq!(m.len(), 1, "{m:?}");
    assert_eq!((m[0].0.as_str(), m[0].1.as_str()), ("kubectl-create", "Update"));
    assert_eq!(m[0].2, serde_json::json!({"f:data": {"f:a": {}}}));

    // A different value for a field another manager owns is a conflict.
    let o = env.run_with(
        &["apply", "--server-side", "-f", "-"],
        Some(CM),
        std::time::Duration::from_secs(30),
    );
    assert!(!o.ok);
    assert!(
        o.stderr.contains(
            r#"Apply failed with 1 conflict: conflict with "kubectl-create" using v1: .data.a"#
        ),
        "{}",
        o.stderr
    );
    // Forced, the applier takes the field over.
    env.ok_stdin(&["apply", "--server-side", "--force-conflicts", "-f", "-"], CM);
    let cm = env.json(&["get", "configmap", "cm", "--show-managed-fields"]);
    assert_eq!(cm["data"]["a"], "2");
    let m = managers(&cm);
    assert_eq!(m.len(), 1, "kubectl-create lost its only field: {m:?}");
    assert_eq!((m[0].0.as_str(), m[0].1.as_str()), ("kubectl", "Apply"));
    assert_eq!(
        m[0].2,
        serde_json::json!({"f:data": {"f:a": {}, "f:b": {}}, "f:metadata": {"f:labels": {"f:x": {}, "f:z": {}}}})
    );

    // Another manager applies b with the same value: shared, no conflict.
    env.ok_stdin(
        &["apply", "--server-side", "--field-manager", "other", "-f", "-"],
        "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: cm}\ndata: {b: \"3\"}\n",
    );
    // kubectl stops applying b and label z: z is removed, b stays (other owns it).
    env.ok_stdin(
        &["apply", "--server-side", "-f", "-"],
        "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: cm, labels: {x: \"1\"}}\ndata: {a: \"2\"}\n",
    );
    let cm = env.json(&["get", "configmap", "cm"]);
    assert_eq!(cm["data"], serde_json::json!({"a": "2", "b": "3"}));
    assert_eq!(cm["metadata"]["labels"], serde_json::json!({"x": "1"}));
    // Now other stops applying b too: it is removed.
    env.ok_stdin(
        &["apply", "--server-side", "--field-manager", "other", "-f", "-"],
        "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: cm, labels: {o: \"1\"}}\n",
    );
    let cm = env.json(&["get", "configmap", "cm"]);
    assert_eq!(cm["data"], serde_json::json!({"a": "2"}));
}

const DEPLOY: &str = r#"
apiVersion: apps/v1
kind: Deployment
metadata: {name: web}
spec:
  replicas: 1
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      containers: [{name: c, image: nginx}]
"#;

#[test]
fn apply_conflicts_on_replicas_owned_by_a_patch() {
    let env = Env::new(Config::default());
    env.ok_stdin(&["apply", "--server-side", "-f", "-"], DEPLOY);
    env.ok(&["patch", "deployment", "web", "-p", r#"{"spec":{"replicas":3}}"#]);
    let d = env.json(&["get", "deployment", "web", "--show-managed-fields"]);
    let m = managers(&d);
    assert!(
        m.iter().any(|(n, op, f)| n == "kubectl-patch"
            && op == "Update"
            && *f == serde_json::json!({"f:spec": {"f:replicas": {}}})),
        "{m:?}"
    );
    let kubectl = m.iter().find(|(n, _, _)| n == "kubectl").expect("applier entry");
    assert!(
        kubectl.2["f:spec"]["f:template"]["f:spec"]["f:containers"]["k:{\"name\":\"c\"}"]["."]
            .is_object()
    );
    let applied = DEPLOY.replace("replicas: 1", "replicas: 5");
    let o = env.run_with(
        &["apply", "--server-side", "-f", "-"],
        Some(&applied),
        std::time::Duration::from_secs(30),
    );
    assert!(!o.ok);
    assert!(
        o.stderr.contains(
            r#"Apply failed with 1 conflict: conflict with "kubectl-patch" using apps/v1: .spec.replicas"#
        ),
        "{}",
        o.stderr
    );
    env.ok_stdin(&["apply", "--server-side", "--force-conflicts", "-f", "-"], &applied);
    let d = env.json(&["get", "deployment", "web", "--show-managed-fields"]);
    assert_eq!(d["spec"]["replicas"], 5);
    assert!(managers(&d).iter().all(|(n, _, _)| n != "kubectl-patch"));
}

/// A `kind: List` file: kubectl validates its items through `/openapi/v2` before writing them
/// one by one, with client-side apply, `create` and server-side apply alike.
#[test]
fn a_list_file_applies_item_by_item() {
    let env = Env::new(Config::default());
    let list = "apiVersion: v1\nkind: List\nitems:\n- apiVersion: v1\n  kind: ConfigMap\n  metadata: {name: first}\n  data: {a: \"1\"}\n- apiVersion: v1\n  kind: ConfigMap\n  metadata: {name: second}\n";
    let out = env.ok_stdin(&["apply", "-f", "-"], list);
    assert!(
        out.contains("configmap/first created") && out.contains("configmap/second created"),
        "{out}"
    );
    let out = env.ok_stdin(&["apply", "-f", "-"], list);
    assert!(out.contains("configmap/first unchanged"), "{out}");
    assert_eq!(env.json(&["get", "configmap", "first"])["data"]["a"], "1");
    let out = env.ok_stdin(&["apply", "--server-side", "-f", "-"], list);
    assert!(out.contains("configmap/second serverside-applied"), "{out}");
    let o = env.run_with(&["create", "-f", "-"], Some(list), std::time::Duration::from_secs(30));
    assert!(!o.ok && o.stderr.contains(r#"configmaps "first" already exists"#), "{}", o.stderr);
}

/// Unknown fields of built-in kinds, as kube-apiserver's decoding treats them: kubectl's
/// default (`fieldValidation=Strict`) is refused with its message, `--validate=warn` warns and
/// drops them, `--validate=false` drops them silently.
#[test]
fn unknown_fields_of_built_in_kinds_are_refused_warned_or_dropped() {
    let env = Env::new(Config::default());
    let cm = |name: &str| {
        format!(
            "apiVersion: v1\nkind: ConfigMap\nmetadata: {{name: {name}}}\ndata: {{a: \"1\"}}\nbogus: 1\n"
        )
    };
    let o = env.run_with(
        &["apply", "-f", "-"],
        Some(&cm("strict")),
        std::time::Duration::from_secs(30),
    );
    assert!(!o.ok);
    assert!(
        o.stderr.contains(
            r#"ConfigMap in version "v1" cannot be handled as a ConfigMap: strict decoding error: unknown field "bogus""#
        ),
        "{}",
        o.stderr
    );
    let o = env.run_with(
        &["apply", "--validate=warn", "-f", "-"],
        Some(&cm("warned")),
        std::time::Duration::from_secs(30),
    );
    assert!(o.ok && o.stderr.contains(r#"Warning: unknown field "bogus""#), "{}", o.stderr);
    assert!(env.json(&["get", "configmap", "warned"]).get("bogus").is_none());
    env.ok_stdin(&["create", "--validate=false", "-f", "-"], &cm("ignored"));
    let stored = env.json(&["get", "configmap", "ignored"]);
    assert!(stored.get("bogus").is_none() && stored["data"]["a"] == "1", "{stored}");
    // Nested fields are named by their path.
    let pod = "apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec:\n  containers:\n  - name: c\n    image: nginx\n    imagee: typo\n";
    let o = env.run_with(&["create", "-f", "-"], Some(pod), std::time::Duration::from_secs(30));
    assert!(
        !o.ok
            && o.stderr
                .contains(r#"strict decoding error: unknown field "spec.containers[0].imagee""#),
        "{}",
        o.stderr
    );
}
