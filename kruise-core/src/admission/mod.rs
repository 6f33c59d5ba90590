//! Admission's base layer: what every kind's defaulting and validation is built from, as the
//! upstream OpenKruise webhooks do them, as pure functions over API objects. Each kind's own
//! admission lives with its kind (`cloneset::admission`, `statefulset::admission`,
//! `daemonset::admission`, `sidecarset::admission`, `workloadspread::admission`,
//! `imagepull::admission`, `pub_budget::validation`, `containerrecreate::default_crr`); nothing
//! here knows a kind.
//!
//! - [`field`] (the base [`crate::field`]): field paths and field errors printed exactly as
//!   Kubernetes prints them, and Go's rendering of offending values. Every validator returns
//!   [`field::FieldErrors`].
//! - [`names`] (the base [`crate::names`]): the string formats Kubernetes checks (qualified
//!   names, label values, DNS labels and subdomains, ports, environment variable names, ...).
//! - [`meta`]: object metadata (create and update), labels, annotations, owner references,
//!   finalizers and label selector validation (parsing and matching: [`crate::selector`]).
//! - [`pod_chain`]: the pod mutating webhook as one chain of steps in upstream's order.
//! - [`pod_scope`]: the pod mutating webhook's entries, generated from the objects that act
//!   on pods, and the writes that keep them current.
//! - [`pod_edit`]: a pod as the chain's steps change it, with a record of what they changed.
//! - [`pod_defaults`]: the pod template defaults upstream applies (so revision hashes agree).
//! - [`pod_template`]: pod template validation (`ValidatePodTemplateSpec`).
//! - [`workload_spec`]: the selector, template and strategy checks workload kinds share.
//! - [`protection`]: the `policy.kruise.io/delete-protection` deletion guard.
//!
//! Nothing here reads the clock or the cluster: what a check needs from the cluster (pods
//! named in `podsToDelete`, dependents of an object being deleted, the other
//! PodUnavailableBudgets of a namespace) is passed in as data.

pub mod image_pull_template;
pub mod meta;
pub mod pod_chain;
pub(crate) mod pod_constraints;
pub mod pod_defaults;
pub mod pod_edit;
pub mod pod_patch;
pub mod pod_scope;
pub mod pod_template;
pub mod protection;
pub mod workload_spec;

/// Field paths and string formats are base modules of their own ([`crate::field`],
/// [`crate::names`]); these paths are kept for callers.
pub use crate::{field, names};

pub use field::{BadValue, FieldError, FieldErrorKind, FieldErrors, FieldPath};
