//! A compact form of a Pod for the shared cache.
//!
//! A decoded `k8s_openapi` Pod takes about 8 KiB even when small: the `PodSpec` and every
//! `Container` are large structs of optional fields (about 2.4 KiB each before a single
//! string), and lists are decoded with room to grow. Controllers read a pod's metadata and
//! status often (indexes, adoption, readiness) but its spec only when they plan for its
//! owner. [`CachedPod`] therefore keeps metadata decoded, with lists trimmed to their length,
//! and the spec and status as compact JSON text (`shared_text`): the spec's one copy shared by
//! the pods whose specs differ only in their own names, the status's keys and words shared by
//! the pods whose statuses differ only in their values (decoded, a `PodStatus` is 616 bytes
//! before any string, each `ContainerStatus` 752 and each `PodCondition` 160). The planners read what
//! they need of both through the facts ([`CachedPod::planner_facts`]), decoded once per pod
//! version. Only `managedFields` is dropped (no controller reads it): [`CachedPod::to_pod`]
//! gives back the rest of the Pod unchanged.

mod shared_text;

use std::borrow::Cow;
use std::sync::{Arc, OnceLock};

use k8s_openapi::api::core::v1::{Pod, PodSpec, PodStatus};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, OwnerReference, Time};
use kruise_core::workload::{PodFacts, PodSource, SnapshotPod};
use kube::Resource;
use serde::{Deserialize, Deserializer};
use shared_text::{Own, SharedText};

/// A Pod as the cache keeps it: metadata decoded, the spec and status encoded.
///
/// The planners' facts about the pod ([`CachedPod::planner_facts`]) are read once, on first
/// use, and kept with it. A pod in a cache is shared and never changed (a new version replaces
/// it), so they stay its facts; a clone starts without them, and so does a pod whose metadata
/// is borrowed mutably through [`Resource::meta_mut`].
#[derive(Debug, Default)]
pub struct CachedPod {
    /// The pod's metadata.
    pub metadata: ObjectMeta,
    /// The status as JSON, written by this module from a decoded `PodStatus`; `None` when
    /// the pod had none.
    status: Option<SharedText>,
    /// What filters read of the status on every change, kept decoded beside its text.
    status_flags: StatusFlags,
    /// The spec as JSON; `None` when the pod had none.
    spec: Option<SharedText>,
    /// What the planners read of it, once read.
    derived: OnceLock<Derived>,
}

/// What is read of a cached pod once, for every plan of its owner.
#[derive(Debug)]
struct Derived {
    /// Shared with every snapshot of the pod.
    facts: Arc<PodFacts>,
    node_name: Option<Box<str>>,
}

impl Clone for CachedPod {
    fn clone(&self) -> Self {
        Self {
            metadata: self.metadata.clone(),
            status: self.status.clone(),
            status_flags: self.status_flags.clone(),
            spec: self.spec.clone(),
            derived: OnceLock::new(),
        }
    }
}

impl PartialEq for CachedPod {
    /// The same pod; what was read of it follows.
    fn eq(&self, other: &Self) -> bool {
        self.metadata == other.metadata && self.status == other.status && self.spec == other.spec
    }
}

/// `status.phase` and whether the pod is ready, read when the pod arrives.
#[derive(Clone, Debug, Default, PartialEq)]
struct StatusFlags {
    phase: Option<Phase>,
    /// A `Ready` condition is `True`.
    ready: bool,
}

