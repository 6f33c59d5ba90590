//! Which pods the pod mutating webhook sees: entries generated from the objects that act on
//! pods, instead of one entry matching every pod.
//!
//! Each object that changes pods at creation (a SidecarSet, a PodUnavailableBudget, a
//! WorkloadSpread, ...) gives a [`PodScopeTerm`]: the namespaces it acts in and the pod labels it
//! selects. [`scoped_entries`] turns the terms into webhook entries, one per group of equal
//! terms, each with the term's namespace and object selectors; [`partition`] spreads them over
//! configurations by the hash of their names, about [`TARGET_ENTRIES_PER_CONFIGURATION`] to
//! each, so that a change rewrites one small configuration; [`configuration_writes`] plans
//! the writes that bring the stored configurations there, adding every entry before removing
//! any, so that no pod a term selects goes unmatched while the configurations change.
//!
//! A term never selects fewer pods than its object: a selector the API server would refuse
//! widens the term to every pod of its namespaces, and a term for an object that selects pods
//! through a workload (a WorkloadSpread, a PodUnavailableBudget with `targetRef`) covers the
//! whole namespace. Every entry leaves out `kube-system` and the manager's namespace, so the
//! manager can always start.
//!
//! Nothing here reads the cluster: the terms, the stored configurations and the entry template
//! (client config, rules, failure policy) are passed in.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::Arc;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::{LabelSelector, LabelSelectorRequirement};
use serde_json::{Value, json};

use crate::plan::{Action, ObjectKind, Patch, Subresource, Target};

/// The label every generated configuration carries (value [`GENERATED_LABEL_VALUE`]).
pub const GENERATED_LABEL: &str = "webhooks.kruise.io/pod-scope";
/// The value of [`GENERATED_LABEL`].
pub const GENERATED_LABEL_VALUE: &str = "generated";
/// Generated configurations are named this, followed by their index.
pub const CONFIGURATION_PREFIX: &str = "kruise-pod-webhooks-";
/// Generated entries are named `p-<hash>` followed by this.
pub const ENTRY_SUFFIX: &str = ".mpod.kb.io";
/// About this many entries per configuration: every change rewrites a whole configuration,
/// and kube-apiserver's cost of a write grows with its size (an entry is about 1.7 KB of JSON
/// with its caBundle).
pub const TARGET_ENTRIES_PER_CONFIGURATION: usize = 64;
/// At most this many entries per configuration: etcd refuses objects over 1.5 MiB, and a
/// configuration briefly holds more while entries move between configurations.
pub const MAX_ENTRIES_PER_CONFIGURATION: usize = 200;
/// Configurations are not split further to keep within [`MAX_ENTRIES_PER_CONFIGURATION`]
/// past this many (the chart grants the manager this many names).
pub const MAX_CONFIGURATIONS: usize = 64;
/// The label kube-apiserver sets on every namespace to its name.
pub const NAMESPACE_NAME_LABEL: &str = "kubernetes.io/metadata.name";

/// A label selector in one canonical form, so that equal selectors compare equal: values
/// sorted and deduplicated, requirements sorted.
#[derive(Clone, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct CanonicalSelector {
    labels: BTreeMap<String, String>,
    expressions: BTreeSet<(String, String, Vec<String>)>,
}

impl CanonicalSelector {
    /// The selector of every object.
    pub fn everything() -> Self {
        Self::default()
    }

    /// `selector` in canonical form, or `None` when the API server would refuse it in a
    /// webhook's `objectSelector` or `namespaceSelector` (an unknown operator, values where
    /// none belong or none where they do, a key or value that is not a label's).
    pub fn new(selector: &LabelSelector) -> Option<Self> {
        crate::selector::label_selector_as_selector(Some(selector)).ok()?;
        let labels = selector.match_labels.clone().unwrap_or_default();
        let expressions = selector
            .match_expressions
            .iter()
            .flatten()
            .map(|e| {
                let mut values = e.values.clone().unwrap_or_default();
                values.sort();
                values.dedup();
                (e.key.clone(), e.operator.clone(), values)
            })
            .collect();
        Some(Self { labels, expressions })
    }

    /// True when it selects every object.
    pub fn is_everything(&self) -> bool {
        self.labels.is_empty() && self.expressions.is_empty()
    }

    fn with_expression(mut self, key: &str, operator: &str, values: &[&str]) -> Self {
        let mut values: Vec<String> = values.iter().map(|v| (*v).to_owned()).collect();
        values.sort();
        values.dedup();
        self.expressions.insert((key.to_owned(), operator.to_owned(), values));
        self
    }

