//! Advanced StatefulSet defaulting and validation, as upstream OpenKruise's
//! `mstatefulset.kb.io` and `vstatefulset.kb.io` webhooks do them. Both API versions are
//! handled as v1beta1: a v1alpha1 object is converted first (and back, for defaulting), as
//! upstream does.
//!
//! Defaulting ([`default_statefulset`]) follows `SetDefaultsStatefulSet`: podManagementPolicy
//! OrderedReady, updateStrategy RollingUpdate with partition 0, maxUnavailable 1, podUpdatePolicy
//! ReCreate and minReadySeconds 0; the claim retention policy Retain/Retain (gate
//! `StatefulSetAutoDeletePVC`); `volumeClaimUpdateStrategy` OnDelete (gate
//! `StatefulSetAutoResizePVCGate`); replicas 1; revisionHistoryLimit 10; and, on create or when
//! the template changed, the pod template and claim template defaults.
//!
//! Validation returns upstream's errors with its paths and messages, in its order, in four
//! stages that are never merged: the spec ([`validate_statefulset`]), the update rules
//! ([`validate_statefulset_update`]), the claim templates under `OnPodRollingUpdate`
//! ([`validate_volume_claim_template_update`]) and `InPlaceOnly` ([`validate_in_place_only`]).
//!
//! Differences from upstream, on purpose: `scaleStrategy.maxUnavailable` is reported at its own
//! path; a bad `reserveOrdinals` entry is reported once, at its own path
//! (`spec.reserveOrdinals[1]: Invalid value: "5-2": the range's start is greater than its end`)
//! where upstream reports at `spec` with the whole list in Go's syntax; the `InPlaceOnly` check
//! reports the
//! first offending change in document order (upstream's is random when several changed); and
//! the template's seccomp and AppArmor annotations are not checked.

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::{PersistentVolumeClaim, PodTemplateSpec};
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;
use kruise_api::apps::v1beta1::{
    PersistentVolumeClaimRetentionPolicyType, PodManagementPolicyType, PodUpdateStrategyType,
    StatefulSet, StatefulSetUpdateStrategyType, VolumeClaimUpdateStrategyType,
};
use serde_json::Value;

use crate::admission::meta::{
    selectors_semantically_equal, validate_annotations, validate_labels, validate_nonnegative,
    validate_object_meta, validate_object_meta_update,
};
use crate::admission::pod_defaults::{
    PodDefaultsOptions, default_pod_spec_with, default_volume_claim_template,
};
use crate::field::{BadValue, FieldError, FieldErrors, FieldPath, go};
use crate::names::name_is_dns_label;
use crate::ordinal::reserve_entry;

/// The name of upstream's validating webhook for Advanced StatefulSets.
pub const VALIDATING_WEBHOOK_NAME: &str = "vstatefulset.kb.io";
/// The name of upstream's mutating webhook for Advanced StatefulSets.
pub const MUTATING_WEBHOOK_NAME: &str = "mstatefulset.kb.io";

/// The longest `minReadySeconds` upstream accepts.
pub const MAX_MIN_READY_SECONDS: i32 = 300;

const SPEC_FORBIDDEN_MSG: &str = "updates to statefulset spec for fields other than 'replicas', 'ordinals', 'template', 'reserveOrdinals', 'lifecycle', 'revisionHistoryLimit', 'persistentVolumeClaimRetentionPolicy', `volumeClaimTemplates`, `VolumeClaimUpdateStrategy` and 'updateStrategy' are forbidden";

/// The feature gates the webhooks read.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct AdmissionGates {
    /// `StatefulSetAutoDeletePVC` (on by default): default the claim retention policy.
    pub auto_delete_pvc: bool,
    /// `StatefulSetAutoResizePVCGate` (off): default `volumeClaimUpdateStrategy` and check
    /// claim template changes under `OnPodRollingUpdate`.
    pub auto_resize_pvc: bool,
    /// `TemplateNoDefaults` (off): never default the pod and claim templates.
    pub template_no_defaults: bool,
    /// `DefaultHostNetworkHostPortsInPodTemplates` (off).
    pub host_network_host_ports: bool,
}

impl Default for AdmissionGates {
    fn default() -> Self {
        Self {
            auto_delete_pvc: true,
            auto_resize_pvc: false,
            template_no_defaults: false,
            host_network_host_ports: false,
        }
    }
}

