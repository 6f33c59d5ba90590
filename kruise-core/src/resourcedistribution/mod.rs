//! ResourceDistribution: one Secret or ConfigMap, copied into many namespaces and kept in sync.
//!
//! [`plan`] takes a [`Snapshot`] (the distribution, every namespace, the copies that exist and
//! the writes that failed last time) and `now`, and answers with a [`Plan`]: the copies to
//! create, bring up to date and delete, the new status and the Events. It follows upstream's
//! controller (`pkg/controller/resourcedistribution`):
//!
//! - **Targets** ([`target_namespaces`]): every namespace with `allNamespaces`; otherwise the
//!   listed ones (whether they exist or not) and those `namespaceSelector` matches (an empty
//!   selector matches none); minus `excludedNamespaces`; never `kube-system` or `kube-public`.
//! - **A copy** ([`desired_copy`]) is the resource's body in the namespace, with the
//!   resource's name, labels and annotations, the annotations
//!   `kruise.io/resourcedistribution.resource.from` (the distribution's name) and
//!   `kruise.io/resourcedistribution.resource.hashcode` (upstream's SHA-256 of
//!   `spec.resource`), and the distribution as its controller owner, so that deleting the
//!   distribution deletes its copies.
//! - **Each target** ([`copy_state`]) gets its copy created when there is none, and patched
//!   when it is out of date; a namespace that is missing or being deleted is reported
//!   (`NamespaceNotExists`). A copy in a namespace no longer targeted is deleted.
//! - **Conflicts** are left alone and reported (`ConflictOccurred`): an object of the same
//!   kind and name that this distribution does not control, a copy whose
//!   `resource.from` annotation was changed or removed, and a copy whose content was changed
//!   by hand since it was written (its hash annotation is the current one, its content is
//!   not). A Warning `ConflictOccurred` Event names the namespaces newly in conflict.
//! - **Status**: `desired` (targets), `succeeded`, `failed`, `observedGeneration` and
//!   upstream's six conditions in its order, each `False` with reason `Succeeded` or `True`
//!   with the reason and its `failedNamespace`s. A write that failed last time
//!   ([`Snapshot::failures`]) counts as failed, under its condition, until it succeeds.
//!
//! Where this differs from upstream:
//! - A copy edited by hand is a conflict until the resource changes; upstream overwrites it at
//!   its next reconcile.
//! - Copies are written with a merge patch guarded by the resourceVersion they were read at
//!   (upstream: a whole update), and only the labels and annotations the resource sets are
//!   written, so labels others add to a copy stay.
//! - A Secret's `stringData` is folded into `data`, `type` defaults to `Opaque`, and base64
//!   values are compared decoded, as kube-apiserver stores them: upstream compares the
//!   resource as written, so a Secret given with `stringData` is rewritten at every
//!   reconcile.
//! - The resource's labels and annotations reach the copies when only they change; upstream
//!   writes them only with a change of the body.
//! - Copies the distribution controls under another kind or name are deleted.

pub mod admission;

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use base64::Engine as _;
use jiff::Timestamp;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use kruise_api::apps::v1beta1::{
    ResourceDistribution, ResourceDistributionCondition, ResourceDistributionConditionStatus,
    ResourceDistributionConditionType, ResourceDistributionStatus, ResourceDistributionTargets,
};
use kruise_api::well_known::annotations::{
    RESOURCE_DISTRIBUTION_HASH_CODE, RESOURCE_DISTRIBUTION_SOURCE,
};
use serde_json::{Map, Value, json};
use sha2::Digest as _;

use crate::expectations::ControllerExpectations;
use crate::plan::{Action, Event, EventType, Guard, ObjectKind, Patch, Plan, Subresource, Target};
use crate::selector::{Selector, SelectorError};

/// apps.kruise.io/v1beta1 ResourceDistribution (cluster-scoped).
pub const RESOURCE_DISTRIBUTION: ObjectKind = ObjectKind {
    group: "apps.kruise.io",
    version: "v1beta1",
    kind: "ResourceDistribution",
    plural: "resourcedistributions",
    namespaced: false,
};

