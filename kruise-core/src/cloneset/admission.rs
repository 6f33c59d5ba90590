//! CloneSet defaulting and validation, for both API versions, as upstream OpenKruise's
//! `mcloneset.kb.io` and `vcloneset.kb.io` webhooks do them.
//!
//! Defaulting ([`default_cloneset_v1alpha1`], [`default_cloneset_v1beta1`] and their `_update`
//! and `_with` forms) follows `SetDefaultsCloneSet` / `SetDefaultsCloneSetV1beta1`: replicas 1,
//! revision history 10, the update strategy's type, partition 0, maxUnavailable 20%, maxSurge
//! 0, and, on create or when the template changed, the pod template defaults of
//! [`crate::admission::pod_defaults`] and the volume claim template defaults.
//!
//! Validation returns the errors upstream returns, with its paths and messages, in its order.
//! Each version is validated by its own rules, as upstream does (the two differ: v1alpha1 checks
//! `progressDeadlineSeconds`, the pods named in `podsToDelete` and, for `InPlaceOnly`, that an
//! update changes nothing but images; v1beta1 checks the pod update policy and the image
//! pre-download settings). Validation expects a defaulted object, as the webhook sees it after
//! the mutating webhook; an unset `replicas` counts as the default 1 (upstream would fail).
//!
//! Two upstream quirks are kept on purpose, so that the same objects are accepted and refused:
//! v1alpha1 refuses `updateStrategy.type: OnDelete`, and v1beta1's check that `maxUnavailable`
//! and `maxSurge` are not both below 1 ignores `maxSurge` (upstream shadows the variable), so
//! `maxUnavailable: 0` is refused whatever `maxSurge` is.

use std::collections::{BTreeMap, BTreeSet};

use k8s_openapi::api::core::v1::{PersistentVolumeClaim, Pod, PodTemplateSpec};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector;
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;
use kruise_api::Embedded;
use kruise_api::apps::common::InPlaceUpdateStrategy;
use kruise_api::apps::{v1alpha1 as alpha, v1beta1 as beta};
use serde_json::Value;

use crate::admission::meta::{
    selectors_semantically_equal, validate_nonnegative, validate_object_meta,
    validate_object_meta_update,
};
use crate::admission::pod_defaults::{
    PodDefaultsOptions, default_pod_spec_with, default_volume_claim_template,
};
/// Shared with the other workload kinds; this path is kept for callers.
pub use crate::admission::workload_spec::validate_selector_and_template;
use crate::admission::workload_spec::{priority_strategy_error, scatter_strategy_error};
use crate::field::{BadValue, FieldError, FieldErrors, FieldPath, go};
use crate::intstr::DEFAULT_CLONESET_MAX_UNAVAILABLE;
use crate::names::name_is_dns_subdomain;
use crate::revision::gojson::normalize_struct;
use crate::revision::goschema::POD_SPEC;

/// The name of upstream's validating webhook for CloneSets, as the API server quotes it.
pub const VALIDATING_WEBHOOK_NAME: &str = "vcloneset.kb.io";
/// The name of upstream's mutating webhook for CloneSets.
pub const MUTATING_WEBHOOK_NAME: &str = "mcloneset.kb.io";

const SPEC_FORBIDDEN_MSG: &str = "updates to cloneset spec for fields other than 'replicas', 'template', 'lifecycle', 'scaleStrategy', 'updateStrategy', 'minReadySeconds', 'progressDeadlineSeconds', 'volumeClaimTemplates' and 'revisionHistoryLimit' are forbidden";

// ---- Defaulting ----

/// How to default a CloneSet.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct DefaultingOptions {
    /// Apply the pod template and volume claim template defaults. Upstream does on create
    /// and on updates that change the template, unless its `TemplateNoDefaults` gate is on.
    pub inject_template_defaults: bool,
    /// Pod template defaulting options.
    pub pod: PodDefaultsOptions,
}

impl Default for DefaultingOptions {
    fn default() -> Self {
        Self { inject_template_defaults: true, pod: PodDefaultsOptions::default() }
    }
}

impl DefaultingOptions {
    /// The options for an update: template defaults only when the template changed.
    pub fn for_update(template_changed: bool) -> Self {
        Self { inject_template_defaults: template_changed, ..Self::default() }
    }

