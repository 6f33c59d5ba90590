//! What a pod of the set looks like: its name, labels, hostname and volumes; its claims; and
//! the claims' owners under `persistentVolumeClaimRetentionPolicy`.

use std::collections::BTreeMap;

use jiff::Timestamp;
use k8s_openapi::api::core::v1::{
    PersistentVolumeClaim, PersistentVolumeClaimVolumeSource, Pod, PodTemplateSpec, Volume,
};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, OwnerReference};
use kruise_api::well_known::kubernetes::labels as k8s_labels;
use serde_json::{Value, json};

use super::ordinals::{claim_name, pod_name};
use super::spec::Spec;
use crate::lifecycle::{LifecyclePatch, LifecycleState, is_all_hooked};
use crate::revision::POD_REVISION_LABEL;

/// The pod of the set at `ordinal`, from `template` at `revision` (upstream's
/// `newVersionedStatefulSetPod`): named `<set>-<ordinal>`, with the identity labels, the
/// revision label, the set as controller, the hostname and subdomain, a volume per claim
/// template, and the lifecycle state it starts in.
pub(crate) fn new_pod(
    spec: &Spec<'_>,
    template: &PodTemplateSpec,
    revision: &str,
    ordinal: i32,
    now: Timestamp,
) -> Pod {
    let name = pod_name(spec.name, ordinal);
    let template_meta = template.metadata.clone().unwrap_or_default();
    let mut labels = template_meta.labels.unwrap_or_default();
    labels.insert(k8s_labels::STATEFULSET_POD_NAME.to_owned(), name.clone());
    if spec.pod_index_label {
        labels.insert(k8s_labels::POD_INDEX.to_owned(), ordinal.to_string());
    }
    labels.insert(POD_REVISION_LABEL.to_owned(), revision.to_owned());
    let mut pod = Pod {
        metadata: ObjectMeta {
            name: Some(name.clone()),
            namespace: Some(spec.namespace.to_owned()),
            labels: Some(labels),
            annotations: template_meta.annotations,
            finalizers: template_meta.finalizers,
            owner_references: Some(vec![crate::revision::controller_ref(spec.set)]),
            ..ObjectMeta::default()
        },
        spec: template.spec.clone(),
        status: None,
    };
    if let Some(pod_spec) = pod.spec.as_mut() {
        pod_spec.hostname = Some(name.clone());
        if !spec.set.spec.service_name.is_empty() {
            pod_spec.subdomain = Some(spec.set.spec.service_name.clone());
        }
        let mut volumes: Vec<Volume> = spec
            .claim_template_names()
            .map(|template| Volume {
                name: template.to_owned(),
                persistent_volume_claim: Some(PersistentVolumeClaimVolumeSource {
                    claim_name: claim_name(template, spec.name, ordinal),
                    read_only: None,
                }),
                ..Volume::default()
            })
            .collect();
        let claimed: Vec<String> = volumes.iter().map(|v| v.name.clone()).collect();
        volumes.extend(
            pod_spec.volumes.take().into_iter().flatten().filter(|v| !claimed.contains(&v.name)),
        );
        pod_spec.volumes = Some(volumes).filter(|v| !v.is_empty());
    }
    let pre_normal = spec.lifecycle.and_then(|l| l.pre_normal.as_ref());
    let state = if pre_normal.is_some() && !is_all_hooked(pre_normal, &pod) {
        LifecycleState::PreparingNormal
    } else {
        LifecycleState::Normal
    };
    LifecyclePatch::for_state(&state, now).apply_to(&mut pod);
    if spec.readiness_gate && crate::readiness::wants_gate(&pod, false) {
        crate::readiness::inject_gate(pod.spec.get_or_insert_with(Default::default));
    }
    pod
}

/// The claim a pod at `ordinal` gets from `template`: named `<template>-<set>-<ordinal>`, with
/// the template's labels and the selector's `matchLabels` over them. With `whenDeleted:
/// Delete` (and the pod in range) the set owns it from the start, so that it goes with the
/// set.
pub(crate) fn new_claim(
    spec: &Spec<'_>,
    template: &PersistentVolumeClaim,
    ordinal: i32,
) -> PersistentVolumeClaim {
    let template_name = template.metadata.name.as_deref().unwrap_or_default();
    let mut labels = template.metadata.labels.clone().unwrap_or_default();
    let match_labels = spec.set.spec.selector.as_ref().and_then(|s| s.match_labels.as_ref());
    for (key, value) in match_labels.into_iter().flatten() {
        labels.insert(key.clone(), value.clone());
    }
    let mut claim = PersistentVolumeClaim {
        metadata: ObjectMeta {
            name: Some(claim_name(template_name, spec.name, ordinal)),
            namespace: Some(spec.namespace.to_owned()),
            labels: Some(labels).filter(|l| !l.is_empty()),
            annotations: template.metadata.annotations.clone(),
            finalizers: template.metadata.finalizers.clone(),
            ..ObjectMeta::default()
        },
        spec: template.spec.clone(),
        status: None,
    };
    if let Some(owners) = wanted_claim_owners(spec, &claim, None, false) {
        claim.metadata.owner_references = Some(owners).filter(|o| !o.is_empty());
    }
    claim
}

