//! Updating: advancing lifecycle states, then moving pods between revisions.

use kruise_api::well_known::{kubernetes, labels};
use serde_json::json;

use crate::lifecycle::InPlaceStep;
use crate::ordering::PriorityKey;
use crate::pod::ActiveRank;

use super::diffs::{self, Counting};
use super::inplace_glue;
use super::podinfo::{RevisionName, State};
use super::round::{Round, TOUCH_AHEAD};
use super::spec::UpdatePolicy;
use crate::revision::short_hash;
use crate::workload::{Action, EventType, Patch, PodPatchPurpose};

/// Upstream's `Update`: an error message for the `FailedUpdate` condition if a pod cannot be
/// updated as the strategy asks.
pub(crate) fn update(r: &mut Round<'_, '_>) -> Result<(), String> {
    // 1. Refresh every pod's lifecycle state and in-place update progress.
    let mut modified = false;
    for i in 0..r.pods.len() {
        modified |= refresh(r, i)?;
        modified |= fix_template_hash_label(r, i);
    }
    if modified || r.spec.on_delete || r.spec.paused {
        return Ok(());
    }

    // 2. How many pods to move, and which way.
    let consistent = r.current.name == r.update.name;
    let d = diffs::calculate(
        r.spec,
        &r.pods,
        consistent,
        r.gates.clone_set_partition_rollback,
        Counting::Update,
    );
    if d.update_num == 0 {
        return Ok(());
    }
    let forward = d.update_num > 0;

    // 3. Pods waiting to move.
    let mut waiting: Vec<usize> = Vec::new();
    for (i, p) in r.pods.iter().enumerate() {
        // Pods marked for deletion are leaving; updating them gains nothing.
        if p.updated() == forward || p.specified_delete() {
            continue;
        }
        let can = match p.state() {
            State::PreparingDelete => false,
            State::Updated => true,
            _ => !p.in_grace(),
        };
        if can {
            waiting.push(i);
        }
    }

    // 4. Order them, 5. keep what the budgets allow. (When the budget admits none of them
    // whatever the order, skip the ordering: the common case while a rollout waits.)
    let target = if forward { r.update.clone() } else { r.current.clone() };
    let unavailable = Unavailable::count(r, forward);
    if budget_exhausted(r, &d, &waiting, unavailable) {
        return Ok(());
    }
    let waiting = sort_update_indexes(r, waiting);
    let chosen = limit(r, &d, waiting, unavailable);

    // 6. Move them. Their names and uids are read from memory not touched since the pod pass;
    // read each block's first, with loads that do not wait for each other. (All at once, the
    // first would leave the cache before their turn when many pods move.)
    for block in chosen.chunks(TOUCH_AHEAD) {
        std::hint::black_box(
            block.iter().fold(0, |acc, &i| acc ^ r.pods[i].pod.facts().touch_head()),
        );
        for &i in block {
            update_pod(r, i, &target)?;
        }
    }
    Ok(())
}

/// CloneSet's update order: Kubernetes' active-pods order, then priority, then scatter, then
/// pods already in PreparingUpdate first.
///
/// The active-pods sort and the (stable) priority sort are done as one sort by
/// (priority, active rank, name, index): `waiting` is in index order, so the index stands in
/// for stability and every key is distinct.
fn sort_update_indexes(r: &Round<'_, '_>, waiting: Vec<usize>) -> Vec<usize> {
    let order = &r.spec.order;
    let name = |i: usize| r.pods.get(i).map_or("", |p| p.name());
    let rank = |i: usize| r.ranks.get(i).copied().filter(|&rank| rank != u128::MAX);
    let priority = |i: usize| order.priority_key_of(&r.order_labels, i).packed();
    // One integer per pod when the keys fit; else (priority, rank) pairs of integers when
    // every rank packs (all times whole seconds, as Kubernetes writes them); else the ranks
    // field by field. Names are read only to break ties.
    let sorted = sort_compacted(&waiting, rank, priority, name).unwrap_or_else(|| {
        let packed: Option<Vec<((u128, u128), usize)>> =
            waiting.iter().map(|&i| Some(((priority(i), rank(i)?), i))).collect();
        match packed {
            Some(keyed) => sort_keyed(keyed, name),
            None => {
                let keyed: Vec<((PriorityKey, ActiveRank), usize)> = waiting
                    .iter()
                    .map(|&i| {
                        ((order.priority_key_of(&r.order_labels, i), r.pods[i].active_rank()), i)
                    })
                    .collect();
                sort_keyed(keyed, name)
            }
        }
    });
    let sorted = order.scatter(&r.order_labels, sorted);
    crate::ordering::preparing_update_first(sorted, |i| r.pods[i].preparing_update())
}

