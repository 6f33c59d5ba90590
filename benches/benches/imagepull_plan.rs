//! The ImagePullJob controller's work per job event with 1,000 nodes, as the number of jobs
//! grows (1, 50 and 200, each pulling its own image on every node, so every NodeImage carries
//! an entry of every job):
//!
//! - `reconcile_one_job`: what one reconcile of one job computes, `select_nodes` and
//!   `plan_job` over the 1,000 NodeImages. It should not grow with the number of jobs (a
//!   NodeImage's entries are looked up by image, never scanned).
//! - `wake_on_node_image_change`: which jobs one NodeImage status change wakes
//!   (`jobs_to_wake`): the owners of entries on that NodeImage only, never every job, so it
//!   grows with the entries on that one node (here every job), not with the cluster.
//!
//! The NodeImages are filled by applying the jobs' own plans (their claims), then every tag
//! is reported pulled, as the daemons would.
//!
//! `cargo bench -p benches --bench imagepull_plan`

use std::collections::BTreeMap;

use criterion::{BenchmarkId, Criterion, criterion_group, criterion_main};
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;
use kruise_api::apps::v1beta1::{
    ImagePullJob, ImagePullJobSpec, ImageStatus, ImageTagStatus, NodeImage, NodeImageStatus,
};
use kruise_core::imagepull::{
    ImagePullConfig, JobInput, PROTECTION_FINALIZER, jobs_to_wake, plan_job, select_nodes,
};

const NODES: usize = 1000;

fn job(j: usize) -> ImagePullJob {
    let mut job = ImagePullJob::new(
        &format!("job-{j}"),
        ImagePullJobSpec { image: format!("registry.example/app-{j}:v1"), ..Default::default() },
    );
    job.metadata.namespace = Some("default".into());
    job.metadata.uid = Some(format!("00000000-0000-0000-0000-{j:012}"));
    job.metadata.finalizers = Some(vec![PROTECTION_FINALIZER.to_owned()]);
    job.spec.template.parallelism = Some(IntOrString::Int(NODES as i32));
    job
}

fn node_image(i: usize) -> NodeImage {
    let mut ni = NodeImage::new(&format!("node-{i}"), Default::default());
    ni.metadata.uid = Some(format!("node-uid-{i}"));
    ni
}

/// 1,000 NodeImages with every job's claim applied and every tag reported pulled.
fn state(jobs: &[ImagePullJob], config: &ImagePullConfig) -> Vec<NodeImage> {
    let now = benches::now();
    let mut node_images: Vec<NodeImage> = (0..NODES).map(node_image).collect();
    for job in jobs {
        let nodes = select_nodes(job, &node_images, &[]).expect("nodes");
        let changes = {
            let by_name: BTreeMap<&str, &NodeImage> = node_images
                .iter()
                .map(|n| (n.metadata.name.as_deref().unwrap_or_default(), n))
                .collect();
            let lookup = |name: &str| by_name.get(name).copied();
            let input = JobInput {
                job,
                nodes: &nodes,
                node_image: &lookup,
                owned_nodes: &[],
                secrets: &[],
                config,
                now,
            };
            plan_job(&input).expect("a plan").node_image_changes
        };
        let index: BTreeMap<String, usize> = node_images
            .iter()
            .enumerate()
            .map(|(i, n)| (n.metadata.name.clone().unwrap_or_default(), i))
            .collect();
        for change in changes {
            change.apply(&mut node_images[index[&change.node]]);
        }
    }
    for ni in &mut node_images {
        let mut status = NodeImageStatus::default();
        for (image, spec) in &ni.spec.images {
            let tags = spec
                .tags
                .iter()
                .map(|t| ImageTagStatus {
                    tag: t.tag.clone(),
                    phase: kruise_api::apps::v1beta1::ImagePullPhase::Succeeded,
                    version: t.version,
                    ..Default::default()
                })
                .collect();
            status.image_statuses.insert(image.clone(), ImageStatus { tags });
        }
        status.desired = ni.spec.images.values().map(|s| s.tags.len() as i32).sum();
        status.succeeded = status.desired;
        ni.status = Some(status);
    }
    node_images
}

fn bench(c: &mut Criterion) {
    let config = ImagePullConfig::default();
    let now = benches::now();
    let mut group = c.benchmark_group("imagepull_plan");
    group.sample_size(20);
    for jobs in [1usize, 50, 200] {
        let all: Vec<ImagePullJob> = (0..jobs).map(job).collect();
        let node_images = state(&all, &config);
        let entries: usize = node_images[0].spec.images.len();
        assert_eq!(entries, jobs, "every job has an entry on every node");
        let by_name: BTreeMap<&str, &NodeImage> = node_images
            .iter()
            .map(|n| (n.metadata.name.as_deref().unwrap_or_default(), n))
            .collect();
        let target = &all[0];
        group.bench_with_input(BenchmarkId::new("reconcile_one_job", jobs), &jobs, |b, _| {
            b.iter(|| {
                let nodes = select_nodes(target, &node_images, &[]).expect("nodes");
                let lookup = |name: &str| by_name.get(name).copied();
                let input = JobInput {
                    job: target,
                    nodes: &nodes,
                    node_image: &lookup,
                    owned_nodes: &[],
                    secrets: &[],
                    config: &config,
                    now,
                };
                let plan = plan_job(&input).expect("a plan");
                assert!(plan.node_image_changes.is_empty(), "nothing left to claim");
                plan
            })
        });
        let old = &node_images[0];
        let mut new = old.clone();
        if let Some(status) = new.status.as_mut() {
            status.succeeded -= 1;
        }
        group.bench_with_input(
            BenchmarkId::new("wake_on_node_image_change", jobs),
            &jobs,
            |b, _| b.iter(|| jobs_to_wake(Some(old), Some(&new))),
        );
    }
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
