//! What a planner returns: actions as data, the new status, Events and when to look again.
//! Every planner shares this vocabulary ([`Plan`]), so that one applier (kruise-kube's) carries
//! out any of their plans: the workload planners (CloneSet, Advanced StatefulSet, Advanced
//! DaemonSet) through the workload actions, the other kinds through the actions that name
//! their target in full ([`Action::CreateObject`], [`Action::PatchObject`],
//! [`Action::DeleteObject`], [`Action::EvictPod`]).
//!
//! The action vocabulary is not `#[non_exhaustive]`: the applier matches it exhaustively, so
//! an action nobody carries out is a compile error, never a log line at run time.

use std::sync::Arc;

use jiff::SignedDuration;
use k8s_openapi::api::apps::v1::ControllerRevision;
use k8s_openapi::api::core::v1::{PersistentVolumeClaim, Pod, Volume};
use kruise_api::apps::v1beta1::ImagePullJob;
use serde::Serialize;

use crate::expectations::{ControllerExpectations, Expectation, ScaleAction};

/// A patch body and how the API server should apply it. Bodies are shared, so that a plan
/// that patches many pods alike builds the body once.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(tag = "type", content = "body", rename_all = "camelCase")]
pub enum Patch {
    /// `application/strategic-merge-patch+json`.
    #[serde(serialize_with = "shared_body")]
    Strategic(Arc<serde_json::Value>),
    /// `application/merge-patch+json`.
    #[serde(serialize_with = "shared_body")]
    Merge(Arc<serde_json::Value>),
}

fn shared_body<S: serde::Serializer>(
    body: &Arc<serde_json::Value>,
    serializer: S,
) -> Result<S::Ok, S::Error> {
    body.as_ref().serialize(serializer)
}

impl Patch {
    /// A strategic merge patch with `body`.
    pub fn strategic(body: serde_json::Value) -> Self {
        Self::Strategic(Arc::new(body))
    }

    /// A JSON merge patch with `body`.
    pub fn merge(body: serde_json::Value) -> Self {
        Self::Merge(Arc::new(body))
    }

    /// The patch body.
    pub fn body(&self) -> &serde_json::Value {
        match self {
            Self::Strategic(body) | Self::Merge(body) => body,
        }
    }

    /// The Content-Type the API server expects for this patch.
    pub fn content_type(&self) -> &'static str {
        match self {
            Self::Strategic(_) => "application/strategic-merge-patch+json",
            Self::Merge(_) => "application/merge-patch+json",
        }
    }
}

/// Why a pod is patched.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[non_exhaustive]
pub enum PodPatchPurpose {
    /// Move the pod to another lifecycle state (and set the hook's labels/finalizers).
    Lifecycle,
    /// Update the pod in place to another revision.
    InPlaceUpdate,
    /// Apply a delayed in-place update after its grace period, or drop a stale one.
    InPlaceGrace,
    /// Mark the pod for deletion with `apps.kruise.io/specified-delete` (recreate update).
    SpecifiedDelete,
    /// Add the missing `pod-template-hash` label.
    TemplateHashLabel,
    /// Drop the workload's ownerReference from a pod the selector no longer matches.
    Release,
    /// Put back the labels that give a pod its identity (an Advanced StatefulSet pod's
    /// `statefulset.kubernetes.io/pod-name` and `apps.kubernetes.io/pod-index`).
    Identity,
    /// Upgrade a pod's SidecarSet sidecars in place (images, hash annotations, in-place
    /// update state; for a hot-upgrade sidecar, the idle container takes the new image).
    SidecarSetUpgrade,
    /// Reset the old container of a hot-upgrade sidecar to the empty image once the new one
    /// runs.
    SidecarSetHotUpgradeReset,
    /// Mark a pod's container launch priority completed (every barrier key given).
    LaunchPriorityCompleted,
    /// Swap in a job pod's sidecar terminator image (`..._WITH_IMAGE`, on a virtual kubelet).
    SidecarTerminatorImage,
    /// Label a UnitedDeployment pod reserved or not (`apps.kruise.io/united-deployment-reserved-pod`).
    ReservedLabel,
}

