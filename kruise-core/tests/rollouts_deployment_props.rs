//! The AdvancedDeployment planner (`rollouts::deployment::plan`) stepped against a modelled
//! ReplicaSet world: surge and availability budgets hold on every round, and the rollout
//! settles exactly at the partition.

use k8s_openapi::api::apps::v1::{Deployment, ReplicaSet};
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;
use kruise_core::plan::Action;
use kruise_core::rollouts::deployment::{self, DeploymentStrategy, RollingUpdate};
use proptest::prelude::*;
use serde_json::{Value, json};

fn deployment(replicas: i32, strategy: &DeploymentStrategy, image: &str) -> Deployment {
    serde_json::from_value(json!({
        "metadata": {
            "name": "demo", "namespace": "default", "uid": "d-uid",
            "labels": {deployment::CONTROL_LABEL: "true"},
            "annotations": {deployment::STRATEGY_ANNOTATION: serde_json::to_string(strategy).expect("a strategy encodes")},
        },
        "spec": {
            "replicas": replicas,
            "paused": true,
            "selector": {"matchLabels": {"app": "demo"}},
            "strategy": {"type": "Recreate"},
            "template": {"metadata": {"labels": {"app": "demo"}},
                         "spec": {"containers": [{"name": "main", "image": image}]}},
        },
    }))
    .expect("a Deployment")
}

/// A ReplicaSet of the model: its object (template, revision) and counts.
#[derive(Clone, Debug)]
struct Set {
    name: String,
    image: String,
    revision: i64,
    replicas: i32,
    available: i32,
}

impl Set {
    fn object(&self, order: usize) -> ReplicaSet {
        serde_json::from_value(json!({
            "metadata": {
                "name": self.name, "namespace": "default", "uid": format!("uid-{}", self.name),
                "resourceVersion": "1",
                "creationTimestamp": format!("2026-01-01T00:00:{:02}Z", order.min(59)),
                "labels": {"app": "demo", "pod-template-hash": self.name},
                "annotations": {"deployment.kubernetes.io/revision": self.revision.to_string()},
                "ownerReferences": [{"apiVersion": "apps/v1", "kind": "Deployment", "name": "demo",
                                     "uid": "d-uid", "controller": true}],
            },
            "spec": {
                "replicas": self.replicas,
                "selector": {"matchLabels": {"app": "demo"}},
                "template": {"metadata": {"labels": {"app": "demo", "pod-template-hash": self.name}},
                             "spec": {"containers": [{"name": "main", "image": self.image}]}},
            },
            "status": {"replicas": self.replicas, "availableReplicas": self.available},
        }))
        .expect("a ReplicaSet")
    }
}

fn apply(sets: &mut Vec<Set>, actions: &[Action]) {
    for action in actions {
        match action {
            Action::CreateObject { target, body } if target.kind.kind == "ReplicaSet" => {
                let image = body["spec"]["template"]["spec"]["containers"][0]["image"]
                    .as_str()
                    .unwrap_or_default()
                    .to_owned();
                let revision = body["metadata"]["annotations"]["deployment.kubernetes.io/revision"]
                    .as_str()
                    .and_then(|r| r.parse().ok())
                    .unwrap_or(0);
                sets.push(Set {
                    name: target.name.clone(),
                    image,
                    revision,
                    replicas: body["spec"]["replicas"].as_i64().unwrap_or(0) as i32,
                    available: 0,
                });
            }
            Action::PatchObject { target, patch, .. } if target.kind.kind == "ReplicaSet" => {
                let body: Value = patch.body().clone();
                let replicas = body.pointer("/spec/replicas").and_then(Value::as_i64);
                let set = sets.iter_mut().find(|s| s.name == target.name).expect("a known set");
                if let Some(n) = replicas {
                    set.replicas = n as i32;
                    set.available = set.available.min(set.replicas);
                }
            }
            _ => {}
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(200))]

    #[test]
    fn partition_releases_keep_the_budgets_and_settle_at_the_partition(
        replicas in 1..12i32,
        surge in 0..4i32,
        unavailable in 0..4i32,
        partitions in proptest::collection::vec(0..=100i32, 1..4),
        progress in proptest::collection::vec(0..3i32, 60),
    ) {
        let rolling = RollingUpdate {
            max_surge: Some(IntOrString::Int(surge)),
            max_unavailable: Some(IntOrString::Int(unavailable)),
        };
        let (max_surge, max_unavailable) = rolling.fenceposts(replicas);
        let mut sets = vec![Set { name: "old".into(), image: "v1".into(), revision: 1, replicas, available: replicas }];
        let mut partitions: Vec<i32> = partitions;
        partitions.sort();
        let mut ticks = progress.into_iter().cycle();
        for percent in partitions {
            let partition = IntOrString::String(format!("{percent}%"));
            let strategy = DeploymentStrategy {
                rolling_style: "Partition".into(),
                rolling_update: Some(rolling.clone()),
                paused: false,
                partition: partition.clone(),
            };
            let limit = deployment::new_replica_set_limit(&partition, replicas);
            let d = deployment(replicas, &strategy, "v2");
            for round in 0..200 {
                let objects: Vec<ReplicaSet> = sets.iter().enumerate().map(|(i, s)| s.object(i)).collect();
                let available_before: i32 = sets.iter().map(|s| s.available.min(s.replicas)).sum();
                let plan = deployment::plan(&d, &objects);
                let moves: Vec<&Action> = plan.actions.iter()
                    .filter(|a| !matches!(a, Action::PatchObject { target, .. } if target.kind.kind == "Deployment"))
                    .collect();
                apply(&mut sets, &plan.actions);
                let total: i32 = sets.iter().map(|s| s.replicas).sum();
                prop_assert!(total <= replicas + max_surge, "surge exceeded: {total} > {replicas}+{max_surge}: {sets:?}");
                let available: i32 = sets.iter().map(|s| s.available.min(s.replicas)).sum();
                prop_assert!(
                    available >= (replicas - max_unavailable).min(available_before),
                    "availability fell below the floor: {available} < {replicas}-{max_unavailable}: {sets:?}"
                );
                let new: i32 = sets.iter().filter(|s| s.image == "v2").map(|s| s.replicas).sum();
                prop_assert!(new <= limit.max(0), "the new ReplicaSet passed the partition: {new} > {limit}");
                prop_assert!(sets.iter().filter(|s| s.image == "v2").count() <= 1, "two new ReplicaSets");
                let settled = moves.is_empty() && sets.iter().all(|s| s.available == s.replicas);
                if settled {
                    break;
                }
                // Pods become available at their own pace, and in the end all of them.
                for set in &mut sets {
                    let step = if round > 100 { set.replicas } else { ticks.next().unwrap_or(1) };
                    set.available = (set.available + step).min(set.replicas);
                }
            }
            let new: i32 = sets.iter().filter(|s| s.image == "v2").map(|s| s.replicas).sum();
            let old: i32 = sets.iter().filter(|s| s.image != "v2").map(|s| s.replicas).sum();
            prop_assert_eq!(new, limit, "settled at the partition: {:?}", sets);
            prop_assert_eq!(old, replicas - limit, "the rest stays old: {:?}", sets);
        }
    }
}

