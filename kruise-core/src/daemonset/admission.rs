//! Advanced DaemonSet defaulting and validation, as upstream OpenKruise's `mdaemonset.kb.io`
//! and `vdaemonset.kb.io` webhooks do them, for both served versions.
//!
//! Defaulting ([`default_daemonset`], [`default_daemonset_v1alpha1`]) follows
//! `SetDefaultsDaemonSet`: `burstReplicas` 250, updateStrategy `RollingUpdate` with
//! `rollingUpdateType: Standard` (v1alpha1's deprecated `Surging` becomes `Standard` with
//! `maxSurge: 1` and `maxUnavailable: 0` unless set), `maxUnavailable: 1` and `maxSurge: 0`
//! when neither is set, and `revisionHistoryLimit` 10. The pod template is not defaulted.
//!
//! Validation ([`validate_daemonset`], [`validate_daemonset_update`] and their v1alpha1
//! twins) returns upstream's errors with its messages, in its order: object metadata; the
//! selector (valid, not empty, matching the template's labels); the pod template (restart
//! policy `Always`, no `activeDeadlineSeconds`); `minReadySeconds`; the update strategy
//! (`maxUnavailable` and `maxSurge` positive int or percent up to 100 %, not both non-zero
//! and not both zero, `maxSurge` zero for `InPlaceIfPossible`, `maxUnavailable` zero for
//! v1alpha1 `Surging`, the partition a non-negative int or a percent up to 100 %);
//! `revisionHistoryLimit`; and no `lifecycle.inPlaceUpdate` hook. An update may change only
//! the template, update and scale strategies, lifecycle, burst, minReadySeconds and history
//! limit.
//!
//! Differences from upstream, on purpose:
//!
//! - the partition and rolling-update type are reported at their own paths
//!   (`spec.updateStrategy.rollingUpdate.partition`, `...rollingUpdate.rollingUpdateType`);
//!   upstream repeats `rollingUpdate` in both paths and names the type field `type`;
//! - `spec.updateStrategy.rollingUpdate.selector` is checked like any label selector (upstream
//!   does not check it, and its controller then fails every reconcile);
//! - an unsupported `spec.updateStrategy.type` shows the type, where upstream prints the
//!   whole strategy struct.

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::PodTemplateSpec;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector;
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;
use kruise_api::apps::common::Lifecycle;
use kruise_api::apps::{v1alpha1 as alpha, v1beta1 as beta};

use crate::admission::meta::{
    LabelSelectorOptions, selectors_semantically_equal, validate_label_selector,
    validate_nonnegative, validate_object_meta, validate_object_meta_update,
};
use crate::admission::workload_spec::validate_selector_and_template;
use crate::field::{BadValue, FieldError, FieldErrorKind, FieldErrors, FieldPath, go};
use crate::names::{name_is_dns_subdomain, regex_error};

/// The name of upstream's validating webhook for Advanced DaemonSets.
pub const VALIDATING_WEBHOOK_NAME: &str = "vdaemonset.kb.io";
/// The name of upstream's mutating webhook for Advanced DaemonSets.
pub const MUTATING_WEBHOOK_NAME: &str = "mdaemonset.kb.io";

const UPDATE_FORBIDDEN_V1BETA1: &str = "updates to daemonset spec for fields other than 'BurstReplicas', 'template', 'lifecycle', 'scaleStrategy', 'updateStrategy', 'minReadySeconds', and 'revisionHistoryLimit' are forbidden";
const UPDATE_FORBIDDEN_V1ALPHA1: &str = "updates to daemonset spec for fields other than 'BurstReplicas', 'template', 'lifecycle',  'updateStrategy', 'minReadySeconds', and 'revisionHistoryLimit' are forbidden";

