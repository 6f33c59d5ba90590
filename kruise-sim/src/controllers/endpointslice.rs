//! The EndpointSlice controller, as kube-controller-manager runs it: every Service with a
//! selector gets EndpointSlices (`discovery.k8s.io/v1`) listing the pods it selects.
//!
//! For a Service with a non-empty `spec.selector` that is not of type `ExternalName` (the
//! others are left alone, slices included):
//!
//! - the pods of its namespace that its selector matches become endpoints when they have an
//!   IP and are not `Succeeded` or `Failed`; terminating pods stay, marked `terminating`.
//!   An endpoint has the pod's IPs of the slice's family (`addresses`), the conditions
//!   (`serving`: the pod's `Ready` condition is True; `terminating`: it has a
//!   `deletionTimestamp`; `ready`: serving and not terminating, or always with
//!   `spec.publishNotReadyAddresses`), `nodeName`, `zone` (the node's
//!   `topology.kubernetes.io/zone` label), `targetRef` (the pod), and `hostname` when the
//!   pod's `hostname` is set and its `subdomain` names the Service. A pod whose node is not
//!   known is left out (and its Service looked at again a second later), unless the Service
//!   publishes not-ready addresses;
//! - each endpoint's `ports` are the Service's ports with the target port resolved against
//!   its pod (a number, or a named port of a container or native sidecar with the same
//!   protocol; a port that does not resolve is left out), and endpoints are grouped into
//!   slices by that port set;
//! - slices hold at most 100 endpoints (`--max-endpoints-per-slice`), one family each
//!   (`addressType` from `spec.ipFamilies`, else the family of `spec.clusterIP`, else IPv4);
//!   they are named `<service>-<random>`, labelled `kubernetes.io/service-name`,
//!   `endpointslice.kubernetes.io/managed-by: endpointslice-controller.k8s.io`,
//!   `service.kubernetes.io/headless` for a headless Service, and with the Service's own
//!   labels, and owned by the Service;
//! - existing slices are changed in place as kube-controller-manager's reconciler does: an
//!   endpoint stays in the slice that has it (updated when its conditions, node, zone or
//!   target changed), slices that lost endpoints are filled first, the fullest first, the rest
//!   go into the unchanged slice they fill closest to 100, else into new slices; a slice left
//!   empty is deleted, or reused instead of creating a new one; a slice whose content is
//!   unchanged is not written. A Service with no endpoints keeps one slice without ports or
//!   endpoints (the placeholder);
//! - created and updated slices carry `endpoints.kubernetes.io/last-change-trigger-time`: on
//!   the first sync of a Service its creation time, later the earliest `Ready` transition
//!   time of its pods that changed since the previous sync (no annotation when none did).
//!
//! Rounds are queued by Service changes, by pod changes that matter to endpoints (labels,
//! IPs, readiness, deletion, a terminal phase, hostname and subdomain) for the Services
//! selecting the pod before and after, by node changes (a node added or removed, or its zone
//! label changed) for the Services of the node's pods, and, a second later, by changes to
//! managed slices that this controller did not write (someone else's edit or deletion). A
//! round waits until the slice cache shows its own writes, and one that finds the cache
//! older than what it wrote waits for the next.
//!
//! Differences from kube-controller-manager:
//!
//! - only `clusterIP: None` makes a Service headless (the sim's API server assigns every
//!   other Service an address, as kube-apiserver does, so an empty one is not seen);
//! - slices list ports in the Service's order and new endpoints in address order
//!   (kube-controller-manager sorts ports by a hash, and endpoints come out of a hash set);
//! - a pod turning `Succeeded` or `Failed` and a node's zone change queue the affected
//!   Services at once (kube-controller-manager's pod filter ignores the phase and it reads
//!   zones only when a Service is synced for another reason);
//! - a failed round is retried after a second, with no exponential back-off;
//! - not done: topology hints (`service.kubernetes.io/topology-mode: Auto`) and
//!   `trafficDistribution`, `--endpoint-updates-batch-period`, Events, metrics, and the
//!   EndpointSlice mirroring controller (for Services without selectors).

use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};
use std::net::IpAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use jiff::Timestamp;
use k8s_openapi::api::core::v1::{Node, ObjectReference, Pod, Service, ServicePort};
use k8s_openapi::api::discovery::v1::{Endpoint, EndpointConditions, EndpointPort, EndpointSlice};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;
use kube::api::{Api, DeleteParams, PostParams};
use kube::runtime::reflector::{ObjectRef, Store};
use kube::{Client, ResourceExt as _};
use tokio::sync::mpsc::{UnboundedReceiver, UnboundedSender};

use super::{Error, api_error};

/// The `managed-by` value of the slices this controller keeps.
pub const CONTROLLER_NAME: &str = "endpointslice-controller.k8s.io";
/// The label naming a slice's Service.
pub const LABEL_SERVICE_NAME: &str = "kubernetes.io/service-name";
/// The label naming who keeps a slice.
pub const LABEL_MANAGED_BY: &str = "endpointslice.kubernetes.io/managed-by";
/// The label on the slices of a headless Service.
const LABEL_HEADLESS: &str = "service.kubernetes.io/headless";
/// The annotation with the time of the change that led to a slice's last write.
pub const TRIGGER_TIME: &str = "endpoints.kubernetes.io/last-change-trigger-time";
const LABEL_ZONE: &str = "topology.kubernetes.io/zone";
/// Endpoints per slice at most (kube-controller-manager's `--max-endpoints-per-slice`).
pub const MAX_ENDPOINTS_PER_SLICE: usize = 100;
/// How long after someone else's change to a managed slice its Service is looked at again
/// (kube-controller-manager's `endpointSliceChangeMinSyncDelay`).
const SLICE_CHANGE_DELAY: Duration = Duration::from_secs(1);
/// When a round that left a pod out (unknown node) or found a stale cache runs again.
const RETRY: Duration = Duration::from_secs(1);

/// A Service's namespace and name.
type Key = ObjectRef<Service>;

// ---------------------------------------------------------------------------------------------
// What a Service's slices should be.

/// One write a round makes.
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum Change {
    /// A new slice (`generateName`).
    Create(EndpointSlice),
    /// A slice rewritten whole: a changed copy of a cached one, or a new one given the name
    /// of a slice that would otherwise have been deleted.
    Update(EndpointSlice),
    /// A slice deleted.
    Delete(EndpointSlice),
}

/// A round's writes, in order, and the pods it had to leave out because their node is not
/// known.
#[derive(Clone, Debug, Default, PartialEq)]
pub(crate) struct Plan {
    pub(crate) changes: Vec<Change>,
    pub(crate) skipped: Vec<String>,
}

/// The writes that make `existing` (the Service's managed slices, none being deleted) list
/// `pods` (those its selector matches), as kube-controller-manager's reconciler computes
/// them. `node` looks a node up by name.
pub(crate) fn plan(
    service: &Service,
    pods: &[&Pod],
    node: &dyn Fn(&str) -> Option<Arc<Node>>,
    existing: &[&EndpointSlice],
    max_per_slice: usize,
) -> Plan {
    let mut out = Plan::default();
    let families = address_types(service);
    let mut by_family: BTreeMap<&str, Vec<&EndpointSlice>> = BTreeMap::new();
    let mut other_family = Vec::new();
    for slice in existing {
        match families.iter().find(|f| **f == slice.address_type) {
            Some(family) => by_family.entry(family).or_default().push(slice),
            None => other_family.push(Change::Delete((*slice).clone())),
        }
    }
    for family in families {
        let slices = by_family.remove(family).unwrap_or_default();
        plan_family(service, pods, node, &slices, family, max_per_slice, &mut out);
    }
    out.changes.extend(other_family);
    out
}

/// The endpoints of one port set, by what tells them apart.
type EndpointSet = BTreeMap<EndpointKey, Endpoint>;

