//! Where each pod stands for this CloneSet and this round: its [`PodFacts`](super::PodFacts)
//! combined with the spec, the update revision and `now`, once per plan, so that the scale and
//! update passes only compare numbers and flags.

use jiff::{SignedDuration, Timestamp};
use kruise_api::apps::common::LifecycleState;

use super::spec::Spec;
use crate::pod::ActiveRank;
use crate::pod::short_eq;
use crate::revision::short_hash;
use crate::workload::SnapshotPod;

/// Where a pod stands relative to the revisions in play. Kept small (a reference and one
/// word): the scale and update passes walk every pod's entry several times, and read nothing
/// else of the pods they do not act on. With 100,000 pods the entries fit a core's cache and
/// the snapshot's pods do not.
#[derive(Debug)]
pub(crate) struct PodInfo<'a> {
    /// The pod and its facts.
    pub pod: &'a SnapshotPod,
    /// The [`flags`] that hold and the lifecycle [`State`]; read them through the methods of
    /// the same names.
    flags: u16,
}

/// The lifecycle state label, as [`PodInfo`] keeps it: a few bits, so that the passes over
/// every pod need not read the pod's facts.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum State {
    /// No label (or an empty one).
    Unset,
    PreparingNormal,
    Normal,
    PreparingUpdate,
    Updating,
    Updated,
    PreparingDelete,
    /// A value this version does not know.
    Other,
}

impl State {
    const ALL: [State; 8] = [
        State::Unset,
        State::PreparingNormal,
        State::Normal,
        State::PreparingUpdate,
        State::Updating,
        State::Updated,
        State::PreparingDelete,
        State::Other,
    ];

    fn of(state: Option<&LifecycleState>) -> Self {
        match state {
            None => Self::Unset,
            Some(LifecycleState::PreparingNormal) => Self::PreparingNormal,
            Some(LifecycleState::Normal) => Self::Normal,
            Some(LifecycleState::PreparingUpdate) => Self::PreparingUpdate,
            Some(LifecycleState::Updating) => Self::Updating,
            Some(LifecycleState::Updated) => Self::Updated,
            Some(LifecycleState::PreparingDelete) => Self::PreparingDelete,
            Some(_) => Self::Other,
        }
    }

    /// Serving or about to: no state, or `Normal`.
    fn normal(self) -> bool {
        matches!(self, Self::Unset | Self::Normal)
    }
}

/// The bits of [`PodInfo`]'s flags: ten booleans and the [`State`] in two bytes, so that the
/// passes over every pod read as little memory as they can.
mod flags {
    pub(super) const UPDATED: u16 = 1 << 0;
    pub(super) const SPECIFIED_DELETE: u16 = 1 << 1;
    pub(super) const MARKED_FOR_DELETION: u16 = 1 << 2;
    pub(super) const UPDATE_READY: u16 = 1 << 3;
    pub(super) const READY: u16 = 1 << 4;
    pub(super) const AVAILABLE: u16 = 1 << 5;
    pub(super) const IN_GRACE: u16 = 1 << 6;
    pub(super) const IN_PLACE_IDLE: u16 = 1 << 7;
    pub(super) const HAS_TEMPLATE_HASH: u16 = 1 << 8;
    pub(super) const CURRENT: u16 = 1 << 12;
    /// The [`State`](super::State)'s index in `State::ALL`, in three bits.
    pub(super) const STATE_SHIFT: u32 = 9;
    pub(super) const STATE_MASK: u16 = 0b111 << STATE_SHIFT;
}

impl<'a> PodInfo<'a> {
    /// At the update revision.
    pub(crate) fn updated(&self) -> bool {
        self.flags & flags::UPDATED != 0
    }

    /// At the current revision.
    pub(crate) fn current(&self) -> bool {
        self.flags & flags::CURRENT != 0
    }

    /// Named in podsToDelete or labelled specified-delete.
    pub(crate) fn specified_delete(&self) -> bool {
        self.flags & flags::SPECIFIED_DELETE != 0
    }

    /// Labelled specified-delete.
    pub(crate) fn marked_for_deletion(&self) -> bool {
        self.flags & flags::MARKED_FOR_DELETION != 0
    }

    /// Ready by the CloneSet's rule (running, Ready, InPlaceUpdateReady not False), ignoring
    /// the lifecycle state.
    pub(crate) fn update_ready(&self) -> bool {
        self.flags & flags::UPDATE_READY != 0
    }

    /// `update_ready` and in lifecycle state Normal (or none).
    pub(crate) fn ready(&self) -> bool {
        self.flags & flags::READY != 0
    }

    /// `update_available` and in lifecycle state Normal (or none).
    pub(crate) fn available(&self) -> bool {
        self.flags & flags::AVAILABLE != 0
    }

    /// An in-place update waits for its grace period.
    pub(crate) fn in_grace(&self) -> bool {
        self.flags & flags::IN_GRACE != 0
    }

    /// No in-place update bookkeeping to do for this pod this round.
    pub(crate) fn in_place_idle(&self) -> bool {
        self.flags & flags::IN_PLACE_IDLE != 0
    }

    /// The pod has the `pod-template-hash` label.
    pub(crate) fn has_template_hash(&self) -> bool {
        self.flags & flags::HAS_TEMPLATE_HASH != 0
    }

    /// The lifecycle state label.
    pub(crate) fn state(&self) -> State {
        let index = (self.flags & flags::STATE_MASK) >> flags::STATE_SHIFT;
        State::ALL.get(usize::from(index)).copied().unwrap_or(State::Other)
    }

