//! Upstream's controller test table (`broadcastjob_controller_test.go`), as plans.

use super::*;
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;
use serde_json::json;

pub(crate) fn node(name: &str) -> Node {
    serde_json::from_value(json!({
        "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name}},
        "status": {"allocatable": {"cpu": "4", "memory": "8Gi", "pods": "10"}}
    }))
    .expect("a node")
}

pub(crate) fn job(parallelism: Option<IntOrString>, extra: serde_json::Value) -> BroadcastJob {
    let mut value = json!({
        "apiVersion": "apps.kruise.io/v1beta1", "kind": "BroadcastJob",
        "metadata": {"name": "job", "namespace": "default", "uid": "job-uid"},
        "spec": {
            "template": {"spec": {"restartPolicy": "Never",
                "containers": [{"name": "main", "image": "busybox"}]}},
        }
    });
    if let Some(p) = parallelism {
        value["spec"]["parallelism"] = serde_json::to_value(p).expect("json");
    }
    json_merge(&mut value, extra);
    serde_json::from_value(value).expect("a job")
}

fn json_merge(base: &mut serde_json::Value, extra: serde_json::Value) {
    match (base, extra) {
        (serde_json::Value::Object(b), serde_json::Value::Object(e)) => {
            for (k, v) in e {
                json_merge(b.entry(k).or_insert(serde_json::Value::Null), v);
            }
        }
        (b, e) => *b = e,
    }
}

pub(crate) fn pod_on(job: &BroadcastJob, node: &str, phase: &str) -> Pod {
    let mut pod = pod_for_node(job, node, false);
    pod.metadata.uid = Some(format!("uid-{node}"));
    pod.status = Some(serde_json::from_value(json!({"phase": phase})).expect("status"));
    pod
}

fn now() -> Timestamp {
    "2026-12-04T12:00:00Z".parse().expect("time")
}

fn created_nodes(plan: &Plan<BroadcastJobStatus>) -> Vec<String> {
    plan.actions
        .iter()
        .filter_map(|a| match a {
            Action::CreatePod { pod } => assigned_node(pod).map(str::to_owned),
            _ => None,
        })
        .collect()
}

fn snapshot(job: BroadcastJob, pods: Vec<Pod>, nodes: &[&str]) -> Snapshot {
    Snapshot {
        job,
        pods,
        nodes: nodes.iter().map(|n| node(n)).collect(),
        assign_by_scheduler: true,
        readiness_gate: true,
    }
}

#[test]
fn an_absolute_parallelism_creates_up_to_it() {
    let job = job(Some(IntOrString::Int(2)), json!({}));
    let pods = vec![pod_on(&job, "n1", "Running")];
    let plan = plan(&snapshot(job, pods, &["n1", "n2", "n3"]), now());
    assert_eq!(created_nodes(&plan), ["n2"]);
    let status = plan.status.expect("a status");
    assert_eq!((status.active, status.desired), (1, 3));
    assert_eq!(status.phase, BroadcastJobPhase::Running);
    assert!(status.start_time.is_some());
}

#[test]
fn a_percentage_parallelism_rounds_up() {
    let job = job(Some(IntOrString::String("40%".into())), json!({}));
    let pods = vec![pod_on(&job, "n1", "Running")];
    let plan = plan(&snapshot(job, pods, &["n1", "n2", "n3", "n4", "n5"]), now());
    assert_eq!(created_nodes(&plan), ["n2"]);
    assert_eq!(plan.status.expect("status").desired, 5);
}

#[test]
fn cordoned_and_untolerated_nodes_get_no_pod() {
    let job = job(None, json!({}));
    let mut cordoned = node("n2");
    cordoned.spec = Some(serde_json::from_value(json!({"unschedulable": true})).expect("spec"));
    let mut tainted = node("n3");
    tainted.spec = Some(
        serde_json::from_value(json!({"taints": [{"key": "gpu", "effect": "NoSchedule"}]}))
            .expect("spec"),
    );
    let mut full = node("n4");
    full.status = Some(serde_json::from_value(json!({"allocatable": {"cpu": "1"}})).expect("s"));
    let snap = Snapshot {
        job,
        pods: vec![],
        nodes: vec![node("n1"), cordoned, tainted, full],
        assign_by_scheduler: true,
        readiness_gate: true,
    };
    let plan = plan(&snap, now());
    assert_eq!(created_nodes(&plan), ["n1"]);
    assert_eq!(plan.status.expect("status").desired, 1);
}

