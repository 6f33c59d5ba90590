//! The StatefulSet controller, as kube-controller-manager 1.36 runs it.
//!
//! A StatefulSet's pods are named `<set>-<ordinal>` for the ordinals `[start, start+replicas)`
//! (`spec.ordinals.start`, 0 by default). Each carries the template's labels plus
//! `controller-revision-hash` (the full name of its ControllerRevision),
//! `statefulset.kubernetes.io/pod-name` and `apps.kubernetes.io/pod-index`, has
//! `hostname` = its name and `subdomain` = `spec.serviceName`, and is controlled by the set.
//! Each volume claim template gives the pod a claim `<claim>-<set>-<ordinal>`, created before
//! the pod and mounted through the pod volume named after the template.
//!
//! One round of a StatefulSet:
//!
//! 1. the update revision is found or made: a ControllerRevision `<set>-<hash>` whose data is
//!    the template as a replacing strategic-merge patch (as kube-controller-manager stores it,
//!    hashed with FNV-1 and the collision count); an older equal revision gets the next
//!    revision number (a rollback); a name taken by different data raises `collisionCount`.
//!    The current revision is the one `status.currentRevision` names, else the update one;
//! 2. orphan pods the selector matches whose name is `<set>-<ordinal>` are adopted, and owned
//!    pods that no longer match are released;
//! 3. [`plan`] decides, from the pods' state, what to create and delete: missing pods are
//!    created (at the current revision below the partition, else at the update revision),
//!    finished (Failed or Succeeded) pods are deleted to be recreated, pods outside the range
//!    are deleted from the highest ordinal, and a RollingUpdate deletes pods not at the update
//!    revision from the highest ordinal down to the partition, at most `maxUnavailable` pods
//!    unavailable at a time (the `MaxUnavailableStatefulSet` gate is Beta and on in 1.35+;
//!    the default is 1). With `OrderedReady` every step waits for the pods before it to be
//!    Running, Ready and available for `minReadySeconds`; with `Parallel` nothing waits.
//!    OnDelete replaces a pod only once it has been deleted by someone else;
//! 4. claims get the owner references of `persistentVolumeClaimRetentionPolicy` (the set for
//!    `whenDeleted: Delete`, the pod once scaled away for `whenScaled: Delete`), missing
//!    claims of existing pods are created, and pods' identity labels are repaired;
//! 5. the status is written as a merge patch (`replicas`, `readyReplicas`, `currentReplicas`,
//!    `updatedReplicas`, `availableReplicas`, the revisions, `collisionCount`,
//!    `observedGeneration`); a RollingUpdate whose pods are all updated and ready moves
//!    `currentRevision` to the update revision. Revisions beyond `revisionHistoryLimit` that
//!    no pod uses are deleted.
//!
//! Each write is waited for in the pod cache before the round ends, as the other controllers
//! here do.
//!
//! Not done: Events; adoption of orphaned ControllerRevisions (only revisions the set controls
//! are read); the check that holds a pod's creation while a claim still belongs to an earlier
//! pod of that name (`PodClaimIsStale`); the status `conditions` (kube-controller-manager sets
//! none either). Pods are created one after another rather than in slow-start batches, and a
//! StatefulSet being deleted is left alone (its status is not updated).

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;
use std::time::Duration;

use k8s_openapi::api::apps::v1::{ControllerRevision, StatefulSet};
use k8s_openapi::api::core::v1::{
    PersistentVolumeClaim, PersistentVolumeClaimVolumeSource, Pod, PodTemplateSpec, Volume,
};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, OwnerReference};
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;
use kruise_core::intstr::{Rounding, scaled_value};
use kruise_core::revision::{
    RevisionData, compare_revisions, equal_revision, history_to_prune, next_revision_number,
    revision_name, set_revision_number, template_from_revision,
};
use kruise_core::statefulset::ordinals::{claim_name, parent_and_ordinal, pod_name};
use kube::api::{Api, DeleteParams, ListParams, Patch, PatchParams, PostParams, Preconditions};
use kube::runtime::reflector::{ObjectRef, Store};
use kube::{Client, ResourceExt as _};
use serde_json::{Value, json};
use tokio::sync::mpsc::UnboundedReceiver;

use super::{Error, api_error};

/// Pod label naming the ControllerRevision the pod was made from.
pub const REVISION_LABEL: &str = "controller-revision-hash";
/// Pod label holding the pod's own name.
pub const POD_NAME_LABEL: &str = "statefulset.kubernetes.io/pod-name";
/// Pod label holding the pod's ordinal.
pub const POD_INDEX_LABEL: &str = "apps.kubernetes.io/pod-index";
/// ControllerRevision label holding the revision's hash.
pub const REVISION_HASH_LABEL: &str = "controller.kubernetes.io/hash";

/// Revisions kept when `spec.revisionHistoryLimit` is unset.
const DEFAULT_HISTORY_LIMIT: i32 = 10;
/// Attempts at a revision name before giving up for this round.
const MAX_NAME_COLLISIONS: i32 = 100;

/// A StatefulSet's namespace and name.
type Key = ObjectRef<StatefulSet>;

struct Context {
    client: Client,
    pods: Store<Pod>,
}

/// Runs the controller until the task is aborted: set and pod changes queue the set, and
/// rounds run one at a time (see [`super::work`]).
pub(crate) async fn run(
    client: Client,
    (pods, pod_events): (Store<Pod>, UnboundedReceiver<Pod>),
    (sets, set_events): (Store<StatefulSet>, UnboundedReceiver<StatefulSet>),
) {
    let (queue, keys) = tokio::sync::mpsc::unbounded_channel::<Key>();
    let pod_sets = sets.clone();
    let feeds = futures::future::join(
        super::queue_own(set_events, queue.clone()),
        super::queue_owners(pod_events, queue.clone(), controller_set, move |pod: &Pod| {
            sets_of_pod(&pod_sets, pod)
        }),
    );
    let context = Arc::new(Context { client, pods: pods.clone() });
    futures::future::join(feeds, super::run_rounds(sets, queue, keys, pods, context, reconcile))
        .await;
}

