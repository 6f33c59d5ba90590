//! The workload a release moves, read the same way whatever its kind, and the patches that
//! hold, move and release it.

use std::collections::BTreeMap;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;
use kruise_api::apps::v1beta1::{CloneSet, DaemonSet, StatefulSet};
use serde_json::{Value, json};

use super::{
    CONTROL_INFO_ANNOTATION, HOLD_ALL_ORDINALS, IN_PROGRESSING_ANNOTATION, ROLLOUT_ID_LABEL,
};
use crate::intstr::{Rounding, scaled_value};
use crate::plan::ObjectKind;
use kruise_api::well_known::rollouts::annotations::ORIGINAL_DEPLOYMENT_STRATEGY as ORIGINAL_STRATEGY_ANNOTATION;

/// A workload reference a Rollout cannot release.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum WorkloadError {
    /// A kind upstream releases and this version does not yet.
    #[error("{0} is not supported by this version of kruise-rs yet")]
    NotYetSupported(String),
    /// A kind no Rollout can release.
    #[error("WorkloadRef kind is not supported")]
    Unknown,
}

/// The kinds a Rollout releases here.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ReleasedKind {
    /// apps.kruise.io CloneSet.
    CloneSet,
    /// apps.kruise.io StatefulSet (Advanced StatefulSet).
    AdvancedStatefulSet,
    /// apps/v1 StatefulSet.
    StatefulSet,
    /// apps.kruise.io DaemonSet (Advanced DaemonSet): one pod per node, partitioned by node.
    AdvancedDaemonSet,
    /// apps/v1 Deployment: released by partition (its ReplicaSets moved here) or by an extra
    /// canary Deployment (see [`super::deployment`]).
    Deployment,
    /// apps/v1 DaemonSet: run `OnDelete` while released, its old pods deleted batch by batch
    /// (see [`super::daemonset`]; upstream's main branch).
    DaemonSet,
}

/// How a BatchRelease moves its workload.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ReleaseStyle {
    /// The workload's own pods are updated batch by batch.
    Partition,
    /// An extra Deployment of the new template runs the new pods (Deployments only).
    Canary,
    /// The new pods come up beside the old ones (surge, never available so that none of
    /// the old ones goes), and the old ones go only at the end (Deployments and CloneSets).
    BlueGreen,
}

/// The `minReadySeconds` a blue-green release gives the workload, so that its new pods never
/// count as available (upstream's `MaxReadySeconds`).
pub const BLUE_GREEN_MIN_READY_SECONDS: i32 = i32::MAX - 1;

/// The workload's own settings a blue-green release replaces, kept in
/// `rollouts.kruise.io/original-deployment-strategy` (upstream's JSON).
#[derive(Clone, Debug, Default, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct OriginalStrategy {
    /// `maxUnavailable`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_unavailable: Option<IntOrString>,
    /// `maxSurge`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_surge: Option<IntOrString>,
    /// `minReadySeconds`.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub min_ready_seconds: i32,
    /// `progressDeadlineSeconds`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub progress_deadline_seconds: Option<i32>,
}

fn is_zero(n: &i32) -> bool {
    *n == 0
}

impl ReleaseStyle {
    /// The style a release plan asks for on `kind`: `rollingStyle`, else the deprecated
    /// `enableExtraWorkloadForCanary`; only a Deployment has a canary style.
    pub fn of(plan: &kruise_api::rollouts::v1beta1::ReleasePlan, kind: ReleasedKind) -> Self {
        use kruise_api::rollouts::v1beta1::RollingStyleType;
        if plan.rolling_style == Some(RollingStyleType::BlueGreen)
            && matches!(kind, ReleasedKind::CloneSet | ReleasedKind::Deployment)
        {
            return Self::BlueGreen;
        }
        let canary = match &plan.rolling_style {
            Some(RollingStyleType::Canary) => true,
            Some(_) => false,
            None => plan.enable_extra_workload_for_canary,
        };
        if canary && kind == ReleasedKind::Deployment { Self::Canary } else { Self::Partition }
    }
}

impl ReleasedKind {
    /// The kind a `workloadRef` names, matched by API group and kind as upstream does (the
    /// version is not read).
    pub fn from_ref(api_version: &str, kind: &str) -> Result<Self, WorkloadError> {
        let group = api_version.rsplit_once('/').map_or("", |(group, _)| group);
        match (group, kind) {
            ("apps.kruise.io", "CloneSet") => Ok(Self::CloneSet),
            ("apps.kruise.io", "StatefulSet") => Ok(Self::AdvancedStatefulSet),
            ("apps", "StatefulSet") => Ok(Self::StatefulSet),
            ("apps.kruise.io", "DaemonSet") => Ok(Self::AdvancedDaemonSet),
            ("apps", "Deployment") => Ok(Self::Deployment),
            ("apps", "DaemonSet") => Ok(Self::DaemonSet),
            _ => Err(WorkloadError::Unknown),
        }
    }

