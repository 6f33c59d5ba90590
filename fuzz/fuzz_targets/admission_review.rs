//! AdmissionReview bodies from arbitrary bytes: decoding never panics; a decoded CloneSet or
//! Advanced StatefulSet request goes through defaulting and validation (both versions), and the
//! set through the planner, without panicking; and the answer always encodes as a review in
//! the request's version with its uid.

#![no_main]

use kruise_api::apps::{v1alpha1, v1beta1};
use kruise_core::cloneset::admission as rules;
use kruise_core::statefulset::admission as sts;
use kruise_core::admission_review::{AdmissionResponse, decode_review};
use libfuzzer_sys::fuzz_target;

fn check_cloneset(object: &serde_json::Value) {
    if let Ok(mut cs) = serde_json::from_value::<v1beta1::CloneSet>(object.clone()) {
        let _ = rules::validate_cloneset_create(&cs);
        let old = cs.clone();
        rules::default_cloneset_v1beta1(&mut cs);
        let _ = rules::validate_cloneset_update(&cs, &old);
    }
    if let Ok(mut cs) = serde_json::from_value::<v1alpha1::CloneSet>(object.clone()) {
        let pods = rules::PodsByName::new();
        let _ = rules::validate_cloneset_v1alpha1_create(&cs, &pods);
        rules::default_cloneset_v1alpha1(&mut cs);
        let _ = rules::pods_to_look_up(&cs, None);
    }
}

fn check_statefulset(object: &serde_json::Value) {
    let beta = serde_json::from_value::<v1beta1::StatefulSet>(object.clone()).ok();
    let alpha = serde_json::from_value::<v1alpha1::StatefulSet>(object.clone())
        .ok()
        .and_then(|set| kruise_api::conversion::to_hub(set).ok());
    for set in beta.into_iter().chain(alpha) {
        let _ = sts::validate_statefulset(&set);
        let mut defaulted = set.clone();
        sts::default_statefulset(&mut defaulted, Some(&set), sts::AdmissionGates::default());
        let _ = sts::validate_statefulset_update(&defaulted, &set);
        let _ = sts::validate_in_place_only(&defaulted, &set);
        let _ = sts::validate_volume_claim_template_update(&defaulted, &set, &Default::default());
        let snapshot = kruise_core::statefulset::StatefulSetSnapshot::new(defaulted);
        let now = jiff::Timestamp::UNIX_EPOCH;
        let plan = kruise_core::statefulset::plan(&snapshot, now);
        assert_eq!(plan, kruise_core::statefulset::plan(&snapshot, now), "plans are deterministic");
    }
}

fuzz_target!(|data: &[u8]| {
    let Ok(request) = decode_review(data) else { return };
    if let Some(object) = &request.object {
        check_cloneset(object);
        check_statefulset(object);
    }
    let answer = AdmissionResponse::deny(&request, 422, "fuzz").to_review();
    assert_eq!(answer["apiVersion"], request.version.api_version());
    assert_eq!(answer["response"]["uid"], request.uid.as_str());
    if let Some(object) = &request.object {
        let mutated = AdmissionResponse::mutate(&request, object, object).to_review();
        assert!(mutated["response"].get("patch").is_none(), "no change, no patch");
    }
});
