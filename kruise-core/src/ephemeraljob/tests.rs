use super::*;

fn ts(text: &str) -> Timestamp {
    text.parse().expect("a timestamp")
}

fn job(spec: serde_json::Value, status: serde_json::Value) -> EphemeralJob {
    let mut value = json!({
        "apiVersion": "apps.kruise.io/v1alpha1", "kind": "EphemeralJob",
        "metadata": {"name": "debug", "namespace": "default", "uid": "ejob-uid",
                     "resourceVersion": "7"},
        "spec": {"selector": {"matchLabels": {"app": "web"}},
                 "template": {"ephemeralContainers": [{"name": "debugger", "image": "busybox",
                     "imagePullPolicy": "IfNotPresent", "terminationMessagePolicy": "File",
                     "command": ["sleep", "3"]}]}},
        "status": status,
    });
    if let (Some(base), Some(extra)) = (value["spec"].as_object_mut(), spec.as_object()) {
        for (k, v) in extra {
            base.insert(k.clone(), v.clone());
        }
    }
    serde_json::from_value(value).expect("a job")
}

/// A running pod of `web`, created `minute` minutes past nine; `debugger` describes the
/// job's container in it: None (not added), or its state.
fn pod(name: &str, minute: u32, debugger: Option<serde_json::Value>) -> Pod {
    let mut value = json!({
        "metadata": {"name": name, "namespace": "default", "labels": {"app": "web"},
                     "creationTimestamp": format!("2026-01-01T09:{minute:02}:00Z")},
        "spec": {"containers": [{"name": "main", "image": "nginx"}]},
        "status": {"phase": "Running"},
    });
    if let Some(state) = debugger {
        value["spec"]["ephemeralContainers"] = json!([{"name": "debugger", "image": "busybox",
            "env": [{"name": KRUISE_EJOB_ID, "value": "ejob-uid"}]}]);
        if !state.is_null() {
            value["status"]["ephemeralContainerStatuses"] = json!([{"name": "debugger",
                "image": "busybox", "imageID": "", "ready": false, "restartCount": 0,
                "state": state}]);
        }
    }
    serde_json::from_value(value).expect("a pod")
}

fn exited(code: i32) -> Option<serde_json::Value> {
    Some(json!({"terminated": {"exitCode": code, "finishedAt": "2026-01-01T09:30:00Z"}}))
}

fn patched(plan: &Plan<EphemeralJobStatus>) -> Vec<String> {
    plan.actions
        .iter()
        .filter_map(|a| match a {
            Action::PatchObject {
                target, subresource: Subresource::EphemeralContainers, ..
            } => Some(target.name.clone()),
            _ => None,
        })
        .collect()
}

const NOW: &str = "2026-01-01T10:00:00Z";

#[test]
fn targets_are_the_oldest_matching_active_pods_without_a_conflict() {
    let j = job(json!({"replicas": 2}), json!({}));
    let mut finished = pod("finished", 0, None);
    finished.status = Some(serde_json::from_value(json!({"phase": "Succeeded"})).expect("s"));
    let mut conflict = pod("conflict", 1, None);
    conflict.spec.as_mut().expect("spec").ephemeral_containers =
        Some(vec![serde_json::from_value(json!({"name": "debugger", "image": "x"})).expect("c")]);
    let mut other = pod("other-app", 2, None);
    other.metadata.labels = Some([("app".to_owned(), "db".to_owned())].into());
    let pods =
        vec![pod("c", 5, None), finished, conflict, other, pod("b", 4, None), pod("a", 4, None)];
    let names: Vec<_> =
        targets(&j, &pods).iter().map(|p| p.metadata.name.clone().unwrap_or_default()).collect();
    assert_eq!(names, ["a", "b"]);
    let mut no_selector = j.clone();
    no_selector.spec.selector = None;
    assert!(targets(&no_selector, &pods).is_empty());
}

#[test]
fn containers_are_added_within_the_parallelism_and_marked_with_the_job() {
    let j = job(json!({"parallelism": 2}), json!({}));
    let pods =
        vec![pod("a", 1, Some(json!({"running": {}}))), pod("b", 2, None), pod("c", 3, None)];
    let out = plan(&Snapshot { job: j.clone(), pods }, ts(NOW));
    assert_eq!(patched(&out), ["b"], "one running, room for one more");
    let Some(Action::PatchObject { patch, .. }) = out.actions.first() else { panic!() };
    let env = &patch.body()["spec"]["ephemeralContainers"][0]["env"];
    assert_eq!(env, &json!([{"name": "KRUISE_EJOB_ID", "value": "ejob-uid"}]));
    let status = out.status.expect("status");
    assert_eq!((status.matches, status.running, status.phase.as_str()), (3, 1, "Running"));
    // A container that waits for its image still counts against the parallelism.
    let pods = vec![
        pod("a", 1, Some(json!({"waiting": {"reason": "ContainerCreating"}}))),
        pod("b", 2, Some(serde_json::Value::Null)),
        pod("c", 3, None),
    ];
    let out = plan(&Snapshot { job: j, pods }, ts(NOW));
    assert!(patched(&out).is_empty(), "{out:?}");
}

