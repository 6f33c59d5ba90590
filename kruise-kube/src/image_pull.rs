//! Image pre-pulling in the manager: the NodeImage, ImagePullJob and ImageListPullJob
//! controllers, over kruise-core's planners ([`kruise_core::imagepull`]).
//!
//! - **`nodeimage-controller`** (gate `KruiseDaemon`): one NodeImage per Node, same name and
//!   labels, created once the node has been Ready for `--nodeimage-creation-delay`, deleted
//!   with the node; finished tags pruned after their TTL, owners whose job is gone dropped,
//!   tags the daemon never answered for failed ([`kruise_core::imagepull::plan_node_image`]).
//! - **`imagepulljob-controller`** (gates `KruiseDaemon` and `ImagePullJobGate`): puts the
//!   job's tag on at most `parallelism` NodeImages at a time, reads their status back into the
//!   job's, copies pull secrets into the daemon's namespace, holds a finalizer until the job's
//!   entries are released, and deletes the job `ttlSecondsAfterFinished` after completion
//!   ([`kruise_core::imagepull::plan_job`]). A NodeImage entry is written as a merge patch
//!   against the NodeImage as cached, guarded by its resourceVersion: after a conflict the job
//!   is planned again from the newer NodeImage, so concurrent jobs never overwrite each
//!   other's entries.
//!
//! Each controller hands its plan (`to_plan` of kruise-core's answer) to the applier; the
//! Events about other objects than the one reconciled (a NodeImage's pull failures, recorded
//! on the job that asked for the image) are recorded directly.
//! - **`imagelistpulljob-controller`** (same gates): one child ImagePullJob per image
//!   ([`kruise_core::imagepull::plan_list_job`]).
//!
//! Cost: a NodeImage change wakes only the jobs with an entry on it
//! ([`kruise_core::imagepull::jobs_to_wake`]); a job's deletion finds its NodeImages through
//! a [`TagOwnerIndex`] kept from NodeImage events. A job's reconcile reads the NodeImages it
//! selects and nothing about other jobs. A NodeImage that appears (or whose labels change)
//! wakes the unfinished jobs, which may select it.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::{Arc, Mutex, RwLock};
use std::time::{Duration, Instant};

use futures::future::BoxFuture;
use k8s_openapi::api::core::v1::{Node, Secret};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kruise_api::apps::v1beta1::{ImageListPullJob, ImagePullJob, NodeImage};
use kruise_core::imagepull::{self as core, JobInput, TagOwnerIndex};
use kruise_core::plan::Action;
use kube::{Client, Resource as _, ResourceExt as _};

use crate::applier::{ApplyError, PlanOwner};
use crate::cache::{Cache, ObjectKey, WatchEvents, Watched, cluster_watch};
use crate::cached_pod::CachedPod;
use crate::controller::{
    ControllerContext, ControllerInfo, KeyMapping, ReconcileError, Reconciler, Registration,
    ServedResource, Watch,
};

crate::watched_namespaced!(ImagePullJob, ImageListPullJob);

impl Watched for NodeImage {
    fn watch(client: &Client, _namespace: Option<&str>) -> WatchEvents<Self> {
        cluster_watch(client)
    }
}

/// Upstream's controller names.
pub const NODE_IMAGE_CONTROLLER: &str = "nodeimage-controller";
/// See [`NODE_IMAGE_CONTROLLER`].
pub const IMAGE_PULL_JOB_CONTROLLER: &str = "imagepulljob-controller";
/// See [`NODE_IMAGE_CONTROLLER`].
pub const IMAGE_LIST_PULL_JOB_CONTROLLER: &str = "imagelistpulljob-controller";

/// How often an unfinished job looks again without any event (a safety net: a node it
/// selects through a pod may have changed).
const UNFINISHED_RESYNC: Duration = Duration::from_secs(60);
/// How long a child ImagePullJob created by a list job is waited for in the cache.
const CREATE_EXPECTATION: Duration = Duration::from_secs(30);

const fn served(plural: &'static str) -> Option<ServedResource> {
    Some(ServedResource { group: "apps.kruise.io", version: "v1beta1", plural })
}

fn to_duration(d: Option<jiff::SignedDuration>) -> Option<Duration> {
    d.and_then(|d| Duration::try_from(d).ok())
}

