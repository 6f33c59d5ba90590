//! Turning an [`UpdateSpec`] into changes to one pod (upstream's `Update`,
//! `updatePodInPlace` and `defaultPatchUpdateSpecToPod`).
//!
//! The pod change is a strategic-merge patch (`application/strategic-merge-patch+json`):
//! `metadata.labels` / `metadata.annotations` entries (with `null` for removals), any other
//! metadata directives from the template's metadata patch, and `spec.containers` entries
//! keyed by `name` holding only the new `image` and/or `resources`. The applier sends it
//! as is; it should carry the snapshot's `resourceVersion` as a precondition where it can,
//! since the recorded image IDs come from the snapshot.

use std::collections::{BTreeMap, BTreeSet};

use jiff::{SignedDuration, Timestamp};
use k8s_openapi::api::core::v1::{Container, Pod, PodCondition, ResourceRequirements};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, Time};
use kruise_api::apps::common::{
    InPlaceUpdateContainerBatch, InPlaceUpdateContainerStatus, InPlaceUpdatePreCheckBeforeNext,
    InPlaceUpdateState,
};
use serde_json::{Map, Value};

use super::{
    CONTAINER_BARRIER_ENV, GRACE_ANNOTATION, GRACE_ANNOTATION_LEGACY, STATE_ANNOTATION,
    STATE_ANNOTATION_LEGACY, UpdateOptions, UpdateSpec, annotation, condition, vertical,
};
use crate::revision;

/// Changes to one pod: apply `resize` to the `pods/resize` subresource first (when set),
/// then `patch` to the pod.
#[derive(Clone, Debug, PartialEq)]
pub struct PodUpdate {
    /// Strategic-merge patch for the pod.
    pub patch: Value,
    /// Strategic-merge patch for the `pods/resize` subresource, when resources change and
    /// the API server resizes through it.
    pub resize: Option<Value>,
    /// The in-place update state the patch records, when it records one.
    pub state: Option<InPlaceUpdateState>,
}

/// Everything needed to start an in-place update of one pod, in the order to apply it.
#[derive(Clone, Debug, PartialEq)]
pub struct InPlaceUpdatePlan {
    /// First: the pod's status conditions with `InPlaceUpdateReady` (and `Ready`) set to
    /// False, when the pod must leave service and they are not already so.
    pub conditions: Option<Vec<PodCondition>>,
    /// Then: the pod changes.
    pub update: PodUpdate,
    /// Look at the pod again after this long (the grace period, when there is one).
    pub requeue_after: Option<SignedDuration>,
    /// The container changes are postponed by a grace period; [`super::refresh`] applies them.
    pub in_grace_period: bool,
}

/// The launch priority the pod webhook gave a container (from its `KRUISE_CONTAINER_BARRIER`
/// env var, key `p_<n>`), or `None` when it has none. A malformed key counts as 0.
pub fn container_priority(container: &Container) -> Option<i64> {
    let env = container.env.iter().flatten().find(|e| e.name == CONTAINER_BARRIER_ENV)?;
    let key = env
        .value_from
        .as_ref()
        .and_then(|v| v.config_map_key_ref.as_ref())
        .map(|r| r.key.as_str())
        .unwrap_or("");
    Some(key.get(2..).and_then(|p| p.parse().ok()).unwrap_or(0))
}

