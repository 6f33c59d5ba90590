//! CloneSet v1alpha1 <-> v1beta1.
//!
//! v1alpha1 folds the pod update policy into `updateStrategy.type` and keeps image
//! pre-download settings in annotations; v1beta1 nests them under `rollingUpdate`. As
//! upstream does, the pre-download annotations are read into the v1beta1 fields and written
//! back from them, and `disablePVCReuse` is the negation of `enablePVCReuse`.

use std::collections::BTreeMap;

use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;

use super::HubConvertible;
use crate::apps::common::InPlaceUpdateStrategy;
use crate::apps::{v1alpha1 as alpha, v1beta1 as beta};
use crate::well_known::annotations::{
    IMAGE_PREDOWNLOAD_MIN_UPDATED_READY_PODS, IMAGE_PREDOWNLOAD_PARALLELISM,
    IMAGE_PREDOWNLOAD_TIMEOUT_SECONDS,
};
use crate::well_known::labels::CLONESET_SCALING_EXCLUDE_PREPARING_DELETE;

impl HubConvertible for alpha::CloneSet {
    type Hub = beta::CloneSet;

    fn map_to_hub(self) -> beta::CloneSet {
        let alpha::CloneSet { metadata, spec, status } = self;
        let exclude_preparing_delete = metadata
            .labels
            .as_ref()
            .and_then(|labels| labels.get(CLONESET_SCALING_EXCLUDE_PREPARING_DELETE))
            .is_some_and(|value| value == "true");
        let empty = BTreeMap::new();
        let annotations = metadata.annotations.as_ref().unwrap_or(&empty);
        let update = spec.update_strategy;
        let (type_, pod_update_policy) = match update.type_ {
            None => (None, None),
            Some(alpha::CloneSetUpdateStrategyType::OnDelete) => {
                (Some(beta::CloneSetUpdateStrategyType::OnDelete), None)
            }
            Some(other) => (
                Some(beta::CloneSetUpdateStrategyType::RollingUpdate),
                Some(beta::CloneSetPodUpdatePolicy::from(other.as_str())),
            ),
        };
        let rolling_update = beta::RollingUpdateCloneSetStrategy {
            partition: update.partition,
            max_unavailable: update.max_unavailable,
            max_surge: update.max_surge,
            pod_update_policy,
            paused: update.paused,
            priority_strategy: update.priority_strategy,
            scatter_strategy: update.scatter_strategy,
            in_place_update_strategy: in_place_to_hub(update.in_place_update_strategy, annotations),
        };
        let spec = beta::CloneSetSpec {
            replicas: spec.replicas,
            selector: spec.selector,
            template: spec.template,
            volume_claim_templates: spec.volume_claim_templates,
            scale_strategy: beta::CloneSetScaleStrategy {
                pods_to_delete: spec.scale_strategy.pods_to_delete,
                max_unavailable: spec.scale_strategy.max_unavailable,
                enable_pvc_reuse: !spec.scale_strategy.disable_pvc_reuse,
                exclude_preparing_delete,
            },
            update_strategy: beta::CloneSetUpdateStrategy {
                type_,
                rolling_update: (rolling_update != Default::default()).then_some(rolling_update),
            },
            revision_history_limit: spec.revision_history_limit,
            min_ready_seconds: spec.min_ready_seconds,
            lifecycle: spec.lifecycle,
            progress_deadline_seconds: spec.progress_deadline_seconds,
        };
        beta::CloneSet { metadata, spec, status }
    }

