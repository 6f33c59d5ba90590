//! Finding the node's CRI socket, as upstream's `pkg/daemon/criruntime/factory_unix.go` does.

use std::path::{Path, PathBuf};

/// Where the daemon's pod mounts the host's `/var/run` (upstream `varRunMountPath`).
pub const HOST_VAR_RUN: &str = "/hostvarrun";

/// Sockets probed when no socket file is given, in upstream's order, relative to the root.
pub const KNOWN_SOCKETS: [(RuntimeKind, &str); 6] = [
    (RuntimeKind::Containerd, "containerd.sock"),
    (RuntimeKind::Containerd, "containerd/containerd.sock"),
    (RuntimeKind::CommonCri, "crio.sock"),
    (RuntimeKind::CommonCri, "crio/crio.sock"),
    (RuntimeKind::CommonCri, "cri-dockerd.sock"),
    (RuntimeKind::CommonCri, "cri-dockerd/cri-dockerd.sock"),
];

/// The kind of runtime behind a socket (upstream `ContainerRuntimeType`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum RuntimeKind {
    /// containerd (`containerd.sock`).
    Containerd,
    /// Any other CRI runtime: CRI-O, cri-dockerd, or a socket given explicitly.
    CommonCri,
}

impl RuntimeKind {
    /// Upstream's name for the kind: `containerd` or `common-cri`.
    pub fn as_str(self) -> &'static str {
        match self {
            RuntimeKind::Containerd => "containerd",
            RuntimeKind::CommonCri => "common-cri",
        }
    }
}

/// A candidate runtime: its kind and the socket that serves both CRI services.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RuntimeEndpoint {
    /// The kind.
    pub kind: RuntimeKind,
    /// The unix socket.
    pub socket: PathBuf,
}

impl RuntimeEndpoint {
    /// The socket as a CRI endpoint URI, `unix:///…`.
    pub fn uri(&self) -> String {
        format!("unix://{}", self.socket.display())
    }
}

/// Why no runtime was found.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum DetectError {
    /// The socket file given explicitly does not exist.
    #[error("CRI socket {path} (from --socket-file) is not there: {source}")]
    SocketFileMissing {
        /// The full path probed.
        path: PathBuf,
        /// The error from stat.
        source: std::io::Error,
    },
    /// None of the known sockets exists under the root.
    #[error("no container runtime socket found under {root}")]
    NotFound {
        /// The root probed.
        root: PathBuf,
    },
}