/// Upstream's `SetDefaultsDaemonSetV1beta1`.
pub fn default_daemonset(ds: &mut beta::DaemonSet) {
    let spec = &mut ds.spec;
    spec.burst_replicas.get_or_insert(IntOrString::Int(250));
    let strategy = &mut spec.update_strategy;
    let type_ = strategy.type_.get_or_insert(beta::DaemonSetUpdateStrategyType::RollingUpdate);
    if *type_ == beta::DaemonSetUpdateStrategyType::RollingUpdate {
        let rolling = strategy.rolling_update.get_or_insert_with(Default::default);
        rolling.type_.get_or_insert(beta::RollingUpdateType::Standard);
        if rolling.max_unavailable.is_none() && rolling.max_surge.is_none() {
            rolling.max_unavailable = Some(IntOrString::Int(1));
            rolling.max_surge = Some(IntOrString::Int(0));
        }
    }
    spec.revision_history_limit.get_or_insert(10);
}

/// Upstream's `SetDefaultsDaemonSet` (v1alpha1), which also turns the deprecated `Surging`
/// type into `Standard`.
pub fn default_daemonset_v1alpha1(ds: &mut alpha::DaemonSet) {
    let spec = &mut ds.spec;
    spec.burst_replicas.get_or_insert(IntOrString::Int(250));
    let strategy = &mut spec.update_strategy;
    let type_ = strategy.type_.get_or_insert(beta::DaemonSetUpdateStrategyType::RollingUpdate);
    if *type_ == beta::DaemonSetUpdateStrategyType::RollingUpdate {
        let rolling = strategy.rolling_update.get_or_insert_with(Default::default);
        if rolling.type_ == Some(alpha::RollingUpdateType::Surging) {
            rolling.max_surge.get_or_insert(IntOrString::Int(1));
            rolling.max_unavailable.get_or_insert(IntOrString::Int(0));
        }
        if matches!(rolling.type_, None | Some(alpha::RollingUpdateType::Surging)) {
            rolling.type_ = Some(alpha::RollingUpdateType::Standard);
        }
        if rolling.max_unavailable.is_none() && rolling.max_surge.is_none() {
            rolling.max_unavailable = Some(IntOrString::Int(1));
            rolling.max_surge = Some(IntOrString::Int(0));
        }
    }
    spec.revision_history_limit.get_or_insert(10);
}

/// The parts of either version that validation reads.
struct View<'a> {
    selector: Option<&'a LabelSelector>,
    template: &'a PodTemplateSpec,
    min_ready_seconds: i32,
    strategy_type: Option<&'a str>,
    rolling: Option<RollingView<'a>>,
    revision_history_limit: Option<i32>,
    lifecycle: Option<&'a Lifecycle>,
    /// Versions that still accept `Surging`.
    surging_allowed: bool,
}

struct RollingView<'a> {
    type_: &'a str,
    max_unavailable: Option<&'a IntOrString>,
    max_surge: Option<&'a IntOrString>,
    partition: Option<&'a IntOrString>,
    selector: Option<&'a LabelSelector>,
}

impl<'a> View<'a> {
    fn beta(ds: &'a beta::DaemonSet) -> Self {
        let spec = &ds.spec;
        Self {
            selector: spec.selector.as_ref(),
            template: &spec.template,
            min_ready_seconds: spec.min_ready_seconds,
            strategy_type: spec.update_strategy.type_.as_ref().map(|t| t.as_str()),
            rolling: spec.update_strategy.rolling_update.as_ref().map(|r| RollingView {
                type_: r.type_.as_ref().map_or("", |t| t.as_str()),
                max_unavailable: r.max_unavailable.as_ref(),
                max_surge: r.max_surge.as_ref(),
                partition: r.partition.as_ref(),
                selector: r.selector.as_ref(),
            }),
            revision_history_limit: spec.revision_history_limit,
            lifecycle: spec.lifecycle.as_ref(),
            surging_allowed: false,
        }
    }

    fn alpha(ds: &'a alpha::DaemonSet) -> Self {
        let spec = &ds.spec;
        Self {
            selector: spec.selector.as_ref(),
            template: &spec.template,
            min_ready_seconds: spec.min_ready_seconds,
            strategy_type: spec.update_strategy.type_.as_ref().map(|t| t.as_str()),
            rolling: spec.update_strategy.rolling_update.as_ref().map(|r| RollingView {
                type_: r.type_.as_ref().map_or("", |t| t.as_str()),
                max_unavailable: r.max_unavailable.as_ref(),
                max_surge: r.max_surge.as_ref(),
                partition: r.partition.as_ref(),
                selector: r.selector.as_ref(),
            }),
            revision_history_limit: spec.revision_history_limit,
            lifecycle: spec.lifecycle.as_ref(),
            surging_allowed: true,
        }
    }
}

