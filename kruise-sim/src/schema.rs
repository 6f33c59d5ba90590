//! Structural schemas of CRD versions: pruning of unknown fields, defaulting and validation,
//! with the real API server's error texts.

use crate::error::{Cause, go_value};
use cel_interpreter::{Context, Program, Value as CelValue};
use regex::Regex;
use serde_json::{Map, Value};
use std::collections::BTreeMap;
use std::sync::{Arc, LazyLock};

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
    /// `pattern`, compiled once and shared by clones.
    pub pattern: Option<Arc<Pattern>>,
    /// `format`, as written (`date-time`).
    pub format: Option<Arc<str>>,
    /// `x-kubernetes-list-type`.
    pub list_type: Option<ListType>,
    /// `x-kubernetes-list-map-keys`.
    pub list_map_keys: Arc<[String]>,
    /// `x-kubernetes-map-type: atomic`: CEL transition rules below see no `oldSelf`.
    pub map_atomic: bool,
    /// `x-kubernetes-validations`, compiled once and shared by clones.
    pub rules: Arc<[Rule]>,
    /// Whether this node or one below it has `x-kubernetes-validations`.
    pub has_rules: bool,
    /// Whether this node or one below it is a list of type `set` or `map`.
    pub has_lists: bool,
}

/// `x-kubernetes-list-type`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ListType {
    /// `atomic` (the default): no uniqueness.
    Atomic,
    /// `set`: items are unique.
    Set,
    /// `map`: the tuples of `x-kubernetes-list-map-keys` are unique.
    Map,
}

/// A `pattern`, with the regular expression kube-apiserver would match (Go's RE2, in which
/// `\d`, `\w` and `\s` are ASCII classes).
#[derive(Debug)]
pub struct Pattern {
    source: String,
    compiled: Result<Regex, String>,
}

impl PartialEq for Pattern {
    fn eq(&self, other: &Self) -> bool {
        self.source == other.source
    }
}

impl Pattern {
    fn new(source: &str) -> Self {
        let compiled = Regex::new(&go_regex(source))
            .or_else(|_| Regex::new(source))
            .map_err(|e| e.to_string());
        Pattern { source: source.to_string(), compiled }
    }
}

/// Rewrites Go RE2's ASCII-only Perl classes (`\d`, `\w`, `\s` and their negations) as
/// explicit classes, since the regex crate reads them as Unicode classes. Negated classes inside
/// a bracket expression are left alone (the regex crate's reading is then Unicode's).
fn go_regex(p: &str) -> String {
    let mut out = String::with_capacity(p.len() + 16);
    let mut in_class = false;
    let mut chars = p.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '\\' => {
                let Some(n) = chars.next() else {
                    out.push('\\');
                    break;
                };
                let ascii = match n {
                    'd' => Some(("0-9", false)),
                    'D' => Some(("0-9", true)),
                    'w' => Some(("0-9A-Za-z_", false)),
                    'W' => Some(("0-9A-Za-z_", true)),
                    's' => Some(("\\t\\n\\f\\r ", false)),
                    'S' => Some(("\\t\\n\\f\\r ", true)),
                    _ => None,
                };
                match ascii {
                    Some((set, false)) if in_class => out.push_str(set),
                    Some((set, negated)) if !in_class => {
                        out.push('[');
                        if negated {
                            out.push('^');
                        }
                        out.push_str(set);
                        out.push(']');
                    }
                    _ => {
                        out.push('\\');
                        out.push(n);
                    }
                }
            }
            '[' if !in_class => {
                in_class = true;
                out.push('[');
                if chars.peek() == Some(&'^') {
                    out.push('^');
                    chars.next();
                }
                // A `]` first in a class is a literal.
                if chars.peek() == Some(&']') {
                    out.push(']');
                    chars.next();
                }
            }
            '[' if chars.peek() == Some(&':') => {
                // `[:alpha:]` inside a class: copy it through its `:]`.
                out.push('[');
                let mut prev = '[';
                for n in chars.by_ref() {
                    out.push(n);
                    if prev == ':' && n == ']' {
                        break;
                    }
                    prev = n;
                }
            }
            ']' if in_class => {
                in_class = false;
                out.push(']');
            }
            _ => out.push(c),
        }
    }
    out
}

/// One `x-kubernetes-validations` rule, compiled once.
///
/// kube-apiserver compiles (and type-checks) every rule when the CRD is written and refuses
/// the CRD when one does not compile. kruise-sim accepts the CRD; a rule that cel-interpreter
/// cannot compile (it lacks parts of cel-go's syntax and Kubernetes' libraries) is not judged.
#[derive(Debug)]
pub struct Rule {
    rule: String,
    message: String,
    message_expression_source: String,
    message_expression: Option<Program>,
    field_path: String,
    reason: Option<String>,
    program: Result<Program, String>,
    uses_old_self: bool,
}

impl PartialEq for Rule {
    fn eq(&self, other: &Self) -> bool {
        self.rule == other.rule
            && self.message == other.message
            && self.message_expression_source == other.message_expression_source
            && self.field_path == other.field_path
            && self.reason == other.reason
    }
}

