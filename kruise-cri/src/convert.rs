//! Between the crate's types and the CRI v1 messages, both ways (the client reads the
//! runtime's answers; the fake server writes them).

use std::collections::HashMap;

use crate::proto as pb;
use tonic::{Code, Status};

use crate::error::{CriError, ErrorKind};
use crate::types::{
    Container, ContainerConfig, ContainerFilter, ContainerState, ContainerStatus, ImageInfo,
    PodSandbox, PodSandboxConfig, SandboxState, StringMap, VersionInfo,
};

pub(crate) fn to_hash(m: &StringMap) -> HashMap<String, String> {
    m.iter().map(|(k, v)| (k.clone(), v.clone())).collect()
}

pub(crate) fn to_btree(m: HashMap<String, String>) -> StringMap {
    m.into_iter().collect()
}

pub(crate) fn state_from_pb(s: i32) -> ContainerState {
    match pb::ContainerState::try_from(s) {
        Ok(pb::ContainerState::ContainerCreated) => ContainerState::Created,
        Ok(pb::ContainerState::ContainerRunning) => ContainerState::Running,
        Ok(pb::ContainerState::ContainerExited) => ContainerState::Exited,
        _ => ContainerState::Unknown,
    }
}

pub(crate) fn state_to_pb(s: ContainerState) -> i32 {
    (match s {
        ContainerState::Created => pb::ContainerState::ContainerCreated,
        ContainerState::Running => pb::ContainerState::ContainerRunning,
        ContainerState::Exited => pb::ContainerState::ContainerExited,
        ContainerState::Unknown => pb::ContainerState::ContainerUnknown,
    }) as i32
}

pub(crate) fn sandbox_state_to_pb(s: SandboxState) -> i32 {
    (match s {
        SandboxState::Ready => pb::PodSandboxState::SandboxReady,
        SandboxState::NotReady => pb::PodSandboxState::SandboxNotready,
    }) as i32
}

pub(crate) fn image_spec(image: &str) -> pb::ImageSpec {
    pb::ImageSpec { image: image.to_string(), ..pb::ImageSpec::default() }
}

fn spec_image(spec: Option<pb::ImageSpec>) -> String {
    spec.map(|s| s.image).unwrap_or_default()
}

pub(crate) fn version_from_pb(v: pb::VersionResponse) -> VersionInfo {
    VersionInfo {
        version: v.version,
        runtime_name: v.runtime_name,
        runtime_version: v.runtime_version,
        runtime_api_version: v.runtime_api_version,
    }
}

pub(crate) fn version_to_pb(v: VersionInfo) -> pb::VersionResponse {
    pb::VersionResponse {
        version: v.version,
        runtime_name: v.runtime_name,
        runtime_version: v.runtime_version,
        runtime_api_version: v.runtime_api_version,
    }
}

pub(crate) fn image_from_pb(i: pb::Image) -> ImageInfo {
    ImageInfo {
        id: i.id,
        repo_tags: i.repo_tags,
        repo_digests: i.repo_digests,
        size: i.size,
        pinned: i.pinned,
    }
}

pub(crate) fn image_to_pb(i: ImageInfo) -> pb::Image {
    pb::Image {
        id: i.id,
        repo_tags: i.repo_tags,
        repo_digests: i.repo_digests,
        size: i.size,
        pinned: i.pinned,
        ..pb::Image::default()
    }
}

pub(crate) fn filter_to_pb(f: &ContainerFilter) -> pb::ContainerFilter {
    pb::ContainerFilter {
        id: f.id.clone().unwrap_or_default(),
        state: f.state.map(|s| pb::ContainerStateValue { state: state_to_pb(s) }),
        pod_sandbox_id: f.pod_sandbox_id.clone().unwrap_or_default(),
        label_selector: to_hash(&f.label_selector),
    }
}

pub(crate) fn filter_from_pb(f: Option<pb::ContainerFilter>) -> ContainerFilter {
    let Some(f) = f else {
        return ContainerFilter::default();
    };
    ContainerFilter {
        id: Some(f.id).filter(|s| !s.is_empty()),
        state: f.state.map(|s| state_from_pb(s.state)),
        pod_sandbox_id: Some(f.pod_sandbox_id).filter(|s| !s.is_empty()),
        label_selector: to_btree(f.label_selector),
    }
}

pub(crate) fn container_from_pb(c: pb::Container) -> Container {
    let meta = c.metadata.unwrap_or_default();
    Container {
        id: c.id,
        pod_sandbox_id: c.pod_sandbox_id,
        name: meta.name,
        attempt: meta.attempt,
        image: spec_image(c.image),
        image_ref: c.image_ref,
        state: state_from_pb(c.state),
        created_at: c.created_at,
        labels: to_btree(c.labels),
        annotations: to_btree(c.annotations),
    }
}

pub(crate) fn container_to_pb(c: Container) -> pb::Container {
    pb::Container {
        id: c.id,
        pod_sandbox_id: c.pod_sandbox_id,
        metadata: Some(pb::ContainerMetadata { name: c.name, attempt: c.attempt }),
        image: Some(image_spec(&c.image)),
        image_ref: c.image_ref.clone(),
        state: state_to_pb(c.state),
        created_at: c.created_at,
        labels: to_hash(&c.labels),
        annotations: to_hash(&c.annotations),
        image_id: c.image_ref,
    }
}