fn go_atoi(text: &str) -> Option<i64> {
    let digits = text.strip_prefix(['+', '-']).unwrap_or(text);
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    text.parse().ok()
}

/// A valid percent (`[0-9]+%`) and its number.
fn percent_value(value: &IntOrString) -> Option<i64> {
    let IntOrString::String(s) = value else { return None };
    let digits = s.strip_suffix('%')?;
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    Some(digits.parse().unwrap_or(i64::MAX))
}

/// Upstream's `getIntOrPercentValue`: a percent's number, an int, or a string's integer
/// value (0 when it is not one).
fn int_or_percent_value(value: &IntOrString) -> i64 {
    match value {
        IntOrString::Int(n) => i64::from(*n),
        IntOrString::String(s) => percent_value(value).or_else(|| go_atoi(s)).unwrap_or(0),
    }
}

fn bad(value: &IntOrString) -> BadValue {
    BadValue::Go(go::int_or_string(value))
}

/// Kubernetes' `ValidatePositiveIntOrPercent` (which accepts zero).
fn validate_positive_int_or_percent(value: &IntOrString, path: &FieldPath) -> Vec<FieldError> {
    match value {
        IntOrString::String(_) if percent_value(value).is_none() => vec![FieldError::invalid(
            path,
            bad(value),
            regex_error(
                "a valid percent string must be a numeric string followed by an ending '%'",
                "[0-9]+%",
                &["1%", "93%"],
            ),
        )],
        IntOrString::String(_) => Vec::new(),
        IntOrString::Int(n) => validate_nonnegative(i64::from(*n), path),
    }
}

/// Kubernetes' `IsNotMoreThan100Percent`.
fn not_more_than_100_percent(value: &IntOrString, path: &FieldPath) -> Vec<FieldError> {
    match percent_value(value) {
        Some(p) if p > 100 => {
            vec![FieldError::invalid(path, bad(value), "must not be greater than 100%")]
        }
        _ => Vec::new(),
    }
}

fn validate_rolling_update(
    rolling: &RollingView<'_>,
    surging_allowed: bool,
    path: &FieldPath,
) -> Vec<FieldError> {
    let mut errs = Vec::new();
    let unavailable_path = path.child("maxUnavailable");
    let surge_path = path.child("maxSurge");
    let has_unavailable = rolling.max_unavailable.filter(|v| int_or_percent_value(v) != 0);
    let has_surge = rolling.max_surge.filter(|v| int_or_percent_value(v) != 0);
    if let Some(value) = has_unavailable {
        errs.extend(validate_positive_int_or_percent(value, &unavailable_path));
        errs.extend(not_more_than_100_percent(value, &unavailable_path));
    }
    if let Some(value) = has_surge {
        errs.extend(validate_positive_int_or_percent(value, &surge_path));
        errs.extend(not_more_than_100_percent(value, &surge_path));
    }
    match (has_unavailable, has_surge) {
        (Some(_), Some(surge)) => errs.push(FieldError::invalid(
            &surge_path,
            bad(surge),
            "may not be set when maxUnavailable is non-zero",
        )),
        (None, None) => {
            errs.push(FieldError::required(&unavailable_path, "cannot be 0 when maxSurge is 0"))
        }
        _ => {}
    }
    match rolling.type_ {
        "" | "Standard" => {}
        "InPlaceIfPossible" => {
            if has_surge.is_some() {
                errs.push(FieldError::required(
                    &surge_path,
                    "must be 0 for InPlaceIfPossible type",
                ));
            }
        }
        "Surging" if surging_allowed => {
            if has_unavailable.is_some() {
                errs.push(FieldError::required(&unavailable_path, "must be 0 for Surging type"));
            }
        }
        other => {
            let allowed: &[&str] = if surging_allowed {
                &["Standard", "Surging", "InPlaceIfPossible"]
            } else {
                &["Standard", "InPlaceIfPossible"]
            };
            errs.push(FieldError::not_supported(&path.child("rollingUpdateType"), other, allowed));
        }
    }
    if let Some(partition) = rolling.partition {
        let partition_path = path.child("partition");
        match partition {
            IntOrString::String(_) => {
                errs.extend(validate_positive_int_or_percent(partition, &partition_path))
            }
            IntOrString::Int(n) => {
                errs.extend(validate_nonnegative(i64::from(*n), &partition_path))
            }
        }
        errs.extend(not_more_than_100_percent(partition, &partition_path));
    }
    if let Some(selector) = rolling.selector {
        errs.extend(validate_label_selector(
            Some(selector),
            LabelSelectorOptions::default(),
            &path.child("selector"),
        ));
    }
    errs
}

