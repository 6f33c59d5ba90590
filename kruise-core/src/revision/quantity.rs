//! Resource quantities as Go's `resource.Quantity` reads and writes them.
//!
//! Go writes a quantity back the way it was read only when its parser found the text already
//! in canonical form: `1000m` is written `1`, `0.5Gi` is written `512Mi`, `1.5` is written
//! `1500m`, while `+1`, `1.500` and `1E3` are kept. Whatever Go hashes, diffs or stores was
//! therefore rewritten first, so we do the same with [`go_written`]; [`canonical`] is the
//! form Go computes for a quantity without a kept text. [`Quantity::parse`] gives the exact
//! value, so that quantities written differently (`1Gi`, `1073741824`) still compare equal by
//! value.

use std::cmp::Ordering;
use std::fmt;

/// How a quantity spells its scale; canonical output keeps the family of the input.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum QuantityFormat {
    /// Powers of ten written as `e<n>` (`1e3`).
    DecimalExponent,
    /// Powers of 1024 (`Ki`, `Mi`, ... `Ei`).
    BinarySi,
    /// Powers of 1000 (`n`, `u`, `m`, `k`, `M`, ... `E`) or no suffix.
    DecimalSi,
}

/// Why a string is not a quantity.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum QuantityError {
    /// The string is empty.
    #[error("quantity is empty")]
    Empty,
    /// The text is not digits with an optional fraction followed by suffix letters.
    #[error("quantity {0:?} is not a number followed by a valid suffix")]
    Format(String),
    /// The suffix is not one Go knows (`K`, `kb`, `Mb`).
    #[error("quantity {0:?} has an unknown suffix")]
    Suffix(String),
    /// The value does not fit the 128-bit arithmetic used here.
    #[error("quantity {0:?} is too large to handle")]
    TooLarge(String),
}

impl QuantityError {
    /// What Go's `resource.ParseQuantity` says for this text; kube-apiserver puts it after
    /// `<Kind> in version "v1" cannot be handled as a <Kind>: `.
    pub fn go_message(&self) -> &'static str {
        match self {
            QuantityError::Empty | QuantityError::Format(_) => {
                "quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'"
            }
            QuantityError::Suffix(_) => "unable to parse quantity's suffix",
            // Go parses any length with arbitrary precision; this is its closest message.
            QuantityError::TooLarge(_) => "unable to parse numeric part of quantity",
        }
    }
}

/// An exact quantity value: `(-1)^negative * mantissa * 10^exponent`, rounded up to a
/// multiple of 10^-9 as Go rounds it, plus the format it was written in.
#[derive(Clone, Copy, Debug)]
pub struct Quantity {
    negative: bool,
    mantissa: u128,
    exponent: i32,
    format: QuantityFormat,
}

impl PartialEq for Quantity {
    fn eq(&self, other: &Self) -> bool {
        self.cmp_value(other) == Ordering::Equal
    }
}

