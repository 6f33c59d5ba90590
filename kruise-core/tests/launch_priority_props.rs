//! Container launch priority, stepped to quiescence: a pod admitted through the webhook step,
//! a kubelet that starts a container once its barrier key exists (or at once when it has no
//! barrier env) and makes it ready, and the controller's plan applied after every step.
//!
//! Invariants, for any priorities:
//! - no container starts before every container of a higher priority is ready;
//! - every container starts, and the pod ends marked completed;
//! - the controller writes exactly `n` times for `n` distinct priorities (`n - 1` barrier
//!   writes, the first a create, and the completed mark), where upstream writes `n + 2`;
//! - planning again on the outcome of a plan writes nothing new.

use std::collections::{BTreeMap, BTreeSet};

use k8s_openapi::api::core::v1::{
    ConfigMap, Container, ContainerStatus, EnvVar, Pod, PodSpec, PodStatus,
};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kruise_core::admission::pod_chain::PodChain;
use kruise_core::launch_priority::{LaunchPriorityStep, PRIORITY_ENV, plan};
use kruise_core::plan::{Action, Patch};
use proptest::prelude::*;

fn pod(priorities: &[Option<i64>]) -> Pod {
    let containers = priorities
        .iter()
        .enumerate()
        .map(|(i, p)| Container {
            name: format!("c{i}"),
            env: p.map(|p| {
                vec![EnvVar {
                    name: PRIORITY_ENV.into(),
                    value: Some(p.to_string()),
                    value_from: None,
                }]
            }),
            ..Container::default()
        })
        .collect();
    Pod {
        metadata: ObjectMeta {
            name: Some("p".into()),
            namespace: Some("ns".into()),
            uid: Some("u".into()),
            ..ObjectMeta::default()
        },
        spec: Some(PodSpec { containers, ..PodSpec::default() }),
        status: None,
    }
}

/// The barrier key a container waits for, if any.
fn key_of(c: &Container) -> Option<String> {
    c.env
        .iter()
        .flatten()
        .find(|e| e.name == "KRUISE_CONTAINER_BARRIER")
        .and_then(|e| e.value_from.as_ref()?.config_map_key_ref.as_ref())
        .map(|r| r.key.clone())
}

struct World {
    pod: Pod,
    barrier: Option<ConfigMap>,
    started: Vec<String>,
    writes: usize,
}

impl World {
    fn ready(&self) -> BTreeSet<String> {
        self.started.iter().cloned().collect()
    }

    /// The kubelet: every container not started whose key is there (or that has none)
    /// starts and is ready at once. Returns whether anything started.
    fn kubelet(&mut self) -> bool {
        let keys: BTreeSet<String> = self
            .barrier
            .iter()
            .flat_map(|b| b.data.iter().flatten())
            .map(|(k, _)| k.clone())
            .collect();
        let containers = self.pod.spec.as_ref().expect("spec").containers.clone();
        let mut any = false;
        for c in &containers {
            if self.started.contains(&c.name) {
                continue;
            }
            if key_of(c).is_none_or(|k| keys.contains(&k)) {
                self.started.push(c.name.clone());
                any = true;
            }
        }
        let ready = self.ready();
        self.pod.status = Some(PodStatus {
            container_statuses: Some(
                containers
                    .iter()
                    .map(|c| ContainerStatus {
                        name: c.name.clone(),
                        ready: ready.contains(&c.name),
                        ..ContainerStatus::default()
                    })
                    .collect(),
            ),
            ..PodStatus::default()
        });
        any
    }

    fn apply(&mut self, actions: &[Action]) {
        for action in actions {
            self.writes += 1;
            match action {
                Action::CreateObject { body, .. } => {
                    assert!(self.barrier.is_none(), "created twice");
                    self.barrier =
                        Some(serde_json::from_value((**body).clone()).expect("a ConfigMap"));
                }
                Action::PatchObject { patch: Patch::Merge(body), .. } => {
                    let barrier = self.barrier.as_mut().expect("patched before created");
                    let data = barrier.data.get_or_insert_with(BTreeMap::new);
                    for (k, v) in body["data"].as_object().expect("data") {
                        data.insert(k.clone(), v.as_str().unwrap_or_default().to_owned());
                    }
                }
                Action::PatchPod { patch: Patch::Strategic(body), .. } => {
                    let notes = self.pod.metadata.annotations.get_or_insert_with(BTreeMap::new);
                    for (k, v) in body["metadata"]["annotations"].as_object().expect("annotations")
                    {
                        notes.insert(k.clone(), v.as_str().unwrap_or_default().to_owned());
                    }
                }
                other => panic!("unexpected action {other:?}"),
            }
        }
    }
}

fn priority_of(requested: &[Option<i64>], name: &str) -> i64 {
    let i: usize = name.trim_start_matches('c').parse().expect("index");
    requested[i].unwrap_or(0)
}

proptest! {
    #[test]
    fn containers_start_in_priority_order_with_n_writes(
        requested in prop::collection::vec(prop::option::of(-3i64..4), 2..7)
    ) {
        let mut admitted = pod(&requested);
        let step = LaunchPriorityStep { name_suffix: "abcde".into() };
        PodChain::new(vec![&step]).run(&mut admitted).expect("admitted");
        let levels: BTreeSet<i64> = requested.iter().map(|p| p.unwrap_or(0)).collect();
        let asked = levels.len() > 1;
        let mut world = World { pod: admitted, barrier: None, started: Vec::new(), writes: 0 };
        for _ in 0..50 {
            // The controller acts first: it must not give a key before its time, whatever the
            // kubelet does next.
            let first = plan(&world.pod, world.barrier.as_ref());
            world.apply(&first.actions);
            let again = plan(&world.pod, world.barrier.as_ref());
            // The plan's own outcome asks for nothing it already did.
            prop_assert!(
                again.actions.iter().all(|a| !first.actions.contains(a)),
                "replanning repeated {:?}", again.actions
            );
            let before: BTreeSet<String> = world.ready();
            let started = world.kubelet();
            // No container started ahead of a higher priority that was not ready.
            for name in world.started.iter().filter(|n| !before.contains(*n)) {
                let mine = priority_of(&requested, name);
                for c in world.pod.spec.as_ref().expect("spec").containers.iter() {
                    if asked && priority_of(&requested, &c.name) > mine {
                        prop_assert!(
                            before.contains(&c.name),
                            "{} started before {} was ready (priorities {:?})",
                            name, c.name, requested
                        );
                    }
                }
            }
            if first.actions.is_empty() && !started {
                break;
            }
        }
        let all = world.pod.spec.as_ref().expect("spec").containers.len();
        prop_assert_eq!(world.started.len(), all, "every container started");
        if asked {
            let notes = world.pod.metadata.annotations.clone().unwrap_or_default();
            prop_assert_eq!(
                notes.get("apps.kruise.io/container-launch-priority-completed").map(String::as_str),
                Some("true")
            );
            prop_assert_eq!(world.writes, levels.len(), "writes for {:?}", requested);
        } else {
            prop_assert_eq!(world.writes, 0);
        }
    }
}
