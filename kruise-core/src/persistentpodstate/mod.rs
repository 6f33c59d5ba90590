//! PersistentPodState: where a stateful workload's pods ran, so that a pod recreated under the
//! same name goes back there.
//!
//! - [`plan_status`]: the records (`status.podStates`): for each ready pod of the workload
//!   bound to a node, the node, the node's labels for the topology keys, and the pod's values
//!   of `persistentPodAnnotations`; records of pods scaled away dropped (`WhenScaled`, the
//!   default), all of them when the workload is gone.
//! - [`plan_generation`]: the PersistentPodState a workload's annotations ask for
//!   (`kruise.io/auto-generate-persistent-pod-state: "true"` with
//!   `kruise.io/required-persistent-topology` and/or `kruise.io/preferred-persistent-topology`,
//!   and `kruise.io/persistent-pod-annotations`), named after the workload and owned by it.
//! - [`PersistentPodStateStep`]: the pod webhook step: a pod created with a record gets the
//!   recorded values of the required keys in `spec.nodeSelector` (as upstream), one preferred
//!   node affinity term per preferred term, its recorded annotations back, and the annotation
//!   `kruise.io/injected-persistent-pod-state`.
//! - [`admission`]: upstream's validation.
//!
//! Targets are StatefulSets (`apps` and `apps.kruise.io`) and the custom workloads of the
//! `PPS_Watch_Custom_Workload_WhiteList` entry of `kruise-configuration`
//! ([`is_supported_target`]).
//!
//! Beside upstream: recorded annotations are restored on the recreated pod (upstream records
//! them only); a record follows the pod's node labels when they change (upstream keeps a record
//! whose keys have not changed); `ordinals.start` is honoured when judging which pods are
//! scaled away; a preferred term with no recorded label is not added empty.

pub mod admission;

use std::collections::BTreeMap;
use std::sync::Arc;

use jiff::Timestamp;
use k8s_openapi::api::core::v1::{
    NodeSelectorRequirement, NodeSelectorTerm, Pod, PreferredSchedulingTerm,
};
use kruise_api::apps::v1beta1::{
    NodeTopologyTerm, PersistentPodAnnotation, PersistentPodState,
    PersistentPodStateRetentionPolicyType, PersistentPodStateSpec, PersistentPodStateStatus,
    PodState, PreferredTopologyTerm, TargetReference,
};
use kruise_api::well_known::annotations::{
    AUTO_GENERATE_PERSISTENT_POD_STATE, INJECTED_PERSISTENT_POD_STATE, PERSISTENT_POD_ANNOTATIONS,
    PREFERRED_PERSISTENT_TOPOLOGY, REQUIRED_PERSISTENT_TOPOLOGY,
};
use serde_json::json;

use crate::admission::pod_chain::{PodMutationError, PodMutator, PodStep};
use crate::admission::pod_edit::PodEdit;
pub use crate::custom_workload::CustomWorkloadWhitelist;
use crate::custom_workload::parse_group;
use crate::ordinal::Reserved;
use crate::plan::{Action, Guard, ObjectKind, Patch, Plan, Subresource, Target};

/// The PersistentPodState kind.
pub const PERSISTENT_POD_STATE: ObjectKind = ObjectKind {
    group: "apps.kruise.io",
    version: "v1beta1",
    kind: "PersistentPodState",
    plural: "persistentpodstates",
    namespaced: true,
};

/// The group of an `apiVersion` (`""` for the core group).
pub fn group_of(api_version: &str) -> &str {
    api_version.rsplit_once('/').map_or("", |(group, _)| group)
}

/// Whether a workload of `api_version` and `kind` is one of the StatefulSets supported without
/// configuration: `apps` or `apps.kruise.io`, any version.
pub fn is_stateful_set(api_version: &str, kind: &str) -> bool {
    kind == "StatefulSet" && matches!(parse_group(api_version), Some("apps" | "apps.kruise.io"))
}

/// Whether a workload of `api_version` and `kind` may be a target, as upstream's
/// `ValidateAPIVersionAndKind`: a StatefulSet ([`is_stateful_set`]), or a group and kind the
/// `PPS_Watch_Custom_Workload_WhiteList` entry of `kruise-configuration` names (its version
/// does not count). The entry has the shape of WorkloadSpread's
/// ([`CustomWorkloadWhitelist`]); only each workload's `Group`, `Version` and `Kind` are read.
pub fn is_supported_target(
    api_version: &str,
    kind: &str,
    whitelist: &CustomWorkloadWhitelist,
) -> bool {
    is_stateful_set(api_version, kind)
        || parse_group(api_version).is_some_and(|group| whitelist.contains_workload(group, kind))
}