/// Why a pod's status is patched.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[non_exhaustive]
pub enum PodStatusPurpose {
    /// Set the `InPlaceUpdateReady` condition.
    InPlaceUpdateReady,
    /// Add or remove a lifecycle hook's key in the `KruisePodReady` condition.
    KruisePodReady,
    /// Add the `KruisePodReady` condition, `True`, to a pod that has the gate and no
    /// condition yet (the pod-readiness controller).
    KruisePodReadyOpened,
    /// Record in the `SidecarSetUpgradable` condition whether a SidecarSet can upgrade the pod.
    SidecarSetUpgradable,
    /// Set a job pod's phase from its main containers, with the `SidecarTerminated` condition.
    SidecarTerminated,
    /// Set a PodProbeMarker probe's condition and markers (labels and annotations, which
    /// `pods/status` also writes).
    ProbeMarker,
}

/// Why a pod is deleted.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[non_exhaustive]
pub enum DeletePurpose {
    /// Fewer replicas are wanted.
    ScaleIn,
    /// Named in `scaleStrategy.podsToDelete` or labelled `apps.kruise.io/specified-delete`.
    SpecifiedDelete,
    /// The pod was in `PreparingDelete` and its preDelete hook has let go.
    PreDeleteFinished,
    /// The pod has failed or succeeded and is replaced.
    Finished,
    /// The pod is recreated to move it to the update revision, or to give it volumes its
    /// template now has.
    Recreate,
}

/// One change to make, with its exact body. Apply actions in order: a revision comes before the
/// pods that name it, a PVC before the pod that mounts it.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(tag = "action", rename_all = "camelCase")]
pub enum Action {
    /// Create a ControllerRevision.
    #[serde(rename_all = "camelCase")]
    CreateRevision {
        /// The revision to create.
        revision: Box<ControllerRevision>,
    },
    /// Patch a ControllerRevision (roll back by raising its `revision`, or refresh an
    /// annotation).
    #[serde(rename_all = "camelCase")]
    PatchRevision {
        /// Its name.
        name: String,
        /// The patch.
        patch: Patch,
    },
    /// Delete a ControllerRevision beyond `revisionHistoryLimit`.
    #[serde(rename_all = "camelCase")]
    DeleteRevision {
        /// Its name.
        name: String,
    },
    /// Create a PVC from a volumeClaimTemplate.
    #[serde(rename_all = "camelCase")]
    CreatePvc {
        /// The claim to create.
        pvc: Box<PersistentVolumeClaim>,
    },
    /// Patch a PVC (hand its ownership to the pod it belongs to).
    #[serde(rename_all = "camelCase")]
    PatchPvc {
        /// Its name.
        name: String,
        /// The patch.
        patch: Patch,
    },
    /// Delete a PVC.
    #[serde(rename_all = "camelCase")]
    DeletePvc {
        /// Its name.
        name: String,
        /// Its UID, for a delete precondition.
        uid: String,
    },
    /// Create a pod.
    #[serde(rename_all = "camelCase")]
    CreatePod {
        /// The pod to create, with name, labels and ownerReference set.
        pod: NewPod,
    },
    /// Patch a pod's metadata or spec.
    #[serde(rename_all = "camelCase")]
    PatchPod {
        /// Its namespace; `None`: the owner's (a workload's own pods).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        namespace: Option<String>,
        /// Its name.
        name: String,
        /// Its UID.
        uid: String,
        /// Why.
        purpose: PodPatchPurpose,
        /// The patch.
        patch: Patch,
    },
    /// Patch a pod's status subresource (conditions).
    #[serde(rename_all = "camelCase")]
    PatchPodStatus {
        /// Its namespace; `None`: the owner's (a workload's own pods).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        namespace: Option<String>,
        /// Its name.
        name: String,
        /// Its UID.
        uid: String,
        /// Why.
        purpose: PodStatusPurpose,
        /// The patch.
        patch: Patch,
    },
    /// Patch a pod's `resize` subresource (container resources changed in place, on API
    /// servers that resize through it). Comes before the pod patch of the same update.
    #[serde(rename_all = "camelCase")]
    PatchPodResize {
        /// Its namespace; `None`: the owner's (a workload's own pods).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        namespace: Option<String>,
        /// Its name.
        name: String,
        /// Its UID.
        uid: String,
        /// The patch.
        patch: Patch,
    },
    /// Delete a pod.
    #[serde(rename_all = "camelCase")]
    DeletePod {
        /// Its name.
        name: String,
        /// Its UID, for a delete precondition.
        uid: String,
        /// Why.
        purpose: DeletePurpose,
    },
    /// Create an ImagePullJob (image pre-download before an update). Already existing counts
    /// as done.
    #[serde(rename_all = "camelCase")]
    CreateImagePullJob {
        /// The job to create, with name, labels and ownerReference set.
        job: Box<ImagePullJob>,
    },
    /// Delete an ImagePullJob the workload controls (its update is over).
    #[serde(rename_all = "camelCase")]
    DeleteImagePullJob {
        /// Its name.
        name: String,
    },
    /// Patch the workload itself (for example, drop names from a CloneSet's
    /// `scaleStrategy.podsToDelete` that no longer exist). The patch carries the
    /// resourceVersion it was computed from.
    #[serde(rename_all = "camelCase")]
    PatchWorkload {
        /// The patch.
        patch: Patch,
    },
    /// Create any object. Already existing counts as done.
    #[serde(rename_all = "camelCase")]
    CreateObject {
        /// Its kind, namespace and name (the guard is unused).
        target: Target,
        /// The whole object.
        body: Arc<serde_json::Value>,
    },
    /// Patch any object, or one of its subresources. A `ResourceVersion` guard goes into the
    /// patch (`metadata.resourceVersion`), so a stale patch is refused with a conflict.
    #[serde(rename_all = "camelCase")]
    PatchObject {
        /// What is patched, and its guard.
        target: Target,
        /// The main resource or a subresource.
        subresource: Subresource,
        /// The patch.
        patch: Patch,
    },
    /// Delete any object, with its guard as the delete precondition; its dependents are
    /// deleted in the background. Already gone counts as done.
    #[serde(rename_all = "camelCase")]
    DeleteObject {
        /// What is deleted, and its guard.
        target: Target,
    },
    /// Evict a pod through its `eviction` subresource (PodDisruptionBudgets apply), with its
    /// guard as the delete precondition.
    #[serde(rename_all = "camelCase")]
    EvictPod {
        /// The pod, and its guard.
        target: Target,
    },
}

