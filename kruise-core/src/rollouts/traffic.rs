//! Traffic routing for a release: the canary Service, the stable Service's selector and the
//! nginx Ingress canary, as upstream's `pkg/trafficrouting` builds them. Pure builders; the
//! Rollout planner ([`super::rollout`]) decides when each is written.
//!
//! - The canary Service, `<service>-canary`, is the stable Service's spec with the cluster
//!   IPs, external IPs, IP families, load balancer IP and node ports cleared, selecting the new
//!   revision (`<revision label>=<canary revision>`); the Rollout owns it.
//! - The stable Service's selector gains `<revision label>=<stable revision>` while the release
//!   runs, so that the new pods (which carry the same app labels) take no stable traffic.
//! - The canary Ingress, `<ingress>-canary`, copies the stable Ingress's labels, annotations,
//!   class and TLS, keeps only the rules and paths whose backend is the stable Service,
//!   pointed at the canary Service, and carries the canary annotations of its
//!   [`IngressClass`] (upstream's Lua scripts for nginx, higress, mse and aliyun-alb, written
//!   here in Rust): `canary: "true"`, `canary-weight` from the step's `traffic`, and for the
//!   first header of each match (the last match wins) `canary-by-header` with
//!   `canary-by-header-value` (or `-pattern` for a regular expression), or `canary-by-cookie`
//!   for a header named `canary-by-cookie`.

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::Service;
use k8s_openapi::api::networking::v1::Ingress;
use kruise_api::rollouts::gateway::MatchType;
use kruise_api::rollouts::v1beta1::CanaryStep;
use serde_json::{Value, json};

/// The suffix of the canary Service's and the canary Ingress's names.
pub const CANARY_SUFFIX: &str = "-canary";

/// The nginx annotation prefix.
const NGINX: &str = "nginx.ingress.kubernetes.io/";

/// The Ingress controllers a canary Ingress is written for (`ingress.classType`), as
/// upstream's built-in scripts name them.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum IngressClass {
    /// ingress-nginx (the default).
    Nginx,
    /// Higress, which reads nginx's canary annotations.
    Higress,
    /// Alibaba Cloud MSE: nginx's annotations, plus query-parameter matches, a header
    /// modifier and `mse.ingress.kubernetes.io/service-subset`.
    Mse,
    /// Alibaba Cloud ALB: `alb.ingress.kubernetes.io/` annotations and `order: "1"`.
    AliyunAlb,
}

impl IngressClass {
    /// The class a `classType` names (empty: nginx); `None` for one no script exists for.
    pub fn from_class_type(class_type: &str) -> Option<Self> {
        match class_type {
            "" | "nginx" => Some(Self::Nginx),
            "higress" => Some(Self::Higress),
            "mse" => Some(Self::Mse),
            "aliyun-alb" => Some(Self::AliyunAlb),
            _ => None,
        }
    }

    fn prefix(self) -> &'static str {
        match self {
            Self::AliyunAlb => ALB,
            Self::Nginx | Self::Higress | Self::Mse => NGINX,
        }
    }
}

/// The ALB annotation prefix.
const ALB: &str = "alb.ingress.kubernetes.io/";

/// MSE's own annotation prefix.
const MSE: &str = "mse.ingress.kubernetes.io/";

/// The query-parameter keys MSE's script sets (under nginx's prefix) and clears (under
/// both).
const QUERY_KEYS: &[&str] =
    &["canary-by-query", "canary-by-query-pattern", "canary-by-query-value"];

/// The canary annotations the planner sets or clears, without the prefix.
const CANARY_KEYS: &[&str] = &[
    "canary",
    "canary-by-cookie",
    "canary-by-header",
    "canary-by-header-pattern",
    "canary-by-header-value",
    "canary-weight",
];

/// `<name>-canary`.
pub fn canary_name(name: &str) -> String {
    format!("{name}{CANARY_SUFFIX}")
}