    /// What both `self` and `other` select. `other`'s labels become `In` expressions, so a key
    /// both name keeps both requirements.
    #[must_use]
    pub fn and(mut self, other: &Self) -> Self {
        for (key, value) in &other.labels {
            match self.labels.get(key) {
                None => {
                    self.labels.insert(key.clone(), value.clone());
                }
                Some(own) if own == value => {}
                Some(_) => {
                    self.expressions.insert((key.clone(), "In".into(), vec![value.clone()]));
                }
            }
        }
        self.expressions.extend(other.expressions.iter().cloned());
        self
    }

    /// As the API server takes it.
    pub fn to_json(&self) -> Value {
        let mut out = serde_json::Map::new();
        if !self.labels.is_empty() {
            out.insert("matchLabels".into(), json!(self.labels));
        }
        if !self.expressions.is_empty() {
            let list: Vec<Value> = self
                .expressions
                .iter()
                .map(|(key, operator, values)| {
                    if values.is_empty() {
                        json!({"key": key, "operator": operator})
                    } else {
                        json!({"key": key, "operator": operator, "values": values})
                    }
                })
                .collect();
            out.insert("matchExpressions".into(), Value::Array(list));
        }
        Value::Object(out)
    }

    /// As a `LabelSelector`.
    pub fn to_label_selector(&self) -> LabelSelector {
        let expressions = self
            .expressions
            .iter()
            .map(|(key, operator, values)| LabelSelectorRequirement {
                key: key.clone(),
                operator: operator.clone(),
                values: (!values.is_empty()).then(|| values.clone()),
            })
            .collect::<Vec<_>>();
        LabelSelector {
            match_labels: (!self.labels.is_empty()).then(|| self.labels.clone()),
            match_expressions: (!expressions.is_empty()).then_some(expressions),
        }
    }

    /// Whether it selects an object with `labels` (matched by [`crate::selector`]).
    pub fn matches(&self, labels: &BTreeMap<String, String>) -> bool {
        crate::selector::Selector::parse(Some(&self.to_label_selector()))
            .is_ok_and(|selector| selector.matches(labels))
    }
}

/// The namespaces a term acts in.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum NamespaceScope {
    /// Every namespace.
    All,
    /// The one named.
    Named(String),
    /// Those whose labels the selector selects.
    Selected(CanonicalSelector),
}

/// A webhook `matchConditions` entry: a CEL expression over the request, which the API server
/// evaluates before calling the webhook (the pod is sent only when it is true).
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct MatchCondition {
    /// Its name, unique in the entry.
    pub name: String,
    /// The CEL expression.
    pub expression: String,
}

/// What one object acting on pods selects: the namespaces and the pod labels, and, for a
/// feature that selects by what labels cannot say (an annotation, an env), a match condition.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct PodScopeTerm {
    /// The namespaces.
    pub namespaces: NamespaceScope,
    /// The pods' labels.
    pub pods: CanonicalSelector,
    /// Only the pods this condition holds for.
    pub condition: Option<MatchCondition>,
}

impl PodScopeTerm {
    /// Every pod of every namespace (a feature that cannot say what it selects).
    pub fn everything() -> Self {
        Self {
            namespaces: NamespaceScope::All,
            pods: CanonicalSelector::everything(),
            condition: None,
        }
    }

    /// The same pods, narrowed to those the CEL `expression` (named `name`) holds for.
    #[must_use]
    pub fn with_condition(mut self, name: &str, expression: &str) -> Self {
        self.condition =
            Some(MatchCondition { name: name.to_owned(), expression: expression.to_owned() });
        self
    }

    /// Every pod of `namespace` (an object that selects its pods through a workload).
    pub fn namespace(namespace: &str) -> Self {
        Self {
            namespaces: NamespaceScope::Named(namespace.to_owned()),
            pods: CanonicalSelector::everything(),
            condition: None,
        }
    }

    /// The pods `selector` selects in `namespaces`; `None` when the selector is nil (it
    /// selects no pod). A selector the API server would refuse widens to every pod.
    pub fn selecting(namespaces: NamespaceScope, selector: Option<&LabelSelector>) -> Option<Self> {
        let pods = CanonicalSelector::new(selector?).unwrap_or_default();
        Some(Self { namespaces, pods, condition: None })
    }

