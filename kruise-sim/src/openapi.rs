//! The `components.schemas` of the OpenAPI v3 group/version documents, what `kubectl explain`
//! reads.
//!
//! Built-in kinds get the schemas k8s-openapi's `JsonSchema` impls describe (generated once,
//! on first use, with schemars' OpenAPI 3 settings: definitions named like
//! `io.k8s.api.core.v1.Pod`, `$ref`s to `#/components/schemas/...`, a `$ref` with a
//! description beside it wrapped in `allOf` as the real API server does). Custom resources get
//! their CRD version's `openAPIV3Schema` with `apiVersion`, `kind` and `metadata` (a `$ref` to
//! `ObjectMeta`) added. Top-level kinds carry `x-kubernetes-group-version-kind`.
//!
//! The schemas carry no `x-kubernetes-patch-merge-key` / `x-kubernetes-patch-strategy`
//! extensions (k8s-openapi has none), so the PATCH operations of the documents do not declare
//! `application/strategic-merge-patch+json` (see `discovery::openapi_gv`): kubectl's apply only
//! builds strategic merge patches from OpenAPI v3 when they do, and otherwise keeps using its
//! compiled-in types (built-ins) or JSON merge patches (custom resources).
//!
//! Works: `kubectl explain` of every built-in kind the server serves and of every served CRD
//! version, nested fields, `--recursive`, `--api-version`, and kubectl's error for an unknown
//! field. `/openapi/v2` is a document without definitions (kubectl reads it only to check the
//! items of a `kind: List` file, and then leaves them to the server; `kubectl explain
//! --output=plaintext-openapiv2` finds nothing). Not served: schemas of list kinds and of
//! subresources (`Scale`, `Eviction`, `Binding`). The built-in
//! schemas are those of the Kubernetes version k8s-openapi is built for (the binary's choice,
//! `latest` under tests), which may be newer than the v1.32 the server reports. CRD schemas
//! are served as written, not normalized as the API server publishes them.

use crate::resources::{Origin, ResourceDef};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use schemars::JsonSchema;
use schemars::generate::{SchemaGenerator, SchemaSettings};
use serde_json::{Map, Value, json};
use std::collections::BTreeMap;
use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};

const REF_PREFIX: &str = "#/components/schemas/";

/// The description of a standard field (`apiVersion`, `kind`, `metadata`) of every kind, as
/// k8s-openapi's Pod schema gives it ("" if it gives none).
fn standard_description(field: &str) -> String {
    builtin_schemas()
        .definitions
        .get("io.k8s.api.core.v1.Pod")
        .and_then(|pod| pod.pointer(&format!("/properties/{field}/description")))
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_owned()
}

/// The generated schemas of the built-in kinds.
#[derive(Debug)]
pub struct BuiltinSchemas {
    /// Every definition, by name (`io.k8s.api.core.v1.Pod`).
    pub definitions: Map<String, Value>,
    /// The definition name of each built-in kind, by (group, version, kind).
    pub kinds: BTreeMap<(String, String, String), String>,
    /// How long generation took.
    pub generated_in: Duration,
}

static BUILTIN: OnceLock<BuiltinSchemas> = OnceLock::new();

/// The built-in kinds' schemas, generated on first use.
pub fn builtin_schemas() -> &'static BuiltinSchemas {
    BUILTIN.get_or_init(generate)
}

