//! The benchmark workload is what it claims to be: a rolling update in progress.

use kruise_core::cloneset::{Action, PodPatchPurpose, plan};

#[test]
fn workload_is_a_rolling_update() {
    let snapshot = benches::snapshot(1_000);
    assert_eq!(snapshot.pods.len(), 1_000);
    assert!(snapshot.pods.iter().all(|p| p.metadata().name.is_some()), "every pod decodes");
    let p = plan(&snapshot, benches::now());
    assert!(p.blocked.is_none(), "{:?}", p.blocked);
    let creates = p.actions.iter().filter(|a| matches!(a, Action::CreatePod { .. })).count();
    let marked = p
        .actions
        .iter()
        .filter(|a| matches!(a, Action::PatchPod { purpose: PodPatchPurpose::SpecifiedDelete, .. }))
        .count();
    assert_eq!(creates, 0, "no scaling: {:?}", p.actions.first());
    assert!(marked > 0, "some pods are updated");
}

/// A cached pod that records its name when it is decoded whole.
#[derive(Debug)]
struct Counted {
    pod: std::sync::Arc<kruise_kube::cached_pod::CachedPod>,
    decoded: std::sync::Arc<std::sync::Mutex<Vec<String>>>,
}

impl kruise_core::workload::PodSource for Counted {
    fn metadata(&self) -> &k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta {
        &self.pod.metadata
    }
    fn status(&self) -> Option<std::borrow::Cow<'_, k8s_openapi::api::core::v1::PodStatus>> {
        self.pod.status().map(std::borrow::Cow::Owned)
    }
    fn whole_pod(&self) -> k8s_openapi::api::core::v1::Pod {
        let name = self.pod.metadata.name.clone().unwrap_or_default();
        self.decoded.lock().expect("not poisoned").push(name);
        self.pod.to_pod().expect("decodes")
    }
}

/// The controller's path from cached pods to a plan of `pods`, with the names of the pods the
/// planner decoded whole.
fn plan_from_cache(
    cloneset: &kruise_api::apps::v1beta1::CloneSet,
    revisions: &[k8s_openapi::api::apps::v1::ControllerRevision],
    pods: Vec<k8s_openapi::api::core::v1::Pod>,
) -> (kruise_core::cloneset::CloneSetPlan, std::collections::BTreeSet<String>) {
    use kruise_kube::workload::WorkloadKind;
    let cached: Vec<std::sync::Arc<kruise_kube::cached_pod::CachedPod>> = pods
        .into_iter()
        .map(|p| std::sync::Arc::new(kruise_kube::cached_pod::CachedPod::from_pod(p)))
        .collect();
    let (snapshot_pods, node_labels) =
        kruise_kube::workload::pod_inputs(&cached, None).expect("inputs");
    assert!(snapshot_pods.iter().all(|p| !p.is_whole()), "nothing decoded before planning");
    let decoded = std::sync::Arc::default();
    let counted = cached.iter().map(|pod| {
        let facts = std::sync::Arc::new(pod.planner_facts().expect("facts").clone());
        let source = Counted { pod: pod.clone(), decoded: std::sync::Arc::clone(&decoded) };
        kruise_core::workload::SnapshotPod::lazy(std::sync::Arc::new(source), facts)
    });
    let mut inputs = kruise_kube::workload::WorkloadInputs::default();
    inputs.pods = counted.collect();
    inputs.node_labels = node_labels;
    inputs.revisions = revisions.to_vec();
    let settings = kruise_kube::controller::ControllerSettings::default();
    let plan = cloneset.plan(inputs, &settings, benches::now());
    let decoded = decoded.lock().expect("not poisoned").iter().cloned().collect();
    (plan, decoded)
}

/// The names of the pods `plan` acts on.
fn acted_on(plan: &kruise_core::cloneset::CloneSetPlan) -> std::collections::BTreeSet<String> {
    plan.actions
        .iter()
        .filter_map(|a| match a {
            Action::PatchPod { name, .. }
            | Action::PatchPodStatus { name, .. }
            | Action::DeletePod { name, .. } => Some(name.clone()),
            _ => None,
        })
        .collect()
}

#[test]
fn a_plan_from_the_cache_decodes_only_the_pods_it_acts_on() {
    let (cloneset, revisions, pods) = benches::cloneset_parts(1_000);
    let (plan, decoded) = plan_from_cache(&cloneset, &revisions, pods);
    assert!(plan.blocked.is_none(), "{:?}", plan.blocked);
    let acted = acted_on(&plan);
    assert!(!acted.is_empty(), "the rolling update acts on some pods");
    assert!(
        decoded.is_subset(&acted),
        "decoded {} pods, {} of them not acted on: {:?}",
        decoded.len(),
        decoded.difference(&acted).count(),
        decoded.difference(&acted).take(5).collect::<Vec<_>>()
    );
}

#[test]
fn a_settled_cloneset_plans_from_the_cache_without_decoding_a_pod() {
    let (mut cloneset, revisions, mut pods) = benches::cloneset_parts(1_000);
    let update = cloneset.status.as_ref().map(|s| s.update_revision.clone()).unwrap_or_default();
    if let Some(status) = cloneset.status.as_mut() {
        status.current_revision = update.clone();
        status.observed_generation = cloneset.metadata.generation.unwrap_or_default();
    }
    for pod in &mut pods {
        let labels = pod.metadata.labels.get_or_insert_with(Default::default);
        labels.insert("controller-revision-hash".into(), update.clone());
        labels.insert("pod-template-hash".into(), update.rsplit('-').next().unwrap_or("").into());
        let containers = pod.spec.as_mut().map(|s| s.containers.iter_mut()).into_iter().flatten();
        containers.for_each(|c| c.image = Some("app:v2".into()));
        for c in pod.status.iter_mut().flat_map(|s| s.conditions.iter_mut().flatten()) {
            c.status = "True".into();
        }
    }
    let (plan, decoded) = plan_from_cache(&cloneset, &revisions, pods);
    assert!(plan.blocked.is_none(), "{:?}", plan.blocked);
    assert!(acted_on(&plan).is_empty(), "settled: {:?}", plan.actions.first());
    assert!(decoded.is_empty(), "a settled plan reads facts, metadata and status only");
}
