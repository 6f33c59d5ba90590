//! SidecarSet validation (the `vsidecarset.kb.io` webhook), on CREATE and UPDATE.
//!
//! [`validate_sidecar_set`] checks a SidecarSet (v1beta1; convert v1alpha1 first) as
//! upstream does, in upstream's order:
//! 1. metadata, with SidecarSet names (letters, digits and `-`, at most 63 characters);
//! 2. the canary annotations: the base exists, is not itself, is not a canary, does not
//!    change, and the canary does not roll updates;
//! 3. the spec:
//!    - native sidecar init containers are not updated in place (no `RollingUpdate`);
//!    - `selector` is required, and it and `namespaceSelector` must be valid and non-empty;
//!    - `injectionStrategy.revision` names a revision that exists, with a known policy;
//!    - with `RollingUpdate`: `partition` and `selector` are exclusive, `partition` and
//!      `maxUnavailable` are non-negative or percentages, and the priority and scatter
//!      strategies are well formed;
//!    - at least one container or init container; `podInjectPolicy` and
//!      `shareVolumePolicy` are known values; `transferEnv` field references are
//!      `metadata.labels[...]` or `metadata.annotations[...]`; `resourcesPolicy` is not
//!      combined with `resources`, is only on native sidecar init containers, has a valid
//!      non-empty regular expression and valid expressions; the containers and volumes pass
//!      pod validation;
//!    - `patchPodMetadata` passes the whitelist, has annotations, and no key twice;
//! 4. on UPDATE, no container is added and no container's `upgradeType` changes;
//! 5. when all that passed, against the other SidecarSets that may select the same pods
//!    (overlapping selectors and namespace selectors): no container or init container of
//!    the same name, no volume of the same name with a different definition, and no
//!    annotation both patch unless both retain it.
//!
//! Differences from upstream, on purpose:
//! - Field paths name the field in full: upstream reports some errors at `revision`,
//!   `updateStrategy` or `spec[0].resourcesPolicy`; here they are
//!   `spec.injectionStrategy.revision`, `spec.updateStrategy` and
//!   `spec.containers[0].resourcesPolicy`.
//! - The SidecarSet is read as the defaulting webhook leaves it: an unset
//!   `podInjectPolicy`, `shareVolumePolicy` or `patchPolicy` is its default, not an error.
//! - A `HotUpgrade` container without `hotUpgradeEmptyImage` is refused (upstream admits it
//!   and the pods it injects are then refused for their empty image).
//!
//! What the check needs from the cluster comes in [`SidecarSetContext`].

use std::collections::{BTreeMap, BTreeSet};

use k8s_openapi::api::apps::v1::ControllerRevision;
use k8s_openapi::api::core::v1::{Container, PodSpec};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector;
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;
use kruise_api::apps::v1beta1::{
    PodInjectPolicyType, ResourcesPolicy, ShareVolumePolicyType, SidecarContainer,
    SidecarContainerUpgradeType, SidecarSet, SidecarSetInjectRevisionPolicy,
    SidecarSetPatchPolicyType, SidecarSetUpdateStrategy, SidecarSetUpdateStrategyType,
    TransferEnvVar,
};
use kruise_api::well_known::annotations;

use crate::admission::meta::{
    LabelSelectorOptions, label_selector_as_selector, validate_annotations,
    validate_label_selector, validate_nonnegative, validate_object_meta,
};
use crate::admission::pod_defaults::default_pod_spec;
use crate::admission::pod_template::validate_pod_spec;
use crate::admission::workload_spec::{priority_strategy_error, scatter_strategy_error};
use crate::field::{BadValue, FieldError, FieldErrors, FieldPath, go};
use crate::names::{is_qualified_name, max_len_error, regex_error};
use crate::sidecarset::hash::is_native_sidecar;
use crate::sidecarset::matching::{namespaces_overlap, selectors_overlap};
use crate::sidecarset::whitelist::{PatchMetadataWhitelist, check_patch_metadata};
use crate::sidecarset::{canary_base, expr, pinned_revision, split_subscripted_path};

/// The name of upstream's validating webhook for SidecarSets.
pub const VALIDATING_WEBHOOK_NAME: &str = "vsidecarset.kb.io";

