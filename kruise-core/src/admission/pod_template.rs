//! Pod template validation: a port of Kubernetes' `ValidatePodTemplateSpec` with the options
//! the Kruise webhooks pass (`DefaultPodValidationOptions`: invalid pod-deletion-cost and
//! selector label values allowed, not a bare pod).
//!
//! Covered, with Kubernetes' paths and messages: template labels and annotations (and the
//! mirror-pod annotation), volumes (names, one source each, and the details of the common
//! sources: hostPath, emptyDir, gitRepo, secret, configMap, nfs, persistentVolumeClaim,
//! downwardAPI, projected), containers and init containers (names, images, termination message
//! policy, ports and host-port conflicts, env and envFrom, volume mounts and devices, pull
//! policy, resources, resize policy, probes and lifecycle handlers, sidecar rules), ephemeral
//! containers (forbidden in templates), resource claims, host-network ports, restart and DNS
//! policy, node selector, DNS config, readiness and scheduling gates, service account, node
//! name, active deadline, hostname and subdomain, tolerations, host aliases, priority class,
//! runtime class, preemption policy, overhead and OS name; affinity, topology spread
//! constraints and the pod's and containers' security contexts (in [`super::pod_constraints`]).
//!
//! Not covered (accepted here, checked by Kubernetes when the pods are created): a topology
//! spread constraint's `matchLabelKeys`, Windows security options, OS-specific field rules,
//! seccomp and AppArmor annotations and fields, the tolerations annotation, the sources of
//! rarely used volume types beyond counting them, cluster trust bundle projections and
//! resource-field divisors.

use std::collections::{BTreeMap, BTreeSet};

use k8s_openapi::api::core::v1::{
    Container, ContainerPort, ContainerResizePolicy, EnvFromSource, EnvVar, EphemeralContainer,
    HTTPGetAction, KeyToPath, LifecycleHandler, ObjectFieldSelector, PodSpec, PodTemplateSpec,
    Probe, ResourceFieldSelector, ResourceRequirements, Volume, VolumeDevice, VolumeMount,
};
use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;

use super::field::{BadValue, FieldError, FieldPath, go};
use super::meta::{
    IS_NEGATIVE_ERROR_MSG, validate_annotations, validate_label_name, validate_labels,
    validate_nonnegative,
};
use super::names::{
    INVALID_IP_MSG, inclusive_range_error, is_config_map_key, is_dns1123_label,
    is_dns1123_subdomain, is_env_var_name, is_http_header_name, is_ip_sloppy, is_qualified_name,
    is_valid_label_value, is_valid_port_name, is_valid_port_num, name_is_dns_subdomain,
};
use super::pod_constraints;
use crate::revision::quantity::Quantity as GoQuantity;

const FILE_MODE_ERROR_MSG: &str = "must be a number between 0 and 0777 (octal), both inclusive";
const MIRROR_POD_ANNOTATION: &str = "kubernetes.io/config.mirror";
const MAX_DNS_NAMESERVERS: usize = 3;
const MAX_DNS_SEARCH_PATHS: usize = 32;
const MAX_DNS_SEARCH_LIST_CHARS: usize = 2048;

/// What the volumes of a pod provide, by name.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct VolumeInfo {
    /// Backed by a PVC (a claim or a generic ephemeral volume): usable as a block device.
    pvc: bool,
    /// An image volume: no subPath.
    image: bool,
}

type Volumes = BTreeMap<String, VolumeInfo>;

/// `ValidatePodTemplateSpec` for a template at `path` (for example `spec.template`).
pub fn validate_pod_template_spec(template: &PodTemplateSpec, path: &FieldPath) -> Vec<FieldError> {
    let empty = PodSpec::default();
    let spec = template.spec.as_ref().unwrap_or(&empty);
    let meta = template.metadata.as_ref();
    let labels = meta.and_then(|m| m.labels.as_ref());
    let annotations = meta.and_then(|m| m.annotations.as_ref());
    let mut errs = validate_labels(labels, &path.child("labels"));
    errs.extend(validate_annotations(annotations, &path.child("annotations")));
    if let Some(value) = annotations.and_then(|a| a.get(MIRROR_POD_ANNOTATION))
        && spec.node_name.as_deref().unwrap_or("").is_empty()
    {
        errs.push(FieldError::invalid(
            &path.child("annotations").key(MIRROR_POD_ANNOTATION),
            value,
            "must set spec.nodeName if mirror pod annotation is set",
        ));
    }
    errs.extend(validate_pod_spec(spec, &path.child("spec")));
    if spec.ephemeral_containers.as_ref().is_some_and(|e| !e.is_empty()) {
        errs.push(FieldError::forbidden(
            &path.child("spec").child("ephemeralContainers"),
            "ephemeral containers not allowed in pod template",
        ));
    }
    errs
}

/// `ValidatePodSpec` (see the module documentation for what is covered).
pub fn validate_pod_spec(spec: &PodSpec, path: &FieldPath) -> Vec<FieldError> {
    let mut errs = Vec::new();
    if spec.termination_grace_period_seconds.is_none() {
        errs.push(FieldError::required(&path.child("terminationGracePeriodSeconds"), ""));
    }
    let grace = spec.termination_grace_period_seconds;
    let (volumes, volume_errs) =
        validate_volumes(spec.volumes.as_deref().unwrap_or_default(), &path.child("volumes"));
    errs.extend(volume_errs);
    let claims = spec.resource_claims.as_deref().unwrap_or_default();
    let claim_names: BTreeSet<String> =
        claims.iter().filter(|c| !c.name.is_empty()).map(|c| c.name.clone()).collect();
    errs.extend(validate_resource_claims(spec, &path.child("resourceClaims")));
    let restart_policy = spec.restart_policy.as_deref().unwrap_or("");
    let ctx = ContainerContext {
        volumes: &volumes,
        claim_names: &claim_names,
        grace,
        restart_policy,
        host_users: spec.host_users,
    };
    errs.extend(validate_containers(&spec.containers, &ctx, &path.child("containers")));
    errs.extend(validate_init_containers(
        spec.init_containers.as_deref().unwrap_or_default(),
        &spec.containers,
        &ctx,
        &path.child("initContainers"),
    ));
    errs.extend(validate_ephemeral_containers(spec, &ctx, &path.child("ephemeralContainers")));
    errs.extend(validate_host_network_ports(spec, path));
    errs.extend(validate_restart_policy(restart_policy, &path.child("restartPolicy")));
    let dns_policy = spec.dns_policy.as_deref().unwrap_or("");
    errs.extend(validate_dns_policy(dns_policy, &path.child("dnsPolicy")));
    errs.extend(validate_labels(spec.node_selector.as_ref(), &path.child("nodeSelector")));
    errs.extend(pod_constraints::validate_pod_security_context(
        spec,
        &path.child("securityContext"),
    ));
    errs.extend(pod_constraints::validate_affinity(
        spec.affinity.as_ref(),
        &path.child("affinity"),
    ));
    errs.extend(validate_dns_config(spec, dns_policy, &path.child("dnsConfig")));
    for (i, gate) in spec.readiness_gates.iter().flatten().enumerate() {
        let p = path.child("readinessGates").index(i).child("conditionType");
        errs.extend(qualified_name_errors(&gate.condition_type, &p));
    }
    let mut seen_gates = BTreeSet::new();
    for (i, gate) in spec.scheduling_gates.iter().flatten().enumerate() {
        let p = path.child("schedulingGates").index(i);
        errs.extend(qualified_name_errors(&gate.name, &p));
        if !seen_gates.insert(gate.name.clone()) {
            errs.push(FieldError::duplicate(&p, &gate.name));
        }
    }
    errs.extend(pod_constraints::validate_topology_spread(
        spec.topology_spread_constraints.as_deref().unwrap_or_default(),
        &path.child("topologySpreadConstraints"),
    ));
    let subdomain_field = |errs: &mut Vec<FieldError>, value: Option<&String>, field: &str| {
        if let Some(value) = value.filter(|v| !v.is_empty()) {
            for msg in name_is_dns_subdomain(value, false) {
                errs.push(FieldError::invalid(&path.child(field), value, msg));
            }
        }
    };
    subdomain_field(&mut errs, spec.service_account_name.as_ref(), "serviceAccountName");
    subdomain_field(&mut errs, spec.node_name.as_ref(), "nodeName");
    if let Some(deadline) = spec.active_deadline_seconds
        && !(1..=i64::from(i32::MAX)).contains(&deadline)
    {
        errs.push(FieldError::invalid(
            &path.child("activeDeadlineSeconds"),
            deadline,
            inclusive_range_error(1, i64::from(i32::MAX)),
        ));
    }
    for (field, value) in [("hostname", &spec.hostname), ("subdomain", &spec.subdomain)] {
        if let Some(value) = value.as_ref().filter(|v| !v.is_empty()) {
            errs.extend(dns_label_errors(value, &path.child(field)));
        }
    }
    errs.extend(validate_tolerations(spec, &path.child("tolerations")));
    for (i, alias) in spec.host_aliases.iter().flatten().enumerate() {
        let p = path.child("hostAliases").index(i);
        if !is_ip_sloppy(&alias.ip) {
            errs.push(FieldError::invalid(&p.child("ip"), &alias.ip, INVALID_IP_MSG));
        }
        for (j, hostname) in alias.hostnames.iter().flatten().enumerate() {
            errs.extend(subdomain_errors(hostname, &p.child("hostnames").index(j)));
        }
    }
    subdomain_field(&mut errs, spec.priority_class_name.as_ref(), "priorityClassName");
    if let Some(runtime_class) = &spec.runtime_class_name {
        for msg in name_is_dns_subdomain(runtime_class, false) {
            errs.push(FieldError::invalid(&path.child("runtimeClassName"), runtime_class, msg));
        }
    }
    if let Some(policy) = &spec.preemption_policy {
        let p = path.child("preemptionPolicy");
        match policy.as_str() {
            "PreemptLowerPriority" | "Never" => {}
            "" => errs.push(FieldError::required(&p, "")),
            other => {
                errs.push(FieldError::not_supported(&p, other, &["PreemptLowerPriority", "Never"]))
            }
        }
    }
    if let Some(overhead) = &spec.overhead {
        let requirements =
            ResourceRequirements { limits: Some(overhead.clone()), ..Default::default() };
        errs.extend(validate_resources(&requirements, &BTreeSet::new(), &path.child("overhead")));
    }
    if let Some(os) = &spec.os
        && os.name != "linux"
        && os.name != "windows"
    {
        errs.push(FieldError::not_supported(
            &path.child("os").child("name"),
            &os.name,
            &["linux", "windows"],
        ));
    }
    errs
}

