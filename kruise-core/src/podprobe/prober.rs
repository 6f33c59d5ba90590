//! kruise-daemon's probing of NodePodProbe probes, without IO: the daemon asks [`ProbeWorker`]
//! what to do at each tick, runs the probe it is told to, and hands back the outcome; the
//! recorded results ([`Results`]) make the NodePodProbe status ([`merge_status`]).
//!
//! Timing as upstream's daemon reads the probe (no field is defaulted by the API): the period,
//! timeout and initial delay are at least one second, and both thresholds at least one (not
//! the kubelet's 10 s period and failure threshold of 3). The initial delay counts from the
//! container's start.
//!
//! What a worker records, as upstream's:
//! - a container seen for the first time (or a new one after a restart): `Unknown`, empty;
//! - a container not running: `Failed`, `Container(<name>) is Non-running`, at once;
//! - a probe outcome once it has repeated `successThreshold` (`failureThreshold`) times;
//! - a probe that could not run (a runtime error, an exec timeout): nothing.
//!
//! Unlike upstream, results are kept per probe, not per container, so two probes of one
//! container do not overwrite each other.

use std::collections::BTreeMap;

use jiff::{SignedDuration, Timestamp};
use k8s_openapi::api::core::v1::Probe;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use kruise_api::apps::v1alpha1::{
    ContainerProbeState, NodePodProbeSpec, NodePodProbeStatus, PodProbeStatus, ProbeState,
};

/// How long a result stands before it is written again unchanged (its `lastProbeTime`
/// refreshed): upstream's ten minutes.
pub const REFRESH_AFTER: SignedDuration = SignedDuration::from_secs(600);

/// The longest message kept, in bytes, as upstream cuts it.
pub const MAX_MESSAGE_BYTES: usize = 1024;

/// How often and how patiently one probe runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ProbeTiming {
    /// Between probes.
    pub period: SignedDuration,
    /// How long one probe may take.
    pub timeout: SignedDuration,
    /// After the container started, before the first probe.
    pub initial_delay: SignedDuration,
    /// Successes in a row that make `Succeeded`.
    pub success_threshold: u32,
    /// Failures in a row that make `Failed`.
    pub failure_threshold: u32,
}

impl ProbeTiming {
    /// The timing of `probe`.
    pub fn of(probe: &Probe) -> Self {
        let seconds = |v: Option<i32>| SignedDuration::from_secs(i64::from(v.unwrap_or(0).max(1)));
        let count = |v: Option<i32>| u32::try_from(v.unwrap_or(0).max(1)).unwrap_or(1);
        Self {
            period: seconds(probe.period_seconds),
            timeout: seconds(probe.timeout_seconds),
            initial_delay: seconds(probe.initial_delay_seconds),
            success_threshold: count(probe.success_threshold),
            failure_threshold: count(probe.failure_threshold),
        }
    }
}

/// A result to record.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Outcome {
    /// Succeeded, Failed or Unknown.
    pub state: ProbeState,
    /// The probe's output or error, at most [`MAX_MESSAGE_BYTES`].
    pub message: String,
}

impl Outcome {
    /// `state` with `message`, cut to [`MAX_MESSAGE_BYTES`] on a character boundary.
    pub fn new(state: ProbeState, message: impl Into<String>) -> Self {
        Self { state, message: truncate(message.into()) }
    }
}

fn truncate(mut message: String) -> String {
    if message.len() > MAX_MESSAGE_BYTES {
        let mut end = MAX_MESSAGE_BYTES;
        while !message.is_char_boundary(end) {
            end -= 1;
        }
        message.truncate(end);
    }
    message
}

/// What the runtime says of the probed container.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ContainerView {
    /// Its runtime ID.
    pub id: String,
    /// Whether it runs.
    pub running: bool,
    /// When it started (`None`: not known).
    pub started_at: Option<Timestamp>,
}

/// What to do at a tick.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Tick {
    /// Record this at once.
    pub record: Option<Outcome>,
    /// Run the probe now, against this container ID.
    pub probe: Option<String>,
}

/// The state of one probe of one pod.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ProbeWorker {
    container_id: Option<String>,
    last: Option<ProbeState>,
    run: u32,
}

impl ProbeWorker {
    /// A worker that has seen nothing yet.
    pub fn new() -> Self {
        Self::default()
    }

