//! Every document in upstream's documentation examples decodes through `KruiseObject` and
//! encodes back to the same JSON (nulls aside); documents that are not Kruise objects are
//! refused with an error naming the kind.

mod common;

use std::path::{Path, PathBuf};

use kruise_api::{DecodeError, KruiseObject};
use serde_json::Value;

/// Documents upstream's docs show that are not valid Kruise objects, and the error each must
/// produce (a substring of its message).
const EXPECTED_REFUSALS: &[(&str, &str)] = &[
    // A kustomize generator config, not a Kruise kind.
    ("docs_cli-tool_kustomize-plugin_4.yaml", "no kind \"ResourceDistributionGenerator\""),
    // Elided with "... ..." in the docs: metadata is a string.
    ("docs_cli-tool_kustomize-plugin_3.yaml", "at `metadata`"),
    // The docs elide the sidecar containers as `containers: ...`: a string, not a list.
    ("docs_user-manuals_sidecarset_39.yaml", "at `spec.containers`"),
    ("docs_user-manuals_sidecarset_40.yaml", "at `spec.containers`"),
    // The docs elide the whole spec, or the targets, with "...".
    ("docs_user-manuals_podunavailablebudget_6.yaml", "at `spec`"),
    ("docs_user-manuals_resourcedistribution_1.yaml", "at `spec.targets`"),
];

struct Document {
    file: String,
    index: usize,
    value: Value,
}

fn documents(dir: &Path) -> Vec<Document> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap_or_else(|err| panic!("reading {}: {err}", dir.display()))
        .map(|entry| entry.expect("dir entry").path())
        .filter(|path| path.extension().is_some_and(|ext| ext == "yaml" || ext == "yml"))
        .collect();
    files.sort();
    let mut out = Vec::new();
    for path in files {
        let text = std::fs::read_to_string(&path).expect("read example");
        let file = path.file_name().expect("file name").to_string_lossy().into_owned();
        for (index, doc) in serde_yaml::Deserializer::from_str(&text).enumerate() {
            let yaml = serde_yaml::Value::deserialize(doc)
                .unwrap_or_else(|err| panic!("{file}: document {index} is not YAML: {err}"));
            if yaml.is_null() {
                continue;
            }
            let value = serde_json::to_value(yaml).expect("YAML to JSON");
            out.push(Document { file: file.clone(), index, value });
        }
    }
    out
}

use serde::Deserialize;

/// Drops nulls (and the members that hold them), which Go and Rust encoders treat alike.
fn strip_nulls(value: &mut Value) {
    match value {
        Value::Object(map) => {
            map.retain(|_, v| !v.is_null());
            map.values_mut().for_each(strip_nulls);
        }
        Value::Array(items) => items.iter_mut().for_each(strip_nulls),
        _ => {}
    }
}

/// The first path where two JSON documents differ, for a readable failure.
fn first_difference(path: String, a: &Value, b: &Value) -> Option<String> {
    match (a, b) {
        (Value::Object(x), Value::Object(y)) => {
            for key in x.keys().chain(y.keys()) {
                match (x.get(key), y.get(key)) {
                    (Some(u), Some(v)) => {
                        if let Some(d) = first_difference(format!("{path}.{key}"), u, v) {
                            return Some(d);
                        }
                    }
                    (Some(u), None) => return Some(format!("{path}.{key} lost (was {u})")),
                    (None, Some(v)) => return Some(format!("{path}.{key} added ({v})")),
                    (None, None) => {}
                }
            }
            None
        }
        (Value::Array(x), Value::Array(y)) if x.len() == y.len() => x
            .iter()
            .zip(y)
            .enumerate()
            .find_map(|(i, (u, v))| first_difference(format!("{path}[{i}]"), u, v)),
        _ if a == b => None,
        _ => Some(format!("{path}: {a} became {b}")),
    }
}

fn check_dir(dir: &Path, refusals: &[(&str, &str)]) -> (usize, Vec<String>) {
    let mut problems = Vec::new();
    let mut decoded = 0;
    for doc in documents(dir) {
        let label = format!("{} (document {})", doc.file, doc.index);
        let expected = refusals.iter().find(|(file, _)| *file == doc.file).map(|(_, msg)| *msg);
        match (KruiseObject::from_value(doc.value.clone()), expected) {
            (Ok(object), None) => {
                decoded += 1;
                let mut original = doc.value;
                let mut encoded = serde_json::to_value(&object).expect("encode");
                strip_nulls(&mut original);
                strip_nulls(&mut encoded);
                if let Some(diff) = first_difference(String::new(), &original, &encoded) {
                    problems.push(format!("{label}: round trip changed {diff}"));
                }
            }
            (Ok(_), Some(msg)) => {
                problems.push(format!("{label}: decoded, expected refusal: {msg}"))
            }
            (Err(err), Some(msg)) => {
                if !err.to_string().contains(msg) {
                    problems.push(format!("{label}: error {err:?} does not say {msg:?}"));
                }
            }
            // Documents of other API groups (a plain Pod, say) are not Kruise's to decode.
            (Err(DecodeError::NotKruise { .. }), None) => {}
            (Err(err), None) => problems.push(format!("{label}: {err}")),
        }
    }
    (decoded, problems)
}

#[test]
fn upstream_examples_round_trip() {
    let (decoded, problems) =
        check_dir(&common::upstream_dir().join("examples"), EXPECTED_REFUSALS);
    assert!(problems.is_empty(), "{} problems:\n{}", problems.len(), problems.join("\n"));
    assert!(decoded >= 70, "only {decoded} Kruise documents decoded");
}

/// Kruise Rollout manifests kept in this crate (`tests/examples/rollouts`): the echoserver
/// tutorial's v1alpha1 Rollout, v1beta1 Rollouts and a TrafficRouting. Each decodes and
/// encodes back unchanged, and each two-version kind converts to its other version and back
/// unchanged.
#[test]
fn rollout_examples_round_trip() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/examples/rollouts");
    let (decoded, mut problems) = check_dir(&dir, &[]);
    for doc in documents(&dir) {
        let label = format!("{} (document {})", doc.file, doc.index);
        let Ok(object) = KruiseObject::from_value(doc.value) else { continue };
        let api_version = object.api_version();
        let other = match api_version.as_str() {
            "rollouts.kruise.io/v1alpha1" => "rollouts.kruise.io/v1beta1",
            "rollouts.kruise.io/v1beta1" => "rollouts.kruise.io/v1alpha1",
            _ => continue,
        };
        if !KruiseObject::registered().contains(&(other.to_owned(), object.kind().to_owned())) {
            continue;
        }
        let before = serde_json::to_value(&object).expect("encode");
        let back = object
            .convert_to(other)
            .and_then(|there| there.convert_to(&api_version))
            .map(|back| serde_json::to_value(&back).expect("encode"));
        match back {
            Ok(after) => {
                if let Some(diff) = first_difference(String::new(), &before, &after) {
                    problems.push(format!("{label}: conversion round trip changed {diff}"));
                }
            }
            Err(err) => problems.push(format!("{label}: conversion failed: {err}")),
        }
    }
    assert!(problems.is_empty(), "{} problems:\n{}", problems.len(), problems.join("\n"));
    assert_eq!(decoded, 4, "every rollouts example decodes");
}
