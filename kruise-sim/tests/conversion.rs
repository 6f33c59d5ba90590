//! CRD conversion through a conversion webhook: the Kruise CloneSet CRD is switched to
//! `strategy: Webhook`, served by an HTTPS webhook in this test that converts with
//! `kruise_api::KruiseObject::convert_to`, and driven by the real kubectl.

mod common;

use base64::Engine as _;
use bytes::Bytes;
use common::Env;
use http_body_util::{BodyExt, Full};
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper_util::rt::TokioIo;
use kruise_sim::Config;
use serde_json::{Value, json};
use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

struct Webhook {
    addr: SocketAddr,
    ca_pem: String,
    calls: Arc<AtomicUsize>,
    _stop: tokio::sync::oneshot::Sender<()>,
}

fn convert(review: &Value) -> Value {
    let uid = review.pointer("/request/uid").cloned().unwrap_or(Value::Null);
    let desired = review.pointer("/request/desiredAPIVersion").and_then(Value::as_str);
    let objects = review.pointer("/request/objects").and_then(Value::as_array);
    let converted: Result<Vec<Value>, String> = objects
        .into_iter()
        .flatten()
        .map(|o| {
            let obj = kruise_api::KruiseObject::from_value(o.clone()).map_err(|e| e.to_string())?;
            let out = obj.convert_to(desired.unwrap_or_default()).map_err(|e| e.to_string())?;
            serde_json::to_value(&out).map_err(|e| e.to_string())
        })
        .collect();
    let response = match converted {
        Ok(objs) => json!({"uid": uid, "convertedObjects": objs, "result": {"status": "Success"}}),
        Err(m) => json!({"uid": uid, "result": {"status": "Failure", "message": m}}),
    };
    json!({"apiVersion": "apiextensions.k8s.io/v1", "kind": "ConversionReview", "response": response})
}

fn start_webhook() -> Webhook {
    use rcgen::{BasicConstraints, CertificateParams, IsCa, Issuer, KeyPair};
    let ca_key = KeyPair::generate().expect("ca key");
    let mut ca_params = CertificateParams::new(Vec::<String>::new()).expect("ca params");
    ca_params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    let ca_cert = ca_params.self_signed(&ca_key).expect("ca cert");
    let issuer = Issuer::new(ca_params, ca_key);
    let key = KeyPair::generate().expect("key");
    let params =
        CertificateParams::new(vec!["convert.kruise-system.svc".to_string()]).expect("params");
    let cert = params.signed_by(&key, &issuer).expect("cert");
    let pk = rustls::pki_types::PrivateKeyDer::Pkcs8(key.serialize_der().into());
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let tls = rustls::ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .expect("versions")
        .with_no_client_auth()
        .with_single_cert(vec![cert.der().clone()], pk)
        .expect("server config");
    let acceptor = tokio_rustls::TlsAcceptor::from(Arc::new(tls));
    let calls = Arc::new(AtomicUsize::new(0));
    let calls2 = calls.clone();
    let (addr_tx, addr_rx) = std::sync::mpsc::channel();
    let (stop, mut stop_rx) = tokio::sync::oneshot::channel::<()>();
    std::thread::spawn(move || {
        let rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .expect("runtime");
        rt.block_on(async move {
            let l = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("bind");
            addr_tx.send(l.local_addr().expect("addr")).expect("addr sent");
            loop {
                let (s, _) = tokio::select! {
                    a = l.accept() => match a { Ok(a) => a, Err(_) => continue },
                    _ = &mut stop_rx => return,
                };
                let acceptor = acceptor.clone();
                let calls = calls2.clone();
                tokio::spawn(async move {
                    let Ok(s) = acceptor.accept(s).await else { return };
                    let svc = service_fn(move |req: http::Request<hyper::body::Incoming>| {
                        let calls = calls.clone();
                        async move {
                            let body = req.into_body().collect().await.map(|b| b.to_bytes());
                            let review: Value = body
                                .ok()
                                .and_then(|b| serde_json::from_slice(&b).ok())
                                .unwrap_or(Value::Null);
                            calls.fetch_add(1, Ordering::SeqCst);
                            let out = convert(&review);
                            Ok::<_, std::convert::Infallible>(http::Response::new(Full::new(
                                Bytes::from(out.to_string()),
                            )))
                        }
                    });
                    let _ = http1::Builder::new().serve_connection(TokioIo::new(s), svc).await;
                });
            }
        });
    });
    let addr = addr_rx.recv().expect("webhook server started");
    Webhook { addr, ca_pem: ca_cert.pem(), calls, _stop: stop }
}

fn use_webhook(env: &Env, service: &str, ca_pem: &str) {
    let ca = base64::engine::general_purpose::STANDARD.encode(ca_pem);
    let patch = json!({"spec": {"conversion": {"strategy": "Webhook", "webhook": {
    "conversionReviewVersions": ["v1"],
    "clientConfig": {
        "service": {"namespace": "kruise-system", "name": service, "path": "/convert"},
        "caBundle": ca,
    }}}}});
    env.ok(&[
        "patch",
        "crd",
        "clonesets.apps.kruise.io",
        "--type",
        "merge",
        "-p",
        &patch.to_string(),
    ]);
}

const ALPHA: &str = r#"
apiVersion: apps.kruise.io/v1alpha1
kind: CloneSet
metadata: {name: alpha, labels: {made: alpha}}
spec:
  replicas: 2
  selector: {matchLabels: {app: alpha}}
  updateStrategy: {type: InPlaceIfPossible, partition: 1}
  template:
    metadata: {labels: {app: alpha}}
    spec:
      containers: [{name: c, image: nginx}]
