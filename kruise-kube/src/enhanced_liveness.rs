//! The enhanced liveness probe's pod webhook step (gate `EnhancedLivenessProbe`), over
//! kruise-core's [`kruise_core::enhanced_liveness`]: a Kruise-owned pod asking for it has its
//! liveness probes moved into `apps.kruise.io/container-probe-context`. Under
//! `--pod-webhook-scope=selected` it asks for the pods with the annotation, by a CEL match
//! condition.
//!
//! Not done (beyond upstream, which built only this step): nothing runs the saved probes yet,
//! so such a pod has no liveness probing at all; see `docs/pod-readiness.md`.

use kruise_core::admission::pod_scope::PodScopeTerm;

use crate::admission::pod_feature::{PodStepBox, StatelessPodFeature};

/// The CEL match condition of its webhook entry: the pods that ask for it.
pub const MATCH_CONDITION: &str = "has(object.metadata.annotations) && \
     'apps.kruise.io/using-enhanced-liveness' in object.metadata.annotations && \
     object.metadata.annotations['apps.kruise.io/using-enhanced-liveness'] == 'true'";

/// The feature.
pub fn enhanced_liveness_feature() -> StatelessPodFeature {
    StatelessPodFeature {
        name: "EnhancedLivenessProbe",
        step: Box::new(|pod| {
            kruise_core::enhanced_liveness::asks(pod).then(|| {
                Box::new(kruise_core::enhanced_liveness::EnhancedLivenessStep) as PodStepBox
            })
        }),
        scope: vec![
            PodScopeTerm::everything().with_condition("enhanced-liveness", MATCH_CONDITION),
        ],
    }
}
