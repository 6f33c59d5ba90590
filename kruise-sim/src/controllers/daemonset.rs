//! The DaemonSet controller, as kube-controller-manager runs it.
//!
//! A DaemonSet runs one pod on every node it is eligible for. A node is eligible when the
//! template's `nodeName` (if any) names it, its labels satisfy the template's nodeSelector
//! and required node affinity, and the template (with the tolerations the controller adds to
//! every daemon pod) tolerates its `NoSchedule` and `NoExecute` taints. A pod already running
//! stays on a node it is no longer eligible for only when the node's affinity still matches
//! and no untolerated taint is `NoExecute`. Cordoned nodes run daemon pods: every daemon pod
//! tolerates `node.kubernetes.io/unschedulable`.
//!
//! One round of a DaemonSet:
//!
//! 1. orphan pods its selector matches are adopted, and pods it controls that its selector no
//!    longer matches are released;
//! 2. the ControllerRevision of its template (`<ds>-<hash>`, label `controller-revision-hash`)
//!    is found or created (a name taken by another template bumps `status.collisionCount`),
//!    and takes the newest revision number when an older template comes back;
//! 3. per node: a missing pod is created (generateName `<ds>-`, labels `controller-revision-hash`
//!    and `pod-template-generation`, required node affinity `metadata.name In [<node>]` in place
//!    of the template's required terms, for the scheduler to bind); finished pods, pods on nodes
//!    that may no longer run them and extra pods (all but the oldest, or with maxSurge the
//!    oldest old and oldest new one) are deleted;
//! 4. once nothing is left to create or delete, **RollingUpdate** replaces old pods: without
//!    surge it deletes old pods while at most `maxUnavailable` nodes lack an available pod
//!    (unavailable old pods go at once); with `maxSurge` it starts new pods beside available
//!    old ones on up to `maxSurge` nodes, and deletes the old pod once the new one is available.
//!    **OnDelete** replaces nothing: pods deleted by hand come back at the new template;
//! 5. revisions beyond `revisionHistoryLimit` that no pod uses are deleted, oldest first;
//! 6. the status: `desiredNumberScheduled`, `currentNumberScheduled`, `numberMisscheduled`,
//!    `numberReady`, `updatedNumberScheduled`, `numberAvailable` (with `minReadySeconds`),
//!    `numberUnavailable`, `observedGeneration` and `collisionCount`.
//!
//! Each round waits until the pod cache shows what it wrote.
//!
//! Differences from kube-controller-manager:
//!
//! - the template hash is FNV-32a over the template's JSON, as the Deployment controller here
//!   computes it (see [`super::deployment`]);
//! - failed pods are deleted and replaced without the per-node exponential backoff;
//! - a round creates its pods in slow-start batches without the 500-pod burst cap, and runs
//!   the rolling update only when nothing else was to be created or deleted;
//! - `observedGeneration` is written on every round (the round waits for its writes), and the
//!   `ControllerRevision`s are listed through the API each round rather than cached;
//! - orphan ControllerRevisions are not adopted, and duplicate revisions of one template are
//!   not merged;
//! - a pod bound to a node that no longer exists is deleted here (upstream, pod garbage
//!   collection does it);
//! - no Events are recorded.

use std::collections::{BTreeMap, HashSet};
use std::sync::Arc;
use std::time::Duration;

use k8s_openapi::api::apps::v1::{ControllerRevision, DaemonSet};
use k8s_openapi::api::core::v1::{
    Affinity, Node, NodeAffinity, NodeSelector, NodeSelectorRequirement, NodeSelectorTerm, Pod,
    Taint, Toleration,
};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use k8s_openapi::apimachinery::pkg::runtime::RawExtension;
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;
use kube::api::{Api, DeleteParams, ListParams, Patch, PatchParams, PostParams};
use kube::runtime::reflector::{ObjectRef, Store};
use kube::{Client, ResourceExt as _};
use serde_json::{Value, json};
use tokio::sync::mpsc::UnboundedReceiver;

use super::{Error, api_error, controlled_by, controller_of};
use crate::nodes::scheduler;

/// The pod and revision label naming the template's hash.
pub const REVISION_HASH: &str = "controller-revision-hash";
/// The pod label naming the DaemonSet's template generation the pod was made from.
pub const POD_TEMPLATE_GENERATION: &str = "pod-template-generation";
/// The DaemonSet annotation holding its template generation (set by the API server).
pub const TEMPLATE_GENERATION: &str = "deprecated.daemonset.template.generation";

/// The tolerations every daemon pod gets, as `(key, effect)`, all with operator `Exists`.
const DAEMON_TOLERATIONS: &[(&str, &str)] = &[
    ("node.kubernetes.io/not-ready", "NoExecute"),
    ("node.kubernetes.io/unreachable", "NoExecute"),
    ("node.kubernetes.io/disk-pressure", "NoSchedule"),
    ("node.kubernetes.io/memory-pressure", "NoSchedule"),
    ("node.kubernetes.io/pid-pressure", "NoSchedule"),
    ("node.kubernetes.io/unschedulable", "NoSchedule"),
];
/// The toleration host-network daemon pods get besides [`DAEMON_TOLERATIONS`].
const HOST_NETWORK_TOLERATION: (&str, &str) =
    ("node.kubernetes.io/network-unavailable", "NoSchedule");

struct Context {
    client: Client,
    pods: Store<Pod>,
    nodes: Store<Node>,
}