#[test]
fn the_job_succeeds_fails_and_goes_after_its_ttl() {
    let j = job(json!({"ttlSecondsAfterFinished": 60}), json!({}));
    let pods = vec![pod("a", 1, exited(0)), pod("b", 2, exited(0))];
    let out = plan(&Snapshot { job: j.clone(), pods }, ts(NOW));
    let status = out.status.clone().expect("status");
    assert_eq!(status.phase, EphemeralJobPhase::Succeeded);
    assert_eq!(status.completion_time, Some(Time(ts(NOW))));
    assert!(status.conditions.iter().any(|c| c.reason == "JobSucceeded"));
    assert_eq!(out.requeue_after, Some(SignedDuration::from_secs(60)));
    let mut done = j.clone();
    done.status = Some(status);
    let waiting = plan(&Snapshot { job: done.clone(), pods: vec![] }, ts("2026-01-01T10:00:30Z"));
    assert!(waiting.actions.is_empty());
    assert_eq!(waiting.requeue_after, Some(SignedDuration::from_secs(30)));
    let gone = plan(&Snapshot { job: done, pods: vec![] }, ts("2026-01-01T10:01:00Z"));
    assert!(matches!(&gone.actions[..], [Action::DeleteObject { .. }]), "{gone:?}");

    let failed = plan(
        &Snapshot { job: j, pods: vec![pod("a", 1, exited(2)), pod("b", 2, exited(1))] },
        ts(NOW),
    );
    let status = failed.status.expect("status");
    assert_eq!(status.phase, EphemeralJobPhase::Failed);
    assert_eq!(status.failed, 2);
}

#[test]
fn the_deadline_fails_a_running_job_and_paused_adds_nothing() {
    let j = job(
        json!({"activeDeadlineSeconds": 20}),
        json!({"startTime": "2026-01-01T09:59:30Z", "phase": "Running"}),
    );
    let pods = vec![pod("a", 1, Some(json!({"running": {}})))];
    let out = plan(&Snapshot { job: j, pods: pods.clone() }, ts(NOW));
    let status = out.status.expect("status");
    assert_eq!(status.phase, EphemeralJobPhase::Failed);
    assert!(status.conditions.iter().any(|c| c.reason == "DeadlineExceeded"));
    let paused = job(json!({"paused": true}), json!({}));
    let out = plan(&Snapshot { job: paused, pods: vec![pod("b", 1, None)] }, ts(NOW));
    assert!(patched(&out).is_empty());
    assert_eq!(out.status.expect("status").phase, EphemeralJobPhase::Paused);
}

#[test]
fn the_plan_is_idempotent_once_its_outcome_is_seen() {
    let j = job(json!({}), json!({}));
    let first = plan(&Snapshot { job: j.clone(), pods: vec![pod("a", 1, None)] }, ts(NOW));
    assert_eq!(patched(&first), ["a"]);
    let mut seen = j;
    seen.status = first.status;
    let again = plan(
        &Snapshot { job: seen, pods: vec![pod("a", 1, Some(serde_json::Value::Null))] },
        ts("2026-01-01T10:00:05Z"),
    );
    assert!(again.is_noop(), "{again:?}");
}

#[test]
fn a_deleted_job_drops_upstreams_finalizer() {
    let mut j = job(json!({}), json!({}));
    j.metadata.deletion_timestamp = Some(Time(ts(NOW)));
    j.metadata.finalizers = Some(vec![EPHEMERAL_CONTAINERS_CLEANUP.into(), "other".into()]);
    let out = plan(&Snapshot { job: j, pods: vec![] }, ts(NOW));
    let [Action::PatchObject { patch, target, .. }] = &out.actions[..] else { panic!("{out:?}") };
    assert_eq!(patch.body(), &json!({"metadata": {"finalizers": ["other"]}}));
    assert_eq!(target.guard, Guard::ResourceVersion("7".into()));
}
