//! Well-known string keys and values used across OpenKruise.
//!
//! The controllers, the admission webhooks and `kruise-daemon` talk to each other (and to
//! users) through labels, annotations, finalizers, condition types and environment
//! variables. Every such string lives here exactly once, as a `&'static str`, so readers and
//! writers can never disagree on the spelling.
//!
//! Layout, by kind of string:
//!
//! - [`groups`]: the API group names Kruise serves.
//! - [`labels`]: label keys Kruise sets or reacts to.
//! - [`annotations`]: annotation keys Kruise sets or reacts to.
//! - [`finalizers`]: finalizer names Kruise controllers add and remove.
//! - [`readiness_gates`]: pod condition types Kruise injects as readiness gates, plus the
//!   parts of the message it keeps in the `KruisePodReady` condition.
//! - [`conditions`]: condition types (and some reasons), one sub-module per resource kind.
//! - [`lifecycle`]: the values of the lifecycle state label.
//! - [`env`](mod@env): environment variable names, split into those seen by workload
//!   containers and those read by Kruise's own processes.
//! - [`values`]: enumerated or fixed values written under the keys above, by feature.
//! - [`config`]: names of Kruise-owned configuration objects and their data keys.
//! - [`kubernetes`]: upstream Kubernetes, kubelet and CRI keys that Kruise relies on but does
//!   not own.
//! - [`rollouts`]: the labels, annotations and finalizers of Kruise Rollout
//!   (rollouts.kruise.io), kept apart since its controllers are a separate project upstream.
//!
//! Naming conventions:
//!
//! - A key that is only the start of a key, to be completed by a caller-chosen name, ends in
//!   `_PREFIX` and itself ends with `/`.
//! - An older spelling that is still read (and sometimes still written) for compatibility
//!   ends in `_LEGACY`.
//! - Key modules carry `ALL` (and, where relevant, `ALL_PREFIXES`) slices listing their
//!   entries, so that tests and tools can iterate over them.

/// API group names served by Kruise.
pub mod groups {
    /// API group of the Kruise workloads and jobs (CloneSet, Advanced StatefulSet, ...).
    pub const APPS: &str = "apps.kruise.io";
    /// API group of the Kruise policy resources (PodUnavailableBudget).
    pub const POLICY: &str = "policy.kruise.io";
    /// API group of Kruise Rollout (Rollout, BatchRelease, TrafficRouting, RolloutHistory).
    pub const ROLLOUTS: &str = "rollouts.kruise.io";
}

/// Label keys owned by Kruise.
///
/// Unless stated otherwise the value is free-form; see [`values`] and
/// [`lifecycle`] for keys whose values are constrained.
pub mod labels {
    // ---- Shared by several workloads ----

    /// Hash of the revision a Kruise-managed pod was created from; also set on the
    /// ControllerRevisions of Kruise workloads.
    pub const CONTROLLER_REVISION_HASH: &str = "apps.kruise.io/controller-revision-hash";
    /// Set by a user on a pod (or PVC) to ask its workload to delete it first, whether scaling
    /// in or recreating it. Only the presence of the key matters.
    pub const SPECIFIED_DELETE: &str = "apps.kruise.io/specified-delete";
    /// Current lifecycle state of a pod; values are in [`super::lifecycle`].
    pub const LIFECYCLE_STATE: &str = "lifecycle.apps.kruise.io/state";

    // ---- Deletion protection and PodUnavailableBudget ----

    /// Guards a namespace, CRD or workload against deletion; values are in
    /// [`super::values::deletion_protection`].
    pub const DELETION_PROTECTION: &str = "policy.kruise.io/delete-protection";
    /// Any label starting with this prefix makes a PodUnavailableBudget count the pod as
    /// unavailable, whatever its readiness.
    pub const UNAVAILABLE_POD_PREFIX: &str = "unavailable-pod.kruise.io/";

    // ---- CloneSet ----

    /// Identity shared by a CloneSet pod and the PVCs created for it.
    pub const CLONESET_INSTANCE_ID: &str = "apps.kruise.io/cloneset-instance-id";
    /// Set to `"true"` on a v1alpha1 CloneSet so that pods in `PreparingDelete` are left out
    /// when counting replicas for scaling; v1beta1 moved this into the spec.
    pub const CLONESET_SCALING_EXCLUDE_PREPARING_DELETE: &str =
        "apps.kruise.io/cloneset-scaling-exclude-preparing-delete";

    // ---- Image pre-download (on workload ControllerRevisions) ----

    /// Marks a revision for which image pre-download jobs were already created. The odd
    /// spelling (`pre-predownload`) is upstream's and must be kept.
    pub const IMAGE_PREDOWNLOAD_CREATED: &str = "apps.kruise.io/pre-predownload-created";
    /// Marks a revision for which image pre-download was deliberately skipped.
    pub const IMAGE_PREDOWNLOAD_IGNORED: &str = "apps.kruise.io/image-predownload-ignored";

    // ---- UnitedDeployment ----

    /// Name of the UnitedDeployment subset a workload and its pods belong to.
    pub const SUBSET_NAME: &str = "apps.kruise.io/subset-name";
    /// `"true"` on pods the adaptive UnitedDeployment scheduler has reserved (stuck pending)
    /// and will not count as available; `"false"` otherwise.
    pub const UNITED_DEPLOYMENT_RESERVED_POD: &str =
        "apps.kruise.io/united-deployment-reserved-pod";

    // ---- SidecarSet ----

    /// User-chosen version tag of a SidecarSet, copied onto its ControllerRevisions so that a
    /// revision can be selected by tag.
    pub const SIDECARSET_CUSTOM_VERSION: &str = "apps.kruise.io/sidecarset-custom-version";
    /// Name of the SidecarSet that owns a ControllerRevision.
    pub const SIDECARSET_NAME: &str = "kruise.io/sidecarset-name";

    // ---- ContainerRecreateRequest ----

    /// UID of the pod a ContainerRecreateRequest targets; never changes.
    pub const CRR_POD_UID: &str = "crr.apps.kruise.io/pod-uid";
    /// Node of the pod a ContainerRecreateRequest targets; never changes. Lets each
    /// `kruise-daemon` watch only its own requests.
    pub const CRR_NODE_NAME: &str = "crr.apps.kruise.io/node-name";
    /// Present while a ContainerRecreateRequest is still in progress, removed once it
    /// completes, so daemons can ignore finished requests.
    pub const CRR_ACTIVE: &str = "crr.apps.kruise.io/active";

    // ---- BroadcastJob ----

    /// Name of the BroadcastJob that created a pod.
    pub const BROADCAST_JOB_NAME: &str = "broadcastjob-name";
    /// UID of the BroadcastJob that created a pod.
    pub const BROADCAST_JOB_CONTROLLER_UID: &str = "broadcastjob-controller-uid";

    // ---- NodeImage and ImagePullJob ----

    /// Marks a NodeImage the controller must keep even though no Node of that name exists
    /// (for NodeImages made by hand, for example in tests).
    pub const FAKE_NODE_IMAGE: &str = "apps.kruise.io/fake-nodeimage";
    /// UID of the user secret a copied image-pull secret was made from. No longer written.
    pub const IMAGE_PULL_JOB_SOURCE_SECRET_UID: &str = "imagepulljobs.kruise.io/source-uid";

