//! ImageListPullJob v1alpha1 <-> v1beta1: the two versions have the same fields (the pull
//! template and status types are shared), so the mapping moves each one across unchanged,
//! as upstream does.

use super::HubConvertible;
use crate::apps::{v1alpha1 as alpha, v1beta1 as beta};

impl HubConvertible for alpha::ImageListPullJob {
    type Hub = beta::ImageListPullJob;

    fn map_to_hub(self) -> beta::ImageListPullJob {
        let alpha::ImageListPullJob { metadata, spec, status } = self;
        let spec = beta::ImageListPullJobSpec { images: spec.images, template: spec.template };
        beta::ImageListPullJob { metadata, spec, status }
    }

    fn map_from_hub(hub: beta::ImageListPullJob) -> Self {
        let beta::ImageListPullJob { metadata, spec, status } = hub;
        let spec = alpha::ImageListPullJobSpec { images: spec.images, template: spec.template };
        alpha::ImageListPullJob { metadata, spec, status }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::conversion::{from_hub, to_hub};
    use serde_json::json;

    fn manual_example(api_version: &str) -> serde_json::Value {
        json!({
            "apiVersion": api_version, "kind": "ImageListPullJob",
            "metadata": {"name": "job-with-always", "namespace": "default"},
            "spec": {
                "images": ["nginx:1.9.1", "busybox:1.29.2"],
                "parallelism": 10,
                "selector": {"names": ["node-1", "node-2"], "matchLabels": {"node-type": "xxx"}},
                "completionPolicy": {"type": "Always", "activeDeadlineSeconds": 1200, "ttlSecondsAfterFinished": 300},
                "pullPolicy": {"backoffLimit": 3, "timeoutSeconds": 300}
            },
            "status": {
                "startTime": "2024-01-01T00:00:00Z", "completionTime": "2024-01-01T00:05:00Z",
                "desired": 2, "active": 0, "completed": 2, "succeeded": 1,
                "failedImageStatuses": [{"imagePullJob": "job-with-always-x7k2p",
                    "name": "busybox:1.29.2", "message": "pull failed on 1 node"}]
            }
        })
    }

    #[test]
    fn manual_example_converts_both_ways_without_residue() {
        let original = manual_example("apps.kruise.io/v1alpha1");
        let job: alpha::ImageListPullJob =
            serde_json::from_value(original.clone()).expect("decode");
        assert_eq!(serde_json::to_value(&job).expect("encode"), original);
        assert_eq!(job.spec.images.len(), 2);

        let hub = to_hub(job.clone()).expect("to hub");
        assert_eq!(
            serde_json::to_value(&hub).expect("encode hub"),
            manual_example("apps.kruise.io/v1beta1")
        );
        assert!(hub.metadata.annotations.is_none(), "a clean mapping needs no residue");
        assert_eq!(from_hub::<alpha::ImageListPullJob>(hub).expect("back"), job);
    }

    #[test]
    fn go_zero_values_are_written_like_upstream() {
        let job: beta::ImageListPullJob = serde_json::from_value(json!({
            "apiVersion": "apps.kruise.io/v1beta1", "kind": "ImageListPullJob",
            "metadata": {"name": "empty"}, "spec": {}, "status": {}
        }))
        .expect("decode");
        let value = serde_json::to_value(&job).expect("encode");
        assert_eq!(value["spec"], json!({"images": [], "completionPolicy": {}}));
        assert_eq!(
            value["status"],
            json!({"desired": 0, "active": 0, "completed": 0, "succeeded": 0})
        );
    }
}
