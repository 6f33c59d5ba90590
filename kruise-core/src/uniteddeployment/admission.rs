//! UnitedDeployment defaulting and validation, as upstream's webhooks
//! (`muniteddeployment.kb.io`, `vuniteddeployment.kb.io`) do them, over v1beta1 (v1alpha1
//! objects are converted first).
//!
//! Beyond upstream:
//! - a `cloneSetTemplate` is checked like the others (its labels against the selector, its
//!   pod template), instead of failing later when the CloneSet is created;
//! - the sums in the replica messages print the value (upstream prints an address).

use std::collections::BTreeSet;

use k8s_openapi::api::core::v1::PodTemplateSpec;
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;
use kruise_api::apps::v1beta1::{
    ManualUpdate, UnitedDeployment, UnitedDeploymentScheduleStrategyType, UpdateStrategyType,
};

use super::allocation::parse_subset_replicas;
use crate::admission::pod_defaults::{TemplateDefaults, default_pod_spec, default_pod_spec_with};
use crate::admission::pod_template::{validate_pod_template_spec, validate_tolerations_list};
use crate::field::{FieldError, FieldErrors, FieldPath};
use crate::selector::Selector;

/// Upstream's default `revisionHistoryLimit`.
pub const DEFAULT_REVISION_HISTORY_LIMIT: i32 = 10;

/// Upstream's defaults: `replicas: 1`, `revisionHistoryLimit: 10`, `updateStrategy.type:
/// Manual`, `minReplicas: 0` on subsets when the topology uses minimums or maximums, and the
/// pod defaults of a `statefulSetTemplate` (on create, or when an update changes the template,
/// as `template` says: the `TemplateNoDefaults` and `DefaultHostNetworkHostPortsInPodTemplates`
/// gates). The status is cleared.
pub fn default_united_deployment(
    ud: &mut UnitedDeployment,
    old: Option<&UnitedDeployment>,
    template: TemplateDefaults,
) {
    let inject = !template.skip && old.is_none_or(|old| old.spec.template != ud.spec.template);
    let spec = &mut ud.spec;
    spec.replicas.get_or_insert(1);
    spec.revision_history_limit.get_or_insert(DEFAULT_REVISION_HISTORY_LIMIT);
    let strategy = &mut spec.update_strategy;
    strategy.type_.get_or_insert(UpdateStrategyType::Manual);
    if strategy.type_ == Some(UpdateStrategyType::Manual) {
        strategy.manual_update.get_or_insert_with(ManualUpdate::default);
    }
    if inject
        && let Some(pod) = spec
            .template
            .stateful_set_template
            .as_mut()
            .and_then(|t| t.spec.object.template.spec.as_mut())
    {
        default_pod_spec_with(pod, template.pod);
    }
    let subsets = &mut spec.topology.subsets;
    let elastic = subsets.iter().any(|s| s.min_replicas.is_some() || s.max_replicas.is_some());
    let pinned = subsets.iter().any(|s| s.replicas.is_some());
    if elastic && !pinned {
        for s in subsets.iter_mut() {
            s.min_replicas.get_or_insert(IntOrString::Int(0));
        }
    }
    ud.status = None;
}

const ONE_OF: &str =
    "statefulSetTemplate, advancedStatefulSetTemplate, cloneSetTemplate, or deploymentTemplate";