impl Quantity {
    /// Parses a quantity with Go's grammar: optional sign, digits, optional fraction, and an
    /// optional suffix (`m`, `k`, `Ki`, `e3`, ...).
    pub fn parse(text: &str) -> Result<Self, QuantityError> {
        let raw = text.trim();
        if raw.is_empty() {
            return Err(QuantityError::Empty);
        }
        let parts = split_quantity(raw).ok_or_else(|| QuantityError::Format(text.to_owned()))?;
        let (base, power, format) =
            interpret_suffix(parts.suffix).ok_or_else(|| QuantityError::Suffix(text.to_owned()))?;
        let too_large = || QuantityError::TooLarge(text.to_owned());

        let digits = format!("{}{}", parts.whole, parts.fraction);
        let digits = digits.trim_start_matches('0');
        let mut mantissa: u128 =
            if digits.is_empty() { 0 } else { digits.parse().map_err(|_| too_large())? };
        let mut exponent = -i32::try_from(parts.fraction.len()).map_err(|_| too_large())?;
        if base == 10 {
            exponent = exponent.checked_add(power).ok_or_else(too_large)?;
        } else {
            let factor = 1u128.checked_shl(power.unsigned_abs()).ok_or_else(too_large)?;
            mantissa = mantissa.checked_mul(factor).ok_or_else(too_large)?;
        }

        // Values finer than a nano-unit round up (away from zero) to the next nano-unit.
        if mantissa != 0 && exponent < -9 {
            let shift = u32::try_from(-9 - exponent).map_err(|_| too_large())?;
            let divisor = 10u128.checked_pow(shift);
            mantissa = match divisor {
                Some(d) => mantissa / d + u128::from(!mantissa.is_multiple_of(d)),
                None => 1,
            };
            exponent = -9;
        }
        let mut quantity = Self { negative: !parts.positive, mantissa, exponent, format };
        quantity.normalize();

        if format == QuantityFormat::BinarySi {
            // Binary quantities are capped at the largest int64.
            let max = Self {
                negative: false,
                mantissa: i64::MAX as u128,
                exponent: 0,
                format: QuantityFormat::BinarySi,
            };
            if !quantity.negative && quantity.cmp_value(&max) == Ordering::Greater {
                quantity.mantissa = max.mantissa;
                quantity.exponent = 0;
                quantity.normalize();
            }
            let one = Self { negative: false, mantissa: 1, exponent: 0, format };
            if !quantity.negative
                && quantity.mantissa != 0
                && quantity.cmp_value(&one) == Ordering::Less
            {
                quantity.format = QuantityFormat::DecimalSi;
            }
        }
        if quantity.mantissa == 0 {
            quantity.negative = false;
        }
        Ok(quantity)
    }

    /// Whether Go 1.36 loses this value when writing it: a decimal (SI) quantity whose
    /// canonical exponent is past `E` (10^18) is written without any suffix (`1000E` as `1`).
    pub fn go_drops_exponent(&self) -> bool {
        self.format == QuantityFormat::DecimalSi
            && self.mantissa != 0
            && self.exponent.div_euclid(3) * 3 > 18
    }

    /// The format the quantity was written in.
    pub fn format(&self) -> QuantityFormat {
        self.format
    }

    /// Whether the value is zero.
    pub fn is_zero(&self) -> bool {
        self.mantissa == 0
    }

    /// Moves trailing decimal zeros of the mantissa into the exponent.
    fn normalize(&mut self) {
        if self.mantissa == 0 {
            self.exponent = 0;
            return;
        }
        while self.mantissa.is_multiple_of(10) {
            self.mantissa /= 10;
            self.exponent += 1;
        }
    }

    /// Compares values, ignoring the format.
    pub fn cmp_value(&self, other: &Self) -> Ordering {
        match (self.negative, other.negative) {
            (false, true) => return Ordering::Greater,
            (true, false) => return Ordering::Less,
            _ => {}
        }
        let magnitude =
            compare_magnitude(self.mantissa, self.exponent, other.mantissa, other.exponent);
        if self.negative { magnitude.reverse() } else { magnitude }
    }

    /// The sum of two quantities (in this one's format), or `None` on overflow.
    pub fn checked_add(&self, other: &Self) -> Option<Self> {
        let exponent = self.exponent.min(other.exponent);
        let scale = |q: &Self| -> Option<i128> {
            let factor = 10i128.checked_pow((q.exponent - exponent).unsigned_abs())?;
            let magnitude = i128::try_from(q.mantissa).ok()?.checked_mul(factor)?;
            Some(if q.negative { -magnitude } else { magnitude })
        };
        let sum = scale(self)?.checked_add(scale(other)?)?;
        let mut out =
            Self { negative: sum < 0, mantissa: sum.unsigned_abs(), exponent, format: self.format };
        out.normalize();
        if out.mantissa == 0 {
            out.negative = false;
        }
        Some(out)
    }

    /// The value in thousandths of a unit, rounded away from zero as Go's `MilliValue`
    /// rounds; `None` when it does not fit.
    pub fn milli_value(&self) -> Option<i128> {
        let magnitude = i128::try_from(self.mantissa).ok()?;
        let shifted = self.exponent + 3;
        let milli = if shifted >= 0 {
            magnitude.checked_mul(10i128.checked_pow(shifted.unsigned_abs())?)?
        } else {
            let divisor = 10i128.checked_pow(shifted.unsigned_abs()).unwrap_or(i128::MAX);
            magnitude / divisor + i128::from(magnitude % divisor != 0)
        };
        Some(if self.negative { -milli } else { milli })
    }