/// The StatefulSet controlling `pod`, if one does.
fn controller_set(pod: &Pod) -> Option<Key> {
    super::controller_of(&pod.metadata, "apps/v1", "StatefulSet")
}

/// The sets a pod's change concerns: its controller, or for an orphan every set in its
/// namespace that would adopt it.
fn sets_of_pod(sets: &Store<StatefulSet>, pod: &Pod) -> Vec<Key> {
    super::owner_or_adopters(sets, &pod.metadata, controller_set(pod), |set, meta| {
        claims(set, meta)
    })
}

/// Whether the set's selector matches the pod and the pod's name is `<set>-<ordinal>`
/// (kube-controller-manager's `isMemberOf`).
fn claims(set: &StatefulSet, meta: &ObjectMeta) -> bool {
    super::selector_matches(Some(&set.spec.selector), meta) && ordinal_in(set, meta).is_some()
}

/// The pod's ordinal when its name is `<set>-<ordinal>`.
fn ordinal_in(set: &StatefulSet, meta: &ObjectMeta) -> Option<i32> {
    let name = meta.name.as_deref()?;
    parent_and_ordinal(name).filter(|(parent, _)| *parent == set.name_any()).map(|(_, o)| o)
}

// ---------------------------------------------------------------------------------------
// The pure plan.

/// What a round needs to know about one existing pod.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct PodFacts {
    /// Phase Failed or Succeeded.
    pub finished: bool,
    /// Has a deletionTimestamp.
    pub terminating: bool,
    /// Phase Running with the Ready condition True.
    pub running_ready: bool,
    /// Running, Ready, and ready for `minReadySeconds`.
    pub available: bool,
    /// Labelled with the update revision.
    pub updated: bool,
}

impl PodFacts {
    /// kube-controller-manager's `isHealthy`: running, ready and not terminating.
    fn healthy(self) -> bool {
        self.running_ready && !self.terminating
    }

    /// Counted against `maxUnavailable`: not available, or terminating.
    fn unavailable(self) -> bool {
        !self.available || self.terminating
    }
}

/// How pods are replaced when the template changes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum UpdatePolicy {
    /// Only pods someone else deletes are replaced.
    OnDelete,
    /// Pods at index `partition` or above (index = ordinal - start) are replaced from the
    /// highest, while fewer than `max_unavailable` of the set's pods are unavailable.
    Rolling {
        /// The lowest index that is updated.
        partition: i32,
        /// Pods that may be unavailable at once (at least 1).
        max_unavailable: i32,
    },
}

/// Everything [`plan`] decides from.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct PlanInput {
    /// The first ordinal.
    pub start: i32,
    /// The pod at each ordinal of `[start, start+replicas)`, in order; `None` when missing.
    pub replicas: Vec<Option<PodFacts>>,
    /// Pods with an ordinal outside the range, highest ordinal first.
    pub condemned: Vec<(i32, PodFacts)>,
    /// `OrderedReady` (each step waits for the pods before it) rather than `Parallel`.
    pub ordered: bool,
    /// The update strategy.
    pub update: UpdatePolicy,
    /// New pods with an ordinal below this get the current revision, the others the update
    /// revision.
    pub current_below: i64,
}

/// One thing a round does.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Step {
    /// Create the pod at this ordinal (its claims first).
    Create {
        /// The ordinal.
        ordinal: i32,
        /// At the update revision (else the current one).
        at_update_revision: bool,
    },
    /// Delete a finished pod so that it is made again.
    DeleteFinished {
        /// The ordinal.
        ordinal: i32,
    },
    /// Create the pod's missing claims, repair its identity labels and its claims' owners.
    Repair {
        /// The ordinal.
        ordinal: i32,
    },
    /// Give the claims of a pod outside the range the owners its scale-down calls for.
    ReleaseClaims {
        /// The ordinal.
        ordinal: i32,
    },
    /// Delete a pod outside the range.
    ScaleDown {
        /// The ordinal.
        ordinal: i32,
    },
    /// Delete a pod not at the update revision so that it is made again at it.
    Update {
        /// The ordinal.
        ordinal: i32,
    },
}

/// The steps of one round, in order (kube-controller-manager's `updateStatefulSet`: replicas in
/// ascending order, then condemned pods from the highest, then the rolling update). Scaling
/// comes first: with `ordered`, the round ends at the first step that has to wait.
pub(crate) fn plan(input: &PlanInput) -> Vec<Step> {
    let mut steps = Vec::new();
    let mut replicas = input.replicas.clone();
    // Ordinals created or deleted this round, which the rolling update leaves alone.
    let mut touched = BTreeSet::new();
    let ordinal_at = |index: usize| input.start.saturating_add(i32::try_from(index).unwrap_or(0));
    let first_unhealthy = replicas
        .iter()
        .enumerate()
        .find(|(_, pod)| !pod.is_some_and(PodFacts::healthy))
        .map(|(index, _)| ordinal_at(index))
        .or_else(|| {
            input
                .condemned
                .iter()
                .rev()
                .find(|(_, pod)| !pod.healthy())
                .map(|(ordinal, _)| *ordinal)
        });

    for (index, slot) in replicas.iter_mut().enumerate() {
        let ordinal = ordinal_at(index);
        match *slot {
            None => {
                let at_update_revision = i64::from(ordinal) >= input.current_below;
                steps.push(Step::Create { ordinal, at_update_revision });
                touched.insert(ordinal);
                // The new pod is not available yet.
                *slot = Some(PodFacts { updated: at_update_revision, ..PodFacts::default() });
                if input.ordered {
                    return steps;
                }
            }
            Some(pod) if pod.finished => {
                if !pod.terminating {
                    steps.push(Step::DeleteFinished { ordinal });
                    touched.insert(ordinal);
                }
                if input.ordered {
                    return steps;
                }
            }
            Some(pod) => {
                steps.push(Step::Repair { ordinal });
                if input.ordered && (pod.terminating || !pod.running_ready || !pod.available) {
                    return steps;
                }
            }
        }
    }

    steps.extend(input.condemned.iter().map(|&(ordinal, _)| Step::ReleaseClaims { ordinal }));
    for &(ordinal, pod) in &input.condemned {
        if pod.terminating {
            if input.ordered {
                return steps;
            }
            continue;
        }
        let blocked = !pod.running_ready || !pod.available;
        if input.ordered && blocked && first_unhealthy != Some(ordinal) {
            return steps;
        }
        steps.push(Step::ScaleDown { ordinal });
        if input.ordered {
            return steps;
        }
    }

    let UpdatePolicy::Rolling { partition, max_unavailable } = input.update else {
        return steps;
    };
    let unavailable = replicas.iter().filter(|pod| pod.is_none_or(PodFacts::unavailable)).count();
    let budget = usize::try_from(max_unavailable.max(1)).unwrap_or(1);
    let mut allowed = budget.saturating_sub(unavailable);
    let lowest = usize::try_from(partition.max(0)).unwrap_or(0);
    for (index, slot) in replicas.iter().enumerate().rev() {
        if allowed == 0 || index < lowest {
            break;
        }
        let ordinal = ordinal_at(index);
        if let Some(pod) = slot
            && !touched.contains(&ordinal)
            && !pod.updated
            && !pod.terminating
        {
            steps.push(Step::Update { ordinal });
            allowed -= 1;
        }
    }
    steps
}

