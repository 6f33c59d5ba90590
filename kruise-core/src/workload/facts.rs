//! What the planner reads from every pod on every round, extracted once per pod version.
//!
//! A decoded [`Pod`] is spread over a few dozen heap allocations (every label key and value,
//! every condition's strings, the spec's node name). Reading them for ten thousand pods on
//! every plan is bound by memory latency, not by the work done. [`PodFacts`] keeps what the
//! planner needs from each pod in one value with no allocation of its own (unless the pod's
//! name, uid and labels are long), computed when the pod enters a cache (once per watch
//! event) instead of once per plan. A [`SnapshotPod`] pairs a pod with its facts, so a
//! snapshot's facts lie side by side in one array; the planner reads the whole pod only for
//! the pods it acts on.

use std::borrow::Cow;
use std::sync::{Arc, OnceLock};

use arrayvec::ArrayString;
use jiff::Timestamp;
use k8s_openapi::api::core::v1::{Pod, PodStatus};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kruise_api::apps::common::LifecycleState;
use kruise_api::well_known::{annotations, kubernetes, labels, readiness_gates};
use serde::{Deserialize, Deserializer, Serialize, Serializer};

use crate::pod::{ActiveRank, is_pod_active, max_container_restarts};

/// The facts about one pod that do not depend on the CloneSet or on the time: the planner
/// combines them with both on every round.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PodFacts {
    /// The name, the uid, then every label key and value, concatenated.
    text: Text,
    /// The end offsets in `text`: the name's, the uid's, then each label's key and value.
    ends: Ends,
    /// The `controller-revision-hash` label's value, as a range of `text`.
    revision_hash: (u32, u32),
    /// The `apps.kruise.io/cloneset-instance-id` label's value, as a range of `text`.
    instance_id: (u32, u32),
    /// The lifecycle state label, if set and not empty.
    state: Option<LifecycleState>,
    /// Not finished and not terminating.
    active: bool,
    /// Phase `Running`.
    running: bool,
    /// The last `Ready` condition is `True`.
    ready: bool,
    /// The last `Ready` condition's transition time.
    ready_since: Option<Timestamp>,
    /// The last `InPlaceUpdateReady` condition is `True`, or there is none.
    in_place_ready: bool,
    /// The last `InPlaceUpdateReady` condition is `True` with no reason or message.
    in_place_condition_clean: bool,
    /// The spec has the `InPlaceUpdateReady` readiness gate.
    in_place_gate: bool,
    /// An in-place update waits for its grace period (annotation set and not empty).
    in_grace: bool,
    /// An in-place update record is present.
    in_place_state: bool,
    /// Labelled `apps.kruise.io/specified-delete`.
    marked_for_deletion: bool,
    /// Labelled `pod-template-hash`.
    has_template_hash: bool,
    /// Where the pod goes in Kubernetes' active-pods order (before the name tie-break).
    rank: Rank,
    /// The StatefulSet identity its name and labels carry.
    identity: Identity,
}

/// What a pod's name and identity labels say of its place in a StatefulSet. Packed into
/// eight bytes: every pod of a snapshot carries one.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Identity {
    /// The trailing digits' value (-1: no `-<digits>` suffix, the value does not fit an `i32`,
    /// or the name is longer than 64 KiB, far beyond the API server's limit of 253 bytes).
    ordinal: i32,
    /// Where the `-` before the trailing digits is.
    dash: u16,
    /// The `statefulset.kubernetes.io/pod-name` label names the pod.
    name_label_right: bool,
    /// The `apps.kubernetes.io/pod-index` label holds the ordinal, in decimal without leading
    /// zeros.
    index_label_right: bool,
}

impl Identity {
    fn new(name: &str) -> Self {
        let parsed = crate::ordinal::parent_and_ordinal(name)
            .and_then(|(parent, ordinal)| Some((u16::try_from(parent.len()).ok()?, ordinal)));
        let (dash, ordinal) = parsed.unwrap_or((0, -1));
        Self { ordinal, dash, name_label_right: false, index_label_right: false }
    }

    /// Whether the index label's `value` holds the ordinal.
    fn index_label_right(&self, value: &str) -> bool {
        let leading_zero = value.len() > 1 && value.starts_with('0');
        self.ordinal >= 0
            && !leading_zero
            && crate::ordinal::parse_decimal(value.as_bytes()) == Some(self.ordinal)
    }
}

/// An [`ActiveRank`], packed into an integer when it packs (whole-second times, as
/// Kubernetes writes them), else whole. Kept small: every pod of a snapshot carries one.
#[derive(Clone, Debug, PartialEq, Eq)]
enum Rank {
    /// [`ActiveRank::packed`] as (high, low) halves; [`ActiveRank::unpack`] gives it back.
    Packed([u64; 2]),
    Full(Box<ActiveRank>),
}

