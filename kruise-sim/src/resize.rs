//! The `pods/resize` subresource (InPlacePodVerticalScaling, Kubernetes 1.33+).
//!
//! As the real server's resize strategy does, a request to `pods/NAME/resize` may change only
//! the containers' `resources` and `resizePolicy` (regular containers and native sidecars);
//! every other change in the request is dropped. The result is validated: only `cpu` and
//! `memory` may change, and the pod's QoS class may not.

use crate::cluster::{Cluster, PatchType, Sub, WriteOptions, apply_patch};
use crate::error::{ApiError, Cause};
use crate::resources::ResourceDef;
use serde_json::{Value, json};

/// The parts of a PATCH or PUT to `pods/resize`.
pub(crate) enum Request<'a> {
    /// A PUT with the whole pod.
    Put(Value),
    /// A PATCH of this type.
    Patch(PatchType, &'a [u8]),
}

/// What a pod subresource keeps of a requested pod: the stored pod with the fields it may
/// change applied, or why not.
pub(crate) type Apply = fn(&ResourceDef, &Value, &Value) -> Result<Value, ApiError>;

/// Serves a PATCH or PUT of a pod subresource (`resize`, `ephemeralcontainers`) that keeps
/// what `apply` keeps of the request: returns the stored pod and warnings.
pub(crate) async fn update_through(
    cluster: &Cluster,
    def: &ResourceDef,
    ns: &str,
    name: &str,
    req: Request<'_>,
    opts: &WriteOptions,
    apply: Apply,
) -> Result<(Value, Vec<String>), ApiError> {
    let patch = match &req {
        Request::Put(_) => None,
        Request::Patch(PatchType::Apply, _) => {
            return Err(ApiError::unsupported_patch(&[
                "application/json-patch+json",
                "application/merge-patch+json",
                "application/strategic-merge-patch+json",
            ]));
        }
        Request::Patch(t, body) => Some((*t, cluster.check_patch(def, Sub::Main, *t, body, opts)?)),
    };
    // A patch without a resourceVersion is retried on conflicts, as the real server does.
    let mut attempts = 0;
    loop {
        let old = cluster.get(def, ns, name)?;
        let requested = match (&req, &patch) {
            (Request::Put(body), _) => body.clone(),
            (_, Some((t, p))) => apply_patch(def, &old, p, *t)?,
            (Request::Patch(..), None) => return Err(ApiError::internal("resize patch lost")),
        };
        let body = apply(def, &old, &requested)?;
        let opts = WriteOptions { pod_subresource: true, ..opts.clone() };
        match cluster.update_admitted(def, ns, name, Sub::Main, body, &opts).await {
            Err(e) if e.code == 409 && patch.is_some() && attempts < 5 => attempts += 1,
            Err(e) => return Err(e),
            Ok((obj, _, warnings)) => return Ok((obj, warnings)),
        }
    }
}

/// The stored pod `old` with the ephemeral containers of `requested` (the
/// `pods/ephemeralcontainers` subresource): containers may be added, never removed or
/// changed; every other change in the request is dropped.
pub(crate) fn with_ephemeral_containers(
    def: &ResourceDef,
    old: &Value,
    requested: &Value,
) -> Result<Value, ApiError> {
    let name = old.pointer("/metadata/name").and_then(Value::as_str).unwrap_or_default();
    let mut out = with_requested_version(old, requested);
    let before: Vec<&Value> = containers(old, "ephemeralContainers").collect();
    let mut after: Vec<Value> = containers(requested, "ephemeralContainers").cloned().collect();
    if let Some(spec) = out.get_mut("spec").and_then(Value::as_object_mut) {
        // The new ones get a container's defaults, so that an unchanged one compares equal.
        let mut defaulted = serde_json::Map::new();
        defaulted.insert("ephemeralContainers".into(), json!(after));
        crate::defaults::pod_spec(&mut defaulted);
        after = defaulted["ephemeralContainers"].as_array().cloned().unwrap_or_default();
        spec.insert("ephemeralContainers".into(), json!(after));
    }
    let mut causes = Vec::new();
    for c in &before {
        let cname = c.get("name").and_then(Value::as_str).unwrap_or_default();
        match after.iter().find(|a| a.get("name") == c.get("name")) {
            None => causes.push(Cause::forbidden(
                "spec.ephemeralContainers",
                &format!("existing ephemeral containers \"{cname}\" may not be removed"),
            )),
            Some(a) if a != *c => causes.push(Cause::forbidden(
                "spec.ephemeralContainers",
                &format!("existing ephemeral containers \"{cname}\" may not be changed"),
            )),
            Some(_) => {}
        }
    }
    let mut names: Vec<&str> = ["containers", "initContainers"]
        .iter()
        .flat_map(|f| containers(old, f))
        .filter_map(|c| c.get("name").and_then(Value::as_str))
        .collect();
    for (i, c) in after.iter().enumerate() {
        let path = format!("spec.ephemeralContainers[{i}]");
        match c.get("name").and_then(Value::as_str).filter(|n| !n.is_empty()) {
            None => causes.push(Cause::required(&format!("{path}.name"), "")),
            Some(n) if names.contains(&n) => {
                causes.push(Cause::duplicate(&format!("{path}.name"), &json!(n)))
            }
            Some(n) => names.push(n),
        }
        if c.get("image").and_then(Value::as_str).is_none_or(str::is_empty) {
            causes.push(Cause::required(&format!("{path}.image"), ""));
        }
        for field in ["ports", "livenessProbe", "readinessProbe", "startupProbe", "lifecycle"] {
            if c.get(field).is_some_and(|v| !v.is_null()) {
                causes.push(Cause::forbidden(
                    &format!("{path}.{field}"),
                    "cannot be set for an Ephemeral Container",
                ));
            }
        }
    }
    if !causes.is_empty() {
        return Err(ApiError::invalid(&def.group, &def.kind, name, causes));
    }
    Ok(out)
}

