//! Admission: calling the mutating, then the validating webhooks that
//! `MutatingWebhookConfiguration` and `ValidatingWebhookConfiguration` objects
//! (admissionregistration.k8s.io/v1) declare, with the AdmissionReview v1 wire format.
//!
//! What is honoured: `clientConfig.url` and `clientConfig.service` (a service is resolved
//! through addresses registered with [`Admission::register_service`]; TLS is verified
//! against `caBundle`, for the service's DNS name `NAME.NAMESPACE.svc`), `rules`
//! (operations, apiGroups, apiVersions, resources with subresources, scope),
//! `matchPolicy` (Equivalent: other served versions of the same resource, and the same
//! resource served by another group, as `events.k8s.io` Events are core Events; the webhook
//! sees the object converted to the version it registered for), `namespaceSelector`,
//! `objectSelector`, `failurePolicy`, `timeoutSeconds`, `reinvocationPolicy`,
//! `sideEffects` with dry-run, JSONPatch responses and warnings.
//!
//! `matchConditions` are evaluated as CEL (see `match_conditions`) over `object`,
//! `oldObject`, `request` and `namespaceObject` (null, as kube-apiserver gives webhooks);
//! `authorizer` is not available. A condition that fails under `failurePolicy: Fail` refuses
//! the request with 403 Forbidden, as kube-apiserver does.
//!
//! Webhooks are called sequentially, in the order of the configurations' names and of the
//! webhooks inside each (the real server calls validating webhooks in parallel; the outcome
//! is the same but for which of several denials is reported).

use crate::cluster::format_label_selector;
use crate::error::ApiError;
use crate::resources::ResourceDef;
use crate::selector::LabelSelector;
use crate::store::TableKey;
use base64::Engine as _;
use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper_util::rt::TokioIo;
use rustls::pki_types::{CertificateDer, ServerName, pem::PemObject};
use serde_json::{Value, json};
use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::{Arc, RwLock};
use std::time::Duration;
use tokio::net::TcpStream;

const MAX_RESPONSE: usize = 3 * 1024 * 1024;

/// The operation a request performs, as admission sees it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Operation {
    /// `CREATE`.
    Create,
    /// `UPDATE` (updates and patches).
    Update,
    /// `DELETE`.
    Delete,
}

impl Operation {
    /// The wire name.
    pub fn as_str(self) -> &'static str {
        match self {
            Operation::Create => "CREATE",
            Operation::Update => "UPDATE",
            Operation::Delete => "DELETE",
        }
    }
}

/// The user of requests made through the API (the kubeconfig's bearer token).
pub(crate) const ADMIN: &str = "kubernetes-admin";
/// The garbage collector's user, with `--use-service-account-credentials`.
pub(crate) const GC_USER: &str = "system:serviceaccount:kube-system:generic-garbage-collector";
/// The namespace controller's user.
pub(crate) const NAMESPACE_USER: &str = "system:serviceaccount:kube-system:namespace-controller";

/// The request being admitted.
pub(crate) struct Attributes<'a> {
    pub def: &'a ResourceDef,
    /// `""`, `"status"`, `"scale"`, `"binding"` or `"eviction"`.
    pub sub: &'a str,
    pub op: Operation,
    pub namespace: &'a str,
    pub name: String,
    pub dry_run: bool,
    /// `CreateOptions`, `UpdateOptions` or `DeleteOptions`.
    pub options: Value,
    /// The requesting user's name ([`ADMIN`] for API requests).
    pub user: &'a str,
}

/// The `userInfo` of a request by `user`: a service account's groups, or the admin's.
fn user_info(user: &str) -> Value {
    match user.strip_prefix("system:serviceaccount:").and_then(|r| r.split_once(':')) {
        Some((ns, _)) => json!({"username": user, "groups": [
            "system:serviceaccounts", format!("system:serviceaccounts:{ns}"), "system:authenticated"]}),
        None => json!({"username": user, "groups": ["system:masters", "system:authenticated"]}),
    }
}

