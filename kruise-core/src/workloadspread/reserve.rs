//! The webhook's bookkeeping: the subset a new pod goes to, and the status change that
//! reserves room for it (or records a pod on its way out).

use jiff::Timestamp;
use k8s_openapi::api::core::v1::Pod;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use kruise_api::apps::v1beta1::{WorkloadSpread, WorkloadSpreadStatus, WorkloadSpreadSubsetStatus};

use super::{
    InjectedSubset, SUBSET_SCHEDULABLE, VersionedKinds, initial_subset_statuses, pod_version,
    subsets, whole_seconds,
};

/// What happens to the pod.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum PodOperation {
    /// The pod is being created.
    Create,
    /// The pod is being deleted.
    Delete,
    /// The pod is being evicted.
    Eviction,
}

/// The outcome of [`reserve`].
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Reservation {
    /// The subset the pod is (or was) in; `None` when no subset has room (the pod is created
    /// without injection) or nothing is known.
    pub subset: Option<String>,
    /// The status to write. `Some` means: update the WorkloadSpread's status to this with the
    /// `resourceVersion` the WorkloadSpread was read at; on a conflict, read it again and call
    /// [`reserve`] again. `None`: nothing to write.
    pub new_status: Option<WorkloadSpreadStatus>,
    /// The identifier recorded in `creatingPods` for a pod without a name yet (to be written
    /// into the pod's annotation by [`super::inject`]).
    pub generated_uid: Option<String>,
}

/// [`reserve_versioned`] with the default [`VersionedKinds`].
pub fn reserve(
    ws: &WorkloadSpread,
    pod: &Pod,
    op: PodOperation,
    workload_replicas: i32,
    target_kind: &str,
    now: Timestamp,
    new_uid: &mut dyn FnMut() -> String,
) -> Reservation {
    reserve_versioned(
        ws,
        pod,
        op,
        workload_replicas,
        target_kind,
        &VersionedKinds::default(),
        now,
        new_uid,
    )
}

