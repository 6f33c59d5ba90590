//! BroadcastJob v1alpha1 <-> v1beta1: the two versions have the same fields, so the mapping
//! moves each one across unchanged, as upstream does.

use super::HubConvertible;
use crate::apps::{v1alpha1 as alpha, v1beta1 as beta};

impl HubConvertible for alpha::BroadcastJob {
    type Hub = beta::BroadcastJob;

    fn map_to_hub(self) -> beta::BroadcastJob {
        let alpha::BroadcastJob { metadata, spec, status } = self;
        beta::BroadcastJob { metadata, spec: spec_to_hub(spec), status }
    }

    fn map_from_hub(hub: beta::BroadcastJob) -> Self {
        let beta::BroadcastJob { metadata, spec, status } = hub;
        alpha::BroadcastJob { metadata, spec: spec_from_hub(spec), status }
    }
}

/// Maps a v1alpha1 BroadcastJob spec onto v1beta1 (also used by AdvancedCronJob templates).
pub(super) fn spec_to_hub(spec: alpha::BroadcastJobSpec) -> beta::BroadcastJobSpec {
    beta::BroadcastJobSpec {
        parallelism: spec.parallelism,
        template: spec.template,
        completion_policy: spec.completion_policy,
        paused: spec.paused,
        failure_policy: spec.failure_policy,
    }
}

/// Maps a v1beta1 BroadcastJob spec onto v1alpha1 (also used by AdvancedCronJob templates).
pub(super) fn spec_from_hub(spec: beta::BroadcastJobSpec) -> alpha::BroadcastJobSpec {
    alpha::BroadcastJobSpec {
        parallelism: spec.parallelism,
        template: spec.template,
        completion_policy: spec.completion_policy,
        paused: spec.paused,
        failure_policy: spec.failure_policy,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::conversion::{from_hub, to_hub};
    use serde_json::json;

    #[test]
    fn manual_example_converts_both_ways_without_residue() {
        let original = json!({
            "apiVersion": "apps.kruise.io/v1alpha1", "kind": "BroadcastJob",
            "metadata": {"name": "broadcastjob-ttl"},
            "spec": {
                "parallelism": "50%",
                "template": {"spec": {
                    "containers": [{"name": "pi", "image": "perl",
                        "command": ["perl", "-Mbignum=bpi", "-wle", "print bpi(2000)"]}],
                    "restartPolicy": "Never"
                }},
                "completionPolicy": {"type": "Always", "ttlSecondsAfterFinished": 30},
                "failurePolicy": {"type": "Continue", "restartLimit": 3}
            },
            "status": {
                "active": 1, "succeeded": 2, "failed": 0, "desired": 3, "phase": "running",
                "startTime": "2024-01-01T00:00:00Z",
                "conditions": [{"type": "Complete", "status": "False",
                    "lastProbeTime": null, "lastTransitionTime": "2024-01-01T00:00:00Z"}]
            }
        });
        let bcj: alpha::BroadcastJob = serde_json::from_value(original.clone()).expect("decode");
        assert_eq!(serde_json::to_value(&bcj).expect("encode"), original);

        let hub = to_hub(bcj.clone()).expect("to hub");
        let mut expected = original.clone();
        expected["apiVersion"] = json!("apps.kruise.io/v1beta1");
        assert_eq!(serde_json::to_value(&hub).expect("encode hub"), expected);
        assert!(hub.metadata.annotations.is_none(), "a clean mapping needs no residue");
        assert_eq!(from_hub::<alpha::BroadcastJob>(hub).expect("back"), bcj);
    }

    #[test]
    fn go_zero_values_are_written_like_upstream() {
        let bcj: beta::BroadcastJob = serde_json::from_value(json!({
            "apiVersion": "apps.kruise.io/v1beta1", "kind": "BroadcastJob",
            "metadata": {"name": "empty"}, "spec": {}, "status": {}
        }))
        .expect("decode");
        let value = serde_json::to_value(&bcj).expect("encode");
        assert_eq!(value["spec"], json!({"template": {}, "completionPolicy": {}}));
        assert_eq!(
            value["status"],
            json!({"active": 0, "succeeded": 0, "failed": 0, "desired": 0, "phase": ""})
        );
    }
}
