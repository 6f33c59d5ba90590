//! rollouts.kruise.io/v1beta1: the stored version of Rollout and BatchRelease.

mod batchrelease;
pub use batchrelease::*;
mod rollout;
pub use rollout::*;
