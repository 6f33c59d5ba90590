//! HTTP GET actions (`httpGet` of probes and lifecycle hooks): the URL, the headers and the
//! port a container's action names, as the kubelet builds them.

use k8s_openapi::api::core::v1::{ContainerPort, HTTPGetAction};
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;

/// An HTTP GET to send.
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
    user_agent: &str,
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
        headers.push(("User-Agent".to_owned(), user_agent.to_owned()));
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

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;
    use k8s_openapi::api::core::v1::HTTPHeader;

    const UA: &str = "kube-probe/kruise-daemon";

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
        let req = http_get_request(&action, &[port("http", 8080)], Some("10.0.0.7"), UA).unwrap();
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
        assert_eq!(
            http_get_request(&v6, &[], None, UA).unwrap().url,
            "http://[fd00::1]:80/stop?now=1"
        );
        // No pod IP, or a named port the container lacks: errors, never panics.
        assert!(http_get_request(&action, &[port("http", 8080)], None, UA).is_err());
        assert!(http_get_request(&action, &[], Some("10.0.0.7"), UA).is_err());
    }
}
