//! Webhook configurations refused at write as kube-apiserver 1.36 refuses them
//! (`ValidateMutatingWebhookConfiguration`, `ValidateValidatingWebhookConfiguration`), on
//! create, update, patch and server-side apply.

use crate::common::{Env, client, raw};
use serde_json::{Value, json};

const BASE: &str = "/apis/admissionregistration.k8s.io/v1";
const NAME_PART: &str = "name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')";
const LABEL_VALUE: &str = "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or '12345', regex used for validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')";

/// A webhook kube-apiserver accepts; its rule matches nothing the test writes.
fn hook() -> Value {
    json!({
        "name": "a.example.com",
        "sideEffects": "None",
        "admissionReviewVersions": ["v1"],
        "clientConfig": {"url": "https://127.0.0.1:9443/x"},
        "rules": [{"operations": ["CREATE"], "apiGroups": ["example.com"], "apiVersions": ["v1"], "resources": ["widgets"]}],
    })
}

fn config(kind: &str, name: &str, hooks: Vec<Value>) -> Value {
    json!({"apiVersion": "admissionregistration.k8s.io/v1", "kind": kind, "metadata": {"name": name}, "webhooks": hooks})
}

fn refused(r: Result<Value, kube::core::Status>, want: &str) {
    let e = r.expect_err(want);
    assert_eq!((e.code, e.reason.as_str()), (422, "Invalid"), "{e:?}");
    assert_eq!(e.message, want);
}

