//! A pod's spec or status as JSON text, one copy shared by the pods whose texts differ only
//! in the strings that are each pod's own.
//!
//! The pods of one workload revision carry the same spec but for a few strings of their own:
//! the hostname (a StatefulSet pod's name), the projected service account token volume
//! (`kube-api-access-<random>`, named in the volumes and in every container's mounts) and,
//! once scheduled, the node. Their statuses have the same keys, and the same words
//! (`Running`, `True`, `Ready`), around values of their own (times, addresses, container
//! IDs). [`SharedText`] cuts the contents of those strings out of the text ([`Own`] says
//! which), keeps the rest interned (one copy for all the pods it fits), and keeps the cut
//! contents per pod. The text is given back byte for byte.
//!
//! A cut string's content is replaced by [`HOLE`], a control character: JSON text cannot
//! hold one unescaped, inside a string or out, so every `HOLE` in the shared text is a cut,
//! and the cut contents, joined by `HOLE`, never contain one either. A text that holds one
//! anyway (not JSON: it fails to decode) is kept whole.

use std::borrow::Cow;
use std::collections::HashSet;
use std::sync::{Arc, LazyLock, Mutex, MutexGuard};

/// Where a cut string's content was.
const HOLE: char = '\u{1}';

/// The prefix of the name the service account admission gives the token volume.
const TOKEN_VOLUME_PREFIX: &str = "kube-api-access-";

/// The interned shared texts. An entry goes when the last [`SharedText`] holding it is dropped.
static SHARED: LazyLock<Mutex<HashSet<Arc<str>>>> = LazyLock::new(Mutex::default);

fn shared_texts() -> MutexGuard<'static, HashSet<Arc<str>>> {
    // The set is valid whatever a panicking holder did: each step leaves it consistent.
    SHARED.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// Which strings of a text are the pod's own, cut out of the shared part.
#[derive(Clone, Copy, Debug)]
pub(super) enum Own<'a> {
    /// A spec's: the pod's name, the token volume's name and the value of `nodeName`.
    Spec {
        /// The pod's name.
        pod_name: &'a str,
    },
    /// A status's: every value (not a key) that holds a digit or is longer than
    /// [`WORD_LEN`]; words such as `Running`, `True` or `ContainersReady` stay shared.
    Status,
}

/// The longest value without a digit a status's shared text keeps.
const WORD_LEN: usize = 32;

/// A pod's spec or status as JSON text: the part shared with similar pods, and the pod's own
/// strings.
#[derive(Debug)]
pub(super) struct SharedText {
    /// The text with each cut string's content replaced by [`HOLE`]; interned.
    shared: Arc<str>,
    /// The cut contents, in order, joined by [`HOLE`]; empty when nothing was cut.
    own: Box<str>,
}

impl SharedText {
    /// The text of a spec (or status) of a pod, `own_strings` saying which strings are the
    /// pod's own.
    pub(super) fn new(text: &str, own_strings: Own<'_>) -> Self {
        if text.contains(HOLE) {
            // Not JSON (refused when decoded), and a hole would be ambiguous: kept whole.
            return Self { shared: intern(text), own: Box::default() };
        }
        let mut shared = String::with_capacity(text.len());
        let mut own = String::new();
        let mut cuts = 0usize;
        let mut rest = text;
        while let Some(open) = rest.find('"') {
            let (before, from_quote) = rest.split_at(open);
            shared.push_str(before);
            let Some(len) = string_len(&from_quote[1..]) else {
                // An unterminated string: not JSON; kept whole, and refused when decoded.
                shared.push_str(from_quote);
                rest = "";
                break;
            };
            let content = &from_quote[1..1 + len];
            if is_own(&shared, content, &from_quote[len + 2..], own_strings) {
                if cuts > 0 {
                    own.push(HOLE);
                }
                own.push_str(content);
                cuts += 1;
                shared.push('"');
                shared.push(HOLE);
                shared.push('"');
            } else {
                shared.push_str(&from_quote[..len + 2]);
            }
            rest = &from_quote[len + 2..];
        }
        shared.push_str(rest);
        Self { shared: intern(&shared), own: own.into_boxed_str() }
    }

    /// The whole text again.
    pub(super) fn text(&self) -> Cow<'_, str> {
        // A cut content is never empty: nothing was cut exactly when `own` is empty.
        if self.own.is_empty() {
            return Cow::Borrowed(&self.shared);
        }
        let mut text = String::with_capacity(self.shared.len() + self.own.len());
        let mut own = self.own.split(HOLE);
        for (i, part) in self.shared.split(HOLE).enumerate() {
            if i > 0 {
                text.push_str(own.next().unwrap_or_default());
            }
            text.push_str(part);
        }
        Cow::Owned(text)
    }
}

