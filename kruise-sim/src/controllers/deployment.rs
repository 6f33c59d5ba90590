//! The Deployment controller, as kube-controller-manager runs it.
//!
//! A Deployment owns ReplicaSets, one per pod template it has had. The one whose template
//! (without the `pod-template-hash` label) equals the Deployment's is the new one; it is named
//! `<deployment>-<hash>`, and its template and selector carry `pod-template-hash: <hash>`. One
//! round of a Deployment:
//!
//! 1. orphan ReplicaSets its selector matches are adopted, and those it controls that no longer
//!    match are released;
//! 2. the new ReplicaSet is found or created (and keeps the Deployment's `minReadySeconds`),
//!    and takes the next revision
//!    (`deployment.kubernetes.io/revision`, the older numbers it had kept in
//!    `deployment.kubernetes.io/revision-history`), so `kubectl rollout undo` (which writes an
//!    old ReplicaSet's template back) brings that ReplicaSet back as the newest revision;
//! 3. unless paused: **RollingUpdate** scales the new ReplicaSet up while all ReplicaSets'
//!    replicas stay within `replicas + maxSurge`, and the old ones down while the available
//!    pods stay at or above `replicas - maxUnavailable` (unhealthy old pods first);
//!    **Recreate** scales every old ReplicaSet to 0, waits until none of their pods is left,
//!    then scales the new one up;
//! 4. old ReplicaSets beyond `revisionHistoryLimit` with no pods are deleted, oldest first;
//! 5. the status: `replicas`, `updatedReplicas`, `readyReplicas`, `availableReplicas`,
//!    `unavailableReplicas`, `observedGeneration`, `collisionCount`, and the `Available` and
//!    `Progressing` conditions with kube-controller-manager's reasons and messages
//!    (`progressDeadlineSeconds` turns a stalled rollout into `ProgressDeadlineExceeded`).
//!
//! Differences from kube-controller-manager:
//!
//! - the hash is FNV-32a over the template's JSON (kube-controller-manager hashes a Go dump
//!   of its in-memory struct, which cannot be reproduced), rendered as it renders it: names
//!   look alike but differ from a real cluster's for the same template;
//! - scaling a Deployment while several ReplicaSets have pods does not spread the change
//!   proportionally: the rollout rules bring every ReplicaSet to its place;
//! - no Events are recorded.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use k8s_openapi::api::apps::v1::{Deployment, ReplicaSet};
use k8s_openapi::api::core::v1::{Pod, PodTemplateSpec};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, Time};
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;
use kube::api::{Api, DeleteParams, Patch, PatchParams, PostParams};
use kube::runtime::reflector::{ObjectRef, Store};
use tokio::sync::mpsc::UnboundedReceiver;

use super::{Error, api_error, controlled_by, controller_of};
use kube::{Client, ResourceExt as _};
use serde_json::{Value, json};

/// The label that tells a Deployment's ReplicaSets (and their pods) apart.
pub const POD_TEMPLATE_HASH: &str = "pod-template-hash";
/// A ReplicaSet's revision, and its Deployment's newest.
pub const REVISION: &str = "deployment.kubernetes.io/revision";
/// Earlier revision numbers of a ReplicaSet that was rolled back to.
pub const REVISION_HISTORY: &str = "deployment.kubernetes.io/revision-history";
/// The Deployment's replicas when the ReplicaSet was last scaled.
pub const DESIRED_REPLICAS: &str = "deployment.kubernetes.io/desired-replicas";
/// `replicas + maxSurge` when the ReplicaSet was last scaled.
pub const MAX_REPLICAS: &str = "deployment.kubernetes.io/max-replicas";

/// Annotations of the Deployment not copied onto its ReplicaSets.
const NOT_COPIED: &[&str] = &[
    "kubectl.kubernetes.io/last-applied-configuration",
    REVISION,
    REVISION_HISTORY,
    DESIRED_REPLICAS,
    MAX_REPLICAS,
    "deprecated.deployment.rollback.to",
];

struct Context {
    client: Client,
    sets: Store<ReplicaSet>,
    pods: Store<Pod>,
}

type Key = ObjectRef<Deployment>;

