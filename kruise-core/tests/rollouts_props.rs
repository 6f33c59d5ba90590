//! Kruise Rollout's planners stepped together to quiescence over a modelled CloneSet: the
//! Rollout, its BatchRelease, the workload webhook and a CloneSet controller that updates as
//! many pods as the partition lets it. Readable walks through upstream's basic usage, and
//! proptests for the invariants: the canary never runs ahead of the batch allowed, a finished
//! release leaves every pod updated and the workload free, a rollback leaves none on the new
//! revision, and planning again on a plan's outcome asks for nothing more.

use std::collections::BTreeMap;

use jiff::{SignedDuration, Timestamp};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;
use kruise_api::apps::v1beta1::{CloneSet, CloneSetStatus};
use kruise_api::rollouts::v1beta1::{
    BatchRelease, CanaryStep, CanaryStepState, CanaryStrategy, ObjectRef, Rollout, RolloutPause,
    RolloutPhase, RolloutSpec, RolloutStrategy,
};
use kruise_core::plan::{Action, ObjectKind, Plan, Subresource};
use kruise_core::rollouts::admission::hold_workload;
use kruise_core::rollouts::batchrelease::{self, ReleasePod};
use kruise_core::rollouts::{
    CONTROL_INFO_ANNOTATION, IN_PROGRESSING_ANNOTATION, ROLLOUT_BATCH_ID_LABEL, ROLLOUT_ID_LABEL,
    ReleasedWorkload, rollout,
};
use proptest::prelude::*;
use serde_json::{Value, json};

/// The cluster as the planners see it.
struct World {
    rollout: Value,
    batch_release: Option<Value>,
    clone_set: Value,
    /// Pod labels by pod name.
    pods: BTreeMap<String, BTreeMap<String, String>>,
    /// Templates seen, in order: the revision of a template is its index.
    templates: Vec<Value>,
    now: Timestamp,
    generation_of_batch_release: i64,
    /// Services and Ingresses by name.
    services: BTreeMap<String, Value>,
    ingresses: BTreeMap<String, Value>,
    /// The HTTPRoute `demo`, when there is one.
    route: Option<Value>,
    /// Kruise Rollout's `AppendPodSelector` gate.
    append_pod_selector: bool,
}

fn merge(target: &mut Value, patch: &Value) {
    json_patch::merge(target, patch);
}

impl World {
    fn new(replicas: i32, steps: Vec<CanaryStep>) -> Self {
        let rollout = Rollout::new(
            "rollouts-demo",
            RolloutSpec {
                workload_ref: ObjectRef {
                    api_version: "apps.kruise.io/v1alpha1".into(),
                    kind: "CloneSet".into(),
                    name: "demo".into(),
                },
                strategy: RolloutStrategy {
                    canary: Some(CanaryStrategy { steps, ..Default::default() }),
                    ..Default::default()
                },
                disabled: false,
            },
        );
        let mut rollout = serde_json::to_value(&rollout).expect("encodes");
        rollout["metadata"]["namespace"] = json!("default");
        rollout["metadata"]["uid"] = json!("rollout-uid");
        rollout["metadata"]["generation"] = json!(1);
        let clone_set = json!({
            "apiVersion": "apps.kruise.io/v1beta1", "kind": "CloneSet",
            "metadata": {"name": "demo", "namespace": "default", "uid": "cs-uid", "generation": 1},
            "spec": {"replicas": replicas, "template": {"metadata": {"labels": {"app": "demo"}},
                "spec": {"containers": [{"name": "main", "image": "v0"}]}}}
        });
        let mut world = Self {
            rollout,
            batch_release: None,
            templates: vec![clone_set["spec"]["template"].clone()],
            clone_set,
            pods: BTreeMap::new(),
            now: Timestamp::from_second(1_700_000_000).expect("valid"),
            generation_of_batch_release: 0,
            services: BTreeMap::new(),
            ingresses: BTreeMap::new(),
            route: None,
            append_pod_selector: false,
        };
        world.run_clone_set();
        world
    }

    fn typed_rollout(&self) -> Rollout {
        serde_json::from_value(self.rollout.clone()).expect("a Rollout")
    }

    fn typed_batch_release(&self) -> Option<BatchRelease> {
        self.batch_release.clone().map(|b| serde_json::from_value(b).expect("a BatchRelease"))
    }

    fn workload(&self) -> ReleasedWorkload {
        let cs: CloneSet = serde_json::from_value(self.clone_set.clone()).expect("a CloneSet");
        ReleasedWorkload::from_clone_set(&cs)
    }

    fn revision_name(index: usize) -> String {
        format!("demo-r{index}")
    }