    /// These options with template defaulting on or off.
    pub fn with_template_defaults(mut self, inject: bool) -> Self {
        self.inject_template_defaults = inject;
        self
    }

    /// These options with the given pod defaulting options.
    pub fn with_pod_options(mut self, pod: PodDefaultsOptions) -> Self {
        self.pod = pod;
        self
    }
}

fn inject_template(
    template: &mut PodTemplateSpec,
    claims: &mut [Embedded<PersistentVolumeClaim>],
    options: DefaultingOptions,
) {
    if !options.inject_template_defaults {
        return;
    }
    default_pod_spec_with(template.spec.get_or_insert_with(Default::default), options.pod);
    for claim in claims {
        default_volume_claim_template(claim);
    }
}

fn int_or_zero(field: &mut Option<IntOrString>) {
    if field.is_none() {
        *field = Some(IntOrString::Int(0));
    }
}

/// Defaults a v1alpha1 CloneSet being created.
pub fn default_cloneset_v1alpha1(cs: &mut alpha::CloneSet) {
    default_cloneset_v1alpha1_with(cs, DefaultingOptions::default());
}

/// Defaults a v1alpha1 CloneSet being updated from `old` (template defaults only when the
/// template changed).
pub fn default_cloneset_v1alpha1_update(cs: &mut alpha::CloneSet, old: &alpha::CloneSet) {
    let changed = cs.spec.template != old.spec.template;
    default_cloneset_v1alpha1_with(cs, DefaultingOptions::for_update(changed));
}

/// `SetDefaultsCloneSet`.
pub fn default_cloneset_v1alpha1_with(cs: &mut alpha::CloneSet, options: DefaultingOptions) {
    let spec = &mut cs.spec;
    spec.replicas.get_or_insert(1);
    spec.revision_history_limit.get_or_insert(10);
    inject_template(&mut spec.template, &mut spec.volume_claim_templates, options);
    let strategy = &mut spec.update_strategy;
    match strategy.type_.as_ref().map(|t| t.as_str()).unwrap_or("") {
        "" => strategy.type_ = Some(alpha::CloneSetUpdateStrategyType::ReCreate),
        "InPlaceIfPossible" | "InPlaceOnly" => {
            strategy.in_place_update_strategy.get_or_insert_with(InPlaceUpdateStrategy::default);
        }
        _ => {}
    }
    int_or_zero(&mut strategy.partition);
    if strategy.max_unavailable.is_none() {
        strategy.max_unavailable =
            Some(IntOrString::String(DEFAULT_CLONESET_MAX_UNAVAILABLE.to_owned()));
    }
    int_or_zero(&mut strategy.max_surge);
}

/// Defaults a v1beta1 CloneSet being created.
pub fn default_cloneset_v1beta1(cs: &mut beta::CloneSet) {
    default_cloneset_v1beta1_with(cs, DefaultingOptions::default());
}

/// Defaults a v1beta1 CloneSet being updated from `old` (template defaults only when the
/// template changed).
pub fn default_cloneset_v1beta1_update(cs: &mut beta::CloneSet, old: &beta::CloneSet) {
    let changed = cs.spec.template != old.spec.template;
    default_cloneset_v1beta1_with(cs, DefaultingOptions::for_update(changed));
}

/// `SetDefaultsCloneSetV1beta1`.
pub fn default_cloneset_v1beta1_with(cs: &mut beta::CloneSet, options: DefaultingOptions) {
    let spec = &mut cs.spec;
    spec.replicas.get_or_insert(1);
    spec.revision_history_limit.get_or_insert(10);
    inject_template(&mut spec.template, &mut spec.volume_claim_templates, options);
    let strategy = &mut spec.update_strategy;
    if strategy.type_.as_ref().map(|t| t.as_str()).unwrap_or("").is_empty() {
        strategy.type_ = Some(beta::CloneSetUpdateStrategyType::RollingUpdate);
    }
    if strategy.type_ != Some(beta::CloneSetUpdateStrategyType::RollingUpdate) {
        return;
    }
    let rolling = strategy.rolling_update.get_or_insert_with(Default::default);
    if rolling.pod_update_policy.as_ref().map(|p| p.as_str()).unwrap_or("").is_empty() {
        rolling.pod_update_policy = Some(beta::CloneSetPodUpdatePolicy::ReCreate);
    }
    if matches!(
        rolling.pod_update_policy,
        Some(beta::CloneSetPodUpdatePolicy::InPlaceIfPossible)
            | Some(beta::CloneSetPodUpdatePolicy::InPlaceOnly)
    ) {
        rolling.in_place_update_strategy.get_or_insert_with(InPlaceUpdateStrategy::default);
    }
    int_or_zero(&mut rolling.partition);
    if rolling.max_unavailable.is_none() {
        rolling.max_unavailable =
            Some(IntOrString::String(DEFAULT_CLONESET_MAX_UNAVAILABLE.to_owned()));
    }
    int_or_zero(&mut rolling.max_surge);
}

