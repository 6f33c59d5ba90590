//! Types shared by several apps.kruise.io kinds and versions: lifecycle hooks, update
//! priority and scatter strategies, and the in-place update records kept on pods.
//!
//! Upstream keeps these in its `apis/apps/pub` package; both API versions embed them
//! unchanged, so one Rust definition serves both.

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::ResourceRequirements;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{LabelSelector, ObjectMeta, Time};
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::wire::is_default;

/// Hooks that hold a pod in a transitional lifecycle state until other components let go.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Lifecycle {
    /// Hook run before a pod is deleted (state `PreparingDelete`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pre_delete: Option<LifecycleHook>,
    /// Hook run before and after an in-place update (`PreparingUpdate` / `Updated`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub in_place_update: Option<LifecycleHook>,
    /// Hook run after a pod is created, before it counts as `Normal`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pre_normal: Option<LifecycleHook>,
}

/// What holds a pod in a lifecycle state: labels that must be present and finalizers that
/// must be present (pre) or absent (post).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct LifecycleHook {
    /// Labels whose presence (with these values) holds the hook.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub labels_handler: BTreeMap<String, String>,
    /// Finalizers whose presence holds the hook.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub finalizers_handler: Vec<String>,
    /// Set the pod's `KruisePodReady` condition to False while the hook runs, so that traffic
    /// drains before the pod changes.
    #[serde(default, skip_serializing_if = "is_default")]
    pub mark_pod_not_ready: bool,
}

crate::wire_enum! {
    /// The value of the `lifecycle.apps.kruise.io/state` pod label.
    pub enum LifecycleState {
        /// Created, waiting for the preNormal hook.
        PreparingNormal = "PreparingNormal",
        /// Serving.
        Normal = "Normal",
        /// Waiting for the inPlaceUpdate hook before an in-place update.
        PreparingUpdate = "PreparingUpdate",
        /// Being updated in place.
        Updating = "Updating",
        /// Updated in place, waiting for the inPlaceUpdate hook to finish.
        Updated = "Updated",
        /// Waiting for the preDelete hook before deletion.
        PreparingDelete = "PreparingDelete",
    }
}

/// Which pods to update first.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct UpdatePriorityStrategy {
    /// Order by the integer values of these label keys, first key first.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub order_priority: Vec<UpdatePriorityOrderTerm>,
    /// Order by the summed weights of the selectors each pod matches.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub weight_priority: Vec<UpdatePriorityWeightTerm>,
}

/// A label key whose integer value orders pods for update (bigger first).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct UpdatePriorityOrderTerm {
    /// The label key.
    #[serde(default)]
    pub ordered_key: String,
}

/// A weight given to the pods a selector matches.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct UpdatePriorityWeightTerm {
    /// Weight in 1..=100.
    #[serde(default)]
    pub weight: i32,
    /// Pods this term applies to.
    #[serde(default)]
    pub match_selector: LabelSelector,
}

/// Pods with these labels are spread out over the whole update instead of updated together.
pub type UpdateScatterStrategy = Vec<UpdateScatterTerm>;

/// One label to scatter.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct UpdateScatterTerm {
    /// Label key.
    #[serde(default)]
    pub key: String,
    /// Label value.
    #[serde(default)]
    pub value: String,
}

/// Tuning for in-place updates and image pre-download.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct InPlaceUpdateStrategy {
    /// Seconds between marking a pod not-ready and changing its containers.
    #[serde(default, skip_serializing_if = "is_default")]
    pub grace_period_seconds: i32,
    /// How many nodes pre-download the new image at once.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub image_pre_download_parallelism: Option<IntOrString>,
    /// Timeout for each image pre-download.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub image_pre_download_timeout_seconds: Option<i32>,
    /// Updated ready pods required before images are pre-downloaded.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub image_pre_download_min_updated_ready_pods: Option<i32>,
}

