//! The in-place update steps of the CloneSet's update pass, on top of
//! [`crate::workload::inplace`].

use super::revisions::Revision;
use super::round::Round;
use super::spec::UpdatePolicy;
use crate::inplace::{self, UpdateOptions, UpdateSpec};

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
        pod_template_hash_label: true,
    }
}

/// Upstream's `Refresh` for pod `i`: grace periods, later batches, `InPlaceUpdateReady`.
pub(crate) fn refresh(r: &mut Round<'_, '_>, i: usize) -> Result<(), String> {
    let opts = r.in_place_options.clone();
    let (pod, now) = (r.pods[i].pod, r.now);
    crate::workload::inplace::refresh(r, pod.pod(), &opts, now)
}

/// Whether the in-place update of pod `i` has finished.
pub(crate) fn update_completed(r: &Round<'_, '_>, i: usize) -> bool {
    inplace::check_in_place_update_completed(r.pods[i].pod.pod(), &r.in_place_options).is_ok()
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
    let opts = r.in_place_options.clone();
    let (pod, now) = (r.pods[i].pod, r.now);
    crate::workload::inplace::update_in_place(r, pod.pod(), spec, &opts, now);
}
