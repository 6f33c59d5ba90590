//! BroadcastJob defaulting and validation, as upstream's webhooks
//! (`pkg/webhook/broadcastjob`) do them.

use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;
use kruise_api::apps::v1beta1::{BroadcastJob, CompletionPolicyType, FailurePolicyType};

use super::{CONTROLLER_UID_LABEL, JOB_NAME_LABEL};
use crate::admission::pod_defaults::{TemplateDefaults, default_pod_spec_with};
use crate::admission::pod_template::validate_pod_template_spec;
use crate::field::{FieldError, FieldErrors, FieldPath};

/// Upstream's defaults: `completionPolicy.type: Always`, no parallelism limit (`2147483647`),
/// `failurePolicy.type: FailFast`, the pod template's defaults (as `template` says: the
/// `TemplateNoDefaults` and `DefaultHostNetworkHostPortsInPodTemplates` gates), and no status.
pub fn default_broadcast_job(job: &mut BroadcastJob, template: TemplateDefaults) {
    let spec = &mut job.spec;
    spec.completion_policy.type_.get_or_insert(CompletionPolicyType::Always);
    spec.parallelism.get_or_insert(IntOrString::Int(i32::MAX));
    spec.failure_policy.type_.get_or_insert(FailurePolicyType::FailFast);
    if !template.skip
        && let Some(pod) = spec.template.spec.as_mut()
    {
        default_pod_spec_with(pod, template.pod);
    }
    job.status = None;
}

/// The name's pattern and its message.
const NAME_MESSAGE: &str = "BroadcastJob name must consist of alphanumeric characters or '-' \
     (e.g. 'example-com', regex used for validation is '^[a-zA-Z0-9\\-]+$')";

/// Upstream's checks, in its order: the name, `ttlSecondsAfterFinished` and
/// `activeDeadlineSeconds` only with `completionPolicy.type: Always`, `restartPolicy` Never or
/// OnFailure, no preset job labels, and the pod template.
pub fn validate_broadcast_job(job: &BroadcastJob) -> FieldErrors {
    let mut errs = FieldErrors::new();
    let name = job.metadata.name.as_deref().unwrap_or_default();
    let name_path = FieldPath::new("metadata").child("name");
    if !name.is_empty() {
        if !name.chars().all(|c| c.is_ascii_alphanumeric() || c == '-') {
            errs.push(FieldError::invalid(&name_path, name, NAME_MESSAGE));
        }
        if name.len() > 63 {
            errs.push(FieldError::invalid(&name_path, name, "must be no more than 63 characters"));
        }
    }
    let spec = FieldPath::new("spec");
    let policy = &job.spec.completion_policy;
    let policy_path = spec.child("completionPolicy");
    if policy.type_ == Some(CompletionPolicyType::Never) {
        if let Some(ttl) = policy.ttl_seconds_after_finished {
            errs.push(FieldError::invalid(
                &policy_path.child("ttlSecondsAfterFinished"),
                i64::from(ttl),
                "ttlSecondsAfterFinished can just work with Always CompletionPolicyType",
            ));
        }
        if let Some(deadline) = policy.active_deadline_seconds {
            errs.push(FieldError::invalid(
                &policy_path.child("activeDeadlineSeconds"),
                deadline,
                "activeDeadlineSeconds can just work with Always CompletionPolicyType",
            ));
        }
    }
    let template = &job.spec.template;
    let template_path = spec.child("template");
    let restart = template.spec.as_ref().and_then(|s| s.restart_policy.clone()).unwrap_or_default();
    if restart != "Never" && restart != "OnFailure" {
        errs.push(FieldError::invalid(
            &template_path.child("spec").child("restartPolicy"),
            restart.as_str(),
            "pod restartPolicy can only be Never or OnFailure",
        ));
    }
    let labels = template.metadata.as_ref().and_then(|m| m.labels.as_ref());
    let preset = labels.is_some_and(|l| {
        [JOB_NAME_LABEL, CONTROLLER_UID_LABEL]
            .iter()
            .any(|k| l.get(*k).is_some_and(|v| !v.is_empty()))
    });
    if preset {
        let rendered = crate::field::go::string_map(labels);
        errs.push(FieldError::invalid(
            &template_path.child("metadata").child("labels"),
            rendered.as_str(),
            "\"broadcastjob-name\" and \"broadcastjob-controller-uid\" are not allowed to preset in pod labels",
        ));
    }
    errs.extend(validate_pod_template_spec(template, &template_path));
    errs
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn job(extra: serde_json::Value) -> BroadcastJob {
        let mut value = json!({
            "apiVersion": "apps.kruise.io/v1beta1", "kind": "BroadcastJob",
            "metadata": {"name": "job", "namespace": "default"},
            "spec": {"template": {"spec": {"restartPolicy": "Never",
                "containers": [{"name": "main", "image": "busybox"}]}}}
        });
        if let (Some(spec), Some(extra)) = (value["spec"].as_object_mut(), extra.as_object()) {
            for (k, v) in extra {
                spec.insert(k.clone(), v.clone());
            }
        }
        let mut job: BroadcastJob = serde_json::from_value(value).expect("a job");
        // The mutating webhook runs first.
        default_broadcast_job(&mut job, TemplateDefaults::default());
        job
    }

    #[test]
    fn defaults_are_upstreams() {
        let mut j = job(json!({}));
        default_broadcast_job(&mut j, TemplateDefaults::default());
        assert_eq!(j.spec.completion_policy.type_, Some(CompletionPolicyType::Always));
        assert_eq!(j.spec.parallelism, Some(IntOrString::Int(i32::MAX)));
        assert_eq!(j.spec.failure_policy.type_, Some(FailurePolicyType::FailFast));
        let pod = j.spec.template.spec.as_ref().expect("spec");
        assert_eq!(pod.dns_policy.as_deref(), Some("ClusterFirst"));
    }

    #[test]
    fn bad_jobs_are_refused_naming_the_field() {
        let messages = |j: &BroadcastJob| validate_broadcast_job(j).messages();
        assert!(messages(&job(json!({}))).is_empty());
        let never = job(json!({"completionPolicy": {"type": "Never",
            "ttlSecondsAfterFinished": 10, "activeDeadlineSeconds": 5}}));
        assert_eq!(
            messages(&never),
            [
                "spec.completionPolicy.ttlSecondsAfterFinished: Invalid value: 10: ttlSecondsAfterFinished can just work with Always CompletionPolicyType",
                "spec.completionPolicy.activeDeadlineSeconds: Invalid value: 5: activeDeadlineSeconds can just work with Always CompletionPolicyType",
            ]
        );
        let mut always = job(json!({}));
        if let Some(spec) = always.spec.template.spec.as_mut() {
            spec.restart_policy = Some("Always".into());
        }
        assert!(
            messages(&always)[0].starts_with(
                "spec.template.spec.restartPolicy: Invalid value: \"Always\": pod restartPolicy can only be Never or OnFailure"
            ),
            "{:?}",
            messages(&always)
        );
        let mut preset = job(json!({}));
        preset.spec.template.metadata = Some(
            serde_json::from_value(json!({"labels": {"broadcastjob-name": "x"}})).expect("meta"),
        );
        assert!(messages(&preset)[0].starts_with("spec.template.metadata.labels: Invalid value"));
        let mut bad_name = job(json!({}));
        bad_name.metadata.name = Some("a.b".into());
        assert!(messages(&bad_name)[0].starts_with("metadata.name: Invalid value: \"a.b\""));
    }
}