fn plan_family(
    service: &Service,
    pods: &[&Pod],
    node: &dyn Fn(&str) -> Option<Arc<Node>>,
    existing: &[&EndpointSlice],
    family: &'static str,
    max_per_slice: usize,
    out: &mut Plan,
) {
    let mut create = Vec::new();
    let mut update = Vec::new();
    let mut delete = Vec::new();
    let mut existing_by_ports: BTreeMap<PortKey, Vec<&EndpointSlice>> = BTreeMap::new();
    for slice in existing {
        if owned_by(slice, service) {
            let key = port_key(slice.ports.as_deref().unwrap_or_default());
            existing_by_ports.entry(key).or_default().push(slice);
        } else {
            // A slice of an earlier Service of the same name.
            delete.push((*slice).clone());
        }
    }
    let publish_not_ready = publishes_not_ready(service);
    let mut desired: BTreeMap<PortKey, (Vec<EndpointPort>, EndpointSet)> = BTreeMap::new();
    for pod in pods {
        if !in_endpoints(pod) {
            continue;
        }
        let ports = endpoint_ports(service, pod);
        let (_, set) =
            desired.entry(port_key(&ports)).or_insert_with(|| (ports, EndpointSet::new()));
        let node_name = pod.spec.as_ref().and_then(|s| s.node_name.as_deref()).unwrap_or("");
        let found = node(node_name);
        if found.is_none() && !publish_not_ready {
            out.skipped.push(pod.name_any());
            continue;
        }
        let endpoint = pod_endpoint(pod, found.as_deref(), service, family);
        if !endpoint.addresses.is_empty() {
            set.insert(endpoint_key(&endpoint), endpoint);
        }
    }
    for (key, (ports, set)) in &mut desired {
        let slices = existing_by_ports.get(key).map(Vec::as_slice).unwrap_or_default();
        let (c, u, d) = plan_port_set(service, slices, set, ports, family, max_per_slice);
        create.extend(c);
        update.extend(u);
        delete.extend(d);
    }
    for (key, slices) in &existing_by_ports {
        if !desired.contains_key(key) {
            delete.extend(slices.iter().map(|s| (*s).clone()));
        }
    }
    // No slice would be left: the Service keeps one without ports or endpoints.
    if existing.len() == delete.len() && create.is_empty() {
        let placeholder = new_slice(service, Vec::new(), family);
        if delete.len() == 1 && same_placeholder(&delete[0], &placeholder) {
            delete.clear();
        } else {
            create.push(placeholder);
        }
    }
    // Without topology hints or traffic distribution, written slices carry no hints.
    for slice in create.iter_mut().chain(update.iter_mut()) {
        for endpoint in endpoints_mut(slice) {
            endpoint.hints = None;
        }
    }
    // Slices to create take the names of owned slices of the family that would be deleted.
    let mut i = 0;
    while i < delete.len() && !create.is_empty() {
        if delete[i].address_type == family && owned_by(&delete[i], service) {
            let Some(mut slice) = create.pop() else { break };
            let reused = delete.remove(i);
            slice.metadata.name = reused.metadata.name;
            update.push(slice);
        } else {
            i += 1;
        }
    }
    out.changes.extend(create.into_iter().map(Change::Create));
    out.changes.extend(update.into_iter().map(Change::Update));
    out.changes.extend(delete.into_iter().map(Change::Delete));
}

/// The creates, updates and deletes for the slices of one port set (kube-controller-manager's
/// `reconcileByPortMapping`); takes the endpoints it places out of `desired`.
fn plan_port_set(
    service: &Service,
    existing: &[&EndpointSlice],
    desired: &mut EndpointSet,
    ports: &[EndpointPort],
    family: &str,
    max_per_slice: usize,
) -> (Vec<EndpointSlice>, Vec<EndpointSlice>, Vec<EndpointSlice>) {
    let mut by_name: BTreeMap<String, EndpointSlice> = BTreeMap::new();
    let mut unchanged: BTreeSet<String> = BTreeSet::new();
    let mut to_update: BTreeSet<String> = BTreeSet::new();
    let mut to_delete: BTreeSet<String> = BTreeSet::new();
    // 1. Existing slices keep the endpoints still wanted, in their wanted form.
    for slice in existing {
        let name = slice.name_any();
        let mut kept = Vec::new();
        let mut changed = false;
        for endpoint in endpoints(slice) {
            if let Some(wanted) = desired.remove(&endpoint_key(endpoint)) {
                changed |= !equal_beyond_key(&wanted, endpoint);
                kept.push(wanted);
            }
        }
        let (labels, labels_changed) = slice_labels(slice.metadata.labels.as_ref(), service);
        let mut copy = (*slice).clone();
        if changed || kept.len() != endpoints(slice).len() {
            if kept.is_empty() {
                to_delete.insert(name.clone());
            } else {
                *endpoints_mut(&mut copy) = kept;
                copy.metadata.labels = Some(labels);
                to_update.insert(name.clone());
            }
        } else if labels_changed {
            copy.metadata.labels = Some(labels);
            to_update.insert(name.clone());
        } else {
            unchanged.insert(name.clone());
        }
        by_name.insert(name, copy);
    }
    // 2. Slices being updated anyway take new endpoints first, the fullest first.
    if !desired.is_empty() && !to_update.is_empty() {
        let mut names: Vec<&String> = to_update.iter().collect();
        names.sort_by_key(|n| std::cmp::Reverse(by_name.get(*n).map_or(0, |s| endpoints(s).len())));
        for name in names {
            if let Some(slice) = by_name.get_mut(name) {
                fill(slice, desired, max_per_slice);
            }
        }
    }
    // 3. The rest go into the unchanged slice they fill closest to full, else new slices.
    let mut create = Vec::new();
    while !desired.is_empty() {
        let target = (desired.len() < max_per_slice)
            .then(|| {
                let sizes = unchanged
                    .iter()
                    .map(|n| (n, by_name.get(n).map_or(max_per_slice, |s| endpoints(s).len())));
                slice_to_fill(sizes, desired.len(), max_per_slice)
            })
            .flatten();
        match target.and_then(|name| by_name.get_mut(&name).map(|slice| (name, slice))) {
            Some((name, slice)) => {
                fill(slice, desired, max_per_slice);
                unchanged.remove(&name);
                to_update.insert(name);
            }
            None => {
                let mut slice = new_slice(service, ports.to_vec(), family);
                fill(&mut slice, desired, max_per_slice);
                create.push(slice);
            }
        }
    }
    let pick = |names: &BTreeSet<String>| -> Vec<EndpointSlice> {
        names.iter().filter_map(|n| by_name.get(n).cloned()).collect()
    };
    (create, pick(&to_update), pick(&to_delete))
}

/// Moves endpoints out of `desired` into `slice` until it is full.
fn fill(slice: &mut EndpointSlice, desired: &mut EndpointSet, max_per_slice: usize) {
    while endpoints(slice).len() < max_per_slice {
        let Some((_, endpoint)) = desired.pop_first() else { break };
        endpoints_mut(slice).push(endpoint);
    }
}

/// Of the slices (name, endpoint count), the one that `count` more endpoints fill closest to
/// `max` without overflowing it (the first of equals).
fn slice_to_fill<'a>(
    slices: impl Iterator<Item = (&'a String, usize)>,
    count: usize,
    max: usize,
) -> Option<String> {
    let mut closest = max;
    let mut best = None;
    for (name, len) in slices {
        let Some(diff) = max.checked_sub(count + len) else { continue };
        if diff < closest {
            closest = diff;
            best = Some(name.clone());
            if diff == 0 {
                break;
            }
        }
    }
    best
}

/// Whether `existing` is the placeholder `wanted` would be: same namespace, labels, address
/// type, and no ports or endpoints (other metadata is not compared).
fn same_placeholder(existing: &EndpointSlice, wanted: &EndpointSlice) -> bool {
    existing.metadata.namespace == wanted.metadata.namespace
        && existing.metadata.labels.clone().unwrap_or_default()
            == wanted.metadata.labels.clone().unwrap_or_default()
        && existing.address_type == wanted.address_type
        && existing.ports.as_deref().unwrap_or_default().is_empty()
        && endpoints(existing).is_empty()
}