/// The kind of an object an action names: where its API lives.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct ObjectKind {
    /// API group (`""` for the core group).
    pub group: &'static str,
    /// API version.
    pub version: &'static str,
    /// Kind.
    pub kind: &'static str,
    /// Resource (plural).
    pub plural: &'static str,
    /// Namespaced or cluster-scoped.
    pub namespaced: bool,
}

impl ObjectKind {
    /// core/v1 Pod.
    pub const POD: Self = Self::core("Pod", "pods");
    /// core/v1 Secret.
    pub const SECRET: Self = Self::core("Secret", "secrets");
    /// core/v1 ConfigMap.
    pub const CONFIG_MAP: Self = Self::core("ConfigMap", "configmaps");
    /// core/v1 Service.
    pub const SERVICE: Self = Self::core("Service", "services");
    /// gateway.networking.k8s.io/v1 HTTPRoute (Gateway API).
    pub const HTTP_ROUTE: Self = Self {
        group: "gateway.networking.k8s.io",
        version: "v1",
        kind: "HTTPRoute",
        plural: "httproutes",
        namespaced: true,
    };
    /// rollouts.kruise.io/v1alpha1 TrafficRouting.
    pub const TRAFFIC_ROUTING: Self = Self {
        group: "rollouts.kruise.io",
        version: "v1alpha1",
        kind: "TrafficRouting",
        plural: "trafficroutings",
        namespaced: true,
    };
    /// rollouts.kruise.io/v1alpha1 RolloutHistory.
    pub const ROLLOUT_HISTORY: Self = Self {
        group: "rollouts.kruise.io",
        version: "v1alpha1",
        kind: "RolloutHistory",
        plural: "rollouthistories",
        namespaced: true,
    };
    /// autoscaling/v2 HorizontalPodAutoscaler.
    pub const HORIZONTAL_POD_AUTOSCALER: Self = Self {
        group: "autoscaling",
        version: "v2",
        kind: "HorizontalPodAutoscaler",
        plural: "horizontalpodautoscalers",
        namespaced: true,
    };
    /// networking.k8s.io/v1 Ingress.
    pub const INGRESS: Self = Self {
        group: "networking.k8s.io",
        version: "v1",
        kind: "Ingress",
        plural: "ingresses",
        namespaced: true,
    };
    /// apps/v1 ControllerRevision.
    pub const CONTROLLER_REVISION: Self = Self {
        group: "apps",
        version: "v1",
        kind: "ControllerRevision",
        plural: "controllerrevisions",
        namespaced: true,
    };
    /// apps.kruise.io ContainerRecreateRequest.
    pub const CONTAINER_RECREATE_REQUEST: Self =
        Self::kruise("v1beta1", "ContainerRecreateRequest", "containerrecreaterequests", true);
    /// apps.kruise.io WorkloadSpread.
    pub const WORKLOAD_SPREAD: Self =
        Self::kruise("v1beta1", "WorkloadSpread", "workloadspreads", true);
    /// apps.kruise.io SidecarSet (cluster-scoped).
    pub const SIDECAR_SET: Self = Self::kruise("v1beta1", "SidecarSet", "sidecarsets", false);
    /// apps.kruise.io BroadcastJob.
    pub const BROADCAST_JOB: Self = Self::kruise("v1beta1", "BroadcastJob", "broadcastjobs", true);
    /// apps.kruise.io ImageListPullJob.
    pub const IMAGE_LIST_PULL_JOB: Self =
        Self::kruise("v1beta1", "ImageListPullJob", "imagelistpulljobs", true);
    /// apps/v1 StatefulSet.
    pub const STATEFUL_SET: Self = Self {
        group: "apps",
        version: "v1",
        kind: "StatefulSet",
        plural: "statefulsets",
        namespaced: true,
    };
    /// apps/v1 Deployment.
    pub const DEPLOYMENT: Self = Self {
        group: "apps",
        version: "v1",
        kind: "Deployment",
        plural: "deployments",
        namespaced: true,
    };
    /// apps/v1 DaemonSet.
    pub const DAEMON_SET: Self = Self {
        group: "apps",
        version: "v1",
        kind: "DaemonSet",
        plural: "daemonsets",
        namespaced: true,
    };
    /// apps/v1 ReplicaSet.
    pub const REPLICA_SET: Self = Self {
        group: "apps",
        version: "v1",
        kind: "ReplicaSet",
        plural: "replicasets",
        namespaced: true,
    };
    /// apps.kruise.io CloneSet.
    pub const CLONE_SET: Self = Self::kruise("v1beta1", "CloneSet", "clonesets", true);
    /// apps.kruise.io DaemonSet (the Advanced DaemonSet).
    pub const ADVANCED_DAEMON_SET: Self = Self::kruise("v1beta1", "DaemonSet", "daemonsets", true);
    /// apps.kruise.io StatefulSet (the Advanced StatefulSet).
    pub const ADVANCED_STATEFUL_SET: Self =
        Self::kruise("v1beta1", "StatefulSet", "statefulsets", true);
    /// batch/v1 Job.
    pub const JOB: Self =
        Self { group: "batch", version: "v1", kind: "Job", plural: "jobs", namespaced: true };
    /// policy.kruise.io PodUnavailableBudget.
    pub const POD_UNAVAILABLE_BUDGET: Self = Self {
        group: "policy.kruise.io",
        version: "v1beta1",
        kind: "PodUnavailableBudget",
        plural: "podunavailablebudgets",
        namespaced: true,
    };

