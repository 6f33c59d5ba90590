//! The parts of `ValidatePodSpec` that constrain where and how a pod runs: affinity
//! (`validateAffinity`), topology spread constraints (`validateTopologySpreadConstraints`),
//! and the pod's and each container's security context (`validatePodSpecSecurityContext`,
//! `ValidateSecurityContext`), with Kubernetes 1.36's paths and messages, checked against
//! kube-apiserver 1.36.2. [`super::pod_template`] calls them in Go's order.
//!
//! Not covered: a constraint's `matchLabelKeys`, `windowsOptions`, and `privileged` against
//! the server's `--allow-privileged`.

use std::collections::BTreeSet;

use k8s_openapi::api::core::v1::{
    Affinity, AppArmorProfile, NodeSelectorRequirement, NodeSelectorTerm, PodAffinityTerm,
    PodSecurityContext, PodSpec, PreferredSchedulingTerm, SeccompProfile, SecurityContext,
    TopologySpreadConstraint, WeightedPodAffinityTerm,
};
use serde_json::Value;

use super::meta::{LabelSelectorOptions, validate_label_name, validate_label_selector};
use crate::field::{FieldError, FieldErrorKind, FieldPath};
use crate::names::{
    inclusive_range_error, is_dns1123_label, is_dns1123_subdomain, is_valid_label_value,
};

// ---- Affinity ----

/// `ValidateNodeSelectorRequirement`; label values are checked unless `any_values` (preferred
/// terms allow any).
fn node_requirement(
    req: &NodeSelectorRequirement,
    path: &FieldPath,
    any_values: bool,
) -> Vec<FieldError> {
    let mut errs = Vec::new();
    let values = req.values.as_deref().unwrap_or_default();
    let values_path = path.child("values");
    match req.operator.as_str() {
        "In" | "NotIn" if values.is_empty() => errs.push(FieldError::required(
            &values_path,
            "must be specified when `operator` is 'In' or 'NotIn'",
        )),
        "Exists" | "DoesNotExist" if !values.is_empty() => errs.push(FieldError::forbidden(
            &values_path,
            "may not be specified when `operator` is 'Exists' or 'DoesNotExist'",
        )),
        "Gt" | "Lt" if values.len() != 1 => errs.push(FieldError::required(
            &values_path,
            "must be specified single value when `operator` is 'Lt' or 'Gt'",
        )),
        "In" | "NotIn" | "Exists" | "DoesNotExist" | "Gt" | "Lt" => {}
        other => errs.push(FieldError::invalid(
            &path.child("operator"),
            other,
            "not a valid selector operator",
        )),
    }
    errs.extend(validate_label_name(&req.key, &path.child("key")));
    if !any_values {
        for (i, value) in values.iter().enumerate() {
            for msg in is_valid_label_value(value) {
                errs.push(FieldError::invalid(&values_path.index(i), value, msg));
            }
        }
    }
    errs
}

/// `ValidateNodeFieldSelectorRequirement`.
fn node_field_requirement(req: &NodeSelectorRequirement, path: &FieldPath) -> Vec<FieldError> {
    let mut errs = Vec::new();
    let values = req.values.as_deref().unwrap_or_default();
    match req.operator.as_str() {
        "In" | "NotIn" if values.len() != 1 => errs.push(FieldError::required(
            &path.child("values"),
            "must be only one value when `operator` is 'In' or 'NotIn' for node field selector",
        )),
        "In" | "NotIn" => {}
        other => errs.push(FieldError::invalid(
            &path.child("operator"),
            other,
            "not a valid selector operator",
        )),
    }
    if req.key != "metadata.name" {
        errs.push(FieldError::invalid(
            &path.child("key"),
            &req.key,
            "not a valid field selector key",
        ));
        return errs;
    }
    for (i, value) in values.iter().enumerate() {
        for msg in is_dns1123_subdomain(value) {
            errs.push(FieldError::invalid(&path.child("values").index(i), value, msg));
        }
    }
    errs
}

