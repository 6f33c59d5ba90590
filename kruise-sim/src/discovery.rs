//! Discovery documents (`/api`, `/apis`, group and group/version resource lists) and the
//! OpenAPI v3 documents kubectl consults: which operations take `fieldValidation`, and the
//! schemas `kubectl explain` prints (from [`crate::openapi`]).

use crate::resources::ResourceDef;
use crate::util::version_priority;
use serde_json::{Value, json};
use std::collections::BTreeMap;
use std::sync::Arc;

/// `/api`.
pub fn core_versions(server_addr: &str) -> Value {
    json!({
        "kind": "APIVersions",
        "versions": ["v1"],
        "serverAddressByClientCIDRs": [{"clientCIDR": "0.0.0.0/0", "serverAddress": server_addr}],
    })
}

/// Groups in the order the server lists them, each with its versions, preferred first.
pub fn groups(defs: &[Arc<ResourceDef>]) -> Vec<(String, Vec<String>)> {
    let mut order: Vec<String> = Vec::new();
    let mut versions: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for d in defs {
        if d.group.is_empty() {
            continue;
        }
        if !order.contains(&d.group) {
            order.push(d.group.clone());
        }
        let vs = versions.entry(d.group.clone()).or_default();
        if !vs.contains(&d.version) {
            vs.push(d.version.clone());
        }
    }
    order
        .into_iter()
        .map(|g| {
            let mut vs = versions.remove(&g).unwrap_or_default();
            vs.sort_by_key(|v| version_priority(v));
            (g, vs)
        })
        .collect()
}

fn group_json(group: &str, versions: &[String]) -> Value {
    let vs: Vec<Value> = versions
        .iter()
        .map(|v| json!({"groupVersion": format!("{group}/{v}"), "version": v}))
        .collect();
    let preferred = vs.first().cloned().unwrap_or(json!({}));
    json!({"name": group, "versions": vs, "preferredVersion": preferred})
}

/// `/apis`.
pub fn group_list(defs: &[Arc<ResourceDef>]) -> Value {
    let groups: Vec<Value> = groups(defs).iter().map(|(g, vs)| group_json(g, vs)).collect();
    json!({"kind": "APIGroupList", "apiVersion": "v1", "groups": groups})
}

/// `/apis/<group>`.
pub fn group(defs: &[Arc<ResourceDef>], name: &str) -> Option<Value> {
    groups(defs).into_iter().find(|(g, _)| g == name).map(|(g, vs)| {
        let mut v = group_json(&g, &vs);
        v["kind"] = json!("APIGroup");
        v["apiVersion"] = json!("v1");
        v
    })
}

/// `/api/v1` or `/apis/<group>/<version>`.
pub fn resource_list(defs: &[Arc<ResourceDef>], group: &str, version: &str) -> Option<Value> {
    let mut resources = Vec::new();
    let mut any = false;
    for d in defs.iter().filter(|d| d.group == group && d.version == version) {
        any = true;
        let mut r = json!({
            "name": d.plural,
            "singularName": d.singular,
            "namespaced": d.namespaced,
            "kind": d.kind,
            "verbs": d.verbs,
        });
        if !d.short_names.is_empty() {
            r["shortNames"] = json!(d.short_names);
        }
        if !d.categories.is_empty() {
            r["categories"] = json!(d.categories);
        }
        resources.push(r);
        if d.status {
            resources.push(json!({
                "name": format!("{}/status", d.plural), "singularName": "",
                "namespaced": d.namespaced, "kind": d.kind, "verbs": ["get", "patch", "update"],
            }));
        }
        if d.scale.is_some() {
            resources.push(json!({
                "name": format!("{}/scale", d.plural), "singularName": "",
                "namespaced": d.namespaced, "group": "autoscaling", "version": "v1",
                "kind": "Scale", "verbs": ["get", "patch", "update"],
            }));
        }
        for sub in &d.extra_subresources {
            let r = match sub.as_str() {
                "binding" => json!({"name": "pods/binding", "singularName": "", "namespaced": true,
                    "kind": "Binding", "verbs": ["create"]}),
                "eviction" => {
                    json!({"name": "pods/eviction", "singularName": "", "namespaced": true,
                    "group": "policy", "version": "v1", "kind": "Eviction", "verbs": ["create"]})
                }
                "ephemeralcontainers" => json!({"name": "pods/ephemeralcontainers",
                    "singularName": "", "namespaced": true, "kind": "Pod",
                    "verbs": ["get", "patch", "update"]}),
                "exec" => json!({"name": "pods/exec", "singularName": "", "namespaced": true,
                    "kind": "PodExecOptions", "verbs": ["create", "get"]}),
                "resize" => json!({"name": "pods/resize", "singularName": "", "namespaced": true,
                    "kind": "Pod", "verbs": ["get", "patch", "update"]}),
                "finalize" => json!({"name": "namespaces/finalize", "singularName": "",
                    "namespaced": false, "kind": "Namespace", "verbs": ["update"]}),
                "token" => json!({"name": "serviceaccounts/token", "singularName": "",
                    "namespaced": true, "group": "authentication.k8s.io", "version": "v1",
                    "kind": "TokenRequest", "verbs": ["create"]}),
                _ => continue,
            };
            resources.push(r);
        }
    }
    if !any {
        return None;
    }
    let gv = if group.is_empty() { version.to_string() } else { format!("{group}/{version}") };
    Some(
        json!({"kind": "APIResourceList", "apiVersion": "v1", "groupVersion": gv, "resources": resources}),
    )
}

