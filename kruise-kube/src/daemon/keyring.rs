//! The node's own registry credentials, as the kubelet's keyring finds them, for pulls that
//! the NodeImage's pull secrets do not authenticate:
//!
//! - **the docker keyring**: `config.json` (or the legacy `.dockercfg`) files on the node, at
//!   the kubelet's paths ([`DEFAULT_DOCKER_CONFIG_PATHS`]), read once at start;
//! - **credential provider plugins** (`--plugin-config-file`, `--plugin-bin-dir`): the
//!   kubelet's exec protocol (`credentialprovider.kubelet.k8s.io/v1`). For an image that a
//!   provider's `matchImages` matches, the plugin `<bin-dir>/<name>` runs with the provider's
//!   `args` and `env`, reads a `CredentialProviderRequest` on stdin and prints a
//!   `CredentialProviderResponse`; its `auth` entries are kept for `cacheDuration` (else the
//!   provider's `defaultCacheDuration`) under the image, its registry or globally, as
//!   `cacheKeyType` says.
//!
//! Pull secrets come first; then these, most specific first; then an anonymous pull.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use kruise_cri::AuthConfig;
use serde::Deserialize;
use serde_json::json;
use tokio::io::AsyncWriteExt as _;

use super::credentials::{DockerConfig, credentials_in, glob_matches, registry_of};

/// Where the kubelet looks for docker config files (`config.json` and `.dockercfg` in each
/// directory), besides `$HOME/.docker`.
pub const DEFAULT_DOCKER_CONFIG_PATHS: &[&str] = &["/var/lib/kubelet", "/.docker", "/root/.docker"];

/// How long a plugin may run.
const PLUGIN_TIMEOUT: Duration = Duration::from_secs(60);

/// The plugin API version this daemon speaks.
const PLUGIN_API: &str = "credentialprovider.kubelet.k8s.io/v1";

/// Why the plugin configuration cannot be used.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum KeyringError {
    /// The file could not be read.
    #[error("--plugin-config-file {path}: {source}")]
    Read {
        /// The file.
        path: PathBuf,
        /// The I/O error.
        #[source]
        source: std::io::Error,
    },
    /// The file is not a CredentialProviderConfig.
    #[error("--plugin-config-file {path}: {message}")]
    Invalid {
        /// The file.
        path: PathBuf,
        /// What is wrong, naming the field.
        message: String,
    },
}

/// The kubelet's `CredentialProviderConfig` (`kubelet.config.k8s.io/v1`).
#[derive(Clone, Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
struct ProviderConfig {
    #[serde(default)]
    api_version: String,
    #[serde(default)]
    kind: String,
    #[serde(default)]
    providers: Vec<Provider>,
}

/// One plugin.
#[derive(Clone, Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
struct Provider {
    #[serde(default)]
    name: String,
    #[serde(default)]
    match_images: Vec<String>,
    #[serde(default)]
    default_cache_duration: Option<String>,
    #[serde(default)]
    api_version: String,
    #[serde(default)]
    args: Vec<String>,
    #[serde(default)]
    env: Vec<ProviderEnv>,
}

#[derive(Clone, Debug, Default, Deserialize)]
struct ProviderEnv {
    #[serde(default)]
    name: String,
    #[serde(default)]
    value: String,
}

/// A plugin's answer.
#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
struct ProviderResponse {
    #[serde(default)]
    api_version: String,
    #[serde(default)]
    kind: String,
    #[serde(default)]
    cache_key_type: String,
    #[serde(default)]
    cache_duration: Option<String>,
    #[serde(default)]
    auth: HashMap<String, ProviderAuth>,
}

#[derive(Debug, Default, Deserialize)]
struct ProviderAuth {
    #[serde(default)]
    username: String,
    #[serde(default)]
    password: String,
}

/// Credentials a plugin gave, kept until `until`.
struct Cached {
    config: DockerConfig,
    until: Instant,
}