    /// Where its API lives (the stored version).
    pub fn object_kind(self) -> ObjectKind {
        match self {
            Self::CloneSet => ObjectKind::CLONE_SET,
            Self::AdvancedStatefulSet => ObjectKind::ADVANCED_STATEFUL_SET,
            Self::StatefulSet => ObjectKind::STATEFUL_SET,
            Self::AdvancedDaemonSet => ObjectKind::ADVANCED_DAEMON_SET,
            Self::Deployment => ObjectKind::DEPLOYMENT,
            Self::DaemonSet => ObjectKind::DAEMON_SET,
        }
    }

    /// The value of `rollouts.kruise.io/workload-type` upstream gives it.
    pub fn workload_type(self) -> &'static str {
        match self {
            Self::CloneSet => "cloneset",
            Self::AdvancedStatefulSet | Self::StatefulSet => "statefulset",
            Self::AdvancedDaemonSet | Self::DaemonSet => "daemonset",
            Self::Deployment => "deployment",
        }
    }
}

/// A Deployment's stable ReplicaSet, as a blue-green release reads it.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct StableReplicaSet {
    /// Its name.
    pub name: String,
    /// Its `spec.minReadySeconds`.
    pub min_ready_seconds: i32,
}

/// A workload as a release reads it.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ReleasedWorkload {
    /// Its kind (`None` only in a default value).
    pub kind: Option<ReleasedKind>,
    /// Name.
    pub name: String,
    /// UID.
    pub uid: String,
    /// `metadata.generation`.
    pub generation: i64,
    /// `status.observedGeneration`.
    pub observed_generation: i64,
    /// Labels.
    pub labels: BTreeMap<String, String>,
    /// Annotations.
    pub annotations: BTreeMap<String, String>,
    /// `spec.replicas` (1 when unset).
    pub replicas: i32,
    /// `status.replicas`.
    pub status_replicas: i32,
    /// `status.updatedReplicas`.
    pub updated_replicas: i32,
    /// `status.updatedReadyReplicas`; `None` where the kind has none: then the ready pods on
    /// the update revision are counted.
    pub updated_ready_replicas: Option<i32>,
    /// `status.currentRevision` (the revision's name).
    pub current_revision: String,
    /// `status.updateRevision` (the revision's name).
    pub update_revision: String,
    /// The update partition as set.
    pub partition: Option<IntOrString>,
    /// The update is paused.
    pub paused: bool,
    /// `metadata.deletionTimestamp` is set.
    pub deleting: bool,
    /// The value of [`Self::revision_label_key`] on the new pods, where it differs from the
    /// canary revision (a Deployment's new ReplicaSet, or its canary Deployment's); empty:
    /// the canary revision.
    pub new_pods_revision: String,
    /// A Deployment: `status.availableReplicas`.
    pub available_replicas: i32,
    /// A Deployment: its `maxSurge` and `maxUnavailable`, from a partition-style release's
    /// strategy annotation where it has one, else from its spec.
    pub rolling_update: Option<super::deployment::RollingUpdate>,
    /// A Deployment's `spec`, which a canary Deployment copies.
    pub spec: Option<std::sync::Arc<Value>>,
    /// `spec.minReadySeconds`.
    pub min_ready_seconds: i32,
    /// A Deployment's `spec.progressDeadlineSeconds`.
    pub progress_deadline_seconds: Option<i32>,
    /// A Deployment's stable ReplicaSet (the oldest with pods that is not the new one).
    pub stable_replica_set: Option<StableReplicaSet>,
}

fn meta_strings(meta: &ObjectMeta) -> (BTreeMap<String, String>, BTreeMap<String, String>) {
    (meta.labels.clone().unwrap_or_default(), meta.annotations.clone().unwrap_or_default())
}

impl ReleasedWorkload {
    /// A CloneSet.
    pub fn from_clone_set(cs: &CloneSet) -> Self {
        let (labels, annotations) = meta_strings(&cs.metadata);
        let status = cs.status.clone().unwrap_or_default();
        let rolling = cs.spec.update_strategy.rolling_update.clone().unwrap_or_default();
        Self {
            kind: Some(ReleasedKind::CloneSet),
            name: cs.metadata.name.clone().unwrap_or_default(),
            uid: cs.metadata.uid.clone().unwrap_or_default(),
            generation: cs.metadata.generation.unwrap_or_default(),
            observed_generation: status.observed_generation,
            labels,
            annotations,
            replicas: cs.spec.replicas.unwrap_or(1),
            status_replicas: status.replicas,
            updated_replicas: status.updated_replicas,
            updated_ready_replicas: Some(status.updated_ready_replicas),
            current_revision: status.current_revision,
            update_revision: status.update_revision,
            partition: rolling.partition,
            paused: rolling.paused,
            deleting: cs.metadata.deletion_timestamp.is_some(),
            rolling_update: Some(super::deployment::RollingUpdate {
                max_unavailable: rolling.max_unavailable.clone(),
                max_surge: rolling.max_surge.clone(),
            }),
            min_ready_seconds: cs.spec.min_ready_seconds,
            available_replicas: status.available_replicas,
            ..Default::default()
        }
    }