    /// Every complete label key in this module.
    pub const ALL: &[&str] = &[
        CONTROLLER_REVISION_HASH,
        SPECIFIED_DELETE,
        LIFECYCLE_STATE,
        DELETION_PROTECTION,
        CLONESET_INSTANCE_ID,
        CLONESET_SCALING_EXCLUDE_PREPARING_DELETE,
        IMAGE_PREDOWNLOAD_CREATED,
        IMAGE_PREDOWNLOAD_IGNORED,
        SUBSET_NAME,
        UNITED_DEPLOYMENT_RESERVED_POD,
        SIDECARSET_CUSTOM_VERSION,
        SIDECARSET_NAME,
        CRR_POD_UID,
        CRR_NODE_NAME,
        CRR_ACTIVE,
        BROADCAST_JOB_NAME,
        BROADCAST_JOB_CONTROLLER_UID,
        FAKE_NODE_IMAGE,
        IMAGE_PULL_JOB_SOURCE_SECRET_UID,
    ];

    /// Every label key prefix in this module.
    pub const ALL_PREFIXES: &[&str] = &[UNAVAILABLE_POD_PREFIX];
}

/// Annotation keys owned by Kruise.
pub mod annotations {
    // ---- In-place update ----

    /// JSON record, on a pod, of the in-place update in progress or last done.
    pub const INPLACE_UPDATE_STATE: &str = "apps.kruise.io/inplace-update-state";
    /// Unprefixed spelling of [`INPLACE_UPDATE_STATE`], still read from older pods.
    pub const INPLACE_UPDATE_STATE_LEGACY: &str = "inplace-update-state";
    /// JSON record, on a pod, of an in-place update waiting out its grace period.
    pub const INPLACE_UPDATE_GRACE: &str = "apps.kruise.io/inplace-update-grace";
    /// Unprefixed spelling of [`INPLACE_UPDATE_GRACE`], still read and cleared on older pods.
    pub const INPLACE_UPDATE_GRACE_LEGACY: &str = "inplace-update-grace";
    /// JSON report, written by `kruise-daemon`, of the containers it sees running in a pod
    /// (ids, restart counts and spec hashes).
    pub const RUNTIME_CONTAINERS_META: &str = "apps.kruise.io/runtime-containers-meta";

    // ---- Container launch priority ----

    /// Set to [`super::values::container_launch_priority::ORDERED`] on a pod to start its
    /// containers one after another in declaration order.
    pub const CONTAINER_LAUNCH_PRIORITY: &str = "apps.kruise.io/container-launch-priority";
    /// `"true"` once every priority barrier of a pod has been released.
    pub const CONTAINER_LAUNCH_PRIORITY_COMPLETED: &str =
        "apps.kruise.io/container-launch-priority-completed";

    // ---- Lifecycle ----

    /// RFC 3339 time at which the lifecycle state label of a pod last changed.
    pub const LIFECYCLE_TIMESTAMP: &str = "lifecycle.apps.kruise.io/timestamp";

    // ---- Probes ----

    /// `"true"` on a pod whose liveness probes should be run by `kruise-daemon` instead of
    /// the kubelet.
    pub const USING_ENHANCED_LIVENESS: &str = "apps.kruise.io/using-enhanced-liveness";
    /// Saved copy of the native container probes of a pod using enhanced liveness.
    pub const CONTAINER_PROBE_CONTEXT: &str = "apps.kruise.io/container-probe-context";
    /// JSON list of probes to run on a pod, for pods (such as serverless ones) that cannot be
    /// reached through a NodePodProbe.
    pub const POD_PROBE: &str = "kruise.io/podprobe";
    /// Comma-separated names of the PodProbeMarkers injected into a pod.
    pub const POD_PROBE_MARKER_LIST: &str = "kruise.io/podprobemarker-list";

    // ---- Image pre-download (v1alpha1 workload annotations) ----

    /// How many nodes may pull a new image at the same time during pre-download.
    pub const IMAGE_PREDOWNLOAD_PARALLELISM: &str = "apps.kruise.io/image-predownload-parallelism";
    /// Time limit, in seconds, for pulling one image during pre-download.
    pub const IMAGE_PREDOWNLOAD_TIMEOUT_SECONDS: &str =
        "apps.kruise.io/image-predownload-timeout-seconds";
    /// Number of updated, ready pods required before pre-download starts.
    pub const IMAGE_PREDOWNLOAD_MIN_UPDATED_READY_PODS: &str =
        "apps.kruise.io/image-predownload-min-updated-ready-pods";
    /// Sandbox-config annotation `kruise-daemon` sets on its CRI image pull requests, so the
    /// runtime can tell who asked for the pull.
    pub const PULLING_IMAGE_BY: &str = "apps.kruise.io/pulling-image-by";

    // ---- ImagePullJob pull secrets (copies kept in the daemon config namespace) ----

    /// `namespace/name` of the user secret a copied pull secret was made from.
    pub const IMAGE_PULL_JOB_SOURCE_SECRET_KEY: &str = "imagepulljobs.kruise.io/source-key";
    /// `namespace/name` list of the ImagePullJobs using a copied pull secret; the copy is
    /// deleted once this becomes empty.
    pub const IMAGE_PULL_JOB_REFERENCES: &str = "imagepulljobs.kruise.io/references";
    /// How a copied pull secret is referenced; see
    /// [`super::values::image_pull::SECRET_MODE_BATCH`].
    pub const IMAGE_PULL_JOB_SECRET_MODE: &str = "imagepulljobs.kruise.io/mode";

    // ---- Workload specifics ----

    /// Raw patch a UnitedDeployment applies to the workload of one subset.
    pub const SUBSET_PATCH: &str = "apps.kruise.io/subset-patch";
    /// `"true"` on a v1alpha1 Advanced DaemonSet so that pods created during scale-out also
    /// respect the rolling-update partition; v1beta1 moved this into the spec.
    pub const DAEMONSET_PROGRESSIVE_CREATE_POD: &str = "daemonset.kruise.io/progressive-create-pod";
    /// RFC 3339 time an AdvancedCronJob scheduled a job for, set on the job it created.
    pub const SCHEDULED_AT: &str = "apps.kruise.io/scheduled-at";
    /// Name of the Advanced StatefulSet that owns a PVC being resized.
    pub const PVC_OWNED_BY_ASTS: &str = "apps.kruise.io/owned-by-asts";
    /// Hash of the volume claim templates, on CloneSet ControllerRevisions.
    pub const CLONESET_VOLUME_CLAIM_TEMPLATE_HASH: &str =
        "kruise.io/cloneset-volumeclaimtemplate-hash";

    // ---- ContainerRecreateRequest (v1alpha1) ----

    /// JSON snapshot of the container statuses of the target pod, kept while recreating.
    pub const CRR_SYNC_CONTAINER_STATUSES: &str = "crr.apps.kruise.io/sync-container-statuses";
    /// Time at which the target pod was forced not-ready before recreation; also used as a
    /// finalizer name, see [`super::finalizers::CRR_UNREADY_ACQUIRED`].
    pub const CRR_UNREADY_ACQUIRED: &str = "crr.apps.kruise.io/unready-acquired";

    // ---- PersistentPodState ----

    /// `"true"` on a workload to have a PersistentPodState generated for it.
    pub const AUTO_GENERATE_PERSISTENT_POD_STATE: &str =
        "kruise.io/auto-generate-persistent-pod-state";
    /// Comma-separated node label keys a recreated pod must land on again.
    pub const REQUIRED_PERSISTENT_TOPOLOGY: &str = "kruise.io/required-persistent-topology";
    /// Comma-separated node label keys a recreated pod should preferably land on again.
    pub const PREFERRED_PERSISTENT_TOPOLOGY: &str = "kruise.io/preferred-persistent-topology";
    /// Comma-separated pod annotation keys to carry over to a recreated pod.
    pub const PERSISTENT_POD_ANNOTATIONS: &str = "kruise.io/persistent-pod-annotations";
    /// Name of the PersistentPodState whose topology was injected into a pod.
    pub const INJECTED_PERSISTENT_POD_STATE: &str = "kruise.io/injected-persistent-pod-state";