/// The webhook's decision for `pod` under `ws` (upstream's `acquireSuitableSubset` and
/// `updateSubsetForPod`):
///
/// - inactive pods (finished or being deleted) are left alone;
/// - one unlimited subset: the pod is in it, nothing is recorded;
/// - `StatefulSet` targets: the subset is chosen by the pod's ordinal (the first
///   `maxReplicas` ordinals in the first schedulable subset, and so on), nothing is recorded;
/// - otherwise the subset statuses of the pod's version (initialized from the spec, percentages
///   of `workload_replicas` rounded up, when there are none) are used:
///   - **Create**: a pod already recorded in `creatingPods` or `deletingPods` keeps the subset
///     it is recorded in; else the first subset not marked `Schedulable=False` with
///     `missingReplicas` above 0 (or unlimited, `-1`) is chosen, and, when limited, the pod's
///     name (or a new identifier from `new_uid` when it has none) goes into its
///     `creatingPods` and `missingReplicas` drops by one;
///   - **Delete** and **Eviction**: the subset comes from the pod's matched-workloadspread
///     annotation; unless the pod is already recorded, it goes into `deletingPods` and
///     `missingReplicas` grows by one (limited subsets only).
#[allow(clippy::too_many_arguments)]
pub fn reserve_versioned(
    ws: &WorkloadSpread,
    pod: &Pod,
    op: PodOperation,
    workload_replicas: i32,
    target_kind: &str,
    versioned: &VersionedKinds,
    now: Timestamp,
    new_uid: &mut dyn FnMut() -> String,
) -> Reservation {
    if !crate::pod::is_pod_active(pod) {
        return Reservation::default();
    }
    let specs = subsets(ws);
    if let [only] = specs
        && only.max_replicas.is_none()
    {
        return Reservation { subset: Some(only.name.clone()), ..Default::default() };
    }
    if target_kind == "StatefulSet" {
        return Reservation { subset: ordinal_subset(ws, pod), ..Default::default() };
    }

    let version = pod_version(pod, target_kind, versioned);
    let pod_name = crate::pod::name_of(pod);
    let mut status = ws.status.clone().unwrap_or_default();
    let statuses = status.versioned_subset_statuses.entry(version).or_default();
    if statuses.is_empty() {
        *statuses = initial_subset_statuses(ws, workload_replicas);
    }
    let recorded = |statuses: &[WorkloadSpreadSubsetStatus]| {
        statuses
            .iter()
            .find(|s| {
                s.creating_pods.contains_key(pod_name) || s.deleting_pods.contains_key(pod_name)
            })
            .map(|s| s.name.clone())
    };
    let stamp = Time(whole_seconds(now));
    match op {
        PodOperation::Create => {
            if !pod_name.is_empty()
                && let Some(subset) = recorded(statuses)
            {
                return Reservation { subset: Some(subset), ..Default::default() };
            }
            // Placed by an earlier call for the same request (a pod that several webhook
            // entries send): its place is already reserved under the id it carries.
            if let Some(injected) = InjectedSubset::from_pod(pod)
                && ws.metadata.name.as_deref() == Some(injected.name.as_str())
                && let Some(id) = injected.uid.as_deref()
                && statuses
                    .iter()
                    .any(|s| s.name == injected.subset && s.creating_pods.contains_key(id))
            {
                return Reservation {
                    subset: Some(injected.subset),
                    generated_uid: injected.uid,
                    ..Default::default()
                };
            }
            let Some(chosen) = statuses.iter_mut().find(|s| {
                let unschedulable = s
                    .conditions
                    .iter()
                    .any(|c| c.type_ == SUBSET_SCHEDULABLE && c.status == "False");
                !unschedulable && (s.missing_replicas > 0 || s.missing_replicas == -1)
            }) else {
                return Reservation::default();
            };
            if chosen.missing_replicas == -1 {
                return Reservation { subset: Some(chosen.name.clone()), ..Default::default() };
            }
            let generated_uid = pod_name.is_empty().then(new_uid);
            let key = generated_uid.clone().unwrap_or_else(|| pod_name.to_owned());
            chosen.creating_pods.insert(key, stamp);
            if chosen.missing_replicas > 0 {
                chosen.missing_replicas -= 1;
            }
            let subset = Some(chosen.name.clone());
            Reservation { subset, new_status: Some(status), generated_uid }
        }
        PodOperation::Delete | PodOperation::Eviction => {
            if recorded(statuses).is_some() {
                return Reservation::default();
            }
            let Some(injected) = InjectedSubset::from_pod(pod) else {
                return Reservation::default();
            };
            let Some(chosen) = statuses.iter_mut().find(|s| s.name == injected.subset) else {
                return Reservation::default();
            };
            if chosen.missing_replicas == -1 {
                return Reservation { subset: Some(chosen.name.clone()), ..Default::default() };
            }
            chosen.deleting_pods.insert(pod_name.to_owned(), stamp);
            if chosen.missing_replicas >= 0 {
                chosen.missing_replicas += 1;
            }
            let subset = Some(chosen.name.clone());
            Reservation { subset, new_status: Some(status), generated_uid: None }
        }
    }
}

/// The StatefulSet rule: ordinals `[0, max0)` in the first schedulable subset, the next
/// `max1` in the second, ...; unlimited subsets take every further ordinal.
fn ordinal_subset(ws: &WorkloadSpread, pod: &Pod) -> Option<String> {
    let ordinal = statefulset_ordinal(crate::pod::name_of(pod));
    let overall = ws.status.as_ref().map(|s| s.subset_statuses.as_slice()).unwrap_or_default();
    let mut threshold: i64 = 0;
    for subset in subsets(ws) {
        let unschedulable = overall.iter().filter(|s| s.name == subset.name).any(|s| {
            s.conditions.iter().any(|c| c.type_ == SUBSET_SCHEDULABLE && c.status == "False")
        });
        if unschedulable {
            continue;
        }
        threshold += match &subset.max_replicas {
            None => i64::from(i32::MAX),
            Some(k8s_openapi::apimachinery::pkg::util::intstr::IntOrString::Int(n)) => {
                i64::from(*n)
            }
            // `IntOrString.IntValue()` of a string: its integer value, or 0.
            Some(k8s_openapi::apimachinery::pkg::util::intstr::IntOrString::String(s)) => {
                i64::from(s.parse::<i32>().unwrap_or(0))
            }
        };
        if ordinal < threshold {
            return Some(subset.name.clone());
        }
    }
    None
}

/// The ordinal at the end of a StatefulSet pod's name (`web-3` is 3), or -1.
fn statefulset_ordinal(name: &str) -> i64 {
    let Some((parent, digits)) = name.rsplit_once('-') else {
        return -1;
    };
    let _ = parent;
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return -1;
    }
    digits.parse::<i32>().map_or(-1, i64::from)
}
