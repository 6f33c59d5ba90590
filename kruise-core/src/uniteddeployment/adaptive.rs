//! Adaptive scheduling: whether a subset can take more pods, from its pods, its `Schedulable`
//! condition and the time, as upstream's controller works it out before allocating.
//!
//! A pod that has waited for a node longer than `rescheduleCriticalSeconds` (default 30),
//! counted from its creation (pending, no node, `PodScheduled=False` with reason
//! `Unschedulable`), marks its subset unschedulable: the subset's `Schedulable` condition goes
//! False (reason `reschedule`) and stays so for `unschedulableDuration` (default 300 s), then
//! recovers (reason `recover`). While marked, the allocator holds the subset to its ready pods
//! and gives the rest to the subsets after it.
//!
//! With `reserveUnschedulablePods` ([`reservation`]) the pods that wait are kept and labelled
//! [`RESERVED_POD_LABEL`]` = "true"`; the replicas they hold are given again, as temporary
//! pods, to the subsets after theirs, until they run (ready for `unschedulableDuration`).

use jiff::{SignedDuration, Timestamp};
use k8s_openapi::api::core::v1::Pod;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use kruise_api::apps::v1beta1::{
    AdaptiveUnitedDeploymentStrategy, UnitedDeploymentSubsetCondition,
    UnitedDeploymentSubsetConditionType,
};
use kruise_api::well_known::labels::CONTROLLER_REVISION_HASH;

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

/// The pod label of reservation mode (`reserveUnschedulablePods`): `"true"` on a pod that holds
/// a replica without running (its subset's replicas are given again to later subsets),
/// `"false"` on the others. Upstream's key.
pub const RESERVED_POD_LABEL: &str = "apps.kruise.io/united-deployment-reserved-pod";

/// A subset in reservation mode, and what to record.
#[derive(Clone, Debug, PartialEq)]
pub struct Reservation {
    /// Its pods that hold a replica without running.
    pub reserved_pods: i32,
    /// Old-revision pods past the update timeout (they widen `maxUnavailable`).
    pub update_timeout_pods: i32,
    /// It has reserved pods.
    pub unschedulable: bool,
    /// Its `Schedulable` condition was False before this reconcile.
    pub marked: bool,
    /// The `Schedulable` condition to keep.
    pub condition: UnitedDeploymentSubsetCondition,
    /// Pods whose label must be written: name, UID, reserved.
    pub labels: Vec<(String, String, bool)>,
    /// When to look again.
    pub recheck_after: Option<SignedDuration>,
}

fn label_of<'a>(pod: &'a Pod, key: &str) -> Option<&'a str> {
    pod.metadata.labels.as_ref().and_then(|l| l.get(key)).map(String::as_str)
}

fn ready_since(pod: &Pod) -> Option<Timestamp> {
    pod.status.as_ref()?.conditions.as_ref()?.iter().find_map(|c| {
        (c.type_ == "Ready" && c.status == "True")
            .then(|| c.last_transition_time.as_ref().map(|t| t.0))
            .flatten()
    })
}

/// Whether `pod` is reserved now, and when to look again (upstream's
/// `CheckPodReallyInReservedStatus`). `revision` is the UnitedDeployment's expected revision
/// and `updated_since` when its `UnitedDeploymentUpdated` condition last changed; the third
/// value is true for an old-revision pod past the update timeout.
fn pod_reserved(
    pod: &Pod,
    revision: &str,
    updated_since: Option<Timestamp>,
    times: AdaptiveTimes,
    now: Timestamp,
) -> (bool, Option<SignedDuration>, bool) {
    let pod_revision = label_of(pod, CONTROLLER_REVISION_HASH).unwrap_or_default();
    let phase = pod.status.as_ref().and_then(|s| s.phase.as_deref()).unwrap_or_default();
    if label_of(pod, RESERVED_POD_LABEL) == Some("true") {
        if phase == "Running"
            && pod_revision == revision
            && let Some(since) = ready_since(pod)
        {
            let until = since + times.unschedulable;
            if until < now {
                return (false, None, false);
            }
            return (true, Some(until.duration_since(now)), false);
        }
        return (true, Some(times.unschedulable), false);
    }
    if pod.metadata.deletion_timestamp.is_some() {
        return (false, None, false);
    }
    if pod_revision == revision {
        let bound =
            pod.spec.as_ref().and_then(|s| s.node_name.as_deref()).is_some_and(|n| !n.is_empty());
        if phase != "Pending" || bound || !waits_for_node(pod) {
            return (false, None, false);
        }
        let created = pod.metadata.creation_timestamp.as_ref().map_or(now, |t| t.0);
        let deadline = created + times.reschedule_critical;
        if deadline < now {
            return (true, Some(times.unschedulable), false);
        }
        return (false, Some(deadline.duration_since(now)), false);
    }
    let deadline = updated_since.unwrap_or(now) + times.reschedule_critical;
    if deadline < now {
        return (true, Some(times.unschedulable), true);
    }
    (false, Some(deadline.duration_since(now)), false)
}