/// The kind of a subresource that has its own (the request's object is not the resource's).
fn sub_kind(sub: &str) -> Option<Value> {
    let (group, version, kind) = match sub {
        "scale" => ("autoscaling", "v1", "Scale"),
        "eviction" => ("policy", "v1", "Eviction"),
        "binding" => ("", "v1", "Binding"),
        _ => return None,
    };
    Some(json!({"group": group, "version": version, "kind": kind}))
}

/// Registered webhook services.
#[derive(Debug, Default)]
pub struct Admission {
    services: RwLock<HashMap<(String, String), SocketAddr>>,
}

const MUTATING: (&str, &str) = ("admissionregistration.k8s.io", "mutatingwebhookconfigurations");
const VALIDATING: (&str, &str) =
    ("admissionregistration.k8s.io", "validatingwebhookconfigurations");

/// One webhook of a configuration.
struct Hook {
    name: String,
    client: Value,
    rules: Vec<Value>,
    namespace_selector: Option<Value>,
    object_selector: Option<Value>,
    fail_closed: bool,
    timeout: u64,
    reinvoke: bool,
    side_effects: String,
    equivalent: bool,
    conditions: Vec<crate::match_conditions::MatchCondition>,
}

fn hooks_of(cluster: &crate::Cluster, table: (&str, &str)) -> Vec<Hook> {
    let (items, _) = cluster.store.list(&(table.0.to_string(), table.1.to_string()), None);
    let mut out = Vec::new();
    for cfg in items {
        let Some(hooks) = cfg.get("webhooks").and_then(Value::as_array) else { continue };
        for h in hooks {
            let s = |k: &str| h.get(k).and_then(Value::as_str).unwrap_or("").to_string();
            let selector = |k: &str| {
                h.get(k).filter(|v| v.as_object().is_some_and(|m| !m.is_empty())).cloned()
            };
            out.push(Hook {
                name: s("name"),
                client: h.get("clientConfig").cloned().unwrap_or(Value::Null),
                rules: h.get("rules").and_then(Value::as_array).cloned().unwrap_or_default(),
                namespace_selector: selector("namespaceSelector"),
                object_selector: selector("objectSelector"),
                fail_closed: s("failurePolicy") != "Ignore",
                timeout: h.get("timeoutSeconds").and_then(Value::as_u64).unwrap_or(10).clamp(1, 30),
                reinvoke: s("reinvocationPolicy") == "IfNeeded",
                side_effects: s("sideEffects"),
                equivalent: s("matchPolicy") != "Exact",
                conditions: crate::match_conditions::MatchCondition::of_webhook(h),
            });
        }
    }
    out
}

fn listed(v: &Value, key: &str, want: &str) -> bool {
    v.get(key)
        .and_then(Value::as_array)
        .is_some_and(|a| a.iter().filter_map(Value::as_str).any(|x| x == "*" || x == want))
}

/// Whether `rule` matches the request `a`, made to `def` (the request's resource, or an
/// equivalent one).
fn rule_matches(rule: &Value, a: &Attributes<'_>, def: &ResourceDef) -> bool {
    if !listed(rule, "operations", a.op.as_str())
        || !listed(rule, "apiGroups", &def.group)
        || !listed(rule, "apiVersions", &def.version)
    {
        return false;
    }
    let resource_ok = rule.get("resources").and_then(Value::as_array).is_some_and(|rs| {
        rs.iter().filter_map(Value::as_str).any(|r| {
            let (res, sub) = r.split_once('/').unwrap_or((r, ""));
            (res == "*" || res == a.def.plural) && (sub == "*" || sub == a.sub)
        })
    });
    if !resource_ok {
        return false;
    }
    match rule.get("scope").and_then(Value::as_str).unwrap_or("*") {
        "Cluster" => !a.def.namespaced,
        "Namespaced" => a.def.namespaced,
        _ => true,
    }
}