/// A DaemonSet's namespace and name.
type Key = ObjectRef<DaemonSet>;

/// Runs the controller until the task is aborted. The shared caches feed both the stores and
/// the queue, as in [`super::replicaset`]: a DaemonSet's change queues it, a pod's change
/// queues its DaemonSet (or, for an orphan, those selecting it), and a node's new labels,
/// taints or schedulability (or its coming or going) queue every DaemonSet.
pub(crate) async fn run(
    client: Client,
    (sets, set_events): (Store<DaemonSet>, UnboundedReceiver<DaemonSet>),
    (pods, pod_events): (Store<Pod>, UnboundedReceiver<Pod>),
    (nodes, mut node_events): (Store<Node>, UnboundedReceiver<Node>),
) {
    let (queue, keys) = tokio::sync::mpsc::unbounded_channel::<Key>();
    let pod_sets = sets.clone();
    let feed_pods =
        super::queue_owners(pod_events, queue.clone(), controller_set, move |pod: &Pod| {
            let owner = controller_set(pod);
            super::owner_or_adopters(&pod_sets, &pod.metadata, owner, |set, meta| {
                selects(set, meta)
            })
        });
    let node_queue = queue.clone();
    let node_sets = sets.clone();
    let node_store = nodes.clone();
    let feed_nodes = async move {
        let mut seen: BTreeMap<String, Value> = BTreeMap::new();
        while let Some(node) = node_events.recv().await {
            let name = node.name_any();
            let gone = node_store.get(&ObjectRef::from_obj(&node)).is_none();
            let placement = node_placement(&node);
            let changed = if gone {
                seen.remove(&name).is_some()
            } else {
                seen.insert(name, placement.clone()).as_ref() != Some(&placement)
            };
            if changed {
                for set in node_sets.state() {
                    let _ = node_queue.send(ObjectRef::from_obj(set.as_ref()));
                }
            }
        }
    };
    let context = Arc::new(Context { client, pods: pods.clone(), nodes: nodes.clone() });
    let feed_sets = super::queue_own(set_events, queue.clone());
    let worker = async move {
        nodes.wait_until_ready().await.ok();
        super::run_rounds(sets, queue, keys, pods, context, reconcile).await;
    };
    let feeds = futures::future::join3(feed_sets, feed_pods, feed_nodes);
    futures::future::join(feeds, worker).await;
}

/// What of a node decides where daemon pods run: labels, taints, schedulability.
fn node_placement(node: &Node) -> Value {
    json!([node.metadata.labels, node.spec.as_ref().map(|s| (&s.taints, s.unschedulable))])
}

/// The DaemonSet controlling `pod`, if one does.
fn controller_set(pod: &Pod) -> Option<Key> {
    controller_of(&pod.metadata, "apps/v1", "DaemonSet")
}

fn selects(set: &DaemonSet, meta: &ObjectMeta) -> bool {
    super::selector_matches(Some(&set.spec.selector), meta)
}

/// Whether a node may run the DaemonSet's pod: a new one, and one already there.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Eligibility {
    /// A pod should run there (and is created when missing).
    pub should_run: bool,
    /// A pod already there may stay.
    pub may_stay: bool,
}

/// The tolerations of `tolerations` with the daemon pods' own added (replacing any with the
/// same key and effect).
fn with_daemon_tolerations(
    tolerations: Option<&[Toleration]>,
    host_network: bool,
) -> Vec<Toleration> {
    let mut all: Vec<Toleration> = tolerations.unwrap_or_default().to_vec();
    let extra = host_network.then_some(HOST_NETWORK_TOLERATION);
    for &(key, effect) in DAEMON_TOLERATIONS.iter().chain(extra.iter()) {
        all.retain(|t| !(t.key.as_deref() == Some(key) && t.effect.as_deref() == Some(effect)));
        all.push(Toleration {
            key: Some(key.to_owned()),
            operator: Some("Exists".to_owned()),
            effect: Some(effect.to_owned()),
            ..Toleration::default()
        });
    }
    all
}

/// Whether `node` may run a daemon pod of `template` (kube-controller-manager's
/// `NodeShouldRunDaemonPod`): `template` is the DaemonSet's pod template as a pod; the daemon
/// tolerations are added here.
pub(crate) fn eligibility(template: &Pod, node: &Node) -> Eligibility {
    let never = Eligibility { should_run: false, may_stay: false };
    let spec = template.spec.as_ref();
    if let Some(wanted) = spec.and_then(|s| s.node_name.as_deref()).filter(|n| !n.is_empty())
        && Some(wanted) != node.metadata.name.as_deref()
    {
        return never;
    }
    if !scheduler::affinity_matches(template, node) {
        return never;
    }
    let tolerations = with_daemon_tolerations(
        spec.and_then(|s| s.tolerations.as_deref()),
        spec.and_then(|s| s.host_network) == Some(true),
    );
    let untolerated: Vec<&Taint> = node
        .spec
        .as_ref()
        .and_then(|s| s.taints.as_ref())
        .into_iter()
        .flatten()
        .filter(|taint| taint.effect == "NoSchedule" || taint.effect == "NoExecute")
        .filter(|taint| !tolerations.iter().any(|t| scheduler::tolerates(t, taint)))
        .collect();
    Eligibility {
        should_run: untolerated.is_empty(),
        may_stay: !untolerated.iter().any(|t| t.effect == "NoExecute"),
    }
}