fn write_error(
    action: &'static str,
    target: impl Into<String>,
    source: ApplyError,
) -> ReconcileError {
    ReconcileError::Write { action, target: target.into(), source }
}

/// Does the NodeImage carry labels different from `old`'s (or did it appear)?
fn appeared_or_relabelled(old: Option<&NodeImage>, new: Option<&NodeImage>) -> bool {
    match (old, new) {
        (None, Some(_)) => true,
        (Some(o), Some(n)) => o.metadata.labels != n.metadata.labels,
        _ => false,
    }
}

// ---------------------------------------------------------------------------------------------
// NodeImage

/// The NodeImage controller.
pub struct NodeImageController {
    context: ControllerContext,
    nodes: Cache<Node>,
    node_images: Cache<NodeImage>,
    jobs: Cache<ImagePullJob>,
    /// Which NodeImages carry which job's entries: a deleted job wakes them.
    index: Arc<RwLock<TagOwnerIndex>>,
}

/// A [`TagOwnerIndex`] of `node_images`, kept up to date from its events.
fn owner_index(node_images: &Cache<NodeImage>) -> Arc<RwLock<TagOwnerIndex>> {
    let index = Arc::new(RwLock::new(TagOwnerIndex::default()));
    let feed = index.clone();
    node_images.subscribe(Arc::new(move |change| {
        feed.write()
            .unwrap_or_else(|p| p.into_inner())
            .update(change.old.as_deref(), change.new.as_deref());
    }));
    // What the cache held before the subscription (updates are idempotent).
    {
        let mut index = index.write().unwrap_or_else(|p| p.into_inner());
        for ni in node_images.all() {
            index.update(None, Some(&ni));
        }
    }
    index
}

impl NodeImageController {
    const INFO: ControllerInfo =
        ControllerInfo::new(NODE_IMAGE_CONTROLLER, "nodeimage-workers", served("nodeimages"))
            .with_gates(&["KruiseDaemon"]);

    fn build(context: ControllerContext) -> Arc<dyn Reconciler> {
        let node_images = context.caches.get();
        Arc::new(Self {
            nodes: context.caches.get(),
            index: owner_index(&node_images),
            node_images,
            jobs: context.caches.get(),
            context,
        })
    }

    /// Which non-batch pull secrets named on `ni` exist (read from the API server: such
    /// secrets are rare, and the manager caches no Secrets).
    async fn existing_secrets(&self, ni: Option<&NodeImage>) -> BTreeSet<(String, String)> {
        let mut wanted = BTreeSet::new();
        for spec in ni.iter().flat_map(|n| n.spec.images.values()) {
            for s in &spec.pull_secrets {
                if s.mode != core::REFERENCE_MODE_BATCH {
                    wanted.insert((s.namespace.clone(), s.name.clone()));
                }
            }
        }
        let mut found = BTreeSet::new();
        for (ns, name) in wanted {
            // An unreadable secret counts as present: never drop a reference on an error.
            match self.context.applier.get_opt::<Secret>(&ns, &name).await {
                Ok(None) => {}
                _ => {
                    found.insert((ns, name));
                }
            }
        }
        found
    }

    async fn reconcile_name(&self, key: &ObjectKey) -> Result<Option<Duration>, ReconcileError> {
        let name = key.name.as_str();
        let node_key = ObjectKey::new("", name);
        let node = self.nodes.get(&node_key);
        let ni = self.node_images.get(&node_key);
        let secrets = self.existing_secrets(ni.as_deref()).await;
        let jobs = &self.jobs;
        let job_uid =
            |ns: &str, job: &str| jobs.get(&ObjectKey::new(ns, job)).and_then(|j| j.uid());
        let secret_exists = |ns: &str, s: &str| secrets.contains(&(ns.to_owned(), s.to_owned()));
        let now = jiff::Timestamp::now();
        let plan = core::plan_node_image(
            name,
            node.as_deref(),
            ni.as_deref(),
            &job_uid,
            &secret_exists,
            &self.context.settings.image_pull,
            now,
        );
        let applier = &self.context.applier;
        if let Some(update) = &plan.update {
            tracing::debug!(nodeimage = name, reasons = ?update.reasons, "updating the NodeImage");
        }
        if let Some(subject) = ni.as_deref().or(plan.create.as_ref()) {
            let status = serde_json::to_value(&subject.status).unwrap_or_default();
            let owner = PlanOwner::of(subject, status);
            applier.apply(&owner, &plan.to_plan(name, ni.as_deref()), None, now).await?;
        }
        for (job, event) in &plan.events {
            let warning = matches!(event.type_, kruise_core::workload::EventType::Warning);
            let reference = match job {
                Some(job) => {
                    let (ns, job_name) = job.split_once('/').unwrap_or(("", job));
                    match self.jobs.get(&ObjectKey::new(ns, job_name)) {
                        Some(j) => j.object_ref(&()),
                        None => continue,
                    }
                }
                None => match ni.as_deref() {
                    Some(ni) => ni.object_ref(&()),
                    None => continue,
                },
            };
            applier
                .event(&reference, warning, &event.reason, "Reconcile", event.message.clone())
                .await;
        }
        Ok(to_duration(plan.requeue_after))
    }
}