/// Runs the controller until the task is aborted. As in [`super::replicaset`], one reflector
/// per kind feeds both the caches and the queue.
pub(crate) async fn run(
    client: Client,
    (pods, mut pod_events): (Store<Pod>, UnboundedReceiver<Pod>),
    (sets, set_events): (Store<ReplicaSet>, UnboundedReceiver<ReplicaSet>),
) {
    let mut deployment_cache = super::SharedCache::<Deployment>::new();
    let (deployments, deployment_events) = deployment_cache.subscribe();
    let watch_deployments = deployment_cache.run(client.clone());
    let (queue, keys) = tokio::sync::mpsc::unbounded_channel::<Key>();

    let feed_deployments = super::queue_own(deployment_events, queue.clone());
    let set_deployments = deployments.clone();
    let controller =
        |set: &ReplicaSet| controller_of::<Deployment>(&set.metadata, "apps/v1", "Deployment");
    let feed_sets = super::queue_owners(set_events, queue.clone(), controller, move |set| {
        super::owner_or_adopters(&set_deployments, &set.metadata, controller(set), |d, meta| {
            selects(d, meta)
        })
    });
    let pod_queue = queue.clone();
    let pod_sets = sets.clone();
    let feed_pods = async move {
        while let Some(pod) = pod_events.recv().await {
            // A Recreate rollout waits for old pods to go: their set's Deployment looks again.
            if let Some(set) = controller_of::<ReplicaSet>(&pod.metadata, "apps/v1", "ReplicaSet")
                && let Some(set) = pod_sets.get(&set)
                && let Some(owner) =
                    controller_of::<Deployment>(&set.metadata, "apps/v1", "Deployment")
            {
                let _ = pod_queue.send(owner);
            }
        }
    };
    let context = Arc::new(Context { client, sets: sets.clone(), pods: pods.clone() });
    let worker = async move {
        sets.wait_until_ready().await.ok();
        super::run_rounds(deployments, queue, keys, pods, context, reconcile).await;
    };
    let feeds = futures::future::join3(feed_deployments, feed_sets, feed_pods);
    futures::future::join3(watch_deployments, feeds, worker).await;
}

fn selects(deployment: &Deployment, meta: &ObjectMeta) -> bool {
    super::selector_matches(Some(&deployment.spec.selector), meta)
}

/// The template with the `pod-template-hash` label taken out, for comparing templates.
fn without_hash(template: Option<&PodTemplateSpec>) -> Value {
    let mut value = serde_json::to_value(template).unwrap_or(Value::Null);
    if let Some(labels) = value.pointer_mut("/metadata/labels").and_then(Value::as_object_mut) {
        labels.remove(POD_TEMPLATE_HASH);
        if labels.is_empty() {
            value["metadata"].as_object_mut().map(|m| m.remove("labels"));
        }
    }
    value
}

/// The `pod-template-hash` of a template (see the module's differences).
pub(crate) fn template_hash(
    template: Option<&PodTemplateSpec>,
    collision_count: Option<i32>,
) -> String {
    let mut hasher = kruise_core::revision::hash::Fnv32::fnv1a();
    hasher.write(without_hash(template).to_string().as_bytes());
    if let Some(count) = collision_count {
        hasher.write(count.to_string().as_bytes());
    }
    kruise_core::revision::hash::safe_encode(&hasher.sum32().to_string())
}

fn revision_of(set: &ReplicaSet) -> i64 {
    set.annotations().get(REVISION).and_then(|r| r.parse().ok()).unwrap_or(0)
}

fn spec_replicas(set: &ReplicaSet) -> i32 {
    Some(&set.spec).and_then(|s| s.replicas).unwrap_or(0)
}

fn status_field(
    set: &ReplicaSet,
    field: fn(&k8s_openapi::api::apps::v1::ReplicaSetStatus) -> Option<i32>,
) -> i32 {
    set.status.as_ref().and_then(field).unwrap_or(0)
}

/// Whether the ReplicaSet's status was written for its current spec.
fn status_current(set: &ReplicaSet) -> bool {
    set.status.as_ref().and_then(|s| s.observed_generation) >= set.metadata.generation
}

fn available(set: &ReplicaSet) -> i32 {
    status_field(set, |s| s.available_replicas)
}

/// An int-or-percent of `total`, rounded up or down.
fn scaled(value: Option<&IntOrString>, total: i32, default_percent: i32, round_up: bool) -> i32 {
    let percent = |p: i32| {
        let raw = i64::from(p) * i64::from(total);
        let value = if round_up { (raw + 99) / 100 } else { raw / 100 };
        i32::try_from(value).unwrap_or(i32::MAX)
    };
    match value {
        Some(IntOrString::Int(n)) => *n,
        Some(IntOrString::String(s)) => {
            s.strip_suffix('%').and_then(|p| p.parse().ok()).map_or(0, percent)
        }
        None => percent(default_percent),
    }
}

