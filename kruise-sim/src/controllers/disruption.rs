//! The disruption controller, as kube-controller-manager runs it: the status of every
//! PodDisruptionBudget, which the API server's eviction reads.
//!
//! For a budget, the pods its selector matches in its namespace are counted:
//!
//! - `expectedPods`: with `maxUnavailable` or a percentage `minAvailable`, the replicas of the
//!   pods' controllers (a ReplicaSet's Deployment, a ReplicaSet, a StatefulSet, a
//!   ReplicationController, or any owner with a `scale` subresource); with an integer
//!   `minAvailable`, the number of pods;
//! - `desiredHealthy`: `minAvailable` (a percentage rounded up), or `expectedPods` less
//!   `maxUnavailable` (a percentage rounded up);
//! - `currentHealthy`: pods that are Ready and not being deleted, leaving out those an eviction
//!   took in the last two minutes (`disruptedPods`) until they are gone;
//! - `disruptionsAllowed`: `currentHealthy - desiredHealthy`, not below 0, with the
//!   `DisruptionAllowed` condition (`SufficientPods` / `InsufficientPods`).
//!
//! A pod whose controller's replicas cannot be read makes the budget's status
//! `disruptionsAllowed: 0` with the condition `False`, reason `SyncFailed`, as
//! kube-controller-manager does.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use k8s_openapi::api::apps::v1::{Deployment, ReplicaSet, StatefulSet};
use k8s_openapi::api::core::v1::{Pod, ReplicationController};
use k8s_openapi::api::policy::v1::PodDisruptionBudget;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{OwnerReference, Time};
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;
use kube::api::{Api, Patch, PatchParams};
use kube::runtime::reflector::{ObjectRef, Store};
use kube::{Client, ResourceExt as _};
use serde_json::{Value, json};
use tokio::sync::mpsc::UnboundedReceiver;

use super::{Error, api_error};

/// How long an evicted pod stays out of `currentHealthy` while it is not yet deleted.
const DELETION_TIMEOUT: jiff::SignedDuration = jiff::SignedDuration::from_secs(120);

struct Context {
    client: Client,
    pods: Store<Pod>,
}

type Key = ObjectRef<PodDisruptionBudget>;

/// Runs the controller until the task is aborted.
pub(crate) async fn run(
    client: Client,
    (pods, mut pod_events): (Store<Pod>, UnboundedReceiver<Pod>),
) {
    let mut budget_cache = super::SharedCache::<PodDisruptionBudget>::new();
    let (budgets, mut budget_events) = budget_cache.subscribe();
    let watch_budgets = budget_cache.run(client.clone());
    let (queue, keys) = tokio::sync::mpsc::unbounded_channel::<Key>();
    let own_queue = queue.clone();
    let feed_budgets = async move {
        while let Some(budget) = budget_events.recv().await {
            let _ = own_queue.send(ObjectRef::from_obj(&budget));
        }
    };
    // Any pod change queues the budgets of its namespace (few, in a simulated cluster).
    let pod_queue = queue.clone();
    let pod_budgets = budgets.clone();
    let feed_pods = async move {
        while let Some(pod) = pod_events.recv().await {
            for budget in pod_budgets.state() {
                if budget.namespace() == pod.namespace() {
                    let _ = pod_queue.send(ObjectRef::from_obj(budget.as_ref()));
                }
            }
        }
    };
    let context = Arc::new(Context { client, pods });
    let ready = context.clone();
    let worker = async move {
        ready.pods.wait_until_ready().await.ok();
        super::work(budgets, queue, keys, move |budget| {
            let context = context.clone();
            async move { reconcile(budget, context).await.unwrap_or(Some(Duration::from_secs(1))) }
        })
        .await;
    };
    futures::future::join4(watch_budgets, feed_budgets, feed_pods, worker).await;
}

/// An int-or-percent of `total`, percentages rounded up.
fn resolve(value: &IntOrString, total: i32) -> i32 {
    match value {
        IntOrString::Int(n) => *n,
        IntOrString::String(s) => s
            .strip_suffix('%')
            .and_then(|p| p.parse::<i64>().ok())
            .map_or(0, |p| i32::try_from((p * i64::from(total) + 99) / 100).unwrap_or(i32::MAX)),
    }
}