    /// What to do at `now` for `container` (`None`: the runtime does not have it), the
    /// container being `container_name` in the pod.
    pub fn tick(
        &mut self,
        container_name: &str,
        container: Option<&ContainerView>,
        timing: &ProbeTiming,
        now: Timestamp,
    ) -> Tick {
        let mut tick = Tick { record: None, probe: None };
        let Some(container) = container else { return tick };
        if self.container_id.as_deref() != Some(container.id.as_str()) {
            self.container_id = Some(container.id.clone());
            self.last = None;
            self.run = 0;
            tick.record = Some(Outcome::new(ProbeState::Unknown, ""));
        }
        if !container.running {
            tick.record = Some(Outcome::new(
                ProbeState::Failed,
                format!("Container({container_name}) is Non-running"),
            ));
            return tick;
        }
        // A start time the runtime does not give holds no probe back.
        if let Some(started) = container.started_at
            && now.duration_since(started) < timing.initial_delay
        {
            return tick;
        }
        tick.probe = Some(container.id.clone());
        tick
    }

    /// The probe ran and gave `outcome`; what to record, once the thresholds are met.
    pub fn observe(&mut self, outcome: Outcome, timing: &ProbeTiming) -> Option<Outcome> {
        if self.last.as_ref() == Some(&outcome.state) {
            self.run = self.run.saturating_add(1);
        } else {
            self.last = Some(outcome.state.clone());
            self.run = 1;
        }
        let needed = if outcome.state == ProbeState::Succeeded {
            timing.success_threshold
        } else {
            timing.failure_threshold
        };
        (self.run >= needed).then_some(outcome)
    }

    /// The probe's handler changed: its results start over.
    pub fn reset(&mut self) -> Option<Outcome> {
        self.last = None;
        self.run = 0;
        self.container_id.is_some().then(|| Outcome::new(ProbeState::Unknown, ""))
    }
}

/// A recorded result.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Recorded {
    /// The outcome.
    pub outcome: Outcome,
    /// When it was last recorded (its `lastProbeTime`).
    pub at: Timestamp,
}

/// The recorded results of a node, by pod UID and probe name (`<marker>#<probe>`).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Results {
    by_probe: BTreeMap<(String, String), Recorded>,
}

impl Results {
    /// No results.
    pub fn new() -> Self {
        Self::default()
    }

    /// Records `outcome`; true when the status should be written again: a new result, a new
    /// state or message, or the same one older than [`REFRESH_AFTER`]. An unchanged result
    /// keeps its time otherwise.
    pub fn record(&mut self, pod_uid: &str, probe: &str, outcome: Outcome, now: Timestamp) -> bool {
        let key = (pod_uid.to_owned(), probe.to_owned());
        match self.by_probe.get_mut(&key) {
            Some(old) if old.outcome == outcome && now.duration_since(old.at) < REFRESH_AFTER => {
                false
            }
            Some(old) => {
                *old = Recorded { outcome, at: now };
                true
            }
            None => {
                self.by_probe.insert(key, Recorded { outcome, at: now });
                true
            }
        }
    }

    /// Forgets the result of a probe that stopped.
    pub fn forget(&mut self, pod_uid: &str, probe: &str) {
        self.by_probe.remove(&(pod_uid.to_owned(), probe.to_owned()));
    }

    /// The result of a probe.
    pub fn get(&self, pod_uid: &str, probe: &str) -> Option<&Recorded> {
        self.by_probe.get(&(pod_uid.to_owned(), probe.to_owned()))
    }

    /// How many results are kept.
    pub fn len(&self) -> usize {
        self.by_probe.len()
    }

    /// True when none is.
    pub fn is_empty(&self) -> bool {
        self.by_probe.is_empty()
    }
}

/// The NodePodProbe status from the `current` one and `results`: only probes the spec still
/// lists are kept (pods left with none are dropped); each result overwrites its probe's state,
/// message and `lastProbeTime`, and sets `lastTransitionTime` to `now` when the state changed
/// (or is new). Existing entries keep their positions; new ones are appended.
pub fn merge_status(
    spec: &NodePodProbeSpec,
    current: Option<&NodePodProbeStatus>,
    results: &Results,
    now: Timestamp,
) -> NodePodProbeStatus {
    let now_time = Time(now);
    let listed = |uid: &str, name: &str| {
        spec.pod_probes.iter().any(|p| p.uid == uid && p.probes.iter().any(|c| c.name == name))
    };
    let mut pods: Vec<PodProbeStatus> = current
        .map(|s| s.pod_probe_statuses.clone())
        .unwrap_or_default()
        .into_iter()
        .map(|mut pod| {
            pod.probe_states.retain(|s| listed(&pod.uid, &s.name));
            pod
        })
        .filter(|pod| !pod.probe_states.is_empty())
        .collect();
    for pod in &spec.pod_probes {
        for probe in &pod.probes {
            let Some(result) = results.get(&pod.uid, &probe.name) else { continue };
            let index = match pods.iter().position(|p| p.uid == pod.uid) {
                Some(i) => i,
                None => {
                    pods.push(PodProbeStatus {
                        name: pod.name.clone(),
                        namespace: pod.namespace.clone(),
                        uid: pod.uid.clone(),
                        probe_states: Vec::new(),
                    });
                    pods.len() - 1
                }
            };
            let states = &mut pods[index].probe_states;
            let probe_time = Some(Time(result.at));
            match states.iter_mut().find(|s| s.name == probe.name) {
                Some(state) => {
                    if state.state != result.outcome.state {
                        state.last_transition_time = Some(now_time.clone());
                    }
                    state.state = result.outcome.state.clone();
                    state.message = result.outcome.message.clone();
                    state.last_probe_time = probe_time;
                }
                None => states.push(ContainerProbeState {
                    name: probe.name.clone(),
                    state: result.outcome.state.clone(),
                    last_probe_time: probe_time,
                    last_transition_time: Some(now_time.clone()),
                    message: result.outcome.message.clone(),
                }),
            }
        }
    }
    NodePodProbeStatus { pod_probe_statuses: pods }
}

