//! Leader election between real `kruise-manager run` processes against one cluster (kruise-sim
//! in this process): only the lease holder reconciles, a crashed leader is replaced once its
//! lease expires, a leader stopped with SIGTERM releases the lease so the standby takes over at
//! once, and `--enable-leader-election=false` runs without any Lease.

use crate::common;

use std::io::{Read as _, Write as _};
use std::net::TcpStream;
use std::time::{Duration, Instant};

use common::{Kubectl, Proc, SimCluster, cloneset_yaml, wait_for};
use serde_json::Value;

const LEASE_NS: &str = "kruise-system";
const LEASE_NAME: &str = "kruise-manager";
const RECONCILE_SUCCESS: &str =
    r#"controller_runtime_reconcile_total{controller="cloneset-controller",result="success"}"#;

/// A cluster of three simulated nodes with the Kruise CRDs and the lease namespace.
struct Cluster {
    sim: SimCluster,
    kubectl: Kubectl,
}

impl Cluster {
    fn start() -> Self {
        let sim = SimCluster::start(
            kruise_sim::Config::default()
                .with_kruise_crds()
                .with_nodes(kruise_sim::nodes::NodesConfig::new(3)),
        );
        let kubectl = sim.kubectl.clone();
        // `kubectl create namespace` sends protobuf, which kruise-sim does not decode.
        let ns = format!("apiVersion: v1\nkind: Namespace\nmetadata:\n  name: {LEASE_NS}\n");
        kubectl.ok_stdin(&["create", "-f", "-"], &ns);
        Cluster { sim, kubectl }
    }

    /// The election Lease, if there is one.
    fn lease(&self) -> Option<Value> {
        let o = self
            .kubectl
            .run_with(&["get", "lease", "-n", LEASE_NS, LEASE_NAME, "-o", "json"], None);
        if !o.ok {
            assert!(o.stderr.contains("NotFound"), "kubectl get lease: {}", o.stderr);
            return None;
        }
        Some(serde_json::from_str(&o.stdout).expect("lease JSON"))
    }

    fn lease_holder(&self) -> Option<String> {
        self.lease()
            .and_then(|l| l["spec"]["holderIdentity"].as_str().map(str::to_owned))
            .filter(|h| !h.is_empty())
    }

    /// Ready, not terminating pods of CloneSet `app`, and all its live pods.
    fn pods(&self, app: &str) -> (usize, usize) {
        let list = self.kubectl.json(&["get", "pods", "-l", &format!("app={app}")]);
        let live: Vec<&Value> = list["items"]
            .as_array()
            .expect("items")
            .iter()
            .filter(|p| !p["metadata"]["deletionTimestamp"].is_string())
            .collect();
        let ready = live
            .iter()
            .filter(|p| {
                p["status"]["conditions"]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .any(|c| c["type"] == "Ready" && c["status"] == "True")
            })
            .count();
        (ready, live.len())
    }
}

/// A port nobody listens on right now.
pub(crate) fn free_port() -> u16 {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    listener.local_addr().expect("addr").port()
}

/// One `kruise-manager run` with its metrics and probe ports.
struct Manager {
    proc: Proc,
    metrics: u16,
    health: u16,
    name: &'static str,
}

impl Manager {
    fn start(cluster: &Cluster, name: &'static str, extra: &[&str]) -> Self {
        let (metrics, health) = (free_port(), free_port());
        let (metrics_addr, health_addr) =
            (format!("127.0.0.1:{metrics}"), format!("127.0.0.1:{health}"));
        let mut args = vec!["--metrics-addr", &metrics_addr, "--health-probe-addr", &health_addr];
        // Webhooks are not what this test is about (and two managers on one host would
        // register their own loopback URLs in turn); webhooks.rs covers them.
        args.extend(["--enable-webhook=false", "--log", "info,kruise_kube=debug"]);
        args.extend(extra);
        let proc = cluster.sim.run_manager(&format!("{name}.log"), &args);
        Manager { proc, metrics, health, name }
    }

    /// Panics with the log if the process has exited.
    fn assert_running(&mut self) {
        if let Ok(Some(status)) = self.proc.child.try_wait() {
            panic!("{} exited with {status}:\n{}", self.name, self.proc.log_text());
        }
    }

    /// The metrics text, or `None` when nothing answers.
    fn scrape(&self) -> Option<String> {
        let (status, body) = http_get(self.metrics, "/metrics")?;
        (status == 200).then_some(body)
    }

