//! Object metadata, labels, annotations and label selectors, validated as Kubernetes'
//! `ValidateObjectMeta`, `ValidateObjectMetaUpdate` and `ValidateLabelSelector` do. Parsing and
//! matching selectors is [`crate::selector`]'s (re-exported here).

use std::collections::BTreeMap;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::{
    LabelSelector, ObjectMeta, OwnerReference, Time,
};

use crate::field::{BadValue, FieldError, FieldPath, go};
use crate::names::{is_qualified_name, is_valid_label_value, name_is_dns_label};

/// Label selectors are parsed and matched in the base [`crate::selector`] module; these paths
/// are kept for callers.
pub use crate::selector::{
    RequirementView, Selector, label_selector_as_selector, label_selector_from_str,
    selectors_semantically_equal,
};

/// `IsNegativeErrorMsg`.
pub const IS_NEGATIVE_ERROR_MSG: &str = "must be greater than or equal to 0";
/// `FieldImmutableErrorMsg`.
pub const FIELD_IMMUTABLE_ERROR_MSG: &str = "field is immutable";
/// The total size annotations may have, in bytes.
pub const TOTAL_ANNOTATION_SIZE_LIMIT_BYTES: usize = 256 * 1024;

/// Finalizers Kubernetes itself defines, which need no domain prefix.
const STANDARD_FINALIZERS: &[&str] = &["kubernetes", "orphan", "foregroundDeletion"];

/// A name checker (`ValidateNameFunc`): the name and whether it is a `generateName` prefix.
pub type NameFn = fn(&str, bool) -> Vec<String>;

/// `ValidateNonnegativeField`.
pub fn validate_nonnegative(value: i64, path: &FieldPath) -> Vec<FieldError> {
    if value < 0 {
        vec![FieldError::invalid(path, value, IS_NEGATIVE_ERROR_MSG)]
    } else {
        Vec::new()
    }
}

/// `ValidateLabelName`.
pub fn validate_label_name(name: &str, path: &FieldPath) -> Vec<FieldError> {
    is_qualified_name(name).into_iter().map(|msg| FieldError::invalid(path, name, msg)).collect()
}

/// `ValidateLabels`: every key a qualified name, every value a label value; errors name the map
/// itself, not the key.
pub fn validate_labels(
    labels: Option<&BTreeMap<String, String>>,
    path: &FieldPath,
) -> Vec<FieldError> {
    let mut errs = Vec::new();
    for (key, value) in labels.into_iter().flatten() {
        errs.extend(validate_label_name(key, path));
        for msg in is_valid_label_value(value) {
            errs.push(FieldError::invalid(path, value, msg));
        }
    }
    errs
}

/// `ValidateAnnotations`: keys are qualified names ignoring case; the total size is limited.
pub fn validate_annotations(
    annotations: Option<&BTreeMap<String, String>>,
    path: &FieldPath,
) -> Vec<FieldError> {
    let mut errs = Vec::new();
    let mut total = 0usize;
    for (key, value) in annotations.into_iter().flatten() {
        for msg in is_qualified_name(&key.to_lowercase()) {
            errs.push(FieldError::invalid(path, key, msg));
        }
        total = total.saturating_add(key.len()).saturating_add(value.len());
    }
    if total > TOTAL_ANNOTATION_SIZE_LIMIT_BYTES {
        errs.push(FieldError::too_long(path, TOTAL_ANNOTATION_SIZE_LIMIT_BYTES));
    }
    errs
}

/// `%#v` of an owner reference (pointer fields cannot be reproduced; non-nil ones print a
/// placeholder address).
fn go_owner_reference(r: &OwnerReference) -> String {
    let ptr = |b: Option<bool>| match b {
        None => "(*bool)(nil)".to_owned(),
        Some(_) => "(*bool)(0xc000000000)".to_owned(),
    };
    format!(
        "v1.OwnerReference{{APIVersion:{}, Kind:{}, Name:{}, UID:{}, Controller:{}, BlockOwnerDeletion:{}}}",
        go::quote(&r.api_version),
        go::quote(&r.kind),
        go::quote(&r.name),
        go::quote(&r.uid),
        ptr(r.controller),
        ptr(r.block_owner_deletion)
    )
}

