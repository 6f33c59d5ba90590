//! The patch metadata table: which lists of the core/v1 types reachable from a Pod merge, and
//! by which key.
//!
//! Kubernetes records this as `patchStrategy`/`patchMergeKey` struct tags on its Go types. Here
//! each type that leads to a tagged list is a [`TypeDef`] listing only the fields that matter;
//! every other field is unknown to the table, so its objects merge key by key and its lists are
//! replaced whole (which is what an untagged Go field does).

/// A struct type of the table: the fields whose patch behaviour is not the default.
#[derive(Debug)]
pub(crate) struct TypeDef {
    /// The Go type name, for debugging.
    #[allow(dead_code)]
    pub(crate) name: &'static str,
    /// The fields, by JSON name.
    pub(crate) fields: &'static [FieldDef],
}

/// One field of a [`TypeDef`].
#[derive(Debug)]
pub(crate) struct FieldDef {
    /// The JSON name of the field.
    pub(crate) name: &'static str,
    /// What the field holds.
    pub(crate) shape: Shape,
}

/// What a field of the table holds.
#[derive(Debug)]
pub(crate) enum Shape {
    /// A nested struct, merged key by key. `retain_keys` marks Kubernetes' `retainKeys`
    /// strategy: a patch for it lists the keys to keep.
    Object { ty: &'static TypeDef, retain_keys: bool },
    /// A list of objects merged item by item, matched on `key`. `item` describes the items
    /// (`None`: plain objects); `retain_keys` applies to each item.
    MergeList { key: &'static str, item: Option<&'static TypeDef>, retain_keys: bool },
    /// A list of primitives merged as a set (`finalizers`).
    PrimitiveMergeList,
}

const fn object(name: &'static str, ty: &'static TypeDef) -> FieldDef {
    FieldDef { name, shape: Shape::Object { ty, retain_keys: false } }
}

const fn merge_list(name: &'static str, key: &'static str, item: &'static TypeDef) -> FieldDef {
    FieldDef { name, shape: Shape::MergeList { key, item: Some(item), retain_keys: false } }
}

const fn plain_merge_list(name: &'static str, key: &'static str) -> FieldDef {
    FieldDef { name, shape: Shape::MergeList { key, item: None, retain_keys: false } }
}

const fn retain_merge_list(name: &'static str, key: &'static str) -> FieldDef {
    FieldDef { name, shape: Shape::MergeList { key, item: None, retain_keys: true } }
}

/// `metav1.ObjectMeta`.
pub(crate) static OBJECT_META: TypeDef = TypeDef {
    name: "ObjectMeta",
    fields: &[
        plain_merge_list("ownerReferences", "uid"),
        FieldDef { name: "finalizers", shape: Shape::PrimitiveMergeList },
    ],
};

/// `v1.Pod`.
pub(crate) static POD: TypeDef = TypeDef {
    name: "Pod",
    fields: &[
        object("metadata", &OBJECT_META),
        object("spec", &POD_SPEC),
        object("status", &POD_STATUS),
    ],
};

/// `v1.PodTemplateSpec`.
pub(crate) static POD_TEMPLATE_SPEC: TypeDef = TypeDef {
    name: "PodTemplateSpec",
    fields: &[object("metadata", &OBJECT_META), object("spec", &POD_SPEC)],
};

/// An object embedding a pod template (a workload): only its own metadata is known; the path
/// to the template is given by the caller.
pub(crate) static WORKLOAD: TypeDef =
    TypeDef { name: "Workload", fields: &[object("metadata", &OBJECT_META)] };

/// `v1.Service`.
pub(crate) static SERVICE: TypeDef = TypeDef {
    name: "Service",
    fields: &[object("metadata", &OBJECT_META), object("spec", &SERVICE_SPEC)],
};

/// `v1.ServiceSpec`: ports merge on the port number.
pub(crate) static SERVICE_SPEC: TypeDef =
    TypeDef { name: "ServiceSpec", fields: &[plain_merge_list("ports", "port")] };

/// `v1.PodSpec`.
pub(crate) static POD_SPEC: TypeDef = TypeDef {
    name: "PodSpec",
    fields: &[
        FieldDef {
            name: "volumes",
            shape: Shape::MergeList { key: "name", item: Some(&VOLUME), retain_keys: true },
        },
        merge_list("initContainers", "name", &CONTAINER),
        merge_list("containers", "name", &CONTAINER),
        // EphemeralContainerCommon carries the same tags as Container.
        merge_list("ephemeralContainers", "name", &CONTAINER),
        plain_merge_list("imagePullSecrets", "name"),
        plain_merge_list("hostAliases", "ip"),
        plain_merge_list("topologySpreadConstraints", "topologyKey"),
        plain_merge_list("schedulingGates", "name"),
        retain_merge_list("resourceClaims", "name"),
        plain_merge_list("evictionResponders", "name"),
    ],
};

/// `v1.Container` (and `v1.EphemeralContainer`, whose tags are the same).
pub(crate) static CONTAINER: TypeDef = TypeDef {
    name: "Container",
    fields: &[
        // Kubernetes keys container ports on the port number alone for strategic merge patch
        // (the protocol only takes part in server-side apply's list-map key).
        plain_merge_list("ports", "containerPort"),
        plain_merge_list("env", "name"),
        plain_merge_list("volumeMounts", "mountPath"),
        plain_merge_list("volumeDevices", "devicePath"),
    ],
};

/// `v1.Volume` (with its inlined `VolumeSource`).
pub(crate) static VOLUME: TypeDef =
    TypeDef { name: "Volume", fields: &[object("ephemeral", &EPHEMERAL_VOLUME_SOURCE)] };

/// `v1.EphemeralVolumeSource`.
pub(crate) static EPHEMERAL_VOLUME_SOURCE: TypeDef = TypeDef {
    name: "EphemeralVolumeSource",
    fields: &[object("volumeClaimTemplate", &PERSISTENT_VOLUME_CLAIM_TEMPLATE)],
};

/// `v1.PersistentVolumeClaimTemplate`.
pub(crate) static PERSISTENT_VOLUME_CLAIM_TEMPLATE: TypeDef =
    TypeDef { name: "PersistentVolumeClaimTemplate", fields: &[object("metadata", &OBJECT_META)] };

/// `v1.PodStatus`. The container status lists carry no tags, so they are replaced whole.
pub(crate) static POD_STATUS: TypeDef = TypeDef {
    name: "PodStatus",
    fields: &[
        plain_merge_list("conditions", "type"),
        plain_merge_list("hostIPs", "ip"),
        plain_merge_list("podIPs", "ip"),
        retain_merge_list("resourceClaimStatuses", "name"),
        merge_list(
            "nodeAllocatableResourceClaimStatuses",
            "resourceClaimName",
            &NODE_ALLOCATABLE_RESOURCE_CLAIM_STATUS,
        ),
    ],
};

/// `v1.NodeAllocatableResourceClaimStatus`.
pub(crate) static NODE_ALLOCATABLE_RESOURCE_CLAIM_STATUS: TypeDef = TypeDef {
    name: "NodeAllocatableResourceClaimStatus",
    fields: &[plain_merge_list("mapping", "name"), plain_merge_list("overhead", "name")],
};

/// Where a value sits in the schema while walking a document.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Node {
    /// Inside a struct of the table.
    Known(&'static TypeDef),
    /// Above a struct of the table: the keys in `path` lead down to `target`; `here`
    /// describes the other fields at this level.
    Above { here: &'static TypeDef, path: &'static [&'static str], target: &'static TypeDef },
    /// Outside the table: objects merge key by key, lists are replaced.
    Unknown,
}

/// How a list field is patched.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum ListStrategy {
    /// Replaced whole.
    Atomic,
    /// Merged item by item. `key` is `None` for lists of primitives.
    Merge { key: Option<&'static str> },
}

/// What the schema says about one field.
#[derive(Clone, Copy, Debug)]
pub(crate) struct FieldMeta {
    /// The schema of the field's value (or of its items, for a list).
    pub(crate) node: Node,
    /// How the field is patched if it is a list.
    pub(crate) list: ListStrategy,
    /// Whether a diff of the field's value (or of each item, for a list) lists the keys to keep.
    pub(crate) retain_keys: bool,
}

const UNKNOWN_FIELD: FieldMeta =
    FieldMeta { node: Node::Unknown, list: ListStrategy::Atomic, retain_keys: false };

fn lookup(ty: &'static TypeDef, name: &str) -> FieldMeta {
    let Some(field) = ty.fields.iter().find(|f| f.name == name) else {
        return UNKNOWN_FIELD;
    };
    match field.shape {
        Shape::Object { ty, retain_keys } => {
            FieldMeta { node: Node::Known(ty), list: ListStrategy::Atomic, retain_keys }
        }
        Shape::MergeList { key, item, retain_keys } => FieldMeta {
            node: item.map_or(Node::Unknown, Node::Known),
            list: ListStrategy::Merge { key: Some(key) },
            retain_keys,
        },
        Shape::PrimitiveMergeList => FieldMeta {
            node: Node::Unknown,
            list: ListStrategy::Merge { key: None },
            retain_keys: false,
        },
    }
}

impl Node {
    /// The metadata of the field `name` of an object at this node.
    pub(crate) fn field(self, name: &str) -> FieldMeta {
        match self {
            Node::Known(ty) => lookup(ty, name),
            Node::Above { here, path, target } => match path.split_first() {
                Some((first, rest)) if *first == name => {
                    let node = if rest.is_empty() {
                        Node::Known(target)
                    } else {
                        Node::Above { here: &EMPTY, path: rest, target }
                    };
                    FieldMeta { node, list: ListStrategy::Atomic, retain_keys: false }
                }
                _ => lookup(here, name),
            },
            Node::Unknown => UNKNOWN_FIELD,
        }
    }
}

/// A struct with no special fields.
static EMPTY: TypeDef = TypeDef { name: "Object", fields: &[] };

#[cfg(test)]
pub(crate) mod testing {
    //! A schema shaped like the one Kubernetes' own strategic merge patch tests use, to check
    //! the algorithms on every kind of field without Pod-specific noise.
    use super::*;

    /// An item with every kind of field.
    pub(crate) static MERGE_ITEM: TypeDef = TypeDef {
        name: "MergeItem",
        fields: &[
            merge_list("mergingList", "name", &MERGE_ITEM),
            FieldDef { name: "mergingIntList", shape: Shape::PrimitiveMergeList },
            merge_list("mergeItemPtr", "name", &MERGE_ITEM),
            FieldDef {
                name: "retainKeysMap",
                shape: Shape::Object { ty: &RETAIN_KEYS_MERGE_ITEM, retain_keys: true },
            },
            FieldDef {
                name: "retainKeysMergingList",
                shape: Shape::MergeList { key: "name", item: Some(&MERGE_ITEM), retain_keys: true },
            },
        ],
    };

    /// The value of `retainKeysMap`.
    pub(crate) static RETAIN_KEYS_MERGE_ITEM: TypeDef = TypeDef {
        name: "RetainKeysMergeItem",
        fields: &[
            FieldDef { name: "mergingIntList", shape: Shape::PrimitiveMergeList },
            merge_list("mergingList", "name", &MERGE_ITEM),
        ],
    };
}
