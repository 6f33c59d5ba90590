//! The pod lifecycle state machine that lifecycle hooks drive.
//!
//! A Kruise workload records where each pod is in its life in the label
//! `lifecycle.apps.kruise.io/state` (stamping `lifecycle.apps.kruise.io/timestamp`, an
//! annotation, on every change):
//!
//! ```text
//!                  created
//!                     v
//!             PreparingNormal --(scheduled / preNormal handlers all present)--> Normal
//!                     ^                                                        |    |
//!    (scale-out cancels deletion, unless any hook marks pods not ready)        |    |
//!                     |                                                        |    |
//!             PreparingDelete <--(chosen for deletion, preDelete hook holds)---+    |
//!                                                                                   |
//!   Normal --(in-place update, inPlaceUpdate hook holds)--> PreparingUpdate         |
//!   Normal / PreparingUpdate (hook released) --(update starts)--> Updating <--------+
//!   Updating --(update done)--> Updated --(inPlaceUpdate handlers all back)--> Normal
//! ```
//!
//! A hook (`preNormal`, `inPlaceUpdate`, `preDelete`) is a set of labels and finalizers that
//! other components own:
//!
//! - a **pre** hook holds a pod while *any* of its labels (with the given value) or finalizers
//!   is present ([`is_hooked`]): the workload waits in `PreparingDelete`/`PreparingUpdate`
//!   until they are all gone;
//! - the **post** side of `inPlaceUpdate` (state `Updated`) and `preNormal` wait until *all*
//!   of them are present again ([`is_all_hooked`]).
//!
//! With `markPodNotReady`, entering `PreparingDelete`/`PreparingUpdate` also adds a
//! `KruisePodReady` hold (so traffic drains first), and entering `Updated` removes the
//! update hold.
//!
//! Nothing here changes a pod: transitions are returned as [`LifecycleTransition`] data (a
//! status change to apply first, then a metadata patch). The `cloneset_*` functions encode
//! the decisions the CloneSet controller makes with these rules.

use std::collections::BTreeMap;

use jiff::Timestamp;
use k8s_openapi::api::core::v1::Pod;
pub use kruise_api::apps::common::{Lifecycle, LifecycleHook, LifecycleState};
use kruise_api::well_known::{annotations, labels, readiness_gates};

use crate::pod::{
    NotReadyHold, PodConditionsUpdate, add_not_ready_hold, format_rfc3339, is_scheduled, labels_of,
    remove_not_ready_hold,
};

/// The pod's lifecycle state; `None` when the label is absent or empty.
pub fn state_of(pod: &Pod) -> Option<LifecycleState> {
    labels_of(pod)
        .get(labels::LIFECYCLE_STATE)
        .filter(|v| !v.is_empty())
        .map(|v| LifecycleState::from(v.as_str()))
}

/// Whether the hook still holds the pod (a *pre* hook): any of its finalizers is on the pod,
/// or any of its labels has the given value. A label whose expected value is empty counts as
/// present when the pod lacks it (upstream compares with a map lookup that yields ""). No hook
/// never holds.
pub fn is_hooked(hook: Option<&LifecycleHook>, pod: &Pod) -> bool {
    let Some(hook) = hook else { return false };
    let pod_labels = labels_of(pod);
    hook.finalizers_handler.iter().any(|f| has_finalizer(pod, f))
        || hook.labels_handler.iter().any(|(k, v)| label_value(pod_labels, k) == v)
}

/// Whether every finalizer and label of the hook is on the pod (the *post* side of a hook).
/// Same label rule as [`is_hooked`]. No hook is never all hooked.
pub fn is_all_hooked(hook: Option<&LifecycleHook>, pod: &Pod) -> bool {
    let Some(hook) = hook else { return false };
    let pod_labels = labels_of(pod);
    hook.finalizers_handler.iter().all(|f| has_finalizer(pod, f))
        && hook.labels_handler.iter().all(|(k, v)| label_value(pod_labels, k) == v)
}

/// Whether the hook asks to mark pods not ready.
pub fn is_hook_mark_pod_not_ready(hook: Option<&LifecycleHook>) -> bool {
    hook.is_some_and(|h| h.mark_pod_not_ready)
}

/// Whether the `preDelete` or the `inPlaceUpdate` hook marks pods not ready.
pub fn is_lifecycle_mark_pod_not_ready(lifecycle: Option<&Lifecycle>) -> bool {
    lifecycle.is_some_and(|l| {
        is_hook_mark_pod_not_ready(l.pre_delete.as_ref())
            || is_hook_mark_pod_not_ready(l.in_place_update.as_ref())
    })
}

fn has_finalizer(pod: &Pod, finalizer: &str) -> bool {
    pod.metadata.finalizers.as_ref().is_some_and(|fs| fs.iter().any(|f| f == finalizer))
}

fn label_value<'a>(pod_labels: &'a BTreeMap<String, String>, key: &str) -> &'a str {
    pod_labels.get(key).map(String::as_str).unwrap_or("")
}

/// The `KruisePodReady` hold a `markPodNotReady` hook adds or removes when a pod enters
/// `state`.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum HoldChange {
    /// Add this hold.
    Add(NotReadyHold),
    /// Remove this hold.
    Remove(NotReadyHold),
}