    /// `kruise_manager_is_leader`, or `None` when nothing answers.
    fn is_leader(&self) -> Option<bool> {
        let text = self.scrape()?;
        Some(metric(&text, "kruise_manager_is_leader").expect("is_leader gauge exported") == 1.0)
    }

    /// Successful CloneSet reconciles (0 when the series does not exist yet).
    fn reconciles(&self) -> f64 {
        let text = self.scrape().unwrap_or_else(|| panic!("{} serves no metrics", self.name));
        metric(&text, RECONCILE_SUCCESS).unwrap_or(0.0)
    }

    fn ready(&self) -> bool {
        http_get(self.health, "/readyz").is_some_and(|(status, body)| status == 200 && body == "ok")
    }

    /// The holder identity this manager campaigns with, as its log names it.
    fn identity(&mut self) -> String {
        wait_for(&format!("{}'s election identity in its log", self.name), secs(10), || {
            self.assert_running();
            let log = strip_ansi(&self.proc.log_text());
            let line = log.lines().find(|l| l.contains("starting leader election"))?;
            let rest = &line[line.find("identity=")? + "identity=".len()..];
            Some(rest.split_whitespace().next()?.trim_matches('"').to_owned())
        })
    }

    fn log(&self) -> String {
        self.proc.log_text()
    }
}

/// GET `path` from 127.0.0.1:`port` with HTTP/1.0: (status, body).
pub(crate) fn http_get(port: u16, path: &str) -> Option<(u16, String)> {
    let addr = std::net::SocketAddr::from(([127, 0, 0, 1], port));
    let mut stream = TcpStream::connect_timeout(&addr, Duration::from_millis(500)).ok()?;
    stream.set_read_timeout(Some(Duration::from_secs(2))).ok()?;
    stream.set_write_timeout(Some(Duration::from_secs(2))).ok()?;
    write!(stream, "GET {path} HTTP/1.0\r\nHost: 127.0.0.1:{port}\r\nConnection: close\r\n\r\n")
        .ok()?;
    let mut raw = Vec::new();
    stream.read_to_end(&mut raw).ok()?;
    let text = String::from_utf8_lossy(&raw);
    let (head, body) = text.split_once("\r\n\r\n")?;
    let status = head.split_whitespace().nth(1)?.parse().ok()?;
    Some((status, body.to_owned()))
}

/// The value of the sample named exactly `series` (name plus labels) in Prometheus text.
pub(crate) fn metric(text: &str, series: &str) -> Option<f64> {
    text.lines()
        .filter(|l| !l.starts_with('#'))
        .find_map(|l| l.strip_prefix(series)?.strip_prefix(' ')?.trim().parse().ok())
}

fn strip_ansi(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut chars = text.chars();
    while let Some(c) = chars.next() {
        if c == '\u{1b}' {
            // CSI: ESC [ ... final byte in @..~
            for c in chars.by_ref() {
                if ('@'..='~').contains(&c) && c != '[' {
                    break;
                }
            }
        } else {
            out.push(c);
        }
    }
    out
}

fn secs(n: u64) -> Duration {
    Duration::from_secs(n)
}

