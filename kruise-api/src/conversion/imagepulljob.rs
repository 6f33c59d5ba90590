//! ImagePullJob v1alpha1 <-> v1beta1: the two versions have the same fields (the pull
//! template and status types are shared), so the mapping moves each one across unchanged,
//! as upstream does.

use super::HubConvertible;
use crate::apps::{v1alpha1 as alpha, v1beta1 as beta};

impl HubConvertible for alpha::ImagePullJob {
    type Hub = beta::ImagePullJob;

    fn map_to_hub(self) -> beta::ImagePullJob {
        let alpha::ImagePullJob { metadata, spec, status } = self;
        let spec = beta::ImagePullJobSpec { image: spec.image, template: spec.template };
        beta::ImagePullJob { metadata, spec, status }
    }

    fn map_from_hub(hub: beta::ImagePullJob) -> Self {
        let beta::ImagePullJob { metadata, spec, status } = hub;
        let spec = alpha::ImagePullJobSpec { image: spec.image, template: spec.template };
        alpha::ImagePullJob { metadata, spec, status }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::conversion::{from_hub, to_hub};
    use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;
    use serde_json::json;

    fn manual_example(api_version: &str) -> serde_json::Value {
        json!({
            "apiVersion": api_version, "kind": "ImagePullJob",
            "metadata": {"name": "job-with-always"},
            "spec": {
                "image": "nginx:1.9.1",
                "parallelism": 10,
                "selector": {"names": ["node-1", "node-2"], "matchLabels": {"node-type": "xxx"}},
                "completionPolicy": {"type": "Always", "activeDeadlineSeconds": 1200, "ttlSecondsAfterFinished": 300},
                "pullPolicy": {"backoffLimit": 3, "timeoutSeconds": 300},
                "pullSecrets": ["registry-secret"],
                "sandboxConfig": {"labels": {"a": "b"}, "annotations": {"c": "d"}},
                "imagePullPolicy": "Always"
            },
            "status": {
                "startTime": "2024-01-01T00:00:00Z", "desired": 2, "active": 1,
                "succeeded": 0, "failed": 1, "failedNodes": ["node-2"], "message": "1 failed"
            }
        })
    }

    #[test]
    fn manual_example_converts_both_ways_without_residue() {
        let original = manual_example("apps.kruise.io/v1alpha1");
        let job: alpha::ImagePullJob = serde_json::from_value(original.clone()).expect("decode");
        assert_eq!(serde_json::to_value(&job).expect("encode"), original);
        assert_eq!(job.spec.template.parallelism, Some(IntOrString::Int(10)));
        let selector = job.spec.template.selector.clone().expect("selector");
        assert_eq!(selector.names, ["node-1", "node-2"]);
        assert!(selector.label_selector.match_labels.is_some_and(|l| l["node-type"] == "xxx"));

        let hub = to_hub(job.clone()).expect("to hub");
        assert_eq!(
            serde_json::to_value(&hub).expect("encode hub"),
            manual_example("apps.kruise.io/v1beta1")
        );
        assert!(hub.metadata.annotations.is_none(), "a clean mapping needs no residue");
        assert_eq!(from_hub::<alpha::ImagePullJob>(hub).expect("back"), job);
    }

    #[test]
    fn go_zero_values_are_written_like_upstream() {
        let job: beta::ImagePullJob = serde_json::from_value(json!({
            "apiVersion": "apps.kruise.io/v1beta1", "kind": "ImagePullJob",
            "metadata": {"name": "empty"},
            "spec": {"podSelector": {"matchExpressions": [{"key": "app", "operator": "Exists"}]}},
            "status": {}
        }))
        .expect("decode");
        let value = serde_json::to_value(&job).expect("encode");
        assert_eq!(
            value["spec"],
            json!({"image": "", "completionPolicy": {},
                "podSelector": {"matchExpressions": [{"key": "app", "operator": "Exists"}]}})
        );
        assert_eq!(
            value["status"],
            json!({"desired": 0, "active": 0, "succeeded": 0, "failed": 0})
        );
    }
}
