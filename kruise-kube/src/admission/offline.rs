//! The admission webhooks run in process, without an API server: each object is sent, as a
//! CREATE in an AdmissionReview, through the same handlers the manager serves, mutating
//! webhooks first (their patches applied in turn) and then validating ones, chosen by the same
//! registrations and gates. What `kubectl kruise validate` runs, and what an embedder can call
//! to see the webhooks' answer before writing an object.
//!
//! Nothing reaches a cluster: the webhooks see an empty one. The caches are empty, and their
//! client answers every list with no items, every read with 404 and every write (a
//! ResourceDistribution's dry-run create) with the object sent. So a rule that compares an
//! object with others of the cluster (two PodUnavailableBudgets selecting the same pods, a
//! PersistentPodState's conflicts) finds none, and `kruise-configuration` is absent.

use axum::body::Body;
use base64::Engine as _;
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use serde_json::{Value, json};
use tower::ServiceExt as _;

use super::registry::{self, WebhookRegistration, WebhookType};
use super::{AdmissionContext, registrations};
use crate::cache::SharedCaches;
use crate::features::FeatureGates;

/// The webhooks' answer for one object.
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub struct Reviewed {
    /// The object as the mutating webhooks left it (defaulted).
    pub object: Value,
    /// The first refusal, if any.
    pub denied: Option<Denial>,
    /// The webhooks that answered, in order.
    pub webhooks: Vec<&'static str>,
}

/// A webhook's refusal, as the API server reports it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Denial {
    /// The webhook's name (`vcloneset.kb.io`).
    pub webhook: &'static str,
    /// The HTTP code of its answer.
    pub code: u16,
    /// Its message.
    pub message: String,
}

impl std::fmt::Display for Denial {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "admission webhook {:?} denied the request: {}", self.webhook, self.message)
    }
}

/// Why an object could not be reviewed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum OfflineError {
    /// Not a kind of Kruise's CRDs.
    #[error("{api_version} {kind} is not one of Kruise's kinds")]
    NotKruise {
        /// Its `apiVersion`.
        api_version: String,
        /// Its `kind`.
        kind: String,
    },
    /// The object lacks what a review needs.
    #[error("{0}")]
    Invalid(String),
    /// A webhook's answer could not be read.
    #[error("webhook {webhook}: {detail}")]
    Answer {
        /// The webhook.
        webhook: &'static str,
        /// What went wrong.
        detail: String,
    },
}

/// The manager's admission webhooks, in process.
pub struct OfflineAdmission {
    router: axum::Router,
    registrations: Vec<WebhookRegistration>,
    crds: Vec<CustomResourceDefinition>,
}

impl std::fmt::Debug for OfflineAdmission {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OfflineAdmission").finish_non_exhaustive()
    }
}

impl OfflineAdmission {
    /// The webhooks `gates` turn on (upstream's defaults for those not set).
    ///
    /// # Errors
    /// None today; kept for a client that may fail to build.
    pub fn new(gates: &FeatureGates) -> Result<Self, OfflineError> {
        let mut gates = gates.clone();
        gates.apply_dependencies();
        let client = empty_cluster();
        let caches = SharedCaches::new();
        let context =
            AdmissionContext::new(client, &caches, &gates, crate::webhook::DEFAULT_NAMESPACE);
        let registrations: Vec<WebhookRegistration> =
            registry::enabled(registrations(), &gates).collect();
        Ok(Self { router: super::routes(context, &gates), registrations, crds: kruise_api::crds() })
    }

