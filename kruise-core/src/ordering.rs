//! The order in which a workload updates its pods.
//!
//! Sorters work on **indexes** into a slice of pods (or of their label maps) and return the
//! same indexes reordered, so planners can keep their own pod list and look results up by
//! position. Every sorter returns a permutation of its input, is deterministic, and is stable
//! where upstream is stable.
//!
//! - [`priority_sort`]: `updateStrategy.priorityStrategy` (weight or order priorities).
//! - [`scatter_sort`]: `updateStrategy.scatterStrategy` (spread labelled pods out).
//! - [`sort_cloneset_update_indexes`]: CloneSet's full update order (default order, then
//!   priority, then scatter, then pods already in `PreparingUpdate` first).
//! - [`UpdateOrder`] and [`OrderLabels`]: the same priority and scatter orders for planners
//!   that sort many pods, with the strategy compiled once and each pod's labels read once.
//!
//! Indexes past the end of the label slice are tolerated: such pods are treated as having no
//! labels and are not counted among all pods. Repeated indexes are kept (the output is still a
//! permutation of the input), although the resulting order is then not meaningful.

use std::cmp::Reverse;
use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::Pod;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector;
use kruise_api::apps::common::{
    UpdatePriorityOrderTerm, UpdatePriorityStrategy, UpdatePriorityWeightTerm, UpdateScatterTerm,
};
use kruise_api::apps::v1beta1::CloneSetUpdateStrategy;
use kruise_api::well_known::{labels, lifecycle};

use crate::pod::{ActiveRank, labels_of, name_of, short_eq};

static NO_LABELS: BTreeMap<String, String> = BTreeMap::new();

fn labels_at<'a>(
    pod_labels: &[&'a BTreeMap<String, String>],
    i: usize,
) -> &'a BTreeMap<String, String> {
    pod_labels.get(i).copied().unwrap_or(&NO_LABELS)
}

// ---------------------------------------------------------------------------------------------
// Compiled strategies
// ---------------------------------------------------------------------------------------------

/// A priority and scatter strategy compiled against the few label keys it reads.
///
/// Each distinct key gets a slot ([`UpdateOrder::keys`]); a planner reads every pod's values
/// for those keys once into an [`OrderLabels`] table and then computes priorities
/// ([`UpdateOrder::priority_key`]) and scatter orders ([`UpdateOrder::scatter`]) from the
/// table, without touching label maps again. Results are exactly those of [`priority_sort`]
/// and [`scatter_sort`].
#[derive(Clone, Debug, Default)]
pub struct UpdateOrder<'s> {
    keys: Vec<&'s str>,
    priority: Priority<'s>,
    scatter: Vec<ScatterTerm<'s>>,
}

#[derive(Clone, Debug, Default)]
enum Priority<'s> {
    #[default]
    None,
    Weight(Vec<WeightTerm<'s>>),
    /// The slot of each term's `orderedKey`, in strategy order.
    Order(Vec<usize>),
}

#[derive(Clone, Debug)]
struct WeightTerm<'s> {
    weight: i64,
    /// `None` when the selector has an invalid operator: the term never matches.
    requirements: Option<Vec<Requirement<'s>>>,
}

