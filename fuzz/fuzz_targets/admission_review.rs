//! AdmissionReview bodies from arbitrary bytes: decoding never panics; a decoded CloneSet
//! request goes through defaulting and validation (both versions) without panicking, and the
//! answer always encodes as a review in the request's version with its uid.

#![no_main]

use kruise_api::apps::{v1alpha1, v1beta1};
use kruise_core::admission::cloneset as rules;
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

fuzz_target!(|data: &[u8]| {
    let Ok(request) = decode_review(data) else { return };
    if let Some(object) = &request.object {
        check_cloneset(object);
    }
    let answer = AdmissionResponse::deny(&request, 422, "fuzz").to_review();
    assert_eq!(answer["apiVersion"], request.version.api_version());
    assert_eq!(answer["response"]["uid"], request.uid.as_str());
    if let Some(object) = &request.object {
        let mutated = AdmissionResponse::mutate(&request, object, object).to_review();
        assert!(mutated["response"].get("patch").is_none(), "no change, no patch");
    }
});
