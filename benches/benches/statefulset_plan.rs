//! The Advanced StatefulSet planner on 1k, 10k and 100k pods, mid-rollout: Parallel, unordered
//! with weight priorities, in place, partition 30%, maxUnavailable 10%, reserved ordinals.

use criterion::{BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};

fn bench(c: &mut Criterion) {
    let mut group = c.benchmark_group("statefulset_plan");
    for n in [1_000usize, 10_000, 100_000] {
        let snapshot = benches::statefulset_snapshot(n);
        let now = benches::now();
        // The plan does real work: it moves pods within the budget.
        let plan = kruise_core::statefulset::plan(&snapshot, now);
        assert!(!plan.actions.is_empty(), "the rollout moves pods");
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

criterion_group!(benches, bench);
criterion_main!(benches);