impl Reconciler for NodeImageController {
    fn watches(&self) -> Vec<Watch> {
        let index = self.index.clone();
        vec![
            Watch::own(&self.node_images),
            // A job that goes (without releasing its entries itself, e.g. a completed one)
            // wakes the NodeImages that carry its entries, which then drop them.
            Watch::new(&self.jobs, KeyMapping::Custom, move |change| {
                let (Some(old), None) = (change.old.as_deref(), change.new.as_deref()) else {
                    return Vec::new();
                };
                let uid = old.uid().unwrap_or_default();
                index
                    .read()
                    .unwrap_or_else(|p| p.into_inner())
                    .nodes_of(&uid)
                    .map(|n| ObjectKey::new("", n))
                    .collect()
            }),
            Watch::new(&self.nodes, KeyMapping::Custom, |change| {
                let (old, new) = (change.old.as_deref(), change.new.as_deref());
                // Heartbeats change nothing the NodeImage depends on.
                let relevant = match (old, new) {
                    (Some(o), Some(n)) => {
                        o.metadata.labels != n.metadata.labels
                            || o.metadata.deletion_timestamp != n.metadata.deletion_timestamp
                            || ready(o) != ready(n)
                    }
                    _ => true,
                };
                if !relevant {
                    return Vec::new();
                }
                new.or(old).map(|n| ObjectKey::new("", n.name_any())).into_iter().collect()
            }),
        ]
    }

    fn keys(&self) -> Vec<ObjectKey> {
        let mut keys: BTreeSet<ObjectKey> =
            self.nodes.all().iter().map(|n| ObjectKey::new("", n.name_any())).collect();
        keys.extend(self.node_images.all().iter().map(|n| ObjectKey::new("", n.name_any())));
        keys.into_iter().collect()
    }

    fn reconcile<'a>(
        &'a self,
        key: &'a ObjectKey,
    ) -> BoxFuture<'a, Result<Option<Duration>, ReconcileError>> {
        Box::pin(self.reconcile_name(key))
    }
}

fn ready(node: &Node) -> Option<String> {
    node.status
        .as_ref()?
        .conditions
        .as_ref()?
        .iter()
        .find(|c| c.type_ == "Ready")
        .map(|c| c.status.clone())
}

/// The NodeImage controller's registration.
pub fn node_image_registration() -> Registration {
    Registration { info: NodeImageController::INFO, build: NodeImageController::build }
}

// ---------------------------------------------------------------------------------------------
// ImagePullJob

/// The ImagePullJob controller.
pub struct ImagePullJobController {
    context: ControllerContext,
    jobs: Cache<ImagePullJob>,
    node_images: Cache<NodeImage>,
    pods: Cache<CachedPod>,
    /// Which NodeImages carry which job's entries, kept from NodeImage events.
    index: Arc<RwLock<TagOwnerIndex>>,
}

impl ImagePullJobController {
    const INFO: ControllerInfo = ControllerInfo::new(
        IMAGE_PULL_JOB_CONTROLLER,
        "imagepulljob-workers",
        served("imagepulljobs"),
    )
    .with_gates(&["KruiseDaemon", "ImagePullJobGate"]);

    fn build(context: ControllerContext) -> Arc<dyn Reconciler> {
        let node_images: Cache<NodeImage> = context.caches.get();
        let index = owner_index(&node_images);
        Arc::new(Self {
            jobs: context.caches.get(),
            pods: context.caches.get(),
            node_images,
            index,
            context,
        })
    }

