//! kruise-manager end to end: the manager binary against kruise-sim, driven by the real kubectl.
//!
//! One test binary for every suite keeps the build small.

mod common;

mod advancedcronjob;
mod broadcastjob;
mod chart;
mod cloneset;
mod crds_cli;
mod daemon_manager;
mod daemon_playground;
mod daemonset;
mod enhanced_liveness;
mod ephemeraljob;
mod image;
mod launch_priority;
mod leader_failover;
mod persistentpodstate;
mod playground;
mod podprobemarker;
mod pub_budget;
mod readiness;
mod resourcedistribution;
mod restart;
mod rollout;
mod sidecar_terminator;
mod sidecarset;
mod soak;
mod statefulset;
mod switches;
mod takeover;
mod uniteddeployment;
mod webhooks;
mod workloadspread;
