//! How a UnitedDeployment's replicas are shared among its subsets: upstream's four
//! allocators as one pure function, [`allocate`].
//!
//! ```
//! use std::collections::BTreeMap;
//! use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;
//! use kruise_core::uniteddeployment::allocation::{
//!     AllocationSpec, ObservedSubset, ScheduleMode, SubsetSpec, allocate,
//! };
//!
//! // 6 replicas: `a` pinned to 1, `b` to half, `c` takes the rest.
//! let spec = AllocationSpec {
//!     replicas: Some(6),
//!     mode: ScheduleMode::Fixed,
//!     subsets: vec![
//!         SubsetSpec::new("a").replicas(IntOrString::Int(1)),
//!         SubsetSpec::new("b").replicas(IntOrString::String("50%".into())),
//!         SubsetSpec::new("c"),
//!     ],
//! };
//! let allocation = allocate(&spec, &BTreeMap::new()).unwrap();
//! assert_eq!(allocation.of("a"), 1);
//! assert_eq!(allocation.of("b"), 3);
//! assert_eq!(allocation.of("c"), 2);
//!
//! // Adaptive: `a` cannot schedule more than its 2 ready pods; the rest moves on.
//! let adaptive = AllocationSpec {
//!     replicas: Some(6),
//!     mode: ScheduleMode::Adaptive,
//!     subsets: vec![SubsetSpec::new("a"), SubsetSpec::new("b")],
//! };
//! let observed = BTreeMap::from([(
//!     "a".to_owned(),
//!     ObservedSubset { replicas: 6, ready_replicas: 2, unschedulable: true, ..Default::default() },
//! )]);
//! let allocation = allocate(&adaptive, &observed).unwrap();
//! assert_eq!((allocation.of("a"), allocation.of("b")), (2, 4));
//! ```
//!
//! Which allocator runs, as upstream picks it:
//! 1. **Adaptive with `reserveUnschedulablePods`** ([`ScheduleMode::AdaptiveWithReservation`]):
//!    subsets fill to their minimum, then to their maximum, in topology order; a subset marked
//!    unschedulable keeps its size, and the replicas its reserved (pending) pods hold are
//!    given again to the subsets after it. Those are temporary: the sum can exceed
//!    `replicas` until the reserved pods run.
//! 2. **Adaptive** ([`ScheduleMode::Adaptive`]): the same minimum-then-maximum fill, where an
//!    unschedulable subset is held to its ready pods and a schedulable one keeps its ready
//!    pods.
//! 3. **Minimum and maximum** (a subset sets `minReplicas` or `maxReplicas`): fill each
//!    subset to its minimum in topology order, then to its maximum; scaling down therefore
//!    takes from the last subsets first.
//! 4. **Even split**: subsets with `replicas` (a number, or a percentage of `replicas`
//!    rounded half up) get exactly that; the others share the rest evenly, the remainder
//!    going to those that already have the most replicas.
//!
//! The observed state ([`ObservedSubset`]) is what a subset's workload and pods show now; the
//! time-dependent part (how long pods have been pending, how long a subset stays marked) is
//! worked out before, by `adaptive` in this module's parent.

use std::collections::BTreeMap;

use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;
use kruise_api::apps::v1beta1::{UnitedDeploymentScheduleStrategyType, UnitedDeploymentSpec};

/// Which allocator runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ScheduleMode {
    /// `scheduleStrategy.type` unset or `Fixed`.
    Fixed,
    /// `Adaptive`.
    Adaptive,
    /// `Adaptive` with `adaptive.reserveUnschedulablePods`.
    AdaptiveWithReservation,
}

/// One subset as the spec describes it.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct SubsetSpec {
    /// Its name.
    pub name: String,
    /// `replicas`: a number or a percentage of the UnitedDeployment's.
    pub replicas: Option<IntOrString>,
    /// `minReplicas`.
    pub min_replicas: Option<IntOrString>,
    /// `maxReplicas`.
    pub max_replicas: Option<IntOrString>,
}

impl SubsetSpec {
    /// A subset named `name` with nothing set.
    pub fn new(name: &str) -> Self {
        Self { name: name.to_owned(), ..Self::default() }
    }

    /// With `replicas`.
    #[must_use]
    pub fn replicas(mut self, replicas: IntOrString) -> Self {
        self.replicas = Some(replicas);
        self
    }

    /// With `minReplicas`.
    #[must_use]
    pub fn min(mut self, min: IntOrString) -> Self {
        self.min_replicas = Some(min);
        self
    }

    /// With `maxReplicas`.
    #[must_use]
    pub fn max(mut self, max: IntOrString) -> Self {
        self.max_replicas = Some(max);
        self
    }
}