/// The node's docker keyring and credential provider plugins.
#[derive(Default)]
pub struct NodeKeyring {
    docker: Vec<DockerConfig>,
    providers: Vec<Provider>,
    bin_dir: PathBuf,
    /// By provider, then cache key (`image:<repo>`, `registry:<host>` or `global`).
    cache: Mutex<HashMap<String, HashMap<String, Cached>>>,
    /// Held while a plugin runs: concurrent pulls wait for its answer (and its cache) rather
    /// than running it again, as the kubelet's single flight does.
    runs: tokio::sync::Mutex<()>,
}

impl std::fmt::Debug for NodeKeyring {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("NodeKeyring")
            .field("docker_configs", &self.docker.len())
            .field("providers", &self.providers.iter().map(|p| &p.name).collect::<Vec<_>>())
            .finish()
    }
}

/// A Go duration (`12h`, `10m30s`); `None` when it does not parse.
fn go_duration(text: &str) -> Option<Duration> {
    let parsed: jiff::SignedDuration = text.parse().ok()?;
    Duration::try_from(parsed).ok()
}

impl NodeKeyring {
    /// The docker config files found in `dirs` (`config.json`, then `.dockercfg`, in each).
    pub fn with_docker_configs(dirs: &[PathBuf]) -> Self {
        let mut docker = Vec::new();
        for dir in dirs {
            for (file, legacy) in [("config.json", false), (".dockercfg", true)] {
                if let Ok(bytes) = std::fs::read(dir.join(file)) {
                    let config = DockerConfig::parse(&bytes, legacy);
                    if !config.is_empty() {
                        tracing::info!(path = %dir.join(file).display(), entries = config.len(),
                            "docker keyring");
                        docker.push(config);
                    }
                }
            }
        }
        Self { docker, ..Self::default() }
    }

    /// The kubelet's docker config directories: `$HOME/.docker` and
    /// [`DEFAULT_DOCKER_CONFIG_PATHS`].
    pub fn default_docker_dirs() -> Vec<PathBuf> {
        let mut dirs: Vec<PathBuf> = std::env::var_os("HOME")
            .map(|home| PathBuf::from(home).join(".docker"))
            .into_iter()
            .collect();
        dirs.extend(DEFAULT_DOCKER_CONFIG_PATHS.iter().map(PathBuf::from));
        dirs.dedup();
        dirs
    }

    /// Adds the credential provider plugins of `config_file` (a `CredentialProviderConfig`,
    /// YAML or JSON), run from `bin_dir`.
    ///
    /// # Errors
    /// The file cannot be read, or is not a valid configuration (the error names the field).
    pub fn with_plugins(
        mut self,
        config_file: &Path,
        bin_dir: &Path,
    ) -> Result<Self, KeyringError> {
        let text = std::fs::read_to_string(config_file)
            .map_err(|source| KeyringError::Read { path: config_file.to_owned(), source })?;
        let invalid =
            |message: String| KeyringError::Invalid { path: config_file.to_owned(), message };
        let config: ProviderConfig =
            serde_yaml::from_str(&text).map_err(|e| invalid(e.to_string()))?;
        if config.kind != "CredentialProviderConfig" {
            return Err(invalid(format!(
                "kind: must be CredentialProviderConfig, not {:?}",
                config.kind
            )));
        }
        if !config.api_version.starts_with("kubelet.config.k8s.io/") {
            return Err(invalid(format!(
                "apiVersion: must be kubelet.config.k8s.io/v1, not {:?}",
                config.api_version
            )));
        }
        for (i, p) in config.providers.iter().enumerate() {
            let at = |field: &str| format!("providers[{i}].{field}");
            if p.name.is_empty() || p.name.contains('/') || p.name == "." || p.name == ".." {
                return Err(invalid(format!(
                    "{}: must be a file name in --plugin-bin-dir",
                    at("name")
                )));
            }
            if p.match_images.is_empty() {
                return Err(invalid(format!(
                    "{}: at least one pattern is required",
                    at("matchImages")
                )));
            }
            if p.api_version != PLUGIN_API {
                return Err(invalid(format!(
                    "{}: must be {PLUGIN_API}, not {:?}",
                    at("apiVersion"),
                    p.api_version
                )));
            }
            if let Some(d) = &p.default_cache_duration
                && go_duration(d).is_none()
            {
                return Err(invalid(format!(
                    "{}: {d:?} is not a duration",
                    at("defaultCacheDuration")
                )));
            }
        }
        self.providers = config.providers;
        self.bin_dir = bin_dir.to_owned();
        Ok(self)
    }

