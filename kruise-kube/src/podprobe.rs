//! The PodProbeMarker controllers, over kruise-core's [`kruise_core::podprobe`]:
//!
//! - `nodepodprobe-controller` (keys: node names): one [`plan_node`] per node, from the node,
//!   its NodePodProbe, the pods bound to it and the markers of their namespaces. It creates the
//!   NodePodProbe of a Ready node, deletes it with the node, writes its `spec.podProbes`, and
//!   turns its `status` into each pod's condition and markers. A node wakes on a change of
//!   itself (readiness, deletion, the virtual-kubelet label), of its NodePodProbe, of any pod
//!   bound to it, and of any marker in the namespace of one of its pods.
//! - `podprobemarker-controller` (keys: markers): [`plan_marker`], the marker's `matchedPods`
//!   and `observedGeneration`, and the release of upstream's cleanup finalizer once no
//!   NodePodProbe carries its probes.
//!
//! Both need `PodProbeMarkerGate` (and `KruiseDaemon`, which forces it off). The pods of a node
//! are found through an index of the pod cache by node, kept by the controller.

use std::collections::{BTreeSet, HashMap};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures::future::BoxFuture;
use k8s_openapi::api::core::v1::{Node, Pod};
use kruise_api::apps::v1alpha1::{NodePodProbe, PodProbeMarker};
use kruise_api::well_known::kubernetes::labels::{
    VIRTUAL_KUBELET_TYPE, VIRTUAL_KUBELET_TYPE_VALUE,
};
use kruise_core::podprobe::{
    MarkerSnapshot, NodeSnapshot, NodeState, plan_marker, plan_node, split_probe_key,
};
use kube::Client;

use crate::applier::PlanOwner;
use crate::cache::{Cache, Change, ObjectKey, WatchEvents, Watched, cluster_watch};
use crate::cached_pod::CachedPod;
use crate::controller::{
    ControllerContext, ControllerInfo, KeyMapping, ReconcileError, Reconciler, Registration,
    ServedResource, Watch,
};

/// Upstream's name of the controller that keeps NodePodProbes.
pub const NODE_POD_PROBE_CONTROLLER: &str = "nodepodprobe-controller";
/// Upstream's name of the PodProbeMarker controller.
pub const POD_PROBE_MARKER_CONTROLLER: &str = "podprobemarker-controller";

const GATES: &[&str] = &["PodProbeMarkerGate", "KruiseDaemon"];

impl Watched for NodePodProbe {
    fn watch(client: &Client, _namespace: Option<&str>) -> WatchEvents<Self> {
        cluster_watch(client)
    }
}

crate::watched_namespaced!(PodProbeMarker);

/// The node key of `name`.
fn node_key(name: &str) -> ObjectKey {
    ObjectKey::new("", name)
}

/// Whether `pod`, bound to `node`, may be probed: it asks for the enhanced liveness probe, a
/// marker is in its namespace, or the node's NodePodProbe lists it.
fn probed(
    pod: &CachedPod,
    node: &str,
    markers: &Cache<PodProbeMarker>,
    probes: &Cache<NodePodProbe>,
) -> bool {
    let asks_liveness = pod.metadata.annotations.as_ref().is_some_and(|a| {
        a.get(kruise_api::well_known::annotations::USING_ENHANCED_LIVENESS)
            .is_some_and(|v| v == "true")
    });
    if asks_liveness {
        return true;
    }
    let namespace = pod.metadata.namespace.as_deref().unwrap_or_default();
    if !markers.select_in_namespace(namespace, |_| true).is_empty() {
        return true;
    }
    let name = pod.metadata.name.as_deref().unwrap_or_default();
    probes.get(&node_key(node)).is_some_and(|probe| {
        probe.spec.pod_probes.iter().any(|p| p.namespace == namespace && p.name == name)
    })
}

/// Pods by the node they are bound to, kept from the pod cache's changes.
#[derive(Clone, Default)]
struct NodeIndex {
    by_node: Arc<Mutex<HashMap<String, BTreeSet<ObjectKey>>>>,
}

