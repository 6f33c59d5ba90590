//! A simulated container's writable filesystem, in memory: what `kubectl exec POD -- touch
//! /tmp/ready` writes and an exec probe's `cat /tmp/ready` reads ([`super::shell`]).
//!
//! Every container starts with the same tree: the directories `/`, `/bin`, `/dev`, `/etc`,
//! `/home`, `/proc`, `/root`, `/tmp`, `/usr` and `/var`, the file `/etc/hostname` (the pod's
//! hostname and a new line) and `/dev/null` (reads empty, swallows writes). A new container (a
//! restart gives a new container ID) starts from that tree again, as a real container's
//! writable layer does. The runtime keeps an [`Fs`] only for a container that changed its
//! tree, so the 100k untouched containers of a large simulation cost nothing. There are no
//! permissions, owners, times, links or special files beyond `/dev/null`; a container's tree
//! holds at most [`MAX_BYTES`] of file content (then writes fail with "No space left on
//! device").

use std::collections::{BTreeMap, BTreeSet};

/// The most file content one container's tree holds.
pub const MAX_BYTES: usize = 16 << 20;

/// The directories every container starts with.
const INITIAL_DIRS: &[&str] =
    &["/", "/bin", "/dev", "/etc", "/home", "/proc", "/root", "/tmp", "/usr", "/var"];

/// The file that reads empty and swallows writes.
pub const DEV_NULL: &str = "/dev/null";

/// What a path names.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Kind {
    /// A regular file.
    File,
    /// A directory.
    Dir,
}

/// Why a filesystem operation failed: an errno, with `strerror`'s text as
/// [`message`](FsError::message).
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
pub enum FsError {
    /// `ENOENT`.
    #[error("No such file or directory")]
    NotFound,
    /// `EISDIR`.
    #[error("Is a directory")]
    IsDir,
    /// `ENOTDIR`.
    #[error("Not a directory")]
    NotDir,
    /// `EEXIST`.
    #[error("File exists")]
    Exists,
    /// `ENOTEMPTY`.
    #[error("Directory not empty")]
    NotEmpty,
    /// `ENOSPC`.
    #[error("No space left on device")]
    NoSpace,
    /// `EBUSY` (removing `/`).
    #[error("Resource busy")]
    Busy,
}

/// One container's tree. Paths given to it are absolute and normalized ([`normalize`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Fs {
    files: BTreeMap<String, Vec<u8>>,
    dirs: BTreeSet<String>,
    bytes: usize,
    modified: bool,
}

/// `path` made absolute against `cwd`, with `.`, `..` and repeated slashes resolved (`..` of
/// `/` is `/`). An empty `path` stays empty: it names nothing.
pub fn normalize(cwd: &str, path: &str) -> String {
    if path.is_empty() {
        return String::new();
    }
    let joined = if path.starts_with('/') { path.to_owned() } else { format!("{cwd}/{path}") };
    let mut parts: Vec<&str> = Vec::new();
    for p in joined.split('/') {
        match p {
            "" | "." => {}
            ".." => {
                parts.pop();
            }
            p => parts.push(p),
        }
    }
    format!("/{}", parts.join("/"))
}

/// The directory holding `path` (`/` for `/`).
fn parent(path: &str) -> &str {
    match path.rfind('/') {
        Some(0) | None => "/",
        Some(i) => &path[..i],
    }
}

/// `path` and a child name joined.
fn child(dir: &str, name: &str) -> String {
    if dir == "/" { format!("/{name}") } else { format!("{dir}/{name}") }
}

impl Fs {
    /// The tree a new container with this hostname starts with.
    pub fn new(hostname: &str) -> Fs {
        let mut files = BTreeMap::new();
        files.insert("/etc/hostname".to_owned(), format!("{hostname}\n").into_bytes());
        files.insert(DEV_NULL.to_owned(), Vec::new());
        Fs {
            bytes: hostname.len() + 1,
            files,
            dirs: INITIAL_DIRS.iter().map(|d| (*d).to_owned()).collect(),
            modified: false,
        }
    }

    /// Whether an operation changed the tree since [`Fs::new`].
    pub fn is_modified(&self) -> bool {
        self.modified
    }

    /// What `path` names, if anything.
    pub fn stat(&self, path: &str) -> Option<Kind> {
        if self.dirs.contains(path) {
            Some(Kind::Dir)
        } else if self.files.contains_key(path) {
            Some(Kind::File)
        } else {
            None
        }
    }

