//! What the planner reads: the CloneSet, what it owns, the expectations in flight and the
//! feature gates, all read before planning starts.

use std::collections::BTreeMap;

use jiff::SignedDuration;
use k8s_openapi::api::apps::v1::ControllerRevision;
use k8s_openapi::api::core::v1::PersistentVolumeClaim;
use kruise_api::apps::{v1alpha1, v1beta1};
use serde::{Deserialize, Serialize};

use crate::expectations::{ControllerExpectations, DEFAULT_TIMEOUT};
use crate::workload::duration_serde;

crate::workload::versioned_object!(
    /// A CloneSet at either served API version. The planner works on v1beta1 and converts a
    /// v1alpha1 object with [`kruise_api::conversion::to_hub`] first.
    CloneSetObject,
    "CloneSet",
    "cloneset",
    v1beta1::CloneSet,
    v1alpha1::CloneSet
);

/// The feature gates that change CloneSet planning, with upstream's defaults (all off but
/// `InPlaceUpdateEnvFromMetadata`).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "PascalCase", default)]
#[non_exhaustive]
pub struct FeatureGates {
    /// `CloneSetShortHash`: write only the hash (not `<name>-<hash>`) into pods'
    /// `controller-revision-hash` label.
    pub clone_set_short_hash: bool,
    /// `CloneSetPartitionRollback`: when the partition grows, move updated pods back to the
    /// current revision.
    pub clone_set_partition_rollback: bool,
    /// `PreparingUpdateAsUpdate`: count pods in `PreparingUpdate` as updated when scaling.
    pub preparing_update_as_update: bool,
    /// `InPlaceWorkloadVerticalScaling`: resource changes may be applied in place.
    pub in_place_workload_vertical_scaling: bool,
    /// `RecreatePodWhenChangeVCTInCloneSetGate`: a change of volumeClaimTemplates forces
    /// recreation instead of an in-place update.
    #[serde(rename = "RecreatePodWhenChangeVCTInCloneSetGate")]
    pub recreate_pod_when_change_vct: bool,
    /// `InPlaceUpdateEnvFromMetadata` (on by default): env vars taken from labels/annotations
    /// may be updated in place.
    pub in_place_update_env_from_metadata: bool,
    /// `PreDownloadImageForInPlaceUpdate`: ImagePullJobs pull a new revision's images onto
    /// the nodes of the pods still at other revisions before a partitioned or progressive
    /// in-place update (off).
    pub pre_download_image_for_in_place_update: bool,
    /// `PodWebhook` (on): new pods carry the `KruisePodReady` readiness gate, which upstream's
    /// pod webhook gives every pod a Kruise workload controls ([`crate::readiness`]). Off only
    /// where nothing would open the gate (no pod-readiness controller runs).
    pub pod_webhook: bool,
}

impl Default for FeatureGates {
    fn default() -> Self {
        Self {
            clone_set_short_hash: false,
            clone_set_partition_rollback: false,
            preparing_update_as_update: false,
            in_place_workload_vertical_scaling: false,
            recreate_pod_when_change_vct: false,
            in_place_update_env_from_metadata: true,
            pre_download_image_for_in_place_update: false,
            pod_webhook: true,
        }
    }
}

/// Planner settings that upstream takes from command-line flags.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
#[non_exhaustive]
pub struct PlannerOptions {
    /// How long an expectation may stay unsatisfied before it is dropped (default five
    /// minutes, upstream's `--expectation-timeout`).
    #[serde(with = "duration_serde")]
    pub expectation_timeout: SignedDuration,
    /// Leave pods in `PreparingDelete` out of the replica count for every CloneSet (upstream's
    /// `--cloneset-scaling-exclude-preparing-delete`).
    pub scaling_exclude_preparing_delete: bool,
    /// The API server changes container resources through the `pods/resize` subresource
    /// (Kubernetes 1.32 and later); in-place resource changes then come as
    /// [`Action::PatchPodResize`](super::Action::PatchPodResize).
    pub resize_subresource: bool,
}

impl Default for PlannerOptions {
    fn default() -> Self {
        Self {
            expectation_timeout: DEFAULT_TIMEOUT,
            scaling_exclude_preparing_delete: false,
            resize_subresource: false,
        }
    }
}

/// Everything the CloneSet planner needs, already read from the cluster.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CloneSetSnapshot {
    /// The CloneSet.
    pub cloneset: CloneSetObject,
    /// The pods it owns (controller ownerReference with its UID), including terminating and
    /// finished ones; the planner sorts them out. Shared, so that a controller can hand over
    /// its cached pods without copying them, each with the [`PodFacts`](super::PodFacts) the
    /// planner reads on every round.
    #[serde(default)]
    pub pods: Vec<super::SnapshotPod>,
    /// The PVCs it owns (controller ownerReference with its UID).
    #[serde(default)]
    pub pvcs: Vec<PersistentVolumeClaim>,
    /// Its ControllerRevisions.
    #[serde(default)]
    pub revisions: Vec<ControllerRevision>,
    /// Labels of the nodes the pods run on, by node name; used to spread scale-in over the
    /// topology keys of the template's topologySpreadConstraints. May be left empty.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub node_labels: BTreeMap<String, BTreeMap<String, String>>,
    /// Expectations recorded by earlier plans and not yet observed.
    #[serde(default)]
    pub expectations: ControllerExpectations,
    /// Feature gates.
    #[serde(default)]
    pub feature_gates: FeatureGates,
    /// Flag-level settings.
    #[serde(default)]
    pub options: PlannerOptions,
    /// Names of the ImagePullJobs the CloneSet controls (read only with
    /// `PreDownloadImageForInPlaceUpdate` on).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub image_pull_jobs: Vec<String>,
}

impl CloneSetSnapshot {
    /// A snapshot of `cloneset` with nothing owned yet, no expectations and default gates.
    pub fn new(cloneset: impl Into<CloneSetObject>) -> Self {
        Self {
            cloneset: cloneset.into(),
            pods: Vec::new(),
            pvcs: Vec::new(),
            revisions: Vec::new(),
            node_labels: BTreeMap::new(),
            expectations: ControllerExpectations::default(),
            feature_gates: FeatureGates::default(),
            options: PlannerOptions::default(),
            image_pull_jobs: Vec::new(),
        }
    }
}
