//! ResourceDistribution, for any namespaces, targets and objects already there:
//! - nothing is written in `kube-system` or `kube-public` (only the distribution's own copies
//!   there are deleted), in a namespace that is missing or
//!   being deleted, or over an object in conflict (someone else's, or edited by hand);
//! - a copy is created only where nothing of the name exists, and only the distribution's
//!   own copies are patched or deleted;
//! - `succeeded + failed == desired`, and `desired` is the number of targets;
//! - carried out, the plan leaves nothing to do: planning again on its outcome writes nothing
//!   and leaves the status as it is.

use std::collections::BTreeMap;
use std::sync::Arc;

use kruise_api::apps::v1beta1::ResourceDistribution;
use kruise_core::plan::{Action, Guard};
use kruise_core::resourcedistribution::{
    NamespaceView, PROTECTED_NAMESPACES, Resource, Snapshot, controller_uid, desired_copy, plan,
    source_hash,
};
use proptest::prelude::*;
use serde_json::{Value, json};

const NAMES: [&str; 7] = ["default", "kube-system", "kube-public", "a", "b", "c", "d"];

/// What is in a namespace before the plan.
#[derive(Clone, Copy, Debug)]
enum Before {
    Nothing,
    InSync,
    /// The copy of an older resource.
    Stale,
    /// The current copy, its data changed by hand.
    Edited,
    /// An object of the same name someone else owns.
    Foreign,
}

fn before() -> impl Strategy<Value = Before> {
    prop_oneof![
        Just(Before::Nothing),
        Just(Before::InSync),
        Just(Before::Stale),
        Just(Before::Edited),
        Just(Before::Foreign),
    ]
}

#[derive(Clone, Debug)]
struct Case {
    /// Per name: exists, labelled group=a, terminating, and what it holds.
    namespaces: Vec<(bool, bool, bool, Before)>,
    all: bool,
    included: Vec<bool>,
    excluded: Vec<bool>,
    selector: bool,
    secret: bool,
}

fn case() -> impl Strategy<Value = Case> {
    let n = NAMES.len();
    (
        prop::collection::vec(
            (any::<bool>(), any::<bool>(), prop::bool::weighted(0.15), before()),
            n,
        ),
        prop::bool::weighted(0.2),
        prop::collection::vec(prop::bool::weighted(0.3), n),
        prop::collection::vec(prop::bool::weighted(0.15), n),
        any::<bool>(),
        any::<bool>(),
    )
        .prop_map(|(namespaces, all, included, excluded, selector, secret)| Case {
            namespaces,
            all,
            included,
            excluded,
            selector,
            secret,
        })
}

fn resource(secret: bool, version: &str) -> Value {
    if secret {
        json!({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "creds",
               "labels": {"v": version}}, "stringData": {"token": version}})
    } else {
        json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "creds"},
               "data": {"config": version}})
    }
}

fn distribution(case: &Case, resource: Value) -> ResourceDistribution {
    let list = |picked: &[bool]| {
        let names: Vec<Value> = NAMES
            .iter()
            .zip(picked)
            .filter(|(_, p)| **p)
            .map(|(n, _)| json!({"name": n}))
            .collect();
        json!({ "list": names })
    };
    let mut targets = json!({
        "allNamespaces": case.all,
        "includedNamespaces": list(&case.included),
        "excludedNamespaces": list(&case.excluded),
    });
    if case.selector {
        targets["namespaceSelector"] = json!({"matchLabels": {"group": "a"}});
    }
    serde_json::from_value(json!({
        "metadata": {"name": "rd", "uid": "rd-uid", "generation": 1},
        "spec": {"resource": resource, "targets": targets},
    }))
    .expect("a distribution")
}

/// The object as kube-apiserver would store it.
fn stored(mut object: Value, rv: u64) -> Value {
    let obj = object.as_object_mut().expect("an object");
    obj.remove("stringData");
    object["metadata"]["resourceVersion"] = json!(rv.to_string());
    if object["metadata"].get("uid").is_none() {
        object["metadata"]["uid"] = json!(format!("uid-{rv}"));
    }
    object
}

fn copy_of(rd: &ResourceDistribution, namespace: &str) -> Value {
    let resource = Resource::parse(&rd.spec.resource.0).expect("a resource");
    let hash = source_hash(&rd.spec.resource.0);
    desired_copy(rd, &resource, namespace, &hash)
}