    /// The CloneSet controller: the update revision is the template's; pods beyond the
    /// partition are updated; the current revision catches up once all are.
    fn run_clone_set(&mut self) {
        let template = self.clone_set["spec"]["template"].clone();
        let index = match self.templates.iter().position(|t| *t == template) {
            Some(i) => i,
            None => {
                self.templates.push(template);
                self.templates.len() - 1
            }
        };
        let update = Self::revision_name(index);
        let status: CloneSetStatus = self
            .clone_set
            .get("status")
            .cloned()
            .map(|s| serde_json::from_value(s).expect("a status"))
            .unwrap_or_default();
        let current = if status.current_revision.is_empty() {
            update.clone()
        } else {
            status.current_revision.clone()
        };
        let replicas = self.clone_set["spec"]["replicas"].as_i64().unwrap_or(1) as i32;
        let workload = self.workload();
        let partition = workload.partition_replicas().clamp(0, replicas);
        let to_update = replicas - partition;
        let mut updated = 0;
        for i in 0..replicas {
            let name = format!("demo-{i}");
            let labels = self.pods.entry(name).or_default();
            // Pods are updated from the highest ordinal down; the rest keep their revision (a
            // raised partition moves no pod back, as without CloneSetPartitionRollback).
            let revision = if i >= replicas - to_update {
                update.clone()
            } else {
                labels.get("controller-revision-hash").cloned().unwrap_or_else(|| current.clone())
            };
            if labels.get("controller-revision-hash") != Some(&revision) {
                labels.retain(|k, _| k != ROLLOUT_ID_LABEL && k != ROLLOUT_BATCH_ID_LABEL);
                labels.insert("controller-revision-hash".into(), revision.clone());
            }
            updated += i32::from(revision == update);
        }
        let current = if updated == replicas { update.clone() } else { current };
        self.clone_set["status"] = json!({
            "observedGeneration": self.clone_set["metadata"]["generation"],
            "replicas": replicas, "readyReplicas": replicas, "availableReplicas": replicas,
            "updatedReplicas": updated, "updatedReadyReplicas": updated,
            "updateRevision": update, "currentRevision": current,
        });
    }

    /// A user's update of the template, through the workload webhook.
    fn set_image(&mut self, image: &str) {
        let old = self.clone_set.clone();
        let mut new = old.clone();
        new["spec"]["template"]["spec"]["containers"][0]["image"] = json!(image);
        let rollouts = [self.typed_rollout()];
        self.clone_set = hold_workload(&old, &new, &rollouts, &[]).unwrap_or(new);
        self.clone_set["metadata"]["generation"] =
            json!(old["metadata"]["generation"].as_i64().unwrap_or(1) + 1);
        self.run_clone_set();
    }

    /// `kubectl kruise rollout approve`.
    fn approve(&mut self) {
        let state = self.rollout.pointer("/status/canaryStatus/currentStepState").cloned();
        assert_eq!(state, Some(json!("StepPaused")), "approve only a paused step");
        self.rollout["status"]["canaryStatus"]["currentStepState"] = json!("StepReady");
    }