/// `(maxSurge, maxUnavailable)` resolved against `replicas` (both zero: one unavailable).
fn fenceposts(deployment: &Deployment, replicas: i32) -> (i32, i32) {
    let rolling = deployment.spec.strategy.as_ref().and_then(|s| s.rolling_update.as_ref());
    let surge = scaled(rolling.and_then(|r| r.max_surge.as_ref()), replicas, 25, true);
    let unavailable = scaled(rolling.and_then(|r| r.max_unavailable.as_ref()), replicas, 25, false);
    if surge == 0 && unavailable == 0 { (0, 1) } else { (surge, unavailable.min(replicas)) }
}

/// A ReplicaSet's replicas (its spec) and available pods (its status).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Counts {
    replicas: i32,
    available: i32,
}

/// A Deployment's `replicas`, and its `maxSurge` and `maxUnavailable` resolved against it.
#[derive(Clone, Copy, Debug)]
struct Budget {
    replicas: i32,
    surge: i32,
    max_unavailable: i32,
}

/// What one rolling-update round changes: the new ReplicaSet's replicas, or else the old
/// ones' (by position, oldest first).
#[derive(Debug, Default, PartialEq, Eq)]
struct RollingStep {
    new: Option<i32>,
    old: Vec<(usize, i32)>,
}

/// One rolling-update round (kube-controller-manager's `reconcileNewReplicaSet`, then
/// `reconcileOldReplicaSets`): the new ReplicaSet grows while all replicas stay within
/// `replicas + maxSurge` (or shrinks to `replicas`); when it has nothing to do, old ReplicaSets
/// shrink, their unavailable pods first, then available ones while at least
/// `replicas - maxUnavailable` stay available. `old` is oldest first.
fn rolling_step(budget: Budget, new: Counts, old: &[Counts]) -> RollingStep {
    let Budget { replicas, surge, max_unavailable } = budget;
    let all_replicas: i32 = new.replicas + old.iter().map(|c| c.replicas).sum::<i32>();
    let target = if new.replicas > replicas {
        replicas
    } else {
        let room = (replicas + surge - all_replicas).max(0);
        new.replicas + room.min(replicas - new.replicas)
    };
    if target != new.replicas {
        return RollingStep { new: Some(target), old: Vec::new() };
    }
    let min_available = replicas - max_unavailable;
    let new_unavailable = (new.replicas - new.available).max(0);
    let mut budget = (all_replicas - min_available - new_unavailable).max(0);
    let mut counts: Vec<i32> = old.iter().map(|c| c.replicas).collect();
    // Unhealthy old pods go first.
    for (count, set) in counts.iter_mut().zip(old) {
        let unhealthy = (*count - set.available).max(0).min(budget);
        *count -= unhealthy;
        budget -= unhealthy;
    }
    // Then available ones, while the total available stays at `min_available`.
    let available_now = new.available + old.iter().map(|c| c.available).sum::<i32>();
    let mut surplus = (available_now - min_available).max(0);
    for count in counts.iter_mut() {
        let down = (*count).min(surplus);
        *count -= down;
        surplus -= down;
    }
    let old = counts
        .into_iter()
        .zip(old)
        .enumerate()
        .filter(|(_, (count, set))| *count != set.replicas)
        .map(|(index, (count, _))| (index, count))
        .collect();
    RollingStep { new: None, old }
}

/// What a round changes of one ReplicaSet: its replicas and annotations.
struct Sets {
    namespace: String,
    api: Api<ReplicaSet>,
}

impl Sets {
    async fn scale(
        &self,
        set: &ReplicaSet,
        replicas: i32,
        deployment: &Deployment,
        max: i32,
    ) -> Result<(), Error> {
        let name = set.name_any();
        let desired = Some(&deployment.spec).and_then(|s| s.replicas).unwrap_or(1);
        let patch = json!({
            "metadata": {"annotations": {DESIRED_REPLICAS: desired.to_string(), MAX_REPLICAS: max.to_string()}},
            "spec": {"replicas": replicas},
        });
        self.api
            .patch(&name, &PatchParams::default(), &Patch::Merge(&patch))
            .await
            .map_err(api_error(format!("scale replicaset {}/{name}", self.namespace)))?;
        Ok(())
    }
}

