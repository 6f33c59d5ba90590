//! PodProbeMarker validation, as upstream's `vpodprobemarker.kb.io` does it, with its field
//! paths and messages (the probe paths are not indexed: `spec.probes`, `spec.probe.*`).
//!
//! Upstream stops at the first error of several probe rules (names, duplicates, a missing
//! condition type and markers, a repeated condition type or policy state); the rest are all
//! reported.

use std::collections::BTreeSet;

use k8s_openapi::api::core::v1::{HTTPGetAction, Probe, TCPSocketAction};
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;
use kruise_api::apps::v1alpha1::{
    PodContainerProbe, PodProbeMarker, ProbeMarkerPolicy, ProbeState,
};

use crate::admission::meta::{
    LabelSelectorOptions, validate_annotations, validate_label_name, validate_label_selector,
    validate_labels, validate_nonnegative,
};
use crate::field::{BadValue, FieldError, FieldErrors, FieldPath, go};
use crate::names::{is_http_header_name, is_valid_port_name, is_valid_port_num};
use crate::selector::label_selector_as_selector;

/// Probe names that would shadow the pod conditions Kubernetes and Kruise set.
const RESERVED_NAMES: &[&str] = &[
    "PodScheduled",
    "Initialized",
    "Ready",
    "ContainersReady",
    "KruisePodReady",
    "InPlaceUpdateReady",
];

/// Upstream's checks of a PodProbeMarker (`old`: the stored one, on update).
pub fn validate_pod_probe_marker(
    marker: &PodProbeMarker,
    old: Option<&PodProbeMarker>,
) -> FieldErrors {
    let mut errs = FieldErrors::new();
    let spec = FieldPath::new("spec");
    let selector_path = spec.child("selector");
    match marker.spec.selector.as_ref() {
        None => errs.push(FieldError::invalid(
            &selector_path,
            BadValue::Null,
            "empty Selector is not valid for PodProbeMarker.",
        )),
        Some(selector) => {
            errs.extend(validate_label_selector(
                Some(selector),
                LabelSelectorOptions::default(),
                &selector_path,
            ));
            let empty = selector.match_labels.as_ref().is_none_or(|m| m.is_empty())
                && selector.match_expressions.as_ref().is_none_or(|e| e.is_empty());
            let shown = BadValue::Go(go::label_selector(selector));
            if empty {
                errs.push(FieldError::invalid(
                    &selector_path,
                    shown,
                    "empty selector is not valid for podProbeMarker.",
                ));
            } else if label_selector_as_selector(Some(selector)).is_err() {
                errs.push(FieldError::invalid(&selector_path.child("selector"), shown, ""));
            }
        }
    }
    errs.extend(validate_probes(&marker.spec.probes, &spec));
    if let Some(old) = old
        && old.spec.selector != marker.spec.selector
    {
        let shown = marker
            .spec
            .selector
            .as_ref()
            .map_or(BadValue::Null, |s| BadValue::Go(go::label_selector(s)));
        errs.push(FieldError::invalid(
            &FieldPath::new("selector"),
            shown,
            "selector must be immutable",
        ));
    }
    errs
}

fn validate_probes(probes: &[PodContainerProbe], spec: &FieldPath) -> Vec<FieldError> {
    let path = spec.child("probes");
    if probes.is_empty() {
        return vec![FieldError::invalid(
            &path,
            BadValue::Null,
            "empty probes is not valid for PodProbeMarker.",
        )];
    }
    let mut errs = Vec::new();
    let mut names = BTreeSet::new();
    let mut condition_types = BTreeSet::new();
    for probe in probes {
        let stop =
            |detail: String, value: BadValue| vec![FieldError::invalid(&path, value, detail)];
        if probe.name.contains('#') {
            errs.extend(stop("probe name can't contains '#'.".into(), probe.name.as_str().into()));
            return errs;
        }
        if probe.name.is_empty() {
            errs.extend(stop("probe name can't be empty in PodProbeMarker.".into(), "".into()));
            return errs;
        }
        if probe.container_name.is_empty() {
            errs.extend(stop(
                "probe containerName can't be empty in PodProbeMarker.".into(),
                "".into(),
            ));
            return errs;
        }
        if RESERVED_NAMES.contains(&probe.name.as_str()) {
            errs.extend(stop(
                format!("probe name can't be {}", probe.name),
                probe.name.as_str().into(),
            ));
            return errs;
        }
        if !names.insert(probe.name.as_str()) {
            errs.extend(stop(
                "probe name must be unique in PodProbeMarker.".into(),
                probe.name.as_str().into(),
            ));
            return errs;
        }
        errs.extend(validate_probe(&probe.probe.probe, &spec.child("probe")));
        if probe.pod_condition_type.is_empty() && probe.marker_policy.is_empty() {
            let shown = BadValue::Go(serde_json::to_string(probe).unwrap_or_default());
            errs.extend(stop(
                "podConditionType and markerPolicy cannot be empty at the same time".into(),
                shown,
            ));
            return errs;
        }
        if !probe.pod_condition_type.is_empty() {
            if !condition_types.insert(probe.pod_condition_type.as_str()) {
                errs.extend(stop(
                    format!(
                        "podConditionType {} must be unique in podProbeMarker",
                        probe.pod_condition_type
                    ),
                    probe.pod_condition_type.as_str().into(),
                ));
                return errs;
            }
            errs.extend(validate_label_name(&probe.pod_condition_type, spec));
        }
        let policy_path = spec.child("markerPolicy");
        let mut states = BTreeSet::new();
        for policy in &probe.marker_policy {
            if !states.insert(policy.state.as_str()) {
                errs.push(FieldError::invalid(
                    &policy_path,
                    policy.state.as_str(),
                    "marker policy state must be unique.",
                ));
                return errs;
            }
            errs.extend(validate_policy(policy, &policy_path));
        }
    }
    errs
}

