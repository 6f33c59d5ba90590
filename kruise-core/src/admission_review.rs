//! AdmissionReview (`admission.k8s.io/v1` and `v1beta1`) as data: decode what the API server
//! sends to a webhook, and encode the answer in the same version.
//!
//! Decoding parses once into [`AdmissionRequest`]; whatever is malformed is refused with a
//! [`ReviewError`] naming the field, never a panic. Answers are built with
//! [`AdmissionResponse::allow`], [`AdmissionResponse::deny`] and [`AdmissionResponse::mutate`]
//! (which turns the mutated object into a JSON patch against the original).

use serde::Serialize;
use serde_json::{Map, Value};

/// The AdmissionReview version a request came in (and its answer goes out) as.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum ReviewVersion {
    /// `admission.k8s.io/v1`.
    V1,
    /// `admission.k8s.io/v1beta1`.
    V1beta1,
}

impl ReviewVersion {
    /// The `apiVersion` string.
    pub fn api_version(self) -> &'static str {
        match self {
            Self::V1 => "admission.k8s.io/v1",
            Self::V1beta1 => "admission.k8s.io/v1beta1",
        }
    }
}

/// What the request does.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Operation {
    /// CREATE.
    Create,
    /// UPDATE.
    Update,
    /// DELETE.
    Delete,
    /// CONNECT.
    Connect,
}

impl Operation {
    /// The wire spelling (`CREATE`, ...).
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Create => "CREATE",
            Self::Update => "UPDATE",
            Self::Delete => "DELETE",
            Self::Connect => "CONNECT",
        }
    }
}

/// A group, version and resource (or kind).
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash)]
pub struct GroupVersionName {
    /// The API group (empty for core).
    pub group: String,
    /// The version.
    pub version: String,
    /// The resource (plural) or kind.
    pub name: String,
}

/// One admission request, decoded.
#[derive(Clone, Debug, PartialEq)]
pub struct AdmissionRequest {
    /// The review version it came as.
    pub version: ReviewVersion,
    /// The request's UID, echoed in the answer.
    pub uid: String,
    /// The object's kind.
    pub kind: GroupVersionName,
    /// The resource addressed.
    pub resource: GroupVersionName,
    /// The subresource, if any (`status`, `scale`).
    pub sub_resource: Option<String>,
    /// The object's name (may be empty on CREATE with generateName).
    pub name: String,
    /// The namespace, for namespaced resources.
    pub namespace: Option<String>,
    /// CREATE, UPDATE, DELETE or CONNECT.
    pub operation: Operation,
    /// The new object (CREATE, UPDATE).
    pub object: Option<Value>,
    /// The old object (UPDATE, DELETE).
    pub old_object: Option<Value>,
    /// The request makes no changes.
    pub dry_run: bool,
    /// Who sent it.
    pub username: Option<String>,
}

/// Why a review could not be decoded.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ReviewError {
    /// The body is not JSON.
    #[error("the body is not a JSON AdmissionReview: {0}")]
    NotJson(String),
    /// `kind` is not AdmissionReview, or `apiVersion` not one this webhook speaks.
    #[error("{field}: {value:?} is not supported (want {expected})")]
    Unsupported {
        /// The field.
        field: &'static str,
        /// What it held.
        value: String,
        /// What is accepted.
        expected: &'static str,
    },
    /// A required field is missing or has the wrong type.
    #[error("{field}: {reason}")]
    Field {
        /// The field path.
        field: String,
        /// What is wrong.
        reason: String,
    },
}

fn field(path: &str, reason: &str) -> ReviewError {
    ReviewError::Field { field: path.to_owned(), reason: reason.to_owned() }
}

fn string_at(map: &Map<String, Value>, key: &str, path: &str) -> Result<String, ReviewError> {
    match map.get(key) {
        Some(Value::String(s)) => Ok(s.clone()),
        None | Some(Value::Null) => Err(field(path, "required")),
        Some(_) => Err(field(path, "must be a string")),
    }
}