/// Adds the schema of the k8s-openapi type serving `group`/`kind` to `g`; returns its name.
fn add_kind(g: &mut SchemaGenerator, group: &str, kind: &str) -> Option<String> {
    use k8s_openapi::api::{
        admissionregistration, apps, authentication, authorization, autoscaling, batch,
        coordination, core, discovery, events, networking, policy, rbac,
    };
    use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions;
    fn add<T: JsonSchema>(g: &mut SchemaGenerator) -> Option<String> {
        g.subschema_for::<T>();
        Some(T::schema_name().into_owned())
    }
    match (group, kind) {
        ("", "Namespace") => add::<core::v1::Namespace>(g),
        ("", "Pod") => add::<core::v1::Pod>(g),
        ("", "Node") => add::<core::v1::Node>(g),
        ("", "Service") => add::<core::v1::Service>(g),
        ("", "Endpoints") => add::<core::v1::Endpoints>(g),
        ("", "ConfigMap") => add::<core::v1::ConfigMap>(g),
        ("", "Secret") => add::<core::v1::Secret>(g),
        ("", "ServiceAccount") => add::<core::v1::ServiceAccount>(g),
        ("", "Event") => add::<core::v1::Event>(g),
        ("", "PersistentVolumeClaim") => add::<core::v1::PersistentVolumeClaim>(g),
        ("", "PersistentVolume") => add::<core::v1::PersistentVolume>(g),
        ("", "PodTemplate") => add::<core::v1::PodTemplate>(g),
        ("", "ReplicationController") => add::<core::v1::ReplicationController>(g),
        ("apps", "Deployment") => add::<apps::v1::Deployment>(g),
        ("apps", "ReplicaSet") => add::<apps::v1::ReplicaSet>(g),
        ("apps", "StatefulSet") => add::<apps::v1::StatefulSet>(g),
        ("apps", "DaemonSet") => add::<apps::v1::DaemonSet>(g),
        ("apps", "ControllerRevision") => add::<apps::v1::ControllerRevision>(g),
        ("batch", "Job") => add::<batch::v1::Job>(g),
        ("batch", "CronJob") => add::<batch::v1::CronJob>(g),
        ("autoscaling", "HorizontalPodAutoscaler") => {
            add::<autoscaling::v2::HorizontalPodAutoscaler>(g)
        }
        ("coordination.k8s.io", "Lease") => add::<coordination::v1::Lease>(g),
        ("discovery.k8s.io", "EndpointSlice") => add::<discovery::v1::EndpointSlice>(g),
        ("networking.k8s.io", "Ingress") => add::<networking::v1::Ingress>(g),
        ("networking.k8s.io", "IngressClass") => add::<networking::v1::IngressClass>(g),
        ("rbac.authorization.k8s.io", "ClusterRole") => add::<rbac::v1::ClusterRole>(g),
        ("rbac.authorization.k8s.io", "ClusterRoleBinding") => {
            add::<rbac::v1::ClusterRoleBinding>(g)
        }
        ("rbac.authorization.k8s.io", "Role") => add::<rbac::v1::Role>(g),
        ("rbac.authorization.k8s.io", "RoleBinding") => add::<rbac::v1::RoleBinding>(g),
        ("authorization.k8s.io", "SelfSubjectAccessReview") => {
            add::<authorization::v1::SelfSubjectAccessReview>(g)
        }
        ("authentication.k8s.io", "TokenReview") => add::<authentication::v1::TokenReview>(g),
        ("authentication.k8s.io", "SelfSubjectReview") => {
            add::<authentication::v1::SelfSubjectReview>(g)
        }
        ("events.k8s.io", "Event") => add::<events::v1::Event>(g),
        ("policy", "PodDisruptionBudget") => add::<policy::v1::PodDisruptionBudget>(g),
        ("admissionregistration.k8s.io", "MutatingWebhookConfiguration") => {
            add::<admissionregistration::v1::MutatingWebhookConfiguration>(g)
        }
        ("admissionregistration.k8s.io", "ValidatingWebhookConfiguration") => {
            add::<admissionregistration::v1::ValidatingWebhookConfiguration>(g)
        }
        ("apiextensions.k8s.io", "CustomResourceDefinition") => {
            add::<apiextensions::v1::CustomResourceDefinition>(g)
        }
        _ => None,
    }
}

fn generate() -> BuiltinSchemas {
    let start = Instant::now();
    let mut g = SchemaSettings::openapi3().into_generator();
    let mut kinds = BTreeMap::new();
    for d in crate::resources::builtins() {
        if let Some(name) = add_kind(&mut g, &d.group, &d.kind) {
            kinds.insert((d.group, d.version, d.kind), name);
        }
    }
    // Custom resources refer to ObjectMeta.
    g.subschema_for::<ObjectMeta>();
    let mut definitions = g.take_definitions(true);
    for ((group, version, kind), name) in &kinds {
        let Some(Value::Object(s)) = definitions.get_mut(name) else { continue };
        s.insert(
            "x-kubernetes-group-version-kind".into(),
            json!([{"group": group, "kind": kind, "version": version}]),
        );
        // k8s-openapi requires `metadata` of every kind (it is not an Option there); the API
        // server's documents do not.
        if let Some(Value::Array(req)) = s.get_mut("required") {
            req.retain(|r| r != "metadata");
            if req.is_empty() {
                s.remove("required");
            }
        }
    }
    BuiltinSchemas { definitions, kinds, generated_in: start.elapsed() }
}