    /// A quantity of `milli` thousandths of a unit, written in `format` (Go's `SetMilli` on
    /// a quantity of that format).
    pub fn from_milli(milli: i128, format: QuantityFormat) -> Self {
        let mut out =
            Self { negative: milli < 0, mantissa: milli.unsigned_abs(), exponent: -3, format };
        out.normalize();
        if out.mantissa == 0 {
            out.negative = false;
        }
        out
    }

    /// The quantity with its sign flipped.
    pub fn negated(&self) -> Self {
        let mut out = *self;
        out.negative = out.mantissa != 0 && !out.negative;
        out
    }

    /// The canonical text Go writes for this quantity.
    pub fn to_canonical(&self) -> String {
        if self.mantissa == 0 {
            return "0".to_owned();
        }
        let sign = if self.negative { "-" } else { "" };
        let mut format = self.format;
        if format == QuantityFormat::BinarySi {
            let small = compare_magnitude(self.mantissa, self.exponent, 1024, 0) == Ordering::Less;
            if small || self.exponent < 0 {
                format = QuantityFormat::DecimalSi;
            } else if let Some(mut whole) = 10u128
                .checked_pow(self.exponent.unsigned_abs())
                .and_then(|p| p.checked_mul(self.mantissa))
            {
                let mut times = 0;
                while whole >= 1024 && whole % 1024 == 0 {
                    whole /= 1024;
                    times += 1;
                }
                let suffix = match times {
                    0 => "",
                    1 => "Ki",
                    2 => "Mi",
                    3 => "Gi",
                    4 => "Ti",
                    5 => "Pi",
                    6 => "Ei",
                    // Go finds no suffix past Ei and writes the bare number.
                    _ => "",
                };
                return format!("{sign}{whole}{suffix}");
            } else {
                format = QuantityFormat::DecimalSi;
            }
        }

        // Decimal: make the exponent a multiple of three, rounding it down.
        let mut mantissa = self.mantissa;
        let mut exponent = self.exponent;
        while exponent.rem_euclid(3) != 0 {
            match mantissa.checked_mul(10) {
                Some(m) => mantissa = m,
                None => return format!("{sign}{}e{}", self.mantissa, self.exponent),
            }
            exponent -= 1;
        }
        let suffix = match format {
            QuantityFormat::DecimalExponent => {
                if exponent == 0 {
                    String::new()
                } else {
                    format!("e{exponent}")
                }
            }
            _ => match exponent {
                -9 => "n".to_owned(),
                -6 => "u".to_owned(),
                -3 => "m".to_owned(),
                0 => String::new(),
                3 => "k".to_owned(),
                6 => "M".to_owned(),
                9 => "G".to_owned(),
                12 => "T".to_owned(),
                15 => "P".to_owned(),
                18 => "E".to_owned(),
                // Go has no suffix for these and drops it, as here.
                _ => String::new(),
            },
        };
        format!("{sign}{mantissa}{suffix}")
    }
}

impl fmt::Display for Quantity {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.to_canonical())
    }
}

/// The canonical form of a quantity string, or `None` when it does not parse.
pub fn canonical(text: &str) -> Option<String> {
    Quantity::parse(text).ok().map(|q| q.to_canonical())
}

/// The text Go writes back for a quantity it read from `text` (`resource.Quantity`'s
/// `UnmarshalJSON`, then `MarshalJSON`): the trimmed text as it came when Go's fast parser
/// judged it canonical already, else the canonical form. The fast parser keeps a decimal
/// whose scale is a multiple of three, whose digits (leading zeros of the whole part
/// dropped) neither start with `0` nor end with `000`, and that fits 18 digits (`+1`, `01`,
/// `1.500`, `1E3`, `100m` are kept); and a binary one of whole units not divisible by 8
/// (`1Gi`, `1025Mi`; `1024Mi` becomes `1Gi`).
pub fn go_written(text: &str) -> Result<String, QuantityError> {
    let raw = text.trim();
    let quantity = Quantity::parse(raw)?;
    if raw == "0" || kept_by_go(raw).unwrap_or(false) {
        return Ok(raw.to_owned());
    }
    Ok(quantity.to_canonical())
}

