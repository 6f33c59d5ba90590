//! Errors of the runtime trait, shared by the client and the fake.

/// The class of a failure, after gRPC's status codes (the ones a caller acts on).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ErrorKind {
    /// The object does not exist.
    NotFound,
    /// The request is malformed.
    InvalidArgument,
    /// The object is not in a state that allows the operation (e.g. exec in a stopped container).
    FailedPrecondition,
    /// The registry or runtime refused the credentials.
    Unauthenticated,
    /// The deadline passed.
    DeadlineExceeded,
    /// The runtime is unreachable or restarting.
    Unavailable,
    /// The runtime does not implement the call.
    Unimplemented,
    /// Anything else.
    Unknown,
}

/// A failed runtime call.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum CriError {
    /// The runtime socket could not be reached.
    #[error("connecting to CRI socket {endpoint}: {message}")]
    Connect {
        /// The socket path.
        endpoint: String,
        /// Why.
        message: String,
    },
    /// Pulling an image failed.
    #[error("pulling image {image:?} failed ({kind:?}): {message}")]
    PullImage {
        /// The image as requested.
        image: String,
        /// Class of the failure.
        kind: ErrorKind,
        /// The runtime's message.
        message: String,
    },
    /// A container, sandbox or image does not exist.
    #[error("{what} {id:?} not found")]
    NotFound {
        /// `container`, `pod sandbox` or `image`.
        what: &'static str,
        /// The ID or reference asked for.
        id: String,
    },
    /// Any other failed call.
    #[error("CRI {method} failed ({kind:?}): {message}")]
    Rpc {
        /// The CRI method, e.g. `StopContainer`.
        method: &'static str,
        /// Class of the failure.
        kind: ErrorKind,
        /// The runtime's message.
        message: String,
    },
    /// The runtime answered with something the CRI forbids (e.g. no status).
    #[error("CRI {method}: invalid response: {message}")]
    InvalidResponse {
        /// The CRI method.
        method: &'static str,
        /// What was wrong.
        message: String,
    },
}

impl CriError {
    /// The class of this failure.
    pub fn kind(&self) -> ErrorKind {
        match self {
            CriError::Connect { .. } => ErrorKind::Unavailable,
            CriError::PullImage { kind, .. } | CriError::Rpc { kind, .. } => *kind,
            CriError::NotFound { .. } => ErrorKind::NotFound,
            CriError::InvalidResponse { .. } => ErrorKind::Unknown,
        }
    }

    /// Whether the object asked for does not exist.
    pub fn is_not_found(&self) -> bool {
        self.kind() == ErrorKind::NotFound
    }
}

/// An error and its sources, `: `-separated (a transport or TLS failure sits a few levels
/// below the error a call returns).
pub fn error_chain(err: &dyn std::error::Error) -> String {
    let mut out = err.to_string();
    let mut source = err.source();
    while let Some(cause) = source {
        out.push_str(": ");
        out.push_str(&cause.to_string());
        source = cause.source();
    }
    out
}
