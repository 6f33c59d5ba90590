//! Upstream's allocator test tables (`allocator_test.go`), case by case.

use super::*;

fn int(n: i32) -> IntOrString {
    IntOrString::Int(n)
}

fn percent(text: &str) -> IntOrString {
    IntOrString::String(text.to_owned())
}

/// Subsets named `t1..`, observed with `current` replicas, pinned where `pinned` says.
fn even(
    replicas: Option<i32>,
    current: &[i32],
    pinned: &[Option<i32>],
) -> Result<Vec<i32>, AllocationError> {
    let names: Vec<String> = (1..=current.len()).map(|i| format!("t{i}")).collect();
    let spec = AllocationSpec {
        replicas,
        mode: ScheduleMode::Fixed,
        subsets: names
            .iter()
            .zip(pinned.iter().chain(std::iter::repeat(&None)))
            .map(|(n, p)| SubsetSpec { replicas: p.map(int), ..SubsetSpec::new(n) })
            .collect(),
    };
    let observed = names
        .iter()
        .zip(current)
        .map(|(n, c)| (n.clone(), ObservedSubset { replicas: *c, ..Default::default() }))
        .collect();
    allocate(&spec, &observed).map(|a| a.subsets.into_iter().map(|(_, r)| r).collect())
}

#[test]
fn the_even_split_gives_the_remainder_to_the_biggest() {
    assert_eq!(even(Some(5), &[1, 4, 2, 2], &[]), Ok(vec![1, 2, 1, 1]));
    assert_eq!(even(Some(0), &[2], &[]), Ok(vec![0]));
    assert_eq!(even(Some(17), &[1, 4, 2, 2], &[]), Ok(vec![4, 5, 4, 4]));
    assert_eq!(even(Some(9), &[2, 4, 2, 2], &[]), Ok(vec![2, 3, 2, 2]));
    assert_eq!(even(Some(19), &[0, 10], &[]), Ok(vec![9, 10]));
    assert_eq!(even(Some(21), &[0, 10], &[]), Ok(vec![10, 11]));
}

#[test]
fn pinned_subsets_get_their_value() {
    let some = Some;
    assert_eq!(even(Some(27), &[1, 4, 2, 2], &[some(4), None, some(4)]), Ok(vec![4, 10, 4, 9]));
    assert_eq!(even(Some(8), &[2, 4, 2, 2], &[some(4), None, some(4)]), Ok(vec![4, 0, 4, 0]));
    assert_eq!(even(Some(16), &[2, 4, 2, 2], &[some(4); 4]), Ok(vec![4, 4, 4, 4]));
    assert_eq!(even(Some(10), &[4, 2, 2, 2], &[some(1), some(2), some(3)]), Ok(vec![1, 2, 3, 4]));
    assert_eq!(
        even(None, &[4, 2, 2, 2], &[some(1), some(2), some(3), some(4)]),
        Ok(vec![1, 2, 3, 4])
    );
}

#[test]
fn impossible_pins_are_refused_with_upstreams_words() {
    assert_eq!(
        even(Some(14), &[10, 4], &[Some(6), Some(6)]).map_err(|e| e.to_string()),
        Err("specified subsets' replica (12) is less than UnitedDeployment replica (14)".into())
    );
    assert_eq!(
        even(Some(14), &[10, 4], &[Some(10), Some(11)]).map_err(|e| e.to_string()),
        Err("specified subsets' replica (21) is greater than UnitedDeployment replica (14)".into())
    );
    assert_eq!(
        even(None, &[1, 1], &[Some(1)]).map_err(|e| e.to_string()),
        Err("all subsets must be specified when UnitedDeployment replica is unspecified".into())
    );
}