    /// The namespaces a namespace selector selects; a selector the API server would refuse
    /// widens to every namespace.
    pub fn namespaces_selected(selector: &LabelSelector) -> NamespaceScope {
        match CanonicalSelector::new(selector) {
            Some(s) if s.is_everything() => NamespaceScope::All,
            Some(s) => NamespaceScope::Selected(s),
            None => NamespaceScope::All,
        }
    }

    /// Whether every pod this term selects is selected by `other` as well.
    fn covered_by(&self, other: &Self) -> bool {
        let namespaces =
            other.namespaces == NamespaceScope::All || (other.namespaces == self.namespaces);
        namespaces && other.pods.is_everything() && other.condition.is_none()
    }
}

/// What narrows every entry: the manager's namespace (never seen) and the
/// `--pod-webhook-namespace-selector` and `--pod-webhook-object-selector` flags.
#[derive(Clone, Debug, Default)]
pub struct ScopePolicy {
    /// The manager's namespace, which no entry sees (nor `kube-system`).
    pub manager_namespace: String,
    /// Only namespaces this selects.
    pub namespaces: Option<CanonicalSelector>,
    /// Only pods this selects.
    pub pods: Option<CanonicalSelector>,
}

/// One generated webhook entry: its name and selectors, and how many terms it stands for.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ScopedEntry {
    /// `p-<hash of the selectors>.mpod.kb.io`.
    pub name: String,
    /// The namespaces it sees.
    pub namespace_selector: CanonicalSelector,
    /// The pods it sees.
    pub object_selector: CanonicalSelector,
    /// Its match condition, if its terms have one.
    pub condition: Option<MatchCondition>,
    /// How many terms it stands for.
    pub terms: usize,
}

impl ScopedEntry {
    /// The entry as a webhook of a configuration: `template` (client config, rules, failure
    /// policy, ...) with the name and both selectors set.
    pub fn to_webhook(&self, template: &Value) -> Value {
        let mut webhook = template.clone();
        if let Some(object) = webhook.as_object_mut() {
            object.insert("name".into(), json!(self.name));
            object.insert("namespaceSelector".into(), self.namespace_selector.to_json());
            object.insert("objectSelector".into(), self.object_selector.to_json());
            if let Some(c) = &self.condition {
                object.insert(
                    "matchConditions".into(),
                    json!([{"name": c.name, "expression": c.expression}]),
                );
            }
        }
        webhook
    }

    /// Whether a pod in a namespace with `namespace_labels`, with `pod_labels`, is sent, by
    /// the selectors (the match condition, if any, narrows it further).
    pub fn matches(
        &self,
        namespace_labels: &BTreeMap<String, String>,
        pod_labels: &BTreeMap<String, String>,
    ) -> bool {
        self.namespace_selector.matches(namespace_labels)
            && self.object_selector.matches(pod_labels)
    }
}

/// FNV-1a, 64 bits: a name that is the same in every process and every release.
fn stable_hash(text: &str) -> u64 {
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    for byte in text.bytes() {
        hash ^= u64::from(byte);
        hash = hash.wrapping_mul(0x0000_0100_0000_01b3);
    }
    hash
}

