//! Validation of pod specs, as kube-apiserver validates a pod, and the pod template of a
//! built-in workload, before storing it: the checks controllers and users most often meet
//! (container and volume names, images, ports, volume mounts, restart policy), with the real
//! server's field paths, messages and order (volumes, then containers, then init containers).
//!
//! Not done: the many checks on resources, probes, security contexts, affinity and the other
//! fields; a spec that fails only those is accepted here.

use std::collections::BTreeSet;

use serde_json::{Value, json};

use crate::error::Cause;
use crate::util::check_label;

/// The causes for the pod spec at `path` (`spec`, or `spec.template.spec`), in the real
/// server's order; empty when it passes the checks made here.
pub(crate) fn pod_spec(spec: Option<&Value>, path: &str) -> Vec<Cause> {
    let mut causes = Vec::new();
    let spec = spec.unwrap_or(&Value::Null);
    let volumes = validate_volumes(spec.get("volumes"), &format!("{path}.volumes"), &mut causes);

    let mut names = BTreeSet::new();
    match spec.get("containers").and_then(Value::as_array) {
        Some(containers) if !containers.is_empty() => {
            for (i, container) in containers.iter().enumerate() {
                let at = format!("{path}.containers[{i}]");
                validate_container(container, &at, &volumes, &mut names, &mut causes);
            }
        }
        _ => causes.push(Cause::required(&format!("{path}.containers"), "")),
    }
    for (i, container) in
        spec.get("initContainers").and_then(Value::as_array).into_iter().flatten().enumerate()
    {
        let at = format!("{path}.initContainers[{i}]");
        validate_container(container, &at, &volumes, &mut names, &mut causes);
    }

    if let Some(policy) = spec.get("restartPolicy").filter(|p| !p.is_null()) {
        const SUPPORTED: [&str; 3] = ["Always", "OnFailure", "Never"];
        if !policy.as_str().is_some_and(|p| SUPPORTED.contains(&p)) {
            causes.push(Cause::not_supported(
                &format!("{path}.restartPolicy"),
                policy,
                &SUPPORTED.map(|s| json!(s)),
            ));
        }
    }
    causes
}

/// Checks `volumes`; answers the names of the volumes that are there.
fn validate_volumes(
    volumes: Option<&Value>,
    path: &str,
    causes: &mut Vec<Cause>,
) -> BTreeSet<String> {
    let mut names = BTreeSet::new();
    for (i, volume) in volumes.and_then(Value::as_array).into_iter().flatten().enumerate() {
        unique_label(volume, &format!("{path}[{i}].name"), &mut names, causes);
    }
    names
}

/// Checks the `name` of a volume or container: present, a DNS-1123 label, and not in `taken`
/// (which it joins).
fn unique_label(item: &Value, path: &str, taken: &mut BTreeSet<String>, causes: &mut Vec<Cause>) {
    let name = item.get("name").and_then(Value::as_str).unwrap_or_default();
    if name.is_empty() {
        causes.push(Cause::required(path, ""));
    } else if let Err(message) = check_label(name) {
        causes.push(Cause::invalid(path, &json!(name), &message));
    } else if !taken.insert(name.to_owned()) {
        causes.push(Cause::duplicate(path, &json!(name)));
    }
}

