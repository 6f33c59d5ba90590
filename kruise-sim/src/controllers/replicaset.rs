//! The ReplicaSet controller, as kube-controller-manager runs it.
//!
//! One reconcile of a ReplicaSet:
//!
//! 1. orphan pods its selector matches are adopted, and pods it controls that its selector no
//!    longer matches are released (both guarded by the pod's uid and resourceVersion);
//! 2. its active pods (not terminating, not finished) are counted against `spec.replicas`;
//!    missing pods are created from the template (named `<set>-<random>`, in slow-start batches
//!    of 1, 2, 4, ... up to 500 per round, stopping at the first failure), and extra pods are
//!    deleted in kube-controller-manager's order: unscheduled, pending, not ready, lower
//!    `controller.kubernetes.io/pod-deletion-cost`, more pods of the set on the same node,
//!    ready for less time, more restarts, newer first;
//! 3. the status (`replicas`, `fullyLabeledReplicas`, `readyReplicas`, `availableReplicas`
//!    with `minReadySeconds`, `observedGeneration`, and the `ReplicaFailure` condition when a
//!    creation or deletion fails) is written.
//!
//! Each round waits until the pod cache shows what it wrote before it ends, so that the next
//! round never counts a pod twice or misses one (kube-controller-manager's expectations).
//!
//! Not done: the `PodReplacementPolicy` gate's `status.terminatingReplicas`, and the
//! logarithmic comparison of ready and creation times (`LogarithmicScaleDown`): times are
//! compared exactly.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use k8s_openapi::api::apps::v1::{ReplicaSet, ReplicaSetStatus};
use k8s_openapi::api::core::v1::Pod;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, Time};
use kruise_core::pod::{PodRankView, compare_for_deletion};
use kube::api::{Api, DeleteParams, Patch, PatchParams, PostParams};
use kube::runtime::reflector::{ObjectRef, Store};
use tokio::sync::mpsc::UnboundedReceiver;

use super::{Error, api_error};
use kube::{Client, ResourceExt as _};
use serde_json::{Value, json};

/// Pods created or deleted per round at most (kube-controller-manager's `burstReplicas`).
const BURST_REPLICAS: usize = 500;

struct Context {
    client: Client,
    pods: Store<Pod>,
}

/// A ReplicaSet's namespace and name.
type Key = ObjectRef<ReplicaSet>;

/// Runs the controller until the task is aborted.
///
/// The shared caches feed both the stores and the queue: an event is queued only after the
/// store holds it, so a round never reads a cache older than the change that queued it.
/// Rounds run one at a time.
pub(crate) async fn run(
    client: Client,
    (pods, pod_events): (Store<Pod>, UnboundedReceiver<Pod>),
    (sets, set_events): (Store<ReplicaSet>, UnboundedReceiver<ReplicaSet>),
) {
    let (queue, keys) = tokio::sync::mpsc::unbounded_channel::<Key>();
    let pod_sets = sets.clone();
    let feeds = futures::future::join(
        super::queue_own(set_events, queue.clone()),
        super::queue_owners(pod_events, queue.clone(), controller_set, move |pod: &Pod| {
            sets_of_pod(&pod_sets, pod)
        }),
    );
    let context = Arc::new(Context { client, pods: pods.clone() });
    futures::future::join(feeds, super::run_rounds(sets, queue, keys, pods, context, reconcile))
        .await;
}

/// The ReplicaSet controlling `pod`, if one does.
fn controller_set(pod: &Pod) -> Option<Key> {
    super::controller_of(&pod.metadata, "apps/v1", "ReplicaSet")
}

/// The ReplicaSets a pod's change concerns: its controller, or for an orphan every set in its
/// namespace whose selector matches it.
fn sets_of_pod(sets: &Store<ReplicaSet>, pod: &Pod) -> Vec<Key> {
    super::owner_or_adopters(sets, &pod.metadata, controller_set(pod), |set, meta| {
        selects(set, meta)
    })
}

fn selects(set: &ReplicaSet, meta: &ObjectMeta) -> bool {
    super::selector_matches(Some(&set.spec.selector), meta)
}

/// Whether the pod is neither terminating nor finished.
fn active(pod: &Pod) -> bool {
    kruise_core::pod::is_pod_active(pod)
}

/// Whether the pod is being deleted and has not finished (kube-controller-manager's
/// `isPodTerminating`).
fn terminating(pod: &Pod) -> bool {
    let phase = pod.status.as_ref().and_then(|s| s.phase.as_deref());
    pod.metadata.deletion_timestamp.is_some() && !matches!(phase, Some("Succeeded" | "Failed"))
}

