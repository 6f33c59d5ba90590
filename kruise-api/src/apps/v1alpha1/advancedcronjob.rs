//! AdvancedCronJob (apps.kruise.io/v1alpha1): like v1beta1, but it can only create Jobs and
//! BroadcastJobs.

use k8s_openapi::api::batch::v1::JobTemplateSpec;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kube::CustomResource;
use schemars::{JsonSchema, Schema, SchemaGenerator, json_schema};
use serde::{Deserialize, Serialize};

use super::BroadcastJobSpec;
pub use crate::apps::v1beta1::{AdvancedCronJobStatus, ConcurrencyPolicy, TemplateKind};
use crate::wire::{is_default, preserve_unknown_fields};

/// The desired state of an AdvancedCronJob.
#[derive(CustomResource, Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[kube(
    group = "apps.kruise.io",
    version = "v1alpha1",
    kind = "AdvancedCronJob",
    plural = "advancedcronjobs",
    singular = "advancedcronjob",
    namespaced,
    shortname = "acj",
    status = "AdvancedCronJobStatus",
    printcolumn = r#"{"name":"Schedule","type":"string","jsonPath":".spec.schedule","description":"Cron schedule."}"#,
    printcolumn = r#"{"name":"Type","type":"string","jsonPath":".status.type","description":"Kind of job created."}"#,
    printcolumn = r#"{"name":"LastScheduleTime","type":"date","jsonPath":".status.lastScheduleTime","description":"When a job was last created."}"#,
    printcolumn = r#"{"name":"AGE","type":"date","jsonPath":".metadata.creationTimestamp"}"#,
    storage = false,
    derive = "PartialEq",
    derive = "Default",
    doc = "AdvancedCronJob creates jobs of several kinds on a cron schedule."
)]
#[serde(rename_all = "camelCase")]
pub struct AdvancedCronJobSpec {
    /// Cron expression, e.g. `*/5 * * * *`.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub schedule: String,
    /// IANA time zone of the schedule; unset means the controller's local zone.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub time_zone: Option<String>,
    /// Seconds after a missed start time within which the job may still be started.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub starting_deadline_seconds: Option<i64>,
    /// Allow (default), Forbid or Replace overlapping runs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub concurrency_policy: Option<ConcurrencyPolicy>,
    /// Stop creating new runs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub paused: Option<bool>,
    /// Finished successful runs kept.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub successful_jobs_history_limit: Option<i32>,
    /// Finished failed runs kept.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub failed_jobs_history_limit: Option<i32>,
    /// The job to create; set exactly one of its members.
    #[serde(default)]
    pub template: CronJobTemplate,
}

/// The job an AdvancedCronJob creates on each run: exactly one member is set.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct CronJobTemplate {
    /// A batch/v1 Job, as a CronJob would create.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "preserve_unknown_fields")]
    pub job_template: Option<JobTemplateSpec>,
    /// A BroadcastJob.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub broadcast_job_template: Option<BroadcastJobTemplateSpec>,
}

/// Metadata and spec of the BroadcastJobs an AdvancedCronJob creates.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct BroadcastJobTemplateSpec {
    /// Labels, annotations and so on for the created jobs.
    #[serde(default, skip_serializing_if = "is_default")]
    #[schemars(schema_with = "plain_object")]
    pub metadata: ObjectMeta,
    /// Spec of the created jobs.
    #[serde(default, skip_serializing_if = "is_default")]
    pub spec: BroadcastJobSpec,
}

/// Schema of an embedded object's metadata as upstream publishes it: an untyped object.
fn plain_object(_: &mut SchemaGenerator) -> Schema {
    json_schema!({ "type": "object" })
}
