//! Writes to the cluster on a controller's behalf: every write is gated on leadership, and
//! every failure is classified so the controller knows whether to retry, requeue or give up
//! on one object while the others go on.

use std::time::Duration;

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use k8s_openapi::api::core::v1::ObjectReference;
use k8s_openapi::api::events::v1::{Event, EventSeries};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{MicroTime, ObjectMeta};
use kube::api::{Patch, PatchParams, PostParams};
use kube::{Api, Resource};

use crate::leader::LeaderHandle;

mod plan;

pub use plan::{ActionOutcome, ExpectationsFor, PlanOwner, REPLAN_AFTER_CONFLICT};

/// The field manager and user-agent name of every write.
pub const FIELD_MANAGER: &str = "kruise-manager";

/// A failed write, classified.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ApplyError {
    /// The manager does not hold the leader lease; nothing was written.
    #[error("not the leader: write skipped")]
    NotLeader,
    /// 409 Conflict: the object changed since it was read. Requeue and read again.
    #[error("conflict: {0}")]
    Conflict(String),
    /// 404: the object is gone.
    #[error("not found: {0}")]
    NotFound(String),
    /// 409 AlreadyExists on create.
    #[error("already exists: {0}")]
    AlreadyExists(String),
    /// 422 or 400: the API server refused the body; retrying the same body will not help.
    #[error("invalid: {0}")]
    Invalid(String),
    /// 429 or 5xx: the server is overloaded or failing; retry with backoff.
    #[error("server error {code}: {message}")]
    Server {
        /// The HTTP status.
        code: u16,
        /// The server's message.
        message: String,
    },
    /// 403: the manager may not do this.
    #[error("forbidden: {0}")]
    Forbidden(String),
    /// 403 with cause `NamespaceTerminating`: a create in a namespace being deleted, which
    /// has nothing left to do (the ReplicaSet controller drops it quietly too).
    #[error("namespace terminating: {0}")]
    NamespaceTerminating(String),
    /// The request did not get an answer (connection, TLS, timeout, decoding).
    #[error("request failed: {0}")]
    Transport(String),
}

/// Whether a 403 says the namespace is being deleted: the cause kube-apiserver's
/// NamespaceLifecycle admission gives, or its message.
fn namespace_terminating(status: &kube::core::Status) -> bool {
    let cause = status
        .details
        .as_ref()
        .is_some_and(|d| d.causes.iter().any(|c| c.reason == "NamespaceTerminating"));
    cause || status.message.contains("because it is being terminated")
}

impl ApplyError {
    /// Classifies a kube client error.
    pub fn from_kube(err: kube::Error) -> Self {
        match err {
            kube::Error::Api(status) => {
                let message = status.message.clone();
                match (status.code, status.reason.as_str()) {
                    (409, "AlreadyExists") => Self::AlreadyExists(message),
                    (409, _) => Self::Conflict(message),
                    (404, _) => Self::NotFound(message),
                    (400 | 422, _) => Self::Invalid(message),
                    (403, _) if namespace_terminating(&status) => {
                        Self::NamespaceTerminating(message)
                    }
                    (403, _) => Self::Forbidden(message),
                    (code, _) => Self::Server { code, message },
                }
            }
            other => Self::Transport(other.to_string()),
        }
    }

    /// True for failures that a later attempt may not repeat (conflicts, overload, outages).
    pub fn is_transient(&self) -> bool {
        matches!(self, Self::Conflict(_) | Self::Server { .. } | Self::Transport(_))
    }
}

/// Records `events.k8s.io/v1` Events as client-go's events library does (the API server keeps
/// them in the same store as core/v1 Events, so `kubectl describe` and `kubectl get events`
/// show them too): the first occurrence creates an Event; repeats within the fold window turn
/// it into a series whose `count` and `lastObservedTime` follow.
#[derive(Clone)]
pub struct EventRecorder {
    client: kube::Client,
    controller: String,
    instance: String,
    /// Events recorded in the fold window, by what makes them the same Event.
    seen: Arc<Mutex<HashMap<EventKey, SeenEvent>>>,
}

