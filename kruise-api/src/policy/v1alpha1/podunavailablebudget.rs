//! PodUnavailableBudget (policy.kruise.io/v1alpha1). Guarded operations and the total replica
//! override are annotations here rather than spec fields, and there is no ignored-pod
//! selector. The annotation keys are in [`crate::well_known::annotations`].

use std::collections::BTreeMap;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::{LabelSelector, Time};
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;
use kube::CustomResource;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

pub use crate::policy::v1beta1::{PubOperation, TargetReference};

/// The desired state of a PodUnavailableBudget.
#[derive(CustomResource, Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[kube(
    group = "policy.kruise.io",
    version = "v1alpha1",
    kind = "PodUnavailableBudget",
    plural = "podunavailablebudgets",
    singular = "podunavailablebudget",
    namespaced,
    shortname = "pub",
    status = "PodUnavailableBudgetStatus",
    printcolumn = r#"{"name":"Allowed","type":"integer","jsonPath":".status.unavailableAllowed","description":"Disruptions allowed now."}"#,
    printcolumn = r#"{"name":"Current","type":"integer","jsonPath":".status.currentAvailable","description":"Pods available now."}"#,
    printcolumn = r#"{"name":"Desired","type":"integer","jsonPath":".status.desiredAvailable","description":"Pods that must stay available."}"#,
    printcolumn = r#"{"name":"Total","type":"integer","jsonPath":".status.totalReplicas","description":"Pods counted by the budget."}"#,
    storage = false,
    derive = "PartialEq",
    derive = "Default",
    doc = "PodUnavailableBudget bounds how many selected pods may be unavailable at the same time."
)]
#[serde(rename_all = "camelCase")]
pub struct PodUnavailableBudgetSpec {
    /// Labels of the protected pods.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub selector: Option<LabelSelector>,
    /// The workload whose pods are protected; takes precedence over `selector`.
    #[serde(rename = "targetRef", default, skip_serializing_if = "Option::is_none")]
    pub target_reference: Option<TargetReference>,
    /// Most pods (number or percent) that may be unavailable; wins over `minAvailable`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_unavailable: Option<IntOrString>,
    /// Fewest pods (number or percent) that must stay available.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub min_available: Option<IntOrString>,
}

/// The observed state of a PodUnavailableBudget (v1alpha1 always writes `observedGeneration`).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct PodUnavailableBudgetStatus {
    /// The generation this status describes; the rest is valid only when it is current.
    #[serde(default)]
    pub observed_generation: i64,
    /// Pods whose deletion or eviction was admitted but not yet observed, with the admission time.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub disrupted_pods: BTreeMap<String, Time>,
    /// Pods made unavailable by an admitted update, until they are ready again.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub unavailable_pods: BTreeMap<String, Time>,
    /// Further pods that may become unavailable now.
    #[serde(default)]
    pub unavailable_allowed: i32,
    /// Pods available now.
    #[serde(default)]
    pub current_available: i32,
    /// Pods that must stay available.
    #[serde(default)]
    pub desired_available: i32,
    /// Pods counted by the budget.
    #[serde(default)]
    pub total_replicas: i32,
}
