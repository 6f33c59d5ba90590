//! Int-or-percent arithmetic with the exact rounding Kubernetes and OpenKruise use.
//!
//! An [`IntOrString`] budget (`partition`, `maxUnavailable`, `maxSurge`, ...) is either an
//! absolute number or a percentage of some total. Three dialects exist upstream and they do not
//! accept the same strings, so each has its own parser here:
//!
//! | dialect | parser | `"50%"` | `"12.5%"` | `"50"` | `"-5%"` |
//! |---|---|---|---|---|---|
//! | Kubernetes, current ([`scaled_value`]) | [`IntOrPercent::parse`] | 50 % | error | error | −5 % |
//! | Kubernetes, deprecated ([`lenient_value`]) | [`IntOrPercent::parse_lenient`] | 50 % | error | 50 % | −5 % |
//! | OpenKruise ([`fractional_value`]) | [`IntOrPercent::parse_fractional`] | 50 % | 12.5 % | error | −5 % |
//!
//! None of them rejects negative numbers: callers that need a non-negative budget check it
//! themselves (the CloneSet helpers below clamp or keep upstream's behaviour, as documented).
//!
//! The percentage of a total is computed as `percent * total / 100` in `f64`, then rounded up
//! or down, exactly as upstream does, so results agree bit for bit (for example `99.99%` of
//! 999 is 999 rounded up and 998 rounded down). Results are saturated into `i32`.
//!
//! The CloneSet helpers ([`partition_replicas`], [`cloneset_budget`]) reproduce how the
//! upstream CloneSet controller turns its spec into numbers, including its quirks.

use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;
use kruise_api::apps::v1beta1::CloneSetSpec;

/// `maxUnavailable` a CloneSet rolling update uses when none is set.
pub const DEFAULT_CLONESET_MAX_UNAVAILABLE: &str = "20%";

/// Field name used in errors when the caller did not name the field.
const UNNAMED_FIELD: &str = "value";

/// Which way a fractional scaled value is turned into a whole number.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Rounding {
    /// Towards positive infinity (`ceil`).
    Up,
    /// Towards negative infinity (`floor`).
    Down,
}

impl Rounding {
    /// `Up` when `up` is true, else `Down`; mirrors upstream's `roundUp bool` arguments.
    pub fn up_if(up: bool) -> Self {
        if up { Rounding::Up } else { Rounding::Down }
    }
}

/// Why an int-or-string value could not be read.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum IntStrError {
    /// The string form does not end in `%`, and this dialect only takes percentages as strings.
    #[error("{field}: {value:?} is not a percentage (a string must be a number followed by '%')")]
    NotAPercentage {
        /// The field the value came from (`"value"` when unknown).
        field: &'static str,
        /// The offending string.
        value: String,
    },
    /// The number in front of `%` is not acceptable in this dialect.
    #[error("{field}: {value:?} does not hold {expected}")]
    InvalidNumber {
        /// The field the value came from (`"value"` when unknown).
        field: &'static str,
        /// The offending string.
        value: String,
        /// What was expected, e.g. "an integer percentage".
        expected: &'static str,
    },
}

impl IntStrError {
    /// The same error, reported against `field` (for example
    /// `"spec.updateStrategy.rollingUpdate.maxSurge"`).
    pub fn with_field(self, field: &'static str) -> Self {
        match self {
            IntStrError::NotAPercentage { value, .. } => {
                IntStrError::NotAPercentage { field, value }
            }
            IntStrError::InvalidNumber { value, expected, .. } => {
                IntStrError::InvalidNumber { field, value, expected }
            }
        }
    }

    /// The field the error is reported against.
    pub fn field(&self) -> &'static str {
        match self {
            IntStrError::NotAPercentage { field, .. }
            | IntStrError::InvalidNumber { field, .. } => field,
        }
    }

    /// The string that could not be read.
    pub fn value(&self) -> &str {
        match self {
            IntStrError::NotAPercentage { value, .. }
            | IntStrError::InvalidNumber { value, .. } => value,
        }
    }
}

/// A parsed int-or-string: an absolute number or a percentage of a total still to be given.
#[derive(Clone, Copy, Debug, PartialEq)]
#[non_exhaustive]
pub enum IntOrPercent {
    /// An absolute number, used as is whatever the total.
    Int(i32),
    /// A percentage (`50.0` for `"50%"`); always finite. Integer dialects only produce whole
    /// numbers here.
    Percent(f64),
}

