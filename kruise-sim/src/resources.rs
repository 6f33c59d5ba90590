//! What the server serves: resource definitions as data, built-in ones and those made from CRDs.

use crate::schema::Structural;
use std::sync::Arc;

/// How `kubectl get` shows one column of a resource (a `Table` column definition).
#[derive(Clone, Debug, PartialEq)]
pub struct Column {
    /// Header, such as `Ready`.
    pub name: String,
    /// OpenAPI type: `string`, `integer`, `number`, `boolean` or `date`.
    pub type_: String,
    /// OpenAPI format, such as `name`.
    pub format: String,
    /// Description.
    pub description: String,
    /// 0 shows by default; higher shows with `-o wide`.
    pub priority: i64,
    /// Where the cell comes from.
    pub source: CellSource,
}

/// How a column's cell is computed from an object.
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub enum CellSource {
    /// A JSONPath (`.spec.replicas`) as in `additionalPrinterColumns`.
    JsonPath(String),
    /// `metadata.name`.
    Name,
    /// Age, from `metadata.creationTimestamp`.
    Age,
    /// `a/b` from two JSONPaths, missing values as 0.
    Ratio(String, String),
    /// The number of members of an object or items of a list at a JSONPath.
    Count(String),
    /// A pod's ready containers over all containers.
    PodReady,
    /// A pod's status as kubectl shows it.
    PodStatus,
    /// A pod's summed restart count.
    PodRestarts,
    /// A node's Ready condition, plus SchedulingDisabled.
    NodeStatus,
    /// A service's ports, as `80/TCP,443:30443/TCP`.
    ServicePorts,
    /// An Event's last occurrence, as an age.
    EventLastSeen,
    /// An Event's object, as `kind/name`.
    EventObject,
    /// A string map at a JSONPath as `k=v,k2=v2` (keys sorted), `<none>` when empty (a
    /// DaemonSet's node selector).
    Labels(String),
    /// `metadata.creationTimestamp` as a timestamp, not an age (the API server's default
    /// table, which CustomResourceDefinitions use).
    CreatedAt,
    /// A JSONPath's string, or the given text when it is missing or empty.
    TextOr(String, &'static str),
    /// A pod's readiness gates, `true/all`, `<none>` when it has none.
    PodReadinessGates,
    /// A claim's phase, `Terminating` once it is being deleted.
    ClaimStatus,
    /// A bound claim's capacity (empty while unbound).
    ClaimCapacity,
    /// A bound claim's access modes, as `RWO,ROX` (empty while unbound).
    ClaimAccessModes,
    /// A claim's storage class: `spec.storageClassName`, else the beta annotation.
    ClaimStorageClass,
    /// A Job's status: the first of Complete, Failed, Terminating, Suspended, FailureTarget
    /// that holds, else Running.
    JobStatus,
    /// A Job's completions, `succeeded/completions` (`n/1 of p` for a work queue).
    JobCompletions,
    /// How long a Job has run, or ran.
    JobDuration,
    /// A CronJob's time zone, `<none>` when unset.
    CronJobTimeZone,
    /// A CronJob's last schedule time as an age, `<none>` when unset.
    CronJobLastSchedule,
    /// An EndpointSlice's ports: the first three port numbers (a port without a number shows
    /// its name, or `*`), `+ N more...` beyond, `<unset>` when none.
    EndpointSlicePorts,
    /// An EndpointSlice's endpoints: the first three addresses, `+ N more...` beyond,
    /// `<unset>` when none.
    EndpointSliceEndpoints,
    /// An Ingress's rule hosts: the first three, `+ N more...` counting every rule beyond,
    /// `*` when none.
    IngressHosts,
    /// An Ingress's load-balancer addresses (an IP, else the hostname), unique and sorted.
    IngressAddress,
    /// An Ingress's ports: `80, 443` with TLS, else `80`.
    IngressPorts,
    /// An IngressClass's parameters as `Kind.apiGroup/name`, `<none>` when unset.
    IngressClassParameters,
}

/// The paths of a scale subresource.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ScalePaths {
    /// Where the desired replicas live (`.spec.replicas`).
    pub spec_replicas: String,
    /// Where the observed replicas live (`.status.replicas`).
    pub status_replicas: String,
    /// Where the label selector (in string form) lives, if anywhere.
    pub label_selector: Option<String>,
}