    /// The node's credentials for `image`: the docker keyring's and the plugins', most
    /// specific first. A plugin that fails is logged and gives none.
    pub async fn credentials_for(&self, image: &str) -> Vec<AuthConfig> {
        let mut configs: Vec<DockerConfig> = self.docker.clone();
        for provider in &self.providers {
            if !provider.match_images.iter().any(|m| glob_matches(m, image).is_some()) {
                continue;
            }
            if let Some(config) = self.cached(provider, image) {
                configs.push(config);
                continue;
            }
            let _running = self.runs.lock().await;
            if let Some(config) = self.cached(provider, image) {
                configs.push(config);
                continue;
            }
            match self.run_plugin(provider, image).await {
                Ok(config) => configs.push(config),
                Err(message) => {
                    tracing::warn!(plugin = %provider.name, %image, %message, "credential provider failed");
                }
            }
        }
        credentials_in(image, &configs.iter().collect::<Vec<_>>())
    }

    fn cache_keys(image: &str) -> [String; 3] {
        let repo = match kruise_core::image::ImageRef::parse(image) {
            Ok(r) => format!("{}/{}", r.domain, r.path),
            Err(_) => image.to_owned(),
        };
        [format!("image:{repo}"), format!("registry:{}", registry_of(image)), "global".to_owned()]
    }

    fn cached(&self, provider: &Provider, image: &str) -> Option<DockerConfig> {
        let cache = self.cache.lock().unwrap_or_else(|p| p.into_inner());
        let entries = cache.get(&provider.name)?;
        let now = Instant::now();
        Self::cache_keys(image)
            .iter()
            .find_map(|k| entries.get(k).filter(|c| c.until > now).map(|c| c.config.clone()))
    }

