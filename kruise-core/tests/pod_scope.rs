//! The pod webhook's generated entries (issue #39, ask 11): a pod is sent exactly when some
//! object acting on pods selects it, whatever the order of the objects, and the writes that
//! change the configurations never leave a selected pod unmatched on the way.

use std::collections::{BTreeMap, BTreeSet};

use k8s_openapi::apimachinery::pkg::apis::meta::v1::{LabelSelector, LabelSelectorRequirement};
use kruise_core::admission::pod_scope::{
    CanonicalSelector, NAMESPACE_NAME_LABEL, NamespaceScope, PodScopeTerm, ScopePolicy,
    StoredConfiguration, apply_writes, configuration_name, configuration_writes, partition,
    scoped_entries,
};
use kruise_core::plan::Action;
use proptest::prelude::*;
use serde_json::{Value, json};

const NAMESPACES: &[&str] = &["a", "b", "c", "kube-system", "kruise-system"];
const MANAGER: &str = "kruise-system";

fn selector_strategy() -> impl Strategy<Value = LabelSelector> {
    let labels = proptest::collection::btree_map(
        prop_oneof![Just("app".to_owned()), Just("tier".to_owned())],
        prop_oneof![Just("web".to_owned()), Just("db".to_owned())],
        0..2,
    );
    let expression = (
        prop_oneof![Just("app"), Just("zone")],
        prop_oneof![Just("In"), Just("NotIn"), Just("Exists"), Just("DoesNotExist")],
        proptest::collection::vec(prop_oneof![Just("web"), Just("db"), Just("x")], 1..3),
    )
        .prop_map(|(key, operator, values)| LabelSelectorRequirement {
            key: key.into(),
            operator: operator.into(),
            values: matches!(operator, "In" | "NotIn")
                .then(|| values.into_iter().map(str::to_owned).collect()),
        });
    (labels, proptest::collection::vec(expression, 0..2)).prop_map(|(labels, expressions)| {
        LabelSelector {
            match_labels: (!labels.is_empty()).then_some(labels),
            match_expressions: (!expressions.is_empty()).then_some(expressions),
        }
    })
}

fn namespaces_strategy() -> impl Strategy<Value = NamespaceScope> {
    prop_oneof![
        Just(NamespaceScope::All),
        proptest::sample::select(NAMESPACES).prop_map(|ns| NamespaceScope::Named(ns.into())),
        prop_oneof![Just("prod"), Just("dev")].prop_map(|env| {
            let selector = LabelSelector {
                match_labels: Some([("env".to_owned(), env.to_owned())].into()),
                match_expressions: None,
            };
            PodScopeTerm::namespaces_selected(&selector)
        }),
    ]
}

fn term_strategy() -> impl Strategy<Value = PodScopeTerm> {
    (namespaces_strategy(), selector_strategy())
        .prop_map(|(ns, sel)| PodScopeTerm::selecting(ns, Some(&sel)).expect("a selector"))
}

#[derive(Clone, Debug)]
struct PodAt {
    namespace: String,
    namespace_labels: BTreeMap<String, String>,
    labels: BTreeMap<String, String>,
}

fn pod_strategy() -> impl Strategy<Value = PodAt> {
    let value = || proptest::option::of(prop_oneof![Just("web"), Just("db"), Just("x")]);
    (
        proptest::sample::select(NAMESPACES),
        proptest::option::of(prop_oneof![Just("prod"), Just("dev")]),
        value(),
        value(),
        value(),
    )
        .prop_map(|(ns, env, app, tier, zone)| {
            let mut namespace_labels =
                BTreeMap::from([(NAMESPACE_NAME_LABEL.to_owned(), ns.into())]);
            if let Some(env) = env {
                namespace_labels.insert("env".into(), env.into());
            }
            let mut labels = BTreeMap::new();
            for (key, value) in [("app", app), ("tier", tier), ("zone", zone)] {
                if let Some(value) = value {
                    labels.insert(key.to_owned(), value.to_owned());
                }
            }
            PodAt { namespace: ns.into(), namespace_labels, labels }
        })
}

