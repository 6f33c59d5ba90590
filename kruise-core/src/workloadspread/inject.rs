//! Writing a subset into a new pod.

use k8s_openapi::api::core::v1::{Affinity, NodeAffinity, NodeSelector, NodeSelectorTerm, Pod};
use kruise_api::apps::v1beta1::WorkloadSpread;

use super::{InjectedSubset, MATCHED_WORKLOADSPREAD_ANNOTATION, subset};
use crate::smp::{PatchSchema, SmpError, apply_patch};

/// Why a subset could not be injected.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum InjectError {
    /// The subset's `patch` does not apply to the pod.
    #[error("failed to merge patch raw: {0}")]
    Patch(#[from] SmpError),
    /// The pod could not be encoded or the patched pod decoded.
    #[error("failed to decode the patched pod: {0}")]
    Decode(String),
}

/// Injects subset `subset_name` of `ws` into `pod` (upstream's `injectWorkloadSpreadIntoPod`):
///
/// 1. the subset's tolerations are appended (those the pod already has are not repeated);
/// 2. its preferred node selector terms are appended to the pod's preferred node affinity
///    (terms already present are not repeated);
/// 3. its required term is merged into every required term of the pod (its expressions and
///    fields added to each, those already there not repeated), or becomes the pod's only
///    required term when the pod has none;
/// 4. its `patch` is applied as a strategic merge patch; when that changes
///    `priorityClassName`, `spec.priority` is cleared (the API server's priority admission
///    fills it again);
/// 5. the matched-workloadspread annotation names the WorkloadSpread, the subset and
///    `generated_uid`.
///
/// Returns whether the subset exists (`false`: the pod is left as it was). Injecting twice
/// gives the same pod as injecting once.
pub fn inject(
    ws: &WorkloadSpread,
    subset_name: &str,
    generated_uid: Option<&str>,
    pod: &mut Pod,
) -> Result<bool, InjectError> {
    let Some(subset) = subset(ws, subset_name) else {
        return Ok(false);
    };
    let spec = pod.spec.get_or_insert_with(Default::default);
    if let Some(tolerations) = subset.tolerations.as_ref().filter(|t| !t.is_empty()) {
        let pod_tolerations = spec.tolerations.get_or_insert_with(Vec::new);
        for t in tolerations {
            if !pod_tolerations.contains(t) {
                pod_tolerations.push(t.clone());
            }
        }
    }
    let needs_affinity =
        !subset.preferred_node_selector.is_empty() || subset.required_node_selector.is_some();
    if needs_affinity {
        let node_affinity = spec
            .affinity
            .get_or_insert_with(Affinity::default)
            .node_affinity
            .get_or_insert_with(NodeAffinity::default);
        if !subset.preferred_node_selector.is_empty() {
            let preferred = node_affinity
                .preferred_during_scheduling_ignored_during_execution
                .get_or_insert_with(Vec::new);
            for term in &subset.preferred_node_selector {
                if !preferred.contains(term) {
                    preferred.push(term.clone());
                }
            }
        }
        if let Some(required) = &subset.required_node_selector {
            let selector = node_affinity
                .required_during_scheduling_ignored_during_execution
                .get_or_insert_with(NodeSelector::default);
            if selector.node_selector_terms.is_empty() {
                selector.node_selector_terms = vec![required.clone()];
            } else {
                for term in &mut selector.node_selector_terms {
                    merge_term(term, required);
                }
            }
        }
    }
    if let Some(patch) = subset.patch.as_ref().filter(|p| !p.0.is_null()) {
        let class = |p: &Pod| p.spec.as_ref().and_then(|s| s.priority_class_name.clone());
        let class_before = class(pod);
        patch_pod(pod, &patch.0)?;
        if class(pod) != class_before
            && let Some(spec) = pod.spec.as_mut()
        {
            spec.priority = None;
        }
    }
    let injected = InjectedSubset {
        name: ws.metadata.name.clone().unwrap_or_default(),
        subset: subset_name.to_owned(),
        uid: generated_uid.filter(|u| !u.is_empty()).map(str::to_owned),
    };
    pod.metadata
        .annotations
        .get_or_insert_with(Default::default)
        .insert(MATCHED_WORKLOADSPREAD_ANNOTATION.to_owned(), injected.to_annotation());
    Ok(true)
}

