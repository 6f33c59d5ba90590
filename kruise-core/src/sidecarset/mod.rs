//! SidecarSet injection: which SidecarSets select a new pod, and the pod with their sidecars
//! injected, as upstream's pod mutating webhook does it at pod CREATE.
//!
//! [`inject`] takes an [`InjectionInput`] (the pod, the SidecarSets that may select it with
//! their revisions, the namespace's labels, the feature gates and `now`) and returns an
//! [`Injection`]: the mutated pod (or nothing to do) plus what was injected, or an
//! [`InjectionError`]. Nothing is looked up: the caller (kruise-kube) lists the SidecarSets,
//! with [`SidecarSetIndex`] narrowing the list, and the ControllerRevisions of those that pin
//! a revision.
//!
//! What injection does, in order:
//! 1. Pods that are finished or being deleted are left alone.
//! 2. SidecarSets with `injectionStrategy.paused` are skipped; the others must select the
//!    pod (`namespaceSelector` against the namespace's labels, then a non-empty `selector`).
//! 3. With `injectionStrategy.revision`, the pinned ControllerRevision's containers, init
//!    containers, volumes, pull secrets and metadata patches replace the current ones
//!    (policy `Always`, or while updates are paused); with policy `Partial`, pods outside
//!    `updateStrategy.selector` get the pinned revision and the others get it with the
//!    probability `partition` (a percentage), using the caller's [`SidecarSetCandidate::draw`].
//! 4. A canary SidecarSet (annotations `apps.kruise.io/sidecarset-canary: "true"` and
//!    `apps.kruise.io/sidecarset-base: <name>`) takes the place of its base for this pod.
//! 5. Two SidecarSets that would inject a container of the same name are refused.
//! 6. `patchPodMetadata` is applied (Retain, Overwrite, MergePatchJson).
//! 7. Each container and init container is built: `IS_INJECTED=true`, `transferEnv` (with
//!    `sourceContainerNameFrom` read from the pod's labels or annotations), the app
//!    containers' volume mounts (`shareVolumePolicy`, with the env their `subPathExpr` uses)
//!    and volume devices (`shareVolumeDevicePolicy`), `resourcesPolicy`, and for
//!    `HotUpgrade` the `<name>-1`/`<name>-2` pair with the version env and annotations.
//! 8. Init containers go sorted by name; containers too with the
//!    `EnableSortSidecarContainerByName` gate. Each goes before or after the pod's own ones
//!    per `podInjectPolicy`. The sidecars' volumes and pull secrets are merged (the pod's
//!    own win), and the hash annotations and the injected list are written.
//!
//! Differences from upstream, on purpose:
//! - **Idempotence.** A container (or hot-upgrade pair) whose name the pod already has is
//!   not injected again, and the pod's container is kept (upstream overwrites it in place).
//!   A SidecarSet that injects nothing leaves the hash annotations alone, so injecting into
//!   an injected pod changes nothing.
//! - **Name clashes.** Upstream relies on admission to keep two SidecarSets from selecting
//!   the same pods with the same container name; here the pod is also refused, naming both.
//! - **Unset `podInjectPolicy`** is read as the SidecarSet defaulting webhook fills it
//!   (containers before, init containers after the pod's own), not as upstream's merge reads
//!   an empty value (after).
//! - **Hashes** are our own when the SidecarSet carries none (see [`hash`]).
//! - The `SidecarSet_PatchPodMetadata_WhiteList` is checked when a SidecarSet is admitted,
//!   as upstream does ([`whitelist`], [`crate::sidecarset::admission`]), not at injection.

pub mod admission;
pub mod expr;
pub mod hash;
pub mod index;
pub mod matching;
mod pod_step;
pub mod resources;
pub mod revision;
pub mod upgrade;
pub mod whitelist;

use std::collections::{BTreeMap, BTreeSet};

use jiff::Timestamp;
use k8s_openapi::api::apps::v1::ControllerRevision;
use k8s_openapi::api::core::v1::{
    Container, EnvVar, EnvVarSource, LocalObjectReference, ObjectFieldSelector, Pod, Volume,
    VolumeDevice, VolumeMount,
};
use kruise_api::apps::v1beta1::{
    PodInjectPolicyType, ShareVolumePolicyType, SidecarContainer, SidecarContainerUpgradeType,
    SidecarSet, SidecarSetInjectRevisionPolicy, SidecarSetPatchPodMetadata,
    SidecarSetPatchPolicyType,
};
use kruise_api::well_known::{annotations, env, labels, values};
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::admission::meta::label_selector_as_selector;
use crate::admission::pod_edit::PodEdit;
use crate::revision::gojson::with_sorted_keys;

pub use hash::{sidecar_set_hash, sidecar_set_hash_without_image};
pub use index::SidecarSetIndex;
pub use pod_step::SidecarSetInjection;
pub use whitelist::{PatchMetadataWhitelist, parse_patch_metadata_whitelist};

/// The namespace upstream assumes for a pod that names none.
pub const DEFAULT_NAMESPACE: &str = "default";

/// One SidecarSet that may select the pod, with what injection needs to know about its
/// revisions.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SidecarSetCandidate {
    /// The SidecarSet (v1beta1; convert v1alpha1 objects first), shared with the caller's
    /// cache.
    pub sidecar_set: std::sync::Arc<SidecarSet>,
    /// The SidecarSet's ControllerRevisions (label `kruise.io/sidecarset-name`), needed only
    /// when `injectionStrategy.revision` pins one.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub revisions: Vec<ControllerRevision>,
    /// A uniform draw in `[0, 1)` made by the caller for this pod and SidecarSet, used by
    /// `injectionStrategy.revision.policy: Partial`.
    #[serde(default)]
    pub draw: f64,
    /// The SidecarSet's selectors already parsed (as [`SidecarSetIndex`] keeps them); `None`:
    /// parsed here. They must be the selectors of `sidecar_set`.
    #[serde(skip)]
    pub selectors: Option<std::sync::Arc<matching::ParsedSelectors>>,
}

/// Feature gates that change injection.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct InjectionGates {
    /// `EnableSortSidecarContainerByName` (off by default): sort injected containers by name.
    #[serde(default)]
    pub sort_sidecar_container_by_name: bool,
}

