//! Which pods a SidecarSet selects, and whether two SidecarSets may select the same pods.

use std::collections::BTreeMap;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector;
use kruise_api::apps::v1beta1::SidecarSet;

use crate::admission::meta::{Selector, label_selector_as_selector};

/// Whether `sidecar_set` selects a pod with `pod_labels` in a namespace with
/// `namespace_labels` (`None`: the namespace is unknown).
///
/// As upstream: with a `namespaceSelector`, the namespace must be known and match it (an
/// invalid namespace selector matches nothing); the pod `selector` must be set, non-empty and
/// match.
///
/// # Errors
/// The text of the parse error when `spec.selector` is invalid.
pub fn pod_matches(
    sidecar_set: &SidecarSet,
    pod_labels: &BTreeMap<String, String>,
    namespace_labels: Option<&BTreeMap<String, String>>,
) -> Result<bool, String> {
    ParsedSelectors::of(sidecar_set).matches(pod_labels, namespace_labels)
}

/// A SidecarSet's `selector` and `namespaceSelector`, parsed once, for callers that match
/// the same SidecarSet against many pods (the pod webhook's index keeps one per SidecarSet).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ParsedSelectors {
    /// `None` without a `namespaceSelector`; an invalid one is kept as its error.
    namespace: Option<Result<Selector, String>>,
    pods: Result<Selector, String>,
}

impl ParsedSelectors {
    /// The parsed selectors of `sidecar_set`.
    pub fn of(sidecar_set: &SidecarSet) -> Self {
        let spec = &sidecar_set.spec;
        ParsedSelectors {
            namespace: spec
                .namespace_selector
                .as_ref()
                .map(|ns| label_selector_as_selector(Some(ns))),
            pods: label_selector_as_selector(spec.selector.as_ref()),
        }
    }

    /// [`pod_matches`] with these selectors.
    ///
    /// # Errors
    /// The text of the parse error when `spec.selector` is invalid.
    pub fn matches(
        &self,
        pod_labels: &BTreeMap<String, String>,
        namespace_labels: Option<&BTreeMap<String, String>>,
    ) -> Result<bool, String> {
        if let Some(ns_selector) = &self.namespace {
            let Some(ns_labels) = namespace_labels else { return Ok(false) };
            match ns_selector {
                Ok(selector) if selector.matches(ns_labels) => {}
                _ => return Ok(false),
            }
        }
        let selector = self.pods.as_ref().map_err(Clone::clone)?;
        Ok(!selector.is_empty() && selector.matches(pod_labels))
    }
}

/// Upstream's `IsSelectorOverlapping`: whether two selectors may select a common label set.
/// It is a cheap, conservative test: `false` only when a requirement of one rules out every
/// value the other allows for the same key.
pub fn selectors_overlap(a: Option<&LabelSelector>, b: Option<&LabelSelector>) -> bool {
    let empty = LabelSelector::default();
    let (a, b) = (a.unwrap_or(&empty), b.unwrap_or(&empty));
    !(disjoint(a, b) || disjoint(b, a))
}

/// The values `selector` pins each key to (`None`: any value, from `Exists`).
fn pinned(selector: &LabelSelector) -> BTreeMap<&str, Option<Vec<&str>>> {
    let mut out: BTreeMap<&str, Option<Vec<&str>>> = BTreeMap::new();
    for (k, v) in selector.match_labels.iter().flatten() {
        out.insert(k, Some(vec![v]));
    }
    for req in selector.match_expressions.iter().flatten() {
        match req.operator.as_str() {
            "In" => {
                let entry = out.entry(&req.key).or_insert_with(|| Some(Vec::new()));
                if let Some(values) = entry {
                    values.extend(req.values.iter().flatten().map(String::as_str));
                }
            }
            "Exists" => {
                out.insert(&req.key, None);
            }
            _ => {}
        }
    }
    out
}

fn disjoint(a: &LabelSelector, b: &LabelSelector) -> bool {
    let pins = pinned(a);
    for (k, v) in b.match_labels.iter().flatten() {
        if let Some(Some(values)) = pins.get(k.as_str())
            && !values.contains(&v.as_str())
        {
            return true;
        }
    }
    for req in b.match_expressions.iter().flatten() {
        let pin = pins.get(req.key.as_str());
        let wanted: Vec<&str> = req.values.iter().flatten().map(String::as_str).collect();
        match req.operator.as_str() {
            "In" => {
                if let Some(Some(values)) = pin
                    && !values.iter().any(|v| wanted.contains(v))
                {
                    return true;
                }
            }
            "NotIn" => {
                // Upstream treats `Exists` as the single value "ALL" here.
                let values: Vec<&str> = match pin {
                    Some(Some(values)) => values.clone(),
                    Some(None) => vec!["ALL"],
                    None => continue,
                };
                if values.iter().all(|v| wanted.contains(v)) {
                    return true;
                }
            }
            "Exists" if pin.is_none() => return true,
            "DoesNotExist" if pin.is_some() => return true,
            _ => {}
        }
    }
    false
}

