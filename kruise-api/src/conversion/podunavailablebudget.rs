//! PodUnavailableBudget v1alpha1 <-> v1beta1.
//!
//! v1alpha1 keeps the guarded operations and the total replica override in annotations
//! (`kruise.io/pub-protect-operations`, `pub.kruise.io/protect-total-replicas`); v1beta1 has
//! the spec fields `protectOperations` and `protectTotalReplicas`. As upstream does, the
//! annotations are read into the fields on the way up and written back from them on the way
//! down (an annotation whose field is empty is removed on the way down). Two refinements keep
//! ordinary objects exact in both directions:
//!
//! - on the way up, an annotation that the field will regenerate verbatim (canonical text
//!   such as `DELETE,EVICT` or `15`) is dropped from the hub; any other spelling
//!   (`EVICT, UPDATE`) is kept there, as upstream keeps every annotation;
//! - on the way down, an annotation that already says what the field says keeps its text.
//!
//! An annotation upstream would reject (an unknown operation, a number that is not an
//! int32) sets no field and stays in place. `ignoredPodSelector` has no v1alpha1 form. The
//! status differs only in v1alpha1 always writing `observedGeneration`.

use std::collections::BTreeMap;

use super::HubConvertible;
use crate::policy::{v1alpha1 as alpha, v1beta1 as beta};
use crate::well_known::annotations::{PUB_PROTECT_OPERATIONS, PUB_PROTECT_TOTAL_REPLICAS};

impl HubConvertible for alpha::PodUnavailableBudget {
    type Hub = beta::PodUnavailableBudget;

    fn map_to_hub(self) -> beta::PodUnavailableBudget {
        let alpha::PodUnavailableBudget { mut metadata, spec, status } = self;
        let had_annotations = metadata.annotations.is_some();
        let mut removed = false;
        let annotations = metadata.annotations.get_or_insert_with(BTreeMap::new);

        // Upstream ignores an empty annotation and rejects an unparsable one; both set no field.
        let protect_operations = annotations
            .get(PUB_PROTECT_OPERATIONS)
            .filter(|text| !text.is_empty())
            .and_then(|text| parse_operations(text).map(|operations| (text, operations)))
            .map(|(text, operations)| {
                let canonical = join_operations(&operations) == *text;
                (canonical, operations)
            });
        let protect_operations = match protect_operations {
            Some((canonical, operations)) => {
                if canonical {
                    removed |= annotations.remove(PUB_PROTECT_OPERATIONS).is_some();
                }
                operations
            }
            None => Vec::new(),
        };
        let protect_total_replicas = annotations.get(PUB_PROTECT_TOTAL_REPLICAS).and_then(|text| {
            text.parse::<i32>().ok().map(|replicas| (replicas.to_string() == *text, replicas))
        });
        let protect_total_replicas = protect_total_replicas.map(|(canonical, replicas)| {
            if canonical {
                removed |= annotations.remove(PUB_PROTECT_TOTAL_REPLICAS).is_some();
            }
            replicas
        });
        // Leave no empty map behind that the input did not have.
        if annotations.is_empty() && (removed || !had_annotations) {
            metadata.annotations = None;
        }

        let spec = beta::PodUnavailableBudgetSpec {
            selector: spec.selector,
            target_reference: spec.target_reference,
            max_unavailable: spec.max_unavailable,
            min_available: spec.min_available,
            protect_operations,
            protect_total_replicas,
            ignored_pod_selector: None,
        };
        let status = status.map(|status| beta::PodUnavailableBudgetStatus {
            observed_generation: status.observed_generation,
            disrupted_pods: status.disrupted_pods,
            unavailable_pods: status.unavailable_pods,
            unavailable_allowed: status.unavailable_allowed,
            current_available: status.current_available,
            desired_available: status.desired_available,
            total_replicas: status.total_replicas,
        });
        beta::PodUnavailableBudget { metadata, spec, status }
    }

