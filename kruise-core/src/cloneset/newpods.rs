//! Building new pods and their PVCs, and choosing instance ids.

use std::collections::{BTreeMap, BTreeSet};

use jiff::Timestamp;
use k8s_openapi::api::core::v1::{
    PersistentVolumeClaim, PersistentVolumeClaimVolumeSource, Pod, PodReadinessGate,
    PodTemplateSpec, Volume,
};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, OwnerReference};
use kruise_api::well_known::{kubernetes, labels, readiness_gates};

use crate::lifecycle::{LifecyclePatch, LifecycleState};
use crate::workload::NewPod;

use super::spec::Spec;
use crate::revision::short_hash;

/// Length of a generated instance id.
const ID_LEN: usize = 5;
/// Characters of generated ids (Kubernetes' `rand.String` alphabet: no vowels, no look-alikes).
const ID_ALPHABET: &[u8] = b"bcdfghjklmnpqrstvwxz2456789";

/// The ownerReference pods and PVCs get: the CloneSet as controller.
pub(crate) fn controller_ref(spec: &Spec<'_>) -> OwnerReference {
    crate::revision::controller_ref(spec.cs)
}

/// Instance ids for `count` new pods: ids of PVCs no live pod uses come first (sorted), so
/// their volumes are reused; the rest are generated. Generated ids are derived from the
/// CloneSet's UID and avoid every id and pod name in use, so the same snapshot always gets the
/// same ids.
pub(crate) fn available_ids<'p>(
    spec: &Spec<'_>,
    count: usize,
    pvc_ids: impl Iterator<Item = &'p str>,
    active_ids: &BTreeSet<&str>,
    taken_names: &BTreeSet<&str>,
) -> Vec<String> {
    let mut reusable = BTreeSet::new();
    let mut pvc_held = BTreeSet::new();
    for id in pvc_ids.filter(|id| !id.is_empty()) {
        pvc_held.insert(id);
        if !active_ids.contains(id) {
            reusable.insert(id.to_owned());
        }
    }
    let mut ids: Vec<String> = reusable.into_iter().take(count).collect();
    // A generated id is free unless a pod or PVC has it, or a pod has the name it gives.
    let prefix = format!("{}-", spec.name);
    let named: BTreeSet<&str> =
        taken_names.iter().filter_map(|name| name.strip_prefix(prefix.as_str())).collect();
    let taken = |id: &str| active_ids.contains(id) || pvc_held.contains(id) || named.contains(id);
    let mut generated = std::collections::HashSet::new();
    let seed = if spec.uid.is_empty() { spec.name } else { spec.uid };
    let mut attempt: u64 = 0;
    while ids.len() < count {
        let id = generated_id(seed, attempt);
        attempt += 1;
        // The alphabet is ASCII, so the bytes are always a str.
        let Ok(text) = std::str::from_utf8(&id) else { continue };
        if taken(text) || !generated.insert(id) {
            continue;
        }
        ids.push(text.to_owned());
    }
    ids
}

/// The `n`-th id derived from `seed` (FNV-1a, then base-27 digits), as ASCII bytes.
fn generated_id(seed: &str, n: u64) -> [u8; ID_LEN] {
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    for byte in seed.bytes().chain(n.to_le_bytes()) {
        hash ^= u64::from(byte);
        hash = hash.wrapping_mul(0x0000_0100_0000_01b3);
    }
    let base = ID_ALPHABET.len() as u64;
    let mut id = [0u8; ID_LEN];
    for byte in &mut id {
        *byte = ID_ALPHABET[(hash % base) as usize];
        hash /= base;
    }
    id
}

/// The PVC name for template `template` and instance `id`.
pub(crate) fn pvc_name(spec: &Spec<'_>, template: &str, id: &str) -> String {
    format!("{template}-{}-{id}", spec.name)
}

/// The PVCs of instance `id`, one per volumeClaimTemplate, with the volume name each is
/// mounted as.
pub(crate) fn claims_for(spec: &Spec<'_>, id: &str) -> Vec<(String, PersistentVolumeClaim)> {
    let selector_labels = spec.cs.spec.selector.as_ref().and_then(|s| s.match_labels.as_ref());
    spec.cs
        .spec
        .volume_claim_templates
        .iter()
        .map(|template| {
            let template_name = template.metadata.name.clone().unwrap_or_default();
            let mut claim = template.object.clone();
            claim.metadata.name = Some(pvc_name(spec, &template_name, id));
            claim.metadata.namespace = Some(spec.namespace.to_owned());
            let claim_labels = claim.metadata.labels.get_or_insert_with(BTreeMap::new);
            for (k, v) in selector_labels.into_iter().flatten() {
                claim_labels.insert(k.clone(), v.clone());
            }
            claim_labels.insert(labels::CLONESET_INSTANCE_ID.into(), id.to_owned());
            claim.metadata.owner_references.get_or_insert_with(Vec::new).push(controller_ref(spec));
            claim.status = None;
            (template_name, claim)
        })
        .collect()
}