/// A step's traffic weight: `"5%"` is 5; `None` when unset or not a percentage from 0 to 100.
pub fn weight(step: &CanaryStep) -> Option<i32> {
    let traffic = step.traffic.as_deref()?;
    let number: i32 = traffic.strip_suffix('%')?.trim().parse().ok()?;
    (0..=100).contains(&number).then_some(number)
}

/// Whether the step routes traffic (a weight or matches).
pub fn routes_traffic(step: &CanaryStep) -> bool {
    step.traffic.is_some() || !step.matches.is_empty()
}

/// The labels of a canary's `patchPodTemplateMetadata` that the canary Service selects on.
#[derive(Clone, Copy, Debug)]
pub struct SelectorPatch<'a> {
    /// The labels.
    pub labels: &'a std::collections::BTreeMap<String, String>,
    /// `AppendPodSelector` (Kruise Rollout's gate): labels the stable selector lacks are
    /// added too; without it only the stable selector's own keys are rewritten.
    pub append: bool,
}

/// The canary Service for `stable`, selecting `revision_key=revision` and the labels of
/// `selector_patch`, owned by `owner` (an owner reference as JSON).
pub fn canary_service(
    stable: &Service,
    revision_key: &str,
    revision: &str,
    selector_patch: SelectorPatch<'_>,
    owner: &Value,
) -> Value {
    let name = canary_name(stable.metadata.name.as_deref().unwrap_or_default());
    let mut spec =
        serde_json::to_value(stable.spec.clone().unwrap_or_default()).unwrap_or_default();
    if let Value::Object(map) = &mut spec {
        for field in [
            "clusterIP",
            "clusterIPs",
            "externalIPs",
            "ipFamilies",
            "ipFamilyPolicy",
            "loadBalancerIP",
            "healthCheckNodePort",
        ] {
            map.remove(field);
        }
        if let Some(Value::Array(ports)) = map.get_mut("ports") {
            for port in ports {
                if let Value::Object(port) = port {
                    port.remove("nodePort");
                }
            }
        }
        let selector = map.entry("selector").or_insert_with(|| json!({}));
        selector[revision_key] = json!(revision);
        if let Value::Object(selector) = selector {
            for (key, value) in selector_patch.labels {
                if selector_patch.append || selector.contains_key(key) {
                    selector.insert(key.clone(), json!(value));
                }
            }
        }
    }
    json!({
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {
            "name": name,
            "namespace": stable.metadata.namespace,
            "ownerReferences": [owner],
        },
        "spec": spec,
    })
}

/// Whether `service` selects `key=value` (`None`: does not select on `key`).
pub fn selects(service: &Service, key: &str, value: Option<&str>) -> bool {
    let selector = service.spec.as_ref().and_then(|s| s.selector.as_ref());
    selector.and_then(|s| s.get(key)).map(String::as_str) == value
}

/// The merge patch that sets (or, with `None`, removes) `key` in a Service's selector.
pub fn selector_patch(key: &str, value: Option<&str>) -> Value {
    json!({"spec": {"selector": {key: value}}})
}