"#;

const BETA: &str = r#"
apiVersion: apps.kruise.io/v1beta1
kind: CloneSet
metadata: {name: beta}
spec:
  replicas: 1
  selector: {matchLabels: {app: beta}}
  updateStrategy:
    type: RollingUpdate
    rollingUpdate: {podUpdatePolicy: InPlaceOnly, partition: 0}
  template:
    metadata: {labels: {app: beta}}
    spec:
      containers: [{name: c, image: nginx}]
"#;

#[test]
fn cloneset_versions_convert_through_the_webhook() {
    let hook = start_webhook();
    let env = Env::new(Config::default().with_kruise_crds().with_webhook_service(
        "kruise-system",
        "convert",
        hook.addr,
    ));
    use_webhook(&env, "convert", &hook.ca_pem);

    // v1alpha1 -> stored v1beta1 -> read back at both versions.
    env.ok_stdin(&["create", "-f", "-"], ALPHA);
    assert!(hook.calls.load(Ordering::SeqCst) > 0, "the webhook converted the create");
    let beta = env.json(&["get", "clonesets.v1beta1.apps.kruise.io", "alpha"]);
    assert_eq!(beta["apiVersion"], "apps.kruise.io/v1beta1");
    assert_eq!(beta["spec"]["updateStrategy"]["type"], "RollingUpdate");
    assert_eq!(
        beta["spec"]["updateStrategy"]["rollingUpdate"]["podUpdatePolicy"],
        "InPlaceIfPossible"
    );
    assert_eq!(beta["spec"]["updateStrategy"]["rollingUpdate"]["partition"], 1);
    assert_eq!(beta["metadata"]["labels"]["made"], "alpha");
    let alpha = env.json(&["get", "clonesets.v1alpha1.apps.kruise.io", "alpha"]);
    assert_eq!(alpha["apiVersion"], "apps.kruise.io/v1alpha1");
    assert_eq!(alpha["spec"]["updateStrategy"]["type"], "InPlaceIfPossible");
    assert_eq!(alpha["metadata"]["uid"], beta["metadata"]["uid"]);
    assert_eq!(alpha["metadata"]["resourceVersion"], beta["metadata"]["resourceVersion"]);

    // v1beta1 -> read at v1alpha1 (get, list, table).
    env.ok_stdin(&["create", "-f", "-"], BETA);
    let alpha = env.json(&["get", "clonesets.v1alpha1.apps.kruise.io", "beta"]);
    assert_eq!(alpha["spec"]["updateStrategy"]["type"], "InPlaceOnly");
    let list = env.json(&["get", "clonesets.v1alpha1.apps.kruise.io"]);
    let types: Vec<&Value> = list["items"]
        .as_array()
        .expect("items")
        .iter()
        .map(|i| &i["spec"]["updateStrategy"]["type"])
        .collect();
    assert_eq!(types, [&json!("InPlaceIfPossible"), &json!("InPlaceOnly")]);
    let table = env.ok(&["get", "clonesets.v1alpha1.apps.kruise.io"]);
    assert!(table.lines().any(|l| l.starts_with("beta ")), "{table}");

    // A patch at v1alpha1 is applied to the converted object and stored converted back.
    env.ok(&[
        "patch",
        "clonesets.v1alpha1.apps.kruise.io",
        "beta",
        "--type",
        "merge",
        "-p",
        r#"{"spec":{"updateStrategy":{"type":"ReCreate"}}}"#,
    ]);
    let beta = env.json(&["get", "clonesets.v1beta1.apps.kruise.io", "beta"]);
    assert_eq!(beta["spec"]["updateStrategy"]["rollingUpdate"]["podUpdatePolicy"], "ReCreate");
    assert_eq!(beta["metadata"]["generation"], 2);

    // Watch events at v1alpha1 are converted.
    let raw = env.ok(&[
        "get",
        "--raw",
        "/apis/apps.kruise.io/v1alpha1/namespaces/default/clonesets?watch=true&timeoutSeconds=1",
    ]);
    let events: Vec<Value> =
        raw.lines().map(|l| serde_json::from_str(l).expect("watch event")).collect();
    assert_eq!(events.len(), 2, "{raw}");
    for e in &events {
        assert_eq!(e["object"]["apiVersion"], "apps.kruise.io/v1alpha1");
        assert!(e["object"]["spec"]["updateStrategy"]["rollingUpdate"].is_null(), "{e}");
    }

    // Failures answer the real server's error.
    use_webhook(&env, "missing", &hook.ca_pem);
    let err = env.fails(&["get", "clonesets.v1alpha1.apps.kruise.io", "alpha"]);
    let want = r#"conversion webhook for apps.kruise.io/v1beta1, Kind=CloneSet failed: Post "https://missing.kruise-system.svc:443/convert?timeout=30s": service "missing" not found"#;
    assert!(err.contains(&format!("Error from server: {want}")), "{err}");
    let err = env.fails(&[
        "patch",
        "clonesets.v1alpha1.apps.kruise.io",
        "alpha",
        "--type",
        "merge",
        "-p",
        r#"{"spec":{"replicas":3}}"#,
    ]);
    assert!(
        err.contains("conversion webhook for apps.kruise.io/v1beta1, Kind=CloneSet failed"),
        "{err}"
    );
    // The storage version needs no conversion.
    env.ok(&["get", "clonesets.v1beta1.apps.kruise.io", "alpha"]);
}