impl IntOrPercent {
    /// Parses with the rules of Kubernetes' `GetScaledValueFromIntOrPercent`: a string must be
    /// an optionally signed decimal integer followed by exactly one `%` (`"50%"`, `"-5%"`,
    /// `"+5%"`); `"50"`, `"12.5%"`, `"%"` and `"abc"` are errors.
    pub fn parse(value: &IntOrString) -> Result<Self, IntStrError> {
        match value {
            IntOrString::Int(i) => Ok(IntOrPercent::Int(*i)),
            IntOrString::String(s) => {
                let Some(number) = s.strip_suffix('%') else {
                    return Err(not_a_percentage(s));
                };
                parse_go_int(number)
                    .map(|n| IntOrPercent::Percent(n as f64))
                    .ok_or_else(|| invalid_number(s, "an integer percentage"))
            }
        }
    }

    /// Parses with the rules of Kubernetes' deprecated `GetValueFromIntOrPercent`: every `%`
    /// is removed and the rest must be an integer, and any string is a percentage, so `"50"`
    /// means 50 %. Upstream CloneSet still computes `maxSurge` and `maxUnavailable` this way.
    pub fn parse_lenient(value: &IntOrString) -> Result<Self, IntStrError> {
        match value {
            IntOrString::Int(i) => Ok(IntOrPercent::Int(*i)),
            IntOrString::String(s) => {
                let number: String = s.chars().filter(|c| *c != '%').collect();
                parse_go_int(&number)
                    .map(|n| IntOrPercent::Percent(n as f64))
                    .ok_or_else(|| invalid_number(s, "an integer or an integer percentage"))
            }
        }
    }

    /// Parses with the rules of OpenKruise's own `GetScaledValueFromIntOrPercent`: a string
    /// must be a decimal number (fraction and exponent allowed) followed by one `%`, such as
    /// `"0.01%"` or `"12.5%"`. Infinite and NaN values, and the hexadecimal and underscore
    /// forms Go's float parser would also take, are rejected.
    pub fn parse_fractional(value: &IntOrString) -> Result<Self, IntStrError> {
        match value {
            IntOrString::Int(i) => Ok(IntOrPercent::Int(*i)),
            IntOrString::String(s) => {
                let Some(number) = s.strip_suffix('%') else {
                    return Err(not_a_percentage(s));
                };
                match number.parse::<f64>() {
                    Ok(p) if p.is_finite() && !number.is_empty() => Ok(IntOrPercent::Percent(p)),
                    _ => Err(invalid_number(s, "a finite decimal percentage")),
                }
            }
        }
    }

    /// The whole number this value stands for out of `total`: an `Int` as is, a `Percent` as
    /// `percent * total / 100` rounded as asked, saturated into `i32`.
    pub fn scale(self, total: i32, rounding: Rounding) -> i32 {
        match self {
            IntOrPercent::Int(i) => i,
            IntOrPercent::Percent(p) => {
                let exact = p * f64::from(total) / 100.0;
                let rounded = match rounding {
                    Rounding::Up => exact.ceil(),
                    Rounding::Down => exact.floor(),
                };
                // `as` saturates at the i32 bounds (and maps NaN, impossible here, to 0).
                rounded as i32
            }
        }
    }

    /// Whether this is a percentage.
    pub fn is_percent(self) -> bool {
        matches!(self, IntOrPercent::Percent(_))
    }
}

/// Kubernetes' `GetScaledValueFromIntOrPercent`: see [`IntOrPercent::parse`] for the syntax.
pub fn scaled_value(
    value: &IntOrString,
    total: i32,
    rounding: Rounding,
) -> Result<i32, IntStrError> {
    IntOrPercent::parse(value).map(|v| v.scale(total, rounding))
}

/// Kubernetes' deprecated `GetValueFromIntOrPercent`: see [`IntOrPercent::parse_lenient`].
pub fn lenient_value(
    value: &IntOrString,
    total: i32,
    rounding: Rounding,
) -> Result<i32, IntStrError> {
    IntOrPercent::parse_lenient(value).map(|v| v.scale(total, rounding))
}

