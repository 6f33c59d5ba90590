//! The scheduler's decision, as a pure function: which node a pending pod goes to, or why
//! none fits (with the real scheduler's "0/3 nodes are available: ..." message).
//!
//! Filters, in the upstream plugin order, stopping at the first that rejects a node:
//! NodeUnschedulable, NodeName, TaintToleration, NodeAffinity (nodeSelector and required
//! affinity), NodeResourcesFit, PodTopologySpread (`DoNotSchedule`). Scores: preferred node
//! affinity, `PreferNoSchedule` taints, `ScheduleAnyway` spread and least-allocated resources
//! (a container without cpu or memory requests counts 100m and 200 MiB there, as upstream's
//! non-zero requests do, and the finer free share breaks the coarse score's ties, so such pods
//! spread over equal nodes). Remaining ties go to the node whose name sorts first, so the same
//! inputs always give the same node.

use k8s_openapi::api::core::v1::{
    Node, NodeSelectorRequirement, NodeSelectorTerm, Pod, Taint, Toleration,
    TopologySpreadConstraint,
};
use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector;
use std::collections::BTreeMap;

/// Resource amounts in thousandths of the base unit (millicores, millibytes).
pub type Resources = BTreeMap<String, i128>;

/// A pod already placed (or assumed) on a node, as the scheduler counts it.
#[derive(Clone, Debug)]
pub struct Placed {
    /// The node.
    pub node: String,
    /// The pod's namespace.
    pub namespace: String,
    /// The pod's labels.
    pub labels: BTreeMap<String, String>,
    /// The pod's effective requests.
    pub requests: Resources,
    /// The requests scoring counts: cpu and memory never zero (see [`scoring_requests`]).
    pub scoring: Resources,
    /// Whether the pod is terminating (not counted for spreading).
    pub terminating: bool,
}

impl Placed {
    /// The placement of `pod` on `node`.
    pub fn of(pod: &Pod, node: &str) -> Placed {
        let requests = pod_requests(pod);
        Placed {
            node: node.to_string(),
            namespace: pod.metadata.namespace.clone().unwrap_or_default(),
            labels: pod.metadata.labels.clone().unwrap_or_default(),
            scoring: with_scoring_defaults(pod, requests.clone()),
            requests,
            terminating: pod.metadata.deletion_timestamp.is_some(),
        }
    }
}

/// Why a pod fits no node.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Unschedulable {
    /// The message of the `PodScheduled=False` condition.
    pub message: String,
}

/// Parses a quantity into thousandths of its base unit (`100m` → 100, `1Gi` → 1073741824000).
/// Returns `None` for text that is no quantity.
pub fn parse_quantity(q: &str) -> Option<i128> {
    let q = q.trim();
    let chars: Vec<char> = q.chars().collect();
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        let next_numeric =
            chars.get(i + 1).is_some_and(|n| n.is_ascii_digit() || *n == '-' || *n == '+');
        if c.is_ascii_digit() || c == '.' || (i == 0 && (c == '+' || c == '-')) {
            i += 1;
        } else if c == 'e' && i > 0 && next_numeric {
            i += 2;
        } else {
            break;
        }
    }
    let split = chars[..i.min(chars.len())].iter().map(|c| c.len_utf8()).sum::<usize>();
    let (num, suffix) = q.split_at(split);
    let n: f64 = num.parse().ok()?;
    let mult: f64 = match suffix {
        "" => 1.0,
        "n" => 1e-9,
        "u" => 1e-6,
        "m" => 1e-3,
        "k" => 1e3,
        "M" => 1e6,
        "G" => 1e9,
        "T" => 1e12,
        "P" => 1e15,
        "E" => 1e18,
        "Ki" => 1024.0,
        "Mi" => 1024.0_f64.powi(2),
        "Gi" => 1024.0_f64.powi(3),
        "Ti" => 1024.0_f64.powi(4),
        "Pi" => 1024.0_f64.powi(5),
        "Ei" => 1024.0_f64.powi(6),
        _ => return None,
    };
    let milli = (n * mult * 1000.0).ceil();
    if !milli.is_finite() {
        return None;
    }
    Some(milli as i128)
}

