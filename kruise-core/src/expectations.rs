//! Expectations: writes a controller has made that its cache has not shown yet.
//!
//! A controller reads the cluster from a watch cache that lags behind its own writes. After it
//! creates a pod, the next reconcile may still not see the pod and would create another one.
//! Expectations close that gap: the controller records what it expects to see, and does not
//! plan further changes of the same kind until the cache shows them (or a timeout says the
//! event was lost).
//!
//! Everything here is plain data. There is no lock and no clock: the caller owns one value per
//! controlled object, passes `now` in, and hands a copy to the planner inside its snapshot.
//!
//! - [`ScaleExpectations`]: names of objects expected to appear ([`ScaleAction::Create`]) or to
//!   go away ([`ScaleAction::Delete`]).
//! - [`ResourceVersionExpectations`]: per object UID, the resourceVersion a write returned; the
//!   cache is behind until it shows that version or a newer one.
//! - [`UpdateExpectations`]: objects expected to reach a given revision.
//! - [`ControllerExpectations`]: the scale and resourceVersion expectations of one controller,
//!   as the CloneSet planner takes them.

use std::collections::{BTreeMap, BTreeSet};

use jiff::{SignedDuration, Timestamp};
use serde::{Deserialize, Serialize};

/// How long an expectation may stay unsatisfied before it is considered lost (five minutes,
/// upstream's default for `--expectation-timeout`).
pub const DEFAULT_TIMEOUT: SignedDuration = SignedDuration::from_secs(5 * 60);

/// Which way a scale expectation goes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
#[non_exhaustive]
pub enum ScaleAction {
    /// The object was created and should appear in the cache.
    Create,
    /// The object was deleted and should disappear from the cache (or show a deletion
    /// timestamp).
    Delete,
}

impl ScaleAction {
    /// The lower-case name upstream uses (`create`, `delete`).
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Create => "create",
            Self::Delete => "delete",
        }
    }
}

/// Whether expectations still hold a controller back.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum ExpectationState {
    /// Nothing is pending.
    Satisfied,
    /// Something is pending and the timeout has not passed yet.
    Waiting {
        /// How long the oldest pending expectation has waited.
        waited: SignedDuration,
        /// How long until it times out.
        remaining: SignedDuration,
    },
    /// Something has been pending for at least the timeout; the event was probably lost.
    TimedOut {
        /// How long the oldest pending expectation has waited.
        waited: SignedDuration,
    },
}

impl ExpectationState {
    /// True for [`ExpectationState::Satisfied`].
    pub fn is_satisfied(&self) -> bool {
        matches!(self, Self::Satisfied)
    }

    /// Classifies a wait that began at `since` (or has no start, which counts as now).
    fn classify(since: Option<Timestamp>, now: Timestamp, timeout: SignedDuration) -> Self {
        let waited = since.map_or(SignedDuration::ZERO, |since| now.duration_since(since));
        let waited = waited.max(SignedDuration::ZERO);
        if waited >= timeout {
            Self::TimedOut { waited }
        } else {
            Self::Waiting { waited, remaining: timeout - waited }
        }
    }
}

/// Names of objects a controller created or deleted and has not yet seen in its cache.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ScaleExpectations {
    /// Pending names, by action.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pending: BTreeMap<ScaleAction, BTreeSet<String>>,
    /// When the set last went from empty to non-empty.
    #[serde(default, skip_serializing_if = "Option::is_none", with = "timestamp_serde")]
    since: Option<Timestamp>,
}

impl ScaleExpectations {
    /// No expectations.
    pub fn new() -> Self {
        Self::default()
    }

    /// Records that `name` is expected to be created or deleted. The wait starts at `now` if
    /// nothing else was pending.
    pub fn expect(&mut self, action: ScaleAction, name: impl Into<String>, now: Timestamp) {
        if self.is_empty() {
            self.since = Some(now);
        }
        self.pending.entry(action).or_default().insert(name.into());
    }

