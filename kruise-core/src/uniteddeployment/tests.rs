use super::*;

fn ts(text: &str) -> Timestamp {
    text.parse().expect("a timestamp")
}

const NOW: &str = "2026-01-01T10:00:00Z";

/// The manual's sample over node pools: 6 replicas, `a` pinned to 1, `b` to half, `c` the rest.
fn sample(extra: Value) -> UnitedDeployment {
    let mut value = json!({
        "apiVersion": "apps.kruise.io/v1beta1", "kind": "UnitedDeployment",
        "metadata": {"name": "sample-ud", "namespace": "default", "uid": "ud-uid", "generation": 1},
        "spec": {"replicas": 6, "revisionHistoryLimit": 10,
            "selector": {"matchLabels": {"app": "sample"}},
            "template": {"cloneSetTemplate": {"metadata": {"labels": {"app": "sample"}},
                "spec": {"selector": {"matchLabels": {"app": "sample"}}, "template": {
                    "metadata": {"labels": {"app": "sample"}},
                    "spec": {"containers": [{"name": "main", "image": "nginx:alpine"}],
                             "tolerations": [{"key": "base", "operator": "Exists"}]}}}}},
            "topology": {"subsets": [
                {"name": "subset-a", "replicas": 1, "nodeSelectorTerm": {"matchExpressions": [
                    {"key": "pool", "operator": "In", "values": ["a"]}]},
                 "tolerations": [{"key": "pool", "value": "a", "effect": "NoSchedule"}]},
                {"name": "subset-b", "replicas": "50%", "nodeSelectorTerm": {"matchExpressions": [
                    {"key": "pool", "operator": "In", "values": ["b"]}]}},
                {"name": "subset-c", "nodeSelectorTerm": {"matchExpressions": [
                    {"key": "pool", "operator": "In", "values": ["c"]}]},
                 "patch": {"metadata": {"labels": {"tier": "spare"}}}}]},
            "updateStrategy": {"type": "Manual", "manualUpdate": {"partitions": {"subset-b": 2}}}}
    });
    if let (Some(base), Some(extra)) = (value["spec"].as_object_mut(), extra.as_object()) {
        for (k, v) in extra {
            base.insert(k.clone(), v.clone());
        }
    }
    serde_json::from_value(value).expect("a ud")
}

fn snapshot(ud: UnitedDeployment) -> Snapshot {
    Snapshot { ud, workloads: vec![], revisions: vec![], pods: vec![] }
}

fn created(plan: &Plan<UnitedDeploymentStatus>, kind: &str) -> Vec<Value> {
    plan.actions
        .iter()
        .filter_map(|a| match a {
            Action::CreateObject { target, body } if target.kind.kind == kind => {
                Some(body.as_ref().clone())
            }
            _ => None,
        })
        .collect()
}

/// Carries out a plan's creations: revisions and workloads exist afterwards, with status.
fn after(plan: &Plan<UnitedDeploymentStatus>, mut snap: Snapshot) -> Snapshot {
    for action in &plan.actions {
        if let Action::CreateObject { target, body } = action {
            let mut object = body.as_ref().clone();
            object["metadata"]["uid"] = json!(format!("{}-uid", target.name));
            object["metadata"]["resourceVersion"] = json!("1");
            object["metadata"]["creationTimestamp"] = json!(NOW);
            match target.kind.kind {
                "ControllerRevision" => {
                    snap.revisions.push(serde_json::from_value(object).expect("a revision"))
                }
                "CloneSet" => {
                    let replicas = object["spec"]["replicas"].clone();
                    object["status"] = json!({"replicas": replicas, "readyReplicas": replicas});
                    snap.workloads.push((SubsetKind::CloneSet, object));
                }
                "StatefulSet" if target.kind.group == "apps" => {
                    let replicas = object["spec"]["replicas"].clone();
                    object["status"] = json!({"replicas": replicas, "readyReplicas": replicas});
                    snap.workloads.push((SubsetKind::StatefulSet, object));
                }
                other => panic!("unexpected {other}"),
            }
        }
    }
    if let Some(status) = &plan.status {
        snap.ud.status = Some(status.clone());
    }
    snap
}

