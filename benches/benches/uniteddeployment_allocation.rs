//! UnitedDeployment replica allocation (issue #40's target: 100 subsets and 100,000 replicas
//! under 50 µs), for each allocator:
//!
//! - `even_split`: 100 subsets, every tenth pinned (a number or a percentage);
//! - `min_max`: each subset between 500 and 2,000, the last unbounded;
//! - `adaptive`: the same bounds, every seventh subset unschedulable with half its pods ready;
//! - `reservation`: the same bounds, every seventh subset marked with reserved pods.
//!
//! `cargo bench -p benches --bench uniteddeployment_allocation`

use std::collections::BTreeMap;

use criterion::{Criterion, black_box, criterion_group, criterion_main};
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;
use kruise_core::uniteddeployment::allocation::{
    AllocationSpec, ObservedSubset, ScheduleMode, SubsetSpec, allocate,
};

const SUBSETS: usize = 100;
const REPLICAS: i32 = 100_000;

fn names() -> Vec<String> {
    (0..SUBSETS).map(|i| format!("subset-{i:03}")).collect()
}

fn bench(c: &mut Criterion) {
    let even = AllocationSpec {
        replicas: Some(REPLICAS),
        mode: ScheduleMode::Fixed,
        subsets: names()
            .iter()
            .enumerate()
            .map(|(i, n)| match i % 10 {
                0 => SubsetSpec::new(n).replicas(IntOrString::Int(300)),
                5 => SubsetSpec::new(n).replicas(IntOrString::String("1%".into())),
                _ => SubsetSpec::new(n),
            })
            .collect(),
    };
    let observed: BTreeMap<String, ObservedSubset> = names()
        .iter()
        .enumerate()
        .map(|(i, n)| {
            let replicas = 1_000 + i32::try_from(i).unwrap_or(0);
            (
                n.clone(),
                ObservedSubset {
                    replicas,
                    ready_replicas: if i % 7 == 0 { replicas / 2 } else { replicas },
                    unschedulable: i % 7 == 0,
                    marked_unschedulable: i % 7 == 0,
                    reserved_pods: if i % 7 == 0 { replicas / 2 } else { 0 },
                },
            )
        })
        .collect();
    let bounded = |mode| AllocationSpec {
        replicas: Some(REPLICAS),
        mode,
        subsets: names()
            .iter()
            .enumerate()
            .map(|(i, n)| {
                let s = SubsetSpec::new(n).min(IntOrString::Int(500));
                if i + 1 < SUBSETS { s.max(IntOrString::Int(2_000)) } else { s }
            })
            .collect(),
    };
    let mut group = c.benchmark_group("allocate_100_subsets_100k");
    group.bench_function("even_split", |b| b.iter(|| allocate(black_box(&even), &observed)));
    let min_max = bounded(ScheduleMode::Fixed);
    group.bench_function("min_max", |b| b.iter(|| allocate(black_box(&min_max), &observed)));
    let adaptive = bounded(ScheduleMode::Adaptive);
    group.bench_function("adaptive", |b| b.iter(|| allocate(black_box(&adaptive), &observed)));
    let reservation = bounded(ScheduleMode::AdaptiveWithReservation);
    group
        .bench_function("reservation", |b| b.iter(|| allocate(black_box(&reservation), &observed)));
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