/// `ValidateNodeSelectorTerm`; label values are checked unless `any_values`.
pub(crate) fn validate_node_selector_term(
    term: &NodeSelectorTerm,
    path: &FieldPath,
    any_values: bool,
) -> Vec<FieldError> {
    let mut errs = Vec::new();
    for (i, req) in term.match_expressions.iter().flatten().enumerate() {
        errs.extend(node_requirement(req, &path.child("matchExpressions").index(i), any_values));
    }
    for (i, req) in term.match_fields.iter().flatten().enumerate() {
        errs.extend(node_field_requirement(req, &path.child("matchFields").index(i)));
    }
    errs
}

fn weight(weight: i32, path: &FieldPath) -> Option<FieldError> {
    (!(1..=100).contains(&weight))
        .then(|| FieldError::invalid(&path.child("weight"), weight, "must be in the range 1-100"))
}

/// `ValidatePreferredSchedulingTerms`: weights, and terms whose label values may be anything
/// (a preferred term can still be met on a cluster of one node).
pub(crate) fn validate_preferred_scheduling_terms(
    terms: &[PreferredSchedulingTerm],
    path: &FieldPath,
) -> Vec<FieldError> {
    let mut errs = Vec::new();
    for (i, term) in terms.iter().enumerate() {
        errs.extend(weight(term.weight, &path.index(i)));
        errs.extend(validate_node_selector_term(
            &term.preference,
            &path.index(i).child("preference"),
            true,
        ));
    }
    errs
}

/// `validatePodAffinityTerm`.
fn pod_term(term: &PodAffinityTerm, path: &FieldPath) -> Vec<FieldError> {
    let options = LabelSelectorOptions { allow_invalid_label_value: false };
    let mut errs = validate_label_selector(
        term.label_selector.as_ref(),
        options,
        &path.child("labelSelector"),
    );
    errs.extend(validate_label_selector(
        term.namespace_selector.as_ref(),
        options,
        &path.child("namespaceSelector"),
    ));
    for namespace in term.namespaces.iter().flatten() {
        for msg in is_dns1123_label(namespace) {
            errs.push(FieldError::invalid(&path.child("namespace"), namespace, msg));
        }
    }
    let key_path = path.child("topologyKey");
    if term.topology_key.is_empty() {
        errs.push(FieldError::required(&key_path, "can not be empty"));
    }
    errs.extend(validate_label_name(&term.topology_key, &key_path));
    errs
}

fn pod_terms(
    required: Option<&[PodAffinityTerm]>,
    preferred: Option<&[WeightedPodAffinityTerm]>,
    path: &FieldPath,
) -> Vec<FieldError> {
    let mut errs = Vec::new();
    for (i, term) in required.unwrap_or_default().iter().enumerate() {
        errs.extend(pod_term(
            term,
            &path.child("requiredDuringSchedulingIgnoredDuringExecution").index(i),
        ));
    }
    for (i, term) in preferred.unwrap_or_default().iter().enumerate() {
        let p = path.child("preferredDuringSchedulingIgnoredDuringExecution").index(i);
        errs.extend(weight(term.weight, &p));
        errs.extend(pod_term(&term.pod_affinity_term, &p.child("podAffinityTerm")));
    }
    errs
}

