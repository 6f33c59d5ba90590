//! A container's environment, made as the kubelet makes it when it creates the container
//! (kubelet 1.36's `makeEnvironmentVariables`).
//!
//! `make_env` goes through the container's `envFrom`, then its `env`, in the kubelet's order:
//!
//! - `envFrom[].configMapRef` / `secretRef`: every key of the object's `data` (a Secret's
//!   decoded), with the entry's `prefix`;
//! - `env[].value`: with `$(VAR)` references to the variables made so far expanded, `$$` for a
//!   literal `$`, an unknown reference kept as written ([`expand`], the kubelet's
//!   `expansion.Expand` over `MappingFuncFor`);
//! - `env[].valueFrom.fieldRef`: the pod as the kubelet has it at that moment
//!   (`podFieldSelectorRuntimeValue`): `metadata.name`, `namespace`, `uid`,
//!   `labels['k']`, `annotations['k']` (and the whole maps, as `k="v"` lines), `spec.nodeName`,
//!   `spec.serviceAccountName`, `status.hostIP(s)`, `status.podIP(s)`;
//! - `env[].valueFrom.resourceFieldRef`: the container's allocated requests and limits, a
//!   missing or zero CPU, memory or ephemeral-storage limit standing in for the node's
//!   allocatable, divided by `divisor` and rounded up (`ExtractContainerResourceValue`);
//! - `env[].valueFrom.configMapKeyRef` / `secretKeyRef`: the key's value (a Secret's decoded).
//!
//! A later variable of the same name replaces an earlier one (`env` overrides `envFrom`). The
//! first reference that cannot be resolved gives the kubelet's error, which keeps the container
//! in `CreateContainerConfigError`: a missing ConfigMap, Secret or key that is not `optional`
//! (`configmap "x" not found`, `couldn't find key k in ConfigMap ns/x`), a field path the kubelet
//! does not support (`field label not supported: spec.x`), an unknown resource
//! (`unsupported container resource : limits.x`).
//!
//! The kubelet hands the variables to the runtime in Go map order (unspecified); the simulator
//! keeps the order in which names first appear. Not done: service-link variables (the
//! simulator assigns no cluster IPs, so a real kubelet would add none either), `fileKeyRef`
//! (read as empty), pod-level resources as the default limits, and the validation of label and
//! annotation keys in a subscript.

use super::objects::{EnvKind, EnvObjects, Lookup};
use super::scheduler::{Resources, parse_quantity};
use k8s_openapi::api::core::v1::{
    ConfigMap, Container, EnvFromSource, EnvVar, ObjectFieldSelector, Pod, ResourceFieldSelector,
    Secret,
};
use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

/// What a container's environment is made of: its `env` and `envFrom`, and its pod's namespace
/// (where the ConfigMaps and Secrets they name are).
#[derive(Clone, Debug, Default, PartialEq)]
pub(crate) struct ContainerEnv {
    pub(crate) namespace: String,
    env: Vec<EnvVar>,
    env_from: Vec<EnvFromSource>,
}

impl ContainerEnv {
    /// The environment of container `c` of `pod`.
    pub(crate) fn of(pod: &Pod, c: &Container) -> Arc<ContainerEnv> {
        Arc::new(ContainerEnv {
            namespace: pod.metadata.namespace.clone().unwrap_or_default(),
            env: c.env.clone().unwrap_or_default(),
            env_from: c.env_from.clone().unwrap_or_default(),
        })
    }

    /// The kinds of objects it reads, each once, in the order it reads them. As in the
    /// kubelet, an `env` entry with a non-empty `value` reads nothing, and `fieldRef` and
    /// `resourceFieldRef` (which read the pod) take precedence over the other sources.
    pub(crate) fn kinds(&self) -> Vec<EnvKind> {
        let from = self.env_from.iter().filter_map(|f| {
            if f.config_map_ref.is_some() {
                Some(EnvKind::ConfigMap)
            } else if f.secret_ref.is_some() {
                Some(EnvKind::Secret)
            } else {
                None
            }
        });
        let env = self.env.iter().filter_map(|e| {
            if e.value.as_deref().is_some_and(|v| !v.is_empty()) {
                return None;
            }
            let from = e.value_from.as_ref()?;
            if from.field_ref.is_some() || from.resource_field_ref.is_some() {
                None
            } else if from.config_map_key_ref.is_some() {
                Some(EnvKind::ConfigMap)
            } else if from.secret_key_ref.is_some() {
                Some(EnvKind::Secret)
            } else {
                None
            }
        });
        let mut kinds = Vec::new();
        for k in from.chain(env) {
            if !kinds.contains(&k) {
                kinds.push(k);
            }
        }
        kinds
    }
}