/// The DaemonSet's template as a pod (for [`eligibility`]).
fn template_pod(set: &DaemonSet) -> Pod {
    Pod {
        metadata: set.spec.template.metadata.clone().unwrap_or_default(),
        spec: set.spec.template.spec.clone(),
        status: None,
    }
}

/// The DaemonSet's template generation: the API server's annotation, else its generation.
fn template_generation(set: &DaemonSet) -> String {
    set.annotations()
        .get(TEMPLATE_GENERATION)
        .cloned()
        .unwrap_or_else(|| set.metadata.generation.unwrap_or(1).to_string())
}

/// The daemon pod for `node` (kube-controller-manager's `CreatePodTemplate` with the node's
/// affinity): template labels plus the hash and template generation, the daemon tolerations,
/// and one required node affinity term, `metadata.name In [node]`.
fn new_pod(set: &DaemonSet, hash: &str, node: &str) -> Pod {
    let mut pod = super::pod_from_template(set, Some(&set.spec.template));
    let labels = pod.metadata.labels.get_or_insert_with(Default::default);
    labels.insert(REVISION_HASH.to_owned(), hash.to_owned());
    labels.insert(POD_TEMPLATE_GENERATION.to_owned(), template_generation(set));
    let mut spec = pod.spec.take().unwrap_or_default();
    spec.tolerations =
        Some(with_daemon_tolerations(spec.tolerations.as_deref(), spec.host_network == Some(true)));
    let mut affinity = spec.affinity.take().unwrap_or_default();
    let mut node_affinity = affinity.node_affinity.take().unwrap_or_default();
    node_affinity.required_during_scheduling_ignored_during_execution = Some(NodeSelector {
        node_selector_terms: vec![NodeSelectorTerm {
            match_fields: Some(vec![NodeSelectorRequirement {
                key: "metadata.name".to_owned(),
                operator: "In".to_owned(),
                values: Some(vec![node.to_owned()]),
            }]),
            match_expressions: None,
        }],
    });
    spec.affinity = Some(Affinity { node_affinity: Some(node_affinity), ..affinity });
    pod.spec = Some(spec);
    pod
}

/// The node a daemon pod runs on or is meant for: `spec.nodeName`, else the one name its
/// required node affinity allows.
fn target_node(pod: &Pod) -> Option<String> {
    let spec = pod.spec.as_ref()?;
    if let Some(name) = spec.node_name.as_ref().filter(|n| !n.is_empty()) {
        return Some(name.clone());
    }
    let NodeAffinity { required_during_scheduling_ignored_during_execution: required, .. } =
        spec.affinity.as_ref()?.node_affinity.as_ref()?;
    let terms = &required.as_ref()?.node_selector_terms;
    let [term] = terms.as_slice() else { return None };
    let [field] = term.match_fields.as_deref()? else { return None };
    let values = field.values.as_deref().unwrap_or_default();
    match (field.key.as_str(), field.operator.as_str(), values) {
        ("metadata.name", "In", [name]) => Some(name.clone()),
        _ => None,
    }
}

/// Whether the pod was made from the DaemonSet's current template.
fn updated(pod: &Pod, hash: &str, generation: &str) -> bool {
    let labels = pod.labels();
    labels.get(REVISION_HASH).is_some_and(|h| h == hash)
        || labels.get(POD_TEMPLATE_GENERATION).is_some_and(|g| g == generation)
}

fn finished(pod: &Pod) -> bool {
    matches!(pod.status.as_ref().and_then(|s| s.phase.as_deref()), Some("Failed" | "Succeeded"))
}

fn deleting(pod: &Pod) -> bool {
    pod.metadata.deletion_timestamp.is_some()
}

/// Pods of one node, oldest first: scheduled before unscheduled, then by creation, then name.
fn oldest_first(pods: &mut [Arc<Pod>]) {
    pods.sort_by(|a, b| {
        let unscheduled = |p: &Pod| kruise_core::pod::node_name_of(p).is_empty();
        (unscheduled(a), a.metadata.creation_timestamp.as_ref().map(|t| t.0), a.name_any()).cmp(&(
            unscheduled(b),
            b.metadata.creation_timestamp.as_ref().map(|t| t.0),
            b.name_any(),
        ))
    });
}

/// What one node's pods need (kube-controller-manager's `podsShouldBeOnNode`): whether a pod
/// is to be created, and the pods to delete. `pods` are the node's pods, oldest first.
fn node_actions(
    eligibility: Eligibility,
    pods: &[Arc<Pod>],
    surge: bool,
    available: &dyn Fn(&Pod) -> bool,
    is_updated: &dyn Fn(&Pod) -> bool,
) -> (bool, Vec<Arc<Pod>>) {
    let live: Vec<&Arc<Pod>> = pods.iter().filter(|p| !deleting(p)).collect();
    if !eligibility.may_stay {
        return (false, live.into_iter().cloned().collect());
    }
    if pods.is_empty() {
        return (eligibility.should_run, Vec::new());
    }
    let (ended, running): (Vec<&Arc<Pod>>, Vec<&Arc<Pod>>) =
        live.into_iter().partition(|p| finished(p));
    let mut doomed: Vec<Arc<Pod>> = ended.into_iter().cloned().collect();
    if !surge {
        doomed.extend(running.iter().skip(1).map(|p| (*p).clone()));
        return (false, doomed);
    }
    if running.is_empty() {
        return (eligibility.should_run, doomed);
    }
    let mut oldest_new = None;
    let mut oldest_old = None;
    for pod in running {
        let slot = if is_updated(pod) { &mut oldest_new } else { &mut oldest_old };
        if slot.is_none() {
            *slot = Some(pod);
        } else {
            doomed.push(pod.clone());
        }
    }
    if let (Some(new), Some(old)) = (oldest_new, oldest_old)
        && (!kruise_core::pod::is_pod_ready(old) || available(new))
    {
        doomed.push(old.clone());
    }
    (false, doomed)
}