fn validate_owner_reference(r: &OwnerReference, path: &FieldPath) -> Vec<FieldError> {
    let mut errs = Vec::new();
    let parts: Vec<&str> = r.api_version.split('/').collect();
    let (group, version, parsed) = match parts.as_slice() {
        [""] => ("", "", true),
        [version] => ("", *version, true),
        [group, version] => (*group, *version, true),
        _ => ("", "", false),
    };
    if r.api_version.is_empty() {
        errs.push(FieldError::required(&path.child("apiVersion"), "must not be empty"));
    } else if !parsed || version.is_empty() {
        errs.push(FieldError::invalid(
            &path.child("apiVersion"),
            &r.api_version,
            "must be <group>/<version> or <version>",
        ));
    }
    if r.kind.is_empty() {
        errs.push(FieldError::required(&path.child("kind"), "must not be empty"));
    }
    if r.name.is_empty() {
        errs.push(FieldError::required(&path.child("name"), "must not be empty"));
    }
    if r.uid.is_empty() {
        errs.push(FieldError::required(&path.child("uid"), "must not be empty"));
    }
    if group.is_empty() && version == "v1" && r.kind == "Event" {
        errs.push(FieldError::invalid(
            path,
            BadValue::Go(go_owner_reference(r)),
            "/v1, Kind=Event is disallowed from being an owner",
        ));
    }
    errs
}

/// `ValidateOwnerReferences`.
pub fn validate_owner_references(refs: &[OwnerReference], path: &FieldPath) -> Vec<FieldError> {
    let mut errs = Vec::new();
    let mut first_controller: Option<String> = None;
    for (i, r) in refs.iter().enumerate() {
        errs.extend(validate_owner_reference(r, &path.index(i)));
        if r.controller == Some(true) {
            let current = format!("{}/{}", r.kind, r.name);
            match &first_controller {
                Some(first) => {
                    let all: Vec<String> = refs.iter().map(go_owner_reference).collect();
                    errs.push(FieldError::invalid(
                        path,
                        BadValue::Go(format!("[]v1.OwnerReference{{{}}}", all.join(", "))),
                        format!(
                            "Only one reference can have Controller set to true. Found \"true\" in references for {first} and {current}"
                        ),
                    ));
                }
                None => first_controller = Some(current),
            }
        }
    }
    errs
}

/// `ValidateFinalizers`: names are qualified names (reported against the list) and
/// `orphan` / `foregroundDeletion` exclude each other.
pub fn validate_finalizers(finalizers: &[String], path: &FieldPath) -> Vec<FieldError> {
    let mut errs = Vec::new();
    for finalizer in finalizers {
        for msg in is_qualified_name(finalizer) {
            errs.push(FieldError::invalid(path, finalizer, msg));
        }
    }
    let has = |name: &str| finalizers.iter().any(|f| f == name);
    if has("orphan") && has("foregroundDeletion") {
        errs.push(FieldError::invalid(
            path,
            BadValue::Go(go::string_slice(Some(finalizers))),
            "finalizer orphan and foregroundDeletion cannot be both set",
        ));
    }
    errs
}

/// The core wrapper's extra finalizer check: a name without a `/` must be a standard one.
fn validate_kube_finalizer_names(finalizers: &[String], path: &FieldPath) -> Vec<FieldError> {
    finalizers
        .iter()
        .enumerate()
        .filter(|(_, f)| !f.contains('/') && !STANDARD_FINALIZERS.contains(&f.as_str()))
        .map(|(i, f)| {
            FieldError::invalid(
                &path.index(i),
                f,
                "name is neither a standard finalizer name nor is it fully qualified",
            )
        })
        .collect()
}

