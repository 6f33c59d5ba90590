//! The mutating webhook for ContainerRecreateRequests (`mcontainerrecreaterequest.kb.io`):
//! checks on create, defaults and pod facts filled in; immutability on update.

use std::collections::BTreeSet;

use k8s_openapi::api::core::v1::{Node, Pod};
use kruise_api::apps::v1beta1::{
    CRRProbeHandler, ContainerRecreateRequest, ContainerRecreateRequestContainerContext,
    ContainerRecreateRequestFailurePolicyType, ContainerRecreateRequestStrategy,
};
use kruise_api::well_known::labels;

use super::{CrrError, MIN_ACTIVE_DEADLINE_SECONDS};
use crate::pod::is_pod_active;

/// Node label that marks a virtual-kubelet node; copied onto requests for its pods.
const VIRTUAL_KUBELET_LABEL: &str = "type";
/// Value of [`VIRTUAL_KUBELET_LABEL`] on virtual-kubelet nodes.
const VIRTUAL_KUBELET_VALUE: &str = "virtual-kubelet";
/// Pod condition the sidecar terminator sets; such a pod may still get a request.
const SIDECAR_TERMINATED: &str = "SidecarTerminated";

/// The request as the webhook admits it on create, or why it is refused, in upstream's order:
///
/// 1. `spec.podName` set, `spec.strategy` defaulted to `{}`, label `crr.apps.kruise.io/active:
///    "true"`, `spec.containers` not empty, `activeDeadlineSeconds` at least
///    [`MIN_ACTIVE_DEADLINE_SECONDS`], grace periods non-negative, `failurePolicy` defaulted to
///    `Fail` (or `Ignore`);
/// 2. the pod (`pod`, `None` when it does not exist) is active (or was stopped by the sidecar
///    terminator) and scheduled;
/// 3. labels `crr.apps.kruise.io/node-name` and `crr.apps.kruise.io/pod-uid` (and `type:
///    virtual-kubelet` when `node` has it); `terminationGracePeriodSeconds` from the pod when
///    unset; for each container: unique name, no system fields set by the user, present in
///    the pod spec and status with a container ID; its preStop hook (and ports, for an HTTP
///    hook) copied from the pod, and `statusContext` from its status.
pub fn default_crr(
    crr: &ContainerRecreateRequest,
    pod: Option<&Pod>,
    node: Option<&Node>,
) -> Result<ContainerRecreateRequest, CrrError> {
    let mut obj = crr.clone();
    if obj.spec.pod_name.is_empty() {
        return Err(CrrError::PodNameEmpty);
    }
    let strategy = obj.spec.strategy.get_or_insert_with(ContainerRecreateRequestStrategy::default);
    obj.metadata
        .labels
        .get_or_insert_with(Default::default)
        .insert(labels::CRR_ACTIVE.to_owned(), "true".to_owned());
    if obj.spec.containers.is_empty() {
        return Err(CrrError::NoContainers);
    }
    if obj.spec.active_deadline_seconds.is_some_and(|d| d < MIN_ACTIVE_DEADLINE_SECONDS) {
        return Err(CrrError::DeadlineTooShort);
    }
    if strategy.termination_grace_period_seconds.is_some_and(|s| s < 0) {
        return Err(CrrError::NegativeTerminationGrace);
    }
    if strategy.unready_grace_period_seconds.is_some_and(|s| s < 0) {
        return Err(CrrError::NegativeUnreadyGrace);
    }
    match &strategy.failure_policy {
        None => strategy.failure_policy = Some(ContainerRecreateRequestFailurePolicyType::Fail),
        Some(ContainerRecreateRequestFailurePolicyType::Other(other)) if other.is_empty() => {
            strategy.failure_policy = Some(ContainerRecreateRequestFailurePolicyType::Fail)
        }
        Some(ContainerRecreateRequestFailurePolicyType::Other(other)) => {
            return Err(CrrError::UnknownFailurePolicy(other.clone()));
        }
        Some(_) => {}
    }

    let Some(pod) = pod else {
        return Err(CrrError::PodNotFound(obj.spec.pod_name.clone()));
    };
    let node_name = pod.spec.as_ref().and_then(|s| s.node_name.clone()).unwrap_or_default();
    if !is_pod_active(pod) && !terminated_by_sidecar_terminator(pod) {
        return Err(CrrError::PodInactive);
    } else if node_name.is_empty() {
        return Err(CrrError::PodPending);
    }

    let labels_map = obj.metadata.labels.get_or_insert_with(Default::default);
    labels_map.insert(labels::CRR_NODE_NAME.to_owned(), node_name);
    labels_map.insert(labels::CRR_POD_UID.to_owned(), pod.metadata.uid.clone().unwrap_or_default());
    let virtual_node = node
        .and_then(|n| n.metadata.labels.as_ref())
        .and_then(|l| l.get(VIRTUAL_KUBELET_LABEL))
        .is_some_and(|v| v == VIRTUAL_KUBELET_VALUE);
    if virtual_node {
        labels_map.insert(VIRTUAL_KUBELET_LABEL.to_owned(), VIRTUAL_KUBELET_VALUE.to_owned());
    }

    let pod_spec = pod.spec.as_ref();
    if let Some(strategy) = obj.spec.strategy.as_mut()
        && strategy.termination_grace_period_seconds.is_none()
    {
        strategy.termination_grace_period_seconds =
            pod_spec.and_then(|s| s.termination_grace_period_seconds);
    }

    let statuses = pod.status.as_ref().and_then(|s| s.container_statuses.as_deref()).unwrap_or(&[]);
    let mut seen = BTreeSet::new();
    for (index, c) in obj.spec.containers.iter_mut().enumerate() {
        if seen.contains(&c.name) {
            return Err(CrrError::DuplicateContainer { index, name: c.name.clone() });
        }
        if c.pre_stop.is_some() || !c.ports.is_empty() || c.status_context.is_some() {
            return Err(CrrError::ReadOnlyFields { index });
        }
        let Some(pod_container) =
            pod_spec.and_then(|s| s.containers.iter().find(|pc| pc.name == c.name))
        else {
            return Err(CrrError::ContainerNotFound { index, name: c.name.clone() });
        };
        let Some(status) = statuses.iter().find(|s| s.name == c.name) else {
            return Err(CrrError::NoContainerStatus { index, name: c.name.clone() });
        };
        let container_id = status.container_id.clone().unwrap_or_default();
        if container_id.is_empty() {
            return Err(CrrError::NoContainerId { index, name: c.name.clone() });
        }
        if let Some(pre_stop) = pod_container.lifecycle.as_ref().and_then(|l| l.pre_stop.as_ref()) {
            c.pre_stop = Some(CRRProbeHandler {
                exec: pre_stop.exec.clone(),
                http_get: pre_stop.http_get.clone(),
                tcp_socket: pre_stop.tcp_socket.clone(),
            });
        }
        if c.pre_stop.as_ref().is_some_and(|p| p.http_get.is_some()) {
            c.ports = pod_container.ports.clone().unwrap_or_default();
        }
        c.status_context = Some(ContainerRecreateRequestContainerContext {
            container_id,
            restart_count: status.restart_count,
        });
        seen.insert(c.name.clone());
    }
    Ok(obj)
}

/// The webhook's check on update: the spec and the `pod-uid` and `node-name` labels are
/// immutable.
pub fn validate_crr_update(
    new: &ContainerRecreateRequest,
    old: &ContainerRecreateRequest,
) -> Result<(), CrrError> {
    if new.spec != old.spec {
        return Err(CrrError::SpecImmutable);
    }
    let label = |crr: &ContainerRecreateRequest, key: &str| {
        crr.metadata.labels.as_ref().and_then(|l| l.get(key)).cloned()
    };
    for key in [labels::CRR_POD_UID, labels::CRR_NODE_NAME] {
        if label(new, key) != label(old, key) {
            return Err(CrrError::ImmutableLabel(key.to_owned()));
        }
    }
    Ok(())
}

fn terminated_by_sidecar_terminator(pod: &Pod) -> bool {
    pod.status
        .as_ref()
        .and_then(|s| s.conditions.as_ref())
        .is_some_and(|cs| cs.iter().any(|c| c.type_ == SIDECAR_TERMINATED))
}