impl AdmissionGates {
    /// These gates with `StatefulSetAutoDeletePVC` as given.
    pub fn with_auto_delete_pvc(mut self, on: bool) -> Self {
        self.auto_delete_pvc = on;
        self
    }

    /// These gates with `StatefulSetAutoResizePVCGate` as given.
    pub fn with_auto_resize_pvc(mut self, on: bool) -> Self {
        self.auto_resize_pvc = on;
        self
    }

    /// These gates with `TemplateNoDefaults` as given.
    pub fn with_template_no_defaults(mut self, on: bool) -> Self {
        self.template_no_defaults = on;
        self
    }

    /// These gates with `DefaultHostNetworkHostPortsInPodTemplates` as given.
    pub fn with_host_network_host_ports(mut self, on: bool) -> Self {
        self.host_network_host_ports = on;
        self
    }

    /// How every workload kind's templates are defaulted under these gates.
    pub fn template_defaults(&self) -> crate::admission::pod_defaults::TemplateDefaults {
        crate::admission::pod_defaults::TemplateDefaults::new(
            self.template_no_defaults,
            self.host_network_host_ports,
        )
    }
}

// ---- Defaulting ----

/// Defaults a set being created (`old` is `None`) or updated from `old`
/// (`SetDefaultsStatefulSet`); the templates are defaulted on create, and on update only when
/// the template changed, unless `TemplateNoDefaults` is on.
pub fn default_statefulset(
    set: &mut StatefulSet,
    old: Option<&StatefulSet>,
    gates: AdmissionGates,
) {
    let inject =
        !gates.template_no_defaults && old.is_none_or(|old| old.spec.template != set.spec.template);
    let spec = &mut set.spec;
    if spec.pod_management_policy.is_none() {
        spec.pod_management_policy = Some(PodManagementPolicyType::OrderedReady);
    }
    let strategy = &mut spec.update_strategy;
    if strategy.type_.is_none() {
        strategy.type_ = Some(StatefulSetUpdateStrategyType::RollingUpdate);
    }
    if strategy.type_ == Some(StatefulSetUpdateStrategyType::RollingUpdate) {
        let rolling = strategy.rolling_update.get_or_insert_with(Default::default);
        rolling.partition.get_or_insert(0);
        rolling.max_unavailable.get_or_insert(IntOrString::Int(1));
        rolling.pod_update_policy.get_or_insert(PodUpdateStrategyType::ReCreate);
        rolling.min_ready_seconds.get_or_insert(0);
    }
    if gates.auto_delete_pvc {
        let policy =
            spec.persistent_volume_claim_retention_policy.get_or_insert_with(Default::default);
        policy.when_deleted.get_or_insert(PersistentVolumeClaimRetentionPolicyType::Retain);
        policy.when_scaled.get_or_insert(PersistentVolumeClaimRetentionPolicyType::Retain);
    }
    if gates.auto_resize_pvc {
        spec.volume_claim_update_strategy
            .type_
            .get_or_insert(VolumeClaimUpdateStrategyType::OnDelete);
    }
    spec.replicas.get_or_insert(1);
    spec.revision_history_limit.get_or_insert(10);
    if inject {
        let options = PodDefaultsOptions::default()
            .with_host_network_host_ports(gates.host_network_host_ports);
        default_pod_spec_with(spec.template.spec.get_or_insert_with(Default::default), options);
        for claim in &mut spec.volume_claim_templates {
            default_volume_claim_template(claim);
        }
    }
    // The status is never written through the main resource.
    set.status = None;
}

// ---- Validation ----

/// Go's `strconv.Atoi` error, or the value.
fn go_atoi(text: &str) -> Result<i64, String> {
    let digits = text.strip_prefix(['+', '-']).unwrap_or(text);
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return Err(format!("strconv.Atoi: parsing {}: invalid syntax", go::quote(text)));
    }
    text.parse::<i64>()
        .map_err(|_| format!("strconv.Atoi: parsing {}: value out of range", go::quote(text)))
}

/// `spec.reserveOrdinals`: non-negative integers and `"a-b"` ranges of digits. Upstream reports
/// every bad entry at `spec`, with the whole list printed as the value; here each error names
/// its entry (`spec.reserveOrdinals[1]`) and shows the entry alone. The rule is the planner's
/// ([`reserve_entry`]).
fn validate_reserve_ordinals(items: &[IntOrString], path: &FieldPath) -> Vec<FieldError> {
    let path = path.child("reserveOrdinals");
    items
        .iter()
        .enumerate()
        .filter_map(|(i, item)| reserve_entry(i, item).err().map(|err| (i, item, err)))
        .map(|(i, item, err)| {
            let value = match item {
                IntOrString::Int(n) => BadValue::Int(i64::from(*n)),
                IntOrString::String(text) => BadValue::Str(text.clone()),
            };
            FieldError::invalid(&path.index(i), value, err.reason)
        })
        .collect()
}

