//! The webhook server against kruise-sim: certificates kept in the Secret and shared between
//! starts and replicas, readiness, CRD conversion through the API server (URL and Service
//! modes), rotation under continuous traffic, external certificates, and isolation of a
//! failing handler.

use std::collections::BTreeSet;
use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use axum::body::Bytes;
use base64::Engine as _;
use http_body_util::{BodyExt as _, Empty};
use hyper_util::rt::TokioIo;
use k8s_openapi::api::core::v1::{Namespace, Secret};
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kruise_kube::health::Health;
use kruise_kube::webhook::{
    self, READY_CHECK, WebhookConfig, WebhookError, WebhookHandle, WebhookServer,
};
use kruise_sim::{Config, Server, ServerHandle};
use kube::Api;
use kube::api::{ApiResource, DynamicObject, GroupVersionKind, Patch, PatchParams, PostParams};
use rustls_pki_types::pem::PemObject as _;
use rustls_pki_types::{CertificateDer, ServerName};
use serde_json::{Value, json};
use tokio::sync::oneshot;
use tokio::time::{Instant, sleep};

const NS: &str = "kruise-system";
const SERVICE_HOST: &str = "kruise-webhook-service.kruise-system.svc";
const WAIT: Duration = Duration::from_secs(30);

async fn setup(config: Config) -> (ServerHandle, kube::Client) {
    let server = Server::start(config).await.expect("server starts");
    let client =
        kruise_sim::nodes::client_from_kubeconfig(&server.kubeconfig).await.expect("client");
    let ns = Namespace {
        metadata: ObjectMeta { name: Some(NS.into()), ..Default::default() },
        ..Default::default()
    };
    Api::<Namespace>::all(client.clone())
        .create(&PostParams::default(), &ns)
        .await
        .expect("namespace created");
    (server, client)
}

/// Loopback, any port, Service mode, no CRD patching, quick checks.
fn config() -> WebhookConfig {
    let mut config = WebhookConfig::new();
    config.port = 0;
    config.bind = "127.0.0.1".parse().expect("ip");
    config.configure_crds = false;
    config.check_interval = Duration::from_millis(50);
    config.request_timeout = Duration::from_secs(10);
    config
}

struct Running {
    handle: WebhookHandle,
    health: Health,
    stop: Option<oneshot::Sender<()>>,
}

impl Running {
    async fn start(client: &kube::Client, server: WebhookServer) -> Result<Running, WebhookError> {
        let (stop, stopped) = oneshot::channel::<()>();
        let health = Health::new();
        let handle = server
            .start(client.clone(), health.clone(), async move {
                let _ = stopped.await;
            })
            .await?;
        Ok(Running { handle, health, stop: Some(stop) })
    }

    async fn wait_ready(&self) {
        let deadline = Instant::now() + WAIT;
        while !self.health.is_ready() {
            assert!(Instant::now() < deadline, "webhook never ready: {:?}", self.health.report());
            sleep(Duration::from_millis(20)).await;
        }
    }

    async fn stop(mut self) -> Health {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        self.handle.join().await;
        self.health
    }
}

/// One HTTPS request on a new connection: status, body, and the leaf certificate served.
async fn https_get(
    addr: SocketAddr,
    server_name: &str,
    ca_pem: &str,
    path: &str,
) -> Result<(u16, String, Vec<u8>), String> {
    let (mut sender, leaf) = connect(addr, server_name, ca_pem).await?;
    let (status, body) = send(&mut sender, server_name, path).await?;
    Ok((status, body, leaf))
}

type Sender = hyper::client::conn::http1::SendRequest<Empty<Bytes>>;

