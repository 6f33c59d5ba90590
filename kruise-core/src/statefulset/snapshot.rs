//! What the Advanced StatefulSet planner reads: the set, its pods, claims and revisions, the
//! expectations in flight and the feature gates, all read before planning starts.

use std::collections::BTreeMap;

use jiff::SignedDuration;
use k8s_openapi::api::apps::v1::ControllerRevision;
use k8s_openapi::api::core::v1::PersistentVolumeClaim;
use kruise_api::apps::{v1alpha1, v1beta1};
use serde::{Deserialize, Serialize};

use crate::expectations::{ControllerExpectations, DEFAULT_TIMEOUT};
use crate::workload::{SnapshotPod, duration_serde};

crate::workload::versioned_object!(
    /// An Advanced StatefulSet at either served API version. The planner works on v1beta1 and
    /// converts a v1alpha1 object with [`kruise_api::conversion::to_hub`] first.
    StatefulSetObject,
    "StatefulSet",
    "statefulset",
    v1beta1::StatefulSet,
    v1alpha1::StatefulSet
);

/// The feature gates that change Advanced StatefulSet planning, with upstream's defaults.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "PascalCase", default)]
#[non_exhaustive]
pub struct FeatureGates {
    /// `StatefulSetStartOrdinal`: `spec.ordinals.start` numbers the pods (off by default).
    pub stateful_set_start_ordinal: bool,
    /// `StatefulSetAutoDeletePVC`: `persistentVolumeClaimRetentionPolicy` is honoured (on).
    #[serde(rename = "StatefulSetAutoDeletePVC")]
    pub stateful_set_auto_delete_pvc: bool,
    /// `StatefulSetAutoResizePVCGate`: `volumeClaimUpdateStrategy` resizes claims (off).
    #[serde(rename = "StatefulSetAutoResizePVCGate")]
    pub stateful_set_auto_resize_pvc: bool,
    /// `PodIndexLabel`: pods carry `apps.kubernetes.io/pod-index` (on).
    pub pod_index_label: bool,
    /// `PreparingUpdateAsUpdate`: pods in `PreparingUpdate` count as updated when choosing
    /// what to update (off).
    pub preparing_update_as_update: bool,
    /// `InPlaceWorkloadVerticalScaling`: cpu and memory change in place (off).
    pub in_place_workload_vertical_scaling: bool,
    /// `InPlaceUpdateEnvFromMetadata`: env vars taken from labels and annotations update in
    /// place (on).
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
            stateful_set_start_ordinal: false,
            stateful_set_auto_delete_pvc: true,
            stateful_set_auto_resize_pvc: false,
            pod_index_label: true,
            preparing_update_as_update: false,
            in_place_workload_vertical_scaling: false,
            in_place_update_env_from_metadata: true,
            pre_download_image_for_in_place_update: false,
            pod_webhook: true,
        }
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
}

impl Default for PlannerOptions {
    fn default() -> Self {
        Self { expectation_timeout: DEFAULT_TIMEOUT, resize_subresource: false }
    }
}

/// Everything the Advanced StatefulSet planner needs, already read from the cluster.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct StatefulSetSnapshot {
    /// The set.
    pub statefulset: StatefulSetObject,
    /// The pods it controls (controller ownerReference with its UID), including terminating
    /// and finished ones, each with the [`PodFacts`](crate::workload::PodFacts) the planner
    /// reads on every round.
    #[serde(default)]
    pub pods: Vec<SnapshotPod>,
    /// Its claims: the PVCs in its namespace named `<template>-<set>-<ordinal>`. Others are
    /// ignored.
    #[serde(default)]
    pub pvcs: Vec<PersistentVolumeClaim>,
    /// Its ControllerRevisions.
    #[serde(default)]
    pub revisions: Vec<ControllerRevision>,
    /// Whether each StorageClass allows volume expansion, by name (read only for
    /// `volumeClaimUpdateStrategy: OnPodRollingUpdate`).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub storage_classes: BTreeMap<String, bool>,
    /// Expectations recorded by earlier plans and not yet observed.
    #[serde(default)]
    pub expectations: ControllerExpectations,
    /// Feature gates.
    #[serde(default)]
    pub feature_gates: FeatureGates,
    /// Flag-level settings.
    #[serde(default)]
    pub options: PlannerOptions,
    /// Names of the ImagePullJobs the set controls (read only with
    /// `PreDownloadImageForInPlaceUpdate` on).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub image_pull_jobs: Vec<String>,
}

impl StatefulSetSnapshot {
    /// A snapshot of `statefulset` with nothing owned yet, no expectations and default gates.
    pub fn new(statefulset: impl Into<StatefulSetObject>) -> Self {
        Self {
            statefulset: statefulset.into(),
            pods: Vec::new(),
            pvcs: Vec::new(),
            revisions: Vec::new(),
            storage_classes: BTreeMap::new(),
            expectations: ControllerExpectations::default(),
            feature_gates: FeatureGates::default(),
            options: PlannerOptions::default(),
            image_pull_jobs: Vec::new(),
        }
    }
}