/// The address types of the Service's slices: its IP families, else its cluster IP's, else
/// IPv4 (what kube-apiserver writes into `ipFamilies` on a single-stack IPv4 cluster).
fn address_types(service: &Service) -> Vec<&'static str> {
    let spec = service.spec.as_ref();
    let mut types: Vec<&'static str> = spec
        .and_then(|s| s.ip_families.as_ref())
        .into_iter()
        .flatten()
        .filter_map(|f| match f.as_str() {
            "IPv4" => Some("IPv4"),
            "IPv6" => Some("IPv6"),
            _ => None,
        })
        .collect();
    types.sort_unstable();
    types.dedup();
    if types.is_empty() {
        let ipv6 = spec
            .and_then(|s| s.cluster_ip.as_deref())
            .and_then(|ip| ip.parse::<IpAddr>().ok())
            .is_some_and(|ip| ip.is_ipv6());
        types.push(if ipv6 { "IPv6" } else { "IPv4" });
    }
    types
}

fn publishes_not_ready(service: &Service) -> bool {
    service.spec.as_ref().and_then(|s| s.publish_not_ready_addresses).unwrap_or(false)
}

/// Whether a Service is headless: `clusterIP: None`.
fn headless(service: &Service) -> bool {
    service.spec.as_ref().and_then(|s| s.cluster_ip.as_deref()) == Some("None")
}

/// Whether the Service gets slices from this controller: a selector, and not `ExternalName`.
fn has_slices(service: &Service) -> bool {
    let spec = service.spec.as_ref();
    spec.and_then(|s| s.type_.as_deref()) != Some("ExternalName")
        && spec.and_then(|s| s.selector.as_ref()).is_some_and(|s| !s.is_empty())
}

/// Whether the Service's selector matches `labels` (an absent or empty selector matches
/// nothing).
fn selects(service: &Service, labels: &BTreeMap<String, String>) -> bool {
    has_slices(service)
        && service
            .spec
            .as_ref()
            .and_then(|s| s.selector.as_ref())
            .is_some_and(|sel| sel.iter().all(|(k, v)| labels.get(k) == Some(v)))
}

/// Whether a pod becomes an endpoint: it has an IP and is not finished.
fn in_endpoints(pod: &Pod) -> bool {
    let status = pod.status.as_ref();
    let phase = status.and_then(|s| s.phase.as_deref());
    !matches!(phase, Some("Succeeded" | "Failed")) && !pod_ips(pod).is_empty()
}

/// The pod's IPs: `podIPs`, else `podIP` (kube-apiserver keeps the two in step).
fn pod_ips(pod: &Pod) -> Vec<&str> {
    let status = pod.status.as_ref();
    let ips: Vec<&str> = status
        .and_then(|s| s.pod_ips.as_ref())
        .into_iter()
        .flatten()
        .map(|p| p.ip.as_str())
        .filter(|ip| !ip.is_empty())
        .collect();
    if !ips.is_empty() {
        return ips;
    }
    status.and_then(|s| s.pod_ip.as_deref()).filter(|ip| !ip.is_empty()).into_iter().collect()
}

/// The endpoint for `pod` in a slice of `family`; its `addresses` are empty when the pod has
/// no IP of that family.
fn pod_endpoint(pod: &Pod, node: Option<&Node>, service: &Service, family: &str) -> Endpoint {
    let serving = kruise_core::pod::is_pod_ready(pod);
    let terminating = pod.metadata.deletion_timestamp.is_some();
    let ready = publishes_not_ready(service) || (serving && !terminating);
    let addresses = pod_ips(pod)
        .into_iter()
        .filter_map(|ip| ip.parse::<IpAddr>().ok())
        .filter(|ip| ip.is_ipv6() == (family == "IPv6"))
        .map(|ip| ip.to_string())
        .collect();
    let spec = pod.spec.as_ref();
    let node_name = spec.and_then(|s| s.node_name.clone()).filter(|n| !n.is_empty());
    let zone = node
        .and_then(|n| n.metadata.labels.as_ref())
        .and_then(|l| l.get(LABEL_ZONE))
        .filter(|z| !z.is_empty())
        .cloned();
    let hostname = spec.and_then(|s| s.hostname.clone()).filter(|h| {
        !h.is_empty()
            && spec.and_then(|s| s.subdomain.as_deref()) == service.metadata.name.as_deref()
            && pod.metadata.namespace == service.metadata.namespace
    });
    Endpoint {
        addresses,
        conditions: Some(EndpointConditions {
            ready: Some(ready),
            serving: Some(serving),
            terminating: Some(terminating),
        }),
        hostname,
        node_name,
        target_ref: Some(ObjectReference {
            kind: Some("Pod".into()),
            namespace: pod.metadata.namespace.clone(),
            name: pod.metadata.name.clone(),
            uid: pod.metadata.uid.clone(),
            ..ObjectReference::default()
        }),
        zone,
        ..Endpoint::default()
    }
}

/// The Service's ports as the pod serves them (a target port that does not resolve leaves
/// its port out).
fn endpoint_ports(service: &Service, pod: &Pod) -> Vec<EndpointPort> {
    let ports = service.spec.as_ref().and_then(|s| s.ports.as_deref()).unwrap_or_default();
    ports
        .iter()
        .filter_map(|port| {
            Some(EndpointPort {
                name: Some(port.name.clone().unwrap_or_default()),
                port: Some(target_port(pod, port)?),
                protocol: Some(protocol(port.protocol.as_deref()).to_owned()),
                app_protocol: port.app_protocol.clone(),
            })
        })
        .collect()
}

fn protocol(p: Option<&str>) -> &str {
    p.filter(|p| !p.is_empty()).unwrap_or("TCP")
}

/// The port `port`'s target port is on `pod`: a number as is, a name looked up among the
/// ports of the containers, then of the native sidecars, with the same protocol.
fn target_port(pod: &Pod, port: &ServicePort) -> Option<i32> {
    let name = match &port.target_port {
        None => return Some(port.port),
        Some(IntOrString::Int(n)) => return Some(*n),
        Some(IntOrString::String(name)) => name,
    };
    let spec = pod.spec.as_ref()?;
    let sidecars = spec
        .init_containers
        .iter()
        .flatten()
        .filter(|c| c.restart_policy.as_deref() == Some("Always"));
    let wanted = protocol(port.protocol.as_deref());
    spec.containers
        .iter()
        .chain(sidecars)
        .flat_map(|c| c.ports.iter().flatten())
        .find(|p| {
            p.name.as_deref() == Some(name.as_str()) && protocol(p.protocol.as_deref()) == wanted
        })
        .map(|p| p.container_port)
}

/// A port set, order aside: (name, protocol, port, appProtocol) of each port, sorted.
type PortKey = Vec<(String, String, Option<i32>, Option<String>)>;

fn port_key(ports: &[EndpointPort]) -> PortKey {
    let mut key: PortKey = ports
        .iter()
        .map(|p| {
            (
                p.name.clone().unwrap_or_default(),
                protocol(p.protocol.as_deref()).to_owned(),
                p.port,
                p.app_protocol.clone(),
            )
        })
        .collect();
    key.sort();
    key
}

/// What tells endpoints apart (kube-controller-manager's endpoint hash): the addresses,
/// sorted, the hostname and the target's namespace and name. The rest may change in place.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
struct EndpointKey {
    addresses: Vec<String>,
    hostname: String,
    namespace: String,
    name: String,
}

fn endpoint_key(endpoint: &Endpoint) -> EndpointKey {
    let mut addresses = endpoint.addresses.clone();
    addresses.sort();
    let target = endpoint.target_ref.as_ref();
    EndpointKey {
        addresses,
        hostname: endpoint.hostname.clone().unwrap_or_default(),
        namespace: target.and_then(|t| t.namespace.clone()).unwrap_or_default(),
        name: target.and_then(|t| t.name.clone()).unwrap_or_default(),
    }
}

/// Whether two endpoints with the same key also agree on node, zone, conditions and target
/// (its resourceVersion aside).
fn equal_beyond_key(a: &Endpoint, b: &Endpoint) -> bool {
    let conditions = |e: &Endpoint| e.conditions.clone().unwrap_or_default();
    let target = |e: &Endpoint| {
        e.target_ref.clone().map(|t| ObjectReference { resource_version: None, ..t })
    };
    a.node_name == b.node_name
        && a.zone == b.zone
        && conditions(a) == conditions(b)
        && target(a) == target(b)
}