    /// Records that the cache has shown the change to `name`.
    pub fn observe(&mut self, action: ScaleAction, name: &str) {
        if let Some(names) = self.pending.get_mut(&action) {
            names.remove(name);
            if names.is_empty() {
                self.pending.remove(&action);
            }
        }
        if self.is_empty() {
            self.since = None;
        }
    }

    /// Drops every expectation (for example after a timeout, or when the object is gone).
    pub fn clear(&mut self) {
        self.pending.clear();
        self.since = None;
    }

    /// True when nothing is pending.
    pub fn is_empty(&self) -> bool {
        self.pending.values().all(BTreeSet::is_empty)
    }

    /// The pending names for `action`, sorted.
    pub fn pending(&self, action: ScaleAction) -> impl Iterator<Item = &str> {
        self.pending.get(&action).into_iter().flatten().map(String::as_str)
    }

    /// When the current wait began.
    pub fn since(&self) -> Option<Timestamp> {
        self.since
    }

    /// Whether anything is pending at `now`, given the timeout.
    pub fn state(&self, now: Timestamp, timeout: SignedDuration) -> ExpectationState {
        if self.is_empty() {
            ExpectationState::Satisfied
        } else {
            ExpectationState::classify(self.since, now, timeout)
        }
    }

    /// Removes every expectation that `exists` shows fulfilled: a created name that exists, a
    /// deleted name that no longer does. `exists(name)` says whether the cache holds a live
    /// (not terminating) object of that name.
    pub fn observe_all(&mut self, mut exists: impl FnMut(&str) -> bool) {
        for (action, names) in &mut self.pending {
            names.retain(|name| match action {
                ScaleAction::Create => !exists(name),
                ScaleAction::Delete => exists(name),
            });
        }
        self.pending.retain(|_, names| !names.is_empty());
        if self.is_empty() {
            self.since = None;
        }
    }
}

/// One resourceVersion expectation.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ResourceVersionEntry {
    /// The resourceVersion the cache must reach.
    pub resource_version: String,
    /// When the expectation was recorded.
    #[serde(default, skip_serializing_if = "Option::is_none", with = "timestamp_serde")]
    pub since: Option<Timestamp>,
}

/// Per object UID, the resourceVersion the cache must reach before the object is trusted.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(transparent)]
pub struct ResourceVersionExpectations {
    by_uid: BTreeMap<String, ResourceVersionEntry>,
}

impl ResourceVersionExpectations {
    /// No expectations.
    pub fn new() -> Self {
        Self::default()
    }

    /// Records that the object `uid` was written and the write returned `resource_version`.
    /// An older version than one already expected is ignored.
    pub fn expect(&mut self, uid: impl Into<String>, resource_version: &str, now: Timestamp) {
        let entry = self.by_uid.entry(uid.into()).or_insert_with(|| ResourceVersionEntry {
            resource_version: String::new(),
            since: Some(now),
        });
        if is_resource_version_newer(&entry.resource_version, resource_version) {
            entry.resource_version = resource_version.to_owned();
        }
    }

    /// Records that the cache shows `uid` at `resource_version`; drops the expectation if that
    /// is at least the expected version.
    pub fn observe(&mut self, uid: &str, resource_version: &str) {
        if let Some(entry) = self.by_uid.get(uid)
            && is_resource_version_newer(&entry.resource_version, resource_version)
        {
            self.by_uid.remove(uid);
        }
    }

    /// Forgets `uid` (the object is gone).
    pub fn remove(&mut self, uid: &str) {
        self.by_uid.remove(uid);
    }

    /// True when nothing is expected.
    pub fn is_empty(&self) -> bool {
        self.by_uid.is_empty()
    }

    /// The expectation for `uid`, if any.
    pub fn get(&self, uid: &str) -> Option<&ResourceVersionEntry> {
        self.by_uid.get(uid)
    }

