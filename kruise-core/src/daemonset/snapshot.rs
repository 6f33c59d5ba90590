//! What the Advanced DaemonSet planner reads: the DaemonSet, the nodes, its pods and
//! revisions, the expectations in flight and the feature gates, all read before planning.

use std::collections::BTreeMap;

use jiff::{SignedDuration, Timestamp};
use k8s_openapi::api::apps::v1::ControllerRevision;
use kruise_api::apps::{v1alpha1, v1beta1};
use serde::{Deserialize, Serialize};

use super::SnapshotNode;
use crate::expectations::{ControllerExpectations, DEFAULT_TIMEOUT};
use crate::workload::{SnapshotPod, duration_serde};

crate::workload::versioned_object!(
    /// An Advanced DaemonSet at either served API version. The planner works on v1beta1 and
    /// converts a v1alpha1 object (its `progressive-create-pod` annotation becoming
    /// `scaleStrategy.partitionedScaling`) with [`kruise_api::conversion::to_hub`] first.
    DaemonSetObject,
    "DaemonSet",
    "daemonset",
    v1beta1::DaemonSet,
    v1alpha1::DaemonSet
);

/// The feature gates that change Advanced DaemonSet planning, with upstream's defaults.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "PascalCase", default)]
#[non_exhaustive]
pub struct FeatureGates {
    /// `DaemonSetPruneIneligibleNodes`: during a rolling update, pods on nodes that no longer
    /// want a daemon pod do not count against `maxUnavailable` (off).
    pub daemon_set_prune_ineligible_nodes: bool,
    /// `InPlaceWorkloadVerticalScaling`: cpu and memory change in place (off).
    pub in_place_workload_vertical_scaling: bool,
    /// `InPlaceUpdateEnvFromMetadata`: env vars taken from labels and annotations update in
    /// place (on).
    pub in_place_update_env_from_metadata: bool,
    /// `PreDownloadImageForDaemonSetUpdate`: ImagePullJobs pull a new revision's images onto
    /// the nodes still running old pods before a partitioned or progressive update (off).
    pub pre_download_image_for_daemon_set_update: bool,
    /// `PodWebhook` (on): new pods carry the `KruisePodReady` readiness gate, which upstream's
    /// pod webhook gives every pod a Kruise workload controls ([`crate::readiness`]). Off only
    /// where nothing would open the gate (no pod-readiness controller runs).
    pub pod_webhook: bool,
}

impl Default for FeatureGates {
    fn default() -> Self {
        Self {
            daemon_set_prune_ineligible_nodes: false,
            in_place_workload_vertical_scaling: false,
            in_place_update_env_from_metadata: true,
            pre_download_image_for_daemon_set_update: false,
            pod_webhook: true,
        }
    }
}

impl FeatureGates {
    /// The gates with `DaemonSetPruneIneligibleNodes` set to `on`.
    pub fn with_prune_ineligible_nodes(mut self, on: bool) -> Self {
        self.daemon_set_prune_ineligible_nodes = on;
        self
    }

    /// The gates with `PreDownloadImageForDaemonSetUpdate` set to `on`.
    pub fn with_pre_download_image(mut self, on: bool) -> Self {
        self.pre_download_image_for_daemon_set_update = on;
        self
    }

    /// The gates with `InPlaceWorkloadVerticalScaling` set to `on`.
    pub fn with_vertical_scaling(mut self, on: bool) -> Self {
        self.in_place_workload_vertical_scaling = on;
        self
    }
}

/// Planner settings that upstream takes from command-line flags or the cluster.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
#[non_exhaustive]
pub struct PlannerOptions {
    /// How long an expectation may stay unsatisfied before it is dropped (default five
    /// minutes).
    #[serde(with = "duration_serde")]
    pub expectation_timeout: SignedDuration,
    /// The API server changes container resources through the `pods/resize` subresource.
    pub resize_subresource: bool,
    /// New pods are bound by a required `metadata.name` node affinity term for the scheduler
    /// (`--assign-pods-by-scheduler`, the default), or else by `spec.nodeName`.
    pub assign_by_scheduler: bool,
}

impl Default for PlannerOptions {
    fn default() -> Self {
        Self {
            expectation_timeout: DEFAULT_TIMEOUT,
            resize_subresource: false,
            assign_by_scheduler: true,
        }
    }
}

/// Everything the Advanced DaemonSet planner needs, already read from the cluster.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct DaemonSetSnapshot {
    /// The DaemonSet.
    pub daemonset: DaemonSetObject,
    /// Every node of the cluster, each with the [`NodeFacts`](super::NodeFacts) eligibility
    /// reads.
    #[serde(default)]
    pub nodes: Vec<SnapshotNode>,
    /// The pods it controls (controller ownerReference with its UID), including terminating
    /// and finished ones.
    #[serde(default)]
    pub pods: Vec<SnapshotPod>,
    /// Its ControllerRevisions.
    #[serde(default)]
    pub revisions: Vec<ControllerRevision>,
    /// Expectations recorded by earlier plans and not yet observed.
    #[serde(default)]
    pub expectations: ControllerExpectations,
    /// Feature gates.
    #[serde(default)]
    pub feature_gates: FeatureGates,
    /// Flag-level settings.
    #[serde(default)]
    pub options: PlannerOptions,
    /// Nodes whose failed pod must not be deleted yet, each with the instant its back-off
    /// ends (from the controller's [`FailedPodBackoff`](super::FailedPodBackoff)); a node
    /// not listed is not in back-off.
    #[serde(default)]
    pub failed_pod_backoff: BTreeMap<String, Timestamp>,
    /// Names of the ImagePullJobs the DaemonSet controls (read only with
    /// `PreDownloadImageForDaemonSetUpdate` on).
    #[serde(default)]
    pub image_pull_jobs: Vec<String>,
}

impl DaemonSetSnapshot {
    /// A snapshot of `daemonset` with no nodes, nothing owned, no expectations and default
    /// gates.
    pub fn new(daemonset: impl Into<DaemonSetObject>) -> Self {
        Self {
            daemonset: daemonset.into(),
            nodes: Vec::new(),
            pods: Vec::new(),
            revisions: Vec::new(),
            expectations: ControllerExpectations::default(),
            feature_gates: FeatureGates::default(),
            options: PlannerOptions::default(),
            failed_pod_backoff: BTreeMap::new(),
            image_pull_jobs: Vec::new(),
        }
    }
}
