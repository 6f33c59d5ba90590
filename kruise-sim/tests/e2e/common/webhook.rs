//! An HTTPS webhook server for tests: its own CA (rcgen), a serving certificate for the given
//! names, and an `answer` function from (path, review) to the response body. Every review is
//! kept, with its path, for the test to inspect.

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper_util::rt::TokioIo;
use serde_json::Value;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};

/// Reviews received, with their paths, in order.
pub type Seen = Arc<Mutex<Vec<(String, Value)>>>;

/// A running webhook server; stops when dropped.
pub struct HookServer {
    /// Where it listens (127.0.0.1).
    pub addr: SocketAddr,
    /// The CA that signed its certificate, PEM (for `caBundle`).
    pub ca_pem: String,
    /// Every review received.
    pub seen: Seen,
    _stop: tokio::sync::oneshot::Sender<()>,
}

impl HookServer {
    /// The `request` parts of the reviews received on `path`.
    pub fn requests(&self, path: &str) -> Vec<Value> {
        let seen = self.seen.lock().expect("seen");
        seen.iter().filter(|(p, _)| p == path).map(|(_, r)| r["request"].clone()).collect()
    }
}

/// Starts a server whose certificate names `hosts` (IP addresses or DNS names).
pub fn start(hosts: &[&str], answer: fn(&str, &Value) -> Value) -> HookServer {
    use rcgen::{BasicConstraints, CertificateParams, IsCa, Issuer, KeyPair};
    let ca_key = KeyPair::generate().expect("ca key");
    let mut ca_params = CertificateParams::new(Vec::<String>::new()).expect("ca params");
    ca_params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    let ca_cert = ca_params.self_signed(&ca_key).expect("ca cert");
    let issuer = Issuer::new(ca_params, ca_key);
    let key = KeyPair::generate().expect("key");
    let names: Vec<String> = hosts.iter().map(|h| h.to_string()).collect();
    let cert =
        CertificateParams::new(names).expect("params").signed_by(&key, &issuer).expect("cert");
    let pk = rustls::pki_types::PrivateKeyDer::Pkcs8(key.serialize_der().into());
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let tls = rustls::ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .expect("versions")
        .with_no_client_auth()
        .with_single_cert(vec![cert.der().clone()], pk)
        .expect("server config");
    let acceptor = tokio_rustls::TlsAcceptor::from(Arc::new(tls));
    let seen: Seen = Arc::default();
    let seen2 = seen.clone();
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
                let seen = seen2.clone();
                tokio::spawn(async move {
                    let Ok(s) = acceptor.accept(s).await else { return };
                    let svc = service_fn(move |req: http::Request<hyper::body::Incoming>| {
                        let seen = seen.clone();
                        async move {
                            let path = req.uri().path().to_string();
                            let body = req.into_body().collect().await.map(|b| b.to_bytes());
                            let review: Value = body
                                .ok()
                                .and_then(|b| serde_json::from_slice(&b).ok())
                                .unwrap_or(Value::Null);
                            seen.lock().expect("seen").push((path.clone(), review.clone()));
                            let out = answer(&path, &review);
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
    HookServer { addr, ca_pem: ca_cert.pem(), seen, _stop: stop }
}
