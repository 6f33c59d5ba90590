//! A pod as the pod chain's steps change it, with a record of what they changed.
//!
//! The pod webhook answers with a JSON patch from the pod as sent to the pod as the steps left
//! it. Rather than copying the whole pod before the steps and comparing both afterwards, the
//! steps change the pod through a [`PodEdit`]. It keeps the first value of each part a step
//! asks to change (labels, annotations, volumes, ...) and the indexes of the containers
//! inserted, and [`PodEdit::patch`] writes the patch from that record: parts that no step
//! touched are neither copied nor compared, and an inserted sidecar is one `add` without a
//! comparison of the app containers.
//!
//! A step that needs more than these parts takes the whole pod ([`PodEdit::pod_mut`]). The
//! edit then keeps a copy of the pod as it was before the chain, and the patch is the diff of
//! the two pods ([`super::pod_patch::pod_patch_of`]), as precise as before, only dearer.

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::{
    Affinity, Container, LocalObjectReference, Pod, PodReadinessGate, PodSpec, Toleration, Volume,
};

use super::pod_patch::{self, PatchWriter, PodPatchError};

/// A pod being changed by the pod chain's steps; see the module docs.
pub struct PodEdit<'a> {
    pod: &'a mut Pod,
    record: Record,
}

impl std::fmt::Debug for PodEdit<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PodEdit")
            .field("whole_pod_kept", &self.record.whole.is_some())
            .finish_non_exhaustive()
    }
}

/// What the steps changed: the first value of each part they changed.
#[derive(Default)]
struct Record {
    /// The pod before the chain, once a step took the whole pod. The other fields are then
    /// empty.
    whole: Option<Box<Pod>>,
    containers: Option<ListRecord<Vec<Container>>>,
    init_containers: Option<ListRecord<Option<Vec<Container>>>>,
    /// Volumes only appended ([`PodEdit::append_volumes`]) while `parts.volumes` is unset.
    appended_volumes: Option<Appended>,
    parts: SavedParts,
}

/// A list only appended to: its length before (`absent`: the pod had no list).
#[derive(Clone, Copy)]
struct Appended {
    from: usize,
    absent: bool,
}

/// What happened to a container list.
enum ListRecord<L> {
    /// Only insertions, at these indexes of the list as it is now (increasing). The other
    /// elements are the pod's, unchanged and in their order. `absent`: the pod had no list.
    Inserted { at: Vec<usize>, absent: bool },
    /// The list as it was.
    Saved(L),
}

/// Declares the parts kept whole when first changed: the accessor, the field's place, the
/// JSON path and how the patch compares it.
///
/// A part that can also be appended to without being kept names the method that turns the
/// record of appends into its kept value (`settle`), called before the part is kept.
macro_rules! saved_parts {
    ($(
        $place:ident $field:ident, $accessor:ident: $ty:ty = $path:literal, $kind:ident
        $(, settle $settle:ident)?;
    )*) => {
        /// The first value of each part a step changed.
        #[derive(Default)]
        struct SavedParts {
            $( $field: Option<$ty>, )*
        }

        impl<'a> PodEdit<'a> {
            $(
                #[doc = concat!("`", $path, "`, to change; the edit keeps its value first.")]
                pub fn $accessor(&mut self) -> &mut $ty {
                    $( self.$settle(); )?
                    let place = saved_parts!(@place self, $place, $field);
                    if self.record.whole.is_none() && self.record.parts.$field.is_none() {
                        self.record.parts.$field = Some(place.clone());
                    }
                    place
                }
            )*
        }

        impl SavedParts {
            /// Puts the kept values back into `pod`.
            fn restore(&mut self, pod: &mut Pod) {
                $(
                    if let Some(value) = self.$field.take() {
                        *saved_parts!(@restore pod, $place, $field) = value;
                    }
                )*
            }

            /// The operations turning the kept values into `pod`'s.
            fn ops(&self, pod: &Pod, ops: &mut PatchWriter) -> Result<(), serde_json::Error> {
                $(
                    if let Some(before) = &self.$field {
                        let now = saved_parts!(@read pod, $place, $field);
                        saved_parts!(@op $kind, ops, $path, before, now);
                    }
                )*
                Ok(())
            }
        }
    };
    (@place $self:ident, meta, $field:ident) => { &mut $self.pod.metadata.$field };
    (@place $self:ident, spec, $field:ident) => { &mut spec_of($self.pod, &mut $self.record).$field };
    (@restore $pod:ident, meta, $field:ident) => { &mut $pod.metadata.$field };
    (@restore $pod:ident, spec, $field:ident) => {
        &mut $pod.spec.get_or_insert_with(Default::default).$field
    };
    (@read $pod:ident, meta, $field:ident) => { &$pod.metadata.$field };
    (@read $pod:ident, spec, $field:ident) => {
        match &$pod.spec {
            Some(spec) => &spec.$field,
            None => &None,
        }
    };
    (@op map, $ops:expr, $path:expr, $before:expr, $now:expr) => {
        pod_patch::map_ops($ops, $path, $before.as_ref(), $now.as_ref())?
    };
    (@op optional_list, $ops:expr, $path:expr, $before:expr, $now:expr) => {
        pod_patch::optional_list_ops($ops, $path, $before, $now)?
    };
    (@op part, $ops:expr, $path:expr, $before:expr, $now:expr) => {
        pod_patch::part_ops($ops, $path, $before, $now)?
    };
}