/// `validateAffinity`.
pub(crate) fn validate_affinity(affinity: Option<&Affinity>, path: &FieldPath) -> Vec<FieldError> {
    let mut errs = Vec::new();
    let Some(affinity) = affinity else { return errs };
    if let Some(node) = &affinity.node_affinity {
        let p = path.child("nodeAffinity");
        if let Some(selector) = &node.required_during_scheduling_ignored_during_execution {
            let p = p.child("requiredDuringSchedulingIgnoredDuringExecution");
            if selector.node_selector_terms.is_empty() {
                errs.push(FieldError::required(
                    &p.child("nodeSelectorTerms"),
                    "must have at least one node selector term",
                ));
            }
            for (i, term) in selector.node_selector_terms.iter().enumerate() {
                errs.extend(validate_node_selector_term(
                    term,
                    &p.child("nodeSelectorTerms").index(i),
                    false,
                ));
            }
        }
        errs.extend(validate_preferred_scheduling_terms(
            node.preferred_during_scheduling_ignored_during_execution
                .as_deref()
                .unwrap_or_default(),
            &p.child("preferredDuringSchedulingIgnoredDuringExecution"),
        ));
    }
    if let Some(pod) = &affinity.pod_affinity {
        errs.extend(pod_terms(
            pod.required_during_scheduling_ignored_during_execution.as_deref(),
            pod.preferred_during_scheduling_ignored_during_execution.as_deref(),
            &path.child("podAffinity"),
        ));
    }
    if let Some(anti) = &affinity.pod_anti_affinity {
        errs.extend(pod_terms(
            anti.required_during_scheduling_ignored_during_execution.as_deref(),
            anti.preferred_during_scheduling_ignored_during_execution.as_deref(),
            &path.child("podAntiAffinity"),
        ));
    }
    errs
}

// ---- Topology spread constraints ----

/// `validateTopologySpreadConstraints` (without `matchLabelKeys`).
pub(crate) fn validate_topology_spread(
    constraints: &[TopologySpreadConstraint],
    path: &FieldPath,
) -> Vec<FieldError> {
    let mut errs = Vec::new();
    for (i, c) in constraints.iter().enumerate() {
        let p = path.index(i);
        if c.max_skew <= 0 {
            errs.push(FieldError::invalid(
                &p.child("maxSkew"),
                c.max_skew,
                "must be greater than zero",
            ));
        }
        if c.topology_key.is_empty() {
            errs.push(FieldError::required(&p.child("topologyKey"), "can not be empty"));
        }
        let action = c.when_unsatisfiable.as_str();
        if action != "DoNotSchedule" && action != "ScheduleAnyway" {
            errs.push(FieldError::not_supported(
                &p.child("whenUnsatisfiable"),
                action,
                &["DoNotSchedule", "ScheduleAnyway"],
            ));
        }
        if constraints[i + 1..].iter().any(|o| {
            o.topology_key == c.topology_key && o.when_unsatisfiable == c.when_unsatisfiable
        }) {
            errs.push(FieldError::duplicate(
                &p.child("{topologyKey, whenUnsatisfiable}"),
                format!("{{{}, {action}}}", c.topology_key),
            ));
        }
        if let Some(min) = c.min_domains {
            let mp = p.child("minDomains");
            if min <= 0 {
                errs.push(FieldError::invalid(&mp, min, "must be greater than zero"));
            }
            if action != "DoNotSchedule" {
                errs.push(FieldError::invalid(
                    &mp,
                    min,
                    format!(
                        "can only use minDomains if whenUnsatisfiable=DoNotSchedule, not {action}"
                    ),
                ));
            }
        }
        for (field, policy) in [
            ("nodeAffinityPolicy", &c.node_affinity_policy),
            ("nodeTaintsPolicy", &c.node_taints_policy),
        ] {
            if let Some(policy) = policy.as_deref().filter(|p| *p != "Honor" && *p != "Ignore") {
                errs.push(FieldError::not_supported(&p.child(field), policy, &["Honor", "Ignore"]));
            }
        }
        let options = LabelSelectorOptions { allow_invalid_label_value: false };
        errs.extend(validate_label_selector(
            c.label_selector.as_ref(),
            options,
            &p.child("labelSelector"),
        ));
    }
    errs
}

// ---- Security contexts ----

