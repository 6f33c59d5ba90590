//! UnitedDeployment v1alpha1 <-> v1beta1.
//!
//! The spec is shared and moves across unchanged. The status differs: v1alpha1 keeps each
//! subset's replicas in `subsetReplicas` and the update's revision and partitions in
//! `updateStatus`, while v1beta1 has `updatedRevision` and keeps replicas and partitions in
//! the subset statuses. As upstream does, converting up writes the map entries into the
//! subset statuses (adding a status for a subset that has none), and converting down
//! derives both maps from the named subset statuses.

use std::collections::BTreeMap;

use super::HubConvertible;
use crate::apps::{v1alpha1 as alpha, v1beta1 as beta};

impl HubConvertible for alpha::UnitedDeployment {
    type Hub = beta::UnitedDeployment;

    fn map_to_hub(self) -> beta::UnitedDeployment {
        let alpha::UnitedDeployment { metadata, spec, status } = self;
        let spec = beta::UnitedDeploymentSpec {
            replicas: spec.replicas,
            selector: spec.selector,
            template: spec.template,
            topology: spec.topology,
            update_strategy: spec.update_strategy,
            revision_history_limit: spec.revision_history_limit,
        };
        beta::UnitedDeployment { metadata, spec, status: status.map(status_to_hub) }
    }

    fn map_from_hub(hub: beta::UnitedDeployment) -> Self {
        let beta::UnitedDeployment { metadata, spec, status } = hub;
        let spec = alpha::UnitedDeploymentSpec {
            replicas: spec.replicas,
            selector: spec.selector,
            template: spec.template,
            topology: spec.topology,
            update_strategy: spec.update_strategy,
            revision_history_limit: spec.revision_history_limit,
        };
        alpha::UnitedDeployment { metadata, spec, status: status.map(status_from_hub) }
    }
}

fn status_to_hub(status: alpha::UnitedDeploymentStatus) -> beta::UnitedDeploymentStatus {
    let (updated_revision, current_partitions) = match status.update_status {
        Some(update) => (update.updated_revision, update.current_partitions),
        None => (String::new(), BTreeMap::new()),
    };
    let mut subset_statuses = status.subset_statuses;
    for (subset, replicas) in status.subset_replicas {
        subset_status(&mut subset_statuses, subset).replicas = replicas;
    }
    for (subset, partition) in current_partitions {
        subset_status(&mut subset_statuses, subset).partition = partition;
    }
    beta::UnitedDeploymentStatus {
        observed_generation: status.observed_generation,
        ready_replicas: status.ready_replicas,
        replicas: status.replicas,
        updated_replicas: status.updated_replicas,
        reserved_pods: status.reserved_pods,
        updated_ready_replicas: status.updated_ready_replicas,
        collision_count: status.collision_count,
        current_revision: status.current_revision,
        updated_revision,
        subset_statuses,
        conditions: status.conditions,
        label_selector: status.label_selector,
    }
}

fn status_from_hub(status: beta::UnitedDeploymentStatus) -> alpha::UnitedDeploymentStatus {
    let named = || status.subset_statuses.iter().filter(|subset| !subset.name.is_empty());
    let subset_replicas: BTreeMap<String, i32> =
        named().map(|subset| (subset.name.clone(), subset.replicas)).collect();
    let update_status = (!status.updated_revision.is_empty() || !status.subset_statuses.is_empty())
        .then(|| alpha::UpdateStatus {
            updated_revision: status.updated_revision.clone(),
            current_partitions: named()
                .map(|subset| (subset.name.clone(), subset.partition))
                .collect(),
        });
    alpha::UnitedDeploymentStatus {
        observed_generation: status.observed_generation,
        ready_replicas: status.ready_replicas,
        replicas: status.replicas,
        updated_replicas: status.updated_replicas,
        reserved_pods: status.reserved_pods,
        updated_ready_replicas: status.updated_ready_replicas,
        collision_count: status.collision_count,
        current_revision: status.current_revision,
        subset_replicas,
        subset_statuses: status.subset_statuses,
        conditions: status.conditions,
        update_status,
        label_selector: status.label_selector,
    }
}