    // ---- PodUnavailableBudget ----

    /// Comma-separated operations a v1alpha1 PodUnavailableBudget guards; values are in
    /// [`super::values::pub_operations`]. v1beta1 moved this into the spec.
    pub const PUB_PROTECT_OPERATIONS: &str = "kruise.io/pub-protect-operations";
    /// Replica count a v1alpha1 PodUnavailableBudget should assume when no workload scale can
    /// be read. v1beta1 moved this into the spec.
    pub const PUB_PROTECT_TOTAL_REPLICAS: &str = "pub.kruise.io/protect-total-replicas";
    /// `"true"` on a pod to exempt it from any PodUnavailableBudget.
    pub const PUB_NO_PROTECT: &str = "pub.kruise.io/no-protect";
    /// Name of the PodUnavailableBudget covering a pod, cached on the pod.
    pub const PUB_RELATED_PUB: &str = "pub.kruise.io/related-pub";
    /// Older spelling of [`PUB_RELATED_PUB`]; still written alongside it and read as a
    /// fallback.
    pub const PUB_RELATED_PUB_LEGACY: &str = "kruise.io/related-pub";

    // ---- SidecarSet ----

    /// JSON map, on a pod, from SidecarSet name to the hash of the version injected.
    pub const SIDECARSET_HASH: &str = "kruise.io/sidecarset-hash";
    /// Like [`SIDECARSET_HASH`], but hashed without container images, to tell image-only
    /// changes apart.
    pub const SIDECARSET_HASH_WITHOUT_IMAGE: &str = "kruise.io/sidecarset-hash-without-image";
    /// Comma-separated names of the SidecarSets injected into a pod.
    pub const SIDECARSET_INJECTED_LIST: &str = "kruise.io/sidecarset-injected-list";
    /// JSON record of in-place sidecar updates in progress on a pod.
    pub const SIDECARSET_INPLACE_UPDATE_STATE: &str = "kruise.io/sidecarset-inplace-update-state";
    /// JSON map from hot-upgrade sidecar name to the container currently serving
    /// (for example `mesh` to `mesh-1`).
    pub const SIDECARSET_WORKING_HOTUPGRADE_CONTAINER: &str =
        "kruise.io/sidecarset-working-hotupgrade-container";
    /// `"true"` on a SidecarSet that is a canary of another one and takes precedence over it.
    pub const SIDECARSET_CANARY: &str = "apps.kruise.io/sidecarset-canary";
    /// Name of the base SidecarSet a canary SidecarSet overrides; immutable.
    pub const SIDECARSET_BASE: &str = "apps.kruise.io/sidecarset-base";
    /// Followed by a hot-upgrade container name; holds that container's version, exposed to
    /// it as `SIDECARSET_VERSION`.
    pub const SIDECARSET_VERSION_PREFIX: &str = "version.sidecarset.kruise.io/";
    /// Followed by a hot-upgrade container name; holds the version of its twin container,
    /// exposed as `SIDECARSET_VERSION_ALT`.
    pub const SIDECARSET_VERSION_ALT_PREFIX: &str = "versionalt.sidecarset.kruise.io/";

    // ---- WorkloadSpread ----

    /// JSON record, on a pod, of the WorkloadSpread and subset it was assigned to.
    pub const MATCHED_WORKLOADSPREAD: &str = "apps.kruise.io/matched-workloadspread";
    /// `"true"` on a WorkloadSpread to skip applying subset patches to pods that already
    /// exist.
    pub const WORKLOADSPREAD_IGNORE_PATCH_EXISTING_PODS: &str =
        "workloadspread.kruise.io/ignore-patch-existing-pods-metadata";

    // ---- ResourceDistribution ----

    /// Hash of the distributed resource, on every copy a ResourceDistribution made.
    pub const RESOURCE_DISTRIBUTION_HASH_CODE: &str =
        "kruise.io/resourcedistribution.resource.hashcode";
    /// Name of the ResourceDistribution a distributed copy came from.
    pub const RESOURCE_DISTRIBUTION_SOURCE: &str = "kruise.io/resourcedistribution.resource.from";

    /// Every complete annotation key in this module.
    pub const ALL: &[&str] = &[
        INPLACE_UPDATE_STATE,
        INPLACE_UPDATE_STATE_LEGACY,
        INPLACE_UPDATE_GRACE,
        INPLACE_UPDATE_GRACE_LEGACY,
        RUNTIME_CONTAINERS_META,
        CONTAINER_LAUNCH_PRIORITY,
        CONTAINER_LAUNCH_PRIORITY_COMPLETED,
        LIFECYCLE_TIMESTAMP,
        USING_ENHANCED_LIVENESS,
        CONTAINER_PROBE_CONTEXT,
        POD_PROBE,
        POD_PROBE_MARKER_LIST,
        IMAGE_PREDOWNLOAD_PARALLELISM,
        IMAGE_PREDOWNLOAD_TIMEOUT_SECONDS,
        IMAGE_PREDOWNLOAD_MIN_UPDATED_READY_PODS,
        PULLING_IMAGE_BY,
        IMAGE_PULL_JOB_SOURCE_SECRET_KEY,
        IMAGE_PULL_JOB_REFERENCES,
        IMAGE_PULL_JOB_SECRET_MODE,
        SUBSET_PATCH,
        DAEMONSET_PROGRESSIVE_CREATE_POD,
        SCHEDULED_AT,
        PVC_OWNED_BY_ASTS,
        CLONESET_VOLUME_CLAIM_TEMPLATE_HASH,
        CRR_SYNC_CONTAINER_STATUSES,
        CRR_UNREADY_ACQUIRED,
        AUTO_GENERATE_PERSISTENT_POD_STATE,
        REQUIRED_PERSISTENT_TOPOLOGY,
        PREFERRED_PERSISTENT_TOPOLOGY,
        PERSISTENT_POD_ANNOTATIONS,
        INJECTED_PERSISTENT_POD_STATE,
        PUB_PROTECT_OPERATIONS,
        PUB_PROTECT_TOTAL_REPLICAS,
        PUB_NO_PROTECT,
        PUB_RELATED_PUB,
        PUB_RELATED_PUB_LEGACY,
        SIDECARSET_HASH,
        SIDECARSET_HASH_WITHOUT_IMAGE,
        SIDECARSET_INJECTED_LIST,
        SIDECARSET_INPLACE_UPDATE_STATE,
        SIDECARSET_WORKING_HOTUPGRADE_CONTAINER,
        SIDECARSET_CANARY,
        SIDECARSET_BASE,
        MATCHED_WORKLOADSPREAD,
        WORKLOADSPREAD_IGNORE_PATCH_EXISTING_PODS,
        RESOURCE_DISTRIBUTION_HASH_CODE,
        RESOURCE_DISTRIBUTION_SOURCE,
    ];

    /// Every annotation key prefix in this module.
    pub const ALL_PREFIXES: &[&str] = &[SIDECARSET_VERSION_PREFIX, SIDECARSET_VERSION_ALT_PREFIX];
}

/// Finalizer names added by Kruise controllers.
pub mod finalizers {
    /// Held on an ImagePullJob until the pull secrets copied for it have been cleaned up.
    pub const DELETION_PROTECTION: &str = "apps.kruise.io/deletion-protection";
    /// Held on an EphemeralJob until the ephemeral containers it started have been dealt with.
    pub const EPHEMERAL_CONTAINERS_CLEANUP: &str = "apps.kruise.io/ephemeralcontainers-cleanup";
    /// Held on a PodProbeMarker until its probes are removed from every NodePodProbe.
    pub const NODE_POD_PROBE_CLEANUP: &str = "kruise.io/node-pod-probe-cleanup";
    /// Held on a ContainerRecreateRequest while it keeps its pod forced not-ready, so the pod
    /// is made ready again even if the request is deleted. Deliberately the same string as
    /// [`super::annotations::CRR_UNREADY_ACQUIRED`].
    pub const CRR_UNREADY_ACQUIRED: &str = super::annotations::CRR_UNREADY_ACQUIRED;

