//! The real `kubectl explain` against the OpenAPI v3 documents of kruise-sim, and `kubectl
//! apply` keeping its patch types now that the documents carry schemas.

use crate::common;

use common::Env;
use kruise_sim::Config;
use serde_json::Value;
use std::path::PathBuf;

fn upstream_crd(file: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../shared/upstream/crds").join(file)
}

/// Asserts that `haystack` contains every one of `needles`.
#[track_caller]
fn contains_all(haystack: &str, needles: &[&str]) {
    for n in needles {
        assert!(haystack.contains(n), "{n:?} missing from:\n{haystack}");
    }
}

#[test]
fn explain_builtin_kinds_and_nested_fields() {
    let env = Env::new(Config::default());
    let pods = env.ok(&["explain", "pods"]);
    contains_all(
        &pods,
        &[
            "KIND:       Pod\nVERSION:    v1\n",
            "DESCRIPTION:\n    Pod is a collection of containers that can run on a host.",
            "FIELDS:\n  apiVersion\t<string>\n",
            "  metadata\t<ObjectMeta>\n    Standard object's metadata.",
            "  spec\t<PodSpec>\n    Specification of the desired behavior of the pod.",
            "  status\t<PodStatus>\n",
        ],
    );
    // k8s-openapi requires metadata; the API server's documents do not.
    assert!(!pods.contains("<ObjectMeta> -required-"), "{pods}");

    let containers = env.ok(&["explain", "pods.spec.containers"]);
    contains_all(
        &containers,
        &[
            "FIELD: containers <[]Container>",
            "DESCRIPTION:\n    List of containers belonging to the pod.",
            // The referenced definition's own description follows the field's.
            "A single application container that you want to run within a pod.",
            "  image\t<string>\n    Container image name.",
            "  name\t<string> -required-\n",
            "  env\t<[]EnvVar>\n",
            "  resources\t<ResourceRequirements>\n",
        ],
    );

    // A group's kind, by short name, through an object and into an int-or-string.
    let strategy = env.ok(&["explain", "deploy.spec.strategy"]);
    contains_all(
        &strategy,
        &[
            "GROUP:      apps\nKIND:       Deployment\nVERSION:    v1\n",
            "FIELD: strategy <DeploymentStrategy>",
            "The deployment strategy to use to replace existing pods with new ones.",
            "  rollingUpdate\t<RollingUpdateDeployment>\n",
            "  type\t<string>\n",
        ],
    );
    let surge = env.ok(&["explain", "deployments.spec.strategy.rollingUpdate.maxSurge"]);
    contains_all(
        &surge,
        &["FIELD: maxSurge <IntOrString>", "The maximum number of pods that can be scheduled"],
    );

    // The same kind name in two groups.
    let ev = env.ok(&["explain", "events", "--api-version=events.k8s.io/v1"]);
    contains_all(&ev, &["GROUP:      events.k8s.io\nKIND:       Event\n", "  regarding\t"]);
    let core_ev = env.ok(&["explain", "events", "--api-version=v1"]);
    contains_all(&core_ev, &["KIND:       Event\nVERSION:    v1\n", "  involvedObject\t"]);
    assert!(!core_ev.contains("GROUP:"), "{core_ev}");
}

#[test]
fn explain_recursive() {
    let env = Env::new(Config::default());
    let out = env.ok(&["explain", "--recursive", "configmaps"]);
    contains_all(
        &out,
        &[
            "KIND:       ConfigMap\nVERSION:    v1\n",
            "ConfigMap holds configuration data for pods to consume.",
            "FIELDS:\n  apiVersion\t<string>\n  binaryData\t<map[string]string>\n  data\t<map[string]string>\n",
            "  metadata\t<ObjectMeta>\n    annotations\t<map[string]string>\n",
            "    ownerReferences\t<[]OwnerReference>\n      apiVersion\t<string> -required-\n",
            "      uid\t<string> -required-\n",
        ],
    );
    // Names and types only, no descriptions.
    assert!(!out.contains("Standard object's metadata"), "{out}");

    let pod = env.ok(&["explain", "--recursive", "pods.spec.containers.livenessProbe"]);
    contains_all(&pod, &["FIELD: livenessProbe <Probe>", "  httpGet\t<HTTPGetAction>\n    host\t"]);
}

