//! PodProbeMarker and NodePodProbe: custom probes that kruise-daemon runs against the
//! containers of matched pods, and the labels, annotations and pod conditions their results
//! become.
//!
//! - [`plan_node`]: the whole of one node, as the NodePodProbe controller sees it: the node's
//!   NodePodProbe created once the node is Ready and deleted with the node; its
//!   `spec.podProbes` computed from the PodProbeMarkers that match the node's pods; and, from
//!   its `status`, each pod's condition and markers.
//! - [`plan_marker`]: a PodProbeMarker's status (`matchedPods`, `observedGeneration`), and the
//!   release of upstream's cleanup finalizer once no NodePodProbe carries its probes.
//! - [`admission`]: upstream's validation of a PodProbeMarker.
//! - [`prober`]: the daemon's side, without IO: probe timing, the threshold state of one probe,
//!   the results and the NodePodProbe status they make.
//!
//! Where this differs from upstream, on purpose:
//! - The fan-out is computed per node, level-triggered, from every marker at once. A probe
//!   removed from a marker, a marker deleted, or a pod whose labels stop matching loses its
//!   probes at the next plan (upstream keeps them until the marker is deleted, and removes them
//!   only through its finalizer). No finalizer is added; upstream's is released once its
//!   probes are gone, so markers created by upstream delete cleanly.
//! - Existing entries keep their positions and new ones are appended (as upstream), so a
//!   NodePodProbe upstream wrote is not rewritten for order alone.
//! - A `markerPolicy` whose state is not the probe's is removed whatever the state is, so an
//!   `Unknown` result removes both the `Succeeded` and the `Failed` markers (upstream removes
//!   only the last policy's).

pub mod admission;
pub mod prober;
pub mod serverless;

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::Arc;

use jiff::Timestamp;
use k8s_openapi::api::core::v1::{Pod, PodCondition, Probe};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;
use kruise_api::apps::v1alpha1::{
    ContainerProbe, ContainerProbeSpec, NodePodProbe, NodePodProbeSpec, PodContainerProbe,
    PodProbe, PodProbeMarker, PodProbeMarkerStatus, ProbeState,
};
use kruise_api::well_known::finalizers::NODE_POD_PROBE_CLEANUP;
use serde_json::{Map, Value, json};

use crate::http_get::resolve_port;
use crate::plan::{Action, Guard, ObjectKind, Patch, Plan, PodStatusPurpose, Subresource, Target};
use crate::selector::Selector;

/// The NodePodProbe kind.
pub const NODE_POD_PROBE: ObjectKind = ObjectKind {
    group: "apps.kruise.io",
    version: "v1alpha1",
    kind: "NodePodProbe",
    plural: "nodepodprobes",
    namespaced: false,
};

/// The PodProbeMarker kind.
pub const POD_PROBE_MARKER: ObjectKind = ObjectKind {
    group: "apps.kruise.io",
    version: "v1alpha1",
    kind: "PodProbeMarker",
    plural: "podprobemarkers",
    namespaced: true,
};

/// The name a marker's probe has in a NodePodProbe: `<marker>#<probe>`.
pub fn probe_key(marker: &str, probe: &str) -> String {
    format!("{marker}#{probe}")
}

/// `(marker, probe)` of a NodePodProbe probe name; `None` without a `#`.
pub fn split_probe_key(key: &str) -> Option<(&str, &str)> {
    key.split_once('#')
}

/// What the node's object says about it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum NodeState {
    /// No such node.
    Missing,
    /// Being deleted.
    Deleting,
    /// A virtual-kubelet node (label `type=virtual-kubelet`): its pods are probed by the
    /// serverless platform, not by kruise-daemon.
    Virtual,
    /// Its `Ready` condition is not `True`.
    NotReady,
    /// Ready.
    Ready,
}

