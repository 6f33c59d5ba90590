//! One DELETE decided under one PodUnavailableBudget covering 100 and 10,000 pods. The
//! decision reads the budget's status, never the pod list, so both sizes should cost the
//! same; the status computation over the same pods is measured alongside for contrast.

use criterion::{BenchmarkId, Criterion, criterion_group, criterion_main};
use k8s_openapi::api::core::v1::{Container, Pod, PodCondition, PodSpec, PodStatus};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector;
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;
use kruise_api::policy::v1beta1::{PodUnavailableBudget, PodUnavailableBudgetSpec};
use kruise_core::pub_budget::{PodRequest, PubGates, compute_status, decide};
use std::collections::BTreeMap;

fn pod(i: usize) -> Pod {
    let mut pod = Pod::default();
    pod.metadata.name = Some(format!("web-{i}"));
    pod.metadata.namespace = Some("default".into());
    pod.metadata.labels = Some(BTreeMap::from([("app".to_string(), "web".to_string())]));
    pod.spec = Some(PodSpec {
        containers: vec![Container {
            name: "main".into(),
            image: Some("nginx:1.25".into()),
            ..Default::default()
        }],
        ..Default::default()
    });
    pod.status = Some(PodStatus {
        phase: Some("Running".into()),
        conditions: Some(vec![PodCondition {
            type_: "Ready".into(),
            status: "True".into(),
            ..Default::default()
        }]),
        ..Default::default()
    });
    pod
}

fn bench(c: &mut Criterion) {
    let gates = PubGates::default();
    let now = benches::now();
    let mut group = c.benchmark_group("pub_decision");
    for n in [100usize, 10_000] {
        let pods: Vec<Pod> = (0..n).map(pod).collect();
        let mut budget = PodUnavailableBudget::new(
            "web",
            PodUnavailableBudgetSpec {
                selector: Some(LabelSelector {
                    match_labels: Some(BTreeMap::from([("app".to_string(), "web".to_string())])),
                    ..Default::default()
                }),
                max_unavailable: Some(IntOrString::String("10%".into())),
                ..Default::default()
            },
        );
        budget.metadata.namespace = Some("default".into());
        let status = compute_status(&budget, &pods, Some(n as i32), &gates, now).expect("valid");
        budget.status = Some(status.status);
        let target = &pods[n / 2];
        let d = decide(&budget, None, PodRequest::Delete { pod: target }, false, &gates, now);
        assert!(d.expect("valid").reservation().is_some(), "the delete is admitted");
        group.bench_with_input(BenchmarkId::new("delete", n), &budget, |b, budget| {
            b.iter(|| {
                decide(
                    std::hint::black_box(budget),
                    None,
                    PodRequest::Delete { pod: target },
                    false,
                    &gates,
                    now,
                )
            });
        });
        group.bench_with_input(BenchmarkId::new("status", n), &pods, |b, pods| {
            b.iter(|| {
                compute_status(&budget, std::hint::black_box(pods), Some(n as i32), &gates, now)
            });
        });
    }
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
