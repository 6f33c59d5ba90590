//! kube-apiserver 1.36's validation of `networking.k8s.io/v1` Ingresses and IngressClasses
//! (`pkg/apis/networking/validation`), with its field paths and messages, and the
//! `DefaultIngressClass` admission plugin.
//!
//! Ingress: `rules` or `defaultBackend` required; rule hosts DNS subdomains (a wildcard `*.`
//! first label allowed), not IP addresses; `http.paths` required, each with a `pathType`
//! (`Exact`, `Prefix`, `ImplementationSpecific`), an absolute `path` without `//`, `/./`,
//! `/../`, `%2f` or a `/.` or `/..` end; backends with exactly one of `service` (a DNS-label
//! name, exactly one of `port.name` and `port.number`) and `resource` (a typed reference);
//! TLS hosts and secret names; `ingressClassName`; the `kubernetes.io/ingress.class`
//! annotation matching `ingressClassName` on create. The update allowances of stored objects
//! (invalid TLS secret names, invalid rules of wildcard hosts) are kept; the
//! `RelaxedServiceNameValidation` gate is on (1.36's default): service names are DNS labels.
//! Status updates: load-balancer IPs (strict, unless already stored) and hostnames.
//!
//! IngressClass: `controller` required, a domain-prefixed path of at most 250 bytes and
//! immutable; `parameters` with a kind, a name and a `scope` (`Cluster`, with no namespace, or
//! `Namespace`, with one).

use std::net::IpAddr;

use crate::error::Cause;
use serde_json::{Value, json};

/// The annotation a class may still be named by (deprecated for `spec.ingressClassName`).
pub(crate) const CLASS_ANNOTATION: &str = "kubernetes.io/ingress.class";
/// The annotation that makes an IngressClass the default one.
pub(crate) const DEFAULT_CLASS_ANNOTATION: &str = "ingressclass.kubernetes.io/is-default-class";

const PATH_TYPES: [&str; 3] = ["Exact", "ImplementationSpecific", "Prefix"];
const INVALID_PATH_SEQUENCES: [&str; 5] = ["//", "/./", "/../", "%2f", "%2F"];
const INVALID_PATH_SUFFIXES: [&str; 2] = ["/..", "/."];
const SCOPES: [&str; 2] = ["Cluster", "Namespace"];
const MAX_CONTROLLER_LEN: usize = 250;
const SUBDOMAIN_MAX: usize = 253;

const SUBDOMAIN_MSG: &str = "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')";
const WILDCARD_MSG: &str = "a wildcard DNS-1123 subdomain must start with '*.', followed by a valid DNS subdomain, which must consist of lower case alphanumeric characters, '-' or '.' and end with an alphanumeric character (e.g. '*.example.com', regex used for validation is '\\*\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')";
const HTTP_PATH_FMT: &str = "[A-Za-z0-9/\\-._~%!$&'()*+,;=:]+";

/// A label of a DNS-1123 subdomain as Go's regex reads it (no length limit of its own).
fn subdomain_label_ok(l: &str) -> bool {
    !l.is_empty()
        && l.bytes().all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == b'-')
        && !l.starts_with('-')
        && !l.ends_with('-')
}

/// `IsDNS1123Subdomain`.
fn subdomain_errors(value: &str) -> Vec<String> {
    let mut errs = Vec::new();
    if value.len() > SUBDOMAIN_MAX {
        errs.push(format!("must be no more than {SUBDOMAIN_MAX} characters"));
    }
    if !value.split('.').all(subdomain_label_ok) {
        errs.push(SUBDOMAIN_MSG.to_string());
    }
    errs
}

/// `IsWildcardDNS1123Subdomain`.
fn wildcard_errors(value: &str) -> Vec<String> {
    let mut errs = Vec::new();
    if value.len() > SUBDOMAIN_MAX {
        errs.push(format!("must be no more than {SUBDOMAIN_MAX} characters"));
    }
    let ok = value.strip_prefix("*.").is_some_and(|rest| rest.split('.').all(subdomain_label_ok));
    if !ok {
        errs.push(WILDCARD_MSG.to_string());
    }
    errs
}