fn optional_string(
    map: &Map<String, Value>,
    key: &str,
    path: &str,
) -> Result<Option<String>, ReviewError> {
    match map.get(key) {
        Some(Value::String(s)) if !s.is_empty() => Ok(Some(s.clone())),
        Some(Value::String(_) | Value::Null) | None => Ok(None),
        Some(_) => Err(field(path, "must be a string")),
    }
}

fn gvn(
    map: &Map<String, Value>,
    key: &str,
    name_key: &str,
) -> Result<GroupVersionName, ReviewError> {
    let path = format!("request.{key}");
    let Some(value) = map.get(key) else {
        return Err(field(&path, "required"));
    };
    let Value::Object(inner) = value else {
        return Err(field(&path, "must be an object"));
    };
    Ok(GroupVersionName {
        group: optional_string(inner, "group", &format!("{path}.group"))?.unwrap_or_default(),
        version: string_at(inner, "version", &format!("{path}.version"))?,
        name: string_at(inner, name_key, &format!("{path}.{name_key}"))?,
    })
}

/// Moves the object at `key` out of the request (no copy).
fn take_object(map: &mut Map<String, Value>, key: &str) -> Result<Option<Value>, ReviewError> {
    match map.remove(key) {
        None | Some(Value::Null) => Ok(None),
        Some(obj @ Value::Object(_)) => Ok(Some(obj)),
        Some(_) => Err(field(&format!("request.{key}"), "must be an object")),
    }
}

/// Decodes an AdmissionReview request body.
pub fn decode_review(body: &[u8]) -> Result<AdmissionRequest, ReviewError> {
    let value: Value =
        serde_json::from_slice(body).map_err(|err| ReviewError::NotJson(err.to_string()))?;
    let Value::Object(mut review) = value else {
        return Err(ReviewError::NotJson("the top level is not an object".into()));
    };
    let kind = string_at(&review, "kind", "kind")?;
    if kind != "AdmissionReview" {
        return Err(ReviewError::Unsupported {
            field: "kind",
            value: kind,
            expected: "AdmissionReview",
        });
    }
    let api_version = string_at(&review, "apiVersion", "apiVersion")?;
    let version = match api_version.as_str() {
        "admission.k8s.io/v1" => ReviewVersion::V1,
        "admission.k8s.io/v1beta1" => ReviewVersion::V1beta1,
        _ => {
            return Err(ReviewError::Unsupported {
                field: "apiVersion",
                value: api_version,
                expected: "admission.k8s.io/v1 or admission.k8s.io/v1beta1",
            });
        }
    };
    let Some(Value::Object(mut request)) = review.remove("request") else {
        return Err(field("request", "required, and must be an object"));
    };
    let object = take_object(&mut request, "object")?;
    let old_object = take_object(&mut request, "oldObject")?;
    let request = &request;
    let operation = match string_at(request, "operation", "request.operation")?.as_str() {
        "CREATE" => Operation::Create,
        "UPDATE" => Operation::Update,
        "DELETE" => Operation::Delete,
        "CONNECT" => Operation::Connect,
        other => {
            return Err(field(
                "request.operation",
                &format!("{other:?} is not CREATE, UPDATE, DELETE or CONNECT"),
            ));
        }
    };
    let username = match request.get("userInfo") {
        Some(Value::Object(info)) => {
            optional_string(info, "username", "request.userInfo.username")?
        }
        _ => None,
    };
    let dry_run = match request.get("dryRun") {
        None | Some(Value::Null) => false,
        Some(Value::Bool(b)) => *b,
        Some(_) => return Err(field("request.dryRun", "must be a boolean")),
    };
    Ok(AdmissionRequest {
        version,
        uid: string_at(request, "uid", "request.uid")?,
        kind: gvn(request, "kind", "kind")?,
        resource: gvn(request, "resource", "resource")?,
        sub_resource: optional_string(request, "subResource", "request.subResource")?,
        name: optional_string(request, "name", "request.name")?.unwrap_or_default(),
        namespace: optional_string(request, "namespace", "request.namespace")?,
        operation,
        object,
        old_object,
        dry_run,
        username,
    })
}