fn qualified_name_errors(value: &str, path: &FieldPath) -> Vec<FieldError> {
    is_qualified_name(value).into_iter().map(|m| FieldError::invalid(path, value, m)).collect()
}

pub(crate) fn dns_label_errors(value: &str, path: &FieldPath) -> Vec<FieldError> {
    is_dns1123_label(value).into_iter().map(|m| FieldError::invalid(path, value, m)).collect()
}

fn subdomain_errors(value: &str, path: &FieldPath) -> Vec<FieldError> {
    is_dns1123_subdomain(value).into_iter().map(|m| FieldError::invalid(path, value, m)).collect()
}

fn validate_restart_policy(policy: &str, path: &FieldPath) -> Vec<FieldError> {
    match policy {
        "Always" | "OnFailure" | "Never" => Vec::new(),
        "" => vec![FieldError::required(path, "")],
        other => vec![FieldError::not_supported(path, other, &["Always", "OnFailure", "Never"])],
    }
}

fn validate_dns_policy(policy: &str, path: &FieldPath) -> Vec<FieldError> {
    match policy {
        "ClusterFirstWithHostNet" | "ClusterFirst" | "Default" | "None" => Vec::new(),
        "" => vec![FieldError::required(path, "")],
        other => vec![FieldError::not_supported(
            path,
            other,
            &["ClusterFirstWithHostNet", "ClusterFirst", "Default", "None"],
        )],
    }
}

fn validate_dns_config(spec: &PodSpec, dns_policy: &str, path: &FieldPath) -> Vec<FieldError> {
    let mut errs = Vec::new();
    let config = spec.dns_config.as_ref();
    if dns_policy == "None" {
        let Some(config) = config else {
            return vec![FieldError::required(
                path,
                "must provide `dnsConfig` when `dnsPolicy` is None",
            )];
        };
        if config.nameservers.as_ref().is_none_or(Vec::is_empty) {
            return vec![FieldError::required(
                &path.child("nameservers"),
                "must provide at least one DNS nameserver when `dnsPolicy` is None",
            )];
        }
    }
    let Some(config) = config else {
        return errs;
    };
    let nameservers = config.nameservers.as_deref().unwrap_or_default();
    if nameservers.len() > MAX_DNS_NAMESERVERS {
        errs.push(FieldError::invalid(
            &path.child("nameservers"),
            BadValue::Go(go::string_slice(config.nameservers.as_deref())),
            format!("must not have more than {MAX_DNS_NAMESERVERS} nameservers"),
        ));
    }
    for (i, ns) in nameservers.iter().enumerate() {
        if !is_ip_sloppy(ns) {
            errs.push(FieldError::invalid(&path.child("nameservers").index(i), ns, INVALID_IP_MSG));
        }
    }
    let searches = config.searches.as_deref().unwrap_or_default();
    let searches_value = || BadValue::Go(go::string_slice(config.searches.as_deref()));
    if searches.len() > MAX_DNS_SEARCH_PATHS {
        errs.push(FieldError::invalid(
            &path.child("searches"),
            searches_value(),
            format!("must not have more than {MAX_DNS_SEARCH_PATHS} search paths"),
        ));
    }
    if searches.join(" ").len() > MAX_DNS_SEARCH_LIST_CHARS {
        errs.push(FieldError::invalid(
            &path.child("searches"),
            searches_value(),
            format!(
                "must not have more than {MAX_DNS_SEARCH_LIST_CHARS} characters (including spaces) in the search list"
            ),
        ));
    }
    for (i, search) in searches.iter().enumerate() {
        let search = search.strip_suffix('.').unwrap_or(search);
        errs.extend(subdomain_errors(search, &path.child("searches").index(i)));
    }
    for (i, option) in config.options.iter().flatten().enumerate() {
        if option.name.as_deref().unwrap_or("").is_empty() {
            errs.push(FieldError::required(&path.child("options").index(i), "must not be empty"));
        }
    }
    errs
}

fn validate_tolerations(spec: &PodSpec, path: &FieldPath) -> Vec<FieldError> {
    validate_tolerations_list(spec.tolerations.as_deref().unwrap_or_default(), path)
}

/// Core's `ValidateTolerations` for a list at `path`.
pub(crate) fn validate_tolerations_list(
    tolerations: &[k8s_openapi::api::core::v1::Toleration],
    path: &FieldPath,
) -> Vec<FieldError> {
    let mut errs = Vec::new();
    for (i, t) in tolerations.iter().enumerate() {
        let p = path.index(i);
        let key = t.key.as_deref().unwrap_or("");
        let operator = t.operator.as_deref().unwrap_or("");
        let effect = t.effect.as_deref().unwrap_or("");
        let value = t.value.as_deref().unwrap_or("");
        if !key.is_empty() {
            errs.extend(validate_label_name(key, &p.child("key")));
        }
        if key.is_empty() && operator != "Exists" {
            errs.push(FieldError::invalid(
                &p.child("operator"),
                operator,
                "operator must be Exists when `key` is empty, which means \"match all values and all keys\"",
            ));
        }
        if t.toleration_seconds.is_some() && effect != "NoExecute" {
            errs.push(FieldError::invalid(
                &p.child("effect"),
                effect,
                "effect must be 'NoExecute' when `tolerationSeconds` is set",
            ));
        }
        match operator {
            "Equal" | "" => {
                let msgs = is_valid_label_value(value);
                if !msgs.is_empty() {
                    errs.push(FieldError::invalid(&p.child("operator"), value, msgs.join(";")));
                }
            }
            "Exists" => {
                if !value.is_empty() {
                    errs.push(FieldError::invalid(
                        &p.child("operator"),
                        value,
                        "value must be empty when `operator` is 'Exists'",
                    ));
                }
            }
            // `TaintTolerationComparisonOperators` is off in 1.36: Lt and Gt are refused,
            // listed among the operators the gate would allow.
            "Lt" | "Gt" => errs.push(FieldError::not_supported(
                &p.child("operator"),
                operator,
                &["Equal", "Exists", "Lt", "Gt"],
            )),
            other => errs.push(FieldError::not_supported(
                &p.child("operator"),
                other,
                &["Equal", "Exists"],
            )),
        }
        if !effect.is_empty() && !matches!(effect, "NoSchedule" | "PreferNoSchedule" | "NoExecute")
        {
            errs.push(FieldError::not_supported(
                &p.child("effect"),
                effect,
                &["NoSchedule", "PreferNoSchedule", "NoExecute"],
            ));
        }
    }
    errs
}

fn validate_resource_claims(spec: &PodSpec, path: &FieldPath) -> Vec<FieldError> {
    let mut errs = Vec::new();
    let mut names = BTreeSet::new();
    for (i, claim) in spec.resource_claims.iter().flatten().enumerate() {
        let p = path.index(i);
        if claim.name.is_empty() {
            errs.push(FieldError::required(&p.child("name"), ""));
        } else if names.contains(&claim.name) {
            errs.push(FieldError::duplicate(&p.child("name"), &claim.name));
        } else {
            errs.extend(dns_label_errors(&claim.name, &p.child("name")));
            names.insert(claim.name.clone());
        }
        let claim_value = || {
            BadValue::Go(format!(
                "core.PodResourceClaim{{Name:{}, ResourceClaimName:{}, ResourceClaimTemplateName:{}}}",
                go::quote(&claim.name),
                go_string_ptr(claim.resource_claim_name.as_deref()),
                go_string_ptr(claim.resource_claim_template_name.as_deref())
            ))
        };
        match (&claim.resource_claim_name, &claim.resource_claim_template_name) {
            (Some(_), Some(_)) => errs.push(FieldError::invalid(
                &p,
                claim_value(),
                "at most one of `resourceClaimName` or `resourceClaimTemplateName` may be specified",
            )),
            (None, None) => errs.push(FieldError::invalid(
                &p,
                claim_value(),
                "must specify one of: `resourceClaimName`, `resourceClaimTemplateName`",
            )),
            _ => {}
        }
        for (field, value) in [
            ("resourceClaimName", &claim.resource_claim_name),
            ("resourceClaimTemplateName", &claim.resource_claim_template_name),
        ] {
            if let Some(value) = value {
                for msg in name_is_dns_subdomain(value, false) {
                    errs.push(FieldError::invalid(&p.child(field), value, msg));
                }
            }
        }
    }
    errs
}

/// `%#v` of a `*string` field inside a struct (addresses cannot be reproduced).
fn go_string_ptr(value: Option<&str>) -> String {
    match value {
        None => "(*string)(nil)".to_owned(),
        Some(_) => "(*string)(0xc000000000)".to_owned(),
    }
}

// ---- Volumes ----

