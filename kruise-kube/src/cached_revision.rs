//! A compact form of a ControllerRevision for the shared cache.
//!
//! A revision's `data` (a workload's template, or a patch of it) decoded as a
//! `serde_json::Value` takes four to five times its text: every object is a map of
//! separately allocated strings and values. Controllers read a revision's metadata to find
//! and adopt it, and its data only when they plan for its owner. [`CachedRevision`] keeps the
//! metadata decoded (without `managedFields`) and the data as the JSON text it arrived as;
//! [`CachedRevision::to_revision`] gives back the rest of the ControllerRevision unchanged.

use std::borrow::Cow;

use k8s_openapi::api::apps::v1::ControllerRevision;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use k8s_openapi::apimachinery::pkg::runtime::RawExtension;
use kube::Resource;
use serde::{Deserialize, Deserializer};

use crate::cached_pod::WireMeta;

/// A ControllerRevision as the cache keeps it: metadata decoded, the data as JSON text.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct CachedRevision {
    /// The revision's metadata.
    pub metadata: ObjectMeta,
    /// Its `revision` number.
    pub revision: Option<i64>,
    /// `data` as JSON text (valid JSON: checked when it arrived); `None` when it had none
    /// (or `null`).
    data: Option<Box<str>>,
}

impl CachedRevision {
    /// The compact form of `revision`.
    pub fn from_revision(revision: ControllerRevision) -> Self {
        let ControllerRevision { mut metadata, data, revision } = revision;
        metadata.managed_fields = None;
        // Serialising a `serde_json::Value` cannot fail: its map keys are strings.
        let data = Some(data.0)
            .filter(|d| !d.is_null())
            .and_then(|d| serde_json::to_string(&d).ok())
            .map(String::into_boxed_str);
        Self { metadata, revision, data }
    }

    /// The whole ControllerRevision again (its data decoded).
    pub fn to_revision(&self) -> ControllerRevision {
        // The text is valid JSON (`RawValue` checked it on arrival, or it was written from a
        // `Value`), and every valid JSON text decodes as a `Value`.
        let data = self.data.as_deref().and_then(|text| {
            serde_json::from_str(text)
                .inspect_err(|err| {
                    tracing::error!(%err, revision = ?self.metadata.name, "a cached revision's data does not decode");
                })
                .ok()
        });
        ControllerRevision {
            metadata: self.metadata.clone(),
            data: RawExtension(data.unwrap_or_default()),
            revision: self.revision,
        }
    }
}

/// A ControllerRevision as it arrives: the data kept as text, `managedFields` skipped.
#[derive(Deserialize)]
struct WireRevision {
    #[serde(default)]
    metadata: WireMeta,
    #[serde(default)]
    revision: Option<i64>,
    #[serde(default)]
    data: Option<Box<serde_json::value::RawValue>>,
}

impl<'de> Deserialize<'de> for CachedRevision {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let wire = WireRevision::deserialize(deserializer)?;
        // A `null` data is no data, as when the ControllerRevision is decoded.
        let data = wire.data.filter(|raw| raw.get() != "null").map(|raw| raw.get().into());
        Ok(Self { metadata: wire.metadata.into(), revision: wire.revision, data })
    }
}

impl Resource for CachedRevision {
    type DynamicType = ();
    type Scope = k8s_openapi::NamespaceResourceScope;

    fn kind(_: &()) -> Cow<'_, str> {
        ControllerRevision::kind(&())
    }

    fn group(_: &()) -> Cow<'_, str> {
        ControllerRevision::group(&())
    }

    fn version(_: &()) -> Cow<'_, str> {
        ControllerRevision::version(&())
    }

    fn plural(_: &()) -> Cow<'_, str> {
        ControllerRevision::plural(&())
    }

    fn meta(&self) -> &ObjectMeta {
        &self.metadata
    }

    fn meta_mut(&mut self) -> &mut ObjectMeta {
        &mut self.metadata
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn revision() -> serde_json::Value {
        serde_json::json!({
            "apiVersion": "apps/v1", "kind": "ControllerRevision",
            "metadata": {
                "name": "web-7d9f", "namespace": "prod", "uid": "r-1", "resourceVersion": "9",
                "labels": {"controller-revision-hash": "7d9f"},
                "ownerReferences": [{"apiVersion": "apps.kruise.io/v1alpha1", "kind": "CloneSet",
                    "name": "web", "uid": "cs-1", "controller": true}],
                "managedFields": [{"manager": "kruise-manager", "operation": "Update"}]
            },
            "revision": 3,
            "data": {"spec": {"template": {"$patch": "replace", "metadata": {"labels": {"app": "web"}},
                "spec": {"containers": [{"name": "main", "image": "nginx:1.25", "args": ["-v", "2"]}]}}}}
        })
    }

    #[test]
    fn gives_back_the_revision_without_managed_fields() {
        let cached: CachedRevision = serde_json::from_value(revision()).expect("decodes");
        let mut whole: ControllerRevision = serde_json::from_value(revision()).expect("revision");
        assert!(whole.metadata.managed_fields.take().is_some());
        assert_eq!(cached.to_revision(), whole);
        assert_eq!(CachedRevision::from_revision(whole.clone()).to_revision(), whole);
        assert_eq!(CachedRevision::from_revision(whole), cached, "one form, however it came");
    }

    #[test]
    fn null_or_missing_data_is_no_data() {
        for data in [serde_json::Value::Null, serde_json::json!("absent")] {
            let mut json = revision();
            if data.is_null() {
                json["data"] = data;
            } else {
                json.as_object_mut().expect("object").remove("data");
            }
            let cached: CachedRevision = serde_json::from_value(json).expect("decodes");
            assert_eq!(cached.to_revision().data, RawExtension(serde_json::Value::Null));
        }
    }
}

#[cfg(test)]
mod props {
    use super::*;
    use proptest::prelude::*;
    use serde_json::Value;

    /// Any JSON but floats (which do not always come back as the same number).
    fn value() -> impl Strategy<Value = Value> {
        let leaf = prop_oneof![
            Just(Value::Null),
            any::<bool>().prop_map(Value::from),
            any::<i64>().prop_map(Value::from),
            any::<String>().prop_map(Value::from),
        ];
        leaf.prop_recursive(3, 24, 4, |inner| {
            prop_oneof![
                proptest::collection::vec(inner.clone(), 0..4).prop_map(Value::from),
                proptest::collection::btree_map(any::<String>(), inner, 0..4)
                    .prop_map(|m| Value::Object(m.into_iter().collect())),
            ]
        })
    }

    proptest! {
        /// Whatever its data, a revision comes back as it went in, by either way into the
        /// cache.
        #[test]
        fn a_revision_comes_back_as_it_went_in(data in value(), number in any::<Option<i64>>()) {
            let revision = ControllerRevision {
                metadata: ObjectMeta { name: Some("r".into()), ..ObjectMeta::default() },
                data: RawExtension(data),
                revision: number,
            };
            let cached = CachedRevision::from_revision(revision.clone());
            prop_assert_eq!(cached.to_revision(), revision.clone());
            let text = serde_json::to_string(&revision).expect("encodes");
            let decoded: CachedRevision = serde_json::from_str(&text).expect("decodes");
            prop_assert_eq!(decoded.to_revision(), revision);
        }
    }
}