saved_parts! {
    meta labels, labels_mut: Option<BTreeMap<String, String>> = "/metadata/labels", map;
    meta annotations, annotations_mut: Option<BTreeMap<String, String>> = "/metadata/annotations", map;
    spec volumes, volumes_mut: Option<Vec<Volume>> = "/spec/volumes", optional_list, settle settle_appended_volumes;
    spec image_pull_secrets, image_pull_secrets_mut: Option<Vec<LocalObjectReference>> = "/spec/imagePullSecrets", optional_list;
    spec tolerations, tolerations_mut: Option<Vec<Toleration>> = "/spec/tolerations", optional_list;
    spec readiness_gates, readiness_gates_mut: Option<Vec<PodReadinessGate>> = "/spec/readinessGates", optional_list;
    spec affinity, affinity_mut: Option<Affinity> = "/spec/affinity", part;
    spec node_selector, node_selector_mut: Option<BTreeMap<String, String>> = "/spec/nodeSelector", part;
}

impl<'a> PodEdit<'a> {
    /// An edit of `pod`, with nothing changed yet.
    pub fn new(pod: &'a mut Pod) -> Self {
        Self { pod, record: Record::default() }
    }

    /// The pod as the steps so far left it.
    pub fn pod(&self) -> &Pod {
        self.pod
    }

    /// The whole pod, for a change the other accessors do not cover. The edit then keeps a
    /// copy of the pod as it was before the chain (once), and the patch diffs the two pods.
    pub fn pod_mut(&mut self) -> &mut Pod {
        keep_whole(self.pod, &mut self.record);
        self.pod
    }

    /// `/spec/containers`, to change; the edit keeps a copy of the list first. To add a
    /// container, [`Self::insert_container`] is cheaper.
    pub fn containers_mut(&mut self) -> &mut Vec<Container> {
        let spec = spec_of(self.pod, &mut self.record);
        let keep = self.record.whole.is_none();
        let now = &mut spec.containers;
        if keep {
            let record = &mut self.record.containers;
            match record {
                None => *record = Some(ListRecord::Saved(now.clone())),
                Some(ListRecord::Inserted { at, .. }) => {
                    *record = Some(ListRecord::Saved(without(now.iter(), at)));
                }
                Some(ListRecord::Saved(_)) => {}
            }
        }
        now
    }

