//! The taint eviction controller, as kube-controller-manager runs it: a pod on a node with a
//! `NoExecute` taint it does not tolerate is deleted; one that tolerates every such taint for
//! a limited time (`tolerationSeconds`) is deleted once the shortest of those times has passed
//! since the controller first saw it exposed; a toleration without `tolerationSeconds` keeps
//! the pod forever.
//!
//! Before deleting, the pod gets the condition `DisruptionTarget` (reason
//! `DeletionByTaintManager`), then it is deleted with its own grace period. Pods already
//! terminating are left alone. Work is keyed by node: any change of a node or of a pod bound
//! to it looks at the node's pods again.

use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use k8s_openapi::api::core::v1::{Node, Pod, Taint, Toleration};
use kube::api::{Api, DeleteParams, Patch, PatchParams, Preconditions};
use kube::runtime::reflector::{ObjectRef, Store};
use kube::{Client, ResourceExt as _};
use serde_json::json;
use tokio::sync::mpsc::UnboundedReceiver;
use tokio::time::Instant;

use crate::nodes::scheduler::tolerates;

/// When the pod must go, given the node's `NoExecute` taints and its tolerations.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Verdict {
    /// Nothing to do: no `NoExecute` taint, or every one tolerated forever.
    Stay,
    /// Some `NoExecute` taint is not tolerated.
    EvictNow,
    /// Every taint is tolerated, the shortest for this long.
    EvictAfter(Duration),
}

/// The controller's decision for a pod's tolerations against a node's taints.
pub(crate) fn verdict(taints: &[Taint], tolerations: &[Toleration]) -> Verdict {
    let no_execute: Vec<&Taint> = taints.iter().filter(|t| t.effect == "NoExecute").collect();
    if no_execute.is_empty() {
        return Verdict::Stay;
    }
    let mut shortest: Option<i64> = None;
    for taint in no_execute {
        let matching: Vec<&Toleration> =
            tolerations.iter().filter(|t| tolerates(t, taint)).collect();
        if matching.is_empty() {
            return Verdict::EvictNow;
        }
        // Of the tolerations matching this taint, the controller takes the shortest limit
        // over all of them (as `getMinTolerationTime` does over every matching toleration).
        for toleration in matching {
            if let Some(seconds) = toleration.toleration_seconds {
                shortest = Some(shortest.map_or(seconds.max(0), |s| s.min(seconds.max(0))));
            }
        }
    }
    match shortest {
        None => Verdict::Stay,
        Some(0) => Verdict::EvictNow,
        Some(s) => Verdict::EvictAfter(Duration::from_secs(u64::try_from(s).unwrap_or(0))),
    }
}

struct Context {
    client: Client,
    pods: Store<Pod>,
    /// When each exposed pod (by uid) was first seen exposed.
    exposed_since: Mutex<HashMap<String, Instant>>,
}

/// Runs the controller until the task is aborted.
pub(crate) async fn run(
    client: Client,
    (pods, mut pod_events): (Store<Pod>, UnboundedReceiver<Pod>),
    (nodes, mut node_events): (Store<Node>, UnboundedReceiver<Node>),
) {
    let (queue, keys) = tokio::sync::mpsc::unbounded_channel::<ObjectRef<Node>>();
    let node_queue = queue.clone();
    let feed_nodes = async move {
        while let Some(node) = node_events.recv().await {
            let _ = node_queue.send(ObjectRef::from_obj(&node));
        }
    };
    let pod_queue = queue.clone();
    let feed_pods = async move {
        while let Some(pod) = pod_events.recv().await {
            if let Some(node) = pod.spec.as_ref().and_then(|s| s.node_name.as_deref()) {
                let _ = pod_queue.send(ObjectRef::new(node));
            }
        }
    };
    let context = Arc::new(Context { client, pods, exposed_since: Mutex::default() });
    let ready = context.clone();
    let worker = async move {
        ready.pods.wait_until_ready().await.ok();
        super::work(nodes, queue, keys, move |node| {
            let context = context.clone();
            async move { reconcile(&node, &context).await }
        })
        .await;
    };
    futures::future::join3(feed_nodes, feed_pods, worker).await;
}