/// How strategic merge patches apply to a resource.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum SmpKind {
    /// Not supported (custom resources): 415.
    Unsupported,
    /// A Pod.
    Pod,
    /// An object with a pod template at the given path.
    TemplateAt(&'static [&'static str]),
    /// A Service (ports merge on `port`).
    Service,
    /// Any other built-in: metadata merges as ObjectMeta, the rest as plain JSON.
    Plain,
}

/// Where a resource comes from.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Origin {
    /// Compiled into the server.
    BuiltIn,
    /// Registered by the named CustomResourceDefinition.
    Crd(String),
}

/// One served resource in one version.
#[derive(Clone, Debug)]
pub struct ResourceDef {
    /// API group, empty for core.
    pub group: String,
    /// The version served by this definition.
    pub version: String,
    /// The group objects are stored under: `group`, but for a built-in stored as another
    /// group's resource (`events.k8s.io` Events are core Events, see
    /// [`crate::builtin_conversion`]).
    pub storage_group: String,
    /// The version objects are stored in (differs for multi-version CRDs and for built-ins
    /// stored as another group's resource).
    pub storage_version: String,
    /// Kind, such as `Pod`.
    pub kind: String,
    /// List kind, such as `PodList`.
    pub list_kind: String,
    /// Plural resource name, such as `pods`.
    pub plural: String,
    /// Singular name, such as `pod`.
    pub singular: String,
    /// Whether objects live in namespaces.
    pub namespaced: bool,
    /// Verbs for discovery.
    pub verbs: Vec<String>,
    /// Short names, such as `po`.
    pub short_names: Vec<String>,
    /// Categories, such as `all`.
    pub categories: Vec<String>,
    /// Whether a status subresource exists.
    pub status: bool,
    /// The scale subresource, if any.
    pub scale: Option<ScalePaths>,
    /// Other subresources served (`binding`, `eviction`).
    pub extra_subresources: Vec<String>,
    /// Columns for `Table` responses (after the Name column).
    pub columns: Vec<Column>,
    /// Strategic merge patch support.
    pub smp: SmpKind,
    /// Whether `metadata.generation` is maintained.
    pub generation: bool,
    /// Whether a PUT without resourceVersion is allowed.
    pub unconditional_update: bool,
    /// Whether a PUT may create.
    pub create_on_update: bool,
    /// Field selectors supported besides metadata.name and metadata.namespace.
    pub field_selectors: Vec<String>,
    /// The structural schema of a CRD version.
    pub schema: Option<Arc<Structural>>,
    /// A CRD version's `openAPIV3Schema` as written, for the OpenAPI v3 documents.
    pub openapi_schema: Option<Arc<serde_json::Value>>,
    /// A digest of `openapi_schema`, taken once, for the OpenAPI index's hash.
    pub openapi_digest: u64,
    /// Where the definition comes from.
    pub origin: Origin,
}

impl ResourceDef {
    /// `group/version`, or `version` for core.
    pub fn api_version(&self) -> String {
        if self.group.is_empty() {
            self.version.clone()
        } else {
            format!("{}/{}", self.group, self.version)
        }
    }

    /// The storage key: the storage group and plural.
    pub fn key(&self) -> (String, String) {
        (self.storage_group.clone(), self.plural.clone())
    }

    /// The apiVersion of stored objects: `storage_group/storage_version`.
    pub fn storage_api_version(&self) -> String {
        if self.storage_group.is_empty() {
            self.storage_version.clone()
        } else {
            format!("{}/{}", self.storage_group, self.storage_version)
        }
    }

    /// Whether this definition serves objects in the form they are stored in (one per
    /// storage table).
    pub fn is_storage(&self) -> bool {
        self.group == self.storage_group && self.version == self.storage_version
    }

    /// Whether this is a custom resource.
    pub fn is_custom(&self) -> bool {
        matches!(self.origin, Origin::Crd(_))
    }
}

