//! In-place update of pods: whether a revision change can be applied without recreating the
//! pod, the pod changes that apply it, and when it has finished.
//!
//! The flow, as upstream OpenKruise runs it:
//!
//! 1. [`calculate_update_spec`] compares the old and new pod templates. Only container
//!    images, pod labels and annotations, and (with vertical scaling) container cpu/memory
//!    values may differ; anything else means the pod must be recreated (`None`).
//! 2. [`plan_in_place_update`] turns the [`UpdateSpec`] into changes to one pod: first the
//!    `InPlaceUpdateReady` condition goes to False (so the pod leaves service), then a
//!    strategic-merge patch changes the pod and records an [`InPlaceUpdateState`] in the
//!    `apps.kruise.io/inplace-update-state` annotation. With a grace period the container
//!    changes are postponed: the spec is parked in `apps.kruise.io/inplace-update-grace`.
//!    Containers with a launch priority are updated in batches, highest priority first.
//! 3. [`refresh`] is run on every pod on every round: it finishes grace periods, starts the
//!    next batch once the previous one runs, and sets `InPlaceUpdateReady` back to True.
//! 4. [`check_in_place_update_completed`] tells whether the kubelet has restarted the
//!    containers: by the runtime's container hashes when kruise-daemon reports them, else by
//!    the image IDs in the container statuses having changed.
//!
//! Everything here is a pure function of the pod, the options and `now`; the caller applies
//! the returned patches (see [`InPlaceUpdatePlan`] for the order).

mod base64;
#[cfg(test)]
pub(crate) use base64::decode as base64_decode;
pub(crate) use base64::encode as base64_encode;
mod calculate;
mod complete;
mod condition;
mod jsondiff;
mod metapatch;
mod patch;
mod refresh;
mod vertical;

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::{Pod, ResourceRequirements};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kruise_api::apps::common::InPlaceUpdateState;
use kruise_api::well_known;
use serde::{Deserialize, Serialize};
use serde_json::Value;

pub use calculate::{calculate_revision_update_spec, calculate_update_spec};
pub use complete::{
    NotCompleted, check_containers_update_completed, check_in_place_update_completed,
    container_env_from_metadata_hash, container_plain_hashes, running_env_from_metadata_hash,
};
pub use condition::{
    check_pod_needs_be_unready, has_readiness_gate, in_place_update_condition,
    inject_readiness_gate, update_condition,
};
pub use patch::{InPlaceUpdatePlan, PodUpdate, container_priority, plan_in_place_update};
pub use refresh::{RefreshAction, refresh};
pub use vertical::{pod_qos_class, resources_applied, resources_applied_to};

/// Pod condition type (and readiness gate) Kruise holds False while a pod updates in place.
pub const IN_PLACE_UPDATE_READY: &str = well_known::readiness_gates::IN_PLACE_UPDATE_READY;
/// Pod annotation holding the [`InPlaceUpdateState`] as JSON.
pub const STATE_ANNOTATION: &str = well_known::annotations::INPLACE_UPDATE_STATE;
/// Older spelling of [`STATE_ANNOTATION`], still read and removed on update.
pub const STATE_ANNOTATION_LEGACY: &str = well_known::annotations::INPLACE_UPDATE_STATE_LEGACY;
/// Pod annotation holding the [`UpdateSpec`] postponed by a grace period.
pub const GRACE_ANNOTATION: &str = well_known::annotations::INPLACE_UPDATE_GRACE;
/// Older spelling of [`GRACE_ANNOTATION`], still read and removed.
pub const GRACE_ANNOTATION_LEGACY: &str = well_known::annotations::INPLACE_UPDATE_GRACE_LEGACY;
/// Pod annotation where kruise-daemon reports the runtime's container hashes.
pub const RUNTIME_CONTAINERS_META_ANNOTATION: &str =
    well_known::annotations::RUNTIME_CONTAINERS_META;
/// Env var the pod webhook injects to carry a container's launch priority (`p_<n>`).
pub const CONTAINER_BARRIER_ENV: &str = well_known::env::container::KRUISE_CONTAINER_BARRIER;