    /// The pod's name.
    pub(crate) fn name(&self) -> &'a str {
        self.pod.facts().name()
    }

    /// The pod's uid.
    pub(crate) fn uid(&self) -> &'a str {
        self.pod.facts().uid()
    }

    /// The `controller-revision-hash` label ("" when absent).
    pub(crate) fn revision_hash(&self) -> &'a str {
        self.pod.facts().revision_hash()
    }

    /// The `apps.kruise.io/cloneset-instance-id` label ("" when absent).
    pub(crate) fn instance_id(&self) -> &'a str {
        self.pod.facts().instance_id()
    }

    /// Where the pod goes in Kubernetes' active-pods order (before the name tie-break).
    pub(crate) fn active_rank(&self) -> ActiveRank {
        self.pod.facts().active_rank()
    }
}

impl<'a> PodInfo<'a> {
    /// Combines the facts of `pod` with the CloneSet `spec`, its `revisions` and `now`.
    #[cfg(test)]
    pub(crate) fn new(
        pod: &'a SnapshotPod,
        spec: &Spec<'_>,
        revisions: &InPlay<'_>,
        now: Timestamp,
    ) -> Self {
        Self::with_threshold(pod, spec, revisions, now, available_before(spec, now)).0
    }

    /// [`PodInfo::new`] with `available_before(spec, now)` computed once for many pods; also
    /// when the pod becomes available, if that is still ahead (for the requeue).
    pub(crate) fn with_threshold(
        pod: &'a SnapshotPod,
        spec: &Spec<'_>,
        revisions: &InPlay<'_>,
        now: Timestamp,
        available_before: Option<Timestamp>,
    ) -> (Self, Option<Timestamp>) {
        let facts = pod.facts();
        let name = facts.name();
        let state = State::of(facts.lifecycle_state());
        let normal = state.normal();
        let specified_delete = facts.marked_for_deletion()
            || (!spec.pods_to_delete.is_empty() && spec.pods_to_delete.contains(name));
        let update_ready = facts.update_ready();
        let (update_available, available_at) = if !update_ready {
            (false, None)
        } else if spec.min_ready_seconds == 0 {
            (true, None)
        } else {
            match facts.ready_since() {
                // Kubernetes: available once readySince + minReadySeconds is strictly before now;
                // `spec.available_before` (now - minReadySeconds) answers that without adding.
                Some(since) if available_before.is_some_and(|before| since < before) => {
                    (true, None)
                }
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
        let set = |flag: u16, on: bool| if on { flag } else { 0 };
        let info = Self {
            pod,
            flags: ((state as u16) << flags::STATE_SHIFT)
                | set(flags::UPDATED, revisions.update.matches(facts.revision_hash()))
                | set(flags::CURRENT, revisions.current.matches(facts.revision_hash()))
                | set(flags::SPECIFIED_DELETE, specified_delete)
                | set(flags::MARKED_FOR_DELETION, facts.marked_for_deletion())
                | set(flags::UPDATE_READY, update_ready)
                | set(flags::READY, update_ready && normal)
                | set(flags::AVAILABLE, update_available && normal)
                | set(flags::IN_GRACE, facts.in_grace())
                | set(flags::IN_PLACE_IDLE, facts.in_place_idle())
                | set(flags::HAS_TEMPLATE_HASH, facts.has_template_hash()),
        };
        (info, if normal { available_at } else { None })
    }

    /// True in lifecycle state `PreparingDelete`.
    pub(crate) fn preparing_delete(&self) -> bool {
        self.state() == State::PreparingDelete
    }

    /// True in lifecycle state `PreparingUpdate`.
    pub(crate) fn preparing_update(&self) -> bool {
        self.state() == State::PreparingUpdate
    }

    /// Counts as updated when scaling: at the update revision, or (with the
    /// `PreparingUpdateAsUpdate` gate) about to be updated.
    pub(crate) fn updated_for_scale(&self, preparing_update_as_update: bool) -> bool {
        self.updated() || (preparing_update_as_update && self.preparing_update())
    }
}

/// `now - minReadySeconds`: pods ready since before it are available. `None` when it does not
/// exist (the exact sum is then computed per pod).
pub(crate) fn available_before(spec: &Spec<'_>, now: Timestamp) -> Option<Timestamp> {
    now.checked_sub(SignedDuration::from_secs(i64::from(spec.min_ready_seconds))).ok()
}

/// The CloneSet's update and current revisions.
#[derive(Clone, Debug)]
pub(crate) struct InPlay<'a> {
    pub update: RevisionName<'a>,
    pub current: RevisionName<'a>,
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
        short_eq(label.as_bytes(), self.name.as_bytes())
            || short_eq(short_hash(label).as_bytes(), self.short.as_bytes())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn states_keep_their_place_in_the_flags() {
        for (index, state) in State::ALL.iter().enumerate() {
            assert_eq!(*state as usize, index, "{state:?}");
        }
        let known = LifecycleState::KNOWN.iter().map(|value| LifecycleState::from(*value));
        let mut seen: Vec<State> = known.map(|state| State::of(Some(&state))).collect();
        seen.push(State::of(None));
        seen.push(State::of(Some(&LifecycleState::from("Draining"))));
        seen.sort_by_key(|state| *state as u8);
        assert_eq!(seen, State::ALL, "every state has its own code");
    }

    #[test]
    fn pod_infos_stay_small() {
        assert_eq!(std::mem::size_of::<PodInfo<'_>>(), 16);
    }
}
