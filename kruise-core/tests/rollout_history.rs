//! The RolloutHistory planner stepped over a release: a record is made once the Rollout is
//! Progressing with a rollout id, filled in once it is Healthy again, and left alone after;
//! each outcome planned again asks for nothing more.

use std::collections::BTreeMap;

use kruise_api::rollouts::v1alpha1::RolloutHistory;
use kruise_api::rollouts::v1beta1::Rollout;
use kruise_core::plan::{Action, Subresource};
use kruise_core::rollouts::history::{
    HistoryPod, PHASE_COMPLETED, ROLLOUT_NAME_LABEL, RecordedWorkload, Snapshot, history_name, plan,
};
use kruise_core::rollouts::rollout::TrafficObjects;
use serde_json::{Value, json};

fn rollout(phase: &str, rollout_id: &str) -> Rollout {
    serde_json::from_value(json!({
        "apiVersion": "rollouts.kruise.io/v1beta1", "kind": "Rollout",
        "metadata": {"name": "demo", "namespace": "default", "uid": "rollout-uid"},
        "spec": {
            "workloadRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "echo"},
            "strategy": {"canary": {
                "steps": [{"replicas": 1}, {"replicas": "100%"}],
                "trafficRoutings": [{"service": "echo", "gateway": {"httpRouteName": "echo"}}],
            }},
        },
        "status": {"phase": phase, "canaryStatus": {"observedRolloutID": rollout_id,
            "canaryRevision": "r1", "canaryReplicas": 0, "canaryReadyReplicas": 0}},
    }))
    .expect("a Rollout")
}

fn pod(name: &str, rollout_id: &str, batch: &str, deleting: bool) -> HistoryPod {
    let labels: BTreeMap<String, String> = [
        ("app".to_owned(), "echo".to_owned()),
        ("rollouts.kruise.io/rollout-id".to_owned(), rollout_id.to_owned()),
        ("rollouts.kruise.io/rollout-batch-id".to_owned(), batch.to_owned()),
    ]
    .into();
    HistoryPod {
        name: name.into(),
        ip: format!("10.0.0.{}", name.len()),
        node_name: "node-a".into(),
        labels,
        deleting,
    }
}

struct World {
    snapshot: Snapshot,
    /// Records by name, as JSON.
    records: BTreeMap<String, Value>,
}

impl World {
    fn new() -> Self {
        let snapshot = Snapshot {
            rollout: rollout("Healthy", ""),
            workload: Some(RecordedWorkload {
                api_version: "apps/v1".into(),
                kind: "Deployment".into(),
                name: "echo".into(),
                spec: json!({"replicas": 2, "template": {"spec": {"containers": [{"name": "echo", "image": "echo:v2"}]}}}),
            }),
            traffic: TrafficObjects {
                stable_service: serde_json::from_value(
                    json!({"metadata": {"name": "echo"}, "spec": {"selector": {"app": "echo"}}}),
                )
                .ok(),
                http_route: Some(json!({"metadata": {"name": "echo"},
                    "spec": {"rules": [{"backendRefs": [{"name": "echo", "port": 80}]}]}})),
                ..TrafficObjects::default()
            },
            pods: vec![
                pod("echo-a", "v2", "1", false),
                pod("echo-bb", "v2", "2", false),
                pod("echo-ccc", "v2", "2", true),
                pod("echo-dddd", "v1", "1", false),
            ],
            histories: Vec::new(),
        };
        Self { snapshot, records: BTreeMap::new() }
    }

    /// Plans once and applies the plan; returns the number of actions.
    fn pass(&mut self) -> usize {
        self.snapshot.histories = self
            .records
            .values()
            .map(|r| serde_json::from_value::<RolloutHistory>(r.clone()).expect("a record"))
            .collect();
        let plan = plan(&self.snapshot);
        for action in &plan.actions {
            match action {
                Action::CreateObject { target, body } => {
                    assert!(!self.records.contains_key(&target.name), "created twice");
                    self.records.insert(target.name.clone(), (**body).clone());
                }
                Action::PatchObject { target, subresource, patch } => {
                    let record = self.records.get_mut(&target.name).expect("patched record exists");
                    let merge = patch.body().clone();
                    if *subresource == Subresource::Status {
                        assert_eq!(merge.as_object().map(|o| o.len()), Some(1), "status only");
                    }
                    json_patch::merge(record, &merge);
                }
                other => panic!("unexpected action {other:?}"),
            }
        }
        plan.actions.len()
    }

