//! The JSON patch a pod mutating webhook answers with: from the pod as decoded to the pod the
//! chain of steps made of it, both in typed form.
//!
//! The steps touch a few parts of a pod (labels, annotations, containers, volumes, affinity,
//! tolerations, ...). Those parts are compared in typed form and only the ones that changed are
//! encoded: a label becomes one operation on its key, a sidecar inserted among the containers
//! one `add` at its index (the other containers are neither encoded nor rewritten), and any
//! other changed part is diffed on its own. The rest of the pod is only compared for equality;
//! when something outside those parts changed, the whole pod is diffed instead. Either way,
//! applying the patch to the pod's JSON gives the changed pod's JSON, and parts of the object
//! as sent that no step changed are never in the patch.

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::{Pod, PodSpec};
use serde::Serialize;
use serde_json::Value;

/// Why the patch could not be encoded.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum PodPatchError {
    /// A part of the pod did not encode as JSON.
    #[error("encoding the pod patch: {0}")]
    Encode(#[from] serde_json::Error),
}

/// The JSON patch (as JSON text) turning `before` into `after`; `None` when they are equal.
///
/// # Errors
/// When a part of either pod does not encode as JSON.
pub fn pod_patch(mut before: Pod, mut after: Pod) -> Result<Option<Vec<u8>>, PodPatchError> {
    pod_patch_of(&mut before, &mut after)
}

/// [`pod_patch`] without taking the pods, so that the caller chooses when to free them.
/// Both pods are as they were when this returns.
///
/// # Errors
/// As [`pod_patch`].
pub fn pod_patch_of(before: &mut Pod, after: &mut Pod) -> Result<Option<Vec<u8>>, PodPatchError> {
    let mut ops = PatchWriter::default();
    if let (Some(b), Some(a)) = (before.spec.as_mut(), after.spec.as_mut()) {
        let mut parts = SpecParts::take(b);
        let mut after_parts = SpecParts::take(a);
        let rest_equal = before.spec == after.spec
            && before.status == after.status
            && metadata_equal_but_maps(before, after);
        if rest_equal {
            let (b, a) = (&before.metadata, &after.metadata);
            let written =
                map_ops(&mut ops, "/metadata/labels", b.labels.as_ref(), a.labels.as_ref())
                    .and_then(|()| {
                        let (b, a) = (b.annotations.as_ref(), a.annotations.as_ref());
                        map_ops(&mut ops, "/metadata/annotations", b, a)
                    })
                    .and_then(|()| parts.ops(&after_parts, &mut ops));
            parts.restore(before.spec.get_or_insert_with(Default::default));
            after_parts.restore(after.spec.get_or_insert_with(Default::default));
            written?;
            // Every part compared on its own: no operation means the pods are equal.
            return Ok(ops.finish());
        }
        // Put the parts back for the whole-pod diff.
        parts.restore(before.spec.get_or_insert_with(Default::default));
        after_parts.restore(after.spec.get_or_insert_with(Default::default));
    }
    if before == after {
        return Ok(None);
    }
    let before = serde_json::to_value(&*before)?;
    let after = serde_json::to_value(&*after)?;
    for op in json_patch::diff(&before, &after).0 {
        ops.op(&op)?;
    }
    Ok(Some(ops.finish().unwrap_or_else(|| b"[]".to_vec())))
}

/// Whether the pods' metadata are equal apart from their labels and annotations.
fn metadata_equal_but_maps(before: &Pod, after: &Pod) -> bool {
    let (b, a) = (&before.metadata, &after.metadata);
    // Compared field by field, so a new field of ObjectMeta is not compared by mistake: the
    // destructuring below stops compiling when ObjectMeta gains one.
    let k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta {
        annotations: _,
        creation_timestamp,
        deletion_grace_period_seconds,
        deletion_timestamp,
        finalizers,
        generate_name,
        generation,
        labels: _,
        managed_fields,
        name,
        namespace,
        owner_references,
        resource_version,
        self_link,
        uid,
    } = b;
    *creation_timestamp == a.creation_timestamp
        && *deletion_grace_period_seconds == a.deletion_grace_period_seconds
        && *deletion_timestamp == a.deletion_timestamp
        && *finalizers == a.finalizers
        && *generate_name == a.generate_name
        && *generation == a.generation
        && *managed_fields == a.managed_fields
        && *name == a.name
        && *namespace == a.namespace
        && *owner_references == a.owner_references
        && *resource_version == a.resource_version
        && *self_link == a.self_link
        && *uid == a.uid
}