/// (object uid, type, reason, action, note): repeats of one key fold into one Event.
type EventKey = (String, String, String, String, String);

#[derive(Clone)]
struct SeenEvent {
    name: String,
    count: i32,
    first: jiff::Timestamp,
}

/// How long repeats are folded into one Event (client-go's events library: six minutes).
const EVENT_FOLD_WINDOW: jiff::SignedDuration = jiff::SignedDuration::from_mins(6);
/// Most Events remembered for folding (client-go's cache holds 4,096).
const EVENT_CACHE_SIZE: usize = 4096;
/// Events queued for sending; more are dropped (client-go's broadcaster queues 1,000).
const EVENT_QUEUE: usize = 1000;
/// Per object, Events allowed in a burst, then one per [`EVENT_REFILL`] (client-go's spam
/// filter: 25, then one every five minutes).
const EVENT_BURST: f64 = 25.0;
/// See [`EVENT_BURST`].
const EVENT_REFILL: Duration = Duration::from_secs(300);
/// The API server refuses an `events.k8s.io/v1` note longer than this many bytes.
const NOTE_LIMIT: usize = 1024;

impl EventRecorder {
    /// A recorder reporting as `controller` (for example `cloneset-controller`); the
    /// reporting instance is `POD_NAME`, else `HOSTNAME`, else the controller's name.
    pub fn new(client: kube::Client, controller: &str) -> Self {
        let instance = ["POD_NAME", "HOSTNAME"]
            .iter()
            .find_map(|var| std::env::var(var).ok().filter(|v| !v.is_empty()))
            .unwrap_or_else(|| controller.to_owned());
        Self { client, controller: controller.to_owned(), instance, seen: Arc::default() }
    }

    /// Records one Event about `regarding`.
    pub async fn record(
        &self,
        regarding: &ObjectReference,
        warning: bool,
        reason: &str,
        action: &str,
        note: &str,
    ) -> Result<(), kube::Error> {
        let namespace = regarding.namespace.clone().unwrap_or_else(|| "default".to_owned());
        let type_ = if warning { "Warning" } else { "Normal" };
        let note = truncate_note(note);
        let key = (
            regarding.uid.clone().unwrap_or_default(),
            type_.to_owned(),
            reason.to_owned(),
            action.to_owned(),
            note.to_owned(),
        );
        let now = jiff::Timestamp::now();
        let api: Api<Event> = Api::namespaced(self.client.clone(), &namespace);
        let previous = {
            let mut seen = self.seen.lock().unwrap_or_else(|p| p.into_inner());
            seen.retain(|_, e| now.duration_since(e.first) < EVENT_FOLD_WINDOW);
            seen.get(&key).cloned()
        };
        if let Some(previous) = previous {
            let count = previous.count + 1;
            let series = EventSeries { count, last_observed_time: MicroTime(now) };
            let patch = serde_json::json!({ "series": series });
            let patched =
                api.patch(&previous.name, &PatchParams::default(), &Patch::Merge(&patch)).await;
            if patched.is_ok() {
                let mut seen = self.seen.lock().unwrap_or_else(|p| p.into_inner());
                seen.insert(key, SeenEvent { count, ..previous });
                return Ok(());
            }
        }
        let object_name = regarding.name.clone().unwrap_or_default();
        let name = format!("{object_name}.{:x}", now.as_nanosecond());
        let event = Event {
            metadata: ObjectMeta {
                name: Some(name.clone()),
                namespace: Some(namespace),
                ..Default::default()
            },
            event_time: Some(MicroTime(now)),
            regarding: Some(regarding.clone()),
            reason: Some(reason.to_owned()),
            action: Some(action.to_owned()),
            note: Some(note.to_owned()),
            type_: Some(type_.to_owned()),
            reporting_controller: Some(self.controller.clone()),
            reporting_instance: Some(self.instance.clone()),
            ..Default::default()
        };
        api.create(&PostParams::default(), &event).await?;
        let mut seen = self.seen.lock().unwrap_or_else(|p| p.into_inner());
        if seen.len() >= EVENT_CACHE_SIZE {
            // Forget the oldest half rather than grow without bound.
            let mut firsts: Vec<jiff::Timestamp> = seen.values().map(|e| e.first).collect();
            firsts.sort_unstable();
            let cutoff = firsts[firsts.len() / 2];
            seen.retain(|_, e| e.first > cutoff);
        }
        seen.insert(key, SeenEvent { name, count: 1, first: now });
        Ok(())
    }
}

