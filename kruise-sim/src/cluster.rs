//! The API semantics over the store: create, get, list, update, patch, delete, subresources,
//! CRD registration and namespaces. Everything works on JSON; the HTTP layer only routes.

use crate::error::{ApiError, Cause, success_status};
use crate::jsonpath;
use crate::resources::{ResourceDef, SmpKind, builtins};
use crate::selector::{FieldSelector, LabelSelector};
use crate::store::{EventType, ObjKey, Store, TableKey, Write};
use crate::util::{
    check_label, check_subdomain, meta_mut, meta_str, name_suffix, now_rfc3339, uuid,
};
use crate::{crd, defaults};
use base64::Engine as _;
use serde_json::{Map, Value, json};
use std::sync::{Arc, RwLock};

/// Which part of an object a request addresses.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Sub {
    /// The object itself.
    Main,
    /// `/status`.
    Status,
    /// `/scale`.
    Scale,
}

/// How unknown fields are treated (`fieldValidation`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum FieldValidation {
    /// Drop them silently.
    Ignore,
    /// Drop them and warn.
    #[default]
    Warn,
    /// Reject the request.
    Strict,
}

/// Options of a write.
#[derive(Clone, Debug, Default)]
pub struct WriteOptions {
    /// `dryRun=All`.
    pub dry_run: bool,
    /// `fieldValidation`.
    pub field_validation: FieldValidation,
    /// `fieldManager`.
    pub field_manager: Option<String>,
    /// `force` (server-side apply takes conflicting fields over).
    pub force: bool,
    /// The write comes through `pods/resize` or `pods/ephemeralcontainers`, which may change
    /// what a pod update may not.
    pub(crate) pod_subresource: bool,
    /// The write is a patch (of this type, with this body), not a `PUT`: kube-apiserver words
    /// unknown fields and a changed `metadata.uid` differently for patches.
    pub(crate) patch: Option<(PatchType, Value)>,
    /// The stored Services, read before a write that may create a Service while it holds the
    /// store's lock (which is not reentrant), for the addresses and ports they hold.
    pub(crate) held_services: Option<Arc<Vec<Arc<Value>>>>,
}

const SERVICES: (&str, &str) = ("", "services");

/// A patch's media type.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum PatchType {
    /// `application/json-patch+json`.
    Json,
    /// `application/merge-patch+json`.
    Merge,
    /// `application/strategic-merge-patch+json`.
    Strategic,
    /// `application/apply-patch+yaml` (server-side apply).
    Apply,
}

/// Options of a delete (`DeleteOptions`).
#[derive(Clone, Debug, Default)]
pub struct DeleteOptions {
    /// `preconditions.uid`.
    pub uid: Option<String>,
    /// `preconditions.resourceVersion`.
    pub resource_version: Option<String>,
    /// `dryRun=All`.
    pub dry_run: bool,
    /// `propagationPolicy`.
    pub propagation: Option<String>,
    /// `gracePeriodSeconds` (used for pods when deletion is graceful).
    pub grace_period_seconds: Option<i64>,
}

/// Options of a list.
#[derive(Clone, Debug, Default)]
pub struct ListOptions {
    /// `labelSelector`.
    pub labels: LabelSelector,
    /// `fieldSelector`.
    pub fields: FieldSelector,
    /// `limit` (0: none).
    pub limit: usize,
    /// `continue`.
    pub continue_token: Option<String>,
}

/// One page of a list.
#[derive(Clone, Debug)]
pub struct ListPage {
    /// The items, in storage form.
    pub items: Vec<Arc<Value>>,
    /// The list's resourceVersion.
    pub rv: u64,
    /// The continue token, if more items follow.
    pub continue_token: Option<String>,
    /// How many items follow.
    pub remaining: Option<usize>,
}

struct Defs {
    builtin: Vec<Arc<ResourceDef>>,
    crd: Vec<Arc<ResourceDef>>,
}

/// The simulated cluster's API state.
pub struct Cluster {
    pub(crate) store: Store,
    defs: RwLock<Defs>,
    pub(crate) admission: crate::admission::Admission,
    pub(crate) faults: crate::faults::Faults,
    /// Deletes of the garbage collector and the namespace controller waiting for admission.
    pub(crate) deferred: crate::gc::Deferred,
    /// Pods are deleted gracefully (a kubelet finishes the deletion): set when simulated
    /// nodes are attached.
    graceful_pods: std::sync::atomic::AtomicBool,
    /// The service account tokens issued by TokenRequest.
    pub(crate) tokens: crate::tokens::Tokens,
    /// The serving CA's certificate, published in every namespace's `kube-root-ca.crt`.
    root_ca: std::sync::OnceLock<String>,
}

const CRDS: (&str, &str) = ("apiextensions.k8s.io", "customresourcedefinitions");

/// How many times an eviction re-reads a budget whose write lost a race (EvictionREST's
/// `EvictionsRetry` has 20 steps).
const EVICTION_RETRIES: u32 = 20;

impl Cluster {
    /// Answers a TokenRequest for the service account `namespace/name`: a token that
    /// authenticates as it (see [`crate::rbac`]), valid for `spec.expirationSeconds` (3600 by
    /// default) as far as the answer says.
    pub(crate) fn token_request(
        &self,
        namespace: &str,
        name: &str,
        request: &Value,
    ) -> Result<Value, ApiError> {
        let key = (String::new(), "serviceaccounts".to_string());
        let Some(account) = self.store.get(&key, &(namespace.to_string(), name.to_string())) else {
            return Err(ApiError::not_found("", "serviceaccounts", name));
        };
        let uid = meta_str(&account, "uid").unwrap_or_default().to_string();
        let mut spec = request.get("spec").cloned().unwrap_or_else(|| json!({}));
        let seconds = spec.get("expirationSeconds").and_then(Value::as_i64).unwrap_or(3600);
        if seconds < 600 {
            return Err(ApiError::invalid(
                "authentication.k8s.io",
                "TokenRequest",
                name,
                vec![Cause::invalid(
                    "spec.expirationSeconds",
                    &json!(seconds),
                    "may not specify a duration less than 10 minutes",
                )],
            ));
        }
        spec["expirationSeconds"] = json!(seconds);
        if spec.get("audiences").and_then(Value::as_array).is_none_or(Vec::is_empty) {
            spec["audiences"] = json!([crate::tokens::ISSUER]);
        }
        if spec.get("boundObjectRef").is_none() {
            spec["boundObjectRef"] = Value::Null;
        }
        let bound = match spec.get("boundObjectRef").filter(|r| !r.is_null()) {
            Some(reference) => Some(self.bound_object(namespace, reference)?),
            None => None,
        };
        let audiences = crate::util::strings(spec.get("audiences"));
        let now = jiff::Timestamp::now();
        let grant = crate::tokens::Grant {
            namespace,
            account: name,
            account_uid: &uid,
            audiences,
            expiration_seconds: seconds,
            bound,
        };
        let token = self.tokens.issue(&grant, now.as_second());
        let expires = now
            .checked_add(jiff::SignedDuration::from_secs(seconds))
            .map(|t| t.strftime("%Y-%m-%dT%H:%M:%SZ").to_string())
            .unwrap_or_default();
        Ok(json!({
            "kind": "TokenRequest",
            "apiVersion": "authentication.k8s.io/v1",
            "metadata": {"name": name, "namespace": namespace, "uid": uid, "creationTimestamp": null},
            "spec": spec,
            "status": {"token": token, "expirationTimestamp": expires},
        }))
    }
}

impl Cluster {
    /// The object a TokenRequest binds its token to: it must exist, with the uid named if
    /// one is; a pod brings its node.
    fn bound_object(
        &self,
        namespace: &str,
        reference: &Value,
    ) -> Result<crate::tokens::Bound, ApiError> {
        let kind = reference.get("kind").and_then(Value::as_str).unwrap_or_default();
        let name = reference.get("name").and_then(Value::as_str).unwrap_or_default();
        let (claim, plural, ns) = match kind {
            "Pod" => ("pod", "pods", namespace),
            "Secret" => ("secret", "secrets", namespace),
            "Node" => ("node", "nodes", ""),
            other => {
                return Err(ApiError::bad_request(format!(
                    "cannot bind token to object of kind {other:?}"
                )));
            }
        };
        let key = (String::new(), plural.to_string());
        let Some(object) = self.store.get(&key, &(ns.to_string(), name.to_string())) else {
            return Err(ApiError::not_found("", plural, name));
        };
        let uid = meta_str(&object, "uid").unwrap_or_default().to_string();
        if let Some(wanted) = reference.get("uid").and_then(Value::as_str).filter(|u| !u.is_empty())
            && wanted != uid
        {
            return Err(ApiError::new(
                409,
                "Conflict",
                format!(
                    "Operation cannot be fulfilled on {kind} {name:?}: the UID in the bound object reference ({wanted}) does not match the UID in record. The object might have been deleted and then recreated"
                ),
            ));
        }
        let node = (kind == "Pod")
            .then(|| object.pointer("/spec/nodeName").and_then(Value::as_str))
            .flatten()
            .filter(|n| !n.is_empty())
            .and_then(|node| {
                let key = (String::new(), "nodes".to_string());
                let found = self.store.get(&key, &(String::new(), node.to_string()))?;
                Some((node.to_owned(), meta_str(&found, "uid").unwrap_or_default().to_string()))
            });
        Ok(crate::tokens::Bound { claim, name: name.to_owned(), uid, node })
    }

    /// Answers a TokenReview (see [`crate::tokens`]).
    pub(crate) fn token_review(&self, review: &Value) -> Value {
        let spec = review.get("spec").cloned().unwrap_or_else(|| json!({}));
        let token = spec.get("token").and_then(Value::as_str).unwrap_or_default();
        let audiences = crate::util::strings(spec.get("audiences"));
        let exists = |plural: &str, ns: &str, name: &str| {
            let key = (String::new(), plural.to_string());
            let object = self.store.get(&key, &(ns.to_string(), name.to_string()))?;
            meta_str(&object, "uid").map(str::to_owned)
        };
        let status =
            self.tokens.review(token, &audiences, jiff::Timestamp::now().as_second(), &exists);
        json!({"kind": "TokenReview", "apiVersion": "authentication.k8s.io/v1", "metadata": {},
            "spec": spec, "status": status})
    }
}

/// The scale subresource's checks of a custom resource's replica counts (apiextensions'
/// `ValidateScaleSpec` and `ValidateScaleStatus`), after the schema's: the value at `path`
/// (`.spec.replicas`), when present, is an integer from 0 to 2^31-1.
fn scale_replicas_causes(obj: &Value, path: &str) -> Vec<Cause> {
    let pointer = path.replace('.', "/");
    let (value, shown) = match obj.pointer(&pointer) {
        None | Some(Value::Null) => return Vec::new(),
        Some(Value::Number(n)) if n.is_i64() => (n.as_i64().unwrap_or_default(), None),
        Some(other) => {
            let (text, type_) = match other {
                Value::String(s) => (s.clone(), "string"),
                Value::Number(n) => (n.to_string(), "float64"),
                Value::Bool(b) => (b.to_string(), "bool"),
                Value::Array(_) => ("[...]".to_owned(), "[]interface {}"),
                Value::Object(_) => ("map[...]".to_owned(), "map[string]interface {}"),
                Value::Null => (String::new(), ""),
            };
            (
                0,
                Some(format!(
                    "{path} accessor error: {text} is of the type {type_}, expected int64"
                )),
            )
        }
    };
    let why = match shown {
        Some(why) => why,
        None if value < 0 => "should be a non-negative integer".to_owned(),
        None if value > i64::from(i32::MAX) => {
            format!("should be less than or equal to {}", i32::MAX)
        }
        None => return Vec::new(),
    };
    vec![Cause::invalid(path, &json!(value), &why)]
}