/// Namespaces that never receive a copy, whatever the targets say.
pub const PROTECTED_NAMESPACES: [&str; 2] = ["kube-system", "kube-public"];

/// The reason a condition has when nothing failed.
pub const SUCCEEDED: &str = "Succeeded";

/// The reason of `NamespaceNotExists`.
pub const NAMESPACE_MISSING: &str = "namespace not found or is terminating";

/// The reason of `ConflictOccurred` for an object the distribution does not control
/// (upstream's words).
pub const CONFLICT_NOT_OWNED: &str =
    "conflict with existing resources because of the same namespace, group, version, kind and name";

/// The reason of `ConflictOccurred` for a copy whose `resource.from` annotation was changed.
pub const CONFLICT_SOURCE_CHANGED: &str =
    "the copy's kruise.io/resourcedistribution.resource.from annotation was changed";

/// The reason of `ConflictOccurred` for a copy edited by hand.
pub const CONFLICT_EDITED: &str =
    "the copy was changed since it was distributed; delete it to have it distributed again";

/// The kinds a distribution can copy.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum ResourceKind {
    /// core/v1 Secret.
    Secret,
    /// core/v1 ConfigMap.
    ConfigMap,
}

impl ResourceKind {
    /// Where the kind's API lives.
    pub fn object_kind(self) -> ObjectKind {
        match self {
            Self::Secret => ObjectKind::SECRET,
            Self::ConfigMap => ObjectKind::CONFIG_MAP,
        }
    }

    /// The kind's name.
    pub fn name(self) -> &'static str {
        self.object_kind().kind
    }
}

/// Why `spec.resource` cannot be distributed.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ResourceError {
    /// No resource at all.
    #[error("empty resource is not allowed")]
    Empty,
    /// Not a JSON object.
    #[error("failed to deserialize resource, please check your spec.resource: not an object")]
    NotAnObject,
    /// `apiVersion` or `kind` missing.
    #[error("Object 'Kind' is missing in the resource")]
    MissingKind,
    /// A kind other than Secret and ConfigMap.
    #[error(
        "unknown or unsupported resource GroupKind {kind}.{group}, only support [Secret ConfigMap]"
    )]
    Unsupported {
        /// The group given (empty for the core group).
        group: String,
        /// The kind given.
        kind: String,
    },
    /// No `metadata.name`.
    #[error("metadata.name: Required value: name is required")]
    MissingName,
}

/// `spec.resource`, parsed: its kind and name, and the body as written.
#[derive(Clone, Debug, PartialEq)]
pub struct Resource<'a> {
    /// Secret or ConfigMap.
    pub kind: ResourceKind,
    /// Its `apiVersion` as written.
    pub api_version: &'a str,
    /// `metadata.name`.
    pub name: &'a str,
    /// The whole resource.
    pub body: &'a Map<String, Value>,
}

impl<'a> Resource<'a> {
    /// Parses `spec.resource`.
    ///
    /// # Errors
    /// What makes it undistributable, as upstream's webhook words it.
    pub fn parse(raw: &'a Value) -> Result<Self, ResourceError> {
        let body = match raw {
            Value::Null => return Err(ResourceError::Empty),
            Value::Object(map) if map.is_empty() => return Err(ResourceError::Empty),
            Value::Object(map) => map,
            _ => return Err(ResourceError::NotAnObject),
        };
        let text = |key: &str| body.get(key).and_then(Value::as_str).unwrap_or_default();
        let (api_version, kind) = (text("apiVersion"), text("kind"));
        if api_version.is_empty() || kind.is_empty() {
            return Err(ResourceError::MissingKind);
        }
        let group = api_version.rsplit_once('/').map_or("", |(group, _)| group);
        let kind = match (group, kind) {
            ("", "Secret") => ResourceKind::Secret,
            ("", "ConfigMap") => ResourceKind::ConfigMap,
            (group, kind) => {
                return Err(ResourceError::Unsupported {
                    group: group.to_owned(),
                    kind: kind.to_owned(),
                });
            }
        };
        let name = body
            .get("metadata")
            .and_then(|m| m.get("name"))
            .and_then(Value::as_str)
            .filter(|n| !n.is_empty())
            .ok_or(ResourceError::MissingName)?;
        Ok(Self { kind, api_version, name, body })
    }