/// What entering `state` does to `KruisePodReady` under `markPodNotReady`:
/// `PreparingDelete` adds the `preDeleteHook` hold, `PreparingUpdate` adds `preUpdateHook`,
/// `Updated` removes `preUpdateHook`; other states do nothing. (Like upstream, going straight
/// from `Updating` to `Normal` does not remove `preUpdateHook`.)
pub fn hold_change_for(state: &LifecycleState) -> Option<HoldChange> {
    let hold = |key: &str| NotReadyHold::new(readiness_gates::USER_AGENT_LIFECYCLE, key);
    match state {
        LifecycleState::PreparingDelete => {
            Some(HoldChange::Add(hold(readiness_gates::KEY_PRE_DELETE_HOOK)))
        }
        LifecycleState::PreparingUpdate => {
            Some(HoldChange::Add(hold(readiness_gates::KEY_PRE_UPDATE_HOOK)))
        }
        LifecycleState::Updated => {
            Some(HoldChange::Remove(hold(readiness_gates::KEY_PRE_UPDATE_HOOK)))
        }
        _ => None,
    }
}

/// The metadata a lifecycle change writes: labels and annotations to set, finalizers to add.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct LifecyclePatch {
    /// Labels to set (the state label, plus a hook's labels when re-arming it).
    pub labels: BTreeMap<String, String>,
    /// Annotations to set (the lifecycle timestamp).
    pub annotations: BTreeMap<String, String>,
    /// Finalizers to add (a hook's finalizers when re-arming it), in hook order.
    pub finalizers: Vec<String>,
}

impl LifecyclePatch {
    /// Moves a pod to `state`: the state label and the timestamp annotation (RFC 3339, whole
    /// seconds, UTC). Also what a new pod is created with (`PreparingNormal`) and what an
    /// in-place update writes (`Updating`).
    pub fn for_state(state: &LifecycleState, now: Timestamp) -> Self {
        LifecyclePatch {
            labels: [(labels::LIFECYCLE_STATE.to_owned(), state.as_str().to_owned())].into(),
            annotations: [(annotations::LIFECYCLE_TIMESTAMP.to_owned(), format_rfc3339(now))]
                .into(),
            finalizers: Vec::new(),
        }
    }

    /// The same patch, also putting back the hook's labels and finalizers (upstream's
    /// `UpdatePodLifecycleWithHandler`). The state label keeps the value already in the
    /// patch even if the hook names the same key.
    pub fn with_handler(mut self, hook: &LifecycleHook) -> Self {
        for (k, v) in &hook.labels_handler {
            self.labels.entry(k.clone()).or_insert_with(|| v.clone());
        }
        for f in &hook.finalizers_handler {
            if !self.finalizers.contains(f) {
                self.finalizers.push(f.clone());
            }
        }
        self
    }

    /// The strategic-merge-patch body for the pod (finalizers merge, so listed ones are
    /// added and others kept; the key is left out when there are none).
    pub fn to_strategic_merge_patch(&self) -> serde_json::Value {
        let mut metadata = serde_json::Map::new();
        metadata.insert("labels".into(), serde_json::json!(self.labels));
        metadata.insert("annotations".into(), serde_json::json!(self.annotations));
        if !self.finalizers.is_empty() {
            metadata.insert("finalizers".into(), serde_json::json!(self.finalizers));
        }
        serde_json::json!({ "metadata": metadata })
    }

    /// Applies the patch to `pod` in memory, as the API server would.
    pub fn apply_to(&self, pod: &mut Pod) {
        let meta = &mut pod.metadata;
        meta.labels.get_or_insert_with(BTreeMap::new).extend(self.labels.clone());
        meta.annotations.get_or_insert_with(BTreeMap::new).extend(self.annotations.clone());
        if !self.finalizers.is_empty() {
            let finalizers = meta.finalizers.get_or_insert_with(Vec::new);
            for f in &self.finalizers {
                if !finalizers.contains(f) {
                    finalizers.push(f.clone());
                }
            }
        }
    }
}

/// A lifecycle change for one pod, as data. Apply `readiness` (a status change) first, then
/// `patch`, as upstream does.
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub struct LifecycleTransition {
    /// The state the pod is in now.
    pub from: Option<LifecycleState>,
    /// The state asked for.
    pub to: LifecycleState,
    /// The `KruisePodReady` change `markPodNotReady` calls for, when it changes anything.
    pub readiness: Option<PodConditionsUpdate>,
    /// The metadata patch; `None` when the pod already is in `to` (nothing to write).
    pub patch: Option<LifecyclePatch>,
}

impl LifecycleTransition {
    /// Whether there is nothing to write at all.
    pub fn is_noop(&self) -> bool {
        self.readiness.is_none() && self.patch.is_none()
    }

    /// Whether the state label changes (upstream's `updated` result).
    pub fn changes_state(&self) -> bool {
        self.patch.is_some()
    }

    /// Applies both parts to `pod` in memory.
    pub fn apply_to(&self, pod: &mut Pod) {
        if let Some(readiness) = &self.readiness {
            readiness.apply_to(pod);
        }
        if let Some(patch) = &self.patch {
            patch.apply_to(pod);
        }
    }
}

fn readiness_change(pod: &Pod, to: &LifecycleState, now: Timestamp) -> Option<PodConditionsUpdate> {
    match hold_change_for(to)? {
        HoldChange::Add(hold) => add_not_ready_hold(pod, &hold, now),
        HoldChange::Remove(hold) => remove_not_ready_hold(pod, &hold, now),
    }
}