#[test]
fn the_extra_status_is_written_only_onto_the_deployment_the_round_read() {
    let strategy = DeploymentStrategy {
        rolling_style: "Partition".into(),
        partition: IntOrString::Int(1),
        ..Default::default()
    };
    let mut d = deployment(3, &strategy, "v2");
    d.metadata.resource_version = Some("42".into());
    let plan = deployment::plan(&d, &[]);
    let extra = plan
        .actions
        .iter()
        .find_map(|a| match a {
            Action::PatchObject { target, .. } if target.kind.kind == "Deployment" => Some(target),
            _ => None,
        })
        .expect("the extra status is recorded");
    assert_eq!(extra.guard, kruise_core::plan::Guard::ResourceVersion("42".into()));
}

#[test]
fn a_deployment_not_under_control_is_left_alone() {
    let strategy = DeploymentStrategy { rolling_style: "Canary".into(), ..Default::default() };
    let d = deployment(3, &strategy, "v2");
    assert!(deployment::plan(&d, &[]).actions.is_empty());
}

mod native_daemon_set {
    use super::*;
    use kruise_core::rollouts::daemonset::{self, Control, DaemonPod};

    fn daemon_set(partition: &str, max_unavailable: i32) -> k8s_openapi::api::apps::v1::DaemonSet {
        let control = Control { partition: partition.into(), batch_revision: "new".into() };
        serde_json::from_value(json!({
            "metadata": {"name": "agent", "namespace": "default",
                "annotations": {daemonset::CONTROL_ANNOTATION:
                    serde_json::to_string(&control).expect("the control encodes")}},
            "spec": {"selector": {"matchLabels": {"app": "agent"}},
                "updateStrategy": {"type": "OnDelete", "rollingUpdate": {"maxUnavailable": max_unavailable}},
                "template": {"metadata": {"labels": {"app": "agent"}}, "spec": {"containers": [{"name": "main", "image": "x"}]}}},
        }))
        .expect("a DaemonSet")
    }

    proptest! {
        /// Old pods go no faster than maxUnavailable allows, and the release settles with
        /// exactly the partition's pods left on the old revision.
        #[test]
        fn old_pods_go_within_max_unavailable_and_settle_at_the_partition(
            nodes in 1..10usize,
            keep in 0..10i32,
            max_unavailable in 1..4i32,
        ) {
            let keep = keep.min(nodes as i32);
            let ds = daemon_set(&keep.to_string(), max_unavailable);
            let mut pods: Vec<DaemonPod> = (0..nodes)
                .map(|i| DaemonPod { name: format!("p{i}"), uid: format!("u{i}"), revision: "old".into(), ready: true, deleting: false, created: None })
                .collect();
            for _ in 0..100 {
                let plan = daemonset::plan(&ds, &pods);
                if plan.actions.is_empty() { break; }
                prop_assert!(plan.actions.len() as i32 <= max_unavailable, "{} deleted at once", plan.actions.len());
                for action in &plan.actions {
                    let Action::DeleteObject { target } = action else { panic!("only deletes") };
                    // kube-controller-manager replaces the pod on the new revision, not ready yet;
                    // it becomes ready by the next round.
                    let pod = pods.iter_mut().find(|p| p.name == target.name).expect("a known pod");
                    pod.revision = "new".into();
                    pod.ready = false;
                }
                let unavailable = pods.iter().filter(|p| !p.ready).count() as i32;
                prop_assert!(unavailable <= max_unavailable);
                for pod in &mut pods { pod.ready = true; }
            }
            let old = pods.iter().filter(|p| p.revision == "old").count() as i32;
            prop_assert_eq!(old, keep);
        }
    }
}