/// Each case: a change to `hook()` (a JSON merge) and the one cause it brings.
fn cases() -> Vec<(Value, String)> {
    let rule = |r: Value| {
        let mut base = hook()["rules"][0].clone();
        for (k, v) in r.as_object().expect("rule") {
            base[k] = v.clone();
        }
        json!({"rules": [base]})
    };
    let svc = |s: Value| {
        let mut service = json!({"name": "s", "namespace": "ns", "port": 443});
        for (k, v) in s.as_object().expect("service") {
            service[k] = v.clone();
        }
        json!({"clientConfig": {"service": service}})
    };
    let url = |u: &str| json!({"clientConfig": {"url": u}});
    const FORM: &str = "; desired format: https://host[/path]";
    vec![
        (json!({"name": "mpod.kb"}), r#"webhooks[0].name: Invalid value: "mpod.kb": should be a domain with at least three segments separated by dots"#.into()),
        (json!({"name": ""}), "webhooks[0].name: Required value".into()),
        (rule(json!({"operations": ["*", "CREATE"]})), r#"webhooks[0].rules[0].operations: Invalid value: []admissionregistration.OperationType{"*", "CREATE"}: if '*' is present, must not specify other operations"#.into()),
        (rule(json!({"operations": ["PATCH"]})), r#"webhooks[0].rules[0].operations[0]: Unsupported value: "PATCH": supported values: "*", "CONNECT", "CREATE", "DELETE", "UPDATE""#.into()),
        (rule(json!({"operations": []})), "webhooks[0].rules[0].operations: Required value".into()),
        (rule(json!({"apiGroups": []})), "webhooks[0].rules[0].apiGroups: Required value".into()),
        (rule(json!({"apiGroups": ["*", "apps"]})), r#"webhooks[0].rules[0].apiGroups: Invalid value: []string{"*", "apps"}: if '*' is present, must not specify other API groups"#.into()),
        (rule(json!({"apiVersions": ["*", "v1"]})), r#"webhooks[0].rules[0].apiVersions: Invalid value: []string{"*", "v1"}: if '*' is present, must not specify other API versions"#.into()),
        (rule(json!({"apiVersions": ["v1", ""]})), "webhooks[0].rules[0].apiVersions[1]: Required value".into()),
        (rule(json!({"resources": []})), "webhooks[0].rules[0].resources: Required value".into()),
        (rule(json!({"resources": ["*", "pods"]})), r#"webhooks[0].rules[0].resources: Invalid value: []string{"*", "pods"}: if '*' is present, must not specify other resources without subresources"#.into()),
        (rule(json!({"resources": ["*/*", "pods/status"]})), r#"webhooks[0].rules[0].resources: Invalid value: []string{"*/*", "pods/status"}: if '*/*' is present, must not specify other resources"#.into()),
        (rule(json!({"resources": ["pods/*", "pods/status"]})), r#"webhooks[0].rules[0].resources[1]: Invalid value: "pods/status": if 'pods/*' is present, must not specify pods/status"#.into()),
        (rule(json!({"resources": ["*/status", "pods/status"]})), r#"webhooks[0].rules[0].resources[1]: Invalid value: "pods/status": if '*/status' is present, must not specify pods/status"#.into()),
        (rule(json!({"scope": "Everywhere"})), r#"webhooks[0].rules[0].scope: Unsupported value: "Everywhere": supported values: "*", "Cluster", "Namespaced""#.into()),
        (json!({"failurePolicy": "Sometimes"}), r#"webhooks[0].failurePolicy: Unsupported value: "Sometimes": supported values: "Fail", "Ignore""#.into()),
        (json!({"matchPolicy": "Fuzzy"}), r#"webhooks[0].matchPolicy: Unsupported value: "Fuzzy": supported values: "Equivalent", "Exact""#.into()),
        (json!({"sideEffects": null}), "webhooks[0].sideEffects: Required value: must specify one of None, NoneOnDryRun".into()),
        (json!({"sideEffects": "Some"}), r#"webhooks[0].sideEffects: Unsupported value: "Some": supported values: "None", "NoneOnDryRun""#.into()),
        (json!({"timeoutSeconds": 0}), "webhooks[0].timeoutSeconds: Invalid value: 0: the timeout value must be between 1 and 30 seconds".into()),
        (json!({"timeoutSeconds": 31}), "webhooks[0].timeoutSeconds: Invalid value: 31: the timeout value must be between 1 and 30 seconds".into()),
        (json!({"namespaceSelector": {"matchLabels": {"bad key!": "v"}}}), format!(r#"webhooks[0].namespaceSelector.matchLabels: Invalid value: "bad key!": {NAME_PART}"#)),
        (json!({"namespaceSelector": {"matchLabels": {"k": "bad value!"}}}), format!(r#"webhooks[0].namespaceSelector.matchLabels: Invalid value: "bad value!": {LABEL_VALUE}"#)),
        (json!({"objectSelector": {"matchExpressions": [{"key": "app", "operator": "Near"}]}}), r#"webhooks[0].objectSelector.matchExpressions[0].operator: Invalid value: "Near": not a valid selector operator"#.into()),
        (json!({"objectSelector": {"matchExpressions": [{"key": "app", "operator": "In"}]}}), "webhooks[0].objectSelector.matchExpressions[0].values: Required value: must be specified when `operator` is 'In' or 'NotIn'".into()),
        (json!({"objectSelector": {"matchExpressions": [{"key": "app", "operator": "Exists", "values": ["x"]}]}}), "webhooks[0].objectSelector.matchExpressions[0].values: Forbidden: may not be specified when `operator` is 'Exists' or 'DoesNotExist'".into()),
        (json!({"objectSelector": {"matchExpressions": [{"key": "bad key!", "operator": "Exists"}]}}), format!(r#"webhooks[0].objectSelector.matchExpressions[0].key: Invalid value: "bad key!": {NAME_PART}"#)),
        (json!({"objectSelector": {"matchExpressions": [{"key": "app", "operator": "In", "values": ["ok", "bad value!"]}]}}), format!(r#"webhooks[0].objectSelector.matchExpressions[0].values[1]: Invalid value: "bad value!": {LABEL_VALUE}"#)),
        (json!({"clientConfig": {}}), "webhooks[0].clientConfig: Required value: exactly one of url or service is required".into()),
        (json!({"clientConfig": {"url": "https://127.0.0.1/x", "service": {"name": "s", "namespace": "ns"}}}), "webhooks[0].clientConfig: Required value: exactly one of url or service is required".into()),
        (url("http://127.0.0.1:9443/x"), format!(r#"webhooks[0].clientConfig.url: Invalid value: "http": 'https' is the only allowed URL scheme{FORM}"#)),
        (url("https:///x"), format!(r#"webhooks[0].clientConfig.url: Invalid value: "": host must be provided{FORM}"#)),
        (url("https://user@127.0.0.1/x"), r#"webhooks[0].clientConfig.url: Invalid value: "user": user information is not permitted in the URL"#.into()),
        (url("https://127.0.0.1/x#part"), r#"webhooks[0].clientConfig.url: Invalid value: "part": fragments are not permitted in the URL"#.into()),
        (url("https://127.0.0.1/x?a=b"), r#"webhooks[0].clientConfig.url: Invalid value: "a=b": query parameters are not permitted in the URL"#.into()),
        (svc(json!({"name": ""})), "webhooks[0].clientConfig.service.name: Required value: service name is required".into()),
        (svc(json!({"namespace": ""})), "webhooks[0].clientConfig.service.namespace: Required value: service namespace is required".into()),
        (svc(json!({"port": 0})), "webhooks[0].clientConfig.service.port: Invalid value: 0: port is not valid: must be between 1 and 65535, inclusive".into()),
        (svc(json!({"port": 65536})), "webhooks[0].clientConfig.service.port: Invalid value: 65536: port is not valid: must be between 1 and 65535, inclusive".into()),
        (svc(json!({"path": "validate"})), r#"webhooks[0].clientConfig.service.path: Invalid value: "validate": must start with a '/'"#.into()),
        (svc(json!({"path": "//"})), r#"webhooks[0].clientConfig.service.path: Invalid value: "//": segment[0] may not be empty"#.into()),
        (svc(json!({"path": "/a//b"})), r#"webhooks[0].clientConfig.service.path: Invalid value: "/a//b": segment[1] may not be empty"#.into()),
        (json!({"matchConditions": [{"name": "bad name!", "expression": "true"}]}), format!(r#"webhooks[0].matchConditions[0].name: Invalid value: "bad name!": {NAME_PART}"#)),
        (json!({"matchConditions": [{"name": "c", "expression": " "}]}), "webhooks[0].matchConditions[0].expression: Required value".into()),
        (json!({"matchConditions": [{"name": "c", "expression": "true"}, {"name": "c", "expression": "false"}]}), r#"webhooks[0].matchConditions[1].name: Duplicate value: "c""#.into()),
        (json!({"admissionReviewVersions": []}), "webhooks[0].admissionReviewVersions: Required value: must specify one of v1, v1beta1".into()),
        (json!({"admissionReviewVersions": ["v2"]}), r#"webhooks[0].admissionReviewVersions: Invalid value: []string{"v2"}: must include at least one of v1, v1beta1"#.into()),
        (json!({"admissionReviewVersions": ["v1", "v1"]}), r#"webhooks[0].admissionReviewVersions[1]: Invalid value: "v1": duplicate version"#.into()),
    ]
}

fn merged(change: &Value) -> Value {
    let mut h = hook();
    for (k, v) in change.as_object().expect("change") {
        if v.is_null() {
            h.as_object_mut().expect("hook").remove(k);
        } else {
            h[k] = v.clone();
        }
    }
    h
}

#[test]
fn invalid_webhook_configurations_are_refused() {
    let env = Env::kruise();
    let rt = tokio::runtime::Runtime::new().expect("runtime");
    rt.block_on(async {
        let c = client(&env.server).await;
        for (kind, plural) in [
            ("ValidatingWebhookConfiguration", "validatingwebhookconfigurations"),
            ("MutatingWebhookConfiguration", "mutatingwebhookconfigurations"),
        ] {
            let url = format!("{BASE}/{plural}");
            let qualified = format!("{kind}.admissionregistration.k8s.io");
            for (change, want) in cases() {
                refused(
                    raw(&c, "POST", &url, "application/json", Some(config(kind, "bad", vec![merged(&change)]))).await,
                    &format!(r#"{qualified} "bad" is invalid: {want}"#),
                );
            }
            // Duplicate webhook names.
            refused(
                raw(&c, "POST", &url, "application/json", Some(config(kind, "bad", vec![hook(), hook()]))).await,
                &format!(r#"{qualified} "bad" is invalid: webhooks[1].name: Duplicate value: "a.example.com""#),
            );
            // Several causes at once, in Go's order.
            let many = merged(&json!({"name": "x.y", "timeoutSeconds": 31, "admissionReviewVersions": ["v2"]}));
            refused(
                raw(&c, "POST", &url, "application/json", Some(config(kind, "bad", vec![many]))).await,
                &format!(
                    r#"{qualified} "bad" is invalid: [webhooks[0].name: Invalid value: "x.y": should be a domain with at least three segments separated by dots, webhooks[0].timeoutSeconds: Invalid value: 31: the timeout value must be between 1 and 30 seconds, webhooks[0].admissionReviewVersions: Invalid value: []string{{"v2"}}: must include at least one of v1, v1beta1]"#
                ),
            );

            // A valid configuration, with every optional field set, is accepted.
            let mut full = hook();
            full["rules"] = json!([
                {"operations": ["*"], "apiGroups": ["*"], "apiVersions": ["*"], "resources": ["widgets", "widgets/status", "*/scale"], "scope": "Namespaced"},
                {"operations": ["CREATE", "UPDATE", "DELETE", "CONNECT"], "apiGroups": ["", "example.com"], "apiVersions": ["v1", "v1beta1"], "resources": ["*/*"], "scope": "*"},
            ]);
            full["failurePolicy"] = json!("Ignore");
            full["matchPolicy"] = json!("Exact");
            full["sideEffects"] = json!("NoneOnDryRun");
            full["timeoutSeconds"] = json!(30);
            full["admissionReviewVersions"] = json!(["v1", "v1beta1", "v2"]);
            full["namespaceSelector"] = json!({"matchLabels": {"example.com/team": "web", "empty": ""}});
            full["objectSelector"] = json!({"matchExpressions": [{"key": "never", "operator": "In", "values": ["x"]}, {"key": "a", "operator": "DoesNotExist"}]});
            full["matchConditions"] = json!([{"name": "example.com/only", "expression": "false"}]);
            if kind.starts_with("Mutating") {
                full["reinvocationPolicy"] = json!("IfNeeded");
            }
            let mut second = hook();
            second["name"] = json!("b.example.com");
            second["clientConfig"] = json!({"service": {"name": "s", "namespace": "ns", "path": "/validate/v1/"}});
            raw(&c, "POST", &url, "application/json", Some(config(kind, "good", vec![full, second])))
                .await
                .expect("valid configuration");

            // Update (PUT).
            let mut stored = raw(&c, "GET", &format!("{url}/good"), "application/json", None).await.expect("get");
            stored["webhooks"][0]["failurePolicy"] = json!("Sometimes");
            refused(
                raw(&c, "PUT", &format!("{url}/good"), "application/json", Some(stored)).await,
                &format!(r#"{qualified} "good" is invalid: webhooks[0].failurePolicy: Unsupported value: "Sometimes": supported values: "Fail", "Ignore""#),
            );
            // JSON patch.
            refused(
                raw(&c, "PATCH", &format!("{url}/good"), "application/json-patch+json",
                    Some(json!([{"op": "add", "path": "/webhooks/1/clientConfig/service/port", "value": 70000}]))).await,
                &format!(r#"{qualified} "good" is invalid: webhooks[1].clientConfig.service.port: Invalid value: 70000: port is not valid: must be between 1 and 65535, inclusive"#),
            );
            // Server-side apply, to the existing object and creating one.
            let apply = |name: &str| format!("{url}/{name}?fieldManager=test");
            let bad = merged(&json!({"rules": [{"operations": ["CREATE"], "apiGroups": ["example.com"], "apiVersions": ["v1"], "resources": ["*", "widgets"]}]}));
            let want = r#"webhooks[0].rules[0].resources: Invalid value: []string{"*", "widgets"}: if '*' is present, must not specify other resources without subresources"#;
            refused(
                raw(&c, "PATCH", &format!("{}&force=true", apply("good")), "application/apply-patch+yaml", Some(config(kind, "good", vec![bad.clone()]))).await,
                &format!(r#"{qualified} "good" is invalid: {want}"#),
            );
            refused(
                raw(&c, "PATCH", &apply("fresh"), "application/apply-patch+yaml", Some(config(kind, "fresh", vec![bad]))).await,
                &format!(r#"{qualified} "fresh" is invalid: {want}"#),
            );
            raw(&c, "PATCH", &apply("fresh"), "application/apply-patch+yaml", Some(config(kind, "fresh", vec![hook()]))).await.expect("applied");
        }
    });
}
