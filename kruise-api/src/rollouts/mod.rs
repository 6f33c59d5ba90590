//! The rollouts.kruise.io API group (Kruise Rollout): progressive delivery over existing
//! workloads. Rollout and BatchRelease are served at v1alpha1 and v1beta1 (stored);
//! TrafficRouting and RolloutHistory at v1alpha1 only.

pub mod gateway;
pub mod v1alpha1;
pub mod v1beta1;
