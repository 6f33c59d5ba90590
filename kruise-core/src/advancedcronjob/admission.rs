//! AdvancedCronJob defaulting and validation, as upstream's webhooks
//! (`madvancedcronjob.kb.io`, `vadvancedcronjob.kb.io`) do them, over v1beta1 (v1alpha1
//! objects are converted first).
//!
//! Beyond upstream: a `jobTemplate` or `broadcastJobTemplate` whose pods would restart
//! `Always` is refused here, naming the field, instead of failing at every run when the
//! controller creates the job.

use std::collections::BTreeSet;

use kruise_api::apps::v1beta1::{
    AdvancedCronJob, CompletionPolicyType, ConcurrencyPolicy, ImageListPullJobTemplateSpec,
};

use super::{DEFAULT_FAILED_HISTORY, DEFAULT_SUCCESSFUL_HISTORY};
use crate::admission::image_pull_template::{MAX_IMAGES_PER_LIST_JOB, default_template};
use crate::admission::meta::label_selector_as_selector;
use crate::admission::pod_defaults::{TemplateDefaults, default_pod_spec_with};
use crate::admission::pod_template::validate_pod_template_spec;
use crate::cron::{CronError, Schedule, load_location};
use crate::field::{FieldError, FieldErrors, FieldPath};

/// Upstream's defaults: `concurrencyPolicy` (`Replace` for an ImageListPullJob template,
/// else `Allow`), `paused: false`, history limits 3 and 1, the ImageListPullJob template's
/// pull defaults when its completion policy is unset, and the pod template's defaults (unless
/// `template.skip`, the `TemplateNoDefaults` gate, or an update that leaves the template alone:
/// pass the old object as `old`; `template.pod` carries
/// `DefaultHostNetworkHostPortsInPodTemplates`). The status is cleared.
pub fn default_advanced_cron_job(
    cron_job: &mut AdvancedCronJob,
    old: Option<&AdvancedCronJob>,
    template: TemplateDefaults,
) {
    let inject =
        !template.skip && old.is_none_or(|old| old.spec.template != cron_job.spec.template);
    let spec = &mut cron_job.spec;
    if inject {
        if let Some(pod) = spec
            .template
            .job_template
            .as_mut()
            .and_then(|t| t.spec.as_mut()?.template.spec.as_mut())
        {
            default_pod_spec_with(pod, template.pod);
        }
        if let Some(pod) = spec
            .template
            .broadcast_job_template
            .as_mut()
            .and_then(|t| t.spec.template.spec.as_mut())
        {
            default_pod_spec_with(pod, template.pod);
        }
    }
    let image_list = spec.template.image_list_pull_job_template.as_mut();
    let has_image_list = image_list.is_some();
    if let Some(t) = image_list
        && t.spec.template.completion_policy.type_.is_none()
    {
        default_template(&mut t.spec.template, true);
    }
    spec.concurrency_policy.get_or_insert(if has_image_list {
        ConcurrencyPolicy::Replace
    } else {
        ConcurrencyPolicy::Allow
    });
    spec.paused.get_or_insert(false);
    spec.successful_jobs_history_limit.get_or_insert(DEFAULT_SUCCESSFUL_HISTORY);
    spec.failed_jobs_history_limit.get_or_insert(DEFAULT_FAILED_HISTORY);
    cron_job.status = None;
}

const NAME_MESSAGE: &str = "AdvancedCronJob name must consist of alphanumeric characters or '-' \
     (e.g. 'example-com', regex used for validation is '^[a-zA-Z0-9\\-]+$')";

const UPDATE_MESSAGE: &str = "updates to advancedcronjob spec for fields other than \
     'imageListPullJobTemplate', 'schedule', 'concurrencyPolicy', 'successfulJobsHistoryLimit', \
     'failedJobsHistoryLimit', 'startingDeadlineSeconds', 'timeZone' and 'paused' are forbidden";

