//! API errors, rendered as the real API server renders them: a `metav1.Status` body.

use serde_json::{Value, json};

/// One cause of an `Invalid` (422) error: `{reason, message, field}` in `details.causes`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Cause {
    /// The machine-readable reason, such as `FieldValueRequired`.
    pub reason: String,
    /// The message, such as `Required value`.
    pub message: String,
    /// The field path, such as `spec.replicas`.
    pub field: String,
}

impl Cause {
    /// `field: Required value[: detail]`.
    pub fn required(field: &str, detail: &str) -> Self {
        let message = if detail.is_empty() {
            "Required value".to_string()
        } else {
            format!("Required value: {detail}")
        };
        Cause { reason: "FieldValueRequired".into(), message, field: field.into() }
    }

    /// `field: Invalid value: <value>: detail`.
    pub fn invalid(field: &str, value: &Value, detail: &str) -> Self {
        let shown = go_value(value);
        let message = if detail.is_empty() {
            format!("Invalid value: {shown}")
        } else {
            format!("Invalid value: {shown}: {detail}")
        };
        Cause { reason: "FieldValueInvalid".into(), message, field: field.into() }
    }

    /// `field: Unsupported value: "x": supported values: "a", "b"`.
    pub fn not_supported(field: &str, value: &Value, allowed: &[Value]) -> Self {
        let list: Vec<String> = allowed.iter().map(go_value).collect();
        let message = format!(
            "Unsupported value: {}: supported values: {}",
            go_value(value),
            list.join(", ")
        );
        Cause { reason: "FieldValueNotSupported".into(), message, field: field.into() }
    }

    /// `field: Forbidden: detail`.
    pub fn forbidden(field: &str, detail: &str) -> Self {
        Cause {
            reason: "FieldValueForbidden".into(),
            message: format!("Forbidden: {detail}"),
            field: field.into(),
        }
    }

    /// `field: Too many: n: must have at most m items`.
    pub fn too_many(field: &str, actual: usize, max: u64) -> Self {
        Cause {
            reason: "FieldValueTooMany".into(),
            message: format!("Too many: {actual}: must have at most {max} items"),
            field: field.into(),
        }
    }

    /// `field: Not found: v`.
    pub fn not_found(field: &str, value: &Value) -> Self {
        Cause {
            reason: "FieldValueNotFound".into(),
            message: format!("Not found: {}", go_value(value)),
            field: field.into(),
        }
    }

    /// `field: Duplicate value: v`.
    pub fn duplicate(field: &str, value: &Value) -> Self {
        Cause {
            reason: "FieldValueDuplicate".into(),
            message: format!("Duplicate value: {}", go_value(value)),
            field: field.into(),
        }
    }

    fn rendered(&self) -> String {
        if self.field.is_empty() {
            self.message.clone()
        } else {
            format!("{}: {}", self.field, self.message)
        }
    }
}

/// How Go's `%#v`-like field error printing shows a value: strings quoted, numbers bare.
pub(crate) fn go_value(value: &Value) -> String {
    match value {
        Value::String(s) => format!("{s:?}"),
        Value::Null => "null".into(),
        Value::Bool(b) => b.to_string(),
        Value::Number(n) => n.to_string(),
        Value::Array(_) => "[]interface {}{...}".into(),
        Value::Object(_) => "map[string]interface {}{...}".into(),
    }
}

/// An error answered to a client as a `Status` with an HTTP code.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
#[error("{code} {reason}: {message}")]
pub struct ApiError {
    /// The HTTP status code.
    pub code: u16,
    /// The `StatusReason`, such as `NotFound`.
    pub reason: &'static str,
    /// The human-readable message.
    pub message: String,
    /// `details`, when the real server gives them.
    pub details: Option<Value>,
}

/// Names a resource in messages: `pods` or `deployments.apps`.
pub(crate) fn qualified(group: &str, resource: &str) -> String {
    if group.is_empty() { resource.to_string() } else { format!("{resource}.{group}") }
}

