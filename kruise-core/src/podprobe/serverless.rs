//! Serverless mode (gate `EnablePodProbeMarkerOnServerless`): pods on virtual-kubelet nodes
//! are probed by their provider, not by kruise-daemon. At creation the pod webhook writes the
//! probes that apply to the pod into its annotation `kruise.io/podprobe` (and the markers they
//! come from into `kruise.io/podprobemarker-list`); the provider runs them and reports each in
//! the pod condition `podConditionType`; the manager turns those conditions into markers.
//!
//! As upstream's step: the probes of the markers that select the pod (or those the pod's
//! `kruise.io/podprobemarker-list` names), in marker-name and spec order, of a container of
//! the pod (or a restartable init container), with a condition type; the first probe of a
//! condition type and of a container's probe name wins; `markerPolicy` is left out.

use std::collections::BTreeSet;

use k8s_openapi::api::core::v1::Pod;
use kruise_api::apps::v1alpha1::{PodContainerProbe, PodProbeMarker, ProbeState};
use kruise_api::well_known::annotations::{POD_PROBE, POD_PROBE_MARKER_LIST};

use super::{MarkerIndex, PodMarks};
use crate::admission::pod_chain::{PodMutationError, PodMutator, PodStep};
use crate::admission::pod_edit::PodEdit;

/// The markers of `pod`: those its `kruise.io/podprobemarker-list` names (that exist), else
/// those whose selector matches it.
pub fn markers_of_pod<'m>(pod: &Pod, markers: &MarkerIndex<'m>) -> Vec<&'m PodProbeMarker> {
    let namespace = pod.metadata.namespace.as_deref().unwrap_or_default();
    let listed =
        crate::pod::annotations_of(pod).get(POD_PROBE_MARKER_LIST).filter(|l| !l.is_empty());
    match listed {
        Some(list) => {
            list.split(',').filter_map(|name| markers.get(namespace, name.trim())).collect()
        }
        None => markers.for_pod(pod),
    }
}

/// The webhook step: the two annotations.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ServerlessProbes {
    /// `kruise.io/podprobe`.
    pub probes: String,
    /// `kruise.io/podprobemarker-list`.
    pub markers: String,
}

/// The step for a pod being created, `None` when no probe applies.
pub fn serverless_step(pod: &Pod, markers: &MarkerIndex<'_>) -> Option<ServerlessProbes> {
    let spec = pod.spec.as_ref()?;
    let mut containers: BTreeSet<&str> = spec.containers.iter().map(|c| c.name.as_str()).collect();
    for init in spec.init_containers.iter().flatten() {
        if init.restart_policy.as_deref() == Some("Always") {
            containers.insert(init.name.as_str());
        }
    }
    let mut kept: Vec<PodContainerProbe> = Vec::new();
    let mut conditions = BTreeSet::new();
    let mut names = BTreeSet::new();
    let mut sources = BTreeSet::new();
    for marker in markers_of_pod(pod, markers) {
        for probe in &marker.spec.probes {
            if probe.pod_condition_type.is_empty()
                || !containers.contains(probe.container_name.as_str())
                || conditions.contains(probe.pod_condition_type.as_str())
                || names.contains(&(probe.container_name.as_str(), probe.name.as_str()))
            {
                continue;
            }
            conditions.insert(probe.pod_condition_type.as_str());
            names.insert((probe.container_name.as_str(), probe.name.as_str()));
            sources.insert(marker.metadata.name.clone().unwrap_or_default());
            kept.push(PodContainerProbe { marker_policy: Vec::new(), ..probe.clone() });
        }
    }
    if kept.is_empty() {
        return None;
    }
    Some(ServerlessProbes {
        probes: serde_json::to_string(&kept).ok()?,
        markers: sources.into_iter().collect::<Vec<_>>().join(","),
    })
}

impl PodMutator for ServerlessProbes {
    fn step(&self) -> PodStep {
        PodStep::PodProbeMarkerServerless
    }

    fn mutate(&self, pod: &mut PodEdit<'_>) -> Result<(), PodMutationError> {
        let notes = pod.annotations_mut().get_or_insert_with(Default::default);
        notes.insert(POD_PROBE.to_owned(), self.probes.clone());
        notes.insert(POD_PROBE_MARKER_LIST.to_owned(), self.markers.clone());
        Ok(())
    }
}

/// The markers of a pod on a virtual-kubelet node, from the conditions its provider set: for
/// each probe of its markers with a condition type and a `markerPolicy`, the policy whose
/// state the condition's status gives is set (`True`: Succeeded, `False`: Failed, otherwise
/// Unknown), the others' keys removed. A probe whose condition is absent changes nothing.
pub fn serverless_marks(pod: &Pod, markers: &MarkerIndex<'_>) -> PodMarks {
    let mut marks = PodMarks::default();
    for marker in markers_of_pod(pod, markers) {
        for probe in &marker.spec.probes {
            if probe.pod_condition_type.is_empty() || probe.marker_policy.is_empty() {
                continue;
            }
            let Some(condition) = crate::pod::condition(pod, &probe.pod_condition_type) else {
                continue;
            };
            let state = match condition.status.as_str() {
                "True" => ProbeState::Succeeded,
                "False" => ProbeState::Failed,
                _ => ProbeState::Unknown,
            };
            for policy in probe.marker_policy.iter().filter(|p| p.state != state) {
                for key in policy.labels.keys() {
                    marks.labels.insert(key.clone(), None);
                }
                for key in policy.annotations.keys() {
                    marks.annotations.insert(key.clone(), None);
                }
            }
            for policy in probe.marker_policy.iter().filter(|p| p.state == state) {
                for (key, value) in &policy.labels {
                    marks.labels.insert(key.clone(), Some(value.clone()));
                }
                for (key, value) in &policy.annotations {
                    marks.annotations.insert(key.clone(), Some(value.clone()));
                }
            }
        }
    }
    marks
}