/// What validating a SidecarSet needs from the cluster.
#[derive(Clone, Copy, Debug, Default)]
pub struct SidecarSetContext<'a> {
    /// Every SidecarSet in the cluster (the one being validated may be among them).
    pub others: &'a [SidecarSet],
    /// The ControllerRevisions of the SidecarSet being validated.
    pub revisions: &'a [ControllerRevision],
    /// The patch metadata whitelist from `kruise-configuration`, if it has one.
    pub whitelist: Option<&'a PatchMetadataWhitelist>,
    /// The `SidecarSetPatchPodMetadataDefaultsAllowed` gate.
    pub patch_metadata_defaults_allowed: bool,
}

/// The SidecarSet defaulting webhook (`msidecarset.kb.io`), on CREATE and UPDATE: upstream's
/// defaults, then the hash annotations (`kruise.io/sidecarset-hash` and
/// `kruise.io/sidecarset-hash-without-image`, our hashes: see [`crate::sidecarset::hash`]).
///
/// Defaults: `updateStrategy` RollingUpdate with `maxUnavailable: 1` and `partition: 0`;
/// containers BeforeAppContainer and init containers AfterAppContainer; ColdUpgrade;
/// `shareVolumePolicy: disabled`; the core container and volume defaults (the image pull
/// policy from the image tag, as for a bare pod); field references on `v1`;
/// `revisionHistoryLimit: 10`; `patchPolicy: Retain`; `injectionStrategy.revision.policy:
/// Always`.
pub fn default_sidecar_set(obj: &mut SidecarSet) {
    let spec = &mut obj.spec;
    let strategy = &mut spec.update_strategy;
    strategy.type_.get_or_insert(SidecarSetUpdateStrategyType::RollingUpdate);
    strategy.max_unavailable.get_or_insert(IntOrString::Int(1));
    strategy.partition.get_or_insert(IntOrString::Int(0));
    let sidecars =
        spec.init_containers.iter_mut().map(|c| (c, PodInjectPolicyType::AfterAppContainer)).chain(
            spec.containers.iter_mut().map(|c| (c, PodInjectPolicyType::BeforeAppContainer)),
        );
    for (c, policy) in sidecars {
        c.pod_inject_policy.get_or_insert(policy);
        c.upgrade_strategy.upgrade_type.get_or_insert(SidecarContainerUpgradeType::ColdUpgrade);
        c.share_volume_policy.type_.get_or_insert(ShareVolumePolicyType::Disabled);
        for t in &mut c.transfer_env {
            if let Some(field) =
                t.source_container_name_from.as_mut().and_then(|f| f.field_ref.as_mut())
            {
                field.api_version.get_or_insert_with(|| "v1".to_owned());
            }
        }
    }
    // Core's container and volume defaults, applied as to a bare pod's init containers (which
    // default the pull policy from the image tag, as upstream's `SetDefaults_Container`).
    let count = spec.init_containers.len();
    let all: Vec<Container> =
        spec.init_containers.iter().chain(&spec.containers).map(|c| c.container.clone()).collect();
    let mut pod = PodSpec {
        init_containers: Some(all),
        volumes: Some(std::mem::take(&mut spec.volumes)),
        ..Default::default()
    };
    default_pod_spec(&mut pod);
    for (i, c) in pod.init_containers.unwrap_or_default().into_iter().enumerate() {
        let target = if i < count {
            spec.init_containers.get_mut(i)
        } else {
            spec.containers.get_mut(i - count)
        };
        if let Some(target) = target {
            target.container = c;
        }
    }
    spec.volumes = pod.volumes.unwrap_or_default();
    spec.revision_history_limit.get_or_insert(10);
    for patch in &mut spec.patch_pod_metadata {
        patch.patch_policy.get_or_insert(SidecarSetPatchPolicyType::Retain);
    }
    if let Some(revision) = &mut spec.injection_strategy.revision {
        revision.policy.get_or_insert(SidecarSetInjectRevisionPolicy::Always);
    }
    let hash = crate::sidecarset::sidecar_set_hash(&obj.spec);
    let without_image = crate::sidecarset::sidecar_set_hash_without_image(&obj.spec);
    let notes = obj.metadata.annotations.get_or_insert_with(Default::default);
    notes.insert(annotations::SIDECARSET_HASH.to_owned(), hash);
    notes.insert(annotations::SIDECARSET_HASH_WITHOUT_IMAGE.to_owned(), without_image);
}

const NAME_MAX_LEN: usize = 63;

