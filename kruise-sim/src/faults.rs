//! Fault injection for tests: make chosen requests fail (409, 429 with `Retry-After`, 500),
//! slow them down, end watch streams, and (with [`crate::store::Store::compact`]) force
//! `410 Gone` on resumed watches. [`Faults::inject`] returns a [`FaultHits`] that counts the
//! requests the fault acted on, so a test can show that its fault fired.
//!
//! ```
//! use kruise_sim::faults::{Fault, FaultAction};
//! let f = Fault::new(FaultAction::TooManyRequests { retry_after_seconds: 1 })
//!     .verb("list")
//!     .resource("pods")
//!     .times(2);
//! # let _ = f;
//! ```

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::sync::broadcast;

/// What an injected fault does to a matching request.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum FaultAction {
    /// 409 Conflict, the stale-resourceVersion message.
    Conflict,
    /// 429 TooManyRequests with a `Retry-After` header.
    TooManyRequests {
        /// The `Retry-After` seconds.
        retry_after_seconds: u64,
    },
    /// 500 InternalError.
    InternalError,
    /// Answer normally, after this delay.
    Latency(Duration),
    /// For watches: end the stream after this many events (0: right away).
    DropWatch {
        /// Events sent before the stream ends.
        after_events: usize,
    },
}

/// A rule: which requests, how many times, and what happens.
#[derive(Clone, Debug)]
pub struct Fault {
    verb: Option<String>,
    resource: Option<String>,
    name: Option<String>,
    namespace: Option<String>,
    remaining: Option<usize>,
    action: FaultAction,
    hits: Arc<AtomicUsize>,
}

/// How many requests an injected fault has acted on so far (see [`Faults::inject`]): a test
/// that injects a fault checks that it fired.
#[derive(Clone, Debug, Default)]
pub struct FaultHits(Arc<AtomicUsize>);

impl FaultHits {
    /// The requests the fault has acted on.
    pub fn count(&self) -> usize {
        self.0.load(Ordering::SeqCst)
    }
}

impl Fault {
    /// A fault for every request, until limited by the builder methods.
    pub fn new(action: FaultAction) -> Self {
        Fault {
            verb: None,
            resource: None,
            name: None,
            namespace: None,
            remaining: None,
            action,
            hits: Arc::default(),
        }
    }

    /// Only this verb: `get`, `list`, `watch`, `create`, `update`, `patch`, `delete`,
    /// `deletecollection`.
    pub fn verb(mut self, verb: &str) -> Self {
        self.verb = Some(verb.to_string());
        self
    }

    /// Only this resource (plural), or `plural/subresource`.
    pub fn resource(mut self, resource: &str) -> Self {
        self.resource = Some(resource.to_string());
        self
    }

    /// Only the object of this name.
    pub fn name(mut self, name: &str) -> Self {
        self.name = Some(name.to_string());
        self
    }

    /// Only in this namespace.
    pub fn namespace(mut self, ns: &str) -> Self {
        self.namespace = Some(ns.to_string());
        self
    }

    /// Only the next `n` matching requests.
    pub fn times(mut self, n: usize) -> Self {
        self.remaining = Some(n);
        self
    }
}

/// A request, as faults match it.
pub(crate) struct RequestInfo<'a> {
    pub verb: &'a str,
    pub resource: &'a str,
    pub sub: Option<&'a str>,
    pub name: Option<&'a str>,
    pub namespace: Option<&'a str>,
}

/// The injected faults of a server.
#[derive(Debug)]
pub struct Faults {
    rules: Mutex<Vec<Fault>>,
    drop_tx: broadcast::Sender<()>,
    expired: AtomicUsize,
}

impl Default for Faults {
    fn default() -> Self {
        let (drop_tx, _) = broadcast::channel(4);
        Faults { rules: Mutex::new(Vec::new()), drop_tx, expired: AtomicUsize::new(0) }
    }
}

impl Faults {
    /// Adds a fault. The handle counts the requests it acts on, also after it is used up or
    /// cleared.
    pub fn inject(&self, fault: Fault) -> FaultHits {
        let hits = FaultHits(fault.hits.clone());
        self.rules.lock().unwrap_or_else(|e| e.into_inner()).push(fault);
        hits
    }

    /// Delays every write (create, update, patch, delete, deletecollection) by `latency`,
    /// as a server in front of etcd takes a few milliseconds per write. Writes wait
    /// concurrently; reads and watches are not delayed.
    pub fn slow_writes(&self, latency: Duration) {
        for verb in ["create", "update", "patch", "delete", "deletecollection"] {
            let _ = self.inject(Fault::new(FaultAction::Latency(latency)).verb(verb));
        }
    }

    /// Removes every fault.
    pub fn clear(&self) {
        self.rules.lock().unwrap_or_else(|e| e.into_inner()).clear();
    }

    /// Ends every open watch stream now (clients see the connection's body end). No event
    /// written after this returns reaches a watch that had started (read its history or
    /// snapshot) before the call: such a watch's client must reconnect to see it.
    pub fn drop_watches(&self) {
        let _ = self.drop_tx.send(());
    }

    /// How many watches this server has answered `410 Gone` (a resourceVersion older than
    /// the history it keeps, as after [`crate::ServerHandle::compact`]), so that a test forcing
    /// relists can show that they happened.
    pub fn watches_expired(&self) -> usize {
        self.expired.load(Ordering::SeqCst)
    }

    pub(crate) fn note_expired(&self) {
        self.expired.fetch_add(1, Ordering::SeqCst);
    }

    pub(crate) fn subscribe_drops(&self) -> broadcast::Receiver<()> {
        self.drop_tx.subscribe()
    }

    /// The actions of the faults matching a request (using up one of each's count).
    pub(crate) fn check(&self, r: &RequestInfo<'_>) -> Vec<FaultAction> {
        let mut rules = self.rules.lock().unwrap_or_else(|e| e.into_inner());
        if rules.is_empty() {
            return Vec::new();
        }
        let resource = match r.sub {
            Some(s) => format!("{}/{s}", r.resource),
            None => r.resource.to_string(),
        };
        let mut out = Vec::new();
        for f in rules.iter_mut() {
            let matches = f.verb.as_deref().is_none_or(|v| v == r.verb)
                && f.resource.as_deref().is_none_or(|x| x == resource)
                && f.name.as_deref().is_none_or(|n| Some(n) == r.name)
                && f.namespace.as_deref().is_none_or(|n| Some(n) == r.namespace)
                && f.remaining != Some(0);
            if matches {
                if let Some(n) = f.remaining.as_mut() {
                    *n -= 1;
                }
                f.hits.fetch_add(1, Ordering::SeqCst);
                out.push(f.action.clone());
            }
        }
        rules.retain(|f| f.remaining != Some(0));
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_and_matching() {
        let f = Faults::default();
        let hits =
            f.inject(Fault::new(FaultAction::InternalError).verb("get").resource("pods").times(1));
        let req = RequestInfo {
            verb: "get",
            resource: "pods",
            sub: None,
            name: Some("a"),
            namespace: Some("default"),
        };
        let other = RequestInfo { verb: "list", name: None, ..req };
        assert!(f.check(&other).is_empty());
        let req = RequestInfo { verb: "get", name: Some("a"), ..other };
        assert_eq!(hits.count(), 0);
        assert_eq!(f.check(&req), vec![FaultAction::InternalError]);
        assert!(f.check(&req).is_empty());
        assert_eq!(hits.count(), 1, "used up after one, counted once");
    }
}
