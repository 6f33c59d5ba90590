//! Structural schemas of CRD versions: pruning of unknown fields, defaulting and validation,
//! with the real API server's error texts.

use crate::error::{Cause, go_value};
use serde_json::{Map, Value};
use std::collections::BTreeMap;

/// A structural schema node (the subset of OpenAPI v3 that CRDs use).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Structural {
    /// `type`.
    pub type_: Option<String>,
    /// `properties`.
    pub properties: BTreeMap<String, Structural>,
    /// `items`.
    pub items: Option<Box<Structural>>,
    /// `additionalProperties` given as a schema.
    pub additional: Option<Box<Structural>>,
    /// `x-kubernetes-preserve-unknown-fields`, or `additionalProperties: true`.
    pub preserve_unknown: bool,
    /// `x-kubernetes-int-or-string`.
    pub int_or_string: bool,
    /// `x-kubernetes-embedded-resource`.
    pub embedded: bool,
    /// `nullable`.
    pub nullable: bool,
    /// `default`.
    pub default: Option<Value>,
    /// `required`.
    pub required: Vec<String>,
    /// `enum`.
    pub enum_: Vec<Value>,
    /// `minimum`, `exclusiveMinimum`.
    pub minimum: Option<(f64, bool)>,
    /// `maximum`, `exclusiveMaximum`.
    pub maximum: Option<(f64, bool)>,
    /// `minLength`.
    pub min_length: Option<u64>,
    /// `maxLength`.
    pub max_length: Option<u64>,
    /// `minItems`.
    pub min_items: Option<u64>,
    /// `maxItems`.
    pub max_items: Option<u64>,
}

impl Structural {
    /// Reads a schema from its JSON form. Unknown keywords are ignored.
    pub fn from_json(v: &Value) -> Structural {
        let mut s = Structural {
            type_: v.get("type").and_then(Value::as_str).map(str::to_string),
            preserve_unknown: v
                .get("x-kubernetes-preserve-unknown-fields")
                .and_then(Value::as_bool)
                .unwrap_or(false),
            int_or_string: v.get("x-kubernetes-int-or-string").and_then(Value::as_bool)
                == Some(true),
            embedded: v.get("x-kubernetes-embedded-resource").and_then(Value::as_bool)
                == Some(true),
            nullable: v.get("nullable").and_then(Value::as_bool) == Some(true),
            default: v.get("default").cloned(),
            required: v
                .get("required")
                .and_then(Value::as_array)
                .map(|a| a.iter().filter_map(Value::as_str).map(str::to_string).collect())
                .unwrap_or_default(),
            enum_: v.get("enum").and_then(Value::as_array).cloned().unwrap_or_default(),
            minimum: v
                .get("minimum")
                .and_then(Value::as_f64)
                .map(|m| (m, v.get("exclusiveMinimum").and_then(Value::as_bool) == Some(true))),
            maximum: v
                .get("maximum")
                .and_then(Value::as_f64)
                .map(|m| (m, v.get("exclusiveMaximum").and_then(Value::as_bool) == Some(true))),
            min_length: v.get("minLength").and_then(Value::as_u64),
            max_length: v.get("maxLength").and_then(Value::as_u64),
            min_items: v.get("minItems").and_then(Value::as_u64),
            max_items: v.get("maxItems").and_then(Value::as_u64),
            ..Default::default()
        };
        if let Some(props) = v.get("properties").and_then(Value::as_object) {
            for (k, p) in props {
                s.properties.insert(k.clone(), Structural::from_json(p));
            }
        }
        if let Some(items) = v.get("items") {
            s.items = Some(Box::new(Structural::from_json(items)));
        }
        match v.get("additionalProperties") {
            Some(Value::Bool(true)) => s.preserve_unknown = true,
            Some(ap @ Value::Object(_)) => s.additional = Some(Box::new(Structural::from_json(ap))),
            _ => {}
        }
        s
    }
}

