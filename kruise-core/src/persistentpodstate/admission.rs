//! PersistentPodState validation, as upstream's `vpersistentpodstate.kb.io` does it: a
//! complete `targetRef` to a StatefulSet (`apps` or `apps.kruise.io`), immutable; a required
//! or a preferred topology; no other PersistentPodState of the namespace targeting the same
//! workload. Upstream prints the values with Go's `%#v`; here they are printed as JSON.
//!
//! Beside upstream: topology keys must be label keys, and preferred weights 1 to 100 (the
//! values a pod's preferred node affinity takes), so that a bad PersistentPodState is refused
//! here rather than making every recreated pod fail validation.

use kruise_api::apps::v1beta1::PersistentPodState;

use super::{is_supported_target, refers_to};
use crate::admission::meta::validate_label_name;
use crate::field::{BadValue, FieldError, FieldErrors, FieldPath};

/// Upstream's checks of `state` (`old`: the stored one, on update), against the other
/// PersistentPodStates of its namespace (`others`; itself may be among them).
pub fn validate_persistent_pod_state(
    state: &PersistentPodState,
    old: Option<&PersistentPodState>,
    others: &[&PersistentPodState],
) -> FieldErrors {
    let mut errs = FieldErrors::new();
    let spec = FieldPath::new("spec");
    let target_path = spec.child("targetRef");
    let target = &state.spec.target_reference;
    let shown = || BadValue::Go(serde_json::to_string(target).unwrap_or_default());
    if target.api_version.is_empty() || target.kind.is_empty() || target.name.is_empty() {
        errs.push(FieldError::invalid(
            &target_path,
            shown(),
            "empty targetRef is not valid for PersistentPodState.",
        ));
    }
    if !is_supported_target(&target.api_version, &target.kind) {
        errs.push(FieldError::invalid(
            &target_path,
            shown(),
            "targetRef.Kind must be StatefulSet or in PPS_Watch_Custom_Workload_WhiteList",
        ));
    }
    if state.spec.required_persistent_topology.is_none()
        && state.spec.preferred_persistent_topology.is_empty()
    {
        errs.push(FieldError::invalid(
            &spec,
            BadValue::Go(serde_json::to_string(&state.spec).unwrap_or_default()),
            "TopologyConstraint and TopologyPreference cannot be empty at the same time",
        ));
    }
    if let Some(required) = &state.spec.required_persistent_topology {
        let path = spec.child("requiredPersistentTopology").child("keys");
        for (i, key) in required.keys.iter().enumerate() {
            errs.extend(validate_label_name(key, &path.index(i)));
        }
    }
    for (i, term) in state.spec.preferred_persistent_topology.iter().enumerate() {
        let path = spec.child("preferredPersistentTopology").index(i);
        if !(1..=100).contains(&term.weight) {
            errs.push(FieldError::invalid(
                &path.child("weight"),
                i64::from(term.weight),
                "must be in the range 1-100",
            ));
        }
        for (j, key) in term.preference.keys.iter().enumerate() {
            errs.extend(validate_label_name(key, &path.child("preference").child("keys").index(j)));
        }
    }
    if let Some(old) = old
        && old.spec.target_reference != *target
    {
        errs.push(FieldError::forbidden(&target_path, "targetRef is immutable"));
    }
    let name = state.metadata.name.as_deref().unwrap_or_default();
    let conflict = others.iter().find(|other| {
        other.metadata.name.as_deref().unwrap_or_default() != name
            && refers_to(
                &other.spec.target_reference,
                &target.api_version,
                &target.kind,
                &target.name,
            )
    });
    if let Some(other) = conflict {
        errs.push(FieldError::invalid(
            &target_path,
            shown(),
            format!(
                "targetRef is in conflict with other PersistentPodState {}",
                other.metadata.name.as_deref().unwrap_or_default()
            ),
        ));
    }
    errs
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;
    use serde_json::json;

    fn state(name: &str, spec: serde_json::Value) -> PersistentPodState {
        serde_json::from_value(json!({
            "apiVersion": "apps.kruise.io/v1beta1", "kind": "PersistentPodState",
            "metadata": {"name": name, "namespace": "ns"}, "spec": spec
        }))
        .unwrap()
    }

    fn valid() -> serde_json::Value {
        json!({
            "targetRef": {"apiVersion": "apps/v1", "kind": "StatefulSet", "name": "web"},
            "requiredPersistentTopology": {"keys": ["topology.kubernetes.io/zone"]},
            "preferredPersistentTopology": [{"weight": 10, "preference": {"keys": ["kubernetes.io/hostname"]}}]
        })
    }

    #[test]
    fn upstream_table() {
        assert!(validate_persistent_pod_state(&state("a", valid()), None, &[]).is_empty());
        let mut empty = valid();
        empty["targetRef"] = json!({});
        assert_eq!(validate_persistent_pod_state(&state("a", empty), None, &[]).len(), 2);
        let mut deployment = valid();
        deployment["targetRef"]["kind"] = json!("Deployment");
        let errs = validate_persistent_pod_state(&state("a", deployment), None, &[]).messages();
        assert_eq!(errs.len(), 1);
        assert!(
            errs[0].ends_with(
                "targetRef.Kind must be StatefulSet or in PPS_Watch_Custom_Workload_WhiteList"
            ),
            "{errs:?}"
        );
        let none = json!({"targetRef": {"apiVersion": "apps.kruise.io/v1beta1", "kind": "StatefulSet", "name": "web"}});
        let errs = validate_persistent_pod_state(&state("a", none), None, &[]).messages();
        assert_eq!(errs.len(), 1);
        assert!(errs[0].starts_with("spec: Invalid value: "), "{errs:?}");
    }

    #[test]
    fn conflicts_and_immutability() {
        let mine = state("a", valid());
        let same_target = state("b", valid());
        let mut other_spec = valid();
        other_spec["targetRef"]["name"] = json!("db");
        let other_target = state("c", other_spec.clone());
        let errs =
            validate_persistent_pod_state(&mine, None, &[&mine, &same_target, &other_target])
                .messages();
        assert_eq!(
            errs,
            [
                "spec.targetRef: Invalid value: {\"apiVersion\":\"apps/v1\",\"kind\":\"StatefulSet\",\"name\":\"web\"}: targetRef is in conflict with other PersistentPodState b"
            ]
        );
        assert!(validate_persistent_pod_state(&mine, None, &[&mine, &other_target]).is_empty());
        let moved = state("a", other_spec);
        assert_eq!(
            validate_persistent_pod_state(&moved, Some(&mine), &[]).messages(),
            ["spec.targetRef: Forbidden: targetRef is immutable"]
        );
    }

    #[test]
    fn keys_and_weights() {
        let mut bad = valid();
        bad["requiredPersistentTopology"]["keys"] = json!(["bad key"]);
        bad["preferredPersistentTopology"][0]["weight"] = json!(0);
        let errs = validate_persistent_pod_state(&state("a", bad), None, &[]).messages();
        assert_eq!(errs.len(), 2, "{errs:?}");
        assert!(
            errs[0]
                .starts_with("spec.requiredPersistentTopology.keys[0]: Invalid value: \"bad key\""),
            "{errs:?}"
        );
        assert_eq!(
            errs[1],
            "spec.preferredPersistentTopology[0].weight: Invalid value: 0: must be in the range 1-100"
        );
    }
}