/// Everything injection into one new pod needs.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct InjectionInput {
    /// The pod being created.
    pub pod: Pod,
    /// Labels of the pod's namespace; `None` when the namespace is unknown (then SidecarSets
    /// with a `namespaceSelector` do not select the pod).
    #[serde(default)]
    pub namespace_labels: Option<BTreeMap<String, String>>,
    /// The SidecarSets that may select the pod (more is harmless: each is matched).
    #[serde(default)]
    pub sidecar_sets: Vec<SidecarSetCandidate>,
    /// Feature gates.
    #[serde(default)]
    pub gates: InjectionGates,
    /// The time written in the hash annotations' `updateTimestamp`.
    pub now: Timestamp,
}

/// The outcome of [`inject`].
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Injection {
    /// The pod after injection (equal to the input pod when nothing changed).
    pub pod: Pod,
    /// Whether anything changed.
    pub changed: bool,
    /// The SidecarSets that selected the pod (after canaries replaced their bases), by name.
    pub matched: Vec<String>,
    /// The SidecarSets that injected at least one container, by name.
    pub injected: Vec<String>,
}

impl Injection {
    /// The JSON patch (RFC 6902) from `original` to the injected pod.
    pub fn json_patch(&self, original: &Pod) -> json_patch::Patch {
        let before = serde_json::to_value(original).unwrap_or(Value::Null);
        let after = serde_json::to_value(&self.pod).unwrap_or(Value::Null);
        json_patch::diff(&before, &after)
    }
}

/// Why a pod could not be injected; the webhook refuses the pod with the message.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum InjectionError {
    /// A selector of the SidecarSet does not parse.
    #[error("sidecarSet {sidecar_set}: invalid {field}: {message}")]
    InvalidSelector {
        /// The SidecarSet.
        sidecar_set: String,
        /// The field path (`spec.selector`, `spec.updateStrategy.selector`).
        field: String,
        /// The parse error.
        message: String,
    },
    /// `injectionStrategy.revision` names a revision that does not exist.
    #[error(
        "sidecarSet {sidecar_set}: spec.injectionStrategy.revision: ControllerRevision {revision} not found"
    )]
    RevisionNotFound {
        /// The SidecarSet.
        sidecar_set: String,
        /// The revision name or custom version asked for.
        revision: String,
    },
    /// The pinned ControllerRevision's data cannot be read.
    #[error("sidecarSet {sidecar_set}: ControllerRevision {revision} has invalid data: {message}")]
    InvalidRevision {
        /// The SidecarSet.
        sidecar_set: String,
        /// The revision.
        revision: String,
        /// What is wrong.
        message: String,
    },
    /// `updateStrategy.partition` is not a usable percentage for the `Partial` policy.
    #[error(
        "sidecarSet {sidecar_set}: spec.updateStrategy.partition: invalid percentage {value:?}"
    )]
    InvalidPartition {
        /// The SidecarSet.
        sidecar_set: String,
        /// The value.
        value: String,
    },
    /// Two SidecarSets would inject a container of the same name.
    #[error(
        "container {container} would be injected by both sidecarSet {first} and sidecarSet {second}"
    )]
    ContainerConflict {
        /// The container name.
        container: String,
        /// The SidecarSet first injecting it (by name order).
        first: String,
        /// The other one.
        second: String,
    },
    /// A pod annotation written by SidecarSet injection does not parse.
    #[error("pod annotation {key} is invalid: {message}")]
    InvalidPodAnnotation {
        /// The annotation key.
        key: String,
        /// The JSON error.
        message: String,
    },
    /// A `MergePatchJson` patch could not be applied.
    #[error("sidecarSet {sidecar_set}: spec.patchPodMetadata: annotation {key}: {message}")]
    PatchMetadata {
        /// The SidecarSet.
        sidecar_set: String,
        /// The annotation.
        key: String,
        /// Why.
        message: String,
    },
    /// `resourcesPolicy` could not be applied to this pod.
    #[error("sidecarSet {sidecar_set}: {field}: {message}")]
    ResourcesPolicy {
        /// The SidecarSet.
        sidecar_set: String,
        /// The field path of the policy.
        field: String,
        /// Why.
        message: String,
    },
}

/// One entry of the `kruise.io/sidecarset-hash` (or `-without-image`) annotation, with
/// upstream's field names and order.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct SidecarSetUpgradeSpec {
    /// When the entry was written (Go's zero time is written as `null`).
    #[serde(rename = "updateTimestamp", default)]
    pub update_timestamp: Option<String>,
    /// The SidecarSet hash injected.
    #[serde(rename = "hash", default)]
    pub hash: String,
    /// The SidecarSet.
    #[serde(rename = "sidecarSetName", default)]
    pub sidecar_set_name: String,
    /// Names of the SidecarSet's sidecar containers (and native sidecar init containers).
    #[serde(rename = "sidecarList", default)]
    pub sidecar_list: Option<Vec<String>>,
    /// The ControllerRevision injected, when known.
    #[serde(rename = "controllerRevision", default, skip_serializing_if = "String::is_empty")]
    pub controller_revision: String,
}

/// Reads a hash annotation: the map from SidecarSet name to entry, accepting upstream's older
/// form (a map from SidecarSet name to hash string). Empty when the annotation is missing.
///
/// # Errors
/// When the annotation is neither form.
pub fn read_hash_annotation(
    pod: &Pod,
    key: &str,
) -> Result<BTreeMap<String, SidecarSetUpgradeSpec>, InjectionError> {
    read_hash_from(pod.metadata.annotations.as_ref(), key)
}

/// [`read_hash_annotation`] from an annotation map.
fn read_hash_from(
    notes: Option<&BTreeMap<String, String>>,
    key: &str,
) -> Result<BTreeMap<String, SidecarSetUpgradeSpec>, InjectionError> {
    let Some(text) = notes.and_then(|a| a.get(key)) else {
        return Ok(BTreeMap::new());
    };
    if text.is_empty() {
        return Ok(BTreeMap::new());
    }
    match serde_json::from_str::<BTreeMap<String, SidecarSetUpgradeSpec>>(text) {
        Ok(map) => Ok(map),
        Err(err) => match serde_json::from_str::<BTreeMap<String, String>>(text) {
            Ok(old) => Ok(old
                .into_iter()
                .map(|(name, hash)| {
                    let spec = SidecarSetUpgradeSpec {
                        hash,
                        sidecar_set_name: name.clone(),
                        ..Default::default()
                    };
                    (name, spec)
                })
                .collect()),
            Err(_) => Err(InjectionError::InvalidPodAnnotation {
                key: key.to_owned(),
                message: err.to_string(),
            }),
        },
    }
}

