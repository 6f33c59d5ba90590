//! Adopting orphans: the plan that makes a workload the controller of the orphan pods and
//! ControllerRevisions its selector matches, each patch guarded by the resourceVersion the
//! orphan was read at (one changed since is left for the next round to decide again).

use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, OwnerReference};
use serde_json::json;

use super::plan::{Action, Event, EventType, Guard, ObjectKind, Patch, Plan, Subresource, Target};

/// The plan that adopts `pods` and `revisions` (orphans, as read) for `owner`: a
/// `SuccessfulAdopt` Event follows each pod's adoption.
pub fn adoption_plan<'a>(
    owner: &OwnerReference,
    pods: impl IntoIterator<Item = &'a ObjectMeta>,
    revisions: impl IntoIterator<Item = &'a ObjectMeta>,
) -> Plan<()> {
    let mut plan = Plan::empty(Default::default());
    let mut adopt = |kind: ObjectKind, meta: &ObjectMeta| {
        let mut owners = meta.owner_references.clone().unwrap_or_default();
        owners.push(owner.clone());
        let name = meta.name.as_deref().unwrap_or_default();
        let guard = meta.resource_version.clone().map_or(Guard::None, Guard::ResourceVersion);
        plan.actions.push(Action::PatchObject {
            target: Target::new(kind, meta.namespace.as_deref(), name).guarded(guard),
            subresource: Subresource::Main,
            patch: Patch::merge(json!({"metadata": {"ownerReferences": owners}})),
        });
    };
    let mut adopted_pods = Vec::new();
    for meta in pods {
        adopt(ObjectKind::POD, meta);
        adopted_pods.push(meta.name.clone().unwrap_or_default());
    }
    for meta in revisions {
        adopt(ObjectKind::CONTROLLER_REVISION, meta);
    }
    plan.events = adopted_pods
        .into_iter()
        .enumerate()
        .map(|(i, name)| Event {
            type_: EventType::Normal,
            reason: "SuccessfulAdopt".into(),
            message: format!("adopted pod {name}"),
            after_action: Some(i),
        })
        .collect();
    plan
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_orphan_is_patched_at_the_version_it_was_read_and_keeps_its_other_owners() {
        let owner = OwnerReference {
            api_version: "apps.kruise.io/v1beta1".into(),
            kind: "CloneSet".into(),
            name: "web".into(),
            uid: "u".into(),
            controller: Some(true),
            block_owner_deletion: Some(true),
        };
        let other = OwnerReference { controller: None, name: "x".into(), ..owner.clone() };
        let pod = ObjectMeta {
            name: Some("web-1".into()),
            namespace: Some("ns".into()),
            resource_version: Some("7".into()),
            owner_references: Some(vec![other.clone()]),
            ..Default::default()
        };
        let revision = ObjectMeta {
            name: Some("web-abc".into()),
            namespace: Some("ns".into()),
            resource_version: Some("9".into()),
            ..Default::default()
        };
        let plan = adoption_plan(&owner, [&pod], [&revision]);
        assert_eq!(plan.actions.len(), 2);
        let Action::PatchObject { target, patch, .. } = &plan.actions[0] else {
            panic!("a patch");
        };
        assert_eq!((target.kind, target.name.as_str()), (ObjectKind::POD, "web-1"));
        assert_eq!(target.guard, Guard::ResourceVersion("7".into()));
        assert_eq!(patch.body()["metadata"]["ownerReferences"], json!([other, owner]));
        let Action::PatchObject { target, .. } = &plan.actions[1] else { panic!("a patch") };
        assert_eq!(target.kind, ObjectKind::CONTROLLER_REVISION);
        assert_eq!(plan.events.len(), 1);
        assert_eq!(plan.events[0].after_action, Some(0));
    }
}
