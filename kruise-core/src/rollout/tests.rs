#![allow(clippy::unwrap_used)]

use super::*;
use proptest::prelude::*;

fn cloneset(replicas: i32, partition: Option<Value>, status: Value) -> CloneSet {
    let mut rolling = json!({});
    if let Some(p) = partition {
        rolling["partition"] = p;
    }
    serde_json::from_value(json!({
        "apiVersion": "apps.kruise.io/v1beta1", "kind": "CloneSet",
        "metadata": {"name": "web", "generation": 2, "resourceVersion": "7"},
        "spec": {"replicas": replicas, "selector": {"matchLabels": {"app": "web"}},
                 "template": {"metadata": {"labels": {"app": "web"}}, "spec": {"containers": [{"name": "main", "image": "x"}]}},
                 "updateStrategy": {"rollingUpdate": rolling}},
        "status": status,
    }))
    .unwrap()
}

fn cs_status(replicas: i32, updated: i32, available: i32) -> Value {
    json!({"observedGeneration": 2, "replicas": replicas, "updatedReplicas": updated,
           "updatedReadyReplicas": available, "updatedAvailableReplicas": available,
           "availableReplicas": available})
}

#[test]
fn a_cloneset_rollout_counts_its_partition() {
    let waiting = cloneset_status(&cloneset(5, Some(json!(2)), cs_status(5, 2, 2))).unwrap();
    assert_eq!(
        waiting,
        RolloutStatus::waiting(
            "Waiting for cloneset \"web\" rollout to finish: 2 out of 3 new replicas have been updated...".into()
        )
    );
    let done = cloneset_status(&cloneset(5, Some(json!(2)), cs_status(5, 3, 3))).unwrap();
    assert!(done.done, "{done:?}");
    assert_eq!(done.message, "partitioned roll out complete: 3 new pods have been updated...");
    // 40% of 5 rounds up to 2.
    assert!(cloneset_status(&cloneset(5, Some(json!("40%")), cs_status(5, 3, 3))).unwrap().done);
    let unavailable = cloneset_status(&cloneset(5, None, cs_status(5, 5, 4))).unwrap();
    assert_eq!(
        unavailable.message,
        "Waiting for cloneset \"web\" rollout to finish: 4 of 5 updated replicas are available..."
    );
    let old = cloneset_status(&cloneset(5, None, cs_status(6, 5, 5))).unwrap();
    assert!(old.message.ends_with("1 old replicas are pending termination..."), "{old:?}");
    let all = cloneset_status(&cloneset(5, None, cs_status(5, 5, 5))).unwrap();
    assert_eq!(all, RolloutStatus::done("cloneset \"web\" successfully rolled out".into()));
    let mut stale = cs_status(5, 5, 5);
    stale["observedGeneration"] = json!(1);
    assert!(!cloneset_status(&cloneset(5, None, stale)).unwrap().done);
    let err = cloneset_status(&cloneset(5, Some(json!("x%")), cs_status(5, 5, 5))).unwrap_err();
    assert!(
        err.to_string()
            .starts_with("spec.updateStrategy.rollingUpdate.partition: Invalid value: \"x%\""),
        "{err}"
    );
}

#[test]
fn an_advanced_statefulset_follows_kubectls_statefulset_wording() {
    let set = |partition: i32, status: Value| -> StatefulSet {
        serde_json::from_value(json!({
            "metadata": {"name": "db", "generation": 1},
            "spec": {"replicas": 3, "selector": {"matchLabels": {"app": "db"}},
                     "template": {"metadata": {"labels": {"app": "db"}}, "spec": {"containers": [{"name": "c", "image": "x"}]}},
                     "updateStrategy": {"rollingUpdate": {"partition": partition}}},
            "status": status,
        }))
        .unwrap()
    };
    let status = |ready: i32, updated: i32, current: &str| {
        json!({"observedGeneration": 1, "replicas": 3, "readyReplicas": ready, "updatedReplicas": updated,
               "currentRevision": current, "updateRevision": "db-2"})
    };
    assert_eq!(
        advanced_statefulset_status(&set(0, status(2, 3, "db-2"))).unwrap().message,
        "Waiting for 1 pods to be ready..."
    );
    let partial = advanced_statefulset_status(&set(1, status(3, 1, "db-1"))).unwrap();
    assert_eq!(
        partial.message,
        "Waiting for partitioned roll out to finish: 1 out of 2 new pods have been updated..."
    );
    assert!(advanced_statefulset_status(&set(1, status(3, 2, "db-1"))).unwrap().done);
    assert!(!advanced_statefulset_status(&set(0, status(3, 2, "db-1"))).unwrap().done);
    let done = advanced_statefulset_status(&set(0, status(3, 3, "db-2"))).unwrap();
    assert_eq!(done.message, "statefulset rolling update complete 3 pods at revision db-2...");
}