/// What [`allocate`] reads of the spec.
#[derive(Clone, Debug, PartialEq)]
pub struct AllocationSpec {
    /// `spec.replicas`.
    pub replicas: Option<i32>,
    /// `topology.subsets`, in order.
    pub subsets: Vec<SubsetSpec>,
    /// The allocator's mode.
    pub mode: ScheduleMode,
}

impl AllocationSpec {
    /// The allocation inputs of a UnitedDeployment's spec.
    pub fn of(spec: &UnitedDeploymentSpec) -> Self {
        let strategy = &spec.topology.schedule_strategy;
        let adaptive = strategy.type_ == Some(UnitedDeploymentScheduleStrategyType::Adaptive);
        let reserve = strategy.adaptive.as_ref().is_some_and(|a| a.reserve_unschedulable_pods);
        Self {
            replicas: spec.replicas,
            subsets: spec
                .topology
                .subsets
                .iter()
                .map(|s| SubsetSpec {
                    name: s.name.clone(),
                    replicas: s.replicas.clone(),
                    min_replicas: s.min_replicas.clone(),
                    max_replicas: s.max_replicas.clone(),
                })
                .collect(),
            mode: match (adaptive, reserve) {
                (true, true) => ScheduleMode::AdaptiveWithReservation,
                (true, false) => ScheduleMode::Adaptive,
                _ => ScheduleMode::Fixed,
            },
        }
    }
}

/// A subset's workload as it is now. A subset without a workload is observed as the default.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ObservedSubset {
    /// The workload's `spec.replicas` (the last allocation).
    pub replicas: i32,
    /// Its ready pods.
    pub ready_replicas: i32,
    /// Adaptive: it cannot take more pods now.
    pub unschedulable: bool,
    /// Reservation: it was marked unschedulable at the last reconcile.
    pub marked_unschedulable: bool,
    /// Reservation: its pods that hold a replica without running.
    pub reserved_pods: i32,
}

/// Each subset's replicas, in topology order.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Allocation {
    /// Name and replicas, in topology order.
    pub subsets: Vec<(String, i32)>,
}

impl Allocation {
    /// The replicas of subset `name` (0 for a name not in the topology).
    pub fn of(&self, name: &str) -> i32 {
        self.subsets.iter().find(|(n, _)| n == name).map_or(0, |(_, r)| *r)
    }

    /// The sum over the subsets.
    pub fn total(&self) -> i64 {
        self.subsets.iter().map(|(_, r)| i64::from(*r)).sum()
    }
}

/// A subset's `replicas`, `minReplicas` or `maxReplicas` that cannot be read; `Display`
/// gives upstream's message.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ReplicasError {
    /// A negative number.
    #[error("subset replicas ({0}) should not be less than 0")]
    Negative(i32),
    /// A percentage without `spec.replicas`.
    #[error("subsetReplicas ({0}) should not be string when unitedDeployment replicas is empty")]
    PercentWithoutReplicas(String),
    /// A string without `%`.
    #[error(
        "subset replicas ({0}) only support integer value or percentage value with a suffix '%'"
    )]
    NotPercent(String),
    /// A percentage that is not a whole number.
    #[error("subset replicas ({text}) should be correct percentage integer: {reason}")]
    BadPercent {
        /// The value as written.
        text: String,
        /// Go's `strconv.ParseInt` error.
        reason: String,
    },
    /// A percentage outside 0..=100.
    #[error("subset replicas ({0}) should be in range [0, 100]")]
    OutOfRange(String),
}

/// Why the replicas cannot be allocated; `Display` gives upstream's message.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum AllocationError {
    /// The subsets' own `replicas` add up to more than `spec.replicas`.
    #[error(
        "specified subsets' replica ({sum}) is greater than UnitedDeployment replica ({replicas})"
    )]
    MoreThanReplicas {
        /// The sum of the subsets' values.
        sum: i64,
        /// `spec.replicas`.
        replicas: i32,
    },
    /// Every subset sets `replicas`, and they add up to less than `spec.replicas`.
    #[error(
        "specified subsets' replica ({sum}) is less than UnitedDeployment replica ({replicas})"
    )]
    LessThanReplicas {
        /// The sum of the subsets' values.
        sum: i64,
        /// `spec.replicas`.
        replicas: i32,
    },
    /// `spec.replicas` is unset and some subset has no `replicas`.
    #[error("all subsets must be specified when UnitedDeployment replica is unspecified")]
    AllSubsetsRequired,
    /// A subset's minimum is above its maximum.
    #[error("subset[{index}].maxReplicas({max}) must be more than or equal to minReplicas({min})")]
    MinAboveMax {
        /// The subset's index in the topology.
        index: usize,
        /// Its maximum.
        max: i32,
        /// Its minimum.
        min: i32,
    },
}

