//! Scaling: restoring, creating and deleting pods.

use std::collections::BTreeSet;

use crate::lifecycle::DeleteStep;

use super::diffs::{self, Counting};
use super::newpods;
use super::round::Round;
use crate::workload::{Action, DeletePurpose, EventType};

/// Upstream's `Scale`: returns whether anything was planned (then the update pass is skipped),
/// or an error message for the `FailedScale` condition.
pub(crate) fn scale(r: &mut Round<'_, '_>) -> Result<bool, String> {
    // 1. Pods marked for deletion and pods already in PreparingDelete.
    let mut specified = Vec::new();
    let mut pre_delete = Vec::new();
    let mut num_to_delete = 0;
    for (i, p) in r.pods.iter().enumerate() {
        if p.specified_delete() {
            specified.push(i);
        }
        if p.preparing_delete() {
            pre_delete.push(i);
        }
        if p.specified_delete() || p.preparing_delete() {
            num_to_delete += 1;
        }
    }
    if restore_preparing_delete(r, &pre_delete, num_to_delete) {
        return Ok(true);
    }

    // 2. The numbers.
    let gate = r.gates.preparing_update_as_update;
    let consistent = r.current.name == r.update.name;
    let d = diffs::calculate(
        r.spec,
        &r.pods,
        consistent,
        r.gates.clone_set_partition_rollback,
        Counting::Scale { preparing_update_as_update: gate },
    );
    if d.scale_up_num > d.scale_up_limit {
        r.event(
            EventType::Warning,
            "ScaleUpLimited",
            format!(
                "scaleUp is limited because of scaleStrategy.maxUnavailable, limit: {}",
                d.scale_up_limit
            ),
            false,
        );
    }

    // 3. Scale out.
    if d.scale_up_num > 0 {
        let created = create_pods(r, d.scale_up_limit, d.scale_up_num_old_revision);
        return Ok(created > 0);
    }

    // 4. Pods whose preDelete hook is done (or still holding them).
    if !pre_delete.is_empty() && delete_pods(r, &pre_delete, DeletePurpose::PreDeleteFinished) {
        return Ok(true);
    }

    // 5. Pods named for deletion. Ready pods may go only while enough pods stay available.
    // Upstream's limit counts unavailable pods that are marked for deletion as if they were
    // available; they are taken off here, so that the plan never leaves fewer than
    // `replicas - maxUnavailable` available pods (unless there already were fewer).
    let unavailable_marked = r
        .pods
        .iter()
        .filter(|p| p.specified_delete() && !p.preparing_delete() && !p.available())
        .count();
    let mut delete_ready_limit =
        d.delete_ready_limit.saturating_sub(i32::try_from(unavailable_marked).unwrap_or(i32::MAX));
    let pre: BTreeSet<usize> = pre_delete.iter().copied().collect();
    let chosen: Vec<usize> = specified
        .into_iter()
        .filter(|i| !pre.contains(i))
        .filter(|&i| take_ready(r.pods[i].ready(), &mut delete_ready_limit))
        .collect();
    if !chosen.is_empty() && delete_pods(r, &chosen, DeletePurpose::SpecifiedDelete) {
        return Ok(true);
    }

    // 6. Scale in.
    if d.scale_down_num > 0 {
        if num_to_delete > 0 {
            // Wait for the pods already on their way out.
            return Ok(false);
        }
        let victims =
            choose_pods_to_delete(r, d.scale_down_num, d.scale_down_num_old_revision, gate);
        let victims: Vec<usize> = victims
            .into_iter()
            .filter(|&i| take_ready(r.pods[i].ready(), &mut delete_ready_limit))
            .collect();
        return Ok(delete_pods(r, &victims, DeletePurpose::ScaleIn));
    }
    Ok(false)
}

/// A pod that is not ready may always go; a ready one only while `limit` lasts.
fn take_ready(ready: bool, limit: &mut i32) -> bool {
    if !ready {
        return true;
    }
    if *limit > 0 {
        *limit -= 1;
        true
    } else {
        false
    }
}

/// Upstream's `managePreparingDelete`: while fewer pods than wanted would remain, pods in
/// PreparingDelete that were not named for deletion go back to PreparingNormal. Not done when a
/// hook marks pods not ready (a pod may not come back then).
fn restore_preparing_delete(
    r: &mut Round<'_, '_>,
    pre_delete: &[usize],
    num_to_delete: i32,
) -> bool {
    if !crate::lifecycle::cloneset_can_cancel_delete(r.spec.lifecycle) {
        return false;
    }
    let mut diff = r.spec.replicas - r.pods.len() as i32 + num_to_delete;
    let mut modified = false;
    for &i in pre_delete {
        if diff <= 0 {
            break;
        }
        let p = &r.pods[i];
        if p.specified_delete() {
            continue;
        }
        let transition = crate::lifecycle::cloneset_cancel_delete(p.pod.pod(), r.now);
        modified |= crate::workload::push_lifecycle(&mut r.actions, p.name(), p.uid(), transition);
        diff -= 1;
    }
    modified
}