/// Upstream's maxUnavailable checks, for `scaleStrategy` and `rollingUpdate` alike: a
/// non-negative number or percentage, worth at least 1 of 1, and anything but the integer 1
/// only with the Parallel policy.
fn validate_max_unavailable(
    value: &IntOrString,
    parallel: bool,
    path: &FieldPath,
) -> Vec<FieldError> {
    let mut errs = Vec::new();
    match value {
        IntOrString::String(s) => {
            let percent = s
                .strip_suffix('%')
                .is_some_and(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()));
            if !percent {
                errs.push(FieldError::invalid(
                    path,
                    BadValue::Go(go::int_or_string(value)),
                    crate::names::regex_error(
                        "a valid percent string must be a numeric string followed by an ending '%'",
                        "[0-9]+%",
                        &["1%", "93%"],
                    ),
                ));
            }
        }
        IntOrString::Int(n) if *n < 0 => {
            errs.extend(validate_nonnegative(i64::from(*n), path));
        }
        IntOrString::Int(_) => {}
    }
    // GetValueFromIntOrPercent(value, 1, roundUp).
    let resolved = match value {
        IntOrString::Int(n) => Ok(i64::from(*n)),
        IntOrString::String(s) => {
            let stripped: String = s.chars().filter(|c| *c != '%').collect();
            go_atoi(&stripped).map(|n| (n as f64 / 100.0).ceil() as i64).map_err(|err| {
                format!("invalid value for IntOrString: invalid value {}: {err}", go::quote(s))
            })
        }
    };
    match resolved {
        Err(err) => errs.push(FieldError::invalid(
            path,
            0i64,
            format!("getValueFromIntOrPercent error: {err}"),
        )),
        Ok(v) if v < 1 => errs.push(FieldError::invalid(path, v, "should not be less than 1")),
        Ok(_) => {}
    }
    if !parallel && *value != IntOrString::Int(1) {
        errs.push(FieldError::invalid(
            path,
            BadValue::Go(go::int_or_string(value)),
            "can only work with Parallel PodManagementPolicyType",
        ));
    }
    errs
}

/// `ValidatePodTemplateSpecForStatefulSet`: the selector must match the template's labels, and
/// its labels and annotations must be valid. The pod spec itself is not validated (as in
/// Kubernetes' own StatefulSet validation).
fn validate_selector_and_template(set: &StatefulSet, path: &FieldPath) -> Vec<FieldError> {
    let template = &set.spec.template;
    let (mut errs, parsed) = crate::admission::workload_spec::validate_selector_against_template(
        set.spec.selector.as_ref(),
        template,
        "statefulset",
        path,
    );
    if parsed {
        let template_path = path.child("template");
        let meta = template.metadata.as_ref();
        errs.extend(validate_labels(
            meta.and_then(|m| m.labels.as_ref()),
            &template_path.child("labels"),
        ));
        errs.extend(validate_annotations(
            meta.and_then(|m| m.annotations.as_ref()),
            &template_path.child("annotations"),
        ));
    }
    errs
}