// ---- Validation: shared parts ----
// The checks every workload kind shares are in the base layer
// ([`crate::admission::workload_spec`]).

/// `util.CheckDuplicate`: every repeated item, once per repetition.
fn duplicates(items: &[String]) -> Vec<String> {
    let mut seen = BTreeSet::new();
    items.iter().filter(|i| !seen.insert(i.as_str())).cloned().collect()
}

/// Duplicated `podsToDelete`, as both versions check it; `true` when there were some.
fn check_pods_to_delete_duplicates(
    pods: &[String],
    path: &FieldPath,
    errs: &mut Vec<FieldError>,
) -> bool {
    let dups = duplicates(pods);
    if dups.is_empty() {
        return false;
    }
    errs.push(FieldError::invalid(
        &path.child("podsToDelete"),
        BadValue::Go(go::string_slice(Some(pods))),
        format!("duplicated items {}", go::string_list_plain(&dups)),
    ));
    true
}

/// The result of Go's `int(math.Ceil(x))` on amd64: out-of-range and NaN give the minimum.
fn go_float_to_int(x: f64) -> i64 {
    // i64::MIN as f64 is exact; i64::MAX as f64 rounds up to 2^63, which is out of range.
    let (lo, hi) = (i64::MIN as f64, -(i64::MIN as f64));
    if x.is_nan() || !(lo..hi).contains(&x) { i64::MIN } else { x as i64 }
}

/// `strconv.ParseFloat(s, 64)`'s result or error text.
fn go_parse_float(s: &str) -> Result<f64, String> {
    let syntax = || format!("strconv.ParseFloat: parsing {}: invalid syntax", go::quote(s));
    let unsigned = s.strip_prefix(['+', '-']).unwrap_or(s).to_ascii_lowercase();
    let special = matches!(unsigned.as_str(), "inf" | "infinity" | "nan");
    if unsigned.is_empty()
        || (!special && unsigned.chars().any(|c| c.is_ascii_alphabetic() && c != 'e'))
    {
        return Err(syntax());
    }
    let value: f64 = s.parse().map_err(|_| syntax())?;
    if value.is_infinite() && !special {
        return Err(format!("strconv.ParseFloat: parsing {}: value out of range", go::quote(s)));
    }
    Ok(value)
}

/// OpenKruise's `util.GetScaledValueFromIntOrPercent`, with its error texts.
fn kruise_scaled_value(
    value: Option<&IntOrString>,
    total: i32,
    round_up: bool,
) -> Result<i64, String> {
    match value {
        None => Err("nil value for IntOrString".to_owned()),
        Some(IntOrString::Int(n)) => Ok(i64::from(*n)),
        Some(IntOrString::String(s)) => {
            let Some(number) = s.strip_suffix('%') else {
                return Err("invalid type: string is not a percentage".to_owned());
            };
            let v = go_parse_float(number)?;
            let scaled = v * f64::from(total) / 100.0;
            Ok(go_float_to_int(if round_up { scaled.ceil() } else { scaled.floor() }))
        }
    }
}

/// The partition, maxUnavailable and maxSurge values and errors both versions compute.
struct Budgets {
    /// Errors about the partition (reported before the priority and scatter strategies).
    partition_errs: Vec<FieldError>,
    /// Errors about maxUnavailable and maxSurge, in that order.
    other_errs: Vec<FieldError>,
    /// maxUnavailable scaled to replicas (0 when unset or malformed).
    unavailable: i64,
    /// maxSurge scaled to replicas (0 when unset or malformed).
    surge: i64,
}