fn selector_matches(sel: &Value, labels: Option<&serde_json::Map<String, Value>>) -> bool {
    match LabelSelector::parse(&format_label_selector(sel)) {
        Ok(s) => s.matches(labels),
        Err(_) => false,
    }
}

fn labels(obj: Option<&Value>) -> Option<&serde_json::Map<String, Value>> {
    obj?.pointer("/metadata/labels")?.as_object()
}

/// A webhook call that did not produce an admission decision.
fn calling_error(hook: &str, reason: &str) -> String {
    format!("failed calling webhook {hook:?}: {reason}")
}

/// Where a webhook is reached.
struct Target {
    /// The URL as the real server prints it in errors (with `?timeout=`).
    shown: String,
    connect: String,
    host: String,
    authority: String,
    path: String,
    ca: Option<Vec<u8>>,
}

impl Admission {
    /// Makes the service `namespace/name` reachable at `addr` (any port of the service).
    pub fn register_service(&self, namespace: &str, name: &str, addr: SocketAddr) {
        let mut s = self.services.write().unwrap_or_else(|e| e.into_inner());
        s.insert((namespace.to_string(), name.to_string()), addr);
    }

    fn service(&self, namespace: &str, name: &str) -> Option<SocketAddr> {
        let s = self.services.read().unwrap_or_else(|e| e.into_inner());
        s.get(&(namespace.to_string(), name.to_string())).copied()
    }

    fn target(&self, cc: &Value, timeout: u64) -> Result<Target, CallError> {
        let ca = match cc.get("caBundle").and_then(Value::as_str).filter(|s| !s.is_empty()) {
            Some(b) => Some(
                base64::engine::general_purpose::STANDARD
                    .decode(b)
                    .map_err(|e| CallError::Config(format!("invalid caBundle: {e}")))?,
            ),
            None => None,
        };
        if let Some(url) = cc.get("url").and_then(Value::as_str) {
            let rest = url.strip_prefix("https://").ok_or_else(|| {
                CallError::Config(format!(
                    "unsupported URL scheme in {url:?}: only https is allowed"
                ))
            })?;
            let (authority, path) = match rest.find('/') {
                Some(i) => (&rest[..i], &rest[i..]),
                None => (rest, "/"),
            };
            let (host, port) = split_host_port(authority);
            let sep = if path.contains('?') { '&' } else { '?' };
            let path = format!("{path}{sep}timeout={timeout}s");
            return Ok(Target {
                shown: format!("https://{authority}{path}"),
                connect: format!("{}:{port}", bracket(&host)),
                host,
                authority: authority.to_string(),
                path,
                ca,
            });
        }
        let Some(svc) = cc.get("service") else {
            return Err(CallError::Config("no clientConfig.url or clientConfig.service".into()));
        };
        let ns = svc.get("namespace").and_then(Value::as_str).unwrap_or_default();
        let name = svc.get("name").and_then(Value::as_str).unwrap_or_default();
        let port = svc.get("port").and_then(Value::as_u64).unwrap_or(443);
        let path = svc.get("path").and_then(Value::as_str).unwrap_or("/");
        let sep = if path.contains('?') { '&' } else { '?' };
        let path = format!("{path}{sep}timeout={timeout}s");
        let host = format!("{name}.{ns}.svc");
        let shown = format!("https://{host}:{port}{path}");
        let Some(addr) = self.service(ns, name) else {
            return Err(CallError::Post {
                url: shown,
                reason: format!("service {name:?} not found"),
            });
        };
        Ok(Target {
            shown,
            connect: addr.to_string(),
            authority: format!("{host}:{port}"),
            host,
            path,
            ca,
        })
    }

