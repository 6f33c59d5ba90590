//! `Table` (meta.k8s.io/v1) and `PartialObjectMetadata` renderings, as `kubectl get` asks.

use crate::jsonpath;
use crate::resources::{CellSource, Column, ResourceDef};
use crate::util::{human_duration, seconds_since};
use serde_json::{Value, json};

/// How a row's `object` is included (`includeObject`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum IncludeObject {
    /// No object.
    None,
    /// A `PartialObjectMetadata`.
    #[default]
    Metadata,
    /// The full object.
    Object,
}

fn age_of(ts: Option<&str>) -> Value {
    match ts.and_then(seconds_since) {
        Some(s) => json!(human_duration(s)),
        None => json!("<unknown>"),
    }
}

fn count(v: Option<&Value>) -> i64 {
    match v {
        Some(Value::Object(m)) => m.len() as i64,
        Some(Value::Array(a)) => a.len() as i64,
        _ => 0,
    }
}

fn cell_json(type_: &str, v: &Value) -> Value {
    match type_ {
        "integer" => match v {
            Value::Number(n) => n
                .as_i64()
                .map(Value::from)
                .unwrap_or_else(|| n.as_f64().map(|f| json!(f as i64)).unwrap_or(Value::Null)),
            _ => Value::Null,
        },
        "number" => {
            if v.is_number() {
                v.clone()
            } else {
                Value::Null
            }
        }
        "boolean" => {
            if v.is_boolean() {
                v.clone()
            } else {
                Value::Null
            }
        }
        "date" => match v.as_str() {
            Some(s) => match seconds_since(s) {
                Some(sec) => json!(human_duration(sec)),
                None => json!("<invalid>"),
            },
            None => Value::Null,
        },
        _ => match v {
            Value::String(s) => json!(s),
            Value::Null => Value::Null,
            other => json!(other.to_string()),
        },
    }
}

fn pod_status(o: &Value) -> String {
    let mut reason = o
        .pointer("/status/reason")
        .and_then(Value::as_str)
        .or_else(|| o.pointer("/status/phase").and_then(Value::as_str))
        .unwrap_or("Pending")
        .to_string();
    if let Some(cs) = o.pointer("/status/containerStatuses").and_then(Value::as_array) {
        for c in cs.iter().rev() {
            if let Some(r) = c.pointer("/state/waiting/reason").and_then(Value::as_str) {
                reason = r.to_string();
            } else if let Some(r) = c.pointer("/state/terminated/reason").and_then(Value::as_str) {
                reason = r.to_string();
            }
        }
    }
    if o.pointer("/metadata/deletionTimestamp").is_some() {
        reason = "Terminating".into();
    }
    reason
}

/// A Job's status as kube-apiserver's printer words it.
fn job_status(o: &Value) -> &'static str {
    let holds = |kind: &str| {
        o.pointer("/status/conditions")
            .and_then(Value::as_array)
            .is_some_and(|cs| cs.iter().any(|c| c["type"] == kind && c["status"] == "True"))
    };
    if holds("Complete") {
        "Complete"
    } else if holds("Failed") {
        "Failed"
    } else if o.pointer("/metadata/deletionTimestamp").is_some() {
        "Terminating"
    } else if holds("Suspended") {
        "Suspended"
    } else if holds("FailureTarget") {
        "FailureTarget"
    } else {
        "Running"
    }
}

/// Access modes in kubectl's short forms, in kube-apiserver's fixed order.
fn access_modes(modes: Option<&Value>) -> String {
    let modes: Vec<&str> =
        modes.and_then(Value::as_array).into_iter().flatten().filter_map(Value::as_str).collect();
    [
        ("ReadWriteOnce", "RWO"),
        ("ReadOnlyMany", "ROX"),
        ("ReadWriteMany", "RWX"),
        ("ReadWriteOncePod", "RWOP"),
    ]
    .iter()
    .filter(|(mode, _)| modes.contains(mode))
    .map(|(_, short)| *short)
    .collect::<Vec<_>>()
    .join(",")
}