/// Plans the in-place update of `pod` to `spec` (upstream's `Update`).
///
/// The patch sets the revision labels (`controller-revision-hash`, `pod-template-hash`) and
/// the [`STATE_ANNOTATION`]. Without a grace period it also changes the containers of the
/// first launch-priority batch and applies the metadata changes; with one it only parks the
/// spec in [`GRACE_ANNOTATION`] and asks to be called back when the period is over.
/// Lifecycle labels (upstream's `AdditionalFuncs`) are the caller's to add to the patch.
pub fn plan_in_place_update(
    pod: &Pod,
    spec: &UpdateSpec,
    opts: &UpdateOptions,
    now: Timestamp,
) -> InPlaceUpdatePlan {
    let now = whole_seconds(now);
    let conditions = if condition::check_pod_needs_be_unready(pod, spec, opts) {
        condition::update_condition(pod, false, now)
    } else {
        None
    };

    let mut patch = PodPatch::default();
    let short = revision::short_hash(&spec.revision).to_owned();
    let revision_label = if opts.short_hash { short.clone() } else { spec.revision.clone() };
    patch.set_label(revision::POD_REVISION_LABEL, Value::String(revision_label));
    if opts.pod_template_hash_label {
        patch.set_label(revision::POD_TEMPLATE_HASH_LABEL, Value::String(short));
    }
    if annotation(pod, STATE_ANNOTATION_LEGACY).is_some() {
        patch.set_annotation(STATE_ANNOTATION_LEGACY, Value::Null);
    }

    let mut state = InPlaceUpdateState {
        revision: spec.revision.clone(),
        update_timestamp: Some(Time(now)),
        update_env_from_metadata: spec.update_env_from_metadata,
        update_images: !spec.container_images.is_empty(),
        update_resources: !spec.container_resources.is_empty(),
        ..InPlaceUpdateState::default()
    };

    let in_grace_period = spec.grace_seconds > 0;
    let mut resize = None;
    if in_grace_period {
        patch.set_annotation(STATE_ANNOTATION, Value::String(state_json(&state)));
        patch.set_annotation(GRACE_ANNOTATION, Value::String(spec.to_annotation()));
    } else {
        let expected = patch_spec_to_pod(pod, spec, &mut state, opts, now, &mut patch);
        remove_grace(pod, &mut patch);
        if opts.resize_subresource {
            resize = vertical::resize_patch(pod, &expected);
        }
    }
    let requeue_after =
        in_grace_period.then(|| SignedDuration::from_secs(i64::from(spec.grace_seconds)));
    InPlaceUpdatePlan {
        conditions,
        update: PodUpdate { patch: patch.into_value(), resize, state: Some(state) },
        requeue_after,
        in_grace_period,
    }
}

/// Truncates to whole seconds, as the timestamps are stored.
pub(crate) fn whole_seconds(now: Timestamp) -> Timestamp {
    Timestamp::from_second(now.as_second()).unwrap_or(now)
}

pub(crate) fn state_json(state: &InPlaceUpdateState) -> String {
    // Invariant: the state holds strings, maps with string keys, bools and timestamps, which
    // always encode.
    serde_json::to_string(state).unwrap_or_default()
}

/// Nulls both spellings of the grace annotation that the pod carries.
pub(crate) fn remove_grace(pod: &Pod, patch: &mut PodPatch) {
    for key in [GRACE_ANNOTATION, GRACE_ANNOTATION_LEGACY] {
        if annotation(pod, key).is_some() {
            patch.set_annotation(key, Value::Null);
        }
    }
}

/// A strategic-merge patch for a pod, built up field by field.
#[derive(Debug, Default)]
pub(crate) struct PodPatch {
    labels: Map<String, Value>,
    annotations: Map<String, Value>,
    other_metadata: Map<String, Value>,
    containers: Vec<(String, Map<String, Value>)>,
}

impl PodPatch {
    fn section(&mut self, name: &str) -> &mut Map<String, Value> {
        if name == "labels" { &mut self.labels } else { &mut self.annotations }
    }

    pub(crate) fn set_label(&mut self, key: &str, value: Value) {
        self.labels.insert(key.to_owned(), value);
    }

    pub(crate) fn set_annotation(&mut self, key: &str, value: Value) {
        self.annotations.insert(key.to_owned(), value);
    }

    fn container(&mut self, name: &str) -> &mut Map<String, Value> {
        let index = match self.containers.iter().position(|(n, _)| n == name) {
            Some(i) => i,
            None => {
                self.containers.push((name.to_owned(), Map::new()));
                self.containers.len() - 1
            }
        };
        &mut self.containers[index].1
    }

