//! Strategic merge patch for Pods and PodTemplateSpecs, as Kubernetes' apimachinery defines it.
//!
//! A strategic merge patch is a JSON merge patch that knows, per field, how lists combine:
//! most lists are replaced whole, but some (containers, env, volumes, ...) merge item by item,
//! matched on a key field, and `finalizers` merges as a set. Patches carry directives:
//!
//! | directive | meaning |
//! |---|---|
//! | `field: null` | remove the field |
//! | `$patch: replace` (in an object) | the object becomes the patch's contents |
//! | `$patch: delete` (in an object) | the object is removed (the root becomes empty) |
//! | `{key: v, $patch: delete}` (a merge-list item) | remove the item with merge key `v` |
//! | `{$patch: replace}` (a merge-list item) | the list becomes the patch's other items |
//! | `$setElementOrder/<list>: [...]` | the order of the merged list |
//! | `$deleteFromPrimitiveList/<list>: [...]` | values to remove from a list of primitives |
//! | `$retainKeys: [...]` | drop every key of the object not listed |
//!
//! [`create_patch`] computes the two-way patch from one document to another, as `kubectl`
//! and client-go do; [`apply_patch`] applies a patch as the API server does. Both work on
//! [`serde_json::Value`] and are guided by a [`PatchSchema`]: a static table of the `core/v1`
//! fields reachable from a Pod whose lists merge (see `schema.rs`). Fields outside the table
//! behave like untagged Go fields: objects merge key by key and lists are replaced.
//!
//! Behaviour follows Kubernetes, including its ordering rules: items a patch mentions are
//! placed in the patch's order (or the `$setElementOrder` order), and items only the original
//! has keep their relative order, interleaved by their original positions; an item the patch
//! adds without an order directive lands before the original items it cannot be placed
//! against. Container ports merge on `containerPort` alone, as in Kubernetes (the protocol is
//! only part of server-side apply's key). Where Kubernetes panics, keeps junk or fails later
//! in its decoder, this module differs on purpose:
//! - values a patch adds whole (new fields, replaced lists, new list items) are cleaned:
//!   object members set to `null` and directives inside them are dropped, as the API server's
//!   decoder would ignore them;
//! - a `$patch: replace` object at a place the original does not have is added (Kubernetes
//!   drops it);
//! - merge lists holding `null` items or nested lists, and primitives in a list merged by key,
//!   are errors (Kubernetes panics, or accepts them and fails to decode the result);
//! - a `$deleteFromPrimitiveList` that is not a list is an error even where the list is absent;
//! - an empty `$setElementOrder` with nothing to order is accepted;
//! - unknown fields merge as plain objects instead of failing the schema lookup.
//!
//! Lists with repeated merge keys or repeated primitives in merge lists are handled as
//! Kubernetes handles them where that is well defined; no promise is made for them.
//!
//! Errors ([`SmpError`]) name the JSON path of the offending value. Nothing here panics.

mod apply;
mod diff;
mod schema;

use serde_json::{Map, Value};
use std::fmt;

/// What kind of document a patch applies to, which decides how its lists merge.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum PatchSchema {
    /// A `core/v1` Pod: metadata, spec and status.
    Pod,
    /// A `core/v1` PodTemplateSpec at the document root.
    PodTemplateSpec,
    /// An object holding a PodTemplateSpec under the given object keys (`["spec", "template"]`
    /// for a Deployment, CloneSet, ...). The object's own `metadata` merges as an ObjectMeta;
    /// everything else outside the template merges as plain JSON.
    PodTemplateSpecAt(&'static [&'static str]),
    /// A `core/v1` Service: its `metadata`, and `spec.ports` merged on `port`.
    Service,
    /// Any other object: its `metadata` merges as an ObjectMeta, everything else as plain JSON
    /// (objects key by key, lists replaced).
    Object,
}

impl PatchSchema {
    /// A workload whose pod template is at `spec.template`.
    pub const WORKLOAD_TEMPLATE: PatchSchema =
        PatchSchema::PodTemplateSpecAt(&["spec", "template"]);

    fn root(self) -> schema::Node {
        match self {
            PatchSchema::Pod => schema::Node::Known(&schema::POD),
            PatchSchema::PodTemplateSpec => schema::Node::Known(&schema::POD_TEMPLATE_SPEC),
            PatchSchema::PodTemplateSpecAt([]) => schema::Node::Known(&schema::POD_TEMPLATE_SPEC),
            PatchSchema::PodTemplateSpecAt(path) => schema::Node::Above {
                here: &schema::WORKLOAD,
                path,
                target: &schema::POD_TEMPLATE_SPEC,
            },
            PatchSchema::Service => schema::Node::Known(&schema::SERVICE),
            PatchSchema::Object => schema::Node::Known(&schema::WORKLOAD),
        }
    }
}

