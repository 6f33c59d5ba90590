//! ControllerRevisions of workloads (CloneSet, Advanced StatefulSet, Advanced DaemonSet): what they hold, how they
//! are named, how they are matched and which ones are pruned.
//!
//! A workload revision stores the pod template as a strategic-merge patch that replaces the
//! whole template: `{"spec":{"template":{"$patch":"replace", ...}}}`. Upstream builds those
//! bytes by encoding the typed workload, decoding the template into a generic map and
//! encoding it again, so the document has sorted keys and Go's field rules (see [`gojson`]).
//! The revision is named `<workload>-<hash>`, where the hash is FNV-1 (not FNV-1a) over
//! those bytes followed by the decimal collision count, rendered with [`hash::safe_encode`].
//! Volume claim templates are not part of the data; for CloneSets upstream records their hash
//! in the annotation `kruise.io/cloneset-volumeclaimtemplate-hash` instead.
//!
//! We reproduce the bytes so that a revision we create for a template gets the same name as
//! the one upstream OpenKruise created for it. Matching, however, is by content first:
//! [`equal_revision`] also accepts revisions whose data decodes to the same template once
//! both are normalised, so a revision written by any version of upstream (or by us, with
//! slightly different bytes) is found again and no pod is ever moved to a new revision
//! because of an encoding difference.
//!
//! The functions take any [`RevisionParent`]: `apps.kruise.io/v1beta1` CloneSets and
//! StatefulSets implement it; convert a v1alpha1 object first with
//! [`kruise_api::conversion::to_hub`].

pub mod gojson;
pub mod goschema;
pub mod hash;
pub mod quantity;

use std::cmp::Ordering;
use std::collections::{BTreeMap, BTreeSet};

use k8s_openapi::api::apps::v1::ControllerRevision;
use k8s_openapi::api::core::v1::{PersistentVolumeClaim, Pod, PodTemplateSpec};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, OwnerReference};
use k8s_openapi::apimachinery::pkg::runtime::RawExtension;
use kruise_api::apps::v1beta1::{CloneSet, DaemonSet, StatefulSet};
use kruise_api::well_known;
use serde_json::{Map, Value};

/// Label on a ControllerRevision holding its hash (without the name prefix).
pub const HASH_LABEL: &str = well_known::kubernetes::labels::CONTROLLER_HASH;
/// Pod label naming the revision a pod belongs to.
pub const POD_REVISION_LABEL: &str = well_known::kubernetes::labels::CONTROLLER_REVISION_HASH;
/// Pod label holding only the hash part of the pod's revision.
pub const POD_TEMPLATE_HASH_LABEL: &str = well_known::kubernetes::labels::POD_TEMPLATE_HASH;
/// Revision annotation holding the hash of the CloneSet's volume claim templates.
pub const VCT_HASH_ANNOTATION: &str = well_known::annotations::CLONESET_VOLUME_CLAIM_TEMPLATE_HASH;
/// Revisions kept when `spec.revisionHistoryLimit` is not set.
pub const DEFAULT_REVISION_HISTORY_LIMIT: i32 = 10;

const KRUISE_API_VERSION: &str = "apps.kruise.io/v1beta1";
/// Longest name prefix kept, so that `<prefix>-<hash>` fits 253 bytes.
const MAX_NAME_PREFIX: usize = 223;

// k8s-openapi 1.37 made `data` required and `revision` optional; these accessors hide that.
k8s_openapi::k8s_if_le_1_36! {
    /// The revision's data, if any.
    pub fn revision_data(revision: &ControllerRevision) -> Option<&Value> {
        revision.data.as_ref().map(|d| &d.0).filter(|v| !v.is_null())
    }

    /// The revision's number (0 when unset).
    pub fn revision_number(revision: &ControllerRevision) -> i64 {
        revision.revision
    }

    /// Sets the revision's number.
    pub fn set_revision_number(revision: &mut ControllerRevision, number: i64) {
        revision.revision = number;
    }

    /// A ControllerRevision with this metadata, data and number.
    pub fn build_revision(metadata: ObjectMeta, data: Value, number: i64) -> ControllerRevision {
        ControllerRevision { metadata, data: Some(RawExtension(data)), revision: number }
    }
}