fn validate_volumes(volumes: &[Volume], path: &FieldPath) -> (Volumes, Vec<FieldError>) {
    let mut errs = Vec::new();
    let mut by_name = Volumes::new();
    for (i, volume) in volumes.iter().enumerate() {
        let p = path.index(i);
        let name_path = p.child("name");
        let mut volume_errs = validate_volume_source(volume, &p);
        if volume.name.is_empty() {
            volume_errs.push(FieldError::required(&name_path, ""));
        } else {
            volume_errs.extend(dns_label_errors(&volume.name, &name_path));
        }
        if by_name.contains_key(&volume.name) {
            volume_errs.push(FieldError::duplicate(&name_path, &volume.name));
        }
        if volume_errs.is_empty() {
            let info = VolumeInfo {
                pvc: volume.persistent_volume_claim.is_some() || volume.ephemeral.is_some(),
                image: volume.image.is_some(),
            };
            by_name.insert(volume.name.clone(), info);
        } else {
            errs.extend(volume_errs);
        }
    }
    (by_name, errs)
}

fn validate_volume_source(v: &Volume, path: &FieldPath) -> Vec<FieldError> {
    let mut errs = Vec::new();
    let mut count = 0usize;
    // Sources in the order Kubernetes checks them; the first one counts, later ones are errors.
    let mut source = |errs: &mut Vec<FieldError>, present: bool, field: &str| -> bool {
        if !present {
            return false;
        }
        if count > 0 {
            errs.push(FieldError::forbidden(
                &path.child(field),
                "may not specify more than 1 volume type",
            ));
            false
        } else {
            count += 1;
            true
        }
    };
    if source(&mut errs, v.empty_dir.is_some(), "emptyDir")
        && let Some(limit) = v.empty_dir.as_ref().and_then(|e| e.size_limit.as_ref())
        && is_negative(limit)
    {
        errs.push(FieldError::forbidden(
            &path.child("emptyDir").child("sizeLimit"),
            "SizeLimit field must be a valid resource quantity",
        ));
    }
    if source(&mut errs, v.host_path.is_some(), "hostPath")
        && let Some(host_path) = &v.host_path
    {
        let p = path.child("hostPath");
        if host_path.path.is_empty() {
            errs.push(FieldError::required(&p.child("path"), ""));
        } else {
            errs.extend(validate_no_backsteps(&host_path.path, &p.child("path")));
            if let Some(t) = &host_path.type_ {
                const TYPES: &[&str] = &[
                    "",
                    "BlockDevice",
                    "CharDevice",
                    "Directory",
                    "DirectoryOrCreate",
                    "File",
                    "FileOrCreate",
                    "Socket",
                ];
                if !TYPES.contains(&t.as_str()) {
                    errs.push(FieldError::not_supported(&p.child("type"), t, TYPES));
                }
            }
        }
    }
    if source(&mut errs, v.git_repo.is_some(), "gitRepo")
        && let Some(git) = &v.git_repo
    {
        let p = path.child("gitRepo");
        if git.repository.is_empty() {
            errs.push(FieldError::required(&p.child("repository"), ""));
        }
        errs.extend(validate_local_descending_path(
            git.directory.as_deref().unwrap_or(""),
            &p.child("directory"),
        ));
    }
    source(&mut errs, v.gce_persistent_disk.is_some(), "gcePersistentDisk");
    source(&mut errs, v.aws_elastic_block_store.is_some(), "awsElasticBlockStore");
    if source(&mut errs, v.secret.is_some(), "secret")
        && let Some(secret) = &v.secret
    {
        let p = path.child("secret");
        if secret.secret_name.as_deref().unwrap_or("").is_empty() {
            errs.push(FieldError::required(&p.child("secretName"), ""));
        }
        errs.extend(validate_mode(secret.default_mode, &p.child("defaultMode")));
        errs.extend(validate_key_to_paths(secret.items.as_deref(), &p.child("items")));
    }
    if source(&mut errs, v.nfs.is_some(), "nfs")
        && let Some(nfs) = &v.nfs
    {
        let p = path.child("nfs");
        if nfs.server.is_empty() {
            errs.push(FieldError::required(&p.child("server"), ""));
        }
        if nfs.path.is_empty() {
            errs.push(FieldError::required(&p.child("path"), ""));
        }
        if !nfs.path.starts_with('/') {
            errs.push(FieldError::invalid(&p.child("path"), &nfs.path, "must be an absolute path"));
        }
    }
    source(&mut errs, v.iscsi.is_some(), "iscsi");
    source(&mut errs, v.glusterfs.is_some(), "glusterfs");
    source(&mut errs, v.flocker.is_some(), "flocker");
    if source(&mut errs, v.persistent_volume_claim.is_some(), "persistentVolumeClaim")
        && v.persistent_volume_claim.as_ref().is_some_and(|c| c.claim_name.is_empty())
    {
        errs.push(FieldError::required(
            &path.child("persistentVolumeClaim").child("claimName"),
            "",
        ));
    }
    source(&mut errs, v.rbd.is_some(), "rbd");
    source(&mut errs, v.cinder.is_some(), "cinder");
    source(&mut errs, v.cephfs.is_some(), "cephFS");
    source(&mut errs, v.quobyte.is_some(), "quobyte");
    // Kubernetes misspells this path in the "more than 1" error.
    if source(&mut errs, v.downward_api.is_some(), "downwarAPI")
        && let Some(downward) = &v.downward_api
    {
        let p = path.child("downwardAPI");
        errs.extend(validate_mode(downward.default_mode, &p.child("defaultMode")));
        for file in downward.items.iter().flatten() {
            errs.extend(validate_downward_api_file(
                &file.path,
                file.field_ref.as_ref(),
                file.resource_field_ref.as_ref(),
                file.mode,
                &p,
            ));
        }
    }
    source(&mut errs, v.fc.is_some(), "fc");
    source(&mut errs, v.flex_volume.is_some(), "flexVolume");
    if source(&mut errs, v.config_map.is_some(), "configMap")
        && let Some(cm) = &v.config_map
    {
        let p = path.child("configMap");
        if cm.name.is_empty() {
            errs.push(FieldError::required(&p.child("name"), ""));
        }
        errs.extend(validate_mode(cm.default_mode, &p.child("defaultMode")));
        errs.extend(validate_key_to_paths(cm.items.as_deref(), &p.child("items")));
    }
    source(&mut errs, v.azure_file.is_some(), "azureFile");
    source(&mut errs, v.vsphere_volume.is_some(), "vsphereVolume");
    source(&mut errs, v.photon_persistent_disk.is_some(), "photonPersistentDisk");
    source(&mut errs, v.portworx_volume.is_some(), "portworxVolume");
    source(&mut errs, v.azure_disk.is_some(), "azureDisk");
    source(&mut errs, v.storageos.is_some(), "storageos");
    if source(&mut errs, v.projected.is_some(), "projected")
        && let Some(projected) = &v.projected
    {
        let p = path.child("projected");
        errs.extend(validate_mode(projected.default_mode, &p.child("defaultMode")));
        errs.extend(validate_projection_sources(projected, &p));
    }
    source(&mut errs, v.scale_io.is_some(), "scaleIO");
    source(&mut errs, v.csi.is_some(), "csi");
    source(&mut errs, v.ephemeral.is_some(), "ephemeral");
    source(&mut errs, v.image.is_some(), "image");
    if count == 0 {
        errs.push(FieldError::required(path, "must specify a volume type"));
    }
    errs
}

fn is_negative(q: &Quantity) -> bool {
    GoQuantity::parse(&q.0).is_ok_and(|q| q.to_canonical().starts_with('-'))
}

fn validate_mode(mode: Option<i32>, path: &FieldPath) -> Vec<FieldError> {
    match mode {
        Some(m) if !(0..=0o777).contains(&m) => {
            vec![FieldError::invalid(path, m, FILE_MODE_ERROR_MSG)]
        }
        _ => Vec::new(),
    }
}

fn validate_key_to_paths(items: Option<&[KeyToPath]>, path: &FieldPath) -> Vec<FieldError> {
    let mut errs = Vec::new();
    for (i, kp) in items.into_iter().flatten().enumerate() {
        errs.extend(validate_key_to_path(kp, &path.index(i)));
    }
    errs
}

fn validate_key_to_path(kp: &KeyToPath, path: &FieldPath) -> Vec<FieldError> {
    let mut errs = Vec::new();
    if kp.key.is_empty() {
        errs.push(FieldError::required(&path.child("key"), ""));
    }
    if kp.path.is_empty() {
        errs.push(FieldError::required(&path.child("path"), ""));
    }
    errs.extend(validate_local_non_reserved_path(&kp.path, &path.child("path")));
    errs.extend(validate_mode(kp.mode, &path.child("mode")));
    errs
}

fn validate_no_backsteps(target: &str, path: &FieldPath) -> Vec<FieldError> {
    if target.split('/').any(|part| part == "..") {
        vec![FieldError::invalid(path, target, "must not contain '..'")]
    } else {
        Vec::new()
    }
}

fn validate_local_descending_path(target: &str, path: &FieldPath) -> Vec<FieldError> {
    let mut errs = Vec::new();
    if target.starts_with('/') {
        errs.push(FieldError::invalid(path, target, "must be a relative path"));
    }
    errs.extend(validate_no_backsteps(target, path));
    errs
}

fn validate_local_non_reserved_path(target: &str, path: &FieldPath) -> Vec<FieldError> {
    let mut errs = validate_local_descending_path(target, path);
    if target.starts_with("..") && !target.starts_with("../") {
        errs.push(FieldError::invalid(path, target, "must not start with '..'"));
    }
    errs
}