/// An update of a ConfigMap or Secret that was `immutable: true`: its data and the flag
/// itself stay as they are (kube-apiserver's ConfigMap and Secret update validation).
fn validate_immutable(def: &ResourceDef, old: &Value, new: &Value) -> Result<(), ApiError> {
    let fields: &[&str] = match (def.group.as_str(), def.plural.as_str()) {
        ("", "configmaps") => &["data", "binaryData"],
        ("", "secrets") => &["data"],
        _ => return Ok(()),
    };
    if old.get("immutable") != Some(&json!(true)) {
        return Ok(());
    }
    const WHY: &str = "field is immutable when `immutable` is set";
    let mut causes = Vec::new();
    if new.get("immutable") != Some(&json!(true)) {
        causes.push(Cause::forbidden("immutable", WHY));
    }
    // An empty map and no map are the same to the Go types.
    let map = |v: &Value, field: &str| match v.get(field) {
        Some(Value::Object(m)) if !m.is_empty() => Some(m.clone()),
        _ => None,
    };
    for field in fields {
        if map(old, field) != map(new, field) {
            causes.push(Cause::forbidden(field, WHY));
        }
    }
    if causes.is_empty() {
        return Ok(());
    }
    let name = meta_str(new, "name").unwrap_or_default().to_string();
    Err(ApiError::invalid(&def.group, &def.kind, &name, causes))
}

/// Whether `def` serves Ingresses (`networking.k8s.io`).
fn is_ingress(def: &ResourceDef) -> bool {
    (def.group.as_str(), def.plural.as_str()) == ("networking.k8s.io", "ingresses")
}

fn key_of(def: &ResourceDef) -> TableKey {
    def.key()
}

/// The object as served in `def`'s version.
pub fn present(def: &ResourceDef, obj: &Value) -> Value {
    let mut out = obj.clone();
    if let Some(m) = out.as_object_mut() {
        m.insert("apiVersion".into(), json!(def.api_version()));
        m.insert("kind".into(), json!(def.kind));
    }
    out
}

/// Labels `obj` with the storage apiVersion and kind (the content is not converted;
/// `Cluster::to_stored` converts).
pub(crate) fn to_storage(def: &ResourceDef, obj: &mut Value) {
    if let Some(m) = obj.as_object_mut() {
        m.insert("apiVersion".into(), json!(def.storage_api_version()));
        m.insert("kind".into(), json!(def.kind));
    }
}

fn rv_of(obj: &Value) -> Option<&str> {
    meta_str(obj, "resourceVersion").filter(|s| !s.is_empty())
}

/// The label selector of a `LabelSelector` object, in its string form.
pub fn format_label_selector(sel: &Value) -> String {
    let mut parts = Vec::new();
    if let Some(ml) = sel.get("matchLabels").and_then(Value::as_object) {
        for (k, v) in ml {
            parts.push(format!("{k}={}", v.as_str().unwrap_or_default()));
        }
    }
    if let Some(exprs) = sel.get("matchExpressions").and_then(Value::as_array) {
        for e in exprs {
            let key = e.get("key").and_then(Value::as_str).unwrap_or_default();
            let values: Vec<&str> = e
                .get("values")
                .and_then(Value::as_array)
                .map(|a| a.iter().filter_map(Value::as_str).collect())
                .unwrap_or_default();
            match e.get("operator").and_then(Value::as_str).unwrap_or_default() {
                "In" => parts.push(format!("{key} in ({})", values.join(","))),
                "NotIn" => parts.push(format!("{key} notin ({})", values.join(","))),
                "Exists" => parts.push(key.to_string()),
                "DoesNotExist" => parts.push(format!("!{key}")),
                _ => {}
            }
        }
    }
    parts.join(",")
}

fn bad_body_kind(def: &ResourceDef, obj: &Value) -> Result<(), ApiError> {
    if let Some(av) = obj.get("apiVersion").and_then(Value::as_str) {
        let served = def.api_version();
        // Another version of a CRD is accepted (the content is taken as the served one's);
        // another group is not.
        let storage_ok = def.group == def.storage_group && av == def.storage_api_version();
        if av != served && !storage_ok {
            return Err(ApiError::bad_request(format!(
                "the API version in the data ({av}) does not match the expected API version ({served})"
            )));
        }
    }
    if let Some(k) = obj.get("kind").and_then(Value::as_str)
        && k != def.kind
    {
        return Err(ApiError::bad_request(format!(
            "the kind in the data ({k}) does not match the expected kind ({})",
            def.kind
        )));
    }
    Ok(())
}

/// A pod status write that clears `status.observedGeneration` keeps the stored one, as
/// kube-apiserver's pod status strategy does (only the kubelet moves it).
fn keep_observed_generation(def: &ResourceDef, old: &Value, new: &mut Value) {
    if (def.group.as_str(), def.plural.as_str()) != ("", "pods") {
        return;
    }
    let cleared =
        new.pointer("/status/observedGeneration").and_then(Value::as_i64).unwrap_or(0) == 0;
    if let (true, Some(kept)) = (cleared, old.pointer("/status/observedGeneration").cloned())
        && let Some(status) = new.get_mut("status").and_then(Value::as_object_mut)
    {
        status.insert("observedGeneration".into(), kept);
    }
}

/// Copies `status` of `from` into `to` (removing it when `from` has none).
fn copy_status(from: &Value, to: &mut Value) {
    if let Some(m) = to.as_object_mut() {
        match from.get("status") {
            Some(s) => {
                m.insert("status".into(), s.clone());
            }
            None => {
                m.remove("status");
            }
        }
    }
}

/// The annotation in which apps/v1 DaemonSets show kube-apiserver's internal
/// `spec.templateGeneration`.
const DAEMONSET_TEMPLATE_GENERATION: &str = "deprecated.daemonset.template.generation";

/// Keeps a DaemonSet's template generation (`old` is the stored object on an update): 1 on
/// create, the stored one plus one when `spec.template` changes, else the stored one.
fn daemonset_template_generation(def: &ResourceDef, old: Option<&Value>, new: &mut Value) {
    if (def.group.as_str(), def.plural.as_str()) != ("apps", "daemonsets") {
        return;
    }
    let generation = match old {
        None => 1,
        Some(old) => {
            let stored = old
                .pointer("/metadata/annotations")
                .and_then(|a| a.get(DAEMONSET_TEMPLATE_GENERATION))
                .and_then(Value::as_str)
                .and_then(|g| g.parse::<i64>().ok())
                .unwrap_or(1);
            let changed = old.pointer("/spec/template") != new.pointer("/spec/template");
            if changed { stored + 1 } else { stored }
        }
    };
    if let Some(meta) = meta_mut(new) {
        let annotations = meta.entry("annotations").or_insert_with(|| json!({}));
        if !annotations.is_object() {
            *annotations = json!({});
        }
        if let Some(annotations) = annotations.as_object_mut() {
            annotations.insert(DAEMONSET_TEMPLATE_GENERATION.into(), json!(generation.to_string()));
        }
    }
}

fn without(obj: &Value, keys: &[&str]) -> Value {
    let mut o = obj.clone();
    if let Some(m) = o.as_object_mut() {
        for k in keys {
            m.remove(*k);
        }
    }
    o
}

fn equal_ignoring_rv(a: &Value, b: &Value) -> bool {
    let strip = |v: &Value| {
        let mut v = v.clone();
        if let Some(m) = v.get_mut("metadata").and_then(Value::as_object_mut) {
            m.remove("resourceVersion");
        }
        v
    };
    strip(a) == strip(b)
}

fn finalizers(obj: &Value) -> Vec<Value> {
    obj.pointer("/metadata/finalizers").and_then(Value::as_array).cloned().unwrap_or_default()
}

impl Cluster {
    /// A cluster serving the built-in resources, with `history` watch events kept per resource.
    pub fn new(history: usize) -> Self {
        Cluster {
            store: Store::new(history),
            defs: RwLock::new(Defs {
                builtin: builtins().into_iter().map(Arc::new).collect(),
                crd: Vec::new(),
            }),
            admission: Default::default(),
            faults: Default::default(),
            deferred: Default::default(),
            graceful_pods: std::sync::atomic::AtomicBool::new(false),
            tokens: crate::tokens::Tokens::default(),
            root_ca: std::sync::OnceLock::new(),
        }
    }

    /// Makes pod deletion graceful (as with kubelets: `deletionTimestamp` plus
    /// `deletionGracePeriodSeconds`, and the kubelet deletes with grace 0) or immediate.
    pub fn set_graceful_pod_deletion(&self, on: bool) {
        self.graceful_pods.store(on, std::sync::atomic::Ordering::Relaxed);
    }

    /// The grace period a delete of `old` gets: 0 unless pod deletion is graceful and the
    /// pod is bound and not terminal; else the request's, else the pod's
    /// `terminationGracePeriodSeconds` (30 by default).
    fn pod_grace(&self, def: &ResourceDef, old: &Value, opts: &DeleteOptions) -> i64 {
        let graceful = self.graceful_pods.load(std::sync::atomic::Ordering::Relaxed);
        if !(graceful && def.group.is_empty() && def.plural == "pods") {
            return 0;
        }
        let bound =
            old.pointer("/spec/nodeName").and_then(Value::as_str).is_some_and(|n| !n.is_empty());
        let phase = old.pointer("/status/phase").and_then(Value::as_str).unwrap_or_default();
        if !bound || phase == "Succeeded" || phase == "Failed" {
            return 0;
        }
        opts.grace_period_seconds
            .or_else(|| old.pointer("/spec/terminationGracePeriodSeconds").and_then(Value::as_i64))
            .unwrap_or(30)
            .max(0)
    }

    /// The admission webhooks' registered services.
    pub fn admission(&self) -> &crate::admission::Admission {
        &self.admission
    }

    /// The injected faults.
    pub fn faults(&self) -> &crate::faults::Faults {
        &self.faults
    }

    /// The store.
    pub fn store(&self) -> &Store {
        &self.store
    }

    /// Every served resource definition: built-ins first, then CRDs.
    pub fn all_defs(&self) -> Vec<Arc<ResourceDef>> {
        let d = self.defs.read().unwrap_or_else(|e| e.into_inner());
        d.builtin.iter().chain(d.crd.iter()).cloned().collect()
    }

    /// The definition serving `group/version/plural`.
    pub fn resolve(&self, group: &str, version: &str, plural: &str) -> Option<Arc<ResourceDef>> {
        let d = self.defs.read().unwrap_or_else(|e| e.into_inner());
        d.builtin
            .iter()
            .chain(d.crd.iter())
            .find(|r| r.group == group && r.version == version && r.plural == plural)
            .cloned()
    }

    fn def_for(&self, group: &str, plural: &str) -> Option<Arc<ResourceDef>> {
        let d = self.defs.read().unwrap_or_else(|e| e.into_inner());
        d.builtin
            .iter()
            .chain(d.crd.iter())
            .find(|r| r.group == group && r.plural == plural)
            .cloned()
    }

    /// Re-reads the CRDs in the store and serves what they define.
    fn sync_crds(&self) {
        let (crds, _) = self.store.list(&(CRDS.0.to_string(), CRDS.1.to_string()), None);
        let mut defs = Vec::new();
        for c in &crds {
            if c.pointer("/metadata/deletionTimestamp").is_some() {
                continue;
            }
            defs.extend(crd::defs(c).into_iter().map(Arc::new));
        }
        let mut d = self.defs.write().unwrap_or_else(|e| e.into_inner());
        d.crd = defs;
    }

