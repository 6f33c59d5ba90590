//! What kube-apiserver's Service storage assigns: a cluster IP from the service range (and
//! `clusterIPs`, `ipFamilies`, `ipFamilyPolicy` of a single-stack IPv4 cluster), node ports
//! for `NodePort` and `LoadBalancer` Services, and, on an update, the assigned values a body
//! leaves out, kept from the stored Service.
//!
//! The range is 10.96.0.0/16 and node ports [`NODE_PORTS`], as `../shared/realk8s` starts
//! kube-apiserver. A free address is chosen from a hash of the Service's namespace and name,
//! probing upwards past those the stored Services hold, so that a Service gets the same
//! address in every run; two creates racing for one address are not serialised. No
//! `IPAddress` or `ServiceCIDR` objects are kept.

use std::collections::HashSet;
use std::net::Ipv4Addr;

use serde_json::{Map, Value, json};

use crate::error::{ApiError, Cause};

/// The service IP range, 10.96.0.0/16: its network address and prefix length.
const NETWORK: u32 = u32::from_be_bytes([10, 96, 0, 0]);
const PREFIX: u32 = 16;
/// The node port range, 30000-32767.
pub(crate) const NODE_PORTS: std::ops::RangeInclusive<u16> = 30000..=32767;

fn size() -> u32 {
    1 << (32 - PREFIX)
}

fn in_range(ip: Ipv4Addr) -> bool {
    let n = u32::from(ip);
    n & !(size() - 1) == NETWORK
}

/// FNV-1a of `text`, to spread first choices over a range.
fn spread(text: &str) -> u32 {
    text.bytes().fold(0x811c_9dc5_u32, |h, b| (h ^ u32::from(b)).wrapping_mul(0x0100_0193))
}

fn spec_str<'a>(spec: &'a Map<String, Value>, key: &str) -> &'a str {
    spec.get(key).and_then(Value::as_str).unwrap_or_default()
}

/// Whether a Service of this type gets a cluster IP and node ports.
fn wants_ip(spec: &Map<String, Value>) -> bool {
    spec_str(spec, "type") != "ExternalName"
}

fn wants_node_ports(spec: &Map<String, Value>) -> bool {
    match spec_str(spec, "type") {
        "NodePort" => true,
        "LoadBalancer" => {
            spec.get("allocateLoadBalancerNodePorts").and_then(Value::as_bool).unwrap_or(true)
        }
        _ => false,
    }
}

/// The addresses and node ports the stored Services `others` hold.
fn held(others: &[std::sync::Arc<Value>]) -> (HashSet<Ipv4Addr>, HashSet<i64>) {
    let mut ips = HashSet::new();
    let mut ports = HashSet::new();
    for svc in others {
        let Some(spec) = svc.get("spec") else { continue };
        for ip in spec.get("clusterIPs").and_then(Value::as_array).into_iter().flatten() {
            if let Some(ip) = ip.as_str().and_then(|s| s.parse().ok()) {
                ips.insert(ip);
            }
        }
        for port in spec.get("ports").and_then(Value::as_array).into_iter().flatten() {
            if let Some(n) = port.get("nodePort").and_then(Value::as_i64) {
                ports.insert(n);
            }
        }
    }
    (ips, ports)
}

fn invalid(name: &str, causes: Vec<Cause>) -> ApiError {
    ApiError::invalid("", "Service", name, causes)
}

/// An invalid list of addresses, shown as kube-apiserver 1.36 shows one (`["10.96.0.7"]`,
/// which `Cause::invalid` does not print).
fn list_cause(field: &str, ips: &[&str], detail: &str) -> Cause {
    let shown = serde_json::to_string(ips).unwrap_or_default();
    Cause {
        reason: "FieldValueInvalid".into(),
        message: format!("Invalid value: {shown}: {detail}"),
        field: field.into(),
    }
}