fn add_quantities(into: &mut Resources, from: Option<&BTreeMap<String, Quantity>>) {
    for (k, v) in from.into_iter().flatten() {
        if let Some(m) = parse_quantity(&v.0) {
            *into.entry(k.clone()).or_default() += m;
        }
    }
}

fn container_requests(c: &k8s_openapi::api::core::v1::Container) -> Resources {
    let mut r = Resources::new();
    let res = c.resources.as_ref();
    add_quantities(&mut r, res.and_then(|r| r.requests.as_ref()));
    // A limit without a request is the request (the API server defaults it so).
    let mut limits = Resources::new();
    add_quantities(&mut limits, res.and_then(|r| r.limits.as_ref()));
    for (k, v) in limits {
        r.entry(k).or_insert(v);
    }
    r
}

/// A pod's effective requests: the larger of its containers plus sidecars and each init
/// container (plus the sidecars started before it), plus the pod overhead.
///
/// For a pod being resized in place, a container counts with the largest of its spec, its
/// applied (`status.containerStatuses[].resources`) and its allocated requests — but not its
/// spec while the resize is `Infeasible` — as the real scheduler counts it.
pub fn pod_requests(pod: &Pod) -> Resources {
    requests(pod, true)
}

/// A pod's effective requests from its spec alone (what a resize asks for).
pub fn spec_requests(pod: &Pod) -> Resources {
    requests(pod, false)
}

fn status_requests(pod: &Pod, c: &k8s_openapi::api::core::v1::Container) -> Option<Resources> {
    let st = pod.status.as_ref()?;
    let cs = st.container_statuses.iter().flatten().find(|s| s.name == c.name)?;
    let applied = cs.resources.as_ref()?;
    let infeasible = st
        .conditions
        .iter()
        .flatten()
        .any(|c| c.type_ == "PodResizePending" && c.reason.as_deref() == Some("Infeasible"));
    let mut r = if infeasible { Resources::new() } else { container_requests(c) };
    let mut other = Resources::new();
    add_quantities(&mut other, applied.requests.as_ref());
    let mut allocated = Resources::new();
    add_quantities(&mut allocated, cs.allocated_resources.as_ref());
    for (k, v) in other.into_iter().chain(allocated) {
        let e = r.entry(k).or_default();
        *e = (*e).max(v);
    }
    Some(r)
}

/// The scheduler's default cpu request for scoring a container that asks for none (100m).
const DEFAULT_MILLI_CPU: i128 = 100;
/// The scheduler's default memory request for scoring a container that asks for none
/// (200 MiB), in thousandths of a byte.
const DEFAULT_MEMORY: i128 = 200 * 1024 * 1024 * 1000;

/// The requests the scoring plugins count: as [`pod_requests`], except that a container
/// without a cpu or memory request counts 100m cpu and 200 MiB memory, as kube-scheduler's
/// non-zero requests do, so that pods asking for nothing still spread over the nodes.
pub fn scoring_requests(pod: &Pod) -> Resources {
    with_scoring_defaults(pod, pod_requests(pod))
}

/// `requests` (the pod's [`pod_requests`]) with the scoring defaults added.
fn with_scoring_defaults(pod: &Pod, mut total: Resources) -> Resources {
    let Some(spec) = pod.spec.as_ref() else { return total };
    for c in &spec.containers {
        let asked = container_requests(c);
        if !asked.contains_key("cpu") {
            *total.entry("cpu".into()).or_default() += DEFAULT_MILLI_CPU;
        }
        if !asked.contains_key("memory") {
            *total.entry("memory".into()).or_default() += DEFAULT_MEMORY;
        }
    }
    total
}

fn requests(pod: &Pod, use_status: bool) -> Resources {
    let Some(spec) = pod.spec.as_ref() else { return Resources::new() };
    let mut total = Resources::new();
    for c in &spec.containers {
        let r = use_status
            .then(|| status_requests(pod, c))
            .flatten()
            .unwrap_or_else(|| container_requests(c));
        for (k, v) in r {
            *total.entry(k).or_default() += v;
        }
    }
    let mut sidecars = Resources::new();
    for c in spec.init_containers.iter().flatten() {
        let r = container_requests(c);
        if c.restart_policy.as_deref() == Some("Always") {
            for (k, v) in r {
                *sidecars.entry(k.clone()).or_default() += v;
                *total.entry(k).or_default() += v;
            }
        } else {
            for (k, v) in r {
                let need = v + sidecars.get(&k).copied().unwrap_or(0);
                let e = total.entry(k).or_default();
                *e = (*e).max(need);
            }
        }
    }
    add_quantities(&mut total, spec.overhead.as_ref());
    total
}