/// `IsValidPortName`.
fn port_name_errors(port: &str) -> Vec<String> {
    let mut errs = Vec::new();
    if port.len() > 15 {
        errs.push("must be no more than 15 characters".to_string());
    }
    if port.is_empty()
        || !port.bytes().all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == b'-')
    {
        errs.push("must contain only alpha-numeric characters (a-z, 0-9), and hyphens (-)".into());
    }
    if !port.bytes().any(|c| c.is_ascii_lowercase()) {
        errs.push("must contain at least one letter (a-z)".into());
    }
    if port.contains("--") {
        errs.push("must not contain consecutive hyphens".into());
    }
    if port.starts_with('-') || port.ends_with('-') {
        errs.push("must not begin or end with a hyphen".into());
    }
    errs
}

/// `content.IsPathSegmentName`.
fn path_segment_errors(name: &str) -> Vec<String> {
    if name == "." || name == ".." {
        return vec![format!("may not be '{name}'")];
    }
    ["/", "%"]
        .iter()
        .filter(|bad| name.contains(**bad))
        .map(|bad| format!("may not contain '{bad}'"))
        .collect()
}

/// A dotted IPv4 address whose parts may have leading zeros (what Go's `ParseIPSloppy`
/// accepts beyond the standard forms).
fn sloppy_v4(value: &str) -> bool {
    let parts: Vec<&str> = value.split('.').collect();
    parts.len() == 4
        && parts.iter().all(|p| {
            !p.is_empty()
                && p.len() <= 3
                && p.bytes().all(|c| c.is_ascii_digit())
                && p.parse::<u16>().is_ok_and(|n| n <= 255)
        })
}

/// Whether Go's `netutils.ParseIPSloppy` parses `value`.
fn parses_as_ip(value: &str) -> bool {
    value.parse::<IpAddr>().is_ok() || sloppy_v4(value)
}

fn str_at<'a>(v: &'a Value, key: &str) -> &'a str {
    v.get(key).and_then(Value::as_str).unwrap_or_default()
}

fn present(v: &Value, key: &str) -> bool {
    v.get(key).is_some_and(|x| !x.is_null())
}

fn items(v: Option<&Value>) -> &[Value] {
    v.and_then(Value::as_array).map(Vec::as_slice).unwrap_or(&[])
}

fn invalid_each(causes: &mut Vec<Cause>, path: &str, value: &str, msgs: Vec<String>) {
    for msg in msgs {
        causes.push(Cause::invalid(path, &json!(value), &msg));
    }
}

