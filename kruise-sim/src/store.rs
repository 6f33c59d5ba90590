//! The versioned object store and its watch cache.
//!
//! One global, monotonic resourceVersion counter (as etcd's revision) is shared by all
//! resources. Each resource (group, plural) has a table of objects in storage form, a bounded
//! history of events for watches that resume from a resourceVersion, and a broadcast channel
//! to live watchers. Every write happens under one lock, inside a closure that sees the
//! current object, so read-check-write sequences (preconditions, resourceVersion checks) are
//! atomic; events are published under the same lock, so a watcher that subscribes under the
//! lock never misses one.

use crate::error::ApiError;
use serde_json::Value;
use std::collections::{BTreeMap, BTreeSet, HashMap, VecDeque};
use std::sync::{Arc, Mutex, MutexGuard};
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

/// One change, as kept in the watch cache.
#[derive(Clone, Debug)]
pub struct Event {
    /// The resourceVersion of the change.
    pub rv: u64,
    /// What happened.
    pub type_: EventType,
    /// The object after the change (for a deletion: the last state, with the deletion's rv).
    pub object: Arc<Value>,
    /// The object before the change, if it existed.
    pub prev: Option<Arc<Value>>,
    /// `object` as JSON, encoded by the first watcher that sends it as stored, for the others
    /// (kube-apiserver's watch cache likewise serializes an event once per encoding).
    pub(crate) encoded: std::sync::OnceLock<EncodedObject>,
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
    objects: BTreeMap<ObjKey, Arc<Value>>,
    history: VecDeque<Arc<Event>>,
    /// Events with rv <= this may be missing from `history`.
    compacted: u64,
    tx: broadcast::Sender<Arc<Event>>,
}

impl Table {
    fn new(compacted: u64) -> Self {
        let (tx, _) = broadcast::channel(4096);
        Table { objects: BTreeMap::new(), history: VecDeque::new(), compacted, tx }
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
        self.lock().tables.get(table).and_then(|t| t.objects.get(key).cloned())
    }

    /// All objects of a table (in one namespace, if given), in key order, and the current rv.
    pub fn list(&self, table: &TableKey, namespace: Option<&str>) -> (Vec<Arc<Value>>, u64) {
        let inner = self.lock();
        let items = match inner.tables.get(table) {
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
        (items, inner.rv)
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
        let mut guard = self.lock();
        let inner = &mut *guard;
        let next_rv = inner.rv + 1;
        let compacted = inner.compacted;
        let t = inner.tables.entry(table.clone()).or_insert_with(|| Table::new(compacted));
        let current = t.objects.get(key).cloned();
        let decision = f(current.as_ref())?;
        if dry_run {
            return match (decision, current) {
                (Write::Put(obj), _) => Ok(Written { object: Arc::new(obj), event: None }),
                (_, Some(c)) => Ok(Written { object: c, event: None }),
                (_, None) => Err(ApiError::internal("dry run of a missing object")),
            };
        }
        let (object, event) = match decision {
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
                t.objects.insert(key.clone(), obj.clone());
                (obj, kind)
            }
            Write::Delete => {
                let Some(old) = t.objects.remove(key) else {
                    return Err(ApiError::internal("deleted a missing object"));
                };
                unindex(&mut inner.dependents, &old, &(table.clone(), key.clone()));
                let mut last = (*old).clone();
                set_rv(&mut last, next_rv);
                (Arc::new(last), EventType::Deleted)
            }
        };
        let ev = Arc::new(Event {
            rv: next_rv,
            type_: event,
            object: object.clone(),
            prev: current,
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
        let mut inner = self.lock();
        let rv = inner.rv;
        let compacted = inner.compacted;
        let t = inner.tables.entry(table.clone()).or_insert_with(|| Table::new(compacted));
        let items = t
            .objects
            .iter()
            .filter(|((ns, _), _)| namespace.is_none_or(|want| ns == want))
            .map(|(_, v)| v.clone())
            .collect();
        (items, WatchStart { replay: Vec::new(), rx: t.tx.subscribe(), rv })
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
