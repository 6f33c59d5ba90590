//! A workload's scale, whatever its kind: `spec.replicas` and `status.selector` read through
//! the scale subresource, which every workload a `targetRef` may name has (Deployments,
//! ReplicaSets, StatefulSets, CloneSets, Advanced StatefulSets, and custom workloads with a
//! scale subresource). PodUnavailableBudget and WorkloadSpread resolve their targets here.
//!
//! Kinds are found through discovery once and kept; a kind that is not served is asked for
//! again next time (its CRD may come).

use std::collections::HashMap;
use std::sync::Mutex;

use kube::Client;
use kube::api::{Api, ApiResource, DynamicObject, GroupVersionKind};
use serde_json::Value;

/// What the scale subresource says of a workload.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Scale {
    /// `spec.replicas`.
    pub replicas: Option<i32>,
    /// `status.selector`, in its string form (`app=web,tier in (a,b)`).
    pub selector: String,
}

/// Why a workload's scale could not be read.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ScaleError {
    /// Discovery does not know the kind, or it has no scale subresource.
    #[error("{0} is not served with a scale subresource")]
    NoScale(String),
    /// The workload does not exist.
    #[error("{kind} {namespace}/{name} not found")]
    NotFound {
        /// Its kind.
        kind: String,
        /// Its namespace.
        namespace: String,
        /// Its name.
        name: String,
    },
    /// The API server failed the read.
    #[error("reading {what}: {source}")]
    Read {
        /// What was read.
        what: String,
        /// The failure.
        source: kube::Error,
    },
}

/// The kinds found through discovery, shared by everything that reads scales (ask
/// [`crate::cache::SharedCaches::shared`] for it).
#[derive(Default)]
pub struct ScaleReader {
    /// `group/version/kind` to the resource and whether it has a scale subresource.
    kinds: Mutex<HashMap<String, (ApiResource, bool)>>,
}

impl std::fmt::Debug for ScaleReader {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ScaleReader").finish_non_exhaustive()
    }
}

/// The group-version-kind an `apiVersion` and `kind` name.
pub fn gvk_of(api_version: &str, kind: &str) -> GroupVersionKind {
    let (group, version) = match api_version.split_once('/') {
        Some((g, v)) => (g, v),
        None => ("", api_version),
    };
    GroupVersionKind::gvk(group, version, kind)
}

impl ScaleReader {
    /// The resource serving `gvk` and whether it has a scale subresource, from discovery the
    /// first time.
    pub async fn kind(
        &self,
        client: &Client,
        gvk: &GroupVersionKind,
    ) -> Option<(ApiResource, bool)> {
        let key = format!("{}/{}/{}", gvk.group, gvk.version, gvk.kind);
        let known =
            self.kinds.lock().unwrap_or_else(std::sync::PoisonError::into_inner).get(&key).cloned();
        if known.is_some() {
            return known;
        }
        let (resource, capabilities) = kube::discovery::pinned_kind(client, gvk).await.ok()?;
        let scale = capabilities.subresources.iter().any(|(sub, _)| sub.plural == "scale");
        self.kinds
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .insert(key, (resource.clone(), scale));
        Some((resource, scale))
    }

    /// The scale of the workload `api_version`/`kind` named `name` in `namespace`.
    ///
    /// # Errors
    /// See [`ScaleError`].
    pub async fn scale(
        &self,
        client: &Client,
        namespace: &str,
        api_version: &str,
        kind: &str,
        name: &str,
    ) -> Result<Scale, ScaleError> {
        let gvk = gvk_of(api_version, kind);
        let Some((resource, true)) = self.kind(client, &gvk).await else {
            return Err(ScaleError::NoScale(format!("{api_version}/{kind}")));
        };
        let api: Api<DynamicObject> = Api::namespaced_with(client.clone(), namespace, &resource);
        let scale = api
            .get_subresource("scale", name)
            .await
            .map_err(|e| read_error(e, kind, namespace, name, "scale"))?;
        let scale = serde_json::to_value(&scale).unwrap_or(Value::Null);
        Ok(Scale {
            replicas: scale["spec"]["replicas"].as_i64().and_then(|r| i32::try_from(r).ok()),
            selector: scale["status"]["selector"].as_str().unwrap_or_default().to_owned(),
        })
    }

    /// The whole workload, for fields the scale does not carry (`replicasPathList`).
    ///
    /// # Errors
    /// See [`ScaleError`].
    pub async fn object(
        &self,
        client: &Client,
        namespace: &str,
        api_version: &str,
        kind: &str,
        name: &str,
    ) -> Result<Value, ScaleError> {
        let gvk = gvk_of(api_version, kind);
        let Some((resource, _)) = self.kind(client, &gvk).await else {
            return Err(ScaleError::NoScale(format!("{api_version}/{kind}")));
        };
        let api: Api<DynamicObject> = Api::namespaced_with(client.clone(), namespace, &resource);
        let object = api.get(name).await.map_err(|e| read_error(e, kind, namespace, name, ""))?;
        Ok(serde_json::to_value(&object).unwrap_or(Value::Null))
    }
}

/// A failed read of `kind` `namespace/name` (its `subresource`, when not empty): 404 is
/// [`ScaleError::NotFound`], anything else [`ScaleError::Read`].
fn read_error(
    e: kube::Error,
    kind: &str,
    namespace: &str,
    name: &str,
    subresource: &str,
) -> ScaleError {
    match e {
        kube::Error::Api(ref status) if status.code == 404 => ScaleError::NotFound {
            kind: kind.to_owned(),
            namespace: namespace.to_owned(),
            name: name.to_owned(),
        },
        source => ScaleError::Read {
            what: format!("{kind} {namespace}/{name} {subresource}").trim_end().to_owned(),
            source,
        },
    }
}
