//! The Advanced StatefulSet spec, read once into the numbers and switches the planner works
//! with, with upstream's defaults for what the defaulting webhook would have filled in.

use k8s_openapi::api::core::v1::PersistentVolumeClaim;
use kruise_api::apps::common::{Lifecycle, UpdatePriorityStrategy};
use kruise_api::apps::v1beta1::{
    PersistentVolumeClaimRetentionPolicyType, PodManagementPolicyType, PodUpdateStrategyType,
    StatefulSet, StatefulSetUpdateStrategyType, VolumeClaimUpdateStrategyType,
};

use super::SpecError;
use super::ordinals::{Reserved, replica_ordinals};
use super::snapshot::FeatureGates;
use crate::intstr::{IntOrPercent, Rounding};
use crate::selector::PodSelector;

/// Upstream's default `revisionHistoryLimit`.
const DEFAULT_REVISION_HISTORY_LIMIT: i32 = 10;

/// How pods move to a new revision.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum UpdatePolicy {
    ReCreate,
    InPlaceIfPossible,
    InPlaceOnly,
}

/// The spec as the planner uses it.
pub(crate) struct Spec<'a> {
    pub set: &'a StatefulSet,
    pub name: &'a str,
    pub namespace: &'a str,
    pub uid: &'a str,
    pub replicas: i32,
    pub selector: PodSelector,
    /// The ordinals replicas hold, ascending (`replicas` of them).
    pub ordinals: Vec<i32>,
    /// The first ordinal.
    start: i32,
    reserved: Reserved,
    /// OrderedReady: one pod at a time, in order.
    pub monotonic: bool,
    pub on_delete: bool,
    /// Pods kept at the current revision.
    pub partition: i32,
    /// Most pods unavailable during a rolling update (at least 1).
    pub max_unavailable: i32,
    pub policy: UpdatePolicy,
    pub paused: bool,
    /// `unorderedUpdate` is set: targets are chosen by priority, not by ordinal.
    pub unordered: bool,
    pub priority: Option<&'a UpdatePriorityStrategy>,
    pub min_ready_seconds: i32,
    pub grace_period_seconds: i32,
    /// `scaleStrategy.maxUnavailable`, scaled: most pods unavailable while creating.
    pub scale_budget: Option<i32>,
    pub lifecycle: Option<&'a Lifecycle>,
    pub claim_templates: Vec<&'a PersistentVolumeClaim>,
    /// Claims of pods removed by a scale-in are deleted with them (`whenScaled: Delete`).
    pub delete_claims_when_scaled: bool,
    /// Claims are deleted with the set (`whenDeleted: Delete`).
    pub delete_claims_when_deleted: bool,
    /// `volumeClaimUpdateStrategy: OnPodRollingUpdate` (with its gate): claims grow with the
    /// rollout.
    pub resize_claims: bool,
    pub revision_history_limit: i32,
    pub pod_index_label: bool,
    /// New pods carry the `KruisePodReady` readiness gate (`PodWebhook`).
    pub readiness_gate: bool,
}

