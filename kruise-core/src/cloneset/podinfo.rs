//! Facts about each pod, computed once per plan so that the scale and update passes only
//! compare numbers and flags.

use jiff::{SignedDuration, Timestamp};
use k8s_openapi::api::core::v1::Pod;
use kruise_api::apps::common::LifecycleState;
use kruise_api::well_known::{annotations, kubernetes, labels, readiness_gates};

use super::spec::Spec;
use crate::pod::ActiveRank;
use crate::revision::short_hash;

/// Where a pod stands relative to the revisions in play.
#[derive(Debug)]
pub(crate) struct PodInfo<'a> {
    pub pod: &'a Pod,
    pub name: &'a str,
    pub uid: &'a str,
    /// The `controller-revision-hash` label ("" when absent).
    pub revision_hash: &'a str,
    /// At the update revision.
    pub updated: bool,
    /// The lifecycle state label, if any.
    pub state: Option<LifecycleState>,
    /// Named in podsToDelete or labelled specified-delete.
    pub specified_delete: bool,
    /// Ready by the CloneSet's rule (running, Ready, InPlaceUpdateReady not False), ignoring
    /// the lifecycle state.
    pub update_ready: bool,
    /// `update_ready` and in lifecycle state Normal (or none).
    pub ready: bool,
    /// `update_available` and in lifecycle state Normal (or none).
    pub available: bool,
    /// When a ready pod becomes available, if that is still ahead.
    pub available_at: Option<Timestamp>,
    /// The `apps.kruise.io/cloneset-instance-id` label ("" when absent).
    pub instance_id: &'a str,
    /// An in-place update waits for its grace period.
    pub in_grace: bool,
    /// No in-place update bookkeeping to do for this pod this round.
    pub in_place_idle: bool,
    /// The pod has the `pod-template-hash` label.
    pub has_template_hash: bool,
    /// Where the pod goes in Kubernetes' active-pods order (before the name tie-break).
    pub active_rank: ActiveRank,
}

impl<'a> PodInfo<'a> {
    /// Computes the facts of `pod` for the CloneSet `spec` and `update_revision`.
    #[cfg(test)]
    pub(crate) fn new(
        pod: &'a Pod,
        spec: &Spec<'_>,
        update_revision: &RevisionName<'_>,
        now: Timestamp,
    ) -> Self {
        Self::scan(pod, spec, update_revision, now, &[], &mut [])
    }