/// Evicts what is due on `node`; when to look again for pods whose time has not come.
async fn reconcile(node: &Node, context: &Context) -> Option<Duration> {
    let name = node.name_any();
    let taints = node.spec.as_ref().and_then(|s| s.taints.clone()).unwrap_or_default();
    let now = Instant::now();
    let pods: Vec<Arc<Pod>> = context
        .pods
        .state()
        .into_iter()
        .filter(|p| p.spec.as_ref().and_then(|s| s.node_name.as_deref()) == Some(name.as_str()))
        .filter(|p| p.metadata.deletion_timestamp.is_none())
        .collect();
    let mut due = Vec::new();
    let mut next: Option<Duration> = None;
    {
        let mut since = context.exposed_since.lock().unwrap_or_else(|p| p.into_inner());
        for pod in &pods {
            let uid = pod.metadata.uid.clone().unwrap_or_default();
            let tolerations =
                pod.spec.as_ref().and_then(|s| s.tolerations.clone()).unwrap_or_default();
            match verdict(&taints, &tolerations) {
                Verdict::Stay => {
                    since.remove(&uid);
                }
                Verdict::EvictNow => due.push(pod.clone()),
                Verdict::EvictAfter(limit) => {
                    let first = *since.entry(uid).or_insert(now);
                    let left = (first + limit).saturating_duration_since(now);
                    if left.is_zero() {
                        due.push(pod.clone());
                    } else {
                        next = Some(next.map_or(left, |n| n.min(left)));
                    }
                }
            }
        }
        // Pods that are gone are forgotten.
        let live: HashSet<String> =
            context.pods.state().iter().filter_map(|p| p.metadata.uid.clone()).collect();
        since.retain(|uid, _| live.contains(uid));
    }
    let mut failed = false;
    for pod in due {
        if evict(&context.client, &pod).await.is_err() {
            failed = true;
        }
    }
    if failed { Some(Duration::from_secs(1)) } else { next }
}

/// Marks the pod as a disruption target, then deletes it with its own grace period.
async fn evict(client: &Client, pod: &Pod) -> Result<(), kube::Error> {
    let namespace = pod.namespace().unwrap_or_default();
    let name = pod.name_any();
    let api: Api<Pod> = Api::namespaced(client.clone(), &namespace);
    let condition = json!({"status": {"conditions": [{
        "type": "DisruptionTarget", "status": "True", "reason": "DeletionByTaintManager",
        "message": "Taint manager: deleting due to NoExecute taint",
        "lastTransitionTime": crate::util::now_rfc3339(),
    }]}});
    let params = PatchParams::default();
    match api.patch_status(&name, &params, &Patch::Strategic(&condition)).await {
        Ok(_) => {}
        Err(kube::Error::Api(e)) if e.code == 404 => return Ok(()),
        Err(e) => return Err(e),
    }
    let delete = DeleteParams {
        preconditions: Some(Preconditions {
            uid: pod.metadata.uid.clone(),
            resource_version: None,
        }),
        ..DeleteParams::default()
    };
    match api.delete(&name, &delete).await {
        Ok(_) => Ok(()),
        Err(kube::Error::Api(e)) if e.code == 404 || e.code == 409 => Ok(()),
        Err(e) => Err(e),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn taint(key: &str, effect: &str) -> Taint {
        Taint { key: key.into(), effect: effect.into(), ..Taint::default() }
    }

    fn toleration(key: &str, effect: &str, seconds: Option<i64>) -> Toleration {
        Toleration {
            key: Some(key.into()),
            operator: Some("Exists".into()),
            effect: Some(effect.into()),
            toleration_seconds: seconds,
            ..Toleration::default()
        }
    }

    #[test]
    fn untolerated_no_execute_taints_evict_and_others_do_not() {
        assert_eq!(verdict(&[taint("k", "NoSchedule")], &[]), Verdict::Stay);
        assert_eq!(verdict(&[taint("k", "NoExecute")], &[]), Verdict::EvictNow);
        assert_eq!(
            verdict(&[taint("k", "NoExecute")], &[toleration("k", "NoExecute", None)]),
            Verdict::Stay
        );
        assert_eq!(
            verdict(&[taint("k", "NoExecute")], &[toleration("k", "NoExecute", Some(30))]),
            Verdict::EvictAfter(Duration::from_secs(30))
        );
        assert_eq!(
            verdict(&[taint("k", "NoExecute")], &[toleration("k", "NoExecute", Some(-5))]),
            Verdict::EvictNow
        );
        // Two taints, one not tolerated at all.
        assert_eq!(
            verdict(
                &[taint("a", "NoExecute"), taint("b", "NoExecute")],
                &[toleration("a", "", None)]
            ),
            Verdict::EvictNow
        );
        // The shortest limit wins.
        assert_eq!(
            verdict(
                &[taint("a", "NoExecute"), taint("b", "NoExecute")],
                &[toleration("a", "NoExecute", Some(300)), toleration("b", "", Some(60))]
            ),
            Verdict::EvictAfter(Duration::from_secs(60))
        );
    }
}