/// OpenKruise's `GetScaledValueFromIntOrPercent` (fractional percentages): see
/// [`IntOrPercent::parse_fractional`]. The Kruise webhooks validate budgets with this.
pub fn fractional_value(
    value: &IntOrString,
    total: i32,
    rounding: Rounding,
) -> Result<i32, IntStrError> {
    IntOrPercent::parse_fractional(value).map(|v| v.scale(total, rounding))
}

/// How many pods a rolling-update `partition` keeps at the old revision, as upstream's
/// `CalculatePartitionReplicas` computes it:
///
/// - no partition means 0; `replicas` defaults to 1;
/// - a percentage (fractional allowed) is rounded **up**, so any non-zero percentage keeps at
///   least one old pod;
/// - a percentage other than the literal `"100%"` that would keep every pod keeps one fewer
///   when there are at least two replicas, so that at least one pod is updated;
/// - the result is clamped into `0..=replicas`.
///
/// A malformed partition is an error (upstream then logs it and uses 0).
pub fn partition_replicas(
    partition: Option<&IntOrString>,
    replicas: Option<i32>,
) -> Result<i32, IntStrError> {
    let Some(partition) = partition else {
        return Ok(0);
    };
    let replicas = replicas.unwrap_or(1);
    let mut value = fractional_value(partition, replicas, Rounding::Up)?;
    if let IntOrString::String(s) = partition
        && replicas > 1
        && value == replicas
        && s != "100%"
    {
        value = replicas - 1;
    }
    Ok(value.min(replicas).max(0))
}

/// The numeric budgets of a CloneSet, resolved from its spec the way the upstream controller
/// does before computing scale and update diffs.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct CloneSetBudget {
    /// `spec.replicas` (1 when unset).
    pub replicas: i32,
    /// Pods to keep at the current revision ([`partition_replicas`]).
    pub partition: i32,
    /// Extra pods allowed above `replicas` while updating; 0 while paused.
    pub max_surge: i32,
    /// Pods allowed to be unavailable while updating.
    pub max_unavailable: i32,
    /// Pods allowed to be unavailable while scaling out (`scaleStrategy.maxUnavailable`,
    /// unbounded — `i32::MAX` — when unset).
    pub scale_max_unavailable: i32,
}

/// Resolves a CloneSet's budgets with upstream's exact rules:
///
/// - `partition`: [`partition_replicas`];
/// - `maxSurge` (default 0): deprecated Kubernetes parsing ([`lenient_value`]), rounded
///   **up**; forced to 0 while `rollingUpdate.paused`;
/// - `maxUnavailable` (default `"20%"`): [`lenient_value`], rounded **up when `maxSurge` is
///   0 and down otherwise**. Without any `rollingUpdate` section the default is rounded down.
///   Unlike Deployments, a CloneSet never bumps a zero `maxUnavailable` to 1;
/// - `scaleStrategy.maxUnavailable` (default unbounded): [`lenient_value`], rounded up.
///
/// Upstream ignores malformed values (a value that fails to parse counts as 0); so does
/// this function, but it also returns one error per such field, naming the field, so the
/// caller can report them. Note that a fractional percentage such as `"12.5%"` passes the
/// webhook but fails the controller's parser, and so counts as 0 here as it does upstream.
pub fn cloneset_budget(spec: &CloneSetSpec) -> (CloneSetBudget, Vec<IntStrError>) {
    const PARTITION: &str = "spec.updateStrategy.rollingUpdate.partition";
    const MAX_SURGE: &str = "spec.updateStrategy.rollingUpdate.maxSurge";
    const MAX_UNAVAILABLE: &str = "spec.updateStrategy.rollingUpdate.maxUnavailable";
    const SCALE_MAX_UNAVAILABLE: &str = "spec.scaleStrategy.maxUnavailable";

    let mut errors = Vec::new();
    let mut or_zero = |result: Result<i32, IntStrError>, field: &'static str| {
        result.unwrap_or_else(|e| {
            errors.push(e.with_field(field));
            0
        })
    };

    let replicas = spec.replicas.unwrap_or(1);
    let default_max_unavailable = IntOrString::String(DEFAULT_CLONESET_MAX_UNAVAILABLE.to_owned());
    let (partition, max_surge, max_unavailable) = match &spec.update_strategy.rolling_update {
        Some(rolling) => {
            let partition =
                or_zero(partition_replicas(rolling.partition.as_ref(), spec.replicas), PARTITION);
            let mut max_surge = match &rolling.max_surge {
                Some(v) => or_zero(lenient_value(v, replicas, Rounding::Up), MAX_SURGE),
                None => 0,
            };
            if rolling.paused {
                max_surge = 0;
            }
            let max_unavailable = or_zero(
                lenient_value(
                    rolling.max_unavailable.as_ref().unwrap_or(&default_max_unavailable),
                    replicas,
                    Rounding::up_if(max_surge == 0),
                ),
                MAX_UNAVAILABLE,
            );
            (partition, max_surge, max_unavailable)
        }
        None => {
            let max_unavailable = or_zero(
                lenient_value(&default_max_unavailable, replicas, Rounding::Down),
                MAX_UNAVAILABLE,
            );
            (0, 0, max_unavailable)
        }
    };
    let scale_max_unavailable = match &spec.scale_strategy.max_unavailable {
        Some(v) => or_zero(lenient_value(v, replicas, Rounding::Up), SCALE_MAX_UNAVAILABLE),
        None => i32::MAX,
    };

    let budget =
        CloneSetBudget { replicas, partition, max_surge, max_unavailable, scale_max_unavailable };
    (budget, errors)
}