impl Rank {
    fn new(rank: ActiveRank) -> Self {
        match rank.packed().filter(|&p| ActiveRank::unpack(p) == Some(rank)) {
            Some(packed) => Self::Packed([(packed >> 64) as u64, packed as u64]),
            None => Self::Full(Box::new(rank)),
        }
    }

    fn packed(&self) -> Option<u128> {
        match self {
            Self::Packed([high, low]) => Some((u128::from(*high) << 64) | u128::from(*low)),
            Self::Full(_) => None,
        }
    }

    fn rank(&self) -> ActiveRank {
        match self {
            // `new` keeps only packed values that unpack to the rank, so `unpack` succeeds;
            // the fallback (the lowest rank) is never taken.
            Self::Packed(_) => self
                .packed()
                .and_then(ActiveRank::unpack)
                .unwrap_or_else(|| ActiveRank::new(false, "", false, None, 0, None)),
            Self::Full(rank) => **rank,
        }
    }
}

/// A range of a facts text as `u32` offsets. Texts hold a pod's name, uid and labels, which the
/// API server limits to far below 4 GiB; an offset beyond that reads as an empty range.
fn range32((start, end): (usize, usize)) -> (u32, u32) {
    match (u32::try_from(start), u32::try_from(end)) {
        (Ok(start), Ok(end)) => (start, end),
        _ => (0, 0),
    }
}

impl PodFacts {
    /// Reads the facts of `pod`: one pass over its labels, annotations and conditions.
    pub fn new(pod: &Pod) -> Self {
        let meta = &pod.metadata;
        let name = meta.name.as_deref().unwrap_or_default();
        let uid = meta.uid.as_deref().unwrap_or_default();
        let pod_labels = meta.labels.as_ref();
        let label_bytes: usize =
            pod_labels.iter().flat_map(|l| l.iter()).map(|(k, v)| k.len() + v.len()).sum();
        let mut text = String::with_capacity(name.len() + uid.len() + label_bytes);
        let mut ends = Vec::with_capacity(2 + 2 * pod_labels.map_or(0, |l| l.len()));
        text.push_str(name);
        ends.push(text.len());
        text.push_str(uid);
        ends.push(text.len());

        let mut revision_hash = (0, 0);
        let mut instance_id = (0, 0);
        let mut state = None;
        let mut marked_for_deletion = false;
        let mut has_template_hash = false;
        let mut identity = Identity::new(name);
        for (key, value) in pod_labels.into_iter().flatten() {
            text.push_str(key);
            ends.push(text.len());
            let start = text.len();
            text.push_str(value);
            ends.push(text.len());
            let range = (start, text.len());
            match key.as_str() {
                kubernetes::labels::CONTROLLER_REVISION_HASH => revision_hash = range,
                kubernetes::labels::POD_TEMPLATE_HASH => has_template_hash = true,
                labels::LIFECYCLE_STATE if !value.is_empty() => {
                    state = Some(LifecycleState::from(value.as_str()));
                }
                labels::SPECIFIED_DELETE => marked_for_deletion = true,
                labels::CLONESET_INSTANCE_ID => instance_id = range,
                kubernetes::labels::STATEFULSET_POD_NAME => {
                    identity.name_label_right = value == name;
                }
                kubernetes::labels::POD_INDEX => {
                    identity.index_label_right = identity.index_label_right(value);
                }
                _ => {}
            }
        }

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
        // The active-pods order reads the first Ready condition; the rest of the planner the last.
        let mut first_ready = None;
        let mut ready = false;
        let mut ready_since = None;
        let mut in_place_ready = true;
        let mut in_place_condition_clean = false;
        for cond in status.and_then(|s| s.conditions.as_deref()).unwrap_or_default() {
            if cond.type_ == "Ready" {
                first_ready = first_ready.or(Some(cond));
                ready = cond.status == "True";
                ready_since = cond.last_transition_time.as_ref().map(|t| t.0);
            } else if cond.type_ == readiness_gates::IN_PLACE_UPDATE_READY {
                in_place_ready = cond.status == "True";
                in_place_condition_clean = in_place_ready
                    && cond.reason.as_deref().unwrap_or_default().is_empty()
                    && cond.message.as_deref().unwrap_or_default().is_empty();
            }
        }
        let rank_ready = first_ready.is_some_and(|c| c.status == "True");
        let active_rank = ActiveRank::new(
            pod.spec.as_ref().and_then(|s| s.node_name.as_deref()).is_some_and(|n| !n.is_empty()),
            phase.unwrap_or_default(),
            rank_ready,
            first_ready
                .filter(|_| rank_ready)
                .and_then(|c| c.last_transition_time.as_ref())
                .map(|t| t.0),
            max_container_restarts(pod),
            meta.creation_timestamp.as_ref().map(|t| t.0),
        );
        Self {
            text: Text::new(text),
            ends: Ends::new(&ends),
            revision_hash: range32(revision_hash),
            instance_id: range32(instance_id),
            state,
            active: is_pod_active(pod),
            running: phase == Some("Running"),
            ready,
            ready_since,
            in_place_ready,
            in_place_condition_clean,
            in_place_gate: crate::inplace::has_readiness_gate(pod),
            in_grace,
            in_place_state,
            marked_for_deletion,
            has_template_hash,
            rank: Rank::new(active_rank),
            identity,
        }
    }

