//! Property tests for WorkloadSpread: whatever the interleaving of pod creations, deletions
//! and controller passes, no subset holds more pods than its limit; every created pod is put in
//! exactly one subset, or none only when every subset is full; injection is idempotent; the
//! controller's plan is idempotent on its own outcome.

mod support;

use std::collections::BTreeMap;

use jiff::{SignedDuration, Timestamp};
use k8s_openapi::api::core::v1::{
    Node, NodeSelectorRequirement, NodeSelectorTerm, Pod, PodCondition, PodSpec, PodStatus,
    PreferredSchedulingTerm, Toleration,
};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, OwnerReference};
use k8s_openapi::apimachinery::pkg::runtime::RawExtension;
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;
use kruise_api::apps::v1beta1::{
    TargetReference, WorkloadSpread, WorkloadSpreadSpec, WorkloadSpreadSubset,
};
use kruise_core::workloadspread::{
    InjectedSubset, PodOperation, ReconcileInput, VERSION_IGNORED, inject, reconcile, reserve,
};
use proptest::prelude::*;
use serde_json::json;

fn t0() -> Timestamp {
    Timestamp::from_second(1_700_000_000).expect("in range")
}

fn zone_term(zone: &str) -> NodeSelectorTerm {
    NodeSelectorTerm {
        match_expressions: Some(vec![NodeSelectorRequirement {
            key: "zone".into(),
            operator: "In".into(),
            values: Some(vec![zone.into()]),
        }]),
        match_fields: None,
    }
}

fn workload_spread(maxes: &[Option<i32>]) -> WorkloadSpread {
    let subsets = maxes
        .iter()
        .enumerate()
        .map(|(i, max)| WorkloadSpreadSubset {
            name: format!("s{i}"),
            required_node_selector: Some(zone_term(&format!("z{i}"))),
            max_replicas: max.map(IntOrString::Int),
            patch: Some(RawExtension(json!({"metadata": {"labels": {"subset": format!("s{i}")}}}))),
            ..Default::default()
        })
        .collect();
    let mut ws = WorkloadSpread::new(
        "ws",
        WorkloadSpreadSpec {
            target_reference: Some(TargetReference {
                api_version: "apps.kruise.io/v1alpha1".into(),
                kind: "CloneSet".into(),
                name: "cs".into(),
            }),
            subsets: Some(subsets),
            ..Default::default()
        },
    );
    ws.metadata.namespace = Some("ns".into());
    ws
}

fn new_pod(name: Option<String>) -> Pod {
    Pod {
        metadata: ObjectMeta {
            name,
            namespace: Some("ns".into()),
            owner_references: Some(vec![OwnerReference {
                api_version: "apps.kruise.io/v1alpha1".into(),
                kind: "CloneSet".into(),
                name: "cs".into(),
                controller: Some(true),
                uid: "u".into(),
                ..Default::default()
            }]),
            ..Default::default()
        },
        spec: Some(PodSpec::default()),
        ..Default::default()
    }
}

#[derive(Clone, Debug)]
enum Op {
    Create { named: bool },
    Delete(usize),
    Reconcile { advance: i64 },
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        4 => any::<bool>().prop_map(|named| Op::Create { named }),
        2 => any::<usize>().prop_map(Op::Delete),
        1 => (0i64..40).prop_map(|advance| Op::Reconcile { advance }),
    ]
}

fn maxes() -> impl Strategy<Value = Vec<Option<i32>>> {
    prop::collection::vec(prop::option::weighted(0.8, 0i32..4), 1..4)
}