/// A webhook's answer to one request.
#[derive(Clone, Debug, PartialEq)]
pub struct AdmissionResponse {
    /// The request's UID.
    pub uid: String,
    /// The version to answer in.
    pub version: ReviewVersion,
    /// Let the request through.
    pub allowed: bool,
    /// The refusal: HTTP code, reason (`Invalid`, `Forbidden`) and message.
    pub status: Option<(u16, String, String)>,
    /// JSON patch operations to apply (mutating webhooks), as JSON text.
    pub patch: Option<Vec<u8>>,
    /// Warnings shown to the client.
    pub warnings: Vec<String>,
}

impl AdmissionResponse {
    /// Allows `request` unchanged.
    pub fn allow(request: &AdmissionRequest) -> Self {
        Self {
            uid: request.uid.clone(),
            version: request.version,
            allowed: true,
            status: None,
            patch: None,
            warnings: Vec::new(),
        }
    }

    /// Refuses `request` with an HTTP `code` (422 for invalid objects, 403 for forbidden
    /// operations) and `message`. Like upstream's webhooks (controller-runtime's
    /// `admission.Errored`), the status carries no reason, so the API server answers with the
    /// code and `admission webhook "..." denied the request: <message>`, and kubectl prints
    /// `Error from server: ...`.
    pub fn deny(request: &AdmissionRequest, code: u16, message: impl Into<String>) -> Self {
        Self {
            status: Some((code, String::new(), message.into())),
            allowed: false,
            ..Self::allow(request)
        }
    }

    /// Allows `request` with `original` changed into `mutated` (a JSON patch of the
    /// difference; no patch when they are equal).
    pub fn mutate(request: &AdmissionRequest, original: &Value, mutated: &Value) -> Self {
        let mut response = Self::allow(request);
        if original != mutated {
            let ops = json_patch::diff(original, mutated);
            response.patch = serde_json::to_vec(&ops).ok();
        }
        response
    }

    /// Allows `request` with the JSON patch `ops` (JSON text of the operations).
    pub fn patched(request: &AdmissionRequest, ops: Vec<u8>) -> Self {
        Self { patch: Some(ops), ..Self::allow(request) }
    }

    /// The AdmissionReview to send back.
    pub fn to_review(&self) -> Value {
        // Invariant: the wire form holds only strings, numbers and bools, which always encode.
        serde_json::to_value(self.wire(true)).unwrap_or(Value::Null)
    }

