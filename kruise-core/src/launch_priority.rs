//! Container launch priority: a pod's containers start in priority order.
//!
//! A pod asks for it with the annotation `apps.kruise.io/container-launch-priority: Ordered`
//! (the containers start in spec order), or with an env `KRUISE_CONTAINER_PRIORITY` on its
//! containers (higher starts first; a container without it has priority 0). The kubelet starts
//! the containers; what holds a container back is an env `KRUISE_CONTAINER_BARRIER` taken
//! from the key `p_<priority>` of the pod's barrier ConfigMap `<pod>-barrier`: the kubelet does
//! not start a container whose key is missing, and tries again. The controller adds the keys
//! one priority at a time, each once the containers of every higher priority are ready, and
//! marks the pod `apps.kruise.io/container-launch-priority-completed: "true"` when the last
//! key is in.
//!
//! - [`LaunchPriorityStep`], the pod webhook's step, injects the barrier envs (and names a pod
//!   created with `generateName`, so the envs can name its ConfigMap).
//! - [`plan`], the controller's plan for one pod, from the pod and its barrier.
//!
//! Difference from upstream, to write less: the containers of the highest priority get no
//! barrier env. Nothing holds them, so they start at once, and the barrier is created only
//! when the next priority is due, with that priority's key in it. For `n` priorities a pod
//! costs `n` writes (`n - 1` to the barrier, the first a create, and the completed mark);
//! upstream's costs `n + 2` (an empty barrier, one key per priority, the mark), and holds
//! every container until the manager has created the barrier. In-place updates read the
//! priority from the barrier env ([`crate::inplace::container_priority`]); a container
//! without one is updated in the first batch, as those of the highest priority are anyway.

use std::collections::BTreeSet;
use std::sync::Arc;

use k8s_openapi::api::core::v1::{
    ConfigMap, ConfigMapKeySelector, Container, EnvVar, EnvVarSource, Pod,
};
use kruise_api::well_known::annotations::{
    CONTAINER_LAUNCH_PRIORITY, CONTAINER_LAUNCH_PRIORITY_COMPLETED,
};
use serde_json::json;

use crate::admission::pod_chain::{PodMutationError, PodMutator, PodStep};
use crate::admission::pod_edit::PodEdit;
use crate::expectations::ControllerExpectations;
use crate::plan::{Action, ObjectKind, Patch, Plan, PodPatchPurpose, Subresource, Target};

/// The env a container's priority is asked with.
pub const PRIORITY_ENV: &str = kruise_api::well_known::env::container::KRUISE_CONTAINER_PRIORITY;
/// The env the webhook gives a container to hold it back.
pub const BARRIER_ENV: &str = kruise_api::well_known::env::container::KRUISE_CONTAINER_BARRIER;
/// The annotation value that asks for spec order.
pub const ORDERED: &str = "Ordered";
/// The lowest priority a container may ask for.
pub const MIN_PRIORITY: i64 = -2_147_483_647;
/// The highest priority a container may ask for.
pub const MAX_PRIORITY: i64 = 2_147_483_647;

/// The name of `pod`'s barrier ConfigMap.
pub fn barrier_name(pod: &str) -> String {
    format!("{pod}-barrier")
}

/// The barrier key of `priority`.
pub fn barrier_key(priority: i64) -> String {
    format!("p_{priority}")
}

/// The priority of each container (in spec order) the pod asks for, or `None` when it asks
/// for none: a single container, no `Ordered` annotation and no priority env, or every
/// container at the same priority.
///
/// # Errors
/// A `KRUISE_CONTAINER_PRIORITY` value that is not an integer in
/// [[`MIN_PRIORITY`], [`MAX_PRIORITY`]], named by its field path.
pub fn requested_priorities(pod: &Pod) -> Result<Option<Vec<i64>>, String> {
    let containers = pod.spec.as_ref().map(|s| s.containers.as_slice()).unwrap_or_default();
    if containers.len() <= 1 {
        return Ok(None);
    }
    let ordered = pod
        .metadata
        .annotations
        .as_ref()
        .and_then(|a| a.get(CONTAINER_LAUNCH_PRIORITY))
        .is_some_and(|v| v == ORDERED);
    if ordered {
        return Ok(Some((0..containers.len()).map(|i| -(i as i64)).collect()));
    }
    let mut priorities = Vec::with_capacity(containers.len());
    for (i, container) in containers.iter().enumerate() {
        let mut priority = 0;
        for (j, env) in container.env.iter().flatten().enumerate() {
            if env.name != PRIORITY_ENV {
                continue;
            }
            let value = env.value.as_deref().unwrap_or_default();
            priority = value
                .trim()
                .parse::<i64>()
                .ok()
                .filter(|p| (MIN_PRIORITY..=MAX_PRIORITY).contains(p))
                .ok_or_else(|| {
                    format!(
                        "spec.containers[{i}].env[{j}].value: Invalid value: {value:?}: \
                         {PRIORITY_ENV} must be an integer from {MIN_PRIORITY} to {MAX_PRIORITY}"
                    )
                })?;
        }
        priorities.push(priority);
    }
    let first = priorities[0];
    Ok(priorities.iter().any(|p| *p != first).then_some(priorities))
}

