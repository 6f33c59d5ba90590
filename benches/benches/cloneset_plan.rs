//! The CloneSet planner on 1k, 10k and 100k pods with mixed revisions, priorities and scatter.

use criterion::{BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};

fn bench(c: &mut Criterion) {
    let mut group = c.benchmark_group("cloneset_plan");
    for n in [1_000usize, 10_000, 100_000] {
        let snapshot = benches::snapshot(n);
        let now = benches::now();
        group.throughput(Throughput::Elements(n as u64));
        if n >= 100_000 {
            group.sample_size(10);
        }
        group.bench_with_input(BenchmarkId::from_parameter(n), &snapshot, |b, s| {
            b.iter(|| kruise_core::cloneset::plan(std::hint::black_box(s), now));
        });
    }
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
