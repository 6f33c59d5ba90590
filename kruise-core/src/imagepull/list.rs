//! The ImageListPullJob controller.

use std::collections::BTreeMap;

use jiff::{SignedDuration, Timestamp};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, OwnerReference};
use kruise_api::apps::v1beta1::{
    CompletionPolicyType, FailedImageStatus, ImageListPullJob, ImageListPullJobStatus,
    ImagePullJob, ImagePullJobSpec, ImagePullJobTemplate,
};
use kruise_api::well_known::labels::CONTROLLER_REVISION_HASH;
use serde::Serialize;

use super::time;

/// What the controller asks for.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ListJobPlan {
    /// Set the `apps.kruise.io/controller-revision-hash` label of the list job to this.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub hash_label: Option<String>,
    /// ImagePullJobs to create (with `generateName`).
    pub create: Vec<ImagePullJob>,
    /// ImagePullJobs to delete, by name.
    pub delete: Vec<String>,
    /// The new status, when it changes.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub status: Option<ImageListPullJobStatus>,
    /// Delete the list job (`ttlSecondsAfterFinished` passed).
    pub delete_self: bool,
    /// When to look again.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub requeue_after: Option<SignedDuration>,
}

/// The hash of the shared pull template (FNV-32a of its JSON, made label-safe).
pub fn template_hash(template: &ImagePullJobTemplate) -> String {
    let json = serde_json::to_vec(template).unwrap_or_default();
    crate::revision::hash::safe_encode(&crate::revision::hash::fnv1a_32(&json).to_string())
}

/// The controller's plan for one list job (upstream's `Reconcile`); `children` are the
/// ImagePullJobs it owns (not being deleted).
///
/// - A completed list job is deleted `ttlSecondsAfterFinished` after completion.
/// - One child per image: images without a child get one (`generateName: <list>-`, the
///   template, the hash label, a controller reference); a child whose hash label differs
///   (or, without the label, whose template differs) is replaced; children of images no
///   longer listed are deleted.
/// - Status: desired = images; a started child counts as active when it has pulls running,
///   completed when all its nodes finished, succeeded when all succeeded; children with
///   failures are listed in `failedImageStatuses`. Completion policy Always completes when
///   every child completed.
pub fn plan_list_job(
    list_job: &ImageListPullJob,
    children: &[ImagePullJob],
    now: Timestamp,
) -> ListJobPlan {
    let mut plan = ListJobPlan::default();
    let hash = template_hash(&list_job.spec.template);
    let label = list_job.metadata.labels.as_ref().and_then(|l| l.get(CONTROLLER_REVISION_HASH));
    if label != Some(&hash) {
        plan.hash_label = Some(hash.clone());
    }
    let status = list_job.status.clone().unwrap_or_default();
    if let Some(completed) = &status.completion_time {
        if let Some(ttl) = list_job.spec.template.completion_policy.ttl_seconds_after_finished {
            let left = SignedDuration::from_secs(i64::from(ttl)) - now.duration_since(completed.0);
            if left <= SignedDuration::ZERO {
                plan.delete_self = true;
            } else {
                plan.requeue_after = Some(left);
            }
        }
        return plan;
    }
    let by_image: BTreeMap<&str, &ImagePullJob> = children
        .iter()
        .filter(|c| c.metadata.deletion_timestamp.is_none())
        .map(|c| (c.spec.image.as_str(), c))
        .collect();

    let mut new_status = ImageListPullJobStatus {
        desired: i32::try_from(list_job.spec.images.len()).unwrap_or(i32::MAX),
        start_time: Some(status.start_time.clone().unwrap_or_else(|| time(now))),
        ..Default::default()
    };
    for child in by_image.values() {
        let Some(cs) = child.status.as_ref().filter(|s| s.start_time.is_some()) else {
            continue;
        };
        if cs.active > 0 {
            new_status.active += 1;
        }
        if cs.failed > 0 {
            let name = child.metadata.name.clone().unwrap_or_default();
            new_status.failed_image_statuses.push(FailedImageStatus {
                image_pull_job: name.clone(),
                name: child.spec.image.clone(),
                message: format!("Please check for details which nodes failed by 'kubectl get ImagePullJob {name}'."),
            });
        }
        if cs.desired == cs.failed + cs.succeeded {
            new_status.completed += 1;
        }
        if cs.desired == cs.succeeded {
            new_status.succeeded += 1;
        }
    }
    let never =
        matches!(list_job.spec.template.completion_policy.type_, Some(CompletionPolicyType::Never));
    if !never && new_status.desired == new_status.completed {
        new_status.completion_time = Some(time(now));
    }

    for image in &list_job.spec.images {
        match by_image.get(image.as_str()) {
            None => plan.create.push(child_for(list_job, image, &hash)),
            Some(child) => {
                let child_hash =
                    child.metadata.labels.as_ref().and_then(|l| l.get(CONTROLLER_REVISION_HASH));
                let consistent = match child_hash {
                    Some(h) => *h == hash,
                    None => child.spec.template == list_job.spec.template,
                };
                if !consistent {
                    plan.delete.push(child.metadata.name.clone().unwrap_or_default());
                    plan.create.push(child_for(list_job, image, &hash));
                }
            }
        }
    }
    for (image, child) in &by_image {
        if !list_job.spec.images.iter().any(|i| i == image) {
            plan.delete.push(child.metadata.name.clone().unwrap_or_default());
        }
    }
    plan.delete.sort();
    plan.status = (list_job.status.as_ref() != Some(&new_status)).then_some(new_status);
    plan
}

fn child_for(list_job: &ImageListPullJob, image: &str, hash: &str) -> ImagePullJob {
    let name = list_job.metadata.name.clone().unwrap_or_default();
    ImagePullJob {
        metadata: ObjectMeta {
            namespace: list_job.metadata.namespace.clone(),
            generate_name: Some(format!("{name}-")),
            labels: Some(BTreeMap::from([(CONTROLLER_REVISION_HASH.to_owned(), hash.to_owned())])),
            owner_references: Some(vec![OwnerReference {
                api_version: "apps.kruise.io/v1beta1".to_owned(),
                kind: "ImageListPullJob".to_owned(),
                name,
                uid: list_job.metadata.uid.clone().unwrap_or_default(),
                controller: Some(true),
                block_owner_deletion: Some(true),
            }]),
            ..Default::default()
        },
        spec: ImagePullJobSpec {
            image: image.to_owned(),
            template: list_job.spec.template.clone(),
        },
        status: None,
    }
}