/// Whether `reference` names the workload (group, kind and name; the version does not count).
pub fn refers_to(reference: &TargetReference, api_version: &str, kind: &str, name: &str) -> bool {
    group_of(&reference.api_version) == group_of(api_version)
        && reference.kind == kind
        && reference.name == name
}

/// The workload a PersistentPodState targets, as read.
#[derive(Clone, Debug, Default)]
pub struct WorkloadView {
    /// `spec.replicas`.
    pub replicas: i32,
    /// `spec.ordinals.start`.
    pub start: i32,
    /// `spec.reserveOrdinals` (Advanced StatefulSet).
    pub reserved: Reserved,
    /// Being deleted.
    pub deleting: bool,
}

/// What [`plan_status`] reads.
#[derive(Clone)]
pub struct StatusSnapshot<'a> {
    /// The PersistentPodState.
    pub state: &'a PersistentPodState,
    /// Its workload, `None` when there is none.
    pub workload: Option<WorkloadView>,
    /// The workload's pods (controlled by it).
    pub pods: Vec<&'a Pod>,
    /// A node's labels, `None` when the node is not known.
    pub node_labels: &'a (dyn Fn(&str) -> Option<BTreeMap<String, String>> + Sync),
}

/// The topology keys recorded: the required ones, then the preferred ones.
pub fn topology_keys(spec: &PersistentPodStateSpec) -> Vec<&str> {
    let mut keys: Vec<&str> = Vec::new();
    let required = spec.required_persistent_topology.iter().flat_map(|t| &t.keys);
    let preferred = spec.preferred_persistent_topology.iter().flat_map(|t| &t.preference.keys);
    for key in required.chain(preferred) {
        if !keys.contains(&key.as_str()) {
            keys.push(key);
        }
    }
    keys
}

fn is_active(pod: &Pod) -> bool {
    crate::pod::is_pod_active(pod)
}

/// The records and `observedGeneration`; `plan.status` is set only when they change.
pub fn plan_status(
    snapshot: &StatusSnapshot<'_>,
    _now: Timestamp,
) -> Plan<PersistentPodStateStatus> {
    let state = snapshot.state;
    let mut plan = Plan::empty(Default::default());
    let generation = state.metadata.generation.unwrap_or_default();
    let current = state.status.clone().unwrap_or_default();
    let workload = snapshot.workload.as_ref().filter(|w| !w.deleting);
    let Some(workload) = workload else {
        let cleared = PersistentPodStateStatus {
            observed_generation: generation,
            pod_states: BTreeMap::new(),
        };
        if state.status.as_ref() != Some(&cleared) {
            plan.status = Some(cleared);
        }
        return plan;
    };
    let mut status = PersistentPodStateStatus {
        observed_generation: generation,
        pod_states: current.pod_states.clone(),
    };
    let keys = topology_keys(&state.spec);
    let active: BTreeMap<&str, &Pod> = snapshot
        .pods
        .iter()
        .filter(|p| is_active(p))
        .map(|p| (crate::pod::name_of(p), *p))
        .collect();
    for (name, pod) in &active {
        let node = crate::pod::node_name_of(pod);
        if node.is_empty() || !crate::pod::is_pod_ready(pod) {
            continue;
        }
        let Some(labels) = (snapshot.node_labels)(node) else { continue };
        let node_topology_labels: BTreeMap<String, String> = keys
            .iter()
            .filter_map(|k| labels.get(*k).map(|v| ((*k).to_owned(), v.clone())))
            .collect();
        let pod_annotations = crate::pod::annotations_of(pod);
        let annotations: BTreeMap<String, String> = state
            .spec
            .persistent_pod_annotations
            .iter()
            .filter_map(|a| pod_annotations.get(&a.key).map(|v| (a.key.clone(), v.clone())))
            .collect();
        let record = PodState { node_name: node.to_owned(), node_topology_labels, annotations };
        status.pod_states.insert((*name).to_owned(), record);
    }
    let when_deleted = state.spec.persistent_pod_state_retention_policy
        == Some(PersistentPodStateRetentionPolicyType::WhenDeleted);
    if !when_deleted {
        let wanted: std::collections::BTreeSet<i32> = crate::ordinal::replica_ordinals(
            workload.start,
            workload.replicas.max(0),
            &workload.reserved,
        )
        .into_iter()
        .collect();
        status.pod_states.retain(|name, _| {
            let Some((_, ordinal)) = crate::ordinal::parent_and_ordinal(name) else { return true };
            wanted.contains(&ordinal) || active.contains_key(name.as_str())
        });
    }
    if state.status.as_ref() != Some(&status) {
        plan.status = Some(status);
    }
    plan
}

