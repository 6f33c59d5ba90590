//! The pod mutating webhook (`/mutate-pod`, pod CREATE) as one chain of steps, in upstream's
//! order.
//!
//! Every feature that changes pods at creation adds a [`PodMutator`] for its [`PodStep`];
//! [`PodChain`] runs the ones it is given in upstream's order, whatever order they are passed
//! in, and no step knows the others. Each step is pure: what it needs from the cluster (the
//! SidecarSets or the PodUnavailableBudget covering the pod, ...) is looked up by the caller
//! and given to the step when it is built. Steps change the pod through a [`PodEdit`], which
//! records what they changed, and the webhook's JSON patch is written from that record
//! ([`PodEdit::patch`]).
//!
//! The steps come with their features (the SidecarSet step is
//! `crate::sidecarset::SidecarSetInjection`, the PodUnavailableBudget step
//! `crate::pub_budget::PubAnnotation`): this module, in the base layer, knows none of them.

use k8s_openapi::api::core::v1::Pod;

use super::pod_edit::PodEdit;

/// The steps of the pod mutating webhook, in the order upstream runs them.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
#[non_exhaustive]
pub enum PodStep {
    /// The `KruisePodReady` readiness gate.
    ReadinessGate,
    /// WorkloadSpread's subset.
    WorkloadSpread,
    /// SidecarSet injection.
    SidecarSet,
    /// Container launch priority.
    ContainerLaunchPriority,
    /// The PodUnavailableBudget covering the pod (`pub.kruise.io/related-pub`).
    PubAnnotation,
    /// PersistentPodState's node affinity.
    PersistentPodState,
    /// The enhanced liveness probe.
    EnhancedLiveness,
    /// PodProbeMarker's probes for a serverless provider (`kruise.io/podprobe`).
    PodProbeMarkerServerless,
}

/// Why a step could not mutate a pod; the webhook answers 500 with it, as upstream does.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum PodMutationError {
    /// A step refused the pod.
    #[error("{step:?}: {message}")]
    Step {
        /// The step.
        step: PodStep,
        /// Why.
        message: String,
    },
}

/// One feature's change to a pod at creation.
pub trait PodMutator {
    /// Where the step runs in the chain.
    fn step(&self) -> PodStep;

    /// Changes the pod through `pod`, which records what changed.
    ///
    /// # Errors
    /// When the pod cannot be admitted as the feature wants it.
    fn mutate(&self, pod: &mut PodEdit<'_>) -> Result<(), PodMutationError>;
}

/// The steps to run for one pod, in upstream's order.
pub struct PodChain<'a> {
    steps: Vec<&'a dyn PodMutator>,
}

impl std::fmt::Debug for PodChain<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let steps: Vec<PodStep> = self.steps.iter().map(|s| s.step()).collect();
        f.debug_struct("PodChain").field("steps", &steps).finish()
    }
}

impl<'a> PodChain<'a> {
    /// A chain of `steps`, put in upstream's order (steps of the same kind keep theirs).
    pub fn new(mut steps: Vec<&'a dyn PodMutator>) -> Self {
        steps.sort_by_key(|s| s.step());
        Self { steps }
    }

    /// Runs every step on `pod`: the edit records what they changed, and its
    /// [`PodEdit::patch`] is the webhook's answer.
    ///
    /// # Errors
    /// The first step that fails stops the chain; the pod may then hold the changes of the
    /// steps before it.
    pub fn run<'p>(&self, pod: &'p mut Pod) -> Result<PodEdit<'p>, PodMutationError> {
        let mut edit = PodEdit::new(pod);
        for step in &self.steps {
            step.mutate(&mut edit)?;
        }
        Ok(edit)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Runs `chain` on a copy of `pod`: the pod after the chain, when its patch is not empty.
    /// Checks that the patch turns the pod's JSON into the changed pod's.
    fn run(chain: &PodChain<'_>, pod: &Pod) -> Result<Option<Pod>, PodMutationError> {
        let mut after = pod.clone();
        let patch = chain.run(&mut after)?.patch().expect("encodes");
        let mut doc = serde_json::to_value(pod).expect("json");
        if let Some(text) = &patch {
            let ops: json_patch::Patch = serde_json::from_slice(text).expect("a JSON patch");
            json_patch::patch(&mut doc, &ops).expect("applies");
        }
        assert_eq!(doc, serde_json::to_value(&after).expect("json"));
        Ok(patch.map(|_| after))
    }

    /// A step that records its place by appending to an annotation.
    struct Marker(PodStep, &'static str);

    impl PodMutator for Marker {
        fn step(&self) -> PodStep {
            self.0
        }

        fn mutate(&self, pod: &mut PodEdit<'_>) -> Result<(), PodMutationError> {
            let notes = pod.annotations_mut().get_or_insert_with(Default::default);
            notes.entry("order".into()).or_default().push_str(self.1);
            Ok(())
        }
    }

    #[test]
    fn steps_run_in_upstreams_order_whatever_order_they_come_in() {
        let late = Marker(PodStep::EnhancedLiveness, "c");
        let early = Marker(PodStep::ReadinessGate, "a");
        let middle = Marker(PodStep::SidecarSet, "b");
        let chain = PodChain::new(vec![&late, &early, &middle]);
        let pod = run(&chain, &Pod::default()).expect("runs").expect("changed");
        assert_eq!(pod.metadata.annotations.expect("notes")["order"], "abc");
    }
}
