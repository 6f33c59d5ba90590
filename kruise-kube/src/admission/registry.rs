//! The webhook registry: one [`WebhookRegistration`] per admission webhook, from which both the
//! HTTP routes ([`super::routes`]) and the Mutating/ValidatingWebhookConfigurations
//! ([`super::configurations`]) are generated, so the two cannot drift apart.
//!
//! A registration names its feature gates: with one of them off, the webhook is neither served
//! nor registered with the API server (`PodWebhook=false` removes every pod webhook;
//! `ResourcesDeletionProtection=false` every deletion-protection webhook).

use std::sync::Arc;

use axum::routing::MethodRouter;
use serde_json::{Value, json};

use super::AdmissionContext;
use crate::features::FeatureGates;

/// Mutating or validating.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WebhookType {
    /// In the MutatingWebhookConfiguration.
    Mutating,
    /// In the ValidatingWebhookConfiguration.
    Validating,
}

/// Which of the policy's failure policies a webhook takes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FailureSource {
    /// `--kruise-webhook-failure-policy` (Kruise's kinds and deletion protection).
    Kruise,
    /// `--pod-webhook-failure-policy`.
    Pod,
    /// Always `Fail`, whatever the flags say.
    Fail,
}

/// The namespaces a webhook sees.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Namespaces {
    /// Every namespace (and cluster-scoped objects).
    All,
    /// Every namespace but `kube-system` and the manager's own.
    OutsideSystem,
    /// As [`Namespaces::OutsideSystem`], narrowed by `--pod-webhook-namespace-selector`.
    PodPolicy,
}

/// The objects a webhook sees.
#[derive(Clone, Debug, PartialEq)]
pub enum Objects {
    /// Every object.
    All,
    /// Those the label selector (as JSON) selects.
    Selected(Value),
    /// Those `--pod-webhook-object-selector` selects (every object without it).
    PodPolicy,
}

/// One rule of a webhook: a resource and the operations on it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Rule {
    /// API group (`""` for the core group).
    pub group: &'static str,
    /// API versions.
    pub versions: &'static [&'static str],
    /// Resource (with its subresource, as `pods/eviction`).
    pub resource: &'static str,
    /// `CREATE`, `UPDATE`, `DELETE`.
    pub operations: &'static [&'static str],
}

impl Rule {
    fn to_json(self) -> Value {
        json!({
            "apiGroups": [self.group],
            "apiVersions": self.versions,
            "resources": [self.resource],
            "operations": self.operations,
            "scope": "*"
        })
    }
}

/// The handler type every webhook route has.
pub type Handler = MethodRouter<Arc<AdmissionContext>>;

/// One admission webhook: what the API server is told (name, path, rules, failure policy,
/// selectors), when it exists (gates), and what answers it (handler).
#[derive(Clone)]
pub struct WebhookRegistration {
    /// Upstream's webhook name (`vcloneset.kb.io`).
    pub name: &'static str,
    /// Upstream's path (`/validate-apps-kruise-io-cloneset`). Several webhooks may share a path;
    /// they must then share the handler, and the first registration's is served.
    pub path: &'static str,
    /// Mutating or validating.
    pub type_: WebhookType,
    /// What it intercepts.
    pub rules: Vec<Rule>,
    /// Its failure policy.
    pub failure: FailureSource,
    /// Which namespaces it sees.
    pub namespaces: Namespaces,
    /// Which objects it sees.
    pub objects: Objects,
    /// The feature gates it needs, all of them.
    pub gates: &'static [&'static str],
    /// `reinvocationPolicy: Never` (mutating webhooks only).
    pub reinvocation_never: bool,
    /// What answers it.
    pub handler: Handler,
}

impl WebhookRegistration {
    /// A webhook seeing every object of `rules`, with the Kruise failure policy and no gate.
    pub fn new(
        name: &'static str,
        path: &'static str,
        type_: WebhookType,
        rules: Vec<Rule>,
        handler: Handler,
    ) -> Self {
        Self {
            name,
            path,
            type_,
            rules,
            failure: FailureSource::Kruise,
            namespaces: Namespaces::All,
            objects: Objects::All,
            gates: &[],
            reinvocation_never: false,
            handler,
        }
    }

    /// With a failure policy.
    #[must_use]
    pub fn failure(mut self, failure: FailureSource) -> Self {
        self.failure = failure;
        self
    }

    /// Seeing only these namespaces.
    #[must_use]
    pub fn namespaces(mut self, namespaces: Namespaces) -> Self {
        self.namespaces = namespaces;
        self
    }

    /// Seeing only these objects.
    #[must_use]
    pub fn objects(mut self, objects: Objects) -> Self {
        self.objects = objects;
        self
    }

    /// Needing these gates.
    #[must_use]
    pub fn gates(mut self, gates: &'static [&'static str]) -> Self {
        self.gates = gates;
        self
    }

    /// With `reinvocationPolicy: Never`.
    #[must_use]
    pub fn never_reinvoked(mut self) -> Self {
        self.reinvocation_never = true;
        self
    }

    /// Whether every gate it needs is on.
    pub fn enabled(&self, gates: &FeatureGates) -> bool {
        self.gates.iter().all(|gate| gates.enabled(gate))
    }

    /// Its entry in a webhook configuration.
    pub(super) fn to_json(
        &self,
        policy: &super::WebhookPolicy,
        client_config: &dyn Fn(&str) -> Value,
    ) -> Value {
        let failure = match self.failure {
            FailureSource::Kruise => policy.kruise_failure_policy.as_str(),
            FailureSource::Pod => policy.pod_failure_policy.as_str(),
            FailureSource::Fail => "Fail",
        };
        let mut webhook = json!({
            "name": self.name,
            "admissionReviewVersions": ["v1", "v1beta1"],
            "clientConfig": client_config(self.path),
            "failurePolicy": failure,
            "matchPolicy": "Equivalent",
            "rules": self.rules.iter().map(|r| r.to_json()).collect::<Vec<_>>(),
            "sideEffects": "None",
            "timeoutSeconds": policy.timeout_seconds
        });
        let system = json!({
            "matchExpressions": [{
                "key": "kubernetes.io/metadata.name",
                "operator": "NotIn",
                "values": ["kube-system", policy.manager_namespace]
            }]
        });
        match (self.namespaces, &policy.pod_namespace_selector) {
            (Namespaces::All, _) => {}
            (Namespaces::OutsideSystem, _) | (Namespaces::PodPolicy, None) => {
                webhook["namespaceSelector"] = system;
            }
            (Namespaces::PodPolicy, Some(narrower)) => {
                webhook["namespaceSelector"] = super::and_selectors(&system, narrower);
            }
        }
        match (&self.objects, &policy.pod_object_selector) {
            (Objects::All, _) | (Objects::PodPolicy, None) => {}
            (Objects::Selected(selector), _) => webhook["objectSelector"] = selector.clone(),
            (Objects::PodPolicy, Some(selector)) => webhook["objectSelector"] = json!(selector),
        }
        if self.reinvocation_never {
            webhook["reinvocationPolicy"] = json!("Never");
        }
        webhook
    }
}

/// The registrations whose gates are all on, in registration order.
pub fn enabled(
    registrations: Vec<WebhookRegistration>,
    gates: &FeatureGates,
) -> impl Iterator<Item = WebhookRegistration> {
    let mut gates = gates.clone();
    gates.apply_dependencies();
    registrations.into_iter().filter(move |r| r.enabled(&gates))
}
