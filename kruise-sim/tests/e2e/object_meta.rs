//! Object metadata (labels, annotations, finalizers, owner references) refused as
//! kube-apiserver 1.36's `ValidateObjectMeta` refuses it, on create, update, patch and
//! server-side apply, for built-in kinds and custom resources.

use crate::common::{Env, client, raw};
use serde_json::{Value, json};

const CMS: &str = "/api/v1/namespaces/default/configmaps";
const STS: &str = "/apis/apps.kruise.io/v1alpha1/namespaces/default/statefulsets";

const NAME_PART: &str = "name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')";
const LABEL_VALUE: &str = "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or '12345', regex used for validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')";

fn cm(meta: Value) -> Value {
    let mut meta = meta;
    meta["name"] = json!("cm");
    json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": meta, "data": {"a": "1"}})
}

fn sts(name: &str, meta: Value) -> Value {
    let mut meta = meta;
    meta["name"] = json!(name);
    json!({
        "apiVersion": "apps.kruise.io/v1alpha1",
        "kind": "StatefulSet",
        "metadata": meta,
        "spec": {
            "replicas": 1,
            "selector": {"matchLabels": {"app": "web"}},
            "template": {
                "metadata": {"labels": {"app": "web"}},
                "spec": {"containers": [{"name": "c", "image": "nginx"}]},
            },
        },
    })
}

fn refused(r: Result<Value, kube::core::Status>, want: &str) {
    let e = r.expect_err(want);
    assert_eq!((e.code, e.reason.as_str()), (422, "Invalid"), "{e:?}");
    assert_eq!(e.message, want);
}