async fn connect(
    addr: SocketAddr,
    server_name: &str,
    ca_pem: &str,
) -> Result<(Sender, Vec<u8>), String> {
    let mut roots = rustls::RootCertStore::empty();
    for ca in CertificateDer::pem_slice_iter(ca_pem.as_bytes()) {
        roots.add(ca.map_err(|e| e.to_string())?).map_err(|e| e.to_string())?;
    }
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let config = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|e| e.to_string())?
        .with_root_certificates(roots)
        .with_no_client_auth();
    let name = ServerName::try_from(server_name.to_owned()).map_err(|e| e.to_string())?;
    let tcp = tokio::net::TcpStream::connect(addr).await.map_err(|e| format!("connect: {e}"))?;
    let tls = tokio_rustls::TlsConnector::from(Arc::new(config))
        .connect(name, tcp)
        .await
        .map_err(|e| format!("TLS: {e}"))?;
    let leaf = tls
        .get_ref()
        .1
        .peer_certificates()
        .and_then(|c| c.first())
        .map(|c| c.as_ref().to_vec())
        .ok_or("no peer certificate")?;
    let (sender, connection) = hyper::client::conn::http1::handshake(TokioIo::new(tls))
        .await
        .map_err(|e| e.to_string())?;
    tokio::spawn(connection);
    Ok((sender, leaf))
}

async fn send(sender: &mut Sender, host: &str, path: &str) -> Result<(u16, String), String> {
    sender.ready().await.map_err(|e| format!("connection: {e}"))?;
    let request = http::Request::get(path)
        .header(http::header::HOST, host)
        .body(Empty::<Bytes>::new())
        .map_err(|e| e.to_string())?;
    let response = sender.send_request(request).await.map_err(|e| format!("request: {e}"))?;
    let status = response.status().as_u16();
    let body = response.into_body().collect().await.map_err(|e| e.to_string())?.to_bytes();
    Ok((status, String::from_utf8_lossy(&body).into_owned()))
}

fn pem_der(pem: &str) -> Vec<u8> {
    CertificateDer::pem_slice_iter(pem.as_bytes())
        .next()
        .expect("a certificate")
        .expect("valid PEM")
        .as_ref()
        .to_vec()
}

async fn secret(client: &kube::Client, name: &str) -> Secret {
    Api::<Secret>::namespaced(client.clone(), NS).get(name).await.expect("secret")
}

fn secret_text(secret: &Secret, key: &str) -> String {
    let data = secret.data.as_ref().expect("data");
    String::from_utf8(data.get(key).unwrap_or_else(|| panic!("key {key}")).0.clone()).expect("utf8")
}

#[tokio::test]
async fn certificates_are_kept_in_the_secret_and_reused_by_the_next_start() {
    let (_server, client) = setup(Config::default()).await;
    let first = Running::start(&client, WebhookServer::new(config())).await.expect("starts");
    assert_ne!(first.handle.addr.port(), 0);
    first.wait_ready().await;

    let stored = secret(&client, "kruise-webhook-certs").await;
    for key in ["ca-cert.pem", "ca-key.pem", "cert.pem", "key.pem", "tls.crt", "tls.key"] {
        assert!(!secret_text(&stored, key).is_empty(), "{key}");
    }
    assert_eq!(secret_text(&stored, "ca-cert.pem"), first.handle.ca_pem);
    assert_eq!(secret_text(&stored, "tls.crt"), secret_text(&stored, "cert.pem"));

    let (status, body, leaf) =
        https_get(first.handle.addr, SERVICE_HOST, &first.handle.ca_pem, "/healthz")
            .await
            .expect("get");
    assert_eq!((status, body.as_str()), (200, "ok"));
    assert_eq!(leaf, pem_der(&secret_text(&stored, "cert.pem")));
    for name in [
        "kruise-webhook-service",
        "kruise-webhook-service.kruise-system",
        "kruise-webhook-service.kruise-system.svc.cluster.local",
    ] {
        https_get(first.handle.addr, name, &first.handle.ca_pem, "/healthz").await.expect(name);
    }
    let (ca, serving) = (first.handle.ca_pem.clone(), first.handle.serving_cert());
    let health = first.stop().await;
    assert_eq!(health.report(), [(READY_CHECK.to_owned(), false)]);

    let second = Running::start(&client, WebhookServer::new(config())).await.expect("restarts");
    assert_eq!(second.handle.ca_pem, ca);
    assert_eq!(second.handle.serving_cert(), serving);
    let again = secret(&client, "kruise-webhook-certs").await;
    assert_eq!(again.metadata.resource_version, stored.metadata.resource_version);
    second.wait_ready().await;
    second.stop().await;
}

