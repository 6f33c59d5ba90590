//! BatchRelease v1alpha1 <-> v1beta1, after upstream's `api/v1alpha1/conversion.go`:
//! `spec.targetReference.workloadRef` <-> `spec.workloadRef`, the release plan field by
//! field, the annotation `rollouts.kruise.io/rolling-style` <-> `releasePlan.rollingStyle`,
//! and the status field by field (v1alpha1 has no `status.message`).
//!
//! The rolling style exists in both versions' release plans, and v1alpha1 also has the
//! annotation. Going up, an annotation naming a style (`partition`, `canary` or `bluegreen`,
//! in any case) sets it, as upstream's does; otherwise v1alpha1's own `rollingStyle` is kept
//! (upstream drops it). Going down, the field is copied and the annotation is left alone
//! unless it names a different style, in which case it is rewritten to the field's (or
//! removed when the field is unset); upstream writes the annotation every time, which would
//! make every v1alpha1 round trip differ. Annotations are kept on the hub as upstream keeps
//! them. Anything else the mapping cannot carry is kept by the residue annotation of
//! [`super`].

use super::HubConvertible;
use crate::rollouts::{v1alpha1 as alpha, v1beta1 as beta};
use crate::well_known::rollouts::annotations::ROLLING_STYLE;

/// The style an annotation value names, compared case-insensitively as upstream does.
fn named_style(text: &str) -> Option<beta::RollingStyleType> {
    beta::RollingStyleType::KNOWN
        .iter()
        .find(|known| known.eq_ignore_ascii_case(text))
        .map(|known| beta::RollingStyleType::from(*known))
}

impl HubConvertible for alpha::BatchRelease {
    type Hub = beta::BatchRelease;

    fn map_to_hub(self) -> beta::BatchRelease {
        let alpha::BatchRelease { metadata, spec, status } = self;
        let mut release_plan = spec.release_plan;
        if let Some(style) = metadata
            .annotations
            .as_ref()
            .and_then(|a| a.get(ROLLING_STYLE))
            .and_then(|text| named_style(text))
        {
            release_plan.rolling_style = Some(style);
        }
        let spec = beta::BatchReleaseSpec {
            workload_ref: spec.target_ref.workload_ref.unwrap_or_default(),
            release_plan,
        };
        let status = status.map(|status| beta::BatchReleaseStatus {
            conditions: status.conditions,
            canary_status: status.canary_status,
            stable_revision: status.stable_revision,
            update_revision: status.update_revision,
            observed_generation: status.observed_generation,
            observed_rollout_id: status.observed_rollout_id,
            observed_workload_replicas: status.observed_workload_replicas,
            collision_count: status.collision_count,
            observed_release_plan_hash: status.observed_release_plan_hash,
            phase: status.phase,
            message: String::new(),
        });
        beta::BatchRelease { metadata, spec, status }
    }