#[derive(Clone, Debug)]
enum Requirement<'s> {
    Equals(usize, &'s str),
    In(usize, &'s [String]),
    NotIn(usize, &'s [String]),
    Exists(usize),
    DoesNotExist(usize),
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct ScatterTerm<'s> {
    slot: usize,
    value: &'s str,
}

impl ScatterTerm<'_> {
    /// Upstream's scatter match: a plain map lookup, so a missing label reads as "".
    fn matches(&self, value: Option<&str>) -> bool {
        short_eq(value.unwrap_or("").as_bytes(), self.value.as_bytes())
    }
}

/// Where a pod goes under a priority strategy; smaller keys are updated first.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct PriorityKey(i64, Reverse<i64>);

impl PriorityKey {
    /// The key as one integer that sorts the same way.
    pub fn packed(self) -> u128 {
        let PriorityKey(level, Reverse(weight)) = self;
        // Flipping the sign bit orders i64 as u64; complementing reverses the order.
        let level = (level as u64) ^ (1 << 63);
        let weight = !((weight as u64) ^ (1 << 63));
        (u128::from(level) << 64) | u128::from(weight)
    }
}

impl<'s> UpdateOrder<'s> {
    /// Compiles `priority` (weight terms when there are any, else order terms) and `scatter`.
    pub fn new(
        priority: Option<&'s UpdatePriorityStrategy>,
        scatter: &'s [UpdateScatterTerm],
    ) -> Self {
        let (weights, orders) = match priority {
            Some(p) => (&p.weight_priority[..], &p.order_priority[..]),
            None => (&[][..], &[][..]),
        };
        Self::compile(weights, orders, scatter)
    }

    fn compile(
        weights: &'s [UpdatePriorityWeightTerm],
        orders: &'s [UpdatePriorityOrderTerm],
        scatter: &'s [UpdateScatterTerm],
    ) -> Self {
        let mut keys: Vec<&'s str> = Vec::new();
        let mut slot = |key: &'s str| match keys.iter().position(|k| *k == key) {
            Some(slot) => slot,
            None => {
                keys.push(key);
                keys.len() - 1
            }
        };
        let priority = if !weights.is_empty() {
            Priority::Weight(
                weights
                    .iter()
                    .map(|term| WeightTerm {
                        weight: i64::from(term.weight),
                        requirements: compile_selector(&term.match_selector, &mut slot),
                    })
                    .collect(),
            )
        } else if !orders.is_empty() {
            Priority::Order(orders.iter().map(|term| slot(&term.ordered_key)).collect())
        } else {
            Priority::None
        };
        let scatter = scatter
            .iter()
            .map(|term| ScatterTerm { slot: slot(&term.key), value: &term.value })
            .collect();
        UpdateOrder { keys, priority, scatter }
    }

    /// The label keys the strategy reads, in slot order.
    pub fn keys(&self) -> &[&'s str] {
        &self.keys
    }

    /// Whether the strategy orders pods by priority at all.
    pub fn has_priority(&self) -> bool {
        !matches!(self.priority, Priority::None)
    }

    /// Whether the strategy has scatter terms.
    pub fn has_scatter(&self) -> bool {
        !self.scatter.is_empty()
    }

    /// The priority of a pod whose values for [`UpdateOrder::keys`] are `row`
    /// (see [`OrderLabels::row`]): with weight terms, the heavier first; with order terms, by
    /// level then higher order first (as [`priority_order`]); otherwise all equal.
    pub fn priority_key(&self, row: &[Option<&str>]) -> PriorityKey {
        match &self.priority {
            Priority::None => PriorityKey(0, Reverse(0)),
            Priority::Weight(terms) => PriorityKey(0, Reverse(weight_of(terms, row))),
            Priority::Order(slots) => {
                let (level, order) = order_of(slots, row);
                PriorityKey(level, Reverse(order))
            }
        }
    }

    /// [`UpdateOrder::priority_key`] of row `pod` of `labels`, precomputed when the row was
    /// pushed with [`OrderLabels::push_row_for`].
    pub fn priority_key_of(&self, labels: &OrderLabels<'_>, pod: usize) -> PriorityKey {
        match labels.keys_of(pod) {
            Some((key, _)) => key,
            None => self.priority_key(labels.row(pod)),
        }
    }

    /// [`scatter_sort`] over the pods of `labels` (all of them count as "all pods").
    pub fn scatter(&self, labels: &OrderLabels<'_>, mut indexes: Vec<usize>) -> Vec<usize> {
        if self.scatter.is_empty() || indexes.len() <= 1 {
            return indexes;
        }
        for term in self.scatter_term_order(labels, &indexes) {
            indexes = scatter_by(term, self.scatter[term], labels, indexes);
        }
        indexes
    }

    /// Positions in the scatter strategy of the terms [`UpdateOrder::scatter`] applies, in the
    /// order it applies them (see [`scatter_terms`]).
    fn scatter_term_order(&self, labels: &OrderLabels<'_>, indexes: &[usize]) -> Vec<usize> {
        if self.scatter.len() == 1 {
            return vec![0];
        }
        let mut terms: Vec<(usize, usize)> = Vec::new();
        for (t, term) in self.scatter.iter().enumerate() {
            // A missing label counts here only for [`scatter_by`], so the precomputed matches
            // (which follow its rule) serve only terms with a value.
            let count = if term.value.is_empty() {
                indexes.iter().filter(|&&i| labels.value(i, term.slot) == Some(term.value)).count()
            } else {
                indexes.iter().filter(|&&i| labels.scatter_matches(t, *term, i)).count()
            };
            if count == 0 {
                continue;
            }
            match terms.iter_mut().find(|(_, u)| self.scatter[*u] == *term) {
                Some((existing, _)) => *existing += count,
                None => terms.push((count, t)),
            }
        }
        terms.sort_by_key(|(count, _)| Reverse(*count));
        terms.into_iter().map(|(_, t)| t).collect()
    }
}

/// Compiles a selector against key slots as [`crate::pod::selector_matches`] evaluates it;
/// `None` when an operator is invalid.
fn compile_selector<'s>(
    selector: &'s LabelSelector,
    slot: &mut impl FnMut(&'s str) -> usize,
) -> Option<Vec<Requirement<'s>>> {
    let expressions = selector.match_expressions.as_deref().unwrap_or_default();
    if expressions
        .iter()
        .any(|e| !matches!(e.operator.as_str(), "In" | "NotIn" | "Exists" | "DoesNotExist"))
    {
        return None;
    }
    let mut requirements: Vec<Requirement<'s>> = selector
        .match_labels
        .iter()
        .flatten()
        .map(|(k, v)| Requirement::Equals(slot(k), v.as_str()))
        .collect();
    for e in expressions {
        let key = slot(&e.key);
        let values = e.values.as_deref().unwrap_or_default();
        requirements.push(match e.operator.as_str() {
            "In" => Requirement::In(key, values),
            "NotIn" => Requirement::NotIn(key, values),
            "Exists" => Requirement::Exists(key),
            _ => Requirement::DoesNotExist(key),
        });
    }
    Some(requirements)
}

fn row_value<'a>(row: &[Option<&'a str>], slot: usize) -> Option<&'a str> {
    row.get(slot).copied().flatten()
}

fn weight_of(terms: &[WeightTerm<'_>], row: &[Option<&str>]) -> i64 {
    let holds = |r: &Requirement<'_>| match *r {
        Requirement::Equals(slot, value) => {
            row_value(row, slot).is_some_and(|v| short_eq(v.as_bytes(), value.as_bytes()))
        }
        Requirement::In(slot, values) => row_value(row, slot)
            .is_some_and(|v| values.iter().any(|x| short_eq(x.as_bytes(), v.as_bytes()))),
        Requirement::NotIn(slot, values) => row_value(row, slot)
            .is_none_or(|v| !values.iter().any(|x| short_eq(x.as_bytes(), v.as_bytes()))),
        Requirement::Exists(slot) => row_value(row, slot).is_some(),
        Requirement::DoesNotExist(slot) => row_value(row, slot).is_none(),
    };
    terms
        .iter()
        .filter(|t| t.requirements.as_ref().is_some_and(|reqs| reqs.iter().all(holds)))
        .map(|t| t.weight)
        .sum()
}

fn order_of(slots: &[usize], row: &[Option<&str>]) -> (i64, i64) {
    for (level, &slot) in slots.iter().enumerate() {
        if let Some(value) = row_value(row, slot) {
            let level = i64::try_from(level).unwrap_or(i64::MAX);
            return (level, trailing_integer(value));
        }
    }
    (-1, 0)
}

/// Each pod's values for the keys of an [`UpdateOrder`], one row per pod, filled once.
#[derive(Clone, Debug, Default)]
pub struct OrderLabels<'a> {
    width: usize,
    pods: usize,
    values: Vec<Option<&'a str>>,
    /// Per row, when every row was pushed with [`OrderLabels::push_row_for`]: its priority
    /// and which of the first 64 scatter terms it matches (bit `t` for term `t`).
    keys: Vec<(PriorityKey, u64)>,
}

