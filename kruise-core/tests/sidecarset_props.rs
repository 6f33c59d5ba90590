//! Property tests for SidecarSet injection: injecting into an injected pod changes nothing;
//! the pod's own containers keep their order and content; no container name is ever
//! injected twice (two SidecarSets that would are refused); the order the SidecarSets come
//! in does not matter; the index finds what a full scan finds.

use std::collections::{BTreeMap, BTreeSet};

use jiff::Timestamp;
use k8s_openapi::api::core::v1::{Container, EnvVar, Pod, PodSpec, VolumeMount};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector;
use kruise_api::apps::v1beta1::{
    PodInjectPolicyType, ShareVolumePolicy, ShareVolumePolicyType, SidecarContainer,
    SidecarContainerUpgradeStrategy, SidecarContainerUpgradeType, SidecarSet, SidecarSetSpec,
    TransferEnvVar,
};
use kruise_core::sidecarset::matching::ParsedSelectors;
use kruise_core::sidecarset::{
    InjectionError, InjectionGates, SidecarSetCandidate, SidecarSetIndex, inject_pod,
    injected_container_names, matching::pod_matches,
};
use proptest::prelude::*;

const SIDECAR_NAMES: &[&str] = &["mesh", "log", "dns", "agent", "proxy"];
const LABELS: &[(&str, &str)] = &[("app", "web"), ("app", "db"), ("tier", "front")];

fn t(second: i64) -> Timestamp {
    Timestamp::from_second(1_700_000_000 + second).expect("in range")
}

#[derive(Clone, Debug)]
struct SetShape {
    selector: usize,
    containers: Vec<(usize, bool, bool, bool, bool)>,
    init: Option<(usize, bool)>,
}

fn set_shape() -> impl Strategy<Value = SetShape> {
    (
        prop_oneof![3 => Just(0usize), 1 => Just(1usize), 1 => Just(2usize)],
        proptest::collection::btree_map(
            0..SIDECAR_NAMES.len(),
            (any::<bool>(), any::<bool>(), any::<bool>(), any::<bool>()),
            1..3,
        ),
        proptest::option::of((0..SIDECAR_NAMES.len(), any::<bool>())),
    )
        .prop_map(|(selector, containers, init)| SetShape {
            selector,
            containers: containers.into_iter().map(|(n, (a, b, c, d))| (n, a, b, c, d)).collect(),
            init,
        })
}

fn build_set(i: usize, shape: &SetShape) -> SidecarSet {
    let (k, v) = LABELS[shape.selector];
    let containers = shape
        .containers
        .iter()
        .map(|&(n, after, hot, share, transfer)| SidecarContainer {
            container: Container {
                name: SIDECAR_NAMES[n].into(),
                image: Some(format!("{}:{i}", SIDECAR_NAMES[n])),
                ..Default::default()
            },
            pod_inject_policy: Some(if after {
                PodInjectPolicyType::AfterAppContainer
            } else {
                PodInjectPolicyType::BeforeAppContainer
            }),
            upgrade_strategy: if hot {
                SidecarContainerUpgradeStrategy {
                    upgrade_type: Some(SidecarContainerUpgradeType::HotUpgrade),
                    hot_upgrade_empty_image: "empty:1".into(),
                }
            } else {
                Default::default()
            },
            share_volume_policy: ShareVolumePolicy {
                type_: Some(if share {
                    ShareVolumePolicyType::Enabled
                } else {
                    ShareVolumePolicyType::Disabled
                }),
            },
            transfer_env: if transfer {
                vec![TransferEnvVar {
                    source_container_name: "app0".into(),
                    env_name: "TZ".into(),
                    ..Default::default()
                }]
            } else {
                Vec::new()
            },
            ..Default::default()
        })
        .collect();
    let init_containers = shape
        .init
        .iter()
        .map(|&(n, native)| SidecarContainer {
            container: Container {
                name: format!("init-{}", SIDECAR_NAMES[n]),
                image: Some("init:1".into()),
                restart_policy: native.then(|| "Always".to_owned()),
                ..Default::default()
            },
            ..Default::default()
        })
        .collect();
    SidecarSet::new(
        &format!("set-{i}"),
        SidecarSetSpec {
            selector: Some(LabelSelector {
                match_labels: Some(BTreeMap::from([(k.to_owned(), v.to_owned())])),
                ..Default::default()
            }),
            containers,
            init_containers,
            ..Default::default()
        },
    )
}

fn build_pod(labels: &BTreeSet<usize>, apps: usize) -> Pod {
    let mut pod = Pod::default();
    pod.metadata.name = Some("p".into());
    pod.metadata.namespace = Some("ns".into());
    pod.metadata.labels =
        Some(labels.iter().map(|&i| (LABELS[i].0.to_owned(), LABELS[i].1.to_owned())).collect());
    pod.spec = Some(PodSpec {
        containers: (0..apps)
            .map(|i| Container {
                name: format!("app{i}"),
                image: Some(format!("app:{i}")),
                env: Some(vec![EnvVar {
                    name: "TZ".into(),
                    value: Some(format!("tz{i}")),
                    value_from: None,
                }]),
                volume_mounts: Some(vec![VolumeMount {
                    name: format!("v{i}"),
                    mount_path: format!("/data{i}"),
                    ..Default::default()
                }]),
                ..Default::default()
            })
            .collect(),
        ..Default::default()
    });
    pod
}

