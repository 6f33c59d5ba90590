//! The Advanced DaemonSet controller: the shared [`WorkloadController`](crate::workload) with
//! [`kruise_core::daemonset::plan`] as its planner. It reads every node whole (labels, taints,
//! `unschedulable`), and any node's change looks at every Advanced DaemonSet again.
//!
//! A failed daemon pod is deleted with upstream's per-node back-off (1 s doubling to 15 min,
//! kept in the controller, see [`WorkloadKind::FAILED_POD_BACKOFF`]). With
//! `PreDownloadImageForDaemonSetUpdate` on, a partitioned or progressive update first gets
//! ImagePullJobs for its changed images (`kruise_core::daemonset`'s pre-download step).

use k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector;
use kruise_api::apps::v1beta1::{DaemonSet, DaemonSetStatus};
use kruise_core::daemonset::{DaemonSetSnapshot, FeatureGates, PlannerOptions, SnapshotNode};
use kruise_core::workload::WorkloadPlan;
use serde_json::Value;

use crate::controller::{ControllerInfo, ControllerSettings, Registration, ServedResource};
use crate::workload::{WorkloadController, WorkloadInputs, WorkloadKind};

/// The gate that turns image pre-download for Advanced DaemonSet updates on.
const PRE_DOWNLOAD_GATE: &str = "PreDownloadImageForDaemonSetUpdate";

/// The controller's name in metrics, Events and logs (upstream's).
pub const CONTROLLER_NAME: &str = "daemonset-controller";

impl WorkloadKind for DaemonSet {
    type Status = DaemonSetStatus;

    const INFO: ControllerInfo = ControllerInfo::new(
        CONTROLLER_NAME,
        "daemonset-workers",
        Some(ServedResource { group: "apps.kruise.io", version: "v1beta1", plural: "daemonsets" }),
    );

    const READS_NODES: bool = true;

    const FAILED_POD_BACKOFF: bool = true;

    fn reads_image_pull_jobs(settings: &ControllerSettings) -> bool {
        settings.gates.enabled(PRE_DOWNLOAD_GATE)
    }

    fn selector(&self) -> Option<&LabelSelector> {
        self.spec.selector.as_ref()
    }

    fn status_json(&self) -> Value {
        serde_json::to_value(&self.status).unwrap_or(Value::Null)
    }

    fn plan(
        &self,
        inputs: WorkloadInputs,
        settings: &ControllerSettings,
        now: jiff::Timestamp,
    ) -> WorkloadPlan<DaemonSetStatus> {
        let mut snapshot = DaemonSetSnapshot::new(self.clone());
        snapshot.nodes = inputs.nodes.into_iter().map(SnapshotNode::new).collect();
        snapshot.pods = inputs.pods;
        snapshot.revisions = inputs.revisions;
        snapshot.expectations = inputs.expectations;
        snapshot.failed_pod_backoff = inputs.failed_pod_backoff;
        snapshot.image_pull_jobs = inputs.image_pull_jobs;
        let mut gates = FeatureGates::default();
        gates.daemon_set_prune_ineligible_nodes =
            settings.gates.enabled("DaemonSetPruneIneligibleNodes");
        gates.in_place_workload_vertical_scaling =
            settings.gates.enabled("InPlaceWorkloadVerticalScaling");
        gates.in_place_update_env_from_metadata =
            settings.gates.enabled("InPlaceUpdateEnvFromMetadata");
        gates.pre_download_image_for_daemon_set_update = settings.gates.enabled(PRE_DOWNLOAD_GATE);
        gates.pod_webhook = settings.gates.enabled("PodWebhook");
        snapshot.feature_gates = gates;
        let mut options = PlannerOptions::default();
        options.expectation_timeout = settings.expectation_timeout;
        options.assign_by_scheduler = settings.assign_pods_by_scheduler;
        snapshot.options = options;
        kruise_core::daemonset::plan(&snapshot, now)
    }
}

/// The Advanced DaemonSet controller's registration.
pub fn registration() -> Registration {
    Registration { info: DaemonSet::INFO, build: WorkloadController::<DaemonSet>::build }
}
