//! Container image references, parsed as the docker reference grammar's
//! `ParseNormalizedNamed` parses them (what kubelet and the kruise daemon use).
//!
//! `nginx`, `nginx:1.25`, `registry.example.com:5000/team/app:v1` and
//! `busybox@sha256:<64 hex>` all parse; the docker hub short forms are normalised
//! (`nginx` is `docker.io/library/nginx`). [`ImageRef::familiar_name`] and
//! [`ImageRef::api_tag`] give the `(name, tag)` pair NodeImage specs are keyed by (upstream's
//! `NormalizeImageRefToNameTag`).

use std::fmt;

/// The default registry of short names.
pub const DEFAULT_DOMAIN: &str = "docker.io";
/// The legacy spelling of [`DEFAULT_DOMAIN`], rewritten to it.
const LEGACY_DEFAULT_DOMAIN: &str = "index.docker.io";
/// The namespace of official images on the default registry.
const OFFICIAL_REPO_PREFIX: &str = "library/";
/// The tag of a reference that names none.
pub const DEFAULT_TAG: &str = "latest";
/// Longest repository name (domain and path) accepted.
const NAME_TOTAL_LENGTH_MAX: usize = 255;

/// Why an image reference does not parse. Messages follow the docker reference library's.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ImageRefError {
    /// The text does not match the grammar.
    #[error("invalid reference format")]
    InvalidFormat,
    /// The repository path has upper-case letters.
    #[error("invalid reference format: repository name ({0}) must be lowercase")]
    Uppercase(String),
    /// Domain and path are longer than 255 characters.
    #[error("repository name must not be more than 255 characters")]
    NameTooLong,
    /// A bare 64-hex string, which would be taken for an image ID.
    #[error("invalid repository name ({0}), cannot specify 64-byte hexadecimal strings")]
    HexIdentifier(String),
    /// The digest's algorithm is not sha256, sha384 or sha512.
    #[error("unsupported digest algorithm")]
    UnsupportedDigest,
    /// The digest's hex part has the wrong length for its algorithm.
    #[error("invalid checksum digest length")]
    DigestLength,
    /// The digest is not `algorithm:hex`.
    #[error("invalid checksum digest format")]
    DigestFormat,
}

/// A parsed, normalised image reference.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct ImageRef {
    /// Registry host (with port), e.g. `docker.io`, `registry.example.com:5000`.
    pub domain: String,
    /// Repository path, e.g. `library/nginx`.
    pub path: String,
    /// The tag, if the reference names one.
    pub tag: Option<String>,
    /// The digest (`sha256:<hex>`), if the reference names one.
    pub digest: Option<String>,
}

impl ImageRef {
    /// Parses `text` (upstream's `reference.ParseNormalizedNamed`).
    pub fn parse(text: &str) -> Result<Self, ImageRefError> {
        if text.len() == 64
            && text.bytes().all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
        {
            return Err(ImageRefError::HexIdentifier(text.to_owned()));
        }
        if text.is_empty() {
            return Err(ImageRefError::InvalidFormat);
        }
        let (name_tag, digest) = match text.split_once('@') {
            Some((name_tag, digest)) => (name_tag, Some(digest)),
            None => (text, None),
        };
        // The tag is after the last ':' that follows the last '/'.
        let last_slash = name_tag.rfind('/').map_or(0, |i| i + 1);
        let (name, tag) = match name_tag[last_slash..].rfind(':') {
            Some(i) => (&name_tag[..last_slash + i], Some(&name_tag[last_slash + i + 1..])),
            None => (name_tag, None),
        };
        let (domain, path) = split_domain(name);
        if path.to_ascii_lowercase() != path {
            return Err(ImageRefError::Uppercase(path));
        }
        if domain != DEFAULT_DOMAIN && !valid_domain(&domain) {
            return Err(ImageRefError::InvalidFormat);
        }
        if path.is_empty() || !path.split('/').all(valid_path_component) {
            return Err(ImageRefError::InvalidFormat);
        }
        if let Some(tag) = tag
            && !valid_tag(tag)
        {
            return Err(ImageRefError::InvalidFormat);
        }
        if let Some(digest) = digest {
            validate_digest(digest)?;
        }
        if domain.len() + 1 + path.len() > NAME_TOTAL_LENGTH_MAX {
            return Err(ImageRefError::NameTooLong);
        }
        Ok(ImageRef {
            domain,
            path,
            tag: tag.map(str::to_owned),
            digest: digest.map(str::to_owned),
        })
    }

    /// The full repository name, `domain/path`.
    pub fn name(&self) -> String {
        format!("{}/{}", self.domain, self.path)
    }

    /// The short name people write: `nginx` for `docker.io/library/nginx`, `team/app` for
    /// `docker.io/team/app`, and the full name for other registries.
    pub fn familiar_name(&self) -> String {
        if self.domain != DEFAULT_DOMAIN {
            return self.name();
        }
        match self.path.strip_prefix(OFFICIAL_REPO_PREFIX) {
            Some(short) if !short.contains('/') => short.to_owned(),
            _ => self.path.clone(),
        }
    }

