//! ContainerRecreateRequest v1alpha1 <-> v1beta1.
//!
//! The spec is identical. v1beta1 adds two status fields that v1alpha1 keeps in annotations,
//! under the same keys upstream uses:
//! - `crr.apps.kruise.io/sync-container-statuses` (a JSON list) is
//!   `status.containerStatusSnapshot`;
//! - `crr.apps.kruise.io/unready-acquired` (an RFC 3339 time) is a `PreRecreateGrace`
//!   condition with status True in `status.conditions`.
//!
//! Upstream copies the annotations onto the v1beta1 object as well. Here an annotation is
//! moved (removed from the v1beta1 object) when converting back writes exactly the same
//! text, so that both directions round-trip without a residue; an annotation that cannot
//! be reproduced exactly (unusual spacing, a time zone offset) is kept, as upstream does.

use std::collections::BTreeMap;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::{Condition, Time};
use k8s_openapi::jiff::Timestamp;

use super::HubConvertible;
use crate::apps::v1beta1::ContainerRecreateRequestSyncContainerStatus as SyncStatus;
use crate::apps::{v1alpha1 as alpha, v1beta1 as beta};
use crate::well_known::annotations::{
    CRR_SYNC_CONTAINER_STATUSES as SYNC_KEY, CRR_UNREADY_ACQUIRED as UNREADY_KEY,
};
use crate::well_known::conditions::container_recreate_request::PRE_RECREATE_GRACE as GRACE_TYPE;

/// Message of the condition built from the v1alpha1 annotation.
const GRACE_MESSAGE: &str = "Pod is held not-ready for the unready grace period before recreation";

impl HubConvertible for alpha::ContainerRecreateRequest {
    type Hub = beta::ContainerRecreateRequest;

    fn map_to_hub(self) -> beta::ContainerRecreateRequest {
        let alpha::ContainerRecreateRequest { mut metadata, spec, status } = self;
        let snapshot = promote(
            &mut metadata.annotations,
            SYNC_KEY,
            |raw| serde_json::from_str::<Vec<SyncStatus>>(raw).ok().filter(|list| !list.is_empty()),
            |list| serde_json::to_string(list).ok(),
        );
        let grace = promote(
            &mut metadata.annotations,
            UNREADY_KEY,
            |raw| raw.parse::<Timestamp>().ok().map(Time),
            time_text,
        );
        let status = if status.is_none() && snapshot.is_none() && grace.is_none() {
            None
        } else {
            let status = status.unwrap_or_default();
            Some(beta::ContainerRecreateRequestStatus {
                phase: status.phase,
                completion_time: status.completion_time,
                message: status.message,
                container_recreate_states: status.container_recreate_states,
                container_status_snapshot: snapshot.unwrap_or_default(),
                conditions: grace.map(grace_condition).into_iter().collect(),
            })
        };
        let spec = beta::ContainerRecreateRequestSpec {
            pod_name: spec.pod_name,
            containers: spec.containers,
            strategy: spec.strategy,
            active_deadline_seconds: spec.active_deadline_seconds,
            ttl_seconds_after_finished: spec.ttl_seconds_after_finished,
        };
        beta::ContainerRecreateRequest { metadata, spec, status }
    }

    fn map_from_hub(hub: beta::ContainerRecreateRequest) -> Self {
        let beta::ContainerRecreateRequest { mut metadata, spec, status } = hub;
        let status = status.map(|status| {
            let mut set = |key: &str, value: String| {
                metadata
                    .annotations
                    .get_or_insert_with(BTreeMap::new)
                    .insert(key.to_owned(), value);
            };
            if !status.container_status_snapshot.is_empty()
                && let Ok(raw) = serde_json::to_string(&status.container_status_snapshot)
            {
                set(SYNC_KEY, raw);
            }
            let grace = status
                .conditions
                .iter()
                .find(|condition| condition.type_ == GRACE_TYPE && condition.status == "True");
            if let Some(text) =
                grace.and_then(|condition| time_text(&condition.last_transition_time))
            {
                set(UNREADY_KEY, text);
            }
            alpha::ContainerRecreateRequestStatus {
                phase: status.phase,
                completion_time: status.completion_time,
                message: status.message,
                container_recreate_states: status.container_recreate_states,
            }
        });
        let spec = alpha::ContainerRecreateRequestSpec {
            pod_name: spec.pod_name,
            containers: spec.containers,
            strategy: spec.strategy,
            active_deadline_seconds: spec.active_deadline_seconds,
            ttl_seconds_after_finished: spec.ttl_seconds_after_finished,
        };
        alpha::ContainerRecreateRequest { metadata, spec, status }
    }
}

/// Reads the annotation `key` with `parse`. The annotation is removed when `render` gives
/// back exactly its text, and kept otherwise.
fn promote<T>(
    annotations: &mut Option<BTreeMap<String, String>>,
    key: &str,
    parse: impl Fn(&str) -> Option<T>,
    render: impl Fn(&T) -> Option<String>,
) -> Option<T> {
    let map = annotations.as_mut()?;
    let raw = map.get(key).filter(|raw| !raw.is_empty())?;
    let value = parse(raw)?;
    if render(&value).as_deref() == Some(raw.as_str()) {
        map.remove(key);
        if map.is_empty() {
            *annotations = None;
        }
    }
    Some(value)
}

