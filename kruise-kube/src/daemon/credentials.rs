//! Registry credentials from image pull secrets (`kubernetes.io/dockerconfigjson` with
//! `.dockerconfigjson`, or the legacy `kubernetes.io/dockercfg` with `.dockercfg`), as the
//! kubelet's keyring reads them: the entries whose registry matches the image, most specific
//! first.

use std::collections::BTreeMap;

use base64::Engine as _;
use k8s_openapi::api::core::v1::Secret;
use kruise_cri::AuthConfig;
use serde::Deserialize;

#[derive(Deserialize, Default)]
struct DockerConfigJson {
    #[serde(default)]
    auths: BTreeMap<String, DockerConfigEntry>,
}

#[derive(Deserialize, Default, Clone)]
pub(crate) struct DockerConfigEntry {
    #[serde(default)]
    username: String,
    #[serde(default)]
    password: String,
    #[serde(default)]
    auth: String,
    #[serde(default, rename = "identitytoken")]
    identity_token: String,
    #[serde(default, rename = "registrytoken")]
    registry_token: String,
}

/// The registry host of an image reference (`docker.io` for short names).
pub fn registry_of(image: &str) -> String {
    match kruise_core::image::ImageRef::parse(image) {
        Ok(r) => r.domain,
        Err(_) => image.split('/').next().unwrap_or_default().to_owned(),
    }
}

/// Docker Hub's names.
fn is_docker_hub(host: &str) -> bool {
    matches!(host, "docker.io" | "index.docker.io" | "registry-1.docker.io")
}

/// `(host, path prefix)` of a docker config key such as `https://index.docker.io/v1/`,
/// `registry:5000` or `registry/team`.
fn parse_key(key: &str) -> (String, String) {
    let rest = key.split_once("://").map_or(key, |(_, r)| r);
    let (host, path) = rest.split_once('/').unwrap_or((rest, ""));
    let path = path.trim_end_matches('/');
    // Docker Hub's legacy key carries the API version, not a repository.
    let path = if is_docker_hub(host) && (path == "v1" || path == "v2") { "" } else { path };
    (host.to_ascii_lowercase(), path.to_owned())
}

/// Whether the config key matches the image (by registry host, then repository prefix).
fn key_matches(key: &str, image: &str) -> Option<usize> {
    let (host, path) = parse_key(key);
    let (image_host, image_path) = match kruise_core::image::ImageRef::parse(image) {
        Ok(r) => (r.domain.to_ascii_lowercase(), r.path),
        Err(_) => return None,
    };
    let same_host = host == image_host || (is_docker_hub(&host) && is_docker_hub(&image_host));
    if !same_host {
        return None;
    }
    if path.is_empty() {
        return Some(0);
    }
    (image_path == path || image_path.starts_with(&format!("{path}/"))).then_some(path.len())
}

/// The CRI credentials of one entry. `server_address` stays empty, as the kubelet sends it:
/// containerd reads a non-empty one as a URL whose host must be the registry's, so a bare
/// `host:port` there makes every pull fail ("first path segment in URL cannot contain colon")
/// and a bare host makes containerd drop the credentials.
fn to_auth(entry: &DockerConfigEntry) -> AuthConfig {
    let (mut username, mut password) = (entry.username.clone(), entry.password.clone());
    if username.is_empty()
        && !entry.auth.is_empty()
        && let Ok(decoded) = base64::engine::general_purpose::STANDARD.decode(entry.auth.trim())
        && let Ok(text) = String::from_utf8(decoded)
        && let Some((u, p)) = text.split_once(':')
    {
        username = u.to_owned();
        password = p.to_owned();
    }
    AuthConfig {
        username,
        password,
        auth: entry.auth.clone(),
        server_address: String::new(),
        identity_token: entry.identity_token.clone(),
        registry_token: entry.registry_token.clone(),
    }
}

/// The entries of one secret, by config key.
fn entries(secret: &Secret) -> BTreeMap<String, DockerConfigEntry> {
    let data = secret.data.as_ref();
    if let Some(bytes) = data.and_then(|d| d.get(".dockerconfigjson")) {
        return DockerConfig::parse(&bytes.0, false).0;
    }
    if let Some(bytes) = data.and_then(|d| d.get(".dockercfg")) {
        return DockerConfig::parse(&bytes.0, true).0;
    }
    BTreeMap::new()
}