/// Applies the strategic merge `patch` to `pod`. A patch of labels and annotations only (the
/// usual case: plain keys set to strings or to null) is applied to the maps directly; one
/// touching only `metadata` and `spec` is applied to those parts alone, so the rest of the pod
/// is never encoded; any other patch (other fields, or directives at its root) to the whole
/// pod. On an error the pod may be left partly patched.
fn patch_pod(pod: &mut Pod, patch: &serde_json::Value) -> Result<(), InjectError> {
    use serde_json::{Map, Value};
    if patch_metadata_maps(pod, patch) {
        return Ok(());
    }
    let decode = |e: serde_json::Error| InjectError::Decode(e.to_string());
    let parts_only =
        patch.as_object().is_some_and(|p| p.keys().all(|k| k == "metadata" || k == "spec"));
    if !parts_only {
        let original = serde_json::to_value(&*pod).map_err(decode)?;
        let patched = apply_patch(&original, patch, PatchSchema::Pod)?;
        *pod = serde_json::from_value(patched).map_err(decode)?;
        return Ok(());
    }
    let mut original = Map::new();
    if patch.get("metadata").is_some() {
        original.insert("metadata".into(), serde_json::to_value(&pod.metadata).map_err(decode)?);
    }
    if patch.get("spec").is_some() && pod.spec.is_some() {
        original.insert("spec".into(), serde_json::to_value(&pod.spec).map_err(decode)?);
    }
    let Value::Object(mut patched) =
        apply_patch(&Value::Object(original), patch, PatchSchema::Pod)?
    else {
        return Err(InjectError::Decode("the patched pod is not an object".into()));
    };
    if patch.get("metadata").is_some() {
        let metadata = patched.remove("metadata").unwrap_or_else(|| Value::Object(Map::new()));
        pod.metadata = serde_json::from_value(metadata).map_err(decode)?;
    }
    if patch.get("spec").is_some() {
        let spec = patched.remove("spec").unwrap_or(Value::Null);
        pod.spec = serde_json::from_value(spec).map_err(decode)?;
    }
    Ok(())
}

/// Applies a patch of the form `{"metadata": {"labels": {..}, "annotations": {..}}}` whose
/// values are strings (set) or null (delete), with no directive, straight to the pod's maps,
/// as the strategic merge would. False (the pod untouched) for any other patch.
fn patch_metadata_maps(pod: &mut Pod, patch: &serde_json::Value) -> bool {
    use serde_json::Value;
    let Some(root) = patch.as_object() else { return false };
    let Some(Value::Object(metadata)) = root.get("metadata") else { return false };
    let plain = |map: &Value| {
        map.as_object().is_some_and(|m| {
            m.iter().all(|(k, v)| !k.starts_with('$') && (v.is_string() || v.is_null()))
        })
    };
    if root.len() != 1
        || metadata.is_empty()
        || !metadata.iter().all(|(k, v)| (k == "labels" || k == "annotations") && plain(v))
    {
        return false;
    }
    for (field, entries) in metadata {
        let map = if field == "labels" {
            &mut pod.metadata.labels
        } else {
            &mut pod.metadata.annotations
        };
        // As the merge does, a map named in the patch exists afterwards, even if empty.
        let map = map.get_or_insert_with(Default::default);
        for (key, value) in entries.as_object().into_iter().flatten() {
            match value.as_str() {
                Some(value) => {
                    map.insert(key.clone(), value.to_owned());
                }
                None => {
                    map.remove(key);
                }
            }
        }
    }
    true
}

/// Adds the requirements of `extra` that `term` lacks.
fn merge_term(term: &mut NodeSelectorTerm, extra: &NodeSelectorTerm) {
    for (mine, theirs) in [
        (&mut term.match_expressions, &extra.match_expressions),
        (&mut term.match_fields, &extra.match_fields),
    ] {
        let Some(theirs) = theirs.as_ref().filter(|t| !t.is_empty()) else {
            continue;
        };
        let mine = mine.get_or_insert_with(Vec::new);
        for r in theirs {
            if !mine.contains(r) {
                mine.push(r.clone());
            }
        }
    }
}