    /// [`PodInfo::new`], also reading the values of the labels `keys` into `values` (same
    /// length; entries for absent labels are left as they are) in the same pass over the labels.
    pub(crate) fn scan(
        pod: &'a Pod,
        spec: &Spec<'_>,
        update_revision: &RevisionName<'_>,
        now: Timestamp,
        keys: &[&str],
        values: &mut [Option<&'a str>],
    ) -> Self {
        let meta = &pod.metadata;
        // One pass over the labels (this runs for every pod on every round).
        let mut revision_hash = "";
        let mut state = None;
        let mut marked = false;
        let mut instance_id = "";
        let mut has_template_hash = false;
        for (key, value) in meta.labels.iter().flatten() {
            // Comparing lengths first skips almost every key without reading its bytes.
            if let Some(slot) = keys.iter().position(|k| k.len() == key.len() && *k == key.as_str())
                && let Some(cell) = values.get_mut(slot)
            {
                *cell = Some(value.as_str());
            }
            match key.as_str() {
                kubernetes::labels::CONTROLLER_REVISION_HASH => revision_hash = value,
                kubernetes::labels::POD_TEMPLATE_HASH => has_template_hash = true,
                labels::LIFECYCLE_STATE if !value.is_empty() => {
                    state = Some(LifecycleState::from(value.as_str()));
                }
                labels::SPECIFIED_DELETE => marked = true,
                labels::CLONESET_INSTANCE_ID => instance_id = value,
                _ => {}
            }
        }
        let name = meta.name.as_deref().unwrap_or_default();
        let normal = matches!(state, None | Some(LifecycleState::Normal));
        let specified_delete =
            marked || (!spec.pods_to_delete.is_empty() && spec.pods_to_delete.contains(name));
        let mut in_grace = false;
        let mut in_place_state = false;
        for (key, value) in meta.annotations.iter().flatten() {
            match key.as_str() {
                annotations::INPLACE_UPDATE_GRACE | annotations::INPLACE_UPDATE_GRACE_LEGACY => {
                    in_grace |= !value.is_empty();
                }
                annotations::INPLACE_UPDATE_STATE | annotations::INPLACE_UPDATE_STATE_LEGACY => {
                    in_place_state = true;
                }
                _ => {}
            }
        }

        let status = pod.status.as_ref();
        let phase = status.and_then(|s| s.phase.as_deref());
        let running = phase == Some("Running");
        // The active-pods order reads the first Ready condition; the rest of the planner the last.
        let mut first_ready = None;
        let mut ready_since = None;
        let mut is_ready = false;
        let mut in_place_ready = true;
        let mut in_place_condition_clean = false;
        for cond in status.and_then(|s| s.conditions.as_deref()).unwrap_or_default() {
            if cond.type_ == "Ready" {
                first_ready = first_ready.or(Some(cond));
                is_ready = cond.status == "True";
                ready_since = cond.last_transition_time.as_ref().map(|t| t.0);
            } else if cond.type_ == readiness_gates::IN_PLACE_UPDATE_READY {
                in_place_ready = cond.status == "True";
                in_place_condition_clean = in_place_ready
                    && cond.reason.as_deref().unwrap_or_default().is_empty()
                    && cond.message.as_deref().unwrap_or_default().is_empty();
            }
        }
        // Nothing for the in-place refresh to do: no grace period, no update record, and the
        // readiness gate (if any) already satisfied.
        let in_place_idle = !in_grace
            && !in_place_state
            && (in_place_condition_clean || !crate::inplace::has_readiness_gate(pod));
        let update_ready = running && is_ready && in_place_ready;
        let (update_available, available_at) = if !update_ready {
            (false, None)
        } else if spec.min_ready_seconds == 0 {
            (true, None)
        } else {
            match ready_since {
                // Kubernetes: available once readySince + minReadySeconds is strictly before now.
                Some(since) => {
                    let at = since
                        .saturating_add(SignedDuration::from_secs(i64::from(
                            spec.min_ready_seconds,
                        )))
                        .unwrap_or(since);
                    if at < now { (true, None) } else { (false, Some(at)) }
                }
                None => (false, None),
            }
        };
        let rank_ready = first_ready.is_some_and(|c| c.status == "True");
        let active_rank = ActiveRank::new(
            pod.spec.as_ref().and_then(|s| s.node_name.as_deref()).is_some_and(|n| !n.is_empty()),
            phase.unwrap_or_default(),
            rank_ready,
            first_ready
                .filter(|_| rank_ready)
                .and_then(|c| c.last_transition_time.as_ref())
                .map(|t| t.0),
            crate::pod::max_container_restarts(pod),
            meta.creation_timestamp.as_ref().map(|t| t.0),
        );
        Self {
            pod,
            name,
            uid: meta.uid.as_deref().unwrap_or_default(),
            revision_hash,
            updated: update_revision.matches(revision_hash),
            state,
            specified_delete,
            update_ready,
            ready: update_ready && normal,
            available: update_available && normal,
            available_at: if normal { available_at } else { None },
            instance_id,
            in_grace,
            in_place_idle,
            has_template_hash,
            active_rank,
        }
    }

    /// True in lifecycle state `PreparingDelete`.
    pub(crate) fn preparing_delete(&self) -> bool {
        self.state == Some(LifecycleState::PreparingDelete)
    }

    /// True in lifecycle state `PreparingUpdate`.
    pub(crate) fn preparing_update(&self) -> bool {
        self.state == Some(LifecycleState::PreparingUpdate)
    }

    /// Counts as updated when scaling: at the update revision, or (with the
    /// `PreparingUpdateAsUpdate` gate) about to be updated.
    pub(crate) fn updated_for_scale(&self, preparing_update_as_update: bool) -> bool {
        self.updated || (preparing_update_as_update && self.preparing_update())
    }
}

/// A revision name and its short hash (the part after the last `-`), for comparing with pod
/// labels that may hold either form.
#[derive(Clone, Debug)]
pub(crate) struct RevisionName<'a> {
    pub name: &'a str,
    pub short: &'a str,
}

impl<'a> RevisionName<'a> {
    pub(crate) fn new(name: &'a str) -> Self {
        Self { name, short: short_hash(name) }
    }

    /// Upstream's `EqualToRevisionHash`: equal names, or equal short hashes.
    pub(crate) fn matches(&self, label: &str) -> bool {
        label == self.name || short_hash(label) == self.short
    }
}
