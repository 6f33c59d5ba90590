//! The current and update revisions of a CloneSet, and its revision history, on top of
//! [`crate::revision`].

use std::collections::BTreeSet;

use k8s_openapi::api::apps::v1::ControllerRevision;
use kruise_api::apps::v1beta1::CloneSet;

use super::SpecError;
use super::podinfo::PodInfo;
use super::spec::Spec;
use crate::revision as rev;
use crate::workload::Action;
pub(crate) use crate::workload::revisions::{Resolved, RevView, Revision};

fn revision_error(err: rev::RevisionError) -> SpecError {
    let name = match &err {
        rev::RevisionError::EncodeTemplate { workload, .. } => workload.clone(),
        rev::RevisionError::MissingTemplate { revision }
        | rev::RevisionError::InvalidTemplate { revision, .. } => revision.clone(),
    };
    SpecError::RevisionData { name, reason: err.to_string() }
}

/// The workload layer's [`resolve`](crate::workload::revisions::resolve), with errors as the
/// CloneSet planner reports them.
pub(crate) fn resolve<'a>(
    cs: &CloneSet,
    revisions: &'a [ControllerRevision],
) -> Result<Resolved<'a>, SpecError> {
    crate::workload::revisions::resolve(cs, revisions).map_err(revision_error)
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