    /// rollouts.kruise.io Rollout.
    pub const ROLLOUT: Self = Self {
        group: "rollouts.kruise.io",
        version: "v1beta1",
        kind: "Rollout",
        plural: "rollouts",
        namespaced: true,
    };
    /// rollouts.kruise.io BatchRelease.
    pub const BATCH_RELEASE: Self = Self {
        group: "rollouts.kruise.io",
        version: "v1beta1",
        kind: "BatchRelease",
        plural: "batchreleases",
        namespaced: true,
    };

    /// admissionregistration.k8s.io MutatingWebhookConfiguration (cluster-scoped).
    pub const MUTATING_WEBHOOK_CONFIGURATION: Self = Self {
        group: "admissionregistration.k8s.io",
        version: "v1",
        kind: "MutatingWebhookConfiguration",
        plural: "mutatingwebhookconfigurations",
        namespaced: false,
    };

    const fn core(kind: &'static str, plural: &'static str) -> Self {
        Self { group: "", version: "v1", kind, plural, namespaced: true }
    }

    const fn kruise(
        version: &'static str,
        kind: &'static str,
        plural: &'static str,
        namespaced: bool,
    ) -> Self {
        Self { group: "apps.kruise.io", version, kind, plural, namespaced }
    }

    /// `group/version`, or `version` for the core group.
    pub fn api_version(&self) -> String {
        if self.group.is_empty() {
            self.version.to_owned()
        } else {
            format!("{}/{}", self.group, self.version)
        }
    }
}

impl Serialize for ObjectKind {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(&format!("{}/{}", self.api_version(), self.kind))
    }
}

