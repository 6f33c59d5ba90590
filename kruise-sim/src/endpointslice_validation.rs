//! kube-apiserver's validation of EndpointSlices (`discovery.k8s.io/v1`), with its field paths
//! and messages: `addressType` (required, one of the supported types, immutable), the
//! endpoints (at most 1000, each with 1 to 100 addresses valid for the address type and not
//! special, a DNS-label `hostname`) and the ports (at most 100, unique DNS-label names, a
//! supported protocol).
//!
//! Not checked: the object meta beyond the name (done for every kind), the `FQDN` addresses,
//! `deprecatedTopology` (dropped on write) and `appProtocol`.

use std::net::IpAddr;

use crate::error::Cause;
use serde_json::{Value, json};

const ADDRESS_TYPES: [&str; 3] = ["FQDN", "IPv4", "IPv6"];
/// Accepted on update only: the deprecated `IP` type of slices written before 1.17.
const DEPRECATED_ADDRESS_TYPE: &str = "IP";
const PROTOCOLS: [&str; 3] = ["SCTP", "TCP", "UDP"];
const MAX_ENDPOINTS: u64 = 1000;
const MAX_ADDRESSES: u64 = 100;
const MAX_PORTS: u64 = 100;

/// The causes for an EndpointSlice `obj`; `old` is the stored one on an update.
pub(crate) fn endpoint_slice(obj: &Value, old: Option<&Value>) -> Vec<Cause> {
    let mut causes = Vec::new();
    let address_type = obj.get("addressType").and_then(Value::as_str).unwrap_or_default();
    let mut allowed: Vec<&str> = ADDRESS_TYPES.to_vec();
    if old.is_some() {
        allowed.push(DEPRECATED_ADDRESS_TYPE);
        allowed.sort_unstable();
    }
    if address_type.is_empty() {
        causes.push(Cause::required("addressType", ""));
    } else if !allowed.contains(&address_type) {
        let listed: Vec<Value> = allowed.iter().map(|t| json!(t)).collect();
        causes.push(Cause::not_supported("addressType", &json!(address_type), &listed));
    }
    // Addresses the stored slice already had are not checked again (kube-apiserver 1.33+
    // ratchets IP validation): a changed `addressType` is refused for itself alone.
    let kept: Vec<&str> = old
        .and_then(|o| o.get("endpoints"))
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .flat_map(|e| e.get("addresses").and_then(Value::as_array).into_iter().flatten())
        .filter_map(Value::as_str)
        .collect();
    endpoints(obj, address_type, &kept, &mut causes);
    ports(obj, &mut causes);
    if let Some(old) = old {
        let before = old.get("addressType").and_then(Value::as_str).unwrap_or_default();
        if before != address_type {
            causes.push(Cause::invalid("addressType", &json!(address_type), "field is immutable"));
        }
    }
    causes
}

fn endpoints(obj: &Value, address_type: &str, kept: &[&str], causes: &mut Vec<Cause>) {
    let list = obj.get("endpoints").and_then(Value::as_array).map(Vec::as_slice).unwrap_or(&[]);
    if list.len() as u64 > MAX_ENDPOINTS {
        causes.push(Cause::too_many("endpoints", list.len(), MAX_ENDPOINTS));
        return;
    }
    for (i, endpoint) in list.iter().enumerate() {
        let path = format!("endpoints[{i}].addresses");
        let addresses =
            endpoint.get("addresses").and_then(Value::as_array).map(Vec::as_slice).unwrap_or(&[]);
        if addresses.is_empty() {
            causes.push(Cause::required(&path, "must contain at least 1 address"));
        } else if addresses.len() as u64 > MAX_ADDRESSES {
            causes.push(Cause::too_many(&path, addresses.len(), MAX_ADDRESSES));
        }
        for (j, address) in addresses.iter().enumerate() {
            let text = address.as_str().unwrap_or_default();
            if !kept.contains(&text) {
                address_causes(&format!("{path}[{j}]"), text, address_type, causes);
            }
        }
        if let Some(hostname) = endpoint.get("hostname").and_then(Value::as_str)
            && let Err(why) = crate::util::check_label(hostname)
        {
            causes.push(Cause::invalid(
                &format!("endpoints[{i}].hostname"),
                &json!(hostname),
                &why,
            ));
        }
    }
}

/// An IPv4 or IPv6 address must be one of that family, and neither unspecified, loopback nor
/// link-local (`ValidateNonSpecialIP`). Other address types are not checked here.
fn address_causes(path: &str, text: &str, address_type: &str, causes: &mut Vec<Cause>) {
    let want_v4 = match address_type {
        "IPv4" => true,
        "IPv6" => false,
        _ => return,
    };
    let shown = json!(text);
    let parsed = text.parse::<IpAddr>().ok();
    match parsed {
        Some(IpAddr::V4(_)) if want_v4 => {}
        Some(IpAddr::V6(_)) if !want_v4 => {}
        _ => {
            let family = if want_v4 { "IPv4" } else { "IPv6" };
            causes.push(Cause::invalid(path, &shown, &format!("must be a valid {family} address")));
        }
    }
    let Some(ip) = parsed else {
        causes.push(Cause::invalid(path, &shown, "must be a valid IP address"));
        return;
    };
    if ip.is_unspecified() {
        causes.push(Cause::invalid(path, &shown, &format!("may not be unspecified ({text})")));
    }
    if ip.is_loopback() {
        causes.push(Cause::invalid(
            path,
            &shown,
            "may not be in the loopback range (127.0.0.0/8, ::1/128)",
        ));
    }
    let (link_local, link_local_multicast) = match ip {
        IpAddr::V4(v4) => (v4.is_link_local(), v4.octets()[..3] == [224, 0, 0]),
        IpAddr::V6(v6) => {
            let s = v6.segments();
            (s[0] & 0xffc0 == 0xfe80, s[0] & 0xff0f == 0xff02)
        }
    };
    if link_local {
        causes.push(Cause::invalid(
            path,
            &shown,
            "may not be in the link-local range (169.254.0.0/16, fe80::/10)",
        ));
    }
    if link_local_multicast {
        causes.push(Cause::invalid(
            path,
            &shown,
            "may not be in the link-local multicast range (224.0.0.0/24, ff02::/10)",
        ));
    }
}