/// The spec rules every create and update passes (`validateStatefulSet`), with the template
/// defaulted as upstream defaults it before checking its restart policy.
pub fn validate_statefulset(set: &StatefulSet) -> FieldErrors {
    let mut errs =
        validate_object_meta(&set.metadata, true, name_is_dns_label, &FieldPath::new("metadata"));
    let spec = &set.spec;
    let path = FieldPath::new("spec");
    let parallel = spec.pod_management_policy == Some(PodManagementPolicyType::Parallel);
    match spec.pod_management_policy.as_ref().map(|p| p.as_str()) {
        None | Some("") => errs.push(FieldError::required(&path.child("podManagementPolicy"), "")),
        Some("OrderedReady" | "Parallel") => {}
        Some(other) => errs.push(FieldError::invalid(
            &path.child("podManagementPolicy"),
            other,
            "must be 'OrderedReady' or 'Parallel'",
        )),
    }
    errs.extend(validate_reserve_ordinals(&spec.reserve_ordinals, &path));
    if let Some(value) = spec.scale_strategy.as_ref().and_then(|s| s.max_unavailable.as_ref()) {
        errs.extend(validate_max_unavailable(
            value,
            parallel,
            &path.child("scaleStrategy").child("maxUnavailable"),
        ));
    }
    errs.extend(validate_update_strategy(set, parallel, &path.child("updateStrategy")));
    if let Some(policy) = &spec.persistent_volume_claim_retention_policy {
        let policy_path = path.child("persistentVolumeClaimRetentionPolicy");
        for (field, value) in
            [("whenDeleted", &policy.when_deleted), ("whenScaled", &policy.when_scaled)]
        {
            let text = value.as_ref().map_or("", |v| v.as_str());
            if !matches!(text, "Retain" | "Delete") {
                errs.push(FieldError::not_supported(
                    &policy_path.child(field),
                    text,
                    &["Retain", "Delete"],
                ));
            }
        }
    }
    errs.extend(validate_nonnegative(
        i64::from(spec.replicas.unwrap_or(1)),
        &path.child("replicas"),
    ));
    errs.extend(validate_selector_and_template(set, &path));
    let mut template = spec.template.clone();
    default_pod_spec_with(
        template.spec.get_or_insert_with(Default::default),
        PodDefaultsOptions::default(),
    );
    let pod_spec = template.spec.unwrap_or_default();
    let spec_path = path.child("template").child("spec");
    if let Some(policy) =
        pod_spec.restart_policy.as_ref().filter(|p| !p.is_empty() && *p != "Always")
    {
        errs.push(FieldError::not_supported(
            &spec_path.child("restartPolicy"),
            policy,
            &["Always"],
        ));
    }
    if pod_spec.active_deadline_seconds.is_some() {
        errs.push(FieldError::forbidden(
            &spec_path.child("activeDeadlineSeconds"),
            "activeDeadlineSeconds in StatefulSet is not Supported",
        ));
    }
    FieldErrors(errs)
}

fn validate_update_strategy(
    set: &StatefulSet,
    parallel: bool,
    path: &FieldPath,
) -> Vec<FieldError> {
    let mut errs = Vec::new();
    let strategy = &set.spec.update_strategy;
    match strategy.type_.as_ref().map(|t| t.as_str()) {
        None | Some("") => {
            errs.push(FieldError::required(path, ""));
            return errs;
        }
        Some("OnDelete") => {
            if strategy.rolling_update.is_some() {
                errs.push(FieldError::invalid(
                    &path.child("rollingUpdate"),
                    BadValue::Go("v1beta1.RollingUpdateStatefulSetStrategy{...}".into()),
                    "only allowed for updateStrategy 'RollingUpdate'",
                ));
            }
            return errs;
        }
        Some("RollingUpdate") => {}
        Some(other) => {
            errs.push(FieldError::invalid(
                path,
                BadValue::Go(format!(
                    "v1beta1.StatefulSetUpdateStrategy{{Type:{}, RollingUpdate:(*v1beta1.RollingUpdateStatefulSetStrategy)(nil)}}",
                    go::quote(other)
                )),
                "must be 'RollingUpdate' or 'OnDelete'",
            ));
            return errs;
        }
    }
    let Some(rolling) = &strategy.rolling_update else { return errs };
    let path = path.child("rollingUpdate");
    errs.extend(validate_nonnegative(
        i64::from(rolling.partition.unwrap_or(0)),
        &path.child("partition"),
    ));
    let min_ready = rolling.min_ready_seconds.unwrap_or(0);
    errs.extend(validate_nonnegative(i64::from(min_ready), &path.child("minReadySeconds")));
    if min_ready > MAX_MIN_READY_SECONDS {
        errs.push(FieldError::invalid(
            &path.child("minReadySeconds"),
            min_ready,
            format!("must be no more than {MAX_MIN_READY_SECONDS} seconds"),
        ));
    }
    match &rolling.max_unavailable {
        None => errs.push(FieldError::required(&path.child("maxUnavailable"), "")),
        Some(value) => {
            errs.extend(validate_max_unavailable(value, parallel, &path.child("maxUnavailable")))
        }
    }
    let policy_path = path.child("podUpdatePolicy");
    match rolling.pod_update_policy.as_ref().map(|p| p.as_str()) {
        None | Some("") => errs.push(FieldError::required(&policy_path, "")),
        Some("ReCreate") => {}
        Some(policy @ ("InPlaceIfPossible" | "InPlaceOnly")) => {
            let gates = set.spec.template.spec.as_ref().and_then(|s| s.readiness_gates.as_ref());
            let has_gate = gates
                .into_iter()
                .flatten()
                .any(|g| g.condition_type == crate::inplace::IN_PLACE_UPDATE_READY);
            if !has_gate {
                let value = match gates {
                    None => "[]v1.PodReadinessGate(nil)".to_owned(),
                    Some(gates) => format!(
                        "[]v1.PodReadinessGate{{{}}}",
                        gates
                            .iter()
                            .map(|g| format!(
                                "v1.PodReadinessGate{{ConditionType:{}}}",
                                go::quote(&g.condition_type)
                            ))
                            .collect::<Vec<_>>()
                            .join(", ")
                    ),
                };
                errs.push(FieldError::invalid(
                    &FieldPath::new("spec").child("template").child("spec").child("readinessGates"),
                    BadValue::Go(value),
                    format!(
                        "must contains {} when podUpdatePolicy is {policy}",
                        crate::inplace::IN_PLACE_UPDATE_READY
                    ),
                ));
            }
        }
        Some(other) => errs.push(FieldError::invalid(
            &policy_path,
            other,
            "must be 'ReCreate', InPlaceIfPossible or 'InPlaceOnly'",
        )),
    }
    if let Some(unordered) = &rolling.unordered_update {
        let unordered_path = path.child("unorderedUpdate");
        if !parallel {
            errs.push(FieldError::required(
                &unordered_path,
                "unorderedUpdate can only work with Parallel PodManagementPolicyType",
            ));
        }
        if let Some(message) = unordered
            .priority_strategy
            .as_ref()
            .and_then(crate::admission::workload_spec::priority_strategy_error)
        {
            errs.push(FieldError::required(&unordered_path.child("priorityStrategy"), message));
        }
    }
    errs
}

