//! PodProbeMarker (apps.kruise.io/v1alpha1): custom probes run by kruise-daemon against the
//! containers of matched pods, whose results are marked on the pods as labels, annotations
//! or pod conditions. Also defines the probe spec and probe state shared with NodePodProbe.

use std::borrow::Cow;
use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::Probe;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector;
use kube::CustomResource;
use schemars::{JsonSchema, Schema, SchemaGenerator, json_schema};
use serde::{Deserialize, Serialize};
use serde_json::json;

use crate::wire::is_default;

/// The desired state of a PodProbeMarker.
#[derive(CustomResource, Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[kube(
    group = "apps.kruise.io",
    version = "v1alpha1",
    kind = "PodProbeMarker",
    plural = "podprobemarkers",
    singular = "podprobemarker",
    namespaced,
    status = "PodProbeMarkerStatus",
    storage = true,
    derive = "PartialEq",
    derive = "Default",
    doc = "PodProbeMarker runs custom container probes and marks the results on the pods."
)]
#[serde(rename_all = "camelCase")]
pub struct PodProbeMarkerSpec {
    /// Which pods are probed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub selector: Option<LabelSelector>,
    /// The probes, each with a name unique within the pod.
    #[serde(default)]
    pub probes: Vec<PodContainerProbe>,
}

/// One probe against one container of the matched pods.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct PodContainerProbe {
    /// Probe name, unique across all containers of the pod.
    #[serde(default)]
    pub name: String,
    /// The container probed.
    #[serde(default)]
    pub container_name: String,
    /// How to probe.
    #[serde(default)]
    pub probe: ContainerProbeSpec,
    /// Labels and annotations to set on the pod for each probe outcome.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub marker_policy: Vec<ProbeMarkerPolicy>,
    /// Pod condition type that records the probe result (True on success).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub pod_condition_type: String,
}

/// A container probe: the core/v1 `Probe`, with its fields at the top level.
///
/// Any probe field k8s-openapi knows round-trips; the CRD schema lists the fields upstream's
/// schema has, whatever Kubernetes version k8s-openapi is built for.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(transparent)]
pub struct ContainerProbeSpec {
    /// The probe (exec, tcpSocket, httpGet or grpc, plus timing).
    pub probe: Probe,
}

impl From<Probe> for ContainerProbeSpec {
    fn from(probe: Probe) -> Self {
        Self { probe }
    }
}

impl JsonSchema for ContainerProbeSpec {
    fn schema_name() -> Cow<'static, str> {
        Cow::Borrowed("ContainerProbeSpec")
    }

    fn inline_schema() -> bool {
        true
    }

    fn json_schema(_: &mut SchemaGenerator) -> Schema {
        let port = json!({
            "x-kubernetes-int-or-string": true,
            "description": "Port number or name."
        });
        let int32 = |description: &str| json!({"type": "integer", "format": "int32", "description": description});
        json_schema!({
            "type": "object",
            "description": "How to probe the container.",
            "properties": {
                "exec": {
                    "type": "object",
                    "description": "Run a command in the container; exit code 0 is success.",
                    "properties": {
                        "command": {
                            "type": "array",
                            "items": {"type": "string"},
                            "x-kubernetes-list-type": "atomic"
                        }
                    }
                },
                "failureThreshold": int32("Consecutive failures that count as failed."),
                "grpc": {
                    "type": "object",
                    "description": "Call the gRPC health service.",
                    "required": ["port"],
                    "properties": {
                        "port": int32("Port number."),
                        "service": {"type": "string", "default": ""}
                    }
                },
                "httpGet": {
                    "type": "object",
                    "description": "Send an HTTP GET; a 2xx or 3xx reply is success.",
                    "required": ["port"],
                    "properties": {
                        "host": {"type": "string"},
                        "httpHeaders": {
                            "type": "array",
                            "x-kubernetes-list-type": "atomic",
                            "items": {
                                "type": "object",
                                "required": ["name", "value"],
                                "properties": {
                                    "name": {"type": "string"},
                                    "value": {"type": "string"}
                                }
                            }
                        },
                        "path": {"type": "string"},
                        "port": port.clone(),
                        "scheme": {"type": "string"}
                    }
                },
                "initialDelaySeconds": int32("Seconds after container start before the first probe."),
                "periodSeconds": int32("Seconds between probes."),
                "successThreshold": int32("Consecutive successes that count as succeeded."),
                "tcpSocket": {
                    "type": "object",
                    "description": "Open a TCP connection.",
                    "required": ["port"],
                    "properties": {
                        "host": {"type": "string"},
                        "port": port
                    }
                },
                "terminationGracePeriodSeconds": {
                    "type": "integer",
                    "format": "int64",
                    "description": "Grace period when a failed probe kills the container."
                },
                "timeoutSeconds": int32("Seconds before a probe times out.")
            }
        })
    }
}

