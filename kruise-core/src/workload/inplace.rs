//! In-place updates turned into actions, on top of [`crate::inplace`], for any workload
//! planner: the refresh of a pod whose update is under way, and the update itself.
//!
//! A planner hands in a [`PlanSink`] (where actions and requeues go) and the pod; pods of one
//! revision on the same images get the same patches, so the sink keeps the last bodies and a
//! rollout's plan holds a few bodies rather than one per pod ([`SharedPatches`]).

use jiff::{SignedDuration, Timestamp};
use k8s_openapi::api::core::v1::{Pod, PodCondition};

use super::{Action, Patch, PodPatchPurpose, PodStatusPurpose};
use crate::inplace::{self, RefreshAction, UpdateOptions, UpdateSpec};
use crate::lifecycle::{LifecyclePatch, LifecycleState};
use crate::pod::PodConditionsUpdate;

/// Patch bodies that many pods of a rollout share.
#[derive(Debug, Default)]
pub struct SharedPatches {
    /// The body that marks a pod for deletion, built once.
    pub delete_mark: Option<Patch>,
    /// The last in-place update of a pod, for the next pod that needs the same one.
    pub pod: Option<Patch>,
    /// The last change of a pod's conditions, likewise.
    pub conditions: Option<Patch>,
}

/// Where a planner collects what it decides.
pub trait PlanSink {
    /// The actions planned so far.
    fn actions(&mut self) -> &mut Vec<Action>;
    /// Bodies shared between pods.
    fn shared_patches(&mut self) -> &mut SharedPatches;
    /// Asks to plan again after `after` (the soonest request wins).
    fn requeue_after(&mut self, after: SignedDuration);
}

/// A strategic merge patch with `body`, sharing the body of `last` when it is the same.
fn shared(last: &mut Option<Patch>, body: serde_json::Value) -> Patch {
    let patch = match last {
        Some(Patch::Strategic(previous)) if **previous == body => {
            Patch::Strategic(previous.clone())
        }
        _ => Patch::strategic(body),
    };
    *last = Some(patch.clone());
    patch
}

fn name_uid(pod: &Pod) -> (String, String) {
    (pod.metadata.name.clone().unwrap_or_default(), pod.metadata.uid.clone().unwrap_or_default())
}

/// The conditions of `after` that differ from the pod's, as a status patch action.
fn conditions_action(
    sink: &mut impl PlanSink,
    pod: &Pod,
    after: Vec<PodCondition>,
) -> Option<Action> {
    let before = crate::pod::conditions_of(pod);
    let changed: Vec<PodCondition> = after.into_iter().filter(|c| !before.contains(c)).collect();
    if changed.is_empty() {
        return None;
    }
    let body = PodConditionsUpdate { conditions: changed }.to_status_patch();
    let (name, uid) = name_uid(pod);
    Some(Action::PatchPodStatus {
        namespace: None,
        name,
        uid,
        purpose: PodStatusPurpose::InPlaceUpdateReady,
        patch: shared(&mut sink.shared_patches().conditions, body),
    })
}

/// Pushes the actions of a pod update: the resize subresource first, then the pod patch.
fn push_update(
    sink: &mut impl PlanSink,
    pod: &Pod,
    update: inplace::PodUpdate,
    purpose: PodPatchPurpose,
) {
    let (name, uid) = name_uid(pod);
    if let Some(resize) = update.resize {
        sink.actions().push(Action::PatchPodResize {
            namespace: None,
            name: name.clone(),
            uid: uid.clone(),
            patch: Patch::strategic(resize),
        });
    }
    let patch = shared(&mut sink.shared_patches().pod, update.patch);
    sink.actions().push(Action::PatchPod { namespace: None, name, uid, purpose, patch });
}

/// Upstream's `Refresh` of one pod: grace periods, later batches, `InPlaceUpdateReady`.
pub fn refresh(
    sink: &mut impl PlanSink,
    pod: &Pod,
    opts: &UpdateOptions,
    now: Timestamp,
) -> Result<(), String> {
    let action = inplace::refresh(pod, opts, now).map_err(|err| {
        let name = pod.metadata.name.as_deref().unwrap_or_default();
        format!("refreshing in-place update of pod {name}: {err}")
    })?;
    match action {
        RefreshAction::WaitGracePeriod { requeue_after } => sink.requeue_after(requeue_after),
        RefreshAction::FinishGracePeriod(update) | RefreshAction::DropGracePeriod(update) => {
            push_update(sink, pod, *update, PodPatchPurpose::InPlaceGrace);
        }
        RefreshAction::NextBatch(update) => {
            push_update(sink, pod, *update, PodPatchPurpose::InPlaceUpdate)
        }
        RefreshAction::MarkReady { conditions } => {
            if let Some(action) = conditions_action(sink, pod, conditions) {
                sink.actions().push(action);
            }
        }
        _ => {}
    }
    Ok(())
}

/// Plans the in-place update of `pod` to `spec`, moving it to `Updating`, and asks to look
/// again when the grace period ends.
pub fn update_in_place(
    sink: &mut impl PlanSink,
    pod: &Pod,
    spec: &UpdateSpec,
    opts: &UpdateOptions,
    now: Timestamp,
) {
    update_in_place_with(sink, pod, spec, opts, now, Some(&LifecycleState::Updating));
}

/// Plans the in-place update of `pod` to `spec` without touching its lifecycle state (as
/// Advanced DaemonSets update pods), and asks to look again when the grace period ends.
pub fn update_in_place_plain(
    sink: &mut impl PlanSink,
    pod: &Pod,
    spec: &UpdateSpec,
    opts: &UpdateOptions,
    now: Timestamp,
) {
    update_in_place_with(sink, pod, spec, opts, now, None);
}

fn update_in_place_with(
    sink: &mut impl PlanSink,
    pod: &Pod,
    spec: &UpdateSpec,
    opts: &UpdateOptions,
    now: Timestamp,
    state: Option<&LifecycleState>,
) {
    let mut plan = inplace::plan_in_place_update(pod, spec, opts, now);
    // Upstream's AdditionalFuncs: the update also moves the pod to Updating.
    if let Some(state) = state {
        let lifecycle = LifecyclePatch::for_state(state, now);
        merge_lifecycle(&mut plan.update.patch, &lifecycle);
    }
    if let Some(conditions) = plan.conditions.take()
        && let Some(action) = conditions_action(sink, pod, conditions)
    {
        sink.actions().push(action);
    }
    let delay = plan.requeue_after;
    push_update(sink, pod, plan.update, PodPatchPurpose::InPlaceUpdate);
    let grace = opts.grace_period_seconds;
    if let Some(delay) = delay {
        sink.requeue_after(delay);
    } else if grace > 0 {
        sink.requeue_after(SignedDuration::from_secs(i64::from(grace)));
    }
}

/// Adds the lifecycle labels and annotations to a pod patch.
fn merge_lifecycle(patch: &mut serde_json::Value, lifecycle: &LifecyclePatch) {
    let Some(root) = patch.as_object_mut() else { return };
    let metadata = root.entry("metadata").or_insert_with(|| serde_json::json!({}));
    let Some(metadata) = metadata.as_object_mut() else { return };
    for (section, entries) in
        [("labels", &lifecycle.labels), ("annotations", &lifecycle.annotations)]
    {
        let target = metadata.entry(section).or_insert_with(|| serde_json::json!({}));
        if let Some(target) = target.as_object_mut() {
            for (k, v) in entries {
                target.insert(k.clone(), serde_json::Value::String(v.clone()));
            }
        }
    }
}
