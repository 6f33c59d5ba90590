//! What the planner reads off one pod: whether it carries the SidecarSet's latest sidecars,
//! whether the sidecars it was last given are running, which hot-upgrade container works, and
//! the per-SidecarSet in-place update state it records.

use std::collections::{BTreeMap, BTreeSet};

use k8s_openapi::api::core::v1::{Container, ContainerStatus, Pod};
use kruise_api::apps::common::InPlaceUpdateState;
use kruise_api::apps::v1beta1::{SidecarContainer, SidecarContainerUpgradeType, SidecarSet};
use kruise_api::well_known::annotations;

use crate::image::DigestRef;
use crate::pod::is_running_and_ready;
use crate::sidecarset::{SidecarSetUpgradeSpec, hot_upgrade_names, read_hash_annotation};

/// Whether a sidecar is upgraded by the hot-upgrade swap (`upgradeType: HotUpgrade`).
pub fn is_hot_upgrade(sidecar: &SidecarContainer) -> bool {
    sidecar.upgrade_strategy.upgrade_type == Some(SidecarContainerUpgradeType::HotUpgrade)
}

/// The pod container names a SidecarSet's `containers` occupy (a hot-upgrade sidecar as its
/// `-1`/`-2` pair). Init containers are not upgraded in place and are not listed.
pub fn sidecar_container_names(set: &SidecarSet) -> BTreeSet<String> {
    let mut names = BTreeSet::new();
    for sidecar in &set.spec.containers {
        if is_hot_upgrade(sidecar) {
            let (a, b) = hot_upgrade_names(&sidecar.container.name);
            names.insert(a);
            names.insert(b);
        } else {
            names.insert(sidecar.container.name.clone());
        }
    }
    names
}

/// The pod's entry for `set_name` in the hash annotation `key` (`kruise.io/sidecarset-hash`
/// or `kruise.io/sidecarset-hash-without-image`). A missing or unreadable annotation gives
/// none, as upstream reads it as an empty hash.
pub fn pod_hash_entry(pod: &Pod, key: &str, set_name: &str) -> Option<SidecarSetUpgradeSpec> {
    read_hash_annotation(pod, key).ok().and_then(|mut m| m.remove(set_name))
}

/// The hash the pod records for `set_name` under `key`; empty when none.
pub fn pod_hash(pod: &Pod, key: &str, set_name: &str) -> String {
    pod_hash_entry(pod, key, set_name).map(|e| e.hash).unwrap_or_default()
}

/// Which container of each hot-upgrade sidecar works, from the pod's
/// `kruise.io/sidecarset-working-hotupgrade-container` annotation (sidecar name to pod
/// container name). Empty when missing or unreadable, as upstream reads it.
pub fn working_hot_upgrade_containers(pod: &Pod) -> BTreeMap<String, String> {
    pod.metadata
        .annotations
        .as_ref()
        .and_then(|a| a.get(annotations::SIDECARSET_WORKING_HOTUPGRADE_CONTAINER))
        .and_then(|text| serde_json::from_str(text).ok())
        .unwrap_or_default()
}

/// The working and the other container of the hot-upgrade sidecar `name` on the pod. The
/// other one is idle on the empty image, or, mid-swap, still runs the previous version. When
/// the annotation does not name `<name>-1`, `<name>-2` is taken as working.
pub fn hot_upgrade_pair(pod: &Pod, name: &str) -> (String, String) {
    let (first, second) = hot_upgrade_names(name);
    if working_hot_upgrade_containers(pod).get(name) == Some(&first) {
        (first, second)
    } else {
        (second, first)
    }
}

/// The pod's in-place update states by SidecarSet name, from
/// `kruise.io/sidecarset-inplace-update-state`. `Ok(None)` when the annotation is missing.
///
/// # Errors
/// The JSON error when the annotation is unreadable.
pub fn in_place_states(
    pod: &Pod,
) -> Result<Option<BTreeMap<String, InPlaceUpdateState>>, serde_json::Error> {
    match pod
        .metadata
        .annotations
        .as_ref()
        .and_then(|a| a.get(annotations::SIDECARSET_INPLACE_UPDATE_STATE))
    {
        None => Ok(None),
        Some(text) => serde_json::from_str(text).map(Some),
    }
}

pub(crate) fn container<'p>(pod: &'p Pod, name: &str) -> Option<&'p Container> {
    pod.spec.as_ref()?.containers.iter().find(|c| c.name == name)
}

pub(crate) fn statuses(pod: &Pod) -> &[ContainerStatus] {
    pod.status.as_ref().and_then(|s| s.container_statuses.as_deref()).unwrap_or_default()
}

fn status<'p>(pod: &'p Pod, name: &str) -> Option<&'p ContainerStatus> {
    statuses(pod).iter().find(|s| s.name == name)
}

