//! The probe and metrics HTTP server.
//!
//! Routes, shaped like controller-runtime's (and so Kubernetes') health endpoints:
//! - `GET /healthz` (and `/healthz/ping`): `200 ok` while the process serves.
//! - `GET /readyz`: `200 ok` when every readiness check passes, else `500` with one line per
//!   check (`[+]name ok`, `[-]name failed: not ready`) and `readyz check failed`.
//!   `?verbose` lists the checks on success too; `?exclude=name` skips a check.
//! - `GET /readyz/{name}`: one check; `404` for an unknown name.
//! - `GET /metrics`: [`Metrics::encode`] as OpenMetrics text.
//!
//! Upstream serves metrics on `--metrics-addr` (default `:8080`) and probes on
//! `--health-probe-addr` (default `:8000`). Run [`serve_router`] once per listener with
//! [`metrics_router`] and [`health_router`], or [`serve`] with the merged [`router`] when both
//! addresses are the same.

use std::future::Future;
use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::sync::{Arc, Mutex, MutexGuard};

use axum::Router;
use axum::extract::Path;
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use http::{StatusCode, Uri, header};

use crate::metrics::{self, Metrics};

/// Upstream's default `--metrics-addr`.
pub const DEFAULT_METRICS_ADDR: &str = ":8080";
/// Upstream's default `--health-probe-addr`.
pub const DEFAULT_HEALTH_PROBE_ADDR: &str = ":8000";

const TEXT_PLAIN: &str = "text/plain; charset=utf-8";

/// The liveness check `/healthz` reports; it passes while the server answers.
const PING_CHECK: &str = "ping";

/// Errors of the probe and metrics server.
#[non_exhaustive]
#[derive(Debug, thiserror::Error)]
pub enum HealthError {
    /// The listening socket could not be bound.
    #[error("cannot listen on {addr}: {source}")]
    Bind {
        /// The address that was requested.
        addr: SocketAddr,
        /// The operating system's error.
        #[source]
        source: std::io::Error,
    },
    /// The server failed while serving.
    #[error("HTTP server failed: {0}")]
    Serve(#[source] std::io::Error),
    /// An address flag could not be parsed.
    #[error("invalid listen address {addr:?}: expected \":port\", \"host:port\" or \"0\"")]
    InvalidAddr {
        /// The text that was given.
        addr: String,
    },
}

/// Named readiness checks, shared by clones.
///
/// With no check registered the process is ready.
#[derive(Clone, Debug, Default)]
pub struct Health {
    checks: Arc<Mutex<Vec<(String, bool)>>>,
}

impl Health {
    /// Creates a set with no checks.
    pub fn new() -> Self {
        Self::default()
    }

    /// Registers the check `check` (e.g. `informers-synced`, `webhook-certs`) or updates its
    /// state. Checks keep their registration order in reports.
    pub fn set_ready(&self, check: &str, ready: bool) {
        let mut checks = self.lock();
        match checks.iter_mut().find(|(name, _)| name == check) {
            Some((_, state)) => *state = ready,
            None => checks.push((check.to_owned(), ready)),
        }
    }

    /// Whether every registered check passes (true with none registered).
    pub fn is_ready(&self) -> bool {
        self.lock().iter().all(|(_, ready)| *ready)
    }

    /// Every check and its state, in registration order.
    pub fn report(&self) -> Vec<(String, bool)> {
        self.lock().clone()
    }

