//! The chart's pre-delete check, as upstream's `kruise-helm-hook` does it: uninstalling
//! OpenKruise while CloneSets, Advanced StatefulSets or Advanced DaemonSets exist would delete
//! their CRDs and, with them, every pod they own. The check lists them and refuses while any
//! exists.

use kruise_api::apps::v1beta1::{CloneSet, DaemonSet, StatefulSet};
use kube::api::{Api, ListParams};

/// Why the check could not decide.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum UninstallCheckError {
    /// Listing a kind failed (other than its CRD being gone).
    #[error("listing {kind}: {source}")]
    List {
        /// The kind.
        kind: &'static str,
        /// The API error.
        #[source]
        source: kube::Error,
    },
}

/// The workloads that block an uninstall, as `Kind namespace/name`, in kind then name order.
/// A kind whose CRD is gone has none.
///
/// # Errors
/// A list the API server refused (other than 404).
pub async fn blocking_workloads(client: &kube::Client) -> Result<Vec<String>, UninstallCheckError> {
    let mut found = Vec::new();
    found.extend(names::<CloneSet>(client, "CloneSet").await?);
    found.extend(names::<StatefulSet>(client, "Advanced StatefulSet").await?);
    found.extend(names::<DaemonSet>(client, "Advanced DaemonSet").await?);
    Ok(found)
}

async fn names<K>(
    client: &kube::Client,
    kind: &'static str,
) -> Result<Vec<String>, UninstallCheckError>
where
    K: kube::Resource<DynamicType = (), Scope = kube::core::NamespaceResourceScope>
        + Clone
        + serde::de::DeserializeOwned
        + std::fmt::Debug,
{
    let api: Api<K> = Api::all(client.clone());
    let list = match api.list_metadata(&ListParams::default()).await {
        Ok(list) => list,
        Err(kube::Error::Api(status)) if status.code == 404 => return Ok(Vec::new()),
        Err(source) => return Err(UninstallCheckError::List { kind, source }),
    };
    let mut names: Vec<String> = list
        .items
        .iter()
        .map(|o| {
            let ns = o.metadata.namespace.as_deref().unwrap_or_default();
            let name = o.metadata.name.as_deref().unwrap_or_default();
            format!("{kind} {ns}/{name}")
        })
        .collect();
    names.sort();
    Ok(names)
}

/// The refusal for `blocking` (non-empty): how many, the first few, and what to do.
pub fn refusal(blocking: &[String]) -> String {
    const SHOWN: usize = 5;
    let shown = blocking.iter().take(SHOWN).cloned().collect::<Vec<_>>().join(", ");
    let more = blocking.len().saturating_sub(SHOWN);
    let more = if more > 0 { format!(" and {more} more") } else { String::new() };
    format!(
        "refusing to uninstall OpenKruise: {} workload(s) would lose their pods with the CRDs: {shown}{more}; delete them (or move them to native workloads) first",
        blocking.len()
    )
}