/// Whether Go's fast path keeps `raw` (which parses) as it is; `None` when the fast path does
/// not take it.
fn kept_by_go(raw: &str) -> Option<bool> {
    let parts = split_quantity(raw)?;
    let (_, power, format) = interpret_suffix(parts.suffix)?;
    // Go drops the whole part's leading zeros, and reads an empty whole part as `0`.
    let whole = parts.whole.trim_start_matches('0');
    let whole = if whole.is_empty() { "0" } else { whole };
    let digits = whole.len() + parts.fraction.len();
    let fraction = i32::try_from(parts.fraction.len()).ok()?;
    let (precision, scale, multiplier) = match format {
        QuantityFormat::DecimalExponent | QuantityFormat::DecimalSi => {
            (18 - i64::try_from(digits).ok()?, power, 1i64)
        }
        QuantityFormat::BinarySi if power >= 0 && parts.fraction.is_empty() => {
            // Go's estimate of the digits a binary suffix adds: exponent * 3 / 10, truncated.
            let added = i64::from(power) * 3 / 10;
            (
                15 - i64::try_from(whole.len()).ok()? - added - 1,
                0,
                1i64.checked_shl(power.unsigned_abs())?,
            )
        }
        QuantityFormat::BinarySi => return None,
    };
    let scale = scale.checked_sub(fraction)?;
    if precision < 0 || scale < -9 {
        return None;
    }
    let shifted = format!("{whole}{}", parts.fraction);
    let value: i64 = shifted.parse().ok()?;
    value.checked_mul(multiplier)?;
    Some(match format {
        QuantityFormat::BinarySi => power % 10 == 0 && value & 0x07 != 0,
        _ => scale % 3 == 0 && !shifted.ends_with("000") && !shifted.starts_with('0'),
    })
}

/// Whether two quantity strings have the same value; unparsable strings compare by text.
pub fn equal_values(a: &str, b: &str) -> bool {
    match (Quantity::parse(a), Quantity::parse(b)) {
        (Ok(x), Ok(y)) => x == y,
        _ => a == b,
    }
}

fn compare_magnitude(m1: u128, e1: i32, m2: u128, e2: i32) -> Ordering {
    if m1 == 0 || m2 == 0 {
        return m1.cmp(&m2);
    }
    let digits1 = decimal_digits(m1) as i64 + i64::from(e1);
    let digits2 = decimal_digits(m2) as i64 + i64::from(e2);
    if digits1 != digits2 {
        return digits1.cmp(&digits2);
    }
    // Same order of magnitude: align the exponents (the gap is below 40 digits here).
    let (mut a, mut b) = (m1, m2);
    match e1.cmp(&e2) {
        Ordering::Greater => {
            for _ in 0..(e1 - e2) {
                a = match a.checked_mul(10) {
                    Some(v) => v,
                    None => return Ordering::Greater,
                };
            }
        }
        Ordering::Less => {
            for _ in 0..(e2 - e1) {
                b = match b.checked_mul(10) {
                    Some(v) => v,
                    None => return Ordering::Less,
                };
            }
        }
        Ordering::Equal => {}
    }
    a.cmp(&b)
}

fn decimal_digits(mut n: u128) -> u32 {
    let mut count = 1;
    while n >= 10 {
        n /= 10;
        count += 1;
    }
    count
}

struct QuantityParts<'a> {
    positive: bool,
    whole: &'a str,
    fraction: &'a str,
    suffix: &'a str,
}

