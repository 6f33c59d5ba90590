#![allow(clippy::unwrap_used)]

use jiff::Timestamp;
use k8s_openapi::api::core::v1::Pod;
use kruise_api::apps::v1beta1::{ContainerRecreateRequest, ContainerRecreateRequestPhase as Phase};
use serde_json::json;

use super::*;

fn ts(s: &str) -> Timestamp {
    s.parse().unwrap()
}

fn pod() -> Pod {
    serde_json::from_value(json!({
        "metadata": {"name": "p", "namespace": "ns", "uid": "pod-uid"},
        "spec": {"nodeName": "n1", "terminationGracePeriodSeconds": 20, "containers": [
            {"name": "app", "image": "app:1", "lifecycle": {"preStop": {"httpGet": {"port": 80}}}, "ports": [{"containerPort": 80}]},
            {"name": "sidecar", "image": "side:1"}]},
        "status": {"phase": "Running", "containerStatuses": [
            {"name": "app", "image": "app:1", "imageID": "", "ready": true, "restartCount": 1, "containerID": "containerd://a1"},
            {"name": "sidecar", "image": "side:1", "imageID": "", "ready": true, "restartCount": 0, "containerID": "containerd://s1"}]}
    }))
    .unwrap()
}

fn crr(containers: &[&str]) -> ContainerRecreateRequest {
    let containers: Vec<_> = containers.iter().map(|c| json!({"name": c})).collect();
    serde_json::from_value(json!({
        "metadata": {"name": "r", "namespace": "ns", "creationTimestamp": "2026-01-01T00:00:00Z"},
        "spec": {"podName": "p", "containers": containers}
    }))
    .unwrap()
}

#[test]
fn webhook_fills_in_context_labels_and_defaults() {
    let out = default_crr(&crr(&["app"]), Some(&pod()), None).unwrap();
    let labels = out.metadata.labels.as_ref().unwrap();
    assert_eq!(labels["crr.apps.kruise.io/node-name"], "n1");
    assert_eq!(labels["crr.apps.kruise.io/pod-uid"], "pod-uid");
    assert_eq!(labels["crr.apps.kruise.io/active"], "true");
    let strategy = out.spec.strategy.as_ref().unwrap();
    assert_eq!(strategy.termination_grace_period_seconds, Some(20));
    assert_eq!(strategy.failure_policy.as_ref().unwrap().as_str(), "Fail");
    let c = &out.spec.containers[0];
    assert_eq!(c.status_context.as_ref().unwrap().container_id, "containerd://a1");
    assert_eq!(c.status_context.as_ref().unwrap().restart_count, 1);
    assert!(c.pre_stop.as_ref().unwrap().http_get.is_some());
    assert_eq!(c.ports.len(), 1);
}

#[test]
fn webhook_errors_name_the_field() {
    let err = default_crr(&crr(&["app", "nope"]), Some(&pod()), None).unwrap_err();
    assert_eq!(err.field().to_string(), "spec.containers[1].name");
    assert_eq!(err.to_string(), "container nope not found in Pod");
    let err = default_crr(&crr(&["app", "app"]), Some(&pod()), None).unwrap_err();
    assert_eq!(err.to_string(), "can not recreate app multi times");
    assert_eq!(default_crr(&crr(&[]), Some(&pod()), None).unwrap_err(), CrrError::NoContainers);
    assert_eq!(
        default_crr(&crr(&["app"]), None, None).unwrap_err().field().to_string(),
        "spec.podName"
    );
    let mut update = default_crr(&crr(&["app"]), Some(&pod()), None).unwrap();
    let old = update.clone();
    update.spec.pod_name = "q".into();
    assert_eq!(validate_crr_update(&update, &old), Err(CrrError::SpecImmutable));
}

fn admitted(containers: &[&str]) -> ContainerRecreateRequest {
    default_crr(&crr(containers), Some(&pod()), None).unwrap()
}

fn with_phase(mut c: ContainerRecreateRequest, phase: Phase) -> ContainerRecreateRequest {
    c.status.get_or_insert_with(Default::default).phase = phase;
    c
}