    /// Every expectation, by UID.
    pub fn iter(&self) -> impl Iterator<Item = (&str, &ResourceVersionEntry)> {
        self.by_uid.iter().map(|(uid, entry)| (uid.as_str(), entry))
    }

    /// Whether the cache's copy of `uid`, at `observed`, is as new as expected.
    pub fn state(
        &self,
        uid: &str,
        observed: &str,
        now: Timestamp,
        timeout: SignedDuration,
    ) -> ExpectationState {
        match self.by_uid.get(uid) {
            None => ExpectationState::Satisfied,
            Some(entry) if is_resource_version_newer(&entry.resource_version, observed) => {
                ExpectationState::Satisfied
            }
            Some(entry) => ExpectationState::classify(entry.since, now, timeout),
        }
    }
}

/// Objects a controller moved to a revision and has not yet seen there.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct UpdateExpectations {
    /// The revision the objects are moving to; expectations for older revisions are dropped.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    revision: String,
    /// `namespace/name` of the objects still expected.
    #[serde(default, skip_serializing_if = "BTreeSet::is_empty")]
    objects: BTreeSet<String>,
    /// When the set last went from empty to non-empty.
    #[serde(default, skip_serializing_if = "Option::is_none", with = "timestamp_serde")]
    since: Option<Timestamp>,
}

impl UpdateExpectations {
    /// No expectations.
    pub fn new() -> Self {
        Self::default()
    }

    /// Records that `key` (`namespace/name`) was moved to `revision`. Expectations for another
    /// revision are replaced.
    pub fn expect(&mut self, revision: &str, key: impl Into<String>, now: Timestamp) {
        if self.revision != revision {
            self.revision = revision.to_owned();
            self.objects.clear();
            self.since = None;
        }
        if self.objects.is_empty() {
            self.since = Some(now);
        }
        self.objects.insert(key.into());
    }

    /// Records that the cache shows `key` at `observed_revision`.
    pub fn observe(&mut self, revision: &str, key: &str, observed_revision_matches: bool) {
        if self.revision == revision && observed_revision_matches {
            self.objects.remove(key);
        }
        if self.revision != revision || self.objects.is_empty() {
            self.clear();
        }
    }

    /// Forgets `key` (the object is gone).
    pub fn remove(&mut self, key: &str) {
        self.objects.remove(key);
        if self.objects.is_empty() {
            self.since = None;
        }
    }

    /// Drops every expectation.
    pub fn clear(&mut self) {
        self.revision.clear();
        self.objects.clear();
        self.since = None;
    }

    /// Objects still expected at `revision`, sorted; empty for another revision.
    pub fn pending(&self, revision: &str) -> impl Iterator<Item = &str> {
        let matches = self.revision == revision;
        self.objects.iter().filter(move |_| matches).map(String::as_str)
    }

    /// Whether objects are still expected at `revision` at `now`. Expectations for another
    /// revision never hold anything back.
    pub fn state(
        &self,
        revision: &str,
        now: Timestamp,
        timeout: SignedDuration,
    ) -> ExpectationState {
        if self.revision != revision || self.objects.is_empty() {
            ExpectationState::Satisfied
        } else {
            ExpectationState::classify(self.since, now, timeout)
        }
    }
}

/// The expectations one workload controller keeps for one object.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ControllerExpectations {
    /// Pods and PVCs created or deleted and not yet seen.
    #[serde(default, skip_serializing_if = "ScaleExpectations::is_empty")]
    pub scale: ScaleExpectations,
    /// Pods and revisions patched and not yet seen at the returned resourceVersion.
    #[serde(default, skip_serializing_if = "ResourceVersionExpectations::is_empty")]
    pub resource_versions: ResourceVersionExpectations,
}

impl ControllerExpectations {
    /// No expectations.
    pub fn new() -> Self {
        Self::default()
    }