    /// Reads the start of the text (the name and uid) and their offsets, and folds them into
    /// a byte. Doing so for many pods before using them keeps many memory reads in flight at
    /// once, instead of waiting for each pod in turn.
    pub(crate) fn touch_head(&self) -> u8 {
        self.text.bytes().first().copied().unwrap_or(0) ^ self.end(1) as u8
    }

    /// Calls `f` with each label's key length and the offsets of its key and value, for
    /// scanning many keys without the checks that slicing a `str` makes;
    /// [`PodFacts::value_at`] gives the value. The offsets' storage is matched once, not once
    /// per label.
    fn for_each_label(&self, f: impl FnMut(usize, (usize, usize), (usize, usize))) {
        /// The labels start where the uid ends; each is a key end then a value end.
        #[inline(always)]
        fn walk(
            mut ends: impl Iterator<Item = usize>,
            mut f: impl FnMut(usize, (usize, usize), (usize, usize)),
        ) {
            let Some(mut start) = ends.nth(1) else { return };
            while let (Some(key_end), Some(value_end)) = (ends.next(), ends.next()) {
                f(key_end.saturating_sub(start), (start, key_end), (key_end, value_end));
                start = value_end;
            }
        }
        match &self.ends {
            Ends::Inline { len, ends } => {
                let ends = ends.get(..usize::from(*len)).unwrap_or(ends);
                walk(ends.iter().map(|&end| usize::from(end)), f);
            }
            Ends::Spilled(ends) => walk(ends.iter().copied(), f),
        }
    }