/// The time as upstream writes it into the annotation: RFC 3339 in UTC, whole seconds.
fn time_text(time: &Time) -> Option<String> {
    match serde_json::to_value(time) {
        Ok(serde_json::Value::String(text)) => Some(text),
        _ => None,
    }
}

/// The condition that stands for the v1alpha1 annotation.
fn grace_condition(time: Time) -> Condition {
    Condition {
        type_: GRACE_TYPE.to_owned(),
        status: "True".to_owned(),
        last_transition_time: time,
        reason: GRACE_TYPE.to_owned(),
        message: GRACE_MESSAGE.to_owned(),
        observed_generation: None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::conversion::{from_hub, to_hub};
    use serde_json::json;

    fn spec() -> serde_json::Value {
        json!({
            "podName": "pod-1",
            "containers": [
                {"name": "app", "preStop": {"exec": {"command": ["/bin/sh", "-c", "sleep 5"]}},
                 "statusContext": {"containerID": "containerd://abc", "restartCount": 1}},
                {"name": "sidecar"}
            ],
            "strategy": {"failurePolicy": "Fail", "orderedRecreate": true,
                         "unreadyGracePeriodSeconds": 3, "minStartedSeconds": 10},
            "activeDeadlineSeconds": 300,
            "ttlSecondsAfterFinished": 1800
        })
    }

    #[test]
    fn annotations_become_status_fields_and_come_back() {
        let snapshot =
            r#"[{"name":"app","ready":true,"restartCount":2,"containerID":"containerd://def"}]"#;
        let original = json!({
            "apiVersion": "apps.kruise.io/v1alpha1", "kind": "ContainerRecreateRequest",
            "metadata": {"name": "crr-1", "namespace": "default", "annotations": {
                SYNC_KEY: snapshot, UNREADY_KEY: "2024-05-01T10:00:00Z"
            }},
            "spec": spec(),
            "status": {"phase": "Recreating",
                       "containerRecreateStates": [{"name": "app", "phase": "Recreating", "isKilled": true}]}
        });
        let crr: alpha::ContainerRecreateRequest =
            serde_json::from_value(original.clone()).expect("decode");
        assert_eq!(serde_json::to_value(&crr).expect("encode"), original);

        let hub = to_hub(crr.clone()).expect("to hub");
        let value = serde_json::to_value(&hub).expect("encode hub");
        assert_eq!(value["apiVersion"], "apps.kruise.io/v1beta1");
        assert_eq!(value["spec"], spec());
        assert!(value["metadata"].get("annotations").is_none(), "moved, and no residue");
        assert_eq!(
            value["status"]["containerStatusSnapshot"],
            json!([{"name": "app", "ready": true, "restartCount": 2, "containerID": "containerd://def"}])
        );
        assert_eq!(value["status"]["conditions"][0]["type"], "PreRecreateGrace");
        assert_eq!(value["status"]["conditions"][0]["status"], "True");
        assert_eq!(value["status"]["conditions"][0]["lastTransitionTime"], "2024-05-01T10:00:00Z");

        assert_eq!(from_hub::<alpha::ContainerRecreateRequest>(hub.clone()).expect("back"), crr);
        assert_eq!(
            to_hub(from_hub::<alpha::ContainerRecreateRequest>(hub.clone()).expect("down"))
                .expect("up"),
            hub
        );
    }

    #[test]
    fn plain_request_maps_field_for_field() {
        let original = json!({
            "apiVersion": "apps.kruise.io/v1beta1", "kind": "ContainerRecreateRequest",
            "metadata": {"name": "crr-2"},
            "spec": spec(),
            "status": {"phase": "Succeeded", "completionTime": "2024-05-01T10:01:00Z"}
        });
        let hub: beta::ContainerRecreateRequest =
            serde_json::from_value(original.clone()).expect("decode");
        assert_eq!(serde_json::to_value(&hub).expect("encode"), original);
        let down = from_hub::<alpha::ContainerRecreateRequest>(hub.clone()).expect("down");
        assert!(down.metadata.annotations.is_none(), "no residue");
        let mut expected = original;
        expected["apiVersion"] = json!("apps.kruise.io/v1alpha1");
        assert_eq!(serde_json::to_value(&down).expect("encode"), expected);
        assert_eq!(to_hub(down).expect("up"), hub);
    }

    #[test]
    fn an_offset_time_annotation_is_kept_and_restored() {
        let crr: alpha::ContainerRecreateRequest = serde_json::from_value(json!({
            "apiVersion": "apps.kruise.io/v1alpha1", "kind": "ContainerRecreateRequest",
            "metadata": {"name": "crr-3", "annotations": {UNREADY_KEY: "2024-05-01T12:00:00+02:00"}},
            "spec": {"podName": "p", "containers": []}
        }))
        .expect("decode");
        let hub = to_hub(crr.clone()).expect("to hub");
        let status = hub.status.clone().expect("status from the annotation");
        assert_eq!(
            time_text(&status.conditions[0].last_transition_time).as_deref(),
            Some("2024-05-01T10:00:00Z")
        );
        assert_eq!(from_hub::<alpha::ContainerRecreateRequest>(hub).expect("back"), crr);
    }
}
