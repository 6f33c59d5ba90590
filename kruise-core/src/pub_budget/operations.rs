//! The pod operations a budget guards, and what an update of a pod amounts to.

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::{Container, Pod, PodSpec};
use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use kruise_api::policy::v1beta1::{PodUnavailableBudget, PubOperation};
use kruise_api::well_known::annotations::PUB_PROTECT_OPERATIONS;
use kruise_api::well_known::kubernetes;

use crate::inplace::pod_qos_class;
use crate::pod::has_unavailable_label;
use crate::revision::quantity::equal_values;

/// A pod operation a budget may guard.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[non_exhaustive]
pub enum Operation {
    /// Deleting the pod.
    Delete,
    /// Evicting the pod through the eviction subresource.
    Evict,
    /// Updating the pod in a way that makes it unavailable for a while (an image change, any
    /// other spec change, an `unavailable-pod.kruise.io/` label).
    Update,
    /// Changing only cpu/memory of containers, which the kubelet applies without restarting
    /// them (with the `InPlacePodVerticalScaling` gate).
    Resize,
}

impl Operation {
    /// Every operation.
    pub const ALL: [Operation; 4] =
        [Operation::Delete, Operation::Evict, Operation::Update, Operation::Resize];

    /// The API spelling: `DELETE`, `EVICT`, `UPDATE`, `RESIZE`.
    pub fn as_str(self) -> &'static str {
        match self {
            Operation::Delete => "DELETE",
            Operation::Evict => "EVICT",
            Operation::Update => "UPDATE",
            Operation::Resize => "RESIZE",
        }
    }

    /// Parses the API spelling (case-sensitive, as upstream).
    pub fn parse(text: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|op| op.as_str() == text)
    }

    /// Whether the pod goes away (recorded in `disruptedPods`) rather than staying and being
    /// changed (recorded in `unavailablePods`).
    pub fn removes_pod(self) -> bool {
        matches!(self, Operation::Delete | Operation::Evict)
    }

    fn bit(self) -> u8 {
        match self {
            Operation::Delete => 1,
            Operation::Evict => 2,
            Operation::Update => 4,
            Operation::Resize => 8,
        }
    }
}

impl From<Operation> for PubOperation {
    fn from(op: Operation) -> Self {
        match op {
            Operation::Delete => PubOperation::Delete,
            Operation::Evict => PubOperation::Evict,
            Operation::Update => PubOperation::Update,
            Operation::Resize => PubOperation::Resize,
        }
    }
}

/// A set of [`Operation`]s.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct OperationSet(u8);

impl OperationSet {
    /// No operation.
    pub const fn empty() -> Self {
        Self(0)
    }

    /// This set with `op` added.
    pub fn with(self, op: Operation) -> Self {
        Self(self.0 | op.bit())
    }

    /// Whether `op` is in the set.
    pub fn contains(self, op: Operation) -> bool {
        self.0 & op.bit() != 0
    }

    /// The operations in the set, in [`Operation::ALL`] order.
    pub fn iter(self) -> impl Iterator<Item = Operation> {
        Operation::ALL.into_iter().filter(move |op| self.contains(*op))
    }
}

impl FromIterator<Operation> for OperationSet {
    fn from_iter<T: IntoIterator<Item = Operation>>(iter: T) -> Self {
        iter.into_iter().fold(Self::empty(), Self::with)
    }
}

/// The operations `budget` guards: `spec.protectOperations` when set, else the v1alpha1
/// annotation `kruise.io/pub-protect-operations` (comma-separated) when it names anything,
/// else DELETE, EVICT and UPDATE. RESIZE is guarded only when listed, or, as upstream, when
/// UPDATE is guarded and `InPlacePodVerticalScaling` is off (a resize is then an update).
///
/// Annotation entries that are not operations are kept out of the set, but like upstream they
/// still stop the default from applying.
pub fn protected_operations(
    budget: &PodUnavailableBudget,
    in_place_pod_vertical_scaling: bool,
) -> OperationSet {
    let mut set: OperationSet = if !budget.spec.protect_operations.is_empty() {
        budget
            .spec
            .protect_operations
            .iter()
            .filter_map(|op| Operation::parse(op.as_str()))
            .collect()
    } else {
        let annotated = budget
            .metadata
            .annotations
            .as_ref()
            .and_then(|a| a.get(PUB_PROTECT_OPERATIONS))
            .map(|text| text.split(',').filter(|s| !s.is_empty()).collect::<Vec<_>>())
            .filter(|entries| !entries.is_empty());
        match annotated {
            Some(entries) => entries.into_iter().filter_map(Operation::parse).collect(),
            None => [Operation::Delete, Operation::Evict, Operation::Update].into_iter().collect(),
        }
    };
    if !in_place_pod_vertical_scaling && set.contains(Operation::Update) {
        set = set.with(Operation::Resize);
    }
    set
}

