//! Writes to the cluster on a controller's behalf: every write is gated on leadership, and
//! every failure is classified so the controller knows whether to retry, requeue or give up
//! on one object while the others go on.

use std::time::Duration;

use k8s_openapi::api::core::v1::ObjectReference;
use kube::runtime::events::{Event as KubeEvent, EventType as KubeEventType, Recorder, Reporter};

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

/// Shared write context: the leadership gate and the Event recorder.
#[derive(Clone)]
pub struct Applier {
    client: kube::Client,
    leader: LeaderHandle,
    recorder: Recorder,
    /// How many independent writes of one kind run at once.
    pub concurrency: usize,
    /// Bound on each write.
    pub timeout: Duration,
}

impl Applier {
    /// An applier writing with `client` while `leader` says so, recording Events as
    /// `controller`.
    pub fn new(client: kube::Client, leader: LeaderHandle, controller: &str) -> Self {
        let reporter = Reporter {
            controller: controller.to_owned(),
            instance: std::env::var("POD_NAME").ok(),
        };
        Self {
            recorder: Recorder::new(client.clone(), reporter),
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
        let event = KubeEvent {
            type_: if warning { KubeEventType::Warning } else { KubeEventType::Normal },
            reason: reason.to_owned(),
            note: Some(note),
            action: action.to_owned(),
            secondary: None,
        };
        if let Err(err) = self.recorder.publish(&event, regarding).await {
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
        assert!(matches!(ApplyError::from_kube(api_error(404, "NotFound")), ApplyError::NotFound(_)));
        assert!(matches!(ApplyError::from_kube(api_error(422, "Invalid")), ApplyError::Invalid(_)));
        let server = ApplyError::from_kube(api_error(500, "InternalError"));
        assert!(matches!(server, ApplyError::Server { code: 500, .. }));
        assert!(server.is_transient());
        assert!(!ApplyError::from_kube(api_error(422, "Invalid")).is_transient());
    }
}