impl<'a> OrderLabels<'a> {
    /// An empty table for `order`, with room for `pods` rows.
    pub fn with_capacity(order: &UpdateOrder<'_>, pods: usize) -> Self {
        let width = order.keys.len();
        OrderLabels {
            width,
            pods: 0,
            values: Vec::with_capacity(width * pods),
            keys: Vec::with_capacity(pods),
        }
    }

    /// Appends the row of a pod with `labels` (`None`: no labels), reading each label once.
    pub fn push(&mut self, order: &UpdateOrder<'_>, labels: Option<&'a BTreeMap<String, String>>) {
        self.pods += 1;
        if self.width == 0 {
            return;
        }
        let start = self.values.len();
        self.values.resize(start + self.width, None);
        let (Some(labels), Some(row)) = (labels, self.values.get_mut(start..)) else {
            return;
        };
        let mut found = 0;
        for (key, value) in labels {
            // Comparing lengths first skips almost every key without reading its bytes.
            if let Some(slot) =
                order.keys.iter().position(|k| k.len() == key.len() && *k == key.as_str())
                && let Some(cell) = row.get_mut(slot)
            {
                *cell = Some(value.as_str());
                found += 1;
                if found == self.width {
                    break;
                }
            }
        }
    }

    /// Appends a row whose values the caller has read: `row` yields the value of each of the
    /// order's keys in slot order (missing entries read as absent labels, extra ones are
    /// ignored).
    pub fn push_row(&mut self, row: impl IntoIterator<Item = Option<&'a str>>) {
        self.pods += 1;
        let start = self.values.len();
        self.values.extend(row.into_iter().take(self.width));
        self.values.resize(start + self.width, None);
    }

    /// [`OrderLabels::push_row`], also working out the row's priority and scatter matches
    /// for `order` while its values are at hand, so that sorting and scattering later compare
    /// integers instead of reading every pod's label values again. Use it for every row or
    /// for none.
    pub fn push_row_for(
        &mut self,
        order: &UpdateOrder<'_>,
        row: impl IntoIterator<Item = Option<&'a str>>,
    ) {
        self.push_row(row);
        let row = self.row(self.pods - 1);
        let mut scatter = 0u64;
        for (t, term) in order.scatter.iter().enumerate().take(64) {
            if term.matches(row_value(row, term.slot)) {
                scatter |= 1 << t;
            }
        }
        let key = order.priority_key(row);
        self.keys.push((key, scatter));
    }

    /// The precomputed priority and scatter matches of `pod`, if every row has them.
    fn keys_of(&self, pod: usize) -> Option<(PriorityKey, u64)> {
        if self.keys.len() == self.pods { self.keys.get(pod).copied() } else { None }
    }

    /// Whether `pod` matches scatter term `t` of `order` by [`scatter_by`]'s rule (a missing
    /// label reads as "").
    fn scatter_matches(&self, t: usize, term: ScatterTerm<'_>, pod: usize) -> bool {
        match self.keys_of(pod) {
            Some((_, mask)) if t < 64 => mask & (1 << t) != 0,
            _ => term.matches(self.value(pod, term.slot)),
        }
    }

    /// The number of pods (rows).
    pub fn len(&self) -> usize {
        self.pods
    }

    /// Whether the table has no rows.
    pub fn is_empty(&self) -> bool {
        self.pods == 0
    }

    /// The values of pod `pod`, in slot order (all `None` past the last row).
    pub fn row(&self, pod: usize) -> &[Option<&'a str>] {
        let start = pod.saturating_mul(self.width);
        self.values.get(start..start.saturating_add(self.width)).unwrap_or_default()
    }

    fn value(&self, pod: usize, slot: usize) -> Option<&'a str> {
        row_value(self.row(pod), slot)
    }
}

// ---------------------------------------------------------------------------------------------
// Priority
// ---------------------------------------------------------------------------------------------

/// The summed `weight` of every weight-priority term whose selector matches `labels`.
/// Terms with invalid selectors are skipped, as upstream does.
pub fn priority_weight(
    strategy: &UpdatePriorityStrategy,
    labels: &BTreeMap<String, String>,
) -> i64 {
    let order = UpdateOrder::compile(&strategy.weight_priority, &[], &[]);
    let mut table = OrderLabels::with_capacity(&order, 1);
    table.push(&order, Some(labels));
    match &order.priority {
        Priority::Weight(terms) => weight_of(terms, table.row(0)),
        _ => 0,
    }
}

/// The `(level, order)` of `labels` under order priorities: `level` is the position of the
/// first `orderedKey` the pod has (-1 when it has none) and `order` the integer formed by the
/// trailing digits of that label's value (`"o-10"` gives 10; no digits or overflow gives 0).
pub fn priority_order(
    strategy: &UpdatePriorityStrategy,
    labels: &BTreeMap<String, String>,
) -> (i64, i64) {
    let order = UpdateOrder::compile(&[], &strategy.order_priority, &[]);
    let mut table = OrderLabels::with_capacity(&order, 1);
    table.push(&order, Some(labels));
    match &order.priority {
        Priority::Order(slots) => order_of(slots, table.row(0)),
        _ => (-1, 0),
    }
}

fn trailing_integer(value: &str) -> i64 {
    let digits = value.len() - value.bytes().rev().take_while(u8::is_ascii_digit).count();
    value[digits..].parse::<i64>().unwrap_or(0)
}

