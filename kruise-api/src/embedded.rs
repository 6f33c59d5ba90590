//! Document fidelity: types that decode a document and encode it back as it was written.
//!
//! The typed objects encode as upstream's Go types do, which writes some fields a document may
//! have left out: k8s-openapi writes the required fields of core types (an empty `selector`,
//! the `apiVersion` and `kind` of a PVC template), and Go writes every field without
//! `omitempty` (status counters, say). These wrappers remember what decoding filled in and
//! leave it out again when encoding, as long as it still holds the filled-in value; an edit
//! is always written.
//!
//! - [`Embedded`] keeps a nested object's `apiVersion`/`kind` as written.
//! - [`Verbatim`] keeps any nested value as written.
//! - [`FilledFields`] is the record itself; [`KruiseObject`](crate::KruiseObject) keeps one
//!   per decoded document.

use std::ops::{Deref, DerefMut};

use serde_json::Map;

use schemars::{JsonSchema, Schema, SchemaGenerator};
use serde::de::{DeserializeOwned, Error as _};
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::Value;

/// A nested object whose `apiVersion` and `kind` are written back only if they were read.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Embedded<T> {
    /// The object itself.
    pub object: T,
    /// Whether `apiVersion`/`kind` were present in the source document and are written back.
    pub write_type_fields: bool,
}

impl<T> Embedded<T> {
    /// Wraps an object; its type fields are not written, as Go leaves them out when empty.
    pub fn new(object: T) -> Self {
        Self { object, write_type_fields: false }
    }
}

impl<T> From<T> for Embedded<T> {
    fn from(object: T) -> Self {
        Self::new(object)
    }
}

impl<T> Deref for Embedded<T> {
    type Target = T;

    fn deref(&self) -> &T {
        &self.object
    }
}

impl<T> DerefMut for Embedded<T> {
    fn deref_mut(&mut self) -> &mut T {
        &mut self.object
    }
}

impl<T: Serialize> Serialize for Embedded<T> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut value = serde_json::to_value(&self.object).map_err(serde::ser::Error::custom)?;
        if !self.write_type_fields
            && let Value::Object(map) = &mut value
        {
            map.remove("apiVersion");
            map.remove("kind");
        }
        value.serialize(serializer)
    }
}

impl<'de, T: DeserializeOwned> Deserialize<'de> for Embedded<T> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let value = Value::deserialize(deserializer)?;
        let write_type_fields = value.get("apiVersion").is_some() || value.get("kind").is_some();
        let object = serde_path_to_error::deserialize(value).map_err(|err| {
            D::Error::custom(format_args!("at `{}`: {}", err.path(), err.inner()))
        })?;
        Ok(Self { object, write_type_fields })
    }
}

impl<T: JsonSchema> JsonSchema for Embedded<T> {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        T::schema_name()
    }

    fn inline_schema() -> bool {
        T::inline_schema()
    }

    fn json_schema(generator: &mut SchemaGenerator) -> Schema {
        T::json_schema(generator)
    }
}

/// Fields an encoder writes that the source document did not have, with the values written.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct FilledFields {
    fields: Vec<(Vec<String>, Value)>,
}

impl FilledFields {
    /// Records every member of `written` (what the typed object encodes to) that `source`
    /// (the document) does not have. Nulls count as absent.
    pub fn record(written: &Value, source: &Value) -> Self {
        let mut fields = Vec::new();
        collect(written, source, &mut Vec::new(), &mut fields);
        Self { fields }
    }

    /// True when decoding filled in nothing.
    pub fn is_empty(&self) -> bool {
        self.fields.is_empty()
    }

    /// Removes the recorded fields from `value` where they still hold the recorded value.
    pub fn strip(&self, value: &mut Value) {
        for (path, recorded) in &self.fields {
            let Some((last, parents)) = path.split_last() else { continue };
            let mut node = Some(&mut *value);
            for segment in parents {
                node = node.and_then(|node| match node {
                    Value::Object(map) => map.get_mut(segment),
                    Value::Array(items) => {
                        segment.parse().ok().and_then(|i: usize| items.get_mut(i))
                    }
                    _ => None,
                });
            }
            if let Some(Value::Object(map)) = node
                && map.get(last) == Some(recorded)
            {
                map.remove(last);
            }
        }
    }
}