fn cell(col: &Column, o: &Value, builtin: bool) -> Value {
    match &col.source {
        CellSource::Name => o.pointer("/metadata/name").cloned().unwrap_or(Value::Null),
        CellSource::Age => age_of(o.pointer("/metadata/creationTimestamp").and_then(Value::as_str)),
        CellSource::CreatedAt => {
            o.pointer("/metadata/creationTimestamp").cloned().unwrap_or(Value::Null)
        }
        CellSource::JsonPath(p) => match jsonpath::first(o, p) {
            // Built-in printers write booleans as `True`/`False` (CRD columns as JSON).
            Some(Value::Bool(b)) if builtin && col.type_ == "boolean" => {
                json!(if *b { "True" } else { "False" })
            }
            Some(v) => cell_json(&col.type_, v),
            // Built-in printers show zero counts and `<none>`; CRD columns stay empty.
            None if builtin && col.type_ == "integer" => json!(0),
            None if builtin && col.type_ == "string" => json!("<none>"),
            None => Value::Null,
        },
        CellSource::Ratio(a, b) => {
            let n = |p: &str| jsonpath::first(o, p).and_then(Value::as_i64).unwrap_or(0);
            json!(format!("{}/{}", n(a), n(b)))
        }
        CellSource::Count(p) => json!(count(jsonpath::first(o, p))),
        CellSource::PodReady => {
            let total = count(o.pointer("/spec/containers"));
            let ready = o
                .pointer("/status/containerStatuses")
                .and_then(Value::as_array)
                .map(|a| a.iter().filter(|c| c.get("ready") == Some(&json!(true))).count())
                .unwrap_or(0);
            json!(format!("{ready}/{total}"))
        }
        CellSource::PodStatus => json!(pod_status(o)),
        CellSource::JobStatus => json!(job_status(o)),
        CellSource::JobCompletions => {
            let n = |p: &str| o.pointer(p).and_then(Value::as_i64);
            let succeeded = n("/status/succeeded").unwrap_or(0);
            match n("/spec/completions") {
                Some(c) => json!(format!("{succeeded}/{c}")),
                None => match n("/spec/parallelism").unwrap_or(1) {
                    p if p > 1 => json!(format!("{succeeded}/1 of {p}")),
                    _ => json!(format!("{succeeded}/1")),
                },
            }
        }
        CellSource::JobDuration => {
            let at = |p: &str| {
                o.pointer(p).and_then(Value::as_str).and_then(|t| t.parse::<jiff::Timestamp>().ok())
            };
            match (at("/status/startTime"), at("/status/completionTime")) {
                (None, _) => json!(""),
                (Some(start), end) => {
                    let end = end.unwrap_or_else(jiff::Timestamp::now);
                    json!(crate::util::human_duration(end.duration_since(start).as_secs()))
                }
            }
        }
        CellSource::CronJobTimeZone => {
            json!(o.pointer("/spec/timeZone").and_then(Value::as_str).unwrap_or("<none>"))
        }
        CellSource::CronJobLastSchedule => {
            match o.pointer("/status/lastScheduleTime").and_then(Value::as_str) {
                Some(t) => age_of(Some(t)),
                None => json!("<none>"),
            }
        }
        CellSource::Labels(p) => {
            let pairs: Vec<String> = jsonpath::first(o, p)
                .and_then(Value::as_object)
                .map(|m| {
                    let mut pairs: Vec<String> = m
                        .iter()
                        .map(|(k, v)| format!("{k}={}", v.as_str().unwrap_or_default()))
                        .collect();
                    pairs.sort();
                    pairs
                })
                .unwrap_or_default();
            json!(if pairs.is_empty() { "<none>".to_owned() } else { pairs.join(",") })
        }
        CellSource::EventLastSeen => {
            // As the real printer: the series' last observation, else the last timestamp,
            // else the first, else the event time.
            let at = [
                "/series/lastObservedTime",
                "/lastTimestamp",
                "/firstTimestamp",
                "/eventTime",
                "/metadata/creationTimestamp",
            ]
            .iter()
            .find_map(|p| o.pointer(p).and_then(Value::as_str));
            age_of(at)
        }
        CellSource::EventObject => {
            let kind = o.pointer("/involvedObject/kind").and_then(Value::as_str).unwrap_or("");
            let name = o.pointer("/involvedObject/name").and_then(Value::as_str).unwrap_or("");
            json!(format!("{}/{name}", kind.to_lowercase()))
        }
        CellSource::TextOr(p, default) => {
            let text = jsonpath::first(o, p).and_then(Value::as_str).unwrap_or_default();
            json!(if text.is_empty() { default } else { text })
        }
        CellSource::PodReadinessGates => {
            let gates = o.pointer("/spec/readinessGates").and_then(Value::as_array);
            match gates.filter(|g| !g.is_empty()) {
                None => json!("<none>"),
                Some(gates) => {
                    let conditions = o.pointer("/status/conditions").and_then(Value::as_array);
                    let holds = |gate: &Value| {
                        conditions.into_iter().flatten().any(|c| {
                            c.get("type") == gate.get("conditionType")
                                && c.get("status") == Some(&json!("True"))
                        })
                    };
                    let true_ = gates.iter().filter(|g| holds(g)).count();
                    json!(format!("{true_}/{}", gates.len()))
                }
            }
        }
        CellSource::ClaimStatus => {
            if o.pointer("/metadata/deletionTimestamp").is_some_and(|t| !t.is_null()) {
                json!("Terminating")
            } else {
                json!(o.pointer("/status/phase").and_then(Value::as_str).unwrap_or_default())
            }
        }
        CellSource::ClaimCapacity | CellSource::ClaimAccessModes => {
            let bound = o
                .pointer("/spec/volumeName")
                .and_then(Value::as_str)
                .is_some_and(|v| !v.is_empty());
            if !bound {
                return json!("");
            }
            if matches!(col.source, CellSource::ClaimCapacity) {
                json!(
                    o.pointer("/status/capacity/storage")
                        .and_then(Value::as_str)
                        .unwrap_or_default()
                )
            } else {
                json!(access_modes(o.pointer("/status/accessModes")))
            }
        }
        CellSource::ClaimStorageClass => {
            let class = o
                .pointer("/spec/storageClassName")
                .and_then(Value::as_str)
                .or_else(|| {
                    o.pointer("/metadata/annotations/volume.beta.kubernetes.io~1storage-class")
                        .and_then(Value::as_str)
                })
                .unwrap_or_default();
            json!(class)
        }
        CellSource::PodRestarts => {
            let n: i64 = o
                .pointer("/status/containerStatuses")
                .and_then(Value::as_array)
                .map(|a| {
                    a.iter().filter_map(|c| c.get("restartCount").and_then(Value::as_i64)).sum()
                })
                .unwrap_or(0);
            json!(n.to_string())
        }
        CellSource::NodeStatus => {
            let ready = o
                .pointer("/status/conditions")
                .and_then(Value::as_array)
                .and_then(|a| a.iter().find(|c| c.get("type") == Some(&json!("Ready"))))
                .and_then(|c| c.get("status").and_then(Value::as_str));
            let mut s = match ready {
                Some("True") => "Ready".to_string(),
                Some(_) => "NotReady".to_string(),
                None => "Unknown".to_string(),
            };
            if o.pointer("/spec/unschedulable") == Some(&json!(true)) {
                s.push_str(",SchedulingDisabled");
            }
            json!(s)
        }
        CellSource::ServicePorts => {
            let ports: Vec<String> = o
                .pointer("/spec/ports")
                .and_then(Value::as_array)
                .map(|a| {
                    a.iter()
                        .map(|p| {
                            let port = p.get("port").and_then(Value::as_i64).unwrap_or(0);
                            let proto = p.get("protocol").and_then(Value::as_str).unwrap_or("TCP");
                            match p.get("nodePort").and_then(Value::as_i64) {
                                Some(np) => format!("{port}:{np}/{proto}"),
                                None => format!("{port}/{proto}"),
                            }
                        })
                        .collect()
                })
                .unwrap_or_default();
            json!(if ports.is_empty() { "<none>".to_string() } else { ports.join(",") })
        }
        CellSource::EndpointSlicePorts => {
            let shown: Vec<String> = items(o, "/ports")
                .map(|p| match (p.get("port").and_then(Value::as_i64), p.get("name")) {
                    (Some(port), _) => port.to_string(),
                    (None, Some(Value::String(name))) => name.clone(),
                    (None, _) => "*".to_string(),
                })
                .collect();
            json!(first_three(shown))
        }
        CellSource::EndpointSliceEndpoints => {
            let addresses: Vec<String> = items(o, "/endpoints")
                .flat_map(|e| e.get("addresses").and_then(Value::as_array).into_iter().flatten())
                .map(|a| a.as_str().unwrap_or_default().to_string())
                .collect();
            json!(first_three(addresses))
        }
        CellSource::IngressHosts => {
            // The printer's `formatHosts`: hosts of the first rules, but `+ N more...` counts
            // every rule past the third, with a host or not.
            const MAX: usize = 3;
            let rules: Vec<&Value> = items(o, "/spec/rules").collect();
            let mut shown: Vec<&str> = Vec::new();
            let mut more = false;
            for rule in &rules {
                if shown.len() == MAX {
                    more = true;
                }
                let host = rule.get("host").and_then(Value::as_str).unwrap_or_default();
                if !more && !host.is_empty() {
                    shown.push(host);
                }
            }
            json!(match (shown.is_empty(), more) {
                (true, _) => "*".to_string(),
                (false, true) => format!("{} + {} more...", shown.join(","), rules.len() - MAX),
                (false, false) => shown.join(","),
            })
        }
        CellSource::IngressAddress => {
            // The server prints wide: nothing is clipped.
            let addresses: std::collections::BTreeSet<&str> =
                items(o, "/status/loadBalancer/ingress")
                    .filter_map(|i| {
                        let field =
                            |k: &str| i.get(k).and_then(Value::as_str).filter(|s| !s.is_empty());
                        field("ip").or_else(|| field("hostname"))
                    })
                    .collect();
            json!(addresses.into_iter().collect::<Vec<_>>().join(","))
        }
        CellSource::IngressPorts => {
            let tls = items(o, "/spec/tls").next().is_some();
            json!(if tls { "80, 443" } else { "80" })
        }
        CellSource::IngressClassParameters => match o.pointer("/spec/parameters") {
            Some(p) if !p.is_null() => {
                let text = |k: &str| p.get(k).and_then(Value::as_str);
                let mut shown = text("kind").unwrap_or_default().to_string();
                if let Some(group) = text("apiGroup") {
                    shown = format!("{shown}.{group}");
                }
                json!(format!("{shown}/{}", text("name").unwrap_or_default()))
            }
            _ => json!("<none>"),
        },
    }
}

