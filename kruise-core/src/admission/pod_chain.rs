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
//! Steps here: [`SidecarSetInjection`], [`PubAnnotation`]. The other steps come with their
//! features.

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::Pod;
use kruise_api::well_known::annotations;

use super::pod_edit::PodEdit;
use crate::sidecarset::{InjectionGates, SidecarSetCandidate, inject_edit};

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

    #[test]
    fn the_sidecarset_step_injects_and_refuses_with_the_reason() {
        use k8s_openapi::api::core::v1::{Container, PodSpec};
        use k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector;
        use kruise_api::apps::v1beta1::{SidecarContainer, SidecarSet, SidecarSetSpec};

        let set = |name: &str| SidecarSetCandidate {
            sidecar_set: std::sync::Arc::new(SidecarSet::new(
                name,
                SidecarSetSpec {
                    selector: Some(LabelSelector {
                        match_labels: Some([("app".to_owned(), "web".to_owned())].into()),
                        ..Default::default()
                    }),
                    containers: vec![SidecarContainer {
                        container: Container {
                            name: "mesh".into(),
                            image: Some("mesh:1".into()),
                            ..Default::default()
                        },
                        ..Default::default()
                    }],
                    ..Default::default()
                },
            )),
            revisions: Vec::new(),
            draw: 0.0,
            selectors: None,
        };
        let mut pod = Pod::default();
        pod.metadata.labels = Some([("app".to_owned(), "web".to_owned())].into());
        pod.spec = Some(PodSpec {
            containers: vec![Container { name: "app".into(), ..Default::default() }],
            ..Default::default()
        });
        let step = SidecarSetInjection {
            namespace_labels: None,
            sidecar_sets: vec![set("mesh-set")],
            gates: InjectionGates::default(),
            now: "2024-05-01T10:00:00Z".parse().expect("time"),
        };
        let pub_step = PubAnnotation { covering: Some("web-pub".into()), label: None };
        let chain = PodChain::new(vec![&pub_step, &step]);
        let out = run(&chain, &pod).expect("runs").expect("changed");
        let names: Vec<&str> =
            out.spec.as_ref().expect("spec").containers.iter().map(|c| c.name.as_str()).collect();
        assert_eq!(names, ["mesh", "app"]);
        assert!(
            out.metadata
                .annotations
                .as_ref()
                .expect("notes")
                .contains_key(annotations::PUB_RELATED_PUB)
        );
        // Idempotent through the whole chain.
        assert!(run(&chain, &out).expect("runs").is_none());
        // Two SidecarSets injecting `mesh`: refused at the SidecarSet step.
        let clash = SidecarSetInjection { sidecar_sets: vec![set("a"), set("b")], ..step.clone() };
        let err = run(&PodChain::new(vec![&clash]), &pod).expect_err("refused");
        assert_eq!(
            err.to_string(),
            "SidecarSet: container mesh would be injected by both sidecarSet a and sidecarSet b"
        );
    }

    #[test]
    fn the_pub_step_names_the_budget_and_labels_the_pod_once() {
        let step = PubAnnotation {
            covering: Some("web-pub".into()),
            label: Some(("pub.kruise.io/protected".into(), "true".into())),
        };
        let chain = PodChain::new(vec![&step]);
        let pod = run(&chain, &Pod::default()).expect("runs").expect("changed");
        let notes = pod.metadata.annotations.clone().expect("notes");
        assert_eq!(notes[annotations::PUB_RELATED_PUB], "web-pub");
        assert_eq!(notes[annotations::PUB_RELATED_PUB_LEGACY], "web-pub");
        assert_eq!(pod.metadata.labels.clone().expect("labels")["pub.kruise.io/protected"], "true");
        // Idempotent: a second run changes nothing.
        assert!(run(&chain, &pod).expect("runs").is_none());
        // No covering budget: nothing.
        let none = PubAnnotation { covering: None, label: None };
        assert!(run(&PodChain::new(vec![&none]), &Pod::default()).expect("runs").is_none());
    }
}