    fn apply<S: serde::Serialize>(&mut self, plan: &Plan<S>, owner_is_rollout: bool) {
        for action in &plan.actions {
            match action {
                Action::PatchObject { target, subresource, patch } => {
                    assert_eq!(*subresource, Subresource::Main);
                    let body = patch.body();
                    if target.kind == ObjectKind::ROLLOUT {
                        merge(&mut self.rollout, body);
                    } else if target.kind == ObjectKind::BATCH_RELEASE {
                        let br =
                            self.batch_release.as_mut().expect("patching an existing BatchRelease");
                        let before = br["spec"].clone();
                        merge(br, body);
                        if br["spec"] != before {
                            self.generation_of_batch_release += 1;
                            br["metadata"]["generation"] = json!(self.generation_of_batch_release);
                        }
                        let finalizers = br
                            .pointer("/metadata/finalizers")
                            .and_then(Value::as_array)
                            .map_or(0, Vec::len);
                        if br.pointer("/metadata/deletionTimestamp").is_some() && finalizers == 0 {
                            self.batch_release = None;
                        }
                    } else if target.kind == ObjectKind::CLONE_SET {
                        let before = self.clone_set["spec"].clone();
                        merge(&mut self.clone_set, body);
                        if self.clone_set["spec"] != before {
                            let generation =
                                self.clone_set["metadata"]["generation"].as_i64().unwrap_or(1);
                            self.clone_set["metadata"]["generation"] = json!(generation + 1);
                        }
                    } else if target.kind == ObjectKind::SERVICE {
                        merge(self.services.get_mut(&target.name).expect("a Service"), body);
                    } else if target.kind == ObjectKind::HTTP_ROUTE {
                        merge(self.route.as_mut().expect("the HTTPRoute"), body);
                    } else if target.kind == ObjectKind::INGRESS {
                        merge(self.ingresses.get_mut(&target.name).expect("an Ingress"), body);
                    } else if target.kind == ObjectKind::POD {
                        let labels = self.pods.get_mut(&target.name).expect("a pod");
                        for (k, v) in body["metadata"]["labels"].as_object().expect("labels") {
                            labels.insert(k.clone(), v.as_str().unwrap_or_default().to_owned());
                        }
                    } else {
                        panic!("unexpected patch of {:?}", target.kind);
                    }
                }
                Action::CreateObject { target, body } if target.kind == ObjectKind::SERVICE => {
                    assert!(
                        self.services.insert(target.name.clone(), body.as_ref().clone()).is_none()
                    );
                }
                Action::CreateObject { target, body } if target.kind == ObjectKind::INGRESS => {
                    assert!(
                        self.ingresses.insert(target.name.clone(), body.as_ref().clone()).is_none()
                    );
                }
                Action::DeleteObject { target } if target.kind == ObjectKind::SERVICE => {
                    assert!(self.services.remove(&target.name).is_some());
                }
                Action::DeleteObject { target } if target.kind == ObjectKind::INGRESS => {
                    assert!(self.ingresses.remove(&target.name).is_some());
                }
                Action::CreateObject { target, body } => {
                    assert_eq!(target.kind, ObjectKind::BATCH_RELEASE);
                    assert!(self.batch_release.is_none(), "the BatchRelease is created once");
                    let mut br = body.as_ref().clone();
                    self.generation_of_batch_release = 1;
                    br["metadata"]["uid"] = json!("br-uid");
                    br["metadata"]["generation"] = json!(1);
                    self.batch_release = Some(br);
                }
                Action::DeleteObject { target } => {
                    assert_eq!(target.kind, ObjectKind::BATCH_RELEASE);
                    if let Some(br) = self.batch_release.as_mut() {
                        let finalizers = br
                            .pointer("/metadata/finalizers")
                            .and_then(Value::as_array)
                            .map_or(0, Vec::len);
                        if finalizers == 0 {
                            self.batch_release = None;
                        } else {
                            br["metadata"]["deletionTimestamp"] = json!("2023-11-14T22:13:20Z");
                        }
                    }
                }
                other => panic!("unexpected action {other:?}"),
            }
        }
        if let Some(status) = &plan.status {
            let status = serde_json::to_value(status).expect("encodes");
            if owner_is_rollout {
                self.rollout["status"] = status;
            } else if let Some(br) = self.batch_release.as_mut() {
                br["status"] = status;
            }
        }
    }

    fn traffic(&self) -> rollout::TrafficObjects {
        let service = |name: &str| {
            self.services.get(name).map(|s| serde_json::from_value(s.clone()).expect("a Service"))
        };
        let ingress = |name: &str| {
            self.ingresses.get(name).map(|i| serde_json::from_value(i.clone()).expect("an Ingress"))
        };
        rollout::TrafficObjects {
            stable_service: service("demo"),
            canary_service: service("demo-canary"),
            ingress: ingress("demo"),
            canary_ingress: ingress("demo-canary"),
            http_route: self.route.clone(),
        }
    }

    /// One round of every controller; returns whether anything changed or is awaited.
    fn round(&mut self) -> bool {
        let mut changed = false;
        let plan = rollout::plan(
            &rollout::Snapshot {
                rollout: self.typed_rollout(),
                workload: Some(self.workload()),
                batch_release: self.typed_batch_release(),
                traffic: self.traffic(),
                traffic_routing: None,
                append_pod_selector: self.append_pod_selector,
            },
            self.now,
        );
        changed |= !plan.is_noop() || plan.requeue_after.is_some();
        self.apply(&plan, true);
        self.run_clone_set();
        if let Some(br) = self.typed_batch_release() {
            let pods = self
                .pods
                .iter()
                .map(|(name, labels)| ReleasePod {
                    name: name.clone(),
                    labels: labels.clone(),
                    ready: true,
                    deleting: false,
                })
                .collect();
            let plan = batchrelease::plan(
                &batchrelease::Snapshot {
                    release: br,
                    workload: Some(self.workload()),
                    pods,
                    canary: None,
                    autoscalers: Vec::new(),
                },
                self.now,
            );
            changed |= !plan.is_noop() || plan.requeue_after.is_some();
            self.apply(&plan, false);
            self.run_clone_set();
        }
        self.check_invariants();
        self.now += SignedDuration::from_secs(1);
        changed
    }

    fn settle(&mut self) {
        for _ in 0..400 {
            if !self.round() {
                // Quiescent: planning again asks for nothing more.
                assert!(!self.round(), "a quiescent world stays quiescent");
                return;
            }
        }
        panic!("no quiescence after 400 rounds: {}", self.rollout["status"]);
    }

    fn updated(&self) -> i32 {
        self.clone_set["status"]["updatedReplicas"].as_i64().unwrap_or(0) as i32
    }

    fn replicas(&self) -> i32 {
        self.clone_set["spec"]["replicas"].as_i64().unwrap_or(0) as i32
    }

