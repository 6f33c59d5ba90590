//! SidecarSet v1alpha1 <-> v1beta1.
//!
//! Apart from the spec, both versions share their types. As upstream does:
//! - a v1alpha1 `namespace` becomes a v1beta1 `namespaceSelector` on the namespace-name label
//!   (and wins over a v1alpha1 `namespaceSelector`); going back, the selector is kept as a
//!   selector, so a v1alpha1 `namespace` only survives the round trip through the residue;
//! - the v1alpha1 custom-version label moves into v1beta1 `spec.customVersion` and back.

use std::collections::BTreeMap;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector;

use super::HubConvertible;
use crate::apps::{v1alpha1 as alpha, v1beta1 as beta};
use crate::well_known::kubernetes::labels::NAMESPACE_METADATA_NAME as NAMESPACE_NAME_LABEL;
use crate::well_known::labels::SIDECARSET_CUSTOM_VERSION;

impl HubConvertible for alpha::SidecarSet {
    type Hub = beta::SidecarSet;

    fn map_to_hub(self) -> beta::SidecarSet {
        let alpha::SidecarSet { mut metadata, spec, status } = self;
        let custom_version = metadata
            .labels
            .as_mut()
            .and_then(|labels| labels.remove(SIDECARSET_CUSTOM_VERSION))
            .unwrap_or_default();
        if metadata.labels.as_ref().is_some_and(BTreeMap::is_empty) {
            metadata.labels = None;
        }
        let namespace_selector = if spec.namespace.is_empty() {
            spec.namespace_selector
        } else {
            Some(LabelSelector {
                match_labels: Some(BTreeMap::from([(
                    NAMESPACE_NAME_LABEL.to_owned(),
                    spec.namespace,
                )])),
                ..Default::default()
            })
        };
        let spec = beta::SidecarSetSpec {
            selector: spec.selector,
            namespace_selector,
            init_containers: spec.init_containers,
            containers: spec.containers,
            volumes: spec.volumes,
            update_strategy: spec.update_strategy,
            injection_strategy: spec.injection_strategy,
            image_pull_secrets: spec.image_pull_secrets,
            revision_history_limit: spec.revision_history_limit,
            patch_pod_metadata: spec.patch_pod_metadata,
            custom_version,
        };
        beta::SidecarSet { metadata, spec, status }
    }

    fn map_from_hub(hub: beta::SidecarSet) -> Self {
        let beta::SidecarSet { mut metadata, spec, status } = hub;
        if !spec.custom_version.is_empty() {
            metadata
                .labels
                .get_or_insert_with(BTreeMap::new)
                .insert(SIDECARSET_CUSTOM_VERSION.to_owned(), spec.custom_version);
        }
        let spec = alpha::SidecarSetSpec {
            selector: spec.selector,
            namespace: String::new(),
            namespace_selector: spec.namespace_selector,
            init_containers: spec.init_containers,
            containers: spec.containers,
            volumes: spec.volumes,
            update_strategy: spec.update_strategy,
            injection_strategy: spec.injection_strategy,
            image_pull_secrets: spec.image_pull_secrets,
            revision_history_limit: spec.revision_history_limit,
            patch_pod_metadata: spec.patch_pod_metadata,
        };
        alpha::SidecarSet { metadata, spec, status }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::conversion::{RESIDUE_ANNOTATION, from_hub, to_hub};
    use serde_json::json;

    fn alpha(value: serde_json::Value) -> alpha::SidecarSet {
        serde_json::from_value(value).expect("valid v1alpha1 SidecarSet")
    }

    #[test]
    fn custom_version_label_moves_into_the_spec() {
        let scs = alpha(json!({
            "apiVersion": "apps.kruise.io/v1alpha1", "kind": "SidecarSet",
            "metadata": {"name": "log-agent", "labels": {SIDECARSET_CUSTOM_VERSION: "v2", "team": "infra"}},
            "spec": {
                "selector": {"matchLabels": {"app": "sample"}},
                "containers": [{
                    "name": "sidecar1", "image": "centos:6.7",
                    "podInjectPolicy": "BeforeAppContainer",
                    "upgradeStrategy": {"upgradeType": "HotUpgrade", "hotUpgradeEmptyImage": "empty:1.0"},
                    "transferEnv": [{"sourceContainerName": "main", "envName": "PROXY_IP"}]
                }],
                "updateStrategy": {"type": "RollingUpdate", "maxUnavailable": "20%", "partition": 90},
                "injectionStrategy": {"revision": {"customVersion": "v1", "policy": "Partial"}}
            }
        }));
        let hub = to_hub(scs.clone()).expect("convert");
        let value = serde_json::to_value(&hub).expect("encode");
        assert_eq!(value["apiVersion"], "apps.kruise.io/v1beta1");
        assert_eq!(value["spec"]["customVersion"], "v2");
        assert_eq!(value["metadata"]["labels"], json!({"team": "infra"}));
        assert_eq!(value["spec"]["containers"][0]["image"], "centos:6.7");
        assert_eq!(value["spec"]["containers"][0]["upgradeStrategy"]["upgradeType"], "HotUpgrade");
        assert!(hub.metadata.annotations.is_none(), "a clean mapping needs no residue");
        assert_eq!(from_hub::<alpha::SidecarSet>(hub).expect("back"), scs);
    }

    #[test]
    fn namespace_becomes_a_namespace_selector() {
        let scs = alpha(json!({
            "apiVersion": "apps.kruise.io/v1alpha1", "kind": "SidecarSet",
            "metadata": {"name": "sidecarset"},
            "spec": {
                "selector": {"matchLabels": {"app": "sample"}},
                "containers": [{"name": "nginx", "image": "nginx:alpine"}],
                "namespace": "ns-1"
            }
        }));
        let hub = scs.clone().map_to_hub();
        assert_eq!(
            serde_json::to_value(&hub.spec.namespace_selector).expect("encode"),
            json!({"matchLabels": {NAMESPACE_NAME_LABEL: "ns-1"}})
        );
        // Upstream maps the selector back as a selector; the residue restores `namespace`.
        let hub = to_hub(scs.clone()).expect("convert");
        assert!(
            hub.metadata.annotations.as_ref().is_some_and(|a| a.contains_key(RESIDUE_ANNOTATION))
        );
        assert_eq!(from_hub::<alpha::SidecarSet>(hub).expect("back"), scs);
    }

    #[test]
    fn hub_without_one_version_fields_round_trips_cleanly() {
        let hub: beta::SidecarSet = serde_json::from_value(json!({
            "apiVersion": "apps.kruise.io/v1beta1", "kind": "SidecarSet",
            "metadata": {"name": "demo"},
            "spec": {
                "namespaceSelector": {"matchLabels": {"env": "prod"}},
                "customVersion": "v3",
                "patchPodMetadata": [{"annotations": {"oom-score": "{\"log-agent\": 1}"}, "patchPolicy": "MergePatchJson"}]
            },
            "status": {"matchedPods": 3, "updatedPods": 2, "readyPods": 3, "latestRevision": "demo-abc"}
        }))
        .expect("valid v1beta1 SidecarSet");
        let down = from_hub::<alpha::SidecarSet>(hub.clone()).expect("down");
        assert_eq!(
            down.metadata
                .labels
                .as_ref()
                .and_then(|l| l.get(SIDECARSET_CUSTOM_VERSION))
                .map(String::as_str),
            Some("v3")
        );
        assert!(down.metadata.annotations.is_none(), "a clean mapping needs no residue");
        assert_eq!(to_hub(down).expect("up"), hub);
    }
}
