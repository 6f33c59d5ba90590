//! WorkloadSpread v1alpha1 <-> v1beta1.
//!
//! The versions differ in two places: the subset node selector fields are renamed
//! (`requiredNodeSelectorTerm` -> `requiredNodeSelector`, `preferredNodeSelectorTerms` ->
//! `preferredNodeSelector`), and v1beta1 subset conditions are standard `metav1.Condition`s.
//! As upstream does, a v1alpha1 condition without a reason gets the reason `Unknown` in
//! v1beta1, and the v1beta1 `observedGeneration` of a condition has no v1alpha1 home. A missing
//! v1alpha1 transition time maps to Go's zero time, which maps back to missing.

use std::collections::BTreeMap;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::{Condition, Time};

use super::HubConvertible;
use crate::apps::{v1alpha1 as alpha, v1beta1 as beta};

/// Reason upstream writes into a v1beta1 condition whose v1alpha1 source had none.
const UNKNOWN_REASON: &str = "Unknown";

impl HubConvertible for alpha::WorkloadSpread {
    type Hub = beta::WorkloadSpread;

    fn map_to_hub(self) -> beta::WorkloadSpread {
        let alpha::WorkloadSpread { metadata, spec, status } = self;
        let spec = beta::WorkloadSpreadSpec {
            target_reference: spec.target_reference,
            target_filter: spec.target_filter,
            subsets: spec.subsets.map(|subsets| {
                subsets
                    .into_iter()
                    .map(|subset| beta::WorkloadSpreadSubset {
                        name: subset.name,
                        required_node_selector: subset.required_node_selector_term,
                        preferred_node_selector: subset.preferred_node_selector_terms,
                        tolerations: subset.tolerations,
                        max_replicas: subset.max_replicas,
                        patch: subset.patch,
                    })
                    .collect()
            }),
            schedule_strategy: spec.schedule_strategy,
        };
        let status = status.map(|status| beta::WorkloadSpreadStatus {
            observed_generation: status.observed_generation,
            subset_statuses: subset_statuses_to_hub(status.subset_statuses),
            versioned_subset_statuses: status
                .versioned_subset_statuses
                .into_iter()
                .map(|(version, statuses)| (version, subset_statuses_to_hub(statuses)))
                .collect::<BTreeMap<_, _>>(),
        });
        beta::WorkloadSpread { metadata, spec, status }
    }

    fn map_from_hub(hub: beta::WorkloadSpread) -> Self {
        let beta::WorkloadSpread { metadata, spec, status } = hub;
        let spec = alpha::WorkloadSpreadSpec {
            target_reference: spec.target_reference,
            target_filter: spec.target_filter,
            subsets: spec.subsets.map(|subsets| {
                subsets
                    .into_iter()
                    .map(|subset| alpha::WorkloadSpreadSubset {
                        name: subset.name,
                        required_node_selector_term: subset.required_node_selector,
                        preferred_node_selector_terms: subset.preferred_node_selector,
                        tolerations: subset.tolerations,
                        max_replicas: subset.max_replicas,
                        patch: subset.patch,
                    })
                    .collect()
            }),
            schedule_strategy: spec.schedule_strategy,
        };
        let status = status.map(|status| alpha::WorkloadSpreadStatus {
            observed_generation: status.observed_generation,
            subset_statuses: subset_statuses_from_hub(status.subset_statuses),
            versioned_subset_statuses: status
                .versioned_subset_statuses
                .into_iter()
                .map(|(version, statuses)| (version, subset_statuses_from_hub(statuses)))
                .collect::<BTreeMap<_, _>>(),
        });
        alpha::WorkloadSpread { metadata, spec, status }
    }
}

fn subset_statuses_to_hub(
    statuses: Vec<alpha::WorkloadSpreadSubsetStatus>,
) -> Vec<beta::WorkloadSpreadSubsetStatus> {
    statuses
        .into_iter()
        .map(|status| beta::WorkloadSpreadSubsetStatus {
            name: status.name,
            replicas: status.replicas,
            conditions: status.conditions.into_iter().map(condition_to_hub).collect(),
            missing_replicas: status.missing_replicas,
            creating_pods: status.creating_pods,
            deleting_pods: status.deleting_pods,
        })
        .collect()
}

fn subset_statuses_from_hub(
    statuses: Vec<beta::WorkloadSpreadSubsetStatus>,
) -> Vec<alpha::WorkloadSpreadSubsetStatus> {
    statuses
        .into_iter()
        .map(|status| alpha::WorkloadSpreadSubsetStatus {
            name: status.name,
            replicas: status.replicas,
            conditions: status.conditions.into_iter().map(condition_from_hub).collect(),
            missing_replicas: status.missing_replicas,
            creating_pods: status.creating_pods,
            deleting_pods: status.deleting_pods,
        })
        .collect()
}

/// Go's zero `time.Time` (0001-01-01T00:00:00Z), which stands for "not set".
fn zero_time() -> Time {
    use k8s_openapi::jiff::Timestamp;
    Time(Timestamp::from_second(-62_135_596_800).unwrap_or(Timestamp::MIN))
}

fn condition_to_hub(condition: alpha::WorkloadSpreadSubsetCondition) -> Condition {
    let reason =
        if condition.reason.is_empty() { UNKNOWN_REASON.to_owned() } else { condition.reason };
    Condition {
        type_: condition.type_,
        status: condition.status,
        last_transition_time: condition.last_transition_time.unwrap_or_else(zero_time),
        reason,
        message: condition.message,
        observed_generation: None,
    }
}