    /// Every finalizer in this module.
    pub const ALL: &[&str] = &[
        DELETION_PROTECTION,
        EPHEMERAL_CONTAINERS_CLEANUP,
        NODE_POD_PROBE_CLEANUP,
        CRR_UNREADY_ACQUIRED,
    ];
}

/// Pod readiness gates injected by Kruise, and the message kept in `KruisePodReady`.
///
/// Both gates are pod condition types listed in `spec.readinessGates`; Kruise owns their
/// status so that it can hold a pod not-ready (for an in-place update, a lifecycle hook or a
/// container recreation) without touching its containers.
pub mod readiness_gates {
    /// General-purpose gate: `False` while any Kruise component holds the pod not-ready.
    /// The condition message is a JSON list of `{userAgent, key}` entries, one per holder.
    pub const KRUISE_POD_READY: &str = "KruisePodReady";
    /// Gate for in-place updates: `False` from the start of an in-place update until the new
    /// containers are running.
    pub const IN_PLACE_UPDATE_READY: &str = "InPlaceUpdateReady";

    /// `userAgent` of holds placed by lifecycle hooks with `markPodNotReady`.
    pub const USER_AGENT_LIFECYCLE: &str = "Lifecycle";
    /// `userAgent` of holds placed by ContainerRecreateRequests; their `key` is the request's
    /// `namespace/name`.
    pub const USER_AGENT_CONTAINER_RECREATE_REQUEST: &str = "ContainerRecreateRequest";
    /// `key` of the lifecycle hold taken for the pre-delete hook.
    pub const KEY_PRE_DELETE_HOOK: &str = "preDeleteHook";
    /// `key` of the lifecycle hold taken for the in-place-update hook.
    pub const KEY_PRE_UPDATE_HOOK: &str = "preUpdateHook";

    /// Every readiness gate condition type Kruise may inject.
    pub const ALL: &[&str] = &[KRUISE_POD_READY, IN_PLACE_UPDATE_READY];
}

/// Condition types (and reasons) per resource kind.
pub mod conditions {
    /// Pod condition types Kruise writes that are not readiness gates.
    ///
    /// See [`super::readiness_gates`] for `KruisePodReady` and `InPlaceUpdateReady`.
    pub mod pod {
        /// Whether the sidecars injected by a SidecarSet can be updated in place on this pod.
        pub const SIDECARSET_UPGRADABLE: &str = "SidecarSetUpgradable";
        /// Set once the sidecar terminator has stopped the sidecars of a finished job pod.
        pub const SIDECAR_TERMINATED: &str = "SidecarTerminated";
    }

    /// CloneSet condition types and reasons.
    pub mod cloneset {
        /// The controller failed to create or delete pods or PVCs.
        pub const FAILED_SCALE: &str = "FailedScale";
        /// The controller failed to update pods.
        pub const FAILED_UPDATE: &str = "FailedUpdate";
        /// Rollout progress, with a progress deadline.
        pub const PROGRESSING: &str = "Progressing";

        /// Reason: no progress was made within the progress deadline.
        pub const REASON_PROGRESS_DEADLINE_EXCEEDED: &str = "ProgressDeadlineExceeded";
        /// Reason: the CloneSet is paused.
        pub const REASON_PAUSED: &str = "CloneSetPaused";
        /// Reason: the CloneSet is being updated.
        pub const REASON_UPDATED: &str = "CloneSetUpdated";
        /// Reason: the rollout stopped at the partition with enough pods available.
        pub const REASON_PROGRESS_PARTITION_AVAILABLE: &str = "ProgressPartitionAvailable";
        /// Reason: the rollout finished and the CloneSet is available.
        pub const REASON_AVAILABLE: &str = "CloneSetAvailable";
    }

    /// Advanced StatefulSet condition types.
    pub mod statefulset {
        /// Creating a pod failed.
        pub const FAILED_CREATE_POD: &str = "FailedCreatePod";
        /// Updating a pod failed.
        pub const FAILED_UPDATE_POD: &str = "FailedUpdatePod";
    }

    /// BroadcastJob condition types.
    pub mod broadcast_job {
        /// The job ran to completion on every eligible node.
        pub const COMPLETE: &str = "Complete";
        /// The job hit its deadline or restart limit.
        pub const FAILED: &str = "Failed";
    }

    /// EphemeralJob condition types.
    pub mod ephemeral_job {
        /// Every ephemeral container finished successfully.
        pub const SUCCEEDED: &str = "JobSucceeded";
        /// Some ephemeral containers failed.
        pub const FAILED: &str = "JobFailed";
        /// Some ephemeral containers could not be run.
        pub const ERROR: &str = "JobError";
        /// The job was set up by the controller.
        pub const INITIALIZED: &str = "Initialized";
        /// The selector matched no pods.
        pub const MATCHED_EMPTY: &str = "MatchedEmpty";
    }

    /// UnitedDeployment condition types.
    pub mod united_deployment {
        /// Every wanted subset workload exists and unwanted ones are gone.
        pub const SUBSET_PROVISIONED: &str = "SubsetProvisioned";
        /// Every subset workload has been updated.
        pub const SUBSET_UPDATED: &str = "SubsetUpdated";
        /// Reconciling one of the subset workloads failed.
        pub const SUBSET_FAILURE: &str = "SubsetFailure";
        /// The current revision equals the update revision.
        pub const UNITED_DEPLOYMENT_UPDATED: &str = "UnitedDeploymentUpdated";
        /// Per-subset condition: new pods in this subset can be scheduled.
        pub const SUBSET_SCHEDULABLE: &str = "Schedulable";
    }

    /// WorkloadSpread condition types.
    pub mod workload_spread {
        /// Per-subset condition: the subset's nodes have room for more pods.
        pub const SUBSET_SCHEDULABLE: &str = "Schedulable";
    }

    /// ResourceDistribution condition types.
    pub mod resource_distribution {
        /// A resource with the same name but another owner exists in a target namespace.
        pub const CONFLICT_OCCURRED: &str = "ConflictOccurred";
        /// Some target namespaces do not exist.
        pub const NAMESPACE_NOT_EXISTS: &str = "NamespaceNotExists";
        /// Reading some distributed copies failed.
        pub const GET_RESOURCE_FAILED: &str = "GetResourceFailed";
        /// Creating some distributed copies failed.
        pub const CREATE_RESOURCE_FAILED: &str = "CreateResourceFailed";
        /// Updating some distributed copies failed.
        pub const UPDATE_RESOURCE_FAILED: &str = "UpdateResourceFailed";
        /// Deleting some distributed copies failed.
        pub const DELETE_RESOURCE_FAILED: &str = "DeleteResourceFailed";
    }

    /// ContainerRecreateRequest condition types (v1beta1).
    pub mod container_recreate_request {
        /// The pod was forced not-ready and the request is waiting out its unready grace
        /// period; replaces the v1alpha1 `crr.apps.kruise.io/unready-acquired` annotation.
        pub const PRE_RECREATE_GRACE: &str = "PreRecreateGrace";
    }
}

