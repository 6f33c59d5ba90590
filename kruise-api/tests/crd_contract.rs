//! The generated CRDs against upstream's: names, scope, versions, storage, subresources,
//! printer columns, and every upstream schema property with its type and default.

mod common;

use std::collections::BTreeMap;

use serde_json::{Value, json};

fn generated() -> BTreeMap<String, Value> {
    kruise_api::crds()
        .into_iter()
        .map(|crd| {
            let name = kruise_api::crd::file_name(&crd);
            (name, serde_json::to_value(&crd).expect("encode crd"))
        })
        .collect()
}

fn version<'a>(crd: &'a Value, name: &str) -> Option<&'a Value> {
    crd["spec"]["versions"].as_array()?.iter().find(|v| v["name"] == name)
}

/// Printer columns without descriptions, which are prose rather than contract.
fn columns(version: &Value) -> Vec<Value> {
    version["additionalPrinterColumns"]
        .as_array()
        .map(|cols| {
            cols.iter()
                .map(|c| {
                    json!({
                        "name": c["name"], "type": c["type"], "jsonPath": c["jsonPath"],
                        "priority": c.get("priority").cloned().unwrap_or(json!(0)),
                        "format": c.get("format").cloned().unwrap_or(Value::Null),
                    })
                })
                .collect()
        })
        .unwrap_or_default()
}

fn subresources(version: &Value) -> Value {
    let mut sub = version.get("subresources").cloned().unwrap_or(json!({}));
    if let Some(map) = sub.as_object_mut() {
        map.retain(|_, v| !v.is_null());
    }
    sub
}

fn check(problems: &mut Vec<String>, file: &str, what: &str, a: &Value, b: &Value) {
    if a != b {
        problems.push(format!("{file}: {what}: ours {a} upstream {b}"));
    }
}

/// Compares one CRD; returns every mismatch as a line.
fn compare(file: &str, ours: &Value, theirs: &Value) -> Vec<String> {
    let mut problems = Vec::new();
    check(
        &mut problems,
        file,
        "metadata.name",
        &ours["metadata"]["name"],
        &theirs["metadata"]["name"],
    );
    check(&mut problems, file, "group", &ours["spec"]["group"], &theirs["spec"]["group"]);
    check(&mut problems, file, "scope", &ours["spec"]["scope"], &theirs["spec"]["scope"]);
    for field in ["kind", "listKind", "plural", "singular"] {
        check(
            &mut problems,
            file,
            field,
            &ours["spec"]["names"][field],
            &theirs["spec"]["names"][field],
        );
    }
    let list = |v: &Value| v.as_array().cloned().map(Value::Array).unwrap_or(json!([]));
    check(
        &mut problems,
        file,
        "shortNames",
        &list(&ours["spec"]["names"]["shortNames"]),
        &list(&theirs["spec"]["names"]["shortNames"]),
    );
    check(
        &mut problems,
        file,
        "categories",
        &list(&ours["spec"]["names"]["categories"]),
        &list(&theirs["spec"]["names"]["categories"]),
    );
    let names = |crd: &Value| -> Vec<Value> {
        crd["spec"]["versions"]
            .as_array()
            .map(|vs| vs.iter().map(|v| v["name"].clone()).collect())
            .unwrap_or_default()
    };
    let (ours_versions, their_versions) = (names(ours), names(theirs));
    check(
        &mut problems,
        file,
        "versions",
        &Value::Array(ours_versions),
        &Value::Array(their_versions.clone()),
    );
    for name in their_versions.iter().filter_map(Value::as_str) {
        let (Some(o), Some(t)) = (version(ours, name), version(theirs, name)) else { continue };
        check(&mut problems, file, &format!("{name} served"), &o["served"], &t["served"]);
        check(&mut problems, file, &format!("{name} storage"), &o["storage"], &t["storage"]);
        check(
            &mut problems,
            file,
            &format!("{name} deprecated"),
            &o.get("deprecated").cloned().unwrap_or(json!(false)),
            &t.get("deprecated").cloned().unwrap_or(json!(false)),
        );
        check(
            &mut problems,
            file,
            &format!("{name} subresources"),
            &subresources(o),
            &subresources(t),
        );
        check(
            &mut problems,
            file,
            &format!("{name} printer columns"),
            &Value::Array(columns(o)),
            &Value::Array(columns(t)),
        );
        let ours_nodes = common::flatten_schema(&o["schema"]["openAPIV3Schema"]);
        let ours_by_path: BTreeMap<&str, &common::SchemaNode> =
            ours_nodes.iter().map(|n| (n.path.as_str(), n)).collect();
        for node in common::flatten_schema(&t["schema"]["openAPIV3Schema"]) {
            match ours_by_path.get(node.path.as_str()) {
                None => problems.push(format!(
                    "{file} {name}: missing property {} ({:?})",
                    node.path, node.type_
                )),
                Some(ours)
                    if ours.type_ != node.type_
                        || ours.int_or_string != node.int_or_string
                        || ours.preserve_unknown != node.preserve_unknown
                        || ours.default != node.default
                        || ours.required != node.required =>
                {
                    problems.push(format!("{file} {name}: {} is {:?} int-or-string={} preserve={} default={:?} required={:?}, upstream {:?} int-or-string={} preserve={} default={:?} required={:?}",
                        node.path, ours.type_, ours.int_or_string, ours.preserve_unknown, ours.default, ours.required,
                        node.type_, node.int_or_string, node.preserve_unknown, node.default, node.required));
                }
                Some(_) => {}
            }
        }
        // Our schema may not invent properties upstream does not have.
        let theirs_nodes = common::flatten_schema(&t["schema"]["openAPIV3Schema"]);
        let their_paths: std::collections::BTreeSet<&str> =
            theirs_nodes.iter().map(|n| n.path.as_str()).collect();
        for node in &ours_nodes {
            if !their_paths.contains(node.path.as_str()) {
                problems
                    .push(format!("{file} {name}: extra property {} not in upstream", node.path));
            }
        }
    }
    problems
}

#[test]
fn every_upstream_crd_is_generated_and_matches() {
    let ours = generated();
    let theirs = common::upstream_crds();
    let mut problems = Vec::new();
    for (file, their_crd) in &theirs {
        match ours.get(file) {
            None => problems.push(format!("{file}: not generated")),
            Some(our_crd) => problems.extend(compare(file, our_crd, their_crd)),
        }
    }
    for file in ours.keys() {
        if !theirs.contains_key(file) {
            problems.push(format!("{file}: generated but not upstream"));
        }
    }
    assert!(
        problems.is_empty(),
        "{} CRD contract mismatches:\n{}",
        problems.len(),
        problems.join("\n")
    );
}
