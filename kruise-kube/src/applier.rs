//! Writes to the cluster on a controller's behalf: every write is gated on leadership, and
//! every failure is classified so the controller knows whether to retry, requeue or give up
//! on one object while the others go on.

use std::time::Duration;

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use k8s_openapi::api::core::v1::{Event as CoreEvent, EventSource, ObjectReference};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{MicroTime, ObjectMeta, Time};
use kube::Api;
use kube::api::{Patch, PatchParams, PostParams};

use crate::leader::LeaderHandle;

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
    /// The request did not get an answer (connection, TLS, timeout, decoding).
    #[error("request failed: {0}")]
    Transport(String),
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

/// Records core/v1 Events as client-go's recorder does (what `kubectl describe` and
/// `kubectl get events` show): the first occurrence creates an Event, repeats within ten
/// minutes bump its `count` and `lastTimestamp`.
#[derive(Clone)]
pub struct EventRecorder {
    client: kube::Client,
    component: String,
    host: Option<String>,
    /// Events recorded in the fold window, by what makes them the same Event.
    seen: Arc<Mutex<HashMap<EventKey, SeenEvent>>>,
}

/// (object uid, type, reason, message): repeats of one key fold into one Event.
type EventKey = (String, String, String, String);

#[derive(Clone)]
struct SeenEvent {
    name: String,
    count: i32,
    first: jiff::Timestamp,
}

/// How long repeats are folded into one Event (client-go's correlator keeps ten minutes).
const EVENT_FOLD_WINDOW: jiff::SignedDuration = jiff::SignedDuration::from_mins(10);

impl EventRecorder {
    /// A recorder reporting as `component` (for example `cloneset-controller`).
    pub fn new(client: kube::Client, component: &str) -> Self {
        Self {
            client,
            component: component.to_owned(),
            host: std::env::var("NODE_NAME").ok(),
            seen: Arc::default(),
        }
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
        let key = (
            regarding.uid.clone().unwrap_or_default(),
            type_.to_owned(),
            reason.to_owned(),
            note.to_owned(),
        );
        let now = jiff::Timestamp::now();
        let api: Api<CoreEvent> = Api::namespaced(self.client.clone(), &namespace);
        let previous = {
            let mut seen = self.seen.lock().unwrap_or_else(|p| p.into_inner());
            seen.retain(|_, e| now.duration_since(e.first) < EVENT_FOLD_WINDOW);
            seen.get(&key).cloned()
        };
        if let Some(previous) = previous {
            let count = previous.count + 1;
            let patch = serde_json::json!({"count": count, "lastTimestamp": Time(now)});
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
        let event = CoreEvent {
            metadata: ObjectMeta {
                name: Some(name.clone()),
                namespace: Some(namespace),
                ..Default::default()
            },
            involved_object: regarding.clone(),
            reason: Some(reason.to_owned()),
            message: Some(note.to_owned()),
            type_: Some(type_.to_owned()),
            action: Some(action.to_owned()),
            count: Some(1),
            first_timestamp: Some(Time(now)),
            last_timestamp: Some(Time(now)),
            event_time: None::<MicroTime>,
            source: Some(EventSource {
                component: Some(self.component.clone()),
                host: self.host.clone(),
            }),
            reporting_component: Some(self.component.clone()),
            reporting_instance: Some(self.host.clone().unwrap_or_else(|| self.component.clone())),
            ..Default::default()
        };
        api.create(&PostParams::default(), &event).await?;
        let mut seen = self.seen.lock().unwrap_or_else(|p| p.into_inner());
        seen.insert(key, SeenEvent { name, count: 1, first: now });
        Ok(())
    }
}

/// Shared write context: the leadership gate and the Event recorder.
#[derive(Clone)]
pub struct Applier {
    client: kube::Client,
    leader: LeaderHandle,
    recorder: EventRecorder,
    /// How many independent writes of one kind run at once.
    pub concurrency: usize,
    /// Bound on each write.
    pub timeout: Duration,
}

impl Applier {
    /// An applier writing with `client` while `leader` says so, recording Events as
    /// `controller`.
    pub fn new(client: kube::Client, leader: LeaderHandle, controller: &str) -> Self {
        Self {
            recorder: EventRecorder::new(client.clone(), controller),
            client,
            leader,
            concurrency: 32,
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

    /// Records an Event about `regarding` (best effort: a failure is logged, not returned).
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
        if let Err(err) = self.recorder.record(regarding, warning, reason, action, &note).await {
            tracing::debug!(reason, error = %err, "recording an Event failed");
        }
    }
}

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
}
