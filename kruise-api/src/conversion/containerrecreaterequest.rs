//! Placeholder: filled in by the kind's implementer.