    /// Appends `volumes` to `/spec/volumes` (creating the list if the pod has none). Cheaper
    /// than [`Self::volumes_mut`]: the pod's volumes are neither copied nor compared, and the
    /// patch adds each new one.
    pub fn append_volumes(&mut self, volumes: Vec<Volume>) {
        if volumes.is_empty() {
            return;
        }
        let spec = spec_of(self.pod, &mut self.record);
        let untracked = self.record.whole.is_none()
            && self.record.parts.volumes.is_none()
            && self.record.appended_volumes.is_none();
        if untracked {
            self.record.appended_volumes = Some(Appended {
                from: spec.volumes.as_ref().map_or(0, Vec::len),
                absent: spec.volumes.is_none(),
            });
        }
        spec.volumes.get_or_insert_with(Vec::new).extend(volumes);
    }

    /// Turns a record of appended volumes into the kept first value of `/spec/volumes`.
    fn settle_appended_volumes(&mut self) {
        if let Some(appended) = self.record.appended_volumes.take() {
            let now = self.pod.spec.as_ref().and_then(|s| s.volumes.as_ref());
            self.record.parts.volumes = Some(appended.original(now));
        }
    }

    /// Inserts `container` into `/spec/containers` at `index` (at the end when `index` is
    /// past it).
    pub fn insert_container(&mut self, index: usize, container: Container) {
        let spec = spec_of(self.pod, &mut self.record);
        let keep = self.record.whole.is_none();
        let index = index.min(spec.containers.len());
        spec.containers.insert(index, container);
        if keep {
            note_insertion(&mut self.record.containers, index, false);
        }
    }

    /// `/spec/initContainers`, to change; the edit keeps a copy of the list first. To add a
    /// container, [`Self::insert_init_container`] is cheaper.
    pub fn init_containers_mut(&mut self) -> &mut Option<Vec<Container>> {
        let spec = spec_of(self.pod, &mut self.record);
        let keep = self.record.whole.is_none();
        let now = &mut spec.init_containers;
        if keep {
            let record = &mut self.record.init_containers;
            match record {
                None => *record = Some(ListRecord::Saved(now.clone())),
                Some(ListRecord::Inserted { at, absent }) => {
                    let before =
                        if *absent { None } else { Some(without(now.iter().flatten(), at)) };
                    *record = Some(ListRecord::Saved(before));
                }
                Some(ListRecord::Saved(_)) => {}
            }
        }
        now
    }

    /// Inserts `container` into `/spec/initContainers` at `index` (at the end when `index` is
    /// past it), creating the list if the pod has none.
    pub fn insert_init_container(&mut self, index: usize, container: Container) {
        let spec = spec_of(self.pod, &mut self.record);
        let keep = self.record.whole.is_none();
        let absent = spec.init_containers.is_none();
        let list = spec.init_containers.get_or_insert_with(Vec::new);
        let index = index.min(list.len());
        list.insert(index, container);
        if keep {
            note_insertion(&mut self.record.init_containers, index, absent);
        }
    }

    /// The JSON patch (as JSON text) from the pod as it was to the pod as it is; `None` when
    /// nothing changed. The pod is as it was when this returns.
    ///
    /// # Errors
    /// When a part of the pod does not encode as JSON.
    pub fn patch(&mut self) -> Result<Option<Vec<u8>>, PodPatchError> {
        if let Some(before) = &mut self.record.whole {
            return pod_patch::pod_patch_of(before.as_mut(), self.pod);
        }
        let mut ops = PatchWriter::default();
        let pod = &*self.pod;
        self.record.parts.ops(pod, &mut ops)?;
        if let Some(spec) = &pod.spec {
            if let Some(appended) = self.record.appended_volumes {
                let now = &spec.volumes;
                match now {
                    Some(list) if !appended.absent => {
                        let at: Vec<usize> = (appended.from..list.len()).collect();
                        pod_patch::inserted_ops(&mut ops, "/spec/volumes", list, &at)?;
                    }
                    _ => pod_patch::part_ops(&mut ops, "/spec/volumes", &None, now)?,
                }
            }
            if let Some(record) = &self.record.containers {
                match record {
                    ListRecord::Inserted { at, .. } => {
                        pod_patch::inserted_ops(
                            &mut ops,
                            "/spec/containers",
                            &spec.containers,
                            at,
                        )?;
                    }
                    ListRecord::Saved(before) => {
                        pod_patch::list_ops(
                            &mut ops,
                            "/spec/containers",
                            before,
                            &spec.containers,
                        )?;
                    }
                }
            }
            if let Some(record) = &self.record.init_containers {
                let now = &spec.init_containers;
                match (record, now) {
                    (ListRecord::Inserted { absent: true, .. }, _) => {
                        pod_patch::part_ops(&mut ops, "/spec/initContainers", &None, now)?;
                    }
                    (ListRecord::Inserted { at, .. }, Some(list)) => {
                        pod_patch::inserted_ops(&mut ops, "/spec/initContainers", list, at)?;
                    }
                    (ListRecord::Inserted { .. }, None) => {}
                    (ListRecord::Saved(before), now) => {
                        pod_patch::optional_list_ops(
                            &mut ops,
                            "/spec/initContainers",
                            before,
                            now,
                        )?;
                    }
                }
            }
        }
        Ok(ops.finish())
    }
}

