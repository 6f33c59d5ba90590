//! The internal `core` types reachable from a pod spec, for [`super::dump_spec`]: each type's
//! fields in declaration order, with the `core/v1` JSON name each is read from (generated from
//! the `core/v1` type definitions of Kubernetes 1.36, with the internal type's differences).

use super::{Base, Field, Shape, f};

pub(crate) static POD_SPEC: [Field; 36] = [
    f("Volumes", "volumes", Shape::Slice, Base::Struct(&VOLUME)),
    f("InitContainers", "initContainers", Shape::Slice, Base::Struct(&CONTAINER)),
    f("Containers", "containers", Shape::Slice, Base::Struct(&CONTAINER)),
    f(
        "EphemeralContainers",
        "ephemeralContainers",
        Shape::Slice,
        Base::Struct(&EPHEMERAL_CONTAINER),
    ),
    f("RestartPolicy", "restartPolicy", Shape::Value, Base::Str),
    f("TerminationGracePeriodSeconds", "terminationGracePeriodSeconds", Shape::Ptr, Base::Int),
    f("ActiveDeadlineSeconds", "activeDeadlineSeconds", Shape::Ptr, Base::Int),
    f("DNSPolicy", "dnsPolicy", Shape::Value, Base::Str),
    f("NodeSelector", "nodeSelector", Shape::Value, Base::StrMap),
    f("ServiceAccountName", "serviceAccountName", Shape::Value, Base::Str),
    f("AutomountServiceAccountToken", "automountServiceAccountToken", Shape::Ptr, Base::Bool),
    f("NodeName", "nodeName", Shape::Value, Base::Str),
    f("SecurityContext", "securityContext", Shape::Ptr, Base::Struct(&POD_SECURITY_CONTEXT)),
    f("ImagePullSecrets", "imagePullSecrets", Shape::Slice, Base::Struct(&LOCAL_OBJECT_REFERENCE)),
    f("Hostname", "hostname", Shape::Value, Base::Str),
    f("Subdomain", "subdomain", Shape::Value, Base::Str),
    f("SetHostnameAsFQDN", "setHostnameAsFQDN", Shape::Ptr, Base::Bool),
    f("Affinity", "affinity", Shape::Ptr, Base::Struct(&AFFINITY)),
    f("SchedulerName", "schedulerName", Shape::Value, Base::Str),
    f("Tolerations", "tolerations", Shape::Slice, Base::Struct(&TOLERATION)),
    f("HostAliases", "hostAliases", Shape::Slice, Base::Struct(&HOST_ALIAS)),
    f("PriorityClassName", "priorityClassName", Shape::Value, Base::Str),
    f("Priority", "priority", Shape::Ptr, Base::Int),
    f("PreemptionPolicy", "preemptionPolicy", Shape::Ptr, Base::Str),
    f("DNSConfig", "dnsConfig", Shape::Ptr, Base::Struct(&PODDNS_CONFIG)),
    f("ReadinessGates", "readinessGates", Shape::Slice, Base::Struct(&POD_READINESS_GATE)),
    f("RuntimeClassName", "runtimeClassName", Shape::Ptr, Base::Str),
    f("Overhead", "overhead", Shape::Value, Base::QuantityMap),
    f("EnableServiceLinks", "enableServiceLinks", Shape::Ptr, Base::Bool),
    f(
        "TopologySpreadConstraints",
        "topologySpreadConstraints",
        Shape::Slice,
        Base::Struct(&TOPOLOGY_SPREAD_CONSTRAINT),
    ),
    f("OS", "os", Shape::Ptr, Base::Struct(&PODOS)),
    f("SchedulingGates", "schedulingGates", Shape::Slice, Base::Struct(&POD_SCHEDULING_GATE)),
    f("ResourceClaims", "resourceClaims", Shape::Slice, Base::Struct(&POD_RESOURCE_CLAIM)),
    f("Resources", "resources", Shape::Ptr, Base::Struct(&RESOURCE_REQUIREMENTS)),
    f("HostnameOverride", "hostnameOverride", Shape::Ptr, Base::Str),
    f("SchedulingGroup", "schedulingGroup", Shape::Ptr, Base::Struct(&POD_SCHEDULING_GROUP)),
];
static VOLUME: [Field; 2] = [
    f("Name", "name", Shape::Value, Base::Str),
    f("VolumeSource", "", Shape::Inline, Base::Struct(&VOLUME_SOURCE)),
];
static VOLUME_SOURCE: [Field; 30] = [
    f("HostPath", "hostPath", Shape::Ptr, Base::Struct(&HOST_PATH_VOLUME_SOURCE)),
    f("EmptyDir", "emptyDir", Shape::Ptr, Base::Struct(&EMPTY_DIR_VOLUME_SOURCE)),
    f(
        "GCEPersistentDisk",
        "gcePersistentDisk",
        Shape::Ptr,
        Base::Struct(&GCE_PERSISTENT_DISK_VOLUME_SOURCE),
    ),
    f(
        "AWSElasticBlockStore",
        "awsElasticBlockStore",
        Shape::Ptr,
        Base::Struct(&AWS_ELASTIC_BLOCK_STORE_VOLUME_SOURCE),
    ),
    f("GitRepo", "gitRepo", Shape::Ptr, Base::Struct(&GIT_REPO_VOLUME_SOURCE)),
    f("Secret", "secret", Shape::Ptr, Base::Struct(&SECRET_VOLUME_SOURCE)),
    f("NFS", "nfs", Shape::Ptr, Base::Struct(&NFS_VOLUME_SOURCE)),
    f("ISCSI", "iscsi", Shape::Ptr, Base::Struct(&ISCSI_VOLUME_SOURCE)),
    f("Glusterfs", "glusterfs", Shape::Ptr, Base::Struct(&GLUSTERFS_VOLUME_SOURCE)),
    f(
        "PersistentVolumeClaim",
        "persistentVolumeClaim",
        Shape::Ptr,
        Base::Struct(&PERSISTENT_VOLUME_CLAIM_VOLUME_SOURCE),
    ),
    f("RBD", "rbd", Shape::Ptr, Base::Struct(&RBD_VOLUME_SOURCE)),
    f("Quobyte", "quobyte", Shape::Ptr, Base::Struct(&QUOBYTE_VOLUME_SOURCE)),
    f("FlexVolume", "flexVolume", Shape::Ptr, Base::Struct(&FLEX_VOLUME_SOURCE)),
    f("Cinder", "cinder", Shape::Ptr, Base::Struct(&CINDER_VOLUME_SOURCE)),
    f("CephFS", "cephfs", Shape::Ptr, Base::Struct(&CEPHFS_VOLUME_SOURCE)),
    f("Flocker", "flocker", Shape::Ptr, Base::Struct(&FLOCKER_VOLUME_SOURCE)),
    f("DownwardAPI", "downwardAPI", Shape::Ptr, Base::Struct(&DOWNWARDAPI_VOLUME_SOURCE)),
    f("FC", "fc", Shape::Ptr, Base::Struct(&FC_VOLUME_SOURCE)),
    f("AzureFile", "azureFile", Shape::Ptr, Base::Struct(&AZURE_FILE_VOLUME_SOURCE)),
    f("ConfigMap", "configMap", Shape::Ptr, Base::Struct(&CONFIG_MAP_VOLUME_SOURCE)),
    f(
        "VsphereVolume",
        "vsphereVolume",
        Shape::Ptr,
        Base::Struct(&VSPHERE_VIRTUAL_DISK_VOLUME_SOURCE),
    ),
    f("AzureDisk", "azureDisk", Shape::Ptr, Base::Struct(&AZURE_DISK_VOLUME_SOURCE)),
    f(
        "PhotonPersistentDisk",
        "photonPersistentDisk",
        Shape::Ptr,
        Base::Struct(&PHOTON_PERSISTENT_DISK_VOLUME_SOURCE),
    ),
    f("Projected", "projected", Shape::Ptr, Base::Struct(&PROJECTED_VOLUME_SOURCE)),
    f("PortworxVolume", "portworxVolume", Shape::Ptr, Base::Struct(&PORTWORX_VOLUME_SOURCE)),
    f("ScaleIO", "scaleIO", Shape::Ptr, Base::Struct(&SCALEIO_VOLUME_SOURCE)),
    f("StorageOS", "storageos", Shape::Ptr, Base::Struct(&STORAGEOS_VOLUME_SOURCE)),
    f("CSI", "csi", Shape::Ptr, Base::Struct(&CSI_VOLUME_SOURCE)),
    f("Ephemeral", "ephemeral", Shape::Ptr, Base::Struct(&EPHEMERAL_VOLUME_SOURCE)),
    f("Image", "image", Shape::Ptr, Base::Struct(&IMAGE_VOLUME_SOURCE)),
];
static HOST_PATH_VOLUME_SOURCE: [Field; 2] =
    [f("Path", "path", Shape::Value, Base::Str), f("Type", "type", Shape::Ptr, Base::Str)];
