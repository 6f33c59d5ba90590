//! `resourcesPolicy`: a sidecar's resources computed, at pod creation, from those of the
//! pod's containers.
//!
//! The target containers are the pod's containers, and its native sidecar init containers
//! (`restartPolicy: Always`), whose names match `targetContainersNameRegex` (an unanchored
//! regular expression), leaving out containers SidecarSets inject. No target is an error.
//!
//! Their resources are combined per `targetContainersMode`:
//! - `sum` adds them up, `max` takes the largest;
//! - a missing request counts as zero;
//! - a missing limit means unlimited, so the combined limit is unlimited (absent) as soon as
//!   one target has none.
//!
//! Each expression of `resourcesExpr` is then evaluated ([`super::expr`]) with one variable
//! bound to the combined value: `memory` when the expression mentions the word `memory`,
//! else `cpu` (whichever resource the expression is for, as upstream does). A limit
//! expression over an unlimited combined limit leaves that limit unset. A result that is a
//! plain number is read as cores for the `cpu` variable (kept to thousandths) and as bytes
//! for `memory`. An unknown mode combines nothing: requests then see zero and limits are
//! unset.

use std::collections::{BTreeMap, BTreeSet};

use k8s_openapi::api::core::v1::{Container, Pod, ResourceRequirements};
use k8s_openapi::apimachinery::pkg::api::resource::Quantity as KubeQuantity;
use kruise_api::apps::v1beta1::{ResourcesPolicy, TargetContainersModeType};

use super::expr::{Value, evaluate};
use crate::revision::quantity::{Quantity, QuantityFormat};

const CPU: &str = "cpu";
const MEMORY: &str = "memory";

/// The resources `policy` gives a sidecar in `pod`; `sidecar_names` are the container names
/// SidecarSets inject (never targets). `Err` holds the reason.
pub fn apply(
    policy: &ResourcesPolicy,
    pod: &Pod,
    sidecar_names: &BTreeSet<String>,
) -> Result<ResourceRequirements, String> {
    let pattern = regex::Regex::new(&policy.target_containers_name_regex).map_err(|e| {
        format!("invalid regex pattern {:?}: {e}", policy.target_containers_name_regex)
    })?;
    let spec = pod.spec.as_ref();
    let natives = spec
        .into_iter()
        .flat_map(|s| s.init_containers.iter().flatten())
        .filter(|c| c.restart_policy.as_deref() == Some("Always"));
    let targets: Vec<&Container> = natives
        .chain(spec.into_iter().flat_map(|s| s.containers.iter()))
        .filter(|c| !sidecar_names.contains(&c.name) && pattern.is_match(&c.name))
        .collect();
    if targets.is_empty() {
        return Err(format!(
            "no containers match the regex pattern {:?}",
            policy.target_containers_name_regex
        ));
    }
    let (limits, requests) = aggregate(&targets, &policy.target_containers_mode)?;
    let mut out = ResourceRequirements::default();
    if let Some(exprs) = &policy.resources_expr.limits {
        let mut list = BTreeMap::new();
        for (resource, expr) in [(CPU, &exprs.cpu), (MEMORY, &exprs.memory)] {
            if expr.is_empty() {
                continue;
            }
            if let Some(base) = limits.get(resource) {
                let value = evaluate_for(expr, *base)
                    .map_err(|e| format!("failed to evaluate {resource} limits expression: {e}"))?;
                list.insert(resource.to_owned(), KubeQuantity(value.to_canonical()));
            }
        }
        out.limits = (!list.is_empty()).then_some(list);
    }
    if let Some(exprs) = &policy.resources_expr.requests {
        let mut list = BTreeMap::new();
        for (resource, expr) in [(CPU, &exprs.cpu), (MEMORY, &exprs.memory)] {
            if expr.is_empty() {
                continue;
            }
            let base = requests
                .get(resource)
                .copied()
                .unwrap_or_else(|| Quantity::from_milli(0, QuantityFormat::DecimalSi));
            let value = evaluate_for(expr, base)
                .map_err(|e| format!("failed to evaluate {resource} requests expression: {e}"))?;
            list.insert(resource.to_owned(), KubeQuantity(value.to_canonical()));
        }
        out.requests = (!list.is_empty()).then_some(list);
    }
    Ok(out)
}

