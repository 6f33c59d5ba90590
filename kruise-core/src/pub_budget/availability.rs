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

/// `repository@algorithm:hex`, with the repository normalised the way Docker names images
/// (`nginx` and `docker.io/library/nginx` are the same) and any tag dropped.
#[derive(Debug, PartialEq, Eq)]
pub(crate) struct DigestRef<'a> {
    pub(crate) repository: String,
    pub(crate) digest: &'a str,
}

impl<'a> DigestRef<'a> {
    /// `None` when `image` is not pinned by digest, or names no repository (a bare
    /// `sha256:<hex>` as containerd may report).
    pub(crate) fn parse(image: &'a str) -> Option<Self> {
        let (name, digest) = image.rsplit_once('@')?;
        let (algorithm, hex) = digest.split_once(':')?;
        if name.is_empty() || algorithm.is_empty() || hex.is_empty() {
            return None;
        }
        // Drop a tag: a ':' after the last '/' (a ':' before it belongs to a registry port).
        let last_slash = name.rfind('/').map_or(0, |i| i + 1);
        let name = match name[last_slash..].find(':') {
            Some(colon) => &name[..last_slash + colon],
            None => name,
        };
        Some(Self { repository: normalize_repository(name), digest })
    }
}

fn normalize_repository(name: &str) -> String {
    let (domain, rest) = match name.split_once('/') {
        Some((first, rest)) if first.contains(['.', ':']) || first == "localhost" => (first, rest),
        _ => ("docker.io", name),
    };
    let domain = if domain == "index.docker.io" { "docker.io" } else { domain };
    if domain == "docker.io" && !rest.contains('/') {
        format!("docker.io/library/{rest}")
    } else {
        format!("{domain}/{rest}")
    }
}