fn controlled_by(pod: &Pod, uid: &str) -> bool {
    super::controlled_by(&pod.metadata, uid)
}

/// One round; `Some(d)` asks for another after `d`.
async fn reconcile(set: Arc<ReplicaSet>, context: Arc<Context>) -> Result<Option<Duration>, Error> {
    if set.metadata.deletion_timestamp.is_some() {
        return Ok(None);
    }
    let namespace = set.namespace().unwrap_or_default();
    let name = set.name_any();
    let uid = set.uid().unwrap_or_default();
    let pods: Api<Pod> = Api::namespaced(context.client.clone(), &namespace);

    // 1. Adoption and release.
    let in_namespace: Vec<Arc<Pod>> = context
        .pods
        .state()
        .into_iter()
        .filter(|p| p.namespace().as_deref() == Some(namespace.as_str()))
        .collect();
    let owner = super::controller_reference(set.as_ref());
    // Finished pods are not adopted.
    let adoptable: Vec<Arc<Pod>> =
        in_namespace.iter().filter(|p| active(p) || controlled_by(p, &uid)).cloned().collect();
    if super::claim(&pods, adoptable, &owner, |pod| selects(&set, &pod.metadata)).await? {
        // The pods' new owners queue the set again once the cache shows them.
        return Ok(Some(Duration::from_millis(200)));
    }

    // 2. Scale.
    let owned: Vec<Arc<Pod>> =
        in_namespace.into_iter().filter(|p| controlled_by(p, &uid)).collect();
    let live: Vec<&Arc<Pod>> = owned.iter().filter(|p| active(p)).collect();
    let wanted = usize::try_from(set.spec.replicas.unwrap_or(1)).unwrap_or(0);
    let mut failure = None;
    if live.len() < wanted {
        let missing = (wanted - live.len()).min(BURST_REPLICAS);
        let (created, error) = create_pods(&pods, &set, missing).await;
        failure = error.map(|e| ("FailedCreate", e));
        if created > 0 {
            let target = live.len() + created;
            super::wait_until(|| owned_active(&context, &uid) >= target).await;
        }
    } else if live.len() > wanted {
        let doomed = pods_to_delete(&live, live.len() - wanted);
        let mut deleted = Vec::new();
        for pod in doomed.iter().take(BURST_REPLICAS) {
            let pod_name = pod.name_any();
            match pods.delete(&pod_name, &DeleteParams::default()).await {
                Ok(_) => deleted.push(pod.uid().unwrap_or_default()),
                Err(kube::Error::Api(e)) if e.code == 404 => {}
                Err(source) => {
                    failure = Some(("FailedDelete", format!("delete pod {pod_name}: {source}")));
                    break;
                }
            }
        }
        if !deleted.is_empty() {
            super::wait_until(|| {
                context
                    .pods
                    .state()
                    .iter()
                    .all(|p| !deleted.iter().any(|d| p.uid().as_ref() == Some(d)) || !active(p))
            })
            .await;
        }
    }

    // 3. Status, from the pods as the cache now shows them.
    let now = jiff::Timestamp::now();
    let (owned, others): (Vec<Arc<Pod>>, Vec<Arc<Pod>>) = context
        .pods
        .state()
        .into_iter()
        .filter(|p| p.namespace().as_deref() == Some(namespace.as_str()))
        .filter(|p| controlled_by(p, &uid))
        .partition(|p| active(p));
    let terminating = others.iter().filter(|p| terminating(p)).count();
    let failure = failure.as_ref().map(|(r, m)| (*r, m.as_str()));
    let status = status_of(&set, &owned, terminating, failure, now);
    if !status_matches(set.status.as_ref(), &status) {
        let sets: Api<ReplicaSet> = Api::namespaced(context.client.clone(), &namespace);
        let patch = json!({ "status": status });
        sets.patch_status(&name, &PatchParams::default(), &Patch::Merge(&patch))
            .await
            .map_err(api_error(format!("update status of replicaset {name}")))?;
    }
    if failure.is_some() {
        // The ReplicaFailure condition says why; try again soon.
        return Ok(Some(Duration::from_secs(1)));
    }
    // Pods still becoming available for minReadySeconds need another look.
    let min_ready = set.spec.min_ready_seconds.unwrap_or(0);
    if min_ready > 0 && status["availableReplicas"].as_u64() < status["readyReplicas"].as_u64() {
        return Ok(Some(Duration::from_secs(1)));
    }
    Ok(None)
}

