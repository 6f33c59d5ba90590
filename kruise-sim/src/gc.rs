//! Garbage collection by `ownerReferences`, as the real garbage collector does it, but run
//! synchronously after each write (so a dependent is gone by the time its owner's deletion
//! has been answered, and watchers see the owner's DELETED before the dependents').
//!
//! - An object whose owners are all absent (not found, or a different uid) is deleted; one
//!   with a live owner left loses only its references to absent owners.
//! - `propagationPolicy: Foreground`: the owner keeps a `foregroundDeletion` finalizer until
//!   every dependent with `blockOwnerDeletion: true` is gone; its dependents are deleted
//!   (in the foreground themselves when they block it).
//! - `propagationPolicy: Orphan`: the owner keeps an `orphan` finalizer until the
//!   references to it are removed from its dependents.
//! - Owners of unknown kinds are treated as present, as the real collector waits for them.
//!
//! ## Admission
//!
//! The real collector and namespace controller delete through the API, so their deletes pass
//! admission webhooks. Webhooks are HTTP calls, which cannot be made from the synchronous
//! write path (nor under the store's lock): while any webhook configuration exists, those
//! deletes are queued in [`Deferred`] instead, and run by [`Cluster::run_deferred`], which
//! every admitted request calls before answering (so an owner's dependents are still gone
//! when its deletion is answered) and the server calls every 200 ms. Each queued delete is
//! decided again when it runs (the object may have gained an owner meanwhile), admitted as a
//! `DELETE` by the collector's user (`system:serviceaccount:kube-system:generic-garbage-
//! collector`, `propagationPolicy` Background or Foreground, a `uid` precondition) or the
//! namespace controller's (`...:namespace-controller`, Background, and an empty `name`, as
//! its deletecollection sends it), then deleted.
//!
//! A denied (or failed) delete leaves the object and is queued again with a backoff of 1 s,
//! doubling up to 30 s, retried indefinitely as the real collector does; any later write
//! that makes the collector look at the object again (a change to it, its owner's deletion)
//! retries it at once. A queued object is held once, and one run of the queue does at most
//! [`DRAIN_BUDGET`] deletes, so a webhook denying (or writing) forever cannot wedge the
//! server. Updates the collector makes (removing references or its finalizers) are not
//! admitted: they stay synchronous.
//!
//! The namespace controller deletes each resource of a namespace with one deletecollection,
//! which goes in name order and stops at the first item admission denies. So here too, the
//! objects of one resource in a namespace are deleted in name order, and while one is denied
//! the ones after it wait; they are tried again as soon as it goes.

use crate::admission::{Attributes, GC_USER, NAMESPACE_USER, Operation};
use crate::cluster::{Cluster, DeleteOptions};
use crate::resources::ResourceDef;
use crate::store::{EventType, ObjKey, TableKey, Write};
use crate::util::{meta_mut, meta_str};
use serde_json::Value;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// At most this many queued deletes are run by one [`Cluster::run_deferred`].
pub const DRAIN_BUDGET: usize = 4096;
const FIRST_BACKOFF: Duration = Duration::from_secs(1);
const MAX_BACKOFF: Duration = Duration::from_secs(30);

/// Who deletes a queued object.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Actor {
    GarbageCollector,
    NamespaceController,
}

/// A delete waiting for admission.
#[derive(Debug)]
struct Pending {
    table: TableKey,
    key: ObjKey,
    uid: String,
    actor: Actor,
    /// Denials and failures so far.
    attempts: u32,
    not_before: Instant,
}

/// Deletes of the collector and the namespace controller waiting for admission.
#[derive(Debug, Default)]
pub struct Deferred {
    queue: Mutex<Vec<Pending>>,
}

impl Deferred {
    fn lock(&self) -> std::sync::MutexGuard<'_, Vec<Pending>> {
        self.queue.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Queues a delete, or makes a queued one of the same object due now.
    fn push(&self, table: &TableKey, key: &ObjKey, uid: &str, actor: Actor) {
        let mut q = self.lock();
        let now = Instant::now();
        if let Some(p) = q.iter_mut().find(|p| p.table == *table && p.key == *key && p.uid == uid) {
            p.not_before = now;
            return;
        }
        q.push(Pending {
            table: table.clone(),
            key: key.clone(),
            uid: uid.to_string(),
            actor,
            attempts: 0,
            not_before: now,
        });
    }