    /// What NodeImage specs call the tag: the digest when there is one (a tag next to a
    /// digest is dropped, as upstream's `NormalizeImageRef` does), else the tag, else `latest`.
    pub fn api_tag(&self) -> &str {
        self.digest.as_deref().or(self.tag.as_deref()).unwrap_or(DEFAULT_TAG)
    }

    /// Upstream's `NormalizeImageRefToNameTag`: `(familiar name, api tag)`.
    pub fn name_tag(&self) -> (String, String) {
        (self.familiar_name(), self.api_tag().to_owned())
    }
}

impl fmt::Display for ImageRef {
    /// The familiar form (`nginx:1.25`, `nginx@sha256:...`).
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.familiar_name())?;
        if let Some(tag) = &self.tag {
            write!(f, ":{tag}")?;
        }
        if let Some(digest) = &self.digest {
            write!(f, "@{digest}")?;
        }
        Ok(())
    }
}

/// Parses `image` and returns upstream's `(name, tag)` pair for NodeImage specs.
pub fn name_tag(image: &str) -> Result<(String, String), ImageRefError> {
    ImageRef::parse(image).map(|r| r.name_tag())
}

/// Docker's `splitDockerDomain`.
fn split_domain(name: &str) -> (String, String) {
    let (mut domain, mut remainder) = match name.split_once('/') {
        Some((first, rest))
            if first.contains(['.', ':'])
                || first == "localhost"
                || first.to_ascii_lowercase() != first =>
        {
            (first.to_owned(), rest.to_owned())
        }
        _ => (DEFAULT_DOMAIN.to_owned(), name.to_owned()),
    };
    if domain == LEGACY_DEFAULT_DOMAIN {
        domain = DEFAULT_DOMAIN.to_owned();
    }
    if domain == DEFAULT_DOMAIN && !remainder.contains('/') {
        remainder = format!("{OFFICIAL_REPO_PREFIX}{remainder}");
    }
    (domain, remainder)
}

/// `[\w][\w.-]{0,127}`.
fn valid_tag(tag: &str) -> bool {
    let word = |c: char| c.is_ascii_alphanumeric() || c == '_';
    !tag.is_empty()
        && tag.len() <= 128
        && tag.starts_with(word)
        && tag.chars().all(|c| word(c) || c == '.' || c == '-')
}

/// `algorithm:hex` with a registered algorithm and its hex length.
fn validate_digest(digest: &str) -> Result<(), ImageRefError> {
    let Some((algorithm, hex)) = digest.split_once(':') else {
        return Err(ImageRefError::DigestFormat);
    };
    let algorithm_ok = algorithm.starts_with(|c: char| c.is_ascii_alphabetic())
        && algorithm.chars().all(|c| c.is_ascii_alphanumeric() || "-_+.".contains(c));
    if !algorithm_ok || hex.len() < 32 || !hex.chars().all(|c| c.is_ascii_hexdigit()) {
        return Err(ImageRefError::DigestFormat);
    }
    let expected = match algorithm {
        "sha256" => 64,
        "sha384" => 96,
        "sha512" => 128,
        _ => return Err(ImageRefError::UnsupportedDigest),
    };
    if hex.len() != expected {
        return Err(ImageRefError::DigestLength);
    }
    if hex.chars().any(|c| c.is_ascii_uppercase()) {
        return Err(ImageRefError::DigestFormat);
    }
    Ok(())
}

/// `[a-z0-9]+(?:(?:[._]|__|[-]+)[a-z0-9]+)*`
fn valid_path_component(component: &str) -> bool {
    let alnum = |c: u8| c.is_ascii_lowercase() || c.is_ascii_digit();
    let b = component.as_bytes();
    let mut i = 0;
    let run = |i: &mut usize| {
        let start = *i;
        while *i < b.len() && alnum(b[*i]) {
            *i += 1;
        }
        *i > start
    };
    if !run(&mut i) {
        return false;
    }
    while i < b.len() {
        let start = i;
        match b[i] {
            b'.' => i += 1,
            b'_' => {
                i += 1;
                if i < b.len() && b[i] == b'_' {
                    i += 1;
                }
            }
            b'-' => {
                while i < b.len() && b[i] == b'-' {
                    i += 1;
                }
            }
            _ => return false,
        }
        if i == start || !run(&mut i) {
            return false;
        }
    }
    true
}

/// A registry host with an optional port.
fn valid_domain(domain: &str) -> bool {
    let (host, port) = match domain.rsplit_once(':') {
        Some((host, port)) if !host.starts_with('[') || host.ends_with(']') => (host, Some(port)),
        _ => (domain, None),
    };
    if let Some(port) = port
        && (port.is_empty() || !port.chars().all(|c| c.is_ascii_digit()))
    {
        return false;
    }
    if host.starts_with('[') {
        return host
            .strip_prefix('[')
            .and_then(|h| h.strip_suffix(']'))
            .is_some_and(|h| h.parse::<std::net::Ipv6Addr>().is_ok());
    }
    !host.is_empty()
        && host.split('.').all(|label| {
            !label.is_empty()
                && label.starts_with(|c: char| c.is_ascii_alphanumeric())
                && label.ends_with(|c: char| c.is_ascii_alphanumeric())
                && label.chars().all(|c| c.is_ascii_alphanumeric() || c == '-')
        })
}