const VOLUME_FIELD_PATHS: &[&str] = &[
    "metadata.annotations",
    "metadata.labels",
    "metadata.name",
    "metadata.namespace",
    "metadata.uid",
];
const ENV_FIELD_PATHS: &[&str] = &[
    "metadata.name",
    "metadata.namespace",
    "metadata.uid",
    "spec.nodeName",
    "spec.serviceAccountName",
    "status.hostIP",
    "status.hostIPs",
    "status.podIP",
    "status.podIPs",
];
const RESOURCE_FIELD_PATHS: &[&str] = &[
    "limits.cpu",
    "limits.ephemeral-storage",
    "limits.memory",
    "requests.cpu",
    "requests.ephemeral-storage",
    "requests.memory",
];

fn validate_downward_api_file(
    file_path: &str,
    field_ref: Option<&ObjectFieldSelector>,
    resource_ref: Option<&ResourceFieldSelector>,
    mode: Option<i32>,
    path: &FieldPath,
) -> Vec<FieldError> {
    let mut errs = Vec::new();
    if file_path.is_empty() {
        errs.push(FieldError::required(&path.child("path"), ""));
    }
    errs.extend(validate_local_non_reserved_path(file_path, &path.child("path")));
    match (field_ref, resource_ref) {
        (Some(field_ref), other) => {
            errs.extend(validate_object_field_selector(
                field_ref,
                VOLUME_FIELD_PATHS,
                &path.child("fieldRef"),
            ));
            if other.is_some() {
                errs.push(FieldError::invalid(
                    path,
                    "resource",
                    "fieldRef and resourceFieldRef can not be specified simultaneously",
                ));
            }
        }
        (None, Some(resource_ref)) => {
            errs.extend(validate_resource_field_selector(
                resource_ref,
                &path.child("resourceFieldRef"),
                true,
            ));
        }
        (None, None) => errs
            .push(FieldError::required(path, "one of fieldRef and resourceFieldRef is required")),
    }
    errs.extend(validate_mode(mode, &path.child("mode")));
    errs
}

fn validate_projection_sources(
    projected: &k8s_openapi::api::core::v1::ProjectedVolumeSource,
    path: &FieldPath,
) -> Vec<FieldError> {
    let mut errs = Vec::new();
    let mut all_paths = BTreeSet::new();
    for (i, source) in projected.sources.iter().flatten().enumerate() {
        let mut count = 0;
        let src = path.child("sources").index(i);
        let mut items =
            |errs: &mut Vec<FieldError>, name: &str, list: Option<&[KeyToPath]>, p: &FieldPath| {
                for (j, kp) in list.into_iter().flatten().enumerate() {
                    errs.extend(validate_key_to_path(kp, &p.child("items").index(j)));
                    if !kp.path.is_empty() && !all_paths.insert(kp.path.clone()) {
                        errs.push(FieldError::invalid(path, name, "conflicting duplicate paths"));
                    }
                }
            };
        if let Some(secret) = &source.secret {
            count += 1;
            let p = src.child("secret");
            if secret.name.is_empty() {
                errs.push(FieldError::required(&p.child("name"), ""));
            }
            items(&mut errs, &secret.name, secret.items.as_deref(), &p);
        }
        if let Some(cm) = &source.config_map {
            count += 1;
            let p = src.child("configMap");
            if cm.name.is_empty() {
                errs.push(FieldError::required(&p.child("name"), ""));
            }
            items(&mut errs, &cm.name, cm.items.as_deref(), &p);
        }
        if let Some(downward) = &source.downward_api {
            count += 1;
            let p = src.child("downwardAPI");
            for file in downward.items.iter().flatten() {
                errs.extend(validate_downward_api_file(
                    &file.path,
                    file.field_ref.as_ref(),
                    file.resource_field_ref.as_ref(),
                    file.mode,
                    &p,
                ));
                if !file.path.is_empty() && !all_paths.insert(file.path.clone()) {
                    errs.push(FieldError::invalid(path, &file.path, "conflicting duplicate paths"));
                }
            }
        }
        if let Some(token) = &source.service_account_token {
            count += 1;
            let p = src.child("serviceAccountToken");
            let expiration = token.expiration_seconds.unwrap_or(0);
            if expiration < 600 {
                errs.push(FieldError::invalid(
                    &p.child("expirationSeconds"),
                    expiration,
                    "may not specify a duration less than 10 minutes",
                ));
            }
            if expiration > 1 << 32 {
                errs.push(FieldError::invalid(
                    &p.child("expirationSeconds"),
                    expiration,
                    "may not specify a duration larger than 2^32 seconds",
                ));
            }
            if token.path.is_empty() {
                errs.push(FieldError::required(&path.child("path"), ""));
            } else {
                errs.extend(validate_local_non_reserved_path(&token.path, &path.child("path")));
            }
        }
        if source.cluster_trust_bundle.is_some() {
            count += 1;
        }
        if count > 1 {
            errs.push(FieldError::forbidden(
                &src,
                "may not specify more than 1 volume type per source",
            ));
        }
    }
    errs
}

/// `fieldpath.SplitMaybeSubscriptedPath`: `metadata.labels['key']` into path and key.
fn split_subscripted(field_path: &str) -> Option<(&str, &str)> {
    let s = field_path.strip_suffix("']")?;
    let (path, key) = s.split_once("['")?;
    (!path.is_empty()).then_some((path, key))
}

fn validate_object_field_selector(
    fs: &ObjectFieldSelector,
    expressions: &[&str],
    path: &FieldPath,
) -> Vec<FieldError> {
    let api_version = fs.api_version.as_deref().unwrap_or("");
    if api_version.is_empty() {
        return vec![FieldError::required(&path.child("apiVersion"), "")];
    }
    if fs.field_path.is_empty() {
        return vec![FieldError::required(&path.child("fieldPath"), "")];
    }
    // ConvertDownwardAPIFieldLabel.
    let converted: Result<String, String> = if api_version != "v1" {
        Err(format!("unsupported pod version: {api_version}"))
    } else if let Some((p, _)) = split_subscripted(&fs.field_path) {
        match p {
            "metadata.annotations" | "metadata.labels" => Ok(fs.field_path.clone()),
            _ => Err(format!("field label does not support subscript: {}", fs.field_path)),
        }
    } else {
        match fs.field_path.as_str() {
            "metadata.annotations"
            | "metadata.labels"
            | "metadata.name"
            | "metadata.namespace"
            | "metadata.uid"
            | "spec.nodeName"
            | "spec.restartPolicy"
            | "spec.serviceAccountName"
            | "spec.schedulerName"
            | "status.phase"
            | "status.hostIP"
            | "status.hostIPs"
            | "status.podIP"
            | "status.podIPs" => Ok(fs.field_path.clone()),
            "spec.host" => Ok("spec.nodeName".to_owned()),
            other => Err(format!("field label not supported: {other}")),
        }
    };
    let internal = match converted {
        Ok(internal) => internal,
        Err(err) => {
            return vec![FieldError::invalid(
                &path.child("fieldPath"),
                &fs.field_path,
                format!("error converting fieldPath: {err}"),
            )];
        }
    };
    if let Some((p, subscript)) = split_subscripted(&internal) {
        match p {
            "metadata.annotations" => qualified_name_errors(&subscript.to_lowercase(), path),
            "metadata.labels" => qualified_name_errors(subscript, path),
            _ => vec![FieldError::invalid(path, p, "does not support subscript")],
        }
    } else if !expressions.contains(&internal.as_str()) {
        vec![FieldError::not_supported(&path.child("fieldPath"), &internal, expressions)]
    } else {
        Vec::new()
    }
}

fn validate_resource_field_selector(
    fs: &ResourceFieldSelector,
    path: &FieldPath,
    volume: bool,
) -> Vec<FieldError> {
    if volume && fs.container_name.as_deref().unwrap_or("").is_empty() {
        vec![FieldError::required(&path.child("containerName"), "")]
    } else if fs.resource.is_empty() {
        vec![FieldError::required(&path.child("resource"), "")]
    } else if !RESOURCE_FIELD_PATHS.contains(&fs.resource.as_str())
        && !fs.resource.starts_with("limits.hugepages-")
        && !fs.resource.starts_with("requests.hugepages-")
    {
        vec![FieldError::not_supported(&path.child("resource"), &fs.resource, RESOURCE_FIELD_PATHS)]
    } else {
        Vec::new()
    }
}

// ---- Containers ----

/// What container validation needs from the pod.
struct ContainerContext<'a> {
    volumes: &'a Volumes,
    claim_names: &'a BTreeSet<String>,
    grace: Option<i64>,
    restart_policy: &'a str,
    /// The pod's `hostUsers`, which an `Unmasked` proc mount needs false.
    host_users: Option<bool>,
}

fn validate_containers(
    containers: &[Container],
    ctx: &ContainerContext<'_>,
    path: &FieldPath,
) -> Vec<FieldError> {
    if containers.is_empty() {
        return vec![FieldError::required(path, "")];
    }
    let mut errs = Vec::new();
    let mut names = BTreeSet::new();
    for (i, c) in containers.iter().enumerate() {
        let p = path.index(i);
        errs.extend(validate_container_common(c, ctx, &p));
        if !names.insert(c.name.clone()) {
            errs.push(FieldError::duplicate(&p.child("name"), &c.name));
        }
        if let Some(lifecycle) = &c.lifecycle {
            errs.extend(validate_lifecycle(lifecycle, ctx.grace, &p.child("lifecycle")));
        }
        errs.extend(validate_probes(c, ctx.grace, &p));
        if c.restart_policy.is_some() {
            errs.push(FieldError::forbidden(
                &p.child("restartPolicy"),
                "may not be set for non-init containers",
            ));
        }
    }
    errs.extend(host_port_conflicts(containers, path));
    errs
}