/// The causes for an Ingress `obj`; `old` is the stored one on an update.
pub(crate) fn ingress(obj: &Value, old: Option<&Value>) -> Vec<Cause> {
    let mut causes = Vec::new();
    let empty = json!({});
    let spec = obj.get("spec").unwrap_or(&empty);
    let old_spec = old.map(|o| o.get("spec").unwrap_or(&empty));
    let opts = Allowances {
        invalid_secret_name: old_spec.is_some_and(|s| {
            items(s.get("tls")).iter().any(|t| {
                let name = str_at(t, "secretName");
                !name.is_empty() && !subdomain_errors(name).is_empty()
            })
        }),
        invalid_wildcard_rule: old_spec.is_some_and(|s| {
            items(s.get("rules")).iter().any(|r| {
                let mut found = Vec::new();
                str_at(r, "host").contains('*') && {
                    rule_value(r, "", &mut found);
                    !found.is_empty()
                }
            })
        }),
    };
    let rules = items(spec.get("rules"));
    if rules.is_empty() && !present(spec, "defaultBackend") {
        // Go shows the rules slice as JSON: `null` when absent, `[]` when empty.
        let shown = if spec.get("rules").is_some_and(Value::is_array) { "[]" } else { "null" };
        causes.push(Cause {
            reason: "FieldValueInvalid".into(),
            message: format!(
                "Invalid value: {shown}: either `defaultBackend` or `rules` must be specified"
            ),
            field: "spec".into(),
        });
    }
    if let Some(backend) = spec.get("defaultBackend").filter(|b| !b.is_null()) {
        causes.extend(backend_causes(backend, "spec.defaultBackend"));
    }
    for (i, rule) in rules.iter().enumerate() {
        let at = format!("spec.rules[{i}]");
        let host = str_at(rule, "host");
        let mut wildcard = false;
        if !host.is_empty() {
            let host_path = format!("{at}.host");
            if parses_as_ip(host) {
                causes.push(Cause::invalid(
                    &host_path,
                    &json!(host),
                    "must be a DNS name, not an IP address",
                ));
            }
            if host.contains('*') {
                invalid_each(&mut causes, &host_path, host, wildcard_errors(host));
                wildcard = true;
            } else {
                invalid_each(&mut causes, &host_path, host, subdomain_errors(host));
            }
        }
        if !wildcard || !opts.invalid_wildcard_rule {
            rule_value(rule, &at, &mut causes);
        }
    }
    for (t, tls) in items(spec.get("tls")).iter().enumerate() {
        for (h, host) in items(tls.get("hosts")).iter().enumerate() {
            let host = host.as_str().unwrap_or_default();
            let path = format!("spec.tls[{t}].hosts[{h}]");
            if host.contains('*') {
                invalid_each(&mut causes, &path, host, wildcard_errors(host));
            } else {
                invalid_each(&mut causes, &path, host, subdomain_errors(host));
            }
        }
        let secret = str_at(tls, "secretName");
        if !opts.invalid_secret_name && !secret.is_empty() {
            let path = format!("spec.tls[{t}].secretName");
            invalid_each(&mut causes, &path, secret, subdomain_errors(secret));
        }
    }
    if let Some(class) = spec.get("ingressClassName").and_then(Value::as_str) {
        invalid_each(&mut causes, "spec.ingressClassName", class, subdomain_errors(class));
    }
    if old.is_none()
        && let Some(annotated) = obj
            .pointer("/metadata/annotations")
            .and_then(|a| a.get(CLASS_ANNOTATION))
            .and_then(Value::as_str)
        && let Some(class) = spec.get("ingressClassName").and_then(Value::as_str)
        && annotated != class
    {
        causes.push(Cause::invalid(
            &format!("annotations.{CLASS_ANNOTATION}"),
            &json!(annotated),
            "must match `ingressClassName` when both are specified",
        ));
    }
    causes
}

/// The warning kube-apiserver gives on creating an Ingress named by the deprecated annotation.
pub(crate) fn create_warnings(obj: &Value) -> Vec<String> {
    let annotated =
        obj.pointer("/metadata/annotations").and_then(|a| a.get(CLASS_ANNOTATION)).is_some();
    let class = obj.pointer("/spec/ingressClassName").is_some_and(|c| !c.is_null());
    if annotated && !class {
        vec![format!(
            "annotation {CLASS_ANNOTATION:?} is deprecated, please use 'spec.ingressClassName' instead"
        )]
    } else {
        Vec::new()
    }
}

/// What an update lets through because the stored object had it already.
#[derive(Clone, Copy)]
struct Allowances {
    invalid_secret_name: bool,
    invalid_wildcard_rule: bool,
}

fn rule_value(rule: &Value, at: &str, causes: &mut Vec<Cause>) {
    let Some(http) = rule.get("http").filter(|h| !h.is_null()) else { return };
    let paths = items(http.get("paths"));
    if paths.is_empty() {
        causes.push(Cause::required(&format!("{at}.http.paths"), ""));
    }
    for (j, path) in paths.iter().enumerate() {
        http_path(path, &format!("{at}.http.paths[{j}]"), causes);
    }
}