/// A phase: one of Kubernetes' without a copy, another as sent.
#[derive(Clone, Debug, PartialEq)]
enum Phase {
    Known(&'static str),
    Other(Box<str>),
}

impl StatusFlags {
    fn of(status: &PodStatus) -> Self {
        const PHASES: [&str; 5] = ["Pending", "Running", "Succeeded", "Failed", "Unknown"];
        let phase =
            status.phase.as_deref().map(|phase| match PHASES.iter().find(|p| **p == phase) {
                Some(known) => Phase::Known(known),
                None => Phase::Other(phase.into()),
            });
        let ready =
            status.conditions.iter().flatten().any(|c| c.type_ == "Ready" && c.status == "True");
        Self { phase, ready }
    }
}

/// The status text of a pod: `PodStatus` encoded here, so that it decodes again.
fn status_text(status: &PodStatus) -> SharedText {
    // Serialising a decoded PodStatus cannot fail: every field is a string, number, bool,
    // map with string keys or list of those.
    let text = serde_json::to_string(status).unwrap_or_else(|_| "{}".to_owned());
    SharedText::new(&text, Own::Status)
}

/// The spec of a cached pod could not be decoded again.
#[derive(Debug, thiserror::Error)]
#[error("pod {namespace}/{name}: cached spec does not decode: {source}")]
pub struct SpecDecodeError {
    /// The pod's namespace.
    pub namespace: String,
    /// The pod's name.
    pub name: String,
    /// What serde_json reported.
    #[source]
    pub source: serde_json::Error,
}

impl CachedPod {
    /// The compact form of `pod`.
    pub fn from_pod(pod: Pod) -> Self {
        let Pod { mut metadata, spec, status } = pod;
        // Dropped here rather than by the cache's strip hook, so that a long list never
        // holds every pod's managedFields at once.
        metadata.managed_fields = None;
        // Serialising a decoded PodSpec to a String cannot fail: every field is a string,
        // number, bool, map with string keys or list of those.
        let spec = spec.and_then(|s| serde_json::to_string(&s).ok());
        let pod_name = metadata.name.as_deref().unwrap_or("");
        let spec = spec.map(|text| SharedText::new(&text, Own::Spec { pod_name }));
        let status_flags = status.as_ref().map(StatusFlags::of).unwrap_or_default();
        let status = status.as_ref().map(status_text);
        trim_meta(&mut metadata);
        Self { metadata, status, status_flags, spec, derived: OnceLock::new() }
    }

    /// The pod's status, decoded.
    pub fn status(&self) -> Option<PodStatus> {
        let text = self.status.as_ref()?.text();
        // The text was encoded here from a decoded `PodStatus` (`status_text`), and decodes.
        serde_json::from_str(&text)
            .inspect_err(|err| {
                tracing::error!(%err, pod = ?self.metadata.name, "a cached pod's status does not decode");
            })
            .ok()
    }

    /// The pod's `status.phase` (without decoding the status).
    pub fn phase(&self) -> Option<&str> {
        match self.status_flags.phase.as_ref()? {
            Phase::Known(phase) => Some(phase),
            Phase::Other(phase) => Some(phase),
        }
    }

    /// Whether a `Ready` condition is `True` (without decoding the status).
    pub fn is_ready(&self) -> bool {
        self.status_flags.ready
    }

    /// The planners' facts about the pod ([`PodFacts`]) and its `spec.nodeName`, read on the
    /// first call (the spec decoded once) and kept.
    fn derived(&self) -> Result<&Derived, SpecDecodeError> {
        if let Some(derived) = self.derived.get() {
            return Ok(derived);
        }
        let pod = self.to_pod()?;
        let node_name = pod.spec.as_ref().and_then(|s| s.node_name.as_deref()).map(Box::from);
        let derived = Derived { facts: Arc::new(PodFacts::new(&pod)), node_name };
        // Another thread may have set them meanwhile: both read the same text.
        Ok(self.derived.get_or_init(|| derived))
    }

    /// The planners' facts about the pod, read once (see [`CachedPod`]).
    pub fn planner_facts(&self) -> Result<&PodFacts, SpecDecodeError> {
        self.derived().map(|d| d.facts.as_ref())
    }

    /// The pod for a planner's snapshot: its facts now, the whole pod decoded only if the
    /// planner reads it.
    pub fn snapshot_pod(self: &Arc<Self>) -> Result<SnapshotPod, SpecDecodeError> {
        let facts = Arc::clone(&self.derived()?.facts);
        Ok(SnapshotPod::lazy(Arc::clone(self) as Arc<dyn PodSource>, facts))
    }

    /// `spec.nodeName`, read once with the facts; `None` while unscheduled.
    pub fn scheduled_node(&self) -> Result<Option<&str>, SpecDecodeError> {
        self.derived().map(|d| d.node_name.as_deref())
    }

    /// The whole Pod again (the spec decoded).
    pub fn to_pod(&self) -> Result<Pod, SpecDecodeError> {
        Ok(Pod { metadata: self.metadata.clone(), spec: self.spec()?, status: self.status() })
    }

    /// The pod's spec, decoded.
    pub fn spec(&self) -> Result<Option<PodSpec>, SpecDecodeError> {
        let Some(text) = self.spec_text() else {
            return Ok(None);
        };
        serde_json::from_str(&text).map(Some).map_err(|source| SpecDecodeError {
            namespace: self.metadata.namespace.clone().unwrap_or_default(),
            name: self.metadata.name.clone().unwrap_or_default(),
            source,
        })
    }