fn node_labels(node: &Node) -> BTreeMap<String, String> {
    node.metadata.labels.clone().unwrap_or_default()
}

fn node_name(node: &Node) -> &str {
    node.metadata.name.as_deref().unwrap_or_default()
}

/// Whether a toleration tolerates a taint.
pub fn tolerates(t: &Toleration, taint: &Taint) -> bool {
    if let Some(e) = t.effect.as_deref().filter(|e| !e.is_empty())
        && e != taint.effect
    {
        return false;
    }
    let key = t.key.as_deref().unwrap_or_default();
    match t.operator.as_deref().unwrap_or("Equal") {
        "Exists" => key.is_empty() || key == taint.key,
        "Equal" => {
            key == taint.key
                && t.value.as_deref().unwrap_or_default()
                    == taint.value.as_deref().unwrap_or_default()
        }
        _ => false,
    }
}

fn tolerated(pod: &Pod, taint: &Taint) -> bool {
    pod.spec
        .as_ref()
        .and_then(|s| s.tolerations.as_ref())
        .is_some_and(|ts| ts.iter().any(|t| tolerates(t, taint)))
}

fn requirement_matches(r: &NodeSelectorRequirement, value: Option<&str>) -> bool {
    let values = r.values.as_deref().unwrap_or_default();
    match r.operator.as_str() {
        "In" => value.is_some_and(|v| values.iter().any(|x| x == v)),
        "NotIn" => value.is_none_or(|v| !values.iter().any(|x| x == v)),
        "Exists" => value.is_some(),
        "DoesNotExist" => value.is_none(),
        "Gt" | "Lt" => {
            let (Some(v), Some(bound)) = (
                value.and_then(|v| v.parse::<i64>().ok()),
                values.first().and_then(|b| b.parse::<i64>().ok()),
            ) else {
                return false;
            };
            if r.operator == "Gt" { v > bound } else { v < bound }
        }
        _ => false,
    }
}

/// Whether a node selector term matches a node (an empty term matches nothing).
pub fn term_matches(term: &NodeSelectorTerm, node: &Node) -> bool {
    let exprs = term.match_expressions.as_deref().unwrap_or_default();
    let fields = term.match_fields.as_deref().unwrap_or_default();
    if exprs.is_empty() && fields.is_empty() {
        return false;
    }
    let labels = node_labels(node);
    exprs.iter().all(|r| requirement_matches(r, labels.get(&r.key).map(String::as_str)))
        && fields
            .iter()
            .all(|r| r.key == "metadata.name" && requirement_matches(r, Some(node_name(node))))
}

/// Whether the pod's nodeSelector and required node affinity admit the node.
pub fn affinity_matches(pod: &Pod, node: &Node) -> bool {
    let Some(spec) = pod.spec.as_ref() else { return true };
    let labels = node_labels(node);
    if let Some(sel) = &spec.node_selector
        && !sel.iter().all(|(k, v)| labels.get(k) == Some(v))
    {
        return false;
    }
    let required = spec
        .affinity
        .as_ref()
        .and_then(|a| a.node_affinity.as_ref())
        .and_then(|a| a.required_during_scheduling_ignored_during_execution.as_ref());
    match required {
        Some(r) => r.node_selector_terms.iter().any(|t| term_matches(t, node)),
        None => true,
    }
}

/// Whether a label selector matches labels (a missing selector matches nothing).
pub fn selector_matches(sel: &LabelSelector, labels: &BTreeMap<String, String>) -> bool {
    if let Some(ml) = &sel.match_labels
        && !ml.iter().all(|(k, v)| labels.get(k) == Some(v))
    {
        return false;
    }
    sel.match_expressions.iter().flatten().all(|e| {
        let value = labels.get(&e.key);
        let values = e.values.as_deref().unwrap_or_default();
        match e.operator.as_str() {
            "In" => value.is_some_and(|v| values.contains(v)),
            "NotIn" => value.is_none_or(|v| !values.contains(v)),
            "Exists" => value.is_some(),
            "DoesNotExist" => value.is_none(),
            _ => false,
        }
    })
}