#[test]
fn invalid_object_metadata_is_refused() {
    let env = Env::kruise();
    let rt = tokio::runtime::Runtime::new().expect("runtime");
    rt.block_on(async {
        let c = client(&env.server).await;
        let long_value = "a".repeat(64);
        let big = "x".repeat(256 * 1024);
        let owner = |kind: &str, name: &str, uid: &str, controller: bool| {
            json!({"apiVersion": "apps/v1", "kind": kind, "name": name, "uid": uid, "controller": controller})
        };
        let cases: Vec<(Value, String)> = vec![
            (
                json!({"labels": {"bad key!": "v"}}),
                format!(r#"metadata.labels: Invalid value: "bad key!": {NAME_PART}"#),
            ),
            (
                json!({"labels": {"k": "bad value!"}}),
                format!(r#"metadata.labels: Invalid value: "bad value!": {LABEL_VALUE}"#),
            ),
            (
                json!({"labels": {"k": long_value}}),
                format!(r#"metadata.labels: Invalid value: "{long_value}": must be no more than 63 bytes"#),
            ),
            (
                json!({"annotations": {"bad key!": "v"}}),
                format!(r#"metadata.annotations: Invalid value: "bad key!": {NAME_PART}"#),
            ),
            (
                json!({"annotations": {"a": big}}),
                "metadata.annotations: Too long: may not be more than 262144 bytes".to_owned(),
            ),
            (
                json!({"finalizers": ["bad finalizer!"]}),
                format!(r#"metadata.finalizers: Invalid value: "bad finalizer!": {NAME_PART}"#),
            ),
            (
                json!({"ownerReferences": [{"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "rs"}]}),
                r#"metadata.ownerReferences.uid: Invalid value: "": must not be empty"#.to_owned(),
            ),
            (
                json!({"ownerReferences": [owner("ReplicaSet", "a", "1", true), owner("Deployment", "b", "2", true)]}),
                r#"metadata.ownerReferences: Invalid value: [{"apiVersion":"apps/v1","kind":"ReplicaSet","name":"a","uid":"1","controller":true},{"apiVersion":"apps/v1","kind":"Deployment","name":"b","uid":"2","controller":true}]: Only one reference can have Controller set to true. Found "true" in references for ReplicaSet/a and Deployment/b"#.to_owned(),
            ),
            (
                json!({"labels": {"bad key!": "bad value!"}, "finalizers": ["a/b/c"]}),
                format!(
                    r#"[metadata.labels: Invalid value: "bad key!": {NAME_PART}, metadata.labels: Invalid value: "bad value!": {LABEL_VALUE}, metadata.finalizers: Invalid value: "a/b/c": a valid label key must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]') with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')]"#
                ),
            ),
        ];

        // Create: a built-in kind and a custom resource.
        for (meta, want) in &cases {
            refused(
                raw(&c, "POST", CMS, "application/json", Some(cm(meta.clone()))).await,
                &format!(r#"ConfigMap "cm" is invalid: {want}"#),
            );
            refused(
                raw(&c, "POST", STS, "application/json", Some(sts("web", meta.clone()))).await,
                &format!(r#"StatefulSet.apps.kruise.io "web" is invalid: {want}"#),
            );
        }

        // Valid metadata is accepted.
        let valid = json!({
            "labels": {"app.kubernetes.io/name": "web", "empty": "", "k": "a".repeat(63)},
            "annotations": {"Example.COM/Mixed-Case": "anything at all!", "a": "x".repeat(200 * 1024)},
            "finalizers": ["kubernetes", "example.com/keep"],
        });
        raw(&c, "POST", CMS, "application/json", Some(cm(valid.clone()))).await.expect("valid cm");
        raw(&c, "POST", STS, "application/json", Some(sts("web", valid.clone())))
            .await
            .expect("valid sts");
        // One controller among several owners (objects of their own: the owners do not exist).
        let owners = json!({"ownerReferences": [
            owner("ReplicaSet", "a", "1", true),
            owner("Deployment", "b", "2", false),
            {"apiVersion": "v1", "kind": "Pod", "name": "p", "uid": "3"},
        ]});
        raw(&c, "POST", STS, "application/json", Some(sts("owned", owners))).await.expect("owned");

        // Update (PUT).
        let mut stored = raw(&c, "GET", &format!("{CMS}/cm"), "application/json", None).await.expect("get");
        stored["metadata"]["labels"]["k"] = json!("bad value!");
        refused(
            raw(&c, "PUT", &format!("{CMS}/cm"), "application/json", Some(stored)).await,
            &format!(r#"ConfigMap "cm" is invalid: metadata.labels: Invalid value: "bad value!": {LABEL_VALUE}"#),
        );
        // Merge patch.
        refused(
            raw(
                &c,
                "PATCH",
                &format!("{CMS}/cm"),
                "application/merge-patch+json",
                Some(json!({"metadata": {"finalizers": ["bad finalizer!"]}})),
            )
            .await,
            &format!(r#"ConfigMap "cm" is invalid: metadata.finalizers: Invalid value: "bad finalizer!": {NAME_PART}"#),
        );
        refused(
            raw(
                &c,
                "PATCH",
                &format!("{STS}/web"),
                "application/merge-patch+json",
                Some(json!({"metadata": {"ownerReferences": [{"apiVersion": "", "kind": "K", "name": "n", "uid": "u"}]}})),
            )
            .await,
            r#"StatefulSet.apps.kruise.io "web" is invalid: metadata.ownerReferences.apiVersion: Invalid value: "": version must not be empty"#,
        );
        // Server-side apply, to an existing object and creating one.
        let apply = |name: &str| format!("{CMS}/{name}?fieldManager=test");
        let mut body = cm(json!({"annotations": {"bad key!": "v"}}));
        refused(
            raw(&c, "PATCH", &apply("cm"), "application/apply-patch+yaml", Some(body.clone())).await,
            &format!(r#"ConfigMap "cm" is invalid: metadata.annotations: Invalid value: "bad key!": {NAME_PART}"#),
        );
        body["metadata"]["name"] = json!("fresh");
        refused(
            raw(&c, "PATCH", &apply("fresh"), "application/apply-patch+yaml", Some(body)).await,
            &format!(r#"ConfigMap "fresh" is invalid: metadata.annotations: Invalid value: "bad key!": {NAME_PART}"#),
        );
        let mut ok = cm(json!({"labels": {"app": "web"}}));
        ok["metadata"]["name"] = json!("fresh");
        raw(&c, "PATCH", &apply("fresh"), "application/apply-patch+yaml", Some(ok)).await.expect("applied");
    });
}