/// The barrier env of a container of priority `priority` in pod `pod`.
pub fn barrier_env(pod: &str, priority: i64) -> EnvVar {
    EnvVar {
        name: BARRIER_ENV.to_owned(),
        value: None,
        value_from: Some(EnvVarSource {
            config_map_key_ref: Some(ConfigMapKeySelector {
                name: barrier_name(pod),
                key: barrier_key(priority),
                optional: None,
            }),
            ..EnvVarSource::default()
        }),
    }
}

/// The pod webhook's launch-priority step.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct LaunchPriorityStep {
    /// Five characters to end the name of a pod created with `generateName` and no name, as
    /// the API server would (the caller draws them; this step has no randomness).
    pub name_suffix: String,
}

impl PodMutator for LaunchPriorityStep {
    fn step(&self) -> PodStep {
        PodStep::ContainerLaunchPriority
    }

    fn mutate(&self, pod: &mut PodEdit<'_>) -> Result<(), PodMutationError> {
        let priorities = requested_priorities(pod.pod()).map_err(|message| {
            PodMutationError::Step { step: PodStep::ContainerLaunchPriority, message }
        })?;
        let Some(priorities) = priorities else { return Ok(()) };
        let meta = &pod.pod().metadata;
        let name = match (meta.name.as_deref(), meta.generate_name.as_deref()) {
            (Some(name), _) if !name.is_empty() => name.to_owned(),
            (_, Some(prefix)) if !prefix.is_empty() => {
                let name = format!("{prefix}{}", self.name_suffix);
                pod.pod_mut().metadata.name = Some(name.clone());
                name
            }
            _ => {
                return Err(PodMutationError::Step {
                    step: PodStep::ContainerLaunchPriority,
                    message: "metadata.name: Required value: name or generateName is required"
                        .into(),
                });
            }
        };
        let top = priorities.iter().copied().max().unwrap_or_default();
        let containers = pod.containers_mut();
        for (container, priority) in containers.iter_mut().zip(priorities) {
            if priority < top {
                set_barrier(container, barrier_env(&name, priority));
            }
        }
        Ok(())
    }
}

/// Replaces the container's barrier env, or appends it.
fn set_barrier(container: &mut Container, env: EnvVar) {
    let list = container.env.get_or_insert_with(Vec::new);
    match list.iter_mut().find(|e| e.name == BARRIER_ENV) {
        Some(existing) if *existing == env => {}
        Some(existing) => *existing = env,
        None => list.push(env),
    }
}

/// The priority a container's barrier env names (`p_<n>`), if it has one that parses.
fn barrier_priority(container: &Container) -> Option<i64> {
    container
        .env
        .iter()
        .flatten()
        .find(|e| e.name == BARRIER_ENV)?
        .value_from
        .as_ref()?
        .config_map_key_ref
        .as_ref()?
        .key
        .strip_prefix("p_")?
        .parse()
        .ok()
}

/// Whether the pod has any barrier env: the pods the controller looks after.
pub fn has_barrier(pod: &Pod) -> bool {
    pod.spec.iter().flat_map(|s| s.containers.iter()).any(|c| barrier_priority(c).is_some())
}

fn completed(pod: &Pod) -> bool {
    pod.metadata
        .annotations
        .as_ref()
        .and_then(|a| a.get(CONTAINER_LAUNCH_PRIORITY_COMPLETED))
        .is_some_and(|v| v == "true")
}

