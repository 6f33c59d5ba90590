//! Readable WorkloadSpread scenarios from the upstream manual, each with an insta snapshot
//! under `tests/scenarios/workloadspread/snapshots`: the three-zone example (zone-a and zone-b
//! at most 2 pods, zone-c unlimited) filled by the webhook, its deletion costs when the
//! workload scales in, and Adaptive rescheduling out of a full zone.

use std::collections::BTreeMap;
use std::sync::Arc;

use jiff::{SignedDuration, Timestamp};
use k8s_openapi::api::core::v1::{
    Node, NodeSelectorRequirement, NodeSelectorTerm, Pod, PodCondition, PodSpec, PodStatus,
};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, OwnerReference, Time};
use k8s_openapi::apimachinery::pkg::runtime::RawExtension;
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;
use kruise_api::apps::v1beta1::{
    AdaptiveWorkloadSpreadStrategy, TargetReference, WorkloadSpread,
    WorkloadSpreadScheduleStrategy, WorkloadSpreadScheduleStrategyType, WorkloadSpreadSpec,
    WorkloadSpreadSubset,
};
use kruise_core::workloadspread::{
    InjectedSubset, POD_DELETION_COST_ANNOTATION, PodOperation, ReconcileInput, inject, reconcile,
    reserve,
};
use serde::Serialize;
use serde_json::json;

fn t0() -> Timestamp {
    "2024-05-01T10:00:00Z".parse().expect("time")
}

fn zone(z: &str) -> NodeSelectorTerm {
    NodeSelectorTerm {
        match_expressions: Some(vec![NodeSelectorRequirement {
            key: "topology.kubernetes.io/zone".into(),
            operator: "In".into(),
            values: Some(vec![z.into()]),
        }]),
        match_fields: None,
    }
}

/// The manual's example: a CloneSet spread over three zones.
fn three_zones() -> WorkloadSpread {
    let subset = |name: &str, max: Option<i32>| WorkloadSpreadSubset {
        name: name.into(),
        required_node_selector: Some(zone(name)),
        max_replicas: max.map(IntOrString::Int),
        patch: Some(RawExtension(json!({"metadata": {"labels": {"zone": name}}}))),
        ..Default::default()
    };
    let mut ws = WorkloadSpread::new(
        "workloadspread-demo",
        WorkloadSpreadSpec {
            target_reference: Some(TargetReference {
                api_version: "apps.kruise.io/v1alpha1".into(),
                kind: "CloneSet".into(),
                name: "workload-xxx".into(),
            }),
            subsets: Some(vec![
                subset("zone-a", Some(2)),
                subset("zone-b", Some(2)),
                subset("zone-c", None),
            ]),
            ..Default::default()
        },
    );
    ws.metadata.namespace = Some("default".into());
    ws.metadata.generation = Some(1);
    ws
}

fn pod(name: &str) -> Pod {
    Pod {
        metadata: ObjectMeta {
            name: Some(name.into()),
            namespace: Some("default".into()),
            owner_references: Some(vec![OwnerReference {
                api_version: "apps.kruise.io/v1alpha1".into(),
                kind: "CloneSet".into(),
                name: "workload-xxx".into(),
                controller: Some(true),
                uid: "u".into(),
                ..Default::default()
            }]),
            creation_timestamp: Some(Time(t0())),
            ..Default::default()
        },
        spec: Some(PodSpec::default()),
        status: Some(PodStatus { phase: Some("Running".into()), ..Default::default() }),
    }
}

fn subset_of(p: &Pod) -> String {
    InjectedSubset::from_pod(p).map(|i| i.subset).unwrap_or_default()
}

fn snapshot<T: Serialize>(name: &str, description: &str, value: &T) {
    insta::with_settings!({
        snapshot_path => "scenarios/workloadspread/snapshots",
        prepend_module_to_snapshot => false,
        description => description,
        omit_expression => true,
    }, {
        insta::assert_yaml_snapshot!(name, value);
    });
}

/// Creates `n` pods through the webhook, writing each status change back.
fn create(ws: &mut WorkloadSpread, names: impl Iterator<Item = String>) -> Vec<Pod> {
    let mut out = Vec::new();
    for name in names {
        let mut p = pod(&name);
        let r = reserve(ws, &p, PodOperation::Create, 6, "CloneSet", t0(), &mut || unreachable!());
        if let Some(status) = r.new_status {
            ws.status = Some(status);
        }
        if let Some(subset) = r.subset {
            inject(ws, &subset, None, &mut p).expect("injects");
        }
        out.push(p);
    }
    out
}

#[derive(Serialize)]
struct Fill {
    assigned: BTreeMap<String, String>,
    per_subset: BTreeMap<String, usize>,
    webhook_status: serde_json::Value,
    controller_status: serde_json::Value,
}

