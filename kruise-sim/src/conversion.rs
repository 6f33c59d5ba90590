//! Conversion of custom resources between the versions of their CRD.
//!
//! Objects are stored at the CRD's storage version. With `spec.conversion.strategy: None`,
//! another served version is the same JSON with its `apiVersion` rewritten. With `Webhook`,
//! the CRD's conversion webhook (`spec.conversion.webhook.clientConfig`, reached as admission
//! webhooks are, see [`crate::admission`]) converts, with the `ConversionReview`
//! `apiextensions.k8s.io/v1` wire format: on reads (get, list, watch events) from the storage
//! version, and on writes to the storage version and back for the response.
//!
//! Built-in resources stored as another group's (`events.k8s.io` Events, stored as core
//! Events) convert here too, with the pure functions of [`crate::builtin_conversion`].
//!
//! As the real server does, a webhook's answer is checked (uid, count, apiVersion, kind) and
//! the object's metadata is restored from the input except for labels and annotations. As
//! there, a custom resource is pruned and defaulted against the schema of the version it is in
//! after every conversion and every decode from storage. Not done: field selectors on CRD
//! selectable fields are evaluated on the stored object.

use crate::admission::CallError;
use crate::builtin_conversion;
use crate::cluster::{Cluster, present, to_storage};
use crate::error::ApiError;
use crate::resources::{Origin, ResourceDef};
use serde_json::{Value, json};
use std::sync::Arc;

/// The real server's fixed timeout for conversion webhooks.
const TIMEOUT_SECONDS: u64 = 30;

/// Why a conversion webhook did not convert.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ConversionError {
    /// The call failed.
    #[error("conversion webhook for {gvk} failed: {source}")]
    Call {
        /// `group/version, Kind=Kind` of the input.
        gvk: String,
        /// Why.
        source: CallError,
    },
    /// The webhook answered, but not with a usable `ConversionReview`.
    #[error("conversion webhook for {gvk} returned invalid response: {why}")]
    Response {
        /// `group/version, Kind=Kind` of the input.
        gvk: String,
        /// Why.
        why: String,
    },
    /// The webhook answered with the wrong number of objects.
    #[error("conversion webhook for {gvk} returned {got} objects, expected {want}")]
    Count {
        /// `group/version, Kind=Kind` of the input.
        gvk: String,
        /// How many came back.
        got: usize,
        /// How many were sent.
        want: usize,
    },
    /// One converted object is wrong.
    #[error(
        "conversion webhook for {gvk} returned invalid converted object at index {index}: {why}"
    )]
    Object {
        /// `group/version, Kind=Kind` of the input.
        gvk: String,
        /// Its index.
        index: usize,
        /// Why.
        why: String,
    },
}

fn api_version(group: &str, version: &str) -> String {
    if group.is_empty() { version.to_string() } else { format!("{group}/{version}") }
}

fn set_api_version(obj: &mut Value, av: &str) {
    if let Some(m) = obj.as_object_mut() {
        m.insert("apiVersion".into(), json!(av));
    }
}

/// Restores metadata from `orig`, keeping only the converted labels and annotations.
fn restore_meta(orig: &Value, converted: &mut Value) {
    let mut meta = orig.get("metadata").cloned().unwrap_or_else(|| json!({}));
    if let (Some(m), Some(new)) =
        (meta.as_object_mut(), converted.get("metadata").and_then(Value::as_object))
    {
        for k in ["labels", "annotations"] {
            match new.get(k) {
                Some(v) => m.insert(k.into(), v.clone()),
                None => m.remove(k),
            };
        }
    }
    if let Some(c) = converted.as_object_mut() {
        c.insert("metadata".into(), meta);
    }
}

impl Cluster {
    /// The conversion webhook's `clientConfig`, if `def`'s CRD converts through a webhook
    /// and `def` is not the storage version (otherwise conversion is an apiVersion rewrite).
    pub(crate) fn conversion_webhook(&self, def: &ResourceDef) -> Option<Value> {
        let Origin::Crd(name) = &def.origin else { return None };
        if def.version == def.storage_version {
            return None;
        }
        let crd = self.store.get(
            &("apiextensions.k8s.io".into(), "customresourcedefinitions".into()),
            &(String::new(), name.clone()),
        )?;
        let conv = crd.pointer("/spec/conversion")?;
        if conv.get("strategy").and_then(Value::as_str) != Some("Webhook") {
            return None;
        }
        Some(conv.pointer("/webhook/clientConfig").cloned().unwrap_or(Value::Null))
    }

    /// Whether `def`'s objects are converted between the served and the stored form
    /// (through a CRD's conversion webhook, or as a built-in stored as another group's), or
    /// coerced to a schema on the way (every custom resource, see [`Cluster::coerce`]).
    pub(crate) fn converts(&self, def: &ResourceDef) -> bool {
        def.schema.is_some()
            || builtin_conversion::of(def).is_some()
            || self.conversion_webhook(def).is_some()
    }