/// The feature gates and strategy settings that shape an in-place update.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct UpdateOptions {
    /// Seconds between taking the pod out of service and changing its containers
    /// (`inPlaceUpdateStrategy.gracePeriodSeconds`); 0 changes them at once.
    pub grace_period_seconds: i32,
    /// The `InPlaceWorkloadVerticalScaling` gate: cpu/memory changes may be made in place.
    pub vertical_scaling: bool,
    /// The `InPlaceUpdateEnvFromMetadata` gate (on by default): label/annotation changes that
    /// containers read through the downward API restart just those containers.
    pub env_from_metadata: bool,
    /// Resources are changed through the `pods/resize` subresource (API server 1.32 and
    /// later) instead of in the pod spec.
    pub resize_subresource: bool,
    /// The `RecreatePodWhenChangeVCTInCloneSetGate` gate: a change of the volume claim
    /// templates forces recreation.
    pub recreate_on_volume_claim_template_change: bool,
    /// Ignore volume-claim-template changes anyway (CloneSet `InPlaceOnly`).
    pub ignore_volume_claim_template_change: bool,
    /// The `CloneSetShortHash` gate: the pod's `controller-revision-hash` label holds only
    /// the hash, not the revision name.
    pub short_hash: bool,
    /// Also write the revision's hash into the `pod-template-hash` label, as CloneSets do
    /// (Advanced StatefulSets write only `controller-revision-hash`).
    pub pod_template_hash_label: bool,
}

impl Default for UpdateOptions {
    fn default() -> Self {
        Self {
            grace_period_seconds: 0,
            vertical_scaling: false,
            env_from_metadata: true,
            resize_subresource: false,
            recreate_on_volume_claim_template_change: false,
            ignore_volume_claim_template_change: false,
            short_hash: false,
            pod_template_hash_label: true,
        }
    }
}

/// What an in-place update changes: the result of [`calculate_update_spec`].
///
/// It is also what a grace period parks in [`GRACE_ANNOTATION`]; [`UpdateSpec::to_annotation`]
/// and [`UpdateSpec::from_annotation`] use upstream's JSON layout so that either controller
/// can finish a grace period the other started.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct UpdateSpec {
    /// The revision the pod moves to.
    pub revision: String,
    /// New images, by container name.
    pub container_images: BTreeMap<String, String>,
    /// Labels and annotations read by each container's env (downward API), by container
    /// name; setting them restarts that container.
    pub container_ref_metadata: BTreeMap<String, ObjectMeta>,
    /// New cpu/memory values, by container name.
    pub container_resources: BTreeMap<String, ResourceRequirements>,
    /// Strategic-merge patch (`{"metadata": ...}`) for the other label and annotation
    /// changes, when the metadata changed at all.
    pub metadata_patch: Option<Value>,
    /// Some env var taken from metadata changes.
    pub update_env_from_metadata: bool,
    /// The grace period to wait before changing containers.
    pub grace_seconds: i32,
}

impl UpdateSpec {
    /// Only resources change (no image, no env from metadata).
    pub fn vertical_update_only(&self) -> bool {
        !self.container_resources.is_empty()
            && self.container_images.is_empty()
            && !self.update_env_from_metadata
    }

    /// The JSON upstream stores in [`GRACE_ANNOTATION`].
    pub fn to_annotation(&self) -> String {
        let wire = GraceWire {
            revision: self.revision.clone(),
            container_images: self.container_images.clone(),
            container_ref_metadata: self.container_ref_metadata.clone(),
            container_resources: self.container_resources.clone(),
            meta_data_patch: self
                .metadata_patch
                .as_ref()
                .map(|p| base64::encode(crate::revision::gojson::encode_sorted(p).as_bytes())),
            update_env_from_metadata: self.update_env_from_metadata,
            grace_seconds: self.grace_seconds,
        };
        // Invariant: the wire type holds only maps with string keys, strings, bools and
        // integers, which always encode.
        serde_json::to_string(&wire).unwrap_or_default()
    }