/// Upstream's `UpdatePodLifecycle`: with `mark_pod_not_ready`, the `KruisePodReady` change for
/// `to` (even when the pod is already in `to`); then, unless the pod is already in `to`, the
/// state label and timestamp.
pub fn update_pod_lifecycle(
    pod: &Pod,
    to: LifecycleState,
    mark_pod_not_ready: bool,
    now: Timestamp,
) -> LifecycleTransition {
    let from = state_of(pod);
    let readiness = if mark_pod_not_ready { readiness_change(pod, &to, now) } else { None };
    let patch = (from.as_ref() != Some(&to)).then(|| LifecyclePatch::for_state(&to, now));
    LifecycleTransition { from, to, readiness, patch }
}

/// Upstream's `UpdatePodLifecycleWithHandler`: like [`update_pod_lifecycle`] with the hook's
/// `markPodNotReady`, and the patch also puts the hook's labels and finalizers back. `None`
/// when there is no hook (upstream then does nothing).
pub fn update_pod_lifecycle_with_handler(
    pod: &Pod,
    to: LifecycleState,
    hook: Option<&LifecycleHook>,
    now: Timestamp,
) -> Option<LifecycleTransition> {
    let hook = hook?;
    let mut transition = update_pod_lifecycle(pod, to, hook.mark_pod_not_ready, now);
    transition.patch = transition.patch.map(|p| p.with_handler(hook));
    Some(transition)
}

// ---------------------------------------------------------------------------------------------
// CloneSet's use of the state machine
// ---------------------------------------------------------------------------------------------

/// Which workload's refresh rules [`refresh_target`] follows: the two upstream controllers
/// differ in two details.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum RefreshRules {
    /// CloneSet: without a `preNormal` hook a pod leaves `PreparingNormal` once scheduled;
    /// after an update, any lifecycle (even one without an `inPlaceUpdate` hook) holds the pod
    /// in `Updated` until the hook's handlers are all present.
    CloneSet,
    /// Advanced StatefulSet: without a `preNormal` hook a pod leaves `PreparingNormal` at
    /// once; only an `inPlaceUpdate` hook holds it in `Updated`.
    StatefulSet,
}

/// The state a workload moves a pod to when it refreshes it (upstream's `refreshPodState`),
/// or `None` to leave it:
///
/// - `PreparingNormal` → `Normal` once every `preNormal` handler is present, or without a
///   `preNormal` hook, once scheduled (CloneSet) or at once (Advanced StatefulSet);
/// - `PreparingUpdate` whose pod already is at the update revision (a rollback while
///   waiting) and `Updating` whose in-place update has completed → `Updated` while the
///   `inPlaceUpdate` handlers are not all present (see [`RefreshRules`] for which lifecycles
///   hold), else `Normal`;
/// - `Updated` → `Normal` without an `inPlaceUpdate` hook, or once all its handlers are
///   present.
pub fn refresh_target(
    rules: RefreshRules,
    lifecycle: Option<&Lifecycle>,
    pod: &Pod,
    at_update_revision: bool,
    in_place_update_completed: bool,
) -> Option<LifecycleState> {
    let in_place_hook = lifecycle.and_then(|l| l.in_place_update.as_ref());
    let holds = match rules {
        RefreshRules::CloneSet => lifecycle.is_some(),
        RefreshRules::StatefulSet => in_place_hook.is_some(),
    };
    let after_update = || {
        if holds && !is_all_hooked(in_place_hook, pod) {
            LifecycleState::Updated
        } else {
            LifecycleState::Normal
        }
    };
    match state_of(pod)? {
        LifecycleState::PreparingNormal => {
            let ready = match lifecycle.and_then(|l| l.pre_normal.as_ref()) {
                None => rules == RefreshRules::StatefulSet || is_scheduled(pod),
                Some(hook) => is_all_hooked(Some(hook), pod),
            };
            ready.then_some(LifecycleState::Normal)
        }
        LifecycleState::PreparingUpdate => at_update_revision.then(after_update),
        LifecycleState::Updating => in_place_update_completed.then(after_update),
        LifecycleState::Updated => (in_place_hook.is_none() || is_all_hooked(in_place_hook, pod))
            .then_some(LifecycleState::Normal),
        _ => None,
    }
}

/// [`refresh_target`] with the CloneSet's rules.
pub fn cloneset_refresh_target(
    lifecycle: Option<&Lifecycle>,
    pod: &Pod,
    at_update_revision: bool,
    in_place_update_completed: bool,
) -> Option<LifecycleState> {
    refresh_target(
        RefreshRules::CloneSet,
        lifecycle,
        pod,
        at_update_revision,
        in_place_update_completed,
    )
}

/// The transition [`cloneset_refresh_target`] asks for, with the `inPlaceUpdate` hook's
/// `markPodNotReady`; `None` when the pod stays where it is.
pub fn cloneset_refresh(
    lifecycle: Option<&Lifecycle>,
    pod: &Pod,
    at_update_revision: bool,
    in_place_update_completed: bool,
    now: Timestamp,
) -> Option<LifecycleTransition> {
    let to =
        cloneset_refresh_target(lifecycle, pod, at_update_revision, in_place_update_completed)?;
    let mark = is_hook_mark_pod_not_ready(lifecycle.and_then(|l| l.in_place_update.as_ref()));
    Some(update_pod_lifecycle(pod, to, mark, now))
}