    fn map_from_hub(hub: beta::PodUnavailableBudget) -> Self {
        let beta::PodUnavailableBudget { mut metadata, spec, status } = hub;
        let had_annotations = metadata.annotations.is_some();
        let mut removed = false;
        let annotations = metadata.annotations.get_or_insert_with(BTreeMap::new);

        if spec.protect_operations.is_empty() {
            removed |= annotations.remove(PUB_PROTECT_OPERATIONS).is_some();
        } else {
            let current =
                annotations.get(PUB_PROTECT_OPERATIONS).and_then(|text| parse_operations(text));
            if current.as_ref() != Some(&spec.protect_operations) {
                annotations.insert(
                    PUB_PROTECT_OPERATIONS.to_owned(),
                    join_operations(&spec.protect_operations),
                );
            }
        }
        match spec.protect_total_replicas {
            None => {
                removed |= annotations.remove(PUB_PROTECT_TOTAL_REPLICAS).is_some();
            }
            Some(replicas) => {
                let current = annotations
                    .get(PUB_PROTECT_TOTAL_REPLICAS)
                    .and_then(|text| text.parse::<i32>().ok());
                if current != Some(replicas) {
                    annotations.insert(PUB_PROTECT_TOTAL_REPLICAS.to_owned(), replicas.to_string());
                }
            }
        }
        // Leave no empty map behind that the input did not have.
        if annotations.is_empty() && (removed || !had_annotations) {
            metadata.annotations = None;
        }

        let spec = alpha::PodUnavailableBudgetSpec {
            selector: spec.selector,
            target_reference: spec.target_reference,
            max_unavailable: spec.max_unavailable,
            min_available: spec.min_available,
        };
        let status = status.map(|status| alpha::PodUnavailableBudgetStatus {
            observed_generation: status.observed_generation,
            disrupted_pods: status.disrupted_pods,
            unavailable_pods: status.unavailable_pods,
            unavailable_allowed: status.unavailable_allowed,
            current_available: status.current_available,
            desired_available: status.desired_available,
            total_replicas: status.total_replicas,
        });
        alpha::PodUnavailableBudget { metadata, spec, status }
    }
}

/// Parses the operations annotation as upstream does: comma-separated, spaces trimmed, empty
/// items skipped. `None` when an item is not a known operation (upstream rejects the object).
fn parse_operations(text: &str) -> Option<Vec<beta::PubOperation>> {
    text.split(',')
        .map(str::trim)
        .filter(|item| !item.is_empty())
        .map(|item| {
            let operation = beta::PubOperation::from(item);
            beta::PubOperation::KNOWN.contains(&item).then_some(operation)
        })
        .collect()
}

