//! Lossless conversion between v1alpha1 and the stored (hub) version v1beta1.
//!
//! Each kind with two versions implements [`HubConvertible`] on its v1alpha1 type: a plain
//! field mapping that follows upstream (including the annotations upstream uses to carry
//! fields that exist in one version only). A field mapping alone cannot be exact for every
//! input: for example an absent field and its default may map to the same value. The
//! functions [`to_hub`] and [`from_hub`] close that gap. After mapping they map back, and if
//! the result differs from the input they record the difference in the annotation
//! [`RESIDUE_ANNOTATION`] on the converted object. Converting back restores each recorded
//! field, but only where the field still holds the value it had at conversion time, so an
//! edit made in the other version always wins over the record.

mod advancedcronjob;
mod batchrelease;
mod broadcastjob;
mod cloneset;
mod containerrecreaterequest;
mod daemonset;
mod imagelistpulljob;
mod imagepulljob;
mod nodeimage;
mod persistentpodstate;
mod podunavailablebudget;
mod resourcedistribution;
mod rollout;
mod sidecarset;
mod statefulset;
mod uniteddeployment;
mod workloadspread;

use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::{Map, Value};

/// Annotation holding what a field mapping could not express, so that converting back gives
/// the original object.
pub const RESIDUE_ANNOTATION: &str = "conversion.kruise-rs.io/residue";

/// A version that converts to and from a hub version with a plain field mapping.
pub trait HubConvertible: Sized + Serialize + DeserializeOwned {
    /// The hub (stored) version of the same kind.
    type Hub: Serialize + DeserializeOwned;

    /// Maps this object onto the hub version, field by field.
    fn map_to_hub(self) -> Self::Hub;

    /// Maps a hub object onto this version, field by field.
    fn map_from_hub(hub: Self::Hub) -> Self;
}

/// Why a conversion failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ConversionError {
    /// The object could not be encoded to JSON.
    #[error("encoding {kind} for conversion: {source}")]
    Encode {
        /// The kind being converted.
        kind: &'static str,
        /// The underlying error.
        source: serde_json::Error,
    },
    /// The converted JSON does not fit the target type.
    #[error("decoding converted {kind} at `{path}`: {message}")]
    Decode {
        /// The kind being converted.
        kind: &'static str,
        /// The field path that failed.
        path: String,
        /// What was wrong.
        message: String,
    },
    /// The requested version does not exist for this kind.
    #[error("{kind} cannot be converted to {api_version}")]
    UnsupportedVersion {
        /// The kind being converted.
        kind: String,
        /// The requested apiVersion.
        api_version: String,
    },
}

/// Converts an object to its hub version without losing anything.
pub fn to_hub<T: HubConvertible>(object: T) -> Result<T::Hub, ConversionError> {
    convert(object, T::map_to_hub, T::map_from_hub)
}

/// Converts a hub object to the version `T` without losing anything.
pub fn from_hub<T: HubConvertible>(hub: T::Hub) -> Result<T, ConversionError> {
    convert(hub, T::map_from_hub, T::map_to_hub)
}

fn kind_name<T>() -> &'static str {
    std::any::type_name::<T>()
}

fn encode<T: Serialize>(value: &T) -> Result<Value, ConversionError> {
    serde_json::to_value(value)
        .map_err(|source| ConversionError::Encode { kind: kind_name::<T>(), source })
}

fn decode<T: DeserializeOwned>(value: Value) -> Result<T, ConversionError> {
    serde_path_to_error::deserialize(value).map_err(|err| ConversionError::Decode {
        kind: kind_name::<T>(),
        path: err.path().to_string(),
        message: err.into_inner().to_string(),
    })
}

fn convert<S, T>(
    source: S,
    forward: impl Fn(S) -> T,
    back: impl Fn(T) -> S,
) -> Result<T, ConversionError>
where
    S: Serialize + DeserializeOwned,
    T: Serialize + DeserializeOwned,
{
    let mut source_json = encode(&source)?;
    let incoming = take_residue(&mut source_json);
    let source: S = decode(source_json.clone())?;
    // Normalise: what the source type itself writes, so that the comparison below only sees
    // differences that the mapping introduced.
    let source_json = encode(&source)?;

    let mut target_json = encode(&forward(source))?;
    if let Some(entries) = incoming {
        let mut restored = target_json.clone();
        for entry in &entries {
            entry.restore(&mut restored);
        }
        // A record that no longer fits the target type is dropped, not forced in.
        if decode::<T>(restored.clone()).is_ok() {
            target_json = restored;
        }
    }
    let target: T = decode(target_json)?;

    let round_trip = encode(&back(decode::<T>(encode(&target)?)?))?;
    let mut residue = Vec::new();
    diff(&round_trip, &source_json, &mut Vec::new(), &mut residue);
    let mut target_json = encode(&target)?;
    if !residue.is_empty() {
        put_residue(&mut target_json, &residue)?;
    }
    decode(target_json)
}