/// The labels a slice of the Service carries, and whether the slice's own (the reserved ones
/// aside) differ from the Service's: the Service's labels, the headless label for a headless
/// Service, the Service's name and the controller's.
fn slice_labels(
    current: Option<&BTreeMap<String, String>>,
    service: &Service,
) -> (BTreeMap<String, String>, bool) {
    let reserved =
        |k: &String| [LABEL_SERVICE_NAME, LABEL_MANAGED_BY, LABEL_HEADLESS].contains(&k.as_str());
    let unreserved = |labels: Option<&BTreeMap<String, String>>| -> BTreeMap<String, String> {
        labels
            .into_iter()
            .flatten()
            .filter(|(k, _)| !reserved(k))
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect()
    };
    let mut labels = unreserved(service.metadata.labels.as_ref());
    let changed = unreserved(current) != labels;
    if headless(service) {
        labels.insert(LABEL_HEADLESS.into(), String::new());
    }
    labels.insert(LABEL_SERVICE_NAME.into(), service.name_any());
    labels.insert(LABEL_MANAGED_BY.into(), CONTROLLER_NAME.into());
    (labels, changed)
}

/// A new slice of the Service: `<service>-<random>`, its labels, owned by it.
fn new_slice(service: &Service, ports: Vec<EndpointPort>, family: &str) -> EndpointSlice {
    let (labels, _) = slice_labels(None, service);
    EndpointSlice {
        metadata: ObjectMeta {
            generate_name: Some(format!("{}-", service.name_any())),
            namespace: service.metadata.namespace.clone(),
            labels: Some(labels),
            owner_references: Some(vec![super::controller_reference(service)]),
            ..ObjectMeta::default()
        },
        address_type: family.to_owned(),
        ports: Some(ports),
        ..EndpointSlice::default()
    }
}

// k8s-openapi 1.36 made `endpoints` optional; these accessors hide that.
k8s_openapi::k8s_if_le_1_35! {
    fn endpoints(slice: &EndpointSlice) -> &[Endpoint] {
        &slice.endpoints
    }

    fn endpoints_mut(slice: &mut EndpointSlice) -> &mut Vec<Endpoint> {
        &mut slice.endpoints
    }
}

k8s_openapi::k8s_if_ge_1_36! {
    fn endpoints(slice: &EndpointSlice) -> &[Endpoint] {
        slice.endpoints.as_deref().unwrap_or_default()
    }

    fn endpoints_mut(slice: &mut EndpointSlice) -> &mut Vec<Endpoint> {
        slice.endpoints.get_or_insert_with(Vec::new)
    }
}

/// Whether the Service (this one, by uid) owns the slice.
fn owned_by(slice: &EndpointSlice, service: &Service) -> bool {
    let uid = service.metadata.uid.as_deref().unwrap_or_default();
    slice
        .metadata
        .owner_references
        .iter()
        .flatten()
        .any(|o| o.uid == uid && o.kind == "Service" && o.api_version == "v1")
}

fn is_managed(slice: &EndpointSlice) -> bool {
    slice.labels().get(LABEL_MANAGED_BY).map(String::as_str) == Some(CONTROLLER_NAME)
}

/// The Service a slice's label names, if any.
fn service_of(slice: &EndpointSlice) -> Option<Key> {
    let name = slice.labels().get(LABEL_SERVICE_NAME).filter(|n| !n.is_empty())?;
    Some(ObjectRef::new(name).within(&slice.namespace().unwrap_or_default()))
}

// ---------------------------------------------------------------------------------------------
// The trigger time.

/// What the previous sync of a Service saw: its creation time and each pod's last `Ready`
/// transition.
#[derive(Clone, Debug, Default, PartialEq)]
pub(crate) struct TriggerState {
    service: Option<Timestamp>,
    pods: HashMap<String, Timestamp>,
}

/// The time to write into `endpoints.kubernetes.io/last-change-trigger-time` (none: remove
/// it), and the state for the next sync (kube-controller-manager's `TriggerTimeTracker`):
/// on the first sync of a Service its creation time; later the earliest `Ready` transition
/// (or Service creation) newer than the previous sync saw.
pub(crate) fn trigger_time(
    previous: Option<&TriggerState>,
    service: &Service,
    pods: &[&Pod],
) -> (Option<Timestamp>, TriggerState) {
    let created = service.metadata.creation_timestamp.as_ref().map(|t| t.0);
    let mut next = TriggerState { service: created, pods: HashMap::new() };
    let mut earliest: Option<Timestamp> = None;
    let before = previous.cloned().unwrap_or_default();
    for pod in pods {
        let Some(at) = ready_transition(pod) else { continue };
        let name = pod.name_any();
        if before.pods.get(&name).is_none_or(|seen| at > *seen) {
            earliest = Some(earliest.map_or(at, |e| e.min(at)));
        }
        next.pods.insert(name, at);
    }
    if let Some(at) = created
        && before.service.is_none_or(|seen| at > seen)
    {
        earliest = Some(earliest.map_or(at, |e| e.min(at)));
    }
    match previous {
        None => (created, next),
        Some(_) => (earliest, next),
    }
}

/// When the pod's `Ready` condition last changed.
fn ready_transition(pod: &Pod) -> Option<Timestamp> {
    let conditions = pod.status.as_ref()?.conditions.as_ref()?;
    conditions.iter().find(|c| c.type_ == "Ready")?.last_transition_time.as_ref().map(|t| t.0)
}

fn set_trigger_time(slice: &mut EndpointSlice, at: Option<Timestamp>) {
    let annotations = slice.metadata.annotations.get_or_insert_with(BTreeMap::new);
    match at {
        Some(at) => annotations.insert(TRIGGER_TIME.into(), at.to_string()),
        None => annotations.remove(TRIGGER_TIME),
    };
    if annotations.is_empty() {
        slice.metadata.annotations = None;
    }
}

// ---------------------------------------------------------------------------------------------
// The controller.

/// The generation of each slice this controller last wrote (`None`: it deleted it), by
/// Service and slice uid (kube-controller-manager's `EndpointSliceTracker`).
#[derive(Default)]
struct Tracker(HashMap<Key, HashMap<String, Option<i64>>>);

impl Tracker {
    fn wrote(&mut self, service: &Key, slice: &EndpointSlice) {
        let uid = slice.uid().unwrap_or_default();
        let generation = slice.metadata.generation.unwrap_or(0);
        self.0.entry(service.clone()).or_default().insert(uid, Some(generation));
    }

    fn deleted(&mut self, service: &Key, slice: &EndpointSlice) {
        let uid = slice.uid().unwrap_or_default();
        self.0.entry(service.clone()).or_default().insert(uid, None);
    }

    /// Whether a slice as cached (at `generation`) is newer than this controller's last write
    /// of it.
    fn should_sync(&self, service: &Key, uid: &str, generation: i64) -> bool {
        match self.0.get(service).and_then(|slices| slices.get(uid)) {
            Some(Some(written)) => generation > *written,
            _ => true,
        }
    }

    /// Takes note that a slice is gone; whether this controller deleted it.
    fn gone(&mut self, service: &Key, uid: &str) -> bool {
        let entry = self.0.get_mut(service).and_then(|slices| slices.remove(uid));
        matches!(entry, Some(None))
    }

    /// Whether the cache lags behind this controller's writes of the Service's slices: one
    /// written later than cached, one deleted still there, or one written not there yet.
    fn stale(&self, service: &Key, cached: &[Arc<EndpointSlice>]) -> bool {
        let Some(written) = self.0.get(service) else { return false };
        let mut seen = HashSet::new();
        for slice in cached {
            let uid = slice.uid().unwrap_or_default();
            match written.get(&uid) {
                Some(None) => return true,
                Some(Some(g)) if *g > slice.metadata.generation.unwrap_or(0) => return true,
                _ => {}
            }
            seen.insert(uid);
        }
        written.iter().any(|(uid, g)| g.is_some() && !seen.contains(uid))
    }
}

