//! ControllerRevisions of SidecarSets: what one holds, how it is named, which one is the latest
//! and which old ones go (upstream's `registerLatestRevision`), as data.
//!
//! A SidecarSet's revision records what injection needs to restore it: its `data` is a
//! strategic-merge patch over the SidecarSet,
//! `{"spec":{"$patch":"replace","containers":…,"initContainers":…,"volumes":…,
//! "imagePullSecrets":…,"patchPodMetadata":…}}`, each field as Go writes it (`null` when empty).
//! Injection with `injectionStrategy.revision` reads those fields back
//! ([`super::inject`]), and the upgrade planner reads `containers` to tell a resources-only
//! change. The revision lives in the kruise manager's namespace (upstream's choice: only the
//! manager should be able to write what every pod may get injected), is labelled
//! `kruise.io/sidecarset-name: <name>` (and `apps.kruise.io/sidecarset-custom-version` with
//! `spec.customVersion`), carries the SidecarSet's labels and annotations (so its hash
//! annotations, which injection copies onto pods), and is controlled by the SidecarSet, so it
//! goes with it.
//!
//! It is named `<sidecarset>-<hash>`, the hash being Kubernetes' `HashControllerRevision`
//! over the bytes Go writes for the data plus the collision count, so a revision gets the name
//! upstream OpenKruise would give it. Matching is by content: [`equal_revision`] compares the
//! recorded fields once normalised, so a revision written by upstream is found again.
//!
//! [`plan_revisions`] decides, from the SidecarSet, the revisions in the cluster and the pods it
//! selects:
//! 1. The newest revision holds the SidecarSet's fields: it is the latest (nothing to write).
//! 2. An older one does (a rollback): it gets the next revision number.
//! 3. None does: a new one is created with the next number; a name taken by another revision
//!    raises the collision count, as does a name conflict met on create
//!    ([`resolve_create_conflict`]).
//! 4. The latest revision gets the custom-version label when `spec.customVersion` is set and
//!    differs from its label.
//! 5. Beyond `revisionHistoryLimit` (default 10, at least 1), the oldest revisions go, except
//!    the latest, one a pod's `kruise.io/sidecarset-hash` entry names, the one
//!    `injectionStrategy.revision.revisionName` names and the newest one labelled with
//!    `injectionStrategy.revision.customVersion`. When those keep more than the limit, the plan
//!    says by how many ([`RevisionPlan::over_limit`]); upstream logs it.

use std::collections::{BTreeMap, BTreeSet};

use k8s_openapi::api::apps::v1::ControllerRevision;
use k8s_openapi::api::core::v1::Pod;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, OwnerReference};
use kruise_api::apps::v1beta1::SidecarSet;
use kruise_api::well_known::{annotations, labels};
use serde_json::{Map, Value, json};

use super::read_hash_annotation;
use crate::revision::goschema::{
    LOCAL_OBJECT_REFERENCE, SIDECAR_CONTAINER, SIDECAR_SET_PATCH_POD_METADATA, Ty, VOLUME,
};
use crate::revision::{self as rev, CreateConflict, gojson};
use crate::workload::{Action, Patch};

/// The label naming the SidecarSet a ControllerRevision belongs to.
pub const NAME_LABEL: &str = labels::SIDECARSET_NAME;
/// The label carrying the SidecarSet's `spec.customVersion` on its revisions.
pub const CUSTOM_VERSION_LABEL: &str = labels::SIDECARSET_CUSTOM_VERSION;
/// Revisions kept when `spec.revisionHistoryLimit` is not set.
pub const DEFAULT_REVISION_HISTORY_LIMIT: i32 = 10;

const API_VERSION: &str = "apps.kruise.io/v1beta1";
const KIND: &str = "SidecarSet";

/// The `spec` fields a revision records, with their Go types.
const RECORDED: [(&str, Ty); 5] = [
    ("containers", Ty::Slice(&Ty::Struct(SIDECAR_CONTAINER))),
    ("imagePullSecrets", Ty::Slice(&Ty::Struct(LOCAL_OBJECT_REFERENCE))),
    ("initContainers", Ty::Slice(&Ty::Struct(SIDECAR_CONTAINER))),
    ("patchPodMetadata", Ty::Slice(&Ty::Struct(SIDECAR_SET_PATCH_POD_METADATA))),
    ("volumes", Ty::Slice(&Ty::Struct(VOLUME))),
];

/// Why a SidecarSet revision could not be built.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum SidecarSetRevisionError {
    /// The SidecarSet's spec did not encode to JSON.
    #[error("sidecarSet {sidecar_set}: spec does not encode to JSON: {message}")]
    Encode {
        /// The SidecarSet.
        sidecar_set: String,
        /// What went wrong.
        message: String,
    },
}

fn name_of(set: &SidecarSet) -> String {
    set.metadata.name.clone().unwrap_or_default()
}