k8s_openapi::k8s_if_ge_1_37! {
    /// The revision's data, if any.
    pub fn revision_data(revision: &ControllerRevision) -> Option<&Value> {
        Some(&revision.data.0).filter(|v| !v.is_null())
    }

    /// The revision's number (0 when unset).
    pub fn revision_number(revision: &ControllerRevision) -> i64 {
        revision.revision.unwrap_or(0)
    }

    /// Sets the revision's number.
    pub fn set_revision_number(revision: &mut ControllerRevision, number: i64) {
        revision.revision = Some(number);
    }

    /// A ControllerRevision with this metadata, data and number.
    pub fn build_revision(metadata: ObjectMeta, data: Value, number: i64) -> ControllerRevision {
        ControllerRevision { metadata, data: RawExtension(data), revision: Some(number) }
    }
}

/// Why a revision could not be built or read.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum RevisionError {
    /// The workload's `spec.template` did not encode to JSON.
    #[error("{kind} {workload}: spec.template does not encode to JSON: {message}")]
    EncodeTemplate {
        /// The workload's kind.
        kind: &'static str,
        /// The workload's name.
        workload: String,
        /// What went wrong.
        message: String,
    },
    /// A revision's `data` has no `spec.template` object.
    #[error("ControllerRevision {revision}: data has no spec.template object")]
    MissingTemplate {
        /// The revision's name.
        revision: String,
    },
    /// A revision's `spec.template` does not decode as a pod template.
    #[error(
        "ControllerRevision {revision}: data.spec.template is not a PodTemplateSpec: {message}"
    )]
    InvalidTemplate {
        /// The revision's name.
        revision: String,
        /// What went wrong.
        message: String,
    },
}

/// The data of a workload revision, both as a JSON value and as the exact bytes upstream
/// hashes.
#[derive(Clone, Debug, PartialEq)]
pub struct RevisionData {
    value: Value,
    bytes: String,
}

impl RevisionData {
    /// Builds the revision data for a pod template.
    pub fn from_template(template: &PodTemplateSpec) -> Result<Self, serde_json::Error> {
        let raw = serde_json::to_value(template)?;
        Ok(Self::from_template_value(&raw))
    }

    /// Builds the revision data from a template already in JSON form.
    pub fn from_template_value(template: &Value) -> Self {
        let mut normalized = gojson::normalize_struct(template, goschema::POD_TEMPLATE_SPEC);
        if let Value::Object(map) = &mut normalized {
            map.insert("$patch".to_owned(), Value::String("replace".to_owned()));
        }
        let mut spec = Map::new();
        spec.insert("template".to_owned(), normalized);
        let mut root = Map::new();
        root.insert("spec".to_owned(), Value::Object(spec));
        let value = gojson::with_sorted_keys(&Value::Object(root));
        let bytes = gojson::encode_sorted(&value);
        Self { value, bytes }
    }

    /// The data as a JSON value (keys inserted in sorted order).
    pub fn value(&self) -> &Value {
        &self.value
    }

    /// The exact bytes upstream would store and hash. serde_json writes the [`value`] with
    /// the same keys in the same order, but without Go's escaping of `<`, `>` and `&`; send
    /// these bytes instead where that matters.
    ///
    /// [`value`]: Self::value
    pub fn go_bytes(&self) -> &str {
        &self.bytes
    }

    /// The safe-encoded hash naming a revision of this data.
    pub fn hash(&self, collision_count: Option<i32>) -> String {
        hash_revision_bytes(self.bytes.as_bytes(), collision_count)
    }
}

/// The hash Kubernetes' `HashControllerRevision` computes for raw revision data: FNV-1 over
/// the bytes and then the decimal collision count, safe-encoded.
pub fn hash_revision_bytes(data: &[u8], collision_count: Option<i32>) -> String {
    let mut hasher = hash::Fnv32::fnv1();
    hasher.write(data);
    if let Some(count) = collision_count {
        hasher.write(count.to_string().as_bytes());
    }
    hash::safe_encode(&hasher.sum32().to_string())
}