    /// `spec.nodeName` (empty while unscheduled), read from the kept spec text without
    /// decoding the rest of it (and, in the layout servers write, without rebuilding it).
    pub fn node_name(&self) -> String {
        if let Some(node) = self.spec.as_ref().map_or(Some(""), SharedText::node_name_fast) {
            return node.to_owned();
        }
        #[derive(Deserialize)]
        struct NodeOnly {
            #[serde(rename = "nodeName", default)]
            node_name: Option<String>,
        }
        self.spec_text()
            .and_then(|text| serde_json::from_str::<NodeOnly>(&text).ok())
            .and_then(|spec| spec.node_name)
            .unwrap_or_default()
    }

    /// Whether the kept spec text contains `text` anywhere (a cheap filter before decoding).
    pub fn spec_mentions(&self, text: &str) -> bool {
        self.spec_text().is_some_and(|t| t.contains(text))
    }

    /// The spec's JSON text.
    fn spec_text(&self) -> Option<Cow<'_, str>> {
        self.spec.as_ref().map(SharedText::text)
    }

    /// Whether `spec.readinessGates` names `condition_type`, read from the kept spec text:
    /// the text is searched for the name first, and only the gates are decoded.
    pub fn has_readiness_gate(&self, condition_type: &str) -> bool {
        #[derive(Deserialize)]
        struct GatesOnly {
            #[serde(rename = "readinessGates", default)]
            readiness_gates: Option<Vec<k8s_openapi::api::core::v1::PodReadinessGate>>,
        }
        let Some(text) = self.spec_text().filter(|t| t.contains(condition_type)) else {
            return false;
        };
        serde_json::from_str::<GatesOnly>(&text).is_ok_and(|spec| {
            spec.readiness_gates.iter().flatten().any(|g| g.condition_type == condition_type)
        })
    }

    /// A Pod with this pod's metadata and status but no spec: enough for checks that read
    /// only those (phase, conditions, deletion), without decoding the spec.
    pub fn without_spec(&self) -> Pod {
        Pod { metadata: self.metadata.clone(), spec: None, status: self.status() }
    }
}

/// A pod as it arrives, decoded straight into the cached form: the spec kept as the text
/// it came as, `managedFields` skipped without being decoded (they are most of a created
/// pod's metadata).
#[derive(Deserialize)]
struct WirePod {
    #[serde(default)]
    metadata: WireMeta,
    #[serde(default)]
    spec: Option<Box<serde_json::value::RawValue>>,
    #[serde(default)]
    status: Option<PodStatus>,
}

/// A whole Pod as it arrives but without `managedFields`, skipped undecoded: for the pod
/// admission steps, which never read or patch them (they are most of a created pod's
/// metadata). `apiVersion` and `kind` are not checked.
///
/// The spec is boxed: `PodSpec` is 1.5 KiB, and decoding moves each value up through every
/// enclosing level (the review, its request, the object), so a boxed spec moves as a pointer.
#[derive(Deserialize)]
pub(crate) struct PodWithoutManagedFields {
    #[serde(default)]
    metadata: WireMeta,
    #[serde(default)]
    spec: Option<Box<PodSpec>>,
    #[serde(default)]
    status: Option<PodStatus>,
}

impl From<PodWithoutManagedFields> for Pod {
    fn from(pod: PodWithoutManagedFields) -> Self {
        Pod { metadata: pod.metadata.into(), spec: pod.spec.map(|s| *s), status: pod.status }
    }
}

/// `ObjectMeta` without `managedFields`.
#[derive(Default, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub(crate) struct WireMeta {
    annotations: Option<std::collections::BTreeMap<String, String>>,
    creation_timestamp: Option<Time>,
    deletion_grace_period_seconds: Option<i64>,
    deletion_timestamp: Option<Time>,
    finalizers: Option<Vec<String>>,
    generate_name: Option<String>,
    generation: Option<i64>,
    labels: Option<std::collections::BTreeMap<String, String>>,
    name: Option<String>,
    namespace: Option<String>,
    owner_references: Option<Vec<OwnerReference>>,
    resource_version: Option<String>,
    self_link: Option<String>,
    uid: Option<String>,
}

