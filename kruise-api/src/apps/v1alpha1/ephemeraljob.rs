//! EphemeralJob (apps.kruise.io/v1alpha1): injects ephemeral containers into the pods a
//! selector matches, for debugging or one-off tasks, and tracks how they ran.

use k8s_openapi::api::core::v1::EphemeralContainer;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{LabelSelector, Time};
use kube::CustomResource;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::wire::{is_default, preserve_unknown_fields};

/// The desired state of an EphemeralJob.
#[derive(CustomResource, Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[kube(
    group = "apps.kruise.io",
    version = "v1alpha1",
    kind = "EphemeralJob",
    plural = "ephemeraljobs",
    singular = "ephemeraljob",
    namespaced,
    shortname = "ejob",
    status = "EphemeralJobStatus",
    printcolumn = r#"{"name":"STATUS","type":"string","jsonPath":".status.phase","description":"Job phase."}"#,
    printcolumn = r#"{"name":"MATCH","type":"integer","jsonPath":".status.match","description":"Pods matched."}"#,
    printcolumn = r#"{"name":"SUCCEED","type":"integer","jsonPath":".status.succeeded","description":"Containers that succeeded."}"#,
    printcolumn = r#"{"name":"FAILED","type":"integer","jsonPath":".status.failed","description":"Containers that failed."}"#,
    printcolumn = r#"{"name":"RUNNING","type":"integer","jsonPath":".status.running","description":"Containers running now."}"#,
    printcolumn = r#"{"name":"WAITING","type":"integer","jsonPath":".status.waiting","description":"Containers not started yet."}"#,
    printcolumn = r#"{"name":"AGE","type":"date","jsonPath":".metadata.creationTimestamp"}"#,
    storage = true,
    derive = "PartialEq",
    derive = "Default",
    doc = "EphemeralJob runs ephemeral containers in a set of existing pods."
)]
#[serde(rename_all = "camelCase")]
pub struct EphemeralJobSpec {
    /// Which pods get the ephemeral containers.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub selector: Option<LabelSelector>,
    /// Only this many of the matched pods are targeted (all of them when unset or larger).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub replicas: Option<i32>,
    /// Most pods running the ephemeral containers at once.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub parallelism: Option<i32>,
    /// The ephemeral containers to inject.
    #[serde(default)]
    pub template: EphemeralContainerTemplateSpec,
    /// Stop starting containers in further pods.
    #[serde(default, skip_serializing_if = "is_default")]
    pub paused: bool,
    /// Seconds after the start time before the job is stopped.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub active_deadline_seconds: Option<i64>,
    /// Seconds after finishing before the job may be deleted (defaults to 1800; 0 deletes at once).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ttl_seconds_after_finished: Option<i32>,
}

/// The ephemeral containers an EphemeralJob injects.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct EphemeralContainerTemplateSpec {
    /// Containers added to every targeted pod.
    #[serde(default)]
    #[schemars(schema_with = "preserve_unknown_fields")]
    pub ephemeral_containers: Vec<EphemeralContainer>,
}

/// The observed state of an EphemeralJob.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct EphemeralJobStatus {
    /// Latest observations of the job.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub conditions: Vec<EphemeralJobCondition>,
    /// When the controller first picked the job up.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub start_time: Option<Time>,
    /// When the job finished.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub completion_time: Option<Time>,
    /// Overall phase of the job.
    #[serde(default)]
    pub phase: EphemeralJobPhase,
    /// Pods the selector matched.
    #[serde(rename = "match", default)]
    pub matches: i32,
    /// Pods whose ephemeral containers are running.
    #[serde(default)]
    pub running: i32,
    /// Pods whose ephemeral containers succeeded.
    #[serde(default)]
    pub succeeded: i32,
    /// Pods whose ephemeral containers have not started.
    #[serde(default)]
    pub waiting: i32,
    /// Pods whose ephemeral containers failed.
    #[serde(default)]
    pub failed: i32,
}