fn is_percent(value: &IntOrString) -> bool {
    matches!(value, IntOrString::String(_))
}

/// The replicas of the pods' controllers, each controller counted once.
async fn expected_pods(client: &Client, namespace: &str, pods: &[Arc<Pod>]) -> Result<i32, String> {
    let mut seen: BTreeMap<String, i32> = BTreeMap::new();
    for pod in pods {
        let Some(owner) = pod.owner_references().iter().find(|o| o.controller == Some(true)) else {
            return Err(format!("found no controllers for pod {:?}", pod.name_any()));
        };
        let (uid, replicas) = controller_scale(client, namespace, owner).await?;
        seen.insert(uid, replicas);
    }
    Ok(seen.values().sum())
}

/// The uid and replicas of the controller `owner` names (a ReplicaSet's Deployment when it
/// has one).
async fn controller_scale(
    client: &Client,
    namespace: &str,
    owner: &OwnerReference,
) -> Result<(String, i32), String> {
    let failed =
        |e: kube::Error| format!("reading the scale of {} {:?}: {e}", owner.kind, owner.name);
    match (owner.api_version.as_str(), owner.kind.as_str()) {
        ("apps/v1", "ReplicaSet") => {
            let set = Api::<ReplicaSet>::namespaced(client.clone(), namespace)
                .get(&owner.name)
                .await
                .map_err(failed)?;
            if let Some(deployment) = set
                .owner_references()
                .iter()
                .find(|o| o.controller == Some(true) && o.kind == "Deployment")
            {
                let d = Api::<Deployment>::namespaced(client.clone(), namespace)
                    .get(&deployment.name)
                    .await
                    .map_err(failed)?;
                return Ok((deployment.uid.clone(), d.spec.replicas.unwrap_or(1)));
            }
            Ok((owner.uid.clone(), set.spec.replicas.unwrap_or(1)))
        }
        ("apps/v1", "StatefulSet") => {
            let set = Api::<StatefulSet>::namespaced(client.clone(), namespace)
                .get(&owner.name)
                .await
                .map_err(failed)?;
            Ok((owner.uid.clone(), set.spec.replicas.unwrap_or(1)))
        }
        ("v1", "ReplicationController") => {
            let rc = Api::<ReplicationController>::namespaced(client.clone(), namespace)
                .get(&owner.name)
                .await
                .map_err(failed)?;
            Ok((owner.uid.clone(), rc.spec.and_then(|s| s.replicas).unwrap_or(1)))
        }
        (api_version, kind) => {
            // Any other owner through its scale subresource.
            let (group, version) = api_version.split_once('/').unwrap_or(("", api_version));
            let gvk = kube::api::GroupVersionKind::gvk(group, version, kind);
            let (resource, _) = kube::discovery::pinned_kind(client, &gvk).await.map_err(failed)?;
            let api = Api::<kube::api::DynamicObject>::namespaced_with(
                client.clone(),
                namespace,
                &resource,
            );
            let scale = api.get_subresource("scale", &owner.name).await.map_err(failed)?;
            let replicas =
                scale.data.pointer("/spec/replicas").and_then(Value::as_i64).unwrap_or(0);
            Ok((owner.uid.clone(), i32::try_from(replicas).unwrap_or(0)))
        }
    }
}

fn ready(pod: &Pod) -> bool {
    kruise_core::pod::is_pod_ready(pod)
}

