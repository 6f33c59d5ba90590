//! Ordinals: which numbers a set's pods hold, which are reserved, and how a pod's name gives
//! its ordinal (Advanced StatefulSet's numbering; the workload facts read pod names with it).

use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;

/// The reserved ordinals, as sorted, merged, inclusive ranges. A range such as `"0-2000000000"`
/// costs one entry, not two billion.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Reserved {
    ranges: Vec<(i64, i64)>,
}

/// Why a `reserveOrdinals` entry was refused.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("spec.reserveOrdinals[{index}]: {value}: {reason}")]
pub struct ReserveError {
    /// The entry's index in the list.
    pub index: usize,
    /// The entry as written.
    pub value: String,
    /// What is wrong.
    pub reason: &'static str,
}

/// A range bound: decimal digits only, within `i32`.
fn parse_bound(text: &str) -> Option<i64> {
    parse_decimal(text.as_bytes()).map(i64::from)
}

/// What is wrong with a string entry that is not a range.
const NOT_A_RANGE: &str = "must be a non-negative number or a range such as \"3-5\"";

/// The inclusive range one `reserveOrdinals` entry reserves, or why it is refused (`index` is
/// the entry's place in the list). The admission webhook and the planner share this rule.
pub fn reserve_entry(index: usize, item: &IntOrString) -> Result<(i64, i64), ReserveError> {
    let error = |value: String, reason| ReserveError { index, value, reason };
    match item {
        IntOrString::Int(n) if *n < 0 => Err(error(n.to_string(), "must not be negative")),
        IntOrString::Int(n) => Ok((i64::from(*n), i64::from(*n))),
        IntOrString::String(text) => {
            let bounds = text
                .split_once('-')
                .and_then(|(from, to)| Some((parse_bound(from)?, parse_bound(to)?)));
            match bounds {
                None => Err(error(text.clone(), NOT_A_RANGE)),
                Some((from, to)) if from > to => {
                    Err(error(text.clone(), "the range's start is greater than its end"))
                }
                Some(range) => Ok(range),
            }
        }
    }
}

impl Reserved {
    /// Parses `spec.reserveOrdinals`: integers, and `"a-b"` strings for the inclusive range from
    /// `a` to `b`. Upstream drops every reservation when one string is malformed; here the
    /// first bad entry is refused, naming it, so that no pod is ever put on an ordinal meant to
    /// stay free.
    pub fn parse(items: &[IntOrString]) -> Result<Self, ReserveError> {
        let mut ranges = items
            .iter()
            .enumerate()
            .map(|(index, item)| reserve_entry(index, item))
            .collect::<Result<Vec<_>, _>>()?;
        ranges.sort_unstable();
        let mut merged: Vec<(i64, i64)> = Vec::with_capacity(ranges.len());
        for (from, to) in ranges {
            match merged.last_mut() {
                Some(last) if from <= last.1.saturating_add(1) => last.1 = last.1.max(to),
                _ => merged.push((from, to)),
            }
        }
        Ok(Self { ranges: merged })
    }

    /// Whether `ordinal` is reserved.
    pub fn contains(&self, ordinal: i64) -> bool {
        let at = self.ranges.partition_point(|&(_, to)| to < ordinal);
        self.ranges.get(at).is_some_and(|&(from, _)| from <= ordinal)
    }

    /// How many ordinals in `from..to` are reserved.
    pub fn count_in(&self, from: i64, to: i64) -> i64 {
        self.ranges.iter().map(|&(a, b)| (b.saturating_add(1).min(to) - a.max(from)).max(0)).sum()
    }

    /// The first ordinal at or after `ordinal` that is not reserved.
    fn next_free(&self, mut ordinal: i64) -> i64 {
        let at = self.ranges.partition_point(|&(_, to)| to < ordinal);
        for &(from, to) in &self.ranges[at..] {
            if from > ordinal {
                break;
            }
            ordinal = to + 1;
        }
        ordinal
    }
}