/// Finds the candidate runtimes under `root` (the daemon passes [`HOST_VAR_RUN`]).
///
/// An explicit `socket_file` (upstream's `--socket-file`, a name relative to the root) wins and
/// is the only candidate, of kind [`RuntimeKind::CommonCri`]. Otherwise every socket of
/// [`KNOWN_SOCKETS`] that exists is a candidate, in that order; the caller keeps the first that
/// answers `Version` and `ListImages`, as upstream's factory does. Existence is a `stat`,
/// following symlinks, like upstream.
pub fn detect_runtime(
    socket_file: Option<&Path>,
    root: &Path,
) -> Result<Vec<RuntimeEndpoint>, DetectError> {
    if let Some(file) = socket_file.filter(|f| !f.as_os_str().is_empty()) {
        // Upstream formats "<root>/<file>": an absolute name stays under the root.
        let relative = file.strip_prefix("/").unwrap_or(file);
        let path = root.join(relative);
        return match std::fs::metadata(&path) {
            Ok(_) => Ok(vec![RuntimeEndpoint { kind: RuntimeKind::CommonCri, socket: path }]),
            Err(source) => Err(DetectError::SocketFileMissing { path, source }),
        };
    }
    let found: Vec<RuntimeEndpoint> = KNOWN_SOCKETS
        .iter()
        .map(|(kind, name)| RuntimeEndpoint { kind: *kind, socket: root.join(name) })
        .filter(|e| std::fs::metadata(&e.socket).is_ok())
        .collect();
    if found.is_empty() {
        return Err(DetectError::NotFound { root: root.to_path_buf() });
    }
    Ok(found)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use std::os::unix::net::UnixListener;

    fn listen(root: &Path, name: &str) -> UnixListener {
        let path = root.join(name);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        UnixListener::bind(path).unwrap()
    }

    #[test]
    fn each_known_socket_alone_is_found_with_its_kind() {
        for (kind, name) in KNOWN_SOCKETS {
            let dir = tempfile::tempdir().unwrap();
            let _l = listen(dir.path(), name);
            let found = detect_runtime(None, dir.path()).unwrap();
            assert_eq!(
                found,
                vec![RuntimeEndpoint { kind, socket: dir.path().join(name) }],
                "{name}"
            );
        }
    }

    #[test]
    fn all_sockets_come_in_upstream_order() {
        let dir = tempfile::tempdir().unwrap();
        // Bind in reverse, so directory order cannot explain the result.
        let _ls: Vec<_> = KNOWN_SOCKETS.iter().rev().map(|(_, n)| listen(dir.path(), n)).collect();
        let found = detect_runtime(None, dir.path()).unwrap();
        let names: Vec<_> = found
            .iter()
            .map(|e| e.socket.strip_prefix(dir.path()).unwrap().to_str().unwrap().to_string())
            .collect();
        assert_eq!(names, KNOWN_SOCKETS.map(|(_, n)| n.to_string()).to_vec());
        assert_eq!(found[0].kind, RuntimeKind::Containerd);
        assert_eq!(found[0].uri(), format!("unix://{}/containerd.sock", dir.path().display()));
    }

    #[test]
    fn crio_wins_over_nothing_but_containerd_comes_first() {
        let dir = tempfile::tempdir().unwrap();
        let _a = listen(dir.path(), "crio/crio.sock");
        let _b = listen(dir.path(), "containerd/containerd.sock");
        let found = detect_runtime(None, dir.path()).unwrap();
        assert_eq!(found.len(), 2);
        assert_eq!(found[0].kind, RuntimeKind::Containerd);
        assert_eq!(found[1].socket, dir.path().join("crio/crio.sock"));
    }

    #[test]
    fn explicit_socket_file_wins_and_is_common_cri() {
        let dir = tempfile::tempdir().unwrap();
        let _a = listen(dir.path(), "containerd.sock");
        let _b = listen(dir.path(), "k3s/custom.sock");
        for given in ["k3s/custom.sock", "/k3s/custom.sock"] {
            let found = detect_runtime(Some(Path::new(given)), dir.path()).unwrap();
            assert_eq!(
                found,
                vec![RuntimeEndpoint {
                    kind: RuntimeKind::CommonCri,
                    socket: dir.path().join("k3s/custom.sock")
                }]
            );
        }
        // Even the containerd socket, named explicitly, is common-cri (as upstream).
        let found = detect_runtime(Some(Path::new("containerd.sock")), dir.path()).unwrap();
        assert_eq!(found[0].kind, RuntimeKind::CommonCri);
    }

    #[test]
    fn missing_explicit_socket_file_is_an_error_even_if_others_exist() {
        let dir = tempfile::tempdir().unwrap();
        let _a = listen(dir.path(), "containerd.sock");
        let err = detect_runtime(Some(Path::new("nope.sock")), dir.path()).unwrap_err();
        match err {
            DetectError::SocketFileMissing { path, .. } => {
                assert_eq!(path, dir.path().join("nope.sock"))
            }
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn empty_socket_file_means_probe() {
        let dir = tempfile::tempdir().unwrap();
        let _a = listen(dir.path(), "cri-dockerd.sock");
        let found = detect_runtime(Some(Path::new("")), dir.path()).unwrap();
        assert_eq!(found[0].socket, dir.path().join("cri-dockerd.sock"));
    }

    #[test]
    fn nothing_there_is_not_found() {
        let dir = tempfile::tempdir().unwrap();
        // A socket with an unknown name is not probed.
        let _a = listen(dir.path(), "docker.sock");
        let err = detect_runtime(None, dir.path()).unwrap_err();
        assert!(matches!(err, DetectError::NotFound { .. }), "{err:?}");
        assert!(err.to_string().contains(&dir.path().display().to_string()));
    }
}
