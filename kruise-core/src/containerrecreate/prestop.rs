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
use kruise_api::apps::v1beta1::CRRProbeHandler;

pub use crate::http_get::{HttpGetRequest, resolve_port};

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

/// The request for a preStop hook's `action` (see [`crate::http_get::http_get_request`]),
/// sent as `kube-lifecycle/kruise-daemon`.
///
/// # Errors
/// As [`crate::http_get::http_get_request`].
pub fn http_get_request(
    action: &HTTPGetAction,
    ports: &[ContainerPort],
    pod_ip: Option<&str>,
) -> Result<HttpGetRequest, String> {
    crate::http_get::http_get_request(action, ports, pod_ip, LIFECYCLE_USER_AGENT)
}

/// The `User-Agent` of preStop hooks, unless the hook sets one.
pub const LIFECYCLE_USER_AGENT: &str = "kube-lifecycle/kruise-daemon";

/// How upstream names a pod in its messages: `name_namespace(uid)`.
pub fn format_pod(name: &str, namespace: &str, uid: &str) -> String {
    format!("{name}_{namespace}({uid})")
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;
    use k8s_openapi::api::core::v1::{ExecAction, TCPSocketAction};
    use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;

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
