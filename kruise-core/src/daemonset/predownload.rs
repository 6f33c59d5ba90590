//! Image pre-download before an Advanced DaemonSet update (upstream's
//! `PreDownloadImageForDaemonSetUpdate`): when the template changes and the update will not
//! replace every pod at once, an ImagePullJob per changed container image pulls the new image
//! onto the nodes still running pods of other revisions, so that each node's turn takes less
//! time. Once every pod is updated the jobs are deleted.
//!
//! The decision is made on the DaemonSet's last written status, as upstream's is:
//!
//! - the update is in progress when `updatedNumberScheduled` differs from
//!   `desiredNumberScheduled` or the update revision's hash from `status.updateRevision`;
//!   otherwise the jobs the DaemonSet controls are deleted;
//! - a revision labelled `apps.kruise.io/pre-predownload-created` or
//!   `apps.kruise.io/image-predownload-ignored` was handled already;
//! - with no partition and a `maxUnavailable` (default 1) covering every desired pod, the
//!   update is one batch: the revision is labelled ignored and no job is made;
//! - otherwise one job per container whose image differs from (or is missing in) an older
//!   revision, named `<revision>-<container>`, then the revision is labelled created.

use std::collections::BTreeMap;

use k8s_openapi::api::apps::v1::ControllerRevision;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{
    LabelSelectorRequirement, ObjectMeta, OwnerReference,
};
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;
use kruise_api::apps::v1beta1::{
    CompletionPolicy, CompletionPolicyType, DaemonSet, ImagePullJob, ImagePullJobPodSelector,
    ImagePullJobSpec, ImagePullJobTemplate, PullPolicy, SandboxConfig,
};
use kruise_api::well_known::{annotations, kubernetes, labels};
use serde_json::json;

use crate::intstr::{Rounding, scaled_value};
use crate::revision as rev;
use crate::workload::{Action, Event, EventType, Patch};

/// Seconds one pull may take unless `apps.kruise.io/image-predownload-timeout-seconds` says
/// otherwise.
const DEFAULT_PULL_TIMEOUT_SECONDS: i32 = 300;
/// Seconds a finished pre-download job is kept.
const JOB_TTL_SECONDS: i32 = 600;

/// What the pre-download step reads.
pub(super) struct Inputs<'a> {
    /// The DaemonSet (v1beta1), with the status last written.
    pub ds: &'a DaemonSet,
    /// The update revision, as found or about to be created.
    pub update: &'a ControllerRevision,
    /// Its hash (the pods' `controller-revision-hash`).
    pub hash: &'a str,
    /// Every other revision of the DaemonSet.
    pub old: Vec<&'a ControllerRevision>,
    /// The ImagePullJobs the DaemonSet controls, by name.
    pub jobs: &'a [String],
}

/// Appends the pre-download actions, and their Events, to `actions` and `events`.
pub(super) fn plan(input: &Inputs<'_>, actions: &mut Vec<Action>, events: &mut Vec<Event>) {
    let ds = input.ds;
    let status = ds.status.clone().unwrap_or_default();
    let in_progress = status.updated_number_scheduled != status.desired_number_scheduled
        || input.hash != status.update_revision;
    if !in_progress {
        actions.extend(
            input.jobs.iter().map(|name| Action::DeleteImagePullJob { name: name.clone() }),
        );
        return;
    }
    let revision_labels = input.update.metadata.labels.as_ref();
    let handled = |key: &str| revision_labels.is_some_and(|l| l.contains_key(key));
    if handled(labels::IMAGE_PREDOWNLOAD_CREATED) || handled(labels::IMAGE_PREDOWNLOAD_IGNORED) {
        return;
    }
    let revision_name = input.update.metadata.name.clone().unwrap_or_default();
    let mark = |key: &str| Action::PatchRevision {
        name: revision_name.clone(),
        patch: Patch::strategic(json!({"metadata": {"labels": {key: "true"}}})),
    };

    let desired = status.desired_number_scheduled;
    let rolling = ds.spec.update_strategy.rolling_update.as_ref();
    let partition = match rolling.and_then(|r| r.partition.as_ref()) {
        Some(value) => match scaled_value(value, desired, Rounding::Down) {
            Ok(partition) => partition,
            // Upstream gives up on this round; the validating webhook rejects such values.
            Err(_) => return,
        },
        None => 0,
    };
    let one = IntOrString::Int(1);
    let max_unavailable = rolling.and_then(|r| r.max_unavailable.as_ref()).unwrap_or(&one);
    let max_unavailable = scaled_value(max_unavailable, desired, Rounding::Up).unwrap_or(0);
    if partition == 0 && max_unavailable >= desired {
        actions.push(mark(labels::IMAGE_PREDOWNLOAD_IGNORED));
        return;
    }

    for (container, image) in changed_images(&input.old, input.update) {
        let name = format!("{revision_name}-{container}");
        if input.jobs.contains(&name) {
            continue;
        }
        let job = job(ds, input.hash, &name, &revision_name, &image);
        actions.push(Action::CreateImagePullJob { job: Box::new(job) });
        events.push(Event {
            type_: EventType::Normal,
            reason: "CreatedImagePullJob".into(),
            message: format!("created ImagePullJob {name} for image: {image}"),
            after_action: Some(actions.len() - 1),
        });
    }
    actions.push(mark(labels::IMAGE_PREDOWNLOAD_CREATED));
}