static EMPTY_DIR_VOLUME_SOURCE: [Field; 2] = [
    f("Medium", "medium", Shape::Value, Base::Str),
    f("SizeLimit", "sizeLimit", Shape::Ptr, Base::Quantity),
];
static GCE_PERSISTENT_DISK_VOLUME_SOURCE: [Field; 4] = [
    f("PDName", "pdName", Shape::Value, Base::Str),
    f("FSType", "fsType", Shape::Value, Base::Str),
    f("Partition", "partition", Shape::Value, Base::Int),
    f("ReadOnly", "readOnly", Shape::Value, Base::Bool),
];
static AWS_ELASTIC_BLOCK_STORE_VOLUME_SOURCE: [Field; 4] = [
    f("VolumeID", "volumeID", Shape::Value, Base::Str),
    f("FSType", "fsType", Shape::Value, Base::Str),
    f("Partition", "partition", Shape::Value, Base::Int),
    f("ReadOnly", "readOnly", Shape::Value, Base::Bool),
];
static GIT_REPO_VOLUME_SOURCE: [Field; 3] = [
    f("Repository", "repository", Shape::Value, Base::Str),
    f("Revision", "revision", Shape::Value, Base::Str),
    f("Directory", "directory", Shape::Value, Base::Str),
];
static SECRET_VOLUME_SOURCE: [Field; 4] = [
    f("SecretName", "secretName", Shape::Value, Base::Str),
    f("Items", "items", Shape::Slice, Base::Struct(&KEY_TO_PATH)),
    f("DefaultMode", "defaultMode", Shape::Ptr, Base::Int),
    f("Optional", "optional", Shape::Ptr, Base::Bool),
];
static KEY_TO_PATH: [Field; 3] = [
    f("Key", "key", Shape::Value, Base::Str),
    f("Path", "path", Shape::Value, Base::Str),
    f("Mode", "mode", Shape::Ptr, Base::Int),
];
static NFS_VOLUME_SOURCE: [Field; 3] = [
    f("Server", "server", Shape::Value, Base::Str),
    f("Path", "path", Shape::Value, Base::Str),
    f("ReadOnly", "readOnly", Shape::Value, Base::Bool),
];
static ISCSI_VOLUME_SOURCE: [Field; 11] = [
    f("TargetPortal", "targetPortal", Shape::Value, Base::Str),
    f("IQN", "iqn", Shape::Value, Base::Str),
    f("Lun", "lun", Shape::Value, Base::Int),
    f("ISCSIInterface", "iscsiInterface", Shape::Value, Base::Str),
    f("FSType", "fsType", Shape::Value, Base::Str),
    f("ReadOnly", "readOnly", Shape::Value, Base::Bool),
    f("Portals", "portals", Shape::Slice, Base::Str),
    f("DiscoveryCHAPAuth", "chapAuthDiscovery", Shape::Value, Base::Bool),
    f("SessionCHAPAuth", "chapAuthSession", Shape::Value, Base::Bool),
    f("SecretRef", "secretRef", Shape::Ptr, Base::Struct(&LOCAL_OBJECT_REFERENCE)),
    f("InitiatorName", "initiatorName", Shape::Ptr, Base::Str),
];
static LOCAL_OBJECT_REFERENCE: [Field; 1] = [f("Name", "name", Shape::Value, Base::Str)];
static GLUSTERFS_VOLUME_SOURCE: [Field; 3] = [
    f("EndpointsName", "endpoints", Shape::Value, Base::Str),
    f("Path", "path", Shape::Value, Base::Str),
    f("ReadOnly", "readOnly", Shape::Value, Base::Bool),
];
static PERSISTENT_VOLUME_CLAIM_VOLUME_SOURCE: [Field; 2] = [
    f("ClaimName", "claimName", Shape::Value, Base::Str),
    f("ReadOnly", "readOnly", Shape::Value, Base::Bool),
];
static RBD_VOLUME_SOURCE: [Field; 8] = [
    f("CephMonitors", "monitors", Shape::Slice, Base::Str),
    f("RBDImage", "image", Shape::Value, Base::Str),
    f("FSType", "fsType", Shape::Value, Base::Str),
    f("RBDPool", "pool", Shape::Value, Base::Str),
    f("RadosUser", "user", Shape::Value, Base::Str),
    f("Keyring", "keyring", Shape::Value, Base::Str),
    f("SecretRef", "secretRef", Shape::Ptr, Base::Struct(&LOCAL_OBJECT_REFERENCE)),
    f("ReadOnly", "readOnly", Shape::Value, Base::Bool),
];
static FLEX_VOLUME_SOURCE: [Field; 5] = [
    f("Driver", "driver", Shape::Value, Base::Str),
    f("FSType", "fsType", Shape::Value, Base::Str),
    f("SecretRef", "secretRef", Shape::Ptr, Base::Struct(&LOCAL_OBJECT_REFERENCE)),
    f("ReadOnly", "readOnly", Shape::Value, Base::Bool),
    f("Options", "options", Shape::Value, Base::StrMap),
];
static CINDER_VOLUME_SOURCE: [Field; 4] = [
    f("VolumeID", "volumeID", Shape::Value, Base::Str),
    f("FSType", "fsType", Shape::Value, Base::Str),
    f("ReadOnly", "readOnly", Shape::Value, Base::Bool),
    f("SecretRef", "secretRef", Shape::Ptr, Base::Struct(&LOCAL_OBJECT_REFERENCE)),
];
static CEPHFS_VOLUME_SOURCE: [Field; 6] = [
    f("Monitors", "monitors", Shape::Slice, Base::Str),
    f("Path", "path", Shape::Value, Base::Str),
    f("User", "user", Shape::Value, Base::Str),
    f("SecretFile", "secretFile", Shape::Value, Base::Str),
    f("SecretRef", "secretRef", Shape::Ptr, Base::Struct(&LOCAL_OBJECT_REFERENCE)),
    f("ReadOnly", "readOnly", Shape::Value, Base::Bool),
];
static FLOCKER_VOLUME_SOURCE: [Field; 2] = [
    f("DatasetName", "datasetName", Shape::Value, Base::Str),
    f("DatasetUUID", "datasetUUID", Shape::Value, Base::Str),
];
static DOWNWARDAPI_VOLUME_SOURCE: [Field; 2] = [
    f("Items", "items", Shape::Slice, Base::Struct(&DOWNWARDAPI_VOLUME_FILE)),
    f("DefaultMode", "defaultMode", Shape::Ptr, Base::Int),
];
static DOWNWARDAPI_VOLUME_FILE: [Field; 4] = [
    f("Path", "path", Shape::Value, Base::Str),
    f("FieldRef", "fieldRef", Shape::Ptr, Base::Struct(&OBJECT_FIELD_SELECTOR)),
    f("ResourceFieldRef", "resourceFieldRef", Shape::Ptr, Base::Struct(&RESOURCE_FIELD_SELECTOR)),
    f("Mode", "mode", Shape::Ptr, Base::Int),
];
static OBJECT_FIELD_SELECTOR: [Field; 2] = [
    f("APIVersion", "apiVersion", Shape::Value, Base::Str),
    f("FieldPath", "fieldPath", Shape::Value, Base::Str),
];
static RESOURCE_FIELD_SELECTOR: [Field; 3] = [
    f("ContainerName", "containerName", Shape::Value, Base::Str),
    f("Resource", "resource", Shape::Value, Base::Str),
    f("Divisor", "divisor", Shape::Value, Base::Quantity),
];
static FC_VOLUME_SOURCE: [Field; 5] = [
    f("TargetWWNs", "targetWWNs", Shape::Slice, Base::Str),
    f("Lun", "lun", Shape::Ptr, Base::Int),
    f("FSType", "fsType", Shape::Value, Base::Str),
    f("ReadOnly", "readOnly", Shape::Value, Base::Bool),
    f("WWIDs", "wwids", Shape::Slice, Base::Str),
];
static AZURE_FILE_VOLUME_SOURCE: [Field; 3] = [
    f("SecretName", "secretName", Shape::Value, Base::Str),
    f("ShareName", "shareName", Shape::Value, Base::Str),
    f("ReadOnly", "readOnly", Shape::Value, Base::Bool),
];
static CONFIG_MAP_VOLUME_SOURCE: [Field; 4] = [
    f("LocalObjectReference", "", Shape::Inline, Base::Struct(&LOCAL_OBJECT_REFERENCE)),
    f("Items", "items", Shape::Slice, Base::Struct(&KEY_TO_PATH)),
    f("DefaultMode", "defaultMode", Shape::Ptr, Base::Int),
    f("Optional", "optional", Shape::Ptr, Base::Bool),
];
static VSPHERE_VIRTUAL_DISK_VOLUME_SOURCE: [Field; 4] = [
    f("VolumePath", "volumePath", Shape::Value, Base::Str),
    f("FSType", "fsType", Shape::Value, Base::Str),
    f("StoragePolicyName", "storagePolicyName", Shape::Value, Base::Str),
    f("StoragePolicyID", "storagePolicyID", Shape::Value, Base::Str),
];
static QUOBYTE_VOLUME_SOURCE: [Field; 6] = [
    f("Registry", "registry", Shape::Value, Base::Str),
    f("Volume", "volume", Shape::Value, Base::Str),
    f("ReadOnly", "readOnly", Shape::Value, Base::Bool),
    f("User", "user", Shape::Value, Base::Str),
    f("Group", "group", Shape::Value, Base::Str),
    f("Tenant", "tenant", Shape::Value, Base::Str),
];
static AZURE_DISK_VOLUME_SOURCE: [Field; 6] = [
    f("DiskName", "diskName", Shape::Value, Base::Str),
    f("DataDiskURI", "diskURI", Shape::Value, Base::Str),
    f("CachingMode", "cachingMode", Shape::Ptr, Base::Str),
    f("FSType", "fsType", Shape::Ptr, Base::Str),
    f("ReadOnly", "readOnly", Shape::Ptr, Base::Bool),
    f("Kind", "kind", Shape::Ptr, Base::Str),
];
static PHOTON_PERSISTENT_DISK_VOLUME_SOURCE: [Field; 2] =
    [f("PdID", "pdID", Shape::Value, Base::Str), f("FSType", "fsType", Shape::Value, Base::Str)];