/// The fields of `metadata` (ObjectMeta) that survive pruning.
const OBJECT_META: &[&str] = &[
    "name",
    "generateName",
    "namespace",
    "selfLink",
    "uid",
    "resourceVersion",
    "generation",
    "creationTimestamp",
    "deletionTimestamp",
    "deletionGracePeriodSeconds",
    "labels",
    "annotations",
    "ownerReferences",
    "finalizers",
    "managedFields",
];

fn join(path: &str, key: &str) -> String {
    if path.is_empty() { key.to_string() } else { format!("{path}.{key}") }
}

/// Removes fields the schema does not know; returns their paths (for strict field validation)
/// in kube-apiserver's order: unknown `metadata` fields first (`GetObjectMetaWithOptions`), then
/// the pruned paths sorted (`PruneWithOptions` sorts them), then unknown fields in the metadata
/// of embedded resources (`CoerceWithOptions`).
pub fn prune(obj: &mut Value, schema: &Structural) -> Vec<String> {
    let mut unknown = Vec::new();
    let mut pruned = Vec::new();
    let mut embedded = Vec::new();
    if let Value::Object(map) = obj {
        prune_meta(map, "", &mut unknown);
        for (k, v) in map.iter_mut() {
            if k == "apiVersion" || k == "kind" || k == "metadata" {
                continue;
            }
            if let Some(p) = schema.properties.get(k) {
                prune_node(v, p, k, &mut pruned, &mut embedded);
            }
        }
        if !schema.preserve_unknown {
            map.retain(|k, _| {
                let keep = k == "apiVersion"
                    || k == "kind"
                    || k == "metadata"
                    || schema.properties.contains_key(k);
                if !keep {
                    pruned.push(k.clone());
                }
                keep
            });
        }
    }
    pruned.sort();
    unknown.extend(pruned);
    unknown.extend(embedded);
    unknown
}

fn prune_meta(map: &mut Map<String, Value>, path: &str, unknown: &mut Vec<String>) {
    if let Some(Value::Object(meta)) = map.get_mut("metadata") {
        meta.retain(|k, _| {
            let keep = OBJECT_META.contains(&k.as_str());
            if !keep {
                unknown.push(join(&join(path, "metadata"), k));
            }
            keep
        });
    }
}

fn prune_node(
    v: &mut Value,
    s: &Structural,
    path: &str,
    unknown: &mut Vec<String>,
    embedded: &mut Vec<String>,
) {
    match v {
        Value::Object(map) => {
            if s.embedded {
                prune_meta(map, path, embedded);
            }
            if let Some(ap) = &s.additional {
                for (k, item) in map.iter_mut() {
                    prune_node(item, ap, &join(path, k), unknown, embedded);
                }
                return;
            }
            for (k, item) in map.iter_mut() {
                if let Some(p) = s.properties.get(k) {
                    prune_node(item, p, &join(path, k), unknown, embedded);
                }
            }
            if !s.preserve_unknown {
                map.retain(|k, _| {
                    let keep = s.properties.contains_key(k)
                        || (s.embedded && (k == "apiVersion" || k == "kind" || k == "metadata"));
                    if !keep {
                        unknown.push(join(path, k));
                    }
                    keep
                });
            }
        }
        Value::Array(items) => {
            if let Some(is) = &s.items {
                for (i, item) in items.iter_mut().enumerate() {
                    prune_node(item, is, &format!("{path}[{i}]"), unknown, embedded);
                }
            }
        }
        _ => {}
    }
}

/// Applies `default`s where fields are missing, and drops `null`s of non-nullable fields
/// (replacing them by the default, if there is one).
pub fn default(obj: &mut Value, s: &Structural) {
    match obj {
        Value::Object(map) => {
            for (k, p) in &s.properties {
                let missing = match map.get(k) {
                    None => true,
                    Some(Value::Null) => !p.nullable,
                    Some(_) => false,
                };
                if missing {
                    match &p.default {
                        Some(d) => {
                            map.insert(k.clone(), d.clone());
                        }
                        None => {
                            if map.get(k) == Some(&Value::Null) {
                                map.remove(k);
                            }
                        }
                    }
                }
                if let Some(child) = map.get_mut(k) {
                    default(child, p);
                }
            }
            if let Some(ap) = &s.additional {
                for child in map.values_mut() {
                    default(child, ap);
                }
            }
        }
        Value::Array(items) => {
            if let Some(is) = &s.items {
                for item in items {
                    default(item, is);
                }
            }
        }
        _ => {}
    }
}