// ---------------------------------------------------------------------------------------
// The spec, read.

/// The first ordinal.
fn start_ordinal(set: &StatefulSet) -> i32 {
    set.spec.ordinals.as_ref().and_then(|o| o.start).unwrap_or(0).max(0)
}

/// `spec.replicas` (1 when unset).
fn spec_replicas(set: &StatefulSet) -> i32 {
    set.spec.replicas.unwrap_or(1).max(0)
}

/// `updateStrategy.type` is OnDelete.
fn on_delete(set: &StatefulSet) -> bool {
    set.spec.update_strategy.as_ref().and_then(|s| s.type_.as_deref()) == Some("OnDelete")
}

/// The update policy, with `maxUnavailable` scaled against the replicas rounding down and at
/// least 1 (kube-controller-manager's `getStatefulSetMaxUnavailable`).
fn update_policy(set: &StatefulSet) -> UpdatePolicy {
    if on_delete(set) {
        return UpdatePolicy::OnDelete;
    }
    let rolling = set.spec.update_strategy.as_ref().and_then(|s| s.rolling_update.as_ref());
    let partition = rolling.and_then(|r| r.partition).unwrap_or(0);
    let max_unavailable = rolling
        .and_then(|r| r.max_unavailable.as_ref())
        .map(|value| scaled(value, spec_replicas(set)))
        .unwrap_or(1)
        .max(1);
    UpdatePolicy::Rolling { partition, max_unavailable }
}

fn scaled(value: &IntOrString, total: i32) -> i32 {
    scaled_value(value, total, Rounding::Down).unwrap_or(1)
}

/// New pods below this ordinal get the current revision: `start + partition` for a
/// RollingUpdate with `rollingUpdate` set, `start + status.currentReplicas` without it, none
/// for OnDelete (kube-controller-manager's `newVersionedStatefulSetPod`).
fn current_below(set: &StatefulSet) -> i64 {
    if on_delete(set) {
        return i64::MIN;
    }
    let start = i64::from(start_ordinal(set));
    match set.spec.update_strategy.as_ref().and_then(|s| s.rolling_update.as_ref()) {
        Some(rolling) => start + i64::from(rolling.partition.unwrap_or(0)),
        None => {
            start + i64::from(set.status.as_ref().and_then(|s| s.current_replicas).unwrap_or(0))
        }
    }
}

/// The claim templates.
fn claim_templates(set: &StatefulSet) -> &[PersistentVolumeClaim] {
    set.spec.volume_claim_templates.as_deref().unwrap_or_default()
}

/// Who should own a claim under the retention policy.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum ClaimOwner {
    /// Nobody (the claim is retained).
    Nobody,
    /// The StatefulSet (deleted with it).
    Set,
    /// The pod (deleted with it, as it is scaled away).
    Pod,
}

/// kube-controller-manager's `updateClaimOwnerRefForSetAndPod`: `whenScaled: Delete` hands a
/// scaled-away pod's claim to the pod; otherwise `whenDeleted: Delete` hands it to the set.
pub(crate) fn wanted_claim_owner(
    delete_with_set: bool,
    delete_on_scale_down: bool,
    in_range: bool,
) -> ClaimOwner {
    match (delete_on_scale_down && !in_range, delete_with_set) {
        (true, _) => ClaimOwner::Pod,
        (false, true) => ClaimOwner::Set,
        (false, false) => ClaimOwner::Nobody,
    }
}

/// The set's retention policy: (`whenDeleted` is Delete, `whenScaled` is Delete).
fn retention(set: &StatefulSet) -> (bool, bool) {
    let policy = set.spec.persistent_volume_claim_retention_policy.as_ref();
    let delete = |v: Option<&String>| v.map(String::as_str) == Some("Delete");
    (
        delete(policy.and_then(|p| p.when_deleted.as_ref())),
        delete(policy.and_then(|p| p.when_scaled.as_ref())),
    )
}

// ---------------------------------------------------------------------------------------
// Objects the round makes.

/// The pod at `ordinal` from `template`, labelled with `revision` (kube-controller-manager's
/// `newVersionedStatefulSetPod`).
fn new_pod(set: &StatefulSet, template: &PodTemplateSpec, ordinal: i32, revision: &str) -> Pod {
    let set_name = set.name_any();
    let name = pod_name(&set_name, ordinal);
    let mut pod = super::pod_from_template(set, Some(template));
    pod.metadata.name = Some(name.clone());
    let labels = pod.metadata.labels.get_or_insert_with(Default::default);
    labels.insert(REVISION_LABEL.to_owned(), revision.to_owned());
    labels.extend(identity_labels(&name, ordinal));
    let mut spec = pod.spec.take().unwrap_or_default();
    spec.hostname = Some(name.clone());
    spec.subdomain = set.spec.service_name.clone().filter(|s| !s.is_empty());
    let mut volumes = spec.volumes.take().unwrap_or_default();
    for claim in claim_templates(set) {
        let volume_name = claim.name_any();
        volumes.retain(|v| v.name != volume_name);
        volumes.push(Volume {
            name: volume_name.clone(),
            persistent_volume_claim: Some(PersistentVolumeClaimVolumeSource {
                claim_name: claim_name(&volume_name, &set_name, ordinal),
                read_only: Some(false),
            }),
            ..Volume::default()
        });
    }
    spec.volumes = Some(volumes).filter(|v| !v.is_empty());
    pod.spec = Some(spec);
    pod
}