impl NodeIndex {
    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, BTreeSet<ObjectKey>>> {
        self.by_node.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn add(&self, pod: &CachedPod) {
        let node = pod.node_name();
        if !node.is_empty() {
            self.lock().entry(node).or_default().insert(ObjectKey::of(pod));
        }
    }

    fn remove(&self, pod: &CachedPod) {
        let node = pod.node_name();
        let mut index = self.lock();
        if let Some(keys) = index.get_mut(&node) {
            keys.remove(&ObjectKey::of(pod));
            if keys.is_empty() {
                index.remove(&node);
            }
        }
    }

    fn change(&self, change: &Change<CachedPod>) {
        if let Some(old) = change.old.as_deref() {
            self.remove(old);
        }
        if let Some(new) = change.new.as_deref() {
            self.add(new);
        }
    }

    /// The pods bound to `node`, as cached now (keys whose pod left are dropped).
    fn pods(&self, node: &str, pods: &Cache<CachedPod>) -> Vec<Arc<CachedPod>> {
        let keys: Vec<ObjectKey> = self.lock().get(node).into_iter().flatten().cloned().collect();
        // Pods never move: a key whose pod is gone, or was replaced by one of the same name
        // bound elsewhere, is skipped (the compact spec text is searched first, and decoded
        // only when it is not found as such).
        let bound = format!("\"nodeName\":{}", serde_json::Value::from(node));
        keys.iter()
            .filter_map(|k| pods.get(k))
            .filter(|p| p.spec_mentions(&bound) || p.node_name() == node)
            .collect()
    }
}

/// Whether any of `markers` probes a named port (the pods' container ports are then needed).
fn probes_named_ports(markers: &[Arc<PodProbeMarker>]) -> bool {
    use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;
    markers.iter().flat_map(|m| &m.spec.probes).any(|p| {
        let probe = &p.probe.probe;
        matches!(probe.tcp_socket.as_ref().map(|t| &t.port), Some(IntOrString::String(_)))
            || matches!(probe.http_get.as_ref().map(|h| &h.port), Some(IntOrString::String(_)))
    })
}

/// The pods [`plan_node`] reads, from the cache, for the pods bound to `node`: metadata, phase,
/// pod IP, conditions and `spec.nodeName`; the whole spec only when a marker probes a named
/// port (decoding the specs is most of a node's reconcile otherwise).
pub fn pods_for_planning(
    node: &str,
    cached: &[Arc<CachedPod>],
    markers: &[Arc<PodProbeMarker>],
) -> Vec<Pod> {
    use k8s_openapi::api::core::v1::{PodSpec, PodStatus};
    let whole = probes_named_ports(markers);
    cached
        .iter()
        .filter_map(|pod| {
            if whole {
                return pod
                    .to_pod()
                    .map_err(|err| tracing::warn!(error = %err, "pod skipped"))
                    .ok();
            }
            let status = pod.status().map(|s| PodStatus {
                phase: s.phase,
                pod_ip: s.pod_ip,
                conditions: s.conditions,
                ..PodStatus::default()
            });
            Some(Pod {
                metadata: pod.metadata.clone(),
                spec: Some(PodSpec { node_name: Some(node.to_owned()), ..PodSpec::default() }),
                status,
            })
        })
        .collect()
}

/// A cached pod as [`plan_marker`] reads it: metadata, status and `spec.nodeName`.
fn bound_pod(pod: &CachedPod) -> Pod {
    let mut light = pod.without_spec();
    light.spec = Some(k8s_openapi::api::core::v1::PodSpec {
        node_name: Some(pod.node_name()).filter(|n| !n.is_empty()),
        ..Default::default()
    });
    light
}

/// The markers of the namespaces of `pods`.
pub fn markers_of(
    cached: &[Arc<CachedPod>],
    markers: &Cache<PodProbeMarker>,
) -> Vec<Arc<PodProbeMarker>> {
    let namespaces: BTreeSet<&str> =
        cached.iter().filter_map(|p| p.metadata.namespace.as_deref()).collect();
    namespaces.iter().flat_map(|ns| markers.in_namespace(ns)).collect()
}

/// The NodePodProbe controller.
pub struct NodePodProbeController {
    context: ControllerContext,
    nodes: Cache<Node>,
    probes: Cache<NodePodProbe>,
    pods: Cache<CachedPod>,
    markers: Cache<PodProbeMarker>,
    index: NodeIndex,
}

fn node_state(node: Option<&Node>) -> NodeState {
    let Some(node) = node else { return NodeState::Missing };
    if node.metadata.deletion_timestamp.is_some() {
        return NodeState::Deleting;
    }
    let virtual_node = node
        .metadata
        .labels
        .as_ref()
        .and_then(|l| l.get(VIRTUAL_KUBELET_TYPE))
        .is_some_and(|v| v == VIRTUAL_KUBELET_TYPE_VALUE);
    if virtual_node {
        return NodeState::Virtual;
    }
    let ready = node
        .status
        .as_ref()
        .and_then(|s| s.conditions.as_ref())
        .into_iter()
        .flatten()
        .any(|c| c.type_ == "Ready" && c.status == "True");
    if ready { NodeState::Ready } else { NodeState::NotReady }
}

impl NodePodProbeController {
    const INFO: ControllerInfo = ControllerInfo::new(
        NODE_POD_PROBE_CONTROLLER,
        "nodepodprobe-workers",
        Some(ServedResource {
            group: "apps.kruise.io",
            version: "v1alpha1",
            plural: "nodepodprobes",
        }),
    )
    .with_gates(GATES);

