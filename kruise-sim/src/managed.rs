//! Field ownership (`metadata.managedFields`) and server-side apply.
//!
//! Every write records which manager (`fieldManager`) owns which fields, in the FieldsV1
//! format: `f:NAME` for object fields, `k:{"KEY":VALUE}` for the items of lists keyed by a
//! merge key, `v:VALUE` for the members of sets, and `.` for an item owned as a whole.
//! An `Update` (create, update, non-apply patch) makes its manager own the fields it changed,
//! taking them from other managers. An `Apply` makes its manager own exactly the fields of
//! its configuration: a field another manager owns with a different value is a conflict
//! (409, the real message) unless `force=true`, which takes it over; fields the applier
//! owned before and no longer applies are removed from the object when no one else owns them.
//!
//! Simplified against the real server (structured-merge-diff):
//! - Lists are keyed by field name, not by the OpenAPI schema: `containers`,
//!   `initContainers`, `ephemeralContainers`, `volumes`, `env`, `imagePullSecrets`,
//!   `readinessGates` (by name or conditionType), `volumeMounts` (mountPath), `ports`
//!   (containerPort, else port; the real keys also include `protocol`), `conditions` (type),
//!   `ownerReferences` (uid); `finalizers` is a set; every other list is atomic.
//! - The applied configuration is merged into the live object by that same structure, not
//!   through the type's schema; `null` in a configuration removes the field.
//! - Managers are identified by manager, operation, subresource and (for Update) apiVersion,
//!   as the real server does, but entries are not converted between versions.
//! - Field sets are not validated against the schema, and no migration of
//!   client-side-apply ownership (`last-applied-configuration`) is done.

use crate::error::ApiError;
use crate::resources::ResourceDef;
use crate::util::now_rfc3339;
use serde_json::{Map, Value, json};
use std::collections::BTreeSet;

/// A path in an object: FieldsV1 keys (`f:spec`, `k:{"name":"c"}`, `v:"x"`).
type Path = Vec<String>;
/// The fields a manager owns.
type Set = BTreeSet<Path>;

/// The merge key of a list by its field name, if it is keyed.
fn list_key(field: &str, items: &[Value]) -> Option<&'static str> {
    let key = match field {
        "containers"
        | "initContainers"
        | "ephemeralContainers"
        | "volumes"
        | "env"
        | "imagePullSecrets"
        | "resourceClaims" => "name",
        "volumeMounts" => "mountPath",
        "conditions" => "type",
        "ownerReferences" => "uid",
        "readinessGates" => "conditionType",
        "ports" if items.iter().all(|i| i.get("containerPort").is_some()) => "containerPort",
        "ports" => "port",
        _ => return None,
    };
    items.iter().all(|i| i.get(key).is_some_and(|k| !k.is_null())).then_some(key)
}

fn is_set(field: &str, items: &[Value]) -> bool {
    field == "finalizers" && items.iter().all(|i| !i.is_object() && !i.is_array())
}

fn item_key(key: &str, item: &Value) -> String {
    let v = item.get(key).cloned().unwrap_or(Value::Null);
    format!("k:{}", json!({ key: v }))
}

/// The fields an object sets, without the ones the server manages.
fn field_set(obj: &Value, reset_status: bool) -> Set {
    let mut out = Set::new();
    let Some(m) = obj.as_object() else { return out };
    for (k, v) in m {
        if k == "apiVersion" || k == "kind" || (reset_status && k == "status") {
            continue;
        }
        if k == "metadata" {
            let Some(meta) = v.as_object() else { continue };
            for (mk, mv) in meta {
                const SYSTEM: &[&str] = &[
                    "name",
                    "namespace",
                    "creationTimestamp",
                    "selfLink",
                    "uid",
                    "generation",
                    "managedFields",
                    "resourceVersion",
                    "deletionTimestamp",
                    "deletionGracePeriodSeconds",
                ];
                if !SYSTEM.contains(&mk.as_str()) {
                    walk(mv, vec!["f:metadata".into(), format!("f:{mk}")], mk, &mut out);
                }
            }
            continue;
        }
        walk(v, vec![format!("f:{k}")], k, &mut out);
    }
    out
}