#[test]
fn percentages_round_half_up_and_bad_ones_are_named() {
    assert_eq!(parse_subset_replicas(5, &percent("50%")), Ok(3));
    assert_eq!(parse_subset_replicas(10, &percent("33%")), Ok(3));
    assert_eq!(parse_subset_replicas(6, &percent("+50%")), Ok(3));
    let message = |r: i32, v: IntOrString| parse_subset_replicas(r, &v).map_err(|e| e.to_string());
    assert_eq!(message(5, int(-1)), Err("subset replicas (-1) should not be less than 0".into()));
    assert_eq!(
        message(-1, percent("50%")),
        Err("subsetReplicas (50%) should not be string when unitedDeployment replicas is empty"
            .into())
    );
    assert_eq!(
        message(5, percent("50")),
        Err(
            "subset replicas (50) only support integer value or percentage value with a suffix '%'"
                .into()
        )
    );
    assert_eq!(
        message(5, percent("abc%")),
        Err("subset replicas (abc%) should be correct percentage integer: strconv.ParseInt: parsing \"abc\": invalid syntax".into())
    );
    assert_eq!(
        message(5, percent("120%")),
        Err("subset replicas (120%) should be in range [0, 100]".into())
    );
}

fn capacity(replicas: i32) -> Vec<i32> {
    let spec = AllocationSpec {
        replicas: Some(replicas),
        mode: ScheduleMode::Fixed,
        subsets: (0..5)
            .map(|i| {
                let s = SubsetSpec::new(&format!("subset-{i}")).min(int(2));
                if i < 4 { s.max(int(5)) } else { s }
            })
            .collect(),
    };
    allocate(&spec, &BTreeMap::new())
        .expect("allocation")
        .subsets
        .into_iter()
        .map(|(_, r)| r)
        .collect()
}

#[test]
fn min_and_max_fill_in_topology_order() {
    assert_eq!(capacity(10), [2, 2, 2, 2, 2]);
    assert_eq!(capacity(14), [5, 3, 2, 2, 2]);
    assert_eq!(capacity(5), [2, 2, 1, 0, 0]);
    let backwards = AllocationSpec {
        replicas: Some(3),
        mode: ScheduleMode::Fixed,
        subsets: vec![SubsetSpec::new("a").min(int(3)).max(int(2)), SubsetSpec::new("b")],
    };
    assert_eq!(
        allocate(&backwards, &BTreeMap::new()).map_err(|e| e.to_string()),
        Err("subset[0].maxReplicas(2) must be more than or equal to minReplicas(3)".into())
    );
}

/// Upstream's adaptive harness: `pend[i]` pending pods (-1: unschedulable with none pending).
fn adaptive_case(
    replicas: i32,
    pods: &[i32],
    min: &[Option<i32>],
    max: &[Option<i32>],
    pend: &[i32],
) -> Vec<i32> {
    let names: Vec<String> = (0..pods.len()).map(|i| format!("subset-{i}")).collect();
    let spec = AllocationSpec {
        replicas: Some(replicas),
        mode: ScheduleMode::Adaptive,
        subsets: names
            .iter()
            .enumerate()
            .map(|(i, n)| SubsetSpec {
                min_replicas: min.get(i).copied().flatten().map(int),
                max_replicas: max.get(i).copied().flatten().map(int),
                ..SubsetSpec::new(n)
            })
            .collect(),
    };
    let observed = names
        .iter()
        .enumerate()
        .map(|(i, n)| {
            let pending = pend[i].max(0);
            (
                n.clone(),
                ObservedSubset {
                    replicas: pods[i],
                    ready_replicas: pods[i] - pending,
                    unschedulable: pend[i] != 0,
                    ..Default::default()
                },
            )
        })
        .collect();
    allocate(&spec, &observed).expect("allocation").subsets.into_iter().map(|(_, r)| r).collect()
}