fn check_budgets(
    partition: Option<&IntOrString>,
    max_unavailable: Option<&IntOrString>,
    max_surge: Option<&IntOrString>,
    replicas: i32,
    path: &FieldPath,
) -> Budgets {
    let mut partition_errs = Vec::new();
    let partition_value = match kruise_scaled_value(partition, replicas, true) {
        Ok(v) => v,
        Err(err) => {
            partition_errs.push(FieldError::invalid(
                &path.child("partition"),
                go::int_or_string_text(partition),
                format!("failed GetScaledValueFromIntOrPercent for partition: {err}"),
            ));
            0
        }
    };
    partition_errs.extend(validate_nonnegative(partition_value, &path.child("partition")));
    let mut other_errs = Vec::new();
    let mut scaled = |value: Option<&IntOrString>, field: &str| -> i64 {
        let Some(value) = value else {
            return 0;
        };
        kruise_scaled_value(Some(value), replicas, true).unwrap_or_else(|err| {
            other_errs.push(FieldError::invalid(
                &path.child(field),
                go::int_or_string_text(Some(value)),
                format!("failed GetScaledValueFromIntOrPercent for {field}: {err}"),
            ));
            0
        })
    };
    let unavailable = scaled(max_unavailable, "maxUnavailable");
    let surge = scaled(max_surge, "maxSurge");
    Budgets { partition_errs, other_errs, unavailable, surge }
}

fn both_below_one(
    replicas: i32,
    max_unavailable: Option<&IntOrString>,
    unavailable: i64,
    surge: i64,
    path: &FieldPath,
) -> Option<FieldError> {
    (replicas > 0 && unavailable < 1 && surge < 1).then(|| {
        FieldError::invalid(
            &path.child("maxUnavailable"),
            max_unavailable.map_or(BadValue::Null, |v| BadValue::Go(go::int_or_string(v))),
            "maxUnavailable and maxSurge should not both be less than 1",
        )
    })
}

fn validate_spec_forbidden_changes(
    new_selector: Option<&LabelSelector>,
    old_selector: Option<&LabelSelector>,
) -> Option<FieldError> {
    // Every other spec field may change, so only the selector is compared.
    (!selectors_semantically_equal(new_selector, old_selector))
        .then(|| FieldError::forbidden(&FieldPath::new("spec"), SPEC_FORBIDDEN_MSG))
}

// ---- Validation: v1beta1 ----

/// Validates a v1beta1 CloneSet being created (`ValidateCloneSetV1beta1(cs, nil)`).
pub fn validate_cloneset_create(cs: &beta::CloneSet) -> FieldErrors {
    FieldErrors(validate_v1beta1(cs))
}

/// Validates a v1beta1 CloneSet being updated from `old` (`ValidateCloneSetUpdateV1beta1`).
pub fn validate_cloneset_update(new: &beta::CloneSet, old: &beta::CloneSet) -> FieldErrors {
    let meta = FieldPath::new("metadata");
    let mut errs = validate_object_meta_update(&new.metadata, &old.metadata, &meta);
    errs.extend(validate_spec_forbidden_changes(
        new.spec.selector.as_ref(),
        old.spec.selector.as_ref(),
    ));
    errs.extend(validate_v1beta1(new));
    FieldErrors(errs)
}

fn validate_v1beta1(cs: &beta::CloneSet) -> Vec<FieldError> {
    let mut errs = validate_object_meta(
        &cs.metadata,
        true,
        name_is_dns_subdomain,
        &FieldPath::new("metadata"),
    );
    let spec = &cs.spec;
    let path = FieldPath::new("spec");
    let replicas = spec.replicas.unwrap_or(1);
    errs.extend(validate_nonnegative(i64::from(replicas), &path.child("replicas")));
    errs.extend(validate_selector_and_template(
        spec.selector.as_ref(),
        &spec.template,
        &spec.volume_claim_templates,
        "cloneset",
        &path,
    ));
    let scale_path = path.child("scaleStrategy");
    check_pods_to_delete_duplicates(&spec.scale_strategy.pods_to_delete, &scale_path, &mut errs);
    errs.extend(validate_update_strategy_v1beta1(
        &spec.update_strategy,
        replicas,
        &path.child("updateStrategy"),
    ));
    errs
}