fn walk(v: &Value, path: Path, field: &str, out: &mut Set) {
    match v {
        Value::Object(m) if !m.is_empty() => {
            for (k, c) in m {
                let mut p = path.clone();
                p.push(format!("f:{k}"));
                walk(c, p, k, out);
            }
        }
        Value::Array(items) if !items.is_empty() => {
            if let Some(key) = list_key(field, items) {
                for item in items {
                    let mut p = path.clone();
                    p.push(item_key(key, item));
                    out.insert(p.clone());
                    if let Some(m) = item.as_object() {
                        for (k, c) in m {
                            let mut pc = p.clone();
                            pc.push(format!("f:{k}"));
                            walk(c, pc, k, out);
                        }
                    }
                }
            } else if is_set(field, items) {
                for item in items {
                    let mut p = path.clone();
                    p.push(format!("v:{item}"));
                    out.insert(p);
                }
            } else {
                out.insert(path);
            }
        }
        Value::Null => {}
        _ => {
            out.insert(path);
        }
    }
}

/// The value at a path (an item or set member for `k:`/`v:` elements).
fn get<'a>(obj: &'a Value, path: &[String]) -> Option<&'a Value> {
    let mut cur = obj;
    for el in path {
        cur = step(cur, el)?;
    }
    Some(cur)
}

fn step<'a>(cur: &'a Value, el: &str) -> Option<&'a Value> {
    if let Some(f) = el.strip_prefix("f:") {
        return cur.get(f);
    }
    let items = cur.as_array()?;
    if let Some(k) = el.strip_prefix("k:") {
        let want: Map<String, Value> = serde_json::from_str(k).ok()?;
        return items.iter().find(|i| want.iter().all(|(wk, wv)| i.get(wk) == Some(wv)));
    }
    let want: Value = serde_json::from_str(el.strip_prefix("v:")?).ok()?;
    items.iter().find(|i| **i == want)
}

/// Removes the field at a path; answers whether it existed.
fn remove(obj: &mut Value, path: &[String]) -> bool {
    let Some((last, parent)) = path.split_last() else { return false };
    let mut cur = obj;
    for el in parent {
        let next = if let Some(f) = el.strip_prefix("f:") {
            cur.get_mut(f)
        } else {
            let Some(items) = cur.as_array_mut() else { return false };
            let idx = items.iter().position(|i| step_matches(i, el));
            idx.and_then(move |i| items.get_mut(i))
        };
        let Some(n) = next else { return false };
        cur = n;
    }
    if let Some(f) = last.strip_prefix("f:") {
        return cur.as_object_mut().is_some_and(|m| m.remove(f).is_some());
    }
    let Some(items) = cur.as_array_mut() else { return false };
    let before = items.len();
    items.retain(|i| !step_matches(i, last));
    items.len() != before
}

fn step_matches(item: &Value, el: &str) -> bool {
    let one = std::slice::from_ref(item);
    let arr = Value::Array(one.to_vec());
    step(&arr, el).is_some()
}

/// The path as the real server prints it: `.spec.containers[name="c"].image`.
fn show(path: &[String]) -> String {
    let mut s = String::new();
    for el in path {
        if let Some(f) = el.strip_prefix("f:") {
            s.push('.');
            s.push_str(f);
        } else if let Some(k) = el.strip_prefix("k:") {
            let m: Map<String, Value> = serde_json::from_str(k).unwrap_or_default();
            let parts: Vec<String> = m.iter().map(|(k, v)| format!("{k}={v}")).collect();
            s.push_str(&format!("[{}]", parts.join(",")));
        } else if let Some(v) = el.strip_prefix("v:") {
            s.push_str(&format!("[={v}]"));
        }
    }
    s
}

