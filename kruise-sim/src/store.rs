//! The versioned object store and its watch cache.
//!
//! One global, monotonic resourceVersion counter (as etcd's revision) is shared by all
//! resources. Each resource (group, plural) has a table of objects in storage form, a bounded
//! history of events for watches that resume from a resourceVersion, and a broadcast channel
//! to live watchers. Every write happens under one lock, inside a closure that sees the
//! current object, so read-check-write sequences (preconditions, resourceVersion checks) are
//! atomic; events are published under the same lock, so a watcher that subscribes under the
//! lock never misses one.
//!
//! Objects rest as compact JSON ([`Frozen`]), not as `serde_json::Value` trees: a tree spends
//! a B-tree node of eleven slots on every non-empty map, which made a typical pod (about 2.7 KB
//! of JSON, with its managedFields and service account volume) cost over 30 KiB. A read decodes
//! the JSON, unless the decoded value is still alive somewhere (what each table's last writes
//! stored and replaced, [`HOT_WRITES`] objects, is kept decoded for the watchers serving those
//! events and the writes that follow).

use crate::error::ApiError;
use serde_json::Value;
use std::collections::{BTreeMap, BTreeSet, HashMap, VecDeque};
use std::sync::{Arc, Mutex, MutexGuard, Weak};
use tokio::sync::broadcast;

/// `(group, plural)`: which table.
pub type TableKey = (String, String);
/// `(namespace, name)`: which object; the namespace is empty for cluster-scoped objects.
pub type ObjKey = (String, String);

/// What happened to an object.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum EventType {
    /// Created.
    Added,
    /// Changed.
    Modified,
    /// Removed.
    Deleted,
}

impl EventType {
    /// The wire name: `ADDED`, `MODIFIED`, `DELETED`.
    pub fn as_str(self) -> &'static str {
        match self {
            EventType::Added => "ADDED",
            EventType::Modified => "MODIFIED",
            EventType::Deleted => "DELETED",
        }
    }
}

/// How many of the objects a table's latest writes stored or replaced stay decoded.
pub const HOT_WRITES: usize = 256;

/// An object in the store: decoded while lately written, then at rest as its JSON, with the
/// last decoding kept while anything still holds it.
#[derive(Debug)]
pub struct Frozen {
    state: Mutex<State>,
}

#[derive(Debug)]
enum State {
    /// Lately written: not yet frozen.
    Hot(Arc<Value>),
    /// At rest as JSON.
    Cold { json: Box<[u8]>, live: Weak<Value> },
    /// Could not be encoded: kept decoded.
    Kept(Arc<Value>),
}

impl Frozen {
    /// A lately written object, kept decoded until [`Frozen::freeze`].
    fn hot(value: Arc<Value>) -> Arc<Frozen> {
        Arc::new(Frozen { state: Mutex::new(State::Hot(value)) })
    }

    /// Keeps `value`, its decoding, until it is frozen again.
    fn heat(&self, value: Arc<Value>) {
        let mut state = self.state();
        if matches!(*state, State::Cold { .. }) {
            *state = State::Hot(value);
        }
    }

