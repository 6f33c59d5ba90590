//! Leader election on a `coordination.k8s.io/v1` Lease, compatible with client-go's
//! `leaderelection` package and its `LeaseLock`, so a Go kruise-manager and this one respect
//! each other's lease.
//!
//! The algorithm is client-go's:
//! - A candidate tries to acquire every `retry_period` (jittered by [`JITTER_FACTOR`]). A lease
//!   is free when its `holderIdentity` is empty, or when it has not changed for
//!   `leaseDurationSeconds` as measured by the LOCAL clock from the moment this elector last
//!   observed the record change (remote timestamps are never compared with local ones).
//! - Acquiring writes `holderIdentity`, `leaseDurationSeconds`, `acquireTime` and `renewTime`,
//!   and increments `leaseTransitions` when the holder changes. Every write is a replace that
//!   carries the Lease's `resourceVersion`, so two electors can never both win: the loser gets a
//!   409 and goes on waiting.
//! - The leader renews every `retry_period`. When a renewal round has not succeeded within
//!   `renew_deadline`, leadership is lost: `false` is published at once and the elector goes back
//!   to campaigning. (client-go ends the process there; we keep campaigning instead.)
//! - On shutdown with `release_on_cancel`, a leader writes an empty `holderIdentity` with
//!   `leaseDurationSeconds: 1`, so the next candidate takes over within a retry period.
//!
//! Differences from client-go, all on the safe side:
//! - a leader that observes another holder stops leading at once instead of waiting for the
//!   renew deadline;
//! - release only clears the lease when the freshly read lease still names this elector;
//! - `lease_duration` must be at least one second, since the Lease records whole seconds.

use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use k8s_openapi::api::coordination::v1::{Lease, LeaseSpec};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{MicroTime, ObjectMeta};
use kube::Api;
use kube::api::PostParams;
use tokio::sync::watch;
use tokio::task::AbortHandle;
use tokio::time::Instant;

/// client-go's `JitterFactor`: retries wait `retry_period * (1 + rand * 1.2)`, and the renew
/// deadline must exceed `retry_period * 1.2`.
pub const JITTER_FACTOR: f64 = 1.2;

/// Upstream's default `--leader-election-namespace`.
pub const DEFAULT_NAMESPACE: &str = "kruise-system";

/// Upstream's default `--leader-election-id` (the Lease's name).
pub const DEFAULT_NAME: &str = "kruise-manager";

/// Upstream's default `--leader-election-lease-duration`.
pub const DEFAULT_LEASE_DURATION: Duration = Duration::from_secs(15);

/// Upstream's default `--leader-election-renew-deadline`.
pub const DEFAULT_RENEW_DEADLINE: Duration = Duration::from_secs(10);

/// Upstream's default `--leader-election-retry-period`.
pub const DEFAULT_RETRY_PERIOD: Duration = Duration::from_secs(2);

const FLAG_NAMESPACE: &str = "--leader-election-namespace";
const FLAG_NAME: &str = "--leader-election-id";
const FLAG_LEASE: &str = "--leader-election-lease-duration";
const FLAG_RENEW: &str = "--leader-election-renew-deadline";
const FLAG_RETRY: &str = "--leader-election-retry-period";

/// Errors of leader election.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum LeaderError {
    /// A setting is out of range; `flag` names the command-line flag that sets it.
    #[error("invalid {flag}: {reason}")]
    InvalidFlag {
        /// The flag, e.g. `--leader-election-renew-deadline`.
        flag: &'static str,
        /// Why the value is rejected.
        reason: String,
    },
    /// The holder identity is empty (client-go: "Lock identity is empty").
    #[error("leader election identity is empty")]
    EmptyIdentity,
}