    /// Queues `p` again after a denial or failure, with its backoff.
    fn retry(&self, mut p: Pending) {
        p.attempts += 1;
        let exp = p.attempts.saturating_sub(1).min(10);
        let backoff = FIRST_BACKOFF.saturating_mul(1 << exp).min(MAX_BACKOFF);
        p.not_before = Instant::now() + backoff;
        let mut q = self.lock();
        // Queued again meanwhile (the object changed): that one is due sooner.
        if let Some(o) =
            q.iter_mut().find(|o| o.table == p.table && o.key == p.key && o.uid == p.uid)
        {
            o.attempts = o.attempts.max(p.attempts);
            return;
        }
        q.push(p);
    }

    /// Whether a namespace-controller delete of an object of `table` in the namespace of
    /// `key`, named before it, is still queued (not yet run, or denied).
    fn earlier_queued(&self, table: &TableKey, key: &ObjKey) -> bool {
        self.lock().iter().any(|o| {
            o.actor == Actor::NamespaceController
                && o.table == *table
                && o.key.0 == key.0
                && o.key.1 < key.1
        })
    }

    /// Makes the queued namespace-controller deletes after `key` (same resource and
    /// namespace) due now.
    fn wake_later(&self, table: &TableKey, key: &ObjKey) {
        let now = Instant::now();
        for o in self.lock().iter_mut().filter(|o| {
            o.actor == Actor::NamespaceController
                && o.table == *table
                && o.key.0 == key.0
                && o.key.1 > key.1
        }) {
            o.not_before = now;
        }
    }

    fn take_due(&self) -> Option<Pending> {
        let mut q = self.lock();
        let now = Instant::now();
        let i = q.iter().position(|p| p.not_before <= now)?;
        Some(q.remove(i))
    }

    /// Whether nothing is queued.
    pub fn is_empty(&self) -> bool {
        self.lock().is_empty()
    }
}

/// What the collector does with a dependent.
enum Verdict {
    Keep,
    /// Remove the references to these absent owners.
    RemoveRefs(Vec<String>),
    /// Delete it with this propagation policy.
    Delete(&'static str),
}

/// The finalizer of foreground deletion.
pub const FOREGROUND: &str = "foregroundDeletion";
/// The finalizer of orphaning deletion.
pub const ORPHAN: &str = "orphan";

enum OwnerState {
    /// Present and not waiting for its dependents.
    Solid,
    /// Absent (not found, or another object of that name).
    Dangling,
    /// Present, being deleted in the foreground.
    Waiting,
}

fn has_finalizer(obj: &Value, f: &str) -> bool {
    obj.pointer("/metadata/finalizers")
        .and_then(Value::as_array)
        .is_some_and(|a| a.iter().any(|x| x == f))
}

fn deleting(obj: &Value) -> bool {
    obj.pointer("/metadata/deletionTimestamp").is_some()
}

fn refs(obj: &Value) -> Vec<Value> {
    obj.pointer("/metadata/ownerReferences").and_then(Value::as_array).cloned().unwrap_or_default()
}

impl Cluster {
    fn def_of_table(&self, t: &TableKey) -> Option<Arc<ResourceDef>> {
        self.all_defs()
            .into_iter()
            .find(|d| d.storage_group == t.0 && d.plural == t.1 && d.is_storage())
    }

    /// The owner an ownerReference names, from a dependent in `ns`: `None` if its kind is
    /// unknown; its table, key, and the object if present.
    #[allow(clippy::type_complexity)]
    fn owner_of(&self, r: &Value, ns: &str) -> Option<(TableKey, ObjKey, Option<Arc<Value>>)> {
        let av = r.get("apiVersion").and_then(Value::as_str).unwrap_or_default();
        let kind = r.get("kind").and_then(Value::as_str).unwrap_or_default();
        let name = r.get("name").and_then(Value::as_str).unwrap_or_default();
        let uid = r.get("uid").and_then(Value::as_str).unwrap_or_default();
        let group = av.rsplit_once('/').map(|(g, _)| g).unwrap_or("");
        let def = self.all_defs().into_iter().find(|d| d.group == group && d.kind == kind)?;
        let key = (if def.namespaced { ns.to_string() } else { String::new() }, name.to_string());
        let found = self.store.get(&def.key(), &key).filter(|o| meta_str(o, "uid") == Some(uid));
        Some((def.key(), key, found))
    }

    fn state(&self, r: &Value, ns: &str) -> OwnerState {
        match self.owner_of(r, ns) {
            None => OwnerState::Solid,
            Some((_, _, None)) => OwnerState::Dangling,
            Some((_, _, Some(o))) if deleting(&o) && has_finalizer(&o, FOREGROUND) => {
                OwnerState::Waiting
            }
            Some(_) => OwnerState::Solid,
        }
    }

