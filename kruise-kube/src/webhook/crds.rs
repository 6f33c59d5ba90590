//! Points every multi-version Kruise CRD's conversion at this webhook.

use base64::Engine as _;
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::api::{Api, Patch, PatchParams};
use serde_json::{Value, json};

use super::conversion::CONVERT_PATH;
use super::{WebhookConfig, WebhookError};

/// The `ConversionReview` versions the CRDs are told this webhook understands.
pub const CONVERSION_REVIEW_VERSIONS: [&str; 2] = ["v1", "v1beta1"];

/// Names of the Kruise CRDs with more than one version (those that need conversion).
pub fn multi_version_crds() -> Vec<String> {
    kruise_api::crds()
        .into_iter()
        .filter(|crd| crd.spec.versions.len() > 1)
        .filter_map(|crd| crd.metadata.name)
        .collect()
}

/// The `spec.conversion` merge patch that routes conversion to the webhook of `config`
/// (`config.port` must be the bound port), trusting `ca_pem`.
pub fn conversion_patch(config: &WebhookConfig, ca_pem: &str) -> Value {
    json!({"spec": {"conversion": {
        "strategy": "Webhook",
        "webhook": {
            "conversionReviewVersions": CONVERSION_REVIEW_VERSIONS,
            "clientConfig": config.client_config(CONVERT_PATH, ca_pem),
        },
    }}})
}

/// Every Kruise CRD, those with more than one version converting through the webhook of
/// `config` (its Service, or the URL in external-URL mode), as upstream's chart installs
/// them. No `caBundle` yet: the manager fills it in when it starts. Until then the API
/// server cannot reach the webhook, so a request that needs conversion (a v1alpha1 write)
/// fails with an error instead of being stored as it is under v1beta1.
pub fn crds_with_conversion(config: &WebhookConfig) -> Vec<CustomResourceDefinition> {
    use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::{
        CustomResourceConversion, ServiceReference, WebhookClientConfig, WebhookConversion,
    };
    let client_config = match config.url(CONVERT_PATH) {
        Some(url) => WebhookClientConfig { url: Some(url), ..WebhookClientConfig::default() },
        None => WebhookClientConfig {
            service: Some(ServiceReference {
                namespace: config.namespace.clone(),
                name: config.service_name.clone(),
                path: Some(CONVERT_PATH.to_owned()),
                port: Some(i32::from(config.service_port)),
            }),
            ..WebhookClientConfig::default()
        },
    };
    let conversion = CustomResourceConversion {
        strategy: "Webhook".to_owned(),
        webhook: Some(WebhookConversion {
            client_config: Some(client_config),
            conversion_review_versions: CONVERSION_REVIEW_VERSIONS.map(str::to_owned).to_vec(),
        }),
    };
    kruise_api::crds()
        .into_iter()
        .map(|mut crd| {
            if crd.spec.versions.len() > 1 {
                crd.spec.conversion = Some(conversion.clone());
            }
            crd
        })
        .collect()
}

/// Patches every installed multi-version Kruise CRD so the API server converts through this
/// webhook (`strategy: Webhook`, `caBundle` = base64 of `ca_pem`, and the Service or, with
/// `config.host`, the URL). CRDs that are not installed are skipped. Answers the names of
/// the patched CRDs.
pub async fn configure_crd_conversion(
    client: &kube::Client,
    config: &WebhookConfig,
    ca_pem: &str,
) -> Result<Vec<String>, WebhookError> {
    let api: Api<CustomResourceDefinition> = Api::all(client.clone());
    let patch = conversion_patch(config, ca_pem);
    let mut patched = Vec::new();
    for name in multi_version_crds() {
        match api.patch(&name, &PatchParams::default(), &Patch::Merge(&patch)).await {
            Ok(_) => patched.push(name),
            Err(kube::Error::Api(s)) if s.code == 404 => {
                tracing::debug!(crd = %name, "CRD not installed; its conversion is not configured");
            }
            Err(source) => return Err(WebhookError::PatchCrd { name, source }),
        }
    }
    tracing::info!(crds = ?patched, "configured CRD conversion webhooks");
    Ok(patched)
}

