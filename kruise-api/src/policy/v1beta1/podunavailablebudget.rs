//! PodUnavailableBudget (policy.kruise.io/v1beta1): limits how many of a set of pods may be
//! unavailable at once, guarding deletion, eviction and in-place updates (a stronger
//! PodDisruptionBudget).

use std::collections::BTreeMap;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::{LabelSelector, Time};
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;
use kube::CustomResource;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::wire::is_default;

/// The desired state of a PodUnavailableBudget.
#[derive(CustomResource, Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[kube(
    group = "policy.kruise.io",
    version = "v1beta1",
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
    storage = true,
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
    /// Operations the budget guards; DELETE, UPDATE and EVICT when empty.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub protect_operations: Vec<PubOperation>,
    /// Replica count to use when the pods' workload cannot report one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub protect_total_replicas: Option<i32>,
    /// Pods matching this selector are never protected.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ignored_pod_selector: Option<LabelSelector>,
}

crate::wire_enum! {
    /// A pod operation a budget can guard.
    pub enum PubOperation {
        /// Pod deletion.
        Delete = "DELETE",
        /// Pod update, including in-place updates that restart containers.
        Update = "UPDATE",
        /// Pod eviction.
        Evict = "EVICT",
        /// In-place resizing of pod resources.
        Resize = "RESIZE",
    }
}

/// Identifies a workload by API version, kind and name.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct TargetReference {
    /// API version of the workload.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub api_version: String,
    /// Kind of the workload.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub kind: String,
    /// Name of the workload.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub name: String,
}

/// The observed state of a PodUnavailableBudget.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct PodUnavailableBudgetStatus {
    /// The generation this status describes; the rest is valid only when it is current.
    #[serde(default, skip_serializing_if = "is_default")]
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