/// `note` cut to the API server's limit, at a character boundary.
fn truncate_note(note: &str) -> &str {
    if note.len() <= NOTE_LIMIT {
        return note;
    }
    let mut end = NOTE_LIMIT;
    while !note.is_char_boundary(end) {
        end -= 1;
    }
    &note[..end]
}

/// One Event waiting to be sent.
struct QueuedEvent {
    regarding: ObjectReference,
    warning: bool,
    reason: String,
    action: String,
    note: String,
}

/// Client-go's spam filter: a token bucket per object.
#[derive(Default)]
struct SpamFilter {
    buckets: HashMap<String, (f64, tokio::time::Instant)>,
}

impl SpamFilter {
    /// Takes a token for the object `uid`; false when its Events are being dropped.
    fn allow(&mut self, uid: &str, now: tokio::time::Instant) -> bool {
        if self.buckets.len() >= EVENT_CACHE_SIZE {
            self.buckets.retain(|_, (tokens, last)| {
                *tokens < EVENT_BURST && now.duration_since(*last) < EVENT_REFILL * 25
            });
        }
        let (tokens, last) = self.buckets.entry(uid.to_owned()).or_insert((EVENT_BURST, now));
        let refill = now.duration_since(*last).as_secs_f64() / EVENT_REFILL.as_secs_f64();
        *tokens = (*tokens + refill).min(EVENT_BURST);
        *last = now;
        if *tokens >= 1.0 {
            *tokens -= 1.0;
            true
        } else {
            false
        }
    }
}

/// kube-controller-manager's `burstReplicas`: the largest batch of creations in flight.
pub const DEFAULT_CREATE_BURST: usize = 500;

/// What a write reads back from the server's answer: the resourceVersion, and nothing else
/// (the rest of the object is skipped, not decoded).
#[derive(serde::Deserialize)]
struct Written {
    #[serde(default)]
    metadata: WrittenMeta,
}

#[derive(Default, serde::Deserialize)]
struct WrittenMeta {
    #[serde(default, rename = "resourceVersion")]
    resource_version: Option<String>,
}

/// Where objects of kind `K` live in namespace `ns` (`""`: a cluster-scoped kind).
fn request_for<K: Resource<DynamicType = ()>>(ns: &str) -> kube::core::Request {
    kube::core::Request::new(K::url_path(&(), (!ns.is_empty()).then_some(ns)))
}

/// Shared write context: the leadership gate and the Event recorder.
#[derive(Clone)]
pub struct Applier {
    client: kube::Client,
    leader: LeaderHandle,
    /// Events go out in the background, so recording one never holds up a reconcile.
    events: EventSink,
    /// How many independent writes of one kind run at once (deletes, patches).
    pub concurrency: usize,
    /// The largest slow-start batch of creations: batches of 1, 2, 4, ... double up to this,
    /// every creation of a batch in flight at once (kube-controller-manager's
    /// `burstReplicas`, 500).
    pub create_burst: usize,
    /// Bound on each write.
    pub timeout: Duration,
}

