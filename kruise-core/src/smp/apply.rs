//! Applying a patch, as the API server does.

use super::schema::{ListStrategy, Node};
use super::{
    DELETE_FROM_PRIMITIVE_LIST, ItemKind, PATCH_DIRECTIVE, Path, RETAIN_KEYS, SET_ELEMENT_ORDER,
    SmpError, directive_target, item_kind, merge_key_of, type_name,
};
use serde_json::{Map, Value};

type Object = Map<String, Value>;

/// What a `$patch` directive asks of the object holding it.
enum ObjectDirective {
    Replace,
    Delete,
}

/// Reads the `$patch` directive of an object in a patch, if any. Objects accept `replace` and
/// `delete`.
fn object_directive(patch: &Object, path: &Path<'_>) -> Result<Option<ObjectDirective>, SmpError> {
    let Some(value) = patch.get(PATCH_DIRECTIVE) else {
        return Ok(None);
    };
    match value.as_str() {
        Some("replace") => Ok(Some(ObjectDirective::Replace)),
        Some("delete") => Ok(Some(ObjectDirective::Delete)),
        Some("merge") => Err(SmpError::InvalidPatchDirective {
            path: path.render(),
            value: value.to_string(),
            reason: "an object accepts `replace` or `delete`",
        }),
        _ => Err(SmpError::InvalidPatchDirective {
            path: path.render(),
            value: value.to_string(),
            reason: "unknown directive",
        }),
    }
}

/// Merges the patch object `patch` into `original`.
pub(crate) fn merge_map(
    mut original: Object,
    patch: &Object,
    node: Node,
    path: &Path<'_>,
) -> Result<Object, SmpError> {
    path.check_depth()?;
    match object_directive(patch, path)? {
        Some(ObjectDirective::Replace) => return clean_object(patch, path),
        Some(ObjectDirective::Delete) => return Ok(Object::new()),
        None => {}
    }

    apply_retain_keys(&mut original, patch, path)?;

    // Lists with an order directive are merged and ordered first.
    let mut handled: Vec<&str> = vec![RETAIN_KEYS];
    let mut keys: Vec<&String> = patch.keys().collect();
    keys.sort_unstable();
    for key in keys.iter().filter(|k| k.starts_with(SET_ELEMENT_ORDER)) {
        handled.push(key);
        let Some(list) = apply_set_element_order(&mut original, patch, key, node, path)? else {
            continue;
        };
        handled.push(list);
    }

    for &key in keys.iter().filter(|k| !k.starts_with(DELETE_FROM_PRIMITIVE_LIST)) {
        if handled.contains(&key.as_str()) {
            continue;
        }
        let Some(patch_value) = patch.get(key) else { continue };
        let here = path.key(key);
        if patch_value.is_null() {
            original.remove(key);
            continue;
        }
        let slot = original.get_mut(key);
        match (slot, patch_value) {
            // `$patch: delete` removes the object from its parent, as the API server's
            // decoding drops the empty object Kubernetes' merge leaves behind.
            (Some(Value::Object(_)), Value::Object(new))
                if matches!(object_directive(new, &here)?, Some(ObjectDirective::Delete)) =>
            {
                original.remove(key);
            }
            (Some(Value::Object(old)), Value::Object(new)) => {
                let field = node.field(key);
                let merged = merge_map(std::mem::take(old), new, field.node, &here)?;
                *old = merged;
            }
            (Some(Value::Array(old)), Value::Array(new)) => {
                let field = node.field(key);
                let merged = match field.list {
                    ListStrategy::Merge { key: merge_key } => {
                        merge_list(std::mem::take(old), new, field.node, merge_key, &here)?
                    }
                    ListStrategy::Atomic => clean_list(new, &here)?,
                };
                *old = merged;
            }
            // Absent, or a different type: the patch value replaces it.
            (slot, _) => match clean_value(patch_value, &here)? {
                Some(value) => {
                    if let Some(slot) = slot {
                        *slot = value;
                    } else {
                        original.insert(key.clone(), value);
                    }
                }
                None => {
                    original.remove(key);
                }
            },
        }
    }

    // Deletions from lists of primitives come last, after any additions to the same list.
    for &key in keys.iter().filter(|k| k.starts_with(DELETE_FROM_PRIMITIVE_LIST)) {
        let list = directive_target(key, DELETE_FROM_PRIMITIVE_LIST, path)?;
        let here = path.key(list);
        match patch.get(key) {
            Some(Value::Null) => {
                // As in Kubernetes, a null deletion list removes the list itself.
                original.remove(list);
            }
            Some(Value::Array(deletions)) => {
                if let Some(Value::Array(items)) = original.get_mut(list) {
                    if let Some(ItemKind::Object) = item_kind(&[items, deletions], &here)? {
                        return Err(SmpError::MalformedDirective {
                            path: path.render(),
                            directive: key.clone(),
                            reason: "only lists of primitives can be deleted from",
                        });
                    }
                    items.retain(|item| !deletions.contains(item));
                }
            }
            Some(other) => {
                return Err(SmpError::MalformedDirective {
                    path: path.render(),
                    directive: key.clone(),
                    reason: expected_list_reason(other),
                });
            }
            None => {}
        }
    }
    Ok(original)
}