fn validate_init_containers(
    containers: &[Container],
    regular: &[Container],
    ctx: &ContainerContext<'_>,
    path: &FieldPath,
) -> Vec<FieldError> {
    let mut errs = Vec::new();
    let mut names: BTreeSet<String> = regular.iter().map(|c| c.name.clone()).collect();
    for (i, c) in containers.iter().enumerate() {
        let p = path.index(i);
        errs.extend(validate_container_common(c, ctx, &p));
        let mut restart_always = false;
        if let Some(policy) = &c.restart_policy {
            if policy != "Always" {
                errs.push(FieldError::not_supported(
                    &p.child("restartPolicy"),
                    policy,
                    &["Always"],
                ));
            }
            restart_always = policy == "Always";
        }
        if names.contains(&c.name) {
            errs.push(FieldError::duplicate(&p.child("name"), &c.name));
        } else if !c.name.is_empty() {
            names.insert(c.name.clone());
        }
        // Kubernetes checks each init container alone, so the index in the path is always 0.
        errs.extend(host_port_conflicts(std::slice::from_ref(c), path));
        if restart_always {
            if let Some(lifecycle) = &c.lifecycle {
                errs.extend(validate_lifecycle(lifecycle, ctx.grace, &p.child("lifecycle")));
            }
            errs.extend(validate_probes(c, ctx.grace, &p));
        } else {
            let forbidden = "may not be set for init containers without restartPolicy=Always";
            for (set, field) in [
                (c.lifecycle.is_some(), "lifecycle"),
                (c.liveness_probe.is_some(), "livenessProbe"),
                (c.readiness_probe.is_some(), "readinessProbe"),
                (c.startup_probe.is_some(), "startupProbe"),
            ] {
                if set {
                    errs.push(FieldError::forbidden(&p.child(field), forbidden));
                }
            }
        }
        if let Some(policies) = c.resize_policy.as_ref().filter(|r| !r.is_empty()) {
            errs.push(FieldError::invalid(
                &p.child("resizePolicy"),
                BadValue::Go(go_resize_policies(policies)),
                "must not be set for init containers",
            ));
        }
    }
    errs
}

fn validate_ephemeral_containers(
    spec: &PodSpec,
    ctx: &ContainerContext<'_>,
    path: &FieldPath,
) -> Vec<FieldError> {
    let mut errs = Vec::new();
    let ephemeral = spec.ephemeral_containers.as_deref().unwrap_or_default();
    if ephemeral.is_empty() {
        return errs;
    }
    let mut other: BTreeSet<String> = spec.containers.iter().map(|c| c.name.clone()).collect();
    other.extend(spec.init_containers.iter().flatten().map(|c| c.name.clone()));
    let mut all = other.clone();
    for (i, ec) in ephemeral.iter().enumerate() {
        let p = path.index(i);
        // The common fields of an ephemeral container, as a container.
        let value = serde_json::to_value(ec).unwrap_or_default();
        let as_container: Container = serde_json::from_value(value).unwrap_or_default();
        errs.extend(validate_container_common(&as_container, ctx, &p));
        let image = as_container.image.as_deref().unwrap_or("");
        if image.len() != image.trim().len() {
            errs.push(FieldError::invalid(
                &p.child("image"),
                image,
                "must not have leading or trailing whitespace",
            ));
        }
        if !all.insert(ec.name.clone()) {
            errs.push(FieldError::duplicate(&p.child("name"), &ec.name));
        }
        if let Some(target) = ec.target_container_name.as_ref().filter(|t| !t.is_empty())
            && !other.contains(target)
        {
            errs.push(FieldError::not_found(&p.child("targetContainerName"), target));
        }
        errs.extend(ephemeral_only_errors(ec, &p));
    }
    errs
}

/// The fields an ephemeral container at `p` may not have: ports, resources, probes,
/// lifecycle, resize and restart policies, and a mount's `subPath` or `subPathExpr`.
pub(crate) fn ephemeral_only_errors(ec: &EphemeralContainer, p: &FieldPath) -> Vec<FieldError> {
    let mut errs = Vec::new();
    let forbidden = "cannot be set for an Ephemeral Container";
    for (set, field) in [
        (ec.ports.is_some(), "ports"),
        // Go allows a field whose value is its zero value: `resources: {}` is not set.
        (
            ec.resources
                .as_ref()
                .is_some_and(|r| r.limits.is_some() || r.requests.is_some() || r.claims.is_some()),
            "resources",
        ),
        (ec.liveness_probe.is_some(), "livenessProbe"),
        (ec.readiness_probe.is_some(), "readinessProbe"),
        (ec.startup_probe.is_some(), "startupProbe"),
        (ec.lifecycle.is_some(), "lifecycle"),
        (ec.resize_policy.is_some(), "resizePolicy"),
        (ec.restart_policy.is_some(), "restartPolicy"),
    ] {
        if set {
            errs.push(FieldError::forbidden(&p.child(field), forbidden));
        }
    }
    for (j, mount) in ec.volume_mounts.iter().flatten().enumerate() {
        let mp = p.child("volumeMounts").index(j);
        if mount.sub_path.as_ref().is_some_and(|s| !s.is_empty()) {
            errs.push(FieldError::forbidden(&mp.child("subPath"), forbidden));
        }
        if mount.sub_path_expr.as_ref().is_some_and(|s| !s.is_empty()) {
            errs.push(FieldError::forbidden(&mp.child("subPathExpr"), forbidden));
        }
    }
    errs
}

fn go_resize_policies(policies: &[ContainerResizePolicy]) -> String {
    let items: Vec<String> = policies
        .iter()
        .map(|p| {
            format!(
                "core.ContainerResizePolicy{{ResourceName:{}, RestartPolicy:{}}}",
                go::quote(&p.resource_name),
                go::quote(&p.restart_policy)
            )
        })
        .collect();
    format!("[]core.ContainerResizePolicy{{{}}}", items.join(", "))
}

fn validate_container_common(
    c: &Container,
    ctx: &ContainerContext<'_>,
    path: &FieldPath,
) -> Vec<FieldError> {
    let mut errs = Vec::new();
    let name_path = path.child("name");
    if c.name.is_empty() {
        errs.push(FieldError::required(&name_path, ""));
    } else {
        errs.extend(dns_label_errors(&c.name, &name_path));
    }
    if c.image.as_deref().unwrap_or("").is_empty() {
        errs.push(FieldError::required(&path.child("image"), ""));
    }
    let tmp = path.child("terminationMessagePolicy");
    match c.termination_message_policy.as_deref().unwrap_or("") {
        "File" | "FallbackToLogsOnError" => {}
        "" => errs.push(FieldError::required(&tmp, "")),
        other => {
            errs.push(FieldError::not_supported(&tmp, other, &["File", "FallbackToLogsOnError"]))
        }
    }
    let mounts = c.volume_mounts.as_deref().unwrap_or_default();
    let devices = c.volume_devices.as_deref().unwrap_or_default();
    errs.extend(validate_container_ports(
        c.ports.as_deref().unwrap_or_default(),
        &path.child("ports"),
    ));
    errs.extend(validate_env(c.env.as_deref().unwrap_or_default(), &path.child("env")));
    errs.extend(validate_env_from(
        c.env_from.as_deref().unwrap_or_default(),
        &path.child("envFrom"),
    ));
    errs.extend(validate_volume_mounts(
        mounts,
        devices,
        ctx.volumes,
        c,
        &path.child("volumeMounts"),
    ));
    errs.extend(validate_volume_devices(
        devices,
        mounts,
        ctx.volumes,
        &path.child("volumeDevices"),
    ));
    let pp = path.child("imagePullPolicy");
    match c.image_pull_policy.as_deref().unwrap_or("") {
        "Always" | "IfNotPresent" | "Never" => {}
        "" => errs.push(FieldError::required(&pp, "")),
        other => {
            errs.push(FieldError::not_supported(&pp, other, &["Always", "IfNotPresent", "Never"]))
        }
    }
    let resources = c.resources.clone().unwrap_or_default();
    errs.extend(validate_resources(&resources, ctx.claim_names, &path.child("resources")));
    errs.extend(validate_resize_policy(
        c.resize_policy.as_deref().unwrap_or_default(),
        ctx.restart_policy,
        &path.child("resizePolicy"),
    ));
    errs.extend(pod_constraints::validate_container_security_context(
        c.security_context.as_ref(),
        ctx.host_users,
        &path.child("securityContext"),
    ));
    errs
}

pub(crate) fn validate_container_ports(
    ports: &[ContainerPort],
    path: &FieldPath,
) -> Vec<FieldError> {
    let mut errs = Vec::new();
    let mut names = BTreeSet::new();
    for (i, port) in ports.iter().enumerate() {
        let p = path.index(i);
        if let Some(name) = port.name.as_ref().filter(|n| !n.is_empty()) {
            let msgs = is_valid_port_name(name);
            if !msgs.is_empty() {
                for msg in msgs {
                    errs.push(FieldError::invalid(&p.child("name"), name, msg));
                }
            } else if !names.insert(name.clone()) {
                errs.push(FieldError::duplicate(&p.child("name"), name));
            }
        }
        if port.container_port == 0 {
            errs.push(FieldError::required(&p.child("containerPort"), ""));
        } else {
            for msg in is_valid_port_num(i64::from(port.container_port)) {
                errs.push(FieldError::invalid(&p.child("containerPort"), port.container_port, msg));
            }
        }
        if let Some(host_port) = port.host_port.filter(|h| *h != 0) {
            for msg in is_valid_port_num(i64::from(host_port)) {
                errs.push(FieldError::invalid(&p.child("hostPort"), host_port, msg));
            }
        }
        match port.protocol.as_deref().unwrap_or("") {
            "" => errs.push(FieldError::required(&p.child("protocol"), "")),
            "TCP" | "UDP" | "SCTP" => {}
            other => errs.push(FieldError::not_supported(
                &p.child("protocol"),
                other,
                &["SCTP", "TCP", "UDP"],
            )),
        }
    }
    errs
}