#[test]
fn adaptive_moves_what_cannot_schedule_to_the_next_subsets() {
    let (min, max) = ([Some(3), None], [Some(5), None]);
    assert_eq!(adaptive_case(10, &[5, 5], &min, &max, &[5, 0]), [3, 7]);
    assert_eq!(adaptive_case(10, &[5, 5], &min, &max, &[4, 0]), [3, 7]);
    assert_eq!(adaptive_case(10, &[5, 5], &min, &max, &[3, 0]), [3, 7]);
    assert_eq!(adaptive_case(10, &[5, 5], &min, &max, &[2, 0]), [3, 7]);
    assert_eq!(adaptive_case(10, &[5, 5], &min, &max, &[0, 0]), [5, 5]);
    let (min, max) = ([Some(1), None], [Some(2), None]);
    assert_eq!(adaptive_case(4, &[1, 1], &min, &max, &[0, 0]), [2, 2]);
    assert_eq!(adaptive_case(3, &[2, 2], &min, &max, &[0, 0]), [2, 1]);
    assert_eq!(adaptive_case(1, &[2, 1], &min, &max, &[0, 0]), [1, 0]);
    assert_eq!(adaptive_case(3, &[1, 3], &min, &max, &[1, 0]), [1, 2]);
    assert_eq!(adaptive_case(3, &[1, 3], &[Some(0), None], &max, &[1, 0]), [0, 3]);
    let zeros = [Some(0); 4];
    let max = [Some(2), None, None, None];
    assert_eq!(adaptive_case(4, &[0, 0, 0, 0], &zeros, &max, &[0, 0, 0, 0]), [2, 2, 0, 0]);
    assert_eq!(adaptive_case(4, &[2, 2, 0, 0], &zeros, &max, &[0, 2, 0, 0]), [2, 0, 2, 0]);
    assert_eq!(adaptive_case(4, &[2, 0, 2, 0], &zeros, &max, &[0, -1, 2, 0]), [2, 0, 0, 2]);
    assert_eq!(adaptive_case(8, &[2, 0, 0, 2], &zeros, &max, &[0, -1, -1, 0]), [2, 0, 0, 6]);
    assert_eq!(adaptive_case(8, &[2, 0, 0, 2], &zeros, &max, &[0, 0, 0, 0]), [2, 4, 0, 2]);
    assert_eq!(adaptive_case(4, &[2, 0, 0, 6], &zeros, &[None; 4], &[0, 0, 0, 0]), [2, 0, 0, 2]);
}

/// Upstream's reservation harness: `res[i]` reserved pods (-1: marked but recovered); the
/// last subset's maximum is always unbounded.
fn reserved_case(
    replicas: i32,
    min: &[Option<i32>],
    max: &[Option<i32>],
    cur: &[i32],
    res: &[i32],
) -> Vec<i32> {
    let names: Vec<String> = (0..cur.len()).map(|i| format!("subset-{i}")).collect();
    let last = cur.len() - 1;
    let spec = AllocationSpec {
        replicas: Some(replicas),
        mode: ScheduleMode::AdaptiveWithReservation,
        subsets: names
            .iter()
            .enumerate()
            .map(|(i, n)| SubsetSpec {
                min_replicas: min.get(i).copied().flatten().map(int),
                max_replicas: if i == last { None } else { max.get(i).copied().flatten().map(int) },
                ..SubsetSpec::new(n)
            })
            .collect(),
    };
    let observed = names
        .iter()
        .enumerate()
        .map(|(i, n)| {
            (
                n.clone(),
                ObservedSubset {
                    replicas: cur[i],
                    ready_replicas: cur[i] - res[i].max(0),
                    unschedulable: res[i] > 0,
                    marked_unschedulable: res[i] != 0,
                    reserved_pods: res[i].max(0),
                },
            )
        })
        .collect();
    allocate(&spec, &observed).expect("allocation").subsets.into_iter().map(|(_, r)| r).collect()
}