fn id_range(value: Option<i64>, path: &FieldPath) -> Option<FieldError> {
    value
        .filter(|n| !(0..=i64::from(i32::MAX)).contains(n))
        .map(|n| FieldError::invalid(path, n, inclusive_range_error(0, i64::from(i32::MAX))))
}

/// How a Go struct field renders when unset: `null` for pointers, slices and maps, `""` for a
/// string, or a nested struct.
#[derive(Clone, Copy)]
enum Shape {
    Plain,
    Text,
    Struct(&'static [(&'static str, &'static str, Shape)]),
}

const CAPABILITIES: &[(&str, &str, Shape)] =
    &[("add", "Add", Shape::Plain), ("drop", "Drop", Shape::Plain)];
const SE_LINUX: &[(&str, &str, Shape)] = &[
    ("user", "User", Shape::Text),
    ("role", "Role", Shape::Text),
    ("type", "Type", Shape::Text),
    ("level", "Level", Shape::Text),
];
const WINDOWS: &[(&str, &str, Shape)] = &[
    ("gmsaCredentialSpecName", "GMSACredentialSpecName", Shape::Plain),
    ("gmsaCredentialSpec", "GMSACredentialSpec", Shape::Plain),
    ("runAsUserName", "RunAsUserName", Shape::Plain),
    ("hostProcess", "HostProcess", Shape::Plain),
];
const PROFILE: &[(&str, &str, Shape)] =
    &[("type", "Type", Shape::Text), ("localhostProfile", "LocalhostProfile", Shape::Plain)];
const SECURITY_CONTEXT: &[(&str, &str, Shape)] = &[
    ("capabilities", "Capabilities", Shape::Struct(CAPABILITIES)),
    ("privileged", "Privileged", Shape::Plain),
    ("seLinuxOptions", "SELinuxOptions", Shape::Struct(SE_LINUX)),
    ("windowsOptions", "WindowsOptions", Shape::Struct(WINDOWS)),
    ("runAsUser", "RunAsUser", Shape::Plain),
    ("runAsGroup", "RunAsGroup", Shape::Plain),
    ("runAsNonRoot", "RunAsNonRoot", Shape::Plain),
    ("readOnlyRootFilesystem", "ReadOnlyRootFilesystem", Shape::Plain),
    ("allowPrivilegeEscalation", "AllowPrivilegeEscalation", Shape::Plain),
    ("procMount", "ProcMount", Shape::Plain),
    ("seccompProfile", "SeccompProfile", Shape::Struct(PROFILE)),
    ("appArmorProfile", "AppArmorProfile", Shape::Struct(PROFILE)),
];

/// A value as Go's `json.Marshal` writes the internal API struct it decodes into: fields by
/// their Go names in declaration order, `null` for unset pointers.
fn go_struct(v: Option<&Value>, fields: &[(&str, &str, Shape)]) -> String {
    let Some(v) = v.filter(|v| v.is_object()) else { return "null".to_owned() };
    let parts: Vec<String> = fields
        .iter()
        .map(|(json_name, go_name, shape)| {
            let value = v.get(*json_name).filter(|x| !x.is_null());
            let rendered = match shape {
                Shape::Plain => value.map_or("null".to_owned(), Value::to_string),
                Shape::Text => value.map_or("\"\"".to_owned(), Value::to_string),
                Shape::Struct(inner) => go_struct(value, inner),
            };
            format!("\"{go_name}\":{rendered}")
        })
        .collect();
    format!("{{{}}}", parts.join(","))
}

/// `Invalid value: <rendered>: detail`, the value already as Go prints it.
fn invalid_rendered(path: &FieldPath, rendered: String, detail: &str) -> FieldError {
    FieldError {
        path: path.clone(),
        kind: FieldErrorKind::Invalid,
        value: Some(rendered),
        detail: detail.to_owned(),
    }
}

const PROFILE_TYPES: [&str; 3] = ["Localhost", "RuntimeDefault", "Unconfined"];

/// `validateSeccompProfileField`.
fn seccomp(profile: Option<&SeccompProfile>, path: &FieldPath) -> Vec<FieldError> {
    let mut errs = Vec::new();
    let Some(profile) = profile else { return errs };
    let kind = profile.type_.as_str();
    match kind {
        "Localhost" | "RuntimeDefault" | "Unconfined" => {}
        "" => errs.push(FieldError::required(
            &path.child("type"),
            "type is required when seccompProfile is set",
        )),
        other => errs.push(FieldError::not_supported(&path.child("type"), other, &PROFILE_TYPES)),
    }
    let local_path = path.child("localhostProfile");
    match (kind, profile.localhost_profile.as_deref()) {
        ("Localhost", None) => {
            errs.push(FieldError::required(
                &local_path,
                "must be set when seccomp type is Localhost",
            ));
        }
        ("Localhost", Some(local)) => {
            if local.starts_with('/') {
                errs.push(FieldError::invalid(&local_path, local, "must be a relative path"));
            }
            if local.split(['/', '\\']).any(|part| part == "..") {
                errs.push(FieldError::invalid(&local_path, local, "must not contain '..'"));
            }
        }
        (_, Some(_)) => {
            let value = serde_json::to_value(profile).ok();
            errs.push(invalid_rendered(
                &local_path,
                go_struct(value.as_ref(), PROFILE),
                "can only be set when seccomp type is Localhost",
            ));
        }
        _ => {}
    }
    errs
}

fn app_armor(profile: Option<&AppArmorProfile>, path: &FieldPath) -> Vec<FieldError> {
    let mut errs = Vec::new();
    let Some(profile) = profile else { return errs };
    match profile.type_.as_str() {
        "Localhost" | "RuntimeDefault" | "Unconfined" => {}
        "" => errs.push(FieldError::required(
            &path.child("type"),
            "type is required when appArmorProfile is set",
        )),
        other => errs.push(FieldError::not_supported(&path.child("type"), other, &PROFILE_TYPES)),
    }
    if profile.type_ == "Localhost"
        && profile.localhost_profile.as_deref().is_none_or(|p| p.trim().is_empty())
    {
        errs.push(FieldError::required(
            &path.child("localhostProfile"),
            "must be set when AppArmor type is Localhost",
        ));
    }
    errs
}

/// `ValidateSecurityContext` of a container; `host_users` is the pod's `hostUsers`.
pub(crate) fn validate_container_security_context(
    context: Option<&SecurityContext>,
    host_users: Option<bool>,
    path: &FieldPath,
) -> Vec<FieldError> {
    let mut errs = Vec::new();
    let Some(sc) = context else { return errs };
    errs.extend(id_range(sc.run_as_user, &path.child("runAsUser")));
    errs.extend(id_range(sc.run_as_group, &path.child("runAsGroup")));
    if let Some(mount) = sc.proc_mount.as_deref() {
        let p = path.child("procMount");
        match mount {
            "Default" => {}
            "Unmasked" if host_users != Some(false) => {
                errs.push(FieldError::invalid(
                    &p,
                    mount,
                    "`hostUsers` must be false to use `Unmasked`",
                ));
            }
            "Unmasked" => {}
            other => errs.push(FieldError::not_supported(&p, other, &["Default", "Unmasked"])),
        }
    }
    errs.extend(seccomp(sc.seccomp_profile.as_ref(), &path.child("seccompProfile")));
    if sc.allow_privilege_escalation == Some(false) {
        let rendered = || go_struct(serde_json::to_value(sc).ok().as_ref(), SECURITY_CONTEXT);
        if sc.privileged == Some(true) {
            errs.push(invalid_rendered(
                path,
                rendered(),
                "cannot set `allowPrivilegeEscalation` to false and `privileged` to true",
            ));
        }
        let added = sc.capabilities.as_ref().and_then(|c| c.add.as_deref()).unwrap_or_default();
        for _ in added.iter().filter(|c| *c == "CAP_SYS_ADMIN") {
            errs.push(invalid_rendered(
                path,
                rendered(),
                "cannot set `allowPrivilegeEscalation` to false and `capabilities.Add` CAP_SYS_ADMIN",
            ));
        }
    }
    errs.extend(app_armor(sc.app_armor_profile.as_ref(), &path.child("appArmorProfile")));
    errs
}

/// `^([a-z0-9]([-_a-z0-9]*[a-z0-9])?[\./])*[a-z0-9]([-_a-z0-9]*[a-z0-9])?$`, at most 253.
fn is_sysctl_name(name: &str) -> bool {
    let segment = |s: &str| {
        let b = s.as_bytes();
        let edge = |c: &u8| c.is_ascii_lowercase() || c.is_ascii_digit();
        match (b.first(), b.last()) {
            (Some(f), Some(l)) => {
                edge(f) && edge(l) && b.iter().all(|c| edge(c) || *c == b'-' || *c == b'_')
            }
            _ => false,
        }
    };
    name.len() <= 253 && name.split(['.', '/']).all(segment)
}

fn not_one_of(value: Option<&str>, allowed: &[&str], path: &FieldPath) -> Option<FieldError> {
    value.filter(|v| !allowed.contains(v)).map(|v| FieldError::not_supported(path, v, allowed))
}

/// `validatePodSpecSecurityContext` (without the Windows options).
pub(crate) fn validate_pod_security_context(spec: &PodSpec, path: &FieldPath) -> Vec<FieldError> {
    let mut errs = Vec::new();
    let Some(sc): Option<&PodSecurityContext> = spec.security_context.as_ref() else { return errs };
    errs.extend(id_range(sc.fs_group, &path.child("fsGroup")));
    errs.extend(id_range(sc.run_as_user, &path.child("runAsUser")));
    errs.extend(id_range(sc.run_as_group, &path.child("runAsGroup")));
    for (i, group) in sc.supplemental_groups.iter().flatten().enumerate() {
        errs.extend(id_range(Some(*group), &path.child("supplementalGroups").index(i)));
    }
    if spec.share_process_namespace == Some(true) && spec.host_pid == Some(true) {
        errs.push(FieldError::invalid(
            &path.child("shareProcessNamespace"),
            true,
            "ShareProcessNamespace and HostPID cannot both be enabled",
        ));
    }
    let mut seen = BTreeSet::new();
    for (i, sysctl) in sc.sysctls.iter().flatten().enumerate() {
        let p = path.child("sysctls").index(i).child("name");
        let name = sysctl.name.as_str();
        if name.is_empty() {
            errs.push(FieldError::required(&p, ""));
        } else if !is_sysctl_name(name) {
            errs.push(FieldError::invalid(
                &p,
                name,
                r"must have at most 253 characters and match regex ^([a-z0-9]([-_a-z0-9]*[a-z0-9])?[\./])*[a-z0-9]([-_a-z0-9]*[a-z0-9])?$",
            ));
        } else if !seen.insert(name) {
            errs.push(FieldError::duplicate(&p, name));
        }
    }
    errs.extend(not_one_of(
        sc.fs_group_change_policy.as_deref(),
        &["Always", "OnRootMismatch"],
        &path.child("fsGroupChangePolicy"),
    ));
    errs.extend(seccomp(sc.seccomp_profile.as_ref(), &path.child("seccompProfile")));
    errs.extend(app_armor(sc.app_armor_profile.as_ref(), &path.child("appArmorProfile")));
    errs.extend(not_one_of(
        sc.supplemental_groups_policy.as_deref(),
        &["Merge", "Strict"],
        &path.child("supplementalGroupsPolicy"),
    ));
    errs.extend(not_one_of(
        sc.se_linux_change_policy.as_deref(),
        &["MountOption", "Recursive"],
        &path.child("seLinuxChangePolicy"),
    ));
    errs
}

#[cfg(test)]
mod tests {
    use super::*;

