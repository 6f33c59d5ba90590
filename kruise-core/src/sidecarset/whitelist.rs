//! The `SidecarSet_PatchPodMetadata_WhiteList` entry of the `kruise-configuration`
//! ConfigMap: which pod annotations a SidecarSet's `patchPodMetadata` may write.
//!
//! The entry holds JSON: `{"rules": [{"selector": <label selector on the SidecarSet>,
//! "allowedAnnotationKeyExprs": [<regular expressions>]}]}`. A rule without a selector applies
//! to every SidecarSet. Upstream checks it when a SidecarSet is admitted (not when a pod is
//! injected), and so does kruise-rs: see [`crate::sidecarset::admission`].

use std::collections::BTreeMap;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector;
use kruise_api::apps::v1beta1::SidecarSet;
use kruise_api::well_known::config;
use serde::{Deserialize, Serialize};

use crate::admission::meta::label_selector_as_selector;

/// The parsed whitelist.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PatchMetadataWhitelist {
    /// The rules; a key is allowed when any applicable rule allows it.
    #[serde(default)]
    pub rules: Vec<PatchMetadataWhitelistRule>,
}

/// One rule of the whitelist.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PatchMetadataWhitelistRule {
    /// The SidecarSets (by their labels) the rule applies to; all when unset.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub selector: Option<LabelSelector>,
    /// Regular expressions (unanchored, as Go's `MatchString`) of allowed annotation keys.
    #[serde(default)]
    pub allowed_annotation_key_exprs: Vec<String>,
}

/// Why the whitelist could not be read or applied.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum WhitelistError {
    /// The ConfigMap entry is not valid JSON of the expected shape.
    #[error("invalid {key} in {configmap}: {source}", key = config::SIDECARSET_PATCH_POD_METADATA_WHITE_LIST, configmap = config::KRUISE_CONFIGURATION)]
    Parse {
        /// The JSON error.
        source: serde_json::Error,
    },
}

/// Reads the whitelist from the data of the `kruise-configuration` ConfigMap; `None` when the
/// ConfigMap has no such entry (or no data).
///
/// # Errors
/// When the entry is there but does not parse.
pub fn parse_patch_metadata_whitelist(
    configmap_data: &BTreeMap<String, String>,
) -> Result<Option<PatchMetadataWhitelist>, WhitelistError> {
    let Some(text) = configmap_data.get(config::SIDECARSET_PATCH_POD_METADATA_WHITE_LIST) else {
        return Ok(None);
    };
    serde_json::from_str(text).map(Some).map_err(|source| WhitelistError::Parse { source })
}

/// Whether `sidecar_set`'s `patchPodMetadata` passes the whitelist: `Err` holds upstream's
/// reason. `defaults_allowed` is the `SidecarSetPatchPodMetadataDefaultsAllowed` gate, which
/// lets everything through when no rule applies.
pub fn check_patch_metadata(
    sidecar_set: &SidecarSet,
    whitelist: Option<&PatchMetadataWhitelist>,
    defaults_allowed: bool,
) -> Result<(), String> {
    if sidecar_set.spec.patch_pod_metadata.is_empty() {
        return Ok(());
    }
    let Some(whitelist) = whitelist else {
        if defaults_allowed {
            return Ok(());
        }
        return Err("SidecarSet patch metadata whitelist not found".into());
    };
    let empty = BTreeMap::new();
    let labels = sidecar_set.metadata.labels.as_ref().unwrap_or(&empty);
    let mut allowed = Vec::new();
    for rule in &whitelist.rules {
        if let Some(selector) = &rule.selector {
            let selector = label_selector_as_selector(Some(selector))?;
            if !selector.matches(labels) {
                continue;
            }
        }
        for expr in &rule.allowed_annotation_key_exprs {
            allowed.push(regex::Regex::new(expr).map_err(|e| e.to_string())?);
        }
    }
    if allowed.is_empty() {
        if defaults_allowed {
            return Ok(());
        }
        return Err("sidecarSet patch metadata annotation is not allowed".into());
    }
    for patch in &sidecar_set.spec.patch_pod_metadata {
        for key in patch.annotations.keys() {
            if !allowed.iter().any(|re| re.is_match(key)) {
                return Err(format!("sidecarSet patch metadata annotation({key}) is not allowed"));
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use kruise_api::apps::v1beta1::{SidecarSetPatchPodMetadata, SidecarSetSpec};

    fn set(keys: &[&str]) -> SidecarSet {
        let mut s = SidecarSet::new("s", SidecarSetSpec::default());
        s.spec.patch_pod_metadata = vec![SidecarSetPatchPodMetadata {
            annotations: keys.iter().map(|k| ((*k).to_owned(), "{}".to_owned())).collect(),
            patch_policy: None,
        }];
        s
    }

    #[test]
    fn rules_allow_keys_by_regex() {
        let data: BTreeMap<String, String> = [(
            config::SIDECARSET_PATCH_POD_METADATA_WHITE_LIST.to_owned(),
            r#"{"rules":[{"allowedAnnotationKeyExprs":["^oom-score$","^cni\\..*"]}]}"#.to_owned(),
        )]
        .into();
        let wl = parse_patch_metadata_whitelist(&data).expect("parses").expect("present");
        assert!(check_patch_metadata(&set(&["oom-score", "cni.io/x"]), Some(&wl), false).is_ok());
        let err = check_patch_metadata(&set(&["other"]), Some(&wl), false).expect_err("denied");
        assert_eq!(err, "sidecarSet patch metadata annotation(other) is not allowed");
        assert!(check_patch_metadata(&set(&["x"]), None, false).is_err());
        assert!(check_patch_metadata(&set(&["x"]), None, true).is_ok());
        assert!(check_patch_metadata(&set(&[]), None, false).is_err());
        assert!(parse_patch_metadata_whitelist(&BTreeMap::new()).expect("ok").is_none());
        let bad: BTreeMap<String, String> =
            [(config::SIDECARSET_PATCH_POD_METADATA_WHITE_LIST.to_owned(), "{".to_owned())].into();
        assert!(parse_patch_metadata_whitelist(&bad).is_err());
    }
}
