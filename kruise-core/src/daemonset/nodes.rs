//! Nodes as the DaemonSet planner reads them: the name, labels and taints of each node in one
//! allocation ([`NodeFacts`]), computed when the node enters a cache rather than on every
//! plan, so that judging thousands of nodes reads memory in order instead of chasing a
//! pointer per label.

use std::ops::Deref;
use std::sync::Arc;

use k8s_openapi::api::core::v1::Node;
use serde::{Deserialize, Deserializer, Serialize, Serializer};

pub use crate::node_affinity::NodeFacts;

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