#[test]
fn undo_replaces_the_template_with_the_older_revision() {
    let revision = |n: i64, image: &str| -> ControllerRevision {
        serde_json::from_value(json!({
            "metadata": {"name": format!("web-{n}")}, "revision": n,
            "data": {"spec": {"template": {"$patch": "replace", "metadata": {"labels": {"app": "web"}},
                     "spec": {"containers": [{"name": "main", "image": image}]}}}},
        }))
        .unwrap()
    };
    let (one, two, three) = (revision(1, "v1"), revision(2, "v2"), revision(3, "v3"));
    let all = [&three, &one, &two];
    let (chosen, patch) = undo_patch(&all, 0, "9").unwrap();
    assert_eq!(chosen, 2);
    assert_eq!(patch[0], json!({"op": "test", "path": "/metadata/resourceVersion", "value": "9"}));
    assert_eq!(patch[1]["value"]["spec"]["containers"][0]["image"], "v2");
    assert!(patch[1]["value"].get("$patch").is_none());
    assert_eq!(undo_patch(&all, 1, "9").unwrap().0, 1);
    assert_eq!(
        undo_patch(&all, 7, "9").unwrap_err().to_string(),
        "unable to find specified revision 7 in history"
    );
    assert_eq!(undo_patch(&[&one], 0, "9").unwrap_err(), UndoError::NoHistory);
    assert_eq!(history(&all), [(1, "<none>".into()), (2, "<none>".into()), (3, "<none>".into())]);
}

#[test]
fn scale_down_names_its_pods() {
    let set = cloneset(3, None, cs_status(3, 3, 3));
    let owned: Vec<String> = ["web-a", "web-b", "web-c"].map(String::from).to_vec();
    let patch = scale_down_patch(&set, &["web-b".into()], &owned).unwrap();
    assert_eq!(patch[1], json!({"op": "add", "path": "/spec/replicas", "value": 2}));
    assert_eq!(patch[2]["value"]["podsToDelete"], json!(["web-b"]));
    assert_eq!(
        scale_down_patch(&set, &["other".into()], &owned).unwrap_err().to_string(),
        "pod \"other\" does not belong to cloneset \"web\""
    );
    assert_eq!(scale_down_patch(&set, &[], &owned).unwrap_err(), ScaleDownError::NoPods);
}

#[test]
fn pause_and_restart_patches() {
    assert_eq!(
        pause_patch("CloneSet", true),
        Some(json!({"spec": {"updateStrategy": {"rollingUpdate": {"paused": true}}}}))
    );
    assert_eq!(pause_patch("Deployment", false), Some(json!({"spec": {"paused": false}})));
    assert_eq!(pause_patch("UnitedDeployment", true), None);
    let patch = restart_patch(jiff::Timestamp::from_second(0).unwrap());
    assert_eq!(
        patch["spec"]["template"]["metadata"]["annotations"][RESTARTED_AT],
        "1970-01-01T00:00:00+00:00"
    );
    assert!(is_paused(&json!({"spec": {"updateStrategy": {"rollingUpdate": {"paused": true}}}})));
}

#[test]
fn plans_are_described_one_line_an_action() {
    let plan = json!({"actions": [
        {"action": "createRevision", "revision": {"metadata": {"name": "web-7c9"}}},
        {"action": "createPod", "pod": {"metadata": {"name": "web-x7k2p", "labels": {"controller-revision-hash": "web-7c9"}}}},
        {"action": "deletePod", "name": "web-a", "purpose": "scaleIn"},
    ]});
    assert_eq!(
        describe_actions(&plan),
        [
            "createRevision web-7c9",
            "createPod web-x7k2p (revision web-7c9)",
            "deletePod web-a (scaleIn)"
        ]
    );
}