/// A node's settled daemon pods, as the rolling update sees them: its oldest old and new pod
/// (each `Some(available)`), or `crowded` when it has more than one of either.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct Slot {
    /// The old pod, and whether it is available.
    pub old: Option<bool>,
    /// The new pod, and whether it is available.
    pub new: Option<bool>,
    /// More than one old or new pod: left to the per-node cleanup, counted unavailable.
    pub crowded: bool,
}

/// What one rolling-update round does, by slot position.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct RollingStep {
    /// Slots whose old pod is deleted.
    pub delete_old: Vec<usize>,
    /// Slots that get a new pod beside their old one (surge).
    pub create_new: Vec<usize>,
}

/// One rolling-update round over the eligible nodes' slots (kube-controller-manager's
/// `rollingUpdate`). Without surge, unavailable old pods are deleted, and available ones
/// while fewer than `max_unavailable` nodes lack an available pod. With surge, nodes whose
/// old pod is unavailable get a new pod at once, others on up to `max_surge` nodes at a time
/// (new pods not yet available count), and an old pod goes once its node's new one is
/// available.
pub(crate) fn rolling_step(
    slots: &[Slot],
    max_unavailable: usize,
    max_surge: usize,
) -> RollingStep {
    let mut step = RollingStep::default();
    if max_surge == 0 {
        let mut unavailable = 0;
        let mut candidates = Vec::new();
        for (index, slot) in slots.iter().enumerate() {
            match (slot.crowded, slot.old, slot.new) {
                (true, _, _) | (false, None, None) | (false, Some(_), Some(_)) => unavailable += 1,
                (false, None, Some(available)) => unavailable += usize::from(!available),
                (false, Some(false), None) => {
                    unavailable += 1;
                    step.delete_old.push(index);
                }
                (false, Some(true), None) => candidates.push(index),
            }
        }
        let room = max_unavailable.saturating_sub(unavailable).min(candidates.len());
        step.delete_old.extend(&candidates[..room]);
        return step;
    }
    let mut surging = 0;
    let mut candidates = Vec::new();
    for (index, slot) in slots.iter().enumerate() {
        match (slot.crowded, slot.old, slot.new) {
            (true, _, _) => surging += 1,
            (false, None, _) => {}
            (false, Some(false), None) => step.create_new.push(index),
            (false, Some(true), None) => candidates.push(index),
            (false, Some(_), Some(false)) => surging += 1,
            (false, Some(_), Some(true)) => step.delete_old.push(index),
        }
    }
    let room = max_surge.saturating_sub(surging).min(candidates.len());
    step.create_new.extend(&candidates[..room]);
    step
}

/// An int-or-percent of `total`, percentages rounded up.
fn scaled_up(value: Option<&IntOrString>, total: usize) -> usize {
    match value {
        Some(IntOrString::Int(n)) => usize::try_from(*n).unwrap_or(0),
        Some(IntOrString::String(s)) => s
            .strip_suffix('%')
            .and_then(|p| p.parse::<usize>().ok())
            .map_or(0, |percent| (percent * total).div_ceil(100)),
        None => 0,
    }
}

/// `(maxUnavailable, maxSurge)` resolved against the desired number of nodes (both zero on a
/// non-empty DaemonSet: one unavailable). Unset maxUnavailable means 1.
fn budget(set: &DaemonSet, desired: usize) -> (usize, usize) {
    let rolling = set.spec.update_strategy.as_ref().and_then(|s| s.rolling_update.as_ref());
    let one = IntOrString::Int(1);
    let unavailable =
        scaled_up(Some(rolling.and_then(|r| r.max_unavailable.as_ref()).unwrap_or(&one)), desired);
    let surge = scaled_up(rolling.and_then(|r| r.max_surge.as_ref()), desired);
    if unavailable == 0 && surge == 0 && desired > 0 { (1, 0) } else { (unavailable, surge) }
}

fn rolling_update(set: &DaemonSet) -> bool {
    set.spec.update_strategy.as_ref().and_then(|s| s.type_.as_deref()).unwrap_or("RollingUpdate")
        == "RollingUpdate"
}

/// The JSON a ControllerRevision of the template holds.
fn revision_data(set: &DaemonSet) -> Value {
    let mut template = serde_json::to_value(&set.spec.template).unwrap_or(Value::Null);
    if let Some(fields) = template.as_object_mut() {
        fields.insert("$patch".to_owned(), json!("replace"));
    }
    json!({"spec": {"template": template}})
}

/// The DaemonSet's ControllerRevisions (those it controls), oldest revision first.
async fn revisions_of(
    api: &Api<ControllerRevision>,
    set: &DaemonSet,
) -> Result<Vec<ControllerRevision>, Error> {
    let uid = set.uid().unwrap_or_default();
    let mut list: Vec<ControllerRevision> = api
        .list(&ListParams::default())
        .await
        .map_err(api_error(format!("list controllerrevisions of daemonset {}", set.name_any())))?
        .items
        .into_iter()
        .filter(|r| controlled_by(&r.metadata, &uid))
        .collect();
    list.sort_by_key(|r| r.revision);
    Ok(list)
}

