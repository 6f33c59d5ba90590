//! Building the kube client: from a kubeconfig file or the in-cluster config, with
//! client-go's request rate limit (`--rest-config-qps`, `--rest-config-burst`).

use std::future::Future;
use std::path::{Path, PathBuf};
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use std::time::Duration;

use kube::client::ClientBuilder;
use kube::config::{KubeConfigOptions, Kubeconfig};
use tokio::time::Instant;

/// Why a client could not be built.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ClientError {
    /// The kubeconfig file could not be read or parsed.
    #[error("--kubeconfig {path}: {source}")]
    Kubeconfig {
        /// The file.
        path: PathBuf,
        /// What went wrong.
        #[source]
        source: kube::config::KubeconfigError,
    },
    /// Neither a kubeconfig nor the in-cluster environment was usable.
    #[error("no kubeconfig given and no usable cluster config found: {0}")]
    Infer(#[from] kube::config::InferConfigError),
    /// The HTTP stack could not be built from the config.
    #[error("building the client: {0}")]
    Build(#[from] kube::Error),
    /// The kubeconfig's `tls-server-name` is not a valid server name.
    #[error("kubeconfig tls-server-name {name:?}: {reason}")]
    TlsServerName {
        /// The name.
        name: String,
        /// What is wrong.
        reason: String,
    },
    /// `--rest-config-qps` or `--rest-config-burst` is out of range.
    #[error("{flag}: {reason}")]
    Flag {
        /// The flag.
        flag: &'static str,
        /// What is wrong.
        reason: String,
    },
}

/// How to reach the API server.
#[derive(Clone, Debug)]
pub struct ClientOptions {
    /// A kubeconfig file; without one the usual inference runs (`KUBECONFIG`, `~/.kube/config`,
    /// then the in-cluster service account).
    pub kubeconfig: Option<PathBuf>,
    /// Sustained requests per second (`--rest-config-qps`, upstream default 30). Zero or less
    /// disables the limit.
    pub qps: f32,
    /// Requests allowed in a burst (`--rest-config-burst`, upstream default 50).
    pub burst: u32,
}

impl Default for ClientOptions {
    fn default() -> Self {
        Self { kubeconfig: None, qps: 30.0, burst: 50 }
    }
}

/// Builds a client as [`ClientOptions`] say.
pub async fn build_client(options: &ClientOptions) -> Result<kube::Client, ClientError> {
    let config = match &options.kubeconfig {
        Some(path) => load_kubeconfig(path).await?,
        None => kube::Config::infer().await?,
    };
    client_from_config(config, options.qps, options.burst)
}

async fn load_kubeconfig(path: &Path) -> Result<kube::Config, ClientError> {
    let wrap = |source| ClientError::Kubeconfig { path: path.to_owned(), source };
    let kubeconfig = Kubeconfig::read_from(path).map_err(wrap)?;
    kube::Config::from_custom_kubeconfig(kubeconfig, &KubeConfigOptions::default())
        .await
        .map_err(wrap)
}

/// Builds a client from `config` with a token-bucket limit of `qps` and `burst`.
pub fn client_from_config(
    config: kube::Config,
    qps: f32,
    burst: u32,
) -> Result<kube::Client, ClientError> {
    if !qps.is_finite() {
        return Err(ClientError::Flag {
            flag: "--rest-config-qps",
            reason: format!("{qps} is not a number"),
        });
    }
    if qps > 0.0 && burst == 0 {
        return Err(ClientError::Flag {
            flag: "--rest-config-burst",
            reason: "must be at least 1 when --rest-config-qps is positive".into(),
        });
    }
    let builder = match config.proxy_url {
        // Through a proxy: kube's own stack, which knows proxies (and speaks HTTP/1.1).
        Some(_) => ClientBuilder::try_from(config)?,
        None => multiplexing_builder(&config)?,
    };
    Ok(builder.with_layer(&RateLimitLayer::new(qps, burst)).build())
}

/// The HTTP service under a [`kube::Client`], as kube's own builder types it.
type HttpService = tower::util::BoxService<
    http::Request<kube::client::Body>,
    http::Response<Box<kube::client::DynBody>>,
    tower::BoxError,
>;

/// kube's HTTP stack (its TLS config, base URI, authentication and extra headers), on
/// connections that speak HTTP/2 when the server offers it, as client-go's do. kube's own
/// stack offers only HTTP/1.1, where every request in flight needs a connection of its own:
/// a scale-out with hundreds of creations in flight would open hundreds of TLS connections.
/// Over HTTP/2 they share one, up to the server's stream limit (kube-apiserver: 100 by
/// default), and the rest wait for a stream; watches share another.
fn multiplexing_builder(config: &kube::Config) -> Result<ClientBuilder<HttpService>, ClientError> {
    use hyper_util::client::legacy::connect::HttpConnector;
    use kube::client::ConfigExt as _;
    use tower::ServiceExt as _;

    let mut http = HttpConnector::new();
    http.enforce_http(false);
    http.set_nodelay(true);
    http.set_connect_timeout(config.connect_timeout);
    let tls = config.rustls_client_config()?;
    let https = hyper_rustls::HttpsConnectorBuilder::new().with_tls_config(tls).https_or_http();
    let https = match &config.tls_server_name {
        Some(name) => {
            let name = rustls_pki_types::ServerName::try_from(name.clone()).map_err(|e| {
                ClientError::TlsServerName { name: name.clone(), reason: e.to_string() }
            })?;
            https.with_server_name_resolver(hyper_rustls::FixedServerNameResolver::new(name))
        }
        None => https,
    };
    let connector = https.enable_all_versions().wrap_connector(http);
    let pool = || -> hyper_util::client::legacy::Client<_, kube::client::Body> {
        hyper_util::client::legacy::Client::builder(hyper_util::rt::TokioExecutor::new())
            .build(connector.clone())
    };
    // Watches get connections of their own: a watch streaming a burst of events (a scale-out's
    // pods) shares neither its TCP window and TLS stream nor the server's per-connection stream
    // limit with the writes that caused them.
    let (writes, watches) = (pool(), pool());
    let client = tower::service_fn(move |request: http::Request<kube::client::Body>| {
        let pool = if is_watch(request.uri()) { &watches } else { &writes };
        pool.request(request)
    });
    let service = tower::ServiceBuilder::new()
        .layer(config.base_uri_layer())
        .option_layer(config.auth_layer()?)
        .layer(config.extra_headers_layer()?)
        .map_err(tower::BoxError::from)
        .service(client)
        .map_response(|response| {
            response.map(|body| {
                Box::new(http_body_util::BodyExt::map_err(body, tower::BoxError::from))
                    as Box<kube::client::DynBody>
            })
        })
        .boxed();
    Ok(ClientBuilder::new(service, config.default_namespace.clone()))
}

/// Whether `uri` asks for a watch: a `watch` parameter that Go's `strconv.ParseBool`, which
/// the API server uses, reads as true.
fn is_watch(uri: &http::Uri) -> bool {
    uri.query().is_some_and(|query| {
        query
            .split('&')
            .filter_map(|pair| pair.strip_prefix("watch="))
            .any(|value| matches!(value, "1" | "t" | "T" | "true" | "TRUE" | "True"))
    })
}

/// A token bucket: `burst` tokens, refilled at `qps` per second.
#[derive(Debug)]
struct Bucket {
    qps: f64,
    burst: f64,
    tokens: f64,
    last: Instant,
}

impl Bucket {
    /// Takes a token if one is there; otherwise says how long until one is.
    fn try_take(&mut self, now: Instant) -> Result<(), Duration> {
        let elapsed = now.saturating_duration_since(self.last).as_secs_f64();
        self.tokens = (self.tokens + elapsed * self.qps).min(self.burst);
        self.last = now;
        if self.tokens >= 1.0 {
            self.tokens -= 1.0;
            Ok(())
        } else {
            Err(Duration::from_secs_f64((1.0 - self.tokens) / self.qps))
        }
    }
}

/// A tower layer that admits requests at a sustained rate with bursts, as client-go's
/// token-bucket rate limiter does. Requests wait; none is refused.
#[derive(Clone, Debug)]
pub struct RateLimitLayer {
    bucket: Option<Arc<Mutex<Bucket>>>,
}

impl RateLimitLayer {
    /// A limit of `qps` requests per second with bursts of `burst`; `qps <= 0` admits
    /// everything at once.
    pub fn new(qps: f32, burst: u32) -> Self {
        let bucket = (qps > 0.0).then(|| {
            Arc::new(Mutex::new(Bucket {
                qps: f64::from(qps),
                burst: f64::from(burst.max(1)),
                tokens: f64::from(burst.max(1)),
                last: Instant::now(),
            }))
        });
        Self { bucket }
    }
}

impl<S> tower::Layer<S> for RateLimitLayer {
    type Service = RateLimit<S>;

    fn layer(&self, inner: S) -> Self::Service {
        RateLimit { inner, bucket: self.bucket.clone(), admitted: false, sleep: None }
    }
}

/// The service [`RateLimitLayer`] wraps around the client's HTTP stack.
pub struct RateLimit<S> {
    inner: S,
    bucket: Option<Arc<Mutex<Bucket>>>,
    /// A token has been taken for the next call.
    admitted: bool,
    sleep: Option<Pin<Box<tokio::time::Sleep>>>,
}

impl<S, R> tower::Service<R> for RateLimit<S>
where
    S: tower::Service<R>,
{
    type Response = S::Response;
    type Error = S::Error;
    type Future = S::Future;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        if let Some(bucket) = &self.bucket {
            while !self.admitted {
                if let Some(sleep) = self.sleep.as_mut() {
                    if sleep.as_mut().poll(cx).is_pending() {
                        return Poll::Pending;
                    }
                    self.sleep = None;
                }
                let taken =
                    bucket.lock().unwrap_or_else(|p| p.into_inner()).try_take(Instant::now());
                match taken {
                    Ok(()) => self.admitted = true,
                    Err(wait) => self.sleep = Some(Box::pin(tokio::time::sleep(wait))),
                }
            }
        }
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, request: R) -> Self::Future {
        self.admitted = false;
        self.inner.call(request)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn watches_are_told_apart_by_their_query() {
        let watch = |uri: &str| is_watch(&uri.parse().expect("uri"));
        assert!(watch("https://k/api/v1/pods?watch=true&resourceVersion=5"));
        assert!(watch("https://k/api/v1/pods?labelSelector=a&watch=1"));
        assert!(!watch("https://k/api/v1/pods?watch=false"));
        assert!(!watch("https://k/api/v1/pods?labelSelector=watch%3Dtrue"));
        assert!(!watch("https://k/api/v1/namespaces/default/pods"));
        assert!(!watch("https://k/api/v1/pods?allowWatchBookmarks=true"));
    }

    #[test]
    fn bucket_allows_burst_then_paces() {
        let start = Instant::now();
        let mut bucket = Bucket { qps: 10.0, burst: 3.0, tokens: 3.0, last: start };
        for _ in 0..3 {
            assert_eq!(bucket.try_take(start), Ok(()));
        }
        let wait = bucket.try_take(start).expect_err("bucket is empty");
        assert!((wait.as_secs_f64() - 0.1).abs() < 1e-9, "{wait:?}");
        assert_eq!(bucket.try_take(start + Duration::from_millis(100)), Ok(()));
        // Refill never exceeds the burst.
        let later = start + Duration::from_secs(60);
        for _ in 0..3 {
            assert_eq!(bucket.try_take(later), Ok(()));
        }
        assert!(bucket.try_take(later).is_err());
    }

    #[tokio::test(start_paused = true)]
    async fn layer_paces_requests() {
        use tower::{Layer, Service, ServiceExt};
        let calls = Arc::new(Mutex::new(Vec::new()));
        let seen = calls.clone();
        let start = Instant::now();
        let inner = tower::service_fn(move |_: ()| {
            seen.lock().expect("test lock").push(Instant::now() - start);
            async { Ok::<_, std::convert::Infallible>(()) }
        });
        let mut svc = RateLimitLayer::new(2.0, 2).layer(inner);
        for _ in 0..4 {
            svc.ready().await.expect("ready").call(()).await.expect("call");
        }
        let calls = calls.lock().expect("test lock").clone();
        assert_eq!(calls[0], Duration::ZERO);
        assert_eq!(calls[1], Duration::ZERO);
        assert!(calls[2] >= Duration::from_millis(500), "{calls:?}");
        assert!(calls[3] >= Duration::from_millis(1000), "{calls:?}");
    }
}
