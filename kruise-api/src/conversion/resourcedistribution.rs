//! ResourceDistribution v1alpha1 <-> v1beta1.
//!
//! Two fields are renamed: `targets.namespaceLabelSelector` becomes
//! `targets.namespaceSelector`, and a condition's `failedNamespace` becomes
//! `failedNamespaces`. The embedded resource is carried verbatim.

use super::HubConvertible;
use crate::apps::{v1alpha1 as alpha, v1beta1 as beta};

impl HubConvertible for alpha::ResourceDistribution {
    type Hub = beta::ResourceDistribution;

    fn map_to_hub(self) -> beta::ResourceDistribution {
        let alpha::ResourceDistribution { metadata, spec, status } = self;
        let targets = spec.targets;
        let spec = beta::ResourceDistributionSpec {
            resource: spec.resource,
            targets: beta::ResourceDistributionTargets {
                all_namespaces: targets.all_namespaces,
                excluded_namespaces: targets.excluded_namespaces,
                included_namespaces: targets.included_namespaces,
                namespace_selector: targets.namespace_label_selector,
            },
        };
        let status = status.map(|status| beta::ResourceDistributionStatus {
            desired: status.desired,
            succeeded: status.succeeded,
            failed: status.failed,
            observed_generation: status.observed_generation,
            conditions: status
                .conditions
                .into_iter()
                .map(|condition| beta::ResourceDistributionCondition {
                    type_: condition.type_,
                    status: condition.status,
                    last_transition_time: condition.last_transition_time,
                    reason: condition.reason,
                    failed_namespaces: condition.failed_namespaces,
                })
                .collect(),
        });
        beta::ResourceDistribution { metadata, spec, status }
    }

    fn map_from_hub(hub: beta::ResourceDistribution) -> Self {
        let beta::ResourceDistribution { metadata, spec, status } = hub;
        let targets = spec.targets;
        let spec = alpha::ResourceDistributionSpec {
            resource: spec.resource,
            targets: alpha::ResourceDistributionTargets {
                all_namespaces: targets.all_namespaces,
                excluded_namespaces: targets.excluded_namespaces,
                included_namespaces: targets.included_namespaces,
                namespace_label_selector: targets.namespace_selector,
            },
        };
        let status = status.map(|status| alpha::ResourceDistributionStatus {
            desired: status.desired,
            succeeded: status.succeeded,
            failed: status.failed,
            observed_generation: status.observed_generation,
            conditions: status
                .conditions
                .into_iter()
                .map(|condition| alpha::ResourceDistributionCondition {
                    type_: condition.type_,
                    status: condition.status,
                    last_transition_time: condition.last_transition_time,
                    reason: condition.reason,
                    failed_namespaces: condition.failed_namespaces,
                })
                .collect(),
        });
        alpha::ResourceDistribution { metadata, spec, status }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::conversion::{from_hub, to_hub};
    use serde_json::json;

    fn manual_example() -> alpha::ResourceDistribution {
        serde_json::from_value(json!({
            "apiVersion": "apps.kruise.io/v1alpha1", "kind": "ResourceDistribution",
            "metadata": {"name": "sample"},
            "spec": {
                "resource": {
                    "apiVersion": "v1", "kind": "ConfigMap",
                    "metadata": {"name": "game-demo"},
                    "data": {"player_initial_lives": "3", "ui_properties_file_name": "user-interface.properties"}
                },
                "targets": {
                    "excludedNamespaces": {"list": [{"name": "ns-3"}]},
                    "includedNamespaces": {"list": [{"name": "ns-1"}, {"name": "ns-4"}]},
                    "namespaceLabelSelector": {"matchLabels": {"group": "test"}}
                }
            },
            "status": {
                "desired": 3, "succeeded": 2, "failed": 1, "observedGeneration": 1,
                "conditions": [
                    {"type": "NamespaceNotExists", "status": "True",
                        "lastTransitionTime": "2024-05-01T10:00:00Z", "reason": "NotFound",
                        "failedNamespace": ["ns-4"]},
                    {"type": "ConflictOccurred", "status": "False", "lastTransitionTime": null}
                ]
            }
        }))
        .expect("valid v1alpha1 ResourceDistribution")
    }

    #[test]
    fn selector_and_failed_namespaces_are_renamed() {
        let rd = manual_example();
        let hub = to_hub(rd.clone()).expect("convert");
        let value = serde_json::to_value(&hub).expect("encode");
        assert_eq!(value["apiVersion"], "apps.kruise.io/v1beta1");
        assert_eq!(
            value["spec"]["targets"]["namespaceSelector"],
            json!({"matchLabels": {"group": "test"}})
        );
        assert!(value["spec"]["targets"].get("namespaceLabelSelector").is_none());
        assert_eq!(value["spec"]["resource"]["data"]["player_initial_lives"], "3");
        assert_eq!(value["status"]["conditions"][0]["failedNamespaces"], json!(["ns-4"]));
        assert_eq!(
            value["status"]["conditions"][1],
            json!({"type": "ConflictOccurred", "status": "False", "lastTransitionTime": null})
        );
        assert!(hub.metadata.annotations.is_none(), "a clean mapping needs no residue");
        assert_eq!(from_hub::<alpha::ResourceDistribution>(hub).expect("back"), rd);
    }

    /// In the spirit of upstream's fuzz test: targets, status and the raw resource survive
    /// both directions for a spread of inputs.
    #[test]
    fn round_trips_in_both_directions() {
        let base = manual_example();
        let mut variants =
            vec![base.clone(), alpha::ResourceDistribution::new("empty", Default::default())];
        let mut all = base.clone();
        all.spec.targets.all_namespaces = true;
        all.spec.targets.included_namespaces = Default::default();
        all.spec.resource.0 = json!({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "s"}, "type": "Opaque"});
        all.status = None;
        variants.push(all);
        let mut odd = base;
        if let Some(status) = odd.status.as_mut() {
            status.conditions[0].type_ = "SomethingNew".into();
            status.conditions[0].status = alpha::ResourceDistributionConditionStatus::Unknown;
        }
        variants.push(odd);
        for rd in variants {
            let hub = to_hub(rd.clone()).expect("up");
            assert!(hub.metadata.annotations.is_none(), "no residue for {:?}", rd.metadata.name);
            let back = from_hub::<alpha::ResourceDistribution>(hub.clone()).expect("down");
            assert_eq!(back, rd);
            assert_eq!(to_hub(back).expect("up again"), hub);
        }
    }
}