/// A subset's `replicas`, `minReplicas` or `maxReplicas` against `ud_replicas` (negative when
/// `spec.replicas` is unset): a number as it is, a percentage rounded half up.
///
/// # Errors
/// A [`ReplicasError`] with upstream's message.
pub fn parse_subset_replicas(ud_replicas: i32, value: &IntOrString) -> Result<i32, ReplicasError> {
    match value {
        IntOrString::Int(n) if *n < 0 => Err(ReplicasError::Negative(*n)),
        IntOrString::Int(n) => Ok(*n),
        IntOrString::String(text) => {
            if ud_replicas < 0 {
                return Err(ReplicasError::PercentWithoutReplicas(text.clone()));
            }
            let Some(number) = text.strip_suffix('%') else {
                return Err(ReplicasError::NotPercent(text.clone()));
            };
            let percent = crate::intstr::go_parse_int32(number)
                .map_err(|reason| ReplicasError::BadPercent { text: text.clone(), reason })?;
            if !(0..=100).contains(&percent) {
                return Err(ReplicasError::OutOfRange(text.clone()));
            }
            let scaled = f64::from(ud_replicas) * f64::from(percent) / 100.0 + 0.5;
            // In range: at most `ud_replicas`.
            Ok(scaled.floor() as i32)
        }
    }
}

/// Shares the replicas among the subsets (see the module documentation for which allocator
/// runs). `observed` holds the subsets whose workload exists, by name.
///
/// # Errors
/// An [`AllocationError`] for a spec upstream refuses to allocate; nothing should change.
pub fn allocate(
    spec: &AllocationSpec,
    observed: &BTreeMap<String, ObservedSubset>,
) -> Result<Allocation, AllocationError> {
    let uses_min_max =
        spec.subsets.iter().any(|s| s.min_replicas.is_some() || s.max_replicas.is_some());
    let amounts = match spec.mode {
        ScheduleMode::AdaptiveWithReservation => reservation(spec, observed)?,
        ScheduleMode::Adaptive => adaptive(spec, observed)?,
        ScheduleMode::Fixed if uses_min_max => {
            let (min, max) = min_max(spec)?;
            fill(spec.replicas.unwrap_or(0), &min, &max)
        }
        ScheduleMode::Fixed => specific(spec, observed)?,
    };
    Ok(Allocation { subsets: spec.subsets.iter().map(|s| s.name.clone()).zip(amounts).collect() })
}

/// The even split with pinned subsets.
fn specific(
    spec: &AllocationSpec,
    observed: &BTreeMap<String, ObservedSubset>,
) -> Result<Vec<i32>, AllocationError> {
    let expected = spec.replicas.unwrap_or(-1);
    let pinned: Vec<Option<i32>> = spec
        .subsets
        .iter()
        .map(|s| s.replicas.as_ref().and_then(|r| parse_subset_replicas(expected, r).ok()))
        .collect();
    let sum: i64 = pinned.iter().flatten().map(|v| i64::from(*v)).sum();
    let count = pinned.iter().flatten().count();
    if expected >= 0 && sum > i64::from(expected) {
        return Err(AllocationError::MoreThanReplicas { sum, replicas: expected });
    }
    if expected >= 0 && sum < i64::from(expected) && count == spec.subsets.len() {
        return Err(AllocationError::LessThanReplicas { sum, replicas: expected });
    }
    if expected < 0 && count != spec.subsets.len() {
        return Err(AllocationError::AllSubsetsRequired);
    }
    let mut out: Vec<i32> = pinned.iter().map(|p| p.unwrap_or(0)).collect();
    let free = spec.subsets.len() - count;
    if free > 0 {
        // Sorted by current replicas then name; the remainder goes from the end.
        let mut order: Vec<usize> =
            (0..spec.subsets.len()).filter(|i| pinned[*i].is_none()).collect();
        let current = |i: usize| observed.get(&spec.subsets[i].name).map_or(0, |o| o.replicas);
        order.sort_by(|a, b| {
            current(*a)
                .cmp(&current(*b))
                .then_with(|| spec.subsets[*a].name.cmp(&spec.subsets[*b].name))
        });
        let rest = i64::from(expected.max(0)) - sum;
        let free = i64::try_from(free).unwrap_or(i64::MAX);
        let (each, remainder) = (rest / free, rest % free);
        for (k, i) in order.iter().rev().enumerate() {
            let extra = i64::from(i64::try_from(k).unwrap_or(i64::MAX) < remainder);
            out[*i] = i32::try_from(each + extra).unwrap_or(i32::MAX);
        }
    }
    Ok(out)
}