static PROJECTED_VOLUME_SOURCE: [Field; 2] = [
    f("Sources", "sources", Shape::Slice, Base::Struct(&VOLUME_PROJECTION)),
    f("DefaultMode", "defaultMode", Shape::Ptr, Base::Int),
];
static VOLUME_PROJECTION: [Field; 6] = [
    f("Secret", "secret", Shape::Ptr, Base::Struct(&SECRET_PROJECTION)),
    f("DownwardAPI", "downwardAPI", Shape::Ptr, Base::Struct(&DOWNWARDAPI_PROJECTION)),
    f("ConfigMap", "configMap", Shape::Ptr, Base::Struct(&CONFIG_MAP_PROJECTION)),
    f(
        "ServiceAccountToken",
        "serviceAccountToken",
        Shape::Ptr,
        Base::Struct(&SERVICE_ACCOUNT_TOKEN_PROJECTION),
    ),
    f(
        "ClusterTrustBundle",
        "clusterTrustBundle",
        Shape::Ptr,
        Base::Struct(&CLUSTER_TRUST_BUNDLE_PROJECTION),
    ),
    f("PodCertificate", "podCertificate", Shape::Ptr, Base::Struct(&POD_CERTIFICATE_PROJECTION)),
];
static SECRET_PROJECTION: [Field; 3] = [
    f("LocalObjectReference", "", Shape::Inline, Base::Struct(&LOCAL_OBJECT_REFERENCE)),
    f("Items", "items", Shape::Slice, Base::Struct(&KEY_TO_PATH)),
    f("Optional", "optional", Shape::Ptr, Base::Bool),
];
static DOWNWARDAPI_PROJECTION: [Field; 1] =
    [f("Items", "items", Shape::Slice, Base::Struct(&DOWNWARDAPI_VOLUME_FILE))];