/// What [`plan_node`] reads.
#[derive(Clone, Debug)]
pub struct NodeSnapshot<'a> {
    /// The node's name (and its NodePodProbe's).
    pub node_name: &'a str,
    /// The node.
    pub node: NodeState,
    /// `EnablePodProbeMarkerOnServerless`: the pods of a virtual-kubelet node are marked from
    /// the conditions their provider sets ([`serverless::serverless_marks`]).
    pub serverless: bool,
    /// Its NodePodProbe, when there is one.
    pub probe: Option<&'a NodePodProbe>,
    /// The pods bound to the node.
    pub pods: Vec<&'a Pod>,
    /// The PodProbeMarkers of the pods' namespaces (those being deleted are left out of the
    /// fan-out).
    pub markers: Vec<&'a PodProbeMarker>,
    /// `EnhancedLivenessProbe`: the saved liveness probes of the pods that ask for it are
    /// listed too, named `<pod>-<container>` ([`crate::enhanced_liveness::daemon_probes`]).
    pub enhanced_liveness: bool,
}

/// Whether a pod is probed: active (not Succeeded, Failed or being deleted) and initialized.
pub fn is_probed(pod: &Pod) -> bool {
    crate::pod::is_pod_active(pod)
        && crate::pod::condition(pod, "Initialized").is_some_and(|c| c.status == "True")
        && !crate::pod::node_name_of(pod).is_empty()
}

/// The markers of some namespaces, with their selectors parsed once: those being deleted and
/// those whose selector does not parse or is empty (it matches no pod, as upstream's pod lookup
/// treats it) are left out.
#[derive(Clone, Debug, Default)]
pub struct MarkerIndex<'m> {
    by_namespace: HashMap<&'m str, Vec<(&'m PodProbeMarker, Selector)>>,
}

impl<'m> MarkerIndex<'m> {
    /// Indexes `markers`.
    pub fn new(markers: &[&'m PodProbeMarker]) -> Self {
        let mut by_namespace: HashMap<&str, Vec<(&PodProbeMarker, Selector)>> = HashMap::new();
        for marker in markers.iter().copied() {
            if marker.metadata.deletion_timestamp.is_some() {
                continue;
            }
            let Ok(selector) = Selector::parse(marker.spec.selector.as_ref()) else { continue };
            if selector.is_empty() {
                continue;
            }
            let namespace = marker.metadata.namespace.as_deref().unwrap_or_default();
            by_namespace.entry(namespace).or_default().push((marker, selector));
        }
        for list in by_namespace.values_mut() {
            list.sort_by(|a, b| a.0.metadata.name.cmp(&b.0.metadata.name));
        }
        Self { by_namespace }
    }

    /// The markers whose selector matches `pod`, sorted by name.
    pub fn for_pod(&self, pod: &Pod) -> Vec<&'m PodProbeMarker> {
        let namespace = pod.metadata.namespace.as_deref().unwrap_or_default();
        let labels = crate::pod::labels_of(pod);
        self.by_namespace
            .get(namespace)
            .into_iter()
            .flatten()
            .filter(|(_, selector)| selector.matches(labels))
            .map(|(marker, _)| *marker)
            .collect()
    }

    /// The marker `name` of `namespace`.
    pub fn get(&self, namespace: &str, name: &str) -> Option<&'m PodProbeMarker> {
        self.by_namespace
            .get(namespace)?
            .iter()
            .find(|(m, _)| m.metadata.name.as_deref() == Some(name))
            .map(|(m, _)| *m)
    }
}

/// The markers whose selector matches `pod`, sorted by name (see [`MarkerIndex`]).
pub fn markers_for<'m>(pod: &Pod, markers: &[&'m PodProbeMarker]) -> Vec<&'m PodProbeMarker> {
    MarkerIndex::new(markers).for_pod(pod)
}

/// The probe as the daemon gets it: a named `tcpSocket` or `httpGet` port turned into the
/// number of the container's port of that name (`spec.containers` only, as upstream).
///
/// # Errors
/// Upstream's messages: no such container, or no such port.
pub fn resolve_probe(pod: &Pod, probe: &PodContainerProbe) -> Result<Probe, String> {
    resolve_container_probe(pod, &probe.container_name, &probe.probe.probe)
}