/// `<prefix>-<hash>`, with the prefix cut to 223 bytes.
pub fn revision_name(prefix: &str, hash: &str) -> String {
    let mut end = prefix.len().min(MAX_NAME_PREFIX);
    while !prefix.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}-{hash}", &prefix[..end])
}

/// The part of a revision name after its last `-`: the hash.
pub fn short_hash(name: &str) -> &str {
    // '-' is one byte, so a byte search finds it without a general string splitter.
    match name.bytes().rposition(|b| b == b'-') {
        Some(dash) => name.get(dash + 1..).unwrap_or(name),
        None => name,
    }
}

/// Whether a pod's revision label names `revision`: equal names, or equal short hashes
/// (upstream's `EqualToRevisionHash`).
pub fn revision_label_matches(label: &str, revision: &str) -> bool {
    label == revision || short_hash(label) == short_hash(revision)
}

/// Whether a pod's `controller-revision-hash` label names `revision` (by full name or, as
/// with the `CloneSetShortHash` gate, by hash alone).
pub fn pod_matches_revision(pod: &Pod, revision: &str) -> bool {
    let label = pod
        .metadata
        .labels
        .as_ref()
        .and_then(|labels| labels.get(POD_REVISION_LABEL))
        .map(String::as_str)
        .unwrap_or("");
    revision_label_matches(label, revision)
}

/// The hash of a CloneSet's volume claim templates, as recorded in
/// [`VCT_HASH_ANNOTATION`]: FNV-1a over Go's encoding of the templates (name and spec only),
/// sorted by name. An empty string when there are none.
pub fn volume_claim_templates_hash<'a>(
    templates: impl IntoIterator<Item = &'a PersistentVolumeClaim>,
) -> String {
    let mut claims: Vec<Value> = Vec::new();
    let mut names: Vec<String> = Vec::new();
    for template in templates {
        let name = template.metadata.name.clone().unwrap_or_default();
        let spec = template
            .spec
            .as_ref()
            .and_then(|s| serde_json::to_value(s).ok())
            .unwrap_or(Value::Null);
        let claim = serde_json::json!({"metadata": {"name": name}, "spec": spec});
        names.push(name);
        claims.push(gojson::normalize_struct(&claim, goschema::PVC));
    }
    if claims.is_empty() {
        return String::new();
    }
    let mut order: Vec<usize> = (0..claims.len()).collect();
    order.sort_by(|&a, &b| names[a].cmp(&names[b]));
    let sorted = Value::Array(order.into_iter().map(|i| claims[i].clone()).collect());
    let json = gojson::encode_ordered_slice(&sorted, goschema::PVC);
    hash::deep_hash_json(json.as_bytes()).to_string()
}

/// Whether two revisions' volume-claim-template hashes allow moving a pod between them in
/// place: true unless both record a hash and the hashes differ.
pub fn volume_claim_templates_allow_in_place(
    old: &ControllerRevision,
    new: &ControllerRevision,
) -> bool {
    match (vct_annotation(old), vct_annotation(new)) {
        (Some(a), Some(b)) => a == b,
        _ => true,
    }
}

fn vct_annotation(revision: &ControllerRevision) -> Option<&str> {
    revision.metadata.annotations.as_ref()?.get(VCT_HASH_ANNOTATION).map(String::as_str)
}

/// A workload whose pod templates are kept as ControllerRevisions.
pub trait RevisionParent {
    /// The workload's kind (`CloneSet`, `StatefulSet`), in owner references and errors.
    const KIND: &'static str;
    /// The workload's metadata.
    fn metadata(&self) -> &ObjectMeta;
    /// The pod template revisions are taken of.
    fn template(&self) -> &PodTemplateSpec;
    /// The [`VCT_HASH_ANNOTATION`] value a revision of this workload records, for kinds that
    /// record one (CloneSet).
    fn volume_claim_templates_hash(&self) -> Option<String>;
    /// `status.collisionCount` (0 when unset).
    fn collision_count(&self) -> i32;
    /// `status.currentRevision` ("" when unset).
    fn current_revision(&self) -> &str;
    /// `spec.revisionHistoryLimit`.
    fn revision_history_limit(&self) -> Option<i32>;
}

