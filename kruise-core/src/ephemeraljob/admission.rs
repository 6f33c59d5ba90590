//! EphemeralJob validation, as upstream's `vephemeraljobs.kb.io` does it: only the ephemeral
//! containers are checked, under `ephemeralContainers[i]`, and nothing is defaulted (so
//! `imagePullPolicy` and `terminationMessagePolicy` must be written out).

use std::collections::BTreeSet;

use k8s_openapi::api::core::v1::EphemeralContainer;
use kruise_api::apps::v1alpha1::EphemeralJob;

use crate::admission::pod_template::{
    dns_label_errors, ephemeral_only_errors, validate_container_ports, validate_env,
    validate_env_from,
};
use crate::field::{FieldError, FieldErrors, FieldPath};

/// Upstream's checks of `spec.template.ephemeralContainers`, in its order.
pub fn validate_ephemeral_job(job: &EphemeralJob) -> FieldErrors {
    let mut errs = FieldErrors::new();
    errs.extend(validate_ephemeral_containers(
        &job.spec.template.ephemeral_containers,
        &FieldPath::new("ephemeralContainers"),
    ));
    errs
}

fn validate_ephemeral_containers(
    containers: &[EphemeralContainer],
    path: &FieldPath,
) -> Vec<FieldError> {
    let mut errs = Vec::new();
    let mut names = BTreeSet::new();
    for (i, c) in containers.iter().enumerate() {
        let p = path.index(i);
        let name_path = p.child("name");
        if c.name.is_empty() {
            errs.push(FieldError::required(&name_path, ""));
        } else {
            errs.extend(dns_label_errors(&c.name, &name_path));
        }
        let image = c.image.as_deref().unwrap_or_default();
        if image.is_empty() {
            errs.push(FieldError::required(&p.child("image"), ""));
        }
        let policy_path = p.child("terminationMessagePolicy");
        match c.termination_message_policy.as_deref().unwrap_or_default() {
            "File" | "FallbackToLogsOnError" => {}
            "" => errs.push(FieldError::required(&policy_path, "")),
            other => errs.push(FieldError::not_supported(
                &policy_path,
                other,
                &["File", "FallbackToLogsOnError"],
            )),
        }
        errs.extend(validate_container_ports(
            c.ports.as_deref().unwrap_or_default(),
            &p.child("ports"),
        ));
        errs.extend(validate_env(c.env.as_deref().unwrap_or_default(), &p.child("env")));
        errs.extend(validate_env_from(
            c.env_from.as_deref().unwrap_or_default(),
            &p.child("envFrom"),
        ));
        let pull_path = p.child("imagePullPolicy");
        match c.image_pull_policy.as_deref().unwrap_or_default() {
            "Always" | "IfNotPresent" | "Never" => {}
            "" => errs.push(FieldError::required(&pull_path, "")),
            other => errs.push(FieldError::not_supported(
                &pull_path,
                other,
                &["Always", "IfNotPresent", "Never"],
            )),
        }
        if image.len() != image.trim().len() {
            errs.push(FieldError::invalid(
                &p.child("image"),
                image,
                "must not have leading or trailing whitespace",
            ));
        }
        if !c.name.is_empty() && !names.insert(c.name.as_str()) {
            errs.push(FieldError::duplicate(&name_path, c.name.as_str()));
        }
        errs.extend(ephemeral_only_errors(c, &p));
    }
    errs
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn job(containers: serde_json::Value) -> EphemeralJob {
        serde_json::from_value(json!({
            "apiVersion": "apps.kruise.io/v1alpha1", "kind": "EphemeralJob",
            "metadata": {"name": "debug", "namespace": "default"},
            "spec": {"selector": {"matchLabels": {"app": "web"}},
                     "template": {"ephemeralContainers": containers}}
        }))
        .expect("an ephemeral job")
    }

    fn messages(containers: serde_json::Value) -> Vec<String> {
        validate_ephemeral_job(&job(containers)).messages()
    }

    #[test]
    fn a_complete_container_passes() {
        assert!(
            messages(json!([{"name": "debugger", "image": "busybox",
                "imagePullPolicy": "IfNotPresent", "terminationMessagePolicy": "File",
                "command": ["sleep", "3"], "env": [{"name": "TEST", "value": "TRUE"}],
                "volumeMounts": [{"name": "data", "mountPath": "/data"}],
                "securityContext": {"capabilities": {"add": ["SYS_ADMIN"]}}}]))
            .is_empty()
        );
        assert!(messages(json!([])).is_empty());
    }

    #[test]
    fn upstreams_rules_name_the_field() {
        assert_eq!(
            messages(json!([{}])),
            [
                "ephemeralContainers[0].name: Required value",
                "ephemeralContainers[0].image: Required value",
                "ephemeralContainers[0].terminationMessagePolicy: Required value",
                "ephemeralContainers[0].imagePullPolicy: Required value",
            ]
        );
        let base = json!({"name": "d", "image": "busybox", "imagePullPolicy": "Always",
            "terminationMessagePolicy": "File"});
        let with = |extra: serde_json::Value| {
            let mut c = base.clone();
            if let (Some(c), Some(extra)) = (c.as_object_mut(), extra.as_object()) {
                for (k, v) in extra {
                    c.insert(k.clone(), v.clone());
                }
            }
            c
        };
        assert_eq!(
            messages(json!([with(json!({"imagePullPolicy": "PullThreeTimes"}))])),
            [
                "ephemeralContainers[0].imagePullPolicy: Unsupported value: \"PullThreeTimes\": supported values: \"Always\", \"IfNotPresent\", \"Never\""
            ]
        );
        assert_eq!(
            messages(json!([with(json!({"image": " busybox"}))])),
            [
                "ephemeralContainers[0].image: Invalid value: \" busybox\": must not have leading or trailing whitespace"
            ]
        );
        assert_eq!(
            messages(json!([base.clone(), base.clone()])),
            ["ephemeralContainers[1].name: Duplicate value: \"d\""]
        );
        assert_eq!(
            messages(json!([with(json!({"restartPolicy": "Always"}))])),
            [
                "ephemeralContainers[0].restartPolicy: Forbidden: cannot be set for an Ephemeral Container"
            ]
        );
        assert_eq!(
            messages(json!([with(json!({"readinessProbe": {"exec": {"command": ["true"]}}}))])),
            [
                "ephemeralContainers[0].readinessProbe: Forbidden: cannot be set for an Ephemeral Container"
            ]
        );
        assert_eq!(
            messages(json!([with(json!({"volumeMounts": [{"name": "v", "mountPath": "/v",
                "subPath": "x"}]}))])),
            [
                "ephemeralContainers[0].volumeMounts[0].subPath: Forbidden: cannot be set for an Ephemeral Container"
            ]
        );
    }
}