    fn string_map(&self, key: &str) -> BTreeMap<String, String> {
        self.body
            .get("metadata")
            .and_then(|m| m.get(key))
            .and_then(Value::as_object)
            .map(|map| {
                map.iter().filter_map(|(k, v)| Some((k.clone(), v.as_str()?.to_owned()))).collect()
            })
            .unwrap_or_default()
    }
}

/// The hash upstream records in `kruise.io/resourcedistribution.resource.hashcode`: SHA-256, in
/// hex, of `spec.resource` as kube-apiserver serialises it (Go's `encoding/json` over a generic
/// map: keys sorted, `<`, `>` and `&` escaped), so that a copy upstream wrote reads as current.
pub fn source_hash(raw: &Value) -> String {
    let text = crate::revision::gojson::encode_sorted(raw);
    let digest = sha2::Sha256::digest(text.as_bytes());
    digest.iter().map(|b| format!("{b:02x}")).collect()
}

/// A namespace as the planner needs it.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct NamespaceView {
    /// Its name.
    pub name: String,
    /// Its labels.
    pub labels: BTreeMap<String, String>,
    /// It has a deletionTimestamp.
    pub terminating: bool,
}

/// The namespaces `targets` select among `namespaces`: see the module docs. Listed namespaces
/// are in whether they exist or not.
///
/// # Errors
/// `namespaceSelector` does not parse.
pub fn target_namespaces(
    targets: &ResourceDistributionTargets,
    namespaces: &[NamespaceView],
) -> Result<BTreeSet<String>, SelectorError> {
    let mut chosen = BTreeSet::new();
    if targets.all_namespaces {
        chosen.extend(namespaces.iter().map(|ns| ns.name.clone()));
    } else {
        chosen.extend(targets.included_namespaces.list.iter().map(|ns| ns.name.clone()));
    }
    let selector = &targets.namespace_selector;
    let has_terms = selector.match_labels.as_ref().is_some_and(|m| !m.is_empty())
        || selector.match_expressions.as_ref().is_some_and(|e| !e.is_empty());
    if !targets.all_namespaces && has_terms {
        let selector = Selector::parse(Some(selector))?;
        chosen.extend(
            namespaces.iter().filter(|ns| selector.matches(&ns.labels)).map(|ns| ns.name.clone()),
        );
    }
    for excluded in &targets.excluded_namespaces.list {
        chosen.remove(&excluded.name);
    }
    for protected in PROTECTED_NAMESPACES {
        chosen.remove(protected);
    }
    chosen.remove("");
    Ok(chosen)
}

/// A write that failed, as the controller saw it; planned again, it counts as failed until it
/// succeeds.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Failure {
    /// The namespace of the copy.
    pub namespace: String,
    /// What was tried.
    pub operation: Operation,
    /// What the server answered.
    pub message: String,
}

/// A write to a copy.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Operation {
    /// Reading it.
    Get,
    /// Creating it.
    Create,
    /// Bringing it up to date.
    Update,
    /// Deleting it.
    Delete,
}

/// What the planner reads.
#[derive(Clone, Debug, Default)]
pub struct Snapshot {
    /// The distribution.
    pub distribution: ResourceDistribution,
    /// Every namespace.
    pub namespaces: Vec<NamespaceView>,
    /// The objects of the resource's kind and name, in any namespace, and every object the
    /// distribution controls, as read (whole objects).
    pub copies: Vec<Arc<Value>>,
    /// The writes that failed the last time this distribution's plan was carried out.
    pub failures: Vec<Failure>,
}