static CONFIG_MAP_PROJECTION: [Field; 3] = [
    f("LocalObjectReference", "", Shape::Inline, Base::Struct(&LOCAL_OBJECT_REFERENCE)),
    f("Items", "items", Shape::Slice, Base::Struct(&KEY_TO_PATH)),
    f("Optional", "optional", Shape::Ptr, Base::Bool),
];
static SERVICE_ACCOUNT_TOKEN_PROJECTION: [Field; 3] = [
    f("Audience", "audience", Shape::Value, Base::Str),
    f("ExpirationSeconds", "expirationSeconds", Shape::Ptr, Base::Int),
    f("Path", "path", Shape::Value, Base::Str),
];
static CLUSTER_TRUST_BUNDLE_PROJECTION: [Field; 5] = [
    f("Name", "name", Shape::Ptr, Base::Str),
    f("SignerName", "signerName", Shape::Ptr, Base::Str),
    f("LabelSelector", "labelSelector", Shape::Ptr, Base::Tagged),
    f("Optional", "optional", Shape::Ptr, Base::Bool),
    f("Path", "path", Shape::Value, Base::Str),
];
static POD_CERTIFICATE_PROJECTION: [Field; 7] = [
    f("SignerName", "signerName", Shape::Value, Base::Str),
    f("KeyType", "keyType", Shape::Value, Base::Str),
    f("MaxExpirationSeconds", "maxExpirationSeconds", Shape::Ptr, Base::Int),
    f("CredentialBundlePath", "credentialBundlePath", Shape::Value, Base::Str),
    f("KeyPath", "keyPath", Shape::Value, Base::Str),
    f("CertificateChainPath", "certificateChainPath", Shape::Value, Base::Str),
    f("UserAnnotations", "userAnnotations", Shape::Value, Base::StrMap),
];
static PORTWORX_VOLUME_SOURCE: [Field; 3] = [
    f("VolumeID", "volumeID", Shape::Value, Base::Str),
    f("FSType", "fsType", Shape::Value, Base::Str),
    f("ReadOnly", "readOnly", Shape::Value, Base::Bool),
];
static SCALEIO_VOLUME_SOURCE: [Field; 10] = [
    f("Gateway", "gateway", Shape::Value, Base::Str),
    f("System", "system", Shape::Value, Base::Str),
    f("SecretRef", "secretRef", Shape::Ptr, Base::Struct(&LOCAL_OBJECT_REFERENCE)),
    f("SSLEnabled", "sslEnabled", Shape::Value, Base::Bool),
    f("ProtectionDomain", "protectionDomain", Shape::Value, Base::Str),
    f("StoragePool", "storagePool", Shape::Value, Base::Str),
    f("StorageMode", "storageMode", Shape::Value, Base::Str),
    f("VolumeName", "volumeName", Shape::Value, Base::Str),
    f("FSType", "fsType", Shape::Value, Base::Str),
    f("ReadOnly", "readOnly", Shape::Value, Base::Bool),
];
static STORAGEOS_VOLUME_SOURCE: [Field; 5] = [
    f("VolumeName", "volumeName", Shape::Value, Base::Str),
    f("VolumeNamespace", "volumeNamespace", Shape::Value, Base::Str),
    f("FSType", "fsType", Shape::Value, Base::Str),
    f("ReadOnly", "readOnly", Shape::Value, Base::Bool),
    f("SecretRef", "secretRef", Shape::Ptr, Base::Struct(&LOCAL_OBJECT_REFERENCE)),
];
static CSI_VOLUME_SOURCE: [Field; 5] = [
    f("Driver", "driver", Shape::Value, Base::Str),
    f("ReadOnly", "readOnly", Shape::Ptr, Base::Bool),
    f("FSType", "fsType", Shape::Ptr, Base::Str),
    f("VolumeAttributes", "volumeAttributes", Shape::Value, Base::StrMap),
    f(
        "NodePublishSecretRef",
        "nodePublishSecretRef",
        Shape::Ptr,
        Base::Struct(&LOCAL_OBJECT_REFERENCE),
    ),
];
static EPHEMERAL_VOLUME_SOURCE: [Field; 1] = [f(
    "VolumeClaimTemplate",
    "volumeClaimTemplate",
    Shape::Ptr,
    Base::Struct(&PERSISTENT_VOLUME_CLAIM_TEMPLATE),
)];
static PERSISTENT_VOLUME_CLAIM_TEMPLATE: [Field; 1] =
    [f("Spec", "spec", Shape::Value, Base::Struct(&PERSISTENT_VOLUME_CLAIM_SPEC))];