    /// Each label's key and value, as ranges of the text.
    fn label_ranges(&self) -> impl Iterator<Item = ((usize, usize), (usize, usize))> + '_ {
        let mut ends = self.ends.iter();
        // The labels start where the uid ends.
        let mut start = ends.nth(1).unwrap_or(0);
        std::iter::from_fn(move || {
            let key_end = ends.next()?;
            let value_end = ends.next()?;
            let ranges = ((start, key_end), (key_end, value_end));
            start = value_end;
            Some(ranges)
        })
    }

    /// A label value found by [`PodFacts::for_each_label`].
    fn value_at(&self, range: (usize, usize)) -> &str {
        self.slice(range)
    }

    fn slice(&self, (start, end): (usize, usize)) -> &str {
        self.text.get(start, end)
    }

    fn end(&self, i: usize) -> usize {
        self.ends.get(i)
    }

    /// `metadata.name` ("" when unset).
    pub fn name(&self) -> &str {
        self.slice((0, self.end(0)))
    }

    /// `metadata.uid` ("" when unset).
    pub fn uid(&self) -> &str {
        self.slice((self.end(0), self.end(1)))
    }

    /// The pod's labels, in key order.
    pub fn labels(&self) -> impl Iterator<Item = (&str, &str)> {
        self.label_ranges().map(|(key, value)| (self.slice(key), self.slice(value)))
    }

    /// The `controller-revision-hash` label ("" when absent).
    pub fn revision_hash(&self) -> &str {
        let (start, end) = self.revision_hash;
        self.slice((start as usize, end as usize))
    }

    /// The `apps.kruise.io/cloneset-instance-id` label ("" when absent).
    pub fn instance_id(&self) -> &str {
        let (start, end) = self.instance_id;
        self.slice((start as usize, end as usize))
    }

    /// The lifecycle state label, if set and not empty.
    pub fn lifecycle_state(&self) -> Option<&LifecycleState> {
        self.state.as_ref()
    }

    /// Not finished (`Succeeded`/`Failed`) and not terminating.
    pub fn active(&self) -> bool {
        self.active
    }

    /// Where the pod goes in Kubernetes' active-pods order, before the name tie-break.
    pub fn active_rank(&self) -> ActiveRank {
        self.rank.rank()
    }

    /// [`ActiveRank::packed`] of [`PodFacts::active_rank`].
    pub(crate) fn packed_rank(&self) -> Option<u128> {
        self.rank.packed()
    }

    /// Running, `Ready` and, if the pod has an `InPlaceUpdateReady` condition, that condition
    /// `True` (CloneSet's rule, before minReadySeconds and lifecycle states).
    pub(crate) fn update_ready(&self) -> bool {
        self.running && self.ready && self.in_place_ready
    }

    /// The last `Ready` condition's transition time.
    pub(crate) fn ready_since(&self) -> Option<Timestamp> {
        self.ready_since
    }

    /// The last `Ready` condition is `True` (whatever the phase).
    pub(crate) fn ready(&self) -> bool {
        self.ready
    }

    /// The spec has the `InPlaceUpdateReady` readiness gate.
    pub(crate) fn in_place_gate(&self) -> bool {
        self.in_place_gate
    }

    /// The last `InPlaceUpdateReady` condition is `True`, or there is none.
    pub(crate) fn in_place_ready(&self) -> bool {
        self.in_place_ready
    }

    /// Phase `Running` and the last `Ready` condition `True`.
    pub(crate) fn running_and_ready(&self) -> bool {
        self.running && self.ready
    }

    /// An in-place update record is present (an update may still be under way).
    pub(crate) fn in_place_state(&self) -> bool {
        self.in_place_state
    }

    /// The value of the label `key`, if the pod has it.
    pub(crate) fn label(&self, key: &str) -> Option<&str> {
        self.labels().find(|(k, _)| *k == key).map(|(_, v)| v)
    }

    /// An in-place update waits for its grace period.
    pub(crate) fn in_grace(&self) -> bool {
        self.in_grace
    }

    /// No in-place bookkeeping is due: no grace period, no update record, and the readiness
    /// gate (if any) already satisfied.
    pub(crate) fn in_place_idle(&self) -> bool {
        !self.in_grace
            && !self.in_place_state
            && (self.in_place_condition_clean || !self.in_place_gate)
    }

    /// Labelled `apps.kruise.io/specified-delete`.
    pub(crate) fn marked_for_deletion(&self) -> bool {
        self.marked_for_deletion
    }

    /// Labelled `pod-template-hash`.
    pub(crate) fn has_template_hash(&self) -> bool {
        self.has_template_hash
    }

    /// The StatefulSet the name belongs to and the pod's ordinal, as
    /// [`parent_and_ordinal`](crate::ordinal::parent_and_ordinal) reads them.
    pub(crate) fn parent_and_ordinal(&self) -> Option<(&str, i32)> {
        let Identity { dash, ordinal, .. } = self.identity;
        if ordinal < 0 {
            return None;
        }
        Some((self.name().get(..usize::from(dash))?, ordinal))
    }

    /// The identity labels are right for the ordinal in the pod's name: the pod-name label
    /// names the pod, and (when `index_label` is on) the pod-index label holds the ordinal.
    pub(crate) fn identity_labels_right(&self, index_label: bool) -> bool {
        self.identity.name_label_right && (!index_label || self.identity.index_label_right)
    }
}

/// How many bytes of text [`Text`] keeps inline: a pod's name, uid and a handful of labels.
const INLINE_TEXT: usize = 232;

/// The text of a [`PodFacts`]: inside the facts when it fits, else on the heap. Inline, a
/// snapshot's texts lie in its array of pods, so the pass over every pod reads memory in order
/// instead of following a pointer per pod to wherever the text was allocated. (With 100,000
/// pods those allocations span hundreds of megabytes, and the pass took twice as long.)
#[derive(Clone)]
#[expect(clippy::large_enum_variant, reason = "the inline variant is the point: no allocation")]
enum Text {
    Inline(ArrayString<INLINE_TEXT>),
    Heap(Arc<str>),
}

impl Text {
    fn new(text: String) -> Self {
        match ArrayString::from(&text) {
            Ok(inline) => Self::Inline(inline),
            Err(_) => Self::Heap(text.into()),
        }
    }

    fn as_str(&self) -> &str {
        match self {
            Self::Inline(text) => text,
            Self::Heap(text) => text,
        }
    }

    fn bytes(&self) -> &[u8] {
        self.as_str().as_bytes()
    }

    /// Bytes `start..end`; "" when that is not a range of whole characters.
    fn get(&self, start: usize, end: usize) -> &str {
        self.as_str().get(start..end).unwrap_or_default()
    }
}