/// Core's `ValidateObjectMeta` on create: generateName, name, namespace, generation, labels,
/// annotations, owner references and finalizers. `managedFields` are not checked.
pub fn validate_object_meta(
    meta: &ObjectMeta,
    requires_namespace: bool,
    name_fn: NameFn,
    path: &FieldPath,
) -> Vec<FieldError> {
    let mut errs = Vec::new();
    if let Some(generate_name) = meta.generate_name.as_deref().filter(|g| !g.is_empty()) {
        for msg in name_fn(generate_name, true) {
            errs.push(FieldError::invalid(&path.child("generateName"), generate_name, msg));
        }
    }
    match meta.name.as_deref().filter(|n| !n.is_empty()) {
        None => {
            errs.push(FieldError::required(&path.child("name"), "name or generateName is required"))
        }
        Some(name) => {
            for msg in name_fn(name, false) {
                errs.push(FieldError::invalid(&path.child("name"), name, msg));
            }
        }
    }
    let namespace = meta.namespace.as_deref().unwrap_or("");
    if requires_namespace {
        if namespace.is_empty() {
            errs.push(FieldError::required(&path.child("namespace"), ""));
        } else {
            for msg in name_is_dns_label(namespace, false) {
                errs.push(FieldError::invalid(&path.child("namespace"), namespace, msg));
            }
        }
    } else if !namespace.is_empty() {
        errs.push(FieldError::forbidden(&path.child("namespace"), "not allowed on this type"));
    }
    errs.extend(validate_nonnegative(meta.generation.unwrap_or(0), &path.child("generation")));
    errs.extend(validate_labels(meta.labels.as_ref(), &path.child("labels")));
    errs.extend(validate_annotations(meta.annotations.as_ref(), &path.child("annotations")));
    let owners = meta.owner_references.as_deref().unwrap_or_default();
    errs.extend(validate_owner_references(owners, &path.child("ownerReferences")));
    let finalizers = meta.finalizers.as_deref().unwrap_or_default();
    errs.extend(validate_finalizers(finalizers, &path.child("finalizers")));
    errs.extend(validate_kube_finalizer_names(finalizers, &path.child("finalizers")));
    errs
}

/// `time.Time.String()` of a metav1 time as the webhook (running in UTC) prints it.
fn go_time(time: Option<&Time>) -> String {
    match time {
        None => "0001-01-01 00:00:00 +0000 UTC".to_owned(),
        Some(t) => {
            let utc = t.0.to_zoned(jiff::tz::TimeZone::UTC);
            let mut out = utc.strftime("%Y-%m-%d %H:%M:%S").to_string();
            let nanos = utc.subsec_nanosecond();
            if nanos != 0 {
                let frac = format!("{nanos:09}");
                out.push('.');
                out.push_str(frac.trim_end_matches('0'));
            }
            out.push_str(" +0000 UTC");
            out
        }
    }
}

/// Core's `ValidateObjectMetaUpdate`: what may not change, and the new labels, annotations and
/// owner references.
pub fn validate_object_meta_update(
    new: &ObjectMeta,
    old: &ObjectMeta,
    path: &FieldPath,
) -> Vec<FieldError> {
    let mut errs = Vec::new();
    let new_finalizers = new.finalizers.as_deref().unwrap_or_default();
    if old.deletion_timestamp.is_some() {
        let old_finalizers = old.finalizers.as_deref().unwrap_or_default();
        let mut extra: Vec<String> =
            new_finalizers.iter().filter(|f| !old_finalizers.contains(f)).cloned().collect();
        extra.sort();
        extra.dedup();
        if !extra.is_empty() {
            errs.push(FieldError::forbidden(
                &path.child("finalizers"),
                format!(
                    "no new finalizers can be added if the object is being deleted, found new finalizers {}",
                    go::string_slice(Some(&extra))
                ),
            ));
        }
    }
    let resource_version = new.resource_version.as_deref().unwrap_or("");
    if resource_version.is_empty() {
        errs.push(FieldError::invalid(
            &path.child("resourceVersion"),
            resource_version,
            "must be specified for an update",
        ));
    }
    let new_generation = new.generation.unwrap_or(0);
    errs.extend(validate_nonnegative(new_generation, &path.child("generation")));
    if new_generation < old.generation.unwrap_or(0) {
        errs.push(FieldError::invalid(
            &path.child("generation"),
            new_generation,
            "must not be decremented",
        ));
    }
    let immutable = |errs: &mut Vec<FieldError>, changed: bool, field: &str, value: BadValue| {
        if changed {
            errs.push(FieldError::invalid(&path.child(field), value, FIELD_IMMUTABLE_ERROR_MSG));
        }
    };
    let text = |s: &Option<String>| s.clone().unwrap_or_default();
    immutable(&mut errs, text(&new.name) != text(&old.name), "name", text(&new.name).into());
    immutable(
        &mut errs,
        text(&new.namespace) != text(&old.namespace),
        "namespace",
        text(&new.namespace).into(),
    );
    immutable(&mut errs, text(&new.uid) != text(&old.uid), "uid", text(&new.uid).into());
    immutable(
        &mut errs,
        new.creation_timestamp != old.creation_timestamp,
        "creationTimestamp",
        BadValue::Go(go_time(new.creation_timestamp.as_ref())),
    );
    immutable(
        &mut errs,
        new.deletion_timestamp != old.deletion_timestamp,
        "deletionTimestamp",
        new.deletion_timestamp.as_ref().map_or(BadValue::Null, |t| BadValue::Go(go_time(Some(t)))),
    );
    immutable(
        &mut errs,
        new.deletion_grace_period_seconds != old.deletion_grace_period_seconds,
        "deletionGracePeriodSeconds",
        new.deletion_grace_period_seconds.into(),
    );
    errs.extend(validate_labels(new.labels.as_ref(), &path.child("labels")));
    errs.extend(validate_annotations(new.annotations.as_ref(), &path.child("annotations")));
    let owners = new.owner_references.as_deref().unwrap_or_default();
    errs.extend(validate_owner_references(owners, &path.child("ownerReferences")));
    errs.extend(validate_kube_finalizer_names(new_finalizers, &path.child("finalizers")));
    errs
}