/// The rules of an update on top of [`validate_statefulset`] (`ValidateStatefulSetUpdate`):
/// metadata may not change what it may not, and of the spec only the selector, the service
/// name and the pod management policy are fixed.
pub fn validate_statefulset_update(new: &StatefulSet, old: &StatefulSet) -> FieldErrors {
    let mut errs =
        validate_object_meta_update(&new.metadata, &old.metadata, &FieldPath::new("metadata"));
    let fixed_changed =
        !selectors_semantically_equal(new.spec.selector.as_ref(), old.spec.selector.as_ref())
            || new.spec.service_name != old.spec.service_name
            || new.spec.pod_management_policy.as_ref().map(|p| p.as_str()).unwrap_or("")
                != old.spec.pod_management_policy.as_ref().map(|p| p.as_str()).unwrap_or("");
    if fixed_changed {
        errs.push(FieldError::forbidden(&FieldPath::new("spec"), SPEC_FORBIDDEN_MSG));
    }
    let mut all = validate_statefulset(new).0;
    all.extend(errs);
    FieldErrors(all)
}

/// What the claim template check knows of a StorageClass.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct StorageClassFacts {
    /// `allowVolumeExpansion` (unset allows, as upstream reads it).
    pub allow_volume_expansion: Option<bool>,
    /// Annotated `storageclass.kubernetes.io/is-default-class: "true"`.
    pub default: bool,
    /// Its creation time, in seconds (the newest default class wins).
    pub created: i64,
}

impl StorageClassFacts {
    /// Facts of a class.
    pub fn new(allow_volume_expansion: Option<bool>, default: bool, created: i64) -> Self {
        Self { allow_volume_expansion, default, created }
    }
}

fn storage_of(
    claim: &PersistentVolumeClaim,
    section: &str,
) -> Option<crate::revision::quantity::Quantity> {
    let resources = claim.spec.as_ref().and_then(|s| s.resources.as_ref());
    let list = match section {
        "limits" => resources.and_then(|r| r.limits.as_ref()),
        _ => resources.and_then(|r| r.requests.as_ref()),
    };
    list.and_then(|l| l.get("storage"))
        .and_then(|q| crate::revision::quantity::Quantity::parse(&q.0).ok())
}

/// Equal storage sizes, a missing one counting as zero.
fn same_storage(
    a: Option<crate::revision::quantity::Quantity>,
    b: Option<crate::revision::quantity::Quantity>,
) -> bool {
    match (a, b) {
        (Some(a), Some(b)) => a.cmp_value(&b).is_eq(),
        (Some(q), None) | (None, Some(q)) => q.is_zero(),
        (None, None) => true,
    }
}