impl PartialEq for Text {
    fn eq(&self, other: &Self) -> bool {
        self.bytes() == other.bytes()
    }
}

impl Eq for Text {}

impl std::fmt::Debug for Text {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_tuple("Text").field(&self.as_str()).finish()
    }
}

/// How many offsets [`Ends`] keeps inline: the name, the uid and 11 labels.
const INLINE_ENDS: usize = 24;

/// Offsets into a [`PodFacts`] text. Kept inline for pods with up to 11 labels and 64 KiB of
/// text, so that reading a pod's labels touches one allocation, not two.
#[derive(Clone, Debug, PartialEq, Eq)]
enum Ends {
    Inline { len: u8, ends: [u16; INLINE_ENDS] },
    Spilled(Arc<[usize]>),
}

impl Ends {
    fn new(ends: &[usize]) -> Self {
        let mut inline = [0u16; INLINE_ENDS];
        if ends.len() <= INLINE_ENDS
            && let Ok(len) = u8::try_from(ends.len())
        {
            let fits = ends
                .iter()
                .zip(inline.iter_mut())
                .all(|(&end, slot)| u16::try_from(end).map(|end| *slot = end).is_ok());
            if fits {
                return Self::Inline { len, ends: inline };
            }
        }
        Self::Spilled(ends.into())
    }

    /// The offsets in order, without a bounds check per offset.
    fn iter(&self) -> EndsIter<'_> {
        match self {
            Self::Inline { len, ends } => {
                EndsIter::Inline(ends.get(..usize::from(*len)).unwrap_or(ends).iter())
            }
            Self::Spilled(ends) => EndsIter::Spilled(ends.iter()),
        }
    }

    /// Offset `i`; 0 past the end.
    fn get(&self, i: usize) -> usize {
        match self {
            Self::Inline { len, ends } if i < usize::from(*len) => {
                ends.get(i).copied().map_or(0, usize::from)
            }
            Self::Inline { .. } => 0,
            Self::Spilled(ends) => ends.get(i).copied().unwrap_or(0),
        }
    }
}

/// The offsets of an [`Ends`], in order.
enum EndsIter<'e> {
    Inline(std::slice::Iter<'e, u16>),
    Spilled(std::slice::Iter<'e, usize>),
}

impl Iterator for EndsIter<'_> {
    type Item = usize;

    fn next(&mut self) -> Option<usize> {
        match self {
            Self::Inline(ends) => ends.next().map(|&end| usize::from(end)),
            Self::Spilled(ends) => ends.next().copied(),
        }
    }
}

/// Finds the values of a fixed set of label keys in many pods' facts, with one pass over each
/// pod's labels. Label keys of other lengths (below 64 bytes) are skipped without comparing
/// bytes.
#[derive(Clone, Debug, Default)]
pub(crate) struct LabelLookup<'k> {
    keys: Vec<&'k str>,
    /// Bit `n` is set when a key is `n` bytes long (`n` < 64).
    lengths: u64,
}

impl<'k> LabelLookup<'k> {
    /// The slot of `key`, added if it is new. Slots count from 0 in the order keys are added.
    pub(crate) fn slot(&mut self, key: &'k str) -> usize {
        match self.keys.iter().position(|k| *k == key) {
            Some(slot) => slot,
            None => {
                self.keys.push(key);
                self.lengths |= 1u64.checked_shl(key.len() as u32).unwrap_or(0);
                self.keys.len() - 1
            }
        }
    }

    /// How many keys there are.
    pub(crate) fn len(&self) -> usize {
        self.keys.len()
    }

    fn wanted_length(&self, len: usize) -> bool {
        len >= 64 || self.lengths & (1u64 << len) != 0
    }

    /// Fills `values` (one per slot) with the pod's values of the keys; `None` for a key the
    /// pod lacks.
    pub(crate) fn fill<'f>(&self, facts: &'f PodFacts, values: &mut [Option<&'f str>]) {
        values.fill(None);
        if self.keys.is_empty() {
            return;
        }
        let bytes = facts.text.bytes();
        facts.for_each_label(|key_len, (start, key_end), value| {
            if !self.wanted_length(key_len) {
                return;
            }
            let key = bytes.get(start..key_end).unwrap_or_default();
            if let Some(slot) =
                self.keys.iter().position(|k| crate::pod::short_eq(k.as_bytes(), key))
                && let Some(cell) = values.get_mut(slot)
            {
                *cell = Some(facts.value_at(value));
            }
        });
    }
}