/// Settings of a [`LeaderElector`].
#[derive(Clone, Debug)]
pub struct LeaderElectionConfig {
    /// Namespace of the Lease (`--leader-election-namespace`, default `kruise-system`).
    pub namespace: String,
    /// Name of the Lease (`--leader-election-id`, default `kruise-manager`).
    pub name: String,
    /// This candidate's `holderIdentity`; see [`default_identity`].
    pub identity: String,
    /// How long non-leaders wait after the last observed change of the lease before taking it
    /// over (`--leader-election-lease-duration`, default 15s).
    pub lease_duration: Duration,
    /// How long the leader keeps retrying a renewal before giving up leadership
    /// (`--leader-election-renew-deadline`, default 10s).
    pub renew_deadline: Duration,
    /// Interval between attempts to acquire or renew (`--leader-election-retry-period`,
    /// default 2s).
    pub retry_period: Duration,
    /// Whether a leader clears the lease on shutdown so a successor need not wait for it to
    /// expire (default true).
    pub release_on_cancel: bool,
}

impl Default for LeaderElectionConfig {
    /// Upstream's defaults with [`default_identity`].
    fn default() -> Self {
        LeaderElectionConfig::new(DEFAULT_NAMESPACE, DEFAULT_NAME, default_identity())
    }
}

impl LeaderElectionConfig {
    /// A config for the Lease `namespace/name` held as `identity`, with upstream's durations
    /// (15s / 10s / 2s) and `release_on_cancel`.
    pub fn new(
        namespace: impl Into<String>,
        name: impl Into<String>,
        identity: impl Into<String>,
    ) -> Self {
        LeaderElectionConfig {
            namespace: namespace.into(),
            name: name.into(),
            identity: identity.into(),
            lease_duration: DEFAULT_LEASE_DURATION,
            renew_deadline: DEFAULT_RENEW_DEADLINE,
            retry_period: DEFAULT_RETRY_PERIOD,
            release_on_cancel: true,
        }
    }

    /// Checks client-go's constraints: every duration positive, and
    /// `lease_duration > renew_deadline > retry_period * 1.2`; also a non-empty namespace,
    /// name and identity, and a lease duration of at least one second.
    pub fn validate(&self) -> Result<(), LeaderError> {
        let invalid =
            |flag: &'static str, reason: String| LeaderError::InvalidFlag { flag, reason };
        if self.namespace.is_empty() {
            return Err(invalid(FLAG_NAMESPACE, "must not be empty".into()));
        }
        if self.name.is_empty() {
            return Err(invalid(FLAG_NAME, "must not be empty".into()));
        }
        if self.identity.is_empty() {
            return Err(LeaderError::EmptyIdentity);
        }
        for (flag, d) in [
            (FLAG_LEASE, self.lease_duration),
            (FLAG_RENEW, self.renew_deadline),
            (FLAG_RETRY, self.retry_period),
        ] {
            if d.is_zero() {
                return Err(invalid(flag, "must be greater than zero".into()));
            }
        }
        if self.lease_duration < Duration::from_secs(1) {
            return Err(invalid(
                FLAG_LEASE,
                format!(
                    "{:?} is less than one second (the Lease records whole seconds)",
                    self.lease_duration
                ),
            ));
        }
        if self.lease_duration <= self.renew_deadline {
            return Err(invalid(
                FLAG_LEASE,
                format!(
                    "{:?} must be greater than {FLAG_RENEW} ({:?})",
                    self.lease_duration, self.renew_deadline
                ),
            ));
        }
        let jittered_retry = self.retry_period.mul_f64(JITTER_FACTOR);
        if self.renew_deadline <= jittered_retry {
            return Err(invalid(
                FLAG_RENEW,
                format!(
                    "{:?} must be greater than {FLAG_RETRY} ({:?}) * {JITTER_FACTOR}",
                    self.renew_deadline, self.retry_period
                ),
            ));
        }
        Ok(())
    }

    /// `leaseDurationSeconds` as client-go writes it: whole seconds, truncated.
    fn lease_duration_seconds(&self) -> i32 {
        i32::try_from(self.lease_duration.as_secs()).unwrap_or(i32::MAX)
    }
}

/// A holder identity like controller-runtime's: the host name, `_`, and a random UUID.
pub fn default_identity() -> String {
    format!("{}_{}", hostname(), random_uuid())
}

