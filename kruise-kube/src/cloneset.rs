//! The CloneSet controller: the shared [`WorkloadController`](crate::workload) with
//! [`kruise_core::cloneset::plan`] as its planner. With `PreDownloadImageForInPlaceUpdate` on,
//! it also reads the ImagePullJobs it controls, and a partitioned or progressive in-place
//! update first gets ImagePullJobs for its changed images (`kruise_core::cloneset`'s
//! pre-download step).

use k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector;
use kruise_api::apps::v1beta1::{CloneSet, CloneSetStatus};
use kruise_core::cloneset::{CloneSetPlan, CloneSetSnapshot, PlannerOptions};
use serde_json::Value;

use crate::controller::{ControllerInfo, ControllerSettings, Registration, ServedResource};
use crate::workload::{WorkloadController, WorkloadInputs, WorkloadKind};

/// The controller's name in metrics, Events and logs (upstream's).
pub const CONTROLLER_NAME: &str = "cloneset-controller";

/// The gate that turns image pre-download for CloneSet in-place updates on.
const PRE_DOWNLOAD_GATE: &str = "PreDownloadImageForInPlaceUpdate";

impl WorkloadKind for CloneSet {
    type Status = CloneSetStatus;

    const INFO: ControllerInfo = ControllerInfo::new(
        CONTROLLER_NAME,
        "cloneset-workers",
        Some(ServedResource { group: "apps.kruise.io", version: "v1beta1", plural: "clonesets" }),
    );

    const ASKS_BUDGETS_BEFORE_UPDATES: bool = true;

    fn reads_image_pull_jobs(settings: &ControllerSettings) -> bool {
        settings.gates.enabled(PRE_DOWNLOAD_GATE)
    }

    /// Only to spread scale-in over the template's topologySpreadConstraints.
    fn reads_node_labels(&self) -> bool {
        let spec = self.spec.template.spec.as_ref();
        spec.and_then(|s| s.topology_spread_constraints.as_ref()).is_some_and(|c| !c.is_empty())
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
    ) -> CloneSetPlan {
        let mut snapshot = CloneSetSnapshot::new(self.clone());
        snapshot.pods = inputs.pods;
        snapshot.pvcs = inputs.pvcs;
        snapshot.revisions = inputs.revisions;
        snapshot.node_labels = inputs.node_labels;
        snapshot.expectations = inputs.expectations;
        snapshot.image_pull_jobs = inputs.image_pull_jobs;
        snapshot.feature_gates = settings.gates.to_cloneset_gates();
        snapshot.options = planner_options(settings);
        kruise_core::cloneset::plan(&snapshot, now)
    }
}

/// The planner options the flags set.
fn planner_options(settings: &ControllerSettings) -> PlannerOptions {
    let mut options = PlannerOptions::default();
    options.expectation_timeout = settings.expectation_timeout;
    options.scaling_exclude_preparing_delete = settings.scaling_exclude_preparing_delete;
    options
}

/// The CloneSet controller's registration.
pub fn registration() -> Registration {
    Registration { info: CloneSet::INFO, build: WorkloadController::<CloneSet>::build }
}
