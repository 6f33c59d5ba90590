//! How Go's `encoding/json` writes the core/v1 types found in a pod template.
//!
//! The hashes Kruise and Kubernetes compute are over JSON that Go produced from typed
//! structs. Go writes a field according to its type and its `omitempty` tag: an empty string,
//! zero number, false, nil pointer, or empty slice or map is dropped only when the tag says
//! `omitempty`; a struct (not a pointer) is always written, even when all of its fields are
//! empty (`"resources":{}`); a zero `metav1.Time` is written as `null`; a `Quantity` is
//! written in canonical form. k8s-openapi serialises differently (it writes what is set and
//! nothing else), so this table records, for every field of every type reachable from
//! `PodTemplateSpec` and `PersistentVolumeClaim`, what Go would write. Fields are listed in Go
//! struct order, which matters where Go marshals a typed struct directly.
//!
//! It also records the `apps.kruise.io/v1beta1` SidecarSet types a SidecarSet's
//! ControllerRevision holds ([`SIDECAR_CONTAINER`], [`SIDECAR_SET_PATCH_POD_METADATA`]).
//!
//! The table follows k8s.io/api 1.32-1.34. Fields it does not list are handled by a
//! heuristic (see [`super::gojson`]).

/// A Go field type, as far as JSON encoding is concerned.
#[derive(Clone, Copy, Debug)]
#[non_exhaustive]
pub enum Ty {
    /// `string` (or a string-based enum).
    Str,
    /// Any integer type.
    Int,
    /// `bool`.
    Bool,
    /// `metav1.Time` (not a pointer): `null` when zero.
    Time,
    /// `resource.Quantity`: canonical string, `"0"` when zero.
    Quantity,
    /// `intstr.IntOrString`: `0` when zero.
    IntOrString,
    /// A value encoded as given (raw JSON, or a type this table does not describe).
    Raw,
    /// A struct with these fields, in Go order.
    Struct(&'static [Field]),
    /// A slice of the element type.
    Slice(&'static Ty),
    /// A map from string to the element type.
    Map(&'static Ty),
    /// A pointer to the element type.
    Ptr(&'static Ty),
}

/// One field of a Go struct.
#[derive(Clone, Copy, Debug)]
pub struct Field {
    /// The JSON name.
    pub name: &'static str,
    /// The Go type.
    pub ty: Ty,
    /// Whether the tag carries `omitempty`.
    pub omitempty: bool,
}

/// A field tagged `omitempty`.
const fn o(name: &'static str, ty: Ty) -> Field {
    Field { name, ty, omitempty: true }
}

/// A field without `omitempty`.
const fn r(name: &'static str, ty: Ty) -> Field {
    Field { name, ty, omitempty: false }
}

use Ty::{Bool, Int, IntOrString, Map, Ptr, Quantity, Raw, Slice, Str, Struct, Time};

const STRINGS: Ty = Slice(&Str);
const STRING_MAP: Ty = Map(&Str);
const RESOURCE_LIST: Ty = Map(&Quantity);

// ---- meta/v1 ----

const OWNER_REFERENCE: &[Field] = &[
    r("apiVersion", Str),
    r("kind", Str),
    r("name", Str),
    r("uid", Str),
    o("controller", Ptr(&Bool)),
    o("blockOwnerDeletion", Ptr(&Bool)),
];

const MANAGED_FIELDS_ENTRY: &[Field] = &[
    o("manager", Str),
    o("operation", Str),
    o("apiVersion", Str),
    o("time", Ptr(&Time)),
    o("fieldsType", Str),
    o("fieldsV1", Ptr(&Raw)),
    o("subresource", Str),
];

/// `metav1.ObjectMeta`.
pub const OBJECT_META: &[Field] = &[
    o("name", Str),
    o("generateName", Str),
    o("namespace", Str),
    o("selfLink", Str),
    o("uid", Str),
    o("resourceVersion", Str),
    o("generation", Int),
    o("creationTimestamp", Time),
    o("deletionTimestamp", Ptr(&Time)),
    o("deletionGracePeriodSeconds", Ptr(&Int)),
    o("labels", STRING_MAP),
    o("annotations", STRING_MAP),
    o("ownerReferences", Slice(&Struct(OWNER_REFERENCE))),
    o("finalizers", STRINGS),
    o("managedFields", Slice(&Struct(MANAGED_FIELDS_ENTRY))),
];

const LABEL_SELECTOR_REQUIREMENT: &[Field] =
    &[r("key", Str), r("operator", Str), o("values", STRINGS)];

/// `metav1.LabelSelector`.
pub const LABEL_SELECTOR: &[Field] = &[
    o("matchLabels", STRING_MAP),
    o("matchExpressions", Slice(&Struct(LABEL_SELECTOR_REQUIREMENT))),
];

// ---- small shared core/v1 types ----

/// `v1.LocalObjectReference`.
pub const LOCAL_OBJECT_REFERENCE: &[Field] = &[o("name", Str)];

const OBJECT_FIELD_SELECTOR: &[Field] = &[o("apiVersion", Str), r("fieldPath", Str)];

const RESOURCE_FIELD_SELECTOR: &[Field] =
    &[o("containerName", Str), r("resource", Str), o("divisor", Quantity)];

const KEY_SELECTOR: &[Field] = &[o("name", Str), r("key", Str), o("optional", Ptr(&Bool))];

const ENV_VAR_SOURCE: &[Field] = &[
    o("fieldRef", Ptr(&Struct(OBJECT_FIELD_SELECTOR))),
    o("resourceFieldRef", Ptr(&Struct(RESOURCE_FIELD_SELECTOR))),
    o("configMapKeyRef", Ptr(&Struct(KEY_SELECTOR))),
    o("secretKeyRef", Ptr(&Struct(KEY_SELECTOR))),
    o("fileKeyRef", Ptr(&Raw)),
];

/// `v1.EnvVar`.
pub const ENV_VAR: &[Field] =
    &[r("name", Str), o("value", Str), o("valueFrom", Ptr(&Struct(ENV_VAR_SOURCE)))];

const ENV_SOURCE_REF: &[Field] = &[o("name", Str), o("optional", Ptr(&Bool))];

const ENV_FROM_SOURCE: &[Field] = &[
    o("prefix", Str),
    o("configMapRef", Ptr(&Struct(ENV_SOURCE_REF))),
    o("secretRef", Ptr(&Struct(ENV_SOURCE_REF))),
];

const CONTAINER_PORT: &[Field] = &[
    o("name", Str),
    o("hostPort", Int),
    r("containerPort", Int),
    o("protocol", Str),
    o("hostIP", Str),
];

const RESOURCE_CLAIM: &[Field] = &[r("name", Str), o("request", Str)];

/// `v1.ResourceRequirements`.
pub const RESOURCE_REQUIREMENTS: &[Field] = &[
    o("limits", RESOURCE_LIST),
    o("requests", RESOURCE_LIST),
    o("claims", Slice(&Struct(RESOURCE_CLAIM))),
];

const CONTAINER_RESIZE_POLICY: &[Field] = &[r("resourceName", Str), r("restartPolicy", Str)];

const VOLUME_MOUNT: &[Field] = &[
    r("name", Str),
    o("readOnly", Bool),
    o("recursiveReadOnly", Ptr(&Str)),
    r("mountPath", Str),
    o("subPath", Str),
    o("mountPropagation", Ptr(&Str)),
    o("subPathExpr", Str),
];

const VOLUME_DEVICE: &[Field] = &[r("name", Str), r("devicePath", Str)];

const EXEC_ACTION: &[Field] = &[o("command", STRINGS)];

const HTTP_HEADER: &[Field] = &[r("name", Str), r("value", Str)];

const HTTP_GET_ACTION: &[Field] = &[
    o("path", Str),
    o("port", IntOrString),
    o("host", Str),
    o("scheme", Str),
    o("httpHeaders", Slice(&Struct(HTTP_HEADER))),
];

const TCP_SOCKET_ACTION: &[Field] = &[o("port", IntOrString), o("host", Str)];

const GRPC_ACTION: &[Field] = &[r("port", Int), r("service", Ptr(&Str))];

const PROBE: &[Field] = &[
    o("exec", Ptr(&Struct(EXEC_ACTION))),
    o("httpGet", Ptr(&Struct(HTTP_GET_ACTION))),
    o("tcpSocket", Ptr(&Struct(TCP_SOCKET_ACTION))),
    o("grpc", Ptr(&Struct(GRPC_ACTION))),
    o("initialDelaySeconds", Int),
    o("timeoutSeconds", Int),
    o("periodSeconds", Int),
    o("successThreshold", Int),
    o("failureThreshold", Int),
    o("terminationGracePeriodSeconds", Ptr(&Int)),
];

const SLEEP_ACTION: &[Field] = &[r("seconds", Int)];

const LIFECYCLE_HANDLER: &[Field] = &[
    o("exec", Ptr(&Struct(EXEC_ACTION))),
    o("httpGet", Ptr(&Struct(HTTP_GET_ACTION))),
    o("tcpSocket", Ptr(&Struct(TCP_SOCKET_ACTION))),
    o("sleep", Ptr(&Struct(SLEEP_ACTION))),
];

const LIFECYCLE: &[Field] = &[
    o("postStart", Ptr(&Struct(LIFECYCLE_HANDLER))),
    o("preStop", Ptr(&Struct(LIFECYCLE_HANDLER))),
    o("stopSignal", Ptr(&Str)),
];

const CAPABILITIES: &[Field] = &[o("add", STRINGS), o("drop", STRINGS)];

const SE_LINUX_OPTIONS: &[Field] =
    &[o("user", Str), o("role", Str), o("type", Str), o("level", Str)];

const WINDOWS_OPTIONS: &[Field] = &[
    o("gmsaCredentialSpecName", Ptr(&Str)),
    o("gmsaCredentialSpec", Ptr(&Str)),
    o("runAsUserName", Ptr(&Str)),
    o("hostProcess", Ptr(&Bool)),
];

const PROFILE: &[Field] = &[r("type", Str), o("localhostProfile", Ptr(&Str))];

const SECURITY_CONTEXT: &[Field] = &[
    o("capabilities", Ptr(&Struct(CAPABILITIES))),
    o("privileged", Ptr(&Bool)),
    o("seLinuxOptions", Ptr(&Struct(SE_LINUX_OPTIONS))),
    o("windowsOptions", Ptr(&Struct(WINDOWS_OPTIONS))),
    o("runAsUser", Ptr(&Int)),
    o("runAsGroup", Ptr(&Int)),
    o("runAsNonRoot", Ptr(&Bool)),
    o("readOnlyRootFilesystem", Ptr(&Bool)),
    o("allowPrivilegeEscalation", Ptr(&Bool)),
    o("procMount", Ptr(&Str)),
    o("seccompProfile", Ptr(&Struct(PROFILE))),
    o("appArmorProfile", Ptr(&Struct(PROFILE))),
];

/// `v1.Container`.
pub const CONTAINER: &[Field] = &[
    r("name", Str),
    o("image", Str),
    o("command", STRINGS),
    o("args", STRINGS),
    o("workingDir", Str),
    o("ports", Slice(&Struct(CONTAINER_PORT))),
    o("envFrom", Slice(&Struct(ENV_FROM_SOURCE))),
    o("env", Slice(&Struct(ENV_VAR))),
    o("resources", Struct(RESOURCE_REQUIREMENTS)),
    o("resizePolicy", Slice(&Struct(CONTAINER_RESIZE_POLICY))),
    o("restartPolicy", Ptr(&Str)),
    o("restartPolicyRules", Slice(&Raw)),
    o("volumeMounts", Slice(&Struct(VOLUME_MOUNT))),
    o("volumeDevices", Slice(&Struct(VOLUME_DEVICE))),
    o("livenessProbe", Ptr(&Struct(PROBE))),
    o("readinessProbe", Ptr(&Struct(PROBE))),
    o("startupProbe", Ptr(&Struct(PROBE))),
    o("lifecycle", Ptr(&Struct(LIFECYCLE))),
    o("terminationMessagePath", Str),
    o("terminationMessagePolicy", Str),
    o("imagePullPolicy", Str),
    o("securityContext", Ptr(&Struct(SECURITY_CONTEXT))),
    o("stdin", Bool),
    o("stdinOnce", Bool),
    o("tty", Bool),
];

const EPHEMERAL_CONTAINER: &[Field] = &[
    r("name", Str),
    o("image", Str),
    o("command", STRINGS),
    o("args", STRINGS),
    o("workingDir", Str),
    o("ports", Slice(&Struct(CONTAINER_PORT))),
    o("envFrom", Slice(&Struct(ENV_FROM_SOURCE))),
    o("env", Slice(&Struct(ENV_VAR))),
    o("resources", Struct(RESOURCE_REQUIREMENTS)),
    o("resizePolicy", Slice(&Struct(CONTAINER_RESIZE_POLICY))),
    o("restartPolicy", Ptr(&Str)),
    o("restartPolicyRules", Slice(&Raw)),
    o("volumeMounts", Slice(&Struct(VOLUME_MOUNT))),
    o("volumeDevices", Slice(&Struct(VOLUME_DEVICE))),
    o("livenessProbe", Ptr(&Struct(PROBE))),
    o("readinessProbe", Ptr(&Struct(PROBE))),
    o("startupProbe", Ptr(&Struct(PROBE))),
    o("lifecycle", Ptr(&Struct(LIFECYCLE))),
    o("terminationMessagePath", Str),
    o("terminationMessagePolicy", Str),
    o("imagePullPolicy", Str),
    o("securityContext", Ptr(&Struct(SECURITY_CONTEXT))),
    o("stdin", Bool),
    o("stdinOnce", Bool),
    o("tty", Bool),
    o("targetContainerName", Str),
];

// ---- volumes ----

const KEY_TO_PATH: &[Field] = &[r("key", Str), r("path", Str), o("mode", Ptr(&Int))];

const HOST_PATH: &[Field] = &[r("path", Str), o("type", Ptr(&Str))];

const EMPTY_DIR: &[Field] = &[o("medium", Str), o("sizeLimit", Ptr(&Quantity))];

const GCE_PD: &[Field] =
    &[r("pdName", Str), o("fsType", Str), o("partition", Int), o("readOnly", Bool)];

const AWS_EBS: &[Field] =
    &[r("volumeID", Str), o("fsType", Str), o("partition", Int), o("readOnly", Bool)];

const GIT_REPO: &[Field] = &[r("repository", Str), o("revision", Str), o("directory", Str)];

const SECRET_VOLUME: &[Field] = &[
    o("secretName", Str),
    o("items", Slice(&Struct(KEY_TO_PATH))),
    o("defaultMode", Ptr(&Int)),
    o("optional", Ptr(&Bool)),
];

const NFS: &[Field] = &[r("server", Str), r("path", Str), o("readOnly", Bool)];

const ISCSI: &[Field] = &[
    r("targetPortal", Str),
    r("iqn", Str),
    r("lun", Int),
    o("iscsiInterface", Str),
    o("fsType", Str),
    o("readOnly", Bool),
    o("portals", STRINGS),
    o("chapAuthDiscovery", Bool),
    o("chapAuthSession", Bool),
    o("secretRef", Ptr(&Struct(LOCAL_OBJECT_REFERENCE))),
    o("initiatorName", Ptr(&Str)),
];

const GLUSTERFS: &[Field] = &[r("endpoints", Str), r("path", Str), o("readOnly", Bool)];

const PVC_SOURCE: &[Field] = &[r("claimName", Str), o("readOnly", Bool)];

const RBD: &[Field] = &[
    r("monitors", STRINGS),
    r("image", Str),
    o("fsType", Str),
    o("pool", Str),
    o("user", Str),
    o("keyring", Str),
    o("secretRef", Ptr(&Struct(LOCAL_OBJECT_REFERENCE))),
    o("readOnly", Bool),
];

const FLEX: &[Field] = &[
    r("driver", Str),
    o("fsType", Str),
    o("secretRef", Ptr(&Struct(LOCAL_OBJECT_REFERENCE))),
    o("readOnly", Bool),
    o("options", STRING_MAP),
];

const CINDER: &[Field] = &[
    r("volumeID", Str),
    o("fsType", Str),
    o("readOnly", Bool),
    o("secretRef", Ptr(&Struct(LOCAL_OBJECT_REFERENCE))),
];

const CEPHFS: &[Field] = &[
    r("monitors", STRINGS),
    o("path", Str),
    o("user", Str),
    o("secretFile", Str),
    o("secretRef", Ptr(&Struct(LOCAL_OBJECT_REFERENCE))),
    o("readOnly", Bool),
];

const FLOCKER: &[Field] = &[o("datasetName", Str), o("datasetUUID", Str)];

const DOWNWARD_API_FILE: &[Field] = &[
    r("path", Str),
    o("fieldRef", Ptr(&Struct(OBJECT_FIELD_SELECTOR))),
    o("resourceFieldRef", Ptr(&Struct(RESOURCE_FIELD_SELECTOR))),
    o("mode", Ptr(&Int)),
];

const DOWNWARD_API_VOLUME: &[Field] =
    &[o("items", Slice(&Struct(DOWNWARD_API_FILE))), o("defaultMode", Ptr(&Int))];

const FC: &[Field] = &[
    o("targetWWNs", STRINGS),
    o("lun", Ptr(&Int)),
    o("fsType", Str),
    o("readOnly", Bool),
    o("wwids", STRINGS),
];

const AZURE_FILE: &[Field] = &[r("secretName", Str), r("shareName", Str), o("readOnly", Bool)];

const CONFIG_MAP_VOLUME: &[Field] = &[
    o("name", Str),
    o("items", Slice(&Struct(KEY_TO_PATH))),
    o("defaultMode", Ptr(&Int)),
    o("optional", Ptr(&Bool)),
];

const VSPHERE: &[Field] = &[
    r("volumePath", Str),
    o("fsType", Str),
    o("storagePolicyName", Str),
    o("storagePolicyID", Str),
];

const QUOBYTE: &[Field] = &[
    r("registry", Str),
    r("volume", Str),
    o("readOnly", Bool),
    o("user", Str),
    o("group", Str),
    o("tenant", Str),
];

const AZURE_DISK: &[Field] = &[
    r("diskName", Str),
    r("diskURI", Str),
    o("cachingMode", Ptr(&Str)),
    o("fsType", Ptr(&Str)),
    o("readOnly", Ptr(&Bool)),
    o("kind", Ptr(&Str)),
];

const PHOTON: &[Field] = &[r("pdID", Str), o("fsType", Str)];

const SECRET_PROJECTION: &[Field] =
    &[o("name", Str), o("items", Slice(&Struct(KEY_TO_PATH))), o("optional", Ptr(&Bool))];

const DOWNWARD_API_PROJECTION: &[Field] = &[o("items", Slice(&Struct(DOWNWARD_API_FILE)))];

const SERVICE_ACCOUNT_TOKEN_PROJECTION: &[Field] =
    &[o("audience", Str), o("expirationSeconds", Ptr(&Int)), r("path", Str)];

const CLUSTER_TRUST_BUNDLE_PROJECTION: &[Field] = &[
    o("name", Ptr(&Str)),
    o("signerName", Ptr(&Str)),
    o("labelSelector", Ptr(&Struct(LABEL_SELECTOR))),
    o("optional", Ptr(&Bool)),
    r("path", Str),
];

const VOLUME_PROJECTION: &[Field] = &[
    o("secret", Ptr(&Struct(SECRET_PROJECTION))),
    o("downwardAPI", Ptr(&Struct(DOWNWARD_API_PROJECTION))),
    o("configMap", Ptr(&Struct(SECRET_PROJECTION))),
    o("serviceAccountToken", Ptr(&Struct(SERVICE_ACCOUNT_TOKEN_PROJECTION))),
    o("clusterTrustBundle", Ptr(&Struct(CLUSTER_TRUST_BUNDLE_PROJECTION))),
    o("podCertificate", Ptr(&Raw)),
];

const PROJECTED: &[Field] =
    &[r("sources", Slice(&Struct(VOLUME_PROJECTION))), o("defaultMode", Ptr(&Int))];

const PORTWORX: &[Field] = &[r("volumeID", Str), o("fsType", Str), o("readOnly", Bool)];

const SCALE_IO: &[Field] = &[
    r("gateway", Str),
    r("system", Str),
    r("secretRef", Ptr(&Struct(LOCAL_OBJECT_REFERENCE))),
    o("sslEnabled", Bool),
    o("protectionDomain", Str),
    o("storagePool", Str),
    o("storageMode", Str),
    o("volumeName", Str),
    o("fsType", Str),
    o("readOnly", Bool),
];

const STORAGE_OS: &[Field] = &[
    o("volumeName", Str),
    o("volumeNamespace", Str),
    o("fsType", Str),
    o("readOnly", Bool),
    o("secretRef", Ptr(&Struct(LOCAL_OBJECT_REFERENCE))),
];

const CSI: &[Field] = &[
    r("driver", Str),
    o("readOnly", Ptr(&Bool)),
    o("fsType", Ptr(&Str)),
    o("volumeAttributes", STRING_MAP),
    o("nodePublishSecretRef", Ptr(&Struct(LOCAL_OBJECT_REFERENCE))),
];

const TYPED_LOCAL_OBJECT_REFERENCE: &[Field] =
    &[r("apiGroup", Ptr(&Str)), r("kind", Str), r("name", Str)];

const TYPED_OBJECT_REFERENCE: &[Field] =
    &[r("apiGroup", Ptr(&Str)), r("kind", Str), r("name", Str), o("namespace", Ptr(&Str))];

const VOLUME_RESOURCE_REQUIREMENTS: &[Field] =
    &[o("limits", RESOURCE_LIST), o("requests", RESOURCE_LIST)];

/// `v1.PersistentVolumeClaimSpec`.
pub const PVC_SPEC: &[Field] = &[
    o("accessModes", STRINGS),
    o("selector", Ptr(&Struct(LABEL_SELECTOR))),
    o("resources", Struct(VOLUME_RESOURCE_REQUIREMENTS)),
    o("volumeName", Str),
    o("storageClassName", Ptr(&Str)),
    o("volumeMode", Ptr(&Str)),
    o("dataSource", Ptr(&Struct(TYPED_LOCAL_OBJECT_REFERENCE))),
    o("dataSourceRef", Ptr(&Struct(TYPED_OBJECT_REFERENCE))),
    o("volumeAttributesClassName", Ptr(&Str)),
];

const PVC_STATUS: &[Field] = &[
    o("phase", Str),
    o("accessModes", STRINGS),
    o("capacity", RESOURCE_LIST),
    o("conditions", Slice(&Raw)),
    o("allocatedResources", RESOURCE_LIST),
    o("allocatedResourceStatuses", STRING_MAP),
    o("currentVolumeAttributesClassName", Ptr(&Str)),
    o("modifyVolumeStatus", Ptr(&Raw)),
];

/// `v1.PersistentVolumeClaim`.
pub const PVC: &[Field] = &[
    o("kind", Str),
    o("apiVersion", Str),
    o("metadata", Struct(OBJECT_META)),
    o("spec", Struct(PVC_SPEC)),
    o("status", Struct(PVC_STATUS)),
];

const PVC_TEMPLATE: &[Field] = &[o("metadata", Struct(OBJECT_META)), r("spec", Struct(PVC_SPEC))];

const EPHEMERAL: &[Field] = &[o("volumeClaimTemplate", Ptr(&Struct(PVC_TEMPLATE)))];

const IMAGE_VOLUME: &[Field] = &[o("reference", Str), o("pullPolicy", Str)];

/// `v1.Volume`.
pub const VOLUME: &[Field] = &[
    r("name", Str),
    o("hostPath", Ptr(&Struct(HOST_PATH))),
    o("emptyDir", Ptr(&Struct(EMPTY_DIR))),
    o("gcePersistentDisk", Ptr(&Struct(GCE_PD))),
    o("awsElasticBlockStore", Ptr(&Struct(AWS_EBS))),
    o("gitRepo", Ptr(&Struct(GIT_REPO))),
    o("secret", Ptr(&Struct(SECRET_VOLUME))),
    o("nfs", Ptr(&Struct(NFS))),
    o("iscsi", Ptr(&Struct(ISCSI))),
    o("glusterfs", Ptr(&Struct(GLUSTERFS))),
    o("persistentVolumeClaim", Ptr(&Struct(PVC_SOURCE))),
    o("rbd", Ptr(&Struct(RBD))),
    o("flexVolume", Ptr(&Struct(FLEX))),
    o("cinder", Ptr(&Struct(CINDER))),
    o("cephfs", Ptr(&Struct(CEPHFS))),
    o("flocker", Ptr(&Struct(FLOCKER))),
    o("downwardAPI", Ptr(&Struct(DOWNWARD_API_VOLUME))),
    o("fc", Ptr(&Struct(FC))),
    o("azureFile", Ptr(&Struct(AZURE_FILE))),
    o("configMap", Ptr(&Struct(CONFIG_MAP_VOLUME))),
    o("vsphereVolume", Ptr(&Struct(VSPHERE))),
    o("quobyte", Ptr(&Struct(QUOBYTE))),
    o("azureDisk", Ptr(&Struct(AZURE_DISK))),
    o("photonPersistentDisk", Ptr(&Struct(PHOTON))),
    o("projected", Ptr(&Struct(PROJECTED))),
    o("portworxVolume", Ptr(&Struct(PORTWORX))),
    o("scaleIO", Ptr(&Struct(SCALE_IO))),
    o("storageos", Ptr(&Struct(STORAGE_OS))),
    o("csi", Ptr(&Struct(CSI))),
    o("ephemeral", Ptr(&Struct(EPHEMERAL))),
    o("image", Ptr(&Struct(IMAGE_VOLUME))),
];

// ---- scheduling ----

const NODE_SELECTOR_REQUIREMENT: &[Field] =
    &[r("key", Str), r("operator", Str), o("values", STRINGS)];

const NODE_SELECTOR_TERM: &[Field] = &[
    o("matchExpressions", Slice(&Struct(NODE_SELECTOR_REQUIREMENT))),
    o("matchFields", Slice(&Struct(NODE_SELECTOR_REQUIREMENT))),
];

const NODE_SELECTOR: &[Field] = &[r("nodeSelectorTerms", Slice(&Struct(NODE_SELECTOR_TERM)))];

const PREFERRED_SCHEDULING_TERM: &[Field] =
    &[r("weight", Int), r("preference", Struct(NODE_SELECTOR_TERM))];

const NODE_AFFINITY: &[Field] = &[
    o("requiredDuringSchedulingIgnoredDuringExecution", Ptr(&Struct(NODE_SELECTOR))),
    o("preferredDuringSchedulingIgnoredDuringExecution", Slice(&Struct(PREFERRED_SCHEDULING_TERM))),
];

const POD_AFFINITY_TERM: &[Field] = &[
    o("labelSelector", Ptr(&Struct(LABEL_SELECTOR))),
    o("namespaces", STRINGS),
    r("topologyKey", Str),
    o("namespaceSelector", Ptr(&Struct(LABEL_SELECTOR))),
    o("matchLabelKeys", STRINGS),
    o("mismatchLabelKeys", STRINGS),
];

const WEIGHTED_POD_AFFINITY_TERM: &[Field] =
    &[r("weight", Int), r("podAffinityTerm", Struct(POD_AFFINITY_TERM))];

const POD_AFFINITY: &[Field] = &[
    o("requiredDuringSchedulingIgnoredDuringExecution", Slice(&Struct(POD_AFFINITY_TERM))),
    o(
        "preferredDuringSchedulingIgnoredDuringExecution",
        Slice(&Struct(WEIGHTED_POD_AFFINITY_TERM)),
    ),
];

const AFFINITY: &[Field] = &[
    o("nodeAffinity", Ptr(&Struct(NODE_AFFINITY))),
    o("podAffinity", Ptr(&Struct(POD_AFFINITY))),
    o("podAntiAffinity", Ptr(&Struct(POD_AFFINITY))),
];

const TOLERATION: &[Field] = &[
    o("key", Str),
    o("operator", Str),
    o("value", Str),
    o("effect", Str),
    o("tolerationSeconds", Ptr(&Int)),
];

const HOST_ALIAS: &[Field] = &[r("ip", Str), o("hostnames", STRINGS)];

const DNS_CONFIG_OPTION: &[Field] = &[o("name", Str), o("value", Ptr(&Str))];

const DNS_CONFIG: &[Field] = &[
    o("nameservers", STRINGS),
    o("searches", STRINGS),
    o("options", Slice(&Struct(DNS_CONFIG_OPTION))),
];

const READINESS_GATE: &[Field] = &[r("conditionType", Str)];

const TOPOLOGY_SPREAD_CONSTRAINT: &[Field] = &[
    r("maxSkew", Int),
    r("topologyKey", Str),
    r("whenUnsatisfiable", Str),
    o("labelSelector", Ptr(&Struct(LABEL_SELECTOR))),
    o("minDomains", Ptr(&Int)),
    o("nodeAffinityPolicy", Ptr(&Str)),
    o("nodeTaintsPolicy", Ptr(&Str)),
    o("matchLabelKeys", STRINGS),
];

const SYSCTL: &[Field] = &[r("name", Str), r("value", Str)];

const POD_SECURITY_CONTEXT: &[Field] = &[
    o("seLinuxOptions", Ptr(&Struct(SE_LINUX_OPTIONS))),
    o("windowsOptions", Ptr(&Struct(WINDOWS_OPTIONS))),
    o("runAsUser", Ptr(&Int)),
    o("runAsGroup", Ptr(&Int)),
    o("runAsNonRoot", Ptr(&Bool)),
    o("supplementalGroups", Slice(&Int)),
    o("supplementalGroupsPolicy", Ptr(&Str)),
    o("fsGroup", Ptr(&Int)),
    o("fsGroupChangePolicy", Ptr(&Str)),
    o("sysctls", Slice(&Struct(SYSCTL))),
    o("seccompProfile", Ptr(&Struct(PROFILE))),
    o("appArmorProfile", Ptr(&Struct(PROFILE))),
    o("seLinuxChangePolicy", Ptr(&Str)),
];

const POD_OS: &[Field] = &[r("name", Str)];

const SCHEDULING_GATE: &[Field] = &[r("name", Str)];

const POD_RESOURCE_CLAIM: &[Field] =
    &[r("name", Str), o("resourceClaimName", Ptr(&Str)), o("resourceClaimTemplateName", Ptr(&Str))];

/// `v1.PodSpec`.
pub const POD_SPEC: &[Field] = &[
    o("volumes", Slice(&Struct(VOLUME))),
    o("initContainers", Slice(&Struct(CONTAINER))),
    r("containers", Slice(&Struct(CONTAINER))),
    o("ephemeralContainers", Slice(&Struct(EPHEMERAL_CONTAINER))),
    o("restartPolicy", Str),
    o("terminationGracePeriodSeconds", Ptr(&Int)),
    o("activeDeadlineSeconds", Ptr(&Int)),
    o("dnsPolicy", Str),
    o("nodeSelector", STRING_MAP),
    o("serviceAccountName", Str),
    o("serviceAccount", Str),
    o("automountServiceAccountToken", Ptr(&Bool)),
    o("nodeName", Str),
    o("hostNetwork", Bool),
    o("hostPID", Bool),
    o("hostIPC", Bool),
    o("shareProcessNamespace", Ptr(&Bool)),
    o("securityContext", Ptr(&Struct(POD_SECURITY_CONTEXT))),
    o("imagePullSecrets", Slice(&Struct(LOCAL_OBJECT_REFERENCE))),
    o("hostname", Str),
    o("subdomain", Str),
    o("affinity", Ptr(&Struct(AFFINITY))),
    o("schedulerName", Str),
    o("tolerations", Slice(&Struct(TOLERATION))),
    o("hostAliases", Slice(&Struct(HOST_ALIAS))),
    o("priorityClassName", Str),
    o("priority", Ptr(&Int)),
    o("dnsConfig", Ptr(&Struct(DNS_CONFIG))),
    o("readinessGates", Slice(&Struct(READINESS_GATE))),
    o("runtimeClassName", Ptr(&Str)),
    o("enableServiceLinks", Ptr(&Bool)),
    o("preemptionPolicy", Ptr(&Str)),
    o("overhead", RESOURCE_LIST),
    o("topologySpreadConstraints", Slice(&Struct(TOPOLOGY_SPREAD_CONSTRAINT))),
    o("setHostnameAsFQDN", Ptr(&Bool)),
    o("os", Ptr(&Struct(POD_OS))),
    o("hostUsers", Ptr(&Bool)),
    o("schedulingGates", Slice(&Struct(SCHEDULING_GATE))),
    o("resourceClaims", Slice(&Struct(POD_RESOURCE_CLAIM))),
    o("resources", Ptr(&Struct(RESOURCE_REQUIREMENTS))),
    o("hostnameOverride", Ptr(&Str)),
];

/// `v1.PodTemplateSpec`.
pub const POD_TEMPLATE_SPEC: &[Field] =
    &[o("metadata", Struct(OBJECT_META)), o("spec", Struct(POD_SPEC))];

// ---- apps.kruise.io/v1beta1 SidecarSet ----

const SHARE_VOLUME_POLICY: &[Field] = &[o("type", Str)];

const SIDECAR_CONTAINER_UPGRADE_STRATEGY: &[Field] =
    &[o("upgradeType", Str), o("hotUpgradeEmptyImage", Str)];

const SOURCE_CONTAINER_NAME_SOURCE: &[Field] =
    &[o("fieldRef", Ptr(&Struct(OBJECT_FIELD_SELECTOR)))];

const TRANSFER_ENV_VAR: &[Field] = &[
    o("sourceContainerName", Str),
    o("sourceContainerNameFrom", Ptr(&Struct(SOURCE_CONTAINER_NAME_SOURCE))),
    o("envName", Str),
    o("envNames", STRINGS),
];

/// `ResourceExprLimits` and `ResourceExprRequests` (the same fields).
const RESOURCE_EXPR_VALUES: &[Field] = &[o("cpu", Str), o("memory", Str)];

const RESOURCES_EXPR: &[Field] = &[
    o("limits", Ptr(&Struct(RESOURCE_EXPR_VALUES))),
    o("requests", Ptr(&Struct(RESOURCE_EXPR_VALUES))),
];

const RESOURCES_POLICY: &[Field] = &[
    r("targetContainersMode", Str),
    o("targetContainersNameRegex", Str),
    r("resourcesExpr", Struct(RESOURCES_EXPR)),
];

/// The fields `SidecarContainer` adds to the `v1.Container` it embeds.
const SIDECAR_CONTAINER_OWN: &[Field] = &[
    o("podInjectPolicy", Str),
    o("upgradeStrategy", Struct(SIDECAR_CONTAINER_UPGRADE_STRATEGY)),
    o("shareVolumePolicy", Struct(SHARE_VOLUME_POLICY)),
    o("shareVolumeDevicePolicy", Ptr(&Struct(SHARE_VOLUME_POLICY))),
    o("transferEnv", Slice(&Struct(TRANSFER_ENV_VAR))),
    o("resourcesPolicy", Ptr(&Struct(RESOURCES_POLICY))),
];

/// `a` followed by `b`, as an array of length `N` (which must be `a.len() + b.len()`).
const fn concat_fields<const N: usize>(a: &[Field], b: &[Field]) -> [Field; N] {
    let mut out = [Field { name: "", ty: Str, omitempty: true }; N];
    let mut i = 0;
    while i < a.len() {
        out[i] = a[i];
        i += 1;
    }
    let mut j = 0;
    while j < b.len() {
        out[i + j] = b[j];
        j += 1;
    }
    out
}

const SIDECAR_CONTAINER_FIELDS: [Field; CONTAINER.len() + SIDECAR_CONTAINER_OWN.len()] =
    concat_fields(CONTAINER, SIDECAR_CONTAINER_OWN);

/// `v1beta1.SidecarContainer`: the embedded `v1.Container`'s fields inline, then its own.
pub const SIDECAR_CONTAINER: &[Field] = &SIDECAR_CONTAINER_FIELDS;

/// `v1beta1.SidecarSetPatchPodMetadata`.
pub const SIDECAR_SET_PATCH_POD_METADATA: &[Field] =
    &[o("annotations", STRING_MAP), o("patchPolicy", Str)];