/// Whether the object behind `term` selects `pod` (the meaning the entries must keep).
fn selects(term: &PodScopeTerm, pod: &PodAt) -> bool {
    let namespace = match &term.namespaces {
        NamespaceScope::All => true,
        NamespaceScope::Named(ns) => *ns == pod.namespace,
        NamespaceScope::Selected(selector) => selector.matches(&pod.namespace_labels),
    };
    namespace && term.pods.matches(&pod.labels)
}

fn policy() -> ScopePolicy {
    ScopePolicy { manager_namespace: MANAGER.into(), ..ScopePolicy::default() }
}

fn template() -> Value {
    json!({"failurePolicy": "Fail", "sideEffects": "None"})
}

/// Carries out `actions` on `stored`, as the API server would, checking each is possible.
fn apply(stored: &mut Vec<StoredConfiguration>, actions: &[Action]) {
    for action in actions {
        match action {
            Action::CreateObject { target, .. } => {
                assert!(stored.iter().all(|c| c.name != target.name), "created twice");
            }
            Action::PatchObject { target, .. } | Action::DeleteObject { target } => {
                assert!(stored.iter().any(|c| c.name == target.name), "{} is missing", target.name);
            }
            other => panic!("unexpected action {other:?}"),
        }
        apply_writes(stored, std::slice::from_ref(action));
    }
}

fn names(stored: &[StoredConfiguration]) -> BTreeSet<String> {
    stored
        .iter()
        .flat_map(|c| c.webhooks.iter().map(|w| w["name"].as_str().unwrap_or("").to_owned()))
        .collect()
}

fn desired(terms: &[PodScopeTerm], max: usize) -> Vec<Vec<Value>> {
    partition(scoped_entries(terms.iter().cloned(), &policy()), max, max)
        .iter()
        .map(|config| config.iter().map(|e| e.to_webhook(&template())).collect())
        .collect()
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    /// A pod is sent by some entry exactly when an object selects it, outside the system
    /// namespaces: never fewer pods (none admitted unmutated), never more.
    #[test]
    fn entries_send_exactly_the_selected_pods(
        terms in proptest::collection::vec(term_strategy(), 0..12),
        pods in proptest::collection::vec(pod_strategy(), 1..24),
    ) {
        let entries = scoped_entries(terms.clone(), &policy());
        let names: BTreeSet<&str> = entries.iter().map(|e| e.name.as_str()).collect();
        prop_assert_eq!(names.len(), entries.len(), "entry names are unique");
        prop_assert!(entries.len() <= terms.len());
        for pod in &pods {
            let system = pod.namespace == "kube-system" || pod.namespace == MANAGER;
            let selected = !system && terms.iter().any(|t| selects(t, pod));
            let sent = entries.iter().any(|e| e.matches(&pod.namespace_labels, &pod.labels));
            prop_assert_eq!(sent, selected, "{:?}", pod);
        }
    }

    /// The entries depend on the set of objects, not on the order they are listed in.
    #[test]
    fn entries_do_not_depend_on_order(
        terms in proptest::collection::vec(term_strategy(), 0..12),
        seed in any::<u64>(),
    ) {
        let mut shuffled = terms.clone();
        let n = shuffled.len();
        for i in 0..n {
            let j = (seed.rotate_left(i as u32) as usize) % n;
            shuffled.swap(i, j);
        }
        prop_assert_eq!(scoped_entries(terms, &policy()), scoped_entries(shuffled, &policy()));
    }

    /// From any set of objects to any other, the writes reach the desired configurations
    /// within two steps, never hold more than `max` entries per configuration at rest, and at
    /// no step leave out an entry that both the old and the new configurations have, or one
    /// the new ones need once it was added.
    #[test]
    fn writes_converge_and_never_drop_a_needed_entry(
        before in proptest::collection::vec(term_strategy(), 0..16),
        after in proptest::collection::vec(term_strategy(), 0..16),
        max in 1usize..5,
    ) {
        let mut stored = Vec::new();
        for _ in 0..3 {
            let actions = configuration_writes(&stored, &desired(&before, max));
            apply(&mut stored, &actions);
        }
        prop_assert!(configuration_writes(&stored, &desired(&before, max)).is_empty());
        let old = names(&stored);
        let target = desired(&after, max);
        let new: BTreeSet<String> = target
            .iter()
            .flatten()
            .map(|w| w["name"].as_str().unwrap_or("").to_owned())
            .collect();
        let mut steps = 0;
        loop {
            let actions = configuration_writes(&stored, &target);
            if actions.is_empty() {
                break;
            }
            steps += 1;
            prop_assert!(steps <= 2, "more than two steps");
            // One write at a time, as they go out.
            for action in &actions {
                apply(&mut stored, std::slice::from_ref(action));
                let now = names(&stored);
                prop_assert!(old.intersection(&new).all(|n| now.contains(n)), "{:?}", action);
                prop_assert!(steps < 2 || new.iter().all(|n| now.contains(n)), "{:?}", action);
            }
        }
        let total = new.len();
        prop_assert_eq!(names(&stored), new);
        for config in &stored {
            prop_assert!(config.webhooks.len() <= max || stored.len() >= total);
        }
        let wanted: BTreeSet<String> = (0..target.len()).map(configuration_name).collect();
        let present: BTreeSet<String> = stored.iter().map(|c| c.name.clone()).collect();
        prop_assert_eq!(present, wanted);
    }
}