/// Where an existing object stands against the copy it should be.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CopyState {
    /// It is the copy, up to date.
    InSync,
    /// It is the distribution's copy, out of date: patch it.
    Stale,
    /// Not the distribution's to write.
    Conflict(ConflictCause),
}

/// Why an object is left alone.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum ConflictCause {
    /// The distribution is not its controller.
    NotOwned,
    /// Its `resource.from` annotation was changed or removed.
    SourceChanged,
    /// Its content was changed since it was written.
    Edited,
}

impl ConflictCause {
    /// The condition reason for the cause.
    pub fn reason(self) -> &'static str {
        match self {
            Self::NotOwned => CONFLICT_NOT_OWNED,
            Self::SourceChanged => CONFLICT_SOURCE_CHANGED,
            Self::Edited => CONFLICT_EDITED,
        }
    }
}

fn meta(object: &Value) -> &Value {
    object.get("metadata").unwrap_or(&Value::Null)
}

fn meta_str<'v>(object: &'v Value, key: &str) -> &'v str {
    meta(object).get(key).and_then(Value::as_str).unwrap_or_default()
}

fn annotation<'v>(object: &'v Value, key: &str) -> Option<&'v str> {
    meta(object).get("annotations").and_then(|a| a.get(key)).and_then(Value::as_str)
}

/// The UID of `object`'s controller owner, if any.
pub fn controller_uid(object: &Value) -> Option<&str> {
    meta(object)
        .get("ownerReferences")
        .and_then(Value::as_array)?
        .iter()
        .find(|r| r.get("controller").and_then(Value::as_bool) == Some(true))
        .and_then(|r| r.get("uid"))
        .and_then(Value::as_str)
}

/// Base64 as kube-apiserver stores it: decoded (ignoring line breaks, as Go's decoder does)
/// and encoded again; left as is when it does not decode.
fn canonical_base64(value: &Value) -> Value {
    let Some(text) = value.as_str() else { return value.clone() };
    let compact: String = text.chars().filter(|c| *c != '\n' && *c != '\r').collect();
    match base64::engine::general_purpose::STANDARD.decode(compact) {
        Ok(bytes) => Value::String(base64::engine::general_purpose::STANDARD.encode(bytes)),
        Err(_) => value.clone(),
    }
}

fn canonical_map(map: Option<&Value>) -> Option<Value> {
    let map = map?.as_object()?;
    Some(Value::Object(map.iter().map(|(k, v)| (k.clone(), canonical_base64(v))).collect()))
}

/// The body of `object` (everything but apiVersion, kind, metadata and status) as
/// kube-apiserver stores it: for a Secret, `stringData` folded into `data` and `type`
/// defaulted to `Opaque`; base64 maps canonical.
pub fn content(kind: ResourceKind, object: &Map<String, Value>) -> Map<String, Value> {
    let mut body: Map<String, Value> = object
        .iter()
        .filter(|(k, _)| !matches!(k.as_str(), "apiVersion" | "kind" | "metadata" | "status"))
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect();
    match kind {
        ResourceKind::Secret => {
            let mut data = canonical_map(body.get("data"))
                .and_then(|v| v.as_object().cloned())
                .unwrap_or_default();
            if let Some(Value::Object(strings)) = body.remove("stringData") {
                for (key, value) in strings {
                    let text = value.as_str().unwrap_or_default();
                    let encoded = base64::engine::general_purpose::STANDARD.encode(text);
                    data.insert(key, Value::String(encoded));
                }
            }
            if data.is_empty() {
                body.remove("data");
            } else {
                body.insert("data".into(), Value::Object(data));
            }
            let typed = body.get("type").and_then(Value::as_str).is_some_and(|t| !t.is_empty());
            if !typed {
                body.insert("type".into(), json!("Opaque"));
            }
        }
        ResourceKind::ConfigMap => {
            if let Some(binary) = canonical_map(body.get("binaryData")) {
                body.insert("binaryData".into(), binary);
            }
        }
    }
    // An empty map and none read the same (kube-apiserver drops empty maps).
    body.retain(|_, v| !matches!(v, Value::Object(m) if m.is_empty()) && !v.is_null());
    body
}

