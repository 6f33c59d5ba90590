//! The CloneSet spec, read once into the numbers and switches the planner works with.

use std::collections::BTreeSet;

use kruise_api::apps::common::{InPlaceUpdateStrategy, Lifecycle};
use kruise_api::apps::v1beta1::{
    CloneSet, CloneSetPodUpdatePolicy, CloneSetUpdateStrategyType, RollingUpdateCloneSetStrategy,
};

use super::SpecError;
use crate::intstr::CloneSetBudget;
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

/// The CloneSet spec as the planner uses it.
#[derive(Debug)]
pub(crate) struct Spec<'a> {
    pub cs: &'a CloneSet,
    pub name: &'a str,
    pub namespace: &'a str,
    pub uid: &'a str,
    pub replicas: i32,
    pub selector: PodSelector,
    /// Pods kept at the current revision.
    pub partition: i32,
    pub max_surge: i32,
    pub max_unavailable: i32,
    /// Bound on unavailable pods while scaling out.
    pub scale_max_unavailable: i32,
    pub on_delete: bool,
    pub paused: bool,
    pub policy: UpdatePolicy,
    /// The priority and scatter strategies, compiled against the label keys they read.
    pub order: crate::ordering::UpdateOrder<'a>,
    pub in_place: Option<&'a InPlaceUpdateStrategy>,
    pub min_ready_seconds: i32,
    pub lifecycle: Option<&'a Lifecycle>,
    pub pods_to_delete: BTreeSet<&'a str>,
    pub enable_pvc_reuse: bool,
    pub exclude_preparing_delete: bool,
    pub revision_history_limit: i32,
    pub progress_deadline_seconds: Option<i32>,
}

impl<'a> Spec<'a> {
    /// Reads `cs`. Malformed selectors are errors; malformed int-or-percent values fall back to
    /// 0 as upstream does, and are reported in `warnings`.
    pub(crate) fn parse(
        cs: &'a CloneSet,
        exclude_preparing_delete_flag: bool,
        warnings: &mut Vec<String>,
    ) -> Result<Self, SpecError> {
        let spec = &cs.spec;
        let replicas = spec.replicas.unwrap_or(1);
        if replicas < 0 {
            return Err(SpecError::NegativeReplicas { replicas });
        }
        let selector = PodSelector::parse(spec.selector.as_ref())?;
        if spec.selector.is_none() {
            return Err(SpecError::MissingSelector);
        }
        // Pods from such a template would be released as soon as they were created, and
        // replaced, without end (the webhook refuses it, but the object may predate it).
        if !selector.matches(spec.template.metadata.as_ref().and_then(|m| m.labels.as_ref())) {
            return Err(SpecError::TemplateLabels { selector: selector.render() });
        }
        let rolling = spec.update_strategy.rolling_update.as_ref();
        let default_rolling = RollingUpdateCloneSetStrategy::default();
        let ru = rolling.unwrap_or(&default_rolling);
        let (budget, errors) = crate::intstr::cloneset_budget(spec);
        warnings.extend(errors.into_iter().map(|err| format!("{err}; using 0")));
        let CloneSetBudget { partition, max_surge, max_unavailable, scale_max_unavailable, .. } =
            budget;
        let policy = match &ru.pod_update_policy {
            None | Some(CloneSetPodUpdatePolicy::ReCreate) => UpdatePolicy::ReCreate,
            Some(CloneSetPodUpdatePolicy::InPlaceIfPossible) => UpdatePolicy::InPlaceIfPossible,
            Some(CloneSetPodUpdatePolicy::InPlaceOnly) => UpdatePolicy::InPlaceOnly,
            Some(other) => {
                warnings.push(format!(
                    "spec.updateStrategy.rollingUpdate.podUpdatePolicy: unknown value {:?}; using ReCreate",
                    other.as_str()
                ));
                UpdatePolicy::ReCreate
            }
        };
        let priority = rolling.and_then(|ru| ru.priority_strategy.as_ref());
        let scatter = rolling.map(|ru| ru.scatter_strategy.as_slice()).unwrap_or_default();
        Ok(Self {
            cs,
            name: cs.metadata.name.as_deref().unwrap_or_default(),
            namespace: cs.metadata.namespace.as_deref().unwrap_or_default(),
            uid: cs.metadata.uid.as_deref().unwrap_or_default(),
            replicas,
            selector,
            partition,
            max_surge,
            max_unavailable,
            scale_max_unavailable,
            on_delete: matches!(
                spec.update_strategy.type_,
                Some(CloneSetUpdateStrategyType::OnDelete)
            ),
            paused: ru.paused,
            policy,
            order: crate::ordering::UpdateOrder::new(priority, scatter),
            in_place: rolling.and_then(|ru| ru.in_place_update_strategy.as_ref()),
            min_ready_seconds: spec.min_ready_seconds.max(0),
            lifecycle: spec.lifecycle.as_ref(),
            pods_to_delete: spec.scale_strategy.pods_to_delete.iter().map(String::as_str).collect(),
            enable_pvc_reuse: spec.scale_strategy.enable_pvc_reuse,
            exclude_preparing_delete: exclude_preparing_delete_flag
                || spec.scale_strategy.exclude_preparing_delete,
            revision_history_limit: spec
                .revision_history_limit
                .unwrap_or(DEFAULT_REVISION_HISTORY_LIMIT)
                .max(0),
            progress_deadline_seconds: spec
                .progress_deadline_seconds
                .filter(|seconds| *seconds != i32::MAX),
        })
    }

    /// Seconds between marking a pod not ready and changing it in place.
    pub(crate) fn grace_period_seconds(&self) -> i32 {
        self.in_place.map_or(0, |s| s.grace_period_seconds)
    }

    /// `status.expectedUpdatedReplicas`.
    pub(crate) fn expected_updated_replicas(&self) -> i32 {
        self.replicas - self.partition
    }
}
