//! Built-in resources served by one API group but stored as another's, as the real server
//! does with its internal types: `events.k8s.io/v1` Events are core `v1` Events, one object
//! read and written through either API.
//!
//! Such a resource's [`ResourceDef`] keys the storage table of the resource it aliases
//! (`storage_group`, `storage_version`). Its objects are converted, by the pure functions
//! here, wherever a CRD's versions are converted (see [`crate::conversion`]): from storage on
//! reads and watch events, to storage on writes. Field selectors are renamed to the stored
//! fields before they are evaluated on stored objects, and tables are computed from the
//! stored form, so that both APIs print the same columns, as the real server's shared
//! printers do.
//!
//! A conversion renames top-level fields; the others (`metadata`, and the fields both
//! versions share) are copied, and absent fields stay absent. A top-level field bearing one
//! of the other version's renamed names (`message` sent to `events.k8s.io`) is unknown to the
//! source version and dropped, as decoding drops unknown fields.

use crate::resources::{Origin, ResourceDef};
use serde_json::{Map, Value};

/// One built-in resource served in a group/version other than the one it is stored in.
#[derive(Debug, PartialEq, Eq)]
pub struct Alias {
    /// The served group.
    pub group: &'static str,
    /// The served version.
    pub version: &'static str,
    /// The plural, the same in both groups.
    pub plural: &'static str,
    /// The group objects are stored under.
    pub storage_group: &'static str,
    /// The version objects are stored in.
    pub storage_version: &'static str,
    /// Top-level fields named otherwise in storage: (served name, stored name).
    pub renames: &'static [(&'static str, &'static str)],
    /// Selectable fields: (served label, stored label), besides `metadata.name` and
    /// `metadata.namespace`.
    pub field_labels: &'static [(&'static str, &'static str)],
}

/// `events.k8s.io/v1` Event <-> core `v1` Event (Kubernetes' `pkg/apis/events/v1`
/// conversion and field label conversion). `eventTime`, `action`, `reason`, `type`,
/// `related`, `reportingInstance`, `series` and `metadata` keep their names.
const EVENTS: Alias = Alias {
    group: "events.k8s.io",
    version: "v1",
    plural: "events",
    storage_group: "",
    storage_version: "v1",
    renames: &[
        ("regarding", "involvedObject"),
        ("note", "message"),
        ("reportingController", "reportingComponent"),
        ("deprecatedSource", "source"),
        ("deprecatedFirstTimestamp", "firstTimestamp"),
        ("deprecatedLastTimestamp", "lastTimestamp"),
        ("deprecatedCount", "count"),
    ],
    field_labels: &[
        ("reason", "reason"),
        ("regarding.kind", "involvedObject.kind"),
        ("regarding.namespace", "involvedObject.namespace"),
        ("regarding.name", "involvedObject.name"),
        ("regarding.uid", "involvedObject.uid"),
        ("regarding.apiVersion", "involvedObject.apiVersion"),
        ("regarding.resourceVersion", "involvedObject.resourceVersion"),
        ("regarding.fieldPath", "involvedObject.fieldPath"),
        ("reportingController", "reportingComponent"),
        ("source", "source"),
        ("type", "type"),
    ],
};

/// Every aliased built-in.
pub const ALIASES: &[Alias] = &[EVENTS];

/// The alias serving `group/version/plural`, if that built-in is stored as another.
pub fn alias(group: &str, version: &str, plural: &str) -> Option<&'static Alias> {
    ALIASES.iter().find(|a| a.group == group && a.version == version && a.plural == plural)
}

/// The alias `def` serves, if it is a built-in stored as another.
pub fn of(def: &ResourceDef) -> Option<&'static Alias> {
    if def.origin != Origin::BuiltIn {
        return None;
    }
    alias(&def.group, &def.version, &def.plural)
}

fn api_version(group: &str, version: &str) -> String {
    if group.is_empty() { version.to_string() } else { format!("{group}/{version}") }
}

/// `obj` with its top-level fields renamed by `(from, to)` pairs and labelled `av`.
fn rename<'a>(
    obj: &Value,
    pairs: impl Iterator<Item = (&'a str, &'a str)> + Clone,
    av: String,
) -> Value {
    let Some(src) = obj.as_object() else { return obj.clone() };
    let mut out = Map::new();
    for (k, v) in src {
        if let Some((_, to)) = pairs.clone().find(|(from, _)| from == k) {
            out.insert(to.to_string(), v.clone());
        } else if !pairs.clone().any(|(_, to)| to == k) {
            out.insert(k.clone(), v.clone());
        }
    }
    out.insert("apiVersion".into(), Value::String(av));
    Value::Object(out)
}

impl Alias {
    /// The stored form of an object served by this alias (content in the served version;
    /// its `apiVersion` is ignored). Labelled with the storage apiVersion.
    pub fn to_storage(&self, obj: &Value) -> Value {
        let av = api_version(self.storage_group, self.storage_version);
        rename(obj, self.renames.iter().copied(), av)
    }