/// The definition name of a custom resource's schema: the group's labels reversed, then the
/// version and kind (`io.kruise.apps.v1alpha1.CloneSet`), as the API server names them.
pub fn crd_schema_name(group: &str, version: &str, kind: &str) -> String {
    let mut labels: Vec<&str> = group.split('.').collect();
    labels.reverse();
    format!("{}.{version}.{kind}", labels.join("."))
}

/// A custom resource version's schema as a component: the CRD's `openAPIV3Schema` (or an
/// object preserving unknown fields) with the standard `apiVersion`, `kind` and `metadata`
/// (a `$ref` to ObjectMeta) and the GVK.
fn crd_component(d: &ResourceDef) -> Value {
    let mut s = match d.openapi_schema.as_deref() {
        Some(Value::Object(m)) => m.clone(),
        _ => {
            let mut m = Map::new();
            m.insert("type".into(), json!("object"));
            m.insert("x-kubernetes-preserve-unknown-fields".into(), json!(true));
            m
        }
    };
    let props = s.entry("properties").or_insert_with(|| json!({}));
    if let Value::Object(props) = props {
        // As the API server does, whatever the CRD says of these.
        for field in ["apiVersion", "kind"] {
            let description = standard_description(field);
            props.insert(field.into(), json!({"type": "string", "description": description}));
        }
        let meta_ref = format!("{REF_PREFIX}{}", ObjectMeta::schema_name());
        props.insert(
            "metadata".into(),
            json!({"allOf": [{"$ref": meta_ref}], "description": standard_description("metadata")}),
        );
    }
    s.insert(
        "x-kubernetes-group-version-kind".into(),
        json!([{"group": d.group, "kind": d.kind, "version": d.version}]),
    );
    Value::Object(s)
}

/// Pushes the definition names `v` refers to.
fn refs_in(v: &Value, out: &mut Vec<String>) {
    match v {
        Value::Object(m) => {
            for (k, x) in m {
                match (k.as_str(), x) {
                    ("$ref", Value::String(r)) => {
                        if let Some(name) = r.strip_prefix(REF_PREFIX) {
                            out.push(name.to_string());
                        }
                    }
                    _ => refs_in(x, out),
                }
            }
        }
        Value::Array(a) => a.iter().for_each(|x| refs_in(x, out)),
        _ => {}
    }
}

