//! The CloneSet status: replica counts, revisions and the Progressing condition.

use jiff::{SignedDuration, Timestamp};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use kruise_api::apps::v1beta1::{CloneSetCondition, CloneSetStatus};
use kruise_api::well_known::conditions::cloneset as cond;

use super::podinfo::PodInfo;
use super::spec::Spec;

/// Fills the counters of `status` from `pods` and settles `currentRevision` and
/// `expectedUpdatedReplicas`.
pub(crate) fn count(status: &mut CloneSetStatus, spec: &Spec<'_>, pods: &[PodInfo<'_>]) {
    status.replicas = 0;
    status.ready_replicas = 0;
    status.available_replicas = 0;
    status.updated_replicas = 0;
    status.updated_ready_replicas = 0;
    status.updated_available_replicas = 0;
    for p in pods {
        status.replicas += 1;
        status.ready_replicas += i32::from(p.update_ready());
        status.available_replicas += i32::from(p.available());
        if p.updated() {
            status.updated_replicas += 1;
            status.updated_ready_replicas += i32::from(p.update_ready());
            status.updated_available_replicas += i32::from(p.available());
        }
    }
    // All pods at the update revision and the right number of them: the update revision is
    // now the current one, whether or not the pods are ready yet.
    if status.updated_replicas == status.replicas && status.replicas == spec.replicas {
        status.current_revision = status.update_revision.clone();
    }
    status.expected_updated_replicas = spec.expected_updated_replicas();
}

/// Sets (or removes) the Progressing condition. Returns when to look again for the
/// progress deadline, if that matters.
pub(crate) fn progressing(
    status: &mut CloneSetStatus,
    spec: &Spec<'_>,
    now: Timestamp,
) -> Option<SignedDuration> {
    let Some(deadline) = spec.progress_deadline_seconds else {
        remove_condition(status, cond::PROGRESSING);
        return None;
    };
    let replicas = spec.replicas;
    let available = status.current_revision == status.update_revision
        && status.replicas == replicas
        && status.updated_replicas == replicas
        && status.updated_available_replicas == replicas;
    let partition_available = status.expected_updated_replicas < replicas
        && status.expected_updated_replicas <= status.updated_available_replicas;
    if available {
        set_condition(
            status,
            new_condition(cond::REASON_AVAILABLE, "True", "CloneSet is available", now),
        );
        return None;
    }
    if spec.paused {
        set_condition(
            status,
            new_condition(cond::REASON_PAUSED, "True", "CloneSet is paused", now),
        );
        return None;
    }
    if partition_available {
        set_condition(
            status,
            new_condition(
                cond::REASON_PROGRESS_PARTITION_AVAILABLE,
                "True",
                "CloneSet has been paused due to partition ready",
                now,
            ),
        );
        return None;
    }
    let deadline = SignedDuration::from_secs(i64::from(deadline));
    let exceeded = match get_condition(status, cond::PROGRESSING) {
        None => false,
        Some(c) if c.reason == cond::REASON_PROGRESS_DEADLINE_EXCEEDED => true,
        Some(c) => c
            .last_update_time
            .as_ref()
            .is_some_and(|t| t.0.saturating_add(deadline).is_ok_and(|end| end < now)),
    };
    if exceeded {
        let message =
            format!("CloneSet revision {} has timed out progressing", status.update_revision);
        set_condition(
            status,
            new_condition(cond::REASON_PROGRESS_DEADLINE_EXCEEDED, "False", &message, now),
        );
        return None;
    }
    set_condition(
        status,
        new_condition(cond::REASON_UPDATED, "True", "CloneSet is progressing", now),
    );
    let since = get_condition(status, cond::PROGRESSING)
        .and_then(|c| c.last_update_time.as_ref())
        .map_or(now, |t| t.0);
    let after = since.duration_since(now) + deadline;
    // Round up to whole seconds past the deadline, as upstream adds a second of slack.
    Some(if after < SignedDuration::from_secs(1) {
        after
    } else {
        after + SignedDuration::from_secs(1)
    })
}

/// Sets a failure condition (`FailedScale` / `FailedUpdate`).
pub(crate) fn set_failure(
    status: &mut CloneSetStatus,
    type_: &str,
    message: String,
    now: Timestamp,
) {
    set_condition(
        status,
        CloneSetCondition {
            type_: type_.to_owned(),
            status: "True".into(),
            last_update_time: None,
            last_transition_time: Some(Time(now)),
            reason: String::new(),
            message,
        },
    );
}

fn new_condition(reason: &str, status: &str, message: &str, now: Timestamp) -> CloneSetCondition {
    CloneSetCondition {
        type_: cond::PROGRESSING.to_owned(),
        status: status.to_owned(),
        last_update_time: Some(Time(now)),
        last_transition_time: Some(Time(now)),
        reason: reason.to_owned(),
        message: message.to_owned(),
    }
}

fn get_condition<'s>(status: &'s CloneSetStatus, type_: &str) -> Option<&'s CloneSetCondition> {
    status.conditions.iter().find(|c| c.type_ == type_)
}

/// Upstream's `SetCloneSetCondition`: an unchanged status and reason keeps the old condition;
/// an unchanged status keeps the old transition time; the condition moves to the end.
fn set_condition(status: &mut CloneSetStatus, mut condition: CloneSetCondition) {
    if let Some(current) = get_condition(status, &condition.type_) {
        if current.status == condition.status && current.reason == condition.reason {
            return;
        }
        if current.status == condition.status {
            condition.last_transition_time = current.last_transition_time.clone();
        }
    }
    remove_condition(status, &condition.type_);
    status.conditions.push(condition);
}

fn remove_condition(status: &mut CloneSetStatus, type_: &str) {
    status.conditions.retain(|c| c.type_ != type_);
}

/// Upstream's `inconsistentStatus`: whether the new status is worth writing.
pub(crate) fn differs(old: &CloneSetStatus, new: &CloneSetStatus) -> bool {
    let progressing_changed =
        match (get_condition(old, cond::PROGRESSING), get_condition(new, cond::PROGRESSING)) {
            (None, None) => false,
            (Some(a), Some(b)) => a.status != b.status || a.reason != b.reason,
            _ => true,
        };
    new.observed_generation > old.observed_generation
        || new.replicas != old.replicas
        || new.ready_replicas != old.ready_replicas
        || new.available_replicas != old.available_replicas
        || new.updated_ready_replicas != old.updated_ready_replicas
        || new.updated_replicas != old.updated_replicas
        || new.updated_available_replicas != old.updated_available_replicas
        || new.expected_updated_replicas != old.expected_updated_replicas
        || new.update_revision != old.update_revision
        || new.current_revision != old.current_revision
        || new.label_selector != old.label_selector
        || progressing_changed
}
