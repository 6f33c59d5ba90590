//! A subset's workload: which kind the template makes, and the object it should be.
//!
//! [`desired_workload`] stamps the template for one subset as upstream's `ApplySubsetTemplate`
//! does: the template's spec whole, the UnitedDeployment's selector plus
//! `apps.kruise.io/subset-name`, the replicas and partition, the subset and revision labels
//! on the workload and its pods, the subset's node selector term ANDed into every required
//! node affinity term, its tolerations appended, and its `patch` strategically merged into the
//! pod template last (so it wins).

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::PodTemplateSpec;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference;
use kruise_api::apps::v1beta1::{Subset, UnitedDeployment};
use kruise_api::well_known::annotations::SUBSET_PATCH;
use kruise_api::well_known::labels::{CONTROLLER_REVISION_HASH, SUBSET_NAME};
use serde_json::{Map, Value, json};

use crate::plan::ObjectKind;
use crate::revision::hash::fnv1a_32;
use crate::smp::{PatchSchema, apply_patch};

/// The kind of workload a UnitedDeployment's template makes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum SubsetKind {
    /// `statefulSetTemplate`: apps/v1 StatefulSet.
    StatefulSet,
    /// `advancedStatefulSetTemplate`: apps.kruise.io/v1beta1 StatefulSet.
    AdvancedStatefulSet,
    /// `cloneSetTemplate`: apps.kruise.io/v1beta1 CloneSet.
    CloneSet,
    /// `deploymentTemplate`: apps/v1 Deployment.
    Deployment,
}

impl SubsetKind {
    /// Every kind, in upstream's order of precedence.
    pub const ALL: [SubsetKind; 4] =
        [Self::StatefulSet, Self::AdvancedStatefulSet, Self::CloneSet, Self::Deployment];

    /// Upstream's name of the kind, as Events print it.
    pub fn type_name(self) -> &'static str {
        match self {
            Self::StatefulSet => "StatefulSet",
            Self::AdvancedStatefulSet => "AdvancedStatefulSet",
            Self::CloneSet => "CloneSet",
            Self::Deployment => "Deployment",
        }
    }

    /// The API kind.
    pub fn object_kind(self) -> ObjectKind {
        match self {
            Self::StatefulSet => ObjectKind::STATEFUL_SET,
            Self::AdvancedStatefulSet => ObjectKind::ADVANCED_STATEFUL_SET,
            Self::CloneSet => ObjectKind::CLONE_SET,
            Self::Deployment => ObjectKind::DEPLOYMENT,
        }
    }

    /// The template field this kind comes from.
    pub fn template_field(self) -> &'static str {
        match self {
            Self::StatefulSet => "statefulSetTemplate",
            Self::AdvancedStatefulSet => "advancedStatefulSetTemplate",
            Self::CloneSet => "cloneSetTemplate",
            Self::Deployment => "deploymentTemplate",
        }
    }
}

/// The kind the UnitedDeployment's template makes (upstream's precedence when several are
/// set; `None` when none is).
pub fn template_kind(ud: &UnitedDeployment) -> Option<SubsetKind> {
    let t = &ud.spec.template;
    if t.stateful_set_template.is_some() {
        Some(SubsetKind::StatefulSet)
    } else if t.advanced_stateful_set_template.is_some() {
        Some(SubsetKind::AdvancedStatefulSet)
    } else if t.clone_set_template.is_some() {
        Some(SubsetKind::CloneSet)
    } else if t.deployment_template.is_some() {
        Some(SubsetKind::Deployment)
    } else {
        None
    }
}