/// The labels that tie a pod to its name and ordinal.
fn identity_labels(name: &str, ordinal: i32) -> [(String, String); 2] {
    [
        (POD_NAME_LABEL.to_owned(), name.to_owned()),
        (POD_INDEX_LABEL.to_owned(), ordinal.to_string()),
    ]
}

/// The claim `template` makes for the pod at `ordinal`: the template with the set's namespace,
/// its labels overlaid with the selector's `matchLabels`.
fn new_claim(
    set: &StatefulSet,
    template: &PersistentVolumeClaim,
    ordinal: i32,
) -> PersistentVolumeClaim {
    let mut claim = template.clone();
    claim.metadata.name = Some(claim_name(&template.name_any(), &set.name_any(), ordinal));
    claim.metadata.namespace = set.namespace();
    let mut labels = claim.metadata.labels.take().unwrap_or_default();
    labels.extend(set.spec.selector.match_labels.clone().unwrap_or_default());
    claim.metadata.labels = Some(labels).filter(|l| !l.is_empty());
    claim.status = None;
    claim
}

/// The owner references a claim should have, or `None` when they are right already or the
/// claim belongs to another controller.
fn claim_owners(
    claim: &ObjectMeta,
    set_owner: &OwnerReference,
    pod_owner: Option<&OwnerReference>,
    wanted: ClaimOwner,
) -> Option<Vec<OwnerReference>> {
    let ours =
        |r: &OwnerReference| r.uid == set_owner.uid || pod_owner.is_some_and(|p| p.uid == r.uid);
    let refs = claim.owner_references.clone().unwrap_or_default();
    if refs.iter().any(|r| r.controller == Some(true) && !ours(r)) {
        return None;
    }
    let mut updated: Vec<OwnerReference> = refs.iter().filter(|r| !ours(r)).cloned().collect();
    match (wanted, pod_owner) {
        (ClaimOwner::Set, _) => updated.push(set_owner.clone()),
        (ClaimOwner::Pod, Some(pod)) => updated.push(pod.clone()),
        (ClaimOwner::Pod, None) | (ClaimOwner::Nobody, _) => {}
    }
    (updated != refs).then_some(updated)
}

/// A controller reference to a pod.
fn pod_reference(pod: &Pod) -> OwnerReference {
    super::controller_reference(pod)
}

// ---------------------------------------------------------------------------------------
// Revisions.

/// The set's current and update revisions, and the collision count.
struct Revisions {
    current: String,
    update: String,
    collision_count: i32,
    /// The current revision's template (the set's own when the revisions are equal).
    current_template: PodTemplateSpec,
}

/// A ControllerRevision object, built as JSON so that it reads the same with every
/// k8s-openapi version (the types of `data` and `revision` changed in 1.37).
fn revision_object(
    set: &StatefulSet,
    data: &RevisionData,
    hash: &str,
    number: i64,
) -> Result<ControllerRevision, Error> {
    let mut labels =
        set.spec.template.metadata.as_ref().and_then(|m| m.labels.clone()).unwrap_or_default();
    labels.insert(REVISION_HASH_LABEL.to_owned(), hash.to_owned());
    let object = json!({
        "apiVersion": "apps/v1",
        "kind": "ControllerRevision",
        "metadata": {
            "name": revision_name(&set.name_any(), hash),
            "namespace": set.namespace(),
            "labels": labels,
            "annotations": set.metadata.annotations,
            "ownerReferences": [super::controller_reference(set)],
        },
        "data": data.value(),
        "revision": number,
    });
    serde_json::from_value(object).map_err(|source| Error::Encode {
        what: format!("controllerrevision of statefulset {}", set.name_any()),
        source,
    })
}

/// Finds or makes the update revision (kube-controller-manager's `getStatefulSetRevisions`).
async fn revisions(
    set: &StatefulSet,
    api: &Api<ControllerRevision>,
    owned: &mut Vec<ControllerRevision>,
) -> Result<Revisions, Error> {
    owned.sort_by(compare_revisions);
    let data = RevisionData::from_template(&set.spec.template).map_err(|source| Error::Encode {
        what: format!("template of statefulset {}", set.name_any()),
        source,
    })?;
    let mut collision_count = set.status.as_ref().and_then(|s| s.collision_count).unwrap_or(0);
    let number = next_revision_number(owned);
    let candidate = revision_object(set, &data, &data.hash(Some(collision_count)), number)?;
    let equal = owned.iter().rposition(|r| equal_revision(r, &candidate));
    let update = match equal {
        Some(index) if index + 1 == owned.len() => owned[index].name_any(),
        Some(index) => {
            let name = owned[index].name_any();
            let patch = json!({ "revision": number });
            api.patch(&name, &PatchParams::default(), &Patch::Merge(&patch))
                .await
                .map_err(api_error(format!("update controllerrevision {name}")))?;
            set_revision_number(&mut owned[index], number);
            name
        }
        None => {
            let mut attempt = candidate;
            loop {
                let name = attempt.name_any();
                match api.create(&PostParams::default(), &attempt).await {
                    Ok(created) => {
                        owned.push(created);
                        break name;
                    }
                    Err(kube::Error::Api(e)) if e.code == 409 => {
                        let existing = api
                            .get(&name)
                            .await
                            .map_err(api_error(format!("get controllerrevision {name}")))?;
                        if equal_revision(&existing, &attempt) {
                            break name;
                        }
                        if collision_count >= MAX_NAME_COLLISIONS {
                            return Err(api_error(format!("create controllerrevision {name}"))(
                                kube::Error::Api(e),
                            ));
                        }
                        collision_count += 1;
                        attempt =
                            revision_object(set, &data, &data.hash(Some(collision_count)), number)?;
                    }
                    Err(source) => {
                        return Err(api_error(format!("create controllerrevision {name}"))(source));
                    }
                }
            }
        }
    };
    let wanted_current =
        set.status.as_ref().and_then(|s| s.current_revision.clone()).unwrap_or_default();
    let current_revision =
        owned.iter().find(|r| !wanted_current.is_empty() && r.name_any() == wanted_current);
    let (current, current_template) = match current_revision {
        Some(revision) if revision.name_any() != update => {
            let template = template_from_revision(revision).map_err(Error::Revision)?;
            (revision.name_any(), template)
        }
        _ => (update.clone(), set.spec.template.clone()),
    };
    Ok(Revisions { current, update, collision_count, current_template })
}