/// The images of `update`'s containers that some older revision runs differently, or that no
/// older revision has a container for, by container name. Nothing when a template cannot be
/// read.
fn changed_images(
    old: &[&ControllerRevision],
    update: &ControllerRevision,
) -> BTreeMap<String, String> {
    let Ok(old) = old.iter().map(|r| rev::template_from_revision(r)).collect::<Result<Vec<_>, _>>()
    else {
        return BTreeMap::new();
    };
    let Ok(new) = rev::template_from_revision(update) else {
        return BTreeMap::new();
    };
    let mut images = BTreeMap::new();
    for container in new.spec.iter().flat_map(|s| &s.containers) {
        let image = container.image.clone().unwrap_or_default();
        let mut found = false;
        for template in &old {
            let same =
                template.spec.iter().flat_map(|s| &s.containers).find(|c| c.name == container.name);
            if let Some(previous) = same {
                found = true;
                if previous.image.as_deref().unwrap_or_default() != image {
                    images.insert(container.name.clone(), image.clone());
                }
            }
        }
        if !found {
            images.insert(container.name.clone(), image);
        }
    }
    images
}

/// The ImagePullJob `name` pulling `image` onto the nodes running the DaemonSet's pods of
/// other revisions.
fn job(ds: &DaemonSet, hash: &str, name: &str, revision: &str, image: &str) -> ImagePullJob {
    let template = &ds.spec.template;
    let mut job_labels =
        template.metadata.as_ref().and_then(|m| m.labels.clone()).unwrap_or_default();
    // Everything the DaemonSet owns carries labels its selector matches; the hash names the
    // revision the job is for.
    job_labels.insert(kubernetes::labels::CONTROLLER_HASH.to_owned(), hash.to_owned());
    let sandbox_annotations =
        template.metadata.as_ref().and_then(|m| m.annotations.clone()).unwrap_or_default();

    let mut selector = ds.spec.selector.clone().unwrap_or_default();
    selector.match_expressions.get_or_insert_with(Vec::new).push(LabelSelectorRequirement {
        key: kubernetes::labels::CONTROLLER_REVISION_HASH.to_owned(),
        operator: "NotIn".to_owned(),
        values: Some(vec![revision.to_owned(), hash.to_owned()]),
    });

    let ds_annotations = ds.metadata.annotations.as_ref();
    let annotated = |key: &str| ds_annotations.and_then(|a| a.get(key));
    let timeout = annotated(annotations::IMAGE_PREDOWNLOAD_TIMEOUT_SECONDS)
        .and_then(|v| v.parse::<i32>().ok())
        .unwrap_or(DEFAULT_PULL_TIMEOUT_SECONDS);
    let parallelism = annotated(annotations::IMAGE_PREDOWNLOAD_PARALLELISM)
        .and_then(|v| v.parse::<i32>().ok())
        .unwrap_or(1);
    let pull_secrets = template
        .spec
        .iter()
        .flat_map(|s| s.image_pull_secrets.iter().flatten())
        .map(|s| s.name.clone())
        .collect();

    ImagePullJob {
        metadata: ObjectMeta {
            name: Some(name.to_owned()),
            namespace: ds.metadata.namespace.clone(),
            labels: Some(job_labels.clone()),
            owner_references: Some(vec![OwnerReference {
                api_version: "apps.kruise.io/v1beta1".to_owned(),
                kind: "DaemonSet".to_owned(),
                name: ds.metadata.name.clone().unwrap_or_default(),
                uid: ds.metadata.uid.clone().unwrap_or_default(),
                controller: Some(true),
                block_owner_deletion: Some(true),
            }]),
            ..ObjectMeta::default()
        },
        spec: ImagePullJobSpec {
            image: image.to_owned(),
            template: ImagePullJobTemplate {
                pull_secrets,
                pod_selector: Some(ImagePullJobPodSelector { label_selector: selector }),
                parallelism: Some(IntOrString::Int(parallelism)),
                pull_policy: Some(PullPolicy {
                    timeout_seconds: Some(timeout),
                    backoff_limit: Some(1),
                }),
                completion_policy: CompletionPolicy {
                    type_: Some(CompletionPolicyType::Always),
                    ttl_seconds_after_finished: Some(JOB_TTL_SECONDS),
                    ..CompletionPolicy::default()
                },
                sandbox_config: Some(SandboxConfig {
                    labels: job_labels,
                    annotations: sandbox_annotations,
                }),
                ..ImagePullJobTemplate::default()
            },
        },
        status: None,
    }
}