fn details(name: &str, group: &str, kind: &str) -> Value {
    let mut d = serde_json::Map::new();
    if !name.is_empty() {
        d.insert("name".into(), json!(name));
    }
    if !group.is_empty() {
        d.insert("group".into(), json!(group));
    }
    if !kind.is_empty() {
        d.insert("kind".into(), json!(kind));
    }
    Value::Object(d)
}

impl ApiError {
    /// An error with no details.
    pub fn new(code: u16, reason: &'static str, message: impl Into<String>) -> Self {
        ApiError { code, reason, message: message.into(), details: None }
    }

    /// 404 `pods "x" not found`.
    pub fn not_found(group: &str, resource: &str, name: &str) -> Self {
        ApiError {
            code: 404,
            reason: "NotFound",
            message: format!("{} {name:?} not found", qualified(group, resource)),
            details: Some(details(name, group, resource)),
        }
    }

    /// 404 for a path the server does not serve.
    pub fn no_route() -> Self {
        ApiError {
            code: 404,
            reason: "NotFound",
            message: "the server could not find the requested resource".into(),
            details: Some(json!({})),
        }
    }

    /// 409 `pods "x" already exists`.
    pub fn already_exists(group: &str, resource: &str, name: &str) -> Self {
        ApiError {
            code: 409,
            reason: "AlreadyExists",
            message: format!("{} {name:?} already exists", qualified(group, resource)),
            details: Some(details(name, group, resource)),
        }
    }

    /// 403 as `apierrors.NewForbidden` words it: `pods "x" is forbidden: <why>`, or `pods is
    /// forbidden: <why>` when the request names no object yet.
    pub fn forbidden_by(group: &str, resource: &str, name: &str, why: &str) -> Self {
        let qualified = qualified(group, resource);
        let message = if name.is_empty() {
            format!("{qualified} is forbidden: {why}")
        } else {
            format!("{qualified} {name:?} is forbidden: {why}")
        };
        ApiError {
            code: 403,
            reason: "Forbidden",
            message,
            details: Some(details(name, group, resource)),
        }
    }

    /// 409 `Operation cannot be fulfilled on pods "x": <why>`.
    pub fn conflict(group: &str, resource: &str, name: &str, why: &str) -> Self {
        ApiError {
            code: 409,
            reason: "Conflict",
            message: format!(
                "Operation cannot be fulfilled on {} {name:?}: {why}",
                qualified(group, resource)
            ),
            details: Some(details(name, group, resource)),
        }
    }

    /// The stale-resourceVersion conflict.
    pub fn stale(group: &str, resource: &str, name: &str) -> Self {
        Self::conflict(
            group,
            resource,
            name,
            "the object has been modified; please apply your changes to the latest version and try again",
        )
    }

    /// 422 `Kind.group "name" is invalid: [causes]`.
    pub fn invalid(group: &str, kind: &str, name: &str, causes: Vec<Cause>) -> Self {
        let qualified_kind = qualified(group, kind);
        // `ErrorList.ToAggregate` drops repeated messages (the causes keep them).
        let mut rendered: Vec<String> = Vec::new();
        for r in causes.iter().map(Cause::rendered) {
            if !rendered.contains(&r) {
                rendered.push(r);
            }
        }
        let message = match rendered.len() {
            0 => format!("{qualified_kind} {name:?} is invalid"),
            1 => format!("{qualified_kind} {name:?} is invalid: {}", rendered[0]),
            _ => format!("{qualified_kind} {name:?} is invalid: [{}]", rendered.join(", ")),
        };
        let mut d = details(name, group, kind);
        let list: Vec<Value> = causes
            .iter()
            .map(|c| json!({"reason": c.reason, "message": c.message, "field": c.field}))
            .collect();
        if let Value::Object(m) = &mut d {
            m.insert("causes".into(), Value::Array(list));
        }
        ApiError { code: 422, reason: "Invalid", message, details: Some(d) }
    }

    /// 400 BadRequest.
    pub fn bad_request(message: impl Into<String>) -> Self {
        Self::new(400, "BadRequest", message)
    }

