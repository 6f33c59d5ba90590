//! Cron schedules with the semantics of robfig/cron v3's `ParseStandard`, the parser behind
//! Kubernetes' CronJob and OpenKruise's AdvancedCronJob.
//!
//! A [`Schedule`] is parsed once with [`Schedule::parse`] and then asked for activations with
//! [`Schedule::next_after`]. Nothing here reads the clock: the caller passes the instant to
//! start from and the time zone to use when the spec carries no `TZ=` prefix.
//!
//! Accepted specs:
//! - five whitespace-separated fields: minute (0-59), hour (0-23), day of month (1-31),
//!   month (1-12 or `JAN`-`DEC`) and day of week (0-6 or `SUN`-`SAT`; 7 is rejected). Each
//!   field is a comma list of `*`, `?`, `a`, `a-b`, `*/n`, `a/n` (from `a` to the maximum in
//!   steps of `n`) and `a-b/n`; names are case-insensitive;
//! - the descriptors `@yearly`, `@annually`, `@monthly`, `@weekly`, `@daily`, `@midnight`,
//!   `@hourly` and `@every <duration>` (Go duration syntax such as `1h30m` or `90s`; below one
//!   second becomes one second, fractions of a second are dropped);
//! - an optional leading `TZ=<zone> ` or `CRON_TZ=<zone> ` naming an IANA time zone.
//!
//! Days follow cron's (and robfig's) rule: when the day-of-month or the day-of-week field
//! starts with `*` or `?` (and has no step above one) both must match; when both are
//! restricted, a day matching either one matches.
//!
//! Parse errors carry robfig's wording, because Kubernetes shows them verbatim
//! (`spec.schedule: Invalid value: "61 * * * *": end of range (61) above maximum (59): 61`).
//!
//! Activations are the instants whose wall-clock time in the schedule's zone matches the
//! fields (with second zero). Local times skipped by a daylight-saving jump therefore never
//! fire, and local times repeated when clocks go back fire once per occurrence, as robfig's
//! instant-by-instant search does.
//!
//! The search is a bit-set walk over wall-clock fields (month, day, hour, minute: a few shifts
//! and `trailing_zeros` per step) inside each span of constant UTC offset, moving to the next
//! span at each transition of the zone: about 0.1 µs for a common schedule, where the
//! `cronexpr` crate (which walks zoned time minute by minute and hour by hour) takes 2 to
//! 11 µs. `cronexpr` stays as the tests' oracle: a proptest checks that both give the same
//! activation for random schedules, zones and instants.

use std::fmt;

use jiff::Timestamp;
use jiff::civil::{Date, DateTime};
use jiff::tz::TimeZone;

/// How many years past the starting instant [`Schedule::next_after`] searches before it gives
/// up (`cronexpr`'s bound too; robfig's is five, which finds nothing more: every possible date
/// recurs within four years).
pub const SEARCH_YEARS: i16 = 4;

/// [`Schedule::most_recent_between`] stops counting missed activations at this many, so a
/// count of 101 means "more than 100" (the threshold at which Kubernetes reports too many
/// missed start times).
pub const MISSED_COUNT_LIMIT: usize = 101;

const NANOS_PER_SECOND: i128 = 1_000_000_000;

/// Why a cron spec was rejected. `Display` gives robfig/cron v3's message.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum CronError {
    /// The spec was the empty string.
    #[error("empty spec string")]
    EmptySpec,
    /// The `TZ=`/`CRON_TZ=` prefix named a zone that could not be loaded.
    #[error("provided bad location {zone}: {reason}")]
    BadLocation {
        /// The zone name as written.
        zone: String,
        /// Go's `time.LoadLocation` error text.
        reason: String,
    },
    /// A spec starting with `@` that is not a known descriptor.
    #[error("unrecognized descriptor: {0}")]
    UnrecognizedDescriptor(String),
    /// `@every` followed by something that is not a Go duration.
    #[error("failed to parse duration {descriptor}: {reason}")]
    BadDuration {
        /// The whole descriptor, `@every ...`.
        descriptor: String,
        /// Go's `time.ParseDuration` error text.
        reason: String,
    },
    /// The spec did not have exactly five fields.
    #[error("expected exactly 5 fields, found {}: [{}]", .0.len(), .0.join(" "))]
    FieldCount(Vec<String>),
    /// A range with more than one `-`.
    #[error("too many hyphens: {0}")]
    TooManyHyphens(String),
    /// A range with more than one `/`.
    #[error("too many slashes: {0}")]
    TooManySlashes(String),
    /// A bound or step that is neither a number nor a known name.
    #[error("failed to parse int from {text}: {reason}")]
    NotANumber {
        /// The text that failed to parse.
        text: String,
        /// Go's `strconv.Atoi` error text.
        reason: String,
    },
    /// A negative bound or step (only a step can be written with a sign, e.g. `*/-1`).
    #[error("negative number ({value}) not allowed: {text}")]
    NegativeNumber {
        /// The parsed value.
        value: i64,
        /// The text it came from.
        text: String,
    },
    /// The range starts below the field's minimum.
    #[error("beginning of range ({start}) below minimum ({min}): {expr}")]
    BelowMinimum {
        /// The range's start.
        start: u64,
        /// The field's minimum.
        min: u64,
        /// The range expression.
        expr: String,
    },
    /// The range ends above the field's maximum.
    #[error("end of range ({end}) above maximum ({max}): {expr}")]
    AboveMaximum {
        /// The range's end.
        end: u64,
        /// The field's maximum.
        max: u64,
        /// The range expression.
        expr: String,
    },
    /// The range starts after it ends.
    #[error("beginning of range ({start}) beyond end of range ({end}): {expr}")]
    StartAfterEnd {
        /// The range's start.
        start: u64,
        /// The range's end.
        end: u64,
        /// The range expression.
        expr: String,
    },
    /// A step of zero.
    #[error("step of range should be a positive number: {0}")]
    ZeroStep(String),
}

/// A parsed cron schedule.
#[derive(Debug, Clone)]
pub struct Schedule {
    /// The spec as given to [`Schedule::parse`].
    spec: String,
    /// Whether the spec started with `TZ=` or `CRON_TZ=`.
    has_time_zone_prefix: bool,
    /// The zone from the prefix; `None` without a prefix or for `TZ=Local`, meaning the
    /// caller's default zone.
    zone: Option<TimeZone>,
    kind: ScheduleKind,
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum ScheduleKind {
    /// Fields (or a descriptor expanding to fields).
    Fields(FieldSet),
    /// `@every`: a whole number of seconds, at least one.
    Every { seconds: i64 },
}

/// Bit sets of allowed values: bit `n` set means value `n` matches.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct FieldSet {
    minutes: u64,
    hours: u64,
    days_of_month: u64,
    months: u64,
    days_of_week: u64,
    /// The day-of-month field contained an unstepped `*` or `?`.
    day_of_month_is_star: bool,
    /// The day-of-week field contained an unstepped `*` or `?`.
    day_of_week_is_star: bool,
}

/// A field's bounds and optional names.
struct FieldBounds {
    min: u64,
    max: u64,
    names: &'static [(&'static str, u64)],
}