    fn map_from_hub(hub: beta::CloneSet) -> Self {
        let beta::CloneSet { mut metadata, spec, status } = hub;
        let update = spec.update_strategy;
        let rolling = update.rolling_update.unwrap_or_default();
        let type_ = match (&update.type_, &rolling.pod_update_policy) {
            (Some(beta::CloneSetUpdateStrategyType::OnDelete), _) => {
                Some(alpha::CloneSetUpdateStrategyType::OnDelete)
            }
            (_, Some(policy)) => Some(alpha::CloneSetUpdateStrategyType::from(policy.as_str())),
            (Some(_), None) => Some(alpha::CloneSetUpdateStrategyType::ReCreate),
            (None, None) => None,
        };
        let in_place_update_strategy =
            in_place_from_hub(rolling.in_place_update_strategy, &mut metadata.annotations);
        let spec = alpha::CloneSetSpec {
            replicas: spec.replicas,
            selector: spec.selector,
            template: spec.template,
            volume_claim_templates: spec.volume_claim_templates,
            scale_strategy: alpha::CloneSetScaleStrategy {
                pods_to_delete: spec.scale_strategy.pods_to_delete,
                max_unavailable: spec.scale_strategy.max_unavailable,
                disable_pvc_reuse: !spec.scale_strategy.enable_pvc_reuse,
            },
            update_strategy: alpha::CloneSetUpdateStrategy {
                type_,
                partition: rolling.partition,
                max_unavailable: rolling.max_unavailable,
                max_surge: rolling.max_surge,
                paused: rolling.paused,
                priority_strategy: rolling.priority_strategy,
                scatter_strategy: rolling.scatter_strategy,
                in_place_update_strategy,
            },
            revision_history_limit: spec.revision_history_limit,
            min_ready_seconds: spec.min_ready_seconds,
            lifecycle: spec.lifecycle,
            progress_deadline_seconds: spec.progress_deadline_seconds,
        };
        alpha::CloneSet { metadata, spec, status }
    }
}

/// Builds the v1beta1 in-place strategy from the v1alpha1 one plus the pre-download
/// annotations, as upstream reads them.
pub(crate) fn in_place_to_hub(
    alpha: Option<InPlaceUpdateStrategy>,
    annotations: &BTreeMap<String, String>,
) -> Option<InPlaceUpdateStrategy> {
    let annotated = |key: &str| annotations.get(key).filter(|value| !value.is_empty());
    let parallelism = annotated(IMAGE_PREDOWNLOAD_PARALLELISM);
    let timeout = annotated(IMAGE_PREDOWNLOAD_TIMEOUT_SECONDS);
    let min_ready = annotated(IMAGE_PREDOWNLOAD_MIN_UPDATED_READY_PODS);
    if alpha.is_none() && parallelism.is_none() && timeout.is_none() && min_ready.is_none() {
        return None;
    }
    Some(InPlaceUpdateStrategy {
        grace_period_seconds: alpha.map_or(0, |alpha| alpha.grace_period_seconds),
        image_pre_download_parallelism: parallelism.map(|value| parse_int_or_string(value)),
        image_pre_download_timeout_seconds: timeout.and_then(|value| value.parse().ok()),
        image_pre_download_min_updated_ready_pods: min_ready.and_then(|value| value.parse().ok()),
    })
}

/// Splits the v1beta1 in-place strategy into the v1alpha1 one and the pre-download
/// annotations, as upstream writes them.
pub(crate) fn in_place_from_hub(
    hub: Option<InPlaceUpdateStrategy>,
    annotations: &mut Option<BTreeMap<String, String>>,
) -> Option<InPlaceUpdateStrategy> {
    let hub = hub.filter(|hub| *hub != InPlaceUpdateStrategy::default())?;
    let mut set = |key: &str, value: String| {
        annotations.get_or_insert_with(BTreeMap::new).insert(key.to_owned(), value);
    };
    if let Some(parallelism) = &hub.image_pre_download_parallelism {
        set(IMAGE_PREDOWNLOAD_PARALLELISM, int_or_string_text(parallelism));
    }
    if let Some(timeout) = hub.image_pre_download_timeout_seconds {
        set(IMAGE_PREDOWNLOAD_TIMEOUT_SECONDS, timeout.to_string());
    }
    if let Some(min_ready) = hub.image_pre_download_min_updated_ready_pods {
        set(IMAGE_PREDOWNLOAD_MIN_UPDATED_READY_PODS, min_ready.to_string());
    }
    Some(InPlaceUpdateStrategy {
        grace_period_seconds: hub.grace_period_seconds,
        ..Default::default()
    })
}

