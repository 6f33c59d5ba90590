//! Advanced StatefulSet v1alpha1 <-> v1beta1.
//!
//! Both versions share the update strategy, so it moves across unchanged. The fields only
//! v1beta1 has (reserved ordinals, lifecycle, scale strategy, PVC retention and resizing,
//! ordinals, and the extra status counters) have no v1alpha1 home; upstream drops them when
//! converting down, and the generic residue record keeps them here.

use super::HubConvertible;
use crate::apps::{v1alpha1 as alpha, v1beta1 as beta};

impl HubConvertible for alpha::StatefulSet {
    type Hub = beta::StatefulSet;

    fn map_to_hub(self) -> beta::StatefulSet {
        let alpha::StatefulSet { metadata, spec, status } = self;
        let spec = beta::StatefulSetSpec {
            replicas: spec.replicas,
            selector: spec.selector,
            template: spec.template,
            volume_claim_templates: spec.volume_claim_templates,
            service_name: spec.service_name,
            pod_management_policy: spec.pod_management_policy,
            update_strategy: spec.update_strategy,
            revision_history_limit: spec.revision_history_limit,
            ..Default::default()
        };
        let status = status.map(|status| beta::StatefulSetStatus {
            observed_generation: status.observed_generation,
            replicas: status.replicas,
            ready_replicas: status.ready_replicas,
            available_replicas: status.available_replicas,
            current_replicas: status.current_replicas,
            updated_replicas: status.updated_replicas,
            current_revision: status.current_revision,
            update_revision: status.update_revision,
            collision_count: status.collision_count,
            conditions: status.conditions,
            label_selector: status.label_selector,
            ..Default::default()
        });
        beta::StatefulSet { metadata, spec, status }
    }

    fn map_from_hub(hub: beta::StatefulSet) -> Self {
        let beta::StatefulSet { metadata, spec, status } = hub;
        let spec = alpha::StatefulSetSpec {
            replicas: spec.replicas,
            selector: spec.selector,
            template: spec.template,
            volume_claim_templates: spec.volume_claim_templates,
            service_name: spec.service_name,
            pod_management_policy: spec.pod_management_policy,
            update_strategy: spec.update_strategy,
            revision_history_limit: spec.revision_history_limit,
        };
        let status = status.map(|status| alpha::StatefulSetStatus {
            observed_generation: status.observed_generation,
            replicas: status.replicas,
            ready_replicas: status.ready_replicas,
            available_replicas: status.available_replicas,
            current_replicas: status.current_replicas,
            updated_replicas: status.updated_replicas,
            current_revision: status.current_revision,
            update_revision: status.update_revision,
            collision_count: status.collision_count,
            conditions: status.conditions,
            label_selector: status.label_selector,
        });
        alpha::StatefulSet { metadata, spec, status }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::conversion::{RESIDUE_ANNOTATION, from_hub, to_hub};
    use serde_json::json;

    fn alpha(value: serde_json::Value) -> alpha::StatefulSet {
        serde_json::from_value(value).expect("valid v1alpha1 StatefulSet")
    }

    fn has_residue(metadata: &k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta) -> bool {
        metadata.annotations.as_ref().is_some_and(|a| a.contains_key(RESIDUE_ANNOTATION))
    }

    #[test]
    fn in_place_parallel_update_converts_unchanged() {
        // The in-place update example from the Advanced StatefulSet manual.
        let sts = alpha(json!({
            "apiVersion": "apps.kruise.io/v1alpha1", "kind": "StatefulSet",
            "metadata": {"name": "sample"},
            "spec": {
                "replicas": 3,
                "serviceName": "fake-service",
                "selector": {"matchLabels": {"app": "sample"}},
                "template": {
                    "metadata": {"labels": {"app": "sample"}},
                    "spec": {
                        "readinessGates": [{"conditionType": "InPlaceUpdateReady"}],
                        "containers": [{"name": "main", "image": "nginx:alpine"}]
                    }
                },
                "podManagementPolicy": "Parallel",
                "updateStrategy": {
                    "type": "RollingUpdate",
                    "rollingUpdate": {
                        "podUpdatePolicy": "InPlaceIfPossible",
                        "maxUnavailable": 2,
                        "unorderedUpdate": {"priorityStrategy": {"orderPriority": [{"orderedKey": "rank"}]}}
                    }
                }
            },
            "status": {"replicas": 3, "readyReplicas": 3, "availableReplicas": 3,
                       "currentReplicas": 3, "updatedReplicas": 3, "labelSelector": "app=sample"}
        }));
        let hub = to_hub(sts.clone()).expect("convert");
        let value = serde_json::to_value(&hub).expect("encode");
        assert_eq!(value["apiVersion"], "apps.kruise.io/v1beta1");
        assert_eq!(
            value["spec"]["updateStrategy"]["rollingUpdate"],
            json!({"podUpdatePolicy": "InPlaceIfPossible", "maxUnavailable": 2,
                   "unorderedUpdate": {"priorityStrategy": {"orderPriority": [{"orderedKey": "rank"}]}}})
        );
        assert_eq!(value["spec"]["podManagementPolicy"], "Parallel");
        assert_eq!(value["status"]["labelSelector"], "app=sample");
        assert!(!has_residue(&hub.metadata), "a clean mapping needs no residue");
        assert_eq!(from_hub::<alpha::StatefulSet>(hub).expect("back"), sts);
    }

    #[test]
    fn v1beta1_only_fields_survive_a_trip_through_v1alpha1() {
        let hub: beta::StatefulSet = serde_json::from_value(json!({
            "apiVersion": "apps.kruise.io/v1beta1", "kind": "StatefulSet",
            "metadata": {"name": "sample"},
            "spec": {
                "replicas": 4,
                "reserveOrdinals": [1, "3-5"],
                "volumeClaimUpdateStrategy": {"type": "OnPodRollingUpdate"},
                "persistentVolumeClaimRetentionPolicy": {"whenDeleted": "Delete", "whenScaled": "Retain"},
                "ordinals": {"start": 1},
                "scaleStrategy": {"maxUnavailable": "10%"},
                "lifecycle": {"preDelete": {"finalizersHandler": ["example.io/hold"]}}
            },
            "status": {"replicas": 4, "readyReplicas": 4, "availableReplicas": 4,
                       "currentReplicas": 4, "updatedReplicas": 4, "updatedReadyReplicas": 4,
                       "volumeClaims": [{"volumeClaimName": "data", "compatibleReplicas": 4,
                                         "compatibleReadyReplicas": 3}]}
        }))
        .expect("valid v1beta1 StatefulSet");
        let down = from_hub::<alpha::StatefulSet>(hub.clone()).expect("down");
        assert_eq!(down.spec.replicas, Some(4));
        assert!(has_residue(&down.metadata), "fields with no v1alpha1 home are recorded");
        assert_eq!(to_hub(down).expect("up"), hub);
    }
}
