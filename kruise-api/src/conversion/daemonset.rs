//! Advanced DaemonSet v1alpha1 <-> v1beta1.
//!
//! As upstream does:
//! - the deprecated v1alpha1 rolling-update type `Surging` becomes `Standard`;
//! - the v1alpha1 annotation `daemonset.kruise.io/progressive-create-pod: "true"` turns on
//!   v1beta1 `scaleStrategy.partitionedScaling` (the annotation stays in the metadata), and
//!   `partitionedScaling: true` writes the annotation when going back;
//! - v1alpha1 `status.daemonSetHash` is v1beta1 `status.updateRevision`.

use std::collections::BTreeMap;

use super::HubConvertible;
use crate::apps::{v1alpha1 as alpha, v1beta1 as beta};
use crate::well_known::annotations::DAEMONSET_PROGRESSIVE_CREATE_POD;

impl HubConvertible for alpha::DaemonSet {
    type Hub = beta::DaemonSet;

    fn map_to_hub(self) -> beta::DaemonSet {
        let alpha::DaemonSet { metadata, spec, status } = self;
        let partitioned = metadata
            .annotations
            .as_ref()
            .and_then(|annotations| annotations.get(DAEMONSET_PROGRESSIVE_CREATE_POD))
            .is_some_and(|value| value == "true");
        let rolling_update =
            spec.update_strategy.rolling_update.map(|rolling| beta::RollingUpdateDaemonSet {
                type_: rolling.type_.map(|type_| match type_ {
                    alpha::RollingUpdateType::Surging => beta::RollingUpdateType::Standard,
                    other => beta::RollingUpdateType::from(other.as_str()),
                }),
                max_unavailable: rolling.max_unavailable,
                max_surge: rolling.max_surge,
                selector: rolling.selector,
                partition: rolling.partition,
                paused: rolling.paused,
            });
        let spec = beta::DaemonSetSpec {
            selector: spec.selector,
            template: spec.template,
            update_strategy: beta::DaemonSetUpdateStrategy {
                type_: spec.update_strategy.type_,
                rolling_update,
            },
            min_ready_seconds: spec.min_ready_seconds,
            burst_replicas: spec.burst_replicas,
            revision_history_limit: spec.revision_history_limit,
            lifecycle: spec.lifecycle,
            scale_strategy: partitioned
                .then_some(beta::DaemonSetScaleStrategy { partitioned_scaling: true }),
        };
        let status = status.map(|status| beta::DaemonSetStatus {
            current_number_scheduled: status.current_number_scheduled,
            number_misscheduled: status.number_misscheduled,
            desired_number_scheduled: status.desired_number_scheduled,
            number_ready: status.number_ready,
            observed_generation: status.observed_generation,
            updated_number_scheduled: status.updated_number_scheduled,
            number_available: status.number_available,
            number_unavailable: status.number_unavailable,
            collision_count: status.collision_count,
            conditions: status.conditions,
            update_revision: status.daemon_set_hash,
        });
        beta::DaemonSet { metadata, spec, status }
    }