#[test]
fn set_image_names_its_containers() {
    let set = serde_json::to_value(cloneset(3, None, cs_status(3, 3, 3))).unwrap();
    let patch = set_image_patch(&set, &["main=nginx:2".into()]).unwrap().unwrap();
    assert_eq!(
        patch[1],
        json!({"op": "replace", "path": "/spec/template/spec/containers/0/image", "value": "nginx:2"})
    );
    assert_eq!(set_image_patch(&set, &["*=x".into()]).unwrap(), None, "already so");
    assert_eq!(
        set_image_patch(&set, &["other=x".into()]).unwrap_err().to_string(),
        "unable to find container named \"other\""
    );
    assert!(matches!(set_image_patch(&set, &["main".into()]), Err(SetImageError::Syntax(_))));
}

#[test]
fn set_env_sets_replaces_and_removes() {
    let mut set = serde_json::to_value(cloneset(3, None, cs_status(3, 3, 3))).unwrap();
    set["spec"]["template"]["spec"]["containers"][0]["env"] = json!([{"name": "A", "value": "1"}, {"name": "B", "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}}]);
    let patch =
        set_env_patch(&set, None, &["B=2".into(), "A-".into(), "C=3".into()]).unwrap().unwrap();
    assert_eq!(
        patch[1]["value"],
        json!([{"name": "B", "value": "2"}, {"name": "C", "value": "3"}])
    );
    assert_eq!(set_env_patch(&set, None, &["A=1".into()]).unwrap(), None, "already so");
    assert!(set_env_patch(&set, Some("other"), &["A=1".into()]).is_err());
    assert!(matches!(set_env_patch(&set, None, &["=x".into()]), Err(SetImageError::EnvSyntax(_))));
}

#[test]
fn jobs_and_requests_are_made_as_kubectl_makes_them() {
    let acj = json!({"apiVersion": "apps.kruise.io/v1beta1", "kind": "AdvancedCronJob",
        "metadata": {"name": "nightly", "namespace": "ns", "uid": "u1"},
        "spec": {"template": {"jobTemplate": {"metadata": {"labels": {"a": "b"}},
            "spec": {"template": {"spec": {"containers": [{"name": "c", "image": "x"}], "restartPolicy": "Never"}}}}}}});
    let job = job_from_advanced_cron_job(&acj, "now", false).unwrap();
    assert_eq!(
        (job["kind"].as_str(), job["metadata"]["name"].as_str()),
        (Some("Job"), Some("now"))
    );
    assert_eq!(job["metadata"]["annotations"]["cronjob.kubernetes.io/instantiate"], "manual");
    assert_eq!(job["metadata"]["ownerReferences"][0]["uid"], "u1");
    assert_eq!(job["spec"]["template"]["spec"]["restartPolicy"], "Never");
    assert_eq!(
        job_from_advanced_cron_job(&acj, "now", true).unwrap_err().to_string(),
        "advancedcronjob \"nightly\" has no broadcastJobTemplate"
    );
    let pod = json!({"metadata": {"name": "p", "namespace": "ns", "annotations": {
            "kruise.io/sidecarset-working-hotupgrade-container": "{\"mesh\":\"mesh-2\"}"}},
        "spec": {"containers": [{"name": "main"}, {"name": "mesh-1"}, {"name": "mesh-2"}]}});
    let crr = container_recreate_request(&pod, "r", &[]).unwrap();
    assert_eq!(
        crr["spec"]["containers"],
        json!([{"name": "main"}, {"name": "mesh-1"}, {"name": "mesh-2"}])
    );
    assert!(container_recreate_request(&pod, "r", &["nope".into()]).is_err());
    assert_eq!(working_container(&pod, "mesh").unwrap(), "mesh-2");
    assert_eq!(working_container(&pod, "main").unwrap(), "main");
    assert!(working_container(&pod, "other").is_err());
}

#[test]
fn files_are_read_as_kubectl_reads_them() {
    let text = "a: 1\n---\n---\nkind: List\nitems: [{b: 2}, {c: 3}]\n";
    assert_eq!(documents(text).unwrap(), [json!({"a": 1}), json!({"b": 2}), json!({"c": 3})]);
    assert!(documents("a: [").is_err());
}

proptest! {
    /// Done never comes before the pods up to the partition are updated and available.
    #[test]
    fn done_means_the_pods_up_to_the_partition_are_updated(
        replicas in 0i32..20, partition in 0i32..25, updated in 0i32..20, available in 0i32..20, total in 0i32..25,
    ) {
        let available = available.min(updated);
        let status = cloneset_status(&cloneset(replicas, Some(json!(partition)), cs_status(total, updated, available))).unwrap();
        if status.done {
            let wanted = (replicas - partition.min(replicas)).max(0);
            prop_assert!(updated >= wanted && available >= wanted.min(updated));
        }
    }
}
