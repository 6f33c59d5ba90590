//! NodePodProbe (apps.kruise.io/v1alpha1, cluster-scoped): one object per node listing the
//! custom probes kruise-daemon runs there for PodProbeMarkers, and their latest results.

use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use kube::CustomResource;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::podprobemarker::{ContainerProbeSpec, ProbeState};

/// The probes to run on one node.
#[derive(CustomResource, Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[kube(
    group = "apps.kruise.io",
    version = "v1alpha1",
    kind = "NodePodProbe",
    plural = "nodepodprobes",
    singular = "nodepodprobe",
    status = "NodePodProbeStatus",
    storage = true,
    derive = "PartialEq",
    derive = "Default",
    doc = "NodePodProbe holds the custom pod probes of one node and their results."
)]
#[serde(rename_all = "camelCase")]
pub struct NodePodProbeSpec {
    /// Pods on the node and the probes for each.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub pod_probes: Vec<PodProbe>,
}

/// The probes for one pod.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct PodProbe {
    /// Pod name.
    #[serde(default)]
    pub name: String,
    /// Pod namespace.
    #[serde(default)]
    pub namespace: String,
    /// Pod UID.
    #[serde(default)]
    pub uid: String,
    /// Pod IP.
    #[serde(rename = "IP", default)]
    pub ip: String,
    /// The container probes.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub probes: Vec<ContainerProbe>,
}

/// One probe against one container.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ContainerProbe {
    /// `<PodProbeMarker name>#<probe name>`.
    #[serde(default)]
    pub name: String,
    /// The container probed.
    #[serde(default)]
    pub container_name: String,
    /// How to probe.
    #[serde(default)]
    pub probe: ContainerProbeSpec,
}

/// Probe results on one node.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct NodePodProbeStatus {
    /// Results per pod.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub pod_probe_statuses: Vec<PodProbeStatus>,
}

/// Probe results for one pod.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct PodProbeStatus {
    /// Pod name.
    #[serde(default)]
    pub name: String,
    /// Pod namespace.
    #[serde(default)]
    pub namespace: String,
    /// Pod UID.
    #[serde(default)]
    pub uid: String,
    /// Result of each probe.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub probe_states: Vec<ContainerProbeState>,
}

/// The latest result of one container probe.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ContainerProbeState {
    /// `<PodProbeMarker name>#<probe name>`.
    #[serde(default)]
    pub name: String,
    /// Probe outcome.
    #[serde(default)]
    pub state: ProbeState,
    /// When the probe last ran.
    #[serde(default)]
    pub last_probe_time: Option<Time>,
    /// When the outcome last changed.
    #[serde(default)]
    pub last_transition_time: Option<Time>,
    /// Probe output on success, or the error on failure.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub message: String,
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn node_probe_round_trips() {
        let doc = json!({
            "apiVersion": "apps.kruise.io/v1alpha1",
            "kind": "NodePodProbe",
            "metadata": {"name": "node-1"},
            "spec": {
                "podProbes": [{
                    "name": "game-server-0",
                    "namespace": "ns",
                    "uid": "0d0b6c9e-1111-2222-3333-444455556666",
                    "IP": "10.0.0.12",
                    "probes": [{
                        "name": "game-server-probe#Idle",
                        "containerName": "game-server",
                        "probe": {"tcpSocket": {"port": 8080}, "periodSeconds": 10}
                    }]
                }]
            },
            "status": {
                "podProbeStatuses": [{
                    "name": "game-server-0",
                    "namespace": "ns",
                    "uid": "0d0b6c9e-1111-2222-3333-444455556666",
                    "probeStates": [{
                        "name": "game-server-probe#Idle",
                        "state": "Succeeded",
                        "lastProbeTime": "2024-01-01T00:00:00Z",
                        "lastTransitionTime": "2024-01-01T00:00:00Z",
                        "message": "idle"
                    }]
                }]
            }
        });
        let probe: NodePodProbe = serde_json::from_value(doc.clone()).expect("decode");
        assert_eq!(probe.spec.pod_probes[0].ip, "10.0.0.12");
        let status = probe.status.as_ref().expect("status");
        assert_eq!(status.pod_probe_statuses[0].probe_states[0].state, ProbeState::Succeeded);
        assert_eq!(serde_json::to_value(&probe).expect("encode"), doc);
    }

    #[test]
    fn empty_items_write_go_zero_values() {
        assert_eq!(
            serde_json::to_value(PodProbe::default()).expect("encode"),
            json!({"name": "", "namespace": "", "uid": "", "IP": ""})
        );
        assert_eq!(
            serde_json::to_value(ContainerProbeState::default()).expect("encode"),
            json!({"name": "", "state": "", "lastProbeTime": null, "lastTransitionTime": null})
        );
        assert_eq!(serde_json::to_value(NodePodProbeSpec::default()).expect("encode"), json!({}));
    }
}