    fn render(errs: &[FieldError]) -> Vec<String> {
        errs.iter().map(ToString::to_string).collect()
    }

    fn from<T: serde::de::DeserializeOwned>(v: Value) -> T {
        serde_json::from_value(v).expect("decodes")
    }

    #[test]
    fn affinity_terms_name_their_fields() {
        let affinity: Affinity = from(serde_json::json!({
            "nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
                {"matchExpressions": [{"key": "pool", "operator": "In"}, {"key": "pool", "operator": "Near", "values": ["a"]}],
                 "matchFields": [{"key": "metadata.labels", "operator": "In", "values": ["x"]}]}]}},
            "podAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [{"weight": 0, "podAffinityTerm": {"topologyKey": "zone"}}]}}));
        assert_eq!(
            render(&validate_affinity(Some(&affinity), &FieldPath::new("a"))),
            [
                "a.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms[0].matchExpressions[0].values: Required value: must be specified when `operator` is 'In' or 'NotIn'",
                r#"a.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms[0].matchExpressions[1].operator: Invalid value: "Near": not a valid selector operator"#,
                r#"a.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms[0].matchFields[0].key: Invalid value: "metadata.labels": not a valid field selector key"#,
                "a.podAffinity.preferredDuringSchedulingIgnoredDuringExecution[0].weight: Invalid value: 0: must be in the range 1-100",
            ]
        );
    }

