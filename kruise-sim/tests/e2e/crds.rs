//! CRDs: the Kruise CRDs installed at start, served with printer columns, scale and status
//! subresources, schema enforcement and finalizers; and a CRD registered at run time.

use crate::common;

use common::Env;
use kruise_sim::Config;
use std::time::Duration;

const CLONESET: &str = r#"
apiVersion: apps.kruise.io/v1alpha1
kind: CloneSet
metadata:
  name: cs
spec:
  replicas: 2
  selector:
    matchLabels: {app: cs}
  template:
    metadata:
      labels: {app: cs}
    spec:
      containers:
      - name: c
        image: nginx
"#;

#[test]
fn kruise_cloneset_columns_scale_status() {
    let env = Env::kruise();
    env.ok_stdin(&["apply", "-f", "-"], CLONESET);
    let table = env.ok(&["get", "clonesets"]);
    let header = table.lines().next().unwrap_or_default();
    for col in ["NAME", "DESIRED", "UPDATED", "READY", "TOTAL", "AGE"] {
        assert!(header.contains(col), "{col} missing in {header}");
    }
    assert!(
        table.lines().nth(1).is_some_and(|l| l.starts_with("cs ") && l.contains(" 2 ")),
        "{table}"
    );
    // Short name and served versions.
    env.ok(&["get", "clone", "cs"]);
    env.ok(&["get", "clonesets.v1alpha1.apps.kruise.io", "cs"]);

    // Scale subresource.
    assert!(env.ok(&["scale", "cloneset", "cs", "--replicas", "4"]).contains("scaled"));
    let cs = env.json(&["get", "cloneset", "cs"]);
    assert_eq!(cs["spec"]["replicas"], 4);
    assert_eq!(cs["metadata"]["generation"], 2);
    let scale = env.ok(&[
        "get",
        "--raw",
        "/apis/apps.kruise.io/v1beta1/namespaces/default/clonesets/cs/scale",
    ]);
    let scale: serde_json::Value = serde_json::from_str(&scale).expect("scale json");
    assert_eq!(scale["kind"], "Scale");
    assert_eq!(scale["spec"]["replicas"], 4);

    // Status subresource: upstream's schema requires the replica counts, as kube-apiserver
    // enforces; status changes do not bump generation; main updates keep status.
    let partial = env.fails(&[
        "patch",
        "cloneset",
        "cs",
        "--subresource",
        "status",
        "--type",
        "merge",
        "-p",
        r#"{"status":{"replicas":4,"readyReplicas":3,"updatedReplicas":4,"observedGeneration":2}}"#,
    ]);
    assert!(
        partial.contains("The CloneSet \"cs\" is invalid: \n* status.availableReplicas: Required value\n* status.updatedReadyReplicas: Required value"),
        "{partial}"
    );
    env.ok(&[
        "patch",
        "cloneset",
        "cs",
        "--subresource",
        "status",
        "--type",
        "merge",
        "-p",
        r#"{"status":{"replicas":4,"readyReplicas":3,"updatedReplicas":4,"availableReplicas":3,"updatedReadyReplicas":3,"observedGeneration":2}}"#,
    ]);
    let cs = env.json(&["get", "cloneset", "cs"]);
    assert_eq!(cs["status"]["readyReplicas"], 3);
    assert_eq!(cs["metadata"]["generation"], 2);
    env.ok(&[
        "patch",
        "cloneset",
        "cs",
        "--type",
        "merge",
        "-p",
        r#"{"status":{"readyReplicas":0}}"#,
    ]);
    assert_eq!(env.json(&["get", "cloneset", "cs"])["status"]["readyReplicas"], 3);
    let table = env.ok(&["get", "clonesets"]);
    assert!(table.lines().nth(1).is_some_and(|l| l.contains(" 3 ")), "{table}");

    // Strategic merge patch is not for custom resources.
    let e = env.fails(&[
        "patch",
        "cloneset",
        "cs",
        "--type",
        "strategic",
        "-p",
        r#"{"spec":{"replicas":1}}"#,
    ]);
    assert!(e.contains("the body of the request was in an unknown format"), "{e}");
}