    fn state(&self) -> MutexGuard<'_, State> {
        // Every change of the state is one assignment of a value built beforehand.
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Puts the object at rest as JSON (done outside the store's lock, once it is no longer
    /// among the latest writes). The decoded value lives on while anything holds it.
    fn freeze(&self) {
        let mut state = self.state();
        let State::Hot(value) = &*state else { return };
        let value = value.clone();
        *state = match serde_json::to_vec(&*value) {
            Ok(json) => State::Cold { json: json.into_boxed_slice(), live: Arc::downgrade(&value) },
            // A Value always has string keys, so encoding it cannot fail; should it, the value
            // is kept decoded.
            Err(_) => State::Kept(value),
        };
    }

    /// The object, decoded again unless its last decoding is still alive.
    pub fn value(&self) -> Arc<Value> {
        let mut state = self.state();
        match &mut *state {
            State::Hot(v) | State::Kept(v) => v.clone(),
            State::Cold { json, live } => {
                if let Some(v) = live.upgrade() {
                    return v;
                }
                let v = Arc::new(decode(json));
                *live = Arc::downgrade(&v);
                v
            }
        }
    }

    /// The bytes it rests in as JSON (none while it is kept decoded).
    pub fn resting_bytes(&self) -> usize {
        match &*self.state() {
            State::Cold { json, .. } => json.len(),
            State::Hot(_) | State::Kept(_) => 0,
        }
    }
}

/// Reads back JSON that [`Frozen::freeze`] wrote. The depth is not limited: the value was
/// built in memory (from requests parsed with serde_json's limit of 128 levels, and what the
/// server added), so it is no deeper than what was written.
fn decode(json: &[u8]) -> Value {
    use serde::Deserialize as _;
    let mut de = serde_json::Deserializer::from_slice(json);
    de.disable_recursion_limit();
    // JSON written by serde_json from a Value reads back as that Value.
    Value::deserialize(&mut de).unwrap_or(Value::Null)
}

/// One change, as kept in the watch cache.
#[derive(Debug)]
pub struct Event {
    /// The resourceVersion of the change.
    pub rv: u64,
    /// What happened.
    pub type_: EventType,
    /// The object after the change (for a deletion: the last state, with the deletion's rv).
    object: Arc<Frozen>,
    /// The object before the change, if it existed.
    prev: Option<Arc<Frozen>>,
    /// `object` as JSON, encoded by the first watcher that sends it as stored, for the others
    /// (kube-apiserver's watch cache likewise serializes an event once per encoding).
    pub(crate) encoded: std::sync::OnceLock<EncodedObject>,
}

impl Event {
    /// The object after the change (for a deletion: the last state, with the deletion's rv).
    pub fn object(&self) -> Arc<Value> {
        self.object.value()
    }

    /// The object before the change, if it existed.
    pub fn prev(&self) -> Option<Arc<Value>> {
        self.prev.as_ref().map(|p| p.value())
    }
}

/// An event's object encoded once for every watcher that serves it as stored.
#[derive(Clone, Debug)]
pub(crate) struct EncodedObject {
    /// The `kind` and `apiVersion` it was presented with (watchers of another version of the
    /// resource encode their own).
    pub kind: String,
    pub api_version: String,
    /// The object's JSON.
    pub json: bytes::Bytes,
}

/// What a write closure decides.
#[derive(Debug)]
#[non_exhaustive]
pub enum Write {
    /// Store this object (create or replace); the store stamps the resourceVersion.
    Put(Value),
    /// Remove the object.
    Delete,
    /// Change nothing and answer with the current object.
    Keep,
}

/// The result of a write.
#[derive(Clone, Debug)]
pub struct Written {
    /// The object as stored (or as last stored, for a deletion).
    pub object: Arc<Value>,
    /// The event emitted, if anything changed.
    pub event: Option<EventType>,
}

/// What a new watch starts with.
pub struct WatchStart {
    /// Events to replay, oldest first.
    pub replay: Vec<Arc<Event>>,
    /// Live events from here on.
    pub rx: broadcast::Receiver<Arc<Event>>,
    /// The store's resourceVersion when the watch started.
    pub rv: u64,
}

/// A too-old resourceVersion: `(requested, oldest available)`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TooOld(pub u64, pub u64);

struct Table {
    objects: BTreeMap<ObjKey, Arc<Frozen>>,
    history: VecDeque<Arc<Event>>,
    /// The objects the last writes stored and replaced, kept decoded ([`HOT_WRITES`] of them).
    hot: VecDeque<Arc<Frozen>>,
    /// Events with rv <= this may be missing from `history`.
    compacted: u64,
    tx: broadcast::Sender<Arc<Event>>,
}

impl Table {
    fn new(compacted: u64) -> Self {
        let (tx, _) = broadcast::channel(4096);
        Table {
            objects: BTreeMap::new(),
            history: VecDeque::new(),
            hot: VecDeque::new(),
            compacted,
            tx,
        }
    }
}

struct Inner {
    rv: u64,
    /// The resourceVersion up to which history was last compacted away for all tables.
    compacted: u64,
    tables: HashMap<TableKey, Table>,
    /// Owner uid -> the objects whose `ownerReferences` name it (for garbage collection).
    dependents: HashMap<String, BTreeSet<(TableKey, ObjKey)>>,
}

/// The uids an object's `ownerReferences` name.
fn owner_uids(obj: &Value) -> impl Iterator<Item = &str> {
    obj.pointer("/metadata/ownerReferences")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(|r| r.get("uid").and_then(Value::as_str))
}

fn unindex(
    deps: &mut HashMap<String, BTreeSet<(TableKey, ObjKey)>>,
    obj: &Value,
    at: &(TableKey, ObjKey),
) {
    for uid in owner_uids(obj) {
        if let Some(set) = deps.get_mut(uid) {
            set.remove(at);
            if set.is_empty() {
                deps.remove(uid);
            }
        }
    }
}

fn index(
    deps: &mut HashMap<String, BTreeSet<(TableKey, ObjKey)>>,
    obj: &Value,
    at: &(TableKey, ObjKey),
) {
    for uid in owner_uids(obj) {
        deps.entry(uid.to_string()).or_default().insert(at.clone());
    }
}

/// The object store.
pub struct Store {
    inner: Mutex<Inner>,
    history_limit: usize,
}

/// Sets `metadata.resourceVersion`.
pub fn set_rv(obj: &mut Value, rv: u64) {
    if let Some(meta) = obj.get_mut("metadata").and_then(Value::as_object_mut) {
        meta.insert("resourceVersion".into(), Value::String(rv.to_string()));
    }
}

impl Store {
    /// A store keeping up to `history_limit` events per resource for resuming watches.
    pub fn new(history_limit: usize) -> Self {
        Store {
            inner: Mutex::new(Inner {
                rv: 1,
                compacted: 0,
                tables: HashMap::new(),
                dependents: HashMap::new(),
            }),
            history_limit,
        }
    }