fn http_path(path: &Value, at: &str, causes: &mut Vec<Cause>) {
    let Some(path_type) = path.get("pathType").filter(|p| !p.is_null()) else {
        causes.push(Cause::required(&format!("{at}.pathType"), "pathType must be specified"));
        return;
    };
    let path_type = path_type.as_str().unwrap_or_default();
    let value = str_at(path, "path");
    let path_field = format!("{at}.path");
    let shown = json!(value);
    match path_type {
        "Exact" | "Prefix" => {
            if !value.starts_with('/') {
                causes.push(Cause::invalid(&path_field, &shown, "must be an absolute path"));
            }
            if !value.is_empty() {
                for seq in INVALID_PATH_SEQUENCES.iter().filter(|s| value.contains(**s)) {
                    causes.push(Cause::invalid(
                        &path_field,
                        &shown,
                        &format!("must not contain '{seq}'"),
                    ));
                }
                for suffix in INVALID_PATH_SUFFIXES.iter().filter(|s| value.ends_with(**s)) {
                    causes.push(Cause::invalid(
                        &path_field,
                        &shown,
                        &format!("cannot end with '{suffix}'"),
                    ));
                }
            }
        }
        "ImplementationSpecific" => {
            if !value.is_empty() && !value.starts_with('/') {
                causes.push(Cause::invalid(&path_field, &shown, "must be an absolute path"));
            }
        }
        other => {
            let listed: Vec<Value> = PATH_TYPES.iter().map(|p| json!(p)).collect();
            causes.push(Cause::not_supported(&format!("{at}.pathType"), &json!(other), &listed));
        }
    }
    let empty = json!({});
    let backend = path.get("backend").filter(|b| !b.is_null()).unwrap_or(&empty);
    causes.extend(backend_causes(backend, &format!("{at}.backend")));
}

/// `validateIngressBackend`.
fn backend_causes(backend: &Value, at: &str) -> Vec<Cause> {
    let mut causes = Vec::new();
    let blank = json!("");
    match (present(backend, "resource"), present(backend, "service")) {
        (true, true) => {
            causes.push(Cause::invalid(at, &blank, "cannot set both resource and service backends"))
        }
        (true, false) => {
            typed_reference(&backend["resource"], &format!("{at}.resource"), &mut causes)
        }
        (false, true) => {
            let service = &backend["service"];
            let name = str_at(service, "name");
            let name_path = format!("{at}.service.name");
            if name.is_empty() {
                causes.push(Cause::required(&name_path, ""));
            } else if let Err(msg) = crate::util::check_label(name) {
                causes.push(Cause::invalid(&name_path, &json!(name), &msg));
            }
            let port = service.get("port").cloned().unwrap_or(Value::Null);
            let port_name = str_at(&port, "name");
            let number = port.get("number").and_then(Value::as_i64).unwrap_or(0);
            match (!port_name.is_empty(), number != 0) {
                (true, true) => causes.push(Cause::invalid(
                    at,
                    &blank,
                    "cannot set both port name & port number",
                )),
                (true, false) => invalid_each(
                    &mut causes,
                    &format!("{at}.service.port.name"),
                    port_name,
                    port_name_errors(port_name),
                ),
                (false, true) => {
                    if !(1..=65535).contains(&number) {
                        causes.push(Cause::invalid(
                            &format!("{at}.service.port.number"),
                            &json!(number),
                            "must be between 1 and 65535, inclusive",
                        ));
                    }
                }
                (false, false) => {
                    causes.push(Cause::required(at, "port name or number is required"))
                }
            }
        }
        (false, false) => {
            causes.push(Cause::invalid(at, &blank, "resource or service backend is required"))
        }
    }
    causes
}

/// `validateIngressTypedLocalObjectReference`.
fn typed_reference(reference: &Value, at: &str, causes: &mut Vec<Cause>) {
    if let Some(group) = reference.get("apiGroup").and_then(Value::as_str) {
        invalid_each(causes, &format!("{at}.apiGroup"), group, subdomain_errors(group));
    }
    for key in ["kind", "name"] {
        let value = str_at(reference, key);
        let path = format!("{at}.{key}");
        if value.is_empty() {
            causes.push(Cause::required(&path, ""));
        } else {
            invalid_each(causes, &path, value, path_segment_errors(value));
        }
    }
}