const MINUTE_BOUNDS: FieldBounds = FieldBounds { min: 0, max: 59, names: &[] };
const HOUR_BOUNDS: FieldBounds = FieldBounds { min: 0, max: 23, names: &[] };
const DAY_OF_MONTH_BOUNDS: FieldBounds = FieldBounds { min: 1, max: 31, names: &[] };
const MONTH_BOUNDS: FieldBounds = FieldBounds {
    min: 1,
    max: 12,
    names: &[
        ("jan", 1),
        ("feb", 2),
        ("mar", 3),
        ("apr", 4),
        ("may", 5),
        ("jun", 6),
        ("jul", 7),
        ("aug", 8),
        ("sep", 9),
        ("oct", 10),
        ("nov", 11),
        ("dec", 12),
    ],
};
const DAY_OF_WEEK_BOUNDS: FieldBounds = FieldBounds {
    min: 0,
    max: 6,
    names: &[("sun", 0), ("mon", 1), ("tue", 2), ("wed", 3), ("thu", 4), ("fri", 5), ("sat", 6)],
};

/// A parsed field: its bits and whether it contained an unstepped star.
struct ParsedField {
    bits: u64,
    is_star: bool,
}

/// Activations that were due in a window, from [`Schedule::most_recent_between`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MissedActivations {
    /// The latest activation in the window, if any.
    pub most_recent: Option<Timestamp>,
    /// How many activations fell in the window, counting stops at [`MISSED_COUNT_LIMIT`].
    pub count: usize,
}

impl Schedule {
    /// Parses a cron spec the way robfig/cron v3's `ParseStandard` does.
    ///
    /// # Errors
    /// A [`CronError`] whose message is robfig's for the same spec.
    pub fn parse(spec: &str) -> Result<Schedule, CronError> {
        if spec.is_empty() {
            return Err(CronError::EmptySpec);
        }
        let mut rest = spec;
        let mut has_time_zone_prefix = false;
        let mut zone = None;
        if spec.starts_with("TZ=") || spec.starts_with("CRON_TZ=") {
            has_time_zone_prefix = true;
            // The name runs from the first `=` to the first space. robfig panics when there
            // is no space; here the name is the rest of the spec and no fields remain.
            let name_start = spec.find('=').map_or(0, |eq| eq + 1);
            let name_end = spec.find(' ').unwrap_or(spec.len());
            let name = spec.get(name_start..name_end).unwrap_or_default();
            zone = load_location(name)?;
            rest = spec.get(name_end..).unwrap_or_default().trim();
        }
        let kind = if rest.starts_with('@') {
            parse_descriptor(rest)?
        } else {
            ScheduleKind::Fields(parse_fields(rest)?)
        };
        Ok(Schedule { spec: spec.to_owned(), has_time_zone_prefix, zone, kind })
    }

    /// Whether the spec started with `TZ=` or `CRON_TZ=` (Kubernetes CronJob validation
    /// rejects those in `spec.schedule` in favour of `spec.timeZone`).
    pub fn has_time_zone_prefix(&self) -> bool {
        self.has_time_zone_prefix
    }

    /// The zone named by the `TZ=`/`CRON_TZ=` prefix; `None` without a prefix or for
    /// `TZ=Local`, in which case activations are computed in the caller's zone.
    pub fn time_zone(&self) -> Option<&TimeZone> {
        self.zone.as_ref()
    }

    /// For `@every`, the interval between activations (whole seconds, at least one).
    pub fn every(&self) -> Option<jiff::SignedDuration> {
        match self.kind {
            ScheduleKind::Every { seconds } => Some(jiff::SignedDuration::from_secs(seconds)),
            ScheduleKind::Fields(_) => None,
        }
    }

    /// The spec as it was parsed.
    pub fn spec(&self) -> &str {
        &self.spec
    }

    /// The first activation strictly after `after`, in the schedule's own zone if it had a
    /// `TZ=` prefix, else in `default_zone`. `@every d` gives `after` truncated to the second
    /// plus `d`. `None` when nothing matches before the end of the fifth year after `after`
    /// (e.g. `0 0 30 2 *`), like robfig's zero time.
    pub fn next_after(&self, after: Timestamp, default_zone: &TimeZone) -> Option<Timestamp> {
        match &self.kind {
            ScheduleKind::Every { seconds } => {
                let nanos = after.as_nanosecond();
                let whole_seconds = nanos - nanos.rem_euclid(NANOS_PER_SECOND);
                let next = whole_seconds.checked_add(i128::from(*seconds) * NANOS_PER_SECOND)?;
                Timestamp::from_nanosecond(next).ok()
            }
            ScheduleKind::Fields(fields) => {
                fields.next_after(after, self.zone.as_ref().unwrap_or(default_zone))
            }
        }
    }

    /// The activations in `(earliest, now]`: the latest one and how many there were, counting
    /// up to [`MISSED_COUNT_LIMIT`]. Past the limit, the latest one is still exact.
    pub fn most_recent_between(
        &self,
        earliest: Timestamp,
        now: Timestamp,
        default_zone: &TimeZone,
    ) -> MissedActivations {
        if let ScheduleKind::Every { seconds } = self.kind {
            return every_between(earliest, now, seconds);
        }
        let mut found = MissedActivations { most_recent: None, count: 0 };
        let mut cursor = earliest;
        while found.count < MISSED_COUNT_LIMIT {
            match self.next_after(cursor, default_zone) {
                Some(next) if next <= now => {
                    found.count += 1;
                    found.most_recent = Some(next);
                    cursor = next;
                }
                _ => return found,
            }
        }
        // Too many to walk: `next_after(s) <= now` is monotone in `s`, so bisect (in whole
        // seconds) for the last start whose next activation is still due.
        let due = |second: i64| {
            Timestamp::from_second(second)
                .ok()
                .and_then(|start| self.next_after(start, default_zone))
                .filter(|next| *next <= now)
        };
        let mut low = cursor.as_second();
        let mut high = now.as_second();
        if due(low).is_none() {
            return found;
        }
        // Invariant: due(low) is Some, due(high) is None (next_after(now) > now).
        while high - low > 1 {
            let middle = low + (high - low) / 2;
            if due(middle).is_some() {
                low = middle;
            } else {
                high = middle;
            }
        }
        found.most_recent = due(low).or(found.most_recent);
        found
    }

    /// Whether the wall-clock time `local` (seconds ignored) matches the fields. Always false
    /// for `@every`.
    pub fn matches_local(&self, local: DateTime) -> bool {
        match &self.kind {
            ScheduleKind::Fields(fields) => {
                fields.day_matches(local.date())
                    && bit(fields.hours, local.hour())
                    && bit(fields.minutes, local.minute())
            }
            ScheduleKind::Every { .. } => false,
        }
    }
}

impl fmt::Display for Schedule {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        formatter.write_str(&self.spec)
    }
}

impl std::str::FromStr for Schedule {
    type Err = CronError;

    fn from_str(spec: &str) -> Result<Schedule, CronError> {
        Schedule::parse(spec)
    }
}

impl PartialEq for Schedule {
    fn eq(&self, other: &Schedule) -> bool {
        self.spec == other.spec
    }
}

impl Eq for Schedule {}

/// `@every`: activations at `floor(earliest) + k * seconds` for k >= 1, as robfig's
/// `ConstantDelaySchedule` chained from `earliest` gives.
fn every_between(earliest: Timestamp, now: Timestamp, seconds: i64) -> MissedActivations {
    let start_nanos = {
        let nanos = earliest.as_nanosecond();
        nanos - nanos.rem_euclid(NANOS_PER_SECOND)
    };
    let step = i128::from(seconds) * NANOS_PER_SECOND;
    let elapsed = now.as_nanosecond() - start_nanos;
    if step <= 0 || elapsed < step {
        return MissedActivations { most_recent: None, count: 0 };
    }
    let steps = elapsed / step;
    MissedActivations {
        most_recent: Timestamp::from_nanosecond(start_nanos + steps * step).ok(),
        count: usize::try_from(steps).map_or(MISSED_COUNT_LIMIT, |n| n.min(MISSED_COUNT_LIMIT)),
    }
}