/// Options of [`validate_label_selector`] (`LabelSelectorValidationOptions`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct LabelSelectorOptions {
    /// Accept invalid label values in `matchExpressions`.
    pub allow_invalid_label_value: bool,
}

/// `ValidateLabelSelector`.
pub fn validate_label_selector(
    selector: Option<&LabelSelector>,
    options: LabelSelectorOptions,
    path: &FieldPath,
) -> Vec<FieldError> {
    let Some(selector) = selector else {
        return Vec::new();
    };
    let mut errs = validate_labels(selector.match_labels.as_ref(), &path.child("matchLabels"));
    for (i, expr) in selector.match_expressions.iter().flatten().enumerate() {
        let p = path.child("matchExpressions").index(i);
        let values = expr.values.as_deref().unwrap_or_default();
        match expr.operator.as_str() {
            "In" | "NotIn" => {
                if values.is_empty() {
                    errs.push(FieldError::required(
                        &p.child("values"),
                        "must be specified when `operator` is 'In' or 'NotIn'",
                    ));
                }
            }
            "Exists" | "DoesNotExist" => {
                if !values.is_empty() {
                    errs.push(FieldError::forbidden(
                        &p.child("values"),
                        "may not be specified when `operator` is 'Exists' or 'DoesNotExist'",
                    ));
                }
            }
            other => errs.push(FieldError::invalid(
                &p.child("operator"),
                other,
                "not a valid selector operator",
            )),
        }
        errs.extend(validate_label_name(&expr.key, &p.child("key")));
        if !options.allow_invalid_label_value {
            for (j, value) in values.iter().enumerate() {
                for msg in is_valid_label_value(value) {
                    errs.push(FieldError::invalid(&p.child("values").index(j), value, msg));
                }
            }
        }
    }
    errs
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn object_meta_update_immutables() {
        let old = ObjectMeta {
            name: Some("a".into()),
            namespace: Some("ns".into()),
            resource_version: Some("1".into()),
            ..Default::default()
        };
        let mut new = old.clone();
        new.name = Some("b".into());
        new.resource_version = None;
        let errs: Vec<String> =
            validate_object_meta_update(&new, &old, &FieldPath::new("metadata"))
                .iter()
                .map(ToString::to_string)
                .collect();
        assert_eq!(
            errs,
            vec![
                "metadata.resourceVersion: Invalid value: \"\": must be specified for an update",
                "metadata.name: Invalid value: \"b\": field is immutable",
            ]
        );
    }
}