impl SharedText {
    /// The value of the spec's `nodeName` when it can be read without rebuilding the text:
    /// `Some("")` when the spec has no `nodeName` key, `Some(node)` when its value is a cut
    /// string; `None` when the text must be decoded to tell (another layout).
    pub(super) fn node_name_fast(&self) -> Option<&str> {
        const KEY: &str = "\"nodeName\"";
        let Some(at) = self.shared.find(KEY) else {
            return Some("");
        };
        let rest = &self.shared[at + KEY.len()..];
        // The compact layout servers write, the key once and at the spec's top level (not, say,
        // a `nodeSelector` label of that name).
        if !rest.starts_with(":\"\u{1}\"") || rest.contains(KEY) || depth_at(&self.shared, at) != 1
        {
            return None;
        }
        let index = self.shared[..at].matches(HOLE).count();
        self.own.split(HOLE).nth(index)
    }
}

/// How deep in objects and arrays byte `at` of JSON `text` is (outside strings).
fn depth_at(text: &str, at: usize) -> usize {
    let bytes = text.as_bytes();
    let (mut i, mut depth) = (0, 0usize);
    while i < at.min(bytes.len()) {
        match bytes[i] {
            b'"' => match string_len(&text[i + 1..]) {
                Some(len) => i += len + 2,
                None => return usize::MAX,
            },
            b'{' | b'[' => {
                depth += 1;
                i += 1;
            }
            b'}' | b']' => {
                depth = depth.saturating_sub(1);
                i += 1;
            }
            _ => i += 1,
        }
    }
    depth
}

/// The length of the JSON string content at the start of `s` (just after its opening
/// quote), escapes included; `None` when it never closes.
fn string_len(s: &str) -> Option<usize> {
    let bytes = s.as_bytes();
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'\\' => i += 2,
            b'"' => return Some(i),
            _ => i += 1,
        }
    }
    None
}

/// Whether the string whose `content` comes between `before` and `after` is one of the
/// pod's own (see [`Own`]).
fn is_own(before: &str, content: &str, after: &str, own: Own<'_>) -> bool {
    if content.is_empty() {
        return false;
    }
    match own {
        Own::Spec { pod_name } => {
            if content == pod_name || content.starts_with(TOKEN_VOLUME_PREFIX) {
                return true;
            }
            before
                .trim_end()
                .strip_suffix(':')
                .is_some_and(|key| key.trim_end().ends_with("\"nodeName\""))
        }
        Own::Status => {
            let is_key = after.trim_start().starts_with(':');
            !is_key && (content.len() > WORD_LEN || content.bytes().any(|b| b.is_ascii_digit()))
        }
    }
}

/// The one shared copy of `text`.
fn intern(text: &str) -> Arc<str> {
    let mut set = shared_texts();
    if let Some(shared) = set.get(text) {
        return Arc::clone(shared);
    }
    let shared: Arc<str> = Arc::from(text);
    set.insert(Arc::clone(&shared));
    shared
}

impl Clone for SharedText {
    fn clone(&self) -> Self {
        Self { shared: Arc::clone(&self.shared), own: self.own.clone() }
    }
}

impl PartialEq for SharedText {
    fn eq(&self, other: &Self) -> bool {
        self.shared == other.shared && self.own == other.own
    }
}