static PERSISTENT_VOLUME_CLAIM_SPEC: [Field; 9] = [
    f("AccessModes", "accessModes", Shape::Slice, Base::Str),
    f("Selector", "selector", Shape::Ptr, Base::Tagged),
    f("Resources", "resources", Shape::Value, Base::Struct(&VOLUME_RESOURCE_REQUIREMENTS)),
    f("VolumeName", "volumeName", Shape::Value, Base::Str),
    f("StorageClassName", "storageClassName", Shape::Ptr, Base::Str),
    f("VolumeMode", "volumeMode", Shape::Ptr, Base::Str),
    f("DataSource", "dataSource", Shape::Ptr, Base::Struct(&TYPED_LOCAL_OBJECT_REFERENCE)),
    f("DataSourceRef", "dataSourceRef", Shape::Ptr, Base::Struct(&TYPED_OBJECT_REFERENCE)),
    f("VolumeAttributesClassName", "volumeAttributesClassName", Shape::Ptr, Base::Str),
];
static VOLUME_RESOURCE_REQUIREMENTS: [Field; 2] = [
    f("Limits", "limits", Shape::Value, Base::QuantityMap),
    f("Requests", "requests", Shape::Value, Base::QuantityMap),
];
static TYPED_LOCAL_OBJECT_REFERENCE: [Field; 3] = [
    f("APIGroup", "apiGroup", Shape::Ptr, Base::Str),
    f("Kind", "kind", Shape::Value, Base::Str),
    f("Name", "name", Shape::Value, Base::Str),
];
static TYPED_OBJECT_REFERENCE: [Field; 4] = [
    f("APIGroup", "apiGroup", Shape::Ptr, Base::Str),
    f("Kind", "kind", Shape::Value, Base::Str),
    f("Name", "name", Shape::Value, Base::Str),
    f("Namespace", "namespace", Shape::Ptr, Base::Str),
];
static IMAGE_VOLUME_SOURCE: [Field; 2] = [
    f("Reference", "reference", Shape::Value, Base::Str),
    f("PullPolicy", "pullPolicy", Shape::Value, Base::Str),
];
static CONTAINER: [Field; 25] = [
    f("Name", "name", Shape::Value, Base::Str),
    f("Image", "image", Shape::Value, Base::Str),
    f("Command", "command", Shape::Slice, Base::Str),
    f("Args", "args", Shape::Slice, Base::Str),
    f("WorkingDir", "workingDir", Shape::Value, Base::Str),
    f("Ports", "ports", Shape::Slice, Base::Struct(&CONTAINER_PORT)),
    f("EnvFrom", "envFrom", Shape::Slice, Base::Struct(&ENV_FROM_SOURCE)),
    f("Env", "env", Shape::Slice, Base::Struct(&ENV_VAR)),
    f("Resources", "resources", Shape::Value, Base::Struct(&RESOURCE_REQUIREMENTS)),
    f("ResizePolicy", "resizePolicy", Shape::Slice, Base::Struct(&CONTAINER_RESIZE_POLICY)),
    f("RestartPolicy", "restartPolicy", Shape::Ptr, Base::Str),
    f(
        "RestartPolicyRules",
        "restartPolicyRules",
        Shape::Slice,
        Base::Struct(&CONTAINER_RESTART_RULE),
    ),
    f("VolumeMounts", "volumeMounts", Shape::Slice, Base::Struct(&VOLUME_MOUNT)),
    f("VolumeDevices", "volumeDevices", Shape::Slice, Base::Struct(&VOLUME_DEVICE)),
    f("LivenessProbe", "livenessProbe", Shape::Ptr, Base::Struct(&PROBE)),
    f("ReadinessProbe", "readinessProbe", Shape::Ptr, Base::Struct(&PROBE)),
    f("StartupProbe", "startupProbe", Shape::Ptr, Base::Struct(&PROBE)),
    f("Lifecycle", "lifecycle", Shape::Ptr, Base::Struct(&LIFECYCLE)),
    f("TerminationMessagePath", "terminationMessagePath", Shape::Value, Base::Str),
    f("TerminationMessagePolicy", "terminationMessagePolicy", Shape::Value, Base::Str),
    f("ImagePullPolicy", "imagePullPolicy", Shape::Value, Base::Str),
    f("SecurityContext", "securityContext", Shape::Ptr, Base::Struct(&SECURITY_CONTEXT)),
    f("Stdin", "stdin", Shape::Value, Base::Bool),
    f("StdinOnce", "stdinOnce", Shape::Value, Base::Bool),
    f("TTY", "tty", Shape::Value, Base::Bool),
];
static CONTAINER_PORT: [Field; 5] = [
    f("Name", "name", Shape::Value, Base::Str),
    f("HostPort", "hostPort", Shape::Value, Base::Int),
    f("ContainerPort", "containerPort", Shape::Value, Base::Int),
    f("Protocol", "protocol", Shape::Value, Base::Str),
    f("HostIP", "hostIP", Shape::Value, Base::Str),
];
static ENV_FROM_SOURCE: [Field; 3] = [
    f("Prefix", "prefix", Shape::Value, Base::Str),
    f("ConfigMapRef", "configMapRef", Shape::Ptr, Base::Struct(&CONFIG_MAP_ENV_SOURCE)),
    f("SecretRef", "secretRef", Shape::Ptr, Base::Struct(&SECRET_ENV_SOURCE)),
];
static CONFIG_MAP_ENV_SOURCE: [Field; 2] = [
    f("LocalObjectReference", "", Shape::Inline, Base::Struct(&LOCAL_OBJECT_REFERENCE)),
    f("Optional", "optional", Shape::Ptr, Base::Bool),
];
static SECRET_ENV_SOURCE: [Field; 2] = [
    f("LocalObjectReference", "", Shape::Inline, Base::Struct(&LOCAL_OBJECT_REFERENCE)),
    f("Optional", "optional", Shape::Ptr, Base::Bool),
];
static ENV_VAR: [Field; 3] = [
    f("Name", "name", Shape::Value, Base::Str),
    f("Value", "value", Shape::Value, Base::Str),
    f("ValueFrom", "valueFrom", Shape::Ptr, Base::Struct(&ENV_VAR_SOURCE)),
];
static ENV_VAR_SOURCE: [Field; 5] = [
    f("FieldRef", "fieldRef", Shape::Ptr, Base::Struct(&OBJECT_FIELD_SELECTOR)),
    f("ResourceFieldRef", "resourceFieldRef", Shape::Ptr, Base::Struct(&RESOURCE_FIELD_SELECTOR)),
    f("ConfigMapKeyRef", "configMapKeyRef", Shape::Ptr, Base::Struct(&CONFIG_MAP_KEY_SELECTOR)),
    f("SecretKeyRef", "secretKeyRef", Shape::Ptr, Base::Struct(&SECRET_KEY_SELECTOR)),
    f("FileKeyRef", "fileKeyRef", Shape::Ptr, Base::Struct(&FILE_KEY_SELECTOR)),
];
static CONFIG_MAP_KEY_SELECTOR: [Field; 3] = [
    f("LocalObjectReference", "", Shape::Inline, Base::Struct(&LOCAL_OBJECT_REFERENCE)),
    f("Key", "key", Shape::Value, Base::Str),
    f("Optional", "optional", Shape::Ptr, Base::Bool),
];
static SECRET_KEY_SELECTOR: [Field; 3] = [
    f("LocalObjectReference", "", Shape::Inline, Base::Struct(&LOCAL_OBJECT_REFERENCE)),
    f("Key", "key", Shape::Value, Base::Str),
    f("Optional", "optional", Shape::Ptr, Base::Bool),
];
static FILE_KEY_SELECTOR: [Field; 4] = [
    f("VolumeName", "volumeName", Shape::Value, Base::Str),
    f("Path", "path", Shape::Value, Base::Str),
    f("Key", "key", Shape::Value, Base::Str),
    f("Optional", "optional", Shape::Ptr, Base::Bool),
];
static RESOURCE_REQUIREMENTS: [Field; 3] = [
    f("Limits", "limits", Shape::Value, Base::QuantityMap),
    f("Requests", "requests", Shape::Value, Base::QuantityMap),
    f("Claims", "claims", Shape::Slice, Base::Struct(&RESOURCE_CLAIM)),
];
static RESOURCE_CLAIM: [Field; 2] =
    [f("Name", "name", Shape::Value, Base::Str), f("Request", "request", Shape::Value, Base::Str)];
