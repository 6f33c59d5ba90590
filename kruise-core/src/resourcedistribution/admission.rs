//! ResourceDistribution validation, as upstream's `vresourcedistribution.kb.io` does it:
//! `spec.resource` must be a Secret or a ConfigMap with a name, and its apiVersion, kind and
//! name never change; the listed namespaces must be valid names and not both included and
//! excluded; `namespaceSelector` must parse.
//!
//! Upstream also creates the resource with `dryRun=All` in the manager's namespace, so that
//! kube-apiserver validates its body; the webhook in kruise-kube does that after these rules.

use kruise_api::apps::v1beta1::{ResourceDistribution, ResourceDistributionTargets};

use super::Resource;
use crate::field::{BadValue, FieldError, FieldErrors, FieldPath};
use crate::names::is_dns1123_label;
use crate::selector::label_selector_as_selector;

/// Upstream's checks of a ResourceDistribution (`old`: the stored one, on update).
pub fn validate_resource_distribution(
    distribution: &ResourceDistribution,
    old: Option<&ResourceDistribution>,
) -> FieldErrors {
    let mut errs = FieldErrors::new();
    let spec = FieldPath::new("spec");
    let path = spec.child("resource");
    match Resource::parse(&distribution.spec.resource.0) {
        Err(err) => errs.push(FieldError::invalid(&path, BadValue::Null, err.to_string())),
        Ok(resource) => {
            let old = old.and_then(|o| Resource::parse(&o.spec.resource.0).ok());
            let changed = old.is_some_and(|old| {
                (old.api_version, old.kind, old.name)
                    != (resource.api_version, resource.kind, resource.name)
            });
            if changed {
                errs.push(FieldError::invalid(
                    &path,
                    BadValue::Null,
                    "resource apiVersion, kind, and name are immutable",
                ));
            }
        }
    }
    errs.extend(validate_targets(&distribution.spec.targets, &spec.child("targets")));
    errs
}

fn validate_targets(targets: &ResourceDistributionTargets, path: &FieldPath) -> Vec<FieldError> {
    let mut errs = Vec::new();
    let included_path = path.child("includedNamespaces");
    for namespace in &targets.included_namespaces.list {
        for message in is_dns1123_label(&namespace.name) {
            errs.push(FieldError::invalid(&included_path, namespace.name.as_str(), message));
        }
    }
    let excluded_path = path.child("excludedNamespaces");
    let mut ambiguous = Vec::new();
    for namespace in &targets.excluded_namespaces.list {
        for message in is_dns1123_label(&namespace.name) {
            errs.push(FieldError::invalid(&excluded_path, namespace.name.as_str(), message));
        }
        if targets.included_namespaces.list.iter().any(|i| i.name == namespace.name) {
            ambiguous.push(namespace.name.as_str());
        }
    }
    if !ambiguous.is_empty() {
        errs.push(FieldError::invalid(
            path,
            BadValue::Go(serde_json::to_string(targets).unwrap_or_default()),
            format!(
                "ambiguous targets because namespace [{}] is in both IncludedNamespaces.List and ExcludedNamespaces.List",
                ambiguous.join(" ")
            ),
        ));
    }
    if let Err(err) = label_selector_as_selector(Some(&targets.namespace_selector)) {
        errs.push(FieldError::invalid(
            &path.child("namespaceSelector"),
            BadValue::Go(serde_json::to_string(&targets.namespace_selector).unwrap_or_default()),
            format!("labelSelectorAsSelector error: {err}"),
        ));
    }
    errs
}
