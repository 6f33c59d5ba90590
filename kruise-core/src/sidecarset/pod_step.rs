//! The SidecarSet step of the pod mutating webhook
//! ([`PodChain`](crate::admission::pod_chain::PodChain)).

use std::collections::BTreeMap;

use crate::admission::pod_chain::{PodMutationError, PodMutator, PodStep};
use crate::admission::pod_edit::PodEdit;

use super::{InjectionGates, SidecarSetCandidate, inject_edit};

/// The SidecarSet step: injects the sidecars of the SidecarSets selecting the pod (see
/// [`crate::sidecarset`]). A pod that cannot be injected is refused with the reason.
#[derive(Clone, Debug, PartialEq)]
pub struct SidecarSetInjection {
    /// Labels of the pod's namespace (`None`: unknown).
    pub namespace_labels: Option<BTreeMap<String, String>>,
    /// The SidecarSets that may select the pod, with their revisions.
    pub sidecar_sets: Vec<SidecarSetCandidate>,
    /// Feature gates.
    pub gates: InjectionGates,
    /// The time recorded in the hash annotations.
    pub now: jiff::Timestamp,
}

impl PodMutator for SidecarSetInjection {
    fn step(&self) -> PodStep {
        PodStep::SidecarSet
    }

    fn mutate(&self, pod: &mut PodEdit<'_>) -> Result<(), PodMutationError> {
        inject_edit(pod, self.namespace_labels.as_ref(), &self.sidecar_sets, self.gates, self.now)
            .map_err(|err| PodMutationError::Step {
                step: PodStep::SidecarSet,
                message: err.to_string(),
            })?;
        Ok(())
    }
}