/// Finds or creates the revision of the current template, with the newest revision number.
/// `Ok(None)` when the name is taken by another template: the collision count was raised and
/// the round is to run again.
async fn current_revision(
    api: &Api<ControllerRevision>,
    sets: &Api<DaemonSet>,
    set: &DaemonSet,
    revisions: &[ControllerRevision],
    hash: &str,
) -> Result<Option<ControllerRevision>, Error> {
    let data = revision_data(set);
    let newest = revisions.iter().filter_map(|r| r.revision).max().unwrap_or(0);
    if let Some(found) = revisions.iter().find(|r| r.data.0 == data) {
        if found.revision.unwrap_or(0) < newest {
            let name = found.name_any();
            let patch = json!({"revision": newest + 1});
            let bumped = api
                .patch(&name, &PatchParams::default(), &Patch::Merge(&patch))
                .await
                .map_err(api_error(format!("bump controllerrevision {name}")))?;
            return Ok(Some(bumped));
        }
        return Ok(Some(found.clone()));
    }
    let name = format!("{}-{hash}", set.name_any());
    let mut labels =
        set.spec.template.metadata.as_ref().and_then(|m| m.labels.clone()).unwrap_or_default();
    labels.insert(REVISION_HASH.to_owned(), hash.to_owned());
    let revision = ControllerRevision {
        metadata: ObjectMeta {
            name: Some(name.clone()),
            namespace: set.namespace(),
            labels: Some(labels),
            annotations: Some(set.annotations().clone()).filter(|a| !a.is_empty()),
            owner_references: Some(vec![super::controller_reference(set)]),
            ..ObjectMeta::default()
        },
        data: RawExtension(data.clone()),
        revision: Some(newest + 1),
    };
    match api.create(&PostParams::default(), &revision).await {
        Ok(created) => Ok(Some(created)),
        Err(kube::Error::Api(e)) if e.code == 409 => {
            let existing = api
                .get(&name)
                .await
                .map_err(api_error(format!("get controllerrevision {name}")))?;
            if existing.data.0 == data
                && controlled_by(&existing.metadata, &set.uid().unwrap_or_default())
            {
                return Ok(Some(existing));
            }
            let count = set.status.as_ref().and_then(|s| s.collision_count).unwrap_or(0) + 1;
            let patch = json!({"status": {"collisionCount": count}});
            sets.patch_status(&set.name_any(), &PatchParams::default(), &Patch::Merge(&patch))
                .await
                .map_err(api_error(format!(
                    "raise collisionCount of daemonset {}",
                    set.name_any()
                )))?;
            Ok(None)
        }
        Err(source) => Err(api_error(format!("create controllerrevision {name}"))(source)),
    }
}