/// What updating `old` to `new` amounts to for a budget: `None` when the change cannot make
/// the pod unavailable (labels or annotations only, spec untouched, no
/// `unavailable-pod.kruise.io/` label added); [`Operation::Resize`] when only container
/// cpu/memory change in a way the kubelet applies in place and `in_place_pod_vertical_scaling`
/// is on; [`Operation::Update`] otherwise.
pub fn classify_update(
    old: &Pod,
    new: &Pod,
    in_place_pod_vertical_scaling: bool,
) -> Option<Operation> {
    let label_added = !unavailable_label(old) && unavailable_label(new);
    if old.spec == new.spec && !label_added {
        return None;
    }
    if in_place_pod_vertical_scaling && !label_added && can_resize_in_place(old, new) {
        Some(Operation::Resize)
    } else {
        Some(Operation::Update)
    }
}

fn unavailable_label(pod: &Pod) -> bool {
    pod.metadata.labels.as_ref().is_some_and(has_unavailable_label)
}

/// Upstream's `CanResizeInplace` without the label check: the specs differ only in container
/// resources, neither pod is static, the QoS class stays, and every changed resource is cpu or
/// memory with a resize policy that does not restart the container.
fn can_resize_in_place(old: &Pod, new: &Pod) -> bool {
    let (Some(old_spec), Some(new_spec)) = (old.spec.as_ref(), new.spec.as_ref()) else {
        return false;
    };
    if without_resources(old_spec) != without_resources(new_spec) {
        return false;
    }
    if is_static(old) || is_static(new) {
        return false;
    }
    if pod_qos_class(old_spec) != pod_qos_class(new_spec) {
        return false;
    }
    if old_spec.containers.len() != new_spec.containers.len() {
        return false;
    }
    new_spec.containers.iter().all(|container| {
        old_spec
            .containers
            .iter()
            .find(|c| c.name == container.name)
            .is_some_and(|before| resources_resizable(before, container))
    })
}

fn without_resources(spec: &PodSpec) -> PodSpec {
    let mut spec = spec.clone();
    for container in &mut spec.containers {
        container.resources = None;
    }
    spec
}

fn is_static(pod: &Pod) -> bool {
    pod.metadata
        .annotations
        .as_ref()
        .and_then(|a| a.get(kubernetes::annotations::CONFIG_SOURCE))
        .is_some_and(|source| source != "api")
}

fn resources_resizable(old: &Container, new: &Container) -> bool {
    let empty = BTreeMap::new();
    let (old_requests, old_limits) = resource_lists(old, &empty);
    let (new_requests, new_limits) = resource_lists(new, &empty);
    let names: std::collections::BTreeSet<&String> = old_requests
        .keys()
        .chain(new_requests.keys())
        .chain(old_limits.keys())
        .chain(new_limits.keys())
        .collect();
    names.into_iter().all(|name| {
        let changed = changed(old_requests.get(name), new_requests.get(name))
            || changed(old_limits.get(name), new_limits.get(name));
        if !changed {
            return true;
        }
        if name != "cpu" && name != "memory" {
            return false;
        }
        let policy = new
            .resize_policy
            .iter()
            .flatten()
            .find(|p| &p.resource_name == name)
            .map(|p| p.restart_policy.as_str());
        matches!(policy, None | Some("") | Some("NotRequired"))
    })
}

type ResourceList = BTreeMap<String, Quantity>;

fn resource_lists<'a>(
    c: &'a Container,
    empty: &'a ResourceList,
) -> (&'a ResourceList, &'a ResourceList) {
    let r = c.resources.as_ref();
    (
        r.and_then(|r| r.requests.as_ref()).unwrap_or(empty),
        r.and_then(|r| r.limits.as_ref()).unwrap_or(empty),
    )
}

fn changed(old: Option<&Quantity>, new: Option<&Quantity>) -> bool {
    match (old, new) {
        (None, None) => false,
        (Some(a), Some(b)) => !equal_values(&a.0, &b.0),
        _ => true,
    }
}
