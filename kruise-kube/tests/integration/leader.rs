//! Leader election against kruise-sim: acquiring, mutual exclusion, failover after a crash
//! and after a release, losing leadership when renewals fail, and respecting a lease held by
//! another (for example Go) manager.

use std::time::Duration;

use k8s_openapi::api::coordination::v1::{Lease, LeaseSpec};
use k8s_openapi::api::core::v1::Namespace;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{MicroTime, ObjectMeta};
use kruise_kube::leader::{LeaderElectionConfig, LeaderElector, LeaderError, LeaderHandle};
use kruise_sim::faults::{Fault, FaultAction};
use kruise_sim::{Config, Server, ServerHandle};
use kube::Api;
use kube::api::PostParams;
use tokio::sync::oneshot;
use tokio::time::{Instant, sleep, timeout};

const NS: &str = "kruise-system";
const NAME: &str = "kruise-manager";

async fn setup() -> (ServerHandle, kube::Client) {
    let server = Server::start(Config::default()).await.expect("server starts");
    let client =
        kruise_sim::nodes::client_from_kubeconfig(&server.kubeconfig).await.expect("client");
    let ns = Namespace {
        metadata: ObjectMeta { name: Some(NS.into()), ..Default::default() },
        ..Default::default()
    };
    Api::<Namespace>::all(client.clone())
        .create(&PostParams::default(), &ns)
        .await
        .expect("namespace created");
    (server, client)
}

/// Short durations: lease 2s, renew deadline 1.5s, retry 0.3s.
fn short(identity: &str) -> LeaderElectionConfig {
    let mut c = LeaderElectionConfig::new(NS, NAME, identity);
    c.lease_duration = Duration::from_secs(2);
    c.renew_deadline = Duration::from_millis(1500);
    c.retry_period = Duration::from_millis(300);
    c.validate().expect("valid config");
    c
}

struct Candidate {
    handle: LeaderHandle,
    stop: Option<oneshot::Sender<()>>,
}

impl Candidate {
    fn start(client: &kube::Client, config: LeaderElectionConfig) -> Candidate {
        let (tx, rx) = oneshot::channel::<()>();
        let handle = LeaderElector::new(client.clone(), config).spawn(async move {
            let _ = rx.await;
        });
        Candidate { handle, stop: Some(tx) }
    }

    async fn shutdown(mut self) {
        if let Some(tx) = self.stop.take() {
            let _ = tx.send(());
        }
        timeout(Duration::from_secs(10), self.handle.clone().stopped())
            .await
            .expect("elector stops after shutdown");
    }
}

async fn lease(client: &kube::Client) -> Lease {
    Api::<Lease>::namespaced(client.clone(), NS).get(NAME).await.expect("lease exists")
}

fn spec(l: &Lease) -> LeaseSpec {
    l.spec.clone().expect("lease has a spec")
}