#[test]
fn deadline_fails_containers_still_in_progress() {
    let mut c = with_phase(admitted(&["app", "sidecar"]), Phase::Recreating);
    c.spec.active_deadline_seconds = Some(10);
    c.status.as_mut().unwrap().container_recreate_states =
        vec![kruise_api::apps::v1beta1::ContainerRecreateRequestContainerRecreateState {
            name: "app".into(),
            phase: Phase::Succeeded,
            ..Default::default()
        }];
    let plan = plan_crr(&c, Some(&pod()), ts("2026-01-01T00:00:11Z"));
    assert_eq!(
        plan.completed.as_deref(),
        Some("recreating has exceeded the activeDeadlineSeconds")
    );
    let CrrAction::PatchStatus { patch } = &plan.actions[0] else { panic!() };
    let states = &patch.body()["status"]["containerRecreateStates"];
    assert_eq!(states[0]["phase"], "Succeeded");
    assert_eq!(states[1]["phase"], "Failed");
}

#[test]
fn pod_gone_and_ttl() {
    let c = with_phase(admitted(&["app"]), Phase::Recreating);
    assert_eq!(
        plan_crr(&c, None, ts("2026-01-01T00:00:01Z")).completed.as_deref(),
        Some("pod has gone")
    );
    let mut done = c.clone();
    done.spec.ttl_seconds_after_finished = Some(5);
    done.metadata.labels.as_mut().unwrap().remove("crr.apps.kruise.io/active");
    done.status.as_mut().unwrap().completion_time = Some(time(ts("2026-01-01T00:00:10Z")));
    let plan = plan_crr(&done, Some(&pod()), ts("2026-01-01T00:00:12Z"));
    assert_eq!(plan.requeue_after, Some(SignedDuration::from_secs(3)));
    assert_eq!(
        plan_crr(&done, Some(&pod()), ts("2026-01-01T00:00:15Z")).actions,
        vec![CrrAction::Delete]
    );
}

#[test]
fn second_request_runs_after_the_first() {
    let a = admitted(&["app"]);
    let mut b = admitted(&["app"]);
    b.metadata.name = Some("s".into());
    b.metadata.creation_timestamp = Some(time(ts("2026-01-01T00:00:05Z")));
    let pick = pick_active(&[b.clone(), a.clone()]);
    assert_eq!(pick.active.as_deref(), Some("r"));
    assert_eq!(pick.waiting[0].reason, "waiting for ContainerRecreateRequest r on the same Pod");
    let mut a_done = a;
    a_done.status.get_or_insert_with(Default::default).completion_time =
        Some(time(ts("2026-01-01T00:01:00Z")));
    assert_eq!(pick_active(&[b, a_done]).active.as_deref(), Some("s"));
}

fn running(name: &str, id: &str, restarts: i32, started: &str) -> ContainerSnapshot {
    ContainerSnapshot {
        name: name.into(),
        id: id.into(),
        restart_count: restarts,
        state: ContainerRuntimeState::Running,
        started_at: Some(ts(started)),
    }
}

#[test]
fn ordered_recreate_stops_one_at_a_time() {
    let mut c = with_phase(admitted(&["app", "sidecar"]), Phase::Recreating);
    c.spec.strategy.as_mut().unwrap().ordered_recreate = true;
    let now = ts("2026-01-01T00:00:01Z");
    let rt = vec![
        running("app", "containerd://a1", 1, "2025-12-31T00:00:00Z"),
        running("sidecar", "containerd://s1", 0, "2025-12-31T00:00:00Z"),
    ];
    let plan = plan_recreate(&c, Some(&pod()), &rt, now);
    assert_eq!(
        plan.stop,
        vec![StopContainer { id: "containerd://a1".into(), name: "app".into(), grace_seconds: 20 }]
    );
    c.status.as_mut().unwrap().container_recreate_states = plan.states.unwrap();
    // The stop is in flight: the old instance still runs. Nothing is stopped again.
    let again = plan_recreate(&c, Some(&pod()), &rt, now);
    assert!(again.stop.is_empty());
    // The new instance runs but is not ready yet: the sidecar waits.
    let rt2 = vec![running("app", "containerd://a2", 2, "2026-01-01T00:00:02Z"), rt[1].clone()];
    let plan = plan_recreate(&c, None, &rt2, ts("2026-01-01T00:00:03Z"));
    assert!(plan.stop.is_empty());
}
