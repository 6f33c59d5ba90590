//! The conversion webhook's ConversionReview handling, and the webhook router's request
//! guard (bad bodies, a panicking handler, a request running out of time), without TLS.

use std::time::Duration;

use axum::body::Body;
use axum::routing::get;
use http::{Request, StatusCode};
use http_body_util::BodyExt as _;
use kruise_kube::webhook::conversion::{ReviewError, review};
use kruise_kube::webhook::router;
use serde_json::{Value, json};
use tower::ServiceExt as _;

fn alpha_cloneset() -> Value {
    json!({
        "apiVersion": "apps.kruise.io/v1alpha1",
        "kind": "CloneSet",
        "metadata": {"name": "web", "namespace": "default", "uid": "u-1", "labels": {"a": "b"}},
        "spec": {
            "replicas": 3,
            "selector": {"matchLabels": {"app": "web"}},
            "updateStrategy": {"type": "InPlaceIfPossible", "maxUnavailable": "20%", "partition": 1},
            "template": {
                "metadata": {"labels": {"app": "web"}},
                "spec": {"containers": [{"name": "c", "image": "nginx"}]},
            },
        },
    })
}

fn request(review_version: &str, desired: &str, objects: Value) -> Vec<u8> {
    json!({
        "apiVersion": review_version,
        "kind": "ConversionReview",
        "request": {"uid": "review-1", "desiredAPIVersion": desired, "objects": objects},
    })
    .to_string()
    .into_bytes()
}

#[test]
fn converts_v1alpha1_to_v1beta1_and_back() {
    let body =
        request("apiextensions.k8s.io/v1", "apps.kruise.io/v1beta1", json!([alpha_cloneset()]));
    let answer = review(&body).expect("a review");
    assert_eq!(answer["apiVersion"], "apiextensions.k8s.io/v1");
    assert_eq!(answer["kind"], "ConversionReview");
    let response = &answer["response"];
    assert_eq!(response["uid"], "review-1");
    assert_eq!(response["result"]["status"], "Success");
    let beta = &response["convertedObjects"][0];
    assert_eq!(beta["apiVersion"], "apps.kruise.io/v1beta1");
    assert_eq!(beta["kind"], "CloneSet");
    assert_eq!(beta["metadata"]["name"], "web");
    assert_eq!(beta["metadata"]["labels"]["a"], "b");
    let strategy = &beta["spec"]["updateStrategy"];
    assert_eq!(strategy["type"], "RollingUpdate");
    assert_eq!(strategy["rollingUpdate"]["podUpdatePolicy"], "InPlaceIfPossible");
    assert_eq!(strategy["rollingUpdate"]["maxUnavailable"], "20%");
    assert_eq!(strategy["rollingUpdate"]["partition"], 1);

    let back = review(&request(
        "apiextensions.k8s.io/v1",
        "apps.kruise.io/v1alpha1",
        json!([beta.clone()]),
    ))
    .expect("a review");
    let alpha = &back["response"]["convertedObjects"][0];
    assert_eq!(alpha["apiVersion"], "apps.kruise.io/v1alpha1");
    assert_eq!(alpha["spec"], alpha_cloneset()["spec"]);
}

#[test]
fn keeps_the_review_version_and_order_of_many_objects() {
    let mut second = alpha_cloneset();
    second["metadata"]["name"] = json!("other");
    let body = request(
        "apiextensions.k8s.io/v1beta1",
        "apps.kruise.io/v1beta1",
        json!([alpha_cloneset(), second]),
    );
    let answer = review(&body).expect("a review");
    assert_eq!(answer["apiVersion"], "apiextensions.k8s.io/v1beta1");
    assert_eq!(answer["response"]["uid"], "review-1");
    assert_eq!(answer["response"]["result"]["status"], "Success");
    let names: Vec<&Value> = answer["response"]["convertedObjects"]
        .as_array()
        .expect("converted objects")
        .iter()
        .map(|o| &o["metadata"]["name"])
        .collect();
    assert_eq!(names, [&json!("web"), &json!("other")]);
}

#[test]
fn no_objects_is_an_empty_success() {
    let body = json!({
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "ConversionReview",
        "request": {"uid": "u", "desiredAPIVersion": "apps.kruise.io/v1beta1"},
    });
    let answer = review(body.to_string().as_bytes()).expect("a review");
    assert_eq!(answer["response"]["result"]["status"], "Success");
    assert_eq!(answer["response"]["convertedObjects"], json!([]));
}

