//! The CRD conversion webhook: `POST /convert` answers a `ConversionReview` by converting every
//! object with kruise-api's conversions ([`kruise_api::KruiseObject::convert_to`]).
//!
//! Reviews of `apiextensions.k8s.io/v1` and `v1beta1` are accepted and answered in the same
//! apiVersion, keeping the request's `uid`. A conversion failure is answered with
//! `result.status: Failure` and a message naming the object and, for invalid objects, the
//! field; a body that is not a `ConversionReview` is answered `400 Bad Request`.

use axum::body::Bytes;
use axum::response::{IntoResponse, Response};
use http::{StatusCode, header};
use serde_json::{Value, json};

/// The path the conversion webhook is served at.
pub const CONVERT_PATH: &str = "/convert";

/// The `ConversionReview` apiVersions served.
pub const REVIEW_VERSIONS: [&str; 2] = ["apiextensions.k8s.io/v1", "apiextensions.k8s.io/v1beta1"];

/// Why a body is not a `ConversionReview` this webhook can answer.
#[non_exhaustive]
#[derive(Debug, thiserror::Error)]
pub enum ReviewError {
    /// The body is not JSON.
    #[error("the body is not a JSON ConversionReview: {0}")]
    Json(#[source] serde_json::Error),
    /// The document is not a `ConversionReview` of a served apiVersion.
    #[error(
        "expected a ConversionReview of apiextensions.k8s.io/v1 or v1beta1, got apiVersion {api_version:?}, kind {kind:?}"
    )]
    NotAReview {
        /// The document's apiVersion.
        api_version: String,
        /// The document's kind.
        kind: String,
    },
    /// The review has no `request`.
    #[error("the ConversionReview has no request")]
    NoRequest,
}

/// Answers a `ConversionReview` body: the response review, or why the body is not one.
pub fn review(body: &[u8]) -> Result<Value, ReviewError> {
    let review: Value = serde_json::from_slice(body).map_err(ReviewError::Json)?;
    let text = |field: &str| review.get(field).and_then(Value::as_str).unwrap_or_default();
    let (api_version, kind) = (text("apiVersion"), text("kind"));
    if !REVIEW_VERSIONS.contains(&api_version) || kind != "ConversionReview" {
        return Err(ReviewError::NotAReview { api_version: api_version.into(), kind: kind.into() });
    }
    let request = review.get("request").filter(|r| r.is_object()).ok_or(ReviewError::NoRequest)?;
    let uid = request.get("uid").cloned().unwrap_or_else(|| json!(""));
    let response = match convert_request(request) {
        Ok(objects) => json!({
            "uid": uid,
            "convertedObjects": objects,
            "result": {"metadata": {}, "status": "Success"},
        }),
        Err(message) => json!({
            "uid": uid,
            "convertedObjects": [],
            "result": {"metadata": {}, "status": "Failure", "message": message},
        }),
    };
    Ok(json!({"apiVersion": api_version, "kind": "ConversionReview", "response": response}))
}

/// Converts the request's objects, or says which object failed and why.
fn convert_request(request: &Value) -> Result<Vec<Value>, String> {
    let desired = request
        .get("desiredAPIVersion")
        .and_then(Value::as_str)
        .filter(|v| !v.is_empty())
        .ok_or_else(|| "the request has no desiredAPIVersion".to_owned())?;
    let objects = match request.get("objects") {
        None | Some(Value::Null) => return Ok(Vec::new()),
        Some(Value::Array(objects)) => objects,
        Some(_) => return Err("request.objects is not a list".to_owned()),
    };
    objects
        .iter()
        .enumerate()
        .map(|(index, object)| {
            convert_one(object, desired).map_err(|why| {
                format!("converting {} to {desired}: {why}", describe(object, index))
            })
        })
        .collect()
}

fn convert_one(object: &Value, desired: &str) -> Result<Value, String> {
    let decoded =
        kruise_api::KruiseObject::from_value(object.clone()).map_err(|e| e.to_string())?;
    let converted = decoded.convert_to(desired).map_err(|e| e.to_string())?;
    serde_json::to_value(&converted).map_err(|e| e.to_string())
}

/// `object 2 (apps.kruise.io/v1alpha1 CloneSet default/web)`.
fn describe(object: &Value, index: usize) -> String {
    let text = |pointer: &str| object.pointer(pointer).and_then(Value::as_str).unwrap_or_default();
    let (namespace, name) = (text("/metadata/namespace"), text("/metadata/name"));
    let name = if namespace.is_empty() { name.to_owned() } else { format!("{namespace}/{name}") };
    format!("object {index} ({} {} {name})", text("/apiVersion"), text("/kind"))
}

/// The axum handler of [`CONVERT_PATH`]. Conversion runs on the blocking pool, so a large list
/// does not stall other requests, and a panic there answers `500` instead of dropping the
/// connection.
pub async fn handle(body: Bytes) -> Response {
    match tokio::task::spawn_blocking(move || review(&body)).await {
        Ok(Ok(answer)) => {
            ([(header::CONTENT_TYPE, "application/json")], answer.to_string()).into_response()
        }
        Ok(Err(e)) => {
            tracing::debug!(error = %e, "rejected a conversion request");
            (StatusCode::BAD_REQUEST, e.to_string()).into_response()
        }
        Err(e) => {
            tracing::error!(error = %e, "the conversion webhook failed");
            (StatusCode::INTERNAL_SERVER_ERROR, format!("conversion failed: {e}")).into_response()
        }
    }
}
