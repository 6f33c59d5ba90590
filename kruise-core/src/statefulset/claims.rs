//! How a pod's claims compare with the set's volume claim templates, for
//! `volumeClaimUpdateStrategy: OnPodRollingUpdate` and `status.volumeClaims`.

use std::cmp::Ordering;

use k8s_openapi::api::core::v1::PersistentVolumeClaim;

use crate::revision::quantity::Quantity;

fn request(claim: &PersistentVolumeClaim) -> Option<Quantity> {
    let text = claim.spec.as_ref()?.resources.as_ref()?.requests.as_ref()?.get("storage")?;
    Quantity::parse(&text.0).ok()
}

fn capacity(claim: &PersistentVolumeClaim) -> Option<Quantity> {
    let text = claim.status.as_ref()?.capacity.as_ref()?.get("storage")?;
    Quantity::parse(&text.0).ok()
}

fn at_least(a: Option<Quantity>, b: Option<Quantity>) -> bool {
    match (a, b) {
        (Some(a), Some(b)) => a.cmp_value(&b) != Ordering::Less,
        _ => false,
    }
}

/// The same class (when both name one) and the same access modes: the claim could serve the
/// template, whatever its size.
pub(crate) fn compatible_without_size(
    claim: &PersistentVolumeClaim,
    template: &PersistentVolumeClaim,
) -> bool {
    let (Some(c), Some(t)) = (claim.spec.as_ref(), template.spec.as_ref()) else {
        return claim.spec.is_none() && template.spec.is_none();
    };
    let classes_agree = match (&c.storage_class_name, &t.storage_class_name) {
        (Some(a), Some(b)) => a == b,
        _ => true,
    };
    classes_agree && c.access_modes == t.access_modes
}

/// Compatible, and asking for at least the template's storage.
pub(crate) fn compatible(claim: &PersistentVolumeClaim, template: &PersistentVolumeClaim) -> bool {
    compatible_without_size(claim, template) && at_least(request(claim), request(template))
}

/// Compatible, and given at least the storage it asks for.
pub(crate) fn ready(claim: &PersistentVolumeClaim, template: &PersistentVolumeClaim) -> bool {
    compatible_without_size(claim, template) && at_least(capacity(claim), request(claim))
}

/// Asking for less storage than the template.
pub(crate) fn needs_expansion(
    claim: &PersistentVolumeClaim,
    template: &PersistentVolumeClaim,
) -> bool {
    match (request(claim), request(template)) {
        (Some(c), Some(t)) => c.cmp_value(&t) == Ordering::Less,
        _ => false,
    }
}

/// Resized as asked: compatible and ready, or compatible with the file system resize left to
/// the kubelet (`FileSystemResizePending`).
pub(crate) fn resize_completed(
    claim: &PersistentVolumeClaim,
    template: &PersistentVolumeClaim,
) -> bool {
    let pending = claim
        .status
        .as_ref()
        .and_then(|s| s.conditions.as_ref())
        .into_iter()
        .flatten()
        .any(|c| c.type_ == "FileSystemResizePending" && c.status == "True");
    compatible(claim, template) && (ready(claim, template) || pending)
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::api::core::v1::{
        PersistentVolumeClaimSpec, PersistentVolumeClaimStatus, VolumeResourceRequirements,
    };
    use k8s_openapi::apimachinery::pkg::api::resource::Quantity as K8sQuantity;

    fn claim(class: Option<&str>, request: &str, capacity: Option<&str>) -> PersistentVolumeClaim {
        PersistentVolumeClaim {
            spec: Some(PersistentVolumeClaimSpec {
                storage_class_name: class.map(str::to_owned),
                access_modes: Some(vec!["ReadWriteOnce".into()]),
                resources: Some(VolumeResourceRequirements {
                    requests: Some([("storage".into(), K8sQuantity(request.into()))].into()),
                    ..Default::default()
                }),
                ..Default::default()
            }),
            status: capacity.map(|c| PersistentVolumeClaimStatus {
                capacity: Some([("storage".into(), K8sQuantity(c.into()))].into()),
                ..Default::default()
            }),
            ..Default::default()
        }
    }

    #[test]
    fn sizes_compare_by_value() {
        let template = claim(Some("fast"), "2Gi", None);
        let small = claim(Some("fast"), "1Gi", Some("1Gi"));
        assert!(needs_expansion(&small, &template));
        assert!(!compatible(&small, &template));
        assert!(ready(&small, &template));
        let grown = claim(Some("fast"), "2048Mi", Some("1Gi"));
        assert!(compatible(&grown, &template) && !ready(&grown, &template));
        assert!(!resize_completed(&grown, &template));
        let done = claim(None, "2Gi", Some("2Gi"));
        assert!(resize_completed(&done, &template), "an unset class agrees with any");
        assert!(!compatible_without_size(&claim(Some("slow"), "2Gi", None), &template));
    }
}