/// Upstream's SidecarSet name check.
fn sidecar_set_name(name: &str, _prefix: bool) -> Vec<String> {
    let mut out = Vec::new();
    if name.is_empty() || !name.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-') {
        out.push(regex_error(
            "sidecarset name must consist of alphanumeric characters or '-'",
            r"^[a-zA-Z0-9\-]+$",
            &["example-com"],
        ));
    }
    if name.len() > NAME_MAX_LEN {
        out.push(max_len_error(NAME_MAX_LEN));
    }
    out
}

/// Validates a SidecarSet on CREATE (`old` is `None`) or UPDATE.
pub fn validate_sidecar_set(
    obj: &SidecarSet,
    old: Option<&SidecarSet>,
    ctx: &SidecarSetContext<'_>,
) -> FieldErrors {
    let metadata = FieldPath::new("metadata");
    // Upstream checks the metadata as on CREATE, on UPDATE too.
    let mut errs = validate_object_meta(&obj.metadata, false, sidecar_set_name, &metadata);
    errs.extend(validate_canary(obj, old, ctx));
    errs.extend(validate_spec(obj, ctx));
    if let Some(old) = old {
        errs.extend(validate_container_changes(obj, old));
    }
    if errs.is_empty() {
        errs.extend(validate_conflicts(obj, ctx.others));
    }
    FieldErrors(errs)
}

fn annotations_value(obj: &SidecarSet) -> BadValue {
    BadValue::Go(go::string_map(obj.metadata.annotations.as_ref()))
}

fn validate_canary(
    obj: &SidecarSet,
    old: Option<&SidecarSet>,
    ctx: &SidecarSetContext<'_>,
) -> Vec<FieldError> {
    let Some(base) = canary_base(obj) else { return Vec::new() };
    let path = FieldPath::new("metadata");
    let invalid = |msg: String| FieldError::invalid(&path, annotations_value(obj), msg);
    let mut errs = Vec::new();
    let name = obj.metadata.name.as_deref().unwrap_or("");
    if base == name {
        errs.push(invalid("base sidecarSet cannot be itself".into()));
    }
    if let Some(old) = old {
        let old_base =
            old.metadata.annotations.as_ref().and_then(|a| a.get(annotations::SIDECARSET_BASE));
        if old_base.map(String::as_str) != Some(base) {
            errs.push(invalid(format!(
                "annotations[{}] is immutable",
                annotations::SIDECARSET_BASE
            )));
        }
    }
    match ctx.others.iter().find(|s| s.metadata.name.as_deref() == Some(base)) {
        None => errs.push(invalid(format!(
            "fetch base sidecarSet[{base}] failed: sidecarsets.apps.kruise.io \"{base}\" not found"
        ))),
        Some(found) if canary_base(found).is_some() => {
            errs.push(invalid("base sidecarSet cannot be canary".into()));
        }
        Some(_) => {}
    }
    if obj.spec.update_strategy.type_ != Some(SidecarSetUpdateStrategyType::NotUpdate) {
        errs.push(invalid("RollingUpdate is not supported for canary sidecarSet".into()));
    }
    errs
}

/// Upstream's `validateSelector`: valid, and not empty.
fn validate_selector(selector: &LabelSelector, path: &FieldPath) -> Vec<FieldError> {
    let mut errs = validate_label_selector(Some(selector), LabelSelectorOptions::default(), path);
    let size = selector.match_labels.as_ref().map_or(0, BTreeMap::len)
        + selector.match_expressions.as_ref().map_or(0, Vec::len);
    if size == 0 {
        errs.push(FieldError::invalid(
            path,
            BadValue::Go(go::label_selector(selector)),
            "empty selector is not valid for sidecarset.",
        ));
    }
    if label_selector_as_selector(Some(selector)).is_err() {
        errs.push(FieldError::invalid(
            &path.child("selector"),
            BadValue::Go(go::label_selector(selector)),
            "",
        ));
    }
    errs
}

