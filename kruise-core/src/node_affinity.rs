//! Node affinity and tolerations, as the scheduler and kube-controller-manager judge them: what
//! a node offers ([`NodeFacts`]: its name, labels and taints in one allocation), whether a
//! toleration tolerates a taint, and whether a node selector term or a pod's required node
//! affinity admits a node. The DaemonSet planner and WorkloadSpread's subsets both read them.

use k8s_openapi::api::core::v1::{
    Affinity, Node, NodeAffinity, NodeSelector, NodeSelectorRequirement, NodeSelectorTerm, Pod,
    PodSpec, Taint, Toleration,
};

/// The field a daemon pod's node affinity pins it by.
pub const NODE_NAME_FIELD: &str = "metadata.name";

/// What eligibility reads from a node: its name, labels and taints.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NodeFacts {
    /// The name, each label's key and value, and each taint's key, value and effect,
    /// concatenated.
    text: Box<str>,
    /// End offsets in `text`: the name's, then two per label, then three per taint.
    ends: Box<[u32]>,
    /// How many labels there are.
    labels: u32,
}

impl NodeFacts {
    /// Reads the facts of `node`.
    pub fn new(node: &Node) -> Self {
        let mut text = String::new();
        let mut ends = Vec::new();
        let mut push = |text: &mut String, s: &str| {
            text.push_str(s);
            ends.push(u32::try_from(text.len()).unwrap_or(u32::MAX));
        };
        push(&mut text, node.metadata.name.as_deref().unwrap_or_default());
        let labels = node.metadata.labels.as_ref();
        for (key, value) in labels.into_iter().flatten() {
            push(&mut text, key);
            push(&mut text, value);
        }
        let taints = node.spec.as_ref().and_then(|s| s.taints.as_deref()).unwrap_or_default();
        for taint in taints {
            push(&mut text, &taint.key);
            push(&mut text, taint.value.as_deref().unwrap_or_default());
            push(&mut text, &taint.effect);
        }
        Self {
            text: text.into_boxed_str(),
            ends: ends.into_boxed_slice(),
            labels: labels.map_or(0, |l| u32::try_from(l.len()).unwrap_or(u32::MAX)),
        }
    }

    fn part(&self, i: usize) -> &str {
        let start = match i {
            0 => 0,
            _ => self.ends.get(i - 1).map_or(0, |&e| e as usize),
        };
        let end = self.ends.get(i).map_or(0, |&e| e as usize);
        self.text.get(start..end).unwrap_or_default()
    }

    /// `metadata.name`.
    pub fn name(&self) -> &str {
        self.part(0)
    }

    /// The labels, in key order.
    pub fn labels(&self) -> impl Iterator<Item = (&str, &str)> {
        (0..self.labels as usize).map(|l| (self.part(1 + 2 * l), self.part(2 + 2 * l)))
    }

    /// The value of the label `key`.
    pub fn label(&self, key: &str) -> Option<&str> {
        self.labels().find(|(k, _)| *k == key).map(|(_, v)| v)
    }

    /// The taints: key, value and effect.
    pub fn taints(&self) -> impl Iterator<Item = (&str, &str, &str)> {
        let first = 1 + 2 * self.labels as usize;
        let count = self.ends.len().saturating_sub(first) / 3;
        (0..count).map(move |t| {
            let i = first + 3 * t;
            (self.part(i), self.part(i + 1), self.part(i + 2))
        })
    }
}

/// Whether `toleration` tolerates `taint` (Kubernetes' `ToleratesTaint`): same effect unless
/// the toleration names none, same key unless it names none, and the value equal with
/// `Equal` (the default operator) or anything with `Exists`.
pub fn tolerates(toleration: &Toleration, taint: &Taint) -> bool {
    tolerates_parts(
        toleration,
        &taint.key,
        taint.value.as_deref().unwrap_or_default(),
        &taint.effect,
    )
}

/// [`tolerates`] on a taint's key, value and effect.
pub fn tolerates_parts(toleration: &Toleration, key: &str, value: &str, effect: &str) -> bool {
    let wanted_effect = toleration.effect.as_deref().unwrap_or_default();
    if !wanted_effect.is_empty() && wanted_effect != effect {
        return false;
    }
    let wanted_key = toleration.key.as_deref().unwrap_or_default();
    if !wanted_key.is_empty() && wanted_key != key {
        return false;
    }
    match toleration.operator.as_deref().unwrap_or_default() {
        "" | "Equal" => toleration.value.as_deref().unwrap_or_default() == value,
        "Exists" => true,
        _ => false,
    }
}

/// The first taint with one of `effects` that no toleration tolerates.
pub fn untolerated_taint<'t>(
    taints: &'t [Taint],
    tolerations: &[Toleration],
    effects: &[&str],
) -> Option<&'t Taint> {
    taints
        .iter()
        .filter(|t| effects.contains(&t.effect.as_str()))
        .find(|taint| !tolerations.iter().any(|t| tolerates(t, taint)))
}

