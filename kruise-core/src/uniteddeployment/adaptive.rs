//! Adaptive scheduling: whether a subset can take more pods, from its pods, its `Schedulable`
//! condition and the time, as upstream's controller works it out before allocating.
//!
//! A pod that has waited for a node longer than `rescheduleCriticalSeconds` (default 30),
//! counted from its creation (pending, no node, `PodScheduled=False` with reason
//! `Unschedulable`), marks its subset unschedulable: the subset's `Schedulable` condition goes
//! False (reason `reschedule`) and stays so for `unschedulableDuration` (default 300 s), then
//! recovers (reason `recover`). While marked, the allocator holds the subset to its ready pods
//! and gives the rest to the subsets after it.

use jiff::{SignedDuration, Timestamp};
use k8s_openapi::api::core::v1::Pod;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use kruise_api::apps::v1beta1::{
    AdaptiveUnitedDeploymentStrategy, UnitedDeploymentSubsetCondition,
    UnitedDeploymentSubsetConditionType,
};

/// Upstream's default `rescheduleCriticalSeconds`.
pub const DEFAULT_RESCHEDULE_CRITICAL_SECONDS: i64 = 30;
/// Upstream's default `unschedulableDuration`.
pub const DEFAULT_UNSCHEDULABLE_SECONDS: i64 = 300;

/// The two durations of an Adaptive strategy, defaulted.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct AdaptiveTimes {
    /// How long a pod may wait for a node.
    pub reschedule_critical: SignedDuration,
    /// How long a subset stays unschedulable.
    pub unschedulable: SignedDuration,
}

impl AdaptiveTimes {
    /// From the strategy's fields.
    pub fn of(adaptive: Option<&AdaptiveUnitedDeploymentStrategy>) -> Self {
        let critical = adaptive
            .and_then(|a| a.reschedule_critical_seconds)
            .map_or(DEFAULT_RESCHEDULE_CRITICAL_SECONDS, i64::from);
        let unschedulable = adaptive
            .and_then(|a| a.unschedulable_duration)
            .map_or(DEFAULT_UNSCHEDULABLE_SECONDS, i64::from);
        Self {
            reschedule_critical: SignedDuration::from_secs(critical),
            unschedulable: SignedDuration::from_secs(unschedulable),
        }
    }
}

/// A subset's schedulability now, and what to record.
#[derive(Clone, Debug, PartialEq)]
pub struct Schedulability {
    /// The subset cannot take more pods.
    pub unschedulable: bool,
    /// Pods that waited for a node too long.
    pub pending_pods: i32,
    /// The `Schedulable` condition to keep.
    pub condition: Option<UnitedDeploymentSubsetCondition>,
    /// When to look again.
    pub recheck_after: Option<SignedDuration>,
}

/// Whether `pod` waits for a node: pending, unbound, and refused by the scheduler.
fn waits_for_node(pod: &Pod) -> bool {
    let status = pod.status.as_ref();
    pod.metadata.deletion_timestamp.is_none()
        && status.and_then(|s| s.phase.as_deref()) == Some("Pending")
        && pod.spec.as_ref().and_then(|s| s.node_name.as_deref()).is_none_or(str::is_empty)
        && status.and_then(|s| s.conditions.as_ref()).into_iter().flatten().any(|c| {
            c.type_ == "PodScheduled"
                && c.status == "False"
                && c.reason.as_deref() == Some("Unschedulable")
        })
}

fn condition(
    status: &str,
    reason: &str,
    message: String,
    now: Timestamp,
) -> UnitedDeploymentSubsetCondition {
    UnitedDeploymentSubsetCondition {
        type_: UnitedDeploymentSubsetConditionType::Schedulable,
        status: status.into(),
        last_transition_time: Some(Time(now)),
        reason: reason.into(),
        message,
    }
}

/// Keeps `old`'s transition time when status and reason are unchanged, as upstream does.
fn keep_time(
    old: Option<&UnitedDeploymentSubsetCondition>,
    new: UnitedDeploymentSubsetCondition,
) -> UnitedDeploymentSubsetCondition {
    match old {
        Some(old) if old.status == new.status && old.reason == new.reason => old.clone(),
        _ => new,
    }
}