/// The hash of the SidecarSet version a pod carries for `sidecar_set` (empty when none).
pub fn pod_sidecar_set_hash(pod: &Pod, sidecar_set: &str) -> String {
    read_hash_annotation(pod, annotations::SIDECARSET_HASH)
        .ok()
        .and_then(|m| m.get(sidecar_set).map(|s| s.hash.clone()))
        .unwrap_or_default()
}

/// The SidecarSet's hash: its `kruise.io/sidecarset-hash` annotation, else ours.
pub fn current_hash(sidecar_set: &SidecarSet) -> String {
    annotation(sidecar_set, annotations::SIDECARSET_HASH)
        .unwrap_or_else(|| sidecar_set_hash(&sidecar_set.spec))
}

/// The SidecarSet's hash without images: its annotation, else ours.
pub fn current_hash_without_image(sidecar_set: &SidecarSet) -> String {
    annotation(sidecar_set, annotations::SIDECARSET_HASH_WITHOUT_IMAGE)
        .unwrap_or_else(|| sidecar_set_hash_without_image(&sidecar_set.spec))
}

fn annotation(sidecar_set: &SidecarSet, key: &str) -> Option<String> {
    sidecar_set
        .metadata
        .annotations
        .as_ref()
        .and_then(|a| a.get(key))
        .filter(|v| !v.is_empty())
        .cloned()
}

/// Whether the SidecarSet is a canary of another one: the base's name.
pub fn canary_base(sidecar_set: &SidecarSet) -> Option<&str> {
    let notes = sidecar_set.metadata.annotations.as_ref()?;
    let base = notes.get(annotations::SIDECARSET_BASE).filter(|b| !b.is_empty())?;
    (notes.get(annotations::SIDECARSET_CANARY).map(String::as_str) == Some("true"))
        .then_some(base.as_str())
}

/// The container names a SidecarSet puts into pods: its containers (each hot-upgrade one as
/// its `-1`/`-2` pair) and init containers (a native hot-upgrade one likewise).
pub fn injected_container_names(sidecar_set: &SidecarSet) -> Vec<String> {
    let mut out = Vec::new();
    for (c, init) in sidecar_set
        .spec
        .init_containers
        .iter()
        .map(|c| (c, true))
        .chain(sidecar_set.spec.containers.iter().map(|c| (c, false)))
    {
        if is_hot_upgrade(c) && (!init || hash::is_native_sidecar(&c.container)) {
            let (a, b) = hot_upgrade_names(&c.container.name);
            out.push(a);
            out.push(b);
        } else {
            out.push(c.container.name.clone());
        }
    }
    out
}

/// The two container names of a hot-upgrade sidecar: `<name>-1` and `<name>-2`.
pub fn hot_upgrade_names(name: &str) -> (String, String) {
    (
        format!("{name}{}", values::sidecarset::HOT_UPGRADE_SUFFIX_1),
        format!("{name}{}", values::sidecarset::HOT_UPGRADE_SUFFIX_2),
    )
}

fn is_hot_upgrade(c: &SidecarContainer) -> bool {
    c.upgrade_strategy.upgrade_type == Some(SidecarContainerUpgradeType::HotUpgrade)
}

/// Whether a pod may still be injected (upstream's `IsPodActive`): not finished, not being
/// deleted.
pub fn is_active_pod(pod: &Pod) -> bool {
    let phase = pod.status.as_ref().and_then(|s| s.phase.as_deref());
    !matches!(phase, Some("Succeeded" | "Failed")) && pod.metadata.deletion_timestamp.is_none()
}

/// A SidecarSet chosen for the pod, at the revision to inject.
struct Chosen<'a> {
    set: std::borrow::Cow<'a, SidecarSet>,
    hash: String,
    hash_without_image: String,
    controller_revision: String,
}

/// Injects the SidecarSets of `input` into its pod.
///
/// # Errors
/// See [`InjectionError`]: bad selectors, a missing pinned revision, a container name two
/// SidecarSets inject, a bad hash annotation on the pod, a metadata patch or resources
/// policy that cannot be applied.
pub fn inject(input: &InjectionInput) -> Result<Injection, InjectionError> {
    inject_pod(
        &input.pod,
        input.namespace_labels.as_ref(),
        &input.sidecar_sets,
        input.gates,
        input.now,
    )
}

/// [`inject`] with the input in parts, for callers that keep the SidecarSets apart from the
/// pod (such as [`SidecarSetInjection`]).
///
/// # Errors
/// As [`inject`].
pub fn inject_pod(
    original: &Pod,
    namespace_labels: Option<&BTreeMap<String, String>>,
    sidecar_sets: &[SidecarSetCandidate],
    gates: InjectionGates,
    now: Timestamp,
) -> Result<Injection, InjectionError> {
    let mut pod = original.clone();
    let outcome = inject_in_place(&mut pod, namespace_labels, sidecar_sets, gates, now)?;
    Ok(Injection {
        pod,
        changed: outcome.changed,
        matched: outcome.matched,
        injected: outcome.injected,
    })
}

/// What [`inject_in_place`] did to a pod.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct InjectionOutcome {
    /// Whether anything changed.
    pub changed: bool,
    /// The SidecarSets that selected the pod (after canaries replaced their bases), by name.
    pub matched: Vec<String>,
    /// The SidecarSets that injected at least one container, by name.
    pub injected: Vec<String>,
}

