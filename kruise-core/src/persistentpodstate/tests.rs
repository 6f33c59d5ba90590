#![allow(clippy::unwrap_used)]

use super::*;
use crate::admission::pod_chain::PodChain;
use serde_json::json;

fn now() -> Timestamp {
    Timestamp::from_second(1_700_000_000).unwrap()
}

fn pps(status: serde_json::Value) -> PersistentPodState {
    serde_json::from_value(json!({
        "apiVersion": "apps.kruise.io/v1beta1", "kind": "PersistentPodState",
        "metadata": {"name": "test-sts", "namespace": "ns", "generation": 3},
        "spec": {
            "targetRef": {"apiVersion": "apps.kruise.io/v1beta1", "kind": "StatefulSet", "name": "test-sts"},
            "requiredPersistentTopology": {"keys": ["topology.kubernetes.io/zone"]},
            "preferredPersistentTopology": [{"weight": 10, "preference": {"keys": ["kubernetes.io/hostname"]}}],
            "persistentPodAnnotations": [{"key": "ip"}]
        },
        "status": status
    }))
    .unwrap()
}

fn pod(i: usize, ready: bool, deleting: bool) -> Pod {
    let mut meta = json!({"name": format!("test-sts-{i}"), "namespace": "ns", "annotations": {"ip": format!("10.0.0.{i}")}});
    if deleting {
        meta["deletionTimestamp"] = json!("2024-01-01T00:00:00Z");
    }
    serde_json::from_value(json!({
        "metadata": meta,
        "spec": {"nodeName": format!("node-{i}"), "containers": []},
        "status": {"phase": "Running", "conditions": [{"type": "Ready", "status": if ready { "True" } else { "False" }}]}
    }))
    .unwrap()
}

fn labels(node: &str) -> Option<BTreeMap<String, String>> {
    let i = node.strip_prefix("node-")?;
    Some(BTreeMap::from([
        ("topology.kubernetes.io/zone".to_owned(), format!("cn-beijing-{i}")),
        ("kubernetes.io/hostname".to_owned(), format!("host-{i}")),
        ("other".to_owned(), "x".to_owned()),
    ]))
}

fn record(i: usize) -> serde_json::Value {
    json!({"nodeName": format!("node-{i}"),
           "nodeTopologyLabels": {"topology.kubernetes.io/zone": format!("cn-beijing-{i}"), "kubernetes.io/hostname": format!("host-{i}")},
           "annotations": {"ip": format!("10.0.0.{i}")}})
}

fn workload(replicas: i32, reserved: &[i32]) -> WorkloadView {
    let items: Vec<k8s_openapi::apimachinery::pkg::util::intstr::IntOrString> = reserved
        .iter()
        .map(|r| k8s_openapi::apimachinery::pkg::util::intstr::IntOrString::Int(*r))
        .collect();
    WorkloadView { replicas, start: 0, reserved: Reserved::parse(&items).unwrap(), deleting: false }
}

fn names(status: &PersistentPodStateStatus) -> Vec<&str> {
    status.pod_states.keys().map(String::as_str).collect()
}

#[test]
fn ready_pods_are_recorded() {
    let state = pps(json!({"observedGeneration": 1}));
    let pods: Vec<Pod> = (0..3).map(|i| pod(i, i != 1, false)).collect();
    let plan = plan_status(
        &StatusSnapshot {
            state: &state,
            workload: Some(workload(3, &[])),
            pods: pods.iter().collect(),
            node_labels: &labels,
        },
        now(),
    );
    let status = plan.status.unwrap();
    assert_eq!(status.observed_generation, 3);
    assert_eq!(names(&status), ["test-sts-0", "test-sts-2"]);
    assert_eq!(serde_json::to_value(&status.pod_states["test-sts-2"]).unwrap(), record(2));
    // Planned again on its outcome: nothing.
    let mut done = state.clone();
    done.status = Some(status);
    let again = plan_status(
        &StatusSnapshot {
            state: &done,
            workload: Some(workload(3, &[])),
            pods: pods.iter().collect(),
            node_labels: &labels,
        },
        now(),
    );
    assert_eq!(again.status, None);
}

#[test]
fn scaled_away_records_go_once_their_pods_do() {
    // Upstream's table: 10 -> 8, pod 9 deleting, pod 8 still running, 0 and 3 not ready.
    let records: serde_json::Map<String, serde_json::Value> =
        (0..10).map(|i| (format!("test-sts-{i}"), record(i))).collect();
    let state = pps(json!({"observedGeneration": 3, "podStates": records}));
    let pods: Vec<Pod> = (0..10).map(|i| pod(i, i != 0 && i != 3, i == 9)).collect();
    let plan = plan_status(
        &StatusSnapshot {
            state: &state,
            workload: Some(workload(8, &[])),
            pods: pods.iter().collect(),
            node_labels: &labels,
        },
        now(),
    );
    let status = plan.status.unwrap();
    assert_eq!(status.pod_states.len(), 9);
    assert!(!status.pod_states.contains_key("test-sts-9"));
    // Reserved ordinals shift the range: replicas 8 with {0, 3, 7} keep 1 2 4 5 6 8 9 10.
    let records: serde_json::Map<String, serde_json::Value> = [1, 2, 4, 5, 6, 8, 9, 10, 11, 12]
        .iter()
        .map(|i| (format!("test-sts-{i}"), record(*i)))
        .collect();
    let state = pps(json!({"observedGeneration": 3, "podStates": records}));
    let pods: Vec<Pod> =
        [1, 2, 4, 5, 6, 8, 9, 10, 11, 12].iter().map(|i| pod(*i, true, *i == 12)).collect();
    let plan = plan_status(
        &StatusSnapshot {
            state: &state,
            workload: Some(workload(8, &[0, 3, 7])),
            pods: pods.iter().collect(),
            node_labels: &labels,
        },
        now(),
    );
    let status = plan.status.unwrap();
    assert!(!status.pod_states.contains_key("test-sts-12"));
    assert!(status.pod_states.contains_key("test-sts-11"), "its pod is still active");
    assert_eq!(status.pod_states.len(), 9);
    // WhenDeleted keeps them; a gone workload clears them all.
    let mut keep = state.clone();
    keep.spec.persistent_pod_state_retention_policy =
        Some(PersistentPodStateRetentionPolicyType::WhenDeleted);
    let plan = plan_status(
        &StatusSnapshot {
            state: &keep,
            workload: Some(workload(8, &[0, 3, 7])),
            pods: pods.iter().collect(),
            node_labels: &labels,
        },
        now(),
    );
    assert_eq!(plan.status, None, "nothing removed, nothing changed");
    let plan = plan_status(
        &StatusSnapshot { state: &keep, workload: None, pods: Vec::new(), node_labels: &labels },
        now(),
    );
    assert!(plan.status.unwrap().pod_states.is_empty());
}