/// Values of the [`labels::LIFECYCLE_STATE`] label, in the order a pod goes through them.
pub mod lifecycle {
    /// Created, waiting for the pre-normal hook before becoming `Normal`.
    pub const PREPARING_NORMAL: &str = "PreparingNormal";
    /// Serving normally.
    pub const NORMAL: &str = "Normal";
    /// Chosen for an in-place update, waiting for the in-place-update hook.
    pub const PREPARING_UPDATE: &str = "PreparingUpdate";
    /// Being updated in place.
    pub const UPDATING: &str = "Updating";
    /// Updated in place, waiting for the in-place-update hook before becoming `Normal`.
    pub const UPDATED: &str = "Updated";
    /// Chosen for deletion, waiting for the pre-delete hook.
    pub const PREPARING_DELETE: &str = "PreparingDelete";

    /// Every lifecycle state, in lifecycle order.
    pub const ALL: &[&str] =
        &[PREPARING_NORMAL, NORMAL, PREPARING_UPDATE, UPDATING, UPDATED, PREPARING_DELETE];
}

/// Environment variable names.
pub mod env {
    /// Variables set in, or read from, workload containers.
    pub mod container {
        /// Set by the user on a container to give it a launch priority (an integer; higher
        /// starts earlier).
        pub const KRUISE_CONTAINER_PRIORITY: &str = "KRUISE_CONTAINER_PRIORITY";
        /// Injected by Kruise to hold a container back until its priority's turn; it reads a
        /// key of the pod's barrier ConfigMap that only exists once released.
        pub const KRUISE_CONTAINER_BARRIER: &str = "KRUISE_CONTAINER_BARRIER";
        /// `"true"` on a sidecar container of a job pod that should be stopped once the main
        /// containers have exited.
        pub const KRUISE_TERMINATE_SIDECAR_WHEN_JOB_EXIT: &str =
            "KRUISE_TERMINATE_SIDECAR_WHEN_JOB_EXIT";
        /// Set to an image on a sidecar container of a job pod; the sidecar is stopped by
        /// swapping in that image once the main containers have exited.
        pub const KRUISE_TERMINATE_SIDECAR_WHEN_JOB_EXIT_WITH_IMAGE: &str =
            "KRUISE_TERMINATE_SIDECAR_WHEN_JOB_EXIT_WITH_IMAGE";
        /// `"true"` on a sidecar container whose own exit code should be disregarded once it
        /// has been stopped, so that stopping it cannot fail the job pod.
        pub const KRUISE_TERMINATE_SIDECAR_IGNORE_EXIT_CODE: &str =
            "KRUISE_TERMINATE_SIDECAR_IGNORE_EXIT_CODE";
        /// UID of the EphemeralJob that started an ephemeral container.
        pub const KRUISE_EJOB_ID: &str = "KRUISE_EJOB_ID";
        /// `"true"` on every container a SidecarSet injected.
        pub const IS_INJECTED: &str = "IS_INJECTED";
        /// Version of a hot-upgrade sidecar container, read from its pod annotation.
        pub const SIDECARSET_VERSION: &str = "SIDECARSET_VERSION";
        /// Version of the twin of a hot-upgrade sidecar container.
        pub const SIDECARSET_VERSION_ALT: &str = "SIDECARSET_VERSION_ALT";

        /// Every variable in this module.
        pub const ALL: &[&str] = &[
            KRUISE_CONTAINER_PRIORITY,
            KRUISE_CONTAINER_BARRIER,
            KRUISE_TERMINATE_SIDECAR_WHEN_JOB_EXIT,
            KRUISE_TERMINATE_SIDECAR_WHEN_JOB_EXIT_WITH_IMAGE,
            KRUISE_TERMINATE_SIDECAR_IGNORE_EXIT_CODE,
            KRUISE_EJOB_ID,
            IS_INJECTED,
            SIDECARSET_VERSION,
            SIDECARSET_VERSION_ALT,
        ];
    }

    /// Variables read by `kruise-manager` and `kruise-daemon` themselves.
    pub mod component {
        /// Namespace Kruise runs in; defaults to
        /// [`super::super::config::DEFAULT_KRUISE_NAMESPACE`].
        pub const POD_NAMESPACE: &str = "POD_NAMESPACE";
        /// Node a `kruise-daemon` instance runs on; required by the daemon.
        pub const NODE_NAME: &str = "NODE_NAME";
        /// Namespace holding daemon-side copies such as pull secrets; defaults to
        /// [`super::super::config::DEFAULT_DAEMON_CONFIG_NAMESPACE`].
        pub const KRUISE_DAEMON_CONFIG_NS: &str = "KRUISE_DAEMON_CONFIG_NS";
        /// Old comma-separated list of enabled resources; without `SidecarSet` in it the pod
        /// webhook is disabled by default. Superseded by feature gates.
        pub const CUSTOM_RESOURCE_ENABLE: &str = "CUSTOM_RESOURCE_ENABLE";
        /// Host name to serve the webhook on and put in its certificate, when not using the
        /// service.
        pub const WEBHOOK_HOST: &str = "WEBHOOK_HOST";
        /// Port the webhook server listens on (default 9876).
        pub const WEBHOOK_PORT: &str = "WEBHOOK_PORT";
        /// Directory the webhook certificates are kept in.
        pub const WEBHOOK_CERT_DIR: &str = "WEBHOOK_CERT_DIR";
        /// How webhook certificates are stored; values are in
        /// [`super::super::config::cert_writer`].
        pub const WEBHOOK_CERT_WRITER: &str = "WEBHOOK_CERT_WRITER";
        /// Name of the Secret holding the webhook certificates.
        pub const SECRET_NAME: &str = "SECRET_NAME";
        /// Name of the Service in front of the webhook.
        pub const SERVICE_NAME: &str = "SERVICE_NAME";
        /// How long before expiry to renew webhook certificates: a number followed by `d`,
        /// `m` (30 days) or `y`.
        pub const CERTS_RENEW_BEFORE: &str = "CERTS_RENEW_BEFORE";

        /// Every variable in this module.
        pub const ALL: &[&str] = &[
            POD_NAMESPACE,
            NODE_NAME,
            KRUISE_DAEMON_CONFIG_NS,
            CUSTOM_RESOURCE_ENABLE,
            WEBHOOK_HOST,
            WEBHOOK_PORT,
            WEBHOOK_CERT_DIR,
            WEBHOOK_CERT_WRITER,
            SECRET_NAME,
            SERVICE_NAME,
            CERTS_RENEW_BEFORE,
        ];
    }
}

/// Values written under the keys above, grouped by feature.
pub mod values {
    /// Canonical "yes" value for boolean labels and annotations.
    pub const TRUE: &str = "true";
    /// Canonical "no" value for boolean labels and annotations.
    pub const FALSE: &str = "false";

    /// Values of the [`super::labels::DELETION_PROTECTION`] label.
    pub mod deletion_protection {
        /// Refuse deletion unconditionally.
        pub const ALWAYS: &str = "Always";
        /// Refuse deletion while the object still has dependents (pods, active replicas,
        /// custom resources, ...).
        pub const CASCADING: &str = "Cascading";

        /// Every value of the label.
        pub const ALL: &[&str] = &[ALWAYS, CASCADING];
    }

    /// Operations a PodUnavailableBudget can guard.
    pub mod pub_operations {
        /// Updates that would disrupt the pod, such as image changes.
        pub const UPDATE: &str = "UPDATE";
        /// Pod deletion.
        pub const DELETE: &str = "DELETE";
        /// Eviction through the eviction subresource.
        pub const EVICT: &str = "EVICT";
        /// In-place vertical resizing.
        pub const RESIZE: &str = "RESIZE";

        /// Every operation.
        pub const ALL: &[&str] = &[UPDATE, DELETE, EVICT, RESIZE];
    }