    /// The AdmissionReview to send back, as JSON text (without building a JSON tree).
    pub fn to_review_bytes(&self) -> Vec<u8> {
        // The patch is written straight into the text below: base64 needs no escapes, and
        // the encoder's check of every character for one was a noticeable part of a pod
        // creation's answer. Nor is the patch encoded into a string of its own first: that
        // large allocation alone made glibc sweep its free lists on every answer.
        let wire = self.wire(false);
        let patch_len = self.patch.as_ref().map_or(Some(0), |p| base64::encoded_len(p.len(), true));
        let mut out = Vec::with_capacity(REVIEW_TEXT_ROOM + patch_len.unwrap_or(0));
        // Invariant: as in `to_review`.
        if serde_json::to_writer(&mut out, &wire).is_err() {
            out.clear();
        }
        let Some(patch) = &self.patch else { return out };
        // Whatever goes wrong below (not the shape written above, a patch too long to
        // encode), the patch goes through the encoder instead: never lost.
        let through_the_encoder = || serde_json::to_vec(&self.wire(true)).unwrap_or_default();
        let Some(len) = patch_len else {
            return through_the_encoder();
        };
        if !out.ends_with(b"}}") {
            return through_the_encoder();
        }
        use base64::Engine as _;
        // Before the closing braces of `response` and of the review.
        out.truncate(out.len() - 2);
        out.extend_from_slice(br#","patch":""#);
        let start = out.len();
        out.resize(start + len, 0);
        match base64::engine::general_purpose::STANDARD.encode_slice(patch, &mut out[start..]) {
            Ok(written) => out.truncate(start + written),
            Err(_) => return through_the_encoder(),
        }
        out.extend_from_slice(br#""}}"#);
        out
    }

    /// The review's wire form; with the patch encoded only when `with_patch`.
    fn wire(&self, with_patch: bool) -> ReviewWire<'_> {
        ReviewWire {
            api_version: self.version.api_version(),
            kind: "AdmissionReview",
            response: ResponseWire {
                uid: &self.uid,
                allowed: self.allowed,
                status: self.status.as_ref().map(|(code, reason, message)| StatusWire {
                    code: *code,
                    message,
                    reason,
                    status: "Failure",
                }),
                patch_type: self.patch.as_ref().map(|_| "JSONPatch"),
                patch: self
                    .patch
                    .as_deref()
                    .filter(|_| with_patch)
                    .map(crate::inplace::base64_encode),
                warnings: &self.warnings,
            },
        }
    }
}

/// Room for an answer's text besides its patch: the envelope, the uid, a status message
/// (longer ones grow the buffer) and a few warnings.
const REVIEW_TEXT_ROOM: usize = 512;

/// The AdmissionReview answer as sent.
#[derive(Serialize)]
struct ReviewWire<'a> {
    #[serde(rename = "apiVersion")]
    api_version: &'static str,
    kind: &'static str,
    response: ResponseWire<'a>,
}

#[derive(Serialize)]
struct ResponseWire<'a> {
    uid: &'a str,
    allowed: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    status: Option<StatusWire<'a>>,
    #[serde(rename = "patchType", skip_serializing_if = "Option::is_none")]
    patch_type: Option<&'static str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    patch: Option<String>,
    #[serde(skip_serializing_if = "<[String]>::is_empty")]
    warnings: &'a [String],
}