/// Sorts `waiting` by (priority, packed rank, name, index) as [`sort_keyed`] does, with each
/// key squeezed into one `u128` together with the index: every field shifted down to its
/// smallest value in `waiting` and given only the bits its range needs. Sorting 16-byte
/// integers moves half the memory the keyed sort moves (or less) and compares without
/// calls, which tells at 100,000 pods. Names are read only for pods whose keys tie.
///
/// `None` when a rank does not pack, there are more than 16 priorities, or the key does not
/// fit (the fields' ranges together need more than 128 bits).
fn sort_compacted<'n>(
    waiting: &[usize],
    rank: impl Fn(usize) -> Option<u128>,
    priority: impl Fn(usize) -> u128,
    name: impl Fn(usize) -> &'n str,
) -> Option<Vec<usize>> {
    const FIELDS: usize = ActiveRank::PACKED_FIELDS.len();
    const MAX_PRIORITIES: usize = 16;
    let bits = |value: u128| 128 - value.leading_zeros();
    // The rank's fields, most significant first.
    let fields = |rank: u128| {
        let mut out = [0u128; FIELDS];
        let mut shift = ActiveRank::PACKED_FIELDS.iter().sum::<u32>();
        for (slot, width) in out.iter_mut().zip(ActiveRank::PACKED_FIELDS) {
            shift -= width;
            *slot = (rank >> shift) & ((1u128 << width) - 1);
        }
        out
    };

    // 1. The priorities in play, and each rank field's range.
    let mut priorities: Vec<u128> = Vec::new();
    let mut low = [u128::MAX; FIELDS];
    let mut high = [0u128; FIELDS];
    let mut top_index = 0;
    for &i in waiting {
        let p = priority(i);
        if !priorities.contains(&p) {
            if priorities.len() == MAX_PRIORITIES {
                return None;
            }
            priorities.push(p);
        }
        for (f, value) in fields(rank(i)?).into_iter().enumerate() {
            low[f] = low[f].min(value);
            high[f] = high[f].max(value);
        }
        top_index = top_index.max(i);
    }
    priorities.sort_unstable();
    let priority_bits = bits(priorities.len().saturating_sub(1) as u128);
    let widths: Vec<u32> =
        low.iter().zip(&high).map(|(&l, &h)| bits(h.saturating_sub(l))).collect();
    let index_bits = bits(top_index as u128);
    if priority_bits + widths.iter().sum::<u32>() + index_bits > 128 {
        return None;
    }

    // 2. One integer per pod: priority, rank fields, index.
    let mut keys: Vec<u128> = Vec::with_capacity(waiting.len());
    for &i in waiting {
        let p = priority(i);
        let mut key = priorities.iter().position(|&q| q == p).unwrap_or(0) as u128;
        for ((value, width), low) in fields(rank(i)?).into_iter().zip(&widths).zip(low) {
            key = (key << width) | (value - low);
        }
        keys.push((key << index_bits) | i as u128);
    }
    keys.sort_unstable();

    // 3. Pods whose keys tie go by name, then index (they are in index order already).
    let index_mask = (1u128 << index_bits) - 1;
    let mut sorted: Vec<usize> = keys.iter().map(|&k| (k & index_mask) as usize).collect();
    let mut start = 0;
    while start < keys.len() {
        let head = keys[start] >> index_bits;
        let end = start + keys[start..].iter().take_while(|&&k| k >> index_bits == head).count();
        if end - start > 1
            && let Some(run) = sorted.get_mut(start..end)
        {
            run.sort_by(|&a, &b| name(a).cmp(name(b)));
        }
        start = end;
    }
    Some(sorted)
}

/// Pod indexes sorted by key, then name, then index (so every key is distinct).
fn sort_keyed<'n, K: Ord>(
    mut keyed: Vec<(K, usize)>,
    name: impl Fn(usize) -> &'n str,
) -> Vec<usize> {
    keyed.sort_unstable_by(|a, b| {
        a.0.cmp(&b.0).then_with(|| name(a.1).cmp(name(b.1))).then(a.1.cmp(&b.1))
    });
    keyed.into_iter().map(|(_, i)| i).collect()
}

/// How many pods are unavailable, overall and at the target revision.
#[derive(Clone, Copy)]
struct Unavailable {
    all: i32,
    at_target: i32,
}

impl Unavailable {
    /// The target is the update revision when `forward`, else the current one.
    fn count(r: &Round<'_, '_>, forward: bool) -> Self {
        let mut counts = Unavailable { all: 0, at_target: 0 };
        for p in r.pods.iter().filter(|p| !p.available()) {
            counts.all += 1;
            counts.at_target += i32::from(if forward { p.updated() } else { p.current() });
        }
        counts
    }
}