    /// True when nothing is pending.
    pub fn is_empty(&self) -> bool {
        self.scale.is_empty() && self.resource_versions.is_empty()
    }
}

/// What the caller should record once it has carried out an action.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", tag = "kind")]
#[non_exhaustive]
pub enum Expectation {
    /// Expect `name` to be created or deleted ([`ScaleExpectations::expect`]).
    Scale {
        /// Create or delete.
        action: ScaleAction,
        /// The object's name.
        name: String,
    },
    /// Expect the object with this UID at the resourceVersion the write returns
    /// ([`ResourceVersionExpectations::expect`]).
    ResourceVersion {
        /// The object's UID.
        uid: String,
    },
}

/// Whether resourceVersion `new` is at least `old`. An empty or unparsable `old` is always
/// superseded; an unparsable `new` never supersedes a valid `old`. (resourceVersions are opaque
/// in general; this follows upstream in reading them as counters.)
pub fn is_resource_version_newer(old: &str, new: &str) -> bool {
    if old.is_empty() {
        return true;
    }
    let Ok(old) = old.parse::<u64>() else {
        return true;
    };
    match new.parse::<u64>() {
        Ok(new) => new >= old,
        Err(_) => false,
    }
}

/// Serde for `Option<Timestamp>` as an RFC 3339 string (jiff's serde feature is not enabled).
pub(crate) mod timestamp_serde {
    use jiff::Timestamp;
    use serde::{Deserialize, Deserializer, Serializer};

    pub(crate) fn serialize<S: Serializer>(
        value: &Option<Timestamp>,
        serializer: S,
    ) -> Result<S::Ok, S::Error> {
        match value {
            Some(ts) => serializer.collect_str(ts),
            None => serializer.serialize_none(),
        }
    }