/// The Event reason of a result, as upstream's daemon reports it on the pod.
pub fn event_reason(state: &ProbeState) -> &'static str {
    if *state == ProbeState::Succeeded { "KruiseProbeSucceeded" } else { "KruiseProbeFailed" }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;
    use kruise_api::apps::v1alpha1::{ContainerProbe, PodProbe};

    fn at(s: i64) -> Timestamp {
        Timestamp::from_second(1_700_000_000 + s).unwrap()
    }

    fn timing(success: u32, failure: u32) -> ProbeTiming {
        ProbeTiming {
            period: SignedDuration::from_secs(1),
            timeout: SignedDuration::from_secs(1),
            initial_delay: SignedDuration::from_secs(5),
            success_threshold: success,
            failure_threshold: failure,
        }
    }

    fn running(id: &str, started: i64) -> ContainerView {
        ContainerView { id: id.into(), running: true, started_at: Some(at(started)) }
    }

    #[test]
    fn timing_has_upstream_minimums() {
        let t = ProbeTiming::of(&Probe::default());
        assert_eq!(t.period, SignedDuration::from_secs(1));
        assert_eq!(t.timeout, SignedDuration::from_secs(1));
        assert_eq!(t.initial_delay, SignedDuration::from_secs(1));
        assert_eq!((t.success_threshold, t.failure_threshold), (1, 1));
        let t = ProbeTiming::of(&Probe {
            period_seconds: Some(10),
            failure_threshold: Some(3),
            ..Probe::default()
        });
        assert_eq!(t.period, SignedDuration::from_secs(10));
        assert_eq!(t.failure_threshold, 3);
    }

    #[test]
    fn a_new_container_is_unknown_then_waits_the_initial_delay() {
        let mut w = ProbeWorker::new();
        let t = timing(1, 1);
        let tick = w.tick("main", Some(&running("c1", 0)), &t, at(2));
        assert_eq!(tick.record, Some(Outcome::new(ProbeState::Unknown, "")));
        assert_eq!(tick.probe, None);
        let tick = w.tick("main", Some(&running("c1", 0)), &t, at(5));
        assert_eq!(tick, Tick { record: None, probe: Some("c1".into()) });
        // Not found: nothing.
        assert_eq!(w.tick("main", None, &t, at(6)), Tick { record: None, probe: None });
        // A restart: Unknown again, and the delay counts from the new start.
        let tick = w.tick("main", Some(&running("c2", 10)), &t, at(11));
        assert_eq!(tick.record.unwrap().state, ProbeState::Unknown);
        assert_eq!(tick.probe, None);
        // A running container whose start the runtime does not report is probed.
        let unknown_start = ContainerView { id: "c3".into(), running: true, started_at: None };
        assert_eq!(w.tick("main", Some(&unknown_start), &t, at(12)).probe, Some("c3".into()));
    }

    #[test]
    fn a_stopped_container_fails_at_once() {
        let mut w = ProbeWorker::new();
        let stopped = ContainerView { id: "c1".into(), running: false, started_at: None };
        let tick = w.tick("main", Some(&stopped), &timing(1, 3), at(100));
        assert_eq!(
            tick.record,
            Some(Outcome::new(ProbeState::Failed, "Container(main) is Non-running"))
        );
        assert_eq!(tick.probe, None);
    }

    #[test]
    fn thresholds_count_runs_of_the_same_outcome() {
        let mut w = ProbeWorker::new();
        let t = timing(2, 3);
        let ok = || Outcome::new(ProbeState::Succeeded, "ok");
        let bad = || Outcome::new(ProbeState::Failed, "bad");
        assert_eq!(w.observe(ok(), &t), None);
        assert_eq!(w.observe(ok(), &t), Some(ok()));
        assert_eq!(w.observe(ok(), &t), Some(ok()));
        assert_eq!(w.observe(bad(), &t), None);
        assert_eq!(w.observe(bad(), &t), None);
        assert_eq!(w.observe(ok(), &t), None);
        assert_eq!(w.observe(bad(), &t), None);
        assert_eq!(w.observe(bad(), &t), None);
        assert_eq!(w.observe(bad(), &t), Some(bad()));
    }

    #[test]
    fn messages_are_cut_on_a_character_boundary() {
        let long = "é".repeat(600);
        let cut = Outcome::new(ProbeState::Succeeded, long).message;
        assert_eq!(cut.len(), 1024);
        let odd = format!("x{}", "é".repeat(600));
        assert_eq!(Outcome::new(ProbeState::Succeeded, odd).message.len(), 1023);
    }

    #[test]
    fn results_are_written_on_change_or_refresh() {
        let mut r = Results::new();
        let ok = Outcome::new(ProbeState::Succeeded, "ok");
        assert!(r.record("u1", "m#p", ok.clone(), at(0)));
        assert!(!r.record("u1", "m#p", ok.clone(), at(10)));
        assert_eq!(r.get("u1", "m#p").unwrap().at, at(0));
        assert!(r.record("u1", "m#p", Outcome::new(ProbeState::Succeeded, "other"), at(11)));
        assert!(r.record("u1", "m#p", Outcome::new(ProbeState::Failed, "other"), at(12)));
        assert!(r.record("u1", "m#p", Outcome::new(ProbeState::Failed, "other"), at(12 + 600)));
        // Two probes of one pod are two results.
        assert!(r.record("u1", "m#q", ok, at(0)));
        assert_eq!(r.len(), 2);
        r.forget("u1", "m#q");
        assert_eq!(r.len(), 1);
    }

    fn spec(entries: &[(&str, &[&str])]) -> NodePodProbeSpec {
        NodePodProbeSpec {
            pod_probes: entries
                .iter()
                .map(|(uid, probes)| PodProbe {
                    name: format!("pod-{uid}"),
                    namespace: "ns".into(),
                    uid: (*uid).into(),
                    ip: String::new(),
                    probes: probes
                        .iter()
                        .map(|n| ContainerProbe {
                            name: (*n).into(),
                            container_name: "main".into(),
                            ..Default::default()
                        })
                        .collect(),
                })
                .collect(),
        }
    }

    #[test]
    fn status_keeps_listed_probes_and_tracks_transitions() {
        let spec = spec(&[("u1", &["m#a", "m#b"]), ("u2", &["m#a"])]);
        let mut results = Results::new();
        results.record("u1", "m#a", Outcome::new(ProbeState::Succeeded, "fine"), at(1));
        results.record("u2", "m#a", Outcome::new(ProbeState::Failed, "no"), at(1));
        results.record("u3", "m#a", Outcome::new(ProbeState::Failed, "gone"), at(1));
        let first = merge_status(&spec, None, &results, at(2));
        assert_eq!(first.pod_probe_statuses.len(), 2);
        let a = &first.pod_probe_statuses[0].probe_states[0];
        assert_eq!((a.state.clone(), a.message.as_str()), (ProbeState::Succeeded, "fine"));
        assert_eq!(a.last_transition_time, Some(Time(at(2))));
        assert_eq!(a.last_probe_time, Some(Time(at(1))));
        // Same state later: the transition time stays; a changed state moves it.
        results.record("u1", "m#a", Outcome::new(ProbeState::Succeeded, "fine again"), at(5));
        results.record("u2", "m#a", Outcome::new(ProbeState::Succeeded, "yes"), at(5));
        let second = merge_status(&spec, Some(&first), &results, at(6));
        let a = &second.pod_probe_statuses[0].probe_states[0];
        assert_eq!(a.last_transition_time, Some(Time(at(2))));
        assert_eq!(a.message, "fine again");
        let b = &second.pod_probe_statuses[1].probe_states[0];
        assert_eq!(b.last_transition_time, Some(Time(at(6))));
        // A probe the spec dropped goes, and a pod left with none.
        let fewer = self::spec(&[("u1", &["m#b"])]);
        let third = merge_status(&fewer, Some(&second), &Results::new(), at(7));
        assert!(third.pod_probe_statuses.is_empty());
        // Idempotent on its own outcome.
        assert_eq!(merge_status(&spec, Some(&second), &results, at(6)), second);
    }
}
