//! Validation of pod specs, as kube-apiserver validates a pod, and the pod template of a
//! built-in workload, before storing it: kruise-core's port of `ValidatePodSpec`
//! ([`kruise_core::admission::pod_template::validate_pod_spec`], which the Kruise webhooks use
//! for templates too), its errors turned into causes with Go's paths, messages and order; and
//! the pod update rules ([`pod_update`]).
//!
//! Differences from kube-apiserver: a bare pod gets no checks of its own beyond the template's
//! (an image with surrounding spaces, ephemeral containers on create); where Go walks a map
//! (resources, node selector) the errors come in key order here, in random order there; and
//! what kruise-core does not cover (see its module documentation) is accepted.

use std::collections::BTreeSet;

use k8s_openapi::api::core::v1::PodSpec;
use kruise_core::field::{FieldError, FieldErrorKind, FieldPath};
use serde_json::Value;

use crate::error::Cause;

/// The causes for the pod spec at `path` (`spec`, or `spec.template.spec`), in the real
/// server's order; empty when it passes. A spec whose values do not fit their Go types was
/// refused when the body was decoded; one that still does not decode is not judged here.
pub(crate) fn pod_spec(spec: Option<&Value>, path: &str) -> Vec<Cause> {
    let mut parts = path.split('.');
    let mut field = FieldPath::new(parts.next().unwrap_or_default());
    for part in parts {
        field = field.child(part);
    }
    let spec = match spec.filter(|s| !s.is_null()) {
        Some(spec) => match serde_json::from_value::<PodSpec>(spec.clone()) {
            Ok(spec) => spec,
            Err(_) => return Vec::new(),
        },
        None => PodSpec::default(),
    };
    kruise_core::admission::pod_template::validate_pod_spec(&spec, &field)
        .iter()
        .map(cause_of)
        .collect()
}

/// A kruise-core field error as a cause of a 422.
fn cause_of(error: &FieldError) -> Cause {
    let reason = match error.kind {
        FieldErrorKind::Required => "FieldValueRequired",
        FieldErrorKind::Invalid => "FieldValueInvalid",
        FieldErrorKind::Forbidden => "FieldValueForbidden",
        FieldErrorKind::NotSupported { .. } => "FieldValueNotSupported",
        FieldErrorKind::Duplicate => "FieldValueDuplicate",
        FieldErrorKind::NotFound => "FieldValueNotFound",
        FieldErrorKind::TooLong => "FieldValueTooLong",
        FieldErrorKind::TooMany => "FieldValueTooMany",
        FieldErrorKind::Internal => "InternalError",
        _ => "FieldValueInvalid",
    };
    Cause { reason: reason.into(), message: error.body(), field: error.path.to_string() }
}

/// What kube-apiserver says when a pod update changes more than it may (before its diff).
const POD_UPDATE_FORBIDDEN: &str = "pod updates may not change fields other than `spec.containers[*].image`,`spec.initContainers[*].image`,`spec.activeDeadlineSeconds`,`spec.tolerations` (only additions to existing tolerations),`spec.terminationGracePeriodSeconds` (allow it to be set to 1 if it was previously negative)";

