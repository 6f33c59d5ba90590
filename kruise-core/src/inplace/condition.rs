//! The `InPlaceUpdateReady` readiness gate and condition.

use jiff::Timestamp;
use k8s_openapi::api::core::v1::{Pod, PodCondition, PodReadinessGate, PodSpec};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;

use super::{IN_PLACE_UPDATE_READY, UpdateOptions, UpdateSpec, vertical};

/// Adds the `InPlaceUpdateReady` readiness gate to a pod spec unless it is there.
pub fn inject_readiness_gate(spec: &mut PodSpec) {
    let gates = spec.readiness_gates.get_or_insert_with(Vec::new);
    if !gates.iter().any(|g| g.condition_type == IN_PLACE_UPDATE_READY) {
        gates.push(PodReadinessGate { condition_type: IN_PLACE_UPDATE_READY.to_owned() });
    }
}

/// Whether the pod has the `InPlaceUpdateReady` readiness gate.
pub fn has_readiness_gate(pod: &Pod) -> bool {
    pod.spec
        .as_ref()
        .and_then(|s| s.readiness_gates.as_ref())
        .is_some_and(|gates| gates.iter().any(|g| g.condition_type == IN_PLACE_UPDATE_READY))
}

/// The pod's `InPlaceUpdateReady` condition, if any.
pub fn in_place_update_condition(pod: &Pod) -> Option<&PodCondition> {
    condition(pod, IN_PLACE_UPDATE_READY)
}

fn conditions(pod: &Pod) -> &[PodCondition] {
    pod.status.as_ref().and_then(|s| s.conditions.as_deref()).unwrap_or(&[])
}

fn condition<'a>(pod: &'a Pod, type_: &str) -> Option<&'a PodCondition> {
    conditions(pod).iter().find(|c| c.type_ == type_)
}

/// Sets a condition the way Kruise does: an existing condition of the type is replaced only
/// when its status differs; a missing one is appended.
fn set_condition(list: &mut Vec<PodCondition>, new: PodCondition) {
    match list.iter_mut().find(|c| c.type_ == new.type_) {
        Some(existing) => {
            if existing.status != new.status {
                *existing = new;
            }
        }
        None => list.push(new),
    }
}

/// Recomputes the pod's `Ready` condition from its readiness gates, as Kruise does after
/// setting a gate's condition to False (only when `Ready` and `ContainersReady` exist).
fn refresh_ready(pod: &Pod, list: &mut Vec<PodCondition>, now: Timestamp) {
    let find = |list: &[PodCondition], t: &str| list.iter().find(|c| c.type_ == t).cloned();
    if find(list, "Ready").is_none() {
        return;
    }
    if find(list, "ContainersReady").is_none_or(|c| c.status != "True") {
        return;
    }
    let gates = pod.spec.as_ref().and_then(|s| s.readiness_gates.as_deref()).unwrap_or(&[]);
    let mut unready = Vec::new();
    for gate in gates {
        match find(list, &gate.condition_type) {
            None => unready.push(format!(
                "corresponding condition of pod readiness gate {:?} does not exist.",
                gate.condition_type
            )),
            Some(c) if c.status != "True" => unready.push(format!(
                "the status of pod readiness gate {:?} is not \"True\", but {}",
                gate.condition_type, c.status
            )),
            Some(_) => {}
        }
    }
    let ready = if unready.is_empty() {
        PodCondition {
            type_: "Ready".to_owned(),
            status: "True".to_owned(),
            last_transition_time: Some(Time(now)),
            ..PodCondition::default()
        }
    } else {
        PodCondition {
            type_: "Ready".to_owned(),
            status: "False".to_owned(),
            reason: Some("ReadinessGatesNotReady".to_owned()),
            message: Some(unready.join(", ")),
            ..PodCondition::default()
        }
    };
    set_condition(list, ready);
}

/// The pod's conditions after setting `InPlaceUpdateReady` to True (`ready`) or False (with
/// reason `StartInPlaceUpdate`, which also turns `Ready` False), or `None` when nothing
/// changes. Write the result to the pod's status.
pub fn update_condition(pod: &Pod, ready: bool, now: Timestamp) -> Option<Vec<PodCondition>> {
    let new = PodCondition {
        type_: IN_PLACE_UPDATE_READY.to_owned(),
        status: if ready { "True" } else { "False" }.to_owned(),
        reason: (!ready).then(|| "StartInPlaceUpdate".to_owned()),
        last_transition_time: Some(Time(now)),
        ..PodCondition::default()
    };
    let before = conditions(pod);
    let mut list = before.to_vec();
    set_condition(&mut list, new);
    if !ready {
        refresh_ready(pod, &mut list, now);
    }
    (list != before).then_some(list)
}

/// Whether the in-place update must take the pod out of service first: it has the readiness
/// gate, unless (with vertical scaling) only resources change and no container restarts for
/// them.
pub fn check_pod_needs_be_unready(pod: &Pod, spec: &UpdateSpec, opts: &UpdateOptions) -> bool {
    if !opts.vertical_scaling || !spec.vertical_update_only() {
        return has_readiness_gate(pod);
    }
    vertical::resize_needs_restart(pod, &spec.container_resources) && has_readiness_gate(pod)
}