fn ports(obj: &Value, causes: &mut Vec<Cause>) {
    let list = obj.get("ports").and_then(Value::as_array).map(Vec::as_slice).unwrap_or(&[]);
    if list.len() as u64 > MAX_PORTS {
        causes.push(Cause::too_many("ports", list.len(), MAX_PORTS));
        return;
    }
    let mut names: Vec<&str> = Vec::new();
    for (i, port) in list.iter().enumerate() {
        let name = port.get("name").and_then(Value::as_str).unwrap_or_default();
        if !name.is_empty()
            && let Err(why) = crate::util::check_label(name)
        {
            causes.push(Cause::invalid(&format!("ports[{i}].name"), &json!(name), &why));
        }
        if names.contains(&name) {
            causes.push(Cause::duplicate(&format!("ports[{i}].name"), &json!(name)));
        } else {
            names.push(name);
        }
        let protocol_path = format!("ports[{i}].protocol");
        match port.get("protocol").and_then(Value::as_str) {
            None => causes.push(Cause::required(&protocol_path, "")),
            Some(p) if PROTOCOLS.contains(&p) => {}
            Some(p) => {
                let listed: Vec<Value> = PROTOCOLS.iter().map(|p| json!(p)).collect();
                causes.push(Cause::not_supported(&protocol_path, &json!(p), &listed));
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fields(causes: &[Cause]) -> Vec<(&str, &str)> {
        causes.iter().map(|c| (c.field.as_str(), c.message.as_str())).collect()
    }

    #[test]
    fn a_controller_written_slice_is_valid() {
        let slice = json!({"addressType": "IPv4",
            "endpoints": [{"addresses": ["10.244.0.2"], "conditions": {"ready": true}}],
            "ports": [{"name": "", "protocol": "TCP", "port": 80}]});
        assert_eq!(endpoint_slice(&slice, None), []);
        assert_eq!(endpoint_slice(&json!({"addressType": "IPv6", "endpoints": null}), None), []);
    }

    #[test]
    fn address_type_is_required_supported_and_immutable() {
        let missing = endpoint_slice(&json!({"endpoints": []}), None);
        assert_eq!(fields(&missing), [("addressType", "Required value")]);
        let wrong = endpoint_slice(&json!({"addressType": "IP"}), None);
        assert_eq!(
            fields(&wrong),
            [(
                "addressType",
                r#"Unsupported value: "IP": supported values: "FQDN", "IPv4", "IPv6""#
            )]
        );
        let old = json!({"addressType": "IPv4", "endpoints": [{"addresses": ["10.0.0.1"]}]});
        let changed = endpoint_slice(
            &json!({"addressType": "IPv6", "endpoints": [{"addresses": ["10.0.0.1"]}]}),
            Some(&old),
        );
        // The kept address is not checked against the new family, as on kube-apiserver 1.36.
        assert_eq!(
            fields(&changed),
            [("addressType", r#"Invalid value: "IPv6": field is immutable"#)]
        );
        let added = endpoint_slice(
            &json!({"addressType": "IPv4", "endpoints": [{"addresses": ["10.0.0.1", "::1"]}]}),
            Some(&old),
        );
        assert_eq!(fields(&added).len(), 2, "the new address is checked: {added:?}");
    }

    #[test]
    fn endpoints_need_an_address_of_the_slice_family() {
        let slice = json!({"addressType": "IPv4", "endpoints": [
            {"addresses": []},
            {"addresses": ["fd00::1", "127.0.0.1"]},
        ]});
        assert_eq!(
            fields(&endpoint_slice(&slice, None)),
            [
                ("endpoints[0].addresses", "Required value: must contain at least 1 address"),
                (
                    "endpoints[1].addresses[0]",
                    r#"Invalid value: "fd00::1": must be a valid IPv4 address"#
                ),
                (
                    "endpoints[1].addresses[1]",
                    r#"Invalid value: "127.0.0.1": may not be in the loopback range (127.0.0.0/8, ::1/128)"#
                ),
            ]
        );
    }

    #[test]
    fn ports_have_unique_names_and_known_protocols() {
        let slice = json!({"addressType": "IPv4", "ports": [
            {"name": "http", "protocol": "TCP", "port": 80},
            {"name": "http", "protocol": "HTTP", "port": 81},
        ]});
        assert_eq!(
            fields(&endpoint_slice(&slice, None)),
            [
                ("ports[1].name", r#"Duplicate value: "http""#),
                (
                    "ports[1].protocol",
                    r#"Unsupported value: "HTTP": supported values: "SCTP", "TCP", "UDP""#
                ),
            ]
        );
    }
}