    fn lock(&self) -> MutexGuard<'_, Inner> {
        // A panic while holding the lock cannot leave a table half-written: every write
        // builds its new value before touching the table. So a poisoned lock is still usable.
        self.inner.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The latest resourceVersion.
    pub fn current_rv(&self) -> u64 {
        self.lock().rv
    }

    /// One object.
    pub fn get(&self, table: &TableKey, key: &ObjKey) -> Option<Arc<Value>> {
        let frozen = self.lock().tables.get(table).and_then(|t| t.objects.get(key).cloned());
        // Decoded outside the lock.
        frozen.map(|f| f.value())
    }

    /// All objects of a table (in one namespace, if given), in key order, and the current rv.
    pub fn list(&self, table: &TableKey, namespace: Option<&str>) -> (Vec<Arc<Value>>, u64) {
        let (frozen, rv) = {
            let inner = self.lock();
            let frozen: Vec<Arc<Frozen>> = match inner.tables.get(table) {
                None => Vec::new(),
                Some(t) => match namespace {
                    None => t.objects.values().cloned().collect(),
                    Some(ns) => t
                        .objects
                        .range((ns.to_string(), String::new())..)
                        .take_while(|((n, _), _)| n == ns)
                        .map(|(_, v)| v.clone())
                        .collect(),
                },
            };
            (frozen, inner.rv)
        };
        (frozen.iter().map(|f| f.value()).collect(), rv)
    }

    /// Up to `max` objects of a table (in one namespace, if given) whose keys follow `after`,
    /// in key order and still frozen (a page decodes only what it reads); how many more
    /// follow them; and the current rv. A page takes only what it may read: taking every
    /// following object made listing a whole table in pages quadratic in its size.
    pub fn list_frozen(
        &self,
        table: &TableKey,
        namespace: Option<&str>,
        after: Option<&ObjKey>,
        max: usize,
    ) -> (Vec<(ObjKey, Arc<Frozen>)>, usize, u64) {
        use std::ops::Bound;
        let inner = self.lock();
        let Some(t) = inner.tables.get(table) else { return (Vec::new(), 0, inner.rv) };
        let ns_start = namespace.map(|ns| (ns.to_string(), String::new()));
        let lower = match (after, &ns_start) {
            (Some(a), Some(n)) if a < n => Bound::Included(n),
            (Some(a), _) => Bound::Excluded(a),
            (None, Some(n)) => Bound::Included(n),
            (None, None) => Bound::Unbounded,
        };
        let mut following = t
            .objects
            .range::<ObjKey, _>((lower, Bound::Unbounded))
            .take_while(|((n, _), _)| namespace.is_none_or(|want| n == want));
        let items = following.by_ref().take(max).map(|(k, f)| (k.clone(), f.clone())).collect();
        (items, following.count(), inner.rv)
    }