/// The workload [`plan_generation`] reads.
#[derive(Clone, Debug)]
pub struct GeneratingWorkload<'a> {
    /// `apiVersion` as the workload is served (`apps/v1`, `apps.kruise.io/v1beta1`).
    pub api_version: &'a str,
    /// `StatefulSet`.
    pub kind: &'a str,
    /// Its namespace.
    pub namespace: &'a str,
    /// Its name.
    pub name: &'a str,
    /// Its UID.
    pub uid: &'a str,
    /// Its annotations.
    pub annotations: &'a BTreeMap<String, String>,
}

/// The spec the workload's annotations ask for, `None` when they ask for none (not `"true"`,
/// or no topology). Lists are split on `,`, each item trimmed, empty items left out.
pub fn generated_spec(workload: &GeneratingWorkload<'_>) -> Option<PersistentPodStateSpec> {
    let get = |key: &str| workload.annotations.get(key).map(String::as_str).unwrap_or_default();
    if get(AUTO_GENERATE_PERSISTENT_POD_STATE) != "true" {
        return None;
    }
    let split = |value: &str| -> Vec<String> {
        value.split(',').map(str::trim).filter(|s| !s.is_empty()).map(str::to_owned).collect()
    };
    let required = split(get(REQUIRED_PERSISTENT_TOPOLOGY));
    let preferred = split(get(PREFERRED_PERSISTENT_TOPOLOGY));
    if required.is_empty() && preferred.is_empty() {
        return None;
    }
    Some(PersistentPodStateSpec {
        target_reference: TargetReference {
            api_version: workload.api_version.to_owned(),
            kind: workload.kind.to_owned(),
            name: workload.name.to_owned(),
        },
        persistent_pod_annotations: split(get(PERSISTENT_POD_ANNOTATIONS))
            .into_iter()
            .map(|key| PersistentPodAnnotation { key })
            .collect(),
        required_persistent_topology: (!required.is_empty())
            .then_some(NodeTopologyTerm { keys: required }),
        preferred_persistent_topology: if preferred.is_empty() {
            Vec::new()
        } else {
            vec![PreferredTopologyTerm {
                weight: 100,
                preference: NodeTopologyTerm { keys: preferred },
            }]
        },
        persistent_pod_state_retention_policy: None,
    })
}

/// Whether the workload annotations say anything about generation (a change of them wakes it).
pub fn asks_generation(annotations: &BTreeMap<String, String>) -> bool {
    annotations.contains_key(AUTO_GENERATE_PERSISTENT_POD_STATE)
}

/// The PersistentPodState the workload's annotations ask for, against the one of its name
/// (`existing`): created (owned by the workload), its spec replaced (only one the workload
/// owns), or deleted when the annotation is gone or not `"true"` (only one the workload owns;
/// upstream deletes a hand-made one of the same name too). Annotations asking for no topology
/// leave an existing one alone, as upstream.
pub fn plan_generation(
    workload: &GeneratingWorkload<'_>,
    existing: Option<&PersistentPodState>,
    _now: Timestamp,
) -> Plan<()> {
    let mut plan = Plan::empty(Default::default());
    let target = || Target::new(PERSISTENT_POD_STATE, Some(workload.namespace), workload.name);
    let owned = existing.is_some_and(|e| {
        e.metadata
            .owner_references
            .iter()
            .flatten()
            .any(|r| r.uid == workload.uid && r.controller == Some(true))
    });
    let auto = workload.annotations.get(AUTO_GENERATE_PERSISTENT_POD_STATE).map(String::as_str)
        == Some("true");
    match (generated_spec(workload), existing) {
        (Some(spec), None) => {
            let body = json!({
                "apiVersion": PERSISTENT_POD_STATE.api_version(),
                "kind": PERSISTENT_POD_STATE.kind,
                "metadata": {
                    "name": workload.name,
                    "namespace": workload.namespace,
                    "ownerReferences": [{
                        "apiVersion": workload.api_version, "kind": workload.kind,
                        "name": workload.name, "uid": workload.uid, "controller": true,
                    }],
                },
                "spec": spec,
            });
            plan.actions.push(Action::CreateObject { target: target(), body: Arc::new(body) });
        }
        (Some(spec), Some(existing)) if owned && existing.spec != spec => {
            let guard = existing
                .metadata
                .resource_version
                .clone()
                .map_or(Guard::None, Guard::ResourceVersion);
            let mut spec_json = serde_json::to_value(&spec).unwrap_or_default();
            // A merge patch replaces the lists; absent fields are removed explicitly.
            for field in [
                "requiredPersistentTopology",
                "persistentPodAnnotations",
                "preferredPersistentTopology",
            ] {
                if spec_json.get(field).is_none() {
                    spec_json[field] = serde_json::Value::Null;
                }
            }
            plan.actions.push(Action::PatchObject {
                target: target().guarded(guard),
                subresource: Subresource::Main,
                patch: Patch::merge(json!({"spec": spec_json})),
            });
        }
        (None, Some(existing)) if owned && !auto => {
            let guard = existing.metadata.uid.clone().map_or(Guard::None, Guard::Uid);
            plan.actions.push(Action::DeleteObject { target: target().guarded(guard) });
        }
        _ => {}
    }
    plan
}

