//! What kube-apiserver 1.36 refuses in a `MutatingWebhookConfiguration` or
//! `ValidatingWebhookConfiguration` (admissionregistration.k8s.io/v1) at create and update, with
//! its field paths and messages (`pkg/apis/admissionregistration/validation`,
//! `k8s.io/apiserver/pkg/util/webhook` and `metav1validation.ValidateLabelSelector`): webhook
//! names (fully qualified, unique), `rules` (operations, API groups and versions, resources and
//! subresources, scope), the enumerations, `sideEffects` (required; `None` or `NoneOnDryRun` in
//! v1), `timeoutSeconds`, `admissionReviewVersions`, the label selectors (operators, values,
//! label keys and values), one of `url` (https, a host, no user information, fragment or query)
//! or `service` (name, namespace, port, path), and `matchConditions` (at most 64, qualified
//! unique names, non-empty expressions).
//!
//! On update the relaxations of `Validate*WebhookConfigurationUpdate` apply: a stored
//! configuration that already had duplicate names, side effects, no recognised review version
//! or invalid selector values keeps being accepted with them, and match conditions left as they
//! were are not checked again.
//!
//! Not checked: the compilation of match condition expressions (`cel-interpreter` parses a
//! different dialect than cel-go and would refuse expressions kube-apiserver accepts, and its
//! errors are not cel-go's), and `url.Parse` errors on malformed URLs.

use serde_json::{Value, json};

use crate::error::Cause;
use crate::meta_validation::{
    is_dns1035_label, is_dns1123_subdomain, is_label_value, is_qualified_name,
};
use crate::util::check_subdomain;

fn strings(values: &[&str]) -> Vec<Value> {
    values.iter().map(|v| json!(v)).collect()
}

/// `field.Invalid` with a value Go prints with `%#v`: a slice as `[]T{"a", "b"}`.
fn invalid_list(field: &str, go_type: &str, values: &[Value], detail: &str) -> Cause {
    let shown: Vec<String> = values.iter().map(crate::error::go_value).collect();
    Cause {
        reason: "FieldValueInvalid".into(),
        message: format!("Invalid value: []{go_type}{{{}}}: {detail}", shown.join(", ")),
        field: field.into(),
    }
}

fn enumeration(causes: &mut Vec<Cause>, hook: &Value, path: &str, field: &str, allowed: &[&str]) {
    if let Some(value) = hook.get(field).filter(|v| !v.is_null())
        && !value.as_str().is_some_and(|v| allowed.contains(&v))
    {
        causes.push(Cause::not_supported(&format!("{path}.{field}"), value, &strings(allowed)));
    }
}

fn list<'a>(value: &'a Value, field: &str) -> &'a [Value] {
    value.get(field).and_then(Value::as_array).map_or(&[][..], Vec::as_slice)
}

fn has_wildcard(values: &[Value]) -> bool {
    values.iter().any(|v| v.as_str() == Some("*"))
}

