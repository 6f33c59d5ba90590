//! kube-apiserver's validation of Jobs and of the Job template in CronJobs (`batch/v1`), with
//! its field paths and messages.

use crate::error::Cause;
use serde_json::{Value, json};

/// Where a Job spec sits and which rules apply to it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum JobSpecAt {
    /// `spec` of a Job whose uid is known: its selector is checked against the generated one.
    Job,
    /// `spec.jobTemplate.spec` of a CronJob: the selector is generated for each Job later.
    CronJobTemplate,
}

fn nonnegative(spec: &Value, path: &str, field: &str, causes: &mut Vec<Cause>) {
    if let Some(n) = spec.get(field).and_then(Value::as_i64)
        && n < 0
    {
        causes.push(Cause::invalid(
            &format!("{path}.{field}"),
            &json!(n),
            "must be greater than or equal to 0",
        ));
    }
}

/// The causes for a Job spec at `path` (`spec` or `spec.jobTemplate.spec`); `uid` is the
/// Job's, for the generated selector.
pub(crate) fn job_spec(spec: Option<&Value>, path: &str, at: JobSpecAt, uid: &str) -> Vec<Cause> {
    let mut causes = Vec::new();
    let Some(spec) = spec else {
        return causes;
    };
    for field in [
        "parallelism",
        "completions",
        "activeDeadlineSeconds",
        "backoffLimit",
        "ttlSecondsAfterFinished",
        "backoffLimitPerIndex",
        "maxFailedIndexes",
    ] {
        nonnegative(spec, path, field, &mut causes);
    }
    let restart_path = format!("{path}.template.spec.restartPolicy");
    match spec.pointer("/template/spec/restartPolicy").and_then(Value::as_str) {
        Some("OnFailure" | "Never") => {}
        None | Some("" | "Always") => {
            causes.push(Cause::required(&restart_path, "valid values: \"OnFailure\", \"Never\""))
        }
        Some(other) => causes.push(Cause::not_supported(
            &restart_path,
            &json!(other),
            &[json!("OnFailure"), json!("Never")],
        )),
    }
    if spec.get("completionMode").and_then(Value::as_str) == Some("Indexed")
        && spec.get("completions").is_none_or(Value::is_null)
    {
        causes.push(Cause::required(
            &format!("{path}.completions"),
            "when completion mode is Indexed",
        ));
    }
    let manual = spec.get("manualSelector") == Some(&json!(true));
    let selector = spec.get("selector").filter(|s| !s.is_null());
    match at {
        JobSpecAt::CronJobTemplate => {
            if let Some(s) = selector {
                causes.push(Cause::invalid(
                    &format!("{path}.selector"),
                    s,
                    "`selector` will be auto-generated",
                ));
            }
            if manual {
                causes.push(Cause::not_supported(
                    &format!("{path}.manualSelector"),
                    &json!(true),
                    &[json!("nil"), json!("false")],
                ));
            }
        }
        JobSpecAt::Job => match selector {
            None => causes.push(Cause::required(&format!("{path}.selector"), "")),
            Some(s) => {
                let generated = json!({"matchLabels": {"batch.kubernetes.io/controller-uid": uid}});
                if !manual && !uid.is_empty() && s != &generated {
                    causes.push(Cause::invalid(
                        &format!("{path}.selector"),
                        s,
                        "`selector` not auto-generated",
                    ));
                }
                let labels = spec.pointer("/template/metadata/labels");
                let parsed = crate::selector::LabelSelector::parse(
                    &crate::cluster::format_label_selector(s),
                );
                if let Ok(p) = parsed
                    && !p.matches(labels.and_then(Value::as_object))
                {
                    causes.push(Cause::invalid(
                        &format!("{path}.template.metadata.labels"),
                        labels.unwrap_or(&json!({})),
                        "`selector` does not match template `labels`",
                    ));
                }
            }
        },
    }
    causes
}

/// The causes for a CronJob's own fields: `schedule` (robfig/cron's syntax, no `TZ=` or
/// `CRON_TZ=` prefix), `timeZone`, `concurrencyPolicy`, the history limits and
/// `startingDeadlineSeconds`, and a name short enough for its Jobs' names.
#[cfg(any(feature = "smp", feature = "controllers"))]
pub(crate) fn cron_job(obj: &Value, old: Option<&Value>) -> Vec<Cause> {
    let mut causes = Vec::new();
    let spec = obj.get("spec").cloned().unwrap_or(Value::Null);
    let name = crate::util::meta_str(obj, "name").unwrap_or_default();
    if old.is_none() && name.len() > 52 {
        causes.push(Cause::invalid(
            "metadata.name",
            &json!(name),
            "must be no more than 52 characters",
        ));
    }
    match spec.get("schedule").and_then(Value::as_str).filter(|s| !s.is_empty()) {
        None => causes.push(Cause::required("spec.schedule", "")),
        Some(schedule) => {
            let old_schedule =
                old.and_then(|o| o.pointer("/spec/schedule")).and_then(Value::as_str);
            let had_tz = old_schedule.is_some_and(|s| s.contains("TZ"));
            match kruise_core::cron::Schedule::parse(schedule) {
                Err(e) => {
                    causes.push(Cause::invalid("spec.schedule", &json!(schedule), &e.to_string()))
                }
                Ok(_) if schedule.contains("TZ") && !had_tz => causes.push(Cause::invalid(
                    "spec.schedule",
                    &json!(schedule),
                    "cannot use TZ or CRON_TZ in schedule, use timeZone field instead",
                )),
                Ok(_)
                    if schedule.contains("TZ")
                        && spec.get("timeZone").is_some_and(|z| !z.is_null()) =>
                {
                    causes.push(Cause::invalid(
                        "spec.schedule",
                        &json!(schedule),
                        "cannot use both timeZone field and TZ or CRON_TZ in schedule",
                    ))
                }
                Ok(_) => {}
            }
        }
    }
    let old_zone = old.and_then(|o| o.pointer("/spec/timeZone"));
    if let Some(zone) = spec.get("timeZone").filter(|z| !z.is_null())
        && old_zone != Some(zone)
    {
        let text = zone.as_str().unwrap_or_default();
        let problem = if text.is_empty() {
            Some("timeZone must be nil or non-empty string".to_string())
        } else if text == "Local" {
            Some("timeZone must be an explicit time zone as defined in https://www.iana.org/time-zones".to_string())
        } else if jiff::tz::TimeZone::get(text).is_err() {
            Some(format!("unknown time zone {text}"))
        } else {
            None
        };
        if let Some(problem) = problem {
            causes.push(Cause::invalid("spec.timeZone", zone, &problem));
        }
    }
    match spec.get("concurrencyPolicy").and_then(Value::as_str) {
        Some("Allow" | "Forbid" | "Replace") => {}
        None | Some("") => causes.push(Cause::required("spec.concurrencyPolicy", "")),
        Some(other) => causes.push(Cause::not_supported(
            "spec.concurrencyPolicy",
            &json!(other),
            &[json!("Allow"), json!("Forbid"), json!("Replace")],
        )),
    }
    for field in ["startingDeadlineSeconds", "successfulJobsHistoryLimit", "failedJobsHistoryLimit"]
    {
        nonnegative(&spec, "spec", field, &mut causes);
    }
    causes
}