fn bit(bits: u64, value: i8) -> bool {
    u32::try_from(value).is_ok_and(|shift| shift < 64 && bits & (1 << shift) != 0)
}

/// The smallest value at or above `from` whose bit is set.
fn next_bit(bits: u64, from: i8) -> Option<i8> {
    let shift = u32::try_from(from).ok().filter(|shift| *shift < 64)?;
    let above = bits >> shift;
    // trailing_zeros of a non-zero u64 is below 64, so the sum fits an i8.
    (above != 0).then(|| from + above.trailing_zeros() as i8)
}

/// A wall-clock minute of the search; see [`FieldSet::next_local`]. Ordered as time is (the
/// fields are in that order).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
struct Wall {
    year: i16,
    month: i8,
    day: i8,
    hour: i8,
    minute: i8,
}

impl Wall {
    /// This minute as a date and time (`None` for a minute of 60, which no match has).
    fn at(self) -> Option<DateTime> {
        DateTime::new(self.year, self.month, self.day, self.hour, self.minute, 0, 0).ok()
    }
}

impl FieldSet {
    fn day_matches(&self, date: Date) -> bool {
        if !bit(self.months, date.month()) {
            return false;
        }
        let day_of_month = bit(self.days_of_month, date.day());
        let day_of_week = bit(self.days_of_week, date.weekday().to_sunday_zero_offset());
        if self.day_of_month_is_star || self.day_of_week_is_star {
            day_of_month && day_of_week
        } else {
            day_of_month || day_of_week
        }
    }

    /// The earliest instant strictly after `after` whose wall-clock time in `zone` matches.
    ///
    /// Within a span of constant UTC offset, wall-clock time grows with the instant, so the
    /// first matching wall-clock time of the span (from [`FieldSet::next_local`]) is the
    /// first matching instant, unless it lies past the span's end; then the search starts
    /// again at that transition, with the offset that follows it. Times a jump forward skips
    /// are thus never found, and times a jump back repeats are found once per occurrence.
    fn next_after(&self, after: Timestamp, zone: &TimeZone) -> Option<Timestamp> {
        let last_year = zone.to_datetime(after).year().saturating_add(SEARCH_YEARS);
        let (mut from, mut inclusive) = (after, false);
        // The last search: where it started and what it found. No wall-clock time in
        // between matches, so a later search starting in that range finds the same.
        let mut known: Option<(Wall, Wall)> = None;
        loop {
            let offset = zone.to_offset(from);
            let local = offset.to_datetime(from);
            let on_minute = local.second() == 0 && local.subsec_nanosecond() == 0;
            // The first whole minute at or after (inclusive) or strictly after `from`; a
            // minute of 60 is carried by the walk.
            let minute = if inclusive && on_minute { local.minute() } else { local.minute() + 1 };
            let start = Wall {
                year: local.year(),
                month: local.month(),
                day: local.day(),
                hour: local.hour(),
                minute,
            };
            let begin = match known {
                Some((searched, found)) if searched <= start && start <= found => found,
                _ => start,
            };
            let found = self.next_local(begin, last_year)?;
            let instant = offset.to_timestamp(found.at()?).ok()?;
            match zone.following(from).next() {
                Some(transition) if instant >= transition.timestamp() => {
                    (from, inclusive) = (transition.timestamp(), true);
                    known = Some((begin, found));
                }
                _ => return Some(instant),
            }
        }
    }

    /// The first wall-clock minute at or after `start` that matches, up to the end of
    /// `last_year`. `start.minute` may be 60 (the next hour).
    fn next_local(&self, start: Wall, last_year: i16) -> Option<Wall> {
        let Wall { mut year, mut month, mut day, mut hour, mut minute } = start;
        'month: while year <= last_year {
            match next_bit(self.months, month) {
                Some(found) if found == month => {}
                Some(found) => (month, day, hour, minute) = (found, 1, 0, 0),
                None => {
                    (year, month, day, hour, minute) = (year.checked_add(1)?, 1, 1, 0, 0);
                    continue;
                }
            }
            let days = self.days_in(Date::new(year, month, 1).ok()?);
            loop {
                let Some(found) = next_bit(days, day) else {
                    (month, day, hour, minute) = (month + 1, 1, 0, 0);
                    if month > 12 {
                        (year, month) = (year.checked_add(1)?, 1);
                    }
                    continue 'month;
                };
                if found != day {
                    (day, hour, minute) = (found, 0, 0);
                }
                if let Some(found) = next_bit(self.hours, hour) {
                    if found != hour {
                        (hour, minute) = (found, 0);
                    }
                    if let Some(found) = next_bit(self.minutes, minute) {
                        return Some(Wall { year, month, day, hour, minute: found });
                    }
                    // No minute left in this hour: the next matching hour, from its first
                    // minute.
                    if let Some(next_hour) = next_bit(self.hours, hour + 1) {
                        let first_minute = next_bit(self.minutes, 0)?;
                        return Some(Wall {
                            year,
                            month,
                            day,
                            hour: next_hour,
                            minute: first_minute,
                        });
                    }
                }
                (day, hour, minute) = (day + 1, 0, 0);
            }
        }
        None
    }

    /// The days of the month starting on `first` that match (bit `d` for day `d`), by
    /// [`FieldSet::day_matches`]'s rule.
    fn days_in(&self, first: Date) -> u64 {
        let in_month = ((1u64 << (first.days_in_month() + 1)) - 1) & !1;
        let first_weekday = first.weekday().to_sunday_zero_offset();
        // Bit k: whether the weekday of day k + 1 matches.
        let week = self.days_of_week & 0x7f;
        let rotated = ((week >> first_weekday) | (week << (7 - first_weekday))) & 0x7f;
        let by_weekday = (0..5).fold(0u64, |all, i| all | rotated << (7 * i)) << 1;
        let by_day = self.days_of_month & in_month;
        let by_weekday = by_weekday & in_month;
        if self.day_of_month_is_star || self.day_of_week_is_star {
            by_day & by_weekday
        } else {
            by_day | by_weekday
        }
    }

    /// This set as a `cronexpr` crontab in `zone` (the tests' oracle): explicit value lists, and `*` for a day
    /// field only where robfig's star bit is set (a star always covers the whole field), so
    /// that `cronexpr`'s rule for combining the day fields is robfig's. `None` for a zone that
    /// has neither an IANA name nor a fixed offset to write into the expression.
    #[cfg(test)]
    fn compile(&self, zone: &TimeZone) -> Option<cronexpr::Crontab> {
        let zone_text = match zone.iana_name() {
            Some(name) => name.to_owned(),
            None => zone.to_fixed_offset().ok()?.to_string(),
        };
        let list = |bits: u64, star: bool| {
            if star {
                return "*".to_owned();
            }
            let values: Vec<String> = (0..64u32)
                .filter(|value| bits & (1 << value) != 0)
                .map(|value| value.to_string())
                .collect();
            values.join(",")
        };
        let expression = format!(
            "{} {} {} {} {} {zone_text}",
            list(self.minutes, false),
            list(self.hours, false),
            list(self.days_of_month, self.day_of_month_is_star),
            list(self.months, false),
            list(self.days_of_week, self.day_of_week_is_star),
        );
        cronexpr::parse_crontab(&expression).ok()
    }
}