    pub(crate) fn check_namespace(&self, def: &ResourceDef, ns: &str) -> Result<(), ApiError> {
        if !def.namespaced {
            return Ok(());
        }
        let nsobj = self
            .store
            .get(&(String::new(), "namespaces".into()), &(String::new(), ns.to_string()))
            .ok_or_else(|| ApiError::not_found("", "namespaces", ns))?;
        if nsobj.pointer("/metadata/deletionTimestamp").is_some() {
            let name = "";
            return Err(ApiError {
                code: 403,
                reason: "Forbidden",
                message: format!(
                    "{} {name:?} is forbidden: unable to create new content in namespace {ns} because it is being terminated",
                    crate::error::qualified(&def.group, &def.plural)
                ),
                // The cause kube-apiserver's NamespaceLifecycle admission adds, which
                // controllers read to drop the create quietly.
                details: Some(json!({"group": def.group, "kind": def.plural, "causes": [{
                    "reason": "NamespaceTerminating",
                    "message": format!("namespace {ns} is being terminated"),
                    "field": "metadata.namespace",
                }]})),
            });
        }
        Ok(())
    }

    /// Prunes, defaults and validates a custom resource (on an update, `old` is the stored
    /// object, which CEL transition rules compare with); returns warnings.
    fn check_custom(
        &self,
        def: &ResourceDef,
        obj: &mut Value,
        old: Option<&Value>,
        fv: FieldValidation,
    ) -> Result<Vec<String>, ApiError> {
        let Some(schema) = def.schema.clone() else { return Ok(Vec::new()) };
        let unknown = crate::schema::prune(obj, &schema);
        let mut warnings = Vec::new();
        if !unknown.is_empty() {
            let listed: Vec<String> =
                unknown.iter().map(|u| format!("unknown field {u:?}")).collect();
            match fv {
                FieldValidation::Strict => {
                    return Err(ApiError::bad_request(format!(
                        "{kind} in version {v:?} cannot be handled as a {kind}: strict decoding error: {}",
                        listed.join(", "),
                        kind = def.kind,
                        v = def.version
                    )));
                }
                FieldValidation::Warn => warnings = listed,
                FieldValidation::Ignore => {}
            }
        }
        crate::schema::default(obj, &schema);
        let mut causes = crate::schema::validate_update(obj, old, &schema);
        if let Some(scale) = &def.scale {
            causes.extend(scale_replicas_causes(obj, &scale.spec_replicas));
            causes.extend(scale_replicas_causes(obj, &scale.status_replicas));
        }
        if !causes.is_empty() {
            let name = meta_str(obj, "name").unwrap_or_default().to_string();
            return Err(ApiError::invalid(&def.group, &def.kind, &name, causes));
        }
        Ok(warnings)
    }

    fn validate_builtin(
        &self,
        def: &ResourceDef,
        obj: &Value,
        old: Option<&Value>,
    ) -> Result<(), ApiError> {
        let mut causes = Vec::new();
        // Pod specs, and the pod templates of the built-in workloads.
        let pod_spec_path = match (def.group.as_str(), def.plural.as_str()) {
            ("", "pods") => Some("spec"),
            ("", "podtemplates") => Some("template.spec"),
            ("apps", "deployments" | "replicasets" | "statefulsets" | "daemonsets")
            | ("batch", "jobs") => Some("spec.template.spec"),
            ("batch", "cronjobs") => Some("spec.jobTemplate.spec.template.spec"),
            _ => None,
        };
        if let Some(path) = pod_spec_path {
            let pointer = format!("/{}", path.replace('.', "/"));
            causes.extend(crate::pod_validation::pod_spec(obj.pointer(&pointer), path));
        }
        if def.group == "apps"
            && ["deployments", "replicasets", "statefulsets", "daemonsets"]
                .contains(&def.plural.as_str())
        {
            let sel = obj.pointer("/spec/selector");
            if sel.is_none() {
                causes.push(Cause::required("spec.selector", ""));
            } else if let Some(s) = sel {
                let labels =
                    obj.pointer("/spec/template/metadata/labels").and_then(Value::as_object);
                let parsed = LabelSelector::parse(&format_label_selector(s));
                if let Ok(p) = parsed
                    && !p.matches(labels)
                {
                    causes.push(Cause::invalid(
                        "spec.template.metadata.labels",
                        &obj.pointer("/spec/template/metadata/labels")
                            .cloned()
                            .unwrap_or(json!({})),
                        "`selector` does not match template `labels`",
                    ));
                }
            }
        }
        // `ValidateDeploymentStrategy`: a Recreate deployment has no rolling parameters.
        if (def.group.as_str(), def.plural.as_str()) == ("apps", "deployments")
            && obj.pointer("/spec/strategy/type").and_then(Value::as_str) == Some("Recreate")
            && obj.pointer("/spec/strategy/rollingUpdate").is_some_and(|r| !r.is_null())
        {
            causes.push(Cause::forbidden(
                "spec.strategy.rollingUpdate",
                "may not be specified when strategy `type` is 'Recreate'",
            ));
        }
        use crate::batch_validation::{JobSpecAt, job_spec};
        let uid = meta_str(obj, "uid").unwrap_or_default();
        match (def.group.as_str(), def.plural.as_str()) {
            ("batch", "jobs") => {
                causes.extend(job_spec(obj.get("spec"), "spec", JobSpecAt::Job, uid))
            }
            ("admissionregistration.k8s.io", "mutatingwebhookconfigurations") => {
                causes.extend(crate::webhook_validation::configuration(obj, old, true))
            }
            ("discovery.k8s.io", "endpointslices") => {
                causes.extend(crate::endpointslice_validation::endpoint_slice(obj, old))
            }
            ("networking.k8s.io", "ingresses") => {
                causes.extend(crate::ingress_validation::ingress(obj, old))
            }
            ("networking.k8s.io", "ingressclasses") => {
                causes.extend(crate::ingress_validation::ingress_class(obj, old))
            }
            ("admissionregistration.k8s.io", "validatingwebhookconfigurations") => {
                causes.extend(crate::webhook_validation::configuration(obj, old, false))
            }
            ("batch", "cronjobs") => {
                #[cfg(any(feature = "smp", feature = "controllers"))]
                causes.extend(crate::batch_validation::cron_job(obj, old));
                causes.extend(job_spec(
                    obj.pointer("/spec/jobTemplate/spec"),
                    "spec.jobTemplate.spec",
                    JobSpecAt::CronJobTemplate,
                    uid,
                ))
            }
            _ => {}
        }
        if causes.is_empty() {
            Ok(())
        } else {
            let name = meta_str(obj, "name").unwrap_or_default().to_string();
            Err(ApiError::invalid(&def.group, &def.kind, &name, causes))
        }
    }

    fn validate_meta(&self, def: &ResourceDef, obj: &Value) -> Result<(), ApiError> {
        let causes = self.meta_causes(def, obj)?;
        if causes.is_empty() {
            Ok(())
        } else {
            let name = meta_str(obj, "name").unwrap_or_default();
            Err(ApiError::invalid(&def.group, &def.kind, name, causes))
        }
    }

    /// What `ValidateObjectMeta` finds in an object's metadata: its name, labels,
    /// annotations, owner references and finalizers. A label or annotation map that does
    /// not decode is a `BadRequest`.
    fn meta_causes(&self, def: &ResourceDef, obj: &Value) -> Result<Vec<Cause>, ApiError> {
        let name = meta_str(obj, "name").unwrap_or_default();
        let label_names =
            def.group.is_empty() && (def.plural == "namespaces" || def.plural == "services");
        for field in ["labels", "annotations"] {
            if let Some(v) = obj.pointer(&format!("/metadata/{field}")) {
                if let Some(m) = v.as_object() {
                    if let Some((k, _)) = m.iter().find(|(_, v)| !v.is_string()) {
                        return Err(ApiError::bad_request(format!(
                            "{} in version {:?} cannot be handled as a {}: json: cannot unmarshal non-string into Go struct field ObjectMeta.metadata.{field} of type string (key {k:?})",
                            def.kind, def.version, def.kind
                        )));
                    }
                } else if !v.is_null() {
                    return Err(ApiError::bad_request(format!(
                        "{} in version {:?} cannot be handled as a {}: json: cannot unmarshal {} into Go struct field ObjectMeta.metadata.{field} of type map[string]string",
                        def.kind,
                        def.version,
                        def.kind,
                        json_kind(v)
                    )));
                }
            }
        }
        let mut causes = Vec::new();
        let check = if label_names { check_label(name) } else { check_subdomain(name) };
        if let Err(msg) = check {
            causes.push(Cause::invalid("metadata.name", &json!(name), &msg));
        }
        if let Some(meta) = obj.get("metadata").and_then(Value::as_object) {
            causes.extend(crate::meta_validation::object_meta_causes(meta));
        }
        Ok(causes)
    }

    /// Builds a new object from a create body: metadata, status reset, defaults, validation.
    pub(crate) fn build_new(
        &self,
        def: &ResourceDef,
        ns: &str,
        mut obj: Value,
        opts: &WriteOptions,
    ) -> Result<(Value, Vec<String>), ApiError> {
        if !obj.is_object() {
            return Err(ApiError::bad_request(format!(
                "Object 'Kind' is missing in '{}'",
                serde_json::to_string(&obj).unwrap_or_default()
            )));
        }
        bad_body_kind(def, &obj)?;
        to_storage(def, &mut obj);
        let Some(meta) = meta_mut(&mut obj) else {
            return Err(ApiError::bad_request("metadata must be an object"));
        };
        if def.namespaced {
            match meta.get("namespace").and_then(Value::as_str) {
                Some(n) if !n.is_empty() && n != ns => {
                    return Err(ApiError::bad_request(
                        "the namespace of the provided object does not match the namespace sent on the request",
                    ));
                }
                _ => {
                    meta.insert("namespace".into(), json!(ns));
                }
            }
        } else {
            meta.remove("namespace");
        }
        if meta.get("resourceVersion").and_then(Value::as_str).is_some_and(|s| !s.is_empty()) {
            return Err(ApiError::bad_request(
                "resourceVersion should not be set on objects to be created",
            ));
        }
        let name = meta.get("name").and_then(Value::as_str).unwrap_or("").to_string();
        if name.is_empty() {
            match meta.get("generateName").and_then(Value::as_str).filter(|g| !g.is_empty()) {
                Some(g) => {
                    let generated = format!("{g}{}", name_suffix());
                    meta.insert("name".into(), json!(generated));
                }
                None => {
                    return Err(ApiError::invalid(
                        &def.group,
                        &def.kind,
                        "",
                        vec![Cause::required("metadata.name", "name or generateName is required")],
                    ));
                }
            }
        }
        meta.insert("uid".into(), json!(uuid()));
        meta.insert("creationTimestamp".into(), json!(now_rfc3339()));
        meta.remove("deletionTimestamp");
        meta.remove("deletionGracePeriodSeconds");
        meta.remove("resourceVersion");
        meta.remove("selfLink");
        meta.remove("managedFields");
        if def.generation {
            meta.insert("generation".into(), json!(1));
        } else {
            meta.remove("generation");
        }
        daemonset_template_generation(def, None, &mut obj);
        self.validate_meta(def, &obj)?;
        // Status is not set on create where a status subresource exists.
        if def.status {
            let status = match (def.group.as_str(), def.plural.as_str()) {
                ("", "nodes") => obj.get("status").cloned(),
                ("", "pods") => Some(json!({
                    "phase": "Pending",
                    "qosClass": defaults::qos_class(obj.get("spec").unwrap_or(&Value::Null)),
                })),
                ("", "namespaces") => Some(json!({"phase": "Active"})),
                ("", "persistentvolumeclaims") | ("", "persistentvolumes") => {
                    Some(json!({"phase": "Pending"}))
                }
                ("", "services") | ("networking.k8s.io", "ingresses") => {
                    Some(json!({"loadBalancer": {}}))
                }
                _ if def.is_custom() => None,
                _ => Some(json!({})),
            };
            if let Some(m) = obj.as_object_mut() {
                match status {
                    Some(s) => m.insert("status".into(), s),
                    None => m.remove("status"),
                };
            }
        }
        let mut warnings;
        if def.is_custom() {
            warnings = self.check_custom(def, &mut obj, None, opts.field_validation)?;
        } else {
            warnings = check_builtin_fields(def, &mut obj, opts.field_validation)?;
            defaults::apply(&def.group, &def.plural, &mut obj);
            if (def.group.as_str(), def.plural.as_str()) == SERVICES {
                let held = match &opts.held_services {
                    Some(held) => Arc::clone(held),
                    None => Arc::new(self.store.list(&key_of(def), None).0),
                };
                crate::service_ips::assign_on_create(&mut obj, &held)?;
            }
            self.validate_builtin(def, &obj, None)?;
            if is_ingress(def) {
                warnings.extend(crate::ingress_validation::create_warnings(&obj));
            }
            if def.plural == "events" && (def.group.is_empty() || def.group == "events.k8s.io") {
                let strict = def.group == "events.k8s.io";
                let causes = crate::event_validation::create_causes(&obj, strict);
                if !causes.is_empty() {
                    let name = meta_str(&obj, "name").unwrap_or_default().to_string();
                    return Err(ApiError::invalid(&def.group, &def.kind, &name, causes));
                }
            }
        }
        if (def.group.as_str(), def.plural.as_str()) == CRDS {
            crd::prepare(&mut obj, None)?;
        }
        if !def.is_custom() {
            crate::go_json::normalize_object(&mut obj);
        }
        crate::managed::track_update(def, None, &mut obj, opts.field_manager.as_deref(), "");
        Ok((obj, warnings))
    }

