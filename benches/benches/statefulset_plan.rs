//! The Advanced StatefulSet planner on 1k, 10k and 100k pods mid-rollout: Parallel, unordered
//! with weight priorities, partition 30%, maxUnavailable 10%, reserved ordinals. The pods are
//! recreated (as in `cloneset_plan`), or, in `statefulset_plan_in_place`, updated in place
//! (each moved pod then gets a patch of its own).

use criterion::{BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};

fn group(c: &mut Criterion, name: &str, in_place: bool, sizes: &[usize]) {
    let mut group = c.benchmark_group(name);
    for &n in sizes {
        let snapshot = benches::statefulset_snapshot(n, in_place);
        let now = benches::now();
        // The plan does real work: it moves pods within the budget.
        let plan = kruise_core::statefulset::plan(&snapshot, now);
        assert!(plan.actions.len() >= n / 20, "the rollout moves pods");
        group.throughput(Throughput::Elements(n as u64));
        if n >= 100_000 {
            group.sample_size(10);
        }
        group.bench_with_input(BenchmarkId::from_parameter(n), &snapshot, |b, s| {
            b.iter(|| kruise_core::statefulset::plan(std::hint::black_box(s), now));
        });
    }
    group.finish();
}

fn bench(c: &mut Criterion) {
    group(c, "statefulset_plan", false, &[1_000, 10_000, 100_000]);
    group(c, "statefulset_plan_in_place", true, &[1_000, 10_000]);
}

criterion_group!(benches, bench);
criterion_main!(benches);
