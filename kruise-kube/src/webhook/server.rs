//! The HTTPS side of the webhook: a TLS accept loop whose certificate can be swapped at
//! runtime, hyper serving an axum [`Router`] per connection, the per-request guard (timeout
//! and panic isolation), and the self-probe readiness waits for.

use std::net::SocketAddr;
use std::panic::AssertUnwindSafe;
use std::sync::{Arc, RwLock};
use std::time::Duration;

use axum::Router;
use axum::body::Bytes;
use axum::extract::{DefaultBodyLimit, Request, State};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use futures::FutureExt as _;
use http::StatusCode;
use hyper_util::rt::{TokioIo, TokioTimer};
use hyper_util::service::TowerToHyperService;
use rustls::server::{ClientHello, ResolvesServerCert};
use rustls::sign::CertifiedKey;
use rustls_pki_types::ServerName;
use tokio::sync::watch;

use super::certs;
use super::conversion;

/// The path of the webhook server's own liveness answer.
pub const HEALTHZ_PATH: &str = "/healthz";

/// Largest request body accepted (a ConversionReview of a long list is large).
const MAX_BODY: usize = 64 * 1024 * 1024;
/// Pause after a failed `accept` (e.g. out of file descriptors) before trying again.
const ACCEPT_BACKOFF: Duration = Duration::from_millis(100);

/// The webhook's routes: `GET /healthz`, `POST /convert` and `extra` (admission handlers),
/// each request bounded by `request_timeout` (answered `504` when it runs out) and a
/// panicking handler answered `500` while the server goes on serving.
pub fn router(extra: Router, request_timeout: Duration) -> Router {
    Router::new()
        .route(HEALTHZ_PATH, get(|| async { "ok" }))
        .route(conversion::CONVERT_PATH, post(conversion::handle))
        .merge(extra)
        .layer(DefaultBodyLimit::max(MAX_BODY))
        .layer(axum::middleware::from_fn_with_state(request_timeout, guard))
}

/// Bounds a request by the timeout and turns a handler panic into `500`.
async fn guard(State(timeout): State<Duration>, request: Request, next: Next) -> Response {
    let path = request.uri().path().to_owned();
    let run = AssertUnwindSafe(next.run(request)).catch_unwind();
    match tokio::time::timeout(timeout, run).await {
        Ok(Ok(response)) => response,
        Ok(Err(panic)) => {
            let what = panic
                .downcast_ref::<&str>()
                .map(|s| (*s).to_owned())
                .or_else(|| panic.downcast_ref::<String>().cloned())
                .unwrap_or_default();
            tracing::error!(%path, panic = %what, "a webhook handler panicked");
            (StatusCode::INTERNAL_SERVER_ERROR, format!("internal error serving {path}"))
                .into_response()
        }
        Err(_) => {
            tracing::warn!(%path, ?timeout, "a webhook request timed out");
            let message = format!("the request to {path} did not finish within {timeout:?}");
            (StatusCode::GATEWAY_TIMEOUT, message).into_response()
        }
    }
}

/// Serves the current certificate to every new handshake; [`SwapResolver::swap`] replaces it
/// without touching established connections.
#[derive(Debug)]
pub(crate) struct SwapResolver {
    current: RwLock<Arc<CertifiedKey>>,
}

impl SwapResolver {
    pub(crate) fn new(key: Arc<CertifiedKey>) -> Self {
        Self { current: RwLock::new(key) }
    }

    pub(crate) fn swap(&self, key: Arc<CertifiedKey>) {
        // The slot holds a whole Arc, valid after any panic of another holder.
        *self.current.write().unwrap_or_else(std::sync::PoisonError::into_inner) = key;
    }
}

impl ResolvesServerCert for SwapResolver {
    fn resolve(&self, _hello: ClientHello<'_>) -> Option<Arc<CertifiedKey>> {
        Some(self.current.read().unwrap_or_else(std::sync::PoisonError::into_inner).clone())
    }
}

/// The server's TLS settings: safe defaults of the ring provider, HTTP/1.1, certificates
/// from `resolver`.
pub(crate) fn tls_config(
    resolver: Arc<SwapResolver>,
) -> Result<rustls::ServerConfig, rustls::Error> {
    let mut config = rustls::ServerConfig::builder_with_provider(certs::provider())
        .with_safe_default_protocol_versions()?
        .with_no_client_auth()
        .with_cert_resolver(resolver);
    config.alpn_protocols = vec![b"http/1.1".to_vec()];
    Ok(config)
}