/// The recorded fields of a `spec` value, each as Go writes it: normalised, `null` when
/// missing or empty (Go omits an empty list, and upstream copies the missing key as `nil`).
fn recorded_fields(spec: Option<&Value>) -> Map<String, Value> {
    let mut out = Map::new();
    for (key, ty) in RECORDED {
        let value = match spec.and_then(|s| s.get(key)) {
            None | Some(Value::Null) => Value::Null,
            Some(v) if v.as_array().is_some_and(Vec::is_empty) => Value::Null,
            Some(v) => gojson::normalize(v, &ty),
        };
        out.insert(key.to_owned(), value);
    }
    out
}

/// The `data` of a revision of `set`: `{"spec":{"$patch":"replace", <recorded fields>}}`,
/// keys sorted.
///
/// # Errors
/// When the spec does not encode to JSON.
pub fn revision_data(set: &SidecarSet) -> Result<Value, SidecarSetRevisionError> {
    let spec = serde_json::to_value(&set.spec).map_err(|err| SidecarSetRevisionError::Encode {
        sidecar_set: name_of(set),
        message: err.to_string(),
    })?;
    let mut fields = recorded_fields(Some(&spec));
    fields.insert("$patch".to_owned(), Value::String("replace".to_owned()));
    Ok(gojson::with_sorted_keys(&json!({ "spec": fields })))
}

/// The hash naming a revision with `data` (Go's bytes for it, then the collision count).
fn data_hash(data: &Value, collision_count: i32) -> String {
    rev::hash_revision_bytes(gojson::encode_sorted(data).as_bytes(), Some(collision_count))
}

/// The owner reference a SidecarSet puts on its revisions.
pub fn controller_ref(set: &SidecarSet) -> OwnerReference {
    OwnerReference {
        api_version: API_VERSION.to_owned(),
        kind: KIND.to_owned(),
        name: name_of(set),
        uid: set.metadata.uid.clone().unwrap_or_default(),
        controller: Some(true),
        block_owner_deletion: Some(true),
    }
}

/// Builds the revision upstream would create for `set` in `namespace`, numbered `number`
/// (upstream's `NewRevision`): the SidecarSet's labels plus [`NAME_LABEL`] and, with
/// `spec.customVersion`, [`CUSTOM_VERSION_LABEL`]; its annotations; the SidecarSet as
/// controlling owner.
///
/// # Errors
/// When the spec does not encode to JSON.
pub fn new_revision(
    set: &SidecarSet,
    namespace: &str,
    number: i64,
    collision_count: i32,
) -> Result<ControllerRevision, SidecarSetRevisionError> {
    let name = name_of(set);
    let data = revision_data(set)?;
    let hash = data_hash(&data, collision_count);
    let mut labels: BTreeMap<String, String> = set.metadata.labels.clone().unwrap_or_default();
    if !set.spec.custom_version.is_empty() {
        labels.insert(CUSTOM_VERSION_LABEL.to_owned(), set.spec.custom_version.clone());
    }
    labels.insert(NAME_LABEL.to_owned(), name.clone());
    let annotations = set.metadata.annotations.clone().filter(|a| !a.is_empty());
    let metadata = ObjectMeta {
        name: Some(rev::revision_name(&name, &hash)),
        namespace: Some(namespace.to_owned()),
        labels: Some(labels),
        annotations,
        owner_references: Some(vec![controller_ref(set)]),
        ..ObjectMeta::default()
    };
    Ok(rev::build_revision(metadata, data, number))
}

/// Whether two SidecarSet revisions record the same fields (compared once normalised, so
/// that encoding differences between writers do not count).
pub fn equal_revision(a: &ControllerRevision, b: &ControllerRevision) -> bool {
    let fields = |r: &ControllerRevision| {
        rev::revision_data(r).and_then(|d| d.get("spec")).map(|s| recorded_fields(Some(s)))
    };
    match (fields(a), fields(b)) {
        (Some(x), Some(y)) => x == y,
        _ => false,
    }
}

/// The revisions of `set` among `revisions`: in `namespace`, labelled with its name, and
/// controlled by it or by nothing (upstream's `ListControllerRevisions`), oldest first.
pub fn owned_revisions<'a>(
    set: &SidecarSet,
    namespace: &str,
    revisions: &'a [ControllerRevision],
) -> Vec<&'a ControllerRevision> {
    let name = name_of(set);
    let uid = set.metadata.uid.as_deref().unwrap_or_default();
    let mut owned: Vec<&ControllerRevision> = revisions
        .iter()
        .filter(|r| r.metadata.namespace.as_deref() == Some(namespace))
        .filter(|r| r.metadata.labels.as_ref().and_then(|l| l.get(NAME_LABEL)) == Some(&name))
        .filter(|r| {
            let controller =
                r.metadata.owner_references.iter().flatten().find(|o| o.controller == Some(true));
            controller.is_none_or(|o| o.uid == uid)
        })
        .collect();
    owned.sort_by(|a, b| rev::compare_revisions(a, b));
    owned
}