/// Reservation mode for one subset (upstream's
/// `calculateSubsetsStatusForReservedAdaptiveStrategy`): each pod is judged reserved or not
/// and labelled so; a pod without the label in a subset already marked is reserved at once. The
/// subset is unschedulable while it has reserved pods: its `Schedulable` condition False with
/// reason `reschedule` ("reserved pods found"), else True ("no reserved pods").
pub fn reservation(
    current: Option<&UnitedDeploymentSubsetCondition>,
    revision: &str,
    updated_since: Option<Timestamp>,
    pods: &[&Pod],
    times: AdaptiveTimes,
    now: Timestamp,
) -> Reservation {
    let marked = current.is_some_and(|c| c.status == "False");
    let mut out = Reservation {
        reserved_pods: 0,
        update_timeout_pods: 0,
        unschedulable: false,
        marked,
        condition: condition("True", "reschedule", String::new(), now),
        labels: Vec::new(),
        recheck_after: None,
    };
    let sooner = |a: Option<SignedDuration>, b: SignedDuration| Some(a.map_or(b, |a| a.min(b)));
    for pod in pods {
        let name = pod.metadata.name.clone().unwrap_or_default();
        let uid = pod.metadata.uid.clone().unwrap_or_default();
        let label = label_of(pod, RESERVED_POD_LABEL);
        if marked && label.is_none() {
            out.reserved_pods += 1;
            out.labels.push((name, uid, true));
            continue;
        }
        let (reserved, after, timed_out) = pod_reserved(pod, revision, updated_since, times, now);
        if timed_out {
            out.update_timeout_pods += 1;
        }
        if reserved {
            out.reserved_pods += 1;
        }
        if let Some(after) = after.filter(|a| a.is_positive()) {
            out.recheck_after = sooner(out.recheck_after, after);
        }
        if label.is_none() || (label == Some("true")) != reserved {
            out.labels.push((name, uid, reserved));
        }
    }
    out.unschedulable = out.reserved_pods > 0;
    let new = if out.unschedulable {
        condition("False", "reschedule", "reserved pods found".into(), now)
    } else {
        condition("True", "reschedule", "no reserved pods".into(), now)
    };
    out.condition = keep_time(current, new);
    out
}

