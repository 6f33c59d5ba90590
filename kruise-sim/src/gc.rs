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

use crate::cluster::{Cluster, DeleteOptions};
use crate::resources::ResourceDef;
use crate::store::{EventType, ObjKey, TableKey, Write};
use crate::util::{meta_mut, meta_str};
use serde_json::Value;
use std::sync::Arc;

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

    /// Decides what to do with one dependent (`attemptToDeleteItem`).
    fn gc_attempt(&self, table: &TableKey, key: &ObjKey) {
        let Some(obj) = self.store.get(table, key) else { return };
        if deleting(&obj) {
            return;
        }
        let refs = refs(&obj);
        if refs.is_empty() {
            return;
        }
        let ns = meta_str(&obj, "namespace").unwrap_or_default();
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
            if !gone.is_empty() {
                self.remove_refs(table, key, &gone);
            }
            return;
        }
        let Some(def) = self.def_of_table(table) else { return };
        let propagation = waiting_blocked.then(|| "Foreground".to_string());
        let opts = DeleteOptions { propagation, ..Default::default() };
        let _ = self.delete(&def, &key.0, &key.1, &opts);
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