/// One round; `Some(d)` asks for another after `d`.
async fn reconcile(
    deployment: Arc<Deployment>,
    context: Arc<Context>,
) -> Result<Option<Duration>, Error> {
    if deployment.metadata.deletion_timestamp.is_some() {
        return Ok(None);
    }
    let Some(spec) = Some(&deployment.spec) else { return Ok(None) };
    let namespace = deployment.namespace().unwrap_or_default();
    let name = deployment.name_any();
    let uid = deployment.uid().unwrap_or_default();
    let sets = Sets {
        namespace: namespace.clone(),
        api: Api::namespaced(context.client.clone(), &namespace),
    };
    let now = jiff::Timestamp::now();

    // 1. Adoption and release.
    let in_namespace: Vec<Arc<ReplicaSet>> = context
        .sets
        .state()
        .into_iter()
        .filter(|s| s.namespace().as_deref() == Some(namespace.as_str()))
        .collect();
    let owner = super::controller_reference(deployment.as_ref());
    if super::claim(&sets.api, in_namespace.clone(), &owner, |set| {
        selects(&deployment, &set.metadata)
    })
    .await?
    {
        return Ok(Some(Duration::from_millis(200)));
    }
    let mut owned: Vec<Arc<ReplicaSet>> =
        in_namespace.into_iter().filter(|s| controlled_by(&s.metadata, &uid)).collect();
    // Oldest first (kube-controller-manager's ReplicaSetsByCreationTimestamp).
    owned.sort_by(|a, b| {
        a.metadata
            .creation_timestamp
            .as_ref()
            .map(|t| t.0)
            .cmp(&b.metadata.creation_timestamp.as_ref().map(|t| t.0))
            .then_with(|| a.name_any().cmp(&b.name_any()))
    });

    // 2. The new ReplicaSet and the revisions.
    let wanted = without_hash(Some(&spec.template));
    let current = owned
        .iter()
        .find(|s| without_hash(Some(&s.spec).and_then(|s| s.template.as_ref())) == wanted)
        .cloned();
    let max_revision = owned.iter().map(|s| revision_of(s)).max().unwrap_or(0);
    let replicas = spec.replicas.unwrap_or(1);
    let (surge, max_unavailable) = fenceposts(&deployment, replicas);
    let recreate = spec.strategy.as_ref().and_then(|s| s.type_.as_deref()) == Some("Recreate");
    let paused = spec.paused == Some(true);
    let collision_count = deployment.status.as_ref().and_then(|s| s.collision_count);
    let mut created_new = None;
    let new_set: Option<Arc<ReplicaSet>> = match current {
        Some(set) => {
            // Rolled back to, or the newest already: it must hold the newest revision.
            let old_revision = revision_of(&set);
            let is_newest =
                owned.iter().all(|o| o.uid() == set.uid() || revision_of(o) < old_revision);
            if !is_newest || old_revision == 0 {
                let mut history: Vec<String> = set
                    .annotations()
                    .get(REVISION_HISTORY)
                    .map(|h| h.split(',').map(str::to_owned).collect())
                    .unwrap_or_default();
                if old_revision > 0 {
                    history.push(old_revision.to_string());
                }
                let mut annotations = json!({REVISION: (max_revision + 1).to_string()});
                if !history.is_empty() {
                    annotations[REVISION_HISTORY] = json!(history.join(","));
                }
                let patch = json!({"metadata": {"annotations": annotations}});
                sets.api
                    .patch(&set.name_any(), &PatchParams::default(), &Patch::Merge(&patch))
                    .await
                    .map_err(api_error(format!(
                        "set the revision of replicaset {}",
                        set.name_any()
                    )))?;
                return Ok(Some(Duration::from_millis(100)));
            }
            // The new ReplicaSet keeps the Deployment's minReadySeconds, paused or not.
            let wanted = spec.min_ready_seconds.unwrap_or(0);
            if set.spec.min_ready_seconds.unwrap_or(0) != wanted {
                let patch = json!({"spec": {"minReadySeconds": wanted}});
                sets.api
                    .patch(&set.name_any(), &PatchParams::default(), &Patch::Merge(&patch))
                    .await
                    .map_err(api_error(format!(
                        "set the minReadySeconds of replicaset {}",
                        set.name_any()
                    )))?;
                return Ok(Some(Duration::from_millis(100)));
            }
            Some(set)
        }
        None if paused => None,
        None => {
            let hash = template_hash(Some(&spec.template), collision_count);
            let set_name = format!("{name}-{hash}");
            let start = if recreate {
                0
            } else if owned.iter().all(|s| spec_replicas(s) == 0) {
                replicas
            } else {
                0
            };
            let set = new_replica_set(
                &deployment,
                &set_name,
                &hash,
                max_revision + 1,
                start,
                replicas + surge,
            );
            match sets.api.create(&PostParams::default(), &set).await {
                Ok(_) => {
                    // The next round must see it, or it would create it again.
                    let key = ObjectRef::new(&set_name).within(&namespace);
                    super::wait_until(|| context.sets.get(&key).is_some()).await;
                    created_new = Some(set_name);
                }
                Err(kube::Error::Api(e)) if e.code == 409 => {
                    let existing = sets
                        .api
                        .get(&set_name)
                        .await
                        .map_err(api_error(format!("get replicaset {set_name}")))?;
                    let ours = controlled_by(&existing.metadata, &uid)
                        && without_hash(existing.spec.template.as_ref()) == wanted;
                    if !ours {
                        // A ReplicaSet of that name with another template: the next name.
                        let count = collision_count.unwrap_or(0).saturating_add(1);
                        let patch = json!({"status": {"collisionCount": count}});
                        Api::<Deployment>::namespaced(context.client.clone(), &namespace)
                            .patch_status(&name, &PatchParams::default(), &Patch::Merge(&patch))
                            .await
                            .map_err(api_error(format!(
                                "count a hash collision of deployment {name}"
                            )))?;
                    }
                    return Ok(Some(Duration::from_millis(100)));
                }
                Err(source) => {
                    return Err(api_error(format!("create replicaset {set_name}"))(source));
                }
            }
            None
        }
    };
    let new_uid = new_set.as_ref().and_then(|s| s.uid());
    let old: Vec<&Arc<ReplicaSet>> = owned.iter().filter(|s| s.uid() != new_uid).collect();

    // 3. The rollout.
    let mut requeue = created_new.as_ref().map(|_| Duration::from_millis(100));
    if paused {
        // Paused: no rollout, the new ReplicaSet only follows `replicas`.
        if let Some(new_set) = &new_set
            && old.iter().all(|s| spec_replicas(s) == 0)
            && spec_replicas(new_set) != replicas
        {
            sets.scale(new_set, replicas, &deployment, replicas + surge).await?;
        }
    } else if let Some(new_set) = &new_set {
        if recreate {
            let mut scaled_down = false;
            for set in old.iter().filter(|s| spec_replicas(s) > 0) {
                sets.scale(set, 0, &deployment, replicas).await?;
                scaled_down = true;
            }
            let old_uids: Vec<String> = old.iter().filter_map(|s| s.uid()).collect();
            let old_pods = context
                .pods
                .state()
                .iter()
                .filter(|p| {
                    p.namespace().as_deref() == Some(namespace.as_str())
                        && p.owner_references()
                            .iter()
                            .any(|o| o.controller == Some(true) && old_uids.contains(&o.uid))
                        && !matches!(
                            p.status.as_ref().and_then(|s| s.phase.as_deref()),
                            Some("Succeeded" | "Failed")
                        )
                })
                .count();
            if !scaled_down && old_pods == 0 && spec_replicas(new_set) != replicas {
                sets.scale(new_set, replicas, &deployment, replicas).await?;
            }
        } else if owned.iter().any(|s| !status_current(s)) {
            // A ReplicaSet's status does not show its last scaling yet: counting its available
            // pods now could take too many down.
            requeue = Some(Duration::from_millis(100));
        } else {
            let counts = |set: &ReplicaSet| Counts {
                replicas: spec_replicas(set),
                available: available(set),
            };
            let old_counts: Vec<Counts> = old.iter().map(|s| counts(s)).collect();
            let step = rolling_step(
                Budget { replicas, surge, max_unavailable },
                counts(new_set),
                &old_counts,
            );
            let max = replicas + surge;
            if let Some(target) = step.new {
                sets.scale(new_set, target, &deployment, max).await?;
            }
            for (index, target) in &step.old {
                if let Some(set) = old.get(*index) {
                    sets.scale(set, *target, &deployment, max).await?;
                }
            }
            if step.new.is_some() || !step.old.is_empty() {
                requeue = Some(Duration::from_millis(100));
            }
        }
    }

    // 4. History: old ReplicaSets with no pods beyond revisionHistoryLimit, oldest first.
    let limit = usize::try_from(spec.revision_history_limit.unwrap_or(10)).unwrap_or(0);
    let idle: Vec<&&Arc<ReplicaSet>> = old
        .iter()
        .filter(|s| {
            spec_replicas(s) == 0
                && status_field(s, |st| Some(st.replicas)) == 0
                && s.metadata.deletion_timestamp.is_none()
        })
        .collect();
    for set in idle.iter().take(idle.len().saturating_sub(limit)) {
        match sets.api.delete(&set.name_any(), &DeleteParams::default()).await {
            Ok(_) => {}
            Err(kube::Error::Api(e)) if e.code == 404 => {}
            Err(source) => {
                return Err(api_error(format!("delete replicaset {}", set.name_any()))(source));
            }
        }
    }

    // 5. Status.
    let status = status_of(
        &deployment,
        new_set.as_deref(),
        &owned,
        created_new.as_deref(),
        max_unavailable,
        now,
    );
    let stored = serde_json::to_value(&deployment.status).unwrap_or(Value::Null);
    if !super::status_matches(&stored, &status) {
        Api::<Deployment>::namespaced(context.client.clone(), &namespace)
            .patch_status(&name, &PatchParams::default(), &Patch::Merge(&json!({"status": status})))
            .await
            .map_err(api_error(format!("update status of deployment {name}")))?;
    }
    // The deployment's revision annotation follows the new ReplicaSet's.
    if let Some(new_set) = &new_set {
        let revision = revision_of(new_set).to_string();
        if deployment.annotations().get(REVISION) != Some(&revision) {
            let patch = json!({"metadata": {"annotations": {REVISION: revision}}});
            Api::<Deployment>::namespaced(context.client.clone(), &namespace)
                .patch(&name, &PatchParams::default(), &Patch::Merge(&patch))
                .await
                .map_err(api_error(format!("set the revision of deployment {name}")))?;
        }
    }
    // A rollout in progress is looked at again for its deadline.
    let complete = status["conditions"].as_array().is_some_and(|c| {
        c.iter().any(|c| c["type"] == "Progressing" && c["reason"] == "NewReplicaSetAvailable")
    });
    if requeue.is_none() && !complete && !paused {
        requeue = Some(Duration::from_secs(5));
    }
    Ok(requeue)
}