    /// The canary never runs ahead of the batch the Rollout allows; traffic never goes to
    /// the canary before a new pod is ready.
    fn check_invariants(&self) {
        let weight = self.ingresses.get("demo-canary").and_then(|i| {
            i.pointer("/metadata/annotations/nginx.ingress.kubernetes.io~1canary-weight")
                .and_then(Value::as_str)
                .and_then(|w| w.parse::<i32>().ok())
        });
        if weight.unwrap_or(0) > 0 {
            let ready = self.clone_set["status"]["updatedReadyReplicas"].as_i64().unwrap_or(0);
            assert!(ready > 0, "traffic to the canary with no new pod ready");
        }
        let Some(br) = self.typed_batch_release() else { return };
        let Some(partition) = br.spec.release_plan.batch_partition else { return };
        let allowed =
            batchrelease::planned_replicas(&br, partition.max(0) as usize, self.replicas());
        let controlled = self.workload().annotations.contains_key(CONTROL_INFO_ANNOTATION);
        if controlled && self.workload().update_revision != self.workload().current_revision {
            assert!(
                self.updated() <= allowed,
                "{} pods updated with batch {partition} allowing {allowed}",
                self.updated()
            );
            // The stable side keeps what the batch leaves it.
            let stable = self
                .pods
                .values()
                .filter(|l| {
                    l.get("controller-revision-hash") == Some(&self.workload().current_revision)
                })
                .count() as i32;
            assert!(
                stable >= self.replicas() - allowed,
                "{stable} stable pods with batch {partition} leaving {}",
                self.replicas() - allowed
            );
        }
    }

    fn step(&self) -> (i64, String) {
        (
            self.rollout["status"]["currentStepIndex"].as_i64().unwrap_or(0),
            self.rollout["status"]["currentStepState"].as_str().unwrap_or_default().to_owned(),
        )
    }

    fn phase(&self) -> String {
        self.rollout["status"]["phase"].as_str().unwrap_or_default().to_owned()
    }

    fn condition(&self, type_: &str) -> Option<(String, String)> {
        self.rollout["status"]["conditions"].as_array()?.iter().find(|c| c["type"] == type_).map(
            |c| {
                (
                    c["status"].as_str().unwrap_or_default().to_owned(),
                    c["reason"].as_str().unwrap_or_default().to_owned(),
                )
            },
        )
    }
}

fn step(replicas: IntOrString, pause: Option<i32>) -> CanaryStep {
    CanaryStep {
        replicas: Some(replicas),
        pause: RolloutPause { duration: pause },
        ..Default::default()
    }
}

fn pct(s: &str) -> IntOrString {
    IntOrString::String(s.into())
}

#[test]
fn basic_usage_steps_through_approvals_to_completion() {
    let mut world = World::new(
        5,
        vec![step(pct("20%"), None), step(pct("50%"), None), step(pct("100%"), None)],
    );
    world.settle();
    assert_eq!(world.phase(), "Healthy");
    assert_eq!(world.step(), (3, "Completed".to_owned()));
    assert_eq!(world.rollout["status"]["message"], "workload deployment is completed");
    assert!(world.batch_release.is_none());

    world.set_image("v1");
    assert_eq!(world.clone_set["spec"]["updateStrategy"]["rollingUpdate"]["partition"], "100%");
    assert_eq!(world.updated(), 0, "held by the webhook");
    world.settle();
    assert_eq!(world.phase(), "Progressing");
    assert_eq!(world.step(), (1, "StepPaused".to_owned()));
    assert_eq!(world.updated(), 1, "20% of 5");
    assert_eq!(
        world.rollout["status"]["message"],
        "Rollout is in step(1/3), and you need manually confirm to enter the next step"
    );
    let br = world.typed_batch_release().expect("a BatchRelease");
    assert_eq!(br.spec.release_plan.batch_partition, Some(0));
    assert_eq!(world.clone_set["spec"]["updateStrategy"]["rollingUpdate"]["partition"], "80%");
    // The updated pod carries the release and batch ids.
    let labelled: Vec<_> = world
        .pods
        .values()
        .filter(|l| l.get(ROLLOUT_BATCH_ID_LABEL).map(String::as_str) == Some("1"))
        .collect();
    assert_eq!(labelled.len(), 1);

    world.approve();
    world.settle();
    assert_eq!(world.step(), (2, "StepPaused".to_owned()));
    assert_eq!(world.updated(), 3, "50% of 5, rounded up");
    let batch_two = world
        .pods
        .values()
        .filter(|l| l.get(ROLLOUT_BATCH_ID_LABEL).map(String::as_str) == Some("2"))
        .count();
    assert_eq!(batch_two, 2);

    world.approve();
    world.settle();
    // The last step is "100%": no pause, and the release winds up.
    assert_eq!(world.phase(), "Healthy");
    assert_eq!(world.step(), (3, "Completed".to_owned()));
    assert_eq!(world.updated(), 5);
    assert_eq!(world.condition("Progressing"), Some(("False".into(), "Completed".into())));
    assert_eq!(world.condition("Succeeded"), Some(("True".into(), "Completed".into())));
    assert_eq!(world.rollout["status"]["message"], "Rollout progressing has been completed");
    assert!(world.batch_release.is_none(), "the BatchRelease is deleted");
    let workload = world.workload();
    assert!(!workload.annotations.contains_key(IN_PROGRESSING_ANNOTATION));
    assert!(!workload.annotations.contains_key(CONTROL_INFO_ANNOTATION));
    assert_eq!(workload.partition, None);
}