fn validate_policy(policy: &ProbeMarkerPolicy, path: &FieldPath) -> Vec<FieldError> {
    if policy.state != ProbeState::Succeeded && policy.state != ProbeState::Failed {
        // Upstream's words, although the states it takes are Succeeded and Failed.
        return vec![FieldError::required(
            &path.child("state"),
            "marker policy state must be 'True' or 'False'",
        )];
    }
    if policy.labels.is_empty() && policy.annotations.is_empty() {
        return vec![FieldError::required(
            path,
            "marker policy annotations or labels can't be both empty",
        )];
    }
    let mut errs = validate_labels(Some(&policy.labels), &path.child("labels"));
    errs.extend(validate_annotations(Some(&policy.annotations), &path.child("annotations")));
    errs
}

/// The handler and timing of one probe, at `path` (`spec.probe`).
pub fn validate_probe(probe: &Probe, path: &FieldPath) -> Vec<FieldError> {
    let mut errs = validate_handler(probe, path);
    let fields = [
        ("initialDelaySeconds", probe.initial_delay_seconds),
        ("timeoutSeconds", probe.timeout_seconds),
        ("periodSeconds", probe.period_seconds),
        ("successThreshold", probe.success_threshold),
        ("failureThreshold", probe.failure_threshold),
    ];
    for (name, value) in fields {
        errs.extend(validate_nonnegative(i64::from(value.unwrap_or_default()), &path.child(name)));
    }
    errs
}

fn validate_handler(probe: &Probe, path: &FieldPath) -> Vec<FieldError> {
    let mut errs = Vec::new();
    let mut handlers = 0;
    if let Some(exec) = &probe.exec {
        handlers += 1;
        if exec.command.as_ref().is_none_or(Vec::is_empty) {
            errs.push(FieldError::required(&path.child("exec").child("command"), ""));
        }
    }
    if let Some(http) = &probe.http_get {
        let at = path.child("httpGet");
        if handlers > 0 {
            errs.push(FieldError::forbidden(&at, "may not specify more than 1 handler type"));
        } else {
            handlers += 1;
            errs.extend(validate_http_get(http, &at));
        }
    }
    if let Some(tcp) = &probe.tcp_socket {
        let at = path.child("tcpSocket");
        if handlers > 0 {
            errs.push(FieldError::forbidden(&at, "may not specify more than 1 handler type"));
        } else {
            handlers += 1;
            errs.extend(validate_tcp_socket(tcp, &at));
        }
    }
    if handlers == 0 {
        errs.push(FieldError::required(path, "must specify a handler type"));
    }
    errs
}

fn validate_http_get(http: &HTTPGetAction, path: &FieldPath) -> Vec<FieldError> {
    let mut errs = Vec::new();
    let path_value = http.path.as_deref().unwrap_or_default();
    if path_value.is_empty() {
        errs.push(FieldError::required(&path.child("path"), ""));
    }
    if let Some(host) = http.host.as_deref().filter(|h| !h.is_empty()) {
        errs.push(FieldError::invalid(
            &path.child("host"),
            host,
            "host field in probes is not allowed",
        ));
    }
    if !is_valid_url_path(path_value) {
        errs.push(FieldError::invalid(&path.child("path"), path_value, "must be a valid URL path"));
    }
    errs.extend(validate_port(&http.port, &path.child("port")));
    let scheme = http.scheme.as_deref().unwrap_or_default();
    if scheme != "HTTP" && scheme != "HTTPS" {
        errs.push(FieldError::not_supported(&path.child("scheme"), scheme, &["HTTP", "HTTPS"]));
    }
    for header in http.http_headers.iter().flatten() {
        for message in is_http_header_name(&header.name) {
            errs.push(FieldError::invalid(
                &path.child("httpHeaders"),
                header.name.as_str(),
                message,
            ));
        }
    }
    errs
}

