//! [`Embedded`]: a Kubernetes object nested inside a Kruise spec (a PVC template, say) that
//! keeps its `apiVersion` and `kind` exactly as written.
//!
//! k8s-openapi always writes `apiVersion` and `kind` for top-level kinds, while upstream's Go
//! types write them only when they were set. Wrapping the nested object keeps documents
//! byte-for-byte stable through a decode and encode.

use std::ops::{Deref, DerefMut};

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
        if !self.write_type_fields {
            if let Value::Object(map) = &mut value {
                map.remove("apiVersion");
                map.remove("kind");
            }
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

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::api::core::v1::PersistentVolumeClaim;
    use serde_json::json;

    #[test]
    fn type_fields_are_written_only_when_read() {
        let bare = json!({"metadata": {"name": "data"}});
        let pvc: Embedded<PersistentVolumeClaim> = serde_json::from_value(bare.clone()).expect("decode");
        assert_eq!(serde_json::to_value(&pvc).expect("encode"), bare);

        let typed = json!({"apiVersion": "v1", "kind": "PersistentVolumeClaim", "metadata": {"name": "data"}});
        let pvc: Embedded<PersistentVolumeClaim> = serde_json::from_value(typed.clone()).expect("decode");
        assert_eq!(serde_json::to_value(&pvc).expect("encode"), typed);
    }

    #[test]
    fn errors_name_the_inner_field() {
        let bad = json!({"spec": {"accessModes": "ReadWriteOnce"}});
        let err = serde_json::from_value::<Embedded<PersistentVolumeClaim>>(bad).expect_err("invalid");
        assert!(err.to_string().contains("spec.accessModes"), "{err}");
    }
}