/// The FieldsV1 form of a set.
fn encode(set: &Set) -> Value {
    let mut root = Map::new();
    for p in set {
        let mut cur = &mut root;
        for el in p {
            let next = cur.entry(el.clone()).or_insert_with(|| json!({}));
            let Some(m) = next.as_object_mut() else { break };
            cur = m;
        }
    }
    // A member with children gets a "." marker.
    fn mark(m: &mut Map<String, Value>, prefix: &mut Path, set: &Set) {
        for (k, v) in m.iter_mut() {
            prefix.push(k.clone());
            if let Some(c) = v.as_object_mut()
                && !c.is_empty()
            {
                mark(c, prefix, set);
                if set.contains(prefix) {
                    c.insert(".".into(), json!({}));
                }
            }
            prefix.pop();
        }
    }
    mark(&mut root, &mut Vec::new(), set);
    Value::Object(root)
}

fn decode(v: &Value) -> Set {
    fn go(v: &Value, prefix: &mut Path, out: &mut Set) {
        let Some(m) = v.as_object() else { return };
        for (k, c) in m {
            if k == "." {
                out.insert(prefix.clone());
                continue;
            }
            prefix.push(k.clone());
            if c.as_object().is_none_or(Map::is_empty) {
                out.insert(prefix.clone());
            } else {
                go(c, prefix, out);
            }
            prefix.pop();
        }
    }
    let mut out = Set::new();
    go(v, &mut Vec::new(), &mut out);
    out
}

/// One `managedFields` entry.
struct Entry {
    manager: String,
    operation: String,
    api_version: String,
    subresource: String,
    time: String,
    set: Set,
}

impl Entry {
    fn same_manager(&self, other: &Entry) -> bool {
        self.manager == other.manager
            && self.operation == other.operation
            && self.subresource == other.subresource
            && (self.operation == "Apply" || self.api_version == other.api_version)
    }

    /// As conflicts name it.
    fn shown(&self) -> String {
        let mut s = format!("{:?}", self.manager);
        if !self.subresource.is_empty() {
            s.push_str(&format!(" with subresource {:?}", self.subresource));
        }
        if self.operation == "Update" {
            s.push_str(&format!(" using {}", self.api_version));
        }
        s
    }

    fn to_json(&self) -> Value {
        let mut e = json!({
            "manager": self.manager,
            "operation": self.operation,
            "apiVersion": self.api_version,
            "time": self.time,
            "fieldsType": "FieldsV1",
            "fieldsV1": encode(&self.set),
        });
        if !self.subresource.is_empty() {
            e["subresource"] = json!(self.subresource);
        }
        e
    }
}

fn entries(obj: &Value) -> Vec<Entry> {
    let s = |e: &Value, k: &str| e.get(k).and_then(Value::as_str).unwrap_or("").to_string();
    obj.pointer("/metadata/managedFields")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .map(|e| Entry {
            manager: s(e, "manager"),
            operation: s(e, "operation"),
            api_version: s(e, "apiVersion"),
            subresource: s(e, "subresource"),
            time: s(e, "time"),
            set: e.get("fieldsV1").map(decode).unwrap_or_default(),
        })
        .collect()
}

fn store_entries(obj: &mut Value, list: Vec<Entry>) {
    let list: Vec<Value> = list.iter().filter(|e| !e.set.is_empty()).map(Entry::to_json).collect();
    if let Some(meta) = obj.get_mut("metadata").and_then(Value::as_object_mut) {
        if list.is_empty() {
            meta.remove("managedFields");
        } else {
            meta.insert("managedFields".into(), Value::Array(list));
        }
    }
}

/// The manager of a request without `fieldManager`.
fn manager_of(manager: Option<&str>) -> String {
    manager.filter(|m| !m.is_empty()).unwrap_or("unknown").to_string()
}