    /// Posts `body` to a webhook's `clientConfig` (url, or a registered service, TLS verified
    /// against `caBundle`); answers the decoded JSON reply. Shared by admission and CRD
    /// conversion webhooks.
    pub(crate) async fn post_json(
        &self,
        client: &Value,
        timeout: u64,
        body: &Value,
    ) -> Result<Value, CallError> {
        let t = self.target(client, timeout)?;
        let body = serde_json::to_vec(body).map_err(|e| CallError::Config(e.to_string()))?;
        let fut = post(&t, body);
        let (code, bytes) = match tokio::time::timeout(Duration::from_secs(timeout), fut).await {
            Ok(r) => r.map_err(|reason| CallError::Post { url: t.shown.clone(), reason })?,
            Err(_) => {
                return Err(CallError::Post {
                    url: t.shown.clone(),
                    reason: "context deadline exceeded".into(),
                });
            }
        };
        if !(200..300).contains(&code) {
            let text = String::from_utf8_lossy(&bytes).into_owned();
            return Err(if code >= 500 {
                CallError::Server { text }
            } else {
                CallError::Status { code }
            });
        }
        serde_json::from_slice(&bytes).map_err(|e| CallError::Decode(e.to_string()))
    }

    /// Posts an AdmissionReview; answers the `response` or why the call failed (the
    /// real server's `failed to call webhook: ...` wording).
    async fn call(&self, hook: &Hook, review: &Value) -> Result<Value, String> {
        let v = self.post_json(&hook.client, hook.timeout, review).await.map_err(|e| match e {
            CallError::Config(m) => m,
            CallError::Decode(m) => format!("received invalid webhook response: {m}"),
            other => format!("failed to call webhook: {other}"),
        })?;
        let Some(resp) = v.get("response").cloned() else {
            return Err("received invalid webhook response: webhook response was absent".into());
        };
        let want = review.pointer("/request/uid").and_then(Value::as_str).unwrap_or_default();
        let got = resp.get("uid").and_then(Value::as_str).unwrap_or_default();
        if want != got {
            return Err(format!(
                "received invalid webhook response: expected response.uid={want:?}, got {got:?}"
            ));
        }
        Ok(resp)
    }
}

/// Why posting to a webhook failed, worded as the real server's REST client words it.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum CallError {
    /// The client configuration is unusable (bad caBundle, URL scheme).
    #[error("{0}")]
    Config(String),
    /// The request did not complete (dial, TLS, unknown service, timeout).
    #[error("Post {url:?}: {reason}")]
    Post {
        /// The URL as shown in errors (with `?timeout=`).
        url: String,
        /// Why.
        reason: String,
    },
    /// The webhook answered 5xx.
    #[error("an error on the server ({text:?}) has prevented the request from succeeding")]
    Server {
        /// The body of the answer.
        text: String,
    },
    /// The webhook answered another non-2xx code.
    #[error("the server responded with the status code {code} but did not return more information")]
    Status {
        /// The HTTP code.
        code: u16,
    },
    /// The answer was not JSON.
    #[error("{0}")]
    Decode(String),
}

fn bracket(host: &str) -> String {
    if host.contains(':') { format!("[{host}]") } else { host.to_string() }
}

fn split_host_port(authority: &str) -> (String, u16) {
    if let Some(rest) = authority.strip_prefix('[') {
        let (h, tail) = rest.split_once(']').unwrap_or((rest, ""));
        let port = tail.strip_prefix(':').and_then(|p| p.parse().ok()).unwrap_or(443);
        return (h.to_string(), port);
    }
    match authority.rsplit_once(':') {
        Some((h, p)) if !h.contains(':') => (h.to_string(), p.parse().unwrap_or(443)),
        _ => (authority.to_string(), 443),
    }
}

fn dial_error(addr: &str, e: &std::io::Error) -> String {
    match e.kind() {
        std::io::ErrorKind::ConnectionRefused => {
            format!("dial tcp {addr}: connect: connection refused")
        }
        _ => format!("dial tcp {addr}: {e}"),
    }
}

fn tls_error(e: &std::io::Error) -> String {
    let inner = e.get_ref().and_then(|i| i.downcast_ref::<rustls::Error>());
    match inner {
        Some(rustls::Error::InvalidCertificate(rustls::CertificateError::UnknownIssuer)) => {
            "tls: failed to verify certificate: x509: certificate signed by unknown authority"
                .into()
        }
        Some(rustls::Error::InvalidCertificate(c)) => {
            format!("tls: failed to verify certificate: x509: {c:?}")
        }
        _ => format!("remote error: tls: {e}"),
    }
}

