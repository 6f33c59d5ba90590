//! Strategic merge patch checked against what kube-apiserver 1.36.2 answered (upstream issue
//! #47): every case of the recorded corpus (`data/smp_corpus.json`) runs through kruise-sim
//! over HTTP, and the cases the real server accepted also through
//! `kruise_core::smp::apply_patch`.
//!
//! For kruise-sim each case's `before` is created (without the fields the server assigns), then
//! patched with `?dryRun=All`; the status must be the recorded one, and so must the patched
//! object (up to the fields that differ by nature) or the refusal's `reason` and `message`.
//! For `apply_patch`, the patch is applied to `before` and the sim's defaulting and decoding
//! (what the server does to any object it stores) run over the result before it is compared
//! with the recorded object the same way. A case the real server refused with 500 is an error
//! of the patch itself: `apply_patch` must refuse it too.
//!
//! Nothing is skipped: every mismatch of every case is printed, then the test fails.

use crate::common;

use kruise_core::smp::{PatchSchema, apply_patch};
use kruise_sim::{Config, Server};
use serde_json::{Value, json};

const CORPUS: &str = include_str!("data/smp_corpus.json");
const NAMESPACE: &str = "smp-corpus";

/// The custom resource definition the README describes for the last case.
fn widget_crd() -> Value {
    json!({
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": "widgets.corpus.example.com"},
        "spec": {
            "group": "corpus.example.com",
            "scope": "Namespaced",
            "names": {"plural": "widgets", "singular": "widget", "kind": "Widget", "listKind": "WidgetList"},
            "versions": [{
                "name": "v1", "served": true, "storage": true,
                "schema": {"openAPIV3Schema": {"type": "object", "properties": {"spec": {
                    "type": "object",
                    "properties": {
                        "size": {"type": "integer"},
                        "tags": {"type": "array", "items": {"type": "string"}}
                    }
                }}}}
            }]
        }
    })
}

struct Case {
    name: String,
    before: Value,
    patch: Value,
    status: u16,
    after: Value,
}

fn cases() -> Vec<Case> {
    let corpus: Value = serde_json::from_str(CORPUS).expect("the corpus is JSON");
    assert_eq!(corpus["patchContentType"], "application/strategic-merge-patch+json");
    assert_eq!(corpus["dryRun"], "All");
    let cases: Vec<Case> = corpus["cases"]
        .as_array()
        .expect("cases")
        .iter()
        .map(|c| Case {
            name: c["name"].as_str().expect("name").to_string(),
            before: c["before"].clone(),
            patch: c["patch"].clone(),
            status: u16::try_from(c["status"].as_u64().expect("status")).expect("an HTTP status"),
            after: c["after"].clone(),
        })
        .collect();
    assert_eq!(cases.len(), 51, "the corpus holds 51 cases");
    cases
}

/// Group, version and plural of a case's object.
fn resource(obj: &Value) -> (&'static str, &'static str, &'static str) {
    match (obj["apiVersion"].as_str(), obj["kind"].as_str()) {
        (Some("apps/v1"), Some("Deployment")) => ("apps", "v1", "deployments"),
        (Some("v1"), Some("Pod")) => ("", "v1", "pods"),
        (Some("v1"), Some("ConfigMap")) => ("", "v1", "configmaps"),
        (Some("v1"), Some("Service")) => ("", "v1", "services"),
        (Some("corpus.example.com/v1"), Some("Widget")) => ("corpus.example.com", "v1", "widgets"),
        other => panic!("no resource known for {other:?}"),
    }
}

fn collection_path(obj: &Value) -> String {
    let (group, version, plural) = resource(obj);
    let root =
        if group.is_empty() { "/api/v1".to_string() } else { format!("/apis/{group}/{version}") };
    format!("{root}/namespaces/{NAMESPACE}/{plural}")
}

fn name_of(obj: &Value) -> &str {
    obj.pointer("/metadata/name").and_then(Value::as_str).expect("metadata.name")
}

/// `before` as the README says to create it: without what the server assigns.
fn creatable(before: &Value) -> Value {
    let mut obj = before.clone();
    if let Some(meta) = obj.get_mut("metadata").and_then(Value::as_object_mut) {
        for key in ["uid", "resourceVersion", "creationTimestamp", "generation", "managedFields"] {
            meta.remove(key);
        }
    }
    if let Some(m) = obj.as_object_mut() {
        m.remove("status");
    }
    if obj["kind"] == "Service"
        && let Some(spec) = obj.get_mut("spec").and_then(Value::as_object_mut)
    {
        spec.remove("clusterIP");
        spec.remove("clusterIPs");
    }
    obj
}