fn hostname() -> String {
    let from_file = |p: &str| {
        std::fs::read_to_string(p).ok().map(|s| s.trim().to_string()).filter(|s| !s.is_empty())
    };
    from_file("/proc/sys/kernel/hostname")
        .or_else(|| from_file("/etc/hostname"))
        .or_else(|| std::env::var("HOSTNAME").ok().filter(|s| !s.is_empty()))
        .unwrap_or_else(|| "localhost".to_string())
}

/// A version-4 UUID in its usual text form.
fn random_uuid() -> String {
    let mut v: u128 = rand::random();
    v = (v & !(0xF << 76)) | (0x4 << 76); // version 4
    v = (v & !(0x3 << 62)) | (0x2 << 62); // RFC 4122 variant
    let h = format!("{v:032x}");
    format!("{}-{}-{}-{}-{}", &h[0..8], &h[8..12], &h[12..16], &h[16..20], &h[20..32])
}

/// What client-go calls a `LeaderElectionRecord`: the part of a Lease's spec the election
/// reads and writes.
#[derive(Clone, Debug, PartialEq, Eq, Default)]
struct Record {
    holder: String,
    lease_duration_seconds: i32,
    acquire_time: Option<jiff::Timestamp>,
    renew_time: Option<jiff::Timestamp>,
    transitions: i32,
}

impl Record {
    fn from_lease(lease: &Lease) -> Record {
        let spec = lease.spec.clone().unwrap_or_default();
        Record {
            holder: spec.holder_identity.unwrap_or_default(),
            lease_duration_seconds: spec.lease_duration_seconds.unwrap_or(0),
            acquire_time: spec.acquire_time.map(|t| t.0),
            renew_time: spec.renew_time.map(|t| t.0),
            transitions: spec.lease_transitions.unwrap_or(0),
        }
    }

    /// client-go's `LeaderElectionRecordToLeaseSpec`: the whole spec is replaced.
    fn to_spec(&self) -> LeaseSpec {
        LeaseSpec {
            holder_identity: Some(self.holder.clone()),
            lease_duration_seconds: Some(self.lease_duration_seconds),
            acquire_time: self.acquire_time.map(MicroTime),
            renew_time: self.renew_time.map(MicroTime),
            lease_transitions: Some(self.transitions),
            ..LeaseSpec::default()
        }
    }

    fn lease_duration(&self) -> Duration {
        Duration::from_secs(u64::try_from(self.lease_duration_seconds).unwrap_or(0))
    }
}

/// The record as last observed, and when (local clock) it was seen to change.
#[derive(Debug)]
struct Observed {
    record: Record,
    time: Instant,
}

/// Why a write of the lease failed.
#[derive(Debug, thiserror::Error)]
enum WriteError {
    /// There is no lease (with its resourceVersion) to update yet.
    #[error("the lease has not been read yet")]
    NotRead,
    /// The API server refused or could not be reached.
    #[error(transparent)]
    Api(#[from] kube::Error),
}

/// Publishes leadership; publishes `false` when dropped (the task ended or was aborted).
struct Publisher(watch::Sender<bool>);

impl Publisher {
    fn set(&self, leader: bool) {
        self.0.send_if_modified(|cur| {
            let changed = *cur != leader;
            *cur = leader;
            changed
        });
    }
}

impl Drop for Publisher {
    fn drop(&mut self) {
        self.set(false);
    }
}

/// A candidate for leadership of one Lease. Start it with [`LeaderElector::spawn`].
pub struct LeaderElector {
    api: Api<Lease>,
    config: LeaderElectionConfig,
    /// The Lease as last read or written (its resourceVersion guards our next write).
    lease: Option<Lease>,
    observed: Option<Observed>,
}

impl std::fmt::Debug for LeaderElector {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LeaderElector")
            .field("config", &self.config)
            .field("observed", &self.observed)
            .finish_non_exhaustive()
    }
}

impl LeaderElector {
    /// An elector for `config`'s Lease. Call [`LeaderElectionConfig::validate`] first; an
    /// invalid config is not rejected here.
    pub fn new(client: kube::Client, config: LeaderElectionConfig) -> Self {
        let api = Api::namespaced(client, &config.namespace);
        LeaderElector { api, config, lease: None, observed: None }
    }

