//! The list of every Kruise kind and version this crate knows. Adding a kind means adding
//! one line here; [`KruiseObject`](crate::KruiseObject), [`crds`](crate::crds) and the
//! version conversion dispatch are generated from it.

crate::kruise_registry! {
    multi {
        CloneSet: CloneSetV1alpha1(crate::apps::v1alpha1::CloneSet)
            <=> CloneSetV1beta1(crate::apps::v1beta1::CloneSet),
        BroadcastJob: BroadcastJobV1alpha1(crate::apps::v1alpha1::BroadcastJob)
            <=> BroadcastJobV1beta1(crate::apps::v1beta1::BroadcastJob),
        SidecarSet: SidecarSetV1alpha1(crate::apps::v1alpha1::SidecarSet)
            <=> SidecarSetV1beta1(crate::apps::v1beta1::SidecarSet),
        StatefulSet: StatefulSetV1alpha1(crate::apps::v1alpha1::StatefulSet)
            <=> StatefulSetV1beta1(crate::apps::v1beta1::StatefulSet),
        ContainerRecreateRequest: ContainerRecreateRequestV1alpha1(crate::apps::v1alpha1::ContainerRecreateRequest)
            <=> ContainerRecreateRequestV1beta1(crate::apps::v1beta1::ContainerRecreateRequest),
        ImagePullJob: ImagePullJobV1alpha1(crate::apps::v1alpha1::ImagePullJob)
            <=> ImagePullJobV1beta1(crate::apps::v1beta1::ImagePullJob),
        ImageListPullJob: ImageListPullJobV1alpha1(crate::apps::v1alpha1::ImageListPullJob)
            <=> ImageListPullJobV1beta1(crate::apps::v1beta1::ImageListPullJob),
        NodeImage: NodeImageV1alpha1(crate::apps::v1alpha1::NodeImage)
            <=> NodeImageV1beta1(crate::apps::v1beta1::NodeImage),
        // multi-version kinds: keep this line last
    }
    single {
        EphemeralJob: EphemeralJobV1alpha1(crate::apps::v1alpha1::EphemeralJob),
        PodProbeMarker: PodProbeMarkerV1alpha1(crate::apps::v1alpha1::PodProbeMarker),
        NodePodProbe: NodePodProbeV1alpha1(crate::apps::v1alpha1::NodePodProbe),
        // v1alpha1-only kinds: keep this line last
    }
}