    /// Converts `objs` (all of `def`'s kind, at `from`) to `to` through the webhook.
    async fn convert_via(
        &self,
        def: &ResourceDef,
        client: &Value,
        objs: Vec<Value>,
        from: &str,
        to: &str,
    ) -> Result<Vec<Value>, ConversionError> {
        if objs.is_empty() || from == to {
            return Ok(objs);
        }
        let gvk = format!("{}/{from}, Kind={}", def.group, def.kind);
        let desired = api_version(&def.group, to);
        let uid = crate::util::uuid();
        let review = json!({
            "apiVersion": "apiextensions.k8s.io/v1",
            "kind": "ConversionReview",
            "request": {"uid": uid, "desiredAPIVersion": desired, "objects": objs},
        });
        let bad = |why: String| ConversionError::Response { gvk: gvk.clone(), why };
        let reply = self
            .admission
            .post_json(client, TIMEOUT_SECONDS, &review)
            .await
            .map_err(|source| ConversionError::Call { gvk: gvk.clone(), source })?;
        let kind_ok = reply.get("kind").and_then(Value::as_str) == Some("ConversionReview")
            && reply.get("apiVersion").and_then(Value::as_str) == Some("apiextensions.k8s.io/v1");
        if !kind_ok {
            return Err(bad(format!(
                "expected webhook response of apiextensions.k8s.io/v1, Kind=ConversionReview, got {}, Kind={}",
                reply.get("apiVersion").and_then(Value::as_str).unwrap_or(""),
                reply.get("kind").and_then(Value::as_str).unwrap_or("")
            )));
        }
        let Some(resp) = reply.get("response") else {
            return Err(bad("no response provided".into()));
        };
        let got_uid = resp.get("uid").and_then(Value::as_str).unwrap_or("");
        if got_uid != uid {
            return Err(bad(format!("expected response.uid={uid:?}, got {got_uid:?}")));
        }
        let status = resp.pointer("/result/status").and_then(Value::as_str).unwrap_or("");
        if status != "Success" {
            let msg = resp.pointer("/result/message").and_then(Value::as_str).unwrap_or("");
            return Err(bad(if msg.is_empty() {
                format!("response.result.status was '{status}', not 'Success'")
            } else {
                msg.to_string()
            }));
        }
        let converted =
            resp.get("convertedObjects").and_then(Value::as_array).cloned().unwrap_or_default();
        if converted.len() != objs.len() {
            return Err(ConversionError::Count { gvk, got: converted.len(), want: objs.len() });
        }
        let mut out = Vec::with_capacity(objs.len());
        for (index, (orig, mut c)) in objs.iter().zip(converted).enumerate() {
            let av = c.get("apiVersion").and_then(Value::as_str).unwrap_or("");
            if av != desired {
                return Err(ConversionError::Object {
                    gvk,
                    index,
                    why: format!("invalid groupVersion (expected {desired}, received {av})"),
                });
            }
            let kind = c.get("kind").and_then(Value::as_str).unwrap_or("");
            if kind != def.kind {
                return Err(ConversionError::Object {
                    gvk,
                    index,
                    why: format!("invalid kind (expected {}, received {kind})", def.kind),
                });
            }
            restore_meta(orig, &mut c);
            out.push(c);
        }
        Ok(out)
    }

    /// Prunes and defaults a custom resource against the schema of `version`, as
    /// kube-apiserver does each time it decodes one from storage and each time it converts one
    /// (apiextensions-apiserver's schema-coercing decoder and converter). So a field that the
    /// version's schema does not know (stored before the schema changed, or carried over by a
    /// `None` conversion from a version that knows it) is never served or stored.
    fn coerce(&self, def: &ResourceDef, version: &str, obj: &mut Value) {
        let schema = if version == def.version {
            def.schema.clone()
        } else {
            self.resolve(&def.group, version, &def.plural).and_then(|d| d.schema.clone())
        };
        if let Some(schema) = schema {
            crate::schema::prune(obj, &schema);
            crate::schema::default(obj, &schema);
        }
    }

    /// A stored custom resource as kube-apiserver decodes it, in the served version when that
    /// is a rewrite of `apiVersion` (no webhook): coerced to the storage version's schema,
    /// then, for another version, to that version's.
    fn decode_custom(&self, def: &ResourceDef, obj: &Value) -> Value {
        let mut out = obj.clone();
        self.coerce(def, &def.storage_version, &mut out);
        if def.version != def.storage_version {
            self.coerce(def, &def.version, &mut out);
        }
        present(def, &out)
    }