fn expected_list_reason(value: &Value) -> &'static str {
    match value {
        Value::Object(_) => "expected a list, found an object",
        Value::String(_) => "expected a list, found a string",
        Value::Number(_) => "expected a list, found a number",
        Value::Bool(_) => "expected a list, found a boolean",
        Value::Null => "expected a list, found null",
        Value::Array(_) => "expected a list",
    }
}

/// Applies `$retainKeys`: checks that the patch sets no field outside the list, then drops
/// every key of `original` not in the list.
fn apply_retain_keys(
    original: &mut Object,
    patch: &Object,
    path: &Path<'_>,
) -> Result<(), SmpError> {
    let Some(retain) = patch.get(RETAIN_KEYS) else {
        return Ok(());
    };
    let Value::Array(retain) = retain else {
        return Err(SmpError::MalformedDirective {
            path: path.render(),
            directive: RETAIN_KEYS.to_owned(),
            reason: expected_list_reason(retain),
        });
    };
    let listed = |key: &str| retain.iter().any(|k| k.as_str() == Some(key));
    for (key, value) in patch {
        if value.is_null()
            || key == RETAIN_KEYS
            || key.starts_with(DELETE_FROM_PRIMITIVE_LIST)
            || key.starts_with(SET_ELEMENT_ORDER)
        {
            continue;
        }
        if !listed(key) {
            return Err(SmpError::RetainKeysViolation { path: path.render(), field: key.clone() });
        }
    }
    original.retain(|key, _| listed(key));
    Ok(())
}

/// Handles one `$setElementOrder/<list>` directive: merges the patch's `<list>` (if any) into
/// the original's and orders the result. Returns the list's name when the patch's `<list>`
/// was consumed.
fn apply_set_element_order<'p>(
    original: &mut Object,
    patch: &'p Object,
    directive: &'p str,
    node: Node,
    path: &Path<'_>,
) -> Result<Option<&'p str>, SmpError> {
    let Some(order) = patch.get(directive) else {
        return Ok(None);
    };
    let Value::Array(order) = order else {
        return Err(SmpError::MalformedDirective {
            path: path.render(),
            directive: directive.to_owned(),
            reason: expected_list_reason(order),
        });
    };
    let name = directive_target(directive, SET_ELEMENT_ORDER, path)?;
    let here = path.key(name);
    let original_list = match original.get(name) {
        None | Some(Value::Null) => None,
        Some(Value::Array(list)) => Some(list.clone()),
        Some(other) => {
            return Err(SmpError::NotAList { path: here.render(), found: type_name(other) });
        }
    };
    let patch_list = match patch.get(name) {
        None => None,
        Some(Value::Array(list)) => Some(list.as_slice()),
        Some(other) => {
            return Err(SmpError::NotAList { path: here.render(), found: type_name(other) });
        }
    };
    let field = node.field(name);
    let (merge, merge_key) = match field.list {
        ListStrategy::Merge { key } => (true, key),
        ListStrategy::Atomic => (false, None),
    };
    if let Some(list) = patch_list {
        check_order(list, order, merge_key, name, path)?;
    }

    let merged = match (&original_list, patch_list) {
        (Some(old), None) => old.clone(),
        (None, Some(new)) => clean_list(new, &here)?,
        (Some(old), Some(new)) if merge => {
            merge_list(old.clone(), new, field.node, merge_key, &here)?
        }
        (Some(_), Some(new)) => clean_list(new, &here)?,
        (None, None) => return Ok(None),
    };
    let server_order = match (original_list, patch_list, merge_key) {
        (Some(old), Some(new), Some(key)) if merge => storage_after_merge(old, new, key),
        (old, _, _) => old.unwrap_or_default(),
    };
    let kind = item_kind(&[&merged], &here)?;
    let ordered = order_items(merged, order, &server_order, merge_key, kind, &here)?;
    original.insert(name.to_owned(), Value::Array(ordered));
    Ok(patch_list.map(|_| name))
}

