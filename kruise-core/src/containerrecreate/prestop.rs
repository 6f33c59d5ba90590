//! The preStop hook the daemon runs before it stops a container for a request (upstream:
//! `KillContainer` runs the kubelet's lifecycle handler runner on the hook the webhook copied
//! into `spec.containers[].preStop`).
//!
//! - The hook runs only when the grace period is positive, and is waited for at most the grace
//!   period ([`pre_stop_budget`]).
//! - A failed hook does not block the stop: it is reported (a `FailedPreStopHook` warning) and
//!   the container is stopped anyway.
//! - The stop gets what is left of the grace period, in whole seconds the hook took
//!   (truncated), but never less than [`MIN_STOP_GRACE_SECONDS`] ([`stop_grace_after_hook`]).

use std::time::Duration;

use k8s_openapi::api::core::v1::{ContainerPort, HTTPGetAction};
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;
use kruise_api::apps::v1beta1::CRRProbeHandler;

/// The kubelet's minimal shutdown window: a stop never gets less, to avoid needless SIGKILLs.
pub const MIN_STOP_GRACE_SECONDS: i64 = 2;

/// How long the daemon waits for a preStop hook when the grace period is `grace_seconds`;
/// `None` when there is no time to run it (the hook is skipped).
pub fn pre_stop_budget(grace_seconds: i64) -> Option<Duration> {
    u64::try_from(grace_seconds).ok().filter(|s| *s > 0).map(Duration::from_secs)
}

/// The grace period of the stop after a hook that ran for `hook_ran_for` (`None`: no hook ran).
pub fn stop_grace_after_hook(grace_seconds: i64, hook_ran_for: Option<Duration>) -> i64 {
    let spent = hook_ran_for.map_or(0, |d| i64::try_from(d.as_secs()).unwrap_or(i64::MAX));
    grace_seconds.saturating_sub(spent).max(MIN_STOP_GRACE_SECONDS)
}

/// What a preStop handler asks for.
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub enum PreStopAction {
    /// Run this command in the container (through the runtime's ExecSync).
    Exec(Vec<String>),
    /// Send an HTTP GET (see [`http_get_request`]).
    HttpGet(HTTPGetAction),
    /// A handler the daemon cannot run (the kubelet runs no tcpSocket hook); the message.
    Invalid(String),
}

/// The action of a request container's preStop handler, `None` when it has none.
pub fn pre_stop_action(handler: Option<&CRRProbeHandler>) -> Option<PreStopAction> {
    let handler = handler?;
    if let Some(exec) = &handler.exec {
        return Some(PreStopAction::Exec(exec.command.clone().unwrap_or_default()));
    }
    if let Some(get) = &handler.http_get {
        return Some(PreStopAction::HttpGet(get.clone()));
    }
    if handler.tcp_socket.is_some() {
        return Some(PreStopAction::Invalid(
            "Cannot run handler: invalid handler: tcpSocket is not supported for lifecycle hooks"
                .to_owned(),
        ));
    }
    None
}

/// An HTTP GET to send for a preStop hook.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct HttpGetRequest {
    /// Lower-cased scheme (`http` unless the action says otherwise).
    pub scheme: String,
    /// The absolute URL.
    pub url: String,
    /// Headers to send, in order: the action's, then `User-Agent` and `Accept` unless given.
    /// A `Host` header overrides the host the request names.
    pub headers: Vec<(String, String)>,
}

/// The request for `action` against a container with `ports`; the host is the action's, else
/// `pod_ip`. Errors (a named port the container does not have, no host) are messages.
pub fn http_get_request(
    action: &HTTPGetAction,
    ports: &[ContainerPort],
    pod_ip: Option<&str>,
) -> Result<HttpGetRequest, String> {
    let scheme = action.scheme.as_deref().unwrap_or("").to_ascii_lowercase();
    let scheme = if scheme.is_empty() { "http".to_owned() } else { scheme };
    let host = match action.host.as_deref().filter(|h| !h.is_empty()) {
        Some(h) => h,
        None => pod_ip.filter(|ip| !ip.is_empty()).ok_or("failed to find the pod IP")?,
    };
    let port = resolve_port(&action.port, ports)?;
    let host_port = if host.contains(':') && !host.starts_with('[') {
        format!("[{host}]:{port}")
    } else {
        format!("{host}:{port}")
    };
    let path = action.path.as_deref().unwrap_or("");
    let slash = if path.starts_with('/') { "" } else { "/" };
    let url = format!("{scheme}://{host_port}{slash}{path}");
    let mut headers: Vec<(String, String)> =
        action.http_headers.iter().flatten().map(|h| (h.name.clone(), h.value.clone())).collect();
    let has = |headers: &[(String, String)], name: &str| {
        headers.iter().any(|(n, _)| n.eq_ignore_ascii_case(name))
    };
    if !has(&headers, "user-agent") {
        headers.push(("User-Agent".to_owned(), "kube-lifecycle/kruise-daemon".to_owned()));
    }
    if !has(&headers, "accept") {
        headers.push(("Accept".to_owned(), "*/*".to_owned()));
    }
    Ok(HttpGetRequest { scheme, url, headers })
}