/// Whether [`limit`] would keep no pod whatever the order of `waiting`.
fn budget_exhausted(
    r: &Round<'_, '_>,
    d: &diffs::Diffs,
    waiting: &[usize],
    counts: Unavailable,
) -> bool {
    let Unavailable { all: unavailable, at_target: target_unavailable } = counts;
    if target_unavailable >= d.update_max_unavailable {
        return true;
    }
    // Only pods that are already unavailable could still go.
    unavailable >= d.update_max_unavailable && waiting.iter().all(|&i| r.pods[i].available())
}

/// Upstream's `limitUpdateIndexes`: at most `|update_num|` pods, and never more unavailable
/// pods (at the target revision, and overall) than the update may make unavailable.
fn limit(
    r: &Round<'_, '_>,
    d: &diffs::Diffs,
    mut waiting: Vec<usize>,
    counts: Unavailable,
) -> Vec<usize> {
    let wanted = usize::try_from(d.update_num.unsigned_abs()).unwrap_or(usize::MAX);
    waiting.truncate(wanted);
    let Unavailable { all: mut unavailable, at_target: target_unavailable } = counts;
    let mut can = 0;
    for &i in &waiting {
        if target_unavailable + can >= d.update_max_unavailable {
            break;
        }
        // Updating a pod that is already unavailable does not add to the count.
        if r.pods[i].available() {
            if unavailable >= d.update_max_unavailable {
                break;
            }
            unavailable += 1;
        }
        can += 1;
    }
    waiting.truncate(usize::try_from(can).unwrap_or(0));
    waiting
}

/// Upstream's `refreshPodState`: in-place update bookkeeping, then the lifecycle state the pod
/// should be in. Returns whether the state changed.
fn refresh(r: &mut Round<'_, '_>, i: usize) -> Result<bool, String> {
    if !r.pods[i].in_place_idle() {
        inplace_glue::refresh(r, i)?;
    }
    // Only these states move on their own.
    let state = r.pods[i].state();
    if !matches!(
        state,
        State::PreparingNormal | State::PreparingUpdate | State::Updating | State::Updated
    ) {
        return Ok(false);
    }
    let completed = state == State::Updating && inplace_glue::update_completed(r, i);
    let p = &r.pods[i];
    Ok(
        match crate::lifecycle::cloneset_refresh(
            r.spec.lifecycle,
            p.pod.pod(),
            p.updated(),
            completed,
            r.now,
        ) {
            Some(transition) => {
                crate::workload::push_lifecycle(&mut r.actions, p.name(), p.uid(), transition)
            }
            None => false,
        },
    )
}

/// Adds the `pod-template-hash` label to pods made before it existed.
fn fix_template_hash_label(r: &mut Round<'_, '_>, i: usize) -> bool {
    let p = &r.pods[i];
    if p.has_template_hash() {
        return false;
    }
    r.actions.push(Action::PatchPod {
        namespace: None,
        name: p.name().to_owned(),
        uid: p.uid().to_owned(),
        purpose: PodPatchPurpose::TemplateHashLabel,
        patch: Patch::strategic(json!({
            "metadata": { "labels": { kubernetes::labels::POD_TEMPLATE_HASH: short_hash(p.revision_hash()) } }
        })),
    });
    true
}