/// Why a patch could not be created or applied. Each variant names the JSON path of the
/// offending value (`spec.containers[0].env`, or `(root)`).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum SmpError {
    /// An object was required.
    #[error("at `{path}`: expected an object, found {found}")]
    NotAnObject {
        /// Where.
        path: String,
        /// The JSON type found instead.
        found: &'static str,
    },
    /// A list was required.
    #[error("at `{path}`: expected a list, found {found}")]
    NotAList {
        /// Where.
        path: String,
        /// The JSON type found instead.
        found: &'static str,
    },
    /// An item of a merging list lacks the list's merge key.
    #[error("at `{path}`: list item has no merge key `{key}`")]
    MissingMergeKey {
        /// The item.
        path: String,
        /// The merge key the list is keyed on.
        key: String,
    },
    /// A merging list holds `null` items or lists, which cannot be merged.
    #[error("at `{path}`: list items of type {found} cannot be merged")]
    UnmergeableItem {
        /// The list.
        path: String,
        /// The item type found.
        found: &'static str,
    },
    /// A merging list mixes item types.
    #[error("at `{path}`: cannot merge a list of {first} with items of type {second}")]
    MixedListItems {
        /// The list.
        path: String,
        /// The type of the first item.
        first: &'static str,
        /// The conflicting item type.
        second: &'static str,
    },
    /// A list of objects was to be merged but the schema gives it no merge key (for
    /// example objects in `finalizers`).
    #[error("at `{path}`: cannot merge a list of objects that has no merge key")]
    NoMergeKey {
        /// The list.
        path: String,
    },
    /// A `$patch` directive with an unknown or misplaced value.
    #[error("at `{path}`: invalid `$patch` directive {value}: {reason}")]
    InvalidPatchDirective {
        /// The object holding the directive.
        path: String,
        /// The directive's value, as JSON.
        value: String,
        /// What is wrong with it.
        reason: &'static str,
    },
    /// A `$retainKeys`, `$setElementOrder/...` or `$deleteFromPrimitiveList/...` directive
    /// that is not well formed.
    #[error("at `{path}`: malformed directive `{directive}`: {reason}")]
    MalformedDirective {
        /// The object holding the directive.
        path: String,
        /// The directive's key.
        directive: String,
        /// What is wrong with it.
        reason: &'static str,
    },
    /// The patch sets a field that its own `$retainKeys` list would drop.
    #[error("at `{path}`: field `{field}` is set by the patch but not listed in `$retainKeys`")]
    RetainKeysViolation {
        /// The object.
        path: String,
        /// The field missing from `$retainKeys`.
        field: String,
    },
    /// The patch list's items are not in the order its `$setElementOrder` list gives.
    #[error(
        "at `{path}`: the items of `{list}` are not in the order `$setElementOrder/{list}` gives"
    )]
    SetElementOrderMismatch {
        /// The object holding the list.
        path: String,
        /// The list's field name.
        list: String,
    },
    /// The document nests deeper than this module follows.
    #[error("at `{path}`: nesting deeper than {limit} levels")]
    TooDeep {
        /// Where the limit was reached.
        path: String,
        /// The limit.
        limit: usize,
    },
}

/// The deepest nesting followed; deeper documents are rejected rather than risking the stack.
pub(crate) const MAX_DEPTH: usize = 256;

/// Computes the two-way strategic merge patch that turns `original` into `modified`.
///
/// The patch sets changed and added fields, deletes removed fields with `null`, deletes
/// removed merge-list items with `$patch: delete`, lists removed primitives in
/// `$deleteFromPrimitiveList/<list>`, records the order of a changed merge list in
/// `$setElementOrder/<list>`, and adds `$retainKeys` to changed items of lists Kubernetes
/// tags `retainKeys` (pod volumes). A `null` document counts as `{}`.
///
/// [`apply_patch`]`(original, patch)` then gives `modified`, up to members set to `null`
/// (which the API server's decoder drops), provided merge keys are unique within each list.
pub fn create_patch(
    original: &Value,
    modified: &Value,
    kind: PatchSchema,
) -> Result<Value, SmpError> {
    let root = Path::ROOT;
    let empty = Map::new();
    let original = object_or_empty(original, &empty, &root)?;
    let modified = object_or_empty(modified, &empty, &root)?;
    diff::diff_maps(original, modified, kind.root(), false, &root).map(Value::Object)
}

/// Applies the strategic merge patch `patch` to `original`, as the API server does, and
/// returns the result. A `null` document or patch counts as `{}`.
pub fn apply_patch(original: &Value, patch: &Value, kind: PatchSchema) -> Result<Value, SmpError> {
    let root = Path::ROOT;
    let empty = Map::new();
    let original = object_or_empty(original, &empty, &root)?.clone();
    let patch = object_or_empty(patch, &empty, &root)?;
    apply::merge_map(original, patch, kind.root(), &root).map(Value::Object)
}

fn object_or_empty<'a>(
    value: &'a Value,
    empty: &'a Map<String, Value>,
    path: &Path<'_>,
) -> Result<&'a Map<String, Value>, SmpError> {
    match value {
        Value::Object(map) => Ok(map),
        Value::Null => Ok(empty),
        other => Err(SmpError::NotAnObject { path: path.render(), found: type_name(other) }),
    }
}

/// The JSON type of a value, for messages.
pub(crate) fn type_name(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "boolean",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "list",
        Value::Object(_) => "object",
    }
}

