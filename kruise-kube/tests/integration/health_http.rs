//! The probe and metrics server over real TCP with a hand-written HTTP/1.1 client.

use std::net::SocketAddr;
use std::time::Duration;

use kruise_kube::health::{self, Health, HealthError};
use kruise_kube::metrics::{Metrics, ReconcileResult};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::sync::oneshot;
use tokio::task::JoinHandle;

type TestResult = Result<(), Box<dyn std::error::Error>>;

/// A guard against hangs only; requests on loopback finish far sooner.
const DEADLINE: Duration = Duration::from_secs(20);

struct Reply {
    status: u16,
    headers: Vec<(String, String)>,
    body: String,
}

impl Reply {
    fn header(&self, name: &str) -> Option<&str> {
        self.headers.iter().find(|(n, _)| n.eq_ignore_ascii_case(name)).map(|(_, v)| v.as_str())
    }
}

async fn request(addr: SocketAddr, path: &str) -> Result<Reply, Box<dyn std::error::Error>> {
    let exchange = async {
        let mut stream = tokio::net::TcpStream::connect(addr).await?;
        let req = format!("GET {path} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n");
        stream.write_all(req.as_bytes()).await?;
        let mut raw = Vec::new();
        stream.read_to_end(&mut raw).await?;
        Ok::<_, std::io::Error>(raw)
    };
    let raw = tokio::time::timeout(DEADLINE, exchange).await??;
    let raw = String::from_utf8(raw)?;
    let (head, body) = raw.split_once("\r\n\r\n").ok_or("no end of headers")?;
    let mut lines = head.split("\r\n");
    let status_line = lines.next().ok_or("no status line")?;
    let status = status_line.split(' ').nth(1).ok_or("no status code")?.parse()?;
    let headers = lines
        .filter_map(|l| l.split_once(':'))
        .map(|(n, v)| (n.trim().to_owned(), v.trim().to_owned()))
        .collect::<Vec<_>>();
    let reply = Reply { status, headers, body: body.to_owned() };
    if let Some(len) = reply.header("content-length") {
        assert_eq!(len.parse::<usize>()?, reply.body.len(), "truncated body");
    }
    Ok(reply)
}

struct Server {
    addr: SocketAddr,
    stop: Option<oneshot::Sender<()>>,
    task: JoinHandle<Result<(), HealthError>>,
}

impl Server {
    async fn stop(mut self) -> Result<(), Box<dyn std::error::Error>> {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        tokio::time::timeout(DEADLINE, self.task).await???;
        Ok(())
    }
}

async fn start(health: Health, metrics: Option<Metrics>) -> Result<Server, HealthError> {
    let listener = health::bind(SocketAddr::from(([127, 0, 0, 1], 0))).await?;
    let addr = listener.local_addr().map_err(HealthError::Serve)?;
    let (tx, rx) = oneshot::channel::<()>();
    let task = tokio::spawn(health::serve(listener, health, metrics, async move {
        let _ = rx.await;
    }));
    Ok(Server { addr, stop: Some(tx), task })
}

async fn start_router(app: axum::Router) -> Result<Server, HealthError> {
    let listener = health::bind(SocketAddr::from(([127, 0, 0, 1], 0))).await?;
    let addr = listener.local_addr().map_err(HealthError::Serve)?;
    let (tx, rx) = oneshot::channel::<()>();
    let task = tokio::spawn(health::serve_router(listener, app, async move {
        let _ = rx.await;
    }));
    Ok(Server { addr, stop: Some(tx), task })
}

#[tokio::test]
async fn healthz_is_ok_while_serving() -> TestResult {
    let server = start(Health::new(), None).await?;
    let reply = request(server.addr, "/healthz").await?;
    assert_eq!(reply.status, 200);
    assert_eq!(reply.body, "ok");
    assert_eq!(reply.header("content-type"), Some("text/plain; charset=utf-8"));

    let verbose = request(server.addr, "/healthz?verbose").await?;
    assert_eq!(verbose.status, 200);
    assert_eq!(verbose.body, "[+]ping ok\nhealthz check passed\n");

    let ping = request(server.addr, "/healthz/ping").await?;
    assert_eq!((ping.status, ping.body.as_str()), (200, "ok"));
    server.stop().await
}

#[tokio::test]
async fn readyz_reports_failed_checks_until_ready() -> TestResult {
    let health = Health::new();
    let server = start(health.clone(), None).await?;

    // No checks registered yet: ready.
    let reply = request(server.addr, "/readyz").await?;
    assert_eq!((reply.status, reply.body.as_str()), (200, "ok"));

    health.set_ready("informers-synced", false);
    health.set_ready("webhook-certs", true);
    let reply = request(server.addr, "/readyz").await?;
    assert_eq!(reply.status, 500);
    assert_eq!(
        reply.body,
        "[-]informers-synced failed: not ready\n[+]webhook-certs ok\nreadyz check failed\n"
    );

    health.set_ready("informers-synced", true);
    let reply = request(server.addr, "/readyz").await?;
    assert_eq!((reply.status, reply.body.as_str()), (200, "ok"));

    let verbose = request(server.addr, "/readyz?verbose").await?;
    assert_eq!(verbose.status, 200);
    assert_eq!(verbose.body, "[+]informers-synced ok\n[+]webhook-certs ok\nreadyz check passed\n");
    server.stop().await
}

