//! The CloneSet planner on 1k, 10k and 100k pods with mixed revisions, priorities and scatter;
//! what reading a pod's facts costs (once per pod event in a cache that keeps them); and what
//! the controller pays before planning: turning its compact cached pods
//! (`kruise_kube::cached_pod::CachedPod`) back into whole pods; and the whole reconcile the
//! controller runs instead, from cached pods to the plan.

use std::sync::Arc;

use criterion::{BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};
use kruise_kube::cached_pod::CachedPod;
use kruise_kube::controller::ControllerSettings;
use kruise_kube::workload::{NodeLabels, WorkloadInputs, WorkloadKind, pod_inputs};

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

    // What a cache pays once per pod event (or a controller once per pod per snapshot) so
    // that plans read compact facts instead of whole pods.
    let mut group = c.benchmark_group("pod_facts");
    for n in [1_000usize, 10_000] {
        let snapshot = benches::snapshot(n);
        group.throughput(Throughput::Elements(n as u64));
        group.bench_with_input(BenchmarkId::from_parameter(n), &snapshot, |b, s| {
            b.iter(|| {
                s.pods
                    .iter()
                    .map(|p| kruise_core::cloneset::PodFacts::new(std::hint::black_box(p.pod())))
                    .collect::<Vec<_>>()
            });
        });
    }
    group.finish();

    let mut group = c.benchmark_group("snapshot_pods_from_cache");
    for n in [1_000usize, 10_000] {
        let cached: Vec<kruise_kube::cached_pod::CachedPod> = benches::snapshot(n)
            .pods
            .iter()
            .map(|p| kruise_kube::cached_pod::CachedPod::from_pod(p.pod().as_ref().clone()))
            .collect();
        group.throughput(Throughput::Elements(n as u64));
        group.bench_with_input(BenchmarkId::from_parameter(n), &cached, |b, cached| {
            b.iter(|| {
                cached
                    .iter()
                    .map(|p| p.to_pod().map(std::sync::Arc::new))
                    .collect::<Result<Vec<_>, _>>()
                    .expect("decodes")
            });
        });
    }
    group.finish();

    // The whole reconcile the controller runs, snapshot included: from the cache's compact
    // pods (their facts read already, as after the first reconcile of each pod version) to
    // the plan. Only the pods the plan acts on are decoded.
    let mut group = c.benchmark_group("reconcile_from_cache");
    for n in [1_000usize, 10_000, 100_000] {
        let (cloneset, revisions, pods) = benches::cloneset_parts(n);
        let cached: Vec<Arc<CachedPod>> =
            pods.into_iter().map(|p| Arc::new(CachedPod::from_pod(p))).collect();
        for pod in &cached {
            pod.planner_facts().expect("facts");
        }
        let settings = ControllerSettings::default();
        let now = benches::now();
        group.throughput(Throughput::Elements(n as u64));
        if n >= 100_000 {
            group.sample_size(10);
        }
        group.bench_with_input(BenchmarkId::new("snapshot", n), &cached, |b, cached| {
            b.iter(|| pod_inputs(std::hint::black_box(cached), None).expect("inputs"));
        });
        group.bench_with_input(BenchmarkId::new("whole", n), &cached, |b, cached| {
            b.iter(|| {
                // As the controller: node labels only for a topology-spread scale-in.
                let unlabelled = |_: &str| Some(None);
                let labels: Option<&NodeLabels<'_>> =
                    cloneset.reads_node_labels().then_some(&unlabelled);
                let (pods, node_labels) =
                    pod_inputs(std::hint::black_box(cached), labels).expect("inputs");
                let mut inputs = WorkloadInputs::default();
                inputs.pods = pods;
                inputs.node_labels = node_labels;
                inputs.revisions = revisions.clone();
                cloneset.plan(inputs, &settings, now)
            });
        });
    }
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