/// Whether `expr` mentions `memory` as a whole word.
fn mentions_memory(expr: &str) -> bool {
    expr.match_indices(MEMORY).any(|(i, m)| {
        let word = |c: char| c.is_alphanumeric() || c == '_';
        let before = expr[..i].chars().next_back().is_none_or(|c| !word(c));
        let after = expr[i + m.len()..].chars().next().is_none_or(|c| !word(c));
        before && after
    })
}

fn evaluate_for(expr: &str, base: Quantity) -> Result<Quantity, super::expr::ExprError> {
    let variable = if mentions_memory(expr) { MEMORY } else { CPU };
    Ok(match evaluate(expr, variable, Value::Quantity(base))? {
        Value::Quantity(q) => q,
        Value::Number(n) if variable == CPU => {
            Quantity::from_milli((n * 1000.0) as i128, QuantityFormat::DecimalSi)
        }
        Value::Number(n) => Quantity::from_milli((n as i128) * 1000, QuantityFormat::DecimalSi),
    })
}

type Combined = BTreeMap<&'static str, Quantity>;

fn aggregate(
    targets: &[&Container],
    mode: &TargetContainersModeType,
) -> Result<(Combined, Combined), String> {
    let sum = match mode {
        TargetContainersModeType::Sum => true,
        TargetContainersModeType::Max => false,
        _ => return Ok((Combined::new(), Combined::new())),
    };
    let read = |list: Option<&BTreeMap<String, KubeQuantity>>,
                key: &str|
     -> Result<Option<Quantity>, String> {
        match list.and_then(|l| l.get(key)) {
            None => Ok(None),
            Some(q) => Quantity::parse(&q.0).map(Some).map_err(|e| e.to_string()),
        }
    };
    let combine = |acc: Option<Quantity>, q: Quantity| -> Result<Quantity, String> {
        Ok(match acc {
            // Upstream sums into a zero written in decimal, so a sum is always decimal.
            None if sum => Quantity::from_milli(0, QuantityFormat::DecimalSi)
                .checked_add(&q)
                .ok_or("quantity overflow")?,
            None => q,
            Some(a) if sum => a.checked_add(&q).ok_or("quantity overflow")?,
            Some(a) => {
                if q.cmp_value(&a).is_gt() {
                    q
                } else {
                    a
                }
            }
        })
    };
    let mut limits = Combined::new();
    let mut requests = Combined::new();
    for key in [CPU, MEMORY] {
        let mut limit: Option<Quantity> = None;
        let mut unlimited = false;
        let mut request: Option<Quantity> = None;
        for c in targets {
            let res = c.resources.as_ref();
            match read(res.and_then(|r| r.limits.as_ref()), key)? {
                Some(q) => limit = Some(combine(limit, q)?),
                None => unlimited = true,
            }
            if let Some(q) = read(res.and_then(|r| r.requests.as_ref()), key)? {
                request = Some(combine(request, q)?);
            }
        }
        if let Some(l) = limit.filter(|_| !unlimited) {
            limits.insert(key, l);
        }
        // A sum of zero is left out, as upstream leaves it out (requests then see zero).
        if let Some(r) = request.filter(|r| !(sum && r.is_zero())) {
            requests.insert(key, r);
        }
    }
    Ok((limits, requests))
}

#[cfg(test)]
mod tests {
    use super::*;
    use kruise_api::apps::v1beta1::{ResourceExprLimits, ResourceExprRequests, ResourcesExpr};

