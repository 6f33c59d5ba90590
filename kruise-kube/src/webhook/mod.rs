//! The HTTPS webhook server (in progress).