/// Whether the node has a taint with one of `effects` that no toleration tolerates.
pub fn has_untolerated_taint(
    facts: &NodeFacts,
    tolerations: &[Toleration],
    effects: &[&str],
) -> bool {
    facts.taints().filter(|(_, _, effect)| effects.contains(effect)).any(|(key, value, effect)| {
        !tolerations.iter().any(|t| tolerates_parts(t, key, value, effect))
    })
}

fn requirement_matches_labels(req: &NodeSelectorRequirement, facts: &NodeFacts) -> bool {
    let values = req.values.as_deref().unwrap_or_default();
    let value = facts.label(&req.key);
    match req.operator.as_str() {
        "In" => value.is_some_and(|v| values.iter().any(|w| w == v)),
        "NotIn" => value.is_none_or(|v| !values.iter().any(|w| w == v)),
        "Exists" => value.is_some(),
        "DoesNotExist" => value.is_none(),
        op @ ("Gt" | "Lt") => {
            let [bound] = values else { return false };
            let (Some(v), Ok(bound)) = (value, bound.parse::<i64>()) else { return false };
            let Ok(v) = v.parse::<i64>() else { return false };
            if op == "Gt" { v > bound } else { v < bound }
        }
        _ => false,
    }
}

fn requirement_matches_fields(req: &NodeSelectorRequirement, node_name: &str) -> bool {
    if req.key != NODE_NAME_FIELD {
        return false;
    }
    let values = req.values.as_deref().unwrap_or_default();
    match req.operator.as_str() {
        "In" => values.iter().any(|v| v == node_name),
        "NotIn" => !values.iter().any(|v| v == node_name),
        _ => false,
    }
}

/// Whether a node selector term matches: all its expressions on the node's labels and all
/// its field requirements (only `metadata.name`, with `In` and `NotIn`). A term with neither
/// matches nothing.
pub fn term_matches(term: &NodeSelectorTerm, node: &Node) -> bool {
    term_matches_facts(term, &NodeFacts::new(node))
}

/// [`term_matches`] on a node's [`NodeFacts`].
pub fn term_matches_facts(term: &NodeSelectorTerm, facts: &NodeFacts) -> bool {
    let expressions = term.match_expressions.as_deref().unwrap_or_default();
    let fields = term.match_fields.as_deref().unwrap_or_default();
    if expressions.is_empty() && fields.is_empty() {
        return false;
    }
    expressions.iter().all(|r| requirement_matches_labels(r, facts))
        && fields.iter().all(|r| requirement_matches_fields(r, facts.name()))
}

/// Whether the pod's `nodeSelector` and required node affinity (any of its terms; none at
/// all matches nothing) admit the node.
pub fn fits_node_affinity(spec: &PodSpec, node: &Node) -> bool {
    fits_node_affinity_facts(spec, &NodeFacts::new(node))
}

/// [`fits_node_affinity`] on a node's [`NodeFacts`].
pub fn fits_node_affinity_facts(spec: &PodSpec, facts: &NodeFacts) -> bool {
    if let Some(selector) = &spec.node_selector
        && !selector.iter().all(|(k, v)| facts.label(k) == Some(v.as_str()))
    {
        return false;
    }
    let required = spec
        .affinity
        .as_ref()
        .and_then(|a| a.node_affinity.as_ref())
        .and_then(|a| a.required_during_scheduling_ignored_during_execution.as_ref());
    match required {
        None => true,
        Some(selector) => selector.node_selector_terms.iter().any(|t| term_matches_facts(t, facts)),
    }
}

/// Pins a pod to `node_name` as the DaemonSet and BroadcastJob controllers do: the required node affinity
/// becomes one term matching the field `metadata.name`; preferred terms and other affinities
/// are kept.
pub fn pin_to_node(affinity: Option<Affinity>, node_name: &str) -> Affinity {
    let term = NodeSelectorTerm {
        match_fields: Some(vec![NodeSelectorRequirement {
            key: NODE_NAME_FIELD.to_owned(),
            operator: "In".to_owned(),
            values: Some(vec![node_name.to_owned()]),
        }]),
        match_expressions: None,
    };
    let mut affinity = affinity.unwrap_or_default();
    let node_affinity = affinity.node_affinity.get_or_insert_with(NodeAffinity::default);
    node_affinity.required_during_scheduling_ignored_during_execution =
        Some(NodeSelector { node_selector_terms: vec![term] });
    affinity
}

/// The node a pod is pinned to: `spec.nodeName`, or else the single `metadata.name`
/// value its required node affinity pins it to (upstream's `GetTargetNodeName`).
pub fn target_node_name(pod: &Pod) -> Option<&str> {
    let spec = pod.spec.as_ref()?;
    if let Some(name) = spec.node_name.as_deref().filter(|n| !n.is_empty()) {
        return Some(name);
    }
    let terms = &spec
        .affinity
        .as_ref()?
        .node_affinity
        .as_ref()?
        .required_during_scheduling_ignored_during_execution
        .as_ref()?
        .node_selector_terms;
    terms.iter().flat_map(|t| t.match_fields.iter().flatten()).find_map(|r| {
        match (r.key.as_str(), r.operator.as_str(), r.values.as_deref()) {
            (NODE_NAME_FIELD, "In", Some([value])) => Some(value.as_str()),
            _ => None,
        }
    })
}
