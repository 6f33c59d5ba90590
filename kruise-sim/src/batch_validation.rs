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