/// Compiles a CEL expression. A panic inside the CEL library becomes an error.
fn compile_cel(source: &str) -> Result<Program, String> {
    std::panic::catch_unwind(|| Program::compile(source).map_err(|e| e.to_string()))
        .unwrap_or_else(|_| Err(format!("the CEL library failed on {source:?}")))
}

/// Runs a compiled CEL program. A panic inside the CEL library becomes an error.
/// Runs a rule. `Err(Some(_))` is an error kube-apiserver reports too (a missing key);
/// `Err(None)` one that may be cel-interpreter's own limit (a function of Kubernetes' CEL
/// libraries it lacks, a type it reads otherwise, a panic): the rule is then not judged,
/// rather than refusing an object kube-apiserver accepts.
fn run_cel(program: &Program, context: &Context<'_>) -> Result<CelValue, Option<String>> {
    std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        program.execute(context).map_err(|e| match e {
            cel_interpreter::ExecutionError::NoSuchKey(_) => Some(e.to_string()),
            _ => None,
        })
    }))
    .unwrap_or(Err(None))
}

impl Rule {
    fn from_json(v: &Value) -> Rule {
        let s = |k: &str| v.get(k).and_then(Value::as_str).unwrap_or_default();
        let rule = s("rule").trim().to_string();
        let program = compile_cel(&rule);
        let uses_old_self = program.as_ref().is_ok_and(|p| p.references().has_variable("oldSelf"));
        let message_expression = Some(s("messageExpression").trim())
            .filter(|m| !m.is_empty())
            .and_then(|m| compile_cel(m).ok());
        Rule {
            message: s("message").trim().to_string(),
            message_expression_source: s("messageExpression").trim().to_string(),
            message_expression,
            field_path: normalize_field_path(s("fieldPath")),
            reason: v.get("reason").and_then(Value::as_str).map(str::to_string),
            program,
            uses_old_self,
            rule,
        }
    }

    /// kube-apiserver's `ruleErrorString`: the message, else the rule.
    fn error_string(&self) -> &str {
        if self.message.is_empty() { &self.rule } else { &self.message }
    }
}

