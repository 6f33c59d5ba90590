//! NodeImage v1alpha1 <-> v1beta1: the same fields, except that v1beta1 pull-secret
//! references carry a `mode`. As upstream does, the mode is dropped when going down to
//! v1alpha1 (the generic residue record brings it back on the way up); everything else moves
//! across unchanged, the status and tag types being shared.

use std::collections::BTreeMap;

use super::HubConvertible;
use crate::apps::{v1alpha1 as alpha, v1beta1 as beta};

impl HubConvertible for alpha::NodeImage {
    type Hub = beta::NodeImage;

    fn map_to_hub(self) -> beta::NodeImage {
        let alpha::NodeImage { metadata, spec, status } = self;
        let images: BTreeMap<String, beta::ImageSpec> =
            spec.images.into_iter().map(|(name, image)| (name, image_spec_to_hub(image))).collect();
        beta::NodeImage { metadata, spec: beta::NodeImageSpec { images }, status }
    }

    fn map_from_hub(hub: beta::NodeImage) -> Self {
        let beta::NodeImage { metadata, spec, status } = hub;
        let images: BTreeMap<String, alpha::ImageSpec> = spec
            .images
            .into_iter()
            .map(|(name, image)| (name, image_spec_from_hub(image)))
            .collect();
        alpha::NodeImage { metadata, spec: alpha::NodeImageSpec { images }, status }
    }
}

fn image_spec_to_hub(image: alpha::ImageSpec) -> beta::ImageSpec {
    beta::ImageSpec {
        pull_secrets: image
            .pull_secrets
            .into_iter()
            .map(|secret| beta::ReferenceObject {
                namespace: secret.namespace,
                name: secret.name,
                mode: String::new(),
            })
            .collect(),
        tags: image.tags,
        sandbox_config: image.sandbox_config,
    }
}

fn image_spec_from_hub(image: beta::ImageSpec) -> alpha::ImageSpec {
    alpha::ImageSpec {
        pull_secrets: image
            .pull_secrets
            .into_iter()
            .map(|secret| alpha::ReferenceObject { namespace: secret.namespace, name: secret.name })
            .collect(),
        tags: image.tags,
        sandbox_config: image.sandbox_config,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::conversion::{RESIDUE_ANNOTATION, from_hub, to_hub};
    use serde_json::json;

    fn node_image(api_version: &str) -> serde_json::Value {
        json!({
            "apiVersion": api_version, "kind": "NodeImage",
            "metadata": {"name": "node-xxx", "labels": {"kubernetes.io/arch": "amd64", "kubernetes.io/os": "linux"}},
            "spec": {"images": {"nginx": {
                "pullSecrets": [{"namespace": "default", "name": "registry-secret"}],
                "tags": [{
                    "tag": "1.9.1", "createdAt": "2024-01-01T00:00:00Z", "version": 2,
                    "pullPolicy": {"backoffLimit": 3, "timeoutSeconds": 300, "ttlSecondsAfterFinished": 300, "activeDeadlineSeconds": 1200},
                    "ownerReferences": [{"apiVersion": "apps.kruise.io/v1beta1", "kind": "ImagePullJob",
                        "name": "job-with-always", "namespace": "default", "uid": "7f2c"}],
                    "imagePullPolicy": "IfNotPresent"
                }],
                "sandboxConfig": {"labels": {"io.kubernetes.runtime": "runc"}}
            }}},
            "status": {
                "desired": 1, "succeeded": 1, "failed": 0, "pulling": 0, "waiting": 0,
                "imageStatuses": {"nginx": {"tags": [{
                    "tag": "1.9.1", "phase": "Succeeded", "progress": 100, "version": 2,
                    "startTime": "2024-01-01T00:00:01Z", "completionTime": "2024-01-01T00:00:09Z",
                    "imageID": "nginx@sha256:0d17b565c37bcbd895e9d92315a05c1c3c9a29f762b011a10c54a66cd53c9b31"
                }]}},
                "firstSyncStatus": {"syncAt": "2024-01-01T00:00:00Z", "status": "Succeeded"}
            }
        })
    }

    #[test]
    fn node_image_converts_both_ways_without_residue() {
        let original = node_image("apps.kruise.io/v1alpha1");
        let ni: alpha::NodeImage = serde_json::from_value(original.clone()).expect("decode");
        assert_eq!(serde_json::to_value(&ni).expect("encode"), original);

        let hub = to_hub(ni.clone()).expect("to hub");
        assert_eq!(
            serde_json::to_value(&hub).expect("encode hub"),
            node_image("apps.kruise.io/v1beta1")
        );
        assert!(hub.metadata.annotations.is_none(), "a clean mapping needs no residue");
        assert_eq!(from_hub::<alpha::NodeImage>(hub).expect("back"), ni);
    }

    #[test]
    fn manual_example_with_empty_spec_keeps_go_zero_values() {
        let ni: alpha::NodeImage = serde_json::from_value(json!({
            "apiVersion": "apps.kruise.io/v1alpha1", "kind": "NodeImage",
            "metadata": {"name": "node-xxx"}, "spec": {},
            "status": {"desired": 0, "failed": 0, "pulling": 0, "succeeded": 0,
                "firstSyncStatus": {"syncAt": null, "status": "Failed", "message": "boom"}}
        }))
        .expect("decode");
        let value = serde_json::to_value(&ni).expect("encode");
        assert_eq!(value["spec"], json!({}));
        assert_eq!(
            value["status"],
            json!({"desired": 0, "failed": 0, "pulling": 0, "succeeded": 0, "waiting": 0,
                "firstSyncStatus": {"syncAt": null, "status": "Failed", "message": "boom"}})
        );
        let tag: beta::ImageTagStatus =
            serde_json::from_value(json!({"tag": "x"})).expect("decode tag");
        assert_eq!(
            serde_json::to_value(&tag).expect("encode tag"),
            json!({"tag": "x", "phase": ""})
        );
    }

    #[test]
    fn secret_mode_survives_a_trip_through_v1alpha1() {
        let mut value = node_image("apps.kruise.io/v1beta1");
        value["spec"]["images"]["nginx"]["pullSecrets"][0]["mode"] = json!("batch");
        let hub: beta::NodeImage = serde_json::from_value(value).expect("decode");
        let down = from_hub::<alpha::NodeImage>(hub.clone()).expect("down");
        assert!(
            down.metadata.annotations.as_ref().is_some_and(|a| a.contains_key(RESIDUE_ANNOTATION)),
            "mode has no v1alpha1 field, so it is recorded"
        );
        assert_eq!(down.spec.images["nginx"].pull_secrets[0].name, "registry-secret");
        assert_eq!(to_hub(down).expect("up"), hub);
    }
}