impl<'a> Spec<'a> {
    /// Reads `set` under `gates`. Values the planner cannot act on safely are errors naming
    /// the field.
    pub(crate) fn parse(set: &'a StatefulSet, gates: &FeatureGates) -> Result<Self, SpecError> {
        let spec = &set.spec;
        let replicas = spec.replicas.unwrap_or(1);
        if replicas < 0 {
            return Err(SpecError::NegativeReplicas { replicas });
        }
        let selector = PodSelector::parse(spec.selector.as_ref())
            .map_err(|err| SpecError::Selector(err.to_string()))?;
        if spec.selector.is_none() {
            return Err(SpecError::Selector("spec.selector: Required value".into()));
        }
        let template_labels = spec.template.metadata.as_ref().and_then(|m| m.labels.as_ref());
        if !selector.matches(template_labels) {
            return Err(SpecError::TemplateLabels { selector: selector.render() });
        }
        let start = match (&spec.ordinals, gates.stateful_set_start_ordinal) {
            (Some(ordinals), true) => ordinals.start,
            _ => 0,
        };
        if start < 0 {
            return Err(SpecError::NegativeStart { start });
        }
        let reserved = Reserved::parse(&spec.reserve_ordinals)?;
        let ordinals = replica_ordinals(start, replicas, &reserved);

        let on_delete = spec.update_strategy.type_ == Some(StatefulSetUpdateStrategyType::OnDelete);
        let rolling = spec.update_strategy.rolling_update.as_ref();
        let partition = rolling.and_then(|r| r.partition).unwrap_or(0).max(0);
        let max_unavailable = match rolling.and_then(|r| r.max_unavailable.as_ref()) {
            None => 1,
            Some(value) => IntOrPercent::parse(value)
                .map_err(|err| SpecError::Budget {
                    field: "spec.updateStrategy.rollingUpdate.maxUnavailable",
                    message: err.to_string(),
                })?
                .scale(replicas, Rounding::Down)
                .max(1),
        };
        let scale_budget =
            match spec.scale_strategy.as_ref().and_then(|s| s.max_unavailable.as_ref()) {
                None => None,
                Some(value) => Some(
                    IntOrPercent::parse(value)
                        .map_err(|err| SpecError::Budget {
                            field: "spec.scaleStrategy.maxUnavailable",
                            message: err.to_string(),
                        })?
                        .scale(replicas, Rounding::Down)
                        .max(1),
                ),
            };
        let policy = match rolling.and_then(|r| r.pod_update_policy.as_ref()) {
            Some(PodUpdateStrategyType::InPlaceIfPossible) => UpdatePolicy::InPlaceIfPossible,
            Some(PodUpdateStrategyType::InPlaceOnly) => UpdatePolicy::InPlaceOnly,
            _ => UpdatePolicy::ReCreate,
        };
        let unordered = rolling.and_then(|r| r.unordered_update.as_ref());
        let retention = spec
            .persistent_volume_claim_retention_policy
            .as_ref()
            .filter(|_| gates.stateful_set_auto_delete_pvc);
        let deletes = |policy: Option<&PersistentVolumeClaimRetentionPolicyType>| {
            policy == Some(&PersistentVolumeClaimRetentionPolicyType::Delete)
        };
        Ok(Self {
            set,
            name: set.metadata.name.as_deref().unwrap_or_default(),
            namespace: set.metadata.namespace.as_deref().unwrap_or_default(),
            uid: set.metadata.uid.as_deref().unwrap_or_default(),
            replicas,
            selector,
            ordinals,
            start,
            reserved,
            monotonic: spec.pod_management_policy != Some(PodManagementPolicyType::Parallel),
            on_delete,
            partition,
            max_unavailable,
            policy,
            paused: rolling.is_some_and(|r| r.paused),
            unordered: unordered.is_some(),
            priority: unordered.and_then(|u| u.priority_strategy.as_ref()),
            min_ready_seconds: rolling.and_then(|r| r.min_ready_seconds).unwrap_or(0).max(0),
            grace_period_seconds: rolling
                .and_then(|r| r.in_place_update_strategy.as_ref())
                .map_or(0, |s| s.grace_period_seconds),
            scale_budget,
            lifecycle: spec.lifecycle.as_ref(),
            claim_templates: spec.volume_claim_templates.iter().map(|t| &t.object).collect(),
            delete_claims_when_scaled: deletes(retention.and_then(|r| r.when_scaled.as_ref())),
            delete_claims_when_deleted: deletes(retention.and_then(|r| r.when_deleted.as_ref())),
            resize_claims: gates.stateful_set_auto_resize_pvc
                && spec.volume_claim_update_strategy.type_
                    == Some(VolumeClaimUpdateStrategyType::OnPodRollingUpdate),
            revision_history_limit: spec
                .revision_history_limit
                .unwrap_or(DEFAULT_REVISION_HISTORY_LIMIT)
                .max(0),
            pod_index_label: gates.pod_index_label,
            readiness_gate: gates.pod_webhook,
        })
    }

    /// The position among the replicas of the one that holds `ordinal`; `None` when the
    /// ordinal is out of range or reserved.
    pub(crate) fn replica_position(&self, ordinal: i32) -> Option<usize> {
        let (ordinal64, start) = (i64::from(ordinal), i64::from(self.start));
        if ordinal < self.start || self.reserved.contains(ordinal64) {
            return None;
        }
        // Replicas hold every free ordinal from the start: the position is the number of free
        // ordinals before this one.
        let position =
            usize::try_from(ordinal64 - start - self.reserved.count_in(start, ordinal64)).ok()?;
        (self.ordinals.get(position) == Some(&ordinal)).then_some(position)
    }

    /// The names of the volume claim templates.
    pub(crate) fn claim_template_names(&self) -> impl Iterator<Item = &str> {
        self.claim_templates.iter().map(|t| t.metadata.name.as_deref().unwrap_or_default())
    }
}