fn validate_update_strategy_v1beta1(
    strategy: &beta::CloneSetUpdateStrategy,
    replicas: i32,
    path: &FieldPath,
) -> Vec<FieldError> {
    let mut errs = Vec::new();
    let type_ = strategy.type_.as_ref().map_or("", |t| t.as_str());
    if !matches!(type_, "RollingUpdate" | "OnDelete" | "") {
        errs.push(FieldError::invalid(
            &path.child("type"),
            type_,
            "must be 'RollingUpdate' or 'OnDelete'",
        ));
    }
    let Some(rolling) = &strategy.rolling_update else {
        return errs;
    };
    let path = path.child("rollingUpdate");
    let policy = rolling.pod_update_policy.as_ref().map_or("", |p| p.as_str());
    if !matches!(policy, "ReCreate" | "InPlaceIfPossible" | "InPlaceOnly" | "") {
        errs.push(FieldError::invalid(
            &path.child("podUpdatePolicy"),
            policy,
            "must be 'ReCreate', 'InPlaceIfPossible' or 'InPlaceOnly'",
        ));
    }
    // Upstream validates partition first, then the priority and scatter strategies, then the
    // budgets; errors are collected in that order.
    let budgets = check_budgets(
        rolling.partition.as_ref(),
        rolling.max_unavailable.as_ref(),
        rolling.max_surge.as_ref(),
        replicas,
        &path,
    );
    errs.extend(budgets.partition_errs);
    if let Some(priority) = &rolling.priority_strategy
        && let Some(err) = priority_strategy_error(priority)
    {
        errs.push(FieldError::required(&path.child("priorityStrategy"), err));
    }
    if let Some(err) = scatter_strategy_error(&rolling.scatter_strategy) {
        errs.push(FieldError::required(&path.child("scatterStrategy"), err));
    }
    errs.extend(budgets.other_errs);
    if policy == "InPlaceOnly" && budgets.surge > 0 {
        errs.push(FieldError::invalid(
            &path.child("maxSurge"),
            go::int_or_string_text(rolling.max_surge.as_ref()),
            "can not use maxSurge with podUpdatePolicy InPlaceOnly",
        ));
    }
    // Upstream's check reads a maxSurge variable that is never assigned (it is shadowed), so
    // it refuses surge-only rollouts (maxUnavailable 0, maxSurge 1). We count maxSurge, so
    // those are accepted; both below one is still refused.
    errs.extend(both_below_one(
        replicas,
        rolling.max_unavailable.as_ref(),
        budgets.unavailable,
        budgets.surge,
        &path,
    ));
    if let Some(in_place) = &rolling.in_place_update_strategy {
        errs.extend(validate_in_place_update_strategy(
            in_place,
            &path.child("inPlaceUpdateStrategy"),
        ));
    }
    errs
}

fn validate_in_place_update_strategy(
    s: &InPlaceUpdateStrategy,
    path: &FieldPath,
) -> Vec<FieldError> {
    let mut errs = Vec::new();
    let p = path.child("imagePreDownloadParallelism");
    match &s.image_pre_download_parallelism {
        None => {}
        Some(IntOrString::Int(n)) if *n < 0 => {
            errs.push(FieldError::invalid(
                &p,
                *n,
                "imagePreDownloadParallelism must be non-negative",
            ));
        }
        Some(IntOrString::Int(_)) => {}
        Some(IntOrString::String(text)) => {
            if text.ends_with('%') {
                errs.push(FieldError::invalid(
                    &p,
                    text,
                    "imagePreDownloadParallelism does not support percentage value",
                ));
            } else {
                match go_parse_int32(text) {
                    Err(err) => errs.push(FieldError::invalid(
                        &p,
                        text,
                        format!("imagePreDownloadParallelism must be a valid integer: {err}"),
                    )),
                    Ok(v) if v < 0 => errs.push(FieldError::invalid(
                        &p,
                        text,
                        "imagePreDownloadParallelism must be non-negative",
                    )),
                    Ok(_) => {}
                }
            }
        }
    }
    if let Some(timeout) = s.image_pre_download_timeout_seconds {
        errs.extend(validate_nonnegative(
            i64::from(timeout),
            &path.child("imagePreDownloadTimeoutSeconds"),
        ));
    }
    if let Some(min_ready) = s.image_pre_download_min_updated_ready_pods {
        errs.extend(validate_nonnegative(
            i64::from(min_ready),
            &path.child("imagePreDownloadMinUpdatedReadyPods"),
        ));
    }
    errs
}