impl RevisionParent for CloneSet {
    const KIND: &'static str = "CloneSet";
    fn metadata(&self) -> &ObjectMeta {
        &self.metadata
    }
    fn template(&self) -> &PodTemplateSpec {
        &self.spec.template
    }
    fn volume_claim_templates_hash(&self) -> Option<String> {
        Some(volume_claim_templates_hash(
            self.spec.volume_claim_templates.iter().map(|t| &t.object),
        ))
    }
    fn collision_count(&self) -> i32 {
        self.status.as_ref().and_then(|s| s.collision_count).unwrap_or(0)
    }
    fn current_revision(&self) -> &str {
        self.status.as_ref().map(|s| s.current_revision.as_str()).unwrap_or("")
    }
    fn revision_history_limit(&self) -> Option<i32> {
        self.spec.revision_history_limit
    }
}

impl RevisionParent for DaemonSet {
    const KIND: &'static str = "DaemonSet";
    fn metadata(&self) -> &ObjectMeta {
        &self.metadata
    }
    fn template(&self) -> &PodTemplateSpec {
        &self.spec.template
    }
    fn volume_claim_templates_hash(&self) -> Option<String> {
        None
    }
    fn collision_count(&self) -> i32 {
        self.status.as_ref().and_then(|s| s.collision_count).unwrap_or(0)
    }
    /// DaemonSets keep no current revision: every pod not at the update revision is old.
    fn current_revision(&self) -> &str {
        ""
    }
    fn revision_history_limit(&self) -> Option<i32> {
        self.spec.revision_history_limit
    }
}

impl RevisionParent for StatefulSet {
    const KIND: &'static str = "StatefulSet";
    fn metadata(&self) -> &ObjectMeta {
        &self.metadata
    }
    fn template(&self) -> &PodTemplateSpec {
        &self.spec.template
    }
    fn volume_claim_templates_hash(&self) -> Option<String> {
        None
    }
    fn collision_count(&self) -> i32 {
        self.status.as_ref().and_then(|s| s.collision_count).unwrap_or(0)
    }
    fn current_revision(&self) -> &str {
        self.status.as_ref().map(|s| s.current_revision.as_str()).unwrap_or("")
    }
    fn revision_history_limit(&self) -> Option<i32> {
        self.spec.revision_history_limit
    }
}

/// Builds the ControllerRevision upstream would create for the workload's current template.
///
/// Labels are the template's labels plus [`HASH_LABEL`] (upstream copies the template
/// labels, which the selector matches); annotations are the workload's, plus
/// [`VCT_HASH_ANNOTATION`] for kinds that record it; the workload is the controlling owner.
pub fn new_revision<W: RevisionParent>(
    workload: &W,
    revision: i64,
    collision_count: i32,
) -> Result<ControllerRevision, RevisionError> {
    let meta = workload.metadata();
    let name = meta.name.clone().unwrap_or_default();
    let template = workload.template();
    let data =
        RevisionData::from_template(template).map_err(|err| RevisionError::EncodeTemplate {
            kind: W::KIND,
            workload: name.clone(),
            message: err.to_string(),
        })?;
    let hash = data.hash(Some(collision_count));

    let mut labels: BTreeMap<String, String> =
        template.metadata.as_ref().and_then(|m| m.labels.clone()).unwrap_or_default();
    labels.insert(HASH_LABEL.to_owned(), hash.clone());

    let mut annotations = meta.annotations.clone().unwrap_or_default();
    if let Some(vct_hash) = workload.volume_claim_templates_hash() {
        annotations.insert(VCT_HASH_ANNOTATION.to_owned(), vct_hash);
    }

    let metadata = ObjectMeta {
        name: Some(revision_name(&name, &hash)),
        namespace: meta.namespace.clone(),
        labels: Some(labels),
        annotations: Some(annotations).filter(|a| !a.is_empty()),
        owner_references: Some(vec![controller_ref(workload)]),
        ..ObjectMeta::default()
    };
    Ok(build_revision(metadata, data.value, revision))
}

