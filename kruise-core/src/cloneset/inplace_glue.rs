//! The in-place update steps of the update pass, on top of [`crate::inplace`].

use jiff::SignedDuration;
use k8s_openapi::api::core::v1::PodCondition;

use crate::inplace::{self, RefreshAction, UpdateOptions, UpdateSpec};
use crate::lifecycle::{LifecyclePatch, LifecycleState};
use crate::pod::PodConditionsUpdate;

use super::revisions::Revision;
use super::round::Round;
use super::spec::UpdatePolicy;
use crate::workload::{Action, Patch, PodPatchPurpose, PodStatusPurpose};

/// The in-place options of this CloneSet and its feature gates.
pub(crate) fn options(r: &Round<'_, '_>) -> UpdateOptions {
    UpdateOptions {
        grace_period_seconds: r.spec.grace_period_seconds(),
        vertical_scaling: r.gates.in_place_workload_vertical_scaling,
        env_from_metadata: r.gates.in_place_update_env_from_metadata,
        resize_subresource: r.snapshot.options.resize_subresource,
        recreate_on_volume_claim_template_change: r.gates.recreate_pod_when_change_vct,
        ignore_volume_claim_template_change: r.spec.policy == UpdatePolicy::InPlaceOnly,
        short_hash: r.gates.clone_set_short_hash,
    }
}

/// A strategic merge patch with `body`, sharing the body of `last` when it is the same: pods
/// of one revision on the same images get the same patches, so a rollout's plan holds a few
/// bodies rather than one per pod.
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

/// The conditions of `after` that differ from pod `i`'s, as a status patch action.
fn conditions_action(r: &mut Round<'_, '_>, i: usize, after: Vec<PodCondition>) -> Option<Action> {
    let p = &r.pods[i];
    let (name, uid) = (p.name(), p.uid());
    let before = crate::pod::conditions_of(p.pod);
    let changed: Vec<PodCondition> = after.into_iter().filter(|c| !before.contains(c)).collect();
    if changed.is_empty() {
        return None;
    }
    let body = PodConditionsUpdate { conditions: changed }.to_status_patch();
    Some(Action::PatchPodStatus {
        name: name.to_owned(),
        uid: uid.to_owned(),
        purpose: PodStatusPurpose::InPlaceUpdateReady,
        patch: shared(&mut r.shared_patches.conditions, body),
    })
}

/// Pushes the actions of a pod update: the resize subresource first, then the pod patch.
fn push_update(
    r: &mut Round<'_, '_>,
    i: usize,
    update: inplace::PodUpdate,
    purpose: PodPatchPurpose,
) {
    let p = &r.pods[i];
    if let Some(resize) = update.resize {
        r.actions.push(Action::PatchPodResize {
            name: p.name().to_owned(),
            uid: p.uid().to_owned(),
            patch: Patch::strategic(resize),
        });
    }
    let patch = shared(&mut r.shared_patches.pod, update.patch);
    let p = &r.pods[i];
    r.actions.push(Action::PatchPod {
        name: p.name().to_owned(),
        uid: p.uid().to_owned(),
        purpose,
        patch,
    });
}

/// Upstream's `Refresh` for pod `i`: grace periods, later batches, `InPlaceUpdateReady`.
pub(crate) fn refresh(r: &mut Round<'_, '_>, i: usize) -> Result<(), String> {
    let opts = r.in_place_options.clone();
    let p = &r.pods[i];
    let action = inplace::refresh(p.pod, &opts, r.now)
        .map_err(|err| format!("refreshing in-place update of pod {}: {err}", p.name()))?;
    match action {
        RefreshAction::WaitGracePeriod { requeue_after } => r.requeue_after(requeue_after),
        RefreshAction::FinishGracePeriod(update) | RefreshAction::DropGracePeriod(update) => {
            push_update(r, i, *update, PodPatchPurpose::InPlaceGrace);
        }
        RefreshAction::NextBatch(update) => {
            push_update(r, i, *update, PodPatchPurpose::InPlaceUpdate)
        }
        RefreshAction::MarkReady { conditions } => {
            if let Some(action) = conditions_action(r, i, conditions) {
                r.actions.push(action);
            }
        }
        _ => {}
    }
    Ok(())
}

/// Whether the in-place update of pod `i` has finished.
pub(crate) fn update_completed(r: &Round<'_, '_>, i: usize) -> bool {
    inplace::check_in_place_update_completed(r.pods[i].pod, &r.in_place_options).is_ok()
}

/// The in-place change from revision `old` (an index into the round's revisions) to
/// `target`, computed once per revision pair; `None` when it needs recreation.
pub(crate) fn update_spec(
    r: &mut Round<'_, '_>,
    old: usize,
    target: &Revision,
) -> Option<UpdateSpec> {
    if let Some(cached) = r.in_place_specs.get(&(old, target.name.clone())) {
        return cached.clone();
    }
    let spec = match (&target.object, r.revisions.get(old)) {
        (Some(target_rev), Some(old_rev)) => {
            inplace::calculate_revision_update_spec(old_rev.rev, target_rev, &r.in_place_options)
        }
        _ => None,
    };
    r.in_place_specs.insert((old, target.name.clone()), spec.clone());
    spec
}

/// Plans the in-place update of pod `i` to `spec`, moving it to `Updating`.
pub(crate) fn update_in_place(r: &mut Round<'_, '_>, i: usize, spec: &UpdateSpec) {
    let p = &r.pods[i];
    let mut plan = inplace::plan_in_place_update(p.pod, spec, &r.in_place_options, r.now);
    // Upstream's AdditionalFuncs: the update also moves the pod to Updating.
    let lifecycle = LifecyclePatch::for_state(&LifecycleState::Updating, r.now);
    merge_lifecycle(&mut plan.update.patch, &lifecycle);
    if let Some(conditions) = plan.conditions.take()
        && let Some(action) = conditions_action(r, i, conditions)
    {
        r.actions.push(action);
    }
    let delay = plan.requeue_after;
    push_update(r, i, plan.update, PodPatchPurpose::InPlaceUpdate);
    let grace = r.spec.grace_period_seconds();
    if let Some(delay) = delay {
        r.requeue_after(delay);
    } else if grace > 0 {
        r.requeue_after(SignedDuration::from_secs(i64::from(grace)));
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
