//! Image pre-download before a workload update, shared by the Advanced DaemonSet
//! (`PreDownloadImageForDaemonSetUpdate`) and the CloneSet (`PreDownloadImageForInPlaceUpdate`):
//! an ImagePullJob per changed container image pulls the update revision's images onto the
//! nodes running pods of other revisions, so that each pod's turn takes less time.
//!
//! Each kind decides *whether* to pre-download (its rules differ); what it does then is common:
//!
//! - a revision labelled `apps.kruise.io/pre-predownload-created` or
//!   `apps.kruise.io/image-predownload-ignored` was handled already ([`handled`]);
//! - an update that gets no jobs labels its revision ignored ([`mark`]);
//! - otherwise one job per container whose image differs from (or is missing in) the older
//!   revisions ([`changed_images`]), named `<revision>-<container>`, each with a
//!   `CreatedImagePullJob` Event, then the revision is labelled created ([`create_jobs`]);
//! - once the update is over, the jobs the workload controls are deleted ([`delete_jobs`]).

use std::collections::BTreeMap;

use k8s_openapi::api::apps::v1::ControllerRevision;
use k8s_openapi::api::core::v1::PodTemplateSpec;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{
    LabelSelector, LabelSelectorRequirement, ObjectMeta, OwnerReference,
};
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;
use kruise_api::apps::v1beta1::{
    CompletionPolicy, CompletionPolicyType, ImagePullJob, ImagePullJobPodSelector,
    ImagePullJobSpec, ImagePullJobTemplate, PullPolicy, SandboxConfig,
};
use kruise_api::well_known::{kubernetes, labels};
use serde_json::json;

use crate::revision as rev;
use crate::workload::{Action, Event, EventType, Patch};

/// Seconds one pull may take unless the workload says otherwise.
pub(crate) const DEFAULT_PULL_TIMEOUT_SECONDS: i32 = 300;
/// Seconds a finished pre-download job is kept.
const JOB_TTL_SECONDS: i32 = 600;

/// The workload owning the jobs, and what its jobs copy from it.
pub(crate) struct Owner<'a> {
    /// Its kind (`DaemonSet`, `CloneSet`), in `apps.kruise.io/v1beta1`.
    pub kind: &'a str,
    /// Its metadata (name, namespace, uid).
    pub metadata: &'a ObjectMeta,
    /// Its pod template: labels and annotations for the job's sandbox, pull secrets.
    pub template: &'a PodTemplateSpec,
    /// Its pod selector.
    pub selector: Option<&'a LabelSelector>,
}

/// How the jobs pull.
pub(crate) struct PullSettings {
    /// Nodes pulling at once.
    pub parallelism: IntOrString,
    /// Seconds one pull may take.
    pub timeout_seconds: i32,
}

impl PullSettings {
    /// Read from the workload's `apps.kruise.io/image-predownload-parallelism` and
    /// `-timeout-seconds` annotations (how the DaemonSet and the StatefulSet set them); a
    /// missing or unparsable one is the default (1 node; [`DEFAULT_PULL_TIMEOUT_SECONDS`]).
    pub(crate) fn from_annotations(
        annotations: Option<&std::collections::BTreeMap<String, String>>,
    ) -> Self {
        use kruise_api::well_known::annotations as keys;
        let number = |key: &str| annotations.and_then(|a| a.get(key)?.parse::<i32>().ok());
        PullSettings {
            parallelism: IntOrString::Int(number(keys::IMAGE_PREDOWNLOAD_PARALLELISM).unwrap_or(1)),
            timeout_seconds: number(keys::IMAGE_PREDOWNLOAD_TIMEOUT_SECONDS)
                .unwrap_or(DEFAULT_PULL_TIMEOUT_SECONDS),
        }
    }
}

/// Whether `update` was handled already (labelled created or ignored).
pub(crate) fn handled(update: &ControllerRevision) -> bool {
    let revision_labels = update.metadata.labels.as_ref();
    [labels::IMAGE_PREDOWNLOAD_CREATED, labels::IMAGE_PREDOWNLOAD_IGNORED]
        .iter()
        .any(|key| revision_labels.is_some_and(|l| l.contains_key(*key)))
}