fn validate_spec(view: &View<'_>) -> Vec<FieldError> {
    let path = FieldPath::new("spec");
    let mut errs =
        validate_selector_and_template(view.selector, view.template, &[], "daemonset", &path);
    if view.selector.is_none() {
        // Upstream's DaemonSet validation does not require a selector; a missing one is
        // reported only through the template labels it cannot match.
        errs.retain(|e| {
            !(e.kind == FieldErrorKind::Required && e.path.to_string() == "spec.selector")
        });
    }
    errs.extend(validate_nonnegative(
        i64::from(view.min_ready_seconds),
        &path.child("minReadySeconds"),
    ));
    let strategy_path = path.child("updateStrategy");
    match view.strategy_type {
        Some("OnDelete") => {}
        Some("RollingUpdate") => match &view.rolling {
            None => errs.push(FieldError::required(&strategy_path.child("rollingUpdate"), "")),
            Some(rolling) => errs.extend(validate_rolling_update(
                rolling,
                view.surging_allowed,
                &strategy_path.child("rollingUpdate"),
            )),
        },
        other => errs.push(FieldError::not_supported(
            &strategy_path,
            other.unwrap_or_default(),
            &["RollingUpdate", "OnDelete"],
        )),
    }
    if let Some(limit) = view.revision_history_limit {
        errs.extend(validate_nonnegative(i64::from(limit), &path.child("revisionHistoryLimit")));
    }
    if view.lifecycle.is_some_and(|l| l.in_place_update.is_some()) {
        errs.push(FieldError::forbidden(
            &path.child("lifecycle").child("inPlaceUpdate"),
            "inPlaceUpdate hook has not supported yet",
        ));
    }
    errs
}

fn validate_meta_and_spec(
    meta: &k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta,
    view: &View<'_>,
) -> FieldErrors {
    let mut errs =
        validate_object_meta(meta, true, name_is_dns_subdomain, &FieldPath::new("metadata"));
    errs.extend(validate_spec(view));
    FieldErrors(errs)
}

/// Validates a v1beta1 DaemonSet being created.
pub fn validate_daemonset(ds: &beta::DaemonSet) -> FieldErrors {
    validate_meta_and_spec(&ds.metadata, &View::beta(ds))
}

/// Validates a v1alpha1 DaemonSet being created.
pub fn validate_daemonset_v1alpha1(ds: &alpha::DaemonSet) -> FieldErrors {
    validate_meta_and_spec(&ds.metadata, &View::alpha(ds))
}

fn validate_update(
    new_meta: &k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta,
    old_meta: &k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta,
    selectors: (Option<&LabelSelector>, Option<&LabelSelector>),
    view: &View<'_>,
    message: &str,
) -> FieldErrors {
    let mut errs = validate_object_meta_update(new_meta, old_meta, &FieldPath::new("metadata"));
    if !selectors_semantically_equal(selectors.0, selectors.1) {
        errs.push(FieldError::forbidden(&FieldPath::new("spec"), message));
    }
    errs.extend(validate_spec(view));
    FieldErrors(errs)
}