    /// Container launch priority values and naming.
    pub mod container_launch_priority {
        /// Value of [`super::super::annotations::CONTAINER_LAUNCH_PRIORITY`] that starts
        /// containers in declaration order.
        pub const ORDERED: &str = "Ordered";
        /// Appended to the pod name to form the name of its barrier ConfigMap.
        pub const BARRIER_CONFIG_MAP_SUFFIX: &str = "-barrier";
        /// Prepended to a priority number to form its key in the barrier ConfigMap
        /// (for example `p_1000`).
        pub const BARRIER_KEY_PREFIX: &str = "p_";
    }

    /// SidecarSet values and naming.
    pub mod sidecarset {
        /// Appended to a hot-upgrade sidecar name to form its first container name.
        pub const HOT_UPGRADE_SUFFIX_1: &str = "-1";
        /// Appended to a hot-upgrade sidecar name to form its second container name.
        pub const HOT_UPGRADE_SUFFIX_2: &str = "-2";
    }

    /// Image pulling values.
    pub mod image_pull {
        /// Value of [`super::super::annotations::PULLING_IMAGE_BY`] on pulls made by the
        /// daemon.
        pub const PULLING_IMAGE_BY_KRUISE_DAEMON: &str = "kruise-daemon";
        /// Value of [`super::super::annotations::IMAGE_PULL_JOB_SECRET_MODE`] for secrets
        /// copied under the current scheme, which NodeImage cleanup relies on.
        pub const SECRET_MODE_BATCH: &str = "batch";
    }

    /// WorkloadSpread values.
    pub mod workload_spread {
        /// Subset name recorded for pods that match none of the WorkloadSpread's subsets.
        pub const FAKE_SUBSET_NAME: &str = "kruise.io/workloadspread-fake-subset-name";
    }
}

/// Names of Kruise-owned configuration objects, and their data keys.
pub mod config {
    /// Namespace Kruise runs in when `POD_NAMESPACE` is not set.
    pub const DEFAULT_KRUISE_NAMESPACE: &str = "kruise-system";
    /// Namespace for daemon-side copies when `KRUISE_DAEMON_CONFIG_NS` is not set.
    pub const DEFAULT_DAEMON_CONFIG_NAMESPACE: &str = "kruise-daemon-config";

    /// ConfigMap, in the Kruise namespace, holding runtime configuration.
    pub const KRUISE_CONFIGURATION: &str = "kruise-configuration";
    /// Key of [`KRUISE_CONFIGURATION`]: which pod metadata SidecarSets may patch.
    pub const SIDECARSET_PATCH_POD_METADATA_WHITE_LIST: &str =
        "SidecarSet_PatchPodMetadata_WhiteList";
    /// Key of [`KRUISE_CONFIGURATION`]: extra workload kinds PersistentPodState may follow.
    pub const PPS_WATCH_CUSTOM_WORKLOAD_WHITE_LIST: &str = "PPS_Watch_Custom_Workload_WhiteList";
    /// Key of [`KRUISE_CONFIGURATION`]: extra workload kinds WorkloadSpread may follow.
    pub const WORKLOADSPREAD_WATCH_CUSTOM_WORKLOAD_WHITE_LIST: &str =
        "WorkloadSpread_Watch_Custom_Workload_WhiteList";

    /// Secret holding the webhook certificates when `SECRET_NAME` is not set.
    pub const DEFAULT_WEBHOOK_SECRET_NAME: &str = "kruise-webhook-certs";
    /// Service in front of the webhook when `SERVICE_NAME` is not set.
    pub const DEFAULT_WEBHOOK_SERVICE_NAME: &str = "kruise-webhook-service";
    /// Certificate directory when `WEBHOOK_CERT_DIR` is not set.
    pub const DEFAULT_WEBHOOK_CERT_DIR: &str = "/tmp/kruise-webhook-certs";
    /// MutatingWebhookConfiguration Kruise keeps up to date.
    pub const MUTATING_WEBHOOK_CONFIGURATION: &str = "kruise-mutating-webhook-configuration";
    /// ValidatingWebhookConfiguration Kruise keeps up to date.
    pub const VALIDATING_WEBHOOK_CONFIGURATION: &str = "kruise-validating-webhook-configuration";

    /// Values of the `WEBHOOK_CERT_WRITER` variable.
    pub mod cert_writer {
        /// Keep certificates in a Secret (the default).
        pub const SECRET: &str = "secret";
        /// Keep certificates on the local file system.
        pub const FS: &str = "fs";
        /// Certificates are provided from outside (for example by cert-manager).
        pub const EXTERNAL: &str = "external";
    }
}

/// Keys owned by upstream Kubernetes (or the kubelet) that Kruise reads or writes.
pub mod kubernetes {
    /// Upstream label keys.
    pub mod labels {
        /// Revision hash on pods and ControllerRevisions of native workloads; Kruise's
        /// Advanced StatefulSet and DaemonSet also set it on their pods.
        pub const CONTROLLER_REVISION_HASH: &str = "controller-revision-hash";
        /// Template hash on the pods and ReplicaSets of a Deployment.
        pub const POD_TEMPLATE_HASH: &str = "pod-template-hash";
        /// Name of a StatefulSet pod, set on the pod itself.
        pub const STATEFULSET_POD_NAME: &str = "statefulset.kubernetes.io/pod-name";
        /// Ordinal of a StatefulSet pod.
        pub const POD_INDEX: &str = "apps.kubernetes.io/pod-index";
        /// Revision hash label UnitedDeployment puts on its ControllerRevisions.
        pub const CONTROLLER_HASH: &str = "controller.kubernetes.io/hash";
        /// Host name of a node.
        pub const HOSTNAME: &str = "kubernetes.io/hostname";
        /// Node label whose value [`VIRTUAL_KUBELET_TYPE_VALUE`] marks a virtual-kubelet node.
        pub const VIRTUAL_KUBELET_TYPE: &str = "type";
        /// Value of [`VIRTUAL_KUBELET_TYPE`] on virtual-kubelet nodes.
        pub const VIRTUAL_KUBELET_TYPE_VALUE: &str = "virtual-kubelet";
        /// Name of a namespace, set on every namespace by the API server; a v1alpha1
        /// SidecarSet's `namespace` becomes a v1beta1 `namespaceSelector` on it.
        pub const NAMESPACE_METADATA_NAME: &str = "kubernetes.io/metadata.name";

        /// Every label key in this module.
        pub const ALL: &[&str] = &[
            NAMESPACE_METADATA_NAME,
            CONTROLLER_REVISION_HASH,
            POD_TEMPLATE_HASH,
            STATEFULSET_POD_NAME,
            POD_INDEX,
            CONTROLLER_HASH,
            HOSTNAME,
            VIRTUAL_KUBELET_TYPE,
        ];
    }

    /// Upstream annotation keys.
    pub mod annotations {
        /// Cost of deleting a pod, relative to its siblings; WorkloadSpread sets it and
        /// CloneSet honours it when choosing pods to delete.
        pub const POD_DELETION_COST: &str = "controller.kubernetes.io/pod-deletion-cost";
        /// Revision number of a Deployment and its ReplicaSets.
        pub const DEPLOYMENT_REVISION: &str = "deployment.kubernetes.io/revision";
        /// Marks the default StorageClass.
        pub const IS_DEFAULT_STORAGE_CLASS: &str = "storageclass.kubernetes.io/is-default-class";
        /// Where the kubelet got a pod from (`api`, `file`, `http`); any source other than
        /// `api` marks a static pod.
        pub const CONFIG_SOURCE: &str = "kubernetes.io/config.source";

        /// Every annotation key in this module.
        pub const ALL: &[&str] =
            &[POD_DELETION_COST, DEPLOYMENT_REVISION, IS_DEFAULT_STORAGE_CLASS, CONFIG_SOURCE];
    }

    /// Upstream taint keys.
    pub mod taints {
        /// Taint carried by virtual-kubelet nodes.
        pub const VIRTUAL_KUBELET_PROVIDER: &str = "virtual-kubelet.io/provider";
    }