/// One observation about an EphemeralJob.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct EphemeralJobCondition {
    /// What the condition is about.
    #[serde(rename = "type", default)]
    pub type_: EphemeralJobConditionType,
    /// True, False or Unknown.
    #[serde(default)]
    pub status: String,
    /// Last time the condition was checked.
    #[serde(default)]
    pub last_probe_time: Option<Time>,
    /// Last time the status changed.
    #[serde(default)]
    pub last_transition_time: Option<Time>,
    /// Machine-readable reason.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub reason: String,
    /// Human-readable explanation.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub message: String,
}

crate::wire_enum! {
    /// Kinds of EphemeralJob conditions.
    pub enum EphemeralJobConditionType {
        /// Every targeted container finished successfully.
        JobSucceeded = "JobSucceeded",
        /// Some containers failed.
        JobFailed = "JobFailed",
        /// Some containers could not run.
        JobError = "JobError",
        /// The controller set the job up.
        Initialized = "Initialized",
        /// The selector matched no pods.
        MatchedEmpty = "MatchedEmpty",
    }
}

/// The empty string, Go's zero value for the field.
impl Default for EphemeralJobConditionType {
    fn default() -> Self {
        Self::Other(String::new())
    }
}

crate::wire_enum! {
    /// Phases of an EphemeralJob.
    pub enum EphemeralJobPhase {
        /// The job finished successfully.
        Succeeded = "Succeeded",
        /// The job failed.
        Failed = "Failed",
        /// The job waits to start.
        Waiting = "Waiting",
        /// Containers are running.
        Running = "Running",
        /// The job is paused.
        Paused = "Paused",
        /// The job hit an error.
        Error = "Error",
        /// The phase is not known.
        Unknown = "Unknown",
    }
}

/// The empty string, Go's zero value for the field.
impl Default for EphemeralJobPhase {
    fn default() -> Self {
        Self::Other(String::new())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn job_round_trips() {
        let doc = json!({
            "apiVersion": "apps.kruise.io/v1alpha1",
            "kind": "EphemeralJob",
            "metadata": {"name": "debug", "namespace": "default"},
            "spec": {
                "selector": {"matchLabels": {"app": "web"}},
                "replicas": 2,
                "parallelism": 1,
                "template": {
                    "ephemeralContainers": [{
                        "name": "shell",
                        "image": "busybox:1.36",
                        "command": ["sleep", "3600"],
                        "targetContainerName": "web"
                    }]
                },
                "ttlSecondsAfterFinished": 600
            },
            "status": {
                "conditions": [{
                    "type": "Initialized",
                    "status": "True",
                    "lastProbeTime": "2024-01-01T00:00:00Z",
                    "lastTransitionTime": "2024-01-01T00:00:00Z"
                }],
                "startTime": "2024-01-01T00:00:00Z",
                "phase": "Running",
                "match": 2,
                "running": 1,
                "succeeded": 0,
                "waiting": 1,
                "failed": 0
            }
        });
        let job: EphemeralJob = serde_json::from_value(doc.clone()).expect("decode");
        assert_eq!(job.spec.template.ephemeral_containers[0].name, "shell");
        let status = job.status.as_ref().expect("status");
        assert_eq!(status.phase, EphemeralJobPhase::Running);
        assert_eq!(status.conditions[0].type_, EphemeralJobConditionType::Initialized);
        assert_eq!(status.matches, 2);
        assert_eq!(serde_json::to_value(&job).expect("encode"), doc);
    }

    #[test]
    fn empty_status_writes_go_zero_values() {
        let status = EphemeralJobStatus {
            conditions: vec![EphemeralJobCondition::default()],
            ..Default::default()
        };
        assert_eq!(
            serde_json::to_value(&status).expect("encode"),
            json!({
                "conditions": [{
                    "type": "", "status": "", "lastProbeTime": null, "lastTransitionTime": null
                }],
                "phase": "", "match": 0, "running": 0, "succeeded": 0, "waiting": 0, "failed": 0
            })
        );
        let spec = EphemeralJobSpec::default();
        assert_eq!(
            serde_json::to_value(&spec).expect("encode"),
            json!({"template": {"ephemeralContainers": []}})
        );
    }
}