/// Where a [`SnapshotPod`] built by [`SnapshotPod::lazy`] gets its pod: the metadata and the
/// status at once, the whole pod (the spec decoded) only when the planner asks for it.
///
/// A cache that keeps pods compact (the spec encoded) implements it, so that a plan over ten
/// thousand pods decodes only the few it acts on.
pub trait PodSource: Send + Sync + std::fmt::Debug {
    /// The pod's metadata.
    fn metadata(&self) -> &ObjectMeta;

    /// The pod's status (a source that keeps it encoded decodes it).
    fn status(&self) -> Option<Cow<'_, PodStatus>>;

    /// The whole pod, with this metadata and status. Called at most once per snapshot pod.
    fn whole_pod(&self) -> Pod;
}

/// The pod of a [`SnapshotPod`]: whole, or decoded on first use (by each clone that reads it:
/// the planner reads its snapshot's pods in place).
#[derive(Clone, Debug)]
enum PodCell {
    Whole(Arc<Pod>),
    Lazy { source: Arc<dyn PodSource>, whole: OnceLock<Arc<Pod>> },
}

/// A pod in a workload snapshot (a [`CloneSetSnapshot`](crate::cloneset::CloneSetSnapshot) or
/// a [`StatefulSetSnapshot`](crate::statefulset::StatefulSetSnapshot)), with its [`PodFacts`].
///
/// The planner reads the facts of every pod, and the metadata and status where the facts do
/// not say enough; the whole pod ([`SnapshotPod::pod`]) only for the pods it acts on. A pod
/// from a [`PodSource`] is decoded then, once. Serializes as the pod alone; the facts are
/// computed again when it is read back.
#[derive(Clone, Debug)]
pub struct SnapshotPod {
    pod: PodCell,
    /// Shared with the cache that read them: a snapshot is a few words per pod.
    facts: Arc<PodFacts>,
}

impl SnapshotPod {
    /// `pod`, with its facts computed now.
    pub fn new(pod: Arc<Pod>) -> Self {
        let facts = Arc::new(PodFacts::new(&pod));
        Self { pod: PodCell::Whole(pod), facts }
    }

    /// `pod` with facts computed earlier by [`PodFacts::new`] from the same pod, so that a
    /// cache that keeps facts beside its pods hands them over without reading every pod again.
    /// The planner trusts them; debug builds check that they are the pod's.
    pub fn with_facts(pod: Arc<Pod>, facts: PodFacts) -> Self {
        debug_assert_eq!(facts, PodFacts::new(&pod), "facts of another pod");
        Self { pod: PodCell::Whole(pod), facts: Arc::new(facts) }
    }

    /// The pod `source` gives, with `facts` computed earlier by [`PodFacts::new`] from the
    /// same pod. The whole pod is built on the first call of [`SnapshotPod::pod`]; debug builds
    /// check then that the facts are its.
    pub fn lazy(source: Arc<dyn PodSource>, facts: Arc<PodFacts>) -> Self {
        Self { pod: PodCell::Lazy { source, whole: OnceLock::new() }, facts }
    }

    /// The whole pod (decoded now if it came from a [`PodSource`] and was not yet).
    pub fn pod(&self) -> &Arc<Pod> {
        match &self.pod {
            PodCell::Whole(pod) => pod,
            PodCell::Lazy { source, whole } => whole.get_or_init(|| {
                let pod = Arc::new(source.whole_pod());
                debug_assert_eq!(*self.facts, PodFacts::new(&pod), "facts of another pod");
                pod
            }),
        }
    }

    /// Whether the whole pod is at hand: given whole, or decoded by an earlier
    /// [`SnapshotPod::pod`].
    pub fn is_whole(&self) -> bool {
        match &self.pod {
            PodCell::Whole(_) => true,
            PodCell::Lazy { whole, .. } => whole.get().is_some(),
        }
    }

    /// The pod's metadata (never decodes).
    pub fn metadata(&self) -> &ObjectMeta {
        match &self.pod {
            PodCell::Whole(pod) => &pod.metadata,
            PodCell::Lazy { source, .. } => source.metadata(),
        }
    }

    /// The pod's status (decoded now if its source keeps it encoded).
    pub fn status(&self) -> Option<Cow<'_, PodStatus>> {
        match &self.pod {
            PodCell::Whole(pod) => pod.status.as_ref().map(Cow::Borrowed),
            PodCell::Lazy { source, .. } => source.status(),
        }
    }

    /// Its facts.
    pub fn facts(&self) -> &PodFacts {
        &self.facts
    }
}

impl From<Arc<Pod>> for SnapshotPod {
    fn from(pod: Arc<Pod>) -> Self {
        Self::new(pod)
    }
}

impl From<Pod> for SnapshotPod {
    fn from(pod: Pod) -> Self {
        Self::new(Arc::new(pod))
    }
}