    fn build(context: ControllerContext) -> Arc<dyn Reconciler> {
        let pods: Cache<CachedPod> = context.caches.get();
        let index = NodeIndex::default();
        {
            let index = index.clone();
            pods.subscribe(Arc::new(move |change| index.change(change)));
        }
        // Pods already cached before the subscription (a change seen twice is harmless).
        for pod in pods.all() {
            index.add(&pod);
        }
        Arc::new(Self {
            nodes: context.caches.get(),
            probes: context.caches.get(),
            markers: context.caches.get(),
            pods,
            index,
            context,
        })
    }

    async fn reconcile_node(&self, key: &ObjectKey) -> Result<Option<Duration>, ReconcileError> {
        let node = self.nodes.get(&node_key(&key.name));
        let probe = self.probes.get(&node_key(&key.name));
        let cached = self.index.pods(&key.name, &self.pods);
        let mut pods: Vec<Pod> = Vec::with_capacity(cached.len());
        for pod in &cached {
            match pod.to_pod() {
                Ok(pod) => pods.push(pod),
                Err(err) => {
                    tracing::warn!(pod = %ObjectKey::of(pod.as_ref()), error = %err, "pod skipped")
                }
            }
        }
        let namespaces: BTreeSet<&str> =
            pods.iter().filter_map(|p| p.metadata.namespace.as_deref()).collect();
        let markers: Vec<Arc<PodProbeMarker>> =
            namespaces.iter().flat_map(|ns| self.markers.in_namespace(ns)).collect();
        let snapshot = NodeSnapshot {
            node_name: &key.name,
            node: node_state(node.as_deref()),
            serverless: self.context.settings.gates.enabled("EnablePodProbeMarkerOnServerless"),
            enhanced_liveness: self.context.settings.gates.enabled("EnhancedLivenessProbe"),
            probe: probe.as_deref(),
            pods: pods.iter().collect(),
            markers: markers.iter().map(AsRef::as_ref).collect(),
        };
        let now = jiff::Timestamp::now();
        let plan = plan_node(&snapshot, now);
        if plan.actions.is_empty() {
            return Ok(None);
        }
        let owner = match (node.as_deref(), probe.as_deref()) {
            (Some(node), _) => PlanOwner::of(node, serde_json::Value::Null),
            (None, Some(probe)) => PlanOwner::of(probe, serde_json::Value::Null),
            (None, None) => return Ok(None),
        };
        self.context.applier.apply_or_replan(&owner, &plan, now).await
    }
}

impl Reconciler for NodePodProbeController {
    fn watches(&self) -> Vec<Watch> {
        let pods = self.pods.clone();
        let (markers, probes) = (self.markers.clone(), self.probes.clone());
        vec![
            Watch::new(&self.nodes, KeyMapping::Custom, |change: &Change<Node>| {
                let moved = match (&change.old, &change.new) {
                    (Some(old), Some(new)) => node_state(Some(old)) != node_state(Some(new)),
                    _ => true,
                };
                let node = change.new.as_deref().or(change.old.as_deref());
                node.filter(|_| moved)
                    .and_then(|n| n.metadata.name.as_deref())
                    .map(node_key)
                    .into_iter()
                    .collect()
            }),
            Watch::new(&self.probes, KeyMapping::Own, |change: &Change<NodePodProbe>| {
                let probe = change.new.as_deref().or(change.old.as_deref());
                probe.and_then(|p| p.metadata.name.as_deref()).map(node_key).into_iter().collect()
            }),
            // A pod's change matters to its node only where a marker may probe it (its
            // namespace has one) or its node's NodePodProbe still lists it: most pods are in
            // neither, and would each cost a reconcile that decodes the node's pods.
            Watch::new(&self.pods, KeyMapping::Custom, move |change: &Change<CachedPod>| {
                let mut keys: Vec<ObjectKey> = [change.old.as_deref(), change.new.as_deref()]
                    .into_iter()
                    .flatten()
                    .filter_map(|pod| {
                        let node = pod.node_name();
                        (!node.is_empty() && probed(pod, &node, &markers, &probes))
                            .then(|| node_key(&node))
                    })
                    .collect();
                keys.dedup();
                keys
            }),
            Watch::new(
                &self.markers,
                KeyMapping::Custom,
                move |change: &Change<PodProbeMarker>| {
                    let Some(marker) = change.new.as_deref().or(change.old.as_deref()) else {
                        return Vec::new();
                    };
                    let namespace = marker.metadata.namespace.as_deref().unwrap_or_default();
                    let nodes: BTreeSet<String> = pods
                        .select_in_namespace(namespace, |p| !p.node_name().is_empty())
                        .iter()
                        .map(|p| p.node_name())
                        .collect();
                    nodes.iter().map(|n| node_key(n)).collect()
                },
            ),
        ]
    }