    /// Creates an object; answers it as stored, with warnings.
    pub fn create(
        &self,
        def: &ResourceDef,
        ns: &str,
        body: Value,
        opts: &WriteOptions,
    ) -> Result<(Value, Vec<String>), ApiError> {
        self.check_namespace(def, ns)?;
        let mut body = body;
        if def.group.is_empty() && def.plural == "pods" {
            crate::service_accounts::admit_pod(self, ns, &mut body)?;
        }
        self.admit_ingress(def, &mut body);
        let (obj, warnings) = self.build_new(def, ns, body, opts)?;
        Ok((self.commit_create(def, obj, opts)?, warnings))
    }

    /// Stores a new object built by `build_new`; answers it as served.
    pub(crate) fn commit_create(
        &self,
        def: &ResourceDef,
        obj: Value,
        opts: &WriteOptions,
    ) -> Result<Value, ApiError> {
        let name = meta_str(&obj, "name").unwrap_or_default().to_string();
        let ns = meta_str(&obj, "namespace").unwrap_or_default().to_string();
        let key = (if def.namespaced { ns } else { String::new() }, name.clone());
        let written = self.store.write(&key_of(def), &key, opts.dry_run, |cur| {
            if cur.is_some() {
                return Err(ApiError::already_exists(&def.group, &def.plural, &name));
            }
            Ok(Write::Put(obj))
        })?;
        if !opts.dry_run {
            self.after_write(def, &written.event, &written.object);
        }
        Ok(present(def, &written.object))
    }

    /// A create body as admission webhooks see it: checked, in the served version, with its
    /// namespace and the defaults the real server applies when decoding.
    pub(crate) fn creation_view(
        &self,
        def: &ResourceDef,
        ns: &str,
        mut obj: Value,
    ) -> Result<Value, ApiError> {
        if !obj.is_object() {
            return Err(ApiError::bad_request(format!(
                "Object 'Kind' is missing in '{}'",
                serde_json::to_string(&obj).unwrap_or_default()
            )));
        }
        bad_body_kind(def, &obj)?;
        if def.namespaced
            && let Some(meta) = meta_mut(&mut obj)
            && meta.get("namespace").and_then(Value::as_str).is_none_or(str::is_empty)
        {
            meta.insert("namespace".into(), json!(ns));
        }
        if def.is_custom() {
            if let Some(schema) = def.schema.clone() {
                crate::schema::default(&mut obj, &schema);
            }
        } else {
            decode_builtin_quantities(def, &mut obj)?;
            defaults::apply(&def.group, &def.plural, &mut obj);
            // The built-in admission plugins run before the webhooks see the object.
            if def.group.is_empty() && def.plural == "pods" {
                crate::service_accounts::admit_pod(self, ns, &mut obj)?;
            }
            self.admit_ingress(def, &mut obj);
        }
        Ok(present(def, &obj))
    }

    /// The default IngressClass a new Ingress would get (`DefaultIngressClass` admission),
    /// if `def` is Ingresses and `body` names no class.
    fn default_ingress_class(&self, def: &ResourceDef, body: &Value) -> Option<String> {
        if !is_ingress(def) {
            return None;
        }
        let table = ("networking.k8s.io".to_string(), "ingressclasses".to_string());
        let (classes, _) = self.store.list(&table, None);
        crate::ingress_validation::default_class_for(body, &classes)
    }

    /// kube-apiserver's `DefaultIngressClass` admission of a new Ingress (a mutating plugin:
    /// before the webhooks).
    fn admit_ingress(&self, def: &ResourceDef, body: &mut Value) {
        if let Some(class) = self.default_ingress_class(def, body) {
            crate::ingress_validation::set_class(body, &class);
        }
    }

    pub(crate) fn obj_key(def: &ResourceDef, ns: &str, name: &str) -> ObjKey {
        (if def.namespaced { ns.to_string() } else { String::new() }, name.to_string())
    }

    /// Reads one object.
    pub fn get(&self, def: &ResourceDef, ns: &str, name: &str) -> Result<Value, ApiError> {
        self.store
            .get(&key_of(def), &Self::obj_key(def, ns, name))
            .map(|o| present(def, &o))
            .ok_or_else(|| ApiError::not_found(&def.group, &def.plural, name))
    }

    /// The Scale of an object with a scale subresource.
    pub fn scale_of(&self, def: &ResourceDef, obj: &Value) -> Result<Value, ApiError> {
        let Some(paths) = &def.scale else { return Err(ApiError::no_route()) };
        let spec = jsonpath::first(obj, &paths.spec_replicas).cloned().unwrap_or(json!(0));
        let status = jsonpath::first(obj, &paths.status_replicas).cloned().unwrap_or(json!(0));
        let selector = if def.is_custom() {
            paths
                .label_selector
                .as_deref()
                .and_then(|p| jsonpath::first(obj, p))
                .and_then(Value::as_str)
                .map(str::to_string)
        } else {
            obj.pointer("/spec/selector").map(format_label_selector)
        };
        let meta = obj.get("metadata").cloned().unwrap_or(json!({}));
        let mut smeta = Map::new();
        for k in ["name", "namespace", "uid", "resourceVersion", "creationTimestamp"] {
            if let Some(v) = meta.get(k) {
                smeta.insert(k.into(), v.clone());
            }
        }
        let mut st = json!({"replicas": status});
        if let Some(sel) = selector.filter(|s| !s.is_empty()) {
            st["selector"] = json!(sel);
        }
        Ok(json!({
            "kind": "Scale",
            "apiVersion": "autoscaling/v1",
            "metadata": smeta,
            "spec": {"replicas": spec},
            "status": st,
        }))
    }

    /// Lists objects matching selectors, one page at a time. As kube-apiserver's, a page that
    /// is full says `continue` when any object follows it, matching or not, and counts the
    /// objects left (`remainingItemCount`) only when nothing is filtered. Only the objects a
    /// page reads are decoded.
    pub fn list(
        &self,
        def: &ResourceDef,
        ns: Option<&str>,
        opts: &ListOptions,
    ) -> Result<ListPage, ApiError> {
        let start = match &opts.continue_token {
            None => None,
            Some(tok) => Some(decode_continue(tok)?),
        };
        // A page reads the table in chunks of at least its limit, so that a selector that
        // matches few objects reads on without taking every object at once.
        let chunk = if opts.limit > 0 { opts.limit.max(512) } else { usize::MAX };
        let table = key_of(def);
        let mut after = start.as_ref().map(|s| s.1.clone());
        let mut matched: Vec<Arc<Value>> = Vec::new();
        let mut last_read: Option<ObjKey> = None;
        let (rest, rv) = loop {
            let (entries, more, rv) = self.store.list_frozen(&table, ns, after.as_ref(), chunk);
            let mut read = 0usize;
            for (_, frozen) in &entries {
                if opts.limit > 0 && matched.len() >= opts.limit {
                    break;
                }
                read += 1;
                let o = frozen.value();
                if opts.labels.matches_object(&o) && opts.fields.matches(&o) {
                    matched.push(o);
                }
            }
            if let Some((last, _)) = read.checked_sub(1).and_then(|i| entries.get(i)) {
                last_read = Some(last.clone());
            }
            let rest = entries.len() - read + more;
            if read < entries.len() || more == 0 {
                break (rest, rv);
            }
            after.clone_from(&last_read);
        };
        let list_rv = start.as_ref().map(|s| s.0).unwrap_or(rv);
        let (mut continue_token, mut remaining) = (None, None);
        if rest > 0
            && let Some(last) = &last_read
        {
            continue_token = Some(encode_continue(list_rv, last));
            if opts.labels.is_empty() && opts.fields.is_empty() {
                remaining = Some(rest);
            }
        }
        Ok(ListPage { items: matched, rv: list_rv, continue_token, remaining })
    }