    /// Sends `object` through the webhooks, as a CREATE.
    ///
    /// # Errors
    /// See [`OfflineError`].
    pub async fn review(&self, object: Value) -> Result<Reviewed, OfflineError> {
        let field = |path: &str| object.pointer(path).and_then(Value::as_str).unwrap_or_default();
        let api_version = field("/apiVersion").to_owned();
        let kind = field("/kind").to_owned();
        let (group, version) = api_version.split_once('/').unwrap_or(("", &api_version));
        let crd = self
            .crds
            .iter()
            .find(|c| c.spec.group == group && c.spec.names.kind == kind)
            .ok_or_else(|| OfflineError::NotKruise {
                api_version: api_version.clone(),
                kind: kind.clone(),
            })?;
        let plural = crd.spec.names.plural.clone();
        let namespaced = crd.spec.scope == "Namespaced";
        let name = match field("/metadata/name") {
            "" => field("/metadata/generateName").to_owned(),
            name => name.to_owned(),
        };
        if name.is_empty() {
            return Err(OfflineError::Invalid(
                "metadata.name: Required value: name or generateName is required".into(),
            ));
        }
        let namespace = match field("/metadata/namespace") {
            "" if namespaced => Some("default".to_owned()),
            "" => None,
            ns => Some(ns.to_owned()),
        };
        let mut object = object;
        // The API server sets the request's namespace on the object before admission.
        if let (Some(ns), Some(meta)) =
            (&namespace, object.get_mut("metadata").and_then(Value::as_object_mut))
        {
            meta.insert("namespace".into(), json!(ns));
        }
        let (group, version) = (group.to_owned(), version.to_owned());
        let applies = |r: &WebhookRegistration| {
            r.rules.iter().any(|rule| {
                rule.group == group
                    && rule.versions.contains(&version.as_str())
                    && rule.resource == plural
                    && rule.operations.contains(&"CREATE")
            })
        };
        let mut current = object;
        let mut webhooks = Vec::new();
        for type_ in [WebhookType::Mutating, WebhookType::Validating] {
            for registration in self.registrations.iter().filter(|r| r.type_ == type_) {
                if !applies(registration) {
                    continue;
                }
                webhooks.push(registration.name);
                let review = json!({
                    "apiVersion": "admission.k8s.io/v1",
                    "kind": "AdmissionReview",
                    "request": {
                        "uid": "offline",
                        "kind": {"group": group, "version": version, "kind": kind},
                        "resource": {"group": group, "version": version, "resource": plural},
                        "requestKind": {"group": group, "version": version, "kind": kind},
                        "name": name,
                        "namespace": namespace,
                        "operation": "CREATE",
                        "userInfo": {"username": "kubectl-kruise"},
                        "object": current,
                        "dryRun": true,
                    },
                });
                let answer = self.send(registration.name, registration.path, &review).await?;
                let response = &answer["response"];
                if response["allowed"] != true {
                    let code = response["status"]["code"].as_u64().unwrap_or(400);
                    return Ok(Reviewed {
                        object: current,
                        denied: Some(Denial {
                            webhook: registration.name,
                            code: u16::try_from(code).unwrap_or(400),
                            message: response["status"]["message"]
                                .as_str()
                                .unwrap_or_default()
                                .to_owned(),
                        }),
                        webhooks,
                    });
                }
                if let Some(patch) = response["patch"].as_str() {
                    current = apply_patch(registration.name, current, patch)?;
                }
            }
        }
        Ok(Reviewed { object: current, denied: None, webhooks })
    }

    async fn send(
        &self,
        webhook: &'static str,
        path: &str,
        review: &Value,
    ) -> Result<Value, OfflineError> {
        let failed = |detail: String| OfflineError::Answer { webhook, detail };
        let request = http::Request::post(path)
            .header("content-type", "application/json")
            .body(Body::from(review.to_string()))
            .map_err(|e| failed(e.to_string()))?;
        let response =
            self.router.clone().oneshot(request).await.map_err(|e| failed(e.to_string()))?;
        let status = response.status();
        let bytes = axum::body::to_bytes(response.into_body(), 64 << 20)
            .await
            .map_err(|e| failed(e.to_string()))?;
        if !status.is_success() {
            return Err(failed(format!("{status}: {}", String::from_utf8_lossy(&bytes))));
        }
        serde_json::from_slice(&bytes).map_err(|e| failed(e.to_string()))
    }
}

fn apply_patch(webhook: &'static str, object: Value, patch: &str) -> Result<Value, OfflineError> {
    let failed = |detail: String| OfflineError::Answer { webhook, detail };
    let bytes = base64::engine::general_purpose::STANDARD
        .decode(patch)
        .map_err(|e| failed(e.to_string()))?;
    let ops: json_patch::Patch =
        serde_json::from_slice(&bytes).map_err(|e| failed(e.to_string()))?;
    let mut object = object;
    json_patch::patch(&mut object, &ops).map_err(|e| failed(e.to_string()))?;
    Ok(object)
}