use crate::intstr::go_parse_int32;

// ---- Validation: v1alpha1 ----

/// The pods named in `podsToDelete` of a v1alpha1 CloneSet, found by the caller in the
/// CloneSet's namespace, by name. A name with no entry was not found.
pub type PodsByName = BTreeMap<String, Pod>;

/// The pod names a v1alpha1 validation looks up: those in `podsToDelete` that `old` (on
/// update) did not already name, sorted and without repeats.
pub fn pods_to_look_up(cs: &alpha::CloneSet, old: Option<&alpha::CloneSet>) -> Vec<String> {
    let old_names: BTreeSet<&String> =
        old.map(|o| o.spec.scale_strategy.pods_to_delete.iter().collect()).unwrap_or_default();
    let names: BTreeSet<&String> =
        cs.spec.scale_strategy.pods_to_delete.iter().filter(|n| !old_names.contains(n)).collect();
    names.into_iter().cloned().collect()
}

/// Validates a v1alpha1 CloneSet being created; `pods` holds the pods of
/// [`pods_to_look_up`] that exist.
pub fn validate_cloneset_v1alpha1_create(cs: &alpha::CloneSet, pods: &PodsByName) -> FieldErrors {
    FieldErrors(validate_v1alpha1(cs, None, pods))
}

/// Validates a v1alpha1 CloneSet being updated from `old`; `pods` holds the pods of
/// [`pods_to_look_up`] that exist.
pub fn validate_cloneset_v1alpha1_update(
    new: &alpha::CloneSet,
    old: &alpha::CloneSet,
    pods: &PodsByName,
) -> FieldErrors {
    let meta = FieldPath::new("metadata");
    let mut errs = validate_object_meta_update(&new.metadata, &old.metadata, &meta);
    errs.extend(validate_spec_forbidden_changes(
        new.spec.selector.as_ref(),
        old.spec.selector.as_ref(),
    ));
    if new.spec.update_strategy.type_ == Some(alpha::CloneSetUpdateStrategyType::InPlaceOnly)
        && let Some(op) = first_non_image_change(&old.spec.template, &new.spec.template)
    {
        errs.push(FieldError::forbidden(
            &FieldPath::new("spec"),
            format!("only allowed to update images in spec for InPlaceOnly, but found {op}"),
        ));
    }
    errs.extend(validate_v1alpha1(new, Some(old), pods));
    FieldErrors(errs)
}

fn validate_v1alpha1(
    cs: &alpha::CloneSet,
    old: Option<&alpha::CloneSet>,
    pods: &PodsByName,
) -> Vec<FieldError> {
    let mut errs = validate_object_meta(
        &cs.metadata,
        true,
        name_is_dns_subdomain,
        &FieldPath::new("metadata"),
    );
    let spec = &cs.spec;
    let path = FieldPath::new("spec");
    let replicas = spec.replicas.unwrap_or(1);
    errs.extend(validate_nonnegative(i64::from(replicas), &path.child("replicas")));
    errs.extend(validate_selector_and_template(
        spec.selector.as_ref(),
        &spec.template,
        &spec.volume_claim_templates,
        "cloneset",
        &path,
    ));
    let scale_path = path.child("scaleStrategy");
    if !check_pods_to_delete_duplicates(&spec.scale_strategy.pods_to_delete, &scale_path, &mut errs)
    {
        errs.extend(validate_pods_to_delete(cs, old, pods, &scale_path.child("podsToDelete")));
    }
    errs.extend(validate_update_strategy_v1alpha1(
        &spec.update_strategy,
        replicas,
        &path.child("updateStrategy"),
    ));
    if let Some(deadline) = spec.progress_deadline_seconds {
        let p = path.child("progressDeadlineSeconds");
        errs.extend(validate_nonnegative(i64::from(deadline), &p));
        if deadline != i32::MAX && deadline <= spec.min_ready_seconds {
            errs.push(FieldError::invalid(&p, deadline, "must be greater than minReadySeconds"));
        }
    }
    errs
}

