//! Which NodeImages carry which jobs' entries.

use std::collections::{BTreeMap, BTreeSet};

use k8s_openapi::api::core::v1::ObjectReference;
use kruise_api::apps::v1beta1::NodeImage;

/// The owners of the tag entries of one NodeImage (deduplicated by UID, sorted by UID).
pub fn owners_on(node_image: &NodeImage) -> Vec<ObjectReference> {
    let mut by_uid = BTreeMap::new();
    for image in node_image.spec.images.values() {
        for tag in &image.tags {
            for owner in &tag.owner_references {
                by_uid
                    .entry(owner.uid.clone().unwrap_or_default())
                    .or_insert_with(|| owner.clone());
            }
        }
    }
    by_uid.into_values().collect()
}

/// The jobs (owner references) to reconcile after a NodeImage changed from `old` to `new`:
/// the owners of entries on either version. Cost: O(entries on the NodeImage).
pub fn jobs_to_wake(old: Option<&NodeImage>, new: Option<&NodeImage>) -> Vec<ObjectReference> {
    let mut by_uid = BTreeMap::new();
    for ni in old.into_iter().chain(new) {
        for owner in owners_on(ni) {
            by_uid.entry(owner.uid.clone().unwrap_or_default()).or_insert(owner);
        }
    }
    by_uid.into_values().collect()
}

/// For each owner UID, the NodeImages that carry one of its entries. Kept up to date with
/// [`TagOwnerIndex::update`] from NodeImage events (O(entries on the changed NodeImage)),
/// it answers "where does this job have entries" without a scan of every NodeImage.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct TagOwnerIndex {
    by_owner: BTreeMap<String, BTreeSet<String>>,
}

impl TagOwnerIndex {
    /// An index of `node_images`.
    pub fn build(node_images: &[NodeImage]) -> Self {
        let mut index = Self::default();
        for ni in node_images {
            index.update(None, Some(ni));
        }
        index
    }

    /// Applies a NodeImage change (created: `old` is `None`; deleted: `new` is `None`).
    pub fn update(&mut self, old: Option<&NodeImage>, new: Option<&NodeImage>) {
        if let Some(old) = old {
            let name = old.metadata.name.clone().unwrap_or_default();
            for owner in owners_on(old) {
                let uid = owner.uid.unwrap_or_default();
                if let Some(nodes) = self.by_owner.get_mut(&uid) {
                    nodes.remove(&name);
                    if nodes.is_empty() {
                        self.by_owner.remove(&uid);
                    }
                }
            }
        }
        if let Some(new) = new {
            let name = new.metadata.name.clone().unwrap_or_default();
            for owner in owners_on(new) {
                self.by_owner
                    .entry(owner.uid.unwrap_or_default())
                    .or_default()
                    .insert(name.clone());
            }
        }
    }

    /// The NodeImages with an entry owned by `uid`, by name.
    pub fn nodes_of(&self, uid: &str) -> impl Iterator<Item = &str> {
        self.by_owner.get(uid).into_iter().flatten().map(String::as_str)
    }
}