async fn leads_within(h: &LeaderHandle, d: Duration, what: &str) {
    let led = timeout(d, h.wait_for_leadership()).await;
    assert_eq!(led, Ok(true), "{what}: did not become leader within {d:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn single_elector_acquires_renews_and_releases() {
    let (_server, client) = setup().await;
    let a = Candidate::start(&client, short("a"));
    leads_within(&a.handle, Duration::from_secs(5), "a").await;
    assert!(a.handle.is_leader());

    let first = spec(&lease(&client).await);
    assert_eq!(first.holder_identity.as_deref(), Some("a"));
    assert_eq!(first.lease_duration_seconds, Some(2));
    assert_eq!(first.lease_transitions, Some(0));
    let acquired = first.acquire_time.clone().expect("acquireTime set");
    let renewed = first.renew_time.clone().expect("renewTime set");
    assert!(renewed >= acquired);

    // The leader renews: renewTime moves on, acquireTime and transitions stay.
    let deadline = Instant::now() + Duration::from_secs(5);
    loop {
        let s = spec(&lease(&client).await);
        if s.renew_time.as_ref().is_some_and(|t| *t > renewed) {
            assert_eq!(s.acquire_time.as_ref(), Some(&acquired));
            assert_eq!(s.lease_transitions, Some(0));
            assert_eq!(s.holder_identity.as_deref(), Some("a"));
            break;
        }
        assert!(Instant::now() < deadline, "lease was never renewed");
        sleep(Duration::from_millis(100)).await;
    }
    assert!(a.handle.is_leader());

    // Shutdown with release_on_cancel clears the holder the way client-go does.
    let h = a.handle.clone();
    a.shutdown().await;
    assert!(!h.is_leader());
    let released = spec(&lease(&client).await);
    assert_eq!(released.holder_identity.as_deref(), Some(""));
    assert_eq!(released.lease_duration_seconds, Some(1));
    assert_eq!(released.lease_transitions, Some(0));
    assert!(released.renew_time.as_ref().is_some_and(|t| *t > renewed));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_electors_never_lead_together() {
    let (_server, client) = setup().await;
    let a = Candidate::start(&client, short("a"));
    let b = Candidate::start(&client, short("b"));

    let deadline = Instant::now() + Duration::from_secs(5);
    while !a.handle.is_leader() && !b.handle.is_leader() {
        assert!(Instant::now() < deadline, "nobody became leader");
        sleep(Duration::from_millis(20)).await;
    }
    let a_leads = a.handle.is_leader();
    let (leader, follower) = if a_leads { ("a", "b") } else { ("b", "a") };

    // Sample for longer than the lease duration: exactly one leader, always the same one.
    let until = Instant::now() + Duration::from_secs(3);
    while Instant::now() < until {
        let (la, lb) = (a.handle.is_leader(), b.handle.is_leader());
        assert!(la ^ lb, "exactly one must lead (a: {la}, b: {lb})");
        assert_eq!(la, a_leads, "{follower} took over while {leader} was renewing");
        sleep(Duration::from_millis(50)).await;
    }
    let s = spec(&lease(&client).await);
    assert_eq!(s.holder_identity.as_deref(), Some(leader));
    assert_eq!(s.lease_transitions, Some(0));

    a.shutdown().await;
    b.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn crashed_leader_is_replaced_after_the_lease_expires() {
    let (_server, client) = setup().await;
    let a = Candidate::start(&client, short("a"));
    leads_within(&a.handle, Duration::from_secs(5), "a").await;
    let b = Candidate::start(&client, short("b"));
    // b has observed a's lease and waits.
    sleep(Duration::from_millis(700)).await;
    assert!(!b.handle.is_leader());
    let before = spec(&lease(&client).await);

    // Crash: the task ends without releasing.
    a.handle.abort();
    let crashed = Instant::now();
    let a_rx = a.handle.clone();
    timeout(Duration::from_secs(2), a_rx.stopped()).await.expect("aborted elector ends");
    assert!(!a.handle.is_leader());
    let s = spec(&lease(&client).await);
    assert_eq!(s.holder_identity.as_deref(), Some("a"), "a crash does not release");

    // b waits for the lease to expire (lease 2s + a jittered retry), not less than a second.
    leads_within(&b.handle, Duration::from_secs(6), "b after a's crash").await;
    assert!(
        crashed.elapsed() >= Duration::from_secs(1),
        "b took over a lease that had not expired"
    );
    let s = spec(&lease(&client).await);
    assert_eq!(s.holder_identity.as_deref(), Some("b"));
    assert_eq!(s.lease_transitions, Some(1));
    assert_eq!(s.lease_duration_seconds, Some(2));
    assert_ne!(s.acquire_time, before.acquire_time);
    drop(a);
    b.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn released_lease_is_taken_over_without_waiting_for_expiry() {
    let (_server, client) = setup().await;
    // A long lease, so a takeover within its duration can only come from the release.
    let long = |id: &str| {
        let mut c = short(id);
        c.lease_duration = Duration::from_secs(6);
        c.renew_deadline = Duration::from_secs(4);
        c
    };
    let a = Candidate::start(&client, long("a"));
    leads_within(&a.handle, Duration::from_secs(5), "a").await;
    let b = Candidate::start(&client, long("b"));
    sleep(Duration::from_millis(700)).await;
    assert!(!b.handle.is_leader());

    let stopped_at = Instant::now();
    a.shutdown().await;
    leads_within(&b.handle, Duration::from_secs(3), "b after a's release").await;
    assert!(stopped_at.elapsed() < Duration::from_secs(6), "b waited for the lease to expire");
    let s = spec(&lease(&client).await);
    assert_eq!(s.holder_identity.as_deref(), Some("b"));
    assert_eq!(s.lease_transitions, Some(1));
    assert_eq!(s.lease_duration_seconds, Some(6));
    b.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn failing_renewals_lose_leadership_then_it_comes_back() {
    let (server, client) = setup().await;
    let a = Candidate::start(&client, short("a"));
    leads_within(&a.handle, Duration::from_secs(5), "a").await;
    let mut rx = a.handle.subscribe();
    assert!(*rx.borrow_and_update());

    // Every lease update fails from now on (reads still work).
    let failed = server
        .faults()
        .inject(Fault::new(FaultAction::InternalError).verb("update").resource("leases"));
    // Lost within the renew deadline (1.5s) plus a retry period; the elector must not panic.
    // (The `Ref` that `wait_for` returns is dropped at once: holding it would block the
    // elector's next publication.)
    let lost =
        timeout(Duration::from_secs(5), async { rx.wait_for(|leader| !*leader).await.is_ok() })
            .await;
    assert_eq!(lost, Ok(true), "leadership not given up while renewals fail");
    assert!(failed.count() > 0, "the renewals failed");
    assert!(!a.handle.is_leader());
    // Stays a follower while updates keep failing.
    sleep(Duration::from_millis(1000)).await;
    assert!(!a.handle.is_leader());
    assert_eq!(spec(&lease(&client).await).holder_identity.as_deref(), Some("a"));

    // The API recovers: the elector campaigns again and wins its own lease back.
    server.faults().clear();
    leads_within(&a.handle, Duration::from_secs(5), "a after recovery").await;
    let s = spec(&lease(&client).await);
    assert_eq!(s.holder_identity.as_deref(), Some("a"));
    assert_eq!(s.lease_transitions, Some(0));
    a.shutdown().await;
}

async fn create_foreign_lease(client: &kube::Client, holder: &str, transitions: i32) -> Lease {
    let now = MicroTime(jiff::Timestamp::now());
    let l = Lease {
        metadata: ObjectMeta { name: Some(NAME.into()), ..Default::default() },
        spec: Some(LeaseSpec {
            holder_identity: Some(holder.into()),
            lease_duration_seconds: Some(2),
            acquire_time: Some(now.clone()),
            renew_time: Some(now),
            lease_transitions: Some(transitions),
            ..Default::default()
        }),
    };
    Api::<Lease>::namespaced(client.clone(), NS)
        .create(&PostParams::default(), &l)
        .await
        .expect("foreign lease created")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_lease_renewed_by_another_manager_is_respected_until_it_expires() {
    let (_server, client) = setup().await;
    create_foreign_lease(&client, "go-manager_1234", 4).await;
    let ours = Candidate::start(&client, short("rust"));

    // The Go manager renews every 300ms for 3s (longer than the 2s lease).
    let api = Api::<Lease>::namespaced(client.clone(), NS);
    let until = Instant::now() + Duration::from_secs(3);
    while Instant::now() < until {
        let mut l = api.get(NAME).await.expect("get lease");
        if let Some(s) = l.spec.as_mut() {
            s.renew_time = Some(MicroTime(jiff::Timestamp::now()));
        }
        // A conflict would mean someone else wrote the lease: that must not happen.
        api.replace(NAME, &PostParams::default(), &l).await.expect("go manager renews");
        assert!(!ours.handle.is_leader(), "took over a lease that is being renewed");
        sleep(Duration::from_millis(300)).await;
    }
    assert!(!ours.handle.is_leader());

    // The Go manager dies: ours takes over once the lease expires.
    leads_within(&ours.handle, Duration::from_secs(6), "rust after go stopped").await;
    let s = spec(&lease(&client).await);
    assert_eq!(s.holder_identity.as_deref(), Some("rust"));
    assert_eq!(s.lease_transitions, Some(5));
    ours.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_empty_holder_is_free_at_once() {
    let (_server, client) = setup().await;
    create_foreign_lease(&client, "", 7).await;
    let mut config = short("rust");
    // With a long lease, only an empty holder explains a quick acquisition.
    config.lease_duration = Duration::from_secs(30);
    config.renew_deadline = Duration::from_secs(20);
    let ours = Candidate::start(&client, config);
    leads_within(&ours.handle, Duration::from_secs(1), "rust on a free lease").await;
    let s = spec(&lease(&client).await);
    assert_eq!(s.holder_identity.as_deref(), Some("rust"));
    assert_eq!(s.lease_transitions, Some(8));
    assert_eq!(s.lease_duration_seconds, Some(30));
    ours.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_lease_is_created_despite_transient_errors() {
    let (server, client) = setup().await;
    let creates = server
        .faults()
        .inject(Fault::new(FaultAction::InternalError).verb("create").resource("leases").times(2));
    let gets = server
        .faults()
        .inject(Fault::new(FaultAction::InternalError).verb("get").resource("leases").times(1));
    let a = Candidate::start(&client, short("a"));
    leads_within(&a.handle, Duration::from_secs(5), "a after transient errors").await;
    assert_eq!((creates.count(), gets.count()), (2, 1), "every transient error was met");
    assert_eq!(spec(&lease(&client).await).holder_identity.as_deref(), Some("a"));
    a.shutdown().await;
}

#[test]
fn invalid_configs_name_their_flag() {
    let base = short("x");
    let err = |c: LeaderElectionConfig| c.validate().expect_err("invalid").to_string();

    let mut c = base.clone();
    c.renew_deadline = c.lease_duration;
    assert!(err(c).contains("--leader-election-lease-duration"));

    let mut c = base.clone();
    c.renew_deadline = c.retry_period.mul_f64(1.2);
    assert!(err(c).contains("--leader-election-renew-deadline"));

    let mut c = base.clone();
    c.retry_period = Duration::ZERO;
    assert!(err(c).contains("--leader-election-retry-period"));

    let mut c = base.clone();
    c.identity = String::new();
    assert_eq!(c.validate(), Err(LeaderError::EmptyIdentity));

    let d = LeaderElectionConfig::default();
    assert_eq!(d.validate(), Ok(()));
    assert!(d.identity.contains('_'));
}

#[tokio::test]
async fn always_leader_handle() {
    let h = LeaderHandle::always_leader();
    assert!(h.is_leader());
    assert!(*h.subscribe().borrow());
    assert!(h.wait_for_leadership().await);
    h.stopped().await;
}