struct Context {
    client: Client,
    pods: Store<Pod>,
    nodes: Store<Node>,
    slices: Store<EndpointSlice>,
    triggers: Mutex<HashMap<Key, TriggerState>>,
    tracker: Mutex<Tracker>,
}

impl Context {
    fn tracker(&self) -> std::sync::MutexGuard<'_, Tracker> {
        self.tracker.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn triggers(&self) -> std::sync::MutexGuard<'_, HashMap<Key, TriggerState>> {
        self.triggers.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// Runs the controller until the task is aborted. Services and EndpointSlices are watched
/// here (no other controller reads them); pods and nodes come from the shared caches.
pub(crate) async fn run(
    client: Client,
    (pods, pod_events): (Store<Pod>, UnboundedReceiver<Pod>),
    (nodes, node_events): (Store<Node>, UnboundedReceiver<Node>),
) {
    let mut service_cache = super::SharedCache::<Service>::new();
    let (services, service_events) = service_cache.subscribe();
    let mut slice_cache = super::SharedCache::<EndpointSlice>::new();
    let (slices, slice_events) = slice_cache.subscribe();
    let (queue, keys) = tokio::sync::mpsc::unbounded_channel::<Key>();
    let context = Arc::new(Context {
        client: client.clone(),
        pods: pods.clone(),
        nodes: nodes.clone(),
        slices: slices.clone(),
        triggers: Mutex::default(),
        tracker: Mutex::default(),
    });
    let feeds = futures::future::join4(
        queue_for_services(service_events, services.clone(), queue.clone(), context.clone()),
        queue_for_pods(pod_events, pods.clone(), services.clone(), queue.clone()),
        queue_for_nodes(node_events, nodes.clone(), pods.clone(), services.clone(), queue.clone()),
        queue_for_slices(slice_events, slices.clone(), queue.clone(), context.clone()),
    );
    let worker = async move {
        pods.wait_until_ready().await.ok();
        nodes.wait_until_ready().await.ok();
        slices.wait_until_ready().await.ok();
        super::work(services, queue, keys, move |service| {
            let context = context.clone();
            async move { reconcile(service, context).await.unwrap_or(Some(RETRY)) }
        })
        .await;
    };
    futures::future::join4(
        service_cache.run(client.clone()),
        slice_cache.run(client),
        feeds,
        worker,
    )
    .await;
}

/// The Services in `namespace` whose selector matches `labels`.
fn services_selecting(
    services: &Store<Service>,
    namespace: &str,
    labels: &BTreeMap<String, String>,
) -> HashSet<Key> {
    services
        .state()
        .iter()
        .filter(|s| s.metadata.namespace.as_deref() == Some(namespace) && selects(s, labels))
        .map(|s| ObjectRef::from_obj(s.as_ref()))
        .collect()
}

/// Queues every Service that changed; a deleted one's trigger times and written slices are
/// forgotten.
async fn queue_for_services(
    mut events: UnboundedReceiver<Service>,
    services: Store<Service>,
    queue: UnboundedSender<Key>,
    context: Arc<Context>,
) {
    while let Some(service) = events.recv().await {
        let key = ObjectRef::from_obj(&service);
        if services.get(&key).is_none_or(|s| s.uid() != service.uid()) {
            context.triggers().remove(&key);
            context.tracker().0.remove(&key);
        }
        let _ = queue.send(key);
    }
}

/// What of a pod its endpoints depend on.
#[derive(Clone, Debug, PartialEq)]
struct PodView {
    namespace: String,
    labels: BTreeMap<String, String>,
    hostname: Option<String>,
    subdomain: Option<String>,
    deleting: bool,
    ready: bool,
    finished: bool,
    ips: Vec<String>,
    node: Option<String>,
}

impl PodView {
    fn of(pod: &Pod) -> Self {
        let spec = pod.spec.as_ref();
        let phase = pod.status.as_ref().and_then(|s| s.phase.as_deref());
        PodView {
            namespace: pod.namespace().unwrap_or_default(),
            labels: pod.labels().clone(),
            hostname: spec.and_then(|s| s.hostname.clone()),
            subdomain: spec.and_then(|s| s.subdomain.clone()),
            deleting: pod.metadata.deletion_timestamp.is_some(),
            ready: kruise_core::pod::is_pod_ready(pod),
            finished: matches!(phase, Some("Succeeded" | "Failed")),
            ips: pod_ips(pod).into_iter().map(str::to_owned).collect(),
            node: spec.and_then(|s| s.node_name.clone()),
        }
    }

    /// Whether the pod's endpoint may have changed.
    fn endpoint_changed(&self, other: &Self) -> bool {
        self.deleting != other.deleting
            || self.ready != other.ready
            || self.finished != other.finished
            || self.ips != other.ips
            || self.node != other.node
    }

