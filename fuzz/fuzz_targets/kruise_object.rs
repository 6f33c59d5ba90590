//! Kruise objects from arbitrary JSON: decoding never panics, a decoded object encodes to
//! JSON that decodes to the same JSON again, and converting to the other served version and
//! back changes nothing.

#![no_main]

use kruise_api::KruiseObject;
use kruise_api::conversion::ConversionError;
use libfuzzer_sys::fuzz_target;
use serde_json::Value;

/// The other served version of a Kruise group version.
fn other_version(api_version: &str) -> Option<&'static str> {
    match api_version {
        "apps.kruise.io/v1alpha1" => Some("apps.kruise.io/v1beta1"),
        "apps.kruise.io/v1beta1" => Some("apps.kruise.io/v1alpha1"),
        "policy.kruise.io/v1alpha1" => Some("policy.kruise.io/v1beta1"),
        "policy.kruise.io/v1beta1" => Some("policy.kruise.io/v1alpha1"),
        "rollouts.kruise.io/v1alpha1" => Some("rollouts.kruise.io/v1beta1"),
        "rollouts.kruise.io/v1beta1" => Some("rollouts.kruise.io/v1alpha1"),
        _ => None,
    }
}

fn encode(object: &KruiseObject) -> Value {
    match serde_json::to_value(object) {
        Ok(value) => value,
        Err(err) => panic!("a decoded {} does not encode: {err}", object.kind()),
    }
}

fuzz_target!(|data: &[u8]| {
    let Ok(value) = serde_json::from_slice::<Value>(data) else { return };
    let Ok(object) = KruiseObject::from_value(value) else { return };

    let encoded = encode(&object);
    let again = match KruiseObject::from_value(encoded.clone()) {
        Ok(again) => again,
        Err(err) => panic!("re-decoding failed: {err}\n{encoded}"),
    };
    assert_eq!(encode(&again), encoded, "encoding is not stable");

    let api_version = object.api_version();
    let Some(other) = other_version(&api_version) else { return };
    let converted = match object.convert_to(other) {
        Ok(converted) => converted,
        Err(ConversionError::UnsupportedVersion { .. }) => return,
        Err(err) => panic!("converting to {other} failed: {err}\n{encoded}"),
    };
    let back = match converted.convert_to(&api_version) {
        Ok(back) => back,
        Err(ConversionError::UnsupportedVersion { .. }) => return,
        Err(err) => panic!("converting back to {api_version} failed: {err}\n{encoded}"),
    };
    assert_eq!(
        encode(&back),
        encoded,
        "{api_version} -> {other} -> {api_version} changed the object"
    );
});