async fn post(t: &Target, body: Vec<u8>) -> Result<(u16, Bytes), String> {
    let stream = TcpStream::connect(&t.connect).await.map_err(|e| dial_error(&t.connect, &e))?;
    let mut roots = rustls::RootCertStore::empty();
    if let Some(ca) = &t.ca {
        for c in CertificateDer::pem_slice_iter(ca) {
            let c = c.map_err(|e| format!("invalid caBundle: {e:?}"))?;
            roots.add(c).map_err(|e| format!("invalid caBundle: {e}"))?;
        }
    }
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let mut cfg = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|e| e.to_string())?
        .with_root_certificates(roots)
        .with_no_client_auth();
    cfg.alpn_protocols = vec![b"http/1.1".to_vec()];
    let name = ServerName::try_from(t.host.clone()).map_err(|e| e.to_string())?;
    let tls = tokio_rustls::TlsConnector::from(Arc::new(cfg))
        .connect(name, stream)
        .await
        .map_err(|e| tls_error(&e))?;
    let (mut sender, conn) = hyper::client::conn::http1::handshake(TokioIo::new(tls))
        .await
        .map_err(|e| e.to_string())?;
    tokio::spawn(conn);
    let req = http::Request::post(&t.path)
        .header(http::header::HOST, &t.authority)
        .header(http::header::CONTENT_TYPE, "application/json")
        .header(http::header::ACCEPT, "application/json, */*")
        .body(Full::new(Bytes::from(body)))
        .map_err(|e| e.to_string())?;
    let resp = sender.send_request(req).await.map_err(|e| e.to_string())?;
    let code = resp.status().as_u16();
    let bytes = http_body_util::Limited::new(resp.into_body(), MAX_RESPONSE)
        .collect()
        .await
        .map_err(|e| e.to_string())?
        .to_bytes();
    Ok((code, bytes))
}

/// The denial of a webhook, as `webhookerrors.ToStatusErr` words it.
fn denied(hook: &str, status: Option<&Value>) -> ApiError {
    let by = format!("admission webhook {hook:?} denied the request");
    let msg = status.and_then(|s| s.get("message")).and_then(Value::as_str).unwrap_or("");
    let reason = status.and_then(|s| s.get("reason")).and_then(Value::as_str).unwrap_or("");
    let code = status.and_then(|s| s.get("code")).and_then(Value::as_u64).unwrap_or(0);
    let message = if !msg.is_empty() {
        format!("{by}: {msg}")
    } else if !reason.is_empty() {
        format!("{by}: {reason}")
    } else {
        format!("{by} without explanation")
    };
    let code = if code < 400 { 400 } else { u16::try_from(code).unwrap_or(500) };
    ApiError {
        code,
        reason: known_reason(reason),
        message,
        details: status.and_then(|s| s.get("details")).cloned(),
    }
}

/// A `StatusReason` from a webhook, kept when it is one the API defines.
fn known_reason(r: &str) -> &'static str {
    const KNOWN: &[&str] = &[
        "Unauthorized",
        "Forbidden",
        "NotFound",
        "AlreadyExists",
        "Conflict",
        "Gone",
        "Invalid",
        "ServerTimeout",
        "StoreReadError",
        "Timeout",
        "TooManyRequests",
        "BadRequest",
        "MethodNotAllowed",
        "NotAcceptable",
        "RequestEntityTooLarge",
        "UnsupportedMediaType",
        "InternalError",
        "Expired",
        "ServiceUnavailable",
    ];
    KNOWN.iter().find(|k| **k == r).copied().unwrap_or("")
}