/// A stable hash of the served definitions (and of CRDs' schemas), to version OpenAPI URLs.
pub fn defs_hash(defs: &[Arc<ResourceDef>]) -> String {
    let mut h = FNV_OFFSET;
    let mut feed = |bytes: &[u8]| h = fnv1a_extend(fnv1a_extend(h, bytes), &[0]);
    for d in defs {
        feed(d.group.as_bytes());
        feed(d.version.as_bytes());
        feed(d.plural.as_bytes());
        feed(&d.openapi_digest.to_le_bytes());
    }
    format!("{h:016X}")
}

const FNV_OFFSET: u64 = 0xcbf2_9ce4_8422_2325;

/// FNV-1a over `bytes` (a digest of a CRD schema, taken when the CRD is registered).
pub(crate) fn fnv1a(bytes: &[u8]) -> u64 {
    fnv1a_extend(FNV_OFFSET, bytes)
}

/// FNV-1a state `h` after `bytes`.
fn fnv1a_extend(h: u64, bytes: &[u8]) -> u64 {
    bytes.iter().fold(h, |h, &b| (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3))
}

/// `/openapi/v3`: the index of group/version documents.
pub fn openapi_index(defs: &[Arc<ResourceDef>]) -> Value {
    let hash = defs_hash(defs);
    let mut paths = serde_json::Map::new();
    let mut gvs: Vec<(String, String)> = Vec::new();
    for d in defs {
        let gv = (d.group.clone(), d.version.clone());
        if !gvs.contains(&gv) {
            gvs.push(gv);
        }
    }
    for (g, v) in gvs {
        let p = if g.is_empty() { format!("api/{v}") } else { format!("apis/{g}/{v}") };
        paths.insert(
            p.clone(),
            json!({"serverRelativeURL": format!("/openapi/v3/{p}?hash={hash}")}),
        );
    }
    json!({"paths": paths})
}

/// `/openapi/v3/<api|apis/group>/<version>`: paths with their verbs (PATCH takes
/// `fieldValidation`, so that kubectl leaves field validation to the server) and the component
/// schemas of the group/version's kinds (for `kubectl explain`).
///
/// PATCH operations declare no request body: kubectl's apply builds a strategic merge patch
/// from these schemas only when the operation accepts `application/strategic-merge-patch+json`,
/// and the schemas carry no patch merge keys. Without it kubectl keeps computing strategic
/// merge patches for built-in kinds from its compiled-in types, and JSON merge patches for
/// custom resources.
pub fn openapi_gv(defs: &[Arc<ResourceDef>], group: &str, version: &str) -> Option<Value> {
    let mut paths = serde_json::Map::new();
    let mut any = false;
    let root = if group.is_empty() {
        format!("/api/{version}")
    } else {
        format!("/apis/{group}/{version}")
    };
    for d in defs.iter().filter(|d| d.group == group && d.version == version) {
        any = true;
        let gvk = json!({"group": d.group, "version": d.version, "kind": d.kind});
        let params = json!([
            {"name": "dryRun", "in": "query", "schema": {"type": "string", "uniqueItems": true}},
            {"name": "fieldManager", "in": "query", "schema": {"type": "string", "uniqueItems": true}},
            {"name": "fieldValidation", "in": "query", "schema": {"type": "string", "uniqueItems": true}},
        ]);
        let op = |verb: &str| {
            json!({
                "operationId": format!("{verb}{}", d.kind),
                "parameters": params,
                "responses": {"200": {"description": "OK", "content": {"application/json": {"schema": {"type": "object"}}}}},
                "x-kubernetes-action": verb,
                "x-kubernetes-group-version-kind": gvk,
            })
        };
        let base = if d.namespaced {
            format!("{root}/namespaces/{{namespace}}/{}", d.plural)
        } else {
            format!("{root}/{}", d.plural)
        };
        paths.insert(base.clone(), json!({"get": op("list"), "post": op("post")}));
        paths.insert(
            format!("{base}/{{name}}"),
            json!({"get": op("get"), "put": op("put"), "patch": op("patch"), "delete": op("delete")}),
        );
        if d.status {
            paths.insert(
                format!("{base}/{{name}}/status"),
                json!({"get": op("get"), "put": op("put"), "patch": op("patch")}),
            );
        }
    }
    if !any {
        return None;
    }
    let schemas = crate::openapi::components(defs, group, version);
    Some(json!({
        "openapi": "3.0.0",
        "info": {"title": "Kubernetes", "version": "v1.32.0"},
        "paths": paths,
        "components": {"schemas": schemas},
    }))
}