impl From<WireMeta> for ObjectMeta {
    fn from(m: WireMeta) -> Self {
        ObjectMeta {
            annotations: m.annotations,
            creation_timestamp: m.creation_timestamp,
            deletion_grace_period_seconds: m.deletion_grace_period_seconds,
            deletion_timestamp: m.deletion_timestamp,
            finalizers: m.finalizers,
            generate_name: m.generate_name,
            generation: m.generation,
            labels: m.labels,
            managed_fields: None,
            name: m.name,
            namespace: m.namespace,
            owner_references: m.owner_references,
            resource_version: m.resource_version,
            self_link: m.self_link,
            uid: m.uid,
        }
    }
}

impl<'de> Deserialize<'de> for CachedPod {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let wire = WirePod::deserialize(deserializer)?;
        let mut metadata = ObjectMeta::from(wire.metadata);
        trim_meta(&mut metadata);
        let status_flags = wire.status.as_ref().map(StatusFlags::of).unwrap_or_default();
        let status = wire.status.as_ref().map(status_text);
        // A `null` spec is no spec, as when the Pod is decoded.
        let pod_name = metadata.name.as_deref().unwrap_or("");
        let spec = wire
            .spec
            .filter(|raw| raw.get() != "null")
            .map(|raw| SharedText::new(raw.get(), Own::Spec { pod_name }));
        Ok(Self { metadata, status, status_flags, spec, derived: OnceLock::new() })
    }
}

impl Resource for CachedPod {
    type DynamicType = ();
    type Scope = k8s_openapi::NamespaceResourceScope;

    fn kind(_: &()) -> Cow<'_, str> {
        Pod::kind(&())
    }

    fn group(_: &()) -> Cow<'_, str> {
        Pod::group(&())
    }

    fn version(_: &()) -> Cow<'_, str> {
        Pod::version(&())
    }

    fn plural(_: &()) -> Cow<'_, str> {
        Pod::plural(&())
    }

    fn meta(&self) -> &ObjectMeta {
        &self.metadata
    }

    fn meta_mut(&mut self) -> &mut ObjectMeta {
        // The facts read from the old metadata would no longer be the pod's.
        self.derived = OnceLock::new();
        &mut self.metadata
    }
}

impl PodSource for CachedPod {
    fn metadata(&self) -> &ObjectMeta {
        &self.metadata
    }

    fn status(&self) -> Option<Cow<'_, PodStatus>> {
        CachedPod::status(self).map(Cow::Owned)
    }

    fn whole_pod(&self) -> Pod {
        // A snapshot pod comes from `snapshot_pod`, which decoded this same text to read the
        // facts; it decodes again.
        self.to_pod().unwrap_or_else(|err| {
            tracing::error!(%err, "a cached pod's spec decoded once and not again");
            self.without_spec()
        })
    }
}

/// Gives back the room lists were decoded with (a list grows to four entries on its first).
fn trim_meta(meta: &mut ObjectMeta) {
    shrink(&mut meta.owner_references);
    shrink(&mut meta.finalizers);
}