fn validate_spec(obj: &SidecarSet, ctx: &SidecarSetContext<'_>) -> Vec<FieldError> {
    let spec = &obj.spec;
    let path = FieldPath::new("spec");
    let mut errs = Vec::new();
    let rolling = spec.update_strategy.type_ == Some(SidecarSetUpdateStrategyType::RollingUpdate);
    for c in &spec.init_containers {
        if is_native_sidecar(&c.container) && rolling {
            errs.push(FieldError::required(
                &path.child("updateStrategy"),
                "The initContainer in-place upgrade is not currently supported.",
            ));
        }
    }
    match &spec.selector {
        None => errs.push(FieldError::required(
            &path.child("selector"),
            "no selector defined for SidecarSet",
        )),
        Some(selector) => errs.extend(validate_selector(selector, &path.child("selector"))),
    }
    if let Some(selector) = &spec.namespace_selector {
        errs.extend(validate_selector(selector, &path.child("namespaceSelector")));
    }
    errs.extend(validate_injection_strategy(obj, ctx, &path.child("injectionStrategy")));
    if rolling {
        errs.extend(validate_update_strategy(&spec.update_strategy, &path.child("updateStrategy")));
    }
    if spec.init_containers.is_empty() && spec.containers.is_empty() {
        errs.push(FieldError::required(
            &path,
            "no initContainer or container defined for SidecarSet",
        ));
    } else {
        errs.extend(validate_containers(obj, &path));
    }
    errs.extend(validate_patch_metadata(obj, ctx, &path.child("patchPodMetadata")));
    errs
}

fn validate_injection_strategy(
    obj: &SidecarSet,
    ctx: &SidecarSetContext<'_>,
    path: &FieldPath,
) -> Vec<FieldError> {
    let Some(revision) = &obj.spec.injection_strategy.revision else { return Vec::new() };
    let path = path.child("revision");
    let shown = || BadValue::Go(serde_json::to_string(revision).unwrap_or_default());
    let mut errs = Vec::new();
    if revision.revision_name.is_none() && revision.custom_version.is_none() {
        errs.push(FieldError::invalid(
            &path,
            shown(),
            "revisionName and customVersion cannot be empty simultaneously",
        ));
    } else if pinned_revision(obj, ctx.revisions).is_none() {
        let wanted = revision
            .revision_name
            .clone()
            .or_else(|| revision.custom_version.clone())
            .unwrap_or_default();
        errs.push(FieldError::invalid(
            &path,
            BadValue::Null,
            format!("Cannot find specific ControllerRevision, err: controllerrevisions.apps \"{wanted}\" not found"),
        ));
    }
    if let Some(SidecarSetInjectRevisionPolicy::Other(policy)) = &revision.policy {
        errs.push(FieldError::invalid(
            &path.child("policy"),
            shown(),
            format!("Invalid policy {policy}, supported: [Always, Partial]"),
        ));
    }
    errs
}

/// `ValidatePositiveIntOrPercent`.
fn validate_positive_int_or_percent(value: &IntOrString, path: &FieldPath) -> Vec<FieldError> {
    match value {
        IntOrString::Int(n) => validate_nonnegative(i64::from(*n), path),
        IntOrString::String(text) => {
            let digits = text.strip_suffix('%').unwrap_or("");
            if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
                vec![FieldError::invalid(
                    path,
                    BadValue::Go(go::int_or_string(value)),
                    regex_error(
                        "a valid percent string must be a numeric string followed by an ending '%'",
                        "[0-9]+%",
                        &["1%", "93%"],
                    ),
                )]
            } else {
                Vec::new()
            }
        }
    }
}

fn validate_update_strategy(
    strategy: &SidecarSetUpdateStrategy,
    path: &FieldPath,
) -> Vec<FieldError> {
    let mut errs = Vec::new();
    let partition_set = match &strategy.partition {
        None => false,
        Some(IntOrString::Int(n)) => *n != 0,
        Some(IntOrString::String(_)) => true,
    };
    if partition_set && strategy.selector.is_some() {
        errs.push(FieldError::invalid(
            path,
            BadValue::Go(serde_json::to_string(strategy).unwrap_or_default()),
            "Partition and Selector cannot be used together",
        ));
    }
    if let Some(selector) = &strategy.selector {
        errs.extend(validate_selector(selector, &path.child("selector")));
    }
    if let Some(partition) = &strategy.partition {
        errs.extend(validate_positive_int_or_percent(partition, &path.child("partition")));
    }
    if let Some(max) = &strategy.max_unavailable {
        errs.extend(validate_positive_int_or_percent(max, &path.child("maxUnavailable")));
    }
    if let Some(msg) = strategy.priority_strategy.as_ref().and_then(priority_strategy_error) {
        errs.push(FieldError::required(&path.child("priorityStrategy"), msg));
    }
    if let Some(msg) = scatter_strategy_error(&strategy.scatter_strategy) {
        errs.push(FieldError::required(&path.child("scatterStrategy"), msg));
    }
    errs
}

