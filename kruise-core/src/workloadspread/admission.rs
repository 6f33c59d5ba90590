//! WorkloadSpread validation, as upstream OpenKruise's `vworkloadspread.kb.io` webhook does
//! it. A v1alpha1 object is converted to v1beta1 first (kruise-api's conversion), so the
//! rules are written once, over v1beta1.
//!
//! The rules, in upstream's order, with upstream's paths and messages:
//!
//! 1. `spec.targetRef` is required, names an API version, kind and name, and is a CloneSet
//!    (`apps.kruise.io`), Deployment, ReplicaSet (`apps`), Job (`batch`), StatefulSet (`apps`
//!    or `apps.kruise.io`) or a workload of the custom workload whitelist;
//! 2. `spec.subsets` is not empty; every subset has a unique, non-empty name; its
//!    `requiredNodeSelector`, `preferredNodeSelector` and `tolerations` are valid (core's node
//!    selector term, preferred scheduling term and toleration rules); its `patch`, applied to
//!    the target's pod template when the target exists, gives a valid pod spec;
//!    `maxReplicas` are all of one type (int or percent), int for StatefulSets, non-negative,
//!    percentages summing to at most 100%, and to exactly 100% unless the last subset is
//!    unlimited;
//! 3. `scheduleStrategy.type` is empty, `Fixed` or `Adaptive`; `adaptive` needs type
//!    `Adaptive` and an unlimited last subset (with more than one subset);
//!    `rescheduleCriticalSeconds` lies in `[0, (300 - 5) / (subsets - 1)]`;
//! 4. `targetFilter.selector` is a valid label selector;
//! 5. no other WorkloadSpread of the namespace targets the same workload (same group, kind
//!    and name); only the first conflict is reported;
//! 6. on update, object metadata rules and an unchanged target (group, kind and name).
//!
//! What the check needs from the cluster is passed in as [`WorkloadSpreadContext`].
//!
//! Differences from upstream, on purpose: a patch that does not apply reports one error (the
//! merge failure), not the decoding errors that follow from it; the patched template is
//! defaulted (as the API server would default the pods) before its spec is validated; Go's
//! rendering of a `targetFilter` in an error names no pointer addresses.

use k8s_openapi::api::core::v1::{PodSpec, PodTemplateSpec};
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;
use kruise_api::apps::v1alpha1 as alpha;
use kruise_api::apps::v1beta1::{
    TargetReference, WorkloadSpread, WorkloadSpreadScheduleStrategyType, WorkloadSpreadSubset,
};
use kruise_api::conversion::HubConvertible;

use crate::admission::meta::{label_selector_as_selector, validate_object_meta_update};
use crate::admission::pod_constraints;
use crate::admission::pod_defaults::default_pod_spec;
use crate::admission::pod_template::{validate_pod_spec, validate_tolerations_list};
use crate::field::{BadValue, FieldError, FieldErrors, FieldPath, go};
use crate::intstr::IntOrPercent;
use crate::smp::{PatchSchema, apply_patch};
use crate::workloadspread::{CustomWorkloadWhitelist, parse_group};

/// The name of upstream's validating webhook for WorkloadSpreads.
pub const VALIDATING_WEBHOOK_NAME: &str = "vworkloadspread.kb.io";

/// The webhook's path.
pub const VALIDATING_WEBHOOK_PATH: &str = "/validate-apps-kruise-io-workloadspread";

/// The longest a subset may stay unschedulable, in seconds (`MaxScheduledFailedDuration`).
const MAX_SCHEDULED_FAILED_SECONDS: i32 = 300;

