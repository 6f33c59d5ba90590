//! Rollout v1alpha1 <-> v1beta1, after upstream's `api/v1alpha1/conversion.go`:
//!
//! - `spec.objectRef.workloadRef` <-> `spec.workloadRef`;
//! - a step's `weight` N <-> `traffic: "N%"`; going up, a step without `replicas` gets
//!   `replicas: "N%"`; going down, a traffic that is not a whole percentage gives weight 0,
//!   as upstream's parsing does;
//! - matches keep their headers (v1beta1's path and query matches have no v1alpha1 form);
//! - the annotation `rollouts.kruise.io/rolling-style` <-> `canary.enableExtraWorkloadForCanary`:
//!   any value but `partition` (in any case), or none, means a canary workload;
//! - the annotation `rollouts.kruise.io/trafficrouting` <-> `canary.trafficRoutingRef`;
//! - the status field by field (v1beta1's blue-green status and top-level step have no
//!   v1alpha1 form).
//!
//! Where upstream's mapping drops or breaks data this one does not:
//!
//! - `disableGenerateCanaryService` exists in both versions and is carried (upstream drops it);
//! - a Rollout without a canary strategy (or workloadRef) converts with none, where upstream's
//!   code would dereference a nil pointer; a v1beta1 blue-green Rollout keeps its workload,
//!   `paused` and `disabled` (upstream converts its metadata only);
//! - going down, the rolling-style annotation is written only where it would not already say
//!   the same thing: no annotation already means a canary workload, and a `Partition` spelt
//!   another way is kept. Going up, the exact text `partition` (which going down
//!   regenerates) is removed from the hub, as the PodUnavailableBudget annotations are. The
//!   traffic-routing annotation stays on the hub, since upstream's v1beta1 controller reads it.
//!
//! Whatever the mapping cannot carry (v1alpha1 `spec.rolloutID`, v1beta1 blue-green and path
//! or query matches, a `replicas` that going up filled in) is kept by the residue annotation
//! of [`super`], so round trips are exact.

use std::collections::BTreeMap;

use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;

use super::HubConvertible;
use crate::rollouts::{v1alpha1 as alpha, v1beta1 as beta};
use crate::well_known::rollouts::annotations::{ROLLING_STYLE, TRAFFIC_ROUTING};

/// The rolling-style value that turns the canary workload off.
const PARTITION: &str = "partition";
/// The rolling-style value written for a canary workload.
const CANARY: &str = "canary";

impl HubConvertible for alpha::Rollout {
    type Hub = beta::Rollout;

    fn map_to_hub(self) -> beta::Rollout {
        let alpha::Rollout { mut metadata, spec, status } = self;
        let canary = spec.strategy.canary.map(|canary| {
            let annotations = metadata.annotations.as_ref();
            let style = annotations.and_then(|a| a.get(ROLLING_STYLE));
            let enable_extra_workload_for_canary =
                !style.is_some_and(|style| style.eq_ignore_ascii_case(PARTITION));
            let traffic_routing_ref =
                annotations.and_then(|a| a.get(TRAFFIC_ROUTING)).cloned().unwrap_or_default();
            beta::CanaryStrategy {
                steps: canary.steps.into_iter().map(step_to_hub).collect(),
                traffic_routings: canary.traffic_routings,
                failure_threshold: canary.failure_threshold,
                patch_pod_template_metadata: canary.patch_pod_template_metadata,
                enable_extra_workload_for_canary,
                traffic_routing_ref,
                disable_generate_canary_service: canary.disable_generate_canary_service,
            }
        });
        // The exact text going down writes for `false` is carried by the field alone.
        if canary.as_ref().is_some_and(|c| !c.enable_extra_workload_for_canary)
            && let Some(annotations) = metadata.annotations.as_mut()
            && annotations.get(ROLLING_STYLE).is_some_and(|style| style == PARTITION)
        {
            annotations.remove(ROLLING_STYLE);
            if annotations.is_empty() {
                metadata.annotations = None;
            }
        }

        let spec = beta::RolloutSpec {
            workload_ref: spec.object_ref.workload_ref.unwrap_or_default(),
            strategy: beta::RolloutStrategy {
                paused: spec.strategy.paused,
                canary,
                blue_green: None,
            },
            disabled: spec.disabled,
        };
        let status = status.map(|status| beta::RolloutStatus {
            observed_generation: status.observed_generation,
            canary_status: status.canary_status.map(|c| beta::CanaryStatus {
                common: beta::CommonStatus {
                    observed_workload_generation: c.observed_workload_generation,
                    observed_rollout_id: c.observed_rollout_id,
                    rollout_hash: c.rollout_hash,
                    stable_revision: c.stable_revision,
                    pod_template_hash: c.pod_template_hash,
                    current_step_index: c.current_step_index,
                    next_step_index: c.next_step_index,
                    finalising_step: c.finalising_step,
                    current_step_state: c.current_step_state,
                    message: c.message,
                    last_update_time: c.last_update_time,
                },
                canary_revision: c.canary_revision,
                canary_replicas: c.canary_replicas,
                canary_ready_replicas: c.canary_ready_replicas,
            }),
            blue_green_status: None,
            conditions: status.conditions,
            phase: status.phase,
            message: status.message,
            // Upstream leaves the v1beta1-only step summary to the controller.
            current_step_index: 0,
            current_step_state: beta::CanaryStepState::default(),
        });
        beta::Rollout { metadata, spec, status }
    }