fn validate_pods_to_delete(
    cs: &alpha::CloneSet,
    old: Option<&alpha::CloneSet>,
    pods: &PodsByName,
    path: &FieldPath,
) -> Vec<FieldError> {
    let uid = cs.metadata.uid.as_deref().unwrap_or("");
    let mut errs = Vec::new();
    for name in pods_to_look_up(cs, old) {
        let detail = match pods.get(&name) {
            None => format!("find pod {name} failed: pods {} not found", go::quote(&name)),
            Some(pod) if pod.metadata.deletion_timestamp.is_some() => {
                format!("find pod {name} already terminating")
            }
            Some(pod) => {
                let owned = pod
                    .metadata
                    .owner_references
                    .iter()
                    .flatten()
                    .find(|r| r.controller == Some(true))
                    .is_some_and(|r| r.uid == uid);
                if owned {
                    continue;
                }
                format!("find pod {name} owner is not this CloneSet")
            }
        };
        errs.push(FieldError::invalid(path, &name, detail));
    }
    errs
}

fn validate_update_strategy_v1alpha1(
    strategy: &alpha::CloneSetUpdateStrategy,
    replicas: i32,
    path: &FieldPath,
) -> Vec<FieldError> {
    let mut errs = Vec::new();
    let type_ = strategy.type_.as_ref().map_or("", |t| t.as_str());
    if !matches!(type_, "ReCreate" | "InPlaceIfPossible" | "InPlaceOnly") {
        // Upstream's message quotes two of the three values.
        errs.push(FieldError::invalid(
            &path.child("type"),
            type_,
            "must be 'ReCreate', InPlaceIfPossible or 'InPlaceOnly'",
        ));
    }
    let budgets = check_budgets(
        strategy.partition.as_ref(),
        strategy.max_unavailable.as_ref(),
        strategy.max_surge.as_ref(),
        replicas,
        path,
    );
    errs.extend(budgets.partition_errs);
    if let Some(priority) = &strategy.priority_strategy
        && let Some(err) = priority_strategy_error(priority)
    {
        errs.push(FieldError::required(&path.child("priorityStrategy"), err));
    }
    if let Some(err) = scatter_strategy_error(&strategy.scatter_strategy) {
        errs.push(FieldError::required(&path.child("scatterStrategy"), err));
    }
    // maxUnavailable's error comes before maxSurge's, and the InPlaceOnly check right after
    // maxSurge's.
    errs.extend(budgets.other_errs);
    if strategy.max_surge.is_some() && type_ == "InPlaceOnly" && budgets.surge > 0 {
        errs.push(FieldError::invalid(
            &path.child("maxSurge"),
            go::int_or_string_text(strategy.max_surge.as_ref()),
            "can not use maxSurge with strategy type InPlaceOnly",
        ));
    }
    errs.extend(both_below_one(
        replicas,
        strategy.max_unavailable.as_ref(),
        budgets.unavailable,
        budgets.surge,
        path,
    ));
    errs
}

// ---- In-place-only template changes ----

/// The first change between the two templates' specs that is not an image replacement, as
/// upstream's `jsonpatch.CreatePatch` would list it (`"<op> <path>"`), or `None`.
fn first_non_image_change(old: &PodTemplateSpec, new: &PodTemplateSpec) -> Option<String> {
    let go_json = |t: &PodTemplateSpec| {
        let value = serde_json::to_value(t.spec.clone().unwrap_or_default()).unwrap_or(Value::Null);
        normalize_struct(&value, POD_SPEC)
    };
    let mut ops = Vec::new();
    diff_values(&go_json(old), &go_json(new), "", &mut ops);
    ops.into_iter()
        .find(|(op, path)| !(*op == "replace" && is_container_image_path(path)))
        .map(|(op, path)| format!("{op} {path}"))
}

/// `^/containers/([0-9]+)/image$`
fn is_container_image_path(path: &str) -> bool {
    path.strip_prefix("/containers/")
        .and_then(|rest| rest.strip_suffix("/image"))
        .is_some_and(|index| !index.is_empty() && index.bytes().all(|b| b.is_ascii_digit()))
}