impl PartialEq for SnapshotPod {
    /// Equal pods; their facts follow from them.
    fn eq(&self, other: &Self) -> bool {
        self.pod() == other.pod()
    }
}

impl Serialize for SnapshotPod {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        self.pod().serialize(serializer)
    }
}

impl<'de> Deserialize<'de> for SnapshotPod {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        Pod::deserialize(deserializer).map(Self::from)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pod(value: serde_json::Value) -> Pod {
        serde_json::from_value(value).expect("valid pod")
    }

    #[test]
    fn name_uid_and_labels_read_back() {
        let p = pod(serde_json::json!({
            "metadata": {"name": "web-0", "uid": "u-1", "labels": {
                "b": "2", "a": "1", "controller-revision-hash": "web-abc",
                "apps.kruise.io/cloneset-instance-id": "xyz", "empty": ""
            }}
        }));
        let facts = PodFacts::new(&p);
        assert_eq!(facts.name(), "web-0");
        assert_eq!(facts.uid(), "u-1");
        let labels: Vec<(&str, &str)> = facts.labels().collect();
        assert_eq!(
            labels,
            vec![
                ("a", "1"),
                ("apps.kruise.io/cloneset-instance-id", "xyz"),
                ("b", "2"),
                ("controller-revision-hash", "web-abc"),
                ("empty", ""),
            ]
        );
        assert_eq!(facts.revision_hash(), "web-abc");
        assert_eq!(facts.instance_id(), "xyz");
        assert!(matches!(facts.text, Text::Inline(_)));
    }

    #[test]
    fn texts_longer_than_the_inline_room_go_to_the_heap_whole() {
        for extra in [INLINE_TEXT - 8, INLINE_TEXT - 7, INLINE_TEXT - 6, 3 * INLINE_TEXT] {
            // name "p" + uid "u" + key "k" + value + key "z" + value "é" (two bytes).
            let value = "v".repeat(extra);
            let p = pod(serde_json::json!({"metadata": {"name": "p", "uid": "u",
                "labels": {"k": value, "z": "é"}}}));
            let facts = PodFacts::new(&p);
            let len = 1 + 1 + 1 + extra + 1 + "é".len();
            assert_eq!(matches!(facts.text, Text::Inline(_)), len <= INLINE_TEXT, "{len}");
            assert_eq!((facts.name(), facts.uid()), ("p", "u"));
            let labels: Vec<(&str, &str)> = facts.labels().collect();
            assert_eq!(labels, vec![("k", value.as_str()), ("z", "é")]);
            assert_eq!(facts, facts.clone());
        }
    }

    #[test]
    fn many_labels_and_long_text_spill_the_offsets() {
        let many: serde_json::Map<String, serde_json::Value> =
            (0..40).map(|i| (format!("key-{i:02}"), format!("v{i}").into())).collect();
        let long = "x".repeat(70_000);
        for labels in [serde_json::Value::Object(many), serde_json::json!({"a": long, "b": "c"})] {
            let p =
                pod(serde_json::json!({"metadata": {"name": "n", "uid": "u", "labels": labels}}));
            let facts = PodFacts::new(&p);
            assert!(matches!(facts.ends, Ends::Spilled(_)));
            assert!(
                matches!(facts.text, Text::Heap(_)) == (facts.text.bytes().len() > INLINE_TEXT)
            );
            let want: Vec<(String, String)> =
                p.metadata.labels.iter().flatten().map(|(k, v)| (k.clone(), v.clone())).collect();
            let got: Vec<(String, String)> =
                facts.labels().map(|(k, v)| (k.to_owned(), v.to_owned())).collect();
            assert_eq!(got, want);
            assert_eq!((facts.name(), facts.uid()), ("n", "u"));
        }
    }

    #[test]
    fn a_bare_pod_has_empty_facts() {
        let facts = PodFacts::new(&Pod::default());
        assert_eq!((facts.name(), facts.uid(), facts.revision_hash()), ("", "", ""));
        assert_eq!(facts.labels().count(), 0);
        assert!(facts.active());
        assert!(!facts.update_ready());
        assert!(facts.in_place_idle());
    }

    #[test]
    fn readiness_reads_the_last_condition_and_the_in_place_gate() {
        let p = pod(serde_json::json!({
            "metadata": {"name": "p", "annotations": {"apps.kruise.io/inplace-update-grace": "{}"}},
            "spec": {"containers": [], "readinessGates": [{"conditionType": "InPlaceUpdateReady"}]},
            "status": {"phase": "Running", "conditions": [
                {"type": "Ready", "status": "False"},
                {"type": "InPlaceUpdateReady", "status": "True"},
                {"type": "Ready", "status": "True", "lastTransitionTime": "2024-05-01T10:00:00Z"},
            ]}
        }));
        let facts = PodFacts::new(&p);
        assert!(facts.update_ready());
        assert_eq!(facts.ready_since(), Some("2024-05-01T10:00:00Z".parse().expect("time")));
        assert!(facts.in_grace());
        assert!(!facts.in_place_idle());
    }