/// One round; `Some(d)` asks for another after `d`.
async fn reconcile(
    budget: Arc<PodDisruptionBudget>,
    context: Arc<Context>,
) -> Result<Option<Duration>, Error> {
    let namespace = budget.namespace().unwrap_or_default();
    let name = budget.name_any();
    let spec = budget.spec.clone().unwrap_or_default();
    let pods: Vec<Arc<Pod>> = context
        .pods
        .state()
        .into_iter()
        .filter(|p| p.namespace().as_deref() == Some(namespace.as_str()))
        .filter(|p| super::selector_matches(spec.selector.as_ref(), &p.metadata))
        .collect();
    let now = jiff::Timestamp::now();
    let old = serde_json::to_value(&budget.status).unwrap_or(Value::Null);

    // Evicted pods stay out of the count until they are deleted, or for two minutes.
    let mut disrupted: BTreeMap<String, Value> = BTreeMap::new();
    let mut soonest: Option<Duration> = None;
    for (pod_name, at) in old["disruptedPods"].as_object().into_iter().flatten() {
        let Some(pod) = pods.iter().find(|p| p.name_any() == *pod_name) else { continue };
        if pod.metadata.deletion_timestamp.is_some() {
            continue;
        }
        let Some(since) = at.as_str().and_then(|t| t.parse::<jiff::Timestamp>().ok()) else {
            continue;
        };
        let left = since
            .checked_add(DELETION_TIMEOUT)
            .map(|end| end.duration_since(now))
            .unwrap_or_default();
        if left > jiff::SignedDuration::ZERO {
            disrupted.insert(pod_name.clone(), at.clone());
            let left = Duration::try_from(left).unwrap_or_default();
            soonest = Some(soonest.map_or(left, |s| s.min(left)));
        }
    }
    let current_healthy = pods
        .iter()
        .filter(|p| {
            p.metadata.deletion_timestamp.is_none()
                && ready(p)
                && !disrupted.contains_key(&p.name_any())
        })
        .count();
    let current_healthy = i32::try_from(current_healthy).unwrap_or(i32::MAX);

    let counts = match (&spec.max_unavailable, &spec.min_available) {
        (Some(max), _) => expected_pods(&context.client, &namespace, &pods)
            .await
            .map(|expected| (expected, (expected - resolve(max, expected)).max(0))),
        (None, Some(min)) if is_percent(min) => expected_pods(&context.client, &namespace, &pods)
            .await
            .map(|expected| (expected, resolve(min, expected))),
        (None, Some(min)) => Ok((i32::try_from(pods.len()).unwrap_or(i32::MAX), resolve(min, 0))),
        (None, None) => Ok((i32::try_from(pods.len()).unwrap_or(i32::MAX), 0)),
    };
    let previous = old["conditions"]
        .as_array()
        .and_then(|c| c.iter().find(|c| c["type"] == "DisruptionAllowed"))
        .cloned();
    let condition = |status: &str, reason: &str, message: &str| {
        let since = previous
            .as_ref()
            .filter(|p| p["status"] == status)
            .map_or_else(|| json!(Time(now)), |p| p["lastTransitionTime"].clone());
        json!([{"type": "DisruptionAllowed", "status": status, "reason": reason, "message": message,
            "observedGeneration": budget.metadata.generation, "lastTransitionTime": since}])
    };
    let status = match counts {
        Ok((expected, desired)) => {
            let allowed = (current_healthy - desired).max(0);
            let condition = if allowed > 0 {
                condition("True", "SufficientPods", "")
            } else {
                condition("False", "InsufficientPods", "")
            };
            json!({
                "observedGeneration": budget.metadata.generation,
                "disruptionsAllowed": allowed,
                "currentHealthy": current_healthy,
                "desiredHealthy": desired,
                "expectedPods": expected,
                "disruptedPods": if disrupted.is_empty() { Value::Null } else { json!(disrupted) },
                "conditions": condition,
            })
        }
        Err(message) => json!({
            "observedGeneration": budget.metadata.generation,
            "disruptionsAllowed": 0,
            "conditions": condition("False", "SyncFailed", &message),
        }),
    };
    if !super::status_matches(&old, &status) {
        Api::<PodDisruptionBudget>::namespaced(context.client.clone(), &namespace)
            .patch_status(
                &name,
                &PatchParams::default(),
                &Patch::Merge(&json!({ "status": status })),
            )
            .await
            .map_err(api_error(format!("update status of poddisruptionbudget {name}")))?;
    }
    Ok(soonest)
}