/// Accepts connections until `stop` turns true; each connection is served on its own task
/// (a failure there ends that connection only), then shut down gracefully on stop.
pub(crate) async fn serve(
    listener: tokio::net::TcpListener,
    acceptor: tokio_rustls::TlsAcceptor,
    app: Router,
    timeout: Duration,
    mut stop: watch::Receiver<bool>,
) {
    loop {
        let accepted = tokio::select! {
            accepted = listener.accept() => accepted,
            () = stopped(&mut stop) => return,
        };
        let (tcp, peer) = match accepted {
            Ok(accepted) => accepted,
            Err(e) => {
                tracing::warn!(error = %e, "webhook server: accept failed");
                tokio::time::sleep(ACCEPT_BACKOFF).await;
                continue;
            }
        };
        let (acceptor, app, stop) = (acceptor.clone(), app.clone(), stop.clone());
        tokio::spawn(serve_connection(tcp, peer, acceptor, app, timeout, stop));
    }
}

async fn serve_connection(
    tcp: tokio::net::TcpStream,
    peer: SocketAddr,
    acceptor: tokio_rustls::TlsAcceptor,
    app: Router,
    timeout: Duration,
    mut stop: watch::Receiver<bool>,
) {
    let tls = match tokio::time::timeout(timeout, acceptor.accept(tcp)).await {
        Ok(Ok(tls)) => tls,
        Ok(Err(e)) => {
            tracing::debug!(%peer, error = %e, "webhook server: TLS handshake failed");
            return;
        }
        Err(_) => {
            tracing::debug!(%peer, "webhook server: TLS handshake timed out");
            return;
        }
    };
    let mut builder = hyper::server::conn::http1::Builder::new();
    builder.timer(TokioTimer::new()).header_read_timeout(timeout);
    let connection = builder.serve_connection(TokioIo::new(tls), TowerToHyperService::new(app));
    let mut connection = std::pin::pin!(connection);
    let result = tokio::select! {
        result = connection.as_mut() => result,
        () = stopped(&mut stop) => {
            connection.as_mut().graceful_shutdown();
            match tokio::time::timeout(timeout, connection.as_mut()).await {
                Ok(result) => result,
                Err(_) => return,
            }
        }
    };
    if let Err(e) = result {
        tracing::debug!(%peer, error = %e, "webhook server: connection ended with an error");
    }
}

/// Sends `GET /healthz` to `addr` over TLS, trusting only `ca_pem` and expecting a
/// certificate for `server_name`; `Ok` when it answers `200`.
pub(crate) async fn probe(
    addr: SocketAddr,
    server_name: &str,
    ca_pem: &str,
    timeout: Duration,
) -> Result<(), String> {
    tokio::time::timeout(timeout, probe_once(addr, server_name, ca_pem))
        .await
        .map_err(|_| format!("no answer within {timeout:?}"))?
}

async fn probe_once(addr: SocketAddr, server_name: &str, ca_pem: &str) -> Result<(), String> {
    let mut roots = rustls::RootCertStore::empty();
    for ca in certs::certs(ca_pem)? {
        roots.add(ca).map_err(|e| format!("CA certificate: {e}"))?;
    }
    let mut config = rustls::ClientConfig::builder_with_provider(certs::provider())
        .with_safe_default_protocol_versions()
        .map_err(|e| e.to_string())?
        .with_root_certificates(roots)
        .with_no_client_auth();
    config.alpn_protocols = vec![b"http/1.1".to_vec()];
    let name = ServerName::try_from(server_name.to_owned()).map_err(|e| e.to_string())?;
    let tcp = tokio::net::TcpStream::connect(addr).await.map_err(|e| e.to_string())?;
    let tls = tokio_rustls::TlsConnector::from(Arc::new(config))
        .connect(name, tcp)
        .await
        .map_err(|e| format!("TLS: {e}"))?;
    let (mut sender, connection) = hyper::client::conn::http1::handshake(TokioIo::new(tls))
        .await
        .map_err(|e| e.to_string())?;
    let connection = tokio::spawn(connection);
    let request = http::Request::get(HEALTHZ_PATH)
        .header(http::header::HOST, server_name)
        .body(http_body_util::Empty::<Bytes>::new())
        .map_err(|e| e.to_string())?;
    let response = sender.send_request(request).await.map_err(|e| e.to_string());
    connection.abort();
    let status = response?.status();
    if status == StatusCode::OK { Ok(()) } else { Err(format!("answered {status}")) }
}

/// Completes once `stop` turns true (or its sender is gone).
pub(crate) async fn stopped(stop: &mut watch::Receiver<bool>) {
    // The returned guard is dropped here, so callers' futures stay `Send`.
    let _ = stop.wait_for(|stopped| *stopped).await;
}