/// [`resolve_probe`] of `probe` for the container `container_name`.
///
/// # Errors
/// As [`resolve_probe`]'s.
pub fn resolve_container_probe(
    pod: &Pod,
    container_name: &str,
    probe: &Probe,
) -> Result<Probe, String> {
    let mut resolved = probe.clone();
    let named = |port: &IntOrString| matches!(port, IntOrString::String(_));
    let needs = resolved.tcp_socket.as_ref().is_some_and(|t| named(&t.port))
        || resolved.http_get.as_ref().is_some_and(|h| named(&h.port));
    if !needs {
        return Ok(resolved);
    }
    let namespace = pod.metadata.namespace.as_deref().unwrap_or_default();
    let pod_name = crate::pod::name_of(pod);
    let container = pod
        .spec
        .iter()
        .flat_map(|s| &s.containers)
        .find(|c| c.name == container_name)
        .ok_or_else(|| {
            format!(
                "Failed to get container by name: {container_name} in pod: {namespace}/{pod_name}"
            )
        })?;
    let ports = container.ports.as_deref().unwrap_or_default();
    let convert = |port: &mut IntOrString| -> Result<(), String> {
        let number = resolve_port(port, ports).map_err(|_| {
            format!(
                "Failed to extract port for container: {} in pod: {namespace}/{pod_name}",
                container.name
            )
        })?;
        *port = IntOrString::Int(i32::from(number));
        Ok(())
    };
    if let Some(tcp) = resolved.tcp_socket.as_mut() {
        convert(&mut tcp.port)?;
    }
    if let Some(http) = resolved.http_get.as_mut() {
        convert(&mut http.port)?;
    }
    Ok(resolved)
}

/// The probes `pod` should carry, in marker-name then spec order, then (with `liveness`) its
/// saved enhanced liveness probes by container name; a probe whose port cannot be resolved is
/// `Err` (the caller keeps what the NodePodProbe already has for it).
fn desired_probes(
    pod: &Pod,
    markers: &MarkerIndex<'_>,
    liveness: bool,
) -> Vec<(String, Result<ContainerProbe, ()>)> {
    let mut out = Vec::new();
    for marker in markers.for_pod(pod) {
        let marker_name = marker.metadata.name.as_deref().unwrap_or_default();
        for probe in &marker.spec.probes {
            let name = probe_key(marker_name, &probe.name);
            let resolved = resolve_probe(pod, probe).map(|p| ContainerProbe {
                name: name.clone(),
                container_name: probe.container_name.clone(),
                probe: ContainerProbeSpec::from(p),
            });
            out.push((name, resolved.map_err(|_| ())));
        }
    }
    if liveness {
        for (name, container, probe) in crate::enhanced_liveness::daemon_probes(pod) {
            let resolved =
                resolve_container_probe(pod, &container, &probe).map(|p| ContainerProbe {
                    name: name.clone(),
                    container_name: container,
                    probe: ContainerProbeSpec::from(p),
                });
            out.push((name, resolved.map_err(|_| ())));
        }
    }
    out
}

fn pod_key(pod: &Pod) -> (&str, &str) {
    (pod.metadata.namespace.as_deref().unwrap_or_default(), crate::pod::name_of(pod))
}

/// The NodePodProbe spec the node's pods and markers call for, keeping the positions of
/// `current`'s entries and probes that stay.
pub fn desired_spec(
    current: Option<&NodePodProbeSpec>,
    pods: &[&Pod],
    markers: &[&PodProbeMarker],
    liveness: bool,
) -> NodePodProbeSpec {
    spec_from_index(current, pods, &MarkerIndex::new(markers), liveness)
}