#[test]
fn a_timed_pause_goes_on_by_itself() {
    let mut world =
        World::new(4, vec![step(IntOrString::Int(1), Some(5)), step(pct("100%"), None)]);
    world.settle();
    world.set_image("v1");
    // Rounds advance the clock by a second: the 5-second pause passes without approval.
    for _ in 0..100 {
        world.round();
        if world.phase() == "Healthy" {
            break;
        }
    }
    assert_eq!(world.phase(), "Healthy");
    assert_eq!(world.updated(), 4);
}

#[test]
fn a_rollback_mid_release_cancels_it_and_restores_every_pod() {
    let mut world = World::new(5, vec![step(pct("40%"), None), step(pct("100%"), None)]);
    world.settle();
    world.set_image("v1");
    world.settle();
    assert_eq!(world.updated(), 2);
    world.set_image("v0");
    world.settle();
    assert_eq!(world.phase(), "Healthy");
    assert_eq!(world.condition("Succeeded"), Some(("False".into(), "Cancelling".into())));
    assert_eq!(world.rollout["status"]["message"], "Rollout progressing has been cancelled");
    let w = world.workload();
    assert_eq!(w.update_revision, World::revision_name(0));
    assert_eq!(world.updated(), 5, "every pod back on the stable revision");
    assert!(world.pods.values().all(|l| l["controller-revision-hash"] == World::revision_name(0)));
    assert!(world.batch_release.is_none());
}

#[test]
fn a_new_template_mid_release_starts_over() {
    let mut world = World::new(5, vec![step(pct("20%"), None), step(pct("100%"), None)]);
    world.settle();
    world.set_image("v1");
    world.settle();
    world.set_image("v2");
    world.settle();
    assert_eq!(world.step(), (1, "StepPaused".to_owned()));
    assert_eq!(world.workload().update_revision, World::revision_name(2));
    assert_eq!(world.updated(), 1);
    world.approve();
    world.settle();
    assert_eq!(world.phase(), "Healthy");
    assert!(world.pods.values().all(|l| l["controller-revision-hash"] == World::revision_name(2)));
}

#[test]
fn deleting_the_rollout_mid_release_lets_the_workload_go() {
    let mut world = World::new(5, vec![step(pct("20%"), None), step(pct("100%"), None)]);
    world.settle();
    world.set_image("v1");
    world.settle();
    world.rollout["metadata"]["deletionTimestamp"] = json!("2023-11-14T22:13:20Z");
    world.settle();
    assert_eq!(world.rollout["metadata"]["finalizers"], json!([]), "finalizer removed");
    assert_eq!(world.condition("Terminating"), Some(("False".into(), "Completed".into())));
    let w = world.workload();
    assert!(!w.annotations.contains_key(IN_PROGRESSING_ANNOTATION));
    assert!(!w.annotations.contains_key(CONTROL_INFO_ANNOTATION));
    assert!(world.batch_release.is_none());
}

