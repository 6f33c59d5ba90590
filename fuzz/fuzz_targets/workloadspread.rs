//! WorkloadSpread inputs from arbitrary bytes: a WorkloadSpread (either version) and a pod, as
//! JSON separated by a NUL byte, plus the pod annotation and the custom-workload whitelist as
//! text. Nothing panics; validation runs on both versions; a reservation's subset exists; and
//! injecting a reserved subset twice gives the pod injecting it once gives.

#![no_main]

use k8s_openapi::api::core::v1::Pod;
use kruise_api::apps::{v1alpha1, v1beta1};
use kruise_core::workloadspread::admission as rules;
use kruise_core::workloadspread::{
    CustomWorkloadWhitelist, InjectedSubset, PodOperation, inject, reserve,
};
use libfuzzer_sys::fuzz_target;

fn spreads(text: &[u8]) -> Vec<v1beta1::WorkloadSpread> {
    let mut out = Vec::new();
    if let Ok(ws) = serde_json::from_slice::<v1beta1::WorkloadSpread>(text) {
        out.push(ws);
    }
    if let Ok(ws) = serde_json::from_slice::<v1alpha1::WorkloadSpread>(text) {
        let _ = rules::validate_workloadspread_v1alpha1_create(&ws, &rules::WorkloadSpreadContext::new(&[]));
        if let Ok(hub) = kruise_api::conversion::to_hub(ws) {
            out.push(hub);
        }
    }
    out
}

fuzz_target!(|data: &[u8]| {
    let text = String::from_utf8_lossy(data);
    let _ = InjectedSubset::parse(&text);
    let _ = CustomWorkloadWhitelist::parse(&text);
    let (ws_part, pod_part) = match data.iter().position(|b| *b == 0) {
        Some(i) => (&data[..i], &data[i + 1..]),
        None => (data, &b"{}"[..]),
    };
    let pod: Pod = serde_json::from_slice(pod_part).unwrap_or_default();
    for ws in spreads(ws_part) {
        let others = [ws.clone()];
        let ctx = rules::WorkloadSpreadContext::new(&others);
        let _ = rules::validate_workloadspread_create(&ws, &ctx);
        let _ = rules::validate_workloadspread_update(&ws, &ws, &ctx);
        let mut n = 0u32;
        let mut uid = || {
            n += 1;
            format!("uid-{n}")
        };
        let now = jiff::Timestamp::UNIX_EPOCH;
        for op in [PodOperation::Create, PodOperation::Delete, PodOperation::Eviction] {
            let reservation = reserve(&ws, &pod, op, 10, "Deployment", now, &mut uid);
            let Some(subset) = reservation.subset else { continue };
            assert!(
                kruise_core::workloadspread::subset(&ws, &subset).is_some(),
                "a reserved subset exists"
            );
            let mut once = pod.clone();
            if inject(&ws, &subset, reservation.generated_uid.as_deref(), &mut once).is_ok() {
                let mut twice = once.clone();
                let _ = inject(&ws, &subset, reservation.generated_uid.as_deref(), &mut twice);
                assert_eq!(once, twice, "injection is idempotent");
            }
        }
    }
});
