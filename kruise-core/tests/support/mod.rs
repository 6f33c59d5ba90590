//! Helpers shared by the integration tests.
#![allow(dead_code)]

pub mod daemonset;
pub mod sidecarset_upgrade;
pub mod statefulset;

use std::path::{Path, PathBuf};

use k8s_openapi::api::core::v1::{Pod, PodCondition};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kruise_core::admission::pod_chain::PodChain;
use kruise_core::readiness::ReadinessGateStep;
use kruise_core::smp::{PatchSchema, apply_patch};
use serde_json::{Value, json};

/// `obj` with `patch` applied: a strategic merge patch with `schema`, else a JSON merge patch.
pub fn patched<T: serde::Serialize + serde::de::DeserializeOwned>(
    obj: &T,
    patch: &Value,
    schema: Option<PatchSchema>,
) -> T {
    let doc = serde_json::to_value(obj).expect("encode");
    let out = match schema {
        Some(schema) => apply_patch(&doc, patch, schema).expect("patch applies"),
        None => merge(doc, patch),
    };
    serde_json::from_value(out).expect("decode patched")
}

/// JSON merge patch (RFC 7386).
pub fn merge(mut doc: Value, patch: &Value) -> Value {
    match patch {
        Value::Object(p) => {
            if !doc.is_object() {
                doc = json!({});
            }
            if let Value::Object(d) = &mut doc {
                for (k, v) in p {
                    if v.is_null() {
                        d.remove(k);
                    } else {
                        let cur = d.remove(k).unwrap_or(Value::Null);
                        d.insert(k.clone(), merge(cur, v));
                    }
                }
            }
            doc
        }
        other => other.clone(),
    }
}

pub fn bump(meta: &mut ObjectMeta) {
    let rv: u64 = meta.resource_version.as_deref().and_then(|v| v.parse().ok()).unwrap_or(0);
    meta.resource_version = Some((rv + 1).to_string());
}

/// The scenario files (`*.yaml`) under `tests/scenarios/<kind>`, sorted.
pub fn scenario_files(kind: &str) -> Vec<PathBuf> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/scenarios").join(kind);
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .expect("scenario directory")
        .filter_map(Result::ok)
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|e| e == "yaml"))
        .collect();
    files.sort();
    assert!(!files.is_empty(), "no scenarios in {}", dir.display());
    files
}

/// `pod` as the cluster holds it once created: through the pod webhook's readiness-gate step
/// (upstream's rule: a pod a Kruise workload controls gets `KruisePodReady`), then opened by
/// the pod-readiness controller (the condition `True`, since the pod's creation) unless a
/// scenario wrote the condition itself.
pub fn admitted(mut pod: Pod) -> Pod {
    let step = ReadinessGateStep::default();
    PodChain::new(vec![&step]).run(&mut pod).expect("the readiness-gate step never fails");
    let gated = kruise_core::pod::has_readiness_gate(&pod, "KruisePodReady");
    if gated && kruise_core::pod::condition(&pod, "KruisePodReady").is_none() {
        let since = pod.metadata.creation_timestamp.clone();
        let status = pod.status.get_or_insert_with(Default::default);
        status.conditions.get_or_insert_with(Vec::new).push(PodCondition {
            type_: "KruisePodReady".into(),
            status: "True".into(),
            last_transition_time: since,
            ..Default::default()
        });
    }
    pod
}