pub(crate) fn status_from_pb(s: pb::ContainerStatus) -> ContainerStatus {
    let meta = s.metadata.unwrap_or_default();
    ContainerStatus {
        id: s.id,
        name: meta.name,
        attempt: meta.attempt,
        state: state_from_pb(s.state),
        created_at: s.created_at,
        started_at: s.started_at,
        finished_at: s.finished_at,
        exit_code: s.exit_code,
        image: spec_image(s.image),
        image_ref: s.image_ref,
        reason: s.reason,
        message: s.message,
        labels: to_btree(s.labels),
        annotations: to_btree(s.annotations),
    }
}

pub(crate) fn status_to_pb(s: ContainerStatus) -> pb::ContainerStatus {
    pb::ContainerStatus {
        id: s.id,
        metadata: Some(pb::ContainerMetadata { name: s.name, attempt: s.attempt }),
        state: state_to_pb(s.state),
        created_at: s.created_at,
        started_at: s.started_at,
        finished_at: s.finished_at,
        exit_code: s.exit_code,
        image: Some(image_spec(&s.image)),
        image_ref: s.image_ref.clone(),
        image_id: s.image_ref,
        reason: s.reason,
        message: s.message,
        labels: to_hash(&s.labels),
        annotations: to_hash(&s.annotations),
        ..pb::ContainerStatus::default()
    }
}

pub(crate) fn sandbox_config_from_pb(c: pb::PodSandboxConfig) -> PodSandboxConfig {
    let meta = c.metadata.unwrap_or_default();
    PodSandboxConfig {
        name: meta.name,
        uid: meta.uid,
        namespace: meta.namespace,
        attempt: meta.attempt,
        labels: to_btree(c.labels),
        annotations: to_btree(c.annotations),
    }
}

fn sandbox_meta(c: &PodSandboxConfig) -> pb::PodSandboxMetadata {
    pb::PodSandboxMetadata {
        name: c.name.clone(),
        uid: c.uid.clone(),
        namespace: c.namespace.clone(),
        attempt: c.attempt,
    }
}

pub(crate) fn sandbox_to_pb(s: PodSandbox) -> pb::PodSandbox {
    pb::PodSandbox {
        metadata: Some(sandbox_meta(&s.config)),
        state: sandbox_state_to_pb(s.state),
        created_at: s.created_at,
        labels: to_hash(&s.config.labels),
        annotations: to_hash(&s.config.annotations),
        id: s.id,
        ..pb::PodSandbox::default()
    }
}

pub(crate) fn sandbox_status_to_pb(s: PodSandbox) -> pb::PodSandboxStatus {
    pb::PodSandboxStatus {
        metadata: Some(sandbox_meta(&s.config)),
        state: sandbox_state_to_pb(s.state),
        created_at: s.created_at,
        labels: to_hash(&s.config.labels),
        annotations: to_hash(&s.config.annotations),
        id: s.id,
        ..pb::PodSandboxStatus::default()
    }
}

pub(crate) fn container_config_from_pb(c: pb::ContainerConfig) -> ContainerConfig {
    let meta = c.metadata.unwrap_or_default();
    ContainerConfig {
        name: meta.name,
        attempt: meta.attempt,
        image: spec_image(c.image),
        command: c.command,
        args: c.args,
        labels: to_btree(c.labels),
        annotations: to_btree(c.annotations),
    }
}

pub(crate) fn kind_from_code(code: Code) -> ErrorKind {
    match code {
        Code::NotFound => ErrorKind::NotFound,
        Code::InvalidArgument => ErrorKind::InvalidArgument,
        Code::FailedPrecondition => ErrorKind::FailedPrecondition,
        Code::Unauthenticated | Code::PermissionDenied => ErrorKind::Unauthenticated,
        // tonic's channel answers CANCELLED ("Timeout expired") when the request's own
        // deadline passes, and only a deadline cancels the client's calls.
        Code::DeadlineExceeded | Code::Cancelled => ErrorKind::DeadlineExceeded,
        Code::Unavailable => ErrorKind::Unavailable,
        Code::Unimplemented => ErrorKind::Unimplemented,
        _ => ErrorKind::Unknown,
    }
}

pub(crate) fn code_from_kind(kind: ErrorKind) -> Code {
    match kind {
        ErrorKind::NotFound => Code::NotFound,
        ErrorKind::InvalidArgument => Code::InvalidArgument,
        ErrorKind::FailedPrecondition => Code::FailedPrecondition,
        ErrorKind::Unauthenticated => Code::Unauthenticated,
        ErrorKind::DeadlineExceeded => Code::DeadlineExceeded,
        ErrorKind::Unavailable => Code::Unavailable,
        ErrorKind::Unimplemented => Code::Unimplemented,
        ErrorKind::Unknown => Code::Unknown,
    }
}

/// A failed call as the client reports it. `subject` names what a NotFound is about.
pub(crate) fn error_from_status(
    method: &'static str,
    subject: Option<(&'static str, &str)>,
    status: Status,
) -> CriError {
    match (status.code(), subject) {
        (Code::NotFound, Some((what, id))) => CriError::NotFound { what, id: id.to_string() },
        (code, _) => CriError::Rpc {
            method,
            kind: kind_from_code(code),
            message: status.message().to_string(),
        },
    }
}

/// A fake's failure as the server answers it.
pub(crate) fn status_from_error(e: CriError) -> Status {
    match e {
        CriError::PullImage { kind, message, .. } | CriError::Rpc { kind, message, .. } => {
            Status::new(code_from_kind(kind), message)
        }
        other => Status::new(code_from_kind(other.kind()), other.to_string()),
    }
}