/// The new ReplicaSet for the Deployment's template.
fn new_replica_set(
    deployment: &Deployment,
    name: &str,
    hash: &str,
    revision: i64,
    replicas: i32,
    max: i32,
) -> ReplicaSet {
    let spec = deployment.spec.clone();
    let mut template = spec.template.clone();
    template
        .metadata
        .get_or_insert_with(Default::default)
        .labels
        .get_or_insert_with(Default::default)
        .insert(POD_TEMPLATE_HASH.into(), hash.into());
    let mut selector = spec.selector.clone();
    selector
        .match_labels
        .get_or_insert_with(Default::default)
        .insert(POD_TEMPLATE_HASH.into(), hash.into());
    let mut labels =
        spec.template.metadata.as_ref().and_then(|m| m.labels.clone()).unwrap_or_default();
    labels.insert(POD_TEMPLATE_HASH.into(), hash.into());
    let mut annotations: BTreeMap<String, String> = deployment
        .annotations()
        .iter()
        .filter(|(k, _)| !NOT_COPIED.contains(&k.as_str()))
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect();
    annotations.insert(REVISION.into(), revision.to_string());
    annotations.insert(DESIRED_REPLICAS.into(), spec.replicas.unwrap_or(1).to_string());
    annotations.insert(MAX_REPLICAS.into(), max.to_string());
    ReplicaSet {
        metadata: ObjectMeta {
            name: Some(name.into()),
            namespace: deployment.namespace(),
            labels: Some(labels),
            annotations: Some(annotations),
            owner_references: Some(vec![super::controller_reference(deployment)]),
            ..ObjectMeta::default()
        },
        spec: k8s_openapi::api::apps::v1::ReplicaSetSpec {
            replicas: Some(replicas),
            min_ready_seconds: spec.min_ready_seconds,
            selector,
            template: Some(template),
        },
        status: None,
    }
}