    fn lock(&self) -> MutexGuard<'_, Vec<(String, bool)>> {
        // The vector is valid after any panic of another holder (each update is one write).
        self.checks.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

/// Parses an upstream-style listen address: `":8080"` (every interface), `"host:port"` with an
/// IP or `localhost`, or `"0"`, which disables the server (`Ok(None)`).
pub fn parse_listen_addr(addr: &str) -> Result<Option<SocketAddr>, HealthError> {
    let invalid = || HealthError::InvalidAddr { addr: addr.to_owned() };
    if addr == "0" {
        return Ok(None);
    }
    if let Some(port) = addr.strip_prefix(':') {
        let port = port.parse::<u16>().map_err(|_| invalid())?;
        return Ok(Some(SocketAddr::new(IpAddr::V4(Ipv4Addr::UNSPECIFIED), port)));
    }
    if let Some(port) = addr.strip_prefix("localhost:") {
        let port = port.parse::<u16>().map_err(|_| invalid())?;
        return Ok(Some(SocketAddr::new(IpAddr::V4(Ipv4Addr::LOCALHOST), port)));
    }
    addr.parse::<SocketAddr>().map(Some).map_err(|_| invalid())
}

/// Binds a listener for [`serve`] or [`serve_router`]; port 0 picks a free port.
pub async fn bind(addr: SocketAddr) -> Result<tokio::net::TcpListener, HealthError> {
    tokio::net::TcpListener::bind(addr).await.map_err(|source| HealthError::Bind { addr, source })
}

/// Serves [`router`] (probes, and `/metrics` when `metrics` is given) on `listener` until
/// `shutdown` completes, then finishes in-flight requests and returns.
pub async fn serve(
    listener: tokio::net::TcpListener,
    health: Health,
    metrics: Option<Metrics>,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> Result<(), HealthError> {
    serve_router(listener, router(health, metrics), shutdown).await
}

/// Serves any `app` on `listener` until `shutdown` completes, then finishes in-flight requests
/// and returns; use it to run [`metrics_router`] and [`health_router`] on separate addresses.
pub async fn serve_router(
    listener: tokio::net::TcpListener,
    app: Router,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> Result<(), HealthError> {
    axum::serve(listener, app).with_graceful_shutdown(shutdown).await.map_err(HealthError::Serve)
}

/// `/healthz`, `/readyz` and `/metrics` (the latter only when `metrics` is given) on one router.
pub fn router(health: Health, metrics: Option<Metrics>) -> Router {
    let app = health_router(health);
    match metrics {
        Some(metrics) => app.merge(metrics_router(metrics)),
        None => app,
    }
}

/// `GET /metrics` only.
pub fn metrics_router(metrics: Metrics) -> Router {
    Router::new().route(
        "/metrics",
        get(move || {
            let body = metrics.encode();
            async move { ([(header::CONTENT_TYPE, metrics::CONTENT_TYPE)], body) }
        }),
    )
}

/// `GET /healthz`, `/healthz/ping`, `/readyz` and `/readyz/{name}`.
pub fn health_router(health: Health) -> Router {
    let ready = health.clone();
    let one = health;
    Router::new()
        .route(
            "/healthz",
            get(|uri: Uri| async move {
                let checks = [(PING_CHECK.to_owned(), true)];
                status_response("healthz", &checks, &QueryFlags::parse(&uri))
            }),
        )
        .route(
            "/healthz/{name}",
            get(|Path(name): Path<String>| async move {
                single_check_response(&[(PING_CHECK.to_owned(), true)], &name)
            }),
        )
        .route(
            "/readyz",
            get(move |uri: Uri| {
                let checks = ready.report();
                async move { status_response("readyz", &checks, &QueryFlags::parse(&uri)) }
            }),
        )
        .route(
            "/readyz/{name}",
            get(move |Path(name): Path<String>| {
                let checks = one.report();
                async move { single_check_response(&checks, &name) }
            }),
        )
}

/// The `verbose` and `exclude` query parameters of `/healthz` and `/readyz`.
#[derive(Debug, Default)]
struct QueryFlags {
    verbose: bool,
    exclude: Vec<String>,
}

impl QueryFlags {
    fn parse(uri: &Uri) -> Self {
        let mut flags = Self::default();
        for pair in uri.query().unwrap_or_default().split('&').filter(|p| !p.is_empty()) {
            let (key, value) = pair.split_once('=').unwrap_or((pair, ""));
            match key {
                // Kubernetes treats a present `verbose` as on, whatever its value.
                "verbose" => flags.verbose = true,
                "exclude" if !value.is_empty() => flags.exclude.push(value.to_owned()),
                _ => {}
            }
        }
        flags
    }
}

fn text(status: StatusCode, body: String) -> Response {
    (
        status,
        [(header::CONTENT_TYPE, TEXT_PLAIN), (header::X_CONTENT_TYPE_OPTIONS, "nosniff")],
        body,
    )
        .into_response()
}

/// The aggregate endpoint: terse `ok` on success, one line per check when failing or verbose.
fn status_response(endpoint: &str, checks: &[(String, bool)], flags: &QueryFlags) -> Response {
    let excluded = |name: &str| flags.exclude.iter().any(|e| e == name);
    let failed = checks.iter().any(|(name, ready)| !ready && !excluded(name));
    if !failed && !flags.verbose {
        return text(StatusCode::OK, "ok".to_owned());
    }
    let mut body = String::new();
    for (name, ready) in checks {
        let line = if excluded(name) {
            format!("[+]{name} excluded: ok\n")
        } else if *ready {
            format!("[+]{name} ok\n")
        } else {
            format!("[-]{name} failed: not ready\n")
        };
        body.push_str(&line);
    }
    for name in flags.exclude.iter().filter(|e| !checks.iter().any(|(n, _)| n == *e)) {
        body.push_str(&format!(
            "warn: some health checks cannot be excluded: no matches for \"{name}\"\n"
        ));
    }
    if failed {
        body.push_str(&format!("{endpoint} check failed\n"));
        text(StatusCode::INTERNAL_SERVER_ERROR, body)
    } else {
        body.push_str(&format!("{endpoint} check passed\n"));
        text(StatusCode::OK, body)
    }
}

fn single_check_response(checks: &[(String, bool)], name: &str) -> Response {
    match checks.iter().find(|(n, _)| n == name) {
        Some((_, true)) => text(StatusCode::OK, "ok".to_owned()),
        Some((_, false)) => {
            text(StatusCode::INTERNAL_SERVER_ERROR, "internal server error: not ready\n".to_owned())
        }
        None => text(StatusCode::NOT_FOUND, "404 page not found\n".to_owned()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn no_checks_means_ready() {
        let h = Health::new();
        assert!(h.is_ready());
        assert!(h.report().is_empty());
    }

    #[test]
    fn all_checks_must_pass_and_keep_registration_order() {
        let h = Health::new();
        let shared = h.clone();
        h.set_ready("informers-synced", false);
        h.set_ready("webhook-certs", true);
        assert!(!h.is_ready());
        shared.set_ready("informers-synced", true);
        assert!(h.is_ready());
        h.set_ready("webhook-certs", false);
        assert!(!shared.is_ready());
        assert_eq!(
            h.report(),
            [("informers-synced".to_owned(), true), ("webhook-certs".to_owned(), false)]
        );
    }

    #[test]
    fn parses_upstream_listen_addresses() {
        assert_eq!(
            parse_listen_addr(DEFAULT_METRICS_ADDR).ok().flatten(),
            Some(SocketAddr::from(([0, 0, 0, 0], 8080)))
        );
        assert_eq!(
            parse_listen_addr(DEFAULT_HEALTH_PROBE_ADDR).ok().flatten(),
            Some(SocketAddr::from(([0, 0, 0, 0], 8000)))
        );
        assert_eq!(
            parse_listen_addr("127.0.0.1:9000").ok().flatten(),
            Some(SocketAddr::from(([127, 0, 0, 1], 9000)))
        );
        assert_eq!(
            parse_listen_addr("localhost:9000").ok().flatten(),
            Some(SocketAddr::from(([127, 0, 0, 1], 9000)))
        );
        assert_eq!(
            parse_listen_addr("[::1]:9000").ok().flatten(),
            Some("[::1]:9000".parse().unwrap_or(SocketAddr::from(([0; 4], 0))))
        );
        assert!(matches!(parse_listen_addr("0"), Ok(None)));
        for bad in ["", ":", ":http", ":70000", "8080", "example.com:80"] {
            assert!(
                matches!(parse_listen_addr(bad), Err(HealthError::InvalidAddr { .. })),
                "{bad:?} accepted"
            );
        }
    }

    #[test]
    fn query_flags() {
        let uri: Uri = "/readyz?verbose&exclude=a&exclude=b&other=1".parse().unwrap_or_default();
        let flags = QueryFlags::parse(&uri);
        assert!(flags.verbose);
        assert_eq!(flags.exclude, ["a", "b"]);
        let plain = QueryFlags::parse(&"/readyz".parse().unwrap_or_default());
        assert!(!plain.verbose);
        assert!(plain.exclude.is_empty());
    }
}
