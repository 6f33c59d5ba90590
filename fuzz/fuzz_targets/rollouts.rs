//! Kruise Rollout's admission decisions on arbitrary input: a workload update (old and new
//! objects) and a Rollout. Neither the workload webhook, the validation nor the approve patch
//! panics; a held workload differs from the update only in the fields the hold writes; and
//! the planners take any Rollout, BatchRelease and TrafficRouting, and the shared route patch
//! any HTTPRoute, without panicking.

#![no_main]

use kruise_api::rollouts::v1beta1::{BatchRelease, Rollout};
use kruise_core::rollouts::admission::{hold_workload, validate_rollout};
use kruise_core::rollouts::{
    ReleasedWorkload, approve_patch, batchrelease, rollout, traffic, trafficrouting,
};
use libfuzzer_sys::fuzz_target;
use serde_json::Value;

fn without_hold(mut object: Value) -> Value {
    for pointer in ["/spec/updateStrategy", "/metadata/annotations", "/metadata/uid"] {
        let (parent, key) = pointer.rsplit_once('/').unwrap_or_default();
        if let Some(Value::Object(map)) = object.pointer_mut(parent) {
            map.remove(key);
        }
    }
    object
}

fuzz_target!(|data: &[u8]| {
    let Ok(Value::Array(items)) = serde_json::from_slice::<Value>(data) else { return };
    let [old, new, rollout_json, ..] = items.as_slice() else { return };
    let rollouts: Vec<Rollout> =
        serde_json::from_value(rollout_json.clone()).map(|r| vec![r]).unwrap_or_default();
    if let Some(held) = hold_workload(old, new, &rollouts, &[]) {
        assert_eq!(without_hold(held), without_hold(new.clone()), "the hold wrote other fields");
    }
    if let Some(rollout_object) = rollouts.first() {
        let _ =
            validate_rollout(rollout_object, Some(rollout_object), Some(rollout_object), &rollouts)
                .to_string();
        let _ = approve_patch(rollout_object);
        let workload = serde_json::from_value(new.clone())
            .ok()
            .map(|cs| ReleasedWorkload::from_clone_set(&cs));
        let release: Option<BatchRelease> = serde_json::from_value(old.clone()).ok();
        // The old object read as a TrafficRouting too: its planner takes any.
        let traffic_routing: Option<kruise_api::rollouts::v1alpha1::TrafficRouting> =
            serde_json::from_value(old.clone()).ok();
        let now = jiff::Timestamp::UNIX_EPOCH;
        if let Some(tr) = &traffic_routing {
            let _ = trafficrouting::plan(
                &trafficrouting::Snapshot {
                    traffic_routing: tr.clone(),
                    traffic: Default::default(),
                },
                now,
            );
            let _ = trafficrouting::hold_patch(tr, "r", true);
        }
        let _ = rollout::plan(
            &rollout::Snapshot {
                rollout: rollout_object.clone(),
                workload: workload.clone(),
                batch_release: release.clone(),
                traffic: Default::default(),
                traffic_routing,
                append_pod_selector: data.len() % 2 == 0,
            },
            now,
        );
        // The old object read as an HTTPRoute whose new side is its own Service.
        let step = rollout_object.spec.strategy.canary.as_ref().and_then(|c| c.steps.first());
        let _ = traffic::shared_route_patch(old, "s", step);
        let _ = traffic::shared_route_patch(old, "s", None);
        if let Some(release) = release {
            let _ = batchrelease::plan(
                &batchrelease::Snapshot {
                    release,
                    workload,
                    pods: Vec::new(),
                    canary: None,
                    autoscalers: Vec::new(),
                },
                now,
            );
        }
    }
});
