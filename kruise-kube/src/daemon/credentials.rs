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
struct DockerConfigEntry {
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

fn to_auth(entry: &DockerConfigEntry, server: &str) -> AuthConfig {
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
        server_address: server.to_owned(),
        identity_token: entry.identity_token.clone(),
        registry_token: entry.registry_token.clone(),
    }
}

/// The entries of one secret, by config key.
fn entries(secret: &Secret) -> BTreeMap<String, DockerConfigEntry> {
    let data = secret.data.as_ref();
    if let Some(bytes) = data.and_then(|d| d.get(".dockerconfigjson")) {
        return serde_json::from_slice::<DockerConfigJson>(&bytes.0).unwrap_or_default().auths;
    }
    if let Some(bytes) = data.and_then(|d| d.get(".dockercfg")) {
        return serde_json::from_slice(&bytes.0).unwrap_or_default();
    }
    BTreeMap::new()
}

/// The credentials the secrets hold for `image`: every matching entry, the most specific
/// (longest repository prefix) first, in secret order among equals.
pub fn credentials_for(image: &str, secrets: &[Secret]) -> Vec<AuthConfig> {
    let mut found: Vec<(usize, usize, AuthConfig)> = Vec::new();
    for (i, secret) in secrets.iter().enumerate() {
        for (key, entry) in entries(secret) {
            if let Some(specificity) = key_matches(&key, image) {
                found.push((specificity, i, to_auth(&entry, &parse_key(&key).0)));
            }
        }
    }
    found.sort_by(|a, b| b.0.cmp(&a.0).then(a.1.cmp(&b.1)));
    found.into_iter().map(|(_, _, a)| a).collect()
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
        assert_eq!(found[0].server_address, "127.0.0.1:5000");
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