/// The causes for updating the pod `old` to `new` through the pod itself (not `resize`,
/// `status`, `binding` or `ephemeralcontainers`), as kube-apiserver's pod update validation
/// finds them: containers may not be added or removed, and only the images, the active
/// deadline, added tolerations and a negative grace period set to 1 may change.
///
/// Where kube-apiserver appends a diff of the two specs to the message, this lists the
/// changed fields, one per line.
pub(crate) fn pod_update(old: &Value, new: &Value) -> Vec<Cause> {
    let null = Value::Null;
    let (before, after) = (old.get("spec").unwrap_or(&null), new.get("spec").unwrap_or(&null));
    let count =
        |spec: &Value, list: &str| spec.get(list).and_then(Value::as_array).map_or(0, Vec::len);
    let mut causes = Vec::new();
    for list in ["containers", "initContainers"] {
        if count(before, list) != count(after, list) {
            causes.push(Cause::forbidden(
                &format!("spec.{list}"),
                "pod updates may not add or remove containers",
            ));
        }
    }
    if !causes.is_empty() {
        return causes;
    }
    // The new spec with every change that is allowed undone: what is left must be the old.
    let mut masked = after.clone();
    for list in ["containers", "initContainers"] {
        let old_images: Vec<Value> = before
            .get(list)
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .map(|c| c.get("image").cloned().unwrap_or(Value::Null))
            .collect();
        for (container, image) in
            masked.get_mut(list).and_then(Value::as_array_mut).into_iter().flatten().zip(old_images)
        {
            if let Some(container) = container.as_object_mut() {
                container.insert("image".into(), image);
            }
        }
    }
    let Some(fields) = masked.as_object_mut() else { return causes };
    let restore = |fields: &mut serde_json::Map<String, Value>, key: &str| match before.get(key) {
        Some(value) => {
            fields.insert(key.into(), value.clone());
        }
        None => {
            fields.remove(key);
        }
    };
    // An active deadline may be set or shortened, not removed.
    let deadline_ok =
        match (before.get("activeDeadlineSeconds"), after.get("activeDeadlineSeconds")) {
            (_, Some(new)) if new.is_i64() => before
                .get("activeDeadlineSeconds")
                .and_then(Value::as_i64)
                .is_none_or(|old| new.as_i64().is_some_and(|new| new <= old)),
            (None | Some(Value::Null), None | Some(Value::Null)) => true,
            _ => false,
        };
    if deadline_ok {
        restore(fields, "activeDeadlineSeconds");
    }
    // Tolerations may be added; an existing one may change only its tolerationSeconds.
    let tolerations = |spec: &Value| -> Vec<Value> {
        let without_seconds = |t: &Value| {
            let mut t = t.clone();
            if let Some(t) = t.as_object_mut() {
                t.remove("tolerationSeconds");
            }
            t
        };
        spec.get("tolerations")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .map(without_seconds)
            .collect()
    };
    let (old_tolerations, new_tolerations) = (tolerations(before), tolerations(after));
    if old_tolerations.iter().all(|t| new_tolerations.contains(t)) {
        restore(fields, "tolerations");
    } else {
        causes.push(Cause::forbidden(
            "spec.tolerations",
            "existing toleration can not be modified except its tolerationSeconds",
        ));
        restore(fields, "tolerations");
    }
    let grace = |spec: &Value| spec.get("terminationGracePeriodSeconds").and_then(Value::as_i64);
    if grace(before).is_some_and(|g| g < 0) && grace(after) == Some(1) {
        restore(fields, "terminationGracePeriodSeconds");
    }
    // Scheduling gates may be removed; ephemeral containers change through their subresource.
    let gates = |spec: &Value| {
        spec.get("schedulingGates").and_then(Value::as_array).cloned().unwrap_or_default()
    };
    if gates(after).iter().all(|g| gates(before).contains(g)) {
        restore(fields, "schedulingGates");
    }
    let mut changed = Vec::new();
    differences(&normalized(before), &normalized(&masked), "spec", &mut changed);
    if !changed.is_empty() {
        // kube-apiserver's diff of the internal specs; where a spec holds what that rendering
        // does not describe, the changed paths, one per line.
        let detail = crate::pod_diff::spec_diff(before, &masked)
            .unwrap_or_else(|| format!("{}\n", changed.join("\n")));
        causes.push(Cause::forbidden("spec", &format!("{POD_UPDATE_FORBIDDEN}\n{detail}")));
    }
    causes
}

/// `v` without nulls, empty lists and empty maps (which the Go types cannot tell from unset).
fn normalized(v: &Value) -> Value {
    match v {
        Value::Object(m) => Value::Object(
            m.iter()
                .map(|(k, v)| (k.clone(), normalized(v)))
                .filter(|(_, v)| !is_empty(v))
                .collect(),
        ),
        Value::Array(a) => Value::Array(a.iter().map(normalized).collect()),
        other => other.clone(),
    }
}

fn is_empty(v: &Value) -> bool {
    match v {
        Value::Null => true,
        Value::Array(a) => a.is_empty(),
        Value::Object(m) => m.is_empty(),
        _ => false,
    }
}

