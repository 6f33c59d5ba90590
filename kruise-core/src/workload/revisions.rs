//! The current and update revisions of a workload, found or created on top of
//! [`crate::revision`], as planners use them.

use k8s_openapi::api::apps::v1::ControllerRevision;
use k8s_openapi::api::core::v1::PodTemplateSpec;
use serde_json::json;

use super::{Action, Patch};
use crate::revision::{self as rev, RevisionError, RevisionParent, UpdateRevision};

/// A revision in play: its name and pod template.
#[derive(Clone, Debug)]
pub struct Revision {
    /// Its name.
    pub name: String,
    /// The pod template it holds.
    pub template: PodTemplateSpec,
    /// The ControllerRevision (existing, or created by this plan).
    pub object: Option<ControllerRevision>,
}

/// An existing revision, with its name at hand.
#[derive(Debug)]
pub struct RevView<'a> {
    /// The revision.
    pub rev: &'a ControllerRevision,
    /// Its name.
    pub name: &'a str,
}

/// The outcome of resolving revisions.
#[derive(Debug)]
pub struct Resolved<'a> {
    /// Existing revisions, oldest first.
    pub sorted: Vec<RevView<'a>>,
    /// The current revision (`status.currentRevision`, or the update revision).
    pub current: Revision,
    /// The update revision (the workload's template).
    pub update: Revision,
    /// The collision count to record in the status.
    pub collision_count: i32,
    /// Actions creating or rolling forward the update revision.
    pub actions: Vec<Action>,
}

/// Finds or creates the update revision and finds the current one (upstream's
/// `getActiveRevisions`).
pub fn resolve<'a, W: RevisionParent>(
    workload: &W,
    revisions: &'a [ControllerRevision],
) -> Result<Resolved<'a>, RevisionError> {
    let mut sorted: Vec<&ControllerRevision> = revisions.iter().collect();
    sorted.sort_by(|a, b| rev::compare_revisions(a, b));
    let sorted: Vec<RevView<'a>> = sorted
        .into_iter()
        .map(|r| RevView { rev: r, name: r.metadata.name.as_deref().unwrap_or_default() })
        .collect();

    let active = rev::resolve_revisions(workload, revisions)?;
    let mut actions = Vec::new();
    match &active.update {
        UpdateRevision::Latest { .. } => {}
        UpdateRevision::Reuse { name, revision, volume_claim_templates_hash } => {
            let mut patch = json!({ "revision": revision });
            if let Some(hash) = volume_claim_templates_hash {
                patch["metadata"] = json!({ "annotations": { rev::VCT_HASH_ANNOTATION: hash } });
            }
            actions.push(Action::PatchRevision { name: name.clone(), patch: Patch::merge(patch) });
        }
        UpdateRevision::Create { revision } => {
            actions.push(Action::CreateRevision { revision: revision.clone() });
        }
    }
    let update_name = active.update.name().to_owned();
    let update_object = match &active.update {
        UpdateRevision::Create { revision } => Some(revision.as_ref().clone()),
        _ => sorted.iter().find(|r| r.name == update_name).map(|r| r.rev.clone()),
    };
    let update = Revision {
        name: update_name,
        template: workload.template().clone(),
        object: update_object,
    };
    let current = if active.current == update.name {
        update.clone()
    } else {
        let found = sorted.iter().find(|r| r.name == active.current);
        match found {
            Some(r) => Revision {
                name: active.current.clone(),
                template: rev::template_from_revision(r.rev)?,
                object: Some(r.rev.clone()),
            },
            None => update.clone(),
        }
    };
    Ok(Resolved { sorted, current, update, collision_count: active.collision_count, actions })
}