    /// An Advanced StatefulSet.
    pub fn from_advanced_stateful_set(sts: &StatefulSet) -> Self {
        let (labels, annotations) = meta_strings(&sts.metadata);
        let status = sts.status.clone().unwrap_or_default();
        let rolling = sts.spec.update_strategy.rolling_update.clone().unwrap_or_default();
        Self {
            kind: Some(ReleasedKind::AdvancedStatefulSet),
            name: sts.metadata.name.clone().unwrap_or_default(),
            uid: sts.metadata.uid.clone().unwrap_or_default(),
            generation: sts.metadata.generation.unwrap_or_default(),
            observed_generation: status.observed_generation,
            labels,
            annotations,
            replicas: sts.spec.replicas.unwrap_or(1),
            status_replicas: status.replicas,
            updated_replicas: status.updated_replicas,
            updated_ready_replicas: Some(status.updated_ready_replicas),
            current_revision: status.current_revision,
            update_revision: status.update_revision,
            partition: rolling.partition.map(IntOrString::Int),
            paused: rolling.paused,
            deleting: sts.metadata.deletion_timestamp.is_some(),
            ..Default::default()
        }
    }

    /// A native StatefulSet (its pods' readiness is counted: its status has no updated-ready
    /// count).
    pub fn from_stateful_set(sts: &k8s_openapi::api::apps::v1::StatefulSet) -> Self {
        let (labels, annotations) = meta_strings(&sts.metadata);
        let spec = sts.spec.clone();
        let status = sts.status.clone().unwrap_or_default();
        let partition = spec
            .update_strategy
            .and_then(|s| s.rolling_update)
            .and_then(|r| r.partition)
            .map(IntOrString::Int);
        Self {
            kind: Some(ReleasedKind::StatefulSet),
            name: sts.metadata.name.clone().unwrap_or_default(),
            uid: sts.metadata.uid.clone().unwrap_or_default(),
            generation: sts.metadata.generation.unwrap_or_default(),
            observed_generation: status.observed_generation.unwrap_or_default(),
            labels,
            annotations,
            replicas: spec.replicas.unwrap_or(1),
            status_replicas: status.replicas,
            updated_replicas: status.updated_replicas.unwrap_or_default(),
            updated_ready_replicas: None,
            current_revision: status.current_revision.unwrap_or_default(),
            update_revision: status.update_revision.unwrap_or_default(),
            partition,
            paused: false,
            deleting: sts.metadata.deletion_timestamp.is_some(),
            ..Default::default()
        }
    }