/// The controller ownerReference a copy carries.
fn owner_reference(distribution: &ResourceDistribution) -> Value {
    json!({
        "apiVersion": RESOURCE_DISTRIBUTION.api_version(),
        "kind": RESOURCE_DISTRIBUTION.kind,
        "name": distribution.metadata.name.as_deref().unwrap_or_default(),
        "uid": distribution.metadata.uid.as_deref().unwrap_or_default(),
        "controller": true,
        "blockOwnerDeletion": true,
    })
}

/// The labels and annotations a copy must carry: the resource's, and for annotations the two
/// of the distribution.
fn managed_metadata(
    distribution: &ResourceDistribution,
    resource: &Resource<'_>,
    hash: &str,
) -> (BTreeMap<String, String>, BTreeMap<String, String>) {
    let labels = resource.string_map("labels");
    let mut annotations = resource.string_map("annotations");
    annotations.insert(RESOURCE_DISTRIBUTION_HASH_CODE.into(), hash.to_owned());
    annotations.insert(
        RESOURCE_DISTRIBUTION_SOURCE.into(),
        distribution.metadata.name.clone().unwrap_or_default(),
    );
    (labels, annotations)
}

/// The copy of `resource` for `namespace`, whole, as it is created.
pub fn desired_copy(
    distribution: &ResourceDistribution,
    resource: &Resource<'_>,
    namespace: &str,
    hash: &str,
) -> Value {
    let (labels, annotations) = managed_metadata(distribution, resource, hash);
    let mut metadata = json!({
        "name": resource.name,
        "namespace": namespace,
        "annotations": annotations,
        "ownerReferences": [owner_reference(distribution)],
    });
    if !labels.is_empty() {
        metadata["labels"] = json!(labels);
    }
    let mut object = content(resource.kind, resource.body);
    object.insert("apiVersion".into(), json!("v1"));
    object.insert("kind".into(), json!(resource.kind.name()));
    object.insert("metadata".into(), metadata);
    Value::Object(object)
}

fn is_the_resource(object: &Value, resource: &Resource<'_>) -> bool {
    meta_str(object, "name") == resource.name
        && object.get("kind").and_then(Value::as_str).unwrap_or(resource.kind.name())
            == resource.kind.name()
}

/// Where `object` (of the resource's kind and name) stands against the copy it should be.
pub fn copy_state(
    distribution: &ResourceDistribution,
    resource: &Resource<'_>,
    hash: &str,
    object: &Value,
) -> CopyState {
    let uid = distribution.metadata.uid.as_deref().unwrap_or_default();
    if controller_uid(object) != Some(uid) || uid.is_empty() {
        return CopyState::Conflict(ConflictCause::NotOwned);
    }
    let name = distribution.metadata.name.as_deref().unwrap_or_default();
    if annotation(object, RESOURCE_DISTRIBUTION_SOURCE) != Some(name) {
        return CopyState::Conflict(ConflictCause::SourceChanged);
    }
    let same_content = object
        .as_object()
        .is_some_and(|o| content(resource.kind, o) == content(resource.kind, resource.body));
    let current = annotation(object, RESOURCE_DISTRIBUTION_HASH_CODE) == Some(hash);
    if current && !same_content {
        return CopyState::Conflict(ConflictCause::Edited);
    }
    let (labels, annotations) = managed_metadata(distribution, resource, hash);
    let carries = |key: &str, wanted: &BTreeMap<String, String>| {
        wanted.iter().all(|(k, v)| {
            meta(object).get(key).and_then(|m| m.get(k)).and_then(Value::as_str) == Some(v)
        })
    };
    let owned_as_wanted =
        meta(object).get("ownerReferences").and_then(Value::as_array).and_then(|refs| {
            refs.iter().find(|r| r.get("uid").and_then(Value::as_str) == Some(uid))
        }) == Some(&owner_reference(distribution));
    if same_content
        && carries("labels", &labels)
        && carries("annotations", &annotations)
        && owned_as_wanted
    {
        CopyState::InSync
    } else {
        CopyState::Stale
    }
}

