//! Object metadata, labels, annotations and label selectors, validated as Kubernetes'
//! `ValidateObjectMeta`, `ValidateObjectMetaUpdate` and `ValidateLabelSelector` do.

use std::collections::BTreeMap;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::{
    LabelSelector, ObjectMeta, OwnerReference, Time,
};

use super::field::{BadValue, FieldError, FieldPath, go};
use super::names::{is_qualified_name, is_valid_label_value, name_is_dns_label};

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

/// One requirement of a parsed [`Selector`].
#[derive(Clone, Debug, PartialEq, Eq)]
enum Requirement {
    In(String, Vec<String>),
    NotIn(String, Vec<String>),
    Exists(String),
    DoesNotExist(String),
}

impl Requirement {
    fn matches(&self, labels: &BTreeMap<String, String>) -> bool {
        self.matches_lookup(|key| labels.get(key).map(String::as_str))
    }

    fn matches_lookup<'v>(&self, label: impl Fn(&str) -> Option<&'v str>) -> bool {
        match self {
            Requirement::In(key, values) => {
                label(key).is_some_and(|v| values.iter().any(|w| w == v))
            }
            Requirement::NotIn(key, values) => {
                label(key).is_none_or(|v| !values.iter().any(|w| w == v))
            }
            Requirement::Exists(key) => label(key).is_some(),
            Requirement::DoesNotExist(key) => label(key).is_none(),
        }
    }
}

/// A label selector as `metav1.LabelSelectorAsSelector` builds it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Selector {
    /// From a nil selector: matches nothing and is not empty.
    Nothing,
    /// The requirements; none at all matches everything.
    Requirements(Vec<RequirementView>),
}

/// A requirement of a [`Selector`] (kept opaque).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RequirementView(Requirement);

impl Selector {
    /// Whether the selector has no requirements (matches everything); a nil selector is not
    /// empty.
    pub fn is_empty(&self) -> bool {
        matches!(self, Selector::Requirements(reqs) if reqs.is_empty())
    }

    /// Whether `labels` satisfy the selector.
    pub fn matches(&self, labels: &BTreeMap<String, String>) -> bool {
        match self {
            Selector::Nothing => false,
            Selector::Requirements(reqs) => reqs.iter().all(|r| r.0.matches(labels)),
        }
    }

    /// Whether the labels that `label` looks up satisfy the selector (for labels kept in
    /// another form than a map, such as [`PodFacts`](crate::workload::PodFacts)).
    pub fn matches_lookup<'v>(&self, label: impl Fn(&str) -> Option<&'v str> + Copy) -> bool {
        match self {
            Selector::Nothing => false,
            Selector::Requirements(reqs) => reqs.iter().all(|r| r.0.matches_lookup(label)),
        }
    }
}

/// `labels.NewRequirement`'s checks, with its error text (an aggregate of field errors on the
/// relative paths `key` and `values`).
fn new_requirement(key: &str, op: &str, values: &[String]) -> Result<Requirement, String> {
    let mut errs = Vec::new();
    let key_msgs = is_qualified_name(key);
    if !key_msgs.is_empty() {
        errs.push(FieldError::invalid(&FieldPath::new("key"), key, key_msgs.join("; ")));
    }
    let values_path = FieldPath::new("values");
    let values_value = || BadValue::Go(go::string_slice((!values.is_empty()).then_some(values)));
    match op {
        "in" | "notin" if values.is_empty() => errs.push(FieldError::invalid(
            &values_path,
            values_value(),
            "for 'in', 'notin' operators, values set can't be empty",
        )),
        "=" if values.len() != 1 => errs.push(FieldError::invalid(
            &values_path,
            values_value(),
            "exact-match compatibility requires one single value",
        )),
        "exists" | "!" if !values.is_empty() => errs.push(FieldError::invalid(
            &values_path,
            values_value(),
            "values set must be empty for exists and does not exist",
        )),
        _ => {}
    }
    for (i, value) in values.iter().enumerate() {
        let msgs = is_valid_label_value(value);
        if !msgs.is_empty() {
            errs.push(FieldError::invalid(&values_path.index(i).key(key), value, msgs.join("; ")));
        }
    }
    if !errs.is_empty() {
        return Err(super::field::FieldErrors(errs).to_string());
    }
    Ok(match op {
        "in" | "=" => Requirement::In(key.to_owned(), values.to_vec()),
        "notin" => Requirement::NotIn(key.to_owned(), values.to_vec()),
        "exists" => Requirement::Exists(key.to_owned()),
        _ => Requirement::DoesNotExist(key.to_owned()),
    })
}