#[test]
fn a_recreated_pod_goes_back() {
    let records: serde_json::Map<String, serde_json::Value> =
        [(String::from("test-sts-1"), record(1))].into_iter().collect();
    let state = pps(json!({"observedGeneration": 3, "podStates": records}));
    let mut fresh: Pod = serde_json::from_value(json!({
        "metadata": {"name": "test-sts-1", "namespace": "ns"},
        "spec": {"containers": [], "affinity": {"nodeAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [
            {"weight": 5, "preference": {"matchExpressions": [{"key": "test-key", "operator": "Exists"}]}}
        ]}}}
    }))
    .unwrap();
    let step = step_for(&fresh, &state).unwrap();
    let chain = PodChain::new(vec![&step]);
    chain.run(&mut fresh).unwrap();
    let after = serde_json::to_value(&fresh).unwrap();
    assert_eq!(
        after["metadata"]["annotations"],
        json!({"ip": "10.0.0.1", "kruise.io/injected-persistent-pod-state": "test-sts"})
    );
    assert_eq!(
        after["spec"]["nodeSelector"],
        json!({"topology.kubernetes.io/zone": "cn-beijing-1"})
    );
    assert_eq!(
        after["spec"]["affinity"]["nodeAffinity"]["preferredDuringSchedulingIgnoredDuringExecution"],
        json!([
            {"weight": 5, "preference": {"matchExpressions": [{"key": "test-key", "operator": "Exists"}]}},
            {"weight": 10, "preference": {"matchExpressions": [{"key": "kubernetes.io/hostname", "operator": "In", "values": ["host-1"]}]}}
        ])
    );
    // No record: nothing.
    let other: Pod = serde_json::from_value(
        json!({"metadata": {"name": "test-sts-7"}, "spec": {"containers": []}}),
    )
    .unwrap();
    assert!(step_for(&other, &state).is_none());
}

#[test]
fn workload_annotations_generate_it() {
    let mut annotations = BTreeMap::from([
        (AUTO_GENERATE_PERSISTENT_POD_STATE.to_owned(), "true".to_owned()),
        (REQUIRED_PERSISTENT_TOPOLOGY.to_owned(), "kubernetes.io/hostname".to_owned()),
        (PERSISTENT_POD_ANNOTATIONS.to_owned(), "ip, mac".to_owned()),
    ]);
    fn workload(a: &BTreeMap<String, String>) -> GeneratingWorkload<'_> {
        GeneratingWorkload {
            api_version: "apps.kruise.io/v1beta1",
            kind: "StatefulSet",
            namespace: "ns",
            name: "demo",
            uid: "sts-uid",
            annotations: a,
        }
    }
    let w = workload(&annotations);
    let plan = plan_generation(&w, None, now());
    let [Action::CreateObject { body, .. }] = plan.actions.as_slice() else {
        panic!("{:?}", plan.actions)
    };
    assert_eq!(body["metadata"]["ownerReferences"][0]["uid"], "sts-uid");
    assert_eq!(
        body["spec"],
        json!({"targetRef": {"apiVersion": "apps.kruise.io/v1beta1", "kind": "StatefulSet", "name": "demo"},
               "persistentPodAnnotations": [{"key": "ip"}, {"key": "mac"}],
               "requiredPersistentTopology": {"keys": ["kubernetes.io/hostname"]}})
    );
    let mut existing: PersistentPodState = serde_json::from_value(body.as_ref().clone()).unwrap();
    existing.metadata.resource_version = Some("4".into());
    existing.metadata.uid = Some("pps-uid".into());
    assert!(plan_generation(&w, Some(&existing), now()).actions.is_empty());
    annotations
        .insert(PREFERRED_PERSISTENT_TOPOLOGY.to_owned(), "topology.kubernetes.io/zone".to_owned());
    let plan = plan_generation(&workload(&annotations), Some(&existing), now());
    assert!(matches!(plan.actions.as_slice(), [Action::PatchObject { .. }]));
    annotations.remove(AUTO_GENERATE_PERSISTENT_POD_STATE);
    let plan = plan_generation(&workload(&annotations), Some(&existing), now());
    assert!(
        matches!(plan.actions.as_slice(), [Action::DeleteObject { target }] if target.guard == Guard::Uid("pps-uid".into()))
    );
    // One the workload does not own is left alone.
    existing.metadata.owner_references = None;
    assert!(plan_generation(&workload(&annotations), Some(&existing), now()).actions.is_empty());
}