fn candidates(sets: &[SidecarSet]) -> Vec<SidecarSetCandidate> {
    sets.iter()
        .map(|s| SidecarSetCandidate {
            sidecar_set: s.clone().into(),
            revisions: Vec::new(),
            draw: 0.5,
            // Parsed ahead, as the webhook's index does.
            selectors: Some(std::sync::Arc::new(ParsedSelectors::of(s))),
        })
        .collect()
}

fn all_names(pod: &Pod) -> Vec<String> {
    let spec = pod.spec.as_ref().expect("spec");
    spec.containers
        .iter()
        .chain(spec.init_containers.iter().flatten())
        .map(|c| c.name.clone())
        .collect()
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(300))]

    #[test]
    fn injection_properties(
        shapes in proptest::collection::vec(set_shape(), 0..4),
        // (weighted towards SidecarSets that select the pod)
        pod_labels in proptest::collection::btree_set(prop_oneof![3 => Just(0usize), 1 => Just(1usize), 2 => Just(2usize)], 0..3),
        apps in 1usize..4,
        sort in any::<bool>(),
    ) {
        let sets: Vec<SidecarSet> = shapes.iter().enumerate().map(|(i, s)| build_set(i, s)).collect();
        // `app` can only hold one value.
        let mut labels = pod_labels.clone();
        if labels.contains(&0) { labels.remove(&1); }
        let pod = build_pod(&labels, apps);
        let gates = InjectionGates { sort_sidecar_container_by_name: sort };
        let cands = candidates(&sets);
        let result = inject_pod(&pod, None, &cands, gates, t(0));

        // Which SidecarSets select the pod, and whether two of them share a container name.
        let pod_l = pod.metadata.labels.clone().unwrap_or_default();
        let selected: Vec<&SidecarSet> =
            sets.iter().filter(|s| pod_matches(s, &pod_l, None).unwrap_or(false)).collect();
        let mut seen = BTreeSet::new();
        let clash = selected.iter().any(|s| {
            injected_container_names(s).into_iter().any(|n| !seen.insert(n))
        });

        // The order the SidecarSets come in does not matter.
        let mut reversed = cands.clone();
        reversed.reverse();
        let again = inject_pod(&pod, None, &reversed, gates, t(0));
        prop_assert_eq!(&result, &again);

        match result {
            Err(InjectionError::ContainerConflict { first, second, .. }) => {
                prop_assert!(clash);
                prop_assert_ne!(first, second);
            }
            Err(other) => prop_assert!(false, "unexpected error {}", other),
            Ok(out) => {
                prop_assert!(!clash);
                prop_assert_eq!(out.changed, !selected.is_empty());
                // No name twice.
                let names = all_names(&out.pod);
                let unique: BTreeSet<&String> = names.iter().collect();
                prop_assert_eq!(unique.len(), names.len());
                // The app containers keep their order and content.
                let original = &pod.spec.as_ref().expect("spec").containers;
                let kept: Vec<&Container> = out.pod.spec.as_ref().expect("spec").containers
                    .iter()
                    .filter(|c| c.name.starts_with("app"))
                    .collect();
                prop_assert_eq!(kept, original.iter().collect::<Vec<_>>());
                // Injecting into the injected pod, later, changes nothing.
                let twice = inject_pod(&out.pod, None, &cands, gates, t(3600)).expect("injects again");
                prop_assert!(!twice.changed);
                prop_assert_eq!(twice.pod, out.pod);
            }
        }

        // The index finds exactly what a full scan finds.
        let index = SidecarSetIndex::new(sets.clone());
        let found: Vec<String> = index
            .matching("ns", &pod_l, None)
            .into_iter()
            .filter_map(|s| s.metadata.name.clone())
            .collect();
        let mut scan: Vec<String> = selected.iter().filter_map(|s| s.metadata.name.clone()).collect();
        scan.sort();
        prop_assert_eq!(found, scan);
    }
}

proptest! {
    /// The resources expression evaluator never panics, whatever the text.
    #[test]
    fn expressions_never_panic(text in "[-+*/(), 0-9.%a-zA-Zé]{0,24}", milli in -5_000_000i64..5_000_000) {
        use kruise_core::revision::quantity::{Quantity, QuantityFormat};
        use kruise_core::sidecarset::expr::{Value, evaluate};
        let value = Value::Quantity(Quantity::from_milli(i128::from(milli), QuantityFormat::BinarySi));
        let _ = evaluate(&text, "cpu", value);
        let _ = evaluate(&text, "memory", Value::Number(1.0));
    }

    /// Numbers and quantities combine as upstream's calculator does: `cpu * p%` of a CPU
    /// quantity is its thousandths times p/100, truncated.
    #[test]
    fn percent_of_a_quantity(milli in 0i64..10_000_000, percent in 0u32..=200) {
        use kruise_core::revision::quantity::{Quantity, QuantityFormat};
        use kruise_core::sidecarset::expr::{Value, evaluate};
        let cpu = Quantity::from_milli(i128::from(milli), QuantityFormat::DecimalSi);
        let out = evaluate(&format!("cpu*{percent}%"), "cpu", Value::Quantity(cpu)).expect("evaluates");
        let Value::Quantity(q) = out else { panic!("a quantity") };
        let want = (milli as f64 * (f64::from(percent) / 100.0)) as i128;
        prop_assert_eq!(q.milli_value(), Some(want));
    }
}