fn host_port_conflicts(containers: &[Container], path: &FieldPath) -> Vec<FieldError> {
    let mut errs = Vec::new();
    let mut seen = BTreeSet::new();
    for (ci, c) in containers.iter().enumerate() {
        for (pi, port) in c.ports.iter().flatten().enumerate() {
            let host_port = port.host_port.unwrap_or(0);
            if host_port == 0 {
                continue;
            }
            let key = format!(
                "{}/{}/{}",
                port.protocol.as_deref().unwrap_or(""),
                port.host_ip.as_deref().unwrap_or(""),
                host_port
            );
            if !seen.insert(key.clone()) {
                let p = path.index(ci).child("ports").index(pi).child("hostPort");
                errs.push(FieldError::duplicate(&p, key));
            }
        }
    }
    errs
}

fn validate_host_network_ports(spec: &PodSpec, path: &FieldPath) -> Vec<FieldError> {
    let mut errs = Vec::new();
    if spec.host_network != Some(true) {
        return errs;
    }
    for (i, c) in spec.containers.iter().enumerate() {
        for (j, port) in c.ports.iter().flatten().enumerate() {
            let host_port = port.host_port.unwrap_or(0);
            if host_port != 0 && host_port != port.container_port {
                let p = path.child("containers").index(i).child("ports").index(j);
                errs.push(FieldError::invalid(
                    &p.child("hostPort"),
                    host_port,
                    "must match `containerPort` when `hostNetwork` is true",
                ));
            }
        }
    }
    errs
}

pub(crate) fn validate_env(vars: &[EnvVar], path: &FieldPath) -> Vec<FieldError> {
    let mut errs = Vec::new();
    for (i, var) in vars.iter().enumerate() {
        let p = path.index(i);
        if var.name.is_empty() {
            errs.push(FieldError::required(&p.child("name"), ""));
        } else {
            for msg in is_env_var_name(&var.name) {
                errs.push(FieldError::invalid(&p.child("name"), &var.name, msg));
            }
        }
        let Some(from) = &var.value_from else {
            continue;
        };
        let vp = p.child("valueFrom");
        let mut sources = 0;
        if let Some(field_ref) = &from.field_ref {
            sources += 1;
            errs.extend(validate_object_field_selector(
                field_ref,
                ENV_FIELD_PATHS,
                &vp.child("fieldRef"),
            ));
        }
        if let Some(resource_ref) = &from.resource_field_ref {
            sources += 1;
            errs.extend(validate_resource_field_selector(
                resource_ref,
                &vp.child("resourceFieldRef"),
                false,
            ));
        }
        for (selector, field) in [
            (from.config_map_key_ref.as_ref().map(|s| (&s.name, &s.key)), "configMapKeyRef"),
            (from.secret_key_ref.as_ref().map(|s| (&s.name, &s.key)), "secretKeyRef"),
        ] {
            if let Some((name, key)) = selector {
                sources += 1;
                let sp = vp.child(field);
                for msg in name_is_dns_subdomain(name, false) {
                    errs.push(FieldError::invalid(&sp.child("name"), name, msg));
                }
                if key.is_empty() {
                    errs.push(FieldError::required(&sp.child("key"), ""));
                } else {
                    for msg in is_config_map_key(key) {
                        errs.push(FieldError::invalid(&sp.child("key"), key, msg));
                    }
                }
            }
        }
        if sources == 0 {
            errs.push(FieldError::invalid(
                &vp,
                "",
                "must specify one of: `fieldRef`, `resourceFieldRef`, `configMapKeyRef` or `secretKeyRef`",
            ));
        } else if !var.value.as_deref().unwrap_or("").is_empty() {
            errs.push(FieldError::invalid(
                &vp,
                "",
                "may not be specified when `value` is not empty",
            ));
        } else if sources > 1 {
            errs.push(FieldError::invalid(
                &vp,
                "",
                "may not have more than one field specified at a time",
            ));
        }
    }
    errs
}

pub(crate) fn validate_env_from(sources: &[EnvFromSource], path: &FieldPath) -> Vec<FieldError> {
    let mut errs = Vec::new();
    for (i, source) in sources.iter().enumerate() {
        let p = path.index(i);
        if let Some(prefix) = source.prefix.as_ref().filter(|p| !p.is_empty()) {
            for msg in is_env_var_name(prefix) {
                errs.push(FieldError::invalid(&p.child("prefix"), prefix, msg));
            }
        }
        let mut count = 0;
        for (name, field) in [
            (source.config_map_ref.as_ref().map(|r| &r.name), "configMapRef"),
            (source.secret_ref.as_ref().map(|r| &r.name), "secretRef"),
        ] {
            if let Some(name) = name {
                count += 1;
                let np = p.child(field).child("name");
                if name.is_empty() {
                    errs.push(FieldError::required(&np, ""));
                } else {
                    for msg in name_is_dns_subdomain(name, true) {
                        errs.push(FieldError::invalid(&np, name, msg));
                    }
                }
            }
        }
        if count == 0 {
            errs.push(FieldError::invalid(
                path,
                "",
                "must specify one of: `configMapRef` or `secretRef`",
            ));
        } else if count > 1 {
            errs.push(FieldError::invalid(
                path,
                "",
                "may not have more than one field specified at a time",
            ));
        }
    }
    errs
}

fn validate_volume_mounts(
    mounts: &[VolumeMount],
    devices: &[VolumeDevice],
    volumes: &Volumes,
    container: &Container,
    path: &FieldPath,
) -> Vec<FieldError> {
    let mut errs = Vec::new();
    let mut mount_points = BTreeSet::new();
    for (i, m) in mounts.iter().enumerate() {
        let p = path.index(i);
        if m.name.is_empty() {
            errs.push(FieldError::required(&p.child("name"), ""));
        }
        if !volumes.contains_key(&m.name) {
            errs.push(FieldError::not_found(&p.child("name"), &m.name));
        }
        if m.mount_path.is_empty() {
            errs.push(FieldError::required(&p.child("mountPath"), ""));
        }
        if !mount_points.insert(m.mount_path.clone()) {
            errs.push(FieldError::invalid(&p.child("mountPath"), &m.mount_path, "must be unique"));
        }
        if devices.iter().any(|d| d.name == m.name) {
            errs.push(FieldError::invalid(
                &p.child("name"),
                &m.name,
                "must not already exist in volumeDevices",
            ));
        }
        if devices.iter().any(|d| d.device_path == m.mount_path) {
            errs.push(FieldError::invalid(
                &p.child("mountPath"),
                &m.mount_path,
                "must not already exist as a path in volumeDevices",
            ));
        }
        let sub_path = m.sub_path.as_deref().unwrap_or("");
        let sub_path_expr = m.sub_path_expr.as_deref().unwrap_or("");
        if volumes.get(&m.name).is_some_and(|v| v.image) {
            if !sub_path.is_empty() {
                errs.push(FieldError::invalid(
                    &p.child("subPath"),
                    sub_path,
                    "not allowed in image volume sources",
                ));
            }
            if !sub_path_expr.is_empty() {
                errs.push(FieldError::invalid(
                    &p.child("subPathExpr"),
                    sub_path_expr,
                    "not allowed in image volume sources",
                ));
            }
        }
        // Kubernetes reports the following against the list, not the item.
        if !sub_path.is_empty() {
            errs.extend(validate_local_descending_path(sub_path, &path.child("subPath")));
        }
        if !sub_path_expr.is_empty() {
            if !sub_path.is_empty() {
                errs.push(FieldError::invalid(
                    &p.child("subPathExpr"),
                    sub_path_expr,
                    "subPathExpr and subPath are mutually exclusive",
                ));
            }
            errs.extend(validate_local_descending_path(sub_path_expr, &path.child("subPathExpr")));
        }
        if let Some(propagation) = &m.mount_propagation {
            let pp = path.child("mountPropagation");
            let supported = ["Bidirectional", "HostToContainer", "None"];
            if !supported.contains(&propagation.as_str()) {
                errs.push(FieldError::not_supported(&pp, propagation, &supported));
            }
            let privileged =
                container.security_context.as_ref().and_then(|s| s.privileged).unwrap_or(false);
            if propagation == "Bidirectional" && !privileged {
                errs.push(FieldError::forbidden(
                    &pp,
                    "Bidirectional mount propagation is available only to privileged containers",
                ));
            }
        }
        if let Some(rro) = &m.recursive_read_only {
            let rp = path.child("recursiveReadOnly");
            match rro.as_str() {
                "Disabled" => {}
                "Enabled" | "IfPossible" => {
                    if m.read_only != Some(true) {
                        errs.push(FieldError::forbidden(
                            &rp,
                            "may only be specified when readOnly is true",
                        ));
                    }
                    if m.mount_propagation.as_deref().is_some_and(|p| p != "None") {
                        errs.push(FieldError::forbidden(
                            &rp,
                            "may only be specified when mountPropagation is None or not specified",
                        ));
                    }
                }
                other => errs.push(FieldError::not_supported(
                    &rp,
                    other,
                    &["Disabled", "Enabled", "IfPossible"],
                )),
            }
        }
    }
    errs
}

