//! The API server's checks on a new Event, in either API's shape (a field is read under its
//! core/v1 name or its `events.k8s.io/v1` name, whichever the object has).
//!
//! Every Event gets the legacy checks: an Event without `eventTime` must sit in its object's
//! namespace; one with `eventTime` needs a reporting controller (a qualified name), a
//! reporting instance, an action and a reason, within their length limits, and a note of at
//! most 1 KiB. Events created through `events.k8s.io/v1` are also checked strictly:
//! `eventTime` required, `type` Normal or Warning, a `series` of at least 2 with its last
//! observed time, and none of the deprecated core fields set. Field names in the messages are
//! the internal type's, as the real server reports them.

use crate::error::Cause;
use serde_json::Value;

const REPORTING_INSTANCE_LIMIT: usize = 128;
const ACTION_LIMIT: usize = 128;
const REASON_LIMIT: usize = 128;
const NOTE_LIMIT: usize = 1024;

/// The value at `pointer` (core/v1 names), looking under the events.k8s.io name of its first
/// segment when the core name is absent (the renames are the conversion's).
fn at<'a>(obj: &'a Value, pointer: &str) -> Option<&'a Value> {
    obj.pointer(pointer).or_else(|| {
        let rest = pointer.strip_prefix('/')?;
        let (head, tail) = rest.split_once('/').unwrap_or((rest, ""));
        let events = crate::builtin_conversion::alias("events.k8s.io", "v1", "events")?;
        let (served, _) = events.renames.iter().find(|(_, stored)| *stored == head)?;
        let other = obj.get(*served)?;
        if tail.is_empty() { Some(other) } else { other.pointer(&format!("/{tail}")) }
    })
}

fn text<'a>(obj: &'a Value, pointer: &str) -> &'a str {
    at(obj, pointer).and_then(Value::as_str).unwrap_or_default()
}

fn set(obj: &Value, pointer: &str) -> bool {
    at(obj, pointer).is_some_and(|v| !v.is_null() && v != "" && v != 0)
}

fn too_long(field: &str, limit: usize) -> Cause {
    Cause::invalid(field, &Value::from(""), &format!("can have at most {limit} characters"))
}

/// What is wrong with `event` (stored form) created through `events.k8s.io` when `strict`,
/// else through core/v1.
pub fn create_causes(event: &Value, strict: bool) -> Vec<Cause> {
    let mut causes = legacy_causes(event);
    if !strict {
        return causes;
    }
    if let Some(series) = event.get("series").filter(|s| !s.is_null()) {
        if series.get("count").and_then(Value::as_i64).unwrap_or(0) < 2 {
            causes.push(Cause::invalid("series.count", &Value::from(""), "should be at least 2"));
        }
        if series.get("lastObservedTime").is_none_or(|t| t.is_null() || t == "") {
            causes.push(Cause::required("series.lastObservedTime", ""));
        }
    }
    if !set(event, "/eventTime") {
        causes.push(Cause::required("eventTime", ""));
    }
    let type_ = text(event, "/type");
    if type_ != "Normal" && type_ != "Warning" {
        causes.push(Cause::invalid(
            "type",
            &Value::from(""),
            &format!("has invalid value: {type_}"),
        ));
    }
    for (pointer, field) in [
        ("/firstTimestamp", "firstTimestamp"),
        ("/lastTimestamp", "lastTimestamp"),
        ("/count", "count"),
    ] {
        if set(event, pointer) {
            causes.push(Cause::invalid(field, &Value::from(""), "needs to be unset"));
        }
    }
    if set(event, "/source/component") || set(event, "/source/host") {
        causes.push(Cause::invalid("source", &Value::from(""), "needs to be unset"));
    }
    causes
}