/// `metav1validation.ValidateLabelSelector`.
fn selector(causes: &mut Vec<Cause>, selector: Option<&Value>, path: &str, allow_bad_values: bool) {
    let Some(selector) = selector.filter(|s| !s.is_null()) else {
        return;
    };
    if let Some(labels) = selector.get("matchLabels").and_then(Value::as_object) {
        let at = format!("{path}.matchLabels");
        let mut keys: Vec<&String> = labels.keys().collect();
        keys.sort();
        for key in keys {
            for message in is_qualified_name(key) {
                causes.push(Cause::invalid(&at, &json!(key), &message));
            }
            let value = labels[key].as_str().unwrap_or("");
            for message in is_label_value(value) {
                causes.push(Cause::invalid(&at, &json!(value), &message));
            }
        }
    }
    for (i, expression) in list(selector, "matchExpressions").iter().enumerate() {
        let at = format!("{path}.matchExpressions[{i}]");
        let values = list(expression, "values");
        match expression.get("operator").and_then(Value::as_str).unwrap_or("") {
            "In" | "NotIn" if values.is_empty() => causes.push(Cause::required(
                &format!("{at}.values"),
                "must be specified when `operator` is 'In' or 'NotIn'",
            )),
            "Exists" | "DoesNotExist" if !values.is_empty() => causes.push(Cause::forbidden(
                &format!("{at}.values"),
                "may not be specified when `operator` is 'Exists' or 'DoesNotExist'",
            )),
            "In" | "NotIn" | "Exists" | "DoesNotExist" => {}
            _ => causes.push(Cause::invalid(
                &format!("{at}.operator"),
                &json!(expression.get("operator").and_then(Value::as_str).unwrap_or("")),
                "not a valid selector operator",
            )),
        }
        let key = expression.get("key").and_then(Value::as_str).unwrap_or("");
        for message in is_qualified_name(key) {
            causes.push(Cause::invalid(&format!("{at}.key"), &json!(key), &message));
        }
        if !allow_bad_values {
            for (j, value) in values.iter().enumerate() {
                let value = value.as_str().unwrap_or("");
                for message in is_label_value(value) {
                    causes.push(Cause::invalid(
                        &format!("{at}.values[{j}]"),
                        &json!(value),
                        &message,
                    ));
                }
            }
        }
    }
}

fn selector_is_invalid(selector: Option<&Value>) -> bool {
    let mut causes = Vec::new();
    self::selector(&mut causes, selector, "", false);
    !causes.is_empty()
}

fn fully_qualified(causes: &mut Vec<Cause>, name: &str, path: &str) {
    if name.is_empty() {
        causes.push(Cause::required(path, ""));
    } else if let Err(message) = check_subdomain(name) {
        causes.push(Cause::invalid(path, &json!(name), &message));
    } else if name.split('.').count() < 3 {
        causes.push(Cause::invalid(
            path,
            &json!(name),
            "should be a domain with at least three segments separated by dots",
        ));
    }
}

/// `validateResources`: resources with subresources allowed.
fn resources(causes: &mut Vec<Cause>, resources: &[Value], path: &str) {
    if resources.is_empty() {
        causes.push(Cause::required(path, ""));
    }
    let mut wildcard_subresources = std::collections::HashSet::new();
    let mut wildcard_resources = std::collections::HashSet::new();
    let (mut double, mut single, mut without_subresource) = (false, false, false);
    for (i, value) in resources.iter().enumerate() {
        let resource = value.as_str().unwrap_or("");
        let at = format!("{path}[{i}]");
        if resource.is_empty() {
            causes.push(Cause::required(&at, ""));
            continue;
        }
        double |= resource == "*/*";
        single |= resource == "*";
        let Some((res, sub)) = resource.split_once('/') else {
            without_subresource = resource != "*";
            continue;
        };
        if wildcard_subresources.contains(res) {
            causes.push(Cause::invalid(
                &at,
                &json!(resource),
                &format!("if '{res}/*' is present, must not specify {resource}"),
            ));
        }
        if wildcard_resources.contains(sub) {
            causes.push(Cause::invalid(
                &at,
                &json!(resource),
                &format!("if '*/{sub}' is present, must not specify {resource}"),
            ));
        }
        if sub == "*" {
            wildcard_subresources.insert(res);
        }
        if res == "*" {
            wildcard_resources.insert(sub);
        }
    }
    if resources.len() > 1 && double {
        causes.push(invalid_list(
            path,
            "string",
            resources,
            "if '*/*' is present, must not specify other resources",
        ));
    }
    if single && without_subresource {
        causes.push(invalid_list(
            path,
            "string",
            resources,
            "if '*' is present, must not specify other resources without subresources",
        ));
    }
}