    /// The names of the NodeImages the job selects.
    fn selected(&self, job: &ImagePullJob) -> Result<Vec<String>, core::ImagePullError> {
        // Only names and labels matter to the selection: a light copy of each NodeImage.
        let light: Vec<NodeImage> = self
            .node_images
            .all()
            .iter()
            .map(|n| NodeImage {
                metadata: ObjectMeta {
                    name: n.metadata.name.clone(),
                    labels: n.metadata.labels.clone(),
                    ..Default::default()
                },
                ..Default::default()
            })
            .collect();
        let pods: Vec<k8s_openapi::api::core::v1::Pod> = if job.spec.template.pod_selector.is_some()
        {
            let namespace = job.namespace().unwrap_or_default();
            let mut pods: Vec<_> =
                self.pods.in_namespace(&namespace).iter().filter_map(|p| p.to_pod().ok()).collect();
            pods.sort_by(|a, b| a.metadata.name.cmp(&b.metadata.name));
            pods
        } else {
            Vec::new()
        };
        core::select_nodes(job, &light, &pods)
    }

    /// Reads the job's pull secrets and the copies in the daemon's namespace: the references
    /// its NodeImage entries list, and the writes to the copies.
    async fn sync_secrets(
        &self,
        job: &ImagePullJob,
    ) -> Result<(Vec<kruise_api::apps::v1beta1::ReferenceObject>, Vec<Action>), ReconcileError>
    {
        if job.spec.template.pull_secrets.is_empty() {
            return Ok((Vec::new(), Vec::new()));
        }
        let config = &self.context.settings.image_pull;
        let applier = &self.context.applier;
        let namespace = job.namespace().unwrap_or_default();
        let mut sources = Vec::new();
        for name in &job.spec.template.pull_secrets {
            match applier.get_opt::<Secret>(&namespace, name).await {
                Ok(Some(s)) => sources.push(s),
                Ok(None) => {}
                Err(e) => {
                    return Err(write_error("get pull secret", format!("{namespace}/{name}"), e));
                }
            }
        }
        let copies = if namespace == config.daemon_config_namespace {
            Vec::new()
        } else {
            applier
                .list::<Secret>(&config.daemon_config_namespace)
                .await
                .map_err(|e| write_error("list secrets", &config.daemon_config_namespace, e))?
        };
        let plan = core::plan_pull_secrets(job, &sources, &copies, config);
        let actions = plan.to_actions(&config.daemon_config_namespace, &copies);
        Ok((plan.refs, actions))
    }

    async fn reconcile_job(&self, key: &ObjectKey) -> Result<Option<Duration>, ReconcileError> {
        let Some(job) = self.jobs.get(key) else {
            return Ok(None);
        };
        let applier = &self.context.applier;
        let now = jiff::Timestamp::now();
        let finished = job.metadata.deletion_timestamp.is_some()
            || job.status.as_ref().is_some_and(|s| s.completion_time.is_some());
        let nodes = match self.selected(&job) {
            Ok(nodes) => nodes,
            Err(e) => {
                let reference = job.object_ref(&());
                applier
                    .event(&reference, true, "InvalidSelector", "Reconcile", e.to_string())
                    .await;
                return Ok(None);
            }
        };
        let (secrets, secret_writes) = self.sync_secrets(&job).await?;
        let held: HashMap<String, Arc<NodeImage>> = if finished {
            HashMap::new()
        } else {
            nodes
                .iter()
                .filter_map(|n| {
                    self.node_images.get(&ObjectKey::new("", n.as_str())).map(|ni| (n.clone(), ni))
                })
                .collect()
        };
        let uid = job.uid().unwrap_or_default();
        let owned: Vec<String> = self
            .index
            .read()
            .unwrap_or_else(|p| p.into_inner())
            .nodes_of(&uid)
            .map(str::to_owned)
            .collect();
        let planned = {
            let lookup = |name: &str| held.get(name).map(|n| n.as_ref());
            let input = JobInput {
                job: &job,
                nodes: &nodes,
                node_image: &lookup,
                owned_nodes: &owned,
                secrets: &secrets,
                config: &self.context.settings.image_pull,
                now,
            };
            core::plan_job(&input)
        };
        let plan = match planned {
            Ok(plan) => plan,
            Err(e) => {
                let reference = job.object_ref(&());
                applier.event(&reference, true, "InvalidImage", "Reconcile", e.to_string()).await;
                return Ok(None);
            }
        };
        let node_images = &self.node_images;
        let node_image =
            |node: &str| node_images.get(&ObjectKey::new("", node)).map(|n| (*n).clone());
        let writes = plan.to_plan(&job, secret_writes, &node_image);
        let owner = PlanOwner::of(job.as_ref(), serde_json::Value::Null);
        applier.apply(&owner, &writes, None, now).await?;
        if plan.delete {
            return Ok(None);
        }
        let mut requeue = to_duration(plan.requeue_after);
        let complete = plan
            .status
            .as_ref()
            .or(job.status.as_ref())
            .is_some_and(|s| s.completion_time.is_some());
        if !complete && job.metadata.deletion_timestamp.is_none() {
            requeue = Some(requeue.map_or(UNFINISHED_RESYNC, |r| r.min(UNFINISHED_RESYNC)));
        }
        Ok(requeue)
    }
}