/// An object without the fields that differ by nature between two servers (README): the
/// server-assigned metadata, a Deployment's revision annotation and its status (written by the
/// deployment controller, which the patch does not touch), a Pod's node and service-account
/// token volume, a Service's cluster IPs.
fn comparable(obj: &Value) -> Value {
    let mut obj = obj.clone();
    let kind = obj["kind"].as_str().unwrap_or_default().to_string();
    if let Some(meta) = obj.get_mut("metadata").and_then(Value::as_object_mut) {
        for key in ["uid", "resourceVersion", "creationTimestamp", "generation", "managedFields"] {
            meta.remove(key);
        }
        if kind == "Deployment"
            && let Some(annotations) = meta.get_mut("annotations").and_then(Value::as_object_mut)
        {
            annotations.remove("deployment.kubernetes.io/revision");
        }
    }
    let Some(spec) = obj.get_mut("spec").and_then(Value::as_object_mut) else { return obj };
    match kind.as_str() {
        "Pod" => {
            spec.remove("nodeName");
            let token = |v: &Value| {
                v.get("name")
                    .and_then(Value::as_str)
                    .is_some_and(|n| n.starts_with("kube-api-access-"))
            };
            if let Some(volumes) = spec.get_mut("volumes").and_then(Value::as_array_mut) {
                volumes.retain(|v| !token(v));
            }
            for list in ["containers", "initContainers"] {
                for c in spec.get_mut(list).and_then(Value::as_array_mut).into_iter().flatten() {
                    if let Some(mounts) = c.get_mut("volumeMounts").and_then(Value::as_array_mut) {
                        mounts.retain(|m| !token(m));
                    }
                }
            }
        }
        "Service" => {
            spec.remove("clusterIP");
            spec.remove("clusterIPs");
        }
        _ => {}
    }
    if kind == "Deployment"
        && let Some(m) = obj.as_object_mut()
    {
        m.remove("status");
    }
    obj
}

/// The paths where `expected` and `actual` differ, one line each.
fn differences(expected: &Value, actual: &Value, path: &str, out: &mut Vec<String>) {
    match (expected, actual) {
        (Value::Object(e), Value::Object(a)) => {
            let mut keys: Vec<&String> = e.keys().chain(a.keys()).collect();
            keys.sort();
            keys.dedup();
            for key in keys {
                let at = format!("{path}.{key}");
                match (e.get(key), a.get(key)) {
                    (Some(x), Some(y)) => differences(x, y, &at, out),
                    (Some(x), None) => out.push(format!("  {at}: missing (expected {})", short(x))),
                    (None, Some(y)) => out.push(format!("  {at}: unexpected {}", short(y))),
                    (None, None) => {}
                }
            }
        }
        (Value::Array(e), Value::Array(a)) if e.len() == a.len() => {
            for (i, (x, y)) in e.iter().zip(a).enumerate() {
                differences(x, y, &format!("{path}[{i}]"), out);
            }
        }
        _ if expected != actual => {
            out.push(format!("  {path}: expected {}, got {}", short(expected), short(actual)))
        }
        _ => {}
    }
}

fn short(v: &Value) -> String {
    let s = v.to_string();
    if s.chars().count() > 300 {
        format!("{}…", s.chars().take(300).collect::<String>())
    } else {
        s
    }
}

fn object_diff(expected: &Value, actual: &Value) -> Vec<String> {
    let mut out = Vec::new();
    differences(&comparable(expected), &comparable(actual), "", &mut out);
    out
}

/// What the server does to any object it stores besides the patch: the sim's defaults for the
/// built-in kind and the removal of fields the kind does not have.
fn as_stored(obj: &mut Value) {
    let (group, version, plural) = resource(obj);
    let kind = obj["kind"].as_str().unwrap_or_default().to_string();
    kruise_sim::openapi::drop_unknown_builtin_fields(group, version, &kind, obj);
    kruise_sim::defaults::apply(group, plural, obj);
}

fn patch_schema(obj: &Value) -> PatchSchema {
    match obj["kind"].as_str() {
        Some("Deployment") => PatchSchema::WORKLOAD_TEMPLATE,
        Some("Pod") => PatchSchema::Pod,
        Some("Service") => PatchSchema::Service,
        _ => PatchSchema::Object,
    }
}

/// The mismatches of `apply_patch` on one case.
fn check_apply_patch(case: &Case) -> Vec<String> {
    if case.before["kind"] == "Widget" {
        // Refused before any patching (415): no schema to patch a custom resource with.
        return Vec::new();
    }
    let result = apply_patch(&case.before, &case.patch, patch_schema(&case.before));
    match (case.status, result) {
        (200, Ok(mut patched)) => {
            as_stored(&mut patched);
            object_diff(&case.after, &patched)
        }
        (200, Err(e)) => vec![format!("  refused: {e}")],
        (500, Ok(patched)) => {
            vec![format!("  accepted a patch kube-apiserver cannot apply: {}", short(&patched))]
        }
        // Refusals of the patched object's validation are the server's, not the patch's.
        _ => Vec::new(),
    }
}