/// Upstream's checks, in its order: the name (on create), the schedule, exactly one template
/// and its own rules, the non-negative counts and the time zone; on update (`old` given), only
/// the schedule, policies, limits, time zone, `paused` and an ImageListPullJob template may
/// change.
pub fn validate_advanced_cron_job(
    cron_job: &AdvancedCronJob,
    old: Option<&AdvancedCronJob>,
) -> FieldErrors {
    let mut errs = FieldErrors::new();
    if old.is_none() {
        let name = cron_job.metadata.name.as_deref().unwrap_or_default();
        let path = FieldPath::new("metadata").child("name");
        if !name.is_empty() {
            if !name.chars().all(|c| c.is_ascii_alphanumeric() || c == '-') {
                errs.push(FieldError::invalid(&path, name, NAME_MESSAGE));
            }
            if name.len() > 63 {
                errs.push(FieldError::invalid(&path, name, "must be no more than 63 characters"));
            }
        }
    }
    let spec_path = FieldPath::new("spec");
    let spec = &cron_job.spec;

    // The schedule.
    let schedule_path = spec_path.child("schedule");
    let schedule = spec.schedule.as_str();
    if schedule.is_empty() {
        errs.push(FieldError::invalid(
            &schedule_path,
            schedule,
            "schedule cannot be empty, please provide valid cron schedule.",
        ));
    }
    if let Err(e) = Schedule::parse(schedule) {
        errs.push(FieldError::invalid(&schedule_path, schedule, e.to_string()));
    }
    if schedule.contains("TZ") && spec.time_zone.is_some() {
        errs.push(FieldError::invalid(
            &schedule_path,
            schedule,
            "cannot use both timeZone field and TZ or CRON_TZ in schedule",
        ));
    }

    // Exactly one template.
    let template = &spec.template;
    let template_path = spec_path.child("template");
    let mut templates = 0;
    if let Some(job) = &template.job_template {
        templates += 1;
        let pod = job.spec.as_ref().map(|s| &s.template);
        if let Some(pod) = pod {
            errs.extend(validate_pod_template_spec(pod, &template_path));
        }
        let restart = pod.and_then(|p| p.spec.as_ref()?.restart_policy.as_deref());
        if let Some(restart) = restart.filter(|r| !matches!(*r, "Never" | "OnFailure")) {
            errs.push(FieldError::not_supported(
                &template_path
                    .child("jobTemplate")
                    .child("spec")
                    .child("template")
                    .child("spec")
                    .child("restartPolicy"),
                restart,
                &["OnFailure", "Never"],
            ));
        }
    }
    if let Some(job) = &template.broadcast_job_template {
        templates += 1;
        errs.extend(validate_pod_template_spec(&job.spec.template, &template_path));
        let restart = job.spec.template.spec.as_ref().and_then(|s| s.restart_policy.as_deref());
        if let Some(restart) = restart.filter(|r| !matches!(*r, "Never" | "OnFailure")) {
            errs.push(FieldError::invalid(
                &template_path
                    .child("broadcastJobTemplate")
                    .child("spec")
                    .child("template")
                    .child("spec")
                    .child("restartPolicy"),
                restart,
                "pod restartPolicy can only be Never or OnFailure",
            ));
        }
    }
    if let Some(job) = &template.image_list_pull_job_template {
        templates += 1;
        let policy = spec.concurrency_policy.clone().unwrap_or(ConcurrencyPolicy::Allow);
        if !matches!(policy, ConcurrencyPolicy::Replace | ConcurrencyPolicy::Forbid) {
            // Upstream's path, doubled `spec` and all.
            errs.push(FieldError::invalid(
                &spec_path.child("spec").child("concurrencyPolicy"),
                policy.as_str(),
                format!(
                    "concurrencyPolicy should be Replace or Forbid, but current value is: {}",
                    policy.as_str()
                ),
            ));
        }
        errs.extend(validate_image_list_template(
            job,
            &template_path.child("imageListPullJobTemplate"),
        ));
    }
    match templates {
        0 => errs.push(FieldError::forbidden(
            &template_path,
            "spec must have one template, either JobTemplate or BroadcastJobTemplate or ImageListPullJobTemplate should be provided",
        )),
        1 => {}
        _ => errs.push(FieldError::forbidden(
            &template_path,
            "spec can have only one template, either JobTemplate or BroadcastJobTemplate or ImageListPullJobTemplate should be provided",
        )),
    }

    // Counts.
    for (field, value) in [
        ("startingDeadlineSeconds", spec.starting_deadline_seconds),
        ("successfulJobsHistoryLimit", spec.successful_jobs_history_limit.map(i64::from)),
        ("failedJobsHistoryLimit", spec.failed_jobs_history_limit.map(i64::from)),
    ] {
        if let Some(value) = value.filter(|v| *v < 0) {
            errs.push(FieldError::invalid(
                &spec_path.child(field),
                value,
                "must be greater than or equal to 0",
            ));
        }
    }

    // The time zone.
    if let Some(zone) = spec.time_zone.as_deref() {
        errs.extend(validate_time_zone(zone, &spec_path.child("timeZone")));
    }

    if let Some(old) = old {
        let mut unchanged = spec.clone();
        unchanged.schedule = old.spec.schedule.clone();
        unchanged.concurrency_policy = old.spec.concurrency_policy.clone();
        unchanged.successful_jobs_history_limit = old.spec.successful_jobs_history_limit;
        unchanged.failed_jobs_history_limit = old.spec.failed_jobs_history_limit;
        unchanged.starting_deadline_seconds = old.spec.starting_deadline_seconds;
        unchanged.paused = old.spec.paused;
        unchanged.time_zone = old.spec.time_zone.clone();
        if old.spec.template.image_list_pull_job_template.is_some() {
            unchanged.template.image_list_pull_job_template =
                old.spec.template.image_list_pull_job_template.clone();
        }
        if unchanged != old.spec {
            errs.push(FieldError::forbidden(&spec_path, UPDATE_MESSAGE));
        }
    }
    errs
}

