//! CustomResourceDefinitions: their own defaults and validation, and the resource definitions
//! they register.

use crate::error::{ApiError, Cause};
use crate::resources::{CellSource, Column, Origin, ResourceDef, ScalePaths, SmpKind};
use crate::schema::Structural;
use crate::util::{now_rfc3339, strings, version_priority};
use serde_json::{Value, json};
use std::sync::Arc;

fn str_at<'a>(v: &'a Value, ptr: &str) -> &'a str {
    v.pointer(ptr).and_then(Value::as_str).unwrap_or("")
}

/// Fills a CRD's defaults, validates it, and sets its status (names accepted, established).
pub fn prepare(crd: &mut Value, old: Option<&Value>) -> Result<(), ApiError> {
    let name = str_at(crd, "/metadata/name").to_string();
    let kind = str_at(crd, "/spec/names/kind").to_string();
    if let Some(names) = crd.pointer_mut("/spec/names").and_then(Value::as_object_mut) {
        if !names.contains_key("singular") {
            names.insert("singular".into(), json!(kind.to_ascii_lowercase()));
        }
        if !names.contains_key("listKind") && !kind.is_empty() {
            names.insert("listKind".into(), json!(format!("{kind}List")));
        }
    }
    if let Some(spec) = crd.get_mut("spec").and_then(Value::as_object_mut) {
        spec.entry("conversion").or_insert_with(|| json!({"strategy": "None"}));
    }
    let mut causes = Vec::new();
    let group = str_at(crd, "/spec/group").to_string();
    let plural = str_at(crd, "/spec/names/plural").to_string();
    if group.is_empty() {
        causes.push(Cause::required("spec.group", ""));
    }
    if plural.is_empty() {
        causes.push(Cause::required("spec.names.plural", ""));
    }
    if kind.is_empty() {
        causes.push(Cause::required("spec.names.kind", ""));
    }
    if !group.is_empty() && !plural.is_empty() && name != format!("{plural}.{group}") {
        causes.push(Cause::invalid(
            "metadata.name",
            &json!(name),
            "must be spec.names.plural+\".\"+spec.group",
        ));
    }
    let scope = str_at(crd, "/spec/scope");
    if scope != "Namespaced" && scope != "Cluster" {
        causes.push(Cause::not_supported(
            "spec.scope",
            &json!(scope),
            &[json!("Cluster"), json!("Namespaced")],
        ));
    }
    let versions =
        crd.pointer("/spec/versions").and_then(Value::as_array).cloned().unwrap_or_default();
    if versions.is_empty() {
        causes.push(Cause::invalid(
            "spec.versions",
            &json!([]),
            "must have exactly one version marked as storage version",
        ));
    } else {
        let storage = versions.iter().filter(|v| v.get("storage") == Some(&json!(true))).count();
        if storage != 1 {
            causes.push(Cause::invalid(
                "spec.versions",
                &Value::Array(versions.clone()),
                "must have exactly one version marked as storage version",
            ));
        }
    }
    if !causes.is_empty() {
        return Err(ApiError::invalid(
            "apiextensions.k8s.io",
            "CustomResourceDefinition",
            &name,
            causes,
        ));
    }
    let storage_version = versions
        .iter()
        .find(|v| v.get("storage") == Some(&json!(true)))
        .and_then(|v| v.get("name"))
        .cloned()
        .unwrap_or(Value::Null);
    let mut stored: Vec<Value> = old
        .and_then(|o| o.pointer("/status/storedVersions"))
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    if !stored.contains(&storage_version) {
        stored.push(storage_version);
    }
    let now = old
        .and_then(|o| o.pointer("/status/conditions/0/lastTransitionTime"))
        .and_then(Value::as_str)
        .map(str::to_string)
        .unwrap_or_else(now_rfc3339);
    let names = crd.pointer("/spec/names").cloned().unwrap_or(json!({}));
    if let Some(m) = crd.as_object_mut() {
        m.insert(
            "status".into(),
            json!({
                "conditions": [
                    {"type": "NamesAccepted", "status": "True", "lastTransitionTime": now,
                     "reason": "NoConflicts", "message": "no conflicts found"},
                    {"type": "Established", "status": "True", "lastTransitionTime": now,
                     "reason": "InitialNamesAccepted", "message": "the initial names have been accepted"}
                ],
                "acceptedNames": names,
                "storedVersions": stored,
            }),
        );
    }
    Ok(())
}