/// One round; `Some(d)` asks for another after `d`.
async fn reconcile(set: Arc<DaemonSet>, context: Arc<Context>) -> Result<Option<Duration>, Error> {
    if set.metadata.deletion_timestamp.is_some() {
        return Ok(None);
    }
    let namespace = set.namespace().unwrap_or_default();
    let name = set.name_any();
    let uid = set.uid().unwrap_or_default();
    let pods: Api<Pod> = Api::namespaced(context.client.clone(), &namespace);
    let sets: Api<DaemonSet> = Api::namespaced(context.client.clone(), &namespace);
    let revisions_api: Api<ControllerRevision> =
        Api::namespaced(context.client.clone(), &namespace);

    // 1. Adoption and release.
    let owner = super::controller_reference(set.as_ref());
    let adoptable: Vec<Arc<Pod>> = context
        .pods
        .state()
        .into_iter()
        .filter(|p| {
            p.namespace().as_deref() == Some(&namespace)
                && (kruise_core::pod::is_pod_active(p) || controlled_by(&p.metadata, &uid))
        })
        .collect();
    if super::claim(&pods, adoptable, &owner, |pod| selects(&set, &pod.metadata)).await? {
        return Ok(Some(Duration::from_millis(200)));
    }

    // 2. The current template's revision.
    let collision_count = set.status.as_ref().and_then(|s| s.collision_count);
    let hash = super::deployment::template_hash(Some(&set.spec.template), collision_count);
    let revisions = revisions_of(&revisions_api, &set).await?;
    let Some(current) = current_revision(&revisions_api, &sets, &set, &revisions, &hash).await?
    else {
        return Ok(Some(Duration::from_millis(100)));
    };
    let generation = template_generation(&set);

    // 3. Per node, then 4. the rolling update.
    let now = jiff::Timestamp::now();
    let min_ready = set.spec.min_ready_seconds.unwrap_or(0);
    let available = |p: &Pod| kruise_core::pod::is_pod_available(p, min_ready, now);
    let is_updated = |p: &Pod| updated(p, &hash, &generation);
    let template = template_pod(&set);
    let nodes: BTreeMap<String, Arc<Node>> =
        context.nodes.state().into_iter().map(|n| (n.name_any(), n)).collect();
    let placement = pods_by_node(&context, &namespace, &uid);
    let surge = rolling_update(&set) && budget(&set, nodes.len()).1 > 0;
    let mut create_on: Vec<String> = Vec::new();
    let mut doomed: Vec<Arc<Pod>> = Vec::new();
    for (node_name, node) in &nodes {
        let on_node = placement.get(node_name).map(Vec::as_slice).unwrap_or_default();
        let (create, delete) =
            node_actions(eligibility(&template, node), on_node, surge, &available, &is_updated);
        if create {
            create_on.push(node_name.clone());
        }
        doomed.extend(delete);
    }
    // Pods meant for nodes that are gone.
    for (node_name, on_node) in &placement {
        if !nodes.contains_key(node_name) {
            doomed.extend(on_node.iter().filter(|p| !deleting(p)).cloned());
        }
    }
    if create_on.is_empty() && doomed.is_empty() && rolling_update(&set) {
        let eligible: Vec<&String> = nodes
            .iter()
            .filter(|(_, node)| eligibility(&template, node).should_run)
            .map(|(name, _)| name)
            .collect();
        let slots: Vec<Slot> = eligible
            .iter()
            .map(|name| {
                slot_of(
                    placement.get(*name).map(Vec::as_slice).unwrap_or_default(),
                    &available,
                    &is_updated,
                )
            })
            .collect();
        let (max_unavailable, max_surge) = budget(&set, eligible.len());
        let step = rolling_step(&slots, max_unavailable, max_surge);
        for index in step.delete_old {
            let on_node = placement.get(eligible[index]).map(Vec::as_slice).unwrap_or_default();
            doomed.extend(on_node.iter().filter(|p| !deleting(p) && !is_updated(p)).cloned());
        }
        create_on.extend(step.create_new.into_iter().map(|index| eligible[index].clone()));
    }

    let acted = !create_on.is_empty() || !doomed.is_empty();
    let mut failure = None;
    // Slow-start batches, as kube-controller-manager creates daemon pods.
    let (created, creation_failure) = super::create_in_batches(create_on.len(), |i| {
        let (pods, pod) = (pods.clone(), new_pod(&set, &hash, &create_on[i]));
        async move {
            pods.create(&PostParams::default(), &pod).await.map(|p| p.uid().unwrap_or_default())
        }
    })
    .await;
    if let Some(source) = creation_failure {
        failure = Some(api_error(format!("create pod of daemonset {name}"))(source));
    }
    let mut deleted = Vec::new();
    for pod in &doomed {
        let pod_name = pod.name_any();
        match pods.delete(&pod_name, &DeleteParams::default()).await {
            Ok(_) => deleted.push(pod.uid().unwrap_or_default()),
            Err(kube::Error::Api(e)) if e.code == 404 => {}
            Err(source) => {
                failure.get_or_insert(api_error(format!("delete pod {pod_name}"))(source));
                break;
            }
        }
    }
    if acted {
        super::wait_until(|| {
            let cached = context.pods.state();
            let uid_of = |p: &Arc<Pod>| p.uid().unwrap_or_default();
            created.iter().all(|c| cached.iter().any(|p| &uid_of(p) == c))
                && cached.iter().all(|p| !deleted.contains(&uid_of(p)) || deleting(p))
        })
        .await;
    }

    // 5. History.
    let placement = pods_by_node(&context, &namespace, &uid);
    let live_hashes: HashSet<String> = placement
        .values()
        .flatten()
        .filter_map(|p| p.labels().get(REVISION_HASH).cloned())
        .collect();
    let limit = usize::try_from(set.spec.revision_history_limit.unwrap_or(10)).unwrap_or(0);
    let old: Vec<&ControllerRevision> =
        revisions.iter().filter(|r| r.name_any() != current.name_any()).collect();
    let mut excess = old.len().saturating_sub(limit);
    for revision in old {
        if excess == 0 {
            break;
        }
        if revision.labels().get(REVISION_HASH).is_some_and(|h| live_hashes.contains(h)) {
            continue;
        }
        let revision_name = revision.name_any();
        match revisions_api.delete(&revision_name, &DeleteParams::default()).await {
            Ok(_) => excess -= 1,
            Err(kube::Error::Api(e)) if e.code == 404 => excess -= 1,
            Err(source) => {
                return Err(api_error(format!("delete controllerrevision {revision_name}"))(
                    source,
                ));
            }
        }
    }

    // 6. Status.
    let status = status_of(&set, &template, &nodes, &placement, &available, &is_updated);
    let stored = serde_json::to_value(&set.status).unwrap_or(Value::Null);
    if !super::status_matches(&stored, &status) {
        sets.patch_status(
            &name,
            &PatchParams::default(),
            &Patch::Merge(&json!({"status": status})),
        )
        .await
        .map_err(api_error(format!("update status of daemonset {name}")))?;
    }
    if let Some(error) = failure {
        return Err(error);
    }
    if acted {
        return Ok(Some(Duration::from_millis(100)));
    }
    // Pods still becoming available for minReadySeconds need another look.
    if min_ready > 0 && status["numberAvailable"].as_u64() < status["numberReady"].as_u64() {
        return Ok(Some(Duration::from_secs(1)));
    }
    Ok(None)
}

/// The DaemonSet's pods, except finished ones already being deleted.
fn owned_pods(context: &Context, namespace: &str, uid: &str) -> Vec<Arc<Pod>> {
    context
        .pods
        .state()
        .into_iter()
        .filter(|p| p.namespace().as_deref() == Some(namespace) && controlled_by(&p.metadata, uid))
        .filter(|p| !(finished(p) && deleting(p)))
        .collect()
}