/// The template's metadata and spec, as JSON.
fn template_parts(ud: &UnitedDeployment, kind: SubsetKind) -> (Value, Value) {
    let t = &ud.spec.template;
    let pair = |meta: Value, spec: Value| (meta, spec);
    let to = |v: serde_json::Result<Value>| v.unwrap_or(Value::Null);
    match kind {
        SubsetKind::StatefulSet => {
            t.stateful_set_template.as_ref().map_or_else(Default::default, |x| {
                pair(to(serde_json::to_value(&x.metadata)), to(serde_json::to_value(&x.spec)))
            })
        }
        SubsetKind::AdvancedStatefulSet => {
            t.advanced_stateful_set_template.as_ref().map_or_else(Default::default, |x| {
                pair(to(serde_json::to_value(&x.metadata)), to(serde_json::to_value(&x.spec)))
            })
        }
        SubsetKind::CloneSet => t.clone_set_template.as_ref().map_or_else(Default::default, |x| {
            pair(to(serde_json::to_value(&x.metadata)), to(serde_json::to_value(&x.spec)))
        }),
        SubsetKind::Deployment => {
            t.deployment_template.as_ref().map_or_else(Default::default, |x| {
                pair(to(serde_json::to_value(&x.metadata)), to(serde_json::to_value(&x.spec)))
            })
        }
    }
}

/// The characters Kubernetes draws a `generateName` suffix from.
const SUFFIX_ALPHABET: &[u8] = b"bcdfghjklmnpqrstvwxz2456789";

/// The workload's name: `<ud>-<subset>-<5 characters>` as upstream's `generateName` makes it
/// (the prefix cut to 58 characters), but with the suffix drawn from the UnitedDeployment's UID
/// and the subset's name, so that planning twice never makes two workloads for one subset.
pub fn workload_name(ud: &UnitedDeployment, subset: &str) -> String {
    let name = ud.metadata.name.as_deref().unwrap_or_default();
    let mut prefix = format!("{name}-{subset}-");
    if !crate::names::name_is_dns_subdomain(&prefix, true).is_empty() {
        prefix = format!("{name}-");
    }
    prefix.truncate(58);
    let uid = ud.metadata.uid.as_deref().unwrap_or_default();
    let mut seed = fnv1a_32(format!("{uid}/{subset}").as_bytes());
    let mut suffix = String::with_capacity(5);
    for _ in 0..5 {
        let index = usize::try_from(seed % 27).unwrap_or(0);
        suffix.push(char::from(SUFFIX_ALPHABET[index]));
        seed /= 27;
    }
    format!("{prefix}{suffix}")
}

/// Why a subset's workload cannot be built.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum SubsetError {
    /// The subset's `patch` does not apply to the pod template.
    #[error("subset {subset}: patch does not apply to the pod template: {reason}")]
    Patch {
        /// The subset.
        subset: String,
        /// Why.
        reason: String,
    },
}

fn string_map(value: Option<&Value>) -> Map<String, Value> {
    value.and_then(Value::as_object).cloned().unwrap_or_default()
}

