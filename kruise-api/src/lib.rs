//! # kruise-api
//!
//! The OpenKruise API in Rust: typed, wire-compatible definitions of every apps.kruise.io
//! and policy.kruise.io custom resource, and of Kruise Rollout's rollouts.kruise.io ones, at
//! every served version, with CRD generation and lossless v1alpha1 <-> v1beta1 conversion.
//!
//! - Typed kinds live at `kruise_api::<group>::<version>::<Kind>`, for example
//!   [`apps::v1beta1::CloneSet`], `policy::v1alpha1::PodUnavailableBudget` or
//!   [`rollouts::v1beta1::Rollout`].
//! - [`KruiseObject`] decodes any Kruise document by its `apiVersion` and `kind`, and
//!   encodes back to the same JSON.
//! - [`crds()`] returns every CustomResourceDefinition, versions merged as upstream ships them.
//! - [`conversion`] converts between versions without losing fields.
//! - [`well_known`] lists the labels, annotations, finalizers and env vars upstream uses.
//!
//! The JSON encoding follows upstream's Go types exactly: fields Go tags `omitempty` are left
//! out when empty, fields it does not are always written, int-or-string and quantities keep
//! their form, and string enumerations keep values this crate does not know.

#![forbid(unsafe_code)]

pub mod apps;
pub mod conversion;
pub mod crd;
pub mod embedded;
pub mod object;
pub mod policy;
mod registry;
pub mod rollouts;
pub mod well_known;
mod wire;

pub use embedded::{Embedded, FilledFields, Verbatim};
pub use object::DecodeError;
pub use registry::{KruiseObject, crds};
