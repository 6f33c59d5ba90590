//! The PodUnavailableBudget step of the pod mutating webhook
//! ([`PodChain`](crate::admission::pod_chain::PodChain)).

use kruise_api::well_known::annotations;

use crate::admission::pod_chain::{PodMutationError, PodMutator, PodStep};
use crate::admission::pod_edit::PodEdit;

/// The PodUnavailableBudget step: names the budget covering the pod in
/// `pub.kruise.io/related-pub` (and the older `kruise.io/related-pub`), and adds `label` so
/// that the pod validating webhook's `objectSelector` reaches the pod (see the PUB docs).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PubAnnotation {
    /// The covering budget's name; `None` leaves the pod alone.
    pub covering: Option<String>,
    /// A label `(key, value)` that marks pods a budget covers, if any.
    pub label: Option<(String, String)>,
}

impl PodMutator for PubAnnotation {
    fn step(&self) -> PodStep {
        PodStep::PubAnnotation
    }

    fn mutate(&self, pod: &mut PodEdit<'_>) -> Result<(), PodMutationError> {
        let Some(name) = &self.covering else { return Ok(()) };
        let notes = pod.annotations_mut().get_or_insert_with(Default::default);
        for key in [annotations::PUB_RELATED_PUB, annotations::PUB_RELATED_PUB_LEGACY] {
            if notes.get(key) != Some(name) {
                notes.insert(key.to_owned(), name.clone());
            }
        }
        if let Some((key, value)) = &self.label {
            let labels = pod.labels_mut().get_or_insert_with(Default::default);
            if labels.get(key) != Some(value) {
                labels.insert(key.clone(), value.clone());
            }
        }
        Ok(())
    }
}