fn s(v: &str) -> String {
    v.to_string()
}

fn col(name: &str, type_: &str, priority: i64, source: CellSource) -> Column {
    Column {
        name: s(name),
        type_: s(type_),
        format: String::new(),
        description: String::new(),
        priority,
        source,
    }
}

fn jp(name: &str, type_: &str, path: &str) -> Column {
    col(name, type_, 0, CellSource::JsonPath(s(path)))
}

fn age() -> Column {
    col("Age", "string", 0, CellSource::Age)
}

const ALL_VERBS: &[&str] =
    &["create", "delete", "deletecollection", "get", "list", "patch", "update", "watch"];

struct B {
    group: &'static str,
    version: &'static str,
    kind: &'static str,
    plural: &'static str,
    namespaced: bool,
    short: &'static [&'static str],
    categories: &'static [&'static str],
    status: bool,
    scale: bool,
    generation: bool,
    smp: SmpKind,
}

const fn b(
    group: &'static str,
    version: &'static str,
    kind: &'static str,
    plural: &'static str,
    namespaced: bool,
) -> B {
    B {
        group,
        version,
        kind,
        plural,
        namespaced,
        short: &[],
        categories: &[],
        status: false,
        scale: false,
        generation: false,
        smp: SmpKind::Plain,
    }
}

impl B {
    const fn short(mut self, short: &'static [&'static str]) -> Self {
        self.short = short;
        self
    }
    const fn all(mut self) -> Self {
        self.categories = &["all"];
        self
    }
    const fn status(mut self) -> Self {
        self.status = true;
        self
    }
    const fn scale(mut self) -> Self {
        self.scale = true;
        self
    }
    const fn generation(mut self) -> Self {
        self.generation = true;
        self
    }
    const fn smp(mut self, smp: SmpKind) -> Self {
        self.smp = smp;
        self
    }
}

const TEMPLATE: SmpKind = SmpKind::TemplateAt(&["spec", "template"]);