/// [`inject_pod`] on the pod itself, without a copy: the pod changes only when the whole
/// injection succeeds (every error is found before anything is written).
///
/// # Errors
/// As [`inject`].
pub fn inject_in_place(
    pod: &mut Pod,
    namespace_labels: Option<&BTreeMap<String, String>>,
    sidecar_sets: &[SidecarSetCandidate],
    gates: InjectionGates,
    now: Timestamp,
) -> Result<InjectionOutcome, InjectionError> {
    inject_edit(&mut PodEdit::new(pod), namespace_labels, sidecar_sets, gates, now)
}

/// [`inject_in_place`] through the pod chain's [`PodEdit`], which records what it changes.
///
/// # Errors
/// As [`inject`].
pub fn inject_edit(
    edit: &mut PodEdit<'_>,
    namespace_labels: Option<&BTreeMap<String, String>>,
    sidecar_sets: &[SidecarSetCandidate],
    gates: InjectionGates,
    now: Timestamp,
) -> Result<InjectionOutcome, InjectionError> {
    let pod = edit.pod();
    if !is_active_pod(pod) {
        return Ok(InjectionOutcome::default());
    }
    let empty = BTreeMap::new();
    let pod_labels = pod.metadata.labels.as_ref().unwrap_or(&empty);

    // Matching, revision choice and canaries.
    let mut candidates: Vec<&SidecarSetCandidate> = sidecar_sets.iter().collect();
    candidates.sort_by(|a, b| a.sidecar_set.metadata.name.cmp(&b.sidecar_set.metadata.name));
    let mut chosen = Vec::new();
    let mut bases = BTreeSet::new();
    for candidate in candidates {
        let set = &candidate.sidecar_set;
        if set.spec.injection_strategy.paused {
            continue;
        }
        let matched = match &candidate.selectors {
            Some(parsed) => parsed.matches(pod_labels, namespace_labels),
            None => matching::pod_matches(set, pod_labels, namespace_labels),
        };
        let matched = matched.map_err(|message| InjectionError::InvalidSelector {
            sidecar_set: name_of(set),
            field: "spec.selector".into(),
            message,
        })?;
        if !matched {
            continue;
        }
        let pick = choose_revision(candidate, pod_labels)?;
        if let Some(base) = canary_base(&pick.set) {
            bases.insert(base.to_owned());
        }
        chosen.push(pick);
    }
    chosen.retain(|c| !bases.contains(&name_of(&c.set)));
    let matched: Vec<String> = chosen.iter().map(|c| name_of(&c.set)).collect();
    if chosen.is_empty() {
        return Ok(InjectionOutcome { changed: false, matched, injected: Vec::new() });
    }

    // Two SidecarSets must not inject the same container name.
    let mut owners: BTreeMap<String, String> = BTreeMap::new();
    for c in &chosen {
        let name = name_of(&c.set);
        for container in injected_container_names(&c.set) {
            if let Some(first) = owners.get(&container)
                && *first != name
            {
                return Err(InjectionError::ContainerConflict {
                    container,
                    first: first.clone(),
                    second: name,
                });
            }
            owners.insert(container, name.clone());
        }
    }

    // The pod's annotations after the metadata patches, worked out on a copy (and only when
    // some SidecarSet has patches), so that a failure leaves the pod as it was.
    let patched = if chosen.iter().any(|c| !c.set.spec.patch_pod_metadata.is_empty()) {
        let mut notes = pod.metadata.annotations.clone().unwrap_or_default();
        for c in &chosen {
            apply_metadata_patches_to(
                &mut notes,
                &name_of(&c.set),
                &c.set.spec.patch_pod_metadata,
            )?;
        }
        Some(notes)
    } else {
        None
    };
    let build =
        build_sidecars(pod, patched.as_ref().or(pod.metadata.annotations.as_ref()), &chosen, now)?;
    if build.containers.is_empty() && build.init_containers.is_empty() {
        let changed =
            patched.as_ref().is_some_and(|p| pod.metadata.annotations.as_ref() != Some(p));
        if changed {
            *edit.annotations_mut() = patched;
        }
        return Ok(InjectionOutcome { changed, matched, injected: Vec::new() });
    }

    if patched.is_some() {
        *edit.annotations_mut() = patched;
    }
    let mut init = build.init_containers;
    init.sort_by(|a, b| a.0.name.cmp(&b.0.name));
    let mut containers = build.containers;
    if gates.sort_sidecar_container_by_name {
        containers.sort_by(|a, b| a.0.name.cmp(&b.0.name));
    }
    insert_sidecars(edit, init, ContainerList::Init);
    insert_sidecars(edit, containers, ContainerList::App);
    let present: BTreeSet<&str> = edit
        .pod()
        .spec
        .iter()
        .flat_map(|s| s.volumes.iter().flatten())
        .map(|v| v.name.as_str())
        .collect();
    let mut volumes: Vec<Volume> = Vec::new();
    for v in build.volumes {
        if !present.contains(v.name.as_str()) && !volumes.iter().any(|w| w.name == v.name) {
            volumes.push(v);
        }
    }
    edit.append_volumes(volumes);
    // As upstream's `mergeSidecarSecrets`: the pod's secrets without repeats, then the
    // sidecars' new ones.
    let secrets: Option<Vec<LocalObjectReference>> = {
        let current = edit.pod().spec.as_ref().and_then(|s| s.image_pull_secrets.as_ref());
        let mut seen: BTreeSet<&str> = BTreeSet::new();
        let mut merged: Vec<LocalObjectReference> = Vec::new();
        for s in current.into_iter().flatten().chain(&build.secrets) {
            if seen.insert(s.name.as_str()) {
                merged.push(s.clone());
            }
        }
        (!merged.is_empty()).then_some(merged)
    };
    if edit.pod().spec.as_ref().and_then(|s| s.image_pull_secrets.as_ref()) != secrets.as_ref() {
        *edit.image_pull_secrets_mut() = secrets;
    }
    edit.annotations_mut().get_or_insert_with(Default::default).extend(build.annotations);
    // At least one container was added (one not in the pod already), so the pod changed.
    Ok(InjectionOutcome { changed: true, matched, injected: build.injected })
}

/// Which of the pod's container lists sidecars go into.
#[derive(Clone, Copy)]
enum ContainerList {
    Init,
    App,
}