/// Plans `expected` new pods, the first `expected_current` of them at the current revision.
/// Returns how many were planned.
fn create_pods(r: &mut Round<'_, '_>, expected: i32, expected_current: i32) -> usize {
    let count = usize::try_from(expected).unwrap_or(0);
    if count == 0 {
        return 0;
    }
    let active_ids: BTreeSet<&str> =
        r.pods.iter().map(|p| p.instance_id()).filter(|id| !id.is_empty()).collect();
    let taken_names: BTreeSet<&str> =
        r.snapshot.pods.iter().filter_map(|p| p.metadata().name.as_deref()).collect();
    let pvc_ids = r.pvcs.iter().filter_map(|pvc| {
        pvc.metadata
            .labels
            .as_ref()
            .and_then(|l| l.get(kruise_api::well_known::labels::CLONESET_INSTANCE_ID))
            .map(String::as_str)
    });
    let ids = newpods::available_ids(r.spec, count, pvc_ids, &active_ids, &taken_names);
    let existing_pvcs: BTreeSet<String> =
        r.pvcs.iter().filter_map(|p| p.metadata.name.clone()).collect();
    let current_count = if expected <= expected_current {
        count
    } else {
        usize::try_from(expected_current).unwrap_or(0)
    };
    let (short_hash, readiness_gate) = (r.gates.clone_set_short_hash, r.gates.pod_webhook);
    let prototype = |revision: &super::revisions::Revision| {
        let mut prototype = newpods::PodPrototype::new(
            r.spec,
            &revision.template,
            &revision.name,
            short_hash,
            r.now,
        );
        if readiness_gate {
            prototype.admit_readiness_gate();
        }
        prototype
    };
    let (current, update) = (prototype(&r.current), prototype(&r.update));
    for (n, id) in ids.iter().enumerate() {
        let prototype = if n < current_count { &current } else { &update };
        let claims = newpods::claims_for(r.spec, id);
        let pod = prototype.instantiate(r.spec, id, &claims);
        for (_, claim) in claims {
            if claim.metadata.name.as_ref().is_some_and(|name| existing_pvcs.contains(name)) {
                continue;
            }
            r.actions.push(Action::CreatePvc { pvc: Box::new(claim) });
        }
        let name = pod.name().to_owned();
        r.actions.push(Action::CreatePod { pod });
        r.event(
            EventType::Normal,
            "SuccessfulCreate",
            format!("succeed to create pod {name}"),
            true,
        );
    }
    ids.len()
}

/// Upstream's `deletePods`: pods held by a preDelete hook move to PreparingDelete; the others
/// are deleted with their PVCs. Returns whether anything was planned.
pub(crate) fn delete_pods(
    r: &mut Round<'_, '_>,
    victims: &[usize],
    purpose: DeletePurpose,
) -> bool {
    let mut modified = false;
    for &i in victims {
        let p = &r.pods[i];
        if let DeleteStep::PrepareDelete(transition) =
            crate::lifecycle::cloneset_delete_step(r.spec.lifecycle, p.pod.pod(), r.now)
        {
            modified |=
                crate::workload::push_lifecycle(&mut r.actions, p.name(), p.uid(), transition);
            continue;
        }
        let name = p.name().to_owned();
        let instance_id = p.instance_id();
        r.actions.push(Action::DeletePod { name: name.clone(), uid: p.uid().to_owned(), purpose });
        r.event(
            EventType::Normal,
            "SuccessfulDelete",
            format!("succeed to delete pod {name}"),
            true,
        );
        modified = true;
        let claims: Vec<Action> = r
            .pvcs
            .iter()
            .filter(|pvc| {
                pvc.metadata
                    .labels
                    .as_ref()
                    .and_then(|l| l.get(kruise_api::well_known::labels::CLONESET_INSTANCE_ID))
                    .map(String::as_str)
                    .unwrap_or_default()
                    == instance_id
            })
            .map(|pvc| Action::DeletePvc {
                name: pvc.metadata.name.clone().unwrap_or_default(),
                uid: pvc.metadata.uid.clone().unwrap_or_default(),
            })
            .collect();
        r.actions.extend(claims);
    }
    modified
}

/// Upstream's `choosePodsToDelete`: `total` victims, `old_revision` of them (at most) from the
/// pods not yet updated, each group ranked for deletion.
fn choose_pods_to_delete(
    r: &Round<'_, '_>,
    total: i32,
    old_revision: i32,
    gate: bool,
) -> Vec<usize> {
    let (updated, not_updated): (Vec<usize>, Vec<usize>) =
        (0..r.pods.len()).partition(|&i| r.pods[i].updated_for_scale(gate));
    let mut victims = Vec::new();
    if old_revision >= total {
        victims.extend(rank(r, not_updated, total));
    } else if old_revision > 0 {
        victims.extend(rank(r, not_updated, old_revision));
        victims.extend(rank(r, updated, total - old_revision));
    } else {
        victims.extend(rank(r, updated, total));
    }
    victims
}

/// The first `count` of `group` in deletion order (all of them when `count` covers the group).
fn rank(r: &Round<'_, '_>, group: Vec<usize>, count: i32) -> Vec<usize> {
    let count = usize::try_from(count).unwrap_or(0);
    if count >= group.len() {
        return group;
    }
    let views: Vec<crate::pod::PodRankView> = group
        .iter()
        .map(|&i| {
            crate::pod::PodRankView::from_pod(r.pods[i].pod.pod())
                .with_available(r.pods[i].available())
        })
        .collect();
    let topology_keys: Vec<String> = r
        .spec
        .cs
        .spec
        .template
        .spec
        .as_ref()
        .and_then(|s| s.topology_spread_constraints.as_ref())
        .into_iter()
        .flatten()
        .map(|c| c.topology_key.clone())
        .collect();
    let ranks = if topology_keys.is_empty() {
        crate::pod::same_node_ranks(&views)
    } else {
        crate::pod::spread_constraint_ranks(&views, &topology_keys, &r.snapshot.node_labels)
    };
    let views: Vec<crate::pod::PodRankView> =
        views.into_iter().zip(ranks).map(|(v, rank)| v.with_rank(rank)).collect();
    crate::pod::deletion_order(&views).into_iter().take(count).map(|k| group[k]).collect()
}