/// `validateRuleWithOperations`.
fn rule(causes: &mut Vec<Cause>, rule: &Value, path: &str) {
    let operations = list(rule, "operations");
    let at = format!("{path}.operations");
    if operations.is_empty() {
        causes.push(Cause::required(&at, ""));
    }
    if operations.len() > 1 && has_wildcard(operations) {
        causes.push(invalid_list(
            &at,
            "admissionregistration.OperationType",
            operations,
            "if '*' is present, must not specify other operations",
        ));
    }
    let supported = ["*", "CONNECT", "CREATE", "DELETE", "UPDATE"];
    for (i, operation) in operations.iter().enumerate() {
        if !operation.as_str().is_some_and(|o| supported.contains(&o)) {
            causes.push(Cause::not_supported(
                &format!("{at}[{i}]"),
                operation,
                &strings(&supported),
            ));
        }
    }
    let groups = list(rule, "apiGroups");
    if groups.is_empty() {
        causes.push(Cause::required(&format!("{path}.apiGroups"), ""));
    }
    if groups.len() > 1 && has_wildcard(groups) {
        causes.push(invalid_list(
            &format!("{path}.apiGroups"),
            "string",
            groups,
            "if '*' is present, must not specify other API groups",
        ));
    }
    let versions = list(rule, "apiVersions");
    if versions.is_empty() {
        causes.push(Cause::required(&format!("{path}.apiVersions"), ""));
    }
    if versions.len() > 1 && has_wildcard(versions) {
        causes.push(invalid_list(
            &format!("{path}.apiVersions"),
            "string",
            versions,
            "if '*' is present, must not specify other API versions",
        ));
    }
    for (i, version) in versions.iter().enumerate() {
        if version.as_str().unwrap_or("").is_empty() {
            causes.push(Cause::required(&format!("{path}.apiVersions[{i}]"), ""));
        }
    }
    resources(causes, list(rule, "resources"), &format!("{path}.resources"));
    enumeration(causes, rule, path, "scope", &["*", "Cluster", "Namespaced"]);
}

/// `webhook.ValidateWebhookURL` with `forceHttps`. A URL Go's `url.Parse` refuses is not
/// refused here.
fn webhook_url(causes: &mut Vec<Cause>, url: &str, path: &str) {
    const FORM: &str = "; desired format: https://host[/path]";
    let (rest, fragment) = url.split_once('#').unwrap_or((url, ""));
    // `getScheme`: a letter, then letters, digits, '+', '-' or '.', up to the first ':'.
    let (scheme, rest) = match rest.split_once(':') {
        Some((scheme, after))
            if scheme.starts_with(|c: char| c.is_ascii_alphabetic())
                && scheme.chars().all(|c| c.is_ascii_alphanumeric() || "+-.".contains(c)) =>
        {
            (scheme.to_ascii_lowercase(), after)
        }
        _ => (String::new(), rest),
    };
    let (rest, query) = rest.split_once('?').unwrap_or((rest, ""));
    let (user, host) = match rest.strip_prefix("//") {
        Some(after) => {
            let authority = after.split('/').next().unwrap_or("");
            match authority.rsplit_once('@') {
                Some((user, host)) => (Some(user), host),
                None => (None, authority),
            }
        }
        None => (None, ""),
    };
    if scheme != "https" {
        causes.push(Cause::invalid(
            path,
            &json!(scheme),
            &format!("'https' is the only allowed URL scheme{FORM}"),
        ));
    }
    if host.is_empty() {
        causes.push(Cause::invalid(path, &json!(""), &format!("host must be provided{FORM}")));
    }
    if let Some(user) = user {
        causes.push(Cause::invalid(
            path,
            &json!(user),
            "user information is not permitted in the URL",
        ));
    }
    if !fragment.is_empty() {
        causes.push(Cause::invalid(
            path,
            &json!(fragment),
            "fragments are not permitted in the URL",
        ));
    }
    if !query.is_empty() {
        causes.push(Cause::invalid(
            path,
            &json!(query),
            "query parameters are not permitted in the URL",
        ));
    }
}

