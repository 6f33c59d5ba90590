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
        DaemonSet: DaemonSetV1alpha1(crate::apps::v1alpha1::DaemonSet)
            <=> DaemonSetV1beta1(crate::apps::v1beta1::DaemonSet),
        UnitedDeployment: UnitedDeploymentV1alpha1(crate::apps::v1alpha1::UnitedDeployment)
            <=> UnitedDeploymentV1beta1(crate::apps::v1beta1::UnitedDeployment),
        AdvancedCronJob: AdvancedCronJobV1alpha1(crate::apps::v1alpha1::AdvancedCronJob)
            <=> AdvancedCronJobV1beta1(crate::apps::v1beta1::AdvancedCronJob),
        WorkloadSpread: WorkloadSpreadV1alpha1(crate::apps::v1alpha1::WorkloadSpread)
            <=> WorkloadSpreadV1beta1(crate::apps::v1beta1::WorkloadSpread),
        PersistentPodState: PersistentPodStateV1alpha1(crate::apps::v1alpha1::PersistentPodState)
            <=> PersistentPodStateV1beta1(crate::apps::v1beta1::PersistentPodState),
        ResourceDistribution: ResourceDistributionV1alpha1(crate::apps::v1alpha1::ResourceDistribution)
            <=> ResourceDistributionV1beta1(crate::apps::v1beta1::ResourceDistribution),
        PodUnavailableBudget: PodUnavailableBudgetV1alpha1(crate::policy::v1alpha1::PodUnavailableBudget)
            <=> PodUnavailableBudgetV1beta1(crate::policy::v1beta1::PodUnavailableBudget),
        Rollout: RolloutV1alpha1(crate::rollouts::v1alpha1::Rollout)
            <=> RolloutV1beta1(crate::rollouts::v1beta1::Rollout),
        BatchRelease: BatchReleaseV1alpha1(crate::rollouts::v1alpha1::BatchRelease)
            <=> BatchReleaseV1beta1(crate::rollouts::v1beta1::BatchRelease),
        // multi-version kinds: keep this line last
    }
    single {
        EphemeralJob: EphemeralJobV1alpha1(crate::apps::v1alpha1::EphemeralJob),
        PodProbeMarker: PodProbeMarkerV1alpha1(crate::apps::v1alpha1::PodProbeMarker),
        NodePodProbe: NodePodProbeV1alpha1(crate::apps::v1alpha1::NodePodProbe),
        TrafficRouting: TrafficRoutingV1alpha1(crate::rollouts::v1alpha1::TrafficRouting),
        RolloutHistory: RolloutHistoryV1alpha1(crate::rollouts::v1alpha1::RolloutHistory),
        // v1alpha1-only kinds: keep this line last
    }
}
