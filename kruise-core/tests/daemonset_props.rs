//! Advanced DaemonSet planner invariants, checked by carrying plans out on a small simulated
//! cluster: pods become ready at random, the template changes, and the rollout runs until
//! nothing is left to do.

mod support;

use std::collections::{BTreeMap, BTreeSet};

use k8s_openapi::api::core::v1::{Node, Pod};
use kruise_core::daemonset::eligibility::{daemon_pod_spec, node_should_run, target_node_name};
use kruise_core::daemonset::{DaemonSetSnapshot, FeatureGates};
use kruise_core::workload::Action;
use proptest::prelude::*;
use serde_json::{Value, json};
use support::daemonset::{self as ds, Sim};

#[derive(Clone, Debug)]
struct NodeCase {
    zone_a: bool,
    upgrade: bool,
    /// 0: none, 1: custom NoSchedule, 2: custom NoExecute, 3: unschedulable.
    taint: u8,
}

#[derive(Clone, Debug)]
struct Case {
    nodes: Vec<NodeCase>,
    only_zone_a: bool,
    surge: bool,
    budget: i32,
    partition: i32,
    selector: bool,
    prune: bool,
    pre_delete: bool,
    ready_pattern: Vec<bool>,
}

fn case() -> impl Strategy<Value = Case> {
    (
        prop::collection::vec(
            (any::<bool>(), any::<bool>(), 0u8..4).prop_map(|(zone_a, upgrade, taint)| NodeCase {
                zone_a,
                upgrade,
                taint,
            }),
            1..10,
        ),
        any::<bool>(),
        any::<bool>(),
        1i32..4,
        0i32..4,
        any::<bool>(),
        (any::<bool>(), any::<bool>()),
        prop::collection::vec(any::<bool>(), 1..8),
    )
        .prop_map(
            |(
                nodes,
                only_zone_a,
                surge,
                budget,
                partition,
                selector,
                (prune, pre_delete),
                ready_pattern,
            )| Case {
                nodes,
                only_zone_a,
                surge,
                budget,
                partition,
                selector,
                prune,
                pre_delete,
                ready_pattern,
            },
        )
}

fn nodes(case: &Case) -> Vec<Node> {
    case.nodes
        .iter()
        .enumerate()
        .map(|(i, n)| {
            let mut labels = vec![("zone", if n.zone_a { "a" } else { "b" })];
            if n.upgrade {
                labels.push(("upgrade", "yes"));
            }
            let taints: &[(&str, &str)] = match n.taint {
                1 => &[("dedicated", "NoSchedule")],
                2 => &[("dedicated", "NoExecute")],
                3 => &[("node.kubernetes.io/unschedulable", "NoSchedule")],
                _ => &[],
            };
            ds::node(&format!("node-{i}"), &labels, taints)
        })
        .collect()
}

fn spec(case: &Case) -> Value {
    let mut rolling = if case.surge {
        json!({"maxUnavailable": 0, "maxSurge": case.budget})
    } else {
        json!({"maxUnavailable": case.budget})
    };
    if case.partition > 0 {
        rolling["partition"] = json!(case.partition);
    }
    if case.selector {
        rolling["selector"] = json!({"matchLabels": {"upgrade": "yes"}});
    }
    let mut spec = json!({"updateStrategy": {"type": "RollingUpdate", "rollingUpdate": rolling}});
    if case.only_zone_a {
        spec["template"] = json!({"spec": {"nodeSelector": {"zone": "a"}}});
    }
    if case.pre_delete {
        spec["lifecycle"] = json!({"preDelete": {"labelsHandler": {"hook": "true"}}});
        if !spec["template"].is_object() {
            spec["template"] = json!({});
        }
        spec["template"]["metadata"] = json!({"labels": {"app": "d", "hook": "true"}});
    }
    spec
}

fn ready_picker(case: &Case, step: usize) -> impl FnMut(&Pod) -> bool + '_ {
    move |pod: &Pod| {
        let name = pod.metadata.name.as_deref().unwrap_or_default();
        let salt = name.bytes().map(usize::from).sum::<usize>();
        step > 40 || case.ready_pattern[(salt + step) % case.ready_pattern.len()]
    }
}

/// Pods by node, terminating ones left out.
fn by_node(sim: &Sim) -> BTreeMap<String, Vec<&Pod>> {
    let mut map: BTreeMap<String, Vec<&Pod>> = BTreeMap::new();
    for pod in sim.pods() {
        if let Some(node) = target_node_name(pod) {
            map.entry(node.to_owned()).or_default().push(pod);
        }
    }
    map
}