#[tokio::test]
async fn replicas_starting_together_share_one_ca() {
    let (_server, client) = setup(Config::default()).await;
    let mut config = config();
    config.secret_name = "shared-certs".into();
    let (a, b) = tokio::join!(
        Running::start(&client, WebhookServer::new(config.clone())),
        Running::start(&client, WebhookServer::new(config.clone())),
    );
    let (a, b) = (a.expect("a starts"), b.expect("b starts"));
    assert_eq!(a.handle.ca_pem, b.handle.ca_pem);
    assert_eq!(a.handle.serving_cert(), b.handle.serving_cert());
    assert_eq!(secret_text(&secret(&client, "shared-certs").await, "ca-cert.pem"), a.handle.ca_pem);
    // Each trusts the other's certificate.
    https_get(b.handle.addr, SERVICE_HOST, &a.handle.ca_pem, "/healthz").await.expect("b answers");
    a.stop().await;
    b.stop().await;
}

#[tokio::test]
async fn a_missing_namespace_is_named_in_the_error() {
    let (_server, client) = setup(Config::default()).await;
    let mut config = config();
    config.namespace = "no-such-namespace".into();
    let err = Running::start(&client, WebhookServer::new(config)).await.err().expect("fails");
    assert!(matches!(err, WebhookError::NamespaceMissing { .. }), "{err}");
    assert!(err.to_string().contains("\"no-such-namespace\""), "{err}");
}

fn cloneset_api(client: &kube::Client, version: &str) -> Api<DynamicObject> {
    let gvk = GroupVersionKind::gvk("apps.kruise.io", version, "CloneSet");
    let resource = ApiResource::from_gvk_with_plural(&gvk, "clonesets");
    Api::namespaced_with(client.clone(), "default", &resource)
}

fn alpha_cloneset(name: &str) -> DynamicObject {
    serde_json::from_value(json!({
        "apiVersion": "apps.kruise.io/v1alpha1",
        "kind": "CloneSet",
        "metadata": {"name": name, "labels": {"made": "alpha"}},
        "spec": {
            "replicas": 2,
            "selector": {"matchLabels": {"app": name}},
            "updateStrategy": {"type": "InPlaceIfPossible", "maxUnavailable": "20%", "partition": 1},
            "template": {
                "metadata": {"labels": {"app": name}},
                "spec": {"containers": [{"name": "c", "image": "nginx"}]},
            },
        },
    }))
    .expect("object")
}

/// Creates a CloneSet at v1alpha1 and reads it at both versions through the API server.
async fn round_trip(client: &kube::Client, name: &str) {
    let created = cloneset_api(client, "v1alpha1")
        .create(&PostParams::default(), &alpha_cloneset(name))
        .await
        .expect("created at v1alpha1");
    assert_eq!(created.data["spec"]["updateStrategy"]["type"], "InPlaceIfPossible");

    let beta = cloneset_api(client, "v1beta1").get(name).await.expect("read at v1beta1");
    assert_eq!(beta.types.as_ref().map(|t| t.api_version.as_str()), Some("apps.kruise.io/v1beta1"));
    let strategy = &beta.data["spec"]["updateStrategy"];
    assert_eq!(strategy["type"], "RollingUpdate");
    assert_eq!(strategy["rollingUpdate"]["maxUnavailable"], "20%");
    assert_eq!(strategy["rollingUpdate"]["podUpdatePolicy"], "InPlaceIfPossible");
    assert_eq!(strategy["rollingUpdate"]["partition"], 1);
    assert_eq!(
        beta.metadata.labels.as_ref().and_then(|l| l.get("made")).map(String::as_str),
        Some("alpha")
    );

    let alpha = cloneset_api(client, "v1alpha1").get(name).await.expect("read at v1alpha1");
    assert_eq!(
        alpha.data["spec"]["updateStrategy"],
        alpha_cloneset(name).data["spec"]["updateStrategy"]
    );
    assert_eq!(alpha.metadata.uid, beta.metadata.uid);
}