#[test]
fn pods_are_bound_by_affinity_for_the_scheduler_or_by_node_name() {
    let job = job(None, json!({}));
    let scheduled = pod_for_node(&job, "n1", true);
    let spec = scheduled.spec.as_ref().expect("spec");
    assert_eq!(spec.node_name, None);
    assert_eq!(assigned_node(&scheduled), Some("n1"));
    let labels = scheduled.metadata.labels.as_ref().expect("labels");
    assert_eq!(labels[JOB_NAME_LABEL], "job");
    assert_eq!(labels[CONTROLLER_UID_LABEL], "job-uid");
    let bound = pod_for_node(&job, "n1", false);
    assert_eq!(bound.spec.as_ref().and_then(|s| s.node_name.as_deref()), Some("n1"));
    assert_eq!(scheduled.metadata.name, bound.metadata.name, "one name per node");
    assert_ne!(pod_for_node(&job, "n2", true).metadata.name, scheduled.metadata.name);
}

#[test]
fn fail_fast_fails_the_job_and_deletes_the_active_pods() {
    let job = job(None, json!({}));
    let pods = vec![
        pod_on(&job, "n1", "Succeeded"),
        pod_on(&job, "n2", "Failed"),
        pod_on(&job, "n3", "Running"),
    ];
    let plan = plan(&snapshot(job, pods, &["n1", "n2", "n3", "n4"]), now());
    assert!(created_nodes(&plan).is_empty());
    assert_eq!(plan.actions.len(), 1, "the running pod is deleted");
    let status = plan.status.expect("status");
    assert_eq!(status.phase, BroadcastJobPhase::Failed);
    assert_eq!((status.succeeded, status.failed, status.active), (1, 2, 0));
    assert_eq!(status.conditions.last().map(|c| c.type_.clone()), Some(JobConditionType::Failed));
    assert!(status.completion_time.is_some());
}

#[test]
fn continue_carries_on_and_pause_pauses() {
    let continued = job(None, json!({"spec": {"failurePolicy": {"type": "Continue"}}}));
    let pods = vec![pod_on(&continued, "n1", "Succeeded"), pod_on(&continued, "n3", "Failed")];
    let plan_c = plan(&snapshot(continued, pods, &["n1", "n2", "n3"]), now());
    assert_eq!(created_nodes(&plan_c), ["n2"]);
    assert_eq!(plan_c.status.expect("status").phase, BroadcastJobPhase::Running);

    let paused = job(None, json!({"spec": {"failurePolicy": {"type": "Pause"}}}));
    let pods = vec![pod_on(&paused, "n1", "Succeeded"), pod_on(&paused, "n3", "Failed")];
    let plan_p = plan(&snapshot(paused, pods, &["n1", "n2", "n3"]), now());
    assert!(plan_p.actions.is_empty());
    assert_eq!(plan_p.status.expect("status").phase, BroadcastJobPhase::Paused);
}

#[test]
fn a_paused_job_counts_but_creates_nothing() {
    let job = job(Some(IntOrString::String("50%".into())), json!({"spec": {"paused": true}}));
    let pods = vec![pod_on(&job, "gone-0", "Running"), pod_on(&job, "gone-1", "Running")];
    let plan = plan(&snapshot(job, pods, &["n0", "n1", "n2", "n3"]), now());
    assert!(plan.actions.is_empty());
    let status = plan.status.expect("status");
    assert_eq!((status.phase, status.desired, status.active), (BroadcastJobPhase::Paused, 4, 2));
}

