//! Which nodes a daemon pod belongs on, decided as kube-controller-manager's DaemonSet
//! controller decides it (`nodeShouldRunDaemonPod`), and the pod built for one node.
//!
//! A node is judged against the pod the DaemonSet would create there: the template plus the
//! tolerations every daemon pod gets ([`add_daemon_tolerations`]). The pod must fit the node's
//! name (`spec.nodeName`, when the template sets one), the node selector and the required node
//! affinity, and tolerate the node's `NoSchedule` and `NoExecute` taints. A node with a taint
//! the pod does not tolerate gets no new pod; an existing pod keeps running there unless the
//! untolerated taint is a `NoExecute` one. `spec.unschedulable` is not read: such nodes carry
//! the `node.kubernetes.io/unschedulable` taint, which every daemon pod tolerates.

use k8s_openapi::api::core::v1::{Node, Pod, PodSpec, PodTemplateSpec, Toleration};

/// Node affinity and tolerations live in the base layer ([`crate::node_affinity`]); these
/// paths are kept for callers.
pub use crate::node_affinity::{
    NODE_NAME_FIELD, fits_node_affinity, pin_to_node, target_node_name, term_matches, tolerates,
    untolerated_taint,
};
use crate::node_affinity::{NodeFacts, fits_node_affinity_facts, has_untolerated_taint};

/// Taint key of a node that is not ready.
pub const TAINT_NOT_READY: &str = "node.kubernetes.io/not-ready";
/// Taint key of a node the node controller cannot reach.
pub const TAINT_UNREACHABLE: &str = "node.kubernetes.io/unreachable";
/// Taint key of a node short of disk.
pub const TAINT_DISK_PRESSURE: &str = "node.kubernetes.io/disk-pressure";
/// Taint key of a node short of memory.
pub const TAINT_MEMORY_PRESSURE: &str = "node.kubernetes.io/memory-pressure";
/// Taint key of a node short of process IDs.
pub const TAINT_PID_PRESSURE: &str = "node.kubernetes.io/pid-pressure";
/// Taint key of a cordoned node.
pub const TAINT_UNSCHEDULABLE: &str = "node.kubernetes.io/unschedulable";
/// Taint key of a node whose network is not configured.
pub const TAINT_NETWORK_UNAVAILABLE: &str = "node.kubernetes.io/network-unavailable";

const NO_SCHEDULE: &str = "NoSchedule";
const NO_EXECUTE: &str = "NoExecute";

/// Whether a DaemonSet's pod belongs on a node.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Eligibility {
    /// A pod should be created there when the node has none.
    pub should_run: bool,
    /// A pod already there may stay.
    pub should_continue_running: bool,
}

/// Adds the tolerations the DaemonSet controller gives every daemon pod, replacing a
/// toleration of the same key, operator, value and effect: `not-ready` and `unreachable`
/// (`NoExecute`), `disk-pressure`, `memory-pressure`, `pid-pressure` and `unschedulable`
/// (`NoSchedule`), and `network-unavailable` (`NoSchedule`) for host-network pods.
pub fn add_daemon_tolerations(spec: &mut PodSpec) {
    let mut wanted = vec![
        (TAINT_NOT_READY, NO_EXECUTE),
        (TAINT_UNREACHABLE, NO_EXECUTE),
        (TAINT_DISK_PRESSURE, NO_SCHEDULE),
        (TAINT_MEMORY_PRESSURE, NO_SCHEDULE),
        (TAINT_PID_PRESSURE, NO_SCHEDULE),
        (TAINT_UNSCHEDULABLE, NO_SCHEDULE),
    ];
    if spec.host_network == Some(true) {
        wanted.push((TAINT_NETWORK_UNAVAILABLE, NO_SCHEDULE));
    }
    let tolerations = spec.tolerations.get_or_insert_with(Vec::new);
    for (key, effect) in wanted {
        let toleration = Toleration {
            key: Some(key.to_owned()),
            operator: Some("Exists".to_owned()),
            effect: Some(effect.to_owned()),
            ..Toleration::default()
        };
        let same = |t: &Toleration| {
            t.key == toleration.key
                && t.operator == toleration.operator
                && t.value.as_deref().unwrap_or_default() == ""
                && t.effect == toleration.effect
        };
        match tolerations.iter_mut().find(|t| same(t)) {
            Some(existing) => *existing = toleration,
            None => tolerations.push(toleration),
        }
    }
}

/// The DaemonSet controller's verdict for a node, judged against `spec`: the pod spec with
/// the daemon tolerations already added (see [`daemon_pod_spec`]).
pub fn node_should_run(spec: &PodSpec, node: &Node) -> Eligibility {
    node_should_run_facts(spec, &NodeFacts::new(node))
}