impl Drop for SharedText {
    fn drop(&mut self) {
        let mut set = shared_texts();
        // Under the lock no other holder can appear: a copy is made only from a holder, and
        // the set hands out copies only under this lock. Two holders are the set and this.
        if Arc::strong_count(&self.shared) == 2 {
            set.remove(&*self.shared);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(name: &str, token: &str, node: Option<&str>) -> String {
        spec_noting(name, token, node, "web")
    }

    fn spec_noting(name: &str, token: &str, node: Option<&str>, note: &str) -> String {
        let node = node.map_or(String::new(), |n| format!(r#""nodeName": "{n}","#));
        format!(
            r#"{{{node}"hostname":"{name}","subdomain":"web","containers":[{{"name":"c","image":"nginx","env":[{{"name":"Q","value":"say \"{note}\" \\ \u00e9"}}],"volumeMounts":[{{"name":"{token}","mountPath":"/var/run"}}]}}],"volumes":[{{"name":"{token}","projected":{{}}}}]}}"#
        )
    }

    #[test]
    fn gives_back_the_text_byte_for_byte() {
        for text in [
            spec("web-0", "kube-api-access-abcde", None),
            spec("web-1", "kube-api-access-xyz12", Some("node-a")),
            r#"{"containers":[{"name":"","image":"a\\"}]}"#.to_owned(),
            "{}".to_owned(),
            "{\"x\":\"\u{1}\",\"y\":\"web-0\"}".to_owned(),
            r#"{"a":"unterminated"#.to_owned(),
            "  { \"nodeName\" :  \"n\" , \"x\":[\"web-0\",\"\"] }  ".to_owned(),
        ] {
            let kept = SharedText::new(&text, Own::Spec { pod_name: "web-0" });
            assert_eq!(kept.text(), text);
            assert_eq!(kept.clone().text(), text);
        }
    }

    #[test]
    fn pods_that_differ_only_in_their_own_strings_share_one_copy() {
        let a = SharedText::new(
            &spec("web-0", "kube-api-access-abcde", Some("n1")),
            Own::Spec { pod_name: "web-0" },
        );
        let b = SharedText::new(
            &spec("web-1", "kube-api-access-fghij", Some("n2")),
            Own::Spec { pod_name: "web-1" },
        );
        assert!(Arc::ptr_eq(&a.shared, &b.shared), "{} / {}", a.shared, b.shared);
        assert_eq!(&*b.own, "n2\u{1}web-1\u{1}kube-api-access-fghij\u{1}kube-api-access-fghij");
        // A longer string that holds the name is not cut.
        let noting = spec_noting("web-0", "kube-api-access-abcde", None, "web-0");
        assert!(
            SharedText::new(&noting, Own::Spec { pod_name: "web-0" })
                .shared
                .contains("say \\\"web-0\\\"")
        );
        let other = SharedText::new(
            &spec("web-0", "kube-api-access-abcde", None),
            Own::Spec { pod_name: "web-0" },
        );
        assert!(!Arc::ptr_eq(&a.shared, &other.shared));
        assert_ne!(a, b);
        assert_eq!(a, a.clone());
    }

    #[test]
    fn the_node_name_is_read_without_rebuilding_the_text() {
        let scheduled = SharedText::new(
            &spec("web-1", "kube-api-access-q", Some("n9")),
            Own::Spec { pod_name: "web-1" },
        );
        // The spec's layout has a space after the key's colon: decoded, not read fast.
        assert_eq!(scheduled.node_name_fast(), None);
        let compact =
            r#"{"hostname":"web-1","nodeName":"n9","volumes":[{"name":"kube-api-access-q"}]}"#;
        assert_eq!(
            SharedText::new(compact, Own::Spec { pod_name: "web-1" }).node_name_fast(),
            Some("n9")
        );
        let pending = SharedText::new(
            &spec("web-1", "kube-api-access-q", None),
            Own::Spec { pod_name: "web-1" },
        );
        assert_eq!(pending.node_name_fast(), Some(""));
        let empty = SharedText::new(r#"{"nodeName":""}"#, Own::Spec { pod_name: "web-1" });
        assert_eq!(empty.node_name_fast(), None);
        let label = r#"{"nodeSelector":{"nodeName":"n1"},"hostname":"web-1"}"#;
        assert_eq!(SharedText::new(label, Own::Spec { pod_name: "web-1" }).node_name_fast(), None);
    }

    #[test]
    fn statuses_share_their_keys_and_words_and_keep_their_values() {
        let status = |ip: &str, started: &str, ready: &str| {
            format!(
                r#"{{"conditions":[{{"lastTransitionTime":"{started}","status":"{ready}","type":"Ready"}}],"containerStatuses":[{{"containerID":"containerd://{ip}ab","name":"main","ready":{}}}],"message":"a message longer than thirty-two bytes, no digit","phase":"Running","podIP":"{ip}"}}"#,
                ready == "True"
            )
        };
        let a_text = status("10.0.0.1", "2026-12-07T10:00:00Z", "True");
        let a = SharedText::new(&a_text, Own::Status);
        let b = SharedText::new(&status("10.0.0.2", "2026-12-07T10:00:09Z", "True"), Own::Status);
        assert!(Arc::ptr_eq(&a.shared, &b.shared), "{} / {}", a.shared, b.shared);
        assert_eq!(a.text(), a_text);
        assert!(a.shared.contains(r#""phase":"Running""#), "{}", a.shared);
        assert!(a.shared.contains(r#""type":"Ready""#), "{}", a.shared);
        assert_eq!(
            &*a.own,
            "2026-12-07T10:00:00Z\u{1}containerd://10.0.0.1ab\u{1}a message longer than thirty-two bytes, no digit\u{1}10.0.0.1"
        );
        // Another word is another shared text.
        let c = SharedText::new(&status("10.0.0.1", "2026-12-07T10:00:00Z", "False"), Own::Status);
        assert!(!Arc::ptr_eq(&a.shared, &c.shared));
        // A map key with a digit is kept: keys are never cut.
        let keyed = SharedText::new(r#"{"allocatedResources":{"hugepages-2Mi":"1"}}"#, Own::Status);
        assert!(keyed.shared.contains("hugepages-2Mi"), "{}", keyed.shared);
        assert_eq!(&*keyed.own, "1");
    }

    #[test]
    fn the_shared_copy_goes_with_its_last_holder() {
        let text = spec_noting("gone-0", "kube-api-access-zzzzz", None, "only here");
        let a = SharedText::new(&text, Own::Spec { pod_name: "gone-0" });
        let shared = a.shared.to_string();
        let b = a.clone();
        drop(a);
        assert!(shared_texts().contains(shared.as_str()));
        drop(b);
        assert!(!shared_texts().contains(shared.as_str()));
    }
}
