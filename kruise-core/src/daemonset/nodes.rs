//! Nodes as the DaemonSet planner reads them: the name, labels and taints of each node in one
//! allocation ([`NodeFacts`]), computed when the node enters a cache rather than on every
//! plan, so that judging thousands of nodes reads memory in order instead of chasing a
//! pointer per label.

use std::ops::Deref;
use std::sync::Arc;

use k8s_openapi::api::core::v1::Node;
use serde::{Deserialize, Deserializer, Serialize, Serializer};

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

/// A node in a [`DaemonSetSnapshot`](super::DaemonSetSnapshot), with its [`NodeFacts`].
/// Dereferences to the node; serializes as the node alone.
#[derive(Clone, Debug)]
pub struct SnapshotNode {
    node: Arc<Node>,
    facts: NodeFacts,
}

impl SnapshotNode {
    /// `node`, with its facts computed now.
    pub fn new(node: Arc<Node>) -> Self {
        let facts = NodeFacts::new(&node);
        Self { node, facts }
    }

    /// The node.
    pub fn node(&self) -> &Arc<Node> {
        &self.node
    }

    /// Its facts.
    pub fn facts(&self) -> &NodeFacts {
        &self.facts
    }
}

impl Deref for SnapshotNode {
    type Target = Node;

    fn deref(&self) -> &Node {
        &self.node
    }
}

impl From<Node> for SnapshotNode {
    fn from(node: Node) -> Self {
        Self::new(Arc::new(node))
    }
}

impl From<Arc<Node>> for SnapshotNode {
    fn from(node: Arc<Node>) -> Self {
        Self::new(node)
    }
}

impl PartialEq for SnapshotNode {
    fn eq(&self, other: &Self) -> bool {
        self.node == other.node
    }
}

impl Serialize for SnapshotNode {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        self.node.serialize(serializer)
    }
}

impl<'de> Deserialize<'de> for SnapshotNode {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        Node::deserialize(deserializer).map(Self::from)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn facts_read_back() {
        let node: Node = serde_json::from_value(serde_json::json!({
            "metadata": {"name": "n1", "labels": {"a": "1", "zone": "x"}},
            "spec": {"taints": [{"key": "k", "effect": "NoSchedule"}, {"key": "j", "value": "v", "effect": "NoExecute"}]}
        }))
        .expect("node");
        let facts = NodeFacts::new(&node);
        assert_eq!(facts.name(), "n1");
        assert_eq!(facts.labels().collect::<Vec<_>>(), vec![("a", "1"), ("zone", "x")]);
        assert_eq!(facts.label("zone"), Some("x"));
        assert_eq!(facts.label("b"), None);
        assert_eq!(
            facts.taints().collect::<Vec<_>>(),
            vec![("k", "", "NoSchedule"), ("j", "v", "NoExecute")]
        );
        let empty = NodeFacts::new(&Node::default());
        assert_eq!((empty.name(), empty.labels().count(), empty.taints().count()), ("", 0, 0));
    }
}