/// Upstream's checks, in its order; on update (`old` given) also the subsets' node selector
/// terms and tolerations, which may not change.
pub fn validate_united_deployment(
    ud: &UnitedDeployment,
    old: Option<&UnitedDeployment>,
) -> FieldErrors {
    let mut errs = FieldErrors::new();
    let spec_path = FieldPath::new("spec");
    let spec = &ud.spec;
    if let Some(replicas) = spec.replicas.filter(|r| *r < 0) {
        errs.push(FieldError::invalid(
            &spec_path.child("replicas"),
            i64::from(replicas),
            "must be greater than or equal to 0",
        ));
    }

    // The selector.
    let selector_path = spec_path.child("selector");
    let selector = match &spec.selector {
        None => {
            errs.push(FieldError::required(&selector_path, ""));
            None
        }
        Some(s)
            if s.match_labels.as_ref().is_none_or(|m| m.is_empty())
                && s.match_expressions.as_ref().is_none_or(|m| m.is_empty()) =>
        {
            errs.push(FieldError::invalid(
                &selector_path,
                "",
                "empty selector is invalid for statefulset",
            ));
            None
        }
        Some(s) => match Selector::parse(Some(s)) {
            Ok(parsed) => Some(parsed),
            Err(e) => {
                errs.push(FieldError::invalid(&selector_path, "", e.to_string()));
                None
            }
        },
    };

    // The schedule strategy.
    let strategy = &spec.topology.schedule_strategy;
    let adaptive = strategy.type_ == Some(UnitedDeploymentScheduleStrategyType::Adaptive);

    // The template.
    let template_path = spec_path.child("template");
    let t = &spec.template;
    let count = usize::from(t.stateful_set_template.is_some())
        + usize::from(t.advanced_stateful_set_template.is_some())
        + usize::from(t.clone_set_template.is_some())
        + usize::from(t.deployment_template.is_some());
    match count {
        0 => errs
            .push(FieldError::required(&template_path, format!("should provide one of {ONE_OF}"))),
        1 => {}
        _ => errs.push(FieldError::invalid(
            &template_path,
            "",
            format!("should provide only one of {ONE_OF}"),
        )),
    }
    let check = |errs: &mut FieldErrors,
                 field: &str,
                 labels: Option<&std::collections::BTreeMap<String, String>>,
                 replicas: Option<i32>,
                 partition: Option<i32>,
                 pod: &PodTemplateSpec| {
        let path = template_path.child(field);
        if let Some(selector) = &selector {
            let empty = Default::default();
            if !selector.matches(labels.unwrap_or(&empty)) {
                errs.push(FieldError::invalid(
                    &path.child("metadata").child("labels"),
                    "",
                    "`selector` does not match template `labels`",
                ));
            }
        }
        if replicas.is_some() {
            errs.push(FieldError::invalid(
                &path.child("spec").child("replicas"),
                "",
                format!("replicas in {field} will not be used"),
            ));
        }
        if partition.is_some() {
            errs.push(FieldError::invalid(
                &path
                    .child("spec")
                    .child("updateStrategy")
                    .child("rollingUpdate")
                    .child("partition"),
                "",
                format!("partition in {field} will not be used"),
            ));
        }
        // Checked as the workload's own defaulting will leave it.
        let mut pod = pod.clone();
        if let Some(spec) = pod.spec.as_mut() {
            default_pod_spec(spec);
        }
        errs.extend(validate_pod_template_spec(&pod, &path.child("spec").child("template")));
    };
    if let Some(x) = &t.stateful_set_template {
        let s = &x.spec.object;
        let partition =
            s.update_strategy.as_ref().and_then(|u| u.rolling_update.as_ref()?.partition);
        check(
            &mut errs,
            "statefulSetTemplate",
            x.metadata.labels.as_ref(),
            s.replicas,
            partition,
            &s.template,
        );
    }
    if let Some(x) = &t.advanced_stateful_set_template {
        let s = &x.spec;
        let partition = s.update_strategy.rolling_update.as_ref().and_then(|r| r.partition);
        check(
            &mut errs,
            "advancedStatefulSetTemplate",
            x.metadata.labels.as_ref(),
            s.replicas,
            partition,
            &s.template,
        );
    }
    if let Some(x) = &t.clone_set_template {
        check(
            &mut errs,
            "cloneSetTemplate",
            x.metadata.labels.as_ref(),
            None,
            None,
            &x.spec.template,
        );
    }
    if let Some(x) = &t.deployment_template {
        let s = &x.spec.object;
        check(
            &mut errs,
            "deploymentTemplate",
            x.metadata.labels.as_ref(),
            s.replicas,
            None,
            &s.template,
        );
    }
    if adaptive
        && strategy.adaptive.as_ref().is_some_and(|a| a.reserve_unschedulable_pods)
        && (t.stateful_set_template.is_some() || t.advanced_stateful_set_template.is_some())
    {
        errs.push(FieldError::invalid(
            &spec_path.child("topology").child("scheduleStrategy"),
            "",
            "only stateless workloads (Deployment and CloneSet) are supported by reserved rescheduling",
        ));
    }

    errs.extend(validate_subset_replicas(ud));

    // Each subset.
    let subsets_path = spec_path.child("topology").child("subsets");
    let mut names = BTreeSet::new();
    for (i, s) in spec.topology.subsets.iter().enumerate() {
        let path = subsets_path.index(i);
        let name_path = path.child("name");
        if s.name.is_empty() {
            errs.push(FieldError::required(&name_path, ""));
        } else {
            if !names.insert(s.name.as_str()) {
                errs.push(FieldError::invalid(
                    &name_path,
                    s.name.as_str(),
                    format!("duplicated subset name {}", s.name),
                ));
            }
            let problems = crate::names::is_dns1123_label(&s.name);
            if !problems.is_empty() {
                errs.push(FieldError::invalid(
                    &name_path,
                    s.name.as_str(),
                    format!("invalid subset name {}", problems.join(", ")),
                ));
            }
        }
        errs.extend(validate_tolerations_list(&s.tolerations, &path.child("tolerations")));
        if adaptive && s.replicas.is_some() {
            errs.push(FieldError::forbidden(
                &path.child("replicas"),
                "specify replicas use minReplicas/maxReplicas to enable adaptive strategy",
            ));
        }
    }

    // The update strategy.
    let update_path = spec_path.child("updateStrategy");
    match &spec.update_strategy.type_ {
        None | Some(UpdateStrategyType::Manual) => {
            for key in spec.update_strategy.manual_update.iter().flat_map(|m| m.partitions.keys()) {
                if !names.contains(key.as_str()) {
                    errs.push(FieldError::invalid(
                        &update_path.child("manualUpdate").child("partitions"),
                        key.as_str(),
                        format!("subset {key} does not exist"),
                    ));
                }
            }
        }
        Some(other) => errs.push(FieldError::not_supported(
            &update_path.child("type"),
            other.as_str(),
            &["Manual", ""],
        )),
    }

    // Update: the subset workloads' specs change only where their own update rules allow,
    // and a subset keeps its nodes.
    if let Some(old) = old {
        errs.extend(validate_template_update(ud, old));
        for (i, s) in spec.topology.subsets.iter().enumerate() {
            let Some(before) = old.spec.topology.subsets.iter().find(|o| o.name == s.name) else {
                continue;
            };
            let path = subsets_path.index(i);
            if before.node_selector_term != s.node_selector_term {
                errs.push(FieldError::forbidden(
                    &path.child("nodeSelectorTerm"),
                    "may not be changed in an update",
                ));
            }
            if before.tolerations != s.tolerations {
                errs.push(FieldError::forbidden(
                    &path.child("tolerations"),
                    "may not be changed in an update",
                ));
            }
        }
    }
    errs
}

