//! PodUnavailableBudget validation, as upstream OpenKruise's `vpodunavailablebudget.kb.io`
//! webhook does it, for both API versions. A v1alpha1 object is converted to v1beta1 first
//! (kruise-api's conversion, which reads the v1alpha1 annotations into the v1beta1 fields),
//! so the rules are written once, over v1beta1.
//!
//! The rules, in upstream's order, with upstream's paths and messages:
//!
//! 1. the `pub.kruise.io/protect-total-replicas` annotation, when present, is an int32
//!    (`must be a valid int32`) that agrees with `spec.protectTotalReplicas` when that is set
//!    (`must match spec.protectTotalReplicas when both are set`);
//! 2. exactly one of `selector` and `targetRef` (reported at `spec.selector, targetRef`); a
//!    target reference names an API version, kind and name, and its API version parses as a
//!    group/version; a selector is a valid, non-empty label selector;
//! 3. exactly one of `maxUnavailable` and `minAvailable` (reported at
//!    `spec.maxUnavailable, minAvailable`), a non-negative integer or a percentage of at most
//!    100%;
//! 4. every `protectOperations` entry is `DELETE`, `UPDATE`, `EVICT` or `RESIZE`;
//! 5. `ignoredPodSelector`, when set, is a valid, non-empty label selector;
//! 6. on update, neither the selector nor the target reference changes;
//! 7. no other budget in the namespace guards the same workload (same API group, kind and
//!    name) or has a selector that loosely overlaps this one (upstream's
//!    `IsSelectorLooseOverlap`); only the first conflict is reported.
//!
//! What the check needs from the cluster, the other budgets, is passed in as
//! [`OtherBudgets`].
//!
//! Differences from upstream, on purpose: a v1alpha1 object whose
//! `kruise.io/pub-protect-operations` annotation names an unknown operation is refused with a
//! field error at `metadata.annotations[kruise.io/pub-protect-operations]` (upstream refuses
//! it with the conversion's error text, `failed to convert v1alpha1 PUB to v1beta1: invalid
//! ...`); an unparsable `pub.kruise.io/protect-total-replicas` annotation on a v1alpha1 object
//! is reported by rule 1 (upstream: by the conversion). The old object of a v1alpha1 update is
//! not checked for bad annotations (upstream refuses the update when the old object's
//! annotations do not convert).

use std::collections::BTreeMap;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::{LabelSelector, LabelSelectorRequirement};
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;
use kruise_api::conversion::HubConvertible;
use kruise_api::policy::v1alpha1 as alpha;
use kruise_api::policy::v1beta1::{self as beta, PodUnavailableBudget, TargetReference};
use kruise_api::well_known::annotations::{PUB_PROTECT_OPERATIONS, PUB_PROTECT_TOTAL_REPLICAS};

use crate::admission::meta::{
    LabelSelectorOptions, label_selector_as_selector, validate_label_selector, validate_nonnegative,
};
use crate::field::{BadValue, FieldError, FieldErrors, FieldPath, go};
use crate::names::regex_error;

/// The name of upstream's validating webhook for PodUnavailableBudgets.
pub const VALIDATING_WEBHOOK_NAME: &str = "vpodunavailablebudget.kb.io";

/// The webhook's path.
pub const VALIDATING_WEBHOOK_PATH: &str = "/validate-policy-kruise-io-podunavailablebudget";

/// The operations a budget may guard, in the order upstream lists them.
pub const SUPPORTED_OPERATIONS: [&str; 4] = ["DELETE", "UPDATE", "EVICT", "RESIZE"];