    /// Whether the pod may have moved between Services.
    fn membership_changed(&self, other: &Self) -> bool {
        self.labels != other.labels
            || self.hostname != other.hostname
            || self.subdomain != other.subdomain
    }
}

/// Queues, for every pod change that matters to endpoints, the Services selecting the pod
/// now and before (kube-controller-manager's pod handlers).
async fn queue_for_pods(
    mut events: UnboundedReceiver<Pod>,
    pods: Store<Pod>,
    services: Store<Service>,
    queue: UnboundedSender<Key>,
) {
    let mut seen: HashMap<String, PodView> = HashMap::new();
    while let Some(pod) = events.recv().await {
        let uid = pod.uid().unwrap_or_default();
        let gone = pods.get(&ObjectRef::from_obj(&pod)).is_none_or(|p| p.uid() != pod.uid());
        let now = PodView::of(&pod);
        let before = if gone { seen.remove(&uid) } else { seen.insert(uid, now.clone()) };
        let selecting =
            |view: &PodView| services_selecting(&services, &view.namespace, &view.labels);
        let keys = match before {
            None => selecting(&now),
            Some(before) if gone => &selecting(&before) | &selecting(&now),
            Some(before) => {
                let moved = before.membership_changed(&now);
                let changed = before.endpoint_changed(&now);
                if !moved && !changed {
                    continue;
                }
                let (old, new) = (selecting(&before), selecting(&now));
                if !moved {
                    new
                } else if changed {
                    &old | &new
                } else {
                    &old ^ &new
                }
            }
        };
        for key in keys {
            let _ = queue.send(key);
        }
    }
}

/// Queues the Services of a node's pods when the node comes, goes, or changes zone.
async fn queue_for_nodes(
    mut events: UnboundedReceiver<Node>,
    nodes: Store<Node>,
    pods: Store<Pod>,
    services: Store<Service>,
    queue: UnboundedSender<Key>,
) {
    let mut zones: HashMap<String, Option<String>> = HashMap::new();
    while let Some(node) = events.recv().await {
        let name = node.name_any();
        let gone = nodes.get(&ObjectRef::from_obj(&node)).is_none();
        let zone = node.labels().get(LABEL_ZONE).cloned();
        let before =
            if gone { zones.remove(&name) } else { zones.insert(name.clone(), zone.clone()) };
        if !gone && before.as_ref() == Some(&zone) {
            continue;
        }
        let mut keys = HashSet::new();
        for pod in pods.state() {
            if pod.spec.as_ref().and_then(|s| s.node_name.as_deref()) == Some(name.as_str()) {
                let namespace = pod.namespace().unwrap_or_default();
                keys.extend(services_selecting(&services, &namespace, pod.labels()));
            }
        }
        for key in keys {
            let _ = queue.send(key);
        }
    }
}

/// What a slice event asks for, decided when its delay is over: by then this controller has
/// recorded its own write of the slice, so that its own writes queue nothing.
enum Check {
    /// The slice moved between Services, or to or from this controller: queue.
    Always,
    /// A managed slice changed: queue if the cached one is newer than this controller's last
    /// write of it.
    Changed { slice: ObjectRef<EndpointSlice>, uid: String },
    /// A managed slice went: queue unless this controller deleted it.
    Deleted { uid: String },
}

impl Check {
    fn due(&self, service: &Key, slices: &Store<EndpointSlice>, context: &Context) -> bool {
        match self {
            Check::Always => true,
            Check::Changed { slice, uid } => slices.get(slice).is_some_and(|cached| {
                cached.uid().as_deref() == Some(uid.as_str())
                    && context.tracker().should_sync(
                        service,
                        uid,
                        cached.metadata.generation.unwrap_or(0),
                    )
            }),
            Check::Deleted { uid } => !context.tracker().gone(service, uid),
        }
    }
}

/// Queues, a second later, the Service of a managed slice that someone else changed or
/// deleted, and both Services when a slice's Service label or manager changed.
async fn queue_for_slices(
    mut events: UnboundedReceiver<EndpointSlice>,
    slices: Store<EndpointSlice>,
    queue: UnboundedSender<Key>,
    context: Arc<Context>,
) {
    let mut seen: HashMap<String, (Option<Key>, bool)> = HashMap::new();
    while let Some(slice) = events.recv().await {
        let uid = slice.uid().unwrap_or_default();
        let key = ObjectRef::from_obj(&slice);
        let gone = slices.get(&key).is_none_or(|s| s.uid() != slice.uid());
        let now = (service_of(&slice), is_managed(&slice));
        let before = if gone { seen.remove(&uid) } else { seen.insert(uid.clone(), now.clone()) };
        let (service, managed) = now;
        let due: Vec<(Option<Key>, Check)> = match (gone, before) {
            (true, _) if managed => vec![(service, Check::Deleted { uid })],
            (true, _) => Vec::new(),
            (false, Some((old_service, _))) if old_service != service => {
                vec![(old_service, Check::Always), (service, Check::Always)]
            }
            (false, Some((_, was_managed))) if was_managed != managed => {
                vec![(service, Check::Always)]
            }
            (false, _) if managed => vec![(service, Check::Changed { slice: key, uid })],
            (false, _) => Vec::new(),
        };
        for (service, check) in due {
            let Some(service) = service else { continue };
            let (queue, slices, context) = (queue.clone(), slices.clone(), context.clone());
            tokio::spawn(async move {
                tokio::time::sleep(SLICE_CHANGE_DELAY).await;
                if check.due(&service, &slices, &context) {
                    let _ = queue.send(service);
                }
            });
        }
    }
}

/// One round for a Service; `Some(d)` asks for another after `d`.
async fn reconcile(
    service: Arc<Service>,
    context: Arc<Context>,
) -> Result<Option<Duration>, Error> {
    if !has_slices(&service) {
        return Ok(None);
    }
    let key = ObjectRef::from_obj(service.as_ref());
    let namespace = service.namespace().unwrap_or_default();
    let name = service.name_any();
    let mut pods: Vec<Arc<Pod>> = context
        .pods
        .state()
        .into_iter()
        .filter(|p| p.metadata.namespace.as_deref() == Some(namespace.as_str()))
        .filter(|p| selects(&service, p.labels()))
        .collect();
    pods.sort_by_key(|p| p.name_any());
    let mut slices: Vec<Arc<EndpointSlice>> = context
        .slices
        .state()
        .into_iter()
        .filter(|s| s.metadata.namespace.as_deref() == Some(namespace.as_str()))
        .filter(|s| {
            s.labels().get(LABEL_SERVICE_NAME) == Some(&name)
                && is_managed(s)
                && s.metadata.deletion_timestamp.is_none()
        })
        .collect();
    slices.sort_by_key(|s| s.name_any());
    if context.tracker().stale(&key, &slices) {
        return Ok(Some(RETRY));
    }
    let pod_refs: Vec<&Pod> = pods.iter().map(Arc::as_ref).collect();
    let trigger = {
        let mut triggers = context.triggers();
        let (at, next) = trigger_time(triggers.get(&key), &service, &pod_refs);
        triggers.insert(key.clone(), next);
        at
    };
    let nodes = context.nodes.clone();
    let node = move |name: &str| nodes.get(&ObjectRef::new(name));
    let slice_refs: Vec<&EndpointSlice> = slices.iter().map(Arc::as_ref).collect();
    let plan = plan(&service, &pod_refs, &node, &slice_refs, MAX_ENDPOINTS_PER_SLICE);
    write(&context, &service, &key, plan.changes, trigger).await?;
    Ok((!plan.skipped.is_empty()).then_some(RETRY))
}

/// What a round waits to see in the slice cache after its writes.
enum Awaited {
    /// The slice at this resourceVersion or later.
    Present { name: String, uid: String, version: String },
    /// The slice gone.
    Gone { name: String, uid: String },
}

/// Makes the planned writes in order, stopping at the first failure, then waits until the
/// slice cache shows the ones made.
async fn write(
    context: &Context,
    service: &Service,
    key: &Key,
    changes: Vec<Change>,
    trigger: Option<Timestamp>,
) -> Result<(), Error> {
    let namespace = service.namespace().unwrap_or_default();
    let api: Api<EndpointSlice> = Api::namespaced(context.client.clone(), &namespace);
    let service_name = format!("{namespace}/{}", service.name_any());
    let mut awaited = Vec::new();
    let mut result = Ok(());
    for change in changes {
        let done = match change {
            Change::Create(mut slice) => {
                // No new slices for a Service being deleted (the garbage collector would race).
                if service.metadata.deletion_timestamp.is_some() {
                    continue;
                }
                set_trigger_time(&mut slice, trigger);
                match api.create(&PostParams::default(), &slice).await {
                    Ok(made) => Ok(Some(made)),
                    // A terminating namespace refuses new content for good.
                    Err(kube::Error::Api(e)) if namespace_terminating(&e) => break,
                    Err(source) => Err(api_error(format!(
                        "create endpointslice for service {service_name}"
                    ))(source)),
                }
            }
            Change::Update(mut slice) => {
                set_trigger_time(&mut slice, trigger);
                let name = slice.name_any();
                api.replace(&name, &PostParams::default(), &slice).await.map(Some).map_err(
                    api_error(format!("update endpointslice {name} for service {service_name}")),
                )
            }
            Change::Delete(slice) => {
                let name = slice.name_any();
                match api.delete(&name, &DeleteParams::default()).await {
                    Ok(_) => {
                        context.tracker().deleted(key, &slice);
                        let uid = slice.uid().unwrap_or_default();
                        awaited.push(Awaited::Gone { name, uid });
                        Ok(None)
                    }
                    Err(kube::Error::Api(e)) if e.code == 404 => Ok(None),
                    Err(source) => Err(api_error(format!(
                        "delete endpointslice {name} for service {service_name}"
                    ))(source)),
                }
            }
        };
        match done {
            Ok(Some(written)) => {
                context.tracker().wrote(key, &written);
                awaited.push(Awaited::Present {
                    name: written.name_any(),
                    uid: written.uid().unwrap_or_default(),
                    version: written.resource_version().unwrap_or_default(),
                });
            }
            Ok(None) => {}
            Err(e) => {
                result = Err(e);
                break;
            }
        }
    }
    if !awaited.is_empty() {
        super::wait_until(|| awaited.iter().all(|a| shown(&context.slices, &namespace, a))).await;
    }
    result
}

/// Whether the slice cache shows a write.
fn shown(slices: &Store<EndpointSlice>, namespace: &str, awaited: &Awaited) -> bool {
    match awaited {
        Awaited::Present { name, uid, version } => {
            slices.get(&ObjectRef::new(name).within(namespace)).is_some_and(|s| {
                let cached = s.resource_version().unwrap_or_default();
                s.uid().as_deref() == Some(uid.as_str())
                    && (cached == *version
                        || matches!((cached.parse::<u64>(), version.parse::<u64>()), (Ok(c), Ok(v)) if c > v))
            })
        }
        Awaited::Gone { name, uid } => slices
            .get(&ObjectRef::new(name).within(namespace))
            .is_none_or(|s| s.uid().as_deref() != Some(uid.as_str())),
    }
}

/// Whether a create failed because the namespace is being deleted.
fn namespace_terminating(e: &kube::core::Status) -> bool {
    let cause = e
        .details
        .as_ref()
        .is_some_and(|d| d.causes.iter().any(|c| c.reason == "NamespaceTerminating"));
    cause || (e.code == 403 && e.message.contains("because it is being terminated"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::{Value, json};

    fn service(extra: Value) -> Service {
        let mut svc = json!({
            "metadata": {"name": "web", "namespace": "default", "uid": "svc-uid",
                "creationTimestamp": "2026-01-01T00:00:00Z", "labels": {"team": "a"}},
            "spec": {"selector": {"app": "web"}, "ports": [
                {"name": "http", "port": 80, "protocol": "TCP", "targetPort": "http"},
                {"name": "metrics", "port": 9090, "protocol": "TCP", "targetPort": 9091},
            ]},
        });
        merge(&mut svc, extra);
        serde_json::from_value(svc).expect("a Service")
    }

    fn merge(into: &mut Value, extra: Value) {
        match (into, extra) {
            (Value::Object(a), Value::Object(b)) => {
                for (k, v) in b {
                    merge(a.entry(k).or_insert(Value::Null), v);
                }
            }
            (slot, v) => *slot = v,
        }
    }

    /// A running pod `n` on `node`, with IP `10.244.0.<n+2>`, ready or not.
    fn pod(n: usize, node: &str, ready: bool) -> Pod {
        serde_json::from_value(json!({
            "metadata": {"name": format!("web-{n}"), "namespace": "default",
                "uid": format!("pod-{n}"), "labels": {"app": "web"}},
            "spec": {"nodeName": node, "containers": [{"name": "app", "image": "nginx",
                "ports": [{"name": "http", "containerPort": 8080, "protocol": "TCP"}]}]},
            "status": {"phase": "Running", "podIP": ip(n), "podIPs": [{"ip": ip(n)}],
                "conditions": [{"type": "Ready", "status": if ready { "True" } else { "False" },
                    "lastTransitionTime": "2026-01-01T00:01:00Z"}]},
        }))
        .expect("a Pod")
    }

    fn ip(n: usize) -> String {
        format!("10.244.{}.{}", n / 200, n % 200 + 2)
    }

    fn nodes() -> impl Fn(&str) -> Option<Arc<Node>> {
        |name: &str| {
            let zone = if name == "node-a" { "zone-a" } else { "zone-b" };
            (name.starts_with("node-")).then(|| {
                Arc::new(
                    serde_json::from_value(json!({"metadata": {"name": name,
                        "labels": {"topology.kubernetes.io/zone": zone}}}))
                    .expect("a Node"),
                )
            })
        }
    }

    fn plan_for(svc: &Service, pods: &[Pod], existing: &[EndpointSlice]) -> Plan {
        let pods: Vec<&Pod> = pods.iter().collect();
        let existing: Vec<&EndpointSlice> = existing.iter().collect();
        plan(svc, &pods, &nodes(), &existing, MAX_ENDPOINTS_PER_SLICE)
    }

    /// The slices as the API server would store the plan's writes over `existing`.
    fn store(existing: &[EndpointSlice], plan: &Plan) -> Vec<EndpointSlice> {
        let mut out: BTreeMap<String, EndpointSlice> =
            existing.iter().map(|s| (s.name_any(), s.clone())).collect();
        for (i, change) in plan.changes.iter().enumerate() {
            match change {
                Change::Create(s) => {
                    let mut s = s.clone();
                    let name = format!("web-new{}-{i}", out.len());
                    s.metadata.name = Some(name.clone());
                    s.metadata.uid = Some(format!("uid-{name}"));
                    out.insert(name, s);
                }
                Change::Update(s) => {
                    let mut s = s.clone();
                    s.metadata.uid = out.get(&s.name_any()).and_then(|o| o.metadata.uid.clone());
                    out.insert(s.name_any(), s);
                }
                Change::Delete(s) => {
                    out.remove(&s.name_any());
                }
            }
        }
        out.into_values().collect()
    }

    fn conditions(e: &Endpoint) -> (Option<bool>, Option<bool>, Option<bool>) {
        let c = e.conditions.clone().unwrap_or_default();
        (c.ready, c.serving, c.terminating)
    }

    #[test]
    fn two_ready_pods_make_one_slice() {
        let svc = service(json!({}));
        let pods = [pod(0, "node-a", true), pod(1, "node-b", true)];
        let p = plan_for(&svc, &pods, &[]);
        let [Change::Create(slice)] = p.changes.as_slice() else { panic!("{p:?}") };
        assert_eq!(slice.metadata.generate_name.as_deref(), Some("web-"));
        assert_eq!(slice.address_type, "IPv4");
        let labels = slice.metadata.labels.clone().unwrap_or_default();
        assert_eq!(labels.get(LABEL_SERVICE_NAME).map(String::as_str), Some("web"));
        assert_eq!(labels.get(LABEL_MANAGED_BY).map(String::as_str), Some(CONTROLLER_NAME));
        assert_eq!(labels.get("team").map(String::as_str), Some("a"));
        assert!(!labels.contains_key(LABEL_HEADLESS));
        let owner = &slice.metadata.owner_references.clone().unwrap_or_default()[0];
        assert_eq!((owner.kind.as_str(), owner.uid.as_str()), ("Service", "svc-uid"));
        assert_eq!((owner.controller, owner.block_owner_deletion), (Some(true), Some(true)));
        let ports: Vec<(Option<String>, Option<i32>)> =
            slice.ports.iter().flatten().map(|p| (p.name.clone(), p.port)).collect();
        assert_eq!(
            ports,
            [(Some("http".into()), Some(8080)), (Some("metrics".into()), Some(9091))]
        );
        assert_eq!(endpoints(slice).len(), 2);
        let first = &endpoints(slice)[0];
        assert_eq!(first.addresses, [ip(0)]);
        assert_eq!(conditions(first), (Some(true), Some(true), Some(false)));
        assert_eq!(first.node_name.as_deref(), Some("node-a"));
        assert_eq!(first.zone.as_deref(), Some("zone-a"));
        let target = first.target_ref.clone().unwrap_or_default();
        assert_eq!(
            (target.kind.as_deref(), target.name.as_deref(), target.uid.as_deref()),
            (Some("Pod"), Some("web-0"), Some("pod-0"))
        );
        // Stored, the same pods plan nothing.
        let stored = store(&[], &p);
        assert_eq!(plan_for(&svc, &pods, &stored), Plan::default());
    }

    #[test]
    fn conditions_follow_readiness_deletion_and_publish_not_ready() {
        let svc = service(json!({}));
        let mut deleting = pod(1, "node-a", true);
        deleting.metadata.deletion_timestamp = svc.metadata.creation_timestamp.clone();
        let mut finished = pod(2, "node-a", false);
        if let Some(s) = finished.status.as_mut() {
            s.phase = Some("Succeeded".into());
        }
        let mut no_ip = pod(3, "node-a", false);
        no_ip.status = None;
        let pods = [pod(0, "node-a", false), deleting, finished, no_ip];
        let p = plan_for(&svc, &pods, &[]);
        let [Change::Create(slice)] = p.changes.as_slice() else { panic!("{p:?}") };
        let got: Vec<_> = endpoints(slice).iter().map(conditions).collect();
        assert_eq!(
            got,
            [(Some(false), Some(false), Some(false)), (Some(false), Some(true), Some(true))]
        );
        let publish = service(json!({"spec": {"publishNotReadyAddresses": true}}));
        let p = plan_for(&publish, &pods, &[]);
        let [Change::Create(slice)] = p.changes.as_slice() else { panic!("{p:?}") };
        let got: Vec<_> = endpoints(slice).iter().map(conditions).collect();
        assert_eq!(
            got,
            [(Some(true), Some(false), Some(false)), (Some(true), Some(true), Some(true))]
        );
    }

    #[test]
    fn a_readiness_change_updates_the_slice_in_place() {
        let svc = service(json!({}));
        let pods = [pod(0, "node-a", true), pod(1, "node-b", true)];
        let stored = store(&[], &plan_for(&svc, &pods, &[]));
        let pods = [pod(0, "node-a", true), pod(1, "node-b", false)];
        let p = plan_for(&svc, &pods, &stored);
        let [Change::Update(slice)] = p.changes.as_slice() else { panic!("{p:?}") };
        assert_eq!(slice.name_any(), stored[0].name_any());
        assert_eq!(conditions(&endpoints(slice)[1]), (Some(false), Some(false), Some(false)));
    }

    #[test]
    fn a_hundred_and_fifty_pods_make_two_slices_and_shrink_back() {
        let svc = service(json!({}));
        let pods: Vec<Pod> = (0..150).map(|n| pod(n, "node-a", true)).collect();
        let p = plan_for(&svc, &pods, &[]);
        let sizes: Vec<usize> = p
            .changes
            .iter()
            .map(|c| match c {
                Change::Create(s) => endpoints(s).len(),
                other => panic!("{other:?}"),
            })
            .collect();
        assert_eq!(sizes, [100, 50]);
        let stored = store(&[], &p);
        assert_eq!(plan_for(&svc, &pods, &stored), Plan::default());
        // The pods of the smaller slice go: that slice is deleted, the other left alone.
        let small = stored.iter().find(|s| endpoints(s).len() == 50).expect("the small slice");
        let leaving: Vec<String> = endpoints(small)
            .iter()
            .filter_map(|e| e.target_ref.as_ref().and_then(|t| t.name.clone()))
            .collect();
        let staying: Vec<Pod> =
            pods.into_iter().filter(|p| !leaving.contains(&p.name_any())).collect();
        let p = plan_for(&svc, &staying, &stored);
        let [Change::Delete(gone)] = p.changes.as_slice() else { panic!("{p:?}") };
        assert_eq!(gone.name_any(), small.name_any());
        // Ten of the big slice's pods go too: it is updated, and the rest stays.
        let fewer: Vec<Pod> = staying.into_iter().skip(10).collect();
        let p = plan_for(&svc, &fewer, &stored);
        let [Change::Update(big), Change::Delete(gone)] = p.changes.as_slice() else {
            panic!("{p:?}")
        };
        assert_eq!((endpoints(big).len(), gone.name_any()), (90, small.name_any()));
    }

    #[test]
    fn no_pods_keep_one_placeholder_slice() {
        let svc = service(json!({}));
        let p = plan_for(&svc, &[], &[]);
        let [Change::Create(slice)] = p.changes.as_slice() else { panic!("{p:?}") };
        assert!(endpoints(slice).is_empty());
        assert_eq!(slice.ports.as_deref().map(<[_]>::len), Some(0));
        let stored = store(&[], &p);
        assert_eq!(plan_for(&svc, &[], &stored), Plan::default());
        // Pods arriving reuse the placeholder's name; leaving, the slice is the placeholder again.
        let pods = [pod(0, "node-a", true)];
        let p = plan_for(&svc, &pods, &stored);
        let [Change::Update(slice)] = p.changes.as_slice() else { panic!("{p:?}") };
        assert_eq!(slice.name_any(), stored[0].name_any());
        assert_eq!(endpoints(slice).len(), 1);
        let with_pod = store(&stored, &p);
        let p = plan_for(&svc, &[], &with_pod);
        let [Change::Update(slice)] = p.changes.as_slice() else { panic!("{p:?}") };
        assert_eq!(slice.name_any(), stored[0].name_any());
        assert!(endpoints(slice).is_empty());
    }

    #[test]
    fn replaced_pods_reuse_the_slice() {
        let svc = service(json!({}));
        let stored = store(&[], &plan_for(&svc, &[pod(0, "node-a", true)], &[]));
        let p = plan_for(&svc, &[pod(7, "node-b", true)], &stored);
        let [Change::Update(slice)] = p.changes.as_slice() else { panic!("{p:?}") };
        assert_eq!(slice.name_any(), stored[0].name_any());
        assert_eq!(endpoints(slice)[0].addresses, [ip(7)]);
    }

    #[test]
    fn service_labels_and_headless_services() {
        let svc =
            service(json!({"metadata": {"labels": {"team": "b"}}, "spec": {"clusterIP": "None"}}));
        let stored = store(&[], &plan_for(&service(json!({})), &[pod(0, "node-a", true)], &[]));
        let p = plan_for(&svc, &[pod(0, "node-a", true)], &stored);
        let [Change::Update(slice)] = p.changes.as_slice() else { panic!("{p:?}") };
        let labels = slice.metadata.labels.clone().unwrap_or_default();
        assert_eq!(labels.get("team").map(String::as_str), Some("b"));
        assert_eq!(labels.get(LABEL_HEADLESS).map(String::as_str), Some(""));
    }

    #[test]
    fn pods_on_unknown_nodes_wait_unless_not_ready_addresses_are_published() {
        let svc = service(json!({}));
        let p = plan_for(&svc, &[pod(0, "gone", true)], &[]);
        assert_eq!(p.skipped, ["web-0"]);
        let [Change::Create(slice)] = p.changes.as_slice() else { panic!("{p:?}") };
        assert!(endpoints(slice).is_empty());
        let publish = service(json!({"spec": {"publishNotReadyAddresses": true}}));
        let p = plan_for(&publish, &[pod(0, "gone", true)], &[]);
        assert!(p.skipped.is_empty());
        let [Change::Create(slice)] = p.changes.as_slice() else { panic!("{p:?}") };
        assert_eq!(endpoints(slice)[0].zone, None);
    }

    #[test]
    fn an_unresolved_named_port_groups_the_pod_apart() {
        let svc = service(json!({}));
        let mut plain = pod(1, "node-a", true);
        if let Some(spec) = plain.spec.as_mut() {
            spec.containers[0].ports = None;
        }
        let p = plan_for(&svc, &[pod(0, "node-a", true), plain], &[]);
        let ports: Vec<usize> = p
            .changes
            .iter()
            .map(|c| match c {
                Change::Create(s) => s.ports.as_deref().map_or(0, <[_]>::len),
                other => panic!("{other:?}"),
            })
            .collect();
        assert_eq!(ports.len(), 2);
        assert!(ports.contains(&1) && ports.contains(&2), "{ports:?}");
    }

    #[test]
    fn only_services_with_a_selector_and_not_external_name_get_slices() {
        let labels: BTreeMap<String, String> = [("app".into(), "web".into())].into();
        assert!(selects(&service(json!({})), &labels));
        let mut no_selector = service(json!({}));
        let mut empty_selector = no_selector.clone();
        if let (Some(none), Some(empty)) = (no_selector.spec.as_mut(), empty_selector.spec.as_mut())
        {
            none.selector = None;
            empty.selector = Some(BTreeMap::new());
        }
        let external = service(json!({"spec": {"type": "ExternalName"}}));
        for svc in [no_selector, empty_selector, external] {
            assert!(!has_slices(&svc) && !selects(&svc, &labels), "{svc:?}");
        }
        let other_labels: BTreeMap<String, String> = [("app".into(), "db".into())].into();
        assert!(!selects(&service(json!({})), &other_labels));
    }

    #[test]
    fn the_trigger_time_is_the_creation_then_the_earliest_new_transition() {
        let svc = service(json!({}));
        let a = pod(0, "node-a", true);
        let (first, state) = trigger_time(None, &svc, &[&a]);
        assert_eq!(first.map(|t| t.to_string()).as_deref(), Some("2026-01-01T00:00:00Z"));
        let (same, state) = trigger_time(Some(&state), &svc, &[&a]);
        assert_eq!(same, None);
        let mut b = pod(1, "node-a", false);
        let later: Timestamp = "2026-01-01T00:05:00Z".parse().expect("time");
        if let Some(c) = b.status.as_mut().and_then(|s| s.conditions.as_mut()) {
            c[0].last_transition_time =
                Some(k8s_openapi::apimachinery::pkg::apis::meta::v1::Time(later));
        }
        let (changed, _) = trigger_time(Some(&state), &svc, &[&a, &b]);
        assert_eq!(changed, Some(later));
        let mut slice = new_slice(&svc, Vec::new(), "IPv4");
        set_trigger_time(&mut slice, changed);
        let annotations = slice.metadata.annotations.clone().unwrap_or_default();
        assert_eq!(annotations.get(TRIGGER_TIME).map(String::as_str), Some("2026-01-01T00:05:00Z"));
        set_trigger_time(&mut slice, None);
        assert_eq!(slice.metadata.annotations, None);
    }
}
