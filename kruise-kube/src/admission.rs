//! Admission webhooks: the handlers (served by [`crate::webhook::WebhookServer`]) and the
//! webhook configurations that register them with the API server.
//!
//! Paths and webhook names are upstream's (`/validate-apps-kruise-io-cloneset`,
//! `vcloneset.kb.io`, ...), so a cluster moving between implementations keeps its
//! configuration shape. The decisions are kruise-core's ([`kruise_core::admission`]); this
//! module decodes reviews, looks up what a decision needs (pods in a namespace, objects of a
//! CRD) and encodes the answer.
//!
//! Safe by default:
//! - pod webhooks never see `kube-system` or the manager's own namespace, and default to
//!   `failurePolicy: Ignore`, so a manager that is down never blocks pod creation;
//! - webhooks for Kruise's own kinds default to `Fail` (an unvalidated CloneSet is worse than
//!   a refused one);
//! - deletion protection webhooks for built-in kinds select only objects that carry the
//!   `policy.kruise.io/delete-protection` label, so unlabelled objects never pay for them;
//! - every webhook has a short timeout.

use std::sync::Arc;

use axum::body::Bytes;
use axum::extract::State;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use k8s_openapi::api::core::v1::Pod;
use kruise_core::admission::protection::{self, Dependents, ProtectedKind};
use kruise_core::admission_review::{AdmissionRequest, AdmissionResponse, Operation, decode_review};
use serde_json::{Value, json};

use crate::cache::Cache;

/// The label that turns on deletion protection.
pub const PROTECTION_LABEL: &str = "policy.kruise.io/delete-protection";

/// Upstream's configuration names (with the chart's `kruise-` prefix).
pub const MUTATING_CONFIGURATION: &str = "kruise-mutating-webhook-configuration";
/// Upstream's validating configuration name.
pub const VALIDATING_CONFIGURATION: &str = "kruise-validating-webhook-configuration";

/// What the handlers read.
#[derive(Clone)]
pub struct AdmissionContext {
    /// Pods, to know whether a namespace still runs any (deletion protection).
    pub pods: Cache<Pod>,
    /// For listing a CRD's objects (deletion protection of CRDs).
    pub client: kube::Client,
}

/// The admission routes, to add with [`crate::webhook::WebhookServer::routes`].
pub fn routes(context: AdmissionContext) -> axum::Router {
    let state = Arc::new(context);
    axum::Router::new()
        .route("/mutate-apps-kruise-io-cloneset", post(mutate_cloneset))
        .route("/validate-apps-kruise-io-cloneset", post(validate_cloneset))
        .route("/mutate-pod", post(pass_through))
        .route("/validate-pod", post(pass_through))
        .route("/validate-namespace", post(validate_namespace))
        .route("/validate-customresourcedefinition", post(validate_crd))
        .route("/validate-apps-deployment", post(validate_builtin_workload))
        .route("/validate-apps-replicaset", post(validate_builtin_workload))
        .route("/validate-apps-statefulset", post(validate_builtin_workload))
        .with_state(state)
}

fn review_response(response: &AdmissionResponse) -> Response {
    (StatusCode::OK, axum::Json(response.to_review())).into_response()
}

fn bad_request(message: String) -> Response {
    (StatusCode::BAD_REQUEST, message).into_response()
}

/// Decodes the body or answers 400 naming what is wrong.
fn decode(body: &[u8]) -> Result<AdmissionRequest, Response> {
    decode_review(body).map_err(|err| bad_request(err.to_string()))
}

async fn pass_through(body: Bytes) -> Response {
    match decode(&body) {
        Ok(request) => review_response(&AdmissionResponse::allow(&request)),
        Err(response) => response,
    }
}

fn api_version(object: &Value) -> &str {
    object.get("apiVersion").and_then(Value::as_str).unwrap_or_default()
}