/// A port number, or the number of the container port of that name (or a number written as a
/// string); it must be in 1..=65535.
pub fn resolve_port(port: &IntOrString, ports: &[ContainerPort]) -> Result<u16, String> {
    let number = match port {
        IntOrString::Int(n) => i64::from(*n),
        IntOrString::String(name) => {
            match ports.iter().find(|p| p.name.as_deref() == Some(name.as_str())) {
                Some(p) => i64::from(p.container_port),
                None => name
                    .parse::<i64>()
                    .map_err(|_| format!("couldn't find port: {name} in the container's ports"))?,
            }
        }
    };
    u16::try_from(number).ok().filter(|n| *n > 0).ok_or(format!("invalid port number: {number}"))
}

/// How upstream names a pod in its messages: `name_namespace(uid)`.
pub fn format_pod(name: &str, namespace: &str, uid: &str) -> String {
    format!("{name}_{namespace}({uid})")
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;
    use k8s_openapi::api::core::v1::{ExecAction, HTTPHeader, TCPSocketAction};

    #[test]
    fn grace_arithmetic() {
        assert_eq!(pre_stop_budget(0), None);
        assert_eq!(pre_stop_budget(-3), None);
        assert_eq!(pre_stop_budget(30), Some(Duration::from_secs(30)));
        // No hook: the grace period as is, but at least 2 s.
        assert_eq!(stop_grace_after_hook(30, None), 30);
        assert_eq!(stop_grace_after_hook(1, None), 2);
        assert_eq!(stop_grace_after_hook(0, None), 2);
        // Whole seconds the hook took are spent (truncated).
        assert_eq!(stop_grace_after_hook(30, Some(Duration::from_millis(10_900))), 20);
        assert_eq!(stop_grace_after_hook(30, Some(Duration::from_millis(900))), 30);
        // A hook that used it all (timed out) leaves the minimum.
        assert_eq!(stop_grace_after_hook(30, Some(Duration::from_secs(30))), 2);
        assert_eq!(stop_grace_after_hook(5, Some(Duration::from_secs(u64::MAX))), 2);
    }

    fn port(name: &str, n: i32) -> ContainerPort {
        ContainerPort { name: Some(name.into()), container_port: n, ..Default::default() }
    }

    #[test]
    fn ports_resolve_by_number_name_or_numeric_string() {
        let ports = [port("http", 8080)];
        assert_eq!(resolve_port(&IntOrString::Int(80), &ports), Ok(80));
        assert_eq!(resolve_port(&IntOrString::String("http".into()), &ports), Ok(8080));
        assert_eq!(resolve_port(&IntOrString::String("9090".into()), &ports), Ok(9090));
        assert!(resolve_port(&IntOrString::String("metrics".into()), &ports).is_err());
        assert!(resolve_port(&IntOrString::Int(0), &ports).is_err());
        assert!(resolve_port(&IntOrString::Int(70000), &ports).is_err());
        assert!(resolve_port(&IntOrString::String("-1".into()), &ports).is_err());
    }

    #[test]
    fn http_requests() {
        let action = HTTPGetAction {
            path: Some("stop?now=1".into()),
            port: IntOrString::String("http".into()),
            scheme: Some("HTTP".into()),
            http_headers: Some(vec![HTTPHeader { name: "Host".into(), value: "svc".into() }]),
            ..Default::default()
        };
        let req = http_get_request(&action, &[port("http", 8080)], Some("10.0.0.7")).unwrap();
        assert_eq!(req.scheme, "http");
        assert_eq!(req.url, "http://10.0.0.7:8080/stop?now=1");
        assert_eq!(req.headers[0], ("Host".to_owned(), "svc".to_owned()));
        assert!(req.headers.iter().any(|(n, v)| n == "Accept" && v == "*/*"));
        // An explicit host wins; IPv6 is bracketed.
        let v6 = HTTPGetAction {
            host: Some("fd00::1".into()),
            port: IntOrString::Int(80),
            ..action.clone()
        };
        assert_eq!(http_get_request(&v6, &[], None).unwrap().url, "http://[fd00::1]:80/stop?now=1");
        // No pod IP, or a named port the container lacks: errors, never panics.
        assert!(http_get_request(&action, &[port("http", 8080)], None).is_err());
        assert!(http_get_request(&action, &[], Some("10.0.0.7")).is_err());
    }

    #[test]
    fn actions() {
        assert_eq!(pre_stop_action(None), None);
        assert_eq!(pre_stop_action(Some(&CRRProbeHandler::default())), None);
        let exec = CRRProbeHandler {
            exec: Some(ExecAction { command: Some(vec!["sh".into(), "-c".into(), "x".into()]) }),
            ..Default::default()
        };
        assert_eq!(
            pre_stop_action(Some(&exec)),
            Some(PreStopAction::Exec(vec!["sh".into(), "-c".into(), "x".into()]))
        );
        let tcp = CRRProbeHandler {
            tcp_socket: Some(TCPSocketAction { port: IntOrString::Int(1), ..Default::default() }),
            ..Default::default()
        };
        assert!(matches!(pre_stop_action(Some(&tcp)), Some(PreStopAction::Invalid(_))));
    }
}