fn legacy_causes(event: &Value) -> Vec<Cause> {
    let mut causes = Vec::new();
    let namespace = text(event, "/metadata/namespace");
    let object_namespace = text(event, "/involvedObject/namespace");
    let mismatch = || {
        Cause::invalid(
            "involvedObject.namespace",
            &Value::from(object_namespace),
            "does not match event.namespace",
        )
    };
    if !set(event, "/eventTime") {
        let agrees = if object_namespace.is_empty() {
            namespace.is_empty() || namespace == "default"
        } else {
            namespace == object_namespace
        };
        if !agrees {
            causes.push(mismatch());
        }
        return causes;
    }
    if object_namespace.is_empty() && namespace != "default" && namespace != "kube-system" {
        causes.push(mismatch());
    }
    let controller = text(event, "/reportingComponent");
    if controller.is_empty() {
        causes.push(Cause::required("reportingController", ""));
    }
    #[cfg(feature = "smp")]
    for message in kruise_core::admission::names::is_qualified_name(controller) {
        causes.push(Cause::invalid("reportingController", &Value::from(controller), &message));
    }
    let instance = text(event, "/reportingInstance");
    if instance.is_empty() {
        causes.push(Cause::required("reportingInstance", ""));
    }
    if instance.len() > REPORTING_INSTANCE_LIMIT {
        causes.push(too_long("reportingInstance", REPORTING_INSTANCE_LIMIT));
    }
    for (pointer, field, limit) in
        [("/action", "action", ACTION_LIMIT), ("/reason", "reason", REASON_LIMIT)]
    {
        let value = text(event, pointer);
        if value.is_empty() {
            causes.push(Cause::required(field, ""));
        }
        if value.len() > limit {
            causes.push(too_long(field, limit));
        }
    }
    if text(event, "/message").len() > NOTE_LIMIT {
        causes.push(too_long("message", NOTE_LIMIT));
    }
    causes
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn valid() -> Value {
        json!({
            "metadata": {"name": "web.1", "namespace": "prod"},
            "involvedObject": {"kind": "CloneSet", "namespace": "prod", "name": "web"},
            "eventTime": "2026-11-22T10:00:00.000000Z",
            "reportingComponent": "cloneset-controller",
            "reportingInstance": "manager-0",
            "action": "Create",
            "reason": "SuccessfulCreate",
            "message": "created pod web-abc",
            "type": "Normal"
        })
    }

    fn fields(causes: &[Cause]) -> Vec<&str> {
        causes.iter().map(|c| c.field.as_str()).collect()
    }

    #[test]
    fn a_complete_event_passes_both_ways() {
        assert!(create_causes(&valid(), true).is_empty());
        assert!(create_causes(&valid(), false).is_empty());
    }

    #[test]
    fn strict_creation_names_every_missing_or_forbidden_field() {
        let mut e = valid();
        let m = e.as_object_mut().expect("object");
        m.remove("eventTime");
        m.insert("type".into(), json!("Info"));
        m.insert("count".into(), json!(3));
        m.insert("series".into(), json!({"count": 1}));
        let causes = create_causes(&e, true);
        assert_eq!(
            fields(&causes),
            ["series.count", "series.lastObservedTime", "eventTime", "type", "count"]
        );
        // Through core/v1 only the legacy rule applies: without eventTime, namespaces agree.
        assert!(create_causes(&e, false).is_empty());
    }

    #[test]
    fn new_style_events_need_their_reporting_fields() {
        let mut e = valid();
        let m = e.as_object_mut().expect("object");
        for key in ["reportingComponent", "reportingInstance", "action", "reason"] {
            m.remove(key);
        }
        m.insert("message".into(), json!("x".repeat(1025)));
        let causes = create_causes(&e, false);
        // As upstream: an empty controller is also no qualified name (two more messages).
        let mut expected = vec!["reportingController"];
        if cfg!(feature = "smp") {
            expected.extend(["reportingController"; 2]);
        }
        expected.extend(["reportingInstance", "action", "reason", "message"]);
        assert_eq!(fields(&causes), expected);
    }

    #[test]
    fn the_events_api_shape_reads_the_same() {
        let served = json!({
            "metadata": {"name": "web.1", "namespace": "prod"},
            "regarding": {"kind": "CloneSet", "namespace": "prod", "name": "web"},
            "eventTime": "2026-11-22T10:00:00.000000Z",
            "reportingController": "cloneset-controller",
            "reportingInstance": "manager-0",
            "action": "Create",
            "reason": "SuccessfulCreate",
            "note": "created pod web-abc",
            "type": "Normal"
        });
        assert!(create_causes(&served, true).is_empty());
        let mut noisy = served.clone();
        noisy["deprecatedCount"] = json!(2);
        noisy["deprecatedSource"] = json!({"component": "x"});
        assert_eq!(fields(&create_causes(&noisy, true)), ["count", "source"]);
    }

    #[test]
    fn old_style_events_must_sit_in_their_objects_namespace() {
        let mut e = valid();
        e.as_object_mut().expect("object").remove("eventTime");
        e["metadata"]["namespace"] = json!("other");
        assert_eq!(fields(&create_causes(&e, false)), ["involvedObject.namespace"]);
    }
}