static CONTAINER_RESIZE_POLICY: [Field; 2] = [
    f("ResourceName", "resourceName", Shape::Value, Base::Str),
    f("RestartPolicy", "restartPolicy", Shape::Value, Base::Str),
];
static CONTAINER_RESTART_RULE: [Field; 2] = [
    f("Action", "action", Shape::Value, Base::Str),
    f("ExitCodes", "exitCodes", Shape::Ptr, Base::Struct(&CONTAINER_RESTART_RULE_ON_EXIT_CODES)),
];
static CONTAINER_RESTART_RULE_ON_EXIT_CODES: [Field; 2] = [
    f("Operator", "operator", Shape::Value, Base::Str),
    f("Values", "values", Shape::Slice, Base::Int),
];
static VOLUME_MOUNT: [Field; 7] = [
    f("Name", "name", Shape::Value, Base::Str),
    f("ReadOnly", "readOnly", Shape::Value, Base::Bool),
    f("RecursiveReadOnly", "recursiveReadOnly", Shape::Ptr, Base::Str),
    f("MountPath", "mountPath", Shape::Value, Base::Str),
    f("SubPath", "subPath", Shape::Value, Base::Str),
    f("MountPropagation", "mountPropagation", Shape::Ptr, Base::Str),
    f("SubPathExpr", "subPathExpr", Shape::Value, Base::Str),
];
static VOLUME_DEVICE: [Field; 2] = [
    f("Name", "name", Shape::Value, Base::Str),
    f("DevicePath", "devicePath", Shape::Value, Base::Str),
];
static PROBE: [Field; 7] = [
    f("ProbeHandler", "", Shape::Inline, Base::Struct(&PROBE_HANDLER)),
    f("InitialDelaySeconds", "initialDelaySeconds", Shape::Value, Base::Int),
    f("TimeoutSeconds", "timeoutSeconds", Shape::Value, Base::Int),
    f("PeriodSeconds", "periodSeconds", Shape::Value, Base::Int),
    f("SuccessThreshold", "successThreshold", Shape::Value, Base::Int),
    f("FailureThreshold", "failureThreshold", Shape::Value, Base::Int),
    f("TerminationGracePeriodSeconds", "terminationGracePeriodSeconds", Shape::Ptr, Base::Int),
];
static PROBE_HANDLER: [Field; 4] = [
    f("Exec", "exec", Shape::Ptr, Base::Struct(&EXEC_ACTION)),
    f("HTTPGet", "httpGet", Shape::Ptr, Base::Struct(&HTTP_GET_ACTION)),
    f("TCPSocket", "tcpSocket", Shape::Ptr, Base::Struct(&TCP_SOCKET_ACTION)),
    f("GRPC", "grpc", Shape::Ptr, Base::Struct(&GRPC_ACTION)),
];
static EXEC_ACTION: [Field; 1] = [f("Command", "command", Shape::Slice, Base::Str)];
static HTTP_GET_ACTION: [Field; 5] = [
    f("Path", "path", Shape::Value, Base::Str),
    f("Port", "port", Shape::Value, Base::IntOrString),
    f("Host", "host", Shape::Value, Base::Str),
    f("Scheme", "scheme", Shape::Value, Base::Str),
    f("HTTPHeaders", "httpHeaders", Shape::Slice, Base::Struct(&HTTP_HEADER)),
];
static HTTP_HEADER: [Field; 2] =
    [f("Name", "name", Shape::Value, Base::Str), f("Value", "value", Shape::Value, Base::Str)];
static TCP_SOCKET_ACTION: [Field; 2] = [
    f("Port", "port", Shape::Value, Base::IntOrString),
    f("Host", "host", Shape::Value, Base::Str),
];
static GRPC_ACTION: [Field; 2] =
    [f("Port", "port", Shape::Value, Base::Int), f("Service", "service", Shape::Ptr, Base::Str)];