/// Validates a v1beta1 DaemonSet being updated from `old`: only the selector is fixed.
pub fn validate_daemonset_update(new: &beta::DaemonSet, old: &beta::DaemonSet) -> FieldErrors {
    validate_update(
        &new.metadata,
        &old.metadata,
        (new.spec.selector.as_ref(), old.spec.selector.as_ref()),
        &View::beta(new),
        UPDATE_FORBIDDEN_V1BETA1,
    )
}

/// Validates a v1alpha1 DaemonSet being updated from `old`.
pub fn validate_daemonset_v1alpha1_update(
    new: &alpha::DaemonSet,
    old: &alpha::DaemonSet,
) -> FieldErrors {
    validate_update(
        &new.metadata,
        &old.metadata,
        (new.spec.selector.as_ref(), old.spec.selector.as_ref()),
        &View::alpha(new),
        UPDATE_FORBIDDEN_V1ALPHA1,
    )
}

/// The template's labels, for callers that report them.
pub fn template_labels(template: &PodTemplateSpec) -> Option<&BTreeMap<String, String>> {
    template.metadata.as_ref().and_then(|m| m.labels.as_ref())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::{Value, json};

    fn ds(rolling: Value) -> beta::DaemonSet {
        serde_json::from_value(json!({
            "apiVersion": "apps.kruise.io/v1beta1",
            "kind": "DaemonSet",
            "metadata": {"name": "ds", "namespace": "default"},
            "spec": {
                "selector": {"matchLabels": {"app": "d"}},
                "template": {
                    "metadata": {"labels": {"app": "d"}},
                    "spec": {"containers": [{"name": "c", "image": "nginx", "imagePullPolicy": "Always", "terminationMessagePolicy": "File"}]}
                },
                "updateStrategy": {"type": "RollingUpdate", "rollingUpdate": rolling}
            }
        }))
        .expect("daemonset")
    }

    fn messages(ds: &beta::DaemonSet) -> Vec<String> {
        validate_daemonset(ds).messages()
    }

    #[test]
    fn defaults_fill_the_strategy() {
        let mut d = ds(json!(null));
        d.spec.update_strategy = Default::default();
        default_daemonset(&mut d);
        let rolling = d.spec.update_strategy.rolling_update.clone().expect("rolling");
        assert_eq!(rolling.type_, Some(beta::RollingUpdateType::Standard));
        assert_eq!(rolling.max_unavailable, Some(IntOrString::Int(1)));
        assert_eq!(rolling.max_surge, Some(IntOrString::Int(0)));
        assert_eq!(d.spec.burst_replicas, Some(IntOrString::Int(250)));
        assert_eq!(d.spec.revision_history_limit, Some(10));
    }

    #[test]
    fn surging_becomes_standard_with_surge() {
        let mut d: alpha::DaemonSet = serde_json::from_value(json!({
            "metadata": {"name": "ds"},
            "spec": {"updateStrategy": {"type": "RollingUpdate", "rollingUpdate": {"rollingUpdateType": "Surging"}}}
        }))
        .expect("alpha");
        default_daemonset_v1alpha1(&mut d);
        let rolling = d.spec.update_strategy.rolling_update.expect("rolling");
        assert_eq!(rolling.type_, Some(alpha::RollingUpdateType::Standard));
        assert_eq!(rolling.max_surge, Some(IntOrString::Int(1)));
        assert_eq!(rolling.max_unavailable, Some(IntOrString::Int(0)));
    }

    #[test]
    fn a_valid_daemonset_passes() {
        assert_eq!(messages(&ds(json!({"maxUnavailable": 1}))), Vec::<String>::new());
        assert_eq!(
            messages(&ds(json!({"maxSurge": "10%", "maxUnavailable": 0}))),
            Vec::<String>::new()
        );
    }

    #[test]
    fn budget_rules() {
        let cases: Vec<(Value, &str)> = vec![
            (
                json!({"maxUnavailable": 0, "maxSurge": 0}),
                "spec.updateStrategy.rollingUpdate.maxUnavailable: Required value: cannot be 0 when maxSurge is 0",
            ),
            (
                json!({"maxUnavailable": 1, "maxSurge": 1}),
                "spec.updateStrategy.rollingUpdate.maxSurge: Invalid value: intstr.IntOrString{Type:0, IntVal:1, StrVal:\"\"}: may not be set when maxUnavailable is non-zero",
            ),
            (
                json!({"maxUnavailable": "120%"}),
                "spec.updateStrategy.rollingUpdate.maxUnavailable: Invalid value: intstr.IntOrString{Type:1, IntVal:0, StrVal:\"120%\"}: must not be greater than 100%",
            ),
            (
                json!({"maxUnavailable": -1}),
                "spec.updateStrategy.rollingUpdate.maxUnavailable: Invalid value: -1: must be greater than or equal to 0",
            ),
            (
                json!({"maxUnavailable": 0, "maxSurge": 1, "rollingUpdateType": "InPlaceIfPossible"}),
                "spec.updateStrategy.rollingUpdate.maxSurge: Required value: must be 0 for InPlaceIfPossible type",
            ),
            (
                json!({"maxUnavailable": 1, "partition": -2}),
                "spec.updateStrategy.rollingUpdate.partition: Invalid value: -2: must be greater than or equal to 0",
            ),
            (
                json!({"maxUnavailable": 1, "partition": "101%"}),
                "spec.updateStrategy.rollingUpdate.partition: Invalid value: intstr.IntOrString{Type:1, IntVal:0, StrVal:\"101%\"}: must not be greater than 100%",
            ),
        ];
        for (rolling, want) in cases {
            let got = messages(&ds(rolling.clone()));
            assert!(got.iter().any(|m| m == want), "{rolling}: {got:?}");
        }
    }

    #[test]
    fn malformed_rolling_selector_is_rejected() {
        let got = messages(&ds(json!({
            "maxUnavailable": 1,
            "selector": {"matchExpressions": [{"key": "a", "operator": "Bad"}]}
        })));
        assert!(
            got.iter().any(|m| m.starts_with("spec.updateStrategy.rollingUpdate.selector")),
            "{got:?}"
        );
    }

    #[test]
    fn selector_and_template_rules() {
        let mut d = ds(json!({"maxUnavailable": 1}));
        d.spec.selector = Some(LabelSelector::default());
        let got = messages(&d);
        assert!(
            got.iter().any(|m| m.contains("empty selector is invalid for daemonset")),
            "{got:?}"
        );
        let mut d = ds(json!({"maxUnavailable": 1}));
        d.spec.selector = Some(LabelSelector {
            match_labels: Some([("app".to_string(), "other".to_string())].into()),
            ..Default::default()
        });
        let got = messages(&d);
        assert!(
            got.iter().any(|m| m.contains("`selector` does not match template `labels`")),
            "{got:?}"
        );
        let mut d = ds(json!({"maxUnavailable": 1}));
        d.spec.lifecycle = Some(
            serde_json::from_value(json!({"inPlaceUpdate": {"labelsHandler": {"a": "b"}}}))
                .expect("lifecycle"),
        );
        let got = messages(&d);
        assert!(got.contains(&"spec.lifecycle.inPlaceUpdate: Forbidden: inPlaceUpdate hook has not supported yet".to_string()), "{got:?}");
    }

    #[test]
    fn updates_keep_the_selector() {
        let old = ds(json!({"maxUnavailable": 1}));
        let mut new = old.clone();
        new.metadata.resource_version = Some("2".into());
        new.spec.min_ready_seconds = 5;
        assert!(
            validate_daemonset_update(&new, &old).is_empty(),
            "{:?}",
            validate_daemonset_update(&new, &old).messages()
        );
        new.spec.selector = Some(LabelSelector {
            match_labels: Some(
                [("app".to_string(), "d".to_string()), ("x".to_string(), "y".to_string())].into(),
            ),
            ..Default::default()
        });
        let got = validate_daemonset_update(&new, &old).messages();
        assert!(
            got.iter().any(|m| m == &format!("spec: Forbidden: {UPDATE_FORBIDDEN_V1BETA1}")),
            "{got:?}"
        );
    }
}