/// The subset's schedulability from its current `Schedulable` condition, its workload's
/// replica counts and its pods, at `now`.
pub fn schedulability(
    current: Option<&UnitedDeploymentSubsetCondition>,
    replicas: i32,
    ready_replicas: i32,
    pods: &[&Pod],
    times: AdaptiveTimes,
    now: Timestamp,
) -> Schedulability {
    let mut out = Schedulability {
        unschedulable: false,
        pending_pods: 0,
        condition: current.cloned(),
        recheck_after: None,
    };
    let sooner = |a: Option<SignedDuration>, b: SignedDuration| Some(a.map_or(b, |a| a.min(b)));
    if let Some(c) = current.filter(|c| c.status == "False") {
        let since = c.last_transition_time.as_ref().map_or(now, |t| t.0);
        let until = since + times.unschedulable;
        if now < until {
            out.unschedulable = true;
            out.recheck_after = sooner(out.recheck_after, until.duration_since(now));
        } else {
            let message = format!(
                "unschedulable subset recovered after {:.6} seconds",
                times.unschedulable.as_secs_f64()
            );
            out.condition = Some(keep_time(current, condition("True", "recover", message, now)));
        }
    }
    if ready_replicas < replicas {
        for pod in pods.iter().filter(|p| waits_for_node(p)) {
            let created = pod.metadata.creation_timestamp.as_ref().map_or(now, |t| t.0);
            let deadline = created + times.reschedule_critical;
            if deadline < now {
                out.pending_pods += 1;
            } else {
                out.recheck_after = sooner(out.recheck_after, deadline.duration_since(now));
            }
        }
        if out.pending_pods > 0 {
            out.unschedulable = true;
            let marked = condition("False", "reschedule", "timeout pending pods found".into(), now);
            out.condition = Some(keep_time(out.condition.as_ref(), marked));
            out.recheck_after = sooner(out.recheck_after, times.unschedulable);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn ts(text: &str) -> Timestamp {
        text.parse().expect("a timestamp")
    }

    fn pending(created: &str) -> Pod {
        serde_json::from_value(json!({
            "metadata": {"name": "p", "creationTimestamp": created},
            "spec": {"containers": []},
            "status": {"phase": "Pending", "conditions": [{"type": "PodScheduled",
                "status": "False", "reason": "Unschedulable"}]}
        }))
        .expect("a pod")
    }

    const NOW: &str = "2026-01-01T10:00:00Z";

    #[test]
    fn upstreams_table() {
        let times = AdaptiveTimes::of(None);
        let young = pending("2026-01-01T09:59:45Z");
        let s = schedulability(None, 1, 0, &[&young], times, ts(NOW));
        assert_eq!((s.pending_pods, s.unschedulable), (0, false));
        assert_eq!(s.recheck_after, Some(SignedDuration::from_secs(15)));

        let old = pending("2026-01-01T09:59:29Z");
        let s = schedulability(None, 1, 0, &[&old], times, ts(NOW));
        assert_eq!((s.pending_pods, s.unschedulable), (1, true));
        assert_eq!(s.recheck_after, Some(SignedDuration::from_secs(300)));
        let marked = s.condition.expect("a condition");
        assert_eq!((marked.status.as_str(), marked.reason.as_str()), ("False", "reschedule"));

        // Marked a minute ago, its pod now ready: still unschedulable for 4 more minutes.
        let mut a_minute_ago = marked.clone();
        a_minute_ago.last_transition_time = Some(Time(ts("2026-01-01T09:59:00Z")));
        let s = schedulability(Some(&a_minute_ago), 1, 1, &[], times, ts(NOW));
        assert!(s.unschedulable);
        assert_eq!(s.recheck_after, Some(SignedDuration::from_secs(240)));

        // Marked six minutes ago: recovered.
        let mut long_ago = marked;
        long_ago.last_transition_time = Some(Time(ts("2026-01-01T09:54:00Z")));
        let s = schedulability(Some(&long_ago), 1, 1, &[], times, ts(NOW));
        assert!(!s.unschedulable);
        let recovered = s.condition.expect("a condition");
        assert_eq!((recovered.status.as_str(), recovered.reason.as_str()), ("True", "recover"));
        assert_eq!(recovered.message, "unschedulable subset recovered after 300.000000 seconds");
        assert_eq!(s.recheck_after, None);
    }
}
