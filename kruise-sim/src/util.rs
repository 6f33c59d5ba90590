//! Small helpers: time, randomness, names.

use serde_json::{Map, Value};
use std::collections::hash_map::RandomState;
use std::hash::{BuildHasher, Hasher};
use std::sync::atomic::{AtomicU64, Ordering};

static COUNTER: AtomicU64 = AtomicU64::new(0);

/// A random 64-bit number (seeded by the OS through `RandomState`).
pub fn rand_u64() -> u64 {
    let mut h = RandomState::new().build_hasher();
    h.write_u64(COUNTER.fetch_add(1, Ordering::Relaxed));
    h.finish()
}

/// A random version-4 UUID in its text form.
pub fn uuid() -> String {
    let a = rand_u64();
    let b = rand_u64();
    format!(
        "{:08x}-{:04x}-4{:03x}-{:04x}-{:012x}",
        a >> 32,
        (a >> 16) & 0xffff,
        a & 0x0fff,
        0x8000 | ((b >> 48) & 0x3fff),
        b & 0xffff_ffff_ffff
    )
}

/// The 5-character random suffix used for `generateName`.
pub fn name_suffix() -> String {
    const ALPHABET: &[u8] = b"bcdfghjklmnpqrstvwxz2456789";
    let mut r = rand_u64();
    (0..5)
        .map(|_| {
            let c = ALPHABET[(r % ALPHABET.len() as u64) as usize] as char;
            r /= ALPHABET.len() as u64;
            c
        })
        .collect()
}

/// Now, as an RFC 3339 timestamp with seconds precision (`metav1.Time`).
pub fn now_rfc3339() -> String {
    jiff::Timestamp::now().strftime("%Y-%m-%dT%H:%M:%SZ").to_string()
}

/// Seconds elapsed since an RFC 3339 timestamp.
pub fn seconds_since(ts: &str) -> Option<i64> {
    let t: jiff::Timestamp = ts.parse().ok()?;
    Some(jiff::Timestamp::now().as_second() - t.as_second())
}

/// Kubernetes' `duration.HumanDuration`, as shown in the Age column.
pub fn human_duration(seconds: i64) -> String {
    if seconds < -1 {
        return "<invalid>".into();
    }
    if seconds < 0 {
        return "0s".into();
    }
    if seconds < 120 {
        return format!("{seconds}s");
    }
    let minutes = seconds / 60;
    if minutes < 10 {
        let s = seconds % 60;
        return if s == 0 { format!("{minutes}m") } else { format!("{minutes}m{s}s") };
    }
    if minutes < 180 {
        return format!("{minutes}m");
    }
    let hours = seconds / 3600;
    if hours < 8 {
        let m = minutes % 60;
        return if m == 0 { format!("{hours}h") } else { format!("{hours}h{m}m") };
    }
    if hours < 48 {
        return format!("{hours}h");
    }
    if hours < 24 * 8 {
        let h = hours % 24;
        return if h == 0 { format!("{}d", hours / 24) } else { format!("{}d{h}h", hours / 24) };
    }
    if hours < 24 * 365 * 2 {
        return format!("{}d", hours / 24);
    }
    if hours < 24 * 365 * 8 {
        let dy = (hours / 24) % 365;
        return if dy == 0 {
            format!("{}y", hours / 24 / 365)
        } else {
            format!("{}y{dy}d", hours / 24 / 365)
        };
    }
    format!("{}y", hours / 24 / 365)
}

/// The strings of a JSON list (other items skipped); empty when it is not a list.
pub(crate) fn strings(v: Option<&Value>) -> Vec<String> {
    v.and_then(Value::as_array)
        .map(|a| a.iter().filter_map(Value::as_str).map(str::to_string).collect())
        .unwrap_or_default()
}

/// `obj.metadata` as a mutable map, created if missing.
pub fn meta_mut(obj: &mut Value) -> Option<&mut Map<String, Value>> {
    let map = obj.as_object_mut()?;
    let meta = map.entry("metadata").or_insert_with(|| Value::Object(Map::new()));
    meta.as_object_mut()
}

/// A string field of `metadata`.
pub fn meta_str<'a>(obj: &'a Value, field: &str) -> Option<&'a str> {
    obj.get("metadata")?.get(field)?.as_str()
}

const DNS1123_SUBDOMAIN_MSG: &str = "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')";
const DNS1123_LABEL_MSG: &str = "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')";