    fn map_from_hub(hub: beta::DaemonSet) -> Self {
        let beta::DaemonSet { mut metadata, spec, status } = hub;
        if spec.scale_strategy.as_ref().is_some_and(|scale| scale.partitioned_scaling) {
            metadata
                .annotations
                .get_or_insert_with(BTreeMap::new)
                .insert(DAEMONSET_PROGRESSIVE_CREATE_POD.to_owned(), "true".to_owned());
        }
        let rolling_update =
            spec.update_strategy.rolling_update.map(|rolling| alpha::RollingUpdateDaemonSet {
                type_: rolling.type_.map(|type_| alpha::RollingUpdateType::from(type_.as_str())),
                max_unavailable: rolling.max_unavailable,
                max_surge: rolling.max_surge,
                selector: rolling.selector,
                partition: rolling.partition,
                paused: rolling.paused,
            });
        let spec = alpha::DaemonSetSpec {
            selector: spec.selector,
            template: spec.template,
            update_strategy: alpha::DaemonSetUpdateStrategy {
                type_: spec.update_strategy.type_,
                rolling_update,
            },
            min_ready_seconds: spec.min_ready_seconds,
            burst_replicas: spec.burst_replicas,
            revision_history_limit: spec.revision_history_limit,
            lifecycle: spec.lifecycle,
        };
        let status = status.map(|status| alpha::DaemonSetStatus {
            current_number_scheduled: status.current_number_scheduled,
            number_misscheduled: status.number_misscheduled,
            desired_number_scheduled: status.desired_number_scheduled,
            number_ready: status.number_ready,
            observed_generation: status.observed_generation,
            updated_number_scheduled: status.updated_number_scheduled,
            number_available: status.number_available,
            number_unavailable: status.number_unavailable,
            collision_count: status.collision_count,
            conditions: status.conditions,
            daemon_set_hash: status.update_revision,
        });
        alpha::DaemonSet { metadata, spec, status }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::conversion::{RESIDUE_ANNOTATION, from_hub, to_hub};
    use serde_json::json;

    fn alpha(value: serde_json::Value) -> alpha::DaemonSet {
        serde_json::from_value(value).expect("valid v1alpha1 DaemonSet")
    }

    fn has_residue(metadata: &k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta) -> bool {
        metadata.annotations.as_ref().is_some_and(|a| a.contains_key(RESIDUE_ANNOTATION))
    }

    #[test]
    fn progressive_create_annotation_turns_on_partitioned_scaling() {
        let ds = alpha(json!({
            "apiVersion": "apps.kruise.io/v1alpha1", "kind": "DaemonSet",
            "metadata": {"name": "node-agent", "annotations": {DAEMONSET_PROGRESSIVE_CREATE_POD: "true"}},
            "spec": {
                "selector": {"matchLabels": {"app": "node-agent"}},
                "template": {
                    "metadata": {"labels": {"app": "node-agent"}},
                    "spec": {"containers": [{"name": "agent", "image": "agent:1.0"}]}
                },
                "updateStrategy": {
                    "type": "RollingUpdate",
                    "rollingUpdate": {"rollingUpdateType": "InPlaceIfPossible", "partition": 10, "maxUnavailable": "10%"}
                }
            },
            "status": {
                "currentNumberScheduled": 3, "numberMisscheduled": 0, "desiredNumberScheduled": 3,
                "numberReady": 3, "updatedNumberScheduled": 1, "daemonSetHash": "node-agent-7d9f"
            }
        }));
        let hub = to_hub(ds.clone()).expect("convert");
        let value = serde_json::to_value(&hub).expect("encode");
        assert_eq!(value["apiVersion"], "apps.kruise.io/v1beta1");
        assert_eq!(value["spec"]["scaleStrategy"], json!({"partitionedScaling": true}));
        assert_eq!(
            value["spec"]["updateStrategy"]["rollingUpdate"]["rollingUpdateType"],
            "InPlaceIfPossible"
        );
        assert_eq!(value["status"]["updateRevision"], "node-agent-7d9f");
        assert!(value["status"].get("daemonSetHash").is_none());
        assert!(!has_residue(&hub.metadata), "a clean mapping needs no residue");
        assert_eq!(from_hub::<alpha::DaemonSet>(hub).expect("back"), ds);
    }

    #[test]
    fn surging_becomes_standard_and_is_restored_by_the_residue() {
        let ds = alpha(json!({
            "apiVersion": "apps.kruise.io/v1alpha1", "kind": "DaemonSet",
            "metadata": {"name": "demo"},
            "spec": {"updateStrategy": {"rollingUpdate": {"rollingUpdateType": "Surging", "maxSurge": "30%"}}}
        }));
        let mapped = ds.clone().map_to_hub();
        let rolling = mapped.spec.update_strategy.rolling_update.expect("rolling update");
        assert_eq!(rolling.type_, Some(beta::RollingUpdateType::Standard));
        let hub = to_hub(ds.clone()).expect("convert");
        assert!(has_residue(&hub.metadata));
        assert_eq!(from_hub::<alpha::DaemonSet>(hub).expect("back"), ds);
    }

    #[test]
    fn hub_without_scale_strategy_round_trips_cleanly() {
        let hub: beta::DaemonSet = serde_json::from_value(json!({
            "apiVersion": "apps.kruise.io/v1beta1", "kind": "DaemonSet",
            "metadata": {"name": "demo", "namespace": "kube-system"},
            "spec": {
                "updateStrategy": {"type": "RollingUpdate", "rollingUpdate": {"selector": {"matchLabels": {"nodeType": "canary"}}, "paused": true}},
                "lifecycle": {"preDelete": {"labelsHandler": {"example.io/block-deleting": "true"}}},
                "burstReplicas": "20%"
            }
        }))
        .expect("valid v1beta1 DaemonSet");
        let down = from_hub::<alpha::DaemonSet>(hub.clone()).expect("down");
        assert!(!has_residue(&down.metadata), "a clean mapping needs no residue");
        assert_eq!(to_hub(down).expect("up"), hub);
    }

    #[test]
    fn partitioned_scaling_from_the_hub_writes_the_annotation() {
        let hub: beta::DaemonSet = serde_json::from_value(json!({
            "apiVersion": "apps.kruise.io/v1beta1", "kind": "DaemonSet",
            "metadata": {"name": "demo"},
            "spec": {"scaleStrategy": {"partitionedScaling": true}}
        }))
        .expect("valid v1beta1 DaemonSet");
        let down = from_hub::<alpha::DaemonSet>(hub.clone()).expect("down");
        let annotations = down.metadata.annotations.clone().unwrap_or_default();
        assert_eq!(
            annotations.get(DAEMONSET_PROGRESSIVE_CREATE_POD).map(String::as_str),
            Some("true")
        );
        // Upstream leaves the annotation on the v1beta1 object; the residue takes it off again.
        assert_eq!(to_hub(down).expect("up"), hub);
    }
}