#[test]
fn the_deadline_fails_the_job() {
    let job = job(
        None,
        json!({"spec": {"completionPolicy": {"activeDeadlineSeconds": 0},
                        "failurePolicy": {"type": "Continue"}}}),
    );
    let pods = vec![pod_on(&job, "n1", "Running"), pod_on(&job, "n2", "Running")];
    let plan = plan(&snapshot(job, pods, &["n1", "n2"]), now());
    let status = plan.status.expect("status");
    assert_eq!(status.phase, BroadcastJobPhase::Failed);
    assert_eq!((status.failed, status.active), (2, 0));
    assert_eq!(plan.actions.len(), 2);
    assert!(plan.events.iter().any(|e| e.reason == "DeadlineExceeded"));
}

#[test]
fn every_node_done_completes_and_the_ttl_deletes_the_job() {
    let job = job(None, json!({"spec": {"completionPolicy": {"ttlSecondsAfterFinished": 30}}}));
    let pods = vec![pod_on(&job, "n1", "Succeeded"), pod_on(&job, "n2", "Succeeded")];
    let first = plan(&snapshot(job.clone(), pods.clone(), &["n1", "n2"]), now());
    let status = first.status.clone().expect("status");
    assert_eq!(status.phase, BroadcastJobPhase::Completed);
    assert_eq!(first.requeue_after, Some(SignedDuration::from_secs(31)));
    assert!(first.events.iter().any(|e| e.reason == "JobComplete"));
    let mut done = job;
    done.status = Some(status);
    let early = plan(&snapshot(done.clone(), pods.clone(), &["n1", "n2"]), now());
    assert!(early.actions.is_empty() && early.status.is_none());
    let later = now() + SignedDuration::from_secs(30);
    let late = plan(&snapshot(done, pods, &["n1", "n2"]), later);
    assert!(matches!(&late.actions[..], [Action::DeleteObject { target }]
        if target.kind == BROADCAST_JOB && target.name == "job"));
}

#[test]
fn never_keeps_running_and_a_new_node_gets_a_pod() {
    let job = job(None, json!({"spec": {"completionPolicy": {"type": "Never"}}}));
    let pods = vec![pod_on(&job, "n1", "Succeeded")];
    let plan = plan(&snapshot(job, pods, &["n1", "n2"]), now());
    assert_eq!(created_nodes(&plan), ["n2"]);
    assert_eq!(plan.status.expect("status").phase, BroadcastJobPhase::Running);
}

#[test]
fn on_failure_restarts_past_the_limit_count_as_a_failure() {
    let job = job(
        None,
        json!({"spec": {"template": {"spec": {"restartPolicy": "OnFailure"}},
                        "failurePolicy": {"type": "Continue", "restartLimit": 2}}}),
    );
    let mut restarted = pod_on(&job, "n1", "Running");
    restarted.status = Some(
        serde_json::from_value(json!({"phase": "Running",
            "containerStatuses": [{"name": "main", "image": "busybox", "imageID": "",
                "ready": false, "restartCount": 3}]}))
        .expect("status"),
    );
    let plan = plan(&snapshot(job, vec![restarted], &["n1"]), now());
    let status = plan.status.expect("status");
    assert_eq!((status.failed, status.active), (1, 0));
}

/// A running pod is checked with its own requests, not the template's: one resized past its
/// node's allocatable goes, its neighbour with the template's requests stays.
#[test]
fn a_pod_is_checked_with_its_own_requests() {
    let job = job(
        None,
        json!({"spec": {"template": {"spec": {"containers": [{"name": "main", "image": "busybox",
            "resources": {"requests": {"cpu": "500m"}}}]}}}}),
    );
    let mut resized = pod_on(&job, "n1", "Running");
    let spec = resized.spec.as_mut().expect("spec");
    let requests = spec.containers[0].resources.as_mut().and_then(|r| r.requests.as_mut());
    requests
        .expect("requests")
        .insert("cpu".into(), k8s_openapi::apimachinery::pkg::api::resource::Quantity("8".into()));
    let kept = pod_on(&job, "n2", "Running");
    let plan = plan(&snapshot(job, vec![resized, kept], &["n1", "n2"]), now());
    let deleted: Vec<&str> = plan.deletions().map(|t| t.name.as_str()).collect();
    assert_eq!(deleted, [pod_name("job", "n1")]);
    assert_eq!(plan.status.expect("status").desired, 1);
}