/// `spec.timeZone`: a non-empty, explicit IANA zone.
fn validate_time_zone(zone: &str, path: &FieldPath) -> Vec<FieldError> {
    if zone.is_empty() {
        return vec![FieldError::invalid(path, zone, "timeZone must be nil or non-empty string")];
    }
    let mut errs = Vec::new();
    if zone.eq_ignore_ascii_case("local") {
        errs.push(FieldError::invalid(
            path,
            zone,
            "timeZone must be an explicit time zone as defined in https://www.iana.org/time-zones",
        ));
    }
    if let Err(CronError::BadLocation { reason, .. }) = load_location(zone) {
        errs.push(FieldError::invalid(path, zone, reason));
    }
    errs
}

/// An ImageListPullJob template's rules, stopping at the first failure as upstream does.
fn validate_image_list_template(
    job: &ImageListPullJobTemplateSpec,
    path: &FieldPath,
) -> Vec<FieldError> {
    let spec = path.child("spec");
    let t = &job.spec.template;
    let one = |path: FieldPath, value: &str, message: String| {
        vec![FieldError::invalid(&path, value, message)]
    };
    if let Some(selector) = &t.selector {
        let labels = &selector.label_selector;
        if labels.match_labels.is_some() || labels.match_expressions.is_some() {
            if !selector.names.is_empty() {
                return one(
                    spec.child("selector"),
                    "",
                    "can not set both names and labelSelector in this spec.selector".into(),
                );
            }
            if let Err(e) = label_selector_as_selector(Some(labels)) {
                return one(
                    spec.child("selector").child("labelSelector"),
                    "",
                    format!("invalid selector: {e}"),
                );
            }
        }
        let unique: BTreeSet<&String> = selector.names.iter().collect();
        if unique.len() != selector.names.len() {
            return one(
                spec.child("selector").child("names"),
                "",
                "duplicated name in selector names".into(),
            );
        }
    }
    if let Some(pods) = &t.pod_selector {
        if t.selector.is_some() {
            return one(spec.clone(), "", "can not set both selector and podSelector".into());
        }
        if let Err(e) = label_selector_as_selector(Some(&pods.label_selector)) {
            return one(
                spec.child("podSelector").child("labelSelector"),
                "",
                format!("invalid selector: {e}"),
            );
        }
    }
    let images = &job.spec.images;
    let images_path = spec.child("images");
    if images.is_empty() {
        return one(images_path, "", "image can not be empty".into());
    }
    if images.len() > MAX_IMAGES_PER_LIST_JOB {
        return one(
            images_path,
            "",
            format!("the maximum number of images cannot > {MAX_IMAGES_PER_LIST_JOB}"),
        );
    }
    let unique: BTreeSet<&String> = images.iter().collect();
    if unique.len() != images.len() {
        return one(images_path, "", "images cannot have duplicate values".into());
    }
    for image in images {
        if let Err(e) = crate::image::ImageRef::parse(image) {
            return one(images_path, image, format!("invalid image {image}: {e}"));
        }
    }
    let completion = &t.completion_policy;
    let completion_path = spec.child("completionPolicy");
    match &completion.type_ {
        Some(CompletionPolicyType::Always) => {
            if let Some(deadline) = completion.active_deadline_seconds {
                let deadline_path = completion_path.child("activeDeadlineSeconds");
                if deadline > 86_400 {
                    return vec![FieldError::invalid(
                        &deadline_path,
                        deadline,
                        format!(
                            "activeDeadlineSeconds must be less than 86400, current value is: {deadline}"
                        ),
                    )];
                }
                if let Some(timeout) = t.pull_policy.as_ref().and_then(|p| p.timeout_seconds)
                    && i64::from(timeout) > deadline
                {
                    return vec![FieldError::invalid(
                        &deadline_path,
                        deadline,
                        format!(
                            "completionPolicy.activeDeadlineSeconds must be greater than pullPolicy.timeoutSeconds({timeout})"
                        ),
                    )];
                }
            }
            if let Some(ttl) = completion.ttl_seconds_after_finished {
                return vec![FieldError::invalid(
                    &completion_path.child("ttlSecondsAfterFinished"),
                    i64::from(ttl),
                    "ttlSecondsAfterFinished is not supported in advancedCronJob",
                )];
            }
            Vec::new()
        }
        other => {
            let value = other.as_ref().map_or("", |t| t.as_str());
            one(
                completion_path.child("type"),
                value,
                format!("completionPolicy should be Always, but current value is: {value}"),
            )
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn cron_job(spec: serde_json::Value) -> AdvancedCronJob {
        let mut value = json!({
            "apiVersion": "apps.kruise.io/v1beta1", "kind": "AdvancedCronJob",
            "metadata": {"name": "nightly", "namespace": "default"},
            "spec": {"schedule": "*/5 * * * *", "template": {"jobTemplate": {"spec": {"template":
                {"spec": {"restartPolicy": "OnFailure",
                          "containers": [{"name": "main", "image": "busybox"}]}}}}}}
        });
        if let (Some(base), Some(extra)) = (value["spec"].as_object_mut(), spec.as_object()) {
            for (k, v) in extra {
                base.insert(k.clone(), v.clone());
            }
        }
        let mut cron_job: AdvancedCronJob = serde_json::from_value(value).expect("a cron job");
        default_advanced_cron_job(&mut cron_job, None, TemplateDefaults::default());
        cron_job
    }

    fn messages(cron_job: &AdvancedCronJob) -> Vec<String> {
        validate_advanced_cron_job(cron_job, None).messages()
    }

    #[test]
    fn defaults_are_upstreams() {
        let c = cron_job(json!({}));
        assert_eq!(c.spec.concurrency_policy, Some(ConcurrencyPolicy::Allow));
        assert_eq!(c.spec.paused, Some(false));
        assert_eq!(c.spec.successful_jobs_history_limit, Some(3));
        assert_eq!(c.spec.failed_jobs_history_limit, Some(1));
        let pod = c.spec.template.job_template.as_ref().and_then(|t| t.spec.as_ref());
        let pod = pod.and_then(|s| s.template.spec.as_ref()).expect("pod spec");
        assert_eq!(pod.dns_policy.as_deref(), Some("ClusterFirst"));
        let images = cron_job(json!({"template": {"imageListPullJobTemplate": {"spec": {
            "images": ["nginx:1"], "completionPolicy": {}}}}}));
        assert_eq!(images.spec.concurrency_policy, Some(ConcurrencyPolicy::Replace));
        let t = &images.spec.template.image_list_pull_job_template.as_ref().expect("t").spec;
        assert_eq!(t.template.completion_policy.type_, Some(CompletionPolicyType::Always));
        assert_eq!(t.template.pull_policy.as_ref().and_then(|p| p.timeout_seconds), Some(600));
    }

    #[test]
    fn the_template_is_defaulted_again_only_when_it_changes() {
        let old = cron_job(json!({}));
        let mut new = old.clone();
        if let Some(pod) = new
            .spec
            .template
            .job_template
            .as_mut()
            .and_then(|t| t.spec.as_mut()?.template.spec.as_mut())
        {
            pod.dns_policy = None;
        }
        let mut same = new.clone();
        default_advanced_cron_job(&mut same, Some(&new), TemplateDefaults::default());
        let dns = |c: &AdvancedCronJob| {
            c.spec
                .template
                .job_template
                .as_ref()
                .and_then(|t| t.spec.as_ref()?.template.spec.as_ref()?.dns_policy.clone())
        };
        assert_eq!(dns(&same), None, "an update that keeps the template adds no pod defaults");
        default_advanced_cron_job(&mut new, Some(&old), TemplateDefaults::default());
        assert_eq!(dns(&new).as_deref(), Some("ClusterFirst"));
    }

    #[test]
    fn good_cron_jobs_pass() {
        assert!(messages(&cron_job(json!({}))).is_empty());
        assert!(messages(&cron_job(json!({"schedule": "@every 10s"}))).is_empty());
        assert!(
            messages(&cron_job(json!({"schedule": "CRON_TZ=Asia/Tokyo 0 9 * * 1-5"}))).is_empty()
        );
        assert!(messages(&cron_job(json!({"timeZone": "America/New_York"}))).is_empty());
    }

    #[test]
    fn bad_cron_jobs_are_refused_naming_the_field() {
        assert_eq!(
            messages(&cron_job(json!({"schedule": "61 * * * *"}))),
            [
                "spec.schedule: Invalid value: \"61 * * * *\": end of range (61) above maximum (59): 61"
            ]
        );
        assert_eq!(
            messages(&cron_job(json!({"schedule": ""}))),
            [
                "spec.schedule: Invalid value: \"\": schedule cannot be empty, please provide valid cron schedule.",
                "spec.schedule: Invalid value: \"\": empty spec string",
            ]
        );
        assert_eq!(
            messages(&cron_job(json!({"timeZone": "Mars/Olympus"}))),
            ["spec.timeZone: Invalid value: \"Mars/Olympus\": unknown time zone Mars/Olympus"]
        );
        assert_eq!(
            messages(&cron_job(json!({"timeZone": "Asia/Tokyo", "schedule": "TZ=UTC 0 * * * *"}))),
            [
                "spec.schedule: Invalid value: \"TZ=UTC 0 * * * *\": cannot use both timeZone field and TZ or CRON_TZ in schedule"
            ]
        );
        let always = cron_job(json!({"template": {"jobTemplate": {"spec": {"template":
            {"spec": {"restartPolicy": "Always",
                      "containers": [{"name": "main", "image": "busybox"}]}}}}}}));
        assert_eq!(
            messages(&always),
            [
                "spec.template.jobTemplate.spec.template.spec.restartPolicy: Unsupported value: \"Always\": supported values: \"OnFailure\", \"Never\""
            ]
        );
        let none = cron_job(json!({"template": {}}));
        assert_eq!(
            messages(&none),
            [
                "spec.template: Forbidden: spec must have one template, either JobTemplate or BroadcastJobTemplate or ImageListPullJobTemplate should be provided"
            ]
        );
        let negative = cron_job(json!({"startingDeadlineSeconds": -1}));
        assert_eq!(
            messages(&negative),
            ["spec.startingDeadlineSeconds: Invalid value: -1: must be greater than or equal to 0"]
        );
        let images = cron_job(json!({"concurrencyPolicy": "Allow",
            "template": {"imageListPullJobTemplate": {"spec": {
            "images": ["nginx:1"], "completionPolicy": {"type": "Always",
            "ttlSecondsAfterFinished": 100}}}}}));
        assert_eq!(
            messages(&images),
            [
                "spec.spec.concurrencyPolicy: Invalid value: \"Allow\": concurrencyPolicy should be Replace or Forbid, but current value is: Allow",
                "spec.template.imageListPullJobTemplate.spec.completionPolicy.ttlSecondsAfterFinished: Invalid value: 100: ttlSecondsAfterFinished is not supported in advancedCronJob",
            ]
        );
    }

    #[test]
    fn only_the_listed_fields_change_on_update() {
        let old = cron_job(json!({}));
        let mut new = old.clone();
        new.spec.schedule = "@hourly".into();
        new.spec.paused = Some(true);
        assert!(validate_advanced_cron_job(&new, Some(&old)).is_empty());
        if let Some(pod) = new
            .spec
            .template
            .job_template
            .as_mut()
            .and_then(|t| t.spec.as_mut()?.template.spec.as_mut())
        {
            pod.containers[0].image = Some("busybox:2".into());
        }
        let errs = validate_advanced_cron_job(&new, Some(&old)).messages();
        assert_eq!(errs.len(), 1);
        assert!(
            errs[0].starts_with("spec: Forbidden: updates to advancedcronjob spec"),
            "{errs:?}"
        );
    }
}