#[test]
fn three_zones_six_pods() {
    let mut ws = three_zones();
    let pods = create(&mut ws, (0..6).map(|i| format!("workload-xxx-{i}")));
    let mut per_subset = BTreeMap::new();
    for p in &pods {
        *per_subset.entry(subset_of(p)).or_insert(0) += 1;
    }
    let nodes = |_: &str| -> Option<Arc<Node>> { None };
    let plan = reconcile(&ReconcileInput::new(
        &ws,
        &pods,
        6,
        &nodes,
        "CloneSet",
        t0() + SignedDuration::from_secs(5),
    ));
    let fill = Fill {
        assigned: pods
            .iter()
            .map(|p| (p.metadata.name.clone().unwrap_or_default(), subset_of(p)))
            .collect(),
        per_subset,
        webhook_status: serde_json::to_value(&ws.status).expect("encode"),
        controller_status: serde_json::to_value(&plan.status).expect("encode"),
    };
    snapshot(
        "three-zones-six-pods",
        "zone-a and zone-b take 2 pods each, zone-c (unlimited) the rest; the controller's status agrees",
        &fill,
    );
}

#[derive(Serialize)]
struct ScaleIn {
    deletion_costs: BTreeMap<String, String>,
    deleted_first: Vec<String>,
    left_per_subset: BTreeMap<String, usize>,
}

#[test]
fn scale_in_from_ten_to_four() {
    let mut ws = three_zones();
    // Ten pods, one over zone-a's limit (created before the limit was lowered).
    let mut pods = create(&mut ws, (0..9).map(|i| format!("workload-xxx-{i}")));
    let mut extra = pod("workload-xxx-9");
    inject(&ws, "zone-a", None, &mut extra).expect("injects");
    pods.push(extra);
    let nodes = |_: &str| -> Option<Arc<Node>> { None };
    let plan = reconcile(&ReconcileInput::new(&ws, &pods, 10, &nodes, "CloneSet", t0()));
    let costs: BTreeMap<String, String> = plan
        .pod_patches
        .iter()
        .map(|p| {
            (
                p.name.clone(),
                p.patch["metadata"]["annotations"][POD_DELETION_COST_ANNOTATION]
                    .as_str()
                    .unwrap_or("")
                    .to_owned(),
            )
        })
        .collect();
    // The workload deletes the lowest deletion cost first (names break ties).
    let mut order: Vec<(i32, String)> =
        costs.iter().map(|(n, c)| (c.parse().expect("number"), n.clone())).collect();
    order.sort();
    let deleted_first: Vec<String> = order.iter().take(6).map(|(_, n)| n.clone()).collect();
    let mut left_per_subset = BTreeMap::new();
    for p in
        pods.iter().filter(|p| !deleted_first.contains(p.metadata.name.as_ref().expect("name")))
    {
        *left_per_subset.entry(subset_of(p)).or_insert(0) += 1;
    }
    assert_eq!(
        left_per_subset,
        BTreeMap::from([("zone-a".to_owned(), 2), ("zone-b".to_owned(), 2)])
    );
    snapshot(
        "scale-in-ten-to-four",
        "pods over a subset's limit go first, then the last subsets: 10 -> 4 leaves 2/2/0",
        &ScaleIn { deletion_costs: costs, deleted_first, left_per_subset },
    );
}

#[test]
fn adaptive_reschedule_out_of_a_full_zone() {
    let mut ws = three_zones();
    ws.spec.subsets.as_mut().expect("subsets")[2].max_replicas = None;
    ws.spec.schedule_strategy = WorkloadSpreadScheduleStrategy {
        type_: Some(WorkloadSpreadScheduleStrategyType::Adaptive),
        adaptive: Some(AdaptiveWorkloadSpreadStrategy {
            reschedule_critical_seconds: Some(30),
            ..Default::default()
        }),
    };
    let mut pods = create(&mut ws, (0..3).map(|i| format!("workload-xxx-{i}")));
    // workload-xxx-1 cannot be scheduled in zone-a.
    pods[1].status = Some(PodStatus {
        phase: Some("Pending".into()),
        conditions: Some(vec![PodCondition {
            type_: "PodScheduled".into(),
            status: "False".into(),
            reason: Some("Unschedulable".into()),
            ..Default::default()
        }]),
        ..Default::default()
    });
    let nodes = |_: &str| -> Option<Arc<Node>> { None };
    let plan = reconcile(&ReconcileInput::new(
        &ws,
        &pods,
        3,
        &nodes,
        "CloneSet",
        t0() + SignedDuration::from_secs(31),
    ));
    ws.status = Some(plan.status.clone());
    // The replacement pod skips zone-a.
    let replacement = create(&mut ws, std::iter::once("workload-xxx-3".to_owned()));
    snapshot(
        "adaptive-reschedule",
        "a pod unschedulable for longer than rescheduleCriticalSeconds marks zone-a unschedulable and is deleted; its replacement goes to zone-b",
        &json!({
            "deletePods": plan.delete_pods,
            "requeueAfterSeconds": plan.requeue_after.map(|d| d.as_secs()),
            "status": plan.status,
            "replacementSubset": subset_of(&replacement[0]),
        }),
    );
}