/// Upstream's `updatePod`: in place when the policy and the change allow (through the
/// inPlaceUpdate hook), else by marking the pod for deletion.
fn update_pod(
    r: &mut Round<'_, '_>,
    i: usize,
    target: &super::revisions::Revision,
) -> Result<(), String> {
    let spec = r.spec;
    if matches!(spec.policy, UpdatePolicy::InPlaceIfPossible | UpdatePolicy::InPlaceOnly) {
        let hash = r.pods[i].revision_hash();
        let old = r.revisions.iter().position(|rev| RevisionName::new(rev.name).matches(hash));
        if let Some(old) = old
            && let Some(update_spec) = inplace_glue::update_spec(r, old, target)
        {
            let p = &r.pods[i];
            match crate::lifecycle::cloneset_in_place_step(spec.lifecycle, p.pod.pod(), r.now) {
                InPlaceStep::PrepareUpdate(transition) => {
                    crate::workload::push_lifecycle(&mut r.actions, p.name(), p.uid(), transition);
                    return Ok(());
                }
                InPlaceStep::Wait => return Ok(()),
                InPlaceStep::NotAllowed(state) => {
                    return Err(format!(
                        "not allowed to in-place update pod {} in state {}",
                        p.name(),
                        state.as_ref().map_or("", |s| s.as_str())
                    ));
                }
                _ => {}
            }
            let name = p.name().to_owned();
            inplace_glue::update_in_place(r, i, &update_spec);
            r.event(
                EventType::Normal,
                "SuccessfulUpdatePodInPlace",
                format!("successfully update pod {name} in-place(revision {})", target.name),
                true,
            );
            return Ok(());
        }
        if spec.policy == UpdatePolicy::InPlaceOnly {
            return Err(format!(
                "find Pod {} update strategy is InPlaceOnly but can not update in-place",
                r.pods[i].name()
            ));
        }
    }
    let p = &r.pods[i];
    let (name, uid, marked) = (p.name(), p.uid(), p.marked_for_deletion());
    // As `crate::pod::specified_delete_patch`, from the facts: only unlabelled pods are patched.
    if !marked {
        let patch = r
            .shared_patches
            .delete_mark
            .get_or_insert_with(|| {
                Patch::strategic(
                    json!({"metadata": {"labels": {labels::SPECIFIED_DELETE: "true"}}}),
                )
            })
            .clone();
        r.actions.push(Action::PatchPod {
            namespace: None,
            name: name.to_owned(),
            uid: uid.to_owned(),
            purpose: PodPatchPurpose::SpecifiedDelete,
            patch,
        });
    }
    r.event(
        EventType::Normal,
        "SuccessfulUpdatePodReCreate",
        format!(
            "successfully patch pod {name} specified-delete for update(revision {})",
            target.name
        ),
        true,
    );
    Ok(())
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;

    /// A packed rank from its fields (each masked to its width).
    fn rank_of(fields: [u128; 4]) -> u128 {
        fields
            .iter()
            .zip(ActiveRank::PACKED_FIELDS)
            .fold(0, |rank, (&value, width)| (rank << width) | (value & ((1u128 << width) - 1)))
    }

    proptest! {
        /// The compacted sort orders exactly as the keyed sort: by priority, rank, name, index.
        #[test]
        fn compacted_sort_orders_as_the_keyed_sort(
            pods in prop::collection::vec(
                (0u8..4, 0u128..3, 0u128..2000, 0u128..5, prop::bool::ANY, 0u8..3),
                0..200,
            ),
            skip in 0usize..3,
            wide in prop::bool::ANY,
        ) {
            // Priorities far apart, and (when `wide`) one rank far away, as real ones are.
            let priorities = [7u128 << 70, 3, 1 << 100, 99];
            let names = ["b", "a", "c"];
            let waiting: Vec<usize> = (0..pods.len()).filter(|i| i % 3 != skip).collect();
            let rank = |i: usize| {
                let (_, class, ready, restarts, far, _) = pods[i];
                let created = if far && wide { 1 << 40 } else { 5_000 + ready / 2 };
                Some(rank_of([class, (1 << 39) - ready, (1 << 31) - restarts, created]))
            };
            let priority = |i: usize| priorities[usize::from(pods[i].0)];
            let name = |i: usize| names[usize::from(pods[i].5)];
            let compacted = sort_compacted(&waiting, rank, priority, name);
            let keyed: Vec<((u128, u128), usize)> = waiting
                .iter()
                .map(|&i| ((priority(i), rank(i).unwrap_or(0)), i))
                .collect();
            prop_assert_eq!(compacted, Some(sort_keyed(keyed, name)));
        }
    }

    #[test]
    fn compacted_sort_declines_what_does_not_fit() {
        let waiting: Vec<usize> = (0..40).collect();
        let name = |_: usize| "";
        // More than 16 priorities.
        let many = sort_compacted(&waiting, |_| Some(0), |i| i as u128, name);
        assert_eq!(many, None);
        // Ranks spread over every bit of every field, and indexes up to 2^40.
        let all_bits = (1u128 << ActiveRank::PACKED_FIELDS.iter().sum::<u32>()) - 1;
        let spread = |i: usize| Some(if i.is_multiple_of(2) { 0 } else { all_bits });
        let far: Vec<usize> = vec![0, 1, 1 << 40];
        assert_eq!(sort_compacted(&far, spread, |_| 0, name), None);
        // A rank that does not pack.
        assert_eq!(sort_compacted(&waiting, |_| None, |_| 0, name), None);
        // Two priorities, narrow ranks: fits.
        let sorted = sort_compacted(&waiting, |i| Some((i % 5) as u128), |i| (i % 2) as u128, name);
        let mut want = waiting.clone();
        want.sort_by_key(|&i| (i % 2, i % 5, i));
        assert_eq!(sorted, Some(want));
    }
}