/// The status of the named subset, appended if there is none yet.
fn subset_status(
    statuses: &mut Vec<beta::UnitedDeploymentSubsetStatus>,
    name: String,
) -> &mut beta::UnitedDeploymentSubsetStatus {
    let index = match statuses.iter().position(|status| status.name == name) {
        Some(index) => index,
        None => {
            statuses.push(beta::UnitedDeploymentSubsetStatus { name, ..Default::default() });
            statuses.len() - 1
        }
    };
    &mut statuses[index]
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::conversion::{RESIDUE_ANNOTATION, from_hub, to_hub};
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
    use serde_json::json;

    fn has_residue(metadata: &ObjectMeta) -> bool {
        metadata.annotations.as_ref().is_some_and(|a| a.contains_key(RESIDUE_ANNOTATION))
    }

    /// A UnitedDeployment like upstream's conversion test builds, with the given template.
    fn sample(template: serde_json::Value) -> alpha::UnitedDeployment {
        let condition = |reason: &str| {
            json!({"type": "Schedulable", "status": "False",
                   "lastTransitionTime": "2024-03-09T16:00:00Z", "reason": reason})
        };
        serde_json::from_value(json!({
            "apiVersion": "apps.kruise.io/v1alpha1", "kind": "UnitedDeployment",
            "metadata": {"name": "demo", "namespace": "default", "labels": {"app": "demo"}},
            "spec": {
                "replicas": 5,
                "selector": {"matchLabels": {"app": "demo"}},
                "template": template,
                "topology": {
                    "subsets": [
                        {"name": "subset-a", "minReplicas": 1, "maxReplicas": "80%",
                         "patch": {"metadata": {"labels": {"subset": "a"}}}},
                        {"name": "subset-b"}
                    ],
                    "scheduleStrategy": {"type": "Adaptive", "adaptive": {
                        "rescheduleCriticalSeconds": 45, "unschedulableDuration": 600,
                        "reserveUnschedulablePods": true}}
                },
                "updateStrategy": {"type": "Manual", "manualUpdate": {"partitions": {"subset-a": 1}}},
                "revisionHistoryLimit": 12
            },
            "status": {
                "observedGeneration": 7, "readyReplicas": 4, "replicas": 5, "updatedReplicas": 3,
                "reservedPods": 1, "updatedReadyReplicas": 2, "collisionCount": 1,
                "currentRevision": "rev-old",
                "subsetReplicas": {"subset-a": 3, "subset-b": 2},
                "subsetStatuses": [
                    {"name": "subset-a", "replicas": 3, "readyReplicas": 2, "partition": 1,
                     "reservedPods": 1, "conditions": [condition("reschedule")]},
                    {"name": "subset-b", "replicas": 2, "readyReplicas": 2}
                ],
                "conditions": [{"type": "UnitedDeploymentUpdated", "status": "False",
                                "lastTransitionTime": "2024-03-09T16:00:00Z",
                                "reason": "UnitedDeploymentRevisionUpdating"}],
                "updateStatus": {"updatedRevision": "rev-new",
                                 "currentPartitions": {"subset-a": 1, "subset-b": 0}},
                "labelSelector": "app=demo"
            }
        }))
        .expect("valid v1alpha1 UnitedDeployment")
    }

    fn pod_template() -> serde_json::Value {
        json!({"metadata": {"labels": {"app": "demo"}},
               "spec": {"containers": [{"name": "main", "image": "nginx:1.25"}]}})
    }

    #[test]
    fn every_template_kind_round_trips_without_residue() {
        let templates = [
            json!({"statefulSetTemplate": {"metadata": {"labels": {"app": "demo"}},
                                           "spec": {"template": pod_template()}}}),
            json!({"advancedStatefulSetTemplate": {"metadata": {"labels": {"app": "demo"}},
                                                   "spec": {"template": pod_template()}}}),
            json!({"cloneSetTemplate": {"metadata": {"labels": {"app": "demo"}},
                                        "spec": {"template": pod_template()}}}),
            json!({"deploymentTemplate": {"metadata": {"labels": {"app": "demo"}},
                                          "spec": {"template": pod_template()}}}),
        ];
        for template in templates {
            let ud = sample(template.clone());
            let hub = to_hub(ud.clone()).expect("convert");
            let value = serde_json::to_value(&hub).expect("encode");
            assert_eq!(value["apiVersion"], "apps.kruise.io/v1beta1");
            assert_eq!(value["spec"]["template"], template);
            assert_eq!(
                value["spec"]["updateStrategy"]["manualUpdate"]["partitions"],
                json!({"subset-a": 1})
            );
            assert_eq!(value["spec"]["topology"]["scheduleStrategy"]["type"], "Adaptive");
            assert_eq!(value["status"]["updatedRevision"], "rev-new");
            assert_eq!(value["status"]["subsetStatuses"].as_array().map(Vec::len), Some(2));
            assert!(value["status"].get("subsetReplicas").is_none());
            assert!(!has_residue(&hub.metadata), "a clean mapping needs no residue");
            assert_eq!(from_hub::<alpha::UnitedDeployment>(hub).expect("back"), ud);
        }
    }

    #[test]
    fn legacy_maps_merge_into_subset_statuses() {
        let mut ud = sample(json!({"deploymentTemplate": {"spec": {"template": pod_template()}}}));
        let status = ud.status.as_mut().expect("status");
        status.subset_replicas = BTreeMap::from([("subset-a".into(), 5), ("subset-c".into(), 1)]);
        status.update_status.as_mut().expect("update status").current_partitions =
            BTreeMap::from([("subset-a".into(), 2), ("subset-c".into(), 3)]);

        let hub = alpha::UnitedDeployment::map_to_hub(ud);
        let statuses = hub.status.expect("status").subset_statuses;
        let find = |name: &str| statuses.iter().find(|s| s.name == name).expect("subset status");
        let a = find("subset-a");
        assert_eq!((a.replicas, a.partition, a.ready_replicas, a.conditions.len()), (5, 2, 2, 1));
        let c = find("subset-c");
        assert_eq!((c.replicas, c.partition), (1, 3));
        assert!(c.conditions.is_empty());
    }

    #[test]
    fn converting_down_reads_only_named_subset_statuses() {
        let hub = |statuses: serde_json::Value| -> beta::UnitedDeployment {
            serde_json::from_value(json!({
                "apiVersion": "apps.kruise.io/v1beta1", "kind": "UnitedDeployment",
                "metadata": {"name": "demo"}, "spec": {},
                "status": {"replicas": 0, "updatedReplicas": 0, "currentRevision": "",
                           "subsetStatuses": statuses}
            }))
            .expect("valid v1beta1 UnitedDeployment")
        };
        let down = alpha::UnitedDeployment::map_from_hub(hub(
            json!([{"name": "", "replicas": 9}, {"name": "subset-a", "replicas": 3}]),
        ));
        let status = down.status.expect("status");
        assert_eq!(status.subset_replicas, BTreeMap::from([("subset-a".into(), 3)]));

        let down = alpha::UnitedDeployment::map_from_hub(hub(json!([{"name": "", "replicas": 9}])));
        assert!(down.status.expect("status").subset_replicas.is_empty());
    }

    #[test]
    fn the_manual_example_round_trips() {
        // The Adaptive scheduling example from the UnitedDeployment manual.
        let ud: alpha::UnitedDeployment = serde_json::from_value(json!({
            "apiVersion": "apps.kruise.io/v1alpha1", "kind": "UnitedDeployment",
            "metadata": {"name": "ud-demo"},
            "spec": {"topology": {
                "subsets": [{"name": "subset-a", "maxReplicas": 3}, {"name": "subset-b"}],
                "scheduleStrategy": {"type": "Adaptive", "adaptive": {"rescheduleCriticalSeconds": 30}}
            }}
        }))
        .expect("valid v1alpha1 UnitedDeployment");
        let hub = to_hub(ud.clone()).expect("convert");
        assert!(!has_residue(&hub.metadata));
        assert_eq!(hub.spec.topology, ud.spec.topology);
        assert_eq!(from_hub::<alpha::UnitedDeployment>(hub).expect("back"), ud);
    }
}
