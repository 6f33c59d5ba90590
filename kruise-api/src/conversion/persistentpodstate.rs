//! PersistentPodState v1alpha1 <-> v1beta1.
//!
//! The only difference is the name of the key list in topology terms: v1alpha1
//! `nodeTopologyKeys`, v1beta1 `keys`. Everything else, status included, is the same type.

use super::HubConvertible;
use crate::apps::{v1alpha1 as alpha, v1beta1 as beta};

impl HubConvertible for alpha::PersistentPodState {
    type Hub = beta::PersistentPodState;

    fn map_to_hub(self) -> beta::PersistentPodState {
        let alpha::PersistentPodState { metadata, spec, status } = self;
        let to_hub = |term: alpha::NodeTopologyTerm| beta::NodeTopologyTerm {
            keys: term.node_topology_keys,
        };
        let spec = beta::PersistentPodStateSpec {
            target_reference: spec.target_reference,
            persistent_pod_annotations: spec.persistent_pod_annotations,
            required_persistent_topology: spec.required_persistent_topology.map(to_hub),
            preferred_persistent_topology: spec
                .preferred_persistent_topology
                .into_iter()
                .map(|term| beta::PreferredTopologyTerm {
                    weight: term.weight,
                    preference: to_hub(term.preference),
                })
                .collect(),
            persistent_pod_state_retention_policy: spec.persistent_pod_state_retention_policy,
        };
        beta::PersistentPodState { metadata, spec, status }
    }

    fn map_from_hub(hub: beta::PersistentPodState) -> Self {
        let beta::PersistentPodState { metadata, spec, status } = hub;
        let from_hub = |term: beta::NodeTopologyTerm| alpha::NodeTopologyTerm {
            node_topology_keys: term.keys,
        };
        let spec = alpha::PersistentPodStateSpec {
            target_reference: spec.target_reference,
            persistent_pod_annotations: spec.persistent_pod_annotations,
            required_persistent_topology: spec.required_persistent_topology.map(from_hub),
            preferred_persistent_topology: spec
                .preferred_persistent_topology
                .into_iter()
                .map(|term| alpha::PreferredTopologyTerm {
                    weight: term.weight,
                    preference: from_hub(term.preference),
                })
                .collect(),
            persistent_pod_state_retention_policy: spec.persistent_pod_state_retention_policy,
        };
        alpha::PersistentPodState { metadata, spec, status }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::conversion::{from_hub, to_hub};
    use serde_json::json;

    #[test]
    fn topology_keys_are_renamed() {
        let pps: alpha::PersistentPodState = serde_json::from_value(json!({
            "apiVersion": "apps.kruise.io/v1alpha1", "kind": "PersistentPodState",
            "metadata": {"name": "echoserver", "namespace": "echoserver"},
            "spec": {
                "targetRef": {"apiVersion": "apps.kruise.io/v1beta1", "kind": "StatefulSet", "name": "echoserver"},
                "persistentPodAnnotations": [{"key": "cni.projectcalico.org/podIP"}],
                "requiredPersistentTopology": {"nodeTopologyKeys": ["failure-domain.beta.kubernetes.io/zone"]},
                "preferredPersistentTopology": [
                    {"preference": {"nodeTopologyKeys": ["kubernetes.io/hostname"]}, "weight": 100}
                ],
                "persistentPodStateRetentionPolicy": "WhenDeleted"
            },
            "status": {
                "observedGeneration": 1,
                "podStates": {"echoserver-0": {
                    "nodeName": "node-1",
                    "nodeTopologyLabels": {"kubernetes.io/hostname": "node-1"},
                    "annotations": {"cni.projectcalico.org/podIP": "10.0.0.3"}
                }}
            }
        }))
        .expect("valid v1alpha1 PersistentPodState");
        let hub = to_hub(pps.clone()).expect("convert");
        let value = serde_json::to_value(&hub).expect("encode");
        assert_eq!(value["apiVersion"], "apps.kruise.io/v1beta1");
        assert_eq!(
            value["spec"]["requiredPersistentTopology"],
            json!({"keys": ["failure-domain.beta.kubernetes.io/zone"]})
        );
        assert_eq!(
            value["spec"]["preferredPersistentTopology"],
            json!([{"weight": 100, "preference": {"keys": ["kubernetes.io/hostname"]}}])
        );
        assert_eq!(value["status"]["podStates"]["echoserver-0"]["nodeName"], "node-1");
        assert!(hub.metadata.annotations.is_none(), "a clean mapping needs no residue");
        assert_eq!(from_hub::<alpha::PersistentPodState>(hub).expect("back"), pps);
    }
}