const BUILTINS: &[B] = &[
    b("", "v1", "Namespace", "namespaces", false).short(&["ns"]).status(),
    // Pods keep a generation as kube-apiserver 1.33+ does (KEP 5067): 1 on create, one more
    // for each change of the spec.
    b("", "v1", "Pod", "pods", true).short(&["po"]).all().status().generation().smp(SmpKind::Pod),
    b("", "v1", "Node", "nodes", false).short(&["no"]).status(),
    b("", "v1", "Service", "services", true).short(&["svc"]).all().status().smp(SmpKind::Service),
    b("", "v1", "Endpoints", "endpoints", true).short(&["ep"]),
    b("", "v1", "ConfigMap", "configmaps", true).short(&["cm"]),
    b("", "v1", "Secret", "secrets", true),
    b("", "v1", "ServiceAccount", "serviceaccounts", true).short(&["sa"]),
    b("", "v1", "Event", "events", true).short(&["ev"]),
    b("", "v1", "PersistentVolumeClaim", "persistentvolumeclaims", true).short(&["pvc"]).status(),
    b("", "v1", "PersistentVolume", "persistentvolumes", false).short(&["pv"]).status(),
    b("", "v1", "PodTemplate", "podtemplates", true).smp(SmpKind::TemplateAt(&["template"])),
    b("", "v1", "ReplicationController", "replicationcontrollers", true)
        .short(&["rc"])
        .all()
        .status()
        .scale()
        .generation()
        .smp(TEMPLATE),
    b("apps", "v1", "Deployment", "deployments", true)
        .short(&["deploy"])
        .all()
        .status()
        .scale()
        .generation()
        .smp(TEMPLATE),
    b("apps", "v1", "ReplicaSet", "replicasets", true)
        .short(&["rs"])
        .all()
        .status()
        .scale()
        .generation()
        .smp(TEMPLATE),
    b("apps", "v1", "StatefulSet", "statefulsets", true)
        .short(&["sts"])
        .all()
        .status()
        .scale()
        .generation()
        .smp(TEMPLATE),
    b("apps", "v1", "DaemonSet", "daemonsets", true)
        .short(&["ds"])
        .all()
        .status()
        .generation()
        .smp(TEMPLATE),
    b("apps", "v1", "ControllerRevision", "controllerrevisions", true),
    b("batch", "v1", "Job", "jobs", true).all().status().generation().smp(TEMPLATE),
    b("batch", "v1", "CronJob", "cronjobs", true)
        .short(&["cj"])
        .all()
        .status()
        .generation()
        .smp(SmpKind::TemplateAt(&["spec", "jobTemplate", "spec", "template"])),
    // Stored and served; no autoscaler runs (there are no metrics to scale on).
    b("autoscaling", "v2", "HorizontalPodAutoscaler", "horizontalpodautoscalers", true)
        .short(&["hpa"])
        .status(),
    b("coordination.k8s.io", "v1", "Lease", "leases", true),
    b("discovery.k8s.io", "v1", "EndpointSlice", "endpointslices", true).generation(),
    b("networking.k8s.io", "v1", "Ingress", "ingresses", true)
        .short(&["ing"])
        .status()
        .generation(),
    b("networking.k8s.io", "v1", "IngressClass", "ingressclasses", false).generation(),
    b("rbac.authorization.k8s.io", "v1", "ClusterRole", "clusterroles", false),
    b("rbac.authorization.k8s.io", "v1", "ClusterRoleBinding", "clusterrolebindings", false),
    b("rbac.authorization.k8s.io", "v1", "Role", "roles", true),
    b("rbac.authorization.k8s.io", "v1", "RoleBinding", "rolebindings", true),
    // Answered, never stored: see `crate::rbac`.
    b("authorization.k8s.io", "v1", "SelfSubjectAccessReview", "selfsubjectaccessreviews", false),
    b("authentication.k8s.io", "v1", "SelfSubjectReview", "selfsubjectreviews", false),
    b("authentication.k8s.io", "v1", "TokenReview", "tokenreviews", false),
    b("events.k8s.io", "v1", "Event", "events", true).short(&["ev"]),
    b("policy", "v1", "PodDisruptionBudget", "poddisruptionbudgets", true)
        .short(&["pdb"])
        .status()
        .generation(),
    b(
        "admissionregistration.k8s.io",
        "v1",
        "MutatingWebhookConfiguration",
        "mutatingwebhookconfigurations",
        false,
    )
    .generation(),
    b(
        "admissionregistration.k8s.io",
        "v1",
        "ValidatingWebhookConfiguration",
        "validatingwebhookconfigurations",
        false,
    )
    .generation(),
    b("apiextensions.k8s.io", "v1", "CustomResourceDefinition", "customresourcedefinitions", false)
        .short(&["crd", "crds"])
        .status()
        .generation(),
];