fn steps_strategy() -> impl Strategy<Value = Vec<CanaryStep>> {
    prop::collection::vec(1..=100i32, 1..5).prop_map(|mut percents| {
        percents.sort_unstable();
        let last = percents.len() - 1;
        percents
            .into_iter()
            .enumerate()
            .map(|(i, p)| {
                let replicas = if i == last { pct("100%") } else { pct(&format!("{p}%")) };
                step(replicas, None)
            })
            .collect()
    })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(48))]

    /// Whatever the steps, weights and replicas, with or without traffic routing, approving
    /// every pause finishes the release with every pod updated, the workload released and the
    /// routing wound up; at each pause the canary holds exactly what
    /// the step asks (capped at the replicas); the invariants hold at every round.
    #[test]
    fn every_release_finishes_with_every_pod_updated(
        replicas in 1..12i32,
        steps in steps_strategy(),
        weights in prop::collection::vec(prop::option::of(1..=100i32), 5),
        routed in any::<bool>(),
    ) {
        let steps: Vec<CanaryStep> = steps
            .into_iter()
            .zip(weights)
            .map(|(s, w)| CanaryStep { traffic: w.filter(|_| routed).map(|w| format!("{w}%")), ..s })
            .collect();
        let mut world = World::new(replicas, steps.clone());
        if routed {
            with_traffic(&mut world);
        }
        world.settle();
        world.set_image("v1");
        for _ in 0..steps.len() + 1 {
            world.settle();
            if world.phase() == "Healthy" {
                break;
            }
            let (index, state) = world.step();
            prop_assert_eq!(state, "StepPaused");
            let asked = kruise_core::intstr::scaled_value(
                steps[index as usize - 1].replicas.as_ref().expect("replicas"),
                replicas,
                kruise_core::intstr::Rounding::Up,
            ).expect("valid");
            prop_assert_eq!(world.updated(), asked.min(replicas));
            world.approve();
        }
        prop_assert_eq!(world.phase(), "Healthy");
        prop_assert_eq!(world.updated(), replicas);
        prop_assert!(world.batch_release.is_none());
        let labels = world.workload().annotations;
        prop_assert!(!labels.contains_key(IN_PROGRESSING_ANNOTATION));
        // The routing is wound up.
        prop_assert!(!world.services.contains_key("demo-canary"));
        prop_assert!(!world.ingresses.contains_key("demo-canary"));
        if routed {
            prop_assert_eq!(&world.services["demo"]["spec"]["selector"], &json!({"app": "demo"}));
        }
        prop_assert!(world.rollout["status"]["phase"] == json!(RolloutPhase::Healthy.as_str()));
        let _ = Time(world.now);
        let _ = CanaryStepState::Completed;
    }

    /// A rollback at any step leaves no pod on the new revision once settled.
    #[test]
    fn a_rollback_in_batches_moves_only_back_and_ends_on_the_stable_revision(replicas in 1..12i32, steps in steps_strategy(), at in 0usize..4) {
        let mut world = World::new(replicas, steps.clone());
        world.rollout["metadata"]["annotations"] =
            json!({"rollouts.kruise.io/rollback-in-batch": "true"});
        world.settle();
        world.set_image("v1");
        world.settle();
        for _ in 0..at.min(steps.len().saturating_sub(1)) {
            if world.phase() != "Progressing" { break; }
            world.approve();
            world.settle();
        }
        let new_revision = World::revision_name(1);
        let on_new = |w: &World| w.pods.values().filter(|l| l["controller-revision-hash"] == new_revision).count();
        let mut most = on_new(&world);
        world.set_image("v0");
        world.settle();
        for _ in 0..=steps.len() {
            // A rollback never moves a pod to the revision rolled back from.
            prop_assert!(on_new(&world) <= most, "a pod moved to the new revision in a rollback");
            most = on_new(&world);
            if world.phase() == "Healthy" { break; }
            world.approve();
            world.settle();
        }
        prop_assert_eq!(world.phase(), "Healthy");
        let stable = World::revision_name(0);
        prop_assert!(world.pods.values().all(|l| l["controller-revision-hash"] == stable));
        prop_assert!(world.batch_release.is_none());
    }

    #[test]
    fn a_rollback_at_any_step_leaves_no_pod_on_the_new_revision(replicas in 1..12i32, steps in steps_strategy(), at in 0usize..4) {
        let mut world = World::new(replicas, steps.clone());
        world.settle();
        world.set_image("v1");
        world.settle();
        for _ in 0..at.min(steps.len().saturating_sub(1)) {
            if world.phase() != "Progressing" { break; }
            world.approve();
            world.settle();
        }
        world.set_image("v0");
        world.settle();
        // When every pod had been updated already, the workload's status no longer tells a
        // rollback from a new release (upstream reads it the same way): the old template is
        // then released through the steps again.
        for _ in 0..steps.len() {
            if world.phase() == "Healthy" { break; }
            world.approve();
            world.settle();
        }
        prop_assert_eq!(world.phase(), "Healthy");
        let stable = World::revision_name(0);
        prop_assert!(world.pods.values().all(|l| l["controller-revision-hash"] == stable));
        prop_assert!(world.batch_release.is_none());
    }
}

fn with_traffic(world: &mut World) {
    world.services.insert(
        "demo".into(),
        json!({"apiVersion": "v1", "kind": "Service",
            "metadata": {"name": "demo", "namespace": "default"},
            "spec": {"clusterIP": "10.0.0.7", "clusterIPs": ["10.0.0.7"], "selector": {"app": "demo"},
                "ports": [{"port": 80, "targetPort": 8080, "nodePort": 30080}], "type": "NodePort"}}),
    );
    world.ingresses.insert(
        "demo".into(),
        json!({"apiVersion": "networking.k8s.io/v1", "kind": "Ingress",
            "metadata": {"name": "demo", "namespace": "default",
                "annotations": {"kubernetes.io/ingress.class": "nginx"}},
            "spec": {"rules": [{"host": "demo.example.com", "http": {"paths": [
                {"path": "/apis/echo", "pathType": "Exact",
                 "backend": {"service": {"name": "demo", "port": {"number": 80}}}},
                {"path": "/other", "pathType": "Prefix",
                 "backend": {"service": {"name": "other", "port": {"number": 80}}}}]}}]}}),
    );
    world.rollout["spec"]["strategy"]["canary"]["trafficRoutings"] =
        json!([{"service": "demo", "ingress": {"name": "demo"}}]);
}