/// The paths where `a` and `b` differ, as `  spec.containers[0].env: changed`.
fn differences(a: &Value, b: &Value, path: &str, out: &mut Vec<String>) {
    match (a, b) {
        (Value::Object(x), Value::Object(y)) => {
            let keys: BTreeSet<&String> = x.keys().chain(y.keys()).collect();
            for key in keys {
                let (left, right) =
                    (x.get(key).unwrap_or(&Value::Null), y.get(key).unwrap_or(&Value::Null));
                differences(left, right, &format!("{path}.{key}"), out);
            }
        }
        (Value::Array(x), Value::Array(y)) if x.len() == y.len() => {
            for (i, (left, right)) in x.iter().zip(y).enumerate() {
                differences(left, right, &format!("{path}[{i}]"), out);
            }
        }
        _ if a != b => out.push(format!("  {path}: changed")),
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// The causes for a pod of `spec`, defaulted first as kube-apiserver defaults it.
    fn messages(spec: Value) -> Vec<String> {
        let mut pod =
            json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"}, "spec": spec});
        crate::defaults::apply("", "pods", &mut pod);
        pod_spec(pod.get("spec"), "spec")
            .iter()
            .map(|c| format!("{}: {}", c.field, c.message))
            .collect()
    }

    #[test]
    fn container_names_are_unique_across_containers_and_init_containers() {
        let spec = json!({
            "containers": [{"name": "a", "image": "x"}, {"name": "a", "image": "x"}],
            "initContainers": [{"name": "a", "image": "x"}],
        });
        assert_eq!(
            messages(spec),
            [
                r#"spec.containers[1].name: Duplicate value: "a""#,
                r#"spec.initContainers[0].name: Duplicate value: "a""#,
            ]
        );
    }

    #[test]
    fn volumes_ports_and_mounts_name_their_fields() {
        let spec = json!({
            "volumes": [{"name": "data"}, {"name": "data"}],
            "restartPolicy": "Sometimes",
            "containers": [{
                "name": "Main",
                "ports": [{"name": "http", "containerPort": 80}, {"name": "http", "containerPort": 70000}, {}],
                "volumeMounts": [{"name": "data", "mountPath": "/d"}, {"name": "logs"}],
            }],
        });
        assert_eq!(
            messages(spec),
            [
                r#"spec.volumes[1].name: Duplicate value: "data""#,
                r#"spec.containers[0].name: Invalid value: "Main": a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')"#,
                "spec.containers[0].image: Required value",
                r#"spec.containers[0].ports[1].name: Duplicate value: "http""#,
                "spec.containers[0].ports[1].containerPort: Invalid value: 70000: must be between 1 and 65535, inclusive",
                "spec.containers[0].ports[2].containerPort: Required value",
                r#"spec.containers[0].volumeMounts[1].name: Not found: "logs""#,
                "spec.containers[0].volumeMounts[1].mountPath: Required value",
                r#"spec.restartPolicy: Unsupported value: "Sometimes": supported values: "Always", "OnFailure", "Never""#,
            ]
        );
    }

    #[test]
    fn pod_updates_change_only_what_kubernetes_lets_change() {
        let old = json!({"spec": {
            "containers": [{"name": "a", "image": "x:1", "env": [{"name": "E", "value": "1"}]}],
            "tolerations": [{"key": "k", "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 300}],
            "activeDeadlineSeconds": 100,
        }});
        let with = |f: &dyn Fn(&mut Value)| {
            let mut new = old.clone();
            f(&mut new);
            pod_update(&old, &new)
                .iter()
                .map(|c| format!("{}: {}", c.field, c.message))
                .collect::<Vec<_>>()
        };
        // Allowed: the image, a shorter deadline, an added toleration, new seconds on one.
        assert!(
            with(&|p| {
                p["spec"]["containers"][0]["image"] = json!("x:2");
                p["spec"]["activeDeadlineSeconds"] = json!(50);
                p["spec"]["tolerations"][0]["tolerationSeconds"] = json!(60);
                p["spec"]["tolerations"]
                    .as_array_mut()
                    .expect("list")
                    .push(json!({"key": "new", "operator": "Exists"}));
            })
            .is_empty()
        );
        assert_eq!(
            with(&|p| p["spec"]["containers"]
                .as_array_mut()
                .expect("list")
                .push(json!({"name": "b", "image": "y"}))),
            ["spec.containers: Forbidden: pod updates may not add or remove containers"]
        );
        assert_eq!(
            with(&|p| p["spec"]["containers"][0]["env"][0]["value"] = json!("2")),
            [format!(
                "spec: Forbidden: {POD_UPDATE_FORBIDDEN}\n@@ -13,7 +13,7 @@\n    \"Env\": [\n     {{\n      \"Name\": \"E\",\n-     \"Value\": \"1\",\n+     \"Value\": \"2\",\n      \"ValueFrom\": null\n     }}\n    ],\n"
            )]
        );
        // A field the rendering does not know: the changed paths instead.
        assert_eq!(
            with(&|p| p["spec"]["containers"][0]["bogus"] = json!(1)),
            [format!(
                "spec: Forbidden: {POD_UPDATE_FORBIDDEN}\n  spec.containers[0].bogus: changed\n"
            )]
        );
        assert_eq!(
            with(&|p| p["spec"]["tolerations"] = json!([])),
            [
                "spec.tolerations: Forbidden: existing toleration can not be modified except its tolerationSeconds"
            ]
        );
        assert_eq!(with(&|p| p["spec"]["activeDeadlineSeconds"] = json!(200)).len(), 1);
    }

    #[test]
    fn a_spec_without_containers_needs_them() {
        assert_eq!(messages(json!({})), ["spec.containers: Required value"]);
        assert!(messages(json!({"containers": [{"name": "a", "image": "x"}]})).is_empty());
    }
}