/// The record of an in-place update, stored as JSON in the pod annotation
/// `apps.kruise.io/inplace-update-state`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct InPlaceUpdateState {
    /// The revision the pod is being updated to.
    #[serde(default)]
    pub revision: String,
    /// When the update began.
    pub update_timestamp: Option<Time>,
    /// Container statuses before the update, by container name.
    #[serde(default)]
    pub last_container_statuses: BTreeMap<String, InPlaceUpdateContainerStatus>,
    /// Env vars taken from pod metadata changed.
    #[serde(default, skip_serializing_if = "is_default")]
    pub update_env_from_metadata: bool,
    /// Container resources changed.
    #[serde(default, skip_serializing_if = "is_default")]
    pub update_resources: bool,
    /// Container images changed.
    #[serde(default, skip_serializing_if = "is_default")]
    pub update_images: bool,
    /// Images still to apply in later launch-priority batches.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub next_container_images: BTreeMap<String, String>,
    /// Metadata still to apply in later batches, by container.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub next_container_ref_metadata: BTreeMap<String, ObjectMeta>,
    /// Resources still to apply in later batches, by container.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub next_container_resources: BTreeMap<String, ResourceRequirements>,
    /// Conditions checked before the next batch starts.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pre_check_before_next: Option<InPlaceUpdatePreCheckBeforeNext>,
    /// Batches of containers updated so far.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub container_batches_record: Vec<InPlaceUpdateContainerBatch>,
}

/// Checks to pass before the next in-place update batch.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct InPlaceUpdatePreCheckBeforeNext {
    /// Containers that must be ready first.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub containers_required_ready: Vec<String>,
}

/// One batch of containers updated together.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct InPlaceUpdateContainerBatch {
    /// When the batch was started.
    pub timestamp: Option<Time>,
    /// The containers in it.
    #[serde(default)]
    pub containers: Vec<String>,
}

/// A container's state before an in-place update.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct InPlaceUpdateContainerStatus {
    /// The image ID the container ran before the update.
    #[serde(rename = "imageID", default, skip_serializing_if = "String::is_empty")]
    pub image_id: String,
}

/// Runtime details of containers reported by kruise-daemon, stored as JSON in the pod
/// annotation `apps.kruise.io/runtime-containers-meta`.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct RuntimeContainerMetaSet {
    /// One entry per container.
    #[serde(default)]
    pub containers: Vec<RuntimeContainerMeta>,
}

/// Runtime details of one container.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct RuntimeContainerMeta {
    /// Container name.
    #[serde(default)]
    pub name: String,
    /// Runtime container ID.
    #[serde(rename = "containerID", default)]
    pub container_id: String,
    /// Restarts seen by the runtime.
    #[serde(default)]
    pub restart_count: i32,
    /// Hashes of the container spec as the runtime started it.
    #[serde(default)]
    pub hashes: RuntimeContainerHashes,
}

/// Hashes of a running container's spec.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct RuntimeContainerHashes {
    /// Hash of the container spec, as the kubelet computes it.
    #[serde(default)]
    pub plain_hash: u64,
    /// Hash of the env vars taken from pod metadata.
    #[serde(default, skip_serializing_if = "is_default")]
    pub extracted_env_from_metadata_hash: u64,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lifecycle_hook_omits_empty_fields_like_go() {
        let hook = LifecycleHook::default();
        assert_eq!(serde_json::to_value(&hook).expect("encode"), serde_json::json!({}));
        let hook: LifecycleHook = serde_json::from_value(serde_json::json!({
            "labelsHandler": {"example.io/block": "true"},
            "markPodNotReady": true
        }))
        .expect("decode");
        assert!(hook.mark_pod_not_ready);
        assert_eq!(hook.labels_handler.get("example.io/block").map(String::as_str), Some("true"));
    }

    #[test]
    fn in_place_update_state_keeps_required_fields() {
        let state = InPlaceUpdateState { revision: "rev-1".into(), ..Default::default() };
        let value = serde_json::to_value(&state).expect("encode");
        assert_eq!(
            value,
            serde_json::json!({"revision": "rev-1", "updateTimestamp": null, "lastContainerStatuses": {}})
        );
    }
}