/// The owner reference an `apps.kruise.io` workload puts on what it controls.
pub fn controller_ref<W: RevisionParent>(workload: &W) -> OwnerReference {
    let meta = workload.metadata();
    OwnerReference {
        api_version: KRUISE_API_VERSION.to_owned(),
        kind: W::KIND.to_owned(),
        name: meta.name.clone().unwrap_or_default(),
        uid: meta.uid.clone().unwrap_or_default(),
        controller: Some(true),
        block_owner_deletion: Some(true),
    }
}

/// One more than the highest revision number in use, or 1 when there is none.
pub fn next_revision_number(revisions: &[ControllerRevision]) -> i64 {
    revisions.iter().map(revision_number).max().map_or(1, |max| max.saturating_add(1))
}

/// Kubernetes' revision order: by revision number, then creation time, then name.
pub fn compare_revisions(a: &ControllerRevision, b: &ControllerRevision) -> Ordering {
    revision_number(a)
        .cmp(&revision_number(b))
        .then_with(|| a.metadata.creation_timestamp.cmp(&b.metadata.creation_timestamp))
        .then_with(|| a.metadata.name.cmp(&b.metadata.name))
}

/// Sorts revisions oldest first (see [`compare_revisions`]).
pub fn sort_revisions(revisions: &mut [ControllerRevision]) {
    revisions.sort_by(compare_revisions);
}

/// Whether two revisions hold the same state.
///
/// As upstream: revisions whose hash labels both parse as 32-bit integers and differ are
/// different, and revisions with identical data are equal. Beyond upstream, revisions whose
/// templates are equal once normalised (Go's field rules, canonical quantities, sorted keys)
/// are equal too, so a revision is recognised whichever version of whichever controller wrote
/// it.
pub fn equal_revision(a: &ControllerRevision, b: &ControllerRevision) -> bool {
    let label_hash =
        |r: &ControllerRevision| r.metadata.labels.as_ref()?.get(HASH_LABEL)?.parse::<i32>().ok();
    if let (Some(x), Some(y)) = (label_hash(a), label_hash(b))
        && x != y
    {
        return false;
    }
    let (da, db) = (revision_data(a), revision_data(b));
    if da == db {
        return true;
    }
    match (da, db) {
        (Some(x), Some(y)) => normalized_data(x) == normalized_data(y),
        _ => false,
    }
}

/// Revision data with its template normalised; other keys as they are.
fn normalized_data(data: &Value) -> Value {
    let mut data = data.clone();
    if let Some(template) = data.get_mut("spec").and_then(|s| s.get_mut("template"))
        && template.is_object()
    {
        let normalized = gojson::normalize_struct(template, goschema::POD_TEMPLATE_SPEC);
        let had_patch = template.get("$patch").cloned();
        *template = normalized;
        if let (Some(p), Value::Object(map)) = (had_patch, template) {
            map.insert("$patch".to_owned(), p);
        }
    }
    data
}

/// The revisions in `existing` equal to `candidate` (see [`equal_revision`]), in the order
/// given.
pub fn find_equal_revisions<'a>(
    existing: &'a [ControllerRevision],
    candidate: &ControllerRevision,
) -> Vec<&'a ControllerRevision> {
    existing.iter().filter(|r| equal_revision(r, candidate)).collect()
}

/// The newest revision (by [`compare_revisions`]) equal to `candidate`, if any.
pub fn find_equal_revision<'a>(
    existing: &'a [ControllerRevision],
    candidate: &ControllerRevision,
) -> Option<&'a ControllerRevision> {
    existing.iter().filter(|r| equal_revision(r, candidate)).max_by(|a, b| compare_revisions(a, b))
}

/// The pod template a revision holds.
pub fn template_from_revision(
    revision: &ControllerRevision,
) -> Result<PodTemplateSpec, RevisionError> {
    let name = revision.metadata.name.clone().unwrap_or_default();
    let template = revision_data(revision)
        .and_then(|d| d.get("spec"))
        .and_then(|s| s.get("template"))
        .filter(|t| t.is_object())
        .ok_or_else(|| RevisionError::MissingTemplate { revision: name.clone() })?;
    let mut template = template.clone();
    if let Value::Object(map) = &mut template {
        map.remove("$patch");
    }
    serde_json::from_value(template)
        .map_err(|err| RevisionError::InvalidTemplate { revision: name, message: err.to_string() })
}