/// The merge patch that brings `object` (the distribution's copy) up to date: the body
/// replaced, the managed labels and annotations set, the ownerReference made the wanted one.
fn update_patch(
    distribution: &ResourceDistribution,
    resource: &Resource<'_>,
    hash: &str,
    object: &Value,
) -> Value {
    let old = object.as_object().map(|o| content(resource.kind, o)).unwrap_or_default();
    let new = content(resource.kind, resource.body);
    let mut patch = match crate::merge_patch::replacing(&Value::Object(old), &Value::Object(new)) {
        Value::Object(map) => map,
        _ => Map::new(),
    };
    let (labels, annotations) = managed_metadata(distribution, resource, hash);
    let uid = distribution.metadata.uid.as_deref().unwrap_or_default();
    let mut owners: Vec<Value> =
        meta(object).get("ownerReferences").and_then(Value::as_array).cloned().unwrap_or_default();
    match owners.iter_mut().find(|r| r.get("uid").and_then(Value::as_str) == Some(uid)) {
        Some(own) => *own = owner_reference(distribution),
        None => owners.push(owner_reference(distribution)),
    }
    let mut metadata = json!({ "annotations": annotations, "ownerReferences": owners });
    if !labels.is_empty() {
        metadata["labels"] = json!(labels);
    }
    patch.insert("metadata".into(), metadata);
    Value::Object(patch)
}

/// What one target namespace comes to this round.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Outcome {
    InSync,
    Written(Operation),
    Missing,
    Conflict(ConflictCause),
}