/// The `$patch` key.
pub(crate) const PATCH_DIRECTIVE: &str = "$patch";
/// The `$retainKeys` key.
pub(crate) const RETAIN_KEYS: &str = "$retainKeys";
/// Prefix of `$setElementOrder/<list>` keys.
pub(crate) const SET_ELEMENT_ORDER: &str = "$setElementOrder";
/// Prefix of `$deleteFromPrimitiveList/<list>` keys.
pub(crate) const DELETE_FROM_PRIMITIVE_LIST: &str = "$deleteFromPrimitiveList";

/// Where a value sits in a document, as a chain of borrowed segments (built without
/// allocating; rendered only for errors).
#[derive(Clone, Copy, Debug)]
pub(crate) struct Path<'a> {
    parent: Option<&'a Path<'a>>,
    segment: Segment<'a>,
    depth: usize,
}

#[derive(Clone, Copy, Debug)]
enum Segment<'a> {
    Root,
    Key(&'a str),
    Index(usize),
}

impl<'a> Path<'a> {
    /// The document root.
    pub(crate) const ROOT: Path<'static> = Path { parent: None, segment: Segment::Root, depth: 0 };

    /// The member `key` of the object here.
    pub(crate) fn key(&'a self, key: &'a str) -> Path<'a> {
        Path { parent: Some(self), segment: Segment::Key(key), depth: self.depth + 1 }
    }

    /// The item `index` of the list here.
    pub(crate) fn index(&'a self, index: usize) -> Path<'a> {
        Path { parent: Some(self), segment: Segment::Index(index), depth: self.depth + 1 }
    }

    /// Fails once the path is deeper than [`MAX_DEPTH`].
    pub(crate) fn check_depth(&self) -> Result<(), SmpError> {
        if self.depth > MAX_DEPTH {
            return Err(SmpError::TooDeep { path: self.render(), limit: MAX_DEPTH });
        }
        Ok(())
    }

    /// The path as `spec.containers[0].env`, or `(root)`.
    pub(crate) fn render(&self) -> String {
        self.to_string()
    }
}

impl fmt::Display for Path<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut segments = Vec::with_capacity(self.depth);
        let mut cursor = Some(self);
        while let Some(path) = cursor {
            segments.push(path.segment);
            cursor = path.parent;
        }
        let mut wrote = false;
        for segment in segments.iter().rev() {
            match segment {
                Segment::Root => {}
                Segment::Key(key) if wrote => write!(f, ".{key}")?,
                Segment::Key(key) => write!(f, "{key}")?,
                Segment::Index(index) => write!(f, "[{index}]")?,
            }
            wrote = !matches!(segment, Segment::Root) || wrote;
        }
        if !wrote {
            f.write_str("(root)")?;
        }
        Ok(())
    }
}

/// The kind of the items of a list, for the uniformity checks merging needs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum ItemKind {
    /// Strings, numbers and booleans (one kind each; mixing them is an error).
    Primitive(&'static str),
    /// Objects.
    Object,
}

/// The common item kind of `lists`, `None` if they are all empty. Mixed kinds, `null`
/// items and nested lists are errors.
pub(crate) fn item_kind(lists: &[&[Value]], path: &Path<'_>) -> Result<Option<ItemKind>, SmpError> {
    let mut first: Option<&Value> = None;
    for item in lists.iter().flat_map(|list| list.iter()) {
        if matches!(item, Value::Array(_) | Value::Null) {
            return Err(SmpError::UnmergeableItem { path: path.render(), found: type_name(item) });
        }
        match first {
            None => first = Some(item),
            Some(seen) if type_name(seen) != type_name(item) => {
                return Err(SmpError::MixedListItems {
                    path: path.render(),
                    first: type_name(seen),
                    second: type_name(item),
                });
            }
            Some(_) => {}
        }
    }
    Ok(first.map(|item| match item {
        Value::Object(_) => ItemKind::Object,
        other => ItemKind::Primitive(type_name(other)),
    }))
}

/// The merge-key value of a list item, or the error for an item that is not an object or
/// lacks the key.
pub(crate) fn merge_key_of<'v>(
    item: &'v Value,
    key: &str,
    path: &Path<'_>,
) -> Result<&'v Value, SmpError> {
    let Value::Object(map) = item else {
        return Err(SmpError::NotAnObject { path: path.render(), found: type_name(item) });
    };
    map.get(key)
        .ok_or_else(|| SmpError::MissingMergeKey { path: path.render(), key: key.to_owned() })
}

/// The list a `<prefix>/<list>` directive key names.
pub(crate) fn directive_target<'k>(
    key: &'k str,
    prefix: &str,
    path: &Path<'_>,
) -> Result<&'k str, SmpError> {
    match key.split_once('/') {
        Some((head, list)) if head == prefix => Ok(list),
        _ => Err(SmpError::MalformedDirective {
            path: path.render(),
            directive: key.to_owned(),
            reason: "expected `<directive>/<list field>`",
        }),
    }
}

#[cfg(test)]
mod tests;