    /// The content of file `path`.
    pub fn read(&self, path: &str) -> Result<&[u8], FsError> {
        match self.files.get(path) {
            Some(data) => Ok(data),
            None if self.dirs.contains(path) => Err(FsError::IsDir),
            None => Err(self.missing(path)),
        }
    }

    /// Why `path`, which does not exist, cannot be opened: a file on its way is `ENOTDIR`.
    fn missing(&self, path: &str) -> FsError {
        let mut at = path;
        while at != "/" {
            at = parent(at);
            if self.files.contains_key(at) {
                return FsError::NotDir;
            }
        }
        FsError::NotFound
    }

    /// Checks that a new entry `path` could be created: its parent is a directory.
    fn creatable(&self, path: &str) -> Result<(), FsError> {
        if path.is_empty() {
            return Err(FsError::NotFound);
        }
        let dir = parent(path);
        if self.dirs.contains(dir) {
            Ok(())
        } else if self.files.contains_key(dir) {
            Err(FsError::NotDir)
        } else {
            Err(self.missing(dir))
        }
    }

    /// Writes `data` to file `path`, replacing or (with `append`) extending it, creating it
    /// if its directory exists. Writes to `/dev/null` vanish.
    pub fn write(&mut self, path: &str, data: &[u8], append: bool) -> Result<(), FsError> {
        if path == DEV_NULL {
            return Ok(());
        }
        if self.dirs.contains(path) {
            return Err(FsError::IsDir);
        }
        let old = match self.files.get(path) {
            Some(old) => old.len(),
            None => {
                self.creatable(path)?;
                0
            }
        };
        let kept = if append { old } else { 0 };
        let total = self.bytes - old + kept + data.len();
        if total > MAX_BYTES {
            return Err(FsError::NoSpace);
        }
        let file = self.files.entry(path.to_owned()).or_default();
        if !append {
            file.clear();
        }
        file.extend_from_slice(data);
        self.bytes = total;
        self.modified = true;
        Ok(())
    }

    /// Creates an empty file `path` unless something is there.
    pub fn touch(&mut self, path: &str) -> Result<(), FsError> {
        if self.stat(path).is_some() {
            return Ok(());
        }
        self.creatable(path)?;
        self.files.insert(path.to_owned(), Vec::new());
        self.modified = true;
        Ok(())
    }

    /// Creates directory `path`; with `parents`, its missing parents too and no error when it
    /// exists.
    pub fn mkdir(&mut self, path: &str, parents: bool) -> Result<(), FsError> {
        match self.stat(path) {
            Some(Kind::Dir) if parents => return Ok(()),
            Some(_) => return Err(FsError::Exists),
            None => {}
        }
        if parents && path != "/" {
            let up = parent(path).to_owned();
            if self.files.contains_key(&up) {
                return Err(FsError::NotDir);
            }
            if !self.dirs.contains(&up) {
                self.mkdir(&up, true)?;
            }
        }
        self.creatable(path)?;
        self.dirs.insert(path.to_owned());
        self.modified = true;
        Ok(())
    }

    /// Removes file `path`, or directory `path` and all below it (only with `recursive`).
    pub fn remove(&mut self, path: &str, recursive: bool) -> Result<(), FsError> {
        match self.stat(path) {
            None => Err(self.missing(path)),
            Some(Kind::File) => {
                if let Some(old) = self.files.remove(path) {
                    self.bytes -= old.len();
                }
                self.modified = true;
                Ok(())
            }
            Some(Kind::Dir) if !recursive => Err(FsError::IsDir),
            Some(Kind::Dir) if path == "/" => Err(FsError::Busy),
            Some(Kind::Dir) => {
                let prefix = format!("{path}/");
                let files: Vec<String> = self
                    .files
                    .range(prefix.clone()..)
                    .map(|(k, _)| k.clone())
                    .take_while(|k| k.starts_with(&prefix))
                    .collect();
                for f in files {
                    if let Some(old) = self.files.remove(&f) {
                        self.bytes -= old.len();
                    }
                }
                self.dirs.retain(|d| d != path && !d.starts_with(&prefix));
                self.modified = true;
                Ok(())
            }
        }
    }