static LIFECYCLE: [Field; 3] = [
    f("PostStart", "postStart", Shape::Ptr, Base::Struct(&LIFECYCLE_HANDLER)),
    f("PreStop", "preStop", Shape::Ptr, Base::Struct(&LIFECYCLE_HANDLER)),
    f("StopSignal", "stopSignal", Shape::Ptr, Base::Str),
];
static LIFECYCLE_HANDLER: [Field; 4] = [
    f("Exec", "exec", Shape::Ptr, Base::Struct(&EXEC_ACTION)),
    f("HTTPGet", "httpGet", Shape::Ptr, Base::Struct(&HTTP_GET_ACTION)),
    f("TCPSocket", "tcpSocket", Shape::Ptr, Base::Struct(&TCP_SOCKET_ACTION)),
    f("Sleep", "sleep", Shape::Ptr, Base::Struct(&SLEEP_ACTION)),
];
static SLEEP_ACTION: [Field; 1] = [f("Seconds", "seconds", Shape::Value, Base::Int)];
static SECURITY_CONTEXT: [Field; 12] = [
    f("Capabilities", "capabilities", Shape::Ptr, Base::Struct(&CAPABILITIES)),
    f("Privileged", "privileged", Shape::Ptr, Base::Bool),
    f("SELinuxOptions", "seLinuxOptions", Shape::Ptr, Base::Struct(&SE_LINUX_OPTIONS)),
    f(
        "WindowsOptions",
        "windowsOptions",
        Shape::Ptr,
        Base::Struct(&WINDOWS_SECURITY_CONTEXT_OPTIONS),
    ),
    f("RunAsUser", "runAsUser", Shape::Ptr, Base::Int),
    f("RunAsGroup", "runAsGroup", Shape::Ptr, Base::Int),
    f("RunAsNonRoot", "runAsNonRoot", Shape::Ptr, Base::Bool),
    f("ReadOnlyRootFilesystem", "readOnlyRootFilesystem", Shape::Ptr, Base::Bool),
    f("AllowPrivilegeEscalation", "allowPrivilegeEscalation", Shape::Ptr, Base::Bool),
    f("ProcMount", "procMount", Shape::Ptr, Base::Str),
    f("SeccompProfile", "seccompProfile", Shape::Ptr, Base::Struct(&SECCOMP_PROFILE)),
    f("AppArmorProfile", "appArmorProfile", Shape::Ptr, Base::Struct(&APP_ARMOR_PROFILE)),
];
static CAPABILITIES: [Field; 2] =
    [f("Add", "add", Shape::Slice, Base::Str), f("Drop", "drop", Shape::Slice, Base::Str)];
static SE_LINUX_OPTIONS: [Field; 4] = [
    f("User", "user", Shape::Value, Base::Str),
    f("Role", "role", Shape::Value, Base::Str),
    f("Type", "type", Shape::Value, Base::Str),
    f("Level", "level", Shape::Value, Base::Str),
];
static WINDOWS_SECURITY_CONTEXT_OPTIONS: [Field; 4] = [
    f("GMSACredentialSpecName", "gmsaCredentialSpecName", Shape::Ptr, Base::Str),
    f("GMSACredentialSpec", "gmsaCredentialSpec", Shape::Ptr, Base::Str),
    f("RunAsUserName", "runAsUserName", Shape::Ptr, Base::Str),
    f("HostProcess", "hostProcess", Shape::Ptr, Base::Bool),
];
static SECCOMP_PROFILE: [Field; 2] = [
    f("Type", "type", Shape::Value, Base::Str),
    f("LocalhostProfile", "localhostProfile", Shape::Ptr, Base::Str),
];
static APP_ARMOR_PROFILE: [Field; 2] = [
    f("Type", "type", Shape::Value, Base::Str),
    f("LocalhostProfile", "localhostProfile", Shape::Ptr, Base::Str),
];
static EPHEMERAL_CONTAINER: [Field; 2] = [
    // EphemeralContainerCommon has exactly Container's fields.
    f("EphemeralContainerCommon", "", Shape::Inline, Base::Struct(&CONTAINER)),
    f("TargetContainerName", "targetContainerName", Shape::Value, Base::Str),
];
static POD_SECURITY_CONTEXT: [Field; 18] = [
    f("HostNetwork", "@hostNetwork", Shape::Value, Base::Bool),
    f("HostPID", "@hostPID", Shape::Value, Base::Bool),
    f("HostIPC", "@hostIPC", Shape::Value, Base::Bool),
    f("ShareProcessNamespace", "@shareProcessNamespace", Shape::Ptr, Base::Bool),
    f("HostUsers", "@hostUsers", Shape::Ptr, Base::Bool),
    f("SELinuxOptions", "seLinuxOptions", Shape::Ptr, Base::Struct(&SE_LINUX_OPTIONS)),
    f(
        "WindowsOptions",
        "windowsOptions",
        Shape::Ptr,
        Base::Struct(&WINDOWS_SECURITY_CONTEXT_OPTIONS),
    ),
    f("RunAsUser", "runAsUser", Shape::Ptr, Base::Int),
    f("RunAsGroup", "runAsGroup", Shape::Ptr, Base::Int),
    f("RunAsNonRoot", "runAsNonRoot", Shape::Ptr, Base::Bool),
    f("SupplementalGroups", "supplementalGroups", Shape::Slice, Base::Int),
    f("SupplementalGroupsPolicy", "supplementalGroupsPolicy", Shape::Ptr, Base::Str),
    f("FSGroup", "fsGroup", Shape::Ptr, Base::Int),
    f("FSGroupChangePolicy", "fsGroupChangePolicy", Shape::Ptr, Base::Str),
    f("Sysctls", "sysctls", Shape::Slice, Base::Struct(&SYSCTL)),
    f("SeccompProfile", "seccompProfile", Shape::Ptr, Base::Struct(&SECCOMP_PROFILE)),
    f("AppArmorProfile", "appArmorProfile", Shape::Ptr, Base::Struct(&APP_ARMOR_PROFILE)),
    f("SELinuxChangePolicy", "seLinuxChangePolicy", Shape::Ptr, Base::Str),
];
static SYSCTL: [Field; 2] =
    [f("Name", "name", Shape::Value, Base::Str), f("Value", "value", Shape::Value, Base::Str)];