    /// A stored object as this alias serves it (its `apiVersion` is ignored). Labelled with
    /// the served apiVersion, and encoded as that version's Go type encodes it.
    pub fn to_served(&self, obj: &Value) -> Value {
        let av = api_version(self.group, self.version);
        let mut served =
            rename(obj, self.renames.iter().map(|(served, stored)| (*stored, *served)), av);
        crate::go_json::normalize_object(&mut served);
        served
    }

    /// The stored field a served selectable field reads, if it is selectable.
    pub fn stored_field(&self, served: &str) -> Option<&'static str> {
        match served {
            "metadata.name" => Some("metadata.name"),
            "metadata.namespace" => Some("metadata.namespace"),
            _ => self.field_labels.iter().find(|(s, _)| *s == served).map(|(_, stored)| *stored),
        }
    }

    /// The served selectable fields (besides `metadata.name` and `metadata.namespace`).
    pub fn served_fields(&self) -> Vec<String> {
        self.field_labels.iter().map(|(s, _)| s.to_string()).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn core_event() -> Value {
        json!({
            "apiVersion": "v1",
            "kind": "Event",
            "metadata": {"name": "e1", "namespace": "default", "uid": "u1",
                "resourceVersion": "7", "creationTimestamp": "2025-01-01T00:00:00Z",
                "labels": {"a": "b"}},
            "involvedObject": {"kind": "Pod", "name": "p", "namespace": "default", "uid": "pu",
                "apiVersion": "v1", "fieldPath": "spec.containers{c}"},
            "related": {"kind": "Node", "name": "n1"},
            "message": "pulled",
            "reason": "Pulled",
            "type": "Normal",
            "action": "Pull",
            "eventTime": "2025-01-01T00:00:00.123456Z",
            "reportingComponent": "kubelet",
            "reportingInstance": "n1",
            "source": {"component": "kubelet", "host": "n1"},
            "firstTimestamp": "2025-01-01T00:00:00Z",
            "lastTimestamp": "2025-01-01T00:01:00Z",
            "count": 3,
            "series": {"count": 2, "lastObservedTime": "2025-01-01T00:01:00.000001Z"},
        })
    }

    #[test]
    fn core_to_events_renames_every_mapped_field() {
        let e = EVENTS.to_served(&core_event());
        let want = json!({
            "apiVersion": "events.k8s.io/v1",
            "kind": "Event",
            "metadata": core_event()["metadata"],
            "regarding": core_event()["involvedObject"],
            "related": {"kind": "Node", "name": "n1"},
            "note": "pulled",
            "reason": "Pulled",
            "type": "Normal",
            "action": "Pull",
            "eventTime": "2025-01-01T00:00:00.123456Z",
            "reportingController": "kubelet",
            "reportingInstance": "n1",
            "deprecatedSource": {"component": "kubelet", "host": "n1"},
            "deprecatedFirstTimestamp": "2025-01-01T00:00:00Z",
            "deprecatedLastTimestamp": "2025-01-01T00:01:00Z",
            "deprecatedCount": 3,
            "series": {"count": 2, "lastObservedTime": "2025-01-01T00:01:00.000001Z"},
        });
        assert_eq!(e, want);
    }

    #[test]
    fn round_trips_are_identity() {
        let core = core_event();
        assert_eq!(EVENTS.to_storage(&EVENTS.to_served(&core)), core);
        let served = EVENTS.to_served(&core);
        assert_eq!(EVENTS.to_served(&EVENTS.to_storage(&served)), served);
    }

    #[test]
    fn absent_fields_stay_absent_and_unknown_names_are_dropped() {
        let e = json!({"metadata": {"name": "x"}, "note": "n", "message": "core name"});
        let core = EVENTS.to_storage(&e);
        assert_eq!(core, json!({"apiVersion": "v1", "metadata": {"name": "x"}, "message": "n"}));
        let back = EVENTS.to_served(&json!({"involvedObject": {}, "note": "stray"}));
        assert_eq!(back, json!({"apiVersion": "events.k8s.io/v1", "regarding": {}}));
    }

    #[test]
    fn field_labels_map_to_stored_fields() {
        assert_eq!(EVENTS.stored_field("regarding.name"), Some("involvedObject.name"));
        assert_eq!(EVENTS.stored_field("reportingController"), Some("reportingComponent"));
        assert_eq!(EVENTS.stored_field("metadata.name"), Some("metadata.name"));
        assert_eq!(EVENTS.stored_field("involvedObject.name"), None);
        assert_eq!(EVENTS.stored_field("note"), None);
        assert_eq!(alias("events.k8s.io", "v1", "events"), Some(&EVENTS));
        assert_eq!(alias("", "v1", "events"), None);
    }
}