/// The plan for the snapshot's distribution.
pub fn plan(snapshot: &Snapshot, now: Timestamp) -> Plan<ResourceDistributionStatus> {
    let distribution = &snapshot.distribution;
    let mut plan = Plan::empty(ControllerExpectations::default());
    let resource = match Resource::parse(&distribution.spec.resource.0) {
        Ok(resource) => resource,
        Err(err) => {
            plan.events.push(Event {
                type_: EventType::Warning,
                reason: "InvalidResource".into(),
                message: format!("spec.resource: {err}"),
                after_action: None,
            });
            return plan;
        }
    };
    let targets = match target_namespaces(&distribution.spec.targets, &snapshot.namespaces) {
        Ok(targets) => targets,
        Err(err) => {
            plan.events.push(Event {
                type_: EventType::Warning,
                reason: "InvalidTargets".into(),
                message: format!("spec.targets.namespaceSelector: {err}"),
                after_action: None,
            });
            return plan;
        }
    };
    let hash = source_hash(&distribution.spec.resource.0);
    let kind = resource.kind.object_kind();
    let uid = distribution.metadata.uid.as_deref().unwrap_or_default();
    let existing: BTreeMap<&str, &Value> = snapshot
        .copies
        .iter()
        .filter(|o| is_the_resource(o, &resource))
        .map(|o| (meta_str(o, "namespace"), o.as_ref()))
        .collect();
    let namespaces: BTreeMap<&str, &NamespaceView> =
        snapshot.namespaces.iter().map(|ns| (ns.name.as_str(), ns)).collect();

    let mut outcomes: BTreeMap<&str, Outcome> = BTreeMap::new();
    let (mut creates, mut patches, mut deletes) = (Vec::new(), Vec::new(), Vec::new());
    for namespace in &targets {
        let live = namespaces.get(namespace.as_str()).filter(|ns| !ns.terminating);
        let outcome = match (live, existing.get(namespace.as_str())) {
            (None, _) => Outcome::Missing,
            (Some(_), None) => {
                creates.push(Action::CreateObject {
                    target: Target::new(kind, Some(namespace), resource.name),
                    body: Arc::new(desired_copy(distribution, &resource, namespace, &hash)),
                });
                Outcome::Written(Operation::Create)
            }
            (Some(_), Some(object)) => match copy_state(distribution, &resource, &hash, object) {
                CopyState::InSync => Outcome::InSync,
                CopyState::Conflict(cause) => Outcome::Conflict(cause),
                CopyState::Stale => {
                    let guard = match meta_str(object, "resourceVersion") {
                        "" => Guard::None,
                        rv => Guard::ResourceVersion(rv.to_owned()),
                    };
                    patches.push(Action::PatchObject {
                        target: Target::new(kind, Some(namespace), resource.name).guarded(guard),
                        subresource: Subresource::Main,
                        patch: Patch::merge(update_patch(distribution, &resource, &hash, object)),
                    });
                    Outcome::Written(Operation::Update)
                }
            },
        };
        outcomes.insert(namespace, outcome);
    }
    // Copies this distribution controls that no target wants: in a namespace no longer
    // targeted, or of another kind or name than the resource now has.
    let mut retired: Vec<&Value> = snapshot
        .copies
        .iter()
        .map(Arc::as_ref)
        .filter(|o| !uid.is_empty() && controller_uid(o) == Some(uid))
        .filter(|o| !targets.contains(meta_str(o, "namespace")) || !is_the_resource(o, &resource))
        .filter(|o| namespaces.get(meta_str(o, "namespace")).is_some_and(|ns| !ns.terminating))
        .collect();
    retired.sort_by_key(|o| (meta_str(o, "namespace"), meta_str(o, "name")));
    let mut delete_failures = Vec::new();
    for object in retired {
        let namespace = meta_str(object, "namespace");
        let kind = match object.get("kind").and_then(Value::as_str) {
            Some("ConfigMap") => ObjectKind::CONFIG_MAP,
            Some("Secret") => ObjectKind::SECRET,
            _ => kind,
        };
        let guard = match meta_str(object, "uid") {
            "" => Guard::None,
            uid => Guard::Uid(uid.to_owned()),
        };
        deletes.push(Action::DeleteObject {
            target: Target::new(kind, Some(namespace), meta_str(object, "name")).guarded(guard),
        });
        if let Some(failure) = snapshot
            .failures
            .iter()
            .find(|f| f.namespace == namespace && f.operation == Operation::Delete)
        {
            delete_failures.push(failure);
        }
    }
    plan.actions.extend(creates);
    plan.actions.extend(patches);
    plan.actions.extend(deletes);

    let status = new_status(distribution, &outcomes, &snapshot.failures, &delete_failures, now);
    let old_status = distribution.status.clone().unwrap_or_default();
    let old_conflicts = failed_namespaces(
        &old_status.conditions,
        &ResourceDistributionConditionType::ConflictOccurred,
    );
    let new_conflicts: Vec<&str> = outcomes
        .iter()
        .filter(|(ns, o)| matches!(o, Outcome::Conflict(_)) && !old_conflicts.contains(*ns))
        .map(|(ns, _)| *ns)
        .collect();
    if !new_conflicts.is_empty() {
        plan.events.push(Event {
            type_: EventType::Warning,
            reason: "ConflictOccurred".into(),
            message: format!(
                "{} {} left alone in {}: see status.conditions[type=ConflictOccurred]",
                resource.kind.name(),
                resource.name,
                name_list(&new_conflicts)
            ),
            after_action: None,
        });
    }
    if distribution.status.as_ref() != Some(&status) {
        plan.status = Some(status);
    }
    plan
}

/// `a, b, c` or `a, b, c and 7 more`.
fn name_list(names: &[&str]) -> String {
    const SHOWN: usize = 5;
    let shown = names.iter().take(SHOWN).copied().collect::<Vec<_>>().join(", ");
    match names.len().saturating_sub(SHOWN) {
        0 => shown,
        more => format!("{shown} and {more} more"),
    }
}

