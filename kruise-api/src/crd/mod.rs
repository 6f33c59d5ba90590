//! CRD generation: one CustomResourceDefinition per kind with every version merged, shaped
//! as upstream ships it.

use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::{
    CustomResourceDefinition, JSONSchemaProps,
};

mod required;
use required::DECLARED_REQUIRED;

/// Merges the single-version CRDs of one kind into one, keeping the storage version that the
/// type declarations mark, and fills in what upstream's CRDs carry beyond kube's derive.
pub(crate) fn merge(versions: Vec<CustomResourceDefinition>) -> CustomResourceDefinition {
    let storage = versions
        .iter()
        .flat_map(|crd| crd.spec.versions.iter())
        .find(|version| version.storage)
        .or_else(|| versions.first().and_then(|crd| crd.spec.versions.first()))
        .map(|version| version.name.clone())
        .unwrap_or_default();
    // Invariant: every declaration of one kind has one version and shares group, kind and
    // scope; `crds_are_well_formed` checks this for every registered kind.
    let mut crd = kube::core::crd::merge_crds(versions, &storage)
        .expect("the versions of one kind are declared consistently");
    crd.spec.versions.sort_by(|a, b| a.name.cmp(&b.name));
    complete(crd)
}

/// The schema defaults upstream declares (`+kubebuilder:default`), by CRD plural and
/// property path (`[]` steps into array items). The API server applies these, so they are part
/// of the contract; they are declared here because schemars derives a `default` from every
/// `#[serde(default)]`, which upstream does not have and which this module removes.
const DECLARED_DEFAULTS: &[(&str, &str, &str)] = &[
    ("clonesets", "spec.scaleStrategy.enablePVCReuse", "false"),
    (
        "uniteddeployments",
        "spec.template.cloneSetTemplate.spec.scaleStrategy.enablePVCReuse",
        "false",
    ),
    ("containerrecreaterequests", "spec.containers[].ports[].protocol", "\"TCP\""),
    ("podprobemarkers", "spec.probes[].probe.grpc.service", "\"\""),
    ("nodepodprobes", "spec.podProbes[].probes[].probe.grpc.service", "\"\""),
    ("sidecarsets", "spec.containers[].resourcesPolicy.targetContainersNameRegex", "\".*\""),
    ("sidecarsets", "spec.initContainers[].resourcesPolicy.targetContainersNameRegex", "\".*\""),
    ("sidecarsets", "spec.imagePullSecrets[].name", "\"\""),
    ("sidecarsets", "spec.injectionStrategy.revision.policy", "\"Always\""),
    // rollouts.kruise.io: paths one version lacks (blue-green, path and query matches in
    // v1alpha1) are skipped there.
    ("rollouts", "spec.disabled", "false"),
    ("rollouts", "spec.strategy.canary.trafficRoutings[].gracePeriodSeconds", "3"),
    ("rollouts", "spec.strategy.canary.steps[].matches[].headers[].type", "\"Exact\""),
    ("rollouts", "spec.strategy.canary.steps[].matches[].queryParams[].type", "\"Exact\""),
    ("rollouts", "spec.strategy.canary.steps[].matches[].path.type", "\"PathPrefix\""),
    ("rollouts", "spec.strategy.canary.steps[].matches[].path.value", "\"/\""),
    ("rollouts", "spec.strategy.blueGreen.trafficRoutings[].gracePeriodSeconds", "3"),
    ("rollouts", "spec.strategy.blueGreen.steps[].matches[].headers[].type", "\"Exact\""),
    ("rollouts", "spec.strategy.blueGreen.steps[].matches[].queryParams[].type", "\"Exact\""),
    ("rollouts", "spec.strategy.blueGreen.steps[].matches[].path.type", "\"PathPrefix\""),
    ("rollouts", "spec.strategy.blueGreen.steps[].matches[].path.value", "\"/\""),
    ("trafficroutings", "spec.objectRef[].gracePeriodSeconds", "3"),
    ("trafficroutings", "spec.strategy.matches[].headers[].type", "\"Exact\""),
];

/// Removes every schema `default`.
fn strip_defaults(schema: &mut serde_json::Value) {
    match schema {
        serde_json::Value::Object(map) => {
            map.remove("default");
            map.values_mut().for_each(strip_defaults);
        }
        serde_json::Value::Array(items) => items.iter_mut().for_each(strip_defaults),
        _ => {}
    }
}