    /// Starts campaigning on the current tokio runtime. The task runs until `shutdown`
    /// resolves; then a leader publishes `false` and, with `release_on_cancel`, releases the
    /// lease before the task ends.
    pub fn spawn(self, shutdown: impl Future<Output = ()> + Send + 'static) -> LeaderHandle {
        let (tx, rx) = watch::channel(false);
        let publisher = Publisher(tx);
        let task = tokio::spawn(self.run(publisher, shutdown));
        LeaderHandle { rx, abort: Some(Arc::new(task.abort_handle())), _forever: None }
    }

    async fn run(mut self, publisher: Publisher, shutdown: impl Future<Output = ()>) {
        tracing::info!(
            lease = %self.describe(),
            identity = %self.config.identity,
            "starting leader election"
        );
        {
            let campaign = self.campaign(&publisher);
            tokio::select! {
                () = shutdown => {}
                () = campaign => {}
            }
        }
        let was_leader = *publisher.0.borrow();
        publisher.set(false);
        if was_leader {
            tracing::info!(lease = %self.describe(), "stopped leading: shutting down");
        }
        if self.config.release_on_cancel {
            self.release().await;
        }
    }

    /// Acquire, renew until lost, and again; never returns.
    async fn campaign(&mut self, publisher: &Publisher) {
        loop {
            self.acquire().await;
            publisher.set(true);
            tracing::info!(
                lease = %self.describe(),
                identity = %self.config.identity,
                "successfully acquired lease, now leading"
            );
            self.renew().await;
            publisher.set(false);
            tracing::warn!(
                lease = %self.describe(),
                identity = %self.config.identity,
                "leadership lost, stopped leading"
            );
        }
    }

    fn describe(&self) -> String {
        format!("{}/{}", self.config.namespace, self.config.name)
    }

    /// Whether the observed record names this elector (client-go's `IsLeader`).
    fn holds_record(&self) -> bool {
        self.observed.as_ref().is_some_and(|o| o.record.holder == self.config.identity)
    }

    /// Tries every `retry_period` (jittered) until the lease is ours.
    async fn acquire(&mut self) {
        tracing::debug!(lease = %self.describe(), "attempting to acquire leader lease");
        loop {
            let limit = self.config.renew_deadline;
            if tokio::time::timeout(limit, self.try_acquire_or_renew()).await.unwrap_or(false) {
                return;
            }
            tokio::time::sleep(jittered(self.config.retry_period)).await;
        }
    }

    /// Renews every `retry_period`; returns when leadership is lost.
    async fn renew(&mut self) {
        loop {
            tokio::time::sleep(self.config.retry_period).await;
            let deadline = Instant::now() + self.config.renew_deadline;
            loop {
                match tokio::time::timeout_at(deadline, self.try_acquire_or_renew()).await {
                    Ok(true) => break,
                    Ok(false) if !self.holds_record() => {
                        tracing::warn!(lease = %self.describe(), "lease taken by another holder");
                        return;
                    }
                    Ok(false) => {}
                    Err(_) => {
                        tracing::warn!(
                            lease = %self.describe(),
                            renew_deadline = ?self.config.renew_deadline,
                            "failed to renew lease within the renew deadline"
                        );
                        return;
                    }
                }
                let next = Instant::now() + self.config.retry_period;
                if next >= deadline {
                    tokio::time::sleep_until(deadline).await;
                    tracing::warn!(
                        lease = %self.describe(),
                        renew_deadline = ?self.config.renew_deadline,
                        "failed to renew lease within the renew deadline"
                    );
                    return;
                }
                tokio::time::sleep_until(next).await;
            }
            tracing::trace!(lease = %self.describe(), "renewed lease");
        }
    }

    /// Records a lease read from the server; the observed time moves only when the record
    /// changed.
    fn observe_read(&mut self, lease: Lease) {
        let record = Record::from_lease(&lease);
        let changed = self.observed.as_ref().is_none_or(|o| o.record != record);
        if changed {
            self.observed = Some(Observed { record, time: Instant::now() });
        }
        self.lease = Some(lease);
    }