    /// The entries of directory `path` with their kinds, by name.
    pub fn list(&self, path: &str) -> Result<Vec<(String, Kind)>, FsError> {
        match self.stat(path) {
            None => return Err(self.missing(path)),
            Some(Kind::File) => return Err(FsError::NotDir),
            Some(Kind::Dir) => {}
        }
        let prefix = if path == "/" { "/".to_owned() } else { format!("{path}/") };
        let direct = |k: &String| {
            k.strip_prefix(&prefix)
                .filter(|rest| !rest.is_empty() && !rest.contains('/'))
                .map(str::to_owned)
        };
        let mut out: Vec<(String, Kind)> = self
            .dirs
            .range(prefix.clone()..)
            .take_while(|k| k.starts_with(&prefix))
            .filter_map(|k| direct(k).map(|n| (n, Kind::Dir)))
            .chain(
                self.files
                    .range(prefix.clone()..)
                    .take_while(|(k, _)| k.starts_with(&prefix))
                    .filter_map(|(k, _)| direct(k).map(|n| (n, Kind::File))),
            )
            .collect();
        out.sort();
        Ok(out)
    }

    /// `child` of `dir` as a path.
    pub fn join(dir: &str, name: &str) -> String {
        child(dir, name)
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn paths_normalize() {
        assert_eq!(normalize("/", "tmp/x"), "/tmp/x");
        assert_eq!(normalize("/tmp", "../etc//./hostname"), "/etc/hostname");
        assert_eq!(normalize("/", "/../.."), "/");
        assert_eq!(normalize("/tmp", ""), "");
        assert_eq!(parent("/tmp/x"), "/tmp");
        assert_eq!(parent("/tmp"), "/");
        assert_eq!(parent("/"), "/");
    }

    #[test]
    fn files_and_directories() {
        let mut fs = Fs::new("web-0");
        assert!(!fs.is_modified());
        assert_eq!(fs.read("/etc/hostname").unwrap(), b"web-0\n");
        assert_eq!(fs.read("/tmp"), Err(FsError::IsDir));
        assert_eq!(fs.read("/tmp/ready"), Err(FsError::NotFound));
        fs.touch("/tmp/ready").unwrap();
        assert!(fs.is_modified());
        assert_eq!(fs.read("/tmp/ready").unwrap(), b"");
        assert_eq!(fs.touch("/nope/x"), Err(FsError::NotFound));
        assert_eq!(fs.touch("/tmp/ready/x"), Err(FsError::NotDir));
        assert_eq!(fs.read("/tmp/ready/x"), Err(FsError::NotDir));
        fs.write("/tmp/ready", b"a", false).unwrap();
        fs.write("/tmp/ready", b"b", true).unwrap();
        assert_eq!(fs.read("/tmp/ready").unwrap(), b"ab");
        fs.write(DEV_NULL, b"gone", false).unwrap();
        assert_eq!(fs.read(DEV_NULL).unwrap(), b"");
        assert_eq!(fs.write("/tmp", b"x", false), Err(FsError::IsDir));
        assert_eq!(fs.mkdir("/tmp", false), Err(FsError::Exists));
        assert_eq!(fs.mkdir("/a/b", false), Err(FsError::NotFound));
        fs.mkdir("/a/b/c", true).unwrap();
        fs.write("/a/b/c/f", b"1234", false).unwrap();
        assert_eq!(fs.list("/a/b").unwrap(), vec![("c".to_owned(), Kind::Dir)]);
        assert_eq!(fs.remove("/a", false), Err(FsError::IsDir));
        fs.remove("/a", true).unwrap();
        assert_eq!(fs.stat("/a/b/c/f"), None);
        assert_eq!(fs.stat("/a"), None);
        assert_eq!(fs.remove("/", true), Err(FsError::Busy));
        assert_eq!(fs.remove("/tmp/nope", false), Err(FsError::NotFound));
        let root: Vec<String> = fs.list("/").unwrap().into_iter().map(|(n, _)| n).collect();
        assert_eq!(root, ["bin", "dev", "etc", "home", "proc", "root", "tmp", "usr", "var"]);
        fs.remove("/tmp/ready", false).unwrap();
        assert_eq!(fs.bytes, "web-0\n".len());
    }

    #[test]
    fn space_is_bounded() {
        let mut fs = Fs::new("h");
        let big = vec![0u8; MAX_BYTES / 2];
        fs.write("/tmp/a", &big, false).unwrap();
        assert_eq!(fs.write("/tmp/b", &big, false), Err(FsError::NoSpace));
        // Replacing a file frees its old content first.
        fs.write("/tmp/a", &big, false).unwrap();
    }
}