/// One field the mapping could not carry: at `path`, converting back yields `from`, and the
/// original held `to` (`None` means absent).
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
struct ResidueEntry {
    path: Vec<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    from: Option<Value>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    to: Option<Value>,
}

impl ResidueEntry {
    fn restore(&self, root: &mut Value) {
        let Some((last, parents)) = self.path.split_last() else {
            return;
        };
        if lookup(root, &self.path) != self.from.as_ref() {
            return;
        }
        let mut node = root;
        for segment in parents {
            let Value::Object(map) = node else { return };
            node = map.entry(segment.clone()).or_insert_with(|| Value::Object(Map::new()));
        }
        let Value::Object(map) = node else { return };
        match &self.to {
            Some(value) => {
                map.insert(last.clone(), value.clone());
            }
            None => {
                map.remove(last);
            }
        }
    }
}

fn lookup<'a>(root: &'a Value, path: &[String]) -> Option<&'a Value> {
    let mut node = root;
    for segment in path {
        node = node.as_object()?.get(segment)?;
    }
    match node {
        Value::Null => None,
        other => Some(other),
    }
}

fn diff(actual: &Value, wanted: &Value, path: &mut Vec<String>, out: &mut Vec<ResidueEntry>) {
    if actual == wanted {
        return;
    }
    if let (Value::Object(a), Value::Object(w)) = (actual, wanted) {
        let mut keys: Vec<&String> = a.keys().chain(w.keys()).collect();
        keys.sort();
        keys.dedup();
        for key in keys {
            let a_value = a.get(key).filter(|v| !v.is_null());
            let w_value = w.get(key).filter(|v| !v.is_null());
            path.push(key.clone());
            match (a_value, w_value) {
                (Some(a_value), Some(w_value)) => diff(a_value, w_value, path, out),
                (None, None) => {}
                (a_value, w_value) => out.push(ResidueEntry {
                    path: path.clone(),
                    from: a_value.cloned(),
                    to: w_value.cloned(),
                }),
            }
            path.pop();
        }
        return;
    }
    out.push(ResidueEntry {
        path: path.clone(),
        from: Some(actual.clone()).filter(|v| !v.is_null()),
        to: Some(wanted.clone()).filter(|v| !v.is_null()),
    });
}

/// Removes and parses the residue annotation. A value that does not parse is left in place:
/// it is the user's data, not ours to drop.
fn take_residue(object: &mut Value) -> Option<Vec<ResidueEntry>> {
    let annotations = object.get_mut("metadata")?.get_mut("annotations")?.as_object_mut()?;
    let raw = annotations.get(RESIDUE_ANNOTATION)?.as_str()?;
    let entries: Vec<ResidueEntry> = serde_json::from_str(raw).ok()?;
    annotations.remove(RESIDUE_ANNOTATION);
    if annotations.is_empty()
        && let Some(metadata) = object.get_mut("metadata").and_then(Value::as_object_mut)
    {
        metadata.remove("annotations");
    }
    Some(entries)
}

fn put_residue(object: &mut Value, residue: &[ResidueEntry]) -> Result<(), ConversionError> {
    let encoded = serde_json::to_string(residue)
        .map_err(|source| ConversionError::Encode { kind: "residue", source })?;
    let Some(root) = object.as_object_mut() else {
        return Ok(());
    };
    let metadata = root.entry("metadata").or_insert_with(|| Value::Object(Map::new()));
    let Some(metadata) = metadata.as_object_mut() else {
        return Ok(());
    };
    let annotations = metadata.entry("annotations").or_insert_with(|| Value::Object(Map::new()));
    if let Some(annotations) = annotations.as_object_mut() {
        annotations.insert(RESIDUE_ANNOTATION.to_owned(), Value::String(encoded));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn residue_is_not_restored_over_an_edit() {
        let entry = ResidueEntry {
            path: vec!["spec".into(), "type".into()],
            from: Some(json!("ReCreate")),
            to: None,
        };
        let mut untouched = json!({"spec": {"type": "ReCreate"}});
        entry.restore(&mut untouched);
        assert_eq!(untouched, json!({"spec": {}}));

        let mut edited = json!({"spec": {"type": "InPlaceOnly"}});
        entry.restore(&mut edited);
        assert_eq!(edited, json!({"spec": {"type": "InPlaceOnly"}}));
    }

    #[test]
    fn diff_records_added_removed_and_changed_fields() {
        let mut out = Vec::new();
        diff(
            &json!({"a": 1, "b": {"c": 2}, "d": [1]}),
            &json!({"a": 1, "b": {"c": 3}, "e": true}),
            &mut Vec::new(),
            &mut out,
        );
        let paths: Vec<String> = out.iter().map(|e| e.path.join(".")).collect();
        assert_eq!(paths, ["b.c", "d", "e"]);
    }
}