#[tokio::test]
async fn readyz_single_checks_and_exclusions() -> TestResult {
    let health = Health::new();
    health.set_ready("informers-synced", true);
    health.set_ready("webhook-certs", false);
    let server = start(health.clone(), None).await?;

    let ok = request(server.addr, "/readyz/informers-synced").await?;
    assert_eq!((ok.status, ok.body.as_str()), (200, "ok"));
    let failing = request(server.addr, "/readyz/webhook-certs").await?;
    assert_eq!(failing.status, 500);
    assert!(failing.body.contains("not ready"), "{}", failing.body);
    let unknown = request(server.addr, "/readyz/nope").await?;
    assert_eq!(unknown.status, 404);

    let excluded = request(server.addr, "/readyz?exclude=webhook-certs").await?;
    assert_eq!((excluded.status, excluded.body.as_str()), (200, "ok"));
    let excluded = request(server.addr, "/readyz?verbose&exclude=webhook-certs").await?;
    assert_eq!(excluded.status, 200);
    assert_eq!(
        excluded.body,
        "[+]informers-synced ok\n[+]webhook-certs excluded: ok\nreadyz check passed\n"
    );
    server.stop().await
}

#[tokio::test]
async fn metrics_endpoint_serves_encoded_metrics() -> TestResult {
    let metrics = Metrics::new();
    metrics.reconcile("cloneset", ReconcileResult::Error, Duration::from_millis(30));
    metrics.set_leader(true);
    let server = start(Health::new(), Some(metrics.clone())).await?;

    let reply = request(server.addr, "/metrics").await?;
    assert_eq!(reply.status, 200);
    let content_type = reply.header("content-type").unwrap_or_default();
    assert!(content_type.starts_with("application/openmetrics-text"), "{content_type}");
    assert!(reply.body.contains(
        "controller_runtime_reconcile_total{controller=\"cloneset\",result=\"error\"} 1\n"
    ));
    assert!(
        reply
            .body
            .contains("controller_runtime_reconcile_errors_total{controller=\"cloneset\"} 1\n")
    );
    assert!(reply.body.contains("kruise_manager_is_leader 1\n"));
    assert!(reply.body.ends_with("# EOF\n"));

    // Served fresh on every scrape.
    metrics.set_leader(false);
    let reply = request(server.addr, "/metrics").await?;
    assert!(reply.body.contains("kruise_manager_is_leader 0\n"), "{}", reply.body);
    server.stop().await
}

#[tokio::test]
async fn unknown_paths_and_missing_metrics_are_404() -> TestResult {
    let server = start(Health::new(), None).await?;
    assert_eq!(request(server.addr, "/metrics").await?.status, 404);
    assert_eq!(request(server.addr, "/nope").await?.status, 404);
    assert_eq!(request(server.addr, "/").await?.status, 404);
    server.stop().await
}

#[tokio::test]
async fn metrics_and_probes_on_separate_listeners() -> TestResult {
    let health = Health::new();
    health.set_ready("informers-synced", false);
    let metrics = Metrics::new();
    metrics.set_queue_depth("cloneset", 4);
    let metrics_server = start_router(health::metrics_router(metrics)).await?;
    let probe_server = start_router(health::health_router(health)).await?;
    assert_ne!(metrics_server.addr, probe_server.addr);

    let scrape = request(metrics_server.addr, "/metrics").await?;
    assert_eq!(scrape.status, 200);
    assert!(scrape.body.contains("workqueue_depth{name=\"cloneset\"} 4\n"));
    assert_eq!(request(metrics_server.addr, "/readyz").await?.status, 404);
    assert_eq!(request(metrics_server.addr, "/healthz").await?.status, 404);

    assert_eq!(request(probe_server.addr, "/readyz").await?.status, 500);
    assert_eq!(request(probe_server.addr, "/healthz").await?.status, 200);
    assert_eq!(request(probe_server.addr, "/metrics").await?.status, 404);

    metrics_server.stop().await?;
    probe_server.stop().await
}

#[tokio::test]
async fn shutdown_future_stops_the_server() -> TestResult {
    let server = start(Health::new(), None).await?;
    let addr = server.addr;
    assert_eq!(request(addr, "/healthz").await?.status, 200);
    server.stop().await?;
    // The listener is closed with the server.
    assert!(tokio::net::TcpStream::connect(addr).await.is_err());
    Ok(())
}

#[tokio::test]
async fn bind_reports_address_in_use() -> TestResult {
    let first = health::bind(SocketAddr::from(([127, 0, 0, 1], 0))).await?;
    let addr = first.local_addr()?;
    match health::bind(addr).await {
        Err(HealthError::Bind { addr: failed, .. }) => assert_eq!(failed, addr),
        other => panic!("expected a bind error, got {other:?}"),
    }
    Ok(())
}