    /// Stored objects as served in `def`'s version (the input's `apiVersion` is ignored:
    /// the content is the storage version's). A failure answers 500 with the webhook error.
    pub(crate) async fn served_all(
        &self,
        def: &ResourceDef,
        objs: Vec<Value>,
    ) -> Result<Vec<Value>, ApiError> {
        if let Some(alias) = builtin_conversion::of(def) {
            return Ok(objs.iter().map(|o| present(def, &alias.to_served(o))).collect());
        }
        let Some(client) = self.conversion_webhook(def) else {
            if def.schema.is_some() {
                return Ok(objs.iter().map(|o| self.decode_custom(def, o)).collect());
            }
            return Ok(objs.iter().map(|o| present(def, o)).collect());
        };
        let storage = api_version(&def.group, &def.storage_version);
        let objs = objs
            .into_iter()
            .map(|mut o| {
                self.coerce(def, &def.storage_version, &mut o);
                set_api_version(&mut o, &storage);
                o
            })
            .collect();
        let out = self
            .convert_via(def, &client, objs, &def.storage_version, &def.version)
            .await
            .map_err(|e| ApiError::new(500, "", e.to_string()))?;
        Ok(out
            .into_iter()
            .map(|mut o| {
                self.coerce(def, &def.version, &mut o);
                present(def, &o)
            })
            .collect())
    }

    /// One stored object as served in `def`'s version.
    pub(crate) async fn served(&self, def: &ResourceDef, obj: Value) -> Result<Value, ApiError> {
        let mut v = self.served_all(def, vec![obj]).await?;
        v.pop().ok_or_else(|| ApiError::internal("conversion lost the object"))
    }

    /// One stored object (shared) as served in `def`'s version. A kind that is served as
    /// stored (no version alias, no conversion webhook, no schema) comes back as it is,
    /// without a copy: its `kind` and `apiVersion` are written as it is encoded.
    pub(crate) async fn served_shared(
        &self,
        def: &ResourceDef,
        obj: Arc<Value>,
    ) -> Result<Arc<Value>, ApiError> {
        let as_stored = builtin_conversion::of(def).is_none()
            && def.schema.is_none()
            && self.conversion_webhook(def).is_none();
        if as_stored {
            return Ok(obj);
        }
        let obj = Arc::try_unwrap(obj).unwrap_or_else(|shared| (*shared).clone());
        self.served(def, obj).await.map(Arc::new)
    }

    /// Stored objects (shared) as served in `def`'s version.
    pub(crate) async fn served_arcs(
        &self,
        def: &ResourceDef,
        objs: &[Arc<Value>],
    ) -> Result<Vec<Value>, ApiError> {
        if let Some(alias) = builtin_conversion::of(def) {
            return Ok(objs.iter().map(|o| present(def, &alias.to_served(o))).collect());
        }
        if self.conversion_webhook(def).is_none() {
            if def.schema.is_some() {
                return Ok(objs.iter().map(|o| self.decode_custom(def, o)).collect());
            }
            return Ok(objs.iter().map(|o| present(def, o)).collect());
        }
        self.served_all(def, objs.iter().map(|o| (**o).clone()).collect()).await
    }

    /// Reads one object as served in `def`'s version.
    pub async fn get_served(
        &self,
        def: &ResourceDef,
        ns: &str,
        name: &str,
    ) -> Result<Value, ApiError> {
        let obj = self.get(def, ns, name)?;
        self.served(def, obj).await
    }

    /// An object in `def`'s version (content) converted to the storage version; the result
    /// carries the storage apiVersion. A failure answers 500 InternalError, as storage
    /// encoding failures do on the real server.
    pub(crate) async fn to_stored(
        &self,
        def: &ResourceDef,
        mut obj: Value,
    ) -> Result<Value, ApiError> {
        if let Some(alias) = builtin_conversion::of(def) {
            let mut out = alias.to_storage(&obj);
            to_storage(def, &mut out);
            return Ok(out);
        }
        let Some(client) = self.conversion_webhook(def) else {
            // A `None` conversion: the same fields under the storage version, pruned to its
            // schema (a field only the request's version knows is dropped, as kube-apiserver
            // drops it, not stored to surface later).
            if def.schema.is_some() && def.version != def.storage_version {
                self.coerce(def, &def.storage_version, &mut obj);
            }
            return Ok(obj);
        };
        set_api_version(&mut obj, &def.api_version());
        let mut out = self
            .convert_via(def, &client, vec![obj], &def.version, &def.storage_version)
            .await
            .map_err(|e| ApiError::internal(e.to_string()))?;
        let mut stored =
            out.pop().ok_or_else(|| ApiError::internal("conversion lost the object"))?;
        self.coerce(def, &def.storage_version, &mut stored);
        Ok(stored)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn metadata_is_restored_but_labels_and_annotations() {
        let orig = json!({"metadata": {"name": "a", "uid": "u", "labels": {"x": "1"}}});
        let mut c = json!({"metadata": {"name": "b", "annotations": {"y": "2"}}, "spec": {}});
        restore_meta(&orig, &mut c);
        assert_eq!(c["metadata"], json!({"name": "a", "uid": "u", "annotations": {"y": "2"}}));
        let e = ConversionError::Call {
            gvk: "apps.kruise.io/v1beta1, Kind=CloneSet".into(),
            source: CallError::Post {
                url: "https://x.default.svc:443/c?timeout=30s".into(),
                reason: "service \"x\" not found".into(),
            },
        };
        assert_eq!(
            e.to_string(),
            r#"conversion webhook for apps.kruise.io/v1beta1, Kind=CloneSet failed: Post "https://x.default.svc:443/c?timeout=30s": service "x" not found"#
        );
    }
}