/// The controller's plan for `pod`, whose barrier ConfigMap is `barrier` (`None` while it does
/// not exist):
/// - nothing for a pod being deleted, already marked completed, or without barrier envs;
/// - the barrier key of the highest priority whose containers are not all ready, once every
///   container above it (and every container without a barrier env) is ready: the barrier is
///   created with it, or patched;
/// - the completed mark once the key of the lowest priority not yet ready is in, or with it.
pub fn plan(pod: &Pod, barrier: Option<&ConfigMap>) -> Plan<()> {
    let mut plan = Plan::empty(ControllerExpectations::default());
    if pod.metadata.deletion_timestamp.is_some() || completed(pod) || !has_barrier(pod) {
        return plan;
    }
    let ready: BTreeSet<&str> = pod
        .status
        .iter()
        .flat_map(|s| s.container_statuses.iter().flatten())
        .filter(|s| s.ready)
        .map(|s| s.name.as_str())
        .collect();
    let containers = pod.spec.as_ref().map(|s| s.containers.as_slice()).unwrap_or_default();
    let mut pending = BTreeSet::new();
    let mut unheld_ready = true;
    for container in containers {
        let is_ready = ready.contains(container.name.as_str());
        match barrier_priority(container) {
            Some(priority) if !is_ready => {
                pending.insert(priority);
            }
            None if !is_ready => unheld_ready = false,
            _ => {}
        }
    }
    let in_barrier = |p: i64| {
        barrier.and_then(|b| b.data.as_ref()).is_some_and(|d| d.contains_key(&barrier_key(p)))
    };
    let (Some(&lowest), Some(&next)) = (pending.first(), pending.last()) else {
        push_completed(&mut plan, pod);
        return plan;
    };
    if in_barrier(lowest) {
        push_completed(&mut plan, pod);
        return plan;
    }
    if !unheld_ready {
        return plan;
    }
    if !in_barrier(next) {
        let pod_name = pod.metadata.name.clone().unwrap_or_default();
        let namespace = pod.metadata.namespace.clone();
        let name = barrier_name(&pod_name);
        let target = Target::new(ObjectKind::CONFIG_MAP, namespace.as_deref(), &name);
        let key = barrier_key(next);
        plan.actions.push(match barrier {
            None => Action::CreateObject {
                target,
                body: Arc::new(json!({
                    "apiVersion": "v1",
                    "kind": "ConfigMap",
                    "metadata": {
                        "name": name,
                        "namespace": namespace,
                        "ownerReferences": [{
                            "apiVersion": "v1",
                            "kind": "Pod",
                            "name": pod_name,
                            "uid": pod.metadata.uid,
                        }],
                    },
                    "data": {key: "true"},
                })),
            },
            Some(_) => Action::PatchObject {
                target,
                subresource: Subresource::Main,
                patch: Patch::merge(json!({"data": {key: "true"}})),
            },
        });
    }
    if next == lowest {
        push_completed(&mut plan, pod);
    }
    plan
}