/// The original list as Kubernetes' `$setElementOrder` step sees it after merging a list of
/// objects. Kubernetes merges in place, in storage the size of the original list: removing an
/// item shifts the following ones left (leaving a copy of the last one at the end), and the
/// first new items are then written over the freed tail. That storage, not the untouched
/// original, is the "server order" the final ordering uses, so it is rebuilt here.
fn storage_after_merge(mut storage: Vec<Value>, patch: &[Value], key: &str) -> Vec<Value> {
    let size = storage.len();
    let mut len = size;
    let mut replace = false;
    for item in patch {
        match item.get(PATCH_DIRECTIVE).and_then(Value::as_str) {
            Some("delete") => {
                let Some(doomed) = item.get(key) else { continue };
                while let Some(at) =
                    storage[..len].iter().position(|old| old.get(key) == Some(doomed))
                {
                    for i in at..len - 1 {
                        storage[i] = storage[i + 1].clone();
                    }
                    len -= 1;
                }
            }
            Some("replace") => replace = true,
            _ => {}
        }
    }
    if replace {
        return storage;
    }
    // Keys of the merged list, to tell new items from merged ones.
    let mut merged_keys: Vec<Value> =
        storage[..len].iter().filter_map(|item| item.get(key).cloned()).collect();
    for item in patch.iter().filter(|item| item.get(PATCH_DIRECTIVE).is_none()) {
        let Some(wanted) = item.get(key) else { continue };
        if merged_keys.contains(wanted) {
            continue;
        }
        if len < size {
            storage[len] = item.clone();
        }
        len += 1;
        merged_keys.push(wanted.clone());
    }
    storage
}

/// Checks that the items of a patch list appear in the same relative order as in its
/// `$setElementOrder` list. Deletion items are ignored, and so are other directive items
/// while both lists last.
fn check_order(
    list: &[Value],
    order: &[Value],
    merge_key: Option<&str>,
    name: &str,
    path: &Path<'_>,
) -> Result<(), SmpError> {
    if list.is_empty() || order.is_empty() {
        return Ok(());
    }
    let here = path.key(name);
    let mut items = Vec::with_capacity(list.len());
    for (i, item) in list.iter().enumerate() {
        if merge_key.is_some() {
            let Value::Object(map) = item else {
                return Err(SmpError::NotAnObject {
                    path: here.index(i).render(),
                    found: type_name(item),
                });
            };
            if map.get(PATCH_DIRECTIVE).and_then(Value::as_str) == Some("delete") {
                continue;
            }
        }
        items.push((i, item));
    }
    let order_path = path.key(SET_ELEMENT_ORDER);
    let (mut next, mut j) = (0, 0);
    while let (Some(&(i, item)), Some(wanted)) = (items.get(next), order.get(j)) {
        if item.get(PATCH_DIRECTIVE).is_some() {
            next += 1;
            continue;
        }
        let same = match merge_key {
            Some(key) => {
                merge_key_of(item, key, &here.index(i))?
                    == merge_key_of(wanted, key, &order_path.index(j))?
            }
            None => item == wanted,
        };
        if same {
            next += 1;
        }
        j += 1;
    }
    if next < items.len() {
        return Err(SmpError::SetElementOrderMismatch {
            path: path.render(),
            list: name.to_owned(),
        });
    }
    Ok(())
}