/// The Deployment's status, as JSON (condition fields differ between API versions).
fn status_of(
    deployment: &Deployment,
    new_set: Option<&ReplicaSet>,
    owned: &[Arc<ReplicaSet>],
    created_new: Option<&str>,
    max_unavailable: i32,
    now: jiff::Timestamp,
) -> Value {
    let spec = Some(&deployment.spec);
    let replicas = spec.and_then(|s| s.replicas).unwrap_or(1);
    let sum = |f: &dyn Fn(&ReplicaSet) -> i32| owned.iter().map(|s| f(s)).sum::<i32>();
    let actual = sum(&|s| status_field(s, |st| Some(st.replicas)));
    let total = sum(&spec_replicas);
    let ready = sum(&|s| status_field(s, |st| st.ready_replicas));
    let available_count = sum(&available);
    let updated = new_set.map_or(0, |s| status_field(s, |st| Some(st.replicas)));
    let old = serde_json::to_value(&deployment.status).unwrap_or(Value::Null);
    let old_conditions = old["conditions"].as_array().cloned().unwrap_or_default();
    let previous = |t: &str| old_conditions.iter().find(|c| c["type"] == t).cloned();
    let time = json!(Time(now));
    let condition = |t: &str, status: &str, reason: &str, message: String, progressed: bool| {
        let before = previous(t);
        let same = before.as_ref().is_some_and(|b| b["status"] == status);
        let transition = before
            .as_ref()
            .filter(|_| same)
            .map_or(time.clone(), |b| b["lastTransitionTime"].clone());
        let update = match (&before, progressed) {
            (Some(b), false) if same && b["reason"] == reason => b["lastUpdateTime"].clone(),
            _ => time.clone(),
        };
        json!({"type": t, "status": status, "reason": reason, "message": message,
            "lastUpdateTime": update, "lastTransitionTime": transition})
    };
    let available_condition = if available_count >= replicas - max_unavailable {
        condition(
            "Available",
            "True",
            "MinimumReplicasAvailable",
            "Deployment has minimum availability.".into(),
            false,
        )
    } else {
        condition(
            "Available",
            "False",
            "MinimumReplicasUnavailable",
            "Deployment does not have minimum availability.".into(),
            false,
        )
    };
    let set_name = new_set
        .map(|s| s.name_any())
        .or_else(|| created_new.map(str::to_owned))
        .unwrap_or_default();
    let complete = updated == replicas
        && actual == replicas
        && available_count == replicas
        && new_set.is_some_and(|s| spec_replicas(s) == replicas);
    let old_updated = old["updatedReplicas"].as_i64().unwrap_or(0);
    let old_available = old["availableReplicas"].as_i64().unwrap_or(0);
    let progressed = i64::from(updated) > old_updated || i64::from(available_count) > old_available;
    let deadline = spec.and_then(|s| s.progress_deadline_seconds).unwrap_or(600);
    let previous_progress = previous("Progressing");
    let progressing = if spec.and_then(|s| s.paused) == Some(true) {
        condition(
            "Progressing",
            "Unknown",
            "DeploymentPaused",
            "Deployment is paused".into(),
            false,
        )
    } else if let Some(created) = created_new {
        condition(
            "Progressing",
            "True",
            "NewReplicaSetCreated",
            format!("Created new replica set {created:?}"),
            true,
        )
    } else if complete {
        condition(
            "Progressing",
            "True",
            "NewReplicaSetAvailable",
            format!("ReplicaSet {set_name:?} has successfully progressed."),
            false,
        )
    } else if progressed || previous_progress.is_none() {
        condition(
            "Progressing",
            "True",
            "ReplicaSetUpdated",
            format!("ReplicaSet {set_name:?} is progressing."),
            true,
        )
    } else {
        let last = previous_progress
            .as_ref()
            .and_then(|c| c["lastUpdateTime"].as_str())
            .and_then(|t| t.parse::<jiff::Timestamp>().ok());
        let timed_out = last.is_some_and(|t| {
            now.duration_since(t) > jiff::SignedDuration::from_secs(i64::from(deadline))
        });
        if timed_out {
            condition(
                "Progressing",
                "False",
                "ProgressDeadlineExceeded",
                format!("ReplicaSet {set_name:?} has timed out progressing."),
                false,
            )
        } else {
            previous_progress.clone().unwrap_or(Value::Null)
        }
    };
    let mut conditions = vec![available_condition];
    if !progressing.is_null() {
        conditions.push(progressing);
    }
    // Keep kube-controller-manager's order: Available, then Progressing, then others.
    conditions.extend(
        old_conditions
            .iter()
            .filter(|c| c["type"] != "Available" && c["type"] != "Progressing")
            .cloned(),
    );
    let mut status = json!({
        "observedGeneration": deployment.metadata.generation,
        "replicas": actual,
        "updatedReplicas": updated,
        "readyReplicas": ready,
        "availableReplicas": available_count,
        "unavailableReplicas": (total - available_count).max(0),
        "conditions": conditions,
    });
    if let Some(count) = deployment.status.as_ref().and_then(|s| s.collision_count) {
        status["collisionCount"] = json!(count);
    }
    if let Some(count) = terminating_replicas(owned) {
        status["terminatingReplicas"] = json!(count);
    }
    status
}