fn validate_containers(obj: &SidecarSet, path: &FieldPath) -> Vec<FieldError> {
    let spec = &obj.spec;
    let mut errs = Vec::new();
    for (i, c) in spec.init_containers.iter().enumerate() {
        let p = path.child("initContainers").index(i);
        if let Some(policy) = &c.resources_policy {
            if !is_native_sidecar(&c.container) {
                errs.push(FieldError::invalid(
                    &p.child("resourcesPolicy"),
                    BadValue::Go(serde_json::to_string(policy).unwrap_or_default()),
                    "resourcesPolicy is only supported for containers with RestartPolicy Always",
                ));
            }
            errs.extend(validate_resources_policy(c, policy, &p.child("resourcesPolicy")));
        }
        errs.extend(validate_hot_upgrade(c, &p));
    }
    for (i, c) in spec.containers.iter().enumerate() {
        let p = path.child("containers").index(i);
        if let Some(PodInjectPolicyType::Other(v)) = &c.pod_inject_policy {
            errs.push(FieldError::invalid(
                &p.child("podInjectPolicy"),
                v.as_str(),
                "unsupported pod inject policy",
            ));
        }
        if let Some(ShareVolumePolicyType::Other(v)) = &c.share_volume_policy.type_ {
            errs.push(FieldError::invalid(
                &p.child("shareVolumePolicy"),
                v.as_str(),
                "unsupported share volume policy",
            ));
        }
        errs.extend(validate_transfer_env(&c.transfer_env, &p.child("transferEnv")));
        if let Some(policy) = &c.resources_policy {
            errs.extend(validate_resources_policy(c, policy, &p.child("resourcesPolicy")));
        }
        errs.extend(validate_hot_upgrade(c, &p));
    }
    // The containers and volumes must make a valid pod (upstream validates a stand-in pod).
    let mut containers: Vec<Container> =
        spec.containers.iter().map(|c| c.container.clone()).collect();
    if containers.is_empty() {
        containers.push(Container {
            name: "test".into(),
            image: Some("busybox".into()),
            ..Default::default()
        });
    }
    let init: Vec<Container> = spec.init_containers.iter().map(|c| c.container.clone()).collect();
    let mut pod = PodSpec {
        containers,
        init_containers: (!init.is_empty()).then_some(init),
        volumes: (!spec.volumes.is_empty()).then(|| spec.volumes.clone()),
        ..Default::default()
    };
    default_pod_spec(&mut pod);
    errs.extend(validate_pod_spec(&pod, path));
    errs
}

fn validate_hot_upgrade(c: &SidecarContainer, path: &FieldPath) -> Vec<FieldError> {
    let hot = c.upgrade_strategy.upgrade_type == Some(SidecarContainerUpgradeType::HotUpgrade);
    if hot && c.upgrade_strategy.hot_upgrade_empty_image.is_empty() {
        return vec![FieldError::required(
            &path.child("upgradeStrategy").child("hotUpgradeEmptyImage"),
            "hotUpgradeEmptyImage is required when upgradeType is HotUpgrade",
        )];
    }
    Vec::new()
}

fn validate_transfer_env(envs: &[TransferEnvVar], path: &FieldPath) -> Vec<FieldError> {
    let mut errs = Vec::new();
    let p = path.child("fieldRef");
    for t in envs {
        let Some(field) = t.source_container_name_from.as_ref().and_then(|f| f.field_ref.as_ref())
        else {
            continue;
        };
        let api_version = field.api_version.as_deref().unwrap_or("");
        if api_version.is_empty() {
            errs.push(FieldError::required(&p.child("apiVersion"), ""));
            continue;
        }
        if field.field_path.is_empty() {
            errs.push(FieldError::required(&p.child("fieldPath"), ""));
            continue;
        }
        if api_version != "v1" {
            errs.push(FieldError::invalid(
                &p.child("fieldPath"),
                field.field_path.as_str(),
                format!("error converting fieldPath: unsupported pod version: {api_version}"),
            ));
            continue;
        }
        match split_subscripted_path(&field.field_path) {
            Some(("metadata.annotations", key)) => {
                for msg in is_qualified_name(&key.to_lowercase()) {
                    errs.push(FieldError::invalid(&p, key, msg));
                }
            }
            Some(("metadata.labels", key)) => {
                for msg in is_qualified_name(key) {
                    errs.push(FieldError::invalid(&p, key, msg));
                }
            }
            Some((other, _)) => errs.push(FieldError::invalid(
                &p.child("fieldPath"),
                field.field_path.as_str(),
                format!("error converting fieldPath: field path not supported: {other}"),
            )),
            None => errs.push(FieldError::invalid(
                &p.child("fieldPath"),
                field.field_path.as_str(),
                format!(
                    "error converting fieldPath: field label not supported: {}",
                    field.field_path
                ),
            )),
        }
    }
    errs
}

