//! The per-node back-off between deletions of failed daemon pods, as kube-controller-manager's
//! DaemonSet controller and upstream OpenKruise keep it: a failed pod on a node is deleted at
//! once, and every further deletion on the same node waits twice as long as the one before,
//! from one second up to fifteen minutes. An entry untouched for twice the longest wait is
//! forgotten and the next failure starts again at one second.
//!
//! This is controller memory, not cluster state: the controller keeps a [`FailedPodBackoff`],
//! hands the planner each node's "not before" instant
//! ([`DaemonSetSnapshot::failed_pod_backoff`](super::DaemonSetSnapshot::failed_pod_backoff)),
//! and calls [`FailedPodBackoff::next`] for every node whose failed pod the plan deletes.
//! Time comes in as an argument; nothing here reads a clock.

use std::collections::BTreeMap;

use jiff::{SignedDuration, Timestamp};

/// The wait after the first deletion on a node (upstream's 1 s).
pub const FAILED_POD_BACKOFF_INITIAL: SignedDuration = SignedDuration::from_secs(1);
/// The longest wait (upstream's 15 min).
pub const FAILED_POD_BACKOFF_MAX: SignedDuration = SignedDuration::from_secs(15 * 60);

/// Which back-off entry: the DaemonSet's UID, its `status.observedGeneration` (a new
/// generation starts afresh, as upstream's key does) and the node.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct BackoffKey {
    /// The DaemonSet's UID.
    pub uid: String,
    /// Its `status.observedGeneration`.
    pub generation: i64,
    /// The node's name.
    pub node: String,
}

impl BackoffKey {
    /// The key of `node` for the DaemonSet `uid` at `generation`.
    pub fn new(uid: impl Into<String>, generation: i64, node: impl Into<String>) -> Self {
        Self { uid: uid.into(), generation, node: node.into() }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Entry {
    backoff: SignedDuration,
    last_update: Timestamp,
}

/// Per-(DaemonSet, node) exponential back-off, without jitter (as upstream's).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FailedPodBackoff {
    initial: SignedDuration,
    max: SignedDuration,
    entries: BTreeMap<BackoffKey, Entry>,
}

impl Default for FailedPodBackoff {
    fn default() -> Self {
        Self::new(FAILED_POD_BACKOFF_INITIAL, FAILED_POD_BACKOFF_MAX)
    }
}

impl FailedPodBackoff {
    /// An empty back-off starting at `initial` and doubling up to `max`.
    pub fn new(initial: SignedDuration, max: SignedDuration) -> Self {
        Self { initial, max, entries: BTreeMap::new() }
    }

    /// Whether an entry last updated at `last_update` is stale at `now` (untouched for more
    /// than twice the longest wait).
    fn expired(&self, last_update: Timestamp, now: Timestamp) -> bool {
        now.duration_since(last_update) > self.max * 2
    }

    /// Records a deletion on `key`'s node at `now`: the first (or the first after a stale
    /// entry) waits `initial`, each further one twice the last, at most `max`.
    pub fn next(&mut self, key: BackoffKey, now: Timestamp) {
        let (initial, max) = (self.initial, self.max);
        let backoff = match self.entries.get(&key) {
            Some(entry) if !self.expired(entry.last_update, now) => {
                entry.backoff.checked_mul(2).unwrap_or(max).min(max)
            }
            _ => initial,
        };
        self.entries.insert(key, Entry { backoff, last_update: now });
    }

    /// When `key`'s node leaves its back-off, if it is in one at `now`.
    pub fn not_before(&self, key: &BackoffKey, now: Timestamp) -> Option<Timestamp> {
        let entry = self.entries.get(key)?;
        if self.expired(entry.last_update, now) {
            return None;
        }
        let until = entry.last_update.checked_add(entry.backoff).ok()?;
        (until > now).then_some(until)
    }

    /// The nodes of the DaemonSet `uid` at `generation` that are in back-off at `now`, each
    /// with the instant it leaves it: what the planner reads.
    pub fn not_before_by_node(
        &self,
        uid: &str,
        generation: i64,
        now: Timestamp,
    ) -> BTreeMap<String, Timestamp> {
        let start = BackoffKey::new(uid, generation, String::new());
        self.entries
            .range(start..)
            .take_while(|(key, _)| key.uid == uid && key.generation == generation)
            .filter_map(|(key, _)| Some((key.node.clone(), self.not_before(key, now)?)))
            .collect()
    }

    /// Drops the entries that are stale at `now`.
    pub fn gc(&mut self, now: Timestamp) {
        let max = self.max;
        self.entries.retain(|_, entry| now.duration_since(entry.last_update) <= max * 2);
    }

    /// How many entries are kept.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// Whether no entry is kept.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(secs: i64) -> Timestamp {
        Timestamp::from_second(1_700_000_000 + secs).expect("valid")
    }

    #[test]
    fn waits_double_from_one_second_up_to_fifteen_minutes() {
        let mut b = FailedPodBackoff::default();
        let key = BackoffKey::new("u", 1, "n1");
        assert_eq!(b.not_before(&key, at(0)), None, "a node without failures waits for nothing");
        b.next(key.clone(), at(0));
        assert_eq!(b.not_before(&key, at(0)), Some(at(1)));
        assert_eq!(b.not_before(&key, at(1)), None, "the back-off is over at its end");
        b.next(key.clone(), at(1));
        assert_eq!(b.not_before(&key, at(1)), Some(at(3)));
        b.next(key.clone(), at(3));
        assert_eq!(b.not_before(&key, at(3)), Some(at(7)));
        let mut now = 7;
        for _ in 0..20 {
            b.next(key.clone(), at(now));
            now += 900;
        }
        assert_eq!(b.not_before(&key, at(now - 900)), Some(at(now)), "capped at 15 minutes");
        // Another node and another generation have their own entries.
        assert_eq!(b.not_before(&BackoffKey::new("u", 1, "n2"), at(now - 900)), None);
        assert_eq!(b.not_before(&BackoffKey::new("u", 2, "n1"), at(now - 900)), None);
    }

    #[test]
    fn a_stale_entry_starts_again_and_is_collected() {
        let mut b = FailedPodBackoff::default();
        let key = BackoffKey::new("u", 1, "n1");
        for t in [0, 1, 3, 7] {
            b.next(key.clone(), at(t));
        }
        assert_eq!(b.not_before(&key, at(7)), Some(at(15)));
        let later = 7 + 1801;
        b.gc(at(7 + 1800));
        assert_eq!(b.len(), 1, "not yet stale at exactly twice the maximum");
        b.next(key.clone(), at(later));
        assert_eq!(b.not_before(&key, at(later)), Some(at(later + 1)), "back to one second");
        b.gc(at(later + 1801));
        assert!(b.is_empty());
    }

    #[test]
    fn by_node_lists_only_this_daemonset_and_generation() {
        let mut b = FailedPodBackoff::default();
        b.next(BackoffKey::new("u", 1, "a"), at(0));
        b.next(BackoffKey::new("u", 1, "b"), at(0));
        b.next(BackoffKey::new("u", 2, "c"), at(0));
        b.next(BackoffKey::new("v", 1, "d"), at(0));
        b.next(BackoffKey::new("u", 1, "old"), at(-10));
        let nodes = b.not_before_by_node("u", 1, at(0));
        assert_eq!(nodes, BTreeMap::from([("a".into(), at(1)), ("b".into(), at(1))]));
    }
}
