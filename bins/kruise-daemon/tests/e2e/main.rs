//! kruise-daemon's tests against kruise-sim's API server: the binary under the helm chart's
//! RBAC (`chart_rbac`), the workers in process over
//! `FakeRuntime` (`fake`), the binary over a real containerd (`containerd`), and the binary's
//! memory with 100 pods on its node over the fake runtime served as a CRI socket (`memory`).
#![allow(clippy::unwrap_used)]

mod chart_rbac;
mod common;
mod containerd;
mod fake;
mod memory;