/// An object as `from` serves it, viewed as the equivalent `to` serves it: a built-in
/// stored as another group's is converted; a CRD's versions are the same JSON (the sim
/// stores one JSON form for all versions of a CRD without a conversion webhook).
fn in_version(from: &ResourceDef, to: &ResourceDef, obj: &Value) -> Value {
    if obj.get("kind").and_then(Value::as_str) == Some("Scale") {
        return obj.clone();
    }
    let mut o = obj.clone();
    if from.group != to.group {
        if let Some(alias) = crate::builtin_conversion::of(from) {
            o = alias.to_storage(&o);
        }
        if let Some(alias) = crate::builtin_conversion::of(to) {
            o = alias.to_served(&o);
        }
    }
    if let Some(m) = o.as_object_mut() {
        m.insert("apiVersion".into(), json!(to.api_version()));
        m.insert("kind".into(), json!(to.kind));
    }
    o
}

impl crate::Cluster {
    /// Whether any webhook configuration exists (otherwise admission is skipped entirely).
    pub(crate) fn has_webhooks(&self) -> bool {
        let t = |k: (&str, &str)| -> TableKey { (k.0.to_string(), k.1.to_string()) };
        !self.store.keys(&t(MUTATING), None).is_empty()
            || !self.store.keys(&t(VALIDATING), None).is_empty()
    }

    /// The resource (group and version) the webhook is called with, if it is called at all:
    /// the request's, or with `matchPolicy: Equivalent` one stored in the same table (another
    /// version of a CRD, or another group's built-in stored as this one).
    fn hook_def(&self, hook: &Hook, a: &Attributes<'_>) -> Option<Arc<ResourceDef>> {
        // As the real server: webhook configurations are never sent to webhooks, so a broken
        // webhook can always be removed.
        if a.def.group == "admissionregistration.k8s.io" {
            return None;
        }
        let same = |d: &ResourceDef| {
            d.group == a.def.group && d.version == a.def.version && d.plural == a.def.plural
        };
        let defs: Vec<Arc<ResourceDef>> =
            self.all_defs().into_iter().filter(|d| d.key() == a.def.key()).collect();
        let matches = |d: &ResourceDef| hook.rules.iter().any(|r| rule_matches(r, a, d));
        if let Some(d) = defs.iter().find(|d| same(d)).filter(|d| matches(d)) {
            return Some(d.clone());
        }
        if !hook.equivalent {
            return None;
        }
        // The request's group first, as the real server orders equivalent resources.
        let (own, other): (Vec<_>, Vec<_>) =
            defs.into_iter().filter(|d| !same(d)).partition(|d| d.group == a.def.group);
        own.into_iter().chain(other).find(|d| matches(d))
    }

    fn selectors_match(
        &self,
        hook: &Hook,
        a: &Attributes<'_>,
        obj: Option<&Value>,
        old: Option<&Value>,
    ) -> bool {
        if let Some(sel) = &hook.object_selector
            && !obj.is_some_and(|o| selector_matches(sel, labels(Some(o))))
            && !old.is_some_and(|o| selector_matches(sel, labels(Some(o))))
        {
            return false;
        }
        let Some(sel) = &hook.namespace_selector else { return true };
        if a.def.group.is_empty() && a.def.plural == "namespaces" {
            return selector_matches(sel, labels(obj.or(old)));
        }
        // A request without a namespace (a deletecollection across all namespaces) is never
        // exempted, as `MatchNamespaceSelector` has it.
        if !a.def.namespaced || a.namespace.is_empty() {
            return true;
        }
        let nsobj = self
            .store
            .get(&(String::new(), "namespaces".into()), &(String::new(), a.namespace.into()));
        selector_matches(sel, labels(nsobj.as_deref()))
    }