async fn conversion_client_config(client: &kube::Client) -> Value {
    let crd = Api::<CustomResourceDefinition>::all(client.clone())
        .get("clonesets.apps.kruise.io")
        .await
        .expect("crd");
    let conversion = serde_json::to_value(crd.spec.conversion).expect("json");
    assert_eq!(conversion["strategy"], "Webhook");
    assert_eq!(conversion["webhook"]["conversionReviewVersions"], json!(["v1", "v1beta1"]));
    conversion["webhook"]["clientConfig"].clone()
}

#[tokio::test]
async fn crd_conversion_through_the_api_server_by_url() {
    let (_server, client) = setup(Config::default().with_kruise_crds()).await;
    let mut config = config().with_host("127.0.0.1");
    config.configure_crds = true;
    let running = Running::start(&client, WebhookServer::new(config)).await.expect("starts");
    let port = running.handle.addr.port();

    let client_config = conversion_client_config(&client).await;
    assert_eq!(client_config["url"], format!("https://127.0.0.1:{port}/convert"));
    assert!(client_config.get("service").is_none_or(Value::is_null), "{client_config}");
    let ca = base64::engine::general_purpose::STANDARD.encode(&running.handle.ca_pem);
    assert_eq!(client_config["caBundle"], ca);

    round_trip(&client, "by-url").await;

    // A reinstalled CRD (conversion back to None) is re-patched by the periodic check.
    let reset = json!({"spec": {"conversion": {"strategy": "None", "webhook": null}}});
    Api::<CustomResourceDefinition>::all(client.clone())
        .patch("clonesets.apps.kruise.io", &PatchParams::default(), &Patch::Merge(&reset))
        .await
        .expect("reset");
    let deadline = Instant::now() + WAIT;
    loop {
        let crd = Api::<CustomResourceDefinition>::all(client.clone())
            .get("clonesets.apps.kruise.io")
            .await
            .expect("crd");
        let strategy = crd.spec.conversion.map(|c| c.strategy);
        if strategy.as_deref() == Some("Webhook") {
            break;
        }
        assert!(Instant::now() < deadline, "never re-patched: {strategy:?}");
        sleep(Duration::from_millis(20)).await;
    }
    assert_eq!(conversion_client_config(&client).await, client_config);
    round_trip(&client, "by-url-again").await;

    // Patching again is idempotent and covers every multi-version Kruise CRD.
    let patched =
        webhook::configure_crd_conversion(&client, running.handle.config(), &running.handle.ca_pem)
            .await
            .expect("patched");
    assert!(patched.contains(&"clonesets.apps.kruise.io".to_owned()), "{patched:?}");
    assert_eq!(patched, webhook::crds::multi_version_crds());
    running.stop().await;
}

#[tokio::test]
async fn crd_conversion_through_the_api_server_by_service() {
    let (server, client) = setup(Config::default().with_kruise_crds()).await;
    let mut config = config();
    config.configure_crds = true;
    let running = Running::start(&client, WebhookServer::new(config)).await.expect("starts");
    server.register_webhook_service(NS, "kruise-webhook-service", running.handle.addr);

    let client_config = conversion_client_config(&client).await;
    assert_eq!(
        client_config["service"],
        json!({"namespace": NS, "name": "kruise-webhook-service", "path": "/convert", "port": 443})
    );
    assert!(client_config.get("url").is_none_or(Value::is_null), "{client_config}");
    round_trip(&client, "by-service").await;
    running.stop().await;
}

#[derive(Default)]
struct Traffic {
    requests: usize,
    failures: Vec<String>,
    leaves: BTreeSet<Vec<u8>>,
}