/// Inserts `injected` into the pod's `list`: `BeforeAppContainer` sidecars ahead of the pod's
/// containers (in their order), the others after them. A sidecar whose name the list already
/// has is left out.
fn insert_sidecars(
    edit: &mut PodEdit<'_>,
    injected: Vec<(Container, PodInjectPolicyType)>,
    list: ContainerList,
) {
    let names: BTreeSet<String> = {
        let spec = edit.pod().spec.as_ref();
        let containers: &[Container] = match list {
            ContainerList::Init => spec.and_then(|s| s.init_containers.as_deref()).unwrap_or(&[]),
            ContainerList::App => spec.map(|s| s.containers.as_slice()).unwrap_or(&[]),
        };
        containers.iter().map(|c| c.name.clone()).collect()
    };
    let mut front = 0;
    for (container, policy) in injected {
        if names.contains(&container.name) {
            continue;
        }
        let index = match policy {
            PodInjectPolicyType::BeforeAppContainer => {
                front += 1;
                front - 1
            }
            _ => usize::MAX,
        };
        match list {
            ContainerList::Init => edit.insert_init_container(index, container),
            ContainerList::App => edit.insert_container(index, container),
        }
    }
}

fn name_of(set: &SidecarSet) -> String {
    set.metadata.name.clone().unwrap_or_default()
}

/// The SidecarSet at the revision to inject into this pod (upstream's
/// `getSuitableRevisionSidecarSet` at CREATE).
fn choose_revision<'a>(
    candidate: &'a SidecarSetCandidate,
    pod_labels: &BTreeMap<String, String>,
) -> Result<Chosen<'a>, InjectionError> {
    let set: &'a SidecarSet = &candidate.sidecar_set;
    let latest = || Chosen {
        set: std::borrow::Cow::Borrowed(set),
        hash: current_hash(set),
        hash_without_image: current_hash_without_image(set),
        controller_revision: set
            .status
            .as_ref()
            .map(|s| s.latest_revision.clone())
            .unwrap_or_default(),
    };
    let Some(pin) = &set.spec.injection_strategy.revision else { return Ok(latest()) };
    if pin.revision_name.is_none() && pin.custom_version.is_none() {
        return Ok(latest());
    }
    let revision = pinned_revision(set, &candidate.revisions).ok_or_else(|| {
        InjectionError::RevisionNotFound {
            sidecar_set: name_of(set),
            revision: pin
                .revision_name
                .clone()
                .or_else(|| pin.custom_version.clone())
                .unwrap_or_default(),
        }
    })?;
    let pinned = restore_revision(set, revision)?;
    if set.spec.update_strategy.paused {
        return Ok(pinned);
    }
    if pin.policy != Some(SidecarSetInjectRevisionPolicy::Partial) {
        return Ok(pinned);
    }
    if let Some(selector) = &set.spec.update_strategy.selector {
        let selector = label_selector_as_selector(Some(selector)).map_err(|message| {
            InjectionError::InvalidSelector {
                sidecar_set: name_of(set),
                field: "spec.updateStrategy.selector".into(),
                message,
            }
        })?;
        if !selector.matches(pod_labels) {
            return Ok(pinned);
        }
    }
    use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;
    match &set.spec.update_strategy.partition {
        None | Some(IntOrString::Int(_)) => Ok(latest()),
        Some(IntOrString::String(text)) => {
            let bad = || InjectionError::InvalidPartition {
                sidecar_set: name_of(set),
                value: text.clone(),
            };
            let share: f64 = text.strip_suffix('%').ok_or_else(bad)?.parse().map_err(|_| bad())?;
            Ok(if candidate.draw <= share / 100.0 { pinned } else { latest() })
        }
    }
}

/// The ControllerRevision `injectionStrategy.revision` pins, among the SidecarSet's
/// `revisions`: by name, or the newest one labelled with the custom version.
pub fn pinned_revision<'r>(
    set: &SidecarSet,
    revisions: &'r [ControllerRevision],
) -> Option<&'r ControllerRevision> {
    let pin = set.spec.injection_strategy.revision.as_ref()?;
    if let Some(name) = &pin.revision_name {
        return revisions.iter().find(|r| r.metadata.name.as_deref() == Some(name.as_str()));
    }
    let version = pin.custom_version.as_ref()?;
    let set_name = name_of(set);
    revisions
        .iter()
        .filter(|r| {
            let l = r.metadata.labels.as_ref();
            l.and_then(|l| l.get(labels::SIDECARSET_NAME)) == Some(&set_name)
                && l.and_then(|l| l.get(labels::SIDECARSET_CUSTOM_VERSION)) == Some(version)
        })
        .max_by(|a, b| {
            (a.revision, a.metadata.name.as_deref()).cmp(&(b.revision, b.metadata.name.as_deref()))
        })
}

/// The SidecarSet as recorded in `revision`: the revision's data replaces `containers`,
/// `initContainers`, `volumes`, `imagePullSecrets` and `patchPodMetadata`; its hash
/// annotations (or, without them, hashes of the restored spec) and its name come along.
fn restore_revision(
    set: &SidecarSet,
    revision: &ControllerRevision,
) -> Result<Chosen<'static>, InjectionError> {
    let revision_name = revision.metadata.name.clone().unwrap_or_default();
    let invalid = |message: String| InjectionError::InvalidRevision {
        sidecar_set: name_of(set),
        revision: revision_name.clone(),
        message,
    };
    let data = revision.data.0.clone();
    let spec = data.get("spec").cloned().unwrap_or(Value::Null);
    let field = |key: &str| -> Value {
        match spec.get(key) {
            Some(Value::Null) | None => Value::Array(Vec::new()),
            Some(v) => v.clone(),
        }
    };
    let mut restored = set.clone();
    restored.spec.containers =
        serde_json::from_value(field("containers")).map_err(|e| invalid(e.to_string()))?;
    restored.spec.init_containers =
        serde_json::from_value(field("initContainers")).map_err(|e| invalid(e.to_string()))?;
    restored.spec.volumes =
        serde_json::from_value(field("volumes")).map_err(|e| invalid(e.to_string()))?;
    restored.spec.image_pull_secrets =
        serde_json::from_value(field("imagePullSecrets")).map_err(|e| invalid(e.to_string()))?;
    restored.spec.patch_pod_metadata =
        serde_json::from_value(field("patchPodMetadata")).map_err(|e| invalid(e.to_string()))?;
    let note = |key: &str| {
        revision
            .metadata
            .annotations
            .as_ref()
            .and_then(|a| a.get(key))
            .filter(|v| !v.is_empty())
            .cloned()
    };
    Ok(Chosen {
        hash: note(annotations::SIDECARSET_HASH)
            .unwrap_or_else(|| sidecar_set_hash(&restored.spec)),
        hash_without_image: note(annotations::SIDECARSET_HASH_WITHOUT_IMAGE)
            .unwrap_or_else(|| sidecar_set_hash_without_image(&restored.spec)),
        controller_revision: revision_name,
        set: std::borrow::Cow::Owned(restored),
    })
}

