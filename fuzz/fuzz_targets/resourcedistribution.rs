//! ResourceDistribution from arbitrary bytes: a distribution as JSON through the webhook's
//! rules and the planner, over namespaces and objects also taken from the input. Nothing
//! panics; a refusal names a field under `spec.`; the counts add up; nothing is created or
//! patched in a protected namespace; and the plan carried out leaves nothing to write.

#![no_main]

use std::sync::Arc;

use kruise_api::apps::v1beta1::ResourceDistribution;
use kruise_core::plan::Action;
use kruise_core::resourcedistribution::admission::validate_resource_distribution;
use kruise_core::resourcedistribution::{NamespaceView, PROTECTED_NAMESPACES, Snapshot, plan};
use libfuzzer_sys::fuzz_target;
use serde_json::{Value, json};

fuzz_target!(|data: &[u8]| {
    let Ok(input) = serde_json::from_slice::<Value>(data) else { return };
    let Ok(distribution) =
        serde_json::from_value::<ResourceDistribution>(input["distribution"].clone())
    else {
        return;
    };
    for message in validate_resource_distribution(&distribution, None).messages() {
        assert!(message.starts_with("spec."), "{message}");
    }
    let namespaces: Vec<NamespaceView> = input["namespaces"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|ns| {
            Some(NamespaceView {
                name: ns.get("name")?.as_str()?.to_owned(),
                labels: serde_json::from_value(ns.get("labels").cloned().unwrap_or(json!({})))
                    .ok()?,
                terminating: ns.get("terminating").and_then(Value::as_bool).unwrap_or(false),
            })
        })
        .collect();
    // One object per namespace, kind and name, each with its kind, as a server holds them.
    let key = |o: &Value| {
        let text = |p: &str| o.pointer(p).and_then(Value::as_str).unwrap_or_default().to_owned();
        (text("/metadata/namespace"), text("/kind"), text("/metadata/name"))
    };
    let unique: std::collections::BTreeMap<_, Value> = input["objects"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|o| (key(o), o.clone()))
        .filter(|(k, _)| !k.1.is_empty())
        .collect();
    let copies: Vec<Arc<Value>> = unique.into_values().map(Arc::new).collect();
    let snapshot =
        Snapshot { distribution: distribution.clone(), namespaces, copies, failures: Vec::new() };
    let now = jiff::Timestamp::UNIX_EPOCH;
    let first = plan(&snapshot, now);
    if let Some(status) = &first.status {
        assert_eq!(status.succeeded + status.failed, status.desired);
    }
    let mut objects: Vec<Value> = snapshot.copies.iter().map(|o| o.as_ref().clone()).collect();
    let at = |objects: &[Value], target: &kruise_core::plan::Target| {
        objects.iter().position(|o| {
            let (ns, kind, name) = key(o);
            Some(ns.as_str()) == target.namespace.as_deref()
                && kind == target.kind.kind
                && name == target.name
        })
    };
    for action in &first.actions {
        match action {
            Action::CreateObject { target, body } => {
                let ns = target.namespace.as_deref().unwrap_or_default();
                assert!(!PROTECTED_NAMESPACES.contains(&ns));
                objects.push(body.as_ref().clone());
            }
            Action::PatchObject { target, patch, .. } => {
                let ns = target.namespace.as_deref().unwrap_or_default();
                assert!(!PROTECTED_NAMESPACES.contains(&ns));
                let i = at(&objects, target).expect("patches what exists");
                json_patch::merge(&mut objects[i], patch.body());
            }
            Action::DeleteObject { target } => {
                if let Some(i) = at(&objects, target) {
                    objects.remove(i);
                }
            }
            other => panic!("unexpected action {other:?}"),
        }
    }
    let mut settled = distribution;
    settled.status = first.status.clone().or(settled.status);
    let again = Snapshot {
        distribution: settled,
        namespaces: snapshot.namespaces.clone(),
        copies: objects.into_iter().map(Arc::new).collect(),
        failures: Vec::new(),
    };
    let second = plan(&again, now);
    assert!(
        second
            .actions
            .iter()
            .all(|a| !matches!(a, Action::CreateObject { .. } | Action::PatchObject { .. })),
        "{:?}",
        second.actions
    );
});