/// Splits `[+-]digits[.digits]suffix` following Go's scanner, including its quirks
/// (`1.` and `.5` are accepted).
fn split_quantity(text: &str) -> Option<QuantityParts<'_>> {
    let bytes = text.as_bytes();
    let mut pos = 0;
    let mut positive = true;
    match bytes.first() {
        Some(b'-') => {
            positive = false;
            pos = 1;
        }
        Some(b'+') => pos = 1,
        _ => {}
    }
    let start = pos;
    while pos < bytes.len() && bytes[pos].is_ascii_digit() {
        pos += 1;
    }
    let whole = &text[start..pos];
    let mut fraction = "";
    if pos < bytes.len() && bytes[pos] == b'.' {
        pos += 1;
        let fraction_start = pos;
        while pos < bytes.len() && bytes[pos].is_ascii_digit() {
            pos += 1;
        }
        fraction = &text[fraction_start..pos];
    }
    let suffix_start = pos;
    while pos < bytes.len() && b"eEinumkKMGTP".contains(&bytes[pos]) {
        pos += 1;
    }
    if pos < bytes.len() && (bytes[pos] == b'-' || bytes[pos] == b'+') {
        pos += 1;
    }
    while pos < bytes.len() {
        if !bytes[pos].is_ascii_digit() {
            return None;
        }
        pos += 1;
    }
    Some(QuantityParts { positive, whole, fraction, suffix: &text[suffix_start..] })
}

fn interpret_suffix(suffix: &str) -> Option<(u32, i32, QuantityFormat)> {
    use QuantityFormat::{BinarySi, DecimalExponent, DecimalSi};
    let decimal = |power| Some((10, power, DecimalSi));
    let binary = |power| Some((2, power, BinarySi));
    match suffix {
        "" => decimal(0),
        "n" => decimal(-9),
        "u" => decimal(-6),
        "m" => decimal(-3),
        "k" => decimal(3),
        "M" => decimal(6),
        "G" => decimal(9),
        "T" => decimal(12),
        "P" => decimal(15),
        "E" => decimal(18),
        "Ki" => binary(10),
        "Mi" => binary(20),
        "Gi" => binary(30),
        "Ti" => binary(40),
        "Pi" => binary(50),
        "Ei" => binary(60),
        _ => {
            let rest = suffix.strip_prefix(['e', 'E'])?;
            let power: i64 = rest.parse().ok()?;
            Some((10, i32::try_from(power).ok()?, DecimalExponent))
        }
    }
}