/// Go's `time.LoadLocation`, minus the process's local zone: `""` and `UTC` are UTC, `Local`
/// means "the caller's zone" (`None`). Names are case-sensitive, as Go's are.
///
/// # Errors
/// [`CronError::BadLocation`], whose `reason` is Go's error text.
pub fn load_location(name: &str) -> Result<Option<TimeZone>, CronError> {
    let bad = |reason: String| CronError::BadLocation { zone: name.to_owned(), reason };
    match name {
        "" | "UTC" => return Ok(Some(TimeZone::UTC)),
        "Local" => return Ok(None),
        _ => {}
    }
    if name.contains("..") || name.starts_with('/') || name.starts_with('\\') {
        return Err(bad("time: invalid location name".to_owned()));
    }
    let unknown = || bad(format!("unknown time zone {name}"));
    let zone = TimeZone::get(name).map_err(|_| unknown())?;
    // jiff looks names up case-insensitively; Go reads a file, so the case must match.
    if let Some(canonical) = zone.iana_name()
        && canonical != name
        && canonical.eq_ignore_ascii_case(name)
    {
        return Err(unknown());
    }
    Ok(Some(zone))
}

fn parse_descriptor(descriptor: &str) -> Result<ScheduleKind, CronError> {
    let all_days = all_bits(&DAY_OF_MONTH_BOUNDS);
    let all_months = all_bits(&MONTH_BOUNDS);
    let all_weekdays = all_bits(&DAY_OF_WEEK_BOUNDS);
    let midnight = FieldSet {
        minutes: 1,
        hours: 1,
        days_of_month: all_days,
        months: all_months,
        days_of_week: all_weekdays,
        day_of_month_is_star: true,
        day_of_week_is_star: true,
    };
    let fields = match descriptor {
        "@yearly" | "@annually" => FieldSet {
            days_of_month: 1 << 1,
            months: 1 << 1,
            day_of_month_is_star: false,
            ..midnight
        },
        "@monthly" => FieldSet { days_of_month: 1 << 1, day_of_month_is_star: false, ..midnight },
        "@weekly" => FieldSet { days_of_week: 1, day_of_week_is_star: false, ..midnight },
        "@daily" | "@midnight" => midnight,
        "@hourly" => FieldSet { hours: all_bits(&HOUR_BOUNDS), ..midnight },
        _ => {
            let Some(duration) = descriptor.strip_prefix("@every ") else {
                return Err(CronError::UnrecognizedDescriptor(descriptor.to_owned()));
            };
            let nanos = parse_go_duration(duration).map_err(|reason| CronError::BadDuration {
                descriptor: descriptor.to_owned(),
                reason,
            })?;
            // Below a second becomes a second; sub-second parts are dropped.
            let seconds = (nanos / 1_000_000_000).max(1);
            return Ok(ScheduleKind::Every { seconds });
        }
    };
    Ok(ScheduleKind::Fields(fields))
}

fn all_bits(bounds: &FieldBounds) -> u64 {
    bits_in_range(bounds.min, bounds.max, 1)
}

fn bits_in_range(start: u64, end: u64, step: u64) -> u64 {
    let mut bits = 0;
    let mut value = start;
    while value <= end && value < 64 {
        bits |= 1 << value;
        value = match value.checked_add(step) {
            Some(next) => next,
            None => break,
        };
    }
    bits
}

fn parse_fields(spec: &str) -> Result<FieldSet, CronError> {
    let fields: Vec<&str> = spec.split_whitespace().collect();
    let [minute, hour, day_of_month, month, day_of_week] = fields[..] else {
        return Err(CronError::FieldCount(fields.iter().map(|f| (*f).to_owned()).collect()));
    };
    let minutes = parse_field(minute, &MINUTE_BOUNDS)?;
    let hours = parse_field(hour, &HOUR_BOUNDS)?;
    let days_of_month = parse_field(day_of_month, &DAY_OF_MONTH_BOUNDS)?;
    let months = parse_field(month, &MONTH_BOUNDS)?;
    let days_of_week = parse_field(day_of_week, &DAY_OF_WEEK_BOUNDS)?;
    Ok(FieldSet {
        minutes: minutes.bits,
        hours: hours.bits,
        days_of_month: days_of_month.bits,
        months: months.bits,
        days_of_week: days_of_week.bits,
        day_of_month_is_star: days_of_month.is_star,
        day_of_week_is_star: days_of_week.is_star,
    })
}

/// A comma list of ranges; empty items are ignored, as Go's `strings.FieldsFunc` does.
fn parse_field(field: &str, bounds: &FieldBounds) -> Result<ParsedField, CronError> {
    let mut parsed = ParsedField { bits: 0, is_star: false };
    for expr in field.split(',').filter(|expr| !expr.is_empty()) {
        let range = parse_range(expr, bounds)?;
        parsed.bits |= range.bits;
        parsed.is_star |= range.is_star;
    }
    Ok(parsed)
}

/// One range: `*`, `?`, `a`, `a-b`, each optionally followed by `/step`.
fn parse_range(expr: &str, bounds: &FieldBounds) -> Result<ParsedField, CronError> {
    let slash_parts: Vec<&str> = expr.split('/').collect();
    let range_part = slash_parts.first().copied().unwrap_or_default();
    let hyphen_parts: Vec<&str> = range_part.split('-').collect();
    let low_text = hyphen_parts.first().copied().unwrap_or_default();
    let (start, mut end, mut is_star) = if low_text == "*" || low_text == "?" {
        // As in robfig, anything after `*-` is ignored.
        (bounds.min, bounds.max, true)
    } else {
        let start = parse_int_or_name(low_text, bounds)?;
        let end = match hyphen_parts[..] {
            [_] => start,
            [_, high_text] => parse_int_or_name(high_text, bounds)?,
            _ => return Err(CronError::TooManyHyphens(expr.to_owned())),
        };
        (start, end, false)
    };
    let step = match slash_parts[..] {
        [_] => 1,
        [_, step_text] => {
            let step = parse_non_negative(step_text)?;
            // `a/n` means `a-max/n`.
            if hyphen_parts.len() == 1 {
                end = bounds.max;
            }
            if step > 1 {
                is_star = false;
            }
            step
        }
        _ => return Err(CronError::TooManySlashes(expr.to_owned())),
    };
    if start < bounds.min {
        return Err(CronError::BelowMinimum { start, min: bounds.min, expr: expr.to_owned() });
    }
    if end > bounds.max {
        return Err(CronError::AboveMaximum { end, max: bounds.max, expr: expr.to_owned() });
    }
    if start > end {
        return Err(CronError::StartAfterEnd { start, end, expr: expr.to_owned() });
    }
    if step == 0 {
        return Err(CronError::ZeroStep(expr.to_owned()));
    }
    Ok(ParsedField { bits: bits_in_range(start, end, step), is_star })
}

fn parse_int_or_name(text: &str, bounds: &FieldBounds) -> Result<u64, CronError> {
    let lower = text.to_lowercase();
    if let Some((_, value)) = bounds.names.iter().find(|(name, _)| *name == lower) {
        return Ok(*value);
    }
    parse_non_negative(text)
}