// ---------------------------------------------------------------------------------------
// The round.

/// One round; `Some(d)` asks for another after `d`.
async fn reconcile(
    set: Arc<StatefulSet>,
    context: Arc<Context>,
) -> Result<Option<Duration>, Error> {
    if set.metadata.deletion_timestamp.is_some() {
        return Ok(None);
    }
    let namespace = set.namespace().unwrap_or_default();
    let name = set.name_any();
    let uid = set.uid().unwrap_or_default();
    let client = context.client.clone();
    let pods: Api<Pod> = Api::namespaced(client.clone(), &namespace);
    let revision_api: Api<ControllerRevision> = Api::namespaced(client.clone(), &namespace);

    // 1. Revisions.
    let mut owned_revisions: Vec<ControllerRevision> = revision_api
        .list(&ListParams::default())
        .await
        .map_err(api_error(format!("list controllerrevisions in {namespace}")))?
        .items
        .into_iter()
        .filter(|r| super::controlled_by(&r.metadata, &uid))
        .collect();
    let revisions = revisions(&set, &revision_api, &mut owned_revisions).await?;

    // 2. Adoption and release.
    let in_namespace: Vec<Arc<Pod>> = context
        .pods
        .state()
        .into_iter()
        .filter(|p| p.namespace().as_deref() == Some(namespace.as_str()))
        .collect();
    let owner = super::controller_reference(set.as_ref());
    if super::claim(&pods, in_namespace.clone(), &owner, |pod| claims(&set, &pod.metadata)).await? {
        return Ok(Some(Duration::from_millis(200)));
    }

    // 3. Plan and act.
    let now = jiff::Timestamp::now();
    let min_ready = set.spec.min_ready_seconds.unwrap_or(0);
    let members = member_pods(&set, &context.pods);
    let start = start_ordinal(&set);
    let replicas = spec_replicas(&set);
    let end = i64::from(start) + i64::from(replicas);
    let facts = |pod: &Pod| PodFacts {
        finished: matches!(kruise_core::pod::phase_of(pod), "Failed" | "Succeeded"),
        terminating: kruise_core::pod::is_terminating(pod),
        running_ready: kruise_core::pod::is_running_and_ready(pod),
        available: kruise_core::pod::is_running_and_available(pod, min_ready, now),
        updated: pod.labels().get(REVISION_LABEL) == Some(&revisions.update),
    };
    let input = PlanInput {
        start,
        replicas: (0..replicas)
            .map(|i| members.get(&start.saturating_add(i)).map(|p| facts(p)))
            .collect(),
        condemned: members
            .iter()
            .rev()
            .filter(|(ordinal, _)| {
                i64::from(**ordinal) < i64::from(start) || i64::from(**ordinal) >= end
            })
            .map(|(ordinal, pod)| (*ordinal, facts(pod)))
            .collect(),
        ordered: set.spec.pod_management_policy.as_deref() != Some("Parallel"),
        update: update_policy(&set),
        current_below: current_below(&set),
    };
    let round = Round { set: &set, context: &context, pods: &pods, revisions: &revisions };
    let claims_list = round.claims().await?;
    for step in plan(&input) {
        round.act(step, &members, &claims_list).await?;
    }

    // 4. Status, from the pods as the cache now shows them.
    let members = member_pods(&set, &context.pods);
    let status = status_of(&set, &members, &revisions, jiff::Timestamp::now());
    let stored = serde_json::to_value(&set.status).unwrap_or(Value::Null);
    if !super::status_matches(&stored, &status) {
        let sets: Api<StatefulSet> = Api::namespaced(client, &namespace);
        sets.patch_status(
            &name,
            &PatchParams::default(),
            &Patch::Merge(&json!({ "status": status })),
        )
        .await
        .map_err(api_error(format!("update status of statefulset {name}")))?;
    }

    // 5. History.
    let in_use: BTreeSet<&str> = members
        .values()
        .filter_map(|p| p.labels().get(REVISION_LABEL))
        .map(String::as_str)
        .collect();
    let names: Vec<String> = owned_revisions.iter().map(|r| r.name_any()).collect();
    let sorted: Vec<&str> = names.iter().map(String::as_str).collect();
    let limit = set.spec.revision_history_limit.unwrap_or(DEFAULT_HISTORY_LIMIT).max(0);
    let current = status["currentRevision"].as_str().unwrap_or_default();
    for doomed in history_to_prune(
        &sorted,
        &in_use,
        current,
        &revisions.update,
        usize::try_from(limit).unwrap_or(0),
    ) {
        match revision_api.delete(doomed, &DeleteParams::default()).await {
            Ok(_) => {}
            Err(kube::Error::Api(e)) if e.code == 404 => {}
            Err(source) => {
                return Err(api_error(format!("delete controllerrevision {doomed}"))(source));
            }
        }
    }

    if min_ready > 0 && status["availableReplicas"].as_i64() != Some(i64::from(replicas)) {
        return Ok(Some(Duration::from_secs(u64::try_from(min_ready).unwrap_or(1).max(1))));
    }
    Ok(None)
}