#[tokio::test]
async fn rotation_swaps_the_certificate_without_failing_a_request() {
    let (_server, client) = setup(Config::default().with_kruise_crds()).await;
    let mut config = config().with_host("127.0.0.1");
    config.configure_crds = true;
    // Every check finds the 1-hour certificate due (it expires within 2 hours): a rotation
    // every 50 ms.
    config.cert_validity = Duration::from_secs(3600);
    config.rotate_before = Duration::from_secs(7200);
    let running = Running::start(&client, WebhookServer::new(config)).await.expect("starts");
    running.wait_ready().await;
    let (addr, ca) = (running.handle.addr, running.handle.ca_pem.clone());
    let initial = running.handle.serving_cert();
    round_trip(&client, "before").await;

    let done = Arc::new(AtomicBool::new(false));
    // New connections: each handshake sees the certificate of the moment.
    let fresh = tokio::spawn({
        let (done, ca) = (done.clone(), ca.clone());
        async move {
            let mut traffic = Traffic::default();
            while !done.load(Ordering::SeqCst) {
                traffic.requests += 1;
                match https_get(addr, "127.0.0.1", &ca, "/healthz").await {
                    Ok((200, _, leaf)) => {
                        traffic.leaves.insert(leaf);
                    }
                    Ok((status, body, _)) => traffic.failures.push(format!("{status}: {body}")),
                    Err(e) => traffic.failures.push(e),
                }
            }
            traffic
        }
    });
    // One kept-alive connection: unaffected by the swaps.
    let kept = tokio::spawn({
        let (done, ca) = (done.clone(), ca.clone());
        async move {
            let mut traffic = Traffic::default();
            let (mut sender, leaf) = connect(addr, "127.0.0.1", &ca).await.expect("connects");
            traffic.leaves.insert(leaf);
            while !done.load(Ordering::SeqCst) {
                traffic.requests += 1;
                match send(&mut sender, "127.0.0.1", "/healthz").await {
                    Ok((200, _)) => {}
                    Ok((status, body)) => traffic.failures.push(format!("{status}: {body}")),
                    Err(e) => traffic.failures.push(e),
                }
                sleep(Duration::from_millis(5)).await;
            }
            traffic
        }
    });
    // Conversions by the API server, which trusts the caBundle.
    let api = tokio::spawn({
        let (done, client) = (done.clone(), client.clone());
        async move {
            let mut traffic = Traffic::default();
            while !done.load(Ordering::SeqCst) {
                traffic.requests += 1;
                if let Err(e) = cloneset_api(&client, "v1alpha1").get("before").await {
                    traffic.failures.push(e.to_string());
                }
            }
            traffic
        }
    });

    let mut updates = running.handle.serving_updates();
    let mut serials = BTreeSet::from([initial.serial.clone()]);
    let deadline = Instant::now() + WAIT;
    while serials.len() < 4 || running.handle.serving_cert().not_after <= initial.not_after {
        let remaining = deadline.saturating_duration_since(Instant::now());
        tokio::time::timeout(remaining, updates.changed())
            .await
            .expect("rotations keep coming")
            .expect("server running");
        serials.insert(updates.borrow_and_update().serial.clone());
    }
    // Let the clients see the latest certificate too.
    sleep(Duration::from_millis(200)).await;
    done.store(true, Ordering::SeqCst);
    let (fresh, kept, api) =
        (fresh.await.expect("fresh"), kept.await.expect("kept"), api.await.expect("api"));

    for (what, traffic) in [("fresh", &fresh), ("kept-alive", &kept), ("API", &api)] {
        assert!(traffic.requests > 0, "{what}: no requests");
        assert!(traffic.failures.is_empty(), "{what}: {:?}", traffic.failures);
    }
    assert!(fresh.leaves.len() >= 2, "new connections saw {} certificates", fresh.leaves.len());
    assert_eq!(kept.leaves.len(), 1);

    let latest = running.handle.serving_cert();
    assert_ne!(latest.serial, initial.serial);
    assert!(latest.not_after > initial.not_after, "{latest:?} vs {initial:?}");
    // The CA stays: clients and the CRDs keep trusting the same bundle.
    assert_eq!(running.handle.trust_bundle(), ca);
    let stored = secret(&client, "kruise-webhook-certs").await;
    assert_eq!(secret_text(&stored, "ca-cert.pem"), ca);
    assert_eq!(
        conversion_client_config(&client).await["caBundle"],
        base64::engine::general_purpose::STANDARD.encode(&ca)
    );
    assert!(running.health.is_ready());
    round_trip(&client, "after").await;
    running.stop().await;
}

