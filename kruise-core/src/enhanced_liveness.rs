//! The enhanced liveness probe's webhook step (gate `EnhancedLivenessProbe`): a pod that asks
//! for it (`apps.kruise.io/using-enhanced-liveness: "true"`) and that a Kruise workload
//! controls has its containers' liveness probes taken out of the spec, so the kubelet does not
//! restart the containers itself, and saved in the annotation
//! `apps.kruise.io/container-probe-context` as `[{"name": <container>, "livenessProbe":
//! <probe>}]`, as upstream's webhook does. [`probe_context`] reads the annotation back for
//! whatever runs the probes instead.

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::{Pod, Probe};
use kruise_api::well_known::annotations::{CONTAINER_PROBE_CONTEXT, USING_ENHANCED_LIVENESS};
use serde::{Deserialize, Serialize};

use crate::admission::pod_chain::{PodMutationError, PodMutator, PodStep};
use crate::admission::pod_edit::PodEdit;

/// One container's saved liveness probe.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ContainerLivenessProbe {
    /// The container.
    pub name: String,
    /// Its liveness probe as the pod was created with it.
    pub liveness_probe: Probe,
}

/// Why a pod's probe context cannot be read.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ProbeContextError {
    /// The annotation is not the JSON list the webhook writes.
    #[error("metadata.annotations[{CONTAINER_PROBE_CONTEXT}]: Invalid value: {source}")]
    Invalid {
        /// What the parser said.
        #[source]
        source: serde_json::Error,
    },
}

/// Whether the pod asks for the enhanced liveness probe.
pub fn asks(pod: &Pod) -> bool {
    pod.metadata
        .annotations
        .as_ref()
        .and_then(|a| a.get(USING_ENHANCED_LIVENESS))
        .is_some_and(|v| v == "true")
}

/// The saved probes of `pod`, by container name; empty when it has none.
///
/// # Errors
/// An annotation that is not the list the webhook writes, naming the annotation.
pub fn probe_context(pod: &Pod) -> Result<BTreeMap<String, Probe>, ProbeContextError> {
    let Some(text) = pod.metadata.annotations.as_ref().and_then(|a| a.get(CONTAINER_PROBE_CONTEXT))
    else {
        return Ok(BTreeMap::new());
    };
    let list: Vec<ContainerLivenessProbe> =
        serde_json::from_str(text).map_err(|source| ProbeContextError::Invalid { source })?;
    Ok(list.into_iter().map(|c| (c.name, c.liveness_probe)).collect())
}

/// The pod webhook's enhanced-liveness step.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct EnhancedLivenessStep;

impl PodMutator for EnhancedLivenessStep {
    fn step(&self) -> PodStep {
        PodStep::EnhancedLiveness
    }

    fn mutate(&self, pod: &mut PodEdit<'_>) -> Result<(), PodMutationError> {
        if !asks(pod.pod()) || !crate::readiness::owned_by_kruise(pod.pod()) {
            return Ok(());
        }
        let has_probe = pod
            .pod()
            .spec
            .iter()
            .flat_map(|s| s.containers.iter())
            .any(|c| c.liveness_probe.is_some());
        if !has_probe {
            return Ok(());
        }
        let mut saved = Vec::new();
        for container in pod.containers_mut() {
            if let Some(probe) = container.liveness_probe.take() {
                saved.push(ContainerLivenessProbe {
                    name: container.name.clone(),
                    liveness_probe: probe,
                });
            }
        }
        let text = serde_json::to_string(&saved).map_err(|e| PodMutationError::Step {
            step: PodStep::EnhancedLiveness,
            message: format!("encoding the liveness probes: {e}"),
        })?;
        pod.annotations_mut()
            .get_or_insert_with(Default::default)
            .insert(CONTAINER_PROBE_CONTEXT.to_owned(), text);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::admission::pod_chain::PodChain;
    use serde_json::json;

    fn pod(annotations: serde_json::Value, owner: &str) -> Pod {
        serde_json::from_value(json!({
            "metadata": {
                "name": "p",
                "annotations": annotations,
                "ownerReferences": [{"apiVersion": owner, "kind": "CloneSet", "name": "c", "uid": "u", "controller": true}],
            },
            "spec": {"containers": [
                {"name": "main", "livenessProbe": {"httpGet": {"path": "/healthz", "port": 8080}, "failureThreshold": 3}},
                {"name": "side"},
            ]},
        }))
        .expect("a pod")
    }

    fn run(p: &mut Pod) -> Option<Vec<u8>> {
        let step = EnhancedLivenessStep;
        PodChain::new(vec![&step]).run(p).expect("runs").patch().expect("encodes")
    }

    #[test]
    fn the_probe_moves_into_the_annotation() {
        let mut p = pod(
            json!({"apps.kruise.io/using-enhanced-liveness": "true"}),
            "apps.kruise.io/v1alpha1",
        );
        assert!(run(&mut p).is_some());
        let spec = p.spec.as_ref().expect("spec");
        assert!(spec.containers.iter().all(|c| c.liveness_probe.is_none()));
        let saved = probe_context(&p).expect("parses");
        assert_eq!(saved.len(), 1);
        let probe = &saved["main"];
        assert_eq!(probe.failure_threshold, Some(3));
        assert_eq!(probe.http_get.as_ref().map(|h| h.path.as_deref()), Some(Some("/healthz")));
        let text = &p.metadata.annotations.as_ref().expect("notes")[CONTAINER_PROBE_CONTEXT];
        let value: serde_json::Value = serde_json::from_str(text).expect("json");
        assert_eq!(value[0]["name"], "main");
        assert_eq!(value[0]["livenessProbe"]["httpGet"]["port"], 8080);
    }

    #[test]
    fn other_pods_are_left_alone() {
        for (notes, owner) in [
            (json!({}), "apps.kruise.io/v1alpha1"),
            (json!({"apps.kruise.io/using-enhanced-liveness": "yes"}), "apps.kruise.io/v1alpha1"),
            (json!({"apps.kruise.io/using-enhanced-liveness": "true"}), "apps/v1"),
        ] {
            let mut p = pod(notes, owner);
            assert_eq!(run(&mut p), None);
            assert!(p.spec.as_ref().expect("spec").containers[0].liveness_probe.is_some());
        }
    }

    #[test]
    fn a_bad_context_is_an_error_naming_the_annotation() {
        let p = pod(json!({CONTAINER_PROBE_CONTEXT: "{not json"}), "apps.kruise.io/v1alpha1");
        let err = probe_context(&p).expect_err("refused").to_string();
        assert!(
            err.starts_with(
                "metadata.annotations[apps.kruise.io/container-probe-context]: Invalid value"
            ),
            "{err}"
        );
        let none = pod(json!({}), "apps.kruise.io/v1alpha1");
        assert!(probe_context(&none).expect("no context").is_empty());
    }
}