/// What a CloneSet does with a pod it chose to delete.
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub enum DeleteStep {
    /// The `preDelete` hook holds the pod: move it to `PreparingDelete` (and wait) instead.
    PrepareDelete(LifecycleTransition),
    /// Delete the pod now.
    Delete,
}

/// Upstream's choice in `deletePods`: a pod the `preDelete` hook holds ([`is_hooked`]) goes
/// to `PreparingDelete` (with the hook's `markPodNotReady`); any other pod is deleted. A pod
/// already in `PreparingDelete` and still held yields a transition without a state patch
/// (possibly [`LifecycleTransition::is_noop`]); once released it is deleted.
pub fn cloneset_delete_step(
    lifecycle: Option<&Lifecycle>,
    pod: &Pod,
    now: Timestamp,
) -> DeleteStep {
    let hook = lifecycle.and_then(|l| l.pre_delete.as_ref());
    if is_hooked(hook, pod) {
        let mark = is_hook_mark_pod_not_ready(hook);
        DeleteStep::PrepareDelete(update_pod_lifecycle(
            pod,
            LifecycleState::PreparingDelete,
            mark,
            now,
        ))
    } else {
        DeleteStep::Delete
    }
}

/// Whether a CloneSet may move pods out of `PreparingDelete` when it needs them back after
/// all (scaling out again): only if neither `preDelete` nor `inPlaceUpdate` marks pods not
/// ready. Pods marked for deletion (specified-delete) are never taken back; that check is the
/// caller's.
pub fn cloneset_can_cancel_delete(lifecycle: Option<&Lifecycle>) -> bool {
    !is_lifecycle_mark_pod_not_ready(lifecycle)
}

/// Takes a pod back from `PreparingDelete`: to `PreparingNormal`, without touching
/// `KruisePodReady`.
pub fn cloneset_cancel_delete(pod: &Pod, now: Timestamp) -> LifecycleTransition {
    update_pod_lifecycle(pod, LifecycleState::PreparingNormal, false, now)
}

/// What a CloneSet does with a pod it wants to update in place (upstream's `updatePod`, once
/// the change is known to be in-place-able).
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub enum InPlaceStep {
    /// Move the pod towards `PreparingUpdate` first (and wait for the hook).
    PrepareUpdate(LifecycleTransition),
    /// Do nothing this round (the hook still holds the pod, or there is nothing to re-arm).
    Wait,
    /// Update in place now; the update also writes [`LifecyclePatch::for_state`] `Updating`.
    UpdateNow,
    /// The pod's state forbids an in-place update (for example `PreparingDelete`); upstream
    /// reports an error naming the pod and state.
    NotAllowed(Option<LifecycleState>),
}