/// Deployment-style surge and unavailability (Kubernetes' `ResolveFenceposts`): `maxSurge`
/// rounds up, `maxUnavailable` rounds down, and if both come out as 0, `maxUnavailable`
/// becomes 1 so the rollout can progress. Strict parsing ([`IntOrPercent::parse`]); absent
/// values count as 0. Returns `(max_surge, max_unavailable)`.
///
/// CloneSet does **not** use this rule; see [`cloneset_budget`].
pub fn resolve_fenceposts(
    max_surge: Option<&IntOrString>,
    max_unavailable: Option<&IntOrString>,
    desired: i32,
) -> Result<(i32, i32), IntStrError> {
    let zero = IntOrString::Int(0);
    let surge = scaled_value(max_surge.unwrap_or(&zero), desired, Rounding::Up)
        .map_err(|e| e.with_field("maxSurge"))?;
    let mut unavailable = scaled_value(max_unavailable.unwrap_or(&zero), desired, Rounding::Down)
        .map_err(|e| e.with_field("maxUnavailable"))?;
    if surge == 0 && unavailable == 0 {
        unavailable = 1;
    }
    Ok((surge, unavailable))
}

/// Go's `strconv.Atoi` on a 64-bit platform: optional `+`/`-`, then at least one ASCII digit,
/// nothing else, within `i64`.
fn parse_go_int(s: &str) -> Option<i64> {
    // Rust's integer parser takes the same syntax (sign, then digits, no spaces or `_`).
    s.parse::<i64>().ok()
}

fn not_a_percentage(s: &str) -> IntStrError {
    IntStrError::NotAPercentage { field: UNNAMED_FIELD, value: s.to_owned() }
}

fn invalid_number(s: &str, expected: &'static str) -> IntStrError {
    IntStrError::InvalidNumber { field: UNNAMED_FIELD, value: s.to_owned(), expected }
}

