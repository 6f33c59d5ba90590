//! The benchmark workload is what it claims to be: a rolling update in progress.

use kruise_core::cloneset::{Action, PodPatchPurpose, plan};

#[test]
fn workload_is_a_rolling_update() {
    let snapshot = benches::snapshot(1_000);
    assert_eq!(snapshot.pods.len(), 1_000);
    assert!(snapshot.pods.iter().all(|p| p.metadata.name.is_some()), "every pod decodes");
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