fn parse_non_negative(text: &str) -> Result<u64, CronError> {
    let value =
        go_atoi(text).map_err(|reason| CronError::NotANumber { text: text.to_owned(), reason })?;
    u64::try_from(value).map_err(|_| CronError::NegativeNumber { value, text: text.to_owned() })
}

/// Go's `strconv.Atoi` on a 64-bit platform, with its error text.
fn go_atoi(text: &str) -> Result<i64, String> {
    let syntax = || format!("strconv.Atoi: parsing {}: invalid syntax", go_strconv_quote(text));
    let range = || format!("strconv.Atoi: parsing {}: value out of range", go_strconv_quote(text));
    let (negative, digits) = match text.as_bytes().first() {
        Some(b'-') => (true, &text[1..]),
        Some(b'+') => (false, &text[1..]),
        _ => (false, text),
    };
    if digits.is_empty() {
        return Err(syntax());
    }
    let mut magnitude: u64 = 0;
    for byte in digits.bytes() {
        if !byte.is_ascii_digit() {
            return Err(syntax());
        }
        magnitude = magnitude
            .checked_mul(10)
            .and_then(|m| m.checked_add(u64::from(byte - b'0')))
            .ok_or_else(range)?;
    }
    if negative {
        0i64.checked_sub_unsigned(magnitude).ok_or_else(range)
    } else {
        i64::try_from(magnitude).map_err(|_| range())
    }
}

/// Go's `strconv.Quote`, with Rust's notion of control characters standing in for Go's
/// `unicode.IsPrint`.
fn go_strconv_quote(text: &str) -> String {
    let mut quoted = String::with_capacity(text.len() + 2);
    quoted.push('"');
    for c in text.chars() {
        match c {
            '"' => quoted.push_str("\\\""),
            '\\' => quoted.push_str("\\\\"),
            '\u{7}' => quoted.push_str("\\a"),
            '\u{8}' => quoted.push_str("\\b"),
            '\u{c}' => quoted.push_str("\\f"),
            '\n' => quoted.push_str("\\n"),
            '\r' => quoted.push_str("\\r"),
            '\t' => quoted.push_str("\\t"),
            '\u{b}' => quoted.push_str("\\v"),
            c if c < ' ' || c == '\u{7f}' => quoted.push_str(&format!("\\x{:02x}", u32::from(c))),
            c if c == ' ' || !(c.is_control() || c.is_whitespace()) => quoted.push(c),
            c if u32::from(c) < 0x1_0000 => quoted.push_str(&format!("\\u{:04x}", u32::from(c))),
            c => quoted.push_str(&format!("\\U{:08x}", u32::from(c))),
        }
    }
    quoted.push('"');
    quoted
}

/// The quoting of Go's `time` package errors: ASCII control and non-ASCII bytes as `\xHH`.
fn go_time_quote(text: &str) -> String {
    let mut quoted = String::with_capacity(text.len() + 2);
    quoted.push('"');
    for c in text.chars() {
        if c.is_ascii() && c >= ' ' {
            if c == '"' || c == '\\' {
                quoted.push('\\');
            }
            quoted.push(c);
        } else {
            let mut buffer = [0u8; 4];
            for byte in c.encode_utf8(&mut buffer).bytes() {
                quoted.push_str(&format!("\\x{byte:02x}"));
            }
        }
    }
    quoted.push('"');
    quoted
}