/// The entries for `terms`: one per group of equal terms (after dropping those another term
/// covers), sorted by name.
pub fn scoped_entries(
    terms: impl IntoIterator<Item = PodScopeTerm>,
    policy: &ScopePolicy,
) -> Vec<ScopedEntry> {
    let system: Vec<&str> = ["kube-system", policy.manager_namespace.as_str()]
        .into_iter()
        .filter(|ns| !ns.is_empty())
        .collect();
    let mut grouped: BTreeMap<PodScopeTerm, usize> = BTreeMap::new();
    for term in terms {
        if let NamespaceScope::Named(ns) = &term.namespaces
            && system.contains(&ns.as_str())
        {
            continue;
        }
        *grouped.entry(term).or_default() += 1;
    }
    // Terms that select every pod of their namespaces cover the others there.
    let wide: Vec<PodScopeTerm> = grouped
        .keys()
        .filter(|t| t.pods.is_everything() && t.condition.is_none())
        .cloned()
        .collect();
    let mut by_selectors: BTreeMap<
        (CanonicalSelector, CanonicalSelector, Option<MatchCondition>),
        usize,
    > = BTreeMap::new();
    for (term, count) in grouped {
        if wide.iter().any(|w| *w != term && term.covered_by(w)) {
            continue;
        }
        let base =
            CanonicalSelector::everything().with_expression(NAMESPACE_NAME_LABEL, "NotIn", &system);
        let mut namespaces = match &term.namespaces {
            NamespaceScope::All => base,
            NamespaceScope::Named(ns) => base.with_expression(NAMESPACE_NAME_LABEL, "In", &[ns]),
            NamespaceScope::Selected(selector) => base.and(selector),
        };
        if let Some(narrower) = &policy.namespaces {
            namespaces = namespaces.and(narrower);
        }
        let mut pods = term.pods;
        if let Some(narrower) = &policy.pods {
            pods = pods.and(narrower);
        }
        *by_selectors.entry((namespaces, pods, term.condition)).or_default() += count;
    }
    let mut entries: Vec<ScopedEntry> = Vec::with_capacity(by_selectors.len());
    let mut used = BTreeSet::new();
    for ((namespace_selector, object_selector, condition), terms) in by_selectors {
        let mut key = format!("{}|{}", namespace_selector.to_json(), object_selector.to_json());
        if let Some(c) = &condition {
            key.push_str(&format!("|{}|{}", c.name, c.expression));
        }
        let hash = stable_hash(&key);
        // Two groups hashing alike (never seen, but possible) still get distinct names.
        let mut name = format!("p-{hash:016x}{ENTRY_SUFFIX}");
        let mut n = 1;
        while !used.insert(name.clone()) {
            n += 1;
            name = format!("p-{hash:016x}-{n}{ENTRY_SUFFIX}");
        }
        entries.push(ScopedEntry { name, namespace_selector, object_selector, condition, terms });
    }
    entries.sort_by(|a, b| a.name.cmp(&b.name));
    entries
}

/// The entries spread over configurations by the hash of their names, about `target` to a
/// configuration and at most `max`: a power of two of configurations, so that adding or
/// removing an entry rewrites the one configuration it belongs to, and only a change in their
/// number moves entries between configurations. There is always at least one configuration
/// (an empty one says the entries were generated); each lists its entries in name order.
pub fn partition(entries: Vec<ScopedEntry>, target: usize, max: usize) -> Vec<Vec<ScopedEntry>> {
    let (target, max) = (target.max(1), max.max(1));
    let mut count = entries.len().div_ceil(target).max(1).next_power_of_two();
    loop {
        let mut out: Vec<Vec<ScopedEntry>> = vec![Vec::new(); count];
        for entry in &entries {
            let bucket = stable_hash(&entry.name) % count as u64;
            out[usize::try_from(bucket).unwrap_or_default()].push(entry.clone());
        }
        if out.iter().all(|c| c.len() <= max)
            || count >= entries.len()
            || count >= MAX_CONFIGURATIONS
        {
            return out;
        }
        count *= 2;
    }
}

/// What `stored` becomes once `actions` (from [`configuration_writes`]) are carried out.
pub fn apply_writes(stored: &mut Vec<StoredConfiguration>, actions: &[Action]) {
    let webhooks = |body: &Value| body["webhooks"].as_array().cloned().unwrap_or_default();
    for action in actions {
        match action {
            Action::CreateObject { target, body } => {
                stored.retain(|c| c.name != target.name);
                stored.push(StoredConfiguration {
                    name: target.name.clone(),
                    webhooks: webhooks(body),
                });
            }
            Action::PatchObject { target, patch, .. } => {
                if let Some(config) = stored.iter_mut().find(|c| c.name == target.name) {
                    config.webhooks = webhooks(patch.body());
                }
            }
            Action::DeleteObject { target } => stored.retain(|c| c.name != target.name),
            _ => {}
        }
    }
}

/// The name of the `index`th generated configuration.
pub fn configuration_name(index: usize) -> String {
    format!("{CONFIGURATION_PREFIX}{index}")
}

/// A generated configuration as stored.
#[derive(Clone, Debug, PartialEq)]
pub struct StoredConfiguration {
    /// Its name.
    pub name: String,
    /// Its webhooks, as the API server answered them.
    pub webhooks: Vec<Value>,
}

fn webhook_name(webhook: &Value) -> &str {
    webhook.get("name").and_then(Value::as_str).unwrap_or_default()
}