    /// An Advanced DaemonSet: its replicas are the nodes it should run on
    /// (`desiredNumberScheduled`). It has no current revision in its status: the revision most
    /// of `pod_revisions` (its pods' `controller-revision-hash`) carry stands for it, the update
    /// revision on a tie.
    pub fn from_daemon_set<'a>(
        ds: &DaemonSet,
        pod_revisions: impl IntoIterator<Item = &'a str>,
    ) -> Self {
        let (labels, annotations) = meta_strings(&ds.metadata);
        let status = ds.status.clone().unwrap_or_default();
        let rolling = ds.spec.update_strategy.rolling_update.clone().unwrap_or_default();
        let mut counts: BTreeMap<&str, usize> = BTreeMap::new();
        for revision in pod_revisions {
            *counts.entry(revision).or_default() += 1;
        }
        let update = status.update_revision.clone();
        let most = counts.values().copied().max().unwrap_or(0);
        let current = if counts.get(update.as_str()).copied().unwrap_or(0) == most {
            update.clone()
        } else {
            counts
                .iter()
                .find(|(_, n)| **n == most)
                .map(|(r, _)| (*r).to_owned())
                .unwrap_or_default()
        };
        Self {
            kind: Some(ReleasedKind::AdvancedDaemonSet),
            name: ds.metadata.name.clone().unwrap_or_default(),
            uid: ds.metadata.uid.clone().unwrap_or_default(),
            generation: ds.metadata.generation.unwrap_or_default(),
            observed_generation: status.observed_generation,
            labels,
            annotations,
            replicas: status.desired_number_scheduled,
            status_replicas: status.current_number_scheduled,
            updated_replicas: status.updated_number_scheduled,
            updated_ready_replicas: None,
            current_revision: current,
            update_revision: update,
            partition: rolling.partition,
            paused: rolling.paused.unwrap_or(false),
            deleting: ds.metadata.deletion_timestamp.is_some(),
            ..Default::default()
        }
    }

    /// A Deployment and the ReplicaSets it controls. Its stable revision is the
    /// `pod-template-hash` of the stable ReplicaSet
    /// ([`super::deployment::stable_replica_set`]); its canary revision is
    /// [`super::deployment::template_hash`] of its template, unless that template is the stable
    /// ReplicaSet's (no release, or a rollback): then the stable revision.
    /// `canary_pods_revision` is the `pod-template-hash` of the canary Deployment's new
    /// ReplicaSet, in a canary-style release.
    pub fn from_deployment(
        deployment: &k8s_openapi::api::apps::v1::Deployment,
        replica_sets: &[k8s_openapi::api::apps::v1::ReplicaSet],
        canary_pods_revision: Option<&str>,
    ) -> Self {
        use super::deployment as d;
        let (labels, annotations) = meta_strings(&deployment.metadata);
        let spec = deployment.spec.clone();
        let status = deployment.status.clone().unwrap_or_default();
        let template_hash = d::template_hash(Some(&spec.template));
        let stable = d::stable_replica_set(deployment, replica_sets);
        let new = d::new_replica_set(deployment, replica_sets);
        let current =
            stable.and_then(d::replica_set_hash).map_or(template_hash.clone(), str::to_owned);
        let template_is_stable =
            stable.is_some() && new.map(|rs| &rs.metadata.uid) == stable.map(|rs| &rs.metadata.uid);
        let update = if template_is_stable { current.clone() } else { template_hash };
        let new_pods = canary_pods_revision
            .map(str::to_owned)
            .or_else(|| new.and_then(d::replica_set_hash).map(str::to_owned))
            .unwrap_or_default();
        let strategy = d::strategy_of(&annotations);
        let rolling_update = strategy
            .as_ref()
            .and_then(|s| s.rolling_update.clone())
            .or_else(|| {
                let rolling = spec.strategy.as_ref()?.rolling_update.as_ref()?;
                Some(d::RollingUpdate {
                    max_unavailable: rolling.max_unavailable.clone(),
                    max_surge: rolling.max_surge.clone(),
                })
            })
            .map(d::RollingUpdate::defaulted);
        Self {
            kind: Some(ReleasedKind::Deployment),
            name: deployment.metadata.name.clone().unwrap_or_default(),
            uid: deployment.metadata.uid.clone().unwrap_or_default(),
            generation: deployment.metadata.generation.unwrap_or_default(),
            observed_generation: status.observed_generation.unwrap_or_default(),
            labels,
            annotations,
            replicas: spec.replicas.unwrap_or(1),
            status_replicas: status.replicas.unwrap_or_default(),
            updated_replicas: status.updated_replicas.unwrap_or_default(),
            updated_ready_replicas: None,
            current_revision: current,
            update_revision: update,
            partition: strategy.map(|s| s.partition),
            paused: spec.paused.unwrap_or(false),
            deleting: deployment.metadata.deletion_timestamp.is_some(),
            new_pods_revision: new_pods,
            available_replicas: status.available_replicas.unwrap_or_default(),
            rolling_update,
            spec: serde_json::to_value(&spec).ok().map(std::sync::Arc::new),
            min_ready_seconds: spec.min_ready_seconds.unwrap_or(0),
            progress_deadline_seconds: spec.progress_deadline_seconds,
            stable_replica_set: stable.map(|rs| StableReplicaSet {
                name: rs.metadata.name.clone().unwrap_or_default(),
                min_ready_seconds: rs.spec.min_ready_seconds.unwrap_or(0),
            }),
        }
    }

    /// A native DaemonSet and the ControllerRevisions it controls, as upstream's main branch
    /// reads them: the newest revision is the canary one, the one before it the stable one
    /// (the newest when it is the only one). Its replicas are its `desiredNumberScheduled`
    /// nodes; `paused` says that it runs `OnDelete` (which holds its pods); its partition is
    /// the one `rollouts.kruise.io/daemonset-advanced-control` carries.
    pub fn from_native_daemon_set(
        ds: &k8s_openapi::api::apps::v1::DaemonSet,
        revisions: &[k8s_openapi::api::apps::v1::ControllerRevision],
    ) -> Self {
        let (labels, annotations) = meta_strings(&ds.metadata);
        let status = ds.status.clone().unwrap_or_default();
        let mut sorted: Vec<&k8s_openapi::api::apps::v1::ControllerRevision> =
            revisions.iter().collect();
        sorted.sort_by_key(|r| std::cmp::Reverse(r.revision));
        let hash = |r: &k8s_openapi::api::apps::v1::ControllerRevision| {
            r.metadata
                .labels
                .as_ref()
                .and_then(|l| l.get("controller-revision-hash"))
                .cloned()
                .unwrap_or_else(|| r.metadata.name.clone().unwrap_or_default())
        };
        let update = sorted.first().map(|r| hash(r)).unwrap_or_default();
        let current = sorted.get(1).map(|r| hash(r)).unwrap_or_else(|| update.clone());
        let partition = super::daemonset::control_of(&annotations).and_then(|c| {
            c.partition
                .parse::<i32>()
                .ok()
                .map(IntOrString::Int)
                .or(Some(IntOrString::String(c.partition)))
        });
        let strategy = ds.spec.update_strategy.clone().unwrap_or_default();
        let rolling = strategy.rolling_update.clone().unwrap_or_default();
        Self {
            kind: Some(ReleasedKind::DaemonSet),
            name: ds.metadata.name.clone().unwrap_or_default(),
            uid: ds.metadata.uid.clone().unwrap_or_default(),
            generation: ds.metadata.generation.unwrap_or_default(),
            observed_generation: status.observed_generation.unwrap_or_default(),
            labels,
            annotations,
            replicas: status.desired_number_scheduled,
            status_replicas: status.current_number_scheduled,
            updated_replicas: status.updated_number_scheduled.unwrap_or_default(),
            updated_ready_replicas: None,
            current_revision: current,
            update_revision: update,
            partition,
            paused: strategy.type_.as_deref() == Some("OnDelete"),
            deleting: ds.metadata.deletion_timestamp.is_some(),
            rolling_update: Some(super::deployment::RollingUpdate {
                max_unavailable: rolling.max_unavailable,
                max_surge: rolling.max_surge,
            }),
            ..Default::default()
        }
    }

    /// Its kind; CloneSet for a default value.
    pub fn kind(&self) -> ReleasedKind {
        self.kind.unwrap_or(ReleasedKind::CloneSet)
    }

    /// The workload's controller has seen its latest spec.
    pub fn status_consistent(&self) -> bool {
        self.generation == self.observed_generation
    }

    /// The revision being replaced, as the Rollout records it (a CloneSet's: the hash part of
    /// the revision name).
    pub fn stable_revision(&self) -> &str {
        self.revision_value(&self.current_revision)
    }

    /// The new revision, as the Rollout records it.
    pub fn canary_revision(&self) -> &str {
        self.revision_value(&self.update_revision)
    }

    fn revision_value<'a>(&self, revision: &'a str) -> &'a str {
        match self.kind() {
            ReleasedKind::CloneSet => revision.rsplit_once('-').map_or(revision, |(_, h)| h),
            ReleasedKind::AdvancedStatefulSet
            | ReleasedKind::StatefulSet
            | ReleasedKind::AdvancedDaemonSet
            | ReleasedKind::DaemonSet
            | ReleasedKind::Deployment => revision,
        }
    }

    /// The value of [`Self::revision_label_key`] the new pods carry (what a canary Service
    /// selects).
    pub fn new_pods_revision(&self) -> &str {
        if self.new_pods_revision.is_empty() {
            self.canary_revision()
        } else {
            &self.new_pods_revision
        }
    }

    /// The pod label whose value tells the revisions apart (what a canary Service selects).
    pub fn revision_label_key(&self) -> &'static str {
        match self.kind() {
            ReleasedKind::CloneSet | ReleasedKind::Deployment => "pod-template-hash",
            ReleasedKind::AdvancedStatefulSet
            | ReleasedKind::StatefulSet
            | ReleasedKind::AdvancedDaemonSet
            | ReleasedKind::DaemonSet => "controller-revision-hash",
        }
    }

    /// Whether a pod with these labels runs the update revision.
    pub fn pod_is_updated(&self, labels: &BTreeMap<String, String>) -> bool {
        if self.kind() == ReleasedKind::Deployment {
            let new = self.new_pods_revision();
            return !new.is_empty()
                && labels.get(super::deployment::POD_TEMPLATE_HASH).is_some_and(|h| h == new);
        }
        !self.update_revision.is_empty()
            && labels
                .get("controller-revision-hash")
                .is_some_and(|r| r == &self.update_revision || r == self.canary_revision())
    }

    /// The workload carries `rollouts.kruise.io/in-progressing`.
    pub fn in_progressing(&self) -> bool {
        self.annotations.contains_key(IN_PROGRESSING_ANNOTATION)
    }

    /// In a release, the template went back to the stable revision (upstream's test: the
    /// update revision is the current one while some pods are still on another).
    pub fn in_rollback(&self) -> bool {
        self.in_progressing()
            && self.current_revision == self.update_revision
            && self.updated_replicas != self.status_replicas
    }

    /// The release id: the workload's `rollouts.kruise.io/rollout-id` label, else the canary
    /// revision (prefixed `rollback-` in a rollback).
    pub fn rollout_id(&self) -> String {
        match self.labels.get(ROLLOUT_ID_LABEL) {
            Some(id) if !id.is_empty() => id.clone(),
            _ if self.in_rollback() => format!("rollback-{}", self.canary_revision()),
            _ => self.canary_revision().to_owned(),
        }
    }

    /// The BatchRelease that controls it, from `control-info` (its UID).
    pub fn controller_uid(&self) -> Option<String> {
        let info = self.annotations.get(CONTROL_INFO_ANNOTATION)?;
        let owner: Value = serde_json::from_str(info).ok()?;
        owner.get("uid").and_then(Value::as_str).map(str::to_owned)
    }

    /// The current partition as a number of pods kept on the old revision.
    pub fn partition_replicas(&self) -> i32 {
        self.partition
            .as_ref()
            .map(|p| scaled_value(p, self.replicas, Rounding::Up).unwrap_or(0))
            .unwrap_or(0)
    }

    /// The action that merge-patches the workload (in `namespace`) with `body`.
    pub fn patch(&self, namespace: &str, body: Value) -> crate::plan::Action {
        crate::plan::Action::PatchObject {
            target: crate::plan::Target::new(
                self.kind().object_kind(),
                Some(namespace),
                &self.name,
            ),
            subresource: crate::plan::Subresource::Main,
            patch: crate::plan::Patch::merge(body),
        }
    }

    fn rolling_path(&self, fields: Value) -> Value {
        json!({"spec": {"updateStrategy": {"rollingUpdate": fields}}})
    }

    /// Whether the workload is held the way `style` takes control of it (what
    /// [`Self::take_control_patch`] writes besides `control-info`).
    pub fn is_held(&self, style: ReleaseStyle) -> bool {
        match (self.kind(), style) {
            (_, ReleaseStyle::BlueGreen) => {
                self.min_ready_seconds == BLUE_GREEN_MIN_READY_SECONDS
                    && self.annotations.contains_key(ORIGINAL_STRATEGY_ANNOTATION)
            }
            (ReleasedKind::Deployment, ReleaseStyle::Canary) => self.paused,
            (ReleasedKind::DaemonSet, _) => self.paused,
            (ReleasedKind::Deployment, ReleaseStyle::Partition) => {
                self.paused
                    && self.partition.is_some()
                    && self.labels.get(super::deployment::CONTROL_LABEL).map(String::as_str)
                        == Some("true")
            }
            _ => true,
        }
    }

    /// The strategy annotation of a partition-style Deployment release with `partition`.
    fn deployment_strategy(&self, partition: IntOrString) -> String {
        let strategy = super::deployment::DeploymentStrategy {
            rolling_style: "Partition".into(),
            rolling_update: Some(self.rolling_update.clone().unwrap_or_default().defaulted()),
            paused: false,
            partition,
        };
        serde_json::to_string(&strategy).unwrap_or_default()
    }

    /// Take control: `control-info`, the update unpaused and every pod held. A Deployment is
    /// paused instead; by partition, its strategy also becomes `Recreate` (so that
    /// kube-controller-manager leaves its ReplicaSets alone), its `rollingUpdate` kept in
    /// `rollouts.kruise.io/deployment-strategy` with a partition of 0, and it is labelled for
    /// [`super::deployment::plan`].
    pub fn take_control_patch(&self, control_info: &str, style: ReleaseStyle) -> Value {
        if style == ReleaseStyle::BlueGreen || self.kind() == ReleasedKind::Deployment {
            return match style {
                ReleaseStyle::BlueGreen => self.blue_green_control_patch(control_info),
                ReleaseStyle::Canary => json!({
                    "metadata": {"annotations": {CONTROL_INFO_ANNOTATION: control_info}},
                    "spec": {"paused": true},
                }),
                ReleaseStyle::Partition => {
                    let partition = self.partition.clone().unwrap_or(IntOrString::Int(0));
                    json!({
                        "metadata": {
                            "labels": {super::deployment::CONTROL_LABEL: "true"},
                            "annotations": {
                                CONTROL_INFO_ANNOTATION: control_info,
                                super::deployment::STRATEGY_ANNOTATION:
                                    self.deployment_strategy(partition),
                            },
                        },
                        "spec": {"paused": true, "strategy": {"type": "Recreate", "rollingUpdate": null}},
                    })
                }
            };
        }
        let mut patch = match self.kind() {
            ReleasedKind::CloneSet => {
                self.rolling_path(json!({"paused": false, "partition": "100%"}))
            }
            ReleasedKind::AdvancedStatefulSet => {
                self.rolling_path(json!({"paused": false, "partition": HOLD_ALL_ORDINALS}))
            }
            // A native StatefulSet has no pause.
            ReleasedKind::StatefulSet => self.rolling_path(json!({"partition": HOLD_ALL_ORDINALS})),
            // Every node held: the partition counts the nodes left on the old revision.
            ReleasedKind::AdvancedDaemonSet => {
                self.rolling_path(json!({"paused": false, "partition": self.replicas}))
            }
            ReleasedKind::Deployment => json!({}),
            ReleasedKind::DaemonSet => json!({"spec": {"updateStrategy": {"type": "OnDelete"}}}),
        };
        patch["metadata"] = json!({"annotations": {CONTROL_INFO_ANNOTATION: control_info}});
        patch
    }

    /// The settings a blue-green release replaces, as they are now, with upstream's defaults
    /// where unset (a Deployment's 25%/25% and 600 seconds; a CloneSet's 0%/20%).
    pub fn original_strategy(&self) -> OriginalStrategy {
        let rolling = self.rolling_update.clone().unwrap_or_default();
        let (surge, unavailable) = match self.kind() {
            ReleasedKind::Deployment => ("25%", "25%"),
            _ => ("0%", "20%"),
        };
        OriginalStrategy {
            max_unavailable: rolling
                .max_unavailable
                .or_else(|| Some(IntOrString::String(unavailable.into()))),
            max_surge: rolling.max_surge.or_else(|| Some(IntOrString::String(surge.into()))),
            min_ready_seconds: self.min_ready_seconds,
            progress_deadline_seconds: match self.kind() {
                ReleasedKind::Deployment => Some(self.progress_deadline_seconds.unwrap_or(600)),
                _ => None,
            },
        }
    }

    /// Blue-green control: `control-info`, the workload's settings saved, a surge of one
    /// with nothing unavailable, and a `minReadySeconds` no pod reaches (a Deployment also
    /// gets the longest progress deadline). A CloneSet stays held by its partition, a
    /// Deployment by its pause, until the first batch.
    fn blue_green_control_patch(&self, control_info: &str) -> Value {
        let saved =
            self.annotations.get(ORIGINAL_STRATEGY_ANNOTATION).cloned().unwrap_or_else(|| {
                serde_json::to_string(&self.original_strategy()).unwrap_or_default()
            });
        let metadata = json!({"annotations": {
            CONTROL_INFO_ANNOTATION: control_info,
            ORIGINAL_STRATEGY_ANNOTATION: saved,
        }});
        match self.kind() {
            ReleasedKind::Deployment => json!({
                "metadata": metadata,
                "spec": {
                    "minReadySeconds": BLUE_GREEN_MIN_READY_SECONDS,
                    "progressDeadlineSeconds": i32::MAX,
                    "strategy": {"type": "RollingUpdate", "rollingUpdate": {"maxSurge": 1, "maxUnavailable": 0}},
                },
            }),
            _ => json!({
                "metadata": metadata,
                "spec": {
                    "minReadySeconds": BLUE_GREEN_MIN_READY_SECONDS,
                    "updateStrategy": {"rollingUpdate": {"paused": false, "maxSurge": 1, "maxUnavailable": 0}},
                },
            }),
        }
    }

    /// Whether a blue-green batch of `planned` new pods still has to be let out: the
    /// workload is still held (partition or pause), or its surge is below it.
    pub fn blue_green_batch_needed(&self, planned: i32) -> bool {
        let held = match self.kind() {
            ReleasedKind::Deployment => self.paused,
            _ => self.partition.is_some(),
        };
        let surge = self
            .rolling_update
            .as_ref()
            .and_then(|r| r.max_surge.as_ref())
            .map_or(0, |s| scaled_value(s, self.replicas, Rounding::Up).unwrap_or(0));
        held || surge < planned
    }

    /// The blue-green batch: a surge of `batch` new pods, nothing unavailable, not held.
    pub fn blue_green_batch_patch(&self, batch: &IntOrString) -> Value {
        match self.kind() {
            ReleasedKind::Deployment => json!({"spec": {
                "paused": false,
                "strategy": {"rollingUpdate": {"maxSurge": batch, "maxUnavailable": 0}},
            }}),
            _ => self.rolling_path(
                json!({"maxSurge": batch, "maxUnavailable": 0, "partition": null, "paused": false}),
            ),
        }
    }

    /// Set the partition: for a Deployment (by partition), how many pods run the new
    /// template, in its strategy annotation; for the others, how many keep the old one.
    pub fn partition_patch(&self, partition: &IntOrString) -> Value {
        if self.kind() == ReleasedKind::Deployment {
            return json!({"metadata": {"annotations": {
                super::deployment::STRATEGY_ANNOTATION: self.deployment_strategy(partition.clone()),
            }}});
        }
        if self.kind() == ReleasedKind::DaemonSet {
            let control = super::daemonset::Control {
                partition: match partition {
                    IntOrString::Int(n) => n.to_string(),
                    IntOrString::String(s) => s.clone(),
                },
                batch_revision: self.update_revision.clone(),
            };
            return json!({"metadata": {"annotations": {
                super::daemonset::CONTROL_ANNOTATION:
                    serde_json::to_string(&control).unwrap_or_default(),
            }}});
        }
        self.rolling_path(json!({"partition": partition}))
    }

    /// Give control back: `control-info` removed and, when `release_all`, the partition
    /// cleared so that every pod updates.
    pub fn release_control_patch(&self, release_all: bool, style: ReleaseStyle) -> Value {
        use super::deployment::{
            CONTROL_LABEL, EXTRA_STATUS_ANNOTATION, STABLE_REVISION_LABEL, STRATEGY_ANNOTATION,
        };
        if style == ReleaseStyle::BlueGreen || self.kind() == ReleasedKind::Deployment {
            let mut patch = json!({
                "metadata": {
                    "annotations": {CONTROL_INFO_ANNOTATION: null},
                    "labels": {STABLE_REVISION_LABEL: null},
                },
            });
            match style {
                ReleaseStyle::BlueGreen => return self.blue_green_release_patch(),
                ReleaseStyle::Canary => patch["spec"] = json!({"paused": !release_all}),
                ReleaseStyle::Partition if release_all => {
                    let rolling = self.rolling_update.clone().unwrap_or_default().defaulted();
                    patch["spec"] = json!({
                        "paused": false,
                        "strategy": {"type": "RollingUpdate", "rollingUpdate": rolling},
                    });
                    patch["metadata"]["labels"][CONTROL_LABEL] = Value::Null;
                    patch["metadata"]["annotations"][STRATEGY_ANNOTATION] = Value::Null;
                    patch["metadata"]["annotations"][EXTRA_STATUS_ANNOTATION] = Value::Null;
                }
                ReleaseStyle::Partition => {}
            }
            return patch;
        }
        if self.kind() == ReleasedKind::DaemonSet {
            let mut patch = json!({"metadata": {"annotations": {
                CONTROL_INFO_ANNOTATION: null,
                super::daemonset::CONTROL_ANNOTATION: null,
            }}});
            if release_all {
                let original = self
                    .annotations
                    .get(super::daemonset::ORIGINAL_STRATEGY_ANNOTATION)
                    .filter(|t| !t.is_empty() && *t != "OnDelete")
                    .cloned()
                    .unwrap_or_else(|| "RollingUpdate".to_owned());
                patch["spec"] = json!({"updateStrategy": {"type": original}});
                patch["metadata"]["annotations"][super::daemonset::ORIGINAL_STRATEGY_ANNOTATION] =
                    Value::Null;
            }
            return patch;
        }
        let mut patch = if release_all {
            match self.kind() {
                ReleasedKind::StatefulSet => self.rolling_path(json!({"partition": null})),
                _ => self.rolling_path(json!({"paused": false, "partition": null})),
            }
        } else {
            json!({})
        };
        patch["metadata"] = json!({"annotations": {CONTROL_INFO_ANNOTATION: null}});
        patch
    }
}