/// What guards a write: the object's identity or the version it was planned from.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(tag = "type", content = "value", rename_all = "camelCase")]
pub enum Guard {
    /// Unguarded.
    None,
    /// Only the object with this UID (a delete precondition).
    Uid(String),
    /// Only the object at this resourceVersion (a delete precondition; in a patch, its
    /// `metadata.resourceVersion`).
    ResourceVersion(String),
}

/// The object an action names: kind, namespace, name and guard.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Target {
    /// Its kind.
    pub kind: ObjectKind,
    /// Its namespace (`None` for a cluster-scoped kind).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub namespace: Option<String>,
    /// Its name.
    pub name: String,
    /// What guards the write.
    pub guard: Guard,
}

impl Target {
    /// `name` of `kind` in `namespace`, unguarded.
    pub fn new(kind: ObjectKind, namespace: Option<&str>, name: &str) -> Self {
        Self {
            kind,
            namespace: namespace.map(str::to_owned),
            name: name.to_owned(),
            guard: Guard::None,
        }
    }

    /// Guarded by `guard`.
    #[must_use]
    pub fn guarded(mut self, guard: Guard) -> Self {
        self.guard = guard;
        self
    }
}

/// Which part of an object a patch writes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub enum Subresource {
    /// The object itself (metadata, spec).
    Main,
    /// `status`.
    Status,
    /// `scale`.
    Scale,
    /// `resize` (a pod's container resources).
    Resize,
    /// `ephemeralcontainers` (a pod's ephemeral containers, which may only be added).
    EphemeralContainers,
}

impl Subresource {
    /// The subresource's path segment; `None` for the object itself.
    pub fn path(self) -> Option<&'static str> {
        match self {
            Self::Main => None,
            Self::Status => Some("status"),
            Self::Scale => Some("scale"),
            Self::Resize => Some("resize"),
            Self::EphemeralContainers => Some("ephemeralcontainers"),
        }
    }
}

/// A pod to create ([`Action::CreatePod`]).
///
/// The pods a plan creates together differ in little: a CloneSet's new pods of one revision
/// differ only in their name, their instance-id label and their claim volumes. Such a pod is
/// kept as the pod it shares with the others plus what is its own, and built in full only
/// when needed ([`NewPod::build`]): when it is sent, so that the first of 1,000 new pods does
/// not wait for the other 999 to be built. It reads as the whole pod (`Deref`, equality,
/// serialization), built once on first read.
#[derive(Clone)]
pub struct NewPod {
    shared: Arc<Pod>,
    own: Option<Box<PodInstance>>,
}

/// What a [`NewPod`] adds to the pod it shares.
#[derive(Clone)]
struct PodInstance {
    name: String,
    label: (String, String),
    /// Put ahead of the shared pod's volumes, replacing those of the same name.
    volumes: Vec<Volume>,
    /// The node the pod is bound to, if any.
    pin: Option<NodePin>,
    /// The whole pod, once read through `Deref`.
    built: std::sync::OnceLock<Pod>,
}

/// How a [`NewPod`] is bound to its node.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum NodePin {
    /// A required node affinity term on `metadata.name` replaces the others, for the
    /// scheduler to place the pod ([`crate::node_affinity::pin_to_node`]).
    Affinity(String),
    /// `spec.nodeName`: bound without the scheduler.
    NodeName(String),
}

impl NewPod {
    /// One pod of `shared`'s kind: `shared` named `name`, with the label `label` added and
    /// `volumes` ahead of its own volumes (replacing those of the same name).
    pub fn instance(
        shared: Arc<Pod>,
        name: String,
        label: (String, String),
        volumes: Vec<Volume>,
    ) -> Self {
        let built = std::sync::OnceLock::new();
        let pin = None;
        Self { shared, own: Some(Box::new(PodInstance { name, label, volumes, pin, built })) }
    }

    /// One pod of `shared`'s kind named `name`, with the label `label` added, bound to a node
    /// by `pin`.
    pub fn pinned(shared: Arc<Pod>, name: String, label: (String, String), pin: NodePin) -> Self {
        let built = std::sync::OnceLock::new();
        let (volumes, pin) = (Vec::new(), Some(pin));
        Self { shared, own: Some(Box::new(PodInstance { name, label, volumes, pin, built })) }
    }

    /// The pod's name.
    pub fn name(&self) -> &str {
        match &self.own {
            Some(own) => &own.name,
            None => self.shared.metadata.name.as_deref().unwrap_or_default(),
        }
    }