fn validate_resources_policy(
    c: &SidecarContainer,
    policy: &ResourcesPolicy,
    path: &FieldPath,
) -> Vec<FieldError> {
    let shown = || BadValue::Go(serde_json::to_string(policy).unwrap_or_default());
    let resources = c.container.resources.as_ref();
    let has_resources = resources.is_some_and(|r| {
        r.limits.as_ref().is_some_and(|l| !l.is_empty())
            || r.requests.as_ref().is_some_and(|l| !l.is_empty())
    });
    if has_resources {
        return vec![FieldError::invalid(
            path,
            shown(),
            "resourcesPolicy and resources cannot be configured together",
        )];
    }
    let mut errs = Vec::new();
    let regex = &policy.target_containers_name_regex;
    if regex.is_empty() {
        errs.push(FieldError::required(
            &path.child("targetContainersNameRegex"),
            "invalid empty regex",
        ));
    } else if let Err(err) = regex::Regex::new(regex) {
        errs.push(FieldError::invalid(
            &path.child("targetContainersNameRegex"),
            regex.as_str(),
            format!("invalid regex pattern: {err}"),
        ));
    }
    let exprs = &policy.resources_expr;
    let p = path.child("resourcesExpr");
    if exprs.limits.is_none() && exprs.requests.is_none() {
        errs.push(FieldError::invalid(
            &p,
            BadValue::Go(serde_json::to_string(exprs).unwrap_or_default()),
            "at least one of limits or requests must be configured",
        ));
        return errs;
    }
    let mut check = |kind: &str, resource: &str, text: &str| {
        if text.is_empty() {
            return;
        }
        if let Err(err) = expr::check(text, resource) {
            errs.push(FieldError::invalid(
                &p.child(kind).child(resource),
                text,
                format!("invalid expression: {err}"),
            ));
        }
    };
    if let Some(l) = &exprs.limits {
        check("limits", "cpu", &l.cpu);
        check("limits", "memory", &l.memory);
    }
    if let Some(r) = &exprs.requests {
        check("requests", "cpu", &r.cpu);
        check("requests", "memory", &r.memory);
    }
    errs
}

fn validate_patch_metadata(
    obj: &SidecarSet,
    ctx: &SidecarSetContext<'_>,
    path: &FieldPath,
) -> Vec<FieldError> {
    let mut errs = Vec::new();
    if let Err(msg) = check_patch_metadata(obj, ctx.whitelist, ctx.patch_metadata_defaults_allowed)
    {
        errs.push(FieldError::required(path, msg));
    }
    let mut keys = BTreeSet::new();
    for (i, patch) in obj.spec.patch_pod_metadata.iter().enumerate() {
        if patch.annotations.is_empty() {
            errs.push(FieldError::required(path, "no annotations defined for SidecarSet"));
        } else {
            errs.extend(validate_annotations(
                Some(&patch.annotations),
                &path.index(i).child("annotations"),
            ));
        }
        for key in patch.annotations.keys() {
            if !keys.insert(key.clone()) {
                errs.push(FieldError::required(
                    path,
                    format!("patch annotation[{key}] already exist"),
                ));
            }
        }
    }
    errs
}