fn shrink<T>(list: &mut Option<Vec<T>>) {
    if let Some(list) = list.as_mut() {
        list.shrink_to_fit();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn full_pod() -> Pod {
        serde_json::from_value(serde_json::json!({
            "apiVersion": "v1", "kind": "Pod",
            "metadata": {
                "name": "web-0", "namespace": "prod", "uid": "u-1", "resourceVersion": "42",
                "labels": {"app": "web"}, "annotations": {"a": "b"},
                "finalizers": ["example.com/keep"],
                "ownerReferences": [{"apiVersion": "apps.kruise.io/v1beta1", "kind": "CloneSet",
                    "name": "web", "uid": "cs-1", "controller": true}]
            },
            "spec": {
                "nodeName": "node-a",
                "readinessGates": [{"conditionType": "InPlaceUpdateReady"}],
                "containers": [{"name": "main", "image": "nginx:1.25",
                    "env": [{"name": "X", "valueFrom": {"fieldRef": {"fieldPath": "metadata.labels['app']"}}}],
                    "resources": {"requests": {"cpu": "100m"}}}],
                "initContainers": [{"name": "init", "image": "busybox"}],
                "volumes": [{"name": "data", "emptyDir": {}}],
                "tolerations": [{"key": "k", "operator": "Exists"}]
            },
            "status": {
                "phase": "Running",
                "conditions": [{"type": "Ready", "status": "True"}],
                "containerStatuses": [{"name": "main", "image": "nginx:1.25", "imageID": "sha",
                    "ready": true, "restartCount": 1, "state": {"running": {}}}]
            }
        }))
        .expect("pod")
    }

    #[test]
    fn gives_back_the_whole_pod() {
        let pod = full_pod();
        let cached = CachedPod::from_pod(pod.clone());
        assert_eq!(cached.to_pod().expect("decodes"), pod);
        let no_spec = cached.without_spec();
        assert_eq!((no_spec.metadata, no_spec.status), (pod.metadata, pod.status));
    }

    #[test]
    fn decodes_from_json_as_a_pod_does() {
        let text = serde_json::to_string(&full_pod()).expect("json");
        let cached: CachedPod = serde_json::from_str(&text).expect("decodes");
        assert_eq!(cached.to_pod().expect("spec"), full_pod());
        assert_eq!(
            crate::cache::ObjectKey::of(&cached),
            crate::cache::ObjectKey::new("prod", "web-0")
        );
    }

    /// Every metadata field but `managedFields` arrives, whatever the server sends; a `null`
    /// spec is no spec.
    #[test]
    fn decodes_every_metadata_field_and_skips_managed_fields() {
        let mut json = serde_json::to_value(full_pod()).expect("json");
        json["metadata"].as_object_mut().expect("metadata").extend([
            ("generateName".to_owned(), serde_json::json!("web-")),
            ("generation".to_owned(), serde_json::json!(3)),
            ("selfLink".to_owned(), serde_json::json!("/api/v1/namespaces/prod/pods/web-0")),
            ("creationTimestamp".to_owned(), serde_json::json!("2026-11-26T10:00:00Z")),
            ("deletionTimestamp".to_owned(), serde_json::json!("2026-11-26T10:05:00Z")),
            ("deletionGracePeriodSeconds".to_owned(), serde_json::json!(30)),
            (
                "managedFields".to_owned(),
                serde_json::json!([{"manager": "kubectl", "operation": "Update",
                    "fieldsType": "FieldsV1", "fieldsV1": {"f:metadata": {"f:labels": {}}}}]),
            ),
        ]);
        let cached: CachedPod = serde_json::from_value(json.clone()).expect("decodes");
        let mut pod: Pod = serde_json::from_value(json.clone()).expect("pod");
        assert!(pod.metadata.managed_fields.take().is_some());
        assert_eq!(cached.to_pod().expect("spec"), pod);

        json["spec"] = serde_json::Value::Null;
        let cached: CachedPod = serde_json::from_value(json).expect("decodes");
        assert_eq!(cached.to_pod().expect("no spec").spec, None);
    }

    #[test]
    fn admission_decode_is_the_pod_without_managed_fields() {
        let mut value = serde_json::to_value(full_pod()).expect("encodes");
        value["metadata"]["managedFields"] =
            serde_json::json!([{"manager": "kubectl", "operation": "Update"}]);
        let mut whole: Pod = serde_json::from_value(value.clone()).expect("pod");
        assert!(whole.metadata.managed_fields.take().is_some());
        let lean: PodWithoutManagedFields = serde_json::from_value(value).expect("lean pod");
        assert_eq!(Pod::from(lean), whole);
    }

    #[test]
    fn drops_managed_fields_only() {
        let mut pod = full_pod();
        pod.metadata.managed_fields = Some(vec![Default::default()]);
        let back = CachedPod::from_pod(pod).to_pod().expect("decodes");
        assert_eq!(back.metadata.managed_fields, None);
        assert_eq!(back, full_pod());
    }

    #[test]
    fn a_pod_without_spec_stays_without() {
        let pod = Pod { metadata: full_pod().metadata, ..Pod::default() };
        let cached = CachedPod::from_pod(pod.clone());
        assert_eq!(cached.to_pod().expect("decodes"), pod);
    }

    #[test]
    fn a_corrupt_spec_is_an_error_naming_the_pod() {
        let mut cached = CachedPod::from_pod(full_pod());
        cached.spec = Some(SharedText::new("{\"containers\": 3}", Own::Spec { pod_name: "web-0" }));
        let err = cached.to_pod().expect_err("corrupt");
        assert!(
            err.to_string().starts_with("pod prod/web-0: cached spec does not decode"),
            "{err}"
        );
        let err = Arc::new(cached).snapshot_pod().expect_err("no facts from a corrupt spec");
        assert!(err.to_string().starts_with("pod prod/web-0: cached spec"), "{err}");
    }

    #[test]
    fn a_snapshot_pod_reads_metadata_and_status_in_place_and_decodes_on_demand() {
        let pod = full_pod();
        let cached = Arc::new(CachedPod::from_pod(pod.clone()));
        let snapshot = cached.snapshot_pod().expect("facts");
        assert!(!snapshot.is_whole(), "not decoded yet");
        assert_eq!(snapshot.metadata(), &cached.metadata);
        assert_eq!(snapshot.status().as_deref(), cached.status().as_ref());
        assert_eq!(cached.phase(), Some("Running"));
        assert!(cached.is_ready());
        assert_eq!(snapshot.facts(), &PodFacts::new(&pod));
        assert_eq!(
            cached.scheduled_node().expect("decodes"),
            pod.spec.as_ref().and_then(|s| s.node_name.as_deref())
        );
        assert_eq!(**snapshot.pod(), cached.to_pod().expect("decodes"));
        assert!(snapshot.is_whole(), "decoded once read");
    }

    #[test]
    fn facts_are_read_again_once_the_metadata_is_borrowed_mutably() {
        let mut cached = CachedPod::from_pod(full_pod());
        assert_eq!(cached.planner_facts().expect("facts").name(), "web-0");
        cached.meta_mut().name = Some("web-1".into());
        assert_eq!(cached.planner_facts().expect("facts").name(), "web-1", "not the old facts");
        let copy = cached.clone();
        assert!(copy.derived.get().is_none(), "a clone reads its own");
        assert_eq!(copy, cached, "equal whatever was read");
    }
}

#[cfg(test)]
mod props {
    use super::*;
    use k8s_openapi::api::core::v1::{ContainerStatus, PodCondition};
    use proptest::prelude::*;

    /// Status strings: the words a status shares, and any text (digits, quotes, escapes,
    /// control characters and the shared text's hole among them).
    fn word() -> impl Strategy<Value = String> {
        prop_oneof![
            Just("Ready".to_owned()),
            Just("True".to_owned()),
            Just("Running".to_owned()),
            "[A-Za-z]{0,40}",
            "[0-9a-f:./]{0,24}",
            any::<String>(),
        ]
    }

    fn status() -> impl Strategy<Value = PodStatus> {
        let conditions =
            proptest::collection::vec((word(), word(), proptest::option::of(word())), 0..6);
        let containers =
            proptest::collection::vec((word(), word(), any::<i32>(), any::<bool>()), 0..3);
        (proptest::option::of(word()), conditions, containers, proptest::option::of(word()))
            .prop_map(|(phase, conditions, containers, pod_ip)| PodStatus {
                phase,
                pod_ip,
                conditions: Some(
                    conditions
                        .into_iter()
                        .map(|(type_, status, message)| PodCondition {
                            type_,
                            status,
                            message,
                            ..PodCondition::default()
                        })
                        .collect(),
                ),
                container_statuses: Some(
                    containers
                        .into_iter()
                        .map(|(name, image, restart_count, ready)| ContainerStatus {
                            name,
                            image,
                            restart_count,
                            ready,
                            ..ContainerStatus::default()
                        })
                        .collect(),
                ),
                ..PodStatus::default()
            })
    }

    proptest! {
        /// Whatever its strings, a status comes back as it went in, by either way into the
        /// cache, and the phase and readiness kept beside it are its own.
        #[test]
        fn a_status_comes_back_as_it_went_in(status in status()) {
            let pod = Pod {
                metadata: ObjectMeta { name: Some("p-0".into()), ..ObjectMeta::default() },
                spec: None,
                status: Some(status.clone()),
            };
            let cached = CachedPod::from_pod(pod.clone());
            prop_assert_eq!(cached.status(), Some(status.clone()));
            prop_assert_eq!(cached.phase(), status.phase.as_deref());
            let ready =
                status.conditions.iter().flatten().any(|c| c.type_ == "Ready" && c.status == "True");
            prop_assert_eq!(cached.is_ready(), ready);
            let text = serde_json::to_string(&pod).expect("encodes");
            let decoded: CachedPod = serde_json::from_str(&text).expect("decodes");
            prop_assert_eq!(decoded.to_pod().expect("decodes again"), pod);
        }
    }
}
