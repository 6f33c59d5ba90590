//! Admission: validation, defaulting and deletion protection for kruise workloads, as the
//! upstream webhooks do them, as pure functions over API objects.
