//! Property tests of the node-daemon planners: ContainerRecreateRequest and ImagePullJob.
#![allow(clippy::unwrap_used)]

use std::collections::{BTreeMap, BTreeSet};

use jiff::{SignedDuration, Timestamp};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use kruise_api::apps::v1beta1::{
    ContainerRecreateRequest, ContainerRecreateRequestPhase as Phase,
    ContainerRecreateRequestSyncContainerStatus, ImagePullJob, ImagePullPhase, ImageStatus,
    ImageTagStatus, NodeImage, NodeImageStatus,
};
use kruise_core::containerrecreate::{
    ContainerRuntimeState, ContainerSnapshot, pick_active, plan_recreate,
};
use kruise_core::imagepull::{ImagePullConfig, JobInput, TagOp, plan_job};
use proptest::prelude::*;
use serde_json::json;

fn t0() -> Timestamp {
    "2026-01-01T00:00:00Z".parse().unwrap()
}

fn crr(n: usize, ordered: bool, force: bool, min_started: i32) -> ContainerRecreateRequest {
    let containers: Vec<_> = (0..n)
        .map(|i| json!({"name": format!("c{i}"), "statusContext": {"containerID": format!("rt://c{i}-0"), "restartCount": 0}}))
        .collect();
    serde_json::from_value(json!({
        "metadata": {"name": "r", "namespace": "ns", "creationTimestamp": "2026-01-01T00:00:00Z"},
        "spec": {"podName": "p", "containers": containers, "strategy": {
            "orderedRecreate": ordered, "forceRecreate": force, "minStartedSeconds": min_started, "failurePolicy": "Fail"}},
        "status": {"phase": "Recreating"}
    }))
    .unwrap()
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(128))]

    /// The daemon never stops the same container instance twice for one request, and the
    /// request completes with every container Succeeded.
    #[test]
    fn crr_never_stops_a_container_twice(
        n in 1usize..4,
        ordered: bool,
        force: bool,
        min_started in 0i32..3,
        restart_delays in proptest::collection::vec(0u8..3, 4),
    ) {
        let mut c = crr(n, ordered, force, min_started);
        // name -> (generation, running, started_at, pending restart countdown)
        let mut rt: BTreeMap<String, (i32, bool, Timestamp, Option<u8>)> =
            (0..n).map(|i| (format!("c{i}"), (0, true, t0() - SignedDuration::from_hours(1), None))).collect();
        let mut stopped = BTreeSet::new();
        let mut now = t0();
        let mut completed = false;
        for _ in 0..80 {
            now += SignedDuration::from_secs(1);
            for (generation, running, started, countdown) in rt.values_mut() {
                if let Some(k) = countdown {
                    if *k == 0 {
                        *generation += 1;
                        *running = true;
                        *started = now;
                        *countdown = None;
                    } else {
                        *k -= 1;
                    }
                }
            }
            let snapshot: Vec<ContainerSnapshot> = rt
                .iter()
                .map(|(name, (generation, running, started, _))| ContainerSnapshot {
                    name: name.clone(),
                    id: format!("rt://{name}-{generation}"),
                    restart_count: *generation,
                    state: if *running { ContainerRuntimeState::Running } else { ContainerRuntimeState::Exited },
                    started_at: Some(*started),
                })
                .collect();
            // The controller's snapshot: running instances are ready.
            c.status.as_mut().unwrap().container_status_snapshot = snapshot
                .iter()
                .filter(|s| s.state == ContainerRuntimeState::Running)
                .map(|s| ContainerRecreateRequestSyncContainerStatus {
                    name: s.name.clone(), ready: true, restart_count: s.restart_count, container_id: s.id.clone(),
                })
                .collect();
            let plan = plan_recreate(&c, None, &snapshot, now);
            if let Some(states) = plan.states.clone() {
                c.status.as_mut().unwrap().container_recreate_states = states;
            }
            for stop in &plan.stop {
                prop_assert!(stopped.insert(stop.id.clone()), "stopped {} twice", stop.id);
                let entry = rt.get_mut(&stop.name).unwrap();
                prop_assert_eq!(format!("rt://{}-{}", stop.name, entry.0), stop.id.clone());
                entry.1 = false;
                let idx: usize = stop.name[1..].parse().unwrap();
                entry.3 = Some(restart_delays[idx]);
            }
            if plan.complete.is_some() {
                completed = true;
                break;
            }
        }
        prop_assert!(completed);
        prop_assert_eq!(stopped.len(), n);
        for s in &c.status.as_ref().unwrap().container_recreate_states {
            prop_assert_eq!(&s.phase, &Phase::Succeeded);
        }
    }

    /// Of all requests of a pod, at most one is Recreating at any time, and all of them run.
    #[test]
    fn at_most_one_active_crr_per_pod(
        created in proptest::collection::vec(0i64..5, 1..5),
        finish_after in proptest::collection::vec(1u8..4, 5),
    ) {
        let mut crrs: Vec<ContainerRecreateRequest> = created
            .iter()
            .enumerate()
            .map(|(i, secs)| {
                let mut c = crr(1, false, false, 0);
                c.metadata.name = Some(format!("r{i}"));
                c.metadata.creation_timestamp = Some(Time(t0() + SignedDuration::from_secs(*secs)));
                c.status = None;
                c
            })
            .collect();
        let mut running_for = vec![0u8; crrs.len()];
        let mut ran = BTreeSet::new();
        for step in 0..60 {
            let pick = pick_active(&crrs);
            for w in &pick.waiting {
                let c = crrs.iter_mut().find(|c| c.metadata.name.as_ref() == Some(&w.name)).unwrap();
                let st = c.status.get_or_insert_with(Default::default);
                st.phase = Phase::Pending;
                st.message = w.reason.clone();
            }
            if let Some(active) = &pick.active {
                let i = crrs.iter().position(|c| c.metadata.name.as_ref() == Some(active)).unwrap();
                ran.insert(i);
                crrs[i].status.get_or_insert_with(Default::default).phase = Phase::Recreating;
                running_for[i] += 1;
                if running_for[i] >= finish_after[i] {
                    let st = crrs[i].status.as_mut().unwrap();
                    st.phase = Phase::Completed;
                    st.completion_time = Some(Time(t0() + SignedDuration::from_secs(step)));
                }
            }
            let recreating = crrs
                .iter()
                .filter(|c| c.status.as_ref().is_some_and(|s| s.phase == Phase::Recreating && s.completion_time.is_none()))
                .count();
            prop_assert!(recreating <= 1);
        }
        prop_assert_eq!(ran.len(), crrs.len());
    }

    /// An ImagePullJob never has more than `parallelism` nodes pulling, and completes.
    #[test]
    fn image_pull_job_respects_parallelism(
        nodes in 1usize..8,
        parallelism in 1i32..4,
        outcomes in proptest::collection::vec((0u8..3, any::<bool>()), 8),
    ) {
        let job: ImagePullJob = serde_json::from_value(json!({
            "metadata": {"name": "j", "namespace": "ns", "uid": "job-uid", "finalizers": ["apps.kruise.io/deletion-protection"]},
            "spec": {"image": "nginx:1.25", "parallelism": parallelism, "completionPolicy": {"type": "Always"}}
        })).unwrap();
        let mut job = job;
        let names: Vec<String> = (0..nodes).map(|i| format!("n{i}")).collect();
        let mut images: BTreeMap<String, NodeImage> = names
            .iter()
            .map(|n| (n.clone(), serde_json::from_value(json!({"metadata": {"name": n}, "spec": {}})).unwrap()))
            .collect();
        let mut age: BTreeMap<String, u8> = BTreeMap::new();
        let config = ImagePullConfig::default();
        let mut now = t0();
        let mut done = false;
        for _ in 0..100 {
            now += SignedDuration::from_secs(1);
            let snapshot = images.clone();
            let lookup = |n: &str| snapshot.get(n);
            let plan = plan_job(&JobInput {
                job: &job, nodes: &names, node_image: &lookup, owned_nodes: &[], secrets: &[], config: &config, now,
            }).unwrap();
            for change in &plan.node_image_changes {
                let is_claim = matches!(change.op, TagOp::Claim { .. }); prop_assert!(is_claim);
                change.apply(images.get_mut(&change.node).unwrap());
            }
            if let Some(status) = plan.status {
                prop_assert!(status.active <= parallelism);
                job.status = Some(status);
            }
            // Pulling now: entries without a finished status.
            let mut pulling = 0;
            for (i, (name, ni)) in images.iter_mut().enumerate() {
                let Some(spec) = ni.spec.images.get("nginx") else { continue };
                let version = spec.tags[0].version;
                let finished = ni.status.as_ref().is_some_and(|s| s.image_statuses.contains_key("nginx"));
                if finished { continue; }
                pulling += 1;
                let a = age.entry(name.clone()).or_default();
                *a += 1;
                let (delay, ok) = outcomes[i];
                if *a > delay {
                    ni.status = Some(NodeImageStatus {
                        image_statuses: BTreeMap::from([("nginx".to_owned(), ImageStatus { tags: vec![ImageTagStatus {
                            tag: "1.25".into(), version,
                            phase: if ok { ImagePullPhase::Succeeded } else { ImagePullPhase::Failed },
                            completion_time: Some(Time(now)), ..Default::default()
                        }]})]),
                        ..Default::default()
                    });
                }
            }
            prop_assert!(pulling <= parallelism as usize, "{pulling} nodes pulling");
            if job.status.as_ref().is_some_and(|s| s.completion_time.is_some()) {
                done = true;
                break;
            }
        }
        prop_assert!(done);
        let status = job.status.unwrap();
        prop_assert_eq!(status.desired as usize, nodes);
        prop_assert_eq!((status.succeeded + status.failed) as usize, nodes);
    }
}
