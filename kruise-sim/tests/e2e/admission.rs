//! Admission webhooks called by kruise-sim, driven by the real kubectl. The webhooks are an
//! HTTPS server in this test, with its own CA (rcgen), reached by URL and by a registered
//! service.

use crate::common;

use base64::Engine as _;
use common::Env;
use kruise_sim::Config;
use serde_json::{Value, json};

type Hooks = common::webhook::HookServer;

fn start_hooks() -> Hooks {
    common::webhook::start(&["127.0.0.1", "hooks.default.svc"], answer)
}

fn answer(path: &str, review: &Value) -> Value {
    let req = &review["request"];
    let uid = req["uid"].clone();
    let obj = if req["object"].is_null() { &req["oldObject"] } else { &req["object"] };
    let name = obj.pointer("/metadata/name").and_then(Value::as_str).unwrap_or("");
    let labels = obj.pointer("/metadata/labels");
    let resp = match path {
        "/mutate" => {
            let patch = if labels.is_some() {
                json!([{"op": "add", "path": "/metadata/labels/mutated-by", "value": "sim-webhook"}])
            } else {
                json!([{"op": "add", "path": "/metadata/labels", "value": {"mutated-by": "sim-webhook"}}])
            };
            json!({"uid": uid, "allowed": true, "patchType": "JSONPatch",
                "patch": base64::engine::general_purpose::STANDARD.encode(patch.to_string()),
                "warnings": ["mutated by the test webhook"]})
        }
        "/validate" => {
            let deny_label = labels.and_then(|l| l.get("deny")).is_some();
            let protected =
                req["operation"] == "DELETE" && labels.and_then(|l| l.get("protected")).is_some();
            if name.starts_with("bad") || deny_label {
                json!({"uid": uid, "allowed": false,
                    "status": {"code": 403, "reason": "Forbidden", "message": format!("name {name:?} is not welcome")}})
            } else if protected {
                json!({"uid": uid, "allowed": false, "status": {"message": "this object is protected"}})
            } else {
                json!({"uid": uid, "allowed": true})
            }
        }
        "/wrong-uid" => json!({"uid": "nope", "allowed": true}),
        _ => json!({"uid": uid, "allowed": true}),
    };
    json!({"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "response": resp})
}

fn b64(s: &str) -> String {
    base64::engine::general_purpose::STANDARD.encode(s)
}

fn configs(h: &Hooks) -> String {
    let ca = b64(&h.ca_pem);
    let addr = h.addr;
    format!(
        r#"
apiVersion: admissionregistration.k8s.io/v1
kind: MutatingWebhookConfiguration
metadata: {{name: sim-mutate}}
webhooks:
- name: mutate.kruise.test
  admissionReviewVersions: [v1]
  sideEffects: None
  clientConfig:
    service: {{namespace: default, name: hooks, path: /mutate, port: 443}}
    caBundle: {ca}
  namespaceSelector:
    matchExpressions: [{{key: kubernetes.io/metadata.name, operator: NotIn, values: [kube-system]}}]
  rules:
  - {{operations: [CREATE, UPDATE], apiGroups: [""], apiVersions: [v1], resources: [configmaps], scope: Namespaced}}
---
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingWebhookConfiguration
metadata: {{name: sim-validate}}
webhooks:
- name: validate.kruise.test
  admissionReviewVersions: [v1]
  sideEffects: None
  clientConfig:
    url: https://{addr}/validate
    caBundle: {ca}
  objectSelector:
    matchExpressions: [{{key: skip, operator: DoesNotExist}}]
  rules:
  - {{operations: ["*"], apiGroups: [""], apiVersions: [v1], resources: [configmaps]}}
  - {{operations: [UPDATE], apiGroups: [apps], apiVersions: [v1], resources: [deployments/scale]}}
- name: dead-ignored.kruise.test
  admissionReviewVersions: [v1]
  sideEffects: None
  failurePolicy: Ignore
  timeoutSeconds: 2
  clientConfig: {{url: "https://127.0.0.1:1/x"}}
  rules:
  - {{operations: [CREATE], apiGroups: [""], apiVersions: [v1], resources: [secrets]}}
- name: dead.kruise.test
  admissionReviewVersions: [v1]
  sideEffects: None
  clientConfig: {{url: "https://127.0.0.1:1/x"}}
  rules:
  - {{operations: [CREATE], apiGroups: [""], apiVersions: [v1], resources: [services]}}
- name: untrusted.kruise.test
  admissionReviewVersions: [v1]
  sideEffects: None
  clientConfig: {{url: "https://{addr}/validate"}}
  rules:
  - {{operations: [CREATE], apiGroups: [""], apiVersions: [v1], resources: [serviceaccounts]}}
"#
    )
}

fn cm(name: &str, labels: &str) -> String {
    format!(
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {name}\n  labels: {{{labels}}}\ndata: {{a: b}}\n"
    )
}

#[test]
fn webhooks_mutate_deny_and_fail() {
    let hooks = start_hooks();
    let env = Env::new(Config::default().with_webhook_service("default", "hooks", hooks.addr));
    env.ok_stdin(&["apply", "-f", "-"], &configs(&hooks));

    // Mutating (service, namespaceSelector): a label is added; the webhook's warning is shown.
    let o = env.run_with(&["apply", "-f", "-"], Some(&cm("good", "app: x")), T);
    assert!(o.ok, "{}", o.stderr);
    assert!(o.stderr.contains("Warning: mutated by the test webhook"), "{}", o.stderr);
    let got = env.json(&["get", "cm", "good"]);
    assert_eq!(got["metadata"]["labels"]["mutated-by"], "sim-webhook");
    assert_eq!(got["metadata"]["labels"]["app"], "x");
    // Not in kube-system (namespaceSelector).
    env.ok_stdin(&["apply", "-n", "kube-system", "-f", "-"], &cm("plain", ""));
    let got = env.json(&["get", "cm", "plain", "-n", "kube-system"]);
    assert!(got["metadata"]["labels"].get("mutated-by").is_none(), "{got}");

    // Validating (url): denial on create, as the real server words it.
    let e = env.run_with(&["apply", "-f", "-"], Some(&cm("bad-one", "app: x")), T).stderr;
    assert!(
        e.contains(r#"Error from server (Forbidden): error when creating "STDIN": admission webhook "validate.kruise.test" denied the request: name "bad-one" is not welcome"#),
        "{e}"
    );
    assert!(env.fails(&["get", "cm", "bad-one"]).contains("NotFound"));
    // objectSelector: skipped when the object has the `skip` label.
    env.ok_stdin(&["apply", "-f", "-"], &cm("bad-but-skipped", "skip: \"1\""));

    // Denial on update (labels: deny), and on delete (protected), without code or reason.
    let e = env.fails(&["label", "cm", "good", "deny=yes"]);
    assert!(e.contains(r#"admission webhook "validate.kruise.test" denied the request: name "good" is not welcome"#), "{e}");
    env.ok(&["label", "cm", "good", "protected=yes"]);
    let e = env.fails(&["delete", "cm", "good"]);
    assert!(
        e.contains(r#"Error from server: admission webhook "validate.kruise.test" denied the request: this object is protected"#),
        "{e}"
    );
    env.ok(&["label", "cm", "good", "protected-"]);
    env.ok(&["delete", "cm", "good"]);

    // failurePolicy Ignore with a dead URL: the request goes through.
    env.ok_stdin(&["apply", "-f", "-"], "apiVersion: v1\nkind: Secret\nmetadata: {name: s1}\n");
    // failurePolicy Fail (the default) with a dead URL.
    let svc =
        "apiVersion: v1\nkind: Service\nmetadata: {name: svc1}\nspec: {ports: [{port: 80}]}\n";
    let e = env.run_with(&["apply", "-f", "-"], Some(svc), T).stderr;
    assert!(
        e.contains(r#"Internal error occurred: failed calling webhook "dead.kruise.test": failed to call webhook: Post "https://127.0.0.1:1/x?timeout=10s": dial tcp 127.0.0.1:1: connect: connection refused"#),
        "{e}"
    );
    // No caBundle: the webhook's certificate is not trusted.
    let sa = "apiVersion: v1\nkind: ServiceAccount\nmetadata: {name: sa1}\n";
    let e = env.run_with(&["apply", "-f", "-"], Some(sa), T).stderr;
    assert!(e.contains("x509: certificate signed by unknown authority"), "{e}");

    // Dry run reaches the webhooks with dryRun: true and stores nothing.
    env.ok_stdin(&["apply", "--dry-run=server", "-f", "-"], &cm("dry", "app: z"));
    assert!(env.fails(&["get", "cm", "dry"]).contains("NotFound"));

    // The scale subresource: the webhook sees a Scale.
    let deploy = "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: web}\nspec:\n  replicas: 1\n  selector: {matchLabels: {app: web}}\n  template:\n    metadata: {labels: {app: web}}\n    spec: {containers: [{name: c, image: nginx}]}\n";
    env.ok_stdin(&["apply", "-f", "-"], deploy);
    env.ok(&["scale", "deployment", "web", "--replicas=3"]);

    let seen = hooks.seen.lock().expect("seen").clone();
    let find =
        |pred: &dyn Fn(&Value) -> bool| seen.iter().find(|(_, r)| pred(&r["request"])).cloned();
    let (_, create) =
        find(&|r| r["name"] == "good" && r["operation"] == "CREATE").expect("create seen");
    let r = &create["request"];
    assert_eq!(create["apiVersion"], "admission.k8s.io/v1");
    assert_eq!(r["kind"], json!({"group": "", "version": "v1", "kind": "ConfigMap"}));
    assert_eq!(r["resource"], json!({"group": "", "version": "v1", "resource": "configmaps"}));
    assert_eq!(r["namespace"], "default");
    assert_eq!(r["options"]["kind"], "CreateOptions");
    assert_eq!(r["userInfo"]["username"], "kubernetes-admin");
    assert_eq!(r["uid"].as_str().map(str::len), Some(36));
    let (_, del) = find(&|r| r["operation"] == "DELETE").expect("delete seen");
    assert!(del["request"]["object"].is_null() && del["request"]["oldObject"].is_object());
    assert_eq!(del["request"]["options"]["kind"], "DeleteOptions");
    let (_, upd) = find(&|r| r["operation"] == "UPDATE" && r["name"] == "good").expect("update");
    assert!(upd["request"]["oldObject"].is_object());
    let (_, dry) = find(&|r| r["name"] == "dry").expect("dry run seen");
    assert_eq!(dry["request"]["dryRun"], true);
    let (_, scale) = find(&|r| r["subResource"] == "scale").expect("scale seen");
    assert_eq!(scale["request"]["kind"]["kind"], "Scale");
    assert_eq!(scale["request"]["object"]["spec"]["replicas"], 3);
    assert_eq!(scale["request"]["oldObject"]["spec"]["replicas"], 1);
}

const T: std::time::Duration = std::time::Duration::from_secs(30);