/// Upstream's in-place decision by lifecycle state:
///
/// - no state, `PreparingNormal` or `Normal`: if the `inPlaceUpdate` hook holds the pod,
///   move it to `PreparingUpdate` (with `markPodNotReady`); otherwise update now;
/// - `Updated` (a newer revision arrived before the hook was re-armed): re-arm the hook
///   while moving to `PreparingUpdate` ([`update_pod_lifecycle_with_handler`]); without an
///   `inPlaceUpdate` hook, wait (the refresh takes it to `Normal` first);
/// - `PreparingUpdate`: wait while the hook holds the pod, else update now;
/// - `Updating`: update now (continue);
/// - anything else: not allowed.
pub fn cloneset_in_place_step(
    lifecycle: Option<&Lifecycle>,
    pod: &Pod,
    now: Timestamp,
) -> InPlaceStep {
    let hook = lifecycle.and_then(|l| l.in_place_update.as_ref());
    match state_of(pod) {
        None | Some(LifecycleState::PreparingNormal) | Some(LifecycleState::Normal) => {
            if is_hooked(hook, pod) {
                InPlaceStep::PrepareUpdate(update_pod_lifecycle(
                    pod,
                    LifecycleState::PreparingUpdate,
                    is_hook_mark_pod_not_ready(hook),
                    now,
                ))
            } else {
                InPlaceStep::UpdateNow
            }
        }
        Some(LifecycleState::Updated) => {
            match update_pod_lifecycle_with_handler(pod, LifecycleState::PreparingUpdate, hook, now)
            {
                Some(transition) => InPlaceStep::PrepareUpdate(transition),
                None => InPlaceStep::Wait,
            }
        }
        Some(LifecycleState::PreparingUpdate) => {
            if is_hooked(hook, pod) {
                InPlaceStep::Wait
            } else {
                InPlaceStep::UpdateNow
            }
        }
        Some(LifecycleState::Updating) => InPlaceStep::UpdateNow,
        other => InPlaceStep::NotAllowed(other),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::api::core::v1::{PodCondition, PodReadinessGate, PodSpec, PodStatus};
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;

    use crate::pod::{condition, not_ready_holds};

    const NOW: i64 = 1_700_000_000;
    const NOW_TEXT: &str = "2023-11-14T22:13:20Z";

    fn now() -> Timestamp {
        Timestamp::from_second(NOW).expect("in range")
    }

    fn hook(labels: &[(&str, &str)], finalizers: &[&str], mark: bool) -> LifecycleHook {
        LifecycleHook {
            labels_handler: labels.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect(),
            finalizers_handler: finalizers.iter().map(|f| f.to_string()).collect(),
            mark_pod_not_ready: mark,
        }
    }

    /// A pod in `state` (None: no label) with extra labels and finalizers, scheduled or not,
    /// carrying the KruisePodReady gate.
    fn pod(state: Option<&str>, extra: &[(&str, &str)], finalizers: &[&str], node: &str) -> Pod {
        let mut labels: BTreeMap<String, String> =
            extra.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect();
        if let Some(s) = state {
            labels.insert(super::labels::LIFECYCLE_STATE.into(), s.into());
        }
        Pod {
            metadata: ObjectMeta {
                name: Some("p".into()),
                labels: Some(labels),
                finalizers: Some(finalizers.iter().map(|f| f.to_string()).collect()),
                ..Default::default()
            },
            spec: Some(PodSpec {
                node_name: (!node.is_empty()).then(|| node.to_owned()),
                readiness_gates: Some(vec![PodReadinessGate {
                    condition_type: readiness_gates::KRUISE_POD_READY.into(),
                }]),
                ..Default::default()
            }),
            status: Some(PodStatus::default()),
        }
    }

    #[test]
    fn state_reading() {
        assert_eq!(state_of(&pod(None, &[], &[], "")), None);
        assert_eq!(state_of(&pod(Some(""), &[], &[], "")), None);
        for s in LifecycleState::KNOWN {
            assert_eq!(
                state_of(&pod(Some(s), &[], &[], "")).as_ref().map(|s| s.as_str()),
                Some(*s)
            );
        }
        assert_eq!(
            state_of(&pod(Some("Weird"), &[], &[], "")),
            Some(LifecycleState::Other("Weird".into()))
        );
    }

    #[test]
    fn hooked_rules() {
        let h = hook(&[("block", "true"), ("other", "x")], &["example.io/f"], false);
        // (labels, finalizers, is_hooked, is_all_hooked)
        type Case<'a> = (&'a [(&'a str, &'a str)], &'a [&'a str], bool, bool);
        let cases: &[Case] = &[
            (&[], &[], false, false),
            (&[("block", "true")], &[], true, false),
            (&[("block", "false")], &[], false, false),
            (&[], &["example.io/f"], true, false),
            (&[("block", "true"), ("other", "x")], &[], true, false),
            (&[("block", "true"), ("other", "x")], &["example.io/f"], true, true),
        ];
        for (labels, finalizers, hooked, all) in cases {
            let p = pod(None, labels, finalizers, "");
            assert_eq!(is_hooked(Some(&h), &p), *hooked, "{labels:?} {finalizers:?}");
            assert_eq!(is_all_hooked(Some(&h), &p), *all, "{labels:?} {finalizers:?}");
        }
        let p = pod(None, &[("block", "true")], &["example.io/f"], "");
        assert!(!is_hooked(None, &p));
        assert!(!is_all_hooked(None, &p));
        // An empty hook never holds, and is trivially all present.
        assert!(!is_hooked(Some(&LifecycleHook::default()), &p));
        assert!(is_all_hooked(Some(&LifecycleHook::default()), &p));
        // An empty expected value matches an absent label (upstream's map lookup).
        let empty_value = hook(&[("gone", "")], &[], false);
        assert!(is_hooked(Some(&empty_value), &p));
    }

    #[test]
    fn mark_not_ready_flags() {
        assert!(!is_lifecycle_mark_pod_not_ready(None));
        let pre_normal_only =
            Lifecycle { pre_normal: Some(hook(&[], &[], true)), ..Default::default() };
        assert!(!is_lifecycle_mark_pod_not_ready(Some(&pre_normal_only)));
        let pre_delete = Lifecycle { pre_delete: Some(hook(&[], &[], true)), ..Default::default() };
        assert!(is_lifecycle_mark_pod_not_ready(Some(&pre_delete)));
        let in_place =
            Lifecycle { in_place_update: Some(hook(&[], &[], true)), ..Default::default() };
        assert!(is_lifecycle_mark_pod_not_ready(Some(&in_place)));
        assert!(cloneset_can_cancel_delete(Some(&pre_normal_only)));
        assert!(!cloneset_can_cancel_delete(Some(&in_place)));
    }

    #[test]
    fn patches() {
        let patch = LifecyclePatch::for_state(&LifecycleState::PreparingNormal, now());
        assert_eq!(
            patch.to_strategic_merge_patch(),
            serde_json::json!({"metadata": {
                "labels": {"lifecycle.apps.kruise.io/state": "PreparingNormal"},
                "annotations": {"lifecycle.apps.kruise.io/timestamp": NOW_TEXT},
            }})
        );
        let h = hook(
            &[("block", "true"), (super::labels::LIFECYCLE_STATE, "Hijack")],
            &["a/f", "a/f"],
            false,
        );
        let patch = patch.with_handler(&h);
        assert_eq!(
            patch.to_strategic_merge_patch(),
            serde_json::json!({"metadata": {
                "labels": {"block": "true", "lifecycle.apps.kruise.io/state": "PreparingNormal"},
                "annotations": {"lifecycle.apps.kruise.io/timestamp": NOW_TEXT},
                "finalizers": ["a/f"],
            }})
        );
        let mut p = pod(Some("Normal"), &[("keep", "1")], &["a/f", "b/g"], "");
        patch.apply_to(&mut p);
        assert_eq!(state_of(&p), Some(LifecycleState::PreparingNormal));
        assert_eq!(p.metadata.finalizers, Some(vec!["a/f".to_owned(), "b/g".to_owned()]));
        assert_eq!(labels_of(&p).get("keep").map(String::as_str), Some("1"));
    }

    fn ready_pod(state: Option<&str>, extra: &[(&str, &str)]) -> Pod {
        let mut p = pod(state, extra, &[], "n1");
        p.status = Some(PodStatus {
            conditions: Some(vec![PodCondition {
                type_: "KruisePodReady".into(),
                status: "True".into(),
                ..Default::default()
            }]),
            ..Default::default()
        });
        p
    }

    #[test]
    fn update_pod_lifecycle_table() {
        let delete_hold = NotReadyHold::new("Lifecycle", "preDeleteHook");
        let update_hold = NotReadyHold::new("Lifecycle", "preUpdateHook");
        // (from, to, mark, expect state patch, expected holds after)
        type Case<'a> = (Option<&'a str>, LifecycleState, bool, bool, Vec<NotReadyHold>);
        let cases: Vec<Case> = vec![
            (
                Some("Normal"),
                LifecycleState::PreparingDelete,
                true,
                true,
                vec![delete_hold.clone()],
            ),
            (Some("Normal"), LifecycleState::PreparingDelete, false, true, vec![]),
            (None, LifecycleState::PreparingUpdate, true, true, vec![update_hold.clone()]),
            (Some("Normal"), LifecycleState::Normal, true, false, vec![]),
            (Some("PreparingNormal"), LifecycleState::Normal, true, true, vec![]),
            (
                Some("PreparingDelete"),
                LifecycleState::PreparingDelete,
                true,
                false,
                vec![delete_hold.clone()],
            ),
            (Some("Updating"), LifecycleState::Updating, false, false, vec![]),
        ];
        for (n, (from, to, mark, expect_patch, holds)) in cases.into_iter().enumerate() {
            let p = ready_pod(from, &[]);
            let t = update_pod_lifecycle(&p, to.clone(), mark, now());
            assert_eq!(t.to, to, "case {n}");
            assert_eq!(t.from.as_ref().map(|s| s.as_str()), from, "case {n}");
            assert_eq!(t.changes_state(), expect_patch, "case {n}");
            let mut after = p.clone();
            t.apply_to(&mut after);
            assert_eq!(not_ready_holds(&after), holds, "case {n}");
            assert_eq!(state_of(&after), Some(to.clone()), "case {n}");
            // Idempotent: asking again on the outcome asks for nothing.
            assert!(update_pod_lifecycle(&after, to, mark, now()).is_noop(), "case {n}");
        }

        // Entering Updated removes the update hold (and only that one).
        let mut held = ready_pod(Some("Updating"), &[]);
        update_pod_lifecycle(&held, LifecycleState::PreparingDelete, true, now())
            .apply_to(&mut held);
        let mut held2 = held.clone();
        update_pod_lifecycle(&held2, LifecycleState::PreparingUpdate, true, now())
            .apply_to(&mut held2);
        assert_eq!(not_ready_holds(&held2), vec![delete_hold.clone(), update_hold.clone()]);
        let t = update_pod_lifecycle(&held2, LifecycleState::Updated, true, now());
        t.apply_to(&mut held2);
        assert_eq!(not_ready_holds(&held2), vec![delete_hold]);
        assert_eq!(condition(&held2, "KruisePodReady").map(|c| c.status.as_str()), Some("False"));
    }

    #[test]
    fn mark_not_ready_needs_the_gate() {
        let mut p = pod(Some("Normal"), &[], &[], "");
        p.spec = Some(PodSpec::default());
        let t = update_pod_lifecycle(&p, LifecycleState::PreparingDelete, true, now());
        assert!(t.readiness.is_none());
        assert!(t.changes_state());
    }

    #[test]
    fn with_handler() {
        let p = pod(Some("Updated"), &[], &[], "");
        assert_eq!(
            update_pod_lifecycle_with_handler(&p, LifecycleState::PreparingUpdate, None, now()),
            None
        );
        let h = hook(&[("block", "true")], &["a/f"], true);
        let t =
            update_pod_lifecycle_with_handler(&p, LifecycleState::PreparingUpdate, Some(&h), now())
                .expect("hook");
        let patch = t.patch.as_ref().expect("state changes");
        assert_eq!(patch.labels.get("block").map(String::as_str), Some("true"));
        assert_eq!(patch.finalizers, vec!["a/f".to_owned()]);
        assert!(t.readiness.is_some());
        let mut after = p.clone();
        t.apply_to(&mut after);
        assert!(is_all_hooked(Some(&h), &after));
    }

    fn lifecycle_with(
        pre_normal: Option<LifecycleHook>,
        in_place: Option<LifecycleHook>,
        pre_delete: Option<LifecycleHook>,
    ) -> Lifecycle {
        Lifecycle { pre_normal, in_place_update: in_place, pre_delete }
    }

    #[test]
    fn cloneset_refresh_table() {
        let in_place = hook(&[("ipu", "true")], &[], true);
        let pre_normal = hook(&[("pn", "true")], &[], false);
        let with_in_place = lifecycle_with(None, Some(in_place.clone()), None);
        let with_pre_normal = lifecycle_with(Some(pre_normal), None, None);
        let empty = Lifecycle::default();
        // (lifecycle, state, labels, node, at update revision, update completed, expected)
        type Case<'a> = (
            Option<&'a Lifecycle>,
            Option<&'a str>,
            &'a [(&'a str, &'a str)],
            &'a str,
            bool,
            bool,
            Option<LifecycleState>,
        );
        let cases: Vec<Case> = vec![
            // PreparingNormal without a preNormal hook waits for scheduling.
            (None, Some("PreparingNormal"), &[], "", false, false, None),
            (None, Some("PreparingNormal"), &[], "n1", false, false, Some(LifecycleState::Normal)),
            // With a preNormal hook, it waits for its handlers, scheduled or not.
            (Some(&with_pre_normal), Some("PreparingNormal"), &[], "n1", false, false, None),
            (
                Some(&with_pre_normal),
                Some("PreparingNormal"),
                &[("pn", "true")],
                "",
                false,
                false,
                Some(LifecycleState::Normal),
            ),
            // PreparingUpdate only moves when the pod already is at the update revision.
            (Some(&with_in_place), Some("PreparingUpdate"), &[], "n1", false, true, None),
            (
                Some(&with_in_place),
                Some("PreparingUpdate"),
                &[],
                "n1",
                true,
                false,
                Some(LifecycleState::Updated),
            ),
            (
                Some(&with_in_place),
                Some("PreparingUpdate"),
                &[("ipu", "true")],
                "n1",
                true,
                false,
                Some(LifecycleState::Normal),
            ),
            (None, Some("PreparingUpdate"), &[], "n1", true, false, Some(LifecycleState::Normal)),
            // Updating moves once the in-place update completed.
            (Some(&with_in_place), Some("Updating"), &[], "n1", true, false, None),
            (
                Some(&with_in_place),
                Some("Updating"),
                &[],
                "n1",
                false,
                true,
                Some(LifecycleState::Updated),
            ),
            (
                Some(&with_in_place),
                Some("Updating"),
                &[("ipu", "true")],
                "n1",
                false,
                true,
                Some(LifecycleState::Normal),
            ),
            (None, Some("Updating"), &[], "n1", false, true, Some(LifecycleState::Normal)),
            // Upstream quirk: a lifecycle without inPlaceUpdate still passes through Updated.
            (Some(&empty), Some("Updating"), &[], "n1", false, true, Some(LifecycleState::Updated)),
            // Updated waits for the inPlaceUpdate handlers to come back.
            (Some(&with_in_place), Some("Updated"), &[], "n1", false, false, None),
            (
                Some(&with_in_place),
                Some("Updated"),
                &[("ipu", "true")],
                "n1",
                false,
                false,
                Some(LifecycleState::Normal),
            ),
            (Some(&empty), Some("Updated"), &[], "n1", false, false, Some(LifecycleState::Normal)),
            (None, Some("Updated"), &[], "n1", false, false, Some(LifecycleState::Normal)),
            // Other states are left alone.
            (Some(&with_in_place), Some("Normal"), &[], "n1", true, true, None),
            (Some(&with_in_place), Some("PreparingDelete"), &[], "n1", true, true, None),
            (Some(&with_in_place), None, &[], "n1", true, true, None),
        ];
        for (n, (lc, state, labels, node, at_rev, done, expected)) in cases.into_iter().enumerate()
        {
            let p = pod(state, labels, &[], node);
            assert_eq!(cloneset_refresh_target(lc, &p, at_rev, done), expected, "case {n}");
            let t = cloneset_refresh(lc, &p, at_rev, done, now());
            assert_eq!(t.as_ref().map(|t| t.to.clone()), expected, "case {n}");
        }

        // Updating -> Updated with markPodNotReady lifts the update hold.
        let mut p = ready_pod(Some("PreparingUpdate"), &[]);
        update_pod_lifecycle(&p, LifecycleState::PreparingUpdate, true, now()).apply_to(&mut p);
        LifecyclePatch::for_state(&LifecycleState::Updating, now()).apply_to(&mut p);
        assert_eq!(not_ready_holds(&p).len(), 1);
        let t = cloneset_refresh(Some(&with_in_place), &p, false, true, now()).expect("moves");
        assert_eq!(t.to, LifecycleState::Updated);
        t.apply_to(&mut p);
        assert!(not_ready_holds(&p).is_empty());
    }

    #[test]
    fn cloneset_delete_table() {
        let pre_delete = lifecycle_with(None, None, Some(hook(&[("pd", "true")], &["x/y"], true)));
        // Not held: delete.
        let p = ready_pod(Some("Normal"), &[]);
        assert_eq!(cloneset_delete_step(Some(&pre_delete), &p, now()), DeleteStep::Delete);
        assert_eq!(cloneset_delete_step(None, &p, now()), DeleteStep::Delete);
        // Held by label: PreparingDelete with the delete hold.
        let held = ready_pod(Some("Normal"), &[("pd", "true")]);
        let DeleteStep::PrepareDelete(t) = cloneset_delete_step(Some(&pre_delete), &held, now())
        else {
            panic!("expected PrepareDelete");
        };
        assert_eq!(t.to, LifecycleState::PreparingDelete);
        assert!(t.changes_state());
        assert!(t.readiness.is_some());
        let mut after = held.clone();
        t.apply_to(&mut after);
        // Still held next round: nothing more to write.
        let DeleteStep::PrepareDelete(again) =
            cloneset_delete_step(Some(&pre_delete), &after, now())
        else {
            panic!("expected PrepareDelete");
        };
        assert!(again.is_noop());
        // Released: delete.
        after.metadata.labels.as_mut().map(|l| l.remove("pd"));
        assert_eq!(cloneset_delete_step(Some(&pre_delete), &after, now()), DeleteStep::Delete);
        // Held by finalizer.
        let by_finalizer = pod(Some("Normal"), &[], &["x/y"], "n1");
        assert!(matches!(
            cloneset_delete_step(Some(&pre_delete), &by_finalizer, now()),
            DeleteStep::PrepareDelete(_)
        ));
    }

    #[test]
    fn cloneset_cancel_delete_goes_to_preparing_normal() {
        let p = ready_pod(Some("PreparingDelete"), &[]);
        let t = cloneset_cancel_delete(&p, now());
        assert_eq!(t.to, LifecycleState::PreparingNormal);
        assert!(t.readiness.is_none());
        let patch = t.patch.expect("state changes");
        assert_eq!(
            patch.annotations.get(annotations::LIFECYCLE_TIMESTAMP).map(String::as_str),
            Some(NOW_TEXT)
        );
    }

    #[test]
    fn cloneset_in_place_table() {
        let ipu = hook(&[("ipu", "true")], &[], true);
        let lc = lifecycle_with(None, Some(ipu.clone()), None);
        let no_ipu = Lifecycle::default();
        #[derive(Debug, PartialEq)]
        enum Want {
            Prepare,
            Wait,
            Now,
            NotAllowed,
        }
        // (lifecycle, state, labels, expected)
        type Case<'a> = (Option<&'a Lifecycle>, Option<&'a str>, &'a [(&'a str, &'a str)], Want);
        let cases: Vec<Case> = vec![
            (Some(&lc), None, &[("ipu", "true")], Want::Prepare),
            (Some(&lc), Some("Normal"), &[("ipu", "true")], Want::Prepare),
            (Some(&lc), Some("PreparingNormal"), &[("ipu", "true")], Want::Prepare),
            (Some(&lc), Some("Normal"), &[], Want::Now),
            (None, Some("Normal"), &[("ipu", "true")], Want::Now),
            (Some(&lc), Some("Updated"), &[], Want::Prepare),
            (Some(&no_ipu), Some("Updated"), &[], Want::Wait),
            (None, Some("Updated"), &[], Want::Wait),
            (Some(&lc), Some("PreparingUpdate"), &[("ipu", "true")], Want::Wait),
            (Some(&lc), Some("PreparingUpdate"), &[], Want::Now),
            (None, Some("PreparingUpdate"), &[], Want::Now),
            (Some(&lc), Some("Updating"), &[("ipu", "true")], Want::Now),
            (Some(&lc), Some("PreparingDelete"), &[], Want::NotAllowed),
            (Some(&lc), Some("Bogus"), &[], Want::NotAllowed),
        ];
        for (n, (l, state, labels, want)) in cases.into_iter().enumerate() {
            let p = ready_pod(state, labels);
            let got = match cloneset_in_place_step(l, &p, now()) {
                InPlaceStep::PrepareUpdate(t) => {
                    assert_eq!(t.to, LifecycleState::PreparingUpdate, "case {n}");
                    assert!(t.readiness.is_some(), "case {n}: markPodNotReady adds a hold");
                    Want::Prepare
                }
                InPlaceStep::Wait => Want::Wait,
                InPlaceStep::UpdateNow => Want::Now,
                InPlaceStep::NotAllowed(s) => {
                    assert_eq!(s.as_ref().map(|s| s.as_str()), state, "case {n}");
                    Want::NotAllowed
                }
            };
            assert_eq!(got, want, "case {n}");
        }
        // From Updated the hook is re-armed: its labels come back with the state.
        let p = ready_pod(Some("Updated"), &[]);
        let InPlaceStep::PrepareUpdate(t) = cloneset_in_place_step(Some(&lc), &p, now()) else {
            panic!("expected PrepareUpdate");
        };
        let mut after = p.clone();
        t.apply_to(&mut after);
        assert!(is_hooked(Some(&ipu), &after));
        assert_eq!(state_of(&after), Some(LifecycleState::PreparingUpdate));
        // Then it waits while held.
        assert_eq!(cloneset_in_place_step(Some(&lc), &after, now()), InPlaceStep::Wait);
    }

    #[test]
    fn hold_changes() {
        assert!(
            matches!(hold_change_for(&LifecycleState::PreparingDelete), Some(HoldChange::Add(h)) if h.key == "preDeleteHook")
        );
        assert!(
            matches!(hold_change_for(&LifecycleState::PreparingUpdate), Some(HoldChange::Add(h)) if h.key == "preUpdateHook")
        );
        assert!(
            matches!(hold_change_for(&LifecycleState::Updated), Some(HoldChange::Remove(h)) if h.key == "preUpdateHook")
        );
        for s in [LifecycleState::Normal, LifecycleState::PreparingNormal, LifecycleState::Updating]
        {
            assert_eq!(hold_change_for(&s), None);
        }
    }
}