    /// Applies an update's rules to `new` given `old`; decides the write.
    pub(crate) fn update_rules(
        &self,
        def: &ResourceDef,
        old: &Value,
        mut new: Value,
        sub: Sub,
        opts: &WriteOptions,
        warnings: &mut Vec<String>,
    ) -> Result<Write, ApiError> {
        let name = meta_str(old, "name").unwrap_or_default().to_string();
        if !new.is_object() {
            return Err(ApiError::bad_request("the body of the request must be an object"));
        }
        bad_body_kind(def, &new)?;
        if meta_mut(&mut new).is_none() {
            return Err(ApiError::bad_request("metadata must be an object"));
        }
        let new_name = meta_str(&new, "name").unwrap_or_default().to_string();
        if !new_name.is_empty() && new_name != name {
            return Err(ApiError::bad_request(format!(
                "the name of the object ({new_name}) does not match the name on the URL ({name})"
            )));
        }
        if def.namespaced {
            let new_ns = meta_str(&new, "namespace").unwrap_or_default();
            let old_ns = meta_str(old, "namespace").unwrap_or_default();
            if !new_ns.is_empty() && new_ns != old_ns {
                return Err(ApiError::bad_request(
                    "the namespace of the provided object does not match the namespace sent on the request",
                ));
            }
        }
        // Unknown fields, as decoding the body (a PUT) or the patched object (a patch) finds
        // them: the whole object, also for `/status`. An apply is checked before it is applied
        // (`apply_unknown_fields`); a Scale has no fields of the object.
        let checked_here = sub != Sub::Scale && !matches!(opts.patch, Some((PatchType::Apply, _)));
        // A strategic merge patch whose result does not convert to the built-in type is refused
        // as the patch's fault, showing the patch as Go prints a map.
        if let (Some((PatchType::Strategic, p)), false, true) =
            (&opts.patch, def.is_custom(), sub != Sub::Scale)
            && let Some(why) =
                crate::openapi::builtin_type_error(&def.group, &def.version, &def.kind, &new)
        {
            return Err(ApiError::invalid(
                "",
                "",
                "",
                vec![Cause::invalid("patch", &Value::String(go_map(p)), &why)],
            ));
        }
        if checked_here {
            let unknown = unknown_fields(def, &new);
            if !unknown.is_empty() {
                let listed: Vec<String> =
                    unknown.iter().map(|u| format!("unknown field {u:?}")).collect();
                match opts.field_validation {
                    FieldValidation::Strict => {
                        return Err(match &opts.patch {
                            None => decode_strict_error(def, &listed),
                            Some((PatchType::Strategic, p)) => {
                                patch_strict_error(go_map(p), &listed)
                            }
                            Some(_) => patch_strict_error(go_json(&new), &listed),
                        });
                    }
                    FieldValidation::Warn => warnings.extend(listed),
                    FieldValidation::Ignore => {}
                }
            }
        }
        // Pruning below reports nothing more where the check above has run.
        let later_fv = if checked_here { FieldValidation::Ignore } else { opts.field_validation };
        // A PUT whose body names a uid makes it a precondition of the storage update, checked
        // before the resourceVersion (`defaultUpdatedObjectInfo.Preconditions`,
        // `storage.Preconditions.Check`, `InterpretUpdateError`).
        let new_uid = meta_str(&new, "uid").filter(|u| !u.is_empty()).map(str::to_string);
        let old_uid = meta_str(old, "uid").unwrap_or_default().to_string();
        if let Some(uid) = &new_uid
            && *uid != old_uid
            && opts.patch.is_none()
            && sub != Sub::Scale
        {
            let ns = meta_str(old, "namespace").unwrap_or_default();
            return Err(ApiError::conflict(
                &def.group,
                &def.plural,
                &name,
                &format!(
                    "StorageError: invalid object, Code: 4, Key: {}, ResourceVersion: 0, AdditionalErrorMsg: Precondition failed: UID in precondition: {uid}, UID in object meta: {old_uid}",
                    storage_key(def, ns, &name)
                ),
            ));
        }
        match rv_of(&new) {
            Some(rv) if Some(rv) != rv_of(old) => {
                return Err(ApiError::stale(&def.group, &def.plural, &name));
            }
            None if !def.unconditional_update => {
                return Err(ApiError::invalid(
                    &def.group,
                    &def.kind,
                    &name,
                    vec![Cause::invalid(
                        "metadata.resourceVersion",
                        &json!(0),
                        "must be specified for an update",
                    )],
                ));
            }
            _ => {}
        }
        // A patch that changes the uid fails `ValidateObjectMetaUpdate` in `BeforeUpdate`.
        if let Some(uid) = &new_uid
            && *uid != old_uid
            && opts.patch.is_some()
        {
            return Err(ApiError::invalid(
                &def.group,
                &def.kind,
                &name,
                vec![Cause::invalid("metadata.uid", &json!(uid), "field is immutable")],
            ));
        }
        to_storage(def, &mut new);
        let mut result = match sub {
            Sub::Main => {
                if def.status {
                    copy_status(old, &mut new);
                }
                new
            }
            Sub::Status => {
                let mut r = old.clone();
                copy_status(&new, &mut r);
                keep_observed_generation(def, old, &mut r);
                // kube-apiserver's pod status strategy keeps the object meta of the request
                // (only spec, deletionTimestamp and ownerReferences are reset): kubelets and
                // kruise-daemon write pod labels and annotations through pods/status.
                if (def.group.as_str(), def.plural.as_str()) == ("", "pods") {
                    for key in ["labels", "annotations"] {
                        let value = new.get("metadata").and_then(|m| m.get(key)).cloned();
                        if let Some(meta) = meta_mut(&mut r) {
                            match value {
                                Some(v) => meta.insert(key.into(), v),
                                None => meta.remove(key),
                            };
                        }
                    }
                }
                r
            }
            Sub::Scale => new,
        };
        // System metadata is kept from the stored object.
        let old_meta = old.get("metadata").cloned().unwrap_or(json!({}));
        if let Some(meta) = meta_mut(&mut result) {
            for k in [
                "uid",
                "creationTimestamp",
                "deletionTimestamp",
                "deletionGracePeriodSeconds",
                "namespace",
                "name",
                "generation",
            ] {
                match old_meta.get(k) {
                    Some(v) => meta.insert(k.into(), v.clone()),
                    None => meta.remove(k),
                };
            }
        }
        // `ValidateObjectMetaUpdate`: no new finalizers on an object being deleted, then the
        // metadata's own rules (also through `/status`, whose strategies validate it too).
        let meta_causes =
            if sub == Sub::Scale { Vec::new() } else { self.meta_causes(def, &result)? };
        let mut causes = Vec::new();
        if old.pointer("/metadata/deletionTimestamp").is_some() {
            let before = finalizers(old);
            if let Some(added) = finalizers(&result).into_iter().find(|f| !before.contains(f)) {
                causes.push(Cause::forbidden(
                    "metadata.finalizers",
                    &format!(
                        "no new finalizers can be added if the object is being deleted, found new finalizers []string{{{added}}}"
                    ),
                ));
            }
        }
        causes.extend(meta_causes);
        if !causes.is_empty() {
            return Err(ApiError::invalid(&def.group, &def.kind, &name, causes));
        }
        if def.is_custom() {
            warnings.extend(self.check_custom(def, &mut result, Some(old), later_fv)?);
        } else {
            warnings.extend(check_builtin_fields(def, &mut result, later_fv)?);
            defaults::apply(&def.group, &def.plural, &mut result);
            if (def.group.as_str(), def.plural.as_str()) == SERVICES && sub == Sub::Main {
                crate::service_ips::keep_on_update(old, &mut result)?;
            }
            if sub == Sub::Status && is_ingress(def) {
                let causes = crate::ingress_validation::ingress_status(&result, old);
                if !causes.is_empty() {
                    return Err(ApiError::invalid(&def.group, &def.kind, &name, causes));
                }
            }
            if sub == Sub::Main {
                self.validate_builtin(def, &result, Some(old))?;
                validate_immutable(def, old, &result)?;
                if def.group.is_empty() && def.plural == "pods" && !opts.pod_subresource {
                    let causes = crate::pod_validation::pod_update(old, &result);
                    if !causes.is_empty() {
                        let name = meta_str(&result, "name").unwrap_or_default().to_string();
                        return Err(ApiError::invalid(&def.group, &def.kind, &name, causes));
                    }
                }
            }
        }
        if (def.group.as_str(), def.plural.as_str()) == CRDS {
            crd::prepare(&mut result, Some(old))?;
        }
        if !def.is_custom() {
            crate::go_json::normalize_object(&mut result);
        }
        daemonset_template_generation(def, Some(old), &mut result);
        if def.generation {
            let changed = if def.status {
                old.get("spec") != result.get("spec")
            } else {
                without(old, &["metadata", "status"]) != without(&result, &["metadata", "status"])
            };
            // An EndpointSlice's generation also counts its labels (the endpointslice
            // strategy), which say what Service it belongs to and who manages it.
            let changed = changed
                || ((def.group.as_str(), def.plural.as_str())
                    == ("discovery.k8s.io", "endpointslices")
                    && old.pointer("/metadata/labels") != result.pointer("/metadata/labels"));
            let g = old.pointer("/metadata/generation").and_then(Value::as_i64).unwrap_or(1);
            if let Some(meta) = meta_mut(&mut result) {
                meta.insert("generation".into(), json!(if changed { g + 1 } else { g }));
            }
        }
        // A body without managedFields keeps the stored ones (an apply changes them).
        if result.pointer("/metadata/managedFields").is_none()
            && let (Some(mf), Some(meta)) =
                (old.pointer("/metadata/managedFields").cloned(), meta_mut(&mut result))
        {
            meta.insert("managedFields".into(), mf);
        }
        if equal_ignoring_rv(old, &result) {
            return Ok(Write::Keep);
        }
        if result.pointer("/metadata/deletionTimestamp").is_some()
            && finalizers(&result).is_empty()
            && result
                .pointer("/metadata/deletionGracePeriodSeconds")
                .and_then(Value::as_i64)
                .unwrap_or(0)
                == 0
        {
            return Ok(Write::Delete);
        }
        Ok(Write::Put(result))
    }

    /// Replaces an object (or its status, or its scale).
    pub fn update(
        &self,
        def: &ResourceDef,
        ns: &str,
        name: &str,
        sub: Sub,
        body: Value,
        opts: &WriteOptions,
    ) -> Result<(Value, bool, Vec<String>), ApiError> {
        let key = Self::obj_key(def, ns, name);
        let mut warnings = Vec::new();
        let mut created = false;
        // Checked outside the store's write (the store's lock is not reentrant).
        let ns_ok = self.check_namespace(def, ns);
        let written = self.store.write(&key_of(def), &key, opts.dry_run, |cur| match cur {
            None => {
                if def.create_on_update && sub == Sub::Main {
                    ns_ok?;
                    let mut body = body;
                    if let Some(m) = meta_mut(&mut body) {
                        m.insert("name".into(), json!(name));
                        m.remove("resourceVersion");
                    }
                    let (obj, w) = self.build_new(def, ns, body, opts)?;
                    warnings = w;
                    created = true;
                    Ok(Write::Put(obj))
                } else {
                    Err(ApiError::not_found(&def.group, &def.plural, name))
                }
            }
            Some(old) => {
                let new = if sub == Sub::Scale { self.apply_scale(def, old, &body)? } else { body };
                let d = self.update_rules(def, old, new, sub, opts, &mut warnings)?;
                Ok(self.own(def, old, d, sub, opts, false))
            }
        })?;
        self.after_write(def, &written.event, &written.object);
        let out = if sub == Sub::Scale {
            self.scale_of(def, &written.object)?
        } else {
            present(def, &written.object)
        };
        Ok((out, created, warnings))
    }

    /// The object with the replicas of a Scale applied (checking the Scale's resourceVersion).
    pub(crate) fn apply_scale(
        &self,
        def: &ResourceDef,
        old: &Value,
        scale: &Value,
    ) -> Result<Value, ApiError> {
        let Some(paths) = &def.scale else { return Err(ApiError::no_route()) };
        let name = meta_str(old, "name").unwrap_or_default();
        if let Some(rv) = rv_of(scale)
            && Some(rv) != rv_of(old)
        {
            return Err(ApiError::stale(&def.group, &def.plural, name));
        }
        let replicas = scale.pointer("/spec/replicas").cloned().unwrap_or(json!(0));
        if !replicas.is_i64() || replicas.as_i64().is_some_and(|r| r < 0) {
            return Err(ApiError::invalid(
                "autoscaling",
                "Scale",
                name,
                vec![Cause::invalid(
                    "spec.replicas",
                    &replicas,
                    "must be greater than or equal to 0",
                )],
            ));
        }
        let mut new = present(def, old);
        if !jsonpath::set(&mut new, &paths.spec_replicas, replicas) {
            return Err(ApiError::internal("cannot set the scale subresource's replicas path"));
        }
        Ok(new)
    }