/// Whether the pod at `ordinal` mounts every claim template's claim under the template's name.
pub(crate) fn storage_matches(spec: &Spec<'_>, pod: &Pod, ordinal: i32) -> bool {
    let volumes = pod.spec.as_ref().and_then(|s| s.volumes.as_ref());
    spec.claim_template_names().all(|template| {
        let wanted = claim_name(template, spec.name, ordinal);
        volumes.into_iter().flatten().any(|v| {
            v.name == template
                && v.persistent_volume_claim.as_ref().is_some_and(|c| c.claim_name == wanted)
        })
    })
}

/// The labels to put back on a pod whose identity labels are missing or wrong: the pod-name
/// label, and the pod-index label under its gate. `None` when they are right.
/// `name_label` and `index_label` are the pod's values of the two labels.
pub(crate) fn identity_patch(
    spec: &Spec<'_>,
    name: &str,
    ordinal: i32,
    name_label: Option<&str>,
    index_label: Option<&str>,
) -> Option<Value> {
    let name_right = name_label == Some(name);
    // The index label holds the ordinal in decimal, without leading zeros.
    let index_right = !spec.pod_index_label
        || index_label.is_some_and(|v| {
            super::ordinals::parse_decimal(v.as_bytes()) == Some(ordinal)
                && !(v.len() > 1 && v.starts_with('0'))
        });
    if name_right && index_right {
        return None;
    }
    let mut wanted = serde_json::Map::new();
    if !name_right {
        wanted.insert(k8s_labels::STATEFULSET_POD_NAME.to_owned(), json!(name));
    }
    if !index_right {
        wanted.insert(k8s_labels::POD_INDEX.to_owned(), json!(ordinal.to_string()));
    }
    Some(json!({ "metadata": { "labels": wanted } }))
}

fn set_reference(spec: &Spec<'_>) -> OwnerReference {
    OwnerReference {
        api_version: "apps.kruise.io/v1beta1".to_owned(),
        kind: "StatefulSet".to_owned(),
        name: spec.name.to_owned(),
        uid: spec.uid.to_owned(),
        controller: None,
        block_owner_deletion: None,
    }
}

/// The owners a claim should have under the retention policy (upstream's
/// `updateClaimOwnerRefForSetAndPod`): the set while claims go with the set and the pod is
/// kept; the pod once it is scaled away and claims go with scaled pods. Other owners are
/// kept. `None` when the claim already has the owners it should (or the policy keeps every
/// claim, where owners are left alone).
pub(crate) fn wanted_claim_owners(
    spec: &Spec<'_>,
    claim: &PersistentVolumeClaim,
    pod: Option<&Pod>,
    scaled_down: bool,
) -> Option<Vec<OwnerReference>> {
    if !spec.delete_claims_when_deleted && !spec.delete_claims_when_scaled {
        return None;
    }
    let want_set =
        spec.delete_claims_when_deleted && !(spec.delete_claims_when_scaled && scaled_down);
    let want_pod = spec.delete_claims_when_scaled && scaled_down;
    let pod_uid = pod.and_then(|p| p.metadata.uid.as_deref()).unwrap_or_default();
    if want_pod && pod_uid.is_empty() {
        return None;
    }
    let owners = claim.metadata.owner_references.clone().unwrap_or_default();
    let has = |uid: &str| !uid.is_empty() && owners.iter().any(|o| o.uid == uid);
    if has(spec.uid) == want_set && (pod_uid.is_empty() || has(pod_uid) == want_pod) {
        return None;
    }
    let mut wanted: Vec<OwnerReference> = owners
        .into_iter()
        .filter(|o| o.uid != spec.uid && (pod_uid.is_empty() || o.uid != pod_uid))
        .collect();
    if want_set {
        wanted.push(set_reference(spec));
    }
    if want_pod && let Some(pod) = pod {
        wanted.push(OwnerReference {
            api_version: "v1".to_owned(),
            kind: "Pod".to_owned(),
            name: pod.metadata.name.clone().unwrap_or_default(),
            uid: pod_uid.to_owned(),
            controller: None,
            block_owner_deletion: None,
        });
    }
    Some(wanted)
}

/// Whether a claim still carries an owner reference to an earlier pod of the same name
/// (upstream's `PodClaimIsStale`, only with `whenScaled: Delete`): the garbage collector is
/// about to delete it, so no pod may be created on it.
pub(crate) fn claim_is_stale(
    spec: &Spec<'_>,
    claim: &PersistentVolumeClaim,
    pod_name: &str,
) -> bool {
    spec.delete_claims_when_scaled
        && claim
            .metadata
            .owner_references
            .iter()
            .flatten()
            .any(|o| o.kind == "Pod" && o.name == pod_name)
}

/// A merge patch setting a claim's owner references, guarded by its resourceVersion.
pub(crate) fn claim_owners_patch(
    claim: &PersistentVolumeClaim,
    owners: &[OwnerReference],
) -> Value {
    json!({
        "metadata": {
            "ownerReferences": owners,
            "resourceVersion": claim.metadata.resource_version,
        }
    })
}

/// The claims of the set by name.
pub(crate) fn claims_by_name(
    claims: &[PersistentVolumeClaim],
) -> BTreeMap<&str, &PersistentVolumeClaim> {
    claims.iter().map(|c| (c.metadata.name.as_deref().unwrap_or_default(), c)).collect()
}