/// The canary annotations of `class` for `step`, every canary key present (`None`: removed).
/// `current` are the canary Ingress's annotations as they are (MSE's `service-subset` is
/// rewritten only where present).
pub fn ingress_annotations(
    class: IngressClass,
    current: &BTreeMap<String, String>,
    step: &CanaryStep,
) -> BTreeMap<String, Option<String>> {
    let prefix = class.prefix();
    let mut annotations: BTreeMap<String, Option<String>> =
        CANARY_KEYS.iter().map(|k| (format!("{prefix}{k}"), None)).collect();
    if class == IngressClass::Mse {
        for key in QUERY_KEYS {
            annotations.insert(format!("{MSE}{key}"), None);
            annotations.insert(format!("{NGINX}{key}"), None);
        }
    }
    let mut set = |key: String, value: String| {
        annotations.insert(key, Some(value));
    };
    set(format!("{prefix}canary"), "true".to_owned());
    if class == IngressClass::AliyunAlb {
        set(format!("{ALB}order"), "1".to_owned());
    }
    if let Some(weight) = weight(step) {
        set(format!("{prefix}canary-weight"), weight.to_string());
    }
    if class == IngressClass::Mse {
        if current.contains_key(&format!("{MSE}service-subset")) {
            set(format!("{MSE}service-subset"), "gray".to_owned());
        }
        if let Some(modifier) = &step.request_header_modifier {
            let lines: Vec<String> =
                modifier.set.iter().map(|h| format!("{} {}", h.name, h.value)).collect();
            set(format!("{MSE}request-header-control-update"), lines.join("\n"));
        }
    }
    for m in &step.matches {
        if let Some(header) = m.headers.first() {
            if header.name == "canary-by-cookie" {
                set(format!("{prefix}canary-by-cookie"), header.value.clone());
            } else {
                set(format!("{prefix}canary-by-header"), header.name.clone());
                let key = match header.type_ {
                    Some(MatchType::RegularExpression) => "canary-by-header-pattern",
                    _ => "canary-by-header-value",
                };
                set(format!("{prefix}{key}"), header.value.clone());
            }
        }
        if class == IngressClass::Mse
            && let Some(query) = m.query_params.first()
        {
            set(format!("{NGINX}canary-by-query"), query.name.clone());
            let key = match query.type_ {
                Some(MatchType::RegularExpression) => "canary-by-query-pattern",
                _ => "canary-by-query-value",
            };
            set(format!("{NGINX}{key}"), query.value.clone());
        }
    }
    annotations
}

/// The annotations `ingress` should change to carry `desired`: a merge patch of the
/// annotations, or `None` when it already does.
pub fn ingress_annotation_patch(
    ingress: &Ingress,
    desired: &BTreeMap<String, Option<String>>,
) -> Option<Value> {
    let current = ingress.metadata.annotations.clone().unwrap_or_default();
    let changes: serde_json::Map<String, Value> = desired
        .iter()
        .filter(|(k, v)| current.get(*k) != v.as_ref())
        .map(|(k, v)| (k.clone(), v.as_ref().map_or(Value::Null, |v| json!(v))))
        .collect();
    (!changes.is_empty()).then(|| json!({"metadata": {"annotations": changes}}))
}

/// The canary Ingress for `stable`: its rules and paths that lead to `stable_service`, led
/// to `canary_service` instead, with the canary annotations of `class` at weight 0 (the
/// step's are set once the Ingress exists, as upstream does), owned by `owner`. `None` when
/// no path of `stable` leads to `stable_service`.
pub fn canary_ingress(
    stable: &Ingress,
    stable_service: &str,
    canary_service: &str,
    owner: &Value,
    class: IngressClass,
) -> Option<Value> {
    let spec = stable.spec.clone().unwrap_or_default();
    let mut rules = Vec::new();
    for rule in spec.rules.iter().flatten() {
        let Some(http) = &rule.http else { continue };
        let paths: Vec<Value> = http
            .paths
            .iter()
            .filter(|p| p.backend.service.as_ref().is_some_and(|s| s.name == stable_service))
            .map(|p| {
                let mut path = serde_json::to_value(p).unwrap_or_default();
                path["backend"]["service"]["name"] = json!(canary_service);
                path
            })
            .collect();
        if !paths.is_empty() {
            let mut rule = serde_json::to_value(rule).unwrap_or_default();
            rule["http"]["paths"] = Value::Array(paths);
            rules.push(rule);
        }
    }
    if rules.is_empty() {
        return None;
    }
    let mut annotations = stable.metadata.annotations.clone().unwrap_or_default();
    annotations.remove("kubectl.kubernetes.io/last-applied-configuration");
    let zero = CanaryStep { traffic: Some("0%".to_owned()), ..Default::default() };
    for (key, value) in ingress_annotations(class, &annotations.clone(), &zero) {
        match value {
            Some(value) => annotations.insert(key, value),
            None => annotations.remove(&key),
        };
    }
    let mut body = json!({
        "apiVersion": "networking.k8s.io/v1",
        "kind": "Ingress",
        "metadata": {
            "name": canary_name(stable.metadata.name.as_deref().unwrap_or_default()),
            "namespace": stable.metadata.namespace,
            "labels": stable.metadata.labels.clone().unwrap_or_default(),
            "annotations": annotations,
            "ownerReferences": [owner],
        },
        "spec": {"rules": rules},
    });
    if let Some(class) = &spec.ingress_class_name {
        body["spec"]["ingressClassName"] = json!(class);
    }
    if let Some(tls) = &spec.tls {
        body["spec"]["tls"] = serde_json::to_value(tls).unwrap_or_default();
    }
    Some(body)
}