/// A rule's `fieldPath` (`.spec.a`, `['b']`) as kube-apiserver prints it after the node's
/// path: `spec.a`, `b`.
fn normalize_field_path(p: &str) -> String {
    let mut parts: Vec<String> = Vec::new();
    let mut rest = p.trim();
    while !rest.is_empty() {
        if let Some(r) = rest.strip_prefix("['") {
            let Some(end) = r.find("']") else { return p.trim_start_matches('.').to_string() };
            parts.push(r[..end].replace("\\'", "'").replace("\\\\", "\\"));
            rest = &r[end + 2..];
        } else if let Some(r) = rest.strip_prefix('.') {
            let end = r.find(['.', '[']).unwrap_or(r.len());
            parts.push(r[..end].to_string());
            rest = &r[end..];
        } else {
            return p.trim_start_matches('.').to_string();
        }
    }
    parts.join(".")
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
            pattern: v.get("pattern").and_then(Value::as_str).map(|p| Arc::new(Pattern::new(p))),
            format: v.get("format").and_then(Value::as_str).map(Arc::from),
            list_type: match v.get("x-kubernetes-list-type").and_then(Value::as_str) {
                Some("set") => Some(ListType::Set),
                Some("map") => Some(ListType::Map),
                Some("atomic") => Some(ListType::Atomic),
                _ => None,
            },
            list_map_keys: v
                .get("x-kubernetes-list-map-keys")
                .and_then(Value::as_array)
                .map(|a| a.iter().filter_map(Value::as_str).map(str::to_string).collect())
                .unwrap_or_default(),
            map_atomic: v.get("x-kubernetes-map-type").and_then(Value::as_str) == Some("atomic"),
            rules: v
                .get("x-kubernetes-validations")
                .and_then(Value::as_array)
                .map(|a| a.iter().map(Rule::from_json).collect())
                .unwrap_or_default(),
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
        let children =
            || s.properties.values().chain(s.items.as_deref()).chain(s.additional.as_deref());
        s.has_rules = !s.rules.is_empty() || children().any(|c| c.has_rules);
        s.has_lists = matches!(s.list_type, Some(ListType::Set | ListType::Map))
            || children().any(|c| c.has_lists);
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
/// validated elsewhere. With no old object, CEL transition rules (those that read `oldSelf`)
/// are skipped, as kube-apiserver skips them on create.
pub fn validate(obj: &Value, s: &Structural) -> Vec<Cause> {
    validate_update(obj, None, s)
}

/// The causes that keep kube-apiserver from evaluating CEL rules (`hasBlockingErr`).
const BLOCKING: &[&str] = &[
    "FieldValueNotSupported",
    "FieldValueRequired",
    "FieldValueTooLong",
    "FieldValueTooMany",
    "FieldValueTypeInvalid",
];

/// [`validate`], with the object being replaced, for CEL transition rules: a rule that reads
/// `oldSelf` runs where the node has an old value (properties and map entries by key, unless
/// the map is `x-kubernetes-map-type: atomic`; items of `x-kubernetes-list-type: map` lists by
/// their keys). kube-apiserver's order: the OpenAPI schema's causes, then the duplicates of
/// `set` and `map` lists, then the CEL rules, which do not run when a cause already says the
/// object has the wrong shape.
pub fn validate_update(obj: &Value, old: Option<&Value>, s: &Structural) -> Vec<Cause> {
    let mut causes = validate_schema(obj, s);
    if s.has_lists
        && let Value::Object(map) = obj
    {
        for (k, v) in map {
            if let Some(p) = s.properties.get(k).filter(|_| !is_meta_key(k)) {
                validate_lists(v, p, k, &mut causes);
            }
        }
    }
    if s.has_rules {
        if causes.iter().any(|c| BLOCKING.contains(&c.reason.as_str())) {
            causes.push(Cause::invalid(
                NIL_PATH,
                &Value::String("null".into()),
                "some validation rules were not checked because the object was invalid; correct the existing errors to complete validation",
            ));
        } else {
            validate_rules(obj, old, s, "", true, &mut causes);
        }
    }
    causes
}

fn is_meta_key(k: &str) -> bool {
    k == "metadata" || k == "apiVersion" || k == "kind"
}

/// How Go prints the path of the object's root (a nil `*field.Path`).
const NIL_PATH: &str = "<nil>";

fn validate_schema(obj: &Value, s: &Structural) -> Vec<Cause> {
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
        let before = causes.len();
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
        // kube-openapi's string validator stops at its first failure: lengths, then pattern.
        if causes.len() == before
            && let Some(p) = &s.pattern
        {
            match &p.compiled {
                Ok(re) if re.is_match(st) => {}
                Ok(_) => causes.push(Cause::invalid(
                    path,
                    v,
                    &format!("{path} in body should match '{}'", p.source),
                )),
                Err(e) => causes.push(Cause::invalid(
                    path,
                    v,
                    &format!(
                        "{path} in body should match '{}, but pattern is invalid: {e}'",
                        p.source
                    ),
                )),
            }
        }
        // Formats apply to strings of schemas typed `string` or untyped (kube-apiserver drops
        // the formats of other types before validating).
        if let Some(format) = &s.format
            && matches!(s.type_.as_deref(), None | Some("string"))
            && format_valid(format, st) == Some(false)
        {
            causes.push(Cause {
                reason: "FieldValueTypeInvalid".into(),
                message: format!(
                    "Invalid value: {st:?}: {path} in body must be of type {format}: {st:?}"
                ),
                field: path.into(),
            });
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

/// Whether `s` is a string of `format`, as kube-openapi's format registry decides, for the
/// formats kruise-sim checks; `None` for the others (not validated here). Numeric formats
/// (`int32`, `int64`, `float`, `double`) are never checked: kube-openapi's schema validator
/// does not range-check them. Format names are read as go-openapi reads them, dashes dropped.
fn format_valid(format: &str, s: &str) -> Option<bool> {
    static UUID: LazyLock<Option<[Regex; 4]>> = LazyLock::new(|| {
        let re = |r: &str| Regex::new(r).ok();
        Some([
            re(r"(?i)^[0-9a-f]{8}-?[0-9a-f]{4}-?[0-9a-f]{4}-?[0-9a-f]{4}-?[0-9a-f]{12}$")?,
            re(r"(?i)^[0-9a-f]{8}-?[0-9a-f]{4}-?3[0-9a-f]{3}-?[0-9a-f]{4}-?[0-9a-f]{12}$")?,
            re(r"(?i)^[0-9a-f]{8}-?[0-9a-f]{4}-?4[0-9a-f]{3}-?[89ab][0-9a-f]{3}-?[0-9a-f]{12}$")?,
            re(r"(?i)^[0-9a-f]{8}-?[0-9a-f]{4}-?5[0-9a-f]{3}-?[89ab][0-9a-f]{3}-?[0-9a-f]{12}$")?,
        ])
    });
    static HOSTNAME: LazyLock<Option<Regex>> = LazyLock::new(|| {
        Regex::new(
            r"^([a-zA-Z0-9\p{S}\p{L}]((-?[a-zA-Z0-9\p{S}\p{L}]{0,62})?)|([a-zA-Z0-9\p{S}\p{L}](([a-zA-Z0-9\-\p{S}\p{L}]{0,61}[a-zA-Z0-9\p{S}\p{L}])?)(\.)){1,}([a-zA-Z0-9\p{S}\p{L}])(-?[a-zA-Z0-9\p{S}\p{L}]){1,62})$",
        )
        .ok()
    });
    let uuid = |i: usize| UUID.as_ref().map(|res| res[i].is_match(s));
    match format.replace('-', "").as_str() {
        "datetime" => Some(is_date_time(s)),
        "date" => Some(is_date(s)),
        "uuid" => uuid(0),
        "uuid3" => uuid(1),
        "uuid4" => uuid(2),
        "uuid5" => uuid(3),
        // govalidator: Go's net.ParseIP, and a dot (IPv4) or a colon (IPv6) in the text.
        "ipv4" => Some(s.parse::<std::net::IpAddr>().is_ok() && s.contains('.')),
        "ipv6" => Some(s.parse::<std::net::IpAddr>().is_ok() && s.contains(':')),
        "cidr" => Some(is_cidr(s)),
        "hostname" => HOSTNAME.as_ref().map(|re| {
            re.is_match(s) && s.len() <= 255 && s.split('.').all(|label| label.len() <= 63)
        }),
        _ => None,
    }
}

/// RFC 3339 `full-date`, as Go's `time.Parse("2006-01-02", s)` reads it.
fn is_date(s: &str) -> bool {
    let b = s.as_bytes();
    if b.len() != 10 || b[4] != b'-' || b[7] != b'-' {
        return false;
    }
    let num = |r: std::ops::Range<usize>| -> Option<u32> {
        let part = s.get(r)?;
        part.bytes().all(|c| c.is_ascii_digit()).then(|| part.parse().ok())?
    };
    let (Some(year), Some(month), Some(day)) = (num(0..4), num(5..7), num(8..10)) else {
        return false;
    };
    let leap = year % 4 == 0 && (year % 100 != 0 || year % 400 == 0);
    let days = match month {
        1 | 3 | 5 | 7 | 8 | 10 | 12 => 31,
        4 | 6 | 9 | 11 => 30,
        2 if leap => 29,
        2 => 28,
        _ => return false,
    };
    (1..=days).contains(&day)
}

/// kube-openapi's `IsDateTime`: lowercased and split at `t`, a valid date, then
/// `hh:mm:ss[.frac](z|±hh:mm)` with hours up to 23 and minutes and seconds up to 59.
fn is_date_time(s: &str) -> bool {
    static TIME: LazyLock<Option<Regex>> = LazyLock::new(|| {
        Regex::new(r"^([0-9]{2}):([0-9]{2}):([0-9]{2})(.[0-9]+)?(z|([+-][0-9]{2}:[0-9]{2}))$").ok()
    });
    let lower = s.to_lowercase();
    let mut parts = lower.split('t');
    let (Some(date), Some(time)) = (parts.next(), parts.next()) else { return false };
    if !is_date(date) {
        return false;
    }
    let Some(caps) = TIME.as_ref().and_then(|re| re.captures(time)) else { return false };
    let field = |i: usize| caps.get(i).map_or("", |m| m.as_str());
    field(1) <= "23" && field(2) <= "59" && field(3) <= "59"
}

/// Go's `net.ParseCIDR`: an address without zone, `/`, a decimal prefix within its bits.
fn is_cidr(s: &str) -> bool {
    let Some((addr, prefix)) = s.split_once('/') else { return false };
    let Ok(ip) = addr.parse::<std::net::IpAddr>() else { return false };
    let bits = if ip.is_ipv4() { 32 } else { 128 };
    !prefix.is_empty()
        && prefix.bytes().all(|c| c.is_ascii_digit())
        && prefix.parse::<u32>().is_ok_and(|n| n <= bits)
}

/// A map key's path, as Go's `field.Path.Key` prints it: `spec.labels[app]`.
fn key_path(path: &str, key: &str) -> String {
    format!("{path}[{key}]")
}

/// How a field error shows a bad value: Go's `%v` for numbers and booleans, `%q` for strings,
/// `%#v` for maps and slices (`map[string]interface {}{"name":"a"}`), `"null"` for nil.
fn bad_value(v: &Value) -> String {
    match v {
        Value::Null => "\"null\"".into(),
        other => go_sharp_v(other),
    }
}

/// Go's `%#v` of an unstructured value.
fn go_sharp_v(v: &Value) -> String {
    match v {
        Value::Null => "interface {}(nil)".into(),
        Value::Bool(b) => b.to_string(),
        Value::Number(n) => match n.as_f64() {
            Some(f) if !(n.is_i64() || n.is_u64()) => f.to_string(),
            _ => n.to_string(),
        },
        Value::String(s) => format!("{s:?}"),
        Value::Array(items) => {
            let items: Vec<String> = items.iter().map(go_sharp_v).collect();
            format!("[]interface {{}}{{{}}}", items.join(", "))
        }
        Value::Object(map) => {
            let mut entries: Vec<(&String, &Value)> = map.iter().collect();
            entries.sort_by(|a, b| a.0.cmp(b.0));
            let entries: Vec<String> =
                entries.iter().map(|(k, v)| format!("{k:?}:{}", go_sharp_v(v))).collect();
            format!("map[string]interface {{}}{{{}}}", entries.join(", "))
        }
    }
}

fn duplicate(path: String, value: &Value) -> Cause {
    Cause {
        reason: "FieldValueDuplicate".into(),
        message: format!("Duplicate value: {}", bad_value(value)),
        field: path,
    }
}

/// The indexes of the second appearances of repeated values (kube-apiserver reports each
/// repeated value once, at its first repetition).
fn repeated<'a>(values: impl Iterator<Item = &'a Value>) -> Vec<usize> {
    let mut seen: Vec<(&Value, u32)> = Vec::new();
    let mut out = Vec::new();
    for (i, v) in values.enumerate() {
        match seen.iter_mut().find(|(s, _)| *s == v) {
            Some((_, times)) => {
                *times += 1;
                if *times == 2 {
                    out.push(i);
                }
            }
            None => seen.push((v, 1)),
        }
    }
    out
}

/// `x-kubernetes-list-type: set` and `map` uniqueness, kube-apiserver's
/// `ValidateListSetsAndMaps`.
fn validate_lists(v: &Value, s: &Structural, path: &str, causes: &mut Vec<Cause>) {
    if !s.has_lists {
        return;
    }
    match v {
        Value::Object(map) => {
            if let Some(ap) = &s.additional {
                for (k, child) in map {
                    validate_lists(child, ap, &key_path(path, k), causes);
                }
            }
            for (k, child) in map {
                if let Some(p) = s.properties.get(k) {
                    validate_lists(child, p, &join(path, k), causes);
                }
            }
        }
        Value::Array(items) => {
            match s.list_type {
                Some(ListType::Set) => {
                    for i in repeated(items.iter()) {
                        causes.push(duplicate(format!("{path}[{i}]"), &items[i]));
                    }
                }
                Some(ListType::Map) => validate_list_map(items, s, path, causes),
                _ => {}
            }
            if let Some(is) = &s.items {
                for (i, item) in items.iter().enumerate() {
                    validate_lists(item, is, &format!("{path}[{i}]"), causes);
                }
            }
        }
        _ => {}
    }
}

fn validate_list_map(items: &[Value], s: &Structural, path: &str, causes: &mut Vec<Cause>) {
    if let Some((i, x)) = items.iter().enumerate().find(|(_, x)| !(x.is_null() || x.is_object())) {
        causes.push(Cause::invalid(
            &format!("{path}[{i}]"),
            x,
            "must be an object for an array of list-type map",
        ));
        return;
    }
    // The key tuple of each item: the key fields it has (a null item has none).
    let keys: Vec<Value> = items
        .iter()
        .map(|x| {
            let mut key = Map::new();
            for k in s.list_map_keys.iter() {
                if let Some(v) = x.get(k) {
                    key.insert(k.clone(), v.clone());
                }
            }
            Value::Object(key)
        })
        .collect();
    for i in repeated(keys.iter()) {
        causes.push(duplicate(format!("{path}[{i}]"), &keys[i]));
    }
}

/// The old item a `map` list's item replaces: the one with the same keys.
fn correlated_item<'a>(old: &'a Value, item: &Value, s: &Structural) -> Option<&'a Value> {
    if s.list_type != Some(ListType::Map) || s.list_map_keys.is_empty() {
        return None;
    }
    old.as_array()?
        .iter()
        .find(|o| s.list_map_keys.iter().all(|k| o.get(k).is_some() && o.get(k) == item.get(k)))
}

