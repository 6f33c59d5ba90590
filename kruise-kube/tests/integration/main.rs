//! kruise-kube against in-process servers: health and metrics, leader election and the webhooks.
//!
//! One test binary for every suite keeps the build small.

mod applier_plan;
mod client_http2;
mod health_http;
mod leader;
mod webhook_conversion;
mod webhook_server;