fn push_completed(plan: &mut Plan<()>, pod: &Pod) {
    plan.actions.push(Action::PatchPod {
        namespace: pod.metadata.namespace.clone(),
        name: pod.metadata.name.clone().unwrap_or_default(),
        uid: pod.metadata.uid.clone().unwrap_or_default(),
        purpose: PodPatchPurpose::LaunchPriorityCompleted,
        patch: Patch::strategic(
            json!({"metadata": {"annotations": {CONTAINER_LAUNCH_PRIORITY_COMPLETED: "true"}}}),
        ),
    });
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::admission::pod_chain::PodChain;
    use k8s_openapi::api::core::v1::{ContainerStatus, PodSpec, PodStatus};
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;

    fn container(name: &str, priority: Option<&str>) -> Container {
        Container {
            name: name.into(),
            image: Some("busybox".into()),
            env: priority.map(|p| {
                vec![EnvVar { name: PRIORITY_ENV.into(), value: Some(p.into()), value_from: None }]
            }),
            ..Container::default()
        }
    }

    fn pod(containers: Vec<Container>) -> Pod {
        Pod {
            metadata: ObjectMeta {
                name: Some("p".into()),
                namespace: Some("ns".into()),
                uid: Some("u1".into()),
                ..ObjectMeta::default()
            },
            spec: Some(PodSpec { containers, ..PodSpec::default() }),
            status: None,
        }
    }

    fn admit(pod: &mut Pod) -> Result<(), PodMutationError> {
        let step = LaunchPriorityStep { name_suffix: "x7k2q".into() };
        PodChain::new(vec![&step]).run(pod).map(|_| ())
    }

    fn barriers(pod: &Pod) -> Vec<Option<String>> {
        pod.spec
            .iter()
            .flat_map(|s| s.containers.iter())
            .map(|c| barrier_priority(c).map(barrier_key))
            .collect()
    }

    fn with_ready(mut pod: Pod, ready: &[&str]) -> Pod {
        let statuses = pod.spec.iter().flat_map(|s| s.containers.iter()).map(|c| ContainerStatus {
            name: c.name.clone(),
            ready: ready.contains(&c.name.as_str()),
            ..ContainerStatus::default()
        });
        pod.status = Some(PodStatus {
            container_statuses: Some(statuses.collect()),
            ..PodStatus::default()
        });
        pod
    }

    fn barrier_with(keys: &[i64]) -> ConfigMap {
        ConfigMap {
            data: Some(keys.iter().map(|p| (barrier_key(*p), "true".into())).collect()),
            ..ConfigMap::default()
        }
    }

    /// The actions, as short words: `create p_1`, `patch p_0`, `completed`.
    fn words(plan: &Plan<()>) -> Vec<String> {
        plan.actions
            .iter()
            .map(|a| match a {
                Action::CreateObject { body, .. } => {
                    let keys: Vec<&String> =
                        body["data"].as_object().map(|d| d.keys().collect()).unwrap_or_default();
                    format!("create {}", keys.first().map_or("", |k| k.as_str()))
                }
                Action::PatchObject { patch: Patch::Merge(body), .. } => {
                    let keys: Vec<&String> =
                        body["data"].as_object().map(|d| d.keys().collect()).unwrap_or_default();
                    format!("patch {}", keys.first().map_or("", |k| k.as_str()))
                }
                Action::PatchPod { purpose: PodPatchPurpose::LaunchPriorityCompleted, .. } => {
                    "completed".into()
                }
                other => format!("{other:?}"),
            })
            .collect()
    }

    #[test]
    fn ordered_holds_every_container_but_the_first() {
        let mut p = pod(vec![container("a", None), container("b", None), container("c", None)]);
        p.metadata.annotations = Some([(CONTAINER_LAUNCH_PRIORITY.into(), ORDERED.into())].into());
        admit(&mut p).expect("admitted");
        assert_eq!(barriers(&p), [None, Some("p_-1".into()), Some("p_-2".into())]);
        let env = &p.spec.as_ref().expect("spec").containers[1].env.as_ref().expect("env")[0];
        let key_ref = env.value_from.as_ref().and_then(|v| v.config_map_key_ref.as_ref());
        assert_eq!(key_ref.map(|r| r.name.as_str()), Some("p-barrier"));
    }

    #[test]
    fn env_priorities_rank_and_a_missing_one_is_zero() {
        let mut p = pod(vec![
            container("low", Some("-5")),
            container("plain", None),
            container("high", Some("10")),
        ]);
        admit(&mut p).expect("admitted");
        assert_eq!(barriers(&p), [Some("p_-5".into()), Some("p_0".into()), None]);
    }

    #[test]
    fn no_priority_asked_changes_nothing() {
        for containers in [
            vec![container("only", Some("3"))],
            vec![container("a", Some("2")), container("b", Some("2"))],
            vec![container("a", None), container("b", None)],
        ] {
            let mut p = pod(containers);
            let before = p.clone();
            admit(&mut p).expect("admitted");
            assert_eq!(p, before);
        }
    }

    #[test]
    fn a_bad_priority_is_refused_naming_the_field() {
        for bad in ["abc", "2147483648", "-2147483648", ""] {
            let mut p = pod(vec![container("a", None), container("b", Some(bad))]);
            let err = admit(&mut p).expect_err("refused").to_string();
            assert!(err.contains("spec.containers[1].env[0].value"), "{err}");
            assert!(err.contains("must be an integer"), "{err}");
        }
        let mut edge =
            pod(vec![container("a", Some("-2147483647")), container("b", Some("2147483647"))]);
        admit(&mut edge).expect("the bounds are allowed");
    }

    #[test]
    fn a_generated_name_is_drawn_so_the_barrier_can_be_named() {
        let mut p = pod(vec![container("a", Some("1")), container("b", None)]);
        p.metadata.name = None;
        p.metadata.generate_name = Some("web-".into());
        admit(&mut p).expect("admitted");
        assert_eq!(p.metadata.name.as_deref(), Some("web-x7k2q"));
        let spec = p.spec.as_ref().expect("spec");
        let env = &spec.containers[1].env.as_ref().expect("env")[0];
        let key_ref = env.value_from.as_ref().and_then(|v| v.config_map_key_ref.as_ref());
        assert_eq!(key_ref.map(|r| r.name.as_str()), Some("web-x7k2q-barrier"));
    }

    #[test]
    fn a_user_barrier_env_is_replaced_not_doubled() {
        let mut b = container("b", None);
        b.env = Some(vec![barrier_env("other", 7)]);
        let mut p = pod(vec![container("a", Some("1")), b]);
        admit(&mut p).expect("admitted");
        let env = p.spec.as_ref().expect("spec").containers[1].env.clone().expect("env");
        assert_eq!(env, vec![barrier_env("p", 0)]);
    }

    /// Three priorities: the first starts unheld, then one key per priority as the ones above
    /// are ready, the last with the completed mark: three writes in all.
    #[test]
    fn keys_follow_readiness_and_the_last_comes_with_the_mark() {
        let mut p =
            pod(vec![container("a", Some("2")), container("b", Some("1")), container("c", None)]);
        admit(&mut p).expect("admitted");
        assert_eq!(barriers(&p), [None, Some("p_1".into()), Some("p_0".into())]);

        assert!(words(&plan(&with_ready(p.clone(), &[]), None)).is_empty(), "a is not ready yet");
        assert_eq!(words(&plan(&with_ready(p.clone(), &["a"]), None)), ["create p_1"]);
        let one = barrier_with(&[1]);
        assert!(words(&plan(&with_ready(p.clone(), &["a"]), Some(&one))).is_empty(), "b not ready");
        assert_eq!(
            words(&plan(&with_ready(p.clone(), &["a", "b"]), Some(&one))),
            ["patch p_0", "completed"]
        );
        let both = barrier_with(&[1, 0]);
        assert_eq!(words(&plan(&with_ready(p.clone(), &["a", "b"]), Some(&both))), ["completed"]);

        let mut done = with_ready(p.clone(), &["a", "b", "c"]);
        done.metadata.annotations =
            Some([(CONTAINER_LAUNCH_PRIORITY_COMPLETED.into(), "true".into())].into());
        assert!(plan(&done, Some(&both)).actions.is_empty());
    }

    /// A pod from upstream's webhook has barrier envs on every container, the first priority
    /// included: its key is given at once, with the barrier.
    #[test]
    fn an_upstream_pod_gets_its_first_key_at_once() {
        let mut a = container("a", None);
        a.env = Some(vec![barrier_env("p", 0)]);
        let mut b = container("b", None);
        b.env = Some(vec![barrier_env("p", -1)]);
        let p = pod(vec![a, b]);
        assert_eq!(words(&plan(&with_ready(p.clone(), &[]), None)), ["create p_0"]);
        let zero = barrier_with(&[0]);
        assert_eq!(
            words(&plan(&with_ready(p.clone(), &["a"]), Some(&zero))),
            ["patch p_-1", "completed"]
        );
    }

    #[test]
    fn the_barrier_is_owned_by_the_pod() {
        let mut p = pod(vec![container("a", Some("1")), container("b", None)]);
        admit(&mut p).expect("admitted");
        let planned = plan(&with_ready(p, &["a"]), None);
        let Some(Action::CreateObject { body, target }) = planned.actions.first() else {
            panic!("a create: {:?}", planned.actions);
        };
        assert_eq!(target.name, "p-barrier");
        assert_eq!(body["metadata"]["ownerReferences"][0]["kind"], "Pod");
        assert_eq!(body["metadata"]["ownerReferences"][0]["uid"], "u1");
        assert_eq!(body["data"], json!({"p_0": "true"}));
    }
}