/// Assigns what a new Service gets (`others`: the stored Services), or the cause that refuses
/// the address or port it asks for.
pub(crate) fn assign_on_create(
    service: &mut Value,
    others: &[std::sync::Arc<Value>],
) -> Result<(), ApiError> {
    let namespace = crate::util::meta_str(service, "namespace").unwrap_or_default().to_owned();
    let name = crate::util::meta_str(service, "name").unwrap_or_default().to_owned();
    let Some(spec) = service.get_mut("spec").and_then(Value::as_object_mut) else { return Ok(()) };
    if !wants_ip(spec) {
        return Ok(());
    }
    let (ips, node_ports) = held(others);
    // `clusterIP` and `clusterIPs[0]` say the same; either may be given.
    let asked = match spec_str(spec, "clusterIP") {
        "" => spec
            .get("clusterIPs")
            .and_then(Value::as_array)
            .and_then(|a| a.first())
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_owned(),
        ip => ip.to_owned(),
    };
    let headless = asked == "None";
    let ip = if headless {
        "None".to_owned()
    } else if asked.is_empty() {
        let start = spread(&format!("{namespace}/{name}")) % size();
        // The network and broadcast addresses, and the first (the `kubernetes` Service's),
        // are never handed out.
        let free = (0..size())
            .map(|i| NETWORK + (start + i) % size())
            .filter(|n| (n - NETWORK) > 1 && (n - NETWORK) < size() - 1)
            .map(Ipv4Addr::from)
            .find(|ip| !ips.contains(ip));
        match free {
            Some(ip) => ip.to_string(),
            None => {
                return Err(ApiError::internal("failed to allocate a serviceIP: range is full"));
            }
        }
    } else {
        let refuse = |why: &str| {
            invalid(
                &name,
                vec![list_cause(
                    "spec.clusterIPs",
                    &[asked.as_str()],
                    &format!("failed to allocate IP {asked}: {why}"),
                )],
            )
        };
        match asked.parse::<Ipv4Addr>() {
            Ok(ip) if !in_range(ip) => {
                return Err(refuse("the provided network does not match the current range"));
            }
            Ok(ip) if ips.contains(&ip) => {
                return Err(refuse("provided IP is already allocated"));
            }
            // Not an address: validation names the field.
            _ => asked.clone(),
        }
    };
    spec.insert("clusterIP".into(), json!(ip));
    if spec.get("clusterIPs").and_then(Value::as_array).is_none_or(Vec::is_empty) {
        spec.insert("clusterIPs".into(), json!([ip]));
    }
    // A headless Service without a selector takes both families, as kube-apiserver 1.36
    // answered on a single-stack cluster.
    let no_selector = spec.get("selector").and_then(Value::as_object).is_none_or(Map::is_empty);
    let both = headless && no_selector;
    if spec.get("ipFamilyPolicy").is_none_or(Value::is_null) {
        let policy = if both { "RequireDualStack" } else { "SingleStack" };
        spec.insert("ipFamilyPolicy".into(), json!(policy));
    }
    if spec.get("ipFamilies").and_then(Value::as_array).is_none_or(Vec::is_empty) {
        let families = if both { json!(["IPv4", "IPv6"]) } else { json!(["IPv4"]) };
        spec.insert("ipFamilies".into(), families);
    }
    if wants_node_ports(spec) {
        assign_node_ports(spec, &node_ports, &name)?;
    }
    Ok(())
}

/// Gives each port without a node port a free one; refuses a taken one.
fn assign_node_ports(
    spec: &mut Map<String, Value>,
    held: &HashSet<i64>,
    name: &str,
) -> Result<(), ApiError> {
    let mut taken = held.clone();
    let Some(ports) = spec.get_mut("ports").and_then(Value::as_array_mut) else { return Ok(()) };
    for (i, port) in ports.iter_mut().enumerate() {
        let Some(port) = port.as_object_mut() else { continue };
        match port.get("nodePort").and_then(Value::as_i64).filter(|n| *n != 0) {
            Some(n) if taken.contains(&n) => {
                return Err(invalid(
                    name,
                    vec![Cause::invalid(
                        &format!("spec.ports[{i}].nodePort"),
                        &json!(n),
                        "provided port is already allocated",
                    )],
                ));
            }
            Some(n) => {
                taken.insert(n);
            }
            None => {
                let span = i64::from(NODE_PORTS.end() - NODE_PORTS.start()) + 1;
                let start = i64::from(spread(&format!("{name}/{i}"))) % span;
                let free = (0..span)
                    .map(|k| i64::from(*NODE_PORTS.start()) + (start + k) % span)
                    .find(|n| !taken.contains(n));
                let Some(n) = free else {
                    return Err(ApiError::internal("failed to allocate a nodePort: range is full"));
                };
                taken.insert(n);
                port.insert("nodePort".into(), json!(n));
            }
        }
    }
    Ok(())
}