/// Evaluates the `x-kubernetes-validations` rules of the schema's nodes, kube-apiserver's CEL
/// validator: a node's rules see it as `self` (null nodes are not validated); at a resource's
/// root (the object, or an embedded resource), `self.metadata` holds only `name` and
/// `generateName`.
fn validate_rules(
    v: &Value,
    old: Option<&Value>,
    s: &Structural,
    path: &str,
    resource_root: bool,
    causes: &mut Vec<Cause>,
) {
    if !s.has_rules || v.is_null() {
        return;
    }
    let old = old.filter(|o| !o.is_null());
    if !s.rules.is_empty() {
        eval_rules(v, old, s, path, resource_root, causes);
    }
    match v {
        Value::Array(items) => {
            if let Some(is) = &s.items {
                for (i, item) in items.iter().enumerate() {
                    let old_item = old.and_then(|o| correlated_item(o, item, s));
                    validate_rules(
                        item,
                        old_item,
                        is,
                        &format!("{path}[{i}]"),
                        is.embedded,
                        causes,
                    );
                }
            }
        }
        Value::Object(map) => {
            let old_of = |k: &str| if s.map_atomic { None } else { old.and_then(|o| o.get(k)) };
            if let Some(ap) = &s.additional {
                for (k, child) in map {
                    validate_rules(child, old_of(k), ap, &key_path(path, k), ap.embedded, causes);
                }
            }
            for (k, child) in map {
                if resource_root && is_meta_key(k) {
                    continue;
                }
                if let Some(p) = s.properties.get(k) {
                    validate_rules(child, old_of(k), p, &join(path, k), p.embedded, causes);
                }
            }
        }
        _ => {}
    }
}