impl ReleasedWorkload {
    /// Blue-green release: the saved settings back, unpaused and unpartitioned, the saved
    /// settings and `control-info` removed; the old pods then go as the workload's own update
    /// would take them.
    fn blue_green_release_patch(&self) -> Value {
        let saved: OriginalStrategy = self
            .annotations
            .get(ORIGINAL_STRATEGY_ANNOTATION)
            .and_then(|s| serde_json::from_str(s).ok())
            .unwrap_or_else(|| self.original_strategy());
        let metadata = json!({
            "annotations": {CONTROL_INFO_ANNOTATION: null, ORIGINAL_STRATEGY_ANNOTATION: null},
            "labels": {super::deployment::STABLE_REVISION_LABEL: null},
        });
        match self.kind() {
            ReleasedKind::Deployment => json!({
                "metadata": metadata,
                "spec": {
                    "paused": false,
                    "minReadySeconds": saved.min_ready_seconds,
                    "progressDeadlineSeconds": saved.progress_deadline_seconds.unwrap_or(600),
                    "strategy": {"type": "RollingUpdate", "rollingUpdate": {
                        "maxSurge": saved.max_surge,
                        "maxUnavailable": saved.max_unavailable,
                    }},
                },
            }),
            _ => json!({
                "metadata": metadata,
                "spec": {
                    "minReadySeconds": saved.min_ready_seconds,
                    "updateStrategy": {"rollingUpdate": {
                        "paused": false,
                        "partition": null,
                        "maxSurge": saved.max_surge,
                        "maxUnavailable": saved.max_unavailable,
                    }},
                },
            }),
        }
    }
}

/// The desired partition for `desired_stable` pods kept on the old revision out of
/// `replicas`: an int when the batch was given as an int, otherwise a percentage rounded so
/// that, scaled back up, it keeps no more than `desired_stable` (upstream's
/// `ParseIntegerAsPercentageIfPossible`).
pub(super) fn desired_partition(
    kind: ReleasedKind,
    desired_stable: i32,
    replicas: i32,
    batch_is_percent: bool,
    planned_is_all: bool,
) -> IntOrString {
    if kind != ReleasedKind::CloneSet || !batch_is_percent {
        return IntOrString::Int(desired_stable.max(0));
    }
    if desired_stable >= replicas {
        return IntOrString::String("100%".into());
    }
    if desired_stable <= 0 {
        return IntOrString::String("0%".into());
    }
    let percent = i64::from(desired_stable) * 100 / i64::from(replicas.max(1));
    let value = IntOrString::String(format!("{percent}%"));
    if scaled_value(&value, replicas, Rounding::Up).unwrap_or(0) == 0 && !planned_is_all {
        return IntOrString::String("1%".into());
    }
    value
}