/// Why a container's environment cannot be made.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum EnvError {
    /// The ConfigMap (or Secret) cache has not synced yet.
    NotSynced(EnvKind),
    /// The kubelet's error, for `CreateContainerConfigError`.
    Failed(String),
}

impl EnvKind {
    /// The resource in the kubelet's not-found and cache errors.
    pub(crate) fn resource(self) -> &'static str {
        match self {
            EnvKind::ConfigMap => "configmap",
            EnvKind::Secret => "secret",
        }
    }

    /// The kind in the kubelet's missing-key errors.
    fn kind(self) -> &'static str {
        match self {
            EnvKind::ConfigMap => "ConfigMap",
            EnvKind::Secret => "Secret",
        }
    }

    /// The kind in the kubelet's no-client errors.
    fn client_kind(self) -> &'static str {
        match self {
            EnvKind::ConfigMap => "configMap",
            EnvKind::Secret => "secret",
        }
    }
}

/// What a container's environment is resolved against when the kubelet creates it.
pub(crate) struct EnvContext<'a> {
    /// The pod as the kubelet has it now (its labels and annotations of this moment).
    pub(crate) pod: &'a Pod,
    /// The pod's IP (the sandbox's).
    pub(crate) pod_ip: &'a str,
    /// The node's IP.
    pub(crate) host_ip: &'a str,
    /// The node's allocatable resources, in thousandths (the default limits).
    pub(crate) allocatable: Option<&'a Resources>,
    /// Where ConfigMaps and Secrets are read; `None`: a kubelet without an API client.
    pub(crate) objects: Option<&'a dyn EnvObjects>,
}

/// A container's requests and limits as the kubelet allocated them.
#[derive(Clone, Copy)]
pub(crate) struct ResourceLists<'a> {
    pub(crate) requests: &'a BTreeMap<String, Quantity>,
    pub(crate) limits: &'a BTreeMap<String, Quantity>,
}

/// Variables by name, in the order their names first appeared.
#[derive(Default)]
struct Vars {
    list: Vec<(String, String)>,
    index: HashMap<String, usize>,
}

impl Vars {
    fn set(&mut self, name: String, value: String) {
        match self.index.get(&name) {
            Some(&i) => self.list[i].1 = value,
            None => {
                self.index.insert(name.clone(), self.list.len());
                self.list.push((name, value));
            }
        }
    }

    fn get(&self, name: &str) -> Option<&str> {
        self.index.get(name).map(|&i| self.list[i].1.as_str())
    }
}