#[test]
fn kruise_schema_violations() {
    let env = Env::kruise();
    let bad = CLONESET.replace("replicas: 2", "replicas: two");
    let o = env.run_with(&["create", "-f", "-"], Some(&bad), Duration::from_secs(20));
    assert!(!o.ok);
    assert!(
        o.stderr.contains("The CloneSet \"cs\" is invalid: \n* spec.replicas: Invalid value: \"string\": spec.replicas in body must be of type integer: \"string\"\n* .spec.replicas: Invalid value: 0: .spec.replicas accessor error: two is of the type string, expected int64"),
        "{}",
        o.stderr
    );
    // The server's own message, as the raw Status carries it.
    let raw = env.dir.path().join("bad.json");
    std::fs::write(
        &raw,
        r#"{"apiVersion":"apps.kruise.io/v1alpha1","kind":"CloneSet","metadata":{"name":"cs"},"spec":{"replicas":"two","selector":{"matchLabels":{"a":"b"}},"template":{"metadata":{"labels":{"a":"b"}}}}}"#,
    )
    .expect("write");
    let e = env.fails(&[
        "create",
        "--raw",
        "/apis/apps.kruise.io/v1alpha1/namespaces/default/clonesets",
        "-f",
        raw.to_str().expect("path"),
    ]);
    assert!(
        e.contains(r#"The CloneSet "cs" is invalid: "#)
            && e.contains(r#"spec.replicas: Invalid value: "string""#)
            && e.contains(".spec.replicas accessor error"),
        "{e}"
    );
    let unknown = CLONESET.replace("  replicas: 2", "  replicas: 2\n  bogus: 1");
    let o = env.run_with(&["create", "-f", "-"], Some(&unknown), Duration::from_secs(20));
    assert!(!o.ok);
    assert!(
        o.stderr.contains(r#"strict decoding error: unknown field "spec.bogus""#),
        "{}",
        o.stderr
    );
    // With validation off the field is pruned.
    let o = env.run_with(
        &["create", "--validate=false", "-f", "-"],
        Some(&unknown),
        Duration::from_secs(20),
    );
    assert!(o.ok, "{}", o.stderr);
    assert!(env.json(&["get", "cloneset", "cs"])["spec"].get("bogus").is_none());
}

#[test]
fn finalizers_hold_deletion() {
    let env = Env::kruise();
    let with_fin = CLONESET.replace("  name: cs", "  name: cs\n  finalizers: [example.com/hold]");
    env.ok_stdin(&["create", "-f", "-"], &with_fin);
    env.ok(&["delete", "cloneset", "cs", "--wait=false"]);
    let cs = env.json(&["get", "cloneset", "cs"]);
    assert!(cs["metadata"]["deletionTimestamp"].is_string(), "{cs}");
    // Marking it deleted counts as a new generation, as on kube-apiserver.
    assert_eq!(cs["metadata"]["generation"], 2, "{cs}");
    let e = env.fails(&[
        "patch",
        "cloneset",
        "cs",
        "--type",
        "merge",
        "-p",
        r#"{"metadata":{"finalizers":["example.com/hold","x/y"]}}"#,
    ]);
    assert!(e.contains("no new finalizers can be added if the object is being deleted"), "{e}");
    env.ok(&[
        "patch",
        "cloneset",
        "cs",
        "--type",
        "json",
        "-p",
        r#"[{"op":"remove","path":"/metadata/finalizers"}]"#,
    ]);
    let o = env.run(&["get", "cloneset", "cs"]);
    assert!(
        !o.ok && o.stderr.contains(r#"clonesets.apps.kruise.io "cs" not found"#),
        "{}",
        o.stderr
    );
}

const CRD: &str = r#"
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: widgets.example.com
spec:
  group: example.com
  scope: Namespaced
  names: {plural: widgets, singular: widget, kind: Widget, shortNames: [wd], categories: [all]}
  versions:
  - name: v1
    served: true
    storage: true
    subresources:
      status: {}
      scale: {specReplicasPath: .spec.size, statusReplicasPath: .status.size}
    additionalPrinterColumns:
    - {name: Size, type: integer, jsonPath: .spec.size}
    - {name: Color, type: string, jsonPath: .spec.color}
    - {name: Age, type: date, jsonPath: .metadata.creationTimestamp}
    schema:
      openAPIV3Schema:
        type: object
        properties:
          spec:
            type: object
            required: [size]
            properties:
              size: {type: integer, minimum: 0}
              color: {type: string, enum: [red, blue], default: red}
          status:
            type: object
            properties:
              size: {type: integer}
"#;

#[test]
fn crd_registered_at_runtime() {
    let env = Env::new(Config::default());
    env.ok_stdin(&["apply", "-f", "-"], CRD);
    let crd = env.json(&["get", "crd", "widgets.example.com"]);
    let conds = crd["status"]["conditions"].as_array().expect("conditions");
    assert!(conds.iter().any(|c| c["type"] == "Established" && c["status"] == "True"));
    env.ok_stdin(
        &["apply", "-f", "-"],
        "apiVersion: example.com/v1\nkind: Widget\nmetadata:\n  name: w1\nspec:\n  size: 3\n",
    );
    let w = env.json(&["get", "widget", "w1"]);
    assert_eq!(w["spec"]["color"], "red", "default applied");
    let table = env.ok(&["get", "wd"]);
    assert!(table.starts_with("NAME   SIZE   COLOR   AGE"), "{table}");
    assert!(table.contains("w1     3      red"), "{table}");
    let e = env
        .run_with(
            &["apply", "-f", "-"],
            Some("apiVersion: example.com/v1\nkind: Widget\nmetadata:\n  name: w2\nspec:\n  size: -1\n  color: green\n"),
            Duration::from_secs(20),
        )
        .stderr;
    assert!(e.contains(r#"The Widget "w2" is invalid: "#), "{e}");
    assert!(
        e.contains(r#"* spec.color: Unsupported value: "green": supported values: "red", "blue""#),
        "{e}"
    );
    assert!(
        e.contains(
            "* spec.size: Invalid value: -1: spec.size in body should be greater than or equal to 0"
        ),
        "{e}"
    );
    env.ok(&["scale", "widget", "w1", "--replicas", "5"]);
    assert_eq!(env.json(&["get", "widget", "w1"])["spec"]["size"], 5);
    // Deleting the CRD removes the resource and its objects.
    env.ok(&["delete", "crd", "widgets.example.com"]);
    let o = env.run(&["get", "--raw", "/apis/example.com/v1/namespaces/default/widgets"]);
    assert!(!o.ok, "{}", o.stdout);
}

/// `kubectl get crd` shows CREATED AT as the timestamp, as kube-apiserver's default table does.
#[test]
fn crds_list_their_creation_time() {
    let env = Env::kruise();
    let table = env.ok(&["get", "crd", "clonesets.apps.kruise.io"]);
    let mut lines = table.lines();
    assert_eq!(
        lines.next().map(|l| l.split_whitespace().collect::<Vec<_>>()),
        Some(vec!["NAME", "CREATED", "AT"]),
        "{table}"
    );
    let created = env.ok(&[
        "get",
        "crd",
        "clonesets.apps.kruise.io",
        "-o",
        "jsonpath={.metadata.creationTimestamp}",
    ]);
    let row: Vec<&str> = lines.next().expect("row").split_whitespace().collect();
    assert_eq!(row, ["clonesets.apps.kruise.io", created.as_str()], "{table}");
}

/// A replica count that is not an integer fails the schema and the scale subresource's
/// accessor, both reported, in kube-apiserver's order.
#[test]
fn replicas_of_the_wrong_type_fail_twice() {
    let env = Env::kruise();
    let err = env.fails_stdin(
        &["create", "-f", "-"],
        r#"
apiVersion: apps.kruise.io/v1beta1
kind: CloneSet
metadata: {name: bad}
spec:
  replicas: "abc"
  selector: {matchLabels: {app: bad}}
  template:
    metadata: {labels: {app: bad}}
    spec:
      containers: [{name: c, image: nginx}]
"#,
    );
    assert!(
        err.contains("The CloneSet \"bad\" is invalid: \n* spec.replicas: Invalid value: \"string\": spec.replicas in body must be of type integer: \"string\"\n* .spec.replicas: Invalid value: 0: .spec.replicas accessor error: abc is of the type string, expected int64"),
        "{err}"
    );
}

/// A CEL transition rule (one that reads `oldSelf`) is skipped on create and judged on an
/// update, as kube-apiserver judges it.
#[test]
fn transition_rules_judge_updates() {
    let env = Env::new(Config::default());
    let crd = CRD.replace(
        "              size: {type: integer, minimum: 0}",
        "              size: {type: integer, minimum: 0}\n              zone:\n                type: string\n                x-kubernetes-validations:\n                - {rule: self == oldSelf, message: zone is immutable}",
    );
    env.ok_stdin(&["apply", "-f", "-"], &crd);
    env.ok_stdin(
        &["apply", "-f", "-"],
        "apiVersion: example.com/v1\nkind: Widget\nmetadata:\n  name: w1\nspec:\n  size: 3\n  zone: a\n",
    );
    env.ok(&["patch", "widget", "w1", "--type", "merge", "-p", r#"{"spec":{"size":4}}"#]);
    let e =
        env.fails(&["patch", "widget", "w1", "--type", "merge", "-p", r#"{"spec":{"zone":"b"}}"#]);
    assert!(
        e.contains(
            r#"The Widget "w1" is invalid: spec.zone: Invalid value: "string": zone is immutable"#
        ),
        "{e}"
    );
    assert_eq!(env.ok(&["get", "widget", "w1", "-o", "jsonpath={.spec.zone}/{.spec.size}"]), "a/4");
}