async fn mutate_cloneset(body: Bytes) -> Response {
    let request = match decode(&body) {
        Ok(request) => request,
        Err(response) => return response,
    };
    let Some(object) = request.object.as_ref() else {
        return review_response(&AdmissionResponse::allow(&request));
    };
    if !matches!(request.operation, Operation::Create | Operation::Update) {
        return review_response(&AdmissionResponse::allow(&request));
    }
    let defaulted = kruise_core::admission::cloneset::default_cloneset_value(object);
    let response = match defaulted {
        Ok((before, after)) => AdmissionResponse::mutate(&request, &before, &after),
        Err(message) => AdmissionResponse::deny(&request, 400, message),
    };
    review_response(&response)
}

async fn validate_cloneset(body: Bytes) -> Response {
    let request = match decode(&body) {
        Ok(request) => request,
        Err(response) => return response,
    };
    let response = match request.operation {
        Operation::Create | Operation::Update => {
            let Some(object) = request.object.as_ref() else {
                return review_response(&AdmissionResponse::allow(&request));
            };
            let old = match request.operation {
                Operation::Update => request.old_object.as_ref(),
                _ => None,
            };
            match kruise_core::admission::cloneset::validate_cloneset_value(object, old) {
                Ok(()) => AdmissionResponse::allow(&request),
                Err(message) => AdmissionResponse::deny(&request, 422, message),
            }
        }
        Operation::Delete => {
            let old = request.old_object.as_ref().cloned().unwrap_or(Value::Null);
            let replicas = old.pointer("/spec/replicas").and_then(Value::as_i64).unwrap_or(1);
            let dependents = Dependents { replicas: Some(replicas), ..Dependents::default() };
            protect(&request, ProtectedKind::CloneSet, &old, dependents)
        }
        _ => AdmissionResponse::allow(&request),
    };
    let _ = api_version;
    review_response(&response)
}

fn labels_of(object: &Value) -> std::collections::BTreeMap<String, String> {
    object
        .pointer("/metadata/labels")
        .and_then(Value::as_object)
        .map(|labels| {
            labels
                .iter()
                .filter_map(|(k, v)| v.as_str().map(|v| (k.clone(), v.to_owned())))
                .collect()
        })
        .unwrap_or_default()
}

fn protect(
    request: &AdmissionRequest,
    kind: ProtectedKind,
    object: &Value,
    dependents: Dependents,
) -> AdmissionResponse {
    match protection::check_deletion(kind, &labels_of(object), &dependents) {
        Ok(()) => AdmissionResponse::allow(request),
        Err(reason) => AdmissionResponse::deny(request, 403, reason),
    }
}

async fn validate_namespace(State(context): State<Arc<AdmissionContext>>, body: Bytes) -> Response {
    let request = match decode(&body) {
        Ok(request) => request,
        Err(response) => return response,
    };
    if request.operation != Operation::Delete {
        return review_response(&AdmissionResponse::allow(&request));
    }
    let old = request.old_object.clone().unwrap_or(Value::Null);
    let namespace = request.name.clone();
    let active = context
        .pods
        .in_namespace(&namespace)
        .iter()
        .filter(|pod| kruise_core::pod::is_pod_active(pod))
        .count();
    let dependents = Dependents { active_pods: Some(active as i64), ..Dependents::default() };
    review_response(&protect(&request, ProtectedKind::Namespace, &old, dependents))
}

async fn validate_crd(State(context): State<Arc<AdmissionContext>>, body: Bytes) -> Response {
    let request = match decode(&body) {
        Ok(request) => request,
        Err(response) => return response,
    };
    if request.operation != Operation::Delete {
        return review_response(&AdmissionResponse::allow(&request));
    }
    let old = request.old_object.clone().unwrap_or(Value::Null);
    if !labels_of(&old).contains_key(PROTECTION_LABEL) {
        return review_response(&AdmissionResponse::allow(&request));
    }
    let objects = match count_custom_objects(&context.client, &old).await {
        Ok(n) => n,
        Err(message) => {
            // Not knowing means not deleting a protected CRD.
            let reason = format!("cannot tell whether the CRD still has objects: {message}");
            return review_response(&AdmissionResponse::deny(&request, 403, reason));
        }
    };
    let dependents = Dependents { objects: Some(objects), ..Dependents::default() };
    review_response(&protect(&request, ProtectedKind::CustomResourceDefinition, &old, dependents))
}