fn status_matches(stored: Option<&ReplicaSetStatus>, wanted: &Value) -> bool {
    super::status_matches(&serde_json::to_value(stored).unwrap_or(Value::Null), wanted)
}

fn owned_active(context: &Context, uid: &str) -> usize {
    context.pods.state().iter().filter(|p| controlled_by(p, uid) && active(p)).count()
}

/// The pod the set's template makes (kube-controller-manager's `GetPodFromTemplate`).
fn new_pod(set: &ReplicaSet) -> Pod {
    super::pod_from_template(set, set.spec.template.as_ref())
}

/// Creates `count` pods in slow-start batches; the number created, and the first failure.
async fn create_pods(pods: &Api<Pod>, set: &ReplicaSet, count: usize) -> (usize, Option<String>) {
    let pod = new_pod(set);
    let (created, failure) = super::create_in_batches(count, |_| {
        let (pods, pod) = (pods.clone(), pod.clone());
        async move { pods.create(&PostParams::default(), &pod).await.map(|_| ()) }
    })
    .await;
    (created.len(), failure.map(|e| e.to_string()))
}

/// The `count` pods to delete first: kube-controller-manager's `ActivePodsWithRanks`, where a
/// pod's rank is how many of the set's pods share its node.
fn pods_to_delete<'p>(live: &[&'p Arc<Pod>], count: usize) -> Vec<&'p Arc<Pod>> {
    let mut per_node: BTreeMap<String, usize> = BTreeMap::new();
    for pod in live {
        let node = kruise_core::pod::node_name_of(pod);
        if !node.is_empty() {
            *per_node.entry(node.to_owned()).or_default() += 1;
        }
    }
    let views: Vec<PodRankView> = live
        .iter()
        .map(|pod| {
            let view = PodRankView::from_pod(pod);
            let rank = per_node.get(kruise_core::pod::node_name_of(pod)).copied().unwrap_or(0);
            view.with_rank(rank as f64)
        })
        .collect();
    let mut order: Vec<usize> = (0..live.len()).collect();
    order.sort_by(|&a, &b| compare_for_deletion(&views[a], &views[b]));
    order.into_iter().take(count).map(|i| live[i]).collect()
}

/// The status for the set's active pods `owned` and the number of its pods `terminating`, as
/// JSON (the condition types' fields differ between Kubernetes versions of the API types).
fn status_of(
    set: &ReplicaSet,
    owned: &[Arc<Pod>],
    terminating: usize,
    failure: Option<(&str, &str)>,
    now: jiff::Timestamp,
) -> Value {
    let min_ready = set.spec.min_ready_seconds.unwrap_or(0);
    let template_labels = set
        .spec
        .template
        .as_ref()
        .and_then(|t| t.metadata.as_ref())
        .and_then(|m| m.labels.as_ref());
    let count = |f: &dyn Fn(&Pod) -> bool| owned.iter().filter(|p| f(p)).count();
    let fully_labeled = |pod: &Pod| {
        template_labels.is_none_or(|wanted| {
            let labels = pod.labels();
            wanted.iter().all(|(k, v)| labels.get(k) == Some(v))
        })
    };
    let old = serde_json::to_value(&set.status).unwrap_or(Value::Null);
    let old_conditions = old["conditions"].as_array().cloned().unwrap_or_default();
    let previous_failure = old_conditions.iter().find(|c| c["type"] == "ReplicaFailure");
    let mut conditions: Vec<Value> =
        old_conditions.iter().filter(|c| c["type"] != "ReplicaFailure").cloned().collect();
    if let Some((reason, message)) = failure {
        let since = previous_failure
            .map(|c| c["lastTransitionTime"].clone())
            .filter(|t| !t.is_null())
            .unwrap_or_else(|| json!(Time(now)));
        conditions.push(json!({"type": "ReplicaFailure", "status": "True", "reason": reason,
            "message": message, "lastTransitionTime": since}));
    }
    let mut status = json!({
        "replicas": count(&|_| true),
        "fullyLabeledReplicas": count(&fully_labeled),
        "readyReplicas": count(&kruise_core::pod::is_pod_ready),
        "availableReplicas": count(&|p| kruise_core::pod::is_pod_available(p, min_ready, now)),
        "terminatingReplicas": terminating,
        "observedGeneration": set.metadata.generation,
    });
    // A merge patch keeps what it does not name: a cleared condition list is named.
    status["conditions"] = if conditions.is_empty() { Value::Null } else { json!(conditions) };
    status
}