fn hash(pod: &Pod) -> &str {
    pod.metadata.labels.as_ref().and_then(|l| l.get("controller-revision-hash")).map_or("", |s| s)
}

/// Runs the sim until a plan asks for nothing; `check` runs after every applied plan.
fn settle(sim: &mut Sim, case: &Case, mut check: impl FnMut(&Sim, &[Action])) {
    for step in 0..200 {
        let plan = sim.step();
        check(sim, &plan.actions);
        let quiet = plan.actions.is_empty() && plan.status.is_none();
        let all_ready = sim.pods().all(kruise_core::pod::is_pod_ready);
        if quiet && all_ready {
            let again = sim.plan();
            assert!(again.actions.is_empty(), "a settled DaemonSet plans {:?}", again.actions);
            assert!(again.status.is_none(), "a settled DaemonSet rewrites its status");
            return;
        }
        sim.kubelet(ready_picker(case, step));
        // The preDelete hook's owner lets go of pods waiting in PreparingDelete.
        sim.release_hook("hook");
        sim.now += 1;
    }
    panic!("the rollout did not settle");
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 96, ..ProptestConfig::default() })]

    #[test]
    fn rollouts_respect_budgets_and_settle(case in case()) {
        let nodes = nodes(&case);
        let first = ds::daemonset("img:1", spec(&case));
        let mut snapshot = DaemonSetSnapshot::new(first.clone());
        snapshot.nodes = nodes.iter().cloned().map(Into::into).collect();
        snapshot.feature_gates = FeatureGates::default().with_prune_ineligible_nodes(case.prune);
        let mut sim = Sim::new(snapshot);
        let judged = daemon_pod_spec(&first.spec.template);
        let verdicts: BTreeMap<String, _> = nodes
            .iter()
            .map(|n| (n.metadata.name.clone().unwrap_or_default(), node_should_run(&judged, n)))
            .collect();
        let desired = verdicts.values().filter(|v| v.should_run).count() as i32;

        // The first rollout places one pod on each eligible node and none elsewhere.
        settle(&mut sim, &case, |_, _| {});
        let placed = by_node(&sim);
        for (node, verdict) in &verdicts {
            let count = placed.get(node).map_or(0, Vec::len);
            if verdict.should_run {
                prop_assert_eq!(count, 1, "node {} should run one pod", node);
            } else {
                prop_assert_eq!(count, 0, "node {} should run no pod", node);
            }
        }
        let old_hash = ds::hash_of(&sim.snapshot.revisions[0]);
        let selected: BTreeSet<String> = nodes
            .iter()
            .filter(|n| n.metadata.labels.as_ref().is_some_and(|l| l.contains_key("upgrade")))
            .filter_map(|n| n.metadata.name.clone())
            .collect();

        // Then a new template rolls out.
        sim.set_image("img:2");
        let (budget, surge) = (case.budget.min(desired.max(1)), case.surge);
        let mut created_last: BTreeSet<String> = BTreeSet::new();
        settle(&mut sim, &case, |sim, actions| {
            let placed = by_node(sim);
            let mut unavailable = 0;
            let mut doubled = 0;
            for (node, verdict) in &verdicts {
                let pods = placed.get(node).cloned().unwrap_or_default();
                if verdict.should_run && !pods.iter().any(|p| kruise_core::pod::is_pod_ready(p)) {
                    unavailable += 1;
                }
                if pods.len() > 1 {
                    doubled += 1;
                }
                if case.selector && !selected.contains(node) {
                    for pod in &pods {
                        assert_eq!(hash(pod), old_hash, "a pod outside the selector was updated");
                    }
                }
            }
            if surge {
                assert_eq!(unavailable, 0, "a surge rollout left a node without a ready pod");
                assert!(doubled <= budget, "{doubled} nodes surged, budget {budget}");
            } else {
                assert!(unavailable <= budget, "{unavailable} nodes unavailable, budget {budget}");
                assert_eq!(doubled, 0, "a node runs two pods without surge");
            }
            let old = sim.pods().filter(|p| hash(p) == old_hash).count() as i32;
            let kept = case.partition.min(desired);
            assert!(old >= kept, "{old} old pods left, partition {}", case.partition);
            // Replanning on a plan's outcome never creates on a node this plan created on.
            let created: BTreeSet<String> = actions
                .iter()
                .filter_map(|a| match a {
                    Action::CreatePod { pod } => target_node_name(pod).map(str::to_owned),
                    _ => None,
                })
                .collect();
            assert!(created.is_disjoint(&created_last) || created_last.is_empty() || created.is_empty() || {
                // A node may get a pod again only when the previous one is gone.
                created.intersection(&created_last).all(|n| placed.get(n).map_or(0, Vec::len) <= 1)
            });
            created_last = created;
        });
        let placed = by_node(&sim);
        for (node, verdict) in &verdicts {
            let pods = placed.get(node).cloned().unwrap_or_default();
            if verdict.should_run {
                prop_assert_eq!(pods.len(), 1, "node {} should run one pod", node);
            } else if !verdict.should_continue_running {
                prop_assert_eq!(pods.len(), 0, "node {} should run no pod", node);
            }
        }
        if !case.selector && case.partition == 0 {
            prop_assert!(sim.pods().all(|p| hash(p) != old_hash), "the rollout did not finish");
        }
        if case.partition > 0 && !case.selector {
            let updated = sim.pods().filter(|p| hash(p) != old_hash).count() as i32;
            prop_assert_eq!(updated, (desired - case.partition).max(0), "partition");
        }
    }
}