    /// Applies a patch to an object, its status, or its scale.
    #[allow(clippy::too_many_arguments)]
    pub fn patch(
        &self,
        def: &ResourceDef,
        ns: &str,
        name: &str,
        sub: Sub,
        ptype: PatchType,
        body: &[u8],
        opts: &WriteOptions,
    ) -> Result<(Value, bool, Vec<String>), ApiError> {
        let patch = self.check_patch(def, sub, ptype, body, opts)?;
        // An apply may create a Service inside the store's write.
        let held_services = (ptype == PatchType::Apply
            && (def.group.as_str(), def.plural.as_str()) == SERVICES)
            .then(|| Arc::new(self.store.list(&key_of(def), None).0));
        let opts =
            &WriteOptions { patch: Some((ptype, patch.clone())), held_services, ..opts.clone() };
        let key = Self::obj_key(def, ns, name);
        let mut warnings = Vec::new();
        let mut created = false;
        // Checked outside the store's write (the store's lock is not reentrant).
        let ns_ok = self.check_namespace(def, ns);
        let default_class = if ptype == PatchType::Apply && sub == Sub::Main {
            self.default_ingress_class(def, &patch)
        } else {
            None
        };
        let written = self.store.write(&key_of(def), &key, opts.dry_run, |cur| {
            let Some(old) = cur else {
                if ptype == PatchType::Apply {
                    ns_ok?;
                    let mut body = patch.clone();
                    if let Some(m) = meta_mut(&mut body) {
                        m.insert("name".into(), json!(name));
                    }
                    if let Some(class) = &default_class {
                        crate::ingress_validation::set_class(&mut body, class);
                    }
                    let (mut obj, w) = self.build_new(def, ns, body, opts)?;
                    let manager = opts.field_manager.as_deref().unwrap_or_default();
                    crate::managed::created_by_apply(def, &mut obj, &patch, manager);
                    warnings = w;
                    created = true;
                    return Ok(Write::Put(obj));
                }
                return Err(ApiError::not_found(&def.group, &def.plural, name));
            };
            let current =
                if sub == Sub::Scale { self.scale_of(def, old)? } else { present(def, old) };
            let patched = apply_with(def, &current, &patch, ptype, opts)?;
            let new =
                if sub == Sub::Scale { self.apply_scale(def, old, &patched)? } else { patched };
            let d = self.update_rules(def, old, new, sub, opts, &mut warnings)?;
            Ok(self.own(def, old, d, sub, opts, ptype == PatchType::Apply))
        })?;
        self.after_write(def, &written.event, &written.object);
        let out = if sub == Sub::Scale {
            self.scale_of(def, &written.object)?
        } else {
            present(def, &written.object)
        };
        Ok((out, created, warnings))
    }

    /// Decodes a patch body and checks that its type suits the resource.
    pub(crate) fn check_patch(
        &self,
        def: &ResourceDef,
        sub: Sub,
        ptype: PatchType,
        body: &[u8],
        opts: &WriteOptions,
    ) -> Result<Value, ApiError> {
        let patch: Value = match ptype {
            PatchType::Apply => serde_yaml::from_slice(body)
                .map_err(|e| ApiError::bad_request(format!("error decoding YAML: {e}")))?,
            _ => serde_json::from_slice(body)
                .map_err(|e| ApiError::bad_request(format!("error decoding patch: {e}")))?,
        };
        if ptype == PatchType::Strategic
            && (def.smp == SmpKind::Unsupported || sub == Sub::Scale && def.is_custom())
        {
            return Err(ApiError::unsupported_patch(&[
                "application/json-patch+json",
                "application/merge-patch+json",
                "application/apply-patch+yaml",
            ]));
        }
        if ptype == PatchType::Apply {
            apply_unknown_fields(def, &patch)?;
            if opts.field_manager.as_deref().unwrap_or("").is_empty() {
                return Err(ApiError::invalid(
                    "meta.k8s.io",
                    "PatchOptions",
                    "",
                    vec![Cause::required("fieldManager", "is required for apply patch")],
                ));
            }
            if sub != Sub::Main {
                return Err(ApiError::unsupported_patch(&[
                    "application/json-patch+json",
                    "application/merge-patch+json",
                ]));
            }
        }
        Ok(patch)
    }

    /// Records an update's field ownership (`managedFields`) in a write decided by
    /// `update_rules`; an apply has recorded its own.
    pub(crate) fn own(
        &self,
        def: &ResourceDef,
        old: &Value,
        decision: Write,
        sub: Sub,
        opts: &WriteOptions,
        applying: bool,
    ) -> Write {
        match decision {
            Write::Put(mut r) if !applying => {
                let sub = match sub {
                    Sub::Main => "",
                    Sub::Status => "status",
                    Sub::Scale => "scale",
                };
                crate::managed::track_update(
                    def,
                    Some(old),
                    &mut r,
                    opts.field_manager.as_deref(),
                    sub,
                );
                Write::Put(r)
            }
            d => d,
        }
    }

    /// Sets the CA certificate published in `kube-root-ca.crt` (once, before namespaces are
    /// created).
    pub fn set_root_ca(&self, pem: &str) {
        let _ = self.root_ca.set(pem.to_owned());
    }

    /// The CA certificate published in `kube-root-ca.crt` (empty when none was set).
    pub(crate) fn root_ca(&self) -> String {
        self.root_ca.get().cloned().unwrap_or_default()
    }

    pub(crate) fn after_write(&self, def: &ResourceDef, event: &Option<EventType>, obj: &Value) {
        let Some(ev) = *event else { return };
        if ev == EventType::Added
            && def.group.is_empty()
            && def.plural == "namespaces"
            && let Some(name) = meta_str(obj, "name")
        {
            crate::service_accounts::on_namespace_created(self, name);
        }
        self.collect_garbage(def, ev, obj);
        if (def.group.as_str(), def.plural.as_str()) == CRDS {
            if event == &Some(EventType::Deleted) {
                self.drop_custom_objects(obj);
            }
            self.sync_crds();
        }
        if event == &Some(EventType::Deleted)
            && def.namespaced
            && let Some(ns) = meta_str(obj, "namespace")
        {
            self.maybe_finalize_namespace(ns);
        }
    }

    fn drop_custom_objects(&self, crd_obj: &Value) {
        let group = crd_obj.pointer("/spec/group").and_then(Value::as_str).unwrap_or_default();
        let plural =
            crd_obj.pointer("/spec/names/plural").and_then(Value::as_str).unwrap_or_default();
        let table = (group.to_string(), plural.to_string());
        for key in self.store.keys(&table, None) {
            let _ = self.store.write(&table, &key, false, |cur| {
                if cur.is_some() { Ok(Write::Delete) } else { Ok(Write::Keep) }
            });
        }
    }

    /// Deletes an object, or marks it for deletion while finalizers remain.
    pub fn delete(
        &self,
        def: &ResourceDef,
        ns: &str,
        name: &str,
        opts: &DeleteOptions,
    ) -> Result<Value, ApiError> {
        let key = Self::obj_key(def, ns, name);
        let is_namespace = def.group.is_empty() && def.plural == "namespaces";
        if let Some(p) = opts.propagation.as_deref()
            && !["Foreground", "Background", "Orphan"].contains(&p)
        {
            return Err(ApiError::invalid(
                "meta.k8s.io",
                "DeleteOptions",
                "",
                vec![Cause::not_supported(
                    "propagationPolicy",
                    &json!(p),
                    &[json!("Foreground"), json!("Background"), json!("Orphan")],
                )],
            ));
        }
        let written = self.store.write(&key_of(def), &key, opts.dry_run, |cur| {
            let Some(old) = cur else {
                return Err(ApiError::not_found(&def.group, &def.plural, name));
            };
            // As kube-apiserver's `rest.BeforeDelete`, which checks the preconditions first and
            // names the object by its kind (`GroupResource{Group, Resource: Kind}`).
            if let Some(uid) = &opts.uid {
                let have = meta_str(old, "uid").unwrap_or_default();
                if have != uid {
                    return Err(ApiError::conflict(
                        &def.group,
                        &def.kind,
                        name,
                        &format!("the UID in the precondition ({uid}) does not match the UID in record ({have}). The object might have been deleted and then recreated"),
                    ));
                }
            }
            if let Some(rv) = &opts.resource_version {
                let have = meta_str(old, "resourceVersion").unwrap_or_default();
                if have != rv {
                    return Err(ApiError::conflict(
                        &def.group,
                        &def.kind,
                        name,
                        &format!("the ResourceVersion in the precondition ({rv}) does not match the ResourceVersion in record ({have}). The object might have been modified"),
                    ));
                }
            }
            let before = finalizers(old);
            let mut fins = before.clone();
            if !is_namespace {
                let (fg, orphan) = (json!(crate::gc::FOREGROUND), json!(crate::gc::ORPHAN));
                let add = match opts.propagation.as_deref() {
                    Some("Foreground") => {
                        fins.retain(|f| f != &orphan);
                        Some(fg)
                    }
                    Some("Orphan") => {
                        fins.retain(|f| f != &fg);
                        Some(orphan)
                    }
                    Some("Background") => {
                        fins.retain(|f| f != &fg && f != &orphan);
                        None
                    }
                    // kube-apiserver orphans a batch/v1 Job's pods unless told otherwise (the
                    // Job strategy's default garbage collection policy, kept for backward
                    // compatibility).
                    None if def.group == "batch" && def.plural == "jobs" => {
                        fins.retain(|f| f != &fg);
                        Some(orphan)
                    }
                    _ => None,
                };
                if let Some(a) = add
                    && !fins.contains(&a)
                {
                    fins.push(a);
                }
            }
            let grace = self.pod_grace(def, old, opts);
            let pending = !fins.is_empty() || is_namespace || grace > 0;
            if !pending {
                return Ok(Write::Delete);
            }
            let mut next = (**old).clone();
            let deadline = || {
                (jiff::Timestamp::now() + jiff::SignedDuration::from_secs(grace))
                    .strftime("%Y-%m-%dT%H:%M:%SZ")
                    .to_string()
            };
            if old.pointer("/metadata/deletionTimestamp").is_some() {
                let old_grace = old
                    .pointer("/metadata/deletionGracePeriodSeconds")
                    .and_then(Value::as_i64)
                    .unwrap_or(0);
                // A shorter grace period shortens a pending graceful deletion.
                let shorten = grace < old_grace;
                if fins == before && !shorten {
                    return Ok(Write::Keep);
                }
                if let Some(meta) = meta_mut(&mut next) {
                    meta.insert("finalizers".into(), json!(fins));
                    if shorten {
                        meta.insert("deletionTimestamp".into(), json!(deadline()));
                        meta.insert("deletionGracePeriodSeconds".into(), json!(grace));
                    }
                }
                return Ok(Write::Put(next));
            }
            if let Some(meta) = meta_mut(&mut next) {
                meta.insert("deletionTimestamp".into(), json!(deadline()));
                meta.insert("deletionGracePeriodSeconds".into(), json!(grace));
                // Marking an object as being deleted is a change of its desired state:
                // kube-apiserver counts it in a generation the object keeps.
                if let Some(g) = meta.get("generation").and_then(Value::as_i64).filter(|g| *g > 0) {
                    meta.insert("generation".into(), json!(g + 1));
                }
                if !fins.is_empty() {
                    meta.insert("finalizers".into(), json!(fins));
                }
            }
            if is_namespace
                && let Some(m) = next.as_object_mut() {
                    m.insert("status".into(), json!({"phase": "Terminating"}));
                }
            Ok(Write::Put(next))
        })?;
        if opts.dry_run {
            return Ok(present(def, &written.object));
        }
        self.after_write(def, &written.event, &written.object);
        if is_namespace && written.event.is_some() {
            self.cascade_namespace(name);
            if let Ok(obj) = self.get(def, ns, name) {
                return Ok(obj);
            }
        }
        Ok(present(def, &written.object))
    }