/// A CA and a serving certificate for `names`, as PEM: (ca, cert, key).
fn external_certs(names: &[&str]) -> (String, String, String) {
    let (ca, cert, key, _) = external_certs_with_ca_key(names);
    (ca, cert, key)
}

/// A CA and a serving certificate for `names`, as PEM: (ca, cert, key, CA key).
fn external_certs_with_ca_key(names: &[&str]) -> (String, String, String, String) {
    let ca_key = rcgen::KeyPair::generate().expect("ca key");
    let mut ca_params = rcgen::CertificateParams::new(Vec::<String>::new()).expect("ca params");
    ca_params.is_ca = rcgen::IsCa::Ca(rcgen::BasicConstraints::Unconstrained);
    ca_params.distinguished_name.push(rcgen::DnType::CommonName, "external-ca");
    let ca_cert = ca_params.self_signed(&ca_key).expect("ca cert");
    let issuer = rcgen::Issuer::new(ca_params, ca_key);
    let key = rcgen::KeyPair::generate().expect("key");
    let names: Vec<String> = names.iter().map(|n| (*n).to_owned()).collect();
    let cert = rcgen::CertificateParams::new(names)
        .expect("params")
        .signed_by(&key, &issuer)
        .expect("cert");
    (ca_cert.pem(), cert.pem(), key.serialize_pem(), issuer.key().serialize_pem())
}

fn write_certs(dir: &std::path::Path, (ca, cert, key): &(String, String, String)) {
    // The key first: a reload between the writes sees a mismatched pair and keeps the old one.
    std::fs::write(dir.join("tls.key"), key).expect("write key");
    std::fs::write(dir.join("tls.crt"), cert).expect("write cert");
    std::fs::write(dir.join("ca.crt"), ca).expect("write ca");
}

#[tokio::test]
async fn external_certificates_are_served_and_reloaded_when_the_files_change() {
    let (_server, client) = setup(Config::default()).await;
    let dir = tempfile::tempdir().expect("tempdir");
    let first = external_certs(&[SERVICE_HOST]);
    write_certs(dir.path(), &first);
    let mut config = config();
    config.cert_dir = Some(dir.path().to_owned());
    let running = Running::start(&client, WebhookServer::new(config)).await.expect("starts");
    running.wait_ready().await;
    assert_eq!(running.handle.ca_pem, first.0);
    let (_, _, leaf) =
        https_get(running.handle.addr, SERVICE_HOST, &first.0, "/healthz").await.expect("get");
    assert_eq!(leaf, pem_der(&first.1));
    // No Secret is written in this mode.
    let secrets = Api::<Secret>::namespaced(client.clone(), NS);
    assert!(secrets.get_opt("kruise-webhook-certs").await.expect("get").is_none());

    let second = external_certs(&[SERVICE_HOST]);
    let mut trust = running.handle.trust_updates();
    write_certs(dir.path(), &second);
    tokio::time::timeout(WAIT, trust.wait_for(|t| t.starts_with(&second.0)))
        .await
        .expect("the new CA is picked up")
        .expect("running");
    let deadline = Instant::now() + WAIT;
    loop {
        let (_, _, leaf) = https_get(running.handle.addr, SERVICE_HOST, &second.0, "/healthz")
            .await
            .unwrap_or_default();
        if leaf == pem_der(&second.1) {
            break;
        }
        assert!(Instant::now() < deadline, "the new certificate is never served");
        sleep(Duration::from_millis(20)).await;
    }
    running.stop().await;
}