/// Whether the namespaces two SidecarSets select may overlap (upstream's
/// `isSidecarSetNamespaceOverlapping`): only two namespace selectors that cannot overlap
/// keep them apart.
pub fn namespaces_overlap(a: &SidecarSet, b: &SidecarSet) -> bool {
    match (&a.spec.namespace_selector, &b.spec.namespace_selector) {
        (Some(x), Some(y)) => selectors_overlap(Some(x), Some(y)),
        _ => true,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelectorRequirement;

    fn labels(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
        pairs.iter().map(|(k, v)| ((*k).to_owned(), (*v).to_owned())).collect()
    }

    fn sel(pairs: &[(&str, &str)], exprs: &[(&str, &str, &[&str])]) -> LabelSelector {
        LabelSelector {
            match_labels: (!pairs.is_empty()).then(|| labels(pairs)),
            match_expressions: (!exprs.is_empty()).then(|| {
                exprs
                    .iter()
                    .map(|(k, op, vs)| LabelSelectorRequirement {
                        key: (*k).into(),
                        operator: (*op).into(),
                        values: (!vs.is_empty())
                            .then(|| vs.iter().map(|v| (*v).to_owned()).collect()),
                    })
                    .collect()
            }),
        }
    }

    #[test]
    fn overlap_table() {
        let a = sel(&[("app", "web")], &[]);
        assert!(selectors_overlap(Some(&a), Some(&sel(&[("app", "web")], &[]))));
        assert!(!selectors_overlap(Some(&a), Some(&sel(&[("app", "db")], &[]))));
        assert!(selectors_overlap(Some(&a), Some(&sel(&[("tier", "x")], &[]))));
        assert!(selectors_overlap(Some(&a), Some(&sel(&[], &[("app", "In", &["web", "x"])]))));
        assert!(!selectors_overlap(Some(&a), Some(&sel(&[], &[("app", "In", &["x"])]))));
        assert!(!selectors_overlap(Some(&a), Some(&sel(&[], &[("app", "NotIn", &["web"])]))));
        assert!(!selectors_overlap(Some(&a), Some(&sel(&[], &[("app", "DoesNotExist", &[])]))));
        assert!(!selectors_overlap(Some(&a), Some(&sel(&[], &[("other", "Exists", &[])]))));
        let exists = sel(&[], &[("app", "Exists", &[])]);
        assert!(selectors_overlap(Some(&exists), Some(&a)));
    }

    /// Upstream's `TestSelectorConflict` table.
    #[test]
    fn upstream_selector_conflict_table() {
        let cases: Vec<(LabelSelector, LabelSelector, bool)> = vec![
            (sel(&[("a", "h")], &[]), sel(&[("a", "h")], &[]), true),
            (sel(&[("a", "h")], &[]), sel(&[("a", "i")], &[]), false),
            (sel(&[("a", "h")], &[]), sel(&[("b", "i")], &[]), true),
            (
                sel(&[("a", "h"), ("b", "i"), ("c", "j")], &[]),
                sel(&[("a", "h"), ("b", "x"), ("c", "j")], &[]),
                false,
            ),
            (sel(&[("a", "h")], &[]), sel(&[], &[("a", "In", &["h", "i", "j"])]), true),
            (sel(&[("a", "h")], &[]), sel(&[], &[("a", "In", &["i", "j"])]), false),
            (sel(&[], &[("a", "NotIn", &["h", "i"])]), sel(&[("a", "h")], &[]), false),
            (sel(&[("a", "h")], &[]), sel(&[], &[("a", "Exists", &[])]), true),
            (sel(&[], &[("a", "DoesNotExist", &[])]), sel(&[("a", "h")], &[]), false),
        ];
        for (i, (a, b, want)) in cases.iter().enumerate() {
            assert_eq!(selectors_overlap(Some(a), Some(b)), *want, "case {i}");
        }
    }

    #[test]
    fn pod_matching_needs_a_non_empty_selector() {
        let mut s = SidecarSet::new("s", Default::default());
        let pod = labels(&[("app", "web")]);
        assert!(!pod_matches(&s, &pod, None).expect("ok"));
        s.spec.selector = Some(LabelSelector::default());
        assert!(!pod_matches(&s, &pod, None).expect("ok"));
        s.spec.selector = Some(sel(&[("app", "web")], &[]));
        assert!(pod_matches(&s, &pod, None).expect("ok"));
        s.spec.namespace_selector = Some(sel(&[("team", "a")], &[]));
        assert!(!pod_matches(&s, &pod, None).expect("ok"));
        assert!(pod_matches(&s, &pod, Some(&labels(&[("team", "a")]))).expect("ok"));
        assert!(!pod_matches(&s, &pod, Some(&labels(&[("team", "b")]))).expect("ok"));
        s.spec.selector = Some(sel(&[], &[("app", "Bad", &[])]));
        assert!(pod_matches(&s, &pod, Some(&labels(&[("team", "a")]))).is_err());
    }
}
