//! The apps.kruise.io API group.

pub mod common;
pub mod v1alpha1;
pub mod v1beta1;
