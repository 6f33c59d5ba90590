//! Lifecycle transitions (from [`crate::lifecycle`]) turned into actions.

use crate::lifecycle::LifecycleTransition;

use super::plan::{Action, Patch, PodPatchPurpose, PodStatusPurpose};
use super::podinfo::PodInfo;

/// Appends the actions of `transition` for `pod`: the `KruisePodReady` status change first,
/// then the metadata patch. Returns whether the state label changes.
pub(crate) fn push(
    actions: &mut Vec<Action>,
    pod: &PodInfo<'_>,
    transition: LifecycleTransition,
) -> bool {
    if let Some(readiness) = &transition.readiness {
        actions.push(Action::PatchPodStatus {
            name: pod.name().to_owned(),
            uid: pod.uid().to_owned(),
            purpose: PodStatusPurpose::KruisePodReady,
            patch: Patch::strategic(readiness.to_status_patch()),
        });
    }
    match &transition.patch {
        Some(patch) => {
            actions.push(Action::PatchPod {
                name: pod.name().to_owned(),
                uid: pod.uid().to_owned(),
                purpose: PodPatchPurpose::Lifecycle,
                patch: Patch::strategic(patch.to_strategic_merge_patch()),
            });
            true
        }
        None => false,
    }
}