    /// Changes an object's metadata by `f` (an update through the usual rules); ignores
    /// failures, as the collector retries on its next pass.
    fn gc_update(&self, table: &TableKey, key: &ObjKey, f: impl FnOnce(&mut Value)) {
        let Some(def) = self.def_of_table(table) else { return };
        let mut warnings = Vec::new();
        let written = self.store.write(table, key, false, |cur| {
            let Some(old) = cur else { return Ok(Write::Keep) };
            let mut new = (**old).clone();
            f(&mut new);
            self.update_rules(
                &def,
                old,
                new,
                crate::cluster::Sub::Main,
                &Default::default(),
                &mut warnings,
            )
        });
        if let Ok(w) = written {
            self.after_write(&def, &w.event, &w.object);
        }
    }

    fn remove_finalizer(&self, table: &TableKey, key: &ObjKey, fin: &str) {
        self.gc_update(table, key, |o| {
            if let Some(a) = o.pointer_mut("/metadata/finalizers").and_then(Value::as_array_mut) {
                a.retain(|x| x != fin);
            }
        });
    }

    fn remove_refs(&self, table: &TableKey, key: &ObjKey, uids: &[String]) {
        self.gc_update(table, key, |o| {
            if let Some(m) = meta_mut(o)
                && let Some(a) = m.get_mut("ownerReferences").and_then(Value::as_array_mut)
            {
                a.retain(|r| !uids.iter().any(|u| r.get("uid").and_then(Value::as_str) == Some(u)));
                if a.is_empty() {
                    m.remove("ownerReferences");
                }
            }
        });
    }

    /// What to do with one dependent.
    fn gc_verdict(&self, obj: &Value) -> Verdict {
        if deleting(obj) {
            return Verdict::Keep;
        }
        let refs = refs(obj);
        if refs.is_empty() {
            return Verdict::Keep;
        }
        let ns = meta_str(obj, "namespace").unwrap_or_default();
        let (mut solid, mut gone, mut waiting_blocked) = (false, Vec::new(), false);
        for r in &refs {
            let uid = r.get("uid").and_then(Value::as_str).unwrap_or_default().to_string();
            match self.state(r, ns) {
                OwnerState::Solid => solid = true,
                OwnerState::Dangling => gone.push(uid),
                OwnerState::Waiting => {
                    waiting_blocked |= r.get("blockOwnerDeletion") == Some(&Value::Bool(true));
                    gone.push(uid);
                }
            }
        }
        if solid {
            return if gone.is_empty() { Verdict::Keep } else { Verdict::RemoveRefs(gone) };
        }
        Verdict::Delete(if waiting_blocked { "Foreground" } else { "Background" })
    }

    /// Decides what to do with one dependent (`attemptToDeleteItem`).
    fn gc_attempt(&self, table: &TableKey, key: &ObjKey) {
        let Some(obj) = self.store.get(table, key) else { return };
        match self.gc_verdict(&obj) {
            Verdict::Keep => {}
            Verdict::RemoveRefs(gone) => self.remove_refs(table, key, &gone),
            Verdict::Delete(_) if self.has_webhooks() => {
                let uid = meta_str(&obj, "uid").unwrap_or_default();
                self.deferred.push(table, key, uid, Actor::GarbageCollector);
            }
            Verdict::Delete(propagation) => {
                let Some(def) = self.def_of_table(table) else { return };
                let opts =
                    DeleteOptions { propagation: Some(propagation.into()), ..Default::default() };
                let _ = self.delete(&def, &key.0, &key.1, &opts);
            }
        }
    }

    /// Queues the namespace controller's delete of an object of a terminating namespace.
    pub(crate) fn defer_namespace_delete(&self, table: &TableKey, key: &ObjKey) {
        let Some(obj) = self.store.get(table, key) else { return };
        if deleting(&obj) {
            return;
        }
        let uid = meta_str(&obj, "uid").unwrap_or_default();
        self.deferred.push(table, key, uid, Actor::NamespaceController);
    }

    /// Runs the queued deletes that are due (at most [`DRAIN_BUDGET`]), each through
    /// admission; see the module documentation.
    pub async fn run_deferred(&self) {
        for _ in 0..DRAIN_BUDGET {
            let Some(p) = self.deferred.take_due() else { return };
            self.run_one(p).await;
        }
    }