/// What one subset's workload should be, from the template at `revision`; `existing` is the
/// workload as it is (its labels and annotations are kept under the template's).
pub fn desired_workload(
    ud: &UnitedDeployment,
    kind: SubsetKind,
    subset: &Subset,
    revision: &str,
    replicas: i32,
    partition: i32,
    existing: Option<&Value>,
) -> Result<Value, SubsetError> {
    let (template_meta, spec) = template_parts(ud, kind);
    let mut spec = match spec {
        Value::Object(spec) => spec,
        _ => Map::new(),
    };
    let name = ud.metadata.name.clone().unwrap_or_default();
    let existing_meta = existing.and_then(|e| e.get("metadata"));

    // Labels: what is there, the template's, the selector's, the revision and the subset.
    let mut labels = string_map(existing_meta.and_then(|m| m.get("labels")));
    labels.extend(string_map(template_meta.get("labels")));
    if let Some(selector) = ud.spec.selector.as_ref().and_then(|s| s.match_labels.as_ref()) {
        for (k, v) in selector {
            labels.insert(k.clone(), json!(v));
        }
    }
    labels.insert(CONTROLLER_REVISION_HASH.into(), json!(revision));
    labels.insert(SUBSET_NAME.into(), json!(subset.name));
    let patch_text = subset.patch.as_ref().map(|p| p.0.to_string()).unwrap_or_default();
    let mut annotations = string_map(existing_meta.and_then(|m| m.get("annotations")));
    annotations.extend(string_map(template_meta.get("annotations")));
    annotations.insert(SUBSET_PATCH.into(), json!(patch_text));

    // The selector: the UnitedDeployment's, narrowed to the subset.
    let mut selector = serde_json::to_value(&ud.spec.selector).unwrap_or(Value::Null);
    if !selector.is_object() {
        selector = json!({});
    }
    selector["matchLabels"][SUBSET_NAME] = json!(subset.name);
    spec.insert("selector".into(), selector);
    spec.insert("replicas".into(), json!(replicas));
    set_partition(&mut spec, kind, partition);

    // The pod template.
    let mut template = spec.remove("template").unwrap_or_else(|| json!({}));
    if !template.is_object() {
        template = json!({});
    }
    template["metadata"]["labels"][SUBSET_NAME] = json!(subset.name);
    template["metadata"]["labels"][CONTROLLER_REVISION_HASH] = json!(revision);
    attach_node_affinity(&mut template, subset);
    if !subset.tolerations.is_empty() {
        let mut tolerations =
            template["spec"]["tolerations"].as_array().cloned().unwrap_or_default();
        tolerations
            .extend(subset.tolerations.iter().map(|t| serde_json::to_value(t).unwrap_or_default()));
        template["spec"]["tolerations"] = Value::Array(tolerations);
    }
    if let Some(patch) = subset.patch.as_ref().filter(|p| !p.0.is_null()) {
        template = apply_patch(&template, &patch.0, PatchSchema::PodTemplateSpec).map_err(|e| {
            SubsetError::Patch { subset: subset.name.clone(), reason: e.to_string() }
        })?;
    }
    spec.insert("template".into(), template);

    let kind_info = kind.object_kind();
    let owner = OwnerReference {
        api_version: "apps.kruise.io/v1beta1".into(),
        kind: "UnitedDeployment".into(),
        name: name.clone(),
        uid: ud.metadata.uid.clone().unwrap_or_default(),
        controller: Some(true),
        block_owner_deletion: Some(true),
    };
    let workload_name = existing_meta
        .and_then(|m| m.get("name"))
        .and_then(Value::as_str)
        .map_or_else(|| workload_name(ud, &subset.name), str::to_owned);
    Ok(json!({
        "apiVersion": kind_info.api_version(),
        "kind": kind_info.kind,
        "metadata": {
            "name": workload_name,
            "namespace": ud.metadata.namespace.clone().unwrap_or_default(),
            "labels": labels,
            "annotations": annotations,
            "ownerReferences": [owner],
        },
        "spec": spec,
    }))
}

/// Writes the partition where the kind keeps it (a Deployment has none).
fn set_partition(spec: &mut Map<String, Value>, kind: SubsetKind, partition: i32) {
    let strategy = spec.entry("updateStrategy").or_insert_with(|| json!({}));
    if !strategy.is_object() {
        *strategy = json!({});
    }
    match kind {
        SubsetKind::StatefulSet => {
            let kind_of = strategy.get("type").and_then(Value::as_str).unwrap_or_default();
            if kind_of.is_empty() || kind_of == "RollingUpdate" {
                strategy["type"] = json!("RollingUpdate");
                strategy["rollingUpdate"]["partition"] = json!(partition);
            }
        }
        SubsetKind::AdvancedStatefulSet | SubsetKind::CloneSet => {
            strategy["rollingUpdate"]["partition"] = json!(partition);
        }
        SubsetKind::Deployment => {
            if strategy.as_object().is_some_and(Map::is_empty) {
                spec.remove("updateStrategy");
            }
        }
    }
}

/// ANDs the subset's `matchExpressions` into every required node selector term (adding one
/// term when there is none); its `matchFields` are left out, as upstream does.
fn attach_node_affinity(template: &mut Value, subset: &Subset) {
    let expressions = subset.node_selector_term.match_expressions.clone().unwrap_or_default();
    if expressions.is_empty() {
        return;
    }
    let extra: Vec<Value> =
        expressions.iter().map(|e| serde_json::to_value(e).unwrap_or_default()).collect();
    let required = &mut template["spec"]["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"];
    let mut terms = required["nodeSelectorTerms"].as_array().cloned().unwrap_or_default();
    if terms.is_empty() {
        terms.push(json!({}));
    }
    for term in &mut terms {
        let mut list = term["matchExpressions"].as_array().cloned().unwrap_or_default();
        list.extend(extra.iter().cloned());
        term["matchExpressions"] = Value::Array(list);
    }
    required["nodeSelectorTerms"] = Value::Array(terms);
}