/// [`node_should_run`] on a node's [`NodeFacts`].
pub fn node_should_run_facts(spec: &PodSpec, facts: &NodeFacts) -> Eligibility {
    let node_name = spec.node_name.as_deref().unwrap_or_default();
    if !node_name.is_empty() && node_name != facts.name() {
        return Eligibility::default();
    }
    if !fits_node_affinity_facts(spec, facts) {
        return Eligibility::default();
    }
    let tolerations = spec.tolerations.as_deref().unwrap_or_default();
    if has_untolerated_taint(facts, tolerations, &[NO_SCHEDULE, NO_EXECUTE]) {
        let evicted = has_untolerated_taint(facts, tolerations, &[NO_EXECUTE]);
        return Eligibility { should_run: false, should_continue_running: !evicted };
    }
    Eligibility { should_run: true, should_continue_running: true }
}

/// The template's pod spec with the daemon tolerations added: what [`node_should_run`]
/// judges.
pub fn daemon_pod_spec(template: &PodTemplateSpec) -> PodSpec {
    let mut spec = template.spec.clone().unwrap_or_default();
    add_daemon_tolerations(&mut spec);
    spec
}

/// As [`pod_for_node`], bound by `spec.nodeName` instead of node affinity (upstream with
/// `--assign-pods-by-scheduler=false`): the scheduler does not place it.
pub fn pod_bound_to_node(template: &PodTemplateSpec, node_name: &str) -> Pod {
    let mut spec = daemon_pod_spec(template);
    spec.node_name = Some(node_name.to_owned());
    Pod { metadata: template.metadata.clone().unwrap_or_default(), spec: Some(spec), status: None }
}