fn write(name: &str, exists: bool, webhooks: Vec<Value>) -> Action {
    let target = Target::new(ObjectKind::MUTATING_WEBHOOK_CONFIGURATION, None, name);
    let labels = json!({ GENERATED_LABEL: GENERATED_LABEL_VALUE });
    if exists {
        // A merge patch replaces the whole list.
        let patch = json!({"metadata": {"labels": labels}, "webhooks": webhooks});
        Action::PatchObject { target, subresource: Subresource::Main, patch: Patch::merge(patch) }
    } else {
        let body = json!({"metadata": {"name": name, "labels": labels}, "webhooks": webhooks});
        Action::CreateObject { target, body: Arc::new(body) }
    }
}

/// The writes that bring `stored` to `desired` (the webhooks of each configuration, in
/// order), one step at a time; empty once they agree.
///
/// - While some desired entry is not stored as desired, the step adds: each configuration gets
///   its desired entries and keeps those it holds that it no longer should, so an entry moving
///   from one configuration to another is in both for a moment rather than in neither.
/// - Once every desired entry is stored, the step removes: each configuration is written as
///   desired, and configurations no longer needed are deleted.
///
/// Applying the writes and calling again with what is then stored reaches an empty answer
/// within two steps.
pub fn configuration_writes(stored: &[StoredConfiguration], desired: &[Vec<Value>]) -> Vec<Action> {
    let by_name: HashMap<&str, &StoredConfiguration> =
        stored.iter().map(|c| (c.name.as_str(), c)).collect();
    // An entry is in place once its own configuration holds it as desired (a copy elsewhere
    // is about to be removed).
    let missing = desired.iter().enumerate().any(|(index, wanted)| {
        let held = by_name.get(configuration_name(index).as_str()).map(|c| &c.webhooks);
        wanted.iter().any(|w| !held.is_some_and(|held| held.contains(w)))
    });
    let mut actions = Vec::new();
    for (index, wanted) in desired.iter().enumerate() {
        let name = configuration_name(index);
        let current = by_name.get(name.as_str());
        let mut webhooks = wanted.clone();
        if missing && let Some(current) = current {
            let names: BTreeSet<&str> = wanted.iter().map(webhook_name).collect();
            webhooks.extend(
                current.webhooks.iter().filter(|w| !names.contains(webhook_name(w))).cloned(),
            );
        }
        if current.is_none_or(|c| c.webhooks != webhooks) {
            actions.push(write(&name, current.is_some(), webhooks));
        }
    }
    if !missing {
        let wanted: BTreeSet<String> = (0..desired.len()).map(configuration_name).collect();
        for config in stored.iter().filter(|c| !wanted.contains(&c.name)) {
            let target =
                Target::new(ObjectKind::MUTATING_WEBHOOK_CONFIGURATION, None, &config.name);
            actions.push(Action::DeleteObject { target });
        }
    }
    actions
}

#[cfg(test)]
mod tests {
    use super::*;

    fn labels(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
        pairs.iter().map(|(k, v)| ((*k).to_owned(), (*v).to_owned())).collect()
    }

    fn selector(pairs: &[(&str, &str)]) -> LabelSelector {
        LabelSelector { match_labels: Some(labels(pairs)), match_expressions: None }
    }

    fn policy() -> ScopePolicy {
        ScopePolicy { manager_namespace: "kruise-system".into(), ..ScopePolicy::default() }
    }

    #[test]
    fn a_condition_term_gets_its_own_entry_with_match_conditions() {
        let app = selector(&[("app", "web")]);
        let conditioned = PodScopeTerm::everything().with_condition("c", "true");
        let terms = vec![
            PodScopeTerm::selecting(NamespaceScope::All, Some(&app)).expect("term"),
            conditioned.clone(),
            conditioned.clone(),
        ];
        let entries = scoped_entries(terms, &policy());
        assert_eq!(entries.len(), 2, "{entries:?}");
        let with = entries.iter().find(|e| e.condition.is_some()).expect("the conditioned entry");
        assert_eq!(with.terms, 2);
        let webhook = with.to_webhook(&json!({}));
        assert_eq!(webhook["matchConditions"], json!([{"name": "c", "expression": "true"}]));
        let without = entries.iter().find(|e| e.condition.is_none()).expect("the other");
        assert!(without.to_webhook(&json!({})).get("matchConditions").is_none());
        // A term for every pod covers the conditioned one; a conditioned term covers none.
        let wide = scoped_entries(vec![PodScopeTerm::everything(), conditioned.clone()], &policy());
        assert_eq!(wide.len(), 1);
        assert!(wide[0].condition.is_none());
        let both = scoped_entries(
            vec![conditioned, PodScopeTerm::selecting(NamespaceScope::All, Some(&app)).expect("t")],
            &policy(),
        );
        assert_eq!(both.len(), 2);
    }