#[test]
fn reservation_adds_temporary_replicas_after_a_marked_subset() {
    let (min, max) = ([Some(1); 4], [Some(2); 4]);
    assert_eq!(reserved_case(8, &min, &max, &[0, 0, 0, 0], &[0, 0, 0, 0]), [2, 2, 2, 2]);
    assert_eq!(reserved_case(8, &min, &max, &[2, 2, 2, 2], &[0, 2, 2, 0]), [2, 2, 2, 6]);
    assert_eq!(reserved_case(8, &min, &max, &[2, 2, 2, 6], &[0, 1, 1, 0]), [2, 2, 2, 4]);
    assert_eq!(reserved_case(8, &min, &max, &[2, 2, 2, 4], &[0, -1, 1, 0]), [2, 2, 2, 3]);
    assert_eq!(reserved_case(8, &min, &max, &[2, 2, 2, 3], &[0, 0, -1, 0]), [2, 2, 2, 2]);
    let (min16, max16) = ([Some(2); 4], [Some(4); 4]);
    assert_eq!(reserved_case(16, &min16, &max16, &[2, 2, 2, 6], &[0, 1, 1, 0]), [4, 2, 2, 10]);
    assert_eq!(reserved_case(8, &min, &max, &[4, 2, 2, 10], &[0, 1, 1, 0]), [2, 2, 2, 4]);
    assert_eq!(reserved_case(16, &min16, &max16, &[4, 2, 2, 10], &[0, -1, -1, 0]), [4, 4, 4, 8]);
    assert_eq!(reserved_case(16, &min16, &max16, &[4, 4, 4, 8], &[0, 2, 2, 0]), [4, 4, 4, 8]);
    assert_eq!(reserved_case(16, &min16, &max16, &[4, 4, 4, 8], &[0, -1, -1, 0]), [4, 4, 4, 4]);
    let none: [Option<i32>; 0] = [];
    assert_eq!(reserved_case(2, &none, &none, &[0, 0, 0], &[0, 0, 0]), [2, 0, 0]);
    assert_eq!(reserved_case(2, &none, &none, &[2, 0, 0], &[2, 0, 0]), [2, 2, 0]);
    assert_eq!(reserved_case(2, &none, &none, &[2, 2, 0], &[2, 2, 0]), [2, 2, 2]);
    assert_eq!(reserved_case(4, &none, &none, &[2, 2, 2], &[2, 2, 0]), [2, 2, 4]);
    assert_eq!(reserved_case(4, &none, &none, &[2, 2, 4], &[4, -1, 0]), [2, 4, 2]);
    assert_eq!(reserved_case(4, &none, &none, &[2, 4, 2], &[4, 2, 0]), [2, 4, 2]);
    assert_eq!(reserved_case(4, &none, &none, &[2, 4, 2], &[4, -1, 0]), [2, 4, 0]);
    assert_eq!(reserved_case(2, &none, &none, &[2, 2, 2], &[2, 1, 0]), [2, 2, 1]);
    assert_eq!(reserved_case(2, &none, &none, &[2, 2, 1], &[0, 1, 0]), [2, 0, 0]);
    assert_eq!(reserved_case(2, &none, &none, &[2, 2, 0], &[0, 0, 0]), [2, 0, 0]);
    assert_eq!(reserved_case(4, &none, &none, &[2, 2, 4], &[-1, 2, 0]), [4, 2, 2]);
    let min2 = [Some(1), Some(1), Some(0)];
    assert_eq!(reserved_case(2, &min2, &none, &[0, 0, 0], &[0, 0, 0]), [1, 1, 0]);
    assert_eq!(reserved_case(2, &min2, &none, &[1, 1, 0], &[1, 1, 0]), [1, 1, 2]);
    assert_eq!(reserved_case(2, &min2, &none, &[1, 1, 2], &[-1, 1, 0]), [2, 1, 1]);
    assert_eq!(reserved_case(2, &min2, &none, &[2, 1, 1], &[1, 1, 0]), [2, 1, 1]);
    assert_eq!(reserved_case(2, &min2, &none, &[2, 1, 1], &[0, 1, 0]), [2, 1, 0]);
    assert_eq!(reserved_case(2, &min2, &none, &[2, 1, 0], &[0, -1, 0]), [1, 1, 0]);
}