/// Applies metadata patches with their policies: Retain (the default) keeps a value the pod
/// has, Overwrite replaces it, MergePatchJson merges the patch into the pod's JSON value
/// (RFC 7386) or sets it when the pod has none.
///
/// # Errors
/// When a MergePatchJson value or the pod's value is not JSON.
pub fn apply_metadata_patches(
    pod: &mut Pod,
    sidecar_set: &str,
    patches: &[SidecarSetPatchPodMetadata],
) -> Result<(), InjectionError> {
    if patches.is_empty() {
        return Ok(());
    }
    let notes = pod.metadata.annotations.get_or_insert_with(Default::default);
    apply_metadata_patches_to(notes, sidecar_set, patches)
}

/// [`apply_metadata_patches`] on an annotation map.
fn apply_metadata_patches_to(
    notes: &mut BTreeMap<String, String>,
    sidecar_set: &str,
    patches: &[SidecarSetPatchPodMetadata],
) -> Result<(), InjectionError> {
    for patch in patches {
        for (key, value) in &patch.annotations {
            match patch.patch_policy.as_ref().unwrap_or(&SidecarSetPatchPolicyType::Retain) {
                SidecarSetPatchPolicyType::Overwrite => {
                    notes.insert(key.clone(), value.clone());
                }
                SidecarSetPatchPolicyType::MergePatchJson => {
                    let merged = match notes.get(key).filter(|v| !v.is_empty()) {
                        None => value.clone(),
                        Some(origin) => {
                            let fail = |e: serde_json::Error| InjectionError::PatchMetadata {
                                sidecar_set: sidecar_set.to_owned(),
                                key: key.clone(),
                                message: e.to_string(),
                            };
                            let mut doc: Value = serde_json::from_str(origin).map_err(fail)?;
                            let p: Value = serde_json::from_str(value).map_err(fail)?;
                            json_patch::merge(&mut doc, &p);
                            with_sorted_keys(&doc).to_string()
                        }
                    };
                    notes.insert(key.clone(), merged);
                }
                // Retain, and policies this version does not know (upstream ignores them).
                SidecarSetPatchPolicyType::Retain => {
                    notes.entry(key.clone()).or_insert_with(|| value.clone());
                }
                _ => {}
            }
        }
    }
    Ok(())
}

/// What the SidecarSets add to the pod.
#[derive(Default)]
struct Built {
    /// Containers with their placement.
    containers: Vec<(Container, PodInjectPolicyType)>,
    init_containers: Vec<(Container, PodInjectPolicyType)>,
    volumes: Vec<Volume>,
    secrets: Vec<LocalObjectReference>,
    annotations: BTreeMap<String, String>,
    injected: Vec<String>,
}

fn env_var(name: &str, value: &str) -> EnvVar {
    EnvVar { name: name.to_owned(), value: Some(value.to_owned()), value_from: None }
}

fn merge_env(into: &mut Vec<EnvVar>, more: impl IntoIterator<Item = EnvVar>) {
    let mut names: BTreeSet<String> = into.iter().map(|e| e.name.clone()).collect();
    for e in more {
        if names.insert(e.name.clone()) {
            into.push(e);
        }
    }
}

/// Whether a pod container was put there by a SidecarSet (`IS_INJECTED=true`).
pub fn is_injected_container(c: &Container) -> bool {
    c.env
        .iter()
        .flatten()
        .any(|e| e.name == env::container::IS_INJECTED && e.value.as_deref() == Some("true"))
}