#[test]
fn the_sample_creates_a_revision_and_one_workload_per_subset() {
    let out = plan(&snapshot(sample(json!({}))), ts(NOW));
    let revisions = created(&out, "ControllerRevision");
    assert_eq!(revisions.len(), 1);
    let revision = revisions[0]["metadata"]["name"].as_str().expect("a name").to_owned();
    assert!(revision.starts_with("sample-ud-"), "{revision}");
    assert_eq!(
        revisions[0]["metadata"]["labels"]["app"], "sample",
        "template labels, even for a CloneSet"
    );
    assert_eq!(revisions[0]["data"]["spec"]["template"]["$patch"], "replace");

    let workloads = created(&out, "CloneSet");
    let replicas: Vec<(String, i64)> = workloads
        .iter()
        .map(|w| {
            (
                w["metadata"]["labels"][SUBSET_NAME].as_str().unwrap_or_default().to_owned(),
                w["spec"]["replicas"].as_i64().unwrap_or(-1),
            )
        })
        .collect();
    assert_eq!(replicas, [("subset-a".into(), 1), ("subset-b".into(), 3), ("subset-c".into(), 2)]);
    let a = &workloads[0];
    let name = a["metadata"]["name"].as_str().unwrap_or_default();
    assert!(
        name.starts_with("sample-ud-subset-a-") && name.len() == "sample-ud-subset-a-".len() + 5,
        "{name}"
    );
    assert_eq!(a["metadata"]["labels"][CONTROLLER_REVISION_HASH], revision.as_str());
    assert_eq!(a["metadata"]["annotations"]["apps.kruise.io/subset-patch"], "");
    assert_eq!(
        a["spec"]["selector"]["matchLabels"],
        json!({"app": "sample", "apps.kruise.io/subset-name": "subset-a"})
    );
    let pod = &a["spec"]["template"];
    assert_eq!(pod["metadata"]["labels"][SUBSET_NAME], "subset-a");
    assert_eq!(
        pod["spec"]["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]["nodeSelectorTerms"],
        json!([{"matchExpressions": [{"key": "pool", "operator": "In", "values": ["a"]}]}])
    );
    assert_eq!(pod["spec"]["tolerations"].as_array().map(Vec::len), Some(2), "appended");
    assert_eq!(workloads[1]["spec"]["updateStrategy"]["rollingUpdate"]["partition"], 2);
    assert_eq!(
        workloads[2]["spec"]["template"]["metadata"]["labels"]["tier"], "spare",
        "the patch applies last"
    );
    let status = out.status.expect("status");
    assert_eq!(status.subset_statuses.iter().map(|s| s.replicas).collect::<Vec<_>>(), [1, 3, 2]);
    assert_eq!(status.label_selector, "app=sample");
    assert_eq!(status.updated_revision, revision);
}

#[test]
fn planning_again_on_the_outcome_changes_nothing() {
    let snap = snapshot(sample(json!({})));
    let first = plan(&snap, ts(NOW));
    let snap = after(&first, snap);
    let second = plan(&snap, ts(NOW));
    assert!(second.actions.is_empty(), "{:?}", second.actions);
    let snap = after(&second, snap);
    let third = plan(&snap, ts(NOW));
    assert!(third.is_noop(), "{third:?}");
}

#[test]
fn a_template_change_makes_a_revision_and_updates_every_subset_and_going_back_rolls_back() {
    let snap = snapshot(sample(json!({})));
    let first = plan(&snap, ts(NOW));
    let mut snap = after(&first, snap);
    let old_revision =
        snap.ud.status.as_ref().map(|s| s.updated_revision.clone()).unwrap_or_default();
    let mut changed = sample(json!({}));
    if let Some(pod) = changed
        .spec
        .template
        .clone_set_template
        .as_mut()
        .and_then(|t| t.spec.template.spec.as_mut())
    {
        pod.containers[0].image = Some("nginx:2".into());
    }
    changed.status = snap.ud.status.clone();
    snap.ud = changed;
    let out = plan(&snap, ts(NOW));
    let revisions = created(&out, "ControllerRevision");
    assert_eq!(revisions.len(), 1);
    assert_eq!(revisions[0]["revision"], 2);
    let patches: Vec<&Action> = out
        .actions
        .iter()
        .filter(
            |a| matches!(a, Action::PatchObject { target, .. } if target.kind.kind == "CloneSet"),
        )
        .collect();
    assert_eq!(patches.len(), 3, "every subset rolls");
    let Action::PatchObject { patch, target, .. } = patches[0] else { unreachable!() };
    assert_eq!(target.guard, Guard::ResourceVersion("1".into()));
    assert_eq!(patch.body()["spec"]["template"]["spec"]["containers"][0]["image"], "nginx:2");
    let status = out.status.clone().expect("status");
    assert_eq!(status.current_revision, old_revision, "current stays until the pods are updated");

    // Back to the old template: the first revision is reused (its number raised).
    let snap = after(&out, snap);
    let mut back = sample(json!({}));
    back.status = snap.ud.status.clone();
    let snap = Snapshot { ud: back, ..snap };
    let out = plan(&snap, ts(NOW));
    assert!(created(&out, "ControllerRevision").is_empty());
    assert!(out.actions.iter().any(|a| matches!(a,
        Action::PatchObject { target, patch, .. } if target.name == old_revision && patch.body()["revision"] == 3)));
}

#[test]
fn workloads_of_other_kinds_removed_subsets_and_duplicates_go() {
    let snap = snapshot(sample(json!({})));
    let first = plan(&snap, ts(NOW));
    let mut snap = after(&first, snap);
    let mut duplicate = snap.workloads[0].1.clone();
    duplicate["metadata"]["name"] = json!("sample-ud-subset-a-zzzzz");
    duplicate["metadata"]["creationTimestamp"] = json!("2026-01-01T10:00:05Z");
    snap.workloads.push((SubsetKind::CloneSet, duplicate));
    let mut gone = snap.workloads[0].1.clone();
    gone["metadata"]["name"] = json!("sample-ud-subset-x-bbbbb");
    gone["metadata"]["labels"][SUBSET_NAME] = json!("subset-x");
    snap.workloads.push((SubsetKind::CloneSet, gone));
    snap.workloads.push((
        SubsetKind::Deployment,
        json!({"metadata": {"name": "old-deploy",
        "uid": "d", "labels": {SUBSET_NAME: "subset-a"}}}),
    ));
    let out = plan(&snap, ts(NOW));
    let mut deleted: Vec<&str> = out.deletions().map(|t| t.name.as_str()).collect();
    deleted.sort();
    assert_eq!(deleted, ["old-deploy", "sample-ud-subset-a-zzzzz", "sample-ud-subset-x-bbbbb"]);
}

#[test]
fn adaptive_moves_pending_replicas_to_the_next_subset() {
    let adaptive = sample(json!({"topology": {"scheduleStrategy": {"type": "Adaptive"},
        "subsets": [{"name": "subset-a"}, {"name": "subset-b"}]}}));
    let snap = snapshot(adaptive);
    let first = plan(&snap, ts(NOW));
    let mut snap = after(&first, snap);
    assert_eq!(
        snap.ud.status.as_ref().map(|s| s
            .subset_statuses
            .iter()
            .map(|e| e.replicas)
            .collect::<Vec<_>>()),
        Some(vec![6, 0]),
        "Adaptive fills the subsets in order"
    );
    // subset-a's 6 pods: 4 running, 2 pending for a minute without a node.
    let a = snap
        .workloads
        .iter_mut()
        .find(|(_, w)| w["metadata"]["labels"][SUBSET_NAME] == "subset-a")
        .expect("a");
    a.1["status"]["readyReplicas"] = json!(4);
    let pending = |name: &str| -> Pod {
        serde_json::from_value(json!({"metadata": {"name": name, "namespace": "default",
            "creationTimestamp": "2026-01-01T09:59:00Z",
            "labels": {"app": "sample", SUBSET_NAME: "subset-a"}},
            "spec": {"containers": []},
            "status": {"phase": "Pending", "conditions": [{"type": "PodScheduled", "status": "False", "reason": "Unschedulable"}]}}))
        .expect("a pod")
    };
    snap.pods = vec![pending("p1"), pending("p2")];
    let out = plan(&snap, ts(NOW));
    let status = out.status.clone().expect("status");
    assert_eq!(status.subset_statuses.iter().map(|e| e.replicas).collect::<Vec<_>>(), [4, 2]);
    let condition = &status.subset_statuses[0].conditions[0];
    assert_eq!((condition.status.as_str(), condition.reason.as_str()), ("False", "reschedule"));
    assert_eq!(out.requeue_after, Some(SignedDuration::from_secs(300)));
}

#[test]
fn reservation_keeps_pending_pods_and_gives_their_replicas_to_the_next_subset() {
    let reserving =
        sample(json!({"replicas": 2, "topology": {"scheduleStrategy": {"type": "Adaptive",
            "adaptive": {"reserveUnschedulablePods": true, "rescheduleCriticalSeconds": 10}},
        "subsets": [{"name": "subset-a"}, {"name": "subset-b"}]}}));
    let snap = snapshot(reserving);
    let first = plan(&snap, ts(NOW));
    let mut snap = after(&first, snap);
    let a = snap
        .workloads
        .iter_mut()
        .find(|(_, w)| w["metadata"]["labels"][SUBSET_NAME] == "subset-a")
        .expect("a");
    a.1["status"]["readyReplicas"] = json!(0);
    // Its workload is at another revision, so it is updated in this plan.
    a.1["metadata"]["labels"][CONTROLLER_REVISION_HASH] = json!("older");
    // Upstream's label on the pods is the UnitedDeployment's revision.
    let revision = snap.revisions[0].metadata.name.clone().expect("a revision");
    let pending = |name: &str| -> Pod {
        serde_json::from_value(json!({"metadata": {"name": name, "namespace": "default", "uid": format!("{name}-uid"),
            "creationTimestamp": "2026-01-01T09:59:00Z",
            "labels": {"app": "sample", SUBSET_NAME: "subset-a", CONTROLLER_REVISION_HASH: revision}},
            "spec": {"containers": []},
            "status": {"phase": "Pending", "conditions": [{"type": "PodScheduled", "status": "False", "reason": "Unschedulable"}]}}))
        .expect("a pod")
    };
    snap.pods = vec![pending("p1"), pending("p2")];
    let out = plan(&snap, ts(NOW));
    let labelled: Vec<(&str, &Value)> = out
        .actions
        .iter()
        .filter_map(|a| match a {
            Action::PatchPod { name, patch, .. } => Some((
                name.as_str(),
                &patch.body()["metadata"]["labels"][adaptive::RESERVED_POD_LABEL],
            )),
            _ => None,
        })
        .collect();
    assert_eq!(labelled, [("p1", &json!("true")), ("p2", &json!("true"))]);
    let status = out.status.clone().expect("status");
    assert_eq!(
        status.subset_statuses.iter().map(|e| e.replicas).collect::<Vec<_>>(),
        [2, 2],
        "temporary pods"
    );
    assert_eq!((status.reserved_pods, status.subset_statuses[0].reserved_pods), (2, 2));
    assert!(
        status.label_selector.ends_with(",apps.kruise.io/united-deployment-reserved-pod=false")
    );
    // subset-a's update widens maxUnavailable to its replicas less its ready pods.
    let patched = out
        .actions
        .iter()
        .find_map(|a| match a {
            Action::PatchObject { target, patch, .. }
                if target.name.starts_with("sample-ud-subset-a") =>
            {
                Some(patch.body().clone())
            }
            _ => None,
        })
        .expect("subset-a's workload updated");
    assert_eq!(
        patched["spec"]["updateStrategy"]["rollingUpdate"]["maxUnavailable"], 2,
        "{patched}"
    );
}

/// The manual's sample, as the planner stamps it: a readable record of the three CloneSets.
#[test]
fn the_manuals_sample_stamped() {
    let out = plan(&snapshot(sample(json!({}))), ts(NOW));
    // The revision name in the labels is the hash of the revision's bytes: a change here
    // means a UnitedDeployment taken over would see a new revision.
    insta::assert_yaml_snapshot!(created(&out, "CloneSet"));
}

/// Taking over what upstream made: its revision (named by Go's bytes, with Go's zero values
/// written out) is found by content, so no revision is created and no workload is written.
#[test]
fn an_upstream_revision_is_taken_over_without_touching_a_workload() {
    let snap = snapshot(sample(json!({})));
    let first = plan(&snap, ts(NOW));
    let mut snap = after(&first, snap);
    let ours = snap.revisions[0].metadata.name.clone().unwrap_or_default();
    let upstream = "sample-ud-6d7c9f8b4";
    let revision = &mut snap.revisions[0];
    revision.metadata.name = Some(upstream.into());
    let mut data = revision_data(revision).cloned().expect("data");
    let template = &mut data["spec"]["template"]["cloneSetTemplate"];
    template["metadata"]["creationTimestamp"] = Value::Null;
    template["spec"]["template"]["metadata"]["creationTimestamp"] = Value::Null;
    template["spec"]["template"]["spec"]["containers"][0]["resources"] = json!({});
    template["spec"]["scaleStrategy"] = json!({"disablePVCReuse": false});
    *revision = build_revision(revision.metadata.clone(), data, 1);
    for (_, w) in &mut snap.workloads {
        w["metadata"]["labels"][CONTROLLER_REVISION_HASH] = json!(upstream);
    }
    if let Some(status) = snap.ud.status.as_mut() {
        status.current_revision = upstream.into();
        status.updated_revision = upstream.into();
    }
    assert_ne!(ours, upstream);
    let out = plan(&snap, ts(NOW));
    assert!(out.actions.is_empty(), "{:?}", out.actions);
}

/// Upstream's kubernetes#67250 work-around: when an apps/v1 StatefulSet subset is updated,
/// its pods past the partition that are not at the new revision and not ready are deleted;
/// ready ones, and those the partition keeps, stay.
#[test]
fn a_statefulset_update_deletes_its_stuck_pods_past_the_partition() {
    let sts = |image: &str, partitions: Value| {
        sample(json!({
            "replicas": 3,
            "template": {"statefulSetTemplate": {"metadata": {"labels": {"app": "sample"}},
                "spec": {"selector": {"matchLabels": {"app": "sample"}}, "serviceName": "web",
                    "template": {"metadata": {"labels": {"app": "sample"}},
                        "spec": {"containers": [{"name": "main", "image": image}]}}}}},
            "topology": {"subsets": [{"name": "subset-a"}]},
            "updateStrategy": {"type": "Manual", "manualUpdate": {"partitions": partitions}},
        }))
    };
    let deleted_pods = |partitions: Value| -> Vec<String> {
        let snap = snapshot(sts("nginx:1", partitions.clone()));
        let first = plan(&snap, ts(NOW));
        let mut snap = after(&first, snap);
        let old = snap.ud.status.as_ref().map(|s| s.updated_revision.clone()).unwrap_or_default();
        let set = snap.workloads[0].1["metadata"]["name"].as_str().unwrap_or_default().to_owned();
        snap.pods = (0..3)
            .map(|i| {
                let ready = if i == 1 { "False" } else { "True" };
                serde_json::from_value(json!({
                    "metadata": {"name": format!("{set}-{i}"), "namespace": "default",
                        "uid": format!("pod-{i}"),
                        "labels": {"app": "sample", SUBSET_NAME: "subset-a", CONTROLLER_REVISION_HASH: old}},
                    "status": {"phase": "Running",
                        "conditions": [{"type": "Ready", "status": ready}]},
                }))
                .expect("a pod")
            })
            .collect();
        let mut changed = sts("nginx:2", partitions);
        changed.status = snap.ud.status.clone();
        snap.ud = changed;
        let out = plan(&snap, ts(NOW));
        assert!(
            out.actions.iter().any(|a| matches!(a, Action::PatchObject { target, .. } if target.kind.kind == "StatefulSet")),
            "the subset is updated"
        );
        out.actions
            .iter()
            .filter_map(|a| match a {
                Action::DeleteObject { target } if target.kind.kind == "Pod" => {
                    assert_eq!(target.guard, Guard::Uid("pod-1".into()));
                    Some(target.name.clone())
                }
                _ => None,
            })
            .collect()
    };
    let stuck = deleted_pods(json!({}));
    assert_eq!(stuck.len(), 1, "only the pod that is not ready: {stuck:?}");
    assert!(stuck[0].ends_with("-1"));
    assert!(deleted_pods(json!({"subset-a": 2})).is_empty(), "the partition keeps ordinal 1");
}
