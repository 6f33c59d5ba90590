//! How many pods to create, delete and update: the arithmetic at the heart of the CloneSet
//! controller.

use super::podinfo::PodInfo;
use super::spec::Spec;

/// The numbers one planning round works with. All counts are non-negative except
/// `update_num`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct Diffs {
    /// Pods to create.
    pub scale_up_num: i32,
    /// Of those, how many should be at the current revision (may exceed `scale_up_num`).
    pub scale_up_num_old_revision: i32,
    /// Pods to delete beyond those already marked for deletion.
    pub scale_down_num: i32,
    /// Of those, how many should be at the current revision.
    pub scale_down_num_old_revision: i32,
    /// Most pods to create now (`scaleStrategy.maxUnavailable`).
    pub scale_up_limit: i32,
    /// Most ready pods to delete now (`maxUnavailable`).
    pub delete_ready_limit: i32,
    /// Extra pods wanted above `replicas` for now.
    pub use_surge: i32,
    /// Of those, at the current revision.
    pub use_surge_old_revision: i32,
    /// Pods to move to the update revision (positive) or back to the current one (negative).
    pub update_num: i32,
    /// Most unavailable pods while updating.
    pub update_max_unavailable: i32,
}

/// Which pods count as updated.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Counting {
    /// Scaling: pods in PreparingUpdate count as updated with the PreparingUpdateAsUpdate gate.
    Scale { preparing_update_as_update: bool },
    /// Updating: only the revision label counts, and pods marked for deletion are not counted
    /// as staying at their revision.
    Update,
}