/// The revision a pod's `kruise.io/sidecarset-hash` entry for `set_name` names, if any.
pub fn pod_revision(pod: &Pod, set_name: &str) -> Option<String> {
    read_hash_annotation(pod, annotations::SIDECARSET_HASH)
        .ok()?
        .remove(set_name)
        .map(|entry| entry.controller_revision)
        .filter(|r| !r.is_empty())
}

/// What [`plan_revisions`] reads.
#[derive(Clone, Copy, Debug)]
pub struct RevisionInput<'a> {
    /// The SidecarSet (v1beta1).
    pub sidecar_set: &'a SidecarSet,
    /// The kruise manager's namespace, where the SidecarSet's revisions live.
    pub namespace: &'a str,
    /// ControllerRevisions: at least the SidecarSet's; others in `namespace` help avoid name
    /// collisions, others elsewhere are ignored.
    pub revisions: &'a [ControllerRevision],
    /// The pods the SidecarSet selects (the revisions they were injected or upgraded from are
    /// kept).
    pub pods: &'a [Pod],
}

/// The SidecarSet's revisions after [`plan_revisions`]'s writes.
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub struct RevisionPlan {
    /// The latest revision's name, for `status.latestRevision` and the pods' hash entries.
    pub latest_revision: String,
    /// The collision count to record in `status.collisionCount`.
    pub collision_count: i32,
    /// The writes, in order: creating the latest revision or patching it (revision number,
    /// custom-version label) when needed, then deleting old revisions, oldest first.
    pub actions: Vec<Action>,
    /// The SidecarSet's revisions once the writes are done, oldest first (the latest last).
    pub revisions: Vec<ControllerRevision>,
    /// How many revisions beyond the history limit are kept because they are in use.
    pub over_limit: usize,
}

impl RevisionPlan {
    /// The latest revision, as it will be once the writes are done.
    pub fn latest(&self) -> Option<&ControllerRevision> {
        self.revisions.last()
    }
}

/// Plans the SidecarSet's revisions (see the module docs).
///
/// # Errors
/// When the SidecarSet's spec does not encode to JSON.
pub fn plan_revisions(input: &RevisionInput<'_>) -> Result<RevisionPlan, SidecarSetRevisionError> {
    let set = input.sidecar_set;
    let owned = owned_revisions(set, input.namespace, input.revisions);
    let mut collision_count =
        set.status.as_ref().and_then(|s| s.collision_count).unwrap_or_default();
    let next =
        owned.iter().map(|r| rev::revision_number(r)).max().map_or(1, |n| n.saturating_add(1));
    let candidate = new_revision(set, input.namespace, next, collision_count)?;
    let last_equal = owned.iter().rev().find(|r| equal_revision(r, &candidate)).copied();
    let newest = owned.last().copied();

    let mut actions = Vec::new();
    let mut kept: Vec<ControllerRevision> = Vec::with_capacity(owned.len() + 1);
    let latest: ControllerRevision = match last_equal {
        Some(found) if newest.is_some_and(|n| std::ptr::eq(n, found)) => {
            kept.extend(owned.iter().take(owned.len().saturating_sub(1)).map(|r| (*r).clone()));
            let mut latest = found.clone();
            if let Some(patch) = revision_patch(set, found, None) {
                set_custom_version(&mut latest, set);
                actions.push(Action::PatchRevision { name: revision_name(found), patch });
            }
            latest
        }
        Some(found) => {
            kept.extend(owned.iter().filter(|r| !std::ptr::eq(**r, found)).map(|r| (*r).clone()));
            let mut latest = found.clone();
            rev::set_revision_number(&mut latest, next);
            set_custom_version(&mut latest, set);
            if let Some(patch) = revision_patch(set, found, Some(next)) {
                actions.push(Action::PatchRevision { name: revision_name(found), patch });
            }
            latest
        }
        None => {
            kept.extend(owned.iter().map(|r| (*r).clone()));
            let taken: BTreeSet<&str> = input
                .revisions
                .iter()
                .filter(|r| r.metadata.namespace.as_deref() == Some(input.namespace))
                .filter_map(|r| r.metadata.name.as_deref())
                .collect();
            let mut created = candidate;
            let data = rev::revision_data(&created).cloned().unwrap_or(Value::Null);
            while created.metadata.name.as_deref().is_some_and(|n| taken.contains(n))
                && collision_count < i32::MAX
            {
                collision_count += 1;
                created.metadata.name =
                    Some(rev::revision_name(&name_of(set), &data_hash(&data, collision_count)));
            }
            actions.push(Action::CreateRevision { revision: Box::new(created.clone()) });
            created
        }
    };
    let latest_revision = revision_name(&latest);
    kept.push(latest);

    let limit = usize::try_from(
        set.spec.revision_history_limit.unwrap_or(DEFAULT_REVISION_HISTORY_LIMIT).max(1),
    )
    .unwrap_or(1);
    let (prune, over_limit) = history_to_prune(set, input.pods, &kept, limit);
    actions.extend(prune.iter().map(|name| Action::DeleteRevision { name: name.clone() }));
    kept.retain(|r| !prune.contains(&revision_name(r)));
    Ok(RevisionPlan { latest_revision, collision_count, actions, revisions: kept, over_limit })
}