    fn keys(&self) -> Vec<ObjectKey> {
        let mut names: BTreeSet<String> =
            self.nodes.all().iter().filter_map(|n| n.metadata.name.clone()).collect();
        names.extend(self.probes.all().iter().filter_map(|p| p.metadata.name.clone()));
        names.iter().map(|n| node_key(n)).collect()
    }

    fn reconcile<'a>(
        &'a self,
        key: &'a ObjectKey,
    ) -> BoxFuture<'a, Result<Option<Duration>, ReconcileError>> {
        Box::pin(self.reconcile_node(key))
    }
}

/// The PodProbeMarker controller.
pub struct PodProbeMarkerController {
    context: ControllerContext,
    markers: Cache<PodProbeMarker>,
    pods: Cache<CachedPod>,
    nodes: Cache<Node>,
    probes: Cache<NodePodProbe>,
}

impl PodProbeMarkerController {
    const INFO: ControllerInfo = ControllerInfo::new(
        POD_PROBE_MARKER_CONTROLLER,
        "podprobemarker-workers",
        Some(ServedResource {
            group: "apps.kruise.io",
            version: "v1alpha1",
            plural: "podprobemarkers",
        }),
    )
    .with_gates(GATES);

    fn build(context: ControllerContext) -> Arc<dyn Reconciler> {
        Arc::new(Self {
            markers: context.caches.get(),
            pods: context.caches.get(),
            nodes: context.caches.get(),
            probes: context.caches.get(),
            context,
        })
    }

    /// Probes of `marker` (in `namespace`) that NodePodProbes still list.
    fn probes_left(&self, namespace: &str, marker: &str) -> usize {
        self.probes
            .all()
            .iter()
            .flat_map(|p| p.spec.pod_probes.iter())
            .filter(|p| p.namespace == namespace)
            .flat_map(|p| p.probes.iter())
            .filter(|c| split_probe_key(&c.name).is_some_and(|(m, _)| m == marker))
            .count()
    }

