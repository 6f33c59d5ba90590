//! AdvancedCronJob v1alpha1 <-> v1beta1.
//!
//! The fields map one to one, with the BroadcastJob template spec converted like a
//! BroadcastJob's. v1alpha1 has no ImageListPullJob template: upstream refuses to convert
//! such an object down; here the template is left out of the v1alpha1 object and the
//! generic residue keeps it, so converting back restores it.

use super::HubConvertible;
use super::broadcastjob::{spec_from_hub, spec_to_hub};
use crate::apps::{v1alpha1 as alpha, v1beta1 as beta};

impl HubConvertible for alpha::AdvancedCronJob {
    type Hub = beta::AdvancedCronJob;

    fn map_to_hub(self) -> beta::AdvancedCronJob {
        let alpha::AdvancedCronJob { metadata, spec, status } = self;
        let template = spec.template;
        let spec = beta::AdvancedCronJobSpec {
            schedule: spec.schedule,
            time_zone: spec.time_zone,
            starting_deadline_seconds: spec.starting_deadline_seconds,
            concurrency_policy: spec.concurrency_policy,
            paused: spec.paused,
            successful_jobs_history_limit: spec.successful_jobs_history_limit,
            failed_jobs_history_limit: spec.failed_jobs_history_limit,
            template: beta::CronJobTemplate {
                job_template: template.job_template,
                broadcast_job_template: template.broadcast_job_template.map(|bcj| {
                    beta::BroadcastJobTemplateSpec {
                        metadata: bcj.metadata,
                        spec: spec_to_hub(bcj.spec),
                    }
                }),
                image_list_pull_job_template: None,
            },
        };
        beta::AdvancedCronJob { metadata, spec, status }
    }

    fn map_from_hub(hub: beta::AdvancedCronJob) -> Self {
        let beta::AdvancedCronJob { metadata, spec, status } = hub;
        let template = spec.template;
        let spec = alpha::AdvancedCronJobSpec {
            schedule: spec.schedule,
            time_zone: spec.time_zone,
            starting_deadline_seconds: spec.starting_deadline_seconds,
            concurrency_policy: spec.concurrency_policy,
            paused: spec.paused,
            successful_jobs_history_limit: spec.successful_jobs_history_limit,
            failed_jobs_history_limit: spec.failed_jobs_history_limit,
            template: alpha::CronJobTemplate {
                job_template: template.job_template,
                broadcast_job_template: template.broadcast_job_template.map(|bcj| {
                    alpha::BroadcastJobTemplateSpec {
                        metadata: bcj.metadata,
                        spec: spec_from_hub(bcj.spec),
                    }
                }),
            },
        };
        alpha::AdvancedCronJob { metadata, spec, status }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::conversion::{RESIDUE_ANNOTATION, from_hub, to_hub};
    use serde_json::json;

    #[test]
    fn manual_example_converts_both_ways_without_residue() {
        let original = json!({
            "apiVersion": "apps.kruise.io/v1alpha1", "kind": "AdvancedCronJob",
            "metadata": {"name": "acj-test"},
            "spec": {
                "schedule": "*/1 * * * *",
                "concurrencyPolicy": "Forbid",
                "template": {"broadcastJobTemplate": {
                    "metadata": {"labels": {"app": "pi"}},
                    "spec": {
                        "template": {"spec": {
                            "containers": [{"name": "pi", "image": "perl",
                                "command": ["perl", "-Mbignum=bpi", "-wle", "print bpi(2000)"]}],
                            "restartPolicy": "Never"
                        }},
                        "completionPolicy": {"type": "Always", "ttlSecondsAfterFinished": 30}
                    }
                }}
            },
            "status": {"type": "BroadcastJob", "lastScheduleTime": "2024-01-01T00:01:00Z",
                       "active": [{"kind": "BroadcastJob", "name": "acj-test-1", "namespace": "default"}]}
        });
        let acj: alpha::AdvancedCronJob = serde_json::from_value(original.clone()).expect("decode");
        assert_eq!(serde_json::to_value(&acj).expect("encode"), original);

        let hub = to_hub(acj.clone()).expect("to hub");
        let mut expected = original;
        expected["apiVersion"] = json!("apps.kruise.io/v1beta1");
        assert_eq!(serde_json::to_value(&hub).expect("encode hub"), expected);
        assert!(hub.metadata.annotations.is_none(), "a clean mapping needs no residue");
        assert_eq!(from_hub::<alpha::AdvancedCronJob>(hub).expect("back"), acj);
    }

    #[test]
    fn image_list_pull_template_survives_a_trip_through_v1alpha1() {
        let hub: beta::AdvancedCronJob = serde_json::from_value(json!({
            "apiVersion": "apps.kruise.io/v1beta1", "kind": "AdvancedCronJob",
            "metadata": {"name": "pull-nightly"},
            "spec": {
                "schedule": "0 3 * * *",
                "template": {"imageListPullJobTemplate": {
                    "spec": {"images": ["nginx:1.25", "busybox:1.36"], "completionPolicy": {"type": "Always"}}
                }}
            }
        }))
        .expect("decode");
        let down = from_hub::<alpha::AdvancedCronJob>(hub.clone()).expect("down");
        let value = serde_json::to_value(&down).expect("encode");
        assert_eq!(value["spec"]["template"], json!({}));
        assert!(
            down.metadata.annotations.as_ref().is_some_and(|a| a.contains_key(RESIDUE_ANNOTATION)),
            "the template with no v1alpha1 home is recorded"
        );
        assert_eq!(to_hub(down).expect("up"), hub);
    }
}
