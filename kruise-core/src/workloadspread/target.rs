//! Which WorkloadSpread governs a pod: owner kinds, the custom workload whitelist, and the
//! match of a WorkloadSpread's `targetRef` against the pod's owner chain.

use std::collections::BTreeMap;

use kruise_api::apps::v1beta1::{TargetReference, WorkloadSpread};

use crate::admission::meta::label_selector_as_selector;

/// One link of a pod's owner chain: a controller reference.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct WorkloadRef<'a> {
    /// `apiVersion` of the owner (`apps/v1`, `apps.kruise.io/v1alpha1`, ...).
    pub api_version: &'a str,
    /// Kind of the owner.
    pub kind: &'a str,
    /// Name of the owner.
    pub name: &'a str,
}

/// The ConfigMap key of the whitelist.
pub const WHITELIST_CONFIG_KEY: &str = "WorkloadSpread_Watch_Custom_Workload_WhiteList";

pub use crate::custom_workload::{
    CustomWorkload, CustomWorkloadWhitelist, GroupVersionKind, WhitelistError, parse_group,
};

/// Whether pods owned by this kind can be governed by a WorkloadSpread (upstream's
/// `matchReference`): Deployment, ReplicaSet and StatefulSet of `apps`, Job of `batch`,
/// CloneSet and StatefulSet of `apps.kruise.io`, and the whitelist's workloads and
/// sub-resources. The version is not looked at.
pub fn is_supported_owner(
    api_version: &str,
    kind: &str,
    whitelist: &CustomWorkloadWhitelist,
) -> bool {
    let Some(group) = parse_group(api_version) else {
        return false;
    };
    let builtin = matches!(
        (group, kind),
        ("apps", "Deployment" | "ReplicaSet" | "StatefulSet")
            | ("batch", "Job")
            | ("apps.kruise.io", "CloneSet" | "StatefulSet")
    );
    builtin || whitelist.contains(group, kind)
}

/// The group, kind and name a `targetRef` names, or `None` when its API version does not
/// parse.
pub fn target_group_kind_name(target: &TargetReference) -> Option<(&str, &str, &str)> {
    Some((parse_group(&target.api_version)?, &target.kind, &target.name))
}

/// Whether the target names this owner (same group, kind and name; the version may differ).
pub fn is_reference_equal(target: &TargetReference, owner: &WorkloadRef<'_>) -> bool {
    match (target_group_kind_name(target), parse_group(owner.api_version)) {
        (Some((group, kind, name)), Some(owner_group)) => {
            group == owner_group && kind == owner.kind && name == owner.name
        }
        _ => false,
    }
}

/// The WorkloadSpread that governs a new pod, as upstream's pod webhook finds it.
///
/// `candidates` are the WorkloadSpreads of the pod's namespace (pass them sorted by name, as
/// upstream's cache lists them: the first match wins). `owner_chain` is the pod's controller,
/// then that controller's controller, and so on (a ReplicaSet, then its Deployment); the caller
/// stops the chain after the first owner for which [`is_supported_owner`] is false, as
/// upstream does not look past such owners. WorkloadSpreads being deleted or without a
/// `targetRef` are skipped; the target must name a link of the chain (group, kind and name),
/// and the `targetFilter` selector, when given, must select the pod's labels.
pub fn select_workload_spread<'a>(
    candidates: &'a [WorkloadSpread],
    owner_chain: &[WorkloadRef<'_>],
    pod_labels: &BTreeMap<String, String>,
) -> Option<&'a WorkloadSpread> {
    if owner_chain.is_empty() {
        return None;
    }
    candidates.iter().find(|ws| {
        if ws.metadata.deletion_timestamp.is_some() {
            return false;
        }
        let Some(target) = ws.spec.target_reference.as_ref() else {
            return false;
        };
        if !owner_chain.iter().any(|owner| is_reference_equal(target, owner)) {
            return false;
        }
        pod_selected(ws, pod_labels)
    })
}

/// Whether the WorkloadSpread's `targetFilter` selects these labels (no filter or no selector
/// selects everything; an invalid selector nothing).
pub(crate) fn pod_selected(ws: &WorkloadSpread, labels: &BTreeMap<String, String>) -> bool {
    let Some(selector) = ws.spec.target_filter.as_ref().and_then(|f| f.selector.as_ref()) else {
        return true;
    };
    match label_selector_as_selector(Some(selector)) {
        Ok(selector) => selector.matches(labels),
        Err(_) => false,
    }
}