fn allocatable(node: &Node) -> Resources {
    let mut r = Resources::new();
    let st = node.status.as_ref();
    add_quantities(&mut r, st.and_then(|s| s.allocatable.as_ref().or(s.capacity.as_ref())));
    r
}

/// The scheduler's view of the cluster for one round.
pub struct View<'a> {
    nodes: Vec<&'a Node>,
    placed: Vec<Placed>,
    used: BTreeMap<String, (Resources, usize)>,
    /// Per node, the placed pods' [`Placed::scoring`] requests.
    scored: BTreeMap<String, Resources>,
}

impl<'a> View<'a> {
    /// A view of `nodes` holding `placed` pods.
    pub fn new(nodes: impl IntoIterator<Item = &'a Node>, placed: Vec<Placed>) -> View<'a> {
        let mut nodes: Vec<&Node> = nodes.into_iter().collect();
        nodes.sort_by(|a, b| node_name(a).cmp(node_name(b)));
        let mut v =
            View { nodes, placed: Vec::new(), used: BTreeMap::new(), scored: BTreeMap::new() };
        for p in placed {
            v.assume(p);
        }
        v
    }

    /// Counts a pod as placed (after binding it, before the watch shows it).
    pub fn assume(&mut self, p: Placed) {
        let e = self.used.entry(p.node.clone()).or_default();
        for (k, v) in &p.requests {
            *e.0.entry(k.clone()).or_default() += v;
        }
        e.1 += 1;
        let scored = self.scored.entry(p.node.clone()).or_default();
        for (k, v) in &p.scoring {
            *scored.entry(k.clone()).or_default() += v;
        }
        self.placed.push(p);
    }

    /// Picks a node for `pod`, or says why none fits.
    pub fn schedule(&self, pod: &Pod) -> Result<String, Unschedulable> {
        let n = self.nodes.len();
        if n == 0 {
            return Err(Unschedulable { message: "no nodes available to schedule pods".into() });
        }
        let spread = self.spread_state(pod, "DoNotSchedule");
        let requests = pod_requests(pod);
        let mut reasons: BTreeMap<String, usize> = BTreeMap::new();
        let mut resource_failures = 0;
        let mut feasible = Vec::new();
        for node in &self.nodes {
            match self.filter(pod, &requests, node, &spread) {
                Ok(()) => feasible.push(*node),
                Err((rs, resources)) => {
                    if resources {
                        resource_failures += 1;
                    }
                    for r in rs {
                        *reasons.entry(r).or_default() += 1;
                    }
                }
            }
        }
        if feasible.is_empty() {
            let mut parts: Vec<String> = reasons.iter().map(|(r, c)| format!("{c} {r}")).collect();
            parts.sort();
            let mut pre = Vec::new();
            if resource_failures > 0 {
                pre.push(format!(
                    "{resource_failures} No preemption victims found for incoming pod"
                ));
            }
            if n > resource_failures {
                pre.push(format!(
                    "{} Preemption is not helpful for scheduling",
                    n - resource_failures
                ));
            }
            pre.sort();
            return Err(Unschedulable {
                message: format!(
                    "0/{n} nodes are available: {}. preemption: 0/{n} nodes are available: {}.",
                    parts.join(", "),
                    pre.join(", ")
                ),
            });
        }
        let soft = self.spread_state(pod, "ScheduleAnyway");
        let scoring = with_scoring_defaults(pod, requests);
        let scored: Vec<((i64, i128), &Node)> =
            feasible.iter().map(|n| (self.score(pod, &scoring, n, &soft), *n)).collect();
        let best = scored.iter().map(|(s, _)| *s).max().unwrap_or_default();
        scored
            .iter()
            .find(|(s, _)| *s == best)
            .map(|(_, n)| node_name(n).to_string())
            .ok_or_else(|| Unschedulable { message: "no feasible node".into() })
    }

    /// `Err((reasons, failed on resources))`.
    /// `requests` is the pod's [`pod_requests`].
    fn filter(
        &self,
        pod: &Pod,
        requests: &Resources,
        node: &Node,
        spread: &[Spread],
    ) -> Result<(), (Vec<String>, bool)> {
        let one = |s: &str| Err((vec![s.to_string()], false));
        let spec = pod.spec.as_ref();
        if node.spec.as_ref().and_then(|s| s.unschedulable) == Some(true) {
            let t = Taint {
                key: "node.kubernetes.io/unschedulable".into(),
                effect: "NoSchedule".into(),
                ..Default::default()
            };
            if !tolerated(pod, &t) {
                return one("node(s) were unschedulable");
            }
        }
        if let Some(want) = spec.and_then(|s| s.node_name.as_deref()).filter(|n| !n.is_empty())
            && want != node_name(node)
        {
            return one("node(s) didn't match the requested node name");
        }
        for taint in node.spec.as_ref().and_then(|s| s.taints.as_ref()).into_iter().flatten() {
            if (taint.effect == "NoSchedule" || taint.effect == "NoExecute")
                && !tolerated(pod, taint)
            {
                return one(&format!(
                    "node(s) had untolerated taint {{{}: {}}}",
                    taint.key,
                    taint.value.as_deref().unwrap_or_default()
                ));
            }
        }
        if !affinity_matches(pod, node) {
            return one("node(s) didn't match Pod's node affinity/selector");
        }
        let alloc = allocatable(node);
        let (used, count) = self.used.get(node_name(node)).cloned().unwrap_or_default();
        let mut insufficient = Vec::new();
        let max_pods = alloc.get("pods").copied().unwrap_or(110_000) / 1000;
        if count as i128 + 1 > max_pods {
            insufficient.push("Too many pods".to_string());
        }
        for (k, &want) in requests {
            if want <= 0 {
                continue;
            }
            let have = alloc.get(k).copied().unwrap_or(0) - used.get(k).copied().unwrap_or(0);
            if want > have {
                insufficient.push(format!("Insufficient {k}"));
            }
        }
        if !insufficient.is_empty() {
            return Err((insufficient, true));
        }
        let labels = node_labels(node);
        for s in spread {
            let Some(domain) = labels.get(&s.key) else {
                return one(
                    "node(s) didn't match pod topology spread constraints (missing required label)",
                );
            };
            let count = s.counts.get(domain).copied().unwrap_or(0);
            if count + s.self_match - s.min() > s.max_skew {
                return one("node(s) didn't match pod topology spread constraints");
            }
        }
        Ok(())
    }

    /// The node's score, and the free share of its cpu and memory in millionths to break ties
    /// the coarse score leaves (kube-scheduler breaks them at random, which spreads small
    /// pods; this spreads them too, deterministically).
    /// `req` is the pod's [`scoring_requests`].
    fn score(&self, pod: &Pod, req: &Resources, node: &Node, soft: &[Spread]) -> (i64, i128) {
        let spec = pod.spec.as_ref();
        let mut score = 0i64;
        let preferred = spec
            .and_then(|s| s.affinity.as_ref())
            .and_then(|a| a.node_affinity.as_ref())
            .and_then(|a| a.preferred_during_scheduling_ignored_during_execution.as_ref());
        for p in preferred.into_iter().flatten() {
            if term_matches(&p.preference, node) {
                score += 100 * i64::from(p.weight);
            }
        }
        for taint in node.spec.as_ref().and_then(|s| s.taints.as_ref()).into_iter().flatten() {
            if taint.effect == "PreferNoSchedule" && !tolerated(pod, taint) {
                score -= 1_000;
            }
        }
        let labels = node_labels(node);
        for s in soft {
            let count = labels.get(&s.key).and_then(|d| s.counts.get(d)).copied().unwrap_or(0);
            score -= 1_000 * count;
        }
        // Least allocated: the mean free fraction of cpu and memory, 0..=100, counting
        // requests as kube-scheduler's scoring does (never zero).
        let alloc = allocatable(node);
        let count = self.used.get(node_name(node)).map_or(0, |(_, count)| *count);
        let used = self.scored.get(node_name(node)).cloned().unwrap_or_default();
        let mut free = 0i64;
        let mut fine_free = 0i128;
        for k in ["cpu", "memory"] {
            let cap = alloc.get(k).copied().unwrap_or(0);
            if cap > 0 {
                let u = used.get(k).copied().unwrap_or(0) + req.get(k).copied().unwrap_or(0);
                free += (((cap - u).max(0) * 50) / cap) as i64;
                fine_free += ((cap - u).max(0) * 1_000_000) / cap;
            }
        }
        score += free;
        score -= count as i64 / 1000;
        (score, fine_free)
    }

    fn spread_state(&self, pod: &Pod, when: &str) -> Vec<Spread> {
        let Some(spec) = pod.spec.as_ref() else { return Vec::new() };
        let ns = pod.metadata.namespace.clone().unwrap_or_default();
        let own = pod.metadata.labels.clone().unwrap_or_default();
        let constraints: Vec<&TopologySpreadConstraint> = spec
            .topology_spread_constraints
            .iter()
            .flatten()
            .filter(|c| c.when_unsatisfiable == when)
            .collect();
        if constraints.is_empty() {
            return Vec::new();
        }
        let keys: Vec<&str> = constraints.iter().map(|c| c.topology_key.as_str()).collect();
        // Nodes that count: those the pod's affinity admits and that carry every key.
        let eligible: BTreeMap<&str, BTreeMap<String, String>> = self
            .nodes
            .iter()
            .filter(|n| affinity_matches(pod, n))
            .map(|n| (node_name(n), node_labels(n)))
            .filter(|(_, l)| keys.iter().all(|k| l.contains_key(*k)))
            .collect();
        constraints
            .into_iter()
            .map(|c| {
                let mut sel = c.label_selector.clone().unwrap_or_default();
                for k in c.match_label_keys.iter().flatten() {
                    if let Some(v) = own.get(k) {
                        sel.match_labels.get_or_insert_default().insert(k.clone(), v.clone());
                    }
                }
                let has_selector = c.label_selector.is_some();
                let mut counts: BTreeMap<String, i64> = BTreeMap::new();
                for labels in eligible.values() {
                    if let Some(d) = labels.get(&c.topology_key) {
                        counts.entry(d.clone()).or_default();
                    }
                }
                for p in &self.placed {
                    if p.terminating
                        || p.namespace != ns
                        || !has_selector
                        || !selector_matches(&sel, &p.labels)
                    {
                        continue;
                    }
                    if let Some(d) =
                        eligible.get(p.node.as_str()).and_then(|l| l.get(&c.topology_key))
                    {
                        *counts.entry(d.clone()).or_default() += 1;
                    }
                }
                let too_few = c.min_domains.is_some_and(|m| (counts.len() as i64) < i64::from(m));
                Spread {
                    key: c.topology_key.clone(),
                    max_skew: i64::from(c.max_skew),
                    self_match: i64::from(has_selector && selector_matches(&sel, &own)),
                    counts,
                    zero_min: too_few,
                }
            })
            .collect()
    }
}

struct Spread {
    key: String,
    max_skew: i64,
    self_match: i64,
    counts: BTreeMap<String, i64>,
    zero_min: bool,
}

impl Spread {
    fn min(&self) -> i64 {
        if self.zero_min {
            return 0;
        }
        self.counts.values().copied().min().unwrap_or(0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn node(name: &str, zone: &str, extra: serde_json::Value) -> Node {
        let mut v = json!({
            "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name, "topology.kubernetes.io/zone": zone}},
            "spec": {},
            "status": {"allocatable": {"cpu": "4", "memory": "8Gi", "pods": "110"}}
        });
        if let (Some(o), Some(e)) = (v.as_object_mut(), extra.as_object()) {
            for (k, x) in e {
                o.insert(k.clone(), x.clone());
            }
        }
        serde_json::from_value(v).expect("node")
    }

    fn pod(spec: serde_json::Value) -> Pod {
        let mut s = json!({"containers": [{"name": "c", "image": "nginx"}]});
        if let (Some(o), Some(e)) = (s.as_object_mut(), spec.as_object()) {
            for (k, x) in e {
                o.insert(k.clone(), x.clone());
            }
        }
        serde_json::from_value(json!({"metadata": {"name": "p", "namespace": "default", "labels": {"app": "a"}}, "spec": s}))
            .expect("pod")
    }

    #[test]
    fn pods_without_requests_spread_over_equal_nodes() {
        // Small nodes, and nodes so large that 100m moves the coarse score by nothing.
        let big =
            json!({"status": {"allocatable": {"cpu": "32", "memory": "256Gi", "pods": "110"}}});
        for extra in [json!({}), big] {
            let nodes = ["a", "b", "c"].map(|n| node(n, "z1", extra.clone()));
            let mut view = View::new(nodes.iter(), Vec::new());
            let mut per_node: BTreeMap<String, usize> = BTreeMap::new();
            for _ in 0..6 {
                let p = pod(json!({}));
                let chosen = view.schedule(&p).expect("fits");
                *per_node.entry(chosen.clone()).or_default() += 1;
                view.assume(Placed::of(&p, &chosen));
            }
            assert_eq!(per_node.values().copied().collect::<Vec<_>>(), vec![2, 2, 2], "{extra}");
        }
        // Filtering still counts only real requests: a pod asking for nothing fits anywhere.
        assert!(pod_requests(&pod(json!({}))).is_empty());
        assert_eq!(scoring_requests(&pod(json!({})))["cpu"], 100);
    }

    #[test]
    fn quantities() {
        assert_eq!(parse_quantity("100m"), Some(100));
        assert_eq!(parse_quantity("2"), Some(2000));
        assert_eq!(parse_quantity("1Gi"), Some(1024 * 1024 * 1024 * 1000));
        assert_eq!(parse_quantity("1e3"), Some(1_000_000));
        assert_eq!(parse_quantity("0.5"), Some(500));
        assert_eq!(parse_quantity("12x"), None);
        assert_eq!(parse_quantity(""), None);
    }

    #[test]
    fn taints_and_messages() {
        let nodes = [
            node(
                "a",
                "z1",
                json!({"spec": {"taints": [{"key": "dedicated", "value": "gpu", "effect": "NoSchedule"}]}}),
            ),
            node("b", "z1", json!({"spec": {"unschedulable": true}})),
            node("c", "z2", json!({})),
        ];
        let big = pod(
            json!({"containers": [{"name": "c", "image": "x", "resources": {"requests": {"cpu": "5"}}}]}),
        );
        let v = View::new(&nodes, vec![]);
        let err = v.schedule(&big).expect_err("too big");
        assert_eq!(
            err.message,
            "0/3 nodes are available: 1 Insufficient cpu, 1 node(s) had untolerated taint {dedicated: gpu}, 1 node(s) were unschedulable. preemption: 0/3 nodes are available: 1 No preemption victims found for incoming pod, 2 Preemption is not helpful for scheduling."
        );
        assert_eq!(v.schedule(&pod(json!({}))).expect("fits"), "c");
        let tol = pod(
            json!({"nodeSelector": {"topology.kubernetes.io/zone": "z1"}, "tolerations": [{"key": "dedicated", "operator": "Exists"}]}),
        );
        assert_eq!(v.schedule(&tol).expect("tolerated"), "a");
    }

    #[test]
    fn spread_by_zone() {
        let nodes =
            [node("a", "z1", json!({})), node("b", "z1", json!({})), node("c", "z2", json!({}))];
        let p = pod(
            json!({"topologySpreadConstraints": [{"maxSkew": 1, "topologyKey": "topology.kubernetes.io/zone", "whenUnsatisfiable": "DoNotSchedule", "labelSelector": {"matchLabels": {"app": "a"}}}]}),
        );
        let mut v = View::new(&nodes, vec![]);
        let mut zones = BTreeMap::<String, i32>::new();
        for _ in 0..6 {
            let n = v.schedule(&p).expect("fits");
            let z = if n == "c" { "z2" } else { "z1" };
            *zones.entry(z.into()).or_default() += 1;
            v.assume(Placed::of(&p, &n));
        }
        assert_eq!(zones.get("z1"), Some(&3));
        assert_eq!(zones.get("z2"), Some(&3));
    }
}