    /// Labels and annotations the kubelet puts on CRI containers, which `kruise-daemon`
    /// reads to map runtime containers back to pods.
    pub mod cri {
        /// CRI label: container name.
        pub const CONTAINER_NAME: &str = "io.kubernetes.container.name";
        /// CRI label: pod name.
        pub const POD_NAME: &str = "io.kubernetes.pod.name";
        /// CRI label: pod namespace.
        pub const POD_NAMESPACE: &str = "io.kubernetes.pod.namespace";
        /// CRI label: pod UID.
        pub const POD_UID: &str = "io.kubernetes.pod.uid";
        /// CRI annotation: hash of the container spec.
        pub const CONTAINER_HASH: &str = "io.kubernetes.container.hash";
        /// CRI annotation: restart count of the container.
        pub const CONTAINER_RESTART_COUNT: &str = "io.kubernetes.container.restartCount";
        /// CRI annotation: termination message path.
        pub const CONTAINER_TERMINATION_MESSAGE_PATH: &str =
            "io.kubernetes.container.terminationMessagePath";
        /// CRI annotation: termination message policy.
        pub const CONTAINER_TERMINATION_MESSAGE_POLICY: &str =
            "io.kubernetes.container.terminationMessagePolicy";
        /// CRI annotation: JSON pre-stop handler.
        pub const CONTAINER_PRE_STOP_HANDLER: &str = "io.kubernetes.container.preStopHandler";
        /// CRI annotation: JSON container ports.
        pub const CONTAINER_PORTS: &str = "io.kubernetes.container.ports";
        /// CRI annotation: deletion grace period of the pod.
        pub const POD_DELETION_GRACE_PERIOD: &str = "io.kubernetes.pod.deletionGracePeriod";
        /// CRI annotation: termination grace period of the pod.
        pub const POD_TERMINATION_GRACE_PERIOD: &str = "io.kubernetes.pod.terminationGracePeriod";
    }
}

/// Keys of Kruise Rollout (rollouts.kruise.io): set on workloads, pods and the rollout objects
/// themselves, by layout as above.
pub mod rollouts {
    /// Label keys owned by Kruise Rollout.
    pub mod labels {
        /// The release id, on a workload (set by the user to mark one release) and copied to
        /// the pods a release updates. A v1alpha1 Rollout's deprecated `spec.rolloutID` plays
        /// the same part.
        pub const ROLLOUT_ID: &str = "rollouts.kruise.io/rollout-id";
        /// The batch (from 1) in which a pod was updated; written only when the release has a
        /// [`ROLLOUT_ID`].
        pub const ROLLOUT_BATCH_ID: &str = "rollouts.kruise.io/rollout-batch-id";
        /// The kind of workload a Rollout releases, set on the workload by the Rollout
        /// controller (for example `deployment`, `cloneset`).
        pub const WORKLOAD_TYPE: &str = "rollouts.kruise.io/workload-type";
        /// On a Deployment a partition-style or blue-green release controls: the
        /// pod-template-hash of its stable revision, removed when the release ends.
        pub const STABLE_REVISION: &str = "rollouts.kruise.io/stable-revision";

        /// On a Deployment whose partition-style release moves its ReplicaSets itself
        /// (upstream's AdvancedDeployment controller): `"true"`.
        pub const CONTROLLED_BY_ADVANCED_DEPLOYMENT: &str =
            "rollouts.kruise.io/controlled-by-advanced-deployment-controller";
        /// On the extra Deployment a canary-style release runs: the stable Deployment's name.
        pub const CANARY_DEPLOYMENT: &str = "rollouts.kruise.io/canary-deployment";

        /// On a pod a rollback in batches need not move (it already runs the revision rolled
        /// back to): the release id.
        pub const NO_NEED_UPDATE: &str = "rollouts.kruise.io/no-need-update";

        /// Every label key in this module.
        pub const ALL: &[&str] = &[
            NO_NEED_UPDATE,
            ROLLOUT_ID,
            ROLLOUT_BATCH_ID,
            WORKLOAD_TYPE,
            STABLE_REVISION,
            CONTROLLED_BY_ADVANCED_DEPLOYMENT,
            CANARY_DEPLOYMENT,
        ];
    }

    /// Annotation keys owned by Kruise Rollout.
    pub mod annotations {
        /// JSON record, on a workload, of the Rollout releasing it; the workload webhooks
        /// hold the workload's update while it is present.
        pub const IN_PROGRESSING: &str = "rollouts.kruise.io/in-progressing";
        /// JSON record, on a workload, of the BatchRelease controlling it.
        pub const BATCH_RELEASE_CONTROL_INFO: &str = "batchrelease.rollouts.kruise.io/control-info";
        /// On a Rollout: roll a reverted workload back batch by batch instead of at once.
        pub const ROLLBACK_IN_BATCH: &str = "rollouts.kruise.io/rollback-in-batch";
        /// On a Rollout: the hash of its spec the controller last saw, copied into the
        /// status as `rolloutHash`.
        pub const HASH: &str = "rollouts.kruise.io/hash";
        /// On a v1alpha1 Rollout (`partition` or `canary`) or BatchRelease (`partition`,
        /// `canary` or `bluegreen`): how the workload is moved. v1beta1 has spec fields
        /// instead (`enableExtraWorkloadForCanary`, `releasePlan.rollingStyle`).
        pub const ROLLING_STYLE: &str = "rollouts.kruise.io/rolling-style";
        /// On a Rollout: the TrafficRouting object its releases also move (v1beta1
        /// `trafficRoutingRef`).
        pub const TRAFFIC_ROUTING: &str = "rollouts.kruise.io/trafficrouting";

        /// JSON, on a Deployment under a partition-style release: `rollingStyle`, the saved
        /// `rollingUpdate`, `paused` and `partition` (how many pods are on the new revision).
        pub const DEPLOYMENT_STRATEGY: &str = "rollouts.kruise.io/deployment-strategy";
        /// JSON, on such a Deployment: `updatedReadyReplicas` and `expectedUpdatedReplicas`,
        /// written by the controller that moves its ReplicaSets.
        pub const DEPLOYMENT_EXTRA_STATUS: &str = "rollouts.kruise.io/deployment-extra-status";

        /// JSON, on a Deployment or CloneSet under a blue-green release: its own
        /// `maxSurge`, `maxUnavailable`, `minReadySeconds` and `progressDeadlineSeconds`,
        /// restored when the release ends.
        pub const ORIGINAL_DEPLOYMENT_STRATEGY: &str =
            "rollouts.kruise.io/original-deployment-strategy";

        /// On a native DaemonSet under a release: its own `updateStrategy.type`, restored at
        /// the end (the release runs it `OnDelete`).
        pub const DAEMONSET_ORIGINAL_UPDATE_STRATEGY: &str =
            "rollouts.kruise.io/daemonset-original-update-strategy";
        /// JSON, on a native DaemonSet under a release: `partition` (how many pods keep the
        /// old revision) and `batch-revision` (the revision the batch moves pods to).
        pub const DAEMONSET_ADVANCED_CONTROL: &str =
            "rollouts.kruise.io/daemonset-advanced-control";

        /// Every annotation key in this module.
        pub const ALL: &[&str] = &[
            DAEMONSET_ORIGINAL_UPDATE_STRATEGY,
            DAEMONSET_ADVANCED_CONTROL,
            ORIGINAL_DEPLOYMENT_STRATEGY,
            DEPLOYMENT_STRATEGY,
            DEPLOYMENT_EXTRA_STATUS,
            IN_PROGRESSING,
            BATCH_RELEASE_CONTROL_INFO,
            ROLLBACK_IN_BATCH,
            HASH,
            ROLLING_STYLE,
            TRAFFIC_ROUTING,
        ];
    }