/// The DaemonSet's pods by the node they run on or are meant for, each node's oldest first.
fn pods_by_node(context: &Context, namespace: &str, uid: &str) -> BTreeMap<String, Vec<Arc<Pod>>> {
    let mut by_node: BTreeMap<String, Vec<Arc<Pod>>> = BTreeMap::new();
    for pod in owned_pods(context, namespace, uid) {
        if let Some(node) = target_node(&pod) {
            by_node.entry(node).or_default().push(pod);
        }
    }
    for pods in by_node.values_mut() {
        oldest_first(pods);
    }
    by_node
}

/// A node's pods as a rolling-update [`Slot`]; `pods` are oldest first.
fn slot_of(
    pods: &[Arc<Pod>],
    available: &dyn Fn(&Pod) -> bool,
    is_updated: &dyn Fn(&Pod) -> bool,
) -> Slot {
    let live: Vec<&Arc<Pod>> = pods.iter().filter(|p| !deleting(p)).collect();
    let (new, old): (Vec<&Arc<Pod>>, Vec<&Arc<Pod>>) =
        live.into_iter().partition(|p| is_updated(p));
    Slot {
        old: old.first().map(|p| available(p)),
        new: new.first().map(|p| available(p)),
        crowded: old.len() > 1 || new.len() > 1,
    }
}