/// Declares the spec parts compared on their own: the field, its JSON name, and whether it is
/// a list (whose insertions become `add`s at their index).
macro_rules! spec_parts {
    ($( $field:ident : $ty:ty = $json:literal, $kind:ident; )*) => {
        /// The spec parts the pod steps change, taken out of a spec.
        #[derive(Default)]
        struct SpecParts {
            $( $field: $ty, )*
        }

        impl SpecParts {
            /// Takes the parts out of `spec` (leaving their defaults).
            fn take(spec: &mut PodSpec) -> Self {
                Self { $( $field: std::mem::take(&mut spec.$field), )* }
            }

            /// Puts the parts back into `spec`.
            fn restore(&mut self, spec: &mut PodSpec) {
                $( spec.$field = std::mem::take(&mut self.$field); )*
            }

            /// The operations turning these parts into `after`'s.
            fn ops(&self, after: &Self, ops: &mut PatchWriter) -> Result<(), serde_json::Error> {
                $( spec_parts!(@op $kind, ops, concat!("/spec/", $json), &self.$field, &after.$field); )*
                Ok(())
            }
        }
    };
    (@op list, $ops:expr, $path:expr, $before:expr, $after:expr) => {
        list_ops($ops, $path, $before.as_slice(), $after.as_slice())?
    };
    (@op optional_list, $ops:expr, $path:expr, $before:expr, $after:expr) => {
        optional_list_ops($ops, $path, $before, $after)?
    };
    (@op part, $ops:expr, $path:expr, $before:expr, $after:expr) => {
        part_ops($ops, $path, $before, $after)?
    };
}

spec_parts! {
    containers: Vec<k8s_openapi::api::core::v1::Container> = "containers", list;
    init_containers: Option<Vec<k8s_openapi::api::core::v1::Container>> = "initContainers", optional_list;
    volumes: Option<Vec<k8s_openapi::api::core::v1::Volume>> = "volumes", optional_list;
    image_pull_secrets: Option<Vec<k8s_openapi::api::core::v1::LocalObjectReference>> = "imagePullSecrets", optional_list;
    tolerations: Option<Vec<k8s_openapi::api::core::v1::Toleration>> = "tolerations", optional_list;
    readiness_gates: Option<Vec<k8s_openapi::api::core::v1::PodReadinessGate>> = "readinessGates", optional_list;
    affinity: Option<k8s_openapi::api::core::v1::Affinity> = "affinity", part;
    node_selector: Option<BTreeMap<String, String>> = "nodeSelector", part;
    priority: Option<i32> = "priority", part;
    priority_class_name: Option<String> = "priorityClassName", part;
}

/// Operations on one key of a string map (labels, annotations) each.
pub(super) fn map_ops(
    ops: &mut PatchWriter,
    path: &str,
    before: Option<&BTreeMap<String, String>>,
    after: Option<&BTreeMap<String, String>>,
) -> Result<(), serde_json::Error> {
    match (before, after) {
        (Some(b), Some(a)) => {
            let mut at = String::with_capacity(path.len() + 64);
            for key in b.keys().filter(|k| !a.contains_key(*k)) {
                ops.remove(pointer_to(&mut at, path, key))?;
            }
            for (key, value) in a.iter().filter(|(k, v)| b.get(*k) != Some(*v)) {
                ops.add(pointer_to(&mut at, path, key), value)?;
            }
            Ok(())
        }
        (b, a) => part_ops(ops, path, &b, &a),
    }
}

/// A part as a whole: added (or replaced) when it changed, removed when it went away.
pub(super) fn part_ops<T: Serialize + PartialEq>(
    ops: &mut PatchWriter,
    path: &str,
    before: &Option<T>,
    after: &Option<T>,
) -> Result<(), serde_json::Error> {
    match (before, after) {
        (b, a) if b == a => Ok(()),
        (Some(_), None) => ops.remove(path),
        (None, Some(a)) => ops.add(path, a),
        (Some(b), Some(a)) => diff_ops(ops, path, b, a),
        (None, None) => Ok(()),
    }
}

/// A list: the elements inserted (every element of `before` kept, unchanged and in order)
/// become one `add` each at its index; any other change is diffed.
pub(super) fn list_ops<T: Serialize + PartialEq>(
    ops: &mut PatchWriter,
    path: &str,
    before: &[T],
    after: &[T],
) -> Result<(), serde_json::Error> {
    if before == after {
        return Ok(());
    }
    let mut kept = before.iter().peekable();
    let mut inserted = Vec::new();
    for (index, element) in after.iter().enumerate() {
        if kept.peek() == Some(&element) {
            kept.next();
        } else {
            inserted.push(index);
        }
    }
    if kept.peek().is_some() {
        return diff_ops(ops, path, before, after);
    }
    inserted_ops(ops, path, after, &inserted)
}