/// Makes the environment of a container (see the module documentation): `own` are the
/// container's allocated resources.
pub(crate) fn make_env(
    ctx: &EnvContext<'_>,
    env: &ContainerEnv,
    own: ResourceLists<'_>,
) -> Result<Vec<(String, String)>, EnvError> {
    let ns = env.namespace.as_str();
    let mut vars = Vars::default();
    for from in &env.env_from {
        let prefix = from.prefix.as_deref().unwrap_or_default();
        if let Some(r) = &from.config_map_ref {
            let Some(cm) = config_map(ctx, ns, &r.name, r.optional == Some(true))? else {
                continue;
            };
            for (k, v) in cm.data.iter().flatten() {
                vars.set(format!("{prefix}{k}"), v.clone());
            }
        } else if let Some(r) = &from.secret_ref {
            let Some(s) = secret(ctx, ns, &r.name, r.optional == Some(true))? else {
                continue;
            };
            for (k, v) in s.data.iter().flatten() {
                vars.set(format!("{prefix}{k}"), String::from_utf8_lossy(&v.0).into_owned());
            }
        }
    }
    for e in &env.env {
        let literal = e.value.as_deref().unwrap_or_default();
        let value = if !literal.is_empty() {
            expand(literal, |name| vars.get(name).map(str::to_owned))
        } else if let Some(from) = &e.value_from {
            if let Some(f) = &from.field_ref {
                field_value(ctx, f).map_err(EnvError::Failed)?
            } else if let Some(r) = &from.resource_field_ref {
                resource_value(ctx, r, own).map_err(EnvError::Failed)?
            } else if let Some(r) = &from.config_map_key_ref {
                let optional = r.optional == Some(true);
                let Some(cm) = config_map(ctx, ns, &r.name, optional)? else { continue };
                match cm.data.as_ref().and_then(|d| d.get(&r.key)) {
                    Some(v) => v.clone(),
                    None if optional => continue,
                    None => return Err(missing_key(EnvKind::ConfigMap, &r.key, ns, &r.name)),
                }
            } else if let Some(r) = &from.secret_key_ref {
                let optional = r.optional == Some(true);
                let Some(s) = secret(ctx, ns, &r.name, optional)? else { continue };
                match s.data.as_ref().and_then(|d| d.get(&r.key)) {
                    Some(v) => String::from_utf8_lossy(&v.0).into_owned(),
                    None if optional => continue,
                    None => return Err(missing_key(EnvKind::Secret, &r.key, ns, &r.name)),
                }
            } else {
                String::new()
            }
        } else {
            String::new()
        };
        vars.set(e.name.clone(), value);
    }
    Ok(vars.list)
}

fn missing_key(kind: EnvKind, key: &str, ns: &str, name: &str) -> EnvError {
    EnvError::Failed(format!("couldn't find key {key} in {} {ns}/{name}", kind.kind()))
}

/// An object looked up for the environment: `None` when it is missing and `optional`.
fn lookup<T>(
    kind: EnvKind,
    ctx: &EnvContext<'_>,
    ns: &str,
    name: &str,
    optional: bool,
    get: impl FnOnce(&dyn EnvObjects) -> Lookup<Arc<T>>,
) -> Result<Option<Arc<T>>, EnvError> {
    let Some(objects) = ctx.objects else {
        return Err(EnvError::Failed(format!(
            "couldn't get {} {ns}/{name}, no kubeClient defined",
            kind.client_kind()
        )));
    };
    match get(objects) {
        Lookup::Found(o) => Ok(Some(o)),
        Lookup::NotFound if optional => Ok(None),
        Lookup::NotFound => {
            Err(EnvError::Failed(format!("{} \"{name}\" not found", kind.resource())))
        }
        Lookup::NotSynced => Err(EnvError::NotSynced(kind)),
    }
}

fn config_map(
    ctx: &EnvContext<'_>,
    ns: &str,
    name: &str,
    optional: bool,
) -> Result<Option<Arc<ConfigMap>>, EnvError> {
    lookup(EnvKind::ConfigMap, ctx, ns, name, optional, |o| o.config_map(ns, name))
}

fn secret(
    ctx: &EnvContext<'_>,
    ns: &str,
    name: &str,
    optional: bool,
) -> Result<Option<Arc<Secret>>, EnvError> {
    lookup(EnvKind::Secret, ctx, ns, name, optional, |o| o.secret(ns, name))
}

/// Expands `$(VAR)` references in `input` as the kubelet's `expansion.Expand` does: `$(NAME)`
/// becomes `vars(NAME)`, or stays as written when `vars` does not know the name; `$$` becomes
/// `$`; any other `$` (and an unclosed `$(`) stays.
pub fn expand(input: &str, vars: impl Fn(&str) -> Option<String>) -> String {
    let b = input.as_bytes();
    let mut out: Vec<u8> = Vec::with_capacity(b.len());
    let mut checkpoint = 0;
    let mut cursor = 0;
    while cursor < b.len() {
        if b[cursor] == b'$' && cursor + 1 < b.len() {
            out.extend_from_slice(&b[checkpoint..cursor]);
            let rest = &b[cursor + 1..];
            let advance = match rest[0] {
                // `$$`: an escaped `$`.
                b'$' => {
                    out.push(b'$');
                    1
                }
                b'(' => match rest.iter().position(|&c| c == b')') {
                    Some(close) => {
                        // Between ASCII `(` and `)`: whole characters.
                        let name = String::from_utf8_lossy(&rest[1..close]);
                        match vars(&name) {
                            Some(v) => out.extend_from_slice(v.as_bytes()),
                            None => {
                                out.extend_from_slice(b"$(");
                                out.extend_from_slice(name.as_bytes());
                                out.push(b')');
                            }
                        }
                        close + 1
                    }
                    // An unclosed reference stays as written.
                    None => {
                        out.extend_from_slice(b"$(");
                        1
                    }
                },
                // Not a reference: `$` and the byte after it.
                other => {
                    out.push(b'$');
                    out.push(other);
                    1
                }
            };
            cursor += advance;
            checkpoint = cursor + 1;
        }
        cursor += 1;
    }
    out.extend_from_slice(&b[checkpoint.min(b.len())..]);
    // Only whole runs of the input's bytes and whole values were copied.
    String::from_utf8(out).unwrap_or_else(|e| String::from_utf8_lossy(e.as_bytes()).into_owned())
}