/// The patch labelling revision `name` with `key: "true"`.
pub(crate) fn mark(name: &str, key: &str) -> Action {
    Action::PatchRevision {
        name: name.to_owned(),
        patch: Patch::strategic(json!({"metadata": {"labels": {key: "true"}}})),
    }
}

/// Deletes every job in `jobs` (the names of the jobs the workload controls).
pub(crate) fn delete_jobs(jobs: &[String]) -> impl Iterator<Item = Action> + '_ {
    jobs.iter().map(|name| Action::DeleteImagePullJob { name: name.clone() })
}

/// Plans a job per image of `update` that `old` revisions run differently (skipping the names
/// in `existing`), each with its `CreatedImagePullJob` Event, then labels `update` created.
/// `hash` is the revision's hash as pods carry it in `controller-revision-hash`.
#[allow(clippy::too_many_arguments)]
pub(crate) fn create_jobs(
    owner: &Owner<'_>,
    settings: &PullSettings,
    old: &[&ControllerRevision],
    update: &ControllerRevision,
    hash: &str,
    existing: &[String],
    actions: &mut Vec<Action>,
    events: &mut Vec<Event>,
) {
    let revision_name = update.metadata.name.clone().unwrap_or_default();
    for (container, image) in changed_images(old, update) {
        let name = format!("{revision_name}-{container}");
        if existing.contains(&name) {
            continue;
        }
        let job = job(owner, settings, hash, &name, &revision_name, &image);
        actions.push(Action::CreateImagePullJob { job: Box::new(job) });
        events.push(Event {
            type_: EventType::Normal,
            reason: "CreatedImagePullJob".into(),
            message: format!("created ImagePullJob {name} for image: {image}"),
            after_action: Some(actions.len() - 1),
        });
    }
    actions.push(mark(&revision_name, labels::IMAGE_PREDOWNLOAD_CREATED));
}

/// The images of `update`'s containers that some older revision runs differently, or that no
/// older revision has a container for, by container name. Nothing when a template cannot be
/// read.
pub(crate) fn changed_images(
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

/// The ImagePullJob `name` pulling `image` onto the nodes running the owner's pods of other
/// revisions than `revision` (hash `hash`).
fn job(
    owner: &Owner<'_>,
    settings: &PullSettings,
    hash: &str,
    name: &str,
    revision: &str,
    image: &str,
) -> ImagePullJob {
    let template = owner.template;
    let mut job_labels =
        template.metadata.as_ref().and_then(|m| m.labels.clone()).unwrap_or_default();
    // Everything the workload owns carries labels its selector matches; the hash names the
    // revision the job is for.
    job_labels.insert(kubernetes::labels::CONTROLLER_HASH.to_owned(), hash.to_owned());
    let sandbox_annotations =
        template.metadata.as_ref().and_then(|m| m.annotations.clone()).unwrap_or_default();

    let mut selector = owner.selector.cloned().unwrap_or_default();
    selector.match_expressions.get_or_insert_with(Vec::new).push(LabelSelectorRequirement {
        key: kubernetes::labels::CONTROLLER_REVISION_HASH.to_owned(),
        operator: "NotIn".to_owned(),
        values: Some(vec![revision.to_owned(), hash.to_owned()]),
    });

    let pull_secrets = template
        .spec
        .iter()
        .flat_map(|s| s.image_pull_secrets.iter().flatten())
        .map(|s| s.name.clone())
        .collect();

    ImagePullJob {
        metadata: ObjectMeta {
            name: Some(name.to_owned()),
            namespace: owner.metadata.namespace.clone(),
            labels: Some(job_labels.clone()),
            owner_references: Some(vec![OwnerReference {
                api_version: "apps.kruise.io/v1beta1".to_owned(),
                kind: owner.kind.to_owned(),
                name: owner.metadata.name.clone().unwrap_or_default(),
                uid: owner.metadata.uid.clone().unwrap_or_default(),
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
                parallelism: Some(settings.parallelism.clone()),
                pull_policy: Some(PullPolicy {
                    timeout_seconds: Some(settings.timeout_seconds),
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
