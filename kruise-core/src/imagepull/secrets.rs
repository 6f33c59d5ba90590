//! Copies of a job's pull secrets in the daemon's namespace.

use std::collections::{BTreeMap, BTreeSet};

use k8s_openapi::api::core::v1::Secret;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kruise_api::apps::v1beta1::{ImagePullJob, ReferenceObject};
use kruise_api::well_known::annotations::{
    IMAGE_PULL_JOB_REFERENCES, IMAGE_PULL_JOB_SECRET_MODE, IMAGE_PULL_JOB_SOURCE_SECRET_KEY,
};
use serde::Serialize;

use super::{ImagePullConfig, REFERENCE_MODE_BATCH};

/// What to do with the copies of a job's pull secrets.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct SecretPlan {
    /// Copies to create.
    pub create: Vec<Secret>,
    /// Copies to update (data refreshed from the source, job added to or removed from the
    /// references annotation).
    pub update: Vec<Secret>,
    /// Copies no job references any more, by name.
    pub delete: Vec<String>,
    /// The references the job's NodeImage entries list.
    pub refs: Vec<ReferenceObject>,
}

/// Plans the copies of the job's `pullSecrets` (upstream's `syncJobPullSecrets`). `sources`
/// are the secrets of the job's namespace it names (missing ones are skipped); `copies` the
/// secrets of the daemon's namespace. A copy is named `<source>-<6 hex>` and annotated with
/// its source (`imagepulljobs.kruise.io/source-key`), the jobs using it
/// (`imagepulljobs.kruise.io/references`, sorted `namespace/name` list) and mode `batch`. A
/// finished or deleted job is removed from the references; a copy left with none is deleted.
/// A job in the daemon's namespace uses its secrets directly.
pub fn plan_pull_secrets(
    job: &ImagePullJob,
    sources: &[Secret],
    copies: &[Secret],
    config: &ImagePullConfig,
) -> SecretPlan {
    let mut plan = SecretPlan::default();
    let namespace = job.metadata.namespace.clone().unwrap_or_default();
    let job_key = format!("{namespace}/{}", job.metadata.name.as_deref().unwrap_or_default());
    let finished = job.metadata.deletion_timestamp.is_some()
        || job.status.as_ref().is_some_and(|s| s.completion_time.is_some());
    let wanted = &job.spec.template.pull_secrets;
    if wanted.is_empty() && !finished {
        return plan;
    }
    if namespace == config.daemon_config_namespace {
        plan.refs = wanted
            .iter()
            .map(|n| ReferenceObject {
                namespace: namespace.clone(),
                name: n.clone(),
                mode: String::new(),
            })
            .collect();
        return plan;
    }
    let annotation = |s: &Secret, key: &str| {
        s.metadata.annotations.as_ref().and_then(|a| a.get(key)).cloned().unwrap_or_default()
    };
    let references = |s: &Secret| -> BTreeSet<String> {
        annotation(s, IMAGE_PULL_JOB_REFERENCES)
            .split(',')
            .filter(|r| !r.is_empty())
            .map(str::to_owned)
            .collect()
    };
    let with_refs = |s: &Secret, refs: &BTreeSet<String>| {
        let mut s = s.clone();
        s.metadata.annotations.get_or_insert_with(BTreeMap::new).insert(
            IMAGE_PULL_JOB_REFERENCES.to_owned(),
            refs.iter().cloned().collect::<Vec<_>>().join(","),
        );
        s
    };
    let mut sorted: Vec<&Secret> =
        copies.iter().filter(|s| s.metadata.deletion_timestamp.is_none()).collect();
    sorted.sort_by(|a, b| a.metadata.name.cmp(&b.metadata.name));

    let desired: BTreeSet<String> = if finished {
        BTreeSet::new()
    } else {
        wanted.iter().map(|n| format!("{namespace}/{n}")).collect()
    };
    let mut chosen: BTreeMap<String, &Secret> = BTreeMap::new();
    for copy in &sorted {
        let refs = references(copy);
        let source = annotation(copy, IMAGE_PULL_JOB_SOURCE_SECRET_KEY);
        if desired.contains(&source) {
            let replace = match chosen.get(&source) {
                None => true,
                Some(_) => refs.contains(&job_key),
            };
            if replace {
                chosen.insert(source, copy);
            }
            continue;
        }
        if refs.contains(&job_key) {
            let mut remaining = refs.clone();
            remaining.remove(&job_key);
            if remaining.is_empty() {
                plan.delete.push(copy.metadata.name.clone().unwrap_or_default());
            } else {
                plan.update.push(with_refs(copy, &remaining));
            }
        }
    }
    for key in &desired {
        let name = key.split_once('/').map_or(key.as_str(), |(_, n)| n);
        let Some(source) = sources.iter().find(|s| s.metadata.name.as_deref() == Some(name)) else {
            continue;
        };
        match chosen.get(key) {
            None => {
                let uid = job.metadata.uid.as_deref().unwrap_or_default();
                let suffix = format!(
                    "{:08x}",
                    crate::revision::hash::fnv1a_32(format!("{uid}/{key}").as_bytes())
                );
                let mut annotations = source.metadata.annotations.clone().unwrap_or_default();
                annotations.insert(IMAGE_PULL_JOB_REFERENCES.to_owned(), job_key.clone());
                annotations.insert(IMAGE_PULL_JOB_SOURCE_SECRET_KEY.to_owned(), key.clone());
                annotations
                    .insert(IMAGE_PULL_JOB_SECRET_MODE.to_owned(), REFERENCE_MODE_BATCH.to_owned());
                let copy = Secret {
                    metadata: ObjectMeta {
                        namespace: Some(config.daemon_config_namespace.clone()),
                        name: Some(format!("{name}-{}", &suffix[..6])),
                        labels: source.metadata.labels.clone(),
                        annotations: Some(annotations),
                        ..Default::default()
                    },
                    ..source.clone()
                };
                plan.refs.push(ReferenceObject {
                    namespace: config.daemon_config_namespace.clone(),
                    name: copy.metadata.name.clone().unwrap_or_default(),
                    mode: REFERENCE_MODE_BATCH.to_owned(),
                });
                plan.create.push(copy);
            }
            Some(copy) => {
                plan.refs.push(ReferenceObject {
                    namespace: config.daemon_config_namespace.clone(),
                    name: copy.metadata.name.clone().unwrap_or_default(),
                    mode: annotation(copy, IMAGE_PULL_JOB_SECRET_MODE),
                });
                let mut refs = references(copy);
                refs.insert(job_key.clone());
                let mut updated = with_refs(copy, &refs);
                updated.data = source.data.clone();
                updated.string_data = source.string_data.clone();
                if updated != **copy {
                    plan.update.push(updated);
                }
            }
        }
    }
    plan
}
