//! Creating a two-way patch: the difference from an original document to a modified one.

use super::schema::{ListStrategy, Node};
use super::{
    DELETE_FROM_PRIMITIVE_LIST, ItemKind, PATCH_DIRECTIVE, Path, RETAIN_KEYS, SET_ELEMENT_ORDER,
    SmpError, item_kind, merge_key_of, type_name,
};
use serde_json::{Map, Value};
use std::cmp::Ordering;

type Object = Map<String, Value>;

/// The patch turning the object `original` into `modified`. With `retain_keys`, a non-empty
/// patch (or one that must clear fields) lists every non-null key of `modified` in
/// `$retainKeys`.
pub(crate) fn diff_maps(
    original: &Object,
    modified: &Object,
    node: Node,
    retain_keys: bool,
    path: &Path<'_>,
) -> Result<Object, SmpError> {
    path.check_depth()?;
    let mut patch = Object::new();
    let mut retained: Vec<&str> = Vec::new();

    for (key, new) in modified {
        if retain_keys && !new.is_null() {
            retained.push(key);
        }
        let Some(old) = original.get(key) else {
            patch.insert(key.clone(), new.clone());
            continue;
        };
        if key == PATCH_DIRECTIVE {
            // A directive in the documents themselves: keep the modified one if it changed.
            if !old.is_string() || !new.is_string() {
                return Err(SmpError::InvalidPatchDirective {
                    path: path.render(),
                    value: new.to_string(),
                    reason: "a document's `$patch` must be a string",
                });
            }
            if old != new {
                patch.insert(key.clone(), new.clone());
            }
            continue;
        }
        let here = path.key(key);
        match (old, new) {
            (Value::Object(old), Value::Object(new)) => {
                let field = node.field(key);
                let sub = diff_maps(old, new, field.node, field.retain_keys, &here)?;
                if !sub.is_empty() {
                    patch.insert(key.clone(), Value::Object(sub));
                }
            }
            (Value::Array(old), Value::Array(new)) => {
                let field = node.field(key);
                match field.list {
                    ListStrategy::Merge { key: merge_key } => {
                        let lists =
                            diff_lists(old, new, field.node, merge_key, field.retain_keys, &here)?;
                        if !lists.patch.is_empty() {
                            patch.insert(key.clone(), Value::Array(lists.patch));
                        }
                        if !lists.deletions.is_empty() {
                            patch.insert(
                                format!("{DELETE_FROM_PRIMITIVE_LIST}/{key}"),
                                Value::Array(lists.deletions),
                            );
                        }
                        if !lists.order.is_empty() {
                            patch.insert(
                                format!("{SET_ELEMENT_ORDER}/{key}"),
                                Value::Array(lists.order),
                            );
                        }
                    }
                    ListStrategy::Atomic => {
                        if old != new {
                            patch.insert(key.clone(), Value::Array(new.clone()));
                        }
                    }
                }
            }
            // Different types, or two primitives: replace when they differ.
            _ => {
                if old != new {
                    patch.insert(key.clone(), new.clone());
                }
            }
        }
    }

    for key in original.keys() {
        if !modified.contains_key(key) {
            patch.insert(key.clone(), Value::Null);
        }
    }

    let clears_fields =
        original.iter().any(|(key, value)| !value.is_null() && !modified.contains_key(key));
    if !retained.is_empty() && (!patch.is_empty() || clears_fields) {
        retained.sort_unstable();
        patch.insert(
            RETAIN_KEYS.to_owned(),
            Value::Array(retained.into_iter().map(|k| Value::String(k.to_owned())).collect()),
        );
    }
    Ok(patch)
}

/// The three parts of a merging list's diff.
struct ListDiff {
    /// Changed and added items (and, for objects, deletion directives), in modified order.
    patch: Vec<Value>,
    /// Primitives to delete (`$deleteFromPrimitiveList`).
    deletions: Vec<Value>,
    /// The modified order (`$setElementOrder`), empty if not needed.
    order: Vec<Value>,
}

fn diff_lists(
    original: &[Value],
    modified: &[Value],
    item_node: Node,
    merge_key: Option<&str>,
    retain_keys: bool,
    path: &Path<'_>,
) -> Result<ListDiff, SmpError> {
    let kind = item_kind(&[original, modified], path)?;
    if original.is_empty() {
        // Everything is new: the list itself is the patch and fixes the order. Its items are
        // checked as applying the patch to the (empty) original list will.
        if let (Some(key), Some(_)) = (merge_key, kind) {
            for (i, item) in modified.iter().enumerate() {
                merge_key_of(item, key, &path.index(i))?;
            }
        }
        return Ok(ListDiff { patch: modified.to_vec(), deletions: Vec::new(), order: Vec::new() });
    }
    match kind {
        Some(ItemKind::Object) => {
            let Some(key) = merge_key else {
                return Err(SmpError::NoMergeKey { path: path.render() });
            };
            let (mut patch, deletions) =
                diff_lists_of_maps(original, modified, item_node, key, retain_keys, path)?;
            // Changed and added items follow the modified order; deletions go last.
            let positions = modified
                .iter()
                .enumerate()
                .map(|(i, item)| merge_key_of(item, key, &path.index(i)).cloned())
                .collect::<Result<Vec<_>, _>>()?;
            let position_of = |item: &Value| {
                item.get(key)
                    .and_then(|k| positions.iter().position(|p| p == k))
                    .unwrap_or(usize::MAX)
            };
            patch.sort_by_key(|item| position_of(item));
            let same_order = original.len() == modified.len()
                && original.iter().zip(&positions).all(|(item, k)| item.get(key) == Some(k));
            patch.extend(deletions);
            let order = if !patch.is_empty() || !same_order {
                positions
                    .into_iter()
                    .map(|k| {
                        let mut entry = Object::new();
                        entry.insert(key.to_owned(), k);
                        Value::Object(entry)
                    })
                    .collect()
            } else {
                Vec::new()
            };
            Ok(ListDiff { patch, deletions: Vec::new(), order })
        }
        Some(ItemKind::Primitive(found)) if merge_key.is_some() => {
            Err(SmpError::NotAnObject { path: path.index(0).render(), found })
        }
        Some(ItemKind::Primitive(_)) | None => {
            let (mut additions, deletions) = diff_lists_of_primitives(original, modified);
            let position_of =
                |item: &Value| modified.iter().position(|m| m == item).unwrap_or(usize::MAX);
            additions.sort_by_key(|item| position_of(item));
            let order = if !deletions.is_empty() || original != modified {
                modified.to_vec()
            } else {
                Vec::new()
            };
            Ok(ListDiff { patch: additions, deletions, order })
        }
    }
}