/// Checks one container (or init container) at `path`; `names` holds the names taken so
/// far in the pod (containers and init containers share one namespace).
fn validate_container(
    container: &Value,
    path: &str,
    volumes: &BTreeSet<String>,
    names: &mut BTreeSet<String>,
    causes: &mut Vec<Cause>,
) {
    unique_label(container, &format!("{path}.name"), names, causes);
    if container.get("image").and_then(Value::as_str).unwrap_or_default().trim().is_empty() {
        causes.push(Cause::required(&format!("{path}.image"), ""));
    }

    let mut port_names = BTreeSet::new();
    for (i, port) in
        container.get("ports").and_then(Value::as_array).into_iter().flatten().enumerate()
    {
        let at = format!("{path}.ports[{i}]");
        if let Some(port_name) = port.get("name").and_then(Value::as_str).filter(|n| !n.is_empty())
            && !port_names.insert(port_name.to_owned())
        {
            causes.push(Cause::duplicate(&format!("{at}.name"), &json!(port_name)));
        }
        match port.get("containerPort").and_then(Value::as_i64).unwrap_or(0) {
            0 => causes.push(Cause::required(&format!("{at}.containerPort"), "")),
            n if !(1..=65535).contains(&n) => causes.push(Cause::invalid(
                &format!("{at}.containerPort"),
                &json!(n),
                "must be between 1 and 65535, inclusive",
            )),
            _ => {}
        }
        if let Some(n) = port.get("hostPort").and_then(Value::as_i64)
            && n != 0
            && !(1..=65535).contains(&n)
        {
            causes.push(Cause::invalid(
                &format!("{at}.hostPort"),
                &json!(n),
                "must be between 1 and 65535, inclusive",
            ));
        }
    }

    for (i, mount) in
        container.get("volumeMounts").and_then(Value::as_array).into_iter().flatten().enumerate()
    {
        let at = format!("{path}.volumeMounts[{i}]");
        let volume = mount.get("name").and_then(Value::as_str).unwrap_or_default();
        if volume.is_empty() {
            causes.push(Cause::required(&format!("{at}.name"), ""));
        } else if !volumes.contains(volume) {
            causes.push(Cause::not_found(&format!("{at}.name"), &json!(volume)));
        }
        if mount.get("mountPath").and_then(Value::as_str).unwrap_or_default().is_empty() {
            causes.push(Cause::required(&format!("{at}.mountPath"), ""));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn messages(spec: Value) -> Vec<String> {
        pod_spec(Some(&spec), "spec")
            .iter()
            .map(|c| format!("{}: {}", c.field, c.message))
            .collect()
    }

    #[test]
    fn container_names_are_unique_across_containers_and_init_containers() {
        let spec = json!({
            "containers": [{"name": "a", "image": "x"}, {"name": "a", "image": "x"}],
            "initContainers": [{"name": "a", "image": "x"}],
        });
        assert_eq!(
            messages(spec),
            [
                r#"spec.containers[1].name: Duplicate value: "a""#,
                r#"spec.initContainers[0].name: Duplicate value: "a""#,
            ]
        );
    }

    #[test]
    fn volumes_ports_and_mounts_name_their_fields() {
        let spec = json!({
            "volumes": [{"name": "data"}, {"name": "data"}],
            "restartPolicy": "Sometimes",
            "containers": [{
                "name": "Main",
                "ports": [{"name": "http", "containerPort": 80}, {"name": "http", "containerPort": 70000}, {}],
                "volumeMounts": [{"name": "data", "mountPath": "/d"}, {"name": "logs"}],
            }],
        });
        assert_eq!(
            messages(spec),
            [
                r#"spec.volumes[1].name: Duplicate value: "data""#,
                r#"spec.containers[0].name: Invalid value: "Main": a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')"#,
                "spec.containers[0].image: Required value",
                r#"spec.containers[0].ports[1].name: Duplicate value: "http""#,
                "spec.containers[0].ports[1].containerPort: Invalid value: 70000: must be between 1 and 65535, inclusive",
                "spec.containers[0].ports[2].containerPort: Required value",
                r#"spec.containers[0].volumeMounts[1].name: Not found: "logs""#,
                "spec.containers[0].volumeMounts[1].mountPath: Required value",
                r#"spec.restartPolicy: Unsupported value: "Sometimes": supported values: "Always", "OnFailure", "Never""#,
            ]
        );
    }

    #[test]
    fn a_spec_without_containers_needs_them() {
        assert_eq!(messages(json!({})), ["spec.containers: Required value"]);
        assert!(messages(json!({"containers": [{"name": "a", "image": "x"}]})).is_empty());
    }
}