fn subset_of(pod: &Pod) -> Option<String> {
    InjectedSubset::from_pod(pod).map(|i| i.subset)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(200))]

    #[test]
    fn limits_hold_and_each_pod_gets_one_subset(maxes in maxes(), ops in prop::collection::vec(op(), 1..60)) {
        let mut ws = workload_spread(&maxes);
        let mut live: Vec<Pod> = Vec::new();
        let mut now = t0();
        let mut seq = 0;
        let mut uids = 0;
        let no_nodes = |_: &str| -> Option<std::sync::Arc<Node>> { None };
        for op in ops {
            match op {
                Op::Create { named } => {
                    seq += 1;
                    let name = format!("p-{seq}");
                    let mut pod = new_pod(named.then(|| name.clone()));
                    let before = ws.status.clone().unwrap_or_default();
                    let mut new_uid = || { uids += 1; format!("uid-{uids}") };
                    let r = reserve(&ws, &pod, PodOperation::Create, 10, "CloneSet", now, &mut new_uid);
                    if let Some(status) = &r.new_status {
                        ws.status = Some(status.clone());
                    }
                    match &r.subset {
                        Some(subset) => {
                            prop_assert!(inject(&ws, subset, r.generated_uid.as_deref(), &mut pod).expect("injects"));
                            let got = subset_of(&pod);
                            prop_assert_eq!(got.as_ref(), Some(subset));
                        }
                        None => {
                            // Only when every subset is limited and has no room left.
                            let statuses = before.versioned_subset_statuses.get(VERSION_IGNORED);
                            prop_assert!(maxes.iter().all(Option::is_some));
                            for (i, max) in maxes.iter().enumerate() {
                                let missing = statuses.map_or(max.unwrap_or(-1), |s| s[i].missing_replicas);
                                prop_assert_eq!(missing, 0);
                            }
                        }
                    }
                    pod.metadata.name = Some(name);
                    live.push(pod);
                }
                Op::Delete(i) => {
                    if live.is_empty() { continue; }
                    let pod = live.remove(i % live.len());
                    let r = reserve(&ws, &pod, PodOperation::Delete, 10, "CloneSet", now, &mut || unreachable!());
                    if let Some(status) = &r.new_status {
                        ws.status = Some(status.clone());
                    }
                }
                Op::Reconcile { advance } => {
                    now += SignedDuration::from_secs(advance);
                    let status = reconcile(&ReconcileInput::new(&ws, &live, 10, &no_nodes, "CloneSet", now)).status;
                    ws.status = Some(status);
                }
            }
            for (i, max) in maxes.iter().enumerate() {
                if let Some(max) = max {
                    let name = format!("s{i}");
                    let count = live.iter().filter(|p| subset_of(p).as_deref() == Some(name.as_str())).count();
                    prop_assert!(count <= *max as usize, "subset {} holds {} > {}", name, count, max);
                }
            }
        }
    }
}

fn toleration() -> impl Strategy<Value = Toleration> {
    (0..3u8, prop::bool::ANY).prop_map(|(k, exists)| Toleration {
        key: Some(format!("k{k}")),
        operator: Some(if exists { "Exists" } else { "Equal" }.into()),
        value: (!exists).then(|| "v".into()),
        ..Default::default()
    })
}

fn term() -> impl Strategy<Value = NodeSelectorTerm> {
    (0..3u8).prop_map(|z| zone_term(&format!("z{z}")))
}

fn subset_strategy() -> impl Strategy<Value = WorkloadSpreadSubset> {
    (
        prop::option::of(term()),
        prop::collection::vec((1..100i32, term()), 0..3),
        prop::option::of(prop::collection::vec(toleration(), 0..3)),
        prop::option::of((0..3u8, 0..3u8)),
    )
        .prop_map(|(required, preferred, tolerations, patch)| WorkloadSpreadSubset {
            name: "s".into(),
            required_node_selector: required,
            preferred_node_selector: preferred
                .into_iter()
                .map(|(weight, preference)| PreferredSchedulingTerm { weight, preference })
                .collect(),
            tolerations,
            max_replicas: None,
            patch: patch.map(|(l, e)| {
                RawExtension(json!({
                    "metadata": {"labels": {format!("l{l}"): "x"}},
                    "spec": {"containers": [{"name": "main", "env": [{"name": format!("E{e}"), "value": "1"}]}]}
                }))
            }),
        })
}

fn pod_strategy() -> impl Strategy<Value = Pod> {
    (prop::collection::vec(toleration(), 0..3), prop::collection::vec(term(), 0..3)).prop_map(
        |(tolerations, terms)| {
            let mut pod = new_pod(Some("p".into()));
            let spec = pod.spec.as_mut().expect("spec");
            spec.containers = vec![k8s_openapi::api::core::v1::Container {
                name: "main".into(),
                ..Default::default()
            }];
            spec.tolerations = Some(tolerations);
            if !terms.is_empty() {
                spec.affinity = Some(k8s_openapi::api::core::v1::Affinity {
                    node_affinity: Some(k8s_openapi::api::core::v1::NodeAffinity {
                        required_during_scheduling_ignored_during_execution: Some(
                            k8s_openapi::api::core::v1::NodeSelector { node_selector_terms: terms },
                        ),
                        preferred_during_scheduling_ignored_during_execution: None,
                    }),
                    ..Default::default()
                });
            }
            pod
        },
    )
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(200))]

    #[test]
    fn inject_twice_is_inject_once(subset in subset_strategy(), pod in pod_strategy(), uid in prop::option::of("[a-z]{3}")) {
        let mut ws = workload_spread(&[None]);
        ws.spec.subsets = Some(vec![subset]);
        let mut once = pod.clone();
        prop_assert!(inject(&ws, "s", uid.as_deref(), &mut once).expect("injects"));
        let mut twice = once.clone();
        inject(&ws, "s", uid.as_deref(), &mut twice).expect("injects");
        prop_assert_eq!(twice, once);
    }
}