/// A resource root as its rules see it: `metadata` reduced to `name` and `generateName`.
fn resource_self(v: &Value) -> Value {
    let mut copy = v.clone();
    if let Some(Value::Object(meta)) = copy.get_mut("metadata") {
        meta.retain(|k, _| k == "name" || k == "generateName");
    }
    copy
}

fn eval_rules(
    v: &Value,
    old: Option<&Value>,
    s: &Structural,
    path: &str,
    resource_root: bool,
    causes: &mut Vec<Cause>,
) {
    let type_ = Value::String(s.type_.clone().unwrap_or_default());
    let field = |p: &str| if p.is_empty() { NIL_PATH.to_string() } else { p.to_string() };
    let mut context = Context::default();
    let (self_value, old_value) = if resource_root {
        (resource_self(v), old.map(resource_self))
    } else {
        (v.clone(), old.cloned())
    };
    let mut variables = vec![("self", self_value)];
    variables.extend(old_value.map(|o| ("oldSelf", o)));
    for (name, value) in variables {
        if let Err(e) = context.add_variable(name, value) {
            causes.push(Cause::invalid(
                &field(path),
                &type_,
                &format!("rule compiler initialization error: {e}"),
            ));
            return;
        }
    }
    for rule in s.rules.iter() {
        if rule.rule.is_empty() {
            continue;
        }
        // kube-apiserver admitted the CRD, so cel-go compiled the rule: one that
        // cel-interpreter cannot parse is its limit, and the rule is not judged.
        let Ok(program) = &rule.program else { continue };
        // Transition rules run only where there is an old value (not on create). Rules with
        // `optionalOldSelf` are skipped too: cel-interpreter has no optional values.
        if rule.uses_old_self && old.is_none() {
            continue;
        }
        match run_cel(program, &context) {
            Ok(CelValue::Bool(true)) => continue,
            Ok(CelValue::Bool(false)) => {}
            // kube-apiserver's type check refuses a CRD whose rule is not a bool: another
            // answer is cel-interpreter's reading, and the rule is not judged.
            Ok(_) => continue,
            Err(Some(e)) => {
                causes.push(Cause::invalid(
                    &field(path),
                    &type_,
                    &format!("{e} evaluating rule: {}", rule.error_string()),
                ));
                continue;
            }
            Err(None) => continue,
        }
        let at =
            if rule.field_path.is_empty() { field(path) } else { join(path, &rule.field_path) };
        // A messageExpression that fails, or gives no usable string, falls back to the message.
        let detail = rule
            .message_expression
            .as_ref()
            .and_then(|m| match run_cel(m, &context) {
                Ok(CelValue::String(text)) => Some(text.trim().to_string()),
                _ => None,
            })
            .filter(|m| !m.is_empty() && !m.contains('\n') && m.len() <= 5120)
            .unwrap_or_else(|| {
                if rule.message.is_empty() {
                    format!("failed rule: {}", rule.rule)
                } else {
                    rule.message.clone()
                }
            });
        causes.push(match rule.reason.as_deref() {
            Some("FieldValueForbidden") => Cause::forbidden(&at, &detail),
            Some("FieldValueRequired") => Cause::required(&at, &detail),
            Some("FieldValueDuplicate") => duplicate(at, &type_),
            _ => Cause::invalid(&at, &type_, &detail),
        });
    }
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

    fn messages(causes: &[Cause]) -> Vec<String> {
        causes.iter().map(|c| format!("{}: {}", c.field, c.message)).collect()
    }

    fn spec_schema(spec: Value) -> Structural {
        Structural::from_json(&json!({"type": "object", "properties": {"spec": spec}}))
    }

    #[test]
    fn pattern() {
        let s = spec_schema(json!({"type": "object", "properties": {
            "reason": {"type": "string", "pattern": "^[A-Za-z]([A-Za-z0-9_,:]*[A-Za-z0-9_])?$"},
            "digits": {"type": "string", "pattern": "^\\d+$"},
            "short": {"type": "string", "maxLength": 2, "pattern": "^a+$"},
            "anywhere": {"type": "string", "pattern": "b"}
        }}));
        let ok = json!({"spec": {"reason": "Ready_1", "digits": "0123", "short": "aa",
            "anywhere": "abc"}});
        assert!(validate(&ok, &s).is_empty(), "{:?}", validate(&ok, &s));
        // Go's \d is ASCII: Arabic-Indic digits do not match it. A too-long string is reported
        // as too long only (kube-openapi's string validator stops at the first failure).
        let bad = json!({"spec": {"reason": "1bad", "digits": "\u{661}\u{662}", "short": "bbb",
            "anywhere": "acd"}});
        assert_eq!(
            messages(&validate(&bad, &s)),
            vec![
                "spec.anywhere: Invalid value: \"acd\": spec.anywhere in body should match 'b'",
                "spec.digits: Invalid value: \"\u{661}\u{662}\": spec.digits in body should match '^\\d+$'",
                "spec.reason: Invalid value: \"1bad\": spec.reason in body should match '^[A-Za-z]([A-Za-z0-9_,:]*[A-Za-z0-9_])?$'",
                "spec.short: Too long: may not be more than 2 bytes",
            ]
        );
        assert_eq!(go_regex(r"^[\d.]\w\S$"), "^[0-9.][0-9A-Za-z_][^\\t\\n\\f\\r ]$");
    }

    #[test]
    fn format() {
        let s = spec_schema(json!({"type": "object", "properties": {
            "at": {"type": "string", "format": "date-time"},
            "day": {"type": "string", "format": "date"},
            "id": {"type": "string", "format": "uuid"},
            "ip": {"type": "string", "format": "ipv4"},
            "net": {"type": "string", "format": "cidr"},
            "free": {"type": "string", "format": "no-such-format"},
            "count": {"type": "integer", "format": "int32"}
        }}));
        for at in ["2024-02-29T10:00:00Z", "2024-01-01T00:00:00.123+08:00", "2024-01-01t23:59:59z"]
        {
            let ok = json!({"spec": {"at": at, "day": "2000-02-29",
                "id": "123E4567-e89b-12d3-a456-426614174000", "ip": "10.0.0.1",
                "net": "10.0.0.0/8", "free": "anything", "count": 4_294_967_296_i64}});
            assert!(validate(&ok, &s).is_empty(), "{at}: {:?}", validate(&ok, &s));
        }
        let bad = json!({"spec": {"at": "2023-02-29T10:00:00Z", "day": "1900-02-29",
            "id": "not-a-uuid", "ip": "::1", "net": "10.0.0.0/33"}});
        assert_eq!(
            messages(&validate(&bad, &s)),
            vec![
                "spec.at: Invalid value: \"2023-02-29T10:00:00Z\": spec.at in body must be of type date-time: \"2023-02-29T10:00:00Z\"",
                "spec.day: Invalid value: \"1900-02-29\": spec.day in body must be of type date: \"1900-02-29\"",
                "spec.id: Invalid value: \"not-a-uuid\": spec.id in body must be of type uuid: \"not-a-uuid\"",
                "spec.ip: Invalid value: \"::1\": spec.ip in body must be of type ipv4: \"::1\"",
                "spec.net: Invalid value: \"10.0.0.0/33\": spec.net in body must be of type cidr: \"10.0.0.0/33\"",
            ]
        );
        assert_eq!(validate(&bad, &s)[0].reason, "FieldValueTypeInvalid");
        assert_eq!(format_valid("hostname", "web-0.example.com"), Some(true));
        assert_eq!(format_valid("hostname", "-web"), Some(false));
        assert_eq!(format_valid("uuid4", "123e4567-e89b-42d3-a456-426614174000"), Some(true));
        assert_eq!(format_valid("ipv6", "fe80::1"), Some(true));
        assert_eq!(format_valid("byte", "%%%"), None);
        for at in ["yesterday", "2024-01-01", "2024-01-01T24:00:00Z", "2024-01-01T10:00:00"] {
            assert!(!is_date_time(at), "{at}");
        }
    }

    #[test]
    fn list_type_set_and_map() {
        let s = spec_schema(json!({"type": "object", "properties": {
            "tags": {"type": "array", "items": {"type": "string"}, "x-kubernetes-list-type": "set"},
            "ports": {"type": "array", "x-kubernetes-list-type": "map",
                "x-kubernetes-list-map-keys": ["name"],
                "items": {"type": "object", "properties": {
                    "name": {"type": "string"}, "port": {"type": "integer"}}}},
            "pairs": {"type": "array", "x-kubernetes-list-type": "map",
                "x-kubernetes-list-map-keys": ["port", "protocol"],
                "items": {"type": "object", "properties": {
                    "port": {"type": "integer"}, "protocol": {"type": "string"}}}},
            "byName": {"type": "object", "additionalProperties": {"type": "array",
                "items": {"type": "integer"}, "x-kubernetes-list-type": "set"}}
        }}));
        let ok = json!({"spec": {"tags": ["a", "b"], "ports": [{"name": "a"}, {"name": "b"}],
            "pairs": [{"port": 80, "protocol": "TCP"}, {"port": 80, "protocol": "UDP"}],
            "byName": {"x": [1, 2]}}});
        assert!(validate(&ok, &s).is_empty(), "{:?}", validate(&ok, &s));
        let bad = json!({"spec": {"tags": ["a", "b", "a", "a", "c", "b"],
            "ports": [{"name": "a", "port": 1}, {"name": "b"}, {"name": "a", "port": 2}, {}, {}],
            "pairs": [{"port": 80, "protocol": "TCP"}, {"port": 80, "protocol": "TCP"}],
            "byName": {"x": [1, 1]}}});
        let causes = validate(&bad, &s);
        assert_eq!(
            messages(&causes),
            vec![
                "spec.byName[x][1]: Duplicate value: 1",
                "spec.pairs[1]: Duplicate value: map[string]interface {}{\"port\":80, \"protocol\":\"TCP\"}",
                "spec.ports[2]: Duplicate value: map[string]interface {}{\"name\":\"a\"}",
                "spec.ports[4]: Duplicate value: map[string]interface {}{}",
                "spec.tags[2]: Duplicate value: \"a\"",
                "spec.tags[5]: Duplicate value: \"b\"",
            ]
        );
        assert!(causes.iter().all(|c| c.reason == "FieldValueDuplicate"));
    }

    #[test]
    fn cel_rules() {
        let s = Structural::from_json(&json!({
            "type": "object",
            "x-kubernetes-validations": [{"rule": "self.metadata.name.size() < 10"}],
            "properties": {
                "metadata": {"type": "object"},
                "spec": {"type": "object",
                    "x-kubernetes-validations": [
                        {"rule": "self.minReplicas <= self.replicas",
                         "message": "minReplicas must not exceed replicas"},
                        {"rule": "self.replicas < 100", "fieldPath": ".replicas",
                         "messageExpression": "'replicas is ' + string(self.replicas)"},
                        {"rule": "self.replicas != 13", "reason": "FieldValueForbidden",
                         "message": "unlucky"}
                    ],
                    "properties": {
                        "replicas": {"type": "integer"},
                        "minReplicas": {"type": "integer"},
                        "path": {"type": "string", "x-kubernetes-validations": [
                            {"rule": "self.startsWith('/')"},
                            {"rule": "self == oldSelf", "message": "path is immutable"}
                        ]},
                        "broken": {"type": "string", "x-kubernetes-validations": [
                            {"rule": "self.("}
                        ]}
                    }}
            }
        }));
        let ok = json!({"metadata": {"name": "short"},
            "spec": {"replicas": 3, "minReplicas": 1, "path": "/a"}});
        // The transition rule is skipped on create, and holds on an update that keeps the path.
        assert!(validate(&ok, &s).is_empty(), "{:?}", validate(&ok, &s));
        assert!(validate_update(&ok, Some(&ok), &s).is_empty());

        let bad = json!({"metadata": {"name": "much-too-long"},
            "spec": {"replicas": 200, "minReplicas": 300, "path": "a"}});
        assert_eq!(
            messages(&validate(&bad, &s)),
            vec![
                "<nil>: Invalid value: \"object\": failed rule: self.metadata.name.size() < 10",
                "spec: Invalid value: \"object\": minReplicas must not exceed replicas",
                "spec.replicas: Invalid value: \"object\": replicas is 200",
                "spec.path: Invalid value: \"string\": failed rule: self.startsWith('/')",
            ]
        );
        let changed = json!({"metadata": {"name": "short"},
            "spec": {"replicas": 13, "minReplicas": 1, "path": "/b"}});
        assert_eq!(
            messages(&validate_update(&changed, Some(&ok), &s)),
            vec![
                "spec: Forbidden: unlucky",
                "spec.path: Invalid value: \"string\": path is immutable",
            ]
        );
        // A rule cel-interpreter cannot compile is not judged: only the other cause stays.
        let broken = json!({"spec": {"replicas": 1, "minReplicas": 1, "broken": "x"}});
        let causes = validate(&broken, &s);
        assert_eq!(causes.len(), 1, "{causes:?}");
        // A cause that says the object has the wrong shape keeps the rules from running.
        let wrong = json!({"metadata": {"name": "much-too-long"}, "spec": {"replicas": "x"}});
        assert_eq!(
            messages(&validate(&wrong, &s)),
            vec![
                "spec.replicas: Invalid value: \"string\": spec.replicas in body must be of type integer: \"string\"",
                "<nil>: Invalid value: \"null\": some validation rules were not checked because the object was invalid; correct the existing errors to complete validation",
            ]
        );
        assert_eq!(normalize_field_path(".spec['a.b'].c"), "spec.a.b.c");
    }

    /// Every document of upstream's examples whose kind one of upstream's CRDs serves passes
    /// that CRD's schema (patterns, formats, list types and CEL rules included), but for the
    /// documents upstream's docs elide with "...".
    #[test]
    fn upstream_crds_accept_upstream_examples() {
        let upstream =
            std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../shared/upstream");
        let yaml_docs = |dir: std::path::PathBuf| -> Vec<(String, Value)> {
            let Ok(entries) = std::fs::read_dir(&dir) else { return Vec::new() };
            let mut files: Vec<_> = entries.filter_map(|e| e.ok().map(|e| e.path())).collect();
            files.sort();
            let mut out = Vec::new();
            for path in files {
                let text = std::fs::read_to_string(&path).expect("read");
                let name = path.file_name().expect("name").to_string_lossy().into_owned();
                for doc in serde_yaml::Deserializer::from_str(&text) {
                    let Ok(value) = <Value as serde::Deserialize>::deserialize(doc) else {
                        continue;
                    };
                    if !value.is_null() {
                        out.push((name.clone(), value));
                    }
                }
            }
            out
        };
        let mut schemas: BTreeMap<(String, String), Structural> = BTreeMap::new();
        for (_, crd) in
            [upstream.join("crds"), upstream.join("rollouts/crds")].into_iter().flat_map(yaml_docs)
        {
            let group = crd["spec"]["group"].as_str().unwrap_or_default().to_string();
            let kind = crd["spec"]["names"]["kind"].as_str().unwrap_or_default().to_string();
            for v in crd["spec"]["versions"].as_array().into_iter().flatten() {
                let version = v["name"].as_str().unwrap_or_default();
                let schema = Structural::from_json(&v["schema"]["openAPIV3Schema"]);
                schemas.insert((format!("{group}/{version}"), kind.clone()), schema);
            }
        }
        assert!(schemas.len() > 20, "{} CRD versions", schemas.len());
        let mut checked = 0;
        let mut failures = Vec::new();
        for (file, mut doc) in yaml_docs(upstream.join("examples")) {
            let api_version = doc["apiVersion"].as_str().unwrap_or_default().to_string();
            let kind = doc["kind"].as_str().unwrap_or_default().to_string();
            let Some(schema) = schemas.get(&(api_version, kind.clone())) else { continue };
            prune(&mut doc, schema);
            default(&mut doc, schema);
            // Many examples are fragments (no selector, no template): only the checks added
            // for patterns, formats, list types and rules must find nothing more.
            let causes = validate(&doc, schema);
            let before = validate(&doc, &without_new_checks(schema));
            checked += 1;
            if causes != before {
                failures.push(format!("{file} ({kind}): {:?}", messages(&causes)));
            }
        }
        assert!(checked > 50, "{checked} documents checked");
        assert!(failures.is_empty(), "{failures:#?}");
    }

    /// The schema without `pattern`, `format`, list types and rules.
    fn without_new_checks(s: &Structural) -> Structural {
        Structural {
            properties: s
                .properties
                .iter()
                .map(|(k, p)| (k.clone(), without_new_checks(p)))
                .collect(),
            items: s.items.as_deref().map(|i| Box::new(without_new_checks(i))),
            additional: s.additional.as_deref().map(|a| Box::new(without_new_checks(a))),
            pattern: None,
            format: None,
            list_type: None,
            rules: Arc::from(Vec::new()),
            has_rules: false,
            has_lists: false,
            ..s.clone()
        }
    }
}