/// After the allocation (upstream's `postProcessSubsetStatusForReservedAdaptiveStrategy`): a
/// subset that has just recovered and is scaled up is marked again, so that its new pods are
/// reserved until they run and the temporary pods elsewhere wait for them.
pub fn recovered_and_scaled_up(
    reservation: &mut Reservation,
    replicas: i32,
    next: i32,
    now: Timestamp,
) {
    if !reservation.unschedulable && reservation.marked && next > replicas {
        reservation.condition =
            condition("False", "reschedule", "subset just recovered scaled up".into(), now);
    }
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

    fn pod(
        created: &str,
        phase: &str,
        labels: serde_json::Value,
        ready_since: Option<&str>,
    ) -> Pod {
        let mut conditions = vec![];
        if phase == "Pending" {
            conditions.push(
                json!({"type": "PodScheduled", "status": "False", "reason": "Unschedulable"}),
            );
        }
        if let Some(since) = ready_since {
            conditions
                .push(json!({"type": "Ready", "status": "True", "lastTransitionTime": since}));
        }
        serde_json::from_value(json!({
            "metadata": {"name": "p", "uid": "u", "creationTimestamp": created, "labels": labels},
            "spec": {"containers": []},
            "status": {"phase": phase, "conditions": conditions}
        }))
        .expect("a pod")
    }

    fn schedulable(status: &str) -> UnitedDeploymentSubsetCondition {
        condition(status, "reschedule", String::new(), ts("2026-01-01T09:00:00Z"))
    }

    /// Upstream's `TestCalculateSubsetsStatusForReservedAdaptiveStrategy`: rescheduling after
    /// 10 s, reserved pods released after 30 s ready.
    #[test]
    fn reservation_follows_upstreams_table() {
        let times = AdaptiveTimes {
            reschedule_critical: SignedDuration::from_secs(10),
            unschedulable: SignedDuration::from_secs(30),
        };
        let now = ts(NOW);
        let check = |cond: &str, pod: Pod| {
            let r = reservation(Some(&schedulable(cond)), "", None, &[&pod], times, now);
            (r.reserved_pods, r.unschedulable, r.recheck_after.map(|d| d.as_secs()), r.labels.len())
        };
        // Just created, pending: a 9 s recheck, labelled false.
        assert_eq!(
            check("True", pod("2026-01-01T09:59:59Z", "Pending", json!({}), None)),
            (0, false, Some(9), 1)
        );
        let no = json!({RESERVED_POD_LABEL: "false"});
        let yes = json!({RESERVED_POD_LABEL: "true"});
        // Running, not reserved: nothing.
        assert_eq!(
            check(
                "True",
                pod("2026-01-01T09:59:52Z", "Running", no.clone(), Some("2026-01-01T09:59:55Z"))
            ),
            (0, false, None, 0)
        );
        // Pending past the timeout: reserved.
        assert_eq!(
            check("True", pod("2026-01-01T09:59:47Z", "Pending", no, None)),
            (1, true, Some(30), 1)
        );
        // Reserved, ready 10 s: still, for 20 s more.
        assert_eq!(
            check(
                "True",
                pod("2026-01-01T09:59:00Z", "Running", yes.clone(), Some("2026-01-01T09:59:50Z"))
            ),
            (1, true, Some(20), 0)
        );
        // Reserved, ready 35 s: released.
        assert_eq!(
            check(
                "True",
                pod("2026-01-01T09:59:00Z", "Running", yes, Some("2026-01-01T09:59:25Z"))
            ),
            (0, false, None, 1)
        );
        // Created in a subset already marked: reserved at once.
        assert_eq!(
            check("False", pod("2026-01-01T09:59:59Z", "Pending", json!({}), None)),
            (1, true, None, 1)
        );
        let r = reservation(
            Some(&schedulable("True")),
            "",
            None,
            &[&pod("2026-01-01T09:59:47Z", "Pending", json!({}), None)],
            times,
            now,
        );
        assert_eq!(
            (r.condition.status.as_str(), r.condition.message.as_str()),
            ("False", "reserved pods found")
        );
    }

    /// Upstream's `TestCheckPodReserved` old-revision cases and the post-allocation marking.
    #[test]
    fn old_revisions_time_out_and_recovered_subsets_are_marked_when_scaled_up() {
        let times = AdaptiveTimes {
            reschedule_critical: SignedDuration::from_secs(10),
            unschedulable: SignedDuration::from_secs(5),
        };
        let now = ts(NOW);
        let old = pod(
            "2026-01-01T09:00:00Z",
            "Running",
            json!({CONTROLLER_REVISION_HASH: "old", RESERVED_POD_LABEL: "false"}),
            Some("2026-01-01T09:00:00Z"),
        );
        let timed_out =
            reservation(None, "new", Some(ts("2026-01-01T09:59:49Z")), &[&old], times, now);
        assert_eq!((timed_out.reserved_pods, timed_out.update_timeout_pods), (1, 1));
        let waiting =
            reservation(None, "new", Some(ts("2026-01-01T09:59:56Z")), &[&old], times, now);
        assert_eq!(
            (waiting.reserved_pods, waiting.recheck_after),
            (0, Some(SignedDuration::from_secs(6)))
        );

        let mut recovered = reservation(Some(&schedulable("False")), "", None, &[], times, now);
        assert!(recovered.marked && !recovered.unschedulable);
        recovered_and_scaled_up(&mut recovered, 10, 10, now);
        assert_eq!(recovered.condition.status, "True");
        recovered_and_scaled_up(&mut recovered, 10, 15, now);
        assert_eq!(recovered.condition.status, "False");
        assert_eq!(recovered.condition.message, "subset just recovered scaled up");
    }
}