    /// Records a lease this elector wrote.
    fn observe_write(&mut self, lease: Lease) {
        let record = Record::from_lease(&lease);
        self.observed = Some(Observed { record, time: Instant::now() });
        self.lease = Some(lease);
    }

    /// Whether the observed lease is still within its duration (client-go's `isLeaseValid`).
    fn observed_valid(&self, now: Instant) -> bool {
        self.observed.as_ref().is_some_and(|o| o.time + o.record.lease_duration() > now)
    }

    /// Replaces the cached Lease's spec and writes it with its resourceVersion.
    async fn update(&mut self, record: &Record) -> Result<(), WriteError> {
        let mut lease = self.lease.clone().ok_or(WriteError::NotRead)?;
        lease.spec = Some(record.to_spec());
        let written = self.api.replace(&self.config.name, &PostParams::default(), &lease).await?;
        self.observe_write(written);
        Ok(())
    }

    /// client-go's `tryAcquireOrRenew`: one attempt; true when we hold the lease afterwards.
    async fn try_acquire_or_renew(&mut self) -> bool {
        let now = jiff::Timestamp::now();
        let mut record = Record {
            holder: self.config.identity.clone(),
            lease_duration_seconds: self.config.lease_duration_seconds(),
            acquire_time: Some(now),
            renew_time: Some(now),
            transitions: 0,
        };

        // 1. Fast path: the leader renews assuming its cached lease is current.
        if self.lease.is_some() && self.holds_record() && self.observed_valid(Instant::now()) {
            if let Some(o) = &self.observed {
                record.acquire_time = o.record.acquire_time;
                record.transitions = o.record.transitions;
            }
            match self.update(&record).await {
                Ok(()) => return true,
                Err(e) => tracing::info!(
                    lease = %self.describe(),
                    error = %e,
                    "failed to update lease optimistically, falling back to slow path"
                ),
            }
        }

        // 2. Read the lease, or create it.
        let current = match self.api.get(&self.config.name).await {
            Ok(lease) => lease,
            Err(kube::Error::Api(s)) if s.code == 404 => {
                return self.create(&record).await;
            }
            Err(e) => {
                tracing::warn!(lease = %self.describe(), error = %e, "error retrieving lease");
                return false;
            }
        };
        self.observe_read(current);

        // 3. Is it held by someone else and still valid?
        let Some(observed) = &self.observed else { return false };
        let old = observed.record.clone();
        let expired = observed.time + old.lease_duration() < Instant::now();
        let we_hold = self.holds_record();
        if !old.holder.is_empty() && !expired && !we_hold {
            tracing::debug!(
                lease = %self.describe(),
                holder = %old.holder,
                "lease is held by another candidate and has not yet expired"
            );
            return false;
        }
        if expired && !we_hold && !old.holder.is_empty() {
            tracing::info!(lease = %self.describe(), holder = %old.holder, "lease has expired");
        }

        // 4. Take it over (or renew it).
        if we_hold {
            record.acquire_time = old.acquire_time;
            record.transitions = old.transitions;
        } else {
            record.transitions = old.transitions.saturating_add(1);
        }
        match self.update(&record).await {
            Ok(()) => true,
            Err(e) => {
                tracing::info!(lease = %self.describe(), error = %e, "failed to update lease");
                false
            }
        }
    }

    async fn create(&mut self, record: &Record) -> bool {
        let lease = Lease {
            metadata: ObjectMeta {
                name: Some(self.config.name.clone()),
                namespace: Some(self.config.namespace.clone()),
                ..ObjectMeta::default()
            },
            spec: Some(record.to_spec()),
        };
        match self.api.create(&PostParams::default(), &lease).await {
            Ok(created) => {
                self.observe_write(created);
                true
            }
            Err(e) => {
                tracing::info!(lease = %self.describe(), error = %e, "error creating lease");
                false
            }
        }
    }