fn traffic_step(replicas: &str, traffic: Option<&str>) -> CanaryStep {
    CanaryStep { traffic: traffic.map(str::to_owned), ..step(pct(replicas), None) }
}

#[test]
fn traffic_follows_the_steps_through_a_canary_service_and_ingress() {
    let mut world = World::new(
        5,
        vec![
            traffic_step("20%", Some("5%")),
            traffic_step("40%", Some("50%")),
            traffic_step("100%", None),
        ],
    );
    with_traffic(&mut world);
    world.settle();
    assert!(!world.services.contains_key("demo-canary"), "nothing before a release");
    world.set_image("v1");
    world.settle();
    assert_eq!(world.step(), (1, "StepPaused".to_owned()));
    let canary = &world.services["demo-canary"];
    assert_eq!(canary["spec"]["selector"], json!({"app": "demo", "pod-template-hash": "r1"}));
    assert!(canary["spec"].get("clusterIP").is_none(), "{canary}");
    assert!(canary["spec"]["ports"][0].get("nodePort").is_none(), "{canary}");
    assert_eq!(canary["metadata"]["ownerReferences"][0]["kind"], "Rollout");
    assert_eq!(
        world.services["demo"]["spec"]["selector"],
        json!({"app": "demo", "pod-template-hash": "r0"})
    );
    let ingress = &world.ingresses["demo-canary"];
    let annotations = &ingress["metadata"]["annotations"];
    assert_eq!(annotations["nginx.ingress.kubernetes.io/canary"], "true");
    assert_eq!(annotations["nginx.ingress.kubernetes.io/canary-weight"], "5");
    assert_eq!(annotations["kubernetes.io/ingress.class"], "nginx");
    let paths = &ingress["spec"]["rules"][0]["http"]["paths"];
    assert_eq!(paths.as_array().map(Vec::len), Some(1), "only the stable Service's path");
    assert_eq!(paths[0]["backend"]["service"]["name"], "demo-canary");

    world.approve();
    world.settle();
    assert_eq!(world.step(), (2, "StepPaused".to_owned()));
    assert_eq!(
        world.ingresses["demo-canary"]["metadata"]["annotations"]["nginx.ingress.kubernetes.io/canary-weight"],
        "50"
    );
    world.approve();
    world.settle();
    // The last step has no traffic: the routing is wound up before it, then the release ends.
    assert_eq!(world.phase(), "Healthy");
    assert_eq!(world.updated(), 5);
    assert!(!world.services.contains_key("demo-canary"));
    assert!(!world.ingresses.contains_key("demo-canary"));
    assert_eq!(world.services["demo"]["spec"]["selector"], json!({"app": "demo"}));
}

#[test]
fn a_rollback_with_traffic_restores_the_stable_routing() {
    let mut world =
        World::new(5, vec![traffic_step("20%", Some("10%")), traffic_step("100%", None)]);
    with_traffic(&mut world);
    world.settle();
    world.set_image("v1");
    world.settle();
    assert!(world.ingresses.contains_key("demo-canary"));
    world.set_image("v0");
    world.settle();
    assert_eq!(world.phase(), "Healthy");
    assert!(!world.services.contains_key("demo-canary"));
    assert!(!world.ingresses.contains_key("demo-canary"));
    assert_eq!(world.services["demo"]["spec"]["selector"], json!({"app": "demo"}));
    assert_eq!(world.updated(), 5);
}

fn with_route(world: &mut World) {
    with_traffic(world);
    world.ingresses.clear();
    world.route = Some(json!({"apiVersion": "gateway.networking.k8s.io/v1", "kind": "HTTPRoute",
        "metadata": {"name": "demo", "namespace": "default", "resourceVersion": "1"},
        "spec": {"parentRefs": [{"name": "gw"}], "rules": [
            {"matches": [{"path": {"type": "PathPrefix", "value": "/apis"}}],
             "backendRefs": [{"name": "demo", "port": 80}]},
            {"backendRefs": [{"name": "other", "port": 80}]}]}}));
    world.rollout["spec"]["strategy"]["canary"]["trafficRoutings"] =
        json!([{"service": "demo", "gateway": {"httpRouteName": "demo"}}]);
}