    /// The bytes the objects of a table rest in (their JSON), and how many there are.
    pub fn resting_bytes(&self, table: &TableKey) -> (usize, usize) {
        let inner = self.lock();
        inner.tables.get(table).map_or((0, 0), |t| {
            (t.objects.values().map(|f| f.resting_bytes()).sum(), t.objects.len())
        })
    }

    /// Reads the current object and decides a write, atomically. With `dry_run`, the decision
    /// is answered but nothing is stored.
    pub fn write<F>(
        &self,
        table: &TableKey,
        key: &ObjKey,
        dry_run: bool,
        f: F,
    ) -> Result<Written, ApiError>
    where
        F: FnOnce(Option<&Arc<Value>>) -> Result<Write, ApiError>,
    {
        let mut evicted = Vec::new();
        let mut guard = self.lock();
        let inner = &mut *guard;
        let next_rv = inner.rv + 1;
        let compacted = inner.compacted;
        let t = inner.tables.entry(table.clone()).or_insert_with(|| Table::new(compacted));
        let current_frozen = t.objects.get(key).cloned();
        let current = current_frozen.as_ref().map(|f| f.value());
        let decision = f(current.as_ref())?;
        if dry_run {
            return match (decision, current) {
                (Write::Put(obj), _) => Ok(Written { object: Arc::new(obj), event: None }),
                (_, Some(c)) => Ok(Written { object: c, event: None }),
                (_, None) => Err(ApiError::internal("dry run of a missing object")),
            };
        }
        let (object, frozen, event) = match decision {
            Write::Keep => match current {
                Some(c) => return Ok(Written { object: c, event: None }),
                None => return Err(ApiError::internal("write kept a missing object")),
            },
            Write::Put(mut obj) => {
                set_rv(&mut obj, next_rv);
                let obj = Arc::new(obj);
                let kind = if current.is_some() { EventType::Modified } else { EventType::Added };
                let at = (table.clone(), key.clone());
                if let Some(c) = &current {
                    unindex(&mut inner.dependents, c, &at);
                }
                index(&mut inner.dependents, &obj, &at);
                let frozen = Frozen::hot(obj.clone());
                t.objects.insert(key.clone(), frozen.clone());
                (obj, frozen, kind)
            }
            Write::Delete => {
                let (Some(_), Some(old)) = (t.objects.remove(key), current.as_ref()) else {
                    return Err(ApiError::internal("deleted a missing object"));
                };
                unindex(&mut inner.dependents, old, &(table.clone(), key.clone()));
                let mut last = (**old).clone();
                set_rv(&mut last, next_rv);
                let last = Arc::new(last);
                let frozen = Frozen::hot(last.clone());
                (last, frozen, EventType::Deleted)
            }
        };
        // The event's watchers read both sides of it: both stay decoded for a while.
        if let (Some(f), Some(v)) = (&current_frozen, &current) {
            f.heat(v.clone());
            t.hot.push_back(f.clone());
        }
        t.hot.push_back(frozen.clone());
        while t.hot.len() > HOT_WRITES {
            evicted.extend(t.hot.pop_front());
        }
        let ev = Arc::new(Event {
            rv: next_rv,
            type_: event,
            object: frozen,
            prev: current_frozen,
            encoded: std::sync::OnceLock::new(),
        });
        t.history.push_back(ev.clone());
        while t.history.len() > self.history_limit {
            if let Some(dropped) = t.history.pop_front() {
                t.compacted = dropped.rv;
            }
        }
        let _ = t.tx.send(ev);
        inner.rv = next_rv;
        drop(guard);
        for f in evicted {
            f.freeze();
        }
        Ok(Written { object, event: Some(event) })
    }