/// Upstream's update rules for a `statefulSetTemplate` (apps/v1: only `template`,
/// `updateStrategy`, `persistentVolumeClaimRetentionPolicy`, `minReadySeconds` and `ordinals`
/// may change; the selector is the UnitedDeployment's and the partition its own) and an
/// `advancedStatefulSetTemplate` (only `template` and `updateStrategy`); and a template's
/// `replicas`, when set, is not negative.
fn validate_template_update(ud: &UnitedDeployment, old: &UnitedDeployment) -> Vec<FieldError> {
    let mut errs = Vec::new();
    let path = FieldPath::new("spec").child("template");
    let (new_t, old_t) = (&ud.spec.template, &old.spec.template);
    let nonnegative = |replicas: Option<i32>, path: &FieldPath| {
        replicas.filter(|r| *r < 0).map(|r| {
            FieldError::invalid(
                &path.child("replicas"),
                i64::from(r),
                "must be greater than or equal to 0",
            )
        })
    };
    if let (Some(new), Some(before)) = (&new_t.stateful_set_template, &old_t.stateful_set_template)
    {
        let spec_path = path.child("statefulSetTemplate").child("spec");
        // As upstream normalises both before comparing: the UnitedDeployment's selector, one
        // replica, the policy and strategy type defaulted, no partition.
        let normalise = |spec: &k8s_openapi::api::apps::v1::StatefulSetSpec| {
            let mut spec = spec.clone();
            spec.selector = ud.spec.selector.clone().unwrap_or_default();
            spec.replicas = Some(1);
            spec.pod_management_policy.get_or_insert_with(|| "OrderedReady".to_owned());
            let strategy = spec.update_strategy.get_or_insert_with(Default::default);
            strategy.type_.get_or_insert_with(|| "RollingUpdate".to_owned());
            if let Some(rolling) = strategy.rolling_update.as_mut() {
                rolling.partition = None;
            }
            spec
        };
        let (mut changed, before_spec) =
            (normalise(&new.spec.object), normalise(&before.spec.object));
        changed.replicas = before_spec.replicas;
        changed.template = before_spec.template.clone();
        changed.update_strategy = before_spec.update_strategy.clone();
        changed.min_ready_seconds = before_spec.min_ready_seconds;
        changed.ordinals = before_spec.ordinals.clone();
        changed.persistent_volume_claim_retention_policy =
            before_spec.persistent_volume_claim_retention_policy.clone();
        if changed != before_spec {
            errs.push(FieldError::forbidden(
                &spec_path,
                "updates to statefulsetTemplate spec for fields other than 'template', 'updateStrategy', 'persistentVolumeClaimRetentionPolicy', 'minReadySeconds' and 'ordinals' are forbidden",
            ));
        }
        errs.extend(nonnegative(new.spec.object.replicas, &spec_path));
    } else if let (Some(new), Some(before)) =
        (&new_t.advanced_stateful_set_template, &old_t.advanced_stateful_set_template)
    {
        let spec_path = path.child("advancedStatefulSetTemplate").child("spec");
        let mut changed = new.spec.clone();
        changed.replicas = before.spec.replicas;
        changed.template = before.spec.template.clone();
        changed.update_strategy = before.spec.update_strategy.clone();
        if changed != before.spec {
            errs.push(FieldError::forbidden(
                &spec_path,
                "updates to advancedStatefulsetTemplate spec for fields other than 'template', and 'updateStrategy' are forbidden",
            ));
        }
        errs.extend(nonnegative(new.spec.replicas, &spec_path));
    } else if let (Some(new), Some(_)) = (&new_t.deployment_template, &old_t.deployment_template) {
        let spec_path = path.child("deploymentTemplate").child("spec");
        errs.extend(nonnegative(new.spec.object.replicas, &spec_path));
    }
    errs
}