/// What to do about the update revision.
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub enum UpdateRevision {
    /// The newest revision already holds the workload's template; nothing to write.
    Latest {
        /// Its name.
        name: String,
    },
    /// An older revision holds the template (a rollback): give it a new revision number and,
    /// when set, the new volume-claim-template hash annotation.
    Reuse {
        /// Its name.
        name: String,
        /// The revision number to write.
        revision: i64,
        /// The [`VCT_HASH_ANNOTATION`] value to write, when it changed.
        volume_claim_templates_hash: Option<String>,
    },
    /// No revision holds the template: create this one.
    Create {
        /// The revision to create.
        revision: Box<ControllerRevision>,
    },
}

impl UpdateRevision {
    /// The name of the update revision.
    pub fn name(&self) -> &str {
        match self {
            Self::Latest { name } | Self::Reuse { name, .. } => name,
            Self::Create { revision } => revision.metadata.name.as_deref().unwrap_or(""),
        }
    }
}

/// The current and update revisions of a workload (upstream's `getActiveRevisions`).
#[derive(Clone, Debug, PartialEq)]
pub struct ActiveRevisions {
    /// Name of the current revision: `status.currentRevision` when it still exists, otherwise
    /// the update revision.
    pub current: String,
    /// The update revision and what to do about it.
    pub update: UpdateRevision,
    /// The collision count to record in the status.
    pub collision_count: i32,
}

/// Works out the current and update revisions from the revisions the workload owns.
///
/// Name collisions with revisions in `revisions` are resolved here by raising the collision
/// count; a collision with a revision the snapshot does not hold shows up when creating, see
/// [`resolve_create_conflict`].
pub fn resolve_revisions<W: RevisionParent>(
    workload: &W,
    revisions: &[ControllerRevision],
) -> Result<ActiveRevisions, RevisionError> {
    let mut sorted: Vec<&ControllerRevision> = revisions.iter().collect();
    sorted.sort_by(|a, b| compare_revisions(a, b));
    let mut collision_count = workload.collision_count();

    let candidate = new_revision(workload, next_revision_number(revisions), collision_count)?;
    let equal: Vec<&ControllerRevision> =
        sorted.iter().copied().filter(|r| equal_revision(r, &candidate)).collect();

    let update = match (sorted.last(), equal.last()) {
        (Some(latest), Some(last_equal)) if equal_revision(latest, last_equal) => {
            UpdateRevision::Latest { name: latest.metadata.name.clone().unwrap_or_default() }
        }
        (_, Some(last_equal)) => {
            let volume_claim_templates_hash = match vct_annotation(&candidate) {
                None => None,
                Some(wanted) if vct_annotation(last_equal) == Some(wanted) => None,
                Some(wanted) => Some(wanted.to_owned()),
            };
            UpdateRevision::Reuse {
                name: last_equal.metadata.name.clone().unwrap_or_default(),
                revision: revision_number(&candidate),
                volume_claim_templates_hash,
            }
        }
        (_, None) => {
            let mut created = candidate;
            let taken = |name: &Option<String>| {
                revisions.iter().any(|r| r.metadata.name.is_some() && &r.metadata.name == name)
            };
            let prefix = workload.metadata().name.clone().unwrap_or_default();
            let data = revision_data(&created).map(gojson::encode_sorted).unwrap_or_default();
            // Upstream renames on each collision but keeps the first hash in the label.
            while taken(&created.metadata.name) {
                collision_count = collision_count.saturating_add(1);
                let hash = hash_revision_bytes(data.as_bytes(), Some(collision_count));
                created.metadata.name = Some(revision_name(&prefix, &hash));
                if collision_count == i32::MAX {
                    break;
                }
            }
            UpdateRevision::Create { revision: Box::new(created) }
        }
    };

    let wanted_current = workload.current_revision();
    let current = revisions
        .iter()
        .find(|r| !wanted_current.is_empty() && r.metadata.name.as_deref() == Some(wanted_current))
        .and_then(|r| r.metadata.name.clone())
        .unwrap_or_else(|| update.name().to_owned());

    Ok(ActiveRevisions { current, update, collision_count })
}