/// Reorders `indexes` by `strategy`, stably:
///
/// - with weight priorities, higher summed weight first (order priorities are then ignored);
/// - otherwise, with order priorities, lower level first — note that upstream gives pods with
///   none of the keys level -1, so they come **before** pods with the first key — then higher
///   order first;
/// - with neither, `indexes` is returned unchanged.
///
/// `pod_labels[i]` holds the labels of the pod at index `i`.
pub fn priority_sort(
    strategy: &UpdatePriorityStrategy,
    pod_labels: &[&BTreeMap<String, String>],
    indexes: Vec<usize>,
) -> Vec<usize> {
    let order = UpdateOrder::new(Some(strategy), &[]);
    if !order.has_priority() {
        return indexes;
    }
    // Compute each key once; sort_by_cached_key is not stable, so sort pairs stably.
    let mut table = OrderLabels::with_capacity(&order, indexes.len());
    for &i in &indexes {
        table.push(&order, Some(labels_at(pod_labels, i)));
    }
    let mut keyed: Vec<(PriorityKey, usize)> = indexes
        .iter()
        .enumerate()
        .map(|(pos, &i)| (order.priority_key(table.row(pos)), i))
        .collect();
    keyed.sort_by_key(|&(key, _)| key);
    keyed.into_iter().map(|(_, i)| i).collect()
}

// ---------------------------------------------------------------------------------------------
// Scatter
// ---------------------------------------------------------------------------------------------

fn table_of<'a>(
    order: &UpdateOrder<'_>,
    pod_labels: &[&'a BTreeMap<String, String>],
) -> OrderLabels<'a> {
    let mut table = OrderLabels::with_capacity(order, pod_labels.len());
    for labels in pod_labels {
        table.push(order, Some(labels));
    }
    table
}

/// Reorders `indexes` so that pods carrying each scatter term's label are spread across the
/// update rather than updated back to back, exactly as upstream's scatter sorter does.
///
/// With several terms, only terms some pod in `indexes` carries are used, those carried by
/// more pods first (ties in strategy order); each is applied in turn. For one term, the pods in
/// `indexes` are split into matching and non-matching; when each side has at least two, the
/// last matching pod is moved to the very end and the rest are interleaved in groups sized
/// from the ratio of matching to non-matching pods among **all** pods (`pod_labels`), so the
/// labelled pods are updated evenly over the whole rollout.
pub fn scatter_sort(
    strategy: &[UpdateScatterTerm],
    pod_labels: &[&BTreeMap<String, String>],
    indexes: Vec<usize>,
) -> Vec<usize> {
    if strategy.is_empty() || indexes.len() <= 1 {
        return indexes;
    }
    let order = UpdateOrder::new(None, strategy);
    order.scatter(&table_of(&order, pod_labels), indexes)
}

/// The terms [`scatter_sort`] applies, in the order it applies them.
pub fn scatter_terms(
    strategy: &[UpdateScatterTerm],
    pod_labels: &[&BTreeMap<String, String>],
    indexes: &[usize],
) -> Vec<UpdateScatterTerm> {
    let order = UpdateOrder::new(None, strategy);
    let table =
        if strategy.len() == 1 { OrderLabels::default() } else { table_of(&order, pod_labels) };
    order
        .scatter_term_order(&table, indexes)
        .into_iter()
        .filter_map(|t| strategy.get(t).cloned())
        .collect()
}

#[cfg(test)]
fn scatter_by_term(
    term: &UpdateScatterTerm,
    pod_labels: &[&BTreeMap<String, String>],
    indexes: Vec<usize>,
) -> Vec<usize> {
    let order = UpdateOrder::new(None, std::slice::from_ref(term));
    match order.scatter.first() {
        Some(&t) => scatter_by(0, t, &table_of(&order, pod_labels), indexes),
        None => indexes,
    }
}

/// Scatters `indexes` by `term`, the `t`-th of its strategy.
fn scatter_by(
    t: usize,
    term: ScatterTerm<'_>,
    labels: &OrderLabels<'_>,
    indexes: Vec<usize>,
) -> Vec<usize> {
    // Upstream compares with a plain map lookup here, so a missing key reads as "".
    let matches = |i: usize| labels.scatter_matches(t, term, i);
    let (mut matched, mut unmatched): (Vec<usize>, Vec<usize>) =
        indexes.iter().partition(|&&i| matches(i));
    if matched.len() <= 1 || unmatched.len() <= 1 {
        return indexes;
    }
    let total_matched = (0..labels.len()).filter(|&i| matches(i)).count();
    let total_unmatched = labels.len() - total_matched;
    // The last matching pod goes to the very end.
    let Some(last) = matched.pop() else {
        return indexes;
    };
    let total_matched = total_matched.saturating_sub(1);

    let group = group_by_density(total_matched, total_unmatched, matched.len(), unmatched.len());
    let mut out = Vec::with_capacity(indexes.len());
    let remainder = group.unmatched_remainder.min(unmatched.len());
    out.extend(unmatched.drain(..remainder));
    let mut matched = matched.into_iter().peekable();
    let mut unmatched = unmatched.into_iter().peekable();
    for _ in 0..group.count {
        if matched.peek().is_none() && unmatched.peek().is_none() {
            break;
        }
        out.extend(matched.by_ref().take(group.matched_size));
        out.extend(unmatched.by_ref().take(group.unmatched_size));
    }
    out.extend(matched);
    out.extend(unmatched);
    out.push(last);
    out
}

#[derive(Debug, Default, PartialEq)]
struct ScatterGroup {
    count: usize,
    matched_size: usize,
    unmatched_size: usize,
    unmatched_remainder: usize,
}

fn even_groups(matched: usize, unmatched: usize) -> ScatterGroup {
    let count = matched.min(unmatched);
    if count == 0 {
        return ScatterGroup::default();
    }
    // Round half away from zero, as Go's math.Round does.
    let size = |n: usize| (n as f64 / count as f64).round() as usize;
    ScatterGroup {
        count,
        matched_size: size(matched),
        unmatched_size: size(unmatched),
        unmatched_remainder: 0,
    }
}