/// `ValidateVolumeClaimTemplateUpdate` (gate `StatefulSetAutoResizePVCGate`): under the old
/// object's `OnPodRollingUpdate`, templates may not be added, removed, renamed or changed but
/// for their size, and a size change needs a class that allows expansion. The first problem is
/// reported.
pub fn validate_volume_claim_template_update(
    new: &StatefulSet,
    old: &StatefulSet,
    classes: &BTreeMap<String, StorageClassFacts>,
) -> Option<FieldError> {
    if old.spec.volume_claim_update_strategy.type_
        != Some(VolumeClaimUpdateStrategyType::OnPodRollingUpdate)
    {
        return None;
    }
    let path = FieldPath::new("spec").child("volumeClaimTemplates");
    let (new_claims, old_claims) =
        (&new.spec.volume_claim_templates, &old.spec.volume_claim_templates);
    if new_claims.len() != old_claims.len() {
        return Some(FieldError::invalid(
            &path,
            BadValue::Go("[]v1.PersistentVolumeClaim{...}".into()),
            "volumeClaimTemplate can not be added or deleted when OnRollingUpdate",
        ));
    }
    for claim in new_claims {
        let name = claim.metadata.name.clone().unwrap_or_default();
        let claim_path = FieldPath::new("spec").child(&format!("volumeClaimTemplates[{name}]"));
        let Some(previous) =
            old_claims.iter().find(|c| c.metadata.name.as_deref() == Some(name.as_str()))
        else {
            return Some(FieldError::forbidden(
                &claim_path.child("name"),
                "volumeClaimTemplate name can not be modified",
            ));
        };
        let (n, o) = (claim.spec.as_ref(), previous.spec.as_ref());
        let classes_differ = matches!(
            (n.and_then(|s| s.storage_class_name.as_ref()), o.and_then(|s| s.storage_class_name.as_ref())),
            (Some(a), Some(b)) if a != b
        );
        let modes = |s: Option<&k8s_openapi::api::core::v1::PersistentVolumeClaimSpec>| {
            s.and_then(|s| s.access_modes.clone()).unwrap_or_default()
        };
        if classes_differ || modes(n) != modes(o) {
            return Some(FieldError::invalid(
                &claim_path,
                BadValue::Go("v1.PersistentVolumeClaim{...}".into()),
                "volumeClaimTemplate can not be modified when OnRollingUpdate",
            ));
        }
        let same = |section| {
            same_storage(storage_of(&claim.object, section), storage_of(&previous.object, section))
        };
        if same("requests") && same("limits") {
            continue;
        }
        let class_path = claim_path.child("spec").child("storageClassName");
        let class = match n.and_then(|s| s.storage_class_name.as_deref()) {
            Some(class) => match classes.get(class) {
                Some(facts) => Some((class.to_owned(), facts)),
                None => return Some(FieldError::invalid(&class_path, class, "can not get sc")),
            },
            None => classes
                .iter()
                .filter(|(_, f)| f.default)
                .max_by_key(|(_, f)| f.created)
                .map(|(name, facts)| (name.clone(), facts)),
        };
        if let Some((class, facts)) = class
            && facts.allow_volume_expansion == Some(false)
        {
            return Some(FieldError::forbidden(
                &claim_path.child("spec").child("resources").child("requests").child("storage"),
                format!("storage class {class} does not support volume expansion"),
            ));
        }
    }
    None
}