#[test]
fn an_unknown_kind_fails_naming_the_object() {
    let mut object = alpha_cloneset();
    object["kind"] = json!("CloneSett");
    let answer =
        review(&request("apiextensions.k8s.io/v1", "apps.kruise.io/v1beta1", json!([object])))
            .expect("a review");
    let response = &answer["response"];
    assert_eq!(response["uid"], "review-1");
    assert_eq!(response["result"]["status"], "Failure");
    let message = response["result"]["message"].as_str().expect("a message");
    assert!(message.contains("object 0"), "{message}");
    assert!(message.contains("CloneSett default/web"), "{message}");
    assert!(message.contains("apps.kruise.io/v1beta1"), "{message}");
    assert!(message.contains("did you mean CloneSet"), "{message}");
}

#[test]
fn an_invalid_field_fails_naming_the_field() {
    let mut object = alpha_cloneset();
    object["spec"]["replicas"] = json!("three");
    let answer =
        review(&request("apiextensions.k8s.io/v1", "apps.kruise.io/v1beta1", json!([object])))
            .expect("a review");
    let message = answer["response"]["result"]["message"].as_str().expect("a message");
    assert_eq!(answer["response"]["result"]["status"], "Failure");
    assert!(message.contains("spec.replicas"), "{message}");
}

#[test]
fn an_unserved_version_fails() {
    let answer =
        review(&request("apiextensions.k8s.io/v1", "apps.kruise.io/v2", json!([alpha_cloneset()])))
            .expect("a review");
    assert_eq!(answer["response"]["result"]["status"], "Failure");
    let message = answer["response"]["result"]["message"].as_str().expect("a message");
    assert!(message.contains("apps.kruise.io/v2"), "{message}");
}

#[test]
fn bodies_that_are_not_reviews_are_rejected() {
    assert!(matches!(review(b"{not json"), Err(ReviewError::Json(_))));
    let admission = json!({"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview"});
    let err = review(admission.to_string().as_bytes()).expect_err("not a review");
    assert!(matches!(err, ReviewError::NotAReview { .. }), "{err}");
    assert!(err.to_string().contains("admission.k8s.io/v1"), "{err}");
    let empty = json!({"apiVersion": "apiextensions.k8s.io/v1", "kind": "ConversionReview"});
    assert!(matches!(review(empty.to_string().as_bytes()), Err(ReviewError::NoRequest)));
}

async fn call(app: axum::Router, request: Request<Body>) -> (StatusCode, String) {
    let response = app.oneshot(request).await.expect("infallible");
    let status = response.status();
    let body = response.into_body().collect().await.expect("body").to_bytes();
    (status, String::from_utf8_lossy(&body).into_owned())
}

fn post_convert(body: impl Into<Body>) -> Request<Body> {
    Request::post("/convert")
        .header("content-type", "application/json")
        .body(body.into())
        .expect("request")
}

#[tokio::test]
async fn the_route_answers_reviews_and_rejects_malformed_json_with_400() {
    let app = router(axum::Router::new(), Duration::from_secs(10));
    let body =
        request("apiextensions.k8s.io/v1", "apps.kruise.io/v1beta1", json!([alpha_cloneset()]));
    let (status, text) = call(app.clone(), post_convert(body)).await;
    assert_eq!(status, StatusCode::OK);
    let answer: Value = serde_json::from_str(&text).expect("JSON");
    assert_eq!(answer["response"]["result"]["status"], "Success");

    let (status, text) = call(app.clone(), post_convert("{\"apiVersion\": ")).await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    assert!(text.contains("not a JSON ConversionReview"), "{text}");

    let (status, text) =
        call(app, Request::get("/healthz").body(Body::empty()).expect("request")).await;
    assert_eq!((status, text.as_str()), (StatusCode::OK, "ok"));
}

#[tokio::test]
async fn a_panicking_handler_answers_500_and_the_router_keeps_serving() {
    let extra = axum::Router::new().route(
        "/boom",
        get(|| async {
            if std::hint::black_box(true) {
                panic!("handler bug");
            }
            "unreachable"
        }),
    );
    let app = router(extra, Duration::from_secs(10));
    let (status, text) =
        call(app.clone(), Request::get("/boom").body(Body::empty()).expect("request")).await;
    assert_eq!(status, StatusCode::INTERNAL_SERVER_ERROR);
    assert!(text.contains("/boom"), "{text}");
    let (status, _) =
        call(app, Request::get("/healthz").body(Body::empty()).expect("request")).await;
    assert_eq!(status, StatusCode::OK);
}

#[tokio::test(start_paused = true)]
async fn a_slow_handler_is_cut_off_with_504() {
    let extra = axum::Router::new().route(
        "/slow",
        get(|| async {
            tokio::time::sleep(Duration::from_secs(3600)).await;
            "late"
        }),
    );
    let app = router(extra, Duration::from_secs(10));
    let (status, text) =
        call(app, Request::get("/slow").body(Body::empty()).expect("request")).await;
    assert_eq!(status, StatusCode::GATEWAY_TIMEOUT);
    assert!(text.contains("/slow") && text.contains("10s"), "{text}");
}