/// The resource definitions a CRD registers, one per served version.
pub fn defs(crd: &Value) -> Vec<ResourceDef> {
    let name = str_at(crd, "/metadata/name").to_string();
    let group = str_at(crd, "/spec/group").to_string();
    let names = crd.pointer("/spec/names").cloned().unwrap_or(json!({}));
    let kind = str_at(&names, "/kind").to_string();
    let plural = str_at(&names, "/plural").to_string();
    let singular = names
        .get("singular")
        .and_then(Value::as_str)
        .map(str::to_string)
        .unwrap_or_else(|| kind.to_ascii_lowercase());
    let list_kind = names
        .get("listKind")
        .and_then(Value::as_str)
        .map(str::to_string)
        .unwrap_or_else(|| format!("{kind}List"));
    let namespaced = str_at(crd, "/spec/scope") == "Namespaced";
    let versions =
        crd.pointer("/spec/versions").and_then(Value::as_array).cloned().unwrap_or_default();
    let storage_version = versions
        .iter()
        .find(|v| v.get("storage") == Some(&json!(true)))
        .and_then(|v| v.get("name"))
        .and_then(Value::as_str)
        .unwrap_or("")
        .to_string();
    let mut out = Vec::new();
    for v in &versions {
        if v.get("served") != Some(&json!(true)) {
            continue;
        }
        let version = str_at(v, "/name").to_string();
        let status = v.pointer("/subresources/status").is_some();
        let scale = v.pointer("/subresources/scale").map(|s| ScalePaths {
            spec_replicas: str_at(s, "/specReplicasPath").to_string(),
            status_replicas: str_at(s, "/statusReplicasPath").to_string(),
            label_selector: s.get("labelSelectorPath").and_then(Value::as_str).map(str::to_string),
        });
        let mut columns = Vec::new();
        if let Some(cols) = v.get("additionalPrinterColumns").and_then(Value::as_array) {
            for c in cols {
                columns.push(Column {
                    name: str_at(c, "/name").to_string(),
                    type_: str_at(c, "/type").to_string(),
                    format: str_at(c, "/format").to_string(),
                    description: str_at(c, "/description").to_string(),
                    priority: c.get("priority").and_then(Value::as_i64).unwrap_or(0),
                    source: CellSource::JsonPath(str_at(c, "/jsonPath").to_string()),
                });
            }
        } else {
            columns.push(Column {
                name: "Age".into(),
                type_: "date".into(),
                format: String::new(),
                description: String::new(),
                priority: 0,
                source: CellSource::JsonPath(".metadata.creationTimestamp".into()),
            });
        }
        let raw_schema = v.pointer("/schema/openAPIV3Schema");
        let schema = raw_schema.map(|s| Arc::new(Structural::from_json(s)));
        let openapi_schema = raw_schema.cloned().map(Arc::new);
        let openapi_digest = raw_schema
            .map_or(0, |s| crate::discovery::fnv1a(&serde_json::to_vec(s).unwrap_or_default()));
        let field_selectors = v
            .get("selectableFields")
            .and_then(Value::as_array)
            .map(|a| {
                a.iter()
                    .filter_map(|f| f.get("jsonPath").and_then(Value::as_str))
                    .map(|p| p.trim_start_matches('.').to_string())
                    .collect()
            })
            .unwrap_or_default();
        out.push(ResourceDef {
            group: group.clone(),
            version,
            storage_group: group.clone(),
            storage_version: storage_version.clone(),
            kind: kind.clone(),
            list_kind: list_kind.clone(),
            plural: plural.clone(),
            singular: singular.clone(),
            namespaced,
            verbs: [
                "delete",
                "deletecollection",
                "get",
                "list",
                "patch",
                "create",
                "update",
                "watch",
            ]
            .iter()
            .map(|s| s.to_string())
            .collect(),
            short_names: strings(names.get("shortNames")),
            categories: strings(names.get("categories")),
            status,
            scale,
            extra_subresources: Vec::new(),
            columns,
            smp: SmpKind::Unsupported,
            generation: true,
            unconditional_update: false,
            create_on_update: false,
            field_selectors,
            schema,
            openapi_schema,
            openapi_digest,
            origin: Origin::Crd(name.clone()),
        });
    }
    out.sort_by_key(|d| version_priority(&d.version));
    out
}
