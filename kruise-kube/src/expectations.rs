//! Expectations shared between reconciles: per controlled object, the writes its cache has
//! not shown yet (see [`kruise_core::expectations`] for the data and its rules).

use std::collections::HashMap;
use std::sync::Mutex;

use jiff::Timestamp;
use kruise_core::expectations::{ControllerExpectations, Expectation, ScaleAction};

use crate::cache::ObjectKey;

/// The expectations of one controller, by object key. Cheap to lock; never held across an
/// await.
#[derive(Debug, Default)]
pub struct ExpectationStore {
    by_key: Mutex<HashMap<ObjectKey, ControllerExpectations>>,
}

impl ExpectationStore {
    /// An empty store.
    pub fn new() -> Self {
        Self::default()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<ObjectKey, ControllerExpectations>> {
        // Every update below leaves the map consistent, so a poisoned lock is still usable.
        self.by_key.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The expectations of `key` (empty when none are recorded).
    pub fn get(&self, key: &ObjectKey) -> ControllerExpectations {
        self.lock().get(key).cloned().unwrap_or_default()
    }

    /// Replaces the expectations of `key` (with what a plan says to keep).
    pub fn set(&self, key: &ObjectKey, expectations: ControllerExpectations) {
        let mut map = self.lock();
        if expectations.is_empty() {
            map.remove(key);
        } else {
            map.insert(key.clone(), expectations);
        }
    }

    /// Forgets `key` (its object is gone).
    pub fn remove(&self, key: &ObjectKey) {
        self.lock().remove(key);
    }

    /// Records a scale expectation before the write that should fulfil it.
    pub fn expect_scale(&self, key: &ObjectKey, action: ScaleAction, name: &str, now: Timestamp) {
        self.lock().entry(key.clone()).or_default().scale.expect(action, name, now);
    }

    /// Drops a scale expectation whose write failed.
    pub fn cancel_scale(&self, key: &ObjectKey, action: ScaleAction, name: &str) {
        let mut map = self.lock();
        if let Some(exp) = map.get_mut(key) {
            exp.scale.observe(action, name);
            if exp.is_empty() {
                map.remove(key);
            }
        }
    }

    /// Records that the object `uid` was written at `resource_version`.
    pub fn expect_resource_version(
        &self,
        key: &ObjectKey,
        uid: &str,
        resource_version: &str,
        now: Timestamp,
    ) {
        self.lock().entry(key.clone()).or_default().resource_versions.expect(
            uid,
            resource_version,
            now,
        );
    }

    /// Records `expectation` for a write about to be made (scale) — resourceVersion
    /// expectations are recorded after the write with [`Self::expect_resource_version`].
    pub fn before_write(&self, key: &ObjectKey, expectation: &Expectation, now: Timestamp) {
        if let Expectation::Scale { action, name } = expectation {
            self.expect_scale(key, *action, name, now);
        }
    }

    /// How many objects have something pending.
    pub fn len(&self) -> usize {
        self.lock().len()
    }

    /// True when nothing is pending anywhere.
    pub fn is_empty(&self) -> bool {
        self.lock().is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scale_expectation_round_trip() {
        let store = ExpectationStore::new();
        let key = ObjectKey::new("ns", "cs");
        let now = Timestamp::UNIX_EPOCH;
        store.expect_scale(&key, ScaleAction::Create, "cs-a", now);
        assert_eq!(
            store.get(&key).scale.pending(ScaleAction::Create).collect::<Vec<_>>(),
            ["cs-a"]
        );
        store.cancel_scale(&key, ScaleAction::Create, "cs-a");
        assert!(store.get(&key).is_empty());
        assert!(store.is_empty(), "an object with nothing pending is forgotten");
    }

    #[test]
    fn set_replaces_and_empty_removes() {
        let store = ExpectationStore::new();
        let key = ObjectKey::new("ns", "cs");
        store.expect_resource_version(&key, "uid-1", "7", Timestamp::UNIX_EPOCH);
        assert_eq!(store.len(), 1);
        store.set(&key, ControllerExpectations::default());
        assert_eq!(store.len(), 0);
    }
}
