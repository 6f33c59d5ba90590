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
//! - the DaemonSet's first revision gets nothing, as no pod runs an older one (upstream creates
//!   a job that selects no pod, deleted once the status catches up);
//! - with no partition and a `maxUnavailable` (default 1) covering every desired pod, the
//!   update is one batch: the revision is labelled ignored and no job is made;
//! - otherwise one job per container whose image differs from (or is missing in) an older
//!   revision, named `<revision>-<container>`, then the revision is labelled created.
//!
//! What is done once decided is shared with the CloneSet ([`crate::workload::predownload`]).

use k8s_openapi::api::apps::v1::ControllerRevision;
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;
use kruise_api::apps::v1beta1::DaemonSet;
use kruise_api::well_known::labels;

use crate::intstr::{Rounding, scaled_value};
use crate::workload::predownload as shared;
use crate::workload::{Action, Event};

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
        actions.extend(shared::delete_jobs(input.jobs));
        return;
    }
    // A first revision has no older pods to pull onto. Upstream still makes a job, which
    // selects no pod until the status catches up and deletes it.
    if shared::handled(input.update) || input.old.is_empty() {
        return;
    }
    let revision_name = input.update.metadata.name.as_deref().unwrap_or_default();

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
        actions.push(shared::mark(revision_name, labels::IMAGE_PREDOWNLOAD_IGNORED));
        return;
    }

    let settings = shared::PullSettings::from_annotations(ds.metadata.annotations.as_ref());
    let owner = shared::Owner {
        kind: "DaemonSet",
        metadata: &ds.metadata,
        template: &ds.spec.template,
        selector: ds.spec.selector.as_ref(),
    };
    shared::create_jobs(
        &owner,
        &settings,
        &input.old,
        input.update,
        input.hash,
        input.jobs,
        actions,
        events,
    );
}