    /// Deletes every matching object of a resource.
    pub fn delete_collection(
        &self,
        def: &ResourceDef,
        ns: Option<&str>,
        list: &ListOptions,
        opts: &DeleteOptions,
    ) -> Result<Vec<Value>, ApiError> {
        let page =
            self.list(def, ns, &ListOptions { limit: 0, continue_token: None, ..list.clone() })?;
        let mut out = Vec::new();
        for o in page.items {
            let n = meta_str(&o, "name").unwrap_or_default().to_string();
            let o_ns = meta_str(&o, "namespace").unwrap_or_default().to_string();
            match self.delete(def, &o_ns, &n, opts) {
                Ok(v) => out.push(v),
                Err(e) if e.code == 404 => {}
                Err(e) => return Err(e),
            }
        }
        Ok(out)
    }

    /// Deletes the contents of a terminating namespace (objects with finalizers are marked).
    /// With webhooks, the deletions are the namespace controller's, admitted later (see
    /// [`crate::gc`]).
    fn cascade_namespace(&self, ns: &str) {
        let deferred = self.has_webhooks();
        for def in self.all_defs() {
            if !def.namespaced || !def.is_storage() {
                continue;
            }
            for key in self.store.keys(&def.key(), Some(ns)) {
                if deferred {
                    self.defer_namespace_delete(&def.key(), &key);
                } else {
                    let _ = self.delete(&def, ns, &key.1, &DeleteOptions::default());
                }
            }
        }
        self.maybe_finalize_namespace(ns);
    }

    fn maybe_finalize_namespace(&self, ns: &str) {
        let table = (String::new(), "namespaces".to_string());
        let key = (String::new(), ns.to_string());
        let Some(nsobj) = self.store.get(&table, &key) else { return };
        if nsobj.pointer("/metadata/deletionTimestamp").is_none() {
            return;
        }
        let empty = self
            .all_defs()
            .iter()
            .filter(|d| d.namespaced)
            .all(|d| self.store.keys(&d.key(), Some(ns)).is_empty());
        if empty {
            let _ = self.store.write(&table, &key, false, |cur| {
                if cur.is_some() { Ok(Write::Delete) } else { Ok(Write::Keep) }
            });
        }
    }

    /// Binds a pod to a node (`pods/binding`).
    pub fn bind(
        &self,
        ns: &str,
        name: &str,
        binding: &Value,
        dry_run: bool,
    ) -> Result<Value, ApiError> {
        let Some(def) = self.def_for("", "pods") else { return Err(ApiError::no_route()) };
        check_binding(name, binding)?;
        let node =
            binding.pointer("/target/name").and_then(Value::as_str).unwrap_or_default().to_string();
        let written = self.store.write(&def.key(), &(ns.to_string(), name.to_string()), dry_run, |cur| {
            let Some(old) = cur else { return Err(ApiError::not_found("", "pods", name)) };
            if old.pointer("/metadata/deletionTimestamp").is_some() {
                return Err(ApiError::conflict("", "pods", name, "pod is being deleted, cannot be assigned to a host"));
            }
            if let Some(n) = old.pointer("/spec/nodeName").and_then(Value::as_str).filter(|n| !n.is_empty()) {
                return Err(ApiError::conflict("", "pods", name, &format!("pod {name} is already assigned to node {n:?}")));
            }
            let mut next = (**old).clone();
            if let Some(spec) = next.get_mut("spec").and_then(Value::as_object_mut) {
                spec.insert("nodeName".into(), json!(node));
            }
            let cond = json!({"type": "PodScheduled", "status": "True", "lastProbeTime": null, "lastTransitionTime": now_rfc3339()});
            if let Some(st) = next.as_object_mut().map(|m| m.entry("status").or_insert_with(|| json!({})))
                && let Some(stm) = st.as_object_mut() {
                    let conds = stm.entry("conditions").or_insert_with(|| json!([]));
                    if let Some(a) = conds.as_array_mut() {
                        a.retain(|c| c.get("type") != Some(&json!("PodScheduled")));
                        a.push(cond);
                    }
                }
            Ok(Write::Put(next))
        })?;
        let _ = written;
        Ok(success_status(201, None))
    }

    /// Evicts a pod (`pods/eviction`), as kube-apiserver does: a finished, pending or
    /// terminating pod goes at once; otherwise the one PodDisruptionBudget that selects it
    /// must allow a disruption, which the eviction takes (`disruptionsAllowed` down by one, the
    /// pod in `disruptedPods`) before it deletes the pod with `delete` (the Eviction's
    /// `deleteOptions`). Refused with 429 when the budget allows none or its status is older
    /// than its spec, and with 500 when more than one budget selects the pod.
    pub fn evict(&self, ns: &str, name: &str, delete: &DeleteOptions) -> Result<Value, ApiError> {
        let Some(pods) = self.def_for("", "pods") else { return Err(ApiError::no_route()) };
        let pod = self.get(&pods, ns, name)?;
        // kube-apiserver's `canIgnorePDB`: finished, pending and terminating pods.
        let phase = pod.pointer("/status/phase").and_then(Value::as_str);
        let deleting = pod.pointer("/metadata/deletionTimestamp").is_some_and(|t| !t.is_null());
        let ignore_budgets = deleting || matches!(phase, Some("Succeeded" | "Failed" | "Pending"));
        if let Some(pdbs) = self.def_for("policy", "poddisruptionbudgets")
            && !ignore_budgets
        {
            let (items, _) = self.store.list(&pdbs.key(), Some(ns));
            let matching: Vec<Value> = items
                .into_iter()
                .map(|pdb| (*pdb).clone())
                .filter(|pdb| {
                    let Some(sel) = pdb.pointer("/spec/selector") else { return false };
                    LabelSelector::parse(&format_label_selector(sel))
                        .is_ok_and(|sel| !sel.is_empty() && sel.matches_object(&pod))
                })
                .collect();
            if matching.len() > 1 {
                return Err(ApiError::internal(
                    "This pod has more than one PodDisruptionBudget, which the eviction subresource does not support.",
                ));
            }
            if let Some(mut pdb) = matching.into_iter().next() {
                // EvictionREST retries a budget write that lost a race (`EvictionsRetry`,
                // 20 steps) against the budget as it is now, so concurrent evictions are
                // each judged on the latest count and none fails with a conflict.
                let pdb_name = meta_str(&pdb, "name").unwrap_or_default().to_owned();
                let mut attempts = 0;
                loop {
                    match self.take_disruption(&pdbs, ns, name, pdb, delete.dry_run) {
                        Err(e) if e.code == 409 && attempts < EVICTION_RETRIES => {
                            attempts += 1;
                            pdb = self.get(&pdbs, ns, &pdb_name)?;
                        }
                        other => break other?,
                    }
                }
            }
        }
        self.delete(&pods, ns, name, delete)?;
        Ok(success_status(201, None))
    }

    /// Takes one of the budget's allowed disruptions for pod `pod_name`, or refuses.
    fn take_disruption(
        &self,
        pdbs: &ResourceDef,
        ns: &str,
        pod_name: &str,
        mut pdb: Value,
        dry_run: bool,
    ) -> Result<(), ApiError> {
        let pdb_name = meta_str(&pdb, "name").unwrap_or_default().to_owned();
        let refuse = |cause: String| ApiError {
            code: 429,
            reason: "TooManyRequests",
            message: "Cannot evict pod as it would violate the pod's disruption budget.".into(),
            details: Some(json!({"causes": [{"reason": "DisruptionBudget", "message": cause}]})),
        };
        let generation = pdb.pointer("/metadata/generation").and_then(Value::as_i64).unwrap_or(0);
        let observed =
            pdb.pointer("/status/observedGeneration").and_then(Value::as_i64).unwrap_or(0);
        if observed < generation {
            return Err(refuse(format!(
                "The disruption budget {pdb_name} is still being processed by the server."
            )));
        }
        let allowed =
            pdb.pointer("/status/disruptionsAllowed").and_then(Value::as_i64).unwrap_or(0);
        if allowed < 0 {
            return Err(ApiError {
                code: 403,
                reason: "Forbidden",
                message: format!(
                    "poddisruptionbudget.policy {pdb_name:?} is forbidden: pdb disruptions allowed is negative"
                ),
                details: None,
            });
        }
        if allowed == 0 {
            let count = |field: &str| {
                pdb.pointer(&format!("/status/{field}")).and_then(Value::as_i64).unwrap_or(0)
            };
            return Err(refuse(format!(
                "The disruption budget {pdb_name} needs {} healthy pods and has {} currently",
                count("desiredHealthy"),
                count("currentHealthy")
            )));
        }
        let status = pdb
            .as_object_mut()
            .map(|o| o.entry("status").or_insert_with(|| json!({})))
            .and_then(Value::as_object_mut);
        if let Some(status) = status {
            status.insert("disruptionsAllowed".into(), json!(allowed - 1));
            let disrupted = status.entry("disruptedPods").or_insert_with(|| json!({}));
            if !disrupted.is_object() {
                *disrupted = json!({});
            }
            disrupted[pod_name] = json!(crate::util::now_rfc3339());
        }
        // Guarded by the budget's resourceVersion: a concurrent eviction makes this one fail
        // with a conflict, which the caller retries. A dry run checks and writes nothing.
        if dry_run {
            return Ok(());
        }
        self.update(pdbs, ns, &pdb_name, Sub::Status, pdb, &WriteOptions::default())?;
        Ok(())
    }

    /// Installs a CRD given as JSON (creating or replacing it).
    pub fn install_crd(&self, crd_json: Value) -> Result<(), ApiError> {
        let Some(def) = self.def_for(CRDS.0, CRDS.1) else { return Err(ApiError::no_route()) };
        let name = meta_str(&crd_json, "name").unwrap_or_default().to_string();
        match self.create(&def, "", crd_json.clone(), &WriteOptions::default()) {
            Ok(_) => Ok(()),
            Err(e) if e.code == 409 => {
                let mut body = crd_json;
                if let Some(m) = meta_mut(&mut body) {
                    m.remove("resourceVersion");
                }
                self.update(&def, "", &name, Sub::Main, body, &WriteOptions::default()).map(|_| ())
            }
            Err(e) => Err(e),
        }
    }
}

/// A Binding's own validation (`ValidatePodBinding`): it names a target node.
pub(crate) fn check_binding(name: &str, binding: &Value) -> Result<(), ApiError> {
    let node = binding.pointer("/target/name").and_then(Value::as_str).unwrap_or_default();
    if node.is_empty() {
        return Err(ApiError::invalid(
            "",
            "Binding",
            name,
            vec![Cause::required("target.name", "")],
        ));
    }
    Ok(())
}

