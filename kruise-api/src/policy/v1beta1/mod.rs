//! policy.kruise.io/v1beta1: the stored version.
mod podunavailablebudget;
pub use podunavailablebudget::*;