/// The pod for `node_name` built from `template` (metadata and spec), with the daemon
/// tolerations and the node-name affinity, as the DaemonSet controller creates it. Name,
/// namespace, revision labels and owner are the caller's.
pub fn pod_for_node(template: &PodTemplateSpec, node_name: &str) -> Pod {
    let mut spec = daemon_pod_spec(template);
    spec.affinity = Some(pin_to_node(spec.affinity.take(), node_name));
    Pod { metadata: template.metadata.clone().unwrap_or_default(), spec: Some(spec), status: None }
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::api::core::v1::{
        Affinity, NodeAffinity, NodeSelector, NodeSelectorRequirement, NodeSelectorTerm, NodeSpec,
        Taint,
    };
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;

    fn node(name: &str, labels: &[(&str, &str)], taints: Vec<Taint>) -> Node {
        Node {
            metadata: ObjectMeta {
                name: Some(name.into()),
                labels: Some(labels.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect()),
                ..Default::default()
            },
            spec: Some(NodeSpec { taints: Some(taints), ..Default::default() }),
            status: None,
        }
    }

    fn taint(key: &str, value: &str, effect: &str) -> Taint {
        Taint {
            key: key.into(),
            value: Some(value.into()),
            effect: effect.into(),
            time_added: None,
        }
    }

    fn spec(extra: impl FnOnce(&mut PodSpec)) -> PodSpec {
        let mut template = PodTemplateSpec { metadata: None, spec: Some(PodSpec::default()) };
        if let Some(s) = template.spec.as_mut() {
            extra(s);
        }
        daemon_pod_spec(&template)
    }

    const RUN: Eligibility = Eligibility { should_run: true, should_continue_running: true };
    const STAY: Eligibility = Eligibility { should_run: false, should_continue_running: true };
    const NONE: Eligibility = Eligibility { should_run: false, should_continue_running: false };

    /// Rows in the spirit of upstream's `TestNodeShouldRunDaemonPod` table.
    #[test]
    fn eligibility_table() {
        let plain = spec(|_| {});
        let with_selector = spec(|s| {
            s.node_selector = Some([("disk".to_string(), "ssd".to_string())].into());
        });
        let with_node_name = spec(|s| s.node_name = Some("other".into()));
        let affinity = |op: &str, values: &[&str]| {
            spec(|s| {
                s.affinity = Some(Affinity {
                    node_affinity: Some(NodeAffinity {
                        required_during_scheduling_ignored_during_execution: Some(NodeSelector {
                            node_selector_terms: vec![NodeSelectorTerm {
                                match_expressions: Some(vec![NodeSelectorRequirement {
                                    key: "type".into(),
                                    operator: op.into(),
                                    values: Some(values.iter().map(|v| v.to_string()).collect()),
                                }]),
                                match_fields: None,
                            }],
                        }),
                        ..Default::default()
                    }),
                    ..Default::default()
                })
            })
        };
        let tolerating = spec(|s| {
            s.tolerations = Some(vec![Toleration {
                key: Some("dedicated".into()),
                operator: Some("Equal".into()),
                value: Some("infra".into()),
                effect: Some(NO_SCHEDULE.into()),
                toleration_seconds: None,
            }])
        });
        let cases: Vec<(&str, PodSpec, Node, Eligibility)> = vec![
            ("plain node", plain.clone(), node("a", &[], vec![]), RUN),
            ("selector matches", with_selector.clone(), node("a", &[("disk", "ssd")], vec![]), RUN),
            ("selector misses", with_selector.clone(), node("a", &[("disk", "hdd")], vec![]), NONE),
            ("other node name", with_node_name.clone(), node("a", &[], vec![]), NONE),
            ("own node name", with_node_name.clone(), node("other", &[], vec![]), RUN),
            ("affinity In", affinity("In", &["x"]), node("a", &[("type", "x")], vec![]), RUN),
            ("affinity In misses", affinity("In", &["x"]), node("a", &[], vec![]), NONE),
            ("affinity NotIn", affinity("NotIn", &["x"]), node("a", &[], vec![]), RUN),
            ("affinity Gt", affinity("Gt", &["3"]), node("a", &[("type", "4")], vec![]), RUN),
            ("affinity Lt", affinity("Lt", &["3"]), node("a", &[("type", "4")], vec![]), NONE),
            (
                "untolerated NoSchedule: stay",
                plain.clone(),
                node("a", &[], vec![taint("dedicated", "infra", NO_SCHEDULE)]),
                STAY,
            ),
            (
                "untolerated NoExecute: evict",
                plain.clone(),
                node("a", &[], vec![taint("dedicated", "infra", NO_EXECUTE)]),
                NONE,
            ),
            (
                "tolerated NoSchedule",
                tolerating.clone(),
                node("a", &[], vec![taint("dedicated", "infra", NO_SCHEDULE)]),
                RUN,
            ),
            (
                "PreferNoSchedule is ignored",
                plain.clone(),
                node("a", &[], vec![taint("dedicated", "infra", "PreferNoSchedule")]),
                RUN,
            ),
            (
                "unschedulable node is tolerated",
                plain.clone(),
                node("a", &[], vec![taint(TAINT_UNSCHEDULABLE, "", NO_SCHEDULE)]),
                RUN,
            ),
            (
                "not-ready node is tolerated",
                plain.clone(),
                node("a", &[], vec![taint(TAINT_NOT_READY, "", NO_EXECUTE)]),
                RUN,
            ),
            (
                "memory pressure is tolerated",
                plain.clone(),
                node("a", &[], vec![taint(TAINT_MEMORY_PRESSURE, "", NO_SCHEDULE)]),
                RUN,
            ),
            (
                "network unavailable needs host network",
                plain.clone(),
                node("a", &[], vec![taint(TAINT_NETWORK_UNAVAILABLE, "", NO_SCHEDULE)]),
                STAY,
            ),
            (
                "network unavailable with host network",
                spec(|s| s.host_network = Some(true)),
                node("a", &[], vec![taint(TAINT_NETWORK_UNAVAILABLE, "", NO_SCHEDULE)]),
                RUN,
            ),
        ];
        for (name, spec, node, want) in cases {
            assert_eq!(node_should_run(&spec, &node), want, "{name}");
        }
    }

    #[test]
    fn pinned_pods_find_their_node() {
        let template = PodTemplateSpec { metadata: None, spec: Some(PodSpec::default()) };
        let pod = pod_for_node(&template, "node-1");
        assert_eq!(target_node_name(&pod), Some("node-1"));
        let spec = pod.spec.as_ref().expect("spec");
        assert!(fits_node_affinity(spec, &node("node-1", &[], vec![])));
        assert!(!fits_node_affinity(spec, &node("node-2", &[], vec![])));
        assert_eq!(spec.tolerations.as_ref().map(Vec::len), Some(6));
        // Pinning twice replaces the term rather than adding one.
        let again = pin_to_node(spec.affinity.clone(), "node-3");
        let terms = again
            .node_affinity
            .and_then(|a| a.required_during_scheduling_ignored_during_execution)
            .map(|s| s.node_selector_terms.len());
        assert_eq!(terms, Some(1));
    }

    #[test]
    fn tolerations_are_not_duplicated() {
        let mut spec = PodSpec::default();
        add_daemon_tolerations(&mut spec);
        add_daemon_tolerations(&mut spec);
        assert_eq!(spec.tolerations.map(|t| t.len()), Some(6));
    }

    #[test]
    fn empty_required_terms_match_nothing() {
        let spec = spec(|s| {
            s.affinity = Some(Affinity {
                node_affinity: Some(NodeAffinity {
                    required_during_scheduling_ignored_during_execution: Some(NodeSelector {
                        node_selector_terms: vec![],
                    }),
                    ..Default::default()
                }),
                ..Default::default()
            })
        });
        assert_eq!(node_should_run(&spec, &node("a", &[], vec![])), NONE);
    }
}