/// Whether a Gateway API `backendRef` is the Service `name` (no group or the core group, no
/// kind or `Service`).
fn is_service_backend(backend: &Value, name: &str) -> bool {
    let group = backend.get("group").and_then(Value::as_str).unwrap_or_default();
    let kind = backend.get("kind").and_then(Value::as_str).unwrap_or("Service");
    group.is_empty()
        && kind == "Service"
        && backend.get("name").and_then(Value::as_str) == Some(name)
}

fn backends(rule: &Value) -> Vec<Value> {
    rule.get("backendRefs").and_then(Value::as_array).cloned().unwrap_or_default()
}

/// The rules of an HTTPRoute's spec.
pub fn route_rules(route: &Value) -> Vec<Value> {
    route.pointer("/spec/rules").and_then(Value::as_array).cloned().unwrap_or_default()
}

/// The HTTPRoute rules that send the step's traffic to `canary`, from `rules` as they are:
/// with matches, every rule that leads to `stable` gets a copy leading only to `canary`, for
/// requests that also match the step's headers and query parameters (a step match with a
/// path is a rule of its own), and the weights are restored; without, every such rule weighs
/// `canary` at the step's weight and `stable` at the rest. Rules that led only to `canary`
/// before are dropped first.
pub fn routed_rules(rules: &[Value], stable: &str, canary: &str, step: &CanaryStep) -> Vec<Value> {
    let mut out: Vec<Value> = rules
        .iter()
        .filter(|r| {
            let refs = backends(r);
            refs.is_empty() || !refs.iter().all(|b| is_service_backend(b, canary))
        })
        .cloned()
        .collect();
    if !step.matches.is_empty() {
        // Matches take the place of weights.
        out = restored_rules(&out, stable, canary);
        let added = matched_copies(&out, stable, canary, step);
        out.extend(added);
        return out;
    }
    let weight = weight(step).unwrap_or(0);
    for rule in &mut out {
        let refs = backends(rule);
        let Some(stable_ref) = refs.iter().find(|b| is_service_backend(b, stable)).cloned() else {
            continue;
        };
        let mut next: Vec<Value> = Vec::new();
        for backend in refs {
            if is_service_backend(&backend, canary) {
                continue;
            }
            let mut backend = backend;
            if is_service_backend(&backend, stable) {
                backend["weight"] = json!(100 - weight);
            }
            next.push(backend);
        }
        let mut canary_ref = stable_ref;
        canary_ref["name"] = json!(canary);
        canary_ref["weight"] = json!(weight);
        next.push(canary_ref);
        rule["backendRefs"] = Value::Array(next);
    }
    out
}

