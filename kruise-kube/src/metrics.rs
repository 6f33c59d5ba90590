//! Prometheus metrics under the names controller-runtime and client-go export, so existing
//! OpenKruise dashboards and alerts keep working.
//!
//! Everything lives in one [`Registry`] owned by [`Metrics`]; clones share it. [`Metrics::encode`]
//! renders the OpenMetrics text exposition served on `/metrics` (see [`crate::health`]).
//!
//! Counters are registered without the `_total` suffix because prometheus-client appends it
//! when encoding; the exposed sample names are the upstream ones.

use std::sync::Arc;
use std::time::Duration;

use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::Histogram;
use prometheus_client::registry::Registry;

/// The content type of [`Metrics::encode`]'s output (OpenMetrics text 1.0.0).
pub const CONTENT_TYPE: &str = "application/openmetrics-text; version=1.0.0; charset=utf-8";

/// Buckets of `controller_runtime_reconcile_time_seconds`, as controller-runtime defines them.
const RECONCILE_TIME_BUCKETS: [f64; 40] = [
    0.005, 0.01, 0.025, 0.05, 0.1, 0.15, 0.2, 0.25, 0.3, 0.35, 0.4, 0.45, 0.5, 0.6, 0.7, 0.8, 0.9,
    1.0, 1.25, 1.5, 1.75, 2.0, 2.5, 3.0, 3.5, 4.0, 4.5, 5.0, 6.0, 7.0, 8.0, 9.0, 10.0, 15.0, 20.0,
    25.0, 30.0, 40.0, 50.0, 60.0,
];

/// The outcome of one reconcile, as controller-runtime labels it.
#[non_exhaustive]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ReconcileResult {
    /// The reconcile succeeded and asked for nothing more (`success`).
    Success,
    /// The reconcile returned an error (`error`).
    Error,
    /// The reconcile asked to be requeued with backoff (`requeue`).
    Requeue,
    /// The reconcile asked to be requeued after a fixed delay (`requeue_after`).
    RequeueAfter,
}

impl ReconcileResult {
    /// Every result, in label order; used to pre-create zero-valued series.
    pub const ALL: [ReconcileResult; 4] =
        [Self::Success, Self::Error, Self::Requeue, Self::RequeueAfter];

    /// The `result` label value controller-runtime uses for this outcome.
    pub fn as_label(self) -> &'static str {
        match self {
            Self::Success => "success",
            Self::Error => "error",
            Self::Requeue => "requeue",
            Self::RequeueAfter => "requeue_after",
        }
    }
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct ControllerLabels {
    controller: String,
}

/// Upstream's PodUnavailableBudget refusal labels: the pod's workload as
/// `<kind>_<namespace>_<name>` and who asked.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct PubRefusalLabels {
    kind_namespace_name: String,
    username: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct ControllerResultLabels {
    controller: String,
    result: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct QueueLabels {
    name: String,
}

type HistogramFamily<L> = Family<L, Histogram, fn() -> Histogram>;

fn reconcile_time_histogram() -> Histogram {
    Histogram::new(RECONCILE_TIME_BUCKETS)
}

/// The process's metrics registry with controller-runtime's metric families.
///
/// Cheap to clone; clones record into the same registry.
#[derive(Clone)]
pub struct Metrics {
    registry: Arc<Registry>,
    reconcile_total: Family<ControllerResultLabels, Counter>,
    reconcile_errors_total: Family<ControllerLabels, Counter>,
    reconcile_time_seconds: HistogramFamily<ControllerLabels>,
    active_workers: Family<ControllerLabels, Gauge>,
    queue_depth: Family<QueueLabels, Gauge>,
    queue_adds_total: Family<QueueLabels, Counter>,
    queue_retries_total: Family<QueueLabels, Counter>,
    is_leader: Gauge,
    pub_refusals: Family<PubRefusalLabels, Counter>,
}

impl std::fmt::Debug for Metrics {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Metrics").finish_non_exhaustive()
    }
}