    fn container(name: &str, limits: &[(&str, &str)], requests: &[(&str, &str)]) -> Container {
        let list = |pairs: &[(&str, &str)]| {
            (!pairs.is_empty()).then(|| {
                pairs
                    .iter()
                    .map(|(k, v)| ((*k).to_owned(), KubeQuantity((*v).to_owned())))
                    .collect()
            })
        };
        Container {
            name: name.into(),
            resources: Some(ResourceRequirements {
                limits: list(limits),
                requests: list(requests),
                ..Default::default()
            }),
            ..Default::default()
        }
    }

    fn pod(containers: Vec<Container>) -> Pod {
        Pod {
            spec: Some(k8s_openapi::api::core::v1::PodSpec { containers, ..Default::default() }),
            ..Default::default()
        }
    }

    fn policy(mode: TargetContainersModeType, regex: &str) -> ResourcesPolicy {
        ResourcesPolicy {
            target_containers_mode: mode,
            target_containers_name_regex: regex.into(),
            resources_expr: ResourcesExpr {
                limits: Some(ResourceExprLimits {
                    cpu: "max(cpu*50%, 50m)".into(),
                    memory: "memory*50%".into(),
                }),
                requests: Some(ResourceExprRequests {
                    cpu: "cpu*50%".into(),
                    memory: "200Mi".into(),
                }),
            },
        }
    }

    fn get(list: &Option<BTreeMap<String, KubeQuantity>>, key: &str) -> Option<String> {
        list.as_ref().and_then(|l| l.get(key)).map(|q| q.0.clone())
    }

    #[test]
    fn sum_and_max() {
        let p = pod(vec![
            container("app", &[("cpu", "1"), ("memory", "1Gi")], &[("cpu", "500m")]),
            container("web", &[("cpu", "2"), ("memory", "1Gi")], &[("cpu", "300m")]),
            container("mesh", &[("cpu", "9")], &[]),
        ]);
        let sidecars: BTreeSet<String> = ["mesh".to_owned()].into();
        let r =
            apply(&policy(TargetContainersModeType::Sum, ".*"), &p, &sidecars).expect("applies");
        assert_eq!(get(&r.limits, "cpu").as_deref(), Some("1500m"));
        // Sums are written in decimal, as upstream writes them.
        assert_eq!(get(&r.limits, "memory").as_deref(), Some("1073741824"));
        assert_eq!(get(&r.requests, "cpu").as_deref(), Some("400m"));
        assert_eq!(get(&r.requests, "memory").as_deref(), Some("200Mi"));
        let r =
            apply(&policy(TargetContainersModeType::Max, ".*"), &p, &sidecars).expect("applies");
        assert_eq!(get(&r.limits, "cpu").as_deref(), Some("1"));
        assert_eq!(get(&r.limits, "memory").as_deref(), Some("512Mi"));
        assert_eq!(get(&r.requests, "cpu").as_deref(), Some("250m"));
    }

    #[test]
    fn one_unlimited_target_leaves_the_limit_unset() {
        let p = pod(vec![container("app", &[("cpu", "1")], &[]), container("web", &[], &[])]);
        let r = apply(&policy(TargetContainersModeType::Sum, "app|web"), &p, &BTreeSet::new())
            .expect("applies");
        assert_eq!(r.limits, None);
        assert_eq!(get(&r.requests, "cpu").as_deref(), Some("0"));
    }

    #[test]
    fn errors_name_the_cause() {
        let p = pod(vec![container("app", &[], &[])]);
        let err = apply(&policy(TargetContainersModeType::Sum, "^db$"), &p, &BTreeSet::new())
            .expect_err("no target");
        assert!(err.contains("no containers match"), "{err}");
        let err = apply(&policy(TargetContainersModeType::Sum, "(["), &p, &BTreeSet::new())
            .expect_err("bad regex");
        assert!(err.contains("invalid regex"), "{err}");
        assert!(mentions_memory("max(memory, 1Mi)"));
        assert!(!mentions_memory("memory_x"));
    }
}