/// The subsets' `replicas`, `minReplicas` and `maxReplicas`, as upstream checks them.
fn validate_subset_replicas(ud: &UnitedDeployment) -> Vec<FieldError> {
    let mut errs = Vec::new();
    let path = FieldPath::new("spec").child("topology").child("subsets");
    let expected = ud.spec.replicas.unwrap_or(-1);
    let subsets = &ud.spec.topology.subsets;
    let (mut pinned_sum, mut pinned_count, mut min_sum, mut max_sum) = (0i64, 0usize, 0i64, 0i64);
    let (mut elastic, mut unbounded) = (false, false);
    for (i, s) in subsets.iter().enumerate() {
        let read =
            |v: &IntOrString, field: &str, errs: &mut Vec<FieldError>| match parse_subset_replicas(
                expected, v,
            ) {
                Ok(n) => Some(n),
                Err(e) => {
                    let shown = match v {
                        IntOrString::Int(n) => n.to_string(),
                        IntOrString::String(s) => s.clone(),
                    };
                    errs.push(FieldError::invalid(
                        &path.index(i).child(field),
                        shown.as_str(),
                        e.to_string(),
                    ));
                    None
                }
            };
        if let Some(v) = &s.replicas
            && let Some(n) = read(v, "replicas", &mut errs)
        {
            pinned_sum += i64::from(n);
            pinned_count += 1;
        } else if s.replicas.is_some() {
            pinned_count += 1;
        }
        let min = s.min_replicas.as_ref().and_then(|v| read(v, "minReplicas", &mut errs));
        let max = s.max_replicas.as_ref().and_then(|v| read(v, "maxReplicas", &mut errs));
        elastic |= s.min_replicas.is_some() || s.max_replicas.is_some();
        unbounded |= s.max_replicas.is_none();
        let (lo, hi) = (min.unwrap_or(0), max.unwrap_or(1_000_000));
        if lo > hi {
            errs.push(FieldError::invalid(
                &path.index(i).child("minReplicas"),
                i64::from(lo),
                format!("subset[{i}].minReplicas must be less than or equal to maxReplicas"),
            ));
        }
        min_sum += i64::from(lo);
        max_sum += i64::from(hi);
    }
    if pinned_count > 0 && elastic {
        errs.push(FieldError::invalid(
            &path,
            "",
            "subset.Replicas and subset.MinReplicas/subset.MaxReplicas are mutually exclusive in a UnitedDeployment",
        ));
        return errs;
    }
    if elastic {
        if expected < 0 {
            errs.push(FieldError::invalid(
                &path,
                "",
                "spec.replicas must be not empty if you set subset.minReplicas/maxReplicas",
            ));
        }
        if !unbounded {
            errs.push(FieldError::invalid(
                &path,
                "",
                "at least one subset.maxReplicas must be empty",
            ));
        }
        if min_sum > max_sum {
            errs.push(FieldError::invalid(
                &path,
                "",
                "sum of indicated subset.minReplicas should not be greater than sum of indicated subset.maxReplicas",
            ));
        }
    } else if expected >= 0 {
        if pinned_sum > i64::from(expected) {
            errs.push(FieldError::invalid(
                &path,
                "",
                format!("sum of indicated subset replicas {pinned_sum} should not be greater than UnitedDeployment replicas {expected}"),
            ));
        } else if pinned_count == subsets.len()
            && !subsets.is_empty()
            && pinned_sum != i64::from(expected)
        {
            errs.push(FieldError::invalid(
                &path,
                "",
                format!("if replicas of all subsets are provided, the sum of indicated subset replicas {pinned_sum} should equal UnitedDeployment replicas {expected}"),
            ));
        }
    } else if pinned_count != subsets.len() {
        errs.push(FieldError::invalid(
            &path,
            "",
            "if UnitedDeployment replicas is not provided, replicas of all subsets should be provided",
        ));
    }
    errs
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn ud(spec: serde_json::Value) -> UnitedDeployment {
        let mut value = json!({
            "apiVersion": "apps.kruise.io/v1beta1", "kind": "UnitedDeployment",
            "metadata": {"name": "sample", "namespace": "default"},
            "spec": {"replicas": 6, "selector": {"matchLabels": {"app": "sample"}},
                "template": {"cloneSetTemplate": {"metadata": {"labels": {"app": "sample"}},
                    "spec": {"selector": {"matchLabels": {"app": "sample"}}, "template": {
                        "metadata": {"labels": {"app": "sample"}},
                        "spec": {"containers": [{"name": "main", "image": "nginx"}]}}}}},
                "topology": {"subsets": [
                    {"name": "subset-a", "replicas": 1},
                    {"name": "subset-b", "replicas": "50%"},
                    {"name": "subset-c"}]}}
        });
        if let (Some(base), Some(extra)) = (value["spec"].as_object_mut(), spec.as_object()) {
            for (k, v) in extra {
                base.insert(k.clone(), v.clone());
            }
        }
        let mut ud: UnitedDeployment = serde_json::from_value(value).expect("a ud");
        default_united_deployment(&mut ud, None, TemplateDefaults::default());
        ud
    }

    fn messages(ud: &UnitedDeployment) -> Vec<String> {
        validate_united_deployment(ud, None).messages()
    }

    /// A statefulSetTemplate UnitedDeployment with `sts` as the template's spec (selector and
    /// pod template filled in).
    fn sts_ud(sts: serde_json::Value) -> UnitedDeployment {
        let mut spec = json!({"selector": {"matchLabels": {"app": "sample"}},
            "serviceName": "web",
            "template": {"metadata": {"labels": {"app": "sample"}},
                "spec": {"containers": [{"name": "main", "image": "nginx"}]}}});
        if let (Some(base), Some(extra)) = (spec.as_object_mut(), sts.as_object()) {
            for (k, v) in extra {
                base.insert(k.clone(), v.clone());
            }
        }
        ud(json!({"template": {"statefulSetTemplate": {
            "metadata": {"labels": {"app": "sample"}}, "spec": spec}}}))
    }

    #[test]
    fn stateful_set_templates_change_only_where_their_update_rules_allow() {
        let old = sts_ud(json!({}));
        let allowed = sts_ud(json!({"minReadySeconds": 5,
            "updateStrategy": {"type": "OnDelete"},
            "persistentVolumeClaimRetentionPolicy": {"whenDeleted": "Delete"}}));
        let errs = validate_united_deployment(&allowed, Some(&old)).messages();
        assert!(errs.is_empty(), "{errs:?}");
        let renamed = sts_ud(json!({"serviceName": "other"}));
        assert_eq!(
            validate_united_deployment(&renamed, Some(&old)).messages(),
            [
                "spec.template.statefulSetTemplate.spec: Forbidden: updates to statefulsetTemplate spec for fields other than 'template', 'updateStrategy', 'persistentVolumeClaimRetentionPolicy', 'minReadySeconds' and 'ordinals' are forbidden"
            ]
        );
        let negative = sts_ud(json!({"replicas": -1}));
        assert_eq!(
            validate_united_deployment(&negative, Some(&old)).messages(),
            [
                "spec.template.statefulSetTemplate.spec.replicas: Invalid value: \"\": replicas in statefulSetTemplate will not be used",
                "spec.template.statefulSetTemplate.spec.replicas: Invalid value: -1: must be greater than or equal to 0"
            ]
        );

        let asts = |extra: serde_json::Value| {
            let mut spec = json!({"selector": {"matchLabels": {"app": "sample"}},
                "template": {"metadata": {"labels": {"app": "sample"}},
                    "spec": {"containers": [{"name": "main", "image": "nginx"}]}}});
            if let (Some(base), Some(more)) = (spec.as_object_mut(), extra.as_object()) {
                for (k, v) in more {
                    base.insert(k.clone(), v.clone());
                }
            }
            ud(json!({"template": {"advancedStatefulSetTemplate": {
                "metadata": {"labels": {"app": "sample"}}, "spec": spec}}}))
        };
        let old = asts(json!({}));
        let image = asts(json!({"template": {"metadata": {"labels": {"app": "sample"}},
            "spec": {"containers": [{"name": "main", "image": "nginx:2"}]}}}));
        assert!(validate_united_deployment(&image, Some(&old)).is_empty());
        let policy = asts(json!({"podManagementPolicy": "Parallel"}));
        assert_eq!(
            validate_united_deployment(&policy, Some(&old)).messages(),
            [
                "spec.template.advancedStatefulSetTemplate.spec: Forbidden: updates to advancedStatefulsetTemplate spec for fields other than 'template', and 'updateStrategy' are forbidden"
            ]
        );
    }

    #[test]
    fn the_manual_sample_is_valid_and_defaulted() {
        let u = ud(json!({}));
        assert!(messages(&u).is_empty(), "{:?}", messages(&u));
        assert_eq!(u.spec.revision_history_limit, Some(10));
        assert_eq!(u.spec.update_strategy.type_, Some(UpdateStrategyType::Manual));
    }

    #[test]
    fn bad_replicas_are_refused_naming_the_field() {
        let over = ud(json!({"topology": {"subsets": [
            {"name": "a", "replicas": "120%"}, {"name": "b"}]}}));
        assert_eq!(
            messages(&over),
            [
                "spec.topology.subsets[0].replicas: Invalid value: \"120%\": subset replicas (120%) should be in range [0, 100]"
            ]
        );
        let both = ud(json!({"topology": {"subsets": [
            {"name": "a", "replicas": 1, "minReplicas": 1}, {"name": "b"}]}}));
        assert_eq!(
            messages(&both),
            [
                "spec.topology.subsets: Invalid value: \"\": subset.Replicas and subset.MinReplicas/subset.MaxReplicas are mutually exclusive in a UnitedDeployment"
            ]
        );
        let sum = ud(json!({"replicas": 3, "topology": {"subsets": [
            {"name": "a", "replicas": 2}, {"name": "b", "replicas": 2}]}}));
        assert_eq!(
            messages(&sum),
            [
                "spec.topology.subsets: Invalid value: \"\": sum of indicated subset replicas 4 should not be greater than UnitedDeployment replicas 3"
            ]
        );
        let bad_name = ud(json!({"topology": {"subsets": [{"name": "Subset_A"}]}}));
        assert!(
            messages(&bad_name)[0].starts_with(
                "spec.topology.subsets[0].name: Invalid value: \"Subset_A\": invalid subset name"
            ),
            "{:?}",
            messages(&bad_name)
        );
        let unknown = ud(json!({"updateStrategy": {"manualUpdate": {"partitions": {"nope": 1}}}}));
        assert_eq!(
            messages(&unknown),
            [
                "spec.updateStrategy.manualUpdate.partitions: Invalid value: \"nope\": subset nope does not exist"
            ]
        );
        let adaptive = ud(json!({"topology": {"scheduleStrategy": {"type": "Adaptive"},
            "subsets": [{"name": "a", "replicas": 1}, {"name": "b"}]}}));
        assert_eq!(
            messages(&adaptive),
            [
                "spec.topology.subsets[0].replicas: Forbidden: specify replicas use minReplicas/maxReplicas to enable adaptive strategy"
            ]
        );
    }

    #[test]
    fn a_subset_keeps_its_nodes_on_update() {
        let old = ud(json!({}));
        let mut new = old.clone();
        new.spec.topology.subsets[0].node_selector_term = serde_json::from_value(
            json!({"matchExpressions": [{"key": "pool", "operator": "In", "values": ["x"]}]}),
        )
        .expect("term");
        assert_eq!(
            validate_united_deployment(&new, Some(&old)).messages(),
            [
                "spec.topology.subsets[0].nodeSelectorTerm: Forbidden: may not be changed in an update"
            ]
        );
    }
}
