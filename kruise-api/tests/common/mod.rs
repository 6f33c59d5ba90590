//! Helpers shared by the integration tests: locating the upstream reference data and
//! walking CRD schemas.

#![allow(dead_code)]

use std::collections::BTreeMap;
use std::path::PathBuf;

use serde_json::Value;

/// `../shared/upstream` relative to the workspace root.
pub fn upstream_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../shared/upstream")
}

/// Every upstream CRD, parsed, keyed by file name: openkruise/kruise's (`upstream/crds`) and
/// openkruise/rollouts' (`upstream/rollouts/crds`).
pub fn upstream_crds() -> BTreeMap<String, Value> {
    let mut out = BTreeMap::new();
    for dir in [upstream_dir().join("crds"), upstream_dir().join("rollouts/crds")] {
        let entries = std::fs::read_dir(&dir)
            .unwrap_or_else(|err| panic!("read upstream crds dir {}: {err}", dir.display()));
        for entry in entries {
            let path = entry.expect("dir entry").path();
            let text = std::fs::read_to_string(&path).expect("read crd");
            let value: Value = serde_yaml::from_str(&text).expect("parse crd yaml");
            out.insert(path.file_name().expect("name").to_string_lossy().into_owned(), value);
        }
    }
    out
}

/// One node of a flattened schema: its path and the facts the contract cares about.
#[derive(Clone, Debug, PartialEq)]
pub struct SchemaNode {
    pub path: String,
    pub type_: Option<String>,
    pub int_or_string: bool,
    pub preserve_unknown: bool,
    pub default: Option<Value>,
    pub required: Option<Value>,
}

/// Flattens an OpenAPI v3 schema into its property paths (`.spec.x`, `[]` for items, `{}`
/// for additionalProperties).
pub fn flatten_schema(schema: &Value) -> Vec<SchemaNode> {
    let mut out = Vec::new();
    walk(schema, String::new(), &mut out);
    out.sort_by(|a, b| a.path.cmp(&b.path));
    out
}

fn walk(schema: &Value, path: String, out: &mut Vec<SchemaNode>) {
    out.push(SchemaNode {
        path: path.clone(),
        type_: schema.get("type").and_then(Value::as_str).map(str::to_owned),
        int_or_string: schema.get("x-kubernetes-int-or-string") == Some(&Value::Bool(true)),
        preserve_unknown: schema.get("x-kubernetes-preserve-unknown-fields")
            == Some(&Value::Bool(true)),
        default: schema.get("default").cloned(),
        required: schema.get("required").filter(|r| r.is_array()).cloned(),
    });
    if let Some(Value::Object(props)) = schema.get("properties") {
        for (name, sub) in props {
            walk(sub, format!("{path}.{name}"), out);
        }
    }
    if let Some(items) = schema.get("items") {
        walk(items, format!("{path}[]"), out);
    }
    if let Some(additional @ Value::Object(_)) = schema.get("additionalProperties") {
        walk(additional, format!("{path}{{}}"), out);
    }
}
