//! The Advanced DaemonSet planner on 1k and 5k nodes mid-rollout (nodeSelector, taints and
//! tolerations, maxUnavailable 10%, partition 10%). Target: under 2 ms per plan at 5k nodes.

use criterion::{BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};

fn bench(c: &mut Criterion) {
    let mut group = c.benchmark_group("daemonset_plan");
    for n in [1_000usize, 5_000] {
        let snapshot = benches::daemonset_snapshot(n);
        let now = benches::now();
        // The plan does real work: it replaces old pods within the budget.
        let plan = kruise_core::daemonset::plan(&snapshot, now);
        assert!(plan.actions.len() >= n / 20, "the rollout moves pods: {}", plan.actions.len());
        group.throughput(Throughput::Elements(n as u64));
        group.bench_with_input(BenchmarkId::from_parameter(n), &snapshot, |b, s| {
            b.iter(|| kruise_core::daemonset::plan(std::hint::black_box(s), now));
        });
    }
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