/// `strconv.ParseInt(s, 10, 32)`'s result or error text.
///
/// # Errors
/// Go's error text: `invalid syntax` or `value out of range`.
pub fn go_parse_int32(s: &str) -> Result<i32, String> {
    let digits = s.strip_prefix(['+', '-']).unwrap_or(s);
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return Err(format!(
            "strconv.ParseInt: parsing {}: invalid syntax",
            crate::field::go::quote(s)
        ));
    }
    s.parse::<i32>().map_err(|_| {
        format!("strconv.ParseInt: parsing {}: value out of range", crate::field::go::quote(s))
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use kruise_api::apps::v1beta1::{
        CloneSetScaleStrategy, CloneSetUpdateStrategy, RollingUpdateCloneSetStrategy,
    };

    fn s(v: &str) -> IntOrString {
        IntOrString::String(v.to_owned())
    }

    #[test]
    fn strict_dialect_table() {
        // (input, total, rounding, expected)
        let ok = [
            (IntOrString::Int(123), 0, Rounding::Up, 123),
            (s("90%"), 100, Rounding::Up, 90),
            (s("90%"), 95, Rounding::Up, 86),
            (s("90%"), 95, Rounding::Down, 85),
            (s("0%"), 95, Rounding::Up, 0),
            (s("100%"), 7, Rounding::Down, 7),
            (s("+5%"), 100, Rounding::Down, 5),
            (s("-5%"), 30, Rounding::Up, -1),
            (s("-5%"), 30, Rounding::Down, -2),
        ];
        for (input, total, rounding, expected) in ok {
            assert_eq!(scaled_value(&input, total, rounding), Ok(expected), "{input:?}");
        }
        for bad in ["%", "90#", "#%", "90", "abc", "12.5%", "50%%", " 5%", "5 %", ""] {
            let err = scaled_value(&s(bad), 10, Rounding::Up).expect_err(bad);
            assert_eq!(err.value(), bad);
            assert!(err.to_string().contains(&format!("{bad:?}")), "{err}");
        }
    }

    #[test]
    fn lenient_dialect_table() {
        assert_eq!(lenient_value(&s("50"), 10, Rounding::Down), Ok(5));
        assert_eq!(lenient_value(&s("50%"), 3, Rounding::Down), Ok(1));
        assert_eq!(lenient_value(&s("50%"), 3, Rounding::Up), Ok(2));
        assert_eq!(lenient_value(&s("5%0"), 10, Rounding::Down), Ok(5));
        assert_eq!(lenient_value(&s("50%%"), 10, Rounding::Down), Ok(5));
        assert_eq!(lenient_value(&IntOrString::Int(i32::MAX), 10, Rounding::Up), Ok(i32::MAX));
        for bad in ["12.5%", "abc", "%", "", "5 %"] {
            assert!(lenient_value(&s(bad), 10, Rounding::Up).is_err(), "{bad}");
        }
    }

    #[test]
    fn fractional_dialect_table_from_upstream() {
        let ok = [
            (s("90%"), 100, Rounding::Up, 90),
            (s("90%"), 95, Rounding::Up, 86),
            (s("90%"), 95, Rounding::Down, 85),
            (s("99.99%"), 999, Rounding::Down, 998),
            (s("99.99%"), 999, Rounding::Up, 999),
            (s("0.01%"), 95, Rounding::Down, 0),
            (s("0.01%"), 95, Rounding::Up, 1),
            (s("1e1%"), 50, Rounding::Up, 5),
            (s("-5%"), 30, Rounding::Down, -2),
        ];
        for (input, total, rounding, expected) in ok {
            assert_eq!(fractional_value(&input, total, rounding), Ok(expected), "{input:?}");
        }
        for bad in ["%", "90#", "#%", "90", "inf%", "NaN%", "1e400%", "0x10%"] {
            assert!(fractional_value(&s(bad), 10, Rounding::Up).is_err(), "{bad}");
        }
    }

    #[test]
    fn huge_percentages_saturate() {
        assert_eq!(scaled_value(&s("9000000000%"), 1000, Rounding::Up), Ok(i32::MAX));
        assert_eq!(scaled_value(&s("-9000000000%"), 1000, Rounding::Up), Ok(i32::MIN));
    }

    #[test]
    fn errors_name_field_and_value() {
        let err = scaled_value(&s("abc"), 1, Rounding::Up).expect_err("abc").with_field("maxSurge");
        assert_eq!(err.field(), "maxSurge");
        assert_eq!(
            err.to_string(),
            "maxSurge: \"abc\" is not a percentage (a string must be a number followed by '%')"
        );
        let err = scaled_value(&s("1.5%"), 1, Rounding::Up).expect_err("1.5%");
        assert_eq!(err.to_string(), "value: \"1.5%\" does not hold an integer percentage");
    }

    #[test]
    fn partition_table_from_upstream() {
        let i = IntOrString::Int;
        // (partition, replicas, expected)
        let ok: [(Option<IntOrString>, Option<i32>, i32); 14] = [
            (None, Some(10), 0),
            (Some(s("0%")), Some(10), 0),
            (Some(s("100%")), Some(10), 10),
            (Some(s("99%")), Some(10), 9),
            (Some(s("1%")), Some(10), 1),
            (Some(s("50%")), None, 1),
            (Some(i(5)), Some(10), 5),
            (Some(i(0)), Some(10), 0),
            (Some(i(10)), Some(10), 10),
            (Some(i(15)), Some(10), 10),
            (Some(i(-3)), Some(10), 0),
            (Some(s("0.01%")), Some(9), 1),
            (Some(s("99.99%")), Some(999), 998),
            (Some(s("100.0%")), Some(4), 3),
        ];
        for (partition, replicas, expected) in ok {
            assert_eq!(
                partition_replicas(partition.as_ref(), replicas),
                Ok(expected),
                "{partition:?} of {replicas:?}"
            );
        }
        assert!(partition_replicas(Some(&s("99")), Some(9)).is_err());
        // One replica: a 99% partition keeps the only pod.
        assert_eq!(partition_replicas(Some(&s("99%")), Some(1)), Ok(1));
    }

    fn spec_with(rolling: Option<RollingUpdateCloneSetStrategy>, replicas: i32) -> CloneSetSpec {
        CloneSetSpec {
            replicas: Some(replicas),
            update_strategy: CloneSetUpdateStrategy {
                rolling_update: rolling,
                ..Default::default()
            },
            ..Default::default()
        }
    }

    #[test]
    fn cloneset_budget_rounding() {
        // No surge: maxUnavailable rounds up.
        let rolling =
            RollingUpdateCloneSetStrategy { max_unavailable: Some(s("25%")), ..Default::default() };
        let (b, errs) = cloneset_budget(&spec_with(Some(rolling), 10));
        assert!(errs.is_empty());
        assert_eq!((b.max_surge, b.max_unavailable, b.partition), (0, 3, 0));
        assert_eq!(b.scale_max_unavailable, i32::MAX);

        // With surge: surge rounds up, maxUnavailable rounds down (and may stay 0).
        let rolling = RollingUpdateCloneSetStrategy {
            max_unavailable: Some(s("5%")),
            max_surge: Some(s("5%")),
            ..Default::default()
        };
        let (b, _) = cloneset_budget(&spec_with(Some(rolling.clone()), 10));
        assert_eq!((b.max_surge, b.max_unavailable), (1, 0));

        // Paused: no surge, so maxUnavailable rounds up again.
        let paused = RollingUpdateCloneSetStrategy { paused: true, ..rolling };
        let (b, _) = cloneset_budget(&spec_with(Some(paused), 10));
        assert_eq!((b.max_surge, b.max_unavailable), (0, 1));

        // Default maxUnavailable 20%, rounded up with a rolling section, down without.
        let (b, _) = cloneset_budget(&spec_with(Some(Default::default()), 3));
        assert_eq!(b.max_unavailable, 1);
        let (b, _) = cloneset_budget(&spec_with(None, 3));
        assert_eq!(b.max_unavailable, 0);

        // Unset replicas count as 1.
        let spec = CloneSetSpec { replicas: None, ..spec_with(Some(Default::default()), 0) };
        assert_eq!(cloneset_budget(&spec).0.replicas, 1);
    }

    #[test]
    fn cloneset_budget_reports_bad_fields_and_uses_zero() {
        let rolling = RollingUpdateCloneSetStrategy {
            partition: Some(s("abc")),
            max_unavailable: Some(s("12.5%")),
            max_surge: Some(s("x%")),
            ..Default::default()
        };
        let mut spec = spec_with(Some(rolling), 8);
        spec.scale_strategy =
            CloneSetScaleStrategy { max_unavailable: Some(s("50%")), ..Default::default() };
        let (b, errs) = cloneset_budget(&spec);
        assert_eq!((b.partition, b.max_surge, b.max_unavailable), (0, 0, 0));
        assert_eq!(b.scale_max_unavailable, 4);
        let fields: Vec<_> = errs.iter().map(IntStrError::field).collect();
        assert_eq!(
            fields,
            [
                "spec.updateStrategy.rollingUpdate.partition",
                "spec.updateStrategy.rollingUpdate.maxSurge",
                "spec.updateStrategy.rollingUpdate.maxUnavailable",
            ]
        );
    }

    #[test]
    fn fenceposts() {
        let (surge, unavailable) =
            resolve_fenceposts(Some(&s("25%")), Some(&s("25%")), 10).expect("valid");
        assert_eq!((surge, unavailable), (3, 2));
        assert_eq!(resolve_fenceposts(None, None, 10), Ok((0, 1)));
        assert_eq!(resolve_fenceposts(Some(&s("0%")), Some(&s("5%")), 10), Ok((0, 1)));
        let err = resolve_fenceposts(Some(&s("a")), None, 1).expect_err("bad surge");
        assert_eq!(err.field(), "maxSurge");
    }
}