    async fn run_one(&self, p: Pending) {
        let Some(def) = self.def_of_table(&p.table) else { return };
        let Some(obj) = self.store.get(&p.table, &p.key) else { return };
        if meta_str(&obj, "uid") != Some(p.uid.as_str()) || deleting(&obj) {
            return;
        }
        let (propagation, user, name) = match p.actor {
            Actor::GarbageCollector => match self.gc_verdict(&obj) {
                Verdict::Keep => return,
                Verdict::RemoveRefs(gone) => {
                    self.remove_refs(&p.table, &p.key, &gone);
                    return;
                }
                Verdict::Delete(prop) => (prop, GC_USER, p.key.1.as_str()),
            },
            Actor::NamespaceController => {
                let nsobj = self
                    .store
                    .get(&(String::new(), "namespaces".into()), &(String::new(), p.key.0.clone()));
                if !nsobj.is_some_and(|n| deleting(&n)) {
                    return;
                }
                // The deletecollection goes in name order and stops at a denied item.
                if self.deferred.earlier_queued(&p.table, &p.key) {
                    self.deferred.retry(p);
                    return;
                }
                ("Background", NAMESPACE_USER, "")
            }
        };
        let opts = DeleteOptions {
            uid: Some(p.uid.clone()),
            propagation: Some(propagation.into()),
            ..Default::default()
        };
        let admitted = async {
            let old = self.served(&def, (*obj).clone()).await?;
            let a = Attributes {
                def: &def,
                sub: "",
                op: Operation::Delete,
                namespace: &p.key.0,
                name: name.to_string(),
                dry_run: false,
                options: crate::admitted::delete_options(&opts),
                user,
            };
            self.mutate(&a, None, Some(&old)).await?;
            self.validate_admission(&a, None, Some(&old)).await
        };
        if admitted.await.is_err() {
            self.deferred.retry(p);
            return;
        }
        match self.delete(&def, &p.key.0, &p.key.1, &opts) {
            // Gone, or replaced by another object of that name (the uid precondition).
            Ok(_) => {
                if p.actor == Actor::NamespaceController {
                    self.deferred.wake_later(&p.table, &p.key);
                }
            }
            Err(e) if e.code == 404 || e.code == 409 => {}
            Err(_) => self.deferred.retry(p),
        }
    }

    /// An owner in foreground deletion: deletes its dependents, and lets it go once none
    /// blocks it (`processDeletingDependentsItem`).
    fn gc_foreground(&self, table: &TableKey, key: &ObjKey, uid: &str) {
        let mut blocking = false;
        for (t, k) in self.store.dependents(uid) {
            let Some(dep) = self.store.get(&t, &k) else { continue };
            let blocks = refs(&dep).iter().any(|r| {
                r.get("uid").and_then(Value::as_str) == Some(uid)
                    && r.get("blockOwnerDeletion") == Some(&Value::Bool(true))
            });
            if !deleting(&dep) {
                self.gc_attempt(&t, &k);
            }
            if blocks && self.store.get(&t, &k).is_some() {
                blocking = true;
            }
        }
        if !blocking {
            self.remove_finalizer(table, key, FOREGROUND);
        }
    }

    /// An owner deleted with `Orphan`: its dependents forget it, then it goes.
    fn gc_orphan(&self, table: &TableKey, key: &ObjKey, uid: &str) {
        for (t, k) in self.store.dependents(uid) {
            self.remove_refs(&t, &k, &[uid.to_string()]);
        }
        self.remove_finalizer(table, key, ORPHAN);
    }

    /// Runs the collector for what a write changed.
    pub(crate) fn collect_garbage(&self, def: &ResourceDef, event: EventType, obj: &Value) {
        let uid = meta_str(obj, "uid").unwrap_or_default().to_string();
        let ns = meta_str(obj, "namespace").unwrap_or_default().to_string();
        let name = meta_str(obj, "name").unwrap_or_default().to_string();
        let table = def.key();
        let key = (if def.namespaced { ns.clone() } else { String::new() }, name);
        match event {
            EventType::Deleted => {
                for (t, k) in self.store.dependents(&uid) {
                    self.gc_attempt(&t, &k);
                }
                // Owners waiting in the foreground for this object.
                for r in refs(obj) {
                    let Some((otable, okey, Some(owner))) = self.owner_of(&r, &ns) else {
                        continue;
                    };
                    if deleting(&owner) && has_finalizer(&owner, FOREGROUND) {
                        let ouid = meta_str(&owner, "uid").unwrap_or_default().to_string();
                        self.gc_foreground(&otable, &okey, &ouid);
                    }
                }
            }
            _ if deleting(obj) => {
                if has_finalizer(obj, ORPHAN) {
                    self.gc_orphan(&table, &key, &uid);
                } else if has_finalizer(obj, FOREGROUND) {
                    self.gc_foreground(&table, &key, &uid);
                }
            }
            _ => {
                if !refs(obj).is_empty() {
                    self.gc_attempt(&table, &key);
                }
            }
        }
    }
}