    /// The whole pod: borrowed when it is already whole, else built (and not kept).
    pub fn build(&self) -> std::borrow::Cow<'_, Pod> {
        match &self.own {
            None => std::borrow::Cow::Borrowed(&self.shared),
            Some(own) => match own.built.get() {
                Some(built) => std::borrow::Cow::Borrowed(built),
                None => std::borrow::Cow::Owned(own.build(&self.shared)),
            },
        }
    }
}

impl PodInstance {
    fn build(&self, shared: &Pod) -> Pod {
        let mut pod = shared.clone();
        pod.metadata.name = Some(self.name.clone());
        let (key, value) = &self.label;
        pod.metadata.labels.get_or_insert_with(Default::default).insert(key.clone(), value.clone());
        if let (false, Some(spec)) = (self.volumes.is_empty(), pod.spec.as_mut()) {
            let mut volumes = self.volumes.clone();
            for volume in spec.volumes.take().unwrap_or_default() {
                if !self.volumes.iter().any(|own| own.name == volume.name) {
                    volumes.push(volume);
                }
            }
            spec.volumes = Some(volumes);
        }
        match (&self.pin, pod.spec.as_mut()) {
            (Some(NodePin::Affinity(node)), Some(spec)) => {
                spec.affinity = Some(crate::node_affinity::pin_to_node(spec.affinity.take(), node));
            }
            (Some(NodePin::NodeName(node)), Some(spec)) => spec.node_name = Some(node.clone()),
            _ => {}
        }
        pod
    }
}

impl From<Pod> for NewPod {
    fn from(pod: Pod) -> Self {
        Self { shared: Arc::new(pod), own: None }
    }
}

impl std::ops::Deref for NewPod {
    type Target = Pod;

    fn deref(&self) -> &Pod {
        match &self.own {
            None => &self.shared,
            Some(own) => own.built.get_or_init(|| own.build(&self.shared)),
        }
    }
}

impl PartialEq for NewPod {
    fn eq(&self, other: &Self) -> bool {
        **self == **other
    }
}

impl std::fmt::Debug for NewPod {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        (**self).fmt(f)
    }
}

impl Serialize for NewPod {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        self.build().serialize(serializer)
    }
}

impl Action {
    /// The name of the object the action changes.
    pub fn target(&self) -> &str {
        fn name_of(meta: &k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta) -> &str {
            meta.name.as_deref().unwrap_or_default()
        }
        match self {
            Self::CreateRevision { revision } => name_of(&revision.metadata),
            Self::CreatePvc { pvc } => name_of(&pvc.metadata),
            Self::CreatePod { pod } => pod.name(),
            Self::CreateImagePullJob { job } => name_of(&job.metadata),
            Self::PatchRevision { name, .. }
            | Self::DeleteRevision { name }
            | Self::PatchPvc { name, .. }
            | Self::DeletePvc { name, .. }
            | Self::PatchPod { name, .. }
            | Self::PatchPodStatus { name, .. }
            | Self::PatchPodResize { name, .. }
            | Self::DeletePod { name, .. }
            | Self::DeleteImagePullJob { name } => name,
            Self::PatchWorkload { .. } => "",
            Self::CreateObject { target, .. }
            | Self::PatchObject { target, .. }
            | Self::DeleteObject { target }
            | Self::EvictPod { target } => &target.name,
        }
    }

    /// What to record in the expectations when carrying out this action, as upstream does:
    /// record a [`Expectation::Scale`] before the call and drop it again if the call fails;
    /// record a [`Expectation::ResourceVersion`] after a successful call, with the
    /// resourceVersion the API server returned.
    pub fn expectation(&self) -> Option<Expectation> {
        match self {
            Self::CreatePod { .. } | Self::CreatePvc { .. } => {
                Some(Expectation::Scale { action: ScaleAction::Create, name: self.target().into() })
            }
            Self::DeletePod { name, .. } | Self::DeletePvc { name, .. } => {
                Some(Expectation::Scale { action: ScaleAction::Delete, name: name.clone() })
            }
            Self::PatchPod { uid, purpose, .. } if *purpose != PodPatchPurpose::Release => {
                Some(Expectation::ResourceVersion { uid: uid.clone() })
            }
            _ => None,
        }
    }
}

/// `Normal` or `Warning`, as Kubernetes Events have.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[non_exhaustive]
pub enum EventType {
    /// Something expected happened.
    Normal,
    /// Something may need attention.
    Warning,
}

