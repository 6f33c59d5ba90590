//! insta snapshots of every generated CRD, so that any change to a schema, column or
//! version shows up in review as a readable YAML diff.

#[test]
fn generated_crds() {
    for crd in kruise_api::crds() {
        let name = kruise_api::crd::file_name(&crd).trim_end_matches(".yaml").to_owned();
        insta::assert_yaml_snapshot!(name, crd);
    }
}

#[test]
fn crds_are_well_formed() {
    let crds = kruise_api::crds();
    assert_eq!(crds.len(), 22, "one CRD per upstream kind (18 Kruise, 4 Kruise Rollout)");
    for crd in &crds {
        let name = crd.metadata.name.as_deref().unwrap_or_default();
        assert_eq!(name, format!("{}.{}", crd.spec.names.plural, crd.spec.group));
        let storage: Vec<&str> =
            crd.spec.versions.iter().filter(|v| v.storage).map(|v| v.name.as_str()).collect();
        assert_eq!(storage.len(), 1, "{name}: exactly one storage version, got {storage:?}");
        let expected = if crd.spec.versions.iter().any(|v| v.name == "v1beta1") {
            "v1beta1"
        } else {
            "v1alpha1"
        };
        assert_eq!(storage[0], expected, "{name}: storage version");
        assert!(crd.spec.versions.iter().all(|v| v.served), "{name}: every version served");
    }
}
