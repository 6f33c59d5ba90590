//! What kube-apiserver 1.36 refuses in a `MutatingWebhookConfiguration` or
//! `ValidatingWebhookConfiguration` (admissionregistration.k8s.io/v1) at create and update, with
//! its field paths and messages (`pkg/apis/admissionregistration/validation`): webhook names
//! (fully qualified, unique), the enumerations, `sideEffects` (required; `None` or
//! `NoneOnDryRun` in v1), `timeoutSeconds`, `admissionReviewVersions`, the label selectors'
//! operators and values, one of `url` or `service`, and `matchConditions` (at most 64, unique
//! names, non-empty expressions).
//!
//! Not checked: label keys and values in selectors, webhook URLs and service paths, and the
//! compilation of match condition expressions.

use serde_json::{Value, json};

use crate::error::Cause;
use crate::util::check_subdomain;

fn strings(values: &[&str]) -> Vec<Value> {
    values.iter().map(|v| json!(v)).collect()
}

fn enumeration(causes: &mut Vec<Cause>, hook: &Value, path: &str, field: &str, allowed: &[&str]) {
    if let Some(value) = hook.get(field).filter(|v| !v.is_null())
        && !value.as_str().is_some_and(|v| allowed.contains(&v))
    {
        causes.push(Cause::not_supported(&format!("{path}.{field}"), value, &strings(allowed)));
    }
}

fn selector(causes: &mut Vec<Cause>, selector: Option<&Value>, path: &str) {
    let Some(expressions) =
        selector.and_then(|s| s.get("matchExpressions")).and_then(Value::as_array)
    else {
        return;
    };
    for (i, expression) in expressions.iter().enumerate() {
        let at = format!("{path}.matchExpressions[{i}]");
        let values = expression.get("values").and_then(Value::as_array).map_or(0, Vec::len);
        match expression.get("operator").and_then(Value::as_str).unwrap_or("") {
            "In" | "NotIn" if values == 0 => causes.push(Cause::required(
                &format!("{at}.values"),
                "must be specified when `operator` is 'In' or 'NotIn'",
            )),
            "Exists" | "DoesNotExist" if values > 0 => causes.push(Cause::forbidden(
                &format!("{at}.values"),
                "may not be specified when `operator` is 'Exists' or 'DoesNotExist'",
            )),
            "In" | "NotIn" | "Exists" | "DoesNotExist" => {}
            _ => causes.push(Cause::invalid(
                &format!("{at}.operator"),
                expression.get("operator").unwrap_or(&Value::Null),
                "not a valid selector operator",
            )),
        }
    }
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
        } else if !names.insert(name) {
            causes.push(Cause::duplicate(&format!("{at}[{i}].name"), &json!(name)));
        }
    }
}

/// The causes kube-apiserver would give for `config`, a webhook configuration (`mutating` or
/// validating); empty when it is accepted.
pub(crate) fn configuration(config: &Value, mutating: bool) -> Vec<Cause> {
    let mut causes = Vec::new();
    let hooks = config.get("webhooks").and_then(Value::as_array).map_or(&[][..], Vec::as_slice);
    let mut names = std::collections::HashSet::new();
    for (i, hook) in hooks.iter().enumerate() {
        let path = format!("webhooks[{i}]");
        let name = hook.get("name").and_then(Value::as_str).unwrap_or("");
        fully_qualified(&mut causes, name, &format!("{path}.name"));
        enumeration(&mut causes, hook, &path, "failurePolicy", &["Fail", "Ignore"]);
        enumeration(&mut causes, hook, &path, "matchPolicy", &["Equivalent", "Exact"]);
        let side_effects = ["None", "NoneOnDryRun"];
        if hook.get("sideEffects").is_none_or(Value::is_null) {
            causes.push(Cause::required(
                &format!("{path}.sideEffects"),
                "must specify one of None, NoneOnDryRun",
            ));
        } else {
            enumeration(&mut causes, hook, &path, "sideEffects", &side_effects);
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
        selector(&mut causes, hook.get("namespaceSelector"), &format!("{path}.namespaceSelector"));
        selector(&mut causes, hook.get("objectSelector"), &format!("{path}.objectSelector"));
        if mutating {
            enumeration(&mut causes, hook, &path, "reinvocationPolicy", &["IfNeeded", "Never"]);
        }
        let client = hook.get("clientConfig");
        let url = client.and_then(|c| c.get("url")).is_some_and(|u| !u.is_null());
        let service = client.and_then(|c| c.get("service")).is_some_and(|s| !s.is_null());
        if url == service {
            causes.push(Cause::required(
                &format!("{path}.clientConfig"),
                "exactly one of url or service is required",
            ));
        }
        match_conditions(&mut causes, hook, &path);
        let versions = hook.get("admissionReviewVersions").and_then(Value::as_array);
        if versions.is_none_or(Vec::is_empty) {
            causes.push(Cause::required(
                &format!("{path}.admissionReviewVersions"),
                "must specify one of v1, v1beta1",
            ));
        }
        if !name.is_empty() && !names.insert(name) {
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
        configuration(config, true).iter().map(|c| format!("{}: {}", c.field, c.message)).collect()
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