/// The value at a path rendered as `spec.containers[0].env` (`(root)` for `v` itself), as
/// kruise-core's strategic merge patch names places. Object keys are matched against `v`'s own
/// keys, so a key holding dots is found too; `None` when the path leads nowhere.
pub fn at_rendered_path<'a>(v: &'a Value, path: &str) -> Option<&'a Value> {
    if path == "(root)" {
        return Some(v);
    }
    let mut cur = v;
    let mut rest = path;
    let mut first = true;
    while !rest.is_empty() {
        if let Some(after) = rest.strip_prefix('[') {
            let (index, tail) = after.split_once(']')?;
            cur = cur.as_array()?.get(index.parse::<usize>().ok()?)?;
            rest = tail;
            first = false;
            continue;
        }
        let keys = if first { rest } else { rest.strip_prefix('.')? };
        let map = cur.as_object()?;
        // The longest key that the rest of the path starts with, followed by a separator.
        let (key, value) = map
            .iter()
            .filter(|(k, _)| {
                keys.strip_prefix(k.as_str())
                    .is_some_and(|t| t.is_empty() || t.starts_with('.') || t.starts_with('['))
            })
            .max_by_key(|(k, _)| k.len())?;
        cur = value;
        rest = &keys[key.len()..];
        first = false;
    }
    Some(cur)
}

fn label_ok(l: &str) -> bool {
    !l.is_empty()
        && l.len() <= 63
        && l.bytes().all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == b'-')
        && !l.starts_with('-')
        && !l.ends_with('-')
}

/// Checks a DNS-1123 subdomain (most object names); the error is the real message.
pub fn check_subdomain(name: &str) -> Result<(), String> {
    if name.len() > 253 {
        return Err("must be no more than 253 characters".into());
    }
    if name.split('.').all(label_ok) { Ok(()) } else { Err(DNS1123_SUBDOMAIN_MSG.into()) }
}

/// Checks a DNS-1123 label (namespaces, services).
pub fn check_label(name: &str) -> Result<(), String> {
    if name.len() > 63 {
        return Err("must be no more than 63 characters".into());
    }
    if label_ok(name) { Ok(()) } else { Err(DNS1123_LABEL_MSG.into()) }
}

/// Kubernetes version ordering for API versions: GA before beta before alpha, higher first;
/// other strings last, alphabetically.
pub fn version_priority(v: &str) -> (u8, i64, i64, String) {
    let parse = |s: &str| -> Option<(u8, i64, i64)> {
        let rest = s.strip_prefix('v')?;
        let digits: String = rest.chars().take_while(char::is_ascii_digit).collect();
        let major: i64 = digits.parse().ok()?;
        let tail = &rest[digits.len()..];
        if tail.is_empty() {
            return Some((0, -major, 0));
        }
        for (prefix, rank) in [("beta", 1u8), ("alpha", 2u8)] {
            if let Some(n) = tail.strip_prefix(prefix) {
                let minor: i64 = n.parse().ok()?;
                return Some((rank, -major, -minor));
            }
        }
        None
    };
    match parse(v) {
        Some((rank, a, b)) => (rank, a, b, String::new()),
        None => (3, 0, 0, v.to_string()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rendered_paths_lead_to_their_values() {
        let v = serde_json::json!({"spec": {"a.b": {"list": [{"x": 1}, {"y": 2}]}, "a": {}}});
        assert_eq!(at_rendered_path(&v, "(root)"), Some(&v));
        assert_eq!(at_rendered_path(&v, "spec.a.b.list[1]"), Some(&serde_json::json!({"y": 2})));
        assert_eq!(at_rendered_path(&v, "spec.a.b.list[1].y"), Some(&serde_json::json!(2)));
        assert_eq!(at_rendered_path(&v, "spec.a"), Some(&serde_json::json!({})));
        assert_eq!(at_rendered_path(&v, "spec.list[0]"), None);
        assert_eq!(at_rendered_path(&v, "spec.a.b.list[9]"), None);
    }

    #[test]
    fn durations_and_versions() {
        assert_eq!(human_duration(5), "5s");
        assert_eq!(human_duration(150), "2m30s");
        assert_eq!(human_duration(3600 * 5 + 60), "5h1m");
        let mut v = vec!["v1alpha1", "v1beta1", "v1", "v2beta1", "foo"];
        v.sort_by_key(|x| version_priority(x));
        assert_eq!(v, vec!["v1", "v2beta1", "v1beta1", "v1alpha1", "foo"]);
        assert!(check_subdomain("a.b-c").is_ok());
        assert!(check_subdomain("A").is_err());
        assert!(check_label("a.b").is_err());
        assert_eq!(uuid().len(), 36);
    }
}