/// The causes for an Ingress status update (`ValidateIngressStatusUpdate` beyond the metadata).
pub(crate) fn ingress_status(obj: &Value, old: &Value) -> Vec<Cause> {
    let mut causes = Vec::new();
    let stored_ips: Vec<&str> = items(old.pointer("/status/loadBalancer/ingress"))
        .iter()
        .map(|i| str_at(i, "ip"))
        .filter(|ip| !ip.is_empty())
        .collect();
    for (i, point) in items(obj.pointer("/status/loadBalancer/ingress")).iter().enumerate() {
        let at = format!("status.loadBalancer.ingress[{i}]");
        let ip = str_at(point, "ip");
        if !ip.is_empty() && !stored_ips.contains(&ip) {
            let path = format!("{at}.ip");
            let shown = json!(ip);
            match ip.parse::<IpAddr>() {
                Ok(IpAddr::V6(v6)) if v6.to_ipv4_mapped().is_some() => causes.push(Cause::invalid(
                    &path,
                    &shown,
                    "must not be an IPv4-mapped IPv6 address",
                )),
                Ok(_) => {}
                Err(_) if sloppy_v4(ip) => {
                    causes.push(Cause::invalid(&path, &shown, "must not have leading 0s"))
                }
                Err(_) => causes.push(Cause::invalid(
                    &path,
                    &shown,
                    "must be a valid IP address, (e.g. 10.9.8.7 or 2001:db8::ffff)",
                )),
            }
        }
        let hostname = str_at(point, "hostname");
        if !hostname.is_empty() {
            let path = format!("{at}.hostname");
            invalid_each(&mut causes, &path, hostname, subdomain_errors(hostname));
            if parses_as_ip(hostname) {
                causes.push(Cause::invalid(
                    &path,
                    &json!(hostname),
                    "must be a DNS name, not an IP address",
                ));
            }
        }
    }
    causes
}

/// The causes for an IngressClass `obj`; `old` is the stored one on an update.
pub(crate) fn ingress_class(obj: &Value, old: Option<&Value>) -> Vec<Cause> {
    let mut causes = Vec::new();
    let empty = json!({});
    let spec = obj.get("spec").unwrap_or(&empty);
    let controller = str_at(spec, "controller");
    if let Some(old) = old {
        let before = old.pointer("/spec/controller").and_then(Value::as_str).unwrap_or_default();
        if before != controller {
            causes.push(Cause::invalid(
                "spec.controller",
                &json!(controller),
                "field is immutable",
            ));
        }
    }
    if controller.len() > MAX_CONTROLLER_LEN {
        causes.push(Cause {
            reason: "FieldValueTooLong".into(),
            message: format!("Too long: may not be more than {MAX_CONTROLLER_LEN} bytes"),
            field: "spec.controller".into(),
        });
    }
    domain_prefixed_path(controller, "spec.controller", &mut causes);
    if let Some(params) = spec.get("parameters").filter(|p| !p.is_null()) {
        parameters(params, "spec.parameters", &mut causes);
    }
    causes
}

/// `IsDomainPrefixedPath`.
fn domain_prefixed_path(value: &str, at: &str, causes: &mut Vec<Cause>) {
    if value.is_empty() {
        causes.push(Cause::required(at, ""));
        return;
    }
    let Some((host, path)) = value.split_once('/').filter(|(h, p)| !h.is_empty() && !p.is_empty())
    else {
        causes.push(Cause::invalid(
            at,
            &json!(value),
            "must be a domain-prefixed path (such as \"acme.io/foo\")",
        ));
        return;
    };
    invalid_each(causes, at, host, subdomain_errors(host));
    let path_ok =
        path.chars().all(|c| c.is_ascii_alphanumeric() || "/-._~%!$&'()*+,;=:".contains(c));
    if !path_ok {
        causes.push(Cause::invalid(
            at,
            &json!(path),
            &format!("Invalid path (regex used for validation is '{HTTP_PATH_FMT}')"),
        ));
    }
}

