//! Deletion protection: the `policy.kruise.io/delete-protection` label, as upstream's
//! `deletionprotection` webhook helpers enforce it.
//!
//! - `Always`: the object may not be deleted at all.
//! - `Cascading`: the object may not be deleted while it still has dependents: workloads while
//!   `spec.replicas` is above zero, a namespace while it has active pods or bound PVCs, a
//!   CustomResourceDefinition while custom resources of it exist (and only when upstream's
//!   `DeletionProtectionForCRDCascadingGate` is on; otherwise `Cascading` on a CRD refuses).
//! - Services and Ingresses honour `Always` only.
//! - Any other value, no label, or an object already being deleted: allowed.
//!
//! Upstream only registers these checks with the `ResourcesDeletionProtection` gate on; the
//! caller decides whether to call [`check_deletion`] at all. Counting dependents needs the
//! cluster, so the caller counts them (only when [`ProtectionPolicy::Cascading`] applies,
//! see [`protection_policy`]) and passes them in [`Dependents`].

use std::collections::BTreeMap;
use std::fmt;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kruise_api::well_known::labels::DELETION_PROTECTION;
use kruise_api::well_known::values::deletion_protection::{ALWAYS, CASCADING};

/// The kinds upstream protects.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ProtectedKind {
    /// core/v1 Namespace: cascading counts active pods and bound PVCs.
    Namespace,
    /// apiextensions CustomResourceDefinition: cascading counts existing custom resources.
    CustomResourceDefinition,
    /// apps/v1 Deployment: cascading looks at replicas.
    Deployment,
    /// apps/v1 ReplicaSet: cascading looks at replicas.
    ReplicaSet,
    /// apps/v1 StatefulSet: cascading looks at replicas.
    StatefulSet,
    /// apps.kruise.io CloneSet: cascading looks at replicas.
    CloneSet,
    /// apps.kruise.io (Advanced) StatefulSet: cascading looks at replicas.
    AdvancedStatefulSet,
    /// apps.kruise.io UnitedDeployment: cascading looks at replicas.
    UnitedDeployment,
    /// core/v1 Service: `Always` only.
    Service,
    /// networking.k8s.io Ingress: `Always` only.
    Ingress,
}

impl ProtectedKind {
    /// The kind protected for an API group and kind, if any.
    pub fn from_group_kind(group: &str, kind: &str) -> Option<Self> {
        Some(match (group, kind) {
            ("", "Namespace") => ProtectedKind::Namespace,
            ("", "Service") => ProtectedKind::Service,
            ("apiextensions.k8s.io", "CustomResourceDefinition") => {
                ProtectedKind::CustomResourceDefinition
            }
            ("apps", "Deployment") => ProtectedKind::Deployment,
            ("apps", "ReplicaSet") => ProtectedKind::ReplicaSet,
            ("apps", "StatefulSet") => ProtectedKind::StatefulSet,
            ("apps.kruise.io", "CloneSet") => ProtectedKind::CloneSet,
            ("apps.kruise.io", "StatefulSet") => ProtectedKind::AdvancedStatefulSet,
            ("apps.kruise.io", "UnitedDeployment") => ProtectedKind::UnitedDeployment,
            ("networking.k8s.io", "Ingress") => ProtectedKind::Ingress,
            _ => return None,
        })
    }

    /// Whether `Cascading` means anything for this kind.
    pub fn supports_cascading(self) -> bool {
        !matches!(self, ProtectedKind::Service | ProtectedKind::Ingress)
    }

    /// Whether this is a workload whose cascading protection looks at `spec.replicas`.
    pub fn is_workload(self) -> bool {
        matches!(
            self,
            ProtectedKind::Deployment
                | ProtectedKind::ReplicaSet
                | ProtectedKind::StatefulSet
                | ProtectedKind::CloneSet
                | ProtectedKind::AdvancedStatefulSet
                | ProtectedKind::UnitedDeployment
        )
    }
}

/// The protection an object asks for through its label.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ProtectionPolicy {
    /// `Always`.
    Always,
    /// `Cascading`.
    Cascading,
}

impl ProtectionPolicy {
    /// The label value.
    pub fn as_str(self) -> &'static str {
        match self {
            ProtectionPolicy::Always => ALWAYS,
            ProtectionPolicy::Cascading => CASCADING,
        }
    }
}

/// The policy the object's labels ask for (values are case-sensitive; others mean none).
pub fn protection_policy(labels: Option<&BTreeMap<String, String>>) -> Option<ProtectionPolicy> {
    match labels?.get(DELETION_PROTECTION)?.as_str() {
        v if v == ALWAYS => Some(ProtectionPolicy::Always),
        v if v == CASCADING => Some(ProtectionPolicy::Cascading),
        _ => None,
    }
}