    /// client-go's `release`: if the lease still names us, clear the holder with a one-second
    /// duration so the next candidate may take over at once.
    async fn release(&mut self) {
        let limit = self.config.renew_deadline;
        let lease = self.describe();
        let work = async {
            let current = match self.api.get(&self.config.name).await {
                Ok(lease) => lease,
                Err(e) => {
                    tracing::warn!(lease = %self.describe(), error = %e, "release: cannot read lease");
                    return;
                }
            };
            let old = Record::from_lease(&current);
            self.observe_read(current);
            if old.holder != self.config.identity {
                return;
            }
            let now = jiff::Timestamp::now();
            let record = Record {
                holder: String::new(),
                lease_duration_seconds: 1,
                acquire_time: Some(now),
                renew_time: Some(now),
                transitions: old.transitions,
            };
            match self.update(&record).await {
                Ok(()) => tracing::info!(lease = %self.describe(), "released leader lease"),
                Err(e) => {
                    tracing::warn!(lease = %self.describe(), error = %e, "failed to release lease")
                }
            }
        };
        if tokio::time::timeout(limit, work).await.is_err() {
            tracing::warn!(%lease, "timed out releasing lease");
        }
    }
}

/// `d * (1 + rand[0,1) * JITTER_FACTOR)`, client-go's `wait.Jitter`.
fn jittered(d: Duration) -> Duration {
    d.mul_f64(1.0 + rand::random::<f64>() * JITTER_FACTOR)
}

/// A view of an elector's leadership, cheap to clone.
#[derive(Clone, Debug)]
pub struct LeaderHandle {
    rx: watch::Receiver<bool>,
    /// The elector task; `None` for [`LeaderHandle::always_leader`].
    abort: Option<Arc<AbortHandle>>,
    /// Keeps the channel of an always-leader handle open.
    _forever: Option<Arc<watch::Sender<bool>>>,
}

impl LeaderHandle {
    /// Whether this process leads now.
    pub fn is_leader(&self) -> bool {
        *self.rx.borrow()
    }

    /// A receiver of leadership changes (`true` when leading). Do not hold its `borrow()`
    /// (or the `Ref` of `wait_for`) across an `.await`: that blocks the elector's next
    /// publication.
    pub fn subscribe(&self) -> watch::Receiver<bool> {
        self.rx.clone()
    }

    /// Waits until this process leads. Returns `true` once leading, or `false` if the elector
    /// stopped first (it will never lead then).
    pub async fn wait_for_leadership(&self) -> bool {
        let mut rx = self.rx.clone();
        rx.wait_for(|leader| *leader).await.is_ok()
    }

    /// A handle that leads forever, for `--enable-leader-election=false`.
    pub fn always_leader() -> LeaderHandle {
        let (tx, rx) = watch::channel(true);
        LeaderHandle { rx, abort: None, _forever: Some(Arc::new(tx)) }
    }

    /// Waits until the elector task has ended (after shutdown, having released the lease).
    /// Returns at once for [`LeaderHandle::always_leader`].
    pub async fn stopped(self) {
        if self.abort.is_none() {
            return;
        }
        let mut rx = self.rx;
        while rx.changed().await.is_ok() {}
    }

