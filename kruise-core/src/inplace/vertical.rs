//! Vertical scaling in place: which resources may change, pod QoS, and whether the kubelet
//! has applied new resources.

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::{Pod, PodSpec, ResourceRequirements};
use k8s_openapi::apimachinery::pkg::api::resource::Quantity as K8sQuantity;
use serde_json::{Map, Value, json};

use crate::revision::quantity::Quantity;

/// Only these resources are resized in place.
pub(crate) fn can_resize(resource: &str) -> bool {
    resource == "cpu" || resource == "memory"
}

fn parse(q: &K8sQuantity) -> Option<Quantity> {
    Quantity::parse(&q.0).ok()
}

/// The QoS class of pods built from `spec` (`Guaranteed`, `Burstable` or `BestEffort`),
/// computed from container requests and limits as the kubelet does.
pub fn pod_qos_class(spec: &PodSpec) -> &'static str {
    let zero = Quantity::parse("0").ok();
    let mut requests: BTreeMap<String, Quantity> = BTreeMap::new();
    let mut limits: BTreeMap<String, Quantity> = BTreeMap::new();
    let mut guaranteed = true;
    let positive = |q: &Quantity| zero.as_ref().is_some_and(|z| q.cmp_value(z).is_gt());
    let add = |sums: &mut BTreeMap<String, Quantity>, name: &str, q: Quantity| {
        let total = match sums.get(name) {
            Some(prev) => q.checked_add(prev).unwrap_or(q),
            None => q,
        };
        sums.insert(name.to_owned(), total);
    };
    let containers = spec.containers.iter().chain(spec.init_containers.iter().flatten());
    for container in containers {
        let resources = container.resources.as_ref();
        for (name, q) in resources.and_then(|r| r.requests.as_ref()).into_iter().flatten() {
            if let Some(q) = parse(q).filter(|q| can_resize(name) && positive(q)) {
                add(&mut requests, name, q);
            }
        }
        let mut found = Vec::new();
        for (name, q) in resources.and_then(|r| r.limits.as_ref()).into_iter().flatten() {
            if let Some(q) = parse(q).filter(|q| can_resize(name) && positive(q)) {
                found.push(name.as_str());
                add(&mut limits, name, q);
            }
        }
        if !(found.contains(&"cpu") && found.contains(&"memory")) {
            guaranteed = false;
        }
    }
    if requests.is_empty() && limits.is_empty() {
        return "BestEffort";
    }
    if guaranteed {
        for (name, request) in &requests {
            match limits.get(name) {
                Some(limit) if limit.cmp_value(request).is_eq() => {}
                _ => {
                    guaranteed = false;
                    break;
                }
            }
        }
    }
    if guaranteed && requests.len() == limits.len() { "Guaranteed" } else { "Burstable" }
}

fn lists_equal(
    a: Option<&BTreeMap<String, K8sQuantity>>,
    b: Option<&BTreeMap<String, K8sQuantity>>,
) -> bool {
    let empty = BTreeMap::new();
    let (a, b) = (a.unwrap_or(&empty), b.unwrap_or(&empty));
    a.len() == b.len()
        && a.iter().all(|(k, v)| {
            b.get(k).is_some_and(|w| match (parse(v), parse(w)) {
                (Some(x), Some(y)) => x == y,
                _ => v == w,
            })
        })
}

/// Whether every container's status reports the resources of its spec (the kubelet has
/// finished resizing); `Err` names the first container that has not. A status without
/// `resources` reports none (as for a container that asks for none).
pub fn resources_applied(pod: &Pod) -> Result<(), String> {
    resources_applied_to(pod, |_| true)
}

/// [`resources_applied`] for the containers whose names `wanted` accepts only.
pub fn resources_applied_to(pod: &Pod, wanted: impl Fn(&str) -> bool) -> Result<(), String> {
    let containers = pod.spec.as_ref().map(|s| s.containers.as_slice()).unwrap_or(&[]);
    let statuses = pod.status.as_ref().and_then(|s| s.container_statuses.as_deref()).unwrap_or(&[]);
    if statuses.len() != containers.len() {
        return Err("some container status is not reported".to_owned());
    }
    for status in statuses.iter().filter(|s| wanted(&s.name)) {
        let container = containers.iter().find(|c| c.name == status.name);
        let actual = status.resources.as_ref();
        let applied = container.is_some_and(|c| {
            let spec = c.resources.as_ref();
            lists_equal(
                spec.and_then(|r| r.limits.as_ref()),
                actual.and_then(|r| r.limits.as_ref()),
            ) && lists_equal(
                spec.and_then(|r| r.requests.as_ref()),
                actual.and_then(|r| r.requests.as_ref()),
            )
        });
        if !applied {
            return Err(format!("container {} resources not changed", status.name));
        }
    }
    Ok(())
}