/// For each rule that leads to `stable`, a copy leading only to `canary` for requests that
/// also match the step's headers and query parameters (a step match with a path is a match of
/// its own).
fn matched_copies(rules: &[Value], stable: &str, canary: &str, step: &CanaryStep) -> Vec<Value> {
    let mut added = Vec::new();
    for rule in rules {
        // Weights go back to the stable Service alone.
        let Some(stable_ref) = backends(rule).into_iter().find(|b| is_service_backend(b, stable))
        else {
            continue;
        };
        let mut canary_ref = stable_ref.clone();
        canary_ref["name"] = json!(canary);
        if let Value::Object(map) = &mut canary_ref {
            map.remove("weight");
        }
        let originals: Vec<Value> = rule
            .get("matches")
            .and_then(Value::as_array)
            .cloned()
            .filter(|m| !m.is_empty())
            .unwrap_or_else(|| vec![json!({})]);
        let mut matches = Vec::new();
        for original in &originals {
            for wanted in step.matches.iter().filter(|m| m.path.is_none()) {
                let mut m = original.clone();
                for (field, extra) in [
                    ("headers", serde_json::to_value(&wanted.headers).unwrap_or_default()),
                    ("queryParams", serde_json::to_value(&wanted.query_params).unwrap_or_default()),
                ] {
                    let extra = extra.as_array().cloned().unwrap_or_default();
                    if extra.is_empty() {
                        continue;
                    }
                    let list =
                        m.as_object_mut().map(|o| o.entry(field).or_insert_with(|| json!([])));
                    if let Some(Value::Array(list)) = list {
                        list.extend(extra);
                    }
                }
                matches.push(m);
            }
        }
        for wanted in step.matches.iter().filter(|m| m.path.is_some()) {
            let m = serde_json::to_value(wanted).unwrap_or_default();
            if !matches.contains(&m) {
                matches.push(m);
            }
        }
        let mut copy = rule.clone();
        copy["matches"] = Value::Array(matches);
        copy["backendRefs"] = json!([canary_ref]);
        added.push(copy);
    }
    added
}

/// The annotation on an HTTPRoute that records the rules a release added to it while the
/// new versions' side is the stable Service itself (a TrafficRouting, or a Rollout with
/// `disableGenerateCanaryService`). Such rules lead where the route's own rules lead, so
/// only this record tells them apart; upstream removes every rule that leads only to the
/// "canary" Service, which there takes the route's own rules with it.
pub const ADDED_RULES_ANNOTATION: &str = "rollouts.kruise.io/added-route-rules";

/// A rule as kube-apiserver stores it under the Gateway API CRDs' defaults (a rule without
/// matches matches every path; header and query matches are `Exact`; a backend is a core
/// `Service` of weight 1), so that a rule written and the same rule read back compare equal.
fn normalized_rule(rule: &Value) -> Value {
    let mut rule = rule.clone();
    let Some(map) = rule.as_object_mut() else { return rule };
    map.entry("matches").or_insert_with(|| json!([{"path": {"type": "PathPrefix", "value": "/"}}]));
    if let Some(Value::Array(matches)) = map.get_mut("matches") {
        for m in matches.iter_mut().filter_map(Value::as_object_mut) {
            if let Some(Value::Object(path)) = m.get_mut("path") {
                path.entry("type").or_insert_with(|| json!("PathPrefix"));
                path.entry("value").or_insert_with(|| json!("/"));
            }
            for field in ["headers", "queryParams"] {
                if let Some(Value::Array(list)) = m.get_mut(field) {
                    for item in list.iter_mut().filter_map(Value::as_object_mut) {
                        item.entry("type").or_insert_with(|| json!("Exact"));
                    }
                }
            }
        }
    }
    if let Some(Value::Array(refs)) = map.get_mut("backendRefs") {
        for backend in refs.iter_mut().filter_map(Value::as_object_mut) {
            backend.entry("group").or_insert_with(|| json!(""));
            backend.entry("kind").or_insert_with(|| json!("Service"));
            backend.entry("weight").or_insert_with(|| json!(1));
        }
    }
    rule
}

fn same_rules(a: &[Value], b: &[Value]) -> bool {
    a.len() == b.len() && a.iter().zip(b).all(|(x, y)| normalized_rule(x) == normalized_rule(y))
}

