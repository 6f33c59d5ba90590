//! policy.kruise.io/v1alpha1: the original version, served and converted to v1beta1.
mod podunavailablebudget;
pub use podunavailablebudget::*;