fn json_kind(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "bool",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

/// Applies a patch; server-side apply also checks and records field ownership.
pub(crate) fn apply_with(
    def: &ResourceDef,
    current: &Value,
    patch: &Value,
    ptype: PatchType,
    opts: &WriteOptions,
) -> Result<Value, ApiError> {
    if ptype != PatchType::Apply {
        return apply_patch(def, current, patch, ptype);
    }
    if !patch.is_object() {
        return Err(ApiError::bad_request("the patch must be a JSON object"));
    }
    let manager = opts.field_manager.as_deref().unwrap_or_default();
    crate::managed::apply(def, current, patch, manager, opts.force)
}

pub(crate) fn apply_patch(
    def: &ResourceDef,
    current: &Value,
    patch: &Value,
    ptype: PatchType,
) -> Result<Value, ApiError> {
    match ptype {
        PatchType::Json => {
            let ops: json_patch::Patch = serde_json::from_value(patch.clone())
                .map_err(|e| ApiError::bad_request(format!("error decoding patch: {e}")))?;
            let mut doc = current.clone();
            // As kube-apiserver answers (kubectl prints the message alone): a patch that does
            // not apply (a failed `test`, a missing path) is a generic 422.
            json_patch::patch(&mut doc, &ops.0).map_err(|_| ApiError {
                code: 422,
                reason: "Invalid",
                message: "the server rejected our request due to an error in our request".into(),
                details: Some(json!({})),
            })?;
            Ok(doc)
        }
        PatchType::Merge | PatchType::Apply => {
            if !patch.is_object() {
                return Err(ApiError::bad_request("the patch must be a JSON object"));
            }
            let mut doc = current.clone();
            json_patch::merge(&mut doc, patch);
            Ok(doc)
        }
        PatchType::Strategic => strategic(def, current, patch),
    }
}

#[cfg(feature = "smp")]
fn strategic(def: &ResourceDef, current: &Value, patch: &Value) -> Result<Value, ApiError> {
    use kruise_core::smp::{PatchSchema, apply_patch};
    let schema = match def.smp {
        SmpKind::Pod => PatchSchema::Pod,
        SmpKind::TemplateAt(path) => PatchSchema::PodTemplateSpecAt(path),
        SmpKind::Service => PatchSchema::Service,
        // No template: metadata merges as ObjectMeta, everything else as plain JSON.
        _ => PatchSchema::Object,
    };
    apply_patch(current, patch, schema).map_err(|e| smp_error(patch, &e))
}

/// A strategic merge patch that cannot be applied, as kube-apiserver answers it. Its merge
/// errors are plain errors there (500 without a reason), worded after the offending patch
/// object printed as Go prints a map; the others keep this module's wording as a 422.
#[cfg(feature = "smp")]
fn smp_error(patch: &Value, e: &kruise_core::smp::SmpError) -> ApiError {
    use kruise_core::smp::SmpError;
    let at = |path: &str| crate::util::at_rendered_path(patch, path).map(go_map);
    let plain =
        match e {
            SmpError::MissingMergeKey { path, key } => at(path)
                .map(|item| format!("map: {item} does not contain declared merge key: {key}")),
            SmpError::InvalidPatchDirective { path, value, .. } => {
                match serde_json::from_str::<Value>(value) {
                    // A list item asking to merge: kube-apiserver has no list-level merge.
                    Ok(Value::String(v)) if v == "merge" && path.ends_with(']') => {
                        Some("merging lists cannot yet be specified in the patch".to_string())
                    }
                    Ok(v) => at(path)
                        .map(|map| format!("unknown patch type: {} in map: {map}", go_map(&v))),
                    Err(_) => None,
                }
            }
            _ => None,
        };
    match plain {
        Some(message) => ApiError::new(500, "", message),
        None => ApiError::new(422, "Invalid", e.to_string()),
    }
}

#[cfg(not(feature = "smp"))]
fn strategic(_def: &ResourceDef, _current: &Value, _patch: &Value) -> Result<Value, ApiError> {
    Err(ApiError::unsupported_patch(&[
        "application/json-patch+json",
        "application/merge-patch+json",
    ]))
}

fn encode_continue(rv: u64, key: &ObjKey) -> String {
    let tok =
        json!({"v": "meta.k8s.io/v1", "rv": rv, "start": format!("{}/{}\u{0}", key.0, key.1)});
    base64::engine::general_purpose::STANDARD.encode(tok.to_string())
}

fn decode_continue(tok: &str) -> Result<(u64, ObjKey), ApiError> {
    let bad = |why: &str| ApiError::bad_request(format!("continue key is not valid: {why}"));
    let raw = base64::engine::general_purpose::STANDARD
        .decode(tok)
        .or_else(|_| base64::engine::general_purpose::URL_SAFE.decode(tok))
        .map_err(|_| bad("illegal base64 data"))?;
    let v: Value = serde_json::from_slice(&raw).map_err(|_| bad("invalid continue token"))?;
    if v.get("v").and_then(Value::as_str) != Some("meta.k8s.io/v1") {
        return Err(bad("incorrect encoded start resourceVersion (version meta.k8s.io/v1)"));
    }
    let rv = v.get("rv").and_then(Value::as_u64).ok_or_else(|| bad("missing rv"))?;
    let start = v.get("start").and_then(Value::as_str).ok_or_else(|| bad("missing start"))?;
    let start = start.trim_end_matches('\u{0}');
    let (ns, name) = start.split_once('/').ok_or_else(|| bad("invalid start key"))?;
    Ok((rv, (ns.to_string(), name.to_string())))
}

/// Rewrites a built-in object's quantities as Go reads and writes them back; a quantity Go
/// cannot read fails the decoding, before anything else, with Go's message.
fn decode_builtin_quantities(def: &ResourceDef, obj: &mut Value) -> Result<(), ApiError> {
    crate::go_json::decode_quantities(obj).map_err(|message| {
        ApiError::bad_request(format!(
            "{kind} in version {v:?} cannot be handled as a {kind}: {message}",
            kind = def.kind,
            v = def.version
        ))
    })
}

/// Decodes a built-in object as kube-apiserver does: a quantity Go cannot read is a 400 with
/// Go's message, and the others are rewritten as Go writes them back (see
/// [`crate::go_json`]); the fields its schema does not know are refused under
/// `fieldValidation=Strict` with its message, warned about under `Warn` (the default), dropped
/// silently under `Ignore`.
fn check_builtin_fields(
    def: &ResourceDef,
    obj: &mut Value,
    fv: FieldValidation,
) -> Result<Vec<String>, ApiError> {
    decode_builtin_quantities(def, obj)?;
    let unknown =
        crate::openapi::drop_unknown_builtin_fields(&def.group, &def.version, &def.kind, obj);
    if unknown.is_empty() {
        return Ok(Vec::new());
    }
    let listed: Vec<String> = unknown.iter().map(|u| format!("unknown field {u:?}")).collect();
    match fv {
        FieldValidation::Strict => Err(ApiError::bad_request(format!(
            "{kind} in version {v:?} cannot be handled as a {kind}: strict decoding error: {}",
            listed.join(", "),
            kind = def.kind,
            v = def.version
        ))),
        FieldValidation::Warn => Ok(listed),
        FieldValidation::Ignore => Ok(Vec::new()),
    }
}

/// The fields of `obj` that decoding it would drop (`obj` is left as it is).
fn unknown_fields(def: &ResourceDef, obj: &Value) -> Vec<String> {
    let mut copy = obj.clone();
    if def.is_custom() {
        match &def.schema {
            Some(schema) => crate::schema::prune(&mut copy, schema),
            None => Vec::new(),
        }
    } else {
        crate::openapi::drop_unknown_builtin_fields(&def.group, &def.version, &def.kind, &mut copy)
    }
}

/// The 400 of a create or update body with unknown fields under `fieldValidation=Strict`
/// (`transformDecodeError` over the strict decoding error).
fn decode_strict_error(def: &ResourceDef, listed: &[String]) -> ApiError {
    ApiError::bad_request(format!(
        "{kind} in version {v:?} cannot be handled as a {kind}: strict decoding error: {}",
        listed.join(", "),
        kind = def.kind,
        v = def.version
    ))
}

/// The 422 of a patch whose result has unknown fields under `fieldValidation=Strict`:
/// `NewInvalid(schema.GroupKind{}, "", field.Invalid(field.NewPath("patch"), <shown>, <strict
/// decoding error>))`, with the patched object's JSON (JSON and merge patches) or the patch's
/// map as Go prints it (strategic merge patches) as the value.
fn patch_strict_error(shown: String, listed: &[String]) -> ApiError {
    ApiError::invalid(
        "",
        "",
        "",
        vec![Cause::invalid(
            "patch",
            &Value::String(shown),
            &format!("strict decoding error: {}", listed.join(", ")),
        )],
    )
}

/// Server-side apply converts the applied configuration to a typed object first, and that
/// conversion refuses fields the schema does not declare whatever `fieldValidation` says:
/// kube-apiserver answers a plain error (500, no reason). Only custom resources are checked.
fn apply_unknown_fields(def: &ResourceDef, patch: &Value) -> Result<(), ApiError> {
    if !def.is_custom() {
        return Ok(());
    }
    let mut unknown = unknown_fields(def, patch);
    if unknown.is_empty() {
        return Ok(());
    }
    unknown.sort();
    let errors: Vec<String> =
        unknown.iter().map(|u| format!(".{u}: field not declared in schema")).collect();
    let detail = if errors.len() == 1 {
        errors.join("")
    } else {
        format!("errors:\n  {}", errors.join("\n  "))
    };
    let ns = meta_str(patch, "namespace").unwrap_or_default();
    let name = meta_str(patch, "name").unwrap_or_default();
    let group_version = if def.group.is_empty() {
        def.version.clone()
    } else {
        format!("{}/{}", def.group, def.version)
    };
    Err(ApiError::new(
        500,
        "",
        format!(
            "failed to create typed patch object ({ns}/{name}; {group_version}, Kind={}): {detail}",
            def.kind
        ),
    ))
}

/// The etcd key kube-apiserver names in storage errors: `/registry/<prefix>/<ns>/<name>`,
/// the prefix being the resource's (`DefaultStorageFactory.ResourcePrefix`).
fn storage_key(def: &ResourceDef, ns: &str, name: &str) -> String {
    let prefix = match (def.group.as_str(), def.plural.as_str()) {
        _ if def.is_custom() => format!("{}/{}", def.group, def.plural),
        ("apiextensions.k8s.io" | "apiregistration.k8s.io", p) => format!("{}/{p}", def.group),
        ("", "replicationcontrollers") => "controllers".into(),
        ("", "endpoints") => "services/endpoints".into(),
        ("", "nodes") => "minions".into(),
        ("", "services") => "services/specs".into(),
        ("networking.k8s.io" | "extensions", "ingresses") => "ingress".into(),
        (_, p) => p.to_string(),
    };
    if def.namespaced && !ns.is_empty() {
        format!("/registry/{prefix}/{ns}/{name}")
    } else {
        format!("/registry/{prefix}/{name}")
    }
}

/// An object as Go's `json.Marshal` writes it: compact, keys sorted, `<`, `>` and `&` escaped.
fn go_json(v: &Value) -> String {
    serde_json::to_string(v)
        .unwrap_or_default()
        .replace('<', "\\u003c")
        .replace('>', "\\u003e")
        .replace('&', "\\u0026")
}

/// A decoded JSON value as Go's `fmt.Sprintf("%+v", ...)` prints it: `map[k:v ...]` with the
/// keys sorted, `[a b]`, strings bare, `<nil>`.
fn go_map(v: &Value) -> String {
    match v {
        Value::Null => "<nil>".into(),
        Value::Bool(b) => b.to_string(),
        Value::Number(n) => n.to_string(),
        Value::String(s) => s.clone(),
        Value::Array(items) => {
            format!("[{}]", items.iter().map(go_map).collect::<Vec<_>>().join(" "))
        }
        Value::Object(m) => {
            let mut pairs: Vec<(&String, &Value)> = m.iter().collect();
            pairs.sort_by(|a, b| a.0.cmp(b.0));
            let parts: Vec<String> =
                pairs.iter().map(|(k, v)| format!("{k}:{}", go_map(v))).collect();
            format!("map[{}]", parts.join(" "))
        }
    }
}