fn type_name(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "boolean",
        Value::Number(n) if n.is_i64() || n.is_u64() => "integer",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

fn is_integer(v: &Value) -> bool {
    match v {
        Value::Number(n) => {
            n.is_i64() || n.is_u64() || n.as_f64().is_some_and(|f| f.fract() == 0.0)
        }
        _ => false,
    }
}

fn fmt_num(f: f64) -> String {
    if f.fract() == 0.0 && f.abs() < 1e15 { format!("{}", f as i64) } else { f.to_string() }
}

/// Validates an object (after pruning and defaulting) against its schema; `metadata` is
/// validated elsewhere.
pub fn validate(obj: &Value, s: &Structural) -> Vec<Cause> {
    let mut causes = Vec::new();
    if let Value::Object(map) = obj {
        for r in &s.required {
            if !map.contains_key(r) && r != "metadata" && r != "apiVersion" && r != "kind" {
                causes.push(Cause::required(r, ""));
            }
        }
        for (k, v) in map {
            if k == "metadata" || k == "apiVersion" || k == "kind" {
                continue;
            }
            if let Some(p) = s.properties.get(k) {
                validate_node(v, p, k, &mut causes);
            }
        }
    }
    causes
}

fn validate_node(v: &Value, s: &Structural, path: &str, causes: &mut Vec<Cause>) {
    if v.is_null() {
        if !s.nullable && s.type_.is_some() {
            causes.push(Cause {
                reason: "FieldValueTypeInvalid".into(),
                message: format!(
                    "Invalid value: \"null\": {path} in body must be of type {}: \"null\"",
                    s.type_.as_deref().unwrap_or("object")
                ),
                field: path.into(),
            });
        }
        return;
    }
    if s.int_or_string {
        if !(is_integer(v) || v.is_string()) {
            causes.push(Cause {
                reason: "FieldValueTypeInvalid".into(),
                message: format!(
                    "Invalid value: {:?}: {path} in body must be of type integer,string: {:?}",
                    type_name(v),
                    type_name(v)
                ),
                field: path.into(),
            });
            return;
        }
    } else if let Some(t) = &s.type_ {
        let ok = match t.as_str() {
            "object" => v.is_object(),
            "array" => v.is_array(),
            "string" => v.is_string(),
            "boolean" => v.is_boolean(),
            "integer" => is_integer(v),
            "number" => v.is_number(),
            _ => true,
        };
        if !ok {
            causes.push(Cause {
                reason: "FieldValueTypeInvalid".into(),
                message: format!(
                    "Invalid value: {:?}: {path} in body must be of type {t}: {:?}",
                    type_name(v),
                    type_name(v)
                ),
                field: path.into(),
            });
            return;
        }
    }
    if !s.enum_.is_empty() && !s.enum_.contains(v) {
        causes.push(Cause::not_supported(path, v, &s.enum_));
    }
    if let Some(f) = v.as_f64() {
        if let Some((min, excl)) = s.minimum
            && (f < min || (excl && f == min))
        {
            let rel = if excl { "greater than" } else { "greater than or equal to" };
            causes.push(Cause::invalid(
                path,
                v,
                &format!("{path} in body should be {rel} {}", fmt_num(min)),
            ));
        }
        if let Some((max, excl)) = s.maximum
            && (f > max || (excl && f == max))
        {
            let rel = if excl { "less than" } else { "less than or equal to" };
            causes.push(Cause::invalid(
                path,
                v,
                &format!("{path} in body should be {rel} {}", fmt_num(max)),
            ));
        }
    }
    if let Some(st) = v.as_str() {
        let len = st.chars().count() as u64;
        if let Some(max) = s.max_length.filter(|m| len > *m) {
            causes.push(Cause {
                reason: "FieldValueTooLong".into(),
                message: format!("Too long: may not be more than {max} bytes"),
                field: path.into(),
            });
        }
        if let Some(min) = s.min_length.filter(|m| len < *m) {
            causes.push(Cause::invalid(
                path,
                v,
                &format!("{path} in body should be at least {min} chars long"),
            ));
        }
    }
    match v {
        Value::Object(map) => {
            for r in &s.required {
                if !map.contains_key(r) {
                    causes.push(Cause::required(&join(path, r), ""));
                }
            }
            for (k, child) in map {
                if let Some(p) = s.properties.get(k) {
                    validate_node(child, p, &join(path, k), causes);
                } else if let Some(ap) = &s.additional {
                    validate_node(child, ap, &join(path, k), causes);
                }
            }
        }
        Value::Array(items) => {
            if let Some(max) = s.max_items.filter(|m| items.len() as u64 > *m) {
                causes.push(Cause::too_many(path, items.len(), max));
            }
            if let Some(min) = s.min_items.filter(|m| (items.len() as u64) < *m) {
                causes.push(Cause::invalid(
                    path,
                    v,
                    &format!("{path} in body should have at least {min} items"),
                ));
            }
            if let Some(is) = &s.items {
                for (i, item) in items.iter().enumerate() {
                    validate_node(item, is, &format!("{path}[{i}]"), causes);
                }
            }
        }
        _ => {}
    }
    let _ = go_value;
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn schema() -> Structural {
        Structural::from_json(&json!({
            "type": "object",
            "properties": {
                "spec": {"type": "object", "required": ["selector"], "properties": {
                    "replicas": {"type": "integer", "default": 1, "minimum": 0},
                    "selector": {"type": "object", "x-kubernetes-preserve-unknown-fields": true},
                    "mode": {"type": "string", "enum": ["A", "B"]},
                    "max": {"x-kubernetes-int-or-string": true},
                    "tags": {"type": "array", "items": {"type": "string"}, "maxItems": 2}
                }},
                "status": {"type": "object", "properties": {"replicas": {"type": "integer"}}}
            }
        }))
    }

    #[test]
    fn prune_default_validate() {
        let s = schema();
        let mut o = json!({"apiVersion": "x/v1", "kind": "X", "metadata": {"name": "a", "junk": 1},
            "spec": {"selector": {"any": {"thing": 1}}, "extra": true, "max": "10%"}, "top": 1,
            "a_top": 2});
        // Unknown metadata fields first, then the pruned paths sorted.
        let unknown = prune(&mut o, &s);
        assert_eq!(unknown, vec!["metadata.junk", "a_top", "spec.extra", "top"]);
        default(&mut o, &s);
        assert_eq!(o["spec"]["replicas"], json!(1));
        assert!(validate(&o, &s).is_empty());

        let bad =
            json!({"spec": {"replicas": "x", "mode": "C", "tags": ["a", "b", "c"], "max": true}});
        let msgs: Vec<String> =
            validate(&bad, &s).iter().map(|c| format!("{}: {}", c.field, c.message)).collect();
        assert_eq!(
            msgs,
            vec![
                "spec.selector: Required value",
                "spec.max: Invalid value: \"boolean\": spec.max in body must be of type integer,string: \"boolean\"",
                "spec.mode: Unsupported value: \"C\": supported values: \"A\", \"B\"",
                "spec.replicas: Invalid value: \"string\": spec.replicas in body must be of type integer: \"string\"",
                "spec.tags: Too many: 3: must have at most 2 items",
            ]
        );
        let neg = json!({"spec": {"selector": {}, "replicas": -1}});
        let c = validate(&neg, &s);
        assert_eq!(
            c[0].message,
            "Invalid value: -1: spec.replicas in body should be greater than or equal to 0"
        );
    }
}