    pub(crate) fn deserialize<'de, D: Deserializer<'de>>(
        deserializer: D,
    ) -> Result<Option<Timestamp>, D::Error> {
        let text = Option::<String>::deserialize(deserializer)?;
        text.map(|text| {
            text.parse::<Timestamp>().map_err(|err| {
                serde::de::Error::custom(format_args!("invalid timestamp {text:?}: {err}"))
            })
        })
        .transpose()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(second: i64) -> Timestamp {
        Timestamp::from_second(1_700_000_000 + second).expect("valid timestamp")
    }

    #[test]
    fn scale_expectations_wait_until_observed() {
        let mut exp = ScaleExpectations::new();
        assert!(exp.state(at(0), DEFAULT_TIMEOUT).is_satisfied());
        exp.expect(ScaleAction::Create, "pod-a", at(0));
        exp.expect(ScaleAction::Create, "pod-b", at(10));
        exp.expect(ScaleAction::Delete, "pod-c", at(20));
        assert_eq!(
            exp.state(at(30), DEFAULT_TIMEOUT),
            ExpectationState::Waiting {
                waited: SignedDuration::from_secs(30),
                remaining: SignedDuration::from_secs(270)
            }
        );
        assert_eq!(exp.pending(ScaleAction::Create).collect::<Vec<_>>(), ["pod-a", "pod-b"]);
        exp.observe(ScaleAction::Create, "pod-a");
        exp.observe(ScaleAction::Create, "pod-b");
        // Observing the wrong action does nothing.
        exp.observe(ScaleAction::Create, "pod-c");
        assert!(!exp.is_empty());
        exp.observe(ScaleAction::Delete, "pod-c");
        assert!(exp.is_empty());
        assert_eq!(exp.since(), None);
        assert!(exp.state(at(40), DEFAULT_TIMEOUT).is_satisfied());
    }

    #[test]
    fn scale_expectations_time_out() {
        let mut exp = ScaleExpectations::new();
        exp.expect(ScaleAction::Delete, "pod-a", at(0));
        assert_eq!(
            exp.state(at(300), DEFAULT_TIMEOUT),
            ExpectationState::TimedOut { waited: SignedDuration::from_secs(300) }
        );
        // A later expectation does not restart the clock while something is pending.
        exp.expect(ScaleAction::Delete, "pod-b", at(200));
        assert_eq!(exp.since(), Some(at(0)));
    }

    #[test]
    fn scale_expectations_observe_all_uses_existence() {
        let mut exp = ScaleExpectations::new();
        exp.expect(ScaleAction::Create, "new", at(0));
        exp.expect(ScaleAction::Create, "missing", at(0));
        exp.expect(ScaleAction::Delete, "gone", at(0));
        exp.expect(ScaleAction::Delete, "still-there", at(0));
        exp.observe_all(|name| name == "new" || name == "still-there");
        assert_eq!(exp.pending(ScaleAction::Create).collect::<Vec<_>>(), ["missing"]);
        assert_eq!(exp.pending(ScaleAction::Delete).collect::<Vec<_>>(), ["still-there"]);
    }

    #[test]
    fn resource_version_expectations_follow_upstream_ordering() {
        assert!(is_resource_version_newer("", "1"));
        assert!(is_resource_version_newer("x", "1"));
        assert!(is_resource_version_newer("5", "5"));
        assert!(is_resource_version_newer("5", "6"));
        assert!(!is_resource_version_newer("5", "4"));
        assert!(!is_resource_version_newer("5", "abc"));

        let mut exp = ResourceVersionExpectations::new();
        exp.expect("uid-1", "10", at(0));
        exp.expect("uid-1", "8", at(5)); // older: ignored
        assert_eq!(exp.get("uid-1").map(|e| e.resource_version.as_str()), Some("10"));
        assert_eq!(
            exp.state("uid-1", "9", at(60), DEFAULT_TIMEOUT),
            ExpectationState::Waiting {
                waited: SignedDuration::from_secs(60),
                remaining: SignedDuration::from_secs(240)
            }
        );
        assert!(exp.state("uid-1", "10", at(60), DEFAULT_TIMEOUT).is_satisfied());
        assert!(exp.state("uid-2", "1", at(60), DEFAULT_TIMEOUT).is_satisfied());
        exp.observe("uid-1", "9");
        assert!(!exp.is_empty());
        exp.observe("uid-1", "11");
        assert!(exp.is_empty());
    }

    #[test]
    fn update_expectations_reset_on_new_revision() {
        let mut exp = UpdateExpectations::new();
        exp.expect("rev-1", "ns/a", at(0));
        exp.expect("rev-1", "ns/b", at(1));
        assert!(!exp.state("rev-1", at(2), DEFAULT_TIMEOUT).is_satisfied());
        assert!(exp.state("rev-2", at(2), DEFAULT_TIMEOUT).is_satisfied());
        exp.observe("rev-1", "ns/a", true);
        exp.observe("rev-1", "ns/b", false);
        assert_eq!(exp.pending("rev-1").collect::<Vec<_>>(), ["ns/b"]);
        exp.expect("rev-2", "ns/c", at(3));
        assert_eq!(exp.pending("rev-1").count(), 0);
        assert_eq!(exp.pending("rev-2").collect::<Vec<_>>(), ["ns/c"]);
        exp.observe("rev-2", "ns/c", true);
        assert!(exp.state("rev-2", at(4), DEFAULT_TIMEOUT).is_satisfied());
    }

    #[test]
    fn controller_expectations_round_trip_as_yaml() {
        let mut exp = ControllerExpectations::new();
        exp.scale.expect(ScaleAction::Create, "demo-abcde", at(0));
        exp.resource_versions.expect("uid-1", "42", at(1));
        let yaml = serde_yaml::to_string(&exp).expect("encode");
        let back: ControllerExpectations = serde_yaml::from_str(&yaml).expect("decode");
        assert_eq!(back, exp);
        assert!(
            serde_yaml::from_str::<ControllerExpectations>("scale: {since: nonsense}").is_err()
        );
    }
}