#[tokio::test]
async fn a_new_ca_is_trusted_before_it_is_served() {
    let (_server, client) = setup(Config::default().with_kruise_crds()).await;
    let mut config = config().with_host("127.0.0.1");
    config.configure_crds = true;
    let names = config.server_names();
    let running = Running::start(&client, WebhookServer::new(config)).await.expect("starts");
    let old_ca = running.handle.ca_pem.clone();
    round_trip(&client, "before").await;
    let done = Arc::new(AtomicBool::new(false));
    let api = tokio::spawn({
        let (done, client) = (done.clone(), client.clone());
        async move {
            let mut traffic = Traffic::default();
            while !done.load(Ordering::SeqCst) {
                traffic.requests += 1;
                if let Err(e) = cloneset_api(&client, "v1alpha1").get("before").await {
                    traffic.failures.push(e.to_string());
                }
            }
            traffic
        }
    });

    // Another replica (or an operator) replaced the certificates with a new CA.
    let names: Vec<&str> = names.iter().map(String::as_str).collect();
    let (ca, cert, key, ca_key) = external_certs_with_ca_key(&names);
    let secrets = Api::<Secret>::namespaced(client.clone(), NS);
    let mut stored = secrets.get("kruise-webhook-certs").await.expect("secret");
    let data = stored.data.get_or_insert_default();
    for (k, v) in [
        ("ca-cert.pem", &ca),
        ("ca-key.pem", &ca_key),
        ("cert.pem", &cert),
        ("key.pem", &key),
        ("tls.crt", &cert),
        ("tls.key", &key),
    ] {
        data.insert(k.to_owned(), k8s_openapi::ByteString(v.as_bytes().to_vec()));
    }
    secrets
        .replace("kruise-webhook-certs", &PostParams::default(), &stored)
        .await
        .expect("replaced");

    let mut serving = running.handle.serving_updates();
    tokio::time::timeout(WAIT, serving.changed()).await.expect("swapped").expect("running");
    // By the time the new certificate is served, the bundle holds both CAs, new first.
    let trust = running.handle.trust_bundle();
    assert_eq!(trust, format!("{ca}{old_ca}"));
    let bundle = base64::engine::general_purpose::STANDARD.encode(&trust);
    assert_eq!(conversion_client_config(&client).await["caBundle"], bundle);
    let err = https_get(running.handle.addr, "127.0.0.1", &old_ca, "/healthz")
        .await
        .expect_err("the old CA alone does not verify the new certificate");
    assert!(err.starts_with("TLS"), "{err}");
    https_get(running.handle.addr, "127.0.0.1", &trust, "/healthz").await.expect("the bundle does");
    round_trip(&client, "after").await;
    done.store(true, Ordering::SeqCst);
    let api = api.await.expect("api");
    assert!(api.requests > 0);
    assert!(api.failures.is_empty(), "{:?}", api.failures);
    running.stop().await;
}

#[tokio::test]
async fn a_panicking_handler_does_not_stop_the_server() {
    let (_server, client) = setup(Config::default()).await;
    let boom = axum::Router::new().route(
        "/boom",
        axum::routing::get(|| async {
            if std::hint::black_box(true) {
                panic!("admission handler bug");
            }
            "unreachable"
        }),
    );
    let running =
        Running::start(&client, WebhookServer::new(config()).routes(boom)).await.expect("starts");
    let (addr, ca) = (running.handle.addr, running.handle.ca_pem.clone());
    for _ in 0..3 {
        let (status, _, _) = https_get(addr, SERVICE_HOST, &ca, "/boom").await.expect("answers");
        assert_eq!(status, 500);
        let (status, body, _) =
            https_get(addr, SERVICE_HOST, &ca, "/healthz").await.expect("answers");
        assert_eq!((status, body.as_str()), (200, "ok"));
    }
    running.stop().await;
}