/// What to set on the pod when a probe reaches a state.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ProbeMarkerPolicy {
    /// The probe outcome this policy applies to.
    #[serde(default)]
    pub state: ProbeState,
    /// Labels patched onto the pod.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub labels: BTreeMap<String, String>,
    /// Annotations patched onto the pod.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub annotations: BTreeMap<String, String>,
}

crate::wire_enum! {
    /// Outcome of a container probe.
    pub enum ProbeState {
        /// The probe passed.
        Succeeded = "Succeeded",
        /// The probe failed.
        Failed = "Failed",
        /// The outcome is not known.
        Unknown = "Unknown",
    }
}

/// The empty string, Go's zero value for the field.
impl Default for ProbeState {
    fn default() -> Self {
        Self::Other(String::new())
    }
}

impl ProbeState {
    /// Whether this state agrees with a pod condition status (`True`, `False`, anything else
    /// meaning unknown).
    pub fn matches_condition_status(&self, status: &str) -> bool {
        match status {
            "True" => *self == Self::Succeeded,
            "False" => *self == Self::Failed,
            _ => *self == Self::Unknown,
        }
    }
}

/// The observed state of a PodProbeMarker.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct PodProbeMarkerStatus {
    /// The generation the controller last acted on.
    #[serde(default)]
    pub observed_generation: i64,
    /// Pods the selector matched.
    #[serde(default, skip_serializing_if = "is_default")]
    pub matched_pods: i64,
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn marker_round_trips() {
        let doc = json!({
            "apiVersion": "apps.kruise.io/v1alpha1",
            "kind": "PodProbeMarker",
            "metadata": {"name": "game-server-probe", "namespace": "ns"},
            "spec": {
                "selector": {"matchLabels": {"app": "game-server"}},
                "probes": [{
                    "name": "Idle",
                    "containerName": "game-server",
                    "probe": {
                        "exec": {"command": ["/home/game/idle.sh"]},
                        "initialDelaySeconds": 10,
                        "timeoutSeconds": 3,
                        "periodSeconds": 10,
                        "successThreshold": 1,
                        "failureThreshold": 3
                    },
                    "markerPolicy": [
                        {
                            "state": "Succeeded",
                            "labels": {"gameserver-idle": "true"},
                            "annotations": {"controller.kubernetes.io/pod-deletion-cost": "-10"}
                        },
                        {
                            "state": "Failed",
                            "labels": {"gameserver-idle": "false"}
                        }
                    ],
                    "podConditionType": "game.io/idle"
                }]
            },
            "status": {"observedGeneration": 3, "matchedPods": 4}
        });
        let marker: PodProbeMarker = serde_json::from_value(doc.clone()).expect("decode");
        let probe = &marker.spec.probes[0];
        assert_eq!(probe.probe.probe.period_seconds, Some(10));
        assert_eq!(probe.marker_policy[1].state, ProbeState::Failed);
        assert_eq!(serde_json::to_value(&marker).expect("encode"), doc);
    }

    #[test]
    fn http_probe_and_empty_status() {
        let doc = json!({
            "selector": {"matchLabels": {"app": "game-server"}},
            "probes": [{
                "name": "Idle",
                "containerName": "game-server",
                "probe": {"httpGet": {"path": "/healthz", "port": 8080}, "periodSeconds": 10}
            }]
        });
        let spec: PodProbeMarkerSpec = serde_json::from_value(doc.clone()).expect("decode");
        assert_eq!(serde_json::to_value(&spec).expect("encode"), doc);
        assert_eq!(
            serde_json::to_value(PodProbeMarkerStatus::default()).expect("encode"),
            json!({"observedGeneration": 0})
        );
    }

    #[test]
    fn probe_state_keeps_unknown_values_and_matches_conditions() {
        let state: ProbeState = serde_json::from_value(json!("Degraded")).expect("decode");
        assert_eq!(state, ProbeState::Other("Degraded".into()));
        assert_eq!(serde_json::to_value(&state).expect("encode"), json!("Degraded"));
        assert_eq!(serde_json::to_value(ProbeState::default()).expect("encode"), json!(""));
        assert!(ProbeState::Succeeded.matches_condition_status("True"));
        assert!(ProbeState::Failed.matches_condition_status("False"));
        assert!(ProbeState::Unknown.matches_condition_status("Unknown"));
        assert!(!ProbeState::Succeeded.matches_condition_status("False"));
    }
}