    /// 405 MethodNotAllowed.
    pub fn method_not_allowed() -> Self {
        ApiError {
            code: 405,
            reason: "MethodNotAllowed",
            message: "the server does not allow this method on the requested resource".into(),
            details: Some(json!({})),
        }
    }

    /// 415 for a patch type the resource does not accept.
    pub fn unsupported_patch(accepted: &[&str]) -> Self {
        Self::new(
            415,
            "UnsupportedMediaType",
            format!(
                "the body of the request was in an unknown format - accepted media types include: {}",
                accepted.join(", ")
            ),
        )
    }

    /// 406 when no acceptable representation exists.
    pub fn not_acceptable() -> Self {
        Self::new(
            406,
            "NotAcceptable",
            "only the following media types are accepted: application/json, application/yaml",
        )
    }

    /// 410 Expired, as for a too-old resourceVersion.
    pub fn gone(message: impl Into<String>) -> Self {
        Self::new(410, "Expired", message)
    }

    /// 401 Unauthorized.
    pub fn unauthorized() -> Self {
        Self::new(401, "Unauthorized", "Unauthorized")
    }

    /// 500 InternalError.
    pub fn internal(message: impl Into<String>) -> Self {
        ApiError {
            code: 500,
            reason: "InternalError",
            message: format!("Internal error occurred: {}", message.into()),
            details: Some(json!({"causes": [{"message": ""}]})),
        }
    }

    /// 429 TooManyRequests.
    pub fn too_many_requests(message: impl Into<String>) -> Self {
        Self::new(429, "TooManyRequests", message)
    }

    /// The `metav1.Status` body.
    pub fn to_status(&self) -> Value {
        let mut status = json!({
            "kind": "Status",
            "apiVersion": "v1",
            "metadata": {},
            "status": "Failure",
            "message": self.message,
        });
        if let (false, Value::Object(m)) = (self.reason.is_empty(), &mut status) {
            m.insert("reason".into(), json!(self.reason));
        }
        if let (Some(d), Value::Object(m)) = (&self.details, &mut status) {
            m.insert("details".into(), d.clone());
        }
        if let Value::Object(m) = &mut status {
            m.insert("code".into(), json!(self.code));
        }
        status
    }
}

/// A `Status` of success, as returned by a few verbs (binding, eviction, delete collection).
pub(crate) fn success_status(code: u16, details: Option<Value>) -> Value {
    let mut s = json!({"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success"});
    if let (Some(d), Value::Object(m)) = (details, &mut s) {
        m.insert("details".into(), d);
    }
    if let Value::Object(m) = &mut s {
        m.insert("code".into(), json!(code));
    }
    s
}

/// Failures starting or running the server.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum SimError {
    /// Binding or accepting on a socket failed.
    #[error("io: {0}")]
    Io(#[from] std::io::Error),
    /// Generating certificates failed.
    #[error("certificate generation: {0}")]
    Cert(#[from] rcgen::Error),
    /// Configuring TLS failed.
    #[error("tls: {0}")]
    Tls(#[from] rustls::Error),
    /// A built-in or Kruise CRD could not be installed.
    #[error("installing {what}: {error}")]
    Install {
        /// What was being installed.
        what: String,
        /// Why it failed.
        error: ApiError,
    },
    /// Encoding the kubeconfig failed.
    #[error("kubeconfig: {0}")]
    Kubeconfig(#[from] serde_yaml::Error),
    /// The simulated nodes could not be started.
    #[error("simulated nodes: {0}")]
    Nodes(#[from] crate::nodes::NodeError),
    /// The configuration asks for something this build leaves out: kruise-sim was compiled
    /// without the cargo `feature` that provides it.
    #[error(
        "{what} needs kruise-sim's `{feature}` cargo feature, which this build does not \
         enable: add `features = [\"{feature}\"]` to the kruise-sim dependency"
    )]
    FeatureDisabled {
        /// What the configuration asks for, such as `Config::with_controllers`.
        what: &'static str,
        /// The missing cargo feature, such as `controllers`.
        feature: &'static str,
    },
}
