//! UnitedDeployment allocation invariants over random topologies: the subsets' replicas sum
//! to `spec.replicas` (when the spec is valid and some subset has room), pinned subsets get
//! exactly their value, no subset goes past its maximum or below its minimum while the
//! replicas allow, an unschedulable subset never gets more than its ready pods (Adaptive), and
//! allocating again from the outcome gives the same answer.

use std::collections::BTreeMap;

use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;
use kruise_core::uniteddeployment::allocation::{
    Allocation, AllocationSpec, ObservedSubset, ScheduleMode, SubsetSpec, allocate,
};
use proptest::prelude::*;

fn outcome(allocation: &Allocation) -> BTreeMap<String, ObservedSubset> {
    allocation
        .subsets
        .iter()
        .map(|(n, r)| {
            (n.clone(), ObservedSubset { replicas: *r, ready_replicas: *r, ..Default::default() })
        })
        .collect()
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 512, ..ProptestConfig::default() })]

    #[test]
    fn the_even_split_sums_and_pins(
        replicas in 0i32..2_000,
        subsets in prop::collection::vec((prop::option::of(0i32..100), any::<bool>(), 0i32..500), 1..12),
    ) {
        let spec = AllocationSpec {
            replicas: Some(replicas),
            mode: ScheduleMode::Fixed,
            subsets: subsets
                .iter()
                .enumerate()
                .map(|(i, (pin, percent, _))| {
                    let s = SubsetSpec::new(&format!("s{i}"));
                    match (pin, percent) {
                        (Some(p), true) => s.replicas(IntOrString::String(format!("{}%", p % 101))),
                        (Some(p), false) => s.replicas(IntOrString::Int(*p)),
                        (None, _) => s,
                    }
                })
                .collect(),
        };
        let observed: BTreeMap<String, ObservedSubset> = subsets
            .iter()
            .enumerate()
            .map(|(i, (_, _, current))| (format!("s{i}"), ObservedSubset { replicas: *current, ..Default::default() }))
            .collect();
        match allocate(&spec, &observed) {
            Ok(allocation) => {
                prop_assert_eq!(allocation.total(), i64::from(replicas));
                for (s, (name, got)) in spec.subsets.iter().zip(&allocation.subsets) {
                    prop_assert_eq!(&s.name, name);
                    if let Some(pin) = &s.replicas {
                        let want = kruise_core::uniteddeployment::allocation::parse_subset_replicas(replicas, pin).expect("valid");
                        prop_assert_eq!(*got, want);
                    }
                    prop_assert!(*got >= 0);
                }
                let again = allocate(&spec, &outcome(&allocation)).expect("still valid");
                prop_assert_eq!(again, allocation);
            }
            Err(_) => {
                // Refused only when the pins cannot add up to `replicas`.
                let pinned: i64 = spec.subsets.iter().filter_map(|s| s.replicas.as_ref())
                    .map(|p| i64::from(kruise_core::uniteddeployment::allocation::parse_subset_replicas(replicas, p).expect("valid")))
                    .sum();
                let all = spec.subsets.iter().all(|s| s.replicas.is_some());
                prop_assert!(pinned > i64::from(replicas) || (all && pinned < i64::from(replicas)));
            }
        }
    }

    #[test]
    fn minimums_and_maximums_hold(
        replicas in 0i32..500,
        bounds in prop::collection::vec((0i32..30, prop::option::of(0i32..60)), 1..10),
        adaptive in any::<bool>(),
        unschedulable in prop::collection::vec((any::<bool>(), 0i32..40), 10),
    ) {
        let bounds: Vec<(i32, Option<i32>)> = bounds
            .into_iter()
            .map(|(min, max)| (min, max.map(|m| m.max(min))))
            .collect();
        let spec = AllocationSpec {
            replicas: Some(replicas),
            mode: if adaptive { ScheduleMode::Adaptive } else { ScheduleMode::Fixed },
            subsets: bounds
                .iter()
                .enumerate()
                .map(|(i, (min, max))| {
                    let s = SubsetSpec::new(&format!("s{i}")).min(IntOrString::Int(*min));
                    match max {
                        Some(m) => s.max(IntOrString::Int(*m)),
                        None => s,
                    }
                })
                .collect(),
        };
        let observed: BTreeMap<String, ObservedSubset> = if adaptive {
            unschedulable
                .iter()
                .take(bounds.len())
                .enumerate()
                .map(|(i, (stuck, ready))| (format!("s{i}"), ObservedSubset {
                    replicas: *ready, ready_replicas: *ready, unschedulable: *stuck, ..Default::default()
                }))
                .collect()
        } else {
            BTreeMap::new()
        };
        let allocation = allocate(&spec, &observed).expect("valid bounds");
        let room: i64 = bounds.iter().map(|(_, max)| max.map_or(i64::MAX / 64, i64::from)).sum();
        let mut before = 0i64;
        for (i, ((min, max), (_, got))) in bounds.iter().zip(&allocation.subsets).enumerate() {
            let state = observed.get(&format!("s{i}")).copied().unwrap_or_default();
            // Unschedulable (Adaptive): held to its ready pods, but never below its minimum.
            let cap = if state.unschedulable { state.ready_replicas.max(*min) } else { max.unwrap_or(i32::MAX) };
            prop_assert!(*got <= cap, "subset {i}: {got} past its maximum {cap}");
            if !adaptive && before + i64::from(*min) <= i64::from(replicas) {
                prop_assert!(*got >= *min, "subset {i}: {got} below its minimum {min}");
            }
            before += i64::from(*min);
        }
        if !adaptive {
            prop_assert_eq!(allocation.total(), i64::from(replicas).min(room));
            let again = allocate(&spec, &outcome(&allocation)).expect("valid");
            prop_assert_eq!(again, allocation);
        } else if bounds.iter().enumerate().any(|(i, (_, max))| max.is_none() && !observed.get(&format!("s{i}")).is_some_and(|o| o.unschedulable)) {
            // Some subset can take everything that is left.
            prop_assert!(allocation.total() >= i64::from(replicas));
        }
    }
}
