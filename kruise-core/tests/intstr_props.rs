//! Property tests for int-or-percent rounding.

use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;
use kruise_api::apps::v1beta1::{
    CloneSetSpec, CloneSetUpdateStrategy, RollingUpdateCloneSetStrategy,
};
use kruise_core::intstr::{
    IntOrPercent, Rounding, cloneset_budget, fractional_value, lenient_value, partition_replicas,
    scaled_value,
};
use proptest::prelude::*;

fn pct(p: impl std::fmt::Display) -> IntOrString {
    IntOrString::String(format!("{p}%"))
}

proptest! {
    /// Integer percentages round exactly like integer ceil/floor division.
    #[test]
    fn integer_percent_matches_integer_division(p in 0i64..=1000, total in 0i32..=100_000) {
        let exact = p * i64::from(total);
        let down = scaled_value(&pct(p), total, Rounding::Down).expect("well-formed");
        let up = scaled_value(&pct(p), total, Rounding::Up).expect("well-formed");
        prop_assert_eq!(i64::from(down), exact.div_euclid(100));
        prop_assert_eq!(i64::from(up), (exact + 99).div_euclid(100));
        prop_assert!(up - down == 0 || up - down == 1);
        prop_assert_eq!(up == down, exact % 100 == 0);
    }

    /// Negative percentages still round towards the requested infinity.
    #[test]
    fn negative_percent_rounds_outward(p in -1000i64..0, total in 1i32..=10_000) {
        let exact = p * i64::from(total);
        let down = scaled_value(&pct(p), total, Rounding::Down).expect("well-formed");
        let up = scaled_value(&pct(p), total, Rounding::Up).expect("well-formed");
        prop_assert_eq!(i64::from(down), exact.div_euclid(100));
        prop_assert_eq!(i64::from(up), -((-exact).div_euclid(100)));
    }

    /// Percentages between 0 and 100 stay within the total and grow with it.
    #[test]
    fn bounded_and_monotonic(p in 0i64..=100, total in 0i32..=50_000, extra in 0i32..=1000) {
        for r in [Rounding::Up, Rounding::Down] {
            let v = scaled_value(&pct(p), total, r).expect("well-formed");
            prop_assert!((0..=total).contains(&v));
            let bigger_total = scaled_value(&pct(p), total + extra, r).expect("well-formed");
            prop_assert!(bigger_total >= v);
            if p < 100 {
                let bigger_p = scaled_value(&pct(p + 1), total, r).expect("well-formed");
                prop_assert!(bigger_p >= v);
            }
        }
    }

    /// The three dialects agree on well-formed integer percentages and on plain ints.
    #[test]
    fn dialects_agree_on_common_ground(p in -500i64..=500, i in any::<i32>(), total in 0i32..=100_000) {
        for r in [Rounding::Up, Rounding::Down] {
            let strict = scaled_value(&pct(p), total, r).expect("well-formed");
            prop_assert_eq!(lenient_value(&pct(p), total, r).expect("well-formed"), strict);
            prop_assert_eq!(fractional_value(&pct(p), total, r).expect("well-formed"), strict);
            let int = IntOrString::Int(i);
            prop_assert_eq!(scaled_value(&int, total, r).expect("well-formed"), i);
            prop_assert_eq!(lenient_value(&int, total, r).expect("well-formed"), i);
            prop_assert_eq!(fractional_value(&int, total, r).expect("well-formed"), i);
        }
    }

    /// Fractional percentages: up and down differ by at most one and bracket the exact value.
    #[test]
    fn fractional_brackets_exact(hundredths in 0u32..=10_000, total in 0i32..=100_000) {
        let text = format!("{}.{:02}", hundredths / 100, hundredths % 100);
        let v = IntOrString::String(format!("{text}%"));
        let up = fractional_value(&v, total, Rounding::Up).expect("well-formed");
        let down = fractional_value(&v, total, Rounding::Down).expect("well-formed");
        prop_assert!(up - down == 0 || up - down == 1);
        prop_assert!(down <= up);
        prop_assert!((0..=total).contains(&down) && (0..=total).contains(&up));
    }

    /// Strings without a trailing '%' are never read as percentages by the strict dialects.
    #[test]
    fn strict_dialects_need_percent_sign(text in "[0-9a-z.+-]{0,6}") {
        let v = IntOrString::String(text.clone());
        prop_assert!(IntOrPercent::parse(&v).is_err());
        prop_assert!(IntOrPercent::parse_fractional(&v).is_err());
        if let Err(e) = scaled_value(&v, 10, Rounding::Up) {
            let quoted = format!("{:?}", text);
            prop_assert!(e.to_string().contains(&quoted));
        }
    }

    /// Partitions are clamped into 0..=replicas, and a percentage strictly between 0 and 100
    /// keeps at least one old pod and updates at least one pod when there are two or more.
    #[test]
    fn partition_bounds(hundredths in 1u32..10_000, replicas in 2i32..=2_000, int in any::<i32>()) {
        let text = format!("{}.{:02}%", hundredths / 100, hundredths % 100);
        let v = partition_replicas(Some(&IntOrString::String(text)), Some(replicas)).expect("well-formed");
        prop_assert!((1..replicas).contains(&v));
        let v = partition_replicas(Some(&IntOrString::Int(int)), Some(replicas)).expect("well-formed");
        prop_assert!((0..=replicas).contains(&v));
        prop_assert_eq!(v, int.clamp(0, replicas));
    }

    /// CloneSet: surge rounds up; maxUnavailable rounds up without surge and down with it.
    #[test]
    fn cloneset_surge_and_unavailable_rounding(
        surge in 0i64..=100, unavailable in 0i64..=100, replicas in 0i32..=1000, paused: bool,
    ) {
        let spec = CloneSetSpec {
            replicas: Some(replicas),
            update_strategy: CloneSetUpdateStrategy {
                rolling_update: Some(RollingUpdateCloneSetStrategy {
                    max_surge: Some(pct(surge)),
                    max_unavailable: Some(pct(unavailable)),
                    paused,
                    ..Default::default()
                }),
                ..Default::default()
            },
            ..Default::default()
        };
        let (budget, errors) = cloneset_budget(&spec);
        prop_assert!(errors.is_empty());
        let surge_up = scaled_value(&pct(surge), replicas, Rounding::Up).expect("well-formed");
        let expected_surge = if paused { 0 } else { surge_up };
        prop_assert_eq!(budget.max_surge, expected_surge);
        let rounding = if expected_surge == 0 { Rounding::Up } else { Rounding::Down };
        prop_assert_eq!(budget.max_unavailable, scaled_value(&pct(unavailable), replicas, rounding).expect("well-formed"));
    }
}
