//! Whether an in-place update has finished (upstream's `DefaultCheckInPlaceUpdateCompleted`).
//!
//! Image strings are not trusted on their own: a container counts as updated when the
//! runtime reports a container whose spec hash matches the pod spec (kruise-daemon's
//! `apps.kruise.io/runtime-containers-meta`), or else when its status reports an image ID
//! different from the one recorded before the update. Only when the image ID did not change
//! is the status' image compared with the spec (the new image may have the old digest).

use k8s_openapi::api::core::v1::{Container, Pod};
use kruise_api::apps::common::{InPlaceUpdateState, RuntimeContainerMeta, RuntimeContainerMetaSet};
use serde_json::{Value, json};

use super::calculate::metadata_env;
use super::{
    RUNTIME_CONTAINERS_META_ANNOTATION, UpdateOptions, annotation, grace_annotation,
    in_place_update_state, vertical,
};
use crate::revision::{gojson, goschema, hash};

/// Why an in-place update is not finished yet.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum NotCompleted {
    /// The container changes wait for the end of a grace period.
    #[error("still in grace period of in-place update")]
    InGracePeriod,
    /// Containers with lower launch priority still wait for their batch.
    #[error("containers remain to be updated in later batches")]
    PendingBatches,
    /// The in-place update state annotation does not parse.
    #[error("in-place update state is invalid: {0}")]
    InvalidState(String),
    /// The runtime container meta annotation does not parse.
    #[error("runtime containers meta is invalid: {0}")]
    InvalidRuntimeMeta(String),
    /// Env from metadata changed but kruise-daemon has not reported container meta.
    #[error("waiting for all containers hash consistent, but runtime containers meta not found")]
    RuntimeMetaMissing,
    /// Env from metadata changed and some container still runs with the old values.
    #[error("waiting for all containers hash consistent")]
    EnvNotApplied,
    /// Resources changed and the kubelet has not applied them yet.
    #[error("resources not applied: {0}")]
    ResourcesNotApplied(String),
    /// A container still reports the image ID it had before the update.
    #[error("container {container} imageID not changed")]
    ImageNotChanged {
        /// The container.
        container: String,
    },
    /// Containers updated in place have no status.
    #[error("no status for containers {containers:?}")]
    StatusMissing {
        /// The containers without status, sorted.
        containers: Vec<String>,
    },
}

/// Whether the pod's in-place update has finished; `Ok` also when it never had one.
pub fn check_in_place_update_completed(
    pod: &Pod,
    opts: &UpdateOptions,
) -> Result<(), NotCompleted> {
    if grace_annotation(pod).is_some() {
        return Err(NotCompleted::InGracePeriod);
    }
    let state = match in_place_update_state(pod) {
        Ok(None) => return Ok(()),
        Ok(Some(state)) => state,
        Err(err) => return Err(NotCompleted::InvalidState(err.to_string())),
    };
    if !state.next_container_images.is_empty()
        || !state.next_container_ref_metadata.is_empty()
        || !state.next_container_resources.is_empty()
    {
        return Err(NotCompleted::PendingBatches);
    }
    check_containers_update_completed(pod, &state, opts)
}

/// Whether the containers changed so far (by `state`) run their new spec.
pub fn check_containers_update_completed(
    pod: &Pod,
    state: &InPlaceUpdateState,
    opts: &UpdateOptions,
) -> Result<(), NotCompleted> {
    let meta: Option<RuntimeContainerMetaSet> =
        match annotation(pod, RUNTIME_CONTAINERS_META_ANNOTATION) {
            None => None,
            Some(text) => Some(
                serde_json::from_str(text)
                    .map_err(|e| NotCompleted::InvalidRuntimeMeta(e.to_string()))?,
            ),
        };

    if state.update_env_from_metadata {
        let Some(meta) = &meta else { return Err(NotCompleted::RuntimeMetaMissing) };
        if !all_hashes_consistent(pod, meta, HashKind::EnvFromMetadata) {
            return Err(NotCompleted::EnvNotApplied);
        }
    }
    if opts.vertical_scaling && state.update_resources {
        vertical::resources_applied(pod).map_err(NotCompleted::ResourcesNotApplied)?;
    }
    if let Some(meta) = &meta
        && all_hashes_consistent(pod, meta, HashKind::Plain)
    {
        return Ok(());
    }

    let containers = pod.spec.as_ref().map(|s| s.containers.as_slice()).unwrap_or(&[]);
    let spec_image = |name: &str| {
        containers.iter().find(|c| c.name == name).map(|c| {
            let image = c.image.clone().unwrap_or_default();
            if image.contains(':') { image } else { format!("{image}:latest") }
        })
    };
    let mut remaining = state.last_container_statuses.clone();
    let statuses = pod.status.as_ref().and_then(|s| s.container_statuses.as_deref()).unwrap_or(&[]);
    for status in statuses {
        if let Some(before) = remaining.remove(&status.name)
            && before.image_id == status.image_id
            && spec_image(&status.name).unwrap_or_default() != status.image
        {
            return Err(NotCompleted::ImageNotChanged { container: status.name.clone() });
        }
    }
    if !remaining.is_empty() {
        return Err(NotCompleted::StatusMissing { containers: remaining.into_keys().collect() });
    }
    Ok(())
}