    fn settle(&mut self) {
        for _ in 0..5 {
            if self.pass() == 0 {
                return;
            }
        }
        panic!("no quiescence");
    }
}

#[test]
fn a_release_is_recorded_from_progressing_to_healthy() {
    let mut world = World::new();
    world.settle();
    assert!(world.records.is_empty(), "no rollout id: no history");

    world.snapshot.rollout = rollout("Progressing", "v2");
    world.settle();
    let name = history_name("demo", "rollout-uid", "v2");
    assert_eq!(world.records.keys().collect::<Vec<_>>(), [&name]);
    assert!(name.starts_with("demo-") && name.len() == "demo-".len() + 6, "{name}");
    let record = &world.records[&name];
    assert_eq!(
        record["metadata"]["labels"],
        json!({"rollouts.kruise.io/rollout-id": "v2", ROLLOUT_NAME_LABEL: "demo"})
    );
    assert_eq!(record["spec"], json!({}), "empty until the release ends");
    assert!(record.get("metadata").and_then(|m| m.get("ownerReferences")).is_none());

    world.snapshot.rollout = rollout("Healthy", "v2");
    world.settle();
    let record = &world.records[&name];
    assert_eq!(record["spec"]["rollout"]["rolloutID"], "v2");
    assert_eq!(record["spec"]["rollout"]["name"], "demo");
    assert_eq!(record["spec"]["rollout"]["data"]["workloadRef"]["name"], "echo");
    assert_eq!(record["spec"]["workload"]["kind"], "Deployment");
    assert_eq!(record["spec"]["workload"]["data"]["replicas"], 2);
    assert_eq!(
        record["spec"]["service"],
        json!({"name": "echo", "data": {"selector": {"app": "echo"}}})
    );
    assert_eq!(record["spec"]["trafficRouting"]["httpRoute"]["name"], "echo");
    assert_eq!(record["status"]["phase"], PHASE_COMPLETED);
    assert_eq!(
        record["status"]["canarySteps"],
        json!([
            {"canaryStepIndex": 1, "pods": [{"name": "echo-a", "ip": "10.0.0.6", "nodeName": "node-a"}]},
            {"canaryStepIndex": 2, "pods": [{"name": "echo-bb", "ip": "10.0.0.7", "nodeName": "node-a"}]},
        ]),
        "the other release's pod and the deleted one are left out"
    );
    // A completed record is not touched again, whatever changes.
    world.snapshot.pods.clear();
    assert_eq!(world.pass(), 0);

    // The next release gets a record of its own; the first stays.
    world.snapshot.rollout = rollout("Progressing", "v3");
    world.settle();
    assert_eq!(world.records.len(), 2);
    assert_eq!(world.records[&name]["status"]["phase"], PHASE_COMPLETED);
}

#[test]
fn a_release_without_steps_pods_or_routing_is_still_recorded() {
    let mut world = World::new();
    world.snapshot.rollout = rollout("Progressing", "v2");
    if let Some(canary) = world.snapshot.rollout.spec.strategy.canary.as_mut() {
        canary.traffic_routings.clear();
    }
    world.snapshot.workload = None;
    world.snapshot.pods.clear();
    world.settle();
    world.snapshot.rollout = rollout("Healthy", "v2");
    if let Some(canary) = world.snapshot.rollout.spec.strategy.canary.as_mut() {
        canary.traffic_routings.clear();
    }
    world.settle();
    let record = world.records.values().next().expect("a record");
    assert_eq!(record["status"]["phase"], PHASE_COMPLETED);
    assert!(record["spec"].get("service").is_none() && record["spec"].get("workload").is_none());
    assert_eq!(record["status"]["canarySteps"][0], json!({"canaryStepIndex": 1}));
}

#[test]
fn names_differ_by_release_and_rollout() {
    let a = history_name("demo", "uid-1", "v1");
    assert_eq!(a, history_name("demo", "uid-1", "v1"), "stable across retries");
    assert_ne!(a, history_name("demo", "uid-1", "v2"));
    assert_ne!(a, history_name("demo", "uid-2", "v1"));
    let suffix = &a["demo-".len()..];
    assert!(suffix.chars().all(|c| c.is_ascii_lowercase() || c.is_ascii_digit()), "{a}");
}