#[test]
fn explain_custom_resources() {
    let env = Env::kruise();
    let out = env.ok(&["explain", "clonesets.spec.updateStrategy"]);
    contains_all(
        &out,
        &[
            "GROUP:      apps.kruise.io\nKIND:       CloneSet\nVERSION:    v1beta1\n",
            "FIELD: updateStrategy <Object>",
            "DESCRIPTION:\n",
            "FIELDS:\n",
        ],
    );
    let alpha = env.ok(&[
        "explain",
        "clonesets.spec.updateStrategy",
        "--api-version=apps.kruise.io/v1alpha1",
    ]);
    contains_all(&alpha, &["VERSION:    v1alpha1\n", "  partition\t<", "  maxUnavailable\t<"]);
    // apiVersion, kind and metadata as the API server adds them to every custom resource.
    let top = env.ok(&["explain", "clonesets"]);
    contains_all(
        &top,
        &[
            "  apiVersion\t<string>\n    APIVersion defines the versioned schema",
            "  kind\t<string>\n    Kind is a string value",
            "  metadata\t<ObjectMeta>\n    Standard object's metadata.",
        ],
    );
    let meta = env.ok(&["explain", "clonesets.metadata.ownerReferences"]);
    contains_all(
        &meta,
        &["FIELD: ownerReferences <[]OwnerReference>", "  uid\t<string> -required-"],
    );

    // An upstream CRD installed at run time; then its schema changes, then it goes.
    let env = Env::new(Config::default());
    let crd = upstream_crd("apps.kruise.io_sidecarsets.yaml");
    let crd = crd.to_str().expect("UTF-8 path");
    env.ok(&["create", "-f", crd]);
    let out = env.ok(&["explain", "sidecarsets.spec.customVersion"]);
    contains_all(
        &out,
        &[
            "GROUP:      apps.kruise.io\nKIND:       SidecarSet\nVERSION:    v1beta1\n",
            "FIELD: customVersion <string>",
            "CustomVersion is designed to record and label the controllerRevision of",
        ],
    );
    let index = |env: &Env| -> Value {
        serde_json::from_str(&env.ok(&["get", "--raw", "/openapi/v3"])).expect("JSON index")
    };
    let url = |v: &Value| v["paths"]["apis/apps.kruise.io/v1beta1"]["serverRelativeURL"].clone();
    let before = index(&env);
    env.ok(&[
        "patch",
        "crd",
        "sidecarsets.apps.kruise.io",
        "--type=json",
        "-p",
        r#"[{"op": "replace", "path": "/spec/versions/1/schema/openAPIV3Schema/properties/spec/properties/customVersion/description", "value": "Rewritten by the test."}]"#,
    ]);
    let after = index(&env);
    assert_ne!(url(&before), url(&after), "the hash did not change with the schema");
    let out = env.ok(&["explain", "sidecarsets.spec.customVersion"]);
    contains_all(&out, &["DESCRIPTION:\n    Rewritten by the test.\n"]);

    env.ok(&["delete", "crd", "sidecarsets.apps.kruise.io"]);
    let gone = index(&env);
    assert!(url(&gone).is_null(), "{gone}");
    // kubectl's discovery cache may still list the resource; the OpenAPI index does not.
    let err = env.fails(&["explain", "sidecarsets"]);
    assert!(
        err.contains(
            r#"couldn't find resource for "apps.kruise.io/v1beta1, Resource=sidecarsets""#
        ) || err.contains(r#"the server doesn't have a resource type "sidecarsets""#),
        "{err}"
    );
}

#[test]
fn explain_unknown_fields() {
    let env = Env::kruise();
    let o = env.run(&["explain", "pods.spec.nope"]);
    assert!(!o.ok, "{}", o.stdout);
    assert_eq!(o.stderr.trim(), r#"error: field "nope" does not exist"#);
    let o = env.run(&["explain", "clonesets.spec.updateStrategy.nope"]);
    assert!(!o.ok, "{}", o.stdout);
    assert_eq!(o.stderr.trim(), r#"error: field "nope" does not exist"#);
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
      containers:
      - name: app
        image: nginx:1.25
        env: [{name: A, value: "1"}, {name: C, value: "3"}]
      - name: extra
        image: busybox
"#;

/// [`DEPLOY`] with env C and container `extra` removed and the image changed.
const DEPLOY_CHANGED: &str = r#"
apiVersion: apps/v1
kind: Deployment
metadata: {name: web}
spec:
  replicas: 1
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      containers:
      - name: app
        image: nginx:1.26
        env: [{name: A, value: "1"}]
"#;

const POD: &str = r#"
apiVersion: v1
kind: Pod
metadata:
  name: p
  finalizers: [example.com/a, example.com/c]
spec:
  containers:
  - name: app
    image: nginx:1.25
"#;

const CLONESET: &str = r#"
apiVersion: apps.kruise.io/v1alpha1
kind: CloneSet
metadata: {name: c}
spec:
  replicas: 1
  selector: {matchLabels: {app: c}}
  template:
    metadata: {labels: {app: c}}
    spec:
      containers:
      - name: app
        image: nginx:1.25
"#;

fn names(list: &Value) -> Vec<String> {
    list.as_array()
        .into_iter()
        .flatten()
        .map(|x| x.get("name").and_then(Value::as_str).unwrap_or("").to_string())
        .collect()
}

/// Client-side apply computes strategic merge patches for built-in kinds from kubectl's
/// compiled-in types, merging lists by key, and JSON merge patches for custom resources: the
/// schemas now served carry no patch merge keys and must not be used for patches. (A patch
/// built from them would replace whole lists, which the server's strategic merge still merges
/// by key, but removals from the applied configuration would be lost.)
#[test]
fn client_side_apply_still_merges_lists_by_key() {
    let env = Env::kruise();
    env.ok_stdin(&["apply", "-f", "-"], DEPLOY);
    // Another manager adds a container and an env var to the applied container.
    env.ok(&[
        "patch",
        "deployment",
        "web",
        "--type=json",
        "-p",
        r#"[{"op": "add", "path": "/spec/template/spec/containers/-", "value": {"name": "sidecar", "image": "busybox"}},
            {"op": "add", "path": "/spec/template/spec/containers/0/env/-", "value": {"name": "B", "value": "2"}}]"#,
    ]);
    let o = env.run_with(
        &["apply", "-f", "-", "-v=7"],
        Some(DEPLOY_CHANGED),
        std::time::Duration::from_secs(30),
    );
    assert!(o.ok, "{}\n{}", o.stdout, o.stderr);
    assert!(o.stdout.contains("deployment.apps/web configured"), "{}", o.stdout);
    assert!(o.stderr.contains("application/strategic-merge-patch+json"), "{}", o.stderr);
    assert!(!o.stderr.contains("error calculating patch"), "{}", o.stderr);
    let d = env.json(&["get", "deployment", "web"]);
    let containers = &d["spec"]["template"]["spec"]["containers"];
    // What the last apply dropped goes, what another manager added stays.
    assert_eq!(names(containers), ["app", "sidecar"], "{containers}");
    assert_eq!(containers[0]["image"], "nginx:1.26");
    assert_eq!(names(&containers[0]["env"]), ["A", "B"], "{containers}");

    // A pod: finalizers merge as a set.
    env.ok_stdin(&["apply", "-f", "-"], POD);
    env.ok(&[
        "patch",
        "pod",
        "p",
        "--type=json",
        "-p",
        r#"[{"op": "add", "path": "/metadata/finalizers/-", "value": "example.com/b"}]"#,
    ]);
    let changed = POD
        .replace("[example.com/a, example.com/c]", "[example.com/a]")
        .replace("nginx:1.25", "nginx:1.26");
    assert!(env.ok_stdin(&["apply", "-f", "-"], &changed).contains("pod/p configured"));
    let p = env.json(&["get", "pod", "p"]);
    let mut fin: Vec<&str> = p["metadata"]["finalizers"]
        .as_array()
        .expect("finalizers")
        .iter()
        .filter_map(Value::as_str)
        .collect();
    fin.sort_unstable();
    assert_eq!(fin, ["example.com/a", "example.com/b"], "{p}");
    assert_eq!(p["spec"]["containers"][0]["image"], "nginx:1.26");

    // A custom resource: a JSON merge patch (the server answers 415 to strategic ones).
    env.ok_stdin(&["apply", "-f", "-"], CLONESET);
    let o = env.run_with(
        &["apply", "-f", "-", "-v=7"],
        Some(&CLONESET.replace("replicas: 1", "replicas: 2")),
        std::time::Duration::from_secs(30),
    );
    assert!(o.ok, "{}\n{}", o.stdout, o.stderr);
    assert!(o.stdout.contains("cloneset.apps.kruise.io/c configured"), "{}", o.stdout);
    assert!(o.stderr.contains("application/merge-patch+json"), "{}", o.stderr);
    assert_eq!(env.json(&["get", "cloneset", "c"])["spec"]["replicas"], 2);
}