#[derive(Clone, Copy)]
enum HashKind {
    Plain,
    EnvFromMetadata,
}

/// Every spec container has a status and a runtime entry for the same container ID, and the
/// runtime's hash matches the spec.
fn all_hashes_consistent(pod: &Pod, meta: &RuntimeContainerMetaSet, kind: HashKind) -> bool {
    let containers = pod.spec.as_ref().map(|s| s.containers.as_slice()).unwrap_or(&[]);
    let statuses = pod.status.as_ref().and_then(|s| s.container_statuses.as_deref()).unwrap_or(&[]);
    containers.iter().all(|container| {
        let Some(status) = statuses.iter().find(|s| s.name == container.name) else { return false };
        let Some(runtime): Option<&RuntimeContainerMeta> =
            meta.containers.iter().rev().find(|m| m.name == container.name)
        else {
            return false;
        };
        if runtime.container_id != status.container_id.clone().unwrap_or_default() {
            return false;
        }
        match kind {
            HashKind::Plain => {
                let (current, legacy) = container_plain_hashes(container);
                runtime.hashes.plain_hash == current || runtime.hashes.plain_hash == legacy
            }
            HashKind::EnvFromMetadata => {
                runtime.hashes.extracted_env_from_metadata_hash
                    == container_env_from_metadata_hash(container, pod)
            }
        }
    })
}

/// The kubelet's hash of a container spec, as kruise-daemon reports it: `(current, legacy)`,
/// where current is the 1.31+ hash of name and image only and legacy the older hash of the
/// whole container.
pub fn container_plain_hashes(container: &Container) -> (u64, u64) {
    let mut picked = String::new();
    let name = Value::String(container.name.clone());
    let image = Value::String(container.image.clone().unwrap_or_default());
    picked.push_str(&gojson::encode_sorted(&json!({"name": name, "image": image})));
    let current = u64::from(hash::deep_hash_json(picked.as_bytes()));

    let raw = serde_json::to_value(container).unwrap_or(Value::Null);
    let normalized = gojson::normalize_struct(&raw, goschema::CONTAINER);
    let whole = gojson::encode_ordered(&normalized, goschema::CONTAINER);
    let legacy = u64::from(hash::deep_hash_json(whole.as_bytes()));
    (current, legacy)
}

/// The hash kruise-daemon reports for the env vars a container takes from pod labels and
/// annotations, with their current values on `pod` (upstream's `GetExpectHash`).
pub fn container_env_from_metadata_hash(container: &Container, pod: &Pod) -> u64 {
    env_from_metadata_hash_with(container, |_, path, key| {
        let source = match path {
            "metadata.annotations" => pod.metadata.annotations.as_ref(),
            _ => pod.metadata.labels.as_ref(),
        };
        source.and_then(|m| m.get(key)).cloned().unwrap_or_default()
    })
}

/// The same hash over the values a running container holds, read from it (`env` in the
/// container; upstream's `GetCurrentHash`): a variable it does not have counts as empty.
pub fn running_env_from_metadata_hash(
    container: &Container,
    env: &std::collections::BTreeMap<String, String>,
) -> u64 {
    env_from_metadata_hash_with(container, |name, _, _| env.get(name).cloned().unwrap_or_default())
}

/// Upstream's `hashEnvs` over the container's env vars from `metadata.labels['…']` and
/// `metadata.annotations['…']`, each valued by `value(name, path, key)`, sorted by name.
fn env_from_metadata_hash_with<'c>(
    container: &'c Container,
    mut value: impl FnMut(&'c str, &'c str, &'c str) -> String,
) -> u64 {
    let mut envs: Vec<(&str, String)> = Vec::new();
    for (name, path, key) in metadata_env(container) {
        if !matches!(path, "metadata.annotations" | "metadata.labels") {
            continue;
        }
        envs.push((name, value(name, path, key)));
    }
    envs.sort_by(|a, b| a.0.cmp(b.0));
    let json = if envs.is_empty() {
        "null".to_owned()
    } else {
        let items: Vec<Value> = envs
            .into_iter()
            .map(|(name, value)| {
                let raw = json!({"name": name, "value": value});
                gojson::normalize_struct(&raw, goschema::ENV_VAR)
            })
            .collect();
        gojson::encode_ordered_slice(&Value::Array(items), goschema::ENV_VAR)
    };
    u64::from(hash::deep_hash_json(json.as_bytes()))
}