/// What the chosen SidecarSets add to `pod` (as created); `notes` are the pod's annotations
/// after the SidecarSets' metadata patches, where the hash and list annotations are read.
fn build_sidecars(
    pod: &Pod,
    notes: Option<&BTreeMap<String, String>>,
    chosen: &[Chosen<'_>],
    now: Timestamp,
) -> Result<Built, InjectionError> {
    let mut out = Built::default();
    let mut hashes = read_hash_from(notes, annotations::SIDECARSET_HASH)?;
    let mut hashes_no_image = read_hash_from(notes, annotations::SIDECARSET_HASH_WITHOUT_IMAGE)?;
    let mut working: BTreeMap<String, String> = notes
        .and_then(|a| a.get(annotations::SIDECARSET_WORKING_HOTUPGRADE_CONTAINER))
        .and_then(|t| serde_json::from_str(t).ok())
        .unwrap_or_default();
    let mut set_names: BTreeSet<String> = notes
        .and_then(|a| a.get(annotations::SIDECARSET_INJECTED_LIST))
        .filter(|t| !t.is_empty())
        .map(|t| t.split(',').map(str::to_owned).collect())
        .unwrap_or_default();
    let spec = pod.spec.as_ref();
    let existing: BTreeSet<&str> = spec
        .into_iter()
        .flat_map(|s| s.containers.iter().chain(s.init_containers.iter().flatten()))
        .map(|c| c.name.as_str())
        .collect();
    let present = |sidecar: &SidecarContainer, hot: bool| {
        if hot {
            let (a, b) = hot_upgrade_names(&sidecar.container.name);
            existing.contains(a.as_str()) || existing.contains(b.as_str())
        } else {
            existing.contains(sidecar.container.name.as_str())
        }
    };
    // Read only by a `resourcesPolicy`, so worked out only for one.
    let all_sidecar_names: std::cell::OnceCell<BTreeSet<String>> = std::cell::OnceCell::new();
    // metav1.Time: RFC 3339 in UTC, whole seconds (`Display` writes no fraction for a whole
    // second).
    let stamp = Timestamp::from_second(now.as_second()).unwrap_or(now).to_string();

    for c in chosen {
        let set = &c.set;
        let set_name = name_of(set);
        set_names.insert(set_name.clone());
        let set_volumes: BTreeMap<&str, &Volume> =
            set.spec.volumes.iter().map(|v| (v.name.as_str(), v)).collect();
        let mut sidecar_list = BTreeSet::new();
        let mut injecting = false;
        let groups = [(&set.spec.init_containers, true), (&set.spec.containers, false)];
        for (list, init) in groups {
            for (i, sidecar) in list.iter().enumerate() {
                let native = hash::is_native_sidecar(&sidecar.container);
                if !init || native {
                    sidecar_list.insert(sidecar.container.name.clone());
                }
                let hot = is_hot_upgrade(sidecar) && (!init || native);
                if present(sidecar, hot) {
                    continue;
                }
                let mut container = sidecar.container.clone();
                if let Some(policy) = &sidecar.resources_policy {
                    let field = format!(
                        "spec.{}[{i}].resourcesPolicy",
                        if init { "initContainers" } else { "containers" }
                    );
                    let all_sidecar_names = all_sidecar_names.get_or_init(|| {
                        chosen.iter().flat_map(|c| injected_container_names(&c.set)).collect()
                    });
                    container.resources =
                        Some(resources::apply(policy, pod, all_sidecar_names).map_err(
                            |message| InjectionError::ResourcesPolicy {
                                sidecar_set: set_name.clone(),
                                field,
                                message,
                            },
                        )?);
                }
                let (mounts, mount_envs) = shared_volume_mounts(sidecar, pod);
                let mut transfer = transfer_envs(sidecar, pod);
                merge_env(&mut transfer, mount_envs);
                for name in container
                    .volume_mounts
                    .iter()
                    .flatten()
                    .map(|m| m.name.as_str())
                    .chain(container.volume_devices.iter().flatten().map(|d| d.name.as_str()))
                {
                    if let Some(v) = set_volumes.get(name) {
                        out.volumes.push((*v).clone());
                    }
                }
                merge_volume_mounts(&mut container, mounts);
                let envs = container.env.get_or_insert_with(Vec::new);
                merge_env(envs, [env_var(env::container::IS_INJECTED, "true")]);
                merge_env(envs, transfer);
                merge_volume_devices(&mut container, shared_volume_devices(sidecar, pod));
                injecting = true;
                let default_policy = if init {
                    PodInjectPolicyType::AfterAppContainer
                } else {
                    PodInjectPolicyType::BeforeAppContainer
                };
                let policy = sidecar.pod_inject_policy.clone().unwrap_or(default_policy);
                let target = if init { &mut out.init_containers } else { &mut out.containers };
                if hot {
                    let (first, second) = hot_upgrade_pair(&container, sidecar);
                    for (name, version, alt) in [(&first.name, "1", "0"), (&second.name, "0", "1")]
                    {
                        out.annotations.insert(
                            format!("{}{name}", annotations::SIDECARSET_VERSION_PREFIX),
                            version.to_owned(),
                        );
                        out.annotations.insert(
                            format!("{}{name}", annotations::SIDECARSET_VERSION_ALT_PREFIX),
                            alt.to_owned(),
                        );
                    }
                    working.insert(sidecar.container.name.clone(), first.name.clone());
                    out.annotations.insert(
                        annotations::SIDECARSET_WORKING_HOTUPGRADE_CONTAINER.to_owned(),
                        serde_json::to_string(&working).unwrap_or_default(),
                    );
                    target.push((first, policy.clone()));
                    target.push((second, policy));
                } else {
                    target.push((container, policy));
                }
            }
            if init {
                out.secrets.extend(set.spec.image_pull_secrets.iter().cloned());
            }
        }
        if injecting {
            out.injected.push(set_name.clone());
            let list: Vec<String> = sidecar_list.into_iter().collect();
            hashes.insert(
                set_name.clone(),
                SidecarSetUpgradeSpec {
                    update_timestamp: Some(stamp.clone()),
                    hash: c.hash.clone(),
                    sidecar_set_name: set_name.clone(),
                    sidecar_list: Some(list.clone()),
                    controller_revision: c.controller_revision.clone(),
                },
            );
            hashes_no_image.insert(
                set_name.clone(),
                SidecarSetUpgradeSpec {
                    update_timestamp: Some(stamp.clone()),
                    hash: c.hash_without_image.clone(),
                    sidecar_set_name: set_name.clone(),
                    sidecar_list: Some(list),
                    controller_revision: String::new(),
                },
            );
        }
    }
    let encode =
        |m: &BTreeMap<String, SidecarSetUpgradeSpec>| serde_json::to_string(m).unwrap_or_default();
    out.annotations.insert(annotations::SIDECARSET_HASH.to_owned(), encode(&hashes));
    out.annotations
        .insert(annotations::SIDECARSET_HASH_WITHOUT_IMAGE.to_owned(), encode(&hashes_no_image));
    out.annotations.insert(
        annotations::SIDECARSET_INJECTED_LIST.to_owned(),
        set_names.into_iter().collect::<Vec<_>>().join(","),
    );
    Ok(out)
}

/// The `-1` (working) and `-2` (idle, on `hotUpgradeEmptyImage`) containers of a hot-upgrade
/// sidecar, each told its version through `SIDECARSET_VERSION` and `SIDECARSET_VERSION_ALT`.
fn hot_upgrade_pair(container: &Container, sidecar: &SidecarContainer) -> (Container, Container) {
    let (n1, n2) = hot_upgrade_names(&container.name);
    let mut first = container.clone();
    first.name = n1;
    let mut second = container.clone();
    second.name = n2;
    second.image = Some(sidecar.upgrade_strategy.hot_upgrade_empty_image.clone());
    for c in [&mut first, &mut second] {
        let from = |prefix: &str| EnvVarSource {
            field_ref: Some(ObjectFieldSelector {
                api_version: None,
                field_path: format!("metadata.annotations['{prefix}{}']", c.name),
            }),
            ..Default::default()
        };
        let version = EnvVar {
            name: env::container::SIDECARSET_VERSION.to_owned(),
            value: None,
            value_from: Some(from(annotations::SIDECARSET_VERSION_PREFIX)),
        };
        let alt = EnvVar {
            name: env::container::SIDECARSET_VERSION_ALT.to_owned(),
            value: None,
            value_from: Some(from(annotations::SIDECARSET_VERSION_ALT_PREFIX)),
        };
        c.env.get_or_insert_with(Vec::new).extend([version, alt]);
    }
    (first, second)
}

/// The app containers' volume mounts for a sidecar with `shareVolumePolicy: enabled`, and the
/// env vars their `subPathExpr`s refer to.
fn shared_volume_mounts(sidecar: &SidecarContainer, pod: &Pod) -> (Vec<VolumeMount>, Vec<EnvVar>) {
    if sidecar.share_volume_policy.type_ != Some(ShareVolumePolicyType::Enabled) {
        return (Vec::new(), Vec::new());
    }
    let mut mounts = Vec::new();
    let mut envs = Vec::new();
    for app in pod.spec.iter().flat_map(|s| &s.containers).filter(|c| !is_injected_container(c)) {
        for mount in app.volume_mounts.iter().flatten() {
            mounts.push(mount.clone());
            for var in subpath_vars(mount.sub_path_expr.as_deref().unwrap_or("")) {
                if let Some(e) = app.env.iter().flatten().find(|e| e.name == var) {
                    envs.push(e.clone());
                }
            }
        }
    }
    (mounts, envs)
}

/// The names in `$(NAME)` references of a `subPathExpr`.
fn subpath_vars(expr: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let mut rest = expr;
    while let Some(start) = rest.find("$(") {
        let after = &rest[start + 2..];
        let Some(end) = after.find(')') else { break };
        let name = &after[..end];
        let valid_first =
            name.chars().next().is_some_and(|c| c.is_ascii_alphabetic() || "-._".contains(c));
        if valid_first && name.chars().all(|c| c.is_ascii_alphanumeric() || "-._".contains(c)) {
            out.push(name);
            rest = &after[end + 1..];
        } else {
            rest = after;
        }
    }
    out
}

/// The app containers' volume devices for a sidecar with `shareVolumeDevicePolicy: enabled`.
fn shared_volume_devices(sidecar: &SidecarContainer, pod: &Pod) -> Vec<VolumeDevice> {
    let enabled = sidecar
        .share_volume_device_policy
        .as_ref()
        .is_some_and(|p| p.type_ == Some(ShareVolumePolicyType::Enabled));
    if !enabled {
        return Vec::new();
    }
    pod.spec
        .iter()
        .flat_map(|s| &s.containers)
        .filter(|c| !is_injected_container(c))
        .flat_map(|c| c.volume_devices.iter().flatten().cloned())
        .collect()
}

fn merge_volume_mounts(container: &mut Container, more: Vec<VolumeMount>) {
    if more.is_empty() {
        return;
    }
    let mut paths: BTreeSet<String> = container
        .volume_mounts
        .iter()
        .flatten()
        .map(|m| m.mount_path.clone())
        .chain(container.volume_devices.iter().flatten().map(|d| d.device_path.clone()))
        .collect();
    let mounts = container.volume_mounts.get_or_insert_with(Vec::new);
    for m in more {
        if paths.insert(m.mount_path.clone()) {
            mounts.push(m);
        }
    }
}

fn merge_volume_devices(container: &mut Container, more: Vec<VolumeDevice>) {
    if more.is_empty() {
        return;
    }
    let mut paths: BTreeSet<String> = container
        .volume_devices
        .iter()
        .flatten()
        .map(|d| d.device_path.clone())
        .chain(container.volume_mounts.iter().flatten().map(|m| m.mount_path.clone()))
        .collect();
    let devices = container.volume_devices.get_or_insert_with(Vec::new);
    for d in more {
        if paths.insert(d.device_path.clone()) {
            devices.push(d);
        }
    }
}

/// The env vars `transferEnv` copies from the pod's containers into a sidecar. A source
/// container name read from a field that does not resolve, or a variable the source does not
/// have, is skipped, as upstream skips it.
fn transfer_envs(sidecar: &SidecarContainer, pod: &Pod) -> Vec<EnvVar> {
    let containers = pod.spec.as_ref().map(|s| s.containers.as_slice()).unwrap_or_default();
    let mut out = Vec::new();
    for t in &sidecar.transfer_env {
        let mut names: BTreeSet<&str> = t.env_names.iter().map(String::as_str).collect();
        if !t.env_name.is_empty() {
            names.insert(&t.env_name);
        }
        let source = match t.source_container_name_from.as_ref().and_then(|f| f.field_ref.as_ref())
        {
            Some(field) => match container_name_from_field(&field.field_path, pod) {
                Some(name) => name,
                None => continue,
            },
            None => t.source_container_name.clone(),
        };
        let Some(container) = containers.iter().find(|c| c.name == source) else { continue };
        for name in names {
            if let Some(e) = container.env.iter().flatten().find(|e| e.name == name) {
                out.push(e.clone());
            }
        }
    }
    out
}

/// Splits `metadata.labels['key']` into `("metadata.labels", "key")`.
pub fn split_subscripted_path(path: &str) -> Option<(&str, &str)> {
    let inner = path.strip_suffix("']")?;
    let open = inner.find("['")?;
    Some((&inner[..open], &inner[open + 2..]))
}

/// The value of `metadata.annotations['k']` or `metadata.labels['k']` on the pod (empty when
/// missing); `None` for any other path or an invalid key.
fn container_name_from_field(path: &str, pod: &Pod) -> Option<String> {
    let (field, key) = split_subscripted_path(path)?;
    let map = match field {
        "metadata.annotations" => {
            if !crate::names::is_qualified_name(&key.to_lowercase()).is_empty() {
                return None;
            }
            pod.metadata.annotations.as_ref()
        }
        "metadata.labels" => {
            if !crate::names::is_qualified_name(key).is_empty() {
                return None;
            }
            pod.metadata.labels.as_ref()
        }
        _ => return None,
    };
    Some(map.and_then(|m| m.get(key)).cloned().unwrap_or_default())
}

#[cfg(test)]
mod tests;