    /// Reads [`GRACE_ANNOTATION`].
    pub fn from_annotation(text: &str) -> Result<Self, InPlaceError> {
        let invalid =
            |message: String| InPlaceError::InvalidAnnotation { key: GRACE_ANNOTATION, message };
        let wire: GraceWire = serde_json::from_str(text).map_err(|e| invalid(e.to_string()))?;
        let metadata_patch = match wire.meta_data_patch {
            None => None,
            Some(encoded) => {
                let bytes = base64::decode(&encoded)
                    .ok_or_else(|| invalid("metaDataPatch is not base64".to_owned()))?;
                Some(serde_json::from_slice(&bytes).map_err(|e| invalid(e.to_string()))?)
            }
        };
        Ok(Self {
            revision: wire.revision,
            container_images: wire.container_images,
            container_ref_metadata: wire.container_ref_metadata,
            container_resources: wire.container_resources,
            metadata_patch,
            update_env_from_metadata: wire.update_env_from_metadata,
            grace_seconds: wire.grace_seconds,
        })
    }
}

/// Upstream's `UpdateSpec` JSON: `metaDataPatch` is a Go `[]byte`, hence base64.
#[derive(Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
struct GraceWire {
    #[serde(default)]
    revision: String,
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty", deserialize_with = "nullable")]
    container_images: BTreeMap<String, String>,
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty", deserialize_with = "nullable")]
    container_ref_metadata: BTreeMap<String, ObjectMeta>,
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty", deserialize_with = "nullable")]
    container_resources: BTreeMap<String, ResourceRequirements>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    meta_data_patch: Option<String>,
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    update_env_from_metadata: bool,
    #[serde(default, skip_serializing_if = "is_zero")]
    grace_seconds: i32,
}

fn is_zero(n: &i32) -> bool {
    *n == 0
}

fn nullable<'de, D, T>(deserializer: D) -> Result<T, D::Error>
where
    D: serde::Deserializer<'de>,
    T: Default + Deserialize<'de>,
{
    Ok(Option::<T>::deserialize(deserializer)?.unwrap_or_default())
}

/// Why an in-place step could not be planned.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum InPlaceError {
    /// A Kruise annotation on the pod does not hold what it should.
    #[error("pod annotation {key} is invalid: {message}")]
    InvalidAnnotation {
        /// The annotation key.
        key: &'static str,
        /// What is wrong with it.
        message: String,
    },
    /// A grace period is recorded but the in-place update state is missing.
    #[error("pod has annotation {GRACE_ANNOTATION} but no {STATE_ANNOTATION}")]
    MissingState,
}

fn annotation<'a>(pod: &'a Pod, key: &str) -> Option<&'a str> {
    pod.metadata.annotations.as_ref()?.get(key).map(String::as_str)
}

/// The pod's recorded in-place update state ([`STATE_ANNOTATION`], or its legacy spelling).
pub fn in_place_update_state(pod: &Pod) -> Result<Option<InPlaceUpdateState>, InPlaceError> {
    let Some(text) =
        annotation(pod, STATE_ANNOTATION).or_else(|| annotation(pod, STATE_ANNOTATION_LEGACY))
    else {
        return Ok(None);
    };
    parse_state(text).map(Some)
}

fn parse_state(text: &str) -> Result<InPlaceUpdateState, InPlaceError> {
    // Go writes `null` for empty maps; read those as empty.
    let mut value: Value = serde_json::from_str(text).map_err(|e| {
        InPlaceError::InvalidAnnotation { key: STATE_ANNOTATION, message: e.to_string() }
    })?;
    if let Value::Object(map) = &mut value {
        map.retain(|_, v| !v.is_null());
    }
    serde_json::from_value(value).map_err(|e| InPlaceError::InvalidAnnotation {
        key: STATE_ANNOTATION,
        message: e.to_string(),
    })
}

/// The update spec parked by a grace period ([`GRACE_ANNOTATION`], or its legacy
/// spelling), if any.
pub fn grace_period_spec(pod: &Pod) -> Result<Option<UpdateSpec>, InPlaceError> {
    match grace_annotation(pod) {
        None => Ok(None),
        Some(text) => UpdateSpec::from_annotation(text).map(Some),
    }
}

fn grace_annotation(pod: &Pod) -> Option<&str> {
    annotation(pod, GRACE_ANNOTATION).or_else(|| annotation(pod, GRACE_ANNOTATION_LEGACY))
}

#[cfg(test)]
mod tests;