fn collect(
    written: &Value,
    source: &Value,
    path: &mut Vec<String>,
    out: &mut Vec<(Vec<String>, Value)>,
) {
    match (written, source) {
        (Value::Object(written), Value::Object(source)) => {
            for (key, value) in written {
                path.push(key.clone());
                match source.get(key).filter(|v| !v.is_null()) {
                    Some(original) => collect(value, original, path, out),
                    None if !value.is_null() => out.push((path.clone(), value.clone())),
                    None => {}
                }
                path.pop();
            }
        }
        (Value::Array(written), Value::Array(source)) if written.len() == source.len() => {
            for (index, (value, original)) in written.iter().zip(source).enumerate() {
                path.push(index.to_string());
                collect(value, original, path, out);
                path.pop();
            }
        }
        _ => {}
    }
}

/// A nested value that encodes back as its document wrote it: what decoding filled in is left
/// out again unless it was changed. Values built in code encode in full.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Verbatim<T> {
    /// The value itself.
    pub object: T,
    filled: FilledFields,
}

impl<T> Verbatim<T> {
    /// Wraps a value; every field it has is written.
    pub fn new(object: T) -> Self {
        Self { object, filled: FilledFields::default() }
    }
}

impl<T> From<T> for Verbatim<T> {
    fn from(object: T) -> Self {
        Self::new(object)
    }
}

impl<T> Deref for Verbatim<T> {
    type Target = T;

    fn deref(&self) -> &T {
        &self.object
    }
}

impl<T> DerefMut for Verbatim<T> {
    fn deref_mut(&mut self) -> &mut T {
        &mut self.object
    }
}

impl<T: Serialize> Serialize for Verbatim<T> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut value = serde_json::to_value(&self.object).map_err(serde::ser::Error::custom)?;
        self.filled.strip(&mut value);
        value.serialize(serializer)
    }
}

impl<'de, T: Serialize + DeserializeOwned> Deserialize<'de> for Verbatim<T> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let source = Value::deserialize(deserializer)?;
        let object: T = serde_path_to_error::deserialize(source.clone()).map_err(|err| {
            D::Error::custom(format_args!("at `{}`: {}", err.path(), err.inner()))
        })?;
        let written = serde_json::to_value(&object).map_err(D::Error::custom)?;
        Ok(Self { object, filled: FilledFields::record(&written, &source) })
    }
}

impl<T: JsonSchema> JsonSchema for Verbatim<T> {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        T::schema_name()
    }

    fn inline_schema() -> bool {
        T::inline_schema()
    }

    fn json_schema(generator: &mut SchemaGenerator) -> Schema {
        T::json_schema(generator)
    }
}

/// Gives a document the `metadata` and `spec` that the typed roots require, recording them
/// as filled in. Go decodes a document without either as empty.
pub(crate) fn with_required_root_fields(mut value: Value) -> Value {
    if let Value::Object(map) = &mut value {
        for field in ["metadata", "spec"] {
            map.entry(field).or_insert_with(|| Value::Object(Map::new()));
        }
    }
    value
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::api::core::v1::PersistentVolumeClaim;
    use serde_json::json;

    #[test]
    fn type_fields_are_written_only_when_read() {
        let bare = json!({"metadata": {"name": "data"}});
        let pvc: Embedded<PersistentVolumeClaim> =
            serde_json::from_value(bare.clone()).expect("decode");
        assert_eq!(serde_json::to_value(&pvc).expect("encode"), bare);

        let typed = json!({"apiVersion": "v1", "kind": "PersistentVolumeClaim", "metadata": {"name": "data"}});
        let pvc: Embedded<PersistentVolumeClaim> =
            serde_json::from_value(typed.clone()).expect("decode");
        assert_eq!(serde_json::to_value(&pvc).expect("encode"), typed);
    }

    #[test]
    fn errors_name_the_inner_field() {
        let bad = json!({"spec": {"accessModes": "ReadWriteOnce"}});
        let err =
            serde_json::from_value::<Embedded<PersistentVolumeClaim>>(bad).expect_err("invalid");
        assert!(err.to_string().contains("spec.accessModes"), "{err}");
    }
}