/// The pod's spec, for a change to one of its parts. A pod without one is kept whole first:
/// the patch then adds the spec as a whole.
fn spec_of<'p>(pod: &'p mut Pod, record: &mut Record) -> &'p mut PodSpec {
    if pod.spec.is_none() {
        keep_whole(pod, record);
    }
    pod.spec.get_or_insert_with(Default::default)
}

/// Keeps a copy of the pod as it was before the chain (once): the pod as it is, with the kept
/// parts put back and the inserted containers taken out.
fn keep_whole(pod: &Pod, record: &mut Record) {
    if record.whole.is_some() {
        return;
    }
    let mut before = pod.clone();
    let mut kept = std::mem::take(record);
    kept.parts.restore(&mut before);
    if let Some(spec) = before.spec.as_mut() {
        if let Some(appended) = kept.appended_volumes {
            spec.volumes = appended.original(spec.volumes.as_ref());
        }
        match kept.containers {
            Some(ListRecord::Saved(list)) => spec.containers = list,
            Some(ListRecord::Inserted { at, .. }) => remove_indexes(&mut spec.containers, &at),
            None => {}
        }
        match kept.init_containers {
            Some(ListRecord::Saved(list)) => spec.init_containers = list,
            Some(ListRecord::Inserted { absent: true, .. }) => spec.init_containers = None,
            Some(ListRecord::Inserted { at, .. }) => {
                if let Some(list) = spec.init_containers.as_mut() {
                    remove_indexes(list, &at);
                }
            }
            None => {}
        }
    }
    *record = Record { whole: Some(Box::new(before)), ..Record::default() };
}

impl Appended {
    /// The list as it was, from the list as it is.
    fn original<T: Clone>(self, now: Option<&Vec<T>>) -> Option<Vec<T>> {
        if self.absent {
            None
        } else {
            Some(now.map(|l| l[..self.from.min(l.len())].to_vec()).unwrap_or_default())
        }
    }
}

/// Records an insertion at `index` in a container list's record: the indexes at or after it
/// move up by one.
fn note_insertion<L>(record: &mut Option<ListRecord<L>>, index: usize, absent: bool) {
    match record {
        None => *record = Some(ListRecord::Inserted { at: vec![index], absent }),
        Some(ListRecord::Inserted { at, .. }) => {
            for i in at.iter_mut().filter(|i| **i >= index) {
                *i += 1;
            }
            let place = at.partition_point(|i| *i < index);
            at.insert(place, index);
        }
        Some(ListRecord::Saved(_)) => {}
    }
}

/// The elements of `list` but those at `at` (increasing), cloned.
fn without<'l>(list: impl IntoIterator<Item = &'l Container>, at: &[usize]) -> Vec<Container> {
    list.into_iter()
        .enumerate()
        .filter(|(i, _)| at.binary_search(i).is_err())
        .map(|(_, c)| c.clone())
        .collect()
}

/// Removes the elements at `at` (increasing) from `list`.
fn remove_indexes(list: &mut Vec<Container>, at: &[usize]) {
    let mut index = 0;
    list.retain(|_| {
        let keep = at.binary_search(&index).is_err();
        index += 1;
        keep
    });
}

#[cfg(test)]
mod tests;