    /// Finalizers added by Kruise Rollout.
    pub mod finalizers {
        /// Held on a Rollout until its release is wound up (traffic restored, workload given
        /// back).
        pub const ROLLOUT: &str = "rollouts.kruise.io/rollout";
        /// Held on a BatchRelease until the workload is given back.
        pub const BATCH_RELEASE: &str = "rollouts.kruise.io/batch-release-finalizer";

        /// Held on a canary-style release's extra Deployment until the release is over.
        pub const CANARY_DEPLOYMENT: &str = "finalizer.rollouts.kruise.io/batch-release";

        /// Held on a TrafficRouting by its own controller until its routes are restored.
        pub const TRAFFIC_ROUTING: &str = "rollouts.kruise.io/trafficrouting";

        /// The prefix of the finalizer each Rollout in progress holds on the TrafficRouting it
        /// names (`progressing.rollouts.kruise.io/<rollout>`).
        pub const PROGRESSING_ROLLOUT_PREFIX: &str = "progressing.rollouts.kruise.io/";

        /// Every finalizer in this module (the prefix aside).
        pub const ALL: &[&str] = &[ROLLOUT, BATCH_RELEASE, CANARY_DEPLOYMENT, TRAFFIC_ROUTING];
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeMap;

    /// DNS-1123 subdomain: dot-separated labels of `[a-z0-9-]`, each starting and ending
    /// alphanumeric, at most 253 characters in all.
    fn is_dns_subdomain(s: &str) -> bool {
        !s.is_empty()
            && s.len() <= 253
            && s.split('.').all(|label| {
                let b = label.as_bytes();
                !b.is_empty()
                    && b.iter().all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || *c == b'-')
                    && b[0].is_ascii_alphanumeric()
                    && b[b.len() - 1].is_ascii_alphanumeric()
            })
    }

    /// Name part of a qualified name, which is also the syntax of a non-empty label value.
    fn is_qualified_name_part(s: &str) -> bool {
        let b = s.as_bytes();
        !b.is_empty()
            && b.len() <= 63
            && b.iter().all(|c| c.is_ascii_alphanumeric() || matches!(c, b'-' | b'_' | b'.'))
            && b[0].is_ascii_alphanumeric()
            && b[b.len() - 1].is_ascii_alphanumeric()
    }

    /// Kubernetes qualified name: `[prefix/]name`.
    fn is_qualified_name(s: &str) -> bool {
        match s.split_once('/') {
            Some((prefix, name)) => is_dns_subdomain(prefix) && is_qualified_name_part(name),
            None => is_qualified_name_part(s),
        }
    }

    fn is_label_value(s: &str) -> bool {
        s.is_empty() || is_qualified_name_part(s)
    }

    fn is_env_name(s: &str) -> bool {
        let b = s.as_bytes();
        !b.is_empty()
            && (b[0].is_ascii_uppercase() || b[0] == b'_')
            && b.iter().all(|c| c.is_ascii_uppercase() || c.is_ascii_digit() || *c == b'_')
    }

    #[test]
    fn validators_behave() {
        assert!(is_qualified_name("apps.kruise.io/x"));
        assert!(is_qualified_name("plain-name"));
        assert!(!is_qualified_name("Apps.kruise.io/x"));
        assert!(!is_qualified_name("apps.kruise.io/"));
        assert!(!is_qualified_name("/x"));
        assert!(!is_qualified_name("a/b/c"));
        assert!(!is_qualified_name("apps..kruise.io/x"));
        assert!(!is_qualified_name("apps.kruise.io/-x"));
        assert!(!is_qualified_name(&format!("a/{}", "x".repeat(64))));
        assert!(is_qualified_name(&format!("a/{}", "x".repeat(63))));
        assert!(!is_label_value("has space"));
        assert!(!is_env_name("lower"));
    }

    #[test]
    fn keys_are_qualified_names() {
        let all = labels::ALL
            .iter()
            .chain(annotations::ALL)
            .chain(finalizers::ALL)
            .chain(kubernetes::labels::ALL)
            .chain(kubernetes::annotations::ALL)
            .chain(rollouts::labels::ALL)
            .chain(rollouts::annotations::ALL)
            .chain(rollouts::finalizers::ALL)
            .chain([&kubernetes::taints::VIRTUAL_KUBELET_PROVIDER]);
        for key in all {
            assert!(is_qualified_name(key), "{key:?} is not a qualified name");
        }
    }

    #[test]
    fn prefixes_complete_to_qualified_names() {
        for prefix in labels::ALL_PREFIXES.iter().chain(annotations::ALL_PREFIXES) {
            assert!(prefix.ends_with('/'), "{prefix:?} must end with '/'");
            let key = format!("{prefix}mesh-1");
            assert!(is_qualified_name(&key), "{key:?} is not a qualified name");
        }
    }

    #[test]
    fn no_accidental_duplicates() {
        // Values that intentionally appear under more than one name.
        // The TrafficRouting finalizer is spelt as the Rollout annotation naming one, as upstream.
        let documented_aliases =
            [finalizers::CRR_UNREADY_ACQUIRED, rollouts::finalizers::TRAFFIC_ROUTING];
        let mut seen: BTreeMap<&str, usize> = BTreeMap::new();
        let all = labels::ALL
            .iter()
            .chain(labels::ALL_PREFIXES)
            .chain(annotations::ALL)
            .chain(annotations::ALL_PREFIXES)
            .chain(finalizers::ALL)
            .chain(rollouts::labels::ALL)
            .chain(rollouts::annotations::ALL)
            .chain(rollouts::finalizers::ALL);
        for key in all {
            *seen.entry(*key).or_default() += 1;
        }
        for (key, count) in seen {
            if count > 1 {
                assert!(
                    documented_aliases.contains(&key) && count == 2,
                    "{key:?} appears {count} times"
                );
            }
        }
    }

    #[test]
    fn legacy_keys_are_unprefixed_forms() {
        let pairs = [
            (annotations::INPLACE_UPDATE_STATE, annotations::INPLACE_UPDATE_STATE_LEGACY),
            (annotations::INPLACE_UPDATE_GRACE, annotations::INPLACE_UPDATE_GRACE_LEGACY),
        ];
        for (current, legacy) in pairs {
            assert_eq!(current.split_once('/').map(|(_, name)| name), Some(legacy));
        }
        let name = |k: &'static str| k.split_once('/').map(|(_, n)| n);
        assert_eq!(name(annotations::PUB_RELATED_PUB), name(annotations::PUB_RELATED_PUB_LEGACY));
    }

    #[test]
    fn label_values_are_valid() {
        let values = lifecycle::ALL
            .iter()
            .chain(values::deletion_protection::ALL)
            .chain([&values::TRUE, &values::FALSE]);
        for v in values {
            assert!(is_label_value(v), "{v:?} is not a valid label value");
        }
    }

    #[test]
    fn env_names_are_valid_and_unique() {
        let mut seen = std::collections::BTreeSet::new();
        for name in env::container::ALL.iter().chain(env::component::ALL) {
            assert!(is_env_name(name), "{name:?} is not a valid variable name");
            assert!(seen.insert(*name), "{name:?} listed twice");
        }
    }

    #[test]
    fn readiness_gates_are_distinct_condition_types() {
        assert_ne!(readiness_gates::KRUISE_POD_READY, readiness_gates::IN_PLACE_UPDATE_READY);
        for gate in readiness_gates::ALL {
            assert!(is_qualified_name(gate));
            assert_ne!(*gate, conditions::pod::SIDECARSET_UPGRADABLE);
            assert_ne!(*gate, conditions::pod::SIDECAR_TERMINATED);
        }
    }
}