/// `validateIngressClassParametersReference`.
fn parameters(params: &Value, at: &str, causes: &mut Vec<Cause>) {
    if let Some(group) = params.get("apiGroup").and_then(Value::as_str) {
        invalid_each(causes, &format!("{at}.apiGroup"), group, subdomain_errors(group));
    }
    for key in ["kind", "name"] {
        let value = str_at(params, key);
        let path = format!("{at}.{key}");
        if value.is_empty() {
            causes.push(Cause::required(&path, ""));
        } else {
            invalid_each(causes, &path, value, path_segment_errors(value));
        }
    }
    let Some(scope) = params.get("scope").filter(|s| !s.is_null()) else {
        causes.push(Cause::required(&format!("{at}.scope"), ""));
        return;
    };
    let scope = scope.as_str().unwrap_or_default();
    let namespace = params.get("namespace").filter(|n| !n.is_null());
    let ns_path = format!("{at}.namespace");
    match scope {
        "Namespace" => match namespace {
            None => {
                causes.push(Cause::required(&ns_path, "`parameters.scope` is set to 'Namespace'"))
            }
            Some(ns) => {
                let ns = ns.as_str().unwrap_or_default();
                if let Err(msg) = crate::util::check_label(ns) {
                    causes.push(Cause::invalid(&ns_path, &json!(ns), &msg));
                }
            }
        },
        "Cluster" => {
            if namespace.is_some() {
                causes.push(Cause::forbidden(&ns_path, "`parameters.scope` is set to 'Cluster'"));
            }
        }
        other => {
            let listed: Vec<Value> = SCOPES.iter().map(|s| json!(s)).collect();
            causes.push(Cause::not_supported(&format!("{at}.scope"), &json!(other), &listed));
        }
    }
}

/// The `DefaultIngressClass` admission plugin: the class a new Ingress gets, when it names
/// none (neither `spec.ingressClassName` nor the deprecated annotation), from the IngressClasses
/// annotated `ingressclass.kubernetes.io/is-default-class: "true"`: the newest one, by name
/// among those created in the same second.
pub(crate) fn default_class_for(
    ingress: &Value,
    classes: &[std::sync::Arc<Value>],
) -> Option<String> {
    if ingress.pointer("/spec/ingressClassName").is_some_and(|c| !c.is_null()) {
        return None;
    }
    if ingress.pointer("/metadata/annotations").and_then(|a| a.get(CLASS_ANNOTATION)).is_some() {
        return None;
    }
    let mut defaults: Vec<(&str, &str)> = classes
        .iter()
        .filter(|c| {
            c.pointer("/metadata/annotations")
                .and_then(|a| a.get(DEFAULT_CLASS_ANNOTATION))
                .and_then(Value::as_str)
                == Some("true")
        })
        .map(|c| {
            let created = c.pointer("/metadata/creationTimestamp").and_then(Value::as_str);
            let name = c.pointer("/metadata/name").and_then(Value::as_str);
            (created.unwrap_or_default(), name.unwrap_or_default())
        })
        .collect();
    // RFC 3339 in UTC with whole seconds: the text orders as the time does.
    defaults.sort_by(|a, b| b.0.cmp(a.0).then(a.1.cmp(b.1)));
    defaults.first().map(|(_, name)| name.to_string())
}