    fn map_from_hub(hub: beta::Rollout) -> Self {
        let beta::Rollout { mut metadata, spec, status } = hub;
        let canary = spec.strategy.canary.map(|canary| {
            let had_annotations = metadata.annotations.is_some();
            let annotations = metadata.annotations.get_or_insert_with(BTreeMap::new);
            let says_partition =
                annotations.get(ROLLING_STYLE).is_some_and(|s| s.eq_ignore_ascii_case(PARTITION));
            if canary.enable_extra_workload_for_canary && says_partition {
                annotations.insert(ROLLING_STYLE.to_owned(), CANARY.to_owned());
            } else if !canary.enable_extra_workload_for_canary && !says_partition {
                annotations.insert(ROLLING_STYLE.to_owned(), PARTITION.to_owned());
            }
            if !canary.traffic_routing_ref.is_empty() {
                annotations.insert(TRAFFIC_ROUTING.to_owned(), canary.traffic_routing_ref);
            }
            if annotations.is_empty() && !had_annotations {
                metadata.annotations = None;
            }
            alpha::CanaryStrategy {
                steps: canary.steps.into_iter().map(step_from_hub).collect(),
                traffic_routings: canary.traffic_routings,
                failure_threshold: canary.failure_threshold,
                patch_pod_template_metadata: canary.patch_pod_template_metadata,
                disable_generate_canary_service: canary.disable_generate_canary_service,
            }
        });
        let spec = alpha::RolloutSpec {
            object_ref: alpha::ObjectRef { workload_ref: Some(spec.workload_ref) },
            strategy: alpha::RolloutStrategy { paused: spec.strategy.paused, canary },
            deprecated_rollout_id: String::new(),
            disabled: spec.disabled,
        };
        let status = status.map(|status| alpha::RolloutStatus {
            observed_generation: status.observed_generation,
            canary_status: status.canary_status.map(|c| alpha::CanaryStatus {
                observed_workload_generation: c.common.observed_workload_generation,
                observed_rollout_id: c.common.observed_rollout_id,
                rollout_hash: c.common.rollout_hash,
                stable_revision: c.common.stable_revision,
                canary_revision: c.canary_revision,
                pod_template_hash: c.common.pod_template_hash,
                canary_replicas: c.canary_replicas,
                canary_ready_replicas: c.canary_ready_replicas,
                next_step_index: c.common.next_step_index,
                current_step_index: c.common.current_step_index,
                current_step_state: c.common.current_step_state,
                message: c.common.message,
                last_update_time: c.common.last_update_time,
                finalising_step: c.common.finalising_step,
            }),
            conditions: status.conditions,
            phase: status.phase,
            message: status.message,
        });
        alpha::Rollout { metadata, spec, status }
    }
}