    async fn run_plugin(&self, provider: &Provider, image: &str) -> Result<DockerConfig, String> {
        let program = self.bin_dir.join(&provider.name);
        let mut command = tokio::process::Command::new(&program);
        command
            .args(&provider.args)
            .envs(provider.env.iter().map(|e| (e.name.clone(), e.value.clone())))
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .kill_on_drop(true);
        let mut child =
            command.spawn().map_err(|e| format!("running {}: {e}", program.display()))?;
        let request = json!({"apiVersion": provider.api_version, "kind": "CredentialProviderRequest", "image": image});
        if let Some(mut stdin) = child.stdin.take() {
            stdin.write_all(request.to_string().as_bytes()).await.map_err(|e| e.to_string())?;
        }
        let output = tokio::time::timeout(PLUGIN_TIMEOUT, child.wait_with_output())
            .await
            .map_err(|_| format!("{} did not answer within {PLUGIN_TIMEOUT:?}", program.display()))?
            .map_err(|e| e.to_string())?;
        if !output.status.success() {
            return Err(format!(
                "{} exited with {}: {}",
                program.display(),
                output.status,
                String::from_utf8_lossy(&output.stderr).trim()
            ));
        }
        let response: ProviderResponse = serde_json::from_slice(&output.stdout)
            .map_err(|e| format!("its CredentialProviderResponse does not parse: {e}"))?;
        if response.kind != "CredentialProviderResponse"
            || response.api_version != provider.api_version
        {
            return Err(format!(
                "it answered kind {:?} apiVersion {:?}, not CredentialProviderResponse {}",
                response.kind, response.api_version, provider.api_version
            ));
        }
        let mut config = DockerConfig::default();
        for (key, auth) in &response.auth {
            config = config.with(key, &auth.username, &auth.password);
        }
        let duration = response
            .cache_duration
            .as_deref()
            .or(provider.default_cache_duration.as_deref())
            .and_then(go_duration)
            .unwrap_or_default();
        if !duration.is_zero() {
            let [image_key, registry_key, global] = Self::cache_keys(image);
            let key = match response.cache_key_type.as_str() {
                "Registry" => registry_key,
                "Global" => global,
                _ => image_key,
            };
            let mut cache = self.cache.lock().unwrap_or_else(|p| p.into_inner());
            cache
                .entry(provider.name.clone())
                .or_default()
                .insert(key, Cached { config: config.clone(), until: Instant::now() + duration });
        }
        Ok(config)
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    fn load(text: &str) -> Result<NodeKeyring, KeyringError> {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("config.yaml");
        std::fs::write(&file, text).unwrap();
        NodeKeyring::default().with_plugins(&file, dir.path())
    }

    const HEAD: &str = "apiVersion: kubelet.config.k8s.io/v1\nkind: CredentialProviderConfig\n";

    #[test]
    fn bad_plugin_configs_name_the_field() {
        for (body, named) in [
            (
                "apiVersion: v1\nkind: CredentialProviderConfig\n",
                "apiVersion: must be kubelet.config.k8s.io/v1",
            ),
            (
                "apiVersion: kubelet.config.k8s.io/v1\nkind: Other\n",
                "kind: must be CredentialProviderConfig",
            ),
            (
                "providers:\n- name: ../x\n  matchImages: [a]\n  apiVersion: credentialprovider.kubelet.k8s.io/v1\n",
                "providers[0].name",
            ),
            (
                "providers:\n- name: x\n  apiVersion: credentialprovider.kubelet.k8s.io/v1\n",
                "providers[0].matchImages",
            ),
            (
                "providers:\n- name: x\n  matchImages: [a]\n  apiVersion: credentialprovider.kubelet.k8s.io/v1beta1\n",
                "providers[0].apiVersion",
            ),
            (
                "providers:\n- name: x\n  matchImages: [a]\n  apiVersion: credentialprovider.kubelet.k8s.io/v1\n  defaultCacheDuration: soon\n",
                "providers[0].defaultCacheDuration",
            ),
            ("providers: {\n", "--plugin-config-file"),
        ] {
            let text = if body.starts_with("providers") {
                format!("{HEAD}{body}")
            } else {
                body.to_owned()
            };
            let err = load(&text).unwrap_err().to_string();
            assert!(err.contains(named), "{body}: {err}");
        }
        let ok = load(&format!(
            "{HEAD}providers:\n- name: ecr\n  matchImages: [\"*.dkr.ecr.*.amazonaws.com\"]\n  apiVersion: credentialprovider.kubelet.k8s.io/v1\n  defaultCacheDuration: 12h\n"
        ))
        .unwrap();
        assert_eq!(format!("{ok:?}"), "NodeKeyring { docker_configs: 0, providers: [\"ecr\"] }");
    }

    #[tokio::test]
    async fn a_plugin_that_fails_or_answers_garbage_gives_nothing() {
        use std::os::unix::fs::PermissionsExt as _;
        let dir = tempfile::tempdir().unwrap();
        for (name, script) in
            [("fails", "#!/bin/sh\nexit 3\n"), ("garbage", "#!/bin/sh\necho not-json\n")]
        {
            let path = dir.path().join(name);
            std::fs::write(&path, script).unwrap();
            std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
        }
        let file = dir.path().join("config.yaml");
        std::fs::write(
            &file,
            format!(
                "{HEAD}providers:\n- name: fails\n  matchImages: [\"reg.io\"]\n  apiVersion: credentialprovider.kubelet.k8s.io/v1\n\
                 - name: garbage\n  matchImages: [\"reg.io\"]\n  apiVersion: credentialprovider.kubelet.k8s.io/v1\n\
                 - name: missing\n  matchImages: [\"reg.io\"]\n  apiVersion: credentialprovider.kubelet.k8s.io/v1\n"
            ),
        )
        .unwrap();
        let keyring = NodeKeyring::default().with_plugins(&file, dir.path()).unwrap();
        assert!(keyring.credentials_for("reg.io/app:1").await.is_empty());
        assert!(keyring.credentials_for("other.io/app:1").await.is_empty());
    }
}