    #[test]
    fn security_contexts_render_go_structs() {
        let sc: SecurityContext = from(
            serde_json::json!({"privileged": true, "allowPrivilegeEscalation": false, "runAsUser": -1}),
        );
        assert_eq!(
            render(&validate_container_security_context(Some(&sc), None, &FieldPath::new("s"))),
            [
                "s.runAsUser: Invalid value: -1: must be between 0 and 2147483647, inclusive",
                concat!(
                    r#"s: Invalid value: {"Capabilities":null,"Privileged":true,"SELinuxOptions":null,"WindowsOptions":null,"RunAsUser":-1,"RunAsGroup":null,"RunAsNonRoot":null,"ReadOnlyRootFilesystem":null,"AllowPrivilegeEscalation":false,"ProcMount":null,"SeccompProfile":null,"AppArmorProfile":null}"#,
                    ": cannot set `allowPrivilegeEscalation` to false and `privileged` to true"
                ),
            ]
        );
        let spec: PodSpec =
            from(serde_json::json!({"containers": [], "securityContext": {"fsGroup": -5,
            "sysctls": [{"name": "Bad", "value": "1"}]}}));
        let got = render(&validate_pod_security_context(
            &spec,
            &FieldPath::new("spec").child("securityContext"),
        ));
        assert_eq!(
            got[0],
            "spec.securityContext.fsGroup: Invalid value: -5: must be between 0 and 2147483647, inclusive"
        );
        assert!(got[1].starts_with(
            r#"spec.securityContext.sysctls[0].name: Invalid value: "Bad": must have at most 253"#
        ));
    }

    #[test]
    fn topology_spread_constraints() {
        let constraints: Vec<TopologySpreadConstraint> = from(serde_json::json!([
            {"maxSkew": 0, "topologyKey": "zone", "whenUnsatisfiable": "DoNotSchedule"},
            {"maxSkew": 1, "topologyKey": "zone", "whenUnsatisfiable": "DoNotSchedule"}]));
        assert_eq!(
            render(&validate_topology_spread(&constraints, &FieldPath::new("t"))),
            [
                "t[0].maxSkew: Invalid value: 0: must be greater than zero",
                r#"t[0].{topologyKey, whenUnsatisfiable}: Duplicate value: "{zone, DoNotSchedule}""#,
            ]
        );
    }
}