/// The pod webhook step of PersistentPodState.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct PersistentPodStateStep {
    /// The PersistentPodState's name.
    pub name: String,
    /// Keys to set in `spec.nodeSelector`.
    pub node_selector: BTreeMap<String, String>,
    /// Terms to append to the preferred node affinity.
    pub preferred: Vec<PreferredSchedulingTerm>,
    /// Annotations to restore (those the pod does not set).
    pub annotations: BTreeMap<String, String>,
}

/// The step for `pod` (named, controlled by a supported workload) from the PersistentPodState
/// targeting its controller; `None` when it has no record of the pod.
pub fn step_for(pod: &Pod, state: &PersistentPodState) -> Option<PersistentPodStateStep> {
    let name = crate::pod::name_of(pod);
    let record = state.status.as_ref()?.pod_states.get(name)?;
    let recorded = &record.node_topology_labels;
    let node_selector: BTreeMap<String, String> = state
        .spec
        .required_persistent_topology
        .iter()
        .flat_map(|t| &t.keys)
        .filter_map(|k| recorded.get(k).map(|v| (k.clone(), v.clone())))
        .collect();
    let preferred: Vec<PreferredSchedulingTerm> = state
        .spec
        .preferred_persistent_topology
        .iter()
        .filter_map(|term| {
            let expressions: Vec<NodeSelectorRequirement> = term
                .preference
                .keys
                .iter()
                .filter_map(|k| {
                    recorded.get(k).map(|v| NodeSelectorRequirement {
                        key: k.clone(),
                        operator: "In".into(),
                        values: Some(vec![v.clone()]),
                    })
                })
                .collect();
            if expressions.is_empty() {
                return None;
            }
            Some(PreferredSchedulingTerm {
                weight: term.weight,
                preference: NodeSelectorTerm {
                    match_expressions: Some(expressions),
                    match_fields: None,
                },
            })
        })
        .collect();
    let pod_annotations = crate::pod::annotations_of(pod);
    let annotations: BTreeMap<String, String> = record
        .annotations
        .iter()
        .filter(|(k, _)| !pod_annotations.contains_key(*k))
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect();
    if node_selector.is_empty() && preferred.is_empty() && annotations.is_empty() {
        return None;
    }
    Some(PersistentPodStateStep {
        name: state.metadata.name.clone().unwrap_or_default(),
        node_selector,
        preferred,
        annotations,
    })
}

impl PodMutator for PersistentPodStateStep {
    fn step(&self) -> PodStep {
        PodStep::PersistentPodState
    }

    fn mutate(&self, pod: &mut PodEdit<'_>) -> Result<(), PodMutationError> {
        let notes = pod.annotations_mut().get_or_insert_with(Default::default);
        notes.insert(INJECTED_PERSISTENT_POD_STATE.to_owned(), self.name.clone());
        for (key, value) in &self.annotations {
            notes.entry(key.clone()).or_insert_with(|| value.clone());
        }
        if !self.node_selector.is_empty() {
            let selector = pod.node_selector_mut().get_or_insert_with(Default::default);
            for (key, value) in &self.node_selector {
                selector.insert(key.clone(), value.clone());
            }
        }
        if !self.preferred.is_empty() {
            let affinity = pod.affinity_mut().get_or_insert_with(Default::default);
            let node = affinity.node_affinity.get_or_insert_with(Default::default);
            node.preferred_during_scheduling_ignored_during_execution
                .get_or_insert_with(Vec::new)
                .extend(self.preferred.iter().cloned());
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests;