#[test]
fn a_gateway_route_carries_the_weight_then_the_matches_and_is_restored() {
    let mut world = World::new(
        5,
        vec![traffic_step("20%", Some("20%")), step(pct("40%"), None), step(pct("100%"), None)],
    );
    // The second step routes by header instead of weight.
    world.rollout["spec"]["strategy"]["canary"]["steps"][1]["matches"] =
        json!([{"headers": [{"name": "user-agent", "value": "canary"}]}]);
    with_route(&mut world);
    world.settle();
    world.set_image("v1");
    world.settle();
    assert_eq!(world.step(), (1, "StepPaused".to_owned()));
    let rules = world.route.as_ref().map(|r| r["spec"]["rules"].clone()).unwrap_or_default();
    assert_eq!(
        rules[0]["backendRefs"],
        json!([{"name": "demo", "port": 80, "weight": 80}, {"name": "demo-canary", "port": 80, "weight": 20}])
    );
    assert_eq!(
        rules[1],
        json!({"backendRefs": [{"name": "other", "port": 80}]}),
        "other rules untouched"
    );

    world.approve();
    world.settle();
    assert_eq!(world.step(), (2, "StepPaused".to_owned()));
    let rules = world.route.as_ref().map(|r| r["spec"]["rules"].clone()).unwrap_or_default();
    assert_eq!(rules.as_array().map(Vec::len), Some(3), "{rules}");
    assert_eq!(
        rules[0]["backendRefs"],
        json!([{"name": "demo", "port": 80, "weight": 1}]),
        "no weight to the canary"
    );
    assert_eq!(
        rules[2],
        json!({"matches": [{"path": {"type": "PathPrefix", "value": "/apis"},
                            "headers": [{"name": "user-agent", "value": "canary"}]}],
               "backendRefs": [{"name": "demo-canary", "port": 80}]})
    );

    world.approve();
    world.settle();
    assert_eq!(world.phase(), "Healthy");
    let rules = world.route.as_ref().map(|r| r["spec"]["rules"].clone()).unwrap_or_default();
    assert_eq!(
        rules,
        json!([{"matches": [{"path": {"type": "PathPrefix", "value": "/apis"}}],
                "backendRefs": [{"name": "demo", "port": 80, "weight": 1}]},
               {"backendRefs": [{"name": "other", "port": 80}]}])
    );
    assert!(!world.services.contains_key("demo-canary"));
}

#[test]
fn without_a_canary_service_the_route_sends_the_canary_side_to_the_stable_service() {
    let mut world = World::new(4, vec![step(pct("50%"), None), step(pct("100%"), None)]);
    world.rollout["spec"]["strategy"]["canary"]["steps"][0]["matches"] =
        json!([{"headers": [{"name": "x-lane", "value": "gray"}]}]);
    with_route(&mut world);
    world.rollout["spec"]["strategy"]["canary"]["disableGenerateCanaryService"] = json!(true);
    world.settle();
    world.set_image("v1");
    world.settle();
    assert_eq!(world.step(), (1, "StepPaused".to_owned()));
    assert!(!world.services.contains_key("demo-canary"), "no canary Service");
    assert_eq!(
        world.services["demo"]["spec"]["selector"],
        json!({"app": "demo"}),
        "the stable Service's selector is left alone"
    );
    let rules = world.route.as_ref().map(|r| r["spec"]["rules"].clone()).unwrap_or_default();
    assert_eq!(
        rules[2],
        json!({"matches": [{"path": {"type": "PathPrefix", "value": "/apis"},
                            "headers": [{"name": "x-lane", "value": "gray"}]}],
               "backendRefs": [{"name": "demo", "port": 80}]}),
        "{rules}"
    );
    world.approve();
    world.settle();
    assert_eq!(world.phase(), "Healthy");
    assert_eq!(world.updated(), 4);
    let rules = world.route.as_ref().map(|r| r["spec"]["rules"].clone()).unwrap_or_default();
    assert_eq!(rules.as_array().map(Vec::len), Some(2), "the match rule is gone: {rules}");
    assert!(!world.services.contains_key("demo-canary"));
}

#[test]
fn the_canary_service_selects_the_patched_labels_it_shares_and_with_the_gate_all() {
    for append in [false, true] {
        let mut world =
            World::new(4, vec![traffic_step("50%", Some("50%")), step(pct("100%"), None)]);
        with_traffic(&mut world);
        world.append_pod_selector = append;
        world.rollout["spec"]["strategy"]["canary"]["patchPodTemplateMetadata"] =
            json!({"labels": {"app": "demo-gray", "lane": "gray"}});
        world.settle();
        world.set_image("v1");
        world.settle();
        assert_eq!(world.step(), (1, "StepPaused".to_owned()));
        let selector = &world.services["demo-canary"]["spec"]["selector"];
        let mut expected = json!({"app": "demo-gray", "pod-template-hash": "r1"});
        if append {
            expected["lane"] = json!("gray");
        }
        assert_eq!(*selector, expected, "AppendPodSelector={append}");
    }
}