impl Applier {
    /// An applier writing with `client` while `leader` says so, recording Events as
    /// `controller`.
    pub fn new(client: kube::Client, leader: LeaderHandle, controller: &str) -> Self {
        let events = EventSink::start(client.clone(), controller, Some(leader.clone()));
        Self {
            events,
            client,
            leader,
            concurrency: 32,
            create_burst: DEFAULT_CREATE_BURST,
            timeout: Duration::from_secs(30),
        }
    }

    /// The client writes go through.
    pub fn client(&self) -> &kube::Client {
        &self.client
    }

    /// True while writes are allowed.
    pub fn is_leader(&self) -> bool {
        self.leader.is_leader()
    }

    /// Runs one write if this manager leads, bounded by [`Applier::timeout`].
    pub async fn write<T>(
        &self,
        call: impl std::future::Future<Output = Result<T, kube::Error>>,
    ) -> Result<T, ApplyError> {
        if !self.leader.is_leader() {
            return Err(ApplyError::NotLeader);
        }
        match tokio::time::timeout(self.timeout, call).await {
            Ok(result) => result.map_err(ApplyError::from_kube),
            Err(_) => Err(ApplyError::Transport(format!("no answer within {:?}", self.timeout))),
        }
    }

    /// Sends a built request as [`Applier::write`] does, reading back only the written
    /// object's resourceVersion.
    async fn write_lean(
        &self,
        request: Result<http::Request<Vec<u8>>, kube::core::request::Error>,
    ) -> Result<Option<String>, ApplyError> {
        let request = request.map_err(|e| ApplyError::Invalid(e.to_string()))?;
        let written: Written = self.write(self.client.request(request)).await?;
        Ok(written.metadata.resource_version)
    }