fn validate_tcp_socket(tcp: &TCPSocketAction, path: &FieldPath) -> Vec<FieldError> {
    let mut errs = Vec::new();
    if let Some(host) = tcp.host.as_deref().filter(|h| !h.is_empty()) {
        errs.push(FieldError::invalid(
            &path.child("host"),
            host,
            "host field in probes is not allowed",
        ));
    }
    errs.extend(validate_port(&tcp.port, &path.child("port")));
    errs
}

fn validate_port(port: &IntOrString, path: &FieldPath) -> Vec<FieldError> {
    match port {
        IntOrString::Int(n) => is_valid_port_num(i64::from(*n))
            .into_iter()
            .map(|m| FieldError::invalid(path, i64::from(*n), m))
            .collect(),
        IntOrString::String(name) => is_valid_port_name(name)
            .into_iter()
            .map(|m| FieldError::invalid(path, name.as_str(), m))
            .collect(),
    }
}

/// Whether Go's `url.Parse` takes `path`: every `%` starts a two-digit hexadecimal escape, and
/// no control characters.
fn is_valid_url_path(path: &str) -> bool {
    let bytes = path.as_bytes();
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'%' => {
                let ok = bytes.get(i + 1).is_some_and(u8::is_ascii_hexdigit)
                    && bytes.get(i + 2).is_some_and(u8::is_ascii_hexdigit);
                if !ok {
                    return false;
                }
                i += 3;
            }
            c if c < 0x20 || c == 0x7f => return false,
            _ => i += 1,
        }
    }
    true
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;
    use serde_json::json;

    fn base() -> serde_json::Value {
        json!({
            "apiVersion": "apps.kruise.io/v1alpha1",
            "kind": "PodProbeMarker",
            "metadata": {"name": "ppm-1", "namespace": "sp1"},
            "spec": {
                "selector": {"matchLabels": {"app": "test"}},
                "probes": [{
                    "name": "healthy",
                    "containerName": "main",
                    "probe": {"exec": {"command": ["/bin/sh", "-c", "/healthy.sh"]}},
                    "podConditionType": "game.kruise.io/healthy",
                    "markerPolicy": [
                        {"state": "Succeeded", "labels": {"gameserver-idle": "true"}},
                        {"state": "Failed", "labels": {"gameserver-idle": "false"}}
                    ]
                }]
            }
        })
    }

    fn errors(doc: serde_json::Value) -> Vec<String> {
        let marker: PodProbeMarker = serde_json::from_value(doc).unwrap();
        validate_pod_probe_marker(&marker, None).messages()
    }

    #[test]
    fn upstream_table() {
        assert!(errors(base()).is_empty());
        let mut doc = base();
        doc["spec"]["selector"] = serde_json::Value::Null;
        assert_eq!(
            errors(doc),
            ["spec.selector: Invalid value: null: empty Selector is not valid for PodProbeMarker."]
        );
        let mut doc = base();
        doc["spec"]["probes"] = json!([]);
        assert_eq!(errors(doc).len(), 1);
        // A duplicate name stops there, before its missing handler.
        let mut doc = base();
        doc["spec"]["probes"]
            .as_array_mut()
            .unwrap()
            .push(json!({"name": "healthy", "containerName": "other", "probe": {}}));
        assert_eq!(
            errors(doc),
            [
                "spec.probes: Invalid value: \"healthy\": probe name must be unique in PodProbeMarker."
            ]
        );
        let mut doc = base();
        doc["spec"]["probes"].as_array_mut().unwrap().push(json!({
            "name": "check", "containerName": "other",
            "probe": {"httpGet": {"path": "/index.html", "scheme": "HTTP", "port": 80}},
            "podConditionType": "game.kruise.io/check"
        }));
        assert!(errors(doc).is_empty());
        let mut doc = base();
        doc["spec"]["probes"][0]["probe"] = json!({"exec": {"command": []}});
        assert_eq!(errors(doc), ["spec.probe.exec.command: Required value"]);
        let mut doc = base();
        doc["spec"]["probes"][0]["markerPolicy"] =
            json!([{"state": "Unknown", "labels": {"a": "b"}}]);
        assert_eq!(
            errors(doc),
            [
                "spec.markerPolicy.state: Required value: marker policy state must be 'True' or 'False'"
            ]
        );
        let mut doc = base();
        doc["spec"]["probes"][0]["markerPolicy"] =
            json!([{"state": "Succeeded", "labels": {"server-/$healthy": "true"}}]);
        assert_eq!(errors(doc).len(), 2);
        let mut doc = base();
        doc["spec"]["probes"][0]["name"] = json!("Initialized");
        assert_eq!(
            errors(doc),
            ["spec.probes: Invalid value: \"Initialized\": probe name can't be Initialized"]
        );
        let mut doc = base();
        doc["spec"]["probes"][0]["podConditionType"] = json!("#5invalid");
        assert_eq!(errors(doc).len(), 1);
        let mut doc = base();
        doc["spec"]["probes"][0]["name"] = json!("");
        assert_eq!(
            errors(doc),
            ["spec.probes: Invalid value: \"\": probe name can't be empty in PodProbeMarker."]
        );
        let mut doc = base();
        doc["spec"]["probes"][0]["containerName"] = json!("");
        assert_eq!(errors(doc).len(), 1);
    }

    #[test]
    fn handlers() {
        let check = |probe: serde_json::Value| {
            let probe: Probe = serde_json::from_value(probe).unwrap();
            validate_probe(&probe, &FieldPath::new("spec").child("probe"))
                .iter()
                .map(FieldError::to_string)
                .collect::<Vec<_>>()
        };
        assert!(check(json!({"tcpSocket": {"port": 8000}})).is_empty());
        assert!(check(json!({"tcpSocket": {"port": "container-port"}})).is_empty());
        assert_eq!(check(json!({})), ["spec.probe: Required value: must specify a handler type"]);
        assert_eq!(check(json!({"tcpSocket": {"port": "container-port-v2"}})).len(), 1);
        assert_eq!(check(json!({"tcpSocket": {"port": -1}})).len(), 1);
        assert_eq!(
            check(json!({"exec": {"command": ["a"]}, "tcpSocket": {"port": 1}})),
            ["spec.probe.tcpSocket: Forbidden: may not specify more than 1 handler type"]
        );
        let http = |extra: serde_json::Value| {
            let mut base = json!({"path": "/healthz", "port": 8080, "scheme": "HTTP"});
            for (k, v) in extra.as_object().unwrap() {
                base[k] = v.clone();
            }
            check(json!({"httpGet": base}))
        };
        assert!(http(json!({})).is_empty());
        assert_eq!(http(json!({"path": ""})), ["spec.probe.httpGet.path: Required value"]);
        assert_eq!(http(json!({"port": 65536})).len(), 1);
        assert_eq!(http(json!({"port": "invalid-port-name-!@#"})).len(), 2);
        assert_eq!(
            http(json!({"scheme": "FTP"})),
            [
                "spec.probe.httpGet.scheme: Unsupported value: \"FTP\": supported values: \"HTTP\", \"HTTPS\""
            ]
        );
        assert_eq!(
            http(json!({"httpHeaders": [{"name": "Invalid Header:Name", "value": "x"}]})).len(),
            1
        );
        assert_eq!(
            http(json!({"path": "", "port": 99999, "scheme": "FTP", "httpHeaders": [{"name": "a b", "value": ""}]})).len(),
            4
        );
        assert_eq!(http(json!({"path": "path%notvalid"})).len(), 1);
        assert_eq!(
            http(json!({"host": "127.0.0.1"})),
            [
                "spec.probe.httpGet.host: Invalid value: \"127.0.0.1\": host field in probes is not allowed"
            ]
        );
        assert_eq!(check(json!({"tcpSocket": {"port": 80, "host": "127.0.0.1"}})).len(), 1);
        assert_eq!(check(json!({"exec": {"command": ["a"]}, "periodSeconds": -1})).len(), 1);
    }

    #[test]
    fn selector_is_immutable() {
        let old: PodProbeMarker = serde_json::from_value(base()).unwrap();
        let mut doc = base();
        doc["spec"]["selector"] = json!({"matchLabels": {"app": "other"}});
        let new: PodProbeMarker = serde_json::from_value(doc).unwrap();
        let messages = validate_pod_probe_marker(&new, Some(&old)).messages();
        assert_eq!(messages.len(), 1);
        assert!(messages[0].starts_with("selector: Invalid value: "), "{messages:?}");
        assert!(messages[0].ends_with("selector must be immutable"), "{messages:?}");
        // Probes may change.
        let mut doc = base();
        doc["spec"]["probes"][0]["probe"] = json!({"tcpSocket": {"port": 80}});
        let new: PodProbeMarker = serde_json::from_value(doc).unwrap();
        assert!(validate_pod_probe_marker(&new, Some(&old)).is_empty());
    }
}