fn spec_from_index(
    current: Option<&NodePodProbeSpec>,
    pods: &[&Pod],
    markers: &MarkerIndex<'_>,
    liveness: bool,
) -> NodePodProbeSpec {
    let by_key: HashMap<(&str, &str), &Pod> =
        pods.iter().filter(|p| is_probed(p)).map(|p| (pod_key(p), *p)).collect();
    let mut out = Vec::new();
    let mut placed: BTreeSet<(&str, &str)> = BTreeSet::new();
    let entry_for = |pod: &Pod, existing: Option<&PodProbe>| -> Option<PodProbe> {
        let wanted = desired_probes(pod, markers, liveness);
        let old: Vec<&ContainerProbe> =
            existing.map(|e| e.probes.iter().collect()).unwrap_or_default();
        let mut probes: Vec<ContainerProbe> = Vec::new();
        // Kept probes in their old positions, refreshed.
        for old_probe in &old {
            match wanted.iter().find(|(name, _)| *name == old_probe.name) {
                Some((_, Ok(fresh))) => probes.push(fresh.clone()),
                Some((_, Err(()))) => probes.push((*old_probe).clone()),
                None => {}
            }
        }
        for (name, fresh) in &wanted {
            if let Ok(fresh) = fresh
                && !old.iter().any(|o| o.name == *name)
            {
                probes.push(fresh.clone());
            }
        }
        if probes.is_empty() {
            return None;
        }
        let ip = pod
            .status
            .as_ref()
            .and_then(|s| s.pod_ip.clone())
            .filter(|ip| !ip.is_empty())
            .or_else(|| existing.map(|e| e.ip.clone()))
            .unwrap_or_default();
        Some(PodProbe {
            name: crate::pod::name_of(pod).to_owned(),
            namespace: pod.metadata.namespace.clone().unwrap_or_default(),
            uid: pod.metadata.uid.clone().unwrap_or_default(),
            ip,
            probes,
        })
    };
    for existing in current.map(|c| c.pod_probes.as_slice()).unwrap_or_default() {
        let key = (existing.namespace.as_str(), existing.name.as_str());
        let Some(pod) = by_key.get(&key) else { continue };
        if pod.metadata.uid.as_deref().unwrap_or_default() != existing.uid || !placed.insert(key) {
            continue;
        }
        out.extend(entry_for(pod, Some(existing)));
    }
    let mut fresh: Vec<&&Pod> = by_key.values().filter(|p| !placed.contains(&pod_key(p))).collect();
    fresh.sort_by_key(|p| pod_key(p));
    for pod in fresh {
        out.extend(entry_for(pod, None));
    }
    NodePodProbeSpec { pod_probes: out }
}

/// The condition and metadata a pod's probe results call for.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct PodMarks {
    /// Conditions to set, by type.
    pub conditions: Vec<PodCondition>,
    /// Labels to set (`Some`) or remove (`None`).
    pub labels: BTreeMap<String, Option<String>>,
    /// Annotations to set (`Some`) or remove (`None`).
    pub annotations: BTreeMap<String, Option<String>>,
}

fn time_of(t: Option<&Time>) -> Option<Time> {
    t.cloned()
}

/// The marks of `pod` from its NodePodProbe status entry's `states`: for each result (in
/// order; the first result of a condition type wins it), the condition `podConditionType`
/// (`True` when Succeeded, else `False`; the message is the probe's output), and the
/// `markerPolicy` of its state set, the other policies' keys removed. A later result's
/// markers override an earlier one's.
pub fn marks_for(
    pod: &Pod,
    states: &[kruise_api::apps::v1alpha1::ContainerProbeState],
    markers: &MarkerIndex<'_>,
) -> PodMarks {
    let namespace = pod.metadata.namespace.as_deref().unwrap_or_default();
    let mut marks = PodMarks::default();
    for state in states {
        if state.state == ProbeState::default() {
            continue;
        }
        let Some((marker_name, probe_name)) = split_probe_key(&state.name) else { continue };
        let Some(marker) = markers.get(namespace, marker_name) else { continue };
        let Some(probe) = marker.spec.probes.iter().find(|p| p.name == probe_name) else {
            continue;
        };
        if !probe.pod_condition_type.is_empty()
            && !marks.conditions.iter().any(|c| c.type_ == probe.pod_condition_type)
        {
            let succeeded = state.state == ProbeState::Succeeded;
            marks.conditions.push(PodCondition {
                type_: probe.pod_condition_type.clone(),
                status: if succeeded { "True" } else { "False" }.to_owned(),
                last_probe_time: time_of(state.last_probe_time.as_ref()),
                last_transition_time: time_of(state.last_transition_time.as_ref()),
                message: Some(state.message.clone()),
                ..PodCondition::default()
            });
        }
        for policy in probe.marker_policy.iter().filter(|p| p.state != state.state) {
            for key in policy.labels.keys() {
                marks.labels.insert(key.clone(), None);
            }
            for key in policy.annotations.keys() {
                marks.annotations.insert(key.clone(), None);
            }
        }
        for policy in probe.marker_policy.iter().filter(|p| p.state == state.state) {
            for (key, value) in &policy.labels {
                marks.labels.insert(key.clone(), Some(value.clone()));
            }
            for (key, value) in &policy.annotations {
                marks.annotations.insert(key.clone(), Some(value.clone()));
            }
        }
    }
    marks
}