    async fn reconcile_marker(&self, key: &ObjectKey) -> Result<Option<Duration>, ReconcileError> {
        let Some(marker) = self.markers.get(key) else { return Ok(None) };
        let pods: Vec<Pod> =
            self.pods.in_namespace(&key.namespace).iter().map(|p| bound_pod(p)).collect();
        let nodes = self.nodes.clone();
        let node_exists = move |name: &str| nodes.get(&node_key(name)).is_some();
        let probes_left = if marker.metadata.deletion_timestamp.is_some() {
            self.probes_left(&key.namespace, &key.name)
        } else {
            0
        };
        let now = jiff::Timestamp::now();
        let plan = plan_marker(
            &MarkerSnapshot {
                marker: &marker,
                pods: pods.iter().collect(),
                node_exists: &node_exists,
                probes_left,
            },
            now,
        );
        if plan.actions.is_empty() && plan.status.is_none() {
            return Ok(None);
        }
        let status = serde_json::to_value(&marker.status).unwrap_or(serde_json::Value::Null);
        let owner = PlanOwner::of(marker.as_ref(), status);
        self.context.applier.apply_or_replan(&owner, &plan, now).await
    }
}

impl Reconciler for PodProbeMarkerController {
    fn watches(&self) -> Vec<Watch> {
        let for_pods = self.markers.clone();
        let for_probes = self.markers.clone();
        vec![
            Watch::own(&self.markers),
            // A pod's labels, phase or conditions may change what a marker counts.
            Watch::new(&self.pods, KeyMapping::Custom, move |change: &Change<CachedPod>| {
                let Some(pod) = change.new.as_deref().or(change.old.as_deref()) else {
                    return Vec::new();
                };
                let namespace = pod.metadata.namespace.as_deref().unwrap_or_default();
                for_pods.in_namespace(namespace).iter().map(|m| ObjectKey::of(m.as_ref())).collect()
            }),
            // A marker being deleted waits for its probes to leave the NodePodProbes.
            Watch::new(&self.probes, KeyMapping::Custom, move |change: &Change<NodePodProbe>| {
                let mut keys = BTreeSet::new();
                for probe in [change.old.as_deref(), change.new.as_deref()].into_iter().flatten() {
                    for pod in &probe.spec.pod_probes {
                        for container in &pod.probes {
                            if let Some((marker, _)) = split_probe_key(&container.name) {
                                let key = ObjectKey::new(pod.namespace.as_str(), marker);
                                let deleting = for_probes
                                    .get(&key)
                                    .is_some_and(|m| m.metadata.deletion_timestamp.is_some());
                                if deleting {
                                    keys.insert(key);
                                }
                            }
                        }
                    }
                }
                keys.into_iter().collect()
            }),
        ]
    }

    fn keys(&self) -> Vec<ObjectKey> {
        self.markers.all().iter().map(|m| ObjectKey::of(m.as_ref())).collect()
    }

    fn reconcile<'a>(
        &'a self,
        key: &'a ObjectKey,
    ) -> BoxFuture<'a, Result<Option<Duration>, ReconcileError>> {
        Box::pin(self.reconcile_marker(key))
    }
}

/// The pod webhook's step for serverless pods (gate `EnablePodProbeMarkerOnServerless`): the
/// probes of the markers that select a pod being created, in its `kruise.io/podprobe`
/// annotation ([`kruise_core::podprobe::serverless`]).
#[derive(Clone)]
pub struct ServerlessProbeFeature {
    markers: Cache<PodProbeMarker>,
}

impl ServerlessProbeFeature {
    /// Over the shared PodProbeMarker cache.
    pub fn new(caches: &crate::cache::SharedCaches) -> Self {
        Self { markers: caches.get() }
    }
}

