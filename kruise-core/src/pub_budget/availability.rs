//! Whether a pod counts as available for a budget.
//!
//! Upstream asks two questions: is the pod ready (`IsPodReady`: running, `Ready`, not being
//! deleted, no `unavailable-pod.kruise.io/` label) and is its state consistent
//! (`IsPodStateConsistent`: no in-place update in progress, containers run the image the spec
//! names). Both must hold for the pod to count in `currentAvailable`, and the webhook lets
//! operations on pods failing either through without charging the budget.
//!
//! Digest-pinned images (openkruise/kruise#2570). Upstream compares a container's
//! `image: repo@sha256:<manifest>` with the `imageID` the runtime reports, and treats any
//! difference as "inconsistent". containerd may report the image *config* digest, bare
//! (`sha256:<config>`), which never equals the manifest digest; such pods were counted as
//! unavailable forever and their deletions were never checked. Here an `imageID` is evidence
//! of a mismatch only when it names the same repository with another digest; a bare digest (or
//! any form without a repository) says nothing, and the in-place update record decides. The
//! in-place check also always runs, even when every image is digest-pinned, so a pod in the
//! middle of an in-place update is never counted as available.
//!
//! Not covered: upstream also waits for SidecarSet in-place sidecar updates to finish; that
//! needs SidecarSet state this crate does not model yet.

use k8s_openapi::api::core::v1::Pod;

use super::PubGates;
use crate::image::DigestRef;
use crate::inplace::{UpdateOptions, check_in_place_update_completed};
use crate::pod::{has_unavailable_label, is_running_and_ready, is_terminating};

/// Upstream's `IsPodReady` for budgets: running and `Ready`, not being deleted, and no
/// `unavailable-pod.kruise.io/` label.
pub fn is_pod_ready_for_budget(pod: &Pod) -> bool {
    is_running_and_ready(pod)
        && !is_terminating(pod)
        && !pod.metadata.labels.as_ref().is_some_and(has_unavailable_label)
}

/// Upstream's `IsPodStateConsistent`, with digest-pinned images compared correctly: no
/// digest-pinned container visibly runs another digest of its repository, and no in-place
/// update is in progress.
pub fn is_pod_state_consistent(pod: &Pod, gates: &PubGates) -> bool {
    let containers = pod.spec.as_ref().map(|s| s.containers.as_slice()).unwrap_or(&[]);
    let statuses = pod.status.as_ref().and_then(|s| s.container_statuses.as_deref()).unwrap_or(&[]);
    for container in containers {
        let Some(pinned) = container.image.as_deref().and_then(DigestRef::parse) else {
            continue;
        };
        let Some(status) = statuses.iter().find(|s| s.name == container.name) else {
            // A digest-pinned container without status has not started (upstream: inconsistent).
            return false;
        };
        let reported =
            status.image_id.split_once("://").map_or(status.image_id.as_str(), |(_, id)| id);
        if let Some(running) = DigestRef::parse(reported)
            && running.repository == pinned.repository
            && running.digest != pinned.digest
        {
            return false;
        }
    }
    let opts = UpdateOptions {
        vertical_scaling: gates.in_place_workload_vertical_scaling,
        ..UpdateOptions::default()
    };
    check_in_place_update_completed(pod, &opts).is_ok()
}

/// Whether the pod counts as available for a budget: [`is_pod_ready_for_budget`] and
/// [`is_pod_state_consistent`].
pub fn is_available_for_budget(pod: &Pod, gates: &PubGates) -> bool {
    is_pod_ready_for_budget(pod) && is_pod_state_consistent(pod, gates)
}
