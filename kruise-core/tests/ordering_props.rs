//! Property tests for update ordering: priority and scatter sorts.

use std::collections::BTreeMap;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector;
use kruise_api::apps::common::{
    UpdatePriorityOrderTerm, UpdatePriorityStrategy, UpdatePriorityWeightTerm, UpdateScatterTerm,
};
use kruise_core::ordering::{
    OrderLabels, UpdateOrder, priority_order, priority_sort, priority_weight, scatter_sort,
};
use proptest::prelude::*;

type Labels = BTreeMap<String, String>;

fn labels_strategy() -> impl Strategy<Value = Labels> {
    proptest::collection::btree_map(
        prop_oneof![Just("a".to_owned()), Just("b".to_owned()), Just("c".to_owned())],
        prop_oneof![Just("1".to_owned()), Just("2".to_owned()), Just("v-7".to_owned())],
        0..3,
    )
}

fn pods_strategy() -> impl Strategy<Value = Vec<Labels>> {
    proptest::collection::vec(labels_strategy(), 0..24)
}

fn weight_strategy() -> impl Strategy<Value = UpdatePriorityStrategy> {
    proptest::collection::vec((1i32..=100, labels_strategy()), 1..4).prop_map(|terms| {
        UpdatePriorityStrategy {
            weight_priority: terms
                .into_iter()
                .map(|(weight, ml)| UpdatePriorityWeightTerm {
                    weight,
                    match_selector: LabelSelector { match_labels: Some(ml), ..Default::default() },
                })
                .collect(),
            ..Default::default()
        }
    })
}

fn order_strategy() -> impl Strategy<Value = UpdatePriorityStrategy> {
    proptest::sample::subsequence(vec!["a", "b", "c"], 1..=3).prop_shuffle().prop_map(|keys| {
        UpdatePriorityStrategy {
            order_priority: keys
                .into_iter()
                .map(|k| UpdatePriorityOrderTerm { ordered_key: k.to_owned() })
                .collect(),
            ..Default::default()
        }
    })
}

fn scatter_strategy() -> impl Strategy<Value = Vec<UpdateScatterTerm>> {
    proptest::collection::vec(
        (prop_oneof![Just("a"), Just("b"), Just("c")], prop_oneof![Just("1"), Just("2")])
            .prop_map(|(k, v)| UpdateScatterTerm { key: k.to_owned(), value: v.to_owned() }),
        0..4,
    )
}

/// A subset of `0..n` in shuffled order.
fn indexes_for(n: usize) -> impl Strategy<Value = Vec<usize>> {
    proptest::sample::subsequence((0..n).collect::<Vec<_>>(), 0..=n).prop_shuffle()
}

fn pods_and_indexes() -> impl Strategy<Value = (Vec<Labels>, Vec<usize>)> {
    pods_strategy().prop_flat_map(|pods| {
        let n = pods.len();
        (Just(pods), indexes_for(n))
    })
}

fn sorted(mut v: Vec<usize>) -> Vec<usize> {
    v.sort_unstable();
    v
}

proptest! {
    /// Weight priority: a stable permutation, heaviest first.
    #[test]
    fn weight_priority_sorts_heaviest_first(
        (pods, indexes) in pods_and_indexes(), strategy in weight_strategy(),
    ) {
        let refs: Vec<&Labels> = pods.iter().collect();
        let out = priority_sort(&strategy, &refs, indexes.clone());
        prop_assert_eq!(sorted(out.clone()), sorted(indexes.clone()));
        prop_assert_eq!(&out, &priority_sort(&strategy, &refs, indexes.clone()));
        let weight = |i: usize| priority_weight(&strategy, &pods[i]);
        for pair in out.windows(2) {
            prop_assert!(weight(pair[0]) >= weight(pair[1]));
            if weight(pair[0]) == weight(pair[1]) {
                let pos = |x: usize| indexes.iter().position(|&y| y == x);
                prop_assert!(pos(pair[0]) < pos(pair[1]), "equal weights keep input order");
            }
        }
    }

    /// Order priority: by level, then by the trailing number, descending.
    #[test]
    fn order_priority_sorts_by_level_then_order(
        (pods, indexes) in pods_and_indexes(), strategy in order_strategy(),
    ) {
        let refs: Vec<&Labels> = pods.iter().collect();
        let out = priority_sort(&strategy, &refs, indexes.clone());
        prop_assert_eq!(sorted(out.clone()), sorted(indexes.clone()));
        for pair in out.windows(2) {
            let (l0, o0) = priority_order(&strategy, &pods[pair[0]]);
            let (l1, o1) = priority_order(&strategy, &pods[pair[1]]);
            prop_assert!(l0 < l1 || (l0 == l1 && o0 >= o1));
        }
    }

    /// Scatter: a deterministic permutation, even for repeated or out-of-range indexes.
    #[test]
    fn scatter_is_a_deterministic_permutation(
        pods in pods_strategy(),
        strategy in scatter_strategy(),
        indexes in proptest::collection::vec(0usize..30, 0..30),
    ) {
        let refs: Vec<&Labels> = pods.iter().collect();
        let out = scatter_sort(&strategy, &refs, indexes.clone());
        prop_assert_eq!(sorted(out.clone()), sorted(indexes.clone()));
        prop_assert_eq!(out, scatter_sort(&strategy, &refs, indexes));
    }

    /// Scatter spreads labelled pods: when every pod is to be updated and there are at least
    /// two labelled and two unlabelled pods, a labelled pod comes first, another comes last,
    /// and unlabelled pods come between them; with no more labelled than unlabelled pods, no
    /// two labelled pods are adjacent before the last stretch.
    #[test]
    fn scatter_spreads_labelled_pods(labelled in proptest::collection::vec(any::<bool>(), 4..40)) {
        let m = labelled.iter().filter(|&&l| l).count();
        let u = labelled.len() - m;
        prop_assume!(m >= 2 && u >= 2);
        let pods: Vec<Labels> = labelled
            .iter()
            .map(|&l| if l { [("a".to_owned(), "1".to_owned())].into() } else { Labels::new() })
            .collect();
        let refs: Vec<&Labels> = pods.iter().collect();
        let term = [UpdateScatterTerm { key: "a".into(), value: "1".into() }];
        let out = scatter_sort(&term, &refs, (0..pods.len()).collect());
        let is_labelled = |i: usize| labelled[i];
        prop_assert!(is_labelled(out[0]), "{:?}", out);
        prop_assert!(is_labelled(out[out.len() - 1]), "{:?}", out);
        prop_assert!(out.iter().any(|&i| !is_labelled(i)));
        // Before the first two labelled pods, at least one unlabelled pod separates them.
        let positions: Vec<usize> =
            out.iter().enumerate().filter(|(_, i)| is_labelled(**i)).map(|(p, _)| p).collect();
        if m <= u {
            prop_assert!(positions[1] > positions[0] + 1, "{:?}", out);
        }
    }
}