/// Removes every `required` list (the keyword; a property that happens to be named
/// `required` is a schema object and stays).
fn strip_required(schema: &mut serde_json::Value) {
    match schema {
        serde_json::Value::Object(map) => {
            if map.get("required").is_some_and(serde_json::Value::is_array) {
                map.remove("required");
            }
            map.values_mut().for_each(strip_required);
        }
        serde_json::Value::Array(items) => items.iter_mut().for_each(strip_required),
        _ => {}
    }
}

/// The schema node at `path` (`a.b[]` steps into items, `a{}` into additionalProperties;
/// empty: the root), if the schema has it.
fn node_at<'v>(schema: &'v mut serde_json::Value, path: &str) -> Option<&'v mut serde_json::Value> {
    let mut node = schema;
    if path.is_empty() {
        return Some(node);
    }
    for step in path.split('.') {
        let name = step.trim_end_matches(['[', ']', '{', '}']);
        node = node.get_mut("properties")?.get_mut(name)?;
        // The suffixes, in order: `[]` items, `{}` map values.
        let mut rest = &step[name.len()..];
        while !rest.is_empty() {
            if let Some(after) = rest.strip_prefix("[]") {
                node = node.get_mut("items")?;
                rest = after;
            } else if let Some(after) = rest.strip_prefix("{}") {
                node = node.get_mut("additionalProperties")?;
                rest = after;
            } else {
                return None;
            }
        }
    }
    Some(node)
}

/// Sets `default` on the property at `path`, if the schema has it.
fn set_default(schema: &mut serde_json::Value, path: &str, default: serde_json::Value) {
    let mut node = schema;
    for step in path.split('.') {
        let (name, items) = match step.strip_suffix("[]") {
            Some(name) => (name, true),
            None => (step, false),
        };
        let Some(next) = node.get_mut("properties").and_then(|p| p.get_mut(name)) else {
            return;
        };
        node = next;
        if items {
            let Some(next) = node.get_mut("items") else { return };
            node = next;
        }
    }
    if let serde_json::Value::Object(map) = node {
        map.insert("default".to_owned(), default);
    }
}

/// Adds what upstream's CRDs have and kube's derive leaves out: `listKind` and the
/// `apiVersion`, `kind` and `metadata` properties of the root schema; keeps only the schema
/// defaults and `required` lists upstream declares.
pub(crate) fn complete(mut crd: CustomResourceDefinition) -> CustomResourceDefinition {
    let names = &mut crd.spec.names;
    if names.list_kind.is_none() {
        names.list_kind = Some(format!("{}List", names.kind));
    }
    let plural = names.plural.clone();
    for version in &mut crd.spec.versions {
        let Some(schema) = version.schema.as_mut().and_then(|s| s.open_api_v3_schema.as_mut())
        else {
            continue;
        };
        // Invariant: a JSONSchemaProps encodes to JSON and decodes back unchanged; should it
        // ever fail, the schema is kept as generated rather than lost.
        if let Ok(mut value) = serde_json::to_value(&*schema) {
            strip_defaults(&mut value);
            for (crd_plural, path, default) in DECLARED_DEFAULTS {
                if *crd_plural == plural
                    && let Ok(default) = serde_json::from_str(default)
                {
                    set_default(&mut value, path, default);
                }
            }
            strip_required(&mut value);
            for (crd_plural, crd_version, path, fields) in DECLARED_REQUIRED {
                if *crd_plural == plural
                    && (*crd_version == "*" || *crd_version == version.name)
                    && let Some(serde_json::Value::Object(node)) = node_at(&mut value, path)
                {
                    node.insert("required".to_owned(), serde_json::json!(fields));
                }
            }
            if let Ok(cleaned) = serde_json::from_value(value) {
                *schema = cleaned;
            }
        }
        let properties = schema.properties.get_or_insert_with(Default::default);
        for (name, type_) in [("apiVersion", "string"), ("kind", "string"), ("metadata", "object")]
        {
            properties.entry(name.to_owned()).or_insert_with(|| JSONSchemaProps {
                type_: Some(type_.to_owned()),
                ..Default::default()
            });
        }
    }
    crd
}

/// The file name upstream uses for a CRD, such as `apps.kruise.io_clonesets.yaml`.
pub fn file_name(crd: &CustomResourceDefinition) -> String {
    format!("{}_{}.yaml", crd.spec.group, crd.spec.names.plural)
}