#[derive(Serialize)]
struct StatusWire<'a> {
    code: u16,
    message: &'a str,
    #[serde(skip_serializing_if = "str::is_empty")]
    reason: &'a str,
    status: &'static str,
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn review(api_version: &str, request: Value) -> Vec<u8> {
        serde_json::to_vec(
            &json!({"apiVersion": api_version, "kind": "AdmissionReview", "request": request}),
        )
        .expect("encode")
    }

    fn pod_request() -> Value {
        json!({
            "uid": "u-1",
            "kind": {"group": "", "version": "v1", "kind": "Pod"},
            "resource": {"group": "", "version": "v1", "resource": "pods"},
            "namespace": "default",
            "name": "p",
            "operation": "CREATE",
            "userInfo": {"username": "alice"},
            "object": {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"}},
            "dryRun": false
        })
    }

    #[test]
    fn decodes_v1_and_v1beta1() {
        for (api, version) in [
            ("admission.k8s.io/v1", ReviewVersion::V1),
            ("admission.k8s.io/v1beta1", ReviewVersion::V1beta1),
        ] {
            let req = decode_review(&review(api, pod_request())).expect("decodes");
            assert_eq!(req.version, version);
            assert_eq!(req.uid, "u-1");
            assert_eq!(req.operation, Operation::Create);
            assert_eq!(req.resource.name, "pods");
            assert_eq!(req.kind.name, "Pod");
            assert_eq!(req.namespace.as_deref(), Some("default"));
            assert_eq!(req.username.as_deref(), Some("alice"));
            assert!(req.old_object.is_none());
        }
    }

    #[test]
    fn refuses_malformed_reviews_naming_the_field() {
        let err = decode_review(b"{not json").expect_err("not json");
        assert!(matches!(err, ReviewError::NotJson(_)));
        let err = decode_review(&review("admission.k8s.io/v2", pod_request())).expect_err("v2");
        assert_eq!(
            err.to_string(),
            r#"apiVersion: "admission.k8s.io/v2" is not supported (want admission.k8s.io/v1 or admission.k8s.io/v1beta1)"#
        );
        let mut req = pod_request();
        req["operation"] = json!("PATCH");
        let err = decode_review(&review("admission.k8s.io/v1", req)).expect_err("op");
        assert!(err.to_string().starts_with("request.operation: \"PATCH\""), "{err}");
        let mut req = pod_request();
        req["resource"] = json!({"group": "", "version": "v1"});
        let err = decode_review(&review("admission.k8s.io/v1", req)).expect_err("resource");
        assert_eq!(err.to_string(), "request.resource.resource: required");
        let mut req = pod_request();
        req["object"] = json!([1]);
        let err = decode_review(&review("admission.k8s.io/v1", req)).expect_err("object");
        assert_eq!(err.to_string(), "request.object: must be an object");
    }

    #[test]
    fn answers_in_the_request_version() {
        let req =
            decode_review(&review("admission.k8s.io/v1beta1", pod_request())).expect("decodes");
        let denied = AdmissionResponse::deny(&req, 422, "spec.replicas: Invalid value").to_review();
        assert_eq!(denied["apiVersion"], "admission.k8s.io/v1beta1");
        assert_eq!(denied["response"]["uid"], "u-1");
        assert_eq!(denied["response"]["allowed"], false);
        assert_eq!(denied["response"]["status"]["code"], 422);
        assert_eq!(denied["response"]["status"].get("reason"), None, "as controller-runtime");
    }

    #[test]
    fn mutation_becomes_a_json_patch() {
        let req = decode_review(&review("admission.k8s.io/v1", pod_request())).expect("decodes");
        let original = json!({"spec": {"a": 1}});
        let mutated = json!({"spec": {"a": 1, "b": 2}});
        let answer = AdmissionResponse::mutate(&req, &original, &mutated).to_review();
        assert_eq!(answer["response"]["patchType"], "JSONPatch");
        let patch = answer["response"]["patch"].as_str().expect("patch");
        let bytes = crate::inplace::base64_decode(patch).expect("base64");
        let ops: Value = serde_json::from_slice(&bytes).expect("json");
        assert_eq!(ops, json!([{"op": "add", "path": "/spec/b", "value": 2}]));
        let same = AdmissionResponse::mutate(&req, &original, &original).to_review();
        assert!(same["response"].get("patch").is_none());
    }

    #[test]
    fn the_answer_as_text_is_the_answer_as_a_tree() {
        let req = decode_review(&review("admission.k8s.io/v1", pod_request())).expect("decodes");
        let mut refused = AdmissionResponse::deny(&req, 403, "no room");
        refused.status = Some((403, "Forbidden".into(), "no \"room\"".into()));
        refused.warnings = vec!["spec.a: deprecated".into()];
        let patched =
            AdmissionResponse::patched(&req, br#"[{"op":"remove","path":"/a"}]"#.to_vec());
        // Patches of every length modulo 3 (base64 padding), and one with warnings.
        let mut warned = AdmissionResponse::patched(&req, b"[ ]".to_vec());
        warned.warnings = vec!["metadata.labels: \"x\"".into()];
        let padded = AdmissionResponse::patched(&req, b"[ ] ".to_vec());
        for answer in [AdmissionResponse::allow(&req), refused, patched, warned, padded] {
            let text: Value =
                serde_json::from_slice(&answer.to_review_bytes()).expect("the text is JSON");
            assert_eq!(text, answer.to_review());
        }
        let tree = AdmissionResponse::patched(&req, b"[]".to_vec()).to_review();
        assert_eq!(
            tree,
            json!({"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "response": {
                "uid": "u-1", "allowed": true, "patchType": "JSONPatch", "patch": "W10="}})
        );
    }
}
