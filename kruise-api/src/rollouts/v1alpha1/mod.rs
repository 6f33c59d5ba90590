//! rollouts.kruise.io/v1alpha1: the original Rollout API, still served and converted to and
//! from the stored v1beta1 form. TrafficRouting and RolloutHistory exist only here.

mod batchrelease;
pub use batchrelease::*;
mod rollout;
pub use rollout::*;
mod rollouthistory;
pub use rollouthistory::*;
mod trafficrouting;
pub use trafficrouting::*;