#[test]
fn a_thousand_sidecarsets_over_a_hundred_selectors_make_a_hundred_entries() {
    let terms: Vec<PodScopeTerm> = (0..1000)
        .map(|i| {
            let selector = LabelSelector {
                match_labels: Some([("app".to_owned(), format!("app-{}", i % 100))].into()),
                match_expressions: None,
            };
            PodScopeTerm::selecting(NamespaceScope::All, Some(&selector)).expect("term")
        })
        .collect();
    let entries = scoped_entries(terms, &policy());
    assert_eq!(entries.len(), 100);
    assert!(entries.iter().all(|e| e.terms == 10));
    let configurations = partition(entries.clone(), 40, 200);
    assert_eq!(configurations.len(), 4);
    assert_eq!(configurations.iter().map(Vec::len).sum::<usize>(), 100);
    assert!(configurations.iter().all(|c| c.len() <= 200));
    assert!(CanonicalSelector::everything().is_everything());
    // One more selector rewrites one configuration, not every one after it.
    let mut more = entries;
    let extra = LabelSelector {
        match_labels: Some([("app".to_owned(), "late".to_owned())].into()),
        match_expressions: None,
    };
    let term = PodScopeTerm::selecting(NamespaceScope::All, Some(&extra)).expect("term");
    more.extend(scoped_entries([term], &policy()));
    more.sort_by(|a, b| a.name.cmp(&b.name));
    let after = partition(more, 40, 200);
    let changed = configurations.iter().zip(&after).filter(|(a, b)| a != b).count();
    assert_eq!(changed, 1);
}

proptest! {
    /// Configurations hold at most `max` entries (unless there are as many configurations as
    /// entries), and every entry lands in exactly one.
    #[test]
    fn partition_keeps_every_entry_once_and_within_bounds(
        terms in proptest::collection::vec(term_strategy(), 0..40),
        target in 1usize..8,
        max in 1usize..10,
    ) {
        let entries = scoped_entries(terms, &policy());
        let n = entries.len();
        let configurations = partition(entries.clone(), target, max);
        prop_assert!(configurations.len().is_power_of_two());
        let flat: Vec<_> = configurations.iter().flatten().cloned().collect();
        prop_assert_eq!(flat.len(), n);
        for entry in &entries {
            prop_assert_eq!(flat.iter().filter(|e| *e == entry).count(), 1);
        }
        for config in &configurations {
            prop_assert!(config.len() <= max || configurations.len() >= n);
            prop_assert!(config.windows(2).all(|w| w[0].name < w[1].name));
        }
    }
}