fn revision_name(revision: &ControllerRevision) -> String {
    revision.metadata.name.clone().unwrap_or_default()
}

fn custom_version_of(revision: &ControllerRevision) -> Option<&str> {
    revision.metadata.labels.as_ref()?.get(CUSTOM_VERSION_LABEL).map(String::as_str)
}

fn set_custom_version(revision: &mut ControllerRevision, set: &SidecarSet) {
    if !set.spec.custom_version.is_empty() {
        revision
            .metadata
            .labels
            .get_or_insert_with(BTreeMap::new)
            .insert(CUSTOM_VERSION_LABEL.to_owned(), set.spec.custom_version.clone());
    }
}

/// A merge patch setting the revision number (when given) and the custom-version label (when
/// `spec.customVersion` is set and the revision's label differs); `None` when neither applies.
fn revision_patch(
    set: &SidecarSet,
    revision: &ControllerRevision,
    number: Option<i64>,
) -> Option<Patch> {
    let version = &set.spec.custom_version;
    let relabel = !version.is_empty() && custom_version_of(revision) != Some(version.as_str());
    let mut body = Map::new();
    if let Some(number) = number {
        body.insert("revision".to_owned(), json!(number));
    }
    if relabel {
        body.insert("metadata".to_owned(), json!({ "labels": { CUSTOM_VERSION_LABEL: version } }));
    }
    (!body.is_empty()).then(|| Patch::merge(Value::Object(body)))
}

/// The names of revisions in use: named by a pod's hash entry, or pinned by
/// `injectionStrategy.revision` (by name, or the newest with the custom version).
fn revisions_in_use(
    set: &SidecarSet,
    pods: &[Pod],
    revisions: &[ControllerRevision],
) -> BTreeSet<String> {
    let name = name_of(set);
    let mut used: BTreeSet<String> = pods.iter().filter_map(|p| pod_revision(p, &name)).collect();
    if let Some(pin) = &set.spec.injection_strategy.revision {
        if let Some(pinned) = &pin.revision_name {
            used.insert(pinned.clone());
        }
        if let Some(version) = &pin.custom_version {
            let newest = revisions
                .iter()
                .filter(|r| custom_version_of(r) == Some(version.as_str()))
                .max_by(|a, b| rev::compare_revisions(a, b));
            used.extend(newest.map(revision_name));
        }
    }
    used
}

/// Upstream's `truncateHistory` over `sorted` (oldest first, the latest last): the revisions to
/// delete, oldest first, and how many beyond `limit` stay because they are in use.
fn history_to_prune(
    set: &SidecarSet,
    pods: &[Pod],
    sorted: &[ControllerRevision],
    limit: usize,
) -> (Vec<String>, usize) {
    if sorted.len() <= limit {
        return (Vec::new(), 0);
    }
    let mut excess = sorted.len() - limit;
    let used = revisions_in_use(set, pods, sorted);
    let mut prune = Vec::new();
    for revision in &sorted[..sorted.len() - 1] {
        if excess == 0 {
            break;
        }
        let name = revision_name(revision);
        if !used.contains(&name) {
            prune.push(name);
            excess -= 1;
        }
    }
    (prune, excess)
}

/// What to do when creating `attempted` failed because `existing` has its name (upstream's
/// `CreateControllerRevision` loop): use `existing` when it records the same fields, otherwise
/// retry under a new name with the collision count raised.
pub fn resolve_create_conflict(
    set: &SidecarSet,
    existing: &ControllerRevision,
    attempted: &ControllerRevision,
    collision_count: i32,
) -> CreateConflict {
    if equal_revision(existing, attempted) {
        return CreateConflict::UseExisting { name: revision_name(existing) };
    }
    let collision_count = collision_count.saturating_add(1);
    let data = rev::revision_data(attempted).cloned().unwrap_or(Value::Null);
    let mut revision = attempted.clone();
    revision.metadata.name =
        Some(rev::revision_name(&name_of(set), &data_hash(&data, collision_count)));
    CreateConflict::Retry { collision_count, revision: Box::new(revision) }
}

#[cfg(test)]
mod tests;