/// Patches the installed multi-version Kruise CRDs whose conversion settings differ from
/// [`conversion_patch`] (a reinstalled CRD, a changed CA); answers the names patched. Used
/// by the server's periodic check, so settings that already match cost only a read.
pub(crate) async fn ensure_crd_conversion(
    client: &kube::Client,
    config: &WebhookConfig,
    ca_pem: &str,
) -> Result<Vec<String>, WebhookError> {
    let api: Api<CustomResourceDefinition> = Api::all(client.clone());
    let patch = conversion_patch(config, ca_pem);
    let want = &patch["spec"]["conversion"];
    let mut patched = Vec::new();
    for name in multi_version_crds() {
        let crd = match api.get_opt(&name).await {
            Ok(Some(crd)) => crd,
            Ok(None) => continue,
            Err(source) => return Err(WebhookError::PatchCrd { name, source }),
        };
        let have = serde_json::to_value(&crd.spec.conversion).unwrap_or(Value::Null);
        if covers(want, &have) {
            continue;
        }
        match api.patch(&name, &PatchParams::default(), &Patch::Merge(&patch)).await {
            Ok(_) => patched.push(name),
            Err(kube::Error::Api(s)) if s.code == 404 => {}
            Err(source) => return Err(WebhookError::PatchCrd { name, source }),
        }
    }
    if !patched.is_empty() {
        tracing::info!(crds = ?patched, "configured CRD conversion webhooks");
    }
    Ok(patched)
}

/// Whether `have` already holds everything a merge patch of `want` would set (`null` in
/// `want`: absent or null in `have`).
fn covers(want: &Value, have: &Value) -> bool {
    match want {
        Value::Null => have.is_null(),
        Value::Object(fields) => {
            fields.iter().all(|(key, value)| covers(value, have.get(key).unwrap_or(&Value::Null)))
        }
        other => other == have,
    }
}

/// base64 of `ca_pem`, as `caBundle` holds it.
pub(crate) fn ca_bundle(ca_pem: &str) -> String {
    base64::engine::general_purpose::STANDARD.encode(ca_pem)
}

#[cfg(test)]
mod tests {
    use super::{WebhookConfig, covers, crds_with_conversion};
    use serde_json::json;

    #[test]
    fn printed_crds_convert_through_the_webhook_without_a_ca_yet() {
        let crds = crds_with_conversion(&WebhookConfig::new());
        let clone = crds
            .iter()
            .find(|c| c.metadata.name.as_deref() == Some("clonesets.apps.kruise.io"))
            .expect("CloneSet CRD");
        assert_eq!(
            serde_json::to_value(&clone.spec.conversion).expect("json"),
            json!({"strategy": "Webhook", "webhook": {
                "clientConfig": {"service": {
                    "namespace": "kruise-system", "name": "kruise-webhook-service",
                    "path": "/convert", "port": 443}},
                "conversionReviewVersions": ["v1", "v1beta1"]}})
        );
        // Single-version CRDs need no conversion.
        for crd in &crds {
            assert_eq!(
                crd.spec.conversion.is_some(),
                crd.spec.versions.len() > 1,
                "{:?}",
                crd.metadata.name
            );
        }
        let external = crds_with_conversion(&WebhookConfig::new().with_host("10.0.0.5"));
        let clone = external
            .iter()
            .find(|c| c.metadata.name.as_deref() == Some("clonesets.apps.kruise.io"))
            .expect("CloneSet CRD");
        assert_eq!(
            serde_json::to_value(&clone.spec.conversion).expect("json")["webhook"]["clientConfig"],
            json!({"url": "https://10.0.0.5:9876/convert"})
        );
    }

    #[test]
    fn covers_compares_what_a_merge_patch_would_set() {
        let want = json!({"strategy": "Webhook", "webhook": {"url": null, "caBundle": "x"}});
        let have = json!({"strategy": "Webhook", "webhook": {"caBundle": "x", "extra": 1}});
        assert!(covers(&want, &have));
        let stale = json!({"strategy": "Webhook", "webhook": {"caBundle": "y"}});
        assert!(!covers(&want, &stale));
        let with_url = json!({"strategy": "Webhook", "webhook": {"url": "u", "caBundle": "x"}});
        assert!(!covers(&want, &with_url));
        assert!(!covers(&want, &json!({"strategy": "None"})));
        assert!(!covers(&want, &serde_json::Value::Null));
    }
}