fn columns_for(group: &str, plural: &str) -> Vec<Column> {
    use CellSource::*;
    match (group, plural) {
        ("", "pods") => vec![
            col("Ready", "string", 0, PodReady),
            col("Status", "string", 0, PodStatus),
            col("Restarts", "string", 0, PodRestarts),
            age(),
            col("IP", "string", 1, JsonPath(s(".status.podIP"))),
            col("Node", "string", 1, JsonPath(s(".spec.nodeName"))),
            col("Nominated Node", "string", 1, TextOr(s(".status.nominatedNodeName"), "<none>")),
            col("Readiness Gates", "string", 1, PodReadinessGates),
        ],
        ("", "namespaces") => vec![jp("Status", "string", ".status.phase"), age()],
        ("", "events") => vec![
            col("Last Seen", "string", 0, EventLastSeen),
            jp("Type", "string", ".type"),
            jp("Reason", "string", ".reason"),
            col("Object", "string", 0, EventObject),
            jp("Message", "string", ".message"),
        ],
        ("", "nodes") => vec![
            col("Status", "string", 0, NodeStatus),
            age(),
            jp("Version", "string", ".status.nodeInfo.kubeletVersion"),
        ],
        ("", "services") => vec![
            jp("Type", "string", ".spec.type"),
            jp("Cluster-IP", "string", ".spec.clusterIP"),
            col("Port(s)", "string", 0, ServicePorts),
            age(),
        ],
        ("", "configmaps") => vec![col("Data", "integer", 0, Count(s(".data"))), age()],
        ("", "secrets") => {
            vec![jp("Type", "string", ".type"), col("Data", "integer", 0, Count(s(".data"))), age()]
        }
        ("", "persistentvolumeclaims") => vec![
            col("Status", "string", 0, ClaimStatus),
            col("Volume", "string", 0, TextOr(s(".spec.volumeName"), "")),
            col("Capacity", "string", 0, ClaimCapacity),
            col("Access Modes", "string", 0, ClaimAccessModes),
            col("StorageClass", "string", 0, ClaimStorageClass),
            col(
                "VolumeAttributesClass",
                "string",
                0,
                TextOr(s(".spec.volumeAttributesClassName"), "<unset>"),
            ),
            age(),
            col("VolumeMode", "string", 1, TextOr(s(".spec.volumeMode"), "<unset>")),
        ],
        ("apps", "deployments") => vec![
            col("Ready", "string", 0, Ratio(s(".status.readyReplicas"), s(".spec.replicas"))),
            jp("Up-to-date", "integer", ".status.updatedReplicas"),
            jp("Available", "integer", ".status.availableReplicas"),
            age(),
        ],
        ("apps", "replicasets") | ("", "replicationcontrollers") => vec![
            jp("Desired", "integer", ".spec.replicas"),
            jp("Current", "integer", ".status.replicas"),
            jp("Ready", "integer", ".status.readyReplicas"),
            age(),
        ],
        ("apps", "statefulsets") => vec![
            col("Ready", "string", 0, Ratio(s(".status.readyReplicas"), s(".spec.replicas"))),
            age(),
        ],
        ("apps", "daemonsets") => vec![
            jp("Desired", "integer", ".status.desiredNumberScheduled"),
            jp("Current", "integer", ".status.currentNumberScheduled"),
            jp("Ready", "integer", ".status.numberReady"),
            jp("Up-to-date", "integer", ".status.updatedNumberScheduled"),
            jp("Available", "integer", ".status.numberAvailable"),
            col("Node Selector", "string", 0, Labels(s(".spec.template.spec.nodeSelector"))),
            age(),
        ],
        ("apps", "controllerrevisions") => vec![jp("Revision", "integer", ".revision"), age()],
        ("batch", "jobs") => vec![
            col("Status", "string", 0, JobStatus),
            col("Completions", "string", 0, JobCompletions),
            col("Duration", "string", 0, JobDuration),
            age(),
        ],
        ("batch", "cronjobs") => vec![
            jp("Schedule", "string", ".spec.schedule"),
            col("Timezone", "string", 0, CronJobTimeZone),
            jp("Suspend", "boolean", ".spec.suspend"),
            col("Active", "integer", 0, Count(s(".status.active"))),
            col("Last Schedule", "string", 0, CronJobLastSchedule),
            age(),
        ],
        ("discovery.k8s.io", "endpointslices") => vec![
            jp("AddressType", "string", ".addressType"),
            col("Ports", "string", 0, EndpointSlicePorts),
            col("Endpoints", "string", 0, EndpointSliceEndpoints),
            age(),
        ],
        ("networking.k8s.io", "ingresses") => vec![
            jp("Class", "string", ".spec.ingressClassName"),
            col("Hosts", "string", 0, IngressHosts),
            col("Address", "string", 0, IngressAddress),
            col("Ports", "string", 0, IngressPorts),
            age(),
        ],
        ("networking.k8s.io", "ingressclasses") => vec![
            jp("Controller", "string", ".spec.controller"),
            col("Parameters", "string", 0, IngressClassParameters),
            age(),
        ],
        ("coordination.k8s.io", "leases") => {
            vec![jp("Holder", "string", ".spec.holderIdentity"), age()]
        }
        ("policy", "poddisruptionbudgets") => vec![
            jp("Min Available", "string", ".spec.minAvailable"),
            jp("Max Unavailable", "string", ".spec.maxUnavailable"),
            jp("Allowed Disruptions", "integer", ".status.disruptionsAllowed"),
            age(),
        ],
        ("apiextensions.k8s.io", "customresourcedefinitions") => {
            vec![col("Created At", "date", 0, CellSource::CreatedAt)]
        }
        _ => vec![age()],
    }
}