/// The strategic merge patch of `pods/status` that brings `pod` to `marks`, `None` when it is
/// there already. A condition is rewritten only when its status or message changes (so its
/// times stay those of the last change).
pub fn marks_patch(pod: &Pod, marks: &PodMarks) -> Option<Value> {
    let diff = |current: &BTreeMap<String, String>, wanted: &BTreeMap<String, Option<String>>| {
        let mut out = Map::new();
        for (key, value) in wanted {
            match value {
                Some(v) if current.get(key) != Some(v) => {
                    out.insert(key.clone(), Value::String(v.clone()));
                }
                None if current.contains_key(key) => {
                    out.insert(key.clone(), Value::Null);
                }
                _ => {}
            }
        }
        out
    };
    let labels = diff(crate::pod::labels_of(pod), &marks.labels);
    let annotations = diff(crate::pod::annotations_of(pod), &marks.annotations);
    let conditions: Vec<Value> = marks
        .conditions
        .iter()
        .filter(|wanted| {
            crate::pod::condition(pod, &wanted.type_).is_none_or(|c| {
                c.status != wanted.status
                    || c.message.as_deref().unwrap_or_default()
                        != wanted.message.as_deref().unwrap_or_default()
            })
        })
        .map(|c| {
            json!({
                "type": c.type_,
                "status": c.status,
                "lastProbeTime": c.last_probe_time,
                "lastTransitionTime": c.last_transition_time,
                "message": c.message,
                "reason": null,
            })
        })
        .collect();
    if labels.is_empty() && annotations.is_empty() && conditions.is_empty() {
        return None;
    }
    let mut metadata = Map::new();
    metadata.insert("uid".into(), json!(pod.metadata.uid));
    if !labels.is_empty() {
        metadata.insert("labels".into(), Value::Object(labels));
    }
    if !annotations.is_empty() {
        metadata.insert("annotations".into(), Value::Object(annotations));
    }
    let mut patch = Map::new();
    patch.insert("metadata".into(), Value::Object(metadata));
    if !conditions.is_empty() {
        patch.insert("status".into(), json!({"conditions": conditions}));
    }
    Some(Value::Object(patch))
}

/// The plan for one node: create, delete or update its NodePodProbe's spec, and mark its pods
/// from the NodePodProbe's status.
pub fn plan_node(snapshot: &NodeSnapshot<'_>, _now: Timestamp) -> Plan<()> {
    let mut plan = Plan::empty(Default::default());
    let name = snapshot.node_name;
    let markers = MarkerIndex::new(&snapshot.markers);
    match (snapshot.node, snapshot.probe) {
        (NodeState::Missing | NodeState::Deleting, Some(probe)) => {
            let guard = probe.metadata.uid.clone().map_or(Guard::None, Guard::Uid);
            plan.actions.push(Action::DeleteObject {
                target: Target::new(NODE_POD_PROBE, None, name).guarded(guard),
            });
            return plan;
        }
        (NodeState::Virtual, probe) => {
            // kruise-daemon does not probe on a virtual-kubelet node.
            if let Some(probe) = probe {
                let guard = probe.metadata.uid.clone().map_or(Guard::None, Guard::Uid);
                plan.actions.push(Action::DeleteObject {
                    target: Target::new(NODE_POD_PROBE, None, name).guarded(guard),
                });
            }
            if snapshot.serverless {
                for pod in snapshot.pods.iter().filter(|p| is_probed(p)) {
                    let marks = serverless::serverless_marks(pod, &markers);
                    if let Some(patch) = marks_patch(pod, &marks) {
                        plan.actions.push(Action::PatchPodStatus {
                            namespace: pod.metadata.namespace.clone(),
                            name: crate::pod::name_of(pod).to_owned(),
                            uid: pod.metadata.uid.clone().unwrap_or_default(),
                            purpose: PodStatusPurpose::ProbeMarker,
                            patch: Patch::strategic(patch),
                        });
                    }
                }
            }
            return plan;
        }
        (NodeState::Missing | NodeState::Deleting, _) => return plan,
        (NodeState::NotReady, None) => return plan,
        (NodeState::Ready, None) => {
            let spec = spec_from_index(None, &snapshot.pods, &markers, snapshot.enhanced_liveness);
            let body = json!({
                "apiVersion": NODE_POD_PROBE.api_version(),
                "kind": NODE_POD_PROBE.kind,
                "metadata": {"name": name},
                "spec": spec,
            });
            plan.actions.push(Action::CreateObject {
                target: Target::new(NODE_POD_PROBE, None, name),
                body: Arc::new(body),
            });
            return plan;
        }
        (NodeState::NotReady | NodeState::Ready, Some(_)) => {}
    }
    let Some(probe) = snapshot.probe else { return plan };
    let spec =
        spec_from_index(Some(&probe.spec), &snapshot.pods, &markers, snapshot.enhanced_liveness);
    if spec != probe.spec {
        let guard =
            probe.metadata.resource_version.clone().map_or(Guard::None, Guard::ResourceVersion);
        plan.actions.push(Action::PatchObject {
            target: Target::new(NODE_POD_PROBE, None, name).guarded(guard),
            subresource: Subresource::Main,
            patch: Patch::merge(json!({"spec": {"podProbes": spec.pod_probes}})),
        });
    }
    // Marks, for the pods the spec keeps, from results of the same pod (by UID).
    let statuses =
        probe.status.as_ref().map(|s| s.pod_probe_statuses.as_slice()).unwrap_or_default();
    for entry in &spec.pod_probes {
        let Some(status) = statuses.iter().find(|s| s.uid == entry.uid) else { continue };
        let Some(pod) =
            snapshot.pods.iter().find(|p| p.metadata.uid.as_deref() == Some(entry.uid.as_str()))
        else {
            continue;
        };
        let marks = marks_for(pod, &status.probe_states, &markers);
        if let Some(patch) = marks_patch(pod, &marks) {
            plan.actions.push(Action::PatchPodStatus {
                namespace: pod.metadata.namespace.clone(),
                name: crate::pod::name_of(pod).to_owned(),
                uid: entry.uid.clone(),
                purpose: PodStatusPurpose::ProbeMarker,
                patch: Patch::strategic(patch),
            });
        }
    }
    plan
}