    /// Creates `object` in `ns`; the created object's resourceVersion. Unlike
    /// [`Api::create`], the answer is not decoded beyond it, which matters when a
    /// scale-out creates hundreds of pods at once.
    ///
    /// The request is encoded when this is called, and the future holds only its bytes: a
    /// caller may free `object` before awaiting (a slow-start batch of 500 creations then
    /// keeps 500 request bodies alive, not 500 pods as well).
    pub fn create<'a, K>(
        &'a self,
        ns: &str,
        object: &K,
        params: &PostParams,
    ) -> impl std::future::Future<Output = Result<Option<String>, ApplyError>> + use<'a, K>
    where
        K: Resource<DynamicType = ()> + serde::Serialize,
    {
        let request = serde_json::to_vec(object)
            .map_err(|e| ApplyError::Invalid(e.to_string()))
            .map(|body| request_for::<K>(ns).create(params, body));
        async move {
            match request {
                Ok(request) => self.write_lean(request).await,
                Err(e) => Err(e),
            }
        }
    }

    /// Patches `name` (or its `subresource`) in `ns`; the patched object's resourceVersion.
    pub async fn patch<K, P>(
        &self,
        ns: &str,
        name: &str,
        subresource: Option<&str>,
        params: &PatchParams,
        patch: &Patch<P>,
    ) -> Result<Option<String>, ApplyError>
    where
        K: Resource<DynamicType = ()>,
        P: serde::Serialize + std::fmt::Debug,
    {
        let request = request_for::<K>(ns);
        let request = match subresource {
            Some(sub) => request.patch_subresource(sub, name, params, patch),
            None => request.patch(name, params, patch),
        };
        self.write_lean(request).await
    }

    /// Reads `name` in `ns` from the server, not a cache, gated and bounded as writes are:
    /// for the read a write's answer calls for (what stands under a name that already exists,
    /// a fresh look at an owner before adopting for it).
    ///
    /// # Errors
    /// The server's answer, classified ([`ApplyError::NotFound`] when there is none).
    pub async fn get<K>(&self, ns: &str, name: &str) -> Result<K, ApplyError>
    where
        K: Resource<DynamicType = ()> + serde::de::DeserializeOwned,
    {
        let request = request_for::<K>(ns)
            .get(name, &Default::default())
            .map_err(|e| ApplyError::Invalid(e.to_string()))?;
        self.write(self.client.request::<K>(request)).await
    }

    /// As [`Applier::get`], `None` when there is no such object.
    ///
    /// # Errors
    /// The server's answer, classified.
    pub async fn get_opt<K>(&self, ns: &str, name: &str) -> Result<Option<K>, ApplyError>
    where
        K: Resource<DynamicType = ()> + serde::de::DeserializeOwned,
    {
        match self.get(ns, name).await {
            Ok(object) => Ok(Some(object)),
            Err(ApplyError::NotFound(_)) => Ok(None),
            Err(err) => Err(err),
        }
    }

    /// Lists every `K` in `ns` from the server, not a cache, gated and bounded as writes are:
    /// for the few objects the manager caches nothing of (pull secret copies).
    ///
    /// # Errors
    /// The server's answer, classified.
    pub async fn list<K>(&self, ns: &str) -> Result<Vec<K>, ApplyError>
    where
        K: Resource<DynamicType = ()> + serde::de::DeserializeOwned + Clone,
    {
        let request = request_for::<K>(ns)
            .list(&Default::default())
            .map_err(|e| ApplyError::Invalid(e.to_string()))?;
        let list: kube::core::ObjectList<K> = self.write(self.client.request(request)).await?;
        Ok(list.items)
    }

    /// Deletes `name` in `ns`.
    pub async fn delete<K>(
        &self,
        ns: &str,
        name: &str,
        params: &kube::api::DeleteParams,
    ) -> Result<(), ApplyError>
    where
        K: Resource<DynamicType = ()>,
    {
        self.write_lean(request_for::<K>(ns).delete(name, params)).await.map(|_| ())
    }

    /// Records an Event about `regarding`, in the background and best effort: when the queue
    /// is full, or the object has had more than its share of Events lately (client-go's spam
    /// filter), the Event is dropped.
    pub async fn event(
        &self,
        regarding: &ObjectReference,
        warning: bool,
        reason: &str,
        action: &str,
        note: String,
    ) {
        if !self.leader.is_leader() {
            return;
        }
        self.events.emit(regarding, warning, reason, action, note);
    }
}

/// Records Events in the background through one task, best effort, as client-go's
/// broadcaster does: a bounded queue (a full one drops the Event) and the spam filter per
/// object. Cheap to clone; clones share the queue and the filter.
#[derive(Clone)]
pub struct EventSink {
    events: tokio::sync::mpsc::Sender<QueuedEvent>,
    spam: Arc<Mutex<SpamFilter>>,
}

impl std::fmt::Debug for EventSink {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("EventSink").finish_non_exhaustive()
    }
}

impl EventSink {
    /// Starts the sending task on the current runtime, reporting as `controller`; with
    /// `leader`, Events are sent only while this process leads.
    pub fn start(client: kube::Client, controller: &str, leader: Option<LeaderHandle>) -> Self {
        let recorder = EventRecorder::new(client, controller);
        let (events, mut queue) = tokio::sync::mpsc::channel::<QueuedEvent>(EVENT_QUEUE);
        tokio::spawn(async move {
            while let Some(e) = queue.recv().await {
                if leader.as_ref().is_some_and(|l| !l.is_leader()) {
                    continue;
                }
                let sent =
                    recorder.record(&e.regarding, e.warning, &e.reason, &e.action, &e.note).await;
                if let Err(err) = sent {
                    tracing::debug!(reason = %e.reason, error = %err, "recording an Event failed");
                }
            }
        });
        Self { events, spam: Arc::default() }
    }