/// The Name cell: an IngressClass annotated as the default one shows ` (default)` after its
/// name, as kube-apiserver's printer writes it.
fn name_cell(def: &ResourceDef, o: &Value) -> Value {
    let name = o.pointer("/metadata/name").cloned().unwrap_or(Value::Null);
    let default_class = (def.group.as_str(), def.plural.as_str())
        == ("networking.k8s.io", "ingressclasses")
        && o.pointer("/metadata/annotations")
            .and_then(|a| a.get(crate::ingress_validation::DEFAULT_CLASS_ANNOTATION))
            .and_then(Value::as_str)
            == Some("true");
    match name {
        Value::String(n) if default_class => json!(format!("{n} (default)")),
        other => other,
    }
}

/// The items of the list at `pointer`, none when it is absent or not a list.
fn items<'a>(o: &'a Value, pointer: &str) -> impl Iterator<Item = &'a Value> {
    o.pointer(pointer).and_then(Value::as_array).into_iter().flatten()
}

/// The printers' `listWithMoreString`: the first three joined with commas, `+ N more...` for
/// the rest, `<unset>` for none.
fn first_three(all: Vec<String>) -> String {
    const MAX: usize = 3;
    if all.len() > MAX {
        return format!("{} + {} more...", all[..MAX].join(","), all.len() - MAX);
    }
    if all.is_empty() { "<unset>".to_string() } else { all.join(",") }
}