/// The ordinals the set's replicas hold: the first `replicas` ordinals from `start` that are
/// not reserved, ascending. Ordinals past `i32::MAX` are never handed out.
pub fn replica_ordinals(start: i32, replicas: i32, reserved: &Reserved) -> Vec<i32> {
    let wanted = usize::try_from(replicas).unwrap_or(0);
    let mut ordinals = Vec::with_capacity(wanted.min(1 << 16));
    let mut next = i64::from(start);
    while ordinals.len() < wanted {
        next = reserved.next_free(next);
        match i32::try_from(next) {
            Ok(ordinal) => ordinals.push(ordinal),
            Err(_) => break,
        }
        next += 1;
    }
    ordinals
}

/// The set a pod name belongs to and its ordinal: `<parent>-<digits>` (the last `-` followed
/// only by digits), as upstream's `(.*)-([0-9]+)$`. `None` when the name has no such suffix or
/// the number does not fit an `i32`.
pub fn parent_and_ordinal(name: &str) -> Option<(&str, i32)> {
    // One backward pass over the trailing digits, which must follow a '-'.
    let bytes = name.as_bytes();
    let digits = bytes.iter().rev().take_while(|b| b.is_ascii_digit()).count();
    let dash = bytes.len().checked_sub(digits + 1)?;
    if digits == 0 || bytes[dash] != b'-' {
        return None;
    }
    Some((name.get(..dash)?, parse_decimal(&bytes[dash + 1..])?))
}

/// The value of a non-empty run of ASCII digits (leading zeros allowed), or `None` when a
/// byte is not a digit or the value does not fit an `i32`.
pub(crate) fn parse_decimal(digits: &[u8]) -> Option<i32> {
    if digits.is_empty() {
        return None;
    }
    digits.iter().try_fold(0i32, |value, &b| {
        if !b.is_ascii_digit() {
            return None;
        }
        value.checked_mul(10)?.checked_add(i32::from(b - b'0'))
    })
}

/// The name of the set's pod at `ordinal`.
pub fn pod_name(set: &str, ordinal: i32) -> String {
    format!("{set}-{ordinal}")
}