/// The value of the quantity `text` in thousandths, as [`Quantity::milli_value`] gives it;
/// `None` when it does not parse or fit. The forms nodes report (`110`, `32`, `128Gi`,
/// `8053064Ki`) are read without the general parser.
pub fn milli_value_of(text: &str) -> Option<i128> {
    let (digits, shift) = match text.len().checked_sub(2).map(|at| text.split_at(at)) {
        Some((digits, "Ki")) => (digits, 10),
        Some((digits, "Mi")) => (digits, 20),
        Some((digits, "Gi")) => (digits, 30),
        Some((digits, "Ti")) => (digits, 40),
        _ => (text, 0),
    };
    if !digits.is_empty() && digits.len() <= 15 && digits.bytes().all(|b| b.is_ascii_digit()) {
        let n: i128 = digits.parse().ok()?;
        return Some((n << shift) * 1000);
    }
    Quantity::parse(text).ok()?.milli_value()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn canonical_forms_match_go() {
        let cases = [
            ("0", "0"),
            ("0m", "0"),
            ("-0", "0"),
            ("1", "1"),
            ("1000m", "1"),
            ("100m", "100m"),
            ("0.1", "100m"),
            ("1.5", "1500m"),
            ("2000", "2k"),
            ("1024", "1024"),
            ("1e3", "1e3"),
            ("1E3", "1e3"),
            ("1e0", "1"),
            ("1Gi", "1Gi"),
            ("1024Mi", "1Gi"),
            ("0.5Gi", "512Mi"),
            ("1.5Gi", "1536Mi"),
            ("512", "512"),
            ("100Ki", "100Ki"),
            ("1023Ki", "1023Ki"),
            ("0.5Ki", "512"),
            ("0.1Ki", "102400m"),
            ("10", "10"),
            ("2", "2"),
            ("4Gi", "4Gi"),
            ("-100m", "-100m"),
            ("0.1n", "1n"),
            ("1.", "1"),
            (".5", "500m"),
            ("+5", "5"),
            ("12e6", "12e6"),
            ("12M", "12M"),
            ("200Mi", "200Mi"),
        ];
        for (input, expected) in cases {
            assert_eq!(canonical(input).as_deref(), Some(expected), "canonical({input:?})");
        }
    }

    #[test]
    fn go_keeps_the_texts_its_fast_parser_finds_canonical() {
        let cases = [
            // Kept as written.
            ("+1", "+1"),
            ("01", "01"),
            ("1.500", "1.500"),
            ("1E3", "1E3"),
            ("100m", "100m"),
            ("1025Mi", "1025Mi"),
            ("1Gi", "1Gi"),
            ("-1", "-1"),
            (" 2 ", "2"),
            ("12e6", "12e6"),
            // Rewritten.
            ("1000m", "1"),
            ("1024Mi", "1Gi"),
            ("8Ki", "8Ki"),
            ("1.5", "1500m"),
            ("0.5", "500m"),
            ("1.5Gi", "1536Mi"),
            ("1.1Gi", "1181116006400m"),
            ("1000", "1k"),
            ("1e4", "10e3"),
            ("0.1n", "1n"),
            ("0Mi", "0"),
            ("000", "0"),
            // Go 1.36 has no suffix past E and drops the exponent: kube-apiserver 1.36.2
            // stores `1000E` as `1`.
            ("1000E", "1"),
        ];
        for (input, expected) in cases {
            assert_eq!(go_written(input).as_deref(), Ok(expected), "go_written({input:?})");
        }
        let message = |text: &str| go_written(text).map_err(|e| e.go_message());
        assert_eq!(message("1K"), Err("unable to parse quantity's suffix"));
        assert!(message("1x").is_err_and(|m| m.starts_with("quantities must match")));
        assert!(message("").is_err_and(|m| m.starts_with("quantities must match")));
    }

    proptest::proptest! {
        /// What Go writes back reads as the value that was read, and is kept when read again.
        #[test]
        fn written_back_keeps_the_value_and_is_stable(
            text in r"[+-]?[0-9]{0,20}(\.[0-9]{0,12})?(n|u|m|k|M|G|T|P|E|Ki|Mi|Gi|Ti|Pi|Ei|e[+-]?[0-9]{1,2}|E[0-9]{1,2})?"
        ) {
            if let Ok(written) = go_written(&text) {
                let read = Quantity::parse(&text).expect("read");
                proptest::prop_assume!(!read.go_drops_exponent());
                let again = Quantity::parse(&written).expect("what Go writes reads");
                proptest::prop_assert_eq!(read.cmp_value(&again), Ordering::Equal, "{} -> {}", text, written);
                proptest::prop_assert_eq!(go_written(&written), Ok(written.clone()));
            }
        }
    }

    #[test]
    fn rejects_malformed() {
        for bad in ["", "abc", "1x", "1Kb", "1..2", "1e", "1ki"] {
            assert!(Quantity::parse(bad).is_err(), "{bad:?} should not parse");
        }
    }

    #[test]
    fn adds() {
        let sum = |a: &str, b: &str| {
            let (a, b) = (Quantity::parse(a).expect("a"), Quantity::parse(b).expect("b"));
            a.checked_add(&b).expect("sum").to_canonical()
        };
        assert_eq!(sum("1", "500m"), "1500m");
        assert_eq!(sum("1Gi", "1Gi"), "2Gi");
        assert_eq!(sum("1", "-1"), "0");
    }

    #[test]
    fn compares_by_value() {
        assert!(equal_values("1Gi", "1073741824"));
        assert!(equal_values("1", "1000m"));
        assert!(!equal_values("1", "1001m"));
        let a = Quantity::parse("2Gi").expect("parse");
        let b = Quantity::parse("2G").expect("parse");
        assert_eq!(a.cmp_value(&b), Ordering::Greater);
    }

    #[test]
    fn milli_values_read_fast_agree_with_the_parser() {
        for text in ["110", "32", "0", "128Gi", "8053064Ki", "7Mi", "1Ti", "250m", "1.5", "4G"] {
            let slow = Quantity::parse(text).ok().and_then(|q| q.milli_value());
            assert_eq!(milli_value_of(text), slow, "{text}");
        }
        assert_eq!(milli_value_of("nonsense"), None);
    }
}