    /// Starts a watch after `from` (replaying what followed it), or at the current state when
    /// `from` is `None` (the caller sends the state as synthetic events).
    pub fn watch(&self, table: &TableKey, from: Option<u64>) -> Result<WatchStart, TooOld> {
        let mut inner = self.lock();
        let rv = inner.rv;
        let compacted = inner.compacted;
        let t = inner.tables.entry(table.clone()).or_insert_with(|| Table::new(compacted));
        let replay = match from {
            None => Vec::new(),
            Some(from) => {
                if from < t.compacted {
                    return Err(TooOld(from, t.compacted + 1));
                }
                t.history.iter().filter(|e| e.rv > from).cloned().collect()
            }
        };
        Ok(WatchStart { replay, rx: t.tx.subscribe(), rv })
    }

    /// A consistent snapshot of a table plus a subscription to what follows it.
    pub fn snapshot_and_watch(
        &self,
        table: &TableKey,
        namespace: Option<&str>,
    ) -> (Vec<Arc<Value>>, WatchStart) {
        let (frozen, start) = {
            let mut inner = self.lock();
            let rv = inner.rv;
            let compacted = inner.compacted;
            let t = inner.tables.entry(table.clone()).or_insert_with(|| Table::new(compacted));
            let frozen: Vec<Arc<Frozen>> = t
                .objects
                .iter()
                .filter(|((ns, _), _)| namespace.is_none_or(|want| ns == want))
                .map(|(_, v)| v.clone())
                .collect();
            (frozen, WatchStart { replay: Vec::new(), rx: t.tx.subscribe(), rv })
        };
        (frozen.iter().map(|f| f.value()).collect(), start)
    }

    /// Forgets the watch history of every table, so that resuming from an older
    /// resourceVersion answers 410 Gone.
    pub fn compact(&self) {
        let mut inner = self.lock();
        let rv = inner.rv;
        inner.compacted = rv;
        for t in inner.tables.values_mut() {
            t.history.clear();
            t.compacted = rv;
        }
    }

    /// The keys of all objects of a table in a namespace.
    pub fn keys(&self, table: &TableKey, namespace: Option<&str>) -> Vec<ObjKey> {
        let inner = self.lock();
        inner
            .tables
            .get(table)
            .map(|t| {
                t.objects
                    .keys()
                    .filter(|(ns, _)| namespace.is_none_or(|want| ns == want))
                    .cloned()
                    .collect()
            })
            .unwrap_or_default()
    }

    /// The objects whose `ownerReferences` name the owner `uid`.
    pub fn dependents(&self, uid: &str) -> Vec<(TableKey, ObjKey)> {
        self.lock().dependents.get(uid).map(|s| s.iter().cloned().collect()).unwrap_or_default()
    }

    /// The tables that exist.
    pub fn tables(&self) -> Vec<TableKey> {
        self.lock().tables.keys().cloned().collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn pods() -> TableKey {
        (String::new(), "pods".into())
    }

    fn put(store: &Store, name: &str, v: Value) -> Written {
        let key = ("default".to_string(), name.to_string());
        store.write(&pods(), &key, false, |_| Ok(Write::Put(v))).expect("written")
    }

    fn pod(name: &str, i: usize) -> Value {
        json!({"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": name, "namespace": "default", "labels": {"i": i.to_string()}},
            "spec": {"containers": [{"name": "c", "image": "nginx", "ports": [{"containerPort": 80}]}],
                "priority": -3, "overhead": {"cpu": 0.5}}})
    }

    #[test]
    fn an_object_no_longer_hot_reads_back_equal_from_its_json() {
        let store = Store::new(10);
        let first = put(&store, "p-0", pod("p-0", 0)).object;
        for i in 1..=HOT_WRITES + 5 {
            put(&store, &format!("p-{i}"), pod(&format!("p-{i}"), i));
        }
        let key = ("default".to_string(), "p-0".to_string());
        // Still held here: the same decoding comes back.
        assert!(Arc::ptr_eq(&first, &store.get(&pods(), &key).expect("p-0")));
        let want = (*first).clone();
        drop(first);
        let again = store.get(&pods(), &key).expect("p-0");
        assert_eq!(*again, want);
        assert_eq!(again["metadata"]["resourceVersion"], "2");
        let (items, _) = store.list(&pods(), Some("default"));
        assert_eq!(items.len(), HOT_WRITES + 6);
        assert!(items.iter().any(|o| **o == want));
    }