/// The name of the claim a pod at `ordinal` gets from the volume claim template `template`.
pub fn claim_name(template: &str, set: &str, ordinal: i32) -> String {
    format!("{template}-{set}-{ordinal}")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn reserve(items: &[IntOrString]) -> Reserved {
        Reserved::parse(items).expect("valid")
    }

    fn int(n: i32) -> IntOrString {
        IntOrString::Int(n)
    }

    fn text(s: &str) -> IntOrString {
        IntOrString::String(s.into())
    }

    #[test]
    fn replica_ordinals_skip_reserved_ones() {
        // Cases from upstream's tests and the manual.
        let cases: Vec<(i32, i32, Vec<IntOrString>, Vec<i32>)> = vec![
            (0, 4, vec![int(1)], vec![0, 2, 3, 4]),
            (0, 4, vec![int(1), int(3)], vec![0, 2, 4, 5]),
            (0, 3, vec![int(1), int(3)], vec![0, 2, 4]),
            (0, 4, vec![text("2-5"), int(7)], vec![0, 1, 6, 8]),
            (0, 5, vec![int(2), int(4)], vec![0, 1, 3, 5, 6]),
            (0, 5, vec![int(1), text("3-5")], vec![0, 2, 6, 7, 8]),
            (2, 3, vec![int(0), int(4)], vec![2, 3, 5]),
            (2, 3, vec![int(0), int(2), int(3), int(4), int(5)], vec![6, 7, 8]),
            (1, 4, vec![int(1), int(3), int(4)], vec![2, 5, 6, 7]),
            (3, 5, vec![], vec![3, 4, 5, 6, 7]),
            (0, 0, vec![int(0)], vec![]),
        ];
        for (start, replicas, items, want) in cases {
            let got = replica_ordinals(start, replicas, &reserve(&items));
            assert_eq!(got, want, "start {start}, replicas {replicas}, reserve {items:?}");
        }
    }

    #[test]
    fn ranges_merge_and_huge_ranges_stay_small() {
        let r = reserve(&[text("1-3"), text("2-4"), text("0003-005"), int(9)]);
        assert_eq!(r.ranges, vec![(1, 5), (9, 9)]);
        let huge = reserve(&[text("0-2000000000")]);
        assert_eq!(huge.ranges.len(), 1);
        assert_eq!(replica_ordinals(0, 2, &huge), vec![2_000_000_001, 2_000_000_002]);
        assert!(huge.contains(1_999_999_999) && !huge.contains(2_000_000_001));
        // Near i32::MAX the walk stops rather than overflow.
        let top = reserve(&[text(&format!("0-{}", i32::MAX - 1))]);
        assert_eq!(replica_ordinals(0, 3, &top), vec![i32::MAX]);
    }

    #[test]
    fn malformed_entries_are_refused_by_index() {
        for (item, reason) in [
            (text("5-2"), "the range's start is greater than its end"),
            (text("a-b"), NOT_A_RANGE),
            (text("3"), NOT_A_RANGE),
            (text("1-2-3"), NOT_A_RANGE),
            (text("-1-3"), NOT_A_RANGE),
            (text(" 1-3"), NOT_A_RANGE),
            (text("1-%"), NOT_A_RANGE),
            (text("+1-3"), NOT_A_RANGE),
            (text("1-"), NOT_A_RANGE),
            (text("0-2147483648"), NOT_A_RANGE),
            (int(-1), "must not be negative"),
        ] {
            let err = Reserved::parse(&[int(0), item.clone()]).expect_err("refused");
            assert_eq!((err.index, err.reason), (1, reason), "{item:?}");
        }
        let err = Reserved::parse(&[text("5-2")]).expect_err("refused");
        assert_eq!(
            err.to_string(),
            "spec.reserveOrdinals[0]: 5-2: the range's start is greater than its end"
        );
        assert_eq!(reserve(&[text("01-3")]).ranges, vec![(1, 3)]);
        assert_eq!(reserve(&[text("3-3")]).ranges, vec![(3, 3)]);
    }

    #[test]
    fn reserved_ordinals_are_counted_in_a_span() {
        let r = reserve(&[int(1), text("3-5"), int(9)]);
        assert_eq!(r.count_in(0, 10), 5);
        assert_eq!(r.count_in(2, 5), 2);
        assert_eq!(r.count_in(6, 9), 0);
        assert_eq!(r.count_in(9, 9), 0);
        assert_eq!(r.count_in(0, 1), 0);
        assert_eq!(r.count_in(0, 2), 1);
    }

    #[test]
    fn pod_names_give_their_ordinals() {
        assert_eq!(parent_and_ordinal("web-0"), Some(("web", 0)));
        assert_eq!(parent_and_ordinal("my-web-12"), Some(("my-web", 12)));
        assert_eq!(parent_and_ordinal("web-01"), Some(("web", 1)));
        assert_eq!(parent_and_ordinal("web"), None);
        assert_eq!(parent_and_ordinal("web-"), None);
        assert_eq!(parent_and_ordinal("web-1a"), None);
        assert_eq!(parent_and_ordinal("web-99999999999"), None);
        assert_eq!(parent_and_ordinal("web-2147483647"), Some(("web", i32::MAX)));
        assert_eq!(parent_and_ordinal("web-2147483648"), None);
        assert_eq!(parent_and_ordinal("-7"), Some(("", 7)));
        assert_eq!(parent_and_ordinal("7"), None);
        assert_eq!(parent_and_ordinal("wéb-3"), Some(("wéb", 3)));
        assert_eq!(parent_and_ordinal("web--3"), Some(("web-", 3)));
        assert_eq!(pod_name("web", 3), "web-3");
        assert_eq!(claim_name("data", "web", 3), "data-web-3");
    }
}