/// Records an `Update` by `manager`: it owns what changed from `old` (nothing, for a
/// create) to `new`; other managers lose those fields and the removed ones.
pub(crate) fn track_update(
    def: &ResourceDef,
    old: Option<&Value>,
    new: &mut Value,
    manager: Option<&str>,
    subresource: &str,
) {
    let reset_status = def.status && subresource.is_empty();
    let new_set = field_set(new, reset_status);
    let mut list = old.map(entries).unwrap_or_default();
    let old_set = old.map(|o| field_set(o, reset_status)).unwrap_or_default();
    let changed: Set = new_set
        .iter()
        .filter(|p| match (old.and_then(|o| get(o, p)), get(new, p)) {
            (Some(_), Some(_)) if is_member_path(p) => false,
            (a, b) => a != b,
        })
        .cloned()
        .collect();
    let gone: Set = old_set.difference(&new_set).cloned().collect();
    if changed.is_empty() && gone.is_empty() && old.is_some() {
        if let Some(o) = old {
            let kept = o.pointer("/metadata/managedFields").cloned();
            if let Some(meta) = new.get_mut("metadata").and_then(Value::as_object_mut) {
                match kept {
                    Some(k) => meta.insert("managedFields".into(), k),
                    None => meta.remove("managedFields"),
                };
            }
        }
        return;
    }
    for e in &mut list {
        e.set.retain(|p| !changed.contains(p) && !gone.contains(p));
    }
    let me = Entry {
        manager: manager_of(manager),
        operation: "Update".into(),
        api_version: def.api_version(),
        subresource: subresource.to_string(),
        time: now_rfc3339(),
        set: changed,
    };
    match list.iter_mut().find(|e| e.same_manager(&me)) {
        Some(e) => {
            e.set.extend(me.set);
            e.time = me.time;
        }
        None => list.push(me),
    }
    store_entries(new, list);
}

fn is_member_path(p: &[String]) -> bool {
    p.last().is_some_and(|l| l.starts_with("k:") || l.starts_with("v:"))
}

/// Merges an applied configuration into the live object, lists by their keys.
fn merge(live: &mut Value, config: &Value, field: &str) {
    match (live, config) {
        (Value::Object(l), Value::Object(c)) => {
            for (k, cv) in c {
                if cv.is_null() {
                    l.remove(k);
                    continue;
                }
                match l.get_mut(k) {
                    Some(lv) => merge(lv, cv, k),
                    None => {
                        l.insert(k.clone(), cv.clone());
                    }
                }
            }
        }
        (Value::Array(l), Value::Array(c)) => {
            let all: Vec<Value> = l.iter().chain(c.iter()).cloned().collect();
            if let Some(key) = list_key(field, &all) {
                for ci in c {
                    match l.iter_mut().find(|li| li.get(key) == ci.get(key)) {
                        Some(li) => merge(li, ci, ""),
                        None => l.push(ci.clone()),
                    }
                }
            } else if is_set(field, &all) {
                for ci in c {
                    if !l.contains(ci) {
                        l.push(ci.clone());
                    }
                }
            } else {
                *l = c.clone();
            }
        }
        (l, c) => *l = c.clone(),
    }
}

/// Server-side apply of `config` by `manager` onto `live` (in the request's version):
/// answers the new object, with its `managedFields`.
pub(crate) fn apply(
    def: &ResourceDef,
    live: &Value,
    config: &Value,
    manager: &str,
    force: bool,
) -> Result<Value, ApiError> {
    let reset_status = def.status;
    let applied = field_set(config, reset_status);
    let mut list = entries(live);
    let me_idx = list.iter().position(|e| e.manager == manager && e.operation == "Apply");
    let mut conflicts: Vec<(String, Path)> = Vec::new();
    for (i, e) in list.iter().enumerate() {
        if Some(i) == me_idx || !e.subresource.is_empty() {
            continue;
        }
        for p in applied.intersection(&e.set) {
            if is_member_path(p) {
                continue;
            }
            if get(live, p) != get(config, p) {
                conflicts.push((e.shown(), p.clone()));
            }
        }
    }
    if !conflicts.is_empty() && !force {
        return Err(conflict_error(&conflicts));
    }
    let mut out = live.clone();
    let mut body = config.clone();
    if let Some(m) = body.as_object_mut() {
        m.remove("apiVersion");
        m.remove("kind");
        if reset_status {
            m.remove("status");
        }
        if let Some(meta) = m.get_mut("metadata").and_then(Value::as_object_mut) {
            for k in ["managedFields", "resourceVersion", "uid", "creationTimestamp", "generation"]
            {
                meta.remove(k);
            }
        }
    }
    merge(&mut out, &body, "");
    // Fields this manager stopped applying, owned by no one else, are removed.
    let before = me_idx.and_then(|i| list.get(i)).map(|e| e.set.clone()).unwrap_or_default();
    for p in before.difference(&applied) {
        let owned = list.iter().enumerate().any(|(i, e)| Some(i) != me_idx && e.set.contains(p));
        if !owned {
            remove(&mut out, p);
        }
    }
    let stolen: Set = conflicts.into_iter().map(|(_, p)| p).collect();
    for (i, e) in list.iter_mut().enumerate() {
        if Some(i) != me_idx {
            e.set.retain(|p| !stolen.contains(p));
        }
    }
    let unchanged = |v: &Value| {
        let mut v = v.clone();
        if let Some(m) = v.get_mut("metadata").and_then(Value::as_object_mut) {
            m.remove("managedFields");
        }
        v
    };
    // A no-op apply keeps the entry's time (so nothing is written).
    let time = match me_idx.and_then(|i| list.get(i)) {
        Some(e) if e.set == applied && stolen.is_empty() && unchanged(live) == unchanged(&out) => {
            e.time.clone()
        }
        _ => now_rfc3339(),
    };
    let entry = Entry {
        manager: manager.to_string(),
        operation: "Apply".into(),
        api_version: def.api_version(),
        subresource: String::new(),
        time,
        set: applied,
    };
    match me_idx.and_then(|i| list.get_mut(i)) {
        Some(e) => *e = entry,
        None => list.push(entry),
    }
    store_entries(&mut out, list);
    Ok(out)
}