/// The ReplicaSets' terminating pods, as kube-controller-manager sums them: sets never synced
/// do not count, and none is known while a synced set does not say.
fn terminating_replicas(sets: &[Arc<ReplicaSet>]) -> Option<i64> {
    let mut sum = 0;
    for set in sets {
        let status = serde_json::to_value(&set.status).unwrap_or(Value::Null);
        match status["terminatingReplicas"].as_i64() {
            Some(n) => sum += n,
            None if status["observedGeneration"].as_i64().unwrap_or(0) == 0 => {}
            None => return None,
        }
    }
    Some(sum)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn counts() -> impl Strategy<Value = Counts> {
        (0..20i32, 0..20i32).prop_map(|(replicas, available)| Counts {
            replicas,
            available: available.min(replicas),
        })
    }

    proptest! {
        /// A round never takes the replicas over `replicas + maxSurge` (unless they were
        /// over already), and never scales away more available pods than
        /// `replicas - maxUnavailable` allows (a ReplicaSet removes its unavailable pods
        /// first).
        #[test]
        fn a_round_keeps_to_the_surge_and_the_availability_floor(
            replicas in 1..20i32,
            surge in 0..5i32,
            max_unavailable in 0..5i32,
            new in counts(),
            old in proptest::collection::vec(counts(), 0..4),
        ) {
            let max_unavailable = if surge == 0 && max_unavailable == 0 { 1 } else { max_unavailable.min(replicas) };
            let budget = Budget { replicas, surge, max_unavailable };
            let step = rolling_step(budget, new, &old);
            let before: i32 = new.replicas + old.iter().map(|c| c.replicas).sum::<i32>();
            let mut after_old: Vec<i32> = old.iter().map(|c| c.replicas).collect();
            for (index, count) in &step.old {
                prop_assert!(*count >= 0 && *count <= old[*index].replicas, "old sets only shrink");
                after_old[*index] = *count;
            }
            let after_new = step.new.unwrap_or(new.replicas);
            let after = after_new + after_old.iter().sum::<i32>();
            prop_assert!(after <= before.max(replicas + surge), "{after} over {}", replicas + surge);
            prop_assert!(step.new.is_none() || step.old.is_empty(), "one kind of change per round");
            // Available pods removed: what goes beyond each old set's unavailable pods.
            let removed: i32 = old
                .iter()
                .zip(&after_old)
                .map(|(c, after)| ((c.replicas - after) - (c.replicas - c.available)).max(0))
                .sum();
            let available: i32 = new.available + old.iter().map(|c| c.available).sum::<i32>();
            prop_assert!(removed <= (available - (replicas - max_unavailable)).max(0),
                "{removed} available pods removed from {available}");
        }

        /// A finished rollout (everything on the new set, available) asks for nothing.
        #[test]
        fn a_finished_rollout_is_left_alone(replicas in 1..20i32, surge in 0..5i32, unavailable in 1..5i32) {
            let budget = Budget { replicas, surge, max_unavailable: unavailable.min(replicas) };
            let done = Counts { replicas, available: replicas };
            let idle = Counts { replicas: 0, available: 0 };
            prop_assert_eq!(rolling_step(budget, done, &[idle, idle]), RollingStep::default());
        }
    }

    #[test]
    fn the_default_budget_of_three_moves_one_pod_at_a_time() {
        // 25% of 3: one over, none unavailable.
        let budget = Budget { replicas: 3, surge: 1, max_unavailable: 0 };
        let old = [Counts { replicas: 3, available: 3 }];
        let step = rolling_step(budget, Counts { replicas: 0, available: 0 }, &old);
        assert_eq!(step, RollingStep { new: Some(1), old: vec![] });
        // The new pod is not available yet: nothing old may go.
        let step = rolling_step(budget, Counts { replicas: 1, available: 0 }, &old);
        assert_eq!(step, RollingStep::default());
        // Once it is, one old pod goes.
        let step = rolling_step(budget, Counts { replicas: 1, available: 1 }, &old);
        assert_eq!(step, RollingStep { new: None, old: vec![(0, 2)] });
    }
}