#[derive(Clone, Debug)]
struct PodShape {
    injected: Option<u8>,
    node_zone: Option<u8>,
    ready: bool,
    cost: Option<i32>,
    version: u8,
}

fn shape() -> impl Strategy<Value = PodShape> {
    (
        prop::option::of(0..4u8),
        prop::option::of(0..4u8),
        any::<bool>(),
        prop::option::of(-300..300i32),
        0..2u8,
    )
        .prop_map(|(injected, node_zone, ready, cost, version)| PodShape {
            injected,
            node_zone,
            ready,
            cost,
            version,
        })
}

fn shaped_pod(i: usize, s: &PodShape) -> Pod {
    let mut pod = new_pod(Some(format!("p-{i}")));
    let mut annotations = BTreeMap::new();
    if let Some(subset) = s.injected {
        // Subset 3 may not exist: such pods land in the fake subset.
        annotations.insert(
            "apps.kruise.io/matched-workloadspread".to_owned(),
            InjectedSubset { name: "ws".into(), subset: format!("s{subset}"), uid: None }
                .to_annotation(),
        );
    }
    if let Some(cost) = s.cost {
        annotations
            .insert("controller.kubernetes.io/pod-deletion-cost".to_owned(), cost.to_string());
    }
    pod.metadata.annotations = Some(annotations);
    pod.metadata.labels =
        Some([("pod-template-hash".to_owned(), format!("v{}", s.version))].into());
    pod.metadata.owner_references.as_mut().expect("owners")[0].kind = "ReplicaSet".into();
    pod.spec.as_mut().expect("spec").node_name = s.node_zone.map(|z| format!("node-z{z}"));
    pod.status = Some(PodStatus {
        phase: Some("Running".into()),
        conditions: Some(vec![PodCondition {
            type_: "Ready".into(),
            status: if s.ready { "True" } else { "False" }.into(),
            ..Default::default()
        }]),
        ..Default::default()
    });
    pod
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(200))]

    #[test]
    fn reconcile_is_idempotent_on_its_outcome(
        maxes in maxes(),
        shapes in prop::collection::vec(shape(), 0..12),
        latest in prop::option::of(0..2u8),
    ) {
        let ws = workload_spread(&maxes);
        let nodes: Vec<Node> = (0..4)
            .map(|z| Node {
                metadata: ObjectMeta {
                    name: Some(format!("node-z{z}")),
                    labels: Some([("zone".to_owned(), format!("z{z}"))].into()),
                    ..Default::default()
                },
                ..Default::default()
            })
            .collect();
        let lookup = |name: &str| nodes.iter().find(|n| n.metadata.name.as_deref() == Some(name)).cloned().map(std::sync::Arc::new);
        let pods: Vec<Pod> = shapes.iter().enumerate().map(|(i, s)| shaped_pod(i, s)).collect();
        let latest = latest.map(|v| format!("v{v}"));
        let run = |pods: &[Pod]| {
            let mut input = ReconcileInput::new(&ws, pods, 10, &lookup, "Deployment", t0());
            input.latest_version = latest.as_deref();
            reconcile(&input)
        };
        let first = run(&pods);
        prop_assert_eq!(&first, &run(&pods));
        let patched: Vec<Pod> = pods
            .iter()
            .map(|p| match first.pod_patches.iter().find(|x| x.name == p.metadata.name.clone().unwrap_or_default()) {
                Some(patch) => support::patched(p, &patch.patch, None),
                None => p.clone(),
            })
            .collect();
        let second = run(&patched);
        prop_assert!(second.pod_patches.is_empty(), "{:?}", second.pod_patches);
    }
}
