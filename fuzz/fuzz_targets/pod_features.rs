//! The pod webhook's cache-less steps from arbitrary bytes: a pod as JSON through the
//! readiness gate, container launch priority and enhanced liveness steps. Nothing panics; a
//! refusal names a field; the chain's JSON patch turns the pod as sent into the pod as
//! changed; running the chain again on its own outcome changes nothing; and the controllers'
//! plans for the outcome (pod readiness, launch priority, sidecar terminator) and the probe
//! context reader do not panic either.

#![no_main]

use k8s_openapi::api::core::v1::{ConfigMap, Pod};
use kruise_core::admission::pod_chain::{PodChain, PodMutator};
use kruise_core::enhanced_liveness::{EnhancedLivenessStep, probe_context};
use kruise_core::launch_priority::LaunchPriorityStep;
use kruise_core::readiness::ReadinessGateStep;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(pod) = serde_json::from_slice::<Pod>(data) else { return };
    let all_pods = data.first().is_some_and(|b| b % 2 == 0);
    let readiness = ReadinessGateStep { all_pods };
    let priority = LaunchPriorityStep { name_suffix: "x7k2q".into() };
    let liveness = EnhancedLivenessStep;
    let steps: Vec<&dyn PodMutator> = vec![&readiness, &priority, &liveness];
    let chain = PodChain::new(steps);

    let mut changed = pod.clone();
    let patch = match chain.run(&mut changed) {
        Ok(mut edit) => edit.patch(),
        Err(err) => {
            let message = err.to_string();
            assert!(message.contains("spec.") || message.contains("metadata."), "{message}");
            return;
        }
    };
    let Ok(patch) = patch else { return };
    if let Some(text) = &patch {
        let ops: json_patch::Patch = serde_json::from_slice(text).expect("the chain writes a JSON patch");
        let mut doc = serde_json::to_value(&pod).expect("a pod encodes");
        json_patch::patch(&mut doc, &ops).expect("the patch applies to the pod as sent");
        assert_eq!(doc, serde_json::to_value(&changed).expect("encodes"));
    }

    let mut again = changed.clone();
    let repeat = chain.run(&mut again).expect("the outcome is admitted").patch().expect("encodes");
    assert_eq!(repeat, None, "the chain changes its own outcome");

    let now = jiff::Timestamp::UNIX_EPOCH;
    let _ = kruise_core::readiness::plan(&changed, now);
    let _ = kruise_core::launch_priority::plan(&changed, None);
    let _ = kruise_core::launch_priority::plan(&changed, Some(&ConfigMap::default()));
    let _ = kruise_core::sidecar_terminator::plan(&changed, Default::default(), now);
    let _ = probe_context(&changed);
    let _ = probe_context(&pod);
});
