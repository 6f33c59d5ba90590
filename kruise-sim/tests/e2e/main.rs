//! kruise-sim end to end: the real kubectl, kube-rs clients and webhooks against an in-process server.
//!
//! One test binary for every suite keeps the build small: each binary links the whole server.

mod common;

mod admission;
mod admission_more;
mod apply;
mod container_env;
mod conversion;
mod crds;
mod cronjob;
mod daemonset;
mod deployment;
mod disruption;
mod endpointslice;
mod events_one_store;
mod exec;
mod faults;
mod field_validation;
mod gc;
mod ingress;
mod job;
mod kube_client;
mod kubectl;
mod nodes;
mod object_meta;
mod openapi_explain;
mod pod_validation;
mod protobuf;
mod replicaset;
mod smp_corpus;
mod statefulset;
mod webhook_configuration;
