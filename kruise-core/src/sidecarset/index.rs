//! [`SidecarSetIndex`]: the SidecarSets that may select a pod, without matching every
//! SidecarSet in the cluster against it.
//!
//! Each SidecarSet is filed under a scope and, when its pod selector has `matchLabels`, under
//! one of those labels:
//! - the scope is the namespace its `namespaceSelector` pins by the
//!   `kubernetes.io/metadata.name` label (in `matchLabels`, or an `In` expression listing
//!   several names), else the whole cluster;
//! - the label is the first `matchLabels` pair (in key order): a pod without that exact label
//!   cannot be selected. A selector without `matchLabels` goes to the scope's scan list.
//!
//! [`SidecarSetIndex::candidates`] unions, for the pod's namespace and the cluster scope, the
//! entries under the pod's labels and the scan lists; [`SidecarSetIndex::matching`] then
//! matches those candidates exactly, which gives the same answer as matching every SidecarSet.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use kruise_api::apps::v1beta1::SidecarSet;
use kruise_api::well_known::kubernetes::labels::NAMESPACE_METADATA_NAME;

use super::matching::ParsedSelectors;

/// Where a SidecarSet is filed.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum Scope {
    Cluster,
    Namespace(String),
}

/// An index of SidecarSets by namespace and selector label.
#[derive(Clone, Debug, Default)]
pub struct SidecarSetIndex {
    /// Each SidecarSet with its selectors parsed once.
    sets: BTreeMap<String, (Arc<SidecarSet>, Arc<ParsedSelectors>)>,
    /// Per scope: label key, then value, then the names of the SidecarSets filed there
    /// (nested so that a pod's labels are looked up without copying them).
    by_label: BTreeMap<Scope, BTreeMap<String, BTreeMap<String, BTreeSet<String>>>>,
    scan: BTreeMap<Scope, BTreeSet<String>>,
}

fn scopes(set: &SidecarSet) -> Vec<Scope> {
    let Some(ns) = &set.spec.namespace_selector else { return vec![Scope::Cluster] };
    if let Some(name) = ns.match_labels.as_ref().and_then(|l| l.get(NAMESPACE_METADATA_NAME)) {
        return vec![Scope::Namespace(name.clone())];
    }
    for req in ns.match_expressions.iter().flatten() {
        if req.key == NAMESPACE_METADATA_NAME && req.operator == "In" {
            return req.values.iter().flatten().map(|v| Scope::Namespace(v.clone())).collect();
        }
    }
    vec![Scope::Cluster]
}

fn label_key(set: &SidecarSet) -> Option<(String, String)> {
    let labels = set.spec.selector.as_ref()?.match_labels.as_ref()?;
    labels.iter().next().map(|(k, v)| (k.clone(), v.clone()))
}

impl SidecarSetIndex {
    /// An index of `sets` (a later SidecarSet of the same name replaces an earlier one).
    pub fn new<S: Into<Arc<SidecarSet>>>(sets: impl IntoIterator<Item = S>) -> Self {
        let mut index = Self::default();
        for set in sets {
            index.insert(set);
        }
        index
    }

    /// Adds or replaces a SidecarSet (shared, not copied, when given as an `Arc`).
    pub fn insert(&mut self, set: impl Into<Arc<SidecarSet>>) {
        let set: Arc<SidecarSet> = set.into();
        let name = set.metadata.name.clone().unwrap_or_default();
        self.remove(&name);
        for scope in scopes(&set) {
            match label_key(&set) {
                Some((k, v)) => {
                    self.by_label
                        .entry(scope)
                        .or_default()
                        .entry(k)
                        .or_default()
                        .entry(v)
                        .or_default()
                        .insert(name.clone());
                }
                None => {
                    self.scan.entry(scope).or_default().insert(name.clone());
                }
            }
        }
        let parsed = Arc::new(ParsedSelectors::of(&set));
        self.sets.insert(name, (set, parsed));
    }

    /// Removes a SidecarSet by name; the removed one, if any.
    pub fn remove(&mut self, name: &str) -> Option<Arc<SidecarSet>> {
        let (set, _) = self.sets.remove(name)?;
        for scope in scopes(&set) {
            match label_key(&set) {
                Some((k, v)) => {
                    let Some(keys) = self.by_label.get_mut(&scope) else { continue };
                    if let Some(values) = keys.get_mut(&k) {
                        if let Some(names) = values.get_mut(&v) {
                            names.remove(name);
                            if names.is_empty() {
                                values.remove(&v);
                            }
                        }
                        if values.is_empty() {
                            keys.remove(&k);
                        }
                    }
                    if keys.is_empty() {
                        self.by_label.remove(&scope);
                    }
                }
                None => {
                    if let Some(names) = self.scan.get_mut(&scope) {
                        names.remove(name);
                        if names.is_empty() {
                            self.scan.remove(&scope);
                        }
                    }
                }
            }
        }
        Some(set)
    }

    /// How many SidecarSets the index holds.
    pub fn len(&self) -> usize {
        self.sets.len()
    }

    /// Whether the index is empty.
    pub fn is_empty(&self) -> bool {
        self.sets.is_empty()
    }

    /// The SidecarSets that may select a pod in `namespace` (empty: `default`) with
    /// `pod_labels`, by name; a superset of those that do.
    pub fn candidates(
        &self,
        namespace: &str,
        pod_labels: &BTreeMap<String, String>,
    ) -> Vec<&Arc<SidecarSet>> {
        self.candidates_with_selectors(namespace, pod_labels).into_iter().map(|(s, _)| s).collect()
    }

    /// [`Self::candidates`], each with its parsed selectors (for
    /// [`super::SidecarSetCandidate::selectors`]).
    pub fn candidates_with_selectors(
        &self,
        namespace: &str,
        pod_labels: &BTreeMap<String, String>,
    ) -> Vec<(&Arc<SidecarSet>, &Arc<ParsedSelectors>)> {
        let namespace = if namespace.is_empty() { super::DEFAULT_NAMESPACE } else { namespace };
        let mut names = BTreeSet::new();
        for scope in [Scope::Namespace(namespace.to_owned()), Scope::Cluster] {
            if let Some(keys) = self.by_label.get(&scope) {
                for (k, v) in pod_labels {
                    if let Some(found) = keys.get(k).and_then(|values| values.get(v)) {
                        names.extend(found.iter().map(String::as_str));
                    }
                }
            }
            if let Some(found) = self.scan.get(&scope) {
                names.extend(found.iter().map(String::as_str));
            }
        }
        names.into_iter().filter_map(|n| self.sets.get(n)).map(|(s, p)| (s, p)).collect()
    }

    /// The SidecarSets that select the pod (paused ones included), by name. Candidates whose
    /// selector does not parse are left out.
    ///
    /// `namespace_labels` must be the labels of `namespace` itself: they carry
    /// `kubernetes.io/metadata.name: <namespace>` (the API server sets it on every namespace),
    /// which is what makes filing by pinned namespace agree with a full scan.
    pub fn matching(
        &self,
        namespace: &str,
        pod_labels: &BTreeMap<String, String>,
        namespace_labels: Option<&BTreeMap<String, String>>,
    ) -> Vec<&SidecarSet> {
        self.candidates_with_selectors(namespace, pod_labels)
            .into_iter()
            .filter(|(_, p)| p.matches(pod_labels, namespace_labels).unwrap_or(false))
            .map(|(s, _)| s.as_ref())
            .collect()
    }
}