/// `webhook.ValidateWebhookService`; the port defaults to 443 in v1.
fn webhook_service(causes: &mut Vec<Cause>, service: &Value, path: &str) {
    if service.get("name").and_then(Value::as_str).unwrap_or("").is_empty() {
        causes.push(Cause::required(&format!("{path}.name"), "service name is required"));
    }
    if service.get("namespace").and_then(Value::as_str).unwrap_or("").is_empty() {
        causes.push(Cause::required(&format!("{path}.namespace"), "service namespace is required"));
    }
    if let Some(port) = service.get("port").and_then(Value::as_i64)
        && !(1..=65535).contains(&port)
    {
        causes.push(Cause::invalid(
            &format!("{path}.port"),
            &json!(port),
            "port is not valid: must be between 1 and 65535, inclusive",
        ));
    }
    let Some(url_path) = service.get("path").and_then(Value::as_str) else {
        return;
    };
    let at = format!("{path}.path");
    if url_path.is_empty() || url_path == "/" {
        return;
    }
    if url_path == "//" {
        causes.push(Cause::invalid(&at, &json!(url_path), "segment[0] may not be empty"));
        return;
    }
    if !url_path.starts_with('/') {
        causes.push(Cause::invalid(&at, &json!(url_path), "must start with a '/'"));
    }
    // Go drops the first byte whatever it is.
    let mut check = url_path.get(1..).unwrap_or("");
    check = check.strip_suffix('/').unwrap_or(check);
    for (i, step) in check.split('/').enumerate() {
        if step.is_empty() {
            causes.push(Cause::invalid(
                &at,
                &json!(url_path),
                &format!("segment[{i}] may not be empty"),
            ));
            continue;
        }
        for failure in is_dns1123_subdomain(step) {
            causes.push(Cause::invalid(&at, &json!(url_path), &format!("segment[{i}]: {failure}")));
        }
    }
}

fn match_conditions(causes: &mut Vec<Cause>, hook: &Value, path: &str) {
    let Some(conditions) = hook.get("matchConditions").and_then(Value::as_array) else {
        return;
    };
    let at = format!("{path}.matchConditions");
    if conditions.len() > 64 {
        causes.push(Cause::too_many(&at, conditions.len(), 64));
    }
    let mut names = std::collections::HashSet::new();
    for (i, condition) in conditions.iter().enumerate() {
        let expression = condition.get("expression").and_then(Value::as_str).unwrap_or("");
        if expression.trim().is_empty() {
            causes.push(Cause::required(&format!("{at}[{i}].expression"), ""));
        }
        let name = condition.get("name").and_then(Value::as_str).unwrap_or("");
        if name.is_empty() {
            causes.push(Cause::required(&format!("{at}[{i}].name"), ""));
        } else {
            for message in is_qualified_name(name) {
                causes.push(Cause::invalid(&format!("{at}[{i}].name"), &json!(name), &message));
            }
            if !names.insert(name) {
                causes.push(Cause::duplicate(&format!("{at}[{i}].name"), &json!(name)));
            }
        }
    }
}

/// `validateAdmissionReviewVersions`.
fn review_versions(causes: &mut Vec<Cause>, hook: &Value, path: &str, require_known: bool) {
    let at = format!("{path}.admissionReviewVersions");
    let versions = list(hook, "admissionReviewVersions");
    if versions.is_empty() {
        causes.push(Cause::required(&at, "must specify one of v1, v1beta1"));
        return;
    }
    let mut seen = std::collections::HashSet::new();
    for (i, version) in versions.iter().enumerate() {
        let version = version.as_str().unwrap_or("");
        if !seen.insert(version) {
            causes.push(Cause::invalid(
                &format!("{at}[{i}]"),
                &json!(version),
                "duplicate version",
            ));
            continue;
        }
        for message in is_dns1035_label(version) {
            causes.push(Cause::invalid(&format!("{at}[{i}]"), &json!(version), &message));
        }
    }
    if require_known && !versions.iter().any(known_version) {
        causes.push(invalid_list(
            &at,
            "string",
            versions,
            "must include at least one of v1, v1beta1",
        ));
    }
}