/// One `add` per element of `list` at the indexes `at` (increasing), in that order, so that
/// each lands at its final place.
pub(super) fn inserted_ops<T: Serialize>(
    ops: &mut PatchWriter,
    path: &str,
    list: &[T],
    at: &[usize],
) -> Result<(), serde_json::Error> {
    let mut pointer = String::with_capacity(path.len() + 4);
    for &index in at {
        if let Some(element) = list.get(index) {
            use std::fmt::Write as _;
            pointer.clear();
            // Writing into a String cannot fail.
            let _ = write!(pointer, "{path}/{index}");
            ops.add(&pointer, element)?;
        }
    }
    Ok(())
}

/// A list the pod may not have: [`list_ops`] when both sides have it, else [`part_ops`].
pub(super) fn optional_list_ops<T: Serialize + PartialEq>(
    ops: &mut PatchWriter,
    path: &str,
    before: &Option<Vec<T>>,
    after: &Option<Vec<T>>,
) -> Result<(), serde_json::Error> {
    match (before, after) {
        (Some(b), Some(a)) => list_ops(ops, path, b, a),
        (b, a) => part_ops(ops, path, b, a),
    }
}

/// The diff of one part, its paths under `path`.
fn diff_ops<T: Serialize + ?Sized>(
    ops: &mut PatchWriter,
    path: &str,
    before: &T,
    after: &T,
) -> Result<(), serde_json::Error> {
    let before = serde_json::to_value(before)?;
    let after = serde_json::to_value(after)?;
    for op in json_patch::diff(&before, &after).0 {
        let (name, at, value) = match &op {
            json_patch::PatchOperation::Add(o) => ("add", o.path.to_string(), Some(&o.value)),
            json_patch::PatchOperation::Replace(o) => {
                ("replace", o.path.to_string(), Some(&o.value))
            }
            json_patch::PatchOperation::Remove(o) => ("remove", o.path.to_string(), None),
            // `diff` writes only the three above.
            other => {
                ops.op(other)?;
                continue;
            }
        };
        let full = format!("{path}{at}");
        match value {
            Some(value) => ops.write(name, &full, Some(value))?,
            None => ops.write::<Value>(name, &full, None)?,
        }
    }
    Ok(())
}

/// Writes into `buffer` the JSON pointer of `key` under `path` (`~` and `/` in the key escaped
/// as `~0` and `~1`), and returns it.
fn pointer_to<'b>(buffer: &'b mut String, path: &str, key: &str) -> &'b str {
    buffer.clear();
    buffer.push_str(path);
    buffer.push('/');
    for c in key.chars() {
        match c {
            '~' => buffer.push_str("~0"),
            '/' => buffer.push_str("~1"),
            c => buffer.push(c),
        }
    }
    buffer
}

/// The patch's JSON text, written one operation at a time.
pub(super) struct PatchWriter {
    out: Vec<u8>,
}

impl Default for PatchWriter {
    fn default() -> Self {
        // Room for a typical injection's patch (one sidecar, its volume, a few annotations).
        Self { out: Vec::with_capacity(2048) }
    }
}

impl PatchWriter {
    pub(super) fn add<T: Serialize + ?Sized>(
        &mut self,
        path: &str,
        value: &T,
    ) -> Result<(), serde_json::Error> {
        self.write("add", path, Some(value))
    }

    fn remove(&mut self, path: &str) -> Result<(), serde_json::Error> {
        self.write::<Value>("remove", path, None)
    }

    fn op(&mut self, op: &json_patch::PatchOperation) -> Result<(), serde_json::Error> {
        self.separator();
        serde_json::to_writer(&mut self.out, op)
    }

    fn write<T: Serialize + ?Sized>(
        &mut self,
        op: &str,
        path: &str,
        value: Option<&T>,
    ) -> Result<(), serde_json::Error> {
        self.separator();
        self.out.extend_from_slice(br#"{"op":""#);
        self.out.extend_from_slice(op.as_bytes());
        self.out.extend_from_slice(br#"","path":"#);
        serde_json::to_writer(&mut self.out, path)?;
        if let Some(value) = value {
            self.out.extend_from_slice(br#","value":"#);
            serde_json::to_writer(&mut self.out, value)?;
        }
        self.out.push(b'}');
        Ok(())
    }

    fn separator(&mut self) {
        self.out.push(if self.out.is_empty() { b'[' } else { b',' });
    }

    /// The patch; `None` when no operation was written.
    pub(super) fn finish(mut self) -> Option<Vec<u8>> {
        if self.out.is_empty() {
            return None;
        }
        self.out.push(b']');
        Some(self.out)
    }
}

#[cfg(test)]
mod tests;
