//! The spec checks every workload kind with a pod selector and template shares (CloneSet,
//! Advanced StatefulSet, Advanced DaemonSet, SidecarSet's strategies), as upstream's
//! `validateCloneSetSpec` and the strategies' `FieldsValidation` make them.

use std::collections::{BTreeMap, BTreeSet};

use k8s_openapi::api::core::v1::{
    PersistentVolumeClaim, PersistentVolumeClaimVolumeSource, PodTemplateSpec, Volume,
};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector;
use kruise_api::Embedded;
use kruise_api::apps::common::{UpdatePriorityStrategy, UpdateScatterTerm};

use super::meta::{LabelSelectorOptions, validate_label_selector};
use super::pod_defaults::{PodDefaultsOptions, default_pod_spec_with};
use super::pod_template::validate_pod_template_spec;
use crate::field::{BadValue, FieldError, FieldPath, go};
use crate::selector::label_selector_as_selector;

/// The selector checks every workload with a pod selector makes: it is required, valid and
/// not empty, and it must match the template's labels. `kind` names the workload in
/// messages. Also says whether the selector parsed (upstream checks the template only then).
pub fn validate_selector_against_template(
    selector: Option<&LabelSelector>,
    template: &PodTemplateSpec,
    kind: &str,
    path: &FieldPath,
) -> (Vec<FieldError>, bool) {
    let mut errs = Vec::new();
    let selector_path = path.child("selector");
    match selector {
        None => errs.push(FieldError::required(&selector_path, "")),
        Some(sel) => {
            errs.extend(validate_label_selector(
                Some(sel),
                LabelSelectorOptions::default(),
                &selector_path,
            ));
            let count = sel.match_labels.as_ref().map_or(0, BTreeMap::len)
                + sel.match_expressions.as_ref().map_or(0, Vec::len);
            if count == 0 {
                errs.push(FieldError::invalid(
                    &selector_path,
                    BadValue::Go(go::label_selector(sel)),
                    format!("empty selector is invalid for {kind}"),
                ));
            }
        }
    }
    match label_selector_as_selector(selector) {
        Err(_) => {
            errs.push(FieldError::invalid(
                &selector_path,
                selector.map_or(BadValue::Null, |s| BadValue::Go(go::label_selector(s))),
                "",
            ));
            (errs, false)
        }
        Ok(parsed) => {
            let empty = BTreeMap::new();
            let labels = template.metadata.as_ref().and_then(|m| m.labels.as_ref());
            if !parsed.is_empty() && !parsed.matches(labels.unwrap_or(&empty)) {
                errs.push(FieldError::invalid(
                    &path.child("template").child("metadata").child("labels"),
                    BadValue::Go(go::string_map(labels)),
                    "`selector` does not match template `labels`",
                ));
            }
            (errs, true)
        }
    }
}

/// `validateCloneSetSpec`'s checks of the selector and the template, shared by workloads that
/// have both: the selector is required, valid and not empty; it must match the template's
/// labels; the template (defaulted as upstream does before validating it, with the volume
/// claim templates mounted as PVC volumes) must be a valid pod template; its restart policy
/// must be `Always` and it may not set `activeDeadlineSeconds`. `kind` names the workload in
/// messages (`cloneset`).
pub fn validate_selector_and_template(
    selector: Option<&LabelSelector>,
    template: &PodTemplateSpec,
    claims: &[Embedded<PersistentVolumeClaim>],
    kind: &str,
    path: &FieldPath,
) -> Vec<FieldError> {
    // Upstream defaults the template in place before validating it, so the checks after
    // this one see the defaulted template when the selector parsed.
    let mut checked = template.clone();
    let (mut errs, parsed) = validate_selector_against_template(selector, template, kind, path);
    if parsed {
        default_pod_spec_with(
            checked.spec.get_or_insert_with(Default::default),
            PodDefaultsOptions::default(),
        );
        let mut with_claims = checked.clone();
        if let Some(spec) = &mut with_claims.spec {
            let volumes = spec.volumes.get_or_insert_with(Vec::new);
            for claim in claims {
                let name = claim.metadata.name.clone().unwrap_or_default();
                volumes.push(Volume {
                    name: name.clone(),
                    persistent_volume_claim: Some(PersistentVolumeClaimVolumeSource {
                        claim_name: name,
                        read_only: Some(false),
                    }),
                    ..Default::default()
                });
            }
        }
        errs.extend(validate_pod_template_spec(&with_claims, &path.child("template")));
    }
    let spec = checked.spec.unwrap_or_default();
    let spec_path = path.child("template").child("spec");
    if let Some(policy) = spec.restart_policy.as_ref().filter(|p| !p.is_empty() && *p != "Always") {
        errs.push(FieldError::not_supported(
            &spec_path.child("restartPolicy"),
            policy,
            &["Always"],
        ));
    }
    if spec.active_deadline_seconds.is_some() {
        errs.push(FieldError::forbidden(
            &spec_path.child("activeDeadlineSeconds"),
            format!("activeDeadlineSeconds in {kind} is not Supported"),
        ));
    }
    errs
}

/// `UpdatePriorityStrategy.FieldsValidation`.
pub fn priority_strategy_error(strategy: &UpdatePriorityStrategy) -> Option<String> {
    if !strategy.weight_priority.is_empty() && !strategy.order_priority.is_empty() {
        return Some("only one of weightPriority and orderPriority can be used".to_owned());
    }
    for term in &strategy.weight_priority {
        if term.weight < 0 || term.weight > 100 {
            return Some("weight must be valid number in the range 1-100".to_owned());
        }
        let selector = &term.match_selector;
        let size = selector.match_labels.as_ref().map_or(0, BTreeMap::len)
            + selector.match_expressions.as_ref().map_or(0, Vec::len);
        if size == 0 {
            return Some("selector can not be empty".to_owned());
        }
        if let Err(err) = label_selector_as_selector(Some(selector)) {
            return Some(format!("invalid selector {err}"));
        }
    }
    if strategy.order_priority.iter().any(|o| o.ordered_key.is_empty()) {
        return Some("order key can not be empty".to_owned());
    }
    None
}

/// `UpdateScatterStrategy.FieldsValidation`.
pub fn scatter_strategy_error(terms: &[UpdateScatterTerm]) -> Option<String> {
    let mut seen = BTreeSet::new();
    for term in terms {
        if term.key.is_empty() {
            return Some("key should not be empty".to_owned());
        }
        if !seen.insert(format!("{}:{}", term.key, term.value)) {
            return Some(format!("duplicated key={} value={}", term.key, term.value));
        }
    }
    None
}