    /// Merges a template metadata patch (`{"metadata": {...}}`) over what is set so far;
    /// a whole map set to `null` removes each of the pod's entries.
    fn merge_metadata_patch(&mut self, pod: &Pod, metadata_patch: &Value) {
        let Some(Value::Object(meta)) = metadata_patch.get("metadata") else { return };
        for (key, value) in meta {
            match (key.as_str(), value) {
                ("labels" | "annotations", Value::Object(entries)) => {
                    let section = self.section(key);
                    for (k, v) in entries {
                        section.insert(k.clone(), v.clone());
                    }
                }
                ("labels" | "annotations", Value::Null) => {
                    let existing = if key == "labels" {
                        pod.metadata.labels.as_ref()
                    } else {
                        pod.metadata.annotations.as_ref()
                    };
                    let keys: Vec<String> =
                        existing.into_iter().flatten().map(|(k, _)| k.clone()).collect();
                    let section = self.section(key);
                    for k in keys {
                        section.insert(k, Value::Null);
                    }
                }
                _ => {
                    self.other_metadata.insert(key.clone(), value.clone());
                }
            }
        }
    }

    pub(crate) fn into_value(self) -> Value {
        let mut root = Map::new();
        let mut metadata = self.other_metadata;
        if !self.labels.is_empty() {
            metadata.insert("labels".to_owned(), Value::Object(self.labels));
        }
        if !self.annotations.is_empty() {
            metadata.insert("annotations".to_owned(), Value::Object(self.annotations));
        }
        if !metadata.is_empty() {
            root.insert("metadata".to_owned(), Value::Object(metadata));
        }
        if !self.containers.is_empty() {
            let entries = self
                .containers
                .into_iter()
                .map(|(name, mut fields)| {
                    fields.insert("name".to_owned(), Value::String(name));
                    Value::Object(fields)
                })
                .collect();
            let mut spec = Map::new();
            spec.insert("containers".to_owned(), Value::Array(entries));
            root.insert("spec".to_owned(), Value::Object(spec));
        }
        Value::Object(root)
    }
}

/// Applies `spec` to the pod's first batch of containers, recording the rest in `state`
/// (upstream's `defaultPatchUpdateSpecToPod`). Returns the resources expected for the
/// containers updated now.
pub(crate) fn patch_spec_to_pod(
    pod: &Pod,
    spec: &UpdateSpec,
    state: &mut InPlaceUpdateState,
    opts: &UpdateOptions,
    now: Timestamp,
    patch: &mut PodPatch,
) -> BTreeMap<String, ResourceRequirements> {
    state.next_container_images.clear();
    state.next_container_ref_metadata.clear();
    state.next_container_resources.clear();

    if let Some(metadata_patch) = &spec.metadata_patch {
        patch.merge_metadata_patch(pod, metadata_patch);
    }

    let containers: &[Container] =
        pod.spec.as_ref().map(|s| s.containers.as_slice()).unwrap_or(&[]);
    let to_update = first_batch(containers, spec);

    // Images, remembering the image IDs they ran before.
    let mut image_changed = BTreeSet::new();
    for container in containers {
        let Some(image) = spec.container_images.get(&container.name) else { continue };
        if to_update.contains(&container.name) {
            patch
                .container(&container.name)
                .insert("image".to_owned(), Value::String(image.clone()));
            image_changed.insert(container.name.clone());
        } else {
            state.next_container_images.insert(container.name.clone(), image.clone());
        }
    }
    let statuses = pod.status.as_ref().and_then(|s| s.container_statuses.as_deref()).unwrap_or(&[]);
    for status in statuses {
        if image_changed.contains(&status.name)
            && !state.last_container_statuses.contains_key(&status.name)
        {
            state.last_container_statuses.insert(
                status.name.clone(),
                InPlaceUpdateContainerStatus { image_id: status.image_id.clone() },
            );
        }
    }

    // Resources.
    let mut expected = BTreeMap::new();
    if opts.vertical_scaling {
        for container in containers {
            let Some(resources) = spec.container_resources.get(&container.name) else { continue };
            if to_update.contains(&container.name) {
                expected.insert(container.name.clone(), resources.clone());
            } else {
                state.next_container_resources.insert(container.name.clone(), resources.clone());
            }
        }
        if !opts.resize_subresource {
            for (name, resources) in &expected {
                if let Some(value) = vertical::resource_patch(resources, None) {
                    patch.container(name).insert("resources".to_owned(), value);
                }
            }
        }
    }

    // Labels and annotations read by the containers updated now.
    for (name, meta) in &spec.container_ref_metadata {
        if to_update.contains(name) {
            for (k, v) in meta.labels.iter().flatten() {
                patch.set_label(k, Value::String(v.clone()));
            }
            for (k, v) in meta.annotations.iter().flatten() {
                patch.set_annotation(k, Value::String(v.clone()));
            }
        } else {
            state.next_container_ref_metadata.insert(name.clone(), meta.clone());
        }
    }

    let batch: Vec<String> = to_update.into_iter().collect();
    let more = !state.next_container_images.is_empty()
        || !state.next_container_ref_metadata.is_empty()
        || !state.next_container_resources.is_empty();
    state.pre_check_before_next =
        more.then(|| InPlaceUpdatePreCheckBeforeNext { containers_required_ready: batch.clone() });
    state
        .container_batches_record
        .push(InPlaceUpdateContainerBatch { timestamp: Some(Time(now)), containers: batch });
    patch.set_annotation(STATE_ANNOTATION, Value::String(state_json(state)));
    expected
}

