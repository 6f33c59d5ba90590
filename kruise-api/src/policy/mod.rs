//! The policy.kruise.io API group.

pub mod v1alpha1;
pub mod v1beta1;