/// A JSON diff with the semantics of the `jsonpatch` library upstream uses: objects key by key
/// (keys in sorted order, then removals), equal-length arrays element by element, arrays of
/// other lengths by membership, a change of type as a replacement.
fn diff_values(a: &Value, b: &Value, path: &str, ops: &mut Vec<(&'static str, String)>) {
    match (a, b) {
        (Value::Object(x), Value::Object(y)) => {
            let mut keys: Vec<&String> = y.keys().collect();
            keys.sort();
            for key in keys {
                let p = format!("{path}/{}", key.replace('~', "~0").replace('/', "~1"));
                let bv = &y[key.as_str()];
                match x.get(key) {
                    None => ops.push(("add", p)),
                    Some(av) if std::mem::discriminant(av) != std::mem::discriminant(bv) => {
                        ops.push(("replace", p))
                    }
                    Some(av) => diff_values(av, bv, &p, ops),
                }
            }
            let mut removed: Vec<&String> = x.keys().filter(|k| !y.contains_key(*k)).collect();
            removed.sort();
            for key in removed {
                ops.push((
                    "remove",
                    format!("{path}/{}", key.replace('~', "~0").replace('/', "~1")),
                ));
            }
        }
        (Value::Array(x), Value::Array(y)) => {
            if x.len() == y.len() {
                for (i, (xa, yb)) in x.iter().zip(y).enumerate() {
                    diff_values(xa, yb, &format!("{path}/{i}"), ops);
                }
            } else {
                for (i, v) in x.iter().enumerate() {
                    if !y.contains(v) {
                        ops.push(("remove", format!("{path}/{i}")));
                    }
                }
                for (i, v) in y.iter().enumerate() {
                    if !x.contains(v) {
                        ops.push(("add", format!("{path}/{i}")));
                    }
                }
            }
        }
        (Value::Number(x), Value::Number(y)) => {
            if x.as_f64() != y.as_f64() {
                ops.push(("replace", path.to_owned()));
            }
        }
        (Value::Null, Value::Null) => {}
        (Value::Null, _) => ops.push(("add", path.to_owned())),
        _ => {
            if a != b {
                ops.push(("replace", path.to_owned()));
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kruise_scaled_values() {
        assert_eq!(kruise_scaled_value(None, 10, true), Err("nil value for IntOrString".into()));
        assert_eq!(kruise_scaled_value(Some(&IntOrString::Int(-1)), 10, true), Ok(-1));
        assert_eq!(kruise_scaled_value(Some(&IntOrString::String("15%".into())), 10, true), Ok(2));
        assert_eq!(
            kruise_scaled_value(Some(&IntOrString::String("12.5%".into())), 10, false),
            Ok(1)
        );
        assert_eq!(
            kruise_scaled_value(Some(&IntOrString::String("5".into())), 10, true),
            Err("invalid type: string is not a percentage".into())
        );
        assert_eq!(
            kruise_scaled_value(Some(&IntOrString::String("x%".into())), 10, true),
            Err("strconv.ParseFloat: parsing \"x\": invalid syntax".into())
        );
        assert_eq!(
            kruise_scaled_value(Some(&IntOrString::String("1e400%".into())), 10, true),
            Err("strconv.ParseFloat: parsing \"1e400\": value out of range".into())
        );
    }

    #[test]
    fn go_int32_parsing() {
        assert_eq!(go_parse_int32("50"), Ok(50));
        assert_eq!(go_parse_int32("-1"), Ok(-1));
        assert_eq!(
            go_parse_int32("abc"),
            Err("strconv.ParseInt: parsing \"abc\": invalid syntax".into())
        );
        assert_eq!(
            go_parse_int32("99999999999"),
            Err("strconv.ParseInt: parsing \"99999999999\": value out of range".into())
        );
    }

    #[test]
    fn image_paths() {
        assert!(is_container_image_path("/containers/0/image"));
        assert!(is_container_image_path("/containers/12/image"));
        assert!(!is_container_image_path("/containers//image"));
        assert!(!is_container_image_path("/initContainers/0/image"));
        assert!(!is_container_image_path("/containers/0/imagePullPolicy"));
    }
}
