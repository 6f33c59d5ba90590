//! Admission of the requests that are not plain create/update/patch/delete: deletecollection,
//! `pods/eviction`, `pods/binding`, and the deletes of the garbage collector and the
//! namespace controller. The webhooks are an HTTPS server in this test, with its own CA.

use crate::common;

use common::{client, raw};

use base64::Engine as _;
use kruise_sim::{Config, Server, ServerHandle};
use serde_json::{Value, json};
use std::time::{Duration, Instant};

fn deny(uid: &Value, message: String) -> Value {
    json!({"uid": uid, "allowed": false,
        "status": {"code": 403, "reason": "Forbidden", "message": message}})
}

type Hooks = common::webhook::HookServer;

fn start_hooks() -> Hooks {
    common::webhook::start(&["127.0.0.1"], answer)
}

fn answer(path: &str, review: &Value) -> Value {
    let req = &review["request"];
    let uid = req["uid"].clone();
    let resp = match path {
        // Pods labelled protect=true cannot be deleted.
        "/deny-protected" => {
            let old = &req["oldObject"];
            let name = old.pointer("/metadata/name").and_then(Value::as_str).unwrap_or("");
            if req["operation"] == "DELETE"
                && old.pointer("/metadata/labels/protect").and_then(Value::as_str) == Some("true")
            {
                deny(&uid, format!("pod {name} is protected"))
            } else {
                json!({"uid": uid, "allowed": true})
            }
        }
        // The pod named `guarded` cannot be evicted.
        "/eviction" => {
            let name = req.pointer("/object/metadata/name").and_then(Value::as_str);
            if name == Some("guarded") {
                deny(&uid, "eviction of guarded refused".into())
            } else {
                json!({"uid": uid, "allowed": true})
            }
        }
        // Nothing is bound to the node `forbidden`.
        "/binding" => {
            if req.pointer("/object/target/name").and_then(Value::as_str) == Some("forbidden") {
                deny(&uid, "node forbidden is off limits".into())
            } else {
                json!({"uid": uid, "allowed": true})
            }
        }
        "/deny-all" => {
            deny(&uid, format!("{} refused", req["kind"]["kind"].as_str().unwrap_or_default()))
        }
        _ => json!({"uid": uid, "allowed": true}),
    };
    json!({"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "response": resp})
}

/// One validating webhook at `path`, for `resources` and `operations`.
fn hook(h: &Hooks, name: &str, path: &str, operations: &[&str], resources: &[&str]) -> Value {
    json!({
        "name": name,
        "admissionReviewVersions": ["v1"],
        "sideEffects": "None",
        "clientConfig": {
            "url": format!("https://{}{path}", h.addr),
            "caBundle": base64::engine::general_purpose::STANDARD.encode(&h.ca_pem),
        },
        "rules": [{"operations": operations, "apiGroups": [""], "apiVersions": ["v1"],
            "resources": resources}],
    })
}

async fn post(c: &kube::Client, path: &str, body: Value) -> Result<Value, kube::core::Status> {
    raw(c, "POST", path, "application/json", Some(body)).await
}

async fn exists(c: &kube::Client, path: &str) -> bool {
    match raw(c, "GET", path, "application/json", None).await {
        Ok(_) => true,
        Err(s) if s.code == 404 => false,
        Err(s) => panic!("GET {path}: {s:?}"),
    }
}

const PODS: &str = "/api/v1/namespaces/default/pods";

fn pod(name: &str, labels: Value) -> Value {
    json!({"apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": name, "labels": labels},
        "spec": {"containers": [{"name": "c", "image": "nginx"}]}})
}

/// A server with the test's webhooks registered.
async fn setup() -> (Hooks, ServerHandle, kube::Client) {
    let hooks = start_hooks();
    let server = Server::start(Config::default()).await.expect("server");
    let c = client(&server).await;
    let cfg = json!({
        "apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingWebhookConfiguration",
        "metadata": {"name": "more"},
        "webhooks": [
            hook(&hooks, "pods-delete.more.test", "/deny-protected", &["DELETE"], &["pods"]),
            hook(&hooks, "pods-only.more.test", "/pods-only", &["CREATE"], &["pods"]),
            hook(&hooks, "eviction.more.test", "/eviction", &["CREATE"], &["pods/eviction"]),
            hook(&hooks, "binding.more.test", "/binding", &["*"], &["pods/binding"]),
            hook(&hooks, "all-sub.more.test", "/all-sub", &["CREATE"], &["*/*"]),
        ],
    });
    post(&c, "/apis/admissionregistration.k8s.io/v1/validatingwebhookconfigurations", cfg)
        .await
        .expect("webhook configuration");
    (hooks, server, c)
}

async fn eventually(what: &str, timeout: Duration, mut f: impl AsyncFnMut() -> bool) {
    let start = Instant::now();
    while !f().await {
        assert!(start.elapsed() < timeout, "timed out waiting for {what}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn deletecollection_admits_each_item_and_stops_at_a_denial() {
    let (hooks, _server, c) = setup().await;
    for (name, labels) in [
        ("a1", json!({"app": "x"})),
        ("a2", json!({"app": "x"})),
        ("b-protected", json!({"app": "x", "protect": "true"})),
        ("c3", json!({"app": "x"})),
    ] {
        post(&c, PODS, pod(name, labels)).await.expect("pod created");
    }
    // The denial is the request's error, as the real server reports the first failure.
    let e = raw(&c, "DELETE", PODS, "application/json", None).await.expect_err("denied");
    assert_eq!((e.code, e.reason.as_str()), (403, "Forbidden"), "{e:?}");
    assert_eq!(
        e.message,
        r#"admission webhook "pods-delete.more.test" denied the request: pod b-protected is protected"#
    );
    // Items before the denied one are deleted; it stays, and (one delete worker, list
    // order) so do the ones after it.
    assert!(!exists(&c, &format!("{PODS}/a1")).await);
    assert!(!exists(&c, &format!("{PODS}/a2")).await);
    assert!(exists(&c, &format!("{PODS}/b-protected")).await);
    assert!(exists(&c, &format!("{PODS}/c3")).await);
    // Selecting around the protected pod deletes the rest.
    let list = raw(
        &c,
        "DELETE",
        &format!("{PODS}?labelSelector=protect%21%3Dtrue"),
        "application/json",
        None,
    )
    .await
    .expect("deletecollection");
    assert_eq!(list["items"].as_array().map(Vec::len), Some(1), "{list}");
    assert!(!exists(&c, &format!("{PODS}/c3")).await);
    assert!(exists(&c, &format!("{PODS}/b-protected")).await);

    // What the webhook saw: one DELETE per item, the item as oldObject, the collection's
    // (empty) name, as AdmissionToValidateObjectDeleteFunc passes it.
    let deletes = hooks.requests("/deny-protected");
    let names: Vec<&str> = deletes
        .iter()
        .filter_map(|r| r.pointer("/oldObject/metadata/name").and_then(Value::as_str))
        .collect();
    assert_eq!(names, ["a1", "a2", "b-protected", "c3"]);
    let r = &deletes[2];
    assert_eq!(r["operation"], "DELETE");
    assert!(r["object"].is_null(), "{r}");
    assert!(r.get("name").is_none(), "{r}");
    assert_eq!(r["namespace"], "default");
    assert_eq!(r["kind"], json!({"group": "", "version": "v1", "kind": "Pod"}));
    assert_eq!(r["options"]["kind"], "DeleteOptions");
    assert_eq!(r["userInfo"]["username"], "kubernetes-admin");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn eviction_is_admitted_as_a_create_of_the_subresource() {
    let (hooks, _server, c) = setup().await;
    post(&c, PODS, pod("guarded", json!({}))).await.expect("pod");
    post(&c, PODS, pod("free", json!({}))).await.expect("pod");
    let eviction = |name: &str| {
        json!({"apiVersion": "policy/v1", "kind": "Eviction",
            "metadata": {"name": name, "namespace": "default"}})
    };
    let e = post(&c, &format!("{PODS}/guarded/eviction"), eviction("guarded"))
        .await
        .expect_err("eviction denied");
    assert_eq!(e.code, 403, "{e:?}");
    assert!(e.message.contains("eviction of guarded refused"), "{e:?}");
    assert!(exists(&c, &format!("{PODS}/guarded")).await);
    post(&c, &format!("{PODS}/free/eviction"), eviction("free")).await.expect("evicted");
    assert!(!exists(&c, &format!("{PODS}/free")).await);
    // A body naming another pod is refused, as EvictionREST does.
    let e = post(&c, &format!("{PODS}/guarded/eviction"), eviction("free"))
        .await
        .expect_err("name mismatch");
    assert_eq!(e.code, 400, "{e:?}");

    let seen = hooks.requests("/eviction");
    let r = seen.iter().find(|r| r["object"]["metadata"]["name"] == "guarded").expect("seen");
    assert_eq!(r["operation"], "CREATE");
    assert_eq!(r["kind"], json!({"group": "policy", "version": "v1", "kind": "Eviction"}));
    assert_eq!(r["resource"], json!({"group": "", "version": "v1", "resource": "pods"}));
    assert_eq!(r["subResource"], "eviction");
    assert_eq!(r["requestSubResource"], "eviction");
    assert_eq!(r["name"], "guarded");
    assert_eq!(r["namespace"], "default");
    assert_eq!(r["object"]["kind"], "Eviction");
    assert_eq!(r["object"]["apiVersion"], "policy/v1");
    assert!(r["oldObject"].is_null(), "{r}");
    assert_eq!(r["options"]["kind"], "CreateOptions");
    // `*/*` matches subresources too.
    assert!(hooks.requests("/all-sub").iter().any(|r| r["subResource"] == "eviction"));
    // A rule naming only `pods` does not match its subresources.
    assert!(hooks.requests("/pods-only").iter().all(|r| r.get("subResource").is_none()));
    // The eviction's own deletion of the pod is not admitted again.
    assert!(
        !hooks
            .requests("/deny-protected")
            .iter()
            .any(|r| r["oldObject"]["metadata"]["name"] == "free"),
        "the evicted pod's DELETE reached the webhook"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn eviction_deletes_with_its_delete_options() {
    let (_hooks, _server, c) = setup().await;
    let created = post(&c, PODS, pod("p", json!({}))).await.expect("pod");
    let uid = created["metadata"]["uid"].as_str().expect("uid").to_owned();
    let evict = |options: Value| {
        json!({"apiVersion": "policy/v1", "kind": "Eviction",
            "metadata": {"name": "p", "namespace": "default"}, "deleteOptions": options})
    };
    let path = format!("{PODS}/p/eviction");
    // A UID precondition that does not hold: the real server's 409, and the pod stays.
    let e = post(&c, &path, evict(json!({"preconditions": {"uid": "not-the-uid"}})))
        .await
        .expect_err("precondition fails");
    assert_eq!(e.code, 409, "{e:?}");
    assert!(
        e.message.starts_with(r#"Operation cannot be fulfilled on Pod "p": the UID in the precondition (not-the-uid) does not match the UID in record ("#),
        "{e:?}"
    );
    assert!(exists(&c, &format!("{PODS}/p")).await);
    // A dry run in the deleteOptions deletes nothing.
    post(&c, &path, evict(json!({"dryRun": ["All"]}))).await.expect("dry run");
    assert!(exists(&c, &format!("{PODS}/p")).await);
    // With the right UID the pod goes.
    post(&c, &path, evict(json!({"preconditions": {"uid": uid}}))).await.expect("evicted");
    assert!(!exists(&c, &format!("{PODS}/p")).await);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn eviction_grace_period_comes_from_its_delete_options() {
    let server = Server::start(Config { graceful_pod_deletion: true, ..Config::default() })
        .await
        .expect("server");
    let c = client(&server).await;
    for name in ["slow", "now"] {
        let mut p = pod(name, json!({}));
        p["spec"]["nodeName"] = json!("node-a");
        post(&c, PODS, p).await.expect("pod");
    }
    let evict = |name: &str, options: Value| {
        json!({"apiVersion": "policy/v1", "kind": "Eviction",
            "metadata": {"name": name, "namespace": "default"}, "deleteOptions": options})
    };
    post(&c, &format!("{PODS}/slow/eviction"), evict("slow", json!({"gracePeriodSeconds": 45})))
        .await
        .expect("evicted");
    let slow = raw(&c, "GET", &format!("{PODS}/slow"), "application/json", None)
        .await
        .expect("still terminating");
    assert_eq!(slow["metadata"]["deletionGracePeriodSeconds"], 45, "{slow}");
    assert!(slow["metadata"]["deletionTimestamp"].is_string(), "{slow}");
    post(&c, &format!("{PODS}/now/eviction"), evict("now", json!({"gracePeriodSeconds": 0})))
        .await
        .expect("evicted");
    assert!(!exists(&c, &format!("{PODS}/now")).await);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn match_conditions_decide_whether_a_webhook_is_called() {
    let hooks = start_hooks();
    let server = Server::start(Config::default()).await.expect("server");
    let c = client(&server).await;
    let with = |name: &str, path: &str, resource: &str, policy: &str, expression: &str| {
        let mut h = hook(&hooks, name, path, &["CREATE"], &[resource]);
        h["failurePolicy"] = json!(policy);
        h["matchConditions"] = json!([
            {"name": "not-system", "expression": "!request.userInfo.username.startsWith('system:')"},
            {"name": "the-test", "expression": expression},
        ]);
        h
    };
    let cfg = json!({
        "apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingWebhookConfiguration",
        "metadata": {"name": "cel"},
        "webhooks": [
            with("guard.cel.test", "/deny-all", "configmaps", "Fail",
                "has(object.metadata.labels) && 'guard' in object.metadata.labels \
                    && object.metadata.labels.guard == 'yes'"),
            with("broken-fail.cel.test", "/allow", "secrets", "Fail", "object.nope.deeper == 1"),
            with("broken-ignore.cel.test", "/deny-all", "serviceaccounts", "Ignore",
                "object.nope.deeper == 1"),
        ],
    });
    post(&c, "/apis/admissionregistration.k8s.io/v1/validatingwebhookconfigurations", cfg)
        .await
        .expect("webhook configuration");
    let ns = "/api/v1/namespaces/default";
    let named = |kind: &str, name: &str, labels: Value| json!({"apiVersion": "v1", "kind": kind, "metadata": {"name": name, "labels": labels}});

    // The conditions hold: the webhook is called and denies.
    let e = post(&c, &format!("{ns}/configmaps"), named("ConfigMap", "g", json!({"guard": "yes"})))
        .await
        .expect_err("denied");
    assert_eq!(e.code, 403, "{e:?}");
    assert!(e.message.contains("ConfigMap refused"), "{e:?}");
    // A condition is false: the webhook is not called at all.
    post(&c, &format!("{ns}/configmaps"), named("ConfigMap", "free", json!({})))
        .await
        .expect("not guarded");
    post(&c, &format!("{ns}/configmaps"), named("ConfigMap", "other", json!({"guard": "no"})))
        .await
        .expect("not guarded");
    let seen: Vec<Value> = hooks.requests("/deny-all");
    assert_eq!(seen.len(), 1, "{seen:?}");
    assert_eq!(seen[0]["object"]["metadata"]["name"], "g");

    // An expression that cannot be evaluated: failurePolicy Fail refuses the request...
    let e = post(&c, &format!("{ns}/secrets"), named("Secret", "s", json!({})))
        .await
        .expect_err("evaluation error");
    // ... as kube-apiserver does: 403, naming the object and the expression.
    assert_eq!(e.code, 403, "{e:?}");
    let expected =
        r#"secrets "s" is forbidden: expression 'object.nope.deeper == 1' resulted in error: "#;
    assert!(e.message.starts_with(expected), "{e:?}");
    assert!(hooks.requests("/allow").is_empty(), "the webhook was called");
    // ... and Ignore skips the webhook (which would deny).
    post(&c, &format!("{ns}/serviceaccounts"), named("ServiceAccount", "sa", json!({})))
        .await
        .expect("skipped");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn binding_is_admitted_as_a_create_of_the_subresource() {
    let (hooks, _server, c) = setup().await;
    post(&c, PODS, pod("p", json!({}))).await.expect("pod");
    let binding = |node: &str| {
        json!({"apiVersion": "v1", "kind": "Binding", "metadata": {"name": "p"},
            "target": {"apiVersion": "v1", "kind": "Node", "name": node}})
    };
    let e = post(&c, &format!("{PODS}/p/binding"), binding("forbidden"))
        .await
        .expect_err("binding denied");
    assert!(e.message.contains("node forbidden is off limits"), "{e:?}");
    let got = raw(&c, "GET", &format!("{PODS}/p"), "application/json", None).await.expect("pod");
    assert!(got["spec"].get("nodeName").is_none(), "{got}");
    post(&c, &format!("{PODS}/p/binding"), binding("n1")).await.expect("bound");
    let got = raw(&c, "GET", &format!("{PODS}/p"), "application/json", None).await.expect("pod");
    assert_eq!(got["spec"]["nodeName"], "n1");

    let seen = hooks.requests("/binding");
    assert_eq!(seen.len(), 2, "{seen:?}");
    let r = &seen[1];
    assert_eq!(r["operation"], "CREATE");
    assert_eq!(r["kind"], json!({"group": "", "version": "v1", "kind": "Binding"}));
    assert_eq!(r["resource"], json!({"group": "", "version": "v1", "resource": "pods"}));
    assert_eq!(r["subResource"], "binding");
    assert_eq!(r["name"], "p");
    assert_eq!(r["object"]["kind"], "Binding");
    assert_eq!(r["object"]["target"]["name"], "n1");
    // The request's namespace is filled in.
    assert_eq!(r["object"]["metadata"]["namespace"], "default");
    assert!(hooks.requests("/pods-only").iter().all(|r| r.get("subResource").is_none()));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn garbage_collector_deletes_are_admitted_and_retried() {
    let (hooks, _server, c) = setup().await;
    let owner = post(
        &c,
        "/api/v1/namespaces/default/configmaps",
        json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "owner"}}),
    )
    .await
    .expect("owner");
    let uid = owner["metadata"]["uid"].as_str().expect("uid").to_string();
    let owned = |name: &str, labels: Value| {
        let mut p = pod(name, labels);
        p["metadata"]["ownerReferences"] = json!([{"apiVersion": "v1", "kind": "ConfigMap",
            "name": "owner", "uid": uid}]);
        p
    };
    post(&c, PODS, owned("dep-free", json!({}))).await.expect("dependent");
    post(&c, PODS, owned("dep-protected", json!({"protect": "true"}))).await.expect("dependent");
    raw(
        &c,
        "DELETE",
        "/api/v1/namespaces/default/configmaps/owner",
        "application/json",
        Some(json!({"propagationPolicy": "Background"})),
    )
    .await
    .expect("owner deleted");
    // The allowed dependent is gone by the time the owner's deletion is answered.
    assert!(!exists(&c, &format!("{PODS}/dep-free")).await);
    // The denied one stays, through retries, and the server keeps serving.
    for _ in 0..6 {
        assert!(exists(&c, &format!("{PODS}/dep-protected")).await);
        post(&c, PODS, pod(&format!("other-{}", rand_suffix()), json!({}))).await.expect("serving");
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
    let seen = hooks.requests("/deny-protected");
    let r = seen
        .iter()
        .find(|r| r["oldObject"]["metadata"]["name"] == "dep-protected")
        .expect("the collector's DELETE reached the webhook");
    assert_eq!(r["operation"], "DELETE");
    assert_eq!(
        r["userInfo"]["username"],
        "system:serviceaccount:kube-system:generic-garbage-collector"
    );
    assert_eq!(r["name"], "dep-protected");
    assert_eq!(r["options"]["propagationPolicy"], "Background");
    assert_eq!(r["options"]["preconditions"]["uid"], r["oldObject"]["metadata"]["uid"]);
    // Retried with backoff, not in a loop.
    let tries =
        seen.iter().filter(|r| r["oldObject"]["metadata"]["name"] == "dep-protected").count();
    assert!((2..=6).contains(&tries), "{tries} attempts in 1.5 s");

    // Once it is no longer protected, the collector's retry deletes it.
    raw(
        &c,
        "PATCH",
        &format!("{PODS}/dep-protected"),
        "application/merge-patch+json",
        Some(json!({"metadata": {"labels": {"protect": null}}})),
    )
    .await
    .expect("unprotected");
    eventually("the dependent to be collected", Duration::from_secs(10), async || {
        !exists(&c, &format!("{PODS}/dep-protected")).await
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn namespace_cleanup_is_admitted() {
    let (hooks, _server, c) = setup().await;
    post(
        &c,
        "/api/v1/namespaces",
        json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "doomed"}}),
    )
    .await
    .expect("namespace");
    let pods = "/api/v1/namespaces/doomed/pods";
    post(&c, pods, pod("free", json!({}))).await.expect("pod");
    post(&c, pods, pod("kept", json!({"protect": "true"}))).await.expect("pod");
    post(&c, pods, pod("later", json!({}))).await.expect("pod");
    let maps = "/api/v1/namespaces/doomed/configmaps";
    post(&c, maps, json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "zz"}}))
        .await
        .expect("configmap");
    raw(&c, "DELETE", "/api/v1/namespaces/doomed", "application/json", None)
        .await
        .expect("namespace deleted");
    assert!(!exists(&c, &format!("{pods}/free")).await);
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert!(exists(&c, &format!("{pods}/kept")).await);
    // The pods' deletecollection stopped at `kept`; other resources go on.
    assert!(exists(&c, &format!("{pods}/later")).await);
    assert!(!exists(&c, &format!("{maps}/zz")).await);
    let ns = raw(&c, "GET", "/api/v1/namespaces/doomed", "application/json", None)
        .await
        .expect("still terminating");
    assert_eq!(ns["status"]["phase"], "Terminating");
    let seen = hooks.requests("/deny-protected");
    let r = seen.iter().find(|r| r["oldObject"]["metadata"]["name"] == "kept").expect("seen");
    assert_eq!(r["userInfo"]["username"], "system:serviceaccount:kube-system:namespace-controller");
    assert_eq!(r["namespace"], "doomed");

    raw(
        &c,
        "PATCH",
        &format!("{pods}/kept"),
        "application/merge-patch+json",
        Some(json!({"metadata": {"labels": {"protect": null}}})),
    )
    .await
    .expect("unprotected");
    eventually("the namespace to go", Duration::from_secs(10), async || {
        !exists(&c, "/api/v1/namespaces/doomed").await
    })
    .await;
}

fn rand_suffix() -> String {
    use std::sync::atomic::{AtomicU32, Ordering};
    static N: AtomicU32 = AtomicU32::new(0);
    N.fetch_add(1, Ordering::Relaxed).to_string()
}
