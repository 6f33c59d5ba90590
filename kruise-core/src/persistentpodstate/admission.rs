//! PersistentPodState validation, as upstream's `vpersistentpodstate.kb.io` does it: a
//! complete `targetRef` to a StatefulSet (`apps` or `apps.kruise.io`), immutable; a required
//! or a preferred topology; no other PersistentPodState of the namespace targeting the same
//! workload. Upstream prints the values with Go's `%#v`; here they are printed as JSON.
//!
//! Beside upstream: topology keys must be label keys, and preferred weights 1 to 100 (the
//! values a pod's preferred node affinity takes), so that a bad PersistentPodState is refused
//! here rather than making every recreated pod fail validation.

use kruise_api::apps::v1beta1::PersistentPodState;

use super::{CustomWorkloadWhitelist, is_supported_target, refers_to};
use crate::admission::meta::validate_label_name;
use crate::field::{BadValue, FieldError, FieldErrors, FieldPath};

/// Upstream's checks of `state` (`old`: the stored one, on update), against the other
/// PersistentPodStates of its namespace (`others`; itself may be among them) and the
/// custom workloads `whitelist` allows.
pub fn validate_persistent_pod_state(
    state: &PersistentPodState,
    old: Option<&PersistentPodState>,
    others: &[&PersistentPodState],
    whitelist: &CustomWorkloadWhitelist,
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
    if !is_supported_target(&target.api_version, &target.kind, whitelist) {
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

    fn check(
        state: &PersistentPodState,
        old: Option<&PersistentPodState>,
        others: &[&PersistentPodState],
    ) -> FieldErrors {
        validate_persistent_pod_state(state, old, others, &CustomWorkloadWhitelist::default())
    }
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
        assert!(check(&state("a", valid()), None, &[]).is_empty());
        let mut empty = valid();
        empty["targetRef"] = json!({});
        assert_eq!(check(&state("a", empty), None, &[]).len(), 2);
        let mut deployment = valid();
        deployment["targetRef"]["kind"] = json!("Deployment");
        let errs = check(&state("a", deployment), None, &[]).messages();
        assert_eq!(errs.len(), 1);
        assert!(
            errs[0].ends_with(
                "targetRef.Kind must be StatefulSet or in PPS_Watch_Custom_Workload_WhiteList"
            ),
            "{errs:?}"
        );
        let none = json!({"targetRef": {"apiVersion": "apps.kruise.io/v1beta1", "kind": "StatefulSet", "name": "web"}});
        let errs = check(&state("a", none), None, &[]).messages();
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
        let errs = check(&mine, None, &[&mine, &same_target, &other_target]).messages();
        assert_eq!(
            errs,
            [
                "spec.targetRef: Invalid value: {\"apiVersion\":\"apps/v1\",\"kind\":\"StatefulSet\",\"name\":\"web\"}: targetRef is in conflict with other PersistentPodState b"
            ]
        );
        assert!(check(&mine, None, &[&mine, &other_target]).is_empty());
        let moved = state("a", other_spec);
        assert_eq!(
            check(&moved, Some(&mine), &[]).messages(),
            ["spec.targetRef: Forbidden: targetRef is immutable"]
        );
    }

    #[test]
    fn keys_and_weights() {
        let mut bad = valid();
        bad["requiredPersistentTopology"]["keys"] = json!(["bad key"]);
        bad["preferredPersistentTopology"][0]["weight"] = json!(0);
        let errs = check(&state("a", bad), None, &[]).messages();
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

    #[test]
    fn whitelisted_custom_workloads() {
        let list = CustomWorkloadWhitelist::parse(
            r#"{"workloads":[{"Group":"example.io","Version":"v1","Kind":"Stateful"}]}"#,
        )
        .unwrap();
        let mut custom = valid();
        custom["targetRef"] =
            json!({"apiVersion": "example.io/v2", "kind": "Stateful", "name": "web"});
        let custom = state("a", custom);
        assert!(
            validate_persistent_pod_state(&custom, None, &[], &list).is_empty(),
            "the version does not count"
        );
        assert_eq!(check(&custom, None, &[]).len(), 1, "refused without the entry");
        let mut other_kind = valid();
        other_kind["targetRef"] =
            json!({"apiVersion": "example.io/v1", "kind": "Other", "name": "web"});
        assert_eq!(
            validate_persistent_pod_state(&state("a", other_kind), None, &[], &list).len(),
            1
        );
        let mut bad_version = valid();
        bad_version["targetRef"] =
            json!({"apiVersion": "example.io/v1/x", "kind": "Stateful", "name": "web"});
        assert_eq!(
            validate_persistent_pod_state(&state("a", bad_version), None, &[], &list).len(),
            1
        );
    }
}