fn condition_from_hub(condition: Condition) -> alpha::WorkloadSpreadSubsetCondition {
    let last_transition_time =
        Some(condition.last_transition_time).filter(|time| *time != zero_time());
    alpha::WorkloadSpreadSubsetCondition {
        type_: condition.type_,
        status: condition.status,
        last_transition_time,
        reason: condition.reason,
        message: condition.message,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::conversion::{RESIDUE_ANNOTATION, from_hub, to_hub};
    use serde_json::json;

    fn manual_example() -> alpha::WorkloadSpread {
        serde_json::from_value(json!({
            "apiVersion": "apps.kruise.io/v1alpha1", "kind": "WorkloadSpread",
            "metadata": {"name": "workloadspread-demo", "namespace": "default"},
            "spec": {
                "targetRef": {"apiVersion": "apps.kruise.io/v1alpha1", "kind": "CloneSet", "name": "workload-xxx"},
                "subsets": [
                    {
                        "name": "subset-a",
                        "requiredNodeSelectorTerm": {"matchExpressions": [
                            {"key": "topology.kubernetes.io/zone", "operator": "In", "values": ["zone-a"]}
                        ]},
                        "preferredNodeSelectorTerms": [{"weight": 1, "preference": {"matchExpressions": [
                            {"key": "another-node-label-key", "operator": "In", "values": ["another-node-label-value"]}
                        ]}}],
                        "maxReplicas": 3,
                        "patch": {"metadata": {"labels": {"xxx-specific-label": "xxx"}}}
                    },
                    {"name": "subset-b", "maxReplicas": "50%"}
                ],
                "scheduleStrategy": {"type": "Adaptive", "adaptive": {"rescheduleCriticalSeconds": 30}}
            },
            "status": {
                "observedGeneration": 2,
                "subsetStatuses": [{
                    "name": "subset-a", "replicas": 3, "missingReplicas": 0,
                    "conditions": [{"type": "Schedulable", "status": "False",
                        "lastTransitionTime": "2024-05-01T10:00:00Z", "reason": "Unschedulable"}],
                    "creatingPods": {"pod-1": "2024-05-01T10:00:00Z"}
                }],
                "versionedSubsetStatuses": {"rev-1": [{"name": "subset-b", "replicas": 1, "missingReplicas": -1}]}
            }
        }))
        .expect("valid v1alpha1 WorkloadSpread")
    }

    #[test]
    fn subset_selectors_are_renamed() {
        let ws = manual_example();
        let hub = to_hub(ws.clone()).expect("convert");
        let value = serde_json::to_value(&hub).expect("encode");
        assert_eq!(value["apiVersion"], "apps.kruise.io/v1beta1");
        let subset = &value["spec"]["subsets"][0];
        assert_eq!(
            subset["requiredNodeSelector"]["matchExpressions"][0]["values"],
            json!(["zone-a"])
        );
        assert_eq!(subset["preferredNodeSelector"][0]["weight"], 1);
        assert!(subset.get("requiredNodeSelectorTerm").is_none());
        assert_eq!(subset["patch"], json!({"metadata": {"labels": {"xxx-specific-label": "xxx"}}}));
        assert_eq!(value["spec"]["scheduleStrategy"]["type"], "Adaptive");
        assert_eq!(
            value["status"]["subsetStatuses"][0]["conditions"][0],
            json!({"type": "Schedulable", "status": "False",
                "lastTransitionTime": "2024-05-01T10:00:00Z", "reason": "Unschedulable", "message": ""})
        );
        assert_eq!(value["status"]["versionedSubsetStatuses"]["rev-1"][0]["missingReplicas"], -1);
        assert!(hub.metadata.annotations.is_none(), "a clean mapping needs no residue");
        assert_eq!(from_hub::<alpha::WorkloadSpread>(hub).expect("back"), ws);
    }

    #[test]
    fn condition_without_reason_or_time_gets_upstream_placeholders() {
        let mut ws = manual_example();
        let status = ws.status.as_mut().expect("status");
        status.subset_statuses[0].conditions[0].reason.clear();
        status.subset_statuses[0].conditions[0].last_transition_time = None;
        let hub = to_hub(ws.clone()).expect("convert");
        let condition = &hub.status.as_ref().expect("status").subset_statuses[0].conditions[0];
        assert_eq!(condition.reason, UNKNOWN_REASON);
        assert_eq!(
            serde_json::to_value(&condition.last_transition_time).expect("encode"),
            json!("0001-01-01T00:00:00Z")
        );
        // The invented reason is recorded so that the way back is exact.
        assert!(
            hub.metadata.annotations.as_ref().is_some_and(|a| a.contains_key(RESIDUE_ANNOTATION))
        );
        assert_eq!(from_hub::<alpha::WorkloadSpread>(hub).expect("back"), ws);
    }

    #[test]
    fn hub_condition_generation_survives_the_round_trip() {
        let mut hub = to_hub(manual_example()).expect("convert");
        hub.status.as_mut().expect("status").subset_statuses[0].conditions[0].observed_generation =
            Some(4);
        let down = from_hub::<alpha::WorkloadSpread>(hub.clone()).expect("down");
        assert_eq!(to_hub(down).expect("up"), hub);
    }
}