fn validate_volume_devices(
    devices: &[VolumeDevice],
    mounts: &[VolumeMount],
    volumes: &Volumes,
    path: &FieldPath,
) -> Vec<FieldError> {
    let mut errs = Vec::new();
    let mut paths = BTreeSet::new();
    let mut names = BTreeSet::new();
    for (i, d) in devices.iter().enumerate() {
        let p = path.index(i);
        let matched = volumes.get(&d.name);
        if d.name.is_empty() {
            errs.push(FieldError::required(&p.child("name"), ""));
        }
        if names.contains(&d.name) {
            errs.push(FieldError::invalid(&p.child("name"), &d.name, "must be unique"));
        }
        match matched {
            Some(info) if !info.pvc => errs.push(FieldError::invalid(
                &p.child("name"),
                &d.name,
                "can only use volume source type of PersistentVolumeClaim or Ephemeral for block mode",
            )),
            Some(_) => {}
            None => errs.push(FieldError::not_found(&p.child("name"), &d.name)),
        }
        if d.device_path.is_empty() {
            errs.push(FieldError::required(&p.child("devicePath"), ""));
        }
        if paths.contains(&d.device_path) {
            errs.push(FieldError::invalid(
                &p.child("devicePath"),
                &d.device_path,
                "must be unique",
            ));
        }
        if !d.device_path.is_empty() && d.device_path.split('/').any(|s| s == "..") {
            errs.push(FieldError::invalid(
                &p.child("devicePath"),
                &d.device_path,
                "can not contain backsteps ('..')",
            ));
        } else {
            paths.insert(d.device_path.clone());
        }
        if mounts.iter().any(|m| m.name == d.name) {
            errs.push(FieldError::invalid(
                &p.child("name"),
                &d.name,
                "must not already exist in volumeMounts",
            ));
        }
        if mounts.iter().any(|m| m.mount_path == d.device_path) {
            errs.push(FieldError::invalid(
                &p.child("devicePath"),
                &d.device_path,
                "must not already exist as a path in volumeMounts",
            ));
        }
        if !d.name.is_empty() {
            names.insert(d.name.clone());
        }
    }
    errs
}

fn validate_resize_policy(
    policies: &[ContainerResizePolicy],
    pod_restart_policy: &str,
    path: &FieldPath,
) -> Vec<FieldError> {
    let mut errs = Vec::new();
    let mut seen = BTreeSet::new();
    for (i, policy) in policies.iter().enumerate() {
        if !seen.insert(policy.resource_name.clone()) {
            errs.push(FieldError::duplicate(&path.index(i), &policy.resource_name));
        }
        match policy.resource_name.as_str() {
            "cpu" | "memory" => {}
            "" => errs.push(FieldError::required(path, "")),
            other => errs.push(FieldError::not_supported(path, other, &["cpu", "memory"])),
        }
        match policy.restart_policy.as_str() {
            "NotRequired" | "RestartContainer" => {}
            "" => errs.push(FieldError::required(path, "")),
            other => errs.push(FieldError::not_supported(
                path,
                other,
                &["NotRequired", "RestartContainer"],
            )),
        }
        if pod_restart_policy == "Never" && policy.restart_policy != "NotRequired" {
            errs.push(FieldError::invalid(
                path,
                &policy.restart_policy,
                "must be 'NotRequired' when `restartPolicy` is 'Never'",
            ));
        }
    }
    errs
}

// ---- Resources ----

const STANDARD_CONTAINER_RESOURCES: &[&str] = &["cpu", "memory", "ephemeral-storage"];
const STANDARD_RESOURCES: &[&str] = &[
    "cpu",
    "memory",
    "ephemeral-storage",
    "requests.cpu",
    "requests.memory",
    "requests.ephemeral-storage",
    "limits.cpu",
    "limits.memory",
    "limits.ephemeral-storage",
    "pods",
    "services",
    "replicationcontrollers",
    "resourcequotas",
    "secrets",
    "configmaps",
    "persistentvolumeclaims",
    "storage",
    "requests.storage",
    "services.nodeports",
    "services.loadbalancers",
];
const INTEGER_RESOURCES: &[&str] = &[
    "pods",
    "services",
    "replicationcontrollers",
    "resourcequotas",
    "secrets",
    "configmaps",
    "persistentvolumeclaims",
    "services.nodeports",
    "services.loadbalancers",
];

fn is_hugepages(name: &str) -> bool {
    name.starts_with("hugepages-")
}

fn is_native_resource(name: &str) -> bool {
    !name.contains('/') || name.contains("kubernetes.io/")
}

fn is_extended_resource(name: &str) -> bool {
    if is_native_resource(name) || name.starts_with("requests.") {
        return false;
    }
    is_qualified_name(&format!("requests.{name}")).is_empty()
}

fn is_overcommit_allowed(name: &str) -> bool {
    is_native_resource(name) && !is_hugepages(name)
}

fn validate_container_resource_name(name: &str, path: &FieldPath) -> Vec<FieldError> {
    let mut errs = qualified_name_errors(name, path);
    if !errs.is_empty() {
        return errs;
    }
    if !name.contains('/') {
        if !STANDARD_RESOURCES.contains(&name)
            && !is_hugepages(name)
            && !name.starts_with("requests.hugepages-")
        {
            errs.push(FieldError::invalid(
                path,
                name,
                "must be a standard resource type or fully qualified",
            ));
        }
        if !STANDARD_CONTAINER_RESOURCES.contains(&name) && !is_hugepages(name) {
            errs.push(FieldError::invalid(
                path,
                name,
                "must be a standard resource for containers",
            ));
        }
    } else if !is_native_resource(name) && !is_extended_resource(name) {
        errs.push(FieldError::invalid(
            path,
            name,
            "doesn't follow extended resource name standard",
        ));
    }
    errs
}

/// `%#v` of a `resource.Quantity` value (the webhook prints the struct; the internal amount is
/// approximated from the canonical text).
fn go_quantity_struct(text: &str) -> String {
    format!(
        "resource.Quantity{{i:resource.int64Amount{{value:0, scale:0}}, d:resource.infDecAmount{{Dec:(*inf.Dec)(nil)}}, s:{}, Format:\"DecimalSI\"}}",
        go::quote(text)
    )
}

fn validate_quantity_value(name: &str, text: &str, path: &FieldPath) -> Vec<FieldError> {
    let mut errs = Vec::new();
    let Ok(q) = GoQuantity::parse(text) else {
        return errs;
    };
    let canonical = q.to_canonical();
    if canonical.starts_with('-') {
        errs.push(FieldError::invalid(path, canonical.as_str(), IS_NEGATIVE_ERROR_MSG));
    }
    if INTEGER_RESOURCES.contains(&name) || is_extended_resource(name) {
        // Canonical text has a fractional suffix exactly when the value is not whole.
        let is_integer = !(canonical.ends_with('m')
            || canonical.ends_with('u')
            || canonical.ends_with('n')
            || canonical.contains("e-"));
        if !is_integer {
            errs.push(FieldError::invalid(
                path,
                BadValue::Go(go_quantity_struct(&canonical)),
                "must be an integer",
            ));
        }
    }
    errs
}

fn canonical_text(q: &Quantity) -> String {
    GoQuantity::parse(&q.0).map(|q| q.to_canonical()).unwrap_or_else(|_| q.0.clone())
}

fn validate_resources(
    r: &ResourceRequirements,
    claim_names: &BTreeSet<String>,
    path: &FieldPath,
) -> Vec<FieldError> {
    let mut errs = Vec::new();
    let lim_path = path.child("limits");
    let req_path = path.child("requests");
    let empty = BTreeMap::new();
    let limits = r.limits.as_ref().unwrap_or(&empty);
    let requests = r.requests.as_ref().unwrap_or(&empty);
    let mut cpu_or_memory = false;
    let mut hugepages = false;
    for (name, q) in limits {
        let p = lim_path.key(name);
        errs.extend(validate_container_resource_name(name, &p));
        errs.extend(validate_quantity_value(name, &q.0, &p));
        hugepages |= is_hugepages(name);
        cpu_or_memory |= name == "cpu" || name == "memory";
    }
    for (name, q) in requests {
        let p = req_path.key(name);
        errs.extend(validate_container_resource_name(name, &p));
        errs.extend(validate_quantity_value(name, &q.0, &p));
        match limits.get(name) {
            Some(limit) => {
                let (Ok(req_q), Ok(lim_q)) = (GoQuantity::parse(&q.0), GoQuantity::parse(&limit.0))
                else {
                    continue;
                };
                let order = req_q.cmp_value(&lim_q);
                if order.is_ne() && !is_overcommit_allowed(name) {
                    errs.push(FieldError::invalid(
                        &req_path,
                        canonical_text(q),
                        format!("must be equal to {name} limit of {}", canonical_text(limit)),
                    ));
                } else if order.is_gt() {
                    errs.push(FieldError::invalid(
                        &req_path,
                        canonical_text(q),
                        format!(
                            "must be less than or equal to {name} limit of {}",
                            canonical_text(limit)
                        ),
                    ));
                }
            }
            None if !is_overcommit_allowed(name) => errs.push(FieldError::required(
                &lim_path,
                "Limit must be set for non overcommitable resources",
            )),
            None => {}
        }
        hugepages |= is_hugepages(name);
        cpu_or_memory |= name == "cpu" || name == "memory";
    }
    if hugepages && !cpu_or_memory {
        errs.push(FieldError::forbidden(path, "HugePages require cpu or memory"));
    }
    let mut seen = BTreeSet::new();
    for (i, claim) in r.claims.iter().flatten().enumerate() {
        let p = path.child("claims").index(i);
        if claim.name.is_empty() {
            errs.push(FieldError::required(&p, ""));
            continue;
        }
        if !seen.insert(claim.name.clone()) {
            errs.push(FieldError::duplicate(&p, &claim.name));
        }
        if !claim_names.contains(&claim.name) {
            let mut e = FieldError::not_found(&p, &claim.name);
            e.detail = if claim_names.is_empty() {
                "must be one of the names in pod.spec.resourceClaims which is empty".to_owned()
            } else {
                let names: Vec<&str> = claim_names.iter().map(String::as_str).collect();
                format!("must be one of the names in pod.spec.resourceClaims: {}", names.join(", "))
            };
            errs.push(e);
        }
    }
    errs
}

// ---- Probes and handlers ----