impl Default for Metrics {
    fn default() -> Self {
        Self::new()
    }
}

impl Metrics {
    /// Creates a registry with every family registered and no series yet.
    pub fn new() -> Self {
        let mut registry = Registry::default();
        let reconcile_total = Family::<ControllerResultLabels, Counter>::default();
        registry.register(
            "controller_runtime_reconcile",
            "Total number of reconciliations per controller",
            reconcile_total.clone(),
        );
        let reconcile_errors_total = Family::<ControllerLabels, Counter>::default();
        registry.register(
            "controller_runtime_reconcile_errors",
            "Total number of reconciliation errors per controller",
            reconcile_errors_total.clone(),
        );
        let reconcile_time_seconds: HistogramFamily<ControllerLabels> =
            Family::new_with_constructor(reconcile_time_histogram);
        registry.register(
            "controller_runtime_reconcile_time_seconds",
            "Length of time per reconciliation per controller",
            reconcile_time_seconds.clone(),
        );
        let active_workers = Family::<ControllerLabels, Gauge>::default();
        registry.register(
            "controller_runtime_active_workers",
            "Number of currently used workers per controller",
            active_workers.clone(),
        );
        let queue_depth = Family::<QueueLabels, Gauge>::default();
        registry.register("workqueue_depth", "Current depth of workqueue", queue_depth.clone());
        let queue_adds_total = Family::<QueueLabels, Counter>::default();
        registry.register(
            "workqueue_adds",
            "Total number of adds handled by workqueue",
            queue_adds_total.clone(),
        );
        let queue_retries_total = Family::<QueueLabels, Counter>::default();
        registry.register(
            "workqueue_retries",
            "Total number of retries handled by workqueue",
            queue_retries_total.clone(),
        );
        let is_leader = Gauge::default();
        registry.register(
            "kruise_manager_is_leader",
            "Whether this manager currently holds the leader lease (1) or not (0)",
            is_leader.clone(),
        );
        let pub_refusals = Family::<PubRefusalLabels, Counter>::default();
        registry.register(
            "pod_unavailable_budget",
            "Pod operations refused by a PodUnavailableBudget, by the pod's workload and the requester",
            pub_refusals.clone(),
        );
        Self {
            registry: Arc::new(registry),
            reconcile_total,
            reconcile_errors_total,
            reconcile_time_seconds,
            active_workers,
            queue_depth,
            queue_adds_total,
            queue_retries_total,
            is_leader,
            pub_refusals,
        }
    }

    /// Creates the zero-valued series of one controller (every `result`, the error counter and
    /// the worker gauge), as controller-runtime does when a controller starts, so rates exist
    /// before the first reconcile.
    pub fn init_controller(&self, controller: &str) {
        // `get_or_create` creates the series; its read guard is not needed.
        for result in ReconcileResult::ALL {
            drop(self.reconcile_total.get_or_create(&controller_result(controller, result)));
        }
        let labels = controller_labels(controller);
        drop(self.reconcile_errors_total.get_or_create(&labels));
        drop(self.active_workers.get_or_create(&labels));
    }

    /// Records one finished reconcile: `controller_runtime_reconcile_total{controller,result}`,
    /// `controller_runtime_reconcile_time_seconds{controller}` and, for
    /// [`ReconcileResult::Error`], `controller_runtime_reconcile_errors_total{controller}`.
    pub fn reconcile(&self, controller: &str, result: ReconcileResult, elapsed: Duration) {
        self.reconcile_total.get_or_create(&controller_result(controller, result)).inc();
        let labels = controller_labels(controller);
        if result == ReconcileResult::Error {
            self.reconcile_errors_total.get_or_create(&labels).inc();
        }
        self.reconcile_time_seconds.get_or_create(&labels).observe(elapsed.as_secs_f64());
    }