/// A scatter strategy that may also name an empty value (a missing label then matches).
fn scatter_with_empty_strategy() -> impl Strategy<Value = Vec<UpdateScatterTerm>> {
    proptest::collection::vec(
        (prop_oneof![Just("a"), Just("b"), Just("c")], prop_oneof![Just("1"), Just("2"), Just("")])
            .prop_map(|(k, v)| UpdateScatterTerm { key: k.to_owned(), value: v.to_owned() }),
        0..4,
    )
}

/// One table filled row by row with [`OrderLabels::push_row`] and one with
/// [`OrderLabels::push_row_for`] (priorities and scatter matches worked out as rows go in).
fn tables<'a>(order: &UpdateOrder<'_>, pods: &'a [Labels]) -> (OrderLabels<'a>, OrderLabels<'a>) {
    let mut plain = OrderLabels::with_capacity(order, pods.len());
    let mut keyed = OrderLabels::with_capacity(order, pods.len());
    for labels in pods {
        let row: Vec<Option<&str>> =
            order.keys().iter().map(|k| labels.get(*k).map(String::as_str)).collect();
        plain.push_row(row.iter().copied());
        keyed.push_row_for(order, row.iter().copied());
    }
    (plain, keyed)
}

proptest! {
    /// Precomputed priorities and scatter matches give the same keys and orders as reading the
    /// label values each time.
    #[test]
    fn precomputed_rows_order_as_plain_rows(
        (pods, indexes) in pods_and_indexes(),
        weights in weight_strategy(),
        orders in order_strategy(),
        use_weights in any::<bool>(),
        scatter in scatter_with_empty_strategy(),
    ) {
        let priority = if use_weights { weights } else { orders };
        let order = UpdateOrder::new(Some(&priority), &scatter);
        let (plain, keyed) = tables(&order, &pods);
        for i in 0..pods.len() {
            prop_assert_eq!(order.priority_key_of(&keyed, i), order.priority_key(plain.row(i)));
            prop_assert_eq!(order.priority_key_of(&plain, i), order.priority_key(plain.row(i)));
        }
        prop_assert_eq!(
            order.scatter(&keyed, indexes.clone()),
            order.scatter(&plain, indexes.clone())
        );
        let refs: Vec<&Labels> = pods.iter().collect();
        prop_assert_eq!(order.scatter(&plain, indexes.clone()), scatter_sort(&scatter, &refs, indexes));
    }

    /// Packed priority keys sort as the keys do.
    #[test]
    fn packed_priority_keys_sort_as_keys(
        (pods, _) in pods_and_indexes(),
        weights in weight_strategy(),
        orders in order_strategy(),
    ) {
        for priority in [weights, orders] {
            let order = UpdateOrder::new(Some(&priority), &[]);
            let (plain, _) = tables(&order, &pods);
            for i in 0..pods.len() {
                for j in 0..pods.len() {
                    let (a, b) = (order.priority_key(plain.row(i)), order.priority_key(plain.row(j)));
                    prop_assert_eq!(a.packed().cmp(&b.packed()), a.cmp(&b));
                }
            }
        }
    }
}