/// Merges the patch list `patch` into the merging list `original`.
fn merge_list(
    original: Vec<Value>,
    patch: &[Value],
    item_node: Node,
    merge_key: Option<&str>,
    path: &Path<'_>,
) -> Result<Vec<Value>, SmpError> {
    path.check_depth()?;
    if original.is_empty() && patch.is_empty() {
        return Ok(original);
    }
    match item_kind(&[&original, patch], path)? {
        Some(ItemKind::Object) => {}
        Some(ItemKind::Primitive(found)) if merge_key.is_some() => {
            return Err(SmpError::NotAnObject { path: path.index(0).render(), found });
        }
        kind => {
            // A set of primitives: union, then order.
            let mut merged: Vec<Value> = Vec::with_capacity(original.len() + patch.len());
            for item in original.iter().chain(patch) {
                if !merged.contains(item) {
                    merged.push(item.clone());
                }
            }
            return order_items(merged, patch, &original, None, kind, path);
        }
    }
    let Some(key) = merge_key else {
        return Err(SmpError::NoMergeKey { path: path.render() });
    };

    // Items with a directive first: deletions, and `replace` for the whole list.
    let mut items = original;
    let mut plain: Vec<(usize, &Object)> = Vec::with_capacity(patch.len());
    let mut replace = false;
    for (i, item) in patch.iter().enumerate() {
        let here = path.index(i);
        let Value::Object(map) = item else {
            return Err(SmpError::NotAnObject { path: here.render(), found: type_name(item) });
        };
        let Some(directive) = map.get(PATCH_DIRECTIVE) else {
            plain.push((i, map));
            continue;
        };
        match directive.as_str() {
            Some("delete") => {
                let doomed = merge_key_of(item, key, &here)?;
                items.retain(|old| old.get(key) != Some(doomed));
            }
            Some("replace") => replace = true,
            Some("merge") => {
                return Err(SmpError::InvalidPatchDirective {
                    path: here.render(),
                    value: directive.to_string(),
                    reason: "a list item accepts `delete` or `replace`",
                });
            }
            _ => {
                return Err(SmpError::InvalidPatchDirective {
                    path: here.render(),
                    value: directive.to_string(),
                    reason: "unknown directive",
                });
            }
        }
    }
    if replace {
        // The list becomes the patch's other items, in their order.
        let mut replaced = Vec::with_capacity(plain.len());
        for (i, map) in plain {
            replaced.push(Value::Object(clean_object(map, &path.index(i))?));
        }
        return Ok(replaced);
    }

    let server_order = items.clone();
    for &(i, map) in &plain {
        let here = path.index(i);
        let wanted = map.get(key).ok_or_else(|| SmpError::MissingMergeKey {
            path: here.render(),
            key: key.to_owned(),
        })?;
        match items.iter().position(|old| old.get(key) == Some(wanted)) {
            Some(at) => {
                if let Value::Object(old) = &mut items[at] {
                    let merged = merge_map(std::mem::take(old), map, item_node, &here)?;
                    *old = merged;
                }
            }
            None => items.push(Value::Object(clean_object(map, &here)?)),
        }
    }
    let patch_order: Vec<Value> =
        plain.iter().map(|(_, map)| Value::Object((*map).clone())).collect();
    order_items(items, &patch_order, &server_order, Some(key), Some(ItemKind::Object), path)
}