/// A docker config's entries by key: `config.json` (`{"auths": {...}}`) or the legacy
/// `.dockercfg` (the map itself).
#[derive(Clone, Default)]
pub struct DockerConfig(BTreeMap<String, DockerConfigEntry>);

impl DockerConfig {
    /// Parses `bytes`; what does not parse holds no entries.
    pub fn parse(bytes: &[u8], legacy: bool) -> Self {
        let entries = if legacy {
            serde_json::from_slice(bytes).unwrap_or_default()
        } else {
            serde_json::from_slice::<DockerConfigJson>(bytes).unwrap_or_default().auths
        };
        Self(entries)
    }

    /// This config with an entry for `key` (a registry host, with a path prefix or a glob).
    #[must_use]
    pub fn with(mut self, key: &str, username: &str, password: &str) -> Self {
        let entry = DockerConfigEntry {
            username: username.to_owned(),
            password: password.to_owned(),
            ..DockerConfigEntry::default()
        };
        self.0.insert(key.to_owned(), entry);
        self
    }

    /// How many entries.
    pub fn len(&self) -> usize {
        self.0.len()
    }

    /// True without entries.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

/// The credentials `configs` hold for `image`: every matching entry, the most specific
/// (longest repository prefix) first, in config order among equals. Keys may be globs
/// (`*.registry.example`), as credential provider plugins answer.
pub fn credentials_in(image: &str, configs: &[&DockerConfig]) -> Vec<AuthConfig> {
    let mut found: Vec<(usize, usize, AuthConfig)> = Vec::new();
    for (i, config) in configs.iter().enumerate() {
        for (key, entry) in &config.0 {
            let specificity = key_matches(key, image).or_else(|| glob_matches(key, image));
            if let Some(specificity) = specificity {
                found.push((specificity, i, to_auth(entry)));
            }
        }
    }
    found.sort_by(|a, b| b.0.cmp(&a.0).then(a.1.cmp(&b.1)));
    found.into_iter().map(|(_, _, a)| a).collect()
}

/// The credentials the secrets hold for `image`: every matching entry, the most specific
/// (longest repository prefix) first, in secret order among equals.
pub fn credentials_for(image: &str, secrets: &[Secret]) -> Vec<AuthConfig> {
    let configs: Vec<DockerConfig> = secrets.iter().map(|s| DockerConfig(entries(s))).collect();
    credentials_in(image, &configs.iter().collect::<Vec<_>>())
}

/// The kubelet's `matchImages` rule (`URLsMatchStr`): `pattern` and the image's registry are
/// split into host, port and path; each dot-separated part of the host matches as a glob
/// (`*` for any part, never across dots), with as many parts on both sides; the ports are
/// equal (none on both, or the same); the pattern's path is a prefix of the image's. The
/// answer is the specificity (the pattern path's length).
pub fn glob_matches(pattern: &str, image: &str) -> Option<usize> {
    let pattern = pattern.split_once("://").map_or(pattern, |(_, rest)| rest);
    let (pattern_host, pattern_path) = pattern.split_once('/').unwrap_or((pattern, ""));
    let reference = kruise_core::image::ImageRef::parse(image).ok()?;
    let (host, port) = split_port(&reference.domain);
    let (glob_host, glob_port) = split_port(pattern_host);
    if port != glob_port {
        return None;
    }
    let parts: Vec<&str> = host.split('.').collect();
    let globs: Vec<&str> = glob_host.split('.').collect();
    if parts.len() != globs.len() || !globs.iter().zip(&parts).all(|(g, p)| glob(g, p)) {
        return None;
    }
    let pattern_path = pattern_path.trim_end_matches('/');
    let path = &reference.path;
    let prefix = pattern_path.is_empty()
        || path == pattern_path
        || path.starts_with(&format!("{pattern_path}/"));
    prefix.then_some(pattern_path.len())
}

fn split_port(host: &str) -> (&str, Option<&str>) {
    match host.rsplit_once(':') {
        Some((h, p)) if !p.is_empty() && p.bytes().all(|b| b.is_ascii_digit()) => (h, Some(p)),
        _ => (host, None),
    }
}

/// Go's `filepath.Match` on one host part: `*` any run, `?` one character, the rest literal
/// (case-insensitive, as host names are).
fn glob(pattern: &str, text: &str) -> bool {
    let (p, t): (Vec<char>, Vec<char>) = (
        pattern.to_ascii_lowercase().chars().collect(),
        text.to_ascii_lowercase().chars().collect(),
    );
    let (mut pi, mut ti, mut star, mut mark) = (0, 0, None, 0);
    while ti < t.len() {
        if pi < p.len() && (p[pi] == '?' || p[pi] == t[ti]) {
            pi += 1;
            ti += 1;
        } else if pi < p.len() && p[pi] == '*' {
            star = Some(pi);
            mark = ti;
            pi += 1;
        } else if let Some(s) = star {
            pi = s + 1;
            mark += 1;
            ti = mark;
        } else {
            return false;
        }
    }
    while pi < p.len() && p[pi] == '*' {
        pi += 1;
    }
    pi == p.len()
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use k8s_openapi::ByteString;

    fn secret(key: &str, json: serde_json::Value) -> Secret {
        Secret {
            data: Some([(key.to_owned(), ByteString(json.to_string().into_bytes()))].into()),
            ..Default::default()
        }
    }

    #[test]
    fn dockerconfigjson_auth_field_decodes_to_user_and_password() {
        let auth = base64::engine::general_purpose::STANDARD.encode("kruise:pw:with:colons");
        let s = secret(
            ".dockerconfigjson",
            serde_json::json!({"auths": {"127.0.0.1:5000": {"auth": auth}}}),
        );
        let found = credentials_for("127.0.0.1:5000/test/busybox:1", std::slice::from_ref(&s));
        assert_eq!(found.len(), 1);
        assert_eq!(found[0].username, "kruise");
        assert_eq!(found[0].password, "pw:with:colons");
        assert_eq!(found[0].server_address, "", "as the kubelet sends it");
        assert!(
            credentials_for("127.0.0.1:5001/test/busybox:1", std::slice::from_ref(&s)).is_empty()
        );
        assert!(credentials_for("busybox:1", &[s]).is_empty());
    }

    #[test]
    fn docker_hub_keys_and_path_prefixes() {
        let s = secret(
            ".dockerconfigjson",
            serde_json::json!({"auths": {
                "https://index.docker.io/v1/": {"username": "hub", "password": "a"},
                "reg.example.com/team": {"username": "team", "password": "b"},
                "reg.example.com": {"username": "any", "password": "c"},
            }}),
        );
        let hub = credentials_for("nginx:1.25", std::slice::from_ref(&s));
        assert_eq!(hub.iter().map(|a| a.username.as_str()).collect::<Vec<_>>(), ["hub"]);
        let team = credentials_for("reg.example.com/team/app:1", std::slice::from_ref(&s));
        assert_eq!(team.iter().map(|a| a.username.as_str()).collect::<Vec<_>>(), ["team", "any"]);
        let other = credentials_for("reg.example.com/teamx/app:1", &[s]);
        assert_eq!(other.iter().map(|a| a.username.as_str()).collect::<Vec<_>>(), ["any"]);
    }

    #[test]
    fn match_images_globs_as_the_kubelet_reads_them() {
        let ecr = "*.dkr.ecr.*.amazonaws.com";
        assert!(glob_matches(ecr, "123.dkr.ecr.us-east-1.amazonaws.com/app:1").is_some());
        assert!(glob_matches(ecr, "dkr.ecr.us-east-1.amazonaws.com/app:1").is_none(), "parts");
        assert!(
            glob_matches(ecr, "123.dkr.ecr.us-east-1.amazonaws.com:443/app:1").is_none(),
            "port"
        );
        assert!(glob_matches("127.0.0.1:5443", "127.0.0.1:5443/busybox:1").is_some());
        assert!(glob_matches("127.0.0.1:5443", "127.0.0.1:5000/busybox:1").is_none());
        assert_eq!(glob_matches("registry.io/team", "registry.io/team/app:1"), Some(4));
        assert!(glob_matches("registry.io/team", "registry.io/teamx/app:1").is_none());
        assert!(glob_matches("*.io", "docker.io/library/nginx:1").is_some());
        assert!(glob_matches("reg?stry.io", "REGISTRY.io/a:1").is_some());
    }

    #[test]
    fn legacy_dockercfg_and_garbage() {
        let s = secret(
            ".dockercfg",
            serde_json::json!({"quay.io": {"username": "q", "password": "p"}}),
        );
        assert_eq!(credentials_for("quay.io/a/b:1", &[s])[0].username, "q");
        let bad = Secret {
            data: Some([(".dockerconfigjson".to_owned(), ByteString(b"{".to_vec()))].into()),
            ..Default::default()
        };
        assert!(credentials_for("quay.io/a/b:1", &[bad]).is_empty());
    }
}