fn step_to_hub(step: alpha::CanaryStep) -> beta::CanaryStep {
    let percent = step.weight.map(|weight| format!("{weight}%"));
    beta::CanaryStep {
        replicas: step.replicas.or_else(|| percent.clone().map(IntOrString::String)),
        traffic: percent,
        request_header_modifier: step.request_header_modifier,
        matches: step
            .matches
            .into_iter()
            .map(|m| beta::HttpRouteMatch { headers: m.headers, ..beta::HttpRouteMatch::default() })
            .collect(),
        pause: step.pause,
    }
}

fn step_from_hub(step: beta::CanaryStep) -> alpha::CanaryStep {
    alpha::CanaryStep {
        weight: step.traffic.as_deref().map(weight_of_traffic),
        request_header_modifier: step.request_header_modifier,
        matches: step
            .matches
            .into_iter()
            .map(|m| alpha::HttpRouteMatch { headers: m.headers })
            .collect(),
        replicas: step.replicas,
        pause: step.pause,
    }
}

/// A v1beta1 traffic share as a v1alpha1 weight, as upstream computes it: a whole
/// percentage "N%" gives N (truncated to 32 bits); anything else gives 0.
fn weight_of_traffic(traffic: &str) -> i32 {
    let Some(number) = traffic.strip_suffix('%') else {
        return 0;
    };
    match number.parse::<i64>() {
        // Go scales the percentage of 100 through a float and rounds up.
        Ok(value) => ((value as f64) * 100.0 / 100.0).ceil() as i64 as i32,
        Err(_) => 0,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::conversion::{RESIDUE_ANNOTATION, from_hub, to_hub};
    use serde_json::json;

    fn alpha(value: serde_json::Value) -> alpha::Rollout {
        serde_json::from_value(value).expect("valid v1alpha1 Rollout")
    }

    fn beta(value: serde_json::Value) -> beta::Rollout {
        serde_json::from_value(value).expect("valid v1beta1 Rollout")
    }

    fn annotations(
        metadata: &k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta,
    ) -> BTreeMap<String, String> {
        metadata.annotations.clone().unwrap_or_default()
    }

    #[test]
    fn tutorial_rollout_converts_as_upstream_does() {
        let rollout = alpha(json!({
            "apiVersion": "rollouts.kruise.io/v1alpha1", "kind": "Rollout",
            "metadata": {"name": "rollouts-demo", "annotations": {TRAFFIC_ROUTING: "tr-demo"}},
            "spec": {
                "objectRef": {"workloadRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "echoserver"}},
                "strategy": {"canary": {
                    "steps": [
                        {"weight": 5, "replicas": "20%", "pause": {}},
                        {"weight": 40, "pause": {"duration": 10},
                         "matches": [{"headers": [{"name": "user-agent", "value": "pc"}]}]}
                    ],
                    "trafficRoutings": [{"service": "echoserver", "ingress": {"name": "echoserver"}}]
                }}
            }
        }));
        let hub = to_hub(rollout.clone()).expect("convert");
        let value = serde_json::to_value(&hub).expect("encode");
        assert_eq!(value["spec"]["workloadRef"]["name"], "echoserver");
        let canary = &value["spec"]["strategy"]["canary"];
        assert_eq!(canary["steps"][0]["traffic"], "5%");
        assert_eq!(canary["steps"][0]["replicas"], "20%");
        assert_eq!(canary["steps"][1]["traffic"], "40%");
        assert_eq!(canary["steps"][1]["replicas"], "40%");
        assert_eq!(canary["steps"][1]["matches"][0]["headers"][0]["name"], "user-agent");
        assert_eq!(canary["enableExtraWorkloadForCanary"], true);
        assert_eq!(canary["trafficRoutingRef"], "tr-demo");
        assert_eq!(
            annotations(&hub.metadata).get(TRAFFIC_ROUTING).map(String::as_str),
            Some("tr-demo")
        );
        // The replicas filled in from the weight are recorded, and removed going back.
        assert!(annotations(&hub.metadata).contains_key(RESIDUE_ANNOTATION));
        assert_eq!(from_hub::<alpha::Rollout>(hub).expect("back"), rollout);
    }

    #[test]
    fn partition_annotation_becomes_the_field_and_back() {
        let rollout = alpha(json!({
            "apiVersion": "rollouts.kruise.io/v1alpha1", "kind": "Rollout",
            "metadata": {"name": "r", "annotations": {ROLLING_STYLE: "partition"}},
            "spec": {"objectRef": {"workloadRef": {"apiVersion": "apps.kruise.io/v1alpha1", "kind": "CloneSet", "name": "c"}},
                "strategy": {"canary": {"steps": [{"weight": 20, "replicas": 1}]}}}
        }));
        let hub = to_hub(rollout.clone()).expect("convert");
        let canary = hub.spec.strategy.canary.clone().expect("canary");
        assert!(!canary.enable_extra_workload_for_canary);
        assert_eq!(hub.metadata.annotations, None, "no residue, no annotation: {:?}", hub.metadata);
        assert_eq!(from_hub::<alpha::Rollout>(hub).expect("back"), rollout);

        // Another spelling stays as written.
        let mut odd = rollout.clone();
        odd.metadata.annotations =
            Some(BTreeMap::from([(ROLLING_STYLE.to_owned(), "Partition".to_owned())]));
        let hub = to_hub(odd.clone()).expect("convert");
        assert_eq!(
            annotations(&hub.metadata).get(ROLLING_STYLE).map(String::as_str),
            Some("Partition")
        );
        assert_eq!(from_hub::<alpha::Rollout>(hub).expect("back"), odd);
    }

    #[test]
    fn v1beta1_rollout_goes_down_with_annotations() {
        let hub = beta(json!({
            "apiVersion": "rollouts.kruise.io/v1beta1", "kind": "Rollout",
            "metadata": {"name": "r"},
            "spec": {"workloadRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "d"},
                "strategy": {"canary": {
                    "steps": [{"replicas": 1}, {"traffic": "50%", "replicas": "50%"}, {"replicas": "100%"}],
                    "trafficRoutingRef": "tr"
                }}},
            "status": {"observedGeneration": 2, "phase": "Healthy", "currentStepIndex": 3,
                "currentStepState": "Completed",
                "canaryStatus": {"canaryRevision": "abc", "podTemplateHash": "h", "canaryReplicas": 4,
                    "canaryReadyReplicas": 4, "currentStepIndex": 3, "nextStepIndex": -1,
                    "currentStepState": "Completed", "finalisingStep": ""}}
        }));
        let down = from_hub::<alpha::Rollout>(hub.clone()).expect("down");
        let value = serde_json::to_value(&down).expect("encode");
        assert_eq!(value["spec"]["objectRef"]["workloadRef"]["kind"], "Deployment");
        assert_eq!(value["spec"]["strategy"]["canary"]["steps"][1]["weight"], 50);
        assert!(value["spec"]["strategy"]["canary"]["steps"][0].get("weight").is_none());
        let notes = annotations(&down.metadata);
        assert_eq!(notes.get(ROLLING_STYLE).map(String::as_str), Some(PARTITION));
        assert_eq!(notes.get(TRAFFIC_ROUTING).map(String::as_str), Some("tr"));
        assert_eq!(value["status"]["canaryStatus"]["nextStepIndex"], -1);
        assert_eq!(to_hub(down).expect("up"), hub);
    }

    #[test]
    fn traffic_parses_as_upstream_does() {
        assert_eq!(weight_of_traffic("5%"), 5);
        assert_eq!(weight_of_traffic("100%"), 100);
        assert_eq!(weight_of_traffic("+7%"), 7);
        assert_eq!(weight_of_traffic("5"), 0);
        assert_eq!(weight_of_traffic("5.5%"), 0);
        assert_eq!(weight_of_traffic("%"), 0);
    }
}