fn field_selectors_for(group: &str, plural: &str) -> Vec<String> {
    let list: &[&str] = match (group, plural) {
        ("", "pods") => &[
            "spec.nodeName",
            "spec.restartPolicy",
            "spec.schedulerName",
            "spec.serviceAccountName",
            "spec.hostNetwork",
            "status.phase",
            "status.podIP",
            "status.nominatedNodeName",
        ],
        ("", "events") => &[
            "involvedObject.kind",
            "involvedObject.namespace",
            "involvedObject.name",
            "involvedObject.uid",
            "involvedObject.apiVersion",
            "involvedObject.resourceVersion",
            "involvedObject.fieldPath",
            "reason",
            "reportingComponent",
            "source",
            "type",
        ],
        ("", "secrets") => &["type"],
        ("", "nodes") => &["spec.unschedulable"],
        ("", "namespaces") => &["status.phase"],
        ("", "replicationcontrollers") => &["status.replicas"],
        ("apps", "replicasets") => &["status.replicas"],
        ("batch", "jobs") => &["status.successful"],
        _ => &[],
    };
    list.iter().map(|f| f.to_string()).collect()
}

fn singular_of(kind: &str) -> String {
    kind.to_ascii_lowercase()
}

/// The built-in resources, as data.
pub fn builtins() -> Vec<ResourceDef> {
    let mut out = Vec::new();
    for b in BUILTINS {
        let scale = b.scale.then(|| ScalePaths {
            spec_replicas: s(".spec.replicas"),
            status_replicas: s(".status.replicas"),
            label_selector: Some(s(".status.selector")),
        });
        let mut extra = Vec::new();
        if b.group.is_empty() && b.plural == "pods" {
            extra =
                vec![s("binding"), s("ephemeralcontainers"), s("eviction"), s("exec"), s("resize")];
        }
        if b.group.is_empty() && b.plural == "namespaces" {
            extra = vec![s("finalize")];
        }
        if b.group.is_empty() && b.plural == "serviceaccounts" {
            extra = vec![s("token")];
        }
        let alias = crate::builtin_conversion::alias(b.group, b.version, b.plural);
        let (storage_group, storage_version) =
            alias.map(|a| (a.storage_group, a.storage_version)).unwrap_or((b.group, b.version));
        let create_on_update = matches!(
            (storage_group, b.plural),
            ("", "endpoints") | ("coordination.k8s.io", "leases") | ("", "events") | ("", "nodes")
        );
        let mut verbs: Vec<String> = ALL_VERBS.iter().map(|v| v.to_string()).collect();
        if b.plural == "namespaces" {
            verbs.retain(|v| v != "deletecollection");
        }
        if matches!(b.plural, "selfsubjectaccessreviews" | "selfsubjectreviews" | "tokenreviews") {
            verbs.retain(|v| v == "create");
        }
        out.push(ResourceDef {
            group: s(b.group),
            version: s(b.version),
            storage_group: s(storage_group),
            storage_version: s(storage_version),
            kind: s(b.kind),
            list_kind: format!("{}List", b.kind),
            plural: s(b.plural),
            singular: singular_of(b.kind),
            namespaced: b.namespaced,
            verbs,
            short_names: b.short.iter().map(|x| x.to_string()).collect(),
            categories: b.categories.iter().map(|x| x.to_string()).collect(),
            status: b.status,
            scale,
            extra_subresources: extra,
            // An alias prints as the resource it is stored as (tables are computed from the
            // stored form).
            columns: columns_for(storage_group, b.plural),
            smp: b.smp,
            generation: b.generation,
            unconditional_update: true,
            create_on_update,
            field_selectors: alias
                .map(|a| a.served_fields())
                .unwrap_or_else(|| field_selectors_for(b.group, b.plural)),
            schema: None,
            openapi_schema: None,
            openapi_digest: 0,
            origin: Origin::BuiltIn,
        });
    }
    out
}