/// The patch of an HTTPRoute whose new versions' side is `stable` itself: the rules
/// recorded in [`ADDED_RULES_ANNOTATION`] are taken out, then, for a step with matches, each
/// rule leading to `stable` gets a copy for the matching requests, recorded anew (a weight
/// alone changes nothing: both sides are the same Service). `step: None` only takes them
/// out. `None` when the route is as wanted already.
pub fn shared_route_patch(route: &Value, stable: &str, step: Option<&CanaryStep>) -> Option<Value> {
    let recorded_text = route
        .pointer("/metadata/annotations")
        .and_then(|a| a.get(ADDED_RULES_ANNOTATION))
        .and_then(Value::as_str);
    let recorded: Vec<Value> =
        recorded_text.and_then(|text| serde_json::from_str(text).ok()).unwrap_or_default();
    let current = route_rules(route);
    let mut base = current.clone();
    for rule in &recorded {
        let wanted = normalized_rule(rule);
        if let Some(i) = base.iter().position(|r| normalized_rule(r) == wanted) {
            base.remove(i);
        }
    }
    let added = match step {
        Some(step) if !step.matches.is_empty() => matched_copies(&base, stable, stable, step),
        _ => Vec::new(),
    };
    let record = (!added.is_empty()).then(|| serde_json::to_string(&added).unwrap_or_default());
    let mut desired = base;
    desired.extend(added);
    if same_rules(&desired, &current) && record.as_deref() == recorded_text {
        return None;
    }
    Some(json!({
        "metadata": {"annotations": {ADDED_RULES_ANNOTATION: record}},
        "spec": {"rules": desired},
    }))
}

/// The HTTPRoute rules with the canary gone, as upstream leaves them: `canary` backends
/// removed, the stable backend's weight back to 1, and rules left without a backend dropped.
pub fn restored_rules(rules: &[Value], stable: &str, canary: &str) -> Vec<Value> {
    rules
        .iter()
        .filter_map(|rule| {
            let refs = backends(rule);
            if refs.is_empty() {
                return Some(rule.clone());
            }
            let kept: Vec<Value> = refs
                .into_iter()
                .filter(|b| !is_service_backend(b, canary))
                .map(|mut b| {
                    if is_service_backend(&b, stable) && b.get("weight").is_some() {
                        b["weight"] = json!(1);
                    }
                    b
                })
                .collect();
            if kept.is_empty() {
                return None;
            }
            let mut rule = rule.clone();
            rule["backendRefs"] = Value::Array(kept);
            Some(rule)
        })
        .collect()
}

/// The route writes of one traffic routing (its Ingress or Gateway API HTTPRoute), shared by
/// the Rollout planner and the TrafficRouting planner: each method pushes what must be
/// written onto `actions` and says whether things are (or, once written, will be) in place;
/// `Err` names what is missing.
pub struct Router<'a> {
    /// The routing.
    pub routing: &'a kruise_api::rollouts::v1beta1::TrafficRoutingRef,
    /// The objects it names, as read.
    pub objects: &'a super::rollout::TrafficObjects,
    /// Their namespace.
    pub namespace: &'a str,
    /// The controller owner reference of what is created.
    pub owner: &'a Value,
    /// The Service the new versions' traffic goes to: `<service>-canary` for a Rollout, the
    /// stable Service itself for a TrafficRouting (whose pods are told apart downstream).
    pub canary_service: String,
}