    /// Queues an Event about `regarding`, unless the spam filter or a full queue drops it.
    pub fn emit(
        &self,
        regarding: &ObjectReference,
        warning: bool,
        reason: &str,
        action: &str,
        note: String,
    ) {
        let uid = regarding.uid.clone().unwrap_or_default();
        let allowed = self
            .spam
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .allow(&uid, tokio::time::Instant::now());
        if !allowed {
            tracing::debug!(reason, "Event dropped by the spam filter");
            return;
        }
        let queued = QueuedEvent {
            regarding: regarding.clone(),
            warning,
            reason: reason.to_owned(),
            action: action.to_owned(),
            note,
        };
        if self.events.try_send(queued).is_err() {
            tracing::debug!(reason, "Event queue full; Event dropped");
        }
    }
}

/// `{"status": ...}` as a JSON merge patch writing the status `new` over the cached `old`
/// (kruise-core's, shared with the planners).
pub(crate) use kruise_core::merge_patch::status_patch;

#[cfg(test)]
mod tests {
    use super::*;

    fn api_error(code: u16, reason: &str) -> kube::Error {
        kube::Error::Api(Box::new(kube::core::Status {
            code,
            reason: reason.into(),
            message: "m".into(),
            ..Default::default()
        }))
    }

    #[test]
    fn notes_are_cut_to_the_servers_limit_at_a_character_boundary() {
        assert_eq!(truncate_note("short"), "short");
        let long = "é".repeat(600); // 1,200 bytes, two per character
        let cut = truncate_note(&long);
        assert_eq!(cut.len(), NOTE_LIMIT);
        assert!(long.starts_with(cut));
        let odd = format!("a{long}"); // the limit falls inside a character
        assert_eq!(truncate_note(&odd).len(), NOTE_LIMIT - 1);
    }

    #[test]
    fn spam_filter_allows_a_burst_then_one_per_refill() {
        let mut filter = SpamFilter::default();
        let start = tokio::time::Instant::now();
        let allowed = (0..40).filter(|_| filter.allow("uid", start)).count();
        assert_eq!(allowed, 25);
        assert!(filter.allow("other", start), "objects have their own budgets");
        assert!(!filter.allow("uid", start + EVENT_REFILL / 2));
        assert!(filter.allow("uid", start + EVENT_REFILL));
    }

    #[test]
    fn classifies_api_errors() {
        assert!(matches!(
            ApplyError::from_kube(api_error(409, "AlreadyExists")),
            ApplyError::AlreadyExists(_)
        ));
        assert!(matches!(
            ApplyError::from_kube(api_error(409, "Conflict")),
            ApplyError::Conflict(_)
        ));
        assert!(matches!(
            ApplyError::from_kube(api_error(404, "NotFound")),
            ApplyError::NotFound(_)
        ));
        assert!(matches!(ApplyError::from_kube(api_error(422, "Invalid")), ApplyError::Invalid(_)));
        let server = ApplyError::from_kube(api_error(500, "InternalError"));
        assert!(matches!(server, ApplyError::Server { code: 500, .. }));
        assert!(server.is_transient());
        assert!(!ApplyError::from_kube(api_error(422, "Invalid")).is_transient());
    }

    #[test]
    fn status_patch_clears_dropped_fields() {
        #[derive(serde::Serialize)]
        struct Status {
            replicas: i32,
            #[serde(skip_serializing_if = "Option::is_none")]
            ready_replicas: Option<i32>,
            #[serde(skip_serializing_if = "Vec::is_empty")]
            conditions: Vec<String>,
        }
        let old = Status { replicas: 3, ready_replicas: Some(2), conditions: vec!["A".into()] };
        let new = Status { replicas: 4, ready_replicas: Some(2), conditions: vec![] };
        assert_eq!(
            status_patch(Some(&old), &new),
            serde_json::json!({"status": {"replicas": 4, "ready_replicas": 2, "conditions": null}})
        );
        assert_eq!(
            status_patch(None, &new),
            serde_json::json!({"status": {"replicas": 4, "ready_replicas": 2}})
        );
    }
}
