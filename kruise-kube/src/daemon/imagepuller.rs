//! The imagepuller (upstream `pkg/daemon/imagepuller`).
//!
//! It watches its node's NodeImage (`metadata.name=<node>`) and keeps the daemon's memory of
//! every pull ([`PullerState`]). Each pass runs [`plan_pulls`]: it cancels pulls the spec no
//! longer wants, starts new ones (at most `--max-workers-for-pull-image` at once, each with
//! its deadline), and writes the NodeImage status when it changes. A finished pull is recorded
//! with [`record_outcome`] and planned again at once. Credentials come from the pull secrets
//! the NodeImage entry references (the job's copies in `kruise-daemon-config`, or the job's own
//! namespace), tried in turn, then anonymously. Events go out with reporter
//! `kruise-daemon-imagepuller` on the NodeImage and on the tag's owners (the jobs).

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use jiff::Timestamp;
use k8s_openapi::api::core::v1::{ObjectReference, Secret};
use kruise_api::apps::v1beta1::{NodeImage, ReferenceObject};
use kruise_core::imagepull::{
    PullOutcome, PullTask, PullerLimits, PullerState, plan_pulls, record_outcome,
};
use kruise_cri::{ContainerRuntime, PullSandboxConfig};
use kube::api::{Patch, PatchParams};
use kube::runtime::watcher;
use kube::{Api, Resource};
use tokio::sync::{Notify, mpsc};
use tokio::time::Instant;

use super::credentials::credentials_for;
use super::keyring::NodeKeyring;
use super::{DaemonConfig, IMAGEPULLER_REPORTER};
use crate::applier::EventSink;
use crate::cache::{Cache, ObjectKey};

/// Reason of the Event for a pulled tag (upstream's).
pub const PULL_SUCCEEDED_REASON: &str = "PullImageSucceed";
/// Reason of the Event for a failed pull attempt (upstream's).
pub const PULL_FAILED_REASON: &str = "PullImageFailed";
/// How soon a failed status write is tried again.
const STATUS_RETRY: Duration = Duration::from_secs(1);

/// The imagepuller of one node.
#[derive(Clone)]
pub struct ImagePuller {
    cache: Cache<NodeImage>,
}

impl std::fmt::Debug for ImagePuller {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ImagePuller").finish_non_exhaustive()
    }
}

/// A finished pull attempt.
struct Finished {
    image: String,
    tag: String,
    version: i64,
    outcome: PullOutcome,
}

impl ImagePuller {
    /// Starts the NodeImage watch and the puller loop on `tasks`.
    pub fn start(
        client: kube::Client,
        runtime: Arc<dyn ContainerRuntime>,
        config: &DaemonConfig,
        tasks: &mut tokio::task::JoinSet<()>,
    ) -> Self {
        let cache = Cache::<NodeImage>::new();
        let wake = Arc::new(Notify::new());
        {
            let wake = wake.clone();
            cache.subscribe(Arc::new(move |_| wake.notify_one()));
        }
        let api = Api::<NodeImage>::all(client.clone());
        let watch = watcher::Config::default()
            .fields(&format!("metadata.name={}", config.node_name))
            .any_semantic();
        tasks.spawn(cache.clone().run(api, watch, crate::cache::strip_managed_fields));
        let node = config.node_name.clone();
        let limits = config.pull_limits.clone();
        let for_loop = cache.clone();
        let keyring = config.keyring.clone();
        tasks.spawn(async move {
            puller_loop(client, runtime, keyring, node, limits, for_loop, wake).await;
        });
        ImagePuller { cache }
    }

    /// The NodeImage's cache.
    pub fn cache(&self) -> &Cache<NodeImage> {
        &self.cache
    }
}