fn known_version(version: &Value) -> bool {
    matches!(version.as_str(), Some("v1" | "v1beta1"))
}

/// What `Validate*WebhookConfigurationUpdate` relaxes because the stored configuration had it.
struct Options {
    /// Side effects other than `None` and `NoneOnDryRun` stay allowed.
    side_effects: bool,
    require_known_versions: bool,
    require_unique_names: bool,
    allow_bad_selector_values: bool,
    /// The match conditions are as stored: not checked again.
    ignore_match_conditions: bool,
}

impl Options {
    fn new(config: &Value, old: Option<&Value>) -> Self {
        let Some(old) = old else {
            return Options {
                side_effects: false,
                require_known_versions: true,
                require_unique_names: true,
                allow_bad_selector_values: false,
                ignore_match_conditions: false,
            };
        };
        let hooks = list(old, "webhooks");
        let new_hooks = list(config, "webhooks");
        let mut names = std::collections::HashSet::new();
        Options {
            side_effects: !hooks.iter().all(|h| {
                matches!(
                    h.get("sideEffects").and_then(Value::as_str),
                    Some("None" | "NoneOnDryRun")
                )
            }),
            require_known_versions: hooks.iter().all(|h| {
                let versions = list(h, "admissionReviewVersions");
                versions.is_empty() || versions.iter().any(known_version)
            }),
            require_unique_names: hooks
                .iter()
                .all(|h| names.insert(h.get("name").and_then(Value::as_str).unwrap_or(""))),
            allow_bad_selector_values: hooks.iter().any(|h| {
                selector_is_invalid(h.get("namespaceSelector"))
                    || selector_is_invalid(h.get("objectSelector"))
            }),
            ignore_match_conditions: hooks.len() == new_hooks.len()
                && hooks.iter().zip(new_hooks).all(|(o, n)| {
                    let conditions = |h: &Value| list(h, "matchConditions").to_vec();
                    conditions(o) == conditions(n)
                }),
        }
    }
}