/// An Event to record on the workload.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Event {
    /// Normal or Warning.
    #[serde(rename = "type")]
    pub type_: EventType,
    /// Short machine-readable reason, e.g. `SuccessfulCreate`.
    pub reason: std::borrow::Cow<'static, str>,
    /// Human-readable message.
    pub message: String,
    /// Record the Event only once `actions[i]` has succeeded; `None` records it at once.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub after_action: Option<usize>,
}

/// Why a plan holds no actions.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(tag = "reason", rename_all = "camelCase")]
#[non_exhaustive]
pub enum Blocked {
    /// Pods or PVCs created or deleted earlier are not yet in the snapshot.
    #[serde(rename_all = "camelCase")]
    ScaleExpectations {
        /// Names still expected to appear.
        #[serde(skip_serializing_if = "Vec::is_empty")]
        creations: Vec<String>,
        /// Names still expected to go away.
        #[serde(skip_serializing_if = "Vec::is_empty")]
        deletions: Vec<String>,
    },
    /// A pod patched earlier is in the snapshot at an older resourceVersion.
    #[serde(rename_all = "camelCase")]
    ResourceVersion {
        /// The pod's name.
        pod: String,
    },
    /// The workload cannot be planned for; the message names the field and value.
    #[serde(rename_all = "camelCase")]
    Invalid {
        /// What is wrong.
        message: String,
    },
}

/// The plan of a workload: [`Plan`] under the name the workload planners first gave it.
pub type WorkloadPlan<S> = Plan<S>;

/// The outcome of planning one object whose status is an `S`: what every planner returns.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Plan<S> {
    /// Changes to make, in order.
    pub actions: Vec<Action>,
    /// The status to write, when it differs from the current one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub status: Option<S>,
    /// Events to record.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub events: Vec<Event>,
    /// Plan again after this long even if nothing changes (minReadySeconds, grace periods,
    /// progress deadline, expectation timeouts).
    #[serde(skip_serializing_if = "Option::is_none", with = "super::duration_serde::option")]
    pub requeue_after: Option<SignedDuration>,
    /// The expectations to keep from now on: the snapshot's, less those the snapshot shows
    /// fulfilled and those that timed out. Expectations for this plan's own actions are not
    /// included; see [`Action::expectation`].
    pub expectations: ControllerExpectations,
    /// Set when the planner planned nothing, and why.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub blocked: Option<Blocked>,
}

impl<S> Plan<S> {
    /// A plan that does nothing.
    pub fn empty(expectations: ControllerExpectations) -> Self {
        Self {
            actions: Vec::new(),
            status: None,
            events: Vec::new(),
            requeue_after: None,
            expectations,
            blocked: None,
        }
    }

    /// True when the plan changes nothing in the cluster (no actions and no status write).
    pub fn is_noop(&self) -> bool {
        self.actions.is_empty() && self.status.is_none()
    }

    /// The UIDs of the pods whose update to another revision the plan starts or carries on:
    /// an in-place update (its readiness condition, its patch, its grace period) or a
    /// recreation (marked for deletion, or deleted). Upstream's CloneSet asks the pod's
    /// PodUnavailableBudget before each of these.
    pub fn pods_being_updated(&self) -> std::collections::BTreeSet<&str> {
        self.actions
            .iter()
            .filter_map(|action| match action {
                Action::PatchPodStatus {
                    uid,
                    purpose: PodStatusPurpose::InPlaceUpdateReady,
                    ..
                }
                | Action::PatchPod {
                    uid,
                    purpose:
                        PodPatchPurpose::InPlaceUpdate
                        | PodPatchPurpose::InPlaceGrace
                        | PodPatchPurpose::SpecifiedDelete,
                    ..
                }
                | Action::PatchPodResize { uid, .. }
                | Action::DeletePod { uid, purpose: DeletePurpose::Recreate, .. } => {
                    Some(uid.as_str())
                }
                _ => None,
            })
            .collect()
    }

    /// Leaves out every action on the pods with these UIDs, and the Events recorded after
    /// them (the other Events keep pointing at their actions).
    pub fn without_pods(&mut self, uids: &std::collections::BTreeSet<String>) {
        let on_pod = |action: &Action| match action {
            Action::PatchPod { uid, .. }
            | Action::PatchPodStatus { uid, .. }
            | Action::PatchPodResize { uid, .. }
            | Action::DeletePod { uid, .. } => uids.contains(uid),
            _ => false,
        };
        let mut kept_at = Vec::with_capacity(self.actions.len());
        let mut kept = 0;
        for action in &self.actions {
            if on_pod(action) {
                kept_at.push(None);
            } else {
                kept_at.push(Some(kept));
                kept += 1;
            }
        }
        self.actions.retain(|action| !on_pod(action));
        self.events.retain_mut(|event| match event.after_action {
            None => true,
            Some(i) => match kept_at.get(i).copied().flatten() {
                Some(j) => {
                    event.after_action = Some(j);
                    true
                }
                None => false,
            },
        });
    }