impl Reconciler for ImagePullJobController {
    fn watches(&self) -> Vec<Watch> {
        let jobs = self.jobs.clone();
        let pod_jobs = self.jobs.clone();
        vec![
            Watch::own(&self.jobs),
            // A pod scheduled, relabelled or deleted wakes the active podSelector jobs of its
            // namespace it may concern (upstream's pod event handler). The pod's node is read
            // only when its namespace has such a job.
            Watch::new(&self.pods, KeyMapping::Custom, move |change| {
                let (old, new) = (change.old.as_deref(), change.new.as_deref());
                let Some(namespace) = new.or(old).and_then(|p| p.metadata.namespace.as_deref())
                else {
                    return Vec::new();
                };
                let candidates = pod_jobs
                    .select_in_namespace(namespace, |j| j.spec.template.pod_selector.is_some());
                if candidates.is_empty() {
                    return Vec::new();
                }
                let empty = BTreeMap::new();
                let nodes = (old.map(CachedPod::node_name), new.map(CachedPod::node_name));
                core::pod_selector_jobs_to_wake(
                    placement(old, nodes.0.as_deref(), &empty),
                    placement(new, nodes.1.as_deref(), &empty),
                    candidates.iter().map(AsRef::as_ref),
                )
                .into_iter()
                .map(ObjectKey::of)
                .collect()
            }),
            // A NodeImage change wakes the jobs with an entry on it; a NodeImage that appears or
            // changes labels wakes every unfinished job (it may select it).
            Watch::new(&self.node_images, KeyMapping::Custom, move |change| {
                let (old, new) = (change.old.as_deref(), change.new.as_deref());
                let mut keys: Vec<ObjectKey> = core::jobs_to_wake(old, new)
                    .iter()
                    .map(|o| {
                        ObjectKey::new(
                            o.namespace.clone().unwrap_or_default(),
                            o.name.clone().unwrap_or_default(),
                        )
                    })
                    .collect();
                if appeared_or_relabelled(old, new) {
                    keys.extend(
                        jobs.all()
                            .iter()
                            .filter(|j| {
                                j.status.as_ref().is_none_or(|s| s.completion_time.is_none())
                            })
                            .map(|j| ObjectKey::of(j.as_ref())),
                    );
                }
                keys
            }),
        ]
    }

    fn keys(&self) -> Vec<ObjectKey> {
        self.jobs.all().iter().map(|j| ObjectKey::of(j.as_ref())).collect()
    }

    fn reconcile<'a>(
        &'a self,
        key: &'a ObjectKey,
    ) -> BoxFuture<'a, Result<Option<Duration>, ReconcileError>> {
        Box::pin(self.reconcile_job(key))
    }
}

/// What a pod event tells the podSelector jobs, when there is a pod.
fn placement<'a>(
    pod: Option<&'a CachedPod>,
    node: Option<&'a str>,
    no_labels: &'a BTreeMap<String, String>,
) -> Option<core::PodPlacement<'a>> {
    let (pod, node) = pod.zip(node)?;
    Some(core::PodPlacement {
        labels: pod.metadata.labels.as_ref().unwrap_or(no_labels),
        node,
        deleting: pod.metadata.deletion_timestamp.is_some(),
    })
}

/// The ImagePullJob controller's registration.
pub fn image_pull_job_registration() -> Registration {
    Registration { info: ImagePullJobController::INFO, build: ImagePullJobController::build }
}