/// The other WorkloadSpreads of the namespace.
#[derive(Clone, Copy, Debug)]
#[non_exhaustive]
pub enum OtherWorkloadSpreads<'a> {
    /// The WorkloadSpreads of the namespace (the one being validated may be among them: those
    /// of the same name are skipped). The first conflict in this order is reported.
    Listed(&'a [WorkloadSpread]),
    /// They could not be listed: the reason, reported as an internal error.
    Unavailable(&'a str),
}

/// What validation needs from the cluster.
#[derive(Clone, Copy, Debug)]
pub struct WorkloadSpreadContext<'a> {
    /// The other WorkloadSpreads of the namespace.
    pub others: OtherWorkloadSpreads<'a>,
    /// The `WorkloadSpread_Watch_Custom_Workload_WhiteList` (`None`: empty).
    pub whitelist: Option<&'a CustomWorkloadWhitelist>,
    /// The target's pod template when the target exists and is a built-in kind (for CloneSets
    /// and StatefulSets with a volume per volume claim template, see
    /// [`with_volume_claim_templates`]); `None` skips the patch check, as upstream does when
    /// the WorkloadSpread is created before its workload.
    pub workload_template: Option<&'a PodTemplateSpec>,
}

impl<'a> WorkloadSpreadContext<'a> {
    /// A context with these WorkloadSpreads, no whitelist and no template.
    pub fn new(others: &'a [WorkloadSpread]) -> Self {
        WorkloadSpreadContext {
            others: OtherWorkloadSpreads::Listed(others),
            whitelist: None,
            workload_template: None,
        }
    }
}

/// The template with a PVC-backed volume per claim name, as upstream adds them for CloneSets and
/// StatefulSets before applying a subset's patch.
pub fn with_volume_claim_templates(template: &PodTemplateSpec, claims: &[&str]) -> PodTemplateSpec {
    let mut out = template.clone();
    let spec = out.spec.get_or_insert_with(PodSpec::default);
    let volumes = spec.volumes.get_or_insert_with(Vec::new);
    for name in claims {
        volumes.push(k8s_openapi::api::core::v1::Volume {
            name: (*name).to_owned(),
            persistent_volume_claim: Some(
                k8s_openapi::api::core::v1::PersistentVolumeClaimVolumeSource {
                    claim_name: (*name).to_owned(),
                    read_only: None,
                },
            ),
            ..Default::default()
        });
    }
    out
}

/// Validates a v1beta1 WorkloadSpread being created.
pub fn validate_workloadspread_create(
    ws: &WorkloadSpread,
    ctx: &WorkloadSpreadContext<'_>,
) -> FieldErrors {
    validate(ws, None, ctx)
}

/// Validates a v1beta1 WorkloadSpread being updated from `old`.
pub fn validate_workloadspread_update(
    new: &WorkloadSpread,
    old: &WorkloadSpread,
    ctx: &WorkloadSpreadContext<'_>,
) -> FieldErrors {
    validate(new, Some(old), ctx)
}

/// Validates a v1alpha1 WorkloadSpread being created, converted to v1beta1.
pub fn validate_workloadspread_v1alpha1_create(
    ws: &alpha::WorkloadSpread,
    ctx: &WorkloadSpreadContext<'_>,
) -> FieldErrors {
    validate(&ws.clone().map_to_hub(), None, ctx)
}

/// Validates a v1alpha1 WorkloadSpread being updated from `old`, converted to v1beta1.
pub fn validate_workloadspread_v1alpha1_update(
    new: &alpha::WorkloadSpread,
    old: &alpha::WorkloadSpread,
    ctx: &WorkloadSpreadContext<'_>,
) -> FieldErrors {
    let old = old.clone().map_to_hub();
    validate(&new.clone().map_to_hub(), Some(&old), ctx)
}