/// The resizable part of `wanted` as a JSON `resources` object, leaving out values the
/// container already has when `current` is given.
pub(crate) fn resource_patch(
    wanted: &ResourceRequirements,
    current: Option<&ResourceRequirements>,
) -> Option<Value> {
    let section = |wanted: Option<&BTreeMap<String, K8sQuantity>>,
                   current: Option<&BTreeMap<String, K8sQuantity>>| {
        let mut out = Map::new();
        for (name, q) in wanted.into_iter().flatten() {
            if !can_resize(name) {
                continue;
            }
            let same = current.and_then(|c| c.get(name)).is_some_and(|have| {
                match (parse(have), parse(q)) {
                    (Some(a), Some(b)) => a == b,
                    _ => have == q,
                }
            });
            if !same {
                out.insert(name.clone(), Value::String(q.0.clone()));
            }
        }
        out
    };
    let limits = section(wanted.limits.as_ref(), current.and_then(|c| c.limits.as_ref()));
    let requests = section(wanted.requests.as_ref(), current.and_then(|c| c.requests.as_ref()));
    let mut out = Map::new();
    if !limits.is_empty() {
        out.insert("limits".to_owned(), Value::Object(limits));
    }
    if !requests.is_empty() {
        out.insert("requests".to_owned(), Value::Object(requests));
    }
    if out.is_empty() { None } else { Some(Value::Object(out)) }
}

/// The `pods/resize` patch moving the pod's containers to `expected` (only changed cpu and
/// memory values), or `None` when nothing changes.
pub(crate) fn resize_patch(
    pod: &Pod,
    expected: &BTreeMap<String, ResourceRequirements>,
) -> Option<Value> {
    let containers = pod.spec.as_ref().map(|s| s.containers.as_slice()).unwrap_or(&[]);
    let mut entries = Vec::new();
    for container in containers {
        let Some(wanted) = expected.get(&container.name) else { continue };
        if let Some(resources) = resource_patch(wanted, container.resources.as_ref()) {
            entries.push(json!({"name": container.name, "resources": resources}));
        }
    }
    if entries.is_empty() { None } else { Some(json!({"spec": {"containers": entries}})) }
}

/// Whether resizing these resources restarts a container of `pod` (its resize policy says
/// `RestartContainer` for a resource that changes).
pub(crate) fn resize_needs_restart(
    pod: &Pod,
    resources: &BTreeMap<String, ResourceRequirements>,
) -> bool {
    let containers = pod.spec.as_ref().map(|s| s.containers.as_slice()).unwrap_or(&[]);
    containers.iter().any(|container| {
        let Some(change) = resources.get(&container.name) else { return false };
        let touches = |name: &str| {
            change.limits.as_ref().is_some_and(|l| l.contains_key(name))
                || change.requests.as_ref().is_some_and(|r| r.contains_key(name))
        };
        container.resize_policy.iter().flatten().any(|policy| {
            policy.restart_policy == "RestartContainer"
                && (policy.resource_name == "cpu" || policy.resource_name == "memory")
                && touches(&policy.resource_name)
        })
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(value: Value) -> PodSpec {
        serde_json::from_value(value).expect("spec")
    }

    #[test]
    fn qos_classes() {
        assert_eq!(pod_qos_class(&spec(json!({"containers": [{"name": "a"}]}))), "BestEffort");
        let guaranteed = spec(json!({"containers": [{"name": "a", "resources": {
            "limits": {"cpu": "1", "memory": "1Gi"}, "requests": {"cpu": "1000m", "memory": "1024Mi"}}}]}));
        assert_eq!(pod_qos_class(&guaranteed), "Guaranteed");
        let burstable = spec(json!({"containers": [
            {"name": "a", "resources": {"limits": {"cpu": "2", "memory": "4Gi"}, "requests": {"cpu": "2", "memory": "4Gi"}}},
            {"name": "b", "resources": {"limits": {"cpu": "2", "memory": "4Gi"}, "requests": {"cpu": "1", "memory": "4Gi"}}}
        ]}));
        assert_eq!(pod_qos_class(&burstable), "Burstable");
        let no_memory_limit = spec(
            json!({"containers": [{"name": "a", "resources": {"limits": {"cpu": "1"}, "requests": {"cpu": "1"}}}]}),
        );
        assert_eq!(pod_qos_class(&no_memory_limit), "Burstable");
    }
}