/// `repository@algorithm:hex`, with the repository normalised the way Docker names images
/// (`nginx` and `docker.io/library/nginx` are the same) and any tag dropped: how a pinned
/// image and the image a runtime reports are compared (PodUnavailableBudget availability,
/// SidecarSet upgrades).
#[derive(Debug, PartialEq, Eq)]
pub(crate) struct DigestRef<'a> {
    pub(crate) repository: String,
    pub(crate) digest: &'a str,
}

impl<'a> DigestRef<'a> {
    /// `None` when `image` is not pinned by digest, or names no repository (a bare
    /// `sha256:<hex>` as containerd may report).
    pub(crate) fn parse(image: &'a str) -> Option<Self> {
        let (name, digest) = image.rsplit_once('@')?;
        let (algorithm, hex) = digest.split_once(':')?;
        if name.is_empty() || algorithm.is_empty() || hex.is_empty() {
            return None;
        }
        // Drop a tag: a ':' after the last '/' (a ':' before it belongs to a registry port).
        let last_slash = name.rfind('/').map_or(0, |i| i + 1);
        let name = match name[last_slash..].find(':') {
            Some(colon) => &name[..last_slash + colon],
            None => name,
        };
        Some(Self { repository: normalize_repository(name), digest })
    }
}

fn normalize_repository(name: &str) -> String {
    let (domain, rest) = match name.split_once('/') {
        Some((first, rest)) if first.contains(['.', ':']) || first == "localhost" => (first, rest),
        _ => ("docker.io", name),
    };
    let domain = if domain == "index.docker.io" { "docker.io" } else { domain };
    if domain == "docker.io" && !rest.contains('/') {
        format!("docker.io/library/{rest}")
    } else {
        format!("{domain}/{rest}")
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    const HEX: &str = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef";

    #[test]
    fn short_names_normalise() {
        let r = ImageRef::parse("nginx").unwrap();
        assert_eq!((r.domain.as_str(), r.path.as_str()), ("docker.io", "library/nginx"));
        assert_eq!(r.name_tag(), ("nginx".into(), "latest".into()));
        assert_eq!(name_tag("team/app:v1").unwrap(), ("team/app".into(), "v1".into()));
        assert_eq!(
            name_tag("index.docker.io/library/nginx:1").unwrap(),
            ("nginx".into(), "1".into())
        );
    }

    #[test]
    fn registries_with_ports() {
        let r = ImageRef::parse("registry.example.com:5000/team/app:v1").unwrap();
        assert_eq!(r.domain, "registry.example.com:5000");
        assert_eq!(r.name_tag(), ("registry.example.com:5000/team/app".into(), "v1".into()));
        assert_eq!(name_tag("localhost/app").unwrap(), ("localhost/app".into(), "latest".into()));
        assert_eq!(name_tag("localhost:5000/app").unwrap().0, "localhost:5000/app");
    }

    #[test]
    fn digests_win_over_tags() {
        let digest = format!("sha256:{HEX}");
        assert_eq!(
            name_tag(&format!("busybox@{digest}")).unwrap(),
            ("busybox".into(), digest.clone())
        );
        assert_eq!(name_tag(&format!("busybox:1.0@{digest}")).unwrap().1, digest);
        assert_eq!(
            ImageRef::parse("busybox@md5:0123456789abcdef0123456789abcdef"),
            Err(ImageRefError::UnsupportedDigest)
        );
        assert_eq!(
            ImageRef::parse("busybox@sha256:0123456789abcdef0123456789abcdef"),
            Err(ImageRefError::DigestLength)
        );
        assert_eq!(ImageRef::parse("busybox@sha256"), Err(ImageRefError::DigestFormat));
    }

    #[test]
    fn bad_references() {
        assert_eq!(ImageRef::parse(""), Err(ImageRefError::InvalidFormat));
        assert_eq!(ImageRef::parse("a b"), Err(ImageRefError::InvalidFormat));
        assert_eq!(ImageRef::parse("nginx:"), Err(ImageRefError::InvalidFormat));
        assert_eq!(ImageRef::parse("Nginx"), Err(ImageRefError::Uppercase("library/Nginx".into())));
        assert_eq!(ImageRef::parse(HEX), Err(ImageRefError::HexIdentifier(HEX.into())));
        assert!(ImageRef::parse(&"a".repeat(300)).is_err());
        assert_eq!(
            ImageRef::parse("Nginx").unwrap_err().to_string(),
            "invalid reference format: repository name (library/Nginx) must be lowercase"
        );
    }

    #[test]
    fn display_is_familiar() {
        assert_eq!(ImageRef::parse("docker.io/library/nginx:1").unwrap().to_string(), "nginx:1");
    }
}