/// Marks a new object as created by an apply of `config` by `manager`.
pub(crate) fn created_by_apply(def: &ResourceDef, obj: &mut Value, config: &Value, manager: &str) {
    let entry = Entry {
        manager: manager.to_string(),
        operation: "Apply".into(),
        api_version: def.api_version(),
        subresource: String::new(),
        time: now_rfc3339(),
        set: field_set(config, def.status),
    };
    store_entries(obj, vec![entry]);
}

fn conflict_error(conflicts: &[(String, Path)]) -> ApiError {
    let message = match conflicts {
        [(m, p)] => format!("Apply failed with 1 conflict: conflict with {m}: {}", show(p)),
        _ => {
            let mut managers: Vec<&String> = conflicts.iter().map(|(m, _)| m).collect();
            managers.sort();
            managers.dedup();
            let mut lines = Vec::new();
            for m in managers {
                lines.push(format!("conflicts with {m}:"));
                for (_, p) in conflicts.iter().filter(|(o, _)| o == m) {
                    lines.push(format!("- {}", show(p)));
                }
            }
            format!("Apply failed with {} conflicts: {}", conflicts.len(), lines.join("\n"))
        }
    };
    let causes: Vec<Value> = conflicts
        .iter()
        .map(|(m, p)| {
            json!({"reason": "FieldManagerConflict", "message": format!("conflict with {m}"), "field": show(p)})
        })
        .collect();
    ApiError { code: 409, reason: "Conflict", message, details: Some(json!({"causes": causes})) }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fields_v1_round_trip() {
        let obj = json!({"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": "p", "labels": {"a": "1"}, "finalizers": ["x"]},
            "spec": {"containers": [{"name": "c", "image": "i", "args": ["a"]}]}});
        let set = field_set(&obj, true);
        let v1 = encode(&set);
        assert_eq!(
            v1,
            json!({
                "f:metadata": {"f:labels": {"f:a": {}}, "f:finalizers": {"v:\"x\"": {}}},
                "f:spec": {"f:containers": {"k:{\"name\":\"c\"}": {
                    ".": {}, "f:name": {}, "f:image": {}, "f:args": {}}}}
            })
        );
        assert_eq!(decode(&v1), set);
        let p: Path = vec![
            "f:spec".into(),
            "f:containers".into(),
            "k:{\"name\":\"c\"}".into(),
            "f:image".into(),
        ];
        assert_eq!(show(&p), ".spec.containers[name=\"c\"].image");
        assert_eq!(get(&obj, &p), Some(&json!("i")));
        let mut o = obj.clone();
        assert!(remove(&mut o, &p));
        assert!(get(&o, &p).is_none());
    }
}
