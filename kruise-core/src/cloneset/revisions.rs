//! The current and update revisions of a CloneSet, and its revision history, on top of
//! [`crate::revision`].

use std::collections::BTreeSet;

use k8s_openapi::api::apps::v1::ControllerRevision;
use k8s_openapi::api::core::v1::PodTemplateSpec;
use kruise_api::apps::v1beta1::CloneSet;
use serde_json::json;

use super::SpecError;
use super::plan::{Action, Patch};
use super::podinfo::PodInfo;
use super::spec::Spec;
use crate::revision::{self as rev, UpdateRevision};

/// A revision in play: its name and pod template.
#[derive(Clone, Debug)]
pub(crate) struct Revision {
    pub name: String,
    pub template: PodTemplateSpec,
    /// The ControllerRevision (existing, or created by this plan).
    pub object: Option<ControllerRevision>,
}

/// An existing revision, with its name at hand.
#[derive(Debug)]
pub(crate) struct RevView<'a> {
    pub rev: &'a ControllerRevision,
    pub name: &'a str,
}

/// The outcome of resolving revisions.
#[derive(Debug)]
pub(crate) struct Resolved<'a> {
    /// Existing revisions, oldest first.
    pub sorted: Vec<RevView<'a>>,
    pub current: Revision,
    pub update: Revision,
    pub collision_count: i32,
    /// Actions creating or rolling forward the update revision.
    pub actions: Vec<Action>,
}

fn revision_error(err: rev::RevisionError) -> SpecError {
    let name = match &err {
        rev::RevisionError::EncodeTemplate { cloneset, .. } => cloneset.clone(),
        rev::RevisionError::MissingTemplate { revision }
        | rev::RevisionError::InvalidTemplate { revision, .. } => revision.clone(),
    };
    SpecError::RevisionData { name, reason: err.to_string() }
}

/// Finds or creates the update revision and finds the current one (upstream's
/// `getActiveRevisions`).
pub(crate) fn resolve<'a>(
    cs: &CloneSet,
    revisions: &'a [ControllerRevision],
) -> Result<Resolved<'a>, SpecError> {
    let mut sorted: Vec<&ControllerRevision> = revisions.iter().collect();
    sorted.sort_by(|a, b| rev::compare_revisions(a, b));
    let sorted: Vec<RevView<'a>> = sorted
        .into_iter()
        .map(|r| RevView { rev: r, name: r.metadata.name.as_deref().unwrap_or_default() })
        .collect();

    let active = rev::resolve_revisions(cs, revisions).map_err(revision_error)?;
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
    let update =
        Revision { name: update_name, template: cs.spec.template.clone(), object: update_object };
    let current = if active.current == update.name {
        update.clone()
    } else {
        let found = sorted.iter().find(|r| r.name == active.current);
        match found {
            Some(r) => Revision {
                name: active.current.clone(),
                template: rev::template_from_revision(r.rev).map_err(revision_error)?,
                object: Some(r.rev.clone()),
            },
            None => update.clone(),
        }
    };
    Ok(Resolved { sorted, current, update, collision_count: active.collision_count, actions })
}

/// Upstream's `truncateHistory` over the planner's pod view; the rule itself is
/// [`crate::revision::history_to_prune`].
pub(crate) fn truncate_history(
    spec: &Spec<'_>,
    sorted: &[RevView<'_>],
    pods: &[PodInfo<'_>],
    current: &str,
    update: &str,
) -> Vec<Action> {
    let limit = usize::try_from(spec.revision_history_limit).unwrap_or(0);
    let names: Vec<&str> = sorted.iter().map(|r| r.name).collect();
    if names.iter().filter(|&&n| n != current && n != update).count() <= limit {
        // Nothing can exceed the limit: skip reading every pod's revision.
        return Vec::new();
    }
    let hashes: BTreeSet<&str> = pods.iter().map(|p| p.revision_hash()).collect();
    rev::history_to_prune(&names, &hashes, current, update, limit)
        .into_iter()
        .map(|name| Action::DeleteRevision { name: name.to_owned() })
        .collect()
}