/// Events (core, and `events.k8s.io` ones, stored as core Events) list their name last,
/// shown only with `-o wide`, as the real server does.
fn name_last(def: &ResourceDef) -> bool {
    def.storage_group.is_empty() && def.plural == "events"
}

/// The column definitions of a resource, the Name column first (last for Events).
pub fn column_definitions(def: &ResourceDef) -> Vec<Value> {
    let name = json!({
        "name": "Name", "type": "string", "format": "name",
        "description": "Name must be unique within a namespace. Is required when creating resources, although some resources may allow a client to request the generation of an appropriate name automatically. Name is primarily intended for creation idempotence and configuration definition. Cannot be updated. More info: https://kubernetes.io/docs/concepts/overview/working-with-objects/names#names",
        "priority": if name_last(def) { 1 } else { 0 }
    });
    let mut cols = Vec::new();
    if !name_last(def) {
        cols.push(name.clone());
    }
    for c in &def.columns {
        let type_ = if c.type_ == "date" { "string" } else { c.type_.as_str() };
        let type_ = if matches!(c.source, CellSource::Age) { "string" } else { type_ };
        cols.push(json!({
            "name": c.name, "type": type_, "format": c.format,
            "description": c.description, "priority": c.priority
        }));
    }
    if name_last(def) {
        cols.push(name);
    }
    cols
}