/// `metav1.LabelSelectorAsSelector`: the selector, or the text of the first error Go reports.
pub fn label_selector_as_selector(selector: Option<&LabelSelector>) -> Result<Selector, String> {
    let Some(selector) = selector else {
        return Ok(Selector::Nothing);
    };
    let mut reqs = Vec::new();
    for (key, value) in selector.match_labels.iter().flatten() {
        reqs.push(RequirementView(new_requirement(key, "=", std::slice::from_ref(value))?));
    }
    for expr in selector.match_expressions.iter().flatten() {
        let op = match expr.operator.as_str() {
            "In" => "in",
            "NotIn" => "notin",
            "Exists" => "exists",
            "DoesNotExist" => "!",
            other => {
                return Err(format!("{} is not a valid label selector operator", go::quote(other)));
            }
        };
        let values = expr.values.as_deref().unwrap_or_default();
        reqs.push(RequirementView(new_requirement(&expr.key, op, values)?));
    }
    Ok(Selector::Requirements(reqs))
}

/// Whether two selectors are equal as Kubernetes' semantic equality sees them (nil and empty
/// maps and lists are equal).
pub fn selectors_semantically_equal(a: Option<&LabelSelector>, b: Option<&LabelSelector>) -> bool {
    type Normalized = (BTreeMap<String, String>, Vec<(String, String, Vec<String>)>);
    fn norm(s: &LabelSelector) -> Normalized {
        let labels = s.match_labels.clone().unwrap_or_default();
        let exprs = s
            .match_expressions
            .iter()
            .flatten()
            .map(|e| (e.key.clone(), e.operator.clone(), e.values.clone().unwrap_or_default()))
            .collect();
        (labels, exprs)
    }
    match (a, b) {
        (None, None) => true,
        (Some(a), Some(b)) => norm(a) == norm(b),
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelectorRequirement;

    fn labels(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
        pairs.iter().map(|(k, v)| ((*k).to_owned(), (*v).to_owned())).collect()
    }

    #[test]
    fn selector_matching() {
        let sel = LabelSelector {
            match_labels: Some(labels(&[("a", "b")])),
            match_expressions: Some(vec![LabelSelectorRequirement {
                key: "env".into(),
                operator: "NotIn".into(),
                values: Some(vec!["prod".into()]),
            }]),
        };
        let s = label_selector_as_selector(Some(&sel)).expect("valid");
        assert!(s.matches(&labels(&[("a", "b")])));
        assert!(!s.matches(&labels(&[("a", "b"), ("env", "prod")])));
        assert!(!s.matches(&labels(&[])));
        assert!(!label_selector_as_selector(None).expect("nil").matches(&labels(&[])));
        assert!(!label_selector_as_selector(None).expect("nil").is_empty());
        assert!(label_selector_as_selector(Some(&LabelSelector::default())).expect("x").is_empty());
    }

    #[test]
    fn selector_errors_are_go_text() {
        let bad_op = LabelSelector {
            match_expressions: Some(vec![LabelSelectorRequirement {
                key: "a".into(),
                operator: "Foo".into(),
                values: None,
            }]),
            ..Default::default()
        };
        assert_eq!(
            label_selector_as_selector(Some(&bad_op)),
            Err("\"Foo\" is not a valid label selector operator".to_owned())
        );
        let empty_in = LabelSelector {
            match_expressions: Some(vec![LabelSelectorRequirement {
                key: "a".into(),
                operator: "In".into(),
                values: None,
            }]),
            ..Default::default()
        };
        assert_eq!(
            label_selector_as_selector(Some(&empty_in)),
            Err("values: Invalid value: []string(nil): for 'in', 'notin' operators, values set can't be empty".to_owned())
        );
    }

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

/// Parses a selector in its string form (`app=web,tier in (a,b),!legacy`, as a scale
/// subresource's `status.selector` writes it) into a [`LabelSelector`]: equality (`=`, `==`,
/// `!=`), set (`in`, `notin`) and existence (`key`, `!key`) requirements. An empty string
/// selects everything (an empty selector).
///
/// # Errors
/// The requirement that cannot be read.
pub fn label_selector_from_str(text: &str) -> Result<LabelSelector, String> {
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelectorRequirement;
    let mut labels = BTreeMap::new();
    let mut expressions = Vec::new();
    // Split on commas outside parentheses.
    let mut parts = Vec::new();
    let (mut depth, mut start) = (0usize, 0usize);
    for (i, c) in text.char_indices() {
        match c {
            '(' => depth += 1,
            ')' => depth = depth.saturating_sub(1),
            ',' if depth == 0 => {
                parts.push(&text[start..i]);
                start = i + 1;
            }
            _ => {}
        }
    }
    parts.push(&text[start..]);
    let expr = |key: &str, operator: &str, values: Option<Vec<String>>| LabelSelectorRequirement {
        key: key.trim().to_owned(),
        operator: operator.to_owned(),
        values,
    };
    for part in parts.into_iter().map(str::trim).filter(|p| !p.is_empty()) {
        let set = |rest: &str| -> Result<Vec<String>, String> {
            let inner = rest
                .trim()
                .strip_prefix('(')
                .and_then(|r| r.strip_suffix(')'))
                .ok_or_else(|| format!("expected a parenthesised set of values in {part:?}"))?;
            Ok(inner.split(',').map(|v| v.trim().to_owned()).filter(|v| !v.is_empty()).collect())
        };
        let words: Vec<&str> = part.splitn(2, char::is_whitespace).collect();
        if let [key, rest] = words.as_slice() {
            let rest = rest.trim_start();
            if let Some(values) = rest.strip_prefix("notin") {
                expressions.push(expr(key, "NotIn", Some(set(values)?)));
                continue;
            }
            if let Some(values) = rest.strip_prefix("in") {
                expressions.push(expr(key, "In", Some(set(values)?)));
                continue;
            }
        }
        if let Some((key, value)) = part.split_once("!=") {
            expressions.push(expr(key, "NotIn", Some(vec![value.trim().to_owned()])));
        } else if let Some((key, value)) = part.split_once("==").or_else(|| part.split_once('=')) {
            labels.insert(key.trim().to_owned(), value.trim().to_owned());
        } else if let Some(key) = part.strip_prefix('!') {
            expressions.push(expr(key, "DoesNotExist", None));
        } else if part.chars().all(|c| c.is_alphanumeric() || "-_./".contains(c)) {
            expressions.push(expr(part, "Exists", None));
        } else {
            return Err(format!("unable to parse requirement: {part:?}"));
        }
    }
    Ok(LabelSelector {
        match_labels: (!labels.is_empty()).then_some(labels),
        match_expressions: (!expressions.is_empty()).then_some(expressions),
    })
}

#[cfg(test)]
mod selector_string_tests {
    use super::*;

    #[test]
    fn selector_strings_parse_into_label_selectors() {
        let s = label_selector_from_str("app=web, tier in (a, b),env notin (x),legacy,!old,z!=1")
            .expect("parses");
        assert_eq!(s.match_labels.clone().unwrap_or_default()["app"], "web");
        let exprs = s.match_expressions.clone().unwrap_or_default();
        let ops: Vec<(&str, &str)> =
            exprs.iter().map(|e| (e.key.as_str(), e.operator.as_str())).collect();
        assert_eq!(
            ops,
            [
                ("tier", "In"),
                ("env", "NotIn"),
                ("legacy", "Exists"),
                ("old", "DoesNotExist"),
                ("z", "NotIn")
            ]
        );
        assert_eq!(exprs[0].values.clone().unwrap_or_default(), ["a", "b"]);
        assert_eq!(label_selector_from_str("").expect("empty"), LabelSelector::default());
        assert!(label_selector_from_str("a in b").is_err());
        assert!(label_selector_from_str("a b c").is_err());
    }
}