    /// Sets `workqueue_depth{name}`.
    pub fn set_queue_depth(&self, queue: &str, depth: usize) {
        let depth = i64::try_from(depth).unwrap_or(i64::MAX);
        self.queue_depth.get_or_create(&queue_labels(queue)).set(depth);
    }

    /// Counts one add in `workqueue_adds_total{name}`.
    pub fn queue_add(&self, queue: &str) {
        self.queue_adds_total.get_or_create(&queue_labels(queue)).inc();
    }

    /// Counts one retry (delayed or rate-limited add) in `workqueue_retries_total{name}`.
    pub fn queue_retry(&self, queue: &str) {
        self.queue_retries_total.get_or_create(&queue_labels(queue)).inc();
    }

    /// Counts one pod operation a PodUnavailableBudget refused, in
    /// `pod_unavailable_budget_total{kind_namespace_name, username}` (upstream's
    /// `pod_unavailable_budget`; OpenMetrics names a counter with `_total`).
    pub fn pub_refusal(&self, kind_namespace_name: &str, username: &str) {
        let labels = PubRefusalLabels {
            kind_namespace_name: kind_namespace_name.to_owned(),
            username: username.to_owned(),
        };
        self.pub_refusals.get_or_create(&labels).inc();
    }

    /// Sets `kruise_manager_is_leader` to 1 or 0.
    pub fn set_leader(&self, leader: bool) {
        self.is_leader.set(i64::from(leader));
    }

    /// Sets `controller_runtime_active_workers{controller}`.
    pub fn set_active_workers(&self, controller: &str, n: i64) {
        self.active_workers.get_or_create(&controller_labels(controller)).set(n);
    }

    /// Renders every metric in the OpenMetrics text format (content type [`CONTENT_TYPE`]).
    pub fn encode(&self) -> String {
        let mut out = String::new();
        // Writing into a String cannot fail, and our label sets encode infallibly; should the
        // encoder still report an error, serve what was written rather than nothing.
        if let Err(err) = prometheus_client::encoding::text::encode(&mut out, &self.registry) {
            tracing::warn!(%err, "encoding metrics failed");
        }
        out
    }
}

fn controller_labels(controller: &str) -> ControllerLabels {
    ControllerLabels { controller: controller.to_owned() }
}

fn controller_result(controller: &str, result: ReconcileResult) -> ControllerResultLabels {
    ControllerResultLabels {
        controller: controller.to_owned(),
        result: result.as_label().to_owned(),
    }
}