/// Keeps, on an update, what was assigned and the body leaves out: the cluster IPs, families
/// and policy while the type still has an address, and each port's node port (matched by
/// port and protocol) while it still has node ports. Refuses a changed address.
pub(crate) fn keep_on_update(old: &Value, service: &mut Value) -> Result<(), ApiError> {
    let name = crate::util::meta_str(old, "name").unwrap_or_default().to_owned();
    let (Some(old), Some(spec)) = (
        old.get("spec").and_then(Value::as_object),
        service.get_mut("spec").and_then(Value::as_object_mut),
    ) else {
        return Ok(());
    };
    if wants_ip(spec) && wants_ip(old) {
        for key in ["clusterIP", "clusterIPs", "ipFamilies", "ipFamilyPolicy"] {
            let missing = match spec.get(key) {
                None | Some(Value::Null) => true,
                Some(Value::String(s)) => s.is_empty(),
                Some(Value::Array(a)) => a.is_empty(),
                _ => false,
            };
            if missing && let Some(kept) = old.get(key) {
                spec.insert(key.into(), kept.clone());
            }
        }
        let ips = |spec: &Map<String, Value>| -> Vec<String> {
            spec.get("clusterIPs")
                .and_then(Value::as_array)
                .map(|a| a.iter().filter_map(Value::as_str).map(str::to_owned).collect())
                .unwrap_or_default()
        };
        let (before, now) = (ips(old), ips(spec));
        if let (Some(was), Some(is)) = (before.first(), now.first())
            && was != is
        {
            let shown: Vec<&str> = now.iter().map(String::as_str).collect();
            return Err(invalid(
                &name,
                vec![list_cause("spec.clusterIPs[0]", &shown, "may not change once set")],
            ));
        }
    }
    if !wants_node_ports(spec) {
        return Ok(());
    }
    let old_ports: Vec<&Value> =
        old.get("ports").and_then(Value::as_array).into_iter().flatten().collect();
    let Some(ports) = spec.get_mut("ports").and_then(Value::as_array_mut) else { return Ok(()) };
    for port in ports.iter_mut().filter_map(Value::as_object_mut) {
        if port.get("nodePort").and_then(Value::as_i64).unwrap_or(0) != 0 {
            continue;
        }
        let same = |p: &&&Value| {
            p.get("port") == port.get("port")
                && p.get("protocol").and_then(Value::as_str).unwrap_or("TCP")
                    == port.get("protocol").and_then(Value::as_str).unwrap_or("TCP")
        };
        if let Some(n) = old_ports.iter().find(same).and_then(|p| p.get("nodePort")).cloned() {
            port.insert("nodePort".into(), n);
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    fn svc(name: &str, spec: Value) -> Value {
        json!({"metadata": {"name": name, "namespace": "default"}, "spec": spec})
    }

    #[test]
    fn a_service_gets_a_free_address_in_the_range_and_its_families() {
        let mut a = svc("a", json!({"type": "ClusterIP", "selector": {"app": "a"}}));
        assign_on_create(&mut a, &[]).expect("assigned");
        let ip: Ipv4Addr =
            a["spec"]["clusterIP"].as_str().expect("an IP").parse().expect("an IPv4");
        assert!(in_range(ip), "{ip}");
        assert_eq!(a["spec"]["clusterIPs"], json!([ip.to_string()]));
        assert_eq!(a["spec"]["ipFamilies"], json!(["IPv4"]));
        assert_eq!(a["spec"]["ipFamilyPolicy"], "SingleStack");
        // The same name in another run gets the same address; a held one is passed over.
        let mut again = svc("a", json!({"type": "ClusterIP"}));
        assign_on_create(&mut again, &[Arc::new(a.clone())]).expect("assigned");
        assert_ne!(again["spec"]["clusterIP"], a["spec"]["clusterIP"]);
        let mut asked = svc("b", json!({"type": "ClusterIP", "clusterIP": ip.to_string()}));
        let e = assign_on_create(&mut asked, &[Arc::new(a.clone())]).expect_err("taken");
        assert!(e.to_string().contains("provided IP is already allocated"), "{e}");
        let mut outside = svc("c", json!({"type": "ClusterIP", "clusterIP": "10.1.0.5"}));
        let e = assign_on_create(&mut outside, &[]).expect_err("outside");
        assert!(
            e.to_string().contains("the provided network does not match the current range"),
            "{e}"
        );
    }

    #[test]
    fn headless_external_and_node_port_services() {
        let mut headless = svc("h", json!({"type": "ClusterIP", "clusterIP": "None"}));
        assign_on_create(&mut headless, &[]).expect("assigned");
        assert_eq!(headless["spec"]["clusterIPs"], json!(["None"]));
        assert_eq!(headless["spec"]["ipFamilyPolicy"], "RequireDualStack");
        assert_eq!(headless["spec"]["ipFamilies"], json!(["IPv4", "IPv6"]));
        let mut external = svc("e", json!({"type": "ExternalName", "externalName": "x.example"}));
        assign_on_create(&mut external, &[]).expect("assigned");
        assert!(external["spec"].get("clusterIP").is_none(), "{external}");
        let mut np = svc(
            "n",
            json!({"type": "NodePort", "ports": [{"port": 80}, {"port": 81, "nodePort": 30001}]}),
        );
        assign_on_create(&mut np, &[]).expect("assigned");
        let n = np["spec"]["ports"][0]["nodePort"].as_i64().expect("a node port");
        assert!((30000..=32767).contains(&n) && n != 30001, "{n}");
        // An update that leaves them out keeps them.
        let mut put = svc("n", json!({"type": "NodePort", "ports": [{"port": 80}]}));
        keep_on_update(&np, &mut put).expect("kept");
        assert_eq!(put["spec"]["clusterIP"], np["spec"]["clusterIP"]);
        assert_eq!(put["spec"]["ports"][0]["nodePort"], n);
        let mut moved = svc("n", json!({"type": "NodePort", "clusterIPs": ["10.96.0.77"]}));
        let e = keep_on_update(&np, &mut moved).expect_err("changed");
        assert!(
            e.to_string().contains(
                r#"spec.clusterIPs[0]: Invalid value: ["10.96.0.77"]: may not change once set"#
            ),
            "{e}"
        );
    }
}
