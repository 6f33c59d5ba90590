//! The `kruise-configuration` ConfigMap in the manager's namespace: the settings upstream
//! reads at run time rather than from flags (whitelists of custom workloads and of the pod
//! metadata SidecarSets may patch).

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::ConfigMap;
use kruise_api::well_known::config;
use kruise_core::persistentpodstate::CustomWorkloadWhitelist;

/// The ConfigMap's data in `namespace`: empty when it does not exist.
///
/// # Errors
/// The read failed; the message names the ConfigMap.
pub async fn read(
    client: &kube::Client,
    namespace: &str,
) -> Result<BTreeMap<String, String>, String> {
    let api: kube::Api<ConfigMap> = kube::Api::namespaced(client.clone(), namespace);
    let configmap = api
        .get_opt(config::KRUISE_CONFIGURATION)
        .await
        .map_err(|e| format!("reading {namespace}/{}: {e}", config::KRUISE_CONFIGURATION))?;
    Ok(configmap.and_then(|c| c.data).unwrap_or_default())
}

/// The `PPS_Watch_Custom_Workload_WhiteList` entry of `data`: empty when absent.
///
/// # Errors
/// The entry does not parse; the message names it.
pub fn pps_whitelist(data: &BTreeMap<String, String>) -> Result<CustomWorkloadWhitelist, String> {
    let key = config::PPS_WATCH_CUSTOM_WORKLOAD_WHITE_LIST;
    match data.get(key) {
        Some(text) => CustomWorkloadWhitelist::parse(text)
            .map_err(|e| format!("invalid {key} in {}: {e}", config::KRUISE_CONFIGURATION)),
        None => Ok(CustomWorkloadWhitelist::default()),
    }
}

/// [`read`], then [`pps_whitelist`].
///
/// # Errors
/// As theirs.
pub async fn read_pps_whitelist(
    client: &kube::Client,
    namespace: &str,
) -> Result<CustomWorkloadWhitelist, String> {
    pps_whitelist(&read(client, namespace).await?)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_whitelist_entry_parses_or_is_named() {
        let mut data = BTreeMap::new();
        assert!(pps_whitelist(&data).expect("absent").workloads.is_empty());
        data.insert(
            config::PPS_WATCH_CUSTOM_WORKLOAD_WHITE_LIST.to_owned(),
            r#"{"workloads":[{"Group":"example.io","Version":"v1","Kind":"Stateful"}]}"#.to_owned(),
        );
        assert!(pps_whitelist(&data).expect("valid").contains_workload("example.io", "Stateful"));
        data.insert(config::PPS_WATCH_CUSTOM_WORKLOAD_WHITE_LIST.to_owned(), "{".to_owned());
        let err = pps_whitelist(&data).expect_err("not JSON");
        assert!(
            err.starts_with(
                "invalid PPS_Watch_Custom_Workload_WhiteList in kruise-configuration: invalid JSON"
            ),
            "{err}"
        );
    }
}