static AFFINITY: [Field; 3] = [
    f("NodeAffinity", "nodeAffinity", Shape::Ptr, Base::Struct(&NODE_AFFINITY)),
    f("PodAffinity", "podAffinity", Shape::Ptr, Base::Struct(&POD_AFFINITY)),
    // PodAntiAffinity has exactly PodAffinity's fields.
    f("PodAntiAffinity", "podAntiAffinity", Shape::Ptr, Base::Struct(&POD_AFFINITY)),
];
static NODE_AFFINITY: [Field; 2] = [
    f(
        "RequiredDuringSchedulingIgnoredDuringExecution",
        "requiredDuringSchedulingIgnoredDuringExecution",
        Shape::Ptr,
        Base::Struct(&NODE_SELECTOR),
    ),
    f(
        "PreferredDuringSchedulingIgnoredDuringExecution",
        "preferredDuringSchedulingIgnoredDuringExecution",
        Shape::Slice,
        Base::Struct(&PREFERRED_SCHEDULING_TERM),
    ),
];
static NODE_SELECTOR: [Field; 1] =
    [f("NodeSelectorTerms", "nodeSelectorTerms", Shape::Slice, Base::Struct(&NODE_SELECTOR_TERM))];
static NODE_SELECTOR_TERM: [Field; 2] = [
    f(
        "MatchExpressions",
        "matchExpressions",
        Shape::Slice,
        Base::Struct(&NODE_SELECTOR_REQUIREMENT),
    ),
    f("MatchFields", "matchFields", Shape::Slice, Base::Struct(&NODE_SELECTOR_REQUIREMENT)),
];
static NODE_SELECTOR_REQUIREMENT: [Field; 3] = [
    f("Key", "key", Shape::Value, Base::Str),
    f("Operator", "operator", Shape::Value, Base::Str),
    f("Values", "values", Shape::Slice, Base::Str),
];
static PREFERRED_SCHEDULING_TERM: [Field; 2] = [
    f("Weight", "weight", Shape::Value, Base::Int),
    f("Preference", "preference", Shape::Value, Base::Struct(&NODE_SELECTOR_TERM)),
];
static POD_AFFINITY: [Field; 2] = [
    f(
        "RequiredDuringSchedulingIgnoredDuringExecution",
        "requiredDuringSchedulingIgnoredDuringExecution",
        Shape::Slice,
        Base::Struct(&POD_AFFINITY_TERM),
    ),
    f(
        "PreferredDuringSchedulingIgnoredDuringExecution",
        "preferredDuringSchedulingIgnoredDuringExecution",
        Shape::Slice,
        Base::Struct(&WEIGHTED_POD_AFFINITY_TERM),
    ),
];
static POD_AFFINITY_TERM: [Field; 6] = [
    f("LabelSelector", "labelSelector", Shape::Ptr, Base::Tagged),
    f("Namespaces", "namespaces", Shape::Slice, Base::Str),
    f("TopologyKey", "topologyKey", Shape::Value, Base::Str),
    f("NamespaceSelector", "namespaceSelector", Shape::Ptr, Base::Tagged),
    f("MatchLabelKeys", "matchLabelKeys", Shape::Slice, Base::Str),
    f("MismatchLabelKeys", "mismatchLabelKeys", Shape::Slice, Base::Str),
];
static WEIGHTED_POD_AFFINITY_TERM: [Field; 2] = [
    f("Weight", "weight", Shape::Value, Base::Int),
    f("PodAffinityTerm", "podAffinityTerm", Shape::Value, Base::Struct(&POD_AFFINITY_TERM)),
];
static TOLERATION: [Field; 5] = [
    f("Key", "key", Shape::Value, Base::Str),
    f("Operator", "operator", Shape::Value, Base::Str),
    f("Value", "value", Shape::Value, Base::Str),
    f("Effect", "effect", Shape::Value, Base::Str),
    f("TolerationSeconds", "tolerationSeconds", Shape::Ptr, Base::Int),
];
static HOST_ALIAS: [Field; 2] =
    [f("IP", "ip", Shape::Value, Base::Str), f("Hostnames", "hostnames", Shape::Slice, Base::Str)];
static PODDNS_CONFIG: [Field; 3] = [
    f("Nameservers", "nameservers", Shape::Slice, Base::Str),
    f("Searches", "searches", Shape::Slice, Base::Str),
    f("Options", "options", Shape::Slice, Base::Struct(&PODDNS_CONFIG_OPTION)),
];
static PODDNS_CONFIG_OPTION: [Field; 2] =
    [f("Name", "name", Shape::Value, Base::Str), f("Value", "value", Shape::Ptr, Base::Str)];
static POD_READINESS_GATE: [Field; 1] =
    [f("ConditionType", "conditionType", Shape::Value, Base::Str)];
static TOPOLOGY_SPREAD_CONSTRAINT: [Field; 8] = [
    f("MaxSkew", "maxSkew", Shape::Value, Base::Int),
    f("TopologyKey", "topologyKey", Shape::Value, Base::Str),
    f("WhenUnsatisfiable", "whenUnsatisfiable", Shape::Value, Base::Str),
    f("LabelSelector", "labelSelector", Shape::Ptr, Base::Tagged),
    f("MinDomains", "minDomains", Shape::Ptr, Base::Int),
    f("NodeAffinityPolicy", "nodeAffinityPolicy", Shape::Ptr, Base::Str),
    f("NodeTaintsPolicy", "nodeTaintsPolicy", Shape::Ptr, Base::Str),
    f("MatchLabelKeys", "matchLabelKeys", Shape::Slice, Base::Str),
];
static PODOS: [Field; 1] = [f("Name", "name", Shape::Value, Base::Str)];
static POD_SCHEDULING_GATE: [Field; 1] = [f("Name", "name", Shape::Value, Base::Str)];
static POD_RESOURCE_CLAIM: [Field; 3] = [
    f("Name", "name", Shape::Value, Base::Str),
    f("ResourceClaimName", "resourceClaimName", Shape::Ptr, Base::Str),
    f("ResourceClaimTemplateName", "resourceClaimTemplateName", Shape::Ptr, Base::Str),
];
static POD_SCHEDULING_GROUP: [Field; 1] =
    [f("PodGroupName", "podGroupName", Shape::Ptr, Base::Str)];