fn failed_namespaces<'s>(
    conditions: &'s [ResourceDistributionCondition],
    type_: &ResourceDistributionConditionType,
) -> BTreeSet<&'s str> {
    conditions
        .iter()
        .filter(|c| &c.type_ == type_)
        .flat_map(|c| c.failed_namespaces.iter().map(String::as_str))
        .collect()
}

/// Upstream's six conditions, in its order.
const CONDITION_ORDER: [ResourceDistributionConditionType; 6] = [
    ResourceDistributionConditionType::GetResourceFailed,
    ResourceDistributionConditionType::CreateResourceFailed,
    ResourceDistributionConditionType::UpdateResourceFailed,
    ResourceDistributionConditionType::DeleteResourceFailed,
    ResourceDistributionConditionType::ConflictOccurred,
    ResourceDistributionConditionType::NamespaceNotExists,
];

fn condition_of(operation: Operation) -> usize {
    match operation {
        Operation::Get => 0,
        Operation::Create => 1,
        Operation::Update => 2,
        Operation::Delete => 3,
    }
}

fn new_status(
    distribution: &ResourceDistribution,
    outcomes: &BTreeMap<&str, Outcome>,
    failures: &[Failure],
    delete_failures: &[&Failure],
    now: Timestamp,
) -> ResourceDistributionStatus {
    // Per condition: the namespaces and the reasons (deduplicated, in order met).
    let mut failed: [(Vec<String>, Vec<String>); 6] = Default::default();
    let mut note = |index: usize, namespace: &str, reason: &str| {
        let (namespaces, reasons) = &mut failed[index];
        namespaces.push(namespace.to_owned());
        if !reasons.iter().any(|r| r == reason) {
            reasons.push(reason.to_owned());
        }
    };
    let mut succeeded = 0;
    for (namespace, outcome) in outcomes {
        match outcome {
            Outcome::InSync => succeeded += 1,
            Outcome::Missing => note(5, namespace, NAMESPACE_MISSING),
            Outcome::Conflict(cause) => note(4, namespace, cause.reason()),
            Outcome::Written(operation) => {
                let last = failures
                    .iter()
                    .find(|f| f.namespace == *namespace && f.operation == *operation);
                match last {
                    Some(failure) => note(condition_of(*operation), namespace, &failure.message),
                    None => succeeded += 1,
                }
            }
        }
    }
    for failure in delete_failures {
        note(condition_of(Operation::Delete), &failure.namespace, &failure.message);
    }
    let desired = i32::try_from(outcomes.len()).unwrap_or(i32::MAX);
    let old = distribution.status.as_ref().map(|s| s.conditions.as_slice()).unwrap_or_default();
    let conditions = CONDITION_ORDER
        .iter()
        .zip(failed)
        .map(|(type_, (mut namespaces, reasons))| {
            namespaces.sort();
            namespaces.dedup();
            let (status, reason) = if namespaces.is_empty() {
                (ResourceDistributionConditionStatus::False, SUCCEEDED.to_owned())
            } else {
                (ResourceDistributionConditionStatus::True, reasons.join("; "))
            };
            let before = old.iter().find(|c| &c.type_ == type_);
            let last_transition_time = match before {
                Some(c) if c.status == status && c.last_transition_time.is_some() => {
                    c.last_transition_time.clone()
                }
                _ => Some(Time(now)),
            };
            ResourceDistributionCondition {
                type_: type_.clone(),
                status,
                last_transition_time,
                reason,
                failed_namespaces: namespaces,
            }
        })
        .collect();
    ResourceDistributionStatus {
        desired,
        succeeded,
        failed: desired - succeeded,
        observed_generation: distribution.metadata.generation.unwrap_or_default(),
        conditions,
    }
}

#[cfg(test)]
mod tests;