    fn map_from_hub(hub: beta::BatchRelease) -> Self {
        let beta::BatchRelease { mut metadata, spec, status } = hub;
        let release_plan = spec.release_plan;
        if let Some(annotations) = metadata.annotations.as_mut()
            && let Some(named) = annotations.get(ROLLING_STYLE).and_then(|text| named_style(text))
        {
            match &release_plan.rolling_style {
                Some(style) if style.as_str().eq_ignore_ascii_case(named.as_str()) => {}
                Some(style) => {
                    annotations.insert(ROLLING_STYLE.to_owned(), style.as_str().to_lowercase());
                }
                None => {
                    annotations.remove(ROLLING_STYLE);
                    if annotations.is_empty() {
                        metadata.annotations = None;
                    }
                }
            }
        }
        let spec = alpha::BatchReleaseSpec {
            target_ref: alpha::ObjectRef { workload_ref: Some(spec.workload_ref) },
            release_plan,
        };
        let status = status.map(|status| alpha::BatchReleaseStatus {
            conditions: status.conditions,
            canary_status: status.canary_status,
            stable_revision: status.stable_revision,
            update_revision: status.update_revision,
            observed_generation: status.observed_generation,
            observed_rollout_id: status.observed_rollout_id,
            observed_workload_replicas: status.observed_workload_replicas,
            collision_count: status.collision_count,
            observed_release_plan_hash: status.observed_release_plan_hash,
            phase: status.phase,
        });
        alpha::BatchRelease { metadata, spec, status }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::conversion::{RESIDUE_ANNOTATION, from_hub, to_hub};
    use serde_json::json;

    #[test]
    fn annotation_sets_the_rolling_style() {
        let release: alpha::BatchRelease = serde_json::from_value(json!({
            "apiVersion": "rollouts.kruise.io/v1alpha1", "kind": "BatchRelease",
            "metadata": {"name": "br", "annotations": {ROLLING_STYLE: "bluegreen"}},
            "spec": {
                "targetReference": {"workloadRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "d"}},
                "releasePlan": {"batches": [{"canaryReplicas": 1}, {"canaryReplicas": "50%"}],
                    "batchPartition": 0, "enableExtraWorkloadForCanary": false}
            },
            "status": {"canaryStatus": {"currentBatch": 0, "batchState": "Upgrading"}, "phase": "Progressing"}
        }))
        .expect("valid v1alpha1 BatchRelease");
        let hub = to_hub(release.clone()).expect("convert");
        let value = serde_json::to_value(&hub).expect("encode");
        assert_eq!(value["spec"]["workloadRef"]["name"], "d");
        assert_eq!(value["spec"]["releasePlan"]["rollingStyle"], "BlueGreen");
        assert_eq!(value["status"]["canaryStatus"]["batchState"], "Upgrading");
        // Going down writes the field too; the residue records that it was unset.
        let annotations = hub.metadata.annotations.clone().unwrap_or_default();
        assert!(annotations.contains_key(RESIDUE_ANNOTATION), "{annotations:?}");
        assert_eq!(from_hub::<alpha::BatchRelease>(hub).expect("back"), release);

        // With the field set as well, nothing needs recording.
        let mut both = release.clone();
        both.spec.release_plan.rolling_style = Some(beta::RollingStyleType::BlueGreen);
        let hub = to_hub(both.clone()).expect("convert");
        let annotations = hub.metadata.annotations.clone().unwrap_or_default();
        assert!(!annotations.contains_key(RESIDUE_ANNOTATION), "{annotations:?}");
        assert_eq!(from_hub::<alpha::BatchRelease>(hub).expect("back"), both);
    }

    #[test]
    fn v1beta1_release_goes_down_without_a_new_annotation() {
        let hub: beta::BatchRelease = serde_json::from_value(json!({
            "apiVersion": "rollouts.kruise.io/v1beta1", "kind": "BatchRelease",
            "metadata": {"name": "br"},
            "spec": {"workloadRef": {"apiVersion": "apps.kruise.io/v1alpha1", "kind": "CloneSet", "name": "c"},
                "releasePlan": {"batches": [{"canaryReplicas": "100%"}], "rollingStyle": "Partition",
                    "enableExtraWorkloadForCanary": false}},
            "status": {"canaryStatus": {"currentBatch": 0}, "message": "working"}
        }))
        .expect("valid v1beta1 BatchRelease");
        let down = from_hub::<alpha::BatchRelease>(hub.clone()).expect("down");
        let value = serde_json::to_value(&down).expect("encode");
        assert_eq!(value["spec"]["targetReference"]["workloadRef"]["kind"], "CloneSet");
        assert_eq!(value["spec"]["releasePlan"]["rollingStyle"], "Partition");
        assert!(value["status"].get("message").is_none());
        assert_eq!(to_hub(down).expect("up"), hub);
    }

    #[test]
    fn a_contradicting_annotation_is_rewritten_going_down() {
        let hub: beta::BatchRelease = serde_json::from_value(json!({
            "apiVersion": "rollouts.kruise.io/v1beta1", "kind": "BatchRelease",
            "metadata": {"name": "br", "annotations": {ROLLING_STYLE: "Canary"}},
            "spec": {"releasePlan": {"batches": [], "rollingStyle": "Partition",
                "enableExtraWorkloadForCanary": false}}
        }))
        .expect("valid v1beta1 BatchRelease");
        let down = from_hub::<alpha::BatchRelease>(hub.clone()).expect("down");
        let annotations = down.metadata.annotations.clone().unwrap_or_default();
        assert_eq!(annotations.get(ROLLING_STYLE).map(String::as_str), Some("partition"));
        assert_eq!(to_hub(down).expect("up"), hub);
    }
}