    fn review(
        a: &Attributes<'_>,
        hook_def: &ResourceDef,
        obj: Option<&Value>,
        old: Option<&Value>,
    ) -> Value {
        let kind_resource = |d: &ResourceDef| {
            let resource = json!({"group": d.group, "version": d.version, "resource": d.plural});
            let kind = sub_kind(a.sub)
                .unwrap_or_else(|| json!({"group": d.group, "version": d.version, "kind": d.kind}));
            (kind, resource)
        };
        // A subresource with a kind of its own (Scale, Eviction, Binding) is sent as it is.
        let view = |o: &Value| {
            if sub_kind(a.sub).is_some() { o.clone() } else { in_version(a.def, hook_def, o) }
        };
        let (kind, resource) = kind_resource(hook_def);
        let (request_kind, request_resource) = kind_resource(a.def);
        let mut req = json!({
            "uid": crate::util::uuid(),
            "kind": kind,
            "resource": resource,
            "requestKind": request_kind,
            "requestResource": request_resource,
            "operation": a.op.as_str(),
            "userInfo": user_info(a.user),
            "object": obj.map(view),
            "oldObject": old.map(view),
            "dryRun": a.dry_run,
            "options": a.options,
        });
        if let Some(m) = req.as_object_mut() {
            // `omitempty`, as for a deletecollection's items.
            if !a.name.is_empty() {
                m.insert("name".into(), json!(a.name));
            }
            if !a.sub.is_empty() {
                m.insert("subResource".into(), json!(a.sub));
                m.insert("requestSubResource".into(), json!(a.sub));
            }
            if !a.namespace.is_empty() && a.def.namespaced {
                m.insert("namespace".into(), json!(a.namespace));
            }
        }
        json!({"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "request": req})
    }

    /// Calls one webhook; `Ok(None)` when it was not called or its failure is ignored.
    async fn invoke(
        &self,
        hook: &Hook,
        a: &Attributes<'_>,
        obj: Option<&Value>,
        old: Option<&Value>,
    ) -> Result<Option<(Value, Arc<ResourceDef>)>, ApiError> {
        let Some(hook_def) = self.hook_def(hook, a) else { return Ok(None) };
        if !self.selectors_match(hook, a, obj, old) {
            return Ok(None);
        }
        if a.dry_run && !matches!(hook.side_effects.as_str(), "None" | "NoneOnDryRun") {
            return Err(ApiError::bad_request(format!(
                "admission webhook {:?} does not support dry run",
                hook.name
            )));
        }
        let review = Self::review(a, &hook_def, obj, old);
        let request = review.get("request").unwrap_or(&Value::Null);
        // kube-apiserver evaluates a webhook's matchConditions without the namespace:
        // `namespaceObject` is declared but null, so an expression reading it fails.
        match crate::match_conditions::decide(&hook.conditions, request) {
            crate::match_conditions::Decision::Call => {}
            crate::match_conditions::Decision::Skip => return Ok(None),
            // Under Fail, kube-apiserver refuses the request as forbidden.
            crate::match_conditions::Decision::Error(reason) if hook.fail_closed => {
                return Err(ApiError::forbidden_by(&a.def.group, &a.def.plural, &a.name, &reason));
            }
            crate::match_conditions::Decision::Error(_) => return Ok(None),
        }
        match self.admission.call(hook, &review).await {
            Ok(resp) => Ok(Some((resp, hook_def))),
            Err(reason) if hook.fail_closed => {
                Err(ApiError::internal(calling_error(&hook.name, &reason)))
            }
            Err(_) => Ok(None),
        }
    }

    /// Runs the mutating webhooks over `obj`; answers the mutated object and warnings.
    pub(crate) async fn mutate(
        &self,
        a: &Attributes<'_>,
        obj: Option<Value>,
        old: Option<&Value>,
    ) -> Result<(Option<Value>, Vec<String>), ApiError> {
        let hooks = hooks_of(self, MUTATING);
        let mut warnings = Vec::new();
        let mut obj = obj;
        // The object as each IfNeeded webhook last saw it (after its own patch).
        let mut seen: Vec<(usize, Option<Value>)> = Vec::new();
        for (i, hook) in hooks.iter().enumerate() {
            let after = self.mutate_one(hook, a, obj, old, &mut warnings).await?;
            obj = after;
            if hook.reinvoke {
                seen.push((i, obj.clone()));
            }
        }
        // Reinvocation: once, for IfNeeded webhooks whose output a later webhook changed.
        for (i, saw) in seen {
            if saw != obj
                && let Some(hook) = hooks.get(i)
            {
                obj = self.mutate_one(hook, a, obj, old, &mut warnings).await?;
            }
        }
        Ok((obj, warnings))
    }

    async fn mutate_one(
        &self,
        hook: &Hook,
        a: &Attributes<'_>,
        obj: Option<Value>,
        old: Option<&Value>,
        warnings: &mut Vec<String>,
    ) -> Result<Option<Value>, ApiError> {
        let Some((resp, hook_def)) = self.invoke(hook, a, obj.as_ref(), old).await? else {
            return Ok(obj);
        };
        collect_warnings(&resp, warnings);
        if resp.get("allowed").and_then(Value::as_bool) != Some(true) {
            return Err(denied(&hook.name, resp.get("status")));
        }
        let Some(patch) = resp.get("patch").and_then(Value::as_str).filter(|p| !p.is_empty())
        else {
            return Ok(obj);
        };
        let Some(cur) = obj else { return Ok(None) };
        let raw = base64::engine::general_purpose::STANDARD.decode(patch).map_err(|e| {
            ApiError::internal(calling_error(
                &hook.name,
                &format!("received invalid webhook response: {e}"),
            ))
        })?;
        let ops: json_patch::Patch = serde_json::from_slice(&raw).map_err(|e| {
            ApiError::internal(calling_error(
                &hook.name,
                &format!("received invalid webhook response: {e}"),
            ))
        })?;
        if sub_kind(a.sub).is_some() {
            let mut doc = cur;
            json_patch::patch(&mut doc, &ops.0).map_err(|e| ApiError::internal(e.to_string()))?;
            return Ok(Some(doc));
        }
        let mut doc = in_version(a.def, &hook_def, &cur);
        json_patch::patch(&mut doc, &ops.0).map_err(|e| ApiError::internal(e.to_string()))?;
        // Back to the request's version.
        Ok(Some(in_version(&hook_def, a.def, &doc)))
    }

    /// Runs the validating webhooks; answers their warnings.
    pub(crate) async fn validate_admission(
        &self,
        a: &Attributes<'_>,
        obj: Option<&Value>,
        old: Option<&Value>,
    ) -> Result<Vec<String>, ApiError> {
        let mut warnings = Vec::new();
        for hook in hooks_of(self, VALIDATING) {
            let Some((resp, _)) = self.invoke(&hook, a, obj, old).await? else { continue };
            collect_warnings(&resp, &mut warnings);
            if resp.get("allowed").and_then(Value::as_bool) != Some(true) {
                return Err(denied(&hook.name, resp.get("status")));
            }
        }
        Ok(warnings)
    }
}

fn collect_warnings(resp: &Value, out: &mut Vec<String>) {
    if let Some(ws) = resp.get("warnings").and_then(Value::as_array) {
        out.extend(ws.iter().filter_map(Value::as_str).map(str::to_string));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn host_ports_and_denials() {
        assert_eq!(split_host_port("127.0.0.1:8443"), ("127.0.0.1".into(), 8443));
        assert_eq!(split_host_port("[::1]:9"), ("::1".into(), 9));
        assert_eq!(split_host_port("example.com"), ("example.com".into(), 443));
        let e = denied("x.example.com", Some(&json!({"message": "no"})));
        assert_eq!((e.code, e.reason), (400, ""));
        assert_eq!(e.message, r#"admission webhook "x.example.com" denied the request: no"#);
        let e = denied("x", Some(&json!({"code": 403, "reason": "Forbidden"})));
        assert_eq!(e.code, 403);
        assert_eq!(e.message, r#"admission webhook "x" denied the request: Forbidden"#);
        assert!(denied("x", None).message.ends_with("without explanation"));
    }
}