/// What [`plan_marker`] reads.
#[derive(Clone)]
pub struct MarkerSnapshot<'a> {
    /// The marker.
    pub marker: &'a PodProbeMarker,
    /// The pods of its namespace.
    pub pods: Vec<&'a Pod>,
    /// Whether a node exists; pods bound to a node that does not are not counted.
    pub node_exists: &'a (dyn Fn(&str) -> bool + Sync),
    /// Probes of this marker that NodePodProbes still carry.
    pub probes_left: usize,
}

/// The marker's status, and the release of upstream's cleanup finalizer once it is being
/// deleted and no NodePodProbe carries its probes.
pub fn plan_marker(snapshot: &MarkerSnapshot<'_>, _now: Timestamp) -> Plan<PodProbeMarkerStatus> {
    let marker = snapshot.marker;
    let mut plan = Plan::empty(Default::default());
    if marker.metadata.deletion_timestamp.is_some() {
        let finalizers = marker.metadata.finalizers.clone().unwrap_or_default();
        if finalizers.iter().any(|f| f == NODE_POD_PROBE_CLEANUP) && snapshot.probes_left == 0 {
            let rest: Vec<&String> =
                finalizers.iter().filter(|f| *f != NODE_POD_PROBE_CLEANUP).collect();
            let guard = marker
                .metadata
                .resource_version
                .clone()
                .map_or(Guard::None, Guard::ResourceVersion);
            plan.actions.push(Action::PatchObject {
                target: Target::new(
                    POD_PROBE_MARKER,
                    marker.metadata.namespace.as_deref(),
                    marker.metadata.name.as_deref().unwrap_or_default(),
                )
                .guarded(guard),
                subresource: Subresource::Main,
                patch: Patch::merge(json!({"metadata": {"finalizers": rest}})),
            });
        }
        return plan;
    }
    let selector = Selector::parse(marker.spec.selector.as_ref()).ok();
    let matched = snapshot
        .pods
        .iter()
        .filter(|p| is_probed(p) && (snapshot.node_exists)(crate::pod::node_name_of(p)))
        .filter(|p| selector.as_ref().is_some_and(|s| s.matches(crate::pod::labels_of(p))))
        .count();
    let status = PodProbeMarkerStatus {
        observed_generation: marker.metadata.generation.unwrap_or_default(),
        matched_pods: i64::try_from(matched).unwrap_or(i64::MAX),
    };
    if marker.status.as_ref() != Some(&status) {
        plan.status = Some(status);
    }
    plan
}

#[cfg(test)]
mod tests;