async fn puller_loop(
    client: kube::Client,
    runtime: Arc<dyn ContainerRuntime>,
    keyring: Arc<NodeKeyring>,
    node: String,
    limits: PullerLimits,
    cache: Cache<NodeImage>,
    wake: Arc<Notify>,
) {
    let events = EventSink::start(client.clone(), IMAGEPULLER_REPORTER, None);
    let api = Api::<NodeImage>::all(client.clone());
    let (done_tx, mut done_rx) = mpsc::unbounded_channel::<Finished>();
    let mut state = PullerState::new();
    let mut running: HashMap<String, tokio::task::AbortHandle> = HashMap::new();
    let key = ObjectKey::new("", node.clone());
    cache.wait_synced().await;
    loop {
        let mut next: Option<Duration> = None;
        match cache.get(&key) {
            None => {
                for (_, handle) in running.drain() {
                    handle.abort();
                }
                state.clear();
            }
            Some(ni) => {
                let images = if needs_runtime_images(&ni, &state) {
                    match runtime.list_images(None).await {
                        Ok(list) => list
                            .into_iter()
                            .flat_map(|i| i.repo_tags.into_iter().chain(i.repo_digests))
                            .collect(),
                        Err(err) => {
                            tracing::warn!(error = %err, "listing images failed");
                            Vec::new()
                        }
                    }
                } else {
                    Vec::new()
                };
                let plan = plan_pulls(&ni, &images, &state, &limits, Timestamp::now());
                for cancelled in &plan.cancel {
                    if let Some(handle) = running.remove(cancelled) {
                        tracing::info!(image = %cancelled, "pull cancelled");
                        handle.abort();
                    }
                }
                for task in plan.start {
                    let key = format!("{}:{}", task.image, task.tag);
                    tracing::info!(image = %key, attempt = task.attempt, "pulling");
                    let handle = tokio::spawn(pull(
                        client.clone(),
                        runtime.clone(),
                        keyring.clone(),
                        task,
                        done_tx.clone(),
                    ));
                    if let Some(old) = running.insert(key, handle.abort_handle()) {
                        old.abort();
                    }
                }
                state = plan.state;
                next = plan.requeue_after.and_then(|d| Duration::try_from(d).ok());
                let current = ni.status.clone().unwrap_or_default();
                if plan.status != current {
                    let body = crate::applier::status_patch(Some(&current), &plan.status);
                    let written = api
                        .patch_status(&node, &PatchParams::default(), &Patch::Merge(&body))
                        .await;
                    if let Err(err) = written {
                        tracing::warn!(error = %err, "writing the NodeImage status failed");
                        next = Some(next.map_or(STATUS_RETRY, |n| n.min(STATUS_RETRY)));
                    }
                }
            }
        }
        let deadline = next.map(|d| Instant::now() + d);
        tokio::select! {
            () = wake.notified() => {}
            Some(first) = done_rx.recv() => {
                let mut finished = vec![first];
                while let Ok(more) = done_rx.try_recv() {
                    finished.push(more);
                }
                let ni = cache.get(&key);
                for f in finished {
                    let key = format!("{}:{}", f.image, f.tag);
                    running.remove(&key);
                    if let Some(ni) = &ni {
                        report(&events, ni, &f);
                    }
                    record_outcome(&mut state, &key, f.version, f.outcome, Timestamp::now());
                }
            }
            () = sleep_until(deadline) => {}
        }
    }
}

async fn sleep_until(deadline: Option<Instant>) {
    match deadline {
        Some(at) => tokio::time::sleep_until(at).await,
        None => std::future::pending().await,
    }
}

/// Whether a tag has no work yet (only then does the plan read the runtime's images).
fn needs_runtime_images(ni: &NodeImage, state: &PullerState) -> bool {
    ni.spec.images.iter().any(|(image, spec)| {
        spec.tags.iter().any(|t| {
            state.get(&format!("{image}:{}", t.tag)).is_none_or(|w| w.version != t.version)
        })
    })
}

/// The reference to pull: `image:tag`, or `image@digest`.
pub fn image_reference(image: &str, tag: &str) -> String {
    if tag.contains(':') { format!("{image}@{tag}") } else { format!("{image}:{tag}") }
}