fn validate(
    ws: &WorkloadSpread,
    old: Option<&WorkloadSpread>,
    ctx: &WorkloadSpreadContext<'_>,
) -> FieldErrors {
    let spec_path = FieldPath::new("spec");
    let mut errs = FieldErrors::new();
    errs.extend(validate_spec(ws, ctx, &spec_path));
    match ctx.others {
        OtherWorkloadSpreads::Listed(others) => errs.extend(conflict(ws, others, &spec_path)),
        OtherWorkloadSpreads::Unavailable(reason) => errs.push(FieldError::internal(
            &FieldPath::new(""),
            format!("query other WorkloadSpread failed, err: {reason}"),
        )),
    }
    if let Some(old) = old {
        errs.extend(validate_object_meta_update(
            &ws.metadata,
            &old.metadata,
            &FieldPath::new("metadata"),
        ));
        if let (Some(new_ref), Some(old_ref)) =
            (&ws.spec.target_reference, &old.spec.target_reference)
            && !same_target(new_ref, old_ref)
        {
            errs.push(FieldError::invalid(
                &spec_path.child("targetRef"),
                BadValue::Go(go_target_reference(new_ref)),
                "change TargetReference is not permitted for WorkloadSpread",
            ));
        }
    }
    errs
}

/// Same group (ignoring the version; unparsable versions count as the core group), kind and
/// name.
fn same_target(a: &TargetReference, b: &TargetReference) -> bool {
    parse_group(&a.api_version).unwrap_or("") == parse_group(&b.api_version).unwrap_or("")
        && a.kind == b.kind
        && a.name == b.name
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

fn validate_spec(
    ws: &WorkloadSpread,
    ctx: &WorkloadSpreadContext<'_>,
    path: &FieldPath,
) -> Vec<FieldError> {
    let spec = &ws.spec;
    let mut errs = Vec::new();
    let target_path = path.child("targetRef");
    let mut template = None;
    match &spec.target_reference {
        None => {
            errs.push(FieldError::required(&target_path, "no targetRef defined in WorkloadSpread"))
        }
        Some(t) if t.api_version.is_empty() || t.name.is_empty() || t.kind.is_empty() => {
            errs.push(FieldError::invalid(
                &target_path,
                BadValue::Go(go_target_reference(t)),
                "empty TargetReference is not valid for WorkloadSpread.",
            ));
        }
        Some(t) => {
            let group = parse_group(&t.api_version);
            let builtin: Option<&[&str]> = match t.kind.as_str() {
                "CloneSet" => Some(&["apps.kruise.io"]),
                "Deployment" | "ReplicaSet" => Some(&["apps"]),
                "Job" => Some(&["batch"]),
                "StatefulSet" => Some(&["apps", "apps.kruise.io"]),
                _ => None,
            };
            match builtin {
                Some(groups) => {
                    if group.is_some_and(|g| groups.contains(&g)) {
                        template = ctx.workload_template;
                    } else {
                        errs.push(FieldError::invalid(
                            &target_path,
                            BadValue::Go(go_target_reference(t)),
                            format!("TargetReference is not valid for {}.", t.kind),
                        ));
                    }
                }
                None => {
                    let allowed = match (group, ctx.whitelist) {
                        (Some(g), Some(w)) => w.contains_workload(g, &t.kind),
                        _ => false,
                    };
                    if !allowed {
                        errs.push(FieldError::invalid(
                            &target_path,
                            BadValue::Go(go_target_reference(t)),
                            "TargetReference's GroupKind is not permitted.",
                        ));
                    }
                }
            }
        }
    }

    let subsets = spec.subsets.as_deref().unwrap_or_default();
    errs.extend(validate_subsets(ws, subsets, template, &path.child("subsets")));

    let strategy = &spec.schedule_strategy;
    let strategy_path = path.child("scheduleStrategy");
    if let Some(WorkloadSpreadScheduleStrategyType::Other(other)) = &strategy.type_
        && !other.is_empty()
    {
        errs.push(FieldError::invalid(
            &strategy_path.child("type"),
            other.as_str(),
            "ScheduleStrategy's type is not valid",
        ));
    }
    if let Some(adaptive) = &strategy.adaptive {
        let seconds = BadValue::from(adaptive.reschedule_critical_seconds);
        if strategy.type_ != Some(WorkloadSpreadScheduleStrategyType::Adaptive) {
            errs.push(FieldError::invalid(
                &strategy_path.child("type"),
                seconds.clone(),
                "the scheduleStrategy's type must be adaptive when using adaptive scheduleStrategy",
            ));
        }
        if subsets.len() > 1 && subsets.last().is_some_and(|s| s.max_replicas.is_some()) {
            errs.push(FieldError::invalid(
                &strategy_path.child("adaptive"),
                seconds.clone(),
                "the last subset's maxReplicas must be not specified when using adaptive scheduleStrategy",
            ));
        }
        let allowed = if subsets.len() > 1 {
            (MAX_SCHEDULED_FAILED_SECONDS - 5)
                / i32::try_from(subsets.len() - 1).unwrap_or(i32::MAX)
        } else {
            i32::MAX
        };
        if let Some(s) = adaptive.reschedule_critical_seconds
            && (s < 0 || s > allowed)
        {
            errs.push(FieldError::invalid(
                &strategy_path.child("adaptive").child("rescheduleCriticalSeconds"),
                s,
                format!("rescheduleCriticalSeconds < 0 or rescheduleCriticalSeconds > {allowed} is not permitted"),
            ));
        }
    }

    if let Some(filter) = &spec.target_filter
        && let Err(msg) = label_selector_as_selector(filter.selector.as_ref())
    {
        let selector =
            filter.selector.as_ref().map_or("(*v1.LabelSelector)(nil)".to_owned(), |s| {
                format!("&{}", go::label_selector(s))
            });
        let value = format!(
            "v1beta1.TargetFilter{{Selector:{selector}, ReplicasPathList:{}}}",
            go::string_slice(
                (!filter.replicas_path_list.is_empty()).then_some(&filter.replicas_path_list[..])
            )
        );
        errs.push(FieldError::invalid(&path.child("targetFilter"), BadValue::Go(value), msg));
    }
    errs
}

fn is_int(value: &IntOrString) -> bool {
    matches!(value, IntOrString::Int(_))
}

fn validate_subsets(
    ws: &WorkloadSpread,
    subsets: &[WorkloadSpreadSubset],
    template: Option<&PodTemplateSpec>,
    path: &FieldPath,
) -> Vec<FieldError> {
    let mut errs = Vec::new();
    if subsets.is_empty() {
        errs.push(FieldError::required(path, "subsets number must >= 1 in WorkloadSpread"));
        return errs;
    }
    let mut names = std::collections::BTreeSet::new();
    let mut percent_sum: i64 = 0;
    let mut first_is_int: Option<bool> = None;
    let is_sts = ws.spec.target_reference.as_ref().is_some_and(|t| t.kind == "StatefulSet");
    for (i, subset) in subsets.iter().enumerate() {
        let p = path.index(i);
        if subset.name.is_empty() {
            errs.push(FieldError::invalid(&p.child("name"), "", ""));
        } else {
            if names.contains(&subset.name) {
                errs.push(FieldError::invalid(
                    &p.child("name"),
                    subset.name.as_str(),
                    format!("duplicated subset name {}", subset.name),
                ));
            }
            names.insert(subset.name.clone());
        }
        if let Some(term) = &subset.required_node_selector {
            errs.extend(pod_constraints::validate_node_selector_term(
                term,
                &p.child("requiredNodeSelector"),
                false,
            ));
        }
        errs.extend(pod_constraints::validate_preferred_scheduling_terms(
            &subset.preferred_node_selector,
            &p.child("preferredNodeSelector"),
        ));
        if let Some(tolerations) = &subset.tolerations {
            errs.extend(validate_tolerations_list(tolerations, &p.child("tolerations")));
        }
        if let (Some(patch), Some(template)) = (&subset.patch, template) {
            errs.extend(validate_patch(template, &patch.0, &p.child("patch")));
        }
        if let Some(max) = &subset.max_replicas {
            let value = BadValue::Go(go::int_or_string(max));
            match first_is_int {
                None => first_is_int = Some(is_int(max)),
                Some(first) if first != is_int(max) => {
                    errs.push(FieldError::invalid(
                        &p.child("maxReplicas"),
                        value,
                        "the maxReplicas type of all subsets must be the same",
                    ));
                    return errs;
                }
                Some(_) => {}
            }
            if is_sts && !is_int(max) {
                errs.push(FieldError::invalid(
                    &p.child("maxReplicas"),
                    value,
                    "the maxReplicas type must be Int for StatefulSet",
                ));
                return errs;
            }
            let scaled =
                IntOrPercent::parse_lenient(max).map(|v| v.scale(100, crate::intstr::Rounding::Up));
            let scaled = match scaled {
                Ok(v) if v >= 0 => v,
                _ => {
                    errs.push(FieldError::invalid(
                        &p.child("maxReplicas"),
                        value,
                        "maxReplicas is not valid for subset",
                    ));
                    return errs;
                }
            };
            if !is_int(max) {
                percent_sum += i64::from(scaled);
                if percent_sum > 100 {
                    errs.push(FieldError::invalid(
                        &p.child("maxReplicas"),
                        value,
                        "the sum of all subset's maxReplicas exceeds 100% is no permitted",
                    ));
                    return errs;
                }
            }
        }
    }
    if first_is_int == Some(false)
        && percent_sum < 100
        && subsets.last().is_some_and(|s| s.max_replicas.is_some())
    {
        let first = subsets[0]
            .max_replicas
            .as_ref()
            .map_or(BadValue::Null, |m| BadValue::Go(go::int_or_string(m)));
        errs.push(FieldError::invalid(
            &path.index(0).child("maxReplicas"),
            first,
            "maxReplicas sum of all subsets must equal 100% when type is specified as percent",
        ));
    }
    errs
}

fn validate_patch(
    template: &PodTemplateSpec,
    patch: &serde_json::Value,
    path: &FieldPath,
) -> Vec<FieldError> {
    let raw = patch.to_string();
    let original = match serde_json::to_value(template) {
        Ok(v) => v,
        Err(e) => {
            return vec![FieldError::invalid(path, raw, format!("failed to merge patch: {e}"))];
        }
    };
    let merged = match apply_patch(&original, patch, PatchSchema::PodTemplateSpec) {
        Ok(v) => v,
        Err(e) => {
            return vec![FieldError::invalid(path, raw, format!("failed to merge patch: {e}"))];
        }
    };
    let mut pod: PodTemplateSpec = match serde_json::from_value(merged) {
        Ok(p) => p,
        Err(e) => return vec![FieldError::invalid(path, raw, format!("failed to unmarshal: {e}"))],
    };
    let spec = pod.spec.get_or_insert_with(PodSpec::default);
    default_pod_spec(spec);
    validate_pod_spec(spec, path)
}

/// The first other WorkloadSpread targeting the same workload.
fn conflict(
    ws: &WorkloadSpread,
    others: &[WorkloadSpread],
    path: &FieldPath,
) -> Option<FieldError> {
    let mine = ws.spec.target_reference.as_ref()?;
    others.iter().find_map(|other| {
        if other.metadata.name == ws.metadata.name {
            return None;
        }
        let theirs = other.spec.target_reference.as_ref()?;
        same_target(mine, theirs).then(|| {
            FieldError::invalid(
                &path.child("targetRef"),
                BadValue::Go(go_target_reference(mine)),
                format!(
                    "ws.spec.targetRef is in conflict with other WorkloadSpread {}",
                    other.metadata.name.as_deref().unwrap_or_default()
                ),
            )
        })
    })
}

#[cfg(test)]
#[path = "admission_tests.rs"]
mod tests;