/// Sets `spec.ingressClassName` of `ingress` to `class`.
pub(crate) fn set_class(ingress: &mut Value, class: &str) {
    let Some(m) = ingress.as_object_mut() else { return };
    let spec = m.entry("spec").or_insert_with(|| json!({}));
    if let Some(spec) = spec.as_object_mut() {
        spec.insert("ingressClassName".into(), json!(class));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fields(causes: &[Cause]) -> Vec<String> {
        causes.iter().map(|c| format!("{}: {}", c.field, c.message)).collect()
    }

    fn with_path(path: Value) -> Value {
        json!({"spec": {"rules": [{"host": "foo.example.com", "http": {"paths": [path]}}]}})
    }

    #[test]
    fn a_usual_ingress_is_valid() {
        let ing = with_path(json!({"path": "/", "pathType": "Prefix",
            "backend": {"service": {"name": "web", "port": {"number": 80}}}}));
        assert_eq!(fields(&ingress(&ing, None)), Vec::<String>::new());
        let only_default = json!({"spec": {"defaultBackend": {"service": {"name": "web", "port": {"name": "http"}}}}});
        assert_eq!(fields(&ingress(&only_default, None)), Vec::<String>::new());
        let wildcard = json!({"spec": {"rules": [{"host": "*.example.com"}],
            "tls": [{"hosts": ["*.example.com"], "secretName": "tls"}], "ingressClassName": "nginx"}});
        assert_eq!(fields(&ingress(&wildcard, None)), Vec::<String>::new());
    }

    #[test]
    fn paths_need_a_type_an_absolute_path_and_one_backend() {
        let no_type = with_path(json!({"path": "/", "backend": {}}));
        assert_eq!(
            fields(&ingress(&no_type, None)),
            ["spec.rules[0].http.paths[0].pathType: Required value: pathType must be specified"]
        );
        let relative = with_path(json!({"path": "foo", "pathType": "Exact",
            "backend": {"service": {"name": "web", "port": {"number": 80}},
                        "resource": {"kind": "Bucket", "name": "b"}}}));
        assert_eq!(
            fields(&ingress(&relative, None)),
            [
                r#"spec.rules[0].http.paths[0].path: Invalid value: "foo": must be an absolute path"#,
                r#"spec.rules[0].http.paths[0].backend: Invalid value: "": cannot set both resource and service backends"#,
            ]
        );
        let neither = with_path(json!({"path": "/a//b/..", "pathType": "Prefix", "backend": {}}));
        assert_eq!(
            fields(&ingress(&neither, None)),
            [
                r#"spec.rules[0].http.paths[0].path: Invalid value: "/a//b/..": must not contain '//'"#,
                r#"spec.rules[0].http.paths[0].path: Invalid value: "/a//b/..": cannot end with '/..'"#,
                r#"spec.rules[0].http.paths[0].backend: Invalid value: "": resource or service backend is required"#,
            ]
        );
        let odd = with_path(json!({"pathType": "Regex",
            "backend": {"service": {"name": "web", "port": {}}}}));
        assert_eq!(
            fields(&ingress(&odd, None)),
            [
                r#"spec.rules[0].http.paths[0].pathType: Unsupported value: "Regex": supported values: "Exact", "ImplementationSpecific", "Prefix""#,
                "spec.rules[0].http.paths[0].backend: Required value: port name or number is required",
            ]
        );
    }

    #[test]
    fn service_ports_and_names() {
        let both = with_path(json!({"path": "/", "pathType": "ImplementationSpecific",
            "backend": {"service": {"name": "Web", "port": {"name": "http", "number": 80}}}}));
        let got = fields(&ingress(&both, None));
        assert_eq!(got.len(), 2, "{got:?}");
        assert!(got[0].starts_with(r#"spec.rules[0].http.paths[0].backend.service.name: Invalid value: "Web": a lowercase RFC 1123 label"#), "{got:?}");
        assert_eq!(
            got[1],
            r#"spec.rules[0].http.paths[0].backend: Invalid value: "": cannot set both port name & port number"#
        );
        let bad_port = with_path(json!({"path": "/", "pathType": "Exact",
            "backend": {"service": {"name": "web", "port": {"number": 70000}}}}));
        assert_eq!(
            fields(&ingress(&bad_port, None)),
            [
                "spec.rules[0].http.paths[0].backend.service.port.number: Invalid value: 70000: must be between 1 and 65535, inclusive"
            ]
        );
        let bad_name = with_path(json!({"path": "/", "pathType": "Exact",
            "backend": {"service": {"name": "web", "port": {"name": "80"}}}}));
        assert_eq!(
            fields(&ingress(&bad_name, None)),
            [
                r#"spec.rules[0].http.paths[0].backend.service.port.name: Invalid value: "80": must contain at least one letter (a-z)"#
            ]
        );
    }

    #[test]
    fn hosts_are_dns_names() {
        let ing = json!({"spec": {"rules": [{"host": "Foo_bar"}, {"host": "1.2.3.4"}, {"host": "a.*.com"}]}});
        let got = fields(&ingress(&ing, None));
        assert_eq!(got.len(), 3, "{got:?}");
        assert!(got[0].starts_with(
            r#"spec.rules[0].host: Invalid value: "Foo_bar": a lowercase RFC 1123 subdomain"#
        ));
        assert_eq!(
            got[1],
            r#"spec.rules[1].host: Invalid value: "1.2.3.4": must be a DNS name, not an IP address"#
        );
        assert!(got[2].starts_with(r#"spec.rules[2].host: Invalid value: "a.*.com": a wildcard DNS-1123 subdomain must start with '*.'"#));
        let nothing = json!({"spec": {}});
        assert_eq!(
            fields(&ingress(&nothing, None)),
            ["spec: Invalid value: null: either `defaultBackend` or `rules` must be specified"]
        );
    }

    #[test]
    fn the_class_annotation_must_match_on_create() {
        let ing = json!({"metadata": {"annotations": {CLASS_ANNOTATION: "a"}},
            "spec": {"ingressClassName": "b", "defaultBackend": {"resource": {"kind": "K", "name": "n"}}}});
        assert_eq!(
            fields(&ingress(&ing, None)),
            [
                r#"annotations.kubernetes.io/ingress.class: Invalid value: "a": must match `ingressClassName` when both are specified"#
            ]
        );
        assert_eq!(fields(&ingress(&ing, Some(&ing))), Vec::<String>::new());
        let annotated = json!({"metadata": {"annotations": {CLASS_ANNOTATION: "a"}}, "spec": {}});
        assert_eq!(create_warnings(&annotated).len(), 1);
    }

    #[test]
    fn status_addresses() {
        let old = json!({"status": {"loadBalancer": {"ingress": [{"ip": "010.0.0.1"}]}}});
        let new = json!({"status": {"loadBalancer": {"ingress": [
            {"ip": "010.0.0.1"}, {"ip": "010.0.0.2"}, {"ip": "nope"}, {"hostname": "10.0.0.3"}]}}});
        assert_eq!(
            fields(&ingress_status(&new, &old)),
            [
                r#"status.loadBalancer.ingress[1].ip: Invalid value: "010.0.0.2": must not have leading 0s"#,
                r#"status.loadBalancer.ingress[2].ip: Invalid value: "nope": must be a valid IP address, (e.g. 10.9.8.7 or 2001:db8::ffff)"#,
                r#"status.loadBalancer.ingress[3].hostname: Invalid value: "10.0.0.3": must be a DNS name, not an IP address"#,
            ]
        );
    }

    #[test]
    fn ingress_classes() {
        let ok = json!({"spec": {"controller": "example.com/ingress",
            "parameters": {"apiGroup": "k8s.example.com", "kind": "Params", "name": "p", "scope": "Cluster"}}});
        assert_eq!(fields(&ingress_class(&ok, None)), Vec::<String>::new());
        let changed = json!({"spec": {"controller": "example.com/other"}});
        assert_eq!(
            fields(&ingress_class(&changed, Some(&ok))),
            [r#"spec.controller: Invalid value: "example.com/other": field is immutable"#]
        );
        let bad = json!({"spec": {"controller": "nginx",
            "parameters": {"kind": "Params", "name": "p", "scope": "Namespace"}}});
        assert_eq!(
            fields(&ingress_class(&bad, None)),
            [
                r#"spec.controller: Invalid value: "nginx": must be a domain-prefixed path (such as "acme.io/foo")"#,
                "spec.parameters.namespace: Required value: `parameters.scope` is set to 'Namespace'",
            ]
        );
        assert_eq!(
            fields(&ingress_class(&json!({"spec": {}}), None)),
            ["spec.controller: Required value"]
        );
    }

    #[test]
    fn the_newest_default_class_is_chosen() {
        let class = |name: &str, at: &str, default: bool| {
            let mut c = json!({"metadata": {"name": name, "creationTimestamp": at}});
            if default {
                c["metadata"]["annotations"] = json!({DEFAULT_CLASS_ANNOTATION: "true"});
            }
            std::sync::Arc::new(c)
        };
        let classes = [
            class("old", "2026-01-01T00:00:00Z", true),
            class("b", "2026-01-02T00:00:00Z", true),
            class("a", "2026-01-02T00:00:00Z", true),
            class("newest-not-default", "2026-01-03T00:00:00Z", false),
        ];
        let bare = json!({"spec": {}});
        assert_eq!(default_class_for(&bare, &classes).as_deref(), Some("a"));
        let named = json!({"spec": {"ingressClassName": "x"}});
        assert_eq!(default_class_for(&named, &classes), None);
        let annotated = json!({"metadata": {"annotations": {CLASS_ANNOTATION: "x"}}});
        assert_eq!(default_class_for(&annotated, &classes), None);
        assert_eq!(default_class_for(&bare, &classes[3..]), None);
    }
}