impl crate::admission::PodFeature for ServerlessProbeFeature {
    fn name(&self) -> &'static str {
        "PodProbeMarkerServerless"
    }

    fn is_synced(&self) -> bool {
        self.markers.is_synced()
    }

    fn wait_synced(&self) -> BoxFuture<'_, ()> {
        Box::pin(self.markers.wait_synced())
    }

    fn on_create<'a>(
        &'a self,
        pod: &'a Pod,
        namespace: &'a str,
        _dry_run: bool,
    ) -> BoxFuture<'a, Result<Option<crate::admission::pod_feature::PodStepBox>, String>> {
        let markers = self.markers.in_namespace(namespace);
        let refs: Vec<&PodProbeMarker> = markers.iter().map(AsRef::as_ref).collect();
        let index = kruise_core::podprobe::MarkerIndex::new(&refs);
        let step = kruise_core::podprobe::serverless::serverless_step(pod, &index)
            .map(|s| Box::new(s) as crate::admission::pod_feature::PodStepBox);
        Box::pin(std::future::ready(Ok(step)))
    }

    fn scope(&self) -> Vec<kruise_core::admission::pod_scope::PodScopeTerm> {
        use kruise_core::admission::pod_scope::{NamespaceScope, PodScopeTerm};
        self.markers
            .all()
            .iter()
            .filter_map(|m| {
                let namespace = m.metadata.namespace.clone().unwrap_or_default();
                PodScopeTerm::selecting(NamespaceScope::Named(namespace), m.spec.selector.as_ref())
            })
            .collect()
    }

    fn watch_scope(&self, wake: Arc<tokio::sync::Notify>) {
        crate::admission::pod_feature::wake_on_spec_change(&self.markers, wake);
    }
}

/// The NodePodProbe controller's registration.
pub fn node_pod_probe_registration() -> Registration {
    Registration { info: NodePodProbeController::INFO, build: NodePodProbeController::build }
}

/// The PodProbeMarker controller's registration.
pub fn pod_probe_marker_registration() -> Registration {
    Registration { info: PodProbeMarkerController::INFO, build: PodProbeMarkerController::build }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn pod(namespace: &str, name: &str) -> CachedPod {
        let pod: Pod = serde_json::from_value(json!({
            "metadata": {"namespace": namespace, "name": name, "uid": format!("{name}-uid")},
            "spec": {"nodeName": "n1", "containers": [{"name": "c", "image": "x"}]},
        }))
        .expect("a pod");
        CachedPod::from_pod(pod)
    }

    /// Pod changes wake a node only where a marker may probe the pod or the node's
    /// NodePodProbe lists it.
    #[test]
    fn only_pods_a_marker_may_probe_wake_their_node() {
        let markers: Cache<PodProbeMarker> = Cache::default();
        let probes: Cache<NodePodProbe> = Cache::default();
        markers.load(Vec::new());
        let listed: NodePodProbe = serde_json::from_value(json!({
            "metadata": {"name": "n1"},
            "spec": {"podProbes": [{"name": "a", "namespace": "team", "uid": "a-uid", "IP": ""}]},
        }))
        .expect("a NodePodProbe");
        probes.load(vec![Arc::new(listed)]);
        assert!(probed(&pod("team", "a"), "n1", &markers, &probes), "listed by its node");
        assert!(!probed(&pod("team", "b"), "n1", &markers, &probes), "no marker, not listed");
        assert!(!probed(&pod("other", "a"), "n1", &markers, &probes), "another namespace");
        let marker: PodProbeMarker = serde_json::from_value(json!({
            "metadata": {"namespace": "team", "name": "m"},
            "spec": {"selector": {"matchLabels": {"app": "x"}}, "probes": []},
        }))
        .expect("a marker");
        markers.load(vec![Arc::new(marker)]);
        assert!(probed(&pod("team", "b"), "n1", &markers, &probes), "a marker in its namespace");
        let mut asking = pod("other", "c");
        asking.metadata.annotations = Some(
            [(
                kruise_api::well_known::annotations::USING_ENHANCED_LIVENESS.to_owned(),
                "true".to_owned(),
            )]
            .into(),
        );
        assert!(probed(&asking, "n1", &markers, &probes), "asks for the enhanced liveness probe");
    }
}