/// A workload as the planner reads it.
#[derive(Clone, Debug, PartialEq)]
pub struct ObservedWorkload {
    /// Its name.
    pub name: String,
    /// Its UID.
    pub uid: String,
    /// Its resourceVersion.
    pub resource_version: String,
    /// The subset it runs (`apps.kruise.io/subset-name`), if labelled.
    pub subset: Option<String>,
    /// The revision it was stamped from (`apps.kruise.io/controller-revision-hash`).
    pub revision: String,
    /// `apps.kruise.io/subset-patch`.
    pub patch: String,
    /// `spec.replicas`.
    pub replicas: i32,
    /// The partition as written.
    pub partition: i32,
    /// `status.replicas`.
    pub status_replicas: i32,
    /// `status.readyReplicas`.
    pub ready_replicas: i32,
    /// When it was created.
    pub created: Option<jiff::Timestamp>,
    /// Being deleted.
    pub deleting: bool,
}

/// Reads a workload of `kind`.
pub fn observe(kind: SubsetKind, object: &Value) -> ObservedWorkload {
    let meta = &object["metadata"];
    let text = |v: &Value| v.as_str().unwrap_or_default().to_owned();
    let int = |v: &Value| v.as_i64().and_then(|n| i32::try_from(n).ok()).unwrap_or(0);
    let labels = &meta["labels"];
    let spec = &object["spec"];
    let partition = match kind {
        SubsetKind::Deployment => 0,
        SubsetKind::CloneSet => {
            let p = &spec["updateStrategy"]["rollingUpdate"]["partition"];
            match p {
                Value::String(s) => {
                    s.strip_suffix('%').and_then(|n| n.parse::<i64>().ok()).map_or(0, |pct| {
                        let replicas = i64::from(int(&spec["replicas"]));
                        i32::try_from((replicas * pct + 99) / 100).unwrap_or(0)
                    })
                }
                other => int(other),
            }
        }
        _ => int(&spec["updateStrategy"]["rollingUpdate"]["partition"]),
    };
    let status = &object["status"];
    ObservedWorkload {
        name: text(&meta["name"]),
        uid: text(&meta["uid"]),
        resource_version: text(&meta["resourceVersion"]),
        subset: labels[SUBSET_NAME].as_str().filter(|s| !s.is_empty()).map(str::to_owned),
        revision: text(&labels[CONTROLLER_REVISION_HASH]),
        patch: text(&meta["annotations"][SUBSET_PATCH]),
        replicas: int(&spec["replicas"]),
        partition,
        status_replicas: int(&status["replicas"]),
        ready_replicas: int(&status["readyReplicas"]),
        created: meta["creationTimestamp"].as_str().and_then(|t| t.parse().ok()),
        deleting: !meta["deletionTimestamp"].is_null(),
    }
}

/// The pod template of a desired workload.
pub fn pod_template(workload: &Value) -> Option<PodTemplateSpec> {
    serde_json::from_value(workload["spec"]["template"].clone()).ok()
}

/// The part of a workload the planner writes: labels, annotations and spec.
pub fn written_part(workload: &Value) -> Value {
    json!({
        "metadata": {
            "labels": workload["metadata"]["labels"].clone(),
            "annotations": workload["metadata"]["annotations"].clone(),
        },
        "spec": workload["spec"].clone(),
    })
}

/// Labels as a map, for matching.
pub fn labels_of(object: &Value) -> BTreeMap<String, String> {
    object["metadata"]["labels"]
        .as_object()
        .map(|m| m.iter().filter_map(|(k, v)| Some((k.clone(), v.as_str()?.to_owned()))).collect())
        .unwrap_or_default()
}
