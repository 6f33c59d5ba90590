//! The SidecarSet hashes written on pods (`kruise.io/sidecarset-hash` and
//! `kruise.io/sidecarset-hash-without-image`), which tell the controller whether a pod runs
//! the latest sidecars and whether only images differ.
//!
//! What is hashed is what upstream hashes: the SidecarSet's `containers`, plus all of its
//! `initContainers` when at least one of them is a native sidecar (`restartPolicy: Always`);
//! the hash without image blanks every container image first.
//!
//! How it is hashed differs: upstream takes the SHA-256 of Go's JSON encoding, writes it in
//! hex and maps every hex digit onto its safe alphabet (64 characters). We take the 64-bit
//! FNV-1a of a JSON encoding with sorted keys, written in hex and mapped onto the same
//! alphabet (16 characters). The values are therefore never equal to upstream's. That is
//! harmless: a pod's hash is only ever compared with the hash of the SidecarSet that
//! injected it, and the SidecarSet's own hash is stored in its annotations (and in its
//! ControllerRevisions) by whichever implementation admitted it; when that annotation is
//! present the planner uses it as is, so pods injected by upstream keep matching.

use kruise_api::apps::v1beta1::{SidecarContainer, SidecarSetSpec};
use serde_json::{Value, json};

use crate::revision::gojson::with_sorted_keys;
use crate::revision::hash::safe_encode;

/// Whether a container is a native sidecar (an init container with `restartPolicy: Always`).
pub fn is_native_sidecar(container: &k8s_openapi::api::core::v1::Container) -> bool {
    container.restart_policy.as_deref() == Some("Always")
}

fn encode(spec: &SidecarSetSpec, blank_images: bool) -> String {
    let strip = |containers: &[SidecarContainer]| -> Value {
        let mut out = serde_json::to_value(containers).unwrap_or(Value::Null);
        if blank_images {
            for c in out.as_array_mut().into_iter().flatten() {
                if let Some(obj) = c.as_object_mut() {
                    obj.remove("image");
                }
            }
        }
        out
    };
    let mut doc = json!({ "containers": strip(&spec.containers) });
    if spec.init_containers.iter().any(|c| is_native_sidecar(&c.container)) {
        doc["initContainers"] = strip(&spec.init_containers);
    }
    with_sorted_keys(&doc).to_string()
}

fn fnv1a_64(bytes: &[u8]) -> u64 {
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    for b in bytes {
        hash ^= u64::from(*b);
        hash = hash.wrapping_mul(0x0000_0100_0000_01b3);
    }
    hash
}

/// The SidecarSet hash of `spec` (see the module docs for how it differs from upstream's).
pub fn sidecar_set_hash(spec: &SidecarSetSpec) -> String {
    safe_encode(&format!("{:016x}", fnv1a_64(encode(spec, false).as_bytes())))
}

/// The SidecarSet hash of `spec` with every container image left out.
pub fn sidecar_set_hash_without_image(spec: &SidecarSetSpec) -> String {
    safe_encode(&format!("{:016x}", fnv1a_64(encode(spec, true).as_bytes())))
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::api::core::v1::Container;

    fn spec(image: &str) -> SidecarSetSpec {
        SidecarSetSpec {
            containers: vec![SidecarContainer {
                container: Container {
                    name: "mesh".into(),
                    image: Some(image.into()),
                    ..Default::default()
                },
                ..Default::default()
            }],
            ..Default::default()
        }
    }

    #[test]
    fn image_changes_move_only_the_full_hash() {
        let (a, b) = (spec("mesh:1"), spec("mesh:2"));
        assert_ne!(sidecar_set_hash(&a), sidecar_set_hash(&b));
        assert_eq!(sidecar_set_hash_without_image(&a), sidecar_set_hash_without_image(&b));
        assert_eq!(sidecar_set_hash(&a), sidecar_set_hash(&a.clone()));
        assert_eq!(sidecar_set_hash(&a).len(), 16);
    }

    #[test]
    fn plain_init_containers_do_not_count_but_native_sidecars_do() {
        let base = spec("mesh:1");
        let mut plain = base.clone();
        plain.init_containers.push(SidecarContainer {
            container: Container { name: "init".into(), ..Default::default() },
            ..Default::default()
        });
        assert_eq!(sidecar_set_hash(&base), sidecar_set_hash(&plain));
        let mut native = plain.clone();
        native.init_containers[0].container.restart_policy = Some("Always".into());
        assert_ne!(sidecar_set_hash(&base), sidecar_set_hash(&native));
    }
}