/// What to do when creating a revision failed because its name is taken.
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub enum CreateConflict {
    /// The existing revision holds the same state: use it.
    UseExisting {
        /// Its name.
        name: String,
    },
    /// A different revision has the name: record the raised collision count and try again
    /// with the renamed revision.
    Retry {
        /// The collision count to record.
        collision_count: i32,
        /// The revision to create instead.
        revision: Box<ControllerRevision>,
    },
}

/// Resolves a name conflict found while creating `attempted` (upstream compares the data of
/// the existing revision and raises the collision count when it differs).
pub fn resolve_create_conflict<W: RevisionParent>(
    workload: &W,
    existing: &ControllerRevision,
    attempted: &ControllerRevision,
    collision_count: i32,
) -> CreateConflict {
    if equal_revision(existing, attempted) {
        return CreateConflict::UseExisting {
            name: existing.metadata.name.clone().unwrap_or_default(),
        };
    }
    let collision_count = collision_count.saturating_add(1);
    let data = revision_data(attempted).map(gojson::encode_sorted).unwrap_or_default();
    let hash = hash_revision_bytes(data.as_bytes(), Some(collision_count));
    let mut revision = attempted.clone();
    revision.metadata.name =
        Some(revision_name(workload.metadata().name.as_deref().unwrap_or(""), &hash));
    CreateConflict::Retry { collision_count, revision: Box::new(revision) }
}

/// The revisions to delete to respect `spec.revisionHistoryLimit`, oldest first.
///
/// The current and update revisions and every revision a pod still belongs to are live and
/// never deleted; of the others, the oldest go until at most the limit (default 10) remain.
pub fn revisions_to_prune<'a, W: RevisionParent>(
    workload: &W,
    pods: &[Pod],
    revisions: &'a [ControllerRevision],
    current: &str,
    update: &str,
) -> Vec<&'a ControllerRevision> {
    let mut sorted: Vec<&ControllerRevision> = revisions.iter().collect();
    sorted.sort_by(|a, b| compare_revisions(a, b));
    let limit = workload.revision_history_limit().unwrap_or(DEFAULT_REVISION_HISTORY_LIMIT).max(0);
    let labels: BTreeSet<&str> = pods
        .iter()
        .filter_map(|p| p.metadata.labels.as_ref()?.get(POD_REVISION_LABEL))
        .map(String::as_str)
        .collect();
    let names: Vec<&str> =
        sorted.iter().map(|r| r.metadata.name.as_deref().unwrap_or("")).collect();
    let prune: BTreeSet<&str> =
        history_to_prune(&names, &labels, current, update, usize::try_from(limit).unwrap_or(0))
            .into_iter()
            .collect();
    sorted
        .into_iter()
        .filter(|r| prune.contains(r.metadata.name.as_deref().unwrap_or("")))
        .collect()
}

/// Upstream's `truncateHistory` rule over names: of the revisions (oldest first) that are
/// neither `current` nor `update` and that no pod revision label in `in_use` names, the oldest
/// are pruned until `limit` remain. Returns the names to delete, oldest first.
pub fn history_to_prune<'a>(
    sorted_names: &[&'a str],
    in_use: &BTreeSet<&str>,
    current: &str,
    update: &str,
    limit: usize,
) -> Vec<&'a str> {
    let candidates: Vec<&'a str> =
        sorted_names.iter().copied().filter(|n| *n != current && *n != update).collect();
    if candidates.len() <= limit {
        // Nothing can exceed the limit; no need to look at the pods.
        return Vec::new();
    }
    let dead: Vec<&'a str> = candidates
        .into_iter()
        .filter(|name| !in_use.iter().any(|label| revision_label_matches(label, name)))
        .collect();
    let excess = dead.len().saturating_sub(limit);
    dead[..excess].to_vec()
}

#[cfg(test)]
mod tests;