/// The world before: namespaces and objects.
fn world(case: &Case, rd: &ResourceDistribution) -> (Vec<NamespaceView>, BTreeMap<String, Value>) {
    let old = distribution(case, resource(case.secret, "old"));
    let mut namespaces = Vec::new();
    let mut objects = BTreeMap::new();
    for (i, (name, (exists, labelled, terminating, held))) in
        NAMES.iter().zip(&case.namespaces).enumerate()
    {
        if !exists {
            continue;
        }
        let labels =
            if *labelled { [("group".to_owned(), "a".to_owned())].into() } else { BTreeMap::new() };
        namespaces.push(NamespaceView {
            name: (*name).to_owned(),
            labels,
            terminating: *terminating,
        });
        let object = match held {
            Before::Nothing => continue,
            Before::InSync => copy_of(rd, name),
            Before::Stale => copy_of(&old, name),
            Before::Edited => {
                let mut copy = copy_of(rd, name);
                copy["data"] = json!({"config": "ZWRpdGVk"});
                copy
            }
            Before::Foreign => {
                let mut copy = copy_of(rd, name);
                copy["metadata"]["ownerReferences"] = json!([]);
                copy
            }
        };
        objects.insert((*name).to_owned(), stored(object, 100 + i as u64));
    }
    (namespaces, objects)
}

fn snapshot(
    rd: &ResourceDistribution,
    namespaces: &[NamespaceView],
    objects: &BTreeMap<String, Value>,
) -> Snapshot {
    Snapshot {
        distribution: rd.clone(),
        namespaces: namespaces.to_vec(),
        copies: objects.values().cloned().map(Arc::new).collect(),
        failures: Vec::new(),
    }
}

fn namespace_of(action: &Action) -> String {
    match action {
        Action::CreateObject { target, .. }
        | Action::PatchObject { target, .. }
        | Action::DeleteObject { target } => target.namespace.clone().unwrap_or_default(),
        other => panic!("unexpected action {other:?}"),
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn plans_respect_conflicts_and_settle(case in case()) {
        let rd = distribution(&case, resource(case.secret, "new"));
        let (namespaces, mut objects) = world(&case, &rd);
        let live = |ns: &str| namespaces.iter().any(|n| n.name == ns && !n.terminating);
        let now: jiff::Timestamp = "2026-01-01T09:00:00Z".parse().expect("a time");
        let first = plan(&snapshot(&rd, &namespaces, &objects), now);

        for action in &first.actions {
            let ns = namespace_of(action);
            let deletes = matches!(action, Action::DeleteObject { .. });
            prop_assert!(deletes || !PROTECTED_NAMESPACES.contains(&ns.as_str()), "wrote {ns}");
            prop_assert!(live(&ns), "wrote in missing or terminating {ns}");
            let held = NAMES.iter().position(|n| *n == ns).map(|i| case.namespaces[i].3);
            match action {
                Action::CreateObject { .. } => prop_assert!(!objects.contains_key(&ns)),
                Action::PatchObject { target, .. } => {
                    prop_assert!(matches!(held, Some(Before::Stale)), "patched {ns}: {held:?}");
                    prop_assert!(matches!(target.guard, Guard::ResourceVersion(_)));
                }
                Action::DeleteObject { .. } => {
                    let object = &objects[&ns];
                    prop_assert_eq!(controller_uid(object), Some("rd-uid"));
                    prop_assert!(!matches!(held, Some(Before::Foreign)));
                }
                _ => unreachable!(),
            }
        }
        let status = first.status.clone().expect("a first status");
        prop_assert_eq!(status.succeeded + status.failed, status.desired);
        prop_assert!(status.succeeded >= 0 && status.failed >= 0);

        // Carry the plan out, as kube-apiserver would.
        for (i, action) in first.actions.iter().enumerate() {
            let ns = namespace_of(action);
            match action {
                Action::CreateObject { body, .. } => {
                    objects.insert(ns, stored(body.as_ref().clone(), 1000 + i as u64));
                }
                Action::PatchObject { patch, .. } => {
                    let object = objects.get_mut(&ns).expect("the patched object");
                    json_patch::merge(object, patch.body());
                    object["metadata"]["resourceVersion"] = json!((1000 + i).to_string());
                }
                Action::DeleteObject { .. } => {
                    objects.remove(&ns);
                }
                _ => unreachable!(),
            }
        }
        let mut settled = rd.clone();
        settled.status = Some(status);
        let later: jiff::Timestamp = "2026-01-01T09:05:00Z".parse().expect("a time");
        let second = plan(&snapshot(&settled, &namespaces, &objects), later);
        prop_assert!(second.actions.is_empty(), "{:?}", second.actions);
        prop_assert!(second.status.is_none(), "{:?}", second.status);
    }
}