/// The revision labels of a pod at `revision`.
pub(crate) fn revision_labels(revision: &str, short_hash_gate: bool) -> [(String, String); 2] {
    let short = short_hash(revision).to_owned();
    let hash = if short_hash_gate { short.clone() } else { revision.to_owned() };
    [
        (kubernetes::labels::CONTROLLER_REVISION_HASH.to_owned(), hash),
        (kubernetes::labels::POD_TEMPLATE_HASH.to_owned(), short),
    ]
}

/// What every new pod of one revision shares, built once per plan: the template's labels
/// and annotations with the revision and lifecycle ones, its spec with the readiness gate,
/// and the controller reference. [`PodPrototype::instantiate`] adds what is the instance's
/// own (name, instance id, claim volumes).
pub(crate) struct PodPrototype {
    pod: std::sync::Arc<Pod>,
}

impl PodPrototype {
    /// The new pods from `template` at `revision`, in lifecycle state `PreparingNormal`.
    pub(crate) fn new(
        spec: &Spec<'_>,
        template: &PodTemplateSpec,
        revision: &str,
        short_hash_gate: bool,
        now: Timestamp,
    ) -> Self {
        let template_meta = template.metadata.as_ref();
        let mut pod_labels = template_meta.and_then(|m| m.labels.clone()).unwrap_or_default();
        pod_labels.extend(revision_labels(revision, short_hash_gate));
        let mut pod_annotations =
            template_meta.and_then(|m| m.annotations.clone()).unwrap_or_default();
        let lifecycle = LifecyclePatch::for_state(&LifecycleState::PreparingNormal, now);
        pod_labels.extend(lifecycle.labels);
        pod_annotations.extend(lifecycle.annotations);

        let mut pod_spec = template.spec.clone().unwrap_or_default();
        let gates = pod_spec.readiness_gates.get_or_insert_with(Vec::new);
        if !gates.iter().any(|g| g.condition_type == readiness_gates::IN_PLACE_UPDATE_READY) {
            gates.push(PodReadinessGate {
                condition_type: readiness_gates::IN_PLACE_UPDATE_READY.into(),
            });
        }
        let pod = Pod {
            metadata: ObjectMeta {
                generate_name: Some(format!("{}-", spec.name)),
                namespace: Some(spec.namespace.to_owned()),
                labels: Some(pod_labels),
                annotations: Some(pod_annotations),
                finalizers: template_meta.and_then(|m| m.finalizers.clone()),
                owner_references: Some(vec![controller_ref(spec)]),
                ..Default::default()
            },
            spec: Some(pod_spec),
            status: None,
        };
        PodPrototype { pod: std::sync::Arc::new(pod) }
    }

    /// Gives the new pods the `KruisePodReady` readiness gate, as upstream's pod webhook
    /// would ([`crate::readiness::wants_gate`]: a CloneSet controls them).
    pub(crate) fn admit_readiness_gate(&mut self) {
        let pod = std::sync::Arc::make_mut(&mut self.pod);
        if crate::readiness::wants_gate(pod, false) {
            crate::readiness::inject_gate(pod.spec.get_or_insert_with(Default::default));
        }
    }

    /// The new pod of instance `id`: named after it, labelled with it, and with a volume for
    /// each of its `claims` ([`claims_for`] the id; in template order) ahead of the
    /// template's other volumes. It shares the prototype and is built when sent.
    pub(crate) fn instantiate(
        &self,
        spec: &Spec<'_>,
        id: &str,
        claims: &[(String, PersistentVolumeClaim)],
    ) -> NewPod {
        let volumes: Vec<Volume> = claims
            .iter()
            .map(|(volume, claim)| Volume {
                name: volume.clone(),
                persistent_volume_claim: Some(PersistentVolumeClaimVolumeSource {
                    claim_name: claim.metadata.name.clone().unwrap_or_default(),
                    read_only: Some(false),
                }),
                ..Default::default()
            })
            .collect();
        NewPod::instance(
            self.pod.clone(),
            format!("{}-{id}", spec.name),
            (labels::CLONESET_INSTANCE_ID.into(), id.to_owned()),
            volumes,
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn generated_ids_are_stable_and_use_the_alphabet() {
        let a = generated_id("uid-1", 0);
        assert_eq!(a, generated_id("uid-1", 0));
        assert_ne!(a, generated_id("uid-1", 1));
        assert_ne!(a, generated_id("uid-2", 0));
        assert_eq!(a.len(), ID_LEN);
        assert!(a.iter().all(|b| ID_ALPHABET.contains(b)));
    }
}