/// Whether the in-place updates the SidecarSets in `set_names` recorded on the pod have
/// finished for the containers in `names` (upstream's `IsSidecarContainerUpdateCompleted`):
/// a container recorded with the image ID it ran before the update, that still reports that
/// image ID while its status image differs from its spec image, has not restarted yet. A
/// resize recorded in the state has finished when the container statuses report the spec's
/// resources. No state means nothing is in flight; an unreadable one means unfinished.
pub fn sidecar_update_completed(
    pod: &Pod,
    set_names: &BTreeSet<&str>,
    names: &BTreeSet<String>,
) -> bool {
    let states = match in_place_states(pod) {
        Ok(None) => return true,
        Ok(Some(states)) => states,
        Err(_) => return false,
    };
    let mut last = BTreeMap::new();
    let mut resized = false;
    for set_name in set_names {
        if let Some(state) = states.get(*set_name) {
            resized |= state.update_resources;
            for (name, status) in &state.last_container_statuses {
                last.insert(name.as_str(), status.image_id.as_str());
            }
        }
    }
    for status in statuses(pod) {
        if !names.contains(&status.name) {
            continue;
        }
        let spec_image = container(pod, &status.name).and_then(|c| c.image.as_deref());
        if let Some(before) = last.get(status.name.as_str())
            && *before == status.image_id
            && spec_image != Some(status.image.as_str())
        {
            return false;
        }
    }
    // Only the sidecars were resized: an app container's resources are not this update's.
    !resized || crate::inplace::resources_applied_to(pod, |name| names.contains(name)).is_ok()
}

/// Whether the containers in `names` (every sidecar of `set` when empty) run what the pod's
/// spec asks (upstream's `IsPodStateConsistent`): every container has a status; a container
/// pinned by digest reports that digest; otherwise the in-place update has completed.
pub fn is_state_consistent(pod: &Pod, set: &SidecarSet, names: &BTreeSet<String>) -> bool {
    let spec_len = pod.spec.as_ref().map_or(0, |s| s.containers.len());
    if spec_len != statuses(pod).len() {
        return false;
    }
    let all;
    let names = if names.is_empty() {
        all = sidecar_container_names(set);
        &all
    } else {
        names
    };
    let mut all_digest = true;
    for c in pod.spec.iter().flat_map(|s| s.containers.iter()) {
        if !names.contains(&c.name) {
            continue;
        }
        let Some(pinned) = c.image.as_deref().and_then(DigestRef::parse) else {
            all_digest = false;
            break;
        };
        let Some(status) = status(pod, &c.name) else {
            return false;
        };
        let reported =
            status.image_id.split_once("://").map_or(status.image_id.as_str(), |(_, id)| id);
        if DigestRef::parse(reported).as_ref() != Some(&pinned) {
            return false;
        }
    }
    let set_name = set.metadata.name.as_deref().unwrap_or_default();
    all_digest || sidecar_update_completed(pod, &BTreeSet::from([set_name]), names)
}

/// Whether the pod counts as ready for the SidecarSet (upstream's `IsPodReady` of the
/// sidecar control): running and ready, and every idle hot-upgrade container on its empty
/// image (a pod mid-swap is not ready).
pub fn is_ready_for_set(pod: &Pod, set: &SidecarSet) -> bool {
    for sidecar in set.spec.containers.iter().filter(|s| is_hot_upgrade(s)) {
        let empty = &sidecar.upgrade_strategy.hot_upgrade_empty_image;
        let (_, other) = hot_upgrade_pair(pod, &sidecar.container.name);
        if let Some(c) = container(pod, &other)
            && !empty.is_empty()
            && c.image.as_deref() != Some(empty.as_str())
        {
            return false;
        }
    }
    is_running_and_ready(pod)
}

/// Whether some hot-upgrade sidecar of the pod is mid-swap: its idle container does not run
/// the empty image.
pub fn is_hot_upgrading(pod: &Pod, set: &SidecarSet) -> bool {
    set.spec.containers.iter().filter(|s| is_hot_upgrade(s)).any(|sidecar| {
        let (_, other) = hot_upgrade_pair(pod, &sidecar.container.name);
        container(pod, &other).and_then(|c| c.image.as_deref())
            != Some(sidecar.upgrade_strategy.hot_upgrade_empty_image.as_str())
    })
}

/// Whether a pod mid-swap may have its old container reset: running and ready, or every
/// container other than the idle hot-upgrade ones ready.
pub fn is_hot_upgrading_ready(pod: &Pod, set: &SidecarSet) -> bool {
    if is_running_and_ready(pod) {
        return true;
    }
    let idle: BTreeSet<String> = set
        .spec
        .containers
        .iter()
        .filter(|s| is_hot_upgrade(s))
        .map(|s| hot_upgrade_pair(pod, &s.container.name).1)
        .collect();
    statuses(pod).iter().filter(|s| !idle.contains(&s.name)).all(|s| s.ready)
}

/// Whether the pod has every container the SidecarSet injects (a hot-upgrade sidecar needs its
/// pair and an entry in the working-container annotation), as upstream requires of the pods
/// it upgrades.
pub fn is_consistent_with_set(pod: &Pod, set: &SidecarSet) -> bool {
    let working = working_hot_upgrade_containers(pod);
    set.spec.containers.iter().all(|sidecar| {
        let name = &sidecar.container.name;
        if is_hot_upgrade(sidecar) {
            let (a, b) = hot_upgrade_names(name);
            working.contains_key(name)
                && container(pod, &a).is_some()
                && container(pod, &b).is_some()
        } else {
            container(pod, name).is_some()
        }
    })
}

/// Whether the SidecarSet's name is in the pod's `kruise.io/sidecarset-injected-list`.
pub fn is_injected_by(pod: &Pod, set_name: &str) -> bool {
    pod.metadata
        .annotations
        .as_ref()
        .and_then(|a| a.get(annotations::SIDECARSET_INJECTED_LIST))
        .is_some_and(|list| list.split(',').any(|n| n == set_name))
}