fn validate_probes(c: &Container, grace: Option<i64>, path: &FieldPath) -> Vec<FieldError> {
    let mut errs = Vec::new();
    if let Some(probe) = &c.liveness_probe {
        let p = path.child("livenessProbe");
        errs.extend(validate_probe(probe, grace, &p));
        errs.extend(success_threshold_is_one(probe, &p));
    }
    if let Some(probe) = &c.readiness_probe {
        let p = path.child("readinessProbe");
        errs.extend(validate_probe(probe, grace, &p));
        if let Some(seconds) = probe.termination_grace_period_seconds {
            errs.push(FieldError::invalid(
                &p.child("terminationGracePeriodSeconds"),
                seconds,
                "must not be set for readinessProbes",
            ));
        }
    }
    if let Some(probe) = &c.startup_probe {
        let p = path.child("startupProbe");
        errs.extend(validate_probe(probe, grace, &p));
        errs.extend(success_threshold_is_one(probe, &p));
    }
    errs
}

fn success_threshold_is_one(probe: &Probe, path: &FieldPath) -> Vec<FieldError> {
    let threshold = probe.success_threshold.unwrap_or(0);
    if threshold != 1 {
        vec![FieldError::invalid(&path.child("successThreshold"), threshold, "must be 1")]
    } else {
        Vec::new()
    }
}

fn validate_probe(probe: &Probe, grace: Option<i64>, path: &FieldPath) -> Vec<FieldError> {
    let handler = Handler {
        exec: probe.exec.as_ref().map(|e| e.command.as_deref().unwrap_or_default()),
        http_get: probe.http_get.as_ref(),
        tcp_port: probe.tcp_socket.as_ref().map(|t| t.port.clone()),
        grpc_port: probe.grpc.as_ref().map(|g| g.port),
        sleep: None,
    };
    let mut errs = validate_handler(&handler, grace, path);
    for (value, field) in [
        (probe.initial_delay_seconds, "initialDelaySeconds"),
        (probe.timeout_seconds, "timeoutSeconds"),
        (probe.period_seconds, "periodSeconds"),
        (probe.success_threshold, "successThreshold"),
        (probe.failure_threshold, "failureThreshold"),
    ] {
        errs.extend(validate_nonnegative(i64::from(value.unwrap_or(0)), &path.child(field)));
    }
    if let Some(seconds) = probe.termination_grace_period_seconds.filter(|s| *s <= 0) {
        errs.push(FieldError::invalid(
            &path.child("terminationGracePeriodSeconds"),
            seconds,
            "must be greater than 0",
        ));
    }
    errs
}

fn validate_lifecycle(
    lifecycle: &k8s_openapi::api::core::v1::Lifecycle,
    grace: Option<i64>,
    path: &FieldPath,
) -> Vec<FieldError> {
    let mut errs = Vec::new();
    for (handler, field) in [(&lifecycle.post_start, "postStart"), (&lifecycle.pre_stop, "preStop")]
    {
        if let Some(h) = handler {
            errs.extend(validate_handler(&lifecycle_handler(h), grace, &path.child(field)));
        }
    }
    errs
}

fn lifecycle_handler(h: &LifecycleHandler) -> Handler<'_> {
    Handler {
        exec: h.exec.as_ref().map(|e| e.command.as_deref().unwrap_or_default()),
        http_get: h.http_get.as_ref(),
        tcp_port: h.tcp_socket.as_ref().map(|t| t.port.clone()),
        grpc_port: None,
        sleep: h.sleep.as_ref().map(|s| s.seconds),
    }
}

/// The handler fields common to probes and lifecycle hooks.
struct Handler<'a> {
    exec: Option<&'a [String]>,
    http_get: Option<&'a HTTPGetAction>,
    tcp_port: Option<IntOrString>,
    grpc_port: Option<i32>,
    sleep: Option<i64>,
}

fn validate_handler(h: &Handler<'_>, grace: Option<i64>, path: &FieldPath) -> Vec<FieldError> {
    let mut errs = Vec::new();
    let mut count = 0;
    let mut take = |errs: &mut Vec<FieldError>, present: bool, field: &str| -> bool {
        if !present {
            return false;
        }
        if count > 0 {
            errs.push(FieldError::forbidden(
                &path.child(field),
                "may not specify more than 1 handler type",
            ));
            return false;
        }
        count += 1;
        true
    };
    if take(&mut errs, h.exec.is_some(), "exec") && h.exec.is_some_and(<[String]>::is_empty) {
        errs.push(FieldError::required(&path.child("exec").child("command"), ""));
    }
    if take(&mut errs, h.http_get.is_some(), "httpGet")
        && let Some(http) = h.http_get
    {
        let p = path.child("httpGet");
        if http.path.as_deref().unwrap_or("").is_empty() {
            errs.push(FieldError::required(&p.child("path"), ""));
        }
        errs.extend(validate_port_num_or_name(&http.port, &p.child("port")));
        let scheme = http.scheme.as_deref().unwrap_or("");
        if scheme != "HTTP" && scheme != "HTTPS" {
            errs.push(FieldError::not_supported(&p.child("scheme"), scheme, &["HTTP", "HTTPS"]));
        }
        for header in http.http_headers.iter().flatten() {
            for msg in is_http_header_name(&header.name) {
                errs.push(FieldError::invalid(&p.child("httpHeaders"), &header.name, msg));
            }
        }
    }
    if take(&mut errs, h.tcp_port.is_some(), "tcpSocket")
        && let Some(port) = &h.tcp_port
    {
        errs.extend(validate_port_num_or_name(port, &path.child("tcpSocket").child("port")));
    }
    if take(&mut errs, h.grpc_port.is_some(), "grpc")
        && let Some(port) = h.grpc_port
    {
        errs.extend(validate_port_num_or_name(
            &IntOrString::Int(port),
            &path.child("grpc").child("port"),
        ));
    }
    if take(&mut errs, h.sleep.is_some(), "sleep")
        && let (Some(seconds), Some(grace)) = (h.sleep, grace)
        && (seconds < 0 || seconds > grace)
    {
        // `PodLifecycleSleepActionAllowZero` is GA in 1.36: zero is allowed.
        errs.push(FieldError::invalid(
            &path.child("sleep"),
            seconds,
            format!("must be non-negative and less than terminationGracePeriodSeconds ({grace})"),
        ));
    }
    if count == 0 {
        errs.push(FieldError::required(path, "must specify a handler type"));
    }
    errs
}

fn validate_port_num_or_name(port: &IntOrString, path: &FieldPath) -> Vec<FieldError> {
    match port {
        IntOrString::Int(n) => is_valid_port_num(i64::from(*n))
            .into_iter()
            .map(|msg| FieldError::invalid(path, *n, msg))
            .collect(),
        IntOrString::String(s) => {
            is_valid_port_name(s).into_iter().map(|msg| FieldError::invalid(path, s, msg)).collect()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn template(value: serde_json::Value) -> PodTemplateSpec {
        serde_json::from_value(value).expect("template")
    }

    fn messages(errs: &[FieldError]) -> Vec<String> {
        errs.iter().map(ToString::to_string).collect()
    }

    fn defaulted(value: serde_json::Value) -> PodTemplateSpec {
        let mut t = template(value);
        if let Some(spec) = &mut t.spec {
            super::super::pod_defaults::default_pod_spec(spec);
        }
        t
    }

    #[test]
    fn a_defaulted_template_is_valid() {
        let t = defaulted(json!({
            "metadata": {"labels": {"app": "web"}},
            "spec": {
                "containers": [{
                    "name": "web", "image": "nginx",
                    "ports": [{"containerPort": 80}],
                    "env": [{"name": "A", "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}}],
                    "resources": {"limits": {"cpu": "1"}, "requests": {"cpu": "500m"}},
                    "readinessProbe": {"httpGet": {"port": 80}},
                    "volumeMounts": [{"name": "data", "mountPath": "/data"}]
                }],
                "volumes": [{"name": "data"}]
            }
        }));
        assert_eq!(
            messages(&validate_pod_template_spec(&t, &FieldPath::new("template"))),
            Vec::<String>::new()
        );
    }

    #[test]
    fn container_and_volume_errors_name_their_fields() {
        let t = defaulted(json!({
            "spec": {
                "containers": [
                    {"name": "Web", "image": "", "ports": [{"containerPort": 70000, "protocol": "FOO"}],
                     "volumeMounts": [{"name": "missing", "mountPath": "/x"}],
                     "resources": {"limits": {"cpu": "1"}, "requests": {"cpu": "2"}}},
                    {"name": "Web", "image": "a"}
                ],
                "volumes": [{"name": "v", "hostPath": {"path": "/a"}, "emptyDir": {}}]
            }
        }));
        let errs =
            messages(&validate_pod_template_spec(&t, &FieldPath::new("spec").child("template")));
        let expected = [
            "spec.template.spec.volumes[0].hostPath: Forbidden: may not specify more than 1 volume type",
            "spec.template.spec.containers[0].name: Invalid value: \"Web\": a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')",
            "spec.template.spec.containers[0].image: Required value",
            "spec.template.spec.containers[0].ports[0].containerPort: Invalid value: 70000: must be between 1 and 65535, inclusive",
            "spec.template.spec.containers[0].ports[0].protocol: Unsupported value: \"FOO\": supported values: \"SCTP\", \"TCP\", \"UDP\"",
            "spec.template.spec.containers[0].volumeMounts[0].name: Not found: \"missing\"",
            "spec.template.spec.containers[0].resources.requests: Invalid value: \"2\": must be less than or equal to cpu limit of 1",
            "spec.template.spec.containers[1].name: Duplicate value: \"Web\"",
        ];
        for e in expected {
            assert!(errs.contains(&e.to_owned()), "missing {e}\nin {errs:#?}");
        }
    }
}