/// How many objects of the CRD exist, at its storage version (one is enough to know).
async fn count_custom_objects(client: &kube::Client, crd: &Value) -> Result<i64, String> {
    let group = crd.pointer("/spec/group").and_then(Value::as_str).unwrap_or_default();
    let plural = crd.pointer("/spec/names/plural").and_then(Value::as_str).unwrap_or_default();
    let kind = crd.pointer("/spec/names/kind").and_then(Value::as_str).unwrap_or_default();
    let version = crd
        .pointer("/spec/versions")
        .and_then(Value::as_array)
        .and_then(|versions| {
            versions
                .iter()
                .find(|v| v.get("storage") == Some(&json!(true)))
                .or_else(|| versions.first())
        })
        .and_then(|v| v.get("name"))
        .and_then(Value::as_str)
        .unwrap_or_default();
    let resource = kube::api::ApiResource {
        group: group.to_owned(),
        version: version.to_owned(),
        api_version: if group.is_empty() {
            version.to_owned()
        } else {
            format!("{group}/{version}")
        },
        kind: kind.to_owned(),
        plural: plural.to_owned(),
    };
    let api: kube::Api<kube::api::DynamicObject> = kube::Api::all_with(client.clone(), &resource);
    let list = api
        .list_metadata(&kube::api::ListParams::default().limit(1))
        .await
        .map_err(|err| err.to_string())?;
    let more = list.metadata.remaining_item_count.unwrap_or(0);
    Ok(list.items.len() as i64 + more)
}

async fn validate_builtin_workload(body: Bytes) -> Response {
    let request = match decode(&body) {
        Ok(request) => request,
        Err(response) => return response,
    };
    if request.operation != Operation::Delete {
        return review_response(&AdmissionResponse::allow(&request));
    }
    let old = request.old_object.clone().unwrap_or(Value::Null);
    let kind = match request.resource.name.as_str() {
        "deployments" => ProtectedKind::Deployment,
        "replicasets" => ProtectedKind::ReplicaSet,
        "statefulsets" => ProtectedKind::StatefulSet,
        _ => return review_response(&AdmissionResponse::allow(&request)),
    };
    let replicas = old.pointer("/spec/replicas").and_then(Value::as_i64).unwrap_or(1);
    let dependents = Dependents { replicas: Some(replicas), ..Dependents::default() };
    review_response(&protect(&request, kind, &old, dependents))
}

/// How the webhook configurations are generated.
#[derive(Clone, Debug)]
#[non_exhaustive]
pub struct WebhookPolicy {
    /// `Ignore` or `Fail` for webhooks on pods (default `Ignore`).
    pub pod_failure_policy: String,
    /// `Ignore` or `Fail` for webhooks on Kruise's kinds and deletion protection (default
    /// `Fail`).
    pub kruise_failure_policy: String,
    /// Seconds the API server waits for an answer.
    pub timeout_seconds: i32,
    /// The manager's namespace, which pod webhooks never see.
    pub manager_namespace: String,
}

impl Default for WebhookPolicy {
    fn default() -> Self {
        Self {
            pod_failure_policy: "Ignore".into(),
            kruise_failure_policy: "Fail".into(),
            timeout_seconds: 5,
            manager_namespace: crate::webhook::DEFAULT_NAMESPACE.into(),
        }
    }
}

/// Why the webhook configurations could not be written.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ConfigurationError {
    /// A failure policy is neither `Ignore` nor `Fail`.
    #[error("{flag}: {value:?} is not Ignore or Fail")]
    FailurePolicy {
        /// The flag.
        flag: &'static str,
        /// The value.
        value: String,
    },
    /// The API server refused the configuration.
    #[error("applying {name}: {source}")]
    Apply {
        /// The configuration's name.
        name: &'static str,
        /// Why.
        #[source]
        source: kube::Error,
    },
}

