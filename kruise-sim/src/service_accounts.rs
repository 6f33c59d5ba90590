//! Service accounts as a real cluster has them: every namespace gets the `default`
//! ServiceAccount and the `kube-root-ca.crt` ConfigMap when it is created (what
//! kube-controller-manager's serviceaccount and root-ca-cert-publisher controllers do, here at
//! once), and a new pod passes kube-apiserver's ServiceAccount admission: its service account
//! must exist, and unless automounting is turned off, every container and init container
//! mounts a `kube-api-access-<5 chars>` projected volume (token, CA bundle, namespace) at
//! `/var/run/secrets/kubernetes.io/serviceaccount`.

use serde_json::{Map, Value, json};

use crate::cluster::Cluster;
use crate::error::ApiError;

/// Where the token volume is mounted.
const TOKEN_MOUNT_PATH: &str = "/var/run/secrets/kubernetes.io/serviceaccount";
/// The token volume's name, before its random suffix.
const TOKEN_VOLUME_PREFIX: &str = "kube-api-access-";

/// Creates the `default` ServiceAccount and the `kube-root-ca.crt` ConfigMap of a new
/// namespace (each only if missing).
pub(crate) fn on_namespace_created(cluster: &Cluster, namespace: &str) {
    let objects = [
        (
            "serviceaccounts",
            json!({"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": "default"}}),
        ),
        (
            "configmaps",
            json!({
                "apiVersion": "v1", "kind": "ConfigMap",
                "metadata": {
                    "name": "kube-root-ca.crt",
                    "annotations": {"kubernetes.io/description": "Contains a CA bundle that can be used to verify the kube-apiserver when using internal endpoints such as the internal service IP or kubernetes.default.svc. No other usage is guaranteed across distributions of Kubernetes clusters."},
                },
                "data": {"ca.crt": cluster.root_ca()},
            }),
        ),
    ];
    for (plural, body) in objects {
        let Some(def) = cluster.resolve("", "v1", plural) else { continue };
        // Already there (a namespace created again after a crash of its creator, say): kept.
        let _ = cluster.create(&def, namespace, body, &Default::default());
    }
}

/// kube-apiserver's ServiceAccount admission of a new pod in `namespace`.
pub(crate) fn admit_pod(
    cluster: &Cluster,
    namespace: &str,
    pod: &mut Value,
) -> Result<(), ApiError> {
    let name = pod.pointer("/metadata/name").and_then(Value::as_str).unwrap_or_default().to_owned();
    let Some(spec) = pod.get_mut("spec").and_then(Value::as_object_mut) else { return Ok(()) };
    let account = match spec.get("serviceAccountName").and_then(Value::as_str) {
        Some(account) if !account.is_empty() => account.to_owned(),
        _ => {
            spec.insert("serviceAccountName".into(), json!("default"));
            "default".to_owned()
        }
    };
    spec.insert("serviceAccount".into(), json!(account));
    let key = (String::new(), "serviceaccounts".to_string());
    let Some(service_account) = cluster.store().get(&key, &(namespace.to_owned(), account.clone()))
    else {
        let target = if name.is_empty() { "pods".to_owned() } else { format!("pods {name:?}") };
        return Err(ApiError {
            code: 403,
            reason: "Forbidden",
            message: format!(
                "{target} is forbidden: error looking up service account {namespace}/{account}: serviceaccount {account:?} not found"
            ),
            details: Some(if name.is_empty() {
                json!({"kind": "pods"})
            } else {
                json!({"name": name, "kind": "pods"})
            }),
        });
    };
    let automount = spec
        .get("automountServiceAccountToken")
        .and_then(Value::as_bool)
        .or_else(|| service_account.get("automountServiceAccountToken").and_then(Value::as_bool))
        .unwrap_or(true);
    if automount {
        mount_token(spec);
    }
    Ok(())
}

/// Mounts the token volume in every container that has nothing at its path, and adds the
/// volume when one of them needs it.
fn mount_token(spec: &mut Map<String, Value>) {
    let existing = spec
        .get("volumes")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(|v| v.get("name").and_then(Value::as_str))
        .find(|n| n.starts_with(TOKEN_VOLUME_PREFIX))
        .map(str::to_owned);
    let volume_name = existing
        .clone()
        .unwrap_or_else(|| format!("{TOKEN_VOLUME_PREFIX}{}", crate::util::name_suffix()));
    let mount = json!({"name": volume_name, "readOnly": true, "mountPath": TOKEN_MOUNT_PATH});
    let mut needed = false;
    for list in ["initContainers", "containers"] {
        for container in spec.get_mut(list).and_then(Value::as_array_mut).into_iter().flatten() {
            let Some(container) = container.as_object_mut() else { continue };
            let mounts = container.entry("volumeMounts").or_insert_with(|| json!([]));
            if mounts.is_null() {
                *mounts = json!([]);
            }
            let Some(mounts) = mounts.as_array_mut() else { continue };
            let taken = mounts
                .iter()
                .any(|m| m.get("mountPath").and_then(Value::as_str) == Some(TOKEN_MOUNT_PATH));
            if !taken {
                mounts.push(mount.clone());
                needed = true;
            }
        }
    }
    if existing.is_none() && needed {
        let volume = json!({
            "name": volume_name,
            "projected": {
                "defaultMode": 420,
                "sources": [
                    {"serviceAccountToken": {"expirationSeconds": 3607, "path": "token"}},
                    {"configMap": {"name": "kube-root-ca.crt", "items": [{"key": "ca.crt", "path": "ca.crt"}]}},
                    {"downwardAPI": {"items": [{"path": "namespace", "fieldRef": {"apiVersion": "v1", "fieldPath": "metadata.namespace"}}]}},
                ],
            },
        });
        let volumes = spec.entry("volumes").or_insert_with(|| json!([]));
        if volumes.is_null() {
            *volumes = json!([]);
        }
        if let Some(volumes) = volumes.as_array_mut() {
            volumes.push(volume);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_container_mounts_one_token_volume() {
        let mut spec = json!({
            "initContainers": [{"name": "init", "image": "x"}],
            "containers": [
                {"name": "a", "image": "x"},
                {"name": "b", "image": "x", "volumeMounts": [{"name": "own", "mountPath": TOKEN_MOUNT_PATH}]},
            ],
            "volumes": [{"name": "own", "emptyDir": {}}],
        });
        let map = spec.as_object_mut().expect("object");
        mount_token(map);
        let volumes = spec["volumes"].as_array().expect("volumes");
        assert_eq!(volumes.len(), 2);
        let name = volumes[1]["name"].as_str().expect("name");
        assert!(
            name.starts_with(TOKEN_VOLUME_PREFIX) && name.len() == TOKEN_VOLUME_PREFIX.len() + 5
        );
        assert_eq!(spec["initContainers"][0]["volumeMounts"][0]["name"], name);
        assert_eq!(spec["containers"][0]["volumeMounts"][0]["mountPath"], TOKEN_MOUNT_PATH);
        assert_eq!(spec["containers"][1]["volumeMounts"].as_array().map(Vec::len), Some(1));
        // Admitting again adds nothing.
        let before = spec.clone();
        mount_token(spec.as_object_mut().expect("object"));
        assert_eq!(spec, before);
    }
}