/// `PartialObjectMetadata` of an object.
pub fn partial_metadata(o: &Value) -> Value {
    json!({
        "kind": "PartialObjectMetadata",
        "apiVersion": "meta.k8s.io/v1",
        "metadata": o.get("metadata").cloned().unwrap_or(json!({})),
    })
}

/// One table row.
pub fn row(def: &ResourceDef, o: &Value, include: IncludeObject) -> Value {
    let name = name_cell(def, o);
    let mut cells = Vec::with_capacity(def.columns.len() + 1);
    if !name_last(def) {
        cells.push(name.clone());
    }
    // A built-in stored as another group's prints as that one does: from the stored form.
    let stored = crate::builtin_conversion::of(def).map(|a| a.to_storage(o));
    let shown = stored.as_ref().unwrap_or(o);
    cells.extend(def.columns.iter().map(|c| cell(c, shown, !def.is_custom())));
    if name_last(def) {
        cells.push(name);
    }
    let mut r = json!({"cells": cells});
    match include {
        IncludeObject::None => {}
        IncludeObject::Metadata => r["object"] = partial_metadata(o),
        IncludeObject::Object => r["object"] = o.clone(),
    }
    r
}

/// A table of objects (already in the served version).
pub fn table(
    def: &ResourceDef,
    objs: &[Value],
    include: IncludeObject,
    list_meta: Value,
    with_columns: bool,
) -> Value {
    let rows: Vec<Value> = objs.iter().map(|o| row(def, o, include)).collect();
    let mut t = json!({
        "kind": "Table",
        "apiVersion": "meta.k8s.io/v1",
        "metadata": list_meta,
        "rows": rows,
    });
    if with_columns {
        t["columnDefinitions"] = Value::Array(column_definitions(def));
    }
    t
}