/// The set's pods by ordinal: those it controls named `<set>-<ordinal>`.
fn member_pods(set: &StatefulSet, pods: &Store<Pod>) -> BTreeMap<i32, Arc<Pod>> {
    let uid = set.uid().unwrap_or_default();
    pods.state()
        .into_iter()
        .filter(|p| p.namespace() == set.namespace() && super::controlled_by(&p.metadata, &uid))
        .filter_map(|p| Some((ordinal_in(set, &p.metadata)?, p)))
        .collect()
}

/// The status for the set's pods `members`, as JSON (kube-controller-manager's
/// `computeReplicaStatus` and `completeRollingUpdate`).
fn status_of(
    set: &StatefulSet,
    members: &BTreeMap<i32, Arc<Pod>>,
    revisions: &Revisions,
    now: jiff::Timestamp,
) -> Value {
    let min_ready = set.spec.min_ready_seconds.unwrap_or(0);
    let count = |f: &dyn Fn(&Pod) -> bool| members.values().filter(|p| f(p)).count();
    let at = |revision: &str| {
        let revision = revision.to_owned();
        move |p: &Pod| {
            !kruise_core::pod::is_terminating(p)
                && p.labels().get(REVISION_LABEL) == Some(&revision)
        }
    };
    let replicas = count(&|_| true);
    let ready = count(&kruise_core::pod::is_running_and_ready);
    let available = count(&|p| kruise_core::pod::is_running_and_available(p, min_ready, now));
    let mut current_replicas = count(&at(&revisions.current));
    let updated = count(&at(&revisions.update));
    let mut current_revision = revisions.current.clone();
    let wanted = usize::try_from(spec_replicas(set)).unwrap_or(0);
    if !on_delete(set) && updated == ready && ready == replicas && replicas == wanted {
        current_revision = revisions.update.clone();
        current_replicas = updated;
    }
    json!({
        "replicas": replicas,
        "readyReplicas": ready,
        "currentReplicas": current_replicas,
        "updatedReplicas": updated,
        "availableReplicas": available,
        "currentRevision": current_revision,
        "updateRevision": revisions.update,
        "collisionCount": revisions.collision_count,
        "observedGeneration": set.metadata.generation,
    })
}

/// What a round acts with.
struct Round<'a> {
    set: &'a StatefulSet,
    context: &'a Context,
    pods: &'a Api<Pod>,
    revisions: &'a Revisions,
}