impl WebhookPolicy {
    /// Checks the failure policies.
    pub fn validate(&self) -> Result<(), ConfigurationError> {
        for (flag, value) in [
            ("--pod-webhook-failure-policy", &self.pod_failure_policy),
            ("--kruise-webhook-failure-policy", &self.kruise_failure_policy),
        ] {
            if value != "Ignore" && value != "Fail" {
                return Err(ConfigurationError::FailurePolicy { flag, value: value.clone() });
            }
        }
        Ok(())
    }
}

fn rule(group: &str, versions: &[&str], resource: &str, operations: &[&str]) -> Value {
    json!({
        "apiGroups": [group],
        "apiVersions": versions,
        "resources": [resource],
        "operations": operations,
        "scope": "*"
    })
}

/// The mutating and validating webhook configurations, with `client_config(path)` giving
/// each webhook's `clientConfig` (URL or Service, and the caBundle).
pub fn configurations(
    policy: &WebhookPolicy,
    client_config: impl Fn(&str) -> Value,
) -> (Value, Value) {
    let system_namespaces = json!({
        "matchExpressions": [{
            "key": "kubernetes.io/metadata.name",
            "operator": "NotIn",
            "values": ["kube-system", policy.manager_namespace]
        }]
    });
    let protected = json!({
        "matchExpressions": [{"key": PROTECTION_LABEL, "operator": "Exists"}]
    });
    let webhook = |name: &str, path: &str, rules: Vec<Value>, failure: &str| {
        json!({
            "name": name,
            "admissionReviewVersions": ["v1", "v1beta1"],
            "clientConfig": client_config(path),
            "failurePolicy": failure,
            "matchPolicy": "Equivalent",
            "rules": rules,
            "sideEffects": "None",
            "timeoutSeconds": policy.timeout_seconds
        })
    };
    let kruise = policy.kruise_failure_policy.as_str();
    let pods = policy.pod_failure_policy.as_str();
    let cloneset_versions = ["v1alpha1", "v1beta1"];

    let mut mpod = webhook("mpod.kb.io", "/mutate-pod", vec![rule("", &["v1"], "pods", &["CREATE"])], pods);
    mpod["namespaceSelector"] = system_namespaces.clone();
    mpod["reinvocationPolicy"] = json!("Never");
    let mcloneset = webhook(
        "mcloneset.kb.io",
        "/mutate-apps-kruise-io-cloneset",
        vec![rule("apps.kruise.io", &cloneset_versions, "clonesets", &["CREATE", "UPDATE"])],
        kruise,
    );
    let mutating = json!({
        "apiVersion": "admissionregistration.k8s.io/v1",
        "kind": "MutatingWebhookConfiguration",
        "metadata": {"name": MUTATING_CONFIGURATION},
        "webhooks": [mpod, mcloneset]
    });

    let mut vpod = webhook(
        "vpod.kb.io",
        "/validate-pod",
        vec![rule("", &["v1"], "pods", &["UPDATE", "DELETE"])],
        pods,
    );
    vpod["namespaceSelector"] = system_namespaces;
    let vcloneset = webhook(
        "vcloneset.kb.io",
        "/validate-apps-kruise-io-cloneset",
        vec![rule(
            "apps.kruise.io",
            &cloneset_versions,
            "clonesets",
            &["CREATE", "UPDATE", "DELETE"],
        )],
        kruise,
    );
    let protected_webhook = |name: &str, path: &str, group: &str, versions: &[&str], res: &str| {
        let mut w = webhook(name, path, vec![rule(group, versions, res, &["DELETE"])], kruise);
        w["objectSelector"] = protected.clone();
        w
    };
    let validating = json!({
        "apiVersion": "admissionregistration.k8s.io/v1",
        "kind": "ValidatingWebhookConfiguration",
        "metadata": {"name": VALIDATING_CONFIGURATION},
        "webhooks": [
            vpod,
            vcloneset,
            protected_webhook("vnamespace.kb.io", "/validate-namespace", "", &["v1"], "namespaces"),
            protected_webhook(
                "vcustomresourcedefinition.kb.io",
                "/validate-customresourcedefinition",
                "apiextensions.k8s.io",
                &["v1"],
                "customresourcedefinitions",
            ),
            protected_webhook(
                "vbuiltindeployment.kb.io",
                "/validate-apps-deployment",
                "apps",
                &["v1"],
                "deployments",
            ),
            protected_webhook(
                "vbuiltinreplicaset.kb.io",
                "/validate-apps-replicaset",
                "apps",
                &["v1"],
                "replicasets",
            ),
            protected_webhook(
                "vbuiltinstatefulset.kb.io",
                "/validate-apps-statefulset",
                "apps",
                &["v1"],
                "statefulsets",
            ),
        ]
    });
    (mutating, validating)
}