/// Parses an annotation value the way Go's `intstr.Parse` does: an integer if it is one,
/// otherwise the string.
pub(crate) fn parse_int_or_string(value: &str) -> IntOrString {
    value.parse().map_or_else(|_| IntOrString::String(value.to_owned()), IntOrString::Int)
}

/// The text form of an int-or-string.
pub(crate) fn int_or_string_text(value: &IntOrString) -> String {
    match value {
        IntOrString::Int(number) => number.to_string(),
        IntOrString::String(text) => text.clone(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::conversion::{from_hub, to_hub};
    use serde_json::json;

    fn alpha(value: serde_json::Value) -> alpha::CloneSet {
        serde_json::from_value(value).expect("valid v1alpha1 CloneSet")
    }

    #[test]
    fn in_place_only_becomes_rolling_update_with_pod_policy() {
        let cs = alpha(json!({
            "apiVersion": "apps.kruise.io/v1alpha1", "kind": "CloneSet",
            "metadata": {"name": "demo"},
            "spec": {"updateStrategy": {"type": "InPlaceOnly", "partition": 2}}
        }));
        let hub = to_hub(cs.clone()).expect("convert");
        let value = serde_json::to_value(&hub).expect("encode");
        assert_eq!(value["apiVersion"], "apps.kruise.io/v1beta1");
        assert_eq!(
            value["spec"]["updateStrategy"],
            json!({"type": "RollingUpdate", "rollingUpdate": {"partition": 2, "podUpdatePolicy": "InPlaceOnly"}})
        );
        assert_eq!(value["spec"]["scaleStrategy"], json!({"enablePVCReuse": true}));
        assert!(hub.metadata.annotations.is_none(), "a clean mapping needs no residue");
        assert_eq!(from_hub::<alpha::CloneSet>(hub).expect("back"), cs);
    }

    #[test]
    fn pre_download_annotations_move_into_the_strategy() {
        let cs = alpha(json!({
            "apiVersion": "apps.kruise.io/v1alpha1", "kind": "CloneSet",
            "metadata": {"name": "demo", "annotations": {IMAGE_PREDOWNLOAD_PARALLELISM: "50%"}},
            "spec": {"updateStrategy": {"type": "InPlaceIfPossible"}}
        }));
        let hub = to_hub(cs.clone()).expect("convert");
        let rolling = hub.spec.update_strategy.rolling_update.clone().expect("rolling update");
        let in_place = rolling.in_place_update_strategy.expect("in-place strategy");
        assert_eq!(
            in_place.image_pre_download_parallelism,
            Some(IntOrString::String("50%".into()))
        );
        assert_eq!(from_hub::<alpha::CloneSet>(hub).expect("back"), cs);
    }

    #[test]
    fn a_field_without_a_mapping_survives_the_round_trip() {
        let hub: beta::CloneSet = serde_json::from_value(json!({
            "apiVersion": "apps.kruise.io/v1beta1", "kind": "CloneSet",
            "metadata": {"name": "demo"},
            "spec": {"scaleStrategy": {"excludePreparingDelete": true, "enablePVCReuse": true}}
        }))
        .expect("valid v1beta1 CloneSet");
        let down = from_hub::<alpha::CloneSet>(hub.clone()).expect("down");
        assert!(
            down.metadata
                .annotations
                .as_ref()
                .is_some_and(|a| a.contains_key(super::super::RESIDUE_ANNOTATION)),
            "the field with no v1alpha1 home is recorded"
        );
        assert_eq!(to_hub(down).expect("up"), hub);
    }
}