/// The other budgets of the namespace, against which a budget is checked for conflicts.
#[derive(Clone, Copy, Debug)]
#[non_exhaustive]
pub enum OtherBudgets<'a> {
    /// The budgets of the namespace (the one being validated may be among them: budgets of
    /// the same name, and budgets of other namespaces, are skipped). The first conflict in
    /// this order is reported, so callers wanting a stable answer pass them sorted by name.
    Listed(&'a [PodUnavailableBudget]),
    /// The budgets could not be listed: the reason, reported as an internal error.
    Unavailable(&'a str),
}

/// Validates a v1beta1 budget being created.
pub fn validate_pub_create(pub_: &PodUnavailableBudget, others: OtherBudgets<'_>) -> FieldErrors {
    validate(pub_, None, others)
}

/// Validates a v1beta1 budget being updated from `old`.
pub fn validate_pub_update(
    new: &PodUnavailableBudget,
    old: &PodUnavailableBudget,
    others: OtherBudgets<'_>,
) -> FieldErrors {
    validate(new, Some(old), others)
}

/// Validates a v1alpha1 budget being created: its annotations, then, converted to v1beta1,
/// the v1beta1 rules.
pub fn validate_pub_v1alpha1_create(
    pub_: &alpha::PodUnavailableBudget,
    others: OtherBudgets<'_>,
) -> FieldErrors {
    let mut errs = alpha_annotation_errors(pub_);
    errs.extend(validate(&pub_.clone().map_to_hub(), None, others));
    errs
}

/// Validates a v1alpha1 budget being updated from `old`, as [`validate_pub_v1alpha1_create`]
/// does, adding the update rules.
pub fn validate_pub_v1alpha1_update(
    new: &alpha::PodUnavailableBudget,
    old: &alpha::PodUnavailableBudget,
    others: OtherBudgets<'_>,
) -> FieldErrors {
    let mut errs = alpha_annotation_errors(new);
    let old = old.clone().map_to_hub();
    errs.extend(validate(&new.clone().map_to_hub(), Some(&old), others));
    errs
}

/// The v1alpha1 operations annotation: comma-separated operations (spaces around them and
/// empty items ignored), each one upstream knows. Each unknown item is reported.
fn alpha_annotation_errors(pub_: &alpha::PodUnavailableBudget) -> FieldErrors {
    let mut errs = FieldErrors::new();
    let Some(text) = pub_.metadata.annotations.as_ref().and_then(|a| a.get(PUB_PROTECT_OPERATIONS))
    else {
        return errs;
    };
    let path = FieldPath::new("metadata").child("annotations").key(PUB_PROTECT_OPERATIONS);
    for item in text.split(',').map(str::trim).filter(|item| !item.is_empty()) {
        if !SUPPORTED_OPERATIONS.contains(&item) {
            errs.push(FieldError::not_supported(&path, item, &SUPPORTED_OPERATIONS));
        }
    }
    errs
}

fn validate(
    pub_: &PodUnavailableBudget,
    old: Option<&PodUnavailableBudget>,
    others: OtherBudgets<'_>,
) -> FieldErrors {
    let mut errs = FieldErrors::new();
    errs.extend(validate_total_replicas_annotation(pub_));
    let spec_path = FieldPath::new("spec");
    errs.extend(validate_spec(&pub_.spec, &spec_path));
    if let Some(old) = old
        && (pub_.spec.selector != old.spec.selector
            || pub_.spec.target_reference != old.spec.target_reference)
    {
        errs.push(FieldError::required(
            &spec_path.child("selector, targetRef"),
            "selector and targetRef cannot be modified",
        ));
    }
    match others {
        OtherBudgets::Listed(others) => errs.extend(conflict(pub_, others, &spec_path)),
        OtherBudgets::Unavailable(reason) => errs.push(FieldError::internal(
            &FieldPath::new(""),
            format!("query other podUnavailableBudget failed, err: {reason}"),
        )),
    }
    errs
}

/// Rule 1: the total replicas annotation.
fn validate_total_replicas_annotation(pub_: &PodUnavailableBudget) -> Option<FieldError> {
    let value = pub_.metadata.annotations.as_ref()?.get(PUB_PROTECT_TOTAL_REPLICAS)?;
    let path = FieldPath::new("metadata").child("annotations").key(PUB_PROTECT_TOTAL_REPLICAS);
    // Go's strconv.ParseInt(s, 10, 32) and Rust's i32 parsing accept the same texts: an
    // optional sign and at least one decimal digit, in range.
    match value.parse::<i32>() {
        Err(_) => Some(FieldError::invalid(&path, value, "must be a valid int32")),
        Ok(_) => {
            pub_.spec.protect_total_replicas.filter(|replicas| replicas.to_string() != *value).map(
                |_| {
                    FieldError::invalid(
                        &path,
                        value,
                        "must match spec.protectTotalReplicas when both are set",
                    )
                },
            )
        }
    }
}

/// Go's `%#v` of a `v1beta1.TargetReference`.
fn go_target_reference(target: &TargetReference) -> String {
    format!(
        "v1beta1.TargetReference{{APIVersion:{}, Kind:{}, Name:{}}}",
        go::quote(&target.api_version),
        go::quote(&target.kind),
        go::quote(&target.name)
    )
}

/// The group of `schema.ParseGroupVersion(api_version)`, or its error text.
fn parse_group(api_version: &str) -> Result<&str, String> {
    if api_version.is_empty() || api_version == "/" {
        return Ok("");
    }
    match api_version.split_once('/') {
        // No slash: the whole text is the version, of the core group.
        None => Ok(""),
        Some((group, version)) if !version.contains('/') => Ok(group),
        Some(_) => Err(format!("unexpected GroupVersion string: {api_version}")),
    }
}

/// Rules 2 to 5: the spec on its own (`validatePodUnavailableBudgetSpecV1beta1`).
fn validate_spec(spec: &beta::PodUnavailableBudgetSpec, path: &FieldPath) -> Vec<FieldError> {
    let mut errs = Vec::new();
    let either = path.child("selector, targetRef");
    match (&spec.selector, &spec.target_reference) {
        (None, None) => errs.push(FieldError::required(
            &either,
            "no selector or targetRef defined in PodUnavailableBudget",
        )),
        (Some(_), Some(_)) => errs
            .push(FieldError::required(&either, "selector and targetRef are mutually exclusive")),
        (None, Some(target)) => {
            let target_path = path.child("targetRef");
            let value = || BadValue::Go(go_target_reference(target));
            if target.api_version.is_empty() || target.name.is_empty() || target.kind.is_empty() {
                errs.push(FieldError::invalid(
                    &target_path,
                    value(),
                    "empty targetRef is not valid for PodUnavailableBudget",
                ));
            }
            if let Err(err) = parse_group(&target.api_version) {
                errs.push(FieldError::invalid(&target_path, value(), err));
            }
        }
        (Some(selector), None) => {
            let selector_path = path.child("selector");
            errs.extend(validate_selector(
                selector,
                &selector_path,
                "empty selector is not valid for PodUnavailableBudget.",
            ));
            if label_selector_as_selector(Some(selector)).is_err() {
                errs.push(FieldError::invalid(
                    &selector_path,
                    BadValue::Go(go::label_selector(selector)),
                    "",
                ));
            }
        }
    }

    let either = path.child("maxUnavailable, minAvailable");
    match (&spec.max_unavailable, &spec.min_available) {
        (None, None) => errs.push(FieldError::required(
            &either,
            "no maxUnavailable or minAvailable defined in PodUnavailableBudget",
        )),
        (Some(_), Some(_)) => errs.push(FieldError::required(
            &either,
            "maxUnavailable and minAvailable are mutually exclusive",
        )),
        (Some(value), None) => {
            errs.extend(validate_int_or_percent(value, &path.child("maxUnavailable")))
        }
        (None, Some(value)) => {
            errs.extend(validate_int_or_percent(value, &path.child("minAvailable")))
        }
    }

    let operations_path = path.child("protectOperations");
    for (i, operation) in spec.protect_operations.iter().enumerate() {
        if !SUPPORTED_OPERATIONS.contains(&operation.as_str()) {
            errs.push(FieldError::not_supported(
                &operations_path.index(i),
                operation.as_str(),
                &SUPPORTED_OPERATIONS,
            ));
        }
    }

    if let Some(ignored) = &spec.ignored_pod_selector {
        errs.extend(validate_selector(
            ignored,
            &path.child("ignoredPodSelector"),
            "empty ignoredPodSelector is not valid for PodUnavailableBudget",
        ));
    }
    errs
}

/// `ValidateLabelSelector` and the emptiness check, with upstream's `empty` message.
fn validate_selector(selector: &LabelSelector, path: &FieldPath, empty: &str) -> Vec<FieldError> {
    let mut errs = validate_label_selector(Some(selector), LabelSelectorOptions::default(), path);
    let count = selector.match_labels.as_ref().map_or(0, BTreeMap::len)
        + selector.match_expressions.as_ref().map_or(0, Vec::len);
    if count == 0 {
        errs.push(FieldError::invalid(path, BadValue::Go(go::label_selector(selector)), empty));
    }
    errs
}

/// Whether `text` matches `^[0-9]+%$` (`IsValidPercent`); the number when it does, saturated
/// as Go's `strconv.Atoi` saturates an out-of-range number.
fn percent_value(text: &str) -> Option<i64> {
    let digits = text.strip_suffix('%')?;
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    Some(digits.parse::<i64>().unwrap_or(i64::MAX))
}

/// `ValidatePositiveIntOrPercent` and `IsNotMoreThan100Percent` of Kubernetes' apps validation.
fn validate_int_or_percent(value: &IntOrString, path: &FieldPath) -> Vec<FieldError> {
    let shown = || BadValue::Go(go::int_or_string(value));
    match value {
        IntOrString::Int(n) => validate_nonnegative(i64::from(*n), path),
        IntOrString::String(text) => match percent_value(text) {
            None => vec![FieldError::invalid(
                path,
                shown(),
                regex_error(
                    "a valid percent string must be a numeric string followed by an ending '%'",
                    "[0-9]+%",
                    &["1%", "93%"],
                ),
            )],
            Some(percent) if percent > 100 => {
                vec![FieldError::invalid(path, shown(), "must not be greater than 100%")]
            }
            Some(_) => Vec::new(),
        },
    }
}

/// Rule 7: the first other budget of the namespace guarding the same pods
/// (`validatePubConflictV1beta1`).
fn conflict(
    pub_: &PodUnavailableBudget,
    others: &[PodUnavailableBudget],
    path: &FieldPath,
) -> Option<FieldError> {
    let namespace = pub_.metadata.namespace.as_deref().unwrap_or_default();
    let name = pub_.metadata.name.as_deref().unwrap_or_default();
    others
        .iter()
        .filter(|other| other.metadata.namespace.as_deref().unwrap_or_default() == namespace)
        .filter(|other| other.metadata.name.as_deref().unwrap_or_default() != name)
        .find_map(|other| {
            let other_name = other.metadata.name.as_deref().unwrap_or_default();
            match (&pub_.spec, &other.spec) {
                (
                    beta::PodUnavailableBudgetSpec { target_reference: Some(mine), .. },
                    beta::PodUnavailableBudgetSpec { target_reference: Some(theirs), .. },
                ) => {
                    // Upstream ignores parse errors here: an unparsable version has no group.
                    let group = |t: &TargetReference| {
                        parse_group(&t.api_version).map(str::to_owned).unwrap_or_default()
                    };
                    (group(mine) == group(theirs)
                        && mine.kind == theirs.kind
                        && mine.name == theirs.name)
                        .then(|| {
                            FieldError::invalid(
                                &path.child("targetReference"),
                                BadValue::Go(go_target_reference(mine)),
                                format!(
                                    "pub.spec.targetReference is in conflict with other PodUnavailableBudget {other_name}"
                                ),
                            )
                        })
                }
                (
                    beta::PodUnavailableBudgetSpec { selector: Some(mine), .. },
                    beta::PodUnavailableBudgetSpec { selector: Some(theirs), .. },
                ) => selectors_loosely_overlap(mine, theirs).then(|| {
                    FieldError::invalid(
                        &path.child("selector"),
                        BadValue::Go(go::label_selector(mine)),
                        format!(
                            "pub.spec.selector is in conflict with other PodUnavailableBudget {other_name}"
                        ),
                    )
                }),
                _ => None,
            }
        })
}

/// A selector as one requirement per key (`convertSelectorToMatchExpressions`): the last
/// expression for a key, overridden by `matchLabels` (as `In [value]`).
fn requirements_by_key(selector: &LabelSelector) -> BTreeMap<&str, (&str, &[String])> {
    let mut by_key: BTreeMap<&str, (&str, &[String])> = BTreeMap::new();
    for LabelSelectorRequirement { key, operator, values } in
        selector.match_expressions.iter().flatten()
    {
        by_key.insert(key, (operator, values.as_deref().unwrap_or_default()));
    }
    for (key, value) in selector.match_labels.iter().flatten() {
        by_key.insert(key, ("In", std::slice::from_ref(value)));
    }
    by_key
}

/// Upstream's `IsSelectorLooseOverlap`: both selectors constrain the same keys, and for every
/// key the two requirements can hold together. Selectors on different keys never overlap.
pub fn selectors_loosely_overlap(a: &LabelSelector, b: &LabelSelector) -> bool {
    let (a, b) = (requirements_by_key(a), requirements_by_key(b));
    let covered = |x: &BTreeMap<&str, (&str, &[String])>, y: &BTreeMap<&str, (&str, &[String])>| {
        x.iter().all(|(key, mine)| {
            y.get(key).is_some_and(|theirs| requirements_overlap(*mine, *theirs))
        })
    };
    covered(&a, &b) && covered(&b, &a)
}

/// Upstream's `isMatchExpOverlap` of requirement `a` against `b`.
fn requirements_overlap(a: (&str, &[String]), b: (&str, &[String])) -> bool {
    let overlaps = |x: &[String], y: &[String]| x.iter().any(|v| y.contains(v));
    let contains_all = |x: &[String], y: &[String]| y.iter().all(|v| x.contains(v));
    match (a.0, b.0) {
        ("In", "Exists") => true,
        ("In", "In") => overlaps(b.1, a.1),
        ("In", "NotIn") => !contains_all(b.1, a.1),
        ("Exists", "In" | "NotIn" | "Exists") => true,
        ("NotIn", "Exists" | "DoesNotExist" | "NotIn") => true,
        ("NotIn", "In") => !contains_all(a.1, b.1),
        ("DoesNotExist", "DoesNotExist" | "NotIn") => true,
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
    use proptest::prelude::*;

    fn labels(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
        pairs.iter().map(|(k, v)| ((*k).to_owned(), (*v).to_owned())).collect()
    }

    fn selector(pairs: &[(&str, &str)]) -> LabelSelector {
        LabelSelector { match_labels: Some(labels(pairs)), match_expressions: None }
    }

    fn target(name: &str) -> TargetReference {
        TargetReference { api_version: "apps".into(), kind: "Deployment".into(), name: name.into() }
    }

    /// Upstream's `pubDemo` with the selector and minAvailable removed: a valid budget.
    fn by_target() -> PodUnavailableBudget {
        PodUnavailableBudget {
            metadata: ObjectMeta {
                namespace: Some("default".into()),
                name: Some("pub-test".into()),
                annotations: Some(BTreeMap::new()),
                ..ObjectMeta::default()
            },
            spec: beta::PodUnavailableBudgetSpec {
                target_reference: Some(target("deployment-test")),
                max_unavailable: Some(IntOrString::String("20%".into())),
                ..Default::default()
            },
            status: None,
        }
    }

    /// `pubDemo` with the target reference and maxUnavailable removed: a valid budget.
    fn by_selector() -> PodUnavailableBudget {
        let mut pub_ = by_target();
        pub_.spec.target_reference = None;
        pub_.spec.max_unavailable = None;
        pub_.spec.selector = Some(selector(&[("app", "pub-controller")]));
        pub_.spec.min_available = Some(IntOrString::Int(100));
        pub_
    }

    fn named(mut pub_: PodUnavailableBudget, name: &str) -> PodUnavailableBudget {
        pub_.metadata.name = Some(name.into());
        pub_
    }

    fn create(pub_: &PodUnavailableBudget) -> Vec<String> {
        validate_pub_create(pub_, OtherBudgets::Listed(&[])).messages()
    }

    fn annotate(pub_: &mut PodUnavailableBudget, key: &str, value: &str) {
        pub_.metadata
            .annotations
            .get_or_insert_with(BTreeMap::new)
            .insert(key.into(), value.into());
    }

    #[test]
    fn valid_budgets_pass() {
        assert_eq!(create(&by_target()), Vec::<String>::new());
        assert_eq!(create(&by_selector()), Vec::<String>::new());
        let mut ignored = by_target();
        ignored.spec.ignored_pod_selector =
            Some(selector(&[("kruise.io/force-deletable", "true")]));
        assert_eq!(create(&ignored), Vec::<String>::new());
        let mut operations = by_target();
        operations.spec.protect_operations =
            SUPPORTED_OPERATIONS.iter().map(|o| beta::PubOperation::from(*o)).collect();
        assert_eq!(create(&operations), Vec::<String>::new());
    }

    #[test]
    fn selector_and_target_reference_are_exclusive_and_one_is_required() {
        let mut neither = by_target();
        neither.spec.target_reference = None;
        assert_eq!(
            create(&neither),
            [
                "spec.selector, targetRef: Required value: no selector or targetRef defined in PodUnavailableBudget"
            ]
        );
        let mut both = by_target();
        both.spec.selector = Some(selector(&[("app", "pub-controller")]));
        assert_eq!(
            create(&both),
            [
                "spec.selector, targetRef: Required value: selector and targetRef are mutually exclusive"
            ]
        );
    }

    #[test]
    fn max_unavailable_and_min_available_are_exclusive_and_one_is_required() {
        let mut neither = by_target();
        neither.spec.max_unavailable = None;
        assert_eq!(
            create(&neither),
            [
                "spec.maxUnavailable, minAvailable: Required value: no maxUnavailable or minAvailable defined in PodUnavailableBudget"
            ]
        );
        let mut both = by_target();
        both.spec.min_available = Some(IntOrString::Int(100));
        assert_eq!(
            create(&both),
            [
                "spec.maxUnavailable, minAvailable: Required value: maxUnavailable and minAvailable are mutually exclusive"
            ]
        );
    }

    #[test]
    fn target_reference_must_be_complete_and_parse() {
        let mut empty = by_target();
        empty.spec.target_reference = Some(TargetReference { name: String::new(), ..target("") });
        assert_eq!(
            create(&empty),
            [
                r#"spec.targetRef: Invalid value: v1beta1.TargetReference{APIVersion:"apps", Kind:"Deployment", Name:""}: empty targetRef is not valid for PodUnavailableBudget"#
            ]
        );
        let mut bad = by_target();
        bad.spec.target_reference =
            Some(TargetReference { api_version: "a/b/c".into(), ..target("web") });
        assert_eq!(
            create(&bad),
            [
                r#"spec.targetRef: Invalid value: v1beta1.TargetReference{APIVersion:"a/b/c", Kind:"Deployment", Name:"web"}: unexpected GroupVersion string: a/b/c"#
            ]
        );
    }

    #[test]
    fn selectors_must_be_valid_and_not_empty() {
        let mut empty = by_selector();
        empty.spec.selector = Some(LabelSelector::default());
        assert_eq!(
            create(&empty),
            [
                "spec.selector: Invalid value: v1.LabelSelector{MatchLabels:map[string]string(nil), MatchExpressions:[]v1.LabelSelectorRequirement(nil)}: empty selector is not valid for PodUnavailableBudget."
            ]
        );
        let mut bad_op = by_selector();
        bad_op.spec.selector = Some(LabelSelector {
            match_labels: None,
            match_expressions: Some(vec![LabelSelectorRequirement {
                key: "app".into(),
                operator: "Near".into(),
                values: None,
            }]),
        });
        let messages = create(&bad_op);
        assert!(
            messages.iter().any(|m| m.starts_with(
                r#"spec.selector.matchExpressions[0].operator: Invalid value: "Near""#
            )),
            "{messages:?}"
        );
        assert!(
            messages
                .iter()
                .any(|m| m.starts_with("spec.selector: Invalid value: v1.LabelSelector{")),
            "{messages:?}"
        );
        let mut ignored = by_target();
        ignored.spec.ignored_pod_selector = Some(LabelSelector::default());
        assert_eq!(
            create(&ignored),
            [
                "spec.ignoredPodSelector: Invalid value: v1.LabelSelector{MatchLabels:map[string]string(nil), MatchExpressions:[]v1.LabelSelectorRequirement(nil)}: empty ignoredPodSelector is not valid for PodUnavailableBudget"
            ]
        );
    }

    #[test]
    fn budgets_are_non_negative_integers_or_percentages_up_to_100() {
        let mut negative = by_target();
        negative.spec.max_unavailable = Some(IntOrString::Int(-1));
        assert_eq!(
            create(&negative),
            ["spec.maxUnavailable: Invalid value: -1: must be greater than or equal to 0"]
        );
        let mut over = by_selector();
        over.spec.min_available = Some(IntOrString::String("101%".into()));
        assert_eq!(
            create(&over),
            [
                r#"spec.minAvailable: Invalid value: intstr.IntOrString{Type:1, IntVal:0, StrVal:"101%"}: must not be greater than 100%"#
            ]
        );
        let mut huge = by_selector();
        huge.spec.min_available = Some(IntOrString::String("99999999999999999999%".into()));
        assert_eq!(create(&huge).len(), 1);
        let mut malformed = by_target();
        malformed.spec.max_unavailable = Some(IntOrString::String("20".into()));
        assert_eq!(
            create(&malformed),
            [
                r#"spec.maxUnavailable: Invalid value: intstr.IntOrString{Type:1, IntVal:0, StrVal:"20"}: a valid percent string must be a numeric string followed by an ending '%' (e.g. '1%',  or '93%', regex used for validation is '[0-9]+%')"#
            ]
        );
        for ok in ["0%", "100%", "7%"] {
            let mut pub_ = by_target();
            pub_.spec.max_unavailable = Some(IntOrString::String(ok.into()));
            assert_eq!(create(&pub_), Vec::<String>::new(), "{ok}");
        }
    }

    #[test]
    fn protect_operations_are_known() {
        let mut pub_ = by_target();
        pub_.spec.protect_operations = vec![beta::PubOperation::Delete, "PATCH".into()];
        assert_eq!(
            create(&pub_),
            [
                r#"spec.protectOperations[1]: Unsupported value: "PATCH": supported values: "DELETE", "UPDATE", "EVICT", "RESIZE""#
            ]
        );
    }

    #[test]
    fn total_replicas_annotation_is_an_int32_agreeing_with_the_spec() {
        let mut bad = by_target();
        annotate(&mut bad, PUB_PROTECT_TOTAL_REPLICAS, "%%");
        assert_eq!(
            create(&bad),
            [
                r#"metadata.annotations[pub.kruise.io/protect-total-replicas]: Invalid value: "%%": must be a valid int32"#
            ]
        );
        let mut too_big = by_target();
        annotate(&mut too_big, PUB_PROTECT_TOTAL_REPLICAS, "2147483648");
        assert_eq!(create(&too_big).len(), 1);
        let mut ok = by_target();
        annotate(&mut ok, PUB_PROTECT_TOTAL_REPLICAS, "1000");
        assert_eq!(create(&ok), Vec::<String>::new());
        ok.spec.protect_total_replicas = Some(1000);
        assert_eq!(create(&ok), Vec::<String>::new());
        ok.spec.protect_total_replicas = Some(10);
        assert_eq!(
            create(&ok),
            [
                r#"metadata.annotations[pub.kruise.io/protect-total-replicas]: Invalid value: "1000": must match spec.protectTotalReplicas when both are set"#
            ]
        );
    }

    #[test]
    fn v1beta1_ignores_the_deprecated_operations_annotation() {
        for value in ["xxxxx", "EVICT,DELETE,UPDATE,RESIZE", ""] {
            let mut pub_ = by_target();
            annotate(&mut pub_, PUB_PROTECT_OPERATIONS, value);
            assert_eq!(create(&pub_), Vec::<String>::new(), "{value}");
        }
    }

    fn alpha_budget(annotations: &[(&str, &str)]) -> alpha::PodUnavailableBudget {
        alpha::PodUnavailableBudget {
            metadata: ObjectMeta {
                namespace: Some("default".into()),
                name: Some("alpha-pub-handle-test".into()),
                annotations: Some(labels(annotations)),
                ..ObjectMeta::default()
            },
            spec: alpha::PodUnavailableBudgetSpec {
                selector: Some(selector(&[("app", "handle-test")])),
                max_unavailable: Some(IntOrString::String("20%".into())),
                ..Default::default()
            },
            status: None,
        }
    }

    #[test]
    fn v1alpha1_annotations_are_checked_then_the_v1beta1_rules() {
        let none = OtherBudgets::Listed(&[]);
        let ok = alpha_budget(&[
            (PUB_PROTECT_OPERATIONS, "DELETE, EVICT"),
            (PUB_PROTECT_TOTAL_REPLICAS, "10"),
        ]);
        assert_eq!(validate_pub_v1alpha1_create(&ok, none).messages(), Vec::<String>::new());
        let bogus = alpha_budget(&[(PUB_PROTECT_OPERATIONS, "DELETE,BOGUS")]);
        assert_eq!(
            validate_pub_v1alpha1_create(&bogus, none).messages(),
            [
                r#"metadata.annotations[kruise.io/pub-protect-operations]: Unsupported value: "BOGUS": supported values: "DELETE", "UPDATE", "EVICT", "RESIZE""#
            ]
        );
        let replicas = alpha_budget(&[(PUB_PROTECT_TOTAL_REPLICAS, "not-a-number")]);
        assert_eq!(
            validate_pub_v1alpha1_create(&replicas, none).messages(),
            [
                r#"metadata.annotations[pub.kruise.io/protect-total-replicas]: Invalid value: "not-a-number": must be a valid int32"#
            ]
        );
        let old = alpha_budget(&[]);
        assert_eq!(validate_pub_v1alpha1_update(&old, &old, none).messages(), Vec::<String>::new());
        let mut changed = old.clone();
        changed.spec.selector = Some(selector(&[("app", "changed")]));
        assert_eq!(
            validate_pub_v1alpha1_update(&changed, &old, none).messages(),
            ["spec.selector, targetRef: Required value: selector and targetRef cannot be modified"]
        );
    }

    #[test]
    fn selector_and_target_reference_cannot_change() {
        let none = OtherBudgets::Listed(&[]);
        let old = by_target();
        assert!(validate_pub_update(&old, &old, none).is_empty());
        let mut moved = old.clone();
        moved.spec.target_reference = Some(target("deployment-changed"));
        assert_eq!(
            validate_pub_update(&moved, &old, none).messages(),
            ["spec.selector, targetRef: Required value: selector and targetRef cannot be modified"]
        );
        let old = by_selector();
        let mut moved = old.clone();
        moved.spec.selector = Some(selector(&[("app", "pub-changed")]));
        assert_eq!(
            validate_pub_update(&moved, &old, none).messages(),
            ["spec.selector, targetRef: Required value: selector and targetRef cannot be modified"]
        );
        // Other fields may change.
        let mut budget = old.clone();
        budget.spec.min_available = Some(IntOrString::String("50%".into()));
        assert!(validate_pub_update(&budget, &old, none).is_empty());
    }

    #[test]
    fn two_budgets_may_not_guard_the_same_workload() {
        let mine = by_target();
        let mut one = named(by_target(), "pub1");
        one.spec.target_reference = Some(target("deployment-test1"));
        let mut two = named(by_target(), "pub2");
        two.spec.target_reference = Some(target("deployment-test2"));
        let others = [one.clone(), two.clone()];
        assert!(validate_pub_create(&mine, OtherBudgets::Listed(&others)).is_empty());
        one.spec.target_reference = Some(target("deployment-test"));
        let others = [one, two];
        assert_eq!(
            validate_pub_create(&mine, OtherBudgets::Listed(&others)).messages(),
            [
                r#"spec.targetReference: Invalid value: v1beta1.TargetReference{APIVersion:"apps", Kind:"Deployment", Name:"deployment-test"}: pub.spec.targetReference is in conflict with other PodUnavailableBudget pub1"#
            ]
        );
        // The group decides, not the version: "apps" alone is a version of the core group.
        let mut v1 = named(by_target(), "pub3");
        v1.spec.target_reference =
            Some(TargetReference { api_version: "apps/v1".into(), ..target("deployment-test") });
        let mut mine_v1beta1 = by_target();
        mine_v1beta1.spec.target_reference = Some(TargetReference {
            api_version: "apps/v1beta1".into(),
            ..target("deployment-test")
        });
        let others = [v1];
        assert_eq!(validate_pub_create(&mine_v1beta1, OtherBudgets::Listed(&others)).len(), 1);
        assert!(validate_pub_create(&mine, OtherBudgets::Listed(&others)).is_empty());
        // The budget itself, found among the others on update, is no conflict.
        let itself = [by_target()];
        assert!(validate_pub_create(&mine, OtherBudgets::Listed(&itself)).is_empty());
    }

    #[test]
    fn two_budgets_may_not_have_overlapping_selectors() {
        let mine = by_selector();
        let mut one = named(by_selector(), "pub1");
        one.spec.selector = Some(selector(&[("app", "pub1-controller")]));
        let mut two = named(by_selector(), "pub2");
        two.spec.selector = Some(selector(&[("app", "pub2-controller")]));
        let others = [one.clone(), two.clone()];
        assert!(validate_pub_create(&mine, OtherBudgets::Listed(&others)).is_empty());
        one.spec.selector = Some(selector(&[("app", "pub-controller")]));
        let others = [one.clone(), two.clone()];
        assert_eq!(
            validate_pub_create(&mine, OtherBudgets::Listed(&others)).messages(),
            [
                r#"spec.selector: Invalid value: v1.LabelSelector{MatchLabels:map[string]string{"app":"pub-controller"}, MatchExpressions:[]v1.LabelSelectorRequirement(nil)}: pub.spec.selector is in conflict with other PodUnavailableBudget pub1"#
            ]
        );
        // Budgets of other namespaces never conflict.
        one.metadata.namespace = Some("pub1".into());
        let others = [one, two];
        assert!(validate_pub_create(&mine, OtherBudgets::Listed(&others)).is_empty());
    }

    #[test]
    fn an_unlisted_namespace_is_an_internal_error() {
        assert_eq!(
            validate_pub_create(&by_target(), OtherBudgets::Unavailable("timeout")).messages(),
            ["[]: Internal error: query other podUnavailableBudget failed, err: timeout"]
        );
    }

    fn expr(key: &str, operator: &str, values: &[&str]) -> LabelSelectorRequirement {
        LabelSelectorRequirement {
            key: key.into(),
            operator: operator.into(),
            values: Some(values.iter().map(|v| (*v).to_owned()).collect()),
        }
    }

    fn exprs(items: Vec<LabelSelectorRequirement>) -> LabelSelector {
        LabelSelector { match_labels: None, match_expressions: Some(items) }
    }

    #[test]
    fn loose_overlap_follows_upstream() {
        let a_in_bc = exprs(vec![expr("a", "In", &["b", "c"])]);
        let cases = [
            (exprs(vec![expr("a", "Exists", &[])]), true),
            (exprs(vec![expr("a", "In", &["c", "x"])]), true),
            (exprs(vec![expr("a", "In", &["x"])]), false),
            (exprs(vec![expr("a", "NotIn", &["b"])]), true),
            (exprs(vec![expr("a", "NotIn", &["b", "c", "e"])]), false),
            (exprs(vec![expr("a", "DoesNotExist", &[])]), false),
            (selector(&[("a", "b")]), true),
            (selector(&[("x", "b")]), false),
            (exprs(vec![expr("a", "In", &["b"]), expr("z", "Exists", &[])]), false),
        ];
        for (other, want) in cases {
            assert_eq!(selectors_loosely_overlap(&a_in_bc, &other), want, "{other:?}");
            assert_eq!(selectors_loosely_overlap(&other, &a_in_bc), want, "{other:?}");
        }
        let not_exist = exprs(vec![expr("a", "DoesNotExist", &[])]);
        assert!(selectors_loosely_overlap(&not_exist, &exprs(vec![expr("a", "NotIn", &["q"])])));
        assert!(selectors_loosely_overlap(&not_exist, &not_exist));
    }

    fn arb_int_or_string() -> impl Strategy<Value = IntOrString> {
        prop_oneof![
            any::<i32>().prop_map(IntOrString::Int),
            "[0-9%a-z-]{0,6}".prop_map(IntOrString::String),
            "[0-9]{1,25}%".prop_map(IntOrString::String),
        ]
    }

    fn arb_selector() -> impl Strategy<Value = LabelSelector> {
        let requirement = (
            "[a-c/.]{0,3}",
            prop_oneof![Just("In"), Just("NotIn"), Just("Exists"), Just("DoesNotExist"), Just("")],
            proptest::option::of(proptest::collection::vec("[a-c]{0,2}", 0..3)),
        )
            .prop_map(|(key, operator, values)| LabelSelectorRequirement {
                key,
                operator: operator.to_owned(),
                values,
            });
        (
            proptest::option::of(proptest::collection::btree_map(
                "[a-c/]{0,3}",
                "[a-c.]{0,2}",
                0..3,
            )),
            proptest::option::of(proptest::collection::vec(requirement, 0..3)),
        )
            .prop_map(|(match_labels, match_expressions)| LabelSelector {
                match_labels,
                match_expressions,
            })
    }

    fn arb_target() -> impl Strategy<Value = TargetReference> {
        ("[a-z/]{0,5}", "[A-Za-z]{0,3}", "[a-z]{0,3}")
            .prop_map(|(api_version, kind, name)| TargetReference { api_version, kind, name })
    }

    fn arb_budget() -> impl Strategy<Value = PodUnavailableBudget> {
        let spec = (
            proptest::option::of(arb_selector()),
            proptest::option::of(arb_target()),
            proptest::option::of(arb_int_or_string()),
            proptest::option::of(arb_int_or_string()),
            proptest::collection::vec("[A-Z]{0,7}", 0..4),
            proptest::option::of(any::<i32>()),
            proptest::option::of(arb_selector()),
        );
        let annotations = proptest::option::of(proptest::collection::btree_map(
            prop_oneof![
                Just(PUB_PROTECT_TOTAL_REPLICAS.to_owned()),
                Just(PUB_PROTECT_OPERATIONS.to_owned()),
                "[a-z]{1,3}",
            ],
            "[-+0-9A-Z, ]{0,12}",
            0..3,
        ));
        (spec, annotations, "[a-c]{1,2}").prop_map(|(spec, annotations, name)| {
            let (selector, target_reference, max_unavailable, min_available, ops, total, ignored) =
                spec;
            PodUnavailableBudget {
                metadata: ObjectMeta {
                    namespace: Some("default".into()),
                    name: Some(name),
                    annotations,
                    ..ObjectMeta::default()
                },
                spec: beta::PodUnavailableBudgetSpec {
                    selector,
                    target_reference,
                    max_unavailable,
                    min_available,
                    protect_operations: ops
                        .iter()
                        .map(|o| beta::PubOperation::from(o.as_str()))
                        .collect(),
                    protect_total_replicas: total,
                    ignored_pod_selector: ignored,
                },
                status: None,
            }
        })
    }

    proptest! {
        #[test]
        fn validation_never_panics(
            pub_ in arb_budget(),
            old in arb_budget(),
            others in proptest::collection::vec(arb_budget(), 0..4),
        ) {
            let errs = validate_pub_create(&pub_, OtherBudgets::Listed(&others));
            let _ = errs.to_string();
            let errs = validate_pub_update(&pub_, &old, OtherBudgets::Listed(&others));
            // An update is checked at least as strictly as a create.
            prop_assert!(errs.len() >= validate_pub_create(&pub_, OtherBudgets::Listed(&others)).len());
            let alpha_pub = alpha::PodUnavailableBudget::map_from_hub(pub_.clone());
            let alpha_old = alpha::PodUnavailableBudget::map_from_hub(old);
            let _ = validate_pub_v1alpha1_create(&alpha_pub, OtherBudgets::Listed(&others)).to_string();
            let _ = validate_pub_v1alpha1_update(&alpha_pub, &alpha_old, OtherBudgets::Unavailable("x")).to_string();
        }

        #[test]
        fn the_budget_itself_is_never_a_conflict(pub_ in arb_budget()) {
            // The budget being validated, listed among the others (an update), adds no error.
            prop_assert_eq!(
                validate_pub_create(&pub_, OtherBudgets::Listed(&[])),
                validate_pub_create(&pub_, OtherBudgets::Listed(std::slice::from_ref(&pub_)))
            );
        }
    }
}