async fn pull(
    client: kube::Client,
    runtime: Arc<dyn ContainerRuntime>,
    keyring: Arc<NodeKeyring>,
    task: PullTask,
    done: mpsc::UnboundedSender<Finished>,
) {
    let reference = image_reference(&task.image, &task.tag);
    let timeout = Duration::try_from(task.timeout).unwrap_or(Duration::ZERO);
    let attempt = async {
        let secrets = read_secrets(&client, &task.secrets).await;
        // The pull secrets first, then the node's own (docker keyring, plugins).
        let mut auths = credentials_for(&reference, &secrets);
        auths.extend(keyring.credentials_for(&reference).await);
        let sandbox = task.sandbox_config.as_ref().map(|s| PullSandboxConfig {
            labels: s.labels.clone(),
            annotations: s.annotations.clone(),
        });
        let mut last = None;
        for auth in auths {
            match runtime.pull_image(&reference, Some(auth), sandbox.clone()).await {
                Ok(image_ref) => return Ok(image_ref),
                Err(err) => last = Some(err),
            }
        }
        runtime.pull_image(&reference, None, sandbox).await.map_err(|err| last.unwrap_or(err))
    };
    let outcome = match tokio::time::timeout(timeout, attempt).await {
        Ok(Ok(image_ref)) => PullOutcome::Succeeded(image_ref),
        Ok(Err(err)) => PullOutcome::Failed(err.to_string()),
        Err(_) => PullOutcome::Failed(format!(
            "pulling image {reference} timed out after {}s",
            timeout.as_secs()
        )),
    };
    let _ =
        done.send(Finished { image: task.image, tag: task.tag, version: task.version, outcome });
}

/// The referenced secrets that exist (a missing or unreadable one is skipped).
async fn read_secrets(client: &kube::Client, refs: &[ReferenceObject]) -> Vec<Secret> {
    let mut out = Vec::with_capacity(refs.len());
    for r in refs {
        let api = Api::<Secret>::namespaced(client.clone(), &r.namespace);
        match api.get_opt(&r.name).await {
            Ok(Some(secret)) => out.push(secret),
            Ok(None) => {
                tracing::warn!(secret = %format!("{}/{}", r.namespace, r.name), "pull secret not found")
            }
            Err(err) => {
                tracing::warn!(secret = %format!("{}/{}", r.namespace, r.name), error = %err, "reading pull secret failed")
            }
        }
    }
    out
}

/// Events for a finished attempt, on the NodeImage and on the tag's owners.
fn report(events: &EventSink, ni: &NodeImage, f: &Finished) {
    let (warning, reason, note) = match &f.outcome {
        PullOutcome::Succeeded(_) => {
            (false, PULL_SUCCEEDED_REASON, format!("Image {}:{} pulled", f.image, f.tag))
        }
        PullOutcome::Failed(err) => {
            (true, PULL_FAILED_REASON, format!("Image {}:{} {err}", f.image, f.tag))
        }
        _ => return,
    };
    let mut targets: Vec<ObjectReference> = vec![ni.object_ref(&())];
    if let Some(tag) = ni
        .spec
        .images
        .get(&f.image)
        .and_then(|s| s.tags.iter().find(|t| t.tag == f.tag && t.version == f.version))
    {
        targets.extend(tag.owner_references.iter().cloned());
    }
    for target in &targets {
        events.emit(target, warning, reason, "PullImage", note.clone());
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use kruise_api::apps::v1beta1::{ImageStatus, ImageTagStatus, NodeImageStatus};

    #[test]
    fn references_by_tag_and_digest() {
        assert_eq!(image_reference("nginx", "1.25"), "nginx:1.25");
        assert_eq!(image_reference("r:5000/a/b", "sha256:abc"), "r:5000/a/b@sha256:abc");
    }

    #[test]
    fn status_patch_removes_images_that_went_away() {
        let mut old = NodeImageStatus::default();
        old.image_statuses.insert(
            "gone".into(),
            ImageStatus { tags: vec![ImageTagStatus { tag: "1".into(), ..Default::default() }] },
        );
        let new = NodeImageStatus::default();
        let patch = crate::applier::status_patch(Some(&old), &new);
        assert_eq!(patch["status"]["imageStatuses"]["gone"], serde_json::Value::Null);
        assert_eq!(patch["status"]["desired"], 0);
    }
}