impl Round<'_> {
    fn claim_api(&self) -> Api<PersistentVolumeClaim> {
        Api::namespaced(self.context.client.clone(), &self.set.namespace().unwrap_or_default())
    }

    /// The claims in the set's namespace by name (none read when it has no claim templates).
    async fn claims(&self) -> Result<BTreeMap<String, PersistentVolumeClaim>, Error> {
        if claim_templates(self.set).is_empty() {
            return Ok(BTreeMap::new());
        }
        let list = self
            .claim_api()
            .list(&ListParams::default())
            .await
            .map_err(api_error("list persistentvolumeclaims"))?;
        Ok(list.items.into_iter().map(|c| (c.name_any(), c)).collect())
    }

    /// Does one planned step.
    async fn act(
        &self,
        step: Step,
        members: &BTreeMap<i32, Arc<Pod>>,
        claims: &BTreeMap<String, PersistentVolumeClaim>,
    ) -> Result<(), Error> {
        match step {
            Step::Create { ordinal, at_update_revision } => {
                let (template, revision) = if at_update_revision {
                    (&self.set.spec.template, &self.revisions.update)
                } else {
                    (&self.revisions.current_template, &self.revisions.current)
                };
                self.create_claims(ordinal, None, claims).await?;
                let pod = new_pod(self.set, template, ordinal, revision);
                let name = pod.name_any();
                match self.pods.create(&PostParams::default(), &pod).await {
                    Ok(_) => {}
                    Err(kube::Error::Api(e)) if e.code == 409 => return Ok(()),
                    Err(source) => return Err(api_error(format!("create pod {name}"))(source)),
                }
                let key = ObjectRef::new(&name).within(&self.set.namespace().unwrap_or_default());
                super::wait_until(|| self.context.pods.get(&key).is_some()).await;
            }
            Step::DeleteFinished { ordinal }
            | Step::ScaleDown { ordinal }
            | Step::Update { ordinal } => {
                if let Some(pod) = members.get(&ordinal) {
                    self.delete(pod).await?;
                }
            }
            Step::Repair { ordinal } => {
                if let Some(pod) = members.get(&ordinal) {
                    self.create_claims(ordinal, Some(pod), claims).await?;
                    self.repair_identity(pod, ordinal).await?;
                }
            }
            Step::ReleaseClaims { ordinal } => {
                if let Some(pod) = members.get(&ordinal) {
                    self.fix_claim_owners(ordinal, pod, false, claims).await?;
                }
            }
        }
        Ok(())
    }

    /// Deletes the pod (this very one: the uid is a precondition) and waits until the cache
    /// shows it terminating or gone.
    async fn delete(&self, pod: &Pod) -> Result<(), Error> {
        let name = pod.name_any();
        let uid = pod.uid();
        let params = DeleteParams {
            preconditions: Some(Preconditions { uid: uid.clone(), resource_version: None }),
            ..DeleteParams::default()
        };
        match self.pods.delete(&name, &params).await {
            Ok(_) => {}
            Err(kube::Error::Api(e)) if e.code == 404 || e.code == 409 => return Ok(()),
            Err(source) => return Err(api_error(format!("delete pod {name}"))(source)),
        }
        let key = ObjectRef::from_obj(pod);
        super::wait_until(|| {
            self.context
                .pods
                .get(&key)
                .is_none_or(|p| p.uid() != uid || kruise_core::pod::is_terminating(&p))
        })
        .await;
        Ok(())
    }

    /// Creates the claims of the pod at `ordinal` that do not exist, and repairs the owners
    /// of those that do (for an existing `pod`).
    async fn create_claims(
        &self,
        ordinal: i32,
        pod: Option<&Arc<Pod>>,
        claims: &BTreeMap<String, PersistentVolumeClaim>,
    ) -> Result<(), Error> {
        let (delete_with_set, _) = retention(self.set);
        let api = self.claim_api();
        for template in claim_templates(self.set) {
            let mut claim = new_claim(self.set, template, ordinal);
            let name = claim.name_any();
            if let Some(existing) = claims.get(&name) {
                if existing.metadata.deletion_timestamp.is_some() && pod.is_none() {
                    return Err(Error::ClaimDeleting { claim: name });
                }
                continue;
            }
            if delete_with_set {
                claim.metadata.owner_references = Some(vec![super::controller_reference(self.set)]);
            }
            match api.create(&PostParams::default(), &claim).await {
                Ok(_) => {}
                Err(kube::Error::Api(e)) if e.code == 409 => {}
                Err(source) => {
                    return Err(api_error(format!("create persistentvolumeclaim {name}"))(source));
                }
            }
        }
        if let Some(pod) = pod {
            self.fix_claim_owners(ordinal, pod, true, claims).await?;
        }
        Ok(())
    }

    /// Gives the claims of the pod at `ordinal` the owners the retention policy calls for.
    async fn fix_claim_owners(
        &self,
        ordinal: i32,
        pod: &Pod,
        in_range: bool,
        claims: &BTreeMap<String, PersistentVolumeClaim>,
    ) -> Result<(), Error> {
        let (delete_with_set, delete_on_scale_down) = retention(self.set);
        let wanted = wanted_claim_owner(delete_with_set, delete_on_scale_down, in_range);
        let set_owner = super::controller_reference(self.set);
        let pod_owner = pod_reference(pod);
        let api = self.claim_api();
        for template in claim_templates(self.set) {
            let name = claim_name(&template.name_any(), &self.set.name_any(), ordinal);
            let Some(claim) = claims.get(&name) else { continue };
            let Some(owners) = claim_owners(&claim.metadata, &set_owner, Some(&pod_owner), wanted)
            else {
                continue;
            };
            let owners = if owners.is_empty() { Value::Null } else { json!(owners) };
            let patch = json!({"metadata": {"ownerReferences": owners,
                "resourceVersion": claim.metadata.resource_version}});
            match api.patch(&name, &PatchParams::default(), &Patch::Merge(&patch)).await {
                Ok(_) => {}
                Err(kube::Error::Api(e)) if e.code == 404 || e.code == 409 => {}
                Err(source) => {
                    return Err(api_error(format!("patch persistentvolumeclaim {name}"))(source));
                }
            }
        }
        Ok(())
    }

    /// Puts back the pod-name and pod-index labels when they are missing or wrong.
    async fn repair_identity(&self, pod: &Pod, ordinal: i32) -> Result<(), Error> {
        let name = pod.name_any();
        let wanted = identity_labels(&name, ordinal);
        if wanted.iter().all(|(k, v)| pod.labels().get(k) == Some(v)) {
            return Ok(());
        }
        let labels: BTreeMap<String, String> = wanted.into_iter().collect();
        let patch =
            json!({"metadata": {"labels": labels, "resourceVersion": pod.resource_version()}});
        match self.pods.patch(&name, &PatchParams::default(), &Patch::Merge(&patch)).await {
            Ok(_) => Ok(()),
            Err(kube::Error::Api(e)) if e.code == 404 || e.code == 409 => Ok(()),
            Err(source) => Err(api_error(format!("patch pod {name}"))(source)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn healthy(updated: bool) -> PodFacts {
        PodFacts { running_ready: true, available: true, updated, ..PodFacts::default() }
    }

    fn input(replicas: Vec<Option<PodFacts>>, update: UpdatePolicy) -> PlanInput {
        PlanInput {
            start: 0,
            replicas,
            condemned: Vec::new(),
            ordered: true,
            update,
            current_below: 0,
        }
    }

    const ROLLING: UpdatePolicy = UpdatePolicy::Rolling { partition: 0, max_unavailable: 1 };

    #[test]
    fn ordered_creation_waits_for_the_previous_pod() {
        let starting = PodFacts { updated: true, ..PodFacts::default() };
        let steps = plan(&input(vec![Some(starting), None, None], ROLLING));
        assert_eq!(steps, vec![Step::Repair { ordinal: 0 }]);
        let steps = plan(&input(vec![Some(healthy(true)), None, None], ROLLING));
        assert_eq!(
            steps,
            vec![
                Step::Repair { ordinal: 0 },
                Step::Create { ordinal: 1, at_update_revision: true }
            ]
        );
    }

    #[test]
    fn parallel_creates_every_missing_pod() {
        let mut plan_input = input(vec![None, None, None], ROLLING);
        plan_input.ordered = false;
        let created: Vec<i32> = plan(&plan_input)
            .into_iter()
            .filter_map(|s| match s {
                Step::Create { ordinal, .. } => Some(ordinal),
                _ => None,
            })
            .collect();
        assert_eq!(created, vec![0, 1, 2]);
    }

    #[test]
    fn scale_down_takes_the_highest_ordinal_first() {
        let mut plan_input = input(vec![Some(healthy(true))], ROLLING);
        plan_input.condemned = vec![(2, healthy(true)), (1, healthy(true))];
        let deleted: Vec<Step> =
            plan(&plan_input).into_iter().filter(|s| matches!(s, Step::ScaleDown { .. })).collect();
        assert_eq!(deleted, vec![Step::ScaleDown { ordinal: 2 }]);
    }

    #[test]
    fn rolling_update_respects_the_partition_and_goes_from_the_top() {
        let pods = vec![Some(healthy(false)); 3];
        let update = UpdatePolicy::Rolling { partition: 2, max_unavailable: 1 };
        let steps = plan(&input(pods.clone(), update));
        assert!(steps.contains(&Step::Update { ordinal: 2 }));
        assert!(!steps.iter().any(|s| matches!(s, Step::Update { ordinal } if *ordinal < 2)));
        let steps = plan(&input(pods, UpdatePolicy::OnDelete));
        assert!(!steps.iter().any(|s| matches!(s, Step::Update { .. })));
    }

    #[test]
    fn an_unavailable_pod_holds_the_rolling_update() {
        let mut pods = vec![Some(healthy(false)); 3];
        pods[2] = Some(PodFacts { updated: true, ..PodFacts::default() });
        let mut plan_input = input(pods, ROLLING);
        plan_input.ordered = false;
        assert!(!plan(&plan_input).iter().any(|s| matches!(s, Step::Update { .. })));
    }

    #[test]
    fn max_unavailable_updates_several_pods_at_once() {
        let update = UpdatePolicy::Rolling { partition: 0, max_unavailable: 2 };
        let updates: Vec<Step> = plan(&input(vec![Some(healthy(false)); 3], update))
            .into_iter()
            .filter(|s| matches!(s, Step::Update { .. }))
            .collect();
        assert_eq!(updates, vec![Step::Update { ordinal: 2 }, Step::Update { ordinal: 1 }]);
    }

    #[test]
    fn a_max_unavailable_percentage_rounds_down() {
        assert_eq!(scaled(&IntOrString::String("50%".into()), 3), 1);
        assert_eq!(scaled(&IntOrString::String("10%".into()), 3), 0);
        assert_eq!(scaled(&IntOrString::Int(2), 3), 2);
    }

    #[test]
    fn failed_pods_are_deleted() {
        let failed = PodFacts { finished: true, ..PodFacts::default() };
        assert_eq!(
            plan(&input(vec![Some(failed)], ROLLING)),
            vec![Step::DeleteFinished { ordinal: 0 }]
        );
    }

    #[test]
    fn claim_owners_follow_the_retention_policy() {
        assert_eq!(wanted_claim_owner(false, false, true), ClaimOwner::Nobody);
        assert_eq!(wanted_claim_owner(true, false, false), ClaimOwner::Set);
        assert_eq!(wanted_claim_owner(false, true, true), ClaimOwner::Nobody);
        assert_eq!(wanted_claim_owner(false, true, false), ClaimOwner::Pod);
        assert_eq!(wanted_claim_owner(true, true, true), ClaimOwner::Set);
        assert_eq!(wanted_claim_owner(true, true, false), ClaimOwner::Pod);
    }

    fn facts() -> impl Strategy<Value = PodFacts> {
        (any::<bool>(), any::<bool>(), any::<bool>(), any::<bool>(), any::<bool>()).prop_map(
            |(finished, terminating, running_ready, available, updated)| PodFacts {
                finished,
                terminating,
                running_ready,
                available: available && running_ready,
                updated,
            },
        )
    }

    fn plan_inputs() -> impl Strategy<Value = PlanInput> {
        (
            0..5i32,
            proptest::collection::vec(proptest::option::of(facts()), 0..8),
            proptest::collection::vec(facts(), 0..4),
            any::<bool>(),
            proptest::option::of((0..9i32, 1..4i32)),
            -2..10i64,
        )
            .prop_map(|(start, replicas, extra, ordered, rolling, below)| {
                let end = start + i32::try_from(replicas.len()).unwrap_or(0);
                let mut condemned: Vec<(i32, PodFacts)> = extra
                    .into_iter()
                    .enumerate()
                    .map(|(i, f)| (end + i32::try_from(i).unwrap_or(0), f))
                    .collect();
                condemned.reverse();
                let update = match rolling {
                    Some((partition, max_unavailable)) => {
                        UpdatePolicy::Rolling { partition, max_unavailable }
                    }
                    None => UpdatePolicy::OnDelete,
                };
                PlanInput {
                    start,
                    replicas,
                    condemned,
                    ordered,
                    update,
                    current_below: i64::from(start) + below,
                }
            })
    }

    proptest! {
        #[test]
        fn plans_keep_ordinals_unique_in_range_and_hold_the_partition(input in plan_inputs()) {
            let steps = plan(&input);
            let end = input.start + i32::try_from(input.replicas.len()).unwrap_or(0);
            let in_range = |o: i32| o >= input.start && o < end;
            let mut touched = BTreeSet::new();
            for step in &steps {
                match *step {
                    Step::Create { ordinal, at_update_revision } => {
                        prop_assert!(in_range(ordinal));
                        prop_assert!(input.replicas[usize::try_from(ordinal - input.start).unwrap_or(0)].is_none());
                        prop_assert_eq!(at_update_revision, i64::from(ordinal) >= input.current_below);
                        prop_assert!(touched.insert(ordinal), "ordinal {} acted on twice", ordinal);
                    }
                    Step::DeleteFinished { ordinal } => {
                        prop_assert!(in_range(ordinal));
                        prop_assert!(touched.insert(ordinal));
                    }
                    Step::ScaleDown { ordinal } => {
                        prop_assert!(!in_range(ordinal));
                        prop_assert!(touched.insert(ordinal));
                    }
                    Step::Update { ordinal } => {
                        prop_assert!(in_range(ordinal));
                        let UpdatePolicy::Rolling { partition, .. } = input.update else {
                            return Err(TestCaseError::fail("update under OnDelete"));
                        };
                        prop_assert!(ordinal - input.start >= partition, "partition broken");
                        prop_assert!(touched.insert(ordinal));
                    }
                    Step::Repair { ordinal } => prop_assert!(in_range(ordinal)),
                    Step::ReleaseClaims { ordinal } => prop_assert!(!in_range(ordinal)),
                }
            }
            if input.ordered {
                let creates = steps.iter().filter(|s| matches!(s, Step::Create { .. })).count();
                let deletes = steps
                    .iter()
                    .filter(|s| matches!(s, Step::ScaleDown { .. } | Step::DeleteFinished { .. }))
                    .count();
                prop_assert!(creates + deletes <= 1, "ordered rounds take one scaling step");
            }
            if let UpdatePolicy::Rolling { max_unavailable, .. } = input.update {
                let updates = steps.iter().filter(|s| matches!(s, Step::Update { .. })).count();
                prop_assert!(updates <= usize::try_from(max_unavailable.max(1)).unwrap_or(1));
            }
        }
    }
}