/// Computes the diffs for `pods` (active pods only).
pub(crate) fn calculate(
    spec: &Spec<'_>,
    pods: &[PodInfo<'_>],
    revisions_consistent: bool,
    partition_rollback: bool,
    counting: Counting,
) -> Diffs {
    let replicas = spec.replicas;
    let partition = spec.partition;
    let max_surge = spec.max_surge;
    let max_unavailable = spec.max_unavailable;

    let mut new_count = 0;
    let mut new_active = 0;
    let mut old_count = 0;
    let mut old_active = 0;
    let mut unavailable_new = 0;
    let mut unavailable_old = 0;
    let mut to_delete_new = 0;
    let mut to_delete_old = 0;
    let mut pre_deleting_new = 0;
    let mut pre_deleting_old = 0;

    for p in pods {
        let updated = match counting {
            Counting::Scale { preparing_update_as_update } => {
                p.updated_for_scale(preparing_update_as_update)
            }
            Counting::Update => p.updated(),
        };
        let (count, active, unavailable, to_delete, pre_deleting) = if updated {
            (
                &mut new_count,
                &mut new_active,
                &mut unavailable_new,
                &mut to_delete_new,
                &mut pre_deleting_new,
            )
        } else {
            (
                &mut old_count,
                &mut old_active,
                &mut unavailable_old,
                &mut to_delete_old,
                &mut pre_deleting_old,
            )
        };
        *count += 1;
        if p.preparing_delete() {
            *pre_deleting += 1;
        } else if p.specified_delete() && counting == Counting::Update {
            // Leaving: neither kept at the old revision nor worth updating. (Upstream counts
            // these as active here, which can take the pods that stay below the partition.)
            *to_delete += 1;
        } else {
            *active += 1;
            if p.specified_delete() {
                *to_delete += 1;
            } else if !p.available() {
                *unavailable += 1;
            }
        }
    }

    let mut update_old_diff = old_active - partition;
    let mut update_new_diff = new_active - (replicas - partition);
    let total_unavailable = pre_deleting_new + pre_deleting_old + unavailable_new + unavailable_old;
    if revisions_consistent || !partition_rollback {
        update_old_diff = update_old_diff.max(0);
        update_new_diff = update_new_diff.min(0);
    }

    let mut res = Diffs::default();
    if max_surge > 0 {
        // Surge to keep availability while pods marked for deletion are replaced.
        let mut scale_surge = 0;
        let mut scale_old_surge = 0;
        let to_delete = to_delete_new + to_delete_old;
        if to_delete > 0 {
            scale_surge = ((total_unavailable + to_delete) - max_unavailable).max(0).min(to_delete);
            if scale_surge > to_delete_new {
                scale_old_surge = scale_surge - to_delete_new;
            }
        }
        // Surge for moving pods between revisions.
        let mut update_surge = 0;
        let mut update_old_surge = 0;
        if (update_old_diff < 0 && update_new_diff > 0)
            || (update_old_diff > 0 && update_new_diff < 0)
        {
            if update_old_diff.abs() <= update_new_diff.abs() {
                update_surge = update_old_diff.abs();
                if update_old_diff < 0 {
                    update_old_surge = update_surge;
                }
            } else {
                update_surge = update_new_diff.abs();
                if update_new_diff > 0 {
                    update_old_surge = update_surge;
                }
            }
        }
        // A round either scales or updates, so only the larger need is served.
        if scale_surge >= update_surge {
            res.use_surge = max_surge.min(scale_surge);
            res.use_surge_old_revision = res.use_surge.min(scale_old_surge);
        } else {
            res.use_surge = max_surge.min(update_surge);
            res.use_surge_old_revision = res.use_surge.min(update_old_surge);
        }
    }

    let all = pods.len() as i32;
    let (current_total, current_total_old) = if spec.exclude_preparing_delete {
        (all - pre_deleting_old - pre_deleting_new, old_count - pre_deleting_old)
    } else {
        (all, old_count)
    };
    let expected_total = replicas.saturating_add(res.use_surge);
    let expected_total_old = partition + res.use_surge_old_revision;

    let up = expected_total - current_total;
    if up > 0 {
        res.scale_up_num = up;
        res.scale_up_num_old_revision = (expected_total_old - current_total_old).max(0);
        res.scale_up_limit =
            up.min(spec.scale_max_unavailable.saturating_sub(total_unavailable).max(0));
    }

    let down = current_total - to_delete_old - to_delete_new - expected_total;
    if down > 0 {
        res.scale_down_num = down;
        res.scale_down_num_old_revision =
            (current_total_old - to_delete_old - expected_total_old).max(0);
    }
    if to_delete_new > 0 || to_delete_old > 0 || res.scale_down_num > 0 {
        res.delete_ready_limit =
            max_unavailable.saturating_add(all - replicas).saturating_sub(total_unavailable).max(0);
    }

    res.update_num = if update_old_diff.abs() <= update_new_diff.abs() {
        update_old_diff
    } else {
        -update_new_diff
    };
    if res.update_num != 0 {
        res.update_max_unavailable = max_unavailable.saturating_add(all - replicas);
    }
    res
}

#[cfg(test)]
mod tests {
    use jiff::Timestamp;
    use k8s_openapi::api::core::v1::{Pod, PodCondition, PodStatus};
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
    use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;
    use kruise_api::apps::v1beta1::{
        CloneSet, CloneSetSpec, CloneSetUpdateStrategy, RollingUpdateCloneSetStrategy,
    };

    use super::*;
    use crate::cloneset::SnapshotPod;
    use crate::cloneset::podinfo::{InPlay, RevisionName};

    const NEW: &str = "demo-new";
    const OLD: &str = "demo-old";

    fn cloneset(replicas: i32, partition: i32, max_unavailable: i32, max_surge: i32) -> CloneSet {
        CloneSet {
            metadata: ObjectMeta { name: Some("demo".into()), ..Default::default() },
            spec: CloneSetSpec {
                replicas: Some(replicas),
                // An empty selector matches every pod (and the empty template).
                selector: Some(Default::default()),
                update_strategy: CloneSetUpdateStrategy {
                    rolling_update: Some(RollingUpdateCloneSetStrategy {
                        partition: Some(IntOrString::Int(partition)),
                        max_unavailable: Some(IntOrString::Int(max_unavailable)),
                        max_surge: Some(IntOrString::Int(max_surge)),
                        ..Default::default()
                    }),
                    ..Default::default()
                },
                ..Default::default()
            },
            status: None,
        }
    }

    /// A pod at `revision` in lifecycle `state`, ready or not, maybe marked for deletion.
    fn pod(revision: &str, state: &str, ready: bool, delete: bool) -> Pod {
        let mut labels = std::collections::BTreeMap::new();
        labels.insert("controller-revision-hash".to_owned(), revision.to_owned());
        labels.insert("lifecycle.apps.kruise.io/state".to_owned(), state.to_owned());
        if delete {
            labels.insert("apps.kruise.io/specified-delete".to_owned(), "true".to_owned());
        }
        Pod {
            metadata: ObjectMeta { labels: Some(labels), ..Default::default() },
            spec: None,
            status: Some(PodStatus {
                phase: Some("Running".into()),
                conditions: Some(vec![PodCondition {
                    type_: "Ready".into(),
                    status: if ready { "True" } else { "False" }.into(),
                    ..Default::default()
                }]),
                ..Default::default()
            }),
        }
    }

    fn diffs(cs: &CloneSet, pods: &[Pod], counting: Counting) -> Diffs {
        diffs_with(cs, pods, counting, false)
    }

    /// With `partition_rollback` (the `CloneSetPartitionRollback` gate) as given; the update
    /// revision differs from the current one.
    fn diffs_with(cs: &CloneSet, pods: &[Pod], counting: Counting, rollback: bool) -> Diffs {
        let mut warnings = Vec::new();
        let spec = Spec::parse(cs, false, &mut warnings).expect("valid spec");
        let update = InPlay { update: RevisionName::new(NEW), current: RevisionName::new(NEW) };
        let now = Timestamp::from_second(1_700_000_000).expect("valid");
        let pods: Vec<SnapshotPod> = pods.iter().cloned().map(SnapshotPod::from).collect();
        let infos: Vec<PodInfo<'_>> =
            pods.iter().map(|p| PodInfo::new(p, &spec, &update, now)).collect();
        calculate(&spec, &infos, false, rollback, counting)
    }

    fn n(state: &str, count: usize, revision: &str, ready: bool) -> Vec<Pod> {
        (0..count).map(|_| pod(revision, state, ready, false)).collect()
    }

    const SCALE: Counting = Counting::Scale { preparing_update_as_update: false };

    #[test]
    fn scale_out_from_nothing() {
        let d = diffs(&cloneset(5, 0, 1, 0), &[], SCALE);
        assert_eq!(d, Diffs { scale_up_num: 5, scale_up_limit: 5, ..Default::default() });
        let d = diffs(&cloneset(5, 0, 1, 0), &n("Normal", 5, NEW, true), SCALE);
        assert_eq!(d, Diffs::default());
    }

    #[test]
    fn specified_delete_of_a_ready_pod_uses_the_unavailable_budget() {
        let mut pods = n("Normal", 4, NEW, true);
        pods.push(pod(NEW, "Normal", true, true));
        let d = diffs(&cloneset(5, 0, 1, 0), &pods, SCALE);
        assert_eq!(d, Diffs { delete_ready_limit: 1, ..Default::default() });
    }

    #[test]
    fn specified_delete_with_surge_creates_first() {
        let mut pods = n("Normal", 4, NEW, true);
        pods.push(pod(NEW, "Normal", true, true));
        let d = diffs(&cloneset(5, 0, 0, 1), &pods, SCALE);
        assert_eq!(
            d,
            Diffs { scale_up_num: 1, use_surge: 1, scale_up_limit: 1, ..Default::default() }
        );
        pods.push(pod(NEW, "Normal", false, false));
        let d = diffs(&cloneset(5, 0, 0, 1), &pods, SCALE);
        assert_eq!(d, Diffs { use_surge: 1, ..Default::default() });
        pods.pop();
        pods.push(pod(NEW, "Normal", true, false));
        let d = diffs(&cloneset(5, 0, 0, 1), &pods, SCALE);
        assert_eq!(d, Diffs { delete_ready_limit: 1, use_surge: 1, ..Default::default() });
    }

    /// `CloneSetPartitionRollback`: with more pods updated than the partition leaves, the
    /// gate rolls the extra ones back; without it they stay.
    #[test]
    fn partition_rollback_gate_rolls_back_past_the_partition() {
        let cs = cloneset(5, 3, 1, 0);
        let pods = n("Normal", 5, NEW, true);
        assert_eq!(diffs_with(&cs, &pods, Counting::Update, false), Diffs::default());
        let rolled = diffs_with(&cs, &pods, Counting::Update, true);
        assert_eq!(rolled.update_num, -3, "{rolled:?}");
    }

    /// `PreparingUpdateAsUpdate`: an old pod in PreparingUpdate counts as updated when scaling,
    /// so a scale-in takes it first (as an old pod) only without the gate.
    #[test]
    fn preparing_update_as_update_gate_counts_the_pod_as_updated() {
        let cs = cloneset(4, 0, 1, 0);
        let mut pods = n("Normal", 4, NEW, true);
        pods.push(pod(OLD, "PreparingUpdate", true, false));
        let off = diffs(&cs, &pods, Counting::Scale { preparing_update_as_update: false });
        let on = diffs(&cs, &pods, Counting::Scale { preparing_update_as_update: true });
        assert_eq!((off.scale_down_num, off.scale_down_num_old_revision), (1, 1), "{off:?}");
        assert_eq!((on.scale_down_num, on.scale_down_num_old_revision), (1, 0), "{on:?}");
    }

    #[test]
    fn partition_bounds_the_update() {
        let cs = cloneset(5, 3, 1, 0);
        let d = diffs(&cs, &n("Normal", 5, OLD, true), Counting::Update);
        assert_eq!(d, Diffs { update_num: 2, update_max_unavailable: 1, ..Default::default() });
        let mut pods = n("Normal", 2, NEW, true);
        pods.extend(n("Normal", 3, OLD, true));
        assert_eq!(diffs(&cs, &pods, Counting::Update), Diffs::default());
    }

    #[test]
    fn in_place_update_with_surge() {
        let cs = cloneset(5, 3, 1, 1);
        let d = diffs(&cs, &n("Normal", 5, OLD, true), SCALE);
        assert_eq!(
            d,
            Diffs {
                scale_up_num: 1,
                use_surge: 1,
                update_num: 2,
                update_max_unavailable: 1,
                scale_up_limit: 1,
                ..Default::default()
            }
        );
        // One pod updating in place and a surge pod not ready yet: the surge pod's old-revision
        // share is scaled back in.
        let mut pods = n("Normal", 4, OLD, true);
        pods.push(pod(NEW, "Updating", false, false));
        pods.push(pod(NEW, "Normal", false, false));
        let d = diffs(&cs, &pods, SCALE);
        assert_eq!(
            d,
            Diffs { scale_down_num: 1, scale_down_num_old_revision: 1, ..Default::default() }
        );
    }

    #[test]
    fn preparing_delete_pods_count_as_unavailable() {
        let mut pods = n("Normal", 4, NEW, true);
        pods.push(pod(NEW, "PreparingDelete", true, false));
        let d = diffs(&cloneset(5, 0, 1, 0), &pods, SCALE);
        assert_eq!(d, Diffs::default());
        let d = diffs(&cloneset(6, 0, 1, 0), &pods, SCALE);
        assert_eq!(d, Diffs { scale_up_num: 1, scale_up_limit: 1, ..Default::default() });
    }
}