/// Sends one request; the status and the JSON body.
async fn send(
    client: &kube::Client,
    method: &str,
    path: &str,
    content_type: &str,
    body: &Value,
) -> (u16, Value) {
    let req = http::Request::builder()
        .method(method)
        .uri(path)
        .header("content-type", content_type)
        .header("accept", "application/json")
        .body(kube::client::Body::from(serde_json::to_vec(body).expect("body")))
        .expect("request");
    let resp = client.send(req).await.unwrap_or_else(|e| panic!("{method} {path}: {e}"));
    let status = resp.status().as_u16();
    let bytes = resp.into_body().collect_bytes().await.expect("response body");
    let value = serde_json::from_slice(&bytes)
        .unwrap_or_else(|_| json!({"unparsed": String::from_utf8_lossy(&bytes)}));
    (status, value)
}

/// The mismatches of kruise-sim on one case.
async fn check_sim(client: &kube::Client, case: &Case) -> Vec<String> {
    let collection = collection_path(&case.before);
    let (code, created) =
        send(client, "POST", &collection, "application/json", &creatable(&case.before)).await;
    if code != 201 {
        return vec![format!("  creating `before` answered {code}: {}", short(&created))];
    }
    let path = format!("{collection}/{}?dryRun=All", name_of(&case.before));
    let (code, got) =
        send(client, "PATCH", &path, "application/strategic-merge-patch+json", &case.patch).await;
    let mut out = Vec::new();
    if code != case.status {
        out.push(format!("  status: expected {}, got {code}", case.status));
    }
    if case.status == 200 {
        if code == 200 {
            out.extend(object_diff(&case.after, &got));
        } else {
            out.push(format!("  refused: {}", short(&got["message"])));
        }
        return out;
    }
    for field in ["reason", "message"] {
        let expected = case.after.get(field).cloned().unwrap_or(json!(""));
        let actual = got.get(field).cloned().unwrap_or(json!(""));
        if expected != actual {
            out.push(format!("  {field}: expected {expected}\n  {field}:      got {actual}"));
        }
    }
    out
}

#[tokio::test]
async fn strategic_merge_patch_matches_kube_apiserver() {
    let server = Server::start(Config::default()).await.expect("server");
    let client = common::client(&server).await;
    let (code, body) = send(
        &client,
        "POST",
        "/api/v1/namespaces",
        "application/json",
        &json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NAMESPACE}}),
    )
    .await;
    assert_eq!(code, 201, "{body}");
    let (code, body) = send(
        &client,
        "POST",
        "/apis/apiextensions.k8s.io/v1/customresourcedefinitions",
        "application/json",
        &widget_crd(),
    )
    .await;
    assert_eq!(code, 201, "{body}");

    let cases = cases();
    let mut report = Vec::new();
    let (mut sim_ok, mut smp_ok) = (0, 0);
    for case in &cases {
        let sim = check_sim(&client, case).await;
        if sim.is_empty() {
            sim_ok += 1;
        } else {
            report.push(format!("{} (kruise-sim):\n{}", case.name, sim.join("\n")));
        }
        let smp = check_apply_patch(case);
        if smp.is_empty() {
            smp_ok += 1;
        } else {
            report.push(format!("{} (apply_patch):\n{}", case.name, smp.join("\n")));
        }
    }
    let total = cases.len();
    assert!(
        report.is_empty(),
        "kruise-sim matched {sim_ok}/{total} cases, apply_patch {smp_ok}/{total}; mismatches:\n{}",
        report.join("\n")
    );
}

#[test]
fn comparable_objects_keep_everything_but_what_differs_by_nature() {
    let pod = json!({
        "kind": "Pod",
        "metadata": {"name": "p", "uid": "u", "resourceVersion": "1", "labels": {"a": "1"}},
        "spec": {
            "nodeName": "n",
            "containers": [{"name": "c", "volumeMounts": [
                {"name": "kube-api-access-x", "mountPath": "/t"}, {"name": "data", "mountPath": "/d"}
            ]}],
            "volumes": [{"name": "kube-api-access-x"}, {"name": "data"}]
        },
        "status": {"phase": "Pending"}
    });
    assert_eq!(
        comparable(&pod),
        json!({
            "kind": "Pod",
            "metadata": {"name": "p", "labels": {"a": "1"}},
            "spec": {
                "containers": [{"name": "c", "volumeMounts": [{"name": "data", "mountPath": "/d"}]}],
                "volumes": [{"name": "data"}]
            },
            "status": {"phase": "Pending"}
        })
    );
    let mut out = Vec::new();
    differences(&json!({"a": [1, 2], "b": 1}), &json!({"a": [1, 3], "c": 2}), "", &mut out);
    assert_eq!(
        out,
        ["  .a[1]: expected 2, got 3", "  .b: missing (expected 1)", "  .c: unexpected 2"]
    );
}