    /// Stops the elector at once without releasing the lease, as a crash would: `false` is
    /// published and other candidates take over only when the lease expires. No-op for
    /// [`LeaderHandle::always_leader`].
    pub fn abort(&self) {
        if let Some(a) = &self.abort {
            a.abort();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cfg(lease: u64, renew: u64, retry: u64) -> LeaderElectionConfig {
        let mut c = LeaderElectionConfig::new("ns", "name", "id");
        c.lease_duration = Duration::from_millis(lease);
        c.renew_deadline = Duration::from_millis(renew);
        c.retry_period = Duration::from_millis(retry);
        c
    }

    fn flag_of(r: Result<(), LeaderError>) -> &'static str {
        match r {
            Err(LeaderError::InvalidFlag { flag, .. }) => flag,
            other => panic!("expected InvalidFlag, got {other:?}"),
        }
    }

    #[test]
    fn defaults_match_upstream() {
        let c = LeaderElectionConfig::default();
        assert_eq!(c.namespace, "kruise-system");
        assert_eq!(c.name, "kruise-manager");
        assert_eq!(c.lease_duration, Duration::from_secs(15));
        assert_eq!(c.renew_deadline, Duration::from_secs(10));
        assert_eq!(c.retry_period, Duration::from_secs(2));
        assert!(c.release_on_cancel);
        assert_eq!(c.validate(), Ok(()));
        assert_eq!(c.lease_duration_seconds(), 15);
    }

    #[test]
    fn validation_names_the_flag() {
        assert_eq!(flag_of(cfg(10_000, 10_000, 2_000).validate()), FLAG_LEASE);
        assert_eq!(flag_of(cfg(5_000, 10_000, 2_000).validate()), FLAG_LEASE);
        // 2.4s is exactly retry * 1.2: rejected like client-go.
        assert_eq!(flag_of(cfg(15_000, 2_400, 2_000).validate()), FLAG_RENEW);
        assert_eq!(cfg(15_000, 2_401, 2_000).validate(), Ok(()));
        assert_eq!(flag_of(cfg(15_000, 10_000, 0).validate()), FLAG_RETRY);
        assert_eq!(flag_of(cfg(15_000, 0, 2_000).validate()), FLAG_RENEW);
        assert_eq!(flag_of(cfg(0, 10_000, 2_000).validate()), FLAG_LEASE);
        assert_eq!(flag_of(cfg(900, 500, 100).validate()), FLAG_LEASE);
        let msg = cfg(15_000, 2_400, 2_000).validate().err().map(|e| e.to_string());
        assert!(msg.is_some_and(|m| m.contains("--leader-election-renew-deadline")));

        let mut c = cfg(15_000, 10_000, 2_000);
        c.identity.clear();
        assert_eq!(c.validate(), Err(LeaderError::EmptyIdentity));
        let mut c = cfg(15_000, 10_000, 2_000);
        c.namespace.clear();
        assert_eq!(flag_of(c.validate()), FLAG_NAMESPACE);
        let mut c = cfg(15_000, 10_000, 2_000);
        c.name.clear();
        assert_eq!(flag_of(c.validate()), FLAG_NAME);
    }

    #[test]
    fn lease_seconds_truncate_like_client_go() {
        assert_eq!(cfg(2_900, 1_500, 300).lease_duration_seconds(), 2);
    }

    #[test]
    fn identity_is_host_and_uuid() {
        let a = default_identity();
        let b = default_identity();
        assert_ne!(a, b);
        let (host, uuid) = a.rsplit_once('_').unwrap_or_default();
        assert!(!host.is_empty());
        let parts: Vec<&str> = uuid.split('-').collect();
        assert_eq!(parts.iter().map(|p| p.len()).collect::<Vec<_>>(), vec![8, 4, 4, 4, 12]);
        assert!(parts[2].starts_with('4'));
        assert!(matches!(parts[3].chars().next(), Some('8' | '9' | 'a' | 'b')));
    }

    #[test]
    fn jitter_stays_in_range() {
        let d = Duration::from_millis(100);
        for _ in 0..1000 {
            let j = jittered(d);
            assert!(j >= d && j <= d.mul_f64(1.0 + JITTER_FACTOR));
        }
    }

    #[test]
    fn record_round_trips_through_spec() {
        let t = jiff::Timestamp::from_second(1_700_000_000).unwrap_or(jiff::Timestamp::UNIX_EPOCH);
        let r = Record {
            holder: "me".into(),
            lease_duration_seconds: 15,
            acquire_time: Some(t),
            renew_time: Some(t),
            transitions: 3,
        };
        let lease = Lease { metadata: ObjectMeta::default(), spec: Some(r.to_spec()) };
        assert_eq!(Record::from_lease(&lease), r);
        assert_eq!(Record::from_lease(&Lease::default()), Record::default());
    }

    #[tokio::test]
    async fn always_leader_leads_and_stops_at_once() {
        let h = LeaderHandle::always_leader();
        assert!(h.is_leader());
        assert!(h.wait_for_leadership().await);
        h.abort();
        assert!(h.is_leader());
        h.stopped().await;
    }
}