/// `metadata.labels['k']` → `("metadata.labels", "k")` (the kubelet's
/// `SplitMaybeSubscriptedPath`).
fn split_subscript(path: &str) -> Option<(&str, &str)> {
    let s = path.strip_suffix("']")?;
    let (p, sub) = s.split_once("['")?;
    (!p.is_empty()).then_some((p, sub))
}

/// A map as the kubelet's `fieldpath.FormatMap` writes it: `k="v"` lines, sorted by key.
fn format_map(m: Option<&BTreeMap<String, String>>) -> String {
    m.into_iter()
        .flatten()
        .map(|(k, v)| format!("{k}={}", go_quote(v)))
        .collect::<Vec<_>>()
        .join("\n")
}

/// A string as Go's `%q` writes it (escapes for quotes, backslashes and control characters).
fn go_quote(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\t' => out.push_str("\\t"),
            '\r' => out.push_str("\\r"),
            '\u{7}' => out.push_str("\\a"),
            '\u{8}' => out.push_str("\\b"),
            '\u{c}' => out.push_str("\\f"),
            '\u{b}' => out.push_str("\\v"),
            c if (c as u32) < 0x20 || c == '\u{7f}' => {
                out.push_str(&format!("\\x{:02x}", c as u32))
            }
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

/// The value of a `fieldRef` (the kubelet's `podFieldSelectorRuntimeValue`, after
/// `ConvertDownwardAPIFieldLabel`); `Err` with the kubelet's message.
fn field_value(ctx: &EnvContext<'_>, fs: &ObjectFieldSelector) -> Result<String, String> {
    // The API server defaults an absent apiVersion to v1.
    let version = fs.api_version.as_deref().unwrap_or("v1");
    if version != "v1" {
        return Err(format!("unsupported pod version: {version}"));
    }
    let path = fs.field_path.as_str();
    let meta = &ctx.pod.metadata;
    let spec = ctx.pod.spec.as_ref();
    if let Some((p, key)) = split_subscript(path) {
        let map = match p {
            "metadata.annotations" => meta.annotations.as_ref(),
            "metadata.labels" => meta.labels.as_ref(),
            _ => return Err(format!("field label does not support subscript: {path}")),
        };
        return Ok(map.and_then(|m| m.get(key)).cloned().unwrap_or_default());
    }
    let owned = |s: Option<&String>| s.cloned().unwrap_or_default();
    Ok(match path {
        "spec.nodeName" | "spec.host" => owned(spec.and_then(|s| s.node_name.as_ref())),
        "spec.serviceAccountName" => owned(spec.and_then(|s| s.service_account_name.as_ref())),
        "status.hostIP" | "status.hostIPs" => ctx.host_ip.to_owned(),
        "status.podIP" | "status.podIPs" => ctx.pod_ip.to_owned(),
        "metadata.name" => owned(meta.name.as_ref()),
        "metadata.namespace" => owned(meta.namespace.as_ref()),
        "metadata.uid" => owned(meta.uid.as_ref()),
        "metadata.labels" => format_map(meta.labels.as_ref()),
        "metadata.annotations" => format_map(meta.annotations.as_ref()),
        // Converted, but not read by `ExtractFieldPathAsString`.
        "spec.restartPolicy" | "spec.schedulerName" | "status.phase" => {
            return Err(format!("unsupported fieldPath: {path}"));
        }
        _ => return Err(format!("field label not supported: {path}")),
    })
}

/// The resources `limits.*` and `requests.*` a `resourceFieldRef` may name, with a limit the
/// node's allocatable stands in for when missing or zero.
const DEFAULTED_LIMITS: &[&str] = &["cpu", "memory", "ephemeral-storage"];

/// The value of a `resourceFieldRef` (the kubelet's `containerResourceRuntimeValue`); `Err`
/// with the kubelet's message.
fn resource_value(
    ctx: &EnvContext<'_>,
    rs: &ResourceFieldSelector,
    own: ResourceLists<'_>,
) -> Result<String, String> {
    let named;
    let lists = match rs.container_name.as_deref().filter(|n| !n.is_empty()) {
        None => own,
        Some(name) => {
            let spec = ctx.pod.spec.as_ref();
            let found = spec
                .into_iter()
                .flat_map(|s| s.containers.iter().chain(s.init_containers.iter().flatten()))
                .find(|c| c.name == name)
                .ok_or_else(|| format!("container {name} not found"))?;
            let r = found.resources.as_ref();
            named = (
                r.and_then(|r| r.requests.clone()).unwrap_or_default(),
                r.and_then(|r| r.limits.clone()).unwrap_or_default(),
            );
            ResourceLists { requests: &named.0, limits: &named.1 }
        }
    };
    let unsupported = || format!("unsupported container resource : {}", rs.resource);
    let (list, resource, is_limit) = if let Some(r) = rs.resource.strip_prefix("limits.") {
        (lists.limits, r, true)
    } else if let Some(r) = rs.resource.strip_prefix("requests.") {
        (lists.requests, r, false)
    } else {
        return Err(unsupported());
    };
    if !DEFAULTED_LIMITS.contains(&resource) && !resource.starts_with("hugepages-") {
        return Err(unsupported());
    }
    let mut value = list.get(resource).and_then(|q| parse_quantity(&q.0)).unwrap_or(0);
    if is_limit && value == 0 && DEFAULTED_LIMITS.contains(&resource) {
        value = ctx.allocatable.and_then(|a| a.get(resource)).copied().unwrap_or(0);
    }
    // An absent or zero divisor is 1.
    let divisor = rs.divisor.as_ref().and_then(|d| parse_quantity(&d.0)).unwrap_or(0);
    let divisor = if divisor == 0 { 1000 } else { divisor };
    Ok(ceil_ratio(value, divisor))
}

/// `ceil(value / divisor)` as the kubelet's `convertQuantityToString` writes it: `0` for a
/// value or divisor that is not positive, saturating at `i64::MAX`.
fn ceil_ratio(value: i128, divisor: i128) -> String {
    if value <= 0 || divisor <= 0 {
        return "0".to_owned();
    }
    let r = (value + divisor - 1) / divisor;
    i64::try_from(r).unwrap_or(i64::MAX).to_string()
}

#[cfg(test)]
mod tests {
    use super::super::objects::testing::MapObjects;
    use super::*;
    use serde_json::{Value, json};

    fn pod(containers: Value) -> Pod {
        serde_json::from_value(json!({
            "metadata": {"name": "web-0", "namespace": "default", "uid": "u-1",
                "labels": {"app": "web", "version": "v1"},
                "annotations": {"note": "say \"hi\"\n", "team": "a"}},
            "spec": {"nodeName": "n1", "serviceAccountName": "robot", "containers": containers}
        }))
        .expect("pod")
    }

    /// 8 CPUs, 16Gi of memory, 100Gi of ephemeral storage.
    fn allocatable() -> Resources {
        [("cpu", "8"), ("memory", "16Gi"), ("ephemeral-storage", "100Gi")]
            .into_iter()
            .filter_map(|(k, q)| Some((k.to_owned(), parse_quantity(q)?)))
            .collect()
    }

    /// The environment of the pod's first container.
    fn env_of(
        p: &Pod,
        objects: Option<&dyn EnvObjects>,
    ) -> Result<Vec<(String, String)>, EnvError> {
        let alloc = allocatable();
        let ctx = EnvContext {
            pod: p,
            pod_ip: "10.244.0.7",
            host_ip: "172.18.0.2",
            allocatable: Some(&alloc),
            objects,
        };
        let c = &p.spec.as_ref().expect("spec").containers[0];
        let r = c.resources.as_ref();
        let requests = r.and_then(|r| r.requests.clone()).unwrap_or_default();
        let limits = r.and_then(|r| r.limits.clone()).unwrap_or_default();
        make_env(
            &ctx,
            &ContainerEnv::of(p, c),
            ResourceLists { requests: &requests, limits: &limits },
        )
    }

    fn one(
        container: Value,
        objects: Option<&dyn EnvObjects>,
    ) -> Result<Vec<(String, String)>, EnvError> {
        let mut c = json!({"name": "app", "image": "nginx"});
        for (k, v) in container.as_object().expect("object") {
            c[k] = v.clone();
        }
        env_of(&pod(json!([c])), objects)
    }

    fn pairs(v: &[(&str, &str)]) -> Vec<(String, String)> {
        v.iter().map(|(k, v)| ((*k).to_owned(), (*v).to_owned())).collect()
    }

    fn field(path: &str) -> Value {
        json!({"fieldRef": {"fieldPath": path}})
    }

    #[test]
    fn expansion_follows_the_kubelets_rules() {
        let vars = |n: &str| match n {
            "A" => Some("1".to_owned()),
            "B" => Some("two".to_owned()),
            _ => None,
        };
        for (input, want) in [
            ("$(A)", "1"),
            ("x$(A)y$(B)z", "x1ytwoz"),
            ("$(A)$(B)", "1two"),
            // Unknown references stay as written.
            ("$(NOPE)", "$(NOPE)"),
            ("$()", "$()"),
            // `$$` escapes.
            ("$$(A)", "$(A)"),
            ("$$", "$"),
            ("$$$", "$$"),
            ("$$$(A)", "$1"),
            // Anything else stays.
            ("$A", "$A"),
            ("cost: 5$", "cost: 5$"),
            ("$(A", "$(A"),
            ("$($(A)", "$($(A)"),
            ("$(A$(B))", "$(A$(B))"),
            ("é$(A)ü", "é1ü"),
            ("", ""),
            ("plain", "plain"),
        ] {
            assert_eq!(expand(input, vars), want, "{input:?}");
        }
    }

    #[test]
    fn env_from_then_env_in_order_with_prefix_and_expansion() {
        let objects = MapObjects::default();
        objects.put_config_map("cfg", json!({"b": "2", "a": "1"}));
        // `c2VjcmV0` is `secret`.
        objects.put_secret("creds", json!({"token": "c2VjcmV0"}));
        let env = one(
            json!({
                "envFrom": [{"configMapRef": {"name": "cfg"}, "prefix": "P_"},
                            {"secretRef": {"name": "creds"}}],
                "env": [
                    {"name": "P_a", "value": "over"},
                    // Y is not made yet: its reference stays.
                    {"name": "X", "value": "$(P_b)-$(Y)-$(token)"},
                    {"name": "Y", "value": "y"},
                    {"name": "Z", "value": "$(Y)$$(Y)"},
                    {"name": "EMPTY"},
                    {"name": "KEY", "valueFrom": {"configMapKeyRef": {"name": "cfg", "key": "a"}}},
                    {"name": "PASS", "valueFrom": {"secretKeyRef": {"name": "creds", "key": "token"}}},
                    // A value taken from a reference is not expanded.
                    {"name": "LABEL", "valueFrom": field("metadata.annotations['team']")},
                    {"name": "Y", "value": "later"}
                ]
            }),
            Some(&objects),
        )
        .expect("env");
        assert_eq!(
            env,
            pairs(&[
                ("P_a", "over"),
                ("P_b", "2"),
                ("token", "secret"),
                ("X", "2-$(Y)-secret"),
                ("Y", "later"),
                ("Z", "y$(Y)"),
                ("EMPTY", ""),
                ("KEY", "1"),
                ("PASS", "secret"),
                ("LABEL", "a"),
            ])
        );
    }

    #[test]
    fn optional_references_to_missing_objects_and_keys_are_skipped() {
        let objects = MapObjects::default();
        objects.put_config_map("cfg", json!({"a": "1"}));
        let env = one(
            json!({
                "envFrom": [{"configMapRef": {"name": "gone", "optional": true}},
                            {"secretRef": {"name": "gone", "optional": true}}],
                "env": [
                    {"name": "A", "valueFrom": {"configMapKeyRef": {"name": "cfg", "key": "x", "optional": true}}},
                    {"name": "B", "valueFrom": {"configMapKeyRef": {"name": "gone", "key": "a", "optional": true}}},
                    {"name": "C", "valueFrom": {"secretKeyRef": {"name": "gone", "key": "a", "optional": true}}},
                    {"name": "D", "valueFrom": {"configMapKeyRef": {"name": "cfg", "key": "a", "optional": true}}}
                ]
            }),
            Some(&objects),
        )
        .expect("env");
        assert_eq!(env, pairs(&[("D", "1")]));
    }

    #[test]
    fn field_references_read_the_pod() {
        let cases = [
            ("metadata.name", "web-0"),
            ("metadata.namespace", "default"),
            ("metadata.uid", "u-1"),
            ("metadata.labels['version']", "v1"),
            ("metadata.labels['absent']", ""),
            ("metadata.annotations['team']", "a"),
            ("metadata.labels", "app=\"web\"\nversion=\"v1\""),
            ("metadata.annotations", "note=\"say \\\"hi\\\"\\n\"\nteam=\"a\""),
            ("spec.nodeName", "n1"),
            ("spec.host", "n1"),
            ("spec.serviceAccountName", "robot"),
            ("status.podIP", "10.244.0.7"),
            ("status.podIPs", "10.244.0.7"),
            ("status.hostIP", "172.18.0.2"),
            ("status.hostIPs", "172.18.0.2"),
        ];
        for (path, want) in cases {
            let env =
                one(json!({"env": [{"name": "V", "valueFrom": field(path)}]}), None).expect(path);
            assert_eq!(env, pairs(&[("V", want)]), "{path}");
        }
        let env = one(
            json!({"env": [{"name": "V", "valueFrom": {"fieldRef": {"apiVersion": "v1", "fieldPath": "metadata.name"}}}]}),
            None,
        );
        assert_eq!(env, Ok(pairs(&[("V", "web-0")])));
    }

    #[test]
    fn field_references_the_kubelet_cannot_read_fail() {
        let cases = [
            (json!({"fieldPath": "spec.containers"}), "field label not supported: spec.containers"),
            (json!({"fieldPath": "status.phase"}), "unsupported fieldPath: status.phase"),
            (
                json!({"fieldPath": "spec.nodeSelector['zone']"}),
                "field label does not support subscript: spec.nodeSelector['zone']",
            ),
            (
                json!({"apiVersion": "v2", "fieldPath": "metadata.name"}),
                "unsupported pod version: v2",
            ),
        ];
        for (selector, message) in cases {
            let env =
                one(json!({"env": [{"name": "V", "valueFrom": {"fieldRef": selector}}]}), None);
            assert_eq!(env, Err(EnvError::Failed(message.to_owned())), "{selector}");
        }
    }

    #[test]
    fn resource_references_divide_and_round_up() {
        let resources = json!({
            "requests": {"cpu": "250m", "memory": "64Mi"},
            "limits": {"cpu": "1500m", "hugepages-2Mi": "4Mi"}
        });
        let cases = [
            ("limits.cpu", None, "2"),
            ("limits.cpu", Some("1m"), "1500"),
            ("requests.cpu", None, "1"),
            ("requests.cpu", Some("1m"), "250"),
            ("requests.cpu", Some("0"), "1"),
            ("requests.memory", None, "67108864"),
            ("requests.memory", Some("1Mi"), "64"),
            ("requests.memory", Some("1M"), "68"),
            // No memory or ephemeral-storage limit: the node's allocatable.
            ("limits.memory", Some("1Gi"), "16"),
            ("limits.ephemeral-storage", Some("1Gi"), "100"),
            // No request: 0.
            ("requests.ephemeral-storage", None, "0"),
            ("limits.hugepages-2Mi", Some("1Mi"), "4"),
            ("requests.hugepages-2Mi", None, "0"),
        ];
        for (resource, divisor, want) in cases {
            let mut selector = json!({"resource": resource});
            if let Some(d) = divisor {
                selector["divisor"] = json!(d);
            }
            let env = one(
                json!({"resources": resources,
                    "env": [{"name": "R", "valueFrom": {"resourceFieldRef": selector}}]}),
                None,
            );
            assert_eq!(env, Ok(pairs(&[("R", want)])), "{resource} / {divisor:?}");
        }
    }

    #[test]
    fn resource_references_of_another_container_and_unsupported_ones() {
        let p = pod(json!([
            {"name": "app", "image": "nginx", "env": [
                {"name": "SIDE_CPU", "valueFrom": {"resourceFieldRef": {"containerName": "side", "resource": "limits.cpu", "divisor": "1m"}}},
                {"name": "OWN_CPU", "valueFrom": {"resourceFieldRef": {"containerName": "app", "resource": "limits.cpu"}}}
            ]},
            {"name": "side", "image": "envoy", "resources": {"limits": {"cpu": "300m"}}}
        ]));
        // No CPU limit of its own: the node's 8.
        assert_eq!(env_of(&p, None), Ok(pairs(&[("SIDE_CPU", "300"), ("OWN_CPU", "8")])));
        for (selector, message) in [
            (
                json!({"resource": "limits.nvidia.com/gpu"}),
                "unsupported container resource : limits.nvidia.com/gpu",
            ),
            (json!({"resource": "cpu"}), "unsupported container resource : cpu"),
            (
                json!({"containerName": "nope", "resource": "limits.cpu"}),
                "container nope not found",
            ),
        ] {
            let env = one(
                json!({"env": [{"name": "R", "valueFrom": {"resourceFieldRef": selector}}]}),
                None,
            );
            assert_eq!(env, Err(EnvError::Failed(message.to_owned())), "{selector}");
        }
    }

    #[test]
    fn the_first_reference_that_fails_gives_the_error() {
        let objects = MapObjects::default();
        objects.put_config_map("cfg", json!({"a": "1"}));
        let env = one(
            json!({"env": [
                {"name": "A", "valueFrom": {"configMapKeyRef": {"name": "cfg", "key": "a"}}},
                {"name": "B", "valueFrom": field("spec.bogus")},
                {"name": "C", "valueFrom": {"configMapKeyRef": {"name": "gone", "key": "a"}}}
            ]}),
            Some(&objects),
        );
        assert_eq!(env, Err(EnvError::Failed("field label not supported: spec.bogus".to_owned())));
        let env = one(
            json!({"env": [{"name": "C", "valueFrom": {"configMapKeyRef": {"name": "gone", "key": "a"}}}]}),
            Some(&objects),
        );
        assert_eq!(env, Err(EnvError::Failed("configmap \"gone\" not found".to_owned())));
        objects.unsynced.store(true, std::sync::atomic::Ordering::SeqCst);
        let env = one(json!({"envFrom": [{"secretRef": {"name": "s"}}]}), Some(&objects));
        assert_eq!(env, Err(EnvError::NotSynced(EnvKind::Secret)));
        // Without an object source every reference fails, optional or not.
        let env =
            one(json!({"envFrom": [{"configMapRef": {"name": "cfg", "optional": true}}]}), None);
        assert_eq!(
            env,
            Err(EnvError::Failed(
                "couldn't get configMap default/cfg, no kubeClient defined".to_owned()
            ))
        );
    }

    #[test]
    fn kinds_are_listed_once_in_reading_order() {
        let p = pod(json!([{"name": "app", "env": [
            {"name": "A", "valueFrom": {"secretKeyRef": {"name": "s", "key": "k"}}},
            {"name": "B", "value": "x", "valueFrom": {"configMapKeyRef": {"name": "c", "key": "k"}}},
            {"name": "C", "valueFrom": field("metadata.name")},
            {"name": "D", "valueFrom": {"configMapKeyRef": {"name": "c", "key": "k"}}},
            {"name": "E", "valueFrom": {"secretKeyRef": {"name": "s2", "key": "k"}}}
        ]}]));
        let c = &p.spec.as_ref().expect("spec").containers[0];
        assert_eq!(ContainerEnv::of(&p, c).kinds(), vec![EnvKind::Secret, EnvKind::ConfigMap]);
        let p = pod(json!([{"name": "app", "env": [{"name": "B", "value": "x"}]}]));
        let c = &p.spec.as_ref().expect("spec").containers[0];
        assert!(ContainerEnv::of(&p, c).kinds().is_empty());
    }
}