/// The containers to change now: all touched containers without a launch priority, plus
/// those with the highest priority, plus (transitively) those sharing a changed label or
/// annotation with them.
fn first_batch(containers: &[Container], spec: &UpdateSpec) -> BTreeSet<String> {
    let mut to_update = BTreeSet::new();
    let mut highest: Option<i64> = None;
    let mut highest_names: Vec<String> = Vec::new();
    for container in containers {
        let name = &container.name;
        if !spec.container_images.contains_key(name)
            && !spec.container_ref_metadata.contains_key(name)
            && !spec.container_resources.contains_key(name)
        {
            continue;
        }
        match container_priority(container) {
            None => {
                to_update.insert(name.clone());
            }
            Some(p) if highest.is_none_or(|h| h < p) => {
                highest = Some(p);
                highest_names = vec![name.clone()];
            }
            Some(p) if highest == Some(p) => highest_names.push(name.clone()),
            Some(_) => {}
        }
    }
    to_update.extend(highest_names);
    add_metadata_sharers(&mut to_update, &spec.container_ref_metadata);
    to_update
}

fn add_metadata_sharers(
    to_update: &mut BTreeSet<String>,
    ref_metadata: &BTreeMap<String, ObjectMeta>,
) {
    let mut labels: BTreeSet<String> = BTreeSet::new();
    let mut annotations: BTreeSet<String> = BTreeSet::new();
    let mut newly: BTreeSet<String> = to_update.clone();
    while !newly.is_empty() {
        for name in &newly {
            if let Some(meta) = ref_metadata.get(name) {
                labels.extend(meta.labels.iter().flatten().map(|(k, _)| k.clone()));
                annotations.extend(meta.annotations.iter().flatten().map(|(k, _)| k.clone()));
            }
        }
        newly = BTreeSet::new();
        for (name, meta) in ref_metadata {
            if to_update.contains(name) {
                continue;
            }
            let shares = meta.labels.iter().flatten().any(|(k, _)| labels.contains(k))
                || meta.annotations.iter().flatten().any(|(k, _)| annotations.contains(k));
            if shares {
                to_update.insert(name.clone());
                newly.insert(name.clone());
            }
        }
    }
}
