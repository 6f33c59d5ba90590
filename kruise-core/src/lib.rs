//! # kruise-core
//!
//! The pure heart of kruise-rs: planners that take a snapshot of the cluster (objects, `now`,
//! expectations) and return what to do as data. Nothing here performs I/O, spawns tasks, talks
//! to an API server or reads the clock; `now` is always an argument, so the same snapshot and
//! `now` always give the same plan. kruise-kube feeds snapshots in and applies the plans.
//!
//! Base layer (what every kind uses):
//!
//! - [`intstr`]: int-or-percent arithmetic with Kubernetes' rounding.
//! - [`field`]: field paths and field errors printed as Kubernetes prints them.
//! - [`names`]: the string formats Kubernetes checks (qualified names, label values, ...).
//! - [`node_affinity`]: node facts, node affinity and tolerations.
//! - [`selector`]: label selectors: parsing, matching, the string form (the one implementation).
//! - [`http_get`]: the request an `httpGet` action (probe or hook) names.
//! - [`smp`]: strategic merge patch for Pods and PodTemplateSpecs (create and apply).
//! - [`revision`]: ControllerRevisions of workload templates: data, hashing, naming, matching.
//! - [`inplace`]: whether and how a pod can be updated in place, and when that has finished.
//! - [`ordinal`]: ordinals: reserved ranges, replica ordinals, pod and claim names.
//! - [`ordering`]: update priority and scatter ordering.
//! - [`lifecycle`]: the lifecycle hook state machine.
//! - [`pod`]: pod readiness and availability.
//! - [`enhanced_liveness`]: the enhanced liveness probe's webhook step and saved probes.
//! - [`sidecar_terminator`]: the Job sidecar terminator's plan.
//! - [`launch_priority`]: container launch priority: the webhook step and the barrier
//!   controller's plan.
//! - [`readiness`]: the `KruisePodReady` readiness gate: which pods get it, and the
//!   condition that opens it.
//! - [`expectations`]: in-flight creations, deletions and updates the cache has not seen yet.
//! - [`workload`]: what every workload planner shares: the action vocabulary, the plan and
//!   the expectation gates.
//! - [`cloneset`]: the CloneSet planner.
//! - [`cron`]: cron schedules with robfig/cron v3 semantics (CronJob, AdvancedCronJob).
//! - [`statefulset`]: the Advanced StatefulSet planner.
//! - [`daemonset`]: the Advanced DaemonSet planner and node eligibility.
//! - [`pub_budget`]: PodUnavailableBudget coverage, admission decisions and status.
//! - [`sidecarset`]: SidecarSet injection into new pods, its hashes and an index of
//!   SidecarSets by selector.
//! - [`workloadspread`]: WorkloadSpread subset selection, reservation and injection at pod
//!   admission, and its controller's plan.
//! - [`containerrecreate`]: ContainerRecreateRequest defaulting, the controller's plan, one
//!   request per pod at a time, and the daemon's recreate plan.
//! - [`persistentpodstate`]: PersistentPodState: its records, its generation from workload
//!   annotations, the pod webhook step and validation.
//! - [`podprobe`]: PodProbeMarker and NodePodProbe: validation, the per-node fan-out and
//!   markers, the marker's status, and the daemon's prober state.
//! - [`image`]: container image references (docker's normalised grammar).
//! - [`imagepull`]: ImagePullJob, ImageListPullJob and NodeImage planners, and the daemon's
//!   image puller plan.

#![forbid(unsafe_code)]

pub mod admission;
pub mod admission_review;
pub mod advancedcronjob;
pub mod broadcastjob;
pub mod cloneset;
pub mod containerrecreate;
pub mod cron;
pub mod custom_workload;
pub mod daemonset;
pub mod enhanced_liveness;
pub mod ephemeraljob;
pub mod expectations;
pub mod field;
pub mod forecast;
pub mod http_get;
pub mod image;
pub mod imagepull;
pub mod inplace;
pub mod intstr;
pub mod launch_priority;
pub mod lifecycle;
pub mod merge_patch;
pub mod names;
pub mod node_affinity;
pub mod ordering;
pub mod ordinal;
pub mod persistentpodstate;
pub mod pod;
pub mod podprobe;
/// The one plan shape every planner returns, and its action vocabulary
/// ([`workload::plan`](crate::workload::Plan) under its own name).
pub mod plan {
    pub use crate::workload::{
        Action, Blocked, DeletePurpose, Event, EventType, Guard, NewPod, NodePin, ObjectKind,
        Patch, Plan, PodPatchPurpose, PodStatusPurpose, Subresource, Target,
    };
}
pub mod pub_budget;
pub mod readiness;
pub mod resourcedistribution;
pub mod revision;
pub mod rollout;
pub mod rollouts;
pub mod selector;
pub mod sidecar_terminator;
pub mod sidecarset;
pub mod smp;
pub mod statefulset;
pub mod uniteddeployment;
pub mod workload;
pub mod workloadspread;