/// Writes both configurations with server-side apply (the manager owns them).
pub async fn apply_configurations(
    client: &kube::Client,
    policy: &WebhookPolicy,
    client_config: impl Fn(&str) -> Value,
) -> Result<(), ConfigurationError> {
    use k8s_openapi::api::admissionregistration::v1::{
        MutatingWebhookConfiguration, ValidatingWebhookConfiguration,
    };
    use kube::api::{Patch, PatchParams};
    let (mutating, validating) = configurations(policy, client_config);
    let params = PatchParams::apply(crate::applier::FIELD_MANAGER).force();
    let api: kube::Api<MutatingWebhookConfiguration> = kube::Api::all(client.clone());
    api.patch(MUTATING_CONFIGURATION, &params, &Patch::Apply(&mutating))
        .await
        .map_err(|source| ConfigurationError::Apply { name: MUTATING_CONFIGURATION, source })?;
    let api: kube::Api<ValidatingWebhookConfiguration> = kube::Api::all(client.clone());
    api.patch(VALIDATING_CONFIGURATION, &params, &Patch::Apply(&validating))
        .await
        .map_err(|source| ConfigurationError::Apply { name: VALIDATING_CONFIGURATION, source })?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn configs() -> (Value, Value) {
        configurations(&WebhookPolicy::default(), |path| {
            json!({"url": format!("https://127.0.0.1:9876{path}"), "caBundle": "Q0E="})
        })
    }

    #[test]
    fn pod_webhooks_skip_system_namespaces_and_fail_open() {
        let (mutating, validating) = configs();
        for webhook in [&mutating["webhooks"][0], &validating["webhooks"][0]] {
            assert_eq!(webhook["failurePolicy"], "Ignore", "{webhook}");
            let values = &webhook["namespaceSelector"]["matchExpressions"][0]["values"];
            assert_eq!(values, &json!(["kube-system", "kruise-system"]));
            assert!(webhook["timeoutSeconds"].as_i64().is_some_and(|t| t <= 10));
        }
    }

    #[test]
    fn protection_webhooks_select_labelled_objects_only() {
        let (_, validating) = configs();
        let protected: Vec<&Value> = validating["webhooks"]
            .as_array()
            .expect("webhooks")
            .iter()
            .filter(|w| w.get("objectSelector").is_some())
            .collect();
        assert_eq!(protected.len(), 5);
        for webhook in protected {
            assert_eq!(webhook["objectSelector"]["matchExpressions"][0]["key"], PROTECTION_LABEL);
            assert_eq!(webhook["rules"][0]["operations"], json!(["DELETE"]));
            assert_eq!(webhook["failurePolicy"], "Fail");
        }
    }

    #[test]
    fn failure_policies_are_checked() {
        let mut policy = WebhookPolicy::default();
        policy.pod_failure_policy = "Sometimes".into();
        let err = policy.validate().expect_err("invalid");
        assert_eq!(
            err.to_string(),
            r#"--pod-webhook-failure-policy: "Sometimes" is not Ignore or Fail"#
        );
    }
}