/// Writes operations in the annotation's form, skipping empty values as upstream does.
fn join_operations(operations: &[beta::PubOperation]) -> String {
    operations
        .iter()
        .map(beta::PubOperation::as_str)
        .filter(|item| !item.is_empty())
        .collect::<Vec<_>>()
        .join(",")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::conversion::{RESIDUE_ANNOTATION, from_hub, to_hub};
    use serde_json::json;

    fn alpha(value: serde_json::Value) -> alpha::PodUnavailableBudget {
        serde_json::from_value(value).expect("valid v1alpha1 PodUnavailableBudget")
    }

    fn beta(value: serde_json::Value) -> beta::PodUnavailableBudget {
        serde_json::from_value(value).expect("valid v1beta1 PodUnavailableBudget")
    }

    #[test]
    fn annotations_are_promoted_to_spec_fields() {
        let pub_ = alpha(json!({
            "apiVersion": "policy.kruise.io/v1alpha1", "kind": "PodUnavailableBudget",
            "metadata": {"name": "pub-demo", "namespace": "default", "annotations": {
                PUB_PROTECT_OPERATIONS: "DELETE,EVICT", PUB_PROTECT_TOTAL_REPLICAS: "15", "keep": "me"
            }},
            "spec": {"selector": {"matchLabels": {"app": "demo"}}, "maxUnavailable": "50%"},
            "status": {"observedGeneration": 0, "unavailableAllowed": 1, "currentAvailable": 3,
                "desiredAvailable": 2, "totalReplicas": 4, "disruptedPods": {"demo-1": "2024-05-01T10:00:00Z"}}
        }));
        let hub = to_hub(pub_.clone()).expect("convert");
        let value = serde_json::to_value(&hub).expect("encode");
        assert_eq!(value["apiVersion"], "policy.kruise.io/v1beta1");
        assert_eq!(value["spec"]["protectOperations"], json!(["DELETE", "EVICT"]));
        assert_eq!(value["spec"]["protectTotalReplicas"], 15);
        assert_eq!(value["metadata"]["annotations"], json!({"keep": "me"}));
        assert!(value["status"].get("observedGeneration").is_none());
        assert_eq!(from_hub::<alpha::PodUnavailableBudget>(hub).expect("back"), pub_);
    }

    #[test]
    fn manual_example_keeps_its_spelling() {
        let pub_ = alpha(json!({
            "apiVersion": "policy.kruise.io/v1alpha1", "kind": "PodUnavailableBudget",
            "metadata": {"name": "crd-demo", "annotations": {PUB_PROTECT_OPERATIONS: "EVICT, UPDATE"}},
            "spec": {"targetRef": {"apiVersion": "apps.kruise.io/v1alpha1", "kind": "CloneSet", "name": "demo"},
                "minAvailable": 2}
        }));
        let hub = to_hub(pub_.clone()).expect("convert");
        assert_eq!(
            hub.spec.protect_operations,
            [beta::PubOperation::Evict, beta::PubOperation::Update]
        );
        let annotations = hub.metadata.annotations.clone().expect("annotations");
        assert_eq!(
            annotations.get(PUB_PROTECT_OPERATIONS).map(String::as_str),
            Some("EVICT, UPDATE")
        );
        assert!(!annotations.contains_key(RESIDUE_ANNOTATION), "a clean mapping needs no residue");
        assert_eq!(from_hub::<alpha::PodUnavailableBudget>(hub).expect("back"), pub_);
    }

    #[test]
    fn spec_fields_are_backfilled_into_annotations() {
        let hub = beta(json!({
            "apiVersion": "policy.kruise.io/v1beta1", "kind": "PodUnavailableBudget",
            "metadata": {"name": "pub-demo", "namespace": "default", "annotations": {"keep": "me"}},
            "spec": {"selector": {"matchLabels": {"app": "demo"}}, "maxUnavailable": 1,
                "protectOperations": ["DELETE", "RESIZE"], "protectTotalReplicas": 9}
        }));
        let down = from_hub::<alpha::PodUnavailableBudget>(hub.clone()).expect("down");
        let annotations = down.metadata.annotations.clone().expect("annotations");
        assert_eq!(
            annotations,
            BTreeMap::from([
                ("keep".to_owned(), "me".to_owned()),
                (PUB_PROTECT_OPERATIONS.to_owned(), "DELETE,RESIZE".to_owned()),
                (PUB_PROTECT_TOTAL_REPLICAS.to_owned(), "9".to_owned()),
            ])
        );
        assert_eq!(to_hub(down).expect("up"), hub);
    }

    #[test]
    fn stale_hub_annotation_without_field_is_dropped_but_recorded() {
        let hub = beta(json!({
            "apiVersion": "policy.kruise.io/v1beta1", "kind": "PodUnavailableBudget",
            "metadata": {"name": "p", "annotations": {PUB_PROTECT_OPERATIONS: "DELETE"}},
            "spec": {"ignoredPodSelector": {"matchLabels": {"kruise.io/force-deletable": "true"}}}
        }));
        let down = from_hub::<alpha::PodUnavailableBudget>(hub.clone()).expect("down");
        let annotations = down.metadata.annotations.clone().expect("annotations");
        assert!(!annotations.contains_key(PUB_PROTECT_OPERATIONS));
        assert!(annotations.contains_key(RESIDUE_ANNOTATION));
        assert_eq!(to_hub(down).expect("up"), hub);
    }

    #[test]
    fn invalid_annotations_set_no_field() {
        let pub_ = alpha(json!({
            "apiVersion": "policy.kruise.io/v1alpha1", "kind": "PodUnavailableBudget",
            "metadata": {"name": "p", "annotations": {PUB_PROTECT_OPERATIONS: "DELETE,BOGUS",
                PUB_PROTECT_TOTAL_REPLICAS: "many"}},
            "spec": {}
        }));
        let hub = to_hub(pub_.clone()).expect("convert");
        assert!(hub.spec.protect_operations.is_empty());
        assert_eq!(hub.spec.protect_total_replicas, None);
        assert_eq!(from_hub::<alpha::PodUnavailableBudget>(hub).expect("back"), pub_);
    }

    #[test]
    fn parse_and_join_agree() {
        for text in
            ["DELETE", "DELETE,EVICT", "DELETE, UPDATE ,EVICT", "RESIZE,DELETE", ",,DELETE,,", ""]
        {
            let operations = parse_operations(text).expect("valid");
            assert_eq!(parse_operations(&join_operations(&operations)), Some(operations));
        }
        assert_eq!(parse_operations("BOGUS"), None);
        assert_eq!(parse_operations("delete"), None);
    }
}