/// Orders merged list items the way Kubernetes does: items named in `patch_order` follow it,
/// the other ("server-only") items keep their order in `server_order`, and the two sequences
/// are interleaved so that a server-only item goes before a patch item that comes after it in
/// `server_order`.
fn order_items(
    merged: Vec<Value>,
    patch_order: &[Value],
    server_order: &[Value],
    merge_key: Option<&str>,
    kind: Option<ItemKind>,
    path: &Path<'_>,
) -> Result<Vec<Value>, SmpError> {
    let identity = |item: &Value, i: usize, list_path: &Path<'_>| -> Result<Value, SmpError> {
        match (kind, merge_key) {
            (Some(ItemKind::Object), Some(key)) => {
                merge_key_of(item, key, &list_path.index(i)).cloned()
            }
            (Some(ItemKind::Object), None) => Err(SmpError::NoMergeKey { path: path.render() }),
            _ => Ok(item.clone()),
        }
    };
    let order_path = path.key(SET_ELEMENT_ORDER);
    let wanted = patch_order
        .iter()
        .enumerate()
        .map(|(i, item)| identity(item, i, &order_path))
        .collect::<Result<Vec<_>, _>>()?;
    let server = server_order
        .iter()
        .enumerate()
        .map(|(i, item)| identity(item, i, path))
        .collect::<Result<Vec<_>, _>>()?;

    let mut patch_items: Vec<(Option<usize>, Option<usize>, Value)> = Vec::new();
    let mut server_items: Vec<(Option<usize>, Option<usize>, Value)> = Vec::new();
    for (i, item) in merged.into_iter().enumerate() {
        let id = identity(&item, i, path)?;
        let in_patch = wanted.iter().position(|w| *w == id);
        let in_server = server.iter().position(|s| *s == id);
        match in_patch {
            Some(_) => patch_items.push((in_patch, in_server, item)),
            None => server_items.push((in_patch, in_server, item)),
        }
    }
    patch_items.sort_by_key(|(p, _, _)| p.unwrap_or(usize::MAX));
    server_items.sort_by_key(|(_, s, _)| s.unwrap_or(usize::MAX));

    let mut out = Vec::with_capacity(patch_items.len() + server_items.len());
    let mut server_items = server_items.into_iter().peekable();
    let mut patch_items = patch_items.into_iter().peekable();
    loop {
        let take_server = match (server_items.peek(), patch_items.peek()) {
            (None, None) => break,
            (Some(_), None) => true,
            (None, Some(_)) => false,
            (Some((_, Some(s), _)), Some((_, Some(p), _))) => s < p,
            (Some(_), Some(_)) => false,
        };
        let next = if take_server { server_items.next() } else { patch_items.next() };
        if let Some((_, _, item)) = next {
            out.push(item);
        }
    }
    Ok(out)
}

/// A patch value about to be stored whole: `$patch: delete` objects vanish (`None`), other
/// directives are dropped, and so are object members set to `null`.
fn clean_value(value: &Value, path: &Path<'_>) -> Result<Option<Value>, SmpError> {
    match value {
        Value::Object(map) => match object_directive(map, path)? {
            Some(ObjectDirective::Delete) => Ok(None),
            _ => clean_object(map, path).map(|map| Some(Value::Object(map))),
        },
        Value::Array(items) => clean_list(items, path).map(|items| Some(Value::Array(items))),
        other => Ok(Some(other.clone())),
    }
}

fn clean_object(map: &Object, path: &Path<'_>) -> Result<Object, SmpError> {
    path.check_depth()?;
    let mut out = Object::new();
    for (key, value) in map {
        if value.is_null()
            || key == PATCH_DIRECTIVE
            || key == RETAIN_KEYS
            || key.starts_with(SET_ELEMENT_ORDER)
            || key.starts_with(DELETE_FROM_PRIMITIVE_LIST)
        {
            continue;
        }
        if let Some(value) = clean_value(value, &path.key(key))? {
            out.insert(key.clone(), value);
        }
    }
    Ok(out)
}

fn clean_list(items: &[Value], path: &Path<'_>) -> Result<Vec<Value>, SmpError> {
    path.check_depth()?;
    let mut out = Vec::with_capacity(items.len());
    for (i, item) in items.iter().enumerate() {
        let here = path.index(i);
        // A list item carrying `$patch` (a deletion, or the marker of a replaced list) is an
        // instruction, not an item.
        if let Value::Object(map) = item
            && object_directive(map, &here)?.is_some()
        {
            continue;
        }
        if let Some(value) = clean_value(item, &here)? {
            out.push(value);
        }
    }
    Ok(out)
}