/// The causes kube-apiserver would give for `config`, a webhook configuration (`mutating` or
/// validating) created (`old` is `None`) or replacing `old`; empty when it is accepted.
pub(crate) fn configuration(config: &Value, old: Option<&Value>, mutating: bool) -> Vec<Cause> {
    let options = Options::new(config, old);
    let mut causes = Vec::new();
    let mut names = std::collections::HashSet::new();
    for (i, hook) in list(config, "webhooks").iter().enumerate() {
        let path = format!("webhooks[{i}]");
        let name = hook.get("name").and_then(Value::as_str).unwrap_or("");
        fully_qualified(&mut causes, name, &format!("{path}.name"));
        for (j, r) in list(hook, "rules").iter().enumerate() {
            rule(&mut causes, r, &format!("{path}.rules[{j}]"));
        }
        enumeration(&mut causes, hook, &path, "failurePolicy", &["Fail", "Ignore"]);
        enumeration(&mut causes, hook, &path, "matchPolicy", &["Equivalent", "Exact"]);
        let side_effects: &[&str] = if options.side_effects {
            &["None", "NoneOnDryRun", "Some", "Unknown"]
        } else {
            &["None", "NoneOnDryRun"]
        };
        if hook.get("sideEffects").is_none_or(Value::is_null) {
            causes.push(Cause::required(
                &format!("{path}.sideEffects"),
                &format!("must specify one of {}", side_effects.join(", ")),
            ));
        } else {
            enumeration(&mut causes, hook, &path, "sideEffects", side_effects);
        }
        if let Some(timeout) = hook.get("timeoutSeconds").and_then(Value::as_i64)
            && !(1..=30).contains(&timeout)
        {
            causes.push(Cause::invalid(
                &format!("{path}.timeoutSeconds"),
                &json!(timeout),
                "the timeout value must be between 1 and 30 seconds",
            ));
        }
        let bad_values = options.allow_bad_selector_values;
        for field in ["namespaceSelector", "objectSelector"] {
            selector(&mut causes, hook.get(field), &format!("{path}.{field}"), bad_values);
        }
        if mutating {
            enumeration(&mut causes, hook, &path, "reinvocationPolicy", &["IfNeeded", "Never"]);
        }
        let client = hook.get("clientConfig");
        let url = client.and_then(|c| c.get("url")).filter(|u| !u.is_null());
        let service = client.and_then(|c| c.get("service")).filter(|s| !s.is_null());
        let client_path = format!("{path}.clientConfig");
        match (url, service) {
            (Some(url), None) => {
                webhook_url(&mut causes, url.as_str().unwrap_or(""), &format!("{client_path}.url"))
            }
            (None, Some(service)) => {
                webhook_service(&mut causes, service, &format!("{client_path}.service"))
            }
            _ => causes
                .push(Cause::required(&client_path, "exactly one of url or service is required")),
        }
        if !options.ignore_match_conditions {
            match_conditions(&mut causes, hook, &path);
        }
        review_versions(&mut causes, hook, &path, options.require_known_versions);
        if options.require_unique_names && !name.is_empty() && !names.insert(name) {
            causes.push(Cause::duplicate(&format!("{path}.name"), &json!(name)));
        }
    }
    causes
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hook(name: &str) -> Value {
        json!({"name": name, "sideEffects": "None", "admissionReviewVersions": ["v1"],
               "clientConfig": {"url": "https://127.0.0.1:9443/mutate-pod"}})
    }

    fn messages(config: &Value) -> Vec<String> {
        configuration(config, None, true)
            .iter()
            .map(|c| format!("{}: {}", c.field, c.message))
            .collect()
    }

    #[test]
    fn a_good_configuration_passes_and_bad_ones_name_the_field() {
        assert!(messages(&json!({"webhooks": [hook("a.b.c"), hook("d.b.c")]})).is_empty());
        assert_eq!(
            messages(&json!({"webhooks": [hook("a.b.c"), hook("a.b.c")]})),
            [r#"webhooks[1].name: Duplicate value: "a.b.c""#]
        );
        assert_eq!(
            messages(&json!({"webhooks": [hook("mpod.kb")]})),
            [
                r#"webhooks[0].name: Invalid value: "mpod.kb": should be a domain with at least three segments separated by dots"#
            ]
        );
        let mut bad = hook("a.b.c");
        bad["failurePolicy"] = json!("Sometimes");
        bad["timeoutSeconds"] = json!(31);
        bad["objectSelector"] = json!({"matchExpressions": [{"key": "app", "operator": "In"}]});
        bad["sideEffects"] = Value::Null;
        assert_eq!(
            messages(&json!({"webhooks": [bad]})),
            [
                r#"webhooks[0].failurePolicy: Unsupported value: "Sometimes": supported values: "Fail", "Ignore""#,
                "webhooks[0].sideEffects: Required value: must specify one of None, NoneOnDryRun",
                "webhooks[0].timeoutSeconds: Invalid value: 31: the timeout value must be between 1 and 30 seconds",
                "webhooks[0].objectSelector.matchExpressions[0].values: Required value: must be specified when `operator` is 'In' or 'NotIn'",
            ]
        );
        let mut many = hook("a.b.c");
        many["matchConditions"] = Value::Array(
            (0..65).map(|i| json!({"name": format!("c{i}"), "expression": "true"})).collect(),
        );
        assert_eq!(
            messages(&json!({"webhooks": [many]})),
            ["webhooks[0].matchConditions: Too many: 65: must have at most 64 items"]
        );
    }

    /// `Validate*WebhookConfigurationUpdate`: what the stored configuration already had stays
    /// accepted; what it did not have is refused.
    #[test]
    fn updates_keep_what_was_stored() {
        let update = |config: &Value, old: &Value| -> Vec<String> {
            configuration(config, Some(old), false)
                .iter()
                .map(|c| format!("{}: {}", c.field, c.message))
                .collect()
        };
        let mut bad = hook("a.b.c");
        bad["sideEffects"] = json!("Some");
        bad["admissionReviewVersions"] = json!(["v2"]);
        bad["objectSelector"] =
            json!({"matchExpressions": [{"key": "a", "operator": "In", "values": ["bad value!"]}]});
        bad["matchConditions"] = json!([{"name": "bad name!", "expression": "true"}]);
        let stored = json!({"webhooks": [bad.clone(), hook("a.b.c")]});
        assert!(update(&stored, &stored).is_empty(), "{:?}", update(&stored, &stored));
        let good = json!({"webhooks": [hook("a.b.c")]});
        let changed = update(&stored, &good);
        assert_eq!(changed.len(), 5, "{changed:?}");
        assert!(changed[0].starts_with(
            r#"webhooks[0].sideEffects: Unsupported value: "Some": supported values: "None", "NoneOnDryRun""#
        ));
        assert_eq!(changed[4], r#"webhooks[1].name: Duplicate value: "a.b.c""#);
        // Changed match conditions are checked again.
        let mut renamed = bad;
        renamed["matchConditions"] = json!([{"name": "worse name!", "expression": "true"}]);
        let again = update(&json!({"webhooks": [renamed, hook("a.b.c")]}), &stored);
        assert_eq!(again.len(), 1, "{again:?}");
        assert!(
            again[0].starts_with(
                r#"webhooks[0].matchConditions[0].name: Invalid value: "worse name!""#
            )
        );
    }

    /// The configuration and answer are what kube-apiserver 1.36.2 (`../shared/realk8s`)
    /// gave to `kubectl create`.
    #[test]
    fn refusals_are_the_real_servers() {
        let config: Value = serde_json::from_str(CONFIG).expect("json");
        assert_eq!(
            messages(&config),
            [
                r#"webhooks[0].failurePolicy: Unsupported value: "Sometimes": supported values: "Fail", "Ignore""#,
                "webhooks[0].timeoutSeconds: Invalid value: 31: the timeout value must be between 1 and 30 seconds",
                "webhooks[0].objectSelector.matchExpressions[0].values: Required value: must be specified when `operator` is 'In' or 'NotIn'",
                r#"webhooks[1].name: Duplicate value: "a.b.c""#,
                r#"webhooks[2].name: Invalid value: "mpod.kb": should be a domain with at least three segments separated by dots"#,
                "webhooks[2].namespaceSelector.matchExpressions[0].values: Forbidden: may not be specified when `operator` is 'Exists' or 'DoesNotExist'",
                r#"webhooks[2].namespaceSelector.matchExpressions[1].operator: Invalid value: "Near": not a valid selector operator"#,
            ]
        );
    }

    const CONFIG: &str = r#"{"apiVersion":"admissionregistration.k8s.io/v1","kind":"MutatingWebhookConfiguration","metadata":{"name":"bad-one"},
 "webhooks":[
  {"name":"a.b.c","sideEffects":"None","admissionReviewVersions":["v1"],"clientConfig":{"url":"https://127.0.0.1:9443/x"},
   "failurePolicy":"Sometimes","timeoutSeconds":31,"objectSelector":{"matchExpressions":[{"key":"app","operator":"In"}]}},
  {"name":"a.b.c","admissionReviewVersions":["v1"],"clientConfig":{"url":"https://127.0.0.1:9443/x"},"sideEffects":"None"},
  {"name":"mpod.kb","sideEffects":"None","admissionReviewVersions":["v1"],"clientConfig":{"url":"https://127.0.0.1:9443/x"},
   "namespaceSelector":{"matchExpressions":[{"key":"app","operator":"Exists","values":["x"]},{"key":"app","operator":"Near"}]}}
 ]}"#;
}