fn fixed_case(surge: bool, pre_delete: bool) -> Case {
    Case {
        nodes: (0..5).map(|_| NodeCase { zone_a: true, upgrade: true, taint: 0 }).collect(),
        only_zone_a: false,
        surge,
        budget: 2,
        partition: 0,
        selector: false,
        prune: false,
        pre_delete,
        ready_pattern: vec![true, false],
    }
}

/// Runs a rollout of `case` and returns every action planned during the second one.
fn rollout(case: &Case, rolling: Option<Value>) -> (Sim, Vec<Action>) {
    let mut spec = spec(case);
    if let Some(rolling) = rolling {
        spec["updateStrategy"]["rollingUpdate"] = rolling;
    }
    let first = ds::daemonset("img:1", spec);
    let mut snapshot = DaemonSetSnapshot::new(first);
    snapshot.nodes = nodes(case).into_iter().map(Into::into).collect();
    let mut sim = Sim::new(snapshot);
    settle(&mut sim, case, |_, _| {});
    sim.set_image("img:2");
    let mut all = Vec::new();
    settle(&mut sim, case, |_, actions| all.extend(actions.iter().cloned()));
    (sim, all)
}

#[test]
fn pre_delete_hook_holds_every_replaced_pod() {
    for surge in [false, true] {
        let case = fixed_case(surge, true);
        let (sim, actions) = rollout(&case, None);
        let prepared = actions
            .iter()
            .filter(|a| {
                matches!(
                    a,
                    Action::PatchPod {
                        purpose: kruise_core::workload::PodPatchPurpose::Lifecycle,
                        ..
                    }
                )
            })
            .count();
        let deleted = actions.iter().filter(|a| matches!(a, Action::DeletePod { .. })).count();
        assert_eq!(prepared, 5, "surge {surge}: every old pod goes to PreparingDelete first");
        assert_eq!(deleted, 5, "surge {surge}: and is deleted once released");
        let hash = ds::hash_of(sim.snapshot.revisions.last().expect("revision"));
        assert!(sim.pods().all(|p| self::hash(p) == hash), "surge {surge}: rollout finished");
    }
}

#[test]
fn in_place_rollout_updates_without_recreating() {
    let case = fixed_case(false, false);
    let rolling = json!({"rollingUpdateType": "InPlaceIfPossible", "maxUnavailable": 2});
    let (sim, actions) = rollout(&case, Some(rolling));
    assert!(
        !actions.iter().any(|a| matches!(a, Action::DeletePod { .. } | Action::CreatePod { .. })),
        "an image change is made in place: {actions:?}"
    );
    let hash = ds::hash_of(sim.snapshot.revisions.last().expect("revision"));
    assert_eq!(sim.pods().count(), 5);
    assert!(sim.pods().all(|p| self::hash(p) == hash), "every pod is at the new revision");
    assert!(
        sim.pods().all(|p| p
            .spec
            .as_ref()
            .is_some_and(|s| s.containers[0].image.as_deref() == Some("img:2"))),
        "with the new image"
    );
}