// ---------------------------------------------------------------------------------------------
// ImageListPullJob

/// The ImageListPullJob controller.
pub struct ImageListPullJobController {
    context: ControllerContext,
    lists: Cache<ImageListPullJob>,
    jobs: Cache<ImagePullJob>,
    /// Children created but not yet seen in the cache: list job UID -> image -> when.
    creating: Mutex<HashMap<String, HashMap<String, Instant>>>,
}

impl ImageListPullJobController {
    const INFO: ControllerInfo = ControllerInfo::new(
        IMAGE_LIST_PULL_JOB_CONTROLLER,
        "imagelistpulljob-workers",
        served("imagelistpulljobs"),
    )
    .with_gates(&["KruiseDaemon", "ImagePullJobGate"]);

    fn build(context: ControllerContext) -> Arc<dyn Reconciler> {
        Arc::new(Self {
            lists: context.caches.get(),
            jobs: context.caches.get(),
            creating: Mutex::default(),
            context,
        })
    }

    async fn reconcile_list(&self, key: &ObjectKey) -> Result<Option<Duration>, ReconcileError> {
        let Some(list) = self.lists.get(key) else {
            return Ok(None);
        };
        let uid = list.uid().unwrap_or_default();
        if list.metadata.deletion_timestamp.is_some() {
            self.creating.lock().unwrap_or_else(|p| p.into_inner()).remove(&uid);
            return Ok(None);
        }
        let children: Vec<ImagePullJob> =
            self.jobs.controlled_by(&uid).iter().map(|j| (**j).clone()).collect();
        let plan = core::plan_list_job(&list, &children, jiff::Timestamp::now());
        let mut waiting = false;
        let mut create = Vec::new();
        {
            let mut creating = self.creating.lock().unwrap_or_else(|p| p.into_inner());
            let entry = creating.entry(uid.clone()).or_default();
            entry.retain(|_, at| at.elapsed() < CREATE_EXPECTATION);
            for child in &plan.create {
                let image = child.spec.image.clone();
                // A child of this image in the cache (even an outdated one being replaced)
                // means the last creation was seen.
                if children
                    .iter()
                    .any(|c| c.spec.image == image && !plan.delete.contains(&c.name_any()))
                {
                    entry.remove(&image);
                }
                if entry.contains_key(&image) {
                    waiting = true;
                    continue;
                }
                // Expected before it is sent: a creation that fails is held back until the
                // expectation expires, never sent twice.
                entry.insert(image, Instant::now());
                create.push(child);
            }
        }
        let writes = plan.to_plan(&list, &create);
        let owner = PlanOwner::of(list.as_ref(), serde_json::Value::Null);
        self.context.applier.apply(&owner, &writes, None, jiff::Timestamp::now()).await?;
        if plan.delete_self {
            return Ok(None);
        }
        let mut requeue = to_duration(plan.requeue_after);
        if waiting {
            requeue =
                Some(requeue.map_or(Duration::from_secs(5), |r| r.min(Duration::from_secs(5))));
        }
        Ok(requeue)
    }
}

impl Reconciler for ImageListPullJobController {
    fn watches(&self) -> Vec<Watch> {
        vec![
            Watch::own(&self.lists),
            Watch::new(&self.jobs, KeyMapping::Owner, |change| {
                let mut keys = Vec::new();
                for job in [change.old.as_deref(), change.new.as_deref()].into_iter().flatten() {
                    for owner in job.owner_references() {
                        if owner.controller == Some(true) && owner.kind == "ImageListPullJob" {
                            keys.push(ObjectKey::new(
                                job.namespace().unwrap_or_default(),
                                owner.name.clone(),
                            ));
                        }
                    }
                }
                keys.dedup();
                keys
            }),
        ]
    }

    fn keys(&self) -> Vec<ObjectKey> {
        self.lists.all().iter().map(|j| ObjectKey::of(j.as_ref())).collect()
    }

    fn reconcile<'a>(
        &'a self,
        key: &'a ObjectKey,
    ) -> BoxFuture<'a, Result<Option<Duration>, ReconcileError>> {
        Box::pin(self.reconcile_list(key))
    }
}

/// The ImageListPullJob controller's registration.
pub fn image_list_pull_job_registration() -> Registration {
    Registration {
        info: ImageListPullJobController::INFO,
        build: ImageListPullJobController::build,
    }
}