fn group_by_density(
    total_matched: usize,
    total_unmatched: usize,
    update_matched: usize,
    update_unmatched: usize,
) -> ScatterGroup {
    let total = even_groups(total_matched, total_unmatched);
    let update = even_groups(update_matched, update_unmatched);
    // Upstream compares these ratios in single precision.
    let total_ratio = total_unmatched as f32 / total_matched as f32;
    let update_ratio = update_unmatched as f32 / update_matched as f32;
    if total_ratio >= update_ratio {
        return update;
    }
    // The pods to update are denser in unmatched pods than the whole set: use the whole set's
    // group sizes, and put the unmatched pods that do not fit first.
    let (Some(by_matched), Some(by_unmatched)) = (
        update_matched.checked_div(total.matched_size),
        update_unmatched.checked_div(total.unmatched_size),
    ) else {
        return update;
    };
    let count = by_matched.min(by_unmatched);
    ScatterGroup {
        count,
        matched_size: total.matched_size,
        unmatched_size: total.unmatched_size,
        unmatched_remainder: update_unmatched.saturating_sub(count * total.unmatched_size),
    }
}

// ---------------------------------------------------------------------------------------------
// CloneSet
// ---------------------------------------------------------------------------------------------

/// CloneSet's update order for the pods at `indexes` (upstream's `SortUpdateIndexes`):
///
/// 1. Kubernetes' active-pods order ([`crate::pod::compare_active`]: unscheduled, pending, not
///    ready, ready for less time, more restarts, newer first; ties by name);
/// 2. then, with a rolling update, [`priority_sort`] when a priority strategy is set and
///    [`scatter_sort`] with the scatter strategy;
/// 3. finally, stably, pods whose lifecycle state is `PreparingUpdate` first.
pub fn sort_cloneset_update_indexes(
    strategy: &CloneSetUpdateStrategy,
    pods: &[Pod],
    indexes: Vec<usize>,
) -> Vec<usize> {
    // Out-of-range indexes go last, in their input order; the sort is stable.
    // (out of range, active-pods key, index)
    type Keyed<'p> = (bool, Option<(ActiveRank, &'p str)>, usize);
    let mut keyed: Vec<Keyed<'_>> = indexes
        .iter()
        .map(|&i| {
            let key = pods.get(i).map(|p| (ActiveRank::of_pod(p), name_of(p)));
            (key.is_none(), key, i)
        })
        .collect();
    keyed.sort_by(|a, b| (a.0, a.1).cmp(&(b.0, b.1)));
    let mut indexes: Vec<usize> = keyed.into_iter().map(|(_, _, i)| i).collect();

    let pod_labels: Vec<&BTreeMap<String, String>> = pods.iter().map(labels_of).collect();
    if let Some(rolling) = &strategy.rolling_update {
        if let Some(priority) = &rolling.priority_strategy {
            indexes = priority_sort(priority, &pod_labels, indexes);
        }
        indexes = scatter_sort(&rolling.scatter_strategy, &pod_labels, indexes);
    }

    let preparing_update = |i: usize| {
        labels_at(&pod_labels, i).get(labels::LIFECYCLE_STATE).map(String::as_str)
            == Some(lifecycle::PREPARING_UPDATE)
    };
    preparing_update_first(indexes, preparing_update)
}