fn queue_labels(queue: &str) -> QueueLabels {
    QueueLabels { name: queue.to_owned() }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn has_line(text: &str, line: &str) -> bool {
        text.lines().any(|l| l == line)
    }

    #[test]
    fn reconcile_counts_results_errors_and_time() {
        let m = Metrics::new();
        m.reconcile("cloneset", ReconcileResult::Success, Duration::from_millis(3));
        m.reconcile("cloneset", ReconcileResult::Success, Duration::from_millis(200));
        m.reconcile("cloneset", ReconcileResult::Error, Duration::from_secs(2));
        m.reconcile("cloneset", ReconcileResult::RequeueAfter, Duration::from_secs(100));
        let text = m.encode();

        assert!(has_line(&text, "# TYPE controller_runtime_reconcile counter"), "{text}");
        assert!(has_line(
            &text,
            r#"controller_runtime_reconcile_total{controller="cloneset",result="success"} 2"#
        ));
        assert!(has_line(
            &text,
            r#"controller_runtime_reconcile_total{controller="cloneset",result="error"} 1"#
        ));
        assert!(has_line(
            &text,
            r#"controller_runtime_reconcile_total{controller="cloneset",result="requeue_after"} 1"#
        ));
        assert!(has_line(
            &text,
            r#"controller_runtime_reconcile_errors_total{controller="cloneset"} 1"#
        ));

        assert!(has_line(&text, "# TYPE controller_runtime_reconcile_time_seconds histogram"));
        assert!(has_line(
            &text,
            r#"controller_runtime_reconcile_time_seconds_count{controller="cloneset"} 4"#
        ));
        let sum_line = text
            .lines()
            .find(|l| l.starts_with("controller_runtime_reconcile_time_seconds_sum{"))
            .unwrap_or_default();
        let sum: f64 = sum_line.rsplit(' ').next().unwrap_or_default().parse().unwrap_or(-1.0);
        assert!((sum - 102.203).abs() < 1e-9, "{sum_line}");
        // Cumulative buckets: 3ms falls in le=0.005, 200ms in le=0.2, 2s in le=2.0, 100s only +Inf.
        for (le, n) in [("0.005", 1), ("0.2", 2), ("2.0", 3), ("60.0", 3), ("+Inf", 4)] {
            let line = format!(
                r#"controller_runtime_reconcile_time_seconds_bucket{{le="{le}",controller="cloneset"}} {n}"#
            );
            assert!(has_line(&text, &line), "missing {line} in\n{text}");
        }
        let buckets = text
            .lines()
            .filter(|l| l.starts_with("controller_runtime_reconcile_time_seconds_bucket{"))
            .count();
        assert_eq!(buckets, RECONCILE_TIME_BUCKETS.len() + 1);
        assert!(text.ends_with("# EOF\n"));
    }

    #[test]
    fn non_error_results_do_not_count_errors() {
        let m = Metrics::new();
        m.reconcile("sidecarset", ReconcileResult::Requeue, Duration::ZERO);
        let text = m.encode();
        assert!(has_line(
            &text,
            r#"controller_runtime_reconcile_total{controller="sidecarset",result="requeue"} 1"#
        ));
        assert!(!text.contains("controller_runtime_reconcile_errors_total{"), "{text}");
    }

    #[test]
    fn init_controller_creates_zero_series() {
        let m = Metrics::new();
        m.init_controller("cloneset");
        let text = m.encode();
        for result in ["success", "error", "requeue", "requeue_after"] {
            let line = format!(
                r#"controller_runtime_reconcile_total{{controller="cloneset",result="{result}"}} 0"#
            );
            assert!(has_line(&text, &line), "missing {line}");
        }
        assert!(has_line(
            &text,
            r#"controller_runtime_reconcile_errors_total{controller="cloneset"} 0"#
        ));
        assert!(has_line(&text, r#"controller_runtime_active_workers{controller="cloneset"} 0"#));
    }

    #[test]
    fn queue_leader_and_worker_gauges() {
        let m = Metrics::new();
        let clone = m.clone();
        m.set_queue_depth("cloneset", 7);
        m.set_queue_depth("cloneset", 3);
        clone.queue_add("cloneset");
        clone.queue_add("cloneset");
        m.queue_retry("cloneset");
        m.set_active_workers("cloneset", 2);
        let text = m.encode();
        assert!(has_line(&text, "# TYPE workqueue_depth gauge"));
        assert!(has_line(&text, r#"workqueue_depth{name="cloneset"} 3"#), "{text}");
        assert!(has_line(&text, r#"workqueue_adds_total{name="cloneset"} 2"#));
        assert!(has_line(&text, r#"workqueue_retries_total{name="cloneset"} 1"#));
        assert!(has_line(&text, r#"controller_runtime_active_workers{controller="cloneset"} 2"#));
        assert!(has_line(&text, "kruise_manager_is_leader 0"));

        clone.set_leader(true);
        assert!(has_line(&m.encode(), "kruise_manager_is_leader 1"));
        m.set_leader(false);
        assert!(has_line(&m.encode(), "kruise_manager_is_leader 0"));
    }

    #[test]
    fn result_labels_match_controller_runtime() {
        let labels: Vec<_> = ReconcileResult::ALL.iter().map(|r| r.as_label()).collect();
        assert_eq!(labels, ["success", "error", "requeue", "requeue_after"]);
    }
}