    #[test]
    fn objects_rest_as_their_json() {
        let store = Store::new(10);
        let v = pod("p", 1);
        let len = serde_json::to_vec(&v).expect("json").len();
        put(&store, "p", v);
        // Lately written, it is kept decoded.
        assert_eq!(store.resting_bytes(&pods()), (0, 1));
        let mut first_other = 0;
        for i in 0..HOT_WRITES {
            let other = put(&store, &format!("q-{i}"), pod("q", i)).object;
            if i == 0 {
                first_other = serde_json::to_vec(&*other).expect("json").len();
            }
        }
        let (bytes, count) = store.resting_bytes(&pods());
        assert_eq!(count, HOT_WRITES + 1);
        // The first object is at rest, with its resourceVersion and nothing else added; the
        // others are still kept decoded.
        assert_eq!(bytes, len + r#","resourceVersion":"2""#.len());
        put(&store, "r", pod("r", 0));
        // One more write puts the next oldest, q-0, at rest.
        assert_eq!(store.resting_bytes(&pods()).0, bytes + first_other);
    }

    #[test]
    fn an_object_deeper_than_serde_jsons_limit_reads_back() {
        let mut deep = json!("leaf");
        for _ in 0..140 {
            deep = json!({ "d": deep });
        }
        let mut v = pod("deep", 0);
        v["spec"]["deep"] = deep.clone();
        let store = Store::new(10);
        drop(put(&store, "deep", v));
        for i in 0..=HOT_WRITES {
            put(&store, &format!("p-{i}"), pod(&format!("p-{i}"), i));
        }
        let got = store.get(&pods(), &("default".into(), "deep".into())).expect("deep");
        assert_eq!(got["spec"]["deep"], deep);
        assert!(store.resting_bytes(&pods()).0 > 0);
    }

    #[test]
    fn a_page_takes_at_most_its_share_and_counts_the_rest() {
        let store = Store::new(10);
        for i in 0..10 {
            put(&store, &format!("p{i}"), pod(&format!("p{i}"), i));
        }
        let (page, more, _) = store.list_frozen(&pods(), Some("default"), None, 3);
        let names: Vec<_> = page.iter().map(|(k, _)| k.1.as_str()).collect();
        assert_eq!((names, more), (vec!["p0", "p1", "p2"], 7));
        let after = page.last().map(|(k, _)| k.clone());
        let (page, more, _) = store.list_frozen(&pods(), None, after.as_ref(), usize::MAX);
        assert_eq!((page.len(), more), (7, 0));
        let (page, more, _) = store.list_frozen(&pods(), Some("other"), None, 3);
        assert_eq!((page.len(), more), (0, 0));
    }

    #[test]
    fn events_carry_the_object_and_what_it_was() {
        let store = Store::new(10);
        put(&store, "p", pod("p", 1));
        let start = store.watch(&pods(), Some(0)).expect("watch");
        put(&store, "p", pod("p", 2));
        let key = ("default".to_string(), "p".to_string());
        store.write(&pods(), &key, false, |_| Ok(Write::Delete)).expect("deleted");
        let replay = store.watch(&pods(), Some(0)).expect("watch").replay;
        let seen: Vec<_> = replay
            .iter()
            .map(|e| {
                (
                    e.type_,
                    e.object()["metadata"]["labels"]["i"].clone(),
                    e.prev().map(|p| p["metadata"]["labels"]["i"].clone()),
                )
            })
            .collect();
        assert_eq!(
            seen,
            vec![
                (EventType::Added, json!("1"), None),
                (EventType::Modified, json!("2"), Some(json!("1"))),
                (EventType::Deleted, json!("2"), Some(json!("2"))),
            ]
        );
        assert_eq!(replay[2].object()["metadata"]["resourceVersion"], "4");
        drop(start);
    }
}