/// Go's `time.ParseDuration`, in nanoseconds, with its error text.
fn parse_go_duration(text: &str) -> Result<i64, String> {
    const LIMIT: u64 = 1 << 63;
    let invalid = || format!("time: invalid duration {}", go_time_quote(text));
    let (negative, mut rest) = match text.as_bytes().first() {
        Some(b'-') => (true, &text[1..]),
        Some(b'+') => (false, &text[1..]),
        _ => (false, text),
    };
    if rest == "0" {
        return Ok(0);
    }
    if rest.is_empty() {
        return Err(invalid());
    }
    let mut total: u64 = 0;
    while !rest.is_empty() {
        let first = rest.as_bytes()[0];
        if !(first == b'.' || first.is_ascii_digit()) {
            return Err(invalid());
        }
        // Integer part.
        let integer_len = rest.bytes().take_while(u8::is_ascii_digit).count();
        let mut value: u64 = 0;
        for byte in rest[..integer_len].bytes() {
            if value > LIMIT / 10 {
                return Err(invalid());
            }
            value = value * 10 + u64::from(byte - b'0');
            if value > LIMIT {
                return Err(invalid());
            }
        }
        rest = &rest[integer_len..];
        // Fraction part.
        let mut fraction: u64 = 0;
        let mut scale: f64 = 1.0;
        let mut fraction_len = 0;
        let mut has_point = false;
        if let Some(after_point) = rest.strip_prefix('.') {
            has_point = true;
            fraction_len = after_point.bytes().take_while(u8::is_ascii_digit).count();
            let mut overflow = false;
            for byte in after_point[..fraction_len].bytes() {
                if overflow {
                    continue;
                }
                if fraction > (LIMIT - 1) / 10 {
                    overflow = true;
                    continue;
                }
                let next = fraction * 10 + u64::from(byte - b'0');
                if next > LIMIT {
                    overflow = true;
                    continue;
                }
                fraction = next;
                scale *= 10.0;
            }
            rest = &after_point[fraction_len..];
        }
        if integer_len == 0 && (!has_point || fraction_len == 0) {
            return Err(invalid());
        }
        // Unit.
        let unit_len = rest.find(|c: char| c == '.' || c.is_ascii_digit()).unwrap_or(rest.len());
        if unit_len == 0 {
            return Err(format!("time: missing unit in duration {}", go_time_quote(text)));
        }
        let unit_text = &rest[..unit_len];
        rest = &rest[unit_len..];
        let unit: u64 = match unit_text {
            "ns" => 1,
            "us" | "\u{b5}s" | "\u{3bc}s" => 1_000,
            "ms" => 1_000_000,
            "s" => 1_000_000_000,
            "m" => 60_000_000_000,
            "h" => 3_600_000_000_000,
            _ => {
                return Err(format!(
                    "time: unknown unit {} in duration {}",
                    go_time_quote(unit_text),
                    go_time_quote(text)
                ));
            }
        };
        if value > LIMIT / unit {
            return Err(invalid());
        }
        value *= unit;
        if fraction > 0 {
            // Go computes the fraction in floating point too; the cast saturates.
            #[allow(
                clippy::cast_possible_truncation,
                clippy::cast_sign_loss,
                clippy::cast_precision_loss
            )]
            let fraction_nanos = (fraction as f64 * (unit as f64 / scale)) as u64;
            value = value.saturating_add(fraction_nanos);
            if value > LIMIT {
                return Err(invalid());
            }
        }
        total = total.saturating_add(value);
        if total > LIMIT {
            return Err(invalid());
        }
    }
    if negative {
        0i64.checked_sub_unsigned(total).ok_or_else(invalid)
    } else {
        i64::try_from(total).map_err(|_| invalid())
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;
    use proptest::prelude::*;

    fn ts(text: &str) -> Timestamp {
        text.parse().unwrap()
    }

    fn zone(name: &str) -> TimeZone {
        TimeZone::get(name).unwrap()
    }

    /// The first `count` activations after `after`, in UTC as the default zone.
    fn chain(spec: &str, after: &str, count: usize) -> Vec<String> {
        chain_in(spec, after, count, &TimeZone::UTC)
    }

    fn chain_in(spec: &str, after: &str, count: usize, default_zone: &TimeZone) -> Vec<String> {
        let schedule = Schedule::parse(spec).unwrap();
        let mut cursor = ts(after);
        let mut found = Vec::new();
        for _ in 0..count {
            cursor = schedule.next_after(cursor, default_zone).unwrap();
            found.push(cursor.to_string());
        }
        found
    }

    fn error(spec: &str) -> String {
        Schedule::parse(spec).unwrap_err().to_string()
    }

    #[test]
    fn every_minute() {
        assert_eq!(
            chain("* * * * *", "2024-01-01T00:00:30Z", 3),
            ["2024-01-01T00:01:00Z", "2024-01-01T00:02:00Z", "2024-01-01T00:03:00Z"]
        );
        // Strictly after: an activation instant itself is not returned.
        assert_eq!(chain("* * * * *", "2024-01-01T00:01:00Z", 1), ["2024-01-01T00:02:00Z"]);
        assert_eq!(chain("* * * * *", "2024-12-31T23:59:59.999Z", 1), ["2025-01-01T00:00:00Z"]);
    }

    #[test]
    fn every_quarter_hour() {
        assert_eq!(
            chain("*/15 * * * *", "2024-01-01T10:07:00Z", 4),
            [
                "2024-01-01T10:15:00Z",
                "2024-01-01T10:30:00Z",
                "2024-01-01T10:45:00Z",
                "2024-01-01T11:00:00Z"
            ]
        );
        assert_eq!(
            chain("5/20 * * * *", "2024-01-01T10:00:00Z", 4),
            [
                "2024-01-01T10:05:00Z",
                "2024-01-01T10:25:00Z",
                "2024-01-01T10:45:00Z",
                "2024-01-01T11:05:00Z"
            ]
        );
        assert_eq!(
            chain("10-20/5,59 * * * *", "2024-01-01T10:00:00Z", 4),
            [
                "2024-01-01T10:10:00Z",
                "2024-01-01T10:15:00Z",
                "2024-01-01T10:20:00Z",
                "2024-01-01T10:59:00Z"
            ]
        );
    }

    #[test]
    fn weekdays_at_nine() {
        // 2024-01-05 is a Friday.
        assert_eq!(
            chain("0 9 * * MON-FRI", "2024-01-05T09:00:00Z", 3),
            ["2024-01-08T09:00:00Z", "2024-01-09T09:00:00Z", "2024-01-10T09:00:00Z"]
        );
        assert_eq!(chain("0 9 * * mon-fri", "2024-01-05T08:59:59Z", 1), ["2024-01-05T09:00:00Z"]);
        assert_eq!(chain("0 0 * jan,Feb SuN", "2024-02-26T00:00:00Z", 1), ["2025-01-05T00:00:00Z"]);
    }

    #[test]
    fn descriptors() {
        assert_eq!(
            chain("@hourly", "2024-01-01T10:59:59.5Z", 2),
            ["2024-01-01T11:00:00Z", "2024-01-01T12:00:00Z"]
        );
        assert_eq!(chain("@daily", "2024-01-01T10:00:00Z", 1), ["2024-01-02T00:00:00Z"]);
        assert_eq!(chain("@midnight", "2024-01-01T10:00:00Z", 1), ["2024-01-02T00:00:00Z"]);
        // 2024-01-07 is a Sunday.
        assert_eq!(chain("@weekly", "2024-01-01T10:00:00Z", 1), ["2024-01-07T00:00:00Z"]);
        assert_eq!(chain("@monthly", "2024-01-01T10:00:00Z", 1), ["2024-02-01T00:00:00Z"]);
        assert_eq!(chain("@yearly", "2024-01-01T10:00:00Z", 1), ["2025-01-01T00:00:00Z"]);
        assert_eq!(chain("@annually", "2024-01-01T00:00:00Z", 1), ["2025-01-01T00:00:00Z"]);
    }

    #[test]
    fn every_duration() {
        assert_eq!(
            chain("@every 90s", "2024-01-01T10:00:00.7Z", 3),
            ["2024-01-01T10:01:30Z", "2024-01-01T10:03:00Z", "2024-01-01T10:04:30Z"]
        );
        let seconds = |spec: &str| Schedule::parse(spec).unwrap().every().unwrap().as_secs();
        assert_eq!(seconds("@every 1h30m"), 5400);
        assert_eq!(seconds("@every 500ms"), 1);
        assert_eq!(seconds("@every 1.9s"), 1);
        assert_eq!(seconds("@every -5s"), 1);
        assert_eq!(seconds("@every 0"), 1);
        assert_eq!(seconds("@every 1.5h"), 5400);
        assert_eq!(seconds("@every 2m0.5s"), 120);
        assert_eq!(seconds("TZ=UTC @every 1m"), 60);
        assert!(Schedule::parse("@hourly").unwrap().every().is_none());
    }

    #[test]
    fn day_31_skips_short_months() {
        assert_eq!(
            chain("0 0 31 * *", "2024-01-31T00:00:00Z", 4),
            [
                "2024-03-31T00:00:00Z",
                "2024-05-31T00:00:00Z",
                "2024-07-31T00:00:00Z",
                "2024-08-31T00:00:00Z"
            ]
        );
        assert_eq!(chain("0 0 29 2 *", "2024-03-01T00:00:00Z", 1), ["2028-02-29T00:00:00Z"]);
    }

    #[test]
    fn impossible_dates_give_up() {
        let schedule = Schedule::parse("0 0 30 2 *").unwrap();
        assert_eq!(schedule.next_after(ts("2024-01-01T00:00:00Z"), &TimeZone::UTC), None);
        let empty = Schedule::parse(", * * * *").unwrap();
        assert_eq!(empty.next_after(ts("2024-01-01T00:00:00Z"), &TimeZone::UTC), None);
    }

    #[test]
    fn day_of_month_or_day_of_week_when_both_restricted() {
        // 2024-01-29 and 2024-02-05 are Mondays, 2024-02-01 is a Thursday.
        assert_eq!(
            chain("0 0 1 * MON", "2024-01-25T00:00:00Z", 3),
            ["2024-01-29T00:00:00Z", "2024-02-01T00:00:00Z", "2024-02-05T00:00:00Z"]
        );
        // A stepped star is a restriction: days 1 or even weekdays (Sun, Tue, Thu, Sat).
        assert_eq!(
            chain("0 0 1 * */2", "2024-01-29T00:00:00Z", 3),
            ["2024-01-30T00:00:00Z", "2024-02-01T00:00:00Z", "2024-02-03T00:00:00Z"]
        );
        // With a star (or `?`, or `*/1`) on one side, both must match.
        assert_eq!(chain("0 0 1 * ?", "2024-01-25T00:00:00Z", 1), ["2024-02-01T00:00:00Z"]);
        assert_eq!(chain("0 0 * * MON", "2024-01-25T00:00:00Z", 1), ["2024-01-29T00:00:00Z"]);
        assert_eq!(chain("0 0 1 * */1", "2024-01-25T00:00:00Z", 1), ["2024-02-01T00:00:00Z"]);
        // A star anywhere in the list counts as a star, so `*,FRI` still means "both".
        assert_eq!(chain("0 0 1 * *,FRI", "2024-01-25T00:00:00Z", 1), ["2024-02-01T00:00:00Z"]);
    }

    #[test]
    fn berlin_daylight_saving() {
        let schedule = Schedule::parse("TZ=Europe/Berlin 30 2 * * *").unwrap();
        assert!(schedule.has_time_zone_prefix());
        // The default zone is ignored when the spec names one.
        let default_zone = zone("America/New_York");
        // 2024-03-31 02:30 does not exist in Berlin: skipped.
        assert_eq!(
            chain_in("TZ=Europe/Berlin 30 2 * * *", "2024-03-30T01:30:00Z", 2, &default_zone),
            ["2024-04-01T00:30:00Z", "2024-04-02T00:30:00Z"]
        );
        // 2024-10-27 02:30 happens twice (CEST, then CET): both fire, as in robfig.
        assert_eq!(
            chain_in("TZ=Europe/Berlin 30 2 * * *", "2024-10-26T00:30:00Z", 3, &default_zone),
            ["2024-10-27T00:30:00Z", "2024-10-27T01:30:00Z", "2024-10-28T01:30:00Z"]
        );
        // Hourly keeps firing every real hour through both transitions.
        assert_eq!(
            chain_in("CRON_TZ=Europe/Berlin 0 * * * *", "2024-03-31T00:00:00Z", 2, &default_zone),
            ["2024-03-31T01:00:00Z", "2024-03-31T02:00:00Z"]
        );
    }

    #[test]
    fn tokyo_midnight() {
        let schedule = Schedule::parse("CRON_TZ=Asia/Tokyo 0 0 * * *").unwrap();
        assert!(schedule.has_time_zone_prefix());
        assert_eq!(schedule.time_zone().and_then(TimeZone::iana_name), Some("Asia/Tokyo"));
        assert_eq!(
            chain_in(
                "CRON_TZ=Asia/Tokyo 0 0 * * *",
                "2024-01-01T00:00:00Z",
                2,
                &zone("Europe/Berlin")
            ),
            ["2024-01-01T15:00:00Z", "2024-01-02T15:00:00Z"]
        );
    }

    /// Lord Howe Island moves its clocks by half an hour: on 2014-04-06 at 02:00 (+11:00)
    /// they go back to 01:30 (+10:30), so 01:30 to 02:00 happens twice.
    #[test]
    fn lord_howe_half_hour_fold() {
        let lord_howe = zone("Australia/Lord_Howe");
        assert_eq!(
            chain_in("45 1 * * *", "2014-04-05T12:00:00Z", 3, &lord_howe),
            ["2014-04-05T14:45:00Z", "2014-04-05T15:15:00Z", "2014-04-06T15:15:00Z"]
        );
        // Sunday midnight, before and after the change (where cronexpr 1.7 never returns).
        assert_eq!(
            chain_in("@weekly", "2014-04-05T13:00:00Z", 2, &lord_howe),
            ["2014-04-12T13:30:00Z", "2014-04-19T13:30:00Z"]
        );
    }

    #[test]
    fn default_zone_applies_without_prefix() {
        let schedule = Schedule::parse("0 0 * * *").unwrap();
        assert!(!schedule.has_time_zone_prefix());
        assert!(schedule.time_zone().is_none());
        assert_eq!(
            chain_in("0 0 * * *", "2024-01-01T00:00:00Z", 1, &zone("America/New_York")),
            ["2024-01-01T05:00:00Z"]
        );
        // `TZ=Local` means the caller's zone; `TZ=` with no name is UTC, as in Go.
        let local = Schedule::parse("TZ=Local 0 0 * * *").unwrap();
        assert!(local.has_time_zone_prefix() && local.time_zone().is_none());
        assert_eq!(
            chain_in("TZ= 0 0 * * *", "2024-01-01T00:00:00Z", 1, &zone("America/New_York")),
            ["2024-01-02T00:00:00Z"]
        );
    }

    #[test]
    fn robfig_error_messages() {
        let cases = [
            ("", "empty spec string"),
            ("61 * * * *", "end of range (61) above maximum (59): 61"),
            ("5-3 * * * *", "beginning of range (5) beyond end of range (3): 5-3"),
            ("a b c d e f", "expected exactly 5 fields, found 6: [a b c d e f]"),
            ("* * * *", "expected exactly 5 fields, found 4: [* * * *]"),
            ("   ", "expected exactly 5 fields, found 0: []"),
            (
                "X * * * *",
                r#"failed to parse int from X: strconv.Atoi: parsing "X": invalid syntax"#,
            ),
            ("*/0 * * * *", "step of range should be a positive number: */0"),
            ("@foo", "unrecognized descriptor: @foo"),
            ("@Hourly", "unrecognized descriptor: @Hourly"),
            (
                "TZ=Mars/Base * * * * *",
                "provided bad location Mars/Base: unknown time zone Mars/Base",
            ),
            (
                "CRON_TZ=europe/berlin * * * * *",
                "provided bad location europe/berlin: unknown time zone europe/berlin",
            ),
            ("TZ=../etc * * * * *", "provided bad location ../etc: time: invalid location name"),
            ("TZ=UTC", "expected exactly 5 fields, found 0: []"),
            ("* * 0 * *", "beginning of range (0) below minimum (1): 0"),
            ("* * * 13 *", "end of range (13) above maximum (12): 13"),
            ("* * * * 7", "end of range (7) above maximum (6): 7"),
            ("* 24 * * *", "end of range (24) above maximum (23): 24"),
            ("70/5 * * * *", "beginning of range (70) beyond end of range (59): 70/5"),
            ("1-2-3 * * * *", "too many hyphens: 1-2-3"),
            ("*/2/3 * * * *", "too many slashes: */2/3"),
            ("*/-1 * * * *", "negative number (-1) not allowed: -1"),
            (
                "-5 * * * *",
                r#"failed to parse int from : strconv.Atoi: parsing "": invalid syntax"#,
            ),
            (
                "99999999999999999999 * * * *",
                "failed to parse int from 99999999999999999999: strconv.Atoi: parsing \
                 \"99999999999999999999\": value out of range",
            ),
            (
                "* * * * monday",
                r#"failed to parse int from monday: strconv.Atoi: parsing "monday": invalid syntax"#,
            ),
            (
                "@every 1x",
                r#"failed to parse duration @every 1x: time: unknown unit "x" in duration "1x""#,
            ),
            ("@every abc", r#"failed to parse duration @every abc: time: invalid duration "abc""#),
            (
                "@every 10",
                r#"failed to parse duration @every 10: time: missing unit in duration "10""#,
            ),
            ("@every", "unrecognized descriptor: @every"),
        ];
        for (spec, message) in cases {
            assert_eq!(error(spec), message, "spec {spec:?}");
        }
    }

    #[test]
    fn robfig_quirks_accepted() {
        // Go's Atoi takes a leading plus; robfig ignores whatever follows `*-`; empty list
        // items are skipped.
        for spec in ["+5 * * * *", "*/+2 * * * *", "*-3 * * * *", "1,,2 * * * *", "0 0 ? * ?"] {
            assert!(Schedule::parse(spec).is_ok(), "spec {spec:?}");
        }
        assert_eq!(chain("*-3 * * * *", "2024-01-01T00:00:30Z", 1), ["2024-01-01T00:01:00Z"]);
        let schedule: Schedule = "TZ=UTC  0 0 * * *".parse().unwrap();
        assert_eq!(schedule.to_string(), "TZ=UTC  0 0 * * *");
    }

    #[test]
    fn missed_activations() {
        let hourly = Schedule::parse("@hourly").unwrap();
        assert_eq!(
            hourly.most_recent_between(
                ts("2024-01-01T00:00:00Z"),
                ts("2024-01-01T05:30:00Z"),
                &TimeZone::UTC
            ),
            MissedActivations { most_recent: Some(ts("2024-01-01T05:00:00Z")), count: 5 }
        );
        assert_eq!(
            hourly.most_recent_between(
                ts("2024-01-01T00:00:00Z"),
                ts("2024-01-01T00:59:59Z"),
                &TimeZone::UTC
            ),
            MissedActivations { most_recent: None, count: 0 }
        );
        // More than the limit: counting stops, the latest is still exact.
        let every_minute = Schedule::parse("* * * * *").unwrap();
        assert_eq!(
            every_minute.most_recent_between(
                ts("2024-01-01T00:00:00Z"),
                ts("2024-01-08T12:34:56Z"),
                &TimeZone::UTC
            ),
            MissedActivations {
                most_recent: Some(ts("2024-01-08T12:34:00Z")),
                count: MISSED_COUNT_LIMIT
            }
        );
        let every = Schedule::parse("@every 90s").unwrap();
        assert_eq!(
            every.most_recent_between(
                ts("2024-01-01T00:00:00.5Z"),
                ts("2024-01-01T00:05:00Z"),
                &TimeZone::UTC
            ),
            MissedActivations { most_recent: Some(ts("2024-01-01T00:04:30Z")), count: 3 }
        );
        assert_eq!(
            every.most_recent_between(
                ts("2024-01-01T00:00:00Z"),
                ts("2024-02-01T00:00:00Z"),
                &TimeZone::UTC
            ),
            MissedActivations {
                // 31 days are exactly 29,760 intervals of 90 s; `now` itself is included.
                most_recent: Some(ts("2024-02-01T00:00:00Z")),
                count: MISSED_COUNT_LIMIT
            }
        );
    }

    fn field_strategy(min: u8, max: u8) -> impl Strategy<Value = String> {
        let item = prop_oneof![
            Just("*".to_owned()),
            Just("?".to_owned()),
            (min..=max).prop_map(|value| value.to_string()),
            (min..=max, min..=max).prop_map(|(a, b)| format!("{}-{}", a.min(b), a.max(b))),
            (1..=max).prop_map(|step| format!("*/{step}")),
            (min..=max, 1..=10u8).prop_map(|(start, step)| format!("{start}/{step}")),
            (min..=max, min..=max, 1..=10u8).prop_map(|(a, b, step)| format!(
                "{}-{}/{step}",
                a.min(b),
                a.max(b)
            )),
        ];
        prop::collection::vec(item, 1..=2).prop_map(|items| items.join(","))
    }

    fn spec_strategy() -> impl Strategy<Value = String> {
        let fields = (
            field_strategy(0, 59),
            field_strategy(0, 23),
            field_strategy(1, 31),
            field_strategy(1, 12),
            field_strategy(0, 6),
        )
            .prop_map(|(minute, hour, dom, month, dow)| {
                format!("{minute} {hour} {dom} {month} {dow}")
            });
        prop_oneof![
            8 => fields,
            1 => prop::sample::select(vec![
                "@hourly", "@daily", "@weekly", "@monthly", "@yearly",
            ])
            .prop_map(str::to_owned),
        ]
    }

    const ZONES: [&str; 8] = [
        "UTC",
        "Europe/Berlin",
        "America/New_York",
        "America/Sao_Paulo",
        "Australia/Lord_Howe",
        "Asia/Kolkata",
        "Pacific/Apia",
        "Asia/Tokyo",
    ];

    proptest! {
        #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

        #[test]
        fn next_after_is_increasing_matching_and_earliest(
            spec in spec_strategy(),
            zone_name in prop::sample::select(ZONES.to_vec()),
            start_second in 0i64..4_000_000_000,
            start_nanos in 0i32..1_000_000_000,
        ) {
            let schedule = Schedule::parse(&spec).unwrap();
            let zone = zone(zone_name);
            let mut after = Timestamp::new(start_second, start_nanos).unwrap();
            for _ in 0..4 {
                let Some(next) = schedule.next_after(after, &zone) else { break };
                prop_assert!(next > after);
                let local = zone.to_datetime(next);
                prop_assert!(schedule.matches_local(local), "{spec}: {local} does not match");
                prop_assert_eq!((local.second(), local.subsec_nanosecond()), (0, 0));
                // Idempotent, and every start in [after, next) leads to the same activation.
                prop_assert_eq!(schedule.next_after(after, &zone), Some(next));
                let just_before = next - jiff::SignedDuration::from_nanos(1);
                prop_assert_eq!(schedule.next_after(just_before, &zone), Some(next));
                // No earlier matching minute (checked by brute force over up to three days;
                // these zones have had whole-minute offsets since 1970).
                let after_minute = after.as_second().div_euclid(60) * 60;
                let mut minute = after_minute + 60;
                let limit = next.as_second().min(after_minute + 3 * 86_400);
                while minute < limit {
                    let candidate = zone.to_datetime(Timestamp::from_second(minute).unwrap());
                    prop_assert!(
                        !schedule.matches_local(candidate),
                        "{spec}: {candidate} matches before {local}"
                    );
                    minute += 60;
                }
                after = next;
            }
        }

        /// The search agrees with the `cronexpr` crate's, given the same fields and zone,
        /// on every activation of a chain. Not in Australia/Lord_Howe, whose half-hour fold
        /// sends `cronexpr` 1.7 into an endless loop (`@weekly` from 2014-04-05T13:00Z; see
        /// `lord_howe_half_hour_fold`).
        #[test]
        fn next_after_agrees_with_cronexpr(
            spec in spec_strategy(),
            zone_name in prop::sample::select(
                ZONES.iter().copied().filter(|z| *z != "Australia/Lord_Howe").collect::<Vec<_>>()
            ),
            start_second in 0i64..4_000_000_000,
            start_nanos in 0i32..1_000_000_000,
        ) {
            let schedule = Schedule::parse(&spec).unwrap();
            let ScheduleKind::Fields(fields) = &schedule.kind else { return Ok(()) };
            let zone = zone(zone_name);
            let oracle = fields.compile(&zone).expect("an IANA zone compiles");
            let mut after = Timestamp::new(start_second, start_nanos).unwrap();
            for _ in 0..6 {
                let ours = schedule.next_after(after, &zone);
                let theirs = oracle.find_next(cronexpr::MakeTimestamp(after)).ok().map(|z| z.timestamp());
                // cronexpr gives up at its own bound; compare only what it found.
                let Some(theirs) = theirs else { break };
                prop_assert_eq!(ours, Some(theirs), "{} in {} after {}", spec, zone_name, after);
                after = theirs;
            }
        }

        #[test]
        fn parse_never_panics(spec in ".{0,40}") {
            let _ = Schedule::parse(&spec);
        }

        #[test]
        fn parse_never_panics_on_cron_like_text(
            spec in "(C?R?O?N?_?TZ=[A-Za-z/_.]{0,12} )?[0-9*?/,\\-a-zA-Z@ +]{0,30}"
        ) {
            let _ = Schedule::parse(&spec);
        }

        #[test]
        fn go_durations_never_panic(text in "[-+]?[0-9.]{0,25}(ns|us|µs|ms|s|m|h|x)?[0-9.]{0,25}[a-z]{0,2}") {
            let _ = Schedule::parse(&format!("@every {text}"));
        }
    }
}