/// What the object being deleted still has; only the fields its kind uses are read.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Dependents {
    /// Workloads: `spec.replicas` (`None` when unset, which does not block).
    pub replicas: Option<i32>,
    /// Namespaces: pods that are active (not succeeded, failed or being deleted).
    pub active_pods: usize,
    /// Namespaces: PVCs with phase `Bound` that are not being deleted.
    pub bound_pvcs: usize,
    /// CRDs: custom resources of the CRD's storage version not being deleted.
    pub active_custom_resources: usize,
    /// CRDs: whether upstream's `DeletionProtectionForCRDCascadingGate` is on.
    pub crd_cascading_enabled: bool,
}

/// Why a deletion is refused; `Display` gives upstream's message, which names the label.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum DeletionForbidden {
    /// The object is labelled `Always`.
    #[error("forbidden by ResourcesProtectionDeletion for {DELETION_PROTECTION}={ALWAYS}")]
    Always,
    /// A workload labelled `Cascading` still wants replicas.
    #[error(
        "forbidden by ResourcesProtectionDeletion for {DELETION_PROTECTION}={CASCADING} and replicas {replicas}>0"
    )]
    Replicas {
        /// `spec.replicas`.
        replicas: i32,
    },
    /// A namespace labelled `Cascading` still has active pods.
    #[error(
        "forbidden by ResourcesProtectionDeletion for {DELETION_PROTECTION}={CASCADING} and active pods {count}>0"
    )]
    ActivePods {
        /// How many.
        count: usize,
    },
    /// A namespace labelled `Cascading` still has bound PVCs.
    #[error(
        "forbidden by ResourcesProtectionDeletion for {DELETION_PROTECTION}={CASCADING} and \"Bound\" status pvc {count}>0"
    )]
    BoundPvcs {
        /// How many.
        count: usize,
    },
    /// A CRD labelled `Cascading` still has custom resources.
    #[error(
        "forbidden by ResourcesProtectionDeletion for {DELETION_PROTECTION}={CASCADING} and active CRs {count}>0"
    )]
    ActiveCustomResources {
        /// How many.
        count: usize,
    },
    /// A CRD labelled `Cascading` while the CRD cascading gate is off.
    #[error("feature-gate DeletionProtectionForCRDCascadingGate is not enabled")]
    CrdCascadingDisabled,
}

impl DeletionForbidden {
    /// The HTTP status upstream's webhook answers with (403).
    pub const HTTP_STATUS: u16 = 403;
}

/// Whether an object of `kind` with metadata `meta` may be deleted now.
pub fn check_deletion(
    kind: ProtectedKind,
    meta: &ObjectMeta,
    dependents: &Dependents,
) -> Result<(), DeletionForbidden> {
    if meta.deletion_timestamp.is_some() {
        return Ok(());
    }
    match protection_policy(meta.labels.as_ref()) {
        None => Ok(()),
        Some(ProtectionPolicy::Always) => Err(DeletionForbidden::Always),
        Some(ProtectionPolicy::Cascading) => check_cascading(kind, dependents),
    }
}

fn check_cascading(kind: ProtectedKind, d: &Dependents) -> Result<(), DeletionForbidden> {
    match kind {
        ProtectedKind::Namespace => {
            if d.active_pods > 0 {
                Err(DeletionForbidden::ActivePods { count: d.active_pods })
            } else if d.bound_pvcs > 0 {
                Err(DeletionForbidden::BoundPvcs { count: d.bound_pvcs })
            } else {
                Ok(())
            }
        }
        ProtectedKind::CustomResourceDefinition => {
            if !d.crd_cascading_enabled {
                Err(DeletionForbidden::CrdCascadingDisabled)
            } else if d.active_custom_resources > 0 {
                Err(DeletionForbidden::ActiveCustomResources { count: d.active_custom_resources })
            } else {
                Ok(())
            }
        }
        ProtectedKind::Service | ProtectedKind::Ingress => Ok(()),
        _ => match d.replicas {
            Some(replicas) if replicas > 0 => Err(DeletionForbidden::Replicas { replicas }),
            _ => Ok(()),
        },
    }
}

impl fmt::Display for ProtectedKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            ProtectedKind::Namespace => "Namespace",
            ProtectedKind::CustomResourceDefinition => "CustomResourceDefinition",
            ProtectedKind::Deployment => "Deployment",
            ProtectedKind::ReplicaSet => "ReplicaSet",
            ProtectedKind::StatefulSet => "StatefulSet",
            ProtectedKind::CloneSet => "CloneSet",
            ProtectedKind::AdvancedStatefulSet => "StatefulSet",
            ProtectedKind::UnitedDeployment => "UnitedDeployment",
            ProtectedKind::Service => "Service",
            ProtectedKind::Ingress => "Ingress",
        })
    }
}