/// The `InPlaceOnly` check: between the old template's pod spec and the new one (defaulted as
/// upstream defaults it while validating), only container images may change.
pub fn validate_in_place_only(new: &StatefulSet, old: &StatefulSet) -> Result<(), String> {
    let policy =
        new.spec.update_strategy.rolling_update.as_ref().and_then(|r| r.pod_update_policy.as_ref());
    if policy != Some(&PodUpdateStrategyType::InPlaceOnly) {
        return Ok(());
    }
    let mut defaulted: PodTemplateSpec = new.spec.template.clone();
    default_pod_spec_with(
        defaulted.spec.get_or_insert_with(Default::default),
        PodDefaultsOptions::default(),
    );
    let encode = |t: &PodTemplateSpec| {
        serde_json::to_value(t.spec.clone().unwrap_or_default()).unwrap_or(Value::Null)
    };
    let patch = json_patch::diff(&encode(&old.spec.template), &encode(&defaulted));
    for op in patch.0 {
        let (name, path) = match &op {
            json_patch::PatchOperation::Replace(r) => ("replace", r.path.to_string()),
            json_patch::PatchOperation::Add(a) => ("add", a.path.to_string()),
            json_patch::PatchOperation::Remove(r) => ("remove", r.path.to_string()),
            json_patch::PatchOperation::Move(m) => ("move", m.path.to_string()),
            json_patch::PatchOperation::Copy(c) => ("copy", c.path.to_string()),
            json_patch::PatchOperation::Test(t) => ("test", t.path.to_string()),
        };
        let image = name == "replace"
            && path
                .strip_prefix("/containers/")
                .and_then(|rest| rest.strip_suffix("/image"))
                .is_some_and(|i| !i.is_empty() && i.bytes().all(|b| b.is_ascii_digit()));
        if !image {
            return Err(format!(
                "invalid template modified with InPlaceOnly strategy: {name} {path}, currently only image update is allowed for InPlaceOnly"
            ));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn set(spec: Value) -> StatefulSet {
        let mut set: StatefulSet = serde_json::from_value(json!({
            "apiVersion": "apps.kruise.io/v1beta1",
            "kind": "StatefulSet",
            "metadata": {"name": "web", "namespace": "default"},
            "spec": spec,
        }))
        .expect("set");
        default_statefulset(&mut set, None, AdmissionGates::default());
        set
    }

    fn base() -> Value {
        json!({
            "selector": {"matchLabels": {"app": "web"}},
            "template": {
                "metadata": {"labels": {"app": "web"}},
                "spec": {"containers": [{"name": "main", "image": "nginx:1"}]}
            }
        })
    }

    fn with(mut spec: Value, path: &str, value: Value) -> Value {
        let mut at = &mut spec;
        let parts: Vec<&str> = path.split('.').collect();
        for part in &parts[..parts.len() - 1] {
            at = at.as_object_mut().expect("object").entry(*part).or_insert(json!({}));
        }
        at[parts[parts.len() - 1]] = value;
        spec
    }

    #[test]
    fn defaults_fill_what_the_controller_reads() {
        let s = set(base());
        assert_eq!(s.spec.replicas, Some(1));
        assert_eq!(s.spec.revision_history_limit, Some(10));
        assert_eq!(s.spec.pod_management_policy, Some(PodManagementPolicyType::OrderedReady));
        let rolling = s.spec.update_strategy.rolling_update.expect("rolling update");
        assert_eq!(rolling.max_unavailable, Some(IntOrString::Int(1)));
        assert_eq!(rolling.partition, Some(0));
        assert_eq!(rolling.pod_update_policy, Some(PodUpdateStrategyType::ReCreate));
        let policy = s.spec.persistent_volume_claim_retention_policy.expect("policy");
        assert_eq!(policy.when_scaled, Some(PersistentVolumeClaimRetentionPolicyType::Retain));
        let container = &s.spec.template.spec.expect("spec").containers[0];
        assert_eq!(container.image_pull_policy.as_deref(), Some("Always"));
        assert!(validate_statefulset(&set(base())).is_empty());
    }

    #[test]
    fn reserve_ordinals_errors_name_the_entry() {
        let s = set(with(base(), "reserveOrdinals", json!([1, "5-2", "a-b", -1, "3", "2-4"])));
        let got = validate_statefulset(&s).messages();
        let range = r#"must be a non-negative number or a range such as "3-5""#;
        assert_eq!(
            got,
            vec![
                r#"spec.reserveOrdinals[1]: Invalid value: "5-2": the range's start is greater than its end"#.to_owned(),
                format!(r#"spec.reserveOrdinals[2]: Invalid value: "a-b": {range}"#),
                "spec.reserveOrdinals[3]: Invalid value: -1: must not be negative".to_owned(),
                format!(r#"spec.reserveOrdinals[4]: Invalid value: "3": {range}"#),
            ]
        );
    }

    #[test]
    fn max_unavailable_needs_parallel_unless_it_is_one() {
        let s = set(with(base(), "updateStrategy.rollingUpdate.maxUnavailable", json!("20%")));
        assert_eq!(
            validate_statefulset(&s).messages(),
            vec![
                r#"spec.updateStrategy.rollingUpdate.maxUnavailable: Invalid value: intstr.IntOrString{Type:1, IntVal:0, StrVal:"20%"}: can only work with Parallel PodManagementPolicyType"#
            ]
        );
        let parallel = with(base(), "podManagementPolicy", json!("Parallel"));
        let s = set(with(
            parallel.clone(),
            "updateStrategy.rollingUpdate.maxUnavailable",
            json!("20%"),
        ));
        assert!(validate_statefulset(&s).is_empty());
        let s = set(with(parallel, "updateStrategy.rollingUpdate.maxUnavailable", json!(0)));
        assert_eq!(
            validate_statefulset(&s).messages(),
            vec![
                "spec.updateStrategy.rollingUpdate.maxUnavailable: Invalid value: 0: should not be less than 1"
            ]
        );
    }

    #[test]
    fn in_place_policies_need_the_readiness_gate() {
        let s = set(with(
            base(),
            "updateStrategy.rollingUpdate.podUpdatePolicy",
            json!("InPlaceIfPossible"),
        ));
        assert_eq!(
            validate_statefulset(&s).messages(),
            vec![
                "spec.template.spec.readinessGates: Invalid value: []v1.PodReadinessGate(nil): must contains InPlaceUpdateReady when podUpdatePolicy is InPlaceIfPossible"
            ]
        );
    }

    #[test]
    fn only_selector_service_and_policy_are_fixed() {
        let old = set(base());
        let mut new = old.clone();
        new.metadata.resource_version = Some("2".into());
        let mut old = old;
        old.metadata.resource_version = Some("1".into());
        new.spec.replicas = Some(5);
        new.spec.reserve_ordinals = vec![IntOrString::Int(1)];
        assert!(validate_statefulset_update(&new, &old).is_empty());
        new.spec.service_name = "other".into();
        assert_eq!(
            validate_statefulset_update(&new, &old).messages(),
            vec![format!("spec: Forbidden: {SPEC_FORBIDDEN_MSG}")]
        );
    }

    #[test]
    fn in_place_only_allows_image_changes_only() {
        let spec = with(
            with(base(), "updateStrategy.rollingUpdate.podUpdatePolicy", json!("InPlaceOnly")),
            "template.spec.readinessGates",
            json!([{"conditionType": "InPlaceUpdateReady"}]),
        );
        let old = set(spec);
        let mut new = old.clone();
        new.spec.template.spec.as_mut().expect("spec").containers[0].image = Some("nginx:2".into());
        assert_eq!(validate_in_place_only(&new, &old), Ok(()));
        new.spec.template.spec.as_mut().expect("spec").containers[0].env =
            Some(vec![serde_json::from_value(json!({"name": "A", "value": "b"})).expect("env")]);
        assert_eq!(
            validate_in_place_only(&new, &old),
            Err("invalid template modified with InPlaceOnly strategy: add /containers/0/env, currently only image update is allowed for InPlaceOnly".into())
        );
    }

    #[test]
    fn claim_templates_under_rolling_resize() {
        let mut spec =
            with(base(), "volumeClaimUpdateStrategy", json!({"type": "OnPodRollingUpdate"}));
        spec = with(
            spec,
            "volumeClaimTemplates",
            json!([{
                "metadata": {"name": "data"},
                "spec": {"storageClassName": "fixed", "accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}}
            }]),
        );
        let old = set(spec);
        let mut new = old.clone();
        let classes: BTreeMap<String, StorageClassFacts> =
            [("fixed".to_owned(), StorageClassFacts::new(Some(false), false, 0))].into();
        assert_eq!(validate_volume_claim_template_update(&new, &old, &classes), None);
        new.spec.volume_claim_templates[0]
            .spec
            .as_mut()
            .expect("spec")
            .resources
            .as_mut()
            .expect("resources")
            .requests = Some(
            [(
                "storage".to_owned(),
                k8s_openapi::apimachinery::pkg::api::resource::Quantity("2Gi".into()),
            )]
            .into(),
        );
        assert_eq!(
            validate_volume_claim_template_update(&new, &old, &classes).map(|e| e.to_string()),
            Some("spec.volumeClaimTemplates[data].spec.resources.requests.storage: Forbidden: storage class fixed does not support volume expansion".into())
        );
        new.spec.volume_claim_templates.clear();
        assert!(
            validate_volume_claim_template_update(&new, &old, &classes)
                .is_some_and(|e| e.to_string().contains("can not be added or deleted"))
        );
    }
}