/// The status for the DaemonSet's pods `placement` over `nodes`, as JSON.
fn status_of(
    set: &DaemonSet,
    template: &Pod,
    nodes: &BTreeMap<String, Arc<Node>>,
    placement: &BTreeMap<String, Vec<Arc<Pod>>>,
    available: &dyn Fn(&Pod) -> bool,
    is_updated: &dyn Fn(&Pod) -> bool,
) -> Value {
    let (mut desired, mut current, mut misscheduled) = (0, 0, 0);
    let (mut ready, mut updated_count, mut available_count) = (0, 0, 0);
    for (node_name, node) in nodes {
        let on_node = placement.get(node_name).map(Vec::as_slice).unwrap_or_default();
        if !eligibility(template, node).should_run {
            misscheduled += usize::from(!on_node.is_empty());
            continue;
        }
        desired += 1;
        let Some(oldest) = on_node.first() else { continue };
        current += 1;
        let is_ready = kruise_core::pod::is_pod_ready(oldest);
        ready += usize::from(is_ready);
        available_count += usize::from(is_ready && available(oldest));
        updated_count += usize::from(is_updated(oldest));
    }
    json!({
        "desiredNumberScheduled": desired,
        "currentNumberScheduled": current,
        "numberMisscheduled": misscheduled,
        "numberReady": ready,
        "updatedNumberScheduled": updated_count,
        "numberAvailable": available_count,
        "numberUnavailable": desired - available_count,
        "observedGeneration": set.metadata.generation,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn node(labels: Value, taints: Value) -> Node {
        serde_json::from_value(json!({
            "metadata": {"name": "n1", "labels": labels},
            "spec": {"taints": taints},
        }))
        .expect("node")
    }

    fn template(spec: Value) -> Pod {
        serde_json::from_value(json!({"spec": spec})).expect("pod")
    }

    const BOTH: Eligibility = Eligibility { should_run: true, may_stay: true };

    #[test]
    fn node_selector_and_affinity_decide_before_taints() {
        let pod = template(json!({"containers": [], "nodeSelector": {"role": "edge"}}));
        assert_eq!(eligibility(&pod, &node(json!({"role": "edge"}), json!([]))), BOTH);
        let elsewhere = eligibility(&pod, &node(json!({"role": "core"}), json!([])));
        assert_eq!(elsewhere, Eligibility { should_run: false, may_stay: false });
        let pinned = template(json!({"containers": [], "nodeName": "n2"}));
        assert!(!eligibility(&pinned, &node(json!({}), json!([]))).may_stay);
    }

    #[test]
    fn no_schedule_taints_keep_running_pods_and_no_execute_ones_evict_them() {
        let pod = template(json!({"containers": []}));
        let no_schedule = node(json!({}), json!([{"key": "k", "effect": "NoSchedule"}]));
        assert_eq!(
            eligibility(&pod, &no_schedule),
            Eligibility { should_run: false, may_stay: true }
        );
        let no_execute = node(json!({}), json!([{"key": "k", "effect": "NoExecute"}]));
        assert!(!eligibility(&pod, &no_execute).may_stay);
        let preferred = node(json!({}), json!([{"key": "k", "effect": "PreferNoSchedule"}]));
        assert_eq!(eligibility(&pod, &preferred), BOTH);
        let tolerant = template(json!({"containers": [],
            "tolerations": [{"key": "k", "operator": "Exists"}]}));
        assert_eq!(eligibility(&tolerant, &no_execute), BOTH);
    }

    #[test]
    fn daemon_pods_tolerate_cordoned_and_pressured_nodes() {
        let pod = template(json!({"containers": []}));
        let cordoned = node(
            json!({}),
            json!([{"key": "node.kubernetes.io/unschedulable", "effect": "NoSchedule"},
                {"key": "node.kubernetes.io/not-ready", "effect": "NoExecute"},
                {"key": "node.kubernetes.io/disk-pressure", "effect": "NoSchedule"}]),
        );
        assert_eq!(eligibility(&pod, &cordoned), BOTH);
        let network = node(
            json!({}),
            json!([{"key": "node.kubernetes.io/network-unavailable", "effect": "NoSchedule"}]),
        );
        assert!(!eligibility(&pod, &network).should_run);
        let host = template(json!({"containers": [], "hostNetwork": true}));
        assert_eq!(eligibility(&host, &network), BOTH);
    }

    #[test]
    fn new_pods_target_their_node_and_carry_the_revision() {
        let set: DaemonSet = serde_json::from_value(json!({
            "metadata": {"name": "agent", "namespace": "default", "uid": "u1", "generation": 3,
                "annotations": {TEMPLATE_GENERATION: "2"}},
            "spec": {
                "selector": {"matchLabels": {"app": "agent"}},
                "template": {"metadata": {"labels": {"app": "agent"}}, "spec": {"containers": [],
                    "affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution":
                        {"nodeSelectorTerms": [{"matchFields": [{"key": "metadata.name",
                            "operator": "In", "values": ["other"]}]}]}}}}},
            },
        }))
        .expect("daemonset");
        let pod = new_pod(&set, "abc", "n1");
        assert_eq!(pod.metadata.generate_name.as_deref(), Some("agent-"));
        let labels = pod.labels();
        assert_eq!(labels.get(REVISION_HASH).map(String::as_str), Some("abc"));
        assert_eq!(labels.get(POD_TEMPLATE_GENERATION).map(String::as_str), Some("2"));
        assert_eq!(target_node(&pod).as_deref(), Some("n1"));
        let tolerations = pod.spec.as_ref().and_then(|s| s.tolerations.as_ref()).map(Vec::len);
        assert_eq!(tolerations, Some(DAEMON_TOLERATIONS.len()));
        assert!(controlled_by(&pod.metadata, "u1"));
    }

    #[test]
    fn percentages_round_up_and_zero_budgets_allow_one() {
        assert_eq!(scaled_up(Some(&IntOrString::String("10%".into())), 3), 1);
        assert_eq!(scaled_up(Some(&IntOrString::String("50%".into())), 3), 2);
        assert_eq!(scaled_up(Some(&IntOrString::Int(2)), 3), 2);
    }

    #[test]
    fn without_surge_one_available_old_pod_goes_at_a_time() {
        let old = Slot { old: Some(true), ..Slot::default() };
        let step = rolling_step(&[old, old, old], 1, 0);
        assert_eq!(step, RollingStep { delete_old: vec![0], create_new: vec![] });
        let waiting = Slot { new: Some(false), ..Slot::default() };
        assert_eq!(rolling_step(&[waiting, old, old], 1, 0), RollingStep::default());
        let broken = Slot { old: Some(false), ..Slot::default() };
        assert_eq!(rolling_step(&[waiting, broken, old], 1, 0).delete_old, vec![1]);
    }

    #[test]
    fn with_surge_new_pods_start_beside_old_ones() {
        let old = Slot { old: Some(true), ..Slot::default() };
        let surged = Slot { old: Some(true), new: Some(false), crowded: false };
        let done = Slot { old: Some(true), new: Some(true), crowded: false };
        let step = rolling_step(&[old, old, surged, done], 0, 2);
        assert_eq!(step, RollingStep { delete_old: vec![3], create_new: vec![0] });
    }

    fn slot() -> impl Strategy<Value = Slot> {
        (
            proptest::option::of(any::<bool>()),
            proptest::option::of(any::<bool>()),
            proptest::bool::weighted(0.1),
        )
            .prop_map(|(old, new, crowded)| Slot { old, new, crowded })
    }

    /// Whether a node has no available pod once the step's deletions are done (new pods
    /// created by the step are not available yet).
    fn unavailable_after(slot: &Slot, deleted: bool) -> bool {
        slot.crowded || !(slot.new == Some(true) || (!deleted && slot.old == Some(true)))
    }

    proptest! {
        #[test]
        fn deletions_never_take_available_nodes_past_max_unavailable(
            slots in proptest::collection::vec(slot(), 0..12),
            max_unavailable in 1..5usize,
        ) {
            let step = rolling_step(&slots, max_unavailable, 0);
            prop_assert!(step.create_new.is_empty());
            let before = slots.iter().filter(|s| unavailable_after(s, false)).count();
            let after = slots
                .iter()
                .enumerate()
                .filter(|(i, s)| unavailable_after(s, step.delete_old.contains(i)))
                .count();
            // Available old pods are only deleted within the budget; unavailable ones anyway.
            prop_assert!(after <= before.max(max_unavailable), "{before} -> {after}");
            for &i in &step.delete_old {
                prop_assert!(slots[i].old.is_some() && slots[i].new.is_none() && !slots[i].crowded);
            }
        }

        #[test]
        fn surge_never_takes_available_nodes_away_nor_surges_past_its_budget(
            slots in proptest::collection::vec(slot(), 0..12),
            max_surge in 1..5usize,
        ) {
            let step = rolling_step(&slots, 0, max_surge);
            for &i in &step.delete_old {
                prop_assert_eq!(slots[i].new, Some(true), "old pods go only beside available new ones");
            }
            let surging = slots.iter().filter(|s| s.crowded || (s.old.is_some() && s.new == Some(false))).count();
            let started_beside_available = step
                .create_new
                .iter()
                .filter(|&&i| slots[i].old == Some(true))
                .count();
            prop_assert!(started_beside_available <= max_surge.saturating_sub(surging));
        }
    }
}