impl Router<'_> {
    fn ingress_target(&self, name: &str) -> crate::plan::Target {
        crate::plan::Target::new(crate::plan::ObjectKind::INGRESS, Some(self.namespace), name)
    }

    /// The HTTPRoute's rules become `rules` (a patch guarded by the route's resourceVersion)
    /// unless they already are.
    fn ensure_route_rules(
        &self,
        actions: &mut Vec<crate::plan::Action>,
        rules: impl FnOnce(&[Value]) -> Vec<Value>,
    ) -> Result<bool, String> {
        self.patch_route(actions, |route| {
            let current = route_rules(route);
            let desired = rules(&current);
            (!same_rules(&desired, &current)).then(|| json!({"spec": {"rules": desired}}))
        })
    }

    /// True when the new versions' side is the stable Service itself.
    fn shared(&self) -> bool {
        self.canary_service == self.routing.service
    }

    /// Writes the merge patch `patch` makes of the HTTPRoute (guarded by its
    /// resourceVersion), if any.
    fn patch_route(
        &self,
        actions: &mut Vec<crate::plan::Action>,
        patch: impl FnOnce(&Value) -> Option<Value>,
    ) -> Result<bool, String> {
        use crate::plan::{Action, Guard, ObjectKind, Patch, Subresource, Target};
        let Some(name) = self.routing.gateway.as_ref().and_then(|g| g.http_route_name.clone())
        else {
            return Ok(true);
        };
        let Some(route) = self.objects.http_route.as_ref() else {
            return Err(format!("HTTPRoute {name} is not found"));
        };
        if let Some(patch) = patch(route) {
            let version = route.pointer("/metadata/resourceVersion").and_then(Value::as_str);
            actions.push(Action::PatchObject {
                target: Target::new(ObjectKind::HTTP_ROUTE, Some(self.namespace), &name)
                    .guarded(Guard::ResourceVersion(version.unwrap_or_default().to_owned())),
                subresource: Subresource::Main,
                patch: Patch::merge(patch),
            });
        }
        Ok(true)
    }

    /// The step's traffic and matches in place: the canary Ingress exists with its
    /// annotations, or the HTTPRoute carries them.
    pub fn ensure_routes(
        &self,
        step: &CanaryStep,
        actions: &mut Vec<crate::plan::Action>,
    ) -> Result<bool, String> {
        use crate::plan::{Action, Patch, Subresource};
        let routing = self.routing;
        if routing.gateway.is_some() {
            let (stable, canary) = (routing.service.clone(), self.canary_service.clone());
            if self.shared() {
                return self
                    .patch_route(actions, |route| shared_route_patch(route, &stable, Some(step)));
            }
            return self
                .ensure_route_rules(actions, |rules| routed_rules(rules, &stable, &canary, step));
        }
        let Some(ingress) = routing.ingress.as_ref() else { return Ok(true) };
        // Validation refuses a class no script exists for.
        let class =
            IngressClass::from_class_type(&ingress.class_type).unwrap_or(IngressClass::Nginx);
        let Some(stable) = self.objects.ingress.as_ref() else {
            return Err(format!("Ingress {} is not found", ingress.name));
        };
        let name = canary_name(&ingress.name);
        match self.objects.canary_ingress.as_ref() {
            None => {
                let Some(body) = canary_ingress(
                    stable,
                    &routing.service,
                    &self.canary_service,
                    self.owner,
                    class,
                ) else {
                    return Err(format!(
                        "Ingress {} has no path to Service {}",
                        ingress.name, routing.service
                    ));
                };
                actions.push(Action::CreateObject {
                    target: self.ingress_target(&name),
                    body: std::sync::Arc::new(body),
                });
                Ok(true)
            }
            Some(existing) if existing.metadata.deletion_timestamp.is_some() => Ok(false),
            Some(existing) => {
                let current = existing.metadata.annotations.clone().unwrap_or_default();
                let desired = ingress_annotations(class, &current, step);
                if let Some(patch) = ingress_annotation_patch(existing, &desired) {
                    actions.push(Action::PatchObject {
                        target: self.ingress_target(&name),
                        subresource: Subresource::Main,
                        patch: Patch::merge(patch),
                    });
                }
                Ok(true)
            }
        }
    }

    /// All traffic back to the stable Service: the canary Ingress is gone, or the HTTPRoute
    /// leads only to the stable Service.
    pub fn restore_routes(&self, actions: &mut Vec<crate::plan::Action>) -> Result<bool, String> {
        let routing = self.routing;
        if routing.gateway.is_some() {
            if self.objects.http_route.is_none() {
                return Ok(true);
            }
            let (stable, canary) = (routing.service.clone(), self.canary_service.clone());
            if self.shared() {
                return self.patch_route(actions, |route| shared_route_patch(route, &stable, None));
            }
            return self
                .ensure_route_rules(actions, |rules| restored_rules(rules, &stable, &canary));
        }
        let Some(ingress) = routing.ingress.as_ref() else { return Ok(true) };
        match &self.objects.canary_ingress {
            None => Ok(true),
            Some(i) if i.metadata.deletion_timestamp.is_some() => Ok(false),
            Some(_) => {
                let target = self.ingress_target(&canary_name(&ingress.name));
                actions.push(crate::plan::Action::DeleteObject { target });
                Ok(true)
            }
        }
    }
}