/// On UPDATE: containers cannot be added, and their `upgradeType` cannot change.
fn validate_container_changes(obj: &SidecarSet, old: &SidecarSet) -> Vec<FieldError> {
    let path = FieldPath::new("spec").child("containers");
    let before: BTreeMap<&str, &Option<SidecarContainerUpgradeType>> = old
        .spec
        .containers
        .iter()
        .map(|c| (c.container.name.as_str(), &c.upgrade_strategy.upgrade_type))
        .collect();
    let mut errs = Vec::new();
    for c in &obj.spec.containers {
        let name = c.container.name.as_str();
        match before.get(name) {
            Some(Some(old_type)) if c.upgrade_strategy.upgrade_type.as_ref() != Some(old_type) => {
                errs.push(FieldError::invalid(
                    &path.child("upgradeStrategy").child("upgradeType"),
                    name,
                    format!("container {name} upgradeType is immutable"),
                ));
            }
            Some(_) => {}
            None => errs.push(FieldError::invalid(
                &path.child("name"),
                name,
                format!("container {name} is not found"),
            )),
        }
    }
    errs
}

/// Conflicts with the other SidecarSets that may select the same pods.
fn validate_conflicts(obj: &SidecarSet, all: &[SidecarSet]) -> Vec<FieldError> {
    let path = FieldPath::new("spec");
    let name = obj.metadata.name.as_deref().unwrap_or("");
    let base = canary_base(obj);
    let mut init_in: BTreeMap<&str, &SidecarSet> = BTreeMap::new();
    let mut containers_in: BTreeMap<&str, &SidecarSet> = BTreeMap::new();
    let mut volumes_in: BTreeMap<&str, &SidecarSet> = BTreeMap::new();
    let mut annotations_in: BTreeMap<&str, (&str, &SidecarSetPatchPolicyType)> = BTreeMap::new();
    for other in all {
        let other_name = other.metadata.name.as_deref().unwrap_or("");
        if other_name == name || base == Some(other_name) {
            continue;
        }
        if !(namespaces_overlap(obj, other)
            && selectors_overlap(obj.spec.selector.as_ref(), other.spec.selector.as_ref()))
        {
            continue;
        }
        for c in &other.spec.init_containers {
            init_in.insert(&c.container.name, other);
        }
        for c in &other.spec.containers {
            containers_in.insert(&c.container.name, other);
        }
        for v in &other.spec.volumes {
            volumes_in.insert(&v.name, other);
        }
        for patch in &other.spec.patch_pod_metadata {
            let policy = patch.patch_policy.as_ref().unwrap_or(&SidecarSetPatchPolicyType::Retain);
            if *policy == SidecarSetPatchPolicyType::Retain {
                continue;
            }
            for key in patch.annotations.keys() {
                annotations_in.insert(key, (other_name, policy));
            }
        }
    }
    let mut errs = Vec::new();
    let clash = |c: &SidecarContainer, other: &SidecarSet| {
        FieldError::invalid(
            &path.child("containers"),
            c.container.name.as_str(),
            format!(
                "container {} already exist in {}",
                c.container.name,
                other.metadata.name.as_deref().unwrap_or("")
            ),
        )
    };
    for c in &obj.spec.init_containers {
        if let Some(other) = init_in.get(c.container.name.as_str()) {
            errs.push(clash(c, other));
        }
    }
    for c in &obj.spec.containers {
        if let Some(other) = containers_in.get(c.container.name.as_str()) {
            errs.push(clash(c, other));
        }
    }
    for v in &obj.spec.volumes {
        if let Some(other) = volumes_in.get(v.name.as_str())
            && other.spec.volumes.iter().find(|o| o.name == v.name) != Some(v)
        {
            errs.push(FieldError::invalid(
                &path.child("volumes"),
                v.name.as_str(),
                format!(
                    "volume {} is in conflict with sidecarset {}",
                    v.name,
                    other.metadata.name.as_deref().unwrap_or("")
                ),
            ));
        }
    }
    for patch in &obj.spec.patch_pod_metadata {
        let policy = patch.patch_policy.as_ref().unwrap_or(&SidecarSetPatchPolicyType::Retain);
        if *policy == SidecarSetPatchPolicyType::Retain {
            continue;
        }
        for key in patch.annotations.keys() {
            let Some((other, other_policy)) = annotations_in.get(key.as_str()) else { continue };
            if *policy == SidecarSetPatchPolicyType::Overwrite
                || **other_policy == SidecarSetPatchPolicyType::Overwrite
            {
                errs.push(FieldError::invalid(
                    &path.child("patchPodMetadata"),
                    key.as_str(),
                    format!("annotation {key} is in conflict with sidecarset {other}"),
                ));
            }
        }
    }
    errs
}

#[cfg(test)]
mod tests;