    /// The objects the plan deletes ([`Action::DeleteObject`]), in order.
    pub fn deletions(&self) -> impl Iterator<Item = &Target> {
        self.actions.iter().filter_map(|action| match action {
            Action::DeleteObject { target } => Some(target),
            _ => None,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::api::core::v1::{EmptyDirVolumeSource, PodSpec};

    fn volume(name: &str, medium: &str) -> Volume {
        Volume {
            name: name.into(),
            empty_dir: Some(EmptyDirVolumeSource {
                medium: Some(medium.into()),
                ..Default::default()
            }),
            ..Default::default()
        }
    }

    #[test]
    fn a_plan_without_some_pods_keeps_the_others_and_their_events() {
        let patch = |uid: &str, purpose| Action::PatchPod {
            namespace: None,
            name: uid.to_owned(),
            uid: uid.to_owned(),
            purpose,
            patch: Patch::merge(serde_json::json!({})),
        };
        let event = |i| Event {
            type_: EventType::Normal,
            reason: "R".into(),
            message: format!("after {i}"),
            after_action: Some(i),
        };
        let mut plan: Plan<()> = Plan::empty(Default::default());
        plan.actions = vec![
            patch("a", PodPatchPurpose::InPlaceUpdate),
            patch("b", PodPatchPurpose::InPlaceUpdate),
            Action::DeletePod {
                name: "c".into(),
                uid: "c".into(),
                purpose: DeletePurpose::Recreate,
            },
            patch("d", PodPatchPurpose::Lifecycle),
        ];
        plan.events = vec![event(0), event(1), event(2), event(3)];
        let updated: Vec<&str> = plan.pods_being_updated().into_iter().collect();
        assert_eq!(updated, ["a", "b", "c"], "a lifecycle patch is no update");
        plan.without_pods(&["a".to_owned(), "c".to_owned()].into());
        assert_eq!(
            plan.actions,
            [patch("b", PodPatchPurpose::InPlaceUpdate), patch("d", PodPatchPurpose::Lifecycle)]
        );
        let kept: Vec<(String, Option<usize>)> =
            plan.events.iter().map(|e| (e.message.clone(), e.after_action)).collect();
        assert_eq!(kept, [("after 1".to_owned(), Some(0)), ("after 3".to_owned(), Some(1))]);
    }

    #[test]
    fn a_new_pod_reads_as_the_whole_pod_whether_built_or_not() {
        let mut shared = Pod::default();
        shared.metadata.generate_name = Some("web-".into());
        shared.metadata.labels = Some([("app".to_owned(), "web".to_owned())].into());
        shared.spec = Some(PodSpec {
            volumes: Some(vec![volume("data", "template"), volume("logs", "template")]),
            ..Default::default()
        });
        let shared = Arc::new(shared);
        let new = NewPod::instance(
            shared.clone(),
            "web-abcde".into(),
            ("id".into(), "abcde".into()),
            vec![volume("data", "claim")],
        );
        assert_eq!(new.name(), "web-abcde");
        let built = new.build().into_owned();
        assert_eq!(built.metadata.name.as_deref(), Some("web-abcde"));
        let labels = built.metadata.labels.clone().unwrap_or_default();
        assert_eq!(labels.get("id").map(String::as_str), Some("abcde"));
        assert_eq!(labels.get("app").map(String::as_str), Some("web"));
        // The claim volume comes first and replaces the template's volume of its name.
        let volumes = built.spec.clone().and_then(|s| s.volumes).unwrap_or_default();
        assert_eq!(volumes, [volume("data", "claim"), volume("logs", "template")]);
        // Deref, equality and serialization all see that same pod; the shared one is untouched.
        assert_eq!(*new, built);
        assert_eq!(new, NewPod::from(built.clone()));
        assert_eq!(
            serde_json::to_value(&new).expect("encodes"),
            serde_json::to_value(&built).expect("encodes")
        );
        assert_eq!(shared.metadata.name, None);
        let whole = NewPod::from(built.clone());
        assert_eq!(whole.name(), "web-abcde");
        assert!(matches!(whole.build(), std::borrow::Cow::Borrowed(_)));
    }
}