/// Moves the indexes for which `preparing_update` holds to the front, keeping the order within
/// both groups (a stable partition).
pub fn preparing_update_first(
    indexes: Vec<usize>,
    preparing_update: impl Fn(usize) -> bool,
) -> Vec<usize> {
    let (mut first, rest): (Vec<usize>, Vec<usize>) =
        indexes.into_iter().partition(|&i| preparing_update(i));
    first.extend(rest);
    first
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::{LabelSelector, ObjectMeta};
    use kruise_api::apps::common::{UpdatePriorityOrderTerm, UpdatePriorityWeightTerm};

    fn map(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
        pairs.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect()
    }

    fn weights(terms: &[(i32, &[(&str, &str)])]) -> UpdatePriorityStrategy {
        UpdatePriorityStrategy {
            weight_priority: terms
                .iter()
                .map(|(w, ml)| UpdatePriorityWeightTerm {
                    weight: *w,
                    match_selector: LabelSelector {
                        match_labels: Some(map(ml)),
                        ..Default::default()
                    },
                })
                .collect(),
            ..Default::default()
        }
    }

    fn orders(keys: &[&str]) -> UpdatePriorityStrategy {
        UpdatePriorityStrategy {
            order_priority: keys
                .iter()
                .map(|k| UpdatePriorityOrderTerm { ordered_key: k.to_string() })
                .collect(),
            ..Default::default()
        }
    }

    /// Whether `i` sorts strictly before `j` (upstream's compare with `defaultVal = false`).
    fn before(
        s: &UpdatePriorityStrategy,
        i: &BTreeMap<String, String>,
        j: &BTreeMap<String, String>,
    ) -> bool {
        let sorted = priority_sort(s, &[i, j], vec![1, 0]);
        sorted == vec![0, 1]
    }

    #[test]
    fn compare_table_from_upstream() {
        let w2 = weights(&[(20, &[("key", "foo")]), (10, &[("key", "bar")])]);
        let w3 = weights(&[
            (20, &[("key1", "foo")]),
            (10, &[("key2", "bar")]),
            (15, &[("key3", "baz")]),
        ]);
        let w3b =
            weights(&[(20, &[("key1", "foo")]), (10, &[("key2", "bar")]), (5, &[("key3", "baz")])]);
        let o = orders(&["key1", "key2"]);
        // (strategy, podI, podJ, podI strictly first, podJ strictly first)
        type Labels = BTreeMap<String, String>;
        type Case<'a> = (&'a UpdatePriorityStrategy, Labels, Labels, bool, bool);
        let cases: Vec<Case> = vec![
            (&w2, map(&[]), map(&[]), false, false),
            (&w2, map(&[("key", "foo")]), map(&[("key", "foo")]), false, false),
            (&w2, map(&[("key", "bar")]), map(&[("key", "foo")]), false, true),
            (&w2, map(&[]), map(&[("key", "bar")]), false, true),
            (&w3, map(&[("key1", "foo")]), map(&[("key2", "bar"), ("key3", "baz")]), false, true),
            (&w3b, map(&[("key2", "bar"), ("key3", "baz")]), map(&[("key1", "foo")]), false, true),
            (&o, map(&[]), map(&[]), false, false),
            (&o, map(&[("key1", "o-10")]), map(&[("key1", "o-5")]), true, false),
            (&o, map(&[("key1", "o-10")]), map(&[("key1", "o-10")]), false, false),
            (&o, map(&[("key1", "o-10")]), map(&[("key1", "o-20")]), false, true),
            (&o, map(&[("key2", "o-20")]), map(&[("key1", "o-10")]), false, true),
            (&o, map(&[("key2", "o-20")]), map(&[("key2", "o-10")]), true, false),
            // Upstream quirk: a pod with none of the ordered keys goes first.
            (&o, map(&[]), map(&[("key1", "o-10")]), true, false),
        ];
        for (n, (s, i, j, i_first, j_first)) in cases.iter().enumerate() {
            assert_eq!(before(s, i, j), *i_first, "case {n}: i before j");
            assert_eq!(before(s, j, i), *j_first, "case {n}: j before i");
        }
    }

    #[test]
    fn priority_sort_table_from_upstream() {
        let labels = [map(&[("hello", "world")]), map(&[]), map(&[("foo", "bar")]), map(&[])];
        let refs: Vec<&BTreeMap<String, String>> = labels.iter().collect();
        let empty = UpdatePriorityStrategy::default();
        assert_eq!(priority_sort(&empty, &refs, vec![0, 1, 2, 3]), vec![0, 1, 2, 3]);
        let s = weights(&[(100, &[("foo", "bar")]), (90, &[("hello", "world")])]);
        assert_eq!(priority_sort(&s, &refs, vec![0, 1, 2, 3]), vec![2, 0, 1, 3]);
        let none = weights(&[(100, &[("not", "match")]), (90, &[("not1", "match1")])]);
        assert_eq!(priority_sort(&none, &refs, vec![0, 1, 2, 3]), vec![0, 1, 2, 3]);
    }

    #[test]
    fn trailing_integers() {
        for (v, n) in [
            ("o-10", 10),
            ("10", 10),
            ("abc", 0),
            ("", 0),
            ("a1b2", 2),
            ("x99999999999999999999", 0),
            ("007", 7),
        ] {
            assert_eq!(trailing_integer(v), n, "{v}");
        }
    }

    #[test]
    fn weights_skip_invalid_selectors() {
        let mut s = weights(&[(10, &[("a", "1")]), (5, &[])]);
        s.weight_priority[1].match_selector.match_expressions =
            Some(vec![k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelectorRequirement {
                key: "a".into(),
                operator: "Bogus".into(),
                values: None,
            }]);
        assert_eq!(priority_weight(&s, &map(&[("a", "1")])), 10);
        let empty_selector = weights(&[(7, &[])]);
        assert_eq!(priority_weight(&empty_selector, &map(&[])), 7, "empty selector matches all");
    }

    fn term(k: &str, v: &str) -> UpdateScatterTerm {
        UpdateScatterTerm { key: k.into(), value: v.into() }
    }

    fn parse_labels(spec: &str) -> BTreeMap<String, String> {
        spec.split(',')
            .filter_map(|kv| kv.split_once('='))
            .map(|(k, v)| (k.to_owned(), v.to_owned()))
            .collect()
    }

    #[test]
    fn scatter_terms_table_from_upstream() {
        let a = [
            map(&[]),
            map(&[]),
            map(&[]),
            map(&[]),
            map(&[("labelA", "AAA")]),
            map(&[("labelA", "AAA")]),
        ];
        let refs: Vec<_> = a.iter().collect();
        let s = [term("labelA", "AAA")];
        assert_eq!(scatter_terms(&s, &refs, &[0, 1, 2, 3, 4, 5]), s.to_vec());

        let b = [
            map(&[]),
            map(&[]),
            map(&[("labelB", "B")]),
            map(&[("labelB", "BBB")]),
            map(&[("labelA", "AAA")]),
            map(&[("labelA", "AAA")]),
        ];
        let refs: Vec<_> = b.iter().collect();
        let s = [term("labelA", "AAA"), term("labelB", "BBB")];
        assert_eq!(scatter_terms(&s, &refs, &[0, 1, 2, 3, 4, 5]), s.to_vec());
    }

    #[test]
    fn scatter_by_rule_table_from_upstream() {
        let t = term("labelA", "AAA");
        let cases: &[(&[&str], &[usize])] = &[
            (&[""], &[0]),
            (&["labelA=AAA"], &[0]),
            (&["labelA=AAA", "bbb"], &[0, 1]),
            (&["", "", "", "", "labelA=AAA", "labelA=AAA"], &[4, 0, 1, 2, 3, 5]),
            (&["", "", "", "labelA=AAA", "labelA=AAA", "labelA=AAA"], &[3, 0, 1, 4, 2, 5]),
            (&["", "", "", "labelA=AAA", "", "", "labelA=AAA"], &[3, 0, 1, 2, 4, 5, 6]),
            (
                &["", "", "", "", "", "", "labelA=AAA", "labelA=AAA", "labelA=AAA"],
                &[6, 0, 1, 2, 7, 3, 4, 5, 8],
            ),
            (
                &["", "", "labelA=AAA", "labelA=AAA", "labelA=AAA", "labelA=AAA"],
                &[2, 3, 0, 4, 1, 5],
            ),
            (
                &["", "", "", "labelA=AAA", "labelA=AAA", "labelA=AAA", "labelA=AAA", "labelA=AAA"],
                &[3, 0, 1, 4, 2, 5],
            ),
            (
                &[
                    "",
                    "",
                    "labelA=AAA",
                    "",
                    "labelA=AAA",
                    "labelA=AAA",
                    "labelA=AAA",
                    "labelA=AAA",
                    "labelA=AAA",
                ],
                &[2, 4, 0, 5, 6, 1, 7, 3, 8],
            ),
            (
                &[
                    "",
                    "labelA=AAA",
                    "",
                    "labelA=AAA",
                    "",
                    "",
                    "labelA=AAA",
                    "labelA=AAA",
                    "labelA=AAA",
                ],
                &[1, 0, 3, 2, 6, 4, 7, 5, 8],
            ),
            (
                &[
                    "",
                    "",
                    "",
                    "",
                    "ee",
                    "a",
                    "",
                    "labelA=AAA",
                    "labelA=AAA",
                    "labelA=AAA,labelB=BBB",
                ],
                &[7, 0, 1, 2, 3, 8, 4, 5, 6, 9],
            ),
        ];
        for (n, (specs, expected)) in cases.iter().enumerate() {
            // Upstream builds as many pods as expected indexes, from the first label specs.
            let labels: Vec<_> =
                specs.iter().take(expected.len()).map(|s| parse_labels(s)).collect();
            let refs: Vec<_> = labels.iter().collect();
            let indexes: Vec<usize> = (0..labels.len()).collect();
            assert_eq!(scatter_by_term(&t, &refs, indexes), expected.to_vec(), "case {n}");
        }
    }

    #[test]
    fn scatter_sort_table_from_upstream() {
        fn a(v: &'static str) -> (&'static str, &'static str) {
            ("labelA", v)
        }
        fn b(v: &'static str) -> (&'static str, &'static str) {
            ("labelB", v)
        }
        fn c(v: &'static str) -> (&'static str, &'static str) {
            ("labelC", v)
        }
        let ab = [term("labelA", "AAA"), term("labelB", "BBB")];
        let ba = [term("labelB", "BBB"), term("labelA", "AAA")];
        let abc = [term("labelA", "AAA"), term("labelB", "BBB"), term("labelC", "CCC")];
        type Case<'a> = (&'a [UpdateScatterTerm], Vec<Vec<(&'a str, &'a str)>>, Vec<usize>);
        let cases: Vec<Case> = vec![
            (&ab[..1], vec![vec![a("AAA"), b("BBB")]], vec![0]),
            (&[], vec![vec![]; 6], vec![0, 1, 2, 3, 4, 5]),
            (
                &ab[..1],
                vec![vec![], vec![], vec![], vec![], vec![a("AAA")], vec![a("AAA")]],
                vec![4, 0, 1, 2, 3, 5],
            ),
            (
                &ba[..1],
                vec![
                    vec![],
                    vec![],
                    vec![],
                    vec![],
                    vec![("sdfb", "eee")],
                    vec![("dsf", "same")],
                    vec![b("BBB")],
                    vec![a("AAA")],
                    vec![a("AAA")],
                    vec![a("AAA"), b("BBB")],
                ],
                vec![6, 0, 1, 2, 3, 4, 5, 7, 8, 9],
            ),
            (
                &ab,
                vec![
                    vec![b("BBB")],
                    vec![b("BBB")],
                    vec![],
                    vec![],
                    vec![a("AAA")],
                    vec![a("AAA")],
                ],
                vec![0, 4, 2, 3, 5, 1],
            ),
            (
                &ab,
                vec![
                    vec![],
                    vec![],
                    vec![],
                    vec![b("BBB")],
                    vec![a("AAA"), b("BBB")],
                    vec![a("AAA")],
                ],
                vec![4, 0, 1, 2, 5, 3],
            ),
            (
                &ba,
                vec![
                    vec![],
                    vec![],
                    vec![],
                    vec![],
                    vec![("sdfb", "eee")],
                    vec![("dsf", "same")],
                    vec![b("BBB")],
                    vec![a("AAA")],
                    vec![a("AAA")],
                    vec![b("BBB")],
                ],
                vec![7, 6, 0, 1, 2, 3, 4, 5, 9, 8],
            ),
            (
                &ab,
                vec![
                    vec![],
                    vec![],
                    vec![],
                    vec![],
                    vec![("sdfb", "eee")],
                    vec![("dsf", "same")],
                    vec![b("BBB")],
                    vec![a("AAA")],
                    vec![a("AAA")],
                    vec![b("BBB")],
                ],
                vec![6, 7, 0, 1, 2, 3, 4, 5, 8, 9],
            ),
            (
                &ab,
                vec![
                    vec![],
                    vec![],
                    vec![],
                    vec![],
                    vec![("sdfb", "eee")],
                    vec![("dsf", "same")],
                    vec![a("AAA"), b("BBB")],
                    vec![],
                    vec![],
                    vec![b("BBB"), a("AAA")],
                ],
                vec![6, 0, 1, 2, 3, 4, 5, 7, 8, 9],
            ),
            (
                &ab,
                vec![
                    vec![],
                    vec![],
                    vec![],
                    vec![("sdfb", "eee")],
                    vec![("dsf", "same")],
                    vec![a("AAA"), b("BBB")],
                    vec![],
                    vec![],
                    vec![b("BBB"), a("AAA")],
                ],
                vec![5, 0, 1, 2, 3, 4, 6, 7, 8],
            ),
            (
                &ab,
                vec![
                    vec![],
                    vec![],
                    vec![],
                    vec![a("AAA")],
                    vec![("sdfb", "eee")],
                    vec![("dsf", "same")],
                    vec![a("AAA"), b("BBB")],
                    vec![],
                    vec![],
                    vec![],
                ],
                vec![3, 0, 1, 2, 4, 5, 7, 6],
            ),
            (
                &ab,
                vec![
                    vec![],
                    vec![],
                    vec![],
                    vec![a("AAA")],
                    vec![],
                    vec![],
                    vec![("sdfb", "eee")],
                    vec![("dsf", "same")],
                    vec![a("AAA"), b("BBB")],
                    vec![],
                    vec![],
                    vec![b("BBB"), a("AAA")],
                ],
                vec![0, 1, 2, 4, 3, 5, 6, 7, 9, 10, 8],
            ),
            (
                &ab,
                vec![
                    vec![],
                    vec![],
                    vec![],
                    vec![a("AAA")],
                    vec![("sdfb", "eee"), a("AAA")],
                    vec![("dsf", "same")],
                    vec![a("AAA"), b("BBB")],
                    vec![],
                    vec![],
                    vec![b("BBB"), a("AAA")],
                ],
                vec![6, 3, 0, 1, 4, 2, 5, 7, 8, 9],
            ),
            (
                &ab,
                vec![
                    vec![],
                    vec![a("AAA")],
                    vec![a("AAA")],
                    vec![("sdfb", "eee")],
                    vec![("dsf", "same")],
                    vec![a("AAA"), b("BBB")],
                    vec![],
                    vec![],
                    vec![b("BBB"), a("AAA")],
                ],
                vec![5, 1, 0, 3, 2, 4, 6, 7, 8],
            ),
            (
                &ab,
                vec![
                    vec![a("AAA")],
                    vec![],
                    vec![],
                    vec![a("AAA")],
                    vec![("sdfb", "eee"), a("AAA")],
                    vec![("dsf", "same")],
                    vec![a("AAA"), b("BBB")],
                    vec![],
                    vec![],
                    vec![b("BBB"), a("AAA")],
                ],
                vec![1, 0, 2, 3, 5, 4, 7, 6],
            ),
            (
                &ab,
                vec![
                    vec![],
                    vec![],
                    vec![a("AAA")],
                    vec![a("AAA")],
                    vec![],
                    vec![a("AAA")],
                    vec![("sdfb", "eee")],
                    vec![("dsf", "same")],
                    vec![a("AAA"), b("BBB")],
                    vec![],
                    vec![],
                    vec![b("BBB"), a("AAA")],
                ],
                vec![0, 2, 1, 4, 3, 6, 7, 5, 9, 10, 8],
            ),
            (
                &abc,
                vec![
                    vec![],
                    vec![a("AAA")],
                    vec![a("AAA")],
                    vec![b("BBB")],
                    vec![b("BBB")],
                    vec![c("CCC")],
                    vec![c("CCC")],
                    vec![c("CCC")],
                    vec![c("CCC")],
                    vec![c("CCC")],
                ],
                vec![3, 1, 5, 0, 6, 7, 8, 9, 2, 4],
            ),
            (
                &abc,
                vec![
                    vec![],
                    vec![a("AAA")],
                    vec![a("AAA"), c("CCC")],
                    vec![b("BBB"), c("CCC")],
                    vec![b("BBB")],
                    vec![],
                    vec![],
                    vec![c("CCC")],
                    vec![c("CCC")],
                    vec![c("CCC")],
                ],
                vec![3, 2, 0, 7, 8, 5, 6, 9, 1, 4],
            ),
            (
                &ab[..1],
                vec![
                    vec![],
                    vec![],
                    vec![],
                    vec![],
                    vec![a("AAA")],
                    vec![a("AAA")],
                    vec![a("AAA")],
                ],
                vec![0, 1, 4, 2, 3, 5],
            ),
            (
                &ab[..1],
                vec![
                    vec![a("AAA")],
                    vec![a("AAA")],
                    vec![],
                    vec![],
                    vec![],
                    vec![],
                    vec![],
                    vec![],
                    vec![],
                    vec![a("AAA")],
                ],
                vec![2, 0, 3, 4, 5, 6, 1],
            ),
        ];
        for (n, (strategy, pods, expected)) in cases.into_iter().enumerate() {
            // Upstream sorts the first `expected.len()` pods; the rest only count as pods.
            let labels: Vec<BTreeMap<String, String>> = pods.iter().map(|p| map(p)).collect();
            let refs: Vec<_> = labels.iter().collect();
            let indexes: Vec<usize> = (0..expected.len()).collect();
            assert_eq!(scatter_sort(strategy, &refs, indexes), expected, "case {n}");
        }
    }

    #[test]
    fn scatter_tolerates_bad_indexes() {
        let labels = [map(&[("a", "1")]), map(&[])];
        let refs: Vec<_> = labels.iter().collect();
        let t = [term("a", "1")];
        let out = scatter_sort(&t, &refs, vec![0, 0, 0, 1, 1, 7, 9]);
        let mut sorted = out.clone();
        sorted.sort();
        assert_eq!(sorted, vec![0, 0, 0, 1, 1, 7, 9]);
    }

    fn pod(name: &str, labels: &[(&str, &str)]) -> Pod {
        Pod {
            metadata: ObjectMeta {
                name: Some(name.into()),
                labels: Some(map(labels)),
                ..Default::default()
            },
            ..Default::default()
        }
    }

    #[test]
    fn cloneset_update_order() {
        let pods = vec![
            pod("c", &[("tier", "1")]),
            pod("a", &[]),
            pod("b", &[(labels::LIFECYCLE_STATE, lifecycle::PREPARING_UPDATE)]),
            pod("d", &[("tier", "1")]),
        ];
        // Default order: all equal but names, so a, b, c, d; PreparingUpdate first.
        let plain = CloneSetUpdateStrategy::default();
        assert_eq!(sort_cloneset_update_indexes(&plain, &pods, vec![0, 1, 2, 3]), vec![2, 1, 0, 3]);

        let with_priority = CloneSetUpdateStrategy {
            rolling_update: Some(kruise_api::apps::v1beta1::RollingUpdateCloneSetStrategy {
                priority_strategy: Some(weights(&[(50, &[("tier", "1")])])),
                ..Default::default()
            }),
            ..Default::default()
        };
        assert_eq!(
            sort_cloneset_update_indexes(&with_priority, &pods, vec![0, 1, 2, 3]),
            vec![2, 0, 3, 1]
        );
        // A subset, plus an out-of-range index kept last.
        assert_eq!(
            sort_cloneset_update_indexes(&with_priority, &pods, vec![9, 1, 3]),
            vec![3, 1, 9]
        );
    }
}

#[cfg(test)]
mod packed_key_tests {
    use std::cmp::Reverse;

    use super::PriorityKey;

    #[test]
    fn packed_keys_sort_as_keys_at_the_extremes() {
        let values = [i64::MIN, i64::MIN + 1, -2, -1, 0, 1, 2, i64::MAX - 1, i64::MAX];
        let keys: Vec<PriorityKey> = values
            .iter()
            .flat_map(|&l| values.iter().map(move |&w| PriorityKey(l, Reverse(w))))
            .collect();
        for a in &keys {
            for b in &keys {
                assert_eq!(a.packed().cmp(&b.packed()), a.cmp(b), "{a:?} vs {b:?}");
            }
        }
    }
}
