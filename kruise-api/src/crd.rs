//! CRD generation: one CustomResourceDefinition per kind with every version merged, shaped
//! as upstream ships it.

use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::{
    CustomResourceDefinition, JSONSchemaProps,
};

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

/// Adds what upstream's CRDs have and kube's derive leaves out: `listKind` and the
/// `apiVersion`, `kind` and `metadata` properties of the root schema.
pub(crate) fn complete(mut crd: CustomResourceDefinition) -> CustomResourceDefinition {
    let names = &mut crd.spec.names;
    if names.list_kind.is_none() {
        names.list_kind = Some(format!("{}List", names.kind));
    }
    for version in &mut crd.spec.versions {
        let Some(schema) = version.schema.as_mut().and_then(|s| s.open_api_v3_schema.as_mut())
        else {
            continue;
        };
        let properties = schema.properties.get_or_insert_with(Default::default);
        for (name, type_) in [("apiVersion", "string"), ("kind", "string"), ("metadata", "object")] {
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
