//! PodProbeMarker and PersistentPodState from arbitrary bytes: each through its webhook's rules
//! and its planner, with pods, node probes and records also taken from the input. Nothing
//! panics; a refusal names a field (`spec`, or `selector` for PodProbeMarker's immutable
//! selector); the node plan is idempotent on its own outcome and lists each pod once; a
//! recreated pod's step only ever sets the recorded values.

#![no_main]

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::Pod;
use kruise_api::apps::v1alpha1::{NodePodProbe, PodProbeMarker};
use kruise_api::apps::v1beta1::PersistentPodState;
use kruise_core::persistentpodstate::admission::validate_persistent_pod_state;
use kruise_core::persistentpodstate::{
    CustomWorkloadWhitelist, StatusSnapshot, WorkloadView, plan_status, step_for,
};
use kruise_core::podprobe::admission::validate_pod_probe_marker;
use kruise_core::podprobe::{NodeSnapshot, NodeState, desired_spec, plan_node};
use libfuzzer_sys::fuzz_target;
use serde_json::Value;

/// The items of a JSON array that decode as the wanted type.
macro_rules! list {
    ($value:expr) => {
        $value
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|v| serde_json::from_value(v.clone()).ok())
            .collect()
    };
}

fuzz_target!(|data: &[u8]| {
    let Ok(input) = serde_json::from_slice::<Value>(data) else { return };
    let now = jiff::Timestamp::UNIX_EPOCH;
    let pods: Vec<Pod> = list!(input["pods"]);
    let markers: Vec<PodProbeMarker> = list!(input["markers"]);
    let old: Option<PodProbeMarker> = serde_json::from_value(input["oldMarker"].clone()).ok();
    for marker in &markers {
        for message in validate_pod_probe_marker(marker, old.as_ref()).messages() {
            assert!(message.starts_with("spec") || message.starts_with("selector:"), "{message}");
        }
    }
    let probe: Option<NodePodProbe> = serde_json::from_value(input["nodePodProbe"].clone()).ok();
    let pod_refs: Vec<&Pod> = pods.iter().collect();
    let marker_refs: Vec<&PodProbeMarker> = markers.iter().collect();
    let liveness = input["liveness"].as_bool().unwrap_or(false);
    let snapshot = NodeSnapshot {
        node_name: "node",
        node: NodeState::Ready,
        serverless: false,
        enhanced_liveness: liveness,
        probe: probe.as_ref(),
        pods: pod_refs.clone(),
        markers: marker_refs.clone(),
    };
    let _ = plan_node(&snapshot, now);
    let _ = plan_node(&NodeSnapshot { node: NodeState::Virtual, serverless: true, ..snapshot.clone() }, now);
    let index = kruise_core::podprobe::MarkerIndex::new(&marker_refs);
    for pod in &pods {
        if let Some(step) = kruise_core::podprobe::serverless::serverless_step(pod, &index) {
            assert!(serde_json::from_str::<Value>(&step.probes).is_ok_and(|v| v.is_array()));
        }
    }
    let spec = desired_spec(probe.as_ref().map(|p| &p.spec), &pod_refs, &marker_refs, liveness);
    assert_eq!(desired_spec(Some(&spec), &pod_refs, &marker_refs, liveness), spec);
    let mut uids = std::collections::BTreeSet::new();
    for entry in &spec.pod_probes {
        assert!(uids.insert(entry.uid.clone()), "{} listed twice", entry.uid);
    }

    let states: Vec<PersistentPodState> = list!(input["states"]);
    let state_refs: Vec<&PersistentPodState> = states.iter().collect();
    let labels: BTreeMap<String, String> =
        serde_json::from_value(input["nodeLabels"].clone()).unwrap_or_default();
    let node_labels = move |_: &str| Some(labels.clone());
    let whitelist = CustomWorkloadWhitelist::parse(input["whitelist"].as_str().unwrap_or_default())
        .unwrap_or_default();
    for state in &states {
        for message in validate_persistent_pod_state(state, None, &state_refs, &whitelist).messages()
        {
            assert!(message.starts_with("spec"), "{message}");
        }
        let workload = input["replicas"].as_i64().map(|r| WorkloadView {
            replicas: i32::try_from(r).unwrap_or(0),
            ..WorkloadView::default()
        });
        let _ = plan_status(
            &StatusSnapshot { state, workload, pods: pod_refs.clone(), node_labels: &node_labels },
            now,
        );
        for pod in &pods {
            if let Some(step) = step_for(pod, state) {
                let record = &state.status.as_ref().expect("a step needs a record").pod_states
                    [pod.metadata.name.as_deref().unwrap_or_default()];
                for (key, value) in &step.node_selector {
                    assert_eq!(record.node_topology_labels.get(key), Some(value));
                }
            }
        }
    }
});