    #[test]
    fn serializes_as_the_pod_and_reads_back_with_facts() {
        let p = pod(serde_json::json!({"metadata": {"name": "p", "labels": {"x": "y"}}}));
        let sp = SnapshotPod::from(p.clone());
        let json = serde_json::to_value(&sp).expect("serializes");
        assert_eq!(json, serde_json::to_value(&p).expect("serializes"));
        let back: SnapshotPod = serde_json::from_value(json).expect("decodes");
        assert_eq!(back.facts(), sp.facts());
        assert_eq!(back.facts().labels().collect::<Vec<_>>(), vec![("x", "y")]);
    }

    #[test]
    fn identity_comes_from_the_name_and_the_identity_labels() {
        let facts = |name: &str, labels: serde_json::Value| {
            PodFacts::new(&pod(serde_json::json!({"metadata": {"name": name, "labels": labels}})))
        };
        let right = facts(
            "web-12",
            serde_json::json!({"statefulset.kubernetes.io/pod-name": "web-12",
                "apps.kubernetes.io/pod-index": "12"}),
        );
        assert_eq!(right.parent_and_ordinal(), Some(("web", 12)));
        assert!(right.identity_labels_right(true));
        let moved = facts(
            "web-13",
            serde_json::json!({"statefulset.kubernetes.io/pod-name": "web-13",
                "apps.kubernetes.io/pod-index": "12"}),
        );
        assert!(!moved.identity_labels_right(true));
        assert!(moved.identity_labels_right(false));
        for (name, labels, with_index, without_index) in [
            // A wrong pod-name label is wrong with or without the index label's gate.
            (
                "web-1",
                serde_json::json!({"statefulset.kubernetes.io/pod-name": "web-2",
                "apps.kubernetes.io/pod-index": "1"}),
                false,
                false,
            ),
            // A missing or zero-padded index label matters only under the gate.
            (
                "web-1",
                serde_json::json!({"statefulset.kubernetes.io/pod-name": "web-1"}),
                false,
                true,
            ),
            (
                "web-1",
                serde_json::json!({"statefulset.kubernetes.io/pod-name": "web-1",
                "apps.kubernetes.io/pod-index": "01"}),
                false,
                true,
            ),
            (
                "web-1",
                serde_json::json!({"statefulset.kubernetes.io/pod-name": "web-1",
                "apps.kubernetes.io/pod-index": "-1"}),
                false,
                true,
            ),
        ] {
            let f = facts(name, labels.clone());
            assert_eq!(f.identity_labels_right(true), with_index, "{labels}");
            assert_eq!(f.identity_labels_right(false), without_index, "{labels}");
        }
        for name in ["web", "web-", "web-x1", "-", "", "web-99999999999"] {
            assert_eq!(facts(name, serde_json::json!({})).parent_and_ordinal(), None, "{name}");
        }
        assert_eq!(facts("a-b-007", serde_json::json!({})).parent_and_ordinal(), Some(("a-b", 7)));
    }

    #[test]
    fn a_label_lookup_finds_each_key_once_whatever_its_length() {
        let long = "k".repeat(70);
        let p = pod(serde_json::json!({"metadata": {"name": "p", "labels": {
            "app": "web", "zone": "a", "tier": "b", long.clone(): "far"}}}));
        let facts = PodFacts::new(&p);
        let mut lookup = LabelLookup::default();
        let slots =
            [lookup.slot("zone"), lookup.slot("app"), lookup.slot("zone"), lookup.slot(&long)];
        assert_eq!(slots, [0, 1, 0, 2]);
        lookup.slot("missing");
        let mut values = vec![Some("stale"); lookup.len()];
        lookup.fill(&facts, &mut values);
        assert_eq!(values, vec![Some("a"), Some("web"), Some("far"), None]);
    }

    #[test]
    fn snapshot_pods_stay_small() {
        // Every plan streams through a snapshot's pods: besides the inline text, keep them small.
        // (The StatefulSet identity's eight bytes took it from 176 to 184.)
        let size = std::mem::size_of::<SnapshotPod>();
        assert!(size <= INLINE_TEXT + 184, "{size}");
        assert_eq!(std::mem::size_of::<Identity>(), 8);
    }
}