/// The JSON patch (RFC 6902) that [`inject`] makes to `pod`, or `None` when the subset does
/// not exist or nothing changes: what a mutating webhook answers.
pub fn inject_patch(
    ws: &WorkloadSpread,
    subset_name: &str,
    generated_uid: Option<&str>,
    pod: &Pod,
) -> Result<Option<serde_json::Value>, InjectError> {
    let mut mutated = pod.clone();
    if !inject(ws, subset_name, generated_uid, &mut mutated)? {
        return Ok(None);
    }
    let before = serde_json::to_value(pod).map_err(|e| InjectError::Decode(e.to_string()))?;
    let after = serde_json::to_value(&mutated).map_err(|e| InjectError::Decode(e.to_string()))?;
    let patch = json_patch::diff(&before, &after);
    if patch.0.is_empty() {
        return Ok(None);
    }
    serde_json::to_value(patch).map(Some).map_err(|e| InjectError::Decode(e.to_string()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// The patch applied to the whole pod, as the API server would.
    fn whole(pod: &Pod, patch: &serde_json::Value) -> Result<Pod, String> {
        let original = serde_json::to_value(pod).map_err(|e| e.to_string())?;
        let patched = apply_patch(&original, patch, PatchSchema::Pod).map_err(|e| e.to_string())?;
        serde_json::from_value(patched).map_err(|e| e.to_string())
    }

    #[test]
    fn patching_parts_matches_patching_the_whole_pod() {
        let pod: Pod = serde_json::from_value(json!({
            "metadata": {"name": "p", "labels": {"app": "web"}, "annotations": {"a": "1"}},
            "spec": {
                "containers": [
                    {"name": "main", "image": "nginx", "env": [{"name": "A", "value": "1"}]},
                    {"name": "side", "image": "busybox"}
                ],
                "priorityClassName": "low",
                "priority": 10
            },
            "status": {"phase": "Pending"}
        }))
        .expect("a pod");
        let bare: Pod =
            serde_json::from_value(json!({"metadata": {"name": "bare"}})).expect("a pod");
        let patches = [
            json!({"metadata": {"labels": {"zone": "a", "app": null}}}),
            json!({"metadata": {"labels": {"zone": "a"}, "annotations": {"a": null, "b": "x"}}}),
            json!({"metadata": {"labels": {"n": 1}}}),
            json!({"metadata": {"labels": {"$patch": "replace", "z": "1"}}}),
            json!({"metadata": {"labels": {}}}),
            json!({"metadata": {"labels": {"gone": null}}}),
            json!({"metadata": {"annotations": {"b": "2"}}, "spec": {"priorityClassName": "high"}}),
            json!({"spec": {"containers": [{"name": "main", "env": [{"name": "B", "value": "2"}]}]}}),
            json!({"spec": {"containers": [{"name": "side", "$patch": "delete"}]}}),
            json!({"spec": {"$setElementOrder/containers": [{"name": "side"}, {"name": "main"}],
                            "containers": [{"name": "main", "image": "nginx:2"}]}}),
            json!({"spec": {"containers": [{"name": "only", "image": "x"}], "$retainKeys": ["containers"]}}),
            json!({"spec": {"$patch": "replace", "containers": [{"name": "new", "image": "y"}]}}),
            json!({"metadata": {"$patch": "replace", "name": "renamed"}}),
            json!({"spec": null}),
            json!({"status": {"phase": "Running"}, "metadata": {"labels": {"x": "y"}}}),
            json!({"$patch": "replace", "metadata": {"name": "root"}}),
        ];
        for patch in &patches {
            for original in [&pod, &bare] {
                let mut parts = original.clone();
                let parts = patch_pod(&mut parts, patch).map(|()| parts).map_err(|e| e.to_string());
                let full = whole(original, patch);
                match (parts, full) {
                    (Ok(parts), Ok(full)) => assert_eq!(parts, full, "patch {patch}"),
                    (Err(_), Err(_)) => {}
                    (parts, full) => panic!("patch {patch}: parts {parts:?}, whole {full:?}"),
                }
            }
        }
    }
}
