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
    let mut out = pod.clone();
    let spec = out.spec.get_or_insert_with(Default::default);
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
        let original =
            serde_json::to_value(&out).map_err(|e| InjectError::Decode(e.to_string()))?;
        let patched = apply_patch(&original, &patch.0, PatchSchema::Pod)?;
        let mut patched: Pod =
            serde_json::from_value(patched).map_err(|e| InjectError::Decode(e.to_string()))?;
        let class = |p: &Pod| p.spec.as_ref().and_then(|s| s.priority_class_name.clone());
        if class(&patched) != class(&out)
            && let Some(spec) = patched.spec.as_mut()
        {
            spec.priority = None;
        }
        out = patched;
    }
    let injected = InjectedSubset {
        name: ws.metadata.name.clone().unwrap_or_default(),
        subset: subset_name.to_owned(),
        uid: generated_uid.filter(|u| !u.is_empty()).map(str::to_owned),
    };
    out.metadata
        .annotations
        .get_or_insert_with(Default::default)
        .insert(MATCHED_WORKLOADSPREAD_ANNOTATION.to_owned(), injected.to_annotation());
    *pod = out;
    Ok(true)
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