/// How Kubernetes orders merge-key values and primitives when pairing up two lists: by their
/// printed form.
fn printed(value: &Value) -> String {
    match value {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

fn sorted_by_print(list: &[Value]) -> Vec<(String, &Value)> {
    let mut keyed: Vec<(String, &Value)> = list.iter().map(|v| (printed(v), v)).collect();
    keyed.sort_by(|a, b| a.0.cmp(&b.0));
    keyed
}

/// Pairs the items of two lists of primitives: those only in `modified` are additions,
/// those only in `original` deletions (without repeats).
fn diff_lists_of_primitives(original: &[Value], modified: &[Value]) -> (Vec<Value>, Vec<Value>) {
    let (old, new) = (sorted_by_print(original), sorted_by_print(modified));
    let (mut i, mut j) = (0, 0);
    let mut additions = Vec::new();
    let mut deletions: Vec<Value> = Vec::new();
    while i < old.len() || j < new.len() {
        let order = match (old.get(i), new.get(j)) {
            (Some(o), Some(n)) => o.0.cmp(&n.0),
            (Some(_), None) => Ordering::Less,
            (None, _) => Ordering::Greater,
        };
        match order {
            Ordering::Equal => {
                i += 1;
                j += 1;
            }
            Ordering::Less => {
                if let Some((_, value)) = old.get(i)
                    && !deletions.contains(value)
                {
                    deletions.push((*value).clone());
                }
                i += 1;
            }
            Ordering::Greater => {
                if let Some((_, value)) = new.get(j) {
                    additions.push((*value).clone());
                }
                j += 1;
            }
        }
    }
    (additions, deletions)
}

/// Pairs the items of two lists of objects by merge key: paired items contribute their diff
/// (with the merge key), new items are added whole, and missing items get a deletion
/// directive. Returns the patch items and the deletions.
fn diff_lists_of_maps(
    original: &[Value],
    modified: &[Value],
    item_node: Node,
    key: &str,
    retain_keys: bool,
    path: &Path<'_>,
) -> Result<(Vec<Value>, Vec<Value>), SmpError> {
    let sorted = |list: &'_ [Value]| -> Result<Vec<(String, usize)>, SmpError> {
        let mut keyed = Vec::with_capacity(list.len());
        for (i, item) in list.iter().enumerate() {
            keyed.push((printed(merge_key_of(item, key, &path.index(i))?), i));
        }
        keyed.sort_by(|a, b| a.0.cmp(&b.0));
        Ok(keyed)
    };
    let (old, new) = (sorted(original)?, sorted(modified)?);
    let mut patch = Vec::new();
    let mut deletions = Vec::new();
    let (mut i, mut j) = (0, 0);
    while i < old.len() || j < new.len() {
        let order = match (old.get(i), new.get(j)) {
            (Some(o), Some(n)) => o.0.cmp(&n.0),
            (Some(_), None) => Ordering::Less,
            (None, _) => Ordering::Greater,
        };
        match order {
            Ordering::Equal => {
                let (oi, ni) = (old[i].1, new[j].1);
                let here = path.index(ni);
                let (Value::Object(o), Value::Object(n)) = (&original[oi], &modified[ni]) else {
                    // Unreachable: merge_key_of accepted both as objects.
                    return Err(SmpError::NotAnObject {
                        path: here.render(),
                        found: type_name(&modified[ni]),
                    });
                };
                let mut sub = diff_maps(o, n, item_node, retain_keys, &here)?;
                if !sub.is_empty() {
                    if let Some(k) = n.get(key) {
                        sub.insert(key.to_owned(), k.clone());
                    }
                    patch.push(Value::Object(sub));
                }
                i += 1;
                j += 1;
            }
            Ordering::Greater => {
                patch.push(modified[new[j].1].clone());
                j += 1;
            }
            Ordering::Less => {
                if let Some(k) = original[old[i].1].get(key) {
                    let mut directive = Object::new();
                    directive.insert(key.to_owned(), k.clone());
                    directive
                        .insert(PATCH_DIRECTIVE.to_owned(), Value::String("delete".to_owned()));
                    deletions.push(Value::Object(directive));
                }
                i += 1;
            }
        }
    }
    Ok((patch, deletions))
}