/// Polls every 50 ms until exactly one of `managers` reports leadership; asserts that two never
/// do at once. Returns the leader's index.
fn wait_for_one_leader(managers: &mut [&mut Manager], timeout: Duration) -> usize {
    let start = Instant::now();
    loop {
        for m in managers.iter_mut() {
            m.assert_running();
        }
        let states: Vec<Option<bool>> = managers.iter().map(|m| m.is_leader()).collect();
        let leaders: Vec<usize> = (0..states.len()).filter(|&i| states[i] == Some(true)).collect();
        assert!(leaders.len() <= 1, "several managers lead at once: {states:?}");
        if let [one] = leaders[..] {
            return one;
        }
        assert!(start.elapsed() < timeout, "no leader after {timeout:?}: {states:?}");
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// Waits for CloneSet `app` to have exactly `n` pods, all ready, while checking that `standby`
/// never leads nor reconciles.
fn wait_ready_with_standby(cluster: &Cluster, app: &str, n: usize, standby: Option<&Manager>) {
    wait_for(&format!("{app}: {n} ready pods"), secs(30), || {
        if let Some(s) = standby {
            assert_eq!(s.is_leader(), Some(false), "the standby {} claims to lead", s.name);
            assert_eq!(s.reconciles(), 0.0, "the standby {} reconciled", s.name);
        }
        (cluster.pods(app) == (n, n)).then_some(())
    });
    // The status follows the pods' readiness (a pod turns ready after the pod-readiness
    // controller opens its gate, and the CloneSet's status is written after that).
    wait_for(&format!("{app}: status with {n} ready"), secs(30), || {
        let status = cluster.kubectl.json(&["get", "clone", app])["status"].clone();
        (status["readyReplicas"] == n).then_some(())
    });
}

/// The Lease spec's `leaseTransitions`.
fn transitions(lease: &Value) -> i64 {
    lease["spec"]["leaseTransitions"].as_i64().unwrap_or(0)
}

#[test]
fn two_managers_only_one_reconciles_and_failover_within_lease() {
    let cluster = Cluster::start();
    let election = [
        "--leader-election-lease-duration",
        "3s",
        "--leader-election-renew-deadline",
        "2s",
        "--leader-election-retry-period",
        "500ms",
    ];
    let mut a = Manager::start(&cluster, "manager-a", &election);
    let mut b = Manager::start(&cluster, "manager-b", &election);
    let ids = [a.identity(), b.identity()];
    assert_ne!(ids[0], ids[1], "both managers campaign as the same identity");

    let first = wait_for_one_leader(&mut [&mut a, &mut b], secs(15));
    let (mut leader, mut standby) = if first == 0 { (a, b) } else { (b, a) };
    let leader_id = ids[first].clone();
    let standby_id = ids[1 - first].clone();
    eprintln!("first leader: {} ({leader_id})", leader.name);
    assert_eq!(cluster.lease_holder().as_deref(), Some(leader_id.as_str()), "Lease holder");
    wait_for("both managers ready", secs(15), || (leader.ready() && standby.ready()).then_some(()));
    wait_for("the leader's controllers", secs(10), || {
        leader.log().contains("leading: starting controllers").then_some(())
    });

    // Only the leader reconciles.
    cluster.kubectl.ok_stdin(&["apply", "-f", "-"], &cloneset_yaml("web", 4, ""));
    wait_ready_with_standby(&cluster, "web", 4, Some(&standby));
    assert!(leader.reconciles() > 0.0, "the leader never reconciled:\n{}", leader.log());
    // A moment later the standby still has done nothing.
    std::thread::sleep(Duration::from_millis(700));
    assert_eq!(standby.is_leader(), Some(false));
    assert_eq!(standby.reconciles(), 0.0, "the standby reconciled:\n{}", standby.log());
    assert!(!standby.log().contains("leading: starting controllers"), "{}", standby.log());
    assert_eq!(cluster.lease_holder().as_deref(), Some(leader_id.as_str()));

    // Crash the leader: no release, so the standby must wait out the lease.
    let before = cluster.lease().expect("lease");
    leader.proc.kill();
    let killed = Instant::now();
    // Only the outcome is checked here (wall time belongs in benches): the standby takes
    // over, and not before the lease it saw last expired.
    let deadline = Duration::from_secs(60);
    loop {
        standby.assert_running();
        if standby.is_leader() == Some(true) {
            break;
        }
        assert!(
            killed.elapsed() < deadline,
            "the standby did not take over within {deadline:?}:\n{}",
            standby.log()
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    let failover = killed.elapsed();
    eprintln!("failover after SIGKILL: {failover:?} (lease 3s, retry 0.5s)");
    let after = cluster.lease().expect("lease");
    // The standby waited for the lease to expire: by the API server's own clock, it acquired
    // the lease no sooner than the last renewal it could have seen plus the lease duration.
    let time = |lease: &serde_json::Value, field: &str| -> jiff::Timestamp {
        lease["spec"][field].as_str().and_then(|t| t.parse().ok()).expect("a lease time")
    };
    let expired = time(&before, "renewTime") + jiff::SignedDuration::from_secs(3);
    assert!(
        time(&after, "acquireTime") >= expired,
        "the standby took a live lease: acquired {} before {expired}:\n{}",
        time(&after, "acquireTime"),
        standby.log()
    );
    assert_eq!(after["spec"]["holderIdentity"], standby_id.as_str(), "Lease after failover");
    assert_eq!(transitions(&after), transitions(&before) + 1, "leaseTransitions");
    wait_for("the new leader's controllers", secs(5), || {
        standby.log().contains("leading: starting controllers").then_some(())
    });

    // The new leader reconciles: scale up.
    let counted = standby.reconciles();
    cluster.kubectl.ok(&["scale", "clone", "web", "--replicas=6"]);
    wait_ready_with_standby(&cluster, "web", 6, None);
    assert!(standby.reconciles() > counted, "the new leader did not reconcile the scale-up");
    assert_eq!(standby.is_leader(), Some(true));
    assert_eq!(cluster.lease_holder().as_deref(), Some(standby_id.as_str()));
}

#[test]
fn sigterm_releases_the_lease_for_a_fast_handover() {
    let cluster = Cluster::start();
    let election = [
        "--leader-election-lease-duration",
        "10s",
        "--leader-election-renew-deadline",
        "5s",
        "--leader-election-retry-period",
        "1s",
    ];
    let mut a = Manager::start(&cluster, "manager-a", &election);
    let mut b = Manager::start(&cluster, "manager-b", &election);
    let ids = [a.identity(), b.identity()];
    let first = wait_for_one_leader(&mut [&mut a, &mut b], secs(20));
    let (mut leader, mut standby) = if first == 0 { (a, b) } else { (b, a) };
    let leader_id = ids[first].clone();
    let standby_id = ids[1 - first].clone();
    assert_eq!(cluster.lease_holder().as_deref(), Some(leader_id.as_str()));
    // A real standby: ready, and it has seen the lease held (so without a release it would
    // wait out the 10 s lease).
    wait_for("both managers ready", secs(15), || (leader.ready() && standby.ready()).then_some(()));
    wait_for("the standby to see the lease held", secs(10), || {
        standby.log().contains("lease is held by another candidate").then_some(())
    });
    assert_eq!(standby.is_leader(), Some(false));
    let before = cluster.lease().expect("lease");
    assert_eq!(before["spec"]["holderIdentity"], leader_id.as_str());

    let asked = Instant::now();
    let status = leader.proc.terminate();
    assert!(status.success(), "the leader exited with {status}:\n{}", leader.log());
    let exited = asked.elapsed();
    // Released before it exited: the Lease no longer names it.
    let released = cluster.lease().expect("lease");
    assert_ne!(
        released["spec"]["holderIdentity"],
        leader_id.as_str(),
        "the Lease still names the stopped leader:\n{}",
        leader.log()
    );
    assert!(leader.log().contains("released leader lease"), "{}", leader.log());

    // The outcome only (wall time belongs in benches): the lease released before exit, then
    // taken by the standby.
    let handover = Duration::from_secs(60);
    loop {
        standby.assert_running();
        if standby.is_leader() == Some(true) {
            break;
        }
        assert!(
            asked.elapsed() < handover,
            "the standby did not take over within {handover:?} of SIGTERM:\n{}",
            standby.log()
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    eprintln!(
        "SIGTERM handover: leader exited after {exited:?}, standby led after {:?}",
        asked.elapsed()
    );
    let after = cluster.lease().expect("lease");
    assert_eq!(after["spec"]["holderIdentity"], standby_id.as_str(), "Lease after handover");
    assert_eq!(after["spec"]["leaseDurationSeconds"], 10, "the new holder's duration");
    assert_eq!(transitions(&after), transitions(&before) + 1, "leaseTransitions");
}

#[test]
fn leader_election_disabled_runs_alone() {
    let cluster = Cluster::start();
    let mut m = Manager::start(&cluster, "manager", &["--enable-leader-election=false"]);
    let started = Instant::now();
    wait_for("the manager to serve metrics", secs(10), || {
        m.assert_running();
        m.scrape().map(|_| ())
    });
    // It leads from the start: no campaign at all.
    wait_for("kruise_manager_is_leader 1", secs(2), || (m.is_leader() == Some(true)).then_some(()));
    wait_for("ready and leading", secs(10), || {
        (m.ready() && m.log().contains("leading: starting controllers")).then_some(())
    });
    eprintln!("leading without election after {:?}", started.elapsed());
    assert!(!m.log().contains("starting leader election"), "{}", m.log());

    cluster.kubectl.ok_stdin(&["apply", "-f", "-"], &cloneset_yaml("solo", 2, ""));
    wait_ready_with_standby(&cluster, "solo", 2, None);
    assert!(m.reconciles() > 0.0);

    // No Lease, in the election namespace or anywhere else under that name.
    assert!(cluster.lease().is_none(), "a Lease was written: {:?}", cluster.lease());
    let all = cluster.kubectl.json(&["get", "leases", "-A"]);
    let names: Vec<String> = all["items"]
        .as_array()
        .expect("items")
        .iter()
        .map(|l| format!("{}/{}", l["metadata"]["namespace"], l["metadata"]["name"]))
        .collect();
    assert!(!names.iter().any(|n| n.contains(LEASE_NAME) || n.contains(LEASE_NS)), "{names:?}");

    let status = m.proc.terminate();
    assert!(status.success(), "exit {status}:\n{}", m.log());
}