/// A client whose server is an empty cluster: a list (a path ending at the resource) has no
/// items, a read is 404, a write answers with what was sent.
fn empty_cluster() -> kube::Client {
    use axum::body::Bytes;
    use http_body_util::{BodyExt as _, Full};
    let service = tower::service_fn(|request: http::Request<kube::client::Body>| async move {
        let path = request.uri().path().to_owned();
        let method = request.method().clone();
        let segments: Vec<&str> = path.trim_matches('/').split('/').collect();
        // /api/v1/<rest> or /apis/<group>/<version>/<rest>; <rest> may start with a namespace.
        let rest: &[&str] = match segments.first() {
            Some(&"api") => segments.get(2..).unwrap_or_default(),
            _ => segments.get(3..).unwrap_or_default(),
        };
        let rest = match rest {
            ["namespaces", _, tail @ ..] if !tail.is_empty() => tail,
            other => other,
        };
        let (status, body) = if method == http::Method::GET && rest.len() == 1 {
            (200, json!({"kind": "List", "apiVersion": "v1", "metadata": {}, "items": []}))
        } else if method == http::Method::GET {
            let name = rest.get(1).copied().unwrap_or_default();
            (
                404,
                json!({"kind": "Status", "apiVersion": "v1", "status": "Failure",
                "reason": "NotFound", "code": 404,
                "message": format!("{} {name:?} not found", rest.first().copied().unwrap_or_default())}),
            )
        } else {
            let sent =
                request.into_body().collect().await.map(|b| b.to_bytes()).unwrap_or_default();
            let object: Value = serde_json::from_slice(&sent).unwrap_or_else(|_| json!({}));
            (201, object)
        };
        let response = http::Response::builder()
            .status(status)
            .header("content-type", "application/json")
            .body(Full::new(Bytes::from(body.to_string())))
            .unwrap_or_default();
        Ok::<_, std::convert::Infallible>(response)
    });
    kube::Client::new(service, "default")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn gates() -> FeatureGates {
        FeatureGates::parse("").expect("upstream's defaults")
    }

    #[tokio::test]
    async fn a_cloneset_is_defaulted_then_validated_as_the_webhooks_answer() {
        let admission = OfflineAdmission::new(&gates()).expect("built");
        let cloneset = json!({
            "apiVersion": "apps.kruise.io/v1beta1", "kind": "CloneSet",
            "metadata": {"name": "web"},
            "spec": {"replicas": 2, "selector": {"matchLabels": {"app": "web"}},
                     "template": {"metadata": {"labels": {"app": "web"}},
                                  "spec": {"containers": [{"name": "main", "image": "nginx"}]}}},
        });
        let reviewed = admission.review(cloneset.clone()).await.expect("reviewed");
        assert_eq!(reviewed.denied, None);
        assert_eq!(reviewed.webhooks, ["mcloneset.kb.io", "vcloneset.kb.io"]);
        assert_eq!(reviewed.object["metadata"]["namespace"], "default");
        assert_eq!(reviewed.object["spec"]["revisionHistoryLimit"], 10, "{}", reviewed.object);

        let mut bad = cloneset;
        bad["spec"]["template"]["metadata"]["labels"]["app"] = json!("other");
        let denied = admission.review(bad).await.expect("reviewed").denied.expect("refused");
        assert_eq!(denied.webhook, "vcloneset.kb.io");
        assert!(
            denied
                .to_string()
                .starts_with("admission webhook \"vcloneset.kb.io\" denied the request: ")
        );
        assert!(denied.message.contains("`selector` does not match template `labels`"), "{denied}");
    }

    #[tokio::test]
    async fn rules_that_read_the_cluster_see_an_empty_one() {
        let admission = OfflineAdmission::new(&gates()).expect("built");
        let budget = json!({
            "apiVersion": "policy.kruise.io/v1alpha1", "kind": "PodUnavailableBudget",
            "metadata": {"name": "pub"},
            "spec": {"selector": {"matchLabels": {"app": "web"}}, "maxUnavailable": "150%"},
        });
        let denied = admission.review(budget).await.expect("reviewed").denied.expect("refused");
        assert!(denied.message.contains("spec.maxUnavailable"), "{denied}");
        assert!(!denied.message.contains("Internal error"), "{denied}");
        let deployment =
            json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "d"}});
        assert!(matches!(admission.review(deployment).await, Err(OfflineError::NotKruise { .. })));
    }
}
