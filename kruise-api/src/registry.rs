//! The list of every Kruise kind and version this crate knows. Adding a kind means adding
//! one line here; [`KruiseObject`](crate::KruiseObject), [`crds`](crate::crds) and the
//! version conversion dispatch are generated from it.

crate::kruise_registry! {
    multi {
        CloneSet: CloneSetV1alpha1(crate::apps::v1alpha1::CloneSet)
            <=> CloneSetV1beta1(crate::apps::v1beta1::CloneSet),
        // multi-version kinds: keep this line last
    }
    single {
        // v1alpha1-only kinds: keep this line last
    }
}