/// The stored pod `old`, with the resourceVersion `requested` names (so that the write is
/// conditional on it, as the request asked).
fn with_requested_version(old: &Value, requested: &Value) -> Value {
    let mut out = old.clone();
    if let Some(rv) = requested.pointer("/metadata/resourceVersion")
        && let Some(m) = out.get_mut("metadata").and_then(Value::as_object_mut)
    {
        m.insert("resourceVersion".into(), rv.clone());
    }
    out
}

fn containers<'a>(pod: &'a Value, field: &str) -> impl Iterator<Item = &'a Value> {
    pod.pointer(&format!("/spec/{field}")).and_then(Value::as_array).into_iter().flatten()
}

/// The stored pod `old` with the resize-able fields of `requested` applied, validated.
pub(crate) fn resized(
    def: &ResourceDef,
    old: &Value,
    requested: &Value,
) -> Result<Value, ApiError> {
    let name = old.pointer("/metadata/name").and_then(Value::as_str).unwrap_or_default();
    let mut out = with_requested_version(old, requested);
    let mut causes = Vec::new();
    for field in ["containers", "initContainers"] {
        let Some(list) = out.pointer_mut(&format!("/spec/{field}")).and_then(Value::as_array_mut)
        else {
            continue;
        };
        for c in list.iter_mut() {
            if field == "initContainers" && c.get("restartPolicy") != Some(&json!("Always")) {
                continue;
            }
            let Some(want) = containers(requested, field).find(|w| w.get("name") == c.get("name"))
            else {
                continue;
            };
            for key in ["requests", "limits"] {
                let before = c.pointer(&format!("/resources/{key}")).cloned().unwrap_or(json!({}));
                let after =
                    want.pointer(&format!("/resources/{key}")).cloned().unwrap_or(json!({}));
                let names =
                    before.as_object().into_iter().chain(after.as_object()).flat_map(|m| m.keys());
                for r in names {
                    if r != "cpu" && r != "memory" && before.get(r) != after.get(r) {
                        // The real server says it once, on `spec`.
                        causes.push(Cause::forbidden(
                            "spec",
                            "only cpu and memory resources are mutable",
                        ));
                    }
                }
            }
            let Some(obj) = c.as_object_mut() else { continue };
            for k in ["resources", "resizePolicy"] {
                match want.get(k) {
                    Some(v) if !v.is_null() => obj.insert(k.into(), v.clone()),
                    _ => obj.remove(k),
                };
            }
        }
    }
    if causes.is_empty() {
        let qos = |v: &Value| {
            serde_json::from_value::<k8s_openapi::api::core::v1::Pod>(v.clone())
                .map(|p| crate::nodes::kubelet::qos_class(&p))
                .ok()
        };
        let (before, after) = (qos(old), qos(&out));
        if before != after {
            let shown = old.pointer("/status/qosClass").cloned().unwrap_or(json!(before));
            causes.push(Cause::invalid(
                "spec",
                &shown,
                "Pod QOS Class may not change as a result of resizing",
            ));
        }
    }
    if !causes.is_empty() {
        causes.dedup_by(|a, b| a.message == b.message && a.field == b.field);
        return Err(ApiError::invalid(&def.group, &def.kind, name, causes));
    }
    Ok(out)
}
