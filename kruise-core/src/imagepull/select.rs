//! Which nodes a job pulls on.

use std::collections::{BTreeMap, BTreeSet};

use k8s_openapi::api::core::v1::Pod;
use kruise_api::apps::v1beta1::{ImagePullJob, NodeImage};

use super::ImagePullError;
use crate::admission::meta::label_selector_as_selector;
use crate::pod::is_pod_active;

/// The names of the NodeImages (one per node, named after it) the job pulls on, as upstream's
/// `GetNodeImagesForJob` finds them:
///
/// - `podSelector`: the nodes of the active, scheduled pods of the job's namespace that match
///   it, in the order of `pods` (the caller sorts them, e.g. by the owner's update order),
///   each once, when the node has a NodeImage;
/// - `selector.names`: those names that have a NodeImage, in the order given;
/// - `selector` labels: the NodeImages whose labels (the node's) match, by name;
/// - neither: every NodeImage, by name.
pub fn select_nodes(
    job: &ImagePullJob,
    node_images: &[NodeImage],
    pods: &[Pod],
) -> Result<Vec<String>, ImagePullError> {
    let exists: BTreeSet<&str> =
        node_images.iter().filter_map(|n| n.metadata.name.as_deref()).collect();
    let template = &job.spec.template;
    if let Some(pod_selector) = &template.pod_selector {
        let selector = label_selector_as_selector(Some(&pod_selector.label_selector))
            .map_err(|message| ImagePullError::InvalidSelector { field: "podSelector", message })?;
        let namespace = job.metadata.namespace.as_deref().unwrap_or_default();
        let empty = Default::default();
        let mut seen = BTreeSet::new();
        let mut names = Vec::new();
        for pod in pods {
            if pod.metadata.namespace.as_deref().unwrap_or_default() != namespace
                || !is_pod_active(pod)
                || !selector.matches(pod.metadata.labels.as_ref().unwrap_or(&empty))
            {
                continue;
            }
            let node = pod.spec.as_ref().and_then(|s| s.node_name.as_deref()).unwrap_or_default();
            if node.is_empty() || !seen.insert(node) || !exists.contains(node) {
                continue;
            }
            names.push(node.to_owned());
        }
        return Ok(names);
    }
    let Some(node_selector) = &template.selector else {
        return Ok(exists.into_iter().map(str::to_owned).collect());
    };
    if !node_selector.names.is_empty() {
        return Ok(node_selector
            .names
            .iter()
            .filter(|n| exists.contains(n.as_str()))
            .cloned()
            .collect());
    }
    let selector = label_selector_as_selector(Some(&node_selector.label_selector))
        .map_err(|message| ImagePullError::InvalidSelector { field: "selector", message })?;
    let empty = Default::default();
    let mut names: Vec<String> = node_images
        .iter()
        .filter(|n| selector.matches(n.metadata.labels.as_ref().unwrap_or(&empty)))
        .filter_map(|n| n.metadata.name.clone())
        .collect();
    names.sort();
    names.dedup();
    Ok(names)
}

/// What a pod event tells the `podSelector` jobs: the pod's labels and node (empty until it is
/// scheduled), before or after the change.
#[derive(Clone, Copy, Debug)]
pub struct PodPlacement<'a> {
    /// The pod's labels.
    pub labels: &'a BTreeMap<String, String>,
    /// `spec.nodeName`; empty while unscheduled.
    pub node: &'a str,
    /// Whether `metadata.deletionTimestamp` is set.
    pub deleting: bool,
}

/// Which of `jobs` (the active ones of the pod's namespace) a pod event may give or take a node,
/// as upstream's pod event handler decides:
///
/// - an unscheduled pod (after the event) concerns no job;
/// - a created or deleted pod, or one being deleted, concerns the `podSelector` jobs matching
///   its labels;
/// - a pod just scheduled concerns those matching its new labels;
/// - otherwise a change of labels concerns the jobs that match the pod before or after, not
///   both (a changed node alone concerns none, as upstream's).
///
/// Jobs without a `podSelector`, finished ones (`completionTime` set) and ones whose selector
/// does not parse are never returned. In `jobs`' order.
pub fn pod_selector_jobs_to_wake<'a>(
    old: Option<PodPlacement<'_>>,
    new: Option<PodPlacement<'_>>,
    jobs: impl IntoIterator<Item = &'a ImagePullJob>,
) -> Vec<&'a ImagePullJob> {
    let matching = |pod: &PodPlacement<'_>, job: &ImagePullJob| {
        let Some(pod_selector) = &job.spec.template.pod_selector else {
            return false;
        };
        label_selector_as_selector(Some(&pod_selector.label_selector))
            .is_ok_and(|selector| selector.matches(pod.labels))
    };
    let active = jobs
        .into_iter()
        .filter(|j| j.spec.template.pod_selector.is_some())
        .filter(|j| j.status.as_ref().is_none_or(|s| s.completion_time.is_none()));
    match (old, new) {
        (_, Some(new)) if new.node.is_empty() => Vec::new(),
        (Some(old), Some(new)) if !new.deleting && !old.node.is_empty() => {
            if old.labels == new.labels {
                return Vec::new();
            }
            active.filter(|j| matching(&old, j) != matching(&new, j)).collect()
        }
        (_, Some(pod)) | (Some(pod), None) => {
            if pod.node.is_empty() {
                return Vec::new();
            }
            active.filter(|j| matching(&pod, j)).collect()
        }
        (None, None) => Vec::new(),
    }
}