/// Each subset's minimum and maximum (0 and unbounded when unset; unreadable values count as
/// 0, as upstream's allocators read them).
fn min_max(spec: &AllocationSpec) -> Result<(Vec<i32>, Vec<i32>), AllocationError> {
    let replicas = spec.replicas.unwrap_or(0);
    let read = |v: &Option<IntOrString>, default: i32| {
        v.as_ref().map_or(default, |v| parse_subset_replicas(replicas, v).unwrap_or(0))
    };
    let mut mins = Vec::with_capacity(spec.subsets.len());
    let mut maxes = Vec::with_capacity(spec.subsets.len());
    for (index, subset) in spec.subsets.iter().enumerate() {
        let min = read(&subset.min_replicas, 0);
        let max = read(&subset.max_replicas, i32::MAX);
        if min > max {
            return Err(AllocationError::MinAboveMax { index, max, min });
        }
        mins.push(min);
        maxes.push(max);
    }
    Ok((mins, maxes))
}

/// Fills each subset to its minimum in order, then to its maximum; what no subset can take
/// is left out.
fn fill(replicas: i32, min: &[i32], max: &[i32]) -> Vec<i32> {
    let mut out = vec![0i32; min.len()];
    let mut left = i64::from(replicas.max(0));
    for (i, m) in min.iter().enumerate() {
        let add = i64::from(*m).min(left).max(0);
        out[i] = i32::try_from(add).unwrap_or(i32::MAX);
        left -= add;
    }
    for (i, m) in max.iter().enumerate() {
        if left <= 0 {
            break;
        }
        let room = (i64::from(*m) - i64::from(min[i])).max(0);
        let add = room.min(left);
        out[i] = i32::try_from(i64::from(out[i]) + add).unwrap_or(i32::MAX);
        left -= add;
    }
    out
}

/// Adaptive: an unschedulable subset is held to its ready pods; a schedulable one keeps its
/// ready pods (within its maximum).
fn adaptive(
    spec: &AllocationSpec,
    observed: &BTreeMap<String, ObservedSubset>,
) -> Result<Vec<i32>, AllocationError> {
    let (mut min, mut max) = min_max(spec)?;
    for (i, subset) in spec.subsets.iter().enumerate() {
        let state = observed.get(&subset.name).copied().unwrap_or_default();
        let ready = state.ready_replicas;
        if state.unschedulable {
            min[i] = min[i].max(ready);
            max[i] = max[i].min(ready);
        } else if ready > min[i] {
            min[i] = ready.min(max[i]);
        }
    }
    Ok(fill(spec.replicas.unwrap_or(0), &min, &max))
}

/// Adaptive with reservation: a marked subset keeps its size, and what its reserved pods hold
/// is allocated again further down.
fn reservation(
    spec: &AllocationSpec,
    observed: &BTreeMap<String, ObservedSubset>,
) -> Result<Vec<i32>, AllocationError> {
    let (min, max) = min_max(spec)?;
    struct Record {
        allocated: i64,
        allocatable: i64,
    }
    let states: Vec<Option<ObservedSubset>> =
        spec.subsets.iter().map(|s| observed.get(&s.name).copied()).collect();
    let mut records: Vec<Record> = states
        .iter()
        .map(|state| match state {
            Some(s) if s.unschedulable || s.marked_unschedulable => Record {
                allocated: 0,
                allocatable: i64::from(s.replicas) - i64::from(s.reserved_pods),
            },
            _ => Record { allocated: 0, allocatable: i64::from(i32::MAX) },
        })
        .collect();
    // Gives up to `to` to a record; returns what really counts against `rest`.
    let give = |record: &mut Record, to: i64, rest: i64| {
        let add = (to - record.allocated).min(rest).max(0);
        record.allocated += add;
        record.allocatable -= add;
        if record.allocatable < 0 { (add + record.allocatable).max(0) } else { add }
    };
    let mut rest = i64::from(spec.replicas.unwrap_or(0).max(0));
    let done = |records: &[Record]| {
        records.iter().map(|r| i32::try_from(r.allocated).unwrap_or(i32::MAX)).collect()
    };
    for i in 0..records.len() {
        rest -= give(&mut records[i], i64::from(min[i]), rest);
        if rest <= 0 {
            return Ok(done(&records));
        }
    }
    for i in 0..records.len() {
        let to = match states[i] {
            Some(s) if s.unschedulable => i64::from(s.replicas),
            _ => i64::from(max[i]),
        };
        rest -= give(&mut records[i], to, rest);
        if rest <= 0 {
            break;
        }
    }
    Ok(done(&records))
}

#[cfg(test)]
mod tests;