    #[test]
    fn equal_terms_share_an_entry_and_system_namespaces_are_never_seen() {
        let app = selector(&[("app", "web")]);
        let terms = vec![
            PodScopeTerm::selecting(NamespaceScope::All, Some(&app)).expect("term"),
            PodScopeTerm::selecting(NamespaceScope::All, Some(&app)).expect("term"),
            PodScopeTerm::namespace("kube-system"),
            PodScopeTerm::namespace("kruise-system"),
        ];
        let entries = scoped_entries(terms, &policy());
        assert_eq!(entries.len(), 1);
        assert_eq!(entries[0].terms, 2);
        assert!(entries[0].name.starts_with("p-") && entries[0].name.ends_with(ENTRY_SUFFIX));
        assert_eq!(
            entries[0].namespace_selector.to_json(),
            json!({"matchExpressions": [{"key": NAMESPACE_NAME_LABEL, "operator": "NotIn",
                "values": ["kruise-system", "kube-system"]}]})
        );
        assert_eq!(entries[0].object_selector.to_json(), json!({"matchLabels": {"app": "web"}}));
        let system = labels(&[(NAMESPACE_NAME_LABEL, "kube-system")]);
        assert!(!entries[0].matches(&system, &labels(&[("app", "web")])));
    }

    #[test]
    fn a_selector_the_server_refuses_widens_and_a_nil_one_selects_nothing() {
        let bad = LabelSelector {
            match_expressions: Some(vec![LabelSelectorRequirement {
                key: "app".into(),
                operator: "Near".into(),
                values: None,
            }]),
            match_labels: None,
        };
        let term = PodScopeTerm::selecting(NamespaceScope::Named("a".into()), Some(&bad));
        assert_eq!(term, Some(PodScopeTerm::namespace("a")));
        assert_eq!(PodScopeTerm::selecting(NamespaceScope::All, None), None);
    }

    #[test]
    fn a_namespace_wide_term_covers_the_narrower_ones_there() {
        let app = selector(&[("app", "web")]);
        let terms = vec![
            PodScopeTerm::namespace("a"),
            PodScopeTerm::selecting(NamespaceScope::Named("a".into()), Some(&app)).expect("t"),
            PodScopeTerm::selecting(NamespaceScope::Named("b".into()), Some(&app)).expect("t"),
        ];
        let entries = scoped_entries(terms, &policy());
        assert_eq!(entries.len(), 2);
        assert!(entries.iter().any(|e| e.object_selector.is_everything()));
    }

    #[test]
    fn narrowing_flags_and_the_term_keep_both_requirements() {
        let mut policy = policy();
        policy.pods = CanonicalSelector::new(&selector(&[("app", "other")]));
        let app = selector(&[("app", "web")]);
        let term = PodScopeTerm::selecting(NamespaceScope::All, Some(&app)).expect("term");
        let entries = scoped_entries([term], &policy);
        let ns = labels(&[(NAMESPACE_NAME_LABEL, "default")]);
        assert!(!entries[0].matches(&ns, &labels(&[("app", "web")])));
        assert!(!entries[0].matches(&ns, &labels(&[("app", "other")])));
    }

    #[test]
    fn writes_add_before_they_remove() {
        let hook = |name: &str| json!({"name": name});
        let stored = vec![StoredConfiguration {
            name: configuration_name(0),
            webhooks: vec![hook("a"), hook("b")],
        }];
        // `b` moves to a second configuration and `c` is new.
        let desired = vec![vec![hook("a")], vec![hook("b"), hook("c")]];
        let first = configuration_writes(&stored, &desired);
        assert_eq!(first.len(), 1, "{first:?}");
        assert!(
            matches!(&first[0], Action::CreateObject { target, .. } if target.name == configuration_name(1))
        );
        let stored = vec![
            stored[0].clone(),
            StoredConfiguration { name: configuration_name(1), webhooks: desired[1].clone() },
        ];
        let second = configuration_writes(&stored, &desired);
        assert_eq!(second.len(), 1, "{second:?}");
        assert!(matches!(&second[0], Action::PatchObject { patch, .. }
            if patch.body()["webhooks"] == json!([{"name": "a"}])));
        let stored = vec![
            StoredConfiguration { name: configuration_name(0), webhooks: desired[0].clone() },
            stored[1].clone(),
        ];
        assert!(configuration_writes(&stored, &desired).is_empty());
    }
}