/// The component schemas of one group/version: its kinds and every definition they refer to.
pub fn components(defs: &[Arc<ResourceDef>], group: &str, version: &str) -> Map<String, Value> {
    let builtin = builtin_schemas();
    let mut out = Map::new();
    let mut pending: Vec<String> = Vec::new();
    for d in defs.iter().filter(|d| d.group == group && d.version == version) {
        match &d.origin {
            Origin::BuiltIn => {
                let key = (d.group.clone(), d.version.clone(), d.kind.clone());
                if let Some(name) = builtin.kinds.get(&key) {
                    pending.push(name.clone());
                }
            }
            Origin::Crd(_) => {
                out.insert(crd_schema_name(&d.group, &d.version, &d.kind), crd_component(d));
                pending.push(ObjectMeta::schema_name().into_owned());
            }
        }
    }
    while let Some(name) = pending.pop() {
        if out.contains_key(&name) {
            continue;
        }
        if let Some(s) = builtin.definitions.get(&name) {
            refs_in(s, &mut pending);
            out.insert(name, s.clone());
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn builtin_kinds_have_schemas_with_gvk_and_resolvable_refs() {
        let b = builtin_schemas();
        for d in crate::resources::builtins() {
            let key = (d.group.clone(), d.version.clone(), d.kind.clone());
            assert!(b.kinds.contains_key(&key), "no schema for {key:?}");
        }
        let pod = &b.definitions["io.k8s.api.core.v1.Pod"];
        assert_eq!(
            pod["x-kubernetes-group-version-kind"],
            json!([{"group": "", "kind": "Pod", "version": "v1"}])
        );
        assert!(pod.get("required").is_none(), "{:?}", pod.get("required"));
        // A $ref with a description beside it is wrapped in allOf.
        let spec = &pod["properties"]["spec"];
        assert_eq!(
            spec["allOf"],
            json!([{"$ref": "#/components/schemas/io.k8s.api.core.v1.PodSpec"}])
        );
        assert!(spec["description"].as_str().is_some_and(|d| d.contains("desired behavior")));
        let mut refs = Vec::new();
        for s in b.definitions.values() {
            refs_in(s, &mut refs);
        }
        for r in refs {
            assert!(b.definitions.contains_key(&r), "dangling $ref {r}");
        }
    }

    /// Every served definition, with the Kruise CRDs.
    fn defs_with_kruise() -> Vec<Arc<ResourceDef>> {
        let mut defs: Vec<Arc<ResourceDef>> =
            crate::resources::builtins().into_iter().map(Arc::new).collect();
        for crd in kruise_api::crds() {
            let v = serde_json::to_value(&crd).expect("CRD serializes");
            defs.extend(crate::crd::defs(&v).into_iter().map(Arc::new));
        }
        defs
    }

    #[test]
    fn documents_declare_no_strategic_merge_patch_and_stay_small() {
        let defs = defs_with_kruise();
        let generated_in = builtin_schemas().generated_in;
        let mut gvs = vec![(String::new(), "v1".to_string())];
        for (g, vs) in crate::discovery::groups(&defs) {
            gvs.extend(vs.into_iter().map(|v| (g.clone(), v)));
        }
        let start = Instant::now();
        let index = crate::discovery::openapi_index(&defs);
        eprintln!(
            "index: {} paths in {:?}",
            index["paths"].as_object().map_or(0, Map::len),
            start.elapsed()
        );
        let mut total = 0;
        for (g, v) in &gvs {
            let start = Instant::now();
            let doc = crate::discovery::openapi_gv(&defs, g, v).expect("served group/version");
            let bytes = serde_json::to_vec(&doc).expect("serializes").len();
            let took = start.elapsed();
            eprintln!("{g}/{v}: {bytes} bytes in {took:?}");
            total += bytes;
            assert!(bytes < 4 << 20, "{g}/{v} is {bytes} bytes");
            let schemas = doc["components"]["schemas"].as_object().expect("schemas");
            assert!(!schemas.is_empty(), "{g}/{v} has no schemas");
            let mut refs = Vec::new();
            refs_in(&doc["components"], &mut refs);
            for r in refs {
                assert!(schemas.contains_key(&r), "{g}/{v}: dangling $ref {r}");
            }
            // kubectl apply would build strategic merge patches from the schemas (which have
            // no merge keys) if a PATCH operation accepted them.
            for (path, item) in doc["paths"].as_object().expect("paths") {
                if let Some(patch) = item.get("patch") {
                    assert!(patch.get("requestBody").is_none(), "{path}: {patch}");
                }
            }
        }
        eprintln!(
            "built-in schemas generated in {generated_in:?}: {} definitions; {} documents, {total} bytes",
            builtin_schemas().definitions.len(),
            gvs.len()
        );
    }

    #[test]
    fn crd_components_have_standard_type_meta() {
        let defs = defs_with_kruise();
        let c = components(&defs, "apps.kruise.io", "v1alpha1");
        let cs = &c["io.kruise.apps.v1alpha1.CloneSet"];
        assert_eq!(
            cs["x-kubernetes-group-version-kind"],
            json!([{"group": "apps.kruise.io", "kind": "CloneSet", "version": "v1alpha1"}])
        );
        assert_eq!(
            cs["properties"]["metadata"]["allOf"],
            json!([{"$ref": "#/components/schemas/io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"}])
        );
        let kind = cs["properties"]["kind"]["description"].as_str().unwrap_or_default();
        assert!(kind.starts_with("Kind is a string value"), "{kind}");
        assert_eq!(cs["properties"]["kind"]["description"], json!(standard_description("kind")));
        assert!(cs["properties"]["spec"]["properties"]["updateStrategy"].is_object());
        assert!(c.contains_key("io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"));
        assert!(c.contains_key("io.k8s.apimachinery.pkg.apis.meta.v1.ManagedFieldsEntry"));
        assert!(!c.contains_key("io.k8s.api.core.v1.Pod"));
    }

    #[test]
    fn crd_names_reverse_the_group() {
        assert_eq!(
            crd_schema_name("apps.kruise.io", "v1alpha1", "CloneSet"),
            "io.kruise.apps.v1alpha1.CloneSet"
        );
    }
}

/// Drops from a built-in object the fields its kind's schema does not know, as kube-apiserver's
/// decoding drops them, and returns their paths as it names them (`spec.containers[0].imagee`).
/// Kinds without a schema here are left alone; so are objects the schema leaves open (maps,
/// `x-kubernetes-preserve-unknown-fields`, schemas without `properties`).
pub fn drop_unknown_builtin_fields(
    group: &str,
    version: &str,
    kind: &str,
    obj: &mut Value,
) -> Vec<String> {
    let schemas = builtin_schemas();
    let key = (group.to_owned(), version.to_owned(), kind.to_owned());
    let Some(root) = schemas.kinds.get(&key).and_then(|n| schemas.definitions.get(n)) else {
        return Vec::new();
    };
    let mut unknown = Vec::new();
    drop_unknown(&schemas.definitions, root, obj, "", &mut unknown, 0);
    unknown
}

/// The first value of a built-in object that kube-apiserver's conversion of a patched object to
/// its Go type cannot place, worded as that conversion words it: a string or boolean where an
/// integer belongs (`unrecognized type: int32`), a string or number where a boolean belongs.
/// Only these primitive mismatches are checked; `None` when there is none (or the kind has no
/// schema here).
pub fn builtin_type_error(group: &str, version: &str, kind: &str, obj: &Value) -> Option<String> {
    let schemas = builtin_schemas();
    let key = (group.to_owned(), version.to_owned(), kind.to_owned());
    let root = schemas.kinds.get(&key).and_then(|n| schemas.definitions.get(n))?;
    type_error(&schemas.definitions, root, obj, 0)
}

fn type_error(
    defs: &Map<String, Value>,
    schema: &Value,
    v: &Value,
    depth: usize,
) -> Option<String> {
    if depth > 64 {
        return None;
    }
    let schema = resolve(defs, schema);
    if schema.get("x-kubernetes-preserve-unknown-fields") == Some(&Value::Bool(true)) {
        return None;
    }
    let declared = schema.get("type").and_then(Value::as_str);
    match (declared, v) {
        (Some("integer"), Value::String(_) | Value::Bool(_)) => {
            let format = schema.get("format").and_then(Value::as_str).unwrap_or("int64");
            return Some(format!("unrecognized type: {format}"));
        }
        (Some("boolean"), Value::String(_) | Value::Number(_)) => {
            return Some("unrecognized type: bool".into());
        }
        _ => {}
    }
    match v {
        Value::Object(map) => {
            let props = schema.get("properties").and_then(Value::as_object);
            let extra = schema.get("additionalProperties").filter(|a| a.is_object());
            map.iter().find_map(|(k, child)| {
                let s = props.and_then(|p| p.get(k)).or(extra)?;
                type_error(defs, s, child, depth + 1)
            })
        }
        Value::Array(items) => {
            let item = schema.get("items")?;
            items.iter().find_map(|child| type_error(defs, item, child, depth + 1))
        }
        _ => None,
    }
}

/// The schema `s` stands for: `$ref`s and one-element `allOf`s followed.
fn resolve<'a>(defs: &'a Map<String, Value>, mut s: &'a Value) -> &'a Value {
    for _ in 0..16 {
        if let Some(name) =
            s.get("$ref").and_then(Value::as_str).and_then(|r| r.strip_prefix(REF_PREFIX))
        {
            match defs.get(name) {
                Some(d) => s = d,
                None => return s,
            }
        } else if let Some([one]) = s.get("allOf").and_then(Value::as_array).map(Vec::as_slice) {
            s = one;
        } else {
            return s;
        }
    }
    s
}

fn drop_unknown(
    defs: &Map<String, Value>,
    schema: &Value,
    v: &mut Value,
    path: &str,
    out: &mut Vec<String>,
    depth: usize,
) {
    if depth > 64 {
        return;
    }
    let schema = resolve(defs, schema);
    if schema.get("x-kubernetes-preserve-unknown-fields") == Some(&Value::Bool(true)) {
        return;
    }
    match v {
        Value::Object(map) => {
            let props = schema.get("properties").and_then(Value::as_object);
            let extra = schema.get("additionalProperties").filter(|a| a.is_object());
            match props {
                Some(props) => {
                    let mut gone = Vec::new();
                    for (k, child) in map.iter_mut() {
                        let at = if path.is_empty() { k.clone() } else { format!("{path}.{k}") };
                        match props.get(k).or(extra) {
                            Some(s) => drop_unknown(defs, s, child, &at, out, depth + 1),
                            None if schema.get("additionalProperties")
                                == Some(&Value::Bool(true)) => {}
                            None => {
                                gone.push(k.clone());
                                out.push(at);
                            }
                        }
                    }
                    for k in gone {
                        map.remove(&k);
                    }
                }
                None => {
                    if let Some(extra) = extra {
                        for (k, child) in map.iter_mut() {
                            let at =
                                if path.is_empty() { k.clone() } else { format!("{path}.{k}") };
                            drop_unknown(defs, extra, child, &at, out, depth + 1);
                        }
                    }
                }
            }
        }
        Value::Array(items) => {
            if let Some(item) = schema.get("items") {
                for (i, child) in items.iter_mut().enumerate() {
                    drop_unknown(defs, item, child, &format!("{path}[{i}]"), out, depth + 1);
                }
            }
        }
        _ => {}
    }
}

#[cfg(test)]
mod unknown_field_tests {
    use super::*;

    #[test]
    fn unknown_fields_of_built_in_kinds_are_named_and_dropped() {
        let mut pod = json!({
            "apiVersion": "v1", "kind": "Pod", "bogus": 1,
            "metadata": {"name": "p", "labels": {"any": "x"}, "annotations": {"a": "b"}},
            "spec": {"containers": [{"name": "c", "image": "i", "imagee": "x",
                "resources": {"limits": {"cpu": "1"}}, "ports": [{"containerPort": 80, "nope": 1}]}],
                "nodeSelector": {"k": "v"}},
            "status": {"phase": "Pending"}
        });
        let unknown = drop_unknown_builtin_fields("", "v1", "Pod", &mut pod);
        assert_eq!(
            unknown,
            ["bogus", "spec.containers[0].imagee", "spec.containers[0].ports[0].nope"]
        );
        assert!(pod.get("bogus").is_none());
        assert!(pod["spec"]["containers"][0].get("imagee").is_none());
        assert_eq!(pod["metadata"]["labels"]["any"], "x");
        assert_eq!(pod["spec"]["containers"][0]["resources"]["limits"]["cpu"], "1");

        let mut cm = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"},
            "data": {"a": "1"}, "binaryData": {}, "immutable": false});
        assert!(drop_unknown_builtin_fields("", "v1", "ConfigMap", &mut cm).is_empty());
        let mut crd = json!({"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
            "metadata": {"name": "a.b"},
            "spec": {"group": "b", "names": {"plural": "a", "kind": "A"}, "scope": "Namespaced",
                "versions": [{"name": "v1", "served": true, "storage": true,
                    "schema": {"openAPIV3Schema": {"type": "object", "x-kubernetes-preserve-unknown-fields": true,
                        "properties": {"spec": {"type": "object", "default": {"x": 1},
                            "properties": {"n": {"type": "integer", "enum": [1, 2], "example": 1}}}}}}}]}});
        assert_eq!(
            drop_unknown_builtin_fields(
                "apiextensions.k8s.io",
                "v1",
                "CustomResourceDefinition",
                &mut crd
            ),
            Vec::<String>::new()
        );
    }
}
